"""AIS with full-data HMC: closed forms, invariance of its transitions, the weight helpers, bad input."""

from functools import partial

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning

from skevidence.evidence import ais_log_evidence
from skevidence.evidence._stderr import effective_sample_size
from skevidence.evidence.ais import _hmc_transition, _tempered, log_mean_weight_variance, systematic_resample
from skevidence.models import GaussianAdditive, LinearGaussian


def _regression(seed, n, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X @ rng.normal(size=d) + 0.3 + rng.normal(size=n)


def test_matches_exact_linear_regression(seed):
    X, y = _regression(seed, 1000)
    model = LinearGaussian(3)
    result = ais_log_evidence(model, X, y, random_state=seed)
    assert abs(result.log_evidence - model.exact_log_evidence(X, y)) <= 4 * result.std_error
    assert result.method == "ais" and result.std_error > 0
    assert result.temperatures.size == 501 and result.diagnostics["ess"] > 5


def test_matches_exact_gaussian_additive(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(rng.normal(5.0, np.sqrt(3.0), 3).sum(), np.sqrt(5.0), 1000)
    model = GaussianAdditive(3, 5.0, 3.0, 5.0)
    result = ais_log_evidence(model, x, random_state=seed)
    assert abs(result.log_evidence - model.exact_log_evidence(x)) <= 4 * result.std_error


def test_by_products_expected_log_likelihood_and_posterior_mean(seed):
    X, y = _regression(seed, 500, d=2)
    model = LinearGaussian(2)
    result = ais_log_evidence(model, X, y, n_temperatures=300, random_state=seed)
    # Thermodynamic integration of AIS's own by-product agrees with its estimate.
    t, f = result.temperatures, result.expected_log_likelihood
    assert np.sum(np.diff(t) * (f[1:] + f[:-1]) / 2) == pytest.approx(result.log_evidence, abs=2.0)
    assert np.all(np.diff(f[t > 1e-3]) > -3 * result.expected_log_likelihood_std[t > 1e-3][1:])
    mean, cov = model.posterior(X, y)
    np.testing.assert_array_less(np.abs(result.posterior_mean - mean), 4 * np.sqrt(np.diag(cov)))
    rates = result.diagnostics["acceptance_rate"][1:]
    assert 0.5 < np.mean(rates) < 0.99


def test_hmc_transitions_leave_the_posterior_invariant(rng):
    """Particles drawn from the exact posterior stay distributed as it after many transitions."""
    X, y = _regression(1, 200, d=2)
    model = LinearGaussian(2)
    design, targets = model.prepare_data(X, y)
    mean, cov = model.posterior(X, y)
    thetas = rng.multivariate_normal(mean, cov, size=4000)
    tempered = partial(_tempered, model, design, targets)
    cache = tempered(thetas)
    # A large step (acceptance well below 1): only the Metropolis test keeps the law right.
    for _ in range(10):
        thetas, cache, accept = _hmc_transition(tempered, 1.0, thetas, cache, 0.08, 5, rng)
    assert 0.2 < accept.mean() < 0.9
    # Each particle is still an exact, independent posterior draw: 5 Monte-Carlo errors.
    np.testing.assert_array_less(np.abs(thetas.mean(axis=0) - mean), 5 * np.sqrt(np.diag(cov) / 4000))
    np.testing.assert_allclose(np.cov(thetas.T), cov, rtol=0.1, atol=0.1 * np.abs(cov).max())
    # The cache follows the accepted states.
    np.testing.assert_allclose(cache[0], model.log_likelihood_particles(thetas, design, targets).sum(axis=1))


def test_weight_helpers_match_their_definitions(rng):
    log_w = rng.normal(scale=2.0, size=12) + 100.0
    w = np.exp(log_w - log_w.max())
    assert effective_sample_size(log_w) == pytest.approx(w.sum() ** 2 / (w @ w))
    a = w / w.mean()  # weights relative to their mean
    assert log_mean_weight_variance(log_w) == pytest.approx(a.var(ddof=1) / 12)
    assert log_mean_weight_variance(np.zeros(5)) == pytest.approx(0.0, abs=1e-15)
    assert log_mean_weight_variance(np.zeros(1)) == 0.0
    # Systematic resampling keeps floor or ceil of M * w copies of each particle.
    idx = systematic_resample(log_w, rng)
    counts = np.bincount(idx, minlength=12)
    expected = 12 * w / w.sum()
    assert counts.sum() == 12 and np.all(np.abs(counts - expected) < 1.0 + 1e-12)


def test_log_mean_weight_variance_matches_repeated_draws(rng):
    """The delta-method variance of log(mean W) agrees with its spread for mild weights."""
    draws = rng.lognormal(sigma=0.4, size=(20_000, 50))
    estimates = np.log(draws.mean(axis=1))
    stated = np.mean([log_mean_weight_variance(np.log(row)) for row in draws[:2000]])
    assert stated == pytest.approx(estimates.var(), rel=0.1)


def test_too_few_temperatures_warn_with_the_estimate():
    X, y = _regression(0, 2000)
    with pytest.warns(ConvergenceWarning, match="degenerate.*Increase n_temperatures"):
        ais_log_evidence(LinearGaussian(3), X, y, n_temperatures=3, random_state=0)


def test_reproducible_and_explicit_ladders():
    x = np.random.default_rng(0).normal(size=100)
    model = GaussianAdditive(1)
    a = ais_log_evidence(model, x, n_temperatures=50, random_state=1)
    b = ais_log_evidence(model, x, n_temperatures=50, random_state=1)
    assert a.log_evidence == b.log_evidence
    explicit = ais_log_evidence(model, x, n_temperatures=np.linspace(0, 1, 11) ** 3, step_size=0.05, random_state=1)
    np.testing.assert_allclose(explicit.temperatures, np.linspace(0, 1, 11) ** 3)
    np.testing.assert_array_equal(explicit.diagnostics["step_size"][1:], 0.05)
    uniform = ais_log_evidence(model, x, n_temperatures=4, ladder="uniform", random_state=1)
    np.testing.assert_allclose(uniform.temperatures, [0, 0.25, 0.5, 0.75, 1])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_counts_full_data_evaluations():
    x = np.random.default_rng(0).normal(size=100)
    result = ais_log_evidence(GaussianAdditive(1), x, n_particles=4, n_temperatures=5, n_leapfrog=3, random_state=0)
    # Prior draws once, then every leapfrog step on all rows for every particle.
    assert result.n_likelihood_evaluations == 4 * 100 * (1 + 5 * 1 * 3)


X_OK = np.random.default_rng(0).normal(size=50)


@pytest.mark.parametrize(
    "x, kwargs, match",
    [
        (np.r_[X_OK, np.nan], {}, "NaN or infinity"),
        (np.array([]), {}, "empty"),
        (X_OK, {"n_particles": 1}, "n_particles must be an integer >= 2"),
        (X_OK, {"n_steps": 0}, "n_steps must be an integer >= 1"),
        (X_OK, {"n_leapfrog": 0}, "n_leapfrog must be an integer >= 1"),
        (X_OK, {"n_temperatures": 0}, ">= 1"),
        (X_OK, {"n_temperatures": [0.0, 0.7, 0.4, 1.0]}, "strictly increasing"),
        (X_OK, {"ladder": "cosine"}, "ladder must be one of"),
        (X_OK, {"step_size": -1.0}, "step_size must be a positive number or 'auto'"),
        (X_OK, {"step_size": "big"}, "step_size must be a positive number or 'auto'"),
    ],
)
def test_bad_input_raises_value_error_naming_the_problem(x, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ais_log_evidence(GaussianAdditive(1), x, **{"n_temperatures": 5, **kwargs})


def test_model_without_exact_prior_draws_is_refused():
    class NoPrior(GaussianAdditive):
        exact_prior_sampling = False

    with pytest.raises(TypeError, match="cannot sample its prior exactly"):
        ais_log_evidence(NoPrior(1), X_OK)


def test_logsumexp_estimate_is_the_mean_of_the_weights():
    x = np.random.default_rng(3).normal(size=80)
    result = ais_log_evidence(GaussianAdditive(2), x, n_particles=6, n_temperatures=40, random_state=0)
    log_w = result.diagnostics["log_weights"]
    assert result.log_evidence == pytest.approx(logsumexp(log_w) - np.log(6))
    assert result.std_error == pytest.approx(np.sqrt(log_mean_weight_variance(log_w)))
