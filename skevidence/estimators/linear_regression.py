"""Estimator for Bayesian linear regression with known noise."""

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ..models import LinearGaussian
from ._base import (
    SGAIS_DEFAULTS,
    SGAIS_PARAMETER_CONSTRAINTS,
    STI_DEFAULTS,
    STI_PARAMETER_CONSTRAINTS,
    EvidenceEstimatorMixin,
    ExactEvidenceMixin,
)
from ._online import OnlineEvidenceMixin

__all__ = ["BayesianLinearRegression"]


class BayesianLinearRegression(
    OnlineEvidenceMixin, ExactEvidenceMixin, EvidenceEstimatorMixin, RegressorMixin, BaseEstimator
):
    r"""Linear regression scored by its evidence (Cameron et al. 2019b, section 4.1).

    .. math::
        w_j, b \sim \mathcal{N}(0, \sigma_w^2), \qquad
        y_n \mid x_n, w, b \sim \mathcal{N}(w^T x_n + b, \sigma^2),

    with the noise variance :math:`\sigma^2` known. ``fit`` estimates
    :math:`\log p(y \mid X)` and the exact posterior of ``(w, b)``; ``predict``
    returns the posterior-mean prediction. Unlike other regressors, ``score``
    returns the **log-evidence**, not :math:`R^2`, so that searches rank
    models by it. With ``method="sgais"``, ``partial_fit`` updates both from
    new data only (online evidence).

    Read more in the :ref:`User Guide <evidence>`.

    Parameters
    ----------
    noise_var : float, default=1.0
        Noise variance :math:`\sigma^2 > 0`.
    fit_intercept : bool, default=True
        Whether to include the intercept ``b``.
    prior_var : float, default=1.0
        Prior variance :math:`\sigma_w^2` of the weights and intercept (the
        paper's standard normal prior is ``1``).
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
        model is Gaussian). ``"prior"``: the papers' path from the prior,
        whose pSGLD chains were measured 4-7 nats low on 5000 rows.
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
        SGAIS: keep a uniform reservoir of this many past rows for the
        minibatches instead of all of them (bounded memory for streams).
    random_state : int, RandomState instance or None, default=None
        Seed of the sampler; an int makes ``fit`` reproducible.
    verbose : int, default=0
        Progress reporting.

    Attributes
    ----------
    log_evidence_ : float
        Estimated :math:`\log p(y \mid X)` of the training data.
    log_evidence_std_ : float
        Its Monte-Carlo standard error (0 for ``method="exact"``).
    result_ : EvidenceResult
        The full record of the estimate.
    log_evidence_path_ : ndarray of shape (n_chunks,)
        ``method="sgais"`` only: the log-evidence of the data seen after
        every chunk (``result_.diagnostics["n_seen"]`` holds their counts).
    n_samples_seen_ : int
        ``method="sgais"`` only: number of samples seen by ``fit`` and
        ``partial_fit``.
    coef_ : ndarray of shape (n_features,)
        Posterior mean of ``w``.
    intercept_ : float
        Posterior mean of ``b`` (0 without an intercept).
    posterior_cov_ : ndarray of shape (n_params, n_params)
        Posterior covariance of ``(w, b)``.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` has string column names.

    See Also
    --------
    skevidence.models.LinearGaussian : The model behind this estimator.
    sklearn.linear_model.BayesianRidge : Evidence-maximising ridge regression.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence import BayesianLinearRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = X @ [1.0, -2.0, 0.5] + 0.3 + rng.normal(scale=0.5, size=200)
    >>> reg = BayesianLinearRegression(noise_var=0.25, method="exact").fit(X, y)
    >>> np.round(reg.coef_, 1)
    array([ 1. , -2. ,  0.5])

    The evidence of a stream, updated online:

    >>> online = BayesianLinearRegression(noise_var=0.25, method="sgais", random_state=0)
    >>> for start in range(0, 200, 50):
    ...     online = online.partial_fit(X[start:start + 50], y[start:start + 50])
    >>> bool(abs(online.log_evidence_ - reg.log_evidence_) < 4 * online.log_evidence_std_ + 1)
    True
    """

    _supervised = True

    _parameter_constraints = {
        "noise_var": [Interval(Real, 0, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "prior_var": [Interval(Real, 0, None, closed="neither")],
        "method": [StrOptions({"sti", "exact", "sgais", "ais"})],
        "reference": [StrOptions({"laplace", "prior"})],
        **STI_PARAMETER_CONSTRAINTS,
        **SGAIS_PARAMETER_CONSTRAINTS,
    }

    def __init__(
        self,
        noise_var=1.0,
        fit_intercept=True,
        method="sti",
        *,
        prior_var=1.0,
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
        self.noise_var = noise_var
        self.fit_intercept = fit_intercept
        self.method = method
        self.prior_var = prior_var
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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # score is a log-evidence, not R^2: the "score > 0.5" check does not apply.
        tags.regressor_tags.poor_score = True
        return tags

    def _make_model(self, X):
        return LinearGaussian(X.shape[1], self.noise_var, self.prior_var, self.fit_intercept)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Estimate the evidence of ``y`` given ``X`` and the posterior of ``(w, b)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        X, y = self._validate_fit_data(X, y, reset=True)
        model = self._fit_evidence(X, y)
        mean, self.posterior_cov_ = model.posterior(X, y)
        self._set_coefficients(mean)
        # The posterior's sufficient statistics, for partial_fit to continue from.
        self._moments = model.moments(X, y)
        return self

    def _set_coefficients(self, mean):
        n = self.n_features_in_
        self.coef_ = mean[:n]
        self.intercept_ = float(mean[n]) if self.fit_intercept else 0.0

    def _partial_fit_update(self, X, y, first):
        """Exact posterior of all data seen, from summed sufficient statistics."""
        model = self._make_model(X)
        gram, moment = model.moments(X, y)
        if not first:
            gram, moment = gram + self._moments[0], moment + self._moments[1]
        self._moments = (gram, moment)
        mean, self.posterior_cov_ = model.posterior_from_moments(gram, moment)
        self._set_coefficients(mean)

    def predict(self, X):
        """Posterior-mean prediction :math:`E[w]^T x + E[b]`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.coef_ + self.intercept_
