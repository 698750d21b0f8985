"""The mixture evidence of ``BayesianGMM`` against references, and the number of components it picks.

Three checks, each against a reference that shares no code with the model:

1. **Exact, tiny data.** One-dimensional, N = 10 (two groups of 5): the
   evidence summed over all K^N assignments of the conjugate model
   (``tests/gmm_exact.py``) against SGAIS and full-data AIS, K = 1, 2, 3.
2. **Nested sampling, a small two-dimensional case.** N = 60 from two
   overlapping unit blobs 2.5 apart: dynesty (``pip install
   "skevidence[benchmark]"``; skipped when missing), long full-data AIS and
   SGAIS, K = 1, 2, 3.
3. **Selection.** N = 3000 from 3, 4 and 5 separated unit blobs (8 to 12
   standard deviations apart; the 4-blob set is the one of the defect report)
   and N = 1000 from an overlapping pair (2 standard deviations apart), K =
   1..6: SGAIS (the estimator's defaults) against the term of the true
   partition under all its labellings (a strict lower bound of the evidence,
   tight when no point is ambiguous) and, for the overlapping pair, against
   full-data AIS; with the K chosen by each and by the BIC of
   ``GaussianMixture(covariance_type="diag")``.

``--learning-rate 0.1`` reruns the selection with the rate that over-selected.
Run ``python benchmarks/bench_gmm_evidence.py --help`` for the options.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import make_blobs
from sklearn.mixture import GaussianMixture

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from gmm_exact import gmm_exact_log_evidence  # noqa: E402
from skevidence import BayesianGMM  # noqa: E402
from skevidence._config import GMM_SGAIS_DEFAULTS  # noqa: E402
from skevidence.evidence import ais_log_evidence  # noqa: E402
from skevidence.models import DiagonalGaussianMixture  # noqa: E402

from _environment import git_state  # noqa: E402
from bench_p6_sgais import prior_transform  # noqa: E402
from test_gmm_evidence import partition_log_evidence  # noqa: E402

SEPARATED = {
    3: [[-6, 0], [0, 5], [6, -1]],
    4: [[-6, 0], [0, 5], [6, -1], [1, -6]],
    5: [[-6, 0], [0, 5], [6, -1], [1, -6], [-6, -7]],
}
OVERLAPPING = [[-1, 0], [1, 0]]


def sgais(X, k, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = BayesianGMM(n_components=k, method_params={"learning_rate": args.learning_rate},
                          random_state=args.seed).fit(X)
    return est.result_


def ais(X, k, args, n_temperatures):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ais_log_evidence(
            DiagonalGaussianMixture(X.shape[1], k), X, n_particles=args.ais_particles,
            n_temperatures=n_temperatures, random_state=args.seed,
        )  # fmt: skip


def dynesty_log_evidence(X, k, args):
    import dynesty

    model = DiagonalGaussianMixture(X.shape[1], k)
    transform, ndim, to_theta = prior_transform(model)
    Xp, _ = model.prepare_data(X)

    def loglike(v):
        return float(model.log_likelihood_particles(to_theta(v)[None, :], Xp).sum())

    sampler = dynesty.NestedSampler(loglike, transform, ndim, nlive=args.nlive, bound="multi", sample="auto",
                                    rstate=np.random.default_rng(args.seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dynesty's notes on its bounds: the multimodal posterior
        sampler.run_nested(dlogz=0.1, print_progress=False)
    res = sampler.results
    return float(res.logz[-1]), float(res.logzerr[-1])


def fmt(value, err=None):
    if value is None:
        return f"{'-':>20}"
    return f"{value:>11.2f} ± {err:<6.2f}" if err is not None else f"{value:>20.2f}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--learning-rate", type=float, default=GMM_SGAIS_DEFAULTS["learning_rate"],
                        help="SGAIS per-observation learning rate (default: the estimator's)")
    parser.add_argument("--ais-particles", type=int, default=20)
    parser.add_argument("--ais-temperatures", type=int, default=1000)
    parser.add_argument("--nlive", type=int, default=500, help="dynesty live points")
    parser.add_argument("--quick", action="store_true", help="selection on N = 1000 and the 4-blob set only")
    parser.add_argument("--parts", default="123", help="which of the three checks to run (default: 123)")
    args = parser.parse_args(argv)
    print(f"bench_gmm_evidence: {git_state()}, seed {args.seed}, SGAIS learning rate {args.learning_rate:g}")

    if "1" in args.parts:
        exact_table(args)
    if "2" in args.parts:
        nested_sampling_table(args)
    if "3" in args.parts:
        selection_tables(args)


def exact_table(args):
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(-1.5, 0.5, (5, 1)), rng.normal(1.5, 0.5, (5, 1))])
    print("\n1. Exact evidence, 1-D, N = 10 (sum over all K^N assignments)")
    print(f"{'K':>2} {'exact':>20} {'SGAIS':>20} {'AIS':>20}")
    for k in (1, 2, 3):
        s, a = sgais(X, k, args), ais(X, k, args, args.ais_temperatures)
        print(f"{k:>2} {fmt(gmm_exact_log_evidence(X, k))} {fmt(s.log_evidence, s.std_error)} "
              f"{fmt(a.log_evidence, a.std_error)}", flush=True)



def nested_sampling_table(args):
    X, _ = make_blobs(n_samples=60, centers=[[-1.25, 0], [1.25, 0]], cluster_std=1.0, random_state=3)
    try:
        import dynesty

        have_dynesty = f"dynesty {dynesty.__version__}, {args.nlive} live points"
    except ImportError:
        have_dynesty = None
    print(f"\n2. 2-D, N = 60, two unit blobs 2.5 apart: {have_dynesty or 'dynesty not installed: skipped'}")
    print(f"{'K':>2} {'dynesty':>20} {'AIS':>20} {'SGAIS':>20}")
    for k in (1, 2, 3):
        d = dynesty_log_evidence(X, k, args) if have_dynesty else (None, None)
        a, s = ais(X, k, args, args.ais_temperatures), sgais(X, k, args)
        print(f"{k:>2} {fmt(*d)} {fmt(a.log_evidence, a.std_error)} {fmt(s.log_evidence, s.std_error)}",
              flush=True)



def selection_tables(args):
    cases = [(f"{g} separated blobs", SEPARATED[g]) for g in ((4,) if args.quick else (3, 4, 5))]
    cases.append(("overlapping pair", OVERLAPPING))
    for name, centers in cases:
        n = 1000 if args.quick or name == "overlapping pair" else 3000
        X, labels = make_blobs(n_samples=n, centers=centers, cluster_std=1.0, random_state=11)
        overlapping = name == "overlapping pair"
        ref_name = "AIS" if overlapping else "true partition"
        print(f"\n3. {name}, N = {n}: SGAIS against the {ref_name}{' (lower bound)' if not overlapping else ''}")
        print(f"{'K':>2} {'SGAIS':>20} {ref_name:>20} {'SGAIS - ref':>12} {'BIC':>10} {'time':>7}")
        rows = []
        for k in range(1, 7):
            start = time.perf_counter()
            s = sgais(X, k, args)
            elapsed = time.perf_counter() - start
            if overlapping:
                a = ais(X, k, args, args.ais_temperatures // 2) if k <= 3 else None
                ref, ref_err = (a.log_evidence, a.std_error) if a is not None else (None, None)
            else:
                ref, ref_err = (partition_log_evidence(X, labels, k), None) if k >= len(centers) else (None, None)
            bic = GaussianMixture(k, covariance_type="diag", random_state=0, n_init=3).fit(X).bic(X)
            rows.append((k, s.log_evidence, ref, bic))
            diff = f"{s.log_evidence - ref:>12.2f}" if ref is not None else f"{'-':>12}"
            print(f"{k:>2} {fmt(s.log_evidence, s.std_error)} {fmt(ref, ref_err)} {diff} {bic:>10.0f} "
                  f"{elapsed:>6.1f}s", flush=True)
        pick = lambda col, best: best(range(6), key=lambda i: rows[i][col] if rows[i][col] is not None else np.nan)  # noqa: E731, B023 (called at once)
        refs = [r[2] for r in rows if r[2] is not None]
        ref_k = next(r[0] for r in rows if r[2] is not None and r[2] == max(refs))
        print(f"chosen K: SGAIS {rows[pick(1, max)][0]}, {ref_name} {ref_k} (among the K it covers), "
              f"BIC {rows[pick(3, min)][0]}, truth {len(centers)}")


if __name__ == "__main__":
    main()
