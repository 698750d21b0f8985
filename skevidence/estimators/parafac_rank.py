"""Choose the rank of a Poisson PARAFAC by the evidence."""

import numpy as np
from sklearn.base import BaseEstimator

from .._config import DEFAULT_TOL
from .._init_params import store_init_params
from ._rank_selector import RankSelectorMixin, selector_constraints
from .poisson_parafac import PoissonPARAFAC

__all__ = ["PARAFACRankSelector"]


class PARAFACRankSelector(RankSelectorMixin, BaseEstimator):
    """Select the rank of a Poisson PARAFAC of a count tensor by its Bayesian evidence.

    Fits :class:`PoissonPARAFAC` for every rank in ``ranks`` on all the data
    (an :class:`EvidenceGridSearch` over ``rank``, ranks in parallel with
    joblib) and keeps the rank of largest log-evidence, with the posterior
    probabilities of the ranks under a uniform prior: the twin of
    :class:`BayesianNMFRankSelector` for three-way data such as sender ×
    receiver × week counts. A rank whose fit fails is recorded in ``errors_``
    and never chosen; the others are kept.

    The chosen rank depends on ``prior_rate`` (Nguyen et al. 2018 found ranks
    1, 9 and 33 on one tensor for rates 0.01, 1.8 and 3): search it jointly
    with :class:`EvidenceGridSearch` when there is no reason to fix it (read
    the :ref:`User Guide <parafac>`).

    Parameters
    ----------
    ranks : sequence of int, default=(1, 2, ..., 11)
        Candidate ranks, each at least 1.
    prior_rate : float or sequence of 3 floats, default=1.0
        Rate of the exponential priors (see :class:`PoissonPARAFAC`).
    method, method_params, tol, n_jobs, random_state, verbose, error_score, memory
        As for :class:`BayesianNMFRankSelector`; ``method`` and
        ``method_params`` are passed to every :class:`PoissonPARAFAC`.

    Attributes
    ----------
    ranks_, log_evidence_, log_evidence_std_, model_probabilities_, best_rank_, decided_, errors_, cv_results_
        As for :class:`BayesianNMFRankSelector`.
    best_estimator_ : PoissonPARAFAC
        The fitted model of rank `best_rank_`.
    factors_ : tuple of 3 ndarrays
        Its posterior-mean factors ``A``, ``B``, ``C``.
    n_features_in_ : int
        Size of the second mode of the tensor seen during ``fit``.

    See Also
    --------
    PoissonPARAFAC : The model of one rank.
    BayesianNMFRankSelector : The two-way twin.
    EvidenceGridSearch : The general search (e.g. over ``rank`` and ``prior_rate``).

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence import PARAFACRankSelector
    >>> rng = np.random.default_rng(0)
    >>> A, B, C = (3 * rng.exponential(size=(n, 2)) for n in (10, 8, 6))
    >>> X = rng.poisson(np.einsum("ir,jr,kr->ijk", A, B, C))
    >>> sel = PARAFACRankSelector(ranks=(1, 2, 3), random_state=0).fit(X)

    Rank 1 is thousands of nats below; an over-fitted third component costs
    little evidence on so small a tensor, and the two are not told apart:

    >>> [int(r) for r, s in zip(sel.ranks_, sel.cv_results_["status"]) if s != "out"]
    [2, 3]
    >>> sel.decided_
    False
    """

    _model_class = PoissonPARAFAC

    _parameter_constraints = selector_constraints(PoissonPARAFAC)

    def __init__(self, ranks=tuple(range(1, 12)), prior_rate=1.0, *, method="rti", method_params=None,
                 tol=DEFAULT_TOL, n_jobs=None, random_state=None, verbose=0, error_score=np.nan, memory=None):
        store_init_params(self, locals())
