"""Temperature ladders for thermodynamic integration."""

import numbers

import numpy as np

from .._config import DEFAULT_LADDER_POWER, LADDER_ATOL

LADDER_KINDS = ("power", "uniform")


def temperature_ladder(n_temperatures, kind="power", power=DEFAULT_LADDER_POWER):
    r"""Inverse temperatures :math:`0 = t_0 < \dots < t_T = 1`.

    Parameters
    ----------
    n_temperatures : int
        Number of intervals :math:`T` (the ladder has ``T + 1`` points).
    kind : {"power", "uniform"}, default="power"
        ``"power"`` gives :math:`t_i = (i/T)^c`, dense near :math:`t = 0`
        where the integrand is steep (Friel & Pettitt 2008); ``"uniform"``
        gives :math:`t_i = i/T`, the ladder of the papers.
    power : float, default=5
        Exponent :math:`c` of the power ladder.

    Returns
    -------
    temperatures : ndarray of shape (n_temperatures + 1,)
    """
    if not isinstance(n_temperatures, numbers.Integral) or n_temperatures < 1:
        raise ValueError(f"the number of temperatures must be an integer >= 1, got {n_temperatures!r}.")
    if kind not in LADDER_KINDS:
        raise ValueError(f"ladder must be one of {LADDER_KINDS}, got {kind!r}.")
    grid = np.arange(n_temperatures + 1, dtype=np.float64) / n_temperatures
    if kind == "uniform":
        return grid
    if not power > 0:
        raise ValueError(f"the ladder power must be positive, got {power!r}.")
    return grid**power


def ladder_from(temperatures, kind):
    """The ladder an evidence method's ``temperatures`` argument describes.

    An int ``T`` gives :func:`temperature_ladder` ``(T, kind)``; anything else
    is an explicit ladder, checked by :func:`check_ladder`.
    """
    if isinstance(temperatures, numbers.Integral) and not isinstance(temperatures, bool):
        return temperature_ladder(int(temperatures), kind=kind)
    return check_ladder(temperatures)


def check_ladder(temperatures):
    """Validate an explicit ladder: finite, strictly increasing, from 0 to 1; a copy with exact end points."""
    t = np.array(temperatures, dtype=np.float64)
    if t.ndim != 1 or t.size < 2:
        raise ValueError(f"temperatures must be a 1-D array of at least two values (0 and 1), got shape {t.shape}.")
    if not np.all(np.isfinite(t)):
        raise ValueError("temperatures must be finite.")
    if abs(t[0]) > LADDER_ATOL or abs(t[-1] - 1.0) > LADDER_ATOL:
        raise ValueError(f"the temperature ladder must start at 0 and end at 1, got {t[0]!r} ... {t[-1]!r}.")
    if np.any(np.diff(t) <= 0):
        raise ValueError("the temperature ladder must be strictly increasing.")
    t[0], t[-1] = 0.0, 1.0
    return t


def trapezoid_weights(temperatures):
    r"""Weights :math:`w_i` with :math:`\sum_i w_i f(t_i)` the trapezoid rule on the ladder."""
    dt = np.diff(temperatures)
    return (np.r_[dt, 0.0] + np.r_[0.0, dt]) / 2.0


def rti_temperatures(n_temperatures, power=5.0):
    r"""The ladder :math:`t_k = 1 - (1 - k/K)^{c}` and :math:`dt/dk` at its points."""
    k = np.arange(n_temperatures + 1, dtype=np.float64) / n_temperatures
    t = 1.0 - (1.0 - k) ** power
    return t, power * (1.0 - k) ** (power - 1.0) / n_temperatures


def simpson_weights(n_intervals):
    """Composite Simpson weights on ``n_intervals + 1`` unit-spaced points (``n_intervals`` even)."""
    if n_intervals % 2:
        raise ValueError(f"Simpson's rule needs an even number of intervals, got {n_intervals}.")
    w = np.ones(n_intervals + 1)
    w[1:-1:2] = 4.0
    w[2:-1:2] = 2.0
    return w / 3.0
