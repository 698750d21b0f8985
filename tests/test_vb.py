"""The mean-field VB kernel against its NumPy twin, and its digamma against SciPy's."""

import numpy as np
import pytest
from scipy import sparse, special

from skevidence.cp.kernels.vb import BOUND_EVERY, _rescale_components, digamma, vb_sweeps
from skevidence.cp.reference import as_data


def twin_rescale(alpha, beta, rates, offsets):
    """The scale-ridge move in NumPy: every component's Newton iteration side by side."""
    modes = [slice(lo, hi) for lo, hi in zip(offsets[:-1], offsets[1:])]
    A = np.array([np.sum(rates[m, None] * alpha[m] / beta[m], axis=0) for m in modes])
    n = np.diff(offsets).astype(np.float64)[:, None]
    target = np.sum(np.log(A), axis=0)
    y = np.exp(target / len(modes))
    for _ in range(100):
        step = -np.expm1(target - np.sum(np.log(y + n), axis=0)) / np.sum(1.0 / (y + n), axis=0)
        y = y - step
        if np.all(np.abs(step) <= 1e-13 * (np.abs(y) + n.min())):
            break
    for m, scale in zip(modes, (y + n) / A):
        beta[m] /= scale


def twin_sweeps(X, offsets, rates, alpha, beta, max_iter, rtol):
    """Mean-field VB in NumPy, every entry of the dense ``X`` (the sources' optimum by broadcasting)."""
    modes = [slice(lo, hi) for lo, hi in zip(offsets[:-1], offsets[1:])]
    N = len(modes)
    constant = special.gammaln(X + 1.0).sum()
    letters = "ijk"[:N]
    bound_old = -np.inf
    for it in range(max_iter + 1):
        G = np.exp(special.digamma(alpha)) / beta
        factors = [G[m] for m in modes]
        V = np.einsum(",".join(f"{c}r" for c in letters) + "->" + letters, *factors)
        ratio = np.where(X > 0, X / np.where(V > 0, V, 1.0), 0.0)
        S = np.vstack([
            np.einsum(",".join([letters] + [f"{c}r" for k, c in enumerate(letters) if k != m]) + f"->{letters[m]}r",
                      ratio, *[factors[k] for k in range(N) if k != m])
            for m in range(N)])
        means = alpha / beta
        sums = np.stack([means[m].sum(axis=0) for m in modes])
        bound = (np.sum(special.xlogy(X, V)) - constant - np.prod(sums, axis=0).sum()
                 + np.sum(np.log(rates)[:, None] - rates[:, None] * means + alpha - np.log(beta)
                          + special.gammaln(alpha) + (1.0 - alpha) * special.digamma(alpha)))
        if it == max_iter or (it % BOUND_EVERY == 0 and it > 5
                              and abs(bound - bound_old) <= BOUND_EVERY * rtol * abs(bound)):
            return bound, it
        if it % BOUND_EVERY == 0:
            bound_old = bound
        alpha[:] = 1.0 + G * S
        for m in modes:
            others = np.ones(alpha.shape[1])
            for k in modes:
                if k != m:
                    others *= (alpha[k] / beta[k]).sum(axis=0)
            beta[m] = rates[m, None] + others
        twin_rescale(alpha, beta, rates, offsets)
    raise AssertionError("unreachable")


def test_digamma_matches_scipy():
    x = np.concatenate([np.geomspace(1e-8, 1e8, 400), np.linspace(0.5, 20.0, 400)])
    ours = np.array([digamma(v) for v in x])
    np.testing.assert_allclose(ours, special.digamma(x), rtol=2e-15, atol=2e-15)


def _problem(shape, R, seed):
    rng = np.random.default_rng(seed)
    factors = [rng.exponential(size=(n, R)) for n in shape]
    letters = "ijk"[: len(shape)]
    V = np.einsum(",".join(f"{c}r" for c in letters) + "->" + letters, *factors)
    X = rng.poisson(3.0 * V / V.mean()).astype(np.float64)
    offsets = np.concatenate([[0], np.cumsum(shape)]).astype(np.int64)
    rates = rng.uniform(0.5, 2.0, size=offsets[-1])
    alpha = rng.gamma(2.0, 1.0, size=(offsets[-1], R)) + 0.5
    beta = rng.gamma(2.0, 1.0, size=(offsets[-1], R)) + 0.5
    return X, offsets, rates, alpha, beta


@pytest.mark.parametrize("max_iter", [0, 1, 3, 40])
@pytest.mark.parametrize("shape, R, listed", [((9, 7), 3, False), ((9, 7), 3, True), ((5, 4, 3), 2, True)])
def test_sweeps_match_the_numpy_twin(shape, R, listed, max_iter):
    """The same bound and the same q after 0, 1, 3 and 40 sweeps, dense and listed, two and three modes."""
    X, offsets, rates, alpha, beta = _problem(shape, R, seed=len(shape) + R)
    data = as_data(sparse.coo_array(X) if listed and len(shape) == 2 else X)
    assert data.dense2 == (not listed)
    dense2, Xd, coords, vals, offs, _, _ = data.pass_args()
    a, b = alpha.copy(), beta.copy()
    bound, it = vb_sweeps(dense2, Xd, coords, vals, offs, data.constant, rates, a, b, max_iter, 0.0, False)
    a_twin, b_twin = alpha.copy(), beta.copy()
    bound_twin, it_twin = twin_sweeps(X, offsets, rates, a_twin, b_twin, max_iter, 0.0)
    assert it == it_twin == max_iter
    assert bound == pytest.approx(bound_twin, rel=1e-11)
    np.testing.assert_allclose(a, a_twin, rtol=1e-9)
    np.testing.assert_allclose(b, b_twin, rtol=1e-9)


@pytest.mark.parametrize("max_iter", [3, 40])
def test_single_precision_sweeps_are_the_twin_within_their_rounding(max_iter):
    """Sweeps whose products between bound checks are in single precision: the twin's q and bound within single
    precision's rounding, and the bound is the exact bound of the q it is taken at."""
    X, offsets, rates, alpha, beta = _problem((30, 20), 4, seed=3)
    data = as_data(X)
    a, b = alpha.copy(), beta.copy()
    bound, _ = vb_sweeps(*data.pass_args()[:5], data.constant, rates, a, b, max_iter, 0.0, True)
    a_twin, b_twin = alpha.copy(), beta.copy()
    bound_twin, _ = twin_sweeps(X, offsets, rates, a_twin, b_twin, max_iter, 0.0)
    assert not np.array_equal(a, a_twin)
    np.testing.assert_allclose(a, a_twin, rtol=1e-4)
    np.testing.assert_allclose(b, b_twin, rtol=1e-4)
    assert bound == pytest.approx(bound_twin, rel=1e-6)
    # The bound at the last sweep's q: the double pass's, as zero more sweeps from it give.
    again, _ = vb_sweeps(*data.pass_args()[:5], data.constant, rates, a.copy(), b.copy(), 0, 0.0, False)
    assert bound == pytest.approx(again, rel=1e-12)


def test_sweeps_stop_at_rtol_like_the_twin():
    X, offsets, rates, alpha, beta = _problem((12, 10), 2, seed=5)
    data = as_data(X)
    a, b = alpha.copy(), beta.copy()
    bound, it = vb_sweeps(*data.pass_args()[:5], data.constant, rates, a, b, 1000, 1e-7, False)
    bound_twin, it_twin = twin_sweeps(X, offsets, rates, alpha.copy(), beta.copy(), 1000, 1e-7)
    assert 6 < it == it_twin < 1000
    assert bound == pytest.approx(bound_twin, rel=1e-11)


def test_rescale_matches_the_twin():
    rng = np.random.default_rng(7)
    offsets = np.array([0, 5, 9, 12])
    alpha = rng.gamma(3.0, 1.0, size=(12, 3)) + 0.5
    beta = rng.gamma(3.0, 1.0, size=(12, 3))
    rates = rng.uniform(0.5, 2.0, size=12)
    ours, twin = beta.copy(), beta.copy()
    _rescale_components(alpha, ours, rates, offsets)
    twin_rescale(alpha, twin, rates, offsets)
    np.testing.assert_allclose(ours, twin, rtol=1e-12)
