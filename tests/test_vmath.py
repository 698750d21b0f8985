"""The vectorisable exponential of the log-space SGLD update against NumPy's."""

import numpy as np
from numpy.testing import assert_array_equal

from skevidence.cp.kernels._vmath import EXP_MAX, EXP_MIN, exp_inplace


def _exp(x):
    y = np.array(x, dtype=float)
    exp_inplace(y, np.empty(y.size, dtype=np.int64))
    return y


def test_exp_is_within_two_ulp_of_numpy_over_its_range():
    rng = np.random.default_rng(0)
    x = np.concatenate([
        rng.uniform(-3.0, 3.0, 200_000),  # log-space SGLD's increments live here
        rng.uniform(EXP_MIN, EXP_MAX, 200_000),
        np.arange(-1000, 1001) * np.log(2.0),  # the reduction's switch points
        [0.0, -0.0, 1e-300, -1e-300, 0.5 * np.log(2.0), -0.5 * np.log(2.0), EXP_MIN, EXP_MAX],
    ])
    x = x[(x >= EXP_MIN) & (x <= EXP_MAX)]
    ref = np.exp(x)
    got = _exp(x)
    ulps = np.abs(got - ref) / np.spacing(ref)
    assert ulps.max() <= 2.0, (ulps.max(), x[np.argmax(ulps)])
    assert _exp([0.0])[0] == 1.0


def test_exp_out_of_range_and_non_finite_arguments():
    got = _exp([EXP_MIN - 1.0, -1e308, -np.inf, EXP_MAX + 1.0, 1e308, np.inf, np.nan])
    assert_array_equal(got[:3], 0.0)
    assert_array_equal(got[3:6], np.inf)
    assert np.isnan(got[6])


def test_exp_leaves_the_tail_of_a_longer_work_array_alone():
    x = np.linspace(-1.0, 1.0, 7)
    bits = np.full(10, 12345, dtype=np.int64)
    y = x.copy()
    exp_inplace(y, bits)
    assert_array_equal(bits[7:], 12345)
    np.testing.assert_allclose(y, np.exp(x), rtol=4e-16)
