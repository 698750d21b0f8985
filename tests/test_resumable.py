"""Resumable searches: EvidenceGridSearch(memory=...) keeps finished candidates."""

import joblib
import numpy as np
import pytest

from skevidence import EvidenceGridSearch, GaussianAdditiveModel

#: Ranks fitted so far, and the ranks whose fit raises (module state: n_jobs=1 runs in-process).
FITTED = []
FAIL_AT = set()
FAILURE = {"type": KeyboardInterrupt}


class _Interruptible(GaussianAdditiveModel):
    """Records every fit; raises for the ranks in ``FAIL_AT`` (a crash mid-search)."""

    def fit(self, X, y=None):
        if self.n_components in FAIL_AT:
            raise FAILURE["type"](f"interrupted at rank {self.n_components}")
        FITTED.append(self.n_components)
        return super().fit(X, y)


def _search(memory, **kwargs):
    model = _Interruptible(
        prior_mean=5.0, prior_var=0.5, noise_var=5.0,
        method_params=dict(temperatures=4, n_samples=300, n_burnin=100), random_state=0,
    )
    return EvidenceGridSearch(model, {"n_components": [1, 2, 3, 4]}, memory=memory, **kwargs)


@pytest.fixture
def data():
    FITTED.clear()
    FAIL_AT.clear()
    FAILURE["type"] = KeyboardInterrupt
    return np.random.default_rng(0).normal(10.0, np.sqrt(5.0), size=(300, 1))


@pytest.mark.parametrize("how", ["path", "joblib.Memory"])
def test_interrupted_search_resumes_without_refitting(data, tmp_path, how):
    memory = str(tmp_path) if how == "path" else joblib.Memory(tmp_path, verbose=0)
    reference = _search(None).fit(data)
    FITTED.clear()

    FAIL_AT.add(3)  # Ctrl-C while the third candidate runs
    with pytest.raises(KeyboardInterrupt, match="rank 3"):
        _search(memory).fit(data)
    assert FITTED == [1, 2]

    FITTED.clear()
    FAIL_AT.clear()
    resumed = _search(memory).fit(data)
    assert FITTED == [3, 4], "finished candidates must be loaded, not fitted again"
    for key in ("mean_test_score", "std_log_evidence", "model_probability", "rank_test_score"):
        np.testing.assert_array_equal(resumed.cv_results_[key], reference.cv_results_[key])
    assert resumed.best_params_ == reference.best_params_
    assert resumed.best_estimator_.log_evidence_ == reference.best_estimator_.log_evidence_

    FITTED.clear()
    _search(memory).fit(data)
    assert FITTED == [], "a finished search is loaded whole"


def test_failed_candidates_are_not_cached(data, tmp_path):
    FAILURE["type"] = RuntimeError
    FAIL_AT.add(2)
    with pytest.warns(UserWarning, match="failed"):
        first = _search(str(tmp_path), error_score=np.nan).fit(data)
    assert first.cv_results_["error"][1] and FITTED == [1, 3, 4]
    FITTED.clear()
    FAIL_AT.clear()
    second = _search(str(tmp_path)).fit(data)
    assert FITTED == [2], "only the failed candidate is tried again"
    assert not any(second.cv_results_["error"])


def test_cache_is_keyed_by_data_and_parameters(data, tmp_path):
    _search(str(tmp_path)).fit(data)
    FITTED.clear()
    _search(str(tmp_path)).fit(data + 1.0)
    assert FITTED == [1, 2, 3, 4], "other data must not hit the cache"
    FITTED.clear()
    search = _search(str(tmp_path))
    search.set_params(estimator__random_state=1).fit(data)
    assert FITTED == [1, 2, 3, 4], "another seed must not hit the cache"


def test_bad_memory_raises(data):
    with pytest.raises(ValueError, match="memory"):
        _search(memory=3).fit(data)
