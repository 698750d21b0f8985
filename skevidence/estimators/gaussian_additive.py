"""Estimator for the Gaussian additive model."""

from numbers import Integral, Real

from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval

from ..models import GaussianAdditive
from ._base import (
    CLOSED_FORM_METHOD_CONSTRAINTS,
    EVIDENCE_PARAMETER_CONSTRAINTS,
    EVIDENCE_PARAMETERS,
    EvidenceEstimatorMixin,
    ExactEvidenceMixin,
)
from ._docs import fill_doc
from ._online import OnlineEvidenceMixin
from ._signature import shared_parameters

__all__ = ["GaussianAdditiveModel"]


@fill_doc
@shared_parameters(EVIDENCE_PARAMETERS)
class GaussianAdditiveModel(
    OnlineEvidenceMixin, ExactEvidenceMixin, EvidenceEstimatorMixin, BaseEstimator
):
    r"""Evidence of the Gaussian additive model (Şimşekli et al. 2016, section 4.1.1).

    .. math::
        \theta_r \sim \mathcal{N}(\mu, \sigma_\theta^2),\ r = 1..R, \qquad
        x_n \mid \theta \sim \mathcal{N}\Big(\sum_r \theta_r, \sigma_x^2\Big).

    ``fit`` estimates :math:`\log p(x)`; ``score`` returns it, so a search
    over ``n_components`` picks :math:`R` by the evidence. Every entry of
    ``X`` is one observation :math:`x_n` (the model's data are scalars; pass
    them as a column of shape ``(n_samples, 1)``). The evidence is known in
    closed form (:meth:`exact_log_evidence`, ``method="exact"``), which makes
    this model the check of the other estimators. With ``method="sgais"``,
    ``partial_fit`` updates the evidence from new data only.

    Read more in the :ref:`User Guide <evidence>`.

    Parameters
    ----------
    n_components : int, default=1
        Number of latent variables :math:`R`.
    prior_mean : float, default=0.0
        Prior mean :math:`\mu` of each latent variable.
    prior_var : float, default=1.0
        Prior variance :math:`\sigma_\theta^2 > 0`.
    noise_var : float, default=1.0
        Observation noise variance :math:`\sigma_x^2 > 0`.
    %(closed_form_method_parameters)s
    %(evidence_parameters)s

    Attributes
    ----------
    %(online_evidence_attributes)s
    posterior_mean_ : ndarray of shape (n_components,)
        Exact posterior mean of :math:`\theta`.
    %(feature_attributes)s

    See Also
    --------
    skevidence.models.GaussianAdditive : The model behind this estimator.
    EvidenceGridSearch : Select ``n_components`` by the evidence.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence import GaussianAdditiveModel
    >>> X = np.random.default_rng(0).normal(15.0, 2.0, size=(1000, 1))
    >>> est = GaussianAdditiveModel(n_components=3, prior_mean=5.0, prior_var=3.0,
    ...                             noise_var=4.0, method="exact").fit(X)
    >>> round(est.log_evidence_, 2)
    -2092.97
    """

    _cost_params = ("n_components",)

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "prior_mean": [Interval(Real, None, None, closed="neither")],
        "prior_var": [Interval(Real, 0, None, closed="neither")],
        "noise_var": [Interval(Real, 0, None, closed="neither")],
        **CLOSED_FORM_METHOD_CONSTRAINTS,
        **EVIDENCE_PARAMETER_CONSTRAINTS,
    }

    def __init__(
        self,
        n_components=1,
        prior_mean=0.0,
        prior_var=1.0,
        noise_var=1.0,
        method="sti",
        *,
        reference="laplace",
    ):
        self.n_components = n_components
        self.prior_mean = prior_mean
        self.prior_var = prior_var
        self.noise_var = noise_var
        self.method = method
        self.reference = reference

    def _make_model(self, X):
        return GaussianAdditive(self.n_components, self.prior_mean, self.prior_var, self.noise_var)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Estimate the evidence of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1)
            Observations; every entry is one :math:`x_n`.
        %(fit_returns)s
        """
        X, _ = self._validate_fit_data(X, None, reset=True)
        model = self._fit_evidence(X)
        self.posterior_mean_ = model.posterior_mean(X)
        # Count and sum of the observations, for partial_fit to continue from.
        self._moments = (X.size, float(X.sum()))
        return self

    def _partial_fit_update(self, X, y, first):
        """Exact posterior mean of all observations seen, from their count and sum."""
        count, total = X.size, float(X.sum())
        if not first:
            count, total = count + self._moments[0], total + self._moments[1]
        self._moments = (count, total)
        self.posterior_mean_ = self._make_model(X).posterior_mean_from_moments(count, total)
