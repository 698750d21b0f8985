"""Shared fixtures: a test seed that an environment variable can override."""

import os

import numpy as np
import pytest

#: Seed of the statistical tests; override with SKEVIDENCE_TEST_SEED=<int>.
TEST_SEED = int(os.environ.get("SKEVIDENCE_TEST_SEED", "0"))


@pytest.fixture
def seed():
    return TEST_SEED


@pytest.fixture
def rng(seed):
    return np.random.default_rng(seed)


def pytest_report_header(config):
    return f"skevidence test seed: {TEST_SEED} (set SKEVIDENCE_TEST_SEED to change it)"


def pytest_terminal_summary(terminalreporter):
    """How many distinct inputs the bad-input battery tried per target (tests/test_bad_input.py)."""
    import sys

    battery = sys.modules.get("test_bad_input") or sys.modules.get("tests.test_bad_input")
    tried = getattr(battery, "TRIED", None)
    if tried:
        terminalreporter.write_sep("-", "bad-input battery: distinct inputs tried per target")
        for name in sorted(tried):
            terminalreporter.write_line(f"{name:<34} {len(tried[name]):4d}")
