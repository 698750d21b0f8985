"""Estimator for the Gaussian additive model."""

from numbers import Integral, Real

from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions

from .._docstrings import fill_doc
from .._init_params import store_init_params
from ..models import GaussianAdditive
from ._base import ContinuousEvidenceMixin, ExactEvidenceMixin
from ._methods import EVIDENCE_PARAMETER_CONSTRAINTS

__all__ = ["GaussianAdditiveModel"]


@fill_doc
class GaussianAdditiveModel(ExactEvidenceMixin, ContinuousEvidenceMixin, BaseEstimator):
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
    method : {"rti", "sti", "exact", "sgais", "ais"}, default="rti"
        How the evidence is computed. ``"rti"``: thermodynamic integration
        referenced from the Laplace fit of the posterior, a Gaussian
        :math:`q`: stochastic thermodynamic integration
        (:func:`~skevidence.sti_log_evidence`) along
        :math:`q^{1-t}(p(\theta)\,p(x\mid\theta))^t`, whose integrand is
        constant where the posterior is Gaussian (it is, for this model), so
        neither the chains' lag nor the step-size bias of SG-MCMC moves it.
        ``"sti"``: the papers' STI from the prior. ``"exact"``: the closed
        form. ``"sgais"``: stochastic-gradient annealed importance sampling
        (:func:`~skevidence.sgais_log_evidence`), the only method with
        ``partial_fit``. ``"ais"``: annealed importance sampling with
        full-data HMC (:func:`~skevidence.evidence.ais_log_evidence`), a
        reference.
    method_params : dict, default=None
        Keyword arguments of the function ``method`` runs (``"exact"`` takes
        none); ``None`` keeps its defaults. See :meth:`fit`.
    %(seed_progress)s

    Attributes
    ----------
    %(evidence_attributes)s
    posterior_mean_ : ndarray of shape (n_components,)
        Exact posterior mean of :math:`\theta`.
    %(features_in)s

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
        "method": [StrOptions({"rti", "sti", "exact", "sgais", "ais"})],
        **EVIDENCE_PARAMETER_CONSTRAINTS,
    }

    def __init__(self, n_components=1, prior_mean=0.0, prior_var=1.0, noise_var=1.0, method="rti", *,
                 method_params=None, random_state=None, verbose=0):
        store_init_params(self, locals())

    def _make_model(self, X):
        return GaussianAdditive(self.n_components, self.prior_mean, self.prior_var, self.noise_var)

    def _set_posterior(self, model, X, y, first):
        """Exact posterior mean of all observations seen, from their count and sum."""
        self.posterior_mean_ = model.posterior_mean_from_moments(*self._add_moments((X.size, float(X.sum())), first))
