"""Log-evidence against rank (or any numeric parameter), after scikit-learn's Display objects."""

from collections import namedtuple
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._plotting import _validate_style_kwargs
from sklearn.utils.validation import check_is_fitted

from .._init_params import store_init_params
from ..estimators.search import EvidenceGridSearch
from ..evidence._result import ERROR_PIECES

__all__ = ["EvidenceCurveDisplay"]

#: Attributes a fitted rank selector exposes (BayesianNMFRankSelector and its twins).
_SELECTOR_ATTRIBUTES = ["ranks_", "log_evidence_", "best_rank_"]

_MISSING = object()

#: The display's data sorted by rank; ``best`` indexes the sorted arrays, ``order`` sorts the given ones.
_Curve = namedtuple("_Curve", "x y se failed best order")


def _axes(ax):
    """``ax``, or the axes of a new figure; only drawing imports matplotlib, with an error naming the extra."""
    if ax is None:
        try:
            import matplotlib.pyplot as plt
        except ImportError as exc:
            raise ImportError('EvidenceCurveDisplay requires matplotlib: pip install "skevidence[plot]"') from exc
        _, ax = plt.subplots()
    return ax


def _format_value(value):
    """``1000000`` rather than ``1e+06`` for whole numbers; ``%g`` otherwise."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:g}"


def _numbers(values, what, shape=None, one=None):
    """``values`` as float64 (a TypeError unless they are numbers); with ``shape``, one ``one`` per rank."""
    try:
        array = np.asarray(values)
        if array.dtype.kind not in "iufO":
            raise TypeError
        array = array.astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be numbers, got {values!r:.200}.") from None
    if shape is not None and array.shape != shape:
        raise ValueError(f"{what} has shape {array.shape} but ranks has shape {shape}: give one {one} per rank.")
    return array


def _same(a, b):
    """Equality of two parameter values that may be arrays or estimators (``_MISSING`` equals only itself)."""
    try:
        return a is b or (np.shape(a) == np.shape(b) and bool(np.all(a == b)))
    except Exception:  # values that cannot be compared (e.g. ragged arrays) are distinct
        return False


def _search_slice(search, param_name):
    """The parameter on the x axis and the indices of its candidates in ``cv_results_``.

    With several searched parameters the curve is the slice of the grid
    through the best candidate: every other parameter at its best value.
    """
    check_is_fitted(search, ["cv_results_", "best_params_"])
    params = search.cv_results_["params"]
    names = sorted({name for p in params for name in p})
    if not names:
        raise ValueError("the EvidenceGridSearch searched no parameter (empty param_grid): there is no curve to draw.")
    if param_name is None:
        values = {n: [p[n] for p in params if n in p] for n in names}
        varying = [n for n in names if any(not _same(v, values[n][0]) for v in values[n])]
        chosen = names if len(names) == 1 else varying
        if len(chosen) != 1:
            raise ValueError(f"the EvidenceGridSearch searched {len(names)} parameters {tuple(names)}: "
                             "pass param_name=<one of them> to choose the x axis; the others are held at best_params_.")
        param_name = chosen[0]
    elif param_name not in names:
        raise ValueError(f"param_name={param_name!r} is not a searched parameter; choose one of {names}.")
    others = [n for n in names if n != param_name]
    keep = [i for i, p in enumerate(params)
            if param_name in p and all(_same(p.get(n, _MISSING), search.best_params_.get(n, _MISSING)) for n in others)]
    return param_name, keep


class EvidenceCurveDisplay:
    """Log-evidence against rank: the curve a rank selection is read from.

    Draws the log-evidence of every candidate rank (or value of another
    numeric parameter) with error bars of ``± n_std`` Monte-Carlo standard
    errors, marks the chosen rank, and shows the candidates whose fit failed
    (NaN log-evidence) as crosses on the x axis, listed in the legend.

    Build it with :meth:`from_estimator` (a fitted rank selector or
    :class:`~skevidence.EvidenceGridSearch`) or :meth:`from_results` (plain
    arrays); both call :meth:`plot`. The constructor only stores its
    arguments, which are kept as given: ``plot`` validates them and sorts
    them by rank. matplotlib is needed only to draw
    (``pip install "skevidence[plot]"``).

    Read more in the :ref:`User Guide <plotting>`.

    Parameters
    ----------
    ranks : array-like of shape (n_ranks,)
        Candidate ranks (any finite, distinct numbers), in any order.
    log_evidence : array-like of shape (n_ranks,)
        Log-evidence of each rank, in nats; NaN (or ±inf) marks a failed fit.
    log_evidence_std : array-like of shape (n_ranks,), default=None
        Monte-Carlo standard error of each log-evidence (NaN where unknown,
        0 for an exact evidence). ``None`` draws no error bars.
    best_rank : float, default=None
        The chosen rank, one of ``ranks`` with a finite log-evidence.
        ``None`` marks the rank of largest log-evidence.
    param_name : str, default="rank"
        Name of the parameter on the x axis (its label).
    estimator_name : str, default=None
        Title of the legend; ``None`` for no title.
    error_pieces : dict, default=None
        What each rank's error bar is made of: keys of
        ``skevidence.evidence.ERROR_PIECES`` (``"mc_error"``,
        ``"lag_error"``, ``"quadrature_error"``, ``"mode_error"``) mapped to arrays of shape
        ``(n_ranks,)`` in nats, NaN where unknown. :meth:`from_estimator`
        takes them from ``cv_results_``; :meth:`plot_error_pieces` draws them.

    Attributes
    ----------
    ax_ : matplotlib Axes
        Axes with the curve.
    figure_ : matplotlib Figure
        Figure containing the curve.
    errorbar_ : matplotlib ErrorbarContainer
        The curve of the successful candidates and its error bars
        (``errorbar_.has_yerr`` is False when no error bar is drawn: no
        standard errors, all of them 0, or ``n_std=0``).
    line_ : matplotlib Line2D
        The curve itself (``errorbar_.lines[0]``), sorted by rank.
    best_marker_ : matplotlib Line2D
        The star at the chosen rank and its log-evidence, labelled e.g.
        ``"chosen rank 8"``.
    best_line_ : matplotlib Line2D
        The dotted vertical line at the chosen rank.
    failed_marker_ : matplotlib Line2D or None
        Crosses on the x axis at the failed ranks (their height is in axes
        coordinates), or None when no candidate failed.
    error_pieces_ax_ : matplotlib Axes
        Axes of the error bars' pieces (set by :meth:`plot_error_pieces`).
    error_pieces_bars_ : dict of matplotlib BarContainer
        The bars of every piece and of the whole error bar, by name (set by
        :meth:`plot_error_pieces`).

    See Also
    --------
    skevidence.BayesianNMFRankSelector : Chooses the rank of a Poisson NMF.
    skevidence.EvidenceGridSearch : Ranks any parameter values by the evidence.
    sklearn.model_selection.ValidationCurveDisplay : The cross-validated counterpart.

    Notes
    -----
    The error bars are the stated errors as the estimator reports them. For
    referenced TI (the default of the factorisation estimators) that covers
    the Monte-Carlo error, the chains' lag and the quadrature error
    (:meth:`plot_error_pieces` shows which dominates); for the papers' STI
    from the prior it is the Monte-Carlo error only and says nothing of the
    bias of a finite temperature ladder. Two ranks whose bars overlap are not
    distinguished by the estimates.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence.plotting import EvidenceCurveDisplay
    >>> disp = EvidenceCurveDisplay.from_results(
    ...     [16, 1, 2, 4, 8],
    ...     [np.nan, -5230.4, -4981.2, -4902.7, -4897.9],
    ...     [np.nan, 0.9, 1.3, 1.8, 2.6],
    ... )
    >>> disp.line_.get_xdata().tolist()
    [1.0, 2.0, 4.0, 8.0]
    >>> disp.best_marker_.get_label(), disp.failed_marker_.get_label()
    ('chosen rank 8', 'failed (no estimate): rank 16')
    >>> disp.ax_.get_xscale()  # powers of two: log2 axis
    'log'
    """

    def __init__(self, ranks, log_evidence, log_evidence_std=None, *, best_rank=None, param_name="rank",
                 estimator_name=None, error_pieces=None):
        store_init_params(self, locals())

    def _curve(self):
        """Validate the display's data; return it sorted by rank."""
        if not isinstance(self.param_name, str):
            raise TypeError(f"param_name must be a str (the x-axis label), got {self.param_name!r}.")
        x = _numbers(self.ranks, "ranks")
        if x.ndim != 1 or x.size == 0 or not np.all(np.isfinite(x)) or np.unique(x).size != x.size:
            raise ValueError(f"ranks must be a non-empty 1-D sequence of finite numbers and must not repeat (one "
                             f"log-evidence per {self.param_name}), got {x.tolist()}.")
        y = _numbers(self.log_evidence, "log_evidence", x.shape, "log-evidence")
        failed = ~np.isfinite(y)
        if failed.all():
            raise ValueError("every log-evidence is NaN or infinite (every candidate failed): there is no curve "
                             "to draw.")
        se = None
        if self.log_evidence_std is not None:
            se = _numbers(self.log_evidence_std, "log_evidence_std", x.shape, "standard error (NaN where unknown)")
            if np.any(se < 0) or np.any(np.isinf(se)):
                raise ValueError(f"log_evidence_std must be non-negative and finite (NaN where unknown), got "
                                 f"{se.tolist()}.")
        order = np.argsort(x)  # the ranks are distinct
        x, y, failed = x[order], y[order], failed[order]
        best_rank = self.best_rank
        if best_rank is not None and (isinstance(best_rank, bool) or not isinstance(best_rank, Real)):
            raise TypeError(f"best_rank must be a number, one of the ranks, or None; got {best_rank!r}.")
        if best_rank is not None and best_rank not in x:
            raise ValueError(f"best_rank={best_rank!r} is not one of the ranks {x.tolist()}.")
        # None: the largest finite log-evidence, so only a given best_rank can have failed.
        best = int(np.argmax(np.where(failed, -np.inf, y) if best_rank is None else x == best_rank))
        if failed[best]:
            raise ValueError(f"best_rank={best_rank!r} has no finite log-evidence (its fit failed): pass the "
                             f"{self.param_name} actually chosen, or None for the largest evidence.")
        return _Curve(x, y, None if se is None else se[order], failed, best, order)

    def plot_error_pieces(self, ax=None, *, bar_kw=None):
        """Draw what every rank's error bar is made of: one bar per piece, and the whole.

        The error bar of referenced TI is the root sum of squares of its
        Monte-Carlo error, the chains' lag and the quadrature error
        (``skevidence.evidence.ERROR_PIECES``); the bars show which one
        dominates at which rank, i.e. what more budget would buy (longer
        chains shrink the first two, more temperatures the third).

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw on; ``None`` creates a figure and axes.
        bar_kw : dict, default=None
            Keyword arguments of :meth:`matplotlib.axes.Axes.bar` for every
            group of bars (e.g. ``{"alpha": 0.8}``).

        Returns
        -------
        display : EvidenceCurveDisplay
            This object, with ``error_pieces_ax_`` and ``error_pieces_bars_``
            (a dict from the piece's name, and ``"error bar"``, to its
            BarContainer) set.

        Raises
        ------
        ValueError
            If the display has no ``error_pieces`` (the method reported none),
            or a piece's shape does not match ``ranks``.
        """
        curve = self._curve()
        if not self.error_pieces:
            raise ValueError("this display has no error_pieces: the estimates' method reports none (referenced TI "
                             "does); pass error_pieces={'mc_error': ..., ...} to draw them.")
        if unknown := set(self.error_pieces) - set(ERROR_PIECES):
            raise ValueError(f"unknown error pieces {sorted(unknown)}; use keys of {list(ERROR_PIECES)}.")
        groups = {ERROR_PIECES[key]: _numbers(values, f"error_pieces[{key!r}]", curve.x.shape, "value")[curve.order]
                  for key, values in self.error_pieces.items()}
        if curve.se is not None:
            groups["error bar"] = curve.se
        ax = _axes(ax)
        # One group of bars a rank, centred on its tick; NaN (not reported, or a failed fit) draws no bar.
        width = 0.8 / len(groups)
        left = np.arange(curve.x.size) - (len(groups) - 1) / 2 * width
        self.error_pieces_bars_ = {}
        for i, (name, values) in enumerate(groups.items()):
            kw = _validate_style_kwargs({"label": name, "color": f"C{i}"}, bar_kw or {})
            self.error_pieces_bars_[name] = ax.bar(left + i * width, np.nan_to_num(values), width, **kw)
        ax.set_xticks(np.arange(curve.x.size), labels=[_format_value(v) for v in curve.x])
        ax.set(xlabel=self.param_name, ylabel="nats")
        finite = np.concatenate([v[np.isfinite(v)] for v in groups.values()])
        if finite.size and np.all(finite > 0):
            ax.set_yscale("log")
        ax.legend(title="error bar = root sum of squares of")
        self.error_pieces_ax_ = ax
        return self

    def plot(self, ax=None, *, n_std=2, xscale=None, name=None, errorbar_kw=None, best_marker_kw=None):
        """Draw the curve.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw on; ``None`` creates a figure and axes.
        n_std : float, default=2
            Half-height of the error bars, in standard errors (the legend
            says so, e.g. ``"log-evidence ± 2 SE"``); 0 hides them.
        xscale : {"linear", "log2"} or None, default=None
            Scale of the x axis. ``None`` chooses ``"log2"`` (ticks at the
            ranks) when there are three or more ranks, all powers of two,
            and ``"linear"`` otherwise.
        name : str, default=None
            Legend title; ``None`` uses ``estimator_name``.
        errorbar_kw : dict, default=None
            Keyword arguments of :meth:`matplotlib.axes.Axes.errorbar` for
            the curve (e.g. ``{"color": "k", "capsize": 0}``).
        best_marker_kw : dict, default=None
            Keyword arguments of :meth:`matplotlib.axes.Axes.plot` for the
            chosen-rank marker; the vertical line takes its colour.

        Returns
        -------
        display : EvidenceCurveDisplay
            This object, with ``ax_``, ``figure_`` and the artists set.
        """
        curve = self._curve()
        if isinstance(n_std, bool) or not isinstance(n_std, Real):
            raise TypeError(f"n_std must be a number of standard errors, got {n_std!r}.")
        if not (np.isfinite(n_std) and n_std >= 0):
            raise ValueError(f"n_std must be finite and non-negative (0 hides the error bars), got {n_std!r}.")
        if xscale not in (None, "linear", "log2"):
            raise ValueError(f"xscale must be None, 'linear' or 'log2', got {xscale!r}.")
        positive = bool(np.all(curve.x > 0))
        if xscale == "log2" and not positive:
            raise ValueError(f"xscale='log2' needs positive ranks, got {curve.x.tolist()}: use xscale='linear'.")
        if xscale is None:  # log2 for three or more ranks, all powers of two
            xscale = "log2" if positive and curve.x.size >= 3 and np.all(np.log2(curve.x) % 1 == 0) else "linear"
        ax = _axes(ax)
        param = self.param_name

        ok = ~curve.failed
        # NaN standard errors draw no bar, so an unknown error is not shown as zero;
        # all-zero ones (exact evidences) draw none and claim none in the legend.
        bars = n_std > 0 and curve.se is not None and np.any(curve.se[ok] > 0)
        label = f"log-evidence ± {n_std:g} SE" if bars else "log-evidence"
        kw = _validate_style_kwargs({"marker": "o", "capsize": 3, "label": label}, errorbar_kw or {})
        self.errorbar_ = ax.errorbar(curve.x[ok], curve.y[ok], yerr=n_std * curve.se[ok] if bars else None, **kw)
        self.line_ = self.errorbar_.lines[0]

        best_x = curve.x[curve.best]
        value = _format_value(best_x)
        label = f"chosen rank {value}" if param == "rank" else f"chosen {param} = {value}"
        kw = {"marker": "*", "markersize": 15, "color": "C3", "linestyle": "none", "zorder": 3, "label": label}
        kw = _validate_style_kwargs(kw, best_marker_kw or {})
        (self.best_marker_,) = ax.plot([best_x], [curve.y[curve.best]], **kw)
        self.best_line_ = ax.axvline(best_x, color=self.best_marker_.get_color(), linestyle=":", linewidth=1, zorder=1)

        self.failed_marker_ = None
        if curve.failed.any():
            failed_x = curve.x[curve.failed]
            listed = ", ".join(_format_value(v) for v in failed_x)
            # x in data, y in axes coordinates (0 is the x axis): the crosses sit on the x axis whatever the y limits.
            (self.failed_marker_,) = ax.plot(failed_x, np.zeros(failed_x.size), "x", transform=ax.get_xaxis_transform(),
                                             markersize=9, markeredgewidth=2, color="0.35", clip_on=False, zorder=4,
                                             label=f"failed (no estimate): {param} {listed}")

        ax.set(xlabel=param, ylabel="log-evidence (nats)")
        if xscale == "log2":
            ax.set_xscale("log", base=2)
            ax.set_xticks(curve.x, labels=[_format_value(t) for t in curve.x])
            ax.set_xticks([], minor=True)
        else:
            ax.set_xscale("linear")
            if np.all(curve.x == np.round(curve.x)):
                ax.locator_params(axis="x", integer=True)
        # This curve's entries first, then whatever the reused axes already held.
        ours = [a for a in (self.errorbar_, self.best_marker_, self.failed_marker_) if a is not None]
        others = [h for h in ax.get_legend_handles_labels()[0] if not any(h is o for o in ours)]
        ax.legend(handles=ours + others, title=self.estimator_name if name is None else name)
        self.ax_, self.figure_ = ax, ax.figure
        return self

    @classmethod
    def from_estimator(cls, estimator, *, param_name=None, name=None, ax=None, n_std=2, xscale=None, errorbar_kw=None,
                       best_marker_kw=None):
        """Draw the curve of a fitted rank selector or evidence search.

        Parameters
        ----------
        estimator : estimator
            Either a fitted rank selector, an estimator with ``ranks_``,
            ``log_evidence_``, ``best_rank_`` and optionally
            ``log_evidence_std_`` and ``errors_`` (such as
            :class:`~skevidence.BayesianNMFRankSelector`), or a fitted
            :class:`~skevidence.EvidenceGridSearch`, whose ``cv_results_``
            gives the values of one numeric searched parameter, their
            log-evidence (``mean_test_score``) and standard errors
            (``std_log_evidence``). Failed candidates (listed in ``errors_``
            or in ``cv_results_["error"]``) are shown as failed whatever
            ``error_score`` recorded for them.
        param_name : str, default=None
            For a search, the parameter on the x axis. ``None`` takes the
            only searched parameter, or the only one that takes more than
            one value. With several, the curve is the slice of the grid
            through the best candidate: the other parameters are held at
            their values in ``best_params_``. For a rank selector, only the
            x-axis label (``None`` means ``"rank"``).
        name : str, default=None
            Legend title; ``None`` uses the estimator's class name (for a
            search, that of the searched estimator).
        ax : matplotlib Axes, default=None
            Axes to draw on; ``None`` creates a figure and axes.
        n_std, xscale, errorbar_kw, best_marker_kw
            As in :meth:`plot`.

        Returns
        -------
        display : EvidenceCurveDisplay
            The drawn display.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the selector or search is not fitted.
        TypeError
            If ``estimator`` is neither a rank selector nor an
            :class:`~skevidence.EvidenceGridSearch`, or the searched
            parameter is not numeric.
        ValueError
            If several parameters vary and ``param_name`` is None, or
            ``param_name`` was not searched.
        """
        if isinstance(estimator, EvidenceGridSearch):
            param_name, keep = _search_slice(estimator, param_name)
            results = estimator.cv_results_
            ranks = [results["params"][i][param_name] for i in keep]
            if any(isinstance(v, bool) or not isinstance(v, Real) for v in ranks):
                raise TypeError(f"the searched parameter {param_name!r} takes the non-numeric value(s) {ranks!r:.200}: "
                                "EvidenceCurveDisplay plots the log-evidence against a numeric parameter.")
            log_evidence = results["mean_test_score"][keep]
            std = results["std_log_evidence"][keep]
            failed = results["error"][keep].astype(bool)
            best_rank = estimator.best_params_[param_name]
            default_name = type(estimator.estimator).__name__
        else:
            if isinstance(estimator, BaseEstimator) and "ranks" in estimator.get_params(deep=False):
                check_is_fitted(estimator, _SELECTOR_ATTRIBUTES)
            if not all(hasattr(estimator, a) for a in _SELECTOR_ATTRIBUTES):
                hint = (" It has a single log_evidence_; search over one of its parameters with EvidenceGridSearch to "
                        "get a curve.") if hasattr(estimator, "log_evidence_") else ""
                raise TypeError("from_estimator expects a fitted rank selector (ranks_, log_evidence_, best_rank_) or "
                                f"EvidenceGridSearch, got {type(estimator).__name__}.{hint} For plain arrays use "
                                "EvidenceCurveDisplay.from_results.")
            keep = slice(None)
            results = getattr(estimator, "cv_results_", {})
            ranks = np.asarray(estimator.ranks_)
            log_evidence = estimator.log_evidence_
            std = getattr(estimator, "log_evidence_std_", None)
            failed = np.isin(ranks, list(getattr(estimator, "errors_", None) or {}))
            best_rank = estimator.best_rank_
            param_name = "rank" if param_name is None else param_name
            default_name = type(estimator).__name__
        log_evidence = np.array(log_evidence, dtype=np.float64)  # a copy
        if failed.shape == log_evidence.shape:
            # A failed fit is recorded as error_score, which may be a finite number.
            log_evidence[failed] = np.nan
        # The error bars' pieces recorded in cv_results_, unless no method reported any.
        pieces = {key: np.asarray(results[key], dtype=np.float64)[keep] for key in ERROR_PIECES if key in results}
        display = cls(ranks, log_evidence, std, best_rank=best_rank, param_name=param_name,
                      estimator_name=default_name if name is None else name,
                      error_pieces=None if all(np.all(np.isnan(v)) for v in pieces.values()) else pieces)
        return display.plot(ax=ax, n_std=n_std, xscale=xscale, errorbar_kw=errorbar_kw, best_marker_kw=best_marker_kw)

    @classmethod
    def from_results(cls, ranks, log_evidence, log_evidence_std=None, *, best_rank=None, param_name="rank", name=None,
                     ax=None, n_std=2, xscale=None, errorbar_kw=None, best_marker_kw=None):
        """Draw the curve from plain arrays (e.g. read back from a JSON file).

        Parameters
        ----------
        ranks, log_evidence, log_evidence_std, best_rank, param_name
            As in the constructor.
        name : str, default=None
            Legend title.
        ax : matplotlib Axes, default=None
            Axes to draw on; ``None`` creates a figure and axes.
        n_std, xscale, errorbar_kw, best_marker_kw
            As in :meth:`plot`.

        Returns
        -------
        display : EvidenceCurveDisplay
            The drawn display.
        """
        display = cls(ranks, log_evidence, log_evidence_std, best_rank=best_rank, param_name=param_name,
                      estimator_name=name)
        return display.plot(ax=ax, n_std=n_std, xscale=xscale, errorbar_kw=errorbar_kw, best_marker_kw=best_marker_kw)
