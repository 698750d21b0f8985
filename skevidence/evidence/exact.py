"""Exact evidence, for models that have a closed form."""

import time

from ._result import EvidenceResult
from .sti import prepare_finite_data

__all__ = ["exact_log_evidence"]


def exact_log_evidence(model, X, y=None):
    """The closed-form evidence of ``model`` as an :class:`EvidenceResult` (``std_error = 0``).

    Parameters
    ----------
    model : EvidenceModel
        A model with an ``exact_log_evidence(X[, y])`` method.
    X, y : array-like
        Data (``y`` for conditional models).
    """
    if not hasattr(model, "exact_log_evidence"):
        raise ValueError(f"{type(model).__name__} has no closed-form evidence; use method='sti'.")
    # The closed forms take the raw data and prepare it themselves; this prepares a
    # copy only to run the checks every evidence method runs (an O(N) pass).
    prepare_finite_data(model, X, y)
    start = time.perf_counter()
    value = model.exact_log_evidence(X) if y is None else model.exact_log_evidence(X, y)
    return EvidenceResult(log_evidence=value, std_error=0.0, method="exact", wall_time=time.perf_counter() - start)
