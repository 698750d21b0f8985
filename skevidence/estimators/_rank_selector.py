"""What the rank selectors share: check the ranks, search them, expose the result."""

import inspect
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context, clone
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from .._config import DECISION_Z, SCREEN_TOL_FACTOR, SELECTOR_DEFAULTS, SELECTOR_VB_CHAIN
from ..evidence._result import ERROR_PIECES
from ._factorisation import check_ranks_supported
from .search import EvidenceGridSearch

__all__ = [
    "DECISION_Z",
    "SCREEN_TOL_FACTOR",
    "SELECTOR_DEFAULTS",
    "SELECTOR_KEYWORDS",
    "SELECTOR_POSITIONAL",
    "RankSelectorMixin",
    "rank_selector",
]


#: The parameters every rank selector takes after its ``ranks``, in order (its
#: own and its model's), and its keyword-only ones beyond its model's chain
#: settings; added to each selector's ``__init__`` by
#: :func:`~skevidence.estimators._signature.shared_parameters`.
SELECTOR_POSITIONAL = dict(prior_rate=1.0, method="sti", n_jobs=None, random_state=None, verbose=0)
SELECTOR_KEYWORDS = dict(n_blocks="auto", sampler=SELECTOR_DEFAULTS["sampler"], error_score=np.nan, memory=None)


def rank_selector(cls):
    """Class decorator: what a selector hands every model, derived from the two signatures.

    ``_passthrough`` is every parameter both the selector and its
    ``_model_class`` take, but ``verbose`` (the selector's own progress; its
    models get one level less); ``_parameter_constraints`` follow from it.
    Apply it after :func:`~skevidence.estimators._signature.shared_parameters`,
    whose groups it reads.
    """
    model = cls._model_class
    cls._passthrough = tuple(name for name in inspect.signature(cls).parameters
                             if name in inspect.signature(model).parameters and name != "verbose")
    cls._parameter_constraints = {
        "ranks": ["array-like"],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "error_score": [StrOptions({"raise"}), Real],
        "memory": EvidenceGridSearch._parameter_constraints["memory"],
        **{k: v for k, v in model._parameter_constraints.items() if k in cls._passthrough},
    }
    return cls


def _in_the_running(scores, stds):
    """Which candidates are within ``DECISION_Z`` combined error bars of the best (failed ones are not)."""
    ok = np.isfinite(scores)
    if not ok.any():
        return ok
    best = int(np.argmax(np.where(ok, scores, -np.inf)))
    combined = np.sqrt(np.nan_to_num(stds, nan=0.0) ** 2 + np.nan_to_num(stds[best], nan=0.0) ** 2)
    return ok & (scores[best] - scores <= DECISION_Z * combined)


class RankSelectorMixin:
    """An :class:`EvidenceGridSearch` over one rank parameter of a model estimator.

    Subclasses set

    - ``_model_class``, the estimator of one rank;
    - ``_rank_param``, the name of its rank parameter;

    and are decorated by :func:`rank_selector`, which derives ``_passthrough``
    (the selector parameters handed to every model unchanged) and the
    constraints. The model class implements ``_rank_limit(X)`` returning ``(largest
    rank, why)``, checked by :func:`check_ranks_supported` here and in the model's ``fit``.
    ``fit`` calls :meth:`_search_ranks`, which validates ``X`` as the model
    does and copies the best model's ``_fitted_factors`` attribute.
    """

    _model_class = None
    _rank_param = None
    _passthrough = ()

    def __sklearn_tags__(self):
        # The selector takes what its model takes (sparse, non-negative, 3-D...).
        tags = super().__sklearn_tags__()
        tags.input_tags = self._model_class().__sklearn_tags__().input_tags
        return tags

    def _check_ranks(self, X):
        """The candidate ranks as an int array, or a ``ValueError`` naming what is wrong."""
        ranks = np.asarray(self.ranks)
        if ranks.ndim != 1 or ranks.size == 0:
            raise ValueError(f"ranks must be a non-empty 1-D sequence of integers, got {self.ranks!r}.")
        if not np.issubdtype(ranks.dtype, np.integer):
            if not (np.issubdtype(ranks.dtype, np.floating) and np.all(ranks == np.round(ranks))):
                raise ValueError(f"ranks must be integers, got {self.ranks!r}.")
            ranks = ranks.astype(np.int64)
        if np.any(ranks < 1):
            raise ValueError(f"every rank must be at least 1, got {ranks.tolist()}.")
        check_ranks_supported("ranks", ranks, *self._model_class._rank_limit(X))
        if np.unique(ranks).size != ranks.size:
            raise ValueError(f"ranks must not repeat, got {ranks.tolist()}.")
        return ranks

    def _base_model(self):
        params = {name: getattr(self, name) for name in self._passthrough}
        defaults = SELECTOR_DEFAULTS if params.get("reference") == "prior" else SELECTOR_VB_CHAIN
        for name in ("n_samples", "n_burnin"):
            if params.get(name) == "auto":
                params[name] = defaults[name]
        return self._model_class(**params, verbose=max(0, self.verbose - 1))

    def _search(self, base, ranks, X):
        return EvidenceGridSearch(
            base,
            {self._rank_param: [int(r) for r in ranks]},
            n_jobs=self.n_jobs,
            error_score=self.error_score,
            verbose=self.verbose,
            memory=self.memory,
        ).fit(X)

    def _search_ranks(self, X):
        """Fit a model of every rank on ``X``; set the fitted attributes.

        With an automatic budget (``reference="vb"`` and a ``tol``) every rank
        is first estimated by one round of its chains, with no tolerance (a
        screen: a rank far below the best is not worth a tolerance, and an
        over- or under-fitted rank can take long to reach one); then, at
        ``SCREEN_TOL_FACTOR * tol`` and with the tolerance halved pass after
        pass down to ``tol``, the ranks still in the running (within
        ``DECISION_Z`` combined error bars of the best) are estimated again,
        so the budget goes where the decision is open.
        ``cv_results_["tol"]`` is the tolerance each rank last ran at (``inf``
        for the screen alone) and ``cv_results_["within_tol"]`` whether its
        error bar is within ``tol``.
        """
        X = self._model_class._validate_input(self, X, reset=True)
        ranks = self._check_ranks(X)
        base = self._base_model()
        staged = self.method == "sti" and base.reference == "vb" and base.tol is not None and ranks.size > 1
        # The tolerances of the passes: the screen, then SCREEN_TOL_FACTOR * tol halved down to tol.
        if staged:
            levels = [np.inf] + [base.tol * SCREEN_TOL_FACTOR / 2**k
                                 for k in range(int(np.log2(SCREEN_TOL_FACTOR)) + 1)]
            # The last level again, should a rank enter the running late.
            levels += [levels[-1]] * ranks.size
        else:
            levels = [np.inf]
        rows, estimators = {}, {}
        reached = np.full(ranks.size, np.inf)
        fitted = np.zeros(ranks.size, dtype=bool)
        # Seconds of every rank's last fit. A refit repeats that run (same seed)
        # before it can lengthen, and lengthens only if twice the time spent is
        # within max_time: otherwise it would return the same estimate again.
        last_time = np.zeros(ranks.size)
        max_time = getattr(base, "max_time", None) if staged else None
        for level in levels:
            scores = np.array([rows[i]["log_evidence"] if i in rows and not rows[i]["error"] else np.nan
                               for i in range(ranks.size)])
            stds = np.array([np.nan_to_num(rows[i]["std"], nan=0.0) if i in rows else np.nan
                             for i in range(ranks.size)])
            # Every rank once; then the ranks still in the running whose error
            # bar is above this pass's tolerance. A rank that stopped short of
            # its last tolerance (max_time) would only repeat the same run.
            again = (stds > level) & (reached > level) & (stds <= reached)
            if max_time is not None:
                again &= 2.0 * last_time <= max_time
            todo = ~fitted | (_in_the_running(scores, stds) & again)
            todo = [int(i) for i in np.flatnonzero(todo)]
            if not todo:
                continue
            model = clone(base).set_params(tol=level if np.isfinite(level) else None) if staged else base
            search = self._search(model, ranks[todo], X)
            res = search.cv_results_
            for j, i in enumerate(todo):
                previous = rows.get(i)
                rows[i] = dict(
                    log_evidence=float(res["mean_test_score"][j]), std=float(res["std_log_evidence"][j]),
                    fit_time=float(res["mean_fit_time"][j]) + (previous["fit_time"] if previous else 0.0),
                    score_time=float(res["mean_score_time"][j]), error=res["error"][j], tol=level,
                    **{key: float(res[key][j]) for key in ERROR_PIECES},
                )
                estimators[i] = search.best_estimator_ if j == search.best_index_ else estimators.get(i)
                reached[i] = level
                fitted[i] = True
                last_time[i] = float(res["mean_fit_time"][j])
        params = [{self._rank_param: int(r)} for r in ranks]
        results = EvidenceGridSearch._format_evidence_results(params, [rows[i] for i in range(ranks.size)])
        results["tol"] = np.array([rows[i]["tol"] if staged else np.nan for i in range(ranks.size)])
        if base.tol is not None:
            results["within_tol"] = results["std_log_evidence"] <= base.tol
        self.cv_results_ = results
        self.ranks_ = ranks
        self.log_evidence_ = results["mean_test_score"]
        self.log_evidence_std_ = results["std_log_evidence"]
        self.model_probabilities_ = results["model_probability"]
        self.errors_ = {int(r): e for r, e in zip(ranks, results["error"]) if e}
        best = int(results["rank_test_score"].argmin())
        self.best_rank_ = int(ranks[best])
        if estimators.get(best) is None:
            # Only the best of each pass is kept; the overall best, refined
            # last in a pass with worse ranks only, is that pass's best.
            raise RuntimeError(f"internal error: the model of rank {self.best_rank_} was not kept.")
        self.best_estimator_ = estimators[best]
        self.decided_ = bool(np.sum(_in_the_running(self.log_evidence_, self.log_evidence_std_)) == 1)
        name = self._model_class._fitted_factors
        setattr(self, name, getattr(self.best_estimator_, name))
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the model of every rank and keep the one of largest evidence.

        Parameters
        ----------
        X : array-like or sparse
            Non-negative data, as the model's ``fit`` takes it (a matrix for
            :class:`~skevidence.PoissonNMF`, a tensor for :class:`~skevidence.PoissonPARAFAC`).
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted selector.
        """
        return self._search_ranks(X)

    def score(self, X, y=None):
        """Log-evidence of ``X`` under the best model (cached for the fitted data).

        Parameters
        ----------
        X : array-like or sparse
            Non-negative data, as ``fit`` takes it.
        y : None
            Ignored.

        Returns
        -------
        log_evidence : float
        """
        check_is_fitted(self)
        return self.best_estimator_.score(X)
