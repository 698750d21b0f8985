"""The estimators: scikit-learn's common checks, fit/score semantics, reproducibility, bad input."""

import time

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import parametrize_with_checks

from skevidence import (
    BayesianLinearRegression,
    BayesianNMFRankSelector,
    EvidenceGridSearch,
    GaussianAdditiveModel,
    PoissonNMF,
)

# Small chains: the common checks test the API, not the accuracy.
FAST_STI = dict(temperatures=3, n_samples=60, n_burnin=20, batch_size=50)
FAST = dict(method_params=FAST_STI)


def _estimators():
    return [
        GaussianAdditiveModel(**FAST, random_state=0),
        GaussianAdditiveModel(n_components=2, method="exact"),
        BayesianLinearRegression(**FAST, random_state=0),
        BayesianLinearRegression(method="exact", fit_intercept=False),
        EvidenceGridSearch(GaussianAdditiveModel(**FAST, random_state=0), {"n_components": [1, 2]}),
        EvidenceGridSearch(BayesianLinearRegression(method="exact"), {"noise_var": [0.5, 1.0]}),
        PoissonNMF(n_components=2, method="sti", method_params=dict(temperatures=2, n_samples=40, n_burnin=10),
                   random_state=0),
        PoissonNMF(n_components=2, method_params=dict(n_temperatures=4, n_burnin=10, n_keep=20, n_starts=2),
                   tol=None, random_state=0),
        BayesianNMFRankSelector(ranks=(1, 2), method="sti", method_params=dict(temperatures=2, n_samples=40,
                                                                                n_burnin=10), random_state=0),
    ]


@parametrize_with_checks(_estimators())
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def _blobs(seed=0, n=400):
    return np.random.default_rng(seed).normal(6.0, 1.0, size=(n, 1))


def test_fit_sets_evidence_attributes_and_score_is_cached():
    X = _blobs()
    est = GaussianAdditiveModel(2, prior_mean=3.0, **FAST, random_state=0).fit(X)
    assert np.isfinite(est.log_evidence_) and est.log_evidence_std_ > 0
    assert est.result_.log_evidence == est.log_evidence_
    assert est.score(X) == est.log_evidence_
    assert est.posterior_mean_.shape == (2,)
    # New data: a new estimate, equal to a fresh fit on that data.
    X2 = _blobs(seed=1)
    assert est.score(X2) == clone(est).fit(X2).log_evidence_


def test_method_exact_matches_exact_log_evidence():
    X = _blobs()
    est = GaussianAdditiveModel(3, prior_mean=2.0, prior_var=0.5, noise_var=1.5, method="exact").fit(X)
    assert est.log_evidence_ == pytest.approx(est.exact_log_evidence(X))
    assert est.log_evidence_std_ == 0.0
    assert est.result_.method == "exact"


def test_exact_log_evidence_needs_no_fit():
    X = _blobs()
    est = GaussianAdditiveModel(2)
    est.exact_log_evidence(X)
    assert not hasattr(est, "n_features_in_")


def test_linear_regression_predicts_posterior_mean():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    y = X @ [1.0, -2.0, 0.5] + 0.3 + rng.normal(scale=0.5, size=500)
    reg = BayesianLinearRegression(noise_var=0.25, method="exact").fit(X, y)
    np.testing.assert_allclose(reg.coef_, [1.0, -2.0, 0.5], atol=0.05)
    assert reg.intercept_ == pytest.approx(0.3, abs=0.05)
    np.testing.assert_allclose(reg.predict(X), X @ reg.coef_ + reg.intercept_)
    assert reg.score(X, y) == reg.log_evidence_ == pytest.approx(reg.exact_log_evidence(X, y))


def test_refit_is_reproducible():
    X = _blobs()
    est = GaussianAdditiveModel(2, **FAST, random_state=7)
    assert est.fit(X).log_evidence_ == clone(est).fit(X).log_evidence_ == est.fit(X).log_evidence_


@pytest.mark.parametrize(
    "params, match",
    [
        ({"prior_var": 0.0}, "prior_var"),
        ({"noise_var": -1.0}, "noise_var"),
        ({"n_components": 0}, "n_components"),
        ({"method": "magic"}, "method"),
        ({"method_params": [("temperatures", 3)]}, "method_params"),
        ({"method_params": {"temperatures": [0.2, 1.0]}}, "start at 0 and end at 1"),
        ({"method_params": {"temperatures": [0.0, 0.8, 0.5, 1.0]}}, "strictly increasing"),
        ({"method_params": {"n_samples": 50, "n_burnin": 50}}, "n_burnin"),
        ({"method": "sti", "method_params": {"n_samples": 50, "n_burnin": 50}}, "n_burnin"),
    ],
)
def test_bad_parameters_raise_value_error(params, match):
    est = GaussianAdditiveModel(**{**FAST, **params})
    with pytest.raises(ValueError, match=match):
        est.fit(_blobs())


@pytest.mark.parametrize(
    "X, match",
    [
        (np.array([[1.0], [np.nan]]), "NaN"),
        (np.array([[1.0], [np.inf]]), "infinity"),
        (np.empty((0, 1)), "0 sample"),
        (np.ones(5), "2D array"),
        (np.ones((2, 2, 2)), "dim"),
    ],
)
def test_bad_data_raise_value_error(X, match):
    with pytest.raises(ValueError, match=match):
        GaussianAdditiveModel(**FAST).fit(X)


def test_linear_regression_bad_targets():
    X = np.ones((4, 2))
    with pytest.raises(ValueError, match="NaN"):
        BayesianLinearRegression(**FAST).fit(X, [1.0, np.nan, 2.0, 3.0])
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        BayesianLinearRegression(**FAST).fit(X, [1.0, 2.0])


# ---------------------------------------------------------------- search


def test_search_picks_largest_evidence_and_reports_everything():
    X = _blobs()
    search = EvidenceGridSearch(
        GaussianAdditiveModel(prior_mean=3.0, prior_var=0.3, method="exact"), {"n_components": [1, 2, 3]}
    ).fit(X)
    exact = [GaussianAdditiveModel(r, prior_mean=3.0, prior_var=0.3).exact_log_evidence(X) for r in (1, 2, 3)]
    res = search.cv_results_
    np.testing.assert_allclose(res["mean_test_score"], exact)
    assert search.best_params_ == {"n_components": int(np.argmax(exact)) + 1}
    assert search.best_score_ == pytest.approx(max(exact))
    assert list(res["param_n_components"]) == [1, 2, 3]
    assert sorted(res["rank_test_score"]) == [1, 2, 3]
    assert res["rank_test_score"][search.best_index_] == 1
    assert res["model_probability"].sum() == pytest.approx(1.0)
    np.testing.assert_allclose(res["model_probability"], np.exp(exact - np.logaddexp.reduce(exact)))
    np.testing.assert_array_equal(res["std_log_evidence"], 0.0)
    assert {"mean_fit_time", "std_fit_time", "mean_score_time", "std_score_time", "params", "error"} <= set(res)
    assert search.best_estimator_.n_components == search.best_params_["n_components"]
    assert search.score(X) == pytest.approx(search.best_score_)


def test_search_results_identical_for_any_n_jobs():
    X = _blobs(n=300)
    est = GaussianAdditiveModel(prior_mean=3.0, **FAST, random_state=11)
    grid = {"n_components": [1, 2, 3]}
    one = EvidenceGridSearch(est, grid, n_jobs=1).fit(X).cv_results_
    two = EvidenceGridSearch(est, grid, n_jobs=2).fit(X).cv_results_
    np.testing.assert_array_equal(one["mean_test_score"], two["mean_test_score"])
    np.testing.assert_array_equal(one["std_log_evidence"], two["std_log_evidence"])
    # Each candidate equals a standalone fit with the same seed.
    alone = clone(est).set_params(n_components=2).fit(X).log_evidence_
    assert one["mean_test_score"][1] == alone


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_search_raises_the_candidates_warnings_in_the_caller(n_jobs):
    """A candidate's warning reaches the caller, whatever process fitted it.

    A worker's own warnings go to the worker's stderr, out of reach of the
    caller's filters, of ``pytest.warns`` and of a notebook.
    """
    rng = np.random.default_rng(0)
    X = rng.poisson(2 * rng.exponential(size=(12, 2)) @ rng.exponential(size=(2, 10)))
    base = PoissonNMF(tol=1e-6, method_params=dict(max_refinements=0, n_keep=40, n_burnin=20), random_state=0)
    with pytest.warns(ConvergenceWarning, match=r"Referenced TI at rank 2 .*max_refinements=0"):
        EvidenceGridSearch(base, {"n_components": [1, 2]}, n_jobs=n_jobs).fit(X)


def test_a_warning_category_that_needs_more_than_a_message_is_raised_as_a_user_warning():
    from sklearn.exceptions import InconsistentVersionWarning

    from skevidence.estimators.search import _warn_again

    with pytest.warns(ConvergenceWarning, match="^stopped$"):
        _warn_again(ConvergenceWarning, "stopped")
    with pytest.warns(UserWarning, match="InconsistentVersionWarning: pickled by 1.0"):
        _warn_again(InconsistentVersionWarning, "pickled by 1.0")


def test_parallel_search_dispatches_costliest_first_and_keeps_grid_order(capsys):
    from skevidence.estimators.search import _dispatch_order

    grid = [{"n_components": r} for r in (1, 4, 2, 8)]
    assert _dispatch_order(GaussianAdditiveModel(), grid) == [3, 1, 2, 0]
    piped = [{"gaussianadditivemodel__n_components": r, "gaussianadditivemodel__prior_var": 2.0}
             for r in (1, 4, 2)]  # fmt: skip
    pipe = make_pipeline(FunctionTransformer(), GaussianAdditiveModel())
    assert _dispatch_order(pipe, piped) == [1, 2, 0]
    # an estimator without cost parameters keeps the grid's order
    assert _dispatch_order(FunctionTransformer(), grid) == [0, 1, 2, 3]

    X = _blobs(n=300)
    est = GaussianAdditiveModel(prior_mean=3.0, method="exact")
    search = EvidenceGridSearch(est, {"n_components": [1, 2, 3]}, n_jobs=2, verbose=2).fit(X)
    lines = [line for line in capsys.readouterr().out.splitlines() if "[EvidenceGridSearch]" in line]
    # every candidate reported once, numbered by grid position; results in grid order
    assert sorted(int(line.split("candidate ")[1].split()[0]) for line in lines) == [1, 2, 3]
    expected = [est.set_params(n_components=r).exact_log_evidence(X) for r in (1, 2, 3)]
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], expected)


def test_parallel_search_reports_each_candidate_when_it_ends(capsys):
    """The costliest candidate goes first; its report must not hold back the others' (in dispatch order
    P3's rank 256 kept the command silent for 39 minutes while ranks 32-128 had long ended)."""

    class SlowAtThree(GaussianAdditiveModel):
        def fit(self, X, y=None):
            if self.n_components == 3:
                time.sleep(5.0)
            return super().fit(X, y)

    X = _blobs(n=300)
    search = EvidenceGridSearch(SlowAtThree(prior_mean=3.0, method="exact"), {"n_components": [1, 2, 3]},
                                n_jobs=2, verbose=2).fit(X)
    lines = [line for line in capsys.readouterr().out.splitlines() if "[EvidenceGridSearch]" in line]
    assert [int(line.split("candidate ")[1].split()[0]) for line in lines][-1] == 3
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_search_seed_from_random_state_instance_is_n_jobs_invariant():
    X = _blobs(n=300)
    grid = {"n_components": [1, 2]}
    runs = [
        EvidenceGridSearch(GaussianAdditiveModel(**FAST, random_state=np.random.RandomState(5)), grid, n_jobs=n)
        .fit(X)
        .cv_results_["mean_test_score"]
        for n in (1, 2)
    ]
    np.testing.assert_array_equal(*runs)


class _Flaky(GaussianAdditiveModel):
    def fit(self, X, y=None):
        if self.n_components == 2:
            raise RuntimeError("boom")
        return super().fit(X, y)


def test_failing_candidate_is_recorded_and_others_kept():
    X = _blobs()
    search = EvidenceGridSearch(_Flaky(method="exact", prior_mean=3.0), {"n_components": [1, 2, 3]})
    with pytest.warns(UserWarning, match="failed.*boom"):
        search.fit(X)
    res = search.cv_results_
    assert np.isnan(res["mean_test_score"][1]) and "RuntimeError: boom" in res["error"][1]
    assert np.isfinite(res["mean_test_score"][[0, 2]]).all()
    assert res["model_probability"][1] == 0.0 and res["rank_test_score"][1] == 3
    assert search.best_params_["n_components"] in (1, 3)
    with pytest.raises(RuntimeError, match="boom"):
        EvidenceGridSearch(_Flaky(method="exact"), {"n_components": [1, 2]}, error_score="raise").fit(X)


def test_failed_candidate_is_never_chosen_whatever_its_error_score():
    X = _blobs()
    # error_score far above every real log-evidence must not make the failure win.
    search = EvidenceGridSearch(
        _Flaky(method="exact", prior_mean=3.0), {"n_components": [1, 2, 3]}, error_score=1e6
    )
    with pytest.warns(UserWarning, match="failed"):
        search.fit(X)
    res = search.cv_results_
    assert res["mean_test_score"][1] == 1e6
    assert res["rank_test_score"][1] == 3 and res["model_probability"][1] == 0.0
    assert search.best_params_["n_components"] in (1, 3) and search.best_estimator_ is not None
    np.testing.assert_allclose(res["model_probability"][[0, 2]].sum(), 1.0)


def test_all_candidates_failing_raises():
    with pytest.raises(RuntimeError, match="boom") as info:
        EvidenceGridSearch(_Flaky(method="exact"), {"n_components": [2]}).fit(_blobs())
    assert "Every one of the 1 candidates" in info.value.__notes__[0]


def test_search_inside_pipeline_and_over_pipeline():
    X = _blobs()
    scale = FunctionTransformer(lambda Z: Z / 2.0)
    pipe = make_pipeline(scale, GaussianAdditiveModel(prior_mean=1.5, method="exact"))
    search = EvidenceGridSearch(pipe, {"gaussianadditivemodel__n_components": [1, 2, 3]}).fit(X)
    expected = [GaussianAdditiveModel(r, prior_mean=1.5).exact_log_evidence(X / 2.0) for r in (1, 2, 3)]
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], expected)
    assert search.score(X) == pytest.approx(max(expected))


def test_search_verbose_prints_each_candidate(capsys):
    EvidenceGridSearch(GaussianAdditiveModel(method="exact"), {"n_components": [1, 2]}, verbose=2).fit(_blobs())
    out = capsys.readouterr().out
    assert out.count("[EvidenceGridSearch]") == 2 and out.count(" candidate ") == 2 and "log Z =" in out


def test_searched_random_state_is_not_overwritten():
    X = _blobs(n=300)
    search = EvidenceGridSearch(GaussianAdditiveModel(**FAST), {"random_state": [0, 1]}).fit(X)
    scores = search.cv_results_["mean_test_score"]
    assert scores[0] != scores[1]
    assert scores[0] == GaussianAdditiveModel(**FAST, random_state=0).fit(X).log_evidence_


def test_run_search_hook_evaluates_several_batches():
    """The _run_search hook the user guide names: each batch is added to cv_results_ and the best is over all."""

    class TwoBatches(EvidenceGridSearch):
        def _run_search(self, evaluate_candidates, *, callback_ctx=None):
            first = evaluate_candidates([{"n_components": 1}, {"n_components": 2}])
            assert list(first["param_n_components"]) == [1, 2]
            evaluate_candidates([{"n_components": 3}])

    X = _blobs()
    search = TwoBatches(GaussianAdditiveModel(prior_mean=1.5, method="exact"), {}).fit(X)
    expected = [GaussianAdditiveModel(r, prior_mean=1.5, method="exact").fit(X).log_evidence_ for r in (1, 2, 3)]
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], expected)
    assert search.best_params_ == {"n_components": 1 + int(np.argmax(expected))}
