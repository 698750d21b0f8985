"""Candidates per second of a rank search: 1 and 2 local workers, and a dask LocalCluster.

The P2 protocol of Şimşekli et al. 2016 (Poisson NMF, 100 x 75 counts of true
rank 3, lambda = 5, ranks 1..10, T = 5, K = 10000 iterations of which the last
2000 are kept, 5 x 5 blocks, the package's STI sampler pSGLD) run by
:class:`~skevidence.BayesianNMFRankSelector` with ``method="sti"``
three ways, side by side in one run (compilation and worker start-up are
done before the clocks start):

* ``n_jobs=1`` (one process, numba may use every core);
* ``n_jobs=2`` with joblib's default (loky) backend;
* ``joblib.parallel_config(backend="dask")`` on a ``LocalCluster`` of 2
  single-threaded workers (what a real cluster adds: serialisation, the
  scheduler).

It prints wall time, candidates per second, the speed-up over ``n_jobs=1``,
and checks that the three give identical log-evidences (the same seed gives the
same numbers on any backend). Needs the ``dask`` extra.

Usage::

    python benchmarks/bench_distributed.py [--n-samples 10000] [--n-burnin 8000] [--ranks 1 ... 10]
"""

import argparse
import os
import time

import joblib
import numpy as np

import skevidence
from skevidence import BayesianNMFRankSelector

from _environment import blas_gflops, git_state
from bench_p2_nmf import make_data


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=list(range(1, 11)))
    parser.add_argument("--temperatures", type=int, default=5)
    parser.add_argument("--n-samples", type=int, default=10000)
    parser.add_argument("--n-burnin", type=int, default=8000)
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    X = make_data(3, 0)  # P2's data: true rank 3, W, H ~ Exp(5), X ~ Poisson(W H)
    best, _ = blas_gflops()
    print(f"bench_distributed — skevidence {skevidence.__version__}, {git_state()}")
    print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.2f}, dgemm {best:.1f} GFLOP/s")
    print(f"P2 data {X.shape}, sum {X.sum()}, ranks {args.ranks}, T={args.temperatures}, "
          f"K={args.n_samples} ({args.n_samples - args.n_burnin} kept), 5x5 blocks, method='sti' (pSGLD)")
    settings = dict(
        ranks=tuple(args.ranks), prior_rate=5.0, method="sti", random_state=0,
        method_params=dict(temperatures=args.temperatures, n_samples=args.n_samples, n_burnin=args.n_burnin,
                           n_blocks=5),
    )
    # Compile, and start loky's workers, before timing anything.
    warm = {**settings, "ranks": (1, 2), "method_params": {**settings["method_params"], "n_samples": 20,
                                                          "n_burnin": 10}}
    BayesianNMFRankSelector(**warm, n_jobs=1).fit(X)
    BayesianNMFRankSelector(**warm, n_jobs=2).fit(X)

    rows = []

    def timed(label, **kwargs):
        start = time.perf_counter()
        selector = BayesianNMFRankSelector(**settings, **kwargs).fit(X)
        wall = time.perf_counter() - start
        rows.append((label, wall, selector))

    timed("n_jobs=1", n_jobs=1)
    timed("n_jobs=2 (loky)", n_jobs=2)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster):
            with joblib.parallel_config(backend="dask"):
                BayesianNMFRankSelector(**warm, n_jobs=-1).fit(X)  # compile on the workers
                timed("LocalCluster 2x1 (dask)", n_jobs=-1)

    base = rows[0][1]
    n = len(args.ranks)
    print(f"\n{'how':<26} {'wall (s)':>9} {'cand./s':>8} {'speed-up':>9} {'best':>5} {'same numbers':>13}")
    for label, wall, selector in rows:
        same = np.array_equal(selector.log_evidence_, rows[0][2].log_evidence_)
        print(f"{label:<26} {wall:9.1f} {n / wall:8.3f} {base / wall:9.2f} {selector.best_rank_:>5} {str(same):>13}")


if __name__ == "__main__":
    main()
