r"""The exact evidence of rank-1 Poisson NMF, the reference for Chib's method.

Model: :math:`X_{ij} \sim \mathcal{PO}(w_i h_j)` for an :math:`I \times J`
count matrix, :math:`w_i \sim \mathcal{E}(\lambda_w)`,
:math:`h_j \sim \mathcal{E}(\lambda_h)` (rates). Write :math:`r_i = \sum_j X_{ij}`
(row sums), :math:`c_j = \sum_i X_{ij}` (column sums), :math:`S = \sum_{ij} X_{ij}`
and :math:`s = \sum_j h_j`.

Derivation
----------
1. Each :math:`w_i` appears only in row :math:`i`; its integral is a Gamma integral:

   .. math::
      \int_0^\infty \prod_j \frac{(w_i h_j)^{X_{ij}} e^{-w_i h_j}}{X_{ij}!}\,
      \lambda_w e^{-\lambda_w w_i}\,dw_i
      = \prod_j \frac{h_j^{X_{ij}}}{X_{ij}!}\;
        \frac{\lambda_w\,\Gamma(r_i + 1)}{(\lambda_w + s)^{r_i + 1}}.

   The product over rows gives
   :math:`\prod_{ij} \frac{1}{X_{ij}!}\, \prod_j h_j^{c_j}\,
   \lambda_w^I \prod_i \Gamma(r_i + 1)\, (\lambda_w + s)^{-(S + I)}`.

2. With :math:`h = s\,\pi`, :math:`\pi` on the simplex (Jacobian
   :math:`s^{J-1}`), :math:`\prod_j h_j^{c_j} = s^S \prod_j \pi_j^{c_j}` and the
   prior :math:`\lambda_h^J e^{-\lambda_h s}` depends on :math:`s` only. The
   :math:`\pi` integral is a Dirichlet integral,
   :math:`\int \prod_j \pi_j^{c_j}\,d\pi = \prod_j \Gamma(c_j + 1) / \Gamma(S + J)`,
   which leaves

   .. math::
      K = \int_0^\infty s^{S+J-1} e^{-\lambda_h s} (\lambda_w + s)^{-(S+I)}\,ds .

3. :math:`s = \lambda_w t` turns :math:`K` into Tricomi's confluent
   hypergeometric function,
   :math:`U(a, b, z) = \Gamma(a)^{-1} \int_0^\infty e^{-zt} t^{a-1} (1+t)^{b-a-1}\,dt`:
   :math:`K = \lambda_w^{J-I}\,\Gamma(S+J)\,U(S+J,\ J-I+1,\ \lambda_w\lambda_h)`.
   The :math:`\Gamma(S+J)` cancels the Dirichlet normaliser, so

   .. math::
      \log p(X) = -\sum_{ij} \log X_{ij}! + \sum_i \log r_i! + \sum_j \log c_j!
                  + J \log(\lambda_w \lambda_h)
                  + \log U(S+J,\ J-I+1,\ \lambda_w\lambda_h).

   Kummer's transformation :math:`U(a,b,z) = z^{1-b} U(a-b+1, 2-b, z)` turns
   this into the same formula for :math:`X^\top` with the rates swapped, as it
   must. Check: for :math:`I = J = 1`, :math:`X = 0`, :math:`\lambda_w\lambda_h = 1`,
   :math:`p = e\,E_1(1) = 0.5963\ldots`.

Evaluation
----------
``scipy.special.hyperu`` under- or overflows once :math:`S` is in the hundreds,
so the default evaluates :math:`\log K` by quadrature in :math:`u = \log s`:
:math:`g(u) = (S+J)\,u - \lambda_h e^u - (S+I)\log(\lambda_w + e^u)` is strictly
concave (:math:`g'' = -\lambda_h e^u - (S+I)\lambda_w e^u / (\lambda_w + e^u)^2 < 0`),
its maximum solves :math:`\lambda_h s^2 + (\lambda_h\lambda_w + I - J)s - (S+J)\lambda_w = 0`,
and ``quad`` integrates :math:`e^{g - g_{\max}}` between the points where
:math:`g` has fallen by :data:`TAIL_DROP` nats. ``method="hyperu"`` is the
cross-check for small counts.
"""

import numpy as np
from scipy import integrate, special

__all__ = ["rank1_log_evidence"]

#: The quadrature range ends where the log-integrand is this far below its maximum.
TAIL_DROP = 60.0


def _log_k_quad(a, b, lam_w, lam_h):
    r"""log of :math:`\int_0^\infty s^{a-1} e^{-\lambda_h s} (\lambda_w + s)^{-b} ds`."""
    log_lam_w = np.log(lam_w)

    def g(u):
        return a * u - lam_h * np.exp(u) - b * np.logaddexp(log_lam_w, u)

    # Positive root of lam_h s^2 + B s - a lam_w = 0, in the cancellation-free form.
    B = lam_h * lam_w + b - a
    disc = np.sqrt(B * B + 4.0 * lam_h * a * lam_w)
    s_star = 2.0 * a * lam_w / (B + disc) if B > 0 else (disc - B) / (2.0 * lam_h)
    u_star = np.log(s_star)
    g_max = g(u_star)
    curvature = lam_h * s_star + b * lam_w * s_star / (lam_w + s_star) ** 2
    width = 1.0 / np.sqrt(curvature)

    def edge(direction):
        step = width
        while g(u_star + direction * step) > g_max - TAIL_DROP:
            step *= 2.0
        return u_star + direction * step

    lo, hi = edge(-1.0), edge(1.0)
    value, _ = integrate.quad(
        lambda u: np.exp(g(u) - g_max), lo, hi, points=[u_star], epsabs=0.0, epsrel=1e-12, limit=500
    )
    return g_max + np.log(value)


def rank1_log_evidence(X, lam_w=1.0, lam_h=1.0, method="quad"):
    r"""Exact :math:`\log p(X)` of rank-1 Poisson NMF with exponential priors.

    Parameters
    ----------
    X : array-like of shape (I, J)
        Non-negative integer counts.
    lam_w, lam_h : float
        Rates of the exponential priors on :math:`w` and :math:`h`.
    method : {"quad", "hyperu"}
        How the one remaining integral is evaluated (see the module docstring);
        ``"hyperu"`` is only reliable for small total counts.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.size == 0:
        raise ValueError("X must be a non-empty 2-D array.")
    if np.any(X < 0) or np.any(X != np.round(X)):
        raise ValueError("X must hold non-negative integers.")
    n_rows, n_cols = X.shape
    total = X.sum()
    log_const = (
        -special.gammaln(X + 1.0).sum()
        + special.gammaln(X.sum(axis=1) + 1.0).sum()
        + special.gammaln(X.sum(axis=0) + 1.0).sum()
    )
    a, b = total + n_cols, total + n_rows
    if method == "quad":
        # log K - log Gamma(S + J) + I log lam_w + J log lam_h, straight from steps 1-2.
        return float(
            log_const
            + _log_k_quad(a, b, lam_w, lam_h)
            - special.gammaln(a)
            + n_rows * np.log(lam_w)
            + n_cols * np.log(lam_h)
        )
    if method == "hyperu":
        u = special.hyperu(a, n_cols - n_rows + 1.0, lam_w * lam_h)
        if not np.isfinite(u) or u <= 0:
            raise FloatingPointError(f"hyperu({a}, {n_cols - n_rows + 1}, {lam_w * lam_h}) = {u}.")
        return float(log_const + n_cols * np.log(lam_w * lam_h) + np.log(u))
    raise ValueError(f"method must be 'quad' or 'hyperu', got {method!r}.")
