"""NumPy twins of the stacked-factor layout the referenced path's kernels use (shared by their tests)."""

import numpy as np

__all__ = ["naive_intensity", "numeric_gradient", "stacked_factors"]


def stacked_factors(rng, shape, R):
    """Random factors stacked as ``(sum of the mode sizes, R)`` and the modes' offsets."""
    F = rng.gamma(2.0, 0.5, size=(sum(shape), R))
    offsets = np.concatenate([[0], np.cumsum(shape)]).astype(np.int64)
    return F, offsets


def naive_intensity(F, offsets, shape):
    """The CP intensity of stacked factors, by einsum."""
    factors = [F[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    letters = "abcdef"[: len(shape)]
    return np.einsum(",".join(f"{c}r" for c in letters) + "->" + letters, *factors)


def numeric_gradient(f, F, h=1e-6):
    """Central differences of ``f`` in every entry of ``F``."""
    g = np.zeros_like(F)
    for idx in np.ndindex(F.shape):
        Fp, Fm = F.copy(), F.copy()
        Fp[idx] += h
        Fm[idx] -= h
        g[idx] = (f(Fp) - f(Fm)) / (2 * h)
    return g
