"""Bayesian NMF (Poisson, exponential or Gamma entries) scored by its evidence."""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._config import DEFAULT_TOL
from .._docstrings import fill_doc
from .._init_params import store_init_params
from ..cp.likelihood import LIKELIHOODS, likelihood_kappa
from ..cp.model import auto_prior_rate
from ._factorisation import CP_PARAMETER_CONSTRAINTS, CPEstimatorMixin
from .semi_supervised_nmf import _TINY, _multiplier

__all__ = ["PoissonNMF"]

#: Multiplicative updates of the row-wise MAP solve in ``transform``.
_TRANSFORM_ITER = 200


def _map_activations(X, H, lam_w, kappa):
    r"""Row-wise MAP ``W`` with ``H`` fixed, by multiplicative updates from a start of each row's own.

    Poisson: the penalised KL updates; Gamma of shape :math:`\kappa`: the
    Itakura–Saito ones of rate :math:`\lambda_w / \kappa`, the objective
    :math:`\kappa\sum(\log V + X/V) + \lambda_w\sum W` divided by :math:`\kappa`
    (Févotte and Idier 2011); either is the ``W`` step of
    :class:`SemiSupervisedNMF`'s updates.
    """
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    likelihood, rate = ("poisson", lam_w) if kappa == 0.0 else ("exponential", lam_w / kappa)
    # A start whose WH has the row's mean.
    W = np.maximum(X.mean(axis=1, keepdims=True), _TINY) / max(float(H.sum(axis=0).mean()), _TINY) * np.ones(len(H))
    for _ in range(_TRANSFORM_ITER):
        W *= _multiplier(X, np.maximum(W @ H, _TINY), H, rate, likelihood)
    return W


@fill_doc
class PoissonNMF(CPEstimatorMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    r"""Bayesian NMF with exponential priors, scored by its evidence.

    .. math::
        W_{ir} \sim \mathcal{E}(\lambda_w), \quad H_{rj} \sim \mathcal{E}(\lambda_h), \quad
        X_{ij} \sim p\Big(x \,\Big|\, \sum_r W_{ir} H_{rj}\Big)

    with Poisson entries (Şimşekli et al. 2016, eq. 13), or exponential or
    Gamma entries of that mean (``likelihood``), in scikit-learn's
    orientation: ``X`` of shape ``(n_samples, n_features)`` :math:`\approx`
    ``transform(X) @ components_``. ``fit`` estimates :math:`\log p(X)` by
    ``method``. Any rank is a proper model, also above ``min(X.shape)``.

    Read more in the :ref:`User Guide <nmf>`.

    Parameters
    ----------
    n_components : int, default=1
        Rank :math:`R`.
    prior_rate : float or "auto", default=1.0
        Rate :math:`\lambda_w` of the exponential prior on ``W`` (and on
        ``H`` unless ``prior_rate_h`` is given). ``"auto"`` follows the
        scale of the data: :math:`\lambda = \sqrt{R / \bar x}`, so that the
        prior mean of :math:`WH` is the data's mean at every rank
        (:func:`~skevidence.cp.auto_prior_rate`; with the exponential or Gamma
        likelihood, scaling ``X`` by :math:`c` then shifts every rank's
        log-evidence by the same :math:`-IJ\log c`).
    prior_rate_h : float or None, default=None
        Rate :math:`\lambda_h` of the prior on ``H``; ``None`` means ``prior_rate``.
    likelihood : {"poisson", "exponential", "gamma"}, default="poisson"
        Density of an entry given its mean :math:`V = WH`. ``"poisson"``:
        counts, the papers' model. ``"exponential"``: ``X`` is a power
        spectrogram :math:`|\mathrm{STFT}|^2` (the composite Gaussian model,
        whose maximum likelihood is Itakura–Saito NMF; Févotte, Bertin and
        Durrieu 2009), a density of real values, so the chosen rank does not
        depend on the recording's level. ``"gamma"``: Gamma of shape
        ``likelihood_shape`` (powers averaged over frames or channels).
        ``method="smc"`` and ``"chib"`` are Poisson only.
    likelihood_shape : float, default=1.0
        Shape :math:`\kappa` of the Gamma likelihood.
    noise_floor : float, default=0.0
        The exponential and Gamma likelihoods' known noise floor :math:`f`, in
        the units of ``X``: an entry's mean is :math:`(WH)_{ij} + f`. Every
        recording has one (a 16-bit PCM file the power of its quantisation
        noise, :class:`~skevidence.audio.SpectrogramTransformer`'s
        ``noise_floor_``); without it, near-silent entries weigh as much as
        the loud ones and exact zeros, whose density grows without bound as
        :math:`WH \to 0`, are refused.
    method : {"rti", "sti", "smc", "chib"}, default="rti"
        What estimates the evidence (:mod:`skevidence.cp`): ``"rti"``,
        thermodynamic integration referenced from a fit of the posterior with
        Metropolis-adjusted HMC, whose error bar covers the Monte-Carlo
        error, the chains' lag, the quadrature and the search for the best
        mode (:func:`~skevidence.cp.referenced_ti_log_evidence`); ``"sti"``,
        the papers' stochastic TI from the prior with block-parallel SGLD or
        pSGLD, whose error bar covers the Monte-Carlo error only
        (:func:`~skevidence.cp.sti_log_evidence`); ``"smc"``, the
        exact-kernel SMC over count arrivals, the reference the others are
        measured against (:func:`~skevidence.cp.smc_log_evidence`, integer
        counts); ``"chib"``, Chib's method
        (:func:`~skevidence.cp.chib_log_evidence`, integer counts).
    method_params : dict or None, default=None
        Settings of the method: keyword arguments of its function, documented
        there (for ``"rti"`` for example ``n_temperatures``, ``n_keep``,
        ``n_starts``, ``max_refinements``; for ``"sti"`` ``temperatures``,
        ``n_samples``, ``sampler``, ``n_blocks``). A key the method does not
        take raises a ``ValueError`` listing those it does.
    tol : float or None, default=1.0
        ``method="rti"``: the target error bar in nats (the chains are
        lengthened and the ladder refined until it is reached or the budget
        of ``method_params`` runs out, which a
        :class:`~sklearn.exceptions.ConvergenceWarning` reports); ``None`` runs
        one round. The other methods have budgets of their own.
    random_state : int, RandomState instance or None, default=None
        Seed; an int makes ``fit`` reproducible for any number of threads.
    verbose : int, default=0
        Progress reporting.

    Attributes
    ----------
    log_evidence_ : float
        Estimated :math:`\log p(X)`.
    log_evidence_std_ : float
        Its error bar (what it covers depends on ``method``, see there).
    result_ : EvidenceResult
        The full record of the estimate (``result_.method == method``).
    components_ : ndarray of shape (n_components, n_features)
        Posterior mean of ``H`` (Chib's method: its point).
    prior_rates_ : tuple of float
        The prior rates :math:`(\lambda_w, \lambda_h)` used (``"auto"`` resolved).
    %(features_in)s

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
    >>> nmf = PoissonNMF(n_components=2, random_state=0).fit(X)
    >>> nmf.components_.shape, nmf.transform(X).shape
    ((2, 20), (30, 2))
    >>> nmf.result_.method
    'rti'
    """

    #: The fitted attribute a rank selector copies from its best model.
    _fitted_factors = "components_"
    _rank_param = "n_components"
    _cost_params = ("n_components",)

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "prior_rate": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "prior_rate_h": [Interval(Real, 0, None, closed="neither"), None],
        "likelihood": [StrOptions(set(LIKELIHOODS))],
        "likelihood_shape": [Interval(Real, 0, None, closed="neither")],
        "noise_floor": [Interval(Real, 0, None, closed="left")],
        **CP_PARAMETER_CONSTRAINTS,
    }

    def __init__(self, n_components=1, prior_rate=1.0, *, prior_rate_h=None, likelihood="poisson",
                 likelihood_shape=1.0, noise_floor=0.0, method="rti", method_params=None, tol=DEFAULT_TOL,
                 random_state=None, verbose=0):
        store_init_params(self, locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def _prior_rates(self, X):
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
        """``validate_data`` for a non-negative matrix, dense or sparse (CSR)."""
        X = validate_data(estimator, X, reset=reset, accept_sparse=("csr", "csc", "coo"), dtype=np.float64,
                          ensure_non_negative=True)
        if sp.issparse(X):
            X = sp.csr_array(X)
            X.sum_duplicates()
        return X

    def _set_factors(self, factors):
        self.components_ = np.ascontiguousarray(factors[1].T)

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
        X = self._validate_input(self, X, reset=False)
        kappa = likelihood_kappa(self.likelihood, self.likelihood_shape)
        return _map_activations(X, self.components_, self.prior_rates_[0], kappa)
