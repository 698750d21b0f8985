"""The count-arrival SMC: kernels against NumPy twins, evidence against closed forms and brute force."""

import numpy as np
import pytest
from scipy import sparse, special, stats

from poisson_nmf_exact import rank1_log_evidence
from poisson_parafac_exact import rank1_log_evidence as rank1_log_evidence_cp
from skevidence import PoissonNMF, PoissonPARAFAC
from skevidence.cp.data import count_entries
from skevidence.cp.kernels.smc import (
    _log_ess,
    log_intensity_block,
    move_particles,
    next_stop,
    reference_weights,
    total_intensity,
)
from skevidence.cp.smc import combine_runs, smc_log_evidence
from skevidence.evidence._stderr import effective_sample_size

# ----------------------------------------------------------------------------- NumPy twins


def naive_log_intensity(particles, idx, entries):
    """``log V`` of each entry for each particle, from the full CP intensity."""
    return np.log(np.prod(particles[:, idx[entries]], axis=2).sum(axis=2))


def naive_total_intensity(particles, offsets):
    sums = np.stack([particles[:, a:b].sum(axis=1) for a, b in zip(offsets[:-1], offsets[1:])], axis=1)
    return np.prod(sums, axis=1).sum(axis=1)


def naive_next_stop(log_v, times, s, total_v, sum_log_v, min_log_ess, must_add):
    """Try every prefix: the longest one whose ESS stays above the floor (at least 1 if must_add)."""
    cum = sum_log_v[:, None] + np.cumsum(log_v, axis=1)
    accepted = 0
    for u in range(log_v.shape[1]):
        log_ess = np.log(effective_sample_size(cum[:, u] - (times[u] - s) * total_v))
        if log_ess < min_log_ess and (u > 0 or not must_add):
            break
        accepted = u + 1
    new_sum = cum[:, accepted - 1] if accepted else sum_log_v
    return accepted, new_sum


def naive_sources(particles, idx, arrived, rng):
    """The S-step in NumPy for particles ``(P, D, R)``: each entry's arrived units split over the
    components, summed per factor row."""
    stats_ = np.zeros(particles.shape)
    for e in np.flatnonzero(arrived):
        q = np.prod(particles[:, idx[e]], axis=1)  # (P, R)
        alloc = rng.multinomial(arrived[e], q / q.sum(axis=1, keepdims=True))
        for m in range(idx.shape[1]):
            stats_[:, idx[e, m]] += alloc
    return stats_


def _mode_sums(particles, offsets):
    """``(P, N, R)``: every particle's column sums of every mode."""
    return np.stack([particles[:, a:b].sum(axis=1) for a, b in zip(offsets[:-1], offsets[1:])], axis=1)


def naive_sweep(particles, offsets, idx, arrived, rates, exposure, rng):
    """One Gibbs sweep of every particle at the exposure-s target, in NumPy: sources, each mode's factor."""
    stats_ = naive_sources(particles, idx, arrived, rng)
    for m in range(offsets.shape[0] - 1):
        rate = rates[m] + exposure * np.prod(np.delete(_mode_sums(particles, offsets), m, axis=1), axis=1)
        rows = slice(offsets[m], offsets[m + 1])
        particles[:, rows] = rng.gamma(1.0 + stats_[:, rows], 1.0 / rate[:, None, :])


def naive_reference_log_density(F, offsets, rates, alpha, beta, exposure):
    """log of p(F)^s (1/R!) sum_sigma q_sigma(F)^(1-s), every constant included, from scipy's densities."""
    from itertools import permutations

    from scipy.special import logsumexp

    rows = np.repeat(np.arange(offsets.shape[0] - 1), np.diff(offsets))
    log_p = stats.expon.logpdf(F, scale=1.0 / rates[rows][:, None]).sum()
    perms = list(permutations(range(F.shape[1])))
    log_q = [stats.gamma.logpdf(F, alpha[:, list(perm)], scale=1.0 / beta[:, list(perm)]).sum() for perm in perms]
    return exposure * log_p + logsumexp((1.0 - exposure) * np.array(log_q)) - np.log(len(perms))


def naive_referenced_sweep(particles, offsets, idx, arrived, rates, alpha, beta, perms, exposure, rng):
    """One sweep of every particle at the referenced target, in NumPy: the labelling, sources, each mode's factor."""
    from scipy.special import softmax

    w = 1.0 - exposure
    log_f = np.log(particles)
    log_q = np.stack([np.sum((alpha[:, perm] - 1.0) * log_f - beta[:, perm] * particles, axis=(1, 2))
                      for perm in perms], axis=1)  # (P, labellings)
    cdf = np.cumsum(softmax(w * log_q, axis=1), axis=1)
    choice = np.minimum((cdf < rng.random((particles.shape[0], 1))).sum(axis=1), len(perms) - 1)
    perm = np.asarray(perms)[choice]  # (P, R)
    stats_ = naive_sources(particles, idx, arrived, rng)
    for m in range(offsets.shape[0] - 1):
        rows = slice(offsets[m], offsets[m + 1])
        alpha_m = alpha[rows][:, perm].transpose(1, 0, 2)  # (P, rows, R): each particle's labelling
        beta_m = beta[rows][:, perm].transpose(1, 0, 2)
        others = np.prod(np.delete(_mode_sums(particles, offsets), m, axis=1), axis=1)
        rate = w * beta_m + exposure * (rates[m] + others[:, None, :])
        particles[:, rows] = rng.gamma(1.0 + w * (alpha_m - 1.0) + stats_[:, rows], 1.0 / rate)


def _problem(shape, rank, seed, scale=1.0):
    rng = np.random.default_rng(seed)
    factors = [rng.exponential(size=(n, rank)) for n in shape]
    letters = "ijk"[: len(shape)]
    V = np.einsum(",".join(c + "r" for c in letters) + "->" + letters, *factors)
    return rng.poisson(scale * V)


def _stacked(X):
    idx, counts, shape = count_entries(X, method="the SMC", advice="")
    offsets = np.concatenate([[0], np.cumsum(shape)]).astype(np.int64)
    return np.ascontiguousarray(idx + offsets[:-1]), counts, offsets


@pytest.mark.parametrize("shape", [(5, 4), (4, 3, 5)])
def test_intensity_kernels_match_numpy_twins(shape):
    X = _problem(shape, 2, 0, scale=2.0)
    idx, counts, offsets = _stacked(X)
    rng = np.random.default_rng(1)
    particles = rng.exponential(size=(7, offsets[-1], 3))
    entries = rng.integers(0, counts.size, size=11)
    out = np.empty((7, 11))
    log_intensity_block(particles, idx, entries, out)
    np.testing.assert_allclose(out, naive_log_intensity(particles, idx, entries), rtol=1e-13)
    np.testing.assert_allclose(total_intensity(particles, offsets),
                               naive_total_intensity(particles, offsets), rtol=1e-13)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("must_add", [True, False])
def test_next_stop_matches_numpy_twin(seed, must_add):
    rng = np.random.default_rng(seed)
    n_particles, n = 16, 40
    log_v = rng.normal(0.0, 0.5, size=(n_particles, n))
    times = np.sort(rng.uniform(0.2, 0.6, size=n))
    total_v = rng.uniform(5.0, 10.0, size=n_particles)
    sum_log_v = rng.normal(0.0, 0.3, size=n_particles)
    floor = np.log(0.5 * n_particles)
    expected_k, expected_sum = naive_next_stop(log_v, times, 0.2, total_v, sum_log_v, floor, must_add)
    got_sum = sum_log_v.copy()
    k = next_stop(log_v, times, 0.2, total_v, got_sum, floor, must_add)
    assert k == expected_k
    np.testing.assert_allclose(got_sum, expected_sum, rtol=1e-12)
    w = rng.normal(size=30)
    assert _log_ess(w) == pytest.approx(np.log(effective_sample_size(w)), rel=1e-12)


@pytest.mark.parametrize("shape", [(2, 3), (2, 2, 3)])
def test_move_matches_numpy_twin_in_distribution(shape):
    """Kernel and NumPy sweeps from the same start give the same distribution (KS, two samples).

    Numba's gamma stream differs from NumPy's, so the twin is compared in
    distribution: 3000 particles, 6 sweeps each, of a rank-2 model at exposure 0.6.
    """
    X = np.arange(1, np.prod(shape) + 1).reshape(shape) % 4
    idx, counts, offsets = _stacked(X)
    rates = np.full(len(shape), 1.3)
    rng = np.random.default_rng(0)
    start = rng.exponential(size=(offsets[-1], 2))
    n = 3000
    particles = np.repeat(start[None], n, axis=0)
    active = np.flatnonzero(counts)
    # The path from the prior: the prior as the reference (shape 1, rate lambda), one labelling.
    alpha = np.ones((offsets[-1], 2))
    beta = np.repeat(rates, np.diff(offsets))[:, None] * alpha
    move_particles(particles, offsets, idx[active], counts[active], rates, alpha, beta, np.array([[0, 1]]), 0.6, 6,
                   rng.integers(0, 2**32, size=n))
    twin = np.repeat(start[None], n, axis=0)
    for _ in range(6):
        naive_sweep(twin, offsets, idx, counts, rates, 0.6, rng)
    # Statistics the scale moves leave alone: the intensities of two entries and their total.
    for stat in (lambda P: np.prod(P[:, idx[0]], axis=1).sum(axis=1),
                 lambda P: np.prod(P[:, idx[-1]], axis=1).sum(axis=1),
                 lambda P: naive_total_intensity(P, offsets)):
        assert stats.ks_2samp(stat(particles), stat(twin)).pvalue > 1e-3


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4)])
@pytest.mark.parametrize("exposures", [(0.0, 0.3), (0.4, 0.9), (0.9, 1.0)])
def test_reference_weights_match_numpy_twin(shape, exposures):
    """The step's log-weight (constants aside: the same for every particle) and its slope in the exposure."""
    from itertools import permutations

    rng = np.random.default_rng(1)
    offsets = np.concatenate([[0], np.cumsum(shape)]).astype(np.int64)
    rates = rng.uniform(0.5, 2.0, size=len(shape))
    alpha = rng.uniform(0.5, 3.0, size=(offsets[-1], 3))
    beta = rng.uniform(0.5, 3.0, size=(offsets[-1], 3))
    particles = rng.gamma(2.0, size=(5, offsets[-1], 3))
    perms = np.array(list(permutations(range(3))), dtype=np.int64)
    s, s_new = exposures
    out, slope = np.empty(5), np.empty(5)
    reference_weights(particles, offsets, rates, alpha, beta, perms, s, s_new, out, slope)
    twin = np.array([naive_reference_log_density(F, offsets, rates, alpha, beta, s_new)
                     - naive_reference_log_density(F, offsets, rates, alpha, beta, s) for F in particles])
    np.testing.assert_allclose(out - out[0], twin - twin[0], rtol=1e-9, atol=1e-8)
    h = 1e-6
    derivative = np.array([(naive_reference_log_density(F, offsets, rates, alpha, beta, s + h)
                            - naive_reference_log_density(F, offsets, rates, alpha, beta, s)) / h for F in particles])
    np.testing.assert_allclose(slope - slope[0], -(derivative - derivative[0]), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("shape", [(2, 3), (2, 2, 3)])
def test_referenced_move_matches_numpy_twin_in_distribution(shape):
    """As the plain move's test, at the referenced target: the Gibbs kernel and its NumPy twin agree.

    The kernel's scale-ridge moves leave every intensity unchanged, so the
    intensities are compared (KS, two samples, 3000 particles, 6 sweeps).
    """
    X = np.arange(1, np.prod(shape) + 1).reshape(shape) % 4
    idx, counts, offsets = _stacked(X)
    rates = np.full(len(shape), 1.3)
    rng = np.random.default_rng(0)
    alpha = rng.uniform(1.0, 6.0, size=(offsets[-1], 2))
    beta = rng.uniform(1.0, 4.0, size=(offsets[-1], 2))
    start = rng.exponential(size=(offsets[-1], 2))
    n = 3000
    perms = np.array([[0, 1], [1, 0]])
    particles = np.repeat(start[None], n, axis=0)
    active = np.flatnonzero(counts)
    move_particles(particles, offsets, idx[active], counts[active], rates, alpha, beta, perms, 0.6, 6,
                   rng.integers(0, 2**32, size=n))
    twin = np.repeat(start[None], n, axis=0)
    for _ in range(6):
        naive_referenced_sweep(twin, offsets, idx, counts, rates, alpha, beta, perms, 0.6, rng)
    for stat in (lambda P: np.prod(P[:, idx[0]], axis=1).sum(axis=1),
                 lambda P: np.prod(P[:, idx[-1]], axis=1).sum(axis=1),
                 lambda P: naive_total_intensity(P, offsets)):
        assert stats.ks_2samp(stat(particles), stat(twin)).pvalue > 1e-3


def test_referenced_ridge_move_keeps_its_target():
    """At exposure 0 (one labelling) the referenced target is q itself: moves from draws of q must stay q.

    The sweep at zero exposure redraws every factor from q and then moves
    along the scale ridges; the ridge moves alone decide the mode sums'
    spread, which must match q's (KS against fresh draws).
    """
    shape = (4, 5, 3)
    offsets = np.concatenate([[0], np.cumsum(shape)]).astype(np.int64)
    rng = np.random.default_rng(2)
    alpha = rng.uniform(2.0, 8.0, size=(offsets[-1], 2))
    beta = rng.uniform(1.0, 3.0, size=(offsets[-1], 2))
    n = 4000
    perms = np.arange(2)[None]
    particles = rng.gamma(alpha[None].repeat(n, 0)) / beta
    idx = np.zeros((0, 3), dtype=np.int64)
    move_particles(particles, offsets, idx, np.zeros(0, dtype=np.int64), np.ones(3), alpha, beta, perms, 0.0, 1,
                   rng.integers(0, 2**32, size=n))
    fresh = rng.gamma(alpha[None].repeat(n, 0)) / beta
    for m in range(3):
        for r in range(2):
            a, b = offsets[m], offsets[m + 1]
            assert stats.ks_2samp(particles[:, a:b, r].sum(axis=1), fresh[:, a:b, r].sum(axis=1)).pvalue > 1e-3


@pytest.mark.parametrize("referenced", [False, True], ids=["prior", "referenced"])
def test_move_is_reproducible_across_thread_counts(referenced):
    import numba

    X = _problem((6, 5), 2, 3, scale=2.0)
    idx, counts, offsets = _stacked(X)
    rng = np.random.default_rng(0)
    start = rng.exponential(size=(9, offsets[-1], 2))
    seeds = rng.integers(0, 2**32, size=9)
    alpha, beta = rng.uniform(1.0, 4.0, size=(2, offsets[-1], 2))
    # The referenced path sums over both labellings; the prior's path has one labelling of the prior.
    perms = np.array([[0, 1], [1, 0]]) if referenced else np.array([[0, 1]])
    if not referenced:
        alpha, beta = np.ones((2, offsets[-1], 2))
    results = []
    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        particles = start.copy()
        previous = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            move_particles(particles, offsets, idx, counts, np.ones(2), alpha, beta, perms, 0.5, 3, seeds)
        finally:
            numba.set_num_threads(previous)
        results.append(particles)
    np.testing.assert_array_equal(results[0], results[1])


# ----------------------------------------------------------------------------- evidence


def _z(result, exact):
    return (result.log_evidence - exact) / result.std_error


# The evidence tests run on one thread (n_jobs=1): the kernels' results do not depend on it
# (test_move_is_reproducible_across_thread_counts), and on a busy machine threads only wait.


@pytest.mark.parametrize("reference", ["prior", "vb"])
def test_rank1_nmf_matches_closed_form(seed, reference):
    X = _problem((8, 6), 1, seed, scale=3.0)
    lam = (1.0, 0.5)
    result = smc_log_evidence(X, 1, lam, reference=reference, n_particles=128, random_state=seed, n_jobs=1)
    assert abs(_z(result, rank1_log_evidence(X, *lam))) < 4.0


@pytest.mark.parametrize("reference", ["prior", "vb"])
def test_rank1_cp_matches_closed_form(seed, reference):
    X = _problem((5, 4, 3), 1, seed, scale=2.0)
    lam = (1.0, 2.0, 0.5)
    result = smc_log_evidence(X, 1, lam, reference=reference, n_particles=128, random_state=seed, n_jobs=1)
    assert abs(_z(result, rank1_log_evidence_cp(X, *lam))) < 4.0


@pytest.mark.slow
def test_referenced_path_sums_the_labellings_out():
    """Three well-separated components: the referenced SMC agrees with the prior path's.

    Near the posterior every labelling of the reference carries the same mass;
    weights that did not sum the labelling out would miss up to log 3! = 1.8
    nats of it, far beyond the tolerance of 4 combined standard errors.
    """
    rng = np.random.default_rng(3)
    W = np.kron(np.eye(3), np.ones((4, 1))) * 6.0 + 0.1
    H = np.kron(np.eye(3), np.ones((1, 4))) * 3.0 + 0.1
    X = rng.poisson(W @ H)
    vb = smc_log_evidence(X, 3, 0.5, reference="vb", n_particles=256, random_state=0)
    prior = smc_log_evidence(X, 3, 0.5, reference="prior", n_particles=256, random_state=0)
    assert abs(vb.log_evidence - prior.log_evidence) < 4.0 * np.hypot(vb.std_error, prior.std_error)


def test_rank2_matches_brute_force_importance_sampling():
    """A 2 x 3 matrix at rank 2: the evidence by 2e6 prior draws, p(X) = E_prior[p(X | theta)]."""
    X = np.array([[3, 0, 1], [2, 4, 0]])
    lam = 1.0
    rng = np.random.default_rng(0)
    chunks = []
    for _ in range(20):
        W = rng.exponential(1 / lam, size=(100_000, 2, 2))
        H = rng.exponential(1 / lam, size=(100_000, 2, 3))
        V = W @ H
        chunks.append((X * np.log(V) - V).sum(axis=(1, 2)) - special.gammaln(X + 1).sum())
    log_lik = np.concatenate(chunks)
    peak = log_lik.max()
    ratios = np.exp(log_lik - peak)
    exact = peak + np.log(ratios.mean())
    exact_se = ratios.std() / np.sqrt(ratios.size) / ratios.mean()
    for reference in ("prior", "vb"):
        result = smc_log_evidence(X, 2, lam, reference=reference, n_particles=256, n_runs=4, random_state=1,
                                  n_jobs=1)
        assert abs(result.log_evidence - exact) < 4.0 * np.hypot(result.std_error, exact_se), reference


def test_combine_runs_corrects_the_lognormal_bias():
    """log Z_k ~ N(log Z - s^2/2, s^2) gives back log Z; the error bar is the formula's."""
    rng = np.random.default_rng(0)
    sigma = 1.2
    draws = rng.normal(-sigma**2 / 2, sigma, size=(4000, 8))
    estimates = np.array([combine_runs(row)[0] for row in draws])
    assert abs(estimates.mean()) < 4 * estimates.std() / np.sqrt(len(estimates))
    se = np.array([combine_runs(row)[1] for row in draws])
    assert 0.7 < estimates.std() / np.median(se) < 1.3


def test_sparse_input_and_threads_give_the_same_result():
    X = _problem((7, 5), 2, 4)
    dense = smc_log_evidence(X, 2, n_particles=32, n_runs=2, random_state=3, n_jobs=1)
    sparse_ = smc_log_evidence(sparse.coo_array(X), 2, n_particles=32, n_runs=2, random_state=3)
    assert dense.log_evidence == sparse_.log_evidence
    assert dense.method == "smc"
    assert dense.posterior_mean[0].shape == (7, 2)


@pytest.mark.parametrize(
    "X, match",
    [
        (np.array([[1.5, 2.0]]), "non-integer"),
        (np.array([[-1, 2]]), "negative"),
        (np.array([1, 2, 3]), "at least two modes"),
        (np.array([[np.nan, 1]]), "NaN"),
        (np.zeros((0, 3)), "empty"),
    ],
)
def test_bad_input_is_refused(X, match):
    with pytest.raises(ValueError, match=match):
        smc_log_evidence(X, 1)


def test_bad_settings_are_refused():
    X = np.ones((3, 3), dtype=int)
    with pytest.raises(ValueError, match="n_runs"):
        smc_log_evidence(X, 1, n_runs=1)
    with pytest.raises(ValueError, match="ess_threshold"):
        smc_log_evidence(X, 1, ess_threshold=1.0)
    with pytest.raises(ValueError, match="prior_rates"):
        smc_log_evidence(X, 1, prior_rates=(1.0, -1.0))
    with pytest.raises(ValueError, match="reference must be"):
        smc_log_evidence(X, 1, reference="laplace")
    with pytest.raises(ValueError, match="reference='prior'"):
        smc_log_evidence(np.ones((9, 9), dtype=int), 8, reference="vb")


def test_estimators_offer_method_smc():
    X = _problem((6, 5), 2, 0, scale=2.0)
    fast = dict(method="smc", method_params=dict(n_particles=32, n_runs=2), random_state=0)
    nmf = PoissonNMF(2, **fast).fit(X)
    assert nmf.result_.method == "smc" and nmf.components_.shape == (2, 5)
    assert nmf.score(X) == nmf.log_evidence_
    T = _problem((4, 3, 5), 2, 1)
    cp = PoissonPARAFAC(2, **fast).fit(T)
    assert [F.shape for F in cp.factors_] == [(4, 2), (3, 2), (5, 2)]
    assert nmf.result_.diagnostics["reference"] == cp.result_.diagnostics["reference"] == "vb"
    # Above rank 7 the referenced path would sum over too many labellings: the prior's path runs.
    big = PoissonNMF(8, method="smc", method_params=dict(n_particles=8, n_runs=2), random_state=0)
    big.fit(np.ones((9, 9), dtype=int))
    assert big.result_.diagnostics["reference"] == "prior"


@pytest.mark.slow
def test_spread_of_independent_estimates_matches_the_stated_error():
    """Eight independent estimates scatter as their stated standard errors say (chi-square, 8 dof)."""
    X = _problem((12, 10), 1, 5, scale=3.0)
    exact = rank1_log_evidence(X, 1.0, 1.0)
    results = [smc_log_evidence(X, 1, n_particles=256, random_state=seed) for seed in range(8)]
    z = np.array([_z(r, exact) for r in results])
    assert np.all(np.abs(z) < 4.0)
    chi2 = float((z**2).sum())
    assert stats.chi2.sf(chi2, df=8) > 1e-3, z
