"""Explicit-state random streams for numba kernels: xoshiro256**.

``np.random`` inside a ``prange`` loop is not reproducible across thread
counts (numba keeps one generator per thread). The kernels instead give every
independent piece of work its own stream, a ``uint64[4]`` state array that is
advanced only by the thread that owns the piece, so results depend on the
seeds alone.

The generator is xoshiro256** (Blackman & Vigna 2018, reference C code at
https://prng.di.unimi.it/xoshiro256starstar.c): 256 bits of state, period
:math:`2^{256}-1`, passes BigCrush. Streams are seeded from a
:class:`numpy.random.SeedSequence` (:func:`seed_streams`), whose output is
already well mixed, so no separate jump-ahead is needed.

All functions but :func:`seed_streams` are ``@njit`` and mutate the state
array they are given; their ``.py_func`` run as plain Python (slowly, and
NumPy may warn about the intended uint64 wrap-around).
"""

import numpy as np
from numba import njit

__all__ = [
    "fill_standard_normal",
    "next_double",
    "next_uint64",
    "seed_streams",
    "uniform_index",
]

#: Replaces the first word of an all-zero state, the one state xoshiro cannot
#: leave (2**64 / golden ratio, as in SplitMix64).
ZERO_STATE_FILLER = np.uint64(0x9E3779B97F4A7C15)

#: 2 ** -52: turns the top 52 bits ``m`` of a uint64 into ``(m + 0.5) / 2**52``,
#: exactly representable and strictly inside (0, 1). (With 53 bits, ``m + 0.5``
#: would round and could reach 1.0.)
_TWO_POW_M52 = 2.0**-52


@njit(cache=True)
def _rotl(x, k):
    return (x << k) | (x >> (np.uint64(64) - k))


@njit(cache=True)
def next_uint64(state):
    """Advance ``state`` (uint64[4]) by one step and return the next uint64 output."""
    s0 = state[0]
    s1 = state[1]
    s2 = state[2]
    s3 = state[3]
    result = _rotl(s1 * np.uint64(5), np.uint64(7)) * np.uint64(9)
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, np.uint64(45))
    state[0] = s0
    state[1] = s1
    state[2] = s2
    state[3] = s3
    return result


@njit(cache=True)
def next_double(state):
    """A uniform double in the open interval (0, 1): ``(top 52 bits + 0.5) * 2**-52``."""
    return (np.float64(next_uint64(state) >> np.uint64(12)) + 0.5) * _TWO_POW_M52


@njit(cache=True)
def uniform_index(state, n):
    """A uniform integer in ``0 .. n-1`` for ``1 <= n < 2**32``, from one draw.

    Multiply-shift on the top 32 bits: ``((x >> 32) * n) >> 32``; exact integer
    arithmetic (no float rounding can return ``n``), bias below ``n / 2**32``.
    """
    hi = next_uint64(state) >> np.uint64(32)
    return np.int64((hi * np.uint64(n)) >> np.uint64(32))


@njit(cache=True)
def fill_standard_normal(state, out):
    """Fill the 1-D array ``out`` with standard normals (Marsaglia's polar method).

    Normals come in pairs from each accepted point ``(u, v)`` of the unit disc
    (``u, v = 2 U - 1`` from two :func:`next_double` draws, rejected unless
    ``0 < u**2 + v**2 < 1``): ``out[2m], out[2m+1] = u f, v f`` with
    ``f = sqrt(-2 log(s) / s)``. When ``len(out)`` is odd the last pair's second
    value is discarded, so nothing is carried between calls.
    """
    n = out.shape[0]
    i = 0
    while i < n:
        u = 0.0
        v = 0.0
        s = 0.0
        while True:
            u = 2.0 * next_double(state) - 1.0
            v = 2.0 * next_double(state) - 1.0
            s = u * u + v * v
            if s < 1.0 and s > 0.0:
                break
        f = np.sqrt(-2.0 * np.log(s) / s)
        out[i] = u * f
        if i + 1 < n:
            out[i + 1] = v * f
        i += 2


def seed_streams(seed_seq, n_streams):
    """States of ``n_streams`` independent streams from a ``SeedSequence``.

    Parameters
    ----------
    seed_seq : numpy.random.SeedSequence
        Source of entropy; the same sequence always gives the same states.
    n_streams : int
        Number of streams.

    Returns
    -------
    states : ndarray of shape (n_streams, 4), dtype uint64, C-contiguous
        Row ``s`` is the state of stream ``s`` (``generate_state(4 * n_streams)``
        reshaped). An all-zero row, which xoshiro cannot leave, gets
        :data:`ZERO_STATE_FILLER` as its first word.
    """
    if not isinstance(seed_seq, np.random.SeedSequence):
        raise TypeError(
            f"seed_seq must be a numpy.random.SeedSequence, got {type(seed_seq).__name__}."
        )
    n_streams = int(n_streams)
    if n_streams < 1:
        raise ValueError(f"n_streams must be at least 1, got {n_streams}.")
    states = seed_seq.generate_state(4 * n_streams, dtype=np.uint64).reshape(n_streams, 4)
    states = np.ascontiguousarray(states, dtype=np.uint64)
    states[~states.any(axis=1), 0] = ZERO_STATE_FILLER
    return states
