"""How accurate are the factorisation evidences? The rank selectors and Chib's method against the SMC.

Count matrices and tensors are drawn from the model (factors ~ Exp(rate),
X ~ Poisson(CP intensity)) at ranks 2 to 6, several shapes and prior rates,
10^3 to 10^5 counts, dense and sparse. For each case and each rank around
the true one the log-evidence is estimated by

* **SMC**: the exact-kernel SMC over count arrivals (``method="smc"``), the
  yardstick: its only error is Monte-Carlo, and its error bar is the spread
  of independent runs (``smc_log_evidence``);
* **Chib**: Chib's method at the estimators' defaults (``method="chib"``);
* **RTI**: the rank selectors
  (``BayesianNMFRankSelector`` / ``PARAFACRankSelector``) at their defaults,
  which run referenced TI (``method="rti"``: every rank bracketed, the ranks
  still in the running screened by one short round, then refined to ``tol``).
  A rank out by its bracket alone is marked with the bracket's ends and
  whether they hold the SMC's value (within 3 SEs of the chains' and the
  mode search's noise): the bracket's upper end comes from a short chain.

It prints, per case and rank, each estimate with its stated standard error,
the error against the SMC in nats and in combined stated standard errors
(``z``), and per case the rank each method would choose; then a summary: the
share of (case, rank) pairs within 3 combined SEs of the SMC, and how often
each method's choice is one the SMC cannot tell from its best (within 2
combined SEs of the SMC's best rank).

Usage::

    python benchmarks/bench_accuracy.py --methods smc rti --stored   # the contract on the stored SMC's cases
    python benchmarks/bench_accuracy.py                 # Chib's method too
    python benchmarks/bench_accuracy.py --quick         # 4 small cases
    python benchmarks/bench_accuracy.py --cases m40x30r3 t10x12x8r3 --methods smc chib
    python benchmarks/bench_accuracy.py --json results.json   # also write every number
    python benchmarks/bench_accuracy.py --fresh-smc --json smc.json   # run the SMC again (hours on 2 cores)

Options: ``--particles`` and ``--runs`` set the SMC (default: by the number of counts,
see ``smc_settings``); ``--seed`` the seed of every method; ``--n-jobs`` the ranks
the selectors fit at once; ``--referee`` runs the SMC from the prior (256 particles, 4 sweeps)
where RTI and the referenced SMC differ by more than 3 combined stated errors, and the summary
counts RTI against it there (the referenced SMC's particles start at the variational fit's
mode and can miss the other modes of an over-fitted rank). The SMC is the slow part (minutes a
rank at 10^4 counts, hours for all cases), so its values at seed 0 are stored beside this script
(``data/bench_accuracy_smc.json``) and taken from there: a change to RTI or Chib's method is measured
against the yardstick without running it again. A case the file does not hold runs the SMC (add its
entry from the run's ``--json``, written after every rank). ``--reuse-smc FILE ...`` takes them
from the JSON of other runs instead (same seed; an interrupted run's ranks too); ``--fresh-smc`` runs
the SMC wherever no file given holds the case and rank (after a change to the SMC itself); ``--stored``
keeps to the cases whose SMC is taken from a file. ``--brackets`` checks instead the brackets that take
a rank out before its ladders run, at ranks far from the true one (``check_brackets``).
"""

import argparse
import json
import math
import os
import time
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import sparse

import skevidence
from skevidence import BayesianNMFRankSelector, PARAFACRankSelector, PoissonNMF, PoissonPARAFAC
from skevidence.cp import smc_log_evidence

from _environment import git_state

#: The SMC's values at seed 0, case by case: the entries of a run's ``--json`` with the SMC's results alone.
STORED_SMC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "bench_accuracy_smc.json")


@dataclass(frozen=True)
class Case:
    name: str
    shape: tuple
    true_rank: int
    prior_rate: float
    sparse: bool = False
    seed: int = 0

    def data(self):
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, *self.shape, self.true_rank]))
        factors = [rng.exponential(1.0 / self.prior_rate, size=(n, self.true_rank)) for n in self.shape]
        letters = "ijk"[: len(self.shape)]
        V = np.einsum(",".join(c + "r" for c in letters) + "->" + letters, *factors)
        X = rng.poisson(V)
        if self.sparse:
            return sparse.coo_array(X) if X.ndim == 3 else sparse.csr_matrix(X)
        return X

    def ranks(self):
        return list(range(max(1, self.true_rank - 1), self.true_rank + 2))


# Expected counts per entry = R / rate^modes: the rates set the size of the data.
CASES = [
    Case("m24x36r2", (24, 36), 2, 1.0),
    Case("m40x30r3", (40, 30), 3, 1.0),
    Case("m40x30r3s", (40, 30), 3, 1.0, seed=1),
    Case("m30x20r2", (30, 20), 2, 0.5),
    Case("m60x40r3", (60, 40), 3, 0.7),
    Case("m50x50r4", (50, 50), 4, 0.6),
    Case("m100x75r3", (100, 75), 3, 2.0),
    Case("m100x75r6", (100, 75), 6, 2.0),
    Case("m80x60r4", (80, 60), 4, 0.5),
    Case("m80x60r5", (80, 60), 5, 0.8),
    Case("m200x150r2sp", (200, 150), 2, 3.0, sparse=True),
    Case("m300x200r3sp", (300, 200), 3, 2.5, sparse=True),
    Case("m120x90r5", (120, 90), 5, 1.0),
    Case("m40x60r6", (40, 60), 6, 0.8),
    Case("t10x12x8r2", (10, 12, 8), 2, 1.0),
    Case("t10x12x8r3", (10, 12, 8), 3, 1.0),
    Case("t14x12x10r3", (14, 12, 10), 3, 0.5),
    Case("t10x15x20r4", (10, 15, 20), 4, 1.0),
    Case("t20x15x10r2sp", (20, 15, 10), 2, 2.0, sparse=True),
    Case("t30x20x15r3sp", (30, 20, 15), 3, 1.8, sparse=True),
    Case("t12x10x8r5", (12, 10, 8), 5, 0.6),
    Case("t16x16x16r4", (16, 16, 16), 4, 0.7),
]

QUICK = ["m24x36r2", "m40x30r3", "t10x12x8r3", "m200x150r2sp"]


def smc_settings(n_counts, rank):
    """Particles and runs of the referenced SMC: runs spreading by 1-3 nats, under 5 minutes a rank.

    From the variational reference the path takes a few hundred steps even at
    ~10^5 counts, so the particles set the spread (about the number of
    parameters over the particles, in nats squared).
    """
    particles = 256 if n_counts < 1e4 else 128
    return particles, 8


def n_counts(X):
    return int(X.sum())


def fit_smc(case, X, rank, args, reference="vb"):
    particles, runs = smc_settings(n_counts(X), rank)
    particles = args.particles or particles
    runs = args.runs or runs
    sweeps = 2
    if reference == "prior":
        # The referee: more particles and sweeps on the long path from the prior.
        particles, sweeps = 256, 4
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = smc_log_evidence(X, rank, case.prior_rate, n_particles=particles, n_runs=runs, n_sweeps=sweeps,
                             reference=reference, random_state=args.seed)
    return dict(value=r.log_evidence, se=r.std_error, time=time.perf_counter() - t0,
                spread=r.diagnostics["run_spread"], steps=float(np.mean(r.diagnostics["n_steps"])),
                warned=bool(caught))


def save(path, table):
    """Write ``table`` to ``path`` as JSON (the ranks, keys, become strings)."""
    with open(path, "w") as f:
        json.dump(table, f, indent=1, default=float)


def load_smc(paths, seed):
    """The SMC's values in the ``--json`` files ``paths`` at ``seed``, by ``(case, rank)`` (files written before
    the seed was recorded ran the default, 0)."""
    values = {}
    for path in paths:
        with open(path) as f:
            for name, entry in json.load(f).items():
                if entry.get("seed", 0) == seed:
                    for rank, value in entry["results"]["smc"].items():
                        values[(name, int(rank))] = dict(value, reused=True)
    return values


def fit_chib(case, X, rank, args):
    Estimator, rank_param = (PoissonNMF, "n_components") if len(case.shape) == 2 else (PoissonPARAFAC, "rank")
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = Estimator(**{rank_param: rank}, prior_rate=case.prior_rate, method="chib",
                        random_state=args.seed).fit(X)
    return dict(value=est.log_evidence_, se=est.log_evidence_std_, time=time.perf_counter() - t0,
                warned=bool(caught))


def fit_rti(case, X, ranks, args):
    Selector = BayesianNMFRankSelector if len(case.shape) == 2 else PARAFACRankSelector
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sel = Selector(ranks=ranks, prior_rate=case.prior_rate, n_jobs=args.n_jobs,
                       random_state=args.seed).fit(X)
    elapsed = time.perf_counter() - t0
    res = sel.cv_results_
    out = {}
    for i, rank in enumerate(ranks):
        out[rank] = dict(value=float(res["mean_test_score"][i]), se=float(res["std_log_evidence"][i]),
                         time=elapsed / len(ranks), warned=bool(caught))
        if res["n_rounds"][i] == 0:  # bracketed only: its ends, and the chains' and mode search's noise
            half = float(res["quadrature_error"][i])
            noise = float(np.sqrt(res["mc_error"][i] ** 2 + res["lag_error"][i] ** 2 + res["mode_error"][i] ** 2))
            out[rank]["bracket"] = (out[rank]["value"] - half, out[rank]["value"] + half, noise)
    return out


def check_brackets(cases, seed):
    """Ranks far from the true one (1 and the true rank + 3): does each bracket hold the ladder's estimate?

    The selectors take a rank out by its bracket alone where it lies far below the best; the 22
    cases' ranks lie next to the true rank, so their table never shows one. Here every bracket
    is checked against the same rank's ladder (one screening round), within 3 SEs of the
    bracket chains' and the mode search's noise plus the ladder's error bar.
    """
    from skevidence._config import RTI_DEFAULTS, SELECTOR_SCREEN
    from skevidence.cp.reference import as_data
    from skevidence.cp.rti import RankRun, run_pieces

    settings = {**RTI_DEFAULTS, **SELECTOR_SCREEN}
    holds = []
    for case in cases:
        data = as_data(case.data())
        for rank in (1, case.true_rank + 3):
            run = RankRun(data, rank, case.prior_rate, **settings, random_state=seed)
            run.finish(run_pieces(run.plan(None), 2))
            run.finish(run_pieces(run.bracket(), 2))
            b = dict(run.bracketed)
            while not run.estimated:
                run.finish(run_pieces(run.plan(None), 2))
            slack = 3.0 * (math.sqrt(b["mc"] ** 2 + b["lag"] ** 2 + run.mode_error**2) + run.error)
            holds.append(b["lower"] - slack <= run.value <= b["upper"] + slack)
            print(f"{case.name:<14} rank {rank:>2}: bracket [{b['lower']:.1f}, {b['upper']:.1f}], ladder "
                  f"{run.value:.1f} ± {run.error:.1f}: {'holds' if holds[-1] else 'MISSES'} (above the lower end "
                  f"by {run.value - b['lower']:.1f}, below the upper by {b['upper'] - run.value:.1f})", flush=True)
    print(f"the bracket holds the ladder's estimate in {sum(holds)} of {len(holds)}")


def chosen(results, ranks):
    values = [results[r]["value"] if r in results else -np.inf for r in ranks]
    return ranks[int(np.argmax(values))]


def indistinguishable(smc, ranks, rank):
    """Ranks whose SMC evidence is within 2 combined SEs of the SMC's best."""
    best = chosen(smc, ranks)
    top, top_se = smc[best]["value"], smc[best]["se"]
    return abs(smc[rank]["value"] - top) <= 2.0 * np.hypot(smc[rank]["se"], top_se)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cases", nargs="+")
    parser.add_argument("--methods", nargs="+", default=["smc", "chib", "rti"], choices=["smc", "chib", "rti"])
    parser.add_argument("--particles", type=int)
    parser.add_argument("--runs", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--json")
    parser.add_argument("--reuse-smc", nargs="+", metavar="FILE")
    parser.add_argument("--fresh-smc", action="store_true")
    parser.add_argument("--stored", action="store_true", help="only the cases the stored SMC holds")
    parser.add_argument("--referee", action="store_true")
    parser.add_argument("--brackets", action="store_true")
    args = parser.parse_args()
    stored = [STORED_SMC] if os.path.exists(STORED_SMC) and not args.fresh_smc else []
    reused = load_smc(stored if args.reuse_smc is None else args.reuse_smc, args.seed)
    names = args.cases or (QUICK if args.quick else [c.name for c in CASES])
    if args.stored:
        names = [name for name in names if name in {case for case, _ in reused}]
    cases = [c for c in CASES if c.name in names]
    if args.brackets:
        check_brackets(cases, args.seed)
        return
    if "smc" not in args.methods:
        parser.error("the SMC is the yardstick: --methods must include smc")

    print(f"skevidence {skevidence.__version__} ({git_state()}), {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.2f}; seed {args.seed}")
    header = (f"{'case':<14} {'counts':>7} {'nz%':>4} {'R':>2} {'SMC ± se (spread)':>26} {'t':>6} | "
              f"{'Chib - SMC (z)':>18} {'t':>5} | {'RTI - SMC (z)':>18} {'t':>5}")
    print(header)
    print("-" * len(header))
    table = {}
    t_start = time.perf_counter()
    for case in cases:
        X = case.data()
        dense = X.toarray() if sparse.issparse(X) else X
        counts, nz = int(dense.sum()), 100.0 * np.count_nonzero(dense) / dense.size
        ranks = case.ranks()
        results = {m: {} for m in args.methods}
        # Saved after every rank: an interrupted run's SMC is reusable (--reuse-smc).
        table[case.name] = entry = dict(case=case.__dict__, seed=args.seed, counts=counts, ranks=ranks,
                                        results=results)
        if "rti" in args.methods:
            results["rti"] = fit_rti(case, X, ranks, args)
        for rank in ranks:
            results["smc"][rank] = reused.get((case.name, rank)) or fit_smc(case, X, rank, args)
            if "chib" in args.methods:
                results["chib"][rank] = fit_chib(case, X, rank, args)
            smc = results["smc"][rank]
            smc_time = "reused" if smc.get("reused") else f"{smc['time']:>5.0f}s"
            line = (f"{case.name:<14} {counts:>7} {nz:>4.0f} {rank:>2} "
                    f"{smc['value']:>12.1f} ± {smc['se']:>4.1f} ({smc['spread']:>4.1f})"
                    f"{'!' if smc['warned'] else ' '} {smc_time:>6} |")
            for method in ("chib", "rti"):
                if method not in results:
                    line += f" {'':>18} {'':>5} |"
                    continue
                r = results[method][rank]
                diff = r["value"] - smc["value"]
                z = diff / np.hypot(r["se"], smc["se"])
                r["error"], r["z"] = diff, z
                line += f" {diff:>+9.1f} ({z:>+6.1f}){'!' if r['warned'] else ' '} {r['time']:>4.0f}s |"
            if "bracket" in results.get("rti", {}).get(rank, {}):
                # Out by its bracket alone: the SMC's value must lie between its ends, within 3 noise SEs.
                lower, upper, noise = results["rti"][rank]["bracket"]
                slack = 3.0 * np.hypot(noise, smc["se"])
                inside = lower - slack <= smc["value"] <= upper + slack
                results["rti"][rank]["bracket_holds"] = inside
                line += f" bracket [{lower:.1f}, {upper:.1f}] {'holds' if inside else 'MISSES'} the SMC"
            print(line, flush=True)
            rti = results.get("rti", {}).get(rank)
            if args.referee and rti is not None and abs(rti["z"]) > 3.0:
                # The referenced SMC starts at the variational fit's mode and can miss other modes of an
                # over-fitted rank: the path from the prior, whose particles meet every mode, referees.
                ref = results.setdefault("smc_prior", {})[rank] = fit_smc(case, X, rank, args, reference="prior")
                z = (rti["value"] - ref["value"]) / np.hypot(rti["se"], ref["se"])
                print(f"{'':<14} referee, SMC from the prior: {ref['value']:.1f} ± {ref['se']:.1f} "
                      f"({ref['time']:.0f} s); RTI - referee {rti['value'] - ref['value']:+.1f} ({z:+.1f}), "
                      f"referenced SMC - referee {smc['value'] - ref['value']:+.1f}", flush=True)
                rti["z_referee"] = z
            if args.json:
                save(args.json, table)
        picks = {m: chosen(results[m], ranks) for m in ("smc", "chib", "rti") if m in results}
        print(f"{'':<14} chosen rank: " + ", ".join(f"{m} {picks[m]}" for m in picks)
              + f" (true {case.true_rank})", flush=True)
        entry["picks"] = picks
        if args.json:
            save(args.json, table)

    print()
    print(f"summary over {len(table)} cases ({time.perf_counter() - t_start:.0f} s; "
          f"'!' = the method warned; z = error / combined stated SE):")
    for method in args.methods:
        if method == "smc":
            continue
        zs, ok_picks = [], 0
        for entry in table.values():
            res, smc = entry["results"][method], entry["results"]["smc"]
            zs += [res[r].get("z_referee", res[r]["z"]) for r in entry["ranks"]]
            ok_picks += indistinguishable(smc, entry["ranks"], entry["picks"][method])
        zs = np.abs(np.array(zs))
        print(f"  {method:<5} within 3 SE: {np.mean(zs <= 3):6.1%} of {zs.size} (case, rank) pairs; "
              f"median |z| {np.median(zs):.1f}; chooses a rank the SMC cannot tell from its best in "
              f"{ok_picks} of {len(table)} cases")
        holds = [v["bracket_holds"] for entry in table.values() for v in entry["results"][method].values()
                 if "bracket_holds" in v]
        if holds:
            print(f"  {method:<5} ranks out by their bracket alone: {len(holds)}; the bracket holds the SMC's value "
                  f"in {sum(holds)}")


if __name__ == "__main__":
    main()
