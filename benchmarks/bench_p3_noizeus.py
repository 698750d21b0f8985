"""Protocol P3 (Şimşekli et al. 2016, section 4.2): the NMF rank of a speech spectrogram, NOIZEUS.

The training matrix is the magnitude spectrogram of the first 20 clean NOIZEUS
sentences (Hamming window of 512 samples, 50% overlap), 1661 frames x 257 bins
(the paper's 257 x 1661, transposed: frames are rows here). The evidence of
ranks 32, 64, 128, 256 and 512 is estimated by STI (``method="sti"``) with
the paper's ladder size and chain lengths (T = 5, K = 1250 of which the last
500 are kept, 8 x 8 blocks; ``--sampler``: pSGLD, the package's STI sampler,
or the paper's SGLD) and printed with the time per rank, the whole run's wall
time and peak memory, and the kernel's GFLOP/s next to this machine's dgemm
GFLOP/s measured in the same run.

The paper's oracle follows (its Fig. 4), printed next to the evidence curve:
for every rank a speech dictionary is trained on the same 20 clean sentences
(:class:`~skevidence.SemiSupervisedNMF`: ``--oracle-likelihood poisson``, the
paper's model, on 16-bit magnitudes with its prior rate 0.0004, or
``exponential``, Itakura-Saito NMF of the power spectrogram), held fixed, and
the held-out sentences 21-30 in the chosen noises and SNR are enhanced with 5
noise atoms and the Wiener mask (``--sparsity``: the penalty on the speech
activations, which keeps the speech dictionary from explaining the noise);
SDR, SIR and SAR of the speech estimate are BSS_EVAL 3.0
(``mir_eval.separation``, in the ``benchmark`` extra), with the speech and the
noise (mixture minus clean) as the two references, averaged over the
mixtures. ``--oracle-only`` runs the oracle alone.

Usage::

    python benchmarks/bench_p3_noizeus.py [--ranks 32 64 ...] [--scale 1e-3] [--n-jobs 2]
        [--sampler psgld|sgld] [--temperatures 5] [--n-samples 1250] [--n-burnin 750] [--n-blocks 8]
        [--noizeus PATH] [--noises street car ...] [--snr 5] [--no-sdr] [--profile-rank 256]
        [--oracle-likelihood poisson|exponential] [--sparsity 0.3] [--oracle-only]

Last, a profile of one iteration at ``--profile-rank`` (one numba thread and
one BLAS thread, as in each ``n_jobs=2`` worker): the whole chain's time per
iteration (``skevidence.cp.kernels.sgmcmc.run_chain``) next to its parts timed
alone, the three BLAS products of the B blocks, the Langevin normals of the
(I + J) R parameters and the SGLD or pSGLD update of them (the kernel's own
update function), against this machine's one-thread dgemm rate.
"""

import argparse
import math
import os
import resource
import sys
import time
from pathlib import Path

import numba
import numpy as np
from numba import njit

import skevidence
from skevidence import EvidenceGridSearch, PoissonNMF, SemiSupervisedNMF
from skevidence._config import PSGLD_ALPHA, PSGLD_SIGMA
from skevidence.audio import SpectrogramTransformer, load_audio
from skevidence.cp.data import CPData, block_bounds
from skevidence.cp.kernels.rng import fill_standard_normal, seed_streams
from skevidence.cp.kernels.sgmcmc import _update, run_chain

from _environment import blas_gflops, blas_threads, git_state


def _noizeus_root(given):
    candidates = [given] if given else []
    candidates += [os.environ.get("SKEVIDENCE_NOIZEUS")]
    candidates += [Path(__file__).resolve().parents[2] / "shared" / "data" / "audio" / "noizeus"]
    for c in candidates:
        if c and (Path(c) / "clean").is_dir():
            return Path(c)
    sys.exit("NOIZEUS not found: give --noizeus PATH (the folder holding clean/ and noisy/).")


NOISES = ("airport", "babble", "car", "exhibition", "restaurant", "station", "street", "train")


def sdr_oracle(ranks, training, root, noises, snr, *, train_iter, separation_iter, likelihood="poisson",
               sparsity=0.0):
    """Mean BSS_EVAL SDR, SIR, SAR of the speech estimate for every rank, and the mixtures'."""
    import warnings

    try:
        from mir_eval.separation import bss_eval_sources
    except ImportError:
        sys.exit('the SDR oracle needs mir_eval: pip install ".[benchmark]" (or pass --no-sdr)')
    power = 1.0 if likelihood == "poisson" else 2.0
    spectrogram = SpectrogramTransformer(n_fft=512, hop_length=256, window="hamming", power=power)
    X_train = spectrogram.transform(training)
    mixtures = []
    for k in range(21, 31):
        clean, _ = load_audio(root / "clean" / f"sp{k:02d}.wav")
        for noise in noises:
            noisy, _ = load_audio(root / "noisy" / f"{noise}_{snr}dB" / f"sp{k:02d}_{noise}_sn{snr}.wav")
            n = min(clean.size, noisy.size)
            mixtures.append((clean[:n], noisy[:n]))

    def bss(clean, noisy, speech):
        references = np.stack([clean, noisy - clean])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # mir_eval 0.8 deprecates the module
            sdr, sir, sar, _ = bss_eval_sources(references, np.stack([speech, noisy - speech]))
        return sdr[0], sir[0], sar[0]

    def mixture_sdr(clean, noisy):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return bss_eval_sources(clean[None], noisy[None])[0][0]

    # The unprocessed mixture has no noise estimate: only its SDR against the speech is defined.
    baseline = np.mean([mixture_sdr(c, x) for c, x in mixtures])
    rows = {}
    for rank in ranks:
        start = time.perf_counter()
        model = SemiSupervisedNMF(n_components=rank, likelihood=likelihood, sparsity=sparsity, max_iter=train_iter,
                                  tol=0.0, random_state=0)
        model.fit(X_train).set_params(max_iter=separation_iter)
        scores = []
        for clean, noisy in mixtures:
            Z = spectrogram.stft(noisy)
            mask = model.speech_mask(np.abs(Z) ** power)
            scores.append(bss(clean, noisy, spectrogram.istft(mask * Z, noisy.size)))
        rows[rank] = (*np.mean(scores, axis=0), time.perf_counter() - start)
    return rows, baseline, len(mixtures)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[32, 64, 128, 256, 512])
    parser.add_argument("--scale", type=float, default=1e-3, help="factor on 16-bit sample units")
    parser.add_argument("--prior-rate", type=float, default=None, help="default 1/sqrt(mean(X))")
    parser.add_argument("--sampler", default="psgld", choices=("psgld", "sgld"))
    parser.add_argument("--temperatures", type=int, default=5)
    parser.add_argument("--n-samples", type=int, default=1250)
    parser.add_argument("--n-burnin", type=int, default=750)
    parser.add_argument("--n-blocks", type=int, default=8)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--profile-rank", type=int, default=256, help="rank of the one-iteration profile")
    parser.add_argument("--noizeus", default=None)
    parser.add_argument("--noises", nargs="+", default=list(NOISES), choices=NOISES)
    parser.add_argument("--snr", type=int, default=5, choices=(0, 5, 10, 15))
    parser.add_argument("--train-iter", type=int, default=150, help="EM iterations of the speech dictionary")
    parser.add_argument("--separation-iter", type=int, default=25, help="EM iterations on each mixture")
    parser.add_argument("--no-sdr", action="store_true", help="skip the SDR oracle")
    parser.add_argument("--oracle-only", action="store_true", help="the SDR oracle alone (no evidence)")
    parser.add_argument("--oracle-likelihood", default="poisson", choices=("poisson", "exponential"),
                        help="the oracle's model: Poisson on magnitudes, or exponential on the power spectrogram")
    parser.add_argument("--sparsity", type=float, default=0.0, help="penalty on the speech activations")
    args = parser.parse_args()

    root = _noizeus_root(args.noizeus)
    gf_best, gf_median = blas_gflops()
    print(f"P3 (Şimşekli et al. 2016 §4.2) — skevidence {skevidence.__version__}, {git_state()}")
    print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.2f}, BLAS {blas_threads()}")
    print(f"dgemm 1000x1000: best {gf_best:.1f} GFLOP/s, median {gf_median:.1f} GFLOP/s")

    waveforms = []
    for k in range(1, 21):
        x, rate = load_audio(root / "clean" / f"sp{k:02d}.wav")
        waveforms.append(x)
    if args.oracle_only:
        print_oracle(args, waveforms, root)
        return
    X = SpectrogramTransformer(scale=32768.0 * args.scale, sample_rate=rate).fit_transform(waveforms)
    lam = args.prior_rate or 1.0 / math.sqrt(X.mean())
    print(f"training matrix {X.shape[0]} x {X.shape[1]} (paper: 257 x 1661 transposed), "
          f"sum {X.sum():.4g}, mean {X.mean():.4g}, max {X.max():.4g}; scale {args.scale:g}, prior rate {lam:.4g}")
    print(f"STI: {args.sampler}, T={args.temperatures}, K={args.n_samples} (last "
          f"{args.n_samples - args.n_burnin} kept), {args.n_blocks}x{args.n_blocks} blocks, n_jobs={args.n_jobs}")

    start = time.perf_counter()
    # The paper's ranks go to 512, above min(I, J) = 257: the evidence of the over-complete model is well
    # defined. The protocol searches PoissonNMF's ranks with EvidenceGridSearch, one fit a rank (what
    # BayesianNMFRankSelector(method="sti") runs too; its staged refinement is for method="rti").
    base = PoissonNMF(
        prior_rate=lam, method="sti", random_state=0, verbose=1,
        method_params=dict(sampler=args.sampler, temperatures=args.temperatures, n_samples=args.n_samples,
                           n_burnin=args.n_burnin, n_blocks=args.n_blocks),
    )
    search = EvidenceGridSearch(base, {"n_components": list(args.ranks)}, n_jobs=args.n_jobs, verbose=1).fit(X)
    results = search.cv_results_
    ranks = np.asarray(args.ranks)
    log_z, log_z_std = results["mean_test_score"], results["std_log_evidence"]
    best_rank = int(search.best_params_["n_components"])
    wall = time.perf_counter() - start
    peak_mb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    gf_end, _ = blas_gflops()

    I, J = X.shape
    n_iter = args.temperatures * args.n_samples  # t = 0 is exact prior draws, scored on one part each
    print()
    print(f"{'rank':>5} {'log-evidence':>14} {'± SE':>9} {'P':>6} {'fit(s)':>8} {'GFLOP/s':>8} {'/dgemm':>7}")
    for k, rank in enumerate(ranks):
        fit_time = results["mean_fit_time"][k]
        # Counted flops: per iteration, V = W_b H_b and the two gradient products over a part (IJ/B entries).
        flops = 6.0 * (I * J / args.n_blocks) * rank * n_iter
        gflops = flops / fit_time / 1e9
        print(f"{rank:>5} {log_z[k]:14.1f} {log_z_std[k]:9.1f} "
              f"{results['model_probability'][k]:6.3f} {fit_time:8.1f} {gflops:8.2f} {gflops / gf_best:7.1%}")
    print(f"\nargmax: {best_rank} (paper: 256)")
    print(f"wall time, all ranks: {wall:.1f} s (target ≤ 90 s on 2 cores; paper: 9 min on 4 cores in C)")
    print(f"peak resident memory: {peak_mb:.0f} MB (target ≤ 1024 MB)")
    print(f"dgemm at the end: best {gf_end:.1f} GFLOP/s; load {os.getloadavg()[0]:.2f}")
    print("GFLOP/s counts 6·(IJ/B)·R flops per iteration over the rank's fit time (one worker, "
          "one numba thread when n_jobs=2); /dgemm divides by the best 2-thread dgemm rate above.")
    profile_iteration(X, args.profile_rank, args.n_blocks, lam, args.sampler)
    if not args.no_sdr:
        print_oracle(args, waveforms, root, log_z, best_rank)


def print_oracle(args, waveforms, root, log_z=None, best_rank=None):
    """The SDR oracle's table, next to the evidence curve where there is one."""
    start = time.perf_counter()
    rows, baseline, n_mix = sdr_oracle(
        args.ranks, waveforms, root, args.noises, args.snr, train_iter=args.train_iter,
        separation_iter=args.separation_iter, likelihood=args.oracle_likelihood, sparsity=args.sparsity,
    )
    print(f"\nOracle (paper's Fig. 4): {n_mix} held-out mixtures (sentences 21-30, "
          f"{len(args.noises)} noises at {args.snr} dB), {args.oracle_likelihood} likelihood, sparsity "
          f"{args.sparsity:g}, {args.train_iter} EM iterations to train, {args.separation_iter} to separate; "
          "BSS_EVAL 3.0 (mir_eval), means in dB")
    print(f"{'rank':>5} {'log-evidence':>14} {'SDR':>7} {'SIR':>7} {'SAR':>7} {'gain':>6} {'time(s)':>8}")
    print(f"{'mix':>5} {'':>14} {baseline:7.2f} {'-':>7} {'-':>7}")
    for k, rank in enumerate(args.ranks):
        sdr, sir, sar, seconds = rows[rank]
        evidence = f"{log_z[k]:14.1f}" if log_z is not None else f"{'-':>14}"
        print(f"{rank:>5} {evidence} {sdr:7.2f} {sir:7.2f} {sar:7.2f} {sdr - baseline:+6.2f} {seconds:8.1f}")
    best_sdr = max(rows, key=lambda r: rows[r][0])
    print(f"evidence argmax {best_rank}, SDR argmax {best_sdr}; oracle time {time.perf_counter() - start:.1f} s")


@njit(cache=False)
def _block_products(W, Ht, V, gW, gHt, row_bounds, col_bounds, n_rep):
    """The three BLAS products of each block of one part, ``n_rep`` times (the kernel's shapes)."""
    B = row_bounds.shape[0] - 1
    for _ in range(n_rep):
        for b in range(B):
            i0, i1 = row_bounds[b], row_bounds[b + 1]
            j0, j1 = col_bounds[b], col_bounds[b + 1]
            ni, nj = i1 - i0, j1 - j0
            Vb = V[: ni * nj].reshape((ni, nj))
            Htb = Ht[j0:j1]
            np.dot(W[i0:i1], Htb.T, Vb)
            np.dot(Vb, Htb, gW[: ni * W.shape[1]].reshape((ni, W.shape[1])))
            np.dot(Vb.T, W[i0:i1], gHt[: nj * W.shape[1]].reshape((nj, W.shape[1])))


def profile_iteration(X, rank, n_blocks, lam, sampler, n_iter=200):
    """Seconds per iteration of a t = 1 chain of ``sampler`` and of its parts, one thread."""
    from threadpoolctl import threadpool_limits

    I, J = X.shape
    rng = np.random.default_rng(0)
    # The stacked factors: W over H^T.
    F = rng.exponential(1 / lam, (I + J, rank)) + 1e-3
    data = CPData.from_array(X)
    blocks = data.blocks(n_blocks)
    psgld = sampler == "psgld"
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        with threadpool_limits(1):
            gemm1 = blas_gflops(threads=1)[0]
            # Timing only: a step this long may have its drift capped often, which must not stop the clock.
            kw = dict(temperature=1.0, n_burnin=n_iter // 2, step_a=1e-6, step_b=0.0, sampler=sampler,
                      prior_rates=lam, max_capped_fraction=1.0)  # fmt: skip
            run_chain(data, blocks, F.copy(), n_samples=4, seed_seq=np.random.SeedSequence(0),
                      **{**kw, "n_burnin": 2})  # fmt: skip
            start = time.perf_counter()
            run_chain(data, blocks, F, n_samples=n_iter, seed_seq=np.random.SeedSequence(1), **kw)
            t_chain = (time.perf_counter() - start) / n_iter
            rb = block_bounds(I, n_blocks, what="rows")
            cb = block_bounds(J, n_blocks, what="columns")
            mi, mj = int(np.diff(rb).max()), int(np.diff(cb).max())
            W, Ht = np.ascontiguousarray(F[:I]), np.ascontiguousarray(F[I:])
            V, gW, gHt = np.empty(mi * mj), np.empty(mi * rank), np.empty(mj * rank)
            _block_products(W, Ht, V, gW, gHt, rb, cb, 1)
            start = time.perf_counter()
            _block_products(W, Ht, V, gW, gHt, rb, cb, n_iter)
            t_gemm = (time.perf_counter() - start) / n_iter
        n = (I + J) * rank
        state = seed_streams(np.random.SeedSequence(2), 1)[0]
        noise = np.empty(n)
        fill_standard_normal(state, noise)
        start = time.perf_counter()
        for _ in range(n_iter):
            fill_standard_normal(state, noise)
        t_normals = (time.perf_counter() - start) / n_iter
        # The kernel's update of every parameter once (the chain calls it block by block on the same flat rows).
        theta, v, g = np.full(n, 0.05), np.full(n, 0.1), np.zeros(n)
        update = (1e-6, 1.0, 1.0 / n, lam, psgld, False, True, PSGLD_ALPHA, PSGLD_SIGMA)
        _update(theta, v, g, noise, *update)
        start = time.perf_counter()
        for _ in range(n_iter):
            _update(theta, v, g, noise, *update)
        t_update = (time.perf_counter() - start) / n_iter
    finally:
        numba.set_num_threads(previous)
    flops = 6.0 * I * J / n_blocks * rank
    print(f"\nProfile of one iteration at rank {rank}, B={n_blocks}, one numba and one BLAS thread "
          f"(best one-thread dgemm {gemm1:.1f} GFLOP/s):")
    rows = ((f"whole chain (t = 1, {sampler})", t_chain),
            ("  three BLAS products of the B blocks", t_gemm),
            (f"  {n} Langevin normals", t_normals),
            (f"  {sampler} update of the {n} parameters", t_update),
            ("  rest (per-entry terms, linear part, kept sums)", t_chain - t_gemm - t_normals - t_update))
    for label, t in rows:
        print(f"  {label:<52} {1e3 * t:8.3f} ms  {t / t_chain:6.1%}")
    print(f"  kernel {flops / t_chain / 1e9:.1f} GFLOP/s = {flops / t_chain / 1e9 / gemm1:.0%} of one-thread dgemm; "
          f"its BLAS products alone run at {flops / t_gemm / 1e9:.1f} GFLOP/s "
          f"({flops / t_gemm / 1e9 / gemm1:.0%}): the work per parameter and per entry bounds the share")


if __name__ == "__main__":
    main()
