"""The models: exact evidences against dense computations, gradients against finite differences."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from skevidence.models import EvidenceModel, GaussianAdditive, LinearGaussian


def _finite_difference(fun, theta, h=1e-6):
    grad = np.empty_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = h
        grad[i] = (fun(theta + e) - fun(theta - e)) / (2 * h)
    return grad


@pytest.mark.parametrize("n_components", [1, 3])
@pytest.mark.parametrize("n", [1, 7, 40])
def test_gaussian_additive_exact_matches_dense_normal(rng, n_components, n):
    model = GaussianAdditive(n_components, prior_mean=1.5, prior_var=2.0, noise_var=0.7)
    x = rng.normal(3.0, 1.5, size=n)
    cov = 0.7 * np.eye(n) + n_components * 2.0 * np.ones((n, n))
    dense = multivariate_normal(np.full(n, n_components * 1.5), cov).logpdf(x)
    assert model.exact_log_evidence(x) == pytest.approx(dense, rel=1e-10, abs=1e-9)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("n", [1, 5, 30])
def test_linear_gaussian_exact_matches_dense_normal(rng, fit_intercept, n):
    d = 3
    model = LinearGaussian(d, noise_var=0.4, prior_var=1.7, fit_intercept=fit_intercept)
    X = rng.normal(size=(n, d))
    y = rng.normal(size=n)
    design = np.hstack([X, np.ones((n, 1))]) if fit_intercept else X
    cov = 0.4 * np.eye(n) + 1.7 * design @ design.T
    dense = multivariate_normal(np.zeros(n), cov).logpdf(y)
    assert model.exact_log_evidence(X, y) == pytest.approx(dense, rel=1e-10, abs=1e-9)


def test_linear_gaussian_posterior_matches_dense(rng):
    X = rng.normal(size=(25, 2))
    y = rng.normal(size=25)
    model = LinearGaussian(2, noise_var=0.5, prior_var=2.0)
    mean, cov = model.posterior(X, y)
    design = np.hstack([X, np.ones((25, 1))])
    dense_cov = np.linalg.inv(design.T @ design / 0.5 + np.eye(3) / 2.0)
    np.testing.assert_allclose(cov, dense_cov, rtol=1e-10)
    np.testing.assert_allclose(mean, dense_cov @ design.T @ y / 0.5, rtol=1e-10)


def test_gaussian_additive_posterior_mean_matches_dense(rng):
    x = rng.normal(4.0, 1.0, size=30)
    model = GaussianAdditive(2, prior_mean=1.0, prior_var=0.5, noise_var=2.0)
    # Dense Gaussian conditioning of theta on x.
    ones = np.ones((30, 2))
    prior_cov = 0.5 * np.eye(2)
    cov_x = ones @ prior_cov @ ones.T + 2.0 * np.eye(30)
    mean = 1.0 + prior_cov @ ones.T @ np.linalg.solve(cov_x, x - 2.0)
    np.testing.assert_allclose(model.posterior_mean(x), mean, rtol=1e-10)


@pytest.mark.parametrize(
    "model, data",
    [
        (GaussianAdditive(3, 1.0, 2.0, 0.5), lambda rng: (rng.normal(size=11), None)),
        (LinearGaussian(4, 0.3, 2.0), lambda rng: (rng.normal(size=(9, 4)), rng.normal(size=9))),
        (LinearGaussian(2, 1.0, 1.0, fit_intercept=False), lambda rng: (rng.normal(size=(5, 2)), rng.normal(size=5))),
    ],
)
def test_gradients_match_finite_differences(rng, model, data):
    X, y = model.prepare_data(*data(rng))
    theta = rng.normal(size=model.n_params)
    log_lik, grad = model.log_likelihood_and_grad(theta, X, y)
    assert log_lik.shape == (model.n_data(X, y),)
    np.testing.assert_allclose(
        grad, _finite_difference(lambda th: model.log_likelihood(th, X, y).sum(), theta), rtol=1e-6, atol=1e-6
    )
    np.testing.assert_allclose(
        model.grad_log_prior(theta), _finite_difference(model.log_prior, theta), rtol=1e-6, atol=1e-6
    )


def test_log_likelihood_matches_scipy(rng):
    model = LinearGaussian(2, noise_var=0.6)
    X, y = model.prepare_data(rng.normal(size=(6, 2)), rng.normal(size=6))
    theta = rng.normal(size=3)
    expected = multivariate_normal(X @ theta, 0.6 * np.eye(6)).logpdf(y)
    assert model.log_likelihood(theta, X, y).sum() == pytest.approx(expected)
    assert model.log_prior(theta) == pytest.approx(multivariate_normal(np.zeros(3), np.eye(3)).logpdf(theta))


def test_prior_samples_have_prior_moments(rng):
    model = GaussianAdditive(2, prior_mean=3.0, prior_var=0.25)
    draws = model.sample_prior(rng, size=20000)
    assert draws.shape == (20000, 2)
    np.testing.assert_allclose(draws.mean(axis=0), 3.0, atol=0.02)
    np.testing.assert_allclose(draws.var(axis=0), 0.25, rtol=0.05)


@pytest.mark.parametrize(
    "make",
    [
        lambda: GaussianAdditive(0),
        lambda: GaussianAdditive(1, prior_var=0.0),
        lambda: GaussianAdditive(1, noise_var=-1.0),
        lambda: GaussianAdditive(1, prior_mean=np.nan),
        lambda: LinearGaussian(2, noise_var=0.0),
        lambda: LinearGaussian(0),
    ],
)
def test_invalid_model_parameters_raise(make):
    with pytest.raises(ValueError, match="must be"):
        make()


def test_linear_gaussian_requires_y_and_matching_shapes(rng):
    model = LinearGaussian(2)
    with pytest.raises(ValueError, match="y is required"):
        model.prepare_data(rng.normal(size=(4, 2)))
    with pytest.raises(ValueError, match="shape"):
        model.prepare_data(rng.normal(size=(4, 3)), rng.normal(size=4))
    with pytest.raises(ValueError, match="same data points"):
        model.prepare_data(rng.normal(size=(4, 2)), rng.normal(size=5))


def test_a_model_without_likelihood_or_prior_is_refused_by_name():
    class Empty(EvidenceModel):
        pass

    with pytest.raises(TypeError, match="neither log_likelihood_and_grad nor log_likelihood_and_grad_particles"):
        Empty().log_likelihood_and_grad(np.zeros(2), np.zeros((3, 2)))
    with pytest.raises(TypeError, match="neither log_prior nor log_prior_particles"):
        Empty().log_prior_particles(np.zeros((4, 2)))
