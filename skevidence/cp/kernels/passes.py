r"""The likelihood's passes over the data: its value and gradient in the factors, and its Fisher information.

The factors of all modes are the row blocks of one ``(D, R)`` array ``F``,
mode ``m`` in rows ``offsets[m]:offsets[m + 1]``, and an entry's mean is
:math:`v_e = \sum_r \prod_m F_{o_m + i_m(e),\,r} + f` with ``f`` the noise
floor. The passes visit the listed entries for the entry part
:math:`\tau(x, v)` of :mod:`~skevidence.cp.likelihood` — a dense matrix
through three BLAS products, anything else by a loop over the listed entries
(:math:`O(n\,R\,N)`, written out for two and three modes) — and take the
linear part :math:`-\sum v` (Poisson) and its gradient from the factors'
column sums.
"""

import numpy as np
from numba import njit

from ..._config import FASTMATH
from ..likelihood import dense_entries, entry

__all__ = ["column_sums", "entry_pass", "fisher_pass", "log_likelihood", "other_modes", "single_dense_pass"]


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", inline="always")
def _mean(F, offsets, coords, e, floor):
    """Listed entry ``e``'s mean: the floor plus the sum over components of the product of its factor rows."""
    v = floor
    for r in range(F.shape[1]):
        p = 1.0
        for m in range(offsets.shape[0] - 1):
            p *= F[offsets[m] + coords[e, m], r]
        v += p
    return v


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", inline="always")
def _add_products(F, offsets, coords, e, w, power, out):
    r"""Add ``w`` times the ``power``-th power of :math:`\partial v_e / \partial F` to ``out``, row by row."""
    N = offsets.shape[0] - 1
    for m in range(N):
        row = offsets[m] + coords[e, m]
        for r in range(F.shape[1]):
            p = 1.0
            for k in range(N):
                if k != m:
                    p *= F[offsets[k] + coords[e, k], r]
            out[row, r] += w * (p if power == 1 else p * p)


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def entry_pass(dense2, X, coords, vals, F, offsets, kappa, floor, out, with_value):
    r"""Fill ``out`` with :math:`\partial_F \sum_e \tau(x_e, v_e)` and return :math:`\sum_e \tau(x_e, v_e)`.

    With ``dense2`` the data are the dense matrix ``X``; otherwise the listed
    entries ``coords`` (``(n, N)``) and ``vals``. Without ``with_value`` the
    logarithms are skipped and 0 is returned (a leapfrog step needs the
    gradient only).
    """
    out[:] = 0.0
    total = 0.0
    if dense2:
        I = offsets[1]
        W = F[:I]
        Ht = F[I:]
        V = W @ Ht.T
        total = dense_entries(X, V, floor, kappa, with_value)
        out[:I] = V @ Ht
        out[I:] = V.T @ W
        return total
    N = coords.shape[1]
    R = F.shape[1]
    I = offsets[1]
    if N == 2:
        for e in range(vals.shape[0]):
            a, b = coords[e, 0], I + coords[e, 1]
            v = floor
            for r in range(R):
                v += F[a, r] * F[b, r]
            term, w = entry(vals[e], v, kappa, with_value)
            total += term
            for r in range(R):
                out[a, r] += w * F[b, r]
                out[b, r] += w * F[a, r]
        return total
    if N == 3:  # unrolled: a quarter of the general loop's time
        for e in range(vals.shape[0]):
            a, b, c = coords[e, 0], I + coords[e, 1], offsets[2] + coords[e, 2]
            v = floor
            for r in range(R):
                v += F[a, r] * F[b, r] * F[c, r]
            term, w = entry(vals[e], v, kappa, with_value)
            total += term
            for r in range(R):
                out[a, r] += w * (F[b, r] * F[c, r])
                out[b, r] += w * (F[a, r] * F[c, r])
                out[c, r] += w * (F[a, r] * F[b, r])
        return total
    for e in range(vals.shape[0]):
        term, w = entry(vals[e], _mean(F, offsets, coords, e, floor), kappa, with_value)
        total += term
        _add_products(F, offsets, coords, e, w, 1, out)
    return total


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def single_dense_pass(X, F, I, kappa, floor, out):
    r"""Fill ``out`` with :func:`entry_pass`'s gradient on the dense matrix ``X`` (``I`` rows), its three
    products in single precision.

    Each entry's weight is taken in double precision and stored in single;
    the gradient is within single precision's rounding of the double one
    (relative :math:`10^{-6}`) in half its time at large ranks. For a
    leapfrog step's field, where any deterministic field keeps the
    Metropolis step exact; never for a value.
    """
    W = F[:I].astype(np.float32)
    Ht = F[I:].astype(np.float32)
    V = W @ Ht.T
    dense_entries(X, V, floor, kappa, False)
    out[:I] = V @ Ht
    out[I:] = V.T @ W


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def column_sums(F, offsets, sums):
    """Each mode's column sums of the stacked ``F`` into ``sums`` (``(N, R)``)."""
    # Row by row: a column of a factor with hundreds of components is a cache line a row.
    sums[:, :] = 0.0
    for m in range(offsets.shape[0] - 1):
        for i in range(offsets[m], offsets[m + 1]):
            for r in range(F.shape[1]):
                sums[m, r] += F[i, r]


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", inline="always")
def other_modes(sums, m, r):
    """The product of column ``r`` of ``sums`` (``(N, R)``: every mode's column sums) over the modes but ``m``."""
    p = 1.0
    for k in range(sums.shape[0]):
        if k != m:
            p *= sums[k, r]
    return p


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def log_likelihood(dense2, X, coords, vals, F, offsets, kappa, floor, constant, grad, sums, with_value, single=False):
    r""":math:`\log p(X \mid F)` and, in ``grad``, its gradient in ``F`` (``sums``: ``(N, R)`` work space).

    ``constant`` is the data's :math:`\sum c(x)`. Without ``with_value`` only
    the gradient is right; with ``single`` too, a dense matrix's products are
    then in single precision (:func:`single_dense_pass`).
    """
    if single and dense2 and not with_value:
        single_dense_pass(X, F, offsets[1], kappa, floor, grad)
        total = 0.0
    else:
        total = entry_pass(dense2, X, coords, vals, F, offsets, kappa, floor, grad, with_value)
    if kappa > 0.0:
        return total - constant
    # The Poisson linear part: -sum V = -sum_r prod_m (column sum of mode m)_r.
    column_sums(F, offsets, sums)
    N = offsets.shape[0] - 1
    R = F.shape[1]
    mass = 0.0
    for r in range(R):
        p = 1.0
        for m in range(N):
            p *= sums[m, r]
        mass += p
    others = np.empty(R)
    for m in range(N):
        for r in range(R):
            others[r] = other_modes(sums, m, r)
        for i in range(offsets[m], offsets[m + 1]):  # row by row, as the factors are stored
            for r in range(R):
                grad[i, r] -= others[r]
    return total - mass - constant


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def fisher_pass(dense2, X, coords, F, offsets, kappa, floor, out):
    r"""Fill ``out`` with the Gamma likelihood's expected curvature in the factors.

    That is :math:`\kappa\sum_e (\partial v_e/\partial F_{ir})^2 / v_e^2`, the diagonal of the Fisher
    information in the factors (the data enter
    through their positions only, :math:`E[x] = v`); ``coords`` list every
    entry unless ``dense2``.
    """
    out[:] = 0.0
    if dense2:
        I = offsets[1]
        W = F[:I]
        Ht = F[I:]
        V = W @ Ht.T + floor
        Q = kappa / (V * V)
        out[:I] = Q @ (Ht * Ht)
        out[I:] = Q.T @ (W * W)
        return
    for e in range(coords.shape[0]):
        v = _mean(F, offsets, coords, e, floor)
        _add_products(F, offsets, coords, e, kappa / (v * v), 2, out)

