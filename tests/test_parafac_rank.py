"""PARAFACRankSelector: the rank of a Poisson PARAFAC by the evidence."""

import numpy as np
import pytest
from scipy import sparse
from sklearn.utils.estimator_checks import parametrize_with_checks

from skevidence import EvidenceGridSearch, PARAFACRankSelector, PoissonPARAFAC

# One short round of referenced TI: these tests are of the API, not of the accuracy.
FAST = dict(method_params=dict(n_temperatures=4, n_burnin=20, n_keep=40, n_starts=2), tol=None, random_state=0)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _tensor(rank=2, shape=(10, 8, 6), scale=3.0, seed=0):
    rng = np.random.default_rng(seed)
    A, B, C = (scale * rng.exponential(size=(n, rank)) for n in shape)
    return rng.poisson(np.einsum("ir,jr,kr->ijk", A, B, C))


@parametrize_with_checks([PARAFACRankSelector(ranks=(1, 2), method="sti",
                                              method_params=dict(temperatures=2, n_samples=40, n_burnin=10),
                                              random_state=0)])  # fmt: skip
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_selector_reports_every_rank_like_the_search_it_wraps():
    X = _tensor()
    # A grid method fits every rank once, as the search does.
    params = dict(method="chib", random_state=0)
    sel = PARAFACRankSelector(ranks=(1, 2, 3), **params).fit(X)
    search = EvidenceGridSearch(PoissonPARAFAC(**params), {"rank": [1, 2, 3]}).fit(X)
    np.testing.assert_array_equal(sel.ranks_, [1, 2, 3])
    np.testing.assert_array_equal(sel.log_evidence_, search.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(sel.log_evidence_std_, search.cv_results_["std_log_evidence"])
    np.testing.assert_allclose(sel.model_probabilities_.sum(), 1.0)
    assert sel.best_rank_ == int(sel.ranks_[np.argmax(sel.log_evidence_)])
    assert sel.best_estimator_.rank == sel.best_rank_
    assert [F.shape for F in sel.factors_] == [(10, sel.best_rank_), (8, sel.best_rank_), (6, sel.best_rank_)]
    assert sel.score(X) == sel.log_evidence_[sel.ranks_ == sel.best_rank_][0]


def test_true_rank_wins_or_is_in_the_running_on_a_clear_tensor():
    X = _tensor(rank=2, shape=(12, 10, 8), scale=3.0, seed=1)
    sel = PARAFACRankSelector(ranks=(1, 2, 3), random_state=0).fit(X)
    best = int(np.argmax(sel.log_evidence_))
    gaps = (sel.log_evidence_[best] - sel.log_evidence_) / np.hypot(sel.log_evidence_std_, sel.log_evidence_std_[best])
    assert gaps[0] > 3.0  # rank 1 is out
    assert sel.best_rank_ == 2 or (gaps[1] <= 3.0 and not sel.decided_), sel.log_evidence_


def test_sparse_dense_and_n_jobs_give_the_same_numbers():
    X = _tensor()
    dense = PARAFACRankSelector(ranks=(1, 2), n_jobs=1, **FAST).fit(X)
    coords = np.nonzero(X)
    coo = sparse.coo_array((X[coords].astype(float), coords), shape=X.shape)
    other = PARAFACRankSelector(ranks=(1, 2), n_jobs=2, **FAST).fit(coo)
    np.testing.assert_allclose(other.log_evidence_, dense.log_evidence_, rtol=1e-9)


def test_search_over_rank_and_prior_rate():
    X = _tensor()
    grid = {"rank": [1, 2], "prior_rate": [0.01, 1.8, 3.0]}
    search = EvidenceGridSearch(PoissonPARAFAC(**FAST), grid).fit(X)
    assert len(search.cv_results_["params"]) == 6
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_params_["rank"] in (1, 2)


@pytest.mark.parametrize(
    "ranks, match",
    [((0, 1), "at least 1"), ((1, 1), "repeat"), ((), "non-empty"), ((1.5,), "integers")],
)
def test_bad_ranks(ranks, match):
    with pytest.raises(ValueError, match=match):
        PARAFACRankSelector(ranks=ranks, **FAST).fit(_tensor())


def test_ranks_above_what_a_tensor_pins_down_are_proper_models():
    X = np.random.default_rng(0).poisson(2.0, size=(3, 2, 2))
    sel = PARAFACRankSelector(ranks=(1, 6), **FAST).fit(X)
    assert np.all(np.isfinite(sel.log_evidence_))


@pytest.mark.parametrize(
    "X, match",
    [(np.ones(5), "(?i)2D|3-D|dimension"), (np.ones((2, 2, 2, 2)), "(?i)3-D|dimension"),
     (-np.ones((3, 3, 3)), "(?i)negative"), (np.full((3, 3, 3), np.nan), "NaN|infinity"),
     (np.ones((0, 3, 3)), "empty")],
)
def test_bad_tensors(X, match):
    with pytest.raises(ValueError, match=match):
        PARAFACRankSelector(ranks=(1,), **FAST).fit(X)
