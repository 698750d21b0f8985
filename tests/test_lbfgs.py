"""The Laplace fit's L-BFGS kernel against its NumPy twin, and its optimum against SciPy's L-BFGS-B."""

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import minimize

from cp_twins import naive_intensity, numeric_gradient, stacked_factors
from skevidence.cp.data import CPData
from skevidence.cp.kernels.lbfgs import MEMORY, PHI_BOUND, laplace_mode, log_posterior_phi


def naive_log_posterior(X, phi, offsets, rates, kappa, floor):
    """The log posterior of phi = log theta with the exponential priors and the Jacobian, in NumPy."""
    phi = np.clip(phi, -PHI_BOUND, PHI_BOUND)
    theta = np.exp(phi)
    V = naive_intensity(theta, offsets, X.shape) + floor
    loglik = np.sum(stats.gamma.logpdf(X, kappa, scale=V / kappa)) if kappa > 0 else np.sum(stats.poisson.logpmf(X, V))
    return loglik + np.sum(np.log(rates)[:, None] - rates[:, None] * theta + phi)


def naive_gradient(X, phi, offsets, rates, kappa, floor):
    """The gradient of :func:`naive_log_posterior` in closed form: d/dphi = theta * (d loglik/d theta - rates) + 1."""
    theta = np.exp(np.clip(phi, -PHI_BOUND, PHI_BOUND))
    V = naive_intensity(theta, offsets, X.shape) + floor
    slope = kappa * (X - V) / V**2 if kappa > 0 else X / V - 1.0
    factors = [theta[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    letters = "abcdef"[: X.ndim]
    grads = []
    for m in range(X.ndim):
        others = [f"{c}r" for k, c in enumerate(letters) if k != m]
        grads.append(np.einsum(",".join([letters] + others) + f"->{letters[m]}r", slope,
                               *[factors[k] for k in range(X.ndim) if k != m]))
    return theta * (np.concatenate(grads) - rates[:, None]) + 1.0


def twin_laplace_mode(f_and_g, phi, max_iter, ftol, gtol, memory=MEMORY):
    """The kernel's L-BFGS in NumPy: maximise ``f_and_g(phi) -> (value, gradient)``; ``(value, phi, its)``."""
    value, grad = f_and_g(phi)
    f, g = -value, -grad
    pairs = []
    it = 0
    while it < max_iter and np.max(np.abs(g)) > gtol:
        q = g.copy()
        coefs = []
        for s, y in reversed(pairs):
            a = np.sum(s * q) / np.sum(s * y)
            coefs.append(a)
            q -= a * y
        q *= np.sum(pairs[-1][0] * pairs[-1][1]) / np.sum(pairs[-1][1] ** 2) if pairs else 1.0 / np.linalg.norm(g)
        for (s, y), a in zip(pairs, reversed(coefs)):
            q += (a - np.sum(y * q) / np.sum(s * y)) * s
        q = -q
        slope = np.sum(g * q)
        if not slope < 0:
            pairs = []
            q = -g / np.linalg.norm(g)
            slope = np.sum(g * q)
        step = 1.0
        for _ in range(40):
            value, grad = f_and_g(phi + step * q)
            f_new = -value
            if np.isfinite(f_new) and f_new <= f + 1e-4 * step * slope:
                break
            shrink = min(max(-slope * step / (2 * (f_new - f - slope * step)), 0.1), 0.5) if np.isfinite(f_new) \
                else 0.5
            step *= shrink
        else:
            break
        it += 1
        s, y = step * q, -grad - g
        if np.sum(s * y) > 1e-10 * np.linalg.norm(s) * np.linalg.norm(y):
            pairs = (pairs + [(s, y)])[-memory:]
        else:
            pairs = pairs[-(memory - 1):] if len(pairs) == memory else pairs
        decrease, scale = f - f_new, max(abs(f), abs(f_new), 1.0)
        phi, f, g = phi + step * q, f_new, -grad
        if decrease <= ftol * scale:
            break
    return -f, phi, it


def _problem(shape, R, kappa, floor, seed):
    rng = np.random.default_rng(seed)
    F, offsets = stacked_factors(rng, shape, R)
    V = naive_intensity(F, offsets, shape)
    X = rng.gamma(kappa, V / kappa) if kappa > 0 else rng.poisson(V).astype(np.float64)
    data = CPData.from_array(X, kappa, floor=floor)
    rates = rng.uniform(0.5, 2.0, size=offsets[-1])
    phi0 = np.log(rng.gamma(2.0, 0.5, size=F.shape))
    return X, data, offsets, rates, phi0


def _kernel_objective(data, rates):
    dense2, X, coords, vals, offsets, kappa, floor = data.pass_args()

    def f_and_g(phi):
        phi = np.ascontiguousarray(phi)
        theta, grad, lik_grad = np.empty_like(phi), np.empty_like(phi), np.empty_like(phi)
        sums = np.empty((len(data.shape), phi.shape[1]))
        value = log_posterior_phi(dense2, X, coords, vals, offsets, kappa, floor, data.constant, rates, phi, theta,
                                  grad, lik_grad, sums)
        return value, grad
    return f_and_g


@pytest.mark.parametrize(("shape", "kappa", "floor"), [((6, 5), 1.0, 0.05), ((4, 3, 5), 2.5, 0.0),
                                                       ((6, 5), 0.0, 0.0)])
def test_objective_matches_numpy(shape, kappa, floor):
    X, data, offsets, rates, phi = _problem(shape, 2, kappa, floor, seed=1)
    value, grad = _kernel_objective(data, rates)(phi)
    # The Poisson likelihood's data constant (sum of log x!) is the kernel's too.
    assert value == pytest.approx(naive_log_posterior(X, phi, offsets, rates, kappa, floor), rel=1e-11)
    np.testing.assert_allclose(grad, naive_gradient(X, phi, offsets, rates, kappa, floor), rtol=1e-9, atol=1e-10)
    expected = numeric_gradient(lambda p: naive_log_posterior(X, p, offsets, rates, kappa, floor), phi)
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("max_iter", [3, 25, 2000])
@pytest.mark.parametrize(("shape", "R", "kappa", "floor"), [((7, 6), 3, 1.0, 0.05), ((4, 3, 5), 2, 2.5, 0.0)])
def test_kernel_matches_its_numpy_twin(shape, R, kappa, floor, max_iter):
    """The same iterates, within rounding, for a few iterations and to convergence (memory full and cycling)."""
    X, data, offsets, rates, phi0 = _problem(shape, R, kappa, floor, seed=2)
    dense2, Xd, coords, vals, offsets, kappa, floor = data.pass_args()
    phi = phi0.copy()
    value, its = laplace_mode(dense2, Xd, coords, vals, offsets, kappa, floor, data.constant, rates, phi, max_iter,
                              1e-12, 1e-9)
    twin_value, twin_phi, twin_its = twin_laplace_mode(
        lambda p: (naive_log_posterior(X, p, offsets, rates, kappa, floor),
                   naive_gradient(X, p, offsets, rates, kappa, floor)), phi0.copy(), max_iter, 1e-12, 1e-9)
    assert its == twin_its and (max_iter < 25 or its > MEMORY)
    assert value == pytest.approx(twin_value, rel=1e-10)
    np.testing.assert_allclose(phi, twin_phi, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(("shape", "R", "kappa", "floor"), [((8, 6), 1, 1.0, 0.1), ((8, 6), 1, 0.0, 0.0),
                                                            ((5, 4, 3), 1, 2.0, 0.0)])
def test_kernel_reaches_scipys_optimum(shape, R, kappa, floor):
    """At rank 1 the log posterior in phi has one maximum: the kernel's and SciPy's L-BFGS-B agree on it."""
    X, data, offsets, rates, phi0 = _problem(shape, R, kappa, floor, seed=3)
    f_and_g = _kernel_objective(data, rates)
    dense2, Xd, coords, vals, offsets, kappa, floor = data.pass_args()
    phi = phi0.copy()
    value, _ = laplace_mode(dense2, Xd, coords, vals, offsets, kappa, floor, data.constant, rates, phi, 2000,
                            1e-13, 1e-8)

    def negative(flat):
        value, grad = f_and_g(flat.reshape(phi0.shape))
        return -value, -grad.ravel()

    found = minimize(negative, phi0.ravel(), jac=True, method="L-BFGS-B",
                     options=dict(maxiter=5000, ftol=1e-15, gtol=1e-10))
    assert value == pytest.approx(-found.fun, abs=1e-7 * abs(found.fun))
    np.testing.assert_allclose(phi, found.x.reshape(phi0.shape), atol=1e-4)
    assert np.max(np.abs(f_and_g(phi)[1])) < 1e-5


def test_a_start_where_the_objective_is_not_finite_reports_minus_infinity():
    X, data, offsets, rates, phi = _problem((4, 3, 5), 2, 1.0, 0.0, seed=4)
    dense2, Xd, coords, vals, offsets, kappa, floor = data.pass_args()
    phi[:] = -PHI_BOUND  # a product of three exp(-300) underflows to 0: the density is not finite there
    value, its = laplace_mode(dense2, Xd, coords, vals, offsets, kappa, floor, data.constant, rates, phi, 100,
                              1e-9, 1e-6)
    assert value == -np.inf and its == 0
