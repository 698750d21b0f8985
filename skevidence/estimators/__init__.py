"""scikit-learn estimators: evidence-scored models and the evidence search."""

from .gaussian_additive import GaussianAdditiveModel
from .gmm import BayesianGMM
from .linear_regression import BayesianLinearRegression
from .logistic_regression import BayesianLogisticRegression
from .nmf_rank import BayesianNMFRankSelector
from .parafac_rank import PARAFACRankSelector
from .poisson_nmf import PoissonNMF
from .poisson_parafac import PoissonPARAFAC
from .search import EvidenceGridSearch
from .semi_supervised_nmf import SemiSupervisedNMF, SeparationResult

__all__ = ["BayesianGMM", "BayesianLinearRegression", "BayesianLogisticRegression", "BayesianNMFRankSelector",
           "EvidenceGridSearch", "GaussianAdditiveModel", "PARAFACRankSelector", "PoissonNMF", "PoissonPARAFAC",
           "SemiSupervisedNMF", "SeparationResult"]
