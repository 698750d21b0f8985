"""Protocol P3 (seed 000, section 4.2): the NMF rank of a speech spectrogram, NOIZEUS.

The training matrix is the magnitude spectrogram of the first 20 clean NOIZEUS
sentences (Hamming window of 512 samples, 50% overlap), 1661 frames x 257 bins
(the paper's 257 x 1661, transposed: frames are rows here). The evidence of
ranks 32, 64, 128, 256 and 512 is estimated by STI with the paper's ladder
size and chain lengths (T = 5, K = 1250 of which the last 500 are kept, 8 x 8
blocks) and printed with the time per rank, the whole run's wall time and peak
memory, and the kernel's GFLOP/s next to this machine's dgemm GFLOP/s measured
in the same run.

The oracle of the paper (speech-enhancement SDR on held-out noisy sentences)
is not computed here yet.

Usage::

    python benchmarks/bench_p3_noizeus.py [--ranks 32 64 ...] [--scale 1e-3] [--n-jobs 2]
        [--noizeus PATH]
"""

import argparse
import math
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

from _environment import blas_gflops, blas_threads, git_state

import skevidence
from skevidence import BayesianNMFRankSelector
from skevidence.audio import SpectrogramTransformer, load_audio


def _noizeus_root(given):
    candidates = [given] if given else []
    candidates += [os.environ.get("SKEVIDENCE_NOIZEUS")]
    candidates += [Path(__file__).resolve().parents[2] / "shared" / "data" / "audio" / "noizeus"]
    for c in candidates:
        if c and (Path(c) / "clean").is_dir():
            return Path(c)
    sys.exit("NOIZEUS not found: give --noizeus PATH (the folder holding clean/ and noisy/).")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[32, 64, 128, 256, 512])
    parser.add_argument("--scale", type=float, default=1e-3, help="factor on 16-bit sample units")
    parser.add_argument("--prior-rate", type=float, default=None, help="default 1/sqrt(mean(X))")
    parser.add_argument("--sampler", default="logsgld")
    parser.add_argument("--temperatures", type=int, default=5)
    parser.add_argument("--n-samples", type=int, default=1250)
    parser.add_argument("--n-burnin", type=int, default=750)
    parser.add_argument("--n-blocks", type=int, default=8)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--noizeus", default=None)
    args = parser.parse_args()

    root = _noizeus_root(args.noizeus)
    gf_best, gf_median = blas_gflops()
    print(f"P3 (seed 000 §4.2) — skevidence {skevidence.__version__}, {git_state()}")
    print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.2f}, BLAS {blas_threads()}")
    print(f"dgemm 1000x1000: best {gf_best:.1f} GFLOP/s, median {gf_median:.1f} GFLOP/s")

    waveforms = []
    for k in range(1, 21):
        x, rate = load_audio(root / "clean" / f"sp{k:02d}.wav")
        waveforms.append(x)
    X = SpectrogramTransformer(scale=32768.0 * args.scale, sample_rate=rate).fit_transform(waveforms)
    lam = args.prior_rate or 1.0 / math.sqrt(X.mean())
    print(f"training matrix {X.shape[0]} x {X.shape[1]} (paper: 257 x 1661 transposed), "
          f"sum {X.sum():.4g}, mean {X.mean():.4g}, max {X.max():.4g}; scale {args.scale:g}, prior rate {lam:.4g}")
    print(f"STI: {args.sampler}, T={args.temperatures}, K={args.n_samples} (last "
          f"{args.n_samples - args.n_burnin} kept), {args.n_blocks}x{args.n_blocks} blocks, n_jobs={args.n_jobs}")

    start = time.perf_counter()
    selector = BayesianNMFRankSelector(
        ranks=tuple(args.ranks), prior_rate=lam, sampler=args.sampler, temperatures=args.temperatures,
        n_samples=args.n_samples, n_burnin=args.n_burnin, n_blocks=args.n_blocks, n_jobs=args.n_jobs,
        random_state=0, verbose=2,
    ).fit(X)
    wall = time.perf_counter() - start
    peak_mb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    gf_end, _ = blas_gflops()

    I, J = X.shape
    n_iter = args.temperatures * args.n_samples  # t = 0 is exact prior draws, scored on one part each
    print()
    print(f"{'rank':>5} {'log-evidence':>14} {'± SE':>9} {'P':>6} {'fit(s)':>8} {'GFLOP/s':>8} {'/dgemm':>7}")
    for k, rank in enumerate(selector.ranks_):
        fit_time = selector.cv_results_["mean_fit_time"][k]
        # Counted flops: per iteration, V = W_b H_b and the two gradient products over a part (IJ/B entries).
        flops = 6.0 * (I * J / args.n_blocks) * rank * n_iter
        gflops = flops / fit_time / 1e9
        print(f"{rank:>5} {selector.log_evidence_[k]:14.1f} {selector.log_evidence_std_[k]:9.1f} "
              f"{selector.model_probabilities_[k]:6.3f} {fit_time:8.1f} {gflops:8.2f} {gflops / gf_best:7.1%}")
    print(f"\nargmax: {selector.best_rank_} (paper: 256)")
    print(f"wall time, all ranks: {wall:.1f} s (target ≤ 90 s on 2 cores; paper: 9 min on 4 cores in C)")
    print(f"peak resident memory: {peak_mb:.0f} MB (target ≤ 1024 MB)")
    print(f"dgemm at the end: best {gf_end:.1f} GFLOP/s; load {os.getloadavg()[0]:.2f}")
    print("GFLOP/s counts 6·(IJ/B)·R flops per iteration over the rank's fit time (one worker, "
          "one numba thread when n_jobs=2); /dgemm divides by the best 2-thread dgemm rate above.")
    print("SDR oracle (paper's Fig. 4): not computed by this script.")


if __name__ == "__main__":
    main()
