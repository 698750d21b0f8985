r"""A model re-read from a Gaussian reference: the referenced path of STI for continuous models (``method="rti"``).

Thermodynamic integration from the prior follows :math:`p(\theta)\,p(X\mid\theta)^t`;
when the data are many the chains must cross from the prior to a narrow
posterior and lag behind the temperature, and a biased SG-MCMC step moves
every rung of the integrand. From a reference :math:`q` close to the posterior
(here its Laplace approximation, exactly normalised and exactly sampled) the
path :math:`q^{1-t}\,(p(\theta)\,p(X\mid\theta))^t` is that of a model whose prior is
:math:`q` and whose likelihood is :math:`p(X\mid\theta)\,p(\theta)/q(\theta)`: both
integrate to the same :math:`p(X)`, and the STI driver needs no change. The
integrand :math:`\log p(X\mid\theta) + \log p(\theta) - \log q(\theta)` is
constant where the posterior is Gaussian and :math:`q` is its Laplace fit, so
neither the chains' lag nor their step-size bias moves it to first order
(generalised stepping-stone sampling, Fan et al. 2011; "referenced TI",
Hawryluk et al. 2023).
"""

import numpy as np
from scipy.optimize import minimize

from ._base import GaussianPriorModel


def _negative_log_posterior(theta, model, X, y):
    """:math:`-\\log p(\\theta) - \\log p(X \\mid \\theta)` and its gradient, on all the data."""
    log_lik, grad = model.log_likelihood_and_grad(theta, X, y)
    return -float(np.sum(log_lik)) - float(model.log_prior(theta)), -grad - model.grad_log_prior(theta)


@np.errstate(over="ignore", invalid="ignore", divide="ignore")
def laplace_reference(model, X, y=None, *, random_state=None):
    r"""The Laplace approximation of the posterior: ``(mean, covariance)``, or ``None``.

    The mode of :math:`\log p(\theta) + \log p(X\mid\theta)` by L-BFGS from a
    prior draw, the Hessian by central differences of the gradient. ``None``
    when the point found is not finite or the Hessian there is not negative
    definite (no Gaussian reference then; the caller keeps the prior path).
    An optimiser that stops short of the mode is not refused: any normalised
    Gaussian is a valid reference, a poorer one only lengthens the path.

    Parameters
    ----------
    model : EvidenceModel
        With ``log_likelihood_and_grad``, ``log_prior`` and ``grad_log_prior``.
    X, y : ndarray
        Data prepared by ``model.prepare_data``.
    random_state : int, Generator or None
        Seed of the starting point.
    """
    rng = np.random.default_rng(random_state)
    start = np.asarray(model.initial_params(rng), dtype=np.float64).reshape(-1)

    args = (model, X, y)
    options = dict(maxiter=2000, gtol=1e-9)
    mode = minimize(_negative_log_posterior, start, args=args, jac=True, method="L-BFGS-B", options=options).x
    if not np.all(np.isfinite(mode)):
        return None
    # Column j: the central difference of the gradient along parameter j.
    h = 1e-5 * np.maximum(1.0, np.abs(mode))
    columns = [_negative_log_posterior(mode + step, *args)[1] - _negative_log_posterior(mode - step, *args)[1]
               for step in np.diag(h)]
    # The Hessian of the negative log posterior, symmetrised.
    precision = np.array(columns).T / (2.0 * h)
    precision = (precision + precision.T) / 2.0
    if not np.all(np.isfinite(precision)):
        return None
    try:
        chol = np.linalg.cholesky(precision)
    except np.linalg.LinAlgError:
        return None
    cov = np.linalg.inv(chol).T @ np.linalg.inv(chol)
    return mode, (cov + cov.T) / 2.0


class GaussianReferencedModel(GaussianPriorModel):
    r"""``model`` seen from a Gaussian reference :math:`q = \mathcal{N}(\mu, LL^T)`, in whitened coordinates.

    The parameters are :math:`z`, :math:`\theta = \mu + Lz`; the prior is
    :math:`\mathcal{N}(0, I)` (that is, :math:`q`) and the likelihood
    :math:`p(X\mid\theta)\,p(\theta)/q(\theta)`. Its evidence is the evidence of
    ``model``; STI on it follows the referenced path from :math:`q`, and in
    :math:`z` every target of the path is close to a standard normal, the
    scale the samplers' default steps assume. The factor :math:`p/q` is not a
    term of any row: each row carries a :math:`1/N` share of it, so that a
    minibatch scaled by :math:`N/N_s` carries the whole.

    Parameters
    ----------
    model : EvidenceModel
        The model (the generic chain runner is used).
    mean : ndarray of shape (n_params,)
    cov : ndarray of shape (n_params, n_params)
    n_data : int
        :math:`N`, the number of rows of the prepared data.
    """

    #: The prior of the whitened parameters, N(0, I).
    prior_var = 1.0
    #: No reweighted draws: from the reference the integrand barely varies over
    #: q's draws, but each draw's minibatch estimate of it is noisy, and weights
    #: p(x|z)^t of such draws follow the noise (they lift the lowest rungs by up
    #: to 120 nats, 0.2 nats of the evidence). A chain runs at every t > 0.
    reweight_prior_draws = False

    def __init__(self, model, mean, cov, n_data):
        if model.nonnegative is not None and np.any(model.nonnegative):
            raise ValueError(f"{type(model).__name__} has non-negative parameters; a Gaussian reference would put mass "
                             "where its prior has none. Run STI from the prior (method='sti').")
        self.model = model
        self.mean = np.asarray(mean, dtype=np.float64)
        self.chol = np.linalg.cholesky(np.asarray(cov, dtype=np.float64))
        self.n_data_total = int(n_data)
        # log q(theta) = log N(z; 0, I) - log |L|.
        self._log_det = float(np.log(np.diag(self.chol)).sum())

    @property
    def n_params(self):
        return self.mean.size

    def theta(self, z):
        """The model's parameters at whitened ``z``."""
        return self.mean + self.chol @ z

    def prepare_data(self, X, y=None):
        return self.model.prepare_data(X, y)

    def n_data(self, X, y=None):
        return self.model.n_data(X, y)

    def log_likelihood_and_grad(self, z, X, y=None):
        theta = self.theta(z)
        log_lik, grad = self.model.log_likelihood_and_grad(theta, X, y)
        log_lik = np.asarray(log_lik, dtype=np.float64)
        # log p(theta) - log q(theta) and its gradient in z, a 1/N share of it to each row.
        ratio = float(self.model.log_prior(theta)) - (self.log_prior(z) - self._log_det)
        ratio_grad = self.chol.T @ self.model.grad_log_prior(theta) + z
        share = log_lik.shape[0] / self.n_data_total
        return log_lik + ratio / self.n_data_total, self.chol.T @ grad + share * ratio_grad
