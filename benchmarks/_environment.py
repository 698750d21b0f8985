"""What every benchmark prints about the machine and the code it ran on.

Imported by the ``bench_*.py`` scripts, which run as ``python benchmarks/bench_*.py``
(their folder is then on ``sys.path``).
"""

import subprocess
import time
from pathlib import Path

import numpy as np

__all__ = ["blas_gflops", "blas_threads", "git_state"]


def blas_gflops(n=1000, repeats=5, threads=None):
    """Best and median GFLOP/s of an n x n float64 np.dot (2 n^3 flops); ``threads`` caps BLAS."""
    rng = np.random.default_rng(12345)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))

    def measure():
        np.dot(a, b)  # warm-up (thread pool start-up)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            np.dot(a, b)
            times.append(time.perf_counter() - t0)
        flops = 2.0 * n**3
        return flops / min(times) / 1e9, flops / float(np.median(times)) / 1e9

    if threads is None:
        return measure()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return np.nan, np.nan
    with threadpool_limits(limits=threads, user_api="blas"):
        return measure()


def blas_threads():
    try:
        from threadpoolctl import threadpool_info

        return ",".join(f"{i['internal_api']}:{i['num_threads']}" for i in threadpool_info() if i["user_api"] == "blas")
    except Exception:  # threadpoolctl is optional here
        return "?"


def git_state():
    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "skevidence"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        return f"git {head}, skevidence/ {'has uncommitted changes' if dirty else 'clean'}"
    except Exception:
        return "git state unknown"
