"""SGLD and pSGLD sample a known Gaussian; the step-size schedule and mirroring."""

import numpy as np
import pytest

from skevidence.evidence import batch_means_variance
from skevidence.samplers import PSGLD, SGLD, StepSizeSchedule, get_sampler, mirror

# A correlated 2-D Gaussian target: precision A, mean mu.
A = np.array([[2.0, 0.6], [0.6, 1.0]])
MU = np.array([1.0, -2.0])
COV = np.linalg.inv(A)


def _run(sampler, rng, n_steps, n_burnin, step_size):
    theta = np.zeros(2)
    state = sampler.init_state(theta)
    out = np.empty((n_steps - n_burnin, 2))
    for k in range(n_steps):
        if k == n_burnin:
            sampler.end_burnin(state)
        grad = -A @ (theta - MU)
        # pSGLD's preconditioner sees the gradient with minibatch-like noise of
        # unit scale, as in practice; the drift uses the exact gradient, so the
        # target is known exactly.
        mean_lik_grad = grad + rng.standard_normal(2)
        theta = sampler.step(theta, grad, mean_lik_grad, step_size, rng, state)
        if k >= n_burnin:
            out[k - n_burnin] = theta
    return out


@pytest.mark.parametrize("sampler, step_size", [(SGLD(), 0.01), (PSGLD(), 0.02)])
def test_sampler_recovers_gaussian_moments(rng, sampler, step_size):
    draws = _run(sampler, rng, n_steps=100_000, n_burnin=2_000, step_size=step_size)
    for j in range(2):
        var_mean, tau = batch_means_variance(draws[:, j])
        # The mean is unbiased: within 5 Monte-Carlo standard errors.
        assert abs(draws[:, j].mean() - MU[j]) < 5 * np.sqrt(var_mean)
    # Variances: Langevin discretisation inflates them by O(step size); 10 % allows it.
    np.testing.assert_allclose(np.cov(draws.T), COV, rtol=0.10, atol=0.03)


def test_sgld_large_step_inflates_variance(rng):
    """The O(epsilon) bias of Theorem 1 is real: a 10x larger step is visibly worse."""
    small = np.cov(_run(SGLD(), rng, 50_000, 1_000, 0.01).T)
    large = np.cov(_run(SGLD(), rng, 50_000, 1_000, 0.3).T)

    def err(c):
        return np.abs(c - COV).max()

    assert err(large) > 3 * err(small)


def test_psgld_preconditioner_follows_rmsprop():
    sampler = PSGLD(alpha=0.9, sigma=1e-3, adapt="always")
    state = sampler.init_state(np.zeros(2))
    rng = np.random.default_rng(0)
    g1, g2 = np.array([1.0, -2.0]), np.array([3.0, 0.5])
    sampler.step(np.zeros(2), g1, g1, 0.1, rng, state)
    np.testing.assert_allclose(state["v"], g1**2)  # v0 = first squared gradient
    sampler.step(np.zeros(2), g2, g2, 0.1, rng, state)
    np.testing.assert_allclose(state["v"], 0.9 * g1**2 + 0.1 * g2**2)


def test_psgld_step_matches_formula():
    sampler = PSGLD(alpha=0.99, sigma=1e-5)
    theta, g, gbar, eps = np.array([0.5, 1.0]), np.array([2.0, -1.0]), np.array([0.2, 0.3]), 1e-3
    state = sampler.init_state(theta)
    new = sampler.step(theta, g, gbar, eps, np.random.default_rng(7), state)
    G = 1.0 / (1e-5 + np.abs(gbar))
    noise = np.random.default_rng(7).standard_normal(2)
    np.testing.assert_allclose(new, theta + eps * G * g + np.sqrt(2 * eps * G) * noise)


def test_sgld_step_matches_formula():
    theta, g, eps = np.array([0.5, 1.0]), np.array([2.0, -1.0]), 1e-2
    new = SGLD().step(theta, g, g, eps, np.random.default_rng(3), None)
    noise = np.random.default_rng(3).standard_normal(2)
    np.testing.assert_allclose(new, theta + eps * g + np.sqrt(2 * eps) * noise)


def test_psgld_freezes_after_burnin_only_by_default():
    rng = np.random.default_rng(0)
    for adapt, changes in (("burnin", False), ("always", True)):
        sampler = PSGLD(adapt=adapt)
        state = sampler.init_state(np.zeros(1))
        sampler.step(np.zeros(1), np.ones(1), np.ones(1), 1e-3, rng, state)
        sampler.end_burnin(state)
        before = state["v"].copy()
        sampler.step(np.zeros(1), np.ones(1), 5 * np.ones(1), 1e-3, rng, state)
        assert (not np.array_equal(state["v"], before)) is changes


def test_step_size_schedule():
    schedule = StepSizeSchedule(a=1e-8, b=0.51, n_burnin=1000)
    assert schedule(1) == pytest.approx(1e-8**0.51)
    assert schedule(10) == pytest.approx((1e-9) ** 0.51)
    # Fixed after burn-in at its last value.
    assert schedule(1000) == schedule(5000) == schedule.final == pytest.approx((1e-11) ** 0.51)
    assert StepSizeSchedule(0.3, 0.0, 10)(7) == 0.3
    ending = StepSizeSchedule.ending_at(2e-6, 0.51, 1000)
    assert ending.final == pytest.approx(2e-6)
    assert ending(1) > ending(500) > ending.final


def test_mirror_reflects_only_constrained_entries():
    theta = np.array([-1.0, -2.0, 3.0])
    np.testing.assert_array_equal(mirror(theta.copy(), np.array([True, False, True])), [1.0, -2.0, 3.0])
    np.testing.assert_array_equal(mirror(theta.copy(), True), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(mirror(theta.copy(), None), theta)


def test_get_sampler():
    assert isinstance(get_sampler("sgld"), SGLD)
    assert isinstance(get_sampler("PSGLD"), PSGLD)
    custom = PSGLD(alpha=0.5)
    assert get_sampler(custom) is custom
    with pytest.raises(ValueError, match="sampler must be one of"):
        get_sampler("hmc")


@pytest.mark.parametrize(
    "kwargs, match", [({"alpha": 1.0}, "alpha"), ({"sigma": 0.0}, "sigma"), ({"adapt": "x"}, "adapt")]
)
def test_psgld_rejects_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PSGLD(**kwargs)


