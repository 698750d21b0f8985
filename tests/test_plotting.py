"""EvidenceCurveDisplay: the drawn data against independent computations."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from scipy.stats import multivariate_normal  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.linear_model import LinearRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402

from skevidence import (  # noqa: E402
    BayesianNMFRankSelector,
    EvidenceGridSearch,
    GaussianAdditiveModel,
)
from skevidence.plotting import EvidenceCurveDisplay  # noqa: E402

PRIOR_MEAN, PRIOR_VAR, NOISE_VAR = 5.0, 0.5, 5.0


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def closed_form_log_evidence(X, n_components, prior_var=PRIOR_VAR):
    """log p(x) of the Gaussian additive model: x ~ N(R mu 1, s_x^2 I + R s_t^2 1 1^T)."""
    x = X[:, 0]
    n = x.size
    cov = NOISE_VAR * np.eye(n) + n_components * prior_var * np.ones((n, n))
    return multivariate_normal(np.full(n, n_components * PRIOR_MEAN), cov).logpdf(x)


@pytest.fixture
def X(rng):
    theta = rng.normal(PRIOR_MEAN, np.sqrt(PRIOR_VAR), size=3)
    return rng.normal(theta.sum(), np.sqrt(NOISE_VAR), size=(60, 1))


def exact_search(grid):
    model = GaussianAdditiveModel(
        prior_mean=PRIOR_MEAN, prior_var=PRIOR_VAR, noise_var=NOISE_VAR, method="exact"
    )
    return EvidenceGridSearch(model, grid)


class FakeSelector:
    """A fitted rank selector (BayesianNMFRankSelector's attributes) without any MCMC."""

    def __init__(self, ranks, log_evidence, log_evidence_std, best_rank, errors=None):
        self.ranks_ = np.asarray(ranks)
        self.log_evidence_ = np.asarray(log_evidence, dtype=float)
        self.log_evidence_std_ = np.asarray(log_evidence_std, dtype=float)
        self.best_rank_ = best_rank
        self.errors_ = errors or {}


def bar_extents(display):
    """(lower, upper) of each error bar, in the order of the plotted points."""
    segments = display.errorbar_.lines[2][0].get_segments()
    return np.array([[s[0, 1], s[1, 1]] if len(s) else [np.nan, np.nan] for s in segments])


def test_search_curve_is_closed_form_in_rank_order(X):
    grid = [3, 1, 4, 2]  # not sorted: the plot must be
    search = exact_search({"n_components": grid}).fit(X)
    disp = EvidenceCurveDisplay.from_estimator(search)

    expected = [closed_form_log_evidence(X, r) for r in sorted(grid)]
    np.testing.assert_array_equal(disp.line_.get_xdata(), sorted(grid))
    np.testing.assert_allclose(disp.line_.get_ydata(), expected, rtol=1e-10)

    best = 1 + int(np.argmax(expected))
    assert search.best_params_["n_components"] == best
    np.testing.assert_allclose(
        disp.best_marker_.get_xydata(), [[best, expected[best - 1]]], rtol=1e-10
    )
    np.testing.assert_array_equal(disp.best_line_.get_xdata(), [best, best])
    assert disp.best_marker_.get_label() == f"chosen n_components = {best}"
    assert disp.ax_.get_xlabel() == "n_components"
    assert disp.ax_.get_ylabel() == "log-evidence (nats)"
    assert disp.ax_.get_legend().get_title().get_text() == "GaussianAdditiveModel"
    # Exact evidences have zero standard errors: no bars, and the legend claims none.
    assert not disp.errorbar_.has_yerr
    assert disp.errorbar_.get_label() == "log-evidence"
    # The display keeps its data as given (grid order).
    np.testing.assert_array_equal(disp.ranks, grid)


@pytest.mark.parametrize("n_std", [2, 1.5])
def test_error_bars_span_n_std_standard_errors(n_std):
    ranks = np.array([8, 1, 4, 2, 16])
    logz = np.array([-900.0, -1000.0, -905.0, -950.0, -910.0])
    se = np.array([3.0, 0.5, 2.0, 1.0, 4.0])
    disp = EvidenceCurveDisplay.from_results(ranks, logz, se, n_std=n_std)

    order = np.argsort(ranks)
    extents = bar_extents(disp)
    np.testing.assert_allclose(extents[:, 0], logz[order] - n_std * se[order])
    np.testing.assert_allclose(extents[:, 1], logz[order] + n_std * se[order])
    np.testing.assert_array_equal(disp.line_.get_ydata(), logz[order])
    assert disp.errorbar_.get_label() == f"log-evidence ± {n_std:g} SE"


def test_unknown_standard_errors_draw_no_bar():
    disp = EvidenceCurveDisplay.from_results([1, 2, 3], [-3.0, -1.0, -2.0], [0.5, np.nan, 0.25])
    extents = bar_extents(disp)
    np.testing.assert_allclose(extents[[0, 2]], [[-4.0, -2.0], [-2.5, -1.5]])
    assert np.isnan(extents[1]).all()

    disp = EvidenceCurveDisplay.from_results([1, 2, 3], [-3.0, -1.0, -2.0])
    assert not disp.errorbar_.has_yerr and disp.errorbar_.get_label() == "log-evidence"
    disp = EvidenceCurveDisplay.from_results([1, 2, 3], [-3.0, -1.0, -2.0], [1.0] * 3, n_std=0)
    assert not disp.errorbar_.has_yerr


def test_selector_curve_marker_and_failed_rank():
    # A failed fit scored by a finite error_score is still drawn as failed, thanks to errors_.
    sel = FakeSelector(
        ranks=[1, 2, 4, 8, 16],
        log_evidence=[-5230.4, -4981.2, -4902.7, -4897.9, -1e9],
        log_evidence_std=[0.9, 1.3, 1.8, 2.6, np.nan],
        best_rank=8,
        errors={16: "SamplerDivergenceError: chains diverged"},
    )
    disp = EvidenceCurveDisplay.from_estimator(sel)

    np.testing.assert_array_equal(disp.line_.get_xdata(), [1, 2, 4, 8])
    np.testing.assert_array_equal(disp.line_.get_ydata(), [-5230.4, -4981.2, -4902.7, -4897.9])
    np.testing.assert_array_equal(disp.best_marker_.get_xydata(), [[8, -4897.9]])
    assert disp.best_marker_.get_label() == "chosen rank 8"
    np.testing.assert_array_equal(disp.failed_marker_.get_xdata(), [16])
    assert disp.failed_marker_.get_label() == "failed (no estimate): rank 16"
    # On the x axis whatever the y limits: y is in axes coordinates.
    assert disp.failed_marker_.get_transform() == disp.ax_.get_xaxis_transform()
    np.testing.assert_array_equal(disp.failed_marker_.get_ydata(), [0.0])
    assert disp.ax_.get_xlabel() == "rank"
    assert disp.ax_.get_legend().get_title().get_text() == "FakeSelector"
    # The failed rank is not allowed to push the y limits to -1e9.
    assert disp.ax_.get_ylim()[0] > -6000
    # The fake's own arrays are untouched.
    assert sel.log_evidence_[-1] == -1e9


def test_real_selector_class_with_fitted_attributes():
    sel = BayesianNMFRankSelector(ranks=(1, 2, 3))
    sel.ranks_ = np.array([1, 2, 3])
    sel.log_evidence_ = np.array([-12.0, -10.0, -11.0])
    sel.log_evidence_std_ = np.array([0.1, 0.2, 0.3])
    sel.best_rank_ = 2
    disp = EvidenceCurveDisplay.from_estimator(sel, name="NMF")
    np.testing.assert_allclose(bar_extents(disp), [[-12.2, -11.8], [-10.4, -9.6], [-11.6, -10.4]])
    assert disp.failed_marker_ is None
    assert disp.ax_.get_legend().get_title().get_text() == "NMF"


def test_nan_candidates_skipped_and_listed():
    ranks = [5, 1, 3, 2, 4]
    logz = [np.nan, -10.0, np.nan, -8.0, -9.0]
    disp = EvidenceCurveDisplay.from_results(ranks, logz, [1.0] * 5)
    np.testing.assert_array_equal(disp.line_.get_xdata(), [1, 2, 4])
    np.testing.assert_array_equal(disp.line_.get_ydata(), [-10.0, -8.0, -9.0])
    np.testing.assert_array_equal(disp.failed_marker_.get_xdata(), [3, 5])
    assert disp.failed_marker_.get_label() == "failed (no estimate): rank 3, 5"
    # Default chosen rank: the largest finite log-evidence.
    np.testing.assert_array_equal(disp.best_marker_.get_xydata(), [[2, -8.0]])
    labels = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert labels == ["log-evidence ± 2 SE", "chosen rank 2", "failed (no estimate): rank 3, 5"]

    with pytest.raises(ValueError, match="every candidate failed"):
        EvidenceCurveDisplay.from_results([1, 2], [np.nan, np.nan])
    with pytest.raises(ValueError, match="no finite log-evidence"):
        EvidenceCurveDisplay.from_results(ranks, logz, best_rank=3)


def test_failed_candidate_of_a_search(X):
    # A prior variance of 0 is rejected by the estimator: that candidate fails, the others stay.
    search = exact_search({"prior_var": [0.25, 0.0, 1.0]}).set_params(error_score=-1e6)
    with pytest.warns(UserWarning, match="failed"):
        search.fit(X)
    disp = EvidenceCurveDisplay.from_estimator(search)
    np.testing.assert_array_equal(disp.line_.get_xdata(), [0.25, 1.0])
    expected = [closed_form_log_evidence(X, 1, v) for v in (0.25, 1.0)]
    np.testing.assert_allclose(disp.line_.get_ydata(), expected, rtol=1e-10)
    np.testing.assert_array_equal(disp.failed_marker_.get_xdata(), [0.0])
    assert disp.failed_marker_.get_label() == "failed (no estimate): prior_var 0"


def test_ax_is_reused():
    fig, ax = plt.subplots()
    (other,) = ax.plot([1, 2], [0, 0], label="other")
    disp = EvidenceCurveDisplay.from_results([1, 2, 3], [-3.0, -1.0, -2.0], ax=ax)
    assert disp.ax_ is ax and disp.figure_ is fig
    assert plt.get_fignums() == [fig.number]
    assert disp.line_ in ax.lines and other in ax.lines
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["log-evidence", "chosen rank 2", "other"]

    disp2 = EvidenceCurveDisplay([1, 2], [0.0, 1.0])
    assert disp2.plot(ax=ax) is disp2 and disp2.ax_ is ax


def test_explicit_best_rank_and_styles():
    disp = EvidenceCurveDisplay.from_results(
        [1, 2, 3],
        [-3.0, -1.0, -2.0],
        best_rank=3,
        errorbar_kw={"c": "k"},
        best_marker_kw={"marker": "D", "c": "g"},
    )
    np.testing.assert_array_equal(disp.best_marker_.get_xydata(), [[3, -2.0]])
    assert disp.best_marker_.get_marker() == "D"
    assert disp.best_line_.get_color() == disp.best_marker_.get_color() == "g"
    assert disp.line_.get_color() == "k"


def test_xscale():
    disp = EvidenceCurveDisplay.from_results([16, 1, 4, 2, 8], np.arange(5.0))
    assert disp.ax_.get_xscale() == "log"
    assert disp.ax_.xaxis.get_transform().base == 2
    np.testing.assert_array_equal(disp.ax_.get_xticks(), [1, 2, 4, 8, 16])
    assert [t.get_text() for t in disp.ax_.get_xticklabels()] == ["1", "2", "4", "8", "16"]

    linear = EvidenceCurveDisplay.from_results([1, 2, 3, 4], np.arange(4.0))
    assert linear.ax_.get_xscale() == "linear"
    assert EvidenceCurveDisplay.from_results([1, 2], np.arange(2.0)).ax_.get_xscale() == "linear"
    forced = EvidenceCurveDisplay.from_results([1, 2, 4, 8], np.arange(4.0), xscale="linear")
    assert forced.ax_.get_xscale() == "linear"
    forced = EvidenceCurveDisplay.from_results([1, 3, 5], np.arange(3.0), xscale="log2")
    assert forced.ax_.get_xscale() == "log"
    with pytest.raises(ValueError, match="positive"):
        EvidenceCurveDisplay.from_results([0, 1, 2], np.arange(3.0), xscale="log2")
    with pytest.raises(ValueError, match="xscale"):
        EvidenceCurveDisplay.from_results([1, 2], np.arange(2.0), xscale="log")


def test_unfitted_estimators_raise_not_fitted():
    with pytest.raises(NotFittedError):
        EvidenceCurveDisplay.from_estimator(exact_search({"n_components": [1, 2]}))
    with pytest.raises(NotFittedError):
        EvidenceCurveDisplay.from_estimator(BayesianNMFRankSelector())


def test_other_objects_raise_type_error(X):
    single = GaussianAdditiveModel(method="exact").fit(X)
    with pytest.raises(TypeError, match="single log_evidence_.*EvidenceGridSearch"):
        EvidenceCurveDisplay.from_estimator(single)
    cv_search = GridSearchCV(LinearRegression(), {"fit_intercept": [True, False]})
    for obj in (cv_search, LinearRegression(), "search", {"ranks_": [1]}):
        with pytest.raises(TypeError, match="from_results"):
            EvidenceCurveDisplay.from_estimator(obj)


def test_search_over_two_parameters(X):
    search = exact_search({"n_components": [1, 2, 3, 4], "prior_var": [0.25, 0.5]}).fit(X)
    match = r"2 parameters \('n_components', 'prior_var'\).*param_name"
    with pytest.raises(ValueError, match=match):
        EvidenceCurveDisplay.from_estimator(search)
    with pytest.raises(ValueError, match="'noise_var' is not a searched parameter"):
        EvidenceCurveDisplay.from_estimator(search, param_name="noise_var")

    # The slice through the best candidate: prior_var held at its best value.
    best_var = search.best_params_["prior_var"]
    disp = EvidenceCurveDisplay.from_estimator(search, param_name="n_components")
    expected = [closed_form_log_evidence(X, r, best_var) for r in (1, 2, 3, 4)]
    np.testing.assert_allclose(disp.line_.get_ydata(), expected, rtol=1e-10)
    assert disp.best_marker_.get_xdata()[0] == search.best_params_["n_components"]

    disp = EvidenceCurveDisplay.from_estimator(search, param_name="prior_var")
    best_r = search.best_params_["n_components"]
    expected = [closed_form_log_evidence(X, best_r, v) for v in (0.25, 0.5)]
    np.testing.assert_allclose(disp.line_.get_ydata(), expected, rtol=1e-10)
    assert disp.ax_.get_xlabel() == "prior_var"


def test_search_picks_the_only_varying_parameter(X):
    search = exact_search({"n_components": [1, 2, 3], "noise_var": [NOISE_VAR]}).fit(X)
    disp = EvidenceCurveDisplay.from_estimator(search)
    assert disp.ax_.get_xlabel() == "n_components"
    np.testing.assert_array_equal(disp.line_.get_xdata(), [1, 2, 3])


def test_non_numeric_searched_parameter(X):
    search = exact_search({"method_params": [None, {}]}).fit(X)
    with pytest.raises(TypeError, match="non-numeric"):
        EvidenceCurveDisplay.from_estimator(search)


OK = dict(ranks=[1, 2], log_evidence=[0.0, 1.0])


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(ranks=[1, 2], log_evidence=[0.0]), ValueError, "one log-evidence per rank"),
        (dict(ranks=[[1, 2]], log_evidence=[[0.0, 1.0]]), ValueError, "1-D"),
        (dict(ranks=[], log_evidence=[]), ValueError, "non-empty"),
        (dict(ranks=[1, 1], log_evidence=[0.0, 1.0]), ValueError, "must not repeat"),
        (dict(ranks=[1, np.nan], log_evidence=[0.0, 1.0]), ValueError, "finite"),
        (dict(ranks=["a", "b"], log_evidence=[0.0, 1.0]), TypeError, "ranks must be numbers"),
        (dict(ranks=[1, 2], log_evidence=["x", "y"]), TypeError, "log_evidence must be numbers"),
        (dict(OK, log_evidence_std=[1.0]), ValueError, "one standard error"),
        (dict(OK, log_evidence_std=[-1.0, 1.0]), ValueError, "non-negative"),
        (dict(OK, log_evidence_std=[np.inf, 1.0]), ValueError, "finite"),
        (dict(OK, best_rank=3), ValueError, "not one of the ranks"),
        (dict(OK, best_rank="2"), TypeError, "best_rank"),
        (dict(OK, param_name=3), TypeError, "param_name"),
        (dict(OK, n_std=-1), ValueError, "n_std"),
        (dict(OK, n_std=np.nan), ValueError, "n_std"),
        (dict(OK, n_std="2"), TypeError, "n_std"),
    ],
)
def test_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        EvidenceCurveDisplay.from_results(**kwargs)
    assert plt.get_fignums() == []  # validated before any figure is made


def test_import_without_matplotlib():
    # A fresh interpreter: importing the package pulls in no matplotlib, and
    # with matplotlib made unimportable, plot says which extra to install.
    code = textwrap.dedent(
        """
        import sys
        import skevidence.plotting
        loaded = sorted(m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib."))
        assert not loaded, loaded
        sys.modules["matplotlib"] = None
        sys.modules["matplotlib.pyplot"] = None
        try:
            skevidence.plotting.EvidenceCurveDisplay([1, 2], [0.0, 1.0]).plot()
        except ImportError as exc:
            print(exc)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NUMBA_NUM_THREADS": "1"},
    )
    expected = 'EvidenceCurveDisplay requires matplotlib: pip install "skevidence[plot]"'
    assert out.stdout.strip() == expected


def test_error_pieces_of_a_real_selector_are_drawn():
    # Referenced TI reports what its error bar is made of; the selector keeps
    # the pieces in cv_results_ and the display draws them next to the whole.
    rng = np.random.default_rng(0)
    X = rng.poisson(rng.exponential(size=(20, 2)) @ rng.exponential(size=(2, 15)))
    sel = BayesianNMFRankSelector(ranks=[1, 2], tol=None, random_state=0).fit(X)
    pieces = {key: sel.cv_results_[key] for key in ("mc_error", "lag_error", "quadrature_error", "mode_error")}
    for values in pieces.values():
        assert values.shape == (2,) and np.all(np.isfinite(values)) and np.all(values >= 0)
    # The error bar is the root sum of squares of its pieces.
    np.testing.assert_allclose(np.sqrt(sum(v**2 for v in pieces.values())), sel.log_evidence_std_)
    disp = EvidenceCurveDisplay.from_estimator(sel).plot_error_pieces()
    assert set(disp.error_pieces_bars_) == {"Monte Carlo", "chain lag", "quadrature", "mode search", "error bar"}
    heights = [bar.get_height() for bar in disp.error_pieces_bars_["chain lag"]]
    np.testing.assert_allclose(heights, pieces["lag_error"])
    labels = [t.get_text() for t in disp.error_pieces_ax_.get_xticklabels()]
    assert labels == ["1", "2"]


def test_error_pieces_absent_or_wrong_raise():
    disp = EvidenceCurveDisplay.from_estimator(FakeSelector([1, 2], [-3.0, -2.0], [0.1, 0.2], 2))
    assert disp.error_pieces is None
    with pytest.raises(ValueError, match="no error_pieces"):
        disp.plot_error_pieces()
    disp.error_pieces = {"mc_error": [0.1]}
    with pytest.raises(ValueError, match="one value per rank"):
        disp.plot_error_pieces()
    disp.error_pieces = {"bias": [0.1, 0.2]}
    with pytest.raises(ValueError, match="unknown error pieces"):
        disp.plot_error_pieces()


def test_exact_search_records_no_pieces(X):
    search = exact_search({"n_components": [1, 2]}).fit(X)
    assert np.all(np.isnan(search.cv_results_["lag_error"]))
    assert EvidenceCurveDisplay.from_estimator(search).error_pieces is None
