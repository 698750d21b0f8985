r"""The papers' block-parallel SG-MCMC chains for CP models: SGLD and pSGLD on parts of blocks.

One call of :func:`run_chain` runs a whole chain at one inverse temperature
:math:`t` for the CP model of a two- or three-way array (Şimşekli et al. 2016
for NMF; Nguyen et al. 2018 for PARAFAC), with no Python per iteration.

**Blocks and parts** (Gemulla et al. 2011). Every mode is cut into ``B``
contiguous groups (:meth:`~skevidence.cp.data.CPData.blocks`). Part
``(p_1, ..., p_{N-1})``, index :math:`\sum_m p_m B^{N-1-m}`, is the ``B``
blocks with group ``b`` of mode 0 and group ``(b + p_m) mod B`` of mode ``m``:
disjoint in every mode, so the ``B`` block updates run in parallel
(``prange``) and every factor entry is updated once per iteration. Each
iteration draws a part uniformly; the part is the minibatch, its
log-likelihood and gradient scaled by the number of parts :math:`B^{N-1}`
(unbiased for uneven groups too).

**Updates.** SGLD, :math:`\theta \leftarrow |\theta + \epsilon g + \mathcal{N}(0, 2\epsilon)|`,
and pSGLD (Li et al. 2016), preconditioned by :math:`G = 1/(\sigma +
\sqrt{v})` with :math:`v \leftarrow \alpha v + (1-\alpha)\bar g^2`,
:math:`\bar g` the block's gradient divided by the part's size (Nguyen et
al. 2018, eq. 8-9); negative entries are mirrored (their Remark). Steps
:math:`\epsilon_k = (a/\min(k, K_b))^b`. A step's drift is capped at
``LANGEVIN_MAX_DRIFT`` standard deviations of its own noise (see
:mod:`skevidence._config`); a chain whose cap cuts more than
``max_capped_fraction`` of its updates after burn-in has diverged.

**Random streams.** Stream 0 draws the parts; stream ``1 + b`` all the noise
of the block with mode-0 group ``b``, mode by mode. Each stream is advanced
by one thread at a time and the blocks' log-likelihoods are summed in block
order, so the results are the same for any number of threads.

**What is recorded.** After burn-in (``k > n_burnin``) the scaled
log-likelihood of the drawn part at the state before iteration ``k``'s
update, and that state into the running mean of the factors.

**Passes.** A dense matrix's block takes :math:`V` and the gradients from
three BLAS products (its entries through
:func:`~skevidence.cp.likelihood.dense_entries`), any other block visits its
listed entries (the non-zeros of counts, every entry of the Gamma family);
the Poisson linear part :math:`-\sum V` and its gradient come from the
block's column sums (:mod:`~skevidence.cp.likelihood`). The blocks of a part
write their gradients and noise into their own rows of arrays shaped like the
stacked factors.
"""

import types

import numba
import numpy as np
from numba import njit, prange

from ..._config import FASTMATH, LANGEVIN_MAX_DRIFT, MAX_CAPPED_FRACTION, PARALLEL_MIN_PART, PSGLD_ALPHA, PSGLD_SIGMA
from ...evidence._runner import divergence_error
from ...models._trace import ChainTrace
from ...samplers import StepSizeSchedule
from ..likelihood import dense_entries, entry
from ..model import check_prior_rates
from .passes import other_modes
from .rng import fill_standard_normal, next_double, seed_streams, uniform_index

__all__ = ["SAMPLERS", "run_chain", "score_prior"]

#: The update rules.
SAMPLERS = ("sgld", "psgld")

#: Kernel status codes.
_OK, _NONFINITE_STATE, _NONFINITE_LOGLIK = 0, 1, 2


@njit(cache=True, fastmath=FASTMATH)
def _block(bounds, offsets, part, b, rows):
    """Block ``b`` of part ``part``: its rows ``(first, end)`` of every mode's factor into ``rows``; returns its id."""
    n_modes, B = bounds.shape[0], bounds.shape[1] - 1
    bid = 0
    for m in range(n_modes):
        # mode m's shift is the part's digit m in base B (mode 0's is 0)
        group = (b + part // B ** (n_modes - 1 - m)) % B
        rows[m, 0], rows[m, 1] = offsets[m] + bounds[m, group], offsets[m] + bounds[m, group + 1]
        bid = bid * B + group
    return bid


@njit(cache=True, fastmath=FASTMATH)
def _part_sizes(bounds, offsets):
    """Number of entries of every part."""
    n_modes, B = bounds.shape[0], bounds.shape[1] - 1
    rows = np.empty((n_modes, 2), dtype=np.int64)
    sizes = np.zeros(B ** (n_modes - 1), dtype=np.int64)
    for part in range(sizes.shape[0]):
        for b in range(B):
            _block(bounds, offsets, part, b, rows)
            sizes[part] += np.prod(rows[:, 1] - rows[:, 0])
    return sizes


@njit(cache=True, fastmath=FASTMATH)
def _work_size(X, bounds, R):
    """A block's work space: the means of a dense block, or the Poisson linear part's sums and products."""
    widths = bounds[:, 1:] - bounds[:, :-1]
    return max(np.max(widths[0]) * np.max(widths[1]) if X.size > 0 else 0, (bounds.shape[0] + 1) * R)


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _dense_block(X, F, offsets, rows, g, work, keep, kappa, floor):
    """The entry part of a dense two-way block: its value (0 unless ``keep``), its gradient into ``g``."""
    i0, i1, j0, j1 = rows[0, 0], rows[0, 1], rows[1, 0], rows[1, 1]
    W, Ht = F[i0:i1], F[j0:j1]
    V = work[: (i1 - i0) * (j1 - j0)].reshape((i1 - i0, j1 - j0))
    np.dot(W, Ht.T, V)
    ll = dense_entries(X[i0:i1, j0 - offsets[1] : j1 - offsets[1]], V, floor, kappa, keep)
    np.dot(V, Ht, g[i0:i1])
    np.dot(V.T, W, g[j0:j1])
    return ll


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _listed_block(coords, vals, start, stop, F, offsets, g, keep, kappa, floor):
    """The entry part of a block from its listed entries ``start:stop``, its gradient added to ``g``."""
    three = coords.shape[1] == 3
    last = coords.shape[1] - 1
    ll = 0.0
    for e in range(start, stop):
        i, j, k = offsets[0] + coords[e, 0], offsets[1] + coords[e, 1], offsets[last] + coords[e, last]
        v = floor
        for r in range(F.shape[1]):
            v += F[i, r] * F[j, r] * (F[k, r] if three else 1.0)
        term, w = entry(vals[e], v, kappa, keep)
        ll += term
        for r in range(F.shape[1]):
            c = F[k, r] if three else 1.0
            g[i, r] += w * F[j, r] * c
            g[j, r] += w * F[i, r] * c
            if three:
                g[k, r] += w * F[i, r] * F[j, r]
    return ll


@njit(cache=True, fastmath=FASTMATH)
def _linear_part(F, rows, g, sums, others):
    r"""Add the block's Poisson linear part :math:`-\sum V` to its gradient ``g``; return its value.

    ``sums`` (``(N, R)``) and ``others`` (``R``) are work space.
    """
    sums[:] = 0.0
    for m in range(rows.shape[0]):
        for a in range(rows[m, 0], rows[m, 1]):
            sums[m] += F[a]
    ll = 0.0
    for r in range(F.shape[1]):
        ll -= other_modes(sums, 0, r) * sums[0, r]
    for m in range(rows.shape[0]):
        for r in range(F.shape[1]):
            others[r] = other_modes(sums, m, r)
        for a in range(rows[m, 0], rows[m, 1]):  # row by row, as the factors are stored
            for r in range(F.shape[1]):
                g[a, r] -= others[r]
    return ll


@njit(cache=True, fastmath=FASTMATH)
def _block_loglik(data, bid, F, rows, g, work, keep):
    """Log-likelihood of block ``bid`` (0 unless ``keep``); its gradient into the block's rows of ``g``.

    ``data`` is :func:`_kernel_data`'s: a dense matrix (its blocks go through
    BLAS), or an empty one and the listed entries.
    """
    X, coords, vals, block_ptr, block_constant, kappa, floor, bounds, offsets = data
    n_modes, R = rows.shape[0], F.shape[1]
    if X.size == 0:
        for m in range(n_modes):
            g[rows[m, 0] : rows[m, 1]] = 0.0
        ll = _listed_block(coords, vals, block_ptr[bid], block_ptr[bid + 1], F, offsets, g, keep, kappa, floor)
    else:
        ll = _dense_block(X, F, offsets, rows, g, work, keep, kappa, floor)
    if kappa == 0.0:
        sums, others = work[: n_modes * R].reshape((n_modes, R)), work[n_modes * R : (n_modes + 1) * R]
        ll += _linear_part(F, rows, g, sums, others)
    return ll - block_constant[bid] if keep else 0.0


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _update(theta, v, g_lik, noise, eps, lik_scale, mean_scale, lam, psgld, init_v, adapt_v, alpha, sigma):
    """One SGLD or pSGLD step of the flat ``theta`` (mirrored at 0); returns ``(ok, n_capped)``.

    ``noise`` holds standard normals. ``(g - g) == 0`` holds for a finite
    ``g`` only: the cap must not hide a non-finite gradient.
    """
    ok = True
    n_capped = 0
    if psgld:
        for i in range(theta.shape[0]):
            gb = mean_scale * g_lik[i]
            if init_v:
                v[i] = gb * gb
            elif adapt_v:
                v[i] = alpha * v[i] + (1.0 - alpha) * (gb * gb)
    for i in range(theta.shape[0]):
        precond = 1.0 / (sigma + np.sqrt(v[i])) if psgld else 1.0
        g = lik_scale * g_lik[i] - lam
        sd = np.sqrt(2.0 * eps * precond)
        cap = LANGEVIN_MAX_DRIFT * sd
        raw = eps * precond * g
        new = abs(theta[i] + min(max(raw, -cap), cap) + sd * noise[i])
        n_capped += abs(raw) > cap
        ok &= ((g - g) == 0.0) & (new < np.inf)
        theta[i] = new
    return ok, n_capped


@njit(cache=True, parallel=True, fastmath=FASTMATH)
def _chain(data, F, vF, streams, steps, temperature, n_burnin, psgld, alpha, sigma, freeze, rates, log_lik, F_sum):
    """The whole chain (``steps[k - 1]``: iteration ``k``'s step); returns ``(status, k, n_evaluations, n_capped)``."""
    bounds, offsets = data[7], data[8]
    n_modes, B = bounds.shape[0], bounds.shape[1] - 1
    g, noise = np.empty_like(F), np.empty_like(F)
    work = np.empty((B, _work_size(data[0], bounds, F.shape[1])))
    rows_buf = np.empty((B, n_modes, 2), dtype=np.int64)
    ll_blocks = np.zeros(B)
    ok_blocks = np.ones(B, dtype=np.bool_)
    capped_blocks = np.zeros(B, dtype=np.int64)
    part_sizes = _part_sizes(bounds, offsets)
    n_parts = part_sizes.shape[0]
    n_evals = n_capped = 0
    for k in range(1, steps.shape[0] + 1):
        part = uniform_index(streams[0], n_parts)
        keep = k > n_burnin
        for b in prange(B):
            rows = rows_buf[b]
            bid = _block(bounds, offsets, part, b, rows)
            ll_blocks[b] = _block_loglik(data, bid, F, rows, g, work[b], keep)
            ok, capped = True, 0
            for m in range(n_modes):
                a0, a1 = rows[m, 0], rows[m, 1]
                if keep:
                    F_sum[a0:a1] += F[a0:a1]
                z = noise[a0:a1].reshape(-1)
                fill_standard_normal(streams[1 + b], z)
                ok_m, capped_m = _update(F[a0:a1].reshape(-1), vF[a0:a1].reshape(-1), g[a0:a1].reshape(-1), z,
                                         steps[k - 1], temperature * n_parts, temperature / part_sizes[part], rates[m],
                                         psgld, k == 1, not (freeze and keep), alpha, sigma)
                ok &= ok_m
                capped += capped_m
            ok_blocks[b], capped_blocks[b] = ok, capped
        n_evals += part_sizes[part]
        if not ok_blocks.all():
            return _NONFINITE_STATE, k, n_evals, n_capped
        if keep:
            total = 0.0  # summed in block order, whatever the threads
            for b in range(B):
                total += ll_blocks[b]
                n_capped += capped_blocks[b]
            if not np.isfinite(total):
                return _NONFINITE_LOGLIK, k, n_evals, n_capped
            log_lik[k - n_burnin - 1] = total * n_parts
    return _OK, steps.shape[0], n_evals, n_capped


def _serial_twin(kernel):
    """The same chain compiled without ``parallel=True``, for single-threaded runs.

    With one thread the parallel runtime's fork and join every iteration only
    cost time. The body is the same Python function, so the numbers are the
    same; a distinct ``__qualname__`` keeps numba's cache entries apart.
    """
    func = getattr(kernel, "py_func", kernel)  # a plain function under NUMBA_DISABLE_JIT
    twin = types.FunctionType(func.__code__, func.__globals__, func.__name__ + "_serial", func.__defaults__)
    twin.__qualname__ = func.__qualname__ + "_serial"
    return njit(cache=True, fastmath=FASTMATH)(twin)


_chain_serial = _serial_twin(_chain)


@njit(cache=True, fastmath=FASTMATH)
def _prior_scores(data, F, streams, rates, log_lik, F_sum):
    """Exact prior draws of the stacked factors (stream 1, row-major), each scored on one random part (stream 0).

    ``F`` ends as the last draw. Returns the number of entries scored.
    """
    bounds, offsets = data[7], data[8]
    n_modes, B = bounds.shape[0], bounds.shape[1] - 1
    g = np.empty_like(F)
    work = np.empty(_work_size(data[0], bounds, F.shape[1]))
    rows = np.empty((n_modes, 2), dtype=np.int64)
    part_sizes = _part_sizes(bounds, offsets)
    n_evals = 0
    for k in range(log_lik.shape[0]):
        for m in range(n_modes):
            for a in range(offsets[m], offsets[m + 1]):
                for r in range(F.shape[1]):
                    F[a, r] = -np.log(next_double(streams[1])) / rates[m]
        F_sum += F
        part = uniform_index(streams[0], part_sizes.shape[0])
        total = 0.0
        for b in range(B):
            total += _block_loglik(data, _block(bounds, offsets, part, b, rows), F, rows, g, work, True)
        log_lik[k] = total * part_sizes.shape[0]
        n_evals += part_sizes[part]
    return n_evals


def _kernel_data(data, blocks):
    """The kernels' data tuple: a dense matrix, or an empty one and the listed entries; the blocks' layout."""
    X = data.X if data.dense2 else np.empty((0, 0))
    return (X, blocks.coords, blocks.vals, blocks.block_ptr, blocks.block_constant, data.kappa, data.floor,
            blocks.bounds, data.offsets)


def run_chain(data, blocks, F, *, temperature, n_samples, n_burnin, step_a, step_b, sampler="psgld",
              alpha=PSGLD_ALPHA, sigma=PSGLD_SIGMA, freeze=True, prior_rates, seed_seq,
              max_capped_fraction=MAX_CAPPED_FRACTION):
    r"""Run one block-parallel SG-MCMC chain at one temperature; ``F`` receives its final state.

    Parameters
    ----------
    data : CPData
    blocks : Blocks
        ``data.blocks(B)``.
    F : ndarray of shape (sum of the mode sizes, R)
        The stacked non-negative factors (float64, C-contiguous), the warm
        start; updated in place (left unchanged if the chain diverges).
    temperature : float
        Inverse temperature :math:`t \ge 0`.
    n_samples, n_burnin : int
        Iterations in all, and those discarded; ``0 <= n_burnin < n_samples``.
    step_a, step_b : float
        Step sizes :math:`\epsilon_k = (a / \min(k, K_b))^b` (``a`` if ``b == 0``).
    sampler : {"sgld", "psgld"}
    alpha, sigma : float
        pSGLD's decay and floor (validated, like the other settings, by
        :class:`~skevidence.samplers.PSGLD` and the STI driver that call this).
    freeze : bool
        pSGLD: stop adapting the preconditioner after burn-in.
    prior_rates : float or sequence of N floats
        Rates of the exponential priors.
    seed_seq : numpy.random.SeedSequence
        Seeds the ``B + 1`` random streams.
    max_capped_fraction : float
        Largest fraction of the kept updates whose drift the cap may cut.

    Returns
    -------
    ChainTrace
        The kept log-likelihoods, the likelihood evaluations, the step size
        after burn-in, the mean of the kept states and the capped fraction.

    Raises
    ------
    SamplerDivergenceError
        If a gradient, the state or a kept log-likelihood stops being finite,
        or the drift cap cut more than ``max_capped_fraction`` of the kept
        updates (the steps are too long).
    """
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}.")
    if not 0 <= n_burnin < n_samples:
        raise ValueError(f"n_burnin ({n_burnin}) must be at least 0 and less than n_samples ({n_samples}).")
    rates = np.array(check_prior_rates(prior_rates, len(data.shape)))
    if F.shape != (data.offsets[-1], F.shape[1]) or not (np.all(np.isfinite(F)) and np.all(F >= 0)):
        raise ValueError(f"F must be finite, non-negative and of shape ({data.offsets[-1]}, R), got {F.shape}.")
    schedule = StepSizeSchedule(step_a, step_b, n_burnin)
    steps = np.array([schedule(k) for k in range(1, n_samples + 1)], dtype=np.float64)
    n_kept = n_samples - n_burnin
    state = np.array(F, dtype=np.float64, order="C")
    vF, F_sum, log_lik = np.zeros_like(state), np.zeros_like(state), np.empty(n_kept)
    # The parallel runtime forks and joins every iteration: worth it only for parts with enough entries.
    B = blocks.bounds.shape[1] - 1
    parallel = numba.get_num_threads() > 1 and data.n_data // B ** (len(data.shape) - 1) >= PARALLEL_MIN_PART
    status, k, n_evals, n_capped = (_chain if parallel else _chain_serial)(
        _kernel_data(data, blocks), state, vF, seed_streams(seed_seq, B + 1), steps, float(temperature),
        int(n_burnin), sampler == "psgld", float(alpha), float(sigma), bool(freeze), rates, log_lik, F_sum)
    capped_fraction = n_capped / (n_kept * state.size)
    if status != _OK:
        failure = f"(non-finite {'gradient or state' if status == _NONFINITE_STATE else 'log-likelihood'})"
    elif capped_fraction > max_capped_fraction:
        failure = (f"by the drift of {100 * capped_fraction:.2g}% of its updates after burn-in exceeding the cap of "
                   f"{LANGEVIN_MAX_DRIFT:g} noise standard deviations (its steps are too long to sample the posterior)")
    else:
        F[...] = state
        return ChainTrace(log_lik, int(n_evals), float(steps[-1]), None, F_sum / n_kept, float(capped_fraction))
    raise divergence_error(sampler, temperature, int(k), float(steps[k - 1]), step_a, failure)


def score_prior(data, blocks, n_components, n_draws, *, prior_rates, seed_seq):
    """Exact prior draws of the stacked factors, each scored on one random part: the :math:`t = 0` rung of STI.

    Returns ``(ChainTrace, F)``: the scores (``step_size`` NaN) and the last draw.
    """
    rates = np.array(check_prior_rates(prior_rates, len(data.shape)))
    R, n_draws = int(n_components), int(n_draws)
    if R < 1 or n_draws < 1:
        raise ValueError(f"n_components and n_draws must be at least 1, got {R} and {n_draws}.")
    F = np.empty((data.offsets[-1], R))
    F_sum, log_lik = np.zeros_like(F), np.empty(n_draws)
    n_evals = _prior_scores(_kernel_data(data, blocks), F, seed_streams(seed_seq, 2), rates, log_lik, F_sum)
    if not np.all(np.isfinite(log_lik)):
        raise ValueError("The log-likelihood is not finite at some prior draws; check that X is valid.")
    return ChainTrace(log_lik, int(n_evals), np.nan, None, F_sum / n_draws), F
