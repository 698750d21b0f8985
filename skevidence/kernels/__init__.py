"""Numba kernels: fused block-parallel SG-MCMC chains with per-block random streams.

The kernels take validated, C-contiguous float64 arrays; the functions
exported here validate and prepare them. Kernels know nothing of models,
estimators or evidence methods.
"""

from .blocks import BlockData, NMFData, PARAFACData, block_bounds, group_by_blocks
from .cp import CPChainResult, run_cp_chain, score_cp_prior
from .nmf import NMFChainResult, compile_nmf_kernels, run_nmf_chain, score_nmf_prior
from .parafac import PARAFACChainResult, compile_parafac_kernels, run_parafac_chain, score_parafac_prior

__all__ = [
    "BlockData",
    "CPChainResult",
    "NMFChainResult",
    "NMFData",
    "PARAFACChainResult",
    "PARAFACData",
    "block_bounds",
    "compile_nmf_kernels",
    "compile_parafac_kernels",
    "group_by_blocks",
    "run_cp_chain",
    "run_nmf_chain",
    "run_parafac_chain",
    "score_cp_prior",
    "score_nmf_prior",
    "score_parafac_prior",
]
