r"""Poisson PARAFAC as the three-way CP chain of :mod:`skevidence.kernels.cp`.

.. math::
    x_{ijk} \sim \mathrm{Poisson}(V_{ijk}),\quad V_{ijk} = \sum_r a_{ir} b_{jr} c_{kr},\quad
    a_{ir} \sim \mathrm{Exp}(\lambda_a),\ b_{jr} \sim \mathrm{Exp}(\lambda_b),\
    c_{kr} \sim \mathrm{Exp}(\lambda_c)

(Şimşekli, Cemgil and Ermiş 2015). A part's log-likelihood is scaled by the
number of parts :math:`B^2`. These functions are the names callers know; the
blocks, parts and streams are described in :mod:`skevidence.kernels.cp`.
"""

import numpy as np
import scipy.sparse as sp

from ..data import PARAFACData, group_tensor_by_blocks
from .sgmcmc import CPChainResult, _check_data, compile_cp_kernels, run_cp_chain, score_cp_prior

__all__ = [
    "PARAFACChainResult",
    "PARAFACData",
    "compile_parafac_kernels",
    "group_tensor_by_blocks",
    "run_parafac_chain",
    "score_parafac_prior",
]

#: What one PARAFAC chain at one temperature returns.
PARAFACChainResult = CPChainResult


def run_parafac_chain(data, factors, **settings):
    """:func:`~skevidence.kernels.cp.run_cp_chain` for a :class:`PARAFACData` and ``factors = (A, B, C)``."""
    _check_data(data, PARAFACData)
    return run_cp_chain(data, factors, **settings)


def score_parafac_prior(data, n_components, n_draws, *, prior_rates, seed_seq):
    """:func:`~skevidence.kernels.cp.score_cp_prior` for a :class:`PARAFACData`; returns ``(result, (A, B, C))``."""
    _check_data(data, PARAFACData)
    return score_cp_prior(data, n_components, n_draws, prior_rates=prior_rates, seed_seq=seed_seq)


def compile_parafac_kernels():
    """Compile (or load from numba's cache) the PARAFAC kernels on a 3 x 3 x 3 input
    (see :func:`~skevidence.kernels.cp.compile_cp_kernels`)."""
    X = np.zeros((3, 3, 3))
    X[0, 1, 2], X[1, 1, 0], X[2, 0, 1] = 1.0, 2.0, 3.0
    return compile_cp_kernels(PARAFACData, X, sp.coo_array(X))
