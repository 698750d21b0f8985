r"""The exponential of an array in a loop the compiler vectorises.

The leapfrog takes :math:`\theta = e^{\varphi}` of every factor entry at
every step; libm's ``exp`` is a scalar call (numba's SVML, which would
vectorise it, is not available everywhere), about a sixth of a gradient's
time at P2's size. Here :math:`e^x = 2^k e^r` with :math:`k` the nearest
integer to :math:`x/\log 2`, :math:`r = x - k\log 2` with :math:`\log 2` in
two parts (the first's product with :math:`k` exact for :math:`|k| < 2^{11}`), so
:math:`|r| \le \tfrac12\log 2`, :math:`e^r` by its Taylor polynomial of degree
13 (truncation below :math:`10^{-17}` relative) and :math:`2^k` built in the
exponent bits: within an ulp of libm's. Arguments outside
:math:`[-708, 709]` (the normal range of :math:`2^k`), or NaN, take libm's.
"""

import math

import numpy as np
from numba import njit

from ..._config import FASTMATH

__all__ = ["exp_into"]

_LOG2E = 1.4426950408889634
#: log 2 in two parts: the first with 21 trailing zero bits, so k * _LN2_HI is exact for the |k| <= 1023 used here.
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
#: 1 / n! for n = 2 .. 13.
_C2, _C3, _C4, _C5, _C6, _C7 = 1 / 2, 1 / 6, 1 / 24, 1 / 120, 1 / 720, 1 / 5040
_C8, _C9, _C10, _C11, _C12, _C13 = 1 / 40320, 1 / 362880, 1 / 3628800, 1 / 39916800, 1 / 479001600, 1 / 6227020800


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def exp_into(x, out):
    """``out[...] = exp(x)`` for C-contiguous float64 arrays of one shape (``out`` may be ``x``); returns ``out``."""
    n = x.size
    xs = x.reshape(n)
    ys = out.reshape(n)
    bits = np.empty(n, dtype=np.int64)  # 2**k's, 0 where libm's exp is to be taken
    outside = 0
    for i in range(n):
        v = xs[i]
        inside = -708.0 <= v <= 709.0
        outside += not inside
        u = v if inside else 0.0
        k = math.floor(u * _LOG2E + 0.5)
        r = (u - k * _LN2_HI) - k * _LN2_LO
        p = _C12 + r * _C13
        p = _C11 + r * p
        p = _C10 + r * p
        p = _C9 + r * p
        p = _C8 + r * p
        p = _C7 + r * p
        p = _C6 + r * p
        p = _C5 + r * p
        p = _C4 + r * p
        p = _C3 + r * p
        p = _C2 + r * p
        p = 1.0 + r * p
        bits[i] = (np.int64(k) + 1023) << 52 if inside else 0
        ys[i] = 1.0 + r * p if inside else v
    if outside:
        for i in range(n):
            if bits[i] == 0:
                ys[i] = math.exp(ys[i])
                bits[i] = np.int64(1023) << 52
    scale = bits.view(np.float64)
    for i in range(n):
        ys[i] *= scale[i]
    return out
