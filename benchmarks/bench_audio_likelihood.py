"""The likelihoods of spectrograms: counting notes, and the cost of an iteration.

Two tables, printed as measured:

* **Counting.** Synthetic melodies of ``k`` distinct harmonic notes
  (:func:`skevidence.datasets.make_harmonic_melody`: decaying envelopes, a
  faint noise floor; 8 kHz, ``n_fft=256``), ``k = 2..7``. For each, the rank
  chosen among ``k-1 .. k+3`` by :class:`~skevidence.BayesianNMFRankSelector`
  with the exponential likelihood of the power spectrogram and
  ``prior_rate="auto"`` (the command line's default model), next to the
  Poisson model of magnitudes read as counts at the command line's scale
  (0.001 of 16-bit units) and at the 16-bit scale, both with
  ``prior_rate="auto"``. A model that counts notes chooses within
  ``[k, k + 2]`` (one component a note, and the noise floor).
* **Speed.** On the bundled clip's spectrogram, exponential against Poisson
  at the same rank and size, as a ratio: the time of one
  likelihood-and-gradient pass of the referenced path's HMC
  (:func:`skevidence.cp.kernels.passes.log_likelihood`, the work of one
  leapfrog step; median of repeated passes, one thread), and of one
  iteration of the prior path's fused block-parallel SG-MCMC chain
  (:func:`skevidence.cp.kernels.sgmcmc.run_chain`, pSGLD, 4 x 4 blocks,
  dense; median over chains of 200 iterations, the numba threads the machine
  has).

Usage::

    python benchmarks/bench_audio_likelihood.py                 # both tables
    python benchmarks/bench_audio_likelihood.py --notes 2 3 4   # some melodies
    python benchmarks/bench_audio_likelihood.py --speed-only
"""

import argparse
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from skevidence import BayesianNMFRankSelector
from skevidence.audio import SpectrogramTransformer
from skevidence.cp.data import CPData
from skevidence.cp.kernels.passes import log_likelihood
from skevidence.cp.kernels.sgmcmc import run_chain
from skevidence.datasets import load_example_audio, make_harmonic_melody

from _environment import git_state

MODELS = {
    "exponential, power": dict(likelihood="exponential", power=2, scale=1.0),
    "Poisson, CLI scale": dict(likelihood="poisson", power=1, scale=32.768),
    "Poisson, 16-bit": dict(likelihood="poisson", power=1, scale=32768.0),
}


def counting(notes, n_jobs, max_time):
    print("\nCounting: chosen rank of melodies of k notes (ranks k-1 .. k+3 offered)")
    print(f"{'k':>3}  " + "  ".join(f"{name:>20}" for name in MODELS) + "   time (s)")
    for k in notes:
        x, _ = make_harmonic_melody(k, random_state=k)
        row, start = [], time.perf_counter()
        for spec in MODELS.values():
            X = SpectrogramTransformer(n_fft=256, scale=spec["scale"], power=spec["power"]).fit_transform([x])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sel = BayesianNMFRankSelector(
                    ranks=tuple(range(max(1, k - 1), k + 4)), prior_rate="auto", likelihood=spec["likelihood"],
                    n_jobs=n_jobs, method_params=dict(max_time=max_time), random_state=0,
                ).fit(X)
            ok = "ok" if k <= sel.best_rank_ <= k + 2 else "--"
            row.append(f"{sel.best_rank_:>3} {ok}")
        print(f"{k:>3}  " + "  ".join(f"{cell:>20}" for cell in row) + f"   {time.perf_counter() - start:8.1f}",
              flush=True)


def clip_spectrograms():
    """The bundled clip's spectrograms the speed tables compare: ``{name: (kappa, X)}``, at the same size."""
    x, rate = load_example_audio()
    return {name: (kappa, SpectrogramTransformer(scale=32.768, power=power, sample_rate=rate).fit_transform([x]))
            for name, kappa, power in (("poisson", 0.0, 1), ("exponential", 1.0, 2))}


def speed(spectrograms, ranks, repeats=50):
    print("\nSpeed: one likelihood-and-gradient pass on the bundled clip (median of "
          f"{repeats}, one thread)")
    print(f"{'rank':>5} {'shape':>12} {'Poisson (ms)':>13} {'exponential (ms)':>17} {'ratio':>7}")
    for R in ranks:
        times = {}
        for name, (kappa, X) in spectrograms.items():
            data = CPData.from_array(X, kappa)
            rng = np.random.default_rng(0)
            F = rng.gamma(2.0, 0.5, size=(sum(X.shape), R)) * np.sqrt(X.mean() / R)
            grad, sums = np.empty_like(F), np.empty((2, R))
            dense2, Xd, coords, vals, offsets, kappa, floor = data.pass_args()
            args = (dense2, Xd, coords, vals, F, offsets, kappa, floor, data.constant, grad, sums, True)
            with threadpool_limits(1):
                log_likelihood(*args)  # compile / warm up
                samples = []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    log_likelihood(*args)
                    samples.append(time.perf_counter() - t0)
            times[name] = float(np.median(samples))
        print(f"{R:>5} {str(X.shape):>12} {1e3 * times['poisson']:13.3f} {1e3 * times['exponential']:17.3f} "
              f"{times['exponential'] / times['poisson']:7.2f}", flush=True)


def chain_speed(spectrograms, ranks, repeats=7, n_samples=200, n_blocks=4):
    print(f"\nSpeed: one iteration of the SG-MCMC chain (pSGLD, {n_blocks} x {n_blocks} blocks, dense; "
          f"median of {repeats} chains of {n_samples})")
    print(f"{'rank':>5} {'shape':>12} {'Poisson (ms)':>13} {'exponential (ms)':>17} {'ratio':>7}")
    for R in ranks:
        samples = {"poisson": [], "exponential": []}
        setups = {}
        for name, (kappa, X) in spectrograms.items():
            data = CPData.from_array(X, kappa)  # dense: the matrix's blocks go through BLAS
            scale = np.sqrt(X.mean() / R)
            setups[name] = (data, data.blocks(n_blocks), scale)
        for k in range(repeats + 1):  # interleaved, so that a load on the machine hits both alike
            for name, (data, blocks, scale) in setups.items():
                rng = np.random.default_rng(k)
                F = rng.gamma(2.0, 0.5, size=(sum(data.shape), R)) * scale  # the stacked factors, W over H^T
                t0 = time.perf_counter()
                # Timing only: a step this long may have its drift capped often (max_capped_fraction=1.0).
                run_chain(data, blocks, F, temperature=1.0, n_samples=n_samples, n_burnin=n_samples // 2,
                          step_a=1e-3, step_b=0.0, sampler="psgld", prior_rates=1.0 / scale,
                          seed_seq=np.random.SeedSequence(k), max_capped_fraction=1.0)
                if k:  # the first round compiles
                    samples[name].append((time.perf_counter() - t0) / n_samples)
        times = {name: float(np.median(v)) for name, v in samples.items()}
        print(f"{R:>5} {str(setups['poisson'][0].shape):>12} {1e3 * times['poisson']:13.3f} "
              f"{1e3 * times['exponential']:17.3f} {times['exponential'] / times['poisson']:7.2f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, nargs="+", default=[2, 3, 4, 5, 6, 7])
    parser.add_argument("--ranks", type=int, nargs="+", default=[4, 8, 16, 32])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--speed-only", action="store_true")
    # The Poisson model at the 16-bit scale has log-evidences of millions of nats whose error bars
    # shrink slowly: without a limit tol=1 is not reached in hours (the ranks differ by thousands).
    parser.add_argument("--max-time", type=float, default=60.0,
                        help="seconds a rank may spend on each refinement (method_params max_time; default 60)")
    args = parser.parse_args()
    print(f"bench_audio_likelihood — {git_state()}")
    spectrograms = clip_spectrograms()
    speed(spectrograms, args.ranks)
    chain_speed(spectrograms, args.ranks)
    if not args.speed_only:
        counting(args.notes, args.n_jobs, args.max_time)


if __name__ == "__main__":
    main()
