"""Numba's thread count, set per task and always restored."""

import os
from collections import Counter
from contextlib import contextmanager

from joblib import effective_n_jobs

__all__ = ["dask_threads_per_task", "numba_threads", "task_threads", "threads_per_task"]


def threads_per_task(n_jobs):
    """Numba threads each of ``n_jobs`` parallel tasks may use without oversubscribing the cores."""
    cores = os.cpu_count() or 1
    return max(1, cores // max(1, effective_n_jobs(n_jobs)))


def dask_threads_per_task():
    """``{worker address: numba threads per task}`` under joblib's dask backend, else ``None``.

    A worker's tasks share its machine with the tasks of every other worker on
    the same host, so each task gets ``cores // (task slots on the host)``:
    the host's cores as the worker measures them, divided by the sum of the
    ``nthreads`` of the workers on that host. Computed once on the client,
    because a task cannot see the other workers of its host.
    """
    from joblib.parallel import get_active_backend

    backend, _ = get_active_backend()
    if type(backend).__name__ != "DaskDistributedBackend":
        return None
    workers = backend.client.scheduler_info(n_workers=-1)["workers"]
    cores = backend.client.run(os.cpu_count)
    slots = Counter()
    for info in workers.values():
        slots[info["host"]] += info["nthreads"]
    return {address: max(1, (cores.get(address) or 1) // max(1, slots[info["host"]]))
            for address, info in workers.items()}


def task_threads(n_threads, per_worker=None):
    """The thread count of this task: its dask worker's entry of ``per_worker``, else ``n_threads``."""
    if per_worker:
        try:
            from distributed import get_worker

            return per_worker.get(get_worker().address, 1)
        except (ImportError, ValueError):  # not inside a dask worker
            pass
    return n_threads


@contextmanager
def numba_threads(n_threads):
    """Run the block with numba's ``prange`` capped at ``n_threads`` threads.

    ``threadpoolctl`` does not reach numba's pool, and loky sets
    ``NUMBA_NUM_THREADS`` for its workers while dask does not, so each task
    sets the count itself (bounded by what this process's pool allows) and
    restores it in ``finally``. Numba's count is per thread, so tasks running
    in the threads of one dask worker do not disturb each other.
    """
    import numba

    previous = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n_threads), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(previous)
