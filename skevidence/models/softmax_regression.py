"""Bayesian softmax (multinomial logistic) regression (Cameron et al. 2019b, section 4.2)."""

import numpy as np
from scipy.special import log_softmax

from .._validation import check_int, check_positive_real
from ._base import GaussianPriorModel

__all__ = ["SoftmaxRegression"]


class SoftmaxRegression(GaussianPriorModel):
    r"""Softmax regression with i.i.d. Gaussian priors on all weights and biases.

    .. math::
        W_{jk}, b_k \sim \mathcal{N}(0, \sigma_w^2), \qquad
        p(y_n = k \mid x_n, W, b) =
        \frac{\exp(x_n^T W_{:k} + b_k)}{\sum_{l} \exp(x_n^T W_{:l} + b_l)}.

    As in Cameron et al. (2019b) every one of the ``K`` classes has its own
    weights and bias, so there are :math:`dK + K` parameters (44 for
    ``d = 10``, ``K = 4``); the likelihood only sees differences between
    classes, and the prior keeps the redundant direction proper. The parameters
    are ``theta = (W.ravel(), b)`` with ``W`` of shape
    ``(n_features, n_classes)`` in C order. Rows of ``X`` with their labels
    ``y`` are the data points.

    Parameters
    ----------
    n_features : int
        Dimension :math:`d` of ``x_n``.
    n_classes : int
        Number of classes :math:`K \ge 2`; labels are ``0, ..., K - 1``.
    prior_var : float, default=1.0
        Prior variance :math:`\sigma_w^2` of every weight and bias.

    See Also
    --------
    skevidence.estimators.logistic_regression.BayesianLogisticRegression :
        The estimator built on this model.
    """

    def __init__(self, n_features, n_classes, prior_var=1.0):
        self.n_features = check_int("n_features", n_features)
        self.n_classes = check_int("n_classes", n_classes, 2)
        self.prior_var = check_positive_real("prior_var", prior_var)

    @property
    def n_params(self):
        return (self.n_features + 1) * self.n_classes

    def unpack(self, theta):
        """Split ``theta`` (or a stack of them) into weights and biases.

        Parameters
        ----------
        theta : ndarray of shape (n_params,) or (M, n_params)

        Returns
        -------
        W : ndarray of shape (n_features, n_classes) or (M, n_features, n_classes)
        b : ndarray of shape (n_classes,) or (M, n_classes)
        """
        theta = np.asarray(theta, dtype=np.float64)
        d, k = self.n_features, self.n_classes
        lead = theta.shape[:-1]
        return theta[..., : d * k].reshape(*lead, d, k), theta[..., d * k :]

    def prepare_data(self, X, y=None):
        """Return ``X`` as float64 ``(n, n_features)`` and ``y`` as int64 labels in ``0..K-1``.

        Labels must already be class indices; estimators map their own labels
        (``classes_``) to indices before calling the model.
        """
        if y is None:
            raise ValueError("SoftmaxRegression is a classification model: y (class labels) is required.")
        X, _ = super().prepare_data(X)
        y = np.asarray(y, dtype=np.float64)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must be a 1-d array of {X.shape[0]} labels (one per row of X), got shape {y.shape}.")
        if not np.all(np.isfinite(y) & (y == np.round(y))):
            raise ValueError("y must hold integer class indices 0..n_classes-1; map labels to indices first "
                             "(e.g. with np.unique(y, return_inverse=True)).")
        if y.size and (y.min() < 0 or y.max() >= self.n_classes):
            raise ValueError(f"y holds class indices outside 0..{self.n_classes - 1} (min {y.min():g}, max "
                             f"{y.max():g}); the model has n_classes={self.n_classes}.")
        return X, np.ascontiguousarray(y, dtype=np.int64)

    def _log_probs(self, thetas, X):
        """Log class probabilities, shape ``(M, n, K)``, for a stack of parameters."""
        W, b = self.unpack(thetas)
        return log_softmax(np.matmul(X, W) + b[:, None, :], axis=-1)

    def log_likelihood_particles(self, thetas, X, y=None):
        """Per-datum log-likelihoods for a stack of parameters, shape ``(M, n)``."""
        log_p = self._log_probs(np.atleast_2d(thetas), X)
        return np.take_along_axis(log_p, y[None, :, None], axis=-1)[..., 0]

    def log_likelihood_and_grad_particles(self, thetas, X, y=None):
        r"""Per-datum log-likelihoods and summed gradients for ``M`` parameter vectors.

        The gradient of :math:`\sum_n \log p(y_n | x_n, \theta)` is
        :math:`X^T (Y - P)` for ``W`` and :math:`\sum_n (Y - P)_n` for ``b``,
        with ``Y`` the one-hot labels and ``P`` the softmax probabilities.

        Parameters
        ----------
        thetas : ndarray of shape (M, n_params)
        X : ndarray of shape (n, n_features)
        y : ndarray of shape (n,)
            Class indices.

        Returns
        -------
        log_lik : ndarray of shape (M, n)
        grads : ndarray of shape (M, n_params)
        """
        thetas = np.atleast_2d(thetas)
        log_p = self._log_probs(thetas, X)
        log_lik = np.take_along_axis(log_p, y[None, :, None], axis=-1)[..., 0]
        resid = -np.exp(log_p)
        resid[:, np.arange(y.size), y] += 1.0
        grad_W = np.matmul(X.T, resid).reshape(thetas.shape[0], -1)
        return log_lik, np.concatenate([grad_W, resid.sum(axis=1)], axis=1)

    def predict_proba(self, thetas, X, weights=None):
        r"""Posterior-predictive class probabilities, averaged over parameter draws.

        Parameters
        ----------
        thetas : ndarray of shape (n_params,) or (M, n_params)
            Parameter draws (particles).
        X : ndarray of shape (n, n_features)
            Inputs.
        weights : ndarray of shape (M,), default=None
            Normalised importance weights of the draws; uniform by default.

        Returns
        -------
        proba : ndarray of shape (n, n_classes)
            :math:`\sum_i w_i\, \mathrm{softmax}(x_n^T W^{(i)} + b^{(i)})`.
        """
        return np.average(np.exp(self._log_probs(np.atleast_2d(thetas), X)), axis=0, weights=weights)
