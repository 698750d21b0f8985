"""scikit-learn estimators: evidence-scored models and the evidence search."""

from .gaussian_additive import GaussianAdditiveModel
from .linear_regression import BayesianLinearRegression
from .nmf_rank import BayesianNMFRankSelector
from .poisson_nmf import PoissonNMF
from .search import EvidenceGridSearch
from .semi_supervised_nmf import SemiSupervisedNMF, SeparationResult

__all__ = [
    "BayesianLinearRegression",
    "BayesianNMFRankSelector",
    "EvidenceGridSearch",
    "GaussianAdditiveModel",
    "PoissonNMF",
    "SemiSupervisedNMF",
    "SeparationResult",
]
