"""Choose the rank of a Bayesian NMF by the evidence."""

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from .._config import DEFAULT_TOL
from .._init_params import store_init_params
from ._rank_selector import RankSelectorMixin, selector_constraints
from .poisson_nmf import PoissonNMF

__all__ = ["BayesianNMFRankSelector"]


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
        Candidate ranks, each at least 1 (also above ``min(n_samples, n_features)``).
    prior_rate : float or "auto", default=1.0
        Rate of the exponential priors (see :class:`PoissonNMF`); ``"auto"``
        follows the data's scale, rank by rank.
    prior_rate_h, likelihood, likelihood_shape, noise_floor, method, method_params
        Passed to every :class:`PoissonNMF` (see there):
        ``likelihood="exponential"`` with ``prior_rate="auto"`` on a power
        spectrogram chooses a rank that does not depend on the recording's
        level. With ``method="rti"`` every rank is first bracketed (its
        log-evidence lies between its reference's bound and the integrand at
        the posterior, from a short chain); a rank whose bracket lies far
        below the best's is out, and the others are screened by a short
        round of one of their two ladders of chains (``n_burnin=50,
        n_keep=100`` unless ``method_params`` sets them); the best, and a
        rank refined, run the second.
    tol : float or None, default=1.0
        ``method="rti"``: after the screen, the ranks still within three
        combined error bars of the best are refined, one step a pass, until
        the best is three combined bars clear of every other or every
        contender's bar is within ``tol`` nats; ``None``: the screen alone.
    n_jobs : int, default=None
        ``method="rti"``: threads that run the ranks' pieces of work (every
        reference start, every ladder's runs of temperatures); other
        methods: ranks fitted in parallel. Results do not depend on it.
    random_state : int, RandomState instance or None, default=None
        Seed shared by every rank (common random numbers).
    verbose : int, default=0
        ``>= 1``: a line per finished rank; ``>= 2``: also per temperature.
    error_score : "raise" or float, default=np.nan
        Score of a rank whose fit fails (``"raise"`` propagates the error).
    memory : str, path-like or joblib.Memory, default=None
        Cache of finished ranks: an interrupted selection run again with the
        same ``memory`` resumes where it stopped (see :class:`EvidenceGridSearch`).

    Attributes
    ----------
    ranks_ : ndarray of shape (n_ranks,)
        The candidate ranks, in the order given.
    log_evidence_ : ndarray of shape (n_ranks,)
        Log-evidence of each rank (``error_score`` where it failed).
    log_evidence_std_ : ndarray of shape (n_ranks,)
        Their error bars.
    model_probabilities_ : ndarray of shape (n_ranks,)
        Posterior probability of each rank under a uniform prior over ``ranks``.
    best_rank_ : int
        The rank of largest evidence.
    decided_ : bool
        Whether every other rank is more than three combined error bars below
        it (its own bar without the mode-search piece: a better mode can only
        raise its evidence), or, with three error bars, below another rank's
        ``lower_bound``.
    errors_ : dict
        Rank -> error message, for the ranks whose fit failed.
    cv_results_ : dict
        The :class:`EvidenceGridSearch`-shaped results: every rank's
        log-evidence, error bar and its pieces, ``status`` ("chosen",
        "contender", "out" or "failed"), ``tol`` (the bar a rank was refined
        to, ``inf`` if it was not) and, with ``method="rti"``, ``n_rounds``
        (ladder rounds run: 0 for a rank out by its bracket alone, and for
        the chosen rank where the brackets alone decided) and
        ``lower_bound`` (what the log-evidence is above: the bracket's lower
        end less three times its Monte-Carlo error).
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
    >>> X = rng.poisson(5 * rng.exponential(size=(100, 2)) @ rng.exponential(size=(2, 80)))
    >>> sel = BayesianNMFRankSelector(ranks=(1, 2, 3), random_state=0).fit(X)
    >>> int(sel.best_rank_)
    2
    """

    _model_class = PoissonNMF

    _parameter_constraints = selector_constraints(PoissonNMF)

    def __init__(self, ranks=(1, 2, 4, 8, 16), prior_rate=1.0, *, prior_rate_h=None, likelihood="poisson",
                 likelihood_shape=1.0, noise_floor=0.0, method="rti", method_params=None, tol=DEFAULT_TOL,
                 n_jobs=None, random_state=None, verbose=0, error_score=np.nan, memory=None):
        store_init_params(self, locals())

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
