"""The fused PARAFAC kernels against their NumPy twin (tests/naive_parafac.py); their guarantees."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import gammaln

from naive_parafac import naive_parafac_chain, naive_prior_scores
from skevidence._config import MAX_CAPPED_FRACTION
from skevidence.exceptions import SamplerDivergenceError
from skevidence.cp.kernels import rng as _rng
from skevidence.cp.data import group_tensor_by_blocks
from skevidence.cp.kernels.parafac import (
    PARAFACData,
    compile_parafac_kernels,
    run_parafac_chain,
    score_parafac_prior,
)

# (I, J, K, R, B): B = 1; B = 2 and 3 with uneven groups; B = min(I, J, K).
SHAPES = [(5, 4, 3, 2, 1), (7, 6, 5, 3, 2), (8, 7, 10, 2, 3), (4, 6, 5, 1, 4)]
# (sampler, freeze, step_a): steps that move the factors by O(1) in 20 iterations.
SAMPLERS = [
    ("sgld", True, 3e-5), ("psgld", True, 1e-7), ("psgld", False, 1e-7), ("logsgld", True, 0.05)
]


@pytest.fixture(scope="module", autouse=True)
def compiled():
    compile_parafac_kernels()


def _problem(I, J, K, R, seed, density=1.0):
    rng = np.random.default_rng(seed)
    A, B, C = (rng.gamma(1.0, 1.0, (n, R)) for n in (I, J, K))
    X = rng.poisson(np.einsum("ir,jr,kr->ijk", A, B, C)).astype(float)
    if density < 1.0:
        X[rng.random(X.shape) > density] = 0.0
    return X, [rng.uniform(0.5, 1.5, (n, R)) for n in (I, J, K)]


def _settings(sampler="psgld", freeze=True, step_a=1e-7, **kw):
    out = dict(temperature=1.0, n_samples=20, n_burnin=5, step_a=step_a, step_b=0.51,
               sampler=sampler, alpha=0.99, sigma=1e-5, freeze=freeze, prior_rates=(1.0, 1.5, 0.7),
               max_capped_fraction=1.0)
    out.update(kw)
    return out


def _coo(X):
    return sp.coo_array(X)


def _run(X, factors, n_blocks, sparse, seed, **settings):
    data = PARAFACData.from_array(_coo(X) if sparse else X, n_blocks)
    factors = [f.copy() for f in factors]
    result = run_parafac_chain(data, factors, seed_seq=np.random.SeedSequence(seed), **settings)
    return result, factors


# --- kernel against twin -----------------------------------------------------------------------

_TWINS = {}


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("temperature", [0.3, 1.0])
@pytest.mark.parametrize("sampler, freeze, step_a", SAMPLERS,
                         ids=["sgld", "psgld-freeze", "psgld", "logsgld"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_kernel_matches_twin(shape, sampler, freeze, step_a, temperature, sparse):
    I, J, K, R, B = shape
    X, factors = _problem(I, J, K, R, seed=I * J * K + R, density=0.6)
    settings = _settings(sampler, freeze, step_a, temperature=temperature)
    result, ends = _run(X, factors, B, sparse, seed=11, **settings)
    key = (shape, sampler, freeze, temperature)
    if key not in _TWINS:  # the dense and sparse cases share one twin run
        data = PARAFACData.from_array(X, B)
        _TWINS[key] = naive_parafac_chain(X, factors, bounds=data.bounds,
                                          seed_seq=np.random.SeedSequence(11), **settings)
    twin = _TWINS[key]
    assert result.log_likelihood.shape == (15,)
    assert_allclose(result.log_likelihood, twin["log_likelihood"], rtol=1e-10)
    for m in range(3):
        assert_allclose(ends[m], twin["factors"][m], rtol=1e-10, atol=1e-10, err_msg=f"factor {m}")
        assert_allclose(result.factor_means[m], twin["means"][m], rtol=1e-10, atol=1e-10,
                        err_msg=f"mean {m}")
    assert result.step_size == twin["step_size"]
    assert result.n_likelihood_evaluations == twin["n_likelihood_evaluations"]
    assert result.capped_fraction == twin["capped_fraction"]
    assert max(np.abs(e - f).max() for e, f in zip(ends, factors)) > 0.05  # the chain did move


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_dense_and_sparse_kernels_agree(temperature):
    X, factors = _problem(12, 10, 9, 3, seed=5, density=0.4)
    settings = _settings(n_samples=60, n_burnin=20, temperature=temperature)
    rd, Fd = _run(X, factors, 3, False, seed=2, **settings)
    rs, Fs = _run(X, factors, 3, True, seed=2, **settings)
    assert_allclose(rs.log_likelihood, rd.log_likelihood, rtol=1e-9)
    for a, b in zip(Fs + list(rs.factor_means), Fd + list(rd.factor_means)):
        assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    assert rs.n_likelihood_evaluations == rd.n_likelihood_evaluations


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 numba threads")
@pytest.mark.parametrize("sampler, step_a", [("psgld", 1e-7), ("logsgld", 0.05)])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_results_do_not_depend_on_thread_count(sparse, sampler, step_a, monkeypatch):
    import skevidence.cp.kernels.sgmcmc as kernels

    # Small parts normally run serially; force the parallel kernel for 2 threads.
    monkeypatch.setattr(kernels, "PARALLEL_MIN_PART", 0)
    X, factors = _problem(11, 9, 8, 3, seed=3, density=0.7)
    settings = _settings(sampler, step_a=step_a, n_samples=50, n_burnin=10)
    runs = []
    previous = numba.get_num_threads()
    try:
        for n_threads in (1, 2):
            numba.set_num_threads(n_threads)
            runs.append(_run(X, factors, 3, sparse, seed=4, **settings))
    finally:
        numba.set_num_threads(previous)
    (r1, F1), (r2, F2) = runs
    assert_array_equal(r1.log_likelihood, r2.log_likelihood)
    for a, b in zip(F1 + list(r1.factor_means), F2 + list(r2.factor_means)):
        assert_array_equal(a, b)


def test_same_seed_same_chain_other_seed_other_chain():
    X, factors = _problem(6, 5, 4, 2, seed=0)
    a, b, c = (_run(X, factors, 2, False, seed=s, **_settings())[0] for s in (1, 1, 2))
    assert_array_equal(a.log_likelihood, b.log_likelihood)
    assert not np.array_equal(a.log_likelihood, c.log_likelihood)


def test_every_part_is_drawn_and_covers_the_tensor():
    """Parts are drawn at random among the B**2; each part's blocks are disjoint in every mode."""
    X, factors = _problem(6, 6, 6, 1, seed=1)
    data = PARAFACData.from_array(X, 3)
    ib, jb, kb = data.bounds
    covered = np.zeros(X.shape, dtype=int)
    for p in range(3):
        for q in range(3):
            for b in range(3):
                c, d = (b + p) % 3, (b + q) % 3
                covered[ib[b] : ib[b + 1], jb[c] : jb[c + 1], kb[d] : kb[d + 1]] += 1
    assert np.all(covered == 1)  # the 9 parts tile the tensor
    # The master stream's part indices are uniform over 0..8 (the kernel draws one per iteration).
    state = _rng.seed_streams(np.random.SeedSequence(0), 1)[0]
    parts = np.array([_rng.uniform_index(state, 9) for _ in range(9000)])
    assert set(parts) == set(range(9)) and np.bincount(parts).min() > 850


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_part_estimates_are_unbiased_for_uneven_groups(sparse):
    """B**2 times a part's log-likelihood, averaged over the B**2 parts, is the full log-likelihood.

    Groups of 7, 5 and 8 into 3 make parts of different sizes, where N / N_s
    would be biased. A chain with a negligible step keeps one state and
    records the part estimates of the parts it draws.
    """
    X, factors = _problem(7, 5, 8, 2, seed=9, density=0.7)
    data = PARAFACData.from_array(_coo(X) if sparse else X, 3)
    settings = _settings("sgld", step_a=1e-200, step_b=0.0, n_samples=400, n_burnin=0)
    result = run_parafac_chain(data, [f.copy() for f in factors],
                               seed_seq=np.random.SeedSequence(0), **settings)
    parts = np.unique(np.round(result.log_likelihood, 6))
    assert parts.size == 9  # every part drawn, each with its own estimate
    V = np.einsum("ir,jr,kr->ijk", *factors)
    full = np.sum(X * np.log(V) - V - gammaln(X + 1))
    assert parts.mean() == pytest.approx(full, rel=1e-9)


# --- guarantees and errors ---------------------------------------------------------------------


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_overlong_steps_raise_and_leave_the_state_alone(sparse):
    # The drift cap keeps even a step of 1e12 finite: that it cuts nearly every update is
    # what marks the chain as diverged.
    X, factors = _problem(6, 5, 4, 2, seed=1)
    data = PARAFACData.from_array(_coo(X) if sparse else X, 2)
    before = [f.copy() for f in factors]
    with pytest.raises(SamplerDivergenceError, match="too long") as info:
        run_parafac_chain(data, factors, seed_seq=np.random.SeedSequence(0),
                          **_settings("sgld", step_a=1e12, step_b=0.0, n_samples=500,
                                      max_capped_fraction=MAX_CAPPED_FRACTION))
    err = info.value
    assert err.temperature == 1.0 and err.step_size == 1e12 and err.iteration == 500
    assert "step_size" in str(err)
    for f, g in zip(factors, before):
        assert_array_equal(f, g)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_non_finite_gradient_raises(sparse):
    # A zero row of A under counts makes x / V infinite: the cap must not hide it.
    X, factors = _problem(6, 5, 4, 2, seed=1)
    X[0] += 1.0
    factors[0][0] = 0.0
    data = PARAFACData.from_array(_coo(X) if sparse else X, 2)
    with pytest.raises(SamplerDivergenceError, match="non-finite gradient or state") as info:
        run_parafac_chain(data, factors, seed_seq=np.random.SeedSequence(0), **_settings(n_burnin=0))
    assert info.value.iteration == 1


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_mirroring_keeps_factors_nonnegative(sparse):
    # At t = 0 the drift is -lambda: without mirroring most entries would go negative.
    X, factors = _problem(8, 7, 6, 3, seed=2)
    factors = [0.01 * f for f in factors]
    result, ends = _run(X, factors, 3, sparse, seed=0,
                        **_settings("sgld", step_a=1e-2, step_b=0.0, temperature=0.0,
                                    prior_rates=50.0, n_samples=200, n_burnin=100))
    for F in ends + list(result.factor_means):
        assert np.all(F >= 0.0) and np.all(np.isfinite(F))
    assert np.all(np.isfinite(result.log_likelihood))


def test_logsgld_samples_the_prior_at_t0():
    # At t = 0 log-space SGLD targets the Exp(lambda) priors: check the means.
    X, factors = _problem(10, 8, 6, 2, seed=6)
    rates = (1.0, 2.0, 0.5)
    result, ends = _run(X, factors, 2, False, seed=3,
                        **_settings("logsgld", step_a=0.02, step_b=0.0, temperature=0.0,
                                    prior_rates=rates, n_samples=20000, n_burnin=1000))
    for F, mean, lam in zip(ends, result.factor_means, rates):
        assert np.all(F > 0.0)
        assert abs(mean.mean() * lam - 1.0) < 0.1


def test_logsgld_needs_positive_factors():
    X, factors = _problem(4, 4, 4, 2, seed=0)
    factors[1][0, 0] = 0.0
    with pytest.raises(ValueError, match="strictly positive"):
        run_parafac_chain(PARAFACData.from_array(X, 2), factors, seed_seq=np.random.SeedSequence(0),
                          **_settings("logsgld", step_a=0.01))


def test_state_is_updated_in_place_and_chains_warm_start():
    X, factors = _problem(7, 6, 5, 2, seed=4)
    data = PARAFACData.from_array(X, 3)
    start = [f.copy() for f in factors]
    run_parafac_chain(data, factors, seed_seq=np.random.SeedSequence(0), **_settings())
    assert not np.array_equal(factors[0], start[0])
    # A second chain from the first one's end = the twin's chain from that warm start.
    second = [f.copy() for f in factors]
    settings = _settings(n_samples=10, n_burnin=2)
    run_parafac_chain(data, second, seed_seq=np.random.SeedSequence(1), **settings)
    twin = naive_parafac_chain(X, factors, bounds=data.bounds, seed_seq=np.random.SeedSequence(1),
                               **settings)
    for a, b in zip(second, twin["factors"]):
        assert_allclose(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_prior_scoring_matches_twin(shape, sparse):
    I, J, K, R, B = shape
    X, _ = _problem(I, J, K, R, seed=I + J + K, density=0.5)
    data = PARAFACData.from_array(_coo(X) if sparse else X, B)
    rates = (1.5, 0.7, 1.1)
    result, last = score_parafac_prior(data, R, 7, prior_rates=rates,
                                       seed_seq=np.random.SeedSequence(11))
    streams = _rng.seed_streams(np.random.SeedSequence(11), 2)
    scores, means, twin_last = naive_prior_scores(X, R, 7, prior_rates=rates, bounds=data.bounds,
                                                  streams=streams)
    assert_allclose(result.log_likelihood, scores, rtol=1e-10)
    for a, b in zip(list(result.factor_means) + list(last), means + twin_last):
        assert_allclose(a, b, rtol=1e-12)
    assert np.isnan(result.step_size) and result.n_likelihood_evaluations > 0


def test_grouping_sums_duplicates_drops_zeros_and_blocks():
    coords = (np.array([0, 0, 3, 4, 1, 4, 2]), np.array([1, 1, 0, 2, 3, 2, 2]),
              np.array([0, 0, 1, 2, 2, 2, 0]))
    vals = np.array([1.0, 2.0, 5.0, 1.0, 0.0, 2.0, 4.0])
    X = sp.coo_array((vals, coords), shape=(5, 4, 3))
    dense = X.toarray()  # toarray sums the duplicates
    data = PARAFACData.from_array(X, 2)
    assert X.nnz == 7  # the caller's tensor is left alone
    assert data.nnz == 4 and data.block_ptr[-1] == 4 and np.all(data.vals > 0)
    rebuilt = np.zeros(dense.shape)
    rebuilt[data.ii, data.jj, data.kk] = data.vals
    assert_array_equal(rebuilt, dense)
    ib, jb, kb = data.bounds
    for q in range(8):
        g, h, m = q // 4, (q // 2) % 2, q % 2
        block = dense[ib[g] : ib[g + 1], jb[h] : jb[h + 1], kb[m] : kb[m + 1]]
        assert data.block_ptr[q + 1] - data.block_ptr[q] == np.count_nonzero(block)
        assert_allclose(data.block_lgamma[q], gammaln(block + 1).sum())
    dense_data = PARAFACData.from_array(dense, 2)
    assert_allclose(dense_data.block_lgamma, data.block_lgamma)
    for a, b in zip(dense_data.mode_sums, data.mode_sums):
        assert_allclose(a, b)
    # The grouping helper on its own, with explicit duplicates in the input.
    out = group_tensor_by_blocks(coords, vals, (5, 4, 3), data.bounds, 2)
    assert_array_equal(out[3], data.vals)


def test_input_validation():
    X, factors = _problem(5, 4, 3, 2, seed=0)
    data = PARAFACData.from_array(X, 2)
    ss = np.random.SeedSequence(0)
    with pytest.raises(ValueError, match="B must have shape"):
        run_parafac_chain(data, [factors[0], factors[1][:3], factors[2]], seed_seq=ss,
                          **_settings())
    with pytest.raises(ValueError, match="non-negative"):
        run_parafac_chain(data, [factors[0], -factors[1], factors[2]], seed_seq=ss, **_settings())
    with pytest.raises(ValueError, match="3 arrays"):
        run_parafac_chain(data, factors[:2], seed_seq=ss, **_settings())
    with pytest.raises(ValueError, match="n_burnin"):
        run_parafac_chain(data, factors, seed_seq=ss, **_settings(n_burnin=20))
    with pytest.raises(ValueError, match="sampler"):
        run_parafac_chain(data, factors, seed_seq=ss, **_settings("sghmc"))
    with pytest.raises(ValueError, match="prior_rates"):
        run_parafac_chain(data, factors, seed_seq=ss, **_settings(prior_rates=(1.0, -1.0, 1.0)))
    with pytest.raises(TypeError, match="PARAFACData"):
        run_parafac_chain(X, factors, seed_seq=ss, **_settings())
    with pytest.raises(ValueError, match="negative"):
        PARAFACData.from_array(-X, 2)
    with pytest.raises(ValueError, match="NaN"):
        PARAFACData.from_array(np.where(X > 1, np.nan, X), 2)
    with pytest.raises(ValueError, match="3-D"):
        PARAFACData.from_array(X[0], 2)
    with pytest.raises(ValueError, match="empty"):
        PARAFACData.from_array(np.zeros((0, 3, 3)), 1)
    with pytest.raises(ValueError, match=r"n_blocks=4 is larger than the number of mode-3"):
        PARAFACData.from_array(X, 4)
