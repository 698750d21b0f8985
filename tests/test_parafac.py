"""PoissonPARAFAC: scikit-learn API, evidence against the rank-1 closed form, bad input."""


import numba
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from poisson_parafac_exact import rank1_log_evidence
from skevidence.cp import sti_log_evidence
from skevidence.estimators.poisson_parafac import PoissonPARAFAC
from skevidence.exceptions import SamplerDivergenceError

CHAIN = dict(temperatures=4, n_samples=300, n_burnin=100)
FAST = dict(method="sti", method_params=CHAIN)


def _sti(**params):
    return dict(method="sti", method_params={**CHAIN, **params})

# Short chains in the API tests do not equilibrate; the accuracy tests assert values instead.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _tensor(seed, shape=(8, 7, 6), rank=2, rate=1.0, scale=2.0):
    rng = np.random.default_rng(seed)
    A, B, C = (rng.exponential(1 / rate, size=(n, rank)) for n in shape)
    return rng.poisson(scale * np.einsum("ir,jr,kr->ijk", A, B, C)).astype(np.float64)


def _rank1(seed, lam, shape=(6, 5, 4), scale=3.0):
    rng = np.random.default_rng(seed)
    factors = (rng.exponential(1 / lam, size=n) for n in shape)
    return rng.poisson(scale * np.einsum("i,j,k->ijk", *factors))


# ------------------------------------------------------------------ API


@parametrize_with_checks([
    PoissonPARAFAC(rank=2, method="sti", method_params=dict(temperatures=2, n_samples=40, n_burnin=10),
                   random_state=0),
    PoissonPARAFAC(rank=1, method_params=dict(n_temperatures=4, n_burnin=10, n_keep=20, n_starts=2),
                   tol=None, random_state=0),
])  # fmt: skip
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_tags_declare_three_d_input():
    tags = PoissonPARAFAC().__sklearn_tags__()
    assert tags.input_tags.three_d_array and tags.input_tags.two_d_array
    assert tags.input_tags.sparse and tags.input_tags.positive_only


def test_fit_sets_attributes_and_score_is_cached():
    X = _tensor(0)
    est = PoissonPARAFAC(2, **FAST, random_state=0).fit(X)
    assert np.isfinite(est.log_evidence_) and est.log_evidence_std_ > 0
    assert est.result_.log_evidence == est.log_evidence_
    assert [F.shape for F in est.factors_] == [(8, 2), (7, 2), (6, 2)]
    assert all(np.all(F >= 0) for F in est.factors_)
    assert est.n_features_in_ == 7
    assert est.score(X) == est.log_evidence_
    # Other data: a new estimate, equal to a fresh fit on them.
    X2 = _tensor(1)
    assert est.score(X2) == clone(est).fit(X2).log_evidence_ != est.log_evidence_


def test_factors_are_the_posterior_mean():
    # A rank-1 tensor with large counts: the posterior mean reproduces the intensity.
    rng = np.random.default_rng(3)
    a, b, c = (rng.uniform(1.0, 3.0, size=n) for n in (6, 5, 4))
    V = 20.0 * np.einsum("i,j,k->ijk", a, b, c)
    X = rng.poisson(V).astype(float)
    est = PoissonPARAFAC(1, random_state=0).fit(X)
    fitted = np.einsum("ir,jr,kr->ijk", *est.factors_)
    assert np.abs(fitted / V - 1.0).mean() < 0.1


def test_dense_and_sparse_input_give_the_same_evidence():
    X = _tensor(2)
    X[X < 2] = 0
    kwargs = dict(**_sti(n_blocks=3), random_state=3)
    dense = PoissonPARAFAC(2, **kwargs).fit(X)
    sparse = PoissonPARAFAC(2, **kwargs).fit(sp.coo_array(X))
    np.testing.assert_allclose(sparse.log_evidence_, dense.log_evidence_, rtol=1e-9)
    for a, b in zip(sparse.factors_, dense.factors_):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-10)
    # Duplicate coordinates are summed: split every count into two entries.
    idx = np.nonzero(X)
    half = np.floor(X[idx] / 2)
    coords = tuple(np.concatenate([i, i]) for i in idx)
    dup = sp.coo_array((np.concatenate([half, X[idx] - half]), coords), shape=X.shape)
    assert dup.nnz == 2 * len(idx[0])
    duplicated = PoissonPARAFAC(2, **kwargs).fit(dup)
    np.testing.assert_allclose(duplicated.log_evidence_, dense.log_evidence_, rtol=1e-9)


def test_dense_and_sparse_input_agree_on_the_default_method():
    # The case a user reported: on the default method (referenced TI) a dense
    # tensor and its COO array are read into the same entries and give the same
    # number, bit for bit (here on a short budget; the path is the same).
    rng = np.random.default_rng(0)
    factors = [rng.exponential(2.0, size=(n, 3)) for n in (14, 12, 10)]
    X = rng.poisson(np.einsum("ir,jr,kr->ijk", *factors))
    kwargs = dict(rank=2, prior_rate=0.5, random_state=3,
                  method_params=dict(n_temperatures=4, n_burnin=10, n_keep=20, max_refinements=1))
    dense = PoissonPARAFAC(**kwargs).fit(X)
    sparse = PoissonPARAFAC(**kwargs).fit(sp.coo_array(X))
    assert sparse.log_evidence_ == dense.log_evidence_
    assert sparse.log_evidence_std_ == dense.log_evidence_std_
    for a, b in zip(sparse.factors_, dense.factors_):
        np.testing.assert_array_equal(a, b)


def test_two_d_input_is_a_tensor_with_one_slice():
    X = _tensor(4)[:, :, :1]
    kwargs = dict(**FAST, random_state=1)
    three = PoissonPARAFAC(1, **kwargs).fit(X)
    two = PoissonPARAFAC(1, **kwargs).fit(X[:, :, 0])
    two_sparse = PoissonPARAFAC(1, **kwargs).fit(sp.csr_array(X[:, :, 0]))
    assert two.log_evidence_ == three.log_evidence_
    np.testing.assert_allclose(two_sparse.log_evidence_, three.log_evidence_, rtol=1e-9)
    assert two.factors_[2].shape == (1, 1)


def test_same_seed_same_result_for_any_thread_count(monkeypatch):
    import skevidence.cp.kernels.sgmcmc as kernels

    monkeypatch.setattr(kernels, "PARALLEL_MIN_PART", 0)  # run the parallel kernel at 2 threads
    X = _tensor(5)
    results = []
    previous = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            est = PoissonPARAFAC(2, **_sti(n_blocks=3), random_state=5).fit(X)
            results.append((est.log_evidence_, est.factors_))
    finally:
        numba.set_num_threads(previous)
    assert results[0][0] == results[1][0]
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_array_equal(a, b)


def test_same_seed_same_result_other_seed_other_result():
    X = _tensor(6)
    a, b, c = (PoissonPARAFAC(2, **FAST, random_state=s).fit(X).log_evidence_ for s in (1, 1, 2))
    assert a == b != c


def test_functional_core_is_the_estimator_and_nothing_is_dropped():
    X = _tensor(7)
    params = dict(n_blocks=2, sampler="sgld", step_size=1e-5, step_decay=0.0, ladder="uniform", temperatures=3,
                  n_samples=200, n_burnin=50)
    est = PoissonPARAFAC(2, prior_rate=(0.5, 1.5, 2.0), method="sti", method_params=params, random_state=0).fit(X)
    result = sti_log_evidence(X, 2, (0.5, 1.5, 2.0), **params, random_state=0)
    assert result.log_evidence == est.log_evidence_
    assert result.diagnostics["step_size_schedule"] == (1e-5, 0.0)
    assert result.diagnostics["batch_size"] == 8 * 7 * 6 // 4  # the part is the minibatch
    np.testing.assert_array_equal(result.temperatures, [0.0, 1 / 3, 2 / 3, 1.0])


@pytest.mark.parametrize("lam", [1.0, 3.0])
def test_default_method_matches_rank1_closed_form(seed, lam):
    X = _rank1(seed, lam)
    est = PoissonPARAFAC(1, lam, random_state=seed).fit(X)
    exact = rank1_log_evidence(X, lam)
    assert est.result_.method == "rti"
    assert abs(est.log_evidence_ - exact) <= 3 * est.log_evidence_std_, (est.log_evidence_, exact)


# ------------------------------------------------------------------ bad input

X_GOOD = _tensor(9)


@pytest.mark.parametrize(
    "X, params, match",
    [
        (np.where(X_GOOD > 3, -1.0, X_GOOD), {}, "Negative values"),
        (np.where(X_GOOD > 3, np.nan, X_GOOD), {}, "NaN"),
        (np.where(X_GOOD > 3, np.inf, X_GOOD), {}, "infinity"),
        (X_GOOD[0, 0], {}, "2D array"),
        (X_GOOD[None], {}, "3-D tensor"),
        (np.empty((0, 5, 4)), {}, "empty"),
        (np.empty((3, 5, 0)), {}, "empty"),
        (X_GOOD, {"rank": 0}, "rank"),
        (X_GOOD, _sti(n_blocks=7), "n_blocks must be 'auto' or an integer from 1 to 6"),
        (X_GOOD, {"prior_rate": -1.0}, "prior_rate"),
        (X_GOOD, {"prior_rate": (1.0, 2.0)}, "sequence of 3"),
        (X_GOOD, {"prior_rate": (1.0, 0.0, 2.0)}, "positive finite"),
        (X_GOOD + 0.5, {"method": "chib", "method_params": None}, "integer"),
        (X_GOOD, _sti(sampler="hmc"), "sampler"),
        (X_GOOD, {"method": "rti", "method_params": {"sampler": "sgld"}}, "not settings of method='rti'"),
    ],
)
def test_bad_input(X, params, match):
    with pytest.raises(ValueError, match=match):
        PoissonPARAFAC(**{**FAST, **params}).fit(X)


def test_bad_sparse_input():
    with pytest.raises(ValueError, match="Negative"):
        PoissonPARAFAC(**FAST).fit(sp.coo_array(np.where(X_GOOD > 3, -1.0, X_GOOD)))
    four_d = sp.coo_array((np.ones(2), (np.array([0, 1]),) * 4), shape=(2, 2, 2, 2))
    with pytest.raises(ValueError, match="3-D tensor"):
        PoissonPARAFAC(**FAST).fit(four_d)


def test_diverging_chain_names_the_step_size():
    with pytest.raises(SamplerDivergenceError, match="step_size"):
        PoissonPARAFAC(2, **_sti(sampler="sgld", step_size=1e6, step_decay=0.0), random_state=0).fit(X_GOOD * 1e3)


def test_capped_drift_is_reported_per_temperature():
    # pSGLD at 30 times its automatic step (1e-6 here): the cap cuts some updates, under the
    # 1 % that marks a diverged chain; the exact prior draws at t = 0 take no step at all.
    est = PoissonPARAFAC(2, **_sti(sampler="psgld", step_size=3e-5, step_decay=0.0), random_state=0).fit(X_GOOD)
    capped = est.result_.diagnostics["capped_fraction"]
    assert capped.shape == est.result_.temperatures.shape
    assert capped[0] == 0.0
    assert 0.0 < capped.max() <= 0.01
    # 100 times the automatic step: the cap binds in more than 1 % of the updates.
    with pytest.raises(SamplerDivergenceError, match=r"too long.*Lower step_size"):
        PoissonPARAFAC(2, **_sti(sampler="psgld", step_size=1e-4, step_decay=0.0), random_state=0).fit(X_GOOD)
