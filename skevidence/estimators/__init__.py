"""scikit-learn estimators: evidence-scored models and the evidence search."""

from .gaussian_additive import GaussianAdditiveModel
from .linear_regression import BayesianLinearRegression
from .search import EvidenceGridSearch

__all__ = ["BayesianLinearRegression", "EvidenceGridSearch", "GaussianAdditiveModel"]
