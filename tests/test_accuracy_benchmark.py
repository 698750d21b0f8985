"""A subset of ``benchmarks/bench_accuracy.py``: the rank selectors against the exact-kernel SMC."""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_accuracy import CASES, fit_rti, fit_smc  # noqa: E402


class _Args:
    particles, runs, seed, n_jobs = None, None, 0, 2


@pytest.mark.slow
@pytest.mark.parametrize("name", ["m24x36r2", "t10x12x8r2"])
def test_selectors_agree_with_the_smc_yardstick(name):
    """At the selectors' defaults every rank around the true one lies within 3 combined stated errors of the
    SMC, and the chosen rank is the SMC's."""
    case = next(c for c in CASES if c.name == name)
    X = case.data()
    ranks = case.ranks()
    rti = fit_rti(case, X, ranks, _Args)
    smc = {rank: fit_smc(case, X, rank, _Args) for rank in ranks}
    for rank in ranks:
        combined = math.hypot(rti[rank]["se"], smc[rank]["se"])
        assert abs(rti[rank]["value"] - smc[rank]["value"]) <= 3.0 * combined, (rank, rti[rank], smc[rank])
    assert max(ranks, key=lambda r: rti[r]["value"]) == max(ranks, key=lambda r: smc[r]["value"]) == case.true_rank
