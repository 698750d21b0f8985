"""Models: the interface evidence methods use, and the models that ship with it."""

from ._base import EvidenceModel
from .gaussian_additive import GaussianAdditive
from .gaussian_mixture import DiagonalGaussianMixture
from .linear_regression import LinearGaussian
from .softmax_regression import SoftmaxRegression

__all__ = ["DiagonalGaussianMixture", "EvidenceModel", "GaussianAdditive", "LinearGaussian", "SoftmaxRegression"]
