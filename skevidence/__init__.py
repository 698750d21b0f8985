"""skevidence: Bayesian model selection by the evidence, behind scikit-learn's API.

The evidence :math:`\\log p(X \\mid m)` of each candidate model ``m`` is
estimated by stochastic thermodynamic integration (:func:`sti_log_evidence`)
or computed exactly where a closed form exists; estimators expose it as
``log_evidence_`` and ``score``, and :class:`EvidenceGridSearch` picks the
candidate of largest evidence.
"""

from .estimators import (
    BayesianGMM,
    BayesianLinearRegression,
    BayesianLogisticRegression,
    BayesianNMFRankSelector,
    EvidenceGridSearch,
    GaussianAdditiveModel,
    PARAFACRankSelector,
    PoissonNMF,
    PoissonPARAFAC,
    SemiSupervisedNMF,
    SeparationResult,
)
from .evidence import (
    EvidenceResult,
    ais_log_evidence,
    exact_log_evidence,
    sgais_log_evidence,
    sti_log_evidence,
    temperature_ladder,
)
from .exceptions import SamplerDivergenceError
from .plotting import EvidenceCurveDisplay

__all__ = [
    "BayesianGMM", "BayesianLinearRegression", "BayesianLogisticRegression", "BayesianNMFRankSelector",
    "EvidenceCurveDisplay", "EvidenceGridSearch", "EvidenceResult", "GaussianAdditiveModel", "PARAFACRankSelector",
    "PoissonNMF", "PoissonPARAFAC", "SamplerDivergenceError", "SemiSupervisedNMF", "SeparationResult",
    "ais_log_evidence", "exact_log_evidence", "sgais_log_evidence", "sti_log_evidence", "temperature_ladder",
]
__version__ = "0.1.0"
