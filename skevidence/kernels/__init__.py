"""Numba kernels: fused block-parallel SG-MCMC chains with per-block random streams.

The kernels take validated, C-contiguous float64 arrays; the functions
exported here validate and prepare them. Kernels know nothing of models,
estimators or evidence methods.
"""

from .nmf import (
    NMFChainResult,
    NMFData,
    block_bounds,
    compile_nmf_kernels,
    group_by_blocks,
    run_nmf_chain,
)
from .parafac import (
    PARAFACChainResult,
    PARAFACData,
    compile_parafac_kernels,
    run_parafac_chain,
    score_parafac_prior,
)

__all__ = [
    "NMFChainResult",
    "NMFData",
    "PARAFACChainResult",
    "PARAFACData",
    "block_bounds",
    "compile_nmf_kernels",
    "compile_parafac_kernels",
    "group_by_blocks",
    "run_nmf_chain",
    "run_parafac_chain",
    "score_parafac_prior",
]
