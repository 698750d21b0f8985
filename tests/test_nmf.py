"""PoissonNMF and BayesianNMFRankSelector: evidence, rank choice, reproducibility, bad input."""

import warnings

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from skevidence import BayesianNMFRankSelector, PoissonNMF, SamplerDivergenceError
from skevidence.cp import sti_log_evidence

FAST = dict(method="sti", method_params=dict(temperatures=4, n_samples=300, n_burnin=100))


def _nmf_data(seed, shape=(40, 30), rank=2, rate=1.0, scale=5.0):
    rng = np.random.default_rng(seed)
    W = rng.exponential(1 / rate, size=(shape[0], rank))
    H = rng.exponential(1 / rate, size=(rank, shape[1]))
    return rng.poisson(scale * W @ H).astype(np.float64)


def test_fit_sets_attributes_and_transform_is_rowwise():
    X = _nmf_data(0)
    nmf = PoissonNMF(2, **FAST, random_state=0).fit(X)
    assert np.isfinite(nmf.log_evidence_) and nmf.log_evidence_std_ > 0
    assert nmf.components_.shape == (2, 30) and np.all(nmf.components_ >= 0)
    W = nmf.transform(X)
    assert W.shape == (40, 2) and np.all(W >= 0)
    np.testing.assert_allclose(nmf.transform(X[5:9]), W[5:9])  # each row on its own
    assert nmf.score(X) == nmf.log_evidence_
    assert nmf.get_feature_names_out().tolist() == ["poissonnmf0", "poissonnmf1"]


def test_transform_is_the_map_with_components_fixed():
    """At the returned W, the gradient of the penalised log-likelihood vanishes (KKT)."""
    X = _nmf_data(1)
    nmf = PoissonNMF(2, prior_rate=0.5, **FAST, random_state=0).fit(X)
    W, H = nmf.transform(X), nmf.components_
    penalty = H.sum(axis=1) + 0.5  # the gradient is (X / WH) H^T - penalty
    relative_grad = ((X / (W @ H)) @ H.T) / penalty - 1.0
    active = W > 1e-3 * W.max()
    assert np.abs(relative_grad[active]).max() < 1e-2
    assert np.all(relative_grad[~active] <= 1e-2)  # at the bound, the gradient points outwards


def test_dense_and_sparse_input_give_the_same_evidence():
    X = _nmf_data(2)
    X[X < 3] = 0
    dense = PoissonNMF(2, **FAST, random_state=3).fit(X)
    for fmt in (sp.csr_matrix, sp.csc_array, sp.coo_matrix):
        sparse = PoissonNMF(2, **FAST, random_state=3).fit(fmt(X))
        np.testing.assert_allclose(sparse.log_evidence_, dense.log_evidence_, rtol=1e-9)
        np.testing.assert_allclose(sparse.components_, dense.components_, rtol=1e-7, atol=1e-10)


def test_same_seed_same_result_for_any_thread_count(monkeypatch):
    import skevidence.cp.kernels.sgmcmc as kernels

    monkeypatch.setattr(kernels, "PARALLEL_MIN_PART", 0)  # run the parallel kernel at 2 threads
    X = _nmf_data(3)
    results = []
    previous = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            results.append(PoissonNMF(3, **FAST, random_state=5).fit(X).log_evidence_)
    finally:
        numba.set_num_threads(previous)
    assert results[0] == results[1]


def test_selector_is_identical_for_n_jobs_1_and_2():
    X = _nmf_data(4)
    kwargs = dict(ranks=(1, 2, 3), **FAST, random_state=0)
    one = BayesianNMFRankSelector(**kwargs, n_jobs=1).fit(X)
    two = BayesianNMFRankSelector(**kwargs, n_jobs=2).fit(X)
    np.testing.assert_array_equal(one.log_evidence_, two.log_evidence_)
    np.testing.assert_array_equal(one.log_evidence_std_, two.log_evidence_std_)
    assert one.best_rank_ == two.best_rank_


def test_selector_attributes_and_passthrough():
    X = _nmf_data(5)
    method_params = dict(FAST["method_params"], n_blocks=3, sampler="sgld", step_size=1e-4, step_decay=0.0,
                         ladder="uniform")
    sel = BayesianNMFRankSelector(ranks=[1, 2, 3], prior_rate=0.7, prior_rate_h=1.3, method="sti",
                                  method_params=method_params, random_state=2).fit(X)
    np.testing.assert_array_equal(sel.ranks_, [1, 2, 3])
    assert sel.log_evidence_.shape == sel.log_evidence_std_.shape == sel.model_probabilities_.shape == (3,)
    assert sel.model_probabilities_.sum() == pytest.approx(1.0)
    assert sel.best_rank_ == sel.ranks_[np.nanargmax(sel.log_evidence_)]
    best = sel.best_estimator_
    assert best.n_components == sel.best_rank_ and sel.components_ is best.components_
    # Nothing is dropped on the way to the per-rank estimators.
    for name in ("prior_rate", "prior_rate_h", "likelihood", "method", "method_params", "tol", "random_state"):
        assert best.get_params()[name] == sel.get_params()[name], name
    assert best.result_.diagnostics["sampler"].startswith("SGLD")
    assert sel.transform(X).shape == (40, sel.best_rank_)
    assert sel.score(X) == best.log_evidence_
    assert sel.errors_ == {}


def test_selector_records_a_failing_rank_and_keeps_the_others(monkeypatch):
    X = _nmf_data(6)
    original = PoissonNMF.fit

    def flaky_fit(self, X, y=None):
        if self.n_components == 2:
            raise FloatingPointError("simulated failure")
        return original(self, X, y)

    monkeypatch.setattr(PoissonNMF, "fit", flaky_fit)
    with pytest.warns(UserWarning, match="simulated failure"):
        sel = BayesianNMFRankSelector(ranks=(1, 2, 3), **FAST, random_state=0).fit(X)
    assert np.isnan(sel.log_evidence_[1]) and "simulated failure" in sel.errors_[2]
    assert np.isfinite(sel.log_evidence_[[0, 2]]).all() and sel.best_rank_ in (1, 3)


def test_selector_verbose_reports_each_rank(capsys):
    BayesianNMFRankSelector(ranks=(1, 2), **FAST, random_state=0, verbose=2).fit(_nmf_data(7))
    out = capsys.readouterr().out
    assert out.count("[EvidenceGridSearch]") == 2 and "n_components" in out


X_GOOD = _nmf_data(8)


@pytest.mark.parametrize(
    "X, params, match",
    [
        (np.where(X_GOOD > 3, -1.0, X_GOOD), {}, "[Nn]egative"),
        (np.where(X_GOOD > 3, np.nan, X_GOOD), {}, "NaN"),
        (np.where(X_GOOD > 3, np.inf, X_GOOD), {}, "infinity"),
        (X_GOOD[0], {}, "2D array"),
        (X_GOOD[None], {}, "dim"),
        (np.empty((0, 5)), {}, "0 sample"),
        (X_GOOD, {"n_components": 0}, "n_components"),
        (X_GOOD, {"method_params": dict(FAST["method_params"], n_blocks=31)}, "n_blocks must be 'auto' or an"),
        (X_GOOD, {"method_params": {"n_temperatures": 8}}, r"not settings of method='sti'.*'temperatures'"),
        (X_GOOD, {"prior_rate": -1.0}, "prior_rate"),
        (X_GOOD + 0.5, {"method": "chib", "method_params": None}, "integer"),
    ],
)
def test_poisson_nmf_bad_input(X, params, match):
    with pytest.raises(ValueError, match=match):
        PoissonNMF(**{**FAST, **params}).fit(X)


@pytest.mark.parametrize(
    "ranks, match",
    [
        ((0, 1), "at least 1"),
        ((), "non-empty"),
        ((1.5,), "integers"),
        ((2, 2), "repeat"),
    ],
)
def test_selector_bad_ranks(ranks, match):
    with pytest.raises(ValueError, match=match):
        BayesianNMFRankSelector(ranks=ranks, **FAST).fit(X_GOOD)


def test_ranks_above_the_smaller_dimension_are_proper_models():
    """More components than rows is a Bayesian NMF like any other, with a finite evidence."""
    X = np.random.default_rng(0).poisson(3.0, size=(14, 6))
    nmf = PoissonNMF(n_components=12, random_state=0).fit(X)
    assert np.isfinite(nmf.log_evidence_) and np.isfinite(nmf.log_evidence_std_)
    assert nmf.components_.shape == (12, 6)
    sel = BayesianNMFRankSelector(ranks=(1, 8), **FAST, random_state=0).fit(X)
    assert np.all(np.isfinite(sel.log_evidence_))


def test_diverging_chain_names_the_step_size():
    params = dict(FAST["method_params"], sampler="sgld", step_size=1e6, step_decay=0.0)
    with pytest.raises(SamplerDivergenceError, match="step_size"):
        PoissonNMF(2, method="sti", method_params=params, random_state=0).fit(X_GOOD * 1e3)


def test_functional_core_is_the_estimator():
    result = sti_log_evidence(X_GOOD, 2, 1.0, **FAST["method_params"], random_state=0)
    assert np.isfinite(result.log_evidence) and result.posterior_mean[1].shape == (30, 2)
    assert result.log_evidence == clone(PoissonNMF(2, **FAST, random_state=0)).fit(X_GOOD).log_evidence_


@pytest.mark.parametrize("method", ["rti", "sti", "smc", "chib"])
def test_result_method_is_the_method(method):
    X = _nmf_data(9, shape=(12, 10))
    params = {"rti": None, "sti": FAST["method_params"], "smc": dict(n_particles=32, n_runs=2),
              "chib": dict(n_samples=200, n_burnin=100, n_reduced=200)}[method]
    with pytest.warns() if method == "chib" else warnings.catch_warnings():
        nmf = PoissonNMF(2, method=method, method_params=params, random_state=0).fit(X)
    assert nmf.result_.method == method and np.isfinite(nmf.log_evidence_)
    assert nmf.components_.shape == (2, 10)
