"""Chib's method on 3-D tensors (Poisson PARAFAC): the rank-1 closed form, the Gibbs kernel, the method.

The closed form (``poisson_parafac_exact.py``) is checked against brute-force
Monte Carlo from the prior, its normalisation (a 1 x 1 x 1 tensor) and its
symmetry under permuting the modes (which the Jacobians of the derivation
break unless they are right); the kernel's source step against a
NumPy twin fed the identical random stream (numba's binomial and uniform
streams equal NumPy's legacy ``RandomState`` ones for the same seed), its
records against ``scipy.stats``, its scale move statistically; the method
against the closed form within 4 standard errors and against the SMC at rank 2.
"""

import itertools
import math
import warnings

import numpy as np
import pytest
from numba import njit
from scipy import sparse, special, stats

from poisson_parafac_exact import rank1_log_evidence
from skevidence import PoissonPARAFAC
from skevidence.cp.chib import chib_log_evidence
from skevidence.cp.kernels.gibbs import (
    CATEGORICAL_MAX_COUNT,
    gibbs_sweeps,
    modal_scales,
    relabel_to,
    sample_sources,
    scale_moves,
)
from skevidence.cp.smc import smc_log_evidence
from skevidence.evidence import EvidenceResult


def _rank1(seed, lam, shape=(6, 5, 4), scale=3.0):
    rng = np.random.default_rng(seed)
    factors = (rng.exponential(1 / lam, size=n) for n in shape)
    return rng.poisson(scale * np.einsum("i,j,k->ijk", *factors))


def _tensor(seed, shape, rank, scale=1.0):
    rng = np.random.default_rng(seed)
    factors = (rng.exponential(size=(n, rank)) for n in shape)
    return rng.poisson(scale * np.einsum("ir,jr,kr->ijk", *factors))


def _coo(X):
    idx = np.nonzero(X)
    return tuple(i.astype(np.int64) for i in idx) + (X[idx].astype(np.int64),)


def _offsets(*factors):
    return np.cumsum([0] + [F.shape[0] for F in factors]).astype(np.int64)


def _parafac_sweeps(ii, jj, kk, counts, A, B, C, lams, n_sweeps, seed, stage, n_held, record_end, target):
    """The kernel on the stacked ``(A, B, C)`` (no relabelling); results split into the factors."""
    offsets = _offsets(A, B, C)
    idx = np.stack((ii, jj + offsets[1], kk + offsets[2]), axis=1)
    F, log_lik, unit_log_density, mean, n_relabelled = gibbs_sweeps(
        idx, counts, np.vstack((A, B, C)), offsets, np.array(lams), n_sweeps, seed, stage, n_held,
        record_end, target, np.zeros((0, 0)),
    )
    return tuple(F[lo:hi] for lo, hi in zip(offsets[:-1], offsets[1:])), log_lik, unit_log_density


#: Small settings for the tests that check plumbing rather than accuracy.
QUICK = dict(n_samples=300, n_burnin=100, n_reduced=600)


# --------------------------------------------------------------------------- closed form


def test_rank1_closed_form_matches_prior_monte_carlo():
    X = np.array([[[1, 0], [2, 1]], [[0, 1], [0, 3]]], dtype=float)
    lams, n = (1.3, 0.7, 1.1), 2_000_000
    rng = np.random.default_rng(1)
    a, b, c = (rng.exponential(1.0 / lam, size=(n, 2)) for lam in lams)
    V = np.einsum("ni,nj,nk->nijk", a, b, c)
    log_lik = (X * np.log(V) - V - special.gammaln(X + 1.0)).sum(axis=(1, 2, 3))
    top = log_lik.max()
    weights = np.exp(log_lik - top)
    estimate = top + np.log(weights.mean())
    std_error = weights.std() / weights.mean() / np.sqrt(n)
    assert std_error < 0.01
    assert abs(rank1_log_evidence(X, *lams) - estimate) < 4 * std_error


def test_rank1_closed_form_identities():
    # A 1 x 1 x 1 tensor is a distribution over counts: it sums to 1 (the tail beyond
    # 150 holds less than 1e-10 for these rates: p(150) < 1e-13, decaying).
    probabilities = [math.exp(rank1_log_evidence([[[x]]], 3.0, 2.0, 2.5)) for x in range(150)]
    assert probabilities[-1] < 1e-13
    assert sum(probabilities) == pytest.approx(1.0, abs=1e-10)
    # Permuting the modes permutes the rates; the Jacobians of the derivation break
    # the symmetry between a and (b, c), so this checks them.
    X = _rank1(0, 1.0)
    lams = (0.5, 1.5, 2.0)
    reference = rank1_log_evidence(X, *lams)
    for perm in itertools.permutations(range(3)):
        value = rank1_log_evidence(X.transpose(perm), *(lams[p] for p in perm))
        assert value == pytest.approx(reference, abs=1e-8), perm


# --------------------------------------------------------------------------- kernel


@njit
def _seed_numba(seed):
    """Seed numba's ``np.random`` (one state per thread, shared by every compiled function)."""
    np.random.seed(seed)


def _seeded_sources(seed, idx, counts, F, stats):
    _seed_numba(seed)
    return sample_sources(idx, counts, F, stats)


def _sources_twin(seed, ii, jj, kk, counts, A, B, C):
    """The S-step in plain NumPy, drawing in the kernel's order from a legacy RandomState."""
    rs = np.random.RandomState(seed)
    R = A.shape[1]
    stats_ = [np.zeros((F.shape[0], R), dtype=np.int64) for F in (A, B, C)]
    for i, j, k, x in zip(ii, jj, kk, counts):
        q = A[i] * B[j] * C[k]
        tail = np.cumsum(q[::-1])[::-1]
        bounds = tail[0] - tail[1:]
        s = np.zeros(R, dtype=np.int64)
        if x <= CATEGORICAL_MAX_COUNT:
            for _ in range(x):
                s[np.searchsorted(bounds, rs.random_sample() * tail[0], side="right")] += 1
        else:
            left = x
            for r in range(R - 1):
                if left == 0:
                    break
                s[r] = rs.binomial(left, min(q[r] / tail[r], 1.0))
                left -= s[r]
            s[-1] += left
        for st, idx in zip(stats_, (i, j, k)):
            st[idx] += s
    sum_x_log_v = float(counts @ np.log(np.einsum("er,er,er->e", A[ii], B[jj], C[kk])))
    return stats_, sum_x_log_v


@pytest.mark.parametrize("R", [1, 2, 4])
def test_source_step_matches_numpy_twin(R):
    rng = np.random.default_rng(3)
    X = rng.poisson(rng.exponential(4.0, size=(5, 4, 3)))
    assert X.max() > CATEGORICAL_MAX_COUNT
    ii, jj, kk, counts = _coo(X)
    A, B, C = (rng.exponential(size=(n, R)) for n in X.shape)
    offsets = _offsets(A, B, C)
    stats_ = np.zeros((offsets[-1], R), dtype=np.int64)
    idx = np.stack((ii, jj + offsets[1], kk + offsets[2]), axis=1)
    total = _seeded_sources(17, idx, counts, np.vstack((A, B, C)), stats_)
    got = [stats_[lo:hi] for lo, hi in zip(offsets[:-1], offsets[1:])]
    twin, twin_total = _sources_twin(17, ii, jj, kk, counts, A, B, C)
    for g, t in zip(got, twin):
        np.testing.assert_array_equal(g, t)
    np.testing.assert_array_equal(got[0].sum(axis=1), X.sum(axis=(1, 2)))
    np.testing.assert_array_equal(got[2].sum(axis=1), X.sum(axis=(0, 1)))
    assert total == pytest.approx(twin_total, rel=1e-13)


def test_source_step_is_n_way():
    """Four modes take the kernel's general loop; the draws are the three-way twin's scheme."""
    rng = np.random.default_rng(8)
    X = rng.poisson(rng.exponential(3.0, size=(3, 4, 2, 3)))
    coords = [c.astype(np.int64) for c in np.nonzero(X)]
    counts = X[tuple(coords)].astype(np.int64)
    factors = [rng.exponential(size=(n, 3)) for n in X.shape]
    offsets = _offsets(*factors)
    stats_ = np.zeros((offsets[-1], 3), dtype=np.int64)
    idx = np.stack([c + o for c, o in zip(coords, offsets)], axis=1)
    total = _seeded_sources(17, idx, counts, np.vstack(factors), stats_)
    # Modes 2 and 3 merged into one of length 6 give the same intensities, hence the same draws.
    merged = np.einsum("kr,lr->klr", factors[2], factors[3]).reshape(6, 3)
    kl = coords[2] * 3 + coords[3]
    twin, twin_total = _sources_twin(17, coords[0], coords[1], kl, counts, *factors[:2], merged)
    np.testing.assert_array_equal(stats_[: offsets[2]], np.vstack(twin[:2]))
    np.testing.assert_array_equal(stats_[offsets[2] : offsets[3]],
                                  twin[2].reshape(2, 3, 3).sum(axis=1))
    assert total == pytest.approx(twin_total, rel=1e-13)


def test_one_sweep_records_match_scipy():
    """A sweep's first draws are the S-step's, so its records have an exact twin."""
    rng = np.random.default_rng(4)
    X = rng.poisson(2.0, size=(5, 4, 3))
    ii, jj, kk, counts = _coo(X)
    lams, R = (1.5, 0.5, 2.0), 3
    A, B, C = (rng.exponential(size=(n, R)) for n in X.shape)
    stars = [rng.exponential(size=(n, R)) for n in X.shape]
    (sa, sb, sc), total = _sources_twin(23, ii, jj, kk, counts, A, B, C)
    colsum = [F.sum(axis=0) for F in (A, B, C)]
    # Stage 0: rows 1..4 of A recorded, row 0 held.
    (A1, B1, C1), log_lik, record = _parafac_sweeps(ii, jj, kk, counts, A, B, C, lams, 1, 23, 0, 1, 5, stars[0])
    rate = lams[0] + colsum[1] * colsum[2]
    expected = stats.gamma.logpdf(stars[0], 1 + sa, scale=1 / rate).sum(axis=1)
    np.testing.assert_allclose(record[0], expected[1:], rtol=1e-12)
    # The log-likelihood of the state entering the sweep, up to sum(lgamma(x + 1)).
    assert log_lik[0] == pytest.approx(total - np.sum(colsum[0] * colsum[1] * colsum[2]), rel=1e-13)
    np.testing.assert_array_equal(A1[0], A[0])

    # Stage 1: A held, rows 2..3 of B recorded, rows 0..1 held.
    (A1, B1, C1), _, record = _parafac_sweeps(ii, jj, kk, counts, A, B, C, lams, 1, 23, 1, 2, 4, stars[1])
    rate = lams[1] + colsum[0] * colsum[2]
    expected = stats.gamma.logpdf(stars[1], 1 + sb, scale=1 / rate).sum(axis=1)
    np.testing.assert_allclose(record[0], expected[2:4], rtol=1e-12)
    np.testing.assert_array_equal(A1, A)
    np.testing.assert_array_equal(B1[:2], B[:2])

    # Stage 2: A and B held; component k of C recorded per row, components < k held.
    rate = lams[2] + colsum[0] * colsum[1]
    expected = stats.gamma.logpdf(stars[2], 1 + sc, scale=1 / rate)
    for k in (0, 2):
        (A1, B1, C1), _, record = _parafac_sweeps(ii, jj, kk, counts, A, B, C, lams, 1, 23, 2, k, 0, stars[2])
        np.testing.assert_allclose(record[0], expected[:, k], rtol=1e-12)
        np.testing.assert_array_equal(A1, A)
        np.testing.assert_array_equal(B1, B)
        np.testing.assert_array_equal(C1[:, :k], C[:, :k])


def _scale_chain(seed, A, B, C, lams, n):
    _seed_numba(seed)
    a0, b0 = A[0, 0], B[0, 0]
    F = np.vstack((A, B, C))
    I, J = A.shape[0], B.shape[0]
    offsets = np.array([0, I, I + J, F.shape[0]])
    rates = np.repeat(lams, np.diff(offsets))[:, None] * np.ones_like(F)
    out = np.empty((n, 2))
    for m in range(n):
        scale_moves(F, offsets, 0, np.ones_like(F), rates, 1)
        out[m, 0] = math.log(F[0, 0] / a0)
        out[m, 1] = math.log(F[I, 0] / b0)
    A[:] = F[:I]
    B[:] = F[I : I + J]
    C[:] = F[I + J :]
    return out


def test_scale_move_targets_the_scale_conditional():
    """Iterated alone, the moves of (A, B) then (B, C) sample the target of the three-way scale ridge.

    (u1, u2) ~ exp((I-K) u1 + (J-K) u2 - a e^u1 - b e^u2 - c e^(-u1-u2)).
    """
    rng = np.random.default_rng(6)
    A, B, C = (rng.exponential(size=(n, 1)) for n in (7, 3, 4))
    lams = np.array([1.5, 0.5, 1.0])
    a, b, c = (lam * F.sum() for lam, F in zip(lams, (A, B, C)))
    u = _scale_chain(1, A.copy(), B.copy(), C.copy(), lams, 60000)[::20]
    grid = np.linspace(-8, 8, 801)
    U1, U2 = np.meshgrid(grid, grid, indexing="ij")
    log_density = 3 * U1 - 1 * U2 - a * np.exp(U1) - b * np.exp(U2) - c * np.exp(-U1 - U2)
    density = np.exp(log_density - log_density.max())
    for axis, samples in ((1, u[:, 0]), (0, u[:, 1])):
        cdf = np.cumsum(density.sum(axis=axis))
        cdf /= cdf[-1]
        assert stats.kstest(samples, lambda x: np.interp(x, grid, cdf)).pvalue > 1e-3  # noqa: B023 (called at once)
    # The component tensor, hence the likelihood, is unchanged.
    A2, B2, C2 = A.copy(), B.copy(), C.copy()
    _scale_chain(2, A2, B2, C2, lams, 10)
    np.testing.assert_allclose(np.einsum("ir,jr,kr->ijk", A2, B2, C2),
                               np.einsum("ir,jr,kr->ijk", A, B, C), rtol=1e-12)


@pytest.mark.parametrize("dims", [(7, 3), (3, 8)])
def test_modal_scales_solve_the_two_mode_equation(dims):
    a, b = 2.0, 0.3
    c1, c2 = modal_scales(np.array(dims), np.array([a, b]))
    assert c1 * c2 == pytest.approx(1.0, rel=1e-12)
    # The derivative of (I - J) u - a e^u - b e^-u vanishes at u = log c1.
    assert dims[0] - dims[1] - a * c1 + b / c1 == pytest.approx(0.0, abs=1e-10)


@pytest.mark.parametrize("dims", [(7, 3, 4), (3, 3, 3), (2, 9, 5)])
def test_modal_scales_solve_the_mode_equations(dims):
    a, b, c = 2.0, 0.3, 5.0
    c1, c2, c3 = modal_scales(np.array(dims), np.array([a, b, c]))
    assert c1 * c2 * c3 == pytest.approx(1.0, rel=1e-12)
    u1, u2 = math.log(c1), math.log(c2)
    # The gradient of (I-K)u1 + (J-K)u2 - a e^u1 - b e^u2 - c e^(-u1-u2) vanishes.
    z = c * math.exp(-u1 - u2)
    assert dims[0] - dims[2] - a * math.exp(u1) + z == pytest.approx(0.0, abs=1e-10)
    assert dims[1] - dims[2] - b * math.exp(u2) + z == pytest.approx(0.0, abs=1e-10)


@pytest.mark.parametrize("R", [4, 9])
def test_relabel_undoes_a_permutation(R):
    rng = np.random.default_rng(7)
    A, B, C = (rng.exponential(size=(n, R)) for n in (6, 5, 4))
    order = np.roll(np.arange(R), 1)  # every component moves
    offsets = _offsets(A, B, C)
    F2 = np.vstack([F[:, order] for F in (A * 1.01, B / 1.01, C)])
    ref = np.vstack((A, B, C))
    assert relabel_to(F2, offsets, ref) == 1
    for m, want in enumerate((A * 1.01, B / 1.01, C)):
        np.testing.assert_allclose(F2[offsets[m] : offsets[m + 1]], want)
    assert relabel_to(F2, offsets, ref) == 0


def test_pair_scale_move_on_the_last_two_modes():
    """With the first mode held, the move of B and C samples u ~ exp((J - K) u - b e^u - c e^-u)."""
    rng = np.random.default_rng(9)
    A, B, C = (rng.exponential(size=(n, 1)) for n in (3, 6, 4))
    lams = (1.0, 0.5, 2.0)
    b, c = lams[1] * B.sum(), lams[2] * C.sum()
    F = np.vstack((A, B, C))
    offsets = _offsets(A, B, C)
    rates = np.repeat(lams, np.diff(offsets))[:, None] * np.ones_like(F)
    _seed_numba(4)
    u = np.empty(30000)
    for k in range(u.size):
        scale_moves(F, offsets, 1, np.ones_like(F), rates, 1)
        u[k] = math.log(F[offsets[1], 0] / B[0, 0])
    grid = np.linspace(-8, 8, 4001)
    log_density = (6 - 4) * grid - b * np.exp(grid) - c * np.exp(-grid)
    cdf = np.cumsum(np.exp(log_density - log_density.max()))
    cdf /= cdf[-1]
    assert stats.kstest(u[::15], lambda x: np.interp(x, grid, cdf)).pvalue > 1e-3
    np.testing.assert_array_equal(F[:3], A)
    np.testing.assert_allclose(np.einsum("ir,jr,kr->ijk", *(F[lo:hi] for lo, hi in zip(offsets[:-1], offsets[1:]))),
                               np.einsum("ir,jr,kr->ijk", A, B, C), rtol=1e-12)


# --------------------------------------------------------------------------- method


def _identity(result):
    """The estimate rebuilt from the terms of Chib's identity in its diagnostics."""
    d = result.diagnostics
    return d["log_likelihood"] + d["log_prior"] - d["log_ordinates"].sum() + d["log_label_permutations"]


@pytest.mark.parametrize("lam", [1.0, 3.0])
@pytest.mark.parametrize("offset", [0, 1])
def test_chib_matches_rank1_closed_form(seed, lam, offset):
    X = _rank1(seed + offset, lam)
    exact = rank1_log_evidence(X, lam)
    result = chib_log_evidence(X, 1, lam, random_state=seed + offset)
    assert isinstance(result, EvidenceResult) and result.method == "chib"
    assert abs(result.log_evidence - exact) <= 4 * result.std_error, (result, exact)
    assert 0 < result.std_error < 0.005 * abs(exact)
    assert result.log_evidence == pytest.approx(_identity(result))


def test_chib_matches_rank1_closed_form_with_unequal_rates(seed):
    rates = (0.5, 1.5, 2.0)
    X = _rank1(seed + 2, 1.0, shape=(5, 7, 4))
    exact = rank1_log_evidence(X, *rates)
    result = chib_log_evidence(X, 1, rates, random_state=seed)
    assert abs(result.log_evidence - exact) <= 4 * result.std_error, (result, exact)


def test_chib_all_zero_tensor_is_the_prior_predictive():
    X = np.zeros((4, 3, 2), dtype=int)
    result = chib_log_evidence(X, 1, random_state=0, n_reduced=2000)
    assert abs(result.log_evidence - rank1_log_evidence(X)) <= 4 * result.std_error + 1e-9


@pytest.mark.slow
def test_chib_agrees_with_the_smc_at_rank_2(seed):
    """At the true rank 2 of an 8 x 7 x 6 tensor: within 4 combined standard errors of the SMC.

    Neither standard error covers a bias (Chib: the log of an average, high by
    about half its variance; the SMC: none beyond the spread of its runs).
    """
    X = _tensor(11, (8, 7, 6), 2, scale=2.0)
    chib = chib_log_evidence(X, 2, n_reduced=20000, random_state=seed)
    smc = smc_log_evidence(X, 2, random_state=seed)
    allowed = 4 * math.hypot(chib.std_error, smc.std_error)
    assert abs(chib.log_evidence - smc.log_evidence) <= allowed, (chib.log_evidence, smc.log_evidence, allowed)


@pytest.mark.filterwarnings("ignore:Chib's ordinate averages")
def test_chib_is_reproducible_and_input_format_free():
    X = _tensor(7, (6, 5, 4), 2)
    first = chib_log_evidence(X, 2, random_state=3, **QUICK)
    again = chib_log_evidence(X, 2, random_state=3, **QUICK)
    assert again.log_evidence == first.log_evidence and again.std_error == first.std_error
    assert chib_log_evidence(X, 2, random_state=4, **QUICK).log_evidence != first.log_evidence
    for other in (sparse.coo_array(X), X.astype(float), X.tolist()):
        result = chib_log_evidence(other, 2, random_state=3, **QUICK)
        assert result.log_evidence == first.log_evidence
    # The modes are sorted by length inside: a permuted tensor, with its rates, is the same
    # computation.
    rates = (0.5, 1.0, 2.0)
    a = chib_log_evidence(X, 2, rates, random_state=3, **QUICK)
    b = chib_log_evidence(X.transpose(2, 0, 1), 2, (2.0, 0.5, 1.0), random_state=3, **QUICK)
    assert a.log_evidence == b.log_evidence
    assert a.diagnostics["mode_order"] == (2, 1, 0) and b.diagnostics["mode_order"] == (0, 2, 1)
    np.testing.assert_array_equal(a.diagnostics["log_ordinates"], b.diagnostics["log_ordinates"][[1, 2, 0]])


@pytest.mark.filterwarnings("ignore:Chib's ordinate averages")
def test_chib_result_accounting():
    X = _tensor(8, (5, 7, 4), 1)
    X[0] = 0  # an empty slice, and zeros the sweeps must skip
    result = chib_log_evidence(X, 2, random_state=0, **QUICK)
    d = result.diagnostics
    assert d["n_nonzero"] == np.count_nonzero(X)
    assert result.n_likelihood_evaluations == d["n_nonzero"] * d["n_sweeps"]
    assert d["n_sweeps"] >= QUICK["n_samples"] + QUICK["n_reduced"] - 20
    # Modes sorted by length: mode 2 (4 rows) and mode 0 (5) by blocks, mode 1 (7) by components.
    assert d["mode_order"] == (2, 0, 1)
    assert d["block_rows"][d["block_mode"] == 2].sum() == 4 and d["block_rows"][d["block_mode"] == 0].sum() == 5
    assert set(d["block_mode"]) == {0, 2}
    for mode in (0, 2):
        assert d["log_ordinates"][mode] == pytest.approx(d["block_log_ordinate"][d["block_mode"] == mode].sum())
    assert d["log_ordinates"][1] == pytest.approx(d["component_log_ordinate"].sum())
    assert d["log_likelihood_trace"].shape == (QUICK["n_samples"] - QUICK["n_burnin"],)
    assert result.log_evidence == pytest.approx(_identity(result))
    A, B, C = result.posterior_mean
    assert A.shape == (5, 2) and B.shape == (7, 2) and C.shape == (4, 2)
    V = np.einsum("ir,jr,kr->ijk", A, B, C)
    log_lik = float(np.sum(special.xlogy(X, V) - V - special.gammaln(X + 1.0)))
    assert d["log_likelihood"] == pytest.approx(log_lik, rel=1e-10)
    log_prior = sum(F.size * 0.0 - F.sum() for F in (A, B, C))  # unit rates
    assert d["log_prior"] == pytest.approx(log_prior, rel=1e-10)


def test_chib_warns_when_the_budget_is_too_small():
    X = _tensor(9, (6, 5, 4), 3, scale=3.0)
    with pytest.warns(UserWarning, match="n_reduced"):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Chib's ordinate averages")
            chib_log_evidence(X, 3, n_samples=200, n_burnin=100, n_reduced=40, random_state=0)


def test_estimator_method_chib():
    X = _rank1(5, 2.0)
    est = PoissonPARAFAC(1, 2.0, method="chib", random_state=0).fit(X)
    assert est.result_.method == "chib"
    assert abs(est.log_evidence_ - rank1_log_evidence(X, 2.0)) <= 4 * est.log_evidence_std_
    assert [F.shape for F in est.factors_] == [(6, 1), (5, 1), (4, 1)]
    assert est.score(X) == est.log_evidence_


@pytest.mark.parametrize(
    "X, match",
    [
        (np.array([[[1.0, 2.5]], [[0.0, 1.0]]]), "integer counts; X has non-integer entries"),
        (np.array([[[1, -2]], [[0, 1]]]), "negative"),
        (np.array([[[1.0, np.nan]], [[0.0, 1.0]]]), "NaN or infinity"),
        (np.array([1, 2, 3]), "at least two modes"),
        (np.ones((2, 2, 2, 2)), "matrix or a 3-D tensor"),
        (np.zeros((0, 4, 2)), "empty"),
        (np.array([[["a", "b"]]]), "numeric"),
        (sparse.coo_array(np.array([[[1.0, 0.5]]])), "non-integer"),
    ],
)
def test_chib_rejects_bad_data(X, match):
    with pytest.raises(ValueError, match=match):
        chib_log_evidence(X, 1, **QUICK)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_components=0), "n_components"),
        (dict(n_components=1.5), "n_components"),
        (dict(prior_rates=0.0), "prior_rates"),
        (dict(prior_rates=(1.0, 1.0)), "prior_rates"),
        (dict(n_samples=100, n_burnin=99), "n_burnin"),
        (dict(n_reduced=0), "n_reduced"),
        (dict(block_variance=np.inf), "block_variance"),
    ],
)
def test_chib_rejects_bad_settings(kwargs, match):
    kwargs = {"n_components": 1, **QUICK, **kwargs}
    with pytest.raises(ValueError, match=match):
        chib_log_evidence(np.ones((3, 3, 3)), **kwargs)
