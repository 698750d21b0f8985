"""The assignment kernel against SciPy's solver, and its potentials' two properties."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from skevidence.cp.kernels.assignment import best_matching


@pytest.mark.parametrize("R, scale", [(1, 1.0), (3, 1.0), (7, 300.0), (10, 1.0), (24, 50.0)])
def test_best_matching_is_scipys_with_tight_potentials(R, scale):
    rng = np.random.default_rng(R)
    C = rng.normal(scale=scale, size=(R, R))
    order, u, v = best_matching(C)
    rows, cols = linear_sum_assignment(C, maximize=True)
    assert C[order, np.arange(R)].sum() == pytest.approx(C[rows, cols].sum(), rel=1e-12)
    assert np.array_equal(np.sort(order), np.arange(R))
    slack = u[:, None] + v[None, :] - C
    assert slack.min() >= -1e-9 * scale  # no entry above its potentials
    np.testing.assert_allclose(slack[order, np.arange(R)], 0.0, atol=1e-9 * scale)  # tight on the matching


def test_ties_give_a_matching_of_the_largest_sum():
    C = np.zeros((5, 5))
    order, u, v = best_matching(C)
    assert np.array_equal(np.sort(order), np.arange(5))
    np.testing.assert_allclose(u[:, None] + v[None, :], 0.0, atol=1e-12)
