"""Referenced TI: kernels against NumPy twins, evidence against closed forms and the SMC, the budget."""

import itertools
import math
import time
import warnings

import numpy as np
import pytest
from numba import njit
from scipy import sparse, special, stats
from sklearn.exceptions import ConvergenceWarning

from cp_twins import naive_intensity, numeric_gradient, stacked_factors
from naive_cp import PyXoshiro
from poisson_nmf_exact import rank1_log_evidence
from poisson_parafac_exact import rank1_log_evidence as rank1_log_evidence_cp
from skevidence import BayesianNMFRankSelector, PoissonNMF, PoissonPARAFAC
from skevidence.cp.data import CPData
from skevidence.cp.kernels.hmc import (
    EXACT_RELABEL_RANK,
    _row_lse,
    _scale_moves,
    _without_row,
    relabelling_weights,
    run_referenced_ladder,
    symmetric_log_q,
)
from skevidence.cp.kernels.passes import entry_pass, log_likelihood
from skevidence.cp.kernels.rng import seed_streams
from skevidence.cp.kernels.vb import _rescale_components
from skevidence.cp.reference import variational_reference
from skevidence.cp.rti import referenced_ti_log_evidence
from skevidence.evidence._ladder import rti_temperatures, simpson_weights

# ----------------------------------------------------------------------------- NumPy twins


def naive_log_likelihood(X, F, offsets):
    V = naive_intensity(F, offsets, X.shape)
    return float(np.sum(stats.poisson.logpmf(X, V)))


@pytest.mark.parametrize("shape", [(5, 4), (4, 3, 5), (3, 4, 2, 3)])
@pytest.mark.parametrize("as_sparse", [False, True])
def test_cp_log_likelihood_matches_numpy(shape, as_sparse):
    rng = np.random.default_rng(0)
    R = 3
    F, offsets = stacked_factors(rng, shape, R)
    X = rng.poisson(2.0, size=shape).astype(np.float64)
    data = CPData.from_array(sparse.coo_array(X) if as_sparse else X)
    dense2, Xd, coords, vals, _, kappa, floor = data.pass_args()
    grad = np.empty_like(F)
    sums = np.empty((len(shape), R))
    value = log_likelihood(dense2, Xd, coords, vals, F, offsets, kappa, floor, data.constant, grad, sums, True)
    assert value == pytest.approx(naive_log_likelihood(X, F, offsets), rel=1e-12)
    expected = numeric_gradient(lambda G: naive_log_likelihood(X, G, offsets), F)
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-6)
    # Without the value, the same gradient.
    grad2 = np.empty_like(F)
    log_likelihood(dense2, Xd, coords, vals, F, offsets, kappa, floor, data.constant, grad2, sums, False)
    np.testing.assert_allclose(grad2, grad, rtol=1e-12)


@pytest.mark.parametrize("shape", [(40, 30), (5, 4, 3)])
@pytest.mark.parametrize("kappa", [0.0, 1.0, 2.5])
def test_single_precision_gradient_is_the_double_within_its_rounding(shape, kappa):
    """A trajectory's gradient in single precision: the double's within single rounding on a dense matrix, the
    double itself elsewhere (a tensor's passes have no single-precision path)."""
    rng = np.random.default_rng(1)
    R = 6
    F, offsets = stacked_factors(rng, shape, R)
    X = rng.poisson(naive_intensity(F, offsets, shape)) + (0.0 if kappa == 0.0 else 0.5)
    data = CPData.from_array(X, kappa)
    dense2, Xd, coords, vals, _, _, floor = data.pass_args()
    grads = [np.empty_like(F) for _ in range(2)]
    sums = np.empty((len(shape), R))
    for grad, single in zip(grads, (False, True)):
        log_likelihood(dense2, Xd, coords, vals, F, offsets, kappa, floor, data.constant, grad, sums, False, single)
    if dense2:
        scale = np.abs(grads[0]).max()
        np.testing.assert_allclose(grads[1], grads[0], rtol=0, atol=1e-5 * scale)
        assert not np.array_equal(grads[1], grads[0])
    else:
        np.testing.assert_array_equal(grads[1], grads[0])


@pytest.mark.parametrize("shape", [(9, 7), (6, 5, 4)])
@pytest.mark.parametrize("kappa", [0.0, 1.0, 2.5])
def test_unrolled_entries_passes_are_the_general_loop(shape, kappa):
    """A matrix's and a three-way tensor's listed entries take loops of their own; they are the N-mode loop's,
    here with modes of size 1 added up to four, whose factors are 1 (the products gain factors 1, exactly)."""
    rng = np.random.default_rng(4)
    R = 4
    F, offsets = stacked_factors(rng, shape, R)
    X = rng.poisson(1.0, size=shape) * (rng.random(shape) < 0.4) if kappa == 0.0 else rng.gamma(kappa, 1.0, shape)
    data = CPData.from_array(sparse.coo_array(X) if kappa == 0.0 else X, kappa)  # the entries listed
    extra = 4 - len(shape)
    F4 = np.vstack([F, np.ones((extra, R))])
    offsets4 = np.append(offsets, offsets[-1] + np.arange(1, extra + 1))
    coords4 = np.hstack([data.coords, np.zeros((data.vals.size, extra), dtype=np.int64)])
    for with_value in (True, False):
        out, out4 = np.empty_like(F), np.empty_like(F4)
        value = entry_pass(False, np.zeros((1, 1)), data.coords, data.vals, F, offsets, kappa, 0.0, out, with_value)
        value4 = entry_pass(False, np.zeros((1, 1)), coords4, data.vals, F4, offsets4, kappa, 0.0, out4, with_value)
        assert value == pytest.approx(value4, rel=1e-14)
        np.testing.assert_allclose(out, out4[:-extra], rtol=1e-14)


def naive_log_q_sym(theta, alpha, beta, perms=None):
    """log q_sym by brute force over ``perms`` (default: every relabelling): component r of theta under q's
    component p(r)."""
    R = theta.shape[1]
    perms = np.array(list(itertools.permutations(range(R))) if perms is None else perms)
    C = np.array([[np.sum(stats.gamma.logpdf(theta[:, r], alpha[:, s], scale=1.0 / beta[:, s])) for s in range(R)]
                  for r in range(R)])
    return special.logsumexp(C[np.arange(R), perms].sum(axis=1)) - math.lgamma(R + 1)


@pytest.mark.parametrize("R, scale", [(1, 1.0), (3, 1.0), (5, 30.0), (6, 300.0), (7, 3.0)])
def test_relabelling_weights_match_brute_force(R, scale):
    """The log-sum over every relabelling and each pairing's probability, against a sum over R! terms: entries
    of one scale, and far apart (300: most relabellings' terms fall below the smallest double)."""
    rng = np.random.default_rng(R)
    C = rng.normal(scale=scale, size=(R, R)) - 5000.0
    perms = np.array(list(itertools.permutations(range(R))))
    terms = C[np.arange(R), perms].sum(axis=1)
    weights = special.softmax(terms)
    expected = sum(w * np.eye(R)[perm] for w, perm in zip(weights, perms))
    P = np.empty((R, R))
    assert relabelling_weights(C, P) == pytest.approx(special.logsumexp(terms), rel=1e-12)
    np.testing.assert_allclose(P, expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(P.sum(axis=0), 1.0, rtol=1e-12)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("R, spread", [(1, 1.0), (3, 1.0), (7, 1.0), (7, 400.0), (8, 20.0)])
def test_symmetric_log_q_matches_numpy(R, spread):
    """Over every relabelling: components that overlap, that stand apart, or in between."""
    rng = np.random.default_rng(R)
    D = 7
    alpha = spread * (rng.gamma(3.0, 1.0, size=(D, R)) + 0.5)
    beta = alpha / np.exp(rng.normal(scale=1.0 if spread > 1.0 else 0.3, size=(D, R)))
    theta = rng.gamma(alpha) / beta
    log_norm = np.sum(alpha * np.log(beta) - special.gammaln(alpha), axis=0)
    value = symmetric_log_q(np.log(theta), theta, alpha, log_norm, beta, np.empty((R, R)))
    assert value == pytest.approx(naive_log_q_sym(theta, alpha, beta), rel=1e-12, abs=1e-9)


def identity_and_transpositions(R):
    """The relabellings summed above ``EXACT_RELABEL_RANK``, listed: the identity, then every transposition."""
    listed = [np.arange(R)]
    for a, b in itertools.combinations(range(R), 2):
        p = np.arange(R)
        p[[a, b]] = b, a
        listed.append(p)
    return np.array(listed)


@pytest.mark.parametrize("R", [EXACT_RELABEL_RANK + 1, EXACT_RELABEL_RANK + 3])
def test_transpositions_are_summed_in_closed_form(R):
    """Above ``EXACT_RELABEL_RANK`` the sum runs over the identity and every transposition."""
    rng = np.random.default_rng(R)
    D = 6
    alpha = rng.gamma(3.0, 1.0, size=(D, R)) + 0.5
    beta = rng.gamma(3.0, 1.0, size=(D, R))
    theta = rng.gamma(2.0, 0.5, size=(D, R))
    log_norm = np.sum(alpha * np.log(beta) - special.gammaln(alpha), axis=0)
    value = symmetric_log_q(np.log(theta), theta, alpha, log_norm, beta, np.empty((R, R)))
    assert value == pytest.approx(naive_log_q_sym(theta, alpha, beta, identity_and_transpositions(R)), rel=1e-12)


@pytest.mark.parametrize("R, scale", [(EXACT_RELABEL_RANK + 1, 3.0), (1, 3.0), (3, 3.0), (8, 3.0), (8, 300.0)])
def test_one_row_changed_costs_one_row(R, scale):
    """The ridge moves' O(R) update of the relabelling sum from the other rows' part equals the whole sum.

    Over every relabelling (up to ``EXACT_RELABEL_RANK``; at ``scale=300`` the matchings that count lie hundreds
    of nats below the rows' largest entries) and over the identity and the transpositions (above).
    """
    rng = np.random.default_rng(R)
    C = rng.normal(scale=scale, size=(R, R))
    summed = (np.array(list(itertools.permutations(range(R)))) if R <= EXACT_RELABEL_RANK
              else identity_and_transpositions(R))
    rest = np.empty(2 * R)
    for r in sorted({0, R // 2, R - 1}):
        _without_row(C, r, rest)
        C[r] += rng.normal(size=R)  # only row r moves along its ridge
        brute = special.logsumexp(C[np.arange(R), summed].sum(axis=1))
        assert _row_lse(C, r, rest, -np.inf) == pytest.approx(brute, rel=1e-12)


@pytest.mark.parametrize("cap", [-np.inf, 900.0, 1001.0, 2000.0, np.inf])
def test_a_far_relabelling_row_r_brings_up_is_taken_again(cap):
    """A relabelling whose other rows' part lies 1000 nats below the rest (lost below the smallest double), which
    row ``r``'s move brings to the top. The sum says so (NaN), unless it lies below ``cap`` and a bound above it
    does too (all a slice sampler asks); the other rows' part taken again gives it exactly."""
    C = np.full((3, 3), -1000.0)
    np.fill_diagonal(C, 0.0)
    rest = np.empty(6)
    _without_row(C, 0, rest)
    C[0, 1] = 2000.0
    brute = special.logsumexp(C[np.arange(3), np.array(list(itertools.permutations(range(3))))].sum(axis=1))
    value = _row_lse(C, 0, rest, cap)
    if brute < cap and not np.isnan(value):
        assert brute - 1e-9 <= value <= cap
    else:
        assert np.isnan(value)
        _without_row(C, 0, rest)
        assert _row_lse(C, 0, rest, cap) == pytest.approx(brute, rel=1e-12)


@njit
def _seed_numba(seed):
    np.random.seed(seed)  # noqa: NPY002 (numba's generator has the legacy API only)


def test_ridge_moves_keep_their_target():
    """Slice moves along the scale ridges sample the target restricted to them, whatever the work array holds.

    Two components whose ``q`` factors overlap in part, so that the
    relabelling sum couples them; at ``t = 0.5`` the ridge target is
    ``(prior)^t q_sym^(1 - t)`` times the Jacobian (the likelihood is constant
    on the ridges). The moves get garbage in ``C`` every call, as after a
    rejected HMC proposal; the two ridge coordinates' means and variances
    must match the target's, computed on a grid.
    """
    rng = np.random.default_rng(3)
    R, t = 2, 0.5
    offsets = np.array([0, 4, 9], dtype=np.int64)
    D = offsets[-1]
    alpha = np.repeat(rng.uniform(2.0, 6.0, size=(D, 1)), R, axis=1) * rng.uniform(0.5, 1.5, size=(D, R))
    beta = np.repeat(rng.uniform(1.0, 3.0, size=(D, 1)), R, axis=1) * rng.uniform(0.5, 1.5, size=(D, R))
    rates = np.full(D, 0.7)
    log_norm = np.sum(alpha * np.log(beta) - special.gammaln(alpha), axis=0)
    phi0 = np.log(rng.gamma(alpha) / beta)

    def shifted(u):
        phi = phi0.copy()
        phi[:4] += u
        phi[4:] -= u
        return phi

    def log_target(u):
        phi = shifted(u)
        theta = np.exp(phi)
        log_prior = np.sum(np.log(rates)[:, None] - rates[:, None] * theta)
        return t * log_prior + (1 - t) * naive_log_q_sym(theta, alpha, beta) + phi.sum()

    grid = np.linspace(-3.0, 3.0, 121)
    logp = np.array([[log_target(np.array([a, b])) for b in grid] for a in grid])
    p = np.exp(logp - logp.max())
    p /= p.sum()
    moments = [(np.sum(p.sum(axis=1 - r) * grid), np.sum(p.sum(axis=1 - r) * grid**2)) for r in range(R)]

    _seed_numba(0)
    phi = phi0.copy()
    lik_grad = np.ones((D, R))
    n = 20000
    draws = np.empty((n, R))
    for i in range(n):
        C = rng.normal(scale=50.0, size=(R, R))
        _scale_moves(t, phi, offsets, alpha, log_norm, beta, rates, C, lik_grad)
        draws[i] = phi[0] - phi0[0]
    # The likelihood's gradient is carried along: W by 1/c, H by c.
    np.testing.assert_allclose(lik_grad[:4], np.exp(-draws[-1])[None].repeat(4, 0), rtol=1e-9)
    np.testing.assert_allclose(lik_grad[4:], np.exp(draws[-1])[None].repeat(5, 0), rtol=1e-9)
    for r in range(R):
        mean, second = moments[r]
        sd = math.sqrt(second - mean**2)
        # Batch means: the moves are nearly independent, 20 batches allow for what is left.
        batches = draws[:, r].reshape(20, -1).mean(axis=1)
        se = batches.std(ddof=1) / math.sqrt(20)
        assert abs(draws[:, r].mean() - mean) < 4 * se + 1e-3
        assert draws[:, r].std() == pytest.approx(sd, rel=0.05)


def naive_log_likelihood_gradient(X, F, offsets):
    """The Poisson log-likelihood's gradient with respect to the stacked factors, by einsum."""
    ratio = X / naive_intensity(F, offsets, X.shape) - 1.0
    factors = [F[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    letters = "abcdef"[: X.ndim]
    grads = []
    for m in range(X.ndim):
        others = [f"{c}r" for k, c in enumerate(letters) if k != m]
        spec = ",".join([letters, *others]) + f"->{letters[m]}r"
        grads.append(np.einsum(spec, ratio, *(f for k, f in enumerate(factors) if k != m)))
    return np.concatenate(grads)


def naive_referenced_ladder(X, offsets, alpha, beta, rates, inv_mass, perms, temperatures, levels, chained,
                            phi_levels, step_levels, n_burnin, n_keep, n_leapfrog, seed, stream, U_out, accept_out,
                            theta_sum, restart=None):
    """NumPy twin of ``run_referenced_ladder`` without the ridge moves, at temperatures above 0.

    HMC in log theta on q_sym^(1 - t) (p(theta) p(X | theta))^t times the
    Jacobian, the leapfrog field the exact gradient (q's components averaged over every relabelling, weighted
    by brute force) up to EXACT_RELABEL_RANK, and the identity's ``q`` above (``perms`` given); dual averaging of
    the step during burn-in. Its uniforms come from the legacy ``RandomState`` whose stream numba's
    ``np.random`` reproduces, its momenta from ``stream`` (xoshiro256** and the ziggurat, in Python).
    ``restart``: the kernel's ``(phi_levels, step_levels)`` after the same call, from which each chained level
    starts instead of from where the twin's previous one stopped.
    """
    rs, normals = np.random.RandomState(seed), PyXoshiro(stream)
    lam = rates[:, None]
    R = alpha.shape[1]

    def averaged(t, theta):
        """q's shapes and rates averaged over every relabelling, weighted by its term of q_sym."""
        if perms is not None or t == 1.0:
            return alpha, beta
        every = np.array(list(itertools.permutations(range(R))))
        C = np.array([[np.sum(stats.gamma.logpdf(theta[:, r], alpha[:, s], scale=1.0 / beta[:, s]))
                       for s in range(R)] for r in range(R)])
        weights = special.softmax(C[np.arange(R), every].sum(axis=1))
        P = sum(w * np.eye(R)[perm] for w, perm in zip(weights, every))  # P[r, s]: the weight of r -> s
        return alpha @ P.T, beta @ P.T

    def state(t, phi):
        theta = np.exp(phi)
        loglik = naive_log_likelihood(X, theta, offsets)
        lik_grad = naive_log_likelihood_gradient(X, theta, offsets)
        log_q = naive_log_q_sym(theta, alpha, beta, perms)
        U = loglik + np.sum(np.log(lam) - lam * theta) - log_q
        a, b = averaged(t, theta)
        field = t * theta * (lik_grad - lam) + (1.0 - t) * ((a - 1.0) - b * theta) + 1.0
        return t * U + log_q + phi.sum(), U, field

    n_grad = 0
    phi, step = phi_levels[levels[0]].copy(), step_levels[levels[0]]
    for i, level in enumerate(levels):
        t = temperatures[level]
        if not chained:
            phi, step = phi_levels[level].copy(), step_levels[level]
        elif i and restart is not None:  # from where the kernel's previous level stopped
            phi, step = restart[0][levels[i - 1]].copy(), restart[1][levels[i - 1]]
        logp, U, grad = state(t, phi)
        n_grad += 1
        mu, h_bar, log_step_bar, n_acc = math.log(10.0 * step), 0.0, math.log(step), 0.0
        for it in range(n_burnin + n_keep):
            eps = step * (0.9 + 0.2 * rs.random_sample())
            p = normals.standard_normals(phi.size).reshape(phi.shape) / np.sqrt(inv_mass)
            kinetic = 0.5 * np.sum(p * p * inv_mass)
            phi_new, grad_new, ok = phi.copy(), grad.copy(), True
            for _ in range(n_leapfrog):
                p = p + 0.5 * eps * grad_new
                phi_new = phi_new + eps * inv_mass * p
                if not np.all(np.abs(phi_new) < 700.0):
                    ok = False
                    break
                logp_new, U_new, grad_new = state(t, phi_new)
                n_grad += 1
                p = p + 0.5 * eps * grad_new
            acc_prob = 0.0
            if ok:
                log_ratio = logp_new - 0.5 * np.sum(p * p * inv_mass) - logp + kinetic
                acc_prob = math.exp(min(log_ratio, 0.0)) if np.isfinite(log_ratio) else 0.0
                if rs.random_sample() < acc_prob:
                    phi, grad, logp, U = phi_new, grad_new, logp_new, U_new
            if it < n_burnin:
                m = it + 1.0
                h_bar = (1.0 - 1.0 / (m + 10.0)) * h_bar + (0.8 - acc_prob) / (m + 10.0)
                log_step = mu - math.sqrt(m) / 0.05 * h_bar
                log_step_bar = m**-0.75 * log_step + (1.0 - m**-0.75) * log_step_bar
                step = math.exp(log_step_bar if it == n_burnin - 1 else log_step)
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


@pytest.mark.parametrize("shape, R, as_sparse", [((6, 5), 2, False), ((4, 3, 5), 3, True), ((7, 6), 7, False),
                                                  ((12, 9), 11, False)])
def test_referenced_ladder_matches_numpy(shape, R, as_sparse):
    """The HMC ladder kernel (heating, then lengthening the same chains) against its NumPy twin.

    Every relabelling at R = 2, 3, 7; the identity and transpositions in closed form at R = 11.
    """
    rng = np.random.default_rng(len(shape) + R)
    F, offsets = stacked_factors(rng, shape, R)
    X = rng.poisson(naive_intensity(F, offsets, shape)).astype(np.float64)
    data = CPData.from_array(sparse.coo_array(X) if as_sparse else X)
    D = offsets[-1]
    alpha = rng.uniform(2.0, 8.0, size=(D, R))
    beta = alpha / (F * rng.uniform(0.7, 1.4, size=(D, R)))
    rates = np.full(D, 0.8)
    inv_mass = special.polygamma(1, alpha)
    sym_perms = None if R <= EXACT_RELABEL_RANK else identity_and_transpositions(R)
    temperatures, _ = rti_temperatures(4)
    levels = np.arange(1, temperatures.size)
    phi = np.repeat(np.log(alpha / beta)[None], temperatures.size, axis=0)
    steps = np.full(temperatures.size, 0.1)
    phi_levels, step_levels, theta_sum = phi.copy(), steps.copy(), np.zeros((2, D, R))
    # Heat from q's mean, chained, with burn-in; then lengthen the same chains without it. The twin runs each
    # call from the kernel's state before it, and each chained level from where the kernel's previous level
    # stopped: the same draws and the same accept/reject decisions, the trajectories differing by rounding only
    # (fastmath, another order of sums), which the leapfrog amplifies to ~1e-6 within a level (where q's
    # components overlap and the chains move between labellings, the dynamics amplify it faster, and across
    # levels it would grow to order one). Any error in the kernel's algebra would show as a difference of order one.
    for chained, n_burnin, n_keep, seed in ((True, 15, 10, 11), (False, 0, 8, 12)):
        before = (phi_levels, step_levels, theta_sum)
        outs = []
        for name in ("numba", "numpy"):
            pl, sl, ts = (a.copy() for a in before)
            U, accept = np.zeros((levels.size, n_keep)), np.zeros(levels.size)
            if name == "numba":
                n_grad = run_referenced_ladder(
                    *data.pass_args(), data.constant, alpha, beta, rates, inv_mass, temperatures, levels, chained,
                    pl, sl, n_burnin, n_keep, 3, seed, seed_streams(np.random.SeedSequence(seed), 1)[0], U, accept,
                    ts, False, False)
                kernel = (pl, sl)
            else:
                n_grad = naive_referenced_ladder(X, offsets, alpha, beta, rates, inv_mass, sym_perms, temperatures,
                                                 levels, chained, pl, sl, n_burnin, n_keep, 3, seed,
                                                 seed_streams(np.random.SeedSequence(seed), 1)[0], U, accept, ts,
                                                 restart=kernel)
            outs.append((n_grad, U, accept, pl, sl, ts))
        (n_grad, U, accept, pl, sl, ts), (n_grad2, U2, accept2, pl2, sl2, ts2) = outs
        assert n_grad == n_grad2
        np.testing.assert_allclose(U, U2, rtol=1e-4)
        np.testing.assert_allclose(accept, accept2, rtol=1e-4, atol=1e-6)
        assert 0.0 < accept.min() and accept.max() < 1.0  # proposals both accepted and rejected
        np.testing.assert_allclose(pl, pl2, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(sl, sl2, rtol=1e-4)
        np.testing.assert_allclose(ts, ts2, rtol=1e-4, atol=1e-6)
        phi_levels, step_levels, theta_sum = pl, sl, ts
    assert theta_sum[0].any() and theta_sum[1].any()


def test_referenced_ladder_refuses_a_reference_that_is_not_finite():
    """A NaN shape would keep q's Gamma draws rejecting for ever: the kernel fails at once instead."""
    data = CPData.from_array(np.ones((3, 2)))
    alpha, beta = np.ones((5, 1)), np.ones((5, 1))
    alpha[2, 0] = np.nan
    temperatures, _ = rti_temperatures(4)
    phi = np.zeros((temperatures.size, 5, 1))
    with pytest.raises(ValueError, match="finite and positive"):
        run_referenced_ladder(*data.pass_args(), data.constant, alpha, beta, np.ones(5), np.ones((5, 1)),
                              temperatures, np.arange(temperatures.size),
                              True, phi, np.full(temperatures.size, 0.1), 2, 4, 2, 0, np.ones(4, dtype=np.uint64),
                              np.zeros((5, 4)),
                              np.zeros(5), np.zeros((5, 1)), False, False)


def test_simpson_and_ladder():
    t, dt = rti_temperatures(16)
    assert t[0] == 0.0 and t[-1] == 1.0 and np.all(np.diff(t) > 0)
    # Simpson's rule in k of f(t(k)) t'(k): t(k) is a quintic, so the rule is
    # not exact, but converges at fourth order.
    w = simpson_weights(16)
    assert float(w @ dt) == pytest.approx(1.0, abs=1e-3)
    t64, dt64 = rti_temperatures(64)
    assert float(simpson_weights(64) @ (t64 * dt64)) == pytest.approx(0.5, abs=1e-6)
    with pytest.raises(ValueError, match="even"):
        simpson_weights(5)


def test_variational_bound_is_below_the_closed_form_at_rank1():
    rng = np.random.default_rng(2)
    X = rng.poisson(2 * np.outer(rng.exponential(size=12), rng.exponential(size=9)))
    bound, alpha, beta, bounds = variational_reference(X, 1, 1.0, n_starts=3, random_state=0)
    assert bound <= rank1_log_evidence(X, 1.0, 1.0) + 1e-9
    assert bound == bounds.max() and alpha.shape == beta.shape == (21, 1)



def naive_variational_bound(X, alpha, beta, rates, offsets):
    """The mean-field bound of Poisson CP with the sources at their optimum for q (NumPy, every entry)."""
    G = np.exp(special.digamma(alpha) - np.log(beta))
    means = alpha / beta
    modes = [slice(lo, hi) for lo, hi in zip(offsets[:-1], offsets[1:])]
    value = 0.0
    for idx in np.ndindex(X.shape):
        g = np.prod([G[m.start + i] for m, i in zip(modes, idx)], axis=0).sum()
        value += X[idx] * np.log(g) - special.gammaln(X[idx] + 1.0)
    value -= np.prod([means[m].sum(axis=0) for m in modes], axis=0).sum()
    value += np.sum(np.log(rates)[:, None] - rates[:, None] * means)
    value += np.sum(alpha - np.log(beta) + special.gammaln(alpha) + (1.0 - alpha) * special.digamma(alpha))
    return value


def test_scale_ridge_move_maximises_the_bound_along_every_ridge():
    """The closed-form move takes the bound to its maximum along each component's scale ridges: not lower
    than before, and lower a little way along any ridge either side."""
    rng = np.random.default_rng(7)
    shape, R = (5, 4, 3), 2
    offsets = np.concatenate([[0], np.cumsum(shape)])
    X = rng.poisson(2.0, size=shape).astype(np.float64)
    alpha = rng.gamma(3.0, 1.0, size=(offsets[-1], R)) + 0.5
    beta = rng.gamma(3.0, 1.0, size=(offsets[-1], R))
    rates = rng.uniform(0.5, 2.0, size=offsets[-1])
    before = naive_variational_bound(X, alpha, beta, rates, offsets)
    _rescale_components(alpha, beta, rates, offsets)
    best = naive_variational_bound(X, alpha, beta, rates, offsets)
    assert best > before
    for r, m, c in itertools.product(range(R), (1, 2), (0.99, 1.01)):
        moved = beta.copy()
        moved[offsets[0]:offsets[1], r] /= c
        moved[offsets[m]:offsets[m + 1], r] *= c
        assert naive_variational_bound(X, alpha, moved, rates, offsets) < best


def test_variational_fit_is_converged_at_rank1():
    """At rank 1 the fit is coordinate ascent plus the ridge move: a few sweeps reach the maximum, which no
    start then beats (every start the same bound)."""
    rng = np.random.default_rng(3)
    X = rng.poisson(20 * np.outer(rng.exponential(size=40), rng.exponential(size=30)))
    _, _, _, bounds = variational_reference(X, 1, 1.0, n_starts=4, random_state=0)
    np.testing.assert_allclose(bounds, bounds.max(), rtol=1e-7)

# ----------------------------------------------------------------------------- evidence


@pytest.mark.parametrize("seed", range(4))
def test_rank1_nmf_matches_closed_form(seed):
    rng = np.random.default_rng(seed)
    X = rng.poisson(2 * np.outer(rng.exponential(size=30), rng.exponential(size=20)))
    result = referenced_ti_log_evidence(X, 1, 1.0, random_state=seed)
    exact = rank1_log_evidence(X, 1.0, 1.0)
    assert result.method == "rti" and result.diagnostics["converged"]
    assert abs(result.log_evidence - exact) <= 4 * result.std_error


@pytest.mark.parametrize("seed", range(2))
def test_single_precision_trajectories_keep_the_closed_form(seed, monkeypatch):
    """With every trajectory's inner gradients in single precision (on any size), rank 1 still lies within its
    error bar of the closed form: the Metropolis step keeps the target exact."""
    from skevidence.cp import data as cp_data

    rng = np.random.default_rng(seed)
    X = rng.poisson(2 * np.outer(rng.exponential(size=30), rng.exponential(size=20)))
    double = referenced_ti_log_evidence(X, 1, 1.0, random_state=seed)
    monkeypatch.setattr(cp_data, "SINGLE_PRECISION_SIZE", 0)
    result = referenced_ti_log_evidence(X, 1, 1.0, random_state=seed)
    assert result.log_evidence != double.log_evidence  # other trajectories: the single path ran
    assert abs(result.log_evidence - rank1_log_evidence(X, 1.0, 1.0)) <= 4 * result.std_error
    np.testing.assert_allclose(result.diagnostics["acceptance"], double.diagnostics["acceptance"], atol=0.1)


@pytest.mark.parametrize("seed", range(3))
def test_rank1_cp_matches_closed_form(seed):
    rng = np.random.default_rng(seed)
    X = rng.poisson(np.einsum("i,j,k->ijk", rng.exponential(size=10), rng.exponential(size=12),
                              2 * rng.exponential(size=8)))
    result = referenced_ti_log_evidence(X, 1, 0.5, random_state=seed)
    exact = rank1_log_evidence_cp(X, 0.5)
    assert abs(result.log_evidence - exact) <= 4 * result.std_error


def test_estimators_default_to_the_referenced_path_at_rank1():
    rng = np.random.default_rng(5)
    X = rng.poisson(2 * np.outer(rng.exponential(size=25), rng.exponential(size=15)))
    nmf = PoissonNMF(random_state=0).fit(X)
    assert nmf.result_.method == "rti"
    assert abs(nmf.log_evidence_ - rank1_log_evidence(X, 1.0, 1.0)) <= 4 * nmf.log_evidence_std_
    assert nmf.components_.shape == (1, 15)
    T = rng.poisson(np.einsum("i,j,k->ijk", rng.exponential(size=6), rng.exponential(size=5),
                              3 * rng.exponential(size=4)))
    cp = PoissonPARAFAC(prior_rate=0.5, random_state=0).fit(T)
    assert abs(cp.log_evidence_ - rank1_log_evidence_cp(T, 0.5)) <= 4 * cp.log_evidence_std_


def test_sparse_and_dense_agree():
    rng = np.random.default_rng(6)
    X = rng.poisson(0.3 * rng.exponential(size=(20, 2)) @ rng.exponential(size=(2, 15)))
    dense = referenced_ti_log_evidence(X, 2, 1.0, random_state=0)
    coo = referenced_ti_log_evidence(sparse.csr_array(X), 2, 1.0, random_state=0)
    # The same chains until rounding (the likelihood is summed in another
    # order) flips an acceptance; then independent estimates of one number.
    assert abs(coo.log_evidence - dense.log_evidence) <= 3 * math.hypot(coo.std_error, dense.std_error)
    assert coo.diagnostics["reference_bound"] == pytest.approx(dense.diagnostics["reference_bound"], rel=1e-10)


@pytest.mark.slow
def test_rank2_matches_smc():
    from skevidence.cp.smc import smc_log_evidence

    rng = np.random.default_rng(3)
    X = rng.poisson(rng.exponential(size=(20, 2)) @ rng.exponential(size=(2, 15)))
    rti = referenced_ti_log_evidence(X, 2, 1.0, random_state=0)
    smc = smc_log_evidence(X, 2, (1.0, 1.0), random_state=0)
    assert abs(rti.log_evidence - smc.log_evidence) <= 3 * math.hypot(rti.std_error, smc.std_error)


def test_error_bar_pieces_and_rounds():
    rng = np.random.default_rng(7)
    X = rng.poisson(rng.exponential(size=(15, 2)) @ rng.exponential(size=(2, 12)))
    result = referenced_ti_log_evidence(X, 2, 1.0, random_state=0, tol=0.5)
    d = result.diagnostics
    pieces = math.sqrt(d["mc_error"] ** 2 + d["lag_error"] ** 2 + d["quadrature_error"] ** 2 + d["mode_error"] ** 2)
    assert result.std_error == pytest.approx(pieces)
    assert d["converged"] and result.std_error <= 0.5
    assert d["rounds"][-1]["error"] == pytest.approx(result.std_error)
    assert d["elbo"] <= result.log_evidence + 4 * result.std_error
    # Same seed, same number.
    again = referenced_ti_log_evidence(X, 2, 1.0, random_state=0, tol=0.5)
    assert again.log_evidence == result.log_evidence


def test_overfitted_rank_converges_in_the_first_round():
    # Rank 3 of a rank-2 matrix: the components compete, the slowest case at
    # small sizes. With HMC's mass set to q's variance of log θ the first
    # round (400 draws) reaches tol; with the precision in its place (a bug
    # once) it took 6,400 draws here and ~10^5 on larger matrices.
    rng = np.random.default_rng(0)
    X = rng.poisson(2 * rng.exponential(size=(30, 2)) @ rng.exponential(size=(2, 20)))
    result = referenced_ti_log_evidence(X, 3, 1.0, random_state=0)
    assert result.diagnostics["converged"]
    assert result.diagnostics["n_keep"] == 400


def test_max_time_warns_and_records_it():
    rng = np.random.default_rng(8)
    X = rng.poisson(rng.exponential(size=(15, 3)) @ rng.exponential(size=(3, 12)))
    with pytest.warns(ConvergenceWarning, match="max_time"):
        result = referenced_ti_log_evidence(X, 3, 1.0, random_state=0, tol=1e-3, max_time=1e-3)
    assert not result.diagnostics["converged"]
    assert result.std_error > 1e-3


def test_max_refinements_bounds_the_work_deterministically():
    rng = np.random.default_rng(8)
    X = rng.poisson(rng.exponential(size=(15, 3)) @ rng.exponential(size=(3, 12)))
    runs = []
    for _ in range(2):
        with pytest.warns(ConvergenceWarning, match="max_refinements=1"):
            runs.append(referenced_ti_log_evidence(X, 3, 1.0, random_state=0, tol=1e-6, max_refinements=1))
    result = runs[0]
    assert not result.diagnostics["converged"] and "max_refinements" in result.diagnostics["stop_reason"]
    assert len(result.diagnostics["rounds"]) == 2  # the first round and one refinement
    assert runs[1].log_evidence == result.log_evidence  # no clock in the decision: the same numbers
    converged = referenced_ti_log_evidence(X, 1, 1.0, random_state=0)
    assert converged.diagnostics["converged"] and "below tol" in converged.diagnostics["stop_reason"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(max_refinements=-1), "max_refinements"),
        (dict(n_components=0), "n_components"),
        (dict(n_temperatures=6), "multiple of 4"),
        (dict(tol=-1.0), "tol"),
        (dict(n_keep=1), "n_keep"),
    ],
)
def test_bad_settings(kwargs, match):
    X = np.ones((4, 3))
    args = dict(n_components=1) | kwargs
    with pytest.raises(ValueError, match=match):
        referenced_ti_log_evidence(X, args.pop("n_components"), 1.0, **args)


def test_selector_stops_at_the_decision():
    rng = np.random.default_rng(9)
    X = rng.poisson(3 * rng.exponential(size=(30, 2)) @ rng.exponential(size=(2, 20)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # a decided choice needs no bar within tol
        sel = BayesianNMFRankSelector(ranks=(1, 2), random_state=0, tol=0.5).fit(X)
    res = sel.cv_results_
    assert sel.best_rank_ == 2 and sel.decided_
    # Rank 1 is a hundred nats below: screened by one round, never refined.
    assert list(res["status"]) == ["out", "chosen"]
    assert sel.best_estimator_.log_evidence_ == sel.log_evidence_[1]
    assert sel.best_estimator_.result_.method == "rti"


def test_selector_keeps_open_decisions_open():
    rng = np.random.default_rng(9)
    X = rng.poisson(3 * rng.exponential(size=(30, 2)) @ rng.exponential(size=(2, 20)))
    # A loose tolerance: ranks 2 and 3 are a few nats apart, within their error bars.
    sel = BayesianNMFRankSelector(ranks=(2, 3), random_state=0, tol=8.0).fit(X)
    res = sel.cv_results_
    best = int(np.argmax(sel.log_evidence_))
    other = 1 - best
    # The rule: the runner-up's estimate with 3 error bars below the best's, whose own mode search is left out
    # (a better mode only raises it), or below the best's lower bound.
    bar = math.hypot(res["std_log_evidence"][other],
                     math.sqrt(res["std_log_evidence"][best] ** 2 - res["mode_error"][best] ** 2))
    below = sel.log_evidence_[best] - sel.log_evidence_[other] > 3.0 * bar
    under = sel.log_evidence_[other] + 3.0 * res["std_log_evidence"][other] < res["lower_bound"][best]
    assert sel.decided_ == (below or under)


def test_selector_does_not_refit_what_max_time_would_stop_again():
    # A refinement step runs only if about the time already spent fits in max_time: with a
    # max_time shorter than any round, no rank is refined.
    rng = np.random.default_rng(9)
    X = rng.poisson(3 * rng.exponential(size=(30, 2)) @ rng.exponential(size=(2, 20)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sel = BayesianNMFRankSelector(ranks=(2, 3), random_state=0, tol=0.5,
                                      method_params={"max_time": 1e-3}).fit(X)
    # No rank refined: tol is reached only by a screen already within it.
    res = sel.cv_results_
    np.testing.assert_array_equal(res["tol"], np.where(res["std_log_evidence"] <= 0.5, 0.5, np.inf))


def test_mode_search_error_is_the_average_over_every_split():
    """The closed form against enumerating every split of the starts into two halves (1 to 10 starts)."""
    from itertools import combinations

    from skevidence.cp.reference import mode_search_error

    rng = np.random.default_rng(0)
    for n in range(1, 11):
        for ties in (False, True):
            b = np.round(rng.normal(size=n) * 10.0, 1)
            if ties and n > 2:
                b[:2] = b.max()
            splits = [
                abs(b[list(A)].max() - np.delete(b, list(A)).max()) for A in combinations(range(n), n // 2)
            ] if n > 1 else [0.0]
            np.testing.assert_allclose(mode_search_error(b), np.mean(splits), rtol=1e-12, atol=1e-12)
    # A best found by one start of eight: every split misses it by the gap to the next.
    assert mode_search_error([0.0] * 7 + [10.0]) == pytest.approx(10.0)
    assert mode_search_error([3.0] * 8) == 0.0


def _searched(fit, tol, *, max_starts=64, max_time=None, R=1, data=None, n_jobs=1):
    """A rank's reference search as :class:`RankRun` plans it, up to the ladders' first pieces."""
    from skevidence.cp.rti import RankRun, run_pieces

    data = CPData.from_array(np.ones((3, 2))) if data is None else data
    run = RankRun(data, R, 1.0, n_temperatures=4, n_burnin=0, n_keep=4, n_leapfrog=1, n_starts=8,
                  max_starts=max_starts, max_refinements=8, max_time=max_time, random_state=0)
    run.fit = fit
    while run.ladders is None:  # as referenced_ti_log_evidence drives it, the pieces' time counted
        start = time.perf_counter()
        run.finish(run_pieces(run.plan(tol), n_jobs))
        run.time += time.perf_counter() - start
    return run


def test_reference_search_doubles_while_its_halves_disagree(monkeypatch):
    """Two halves of the starts are two searches: their best bounds' difference is the mode error."""
    from skevidence.cp import reference as referenced
    from skevidence.cp.reference import mode_search_error

    def scripted(values):
        it = iter(values)
        fit = lambda data, R, rates, start: (next(it), np.ones((5, 1)), np.ones((5, 1)))  # noqa: E731
        monkeypatch.setitem(referenced._START_TOTAL, fit, 1.0)
        return fit

    # Every start at one mode: no doubling, no mode error.
    run = _searched(scripted([5.0] * 8), 1.0)
    assert run.best_bound == 5.0 and run.bounds.size == 8 and run.mode_error == 0.0
    # A lone best, 10 above the rest: doubled to 16, where 30 is found once and 10 once (24.7 nats on
    # average over the splits), then to 32 (the cap).
    values = [0.0] * 7 + [10.0] + [0.0] * 7 + [30.0] + [40.0] * 16
    run = _searched(scripted(values), 1.0, max_starts=32)
    assert run.best_bound == 40.0 and run.bounds.size == 32 and run.mode_error == mode_search_error(values) < 1e-3
    run = _searched(scripted(values), 1.0, max_starts=16)
    assert run.bounds.size == 16 and run.mode_error == pytest.approx(8 / 15 * 20.0 + 7 / 15 * 30.0)
    # Found by half the starts at 16: the doubling stops there.
    values = [0.0] * 7 + [10.0] + [10.0] * 8
    run = _searched(scripted(values), 1.0)
    assert run.bounds.size == 16 and run.mode_error <= 1.0
    # Halves 0.9 apart, below tol=1 but above tol/sqrt(2): doubled, so the chains keep at least that
    # share of tol (stopped at 0.9 the chains would have to reach sqrt(1 - 0.81) = 0.44).
    near = [0.0] * 7 + [0.9] + [0.9] * 8
    run = _searched(scripted(near), 1.0)
    assert run.bounds.size == 16 and run.mode_error == 0.0
    run = _searched(scripted(near), 1.3)
    assert run.bounds.size == 8 and run.mode_error == pytest.approx(0.9)
    # Out of time, or no tolerance: no doubling, the disagreement reported.
    for tol, max_time in ((1.0, 1e-12), (None, None)):
        run = _searched(scripted(values), tol, max_time=max_time)
        assert run.bounds.size == 8 and run.mode_error == pytest.approx(10.0)


def test_reference_starts_do_not_depend_on_n_jobs_or_blas_threads(monkeypatch):
    """The starts are drawn in order before the fits, and each fit runs with one BLAS thread."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from skevidence.cp import reference as referenced

    rng = np.random.default_rng(3)
    X = rng.exponential(rng.exponential(size=(30, 2)) @ rng.exponential(size=(2, 20)))
    data = CPData.from_array(X, 1.0)
    rates = referenced._row_rates(1.0, data.shape)
    runs = [_searched(referenced.laplace_fit, None, R=2, data=data, n_jobs=n_jobs) for n_jobs in (1, 2, 3)]
    # One by one, each start drawn just before its fit, from the generator the search draws from.
    state = np.random.RandomState(0)  # RankRun(random_state=0) draws its starts from RandomState(0)
    one_by_one = [referenced.laplace_fit(data, 2, rates, referenced._random_start(data, 2, state, 1e-300))
                  for _ in range(8)]
    for run in runs:
        assert np.array_equal(run.bounds, runs[0].bounds) and np.array_equal(run.alpha, runs[0].alpha)
        for fit, ref in zip(run.fits, one_by_one):
            assert fit[0] == ref[0] and np.array_equal(fit[1], ref[1]) and np.array_equal(fit[2], ref[2])

    seen = []

    def spy(data, R, rates, start, max_iter=None):
        seen.extend(module["num_threads"] for module in threadpool_info() if module["user_api"] == "blas")
        return 0.0, start, start, True

    monkeypatch.setitem(referenced._START_TOTAL, spy, 1.0)
    with threadpool_limits(2):
        _searched(spy, None, R=2, data=data, n_jobs=2)
    if not seen:
        # numpy's wheels bundle an OpenBLAS that threadpoolctl sees (CI runs this check); a BLAS it cannot
        # see it cannot limit either, so neither the fit's limit nor its absence can be observed here.
        pytest.skip("numpy's BLAS here is one threadpoolctl cannot see, so a fit's BLAS thread count cannot be "
                    "observed (numpy's own wheels, with their OpenBLAS, run this check)")
    assert set(seen) == {1}


def test_a_screened_laplace_search_is_polished_once_before_the_ladders(monkeypatch):
    """The first search's L-BFGS stops at the screen's count; before its ladders a rank continues every start
    that stopped there, from where it stopped, once: to the mode a full fit from the same start reaches."""
    from skevidence.cp import reference as referenced
    from skevidence.cp import rti

    monkeypatch.setattr(referenced, "_LAPLACE_MAX_ITER", (2, 2000))
    rng = np.random.default_rng(4)
    X = rng.exponential(rng.exponential(size=(30, 3)) @ rng.exponential(size=(3, 20)))
    data = CPData.from_array(X, 1.0)
    state, rates = np.random.RandomState(0), referenced._row_rates(1.0, data.shape)
    full = [referenced.laplace_fit(data, 3, rates, referenced._random_start(data, 3, state, 1e-300))[0]
            for _ in range(4)]
    run = rti.RankRun(data, 3, 1.0, n_temperatures=4, n_burnin=0, n_keep=4, n_leapfrog=1,
                      n_starts=4, max_starts=4, max_refinements=0, max_time=None, random_state=0)
    run.finish(rti.run_pieces(run.plan(None), 1))
    screened = run.bounds
    assert not any(fit[3] for fit in run.fits)
    pieces = run.plan(None)
    assert len(pieces) == 4 and run.ladders is None
    run.finish(rti.run_pieces(pieces, 2))
    assert all(fit[3] for fit in run.fits) and np.allclose(run.bounds, full, rtol=0, atol=1e-2)
    assert np.abs(screened - full).max() > 1.0
    assert run.best_bound == run.bounds.max() and run.alpha is run.fits[np.argmax(run.bounds)][1]
    pieces = run.plan(None)  # polished once: the chain at t = 1 the ladders' reference is fitted to
    assert len(pieces) == 2 and run.ladders is None
    run.finish(rti.run_pieces(pieces, 2))
    run.plan(None)
    assert run.ladders is not None  # then the ladders start
