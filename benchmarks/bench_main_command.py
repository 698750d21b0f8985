"""Is the README's main command converged? The same selection at its default budget and at four times it.

``skevidence nmf-rank`` on the bundled clip (or on the files given) is run
three ways in one process, one after the other, each with its own wall time:

* **default**: the command as the README gives it (``--method rti``,
  referenced TI: every rank screened by one short round, then the error bars
  of the ranks in the running refined to ``--tol``, with at most
  ``--max-refinements`` doublings of the work a rank and pass);
* **4x**: four times the screen's iterations per temperature and the bound on
  the refinements' work (two more doublings: ``--n-samples 600 --n-burnin 200
  --max-refinements 5`` at the defaults);
* **prior** (with ``--with-prior``): the papers' STI from the prior at the
  command line's settings for it (``--method sti``), for the record of how far
  off it is.

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
from skevidence._config import CLI_DEFAULTS, SELECTOR_SCREEN
from skevidence.cli import main as cli_main

from _environment import git_state

BUDGETS = {
    "default": [],
    "4x": ["--n-samples", str(4 * (SELECTOR_SCREEN["n_burnin"] + SELECTOR_SCREEN["n_keep"])),
           "--n-burnin", str(4 * SELECTOR_SCREEN["n_burnin"]),
           "--max-refinements", str(CLI_DEFAULTS["max_refinements"] + 2)],
    "prior": ["--method", "sti"],
}


def run(files, extra):
    """Run ``nmf-rank`` quietly; return its JSON record (None if the command failed), wall time and error."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "result.json")
        argv = ["nmf-rank", *files, "--json", path, "--quiet", *extra]
        start = time.perf_counter()
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):  # the command's warnings; its table is in the JSON
            status = cli_main(argv, out=io.StringIO())
        elapsed = time.perf_counter() - start
        if status != 0:
            # The command printed "error: ..." (to the captured stderr) and wrote no JSON.
            errors = [line for line in stderr.getvalue().splitlines() if line.startswith("error:")]
            return None, elapsed, errors[-1] if errors else f"exit status {status}"
        with open(path) as f:
            record = json.load(f)
    return record, elapsed, None


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
        record, elapsed, error = run(args.files, BUDGETS[name] + common)
        if record is None:
            print(f"{name:>8}: {elapsed:6.1f} s, the command FAILED: {error}", flush=True)
            if name == "default":
                sys.exit("the default budget failed: nothing to compare against.")
            continue
        records[name] = record
        records[name]["bench_time"] = elapsed
        print(f"{name:>8}: {elapsed:6.1f} s, chose rank {records[name]['best_rank']} "
              f"({'decided' if records[name]['decided'] else 'NOT decided'})", flush=True)
    names = [name for name in names if name in records]
    for record in records.values():  # a failed rank is null in the JSON
        for key in ("log_evidence", "log_evidence_std"):
            record[key] = [np.nan if v is None else v for v in record[key]]
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
    verdict = (f"largest |z| between the default budget and 4x: {worst:.1f} "
               f"({'converged' if worst <= 4 else 'NOT converged'} by the 4-combined-error criterion)"
               if "4x" in records else "no 4x run to compare with")
    print(f"{verdict}; chosen ranks: " + ", ".join(f"{n} {records[n]['best_rank']}" for n in names))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
