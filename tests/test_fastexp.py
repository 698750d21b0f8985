"""The vectorised exponential against NumPy's: within an ulp inside its range, libm's outside."""

import numpy as np
import pytest

from skevidence.cp.kernels.fastexp import exp_into


def test_exp_into_is_numpys_within_an_ulp():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(scale=s, size=4000) for s in (1e-8, 1.0, 30.0, 300.0)])
    x = np.concatenate([x, [0.0, -0.0, -708.0, 709.0, np.log(2.0), -np.log(2.0) / 2, np.log(2.0) / 2, 1e-300]])
    x = np.clip(x, -708.0, 709.0).reshape(-1, 8)
    out = np.empty_like(x)
    assert exp_into(x, out) is out
    expected = np.exp(x)
    assert np.all(np.abs(out - expected) <= np.spacing(expected))


@pytest.mark.parametrize("value", [709.5, 710.0, -708.5, -740.0, -800.0, np.inf, -np.inf, np.nan])
def test_exp_into_outside_its_range_is_libms(value):
    x = np.array([[1.0, value, -2.0]])
    with np.errstate(over="ignore"):
        expected = np.exp(x)
    out = exp_into(x, np.empty_like(x))
    np.testing.assert_array_equal(out[0, 1], expected[0, 1])
    assert np.all(np.abs(out[0, ::2] - expected[0, ::2]) <= np.spacing(expected[0, ::2]))


def test_exp_into_in_place():
    x = np.linspace(-750.0, 720.0, 301).reshape(7, 43)
    with np.errstate(over="ignore"):
        expected = exp_into(x, np.empty_like(x))
    np.testing.assert_array_equal(exp_into(x, x), expected)
