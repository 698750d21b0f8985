r"""The exact evidence of rank-1 Poisson PARAFAC, the reference for STI and Chib's method.

Model: :math:`x_{ijk} \sim \mathcal{PO}(a_i b_j c_k)` for an :math:`I \times J \times K`
count tensor, :math:`a_i \sim \mathcal{E}(\lambda_a)`, :math:`b_j \sim \mathcal{E}(\lambda_b)`,
:math:`c_k \sim \mathcal{E}(\lambda_c)` (rates). Write :math:`x_{i\cdot\cdot}`,
:math:`x_{\cdot j\cdot}`, :math:`x_{\cdot\cdot k}` for the mode sums,
:math:`S = \sum x`, :math:`\beta = \sum_j b_j`, :math:`\gamma = \sum_k c_k`.

Derivation
----------
1. The likelihood is
   :math:`\prod_{ijk} (a_i b_j c_k)^{x_{ijk}} e^{-a_i b_j c_k} / x_{ijk}!
   = \prod_i a_i^{x_{i\cdot\cdot}} \prod_j b_j^{x_{\cdot j\cdot}} \prod_k c_k^{x_{\cdot\cdot k}}
   \, e^{-(\sum_i a_i)\beta\gamma} / \prod x_{ijk}!`.
   Each :math:`a_i` appears in one factor; its integral against
   :math:`\lambda_a e^{-\lambda_a a_i}` is a Gamma integral,
   :math:`\lambda_a \Gamma(x_{i\cdot\cdot} + 1) (\lambda_a + \beta\gamma)^{-(x_{i\cdot\cdot} + 1)}`.
2. With :math:`b = \beta u`, :math:`u` on the simplex of :math:`\mathbb{R}^J`, the
   volume element is :math:`db = \beta^{J-1} d\beta\, du`;
   :math:`\prod_j b_j^{x_{\cdot j\cdot}} = \beta^S \prod_j u_j^{x_{\cdot j\cdot}}`, and the
   prior :math:`\lambda_b^J e^{-\lambda_b \beta}` depends on :math:`\beta` only. The
   Dirichlet integral :math:`\int \prod_j u_j^{x_{\cdot j\cdot}} du =
   \prod_j \Gamma(x_{\cdot j\cdot} + 1) / \Gamma(S + J)` leaves :math:`\beta^{S+J-1}`.
   The same for :math:`c = \gamma w` leaves :math:`\gamma^{S+K-1}` and
   :math:`\prod_k \Gamma(x_{\cdot\cdot k} + 1) / \Gamma(S + K)`.
3. So, with :math:`\sum_i (x_{i\cdot\cdot} + 1) = S + I`,

   .. math::
      \log p(X) = -\sum \log x_{ijk}! + I \log\lambda_a + J \log\lambda_b + K \log\lambda_c
        + \sum_i \log\Gamma(x_{i\cdot\cdot}+1) + \sum_j \log\Gamma(x_{\cdot j\cdot}+1)
        + \sum_k \log\Gamma(x_{\cdot\cdot k}+1) - \log\Gamma(S+J) - \log\Gamma(S+K)
        + \log \iint \beta^{S+J-1} \gamma^{S+K-1} e^{-\lambda_b\beta - \lambda_c\gamma}
          (\lambda_a + \beta\gamma)^{-(S+I)}\, d\beta\, d\gamma .

Evaluation
----------
In :math:`u = \log\beta`, :math:`v = \log\gamma` (Jacobian :math:`e^{u+v}`) the
log-integrand is
:math:`g(u, v) = (S+J)u + (S+K)v - \lambda_b e^u - \lambda_c e^v - (S+I)\log(\lambda_a + e^{u+v})`,
a sum of linear and concave terms (:math:`\log(\lambda + e^s)` is convex in
:math:`s`), hence concave: one mode, found by damped Newton. The integral is
taken on a grid in the whitened coordinates :math:`z = L^\top (x - x^*)`,
:math:`L L^\top = -\nabla^2 g(x^*)`, over a square grown until :math:`g` on its
edge is :data:`TAIL_DROP` nats below the maximum, by the trapezoid rule (for a
smooth integrand negligible at the edges it converges geometrically); the
grid is refined until two successive values agree to :data:`RTOL`.
"""

import numpy as np
from scipy import special

__all__ = ["rank1_log_evidence"]

#: The integration square ends where the log-integrand is this far below its maximum.
TAIL_DROP = 60.0

#: Agreement of two successive grid refinements (absolute, in nats).
RTOL = 1e-11


def _log_integrand(a, b, S_I, lam_a, lam_b, lam_c):
    log_lam_a = np.log(lam_a)

    def g(u, v):
        return (a * u + b * v - lam_b * np.exp(u) - lam_c * np.exp(v)
                - S_I * np.logaddexp(log_lam_a, u + v))

    def grad_hess(x):
        u, v = x
        s = 1.0 / (1.0 + lam_a * np.exp(-(u + v)))  # e^{u+v} / (lam_a + e^{u+v})
        ds = s * (1.0 - s)
        grad = np.array([a - lam_b * np.exp(u) - S_I * s, b - lam_c * np.exp(v) - S_I * s])
        hess = np.array([[-lam_b * np.exp(u) - S_I * ds, -S_I * ds],
                         [-S_I * ds, -lam_c * np.exp(v) - S_I * ds]])
        return grad, hess

    return g, grad_hess


def _mode(g, grad_hess):
    x = np.zeros(2)
    for _ in range(500):
        grad, hess = grad_hess(x)
        step = -np.linalg.solve(hess, grad)
        t = 1.0
        while g(*(x + t * step)) < g(*x) - 1e-12 and t > 1e-10:  # backtrack: g is concave
            t *= 0.5
        x = x + t * step
        if np.abs(t * step).max() < 1e-13:
            break
    return x


def _log_integral(a, b, S_I, lam_a, lam_b, lam_c):
    r"""log of :math:`\iint e^{g(u, v)}\,du\,dv`, see the module docstring."""
    g, grad_hess = _log_integrand(a, b, S_I, lam_a, lam_b, lam_c)
    x_star = _mode(g, grad_hess)
    g_max = g(*x_star)
    L = np.linalg.cholesky(-grad_hess(x_star)[1])
    to_x = np.linalg.inv(L.T)  # x = x* + to_x @ z

    def values(half_width, n):
        z = np.linspace(-half_width, half_width, n)
        Z1, Z2 = np.meshgrid(z, z, indexing="ij")
        u = x_star[0] + to_x[0, 0] * Z1 + to_x[0, 1] * Z2
        v = x_star[1] + to_x[1, 0] * Z1 + to_x[1, 1] * Z2
        return z, g(u, v) - g_max

    half_width = 8.0
    while True:
        _, vals = values(half_width, 201)
        edge = max(vals[0].max(), vals[-1].max(), vals[:, 0].max(), vals[:, -1].max())
        if edge < -TAIL_DROP:
            break
        half_width *= 1.5
    previous, n = None, 201
    while True:
        z, vals = values(half_width, n)
        h = z[1] - z[0]
        w = np.full(n, h)
        w[[0, -1]] = h / 2
        total = np.log(w @ np.exp(vals) @ w)
        if previous is not None and abs(total - previous) < RTOL:
            break
        if n > 6401:
            raise FloatingPointError("The rank-1 PARAFAC quadrature did not converge.")
        previous, n = total, 2 * n - 1
    return g_max + total - np.log(np.linalg.det(L))


def rank1_log_evidence(X, lam_a=1.0, lam_b=None, lam_c=None):
    r"""Exact :math:`\log p(X)` of rank-1 Poisson PARAFAC with exponential priors.

    Parameters
    ----------
    X : array-like of shape (I, J, K)
        Non-negative integer counts.
    lam_a, lam_b, lam_c : float
        Rates of the exponential priors on ``a``, ``b`` and ``c``
        (``lam_b`` and ``lam_c`` default to ``lam_a``).
    """
    X = np.asarray(X, dtype=np.float64)
    lam_b = lam_a if lam_b is None else lam_b
    lam_c = lam_a if lam_c is None else lam_c
    if X.ndim != 3 or X.size == 0:
        raise ValueError("X must be a non-empty 3-D array.")
    if np.any(X < 0) or np.any(X != np.round(X)):
        raise ValueError("X must hold non-negative integers.")
    I, J, K = X.shape
    S = X.sum()
    log_const = (
        -special.gammaln(X + 1.0).sum()
        + I * np.log(lam_a) + J * np.log(lam_b) + K * np.log(lam_c)
        + special.gammaln(X.sum(axis=(1, 2)) + 1.0).sum()
        + special.gammaln(X.sum(axis=(0, 2)) + 1.0).sum()
        + special.gammaln(X.sum(axis=(0, 1)) + 1.0).sum()
        - special.gammaln(S + J)
        - special.gammaln(S + K)
    )
    return float(log_const + _log_integral(S + J, S + K, S + I, lam_a, lam_b, lam_c))
