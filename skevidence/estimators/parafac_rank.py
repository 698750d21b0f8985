"""Choose the rank of a Poisson PARAFAC by the evidence."""

from sklearn.base import BaseEstimator

from ._docs import fill_doc
from ._factorisation import CP_PARAMETERS
from ._rank_selector import SELECTOR_KEYWORDS, SELECTOR_POSITIONAL, RankSelectorMixin, rank_selector
from ._signature import shared_parameters
from .poisson_parafac import PoissonPARAFAC

__all__ = ["PARAFACRankSelector"]


@fill_doc
@rank_selector
@shared_parameters(CP_PARAMETERS, SELECTOR_KEYWORDS, positional=SELECTOR_POSITIONAL)
class PARAFACRankSelector(RankSelectorMixin, BaseEstimator):
    """Select the rank of a Poisson PARAFAC of a count tensor by its Bayesian evidence.

    Fits :class:`PoissonPARAFAC` for every rank in ``ranks`` on all the data
    (an :class:`EvidenceGridSearch` over ``rank``, ranks in parallel with
    joblib) and keeps the rank of largest log-evidence, with the posterior
    probabilities of the ranks under a uniform prior. The twin of
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
        Candidate ranks; each at least 1 and at most ``min(IJ, IK, JK)``
        for an ``I × J × K`` tensor (every tensor is a sum of that many
        rank-one terms).
    prior_rate : float or sequence of 3 floats, default=1.0
        Rate of the exponential priors (see :class:`PoissonPARAFAC`).
    method : {"sti", "chib", "smc"}, default="sti"
        Evidence method (``"chib"`` and ``"smc"`` for integer tensors; see
        :class:`PoissonPARAFAC`).
    %(reference_parameters)s
    %(search_parameters)s
    sampler : {"logsgld", "psgld", "sgld"} or Sampler, default="logsgld"
        SG-MCMC update rule of every rank's chains. The default differs from
        :class:`PoissonPARAFAC`'s (the papers' pSGLD) for the reason given
        there: log-space SGLD is the one that agrees with the closed-form
        rank-1 evidence.
    %(selector_chain_parameters)s
    n_blocks, temperatures, ladder, step_size, step_decay, n_gibbs, \
n_gibbs_burnin, n_reduced, n_particles, n_smc_runs
        Passed to every :class:`PoissonPARAFAC` (see there).
    %(failure_parameters)s

    Attributes
    ----------
    %(selector_attributes)s
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
    >>> sel = PARAFACRankSelector(ranks=(1, 2, 3), temperatures=5, n_samples=1000,
    ...                           n_burnin=500, random_state=0).fit(X)
    >>> int(sel.best_rank_) in (2, 3)  # rank 1 is far behind; ranks 2 and 3 tie within their error bars
    True
    """

    _model_class = PoissonPARAFAC
    _rank_param = "rank"

    def __init__(self, ranks=tuple(range(1, 12))):
        self.ranks = ranks

