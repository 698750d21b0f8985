r"""The Laplace fit's mode: limited-memory BFGS on the log posterior of :math:`\varphi = \log\theta`.

The objective is the log posterior of the stacked factors in
:math:`\varphi = \log\theta` with the exponential priors and the Jacobian,
:math:`\log p(X \mid \theta) + \sum (\log\lambda - \lambda\theta + \varphi)`,
:math:`\varphi` clipped where :math:`e^\varphi` would overflow. L-BFGS
(Liu and Nocedal 1989; Nocedal and Wright 2006, algorithms 7.4 and 7.5): the
two-loop recursion over the last ``MEMORY`` pairs of steps and gradient
changes, the first step scaled to unit length, a backtracking line search
(quadratic interpolation) for the Armijo condition, and a pair whose
curvature :math:`s^\top y` is not positive left out. It stops as SciPy's
L-BFGS-B does: when an iteration lowers the objective by less than ``ftol``
of its size, when every gradient entry is below ``gtol``, or after
``max_iter`` iterations. The whole fit runs without the GIL, so the starts
of a reference's search run side by side on threads.
"""

import math

import numpy as np
from numba import njit

from ..._config import FASTMATH
from ..likelihood import WITH_VALUE
from .fastexp import exp_into
from .passes import log_likelihood

__all__ = ["MEMORY", "PHI_BOUND", "laplace_mode", "log_posterior_phi"]

#: Pairs of steps and gradient changes the inverse Hessian is built from.
MEMORY = 10

#: The bound on :math:`|\varphi|` inside the objective (:math:`e^\varphi` must not overflow).
PHI_BOUND = 300.0

#: The line search: the Armijo constant, and the most halvings of a step before the search gives up.
_ARMIJO = 1e-4
_MAX_BACKTRACKS = 40


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def log_posterior_phi(dense2, X, coords, vals, offsets, kappa, floor, constant, rates, phi, theta, grad, lik_grad,
                      sums):
    r"""The log posterior of ``phi`` (``rates``: every row's prior rate) and its gradient into ``grad``;
    ``theta`` is filled with :math:`e^\varphi`."""
    D, R = phi.shape
    for d in range(D):
        for r in range(R):
            theta[d, r] = min(max(phi[d, r], -PHI_BOUND), PHI_BOUND)
    exp_into(theta, theta)
    value = log_likelihood(dense2, X, coords, vals, theta, offsets, kappa, floor, constant, lik_grad, sums, WITH_VALUE)
    for d in range(D):
        lam = rates[d]
        log_lam = math.log(lam)
        for r in range(R):
            value += log_lam - lam * theta[d, r] + min(max(phi[d, r], -PHI_BOUND), PHI_BOUND)
            grad[d, r] = theta[d, r] * (lik_grad[d, r] - lam) + 1.0
    return value


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _dot(a, b):
    return np.dot(a.ravel(), b.ravel())


@njit(cache=True, fastmath=FASTMATH, error_model="numpy")
def _add_scaled(y, a, x):
    """``y += a * x`` in place, without a temporary array."""
    for d in range(y.shape[0]):
        for r in range(y.shape[1]):
            y[d, r] += a * x[d, r]


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", nogil=True)
def laplace_mode(dense2, X, coords, vals, offsets, kappa, floor, constant, rates, phi, max_iter, ftol, gtol):
    """Maximise :func:`log_posterior_phi` over ``phi`` in place; returns ``(its value there, iterations)``.

    The value is ``-inf`` if the objective is not finite at the start.
    """
    D, R = phi.shape
    S = np.zeros((MEMORY, D, R))
    Y = np.zeros((MEMORY, D, R))
    rho = np.zeros(MEMORY)
    coef = np.zeros(MEMORY)
    theta, lik_grad = np.empty((D, R)), np.empty((D, R))
    sums = np.empty((offsets.shape[0] - 1, R))
    g, g_new, q = np.empty((D, R)), np.empty((D, R)), np.empty((D, R))
    phi_new = np.empty((D, R))
    # Minimise f = -(log posterior); g is its gradient.
    f = -log_posterior_phi(dense2, X, coords, vals, offsets, kappa, floor, constant, rates, phi, theta, g,
                           lik_grad, sums)
    if not np.isfinite(f):
        return -np.inf, 0
    g *= -1.0
    n_pairs, newest, it = 0, -1, 0
    while it < max_iter:
        if np.abs(g).max() <= gtol:
            break
        # The two-loop recursion: q = -H g, H the inverse Hessian of the stored pairs.
        q[:, :] = g
        for k in range(n_pairs):
            j = (newest - k) % MEMORY
            coef[j] = rho[j] * _dot(S[j], q)
            _add_scaled(q, -coef[j], Y[j])
        if n_pairs > 0:
            q *= 1.0 / (rho[newest] * _dot(Y[newest], Y[newest]))
        else:
            q *= 1.0 / math.sqrt(_dot(g, g))
        for k in range(n_pairs - 1, -1, -1):
            j = (newest - k) % MEMORY
            _add_scaled(q, coef[j] - rho[j] * _dot(Y[j], q), S[j])
        q *= -1.0
        slope = _dot(g, q)
        if not slope < 0.0:  # not a descent direction: start the memory afresh from the gradient
            n_pairs = 0
            q[:, :] = g * (-1.0 / math.sqrt(_dot(g, g)))
            slope = _dot(g, q)
        step, f_new, found = 1.0, np.inf, False
        for _ in range(_MAX_BACKTRACKS):
            phi_new[:, :] = phi + step * q
            f_new = -log_posterior_phi(dense2, X, coords, vals, offsets, kappa, floor, constant, rates, phi_new,
                                       theta, g_new, lik_grad, sums)
            if np.isfinite(f_new) and f_new <= f + _ARMIJO * step * slope:
                found = True
                break
            # The minimum of the quadratic through f, the slope and f_new, kept within [0.1, 0.5] of the step.
            shrink = 0.5
            if np.isfinite(f_new):
                shrink = min(max(-slope * step / (2.0 * (f_new - f - slope * step)), 0.1), 0.5)
            step *= shrink
        if not found:
            break
        it += 1
        newest = (newest + 1) % MEMORY
        g_new *= -1.0
        S[newest] = phi_new - phi
        Y[newest] = g_new - g
        sy = _dot(S[newest], Y[newest])
        if sy > 1e-10 * math.sqrt(_dot(S[newest], S[newest]) * _dot(Y[newest], Y[newest])):
            rho[newest] = 1.0 / sy
            n_pairs = min(n_pairs + 1, MEMORY)
        else:  # left out; its slot held the oldest pair, which is gone with it
            newest = (newest - 1) % MEMORY
            n_pairs = min(n_pairs, MEMORY - 1)
        decrease = f - f_new
        scale = max(abs(f), abs(f_new), 1.0)
        phi[:, :] = phi_new
        g[:, :] = g_new
        f = f_new
        if decrease <= ftol * scale:
            break
    return -f, it
