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
