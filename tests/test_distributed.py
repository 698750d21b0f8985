"""Searches on a dask.distributed cluster through joblib's dask backend."""

import os

import joblib
import numba
import numpy as np
import pytest

distributed = pytest.importorskip("distributed", reason="needs the 'dask' extra")

from skevidence import BayesianNMFRankSelector, EvidenceGridSearch, GaussianAdditiveModel  # noqa: E402

#: The cluster below has two single-threaded workers on this machine: each task may
#: use half of its cores.
EXPECTED_THREADS = max(1, (os.cpu_count() or 1) // 2)


class _ThreadProbe(GaussianAdditiveModel):
    """Fails unless the task runs in a dask worker with numba capped at ``EXPECTED_THREADS``."""

    expected_threads = EXPECTED_THREADS

    def fit(self, X, y=None):
        worker = distributed.get_worker()  # raises ValueError outside a worker
        seen = numba.get_num_threads()
        if seen != self.expected_threads:
            raise AssertionError(
                f"numba uses {seen} threads in worker {worker.address}, expected {self.expected_threads}"
            )
        return super().fit(X, y)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def _nmf_data():
    rng = np.random.default_rng(0)
    return rng.poisson(4.0 * rng.exponential(size=(30, 2)) @ rng.exponential(size=(2, 20)))


def test_rank_search_on_a_local_cluster_equals_n_jobs_1(client):
    X = _nmf_data()
    # The point is the same numbers on a cluster, not a 1-nat bar: a few refinements suffice.
    settings = dict(ranks=(1, 2, 3), method_params=dict(n_temperatures=4, n_keep=200, n_burnin=100), tol=5.0,
                    random_state=0)
    local = BayesianNMFRankSelector(n_jobs=1, **settings).fit(X)
    with joblib.parallel_config(backend="dask"):
        remote = BayesianNMFRankSelector(n_jobs=-1, **settings).fit(X)
    np.testing.assert_array_equal(remote.log_evidence_, local.log_evidence_)
    np.testing.assert_array_equal(remote.log_evidence_std_, local.log_evidence_std_)
    assert remote.best_rank_ == local.best_rank_
    np.testing.assert_array_equal(remote.components_, local.components_)


def test_numba_threads_are_capped_per_worker_inside_each_task(client):
    X = np.random.default_rng(0).normal(10.0, 1.0, size=(200, 1))
    probe = _ThreadProbe(prior_mean=5.0, prior_var=0.5, method="exact")
    with joblib.parallel_config(backend="dask"):
        search = EvidenceGridSearch(probe, {"n_components": [1, 2, 3, 4]}, error_score="raise").fit(X)
    assert search.best_params_ == {"n_components": 2}


def test_probe_fails_outside_a_worker():
    X = np.random.default_rng(0).normal(10.0, 1.0, size=(50, 1))
    with pytest.raises(ValueError):
        _ThreadProbe(method="exact").fit(X)


class _FakeClient:
    """Two hosts: a 16-core one with workers of 2 and 6 threads, a 4-core one with one of 4."""

    def scheduler_info(self, n_workers=-1):
        return {
            "workers": {
                "tcp://a:1": {"host": "a", "nthreads": 2},
                "tcp://a:2": {"host": "a", "nthreads": 6},
                "tcp://b:1": {"host": "b", "nthreads": 4},
            }
        }

    def run(self, function):
        assert function is os.cpu_count
        return {"tcp://a:1": 16, "tcp://a:2": 16, "tcp://b:1": 4}


class DaskDistributedBackend:  # the name joblib's dask backend has
    client = _FakeClient()


def test_threads_per_task_follow_the_hosts_not_n_jobs(monkeypatch):
    from joblib import parallel

    from skevidence._threads import dask_threads_per_task, task_threads

    monkeypatch.setattr(parallel, "get_active_backend", lambda: (DaskDistributedBackend(), 8))
    per_worker = dask_threads_per_task()
    # Host a: 16 cores for 8 task slots -> 2 each; host b: 4 cores for 4 slots -> 1 each.
    assert per_worker == {"tcp://a:1": 2, "tcp://a:2": 2, "tcp://b:1": 1}
    # Outside a worker a task keeps the client's count.
    assert task_threads(3, per_worker) == 3


def test_no_mapping_without_the_dask_backend():
    from skevidence._threads import dask_threads_per_task

    assert dask_threads_per_task() is None


@pytest.mark.parametrize("backend", ["loky", "threading", "dask"])
@pytest.mark.parametrize("numba_threads", [1, 2])
def test_reproducibility_matrix(client, backend, numba_threads):
    """Same random_state, same numbers: any backend, n_jobs 1 or 2, numba threads 1 or 2."""
    X = _nmf_data()
    settings = dict(ranks=(1, 2), method_params=dict(n_temperatures=4, n_keep=120, n_burnin=80), tol=None,
                    random_state=0)
    reference = BayesianNMFRankSelector(n_jobs=1, **settings).fit(X)
    previous = numba.get_num_threads()
    numba.set_num_threads(min(numba_threads, numba.config.NUMBA_NUM_THREADS))
    try:
        with joblib.parallel_config(backend=backend):
            other = BayesianNMFRankSelector(n_jobs=2, **settings).fit(X)
    finally:
        numba.set_num_threads(previous)
    np.testing.assert_array_equal(other.log_evidence_, reference.log_evidence_)
    np.testing.assert_array_equal(other.components_, reference.components_)
