"""Evidence methods, the temperature ladder, standard errors and the result record."""

from ._ladder import temperature_ladder, trapezoid_weights
from ._result import EvidenceResult
from ._runner import ChainTrace, GradientChainRunner, Minibatches
from ._stderr import batch_means_variance, integrated_autocorr_time
from .chib import chib_log_evidence_nmf
from .exact import exact_log_evidence
from .sti import sti_log_evidence

__all__ = [
    "ChainTrace",
    "EvidenceResult",
    "GradientChainRunner",
    "Minibatches",
    "batch_means_variance",
    "chib_log_evidence_nmf",
    "exact_log_evidence",
    "integrated_autocorr_time",
    "sti_log_evidence",
    "temperature_ladder",
    "trapezoid_weights",
]
