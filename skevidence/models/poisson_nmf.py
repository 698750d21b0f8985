"""Poisson non-negative matrix factorisation with exponential priors (Şimşekli et al. 2016, eq. 13)."""

import numpy as np
import scipy.sparse as sp

from ._factorisation import CPModel, real_array

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
        X = np.ascontiguousarray(real_array(X, name, "matrix"), dtype=np.float64)
        values, shape = X, X.shape
    if len(shape) != 2:
        raise ValueError(
            f"{name} must be a 2-D matrix (n_samples, n_features), got {len(shape)}-D input of shape {shape}."
        )
    PoissonNMFModel._check_entries(values, shape, name)
    return X


class PoissonNMFModel(CPModel):
    r"""Poisson NMF :math:`X \approx WH` with exponential priors.

    .. math::
        W_{ir} \sim \mathcal{E}(\lambda_w), \quad H_{rj} \sim \mathcal{E}(\lambda_h), \quad
        X_{ij} \mid W, H \sim \mathcal{PO}\Big(\sum_r W_{ir} H_{rj}\Big).

    Every entry of ``X`` is one datum (``N = I J``, zeros included). STI runs
    through the fused block-parallel kernel of :mod:`skevidence.kernels.nmf`
    (see :meth:`~skevidence.models.EvidenceModel.chain_runner`): rows and
    columns are split into ``n_blocks`` groups, and each iteration updates the
    ``n_blocks`` blocks of one part in parallel. The parameters ``theta`` of
    the generic interface are ``W.ravel()`` followed by ``H.ravel()``.

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
    likelihood : PoissonLikelihood, GammaLikelihood or None
        The density of an entry given its mean (``None``: Poisson). The
        fused SG-MCMC kernels of the prior path run every likelihood (the
        Gamma family on dense blocks); referenced TI
        (:func:`~skevidence.evidence.referenced_ti_log_evidence`) too.
    """

    name = "Poisson NMF"
    array_name = "matrix"
    data_description = "counts or magnitudes"
    transposed = (1,)

    def __init__(self, n_components=1, prior_rate_w=1.0, prior_rate_h=1.0, n_blocks=1, likelihood=None):
        if int(n_components) != n_components or n_components < 1:
            raise ValueError(f"n_components must be a positive integer, got {n_components!r}.")
        if int(n_blocks) != n_blocks or n_blocks < 1:
            raise ValueError(f"n_blocks must be a positive integer, got {n_blocks!r}.")
        for name, value in (("prior_rate_w", prior_rate_w), ("prior_rate_h", prior_rate_h)):
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}.")
        self.n_components = int(n_components)
        self.prior_rates = (float(prior_rate_w), float(prior_rate_h))
        self.n_blocks = int(n_blocks)
        if likelihood is not None:
            # A Gamma/exponential likelihood (make_likelihood); the class's Poisson otherwise.
            self.likelihood = likelihood

    @property
    def prior_rate_w(self):
        r"""Rate :math:`\lambda_w` of the prior on ``W``."""
        return self.prior_rates[0]

    @property
    def prior_rate_h(self):
        r"""Rate :math:`\lambda_h` of the prior on ``H``."""
        return self.prior_rates[1]

    @staticmethod
    def check_data(X):
        """:func:`check_count_matrix`."""
        return check_count_matrix(X)

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
        return self._draw_factors(rng, (n_rows, n_cols))
