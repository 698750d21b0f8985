"""Model selection by the evidence: every candidate fitted on all the data."""

import math
import numbers
import os
import sys
import time
import warnings
from contextlib import closing

import numpy as np
from scipy.special import softmax
from scipy.stats import rankdata
from sklearn.base import clone
from sklearn.metrics import check_scoring
from sklearn.model_selection import ParameterGrid
from sklearn.model_selection._search import BaseSearchCV, _yield_masked_array_for_each_param
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_memory

from .._init_params import store_init_params
from .._progress import progress
from .._random import seed_sequence
from .._threads import dask_threads_per_task, numba_threads, task_threads, threads_per_task
from ..evidence._result import ERROR_PIECES, EvidenceResult

__all__ = ["EvidenceGridSearch", "evidence_of"]


def evidence_of(estimator):
    """``(log_evidence_, log_evidence_std_)`` of a fitted estimator, or ``None``.

    Looks through a :class:`~sklearn.pipeline.Pipeline` to its last step and
    through a fitted search to its ``best_estimator_``.
    """
    while True:
        if hasattr(estimator, "log_evidence_"):
            return estimator.log_evidence_, getattr(estimator, "log_evidence_std_", np.nan)
        if hasattr(estimator, "steps"):
            estimator = estimator.steps[-1][1]
        elif hasattr(estimator, "best_estimator_"):
            estimator = estimator.best_estimator_
        else:
            return None


def _fit_candidate(estimator, X, y, fit_params, n_threads, per_worker=None):
    """Fit one candidate on all the data; return it with its evidence and timings.

    Errors propagate, so that a :class:`joblib.Memory` cache of this function
    stores finished candidates only: a failed one is tried again on resume.
    The thread counts are left out of the cache key: results do not depend on them.
    The fit's warnings are returned (``"warnings"``, category and message) for
    the search to raise in the caller's process: a worker's warnings would
    otherwise go to the worker's stderr, out of reach of the caller's filters
    and of a notebook.
    """
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, numba_threads(task_threads(n_threads, per_worker)):
        warnings.simplefilter("always")
        estimator.fit(X, y, **fit_params)
    fit_time = time.perf_counter() - start
    start = time.perf_counter()
    found = evidence_of(estimator)
    if found is None:
        # Not an evidence estimator we know: trust its score to be a log-evidence.
        found = (estimator.score(X, y), np.nan)
    log_evidence, std = (float(v) for v in found)
    result = getattr(estimator, "result_", None)
    pieces = result.error_pieces if isinstance(result, EvidenceResult) else dict.fromkeys(ERROR_PIECES, np.nan)
    return dict(
        log_evidence=log_evidence, std=std, **pieces, fit_time=fit_time, score_time=time.perf_counter() - start,
        error="", estimator=estimator, warnings=[(w.category, str(w.message)) for w in caught],
    )


def _warn_again(category, message):
    """Raise a candidate's warning in this process: its category and message, as the fit raised it.

    A category that cannot be built from the message alone (keyword-only
    fields) becomes a ``UserWarning`` that names it.
    """
    try:
        warning = category(message)
    except Exception:
        warning = UserWarning(f"{category.__name__}: {message}")
    warnings.warn(warning, stacklevel=3)


def _fit_and_evaluate(index, fit, estimator, X, y, fit_params, error_score, n_threads, per_worker=None):
    """``(index, result)``: ``fit`` (:func:`_fit_candidate`, possibly cached) with a failure recorded as
    ``error_score``; the candidate's ``index`` comes back with it, as results arrive in any order."""
    start = time.perf_counter()
    try:
        return index, fit(estimator, X, y, fit_params, n_threads, per_worker)
    except Exception as exc:
        if error_score == "raise":
            raise
        return index, dict(
            log_evidence=error_score, std=np.nan, fit_time=time.perf_counter() - start, score_time=0.0,
            error=f"{type(exc).__name__}: {exc}", exception=exc, estimator=None,
        )


def _dispatch_order(estimator, candidate_params):
    """Indices of the candidates, costliest first (stable): the order to dispatch them in.

    The cost is the product of the searched values of the parameters the
    final estimator names in ``_cost_params`` (e.g. ``n_components``; the
    time of a fit grows with them). Started first, the long candidates do not
    end up alone at the end of a parallel search (longest processing time
    first). Without such parameters the grid's order is kept.
    """
    final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
    names = getattr(final, "_cost_params", ())

    def cost(params):
        costly = [v for k, v in params.items() if k.split("__")[-1] in names and isinstance(v, numbers.Real)]
        return math.prod(float(v) for v in costly)

    return sorted(range(len(candidate_params)), key=lambda i: -cost(candidate_params[i]))


def _set_seeds(estimator, seed, searched):
    """Give every ``random_state`` (nested ones too) the same int seed, unless it is searched over."""
    names = [k for k in estimator.get_params(deep=True) if k.split("__")[-1] == "random_state" and k not in searched]
    return estimator.set_params(**dict.fromkeys(names, seed))


class EvidenceGridSearch(BaseSearchCV):
    """Exhaustive search over parameter values, scored by the log-evidence.

    Every candidate is fitted on **all** the data and scored by its
    log-evidence :math:`\\log p(X \\mid m)` (its ``log_evidence_``, or its
    ``score`` when it has none): the evidence already trades fit against
    complexity, so no validation split is needed. The best candidate is the
    one of largest evidence; ``cv_results_`` also holds the standard errors
    of the estimates and the posterior probability of each candidate under a
    uniform prior over the grid.

    Read more in the :ref:`User Guide <evidence_search>`.

    Parameters
    ----------
    estimator : estimator object
        An estimator whose ``score`` is a log-evidence (every skevidence
        estimator, or a :class:`~sklearn.pipeline.Pipeline` ending in one).
    param_grid : dict or list of dicts
        Parameter names (``step__param`` inside a pipeline) mapped to lists of
        values, as in :class:`~sklearn.model_selection.GridSearchCV`.
    n_jobs : int, default=None
        Number of candidates fitted in parallel (joblib, through
        :mod:`sklearn.utils.parallel`). ``None`` means 1, ``-1`` all cores.
        Results do not depend on it. The candidates' warnings (a
        :class:`~sklearn.exceptions.ConvergenceWarning` when an error bar
        stays above its ``tol``, for example) are raised in the caller's
        process once the search ends, for any ``n_jobs``.
    refit : bool, default=True
        Keep the best candidate as ``best_estimator_`` (already fitted on all
        the data, so nothing is fitted again) and expose ``predict``,
        ``transform``, ``score``... through it.
    error_score : "raise" or float, default=np.nan
        Value recorded for a candidate whose fit fails; a warning names the
        candidate and its error, and the other candidates are kept. With
        ``"raise"`` the error propagates.
    verbose : int, default=0
        ``1``: progress over the candidates (a tqdm bar with the ``progress``
        extra, else one printed line per finished candidate); ``>= 2``: always
        one printed line per finished candidate.
    pre_dispatch : int or str, default="2*n_jobs"
        Number of candidates dispatched ahead (see :class:`joblib.Parallel`).
    memory : str, path-like or joblib.Memory, default=None
        Where to keep every finished candidate (its fitted estimator and
        evidence), keyed by its parameters, its seed and the data. A search
        interrupted by Ctrl-C, a crash or a failing candidate, run again with
        the same ``memory``, loads what was finished instead of fitting it
        again and ends with the same results as an uninterrupted run. Failed
        candidates are not kept, so they are tried again. ``None``: no
        caching.

    Attributes
    ----------
    cv_results_ : dict of numpy (masked) ndarrays
        One entry per candidate: ``params``, ``param_<name>``,
        ``mean_test_score`` (the log-evidence), ``std_log_evidence`` (its
        standard error), ``rank_test_score``, ``model_probability`` (softmax
        of the log-evidences of the successful candidates),
        ``mean_fit_time``, ``std_fit_time``, ``mean_score_time``,
        ``std_score_time``, and ``error`` (empty, or the failure's message).
    best_index_ : int
        Index of the best candidate in ``cv_results_``.
    best_params_ : dict
        Its parameters.
    best_score_ : float
        Its log-evidence.
    best_estimator_ : estimator
        The best candidate, fitted on all the data (with ``refit=True``).
    refit_time_ : float
        0.0: the best candidate is kept from the search, not refitted.
    scorer_ : callable
        The estimator's own ``score``.
    n_splits_ : int
        Always 1: every candidate sees all the data.
    multimetric_ : bool
        Always False.

    See Also
    --------
    sklearn.model_selection.GridSearchCV : The cross-validated counterpart.

    Notes
    -----
    Each candidate caps numba's thread count at ``cores // n_jobs`` (restored
    afterwards), so candidates in parallel do not oversubscribe the cores.
    Under joblib's dask backend (``joblib.parallel_config(backend="dask")``)
    the cap is set per worker instead: the cores of its host divided by the
    task threads of all the workers on that host.
    Every candidate gets the same integer seed, derived once from the
    estimator's ``random_state`` (common random numbers make differences of
    log-evidences more precise than the evidences themselves), so results are
    identical for any ``n_jobs``. In parallel, candidates are dispatched
    costliest first (largest ``n_components`` or ``rank``), so that the long
    ones do not end the search alone, and with ``verbose`` each is reported
    as it ends; ``cv_results_`` keeps the grid's order.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence import EvidenceGridSearch, GaussianAdditiveModel
    >>> X = np.random.default_rng(0).normal(10.0, 1.0, size=(500, 1))
    >>> search = EvidenceGridSearch(
    ...     GaussianAdditiveModel(prior_mean=5.0, prior_var=0.5, method="exact"),
    ...     {"n_components": [1, 2, 3, 4]},
    ... ).fit(X)
    >>> search.best_params_
    {'n_components': 2}
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "score"])],
        "param_grid": [dict, list],
        "n_jobs": [numbers.Integral, None],
        "refit": ["boolean"],
        "error_score": [StrOptions({"raise"}), numbers.Real],
        "verbose": ["verbose"],
        "pre_dispatch": [numbers.Integral, str],
        "memory": [None, str, os.PathLike, HasMethods(["cache"])],
    }

    # BaseSearchCV reads these; a search by the evidence has no split and one score.
    scoring = None
    cv = None
    return_train_score = False

    def __init__(self, estimator, param_grid, *, n_jobs=None, refit=True, error_score=np.nan, verbose=0,
                 pre_dispatch="2*n_jobs", memory=None):
        store_init_params(self, locals())

    def _run_search(self, evaluate_candidates, *, callback_ctx=None):
        """Evaluate every candidate of ``param_grid``."""
        evaluate_candidates(ParameterGrid(self.param_grid))

    def fit(self, X, y=None, **fit_params):
        """Fit every candidate on all of ``X`` and rank them by log-evidence.

        Parameters
        ----------
        X : array-like
            Data, passed to each candidate's ``fit`` as is.
        y : array-like, default=None
            Targets, for supervised estimators.
        **fit_params : dict
            Passed to each candidate's ``fit``.

        Returns
        -------
        self : object
            Fitted search.
        """
        # X and y go to every candidate as they are: its fit validates them.
        self._validate_params()
        base = clone(self.estimator)
        # One int seed for every candidate (see Notes).
        seed = self.estimator.get_params().get("random_state")
        if not isinstance(seed, numbers.Integral):
            seed = seed_sequence(seed).generate_state(1)[0] & 0x7FFFFFFF
        seed = int(seed)
        # With memory=None, check_memory's cache calls the function uncached.
        fit = check_memory(self.memory).cache(_fit_candidate, ignore=["n_threads", "per_worker"])
        n_threads = threads_per_task(self.n_jobs)
        per_worker = dask_threads_per_task()
        all_params, out = [], []

        with Parallel(n_jobs=self.n_jobs, pre_dispatch=self.pre_dispatch, return_as="generator_unordered") as parallel:

            def evaluate_candidates(candidate_params, more_results=None, callback_ctx=None):
                candidate_params = list(candidate_params)
                if not candidate_params:
                    raise ValueError("param_grid yields no candidate: give each parameter at least one value.")
                # In parallel the costliest candidates go first; results keep the grid's
                # order and, with one seed for all, do not depend on the dispatch order.
                n = len(candidate_params)
                order = _dispatch_order(base, candidate_params) if self.n_jobs not in (None, 1) else range(n)
                tasks = (delayed(_fit_and_evaluate)(
                    i, fit, _set_seeds(clone(base).set_params(**candidate_params[i]), seed, candidate_params[i]),
                    X, y, fit_params, self.error_score, n_threads, per_worker) for i in order)
                batch = [None] * n
                # Each candidate is reported as soon as it finished: in the order they
                # were dispatched, the costliest would hold back every report until it
                # ends (P3's rank 256: 39 minutes of silence).
                with closing(progress(n, "EvidenceGridSearch", self.verbose, stream=sys.stdout)) as report:
                    for i, res in parallel(tasks):
                        batch[i] = res
                        text = (f"failed ({res['error']})" if res["error"]
                                else f"log Z = {res['log_evidence']:.6g} ± {res['std']:.3g}")
                        number = len(all_params) + i + 1
                        report.update(1, f"candidate {number} {candidate_params[i]}: {text} ({res['fit_time']:.2f} s)")
                all_params.extend(candidate_params)
                out.extend(batch)
                self.cv_results_ = self._format_evidence_results(all_params, out)
                return self.cv_results_

            self._run_search(evaluate_candidates)

        results = self.cv_results_
        if all(o["error"] for o in out):
            # Nothing to select: the first candidate's own error says what is wrong.
            first = out[0]["exception"]
            first.add_note(f"Every one of the {len(out)} candidates of EvidenceGridSearch failed.")
            raise first
        for params, res in zip(all_params, out):
            for category, message in res.get("warnings", ()):
                _warn_again(category, message)
            if res["error"]:
                warnings.warn(f"Candidate {params} failed and was scored {self.error_score}: {res['error']}",
                              UserWarning, stacklevel=2)
        self.best_index_ = int(results["rank_test_score"].argmin())
        self.best_params_ = results["params"][self.best_index_]
        self.best_score_ = float(results["mean_test_score"][self.best_index_])
        if self.refit:
            self.best_estimator_ = out[self.best_index_]["estimator"]
            self.refit_time_ = 0.0
        self.scorer_ = check_scoring(self.estimator)
        self.multimetric_ = False
        self.n_splits_ = 1
        return self

    @staticmethod
    def _format_evidence_results(candidate_params, out):
        n = len(candidate_params)
        scores = np.array([o["log_evidence"] for o in out], dtype=np.float64)
        results = {"params": candidate_params, **dict(_yield_masked_array_for_each_param(candidate_params))}
        for key in ("fit_time", "score_time"):
            results[f"mean_{key}"] = np.array([o[key] for o in out])
            results[f"std_{key}"] = np.zeros(n)
        results["mean_test_score"] = scores
        results["std_test_score"] = np.zeros(n)
        results["std_log_evidence"] = np.array([o["std"] for o in out], dtype=np.float64)
        # The pieces the error bar covers (NaN where the method does not report them).
        for key in ERROR_PIECES:
            results[key] = np.array([o.get(key, np.nan) for o in out], dtype=np.float64)
        failed = np.array([bool(o["error"]) for o in out])
        # A failed candidate is never chosen nor given probability, whatever
        # finite error_score stands in for its evidence.
        finite = np.isfinite(scores) & ~failed
        # Rank 1 = largest evidence; failed candidates share the last rank.
        results["rank_test_score"] = rankdata(np.where(finite, -scores, np.inf), method="min").astype(np.int32)
        probs = np.zeros(n)
        if finite.any():
            probs[finite] = softmax(scores[finite])
        results["model_probability"] = probs
        results["error"] = np.array([o["error"] for o in out], dtype=object)
        return results
