r"""The exact evidence of the diagonal Gaussian mixture on tiny data, the reference for its estimators.

Model (:class:`skevidence.models.DiagonalGaussianMixture`):
:math:`\beta \sim \mathrm{Dirichlet}(\alpha)`, :math:`\sigma^2_{kj} \sim \mathrm{InvGamma}(a, b)`,
:math:`\mu_{kj} \mid \sigma^2_{kj} \sim \mathcal{N}(0, \sigma^2_{kj}/\kappa)`,
:math:`x_n \sim \sum_k \beta_k \mathcal{N}(\mu_k, \mathrm{diag}\,\sigma^2_k)`.

Derivation
----------
Given the assignments :math:`z \in \{1..K\}^N` the model is conjugate:

- the weights give the Dirichlet-multinomial probability of the sequence,
  :math:`p(z) = \frac{\Gamma(K\alpha)}{\Gamma(N + K\alpha)} \prod_k \frac{\Gamma(n_k + \alpha)}{\Gamma(\alpha)}`;
- each component and feature is an independent normal-inverse-gamma model of
  its :math:`n` points :math:`y` (Murphy 2007, "Conjugate Bayesian analysis of
  the Gaussian distribution", section 6): with :math:`\kappa_n = \kappa + n`,
  :math:`a_n = a + n/2`,
  :math:`b_n = b + \tfrac12\sum (y - \bar y)^2 + \frac{\kappa n \bar y^2}{2\kappa_n}`,

  .. math::
     \log p(y) = \log\Gamma(a_n) - \log\Gamma(a) + a\log b - a_n \log b_n
                 + \tfrac12 \log(\kappa/\kappa_n) - \tfrac n2 \log(2\pi).

Then :math:`p(x) = \sum_z p(z) \prod_{k,j} p(x_{z=k, j})`, a sum of
:math:`K^N` terms: exact, and feasible for :math:`K^N` up to about :math:`10^6`.
The sum runs over every labelling, so it is the evidence of the model as
written (no :math:`\log K!` to add or remove).
"""

import itertools

import numpy as np
from scipy.special import gammaln, logsumexp

__all__ = ["gmm_exact_log_evidence"]


def _nig_log_marginal(y, kappa, a, b):
    """Log marginal of the points ``y`` (n, d) under independent normal-inverse-gamma priors, summed over d."""
    n = y.shape[0]
    d = y.shape[1]
    if n == 0:
        return 0.0
    mean = y.mean(axis=0)
    kappa_n, a_n = kappa + n, a + 0.5 * n
    b_n = b + 0.5 * ((y - mean) ** 2).sum(axis=0) + kappa * n * mean**2 / (2.0 * kappa_n)
    per_dim = (
        gammaln(a_n) - gammaln(a) + a * np.log(b) - a_n * np.log(b_n)
        + 0.5 * np.log(kappa / kappa_n) - 0.5 * n * np.log(2.0 * np.pi)
    )
    assert per_dim.shape == (d,)
    return float(per_dim.sum())


def gmm_exact_log_evidence(X, n_components, *, weight_concentration=1.0, mean_precision=0.25,
                           var_shape=1.0, var_scale=1.0):
    """Exact :math:`\\log p(X)` by the sum over all :math:`K^N` assignments (see the module docstring)."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    n, k = X.shape[0], int(n_components)
    if k**n > 2_000_000:
        raise ValueError(f"K^N = {k}^{n} assignments is too many to enumerate.")
    alpha, kappa, a, b = weight_concentration, mean_precision, var_shape, var_scale
    cache = {}
    terms = []
    for z in itertools.product(range(k), repeat=n):
        z = np.asarray(z)
        # Every component's subset is a frozenset of rows: cache its marginal.
        total = gammaln(k * alpha) - gammaln(n + k * alpha)
        for c in range(k):
            rows = tuple(np.flatnonzero(z == c))
            total += gammaln(len(rows) + alpha) - gammaln(alpha)
            if rows not in cache:
                cache[rows] = _nig_log_marginal(X[list(rows)], kappa, a, b)
            total += cache[rows]
        terms.append(total)
    return float(logsumexp(terms))
