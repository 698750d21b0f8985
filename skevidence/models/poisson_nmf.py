"""Poisson non-negative matrix factorisation with exponential priors (seed 000, eq. 13)."""

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln

from ._base import EvidenceModel

__all__ = ["PoissonNMFModel", "check_count_matrix"]


def check_count_matrix(X, *, name="X"):
    """A finite, non-negative, non-empty 2-D matrix as float64 (CSR if sparse).

    Raises :class:`ValueError` naming the problem otherwise. Duplicate entries
    of a sparse matrix are summed.
    """
    if sp.issparse(X):
        X = sp.csr_array(X, dtype=np.float64)
        X.sum_duplicates()
        values, shape = X.data, X.shape
    else:
        X = np.asarray(X)
        if X.dtype == object or np.iscomplexobj(X):
            raise ValueError(f"{name} must be a real numeric matrix, got dtype {X.dtype}.")
        X = np.ascontiguousarray(X, dtype=np.float64)
        values, shape = X, X.shape
    if len(shape) != 2:
        raise ValueError(
            f"{name} must be a 2-D matrix (n_samples, n_features), got {len(shape)}-D input of shape {shape}."
        )
    if shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {shape}); the evidence needs at least one entry.")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} contains NaN or infinity; Poisson NMF needs finite non-negative values.")
    if np.any(values < 0):
        raise ValueError(
            f"{name} has negative entries; Poisson NMF models non-negative data "
            "(counts or magnitudes): shift or take magnitudes first."
        )
    return X


class PoissonNMFModel(EvidenceModel):
    r"""Poisson NMF :math:`X \approx WH` with exponential priors.

    .. math::
        W_{ir} \sim \mathcal{E}(\lambda_w), \quad H_{rj} \sim \mathcal{E}(\lambda_h), \quad
        X_{ij} \mid W, H \sim \mathcal{PO}\Big(\sum_r W_{ir} H_{rj}\Big).

    Every entry of ``X`` is one datum (``N = I J``, zeros included). STI runs
    through the fused block-parallel kernel of :mod:`skevidence.kernels.nmf`
    (see :meth:`chain_runner`): rows and columns are split into
    ``n_blocks`` groups, and each iteration updates the ``n_blocks`` blocks of
    one part in parallel.

    For non-integer data (magnitude spectrograms) the likelihood keeps its
    formula with :math:`\log\Gamma(x+1)`; it is then not a normalised density,
    but comparisons between ranks on the same data remain meaningful.

    Parameters
    ----------
    n_components : int
        Rank :math:`R`.
    prior_rate_w, prior_rate_h : float
        Rates :math:`\lambda_w, \lambda_h > 0` of the exponential priors.
    n_blocks : int
        Number of row groups and of column groups :math:`B`.
    """

    exact_prior_sampling = True
    accepts_sparse = True
    nonnegative = True

    def __init__(self, n_components=1, prior_rate_w=1.0, prior_rate_h=1.0, n_blocks=1):
        if int(n_components) != n_components or n_components < 1:
            raise ValueError(f"n_components must be a positive integer, got {n_components!r}.")
        if int(n_blocks) != n_blocks or n_blocks < 1:
            raise ValueError(f"n_blocks must be a positive integer, got {n_blocks!r}.")
        for name, value in (("prior_rate_w", prior_rate_w), ("prior_rate_h", prior_rate_h)):
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}.")
        self.n_components = int(n_components)
        self.prior_rate_w = float(prior_rate_w)
        self.prior_rate_h = float(prior_rate_h)
        self.n_blocks = int(n_blocks)

    # -- data ----------------------------------------------------------------

    def prepare_data(self, X, y=None):
        """Validate ``X`` and split it into blocks for the kernel."""
        from ..kernels.nmf import NMFData

        X = check_count_matrix(X)
        n_rows, n_cols = X.shape
        if self.n_blocks > min(n_rows, n_cols):
            raise ValueError(
                f"n_blocks={self.n_blocks} is larger than the matrix allows: X has {n_rows} rows "
                f"and {n_cols} columns, and each must be split into n_blocks non-empty groups. "
                f"Use n_blocks <= {min(n_rows, n_cols)}."
            )
        return NMFData.from_array(X, self.n_blocks), None

    def n_data(self, X, y=None):
        return X.n_data

    # -- the generic interface, on theta = (W.ravel(), H.ravel()) and a dense X --

    def _split(self, theta, shape):
        n_rows, n_cols = shape
        R = self.n_components
        return theta[: n_rows * R].reshape(n_rows, R), theta[n_rows * R :].reshape(R, n_cols)

    def log_likelihood_and_grad(self, theta, X, y=None):
        """Per-entry log-likelihoods of a dense ``X`` and the gradient of their sum.

        ``theta`` is ``W.ravel()`` followed by ``H.ravel()``. STI does not use
        this (it runs the fused kernel); it is here for checks and for users.
        """
        X = np.asarray(X, dtype=np.float64)
        W, H = self._split(theta, X.shape)
        V = W @ H
        log_lik = X * np.log(V) - V - gammaln(X + 1)
        ratio = X / V - 1.0
        return log_lik.ravel(), np.concatenate([(ratio @ H.T).ravel(), (W.T @ ratio).ravel()])

    def split_log_prior(self, W, H):
        """Log prior density of the factors ``W`` (I×R) and ``H`` (R×J)."""
        if np.any(W < 0) or np.any(H < 0):
            return -np.inf
        return (
            W.size * np.log(self.prior_rate_w) - self.prior_rate_w * W.sum()
            + H.size * np.log(self.prior_rate_h) - self.prior_rate_h * H.sum()
        )

    def sample_factors(self, rng, n_rows, n_cols):
        """An exact prior draw of ``(W, H)``."""
        R = self.n_components
        W = rng.exponential(1.0 / self.prior_rate_w, size=(n_rows, R))
        H = rng.exponential(1.0 / self.prior_rate_h, size=(R, n_cols))
        return W, H

    def chain_runner(self, X, y, *, sampler, batch_size):
        """The fused block-parallel runner; ``batch_size`` is not used (the minibatch is a part)."""
        from ._nmf_runner import NMFChainRunner

        return NMFChainRunner(self, X, sampler=sampler)
