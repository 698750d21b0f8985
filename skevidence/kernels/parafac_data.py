r"""A count tensor cut into blocks for the PARAFAC kernels (ALGORITHMS.md section 4).

:class:`PARAFACData` is built once per fit and reused at every temperature:
the group bounds of the three modes, the per-block
:math:`\sum\log\Gamma(x+1)`, the mode sums :math:`x_{i\cdot\cdot}`,
:math:`x_{\cdot j\cdot}`, :math:`x_{\cdot\cdot k}`, and either the dense tensor
or its non-zeros grouped by block. Block ``(g, h, m)`` (mode-1 group ``g``,
mode-2 group ``h``, mode-3 group ``m``) has id ``(g * B + h) * B + m``.

The group bounds come from :func:`skevidence.kernels.nmf_data.block_bounds`
(contiguous, near-equal groups), used as it is for each mode.
"""

import numbers
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln

from .nmf_data import block_bounds, check_bounds

__all__ = ["PARAFACData", "group_tensor_by_blocks"]

_MODES = ("mode-1 indices (axis 0)", "mode-2 indices (axis 1)", "mode-3 indices (axis 2)")


def _block_ids(coords, bounds, n_blocks):
    group = [np.searchsorted(b, c, side="right") - 1 for c, b in zip(coords, bounds)]
    return (group[0] * n_blocks + group[1]) * n_blocks + group[2]


def group_tensor_by_blocks(coords, vals, shape, bounds, n_blocks):
    r"""Non-zeros of a 3-D tensor grouped by block, for the sparse kernel.

    Duplicate coordinates are summed and zeros dropped.

    Parameters
    ----------
    coords : sequence of 3 int arrays of shape (n,)
        Indices along the three modes.
    vals : ndarray of shape (n,)
        Non-negative values.
    shape : tuple of 3 int
        ``(I, J, K)``.
    bounds : sequence of 3 int64 arrays
        Group bounds of each mode (checked).
    n_blocks : int
        ``B``.

    Returns
    -------
    ii, jj, kk : ndarray of shape (nnz,), int64
        Global indices, sorted by block, then by ``(i, j, k)``.
    vals : ndarray of shape (nnz,), float64
        The non-zero values.
    block_ptr : ndarray of shape (B**3 + 1,), int64
        Block ``q``'s non-zeros are ``block_ptr[q]:block_ptr[q + 1]``.
    block_lgamma : ndarray of shape (B**3,), float64
        :math:`\sum_{(i,j,k) \in q} \log\Gamma(x_{ijk} + 1)` per block.
    """
    bounds = [check_bounds(b, n, n_blocks, what) for b, n, what in zip(bounds, shape, _MODES)]
    coords = [np.asarray(c, dtype=np.int64).ravel() for c in coords]
    vals = np.asarray(vals, dtype=np.float64).ravel()
    # Sum duplicates: sort by the linear index, add runs of equal indices.
    linear = np.ravel_multi_index(coords, shape)
    order = np.argsort(linear, kind="stable")
    linear, vals = linear[order], vals[order]
    unique, first = np.unique(linear, return_index=True)
    vals = np.add.reduceat(vals, first) if vals.size else vals
    keep = vals != 0.0
    unique, vals = unique[keep], vals[keep]
    coords = [np.asarray(c, dtype=np.int64) for c in np.unravel_index(unique, shape)]
    n_all = n_blocks**3
    block = _block_ids(coords, bounds, n_blocks)
    # Stable: within a block the (i, j, k) order of the linear sort is kept.
    order = np.argsort(block, kind="stable")
    coords = [np.ascontiguousarray(c[order]) for c in coords]
    vals, block = np.ascontiguousarray(vals[order]), block[order]
    block_ptr = np.zeros(n_all + 1, dtype=np.int64)
    np.cumsum(np.bincount(block, minlength=n_all), out=block_ptr[1:])
    block_lgamma = np.bincount(block, weights=gammaln(vals + 1.0), minlength=n_all)
    block_lgamma = np.ascontiguousarray(block_lgamma, dtype=np.float64)
    return coords[0], coords[1], coords[2], vals, block_ptr, block_lgamma


@dataclass(frozen=True, eq=False)
class PARAFACData:
    r"""A count tensor prepared once for the PARAFAC kernels, reused at every temperature.

    Build it with :meth:`from_array`. Holds the block bounds of the three
    modes, the per-block :math:`\sum \log\Gamma(x + 1)`, the mode sums, and
    either the dense tensor ``X`` or the non-zeros grouped by block
    (:func:`group_tensor_by_blocks`).
    """

    shape: tuple
    n_blocks: int
    bounds: tuple
    block_lgamma: np.ndarray
    mode_sums: tuple
    X: np.ndarray | None = None
    ii: np.ndarray | None = None
    jj: np.ndarray | None = None
    kk: np.ndarray | None = None
    vals: np.ndarray | None = None
    block_ptr: np.ndarray | None = None

    @property
    def is_sparse(self):
        """Whether the sparse kernel is used."""
        return self.X is None

    @property
    def n_data(self):
        """Number of data ``N = I J K`` (zeros included)."""
        I, J, K = self.shape
        return I * J * K

    @property
    def nnz(self):
        """Number of non-zero entries."""
        return int(self.vals.shape[0]) if self.is_sparse else int(np.count_nonzero(self.X))

    @property
    def total(self):
        """Sum of all entries."""
        return float(self.mode_sums[0].sum())

    @classmethod
    def from_array(cls, X, n_blocks, *, sparse=None, bounds=None):
        """Prepare a 3-D ``X`` for ``n_blocks ** 3`` blocks.

        Parameters
        ----------
        X : ndarray or scipy.sparse.coo_array of shape (I, J, K)
            Non-negative, finite data (counts; non-integers are accepted, see
            ALGORITHMS.md section 5). Duplicate coordinates of a sparse
            tensor are summed.
        n_blocks : int
            Number of groups ``B`` of every mode; at most ``min(I, J, K)``.
        sparse : bool or None, default=None
            Use the sparse kernel; ``None`` means: if ``X`` is a scipy sparse array.
        bounds : sequence of 3 int arrays, optional
            Custom group bounds; default :func:`~skevidence.kernels.nmf_data.block_bounds`.
        """
        is_sp = sp.issparse(X)
        if sparse is None:
            sparse = is_sp
        if is_sp:
            if len(X.shape) != 3:
                raise ValueError(f"X must be a 3-D tensor, got a sparse input of shape {X.shape}.")
            coo = sp.coo_array(X)
            coords, values = coo.coords, np.asarray(coo.data, dtype=np.float64)
        else:
            X = np.asarray(X)
            if X.ndim != 3:
                raise ValueError(
                    f"X must be a 3-D tensor (I, J, K), got an array of shape {X.shape}."
                )
            values = np.asarray(X, dtype=np.float64)
        shape = tuple(int(n) for n in X.shape)
        if min(shape) < 1:
            raise ValueError(f"X is empty (shape {shape}); the evidence needs at least one entry.")
        if not np.all(np.isfinite(values)):
            raise ValueError("X contains NaN or infinity; remove or impute those entries.")
        if np.any(values < 0):
            raise ValueError("X contains negative values; the Poisson likelihood needs X >= 0.")
        if not isinstance(n_blocks, numbers.Integral) or isinstance(n_blocks, bool) or n_blocks < 1:
            raise ValueError(f"n_blocks must be a positive integer, got {n_blocks!r}.")
        B = int(n_blocks)
        if bounds is None:
            bounds = tuple(block_bounds(n, B, what=what) for n, what in zip(shape, _MODES))
        else:
            bounds = tuple(
                check_bounds(b, n, B, what) for b, n, what in zip(bounds, shape, _MODES)
            )
        if sparse:
            if not is_sp:
                coords = np.nonzero(values)
                values = values[coords]
            ii, jj, kk, vals, block_ptr, block_lgamma = group_tensor_by_blocks(
                coords, values, shape, bounds, B
            )
            mode_sums = tuple(
                np.bincount(idx, weights=vals, minlength=n).astype(np.float64)
                for idx, n in zip((ii, jj, kk), shape)
            )
            return cls(shape, B, bounds, block_lgamma, mode_sums,
                       ii=ii, jj=jj, kk=kk, vals=vals, block_ptr=block_ptr)
        Xd = np.array(X.toarray() if is_sp else values, dtype=np.float64, order="C", copy=True)
        lg = gammaln(Xd + 1.0)
        ib, jb, kb = bounds
        block_lgamma = np.empty(B**3)
        for g in range(B):
            for h in range(B):
                for m in range(B):
                    block_lgamma[(g * B + h) * B + m] = lg[
                        ib[g] : ib[g + 1], jb[h] : jb[h + 1], kb[m] : kb[m + 1]
                    ].sum()
        mode_sums = (Xd.sum(axis=(1, 2)), Xd.sum(axis=(0, 2)), Xd.sum(axis=(0, 1)))
        return cls(shape, B, bounds, block_lgamma, mode_sums, X=Xd)
