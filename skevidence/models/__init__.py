"""Models: the interface evidence methods use, and the models that ship with it."""

from ._base import EvidenceModel
from ._factorisation import GammaLikelihood, PoissonLikelihood, auto_prior_rate
from .gaussian_additive import GaussianAdditive
from .gaussian_mixture import DiagonalGaussianMixture
from .linear_regression import LinearGaussian
from .poisson_nmf import PoissonNMFModel
from .poisson_parafac import PoissonPARAFACModel
from .softmax_regression import SoftmaxRegression

__all__ = [
    "DiagonalGaussianMixture",
    "EvidenceModel",
    "GammaLikelihood",
    "PoissonLikelihood",
    "GaussianAdditive",
    "LinearGaussian",
    "PoissonNMFModel",
    "PoissonPARAFACModel",
    "SoftmaxRegression",
    "auto_prior_rate",
]
