"""The CP family: Poisson and Gamma NMF and PARAFAC, their data, references, evidence methods and kernels.

Four evidence methods, one function each, every one taking ``(X, n_components,
prior_rates, **settings)``: :func:`referenced_ti_log_evidence` (the
estimators' default), :func:`sti_log_evidence` (the papers' stochastic TI from
the prior), :func:`smc_log_evidence` (the exact-kernel reference) and
:func:`chib_log_evidence` (Chib's method).
"""

from .chib import chib_log_evidence
from .model import auto_prior_rate
from .reference import laplace_reference, mode_search_error, moment_reference, variational_reference
from .rti import referenced_ti_log_evidence
from .smc import smc_log_evidence
from .sti import sti_log_evidence

__all__ = [
    "auto_prior_rate",
    "chib_log_evidence",
    "laplace_reference",
    "mode_search_error",
    "moment_reference",
    "referenced_ti_log_evidence",
    "smc_log_evidence",
    "sti_log_evidence",
    "variational_reference",
]
