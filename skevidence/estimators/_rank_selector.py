"""What the rank selectors share: check the ranks, choose among them, expose the result."""

import os
from numbers import Integral, Real

import joblib
import numpy as np
from sklearn.base import _fit_context, clone
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from .._config import RTI_DEFAULTS, SELECTOR_SCREEN
from ..cp.likelihood import likelihood_kappa
from ..cp.reference import as_data
from ..cp.rti import referenced_ti_log_evidence
from ..cp.select import decision, select_rank, standings
from ..evidence._result import ERROR_PIECES
from ._methods import method_kwargs
from .search import EvidenceGridSearch

__all__ = ["RankSelectorMixin", "selector_constraints"]

#: What the selector passes to every rank's referenced TI itself.
_OWN = ("likelihood", "likelihood_shape", "noise_floor", "tol", "random_state", "verbose", "n_jobs", "init")


def selector_constraints(model_class):
    """A selector's ``_parameter_constraints``: its own and those of every model parameter but the rank."""
    return {
        "ranks": ["array-like"],
        "n_jobs": [Integral, None],
        "error_score": [StrOptions({"raise"}), Real],
        "memory": EvidenceGridSearch._parameter_constraints["memory"],
        **{name: c for name, c in model_class._parameter_constraints.items() if name != model_class._rank_param},
    }


class RankSelectorMixin:
    """The rank of a model estimator chosen by the evidence.

    Subclasses set ``_model_class``; every parameter the selector shares with
    it (by name; ``verbose`` is the selector's own, its models get one level
    less) is handed to every model. With ``method="rti"`` the ranks are
    screened and the contenders refined until the choice is decided
    (:func:`~skevidence.cp.select.select_rank`); the other methods fit every
    rank once (an :class:`EvidenceGridSearch`). ``fit`` validates ``X`` as the
    model does and copies the best model's fitted factors.
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
        if ranks.ndim != 1 or ranks.size == 0 or ranks.dtype.kind not in "iuf" or np.any(ranks != np.round(ranks)):
            raise ValueError(f"ranks must be a non-empty 1-D sequence of integers, got {self.ranks!r}.")
        ranks = ranks.astype(np.int64)
        if np.any(ranks < 1):
            raise ValueError(f"every rank must be at least 1, got {ranks.tolist()}.")
        if np.unique(ranks).size != ranks.size:
            raise ValueError(f"ranks must not repeat, got {ranks.tolist()}.")
        return ranks

    def _model(self, rank=1):
        """The model estimator of rank ``rank`` with the selector's shared parameters."""
        model = self._model_class
        params = {name: getattr(self, name) for name in model._parameter_constraints
                  if name not in (model._rank_param, "verbose")}
        return model(**params, **{model._rank_param: int(rank)}, verbose=max(0, self.verbose - 1))

    def _select_rti(self, X, ranks):
        """Screen every rank, refine the contenders (:func:`~skevidence.cp.select.select_rank`).

        Returns the results and the fitted model of the best rank.
        """
        base = self._model()
        settings = {**RTI_DEFAULTS, **SELECTOR_SCREEN, **method_kwargs(base, referenced_ti_log_evidence, reserved=_OWN)}
        data = as_data(X, likelihood_kappa(base.likelihood, base.likelihood_shape), base.noise_floor)
        checkpoint = None
        if self.memory is not None:
            location = getattr(self.memory, "location", self.memory)
            key = joblib.hash((X, ranks, base.get_params(), self.random_state))
            os.makedirs(location, exist_ok=True)
            checkpoint = os.path.join(location, f"skevidence-rank-selection-{key}.pkl")
        runs, errors = select_rank(
            data, ranks.tolist(), lambda R: self._model(R)._prior_rates(X), tol=base.tol, settings=settings,
            n_jobs=(os.cpu_count() or 1) if self.n_jobs is None else joblib.effective_n_jobs(self.n_jobs),
            random_state=self.random_state, verbose=self.verbose, checkpoint=checkpoint,
        )
        if errors and self.error_score == "raise":
            raise RuntimeError(f"rank {ranks[min(errors)]} failed: {errors[min(errors)]}")
        values, bars, modes, lowers = standings(runs, errors)
        decided, status, _ = decision(ranks, values, bars, modes, lowers)
        rows, fitted = [], {}
        for i, run in enumerate(runs):
            failed = np.isnan(values[i])
            if not failed:
                # Only an open decision was meant to reach tol: no warning for a rank out, or a decided choice.
                fitted[i] = run.result(base.tol, base.likelihood, warn=not decided and status[i] != "out")
            rows.append(dict(
                log_evidence=float(self.error_score) if failed else values[i], std=bars[i], fit_time=run.time,
                score_time=0.0, error=errors.get(i, ""),
                **{key: np.nan if failed else float(fitted[i].diagnostics[key]) for key in ERROR_PIECES},
            ))
        results = EvidenceGridSearch._format_evidence_results(
            [{self._model_class._rank_param: r} for r in ranks.tolist()], rows)
        # The tolerance a rank was refined to: inf for a rank screened by one round and left there.
        results["tol"] = np.array([base.tol if base.tol is not None and (run.n_refinements > 0 or bar <= base.tol)
                                   else np.inf for run, bar in zip(runs, bars)], dtype=float)
        results["n_rounds"] = np.array([len(run.rounds) for run in runs])  # 0 where the brackets alone decided
        results["lower_bound"] = lowers
        best = int(results["rank_test_score"].argmin())
        model = clone(self._model(ranks[best]))
        return results, model._set_fitted(model._validate_input(model, X, reset=True), fitted[best])

    def _select_grid(self, X, ranks):
        """Every rank fitted once by the model's method (an :class:`EvidenceGridSearch`); the results and the
        best model."""
        search = EvidenceGridSearch(
            self._model(), {self._model_class._rank_param: ranks.tolist()}, n_jobs=self.n_jobs,
            error_score=self.error_score, verbose=self.verbose, memory=self.memory,
        ).fit(X)
        return {**search.cv_results_, "tol": np.full(len(ranks), np.nan)}, search.best_estimator_

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Choose the rank of ``X`` by the evidence; keep the model of that rank.

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
        X = self._model_class._validate_input(self, X, reset=True)
        ranks = self._check_ranks()
        select = self._select_rti if self.method == "rti" else self._select_grid
        results, self.best_estimator_ = select(X, ranks)
        self.decided_, results["status"], self.decision_ = decision(
            ranks, results["mean_test_score"], results["std_log_evidence"], results["mode_error"],
            results.get("lower_bound"))
        if self.tol is not None:
            results["within_tol"] = results["std_log_evidence"] <= self.tol
        self.cv_results_ = results
        self.ranks_ = ranks
        self.log_evidence_ = results["mean_test_score"]
        self.log_evidence_std_ = results["std_log_evidence"]
        self.model_probabilities_ = results["model_probability"]
        self.errors_ = {int(r): e for r, e in zip(ranks, results["error"]) if e}
        self.best_rank_ = int(ranks[results["rank_test_score"].argmin()])
        name = self._model_class._fitted_factors
        setattr(self, name, getattr(self.best_estimator_, name))
        return self

    def score(self, X, y=None):
        """Log-evidence of ``X`` under the best model: its ``score`` (cached for the fitted data)."""
        check_is_fitted(self)
        return self.best_estimator_.score(X)
