"""Chib's method on matrices (Poisson NMF): the rank-1 closed form, the Gibbs kernel, the method.

The closed form (``poisson_nmf_exact.py``) is checked against brute-force
integration; the kernel's source step against a NumPy twin fed the identical
random stream (numba's binomial and uniform streams equal NumPy's legacy
``RandomState`` ones for the same seed; its gamma and normal streams do not),
its Gamma steps and scale move statistically (KS tests); the method against
the closed form within 4 of its standard errors, against the SMC at rank 2,
and by the rank it selects.
"""

import math
import warnings

import numpy as np
import pytest
from numba import njit
from scipy import integrate, sparse, special, stats

from poisson_nmf_exact import rank1_log_evidence
from skevidence import PoissonNMF
from skevidence.cp.chib import _discriminating_order, chib_log_evidence
from skevidence.cp.kernels.gibbs import (
    CATEGORICAL_MAX_COUNT,
    draw_rows,
    gibbs_sweeps,
    likelihood_rates,
    relabel_to,
    sample_sources,
    scale_moves,
)
from skevidence.cp.smc import smc_log_evidence
from skevidence.evidence import EvidenceResult


def _nmf_data(seed, n_rows, n_cols, rank, rate=1.0):
    rng = np.random.default_rng(seed)
    W = rng.exponential(1.0 / rate, size=(n_rows, rank))
    H = rng.exponential(1.0 / rate, size=(rank, n_cols))
    return rng.poisson(W @ H)


def _offsets(*factors):
    return np.cumsum([0] + [F.shape[0] for F in factors]).astype(np.int64)


def _nmf_sweeps(rows, cols, counts, W, HT, lam_w, lam_h, n_sweeps, seed, stage, n_held, target):
    """The kernel on the stacked ``(W, HT)`` (no relabelling); the results split into W and HT.

    Stage 0 holds rows ``< n_held`` of W and records the rest; stage 1 holds W and components
    ``< n_held`` of HT, and records component ``n_held`` of every row of HT.
    """
    n_rows = W.shape[0]
    idx = np.stack((rows, cols + n_rows), axis=1)
    F, log_lik, unit_log_density, mean, n_relabelled = gibbs_sweeps(
        idx, counts, np.vstack((W, HT)), _offsets(W, HT), np.array([lam_w, lam_h]), n_sweeps, seed,
        stage, n_held, n_rows, target, np.zeros((0, 0)),
    )
    return F[:n_rows], F[n_rows:], log_lik, unit_log_density, mean[:n_rows], mean[n_rows:], n_relabelled


def _coo(X):
    rows, cols = np.nonzero(X)
    return rows.astype(np.int64), cols.astype(np.int64), X[rows, cols].astype(np.int64)


# --------------------------------------------------------------------------- closed form


@pytest.mark.parametrize("x", [0, 3, 11])
def test_rank1_closed_form_matches_2d_quadrature(x):
    lam_w, lam_h = 1.3, 0.7

    def integrand(h, w):  # the Poisson pmf of x at wh times the prior, in plain floats
        v = w * h
        log_pmf = x * math.log(v) - v - math.lgamma(x + 1) if v > 0 else (0.0 if x == 0 else -math.inf)
        return lam_w * lam_h * math.exp(log_pmf - lam_w * w - lam_h * h)

    value, _ = integrate.dblquad(integrand, 0, np.inf, 0, np.inf, epsabs=0, epsrel=1e-10)
    assert rank1_log_evidence([[x]], lam_w, lam_h) == pytest.approx(math.log(value), abs=1e-7)


@pytest.mark.parametrize("transpose", [False, True], ids=["1x2", "2x1"])
def test_rank1_closed_form_matches_3d_quadrature(transpose):
    # X = [[2, 1]]: one w, two h (or its transpose); the integrand in plain floats.
    lam_w, lam_h = 1.3, 0.7
    lam_one, lam_two = (lam_h, lam_w) if transpose else (lam_w, lam_h)

    def integrand(b2, b1, a):
        v1, v2 = a * b1, a * b2
        log_lik = 2 * math.log(v1) - v1 - math.log(2) + math.log(v2) - v2
        log_prior = math.log(lam_one) - lam_one * a + 2 * math.log(lam_two) - lam_two * (b1 + b2)
        return math.exp(log_lik + log_prior)

    value, _ = integrate.tplquad(integrand, 0, np.inf, 0, np.inf, 0, np.inf, epsabs=0, epsrel=1e-7)
    X = np.array([[2, 1]]).T if transpose else np.array([[2, 1]])
    assert rank1_log_evidence(X, lam_w, lam_h) == pytest.approx(math.log(value), abs=1e-6)


def test_rank1_closed_form_matches_prior_monte_carlo():
    X = np.array([[2.0, 0.0, 1.0], [1.0, 3.0, 0.0]])
    lam_w, lam_h, n = 1.3, 0.7, 2_000_000
    rng = np.random.default_rng(1)
    w = rng.exponential(1.0 / lam_w, size=(n, 2))
    h = rng.exponential(1.0 / lam_h, size=(n, 3))
    v = w[:, :, None] * h[:, None, :]
    log_lik = (X * np.log(v) - v - special.gammaln(X + 1.0)).sum(axis=(1, 2))
    top = log_lik.max()
    weights = np.exp(log_lik - top)
    estimate = top + np.log(weights.mean())
    std_error = weights.std() / weights.mean() / np.sqrt(n)
    assert abs(rank1_log_evidence(X, lam_w, lam_h) - estimate) < 4 * std_error


def test_rank1_closed_form_identities():
    rng = np.random.default_rng(2)
    X = rng.poisson(2.0, size=(4, 3))
    # Tricomi U and quadrature agree where hyperu is stable.
    assert rank1_log_evidence(X, 1.3, 0.6) == pytest.approx(
        rank1_log_evidence(X, 1.3, 0.6, method="hyperu"), abs=1e-9
    )
    # Transposing swaps the roles of w and h.
    transposed = rank1_log_evidence(X.T, 0.6, 1.3)
    assert rank1_log_evidence(X, 1.3, 0.6) == pytest.approx(transposed, abs=1e-9)
    # A 1 x 1 "matrix" is a distribution over counts: it sums to 1.
    total = sum(math.exp(rank1_log_evidence([[x]], 1.0, 1.0)) for x in range(3000))
    assert total == pytest.approx(1.0, abs=1e-10)
    # X = 0, lam_w lam_h = 1: e E_1(1).
    p_zero = math.exp(rank1_log_evidence([[0]]))
    assert p_zero == pytest.approx(math.e * special.exp1(1.0), rel=1e-12)


# --------------------------------------------------------------------------- kernel


@njit
def _seed_numba(seed):
    """Seed numba's ``np.random`` (one state per thread, shared by every compiled function)."""
    np.random.seed(seed)


def _seeded_sources(seed, idx, counts, F, stats):
    _seed_numba(seed)
    return sample_sources(idx, counts, F, stats)


def _sources_twin(seed, rows, cols, counts, W, HT):
    """The S-step in plain NumPy, drawing in the kernel's order from a legacy RandomState."""
    rs = np.random.RandomState(seed)
    n_components = W.shape[1]
    row_stats = np.zeros(W.shape, dtype=np.int64)
    col_stats = np.zeros(HT.shape, dtype=np.int64)
    for i, j, x in zip(rows, cols, counts):
        q = W[i] * HT[j]
        tail = np.cumsum(q[::-1])[::-1]  # accumulated from the last component, as the kernel does
        bounds = tail[0] - tail[1:]  # upper ends of the first R - 1 intervals
        s = np.zeros(n_components, dtype=np.int64)
        if x <= CATEGORICAL_MAX_COUNT:
            for _ in range(x):
                u = rs.random_sample() * tail[0]
                s[np.searchsorted(bounds, u, side="right")] += 1
        else:
            left = x
            for r in range(n_components - 1):
                if left == 0:
                    break
                s[r] = rs.binomial(left, min(q[r] / tail[r], 1.0))
                left -= s[r]
            s[-1] += left
        row_stats[i] += s
        col_stats[j] += s
    sum_x_log_v = float(counts @ np.log(np.einsum("kr,kr->k", W[rows], HT[cols])))
    return row_stats, col_stats, sum_x_log_v


@pytest.mark.parametrize("n_components", [1, 2, 4])
def test_source_step_matches_numpy_twin(n_components):
    rng = np.random.default_rng(3)
    X = rng.poisson(rng.exponential(4.0, size=(6, 5)))  # counts on both sides of the switch
    assert X.max() > CATEGORICAL_MAX_COUNT
    rows, cols, counts = _coo(X)
    W = rng.exponential(size=(6, n_components))
    HT = rng.exponential(size=(5, n_components))
    stats_ = np.zeros((11, n_components), dtype=np.int64)
    idx = np.stack((rows, cols + 6), axis=1)
    got = _seeded_sources(17, idx, counts, np.vstack((W, HT)), stats_)
    row_stats, col_stats = stats_[:6], stats_[6:]
    twin_rows, twin_cols, twin_sum = _sources_twin(17, rows, cols, counts, W, HT)
    np.testing.assert_array_equal(row_stats, twin_rows)
    np.testing.assert_array_equal(col_stats, twin_cols)
    np.testing.assert_array_equal(row_stats.sum(axis=1), X.sum(axis=1))
    np.testing.assert_array_equal(col_stats.sum(axis=1), X.sum(axis=0))
    assert got == pytest.approx(twin_sum, rel=1e-13)


def test_one_sweep_records_match_twin():
    """The sweep's first draws are the S-step's, so one sweep's records have an exact twin."""
    rng = np.random.default_rng(4)
    X = rng.poisson(3.0, size=(5, 4))
    rows, cols, counts = _coo(X)
    lam_w, lam_h, n_components = 1.5, 0.5, 3
    W = rng.exponential(size=(5, n_components))
    HT = rng.exponential(size=(4, n_components))
    W_star = rng.exponential(size=(5, n_components))
    HT_star = rng.exponential(size=(4, n_components))
    twin_rows, twin_cols, twin_sum = _sources_twin(23, rows, cols, counts, W, HT)

    # Stage 0, row 0 held: the W-step's conditional at W* for rows 1..4.
    out = _nmf_sweeps(rows, cols, counts, W, HT, lam_w, lam_h, 1, 23, 0, 1, W_star)
    rate_w = lam_w + HT.sum(axis=0)
    expected = stats.gamma.logpdf(W_star, 1 + twin_rows, scale=1 / rate_w).sum(axis=1)
    np.testing.assert_allclose(out[3][0], expected[1:], rtol=1e-12)
    # The log-likelihood of the state entering the sweep, up to sum(lgamma(x + 1)).
    assert out[2][0] == pytest.approx(twin_sum - W.sum(axis=0) @ HT.sum(axis=0), rel=1e-13)
    np.testing.assert_array_equal(out[0][0], W[0])  # the held row did not move

    # Stage 1 (W held entirely): the H-step's conditional at H* of component k per column,
    # components < k held.
    rate_h = lam_h + W.sum(axis=0)
    expected = stats.gamma.logpdf(HT_star, 1 + twin_cols, scale=1 / rate_h)
    for k in (0, 2):
        out = _nmf_sweeps(rows, cols, counts, W, HT, lam_w, lam_h, 1, 23, 1, k, HT_star)
        np.testing.assert_allclose(out[3][0], expected[:, k], rtol=1e-12)
        np.testing.assert_array_equal(out[0], W)
        np.testing.assert_array_equal(out[1][:, :k], HT[:, :k])


def _seeded_factor(seed, stats, other, prior_rate, out, exposure=1.0):
    _seed_numba(seed)
    F = np.vstack((out, other))
    all_stats = np.zeros(F.shape, dtype=np.int64)
    all_stats[: out.shape[0]] = stats
    offsets = np.array([0, out.shape[0], F.shape[0]])
    rate = likelihood_rates(F, offsets, 0, exposure)
    draw_rows(F, 0, out.shape[0], 0, all_stats, np.ones_like(F), np.full_like(F, prior_rate), rate)
    out[:] = F[: out.shape[0]]
    return F[out.shape[0] :]


@pytest.mark.parametrize("exposure", [1.0, 0.3])
def test_gamma_step_draws_the_conditional(exposure):
    """``out[a, r] ~ Gamma(1 + stats[a, r], prior_rate + s sum_b other[b, r])``: KS test."""
    rng = np.random.default_rng(5)
    stats_ = rng.poisson(3.0, size=(4, 3)).astype(np.int64)
    other = rng.exponential(size=(6, 3))
    start = rng.exponential(size=(4, 3))
    draws = []
    for s in range(300):
        out = start.copy()
        np.testing.assert_array_equal(_seeded_factor(s, stats_, other, 0.8, out, exposure), other)
        draws.append(out)
    rate = 0.8 + exposure * other.sum(axis=0)
    u = stats.gamma.cdf(np.array(draws), 1 + stats_, scale=1 / rate)
    assert stats.kstest(u.ravel(), "uniform").pvalue > 1e-3


def _scale_chain(seed, W, HT, lam_w, lam_h, n):
    _seed_numba(seed)
    w0 = W[0, 0]
    F = np.vstack((W, HT))
    offsets = np.array([0, W.shape[0], F.shape[0]])
    rates = np.repeat([lam_w, lam_h], np.diff(offsets))[:, None] * np.ones_like(F)
    out = np.empty(n)
    for k in range(n):
        scale_moves(F, offsets, 0, np.ones_like(F), rates, 1)
        out[k] = math.log(F[0, 0] / w0)
    W[:] = F[: W.shape[0]]
    HT[:] = F[W.shape[0] :]
    return out


def test_scale_move_targets_the_scale_conditional():
    """Iterated alone, the move samples u = log c ~ exp((I - J) u - lam_w A e^u - lam_h B e^-u)."""
    rng = np.random.default_rng(6)
    W, HT = rng.exponential(size=(7, 1)), rng.exponential(size=(4, 1))
    lam_w, lam_h = 1.5, 0.5
    a, b = lam_w * W.sum(), lam_h * HT.sum()
    u = _scale_chain(1, W.copy(), HT.copy(), lam_w, lam_h, 40000)[::20]
    grid = np.linspace(-6, 6, 4001)
    log_density = (7 - 4) * grid - a * np.exp(grid) - b * np.exp(-grid)
    cdf = np.cumsum(np.exp(log_density - log_density.max()))
    cdf /= cdf[-1]
    assert stats.kstest(u, lambda x: np.interp(x, grid, cdf)).pvalue > 1e-3
    # The rank-one term, hence the likelihood, is unchanged.
    W2, HT2 = W.copy(), HT.copy()
    _scale_chain(2, W2, HT2, lam_w, lam_h, 10)
    np.testing.assert_allclose(W2 @ HT2.T, W @ HT.T, rtol=1e-12)


@pytest.mark.parametrize("R", [4, 9])
def test_kernel_relabel_undoes_a_permutation(R):
    rng = np.random.default_rng(7)
    W, HT = rng.exponential(size=(8, R)), rng.exponential(size=(6, R))
    order = np.roll(np.arange(R), 1)  # every component moves
    F2, ref = np.vstack((W[:, order] * 1.01, HT[:, order])), np.vstack((W, HT))
    assert relabel_to(F2, _offsets(W, HT), ref) == 1
    np.testing.assert_allclose(F2[:8], W * 1.01)
    np.testing.assert_allclose(F2[8:], HT)
    assert relabel_to(F2, _offsets(W, HT), ref) == 0


def test_discriminating_order_puts_separating_rows_first():
    # Components 0 and 1 differ only in row 3, components 1 and 2 only in row 5.
    W_star = np.ones((6, 3))
    W_star[3] = [5.0, 1.0, 1.0]
    W_star[5] = [1.0, 1.0, 5.0]
    order = _discriminating_order(W_star, np.full(3, 5.0))
    assert sorted(order) == list(range(6))
    assert set(order[:2]) == {3, 5}
    assert list(order[2:]) == [0, 1, 2, 4]


# --------------------------------------------------------------------------- method

#: Small settings for the tests that check plumbing rather than accuracy.
QUICK = dict(n_samples=300, n_burnin=100, n_reduced=400)


def _identity(result):
    """The estimate rebuilt from the terms of Chib's identity in its diagnostics."""
    d = result.diagnostics
    return d["log_likelihood"] + d["log_prior"] - d["log_ordinates"].sum() + d["log_label_permutations"]


@pytest.mark.parametrize("offset", [0, 1])
def test_chib_matches_rank1_closed_form(seed, offset):
    X = _nmf_data(seed + offset, 30, 20, 1)
    exact = rank1_log_evidence(X, 1.0, 1.0)
    result = chib_log_evidence(X, 1, random_state=seed + offset)
    assert isinstance(result, EvidenceResult) and result.method == "chib"
    assert abs(result.log_evidence - exact) <= 4 * result.std_error, (result, exact)
    # The error is meaningful: neither zero nor vast (about 1e-4 of |log Z| here).
    assert 0 < result.std_error < 5e-4 * abs(exact)
    assert result.log_evidence == pytest.approx(_identity(result))


def test_chib_matches_rank1_closed_form_with_unequal_rates(seed):
    X = _nmf_data(seed + 2, 12, 25, 1, rate=0.7)
    rates = (0.7, 1.6)
    exact = rank1_log_evidence(X, *rates)
    result = chib_log_evidence(X, 1, rates, random_state=seed)
    assert abs(result.log_evidence - exact) <= 4 * result.std_error, (result, exact)
    assert result.diagnostics["prior_rates"] == rates


def _select(X, ranks, seed, n_reduced):
    """Chib's estimate at each rank, and whether it warned that an average rests on few draws."""
    log_z, warned = [], []
    for r in ranks:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            log_z.append(chib_log_evidence(X, r, n_reduced=n_reduced, random_state=seed).log_evidence)
        warned.append(any("rest on few draws" in str(w.message) for w in caught))
    return log_z, warned


def _check_selects(true_rank, ranks, log_z, warned):
    """The true rank's estimate is reliable and beats every rank whose estimate is too.

    Over-fitted ranks are Chib's hard case (see the Notes of chib_log_evidence):
    their ordinate averages can rest on a handful of draws, and the method then
    says so, with an estimate too high.
    """
    best = log_z[ranks.index(true_rank)]
    assert not warned[ranks.index(true_rank)], "the true rank's estimate must be reliable"
    for r, z, w in zip(ranks, log_z, warned):
        assert r == true_rank or z < best or w, (log_z, warned)


def test_chib_selects_true_rank_2(seed):
    X = _nmf_data(seed, 40, 30, 2)
    ranks = [1, 2, 3]
    _check_selects(2, ranks, *_select(X, ranks, seed, 10000))


@pytest.mark.slow
def test_chib_agrees_with_the_smc_at_rank_2(seed):
    """At the true rank 2 of a 20 x 15 matrix: within 4 combined standard errors of the SMC.

    Neither standard error covers a bias (Chib: the log of an average, high by
    about half its variance, and the log 2! correction if no row told the two
    components apart); at the true rank both are far below the tolerance.
    """
    X = _nmf_data(20, 20, 15, 2, rate=0.7)
    chib = chib_log_evidence(X, 2, n_reduced=10000, random_state=seed)
    smc = smc_log_evidence(X, 2, random_state=seed)
    allowed = 4 * math.hypot(chib.std_error, smc.std_error)
    assert abs(chib.log_evidence - smc.log_evidence) <= allowed, (chib.log_evidence, smc.log_evidence, allowed)


@pytest.mark.slow
def test_chib_selects_true_rank_3(seed):
    # Under exponential priors an extra component is cheap: on 40 x 30 data of
    # rank 3 the evidence of rank 4 comes within a few nats of rank 3, or above
    # it, for many draws of the data, hence 60 x 40 (and the budget that
    # over-fitted ranks want). The test seed varies the sampler only.
    X = _nmf_data(0, 60, 40, 3)
    ranks = [1, 2, 3, 4]
    _check_selects(3, ranks, *_select(X, ranks, seed, 40000))


@pytest.mark.filterwarnings("ignore:Chib's ordinate averages")
def test_chib_is_reproducible_and_input_format_free():
    X = _nmf_data(7, 12, 9, 2)
    first = chib_log_evidence(X, 2, random_state=3, **QUICK)
    again = chib_log_evidence(X, 2, random_state=3, **QUICK)
    assert again.log_evidence == first.log_evidence
    assert again.std_error == first.std_error
    np.testing.assert_array_equal(again.diagnostics["block_log_ordinate"], first.diagnostics["block_log_ordinate"])
    assert chib_log_evidence(X, 2, random_state=4, **QUICK).log_evidence != first.log_evidence
    for other in (sparse.csr_matrix(X), sparse.coo_array(X), X.astype(float), X.tolist()):
        result = chib_log_evidence(other, 2, random_state=3, **QUICK)
        assert result.log_evidence == first.log_evidence
    # The modes are taken shortest first: the transpose, with its rates, is the same computation.
    a = chib_log_evidence(X, 2, (0.5, 2.0), random_state=3, **QUICK)
    b = chib_log_evidence(X.T, 2, (2.0, 0.5), random_state=3, **QUICK)
    assert a.diagnostics["mode_order"] == (1, 0) and b.diagnostics["mode_order"] == (0, 1)
    assert a.log_evidence == b.log_evidence
    np.testing.assert_array_equal(a.posterior_mean[0], b.posterior_mean[1])


@pytest.mark.filterwarnings("ignore:Chib's ordinate averages")
def test_chib_result_accounting():
    X = _nmf_data(8, 10, 14, 1)
    X[0] = 0  # an empty row, and zeros the sweeps must skip
    result = chib_log_evidence(X, 2, random_state=0, **QUICK)
    d = result.diagnostics
    assert d["n_nonzero"] == np.count_nonzero(X)
    assert result.n_likelihood_evaluations == d["n_nonzero"] * d["n_sweeps"]
    assert d["n_sweeps"] >= QUICK["n_samples"] + QUICK["n_reduced"] - 10
    # W (10 rows) is the shorter mode: blocked; H.T (14 rows) by components.
    assert d["mode_order"] == (0, 1)
    np.testing.assert_array_equal(d["block_mode"], 0)
    assert d["block_rows"].sum() == 10
    assert d["component_sweeps"].shape == d["component_log_ordinate"].shape == (2,)
    assert d["log_ordinates"][1] == pytest.approx(d["component_log_ordinate"].sum())
    assert d["log_ordinates"][0] == pytest.approx(d["block_log_ordinate"].sum())
    assert d["min_ess"] == min(d["block_ess"].min(), d["component_ess_min"].min())
    assert d["log_likelihood_trace"].shape == (QUICK["n_samples"] - QUICK["n_burnin"],)
    assert result.log_evidence == pytest.approx(_identity(result))
    # The point comes mode by mode, W and H.T; the log-likelihood and prior at it are reported.
    W, HT = result.posterior_mean
    assert W.shape == (10, 2) and HT.shape == (14, 2)
    V = W @ HT.T
    log_lik = float(np.sum(special.xlogy(X, V) - V - special.gammaln(X + 1.0)))
    assert d["log_likelihood"] == pytest.approx(log_lik, rel=1e-10)
    assert d["log_prior"] == pytest.approx(-W.sum() - HT.sum(), rel=1e-10)
    assert result.wall_time > 0 and np.isfinite(result.log_evidence)


def test_chib_all_zero_matrix_is_the_prior_predictive():
    # p(X = 0) for rank 1 has the closed form; zeros-only data exercise the no-source path.
    X = np.zeros((5, 4), dtype=int)
    result = chib_log_evidence(X, 1, random_state=0, n_reduced=2000)
    assert abs(result.log_evidence - rank1_log_evidence(X)) <= 4 * result.std_error + 1e-9


def test_chib_warns_when_the_budget_is_too_small():
    X = _nmf_data(9, 12, 10, 3)
    with pytest.warns(UserWarning, match="n_reduced"):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Chib's ordinate averages")
            chib_log_evidence(X, 3, n_samples=200, n_burnin=100, n_reduced=40, random_state=0)


def test_estimator_method_chib():
    X = _nmf_data(5, 15, 12, 1)
    est = PoissonNMF(1, prior_rate=1.0, prior_rate_h=0.5, method="chib", random_state=0).fit(X)
    assert est.result_.method == "chib"
    assert abs(est.log_evidence_ - rank1_log_evidence(X, 1.0, 0.5)) <= 4 * est.log_evidence_std_
    W, HT = chib_log_evidence(X, 1, (1.0, 0.5), random_state=0).posterior_mean
    np.testing.assert_array_equal(est.components_, HT.T)


@pytest.mark.parametrize(
    "X, match",
    [
        (np.array([[1.0, 2.5], [0.0, 1.0]]), "integer counts; X has non-integer entries"),
        (np.array([[1, -2], [0, 1]]), "negative"),
        (np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN or infinity"),
        (np.array([[1.0, np.inf], [0.0, 1.0]]), "NaN or infinity"),
        (np.array([1, 2, 3]), "at least two modes"),
        (np.ones((2, 2, 2, 2)), "matrix or a 3-D tensor"),
        (np.zeros((0, 4)), "empty"),
        (np.array([["a", "b"]]), "numeric"),
        (sparse.csr_matrix(np.array([[1.0, 0.5]])), "non-integer"),
    ],
)
def test_chib_rejects_bad_data(X, match):
    with pytest.raises(ValueError, match=match):
        chib_log_evidence(X, 1, **QUICK)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_components=0), "n_components"),
        (dict(n_components=True), "n_components"),
        (dict(n_components=1.5), "n_components"),
        (dict(prior_rates=0.0), "prior_rates"),
        (dict(prior_rates=(1.0, -1.0)), "prior_rates"),
        (dict(prior_rates=(1.0, 1.0, 1.0)), "prior_rates"),
        (dict(n_samples=100, n_burnin=99), "n_burnin"),
        (dict(n_reduced=0), "n_reduced"),
        (dict(block_variance=np.inf), "block_variance"),
    ],
)
def test_chib_rejects_bad_settings(kwargs, match):
    kwargs = {"n_components": 1, **QUICK, **kwargs}
    with pytest.raises(ValueError, match=match):
        chib_log_evidence(np.ones((3, 3)), **kwargs)
