"""Evidence methods, the temperature ladder, standard errors and the result record."""

from ..models._trace import ChainTrace
from ._ladder import temperature_ladder, trapezoid_weights
from ._result import ERROR_PIECES, EvidenceResult
from ._runner import GradientChainRunner
from ._stderr import batch_means_variance, integrated_autocorr_time
from .ais import ais_log_evidence
from .exact import exact_log_evidence
from .sgais import SGAISState, sgais_advance, sgais_init, sgais_log_evidence
from .sti import sti_log_evidence

__all__ = ["ChainTrace", "EvidenceResult", "ERROR_PIECES", "GradientChainRunner", "SGAISState", "ais_log_evidence",
           "batch_means_variance", "exact_log_evidence", "integrated_autocorr_time", "sgais_advance", "sgais_init",
           "sgais_log_evidence", "sti_log_evidence", "temperature_ladder", "trapezoid_weights"]
