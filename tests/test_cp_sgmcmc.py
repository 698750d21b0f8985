"""The block-parallel SG-MCMC kernel of the CP family against its NumPy twin (tests/naive_cp.py); its guarantees."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from scipy import special, stats

from naive_cp import PyXoshiro, log_density, naive_chain, naive_prior_scores
from skevidence._config import MAX_CAPPED_FRACTION
from skevidence.cp import data as data_module
from skevidence.cp.data import CPData, block_bounds
from skevidence.cp.kernels import rng as _rng
from skevidence.cp.kernels.passes import log_likelihood
from skevidence.cp.kernels.sgmcmc import run_chain, score_prior
from skevidence.exceptions import SamplerDivergenceError

# (shape, R, B): B = 1, even and uneven groups, B = the smallest dimension.
SHAPES = [((7, 5), 2, 1), ((10, 8), 3, 2), ((13, 11), 2, 3), ((6, 5), 1, 5),
          ((5, 4, 3), 2, 1), ((7, 6, 5), 3, 2), ((8, 7, 10), 2, 3)]
# (sampler, freeze, step_a): steps that move the factors by O(1) in 20 iterations.
SAMPLERS = [("sgld", True, 3e-5), ("psgld", True, 1e-7), ("psgld", False, 1e-7)]


def _problem(shape, R, seed, density=1.0):
    rng = np.random.default_rng(seed)
    factors = [rng.gamma(1.0, 1.0, (n, R)) for n in shape]
    letters = "ijk"[: len(shape)]
    X = rng.poisson(np.einsum(",".join(c + "r" for c in letters) + "->" + letters, *factors)).astype(float)
    if density < 1.0:
        X[rng.random(X.shape) > density] = 0.0
    return X, [rng.uniform(0.5, 1.5, (n, R)) for n in shape]


def _settings(sampler="psgld", freeze=True, step_a=1e-7, **kw):
    out = dict(temperature=1.0, n_samples=20, n_burnin=5, step_a=step_a, step_b=0.51, sampler=sampler,
               alpha=0.99, sigma=1e-5, freeze=freeze, prior_rates=(1.0, 1.5, 0.7))
    out.update(kw)
    return out


def _data(X, sparse, kappa=0.0):
    return CPData.from_array(sp.coo_array(X) if sparse else X, kappa)


def _run(X, factors, B, sparse, seed, kappa=0.0, **settings):
    data = _data(X, sparse, kappa)
    settings["prior_rates"] = settings["prior_rates"][: X.ndim]
    F = np.concatenate(factors)
    result = run_chain(data, data.blocks(B), F, seed_seq=np.random.SeedSequence(seed), max_capped_fraction=1.0,
                       **settings)
    return result, np.split(F, np.cumsum(X.shape)[:-1]), np.split(result.state_mean, np.cumsum(X.shape)[:-1])


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
    out = np.empty(7)
    for _ in range(3):
        _rng.fill_standard_normal(state, out)
        assert_allclose(out, ref.standard_normals(7), rtol=1e-15, atol=0)
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
@pytest.mark.parametrize("sampler, freeze, step_a", SAMPLERS, ids=["sgld", "psgld-freeze", "psgld"])
@pytest.mark.parametrize("shape, R, B", SHAPES, ids=lambda s: "x".join(map(str, s)) if isinstance(s, tuple) else None)
def test_kernel_matches_twin(shape, R, B, sampler, freeze, step_a, temperature, sparse):
    X, factors = _problem(shape, R, seed=int(np.prod(shape)) + R, density=0.6)
    settings = _settings(sampler, freeze, step_a, temperature=temperature, prior_rates=(1.0, 1.5, 0.7)[: len(shape)])
    result, ends, means = _run(X, factors, B, sparse, seed=11, **settings)
    key = (shape, sampler, freeze, temperature)
    if key not in _TWINS:  # the dense and sparse cases share one twin run
        _TWINS[key] = naive_chain(X, factors, bounds=CPData.from_array(X).blocks(B).bounds,
                                  seed_seq=np.random.SeedSequence(11), **settings)
    twin = _TWINS[key]
    assert result.log_likelihood.shape == (15,)
    assert_allclose(result.log_likelihood, twin["log_likelihood"], rtol=1e-10)
    for m in range(len(shape)):
        assert_allclose(ends[m], twin["factors"][m], rtol=1e-10, atol=1e-10, err_msg=f"factor {m}")
        assert_allclose(means[m], twin["means"][m], rtol=1e-10, atol=1e-10, err_msg=f"mean {m}")
    assert result.step_size == twin["step_size"]
    assert result.n_likelihood_evaluations == twin["n_likelihood_evaluations"]
    assert result.capped_fraction == twin["capped_fraction"]
    assert max(np.abs(e - f).max() for e, f in zip(ends, factors)) > 0.05  # the chain did move


@pytest.mark.parametrize("kappa, floor", [(1.0, 0.0), (2.5, 0.0), (1.0, 0.3)])
@pytest.mark.parametrize("shape, R, B", [((9, 7), 2, 2), ((6, 5, 4), 2, 2)])
def test_gamma_likelihood_kernel_matches_twin(shape, R, B, kappa, floor):
    rng = np.random.default_rng(3)
    X, factors = _problem(shape, R, seed=4)
    X = rng.gamma(kappa, (X + 1.0) / kappa)
    settings = _settings("sgld", step_a=1e-4, temperature=0.7)
    data = CPData.from_array(X, kappa, floor=floor)
    F = np.concatenate(factors)
    settings["prior_rates"] = settings["prior_rates"][: X.ndim]
    result = run_chain(data, data.blocks(B), F, seed_seq=np.random.SeedSequence(2), max_capped_fraction=1.0,
                       **settings)
    twin = naive_chain(X, factors, bounds=data.blocks(B).bounds, seed_seq=np.random.SeedSequence(2), kappa=kappa,
                       floor=floor, **settings)
    assert_allclose(result.log_likelihood, twin["log_likelihood"], rtol=1e-10)
    assert_allclose(F, np.concatenate(twin["factors"]), rtol=1e-10, atol=1e-12)


def test_twin_likelihood_is_the_density():
    """The kernels' per-entry split, summed, is the normalised log-density (checked against scipy)."""
    rng = np.random.default_rng(0)
    V = rng.uniform(0.5, 3.0, size=50)
    x = rng.poisson(V).astype(float)
    assert_allclose(log_density(x, V, 0.0), stats.poisson.logpmf(x, V), rtol=1e-12)
    y = rng.gamma(2.5, V / 2.5)
    assert_allclose(log_density(y, V, 2.5), stats.gamma.logpdf(y, 2.5, scale=V / 2.5), rtol=1e-12)
    assert_allclose(log_density(y, V, 1.0), stats.expon.logpdf(y, scale=V), rtol=1e-12)


@pytest.mark.parametrize("shape", [(30, 25), (12, 10, 9)])
def test_dense_and_sparse_kernels_agree(shape):
    X, factors = _problem(shape, 3, seed=5, density=0.4)
    settings = _settings(n_samples=60, n_burnin=20)
    rd, Fd, Md = _run(X, factors, 3, False, seed=2, **settings)
    rs, Fs, Ms = _run(X, factors, 3, True, seed=2, **settings)
    assert_allclose(rs.log_likelihood, rd.log_likelihood, rtol=1e-9)
    for a, b in zip(Fs + Ms, Fd + Md):
        assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    assert rs.n_likelihood_evaluations == rd.n_likelihood_evaluations


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 numba threads")
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("shape", [(23, 19), (11, 9, 8)])
def test_results_do_not_depend_on_thread_count(shape, sparse, monkeypatch):
    import skevidence.cp.kernels.sgmcmc as kernels

    # Small parts normally run serially; force the parallel kernel for 2 threads.
    monkeypatch.setattr(kernels, "PARALLEL_MIN_PART", 0)
    X, factors = _problem(shape, 3, seed=3, density=0.7)
    settings = _settings(n_samples=50, n_burnin=10)
    runs = []
    previous = numba.get_num_threads()
    try:
        for n_threads in (1, 2):
            numba.set_num_threads(n_threads)
            runs.append(_run(X, factors, 3, sparse, seed=4, **settings))
    finally:
        numba.set_num_threads(previous)
    (r1, F1, M1), (r2, F2, M2) = runs
    assert_array_equal(r1.log_likelihood, r2.log_likelihood)
    for a, b in zip(F1 + M1, F2 + M2):
        assert_array_equal(a, b)


def test_same_seed_same_chain_other_seed_other_chain():
    X, factors = _problem((6, 5, 4), 2, seed=0)
    a, b, c = (_run(X, factors, 2, False, seed=s, **_settings())[0] for s in (1, 1, 2))
    assert_array_equal(a.log_likelihood, b.log_likelihood)
    assert not np.array_equal(a.log_likelihood, c.log_likelihood)


def test_parts_tile_the_tensor_and_are_drawn_uniformly():
    data = CPData.from_array(np.ones((6, 6, 6)))
    ib, jb, kb = data.blocks(3).bounds
    covered = np.zeros(data.shape, dtype=int)
    for p in range(3):
        for q in range(3):
            for b in range(3):
                c, d = (b + p) % 3, (b + q) % 3
                covered[ib[b] : ib[b + 1], jb[c] : jb[c + 1], kb[d] : kb[d + 1]] += 1
    assert np.all(covered == 1)  # the 9 parts tile the tensor
    state = _rng.seed_streams(np.random.SeedSequence(0), 1)[0]
    parts = np.array([_rng.uniform_index(state, 9) for _ in range(9000)])
    assert set(parts) == set(range(9)) and np.bincount(parts).min() > 850


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("shape", [(7, 5, 8), (7, 5)])
def test_part_estimates_are_unbiased_for_uneven_groups(shape, sparse):
    """The number of parts times a part's log-likelihood, averaged over the parts, is the full log-likelihood.

    Uneven groups make parts of different sizes, where N / N_s would be biased.
    A chain with a negligible step keeps one state and records the part
    estimates of the parts it draws.
    """
    X, factors = _problem(shape, 2, seed=9, density=0.7)
    settings = _settings("sgld", step_a=1e-200, step_b=0.0, n_samples=400, n_burnin=0)
    result, _, _ = _run(X, factors, 3, sparse, seed=0, **settings)
    keys = np.round(result.log_likelihood, 6)
    parts = np.array([result.log_likelihood[keys == k][0] for k in np.unique(keys)])
    assert parts.size == 3 ** (len(shape) - 1)  # every part drawn, each with its own estimate
    letters = "ijk"[: len(shape)]
    V = np.einsum(",".join(c + "r" for c in letters) + "->" + letters, *factors)
    assert parts.mean() == pytest.approx(np.sum(stats.poisson.logpmf(X, V)), rel=1e-9)


# --- guarantees and errors ---------------------------------------------------------------------


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_overlong_steps_raise_and_leave_the_state_alone(sparse):
    # The drift cap keeps even a step of 1e12 finite: that it cuts nearly every update marks the chain as diverged.
    X, factors = _problem((10, 8), 2, seed=1)
    data = _data(X, sparse)
    F = np.concatenate(factors)
    F0 = F.copy()
    with pytest.raises(SamplerDivergenceError, match="too long") as info:
        run_chain(data, data.blocks(2), F, seed_seq=np.random.SeedSequence(0),
                  **_settings("sgld", step_a=1e12, step_b=0.0, n_samples=500, prior_rates=(1.0, 1.5)),
                  max_capped_fraction=MAX_CAPPED_FRACTION)
    err = info.value
    assert err.temperature == 1.0 and err.step_size == 1e12 and err.iteration == 500
    assert "t=1" in str(err) and "iteration 500" in str(err) and "step_size" in str(err)
    assert_array_equal(F, F0)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_non_finite_gradient_raises(sparse):
    # A zero row of W under counts makes x / V infinite: the cap must not hide it.
    X, factors = _problem((10, 8), 2, seed=1)
    X[0] += 1.0
    factors[0][0] = 0.0
    data = _data(X, sparse)
    with pytest.raises(SamplerDivergenceError, match="non-finite gradient or state") as info:
        run_chain(data, data.blocks(2), np.concatenate(factors), seed_seq=np.random.SeedSequence(0),
                  **_settings(n_burnin=0, prior_rates=(1.0, 1.5)))
    assert info.value.iteration == 1


def test_capped_fraction_threshold():
    X, factors = _problem((10, 8), 2, seed=1)
    data = CPData.from_array(X)

    def run(limit):
        return run_chain(data, data.blocks(2), np.concatenate(factors), seed_seq=np.random.SeedSequence(3),
                         **_settings("psgld", step_a=3e-4, step_b=0.0, n_samples=60, prior_rates=(1.0, 1.5)),
                         max_capped_fraction=limit)

    fraction = run(1.0).capped_fraction
    assert 0.0 < fraction < 1.0
    assert run(fraction).capped_fraction == fraction  # at the limit: no error
    with pytest.raises(SamplerDivergenceError, match="too long"):
        run(0.999 * fraction)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_mirroring_keeps_factors_nonnegative(sparse):
    # At t = 0 the drift is -lambda: without mirroring most entries would go negative.
    X, factors = _problem((15, 12), 3, seed=2)
    result, ends, means = _run(X, [0.01 * f for f in factors], 3, sparse, seed=0,
                               **_settings("sgld", step_a=1e-2, step_b=0.0, temperature=0.0,
                                           prior_rates=(50.0, 50.0), n_samples=200, n_burnin=100))
    for A in ends + means:
        assert np.all(A >= 0.0) and np.all(np.isfinite(A))
    assert np.all(np.isfinite(result.log_likelihood))


def test_state_is_updated_in_place_and_chains_warm_start():
    X, factors = _problem((12, 9), 2, seed=4)
    data = CPData.from_array(X)
    blocks = data.blocks(3)
    settings = _settings(n_samples=10, n_burnin=2, prior_rates=(1.0, 1.5))
    F = np.concatenate(factors)
    run_chain(data, blocks, F, seed_seq=np.random.SeedSequence(0), **settings)
    assert not np.array_equal(F, np.concatenate(factors))
    # A second chain from the first one's end = the twin's chain from the same warm start.
    start = np.split(F.copy(), [12])
    run_chain(data, blocks, F, seed_seq=np.random.SeedSequence(1), **settings)
    twin = naive_chain(X, start, bounds=blocks.bounds, seed_seq=np.random.SeedSequence(1), **settings)
    assert_allclose(F, np.concatenate(twin["factors"]), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("shape, R, B", SHAPES[1:3] + SHAPES[5:])
def test_prior_scoring_matches_twin(shape, R, B, sparse):
    X, _ = _problem(shape, R, seed=sum(shape))
    data = _data(X, sparse)
    rates = (1.5, 0.7, 2.0)[: len(shape)]
    result, F = score_prior(data, data.blocks(B), R, 7, prior_rates=rates, seed_seq=np.random.SeedSequence(11))
    scores, means, last = naive_prior_scores(X, R, 7, bounds=data.blocks(B).bounds, prior_rates=rates,
                                             streams=_rng.seed_streams(np.random.SeedSequence(11), 2))
    assert_allclose(result.log_likelihood, scores, rtol=1e-10)
    assert_allclose(result.state_mean, np.concatenate(means), rtol=1e-12)
    assert_allclose(F, np.concatenate(last), rtol=1e-12)
    assert np.isnan(result.step_size) and result.n_likelihood_evaluations > 0


# --- the blocks --------------------------------------------------------------------------------


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
        CPData.from_array(np.ones((8, 3))).blocks(4)


@pytest.mark.parametrize("shape", [(5, 5), (5, 4, 6)])
def test_blocks_sum_duplicates_drop_zeros_and_hold_the_constants(shape):
    rng = np.random.default_rng(0)
    n = 12
    coords = tuple(rng.integers(0, s, size=n) for s in shape)
    vals = rng.integers(0, 4, size=n).astype(float)
    X = sp.coo_array((vals, coords), shape=shape)
    dense = X.toarray()
    data = CPData.from_array(X)
    assert X.nnz == n  # the caller's array is left alone
    blocks = data.blocks(2)
    assert np.all(blocks.vals > 0) and blocks.block_ptr[-1] == np.count_nonzero(dense)
    rebuilt = np.zeros(shape)
    np.add.at(rebuilt, tuple(blocks.coords.T), blocks.vals)
    assert_array_equal(rebuilt, dense)
    assert_allclose(blocks.block_constant.sum(), special.gammaln(dense + 1).sum())
    assert_allclose(CPData.from_array(dense).blocks(2).block_constant, blocks.block_constant)


def test_listed_entries_run_through_tiles_of_the_later_modes(monkeypatch):
    """Modes longer than a tile are cut into tiles, taken in row-major order, row-major within a tile; the entries
    are the input's, and a pass over them gives what the row-major order gives."""
    monkeypatch.setattr(data_module, "_TILE", 4)
    rng = np.random.default_rng(1)
    shape = (5, 9, 3, 10)
    coords = tuple(rng.integers(0, s, size=60) for s in shape)
    X = sp.coo_array((rng.integers(1, 4, size=60).astype(float), coords), shape=shape)
    data = CPData.from_array(X)
    c = data.coords
    key = np.stack([c[:, 1] // 4, c[:, 3] // 4, c[:, 0], c[:, 1], c[:, 2], c[:, 3]], axis=1)
    assert all(tuple(a) < tuple(b) for a, b in zip(key[:-1], key[1:]))  # mode 2 (3 <= 4) is not tiled
    rebuilt = np.zeros(shape)
    np.add.at(rebuilt, tuple(c.T), data.vals)
    assert_array_equal(rebuilt, X.toarray())
    dense = CPData.from_array(X.toarray())  # the same order from a dense array (Poisson: its non-zeros listed)
    assert_array_equal(dense.coords, c)
    assert_array_equal(dense.vals, data.vals)
    monkeypatch.setattr(data_module, "_TILE", 100)
    rows = CPData.from_array(X)
    assert_array_equal(rows.coords, np.stack(np.nonzero(X.toarray()), axis=1))  # every mode within one tile
    F = rng.gamma(1.0, 1.0, size=(sum(shape), 2))
    grads = [np.empty_like(F) for _ in range(2)]
    values = [log_likelihood(*d.pass_args()[:4], F, d.offsets, 0.0, 0.0, d.constant, g, np.empty((4, 2)), True)
              for d, g in zip((data, rows), grads)]
    assert_allclose(values[0], values[1], rtol=1e-12)
    assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_input_validation():
    X, factors = _problem((6, 5), 2, seed=0)
    data = CPData.from_array(X)
    blocks = data.blocks(2)
    ss = np.random.SeedSequence(0)
    settings = _settings(prior_rates=(1.0, 1.5))
    with pytest.raises(ValueError, match="shape"):
        run_chain(data, blocks, np.concatenate(factors)[:5], seed_seq=ss, **settings)
    with pytest.raises(ValueError, match="non-negative"):
        run_chain(data, blocks, -np.concatenate(factors), seed_seq=ss, **settings)
    with pytest.raises(ValueError, match="n_burnin"):
        run_chain(data, blocks, np.concatenate(factors), seed_seq=ss, **{**settings, "n_burnin": 20})
    with pytest.raises(ValueError, match="n_burnin"):
        run_chain(data, blocks, np.concatenate(factors), seed_seq=ss, **{**settings, "n_burnin": -1})
    with pytest.raises(ValueError, match="sampler"):
        run_chain(data, blocks, np.concatenate(factors), seed_seq=ss, **{**settings, "sampler": "sghmc"})
    with pytest.raises(ValueError, match="prior_rates"):
        run_chain(data, blocks, np.concatenate(factors), seed_seq=ss, **{**settings, "prior_rates": (1.0,) * 3})
    with pytest.raises(ValueError, match="negative"):
        CPData.from_array(-X)
    with pytest.raises(ValueError, match="NaN"):
        CPData.from_array(np.where(X > 1, np.nan, X))
    with pytest.raises(ValueError, match="empty"):
        CPData.from_array(np.zeros((0, 3, 3)))
