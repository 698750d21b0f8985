r"""Fused block-parallel SG-MCMC chains for Poisson NMF (ALGORITHMS.md section 4).

One call of :func:`run_nmf_chain` runs a whole SGLD or pSGLD chain at one
inverse temperature :math:`t` for :math:`X \approx WH` with

.. math::
    x_{ij} \sim \mathrm{Poisson}(V_{ij}),\quad V = WH,\quad
    W_{ir} \sim \mathrm{Exp}(\lambda_W),\quad H_{rj} \sim \mathrm{Exp}(\lambda_H),

with no Python per iteration. It is the fused counterpart of
:class:`skevidence.evidence._runner.GradientChainRunner` for this model. The
update rule of a block's rows (SGLD, pSGLD, log-space SGLD, with the drift
cap) and the chain's checks come from :mod:`skevidence.kernels._langevin`,
shared with the PARAFAC kernel.

**Blocks and parts.** Rows are cut into ``B`` contiguous groups
(``row_bounds``), columns likewise (``col_bounds``). Part ``p`` is the ``B``
blocks (row group ``b``, column group ``(b + p) mod B``), ``b = 0..B-1``. Every
iteration draws ``p`` uniformly from a master random stream, then updates the
``B`` blocks of the part in parallel (``prange`` over ``b``): block ``b`` reads
and writes only ``W[I_b]``, ``H[:, J_c]`` and their pSGLD preconditioners, so
the block tasks are independent, and every entry of ``W`` and ``H`` is updated
exactly once per iteration. The part is the minibatch: ``N_s`` its number of
entries, the gradient scale ``N / N_s`` with ``N = I J``.

**Random streams.** Stream 0 (the master) draws the parts; stream ``1 + b``
gives all the noise of the block with row group ``b``: first ``|I_b| R``
normals for ``W[I_b]`` (row-major), then ``R |J_c|`` for ``H[:, J_c]``
(column-major: the kernels hold ``H`` transposed, so that a column group is
contiguous in memory like a row group of ``W``). Streams are seeded from the chain's ``SeedSequence`` by
:func:`skevidence.kernels._rng.seed_streams`, and each is advanced by one
thread at a time, so results are bitwise identical for any numba thread count.
Per-block log-likelihoods are summed in block order after the parallel loop.

**What is recorded.** After burn-in (iterations ``k > n_burnin``) the kernel
records :math:`\ell_k = (N/N_s)\sum_{\text{part}}\log p(x_{ij}|W, H)` at the state
*before* iteration ``k``'s update, on the part that drives that update, and adds
that same pre-update state to the running sums of ``W`` and ``H``. So the
means average the states :math:`\theta^{(k)}` of the kept :math:`\ell_k`
(the states after iterations ``n_burnin .. n_samples - 1``); the final state,
returned in ``W`` and ``H``, is not part of the means.

**Dense and sparse data.** One chain kernel serves both. On dense data a
block's ``V`` comes from one BLAS product. On sparse data only the block's
non-zeros enter the :math:`x \log V` and :math:`X/V` terms, and :math:`\sum V`
and its gradient come from factor sums (section 4, exact), at
:math:`O(\mathrm{nnz}\,R + (I+J)R)` per iteration. Entries with :math:`x = 0`
contribute :math:`-V` only (so :math:`0 \log 0` is never formed) either way.
"""

import time
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import numba
from numba import njit, prange

from .._config import FASTMATH, MAX_CAPPED_FRACTION, PARALLEL_MIN_PART, PSGLD_ALPHA, PSGLD_SIGMA, STEP_DECAY
# The update rule, schedule, checks and status codes shared with the PARAFAC kernel.
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
from ._rng import seed_streams, uniform_index
from .nmf_data import NMFData, block_bounds, group_by_blocks

__all__ = [
    "NMFChainResult",
    "NMFData",
    "block_bounds",
    "compile_nmf_kernels",
    "group_by_blocks",
    "run_nmf_chain",
    "score_nmf_prior",
]


# --------------------------------------------------------------------------
# Kernels (private; inputs validated and normalised by run_nmf_chain)
# --------------------------------------------------------------------------


@njit(cache=True, fastmath=FASTMATH)
def _part_sizes(row_bounds, col_bounds):
    """Number of entries ``N_s`` of every part ``p``."""
    n_blocks = row_bounds.shape[0] - 1
    sizes = np.zeros(n_blocks, dtype=np.int64)
    for p in range(n_blocks):
        for b in range(n_blocks):
            c = (b + p) % n_blocks
            sizes[p] += (row_bounds[b + 1] - row_bounds[b]) * (col_bounds[c + 1] - col_bounds[c])
    return sizes


@njit(cache=True, fastmath=FASTMATH)
def _block_dense(X, W, Ht, V, gW, gHt, i0, i1, j0, j1, keep):
    """Likelihood gradients of one dense block into ``gW``, ``gHt``; its log-likelihood.

    ``V`` (ni, nj), ``gW`` (ni, R) and ``gHt`` (nj, R) are the block's
    C-contiguous work buffers. The log-likelihood (without the lgamma term) is
    only computed when ``keep``; otherwise 0 is returned.
    """
    Wb = W[i0:i1]
    Htb = Ht[j0:j1]
    np.dot(Wb, Htb.T, V)
    ll = 0.0
    for i in range(i0, i1):
        for j in range(j0, j1):
            x = X[i, j]
            v = V[i - i0, j - j0]
            if x != 0.0:
                if keep:
                    ll += x * np.log(v) - v
                # v == 0 (an underflowed product): an infinite gradient, reported as a divergence
                V[i - i0, j - j0] = (x / v if v > 0.0 else np.inf) - 1.0
            else:
                if keep:
                    ll -= v
                V[i - i0, j - j0] = -1.0
    # V now holds E = X / V - 1.
    np.dot(V, Htb, gW)
    np.dot(V.T, Wb, gHt)
    return ll


@njit(cache=True, fastmath=FASTMATH)
def _block_sparse(rows, cols, vals, start, stop, W, Ht, gW, gHt, sW, sH, i0, i1, j0, j1, keep):
    """Sparse counterpart of :func:`_block_dense` over non-zeros ``start:stop``.

    ``sW``, ``sH`` (R,) receive the factor sums that give ``sum V`` and its
    gradient.
    """
    R = W.shape[1]
    for r in range(R):
        sW[r] = 0.0
        sH[r] = 0.0
    for i in range(i0, i1):
        for r in range(R):
            sW[r] += W[i, r]
            gW[i - i0, r] = 0.0
    for j in range(j0, j1):
        for r in range(R):
            sH[r] += Ht[j, r]
            gHt[j - j0, r] = 0.0
    ll = 0.0
    for e in range(start, stop):
        i = rows[e]
        j = cols[e]
        x = vals[e]
        v = 0.0
        for r in range(R):
            v += W[i, r] * Ht[j, r]
        if keep:
            ll += x * np.log(v)
        ratio = x / v if v > 0.0 else np.inf
        for r in range(R):
            gW[i - i0, r] += ratio * Ht[j, r]
            gHt[j - j0, r] += ratio * W[i, r]
    if keep:
        for r in range(R):
            ll -= sW[r] * sH[r]
    for ii in range(i1 - i0):
        for r in range(R):
            gW[ii, r] -= sH[r]
    for jj in range(j1 - j0):
        for r in range(R):
            gHt[jj, r] -= sW[r]
    return ll


# Inlined into the chains: as a call it cost 2-3 % of a rank-10 iteration.
@njit(cache=True, fastmath=FASTMATH, inline="always")
def _update_block(W, vW, W_sum, gW, Ht, vHt, Ht_sum, gHt, noise, bits, state, i0, i1, j0, j1, keep,
                  eps, lik_scale, mean_scale, lam_w, lam_h, mode, init_v, adapt_v, alpha, sigma):
    """One NMF block's step: rows ``i0:i1`` of ``W``, then rows ``j0:j1`` of ``Ht``, on one stream.

    Returns ``(ok, n_capped)`` over both factors (see :func:`_update_rows`).
    """
    ok_w, capped_w = _update_rows(W, vW, W_sum, gW, noise, bits, state, i0, i1, keep, eps,
                                  lik_scale, mean_scale, lam_w, mode, init_v, adapt_v, alpha, sigma)
    ok_h, capped_h = _update_rows(Ht, vHt, Ht_sum, gHt, noise, bits, state, j0, j1, keep, eps,
                                  lik_scale, mean_scale, lam_h, mode, init_v, adapt_v, alpha, sigma)
    return ok_w & ok_h, capped_w + capped_h


@njit(cache=True, parallel=True, fastmath=FASTMATH)
def _nmf_chain(X, rows, cols, vals, block_ptr, sparse, block_lgamma, row_bounds, col_bounds,
               W, Ht, vW, vHt, streams, temperature, n_samples, n_burnin, step_a, step_b, mode,
               alpha, sigma, freeze, lam_w, lam_h, log_lik, W_sum, Ht_sum):
    """Whole chain, dense (``X``) or sparse (``rows, cols, vals, block_ptr``); returns
    ``(status, iteration, n_evaluations, n_capped)``, ``n_capped`` the drifts capped on kept
    iterations.

    ``Ht`` is ``H`` transposed (J, R), so that a column group of ``H`` is a
    contiguous run of memory, like a row group of ``W``.
    """
    I = W.shape[0]
    J = Ht.shape[0]
    R = W.shape[1]
    B = row_bounds.shape[0] - 1
    mi = _max_size(row_bounds)
    mj = _max_size(col_bounds)
    v_buf = np.empty((B, 0 if sparse else mi * mj))  # the dense blocks' intensities
    gw_buf = np.empty((B, mi * R))
    gh_buf = np.empty((B, mj * R))
    sw_buf = np.empty((B, R))
    sh_buf = np.empty((B, R))
    noise_buf = np.empty((B, max(mi, mj) * R))
    bits_buf = np.empty((B, max(mi, mj) * R), dtype=np.int64)
    ll_blocks = np.zeros(B)
    ok_blocks = np.ones(B, dtype=np.bool_)
    capped_blocks = np.zeros(B, dtype=np.int64)
    capped_total = np.zeros(1, dtype=np.int64)
    part_sizes = _part_sizes(row_bounds, col_bounds)
    n_data = I * J
    n_evals = 0
    for k in range(1, n_samples + 1):
        p = uniform_index(streams[0], B)
        n_s = part_sizes[p]
        scale = n_data / n_s
        eps = _step_size(k, n_burnin, step_a, step_b)
        keep = k > n_burnin
        init_v = k == 1
        adapt_v = not (freeze and keep)
        lik_scale = temperature * scale
        mean_scale = temperature / n_s
        for b in prange(B):
            c = (b + p) % B
            i0 = row_bounds[b]
            i1 = row_bounds[b + 1]
            j0 = col_bounds[c]
            j1 = col_bounds[c + 1]
            ni = i1 - i0
            nj = j1 - j0
            gW = gw_buf[b, : ni * R]
            gHt = gh_buf[b, : nj * R]
            bid = b * B + c
            if sparse:
                ll = _block_sparse(rows, cols, vals, block_ptr[bid], block_ptr[bid + 1], W, Ht,
                                   gW.reshape((ni, R)), gHt.reshape((nj, R)), sw_buf[b], sh_buf[b],
                                   i0, i1, j0, j1, keep)
            else:
                ll = _block_dense(X, W, Ht, v_buf[b, : ni * nj].reshape((ni, nj)),
                                  gW.reshape((ni, R)), gHt.reshape((nj, R)), i0, i1, j0, j1, keep)
            ll_blocks[b] = ll - block_lgamma[bid]
            ok_blocks[b], capped_blocks[b] = _update_block(
                W, vW, W_sum, gW, Ht, vHt, Ht_sum, gHt, noise_buf[b], bits_buf[b], streams[1 + b],
                i0, i1, j0, j1, keep, eps, lik_scale, mean_scale, lam_w, lam_h, mode, init_v,
                adapt_v, alpha, sigma,
            )
        n_evals += n_s
        status = _end_iteration(ok_blocks, capped_blocks, ll_blocks, scale, keep, k - n_burnin - 1,
                                log_lik, capped_total)
        if status != _OK:
            return status, k, n_evals, capped_total[0]
    return _OK, n_samples, n_evals, capped_total[0]


@njit(cache=True, fastmath=FASTMATH)
def _nmf_prior_scores(X, rows, cols, vals, block_ptr, sparse, block_lgamma, row_bounds, col_bounds,
                      W, Ht, streams, lam_w, lam_h, log_lik, W_sum, Ht_sum):
    """Score exact prior draws of ``(W, H)``, each on one random part.

    Stream 1 draws ``W`` then ``H`` (row-major; ``H`` is held transposed in
    ``Ht``) for every draw, stream 0 the parts. ``W`` and ``Ht`` end as the
    last draw. Returns ``n_evaluations``.
    """
    R = W.shape[1]
    I, J = W.shape[0], Ht.shape[0]
    B = row_bounds.shape[0] - 1
    mi = _max_size(row_bounds)
    mj = _max_size(col_bounds)
    Vb = np.empty(mi * mj)
    gW = np.empty(mi * R)
    gHt = np.empty(mj * R)
    sW = np.empty(R)
    sH = np.empty(R)
    part_sizes = _part_sizes(row_bounds, col_bounds)
    n_evals = 0
    for k in range(log_lik.shape[0]):
        _exponential_fill(streams[1], W, lam_w)
        _exponential_fill(streams[1], Ht.T, lam_h)  # H's row-major order
        W_sum += W
        Ht_sum += Ht
        p = uniform_index(streams[0], B)
        total = 0.0
        for b in range(B):
            c = (b + p) % B
            i0, i1 = row_bounds[b], row_bounds[b + 1]
            j0, j1 = col_bounds[c], col_bounds[c + 1]
            ni, nj = i1 - i0, j1 - j0
            bid = b * B + c
            if sparse:
                ll = _block_sparse(rows, cols, vals, block_ptr[bid], block_ptr[bid + 1], W, Ht,
                                   gW[: ni * R].reshape((ni, R)), gHt[: nj * R].reshape((nj, R)),
                                   sW, sH, i0, i1, j0, j1, True)
            else:
                ll = _block_dense(X, W, Ht, Vb[: ni * nj].reshape((ni, nj)), gW[: ni * R].reshape((ni, R)),
                                  gHt[: nj * R].reshape((nj, R)), i0, i1, j0, j1, True)
            total += ll - block_lgamma[bid]
        log_lik[k] = total * (I * J / part_sizes[p])
        n_evals += part_sizes[p]
    return n_evals


_nmf_chain_serial = _serial_twin(_nmf_chain)


# --------------------------------------------------------------------------
# Public wrapper
# --------------------------------------------------------------------------


class NMFChainResult(NamedTuple):
    """What one NMF chain at one temperature returns."""

    #: Kept estimates ``(N / N_s) * sum_{part} log p(x_ij | W, H)``, one per kept iteration.
    log_likelihood: np.ndarray
    #: Mean of ``W`` over the kept (pre-update) states, shape ``(I, R)``.
    W_mean: np.ndarray
    #: Mean of ``H`` over the kept (pre-update) states, shape ``(R, J)``.
    H_mean: np.ndarray
    #: Step size in force for the kept samples.
    step_size: float
    #: Entries of the drawn parts summed over all iterations (burn-in included);
    #: for sparse data too, although the kernel then touches only the non-zeros.
    n_likelihood_evaluations: int
    #: Fraction of the entry updates after burn-in whose drift the cap cut
    #: (``LANGEVIN_MAX_DRIFT``; 0 for exact draws).
    capped_fraction: float = 0.0


def _data_arrays(data):
    """The kernels' data arguments: ``X, rows, cols, vals, block_ptr, sparse, block_lgamma,
    row_bounds, col_bounds`` (empty arrays stand for the form the data is not in)."""
    empty_i = np.empty(0, dtype=np.int64)
    if data.is_sparse:
        X, rows, cols, vals, ptr = np.empty((0, 0)), data.rows, data.cols, data.vals, data.block_ptr
    else:
        X, rows, cols, vals, ptr = data.X, empty_i, empty_i, np.empty(0), empty_i
    return (X, rows, cols, vals, ptr, data.is_sparse, data.block_lgamma, data.row_bounds,
            data.col_bounds)


def run_nmf_chain(data, W, H, *, temperature, n_samples, n_burnin, step_a, step_b=STEP_DECAY,
                  sampler, alpha=PSGLD_ALPHA, sigma=PSGLD_SIGMA, freeze=True, lam_w, lam_h,
                  seed_seq, max_capped_fraction=MAX_CAPPED_FRACTION):
    r"""Run one block-parallel SG-MCMC chain for Poisson NMF at one temperature.

    See the module docstring for the blocks, parts, random streams and what is
    recorded. ``W`` and ``H`` are the warm start and receive the chain's final
    state; if the chain diverges they are left unchanged.

    Parameters
    ----------
    data : NMFData
        The prepared matrix ``X`` (I, J) with its blocks.
    W : ndarray of shape (I, R)
        Non-negative float array, updated in place.
    H : ndarray of shape (R, J)
        Non-negative float array, updated in place.
    temperature : float
        Inverse temperature :math:`t \ge 0`.
    n_samples, n_burnin : int
        Iterations in all, and those discarded; ``0 <= n_burnin < n_samples``.
    step_a, step_b : float
        Step sizes :math:`\epsilon_k = (a / \min(k, K_b))^b` (``a`` if ``b == 0``),
        as :class:`~skevidence.samplers.StepSizeSchedule`.
    sampler : {"sgld", "psgld", "logsgld"}
        Update rule. ``"logsgld"`` is SGLD on :math:`\log W, \log H` (target
        :math:`p_t(\theta)\prod\theta`, the Jacobian included) preconditioned
        by the fixed, data-given :math:`1/(1 + t\,x_{i\cdot})` for row ``i`` of
        ``W`` and :math:`1/(1 + t\,x_{\cdot j})` for column ``j`` of ``H``: the
        inverse log-space curvature of the rank-1 Gamma conditionals, so that
        one step size (about 0.01) suits every entry at every temperature.
        The preconditioner does not depend on the state, so no correction
        term is needed; ``W`` and ``H`` must be strictly positive.
    alpha, sigma : float
        pSGLD decay and floor (ignored by SGLD).
    freeze : bool, default=True
        pSGLD: stop adapting the preconditioner after burn-in (``adapt="burnin"``
        of :class:`~skevidence.samplers.PSGLD`). On the first iteration the
        preconditioner is set to :math:`\bar g^2`, whatever ``freeze``.
    lam_w, lam_h : float
        Rates of the exponential priors on ``W`` and ``H``.
    seed_seq : numpy.random.SeedSequence
        Seeds the ``B + 1`` random streams of this chain.
    max_capped_fraction : float, default=MAX_CAPPED_FRACTION
        Largest fraction of the entry updates after burn-in whose drift the
        cap (``LANGEVIN_MAX_DRIFT`` noise standard deviations) may cut before
        the chain counts as diverged; ``1.0`` never raises.

    Returns
    -------
    NMFChainResult

    Raises
    ------
    SamplerDivergenceError
        If a gradient, the state or a kept log-likelihood stops being finite,
        or if the drift cap cut more than ``max_capped_fraction`` of the
        updates after burn-in (the steps are too long).
    """
    if not isinstance(data, NMFData):
        raise TypeError(
            f"data must be an NMFData (see NMFData.from_array), got {type(data).__name__}."
        )
    I, J = data.shape
    if not isinstance(W, np.ndarray) or W.ndim != 2:
        raise ValueError("W must be a 2-D numpy array of shape (I, R).")
    R = W.shape[1]
    if R < 1:
        raise ValueError("The rank R (columns of W) must be at least 1.")
    _check_factor("W", W, (I, R))
    _check_factor("H", H, (R, J))
    temperature, n_samples, n_burnin, step_a, step_b, alpha, sigma = _check_chain_settings(
        temperature, n_samples, n_burnin, step_a, step_b, sampler, alpha, sigma
    )
    lam_w = _check_number("lam_w", lam_w, 0.0, low_open=True)
    lam_h = _check_number("lam_h", lam_h, 0.0, low_open=True)

    n_kept = n_samples - n_burnin
    Wk = np.array(W, dtype=np.float64, order="C", copy=True)
    Htk = np.array(H.T, dtype=np.float64, order="C", copy=True)  # the kernels hold H transposed
    vW = np.zeros_like(Wk)
    vHt = np.zeros_like(Htk)
    streams = seed_streams(seed_seq, data.n_blocks + 1)
    log_lik = np.empty(n_kept)
    W_sum = np.zeros_like(Wk)
    Ht_sum = np.zeros_like(Htk)
    mode = _sampler_mode(sampler, (Wk, Htk), (vW, vHt), (data.row_sums, data.col_sums), temperature,
                         "W and H")
    settings = (temperature, n_samples, n_burnin, step_a, step_b, mode, alpha,
                sigma, bool(freeze), lam_w, lam_h, log_lik, W_sum, Ht_sum)
    # The parallel runtime forks and joins every iteration: worth it only for
    # parts with enough entries (and fragile when other processes load the
    # cores). The parallel kernel and its serial twin give bitwise the same numbers.
    parallel = numba.get_num_threads() > 1 and I * J // data.n_blocks >= PARALLEL_MIN_PART
    kernel = _nmf_chain if parallel else _nmf_chain_serial
    status, k, n_evals, n_capped = kernel(*_data_arrays(data), Wk, Htk, vW, vHt, streams, *settings)
    capped_fraction = _check_chain_outcome(
        status, k, n_capped, Wk.size + Htk.size, sampler=sampler, temperature=temperature,
        n_samples=n_samples, n_burnin=n_burnin, step_a=step_a, step_b=step_b,
        max_capped_fraction=max_capped_fraction,
    )
    W[...] = Wk
    H[...] = Htk.T
    return NMFChainResult(
        log_likelihood=log_lik,
        W_mean=W_sum / n_kept,
        H_mean=np.ascontiguousarray(Ht_sum.T) / n_kept,
        step_size=float(_step_size(n_samples, n_burnin, step_a, step_b)),
        n_likelihood_evaluations=int(n_evals),
        capped_fraction=capped_fraction,
    )



def score_nmf_prior(data, n_components, n_draws, *, lam_w, lam_h, seed_seq):
    r"""Exact prior draws of ``(W, H)``, each scored on one random part, in one call.

    The :math:`t = 0` rung of STI: ``W`` and ``H`` are drawn exactly from
    their exponential priors and scored like a chain's kept iterations,
    :math:`(N/N_s)\sum_{\text{part}} \log p(x_{ij} | W, H)` on a uniformly drawn
    part, with no Python per draw.

    Parameters
    ----------
    data : NMFData
        The blocked matrix.
    n_components : int
        Rank :math:`R`.
    n_draws : int
        Number of prior draws.
    lam_w, lam_h : float
        Rates of the exponential priors.
    seed_seq : numpy.random.SeedSequence
        Seeds the two streams (draws, parts).

    Returns
    -------
    result : NMFChainResult
        The scores, the means of the draws, ``step_size`` NaN, and the
        number of entries scored.
    W, H : ndarray
        The last draw, the warm start of the next temperature.
    """
    if not isinstance(data, NMFData):
        raise TypeError(f"data must be an NMFData (see NMFData.from_array), got {type(data).__name__}.")
    I, J = data.shape
    R = int(n_components)
    W = np.empty((I, R))
    Ht = np.empty((J, R))
    W_sum, Ht_sum = np.zeros_like(W), np.zeros_like(Ht)
    log_lik = np.empty(int(n_draws))
    n_evals = _nmf_prior_scores(
        *_data_arrays(data), W, Ht, seed_streams(seed_seq, 2), float(lam_w), float(lam_h), log_lik, W_sum, Ht_sum,
    )
    if not np.all(np.isfinite(log_lik)):
        raise ValueError("The log-likelihood is not finite at some prior draws; check that X is valid.")
    H_mean = np.ascontiguousarray(Ht_sum.T) / n_draws
    result = NMFChainResult(log_lik, W_sum / n_draws, H_mean, np.nan, int(n_evals))
    return result, W, np.ascontiguousarray(Ht.T)

def compile_nmf_kernels():
    """Compile (or load from numba's cache) the NMF kernels on a 4 x 4 input.

    Returns
    -------
    seconds : float
        Wall time spent, i.e. the compilation or cache-loading cost.
    """
    start = time.perf_counter()
    X = np.array([[1.0, 0.0, 2.0, 0.0], [0.0, 3.0, 0.0, 1.0],
                  [2.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 4.0]])
    previous = numba.get_num_threads()
    try:
        for threads in {1, previous}:  # the serial and the parallel kernels
            numba.set_num_threads(threads)
            for sparse in (False, True):
                data = NMFData.from_array(sp.csr_array(X) if sparse else X, 2, sparse=sparse)
                W = np.ones((4, 1))
                H = np.ones((1, 4))
                run_nmf_chain(data, W, H, temperature=1.0, n_samples=2, n_burnin=1, step_a=1e-3,
                              step_b=0.0, sampler="psgld", lam_w=1.0, lam_h=1.0,
                              seed_seq=np.random.SeedSequence(0), max_capped_fraction=1.0)
                score_nmf_prior(data, 1, 2, lam_w=1.0, lam_h=1.0, seed_seq=np.random.SeedSequence(0))
    finally:
        numba.set_num_threads(previous)
    return time.perf_counter() - start
