"""SGHMC: eq. 5 of seed 004 step by step, a known Gaussian target, the velocity state, bad settings."""

import numpy as np
import pytest

from skevidence import sti_log_evidence
from skevidence.evidence import batch_means_variance
from skevidence.models import GaussianAdditive
from skevidence.samplers import SGHMC, Sampler, get_sampler

# A correlated 2-D Gaussian target: precision A, mean mu.
A = np.array([[2.0, 0.6], [0.6, 1.0]])
MU = np.array([1.0, -2.0])
COV = np.linalg.inv(A)


def _run(sampler, rng, n_steps, n_burnin, learning_rate, grad_noise=0.0):
    theta = np.zeros(2)
    state = sampler.init_state(theta)
    out = np.empty((n_steps - n_burnin, 2))
    for k in range(n_steps):
        grad = -A @ (theta - MU) + grad_noise * rng.standard_normal(2)
        theta = sampler.step(theta, grad, None, learning_rate, rng, state)
        if k >= n_burnin:
            out[k - n_burnin] = theta
    return out


def test_sghmc_recovers_gaussian_moments(rng):
    draws = _run(SGHMC(), rng, n_steps=100_000, n_burnin=2_000, learning_rate=0.02)
    for j in range(2):
        var_mean, _ = batch_means_variance(draws[:, j])
        assert abs(draws[:, j].mean() - MU[j]) < 5 * np.sqrt(var_mean)
    # The discretisation bias of the variance is O(eta * curvature) ~ 5 %.
    np.testing.assert_allclose(np.cov(draws.T), COV, rtol=0.10, atol=0.03)


def test_noise_correction_offsets_known_gradient_noise(rng):
    """Gradient noise of variance V adds eta^2 V per step; beta_hat = eta V / 2 removes it."""
    eta, noise = 0.02, 5.0
    plain = np.cov(_run(SGHMC(), rng, 60_000, 1_000, eta, grad_noise=noise).T)
    corrected = SGHMC(momentum_decay=0.5, noise_correction=eta * noise**2 / 2)
    fixed = np.cov(_run(corrected, rng, 60_000, 1_000, eta, grad_noise=noise).T)
    err = lambda c: np.abs(c - COV).max()  # noqa: E731
    assert err(plain) > 0.3  # the extra noise heats the chain visibly
    assert err(fixed) < 0.1


def test_step_matches_equation_5():
    sampler = SGHMC(momentum_decay=0.3, noise_correction=0.1)
    theta, grad, eta = np.array([0.5, -1.0]), np.array([2.0, 0.4]), 1e-2
    state = {"v": np.array([0.1, -0.2]), "eta": eta}
    new = sampler.step(theta, grad, None, eta, np.random.default_rng(4), state)
    noise = np.random.default_rng(4).standard_normal(2)
    v = 0.7 * np.array([0.1, -0.2]) + eta * grad + np.sqrt(2 * (0.3 - 0.1) * eta) * noise
    np.testing.assert_allclose(state["v"], v)
    np.testing.assert_allclose(new, theta + v)


def test_new_chain_starts_velocity_at_equilibrium_and_rescales_it():
    sampler = SGHMC()
    rng = np.random.default_rng(0)
    state = sampler.init_state(np.zeros(50_000))
    sampler.step(np.zeros(50_000), np.zeros(50_000), None, 0.04, rng, state)
    # v0 ~ N(0, eta); one step: (0.8 v0) + N(0, 2 * 0.2 * eta) has variance 0.64 eta + 0.4 eta.
    assert np.var(state["v"]) == pytest.approx(1.04 * 0.04, rel=0.03)
    v = state["v"].copy()
    mirror_rng = np.random.default_rng(1)
    sampler.step(np.zeros(50_000), np.zeros(50_000), None, 0.01, mirror_rng, state)
    noise = np.random.default_rng(1).standard_normal(50_000)
    expected = 0.8 * v * np.sqrt(0.01 / 0.04) + np.sqrt(2 * 0.2 * 0.01) * noise
    np.testing.assert_allclose(state["v"], expected)


def test_fixed_learning_rate_overrides_the_step_size():
    theta, grad = np.ones(3), np.full(3, -1.0)
    a, b = SGHMC(learning_rate=1e-3), SGHMC()
    sa, sb = a.init_state(theta), b.init_state(theta)
    out_a = a.step(theta, grad, None, 0.5, np.random.default_rng(2), sa)
    out_b = b.step(theta, grad, None, 1e-3, np.random.default_rng(2), sb)
    np.testing.assert_array_equal(out_a, out_b)


def test_stack_of_chains_moves_elementwise():
    """SGAIS moves (M, n_params) stacks: every chain follows eq. 5 on its own."""
    thetas = np.arange(6.0).reshape(3, 2)
    grads = -thetas
    state = {"v": np.full((3, 2), 0.01), "eta": 0.05}
    new = SGHMC().step(thetas, grads, None, 0.05, np.random.default_rng(5), state)
    noise = np.random.default_rng(5).standard_normal((3, 2))
    expected = thetas + 0.8 * 0.01 + 0.05 * grads + np.sqrt(2 * 0.2 * 0.05) * noise
    np.testing.assert_allclose(new, expected)


def test_registered_and_usable_by_sti(seed):
    assert isinstance(get_sampler("sghmc"), SGHMC) and isinstance(get_sampler("SGHMC"), Sampler)
    x = np.random.default_rng(seed).normal(2.5, 1.0, size=2000)
    model = GaussianAdditive(2, 1.0, 1.0, 1.0)
    result = sti_log_evidence(
        model, x, sampler="sghmc", temperatures=10, n_samples=1000, n_burnin=300, batch_size=100,
        random_state=seed,
    )  # fmt: skip
    assert abs(result.log_evidence - model.exact_log_evidence(x)) <= 4 * result.std_error
    assert "SGHMC(" in result.diagnostics["sampler"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"learning_rate": 0.0}, "learning_rate must be a positive"),
        ({"learning_rate": np.inf}, "learning_rate must be a positive"),
        ({"momentum_decay": 0.0}, r"momentum_decay must be in \(0, 1\]"),
        ({"momentum_decay": 1.5}, r"momentum_decay must be in \(0, 1\]"),
        ({"noise_correction": -0.1}, "noise_correction must be in"),
        ({"momentum_decay": 0.2, "noise_correction": 0.3}, "noise_correction must be in"),
    ],
)
def test_bad_settings_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SGHMC(**kwargs)


def test_missing_learning_rate_is_explained():
    with pytest.raises(ValueError, match="needs a learning rate"):
        SGHMC().step(np.zeros(1), np.zeros(1), None, None, np.random.default_rng(0), {"v": None, "eta": None})
