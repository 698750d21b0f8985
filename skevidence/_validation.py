"""Checks of scalar settings, in one place: every message names the setting, the bound and the value."""

import numbers

import numpy as np

__all__ = ["check_int", "check_positive_real"]


def check_int(name, value, minimum=1):
    """``value`` as an ``int`` if it is an integer (a bool is not) of at least ``minimum``.

    Raises
    ------
    ValueError
        Naming ``name``, ``minimum`` and ``value`` otherwise.
    """
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def check_positive_real(name, value):
    """``value`` as a ``float`` if it is a real number (a bool is not), finite and above 0.

    Raises
    ------
    ValueError
        Naming ``name`` and ``value`` otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}.")
    return float(value)
