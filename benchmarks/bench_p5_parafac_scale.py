"""Protocol P5 (Nguyen et al. 2018, section V.B): Poisson PARAFAC rank selection at wall-post scale.

Nguyen et al. (2018) select the rank of a 42390 x 39986 x 1506 count tensor
(Facebook wall posts: user x user x day, about a million non-zeros) with ranks
1..11, T = 5, K = 3000 iterations per temperature of which the last 500 are
kept, and B = 12 groups per mode. This script runs that protocol on a synthetic
tensor of the same shape and size, drawn from the model itself, and prints

1. the tensor: true rank, events, non-zeros, largest count, generation time;
2. the time per iteration of one chain (``skevidence.cp.kernels.sgmcmc.run_chain``,
   one numba thread, as each ``n_jobs=2`` worker runs it) at three non-zero
   counts of the same shape and rank and at an almost empty tensor, the ratio
   to the smallest, and a least-squares split ``time = a + b * nnz`` into the
   part that grows with the non-zeros and the part that grows with
   ``(I + J + K) R`` (the factor updates), with the share of the latter spent
   drawing the Langevin noise and in the kernel's SGLD or pSGLD update alone;
3. the baseline of Nguyen et al. (2018) side by side on a dense tensor both can handle
   (40 x 35 x 30 counts of a rank-4 model, ranks 1..8): tensorly's CP (ALS,
   best of several starts) + tlviz's core consistency (CORCONDIA), choosing
   the largest rank whose core consistency, and that of every smaller rank,
   stays at or above a threshold (80 %), against ``PARAFACRankSelector``
   (``method="sti"``) with the protocol's chain settings: rank chosen and time
   of each. tensorly and tlviz are in the ``benchmark`` extra
   (``pip install ".[benchmark]"``);
4. last, the long part: ``PARAFACRankSelector`` over ranks 1..11 at its default method
   (``--method rti``) or the paper's (``--method sti``): per rank the log-evidence, its
   standard error, the posterior probability and the fit time
   (``cv_results_["mean_fit_time"]``) with, at sti, the time per iteration it implies (at
   rti, the rank's status and the decision);
   the argmax, the total wall time and the peak memory (this process and its
   worker processes) against the targets: all ranks in <= 10 min and
   <= 4 GB on this 2-core machine.

The synthetic tensor (:func:`sample_parafac_counts`) is drawn exactly from the
Poisson PARAFAC model in O(events) without forming the I J K intensities. Its
factors are "communities": component r is active for a random 8 % of the
senders, a random 8 % of the receivers and a window of 15 % of the days, with
Exponential weights there and zeros elsewhere, all three scaled by one
factor ``s`` so that the expected number of events is the target. The
selector's prior rate defaults to ``1 / s``, the rate of the generating
weights.

Usage::

    python benchmarks/bench_p5_parafac_scale.py [--quick] [--ranks 1 ... 11] [--n-jobs 2]
        [--method rti|sti] [--sampler psgld|sgld] [--seed 0] [--skip-corcondia] [--true-rank 6]
        [--prior-rate RATE] [--nnz 1e6] [--iter-sizes 2.5e5 5e5 1e6] [--iter-rank 11]

``--quick`` runs a tensor 10 times smaller in every mode with 1e5 non-zeros
and 300 iterations per temperature (200 burn-in): a smoke check of well under
2 minutes; its times are not the protocol's.
"""

import argparse
import os
import platform
import resource
import sys
import threading
import time
import warnings

import numba
import numpy as np
import scipy.sparse as sp

import skevidence
from skevidence import PARAFACRankSelector
from skevidence._config import PSGLD_ALPHA, PSGLD_SIGMA
from skevidence.cp.data import CPData
from skevidence.cp.kernels.rng import fill_standard_normal, seed_streams
from skevidence.cp.kernels.sgmcmc import _update, run_chain

from _environment import blas_gflops, blas_threads, git_state

# ---------------------------------------------------------------- protocol P5
WALL_POST_SHAPE = (42390, 39986, 1506)
N_TEMPS, N_SAMPLES, N_BURNIN, N_BLOCKS = 5, 3000, 2500, 12
TARGET_WALL_S, TARGET_MEMORY_MB = 600.0, 4096.0
#: Community sizes of the synthetic factors, as fractions of each mode.
COMMUNITY = (0.08, 0.08, 0.15)

FULL = dict(shape=WALL_POST_SHAPE, nnz=1e6, n_samples=N_SAMPLES, n_burnin=N_BURNIN,
            iter_sizes=(2.5e5, 5e5, 1e6), iter_steps=100, iter_repeats=3)
QUICK = dict(shape=tuple(n // 10 for n in WALL_POST_SHAPE), nnz=1e5, n_samples=300, n_burnin=200,
             iter_sizes=(2.5e4, 5e4, 1e5), iter_steps=50, iter_repeats=2)

#: The CORCONDIA comparison: a dense tensor both methods handle.
DENSE_SHAPE, DENSE_RANK, DENSE_CANDIDATES = (40, 35, 30), 4, tuple(range(1, 9))


# -------------------------------------------------------------- the tensor
def community_factors(shape, rank, rng, fractions=COMMUNITY):
    """Unscaled factors: per component, Exp(1) weights on a community, zeros elsewhere.

    Modes 1 and 2 (users) get a random subset, mode 3 (days) a contiguous window.
    """
    factors = []
    for mode, (n, frac) in enumerate(zip(shape, fractions)):
        F = np.zeros((n, rank))
        size = max(1, int(round(frac * n)))
        for r in range(rank):
            if mode == 2:
                start = rng.integers(0, n - size + 1)
                idx = np.arange(start, start + size)
            else:
                idx = rng.choice(n, size=size, replace=False)
            F[idx, r] = rng.exponential(1.0, size=size)
        factors.append(F)
    return factors


def scale_to_events(factors, n_events):
    """Multiply all three factors by one ``s`` so that ``sum V = n_events``; return them and ``s``."""
    mass = np.prod([F.sum(axis=0) for F in factors], axis=0).sum()
    s = (n_events / mass) ** (1.0 / 3.0)
    return [s * F for F in factors], s


def sample_parafac_counts(factors, rng):
    r"""Draw ``X ~ Poisson(sum_r a_r o b_r o c_r)`` exactly, in O(events), as a 3-D ``coo_array``.

    The total is Poisson with mean :math:`\sum_r (\sum_i a_{ir})(\sum_j b_{jr})(\sum_k c_{kr})`;
    each event picks its component with probability proportional to that
    product, then ``i``, ``j``, ``k`` independently with probabilities
    proportional to ``a_ir``, ``b_jr``, ``c_kr`` (a Poisson process split into
    cells). Duplicate events are summed. Never forms the I J K intensities.
    """
    shape = tuple(F.shape[0] for F in factors)
    sums = np.array([F.sum(axis=0) for F in factors])
    mass = sums.prod(axis=0)
    n = int(rng.poisson(mass.sum()))
    per_component = rng.multinomial(n, mass / mass.sum())
    coords = [np.empty(n, dtype=np.int64) for _ in range(3)]
    start = 0
    for r, n_r in enumerate(per_component):
        for F, out in zip(factors, coords):
            cdf = np.cumsum(F[:, r])
            cdf /= cdf[-1]
            # min(): a uniform draw above the last rounded cdf value must not index past the end
            out[start : start + n_r] = np.minimum(np.searchsorted(cdf, rng.random(n_r), side="right"),
                                                  F.shape[0] - 1)
        start += n_r
    X = sp.coo_array((np.ones(n), tuple(coords)), shape=shape)
    X.sum_duplicates()
    return X, n


def make_tensor(shape, true_rank, n_events, seed):
    """The protocol's tensor: community factors of ``true_rank`` scaled to ``n_events`` expected events."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, true_rank, 5]))
    factors, s = scale_to_events(community_factors(shape, true_rank, rng), n_events)
    X, n = sample_parafac_counts(factors, rng)
    return X, n, factors, s


# ----------------------------------------------------------------- memory
class PeakMemory:
    """Peak resident memory of this process plus its children, polled in a thread (psutil).

    The sum over processes counts pages they share (joblib's memory-mapped
    arrays, libraries) once per process, so it is an upper bound. Without
    psutil only ``resource``'s figures are available.
    """

    def __init__(self, interval=0.25):
        self.interval, self.peak_mb, self.n_processes = interval, np.nan, 0
        self._stop = threading.Event()

    def _poll(self, psutil):
        me = psutil.Process()
        peak, most = 0, 0
        while not self._stop.is_set():
            total, count = 0, 0
            for p in [me, *me.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                    count += 1
                except psutil.Error:  # a worker that has just exited
                    pass
            peak, most = max(peak, total), max(most, count)
            self.peak_mb, self.n_processes = peak / 2**20, most
            self._stop.wait(self.interval)

    def __enter__(self):
        try:
            import psutil
        except ImportError:
            self._thread = None
            return self
        self._thread = threading.Thread(target=self._poll, args=(psutil,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def rusage_peaks_mb():
    """``ru_maxrss`` of this process and of its largest reaped child, in MB (Linux reports KB)."""
    # The loky workers are only reaped (and so only counted in RUSAGE_CHILDREN) once their
    # executor shuts down.
    try:
        from joblib.externals.loky import get_reusable_executor

        get_reusable_executor().shutdown(wait=True)
    except Exception:  # joblib's internals moved: report what resource has
        pass
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)


# ---------------------------------------------------------------- sections
def run_selection(X, args, prior_rate, n_samples, n_burnin):
    sti = dict(n_blocks=N_BLOCKS, sampler=args.sampler, temperatures=N_TEMPS, n_samples=n_samples, n_burnin=n_burnin)
    selector = PARAFACRankSelector(ranks=args.ranks, prior_rate=prior_rate, n_jobs=args.n_jobs, random_state=args.seed,
                                   verbose=1, method=args.method, method_params=sti if args.method == "sti" else None)
    with PeakMemory() as memory, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        selector.fit(X)
        wall = time.perf_counter() - start
    self_mb, child_mb = rusage_peaks_mb()
    return selector, wall, memory, (self_mb, child_mb), caught


def print_selection(selector, wall, memory, rusage, caught, n_samples, n_burnin, true_rank, method):
    res = selector.cv_results_
    n_iter = N_TEMPS * n_samples  # plus n_samples - n_burnin exact prior draws at t = 0
    last = "ms/iter" if method == "sti" else "status"
    print(f"{'rank':>5} {'log-evidence':>16} {'± SE':>8} {'P':>6} {'fit (s)':>8} {last:>10}")
    for k, rank in enumerate(selector.ranks_):
        t = res["mean_fit_time"][k]
        err = selector.errors_.get(int(rank))
        if err:
            print(f"{rank:>5} {'failed':>16}  {err[:80]}")
            continue
        print(f"{rank:>5} {selector.log_evidence_[k]:16.1f} {selector.log_evidence_std_[k]:8.1f} "
              f"{selector.model_probabilities_[k]:6.3f} {t:8.1f} "
              + (f"{1e3 * t / n_iter:10.2f}" if method == "sti" else f"{res['status'][k]:>10}"))
    fit_sum = float(np.nansum(res["mean_fit_time"]))
    print(f"argmax: rank {selector.best_rank_} (true rank {true_rank}; paper on the real tensor: "
          "1, 9, 33 for prior rates 0.01, 1.8, 3)")
    ok = "met" if wall <= TARGET_WALL_S else "NOT met"
    print(f"wall time, all ranks: {wall:.1f} s = {wall / 60:.1f} min (target ≤ {TARGET_WALL_S / 60:.0f} min: {ok}); "
          f"sum of fit times {fit_sum:.1f} s")
    peak = np.nanmax([memory.peak_mb, rusage[0] + rusage[1]])
    ok = "met" if peak <= TARGET_MEMORY_MB else "NOT met"
    print(f"peak RSS: polled sum over this process and {max(memory.n_processes - 1, 0)} children "
          f"{memory.peak_mb:.0f} MB; ru_maxrss self {rusage[0]:.0f} MB, largest child {rusage[1]:.0f} MB "
          f"(target ≤ {TARGET_MEMORY_MB:.0f} MB: {ok})")
    if method == "sti":
        print("ms/iter = fit time / (T·K); it includes the t = 0 stage's "
              f"{n_samples - n_burnin} exact prior draws and the data preparation")
    else:
        print(f"{selector.decision_}")
    for w in {str(w.message)[:160] for w in caught}:
        print(f"warning: {w}")


def _time_chain(data, blocks, F0, rank_steps, sampler, repeats, seed):
    """Best-of-``repeats`` seconds per iteration of one chain at t = 1 from the stacked factors ``F0``."""
    best = np.inf
    for rep in range(repeats):
        F = F0.copy()
        start = time.perf_counter()
        # Timing only: a pSGLD or SGLD step this long may have its drift capped often, which
        # must not stop the clock (max_capped_fraction=1.0).
        run_chain(data, blocks, F, temperature=1.0, n_samples=rank_steps, n_burnin=rank_steps // 2, step_a=1e-3,
                  step_b=0.0, sampler=sampler, prior_rates=1.0, seed_seq=np.random.SeedSequence([seed, rep]),
                  max_capped_fraction=1.0)
        best = min(best, (time.perf_counter() - start) / rank_steps)
    return best


def _time_factor_work(shape, rank, steps, sampler, seed):
    """Seconds per iteration of the (I+J+K)R work alone: the noise draws, and the kernel's update."""
    n = sum(shape) * rank
    noise = np.empty(n)
    state = seed_streams(np.random.SeedSequence(seed), 1)[0]
    fill_standard_normal(state, noise[:8])  # compile or load from cache
    start = time.perf_counter()
    for _ in range(steps):
        fill_standard_normal(state, noise)
    t_noise = (time.perf_counter() - start) / steps
    # The kernel's update of every parameter once (the chain calls it block by block on the same flat rows).
    theta, v, g = np.full(n, 0.05), np.full(n, 0.1), np.zeros(n)
    update = (1e-3, 1.0, 1.0 / n, 1.0, sampler == "psgld", False, True, PSGLD_ALPHA, PSGLD_SIGMA)
    _update(theta[:2], v[:2], g[:2], noise[:2], *update)  # compile or load from cache
    start = time.perf_counter()
    for _ in range(steps):
        theta[...] = 0.05
        _update(theta, v, g, noise, *update)
    t_update = (time.perf_counter() - start) / steps
    return t_noise, t_update


def time_per_iteration(shape, true_rank, sizes, rank, steps, repeats, sampler, seed):
    """Seconds per chain iteration at each non-zero count and at an almost empty tensor."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, true_rank, 5]))
    base = community_factors(shape, true_rank, rng)
    start_rng = np.random.default_rng(np.random.SeedSequence([seed, 55]))
    F0 = np.concatenate([start_rng.exponential(0.05, size=(n, rank)) + 1e-3 for n in shape])  # stacked factors
    rows = []
    previous = numba.get_num_threads()
    numba.set_num_threads(1)  # as in each of the n_jobs=2 workers
    try:
        for target in (1e3, *sizes):
            factors, _ = scale_to_events(base, target)
            X, _ = sample_parafac_counts(factors, rng)
            data = CPData.from_array(X)
            blocks = data.blocks(N_BLOCKS)
            _time_chain(data, blocks, F0, 3, sampler, 1, seed)  # compile or load from cache
            rows.append((target, data.vals.size, _time_chain(data, blocks, F0, steps, sampler, repeats, seed)))
        t_noise, t_update = _time_factor_work(shape, rank, max(steps // 5, 5), sampler, seed)
    finally:
        numba.set_num_threads(previous)
    return rows, t_noise, t_update


def print_time_per_iteration(rows, t_noise, t_update, shape, rank, steps, repeats, sampler):
    I, J, K = shape
    nnz = np.array([r[1] for r in rows], dtype=float)
    sec = np.array([r[2] for r in rows])
    b, a = np.polyfit(nnz, sec, 1)
    fitted = a + b * nnz
    smallest = sec[1]
    print(f"one {sampler} chain, rank {rank}, {I}×{J}×{K}, B={N_BLOCKS} (parts of ≈ nnz/{N_BLOCKS**2} "
          f"non-zeros), 1 numba thread, best of {repeats} × {steps} iterations")
    print(f"{'nnz':>10} {'nnz/part':>9} {'ms/iter':>9} {'ratio':>7} {'fit a+b·nnz':>12} {'nnz share':>10}")
    for (_target, n, s), f in zip(rows, fitted):
        ratio = "-" if n == rows[0][1] else f"{s / smallest:7.3f}"
        print(f"{n:>10d} {n / N_BLOCKS**2:9.0f} {1e3 * s:9.3f} {ratio:>7} {1e3 * f:12.3f} {b * n / s:10.1%}")
    print(f"ratio = ms/iter over that of the smallest protocol size ({rows[1][1]} non-zeros); "
          f"the nnz ratios are {', '.join(f'{n / rows[1][1]:.2f}' for n in nnz[1:])}")
    print(f"least squares: a = {1e3 * a:.3f} ms/iter grows with (I+J+K)·R = {(I + J + K) * rank}, "
          f"b = {1e9 * b:.3f} ns per non-zero of the tensor (= {1e9 * b * N_BLOCKS**2 / rank:.1f} ns per visited "
          f"non-zero and component: an iteration visits nnz/{N_BLOCKS**2}) "
          f"(b·nnz = {1e3 * b * nnz[-1]:.3f} ms at {int(nnz[-1])} non-zeros)")
    increments = np.diff(sec[1:]) / np.diff(nnz[1:])
    print("marginal cost per non-zero between consecutive sizes: "
          + ", ".join(f"{1e9 * x:.1f} ns" for x in increments)
          + " (equal values = linear growth; timing noise is ~1% of ms/iter)")
    print(f"of a: the (I+J+K)·R Langevin normals alone {1e3 * t_noise:.3f} ms ({t_noise / a:.0%}), the "
          f"{sampler} update alone (drift cap, mirror at 0) {1e3 * t_update:.3f} ms ({t_update / a:.0%}); "
          "the rest is zeroing and filling the gradients, the group sums and the kept-state sums")


def corcondia(X, candidates, threshold, n_starts, seed):
    """tensorly CP (ALS, best of ``n_starts``) + tlviz core consistency per rank; chosen rank, seconds."""
    try:
        from tensorly.decomposition import parafac
        from tlviz.model_evaluation import core_consistency
    except ImportError:
        sys.exit('the CORCONDIA baseline needs tensorly and tlviz: pip install ".[benchmark]" '
                 "(or pass --skip-corcondia)")
    X = np.asarray(X, dtype=np.float64)
    start = time.perf_counter()
    consistency = {}
    for rank in candidates:
        best, best_err = None, np.inf
        for s in range(n_starts):
            cp, errors = parafac(X, rank, init="random", random_state=seed * 1000 + s, n_iter_max=500, tol=1e-8,
                                 return_errors=True)
            if errors[-1] < best_err:
                best, best_err = cp, errors[-1]
        consistency[rank] = (float(core_consistency(best, X)), float(best_err))
    seconds = time.perf_counter() - start
    chosen = candidates[0]
    for rank in candidates:
        if consistency[rank][0] < threshold:
            break
        chosen = rank
    return consistency, chosen, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 10x smaller tensor, 300 iterations: < 2 min")
    parser.add_argument("--ranks", type=int, nargs="+", default=list(range(1, 12)))
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--sampler", default="psgld", choices=("psgld", "sgld"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-corcondia", action="store_true")
    parser.add_argument("--true-rank", type=int, default=6)
    parser.add_argument("--prior-rate", type=float, default=None, help="default: 1/s, the generating rate")
    parser.add_argument("--nnz", type=float, default=None, help="expected events (≈ non-zeros)")
    parser.add_argument("--iter-sizes", type=float, nargs=3, default=None, help="three event counts")
    parser.add_argument("--iter-rank", type=int, default=None, help="rank of the per-iteration timing")
    parser.add_argument("--cc-threshold", type=float, default=80.0, help="core consistency threshold, %%")
    parser.add_argument("--skip-selection", action="store_true", help="only the timing and CORCONDIA sections")
    parser.add_argument("--method", default="rti", choices=("rti", "sti"),
                        help="the selection's method: rti (the selector's default) or sti (the paper's SG-MCMC)")
    args = parser.parse_args()
    cfg = dict(QUICK if args.quick else FULL)
    if args.nnz:
        cfg["nnz"] = args.nnz
    if args.iter_sizes:
        cfg["iter_sizes"] = tuple(args.iter_sizes)
    iter_rank = args.iter_rank or max(args.ranks)
    run_start = time.perf_counter()

    gf_best, gf_median = blas_gflops()
    print(f"P5 (Nguyen et al. 2018 §V.B{', QUICK' if args.quick else ''}) — "
          f"skevidence {skevidence.__version__}, {git_state()}")
    print(f"{platform.processor() or platform.machine()}, cores {os.cpu_count()}, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}, BLAS {blas_threads()}, numba {numba.__version__} "
          f"(NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS})")
    print(f"dgemm 1000x1000: best {gf_best:.1f} GFLOP/s, median {gf_median:.1f} GFLOP/s")

    # ---- 1. the tensor
    start = time.perf_counter()
    X, n_events, factors, s = make_tensor(cfg["shape"], args.true_rank, cfg["nnz"], args.seed)
    t_gen = time.perf_counter() - start
    prior_rate = args.prior_rate or 1.0 / s
    I, J, K = cfg["shape"]
    print(f"\ntensor {I}×{J}×{K} (IJK = {I * J * K:.3g}), true rank {args.true_rank} (communities of "
          f"{COMMUNITY[0]:.0%}/{COMMUNITY[1]:.0%} of the users, {COMMUNITY[2]:.0%} of the days), "
          f"{n_events} events, {X.nnz} non-zeros (density {X.nnz / (I * J * K):.2g}), largest count "
          f"{int(X.data.max())}; drawn in {t_gen:.1f} s, never forming IJK values")
    print(f"generating weights Exp(rate {1 / s:.4g}); prior rate of the fits {prior_rate:.4g}")

    # ---- 2. time per iteration against nnz
    print()
    sys.stdout.flush()
    rows, t_noise, t_update = time_per_iteration(
        cfg["shape"], args.true_rank, cfg["iter_sizes"], iter_rank, cfg["iter_steps"], cfg["iter_repeats"],
        args.sampler, args.seed,
    )
    print_time_per_iteration(rows, t_noise, t_update, cfg["shape"], iter_rank, cfg["iter_steps"],
                             cfg["iter_repeats"], args.sampler)

    # ---- 3. CORCONDIA side by side
    if not args.skip_corcondia:
        rng = np.random.default_rng(np.random.SeedSequence([args.seed, 4]))
        A, B, C = (rng.exponential(1.0, size=(n, DENSE_RANK)) for n in DENSE_SHAPE)
        Xd = rng.poisson(np.einsum("ir,jr,kr->ijk", A, B, C))
        consistency, cc_rank, cc_time = corcondia(Xd, DENSE_CANDIDATES, args.cc_threshold, 5, args.seed)
        selector = PARAFACRankSelector(
            ranks=DENSE_CANDIDATES, prior_rate=1.0, n_jobs=args.n_jobs, random_state=args.seed, method="sti",
            method_params=dict(sampler=args.sampler, temperatures=N_TEMPS, n_samples=cfg["n_samples"],
                               n_burnin=cfg["n_burnin"]),
        )
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            selector.fit(Xd)
        sti_time = time.perf_counter() - start
        print(f"\nCORCONDIA vs STI on a dense {'×'.join(map(str, DENSE_SHAPE))} tensor of a rank-{DENSE_RANK} "
              f"model (A, B, C ~ Exp(1); {int(Xd.sum())} counts, {np.count_nonzero(Xd)} non-zero)")
        print("CORCONDIA: tensorly parafac (ALS, best of 5 random starts, ≤ 500 iterations) + "
              "tlviz core_consistency (Bro's, not normalised)")
        print(f"STI: PARAFACRankSelector, prior rate 1 (the generating one), {args.sampler}, T={N_TEMPS}, "
              f"K={cfg['n_samples']} (last {cfg['n_samples'] - cfg['n_burnin']} kept), B=auto (5), "
              f"n_jobs={args.n_jobs}")
        print(f"{'rank':>5} {'core cons. %':>13} {'rel. error':>11} {'log-evidence':>14} {'± SE':>7} {'P':>6}")
        for k, rank in enumerate(DENSE_CANDIDATES):
            cc, err = consistency[rank]
            print(f"{rank:>5} {cc:13.1f} {err:11.4f} {selector.log_evidence_[k]:14.1f} "
                  f"{selector.log_evidence_std_[k]:7.1f} {selector.model_probabilities_[k]:6.3f}")
        print(f"CORCONDIA: rank {cc_rank} (largest rank with core consistency ≥ {args.cc_threshold:g}% "
              f"at it and every smaller rank), {cc_time:.1f} s")
        print(f"STI:       rank {selector.best_rank_} (largest evidence), {sti_time:.1f} s; true rank {DENSE_RANK}")
        print("(paper, real tensor on a 1 TB machine: STI-pSGLD 30% faster than CORCONDIA; CORCONDIA ran out "
              "of memory at R = 3 on the paper's machine)")

    # ---- 4. the selection (last: the long part)
    if not args.skip_selection:
        chains = (f"sampler={args.sampler}, T={N_TEMPS} (power ladder), K={cfg['n_samples']} (last "
                  f"{cfg['n_samples'] - cfg['n_burnin']} kept), B={N_BLOCKS}" if args.method == "sti"
                  else "its default settings")
        print(f"\nPARAFACRankSelector(method={args.method!r}): ranks {args.ranks[0]}..{args.ranks[-1]}, {chains}, "
              f"n_jobs={args.n_jobs}, random_state={args.seed}")
        sys.stdout.flush()
        out = run_selection(X, args, prior_rate, cfg["n_samples"], cfg["n_burnin"])
        print_selection(*out, cfg["n_samples"], cfg["n_burnin"], args.true_rank, args.method)
        print(f"load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    gf_end, _ = blas_gflops()
    print(f"\ndgemm at the end: best {gf_end:.1f} GFLOP/s; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; total run {time.perf_counter() - run_start:.1f} s")


if __name__ == "__main__":
    main()
