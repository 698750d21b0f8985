r"""The observation model of the CP chains: per-entry log-likelihood and its derivative in V.

The chains of :mod:`skevidence.kernels.cp` touch the data only through these
inlined functions of one entry ``x`` and its intensity ``v``. Poisson is the
one in use. Its zero-entry term :math:`-v` is linear in :math:`V`, so the
sparse kernels visit only the non-zeros (:func:`nonzero_loglik`,
:func:`nonzero_grad`) and sum :math:`-\sum V` from factor sums; the dense
kernels use :func:`entry_loglik` and :func:`entry_grad`. A real-valued model
(an exponential or Gamma likelihood of power spectrograms, Févotte, Bertin
and Durrieu 2009, gradient :math:`x/v^2 - 1/v`) is a further pair of entry
functions here.
"""

import numpy as np
from numba import njit

from .._config import FASTMATH

__all__ = ["entry_grad", "entry_loglik", "nonzero_grad", "nonzero_loglik"]


@njit(cache=True, fastmath=FASTMATH, inline="always")
def nonzero_loglik(x, v):
    """Poisson :math:`\\log p(x | v) + v + \\log\\Gamma(x + 1) = x \\log v` of a non-zero ``x``."""
    return x * np.log(v)


@njit(cache=True, fastmath=FASTMATH, inline="always")
def nonzero_grad(x, v):
    """:math:`x / v`, the derivative of :func:`nonzero_loglik`; ``inf`` for an underflowed ``v == 0``.

    An infinite gradient is reported by the chains as a divergence.
    """
    return x / v if v > 0.0 else np.inf


@njit(cache=True, fastmath=FASTMATH, inline="always")
def entry_loglik(x, v):
    """Poisson :math:`\\log p(x | v)` without :math:`\\log\\Gamma(x + 1)`; :math:`0 \\log 0` is never formed."""
    return nonzero_loglik(x, v) - v if x != 0.0 else -v


@njit(cache=True, fastmath=FASTMATH, inline="always")
def entry_grad(x, v):
    """:math:`\\partial_v \\log p(x | v) = x / v - 1` (see :func:`nonzero_grad` for ``v == 0``)."""
    return nonzero_grad(x, v) - 1.0 if x != 0.0 else -1.0
