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
already well mixed, so no separate jump-ahead is needed. Normals come from
the ziggurat method (Marsaglia & Tsang 2000, :func:`fill_standard_normal`).

All functions but :func:`seed_streams` are ``@njit`` and mutate the state
array they are given; their ``.py_func`` run as plain Python (slowly, and
NumPy may warn about the intended uint64 wrap-around).
"""

import numpy as np
from numba import njit

__all__ = ["ZIGGURAT_LAYERS", "fill_standard_normal", "next_double", "next_uint64", "seed_streams", "uniform_index"]

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


@njit(cache=True, inline="always")
def _xoshiro_step(s0, s1, s2, s3):
    """One xoshiro256** step on a state held in four locals: ``(output, s0, s1, s2, s3)``.

    Loops that draw many numbers keep the state in registers with it and store
    it once at the end; through the state array, every draw would be a store
    and a reload (the array may alias the output, so the compiler must assume
    it does).
    """
    result = _rotl(s1 * np.uint64(5), np.uint64(7)) * np.uint64(9)
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, np.uint64(45))
    return result, s0, s1, s2, s3


@njit(cache=True)
def next_uint64(state):
    """Advance ``state`` (uint64[4]) by one step and return the next uint64 output."""
    result, state[0], state[1], state[2], state[3] = _xoshiro_step(state[0], state[1], state[2], state[3])
    return result


@njit(cache=True, inline="always")
def _to_double(bits):
    """``(top 52 bits + 0.5) * 2**-52``: a uniform double strictly inside (0, 1)."""
    return (np.float64(bits >> np.uint64(12)) + 0.5) * _TWO_POW_M52


@njit(cache=True)
def next_double(state):
    """A uniform double in the open interval (0, 1): ``(top 52 bits + 0.5) * 2**-52``."""
    return _to_double(next_uint64(state))


@njit(cache=True)
def uniform_index(state, n):
    """A uniform integer in ``0 .. n-1`` for ``1 <= n < 2**32``, from one draw.

    Multiply-shift on the top 32 bits: ``((x >> 32) * n) >> 32``; exact integer
    arithmetic (no float rounding can return ``n``), bias below ``n / 2**32``.
    """
    hi = next_uint64(state) >> np.uint64(32)
    return np.int64((hi * np.uint64(n)) >> np.uint64(32))


# ---------------------------------------------------------------- ziggurat
#: Layers of the ziggurat (Marsaglia & Tsang 2000); a power of two, so the
#: layer index is the low bits of one uint64 draw.
ZIGGURAT_LAYERS = 256
#: Right edge ``r`` of the base layer and the common area ``v`` of the layers,
#: for 256 layers under ``f(x) = exp(-x**2 / 2)`` (Marsaglia & Tsang 2000,
#: section 3): with them the recurrence below closes at the top.
ZIGGURAT_R = 3.6541528853610088
ZIGGURAT_V = 4.92867323399e-3


def _ziggurat_tables(n_layers=ZIGGURAT_LAYERS, r=ZIGGURAT_R, v=ZIGGURAT_V):
    """Edges ``x[0..n]`` and heights ``f(x[0..n])`` of the ziggurat layers.

    Layer ``i >= 1`` is the box ``[0, x[i]] x [f(x[i]), f(x[i+1])]`` of area
    ``v``; layer 0 is the base box ``[0, r] x [0, f(r)]`` plus the tail beyond
    ``r``, also of area ``v``, drawn as ``[0, x[0]]`` with ``x[0] = v / f(r)``.
    ``x[n] = 0`` is the top.
    """
    x = np.empty(n_layers + 1)
    x[0] = v / np.exp(-0.5 * r * r)
    x[1] = r
    for i in range(1, n_layers - 1):
        # f(x[i+1]) = f(x[i]) + v / x[i]
        x[i + 1] = np.sqrt(-2.0 * np.log(np.exp(-0.5 * x[i] * x[i]) + v / x[i]))
    x[n_layers] = 0.0
    return x, np.exp(-0.5 * x * x)


_ZIG_X, _ZIG_F = _ziggurat_tables()
_ZIG_MASK = np.uint64(ZIGGURAT_LAYERS - 1)


@njit(cache=True)
def fill_standard_normal(state, out):
    """Fill the 1-D array ``out`` with standard normals by the ziggurat method.

    Marsaglia & Tsang (2000), 256 layers. Each normal starts from one uint64:
    its low 8 bits pick the layer ``i``, bit 8 the sign, and its top 52 bits
    ``m`` give ``z = m 2**-52 x[i]``, returned at once when ``z < x[i + 1]``
    (about 98.8 % of draws). Otherwise layer 0 draws from the tail beyond
    ``r`` (Marsaglia 1964: ``a = -log(U1) / r``, ``b = -log(U2)`` until
    ``2 b > a**2``; ``z = r + a``) and the other layers accept ``z`` when
    ``f(x[i]) + U3 (f(x[i+1]) - f(x[i])) < f(z)``, else start again with a new
    uint64. ``U1, U2, U3`` are :func:`next_double` draws.

    About one draw and no logarithm per normal, against two draws, a logarithm,
    a square root and a division per pair for Marsaglia's polar method: the
    Langevin noise of every parameter in every iteration is a large share of a
    chain's time. The state stays in locals through the loop.
    """
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    for k in range(out.shape[0]):
        while True:
            bits, s0, s1, s2, s3 = _xoshiro_step(s0, s1, s2, s3)
            i = np.int64(bits & _ZIG_MASK)
            z = np.float64(bits >> np.uint64(12)) * _TWO_POW_M52 * _ZIG_X[i]
            if z < _ZIG_X[i + 1]:
                break
            if i == 0:
                while True:
                    u1, s0, s1, s2, s3 = _xoshiro_step(s0, s1, s2, s3)
                    u2, s0, s1, s2, s3 = _xoshiro_step(s0, s1, s2, s3)
                    a = -np.log(_to_double(u1)) / ZIGGURAT_R
                    if -2.0 * np.log(_to_double(u2)) > a * a:
                        break
                z = ZIGGURAT_R + a
                break
            u3, s0, s1, s2, s3 = _xoshiro_step(s0, s1, s2, s3)
            y = _ZIG_F[i] + _to_double(u3) * (_ZIG_F[i + 1] - _ZIG_F[i])
            if y < np.exp(-0.5 * z * z):
                break
        out[k] = -z if (bits >> np.uint64(8)) & np.uint64(1) else z
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3


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
        raise TypeError(f"seed_seq must be a numpy.random.SeedSequence, got {type(seed_seq).__name__}.")
    states = seed_seq.generate_state(4 * n_streams, dtype=np.uint64).reshape(n_streams, 4)
    states[~states.any(axis=1), 0] = ZERO_STATE_FILLER
    return states
