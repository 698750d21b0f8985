"""The Gaussian additive model of Şimşekli et al. (2016), section 4.1.1."""

import numpy as np

from ._base import EvidenceModel

__all__ = ["GaussianAdditive"]

_LOG_2PI = np.log(2.0 * np.pi)


class GaussianAdditive(EvidenceModel):
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

    exact_prior_sampling = True

    def __init__(self, n_components=1, prior_mean=0.0, prior_var=1.0, noise_var=1.0):
        if int(n_components) != n_components or n_components < 1:
            raise ValueError(f"n_components must be a positive integer, got {n_components!r}.")
        for name, value in (("prior_var", prior_var), ("noise_var", noise_var)):
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}.")
        if not np.isfinite(prior_mean):
            raise ValueError(f"prior_mean must be finite, got {prior_mean!r}.")
        self.n_components = int(n_components)
        self.prior_mean = float(prior_mean)
        self.prior_var = float(prior_var)
        self.noise_var = float(noise_var)

    @property
    def n_params(self):
        return self.n_components

    def prepare_data(self, X, y=None):
        """Flatten the data: every entry of ``X`` is one observation."""
        x = np.ascontiguousarray(X, dtype=np.float64).reshape(-1)
        return x, None

    def log_likelihood_and_grad(self, theta, X, y=None):
        resid = X - theta.sum()
        log_lik = -0.5 * (_LOG_2PI + np.log(self.noise_var)) - 0.5 * resid**2 / self.noise_var
        grad = np.full(self.n_components, resid.sum() / self.noise_var)
        return log_lik, grad

    def log_likelihood_particles(self, thetas, X, y=None):
        resid = X - thetas.sum(axis=1)[:, None]
        return -0.5 * (_LOG_2PI + np.log(self.noise_var)) - 0.5 * resid**2 / self.noise_var

    def log_likelihood_and_grad_particles(self, thetas, X, y=None):
        log_lik = self.log_likelihood_particles(thetas, X)
        # d/dtheta_r of sum_n log p(x_n|theta) is the same for every r: sum_n resid_n / noise_var.
        total = (X.sum() - X.size * thetas.sum(axis=1)) / self.noise_var
        return log_lik, np.repeat(total[:, None], self.n_components, axis=1)

    def log_prior(self, theta):
        d = theta - self.prior_mean
        return -0.5 * (self.n_components * (_LOG_2PI + np.log(self.prior_var)) + d @ d / self.prior_var)

    def log_prior_particles(self, thetas):
        d = thetas - self.prior_mean
        sq = np.einsum("ij,ij->i", d, d)
        return -0.5 * (self.n_components * (_LOG_2PI + np.log(self.prior_var)) + sq / self.prior_var)

    def grad_log_prior_particles(self, thetas):
        return -(thetas - self.prior_mean) / self.prior_var

    def grad_log_prior(self, theta):
        return -(theta - self.prior_mean) / self.prior_var

    def sample_prior(self, rng, size=None):
        shape = self.n_components if size is None else (size, self.n_components)
        return self.prior_mean + np.sqrt(self.prior_var) * rng.standard_normal(shape)

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
        return -0.5 * (n * _LOG_2PI + log_det + quad)

    def posterior_mean(self, X):
        r"""Exact posterior mean of :math:`\theta` (all components are equal)."""
        x, _ = self.prepare_data(X)
        c = self.n_components * self.prior_var
        shift = self.prior_var * (x.mean() - self.n_components * self.prior_mean)
        shift /= c + self.noise_var / x.size
        return np.full(self.n_components, self.prior_mean + shift)

    def posterior_mean_from_moments(self, n, total):
        r"""Exact posterior mean of :math:`\theta` from the count ``n`` and the sum ``total`` of the data.

        Both add up over pieces of a stream, so this gives the posterior of
        everything seen without keeping the data.
        """
        c = self.n_components * self.prior_var
        shift = self.prior_var * (total / n - self.n_components * self.prior_mean)
        shift /= c + self.noise_var / n
        return np.full(self.n_components, self.prior_mean + shift)
