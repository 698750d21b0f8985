r"""The observation models of the CP chains: per-entry log-likelihood and its derivative in V.

The chains of :mod:`skevidence.kernels.cp` touch the data only through these
inlined functions of one entry ``x``, its intensity ``v`` and the likelihood
switch ``kappa``: 0 is Poisson, a positive ``kappa`` the Gamma likelihood of
shape ``kappa`` and mean ``v`` (``kappa = 1``: the exponential likelihood of
a power spectrogram, Févotte, Bertin and Durrieu 2009). The branch is on a
loop-invariant scalar, so the compiled loops test it once, and the Poisson
numbers are those of the Poisson-only kernels bitwise.

Poisson's zero-entry term :math:`-v` is linear in :math:`V`, so the sparse
kernels visit only the non-zeros (:func:`nonzero_loglik`,
:func:`nonzero_grad`) and sum :math:`-\sum V` from factor sums. The Gamma
family has no such shortcut (a zero is an observation like any other, and
every entry's term :math:`-\kappa(\log v + x / v)` is non-linear in
:math:`V`): it runs on dense blocks only.
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
def entry_loglik(x, v, kappa):
    """:math:`\\log p(x | v)` without its data-only constant (see :class:`~skevidence.kernels.blocks.BlockData`).

    Poisson (``kappa == 0``): :math:`x \\log v - v` (:math:`0 \\log 0` is never
    formed). Gamma: :math:`-\\kappa(\\log v + x / v)`; ``-inf`` for an underflowed
    ``v == 0``, which the chains report as a divergence.
    """
    if kappa == 0.0:
        return nonzero_loglik(x, v) - v if x != 0.0 else -v
    return -kappa * (np.log(v) + x / v) if v > 0.0 else -np.inf


@njit(cache=True, fastmath=FASTMATH, inline="always")
def entry_grad(x, v, kappa):
    """:math:`\\partial_v \\log p(x | v)`: :math:`x / v - 1` (Poisson), :math:`\\kappa (x - v) / v^2` (Gamma).

    ``inf`` for an underflowed ``v == 0`` (see :func:`nonzero_grad`).
    """
    if kappa == 0.0:
        return nonzero_grad(x, v) - 1.0 if x != 0.0 else -1.0
    return kappa * (x - v) / (v * v) if v > 0.0 else np.inf
