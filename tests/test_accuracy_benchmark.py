"""A subset of ``benchmarks/bench_accuracy.py``: the rank selectors against the exact-kernel SMC."""

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_accuracy import CASES, STORED_SMC, fit_rti, fit_smc, load_smc  # noqa: E402


class _Args:
    particles, runs, seed, n_jobs = None, None, 0, 2


def _agree(case, rti, smc):
    for rank in case.ranks():
        combined = math.hypot(rti[rank]["se"], smc[rank]["se"])
        assert abs(rti[rank]["value"] - smc[rank]["value"]) <= 3.0 * combined, (rank, rti[rank], smc[rank])
    assert max(case.ranks(), key=lambda r: rti[r]["value"]) == case.true_rank
    assert max(case.ranks(), key=lambda r: smc[r]["value"]) == case.true_rank


def test_the_stored_yardstick_is_the_benchmarks_cases():
    """The benchmark takes the SMC's values from the stored file: every case as the benchmark defines it,
    every one of its ranks, at seed 0."""
    with open(STORED_SMC) as f:
        stored = json.load(f)
    assert list(stored) == [c.name for c in CASES]
    for case in CASES:
        assert stored[case.name]["case"]["shape"] == list(case.shape)
    smc = load_smc([STORED_SMC], 0)
    assert {name for name, _ in smc} == set(stored)
    for case in CASES:
        assert sorted(rank for name, rank in smc if name == case.name) == case.ranks()
    assert all(math.isfinite(v["value"]) and v["se"] > 0 for v in smc.values())


@pytest.mark.parametrize("name", ["m24x36r2", "t10x12x8r2"])
def test_selectors_agree_with_the_stored_smc(name):
    """The selectors at their defaults against the stored SMC (the benchmark's yardstick) on two small cases:
    every rank within 3 combined stated errors, and the true rank chosen."""
    case = next(c for c in CASES if c.name == name)
    smc = {rank: v for (case_name, rank), v in load_smc([STORED_SMC], 0).items() if case_name == name}
    _agree(case, fit_rti(case, case.data(), case.ranks(), _Args), smc)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["m24x36r2", "t10x12x8r2"])
def test_selectors_agree_with_the_smc_yardstick(name):
    """At the selectors' defaults every rank around the true one lies within 3 combined stated errors of the
    SMC, and the chosen rank is the SMC's."""
    case = next(c for c in CASES if c.name == name)
    X = case.data()
    ranks = case.ranks()
    _agree(case, fit_rti(case, X, ranks, _Args), {rank: fit_smc(case, X, rank, _Args) for rank in ranks})
