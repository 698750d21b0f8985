"""skevidence: Bayesian model selection by the evidence, behind scikit-learn's API.

The evidence :math:`\\log p(X \\mid m)` of each candidate model ``m`` is
estimated by stochastic thermodynamic integration (:func:`sti_log_evidence`)
or computed exactly where a closed form exists; estimators expose it as
``log_evidence_`` and ``score``, and :class:`EvidenceGridSearch` picks the
candidate of largest evidence.
"""

from .estimators import (
    BayesianLinearRegression,
    BayesianNMFRankSelector,
    EvidenceGridSearch,
    GaussianAdditiveModel,
    PoissonNMF,
    SemiSupervisedNMF,
    SeparationResult,
)
from .evidence import EvidenceResult, exact_log_evidence, sti_log_evidence, temperature_ladder
from .exceptions import SamplerDivergenceError
from .plotting import EvidenceCurveDisplay

__all__ = [
    "BayesianLinearRegression",
    "BayesianNMFRankSelector",
    "EvidenceCurveDisplay",
    "EvidenceGridSearch",
    "EvidenceResult",
    "GaussianAdditiveModel",
    "PoissonNMF",
    "SamplerDivergenceError",
    "SemiSupervisedNMF",
    "SeparationResult",
    "exact_log_evidence",
    "sti_log_evidence",
    "temperature_ladder",
]
__version__ = "0.1.0"
