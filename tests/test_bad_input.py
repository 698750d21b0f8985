"""The bad-input battery: every public estimator and function, fed what users feed them.

Hypothesis draws shapes (0-D to 4-D, empty and single-element included),
dtypes (int, float32, float64, bool, object, complex), contents (finite,
NaN, infinity, negative) and sparse formats. Every case must end either in a
finite result (the input was valid) or in a ``ValueError``/``TypeError``
whose message names the problem: never a NaN, a numba typing error, a
traceback from deep inside numpy, or a hang. Inputs that are invalid by
construction (NaN, infinity, complex, object, empty, wrong dimension,
negative where counts are expected) must raise. The number of distinct inputs
tried per target is printed at the end of the run (``conftest.py``).
"""

import collections
import re
import warnings

import numpy as np
import pytest
from scipy import sparse

hypothesis = pytest.importorskip("hypothesis", reason="the battery needs the 'test' extra")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import skevidence  # noqa: E402
from skevidence import (  # noqa: E402
    BayesianGMM,
    BayesianLinearRegression,
    BayesianLogisticRegression,
    BayesianNMFRankSelector,
    EvidenceGridSearch,
    GaussianAdditiveModel,
    PARAFACRankSelector,
    PoissonNMF,
    PoissonPARAFAC,
    SemiSupervisedNMF,
)
from skevidence.audio import SpectrogramTransformer  # noqa: E402

#: Per target, the distinct inputs tried (reported at the end of the session).
TRIED = collections.defaultdict(set)

#: What a message must mention for each kind of problem (any of the words, case-insensitive).
NAMES = {
    "nan": r"nan|infinit|finite",
    "inf": r"nan|infinit|finite",
    "complex": r"complex",
    "object": r"object|convert|numeric|dtype|string|real",
    "empty": r"empty|0 sample|0 feature|at least|no data|minimum",
    "ndim": r"dimension|\dd|\d-d|array|shape|tensor|expected",
    "negative": r"negative|non-negative|nonnegative",
    "sparse": r"sparse",
}

#: Kinds of target that take sparse input.
SPARSE_KINDS = ("matrix", "counts", "tensor", "tensor-counts")

FAST_STI = dict(temperatures=3, n_samples=40, n_burnin=10, random_state=0)
#: The same chains for the continuous estimators, whose settings are in method_params.
FAST_STI_PARAMS = dict(method_params=dict(temperatures=3, n_samples=40, n_burnin=10), random_state=0)
#: One short round of referenced TI for the CP estimators, and a short Chib's method.
FAST_CP = dict(method_params=dict(n_temperatures=4, n_burnin=10, n_keep=20, n_starts=2), tol=None, random_state=0)
FAST_CHIB = dict(n_samples=30, n_burnin=10, n_reduced=20)
FAST_SGAIS_PARAMS = dict(method_params=dict(n_particles=4, target_ess=2, n_steps=2), random_state=0)


class _Function:
    """A public evidence function behind ``fit``, so the battery drives it like an estimator."""

    def __init__(self, function, model, **kwargs):
        self.function, self.model, self.kwargs = function, model, kwargs

    def fit(self, X, y=None):
        self.log_evidence_ = self.function(self.model, X, y, **self.kwargs).log_evidence
        return self


def _gaussian_additive():
    from skevidence.models import GaussianAdditive

    return GaussianAdditive(n_components=2)


class _EventTensor:
    """``event_count_tensor`` fed the columns of X (sender, receiver, time)."""

    def fit(self, X, y=None):
        from skevidence.datasets import event_count_tensor

        if sparse.issparse(X):
            raise TypeError("a sparse matrix is not an event log (the wrapper takes dense columns)")
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != 3:
            raise ValueError(f"expected an array of shape (n_events, 3), got {X.shape}")
        self.log_evidence_ = float(event_count_tensor(X[:, 0], X[:, 1], X[:, 2]).tensor.sum())
        return self

#: target name -> (factory, kind): "matrix" (non-negative 2-D), "regression" (X, y),
#: "real" (2-D real), "tensor" (3-D counts), "waveform" (1-D or a list of 1-D).
TARGETS = {
    "GaussianAdditiveModel": (lambda: GaussianAdditiveModel(n_components=2, **FAST_STI_PARAMS), "real"),
    "GaussianAdditiveModel(exact)": (lambda: GaussianAdditiveModel(n_components=2, method="exact"), "real"),
    "BayesianLinearRegression": (lambda: BayesianLinearRegression(**FAST_STI_PARAMS), "regression"),
    "PoissonNMF": (lambda: PoissonNMF(n_components=1, **FAST_CP), "matrix"),
    "PoissonNMF(chib)": (
        lambda: PoissonNMF(n_components=1, method="chib", method_params=FAST_CHIB, random_state=0), "counts",
    ),
    "BayesianNMFRankSelector": (lambda: BayesianNMFRankSelector(ranks=(1,), **FAST_CP), "matrix"),
    "SemiSupervisedNMF": (lambda: SemiSupervisedNMF(n_components=1, max_iter=3, random_state=0), "matrix"),
    "EvidenceGridSearch": (
        lambda: EvidenceGridSearch(GaussianAdditiveModel(method="exact"), {"n_components": [1, 2]},
                                   error_score="raise"),
        "real",
    ),
    "SpectrogramTransformer": (lambda: SpectrogramTransformer(n_fft=8), "waveform"),
    "sti_log_evidence": (
        lambda: _Function(skevidence.sti_log_evidence, _gaussian_additive(), **FAST_STI), "observations",
    ),
    "sgais_log_evidence": (
        lambda: _Function(skevidence.sgais_log_evidence, _gaussian_additive(), n_particles=4, target_ess=2,
                          n_steps=2, random_state=0),
        "observations",
    ),
    "ais_log_evidence": (
        lambda: _Function(skevidence.ais_log_evidence, _gaussian_additive(), n_particles=3, n_temperatures=5,
                          random_state=0),
        "observations",
    ),
    "exact_log_evidence": (
        lambda: _Function(skevidence.exact_log_evidence, _gaussian_additive()), "observations",
    ),
    "event_count_tensor": (lambda: _EventTensor(), "events"),
    "PoissonPARAFAC": (lambda: PoissonPARAFAC(rank=1, **FAST_CP), "tensor"),
    "PoissonPARAFAC(chib)": (
        lambda: PoissonPARAFAC(rank=1, method="chib", method_params=FAST_CHIB, random_state=0), "tensor-counts",
    ),
    "PARAFACRankSelector": (lambda: PARAFACRankSelector(ranks=(1,), **FAST_CP), "tensor"),
    "BayesianLogisticRegression": (
        lambda: BayesianLogisticRegression(**FAST_SGAIS_PARAMS),
        "classification",
    ),
    "BayesianGMM": (
        lambda: BayesianGMM(n_components=2, **FAST_SGAIS_PARAMS), "real",
    ),
    "BayesianLinearRegression(sgais)": (
        lambda: BayesianLinearRegression(method="sgais", **FAST_SGAIS_PARAMS),
        "regression",
    ),
}

DTYPES = ("int64", "float32", "float64", "bool", "object", "complex128")
FILLS = ("finite", "nan", "inf", "negative", "zeros")


@st.composite
def arrays(draw):
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from(DTYPES))
    fill = draw(st.sampled_from(FILLS))
    as_sparse = draw(st.booleans()) and ndim == 2 and dtype in ("int64", "float64")
    seed = draw(st.integers(0, 3))
    return shape, dtype, fill, as_sparse, seed


def _make(shape, dtype, fill, as_sparse, seed):
    rng = np.random.default_rng(seed)
    X = np.array(rng.poisson(3.0, size=shape), dtype=np.float64)
    X += 1.0
    if fill == "zeros":
        X[...] = 0.0
    elif X.size and fill in ("nan", "inf", "negative"):
        X.flat[rng.integers(X.size)] = {"nan": np.nan, "inf": np.inf, "negative": -2.0}[fill]
    if dtype == "object":
        X = X.astype(object)
        if X.size:
            X.flat[0] = "a"  # a string, as a mis-read CSV gives
    elif dtype == "complex128":
        X = X + 1j
    elif dtype != "float64" and fill not in ("nan", "inf"):
        X = X.astype(dtype)
    if as_sparse:
        X = sparse.csr_matrix(X)
    return X


def _problems(X, kind, fill):
    """The problems an input has by construction, for a target of ``kind``."""
    problems = ["sparse"] if sparse.issparse(X) and kind not in SPARSE_KINDS else []
    arr = X.toarray() if sparse.issparse(X) else X
    if arr.dtype == object:
        problems.append("object")
    if np.iscomplexobj(arr):
        problems.append("complex")
    if fill in ("nan", "inf") and arr.size and arr.dtype != object:
        problems.append(fill)
    # A 2-D waveform input is a batch of waveforms, one per row; the Gaussian additive
    # model takes every entry of X, whatever its shape, as one observation.
    wanted = {"waveform": (1, 2), "tensor": (2, 3), "tensor-counts": (2, 3), "observations": (0, 1, 2, 3, 4)}
    wanted = wanted.get(kind, (2,))
    if (arr.ndim not in wanted or (kind == "waveform" and arr.ndim == 2 and min(arr.shape) > 1)
            or (kind == "events" and (arr.ndim != 2 or arr.shape[1] != 3))):  # fmt: skip
        problems.append("ndim")
    if arr.size == 0:
        problems.append("empty")
    if (fill == "negative" and kind in SPARSE_KINDS and arr.size
            and arr.dtype not in (object, bool) and not np.iscomplexobj(arr)):  # fmt: skip
        problems.append("negative")
    return problems


def _call(name, factory, kind, X):
    estimator = factory()
    if kind in ("regression", "classification"):
        y = np.arange(np.shape(X)[0], dtype=np.float64) if np.ndim(X) >= 1 else np.zeros(1)
        estimator.fit(X, y % 2 if kind == "classification" else y)
        return estimator.log_evidence_
    if kind == "waveform":
        return np.asarray(estimator.fit_transform(X)).sum()
    estimator.fit(X)
    if name == "SemiSupervisedNMF":
        return estimator.reconstruction_err_
    if name == "EvidenceGridSearch":
        return estimator.best_score_
    return estimator.log_evidence_ if np.ndim(estimator.log_evidence_) == 0 else estimator.log_evidence_.max()


@pytest.mark.parametrize("name", sorted(TARGETS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(case=arrays())
def test_bad_input_battery(name, case):
    factory, kind = TARGETS[name]
    shape, dtype, fill, as_sparse, seed = case
    if kind in ("counts", "tensor-counts") and fill == "finite":
        fill = "zeros" if seed == 0 else fill
    X = _make(*case)
    TRIED[name].add(case)
    problems = _problems(X, kind, fill)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = _call(name, factory, kind, X)
    except (ValueError, TypeError) as exc:
        message = str(exc)
        assert message.strip(), f"{name}: an empty {type(exc).__name__} message for {case}"
        assert "numba" not in type(exc).__module__, f"{name}: a numba error reached the user: {message}"
        if problems:
            assert any(re.search(NAMES[p], message, re.I) for p in problems), (
                f"{name}: the message does not name the problem ({problems}) of {case}: {message!r}"
            )
        return
    assert not problems, f"{name} accepted an input with {problems}: {case}"
    assert np.all(np.isfinite(result)), f"{name} returned a non-finite result {result} for {case}"


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: skevidence.temperature_ladder(0), r"temperatures|at least"),
        (lambda: skevidence.temperature_ladder(5, kind="cubic"), r"kind|power|uniform"),
        (lambda: GaussianAdditiveModel(method_params={"temperatures": [0.0, 0.5, 0.4, 1.0]}).fit(np.ones((3, 1))),
         r"increas"),
        (lambda: GaussianAdditiveModel(method_params={"temperatures": [0.1, 1.0]}).fit(np.ones((3, 1))), r"0"),
        (lambda: PoissonNMF(n_components=0).fit(np.ones((3, 3))), r"n_components"),
        (lambda: PoissonNMF(method="sti", method_params={"n_blocks": 9}).fit(np.ones((3, 3))), r"n_blocks"),
        (lambda: PoissonNMF(method_params={"n_blocks": 2}).fit(np.ones((3, 3))), r"n_blocks.*its settings are"),
        (lambda: PoissonNMF(method="chib").fit(np.full((3, 3), 0.5)), r"integer"),
        (lambda: BayesianNMFRankSelector(ranks=()).fit(np.ones((3, 3))), r"ranks"),
        (lambda: BayesianNMFRankSelector(ranks=(1, 1)).fit(np.ones((3, 3))), r"repeat"),
        (lambda: GaussianAdditiveModel(noise_var=-1.0).fit(np.ones((3, 1))), r"noise_var"),
        (lambda: GaussianAdditiveModel(method_params={"temperatures": [0.0, 2.0]}).fit(np.ones((3, 1))), r"1"),
        (lambda: GaussianAdditiveModel(method_params={"n_burnin": 50, "n_samples": 40}).fit(np.ones((3, 1))),
         r"n_burnin"),
        (lambda: GaussianAdditiveModel(method_params={"n_temperatures": 5}).fit(np.ones((3, 1))),
         r"n_temperatures.*its settings are"),
        (lambda: EvidenceGridSearch(GaussianAdditiveModel(), {"n_components": []}).fit(np.ones((3, 1))),
         r"candidate|param"),
    ],
)
def test_absurd_parameters(call, match):
    with pytest.raises((ValueError, TypeError), match=re.compile(match, re.I)):
        call()
