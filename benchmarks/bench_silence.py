"""Digital silence must not decide the rank: the main command on recordings with and without it.

Each recording is written as a 16-bit WAV and run through ``skevidence
nmf-rank --n-jobs 2`` (the README's command, with the recording's ranks), once
as it is and once with 0.5 s of digital silence (zero samples) added at each
end. The recordings:

* **melody**: four harmonic notes in three phrases with 0.3 s of digital
  silence between them (:func:`~skevidence.datasets.make_harmonic_melody`,
  16 kHz), at peaks 1, 0.1 and 0.01 of full scale (ranks 2, 4, 6, 8, 12);
* **speech** (with ``--espeak TEXT``, if ``espeak-ng`` is installed): the
  sentence as espeak-ng synthesises it, with digital silence in its pauses
  (ranks 2, 4, 8, 16).

It prints, per run: the frames, the frames of digital silence the command
left out, the chosen rank, whether it is decided, the largest ratio of a
rank's lag piece to its gap below the chosen rank (the chains have settled
where it is well below 1/10) and the time. The chosen rank must not depend on
the padding or the level.

Usage::

    python benchmarks/bench_silence.py                      # the melody, 6 runs
    python benchmarks/bench_silence.py --espeak "The quick brown fox jumps over the lazy dog."
    python benchmarks/bench_silence.py --peaks 1 --ranks 2 4 6   # a smoke run
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from bench_main_command import run
from scipy.io import wavfile

import skevidence
from skevidence.datasets import make_harmonic_melody

from _environment import git_state

PAD_SECONDS = 0.5


def melody(rate=16000):
    """The melody's waveform at peak 1: three phrases of 4 notes with 0.3 s of zeros between them."""
    x, _ = make_harmonic_melody(4, sample_rate=rate, note_duration=0.4, random_state=4)
    gap = np.zeros(int(0.3 * rate))
    phrases = np.array_split(x, 3)
    x = np.concatenate([phrases[0], gap, phrases[1], gap, phrases[2]])
    return x / np.abs(x).max(), rate


def speech(text, folder):
    """espeak-ng's waveform of ``text`` at peak 1 (its own level), or None without espeak-ng."""
    if shutil.which("espeak-ng") is None:
        return None
    path = os.path.join(folder, "espeak.wav")
    subprocess.run(["espeak-ng", "-w", path, text], check=True, capture_output=True)
    rate, pcm = wavfile.read(path)
    return pcm.astype(np.float64) / 32768.0, rate


def write(path, x, rate, peak, padded):
    """``x`` at ``peak`` of full scale (and padded with zeros) as a 16-bit WAV; its count of zero samples."""
    if padded:
        pad = np.zeros(int(PAD_SECONDS * rate))
        x = np.concatenate([pad, x, pad])
    pcm = np.round(peak * 32767 * x / np.abs(x).max()).astype(np.int16)
    wavfile.write(path, rate, pcm)
    return int(np.sum(pcm == 0))


def lag_ratio(record):
    """The largest ratio of a rank's lag piece to its gap below the chosen rank (the chosen rank left out)."""
    values = np.array([np.nan if v is None else v for v in record["log_evidence"]])
    lags = np.array([np.nan if v is None else v for v in record["error_pieces"]["lag_error"]])
    best = record["ranks"].index(record["best_rank"])
    others = [i for i in range(values.size) if i != best and np.isfinite(values[i])]
    return max((lags[i] / (values[best] - values[i]) for i in others), default=0.0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--espeak", metavar="TEXT", help="also a sentence synthesised by espeak-ng")
    parser.add_argument("--peaks", nargs="+", type=float, default=[1.0, 0.1, 0.01], help="the melody's levels")
    parser.add_argument("--ranks", nargs="+", help="the melody's ranks (default: 2 4 6 8 12)")
    args = parser.parse_args()
    print(f"skevidence {skevidence.__version__} ({git_state()}), {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.2f}; python {sys.version.split()[0]}")
    print(f"{'recording':>22} | {'frames':>6} | {'silent':>6} | {'chosen':>6} | {'decided':>7} | "
          f"{'lag/gap':>7} | {'time':>7}")
    chosen = {}
    with tempfile.TemporaryDirectory() as tmp:
        jobs = [("melody", *melody(), peak, args.ranks or ["2", "4", "6", "8", "12"]) for peak in args.peaks]
        if args.espeak:
            voice = speech(args.espeak, tmp)
            if voice is None:
                print("espeak-ng is not installed: no speech run")
            else:
                jobs.append(("speech", *voice, 1.0, ["2", "4", "8", "16"]))
        for name, x, rate, peak, ranks in jobs:
            for padded in (False, True):
                label = f"{name} peak {peak:g}{' padded' if padded else ''}"
                path = os.path.join(tmp, "recording.wav")
                write(path, x, rate, peak, padded)
                record, elapsed, error = run([path], ["--ranks", *ranks, "--n-jobs", "2"])
                if record is None:
                    print(f"{label:>22} | the command FAILED after {elapsed:.1f} s: {error}", flush=True)
                    continue
                chosen.setdefault(name, set()).add(record["best_rank"])
                print(f"{label:>22} | {record['shape'][0]:>6} | {record['silent_frames']:>6} | "
                      f"{record['best_rank']:>6} | {'yes' if record['decided'] else 'NO':>7} | "
                      f"{lag_ratio(record):>7.3f} | {elapsed:>6.1f}s", flush=True)
    for name, ranks in chosen.items():
        print(f"{name}: chosen {'the same rank, ' if len(ranks) == 1 else 'DIFFERENT ranks: '}"
              f"{', '.join(str(r) for r in sorted(ranks))}")


if __name__ == "__main__":
    main()
