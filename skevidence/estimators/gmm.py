"""Estimator for the diagonal Gaussian mixture scored by its evidence."""

from numbers import Integral, Real

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.utils._param_validation import Interval, StrOptions

from .._config import GMM_SGAIS_DEFAULTS
from .._docstrings import fill_doc
from .._init_params import store_init_params
from ..models.gaussian_mixture import DiagonalGaussianMixture
from ._base import ContinuousEvidenceMixin
from ._methods import EVIDENCE_PARAMETER_CONSTRAINTS

__all__ = ["BayesianGMM", "relabel_particles"]

#: Rows per block when predicting, so that the (particles, rows, components,
#: features) intermediate stays small whatever the size of ``X``.
_PREDICT_ROWS = 4096
#: Passes of the relabelling (match to the weighted mean, recompute the mean).
_RELABEL_ITER = 10


def relabel_particles(model, particles, weights):
    r"""Permute each particle's components to agree with the others (undo label switching).

    The mixture likelihood is invariant under permutations of the
    components, so particles may carry the same components under different
    labels, and averaging them would mix components. Each particle is
    matched to a reference by the Hungarian algorithm on the cost
    :math:`\sum_j (\mu_{kj} - \bar\mu_{lj})^2 / \bar\sigma^2_{lj}
    + (\log\sigma^2_{kj} - \log\bar\sigma^2_{lj})^2`; the reference starts
    as the particle of largest weight and becomes the weighted mean of the
    relabelled particles, until no label changes (a few passes; Stephens
    2000 in spirit).

    Parameters
    ----------
    model : DiagonalGaussianMixture
        The model whose parameter layout the particles use.
    particles : ndarray of shape (M, n_params)
    weights : ndarray of shape (M,)
        Normalised weights.

    Returns
    -------
    relabelled : ndarray of shape (M, n_params)
    """
    eta, mu, s = model.unpack(particles)
    m, k = eta.shape
    ref_mu, ref_s = mu[np.argmax(weights)], s[np.argmax(weights)]
    perms = np.tile(np.arange(k), (m, 1))
    for _ in range(_RELABEL_ITER):
        # cost[i, a, b]: component a of particle i as reference component b.
        cost = ((mu[:, :, None] - ref_mu) ** 2 * np.exp(-ref_s) + (s[:, :, None] - ref_s) ** 2).sum(axis=-1)
        # Reference component b takes the particle's component new[i, b].
        new = np.array([np.argsort(linear_sum_assignment(c)[1]) for c in cost])
        converged = np.array_equal(new, perms)
        perms = new
        take = np.arange(m)[:, None], perms
        ref_mu = np.einsum("m,mkd->kd", weights, mu[take])
        ref_s = np.einsum("m,mkd->kd", weights, s[take])
        if converged:
            break
    return model.join(eta[take], mu[take], s[take])


@fill_doc
class BayesianGMM(ContinuousEvidenceMixin, DensityMixin, BaseEstimator):
    r"""Gaussian mixture with diagonal covariances, scored by its evidence (Cameron et al. 2019b, section 4.3).

    .. math::
        \beta \sim \mathrm{Dirichlet}(\alpha), \quad
        \sigma^2_{kj} \sim \mathrm{InvGamma}(a, b), \quad
        \mu_{kj} \mid \sigma^2_{kj} \sim \mathcal{N}(0, \sigma^2_{kj}/\kappa), \quad
        x_n \mid \theta \sim \sum_k \beta_k\, \mathcal{N}(\mu_k, \mathrm{diag}\,\sigma^2_k).

    ``fit`` estimates :math:`\log p(X)` with the latent assignments summed
    out, by SGAIS (default), AIS or STI, and keeps the posterior particles.
    Comparing ``score`` (the log-evidence) across ``n_components``, e.g.
    with :class:`~skevidence.EvidenceGridSearch`, selects the number of
    components. With SGAIS, :meth:`partial_fit` adds data to the evidence
    without revisiting the old data.

    The priors are not scale-free: they expect data of roughly unit scale
    centred near zero (the defaults are those of Cameron et al. 2019b,
    :math:`\mu_{kj} \sim \mathcal{N}(0, 4\sigma^2_{kj})`,
    :math:`\sigma^2_{kj} \sim \mathrm{InvGamma}(1, 1)`); standardise the
    features first (:class:`~sklearn.preprocessing.StandardScaler`), or set
    the prior parameters to the scale of the data. Evidences of data on
    different scales are not comparable.

    Read more in the :ref:`User Guide <evidence>`.

    Parameters
    ----------
    n_components : int, default=1
        Number of components :math:`K`.
    method : {"sgais", "ais", "sti"}, default="sgais"
        How the evidence is computed: stochastic-gradient annealed importance
        sampling (:func:`~skevidence.sgais_log_evidence`), annealed importance
        sampling with full-data HMC (:func:`~skevidence.evidence.ais_log_evidence`),
        or stochastic thermodynamic integration from the prior
        (:func:`~skevidence.sti_log_evidence`).
    weight_concentration : float, default=1.0
        Dirichlet concentration :math:`\alpha` of the mixture weights.
    mean_precision : float, default=0.25
        :math:`\kappa`: a mean's prior variance is :math:`\sigma^2_{kj}/\kappa`.
    var_shape : float, default=1.0
        Shape :math:`a` of the inverse-gamma prior on the variances.
    var_scale : float, default=1.0
        Scale :math:`b` of the inverse-gamma prior on the variances.
    method_params : dict, default=None
        Keyword arguments of the function ``method`` runs; ``None`` keeps its
        defaults, except that for ``"sgais"`` this estimator's are
        ``n_particles`` 30, ``target_ess`` 24 and ``learning_rate`` 1.0
        (see Notes). See :meth:`fit`.
    %(seed_progress)s

    Attributes
    ----------
    %(evidence_attributes)s
    particles_ : ndarray of shape (n_particles, n_params)
        Posterior particles in the model's unconstrained layout
        ``(eta, mu, log sigma^2)`` (see
        :class:`~skevidence.models.DiagonalGaussianMixture`), relabelled so
        that a component has the same index in every particle.
        %(particles_source)s
    particle_weights_ : ndarray of shape (n_particles,)
        Their normalised importance weights.
    weights_ : ndarray of shape (n_components,)
        Posterior mean of the mixture weights.
    means_ : ndarray of shape (n_components, n_features)
        Posterior mean of the component means.
    covariances_ : ndarray of shape (n_components, n_features)
        Posterior mean of the component variances (diagonal covariances).
    %(features_in)s

    See Also
    --------
    skevidence.models.DiagonalGaussianMixture : The model behind this estimator.
    sklearn.mixture.BayesianGaussianMixture : Variational inference, no evidence.

    Notes
    -----
    **Label switching.** The posterior is symmetric under permutations of
    the components, so particles may label the same components differently.
    Before averaging, each particle's components are matched to a common
    reference by the Hungarian algorithm on the distance between means (in
    units of the reference's standard deviations) and log-variances, the
    reference being the weighted mean of the relabelled particles, refined
    until the labels settle (:func:`relabel_particles`). ``weights_``,
    ``means_``, ``covariances_`` and :meth:`predict_proba` use these labels.
    The evidence itself sums over all labellings and needs no relabelling.

    **SGAIS defaults.** 30 particles and a learning rate of 1.0, larger
    than the function's 10 and 0.1: with 10 particles the evidence of the
    true number of separated clusters is several nats low, more than that of
    a larger number; with 0.1 the SGHMC moves are too short for a mixture,
    the evidence at the true number of components is tens of nats low while
    larger numbers lose less, and the search over-selects.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence import BayesianGMM
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(-2, 0.5, size=(30, 2)), rng.normal(2, 0.5, size=(30, 2))])
    >>> gmm = BayesianGMM(n_components=2, random_state=0).fit(X)
    >>> np.round(np.sort(gmm.means_[:, 0]))
    array([-2.,  2.])
    >>> bool(gmm.predict(X[:1]) != gmm.predict(X[-1:]))
    True
    """

    _cost_params = ("n_components",)

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "method": [StrOptions({"sgais", "ais", "sti"})],
        "weight_concentration": [Interval(Real, 0, None, closed="neither")],
        "mean_precision": [Interval(Real, 0, None, closed="neither")],
        "var_shape": [Interval(Real, 0, None, closed="neither")],
        "var_scale": [Interval(Real, 0, None, closed="neither")],
        **EVIDENCE_PARAMETER_CONSTRAINTS,
    }

    _method_defaults = {"sgais": GMM_SGAIS_DEFAULTS}

    def __init__(self, n_components=1, method="sgais", *, weight_concentration=1.0, mean_precision=0.25, var_shape=1.0,
                 var_scale=1.0, method_params=None, random_state=None, verbose=0):
        store_init_params(self, locals())

    def _make_model(self, X):
        priors = ("weight_concentration", "mean_precision", "var_shape", "var_scale")
        return DiagonalGaussianMixture(X.shape[1], self.n_components, **{name: getattr(self, name) for name in priors})

    def _set_posterior(self, model, X, y, first):
        """Relabelled particles and the posterior means of the mixture parameters."""
        particles, weights = self._posterior_particles()
        self.particles_ = relabel_particles(model, particles, weights)
        self.particle_weights_ = weights
        w, mu, var = model.constrained(self.particles_)
        self.weights_ = weights @ w
        self.means_ = np.einsum("m,mkd->kd", weights, mu)
        self.covariances_ = np.einsum("m,mkd->kd", weights, var)

    def predict_proba(self, X):
        r"""Posterior probability of each component for each row.

        :math:`\sum_i w_i\, p(z_n = k \mid x_n, \theta^{(i)})` over the
        relabelled particles.

        Parameters
        ----------
        %(X_data)s

        Returns
        -------
        proba : ndarray of shape (n_samples, n_components)
        """
        return self._predict_blocks(
            X, lambda model, rows: model.responsibilities(self.particles_, rows, self.particle_weights_), _PREDICT_ROWS
        )

    def predict(self, X):
        """Most probable component of each row.

        Parameters
        ----------
        %(X_data)s

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        return np.argmax(self.predict_proba(X), axis=1)

    def score_samples(self, X):
        r"""Log posterior-predictive density of each row.

        :math:`\log \sum_i w_i\, p(x_n \mid \theta^{(i)})`, the particles'
        estimate of :math:`\log p(x_n \mid X_\text{train})`. Unlike
        :meth:`score` it does not re-estimate an evidence.

        Parameters
        ----------
        %(X_data)s

        Returns
        -------
        log_density : ndarray of shape (n_samples,)
        """
        def block(model, rows):
            log_lik = model.log_likelihood_particles(self.particles_, rows)
            return logsumexp(log_lik + np.log(self.particle_weights_)[:, None], axis=0)

        return self._predict_blocks(X, block, _PREDICT_ROWS)
