r"""Fused block-parallel SG-MCMC chains for Poisson CP models of two and three modes (Nguyen et al. 2018, §III).

One call of :func:`run_cp_chain` runs a whole SGLD, pSGLD or log-space SGLD
chain at one inverse temperature :math:`t` for a CP (CANDECOMP/PARAFAC)
decomposition of an ``N``-way count array, with no Python per iteration
(the parts, buffers and sparse sums are written for any ``N``; the inner
loops of a block exist for ``N = 2`` and ``3``):

.. math::
    x_{i_1 \dots i_N} \sim \mathrm{Poisson}(V_{i_1 \dots i_N}),\quad
    V_{i_1 \dots i_N} = \sum_r \prod_m F^{(m)}_{i_m r},\quad
    F^{(m)}_{ir} \sim \mathrm{Exp}(\lambda_m).

Poisson NMF :math:`X \approx WH` is the two-way case (``F^(0) = W``,
``F^(1) = H^T``), Poisson PARAFAC (Nguyen et al. 2018) the three-way one;
:mod:`skevidence.kernels.nmf` and :mod:`skevidence.kernels.parafac` give them
their own names. The update rule comes from :mod:`skevidence.kernels._langevin`,
the per-entry likelihood from :mod:`skevidence.kernels._likelihood`.

**Blocks and parts** (Gemulla et al. 2011 for matrices). Every mode is cut
into ``B`` contiguous groups (:class:`~skevidence.kernels.blocks.BlockData`).
Part ``(p_1, ..., p_{N-1})``, index :math:`\sum_m p_m B^{N-1-m}`, is the ``B``
blocks with group ``b`` of mode 0 and group ``(b + p_m) mod B`` of mode ``m``:
disjoint in every mode, so the ``B`` block updates run in parallel (``prange``)
and every factor entry is updated once per iteration. Each iteration draws a
part uniformly from a master random stream; the part is the minibatch, of
``N_s`` entries, its log-likelihood and gradient scaled by the number of
parts :math:`B^{N-1}` (``part_scale``: unbiased for uneven groups) or by
``N / N_s`` (NMF's scale; the same for even groups).

**Random streams.** Stream 0 draws the parts; stream ``1 + b`` gives all the
noise of the block with mode-0 group ``b``: the normals of its rows of
``F^(0)``, then of ``F^(1)``, ... Each stream is advanced by one thread at a
time and per-block log-likelihoods are summed in block order, so results are
bitwise identical for any numba thread count.

**What is recorded.** After burn-in (``k > n_burnin``) the kernel records the
scaled log-likelihood of the drawn part at the state *before* iteration
``k``'s update and adds that state to the running sums of the factors; the
final state is returned in place and is not part of the means.

**Layout and inner loops.** The factors are stacked into one C-contiguous
``(sum_m n_m, R)`` array, so that a block's rows of any factor are one
contiguous run (NMF's ``H`` is held transposed for this). A dense two-way block
takes :math:`V` and its gradients from three BLAS products, a dense three-way
block visits every entry once; a sparse block visits only its non-zeros for the
:math:`x \log V` and :math:`x / V` terms and gets :math:`\sum V` and its
gradient from the factor sums (exact, :math:`\sum_r \prod_m \sum_{i}
F^{(m)}_{ir}`), at :math:`O(\mathrm{nnz}\,R + (\sum_m n_m) R)` per iteration.
Entries with :math:`x = 0` contribute :math:`-V` only.
"""

import numbers
import time
from typing import NamedTuple

import numba
import numpy as np
from numba import njit, prange

from ..._config import FASTMATH, MAX_CAPPED_FRACTION, PARALLEL_MIN_PART, PSGLD_ALPHA, PSGLD_SIGMA, STEP_DECAY
from ._langevin import (
    _OK,
    _check_chain_outcome,
    _check_chain_settings,
    _check_factor,
    _check_number,
    _end_iteration,
    _exponential_fill,
    _max_size,
    _sampler_mode,
    _serial_twin,
    _step_size,
    _update_rows,
)
from ..likelihood import entry_grad, entry_loglik, nonzero_grad, nonzero_loglik
from .rng import seed_streams, uniform_index
from ..data import BlockData

__all__ = ["CPChainResult", "compile_cp_kernels", "run_cp_chain", "score_cp_prior"]


@njit(cache=True, fastmath=FASTMATH)
def _part_groups(bounds, part, b, groups):
    """Groups of block ``b`` of part ``part`` into ``groups`` (one per mode); returns the block id."""
    n_modes, B = bounds.shape[0], bounds.shape[1] - 1
    for m in range(n_modes - 1, 0, -1):
        groups[m] = (b + part % B) % B
        part //= B
    groups[0] = b
    bid = 0
    for m in range(n_modes):
        bid = bid * B + groups[m]
    return bid


@njit(cache=True, fastmath=FASTMATH)
def _part_sizes(bounds, part_scale):
    """Number of entries ``N_s`` of every part, and its log-likelihood scale (see ``part_scale``)."""
    n_modes, B = bounds.shape[0], bounds.shape[1] - 1
    groups = np.empty(n_modes, dtype=np.int64)
    sizes = np.zeros(B ** (n_modes - 1), dtype=np.int64)
    n_data = 1
    for m in range(n_modes):
        n_data *= bounds[m, B]
    for part in range(sizes.shape[0]):
        for b in range(B):
            _part_groups(bounds, part, b, groups)
            size = 1
            for m in range(n_modes):
                size *= bounds[m, groups[m] + 1] - bounds[m, groups[m]]
            sizes[part] += size
    scales = np.full(sizes.shape[0], float(sizes.shape[0])) if part_scale else n_data / sizes
    return sizes, scales


@njit(cache=True, fastmath=FASTMATH, inline="always")
def _views(F, g, rows, m):
    """Factor ``m`` of the stacked ``F``, indexed by mode index, and its block gradient ``(n, R)`` in ``g``.

    ``rows[o]`` is the block's ``(first, end)`` rows of factor ``o`` in ``F``,
    then in mode ``o``; ``g`` holds the block's gradients in mode order. The
    inner loops index these views as the kernels per model did (flat offset
    arithmetic in their place cost 15 % of a sparse NMF iteration).
    """
    R = F.shape[1]
    at = 0
    for o in range(m):
        at += (rows[o, 1] - rows[o, 0]) * R
    n = rows[m, 1] - rows[m, 0]
    return F[rows[m, 0] - rows[m, 2] : rows[m, 1]], g[at : at + n * R].reshape((n, R))


@njit(cache=True, fastmath=FASTMATH)
def _dense_block_2(X, F, rows, g, work, keep, kappa):
    """Likelihood gradients of one dense two-way block into ``g``; its log-likelihood.

    ``V`` comes from one BLAS product and returns the gradients through two
    more. The log-likelihood (without the lgamma term) is only computed when
    ``keep``; otherwise 0 is returned.
    """
    i0, i1, j0, j1 = rows[0, 2], rows[0, 3], rows[1, 2], rows[1, 3]
    W, gW = _views(F, g, rows, 0)
    Ht, gHt = _views(F, g, rows, 1)
    Wb, Htb = W[i0:i1], Ht[j0:j1]
    V = work[: (i1 - i0) * (j1 - j0)].reshape((i1 - i0, j1 - j0))
    np.dot(Wb, Htb.T, V)
    ll = 0.0
    for i in range(i0, i1):
        for j in range(j0, j1):
            x = X[i, j]
            v = V[i - i0, j - j0]
            if keep:
                ll += entry_loglik(x, v, kappa)
            V[i - i0, j - j0] = entry_grad(x, v, kappa)
    # V now holds E = dlog p / dV.
    np.dot(V, Htb, gW)
    np.dot(V.T, Wb, gHt)
    return ll


@njit(cache=True, fastmath=FASTMATH)
def _dense_block_3(X, F, rows, g, work, keep, kappa):
    """Three-way counterpart of :func:`_dense_block_2`: one fused pass over the block's entries."""
    R = F.shape[1]
    i0, i1, j0, j1, k0, k1 = rows[0, 2], rows[0, 3], rows[1, 2], rows[1, 3], rows[2, 2], rows[2, 3]
    A, gA = _views(F, g, rows, 0)
    Bf, gB = _views(F, g, rows, 1)
    C, gC = _views(F, g, rows, 2)
    g[: (i1 - i0 + j1 - j0 + k1 - k0) * R] = 0.0
    ab = work[:R]
    ll = 0.0
    for i in range(i0, i1):
        for j in range(j0, j1):
            for r in range(R):
                ab[r] = A[i, r] * Bf[j, r]
            for k in range(k0, k1):
                v = 0.0
                for r in range(R):
                    v += ab[r] * C[k, r]
                x = X[i, j, k]
                if keep:
                    ll += entry_loglik(x, v, kappa)
                e = entry_grad(x, v, kappa)
                for r in range(R):
                    ckr = C[k, r]
                    gA[i - i0, r] += e * Bf[j, r] * ckr
                    gB[j - j0, r] += e * A[i, r] * ckr
                    gC[k - k0, r] += e * ab[r]
    return ll


@njit(cache=True, fastmath=FASTMATH)
def _nonzeros(X, coords, vals, start, stop, F, rows, g, keep):
    """The non-zeros' terms of a sparse block: :math:`\\sum x \\log V` and :math:`x / V` times the factors.

    ``X`` is the empty array of the data's order; ``X.ndim`` is a compile-time
    constant, so the branches on it cost nothing and each order gets the
    inner loop of its former kernel.
    """
    R = F.shape[1]
    three = X.ndim == 3
    last = X.ndim - 1
    i0, j0, k0 = rows[0, 2], rows[1, 2], rows[last, 2]
    A, gA = _views(F, g, rows, 0)
    Bf, gB = _views(F, g, rows, 1)
    C, gC = _views(F, g, rows, last)
    ll = 0.0
    for e in range(start, stop):
        i = coords[0, e]
        j = coords[1, e]
        k = coords[last, e]
        x = vals[e]
        v = 0.0
        for r in range(R):
            v += A[i, r] * Bf[j, r] * C[k, r] if three else A[i, r] * Bf[j, r]
        if keep:
            ll += nonzero_loglik(x, v)
        ratio = nonzero_grad(x, v)
        for r in range(R):
            if three:
                gA[i - i0, r] += ratio * Bf[j, r] * C[k, r]
                gB[j - j0, r] += ratio * A[i, r] * C[k, r]
                gC[k - k0, r] += ratio * A[i, r] * Bf[j, r]
            else:
                gA[i - i0, r] += ratio * Bf[j, r]
                gB[j - j0, r] += ratio * A[i, r]
    return ll


@njit(cache=True, fastmath=FASTMATH)
def _sparse_block(X, coords, vals, start, stop, F, rows, g, sums, keep):
    """Sparse counterpart of the dense blocks over non-zeros ``start:stop``.

    The non-zeros take :func:`_nonzeros` (a loop over modes in its inner
    loop cost three times as much); :math:`-\\sum V` over the block and its
    gradient come from the factor sums, which ``sums`` (n_modes, R) receives.
    """
    n_modes, R = rows.shape[0], F.shape[1]
    g[: sum([(rows[m, 1] - rows[m, 0]) * R for m in range(n_modes)])] = 0.0
    for m in range(n_modes):
        for r in range(R):
            sums[m, r] = 0.0
        for a in range(rows[m, 0], rows[m, 1]):
            for r in range(R):
                sums[m, r] += F[a, r]
    ll = _nonzeros(X, coords, vals, start, stop, F, rows, g, keep)
    for r in range(R):
        total = sums[0, r]
        for m in range(1, n_modes):
            total *= sums[m, r]
        if keep:
            ll -= total
    at = 0
    for m in range(n_modes):
        for r in range(R):
            others = 1.0  # the product of the other modes' sums (1.0 * s is exactly s)
            for o in range(n_modes):
                if o != m:
                    others *= sums[o, r]
            for a in range(rows[m, 1] - rows[m, 0]):
                g[at + a * R + r] -= others
        at += (rows[m, 1] - rows[m, 0]) * R
    return ll


@njit(cache=True, fastmath=FASTMATH)
def _block_loglik(X, coords, vals, block_ptr, sparse, bid, F, rows, g, work, keep, kappa):
    """Log-likelihood of block ``bid`` (without its constant; 0 unless ``keep``), its gradients into ``g``.

    ``kappa`` is the likelihood switch of :mod:`skevidence.kernels._likelihood`
    (sparse blocks are Poisson: :class:`BlockData` refuses sparse Gamma data).
    """
    if sparse:
        sums = work[: rows.shape[0] * F.shape[1]].reshape((rows.shape[0], F.shape[1]))
        return _sparse_block(X, coords, vals, block_ptr[bid], block_ptr[bid + 1], F, rows, g, sums, keep)
    # X.ndim is a compile-time constant: numba prunes the other branch.
    if X.ndim == 2:
        return _dense_block_2(X, F, rows, g, work, keep, kappa)
    return _dense_block_3(X, F, rows, g, work, keep, kappa)


@njit(cache=True, fastmath=FASTMATH)
def _block_rows(bounds, offsets, groups, rows):
    """Fill ``rows[m] = (first, end)`` in the stacked factors and ``(first, end)`` in mode ``m``."""
    for m in range(bounds.shape[0]):
        lo, hi = bounds[m, groups[m]], bounds[m, groups[m] + 1]
        rows[m, 0], rows[m, 1], rows[m, 2], rows[m, 3] = offsets[m] + lo, offsets[m] + hi, lo, hi


@njit(cache=True, fastmath=FASTMATH)
def _work_sizes(X, bounds, sparse, R):
    """Per-block buffer sizes ``(gradient, work, noise)`` for the data's form and order."""
    n_modes = bounds.shape[0]
    sizes = np.array([_max_size(bounds[m]) for m in range(n_modes)])
    work = n_modes * R if sparse else (sizes[0] * sizes[1] if X.ndim == 2 else R)
    return sizes.sum() * R, work, sizes.max() * R


@njit(cache=True, parallel=True, fastmath=FASTMATH)
def _cp_chain(X, coords, vals, block_ptr, sparse, block_lgamma, kappa, bounds, offsets, F, vF, streams,
              temperature, n_samples, n_burnin, step_a, step_b, mode, alpha, sigma, freeze, rates,
              part_scale, log_lik, F_sum):
    """Whole chain, dense (``X``) or sparse (``coords, vals, block_ptr``); returns
    ``(status, iteration, n_evaluations, n_capped)``, ``n_capped`` the drifts capped on kept
    iterations."""
    n_modes, B, R = bounds.shape[0], bounds.shape[1] - 1, F.shape[1]
    n_g, n_work, n_noise = _work_sizes(X, bounds, sparse, R)
    g_buf = np.empty((B, n_g))
    work_buf = np.empty((B, n_work))
    noise_buf = np.empty((B, n_noise))
    bits_buf = np.empty((B, n_noise), dtype=np.int64)
    groups_buf = np.empty((B, n_modes), dtype=np.int64)
    rows_buf = np.empty((B, n_modes, 4), dtype=np.int64)
    ll_blocks = np.zeros(B)
    ok_blocks = np.ones(B, dtype=np.bool_)
    capped_blocks = np.zeros(B, dtype=np.int64)
    capped_total = np.zeros(1, dtype=np.int64)
    part_sizes, scales = _part_sizes(bounds, part_scale)
    n_evals = 0
    for k in range(1, n_samples + 1):
        part = uniform_index(streams[0], part_sizes.shape[0])
        n_s = part_sizes[part]
        scale = scales[part]
        eps = _step_size(k, n_burnin, step_a, step_b)
        keep = k > n_burnin
        init_v = k == 1
        adapt_v = not (freeze and keep)
        lik_scale = temperature * scale
        mean_scale = temperature / n_s
        for b in prange(B):
            rows = rows_buf[b]
            bid = _part_groups(bounds, part, b, groups_buf[b])
            _block_rows(bounds, offsets, groups_buf[b], rows)
            g = g_buf[b]
            ll = _block_loglik(X, coords, vals, block_ptr, sparse, bid, F, rows, g, work_buf[b], keep, kappa)
            ll_blocks[b] = ll - block_lgamma[bid]
            ok, capped, at = True, 0, 0
            for m in range(n_modes):
                ok_m, capped_m = _update_rows(F, vF, F_sum, g[at:], noise_buf[b], bits_buf[b],
                                              streams[1 + b], rows[m, 0], rows[m, 1], keep, eps,
                                              lik_scale, mean_scale, rates[m], mode, init_v, adapt_v,
                                              alpha, sigma)
                ok &= ok_m
                capped += capped_m
                at += (rows[m, 1] - rows[m, 0]) * R
            ok_blocks[b] = ok
            capped_blocks[b] = capped
        n_evals += n_s
        status = _end_iteration(ok_blocks, capped_blocks, ll_blocks, scale, keep, k - n_burnin - 1,
                                log_lik, capped_total)
        if status != _OK:
            return status, k, n_evals, capped_total[0]
    return _OK, n_samples, n_evals, capped_total[0]


_cp_chain_serial = _serial_twin(_cp_chain)


@njit(cache=True, fastmath=FASTMATH)
def _cp_prior_scores(X, coords, vals, block_ptr, sparse, block_lgamma, kappa, bounds, offsets, F, streams,
                     rates, transposed, part_scale, log_lik, F_sum):
    """Score exact prior draws of the factors, each on one random part.

    Stream 1 draws the factors in mode order for every draw (each row-major,
    or in its transpose's row-major order where ``transposed``), stream 0 the
    parts. ``F`` ends as the last draw. Returns ``n_evaluations``.
    """
    n_modes, B, R = bounds.shape[0], bounds.shape[1] - 1, F.shape[1]
    n_g, n_work, _ = _work_sizes(X, bounds, sparse, R)
    g = np.empty(n_g)
    work = np.empty(n_work)
    groups = np.empty(n_modes, dtype=np.int64)
    rows = np.empty((n_modes, 4), dtype=np.int64)
    part_sizes, scales = _part_sizes(bounds, part_scale)
    n_evals = 0
    for k in range(log_lik.shape[0]):
        for m in range(n_modes):
            Fm = F[offsets[m] : offsets[m + 1]]
            if transposed[m]:
                _exponential_fill(streams[1], Fm.T, rates[m])
            else:
                _exponential_fill(streams[1], Fm, rates[m])
        F_sum += F
        part = uniform_index(streams[0], part_sizes.shape[0])
        total = 0.0
        for b in range(B):
            bid = _part_groups(bounds, part, b, groups)
            _block_rows(bounds, offsets, groups, rows)
            total += (_block_loglik(X, coords, vals, block_ptr, sparse, bid, F, rows, g, work, True, kappa)
                      - block_lgamma[bid])
        log_lik[k] = total * scales[part]
        n_evals += part_sizes[part]
    return n_evals


class CPChainResult(NamedTuple):
    """What one CP chain at one temperature returns."""

    #: Kept estimates of the log-likelihood (scaled from the part), one per kept iteration.
    log_likelihood: np.ndarray
    #: Means of the factors over the kept (pre-update) states, shapes (n_m, R).
    factor_means: tuple
    #: Step size in force for the kept samples (NaN for exact prior draws).
    step_size: float
    #: Entries of the drawn parts summed over all iterations (burn-in included);
    #: for sparse data too, although the kernel then touches only the non-zeros.
    n_likelihood_evaluations: int
    #: Fraction of the entry updates after burn-in whose drift the cap cut
    #: (``LANGEVIN_MAX_DRIFT``; 0 for exact prior draws).
    capped_fraction: float = 0.0


def _kernel_data(data):
    """The kernels' data arguments (empty arrays stand for the form the data is not in)."""
    N = len(data.shape)
    if data.is_sparse:  # X keeps the data's order: the kernels branch on X.ndim
        arrays = (np.empty((0,) * N), data.coords, data.vals, data.block_ptr)
    else:
        arrays = (data.X, np.empty((N, 0), dtype=np.int64), np.empty(0), np.empty(0, dtype=np.int64))
    return (*arrays, data.is_sparse, data.block_lgamma, data.kappa, np.array(data.bounds),
            np.concatenate(([0], np.cumsum(data.shape))))


def _check_data(data, cls):
    if not isinstance(data, cls):
        raise TypeError(f"data must be a {cls.__name__} (see {cls.__name__}.from_array), got {type(data).__name__}.")
    if len(data.shape) not in (2, 3):
        raise ValueError(f"The CP kernels take two- and three-way data, got shape {data.shape}.")


def _check_rates(prior_rates, n_modes):
    rates = (prior_rates,) * n_modes if isinstance(prior_rates, numbers.Real) else tuple(prior_rates)
    if len(rates) != n_modes:
        raise ValueError(f"prior_rates must be {n_modes} rates (one per mode), got {prior_rates!r}.")
    return np.array([_check_number(f"prior_rates[{m}]", r, 0.0, low_open=True) for m, r in enumerate(rates)])


def _check_factors(factors, shape, names):
    """Check that ``factors`` (named ``names``) are one non-negative float array (n_m, R) per mode."""
    if not isinstance(factors, (list, tuple)) or len(factors) != len(shape):
        raise ValueError(f"factors must be a sequence of {len(shape)} arrays ({', '.join(names)}).")
    first = factors[0]
    if not isinstance(first, np.ndarray) or first.ndim != 2 or first.shape[1] < 1:
        raise ValueError(f"{names[0]} must be a 2-D numpy array of shape ({shape[0]}, R), R >= 1.")
    for name, F, n in zip(names, factors, shape):
        _check_factor(name, F, (n, first.shape[1]))


def run_cp_chain(data, factors, *, temperature, n_samples, n_burnin, step_a, step_b=STEP_DECAY,
                 sampler, alpha=PSGLD_ALPHA, sigma=PSGLD_SIGMA, freeze=True, prior_rates, seed_seq,
                 max_capped_fraction=MAX_CAPPED_FRACTION, part_scale=True, names=None):
    r"""Run one block-parallel SG-MCMC chain for a Poisson CP model at one temperature.

    See the module docstring for the blocks, the parts (drawn at random),
    the random streams and what is recorded. The factors are the warm start
    and receive the chain's final state; if the chain diverges they are left
    unchanged.

    Parameters
    ----------
    data : BlockData
        The prepared array ``X`` of shape ``(n_0, ..., n_{N-1})`` with its blocks.
    factors : sequence of N ndarrays of shapes (n_m, R)
        Non-negative float arrays (views are fine), updated in place.
    temperature : float
        Inverse temperature :math:`t \ge 0`.
    n_samples, n_burnin : int
        Iterations in all, and those discarded; ``0 <= n_burnin < n_samples``.
    step_a, step_b : float
        Step sizes :math:`\epsilon_k = (a / \min(k, K_b))^b` (``a`` if ``b == 0``),
        as :class:`~skevidence.samplers.StepSizeSchedule`.
    sampler : {"sgld", "psgld", "logsgld"}
        Update rule. SGLD and pSGLD (Li et al. 2016; the preconditioner ``v``
        partitioned and updated with its factor blocks, with the block's
        part-mean gradient :math:`\bar g = (t/N_s)\sum_{\text{block}}\nabla`)
        mirror at zero. ``"logsgld"`` is SGLD on the log-factors (target
        :math:`p_t(\theta)\prod\theta`, the Jacobian included) preconditioned
        by the fixed, data-given :math:`1/(1 + t\,x_{i\cdot})` for row ``i``
        of a factor, :math:`x_{i\cdot}` the data's sum over every other mode:
        the inverse log-space curvature of the rank-1 Gamma conditionals, so
        that one step size (about 0.01) suits every entry at every
        temperature. It needs strictly positive factors.
    alpha, sigma : float
        pSGLD decay and floor (ignored by the other samplers).
    freeze : bool, default=True
        pSGLD: stop adapting the preconditioner after burn-in (``adapt="burnin"``
        of :class:`~skevidence.samplers.PSGLD`). On the first iteration it is
        set to :math:`\bar g^2`, whatever ``freeze``.
    prior_rates : float or sequence of N floats
        Rates :math:`\lambda_m` of the exponential priors.
    seed_seq : numpy.random.SeedSequence
        Seeds the ``B + 1`` random streams of this chain.
    max_capped_fraction : float, default=MAX_CAPPED_FRACTION
        Largest fraction of the entry updates after burn-in whose drift the
        cap (``LANGEVIN_MAX_DRIFT`` noise standard deviations) may cut before
        the chain counts as diverged; ``1.0`` never raises.
    part_scale : bool, default=True
        Scale a part's log-likelihood by the number of parts (unbiased for
        uneven groups); ``False``: by ``N / N_s``, the NMF kernels' scale.
    names : sequence of N str, optional
        The factors' names in error messages; default ``A, B, C, ...``.

    Returns
    -------
    CPChainResult

    Raises
    ------
    SamplerDivergenceError
        If a gradient, the state or a kept log-likelihood stops being finite,
        or if the drift cap cut more than ``max_capped_fraction`` of the
        updates after burn-in (the steps are too long).
    """
    _check_data(data, BlockData)
    names = names or tuple("ABCDEFGH"[: len(data.shape)])
    _check_factors(factors, data.shape, names)
    temperature, n_samples, n_burnin, step_a, step_b, alpha, sigma = _check_chain_settings(
        temperature, n_samples, n_burnin, step_a, step_b, sampler, alpha, sigma
    )
    rates = _check_rates(prior_rates, len(data.shape))

    n_kept = n_samples - n_burnin
    args = _kernel_data(data)
    offsets = args[-1]
    F = np.concatenate([np.asarray(f, dtype=np.float64) for f in factors])
    vF, F_sum = np.zeros_like(F), np.zeros_like(F)
    views = [F[offsets[m] : offsets[m + 1]] for m in range(len(factors))]
    precond = [vF[offsets[m] : offsets[m + 1]] for m in range(len(factors))]
    streams = seed_streams(seed_seq, data.n_blocks + 1)
    log_lik = np.empty(n_kept)
    mode = _sampler_mode(sampler, views, precond, data.curvature_sums, temperature,
                         " and ".join((", ".join(names[:-1]), names[-1])))
    # The parallel runtime forks and joins every iteration: worth it only for parts
    # with enough entries (and fragile when other processes load the cores). The
    # parallel kernel and its serial twin give bitwise the same numbers.
    part_size = data.n_data // data.n_blocks ** (len(data.shape) - 1)
    parallel = numba.get_num_threads() > 1 and part_size >= PARALLEL_MIN_PART
    kernel = _cp_chain if parallel else _cp_chain_serial
    status, k, n_evals, n_capped = kernel(
        *args, F, vF, streams, temperature, n_samples, n_burnin, step_a, step_b, mode, alpha, sigma,
        bool(freeze), rates, bool(part_scale), log_lik, F_sum,
    )
    capped_fraction = _check_chain_outcome(
        status, k, n_capped, F.size, sampler=sampler, temperature=temperature, n_samples=n_samples,
        n_burnin=n_burnin, step_a=step_a, step_b=step_b, max_capped_fraction=max_capped_fraction,
    )
    for f, view in zip(factors, views):
        f[...] = view
    return CPChainResult(
        log_likelihood=log_lik,
        factor_means=tuple(F_sum[offsets[m] : offsets[m + 1]] / n_kept for m in range(len(factors))),
        step_size=float(_step_size(n_samples, n_burnin, step_a, step_b)),
        n_likelihood_evaluations=int(n_evals),
        capped_fraction=capped_fraction,
    )


def score_cp_prior(data, n_components, n_draws, *, prior_rates, seed_seq, part_scale=True, transposed=None):
    r"""Exact prior draws of the factors, each scored on one random part, in one call.

    The :math:`t = 0` rung of STI: the factors are drawn exactly from their
    exponential priors and scored like a chain's kept iterations, on a
    uniformly drawn part, with no Python per draw.

    Parameters
    ----------
    data : BlockData
        The blocked array.
    n_components : int
        Rank :math:`R`.
    n_draws : int
        Number of prior draws.
    prior_rates : float or sequence of N floats
        Rates of the exponential priors.
    seed_seq : numpy.random.SeedSequence
        Seeds the two streams (draws, parts).
    part_scale : bool, default=True
        As in :func:`run_cp_chain`.
    transposed : sequence of N bool, optional
        Modes whose factor the caller holds transposed (NMF's ``H``, (R, J)):
        their draws follow the transpose's row-major order.

    Returns
    -------
    result : CPChainResult
        The scores, the means of the draws, ``step_size`` NaN, and the
        number of entries scored.
    factors : tuple of N ndarrays of shapes (n_m, R)
        The last draw, the warm start of the next temperature.
    """
    _check_data(data, BlockData)
    rates = _check_rates(prior_rates, len(data.shape))
    R, n_draws = int(n_components), int(n_draws)
    if R < 1 or n_draws < 1:
        raise ValueError(f"n_components and n_draws must be at least 1, got {R} and {n_draws}.")
    args = _kernel_data(data)
    offsets = args[-1]
    F = np.empty((offsets[-1], R))
    F_sum = np.zeros_like(F)
    log_lik = np.empty(n_draws)
    flags = np.zeros(len(data.shape), dtype=np.bool_) if transposed is None else np.array(transposed, dtype=np.bool_)
    n_evals = _cp_prior_scores(*args, F, seed_streams(seed_seq, 2), rates, flags, bool(part_scale), log_lik, F_sum)
    if not np.all(np.isfinite(log_lik)):
        raise ValueError("The log-likelihood is not finite at some prior draws; check that X is valid.")
    split = [slice(offsets[m], offsets[m + 1]) for m in range(len(data.shape))]
    result = CPChainResult(log_lik, tuple(F_sum[s] / n_draws for s in split), np.nan, int(n_evals))
    return result, tuple(F[s] for s in split)


def compile_cp_kernels(data_cls, X, sparse_X, *, part_scale=True, transposed=None):
    """Compile (or load from numba's cache) the CP kernels on the small ``X`` (dense, then ``sparse_X``).

    Runs a two-iteration pSGLD chain and scores two prior draws: the serial
    chain and the prior scoring of the data's order. The parallel chain
    compiles on its first use on parts of at least ``PARALLEL_MIN_PART`` entries.

    Returns
    -------
    seconds : float
        Wall time spent, i.e. the compilation or cache-loading cost.
    """
    start = time.perf_counter()
    for Xs in (X, sparse_X):
        data = data_cls.from_array(Xs, 2)
        factors = [np.ones((n, 1)) for n in data.shape]
        run_cp_chain(data, factors, temperature=1.0, n_samples=2, n_burnin=1, step_a=1e-3, step_b=0.0,
                     sampler="psgld", prior_rates=1.0, seed_seq=np.random.SeedSequence(0),
                     max_capped_fraction=1.0, part_scale=part_scale)
        score_cp_prior(data, 1, 2, prior_rates=1.0, seed_seq=np.random.SeedSequence(0),
                       part_scale=part_scale, transposed=transposed)
    return time.perf_counter() - start
