"""The multiplicative-update mode fit (``cp.kernels.fit.map_fit``) against its NumPy twin, and what it promises."""

import numpy as np
import pytest
from scipy import sparse

from skevidence.cp.data import CPData
from skevidence.cp.kernels.fit import _TINY, map_fit


def _twin_sweeps(X, F, offsets, kappa, floor, rates, a, n_sweeps):
    """NumPy twin: the same updates, mode after mode, on the dense array ``X`` (any number of modes)."""
    F = F.copy()
    N = len(offsets) - 1
    letters = "ijkl"[:N]
    gamma = 1.0 if kappa == 0.0 else 0.5
    for _ in range(n_sweeps):
        for m in range(N):
            mode = [F[offsets[k]:offsets[k + 1]] for k in range(N)]
            V = np.maximum(np.einsum(",".join(c + "r" for c in letters) + "->" + letters, *mode) + floor, 1e-100)
            others = [mode[k] for k in range(N) if k != m]
            spec = letters + "," + ",".join(letters[k] + "r" for k in range(N) if k != m) + "->" + letters[m] + "r"
            if kappa == 0.0:
                num = np.einsum(spec, X / V, *others)
                den = np.einsum(spec, np.ones_like(V), *others)
            else:
                num = np.einsum(spec, kappa * X / V**2, *others)
                den = np.einsum(spec, kappa / V, *others)
            lo, hi = offsets[m], offsets[m + 1]
            ratio = (num + (a - 1.0) / F[lo:hi]) / (den + rates[lo:hi, None])
            F[lo:hi] = np.maximum(F[lo:hi] * ratio**gamma, 1e-100)
    return F


def _twin_log_posterior(X, F, offsets, kappa, floor, rates, a):
    N = len(offsets) - 1
    letters = "ijkl"[:N]
    mode = [F[offsets[k]:offsets[k + 1]] for k in range(N)]
    V = np.einsum(",".join(c + "r" for c in letters) + "->" + letters, *mode) + floor
    if kappa == 0.0:
        like = np.sum(np.where(X > 0, X * np.log(V), 0.0) - V)  # up to the data's constant
    else:
        like = np.sum(-kappa * X / V - kappa * np.log(V))
    return like + np.sum((a - 1.0) * np.log(F) - rates[:, None] * F)


def _case(shape, kappa, seed, R=3):
    rng = np.random.default_rng(seed)
    factors = [rng.exponential(size=(n, R)) for n in shape]
    V = np.einsum(",".join("ijkl"[m] + "r" for m in range(len(shape))) + "->" + "ijkl"[:len(shape)], *factors)
    X = rng.poisson(4 * V).astype(float) if kappa == 0.0 else V * rng.gamma(kappa, 1.0 / kappa, size=V.shape)
    offsets = np.concatenate([[0], np.cumsum(shape)]).astype(np.int64)
    rates = rng.uniform(0.5, 2.0, size=offsets[-1])
    start = rng.gamma(2.0, 0.5, size=(offsets[-1], R))
    return X, offsets, rates, start


def _run(data, F, rates, a, max_iter, rtol=0.0):
    F = np.array(F, dtype=np.float64, order="C")  # a copy: the kernel updates it in place
    value, sweeps = map_fit(*data.pass_args()[:4], F, data.offsets, data.kappa, data.floor, rates, a, max_iter, rtol)
    return F, value, sweeps


@pytest.mark.parametrize("shape", [(7, 5), (5, 4, 3), (4, 3, 3, 2)])
@pytest.mark.parametrize("kappa, floor", [(0.0, 0.0), (1.0, 0.0), (1.0, 0.3), (2.5, 0.1)])
@pytest.mark.parametrize("a", [1.0, 2.0])
@pytest.mark.parametrize("as_sparse", [False, True])
def test_kernel_matches_numpy_twin(shape, kappa, floor, a, as_sparse):
    X, offsets, rates, start = _case(shape, kappa, seed=len(shape) + int(10 * kappa))
    if as_sparse and len(shape) == 2:
        data = CPData.from_array(sparse.csr_array(X), kappa, floor=floor)
    else:
        data = CPData.from_array(X, kappa, floor=floor)
    F, value, sweeps = _run(data, start, rates, a, max_iter=25)
    assert sweeps == 25
    twin = _twin_sweeps(X, start, offsets, kappa, floor, rates, a, 25)
    np.testing.assert_allclose(F, twin, rtol=1e-9)
    # The kernel's value leaves out the data's constant, as the twin does.
    expected = _twin_log_posterior(X, F, offsets, kappa, floor, rates, a)
    assert value == pytest.approx(expected, rel=1e-10)


def test_empty_rows_and_columns_go_to_zero_without_nan():
    X, offsets, rates, start = _case((8, 6), 0.0, seed=5)
    X[2] = 0.0
    X[:, 4] = 0.0
    F, value, _ = _run(CPData.from_array(X, 0.0), start, rates, 1.0, max_iter=300)
    assert np.all(np.isfinite(F)) and np.isfinite(value)
    assert F[2].max() == _TINY and F[offsets[1] + 4].max() == _TINY  # the mode of an empty row is 0: the floor


@pytest.mark.parametrize("kappa, floor", [(0.0, 0.0), (1.0, 0.2)])
def test_updates_climb_to_a_stationary_point(kappa, floor):
    """Majorisation-minimisation: the log posterior never falls, and at the end its gradient vanishes."""
    X, offsets, rates, start = _case((9, 6), kappa, seed=1)
    data = CPData.from_array(X, kappa, floor=floor)
    values = [_twin_log_posterior(X, _run(data, start, rates, 1.0, n)[0], offsets, kappa, floor, rates, 1.0)
              for n in range(1, 40)]
    assert np.all(np.diff(values) >= -1e-9 * np.abs(values[1:]))
    F, _, sweeps = _run(data, start, rates, 1.0, max_iter=20000, rtol=1e-13)
    assert sweeps < 20000
    # A numerical gradient in log F (zero at an interior mode; a factor pinned at the bound has F * grad -> 0).
    h = 1e-6
    grad = np.empty_like(F)
    for idx in np.ndindex(F.shape):
        up, down = F.copy(), F.copy()
        up[idx] *= np.exp(h)
        down[idx] *= np.exp(-h)
        grad[idx] = (_twin_log_posterior(X, up, offsets, kappa, floor, rates, 1.0)
                     - _twin_log_posterior(X, down, offsets, kappa, floor, rates, 1.0)) / (2 * h)
    assert np.max(np.abs(grad)) < 1e-3
