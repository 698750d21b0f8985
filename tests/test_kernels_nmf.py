"""The fused NMF kernels against their NumPy twin (tests/naive_nmf.py), and their guarantees."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy import special, stats
from scipy.special import gammaln

from naive_nmf import PyXoshiro, naive_nmf_chain, naive_prior_scores
from skevidence._config import MAX_CAPPED_FRACTION
from skevidence.exceptions import SamplerDivergenceError
from skevidence.cp.data import NMFData, block_bounds, group_by_blocks
from skevidence.cp.kernels import rng as _rng
from skevidence.cp.kernels.nmf import compile_nmf_kernels, run_nmf_chain

# (I, J, R, B): B = 1, even and uneven groups, B = min(I, J).
SHAPES = [(7, 5, 2, 1), (10, 8, 3, 2), (13, 11, 2, 3), (9, 12, 4, 4), (6, 5, 1, 5)]
# (sampler, freeze, step_a): steps that move W, H by O(1) in 20 iterations.
SAMPLERS = [("sgld", True, 1e-4), ("psgld", True, 1e-6), ("psgld", False, 1e-6), ("logsgld", True, 0.05)]


@pytest.fixture(scope="module", autouse=True)
def compiled():
    compile_nmf_kernels()


def _problem(I, J, R, seed):
    rng = np.random.default_rng(seed)
    X = rng.poisson(0.5 * rng.gamma(1.0, 1.0, (I, R)) @ rng.gamma(1.0, 1.0, (R, J))).astype(float)
    return X, rng.uniform(0.5, 1.5, (I, R)), rng.uniform(0.5, 1.5, (R, J))


def _settings(sampler="psgld", freeze=True, step_a=1e-6, **kw):
    out = dict(temperature=1.0, n_samples=20, n_burnin=5, step_a=step_a, step_b=0.51,
               sampler=sampler, alpha=0.99, sigma=1e-5, freeze=freeze, lam_w=1.0, lam_h=1.5,
               max_capped_fraction=1.0)
    out.update(kw)
    return out


def _run(X, W, H, B, sparse, seed, **settings):
    data = NMFData.from_array(sp.csr_array(X) if sparse else X, B)
    W, H = W.copy(), H.copy()
    result = run_nmf_chain(data, W, H, seed_seq=np.random.SeedSequence(seed), **settings)
    return result, W, H


# --- the generator -----------------------------------------------------------------------------


def test_xoshiro_matches_reference_and_python_twin():
    state = np.array([1, 2, 3, 4], dtype=np.uint64)
    ref = PyXoshiro(state)
    # First outputs of the reference C code from state {1, 2, 3, 4}.
    assert [int(_rng.next_uint64(state)) for _ in range(2)] == [11520, 0]
    ref.next_uint64(), ref.next_uint64()
    got = [int(_rng.next_uint64(state)) for _ in range(500)]
    assert got == [ref.next_uint64() for _ in range(500)]
    assert [int(w) for w in state] == ref.s
    out = np.empty(7)  # odd: the last spare is discarded
    for _ in range(3):
        _rng.fill_standard_normal(state, out)
        assert_allclose(out, ref.standard_normals(7), rtol=1e-15, atol=0)
    assert [int(w) for w in state] == ref.s
    # long enough to take the ziggurat's tail and wedge paths many times
    z = np.empty(40_000)
    _rng.fill_standard_normal(state, z)
    assert_allclose(z, ref.standard_normals(z.size), rtol=1e-15, atol=0)
    assert [int(w) for w in state] == ref.s
    assert np.sum(np.abs(z) > _rng.ZIGGURAT_R) >= 3
    idx = [int(_rng.uniform_index(state, 5)) for _ in range(200)]
    assert idx == [ref.uniform_index(5) for _ in range(200)]
    assert set(idx) == set(range(5))


def test_normals_and_uniforms_have_the_right_law():
    state = _rng.seed_streams(np.random.SeedSequence(1), 1)[0]
    z = np.empty(400_000)
    _rng.fill_standard_normal(state, z)
    # moments within about 4 standard errors (SE of the variance: sqrt(2 / n))
    assert abs(z.mean()) < 4 / np.sqrt(z.size) and abs(z.var() - 1.0) < 4 * np.sqrt(2 / z.size)
    assert stats.kstest(z, "norm").pvalue > 1e-3
    # the tail beyond r (layer 0's slow path) has the normal's mass: binomial, 4 SE
    p_tail = 2 * stats.norm.sf(_rng.ZIGGURAT_R)
    n_tail = np.sum(np.abs(z) > _rng.ZIGGURAT_R)
    assert abs(n_tail - z.size * p_tail) < 4 * np.sqrt(z.size * p_tail)
    u = np.array([_rng.next_double(state) for _ in range(5000)])
    assert np.all((u > 0.0) & (u < 1.0)) and abs(u.mean() - 0.5) < 0.02


def test_ziggurat_layers_have_equal_areas_and_close_at_the_top():
    x, f = _rng._ZIG_X, _rng._ZIG_F
    n, r, v = _rng.ZIGGURAT_LAYERS, _rng.ZIGGURAT_R, _rng.ZIGGURAT_V
    assert x.shape == (n + 1,) and x[1] == r and x[n] == 0.0 and np.all(np.diff(x) < 0)
    assert_allclose(f, np.exp(-0.5 * x * x), rtol=1e-15)
    # layers 1 .. n-1: boxes [0, x_i] x [f(x_i), f(x_i+1)] of area v (the top one closes at f = 1)
    assert_allclose(x[1:n] * (f[2:] - f[1:n]), v, rtol=1e-8)
    # layer 0: the base box plus the tail beyond r, also of area v, drawn as [0, x_0]
    tail = np.sqrt(np.pi / 2) * special.erfc(r / np.sqrt(2))
    assert_allclose(r * f[1] + tail, v, rtol=1e-9)
    assert_allclose(x[0] * f[1], v, rtol=1e-14)


def test_seed_streams_is_deterministic_and_never_all_zero():
    a = _rng.seed_streams(np.random.SeedSequence(7), 6)
    assert a.shape == (6, 4) and a.dtype == np.uint64 and a.flags.c_contiguous
    assert_array_equal(a, _rng.seed_streams(np.random.SeedSequence(7), 6))
    assert len({tuple(r) for r in a}) == 6 and np.all(a.any(axis=1))

    class ZeroSeeds(np.random.SeedSequence):
        def generate_state(self, n_words, dtype=np.uint32):
            return np.zeros(n_words, dtype=dtype)

    z = _rng.seed_streams(ZeroSeeds(0), 2)
    assert np.all(z[:, 0] == _rng.ZERO_STATE_FILLER) and np.all(z[:, 1:] == 0)
    with pytest.raises(TypeError, match="SeedSequence"):
        _rng.seed_streams(0, 2)


# --- kernel against twin -----------------------------------------------------------------------


_TWINS = {}


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("temperature", [0.3, 1.0])
@pytest.mark.parametrize("sampler, freeze, step_a", SAMPLERS, ids=["sgld", "psgld-freeze", "psgld", "logsgld"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_kernel_matches_twin(shape, sampler, freeze, step_a, temperature, sparse):
    I, J, R, B = shape
    X, W, H = _problem(I, J, R, seed=I * J + R)
    settings = _settings(sampler, freeze, step_a, temperature=temperature)
    result, W_end, H_end = _run(X, W, H, B, sparse, seed=11, **settings)
    key = (shape, sampler, freeze, temperature)
    if key not in _TWINS:  # the dense and sparse cases share one twin run
        _TWINS[key] = naive_nmf_chain(
            X, W, H, row_bounds=block_bounds(I, B), col_bounds=block_bounds(J, B),
            seed_seq=np.random.SeedSequence(11), **settings,
        )
    twin = _TWINS[key]
    assert result.log_likelihood.shape == (15,)
    assert_allclose(result.log_likelihood, twin["log_likelihood"], rtol=1e-10)
    ends = [(W_end, "W"), (H_end, "H"), (result.W_mean, "W_mean"), (result.H_mean, "H_mean")]
    for got, key in ends:
        assert_allclose(got, twin[key], rtol=1e-10, atol=1e-10, err_msg=key)
    assert result.step_size == twin["step_size"]
    assert result.n_likelihood_evaluations == twin["n_likelihood_evaluations"]
    assert result.capped_fraction == twin["capped_fraction"]
    assert np.abs(W_end - W).max() > 0.05  # the chain did move


def test_dense_and_sparse_kernels_agree():
    X, W, H = _problem(30, 25, 3, seed=5)
    X[np.random.default_rng(0).random(X.shape) < 0.5] = 0.0
    settings = _settings(n_samples=60, n_burnin=20)
    rd, Wd, Hd = _run(X, W, H, 4, False, seed=2, **settings)
    rs, Ws, Hs = _run(X, W, H, 4, True, seed=2, **settings)
    assert_allclose(rs.log_likelihood, rd.log_likelihood, rtol=1e-9)
    for a, b in [(Ws, Wd), (Hs, Hd), (rs.W_mean, rd.W_mean), (rs.H_mean, rd.H_mean)]:
        assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    assert rs.n_likelihood_evaluations == rd.n_likelihood_evaluations


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 numba threads")
@pytest.mark.parametrize("sampler, step_a", [("psgld", 1e-6), ("logsgld", 0.05)])
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_results_do_not_depend_on_thread_count(sparse, sampler, step_a, monkeypatch):
    import skevidence.cp.kernels.sgmcmc as kernels

    # Small parts normally run serially; force the parallel kernel for 2 threads.
    monkeypatch.setattr(kernels, "PARALLEL_MIN_PART", 0)
    X, W, H = _problem(23, 19, 3, seed=3)
    settings = _settings(sampler, step_a=step_a, n_samples=50, n_burnin=10)
    runs = []
    previous = numba.get_num_threads()
    try:
        for n_threads in (1, 2):
            numba.set_num_threads(n_threads)
            runs.append(_run(X, W, H, 5, sparse, seed=4, **settings))
    finally:
        numba.set_num_threads(previous)
    (r1, W1, H1), (r2, W2, H2) = runs
    for a, b in [(r1.log_likelihood, r2.log_likelihood), (W1, W2), (H1, H2),
                 (r1.W_mean, r2.W_mean), (r1.H_mean, r2.H_mean)]:
        assert_array_equal(a, b)


def test_same_seed_same_chain_other_seed_other_chain():
    X, W, H = _problem(12, 10, 2, seed=0)
    a, b, c = (_run(X, W, H, 3, False, seed=s, **_settings())[0] for s in (1, 1, 2))
    assert_array_equal(a.log_likelihood, b.log_likelihood)
    assert not np.array_equal(a.log_likelihood, c.log_likelihood)


# --- guarantees and errors ---------------------------------------------------------------------


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_overlong_steps_raise_and_leave_the_state_alone(sparse):
    # The drift cap keeps even a step of 1e12 finite, so the chain cannot overflow: that the
    # cap cuts nearly every update is what marks it as diverged.
    X, W, H = _problem(10, 8, 2, seed=1)
    data = NMFData.from_array(sp.csr_array(X) if sparse else X, 2)
    W0, H0 = W.copy(), H.copy()
    with pytest.raises(SamplerDivergenceError, match="too long") as info:
        run_nmf_chain(data, W, H, seed_seq=np.random.SeedSequence(0),
                      **_settings("sgld", step_a=1e12, step_b=0.0, n_samples=500,
                                  max_capped_fraction=MAX_CAPPED_FRACTION))
    err = info.value
    assert err.temperature == 1.0 and err.step_size == 1e12 and err.iteration == 500
    assert "t=1" in str(err) and "iteration 500" in str(err) and "step_size" in str(err)
    assert_array_equal(W, W0)
    assert_array_equal(H, H0)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_non_finite_gradient_raises(sparse):
    # A zero row of W under counts makes x / V infinite: the cap must not hide it.
    X, W, H = _problem(10, 8, 2, seed=1)
    X[0] += 1.0
    W[0] = 0.0
    data = NMFData.from_array(sp.csr_array(X) if sparse else X, 2)
    with pytest.raises(SamplerDivergenceError, match="non-finite gradient or state") as info:
        run_nmf_chain(data, W, H, seed_seq=np.random.SeedSequence(0), **_settings(n_burnin=0))
    assert info.value.iteration == 1


def test_capped_fraction_threshold():
    X, W, H = _problem(10, 8, 2, seed=1)
    data = NMFData.from_array(X, 2)

    def run(limit):
        return run_nmf_chain(data, W.copy(), H.copy(), seed_seq=np.random.SeedSequence(3),
                             **_settings(step_a=3e-4, step_b=0.0, n_samples=60, max_capped_fraction=limit))

    fraction = run(1.0).capped_fraction
    assert 0.0 < fraction < 1.0
    assert run(fraction).capped_fraction == fraction  # at the limit: no error
    with pytest.raises(SamplerDivergenceError, match="too long"):
        run(0.999 * fraction)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_mirroring_keeps_factors_nonnegative(sparse):
    # At t = 0 the drift is -lambda: without mirroring most entries would go negative.
    X, W, H = _problem(15, 12, 3, seed=2)
    W, H = 0.01 * W, 0.01 * H
    result, W_end, H_end = _run(X, W, H, 3, sparse, seed=0,
                                **_settings("sgld", step_a=1e-2, step_b=0.0, temperature=0.0,
                                            lam_w=50.0, lam_h=50.0, n_samples=200, n_burnin=100))
    for A in (W_end, H_end, result.W_mean, result.H_mean):
        assert np.all(A >= 0.0) and np.all(np.isfinite(A))
    assert np.all(np.isfinite(result.log_likelihood))


def test_logsgld_samples_the_prior_at_t0_and_stays_positive():
    # At t = 0 log-space SGLD targets the Exp(lambda) prior: check its first two moments.
    X, W, H = _problem(20, 15, 2, seed=6)
    lam_w, lam_h = 1.0, 2.0
    data = NMFData.from_array(X, 3)
    W, H = W.copy(), H.copy()
    result = run_nmf_chain(data, W, H, seed_seq=np.random.SeedSequence(3),
                           **_settings("logsgld", step_a=0.02, step_b=0.0, temperature=0.0,
                                       lam_w=lam_w, lam_h=lam_h, n_samples=20000, n_burnin=1000))
    assert np.all(W > 0.0) and np.all(H > 0.0)
    assert abs(result.W_mean.mean() * lam_w - 1.0) < 0.1
    assert abs(result.H_mean.mean() * lam_h - 1.0) < 0.1


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_logsgld_far_start_is_tamed_like_the_twin(sparse):
    # Factors 1000x too large: the data-given preconditioner underestimates the
    # curvature and the raw drift would overflow exp; the clipped drift pulls
    # the chain back down, identically in kernel and twin.
    X, W, H = _problem(12, 9, 2, seed=3)
    W, H = 1e3 * W, 1e3 * H
    settings = _settings("logsgld", step_a=0.01, step_b=0.0, n_samples=40, n_burnin=5)
    result, W_end, H_end = _run(X, W, H, 3, sparse, seed=5, **settings)
    twin = naive_nmf_chain(X, W, H, row_bounds=block_bounds(12, 3), col_bounds=block_bounds(9, 3),
                           seed_seq=np.random.SeedSequence(5), **settings)
    assert_allclose(result.log_likelihood, twin["log_likelihood"], rtol=1e-10)
    assert_allclose(W_end, twin["W"], rtol=1e-10)
    assert_allclose(H_end, twin["H"], rtol=1e-10)
    # The intensity came down by orders of magnitude without overflowing.
    assert np.all(np.isfinite(result.log_likelihood))
    assert (W_end @ H_end).mean() < 1e-2 * (W @ H).mean()


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_logsgld_divergence_raises(sparse):
    # A huge log-space step sends entries to 0 or infinity through the noise
    # (the drift is clipped): a divergence, not a ZeroDivisionError.
    X, W, H = _problem(10, 8, 2, seed=1)
    data = NMFData.from_array(sp.csr_array(X) if sparse else X, 2)
    with pytest.raises(SamplerDivergenceError, match="step_size"):
        run_nmf_chain(data, W.copy(), H.copy(), seed_seq=np.random.SeedSequence(0),
                      **_settings("logsgld", step_a=1e5, step_b=0.0, n_samples=500))


def test_logsgld_needs_positive_factors():
    X, W, H = _problem(6, 5, 2, seed=0)
    W[0, 0] = 0.0
    with pytest.raises(ValueError, match="strictly positive"):
        run_nmf_chain(NMFData.from_array(X, 2), W, H, seed_seq=np.random.SeedSequence(0),
                      **_settings("logsgld", step_a=0.01))


def test_block_bounds():
    assert_array_equal(block_bounds(10, 3), [0, 4, 7, 10])
    assert_array_equal(block_bounds(5, 5), [0, 1, 2, 3, 4, 5])
    assert_array_equal(block_bounds(4, 1), [0, 4])
    assert block_bounds(10, 3).dtype == np.int64
    with pytest.raises(ValueError, match=r"n_blocks=6 is larger than the number of rows \(5\)"):
        block_bounds(5, 6, what="rows")
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="n_blocks must be an integer >= 1"):
            block_bounds(5, bad)
    with pytest.raises(ValueError, match="number of columns"):
        NMFData.from_array(np.ones((8, 3)), 4)


def test_group_by_blocks_sums_duplicates_and_drops_zeros():
    rows = np.array([0, 0, 3, 4, 1, 4, 2])
    cols = np.array([1, 1, 0, 4, 3, 4, 2])
    vals = np.array([1.0, 2.0, 5.0, 1.0, 0.0, 2.0, 4.0])
    X = sp.coo_array((vals, (rows, cols)), shape=(5, 5))
    rb, cb = block_bounds(5, 2), block_bounds(5, 2)
    r, c, v, ptr, lg = group_by_blocks(X, rb, cb, 2)
    assert X.nnz == 7  # the caller's matrix is left alone
    dense = X.toarray()
    assert len(v) == 4 and ptr[-1] == 4 and np.all(v > 0)
    assert_array_equal(sp.coo_array((v, (r, c)), shape=(5, 5)).toarray(), dense)
    for q in range(4):
        g, h = divmod(q, 2)
        block = dense[rb[g] : rb[g + 1], cb[h] : cb[h + 1]]
        assert ptr[q + 1] - ptr[q] == np.count_nonzero(block)
        assert np.all((r[ptr[q] : ptr[q + 1]] >= rb[g]) & (r[ptr[q] : ptr[q + 1]] < rb[g + 1]))
        assert_allclose(lg[q], gammaln(block + 1).sum())
    dense_data = NMFData.from_array(dense, 2)
    assert_allclose(NMFData.from_array(X, 2).block_lgamma, dense_data.block_lgamma)


def test_input_validation():
    X, W, H = _problem(6, 5, 2, seed=0)
    data = NMFData.from_array(X, 2)
    ss = np.random.SeedSequence(0)
    with pytest.raises(ValueError, match="W must have shape"):
        run_nmf_chain(data, W[:5], H, seed_seq=ss, **_settings())
    with pytest.raises(ValueError, match="non-negative"):
        run_nmf_chain(data, -W, H, seed_seq=ss, **_settings())
    with pytest.raises(ValueError, match="n_burnin"):
        run_nmf_chain(data, W, H, seed_seq=ss, **_settings(n_burnin=20))
    with pytest.raises(ValueError, match="sampler"):
        run_nmf_chain(data, W, H, seed_seq=ss, **_settings("sghmc"))
    with pytest.raises(ValueError, match="negative"):
        NMFData.from_array(-X, 2)
    with pytest.raises(TypeError, match="NMFData"):
        run_nmf_chain(X, W, H, seed_seq=ss, **_settings())


def test_state_is_updated_in_place_and_chains_warm_start():
    X, W, H = _problem(12, 9, 2, seed=4)
    data = NMFData.from_array(X, 3)
    W_in = W.copy()
    run_nmf_chain(data, W, H, seed_seq=np.random.SeedSequence(0), **_settings())
    assert not np.array_equal(W, W_in)
    # Two chains of 10 = the twin's two chains of 10 from the same warm start.
    W2, H2 = W.copy(), H.copy()
    settings = _settings(n_samples=10, n_burnin=2)
    run_nmf_chain(data, W2, H2, seed_seq=np.random.SeedSequence(1), **settings)
    twin = naive_nmf_chain(X, W, H, row_bounds=data.row_bounds, col_bounds=data.col_bounds,
                           seed_seq=np.random.SeedSequence(1), **settings)
    assert_allclose(W2, twin["W"], rtol=1e-10, atol=1e-10)
    assert_allclose(H2, twin["H"], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("I, J, R, B", SHAPES)
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_prior_scoring_matches_twin(I, J, R, B, sparse):
    from skevidence.cp.kernels.nmf import score_nmf_prior

    X, _, _ = _problem(I, J, R, seed=I + J)
    data = NMFData.from_array(sp.csr_array(X) if sparse else X, B)
    result, W, H = score_nmf_prior(data, R, 7, lam_w=1.5, lam_h=0.7, seed_seq=np.random.SeedSequence(11))
    streams = _rng.seed_streams(np.random.SeedSequence(11), 2)
    scores, W_mean, H_mean, W_last, H_last = naive_prior_scores(
        X, R, 7, lam_w=1.5, lam_h=0.7, row_bounds=data.row_bounds, col_bounds=data.col_bounds, streams=streams
    )
    assert_allclose(result.log_likelihood, scores, rtol=1e-10)
    for a, b in [(result.W_mean, W_mean), (result.H_mean, H_mean), (W, W_last), (H, H_last)]:
        assert_allclose(a, b, rtol=1e-12)
    assert np.isnan(result.step_size) and result.n_likelihood_evaluations > 0
