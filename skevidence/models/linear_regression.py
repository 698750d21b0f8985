"""Bayesian linear regression with known noise (Cameron et al. 2019b, section 4.1)."""

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from .._validation import check_int, check_positive_real
from ._base import LOG_2PI, GaussianPriorModel

__all__ = ["LinearGaussian"]


class LinearGaussian(GaussianPriorModel):
    r"""Linear regression with Gaussian priors and known Gaussian noise.

    .. math::
        w_j, b \sim \mathcal{N}(0, \sigma_w^2), \qquad
        y_n \mid w, b \sim \mathcal{N}(w^T x_n + b, \sigma^2).

    The parameters are ``theta = (w, b)`` (``w`` alone without an intercept).
    Rows of ``X`` with their ``y`` are the data points.

    Parameters
    ----------
    n_features : int
        Dimension of ``x_n``.
    noise_var : float
        Noise variance :math:`\sigma^2`.
    prior_var : float
        Prior variance :math:`\sigma_w^2` of every weight and of the intercept.
    fit_intercept : bool
        Whether the model has the intercept ``b``.
    """

    def __init__(self, n_features, noise_var=1.0, prior_var=1.0, fit_intercept=True):
        self.n_features = check_int("n_features", n_features)
        self.noise_var = check_positive_real("noise_var", noise_var)
        self.prior_var = check_positive_real("prior_var", prior_var)
        self.fit_intercept = bool(fit_intercept)

    @property
    def n_params(self):
        return self.n_features + self.fit_intercept

    def prepare_data(self, X, y=None):
        """Return the design matrix (with a column of ones for the intercept) and ``y``."""
        if y is None:
            raise ValueError("LinearGaussian is a regression model: y is required.")
        X, y = super().prepare_data(X, np.ravel(y))
        if self.fit_intercept:
            X = np.hstack([X, np.ones((X.shape[0], 1))])
        return X, y

    def log_likelihood_and_grad_particles(self, thetas, X, y=None):
        # One (M, d) x (d, n) product for all particles instead of M passes over the rows.
        resid = y - thetas @ X.T
        log_lik = -0.5 * (LOG_2PI + np.log(self.noise_var)) - 0.5 * resid**2 / self.noise_var
        return log_lik, resid @ X / self.noise_var

    def _posterior_factor(self, gram):
        """Cholesky factor of the posterior precision ``gram / noise + I / prior``."""
        precision = np.array(gram, dtype=np.float64) / self.noise_var
        precision[np.diag_indices_from(precision)] += 1.0 / self.prior_var
        return cho_factor(precision, lower=True)

    def exact_log_evidence(self, X, y):
        r"""Exact :math:`\log p(y \mid X)` in :math:`O(N d^2)`.

        Marginally :math:`y \sim \mathcal{N}(0, \sigma^2 I + \sigma_w^2 \tilde X \tilde X^T)`.
        With :math:`A = \sigma_w^{-2} I + \sigma^{-2}\tilde X^T \tilde X` (``d × d``),
        the determinant lemma gives
        :math:`\log|\Sigma| = N\log\sigma^2 + d\log\sigma_w^2 + \log|A|`, and
        Woodbury gives :math:`y^T\Sigma^{-1}y = y^Ty/\sigma^2 - b^T A^{-1} b`,
        :math:`b = \tilde X^T y/\sigma^2`. No ``N × N`` matrix is formed.
        """
        design, y = self.prepare_data(X, y)
        n = y.shape[0]
        chol, _ = factor = self._posterior_factor(design.T @ design)
        b = design.T @ y / self.noise_var
        log_det = n * np.log(self.noise_var) + self.n_params * np.log(self.prior_var) + 2 * np.log(np.diag(chol)).sum()
        quad = y @ y / self.noise_var - b @ cho_solve(factor, b)
        return -0.5 * (n * LOG_2PI + log_det + quad)

    def posterior(self, X, y):
        """Exact posterior mean and covariance of ``theta``."""
        return self.posterior_from_moments(*self.moments(X, y))

    def moments(self, X, y):
        r"""Sufficient statistics :math:`(\tilde X^T \tilde X, \tilde X^T y)` of some rows.

        They add up over disjoint pieces of the data, so a stream can keep
        them and get the exact posterior of everything seen with
        :meth:`posterior_from_moments`.
        """
        design, y = self.prepare_data(X, y)
        return design.T @ design, design.T @ y

    def posterior_from_moments(self, gram, moment):
        r"""Exact posterior mean and covariance from summed :meth:`moments`."""
        factor = self._posterior_factor(gram)
        mean = cho_solve(factor, np.asarray(moment, dtype=np.float64) / self.noise_var)
        return mean, cho_solve(factor, np.eye(self.n_params))
