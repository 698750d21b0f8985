"""Protocol P4 (Nguyen et al. 2018, Fig. 2a): the rank of a small Poisson PARAFAC, STI against Chib.

Tensors of 10 x 15 x 20 counts are drawn from the model (Nguyen et al. 2018, eq. 11:
A, B, C ~ Exp(rate 3), X ~ Poisson(sum_r a_r o b_r o c_r)) for each true
rank, and the evidence of ranks 1..11 is estimated side by side by

* STI-pSGLD and STI-SGLD with the paper's settings (uniform ladder of T = 10,
  parts of IJK/25 entries (B = 5), L = 2000 iterations of which the last 500
  are kept, step sizes (a/l)^b with a = 1e-8, b = 0.51; pSGLD alpha = 0.99,
  sigma = 1e-5);
* STI-pSGLD with its automatic step on a power ladder of 20 temperatures of
  10000 iterations (4000 burn-in), "STI-pSGLD-long";
* RTI: ``PoissonPARAFAC`` at its defaults (``method="rti"``, referenced TI
  with Metropolis-adjusted HMC, refined to ``tol``), the library's default;
* Chib's method (Gibbs with latent sources), the reference.

It prints per rank the log-evidence +- SE and the time of each method, the
argmax of each, how far each other method is from Chib near Chib's mode (the
mean over the ranks within 2 of it, and the difference and its z-score at
the mode and its neighbours), and whether pSGLD is closer to Chib than SGLD,
as the paper found.

Usage::

    python benchmarks/bench_p4_parafac.py [--true-ranks 3 6] [--ranks 1 ... 11] [--n-jobs 2]
        [--chib-samples 3000] [--seed 0]
"""

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.base import clone

import skevidence
from skevidence import EvidenceGridSearch, PoissonPARAFAC

from _environment import blas_gflops, git_state

SHAPE, RATE = (10, 15, 20), 3.0


def make_data(true_rank, seed):
    rng = np.random.default_rng(np.random.SeedSequence([seed, true_rank]))
    A, B, C = (rng.exponential(1.0 / RATE, size=(n, true_rank)) for n in SHAPE)
    return rng.poisson(np.einsum("ir,jr,kr->ijk", A, B, C))


def methods(chib_samples):
    paper = dict(temperatures=10, ladder="uniform", n_samples=2000, n_burnin=1500, n_blocks=5, step_size=1e-8,
                 step_decay=0.51)
    return {
        "STI-pSGLD": PoissonPARAFAC(prior_rate=RATE, method="sti", method_params=dict(sampler="psgld", **paper)),
        "STI-SGLD": PoissonPARAFAC(prior_rate=RATE, method="sti", method_params=dict(sampler="sgld", **paper)),
        # pSGLD with its automatic step on a power ladder of 20 temperatures of 10000 iterations (4000
        # burn-in): what a longer run and a finer ladder do to the paper-settings gap.
        "STI-pSGLD-long": PoissonPARAFAC(prior_rate=RATE, method="sti", method_params=dict(
            sampler="psgld", temperatures=20, n_samples=10000, n_burnin=4000, n_blocks=5)),
        # The estimator's default method (referenced TI).
        "RTI": PoissonPARAFAC(prior_rate=RATE),
        "Chib": PoissonPARAFAC(prior_rate=RATE, method="chib", method_params=dict(
            n_samples=chib_samples, n_burnin=chib_samples // 2, n_reduced=chib_samples // 2)),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--true-ranks", type=int, nargs="+", default=[3, 6])
    parser.add_argument("--ranks", type=int, nargs="+", default=list(range(1, 12)))
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--chib-samples", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    best, _ = blas_gflops()
    print(f"P4 (Nguyen et al. 2018, Fig. 2a) — skevidence {skevidence.__version__}, {git_state()}")
    print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.2f}, dgemm {best:.1f} GFLOP/s; n_jobs={args.n_jobs}")
    ranks = np.asarray(args.ranks)
    for true_rank in args.true_ranks:
        X = make_data(true_rank, args.seed)
        print(f"\ntrue rank {true_rank}: X {X.shape}, {X.sum()} counts, {np.count_nonzero(X)} non-zero")
        results = {}
        warned = []
        for name, estimator in methods(args.chib_samples).items():
            estimator.set_params(random_state=args.seed)
            start = time.perf_counter()
            if name == "Chib":
                # One rank at a time in this process, to see which estimates Chib warns about.
                values, errors = [], []
                for rank in args.ranks:
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        fitted = clone(estimator).set_params(rank=rank).fit(X)
                    values.append(fitted.log_evidence_)
                    errors.append(fitted.log_evidence_std_)
                    warned.append(any("few draws" in str(w.message) for w in caught))
                values = np.array(values)
                results[name] = (values, np.array(errors), time.perf_counter() - start, int(ranks[np.argmax(values)]))
                continue
            search = EvidenceGridSearch(estimator, {"rank": list(args.ranks)}, n_jobs=args.n_jobs).fit(X)
            wall = time.perf_counter() - start
            res = search.cv_results_
            results[name] = (res["mean_test_score"], res["std_log_evidence"], wall, int(search.best_params_["rank"]))
        names = list(results)
        print(f"{'rank':>4} " + " ".join(f"{n:>22}" for n in names))
        for k, rank in enumerate(ranks):
            cells = [
                f"{results[n][0][k]:12.2f} ± {results[n][1][k]:6.2f}" + ("* " if n == "Chib" and warned[k] else "  ")
                for n in names
            ]
            print(f"{rank:>4} " + " ".join(cells))
        print(f"{'time':>4} " + " ".join(f"{results[n][2]:20.1f} s" for n in names))
        print(f"{'best':>4} " + " ".join(f"{results[n][3]:22d}" for n in names))
        print("* Chib warned that the estimate rests on few draws (likely too high): over-fitted ranks")
        reliable = ~np.array(warned)
        if reliable.any():
            chib_reliable = int(ranks[reliable][np.argmax(results["Chib"][0][reliable])])
            print(f"Chib's argmax among the ranks it did not warn about: {chib_reliable}")
        chib = results["Chib"][0]
        mode = results["Chib"][3]
        near = np.abs(ranks - mode) <= 2
        gaps = {n: float(np.mean(np.abs(results[n][0][near] - chib[near]))) for n in names if n != "Chib"}
        print("mean |method - Chib| over ranks within 2 of Chib's mode: "
              + ", ".join(f"{n} {g:.2f}" for n, g in gaps.items()))
        chib_se = results["Chib"][1]
        for n in names[:-1]:
            cells = []
            for k in np.flatnonzero(np.abs(ranks - mode) <= 1):
                diff = results[n][0][k] - chib[k]
                z = diff / np.hypot(results[n][1][k], chib_se[k])
                cells.append(f"R={ranks[k]} {diff:+.1f} ({z:+.1f})")
            print(f"  {n:>15} - Chib at Chib's mode ± 1, nats (z): " + ", ".join(cells))
        print(f"pSGLD closer to Chib than SGLD: {gaps['STI-pSGLD'] < gaps['STI-SGLD']}; "
              f"argmax = true rank: " + ", ".join(f"{n} {results[n][3] == true_rank}" for n in names))


if __name__ == "__main__":
    main()
