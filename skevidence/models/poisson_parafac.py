r"""Poisson PARAFAC with exponential priors (Nguyen et al. 2018, eq. 11)."""

import numbers

import numpy as np
import scipy.sparse as sp

from .._validation import check_int
from ._factorisation import CPModel, real_array

__all__ = ["PoissonPARAFACModel", "check_count_tensor", "check_prior_rates"]


def check_count_tensor(X, *, name="X"):
    """A finite, non-negative, non-empty 3-D tensor as float64.

    A 2-D ``(I, J)`` input is taken as ``(I, J, 1)``. Sparse input (any 2-D
    scipy format, or a 3-D :class:`scipy.sparse.coo_array`) becomes a 3-D
    ``coo_array`` with duplicate coordinates summed; dense input a
    C-contiguous float64 array. Raises :class:`ValueError` naming the problem
    otherwise.
    """
    if sp.issparse(X):
        if len(X.shape) not in (2, 3):
            raise ValueError(
                f"{name} must be a 3-D tensor (I, J, K) or a 2-D matrix (I, J), taken as "
                "(I, J, 1); "
                f"got a sparse input of shape {X.shape}."
            )
        X = sp.coo_array(X, dtype=np.float64)
        if X.ndim == 2:
            X = X.reshape((*X.shape, 1))
        X.sum_duplicates()
        values, shape = X.data, X.shape
    else:
        X = real_array(X, name, "tensor")
        if X.ndim == 2:
            X = X[:, :, None]
        if X.ndim != 3:
            raise ValueError(
                f"{name} must be a 3-D tensor (I, J, K) or a 2-D matrix (I, J), taken as "
                "(I, J, 1); "
                f"got {X.ndim}-D input of shape {X.shape}."
            )
        X = np.ascontiguousarray(X, dtype=np.float64)
        values, shape = X, X.shape
    PoissonPARAFACModel._check_entries(values, shape, name)
    return X


def check_prior_rates(prior_rates, name="prior_rate"):
    """Three positive finite rates from a number or a sequence of 3 numbers."""
    if isinstance(prior_rates, numbers.Real) and not isinstance(prior_rates, bool):
        rates = (prior_rates,) * 3
    else:
        try:
            rates = tuple(prior_rates)
        except TypeError:
            rates = ()
    valid = all(
        isinstance(r, numbers.Real) and not isinstance(r, bool) and np.isfinite(r) and r > 0
        for r in rates
    )
    if len(rates) != 3 or not valid:
        raise ValueError(
            f"{name} must be a positive finite number or a sequence of 3 of them (one per mode), "
            f"got {prior_rates!r}."
        )
    return tuple(float(r) for r in rates)


class PoissonPARAFACModel(CPModel):
    r"""Poisson PARAFAC :math:`X \approx \sum_r a_r \circ b_r \circ c_r` with exponential priors.

    .. math::
        a_{ir} \sim \mathcal{E}(\lambda_a), \quad b_{jr} \sim \mathcal{E}(\lambda_b), \quad
        c_{kr} \sim \mathcal{E}(\lambda_c), \quad
        x_{ijk} \mid A, B, C \sim \mathcal{PO}\Big(\sum_r a_{ir} b_{jr} c_{kr}\Big)

    (Nguyen et al. 2018, eq. 11). Every entry of ``X`` is one datum (``N = I J K``,
    zeros included). STI runs through the fused block-parallel kernel of
    :mod:`skevidence.kernels.parafac` (see
    :meth:`~skevidence.models.EvidenceModel.chain_runner`): each mode is
    split into ``n_blocks`` groups, and each iteration updates the
    ``n_blocks`` mutually disjoint blocks of one randomly drawn part in
    parallel. The parameters ``theta`` of the generic interface are
    ``A.ravel()``, ``B.ravel()``, ``C.ravel()`` concatenated, for a dense
    3-D ``X``.

    For non-integer data the likelihood keeps its formula with
    :math:`\log\Gamma(x+1)`; it is then not a normalised density, but
    comparisons between ranks on the same data remain meaningful.

    Parameters
    ----------
    n_components : int
        Rank :math:`R`.
    prior_rates : float or sequence of 3 floats, default=1.0
        Rates :math:`\lambda_a, \lambda_b, \lambda_c > 0` of the exponential priors.
    n_blocks : int
        Number of groups :math:`B` of every mode.
    """

    name = "Poisson PARAFAC"

    def __init__(self, n_components=1, prior_rates=1.0, n_blocks=1):
        self.n_components = check_int("n_components", n_components)
        self.prior_rates = check_prior_rates(prior_rates, "prior_rates")
        self.n_blocks = check_int("n_blocks", n_blocks)

    @staticmethod
    def check_data(X):
        """:func:`check_count_tensor`."""
        return check_count_tensor(X)

    def split_log_prior(self, factors):
        """Log prior density of the factors ``(A, B, C)``."""
        return self._log_prior(factors)

    def sample_factors(self, rng, shape):
        """An exact prior draw of ``(A, B, C)`` for a tensor of ``shape``."""
        return self._draw_factors(rng, shape)
