"""Protocol P3 (Şimşekli et al. 2016, section 4.2): the NMF rank of a speech spectrogram, NOIZEUS.

The training matrix is the spectrogram of the first 20 clean NOIZEUS
sentences (Hamming window of 512 samples, 50% overlap), 1661 frames x 257
bins (the paper's 257 x 1661, transposed: frames are rows here). The
evidence of ranks 32, 64, 128, 256 and 512 is what a user gets: the command
``skevidence nmf-rank sp01.wav ... sp20.wav --ranks ... --n-jobs 2``, run
as a process of its own (its wall time and peak resident memory are
printed), at two models (``--models``):

- ``default``: the command's defaults, the exponential (Itakura-Saito)
  likelihood of the power spectrogram with the automatic prior rate;
- ``paper``: the paper's model, Poisson on 16-bit magnitudes with prior rate
  0.0004 (``--likelihood poisson --scale 1 --prior-rate 0.0004``).

``--method sti`` runs the paper's method instead (``--sampler``,
``--step-size`` as in the command);
``--max-time`` is passed on to referenced TI.

The paper's oracle follows (its Fig. 4), printed next to each evidence curve:
for every rank a speech dictionary is trained on the same 20 clean sentences
by :class:`~skevidence.SemiSupervisedNMF` under the model's likelihood
(Poisson on magnitudes, or exponential on the power spectrogram), held
fixed, and the held-out sentences 21-30 in the chosen noises and SNR are
enhanced with 5 noise atoms and the Wiener mask (``--sparsity``: the penalty
on the speech activations, which keeps the speech dictionary from explaining
the noise); SDR, SIR and SAR of the speech estimate are BSS_EVAL 3.0
(``mir_eval.separation``, in the ``benchmark`` extra), with the speech and
the noise (mixture minus clean) as the two references, averaged over the
mixtures. ``--oracle-only`` runs the oracle alone.

Usage::

    python benchmarks/bench_p3_noizeus.py [--ranks 32 64 ...] [--models default paper] [--n-jobs 2]
        [--method rti|sti] [--max-time S] [--noizeus PATH] [--noises street babble ...] [--snr 5]
        [--no-sdr] [--sparsity 0.3] [--oracle-only] [--profile-rank 256]

``--profile-rank`` adds a profile of one iteration of the paper's SG-MCMC
chain at that rank (one numba thread and one BLAS thread, as in each
``n_jobs=2`` worker): the whole chain's time per iteration
(``skevidence.cp.kernels.sgmcmc.run_chain``) next to its parts timed alone,
the three BLAS products of the B blocks, the Langevin normals of the
(I + J) R parameters and the SGLD or pSGLD update of them (the kernel's own
update function), against this machine's one-thread dgemm rate.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
from numba import njit

import skevidence
from skevidence import SemiSupervisedNMF
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


#: The command line of each model (``--models``): the command's defaults, and the paper's model.
MODELS = {
    "default": dict(args=[], oracle="exponential"),
    "paper": dict(args=["--likelihood", "poisson", "--scale", "1", "--prior-rate", "0.0004"], oracle="poisson"),
}


def run_command(files, model, args):
    """Run ``skevidence nmf-rank`` on ``files`` as a process of its own: ``(record, wall s, peak MB, exit)``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        command = [sys.executable, "-m", "skevidence", "nmf-rank", *map(str, files), "--ranks",
                   *map(str, args.ranks), "--n-jobs", str(args.n_jobs), "--method", args.method,
                   *MODELS[model]["args"], "--json", str(out)]
        if args.method == "sti":
            command += ["--sampler", args.sampler]
            if args.step_size is not None:
                command += ["--step-size", str(args.step_size)]
        elif args.max_time is not None:
            command += ["--max-time", str(args.max_time)]
        print("$ " + " ".join(["skevidence", *command[3:]]).replace(str(files[0].parent) + "/", ""), flush=True)
        start = time.perf_counter()
        process = subprocess.Popen(command)
        _, status, usage = os.wait4(process.pid, 0)  # this process's own peak memory
        wall = time.perf_counter() - start
        record = json.loads(out.read_text()) if out.exists() else None
    return record, wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[32, 64, 128, 256, 512])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--method", default="rti", choices=("rti", "sti"))
    parser.add_argument("--max-time", type=float, help="the command's --max-time (rti)")
    parser.add_argument("--sampler", default="psgld", choices=("psgld", "sgld"), help="the command's (sti)")
    parser.add_argument("--step-size", type=float, help="the command's (sti; default: auto)")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--profile-rank", type=int, help="rank of the one-iteration profile of the SG-MCMC chain")
    parser.add_argument("--noizeus", default=None)
    parser.add_argument("--noises", nargs="+", default=["street", "babble"], choices=NOISES)
    parser.add_argument("--snr", type=int, default=5, choices=(0, 5, 10, 15))
    parser.add_argument("--train-iter", type=int, default=150, help="EM iterations of the speech dictionary")
    parser.add_argument("--separation-iter", type=int, default=25, help="EM iterations on each mixture")
    parser.add_argument("--no-sdr", action="store_true", help="skip the SDR oracle")
    parser.add_argument("--oracle-only", action="store_true", help="the SDR oracle alone (no evidence)")
    parser.add_argument("--sparsity", type=float, default=0.3, help="penalty on the speech activations")
    args = parser.parse_args()

    root = _noizeus_root(args.noizeus)
    gf_best, gf_median = blas_gflops()
    print(f"P3 (Şimşekli et al. 2016 §4.2) — skevidence {skevidence.__version__}, {git_state()}")
    print(f"cores {os.cpu_count()}, load {os.getloadavg()[0]:.2f}, BLAS {blas_threads()}")
    print(f"dgemm 1000x1000: best {gf_best:.1f} GFLOP/s, median {gf_median:.1f} GFLOP/s")
    files = [root / "clean" / f"sp{k:02d}.wav" for k in range(1, 21)]
    waveforms = [load_audio(path)[0] for path in files]
    for model in args.models:
        print(f"\n== {model} model ==", flush=True)
        record, wall, peak, code = (None, None, None, 0) if args.oracle_only else run_command(files, model, args)
        if record is not None:
            print(f"\n{model} model: wall time {wall:.1f} s (target <= 540 s, the paper's 9 min on 4 cores; 900 s at "
                  f"the least), peak resident memory {peak:.0f} MB (target <= 4096 MB); chosen rank "
                  f"{record['best_rank']} (paper: 256); {record['decision']}")
        elif not args.oracle_only:
            print(f"\n{model} model: the command failed (exit {code}) after {wall:.1f} s, peak {peak:.0f} MB")
        if not args.no_sdr:
            print_oracle(args, waveforms, root, MODELS[model]["oracle"], record)
    if args.profile_rank:
        X = SpectrogramTransformer(scale=32768.0, sample_rate=8000).fit_transform(waveforms)
        profile_iteration(X, args.profile_rank, 8, 0.0004, args.sampler)


def print_oracle(args, waveforms, root, likelihood, record=None):
    """The SDR oracle's table, next to the evidence curve of ``record`` (the command's JSON) where there is one."""
    start = time.perf_counter()
    rows, baseline, n_mix = sdr_oracle(
        args.ranks, waveforms, root, args.noises, args.snr, train_iter=args.train_iter,
        separation_iter=args.separation_iter, likelihood=likelihood, sparsity=args.sparsity,
    )
    print(f"\nOracle (paper's Fig. 4): {n_mix} held-out mixtures (sentences 21-30, "
          f"{len(args.noises)} noises at {args.snr} dB), {likelihood} likelihood, sparsity "
          f"{args.sparsity:g}, {args.train_iter} EM iterations to train, {args.separation_iter} to separate; "
          "BSS_EVAL 3.0 (mir_eval), means in dB")
    print(f"{'rank':>5} {'log-evidence':>14} {'± SE':>9} {'status':>10} {'SDR':>7} {'SIR':>7} {'SAR':>7} {'gain':>6} "
          f"{'time(s)':>8}")
    print(f"{'mix':>5} {'':>14} {'':>9} {'':>10} {baseline:7.2f} {'-':>7} {'-':>7}")
    evidence = {}
    if record is not None:
        evidence = {r: (v, e, st) for r, v, e, st in zip(record["ranks"], record["log_evidence"],
                                                        record["log_evidence_std"], record["status"])}
    for rank in args.ranks:
        sdr, sir, sar, seconds = rows[rank]
        v, e, st = evidence.get(rank, (None, None, "-"))
        text = f"{v:14.1f} {e:9.1f}" if v is not None else f"{'-':>14} {'-':>9}"
        print(f"{rank:>5} {text} {st:>10} {sdr:7.2f} {sir:7.2f} {sar:7.2f} {sdr - baseline:+6.2f} {seconds:8.1f}")
    best_sdr = max(rows, key=lambda r: rows[r][0])
    chosen = record["best_rank"] if record is not None else "-"
    print(f"evidence's choice {chosen}, the oracle's (best SDR) {best_sdr}; oracle time "
          f"{time.perf_counter() - start:.1f} s")


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
