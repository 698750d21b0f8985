"""Estimator for Poisson NMF scored by its evidence."""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, _fit_context
from sklearn.utils import check_array
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._config import STI_DEFAULTS
from ..cp.model import auto_prior_rate, make_likelihood
from ..cp.model import PoissonNMFModel, check_count_matrix
from ._docs import fill_doc
from ._factorisation import (
    CP_PARAMETER_CONSTRAINTS,
    CP_PARAMETERS,
    CP_SAMPLER,
    CPEstimatorMixin,
)
from ._signature import shared_parameters

__all__ = ["PoissonNMF"]

#: Multiplicative updates of the row-wise MAP solve in ``transform``.
_TRANSFORM_ITER = 200


def _gamma_map_activations(X, H, lam_w, kappa):
    r"""Row-wise MAP ``W`` of the Gamma likelihood with ``H`` fixed: the Itakura–Saito multiplicative updates.

    The objective :math:`\kappa\sum(\log V + X/V) + \lambda_w\sum W` is
    split into the positive and negative parts of its gradient; the exponent
    1/2 makes the updates decrease it (Févotte and Idier 2011).
    """
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    tiny = np.finfo(np.float64).tiny
    # A start whose WH has the data's mean.
    W = np.full((X.shape[0], H.shape[0]), max(float(X.mean()), tiny) / max(H.shape[0] * float(H.mean()), tiny))
    for _ in range(_TRANSFORM_ITER):
        V = np.maximum(W @ H, tiny)
        W *= np.sqrt((kappa * (X / V**2) @ H.T) / (kappa * (1.0 / V) @ H.T + lam_w))
    return W


@fill_doc
@shared_parameters(CP_PARAMETERS, random_state=None, verbose=0)
class PoissonNMF(CPEstimatorMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    r"""Poisson NMF with exponential priors, scored by its evidence.

    .. math::
        W_{ir} \sim \mathcal{E}(\lambda_w), \quad H_{rj} \sim \mathcal{E}(\lambda_h), \quad
        X_{ij} \sim \mathcal{PO}\Big(\sum_r W_{ir} H_{rj}\Big)

    (Şimşekli et al. 2016, eq. 13), with scikit-learn's orientation: ``X``
    of shape ``(n_samples, n_features)`` :math:`\approx`
    ``transform(X) @ components_``.
    ``fit`` estimates :math:`\log p(X)` by STI, running each temperature's
    chain in one call of a block-parallel numba kernel, or by Chib's method
    (``method="chib"``, integer counts only). Sparse input costs
    :math:`O(\mathrm{nnz}\,R)` per iteration.

    Read more in the :ref:`User Guide <nmf>`.

    Parameters
    ----------
    n_components : int, default=1
        Rank :math:`R`.
    prior_rate : float or "auto", default=1.0
        Rate :math:`\lambda_w` of the exponential prior on ``W`` (and on
        ``H`` unless ``prior_rate_h`` is given). ``"auto"`` follows the
        scale of the data being scored: :math:`\lambda = \sqrt{R / \bar x}`,
        so that the prior mean of :math:`WH` is the data's mean at every rank
        (:func:`~skevidence.models.auto_prior_rate`; with the exponential or
        Gamma likelihood, scaling ``X`` by :math:`c` then shifts every rank's
        log-evidence by the same :math:`-IJ\log c`). The rates used are
        ``prior_rates_``.
    method : {"sti", "chib", "smc"}, default="sti"
        STI (:func:`~skevidence.sti_log_evidence`), Chib's method
        (:func:`~skevidence.evidence.chib_log_evidence_nmf`) or the
        exact-kernel SMC over count arrivals
        (:func:`~skevidence.evidence.smc_log_evidence`, integer counts only),
        the reference the others are measured against.
    %(reference_parameters)s
    n_blocks : int or "auto", default="auto"
        Row and column groups :math:`B` of the block-parallel sampler;
        ``"auto"`` is ``min(5, n_samples, n_features)``.
    sampler : {"logsgld", "psgld", "sgld"} or Sampler, default="logsgld"
        SG-MCMC update rule. ``"logsgld"`` (SGLD on :math:`\log W, \log H`
        with a fixed data-given preconditioner) is the one that agrees with
        the closed-form rank-1 evidence; see the user guide.
    likelihood : {"poisson", "exponential", "gamma"}, default="poisson"
        Density of an entry given its mean :math:`V = WH`. ``"poisson"`` is
        the papers' model of counts. ``"exponential"`` reads ``X`` as a power
        spectrogram :math:`|\mathrm{STFT}|^2`, Exponential of mean
        :math:`V` (the composite Gaussian model, whose maximum likelihood is
        Itakura–Saito NMF; Févotte, Bertin and Durrieu 2009): a density of
        real values, so the chosen rank does not depend on the recording's
        level. ``"gamma"``: Gamma of shape ``likelihood_shape`` and mean
        :math:`V` (powers averaged over frames or channels). The exponential
        and Gamma likelihoods are estimated by STI only (``method="sti"``):
        referenced TI from a Laplace reference (``reference="vb"``) or the
        papers' path from the prior (``reference="prior"``, the fused
        SG-MCMC kernels on dense blocks).
    likelihood_shape : float, default=1.0
        Shape :math:`\kappa` of the Gamma likelihood (``likelihood="gamma"``).
    prior_rate_h : float or None, default=None
        Rate :math:`\lambda_h` of the prior on ``H``; ``None`` means ``prior_rate``.
    %(sti_parameters)s
    batch_size : int, default=250
        Not used by the block sampler (its minibatch is a part); kept for a
        uniform interface.
    %(step_and_chib_parameters)s

    Attributes
    ----------
    %(evidence_attributes)s
    components_ : ndarray of shape (n_components, n_features)
        Posterior mean of ``H`` (at :math:`t = 1` for STI).
    prior_rates_ : tuple of float
        The prior rates :math:`(\lambda_w, \lambda_h)` used (``"auto"`` resolved).
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` has string column names.

    See Also
    --------
    BayesianNMFRankSelector : Choose ``n_components`` by the evidence.
    sklearn.decomposition.NMF : Point-estimate NMF.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence import PoissonNMF
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(rng.exponential(size=(30, 2)) @ rng.exponential(size=(2, 20)))
    >>> nmf = PoissonNMF(n_components=2, temperatures=5, n_samples=400, n_burnin=200,
    ...                  random_state=0).fit(X)
    >>> nmf.components_.shape, nmf.transform(X).shape
    ((2, 20), (30, 2))
    """

    #: The fitted attribute a rank selector copies from its best model.
    _fitted_factors = "components_"
    _rank_param = "n_components"
    _cost_params = ("n_components",)

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "prior_rate": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "prior_rate_h": [Interval(Real, 0, None, closed="neither"), None],
        "likelihood": [StrOptions({"poisson", "exponential", "gamma"})],
        "likelihood_shape": [Interval(Real, 0, None, closed="neither")],
        **CP_PARAMETER_CONSTRAINTS,
    }

    def __init__(
        self,
        n_components=1,
        prior_rate=1.0,
        method="sti",
        n_blocks="auto",
        sampler=CP_SAMPLER,
        *,
        likelihood="poisson",
        likelihood_shape=1.0,
        prior_rate_h=None,
        batch_size=STI_DEFAULTS["batch_size"],
    ):
        self.n_components = n_components
        self.prior_rate = prior_rate
        self.method = method
        self.n_blocks = n_blocks
        self.sampler = sampler
        self.likelihood = likelihood
        self.likelihood_shape = likelihood_shape
        self.prior_rate_h = prior_rate_h
        self.batch_size = batch_size

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def _rates(self, X):
        """``(lambda_w, lambda_h)``; ``prior_rate="auto"`` is :func:`auto_prior_rate` of ``X``."""
        if self.prior_rate != "auto":
            return self.prior_rate, self.prior_rate if self.prior_rate_h is None else self.prior_rate_h
        auto = auto_prior_rate(X, self.n_components)
        if self.prior_rate_h is None:
            return auto, auto
        # The prior mean of WH still matches the data's: lambda_w lambda_h = auto^2.
        return auto * auto / self.prior_rate_h, self.prior_rate_h

    @staticmethod
    def _validate_input(estimator, X, reset):
        """``validate_data`` for a non-negative matrix; ``reset=None`` leaves ``estimator`` alone."""
        kwargs = dict(accept_sparse=("csr", "csc", "coo"), dtype=np.float64, ensure_non_negative=True)
        return check_array(X, **kwargs) if reset is None else validate_data(estimator, X, reset=reset, **kwargs)

    @staticmethod
    def _rank_limit(X):
        return min(X.shape), f"X has n_samples = {X.shape[0]} and n_features = {X.shape[1]}"

    def _validate_fit_data(self, X, y, reset):
        return self._validate_input(self, X, reset), None

    def _model(self, X, n_blocks):
        return PoissonNMFModel(self.n_components, *self._rates(X), n_blocks,
                               likelihood=make_likelihood(self.likelihood, self.likelihood_shape))

    def _chib_log_evidence(self, model, X):
        from dataclasses import replace

        from ..cp.chib import chib_log_evidence

        result = chib_log_evidence(X, model.n_components, model.prior_rates, **self._chib_params())
        # Its factors are mode by mode, W (I, R) and H.T (J, R); components_ is H (R, J).
        return replace(result, posterior_mean=model._own_layout(result.posterior_mean))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Estimate the evidence of ``X`` and the posterior mean of ``H``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Non-negative data (counts; or magnitudes, see the user guide).
            Duplicate entries of a sparse matrix are summed.
        %(fit_returns)s
        """
        self.components_ = np.asarray(self._fit_factors(X)[1], dtype=np.float64)
        return self

    def _fit_evidence(self, X, y=None):
        model = super()._fit_evidence(X, y)
        self.prior_rates_ = model.prior_rates
        return model

    def transform(self, X):
        """Row-wise MAP activations ``W`` with ``H = components_`` fixed.

        Each row is solved on its own (multiplicative updates of the
        penalised KL objective, or of the Itakura–Saito one for the
        exponential and Gamma likelihoods, a fixed number of iterations from
        a fixed start), so the result is deterministic and does not depend
        on the other rows.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Non-negative data.

        Returns
        -------
        W : ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self)
        X = check_count_matrix(self._validate_input(self, X, reset=False))
        H = self.components_
        lam_w = self.prior_rates_[0]
        if self.likelihood != "poisson":
            return _gamma_map_activations(X, H, lam_w, make_likelihood(self.likelihood, self.likelihood_shape).kappa)
        denom = H.sum(axis=1) + lam_w
        W = np.full((X.shape[0], H.shape[0]), 1.0)
        for _ in range(_TRANSFORM_ITER):
            V = W @ H
            np.maximum(V, np.finfo(np.float64).tiny, out=V)
            ratio = (X.multiply(1.0 / V)).toarray() if sp.issparse(X) else X / V
            W *= (ratio @ H.T) / denom
        return W
