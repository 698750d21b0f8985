r"""Poisson PARAFAC with exponential priors (seed 001, eq. 11)."""

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln

from ._base import EvidenceModel

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
        X = np.asarray(X)
        numeric = np.issubdtype(X.dtype, np.number) or X.dtype == bool
        if X.dtype == object or np.iscomplexobj(X) or not numeric:
            raise ValueError(f"{name} must be a real numeric tensor, got dtype {X.dtype}.")
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
    if min(shape) == 0:
        raise ValueError(f"{name} is empty (shape {shape}); the evidence needs at least one entry.")
    if not np.all(np.isfinite(values)):
        raise ValueError(
            f"{name} contains NaN or infinity; Poisson PARAFAC needs finite non-negative values."
        )
    if np.any(values < 0):
        raise ValueError(
            f"{name} has negative entries; Poisson PARAFAC models non-negative data (counts): "
            "shift or take magnitudes first."
        )
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


class PoissonPARAFACModel(EvidenceModel):
    r"""Poisson PARAFAC :math:`X \approx \sum_r a_r \circ b_r \circ c_r` with exponential priors.

    .. math::
        a_{ir} \sim \mathcal{E}(\lambda_a), \quad b_{jr} \sim \mathcal{E}(\lambda_b), \quad
        c_{kr} \sim \mathcal{E}(\lambda_c), \quad
        x_{ijk} \mid A, B, C \sim \mathcal{PO}\Big(\sum_r a_{ir} b_{jr} c_{kr}\Big)

    (seed 001, eq. 11). Every entry of ``X`` is one datum (``N = I J K``,
    zeros included). STI runs through the fused block-parallel kernel of
    :mod:`skevidence.kernels.parafac` (see :meth:`chain_runner`): each mode is
    split into ``n_blocks`` groups, and each iteration updates the
    ``n_blocks`` mutually disjoint blocks of one randomly drawn part in
    parallel.

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

    exact_prior_sampling = True
    accepts_sparse = True
    nonnegative = True

    def __init__(self, n_components=1, prior_rates=1.0, n_blocks=1):
        for name, value in (("n_components", n_components), ("n_blocks", n_blocks)):
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")
        self.n_components = int(n_components)
        self.prior_rates = check_prior_rates(prior_rates, "prior_rates")
        self.n_blocks = int(n_blocks)

    # -- data ----------------------------------------------------------------

    def prepare_data(self, X, y=None):
        """Validate ``X`` (2-D taken as ``(I, J, 1)``) and split it into blocks for the kernel."""
        from ..kernels.parafac_data import PARAFACData

        if isinstance(X, PARAFACData):
            data = X
        else:
            X = check_count_tensor(X)
            if self.n_blocks > min(X.shape):
                raise ValueError(
                    f"n_blocks={self.n_blocks} is larger than the tensor allows: X has shape "
                    f"{X.shape}, "
                    f"and each mode must be split into n_blocks non-empty groups. "
                    f"Use n_blocks <= {min(X.shape)}."
                )
            data = PARAFACData.from_array(X, self.n_blocks)
        if data.n_blocks != self.n_blocks:
            raise ValueError(
                f"The prepared data have {data.n_blocks} blocks, the model {self.n_blocks}."
            )
        return data, None

    def n_data(self, X, y=None):
        return X.n_data

    # -- the generic interface, on theta = (A.ravel(), B.ravel(), C.ravel()) and a dense X --

    def split(self, theta, shape):
        """The factors ``(A, B, C)`` of a flat ``theta`` for a tensor of ``shape``."""
        R = self.n_components
        ends = np.cumsum([n * R for n in shape])
        return tuple(part.reshape(n, R) for part, n in zip(np.split(theta, ends[:2]), shape))

    def log_likelihood_and_grad(self, theta, X, y=None):
        """Per-entry log-likelihoods of a dense 3-D ``X`` and the gradient of their sum.

        ``theta`` is ``A.ravel()``, ``B.ravel()``, ``C.ravel()`` concatenated.
        STI does not use this (it runs the fused kernel); it is here for
        checks and for users.
        """
        X = np.asarray(X, dtype=np.float64)
        A, B, C = self.split(theta, X.shape)
        V = np.einsum("ir,jr,kr->ijk", A, B, C)
        log_lik = X * np.log(V) - V - gammaln(X + 1)
        E = X / V - 1.0
        grads = (
            np.einsum("ijk,jr,kr->ir", E, B, C),
            np.einsum("ijk,ir,kr->jr", E, A, C),
            np.einsum("ijk,ir,jr->kr", E, A, B),
        )
        return log_lik.ravel(), np.concatenate([g.ravel() for g in grads])

    def split_log_prior(self, factors):
        """Log prior density of the factors ``(A, B, C)``."""
        if any(np.any(F < 0) for F in factors):
            return -np.inf
        terms = (F.size * np.log(lam) - lam * F.sum() for F, lam in zip(factors, self.prior_rates))
        return float(sum(terms))

    def sample_factors(self, rng, shape):
        """An exact prior draw of ``(A, B, C)`` for a tensor of ``shape``."""
        R = self.n_components
        return tuple(
            rng.exponential(1.0 / lam, size=(n, R)) for n, lam in zip(shape, self.prior_rates)
        )

    def chain_runner(self, X, y, *, sampler, batch_size):
        """The fused block-parallel runner; ``batch_size`` is not used (the minibatch is a part)."""
        from ._parafac_runner import PARAFACChainRunner

        return PARAFACChainRunner(self, X, sampler=sampler)
