"""Estimator for the Gaussian additive model."""

from numbers import Integral, Real

from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ..models import GaussianAdditive
from ._base import (
    SGAIS_DEFAULTS,
    SGAIS_PARAMETER_CONSTRAINTS,
    STI_DEFAULTS,
    STI_PARAMETER_CONSTRAINTS,
    EvidenceEstimatorMixin,
    ExactEvidenceMixin,
)
from ._online import OnlineEvidenceMixin

__all__ = ["GaussianAdditiveModel"]


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
    method : {"sti", "exact", "sgais", "ais"}, default="sti"
        How the evidence is computed: stochastic thermodynamic integration
        (:func:`~skevidence.sti_log_evidence`), the closed form, stochastic
        gradient annealed importance sampling
        (:func:`~skevidence.sgais_log_evidence`, the only method with
        ``partial_fit``), or annealed importance sampling with full-data HMC
        (:func:`~skevidence.evidence.ais_log_evidence`, a reference).
    reference : {"laplace", "prior"}, default="laplace"
        Where the STI path starts (``method="sti"``). ``"laplace"``: the
        Laplace fit of the posterior, a Gaussian :math:`q`; the path
        :math:`q^{1-t}(p(\theta)\,p(\cdot\mid\theta))^t` has an integrand that is
        constant where the posterior is Gaussian, so neither the chains' lag
        nor the step-size bias of SG-MCMC moves it (the posterior of this
        model is Gaussian). ``"prior"``: the papers' path from the prior.
    temperatures : int or array-like, default=20
        Ladder of STI (see :func:`~skevidence.sti_log_evidence`), also used
        by ``method="ais"``, which needs hundreds.
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
    n_particles : int, default=10
        Particles of SGAIS (and of AIS).
    target_ess : float, default=8
        SGAIS: effective sample size each annealing step aims at, in
        ``(1, n_particles]``.
    chunk_size : int or None, default=None
        SGAIS: data per chunk; ``None`` is the schedule of Cameron et al. (2019b).
    n_steps : int, default=20
        SGAIS: SGHMC steps after each annealing step.
    learning_rate : float, default=0.1
        SGAIS: per-observation learning rate; SGHMC uses
        :math:`\eta = \text{learning\_rate}/n` with :math:`n` the data seen.
    resample : bool, default=True
        SGAIS: resample the particles after every annealing step.
    reservoir_size : int or None, default=None
        SGAIS: keep a uniform reservoir of this many past observations for
        the minibatches instead of all of them (bounded memory for streams).
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
    log_evidence_path_ : ndarray of shape (n_chunks,)
        ``method="sgais"`` only: the log-evidence of the data seen after
        every chunk (``result_.diagnostics["n_seen"]`` counts observations).
    n_samples_seen_ : int
        ``method="sgais"`` only: number of rows seen by ``fit`` and
        ``partial_fit``.
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
    -2092.97
    """

    _cost_params = ("n_components",)

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "prior_mean": [Interval(Real, None, None, closed="neither")],
        "prior_var": [Interval(Real, 0, None, closed="neither")],
        "noise_var": [Interval(Real, 0, None, closed="neither")],
        "method": [StrOptions({"sti", "exact", "sgais", "ais"})],
        "reference": [StrOptions({"laplace", "prior"})],
        **STI_PARAMETER_CONSTRAINTS,
        **SGAIS_PARAMETER_CONSTRAINTS,
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
        temperatures=STI_DEFAULTS["temperatures"],
        ladder=STI_DEFAULTS["ladder"],
        n_samples=STI_DEFAULTS["n_samples"],
        n_burnin=STI_DEFAULTS["n_burnin"],
        batch_size=STI_DEFAULTS["batch_size"],
        sampler=STI_DEFAULTS["sampler"],
        step_size=STI_DEFAULTS["step_size"],
        step_decay=STI_DEFAULTS["step_decay"],
        n_particles=SGAIS_DEFAULTS["n_particles"],
        target_ess=SGAIS_DEFAULTS["target_ess"],
        chunk_size=SGAIS_DEFAULTS["chunk_size"],
        n_steps=SGAIS_DEFAULTS["n_steps"],
        learning_rate=SGAIS_DEFAULTS["learning_rate"],
        resample=SGAIS_DEFAULTS["resample"],
        reservoir_size=SGAIS_DEFAULTS["reservoir_size"],
        random_state=None,
        verbose=0,
    ):
        self.n_components = n_components
        self.prior_mean = prior_mean
        self.prior_var = prior_var
        self.noise_var = noise_var
        self.method = method
        self.reference = reference
        self.temperatures = temperatures
        self.ladder = ladder
        self.n_samples = n_samples
        self.n_burnin = n_burnin
        self.batch_size = batch_size
        self.sampler = sampler
        self.step_size = step_size
        self.step_decay = step_decay
        self.n_particles = n_particles
        self.target_ess = target_ess
        self.chunk_size = chunk_size
        self.n_steps = n_steps
        self.learning_rate = learning_rate
        self.resample = resample
        self.reservoir_size = reservoir_size
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
