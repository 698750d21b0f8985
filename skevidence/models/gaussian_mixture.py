"""Gaussian mixture with diagonal covariances, assignments summed out (Cameron et al. 2019b, section 4.3)."""

import numpy as np
from scipy.special import gammaln, logsumexp

from .._validation import check_int, check_positive_real
from ._base import LOG_2PI, EvidenceModel

__all__ = ["DiagonalGaussianMixture"]


def _log_gamma_variates(rng, shape, size):
    r"""Logarithms of Gamma(``shape``, 1) draws, accurate for any ``shape > 0``.

    ``log(rng.standard_gamma(shape))`` underflows to ``-inf`` for small shapes;
    :math:`G_a = G_{a+1} U^{1/a}` (Marsaglia & Tsang) keeps the log finite.
    """
    u = 1.0 - rng.random(size)  # in (0, 1], so the log is finite
    return np.log(rng.standard_gamma(shape + 1.0, size)) + np.log(u) / shape


class DiagonalGaussianMixture(EvidenceModel):
    r"""Mixture of ``K`` Gaussians with diagonal covariances, latent assignments summed out.

    .. math::
        \beta &\sim \mathrm{Dirichlet}(\alpha, \dots, \alpha), \qquad
        \sigma^2_{kj} \sim \mathrm{InvGamma}(a, b), \qquad
        \mu_{kj} \mid \sigma^2_{kj} \sim \mathcal{N}(0, \sigma^2_{kj} / \kappa), \\
        p(x_n \mid \theta) &= \sum_{k=1}^K \beta_k \prod_{j=1}^d
        \mathcal{N}(x_{nj};\ \mu_{kj}, \sigma^2_{kj}).

    The defaults :math:`\alpha = a = b = 1`, :math:`\kappa = 1/4` are the
    priors of Cameron et al. (2019b)
    (:math:`\mu_{kj} \sim \mathcal{N}(0, 4\sigma^2_{kj})`).

    **Parametrisation.** Samplers move in the unconstrained
    ``theta = (eta, mu.ravel(), s.ravel())`` of length :math:`K + 2Kd`, with
    ``mu`` and ``s = log(sigma^2)`` of shape ``(K, d)`` in C order. The weights
    use the Gamma-normalisation construction: :math:`g_k = e^{\eta_k}` are
    i.i.d. :math:`\mathrm{Gamma}(\alpha, 1)` and :math:`\beta = g / \sum_l g_l`,
    which is exactly :math:`\mathrm{Dirichlet}(\alpha)` (and independent of
    :math:`\sum_l g_l`). The prior on ``theta`` is the exact pushforward,
    Jacobians included:

    .. math::
        \log p(\eta_k) = \alpha\eta_k - e^{\eta_k} - \log\Gamma(\alpha), \qquad
        \log p(s_{kj}) = a\log b - \log\Gamma(a) - a s_{kj} - b e^{-s_{kj}}.

    The likelihood sees only the ratios :math:`g / \sum g`, so ``K`` logits
    carry ``K - 1`` degrees of freedom (25 parameters and 24 degrees of freedom
    for ``K = 5``, ``d = 2`` as in Cameron et al. 2019b); the redundant
    direction keeps its proper prior in the posterior, and because the extra
    variable is independent of :math:`\beta` with a normalised density, the
    evidence is that of the model on :math:`\beta`. Compared with ``K - 1``
    free logits and the last fixed at zero, this prior is symmetric in the
    components and separable.

    Parameters
    ----------
    n_features : int
        Dimension :math:`d` of ``x_n``.
    n_components : int
        Number of components :math:`K`.
    weight_concentration : float, default=1.0
        Dirichlet concentration :math:`\alpha`.
    mean_precision : float, default=0.25
        :math:`\kappa`, the ratio of a mean's prior precision to its component's
        precision.
    var_shape : float, default=1.0
        Shape :math:`a` of the inverse-gamma prior on each variance.
    var_scale : float, default=1.0
        Scale :math:`b` of the inverse-gamma prior on each variance.

    See Also
    --------
    skevidence.estimators.gmm.BayesianGMM : The estimator built on this model.
    """

    exact_prior_sampling = True

    def __init__(self, n_features, n_components, *, weight_concentration=1.0, mean_precision=0.25, var_shape=1.0,
                 var_scale=1.0):
        self.n_features = check_int("n_features", n_features)
        self.n_components = check_int("n_components", n_components)
        self.weight_concentration = check_positive_real("weight_concentration", weight_concentration)
        self.mean_precision = check_positive_real("mean_precision", mean_precision)
        self.var_shape = check_positive_real("var_shape", var_shape)
        self.var_scale = check_positive_real("var_scale", var_scale)

    @property
    def n_params(self):
        return self.n_components * (1 + 2 * self.n_features)

    def unpack(self, theta):
        """Split ``theta`` (or a stack ``(M, n_params)``) into ``(eta, mu, s)``.

        Returns
        -------
        eta : ndarray of shape (..., n_components)
            Unnormalised log-weights.
        mu : ndarray of shape (..., n_components, n_features)
            Means.
        s : ndarray of shape (..., n_components, n_features)
            Log-variances.
        """
        theta = np.asarray(theta, dtype=np.float64)
        k, d = self.n_components, self.n_features
        eta, mu, s = np.split(theta, [k, k + k * d], axis=-1)
        return eta, mu.reshape(*theta.shape[:-1], k, d), s.reshape(*theta.shape[:-1], k, d)

    def join(self, eta, mu, s):
        """The ``theta`` (or stack of them) of ``(eta, mu, s)``: the inverse of :meth:`unpack`."""
        lead = np.shape(eta)[:-1]
        return np.concatenate([eta, np.reshape(mu, (*lead, -1)), np.reshape(s, (*lead, -1))], axis=-1)

    def pack(self, weights, means, variances):
        """The ``theta`` of given weights, means and variances (inverse of :meth:`constrained`).

        Of the ``eta`` that map to ``weights`` it returns ``log(weights)``.
        """
        return self.join(np.log(np.asarray(weights, dtype=np.float64)), means, np.log(variances))

    def constrained(self, theta):
        """Mixture weights, means and variances of ``theta`` (or of a stack of them).

        Returns
        -------
        weights : ndarray of shape (..., n_components)
        means : ndarray of shape (..., n_components, n_features)
        variances : ndarray of shape (..., n_components, n_features)
        """
        eta, mu, s = self.unpack(theta)
        log_w = eta - logsumexp(eta, axis=-1, keepdims=True)
        return np.exp(log_w), mu, np.exp(s)

    def prepare_data(self, X, y=None):
        """Return ``X`` as float64 ``(n, n_features)``; ``y`` is ignored (unsupervised model)."""
        return super().prepare_data(X)

    def _component_terms(self, thetas, X):
        """Per-datum, per-component ``log beta_k + log N(x_n | k)``, and the scaled squares.

        Returns ``(comp, sq)`` of shapes ``(M, n, K)`` and ``(M, n, K, d)``, with
        ``sq = (x_nj - mu_kj)^2 / sigma^2_kj``.
        """
        eta, mu, s = self.unpack(thetas)
        log_w = eta - logsumexp(eta, axis=-1, keepdims=True)
        # The direct difference, not the expanded square: the expansion cancels
        # catastrophically for data far from the origin relative to their spread.
        diff = X[None, :, None, :] - mu[:, None, :, :]
        sq = diff * diff * np.exp(-s)[:, None, :, :]
        log_norm = -0.5 * (self.n_features * LOG_2PI + s.sum(axis=-1))
        comp = (log_w + log_norm)[:, None, :] - 0.5 * sq.sum(axis=-1)
        return comp, sq

    def log_likelihood_particles(self, thetas, X, y=None):
        """Per-datum log-likelihoods for a stack of parameters, shape ``(M, n)``."""
        comp, _ = self._component_terms(np.atleast_2d(thetas), X)
        return logsumexp(comp, axis=-1)

    def log_likelihood_and_grad_particles(self, thetas, X, y=None):
        r"""Per-datum log-likelihoods and summed gradients for ``M`` parameter vectors.

        With responsibilities :math:`r_{nk}` and :math:`R_k = \sum_n r_{nk}`,
        the gradients of :math:`\sum_n \log p(x_n|\theta)` are
        :math:`R_k - n\beta_k` for :math:`\eta_k`,
        :math:`\sigma^{-2}_{kj}\sum_n r_{nk}(x_{nj} - \mu_{kj})` for
        :math:`\mu_{kj}` and
        :math:`\tfrac12\sum_n r_{nk}\big((x_{nj}-\mu_{kj})^2\sigma^{-2}_{kj} - 1\big)`
        for :math:`s_{kj}`.

        Parameters
        ----------
        thetas : ndarray of shape (M, n_params)
        X : ndarray of shape (n, n_features)
        y : None
            Ignored.

        Returns
        -------
        log_lik : ndarray of shape (M, n)
        grads : ndarray of shape (M, n_params)
        """
        thetas = np.atleast_2d(thetas)
        weights, mu, var = self.constrained(thetas)
        comp, sq = self._component_terms(thetas, X)
        log_lik = logsumexp(comp, axis=-1)
        resp = np.exp(comp - log_lik[..., None])
        r_sum = resp.sum(axis=1)
        grad_mu = (np.einsum("mnk,nd->mkd", resp, X) - r_sum[..., None] * mu) / var
        grad_s = 0.5 * (np.einsum("mnk,mnkd->mkd", resp, sq) - r_sum[..., None])
        return log_lik, self.join(r_sum - X.shape[0] * weights, grad_mu, grad_s)

    def log_prior_particles(self, thetas):
        """:meth:`log_prior` of each row of ``thetas``, shape ``(M,)``."""
        alpha, kappa, a, b = self.weight_concentration, self.mean_precision, self.var_shape, self.var_scale
        eta, mu, s = self.unpack(np.atleast_2d(thetas))
        inv_var = np.exp(-s)
        n_kd = self.n_components * self.n_features
        lp_eta = (alpha * eta - np.exp(eta)).sum(axis=-1) - self.n_components * gammaln(alpha)
        lp_s = (-a * s - b * inv_var).sum(axis=(-2, -1)) + n_kd * (a * np.log(b) - gammaln(a))
        lp_mu = -0.5 * ((s + kappa * mu * mu * inv_var).sum(axis=(-2, -1)) + n_kd * (LOG_2PI - np.log(kappa)))
        return lp_eta + lp_s + lp_mu

    def grad_log_prior_particles(self, thetas):
        """:meth:`grad_log_prior` of each row of ``thetas``, shape ``(M, n_params)``."""
        kappa, a, b = self.mean_precision, self.var_shape, self.var_scale
        eta, mu, s = self.unpack(np.atleast_2d(thetas))
        inv_var = np.exp(-s)
        return self.join(self.weight_concentration - np.exp(eta), -kappa * mu * inv_var,
                         -0.5 - a + (b + 0.5 * kappa * mu * mu) * inv_var)

    def sample_prior(self, rng, size=None):
        m = 1 if size is None else int(size)
        k, d = self.n_components, self.n_features
        eta = _log_gamma_variates(rng, self.weight_concentration, (m, k))
        # sigma^2 = b / G with G ~ Gamma(a, 1) is InvGamma(a, b).
        s = np.log(self.var_scale) - _log_gamma_variates(rng, self.var_shape, (m, k, d))
        mu = np.sqrt(np.exp(s) / self.mean_precision) * rng.standard_normal((m, k, d))
        theta = self.join(eta, mu, s)
        return theta[0] if size is None else theta

    def responsibilities(self, thetas, X, weights=None):
        r"""Posterior probabilities of the components for each row of ``X``.

        Parameters
        ----------
        thetas : ndarray of shape (n_params,) or (M, n_params)
            Parameter draws (particles), with consistent component labels.
        X : ndarray of shape (n, n_features)
            Data.
        weights : ndarray of shape (M,), default=None
            Normalised importance weights of the draws; uniform by default.

        Returns
        -------
        resp : ndarray of shape (n, n_components)
            :math:`\sum_i w_i\, p(z_n = k \mid x_n, \theta^{(i)})`.
        """
        comp, _ = self._component_terms(np.atleast_2d(thetas), X)
        resp = np.exp(comp - logsumexp(comp, axis=-1, keepdims=True))
        return np.average(resp, axis=0, weights=weights)
