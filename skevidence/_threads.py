"""Numba's thread count, set per task and always restored."""

import os
from contextlib import contextmanager

from joblib import effective_n_jobs

__all__ = ["numba_threads", "threads_per_task"]


def threads_per_task(n_jobs):
    """Numba threads each of ``n_jobs`` parallel tasks may use without oversubscribing the cores."""
    cores = os.cpu_count() or 1
    return max(1, cores // max(1, effective_n_jobs(n_jobs)))


@contextmanager
def numba_threads(n_threads):
    """Run the block with numba's ``prange`` capped at ``n_threads`` threads.

    ``threadpoolctl`` does not reach numba's pool, and loky sets
    ``NUMBA_NUM_THREADS`` for its workers while dask does not, so each task
    sets the count itself (bounded by what this process's pool allows) and
    restores it in ``finally``.
    """
    import numba

    previous = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n_threads), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(previous)
