"""Choose the rank of a Poisson NMF by the evidence."""

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._docs import fill_doc
from ._factorisation import CP_PARAMETERS
from ._rank_selector import SELECTOR_KEYWORDS, SELECTOR_POSITIONAL, RankSelectorMixin, rank_selector
from ._signature import shared_parameters
from .poisson_nmf import PoissonNMF

__all__ = ["BayesianNMFRankSelector"]


@fill_doc
@rank_selector
@shared_parameters(CP_PARAMETERS, SELECTOR_KEYWORDS, positional=SELECTOR_POSITIONAL)
class BayesianNMFRankSelector(RankSelectorMixin, TransformerMixin, BaseEstimator):
    """Select the rank of a Bayesian NMF (Poisson, exponential or Gamma entries) by its evidence.

    Fits :class:`PoissonNMF` for every rank in ``ranks`` on all the data (an
    :class:`EvidenceGridSearch` over ``n_components``, ranks in parallel with
    joblib), and keeps the rank of largest log-evidence. Posterior
    probabilities of the ranks under a uniform prior come with it, so a
    near-tie is visible as such. A rank whose fit fails is recorded in
    ``errors_`` and scored ``error_score``; the others are kept.

    Read more in the :ref:`User Guide <nmf>`.

    Parameters
    ----------
    ranks : sequence of int, default=(1, 2, 4, 8, 16)
        Candidate ranks; each at least 1 and at most ``min(n_samples, n_features)``.
    prior_rate : float or "auto", default=1.0
        Rate of the exponential priors (see :class:`PoissonNMF`); ``"auto"``
        follows the data's scale, rank by rank.
    method : {"sti", "chib", "smc"}, default="sti"
        Evidence method (see the model estimator).
    %(reference_parameters)s
    %(search_parameters)s
    sampler : {"logsgld", "psgld", "sgld"} or Sampler, default="logsgld"
        SG-MCMC update rule of every rank's chains (see :class:`PoissonNMF`).
        The default differs from :class:`PoissonNMF`'s (the papers' pSGLD):
        log-space SGLD is the one whose evidences agree with the closed form
        and with Chib's method, while pSGLD can stall near zero and fall
        hundreds of nats low (read the :ref:`accuracy notes <nmf>`).
    %(selector_chain_parameters)s
    likelihood, likelihood_shape
        The density of an entry given :math:`WH` (see :class:`PoissonNMF`):
        ``likelihood="exponential"`` with ``prior_rate="auto"`` on a power
        spectrogram chooses a rank that does not depend on the recording's level.
    n_blocks, prior_rate_h, temperatures, ladder, step_size, step_decay, \
n_gibbs, n_gibbs_burnin, n_reduced, n_particles, n_smc_runs
        Passed to every :class:`PoissonNMF` (see there).
    %(failure_parameters)s

    Attributes
    ----------
    %(selector_attributes)s
    best_estimator_ : PoissonNMF
        The fitted model of rank `best_rank_`.
    components_ : ndarray of shape (`best_rank_`, n_features)
        Its posterior-mean ``H``.
    n_features_in_ : int
        Number of features seen during ``fit``.

    See Also
    --------
    PoissonNMF : The model of one rank.
    EvidenceGridSearch : The general search.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence import BayesianNMFRankSelector
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(5 * rng.exponential(size=(40, 2)) @ rng.exponential(size=(2, 30)))
    >>> sel = BayesianNMFRankSelector(ranks=(1, 2, 3), temperatures=5, n_samples=600,
    ...                               n_burnin=300, random_state=0).fit(X)
    >>> int(sel.best_rank_)
    2
    """

    _model_class = PoissonNMF
    _rank_param = "n_components"

    def __init__(
        self,
        ranks=(1, 2, 4, 8, 16),
        *,
        likelihood="poisson",
        likelihood_shape=1.0,
        prior_rate_h=None,
    ):
        self.ranks = ranks
        self.likelihood = likelihood
        self.likelihood_shape = likelihood_shape
        self.prior_rate_h = prior_rate_h

    def transform(self, X):
        """Activations of ``X`` under the best model (see :meth:`PoissonNMF.transform`).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Non-negative data with the features of the fitted data.

        Returns
        -------
        W : ndarray of shape (n_samples, `best_rank_`)
        """
        check_is_fitted(self)
        return self.best_estimator_.transform(X)

    def get_feature_names_out(self, input_features=None):
        """Output feature names ``bayesiannmfrankselector0``, ...

        Parameters
        ----------
        input_features : None
            Ignored.

        Returns
        -------
        names : ndarray of str
        """
        check_is_fitted(self)
        return np.array([f"bayesiannmfrankselector{i}" for i in range(self.best_rank_)], dtype=object)
