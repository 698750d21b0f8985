r"""The posterior mode of a CP model by multiplicative updates: the start of the reference's fit.

The mode of :math:`p(X \mid F) \prod \mathrm{Gamma}(F; a, \lambda)` in the factors
(:math:`a = 1`: the exponential priors, the mode in :math:`F`; :math:`a = 2`:
the mode in :math:`\log F`, which the Jacobian adds), one mode of the
factorisation after the other, by the majorisation-minimisation updates the
NMF community uses: Lee & Seung (2001) for the Poisson (KL) likelihood and
Févotte & Idier (2011) for the Gamma family (Itakura–Saito at
:math:`\kappa = 1`). With the gradient of the log posterior split into its
positive part :math:`N` and negative part :math:`P`,

.. math::
    F \leftarrow F\,(N / P)^{\gamma},\qquad
    N = \sum_e n_e\,\frac{\partial v_e}{\partial F} + \frac{a - 1}{F},\qquad
    P = \sum_e p_e\,\frac{\partial v_e}{\partial F} + \lambda,

Poisson: :math:`n = x/v`, :math:`p = 1`, :math:`\gamma = 1`; Gamma:
:math:`n = \kappa x / v^2`, :math:`p = \kappa / v`, :math:`\gamma = 1/2`,
with :math:`v` the mean (floor included). The updates do not increase the
negative log posterior. A dense matrix takes its products from BLAS; other
data loop over their listed entries (:mod:`~skevidence.cp.kernels.passes`).
"""

import numpy as np
from numba import njit

from ..._config import FASTMATH
from ..likelihood import WITH_VALUE
from .passes import column_sums, log_likelihood, other_modes

__all__ = ["map_fit"]

#: The smallest factor entry the updates leave: a zero would stay zero. A product of three stays a normal
#: number: denormal operands slow the passes over a sparse tensor's entries twofold.
_TINY = 1e-100


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def _dense_mode(X, A, B, kappa, floor, num, den):
    """``N`` and ``P`` (without the priors' terms) of ``A`` in :math:`V = A B^T`, a dense matrix."""
    # An empty row meets an empty column at 0 (both factors at _TINY): x / v = 0 / 0 there, read as 0.
    V = np.maximum(A @ B.T + floor, _TINY)
    if kappa == 0.0:
        num[:, :] = (X / V) @ B
        sums = B.sum(axis=0)
        for i in range(den.shape[0]):
            den[i, :] = sums
    else:
        num[:, :] = (kappa * X / (V * V)) @ B
        den[:, :] = (kappa / V) @ B


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def _listed_mode(coords, vals, F, offsets, m, kappa, floor, num, den):
    """``N`` and ``P`` (without the priors' terms) of mode ``m``'s rows, from the listed entries."""
    N = coords.shape[1]
    R = F.shape[1]
    num[:, :] = 0.0
    den[:, :] = 0.0
    others = np.empty(R)
    j, k = 1 if m == 0 else 0, N - 2 if m == N - 1 else N - 1  # the other modes of a matrix or three-way tensor
    for e in range(vals.shape[0]):
        v = floor
        own, b, c = offsets[m] + coords[e, m], offsets[j] + coords[e, j], offsets[k] + coords[e, k]
        for r in range(R):
            if N <= 3:  # unrolled: a third of the general loop's time
                others[r] = F[b, r] * (F[c, r] if N == 3 else 1.0)
            else:
                p = 1.0
                for q in range(N):
                    if q != m:
                        p *= F[offsets[q] + coords[e, q], r]
                others[r] = p
            v += others[r] * F[own, r]
        v = max(v, _TINY)
        x = vals[e]
        row = coords[e, m]
        if kappa == 0.0:
            w = x / v
            for r in range(R):
                num[row, r] += w * others[r]
        else:
            w1 = kappa * x / (v * v)
            w2 = kappa / v
            for r in range(R):
                num[row, r] += w1 * others[r]
                den[row, r] += w2 * others[r]
    if kappa == 0.0:  # the linear part: the product of the other modes' column sums
        sums = np.empty((N, R))
        column_sums(F, offsets, sums)
        for r in range(R):
            others[r] = other_modes(sums, m, r)
        for i in range(den.shape[0]):  # the same row for every factor row
            den[i, :] = others


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def _log_posterior(dense2, X, coords, vals, F, offsets, kappa, floor, rates, a, work, sums):
    """The log posterior in the factors up to the data's constant."""
    total = log_likelihood(dense2, X, coords, vals, F, offsets, kappa, floor, 0.0, work, sums, WITH_VALUE)
    for d in range(F.shape[0]):
        for r in range(F.shape[1]):
            total += (a - 1.0) * np.log(F[d, r]) - rates[d] * F[d, r]
    return total


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def map_fit(dense2, X, coords, vals, F, offsets, kappa, floor, rates, a, max_iter, rtol):
    """Multiplicative updates of the stacked factors ``F`` in place, mode after mode.

    ``rates`` holds every row's prior rate. Stops when the log posterior,
    checked every ten sweeps, moves by less than ``rtol`` of itself, or
    after ``max_iter`` sweeps. Returns ``(log posterior, sweeps)``.
    """
    N = offsets.shape[0] - 1
    R = F.shape[1]
    gamma = 1.0 if kappa == 0.0 else 0.5
    work = np.empty_like(F)
    sums = np.empty((N, R))
    XT = X.T.copy() if dense2 else X
    previous = -np.inf
    value = -np.inf
    sweep = 0
    while sweep < max_iter:
        for m in range(N):
            lo, hi = offsets[m], offsets[m + 1]
            num = np.empty((hi - lo, R))
            den = np.empty((hi - lo, R))
            if dense2:
                if m == 0:
                    _dense_mode(X, F[lo:hi], F[hi:], kappa, floor, num, den)
                else:
                    _dense_mode(XT, F[lo:hi], F[:lo], kappa, floor, num, den)
            else:
                _listed_mode(coords, vals, F, offsets, m, kappa, floor, num, den)
            for i in range(hi - lo):
                lam = rates[lo + i]
                for r in range(R):
                    f = F[lo + i, r]
                    ratio = (num[i, r] + (a - 1.0) / f) / (den[i, r] + lam)
                    f = f * ratio if gamma == 1.0 else f * np.sqrt(ratio)
                    F[lo + i, r] = max(f, _TINY)
        sweep += 1
        if sweep % 10 == 0 or sweep == max_iter:
            value = _log_posterior(dense2, X, coords, vals, F, offsets, kappa, floor, rates, a, work, sums)
            if abs(value - previous) <= rtol * abs(value):
                break
            previous = value
    return value, sweep
