"""method="rti", STI from a Laplace reference for the continuous models: the wrapped model against finite
differences and the estimators' defaults against the closed-form evidence."""

import warnings

import numpy as np
import pytest

from skevidence import BayesianLinearRegression, GaussianAdditiveModel
from skevidence.models import LinearGaussian
from skevidence.models._referenced import GaussianReferencedModel, laplace_reference


def _regression(seed, n=5000, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X @ rng.normal(size=d) + rng.normal(size=n)


def _wrapped(seed=0, n=300):
    X, y = _regression(seed, n=n, d=3)
    model = LinearGaussian(3)
    Xp, yp = model.prepare_data(X, y)
    mean, cov = laplace_reference(model, Xp, yp, random_state=0)
    return model, GaussianReferencedModel(model, mean, cov, Xp.shape[0]), Xp, yp


def test_laplace_fit_of_a_gaussian_posterior_is_the_posterior():
    model, _, Xp, yp = _wrapped()
    mean, cov = laplace_reference(model, Xp, yp, random_state=1)
    precision = Xp.T @ Xp / model.noise_var + np.eye(Xp.shape[1]) / model.prior_var
    np.testing.assert_allclose(mean, np.linalg.solve(precision, Xp.T @ yp / model.noise_var), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(cov, np.linalg.inv(precision), rtol=1e-4)


def test_wrapped_gradient_matches_finite_differences():
    _, wrapped, Xp, yp = _wrapped()
    z = np.random.default_rng(2).normal(size=wrapped.n_params)
    rows = slice(0, 40)
    log_lik, grad = wrapped.log_likelihood_and_grad(z, Xp[rows], yp[rows])
    h = 1e-6
    for j in range(z.size):
        step = np.zeros_like(z)
        step[j] = h
        numeric = (wrapped.log_likelihood(z + step, Xp[rows], yp[rows]).sum()
                   - wrapped.log_likelihood(z - step, Xp[rows], yp[rows]).sum()) / (2 * h)
        assert numeric == pytest.approx(grad[j], rel=1e-5, abs=1e-6)
    assert wrapped.grad_log_prior(z) == pytest.approx(-z)


def test_wrapped_model_has_the_same_evidence():
    """prior_z(z) * likelihood(z) summed over rows = p(theta) p(y | theta) times |L|: the same integral."""
    model, wrapped, Xp, yp = _wrapped()
    z = np.random.default_rng(3).normal(size=wrapped.n_params)
    theta = wrapped.theta(z)
    joint = wrapped.log_prior(z) + wrapped.log_likelihood(z, Xp, yp).sum()
    log_det = np.log(np.diag(wrapped.chol)).sum()
    assert joint == pytest.approx(model.log_prior(theta) + model.log_likelihood(theta, Xp, yp).sum() + log_det)


def test_defaults_match_the_closed_form(seed=0):
    """Both estimators at their defaults within 4 stated SEs of the closed form (eight seeds: ``-m slow``)."""
    X, y = _regression(seed)
    reg = BayesianLinearRegression(random_state=seed).fit(X, y)
    assert abs(reg.log_evidence_ - reg.exact_log_evidence(X, y)) < 4 * reg.log_evidence_std_
    assert reg.result_.method == "rti" and reg.result_.diagnostics["path"] == "laplace"
    x = np.random.default_rng(seed).normal(1.0, 1.5, size=(1000, 1))
    gam = GaussianAdditiveModel(random_state=seed).fit(x)
    assert abs(gam.log_evidence_ - gam.exact_log_evidence(x)) < 4 * gam.log_evidence_std_


@pytest.mark.slow
def test_defaults_match_the_closed_form_for_eight_seeds():
    """Both estimators at their defaults, 8 seeds each, within 4 stated SEs.

    From the prior (method="sti"), pSGLD is 4.1-6.6 nats low on these regressions (z -2.2 to -3.7).
    """
    for seed in range(8):
        X, y = _regression(seed)
        reg = BayesianLinearRegression(random_state=seed).fit(X, y)
        assert abs(reg.log_evidence_ - reg.exact_log_evidence(X, y)) < 4 * reg.log_evidence_std_, seed
        x = np.random.default_rng(seed).normal(1.0, 1.5, size=(1000, 1))
        gam = GaussianAdditiveModel(random_state=seed).fit(x)
        assert abs(gam.log_evidence_ - gam.exact_log_evidence(x)) < 4 * gam.log_evidence_std_, seed


SHORT = dict(method_params=dict(n_samples=300, n_burnin=100, temperatures=5), random_state=0)


def test_sti_runs_the_papers_path_from_the_prior():
    """method="sti" is sti_log_evidence on the model itself; "rti" on the model seen from its Laplace fit."""
    from skevidence import sti_log_evidence

    X, y = _regression(0, n=500)
    prior = BayesianLinearRegression(method="sti", **SHORT).fit(X, y)
    direct = sti_log_evidence(LinearGaussian(4), X, y, **SHORT["method_params"], random_state=0)
    assert prior.log_evidence_ == direct.log_evidence and prior.result_.method == "sti"
    referenced = BayesianLinearRegression(**SHORT).fit(X, y)
    model = LinearGaussian(4)
    Xp, yp = model.prepare_data(X, y)
    wrapped = GaussianReferencedModel(model, *laplace_reference(model, Xp, yp, random_state=0), Xp.shape[0])
    direct = sti_log_evidence(wrapped, X, y, **SHORT["method_params"], random_state=0)
    assert referenced.log_evidence_ == direct.log_evidence and referenced.result_.method == "rti"


def test_failed_laplace_fit_falls_back_to_the_prior_path(monkeypatch):
    import skevidence.models._referenced as referenced

    monkeypatch.setattr(referenced, "laplace_reference", lambda *args, **kwargs: None)
    X, y = _regression(0, n=500)
    with pytest.warns(UserWarning, match="no Laplace fit.*method='rti' ran STI from the prior"):
        fallback = BayesianLinearRegression(**SHORT).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prior = BayesianLinearRegression(method="sti", **SHORT).fit(X, y)
    assert fallback.log_evidence_ == prior.log_evidence_
    assert fallback.result_.method == "rti" and fallback.result_.diagnostics["path"] == "prior"


def test_constrained_model_is_refused():
    class Positive(LinearGaussian):
        nonnegative = True

    with pytest.raises(ValueError, match="non-negative parameters"):
        GaussianReferencedModel(Positive(2), np.zeros(3), np.eye(3), 10)
