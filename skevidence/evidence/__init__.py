"""Evidence methods, the temperature ladder, standard errors and the result record."""

from ._ladder import temperature_ladder, trapezoid_weights
from ._result import EvidenceResult
from ._runner import ChainTrace, GradientChainRunner, Minibatches
from ._stderr import batch_means_variance
from .exact import exact_log_evidence
from .sti import sti_log_evidence

__all__ = [
    "ChainTrace",
    "EvidenceResult",
    "GradientChainRunner",
    "Minibatches",
    "batch_means_variance",
    "exact_log_evidence",
    "sti_log_evidence",
    "temperature_ladder",
    "trapezoid_weights",
]
