"""Ladders, trapezoid weights, batch-means errors and the result record."""

import pickle

import numpy as np
import pytest

from skevidence import EvidenceResult, temperature_ladder
from skevidence.evidence import batch_means_variance, trapezoid_weights
from skevidence.evidence._ladder import check_ladder


def test_power_and_uniform_ladders():
    np.testing.assert_allclose(temperature_ladder(4), (np.arange(5) / 4) ** 5)
    np.testing.assert_allclose(temperature_ladder(4, kind="uniform"), np.arange(5) / 4)
    np.testing.assert_allclose(temperature_ladder(2, power=2), [0, 0.25, 1])
    with pytest.raises(ValueError, match="ladder must be one of"):
        temperature_ladder(3, kind="geometric")
    with pytest.raises(ValueError, match=">= 1"):
        temperature_ladder(0)


@pytest.mark.parametrize(
    "ladder, match",
    [
        ([0.1, 0.5, 1.0], "start at 0 and end at 1"),
        ([0.0, 0.5, 0.9], "start at 0 and end at 1"),
        ([0.0, 0.6, 0.5, 1.0], "strictly increasing"),
        ([0.0, 0.5, 0.5, 1.0], "strictly increasing"),
        ([0.0, np.nan, 1.0], "finite"),
        ([1.0], "at least two"),
        ([[0.0, 1.0]], "1-D"),
    ],
)
def test_check_ladder_rejects(ladder, match):
    with pytest.raises(ValueError, match=match):
        check_ladder(ladder)


def test_trapezoid_weights_integrate_exactly_linear_functions():
    t = np.array([0.0, 0.1, 0.35, 1.0])
    w = trapezoid_weights(t)
    assert w.sum() == pytest.approx(1.0)
    assert w @ (3 * t + 2) == pytest.approx(3.5)
    # Not exact for a curved integrand: the discretisation bias STI's error does not cover.
    assert w @ t**2 != pytest.approx(1 / 3, abs=1e-3)


def test_batch_means_on_ar1_matches_theory(rng):
    phi, n = 0.9, 200_000
    noise = rng.standard_normal(n)
    x = np.empty(n)
    x[0] = noise[0] / np.sqrt(1 - phi**2)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + noise[i]
    var_mean, tau = batch_means_variance(x)
    marginal_var = 1 / (1 - phi**2)
    true_tau = (1 + phi) / (1 - phi)
    assert tau == pytest.approx(true_tau, rel=0.25)
    assert var_mean == pytest.approx(marginal_var * true_tau / n, rel=0.25)


def test_batch_means_on_independent_samples(rng):
    x = rng.standard_normal(10_000)
    var_mean, tau = batch_means_variance(x)
    assert var_mean == pytest.approx(1 / 10_000, rel=0.3)
    assert 1.0 <= tau < 1.5


def _result():
    return EvidenceResult(
        log_evidence=-12.5,
        std_error=0.25,
        method="sti",
        temperatures=[0.0, 1.0],
        expected_log_likelihood=[-20.0, -5.0],
        expected_log_likelihood_std=[1.0, 0.1],
        n_likelihood_evaluations=100,
        wall_time=0.5,
        diagnostics={"step_size": np.array([1e-3, 1e-3])},
    )


def test_result_is_immutable_and_summarises(capsys):
    result = _result()
    with pytest.raises(AttributeError):
        result.log_evidence = 0.0
    with pytest.raises(ValueError):
        result.temperatures[0] = 0.5
    with pytest.raises(TypeError):
        result.diagnostics["step_size"] = 1.0
    text = result.summary()
    assert "log Z = -12.5 ± 0.25" in capsys.readouterr().out
    assert text.startswith("log Z = -12.5 ± 0.25")
    assert "-12.5" in repr(result)


def test_result_pickles():
    result = _result()
    back = pickle.loads(pickle.dumps(result))
    assert back.log_evidence == result.log_evidence
    np.testing.assert_array_equal(back.diagnostics["step_size"], result.diagnostics["step_size"])


def test_integrated_autocorr_time_on_ar1(rng):
    from skevidence.evidence._stderr import integrated_autocorr_time

    phi, n = 0.8, 100_000
    noise = rng.standard_normal(n)
    x = np.empty(n)
    x[0] = noise[0]
    for i in range(1, n):
        x[i] = phi * x[i - 1] + noise[i]
    assert integrated_autocorr_time(x) == pytest.approx((1 + phi) / (1 - phi), rel=0.15)
    assert integrated_autocorr_time(rng.standard_normal(5000)) == pytest.approx(1.0, abs=0.3)
    # A random walk decorrelates far slower than independent draws.
    assert integrated_autocorr_time(np.cumsum(rng.standard_normal(2000))) > 50
