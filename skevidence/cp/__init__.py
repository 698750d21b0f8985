"""The CP family: Poisson and Gamma NMF and PARAFAC, their data, references, evidence methods and kernels.

:func:`referenced_ti_log_evidence` (the estimators' default), the papers'
stochastic TI through :class:`~skevidence.cp.model.CPModel`'s chain runner,
:func:`smc_log_evidence` (the exact-kernel reference) and Chib's method
(:func:`chib_log_evidence`).
"""

from .chib import chib_log_evidence
from .model import auto_prior_rate
from .reference import laplace_reference, mode_search_error, variational_reference
from .rti import referenced_ti_log_evidence
from .smc import smc_log_evidence

__all__ = [
    "auto_prior_rate",
    "chib_log_evidence",
    "laplace_reference",
    "mode_search_error",
    "referenced_ti_log_evidence",
    "smc_log_evidence",
    "variational_reference",
]
