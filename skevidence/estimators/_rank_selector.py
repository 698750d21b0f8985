"""What the rank selectors share: check the ranks, search them, expose the result."""

import inspect
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context, clone
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from .._config import DECISION_Z, SCREEN_TOL_FACTOR, SELECTOR_SCREEN
from ..evidence._result import ERROR_PIECES
from .search import EvidenceGridSearch

__all__ = ["RankSelectorMixin", "in_the_running", "selector_constraints"]


def selector_constraints(model_class, own):
    """A selector's ``_parameter_constraints``: its own and those of the model parameters it passes on."""
    return {
        "ranks": ["array-like"],
        "n_jobs": [Integral, None],
        "error_score": [StrOptions({"raise"}), Real],
        "memory": EvidenceGridSearch._parameter_constraints["memory"],
        **{name: model_class._parameter_constraints[name] for name in own if name != model_class._rank_param},
    }


def in_the_running(scores, stds):
    """Which candidates are within ``DECISION_Z`` combined error bars of the best (failed ones are not)."""
    ok = np.isfinite(scores)
    if not ok.any():
        return ok
    best = int(np.argmax(np.where(ok, scores, -np.inf)))
    combined = np.sqrt(np.nan_to_num(stds, nan=0.0) ** 2 + np.nan_to_num(stds[best], nan=0.0) ** 2)
    return ok & (scores[best] - scores <= DECISION_Z * combined)


class RankSelectorMixin:
    """An :class:`EvidenceGridSearch` over the rank of a model estimator.

    Subclasses set ``_model_class``; every parameter the selector shares with
    it (by name; ``verbose`` is the selector's own, its models get one level
    less) is handed to every model. ``fit`` validates ``X`` as the model does
    and copies the best model's fitted factors.
    """

    _model_class = None

    def __sklearn_tags__(self):
        # The selector takes what its model takes (sparse, non-negative, 3-D...).
        tags = super().__sklearn_tags__()
        tags.input_tags = self._model_class().__sklearn_tags__().input_tags
        return tags

    def _check_ranks(self):
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
        if np.unique(ranks).size != ranks.size:
            raise ValueError(f"ranks must not repeat, got {ranks.tolist()}.")
        return ranks

    def _base_model(self):
        model = self._model_class
        shared = set(inspect.signature(model).parameters) & set(inspect.signature(type(self)).parameters)
        params = {name: getattr(self, name) for name in shared - {"verbose"}}
        return model(**params, verbose=max(0, self.verbose - 1))

    def _search(self, base, ranks, X):
        return EvidenceGridSearch(
            base, {self._model_class._rank_param: [int(r) for r in ranks]}, n_jobs=self.n_jobs,
            error_score=self.error_score, verbose=self.verbose, memory=self.memory,
        ).fit(X)

    def _search_ranks(self, X):
        """Fit a model of every rank on ``X``; set the fitted attributes.

        With ``method="rti"`` and a ``tol`` every rank is first estimated by
        a short round of its chains with no tolerance (a screen,
        ``SELECTOR_SCREEN`` unless ``method_params`` sets the chains); then,
        at ``SCREEN_TOL_FACTOR * tol`` and with the tolerance halved pass
        after pass down to ``tol``, the ranks still in the running (within
        ``DECISION_Z`` combined error bars of the best) are estimated again,
        so the budget goes where the decision is open.
        ``cv_results_["tol"]`` is the tolerance each rank last ran at (``inf``
        for the screen alone) and ``cv_results_["within_tol"]`` whether its
        error bar is within ``tol``.
        """
        X = self._model_class._validate_input(self, X, reset=True)
        ranks = self._check_ranks()
        base = self._base_model()
        if base.method == "rti":
            base.set_params(method_params={**SELECTOR_SCREEN, **(base.method_params or {})})
        staged = base.method == "rti" and base.tol is not None and ranks.size > 1
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
        # A refit repeats a rank's last run (same seed) before it lengthens it, and lengthens it only if twice
        # the time spent fits in max_time: otherwise it would return the same estimate again.
        last_time = np.zeros(ranks.size)
        max_time = base.method_params.get("max_time") if staged else None
        for level in levels:
            scores = np.array([rows[i]["log_evidence"] if i in rows and not rows[i]["error"] else np.nan
                               for i in range(ranks.size)])
            stds = np.array([np.nan_to_num(rows[i]["std"], nan=0.0) if i in rows else np.nan
                             for i in range(ranks.size)])
            # Every rank once; then the ranks still in the running whose error bar is above this pass's tolerance.
            again = (stds > level) & (reached > level) & (stds <= reached)
            if max_time is not None:
                again &= 2.0 * last_time <= max_time
            todo = [int(i) for i in np.flatnonzero(~fitted | (in_the_running(scores, stds) & again))]
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
        params = [{self._model_class._rank_param: int(r)} for r in ranks]
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
            # Only the best of each pass is kept; the overall best, refined last in a pass with worse ranks
            # only, is that pass's best.
            raise RuntimeError(f"internal error: the model of rank {self.best_rank_} was not kept.")
        self.best_estimator_ = estimators[best]
        self.decided_ = bool(np.sum(in_the_running(self.log_evidence_, self.log_evidence_std_)) == 1)
        name = self._model_class._fitted_factors
        setattr(self, name, getattr(self.best_estimator_, name))
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the model of every rank and keep the one of largest evidence.

        Parameters
        ----------
        X : array-like or sparse
            Non-negative data, as the model's ``fit`` takes it.
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted selector.
        """
        return self._search_ranks(X)

    def score(self, X, y=None):
        """Log-evidence of ``X`` under the best model: its ``score`` (cached for the fitted data)."""
        check_is_fitted(self)
        return self.best_estimator_.score(X)
