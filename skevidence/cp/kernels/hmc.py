r"""Metropolis-adjusted HMC along a referenced temperature ladder for CP models.

The target at inverse temperature :math:`t` is

.. math::
    \pi_t(\theta) \propto q_{\mathrm{sym}}(\theta)^{1-t}\,\big(p(\theta)\,p(X \mid \theta)\big)^t,

with :math:`q` a product of Gammas (one per factor entry, shape
:math:`\alpha`, rate :math:`\beta`) and :math:`q_{\mathrm{sym}}` its average
over relabellings of the components. The chain moves on
:math:`\varphi = \log\theta` (Jacobian :math:`\sum\varphi`), a whole
temperature per call with no Python per iteration, and records the
thermodynamic integrand

.. math::
    U(\theta) = \log p(X \mid \theta) + \log p(\theta) - \log q_{\mathrm{sym}}(\theta),
    \qquad \frac{d}{dt}\log Z_t = E_{\pi_t}[U].

**Moves.** Leapfrog trajectories with a diagonal mass (given: the
inverse of a fit's variance of :math:`\log\theta`) and a
Metropolis-Hastings step on the exact :math:`\pi_t`, so no step-size bias
remains. Up to :data:`EXACT_RELABEL_RANK` the leapfrog follows the exact
gradient of :math:`\log\pi_t`: that of :math:`\log q_{\mathrm{sym}}`
averages :math:`q`'s components over the relabellings, with their weights
where the trajectory is (:func:`relabelling_weights`), so a chain moves
freely between labellings where :math:`q`'s components overlap. Above, it
uses the gradient of the single-labelling :math:`q` (a valid,
volume-preserving and reversible map whatever fixed field drives it; the MH
step uses :math:`q_{\mathrm{sym}}`), and the chain samples :math:`\pi_t`
restricted to the labelling region it starts in, which by symmetry has the
same integrand as the whole.

**Relabellings.** :math:`\log q_{\mathrm{sym}}(\theta) = \log \sum_{\pi}
\exp\big(\sum_r C_{r\pi(r)}\big) - \log R!`, with :math:`C_{rs}` the log
density of component ``r``'s entries under ``q``'s component ``s``: the
log-permanent of :math:`e^{C}`. Up to :data:`EXACT_RELABEL_RANK` it runs over
every relabelling, by a sum over the sets of columns taken (:math:`2^R R`
terms, on :math:`e^{C}` scaled by the potentials of its best matching, so
that nothing that counts falls below the smallest double); an
over-fitted rank's spare components overlap, and many relabellings count.
Above, it runs over the identity and its transpositions
(the labellings a chain near the identity can reach; far ones weigh
:math:`e^{-10^5}` at the main job's size, but not where components overlap).

**Likelihood.** Its value and gradient come from
:func:`~skevidence.cp.kernels.passes.log_likelihood`.

**Random numbers.** Each call seeds numba's generator of the thread it runs
on, so a call's result depends on its seed alone; callers run independent
ladders on separate threads.
"""

import math

import numpy as np
from numba import njit

from ..._config import FASTMATH
from ..likelihood import WITH_VALUE
from .assignment import best_matching
from .fastexp import exp_into
from .passes import log_likelihood
from .rng import fill_standard_normal

__all__ = ["relabelling_weights", "run_referenced_ladder", "symmetric_log_q"]


#: The largest rank whose relabelling sum runs over every relabelling (above: the identity and transpositions).
EXACT_RELABEL_RANK = 10

#: :math:`\log 10^{-250}`: a relabelling sum this far below its scale takes the other rows' part again
#: (:func:`_row_lse`); :math:`\log 10^{-280}`: above what that part loses below the smallest double, up to
#: rank 10 (:func:`_without_row`).
_LOG_TINY, _LOG_LOST = math.log(1e-250), math.log(1e-280)


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def symmetric_log_q(phi, theta, alpha, log_norm_q, beta, C, fill=True):
    r""":math:`\log q_{\mathrm{sym}}` at ``theta`` (``phi = log theta``).

    ``log_norm_q`` (``(R,)``) holds each component's
    :math:`\sum_d \alpha\log\beta - \log\Gamma(\alpha)`; ``C``
    (``(R, R)``) is a work array. ``fill=False``: ``C`` already holds its
    values at ``theta`` (as the ridge moves leave it). Up to
    :data:`EXACT_RELABEL_RANK` the sum is :func:`relabelling_weights`'; above,
    over the identity and the transpositions.
    """
    if fill:
        _fill_C(phi, theta, alpha, log_norm_q, beta, C)
    R = C.shape[0]
    if R <= EXACT_RELABEL_RANK:
        return relabelling_weights(C, np.empty((R, R))) - math.lgamma(R + 1.0)
    rest = np.empty(2 * R)
    _without_row(C, 0, rest)
    return _row_lse(C, 0, rest, -np.inf) - math.lgamma(R + 1.0)


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _fill_C(phi, theta, alpha, log_norm_q, beta, C):
    """``C[r, s]``: the log density of component ``r``'s entries under ``q``'s component ``s`` (BLAS products)."""
    C[:, :] = np.dot(phi.T, alpha - 1.0) - np.dot(theta.T, beta) + log_norm_q


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def relabelling_weights(C, P):
    r""":math:`\log\sum_\pi \exp\sum_r C_{r\pi(r)}` over every relabelling :math:`\pi`, and into ``P`` the
    probability of each :math:`\pi(r) = s` under weights :math:`\propto \exp\sum_r C_{r\pi(r)}`.

    ``P`` is the derivative of the first with respect to ``C``. Sums over
    the sets of columns the first rows take (:math:`f`) and the last rows
    take (:math:`g`, :func:`_set_sums` both): :math:`3 \cdot 2^R R` terms. They run on
    :math:`e^{C_{ij} - u_i - v_j} \le 1`, with :math:`u, v` the potentials
    of the best matching of ``C``
    (:func:`~skevidence.cp.kernels.assignment.best_matching`), whose own
    term is 1: the sum is at least 1 and at most :math:`R!`, and a term lost
    below the smallest double weighs nothing.
    """
    R = C.shape[0]
    _, u, v = best_matching(np.maximum(C, -1e300))
    w = np.exp(C - u.reshape(R, 1) - v.reshape(1, R))
    f = _set_sums(w)
    g = _set_sums(w[::-1].copy())  # the last rows' sums: g[T] for the set T the first rows leave
    full = (1 << R) - 1
    P[:, :] = 0.0
    for S in range(full):
        k = 0  # the next row: S holds the columns of the rows before it
        for j in range(R):
            k += (S >> j) & 1
        for j in range(R):
            if not (S >> j) & 1:
                P[k, j] += f[S] * w[k, j] * g[full ^ S ^ (1 << j)]
    P /= f[full]
    return math.log(f[full]) + u.sum() + v.sum()


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _assemble(t, phi, theta, loglik, lik_grad, grad_phi, alpha, log_norm_q, beta, field, rates, C, with_value,
              fill_C):
    """Log target and integrand U at ``phi`` from the likelihood's value and gradient there; the leapfrog field
    into ``grad_phi``. Without ``with_value`` only the field is computed (``0, 0`` returned); ``fill_C``: whether
    ``C`` is to be filled at ``phi`` (else it holds its values there). ``field``: a work array.

    Up to :data:`EXACT_RELABEL_RANK` the field is the gradient of ``log q_sym`` itself: ``q``'s shapes and
    rates averaged over the relabellings with their weights at ``phi`` (:func:`relabelling_weights`); above,
    and at :math:`t = 1`, ``q``'s at the identity.
    """
    D, R = phi.shape
    averaged = R <= EXACT_RELABEL_RANK and t < 1.0
    log_perm = 0.0
    if averaged:
        if fill_C:
            _fill_C(phi, theta, alpha, log_norm_q, beta, C)
        P = np.empty((R, R))
        log_perm = relabelling_weights(C, P)
        PT = P.T.copy()
        np.dot(alpha, PT, field[0])
        np.dot(beta, PT, field[1])
    a, b = (field[0], field[1]) if averaged else (alpha, beta)
    for d in range(D):
        lam = rates[d]
        for r in range(R):
            th = theta[d, r]
            grad_phi[d, r] = t * th * (lik_grad[d, r] - lam) + (1.0 - t) * ((a[d, r] - 1.0) - b[d, r] * th) + 1.0
    if not with_value:
        return 0.0, 0.0
    log_prior = 0.0
    jac = 0.0
    for d in range(D):
        lam = rates[d]
        log_prior += R * math.log(lam)
        for r in range(R):
            log_prior -= lam * theta[d, r]
            jac += phi[d, r]
    if averaged:
        log_q = log_perm - math.lgamma(R + 1.0)
    else:
        log_q = symmetric_log_q(phi, theta, alpha, log_norm_q, beta, C, fill_C)
    U = loglik + log_prior - log_q
    return t * U + log_q + jac, U


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _state(t, dense2, X, coords, vals, offsets, kappa, floor, constant, phi, theta, grad_phi, lik_grad, sums, alpha,
           log_norm_q, beta, field, rates, C, with_value, single):
    """Log target, integrand U, log-likelihood and the leapfrog field at ``phi`` (``theta`` and the
    likelihood's gradient ``lik_grad`` are filled).

    Without ``with_value`` only the field is computed (``0, 0, 0`` returned), with ``single`` a dense
    matrix's in single precision.
    """
    exp_into(phi, theta)  # every leapfrog step: vectorised
    loglik = log_likelihood(dense2, X, coords, vals, theta, offsets, kappa, floor, constant, lik_grad, sums, with_value,
                            single)
    logp, U = _assemble(t, phi, theta, loglik, lik_grad, grad_phi, alpha, log_norm_q, beta, field, rates, C,
                        with_value, True)
    return logp, U, loglik


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _without_row(C, r, rest):
    r"""What the relabelling sum takes from the rows of ``C`` other than ``r``, into ``rest`` (size ``2R``).

    Every relabelling's term is ``C[r, j]`` (``j = pi(r)``) plus a sum over
    the other rows, so the whole sum is
    :math:`\log\sum_j \exp(C_{rj} + \log M_j)` with :math:`M_j` the sum over
    the relabellings sending ``r`` to ``j`` of the exponentiated other rows'
    sums, into ``rest[:R]``, and ``rest[R:2R]`` the scale of each (``-inf``:
    exact). Above :data:`EXACT_RELABEL_RANK`, over the identity and the
    transpositions (:func:`_swaps_without`).

    Up to it, over every relabelling: :math:`M_j` is the sum over the
    matchings of the other rows to the columns other than ``j`` of the
    product of their entries of :math:`e^C`, by dynamic programming over the
    sets of columns taken (:math:`2^R R` terms). It runs on
    :math:`e^{C_{ij} - u_i - v_j} \le 1`, with :math:`u, v` the potentials of
    the best matching of ``C`` as it stands
    (:func:`~skevidence.cp.kernels.assignment.best_matching`), so that the
    whole sum is at least 1 in those units, and the products lost below the
    smallest double (fewer than :math:`2^R R\,R!` of them, each below
    :math:`2.3 \times 10^{-308}`) are below :math:`10^{-280}` of it. A move
    of row ``r`` can bring up a relabelling whose part was lost:
    :func:`_row_lse` tells, and the part is taken again.
    """
    R = C.shape[0]
    if R > EXACT_RELABEL_RANK:
        _swaps_without(C, r, *_other_swaps(C, -1), rest)
        return
    _, u, v = best_matching(np.maximum(C, -1e300))  # -inf (an overflowed factor) would leave no potential
    rows = np.array([q for q in range(R) if q != r])
    ends = np.array([((1 << R) - 1) ^ (1 << j) for j in range(R)])
    scale = u[rows].sum() + v.sum() - v  # column j is left out of M_j
    sums = _set_sums(np.exp(C[rows] - u[rows].reshape((-1, 1)) - v.reshape((1, -1))))
    rest[:R], rest[R:] = np.log(sums[ends]) + scale, scale


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _set_sums(a):
    """For every set of columns of ``a`` (``(k, n)``) with at most ``k`` in it, the sum over the matchings of
    the first rows, one per column of the set, of the product of their entries."""
    k, n = a.shape
    size = 1 << n
    taken = np.zeros(size, dtype=np.int64)  # the number of columns in each set
    for mask in range(1, size):
        taken[mask] = taken[mask >> 1] + (mask & 1)
    sums = np.zeros(size)
    sums[0] = 1.0
    for mask in range(1, size):
        i = taken[mask] - 1  # the row that takes one of the set's columns
        if i < k:
            acc = 0.0
            for j in range(n):  # the set without column j, row i taking it
                if mask >> j & 1:
                    acc += sums[mask ^ (1 << j)] * a[i, j]
            sums[mask] = acc
    return sums


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _other_swaps(C, r):
    r"""``(shift, sum)``: :math:`\sum \exp(C_{ab} + C_{ba} - C_{aa} - C_{bb} - \mathrm{shift})` over the
    transpositions :math:`(a\,b)` of two components other than ``r`` (``r = -1``: every one), with
    ``shift`` the largest exponent or 0 if that is larger: :math:`O(R^2)`."""
    gains = C + C.T - np.diag(C).reshape((-1, 1)) - np.diag(C)  # symmetric: every pair twice
    np.fill_diagonal(gains, -np.inf)
    if r >= 0:
        gains[r], gains[:, r] = -np.inf, -np.inf
    shift = max(0.0, gains.max())
    return shift, 0.5 * np.exp(gains - shift).sum()


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _own_swaps(C, r, shift):
    r""":math:`\sum_{b \ne r} \exp(C_{rb} + C_{br} - C_{rr} - C_{bb} - \mathrm{shift})`, the transpositions of
    ``r``: :math:`O(R)`."""
    gains = C[r] + C[:, r] - C[r, r] - np.diag(C)
    gains[r] = -np.inf
    return np.exp(gains - shift).sum()


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _swaps_without(C, r, shift, total, rest):
    """:func:`_without_row` over the identity and the transpositions from ``total``, the transpositions' sum
    at ``shift`` (:func:`_other_swaps`), less those of ``r``: :math:`O(R)`. Where ``r``'s own make up nearly
    all of it (the difference would lose its digits) the rest is summed afresh. Returns ``(shift, the rest's
    transpositions)``."""
    R = C.shape[0]
    other = total - _own_swaps(C, r, shift)
    if not math.exp(-shift) + other > 1e-6 * (math.exp(-shift) + total):
        shift, other = _other_swaps(C, r)
    # Row r on its own column: the identity and the other rows' transpositions; on column b: the swap of r, b.
    trace = np.trace(C) - C[r, r]
    rest[:R] = trace + C[:, r] - np.diag(C)
    rest[r] = trace + shift + math.log(math.exp(-shift) + other)
    rest[R:] = -np.inf
    return shift, other


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _row_lse(C, r, rest, cap):
    r""":math:`\log\sum_\pi \exp \sum_r C_{r\pi(r)}` from the sum without row ``r`` that
    :func:`_without_row` put in ``rest``: :math:`O(R)`; NaN if that part must be taken again, unless the sum
    lies below ``cap``: then a bound above it that lies below ``cap`` too.
    """
    R = C.shape[0]
    terms = C[r] + rest[:R]
    best = terms.max()
    total = best + math.log(np.exp(terms - best).sum()) if np.isfinite(best) else best
    # Row r's move has brought the sum below 1e-250 of its largest scale, where the parts lost below the
    # smallest double (1e-280 of it) may count: only a bound with them can say it lies below cap.
    top = (C[r] + rest[R:]).max()
    if total - top >= _LOG_TINY:
        return total
    bound = np.logaddexp(total, top + _LOG_LOST)
    return bound if bound <= cap else np.nan


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _ridge_logp(u, t, r, c_base, a_diff, b0, bm, lam0, lamm, n_diff, C, rest, level):
    """Log target along component ``r``'s scale ridge, up to a constant, at shift ``u`` (row ``r`` of ``C`` is
    set there); where it lies below ``level``, possibly a bound above it that lies below ``level`` too (all a
    slice sampler asks)."""
    eu = math.exp(u)
    emu = 1.0 / eu
    for s in range(C.shape[1]):
        C[r, s] = c_base[s] + a_diff[s] * u - b0[s] * (eu - 1.0) - bm[s] * (emu - 1.0)
    base = t * (-lam0 * (eu - 1.0) - lamm * (emu - 1.0)) + n_diff * u
    cap = (level - base) / (1.0 - t) if t < 1.0 else np.inf
    lse = _row_lse(C, r, rest, cap)
    if np.isnan(lse):  # the other rows' part again, at the potentials with row r where it now stands
        _without_row(C, r, rest)
        lse = _row_lse(C, r, rest, cap)
    return base + (1.0 - t) * lse


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _scale_moves(t, phi, offsets, alpha, log_norm_q, beta, rates, C, lik_grad):
    r"""Slice-sample every component's scale ridges:
    :math:`F^{(0)}_r \to c F^{(0)}_r`, :math:`F^{(m)}_r \to F^{(m)}_r / c`.

    The likelihood is constant along a ridge, so its conditional involves the
    prior, ``q_sym`` and the Jacobian only; in :math:`u = \log c` it is
    log-concave for the single-labelling ``q`` (a generalised inverse
    Gaussian in :math:`c`). Slice sampling (Neal 2003) with stepping out
    leaves it exactly invariant.

    ``C`` is filled from ``phi`` first: the relabelling sum couples the
    components, and the work array may hold a rejected proposal's rows. Per
    mode the pieces of ``C`` are products of ``R x n`` and ``n x R`` arrays
    (BLAS), and a move along a ridge rescales one row of each, so a sweep
    costs :math:`O(D R^2)` once, each component :math:`O(2^R R + R^3)` (every
    relabelling, :func:`_without_row`) or each ridge :math:`O(R)` (the identity
    and transpositions, whose sum the sweep carries) once, and each evaluation
    of the conditional :math:`O(R)`. The
    likelihood's gradient ``lik_grad`` (with respect to the factors) is
    carried along the ridges, where it scales by :math:`1/c` and :math:`c`.
    """
    D, R = phi.shape
    N = offsets.shape[0] - 1
    theta = exp_into(phi, np.empty_like(phi))
    # Per mode n: A[n] = phi_n' (alpha_n - 1), B[n] = theta_n' beta_n, their q-density constants, the
    # column sums of alpha_n - 1 and the prior's rate-weighted sums of theta_n.
    A, B = np.empty((2, N, R, R))
    a_sum, lam_sum = np.empty((2, N, R))
    for n in range(N):
        lo, hi = offsets[n], offsets[n + 1]
        A[n] = np.dot(phi[lo:hi].T.copy(), alpha[lo:hi] - 1.0)
        B[n] = np.dot(theta[lo:hi].T.copy(), beta[lo:hi])
        a_sum[n] = (alpha[lo:hi] - 1.0).sum(axis=0)
        lam_sum[n] = np.dot(rates[lo:hi], theta[lo:hi])
    C[:, :] = log_norm_q + (A - B).sum(axis=0)
    a_diff, b0, bm, c_base = np.empty((4, R))
    rest = np.empty(2 * R)
    # Over the identity and the transpositions, the transpositions' sum is kept through the sweep: a move
    # along component r's ridge changes row r of C alone, so only r's own transpositions are summed again.
    swaps = R > EXACT_RELABEL_RANK
    shift, total = _other_swaps(C, -1) if swaps else (0.0, 0.0)
    other = 0.0
    for r in range(R):
        if not swaps:  # the other rows do not move along r's ridges: their part once for all of them
            _without_row(C, r, rest)
        for m in range(1, N):
            c_base[:] = C[r]
            a_diff[:] = a_sum[0] - a_sum[m]
            b0[:] = B[0, r]
            bm[:] = B[m, r]
            lam0 = lam_sum[0, r]
            lamm = lam_sum[m, r]
            n_diff = float(offsets[1] - (offsets[m + 1] - offsets[m]))
            if swaps:
                shift, other = _swaps_without(C, r, shift, total, rest)
            f0 = _ridge_logp(0.0, t, r, c_base, a_diff, b0, bm, lam0, lamm, n_diff, C, rest, -np.inf)
            level = f0 + math.log(np.random.random())
            width = 1.0
            lo = -width * np.random.random()
            hi = lo + width
            for _ in range(30):
                if _ridge_logp(lo, t, r, c_base, a_diff, b0, bm, lam0, lamm, n_diff, C, rest, level) <= level:
                    break
                lo -= width
            for _ in range(30):
                if _ridge_logp(hi, t, r, c_base, a_diff, b0, bm, lam0, lamm, n_diff, C, rest, level) <= level:
                    break
                hi += width
            u = 0.0
            for _ in range(100):
                u = lo + (hi - lo) * np.random.random()
                if _ridge_logp(u, t, r, c_base, a_diff, b0, bm, lam0, lamm, n_diff, C, rest, level) > level:
                    break
                if u < 0.0:
                    lo = u
                else:
                    hi = u
            else:
                u = 0.0
            # Row r of C at the chosen point (the last evaluation may have been elsewhere; its value is not
            # needed), and the pieces that move with it.
            _ridge_logp(u, t, r, c_base, a_diff, b0, bm, lam0, lamm, n_diff, C, rest, np.inf)
            if swaps:
                total = other + _own_swaps(C, r, shift)
                if not 1e-200 < math.exp(-shift) + total < 1e200:  # a stale shift: sum them afresh
                    shift, total = _other_swaps(C, -1)
            eu = math.exp(u)
            emu = 1.0 / eu
            A[0, r] += u * a_sum[0]
            A[m, r] -= u * a_sum[m]
            B[0, r] *= eu
            B[m, r] *= emu
            lam_sum[0, r] *= eu
            lam_sum[m, r] *= emu
            phi[: offsets[1], r] += u
            lik_grad[: offsets[1], r] *= emu
            phi[offsets[m]: offsets[m + 1], r] -= u
            lik_grad[offsets[m]: offsets[m + 1], r] *= eu


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _draw_q(alpha, beta, phi):
    D, R = phi.shape
    for d in range(D):
        for r in range(R):
            phi[d, r] = math.log(max(np.random.gamma(alpha[d, r], 1.0 / beta[d, r]), 1e-300))


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def run_referenced_ladder(dense2, X, coords, vals, offsets, kappa, floor, constant, alpha, beta, rates, inv_mass,
                          temperatures, levels, chained, phi_levels, step_levels, n_burnin, n_keep, n_leapfrog, seed,
                          stream, U_out, accept_out, theta_sum, scale_moves, single):
    r"""Run a chain at every temperature ``temperatures[levels[i]]``, in turn.

    Each chain starts from ``phi_levels[level]`` with step ``step_levels[level]``
    or, when ``chained``, from where the previous level's chain stopped (the
    first from its own entry), and writes its end state and step back: a
    later call with ``chained=False, n_burnin=0`` lengthens the same chains.
    At :math:`t = 0` the draws are exact (from ``q``). Elsewhere ``n_burnin``
    HMC iterations adapt the step size by dual averaging (target acceptance
    0.8) and ``n_keep`` record ``U`` into ``U_out[i]`` and the mean
    acceptance into ``accept_out[i]``. At :math:`t = 1` the kept states'
    factors are added to ``theta_sum[0]`` and their logarithms to
    ``theta_sum[1]`` (a Gamma's sufficient statistics). The momenta are
    :func:`~skevidence.cp.kernels.rng.fill_standard_normal`'s draws from
    ``stream`` (a xoshiro state, advanced in place: a momentum is a large
    share of an iteration's draws); the rest come from numba's generator
    seeded with ``seed``.

    With ``single``, a dense matrix's gradients inside a trajectory are in
    single precision (:func:`~skevidence.cp.kernels.passes.single_dense_pass`):
    the leapfrog map stays reversible and volume-preserving (its end points'
    gradients come with the value, in double precision), so the Metropolis
    step keeps the target exact.

    Returns the number of likelihood gradients spent.
    """
    np.random.seed(seed)
    D, R = alpha.shape
    # q's Gamma draws would never accept a NaN shape: fail here instead of spinning.
    if not (np.all(alpha > 0.0) and np.all(alpha < np.inf) and np.all(beta > 0.0) and np.all(beta < np.inf)):
        raise ValueError("the reference's shapes and rates must be finite and positive")
    N = offsets.shape[0] - 1
    phi = phi_levels[levels[0]].copy()
    step = step_levels[levels[0]]
    theta, grad, lik_grad, lik_grad_new, phi_new, grad_new = [np.empty((D, R)) for _ in range(6)]
    p = np.empty((D, R))
    p_flat, phi_flat, grad_flat = p.reshape(D * R), phi_new.reshape(D * R), grad_new.reshape(D * R)
    inv_mass_flat = np.ascontiguousarray(inv_mass).reshape(D * R)
    sums = np.empty((N, R))
    C = np.empty((R, R))
    log_norm_q = np.zeros(R)  # q's normalising constants, a component's summed
    for d in range(D):
        for r in range(R):
            log_norm_q[r] += alpha[d, r] * math.log(beta[d, r]) - math.lgamma(alpha[d, r])
    sqrt_inv_mass = np.sqrt(inv_mass)
    field = np.empty((2, D, R))  # work array: q's shapes and rates averaged over the relabellings (_assemble)
    n_grad = 0
    for i in range(levels.shape[0]):
        level = levels[i]
        t = temperatures[level]
        if not chained:
            phi[:, :] = phi_levels[level]
            step = step_levels[level]
        if t == 0.0:
            for it in range(n_keep):
                _draw_q(alpha, beta, phi)
                _, U_out[i, it], _ = _state(0.0, dense2, X, coords, vals, offsets, kappa, floor, constant, phi,
                                            theta, grad, lik_grad, sums, alpha, log_norm_q, beta, field, rates, C,
                                            WITH_VALUE, single)
            accept_out[i] = 1.0
            phi_levels[level] = phi
            continue
        logp, U, loglik = _state(t, dense2, X, coords, vals, offsets, kappa, floor, constant, phi, theta, grad,
                                 lik_grad, sums, alpha, log_norm_q, beta, field, rates, C, WITH_VALUE, single)
        n_grad += 1
        # Dual averaging (Hoffman & Gelman 2014) of log step during burn-in.
        mu = math.log(10.0 * step)
        h_bar = 0.0
        log_step_bar = math.log(step)
        n_acc = 0.0
        for it in range(n_burnin + n_keep):
            eps = step * (0.9 + 0.2 * np.random.random())
            fill_standard_normal(stream, p_flat)
            p /= sqrt_inv_mass
            kinetic = 0.5 * np.sum(p * p * inv_mass)
            phi_new[:, :] = phi
            grad_new[:, :] = grad
            logp_new = -np.inf
            U_new = np.nan
            loglik_new = np.nan
            ok = True
            for step_i in range(n_leapfrog):
                # Flat loops, which the compiler vectorises: the momenta's half step and the positions' step
                # (after the gradient, the momenta's other half step).
                outside = 0
                for k in range(D * R):
                    p_k = p_flat[k] + 0.5 * eps * grad_flat[k]
                    p_flat[k] = p_k
                    x = phi_flat[k] + eps * inv_mass_flat[k] * p_k
                    phi_flat[k] = x
                    outside += not (-700.0 < x < 700.0)
                if outside:
                    ok = False
                    break
                # The log target is needed at the end of the trajectory only.
                last = step_i == n_leapfrog - 1
                logp_new, U_new, loglik_new = _state(t, dense2, X, coords, vals, offsets, kappa, floor, constant,
                                                     phi_new, theta, grad_new, lik_grad_new, sums, alpha, log_norm_q,
                                                     beta, field, rates, C, last, single)
                n_grad += 1
                if last and not np.isfinite(logp_new):
                    ok = False
                    break
                for k in range(D * R):
                    p_flat[k] += 0.5 * eps * grad_flat[k]
            acc_prob = 0.0
            if ok:
                log_ratio = logp_new - 0.5 * np.sum(p * p * inv_mass) - logp + kinetic
                if np.isfinite(log_ratio):
                    acc_prob = 1.0 if log_ratio >= 0.0 else math.exp(log_ratio)
                if np.random.random() < acc_prob:
                    phi[:, :] = phi_new
                    grad[:, :] = grad_new
                    lik_grad[:, :] = lik_grad_new
                    logp = logp_new
                    U = U_new
                    loglik = loglik_new
            if scale_moves:
                # The likelihood is the same along the ridges: no gradient pass is needed, and the moves leave
                # C at the new point.
                _scale_moves(t, phi, offsets, alpha, log_norm_q, beta, rates, C, lik_grad)
                exp_into(phi, theta)
                logp, U = _assemble(t, phi, theta, loglik, lik_grad, grad, alpha, log_norm_q, beta, field, rates, C,
                                    WITH_VALUE, False)
            if it < n_burnin:
                m = it + 1.0
                h_bar = (1.0 - 1.0 / (m + 10.0)) * h_bar + (0.8 - acc_prob) / (m + 10.0)
                log_step = mu - math.sqrt(m) / 0.05 * h_bar
                weight = m**-0.75
                log_step_bar = weight * log_step + (1.0 - weight) * log_step_bar
                step = math.exp(log_step)
                if it == n_burnin - 1:
                    step = math.exp(log_step_bar)
            else:
                n_acc += acc_prob
                U_out[i, it - n_burnin] = U
                if t == 1.0:
                    theta_sum[0] += np.exp(phi)
                    theta_sum[1] += phi
        accept_out[i] = n_acc / max(n_keep, 1)
        phi_levels[level] = phi
        step_levels[level] = step
    return n_grad
