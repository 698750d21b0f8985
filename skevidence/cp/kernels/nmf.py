r"""Poisson NMF :math:`X \approx WH` as the two-way CP chain of :mod:`skevidence.kernels.cp`.

.. math::
    x_{ij} \sim \mathrm{Poisson}(V_{ij}),\quad V = WH,\quad
    W_{ir} \sim \mathrm{Exp}(\lambda_W),\quad H_{rj} \sim \mathrm{Exp}(\lambda_H).

The chain holds ``H`` transposed, so that a column group of ``H`` is a
contiguous run of memory like a row group of ``W``; stream ``1 + b`` gives
the normals of ``W[I_b]`` (row-major), then of ``H[:, J_c]`` (column-major).
A part's log-likelihood is scaled by ``N / N_s``, ``N = I J``. These
functions are the names callers know; the blocks, parts and streams are
described in :mod:`skevidence.kernels.cp`.
"""

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..._config import MAX_CAPPED_FRACTION, PSGLD_ALPHA, PSGLD_SIGMA, STEP_DECAY
from ..data import NMFData, block_bounds, group_by_blocks
from .sgmcmc import _check_data, compile_cp_kernels, run_cp_chain, score_cp_prior

__all__ = [
    "NMFChainResult",
    "NMFData",
    "block_bounds",
    "compile_nmf_kernels",
    "group_by_blocks",
    "run_nmf_chain",
    "score_nmf_prior",
]


class NMFChainResult(NamedTuple):
    """What one NMF chain at one temperature returns."""

    #: Kept estimates ``(N / N_s) * sum_{part} log p(x_ij | W, H)``, one per kept iteration.
    log_likelihood: np.ndarray
    #: Mean of ``W`` over the kept (pre-update) states, shape ``(I, R)``.
    W_mean: np.ndarray
    #: Mean of ``H`` over the kept (pre-update) states, shape ``(R, J)``.
    H_mean: np.ndarray
    #: Step size in force for the kept samples (NaN for exact draws).
    step_size: float
    #: Entries of the drawn parts summed over all iterations (burn-in included).
    n_likelihood_evaluations: int
    #: Fraction of the entry updates after burn-in whose drift the cap cut (0 for exact draws).
    capped_fraction: float = 0.0

    @classmethod
    def _from_cp(cls, result):
        W_mean, Ht_mean = result.factor_means
        return cls(result.log_likelihood, W_mean, np.ascontiguousarray(Ht_mean.T), *result[2:])


def run_nmf_chain(data, W, H, *, temperature, n_samples, n_burnin, step_a, step_b=STEP_DECAY,
                  sampler, alpha=PSGLD_ALPHA, sigma=PSGLD_SIGMA, freeze=True, lam_w, lam_h,
                  seed_seq, max_capped_fraction=MAX_CAPPED_FRACTION):
    r"""Run one block-parallel SG-MCMC chain for Poisson NMF at one temperature.

    :func:`~skevidence.kernels.cp.run_cp_chain` on ``(W, H^T)``, which
    documents the other parameters. ``W`` and ``H`` are the warm start and
    receive the chain's final state; if the chain diverges they are left
    unchanged.

    Parameters
    ----------
    data : NMFData
        The prepared matrix ``X`` (I, J) with its blocks.
    W : ndarray of shape (I, R)
        Non-negative float array, updated in place.
    H : ndarray of shape (R, J)
        Non-negative float array, updated in place.
    lam_w, lam_h : float
        Rates of the exponential priors on ``W`` and ``H``.

    Returns
    -------
    NMFChainResult
    """
    _check_data(data, NMFData)
    Ht = H.T if isinstance(H, np.ndarray) else H
    result = run_cp_chain(
        data, (W, Ht), temperature=temperature, n_samples=n_samples, n_burnin=n_burnin, step_a=step_a,
        step_b=step_b, sampler=sampler, alpha=alpha, sigma=sigma, freeze=freeze, prior_rates=(lam_w, lam_h),
        seed_seq=seed_seq, max_capped_fraction=max_capped_fraction, part_scale=False, names=("W", "H.T"),
    )
    return NMFChainResult._from_cp(result)


def score_nmf_prior(data, n_components, n_draws, *, lam_w, lam_h, seed_seq):
    r"""Exact prior draws of ``(W, H)``, each scored on one random part (:func:`~skevidence.kernels.cp.score_cp_prior`).

    Stream 1 draws ``W`` then ``H``, each in its row-major order.

    Returns
    -------
    result : NMFChainResult
        The scores, the means of the draws, ``step_size`` NaN, and the
        number of entries scored.
    W, H : ndarray
        The last draw, the warm start of the next temperature.
    """
    _check_data(data, NMFData)
    result, (W, Ht) = score_cp_prior(data, n_components, n_draws, prior_rates=(lam_w, lam_h),
                                     seed_seq=seed_seq, part_scale=False, transposed=(False, True))
    return NMFChainResult._from_cp(result), W, np.ascontiguousarray(Ht.T)


def compile_nmf_kernels():
    """Compile (or load from numba's cache) the NMF kernels on a 4 x 4 input
    (see :func:`~skevidence.kernels.cp.compile_cp_kernels`)."""
    X = np.array([[1.0, 0.0, 2.0, 0.0], [0.0, 3.0, 0.0, 1.0], [2.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 4.0]])
    return compile_cp_kernels(NMFData, X, sp.csr_array(X), part_scale=False, transposed=(False, True))
