"""What the rank selectors share: check the ranks, search them, expose the result."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from ._factorisation import check_ranks_supported
from .search import EvidenceGridSearch

__all__ = ["SELECTOR_DEFAULTS", "RankSelectorMixin", "selector_constraints"]

#: Where the rank selectors' defaults differ from their models': log-space SGLD is the
#: sampler whose evidences agree with the closed form and with Chib's method, and the
#: chains are longer (they approach equilibrium slowly as the temperature rises).
SELECTOR_DEFAULTS = dict(sampler="logsgld", n_samples=10000, n_burnin=4000)


def selector_constraints(model_class, passthrough):
    """The ``_parameter_constraints`` of a selector of ``model_class`` passing ``passthrough`` on."""
    return {
        "ranks": ["array-like"],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "error_score": [StrOptions({"raise"}), Real],
        "memory": EvidenceGridSearch._parameter_constraints["memory"],
        **{k: v for k, v in model_class._parameter_constraints.items() if k in passthrough},
    }


class RankSelectorMixin:
    """An :class:`EvidenceGridSearch` over one rank parameter of a model estimator.

    Subclasses set

    - ``_model_class``, the estimator of one rank;
    - ``_rank_param``, the name of its rank parameter;
    - ``_passthrough``, the selector parameters handed to every model unchanged;

    and the model class implements ``_rank_limit(X)`` returning ``(largest
    rank, why)``, checked by :func:`check_ranks_supported` here and in the model's ``fit``. Their
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

    def _search_ranks(self, X):
        """Fit a model of every rank on ``X``; set the fitted attributes."""
        X = self._model_class._validate_input(self, X, reset=True)
        ranks = self._check_ranks(X)
        base = self._model_class(
            **{name: getattr(self, name) for name in self._passthrough}, verbose=max(0, self.verbose - 1)
        )
        search = EvidenceGridSearch(
            base,
            {self._rank_param: [int(r) for r in ranks]},
            n_jobs=self.n_jobs,
            error_score=self.error_score,
            verbose=self.verbose,
            memory=self.memory,
        ).fit(X)
        results = search.cv_results_
        self.cv_results_ = results
        self.ranks_ = ranks
        self.log_evidence_ = results["mean_test_score"]
        self.log_evidence_std_ = results["std_log_evidence"]
        self.model_probabilities_ = results["model_probability"]
        self.errors_ = {int(r): e for r, e in zip(ranks, results["error"]) if e}
        self.best_estimator_ = search.best_estimator_
        self.best_rank_ = int(search.best_params_[self._rank_param])
        name = self._model_class._fitted_factors
        setattr(self, name, getattr(self.best_estimator_, name))
        return self

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
