"""Online evidence: partial_fit against fit, pickled streams, parameters passed through, bad input."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from skevidence import BayesianLinearRegression, GaussianAdditiveModel
from skevidence._config import SGAIS_BATCH_SIZE
from skevidence.evidence import ais_log_evidence, sgais_log_evidence
from skevidence.evidence.sgais import chunk_boundaries
from skevidence.models import GaussianAdditive, LinearGaussian

# Short SGAIS runs: the common checks test the API, not the accuracy.
FAST = dict(method_params=dict(n_particles=4, target_ess=3, n_steps=3, chunk_size=100))


# AIS with 3 temperatures warns that its weights are degenerate, rightly.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks(
    [
        BayesianLinearRegression(method="sgais", **FAST, random_state=0),
        GaussianAdditiveModel(method="sgais", **FAST, random_state=0),
        BayesianLinearRegression(method="ais", method_params=dict(n_particles=3, n_temperatures=3), random_state=0),
    ]
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def _regression(seed, n, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X @ rng.normal(size=d) + 0.3 + rng.normal(size=n)


def _pieces(n, cut_chunks, **kwargs):
    """Cut points of ``n`` data at the given chunk indices of the SGAIS schedule."""
    ends = chunk_boundaries(n, **kwargs)
    return [0, *ends[cut_chunks], n]


# --------------------------------------------------------------------------- fit == partial_fit


def test_partial_fit_over_chunks_equals_fit(seed):
    X, y = _regression(seed, 2500)
    fitted = BayesianLinearRegression(method="sgais", random_state=seed).fit(X, y)
    online = BayesianLinearRegression(method="sgais", random_state=seed)
    cuts = _pieces(2500, [0, 5, 12], batch_size=SGAIS_BATCH_SIZE)
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        online.partial_fit(X[lo:hi], y[lo:hi])
    assert online.log_evidence_ == fitted.log_evidence_
    assert online.log_evidence_std_ == fitted.log_evidence_std_
    np.testing.assert_array_equal(online.log_evidence_path_, fitted.log_evidence_path_)
    assert online.n_samples_seen_ == fitted.n_samples_seen_ == 2500
    # The posterior from summed sufficient statistics equals the one from all data.
    np.testing.assert_allclose(online.coef_, fitted.coef_, rtol=1e-10)
    assert online.intercept_ == pytest.approx(fitted.intercept_, rel=1e-10)
    np.testing.assert_allclose(online.posterior_cov_, fitted.posterior_cov_, rtol=1e-10)


def test_pickled_and_resumed_stream_equals_uninterrupted(seed):
    X = np.random.default_rng(seed).normal(3.0, 1.0, size=(3000, 1))
    est = GaussianAdditiveModel(2, prior_mean=1.0, method="sgais", random_state=seed)
    cuts = [0, 700, 1800, 3000]  # not at chunk boundaries: the same calls either way
    straight, resumed = clone(est), clone(est)
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        straight.partial_fit(X[lo:hi])
        resumed = pickle.loads(pickle.dumps(resumed.partial_fit(X[lo:hi])))
    assert resumed.log_evidence_ == straight.log_evidence_
    np.testing.assert_array_equal(resumed.log_evidence_path_, straight.log_evidence_path_)
    np.testing.assert_array_equal(resumed.result_.diagnostics["n_seen"], straight.result_.diagnostics["n_seen"])
    np.testing.assert_allclose(resumed.posterior_mean_, GaussianAdditive(2, 1.0).posterior_mean(X))
    # Any split is statistically equivalent to the whole.
    exact = est.exact_log_evidence(X)
    assert abs(straight.log_evidence_ - exact) <= 4 * straight.log_evidence_std_ + 0.5


def test_fit_then_partial_fit_continues_the_stream(seed):
    X, y = _regression(seed, 1200)
    cut = chunk_boundaries(1200, batch_size=SGAIS_BATCH_SIZE)[10]
    whole = BayesianLinearRegression(method="sgais", random_state=seed).fit(X, y)
    est = BayesianLinearRegression(method="sgais", random_state=seed).fit(X[:cut], y[:cut])
    est.partial_fit(X[cut:], y[cut:])
    assert est.log_evidence_ == whole.log_evidence_ and est.n_samples_seen_ == 1200
    # A new fit starts a new stream.
    est.fit(X[:cut], y[:cut])
    assert est.n_samples_seen_ == cut and est.log_evidence_path_.size == 11


def test_online_posterior_matches_the_exact_one(seed):
    X, y = _regression(seed, 900, d=2)
    est = BayesianLinearRegression(noise_var=0.5, prior_var=2.0, method="sgais", random_state=seed)
    for lo in range(0, 900, 300):
        est.partial_fit(X[lo : lo + 300], y[lo : lo + 300])
    mean, cov = LinearGaussian(2, 0.5, 2.0).posterior(X, y)
    np.testing.assert_allclose(est.coef_, mean[:2], rtol=1e-10)
    np.testing.assert_allclose(est.posterior_cov_, cov, rtol=1e-10)
    np.testing.assert_allclose(est.predict(X[:5]), X[:5] @ mean[:2] + mean[2])


def test_score_uses_the_cache_only_for_all_data_seen(seed):
    X, y = _regression(seed, 400)
    est = BayesianLinearRegression(method="sgais", random_state=seed).partial_fit(X, y)
    assert est.score(X, y) == est.log_evidence_
    est.partial_fit(X[:100], y[:100])
    # The stream now holds 500 points; X alone is scored afresh, like a fresh fit.
    assert est.score(X, y) == clone(est).fit(X, y).log_evidence_


# --------------------------------------------------------------------------- parameters


def test_every_sgais_parameter_reaches_the_function(seed):
    X, y = _regression(seed, 700)
    params = dict(
        n_particles=6, target_ess=4.5, chunk_size=60, n_steps=7, learning_rate=0.05,
        resample=False, reservoir_size=300, batch_size=100,
    )  # fmt: skip
    est = BayesianLinearRegression(noise_var=0.8, method="sgais", method_params=params, random_state=seed).fit(X, y)
    direct = sgais_log_evidence(LinearGaussian(3, 0.8), X, y, random_state=seed, **params)
    assert est.log_evidence_ == direct.log_evidence
    for name, value in params.items():
        assert est.result_.diagnostics[name] == value


def test_ais_method_takes_particles_and_ladder(seed):
    X = np.random.default_rng(seed).normal(2.0, 1.0, size=(300, 1))
    est = GaussianAdditiveModel(2, prior_mean=1.0, method="ais",
                                method_params=dict(n_particles=8, n_temperatures=100, ladder="uniform"))
    est.set_params(random_state=seed).fit(X)
    direct = ais_log_evidence(
        GaussianAdditive(2, 1.0), X, n_particles=8, n_temperatures=100, ladder="uniform", random_state=seed
    )
    assert est.log_evidence_ == direct.log_evidence and est.result_.method == "ais"
    assert abs(est.log_evidence_ - est.exact_log_evidence(X)) <= 4 * est.log_evidence_std_ + 0.1
    assert not hasattr(est, "partial_fit") and not hasattr(est, "log_evidence_path_")


def test_reservoir_bounds_the_memory_of_a_stream(seed):
    X, y = _regression(seed, 3000, d=2)
    est = BayesianLinearRegression(method="sgais", method_params={"reservoir_size": 500}, random_state=seed)
    for lo in range(0, 3000, 1000):
        est.partial_fit(X[lo : lo + 1000], y[lo : lo + 1000])
    assert est._stream.past.size == 500 and est._stream.past.n_offered == 3000
    assert abs(est.log_evidence_ - est.exact_log_evidence(X, y)) / 3000 < 1e-3


# --------------------------------------------------------------------------- bad input


def test_partial_fit_needs_method_sgais():
    est = BayesianLinearRegression(method="sti")
    assert not hasattr(est, "partial_fit")
    with pytest.raises(AttributeError) as info:
        est.partial_fit(np.ones((3, 2)), np.ones(3))
    assert "method='sgais' only" in str(info.value.__cause__)
    assert hasattr(est.set_params(method="sgais"), "partial_fit")


def test_partial_fit_rejects_other_features_bad_values_and_classes():
    X, y = _regression(0, 100)
    est = BayesianLinearRegression(method="sgais", **FAST, random_state=0).partial_fit(X, y)
    with pytest.raises(ValueError, match="X has 2 features, but BayesianLinearRegression is expecting 3"):
        est.partial_fit(X[:, :2], y)
    with pytest.raises(ValueError, match="NaN"):
        est.partial_fit(np.r_[X[:3], [[np.nan, 0.0, 1.0]]], y[:4])
    with pytest.raises(ValueError, match="infinity"):
        est.partial_fit(X[:3], [1.0, np.inf, 2.0])
    with pytest.raises(ValueError, match="classes is only for classifiers"):
        est.partial_fit(X, y, classes=[0, 1])
    # A failed call leaves the stream as it was.
    assert est.n_samples_seen_ == 100 and est._stream.n_seen == 100


def test_partial_fit_rejects_changed_parameters():
    X, y = _regression(0, 100)
    est = BayesianLinearRegression(method="sgais", **FAST, random_state=0).partial_fit(X, y)
    est.set_params(verbose=0, random_state=5).partial_fit(X, y)  # these may change
    with pytest.raises(ValueError, match="changed since its stream started"):
        est.set_params(noise_var=2.0).partial_fit(X, y)
    est.set_params(noise_var=1.0).partial_fit(X, y)
    with pytest.raises(ValueError, match="changed since its stream started"):
        est.set_params(method_params={**FAST["method_params"], "n_steps": 4}).partial_fit(X, y)


@pytest.mark.parametrize("target_ess", [1.0, 11, 0.5])
def test_target_ess_outside_its_range_is_refused(target_ess):
    X, y = _regression(0, 50)
    with pytest.raises(ValueError, match="target_ess"):
        BayesianLinearRegression(method="sgais", method_params={"target_ess": target_ess}).partial_fit(X, y)
    with pytest.raises(ValueError, match="target_ess"):
        GaussianAdditiveModel(method="sgais", method_params={"target_ess": target_ess}).fit(X[:, :1])
