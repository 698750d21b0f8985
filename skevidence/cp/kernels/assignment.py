r"""The assignment problem: the matching of rows to columns of largest total, with its potentials.

The Hungarian method with potentials (:ref:`Kuhn 1955; Munkres 1957 <ref-kuhn1955>`), :math:`O(R^3)`.
Chib's method and the SMC relabel sampled components to a reference with it
(:func:`~skevidence.cp.kernels.gibbs.relabel_to`), and referenced TI scales
its relabelling sums by its potentials (:mod:`~skevidence.cp.kernels.hmc`).
"""

import numpy as np
from numba import njit

from ..._config import FASTMATH

__all__ = ["best_matching"]


@njit(cache=True, fastmath=FASTMATH)
def best_matching(C):
    """``(order, u, v)`` for a square ``C``: row ``order[j]`` takes column ``j`` in a matching of the largest
    sum, and ``C[i, j] <= u[i] + v[j]`` everywhere, with equality on that matching."""
    n = C.shape[0]
    # The method minimises -C; index 0 is its free row and column.
    u, v = np.zeros(n + 1), np.zeros(n + 1)
    match, way = np.zeros(n + 1, dtype=np.int64), np.zeros(n + 1, dtype=np.int64)  # match[j]: column j's row
    for i in range(1, n + 1):
        match[0], j0 = i, 0
        slack, used = np.full(n + 1, np.inf), np.zeros(n + 1, dtype=np.bool_)
        for _ in range(n + 1):  # a column joins the tree each time: a free one is reached within n + 1
            used[j0] = True
            i0, delta, j1 = match[j0], np.inf, 0
            for j in range(1, n + 1):
                if not used[j]:
                    cur = -C[i0 - 1, j - 1] - u[i0] - v[j]
                    if cur < slack[j]:
                        slack[j], way[j] = cur, j0
                    if slack[j] < delta:
                        delta, j1 = slack[j], j
            for j in range(n + 1):
                if used[j]:
                    u[match[j]] += delta
                    v[j] -= delta
                else:
                    slack[j] -= delta
            j0 = j1
            if match[j0] == 0:
                break
        while j0:  # along the augmenting path back to the free column, each column takes its predecessor's row
            match[j0], j0 = match[way[j0]], way[j0]
    return match[1:] - 1, -u[1:], -v[1:]
