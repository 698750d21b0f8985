r"""Fused block-parallel SG-MCMC chains for Poisson PARAFAC (ALGORITHMS.md section 4).

One call of :func:`run_parafac_chain` runs a whole SGLD, pSGLD or log-space
SGLD chain at one inverse temperature :math:`t` for the model of seed 001,
eq. 11,

.. math::
    x_{ijk} \sim \mathrm{Poisson}(V_{ijk}),\quad V_{ijk} = \sum_r a_{ir} b_{jr} c_{kr},\quad
    a_{ir} \sim \mathrm{Exp}(\lambda_a),\ b_{jr} \sim \mathrm{Exp}(\lambda_b),\
    c_{kr} \sim \mathrm{Exp}(\lambda_c),

with no Python per iteration. It is the three-mode counterpart of
:mod:`skevidence.kernels.nmf`; both take their update rule and helpers from
:mod:`skevidence.kernels._langevin`.

**Blocks and parts** (seed 001 section III, seed 003 section III). Each mode
is cut into ``B`` contiguous groups (``bounds``, from
:class:`~skevidence.kernels.parafac_data.PARAFACData`). Part ``(p, q)`` is the
``B`` blocks :math:`(I_b, J_{(b+p) \bmod B}, K_{(b+q) \bmod B})`,
``b = 0..B-1``: mutually disjoint in every mode, so block ``b`` reads and writes
only ``A[I_b]``, ``B[J_c]``, ``C[K_d]`` (and their pSGLD preconditioners,
partitioned with them) and the ``B`` block updates run in parallel
(``prange`` over ``b``); every entry of the three factors is updated exactly
once per iteration. As in the NMF kernel, parts are **drawn at random**, not
cycled: every iteration draws ``(p, q)`` uniformly among the :math:`B^2`
parts from a master random stream (one index ``p B + q``). The part is the
minibatch, of ``N_s`` entries. The log-likelihood and its gradient on the
part are scaled by :math:`B^2`, the number of parts: every entry lies in
exactly one of the :math:`B^2` equally likely parts, so the estimates are
unbiased whatever the group sizes. For even groups :math:`B^2 = N / N_s`
(``N = I J K``), the papers' scale; for uneven groups (``I = 7, B = 3``)
parts differ in size, and ``N / N_s`` of the drawn part would weight the
entries of small parts up and be biased. pSGLD's mean gradient
:math:`\bar g` divides by the drawn part's ``N_s``.

**Random streams.** Stream 0 (the master) draws the parts; stream ``1 + b``
gives all the noise of the block with mode-1 group ``b``: first ``|I_b| R``
normals for ``A[I_b]``, then ``|J_c| R`` for ``B[J_c]``, then ``|K_d| R`` for
``C[K_d]`` (each row-major). Streams are seeded from the chain's
``SeedSequence`` (:func:`skevidence.kernels._rng.seed_streams`) and each is
advanced by one thread at a time, so results are bitwise identical for any
numba thread count. Per-block log-likelihoods are summed in block order
after the parallel loop.

**What is recorded.** After burn-in (iterations ``k > n_burnin``) the kernel
records :math:`\ell_k = B^2\sum_{\text{part}}\log p(x_{ijk}|A, B, C)` at the
state *before* iteration ``k``'s update, on the part that drives that update,
and adds that same pre-update state to the running sums of the factors; the
final state is returned in place and is not part of the means.

**Dense and sparse data.** The dense kernel visits every entry of a block
once, forming :math:`V`, the log-likelihood and the three gradients
:math:`\nabla_{a_{ir}} = \sum_{jk}(x_{ijk}/V_{ijk} - 1) b_{jr} c_{kr}` (and
likewise) in one pass, :math:`O(|\text{part}|\,R)` per iteration. The sparse
kernel visits only the block's non-zeros for the :math:`x \log V` and
:math:`x / V` terms and gets :math:`\sum V` over the block and its gradient
from the factor sums (exact),

.. math::
    \sum_{(i,j,k) \in I_b \times J_c \times K_d} V_{ijk}
    = \sum_r \Big(\sum_{i \in I_b} a_{ir}\Big)\Big(\sum_{j \in J_c} b_{jr}\Big)
      \Big(\sum_{k \in K_d} c_{kr}\Big),

at :math:`O(\mathrm{nnz}_{\text{part}} R + (I + J + K) R)` per iteration
(:math:`O((I+J+K)R/B)` per block); it never forms the :math:`IJK` values.
Entries with :math:`x = 0` contribute :math:`-V` only in both kernels.
"""

import numbers
import time
from typing import NamedTuple

import numba
import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from .._config import (
    FASTMATH,
    MAX_CAPPED_FRACTION,
    PARALLEL_MIN_PART,
    PSGLD_ALPHA,
    PSGLD_SIGMA,
    STEP_DECAY,
)
from ._rng import seed_streams, uniform_index
# The update rule, schedule, checks and status codes shared with the NMF kernel.
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
from .parafac_data import PARAFACData

__all__ = [
    "PARAFACChainResult",
    "PARAFACData",
    "compile_parafac_kernels",
    "run_parafac_chain",
    "score_parafac_prior",
]


# --------------------------------------------------------------------------
# Kernels (private; inputs validated and normalised by run_parafac_chain)
# --------------------------------------------------------------------------


@njit(cache=True, fastmath=FASTMATH)
def _part_sizes(ib, jb, kb):
    """Number of entries ``N_s`` of every part ``p * B + q``."""
    nb = ib.shape[0] - 1
    sizes = np.zeros(nb * nb, dtype=np.int64)
    for p in range(nb):
        for q in range(nb):
            for b in range(nb):
                c = (b + p) % nb
                d = (b + q) % nb
                sizes[p * nb + q] += (ib[b + 1] - ib[b]) * (jb[c + 1] - jb[c]) * (kb[d + 1] - kb[d])
    return sizes


@njit(cache=True, fastmath=FASTMATH)
def _zero(A):
    for a in range(A.shape[0]):
        for r in range(A.shape[1]):
            A[a, r] = 0.0


@njit(cache=True, fastmath=FASTMATH)
def _block_dense(X, A, Bf, C, gA, gB, gC, ab, i0, i1, j0, j1, k0, k1, keep):
    """Likelihood gradients of one dense block into ``gA``, ``gB``, ``gC``; its log-likelihood.

    ``gA`` (ni, R), ``gB`` (nj, R), ``gC`` (nk, R) and ``ab`` (R,) are the
    block's work buffers. The log-likelihood (without the lgamma term) is
    only computed when ``keep``; otherwise 0 is returned.
    """
    R = A.shape[1]
    _zero(gA)
    _zero(gB)
    _zero(gC)
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
                if x != 0.0:
                    if keep:
                        ll += x * np.log(v) - v
                    # v == 0 (an underflowed product): an infinite gradient, reported as a
                    # divergence
                    e = (x / v if v > 0.0 else np.inf) - 1.0
                else:
                    if keep:
                        ll -= v
                    e = -1.0
                for r in range(R):
                    ckr = C[k, r]
                    gA[i - i0, r] += e * Bf[j, r] * ckr
                    gB[j - j0, r] += e * A[i, r] * ckr
                    gC[k - k0, r] += e * ab[r]
    return ll


@njit(cache=True, fastmath=FASTMATH)
def _block_sparse(ii, jj, kk, vals, start, stop, A, Bf, C, gA, gB, gC, sA, sB, sC,
                  i0, i1, j0, j1, k0, k1, keep):
    """Sparse counterpart of :func:`_block_dense` over non-zeros ``start:stop``.

    ``sA``, ``sB``, ``sC`` (R,) receive the factor sums over the block's
    groups, which give :math:`\\sum V` and its gradient in closed form.
    """
    R = A.shape[1]
    _zero(gA)
    _zero(gB)
    _zero(gC)
    for r in range(R):
        sA[r] = 0.0
        sB[r] = 0.0
        sC[r] = 0.0
    for i in range(i0, i1):
        for r in range(R):
            sA[r] += A[i, r]
    for j in range(j0, j1):
        for r in range(R):
            sB[r] += Bf[j, r]
    for k in range(k0, k1):
        for r in range(R):
            sC[r] += C[k, r]
    ll = 0.0
    for e in range(start, stop):
        i = ii[e]
        j = jj[e]
        k = kk[e]
        x = vals[e]
        v = 0.0
        for r in range(R):
            v += A[i, r] * Bf[j, r] * C[k, r]
        if keep:
            ll += x * np.log(v)
        ratio = x / v if v > 0.0 else np.inf
        for r in range(R):
            gA[i - i0, r] += ratio * Bf[j, r] * C[k, r]
            gB[j - j0, r] += ratio * A[i, r] * C[k, r]
            gC[k - k0, r] += ratio * A[i, r] * Bf[j, r]
    for r in range(R):
        if keep:
            ll -= sA[r] * sB[r] * sC[r]
        bc = sB[r] * sC[r]
        ac = sA[r] * sC[r]
        abr = sA[r] * sB[r]
        for a in range(i1 - i0):
            gA[a, r] -= bc
        for a in range(j1 - j0):
            gB[a, r] -= ac
        for a in range(k1 - k0):
            gC[a, r] -= abr
    return ll


@njit(cache=True, parallel=True, fastmath=FASTMATH)
def _parafac_chain(X, ii, jj, kk, vals, block_ptr, sparse, block_lgamma, ib, jb, kb,
                   A, Bf, C, vA, vB, vC, streams, temperature, n_samples, n_burnin, step_a, step_b,
                   mode, alpha, sigma, freeze, lam_a, lam_b, lam_c, log_lik, A_sum, B_sum, C_sum):
    """Whole chain, dense (``X``) or sparse (``ii, jj, kk, vals, block_ptr``); returns
    ``(status, iteration, n_evaluations, n_capped)``, ``n_capped`` the drifts capped on kept
    iterations."""
    R = A.shape[1]
    nb = ib.shape[0] - 1
    mi = _max_size(ib)
    mj = _max_size(jb)
    mk = _max_size(kb)
    ga_buf = np.empty((nb, mi * R))
    gb_buf = np.empty((nb, mj * R))
    gc_buf = np.empty((nb, mk * R))
    sum_buf = np.empty((nb, 3 * R))
    noise_buf = np.empty((nb, max(mi, mj, mk) * R))
    bits_buf = np.empty((nb, max(mi, mj, mk) * R), dtype=np.int64)
    ll_blocks = np.zeros(nb)
    ok_blocks = np.ones(nb, dtype=np.bool_)
    capped_blocks = np.zeros(nb, dtype=np.int64)
    capped_total = np.zeros(1, dtype=np.int64)
    part_sizes = _part_sizes(ib, jb, kb)
    n_parts = float(nb * nb)
    n_evals = 0
    for it in range(1, n_samples + 1):
        part = uniform_index(streams[0], nb * nb)
        p = part // nb
        q = part % nb
        n_s = part_sizes[part]
        scale = n_parts  # unbiased for uneven parts; N / N_s for even ones
        eps = _step_size(it, n_burnin, step_a, step_b)
        keep = it > n_burnin
        init_v = it == 1
        adapt_v = not (freeze and keep)
        lik_scale = temperature * scale
        mean_scale = temperature / n_s
        for b in prange(nb):
            c = (b + p) % nb
            d = (b + q) % nb
            i0 = ib[b]
            i1 = ib[b + 1]
            j0 = jb[c]
            j1 = jb[c + 1]
            k0 = kb[d]
            k1 = kb[d + 1]
            gA = ga_buf[b, : (i1 - i0) * R].reshape((i1 - i0, R))
            gB = gb_buf[b, : (j1 - j0) * R].reshape((j1 - j0, R))
            gC = gc_buf[b, : (k1 - k0) * R].reshape((k1 - k0, R))
            work = sum_buf[b]
            bid = (b * nb + c) * nb + d
            if sparse:
                ll = _block_sparse(ii, jj, kk, vals, block_ptr[bid], block_ptr[bid + 1], A, Bf, C,
                                   gA, gB, gC, work[:R], work[R : 2 * R], work[2 * R :],
                                   i0, i1, j0, j1, k0, k1, keep)
            else:
                ll = _block_dense(X, A, Bf, C, gA, gB, gC, work[:R], i0, i1, j0, j1, k0, k1, keep)
            ll_blocks[b] = ll - block_lgamma[bid]
            noise, bits, state = noise_buf[b], bits_buf[b], streams[1 + b]
            ok_a, capped_a = _update_rows(A, vA, A_sum, gA.reshape(-1), noise, bits, state, i0, i1,
                                          keep, eps, lik_scale, mean_scale, lam_a, mode, init_v,
                                          adapt_v, alpha, sigma)
            ok_b, capped_b = _update_rows(Bf, vB, B_sum, gB.reshape(-1), noise, bits, state, j0, j1,
                                          keep, eps, lik_scale, mean_scale, lam_b, mode, init_v,
                                          adapt_v, alpha, sigma)
            ok_c, capped_c = _update_rows(C, vC, C_sum, gC.reshape(-1), noise, bits, state, k0, k1,
                                          keep, eps, lik_scale, mean_scale, lam_c, mode, init_v,
                                          adapt_v, alpha, sigma)
            ok_blocks[b] = ok_a & ok_b & ok_c
            capped_blocks[b] = capped_a + capped_b + capped_c
        n_evals += n_s
        status = _end_iteration(ok_blocks, capped_blocks, ll_blocks, scale, keep, it - n_burnin - 1,
                                log_lik, capped_total)
        if status != _OK:
            return status, it, n_evals, capped_total[0]
    return _OK, n_samples, n_evals, capped_total[0]


@njit(cache=True, fastmath=FASTMATH)
def _parafac_prior_scores(X, ii, jj, kk, vals, block_ptr, sparse, block_lgamma, ib, jb, kb,
                          A, Bf, C, streams, lam_a, lam_b, lam_c, log_lik, A_sum, B_sum, C_sum):
    """Score exact prior draws of ``(A, B, C)``, each on one random part.

    Stream 1 draws ``A``, then ``B``, then ``C`` (row-major) for every draw,
    stream 0 the parts. The factors end as the last draw. Returns
    ``n_evaluations``.
    """
    R = A.shape[1]
    nb = ib.shape[0] - 1
    gA = np.empty((_max_size(ib), R))
    gB = np.empty((_max_size(jb), R))
    gC = np.empty((_max_size(kb), R))
    work = np.empty(3 * R)
    part_sizes = _part_sizes(ib, jb, kb)
    n_evals = 0
    for n in range(log_lik.shape[0]):
        _exponential_fill(streams[1], A, lam_a)
        _exponential_fill(streams[1], Bf, lam_b)
        _exponential_fill(streams[1], C, lam_c)
        A_sum += A
        B_sum += Bf
        C_sum += C
        part = uniform_index(streams[0], nb * nb)
        p = part // nb
        q = part % nb
        total = 0.0
        for b in range(nb):
            c = (b + p) % nb
            d = (b + q) % nb
            i0, i1 = ib[b], ib[b + 1]
            j0, j1 = jb[c], jb[c + 1]
            k0, k1 = kb[d], kb[d + 1]
            bid = (b * nb + c) * nb + d
            a_ = gA[: i1 - i0]
            b_ = gB[: j1 - j0]
            c_ = gC[: k1 - k0]
            if sparse:
                ll = _block_sparse(ii, jj, kk, vals, block_ptr[bid], block_ptr[bid + 1], A, Bf, C,
                                   a_, b_, c_, work[:R], work[R : 2 * R], work[2 * R :],
                                   i0, i1, j0, j1, k0, k1, True)
            else:
                ll = _block_dense(X, A, Bf, C, a_, b_, c_, work[:R], i0, i1, j0, j1, k0, k1, True)
            total += ll - block_lgamma[bid]
        log_lik[n] = total * (nb * nb)
        n_evals += part_sizes[part]
    return n_evals


_parafac_chain_serial = _serial_twin(_parafac_chain)


# --------------------------------------------------------------------------
# Public wrappers
# --------------------------------------------------------------------------


class PARAFACChainResult(NamedTuple):
    """What one PARAFAC chain at one temperature returns."""

    #: Kept estimates ``B**2 * sum_{part} log p(x_ijk | A, B, C)``, one per kept iteration.
    log_likelihood: np.ndarray
    #: Means of ``A``, ``B``, ``C`` over the kept (pre-update) states, shapes (I, R), (J, R),
    #: (K, R).
    factor_means: tuple
    #: Step size in force for the kept samples (NaN for exact prior draws).
    step_size: float
    #: Entries of the drawn parts summed over all iterations (burn-in included);
    #: for sparse data too, although the kernel then touches only the non-zeros.
    n_likelihood_evaluations: int
    #: Fraction of the entry updates after burn-in whose drift the cap cut
    #: (``LANGEVIN_MAX_DRIFT``; 0 for exact prior draws).
    capped_fraction: float = 0.0


def _data_arrays(data):
    """The kernels' data arguments: the dense tensor or the grouped non-zeros, and placeholders."""
    empty_i, empty_f = np.empty(0, dtype=np.int64), np.empty(0)
    if data.is_sparse:
        X = np.empty((0, 0, 0))
        sparse_args = (data.ii, data.jj, data.kk, data.vals, data.block_ptr)
    else:
        X = data.X
        sparse_args = (empty_i, empty_i, empty_i, empty_f, empty_i)
    ib, jb, kb = data.bounds
    return (X, *sparse_args, data.is_sparse, data.block_lgamma, ib, jb, kb)


def _check_data(data):
    if not isinstance(data, PARAFACData):
        raise TypeError(
            f"data must be a PARAFACData (see PARAFACData.from_array), got {type(data).__name__}."
        )


def _check_rates(prior_rates):
    rates = tuple(prior_rates) if not isinstance(prior_rates, numbers.Real) else (prior_rates,) * 3
    if len(rates) != 3:
        raise ValueError(f"prior_rates must be 3 rates (one per mode), got {prior_rates!r}.")
    return tuple(
        _check_number(f"prior_rates[{m}]", r, 0.0, low_open=True) for m, r in enumerate(rates)
    )


def run_parafac_chain(data, factors, *, temperature, n_samples, n_burnin, step_a, step_b=STEP_DECAY,
                      sampler, alpha=PSGLD_ALPHA, sigma=PSGLD_SIGMA, freeze=True, prior_rates,
                      seed_seq, max_capped_fraction=MAX_CAPPED_FRACTION):
    r"""Run one block-parallel SG-MCMC chain for Poisson PARAFAC at one temperature.

    See the module docstring for the blocks, the parts (drawn at random),
    the random streams and what is recorded. The three factors are the warm
    start and receive the chain's final state; if the chain diverges they are
    left unchanged.

    Parameters
    ----------
    data : PARAFACData
        The prepared tensor ``X`` (I, J, K) with its blocks.
    factors : sequence of 3 ndarrays of shapes (I, R), (J, R), (K, R)
        ``(A, B, C)``: non-negative float arrays, updated in place.
    temperature : float
        Inverse temperature :math:`t \ge 0`.
    n_samples, n_burnin : int
        Iterations in all, and those discarded; ``0 <= n_burnin < n_samples``.
    step_a, step_b : float
        Step sizes :math:`\epsilon_k = (a / \min(k, K_b))^b` (``a`` if ``b == 0``),
        as :class:`~skevidence.samplers.StepSizeSchedule`.
    sampler : {"sgld", "psgld", "logsgld"}
        Update rule. SGLD and pSGLD (seed 001 eq. 8-9, the preconditioner
        ``v`` partitioned and updated with its factor blocks, with the
        block's part-mean gradient :math:`\bar g = (t/N_s)\sum_{\Lambda_b}\nabla`)
        mirror at zero. ``"logsgld"`` is SGLD on :math:`\log A, \log B, \log C`
        (the Jacobian included) preconditioned by the fixed, data-given
        :math:`1/(1 + t\,x_{i\cdot\cdot})` for row ``i`` of ``A``, and
        likewise :math:`1/(1 + t\,x_{\cdot j\cdot})`, :math:`1/(1 + t\,x_{\cdot\cdot k})`
        for ``B`` and ``C``: the inverse log-space curvature of the rank-1
        Gamma conditionals (see :func:`skevidence.kernels.nmf.run_nmf_chain`).
        It needs strictly positive factors.
    alpha, sigma : float
        pSGLD decay and floor (ignored by the other samplers).
    freeze : bool, default=True
        pSGLD: stop adapting the preconditioner after burn-in. On the first
        iteration it is set to :math:`\bar g^2`, whatever ``freeze``.
    prior_rates : float or sequence of 3 floats
        Rates :math:`\lambda_a, \lambda_b, \lambda_c` of the exponential priors.
    seed_seq : numpy.random.SeedSequence
        Seeds the ``B + 1`` random streams of this chain.
    max_capped_fraction : float, default=MAX_CAPPED_FRACTION
        Largest fraction of the entry updates after burn-in whose drift the
        cap (``LANGEVIN_MAX_DRIFT`` noise standard deviations) may cut before
        the chain counts as diverged; ``1.0`` never raises.

    Returns
    -------
    PARAFACChainResult

    Raises
    ------
    SamplerDivergenceError
        If a gradient, the state or a kept log-likelihood stops being finite,
        or if the drift cap cut more than ``max_capped_fraction`` of the
        updates after burn-in (the steps are too long).
    """
    _check_data(data)
    factors = list(factors) if isinstance(factors, (list, tuple)) else None
    if factors is None or len(factors) != 3:
        raise ValueError("factors must be a sequence of 3 arrays (A, B, C).")
    A = factors[0]
    if not isinstance(A, np.ndarray) or A.ndim != 2:
        raise ValueError("A (factors[0]) must be a 2-D numpy array of shape (I, R).")
    R = A.shape[1]
    if R < 1:
        raise ValueError("The rank R (columns of A) must be at least 1.")
    for name, F, n in zip("ABC", factors, data.shape):
        _check_factor(name, F, (n, R))
    temperature, n_samples, n_burnin, step_a, step_b, alpha, sigma = _check_chain_settings(
        temperature, n_samples, n_burnin, step_a, step_b, sampler, alpha, sigma
    )
    lam_a, lam_b, lam_c = _check_rates(prior_rates)

    n_kept = n_samples - n_burnin
    work = [np.array(F, dtype=np.float64, order="C", copy=True) for F in factors]
    precond = [np.zeros_like(F) for F in work]
    sums = [np.zeros_like(F) for F in work]
    streams = seed_streams(seed_seq, data.n_blocks + 1)
    log_lik = np.empty(n_kept)
    mode = _sampler_mode(sampler, work, precond, data.mode_sums, temperature, "factors A, B and C")
    # The parallel runtime forks and joins every iteration: worth it only for parts
    # with enough entries. Both kernels give bitwise the same numbers.
    part_size = data.n_data // (data.n_blocks * data.n_blocks)
    parallel = numba.get_num_threads() > 1 and part_size >= PARALLEL_MIN_PART
    kernel = _parafac_chain if parallel else _parafac_chain_serial
    status, k, n_evals, n_capped = kernel(
        *_data_arrays(data), *work, *precond, streams, temperature, n_samples, n_burnin,
        step_a, step_b, mode, alpha, sigma, bool(freeze), lam_a, lam_b, lam_c, log_lik, *sums,
    )
    capped_fraction = _check_chain_outcome(
        status, k, n_capped, sum(F.size for F in work), sampler=sampler, temperature=temperature,
        n_samples=n_samples, n_burnin=n_burnin, step_a=step_a, step_b=step_b,
        max_capped_fraction=max_capped_fraction,
    )
    for F, W in zip(factors, work):
        F[...] = W
    return PARAFACChainResult(
        log_likelihood=log_lik,
        factor_means=tuple(s / n_kept for s in sums),
        step_size=float(_step_size(n_samples, n_burnin, step_a, step_b)),
        n_likelihood_evaluations=int(n_evals),
        capped_fraction=capped_fraction,
    )


def score_parafac_prior(data, n_components, n_draws, *, prior_rates, seed_seq):
    r"""Exact prior draws of ``(A, B, C)``, each scored on one random part, in one call.

    The :math:`t = 0` rung of STI: the factors are drawn exactly from their
    exponential priors and scored like a chain's kept iterations,
    :math:`B^2\sum_{\text{part}} \log p(x_{ijk} | A, B, C)` on a uniformly
    drawn part, with no Python per draw.

    Parameters
    ----------
    data : PARAFACData
        The blocked tensor.
    n_components : int
        Rank :math:`R`.
    n_draws : int
        Number of prior draws.
    prior_rates : float or sequence of 3 floats
        Rates of the exponential priors.
    seed_seq : numpy.random.SeedSequence
        Seeds the two streams (draws, parts).

    Returns
    -------
    result : PARAFACChainResult
        The scores, the means of the draws, ``step_size`` NaN, and the
        number of entries scored.
    factors : tuple of 3 ndarrays
        The last draw, the warm start of the next temperature.
    """
    _check_data(data)
    rates = _check_rates(prior_rates)
    R, n_draws = int(n_components), int(n_draws)
    if R < 1 or n_draws < 1:
        raise ValueError(f"n_components and n_draws must be at least 1, got {R} and {n_draws}.")
    factors = [np.empty((n, R)) for n in data.shape]
    sums = [np.zeros((n, R)) for n in data.shape]
    log_lik = np.empty(n_draws)
    n_evals = _parafac_prior_scores(
        *_data_arrays(data), *factors, seed_streams(seed_seq, 2), *rates, log_lik, *sums
    )
    if not np.all(np.isfinite(log_lik)):
        raise ValueError(
            "The log-likelihood is not finite at some prior draws; check that X is valid."
        )
    result = PARAFACChainResult(log_lik, tuple(s / n_draws for s in sums), np.nan, int(n_evals))
    return result, tuple(factors)


def compile_parafac_kernels():
    """Compile (or load from numba's cache) the PARAFAC kernels on a 3 x 3 x 3 input.

    Like :func:`~skevidence.kernels.nmf.compile_nmf_kernels`, this compiles the
    kernels a small input runs: the serial chain and the prior scoring. The
    parallel chain compiles on its first use on parts of at least
    ``PARALLEL_MIN_PART`` entries.

    Returns
    -------
    seconds : float
        Wall time spent, i.e. the compilation or cache-loading cost.
    """
    start = time.perf_counter()
    X = np.zeros((3, 3, 3))
    X[0, 1, 2], X[1, 1, 0], X[2, 0, 1] = 1.0, 2.0, 3.0
    for sparse in (False, True):
        data = PARAFACData.from_array(sp.coo_array(X) if sparse else X, 2)
        factors = [np.ones((3, 1)) for _ in range(3)]
        run_parafac_chain(data, factors, temperature=1.0, n_samples=2, n_burnin=1, step_a=1e-3,
                          step_b=0.0, sampler="psgld", prior_rates=1.0,
                          seed_seq=np.random.SeedSequence(0), max_capped_fraction=1.0)
        score_parafac_prior(data, 1, 2, prior_rates=1.0, seed_seq=np.random.SeedSequence(0))
    return time.perf_counter() - start
