r"""The Langevin machinery shared by the fused NMF and PARAFAC chains.

Both factorisation kernels (:mod:`skevidence.kernels.nmf`,
:mod:`skevidence.kernels.parafac`) hold every factor as C-contiguous rows,
cut into groups; a block's step updates some rows of each factor with one
rule. This module holds that rule and what surrounds it: the step-size
schedule, the SGLD / pSGLD / log-space SGLD update of a run of rows with its
drift cap (``LANGEVIN_MAX_DRIFT``), the end-of-iteration bookkeeping, exact
exponential prior draws, the serial twin of a parallel chain, and the
validation of a chain's settings and of its outcome.
"""

import numbers
import types

import numpy as np
from numba import njit

from ..._config import FASTMATH, LANGEVIN_MAX_DRIFT, LOG_SGLD_MAX_DRIFT
from ...exceptions import SamplerDivergenceError
from .rng import fill_standard_normal, next_double
from ._vmath import exp_inplace

#: Kernel status codes.
_OK, _NONFINITE_STATE, _NONFINITE_LOGLIK = 0, 1, 2

_SAMPLERS = ("sgld", "psgld", "logsgld")
_SGLD, _PSGLD, _LOGSGLD = 0, 1, 2


@njit(cache=True, fastmath=FASTMATH)
def _step_size(k, n_burnin, a, b):
    """``StepSizeSchedule(a, b, n_burnin)(k)``: ``(a / min(k, K_b)) ** b``; ``a`` if ``b == 0``."""
    if b == 0.0:
        return a
    return (a / min(max(k, 1), max(n_burnin, 1))) ** b


@njit(cache=True, fastmath=FASTMATH)
def _max_size(bounds):
    out = 0
    for g in range(bounds.shape[0] - 1):
        out = max(out, bounds[g + 1] - bounds[g])
    return out


# error_model="numpy": no zero-division check (sigma > 0), which would keep the
# loops from being vectorised.
@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _langevin_update(theta, v, g_lik, noise, bits, eps, lik_scale, mean_scale, lam,
                     mode, init_v, adapt_v, alpha, sigma):
    r"""SGLD / pSGLD / log-space SGLD update of one factor block in place.

    ``mode`` is the update code (``_SGLD``, ``_PSGLD``, ``_LOGSGLD``).
    ``theta``, ``v``, ``g_lik`` and ``noise`` are flat, C-contiguous and of
    the same length; ``noise`` is overwritten; ``bits`` is an int64 work
    array at least as long. SGLD and pSGLD cap each entry's drift at
    ``LANGEVIN_MAX_DRIFT`` standard deviations of its noise (see
    :mod:`skevidence._config`) and mirror at zero; log-space SGLD updates
    :math:`u = \log\theta` with the fixed preconditioner held in ``v`` (see
    :func:`_sampler_mode`), caps its drift at ``LOG_SGLD_MAX_DRIFT`` and needs
    no mirroring.

    Returns ``(ok, n_capped)``: ``ok`` is ``False`` if a gradient or a new
    entry is not finite (or, in log space, a new entry has underflowed to 0);
    ``n_capped`` counts the entries whose drift the cap cut.

    Each rule is a branch-free loop over flat arrays so that LLVM vectorises
    it (the exponential through :func:`~skevidence.kernels._vmath.exp_inplace`):
    this update touches every parameter in every iteration.
    """
    n = theta.shape[0]
    ok = True
    n_capped = 0
    # Below, (g - g) == 0 holds only for a finite g: the caps must not hide a NaN or inf gradient.
    if mode == _LOGSGLD:
        # Target of u = log(theta): p(e^u) e^u, so d/du = theta * g + 1.
        for i in range(n):
            G = v[i]
            w = theta[i]
            g = lik_scale * g_lik[i] - lam
            raw = eps * G * (w * g + 1.0)
            drift = min(max(raw, -LOG_SGLD_MAX_DRIFT), LOG_SGLD_MAX_DRIFT)
            n_capped += abs(raw) > LOG_SGLD_MAX_DRIFT
            ok &= (g - g) == 0.0
            noise[i] = drift + np.sqrt(2.0 * eps * G) * noise[i]
        exp_inplace(noise[:n], bits)
        for i in range(n):
            new = theta[i] * noise[i]
            # 0: log(theta) has diverged to -inf; NaN fails both tests
            ok &= (new > 0.0) & (new < np.inf)
            theta[i] = new
        return ok, n_capped
    if mode == _PSGLD:
        if init_v:
            for i in range(n):
                gb = mean_scale * g_lik[i]
                v[i] = gb * gb
        elif adapt_v:
            for i in range(n):
                gb = mean_scale * g_lik[i]
                v[i] = alpha * v[i] + (1.0 - alpha) * (gb * gb)
        for i in range(n):
            precond = 1.0 / (sigma + np.sqrt(v[i]))
            g = lik_scale * g_lik[i] - lam
            sd = np.sqrt(2.0 * eps * precond)
            cap = LANGEVIN_MAX_DRIFT * sd
            raw = eps * precond * g
            new = abs(theta[i] + min(max(raw, -cap), cap) + sd * noise[i])
            n_capped += abs(raw) > cap
            ok &= ((g - g) == 0.0) & (new < np.inf)
            theta[i] = new
        return ok, n_capped
    sd = np.sqrt(2.0 * eps)
    cap = LANGEVIN_MAX_DRIFT * sd
    for i in range(n):
        g = lik_scale * g_lik[i] - lam
        raw = eps * g
        new = abs(theta[i] + min(max(raw, -cap), cap) + sd * noise[i])
        n_capped += abs(raw) > cap
        ok &= ((g - g) == 0.0) & (new < np.inf)
        theta[i] = new
    return ok, n_capped


@njit(cache=True, fastmath=FASTMATH)
def _flat_rows(A, a0, a1):
    """Rows ``a0:a1`` of the C-contiguous 2-D ``A`` as one flat view."""
    return A[a0:a1].reshape(-1)


@njit(cache=True, fastmath=FASTMATH)
def _update_rows(F, vF, F_sum, g, noise, bits, state, a0, a1, keep, eps, lik_scale, mean_scale, lam,
                 mode, init_v, adapt_v, alpha, sigma):
    """Rows ``a0:a1`` of the factor ``F`` (n, R) in one block: record, draw the noise, update.

    On kept iterations the pre-update rows are added to ``F_sum``; then
    ``(a1 - a0) R`` normals are drawn from ``state`` into ``noise`` and the
    rows take one :func:`_langevin_update` with the flat gradient ``g``, whose
    ``(ok, n_capped)`` it returns. Both the NMF (``W`` and ``H`` transposed)
    and the PARAFAC kernels hold every factor this way.
    """
    R = F.shape[1]
    if keep:
        for a in range(a0, a1):
            for r in range(R):
                F_sum[a, r] += F[a, r]
    n = (a1 - a0) * R
    fill_standard_normal(state, noise[:n])
    return _langevin_update(_flat_rows(F, a0, a1), _flat_rows(vF, a0, a1), g[:n], noise[:n], bits,
                            eps, lik_scale, mean_scale, lam, mode, init_v, adapt_v, alpha, sigma)


@njit(cache=True, fastmath=FASTMATH)
def _end_iteration(ok_blocks, capped_blocks, ll_blocks, scale, keep, slot, log_lik, capped_total):
    """Status after an iteration; on a kept one, record the part's scaled log-likelihood at ``slot``.

    ``_NONFINITE_STATE`` if a block's update met a non-finite gradient or left
    a non-finite entry, ``_NONFINITE_LOGLIK`` if the kept log-likelihood is not
    finite, else ``_OK``. On a kept iteration the blocks' capped drifts are
    added to ``capped_total[0]``. Blocks are summed in block order, whatever
    thread ran them.
    """
    for b in range(ok_blocks.shape[0]):
        if not ok_blocks[b]:
            return _NONFINITE_STATE
    if keep:
        total = 0.0
        for b in range(ll_blocks.shape[0]):
            total += ll_blocks[b]
            capped_total[0] += capped_blocks[b]
        total *= scale
        if not np.isfinite(total):
            return _NONFINITE_LOGLIK
        log_lik[slot] = total
    return _OK


@njit(cache=True, fastmath=FASTMATH)
def _exponential_fill(state, A, rate):
    """Exact Exponential(rate) draws into ``A`` (row-major, whatever its memory layout), from one stream."""
    n0, n1 = A.shape
    for a in range(n0):
        for c in range(n1):
            A[a, c] = -np.log(next_double(state)) / rate


def _serial_twin(kernel):
    """The same chain compiled without ``parallel=True``, for single-threaded runs.

    With one numba thread there is nothing to gain from the parallel runtime,
    and its per-iteration fork/join costs time (and, when other processes
    load the cores, far more: spinning OpenMP threads). The loop body is the
    same Python function, so the results are bitwise those of the parallel
    kernel. A distinct ``__qualname__`` keeps numba's on-disk cache entries
    of the two apart.
    """
    func = getattr(kernel, "py_func", kernel)  # a plain function under NUMBA_DISABLE_JIT
    twin = types.FunctionType(func.__code__, func.__globals__, func.__name__ + "_serial", func.__defaults__)
    twin.__qualname__ = func.__qualname__ + "_serial"
    twin.__doc__ = func.__doc__
    return njit(cache=True, fastmath=FASTMATH)(twin)


def _check_factor(name, A, shape):
    if not isinstance(A, np.ndarray) or not np.issubdtype(A.dtype, np.floating):
        raise TypeError(f"{name} must be a float numpy array (it is updated in place).")
    if A.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {A.shape}.")
    if not A.flags.writeable:
        raise ValueError(f"{name} must be writeable (it is updated in place).")
    if not np.all(np.isfinite(A)) or np.any(A < 0):
        raise ValueError(f"{name} must be finite and non-negative.")


def _check_number(name, value, low, *, low_open=False, high=None):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}.")
    if value < low or (low_open and value == low) or (high is not None and value >= high):
        bound = f"{'>' if low_open else '>='} {low}"
        if high is not None:
            bound += f" and < {high}"
        raise ValueError(f"{name} must be {bound}, got {value!r}.")
    return float(value)


def _check_chain_settings(temperature, n_samples, n_burnin, step_a, step_b, sampler, alpha, sigma):
    """Validate the settings every chain wrapper takes; returns them as float / int."""
    temperature = _check_number("temperature", temperature, 0.0)
    for name, value in (("n_samples", n_samples), ("n_burnin", n_burnin)):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}.")
    if not n_burnin < n_samples:
        raise ValueError(f"n_burnin ({n_burnin}) must be less than n_samples ({n_samples}).")
    step_a = _check_number("step_a", step_a, 0.0, low_open=True)
    step_b = _check_number("step_b", step_b, 0.0)
    if sampler not in _SAMPLERS:
        raise ValueError(f"sampler must be one of {_SAMPLERS}, got {sampler!r}.")
    alpha = _check_number("alpha", alpha, 0.0, high=1.0)
    sigma = _check_number("sigma", sigma, 0.0, low_open=True)
    return temperature, int(n_samples), int(n_burnin), step_a, step_b, alpha, sigma


def _check_chain_outcome(status, k, n_capped, n_params, *, sampler, temperature, n_samples,
                         n_burnin, step_a, step_b, max_capped_fraction):
    """Raise :class:`SamplerDivergenceError` for a failed chain; else return its capped fraction.

    A chain fails when the kernel met a non-finite value (``status``, at
    iteration ``k``) or when, after burn-in, the drift cap of its Langevin
    steps cut more than ``max_capped_fraction`` of the ``n_params`` entry
    updates per iteration: its steps are then too long for the Euler scheme
    almost everywhere, and the chain is a capped random walk rather than a
    sampler of the posterior.
    """
    capped_fraction = n_capped / ((n_samples - n_burnin) * n_params)
    if status == _OK and capped_fraction <= max_capped_fraction:
        return float(capped_fraction)
    if status != _OK:
        what = "gradient or state" if status == _NONFINITE_STATE else "log-likelihood"
        failure = f"(non-finite {what}) at iteration {k}"
    else:
        k = n_samples
        failure = (
            f"by iteration {k}: after burn-in the drift of {100 * capped_fraction:.2g}% of its "
            f"updates exceeded the cap of {LANGEVIN_MAX_DRIFT:g} noise standard deviations (its "
            "steps are too long to sample the posterior)"
        )
    eps = _step_size(k, n_burnin, step_a, step_b)
    raise SamplerDivergenceError(
        f"The {sampler} chain at temperature t={temperature:.4g} diverged {failure}, with step "
        f"size {eps:.3g}. Lower step_size (now a={step_a:.3g}), e.g. by a factor of 10.",
        temperature=temperature,
        iteration=int(k),
        step_size=float(eps),
    )


def _sampler_mode(sampler, factors, precond, mode_sums, temperature, names):
    r"""The kernel code of ``sampler``; for log-space SGLD, also its fixed preconditioner.

    ``factors`` and ``precond`` are the kernels' row-major factors and their
    preconditioner arrays, ``mode_sums`` the likelihood's log-space curvature
    summed over every row of each factor
    (:attr:`~skevidence.kernels.blocks.BlockData.curvature_sums`: the data's
    sum ``x_i.`` for Poisson). Log-space SGLD preconditions
    :math:`\log F[i, :]` by :math:`1 / (1 + t\,x_{i\cdot})`: the inverse
    log-space curvature of the rank-1 conditional
    :math:`\mathcal{G}(1 + t\,x_{i\cdot}, \cdot)`, an upper bound of the
    curvature for ``R > 1``; it needs strictly positive factors (``names``
    says which, in the error).
    """
    mode = {"sgld": _SGLD, "psgld": _PSGLD, "logsgld": _LOGSGLD}[sampler]
    if mode == _LOGSGLD:
        if any(np.any(F == 0.0) for F in factors):
            raise ValueError(f"sampler='logsgld' needs strictly positive {names}.")
        for v, sums in zip(precond, mode_sums):
            v[...] = (1.0 / (1.0 + temperature * sums))[:, None]
    return mode
