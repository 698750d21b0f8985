"""Protocol P2 of Şimşekli et al. (2016, section 4.1.2): STI against Chib's method on Poisson NMF.

W_ir ~ E(lambda), H_rj ~ E(lambda), X_ij ~ PO(sum_r W_ir H_rj), I = 100, J = 75, lambda = 5.

For each true rank (3 and 6) a matrix is drawn from the model with a fixed seed and the
evidence of every candidate rank 1..10 is estimated

* by STI through ``BayesianNMFRankSelector(method="sti")``: T = 5, K = 10000 iterations
  per temperature of which the last 2000 are kept, 5 x 5 blocks, for the ladders
  "uniform" (the paper's) and "power" (the package default), and the papers' samplers:
  SGLD with the paper's step size a = 1e-5, b = 0.51 (block-parallel, the paper's
  "PSGLD" = parallel SGLD) and pSGLD with the package default ``step_size="auto"``;
* by the selector at its defaults (``method="rti"``, referenced TI refined to ``tol``),
  what the package runs when nothing is set;

  each selector configuration is timed with ``n_jobs=1`` and with ``n_jobs=2``;
* by Chib's method, ``PoissonNMF(method="chib")`` one rank at a time, with the paper's
  9000 Gibbs sweeps (7000 burn-in) and 5000 reduced sweeps.

It also measures this machine's dgemm throughput, the SG-MCMC kernel's effective GFLOP/s
(``skevidence.cp.kernels.sgmcmc.run_chain``) and where a chain's time goes, and the numba
compilation (or cache-load) time of that kernel in a fresh process.

Run ``python benchmarks/bench_p2_nmf.py --help`` for the options; see
``benchmarks/README.md`` for what the columns mean.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import warnings

import numba
import numpy as np
from numba import njit

import skevidence
from skevidence import BayesianNMFRankSelector, PoissonNMF
from skevidence._config import PARALLEL_MIN_PART
from skevidence.cp import chib_log_evidence
from skevidence.cp.data import CPData
from skevidence.cp.kernels.rng import fill_standard_normal, seed_streams
from skevidence.cp.kernels.sgmcmc import run_chain, score_prior
from skevidence.evidence import temperature_ladder
from skevidence.evidence.sti import default_step_size
from skevidence.exceptions import SamplerDivergenceError
from skevidence.samplers import StepSizeSchedule

from _environment import blas_gflops, blas_threads, git_state

# ---------------------------------------------------------------- protocol P2
N_ROWS, N_COLS, PRIOR_RATE = 100, 75, 5.0
N_TEMPS, N_SAMPLES, N_BURNIN, N_BLOCKS = 5, 10000, 8000, 5
SGLD_A, STEP_DECAY = 1e-5, 0.51
N_GIBBS, N_GIBBS_BURNIN, N_REDUCED = 9000, 7000, 5000
KERNEL_RANK = 10

#: The paper's numbers (C + GSL + BLAS + OpenMPI, 4 cores, 10 ranks).
PAPER_STI_S, PAPER_CHIB_S = 137.0, 835.0
#: Targets of this package, printed next to the measurements.
TARGET_STI_TOTAL_S, TARGET_SPEEDUP = 10.0, 20.0

#: (ladder, sampler) configurations of the selector: STI with the papers' samplers on both ladders, and
#: (None, "rti") for the selector at its defaults (referenced TI, its own ladder and chains).
ALL_CONFIGS = (
    ("uniform", "sgld"), ("power", "sgld"), ("uniform", "psgld"), ("power", "psgld"), (None, "rti"),
)  # fmt: skip
FULL = dict(true_ranks=(3, 6), candidates=tuple(range(1, 11)), configs=ALL_CONFIGS, chib_div=1)
QUICK = dict(
    true_ranks=(3,), candidates=tuple(range(1, 7)), configs=(("uniform", "psgld"), (None, "rti")),
    chib_div=4,
)

SAMPLER_KW = {
    "sgld": dict(sampler="sgld", step_size=SGLD_A, step_decay=STEP_DECAY),
    "psgld": dict(sampler="psgld", step_size="auto", step_decay=STEP_DECAY),
}


def config_name(ladder, sampler):
    return "rti/defaults" if sampler == "rti" else f"{sampler}/{ladder}"


def config_label(ladder, sampler):
    return "RTI (defaults)" if sampler == "rti" else f"STI {config_name(ladder, sampler)}"


# --------------------------------------------------------------- environment
_COMPILE_PROBE = """
import json, time
t0 = time.perf_counter()
import numba
import numpy as np
from skevidence.cp.data import CPData
from skevidence.cp.kernels import sgmcmc
t1 = time.perf_counter()
# The kernels P2 runs: a dense 100 x 75 matrix, 5 x 5 blocks (parts of 1500 entries: the serial chain), both
# samplers, and the t = 0 stage's scoring of prior draws.
data = CPData.from_array(np.random.default_rng(0).poisson(1.0, size=(100, 75)).astype(np.float64))
blocks = data.blocks(5)
for sampler in ("sgld", "psgld"):
    F = np.full((175, 2), 0.2)
    sgmcmc.run_chain(data, blocks, F, temperature=1.0, n_samples=4, n_burnin=2, step_a=1e-5, step_b=0.0,
                     sampler=sampler, prior_rates=5.0, seed_seq=np.random.SeedSequence(0), max_capped_fraction=1.0)
sgmcmc.score_prior(data, blocks, 2, 2, prior_rates=5.0, seed_seq=np.random.SeedSequence(1))
seconds = time.perf_counter() - t1
hits = misses = 0
for name in ("_chain", "_chain_serial", "_prior_scores"):
    stats = getattr(sgmcmc, name).stats
    hits += sum(stats.cache_hits.values())
    misses += sum(stats.cache_misses.values())
try:
    layer = numba.threading_layer()
except Exception:
    layer = "?"
print(json.dumps(dict(import_s=t1 - t0, compile_s=seconds, hits=hits, misses=misses, layer=layer,
                      threads=numba.get_num_threads())))
"""


def compile_probe():
    """First calls of the SG-MCMC kernels in a fresh interpreter: seconds and cache hits/misses."""
    try:
        out = subprocess.run(
            [sys.executable, "-c", _COMPILE_PROBE], capture_output=True, text=True, check=True, timeout=900
        ).stdout
        return json.loads(out.strip().splitlines()[-1])
    except Exception as exc:  # report, do not abort the benchmark
        return dict(error=f"{type(exc).__name__}: {exc}")


# ------------------------------------------------------------ kernel timings
@njit(cache=False)
def _draw_normals(state, buf_w, buf_h, n_rep):
    for _ in range(n_rep):
        fill_standard_normal(state, buf_w)
        fill_standard_normal(state, buf_h)


def kernel_measurements(X, rank=KERNEL_RANK):
    """Wall time of single chains of the dense kernel (``run_chain``) at ``rank``, t = 1, K = N_SAMPLES.

    Returns a dict of timings: the chain per (sampler, numba threads), the time the kernel's
    random normals alone take, and the t = 0 stage of one STI run (exact prior draws scored
    in one ``score_prior`` call, as STI's chain runner does it).
    """
    data = CPData.from_array(np.asarray(X, dtype=np.float64))
    blocks = data.blocks(N_BLOCKS)
    n_part = N_ROWS * N_COLS // N_BLOCKS
    auto = StepSizeSchedule.ending_at(default_step_size(N_ROWS * N_COLS, n_part, "psgld"), STEP_DECAY, N_BURNIN)
    step_a = {"sgld": SGLD_A, "psgld": auto.a}
    thread_counts = sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)})
    previous = numba.get_num_threads()
    chains = {}
    try:
        for threads in thread_counts:
            numba.set_num_threads(threads)
            for sampler in ("sgld", "psgld"):
                rng = np.random.default_rng(np.random.SeedSequence([7, rank]))
                # The stacked factors (W over H^T), drawn from the prior.
                F = rng.exponential(1.0 / PRIOR_RATE, size=(N_ROWS + N_COLS, rank))
                # warm the state up at t = 0.2 (as STI would), then time the t = 1 chain
                kw = dict(n_samples=N_SAMPLES, n_burnin=N_BURNIN, step_a=step_a[sampler], step_b=STEP_DECAY,
                          sampler=sampler, prior_rates=PRIOR_RATE)  # fmt: skip
                try:
                    run_chain(data, blocks, F, temperature=0.2, seed_seq=np.random.SeedSequence(1), **kw)
                    t0 = time.perf_counter()
                    run_chain(data, blocks, F, temperature=1.0, seed_seq=np.random.SeedSequence(2), **kw)
                    chains[sampler, threads] = time.perf_counter() - t0
                except SamplerDivergenceError:
                    chains[sampler, threads] = np.nan
        numba.set_num_threads(1)
        # the t = 0 stage of one STI run, serial
        t0 = time.perf_counter()
        score_prior(data, blocks, rank, N_SAMPLES - N_BURNIN, prior_rates=PRIOR_RATE,
                    seed_seq=np.random.SeedSequence(3))
        t_zero = time.perf_counter() - t0
    finally:
        numba.set_num_threads(previous)
    # random normals of one chain: (I + J) R per iteration, in per-block pieces
    state = seed_streams(np.random.SeedSequence(5), 1)[0]
    buf_w = np.empty(N_ROWS // N_BLOCKS * rank)
    buf_h = np.empty(rank * (N_COLS // N_BLOCKS))
    _draw_normals(state, buf_w, buf_h, 10)  # compile
    t0 = time.perf_counter()
    _draw_normals(state, buf_w, buf_h, N_BLOCKS * N_SAMPLES)
    t_normals = time.perf_counter() - t0
    try:
        layer = numba.threading_layer()
    except Exception:
        layer = "?"
    # run_chain runs its blocks in parallel only for parts of at least PARALLEL_MIN_PART entries.
    parallel = {threads: threads > 1 and data.n_data // N_BLOCKS >= PARALLEL_MIN_PART for threads in thread_counts}
    return dict(chains=chains, thread_counts=thread_counts, t_zero=t_zero, t_normals=t_normals, layer=layer,
                parallel=parallel)


def kernel_flops(rank=KERNEL_RANK):
    """Flops of one chain of the dense kernel: 6 (I J / B) R per iteration (three BLAS products per block)."""
    return 6.0 * (N_ROWS * N_COLS / N_BLOCKS) * rank * N_SAMPLES


# ----------------------------------------------------------------- the runs
def make_data(true_rank, seed):
    """W, H, X drawn from the model; the stream depends on (seed, true rank) only."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, true_rank]))
    W = rng.exponential(1.0 / PRIOR_RATE, size=(N_ROWS, true_rank))
    H = rng.exponential(1.0 / PRIOR_RATE, size=(true_rank, N_COLS))
    return rng.poisson(W @ H)


def int_seed(*key):
    return int(np.random.SeedSequence(list(key)).generate_state(1)[0] & 0x7FFFFFFF)


def run_sti(X, candidates, ladder, sampler, n_jobs, seed):
    """One ``BayesianNMFRankSelector`` fit; per-rank estimates, SEs, fit times, and its wall time.

    ``sampler="rti"``: the selector at its defaults (referenced TI); otherwise STI with the protocol's settings.
    """
    if sampler == "rti":
        sel = BayesianNMFRankSelector(ranks=candidates, prior_rate=PRIOR_RATE, n_jobs=n_jobs, random_state=seed)
    else:
        sel = BayesianNMFRankSelector(
            ranks=candidates,
            prior_rate=PRIOR_RATE,
            n_jobs=n_jobs,
            random_state=seed,
            method="sti",
            method_params=dict(n_blocks=N_BLOCKS, temperatures=N_TEMPS, ladder=ladder, n_samples=N_SAMPLES,
                               n_burnin=N_BURNIN, **SAMPLER_KW[sampler]),
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # failed ranks are listed in errors_
        t0 = time.perf_counter()
        sel.fit(X)
        wall = time.perf_counter() - t0
    return dict(
        est=np.asarray(sel.log_evidence_, dtype=float),
        se=np.asarray(sel.log_evidence_std_, dtype=float),
        t=np.asarray(sel.cv_results_["mean_fit_time"], dtype=float),
        wall=wall,
        best=sel.best_rank_,
        errors=dict(sel.errors_),
    )


def run_chib(X, candidates, seed, div):
    """``PoissonNMF(method="chib")`` per rank, one after the other.

    If the estimator's ``fit`` raises, the rank is re-run by calling
    ``chib_log_evidence`` directly with the arguments the estimator passes it
    (the same computation, without the estimator's posterior-mean step); such
    ranks are listed in ``fallback`` with the estimator's error.
    """
    est, se, t, warned, errors, fallback = [], [], [], [], {}, {}
    for r in candidates:
        model = PoissonNMF(
            n_components=r,
            prior_rate=PRIOR_RATE,
            method="chib",
            method_params=dict(n_samples=N_GIBBS // div, n_burnin=N_GIBBS_BURNIN // div, n_reduced=N_REDUCED // div),
            random_state=seed,
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            try:
                model.fit(X)
                est.append(model.log_evidence_)
                se.append(model.log_evidence_std_)
            except Exception as exc:
                fallback[r] = f"{type(exc).__name__}: {exc}"
                del caught[:]
                t0 = time.perf_counter()
                try:
                    res = chib_log_evidence(
                        X, r, PRIOR_RATE, n_samples=N_GIBBS // div, n_burnin=N_GIBBS_BURNIN // div,
                        n_reduced=N_REDUCED // div, random_state=seed,
                    )  # fmt: skip
                    est.append(res.log_evidence)
                    se.append(res.std_error)
                except Exception as exc2:
                    est.append(np.nan)
                    se.append(np.nan)
                    errors[r] = f"{type(exc2).__name__}: {exc2}"
            t.append(time.perf_counter() - t0)
        warned.append(any(issubclass(w.category, UserWarning) for w in caught))
    return dict(est=np.array(est), se=np.array(se), t=np.array(t), warned=warned, errors=errors, fallback=fallback)


def nanmean(values):
    """Mean of the finite values; nan (without a warning) when there are none."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return float(values.mean()) if values.size else np.nan


def argmax_rank(values, candidates):
    values = np.asarray(values, dtype=float)
    return candidates[int(np.nanargmax(values))] if np.any(np.isfinite(values)) else "-"


def fmt(value, spec, width=None):
    text = "nan" if value is None or not np.isfinite(value) else format(value, spec)
    return text if width is None else f"{text:>{width}}"


#: Width of the first column of the per-true-rank tables.
LW = 18


def cell(est, se, t, mark=" "):
    """'  -2938.06 ±   1.69   12.34*' (24 + 1 characters)."""
    if not np.isfinite(est):
        return f"{'failed':>17} {fmt(t, '6.2f', 6)}{mark}"
    return f"{est:>9.2f} ±{se:>6.2f} {fmt(t, '6.2f', 6)}{mark}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true",
        help="true rank 3, ranks 1..6, STI psgld/uniform and RTI only, Chib with 1/4 of the sweeps",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and of every chain (default 0)")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    cands = cfg["candidates"]
    div = cfg["chib_div"]
    n_cpu = os.cpu_count() or 1

    def p(line=""):
        print(line, flush=True)

    start_all = time.perf_counter()
    probe = compile_probe()  # first, so that nothing of this process has touched the kernels
    gf_best, gf_med = blas_gflops()
    gf1_best, gf1_med = blas_gflops(threads=1)
    load0 = os.getloadavg()
    p("=" * 110)
    p("P2 (Şimşekli et al. 2016, sec. 4.1.2): STI (and the selector's default, RTI) vs Chib's method on Poisson NMF"
      + ("  [--quick]" if args.quick else ""))
    p(
        f"I={N_ROWS} J={N_COLS} lambda_w=lambda_h={PRIOR_RATE:g} true ranks {cfg['true_ranks']} candidates "
        f"R={cands[0]}..{cands[-1]} seed={args.seed}"
    )
    p(
        f"STI: T={N_TEMPS} K={N_SAMPLES} (last {N_SAMPLES - N_BURNIN} kept) blocks {N_BLOCKS}x{N_BLOCKS} "
        f"(N_s = IJ/{N_BLOCKS} = {N_ROWS * N_COLS // N_BLOCKS}); "
        + "; ".join(
            f"ladder {lad}: t = {np.array2string(temperature_ladder(N_TEMPS, kind=lad), precision=5, separator=',')}"
            for lad in ("uniform", "power")
        )
    )
    p(
        f"     samplers: sgld = block-parallel SGLD, step_size={SGLD_A:g}, step_decay={STEP_DECAY} (the paper's); "
        f"psgld = pSGLD, step_size='auto', step_decay={STEP_DECAY} (package default)"
    )
    p("RTI: BayesianNMFRankSelector at its defaults (method='rti': referenced TI, a screen of every rank, then "
      "the ranks in the running refined to tol=1)")
    p(
        f"Chib: {N_GIBBS // div} Gibbs sweeps ({N_GIBBS_BURNIN // div} burn-in), {N_REDUCED // div} reduced sweeps"
        + ("  (1/4 of the paper's, --quick)" if div > 1 else "  (the paper's)")
    )
    p(
        f"skevidence {skevidence.__version__} ({git_state()}), numpy {np.__version__}, numba {numba.__version__}, "
        f"python {platform.python_version()}, {n_cpu} CPUs, load avg {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}"
    )
    p(
        f"BLAS ({blas_threads()}): 1000x1000 float64 np.dot -> {gf_best:.1f} GFLOP/s best of 5 "
        f"({gf_med:.1f} median); with 1 BLAS thread {fmt(gf1_best, '.1f')} best ({fmt(gf1_med, '.1f')} median)"
    )
    if "error" in probe:
        p(f"numba: the SG-MCMC kernels' first calls in a fresh process FAILED: {probe['error']}")
    else:
        kind = (
            "cache load" if probe["misses"] == 0 and probe["hits"] > 0
            else "compile" if probe["hits"] == 0 else "partly compiled, partly cache"
        )  # fmt: skip
        p(
            f"numba: first calls of the SG-MCMC kernels (run_chain with both samplers, score_prior) in a fresh "
            f"process {probe['compile_s']:.2f} s = {kind} (dispatcher cache hits {probe['hits']}, misses "
            f"{probe['misses']}; import of skevidence.cp.kernels.sgmcmc {probe['import_s']:.2f} s before it); "
            f"threading layer {probe['layer']}, {probe['threads']} threads"
        )

    # ---- data
    data = {}
    p()
    p("Data (drawn from the model; stream depends on --seed and the true rank only):")
    p(f"{'true R':>6} {'sum X':>7} {'max X':>5} {'nnz':>6} {'nnz %':>6}")
    for true_r in cfg["true_ranks"]:
        X = make_data(true_r, args.seed)
        data[true_r] = X
        p(f"{true_r:>6} {int(X.sum()):>7} {int(X.max()):>5} {np.count_nonzero(X):>6} {100 * np.mean(X > 0):>6.1f}")

    # ---- kernel throughput
    p()
    p(f"Kernel: one dense chain (run_chain) at R={KERNEL_RANK}, t=1, K={N_SAMPLES} iterations (data of true rank "
      f"{cfg['true_ranks'][0]}); flops counted 6 (IJ/B) R per iteration = {kernel_flops() / N_SAMPLES:.0f}:")
    km = kernel_measurements(data[cfg["true_ranks"][0]])
    p(
        f"{'sampler':<7} {'threads':>7} {'kernel':>8} {'chain(s)':>8} {'us/iter':>7} {'GFLOP/s':>7} "
        f"{'dgemm GFLOP/s':>13} {'kernel/dgemm':>12}"
    )
    for threads in km["thread_counts"]:
        dgemm = gf1_best if threads == 1 and np.isfinite(gf1_best) else gf_best
        kernel = "parallel" if km["parallel"][threads] else "serial"
        for sampler in ("sgld", "psgld"):
            sec = km["chains"][sampler, threads]
            rate = kernel_flops() / sec / 1e9 if np.isfinite(sec) else np.nan
            p(
                f"{sampler:<7} {threads:>7} {kernel:>8} {fmt(sec, '8.3f', 8)} {fmt(1e6 * sec / N_SAMPLES, '7.1f', 7)} "
                f"{fmt(rate, '7.2f', 7)} {dgemm:>13.1f} {fmt(rate / dgemm, '12.3f', 12)}"
            )
    t_serial = km["chains"]["psgld", 1]
    n_normals = (N_ROWS + N_COLS) * KERNEL_RANK * N_SAMPLES
    p(
        f"(dgemm column: 1-thread BLAS for 1 numba thread, default BLAS otherwise; kernel: the one run_chain picks, "
        f"parallel blocks only for parts of >= {PARALLEL_MIN_PART} entries (here {N_ROWS * N_COLS // N_BLOCKS}); "
        f"numba threading layer {km['layer']})"
    )
    p(
        f"where a serial pSGLD chain's {fmt(t_serial, '.3f')} s go: the {n_normals / 1e6:.1f} M random normals "
        f"((I+J)R per iteration) alone take {km['t_normals']:.3f} s "
        f"({fmt(100 * km['t_normals'] / t_serial, '.0f')}%); "
        f"the counted flops at the 1-thread dgemm rate would take {kernel_flops() / gf1_best / 1e9:.3f} s "
        f"({fmt(100 * kernel_flops() / gf1_best / 1e9 / t_serial, '.0f')}%)"
    )
    p(
        f"STI t=0 stage at R={KERNEL_RANK}: {N_SAMPLES - N_BURNIN} exact prior draws scored in one "
        f"score_prior call: {km['t_zero']:.3f} s per rank "
        f"(= {fmt(km['t_zero'] / t_serial, '.2f')} serial chains); a whole serial STI run at R={KERNEL_RANK} is "
        f"about {fmt(km['t_zero'] + N_TEMPS * t_serial, '.2f')} s"
    )

    # ---- warm-up: the n_jobs=2 worker pool, the referenced path's kernels and Chib's Gibbs kernel
    rng = np.random.default_rng(0)
    tiny = rng.poisson(rng.exponential(size=(12, 2)) @ rng.exponential(size=(2, 10)))
    t0 = time.perf_counter()
    BayesianNMFRankSelector(ranks=(1, 2), n_jobs=2, method="sti", random_state=0,
                            method_params=dict(temperatures=2, n_samples=20, n_burnin=10, n_blocks=2)).fit(tiny)
    t_pool = time.perf_counter() - t0
    t_rti = np.nan
    if any(sampler == "rti" for _, sampler in cfg["configs"]):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for n_jobs in (1, 2):  # this process and the workers
                BayesianNMFRankSelector(ranks=(1, 2), n_jobs=n_jobs, tol=None, random_state=0,
                                        method_params=dict(n_temperatures=4, n_burnin=4, n_keep=8)).fit(tiny)
        t_rti = time.perf_counter() - t0
    t0 = time.perf_counter()
    gibbs_note = ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            PoissonNMF(2, method="chib", method_params=dict(n_samples=30, n_burnin=10, n_reduced=40),
                       random_state=0).fit(tiny)
        except Exception as exc:  # reported; the per-rank runs record their own failures
            gibbs_note = f" (it FAILED: {type(exc).__name__}: {exc})"
    t_gibbs = time.perf_counter() - t0
    p()
    p(
        f"Warm-up (not in the timings below): n_jobs=2 worker pool start-up (workers import skevidence and load "
        f"the kernels) {t_pool:.2f} s; first RTI fits (HMC kernels, in this process and the workers) "
        f"{fmt(t_rti, '.2f')} s; first Chib fit (Gibbs kernel compile or cache load) {t_gibbs:.2f} s"
        + gibbs_note
    )

    # ---- the runs
    sti, chib = {}, {}
    for true_r in cfg["true_ranks"]:
        X = data[true_r]
        for ladder, sampler in cfg["configs"]:
            for n_jobs in (1, 2):
                sti[true_r, ladder, sampler, n_jobs] = run_sti(
                    X, cands, ladder, sampler, n_jobs, int_seed(args.seed, true_r, 1)
                )
        chib[true_r] = run_chib(X, cands, int_seed(args.seed, true_r, 2), div)

    # ---- per true rank: the table of estimates and times
    names = [config_name(lad, smp) for lad, smp in cfg["configs"]]
    for true_r in cfg["true_ranks"]:
        ch = chib[true_r]
        p()
        p(f"True rank {true_r}: log-evidence ± SE and time per rank (s); selector times with n_jobs=1")
        head = (
            f"{'R':>{LW}} |" + "|".join(f" {config_label(lad, smp):<17} {'t(s)':>6} " for lad, smp in cfg["configs"])
            + f"| {'Chib':<17} {'t(s)':>6} "
        )
        p(head)
        p("-" * len(head))
        for k, r in enumerate(cands):
            row = f"{r:>{LW}} |"
            for ladder, sampler in cfg["configs"]:
                res = sti[true_r, ladder, sampler, 1]
                row += " " + cell(res["est"][k], res["se"][k], res["t"][k]) + "|"
            row += " " + cell(ch["est"][k], ch["se"][k], ch["t"][k], "*" if ch["warned"][k] else " ")
            p(row)
        p("-" * len(head))

        def summary(label, values):
            p(f"{label:>{LW}} |" + "|".join(f" {v:>24} " for v in values[:-1]) + f"| {values[-1]:>24}")

        summary("argmax", [str(sti[true_r, lad, smp, 1]["best"]) for lad, smp in cfg["configs"]]
                + [str(argmax_rank(ch["est"], cands))])  # fmt: skip
        totals1 = [sti[true_r, lad, smp, 1]["wall"] for lad, smp in cfg["configs"]]
        totals2 = [sti[true_r, lad, smp, 2]["wall"] for lad, smp in cfg["configs"]]
        chib_total = float(np.sum(ch["t"]))
        summary("total n_jobs=1 (s)", [f"{v:.2f}" for v in totals1] + [f"{chib_total:.2f}"])
        summary("total n_jobs=2 (s)", [f"{v:.2f}" for v in totals2] + ["-"])
        summary("Chib/sel. n_jobs=1", [f"{chib_total / v:.2f}" for v in totals1] + ["-"])
        summary("Chib/sel. n_jobs=2", [f"{chib_total / v:.2f}" for v in totals2] + ["-"])
        marks = [r for r, wr in zip(cands, ch["warned"]) if wr]
        if marks:
            p(f"  * Chib warned (ordinate averages on few draws: estimate likely too high) at R={marks}")
        for lad, smp in cfg["configs"]:
            for n_jobs in (1, 2):
                if sti[true_r, lad, smp, n_jobs]["errors"]:
                    p(f"  {config_label(lad, smp)} n_jobs={n_jobs} failed: {sti[true_r, lad, smp, n_jobs]['errors']}")
        if ch["fallback"]:
            msgs = sorted(set(ch["fallback"].values()))
            p(
                f"  NOTE: PoissonNMF(method='chib').fit raised at R={sorted(ch['fallback'])} ({'; '.join(msgs)}); "
                "those ranks were computed by chib_log_evidence directly, with the estimator's arguments"
            )
        if ch["errors"]:
            p(f"  Chib failed: {ch['errors']}")

    # ---- the selector against Chib near the mode
    p()
    p("Selector (STI or RTI) against Chib (diff = selector - Chib, z = diff / sqrt(SE_sel^2 + SE_Chib^2)):")
    near_labels = ("R=true-1", "R=true", "R=true+1")
    head = (
        f"{'config':<14} {'trueR':>5} {'argSel':>6} {'argChib':>7} "
        + " ".join(f"{lab + ' diff (z)':>21}" for lab in near_labels)
        + f" {'mean|diff| all R':>16} {'meanSE sel':>10} {'meanSE Chib':>11} {'nj1==nj2':>8}"
    )
    p(head)
    p("-" * len(head))
    for (ladder, sampler), name in zip(cfg["configs"], names):
        for true_r in cfg["true_ranks"]:
            s1, s2, ch = sti[true_r, ladder, sampler, 1], sti[true_r, ladder, sampler, 2], chib[true_r]
            diff = s1["est"] - ch["est"]
            z = diff / np.sqrt(s1["se"] ** 2 + ch["se"] ** 2)
            near = []
            for r in (true_r - 1, true_r, true_r + 1):
                if r in cands:
                    k = cands.index(r)
                    near.append(f"{fmt(diff[k], '8.2f', 8)} ({fmt(z[k], '6.2f', 6)})".rjust(21))
                else:
                    near.append(f"{'-':>21}")
            same = np.array_equal(s1["est"], s2["est"], equal_nan=True)
            gap = np.nanmax(np.abs(s1["est"] - s2["est"])) if not same else 0.0
            p(
                f"{name:<14} {true_r:>5} {s1['best']!s:>6} {argmax_rank(ch['est'], cands)!s:>7} " + " ".join(near)
                + f" {fmt(nanmean(np.abs(diff)), '16.2f', 16)} {fmt(nanmean(s1['se']), '10.2f', 10)} "
                f"{fmt(nanmean(ch['se']), '11.2f', 11)} {'yes' if same else f'{gap:.1e}':>8}"
            )

    # ---- timing summary against the targets
    p()
    p(
        f"Timing for all {len(cands)} ranks against the targets: selector <= {TARGET_STI_TOTAL_S:g} s, "
        f"Chib/selector >= {TARGET_SPEEDUP:g}x (paper, C on 4 cores: STI {PAPER_STI_S:g} s, Chib {PAPER_CHIB_S:g} s, "
        f"{PAPER_CHIB_S / PAPER_STI_S:.1f}x)"
    )
    head = (
        f"{'config':<14} {'trueR':>5} {'sel nj=1(s)':>11} {'sel nj=2(s)':>11} {'Chib(s)':>8} "
        f"{'Chib/sel nj=1':>13} {'Chib/sel nj=2':>13} {'best sel<=10s':>13} {'best ratio>=20x':>15}"
    )
    p(head)
    p("-" * len(head))
    total_sti = 0.0
    for (ladder, sampler), name in zip(cfg["configs"], names):
        for true_r in cfg["true_ranks"]:
            t1 = sti[true_r, ladder, sampler, 1]["wall"]
            t2 = sti[true_r, ladder, sampler, 2]["wall"]
            total_sti += t1 + t2
            tc = float(np.sum(chib[true_r]["t"]))
            best = min(t1, t2)
            p(
                f"{name:<14} {true_r:>5} {t1:>11.2f} {t2:>11.2f} {tc:>8.2f} {tc / t1:>13.2f} {tc / t2:>13.2f} "
                f"{('yes' if best <= TARGET_STI_TOTAL_S else 'NO') + f' ({best:.1f})':>13} "
                f"{('yes' if tc / best >= TARGET_SPEEDUP else 'NO') + f' ({tc / best:.2f}x)':>15}"
            )
    total_chib = sum(float(np.sum(chib[r]["t"])) for r in cfg["true_ranks"])

    gf_best2, gf_med2 = blas_gflops()
    load1 = os.getloadavg()
    p()
    p(
        "Columns: STI <sampler>/<ladder> = log-evidence ± standard error from BayesianNMFRankSelector(method='sti') "
        "(n_jobs=1), RTI (defaults) = the same selector at its defaults (method='rti'), t(s) = a rank's fit time "
        "(cv_results_['mean_fit_time'], RTI's summed over its passes); Chib = PoissonNMF(method='chib') per rank, "
        "t(s) its fit time; total n_jobs=k = wall time of the whole selector fit (all ranks) with n_jobs=k, for "
        "Chib the sum of its per-rank times; nj1==nj2 = whether the n_jobs=1 and n_jobs=2 estimates are identical "
        "(else their largest difference); STI's SEs are Monte-Carlo only (they do not cover the ladder or "
        "step-size bias), RTI's cover its chains, lag, quadrature and mode search."
    )
    p(
        f"BLAS again at the end: {gf_best2:.1f} GFLOP/s best, {gf_med2:.1f} median; load avg "
        f"{load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}; selectors total {total_sti:.1f} s; "
        f"Chib total {total_chib:.1f} s; benchmark total {time.perf_counter() - start_all:.1f} s"
    )


if __name__ == "__main__":
    main()
