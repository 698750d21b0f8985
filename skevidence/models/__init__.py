"""Models: the interface evidence methods use, and the models that ship with it."""

from ._base import EvidenceModel
from .gaussian_additive import GaussianAdditive
from .linear_regression import LinearGaussian
from .poisson_nmf import PoissonNMFModel
from .poisson_parafac import PoissonPARAFACModel

__all__ = ["EvidenceModel", "GaussianAdditive", "LinearGaussian", "PoissonNMFModel", "PoissonPARAFACModel"]
