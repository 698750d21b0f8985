"""Is the README's main command converged? The same selection at its default budget and at four times it.

``skevidence nmf-rank`` on the bundled clip (or on the files given) is run
three ways in one process, one after the other, each with its own wall time:

* **default**: the command as the README gives it (VB-referenced TI, error
  bars refined to ``--tol`` for the ranks in the running, ``--max-time`` a
  rank and pass);
* **4x**: four times the iterations per temperature and the bound on the
  refinements' work (``--n-samples 600 --n-burnin 200 --max-refinements 5``);
* **prior** (with ``--with-prior``): the papers' STI from the prior at the
  settings the command line used before the referenced path
  (``--reference prior``), for the record of how far off it is.

It prints, per rank, each run's estimate and stated error, the difference
between the runs in nats and in combined stated errors (``z``; a converged
answer has ``|z| <= 4`` at every rank), each run's chosen rank, whether it
says the choice is decided, and the times.

Usage::

    python benchmarks/bench_main_command.py                       # bundled clip
    python benchmarks/bench_main_command.py sp01.wav ... sp05.wav  # files stacked in time
    python benchmarks/bench_main_command.py --with-prior           # also the prior path
    python benchmarks/bench_main_command.py --ranks 1 2 4          # other candidate ranks
"""

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time

import numpy as np

import skevidence
from skevidence.cli import main as cli_main

from _environment import git_state

BUDGETS = {
    "default": [],
    "4x": ["--n-samples", "600", "--n-burnin", "200", "--max-refinements", "5"],
    "prior": ["--reference", "prior"],
}


def run(files, extra):
    """Run ``nmf-rank`` quietly; return its JSON record and wall time."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "result.json")
        argv = ["nmf-rank", *files, "--json", path, "--quiet", *extra]
        start = time.perf_counter()
        with contextlib.redirect_stderr(io.StringIO()):  # the command's warnings; its table is in the JSON
            cli_main(argv, out=io.StringIO())
        elapsed = time.perf_counter() - start
        with open(path) as f:
            record = json.load(f)
    return record, elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", help="audio files (default: the bundled clip)")
    parser.add_argument("--with-prior", action="store_true", help="also run the prior path")
    parser.add_argument("--ranks", nargs="+", help="candidate ranks (default: the command's)")
    parser.add_argument("--json", help="write every record to this file")
    args = parser.parse_args()
    common = ["--ranks", *args.ranks] if args.ranks else []
    names = ["default", "4x"] + (["prior"] if args.with_prior else [])
    print(f"skevidence {skevidence.__version__} ({git_state()}), {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.2f}; python {sys.version.split()[0]}")
    records = {}
    for name in names:
        records[name], elapsed = run(args.files, BUDGETS[name] + common)
        records[name]["bench_time"] = elapsed
        print(f"{name:>8}: {elapsed:6.1f} s, chose rank {records[name]['best_rank']} "
              f"({'decided' if records[name]['decided'] else 'NOT decided'})", flush=True)
    ranks = records["default"]["ranks"]
    print(f"data: {', '.join(os.path.basename(f) for f in records['default']['files'])}, "
          f"{records['default']['shape'][0]} frames x {records['default']['shape'][1]} bins")
    header = f"{'rank':>4} | " + " | ".join(f"{name + ' log Z ± SE':>24}" for name in names)
    header += " | " + " | ".join(f"{name + ' - default (z)':>24}" for name in names[1:])
    print(header)
    print("-" * len(header))
    worst = 0.0
    for i, rank in enumerate(ranks):
        line = f"{rank:>4} | "
        line += " | ".join(f"{records[n]['log_evidence'][i]:>14.1f} ± {records[n]['log_evidence_std'][i]:>7.1f}"
                           for n in names)
        base, base_se = records["default"]["log_evidence"][i], records["default"]["log_evidence_std"][i]
        for n in names[1:]:
            diff = records[n]["log_evidence"][i] - base
            z = diff / np.hypot(records[n]["log_evidence_std"][i], base_se)
            if n == "4x":
                worst = max(worst, abs(z))
            line += f" | {diff:>+14.1f} ({z:>+6.1f})"
        print(line)
    print(f"largest |z| between the default budget and 4x: {worst:.1f} "
          f"({'converged' if worst <= 4 else 'NOT converged'} by the 4-combined-error criterion); "
          f"chosen ranks: " + ", ".join(f"{n} {records[n]['best_rank']}" for n in names))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
