"""The Gaussian additive model of Şimşekli et al. (2016), section 4.1.1."""

import numpy as np

from .._validation import check_int, check_positive_real
from ._base import LOG_2PI, GaussianPriorModel

__all__ = ["GaussianAdditive"]


class GaussianAdditive(GaussianPriorModel):
    r"""Observations whose mean is a sum of Gaussian latent variables.

    .. math::
        \theta_r \sim \mathcal{N}(\mu, \sigma_\theta^2),\ r = 1..R, \qquad
        x_n \mid \theta \sim \mathcal{N}\Big(\sum_r \theta_r, \sigma_x^2\Big).

    Every entry of the data is one observation :math:`x_n`. The evidence is
    known exactly (:meth:`exact_log_evidence`), which makes this model the
    reference check of the evidence estimators.

    Parameters
    ----------
    n_components : int
        Number of latent variables :math:`R`.
    prior_mean : float
        Prior mean :math:`\mu` of each latent variable.
    prior_var : float
        Prior variance :math:`\sigma_\theta^2` of each latent variable.
    noise_var : float
        Observation noise variance :math:`\sigma_x^2`.
    """

    def __init__(self, n_components=1, prior_mean=0.0, prior_var=1.0, noise_var=1.0):
        if not np.isfinite(prior_mean):
            raise ValueError(f"prior_mean must be finite, got {prior_mean!r}.")
        self.n_components = check_int("n_components", n_components)
        self.prior_mean = float(prior_mean)
        self.prior_var = check_positive_real("prior_var", prior_var)
        self.noise_var = check_positive_real("noise_var", noise_var)

    @property
    def n_params(self):
        return self.n_components

    def prepare_data(self, X, y=None):
        """Flatten the data: every entry of ``X`` is one observation."""
        return np.ascontiguousarray(X, dtype=np.float64).reshape(-1), None

    def log_likelihood_and_grad_particles(self, thetas, X, y=None):
        resid = X - np.atleast_2d(thetas).sum(axis=1)[:, None]
        log_lik = -0.5 * (LOG_2PI + np.log(self.noise_var)) - 0.5 * resid**2 / self.noise_var
        # d/dtheta_r of sum_n log p(x_n|theta) is the same for every r: sum_n resid_n / noise_var.
        return log_lik, np.repeat(resid.sum(axis=1, keepdims=True) / self.noise_var, self.n_components, axis=1)

    def exact_log_evidence(self, X):
        r"""Exact :math:`\log p(x)` in :math:`O(N)`.

        Marginally :math:`x \sim \mathcal{N}(R\mu 1, \sigma_x^2 I + R\sigma_\theta^2 11^T)`;
        the matrix-determinant lemma and Sherman-Morrison give its log-density
        from :math:`\sum_n r_n` and :math:`\sum_n r_n^2`, :math:`r = x - R\mu`.
        """
        x, _ = self.prepare_data(X)
        n = x.size
        r = x - self.n_components * self.prior_mean
        c = self.n_components * self.prior_var
        s1, s2 = r.sum(), r @ r
        log_det = n * np.log(self.noise_var) + np.log1p(n * c / self.noise_var)
        quad = (s2 - c * s1**2 / (self.noise_var + n * c)) / self.noise_var
        return -0.5 * (n * LOG_2PI + log_det + quad)

    def posterior_mean(self, X):
        r"""Exact posterior mean of :math:`\theta` (all components are equal)."""
        x, _ = self.prepare_data(X)
        return self.posterior_mean_from_moments(x.size, x.sum())

    def posterior_mean_from_moments(self, n, total):
        r"""Exact posterior mean of :math:`\theta` from the count ``n`` and the sum ``total`` of the data.

        Both add up over pieces of a stream, so this gives the posterior of
        everything seen without keeping the data.
        """
        shift = self.prior_var * (total / n - self.n_components * self.prior_mean)
        shift /= self.n_components * self.prior_var + self.noise_var / n
        return np.full(self.n_components, self.prior_mean + shift)
