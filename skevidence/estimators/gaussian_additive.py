"""Estimator for the Gaussian additive model."""

from numbers import Integral, Real

from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ..models import GaussianAdditive
from ._base import STI_DEFAULTS, STI_PARAMETER_CONSTRAINTS, EvidenceEstimatorMixin, ExactEvidenceMixin

__all__ = ["GaussianAdditiveModel"]


class GaussianAdditiveModel(ExactEvidenceMixin, EvidenceEstimatorMixin, BaseEstimator):
    r"""Evidence of the Gaussian additive model (seed 000, section 4.1.1).

    .. math::
        \theta_r \sim \mathcal{N}(\mu, \sigma_\theta^2),\ r = 1..R, \qquad
        x_n \mid \theta \sim \mathcal{N}\Big(\sum_r \theta_r, \sigma_x^2\Big).

    ``fit`` estimates :math:`\log p(x)`; ``score`` returns it, so a search
    over ``n_components`` picks :math:`R` by the evidence. Every entry of
    ``X`` is one observation :math:`x_n` (the model's data are scalars; pass
    them as a column of shape ``(n_samples, 1)``). The evidence is known in
    closed form (:meth:`exact_log_evidence`, ``method="exact"``), which makes
    this model the check of the STI estimator.

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
    method : {"sti", "exact"}, default="sti"
        How the evidence is computed: stochastic thermodynamic integration
        (:func:`~skevidence.sti_log_evidence`) or the closed form.
    temperatures : int or array-like, default=20
        Ladder of STI (see :func:`~skevidence.sti_log_evidence`).
    ladder : {"power", "uniform"}, default="power"
        Kind of ladder built from an int ``temperatures``.
    n_samples : int, default=3000
        Iterations per temperature, burn-in included.
    n_burnin : int, default=1000
        Burn-in iterations per temperature.
    batch_size : int, default=250
        Minibatch size.
    sampler : {"psgld", "sgld"} or Sampler, default="psgld"
        SG-MCMC update rule.
    step_size : float or "auto", default="auto"
        Scale :math:`a` of the step-size schedule :math:`(a/k)^b`.
    step_decay : float, default=0.51
        Exponent :math:`b` of the schedule.
    random_state : int, RandomState instance or None, default=None
        Seed of the sampler; an int makes ``fit`` reproducible.
    verbose : int, default=0
        Progress reporting (see :func:`~skevidence.sti_log_evidence`).

    Attributes
    ----------
    log_evidence_ : float
        Estimated :math:`\log p(X)` of the training data.
    log_evidence_std_ : float
        Its Monte-Carlo standard error (0 for ``method="exact"``).
    result_ : EvidenceResult
        The full record: ladder, per-temperature expectations, diagnostics.
    posterior_mean_ : ndarray of shape (n_components,)
        Exact posterior mean of :math:`\theta`.
    n_features_in_ : int
        Number of columns of ``X`` seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names, when ``X`` has string column names.

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
    -2118.95
    """

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "prior_mean": [Interval(Real, None, None, closed="neither")],
        "prior_var": [Interval(Real, 0, None, closed="neither")],
        "noise_var": [Interval(Real, 0, None, closed="neither")],
        "method": [StrOptions({"sti", "exact"})],
        **STI_PARAMETER_CONSTRAINTS,
    }

    def __init__(
        self,
        n_components=1,
        prior_mean=0.0,
        prior_var=1.0,
        noise_var=1.0,
        method="sti",
        *,
        temperatures=STI_DEFAULTS["temperatures"],
        ladder=STI_DEFAULTS["ladder"],
        n_samples=STI_DEFAULTS["n_samples"],
        n_burnin=STI_DEFAULTS["n_burnin"],
        batch_size=STI_DEFAULTS["batch_size"],
        sampler=STI_DEFAULTS["sampler"],
        step_size=STI_DEFAULTS["step_size"],
        step_decay=STI_DEFAULTS["step_decay"],
        random_state=None,
        verbose=0,
    ):
        self.n_components = n_components
        self.prior_mean = prior_mean
        self.prior_var = prior_var
        self.noise_var = noise_var
        self.method = method
        self.temperatures = temperatures
        self.ladder = ladder
        self.n_samples = n_samples
        self.n_burnin = n_burnin
        self.batch_size = batch_size
        self.sampler = sampler
        self.step_size = step_size
        self.step_decay = step_decay
        self.random_state = random_state
        self.verbose = verbose

    def _make_model(self, X):
        return GaussianAdditive(self.n_components, self.prior_mean, self.prior_var, self.noise_var)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Estimate the evidence of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1)
            Observations; every entry is one :math:`x_n`.
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        X, _ = self._validate_fit_data(X, None, reset=True)
        model = self._fit_evidence(X)
        self.posterior_mean_ = model.posterior_mean(X)
        return self
