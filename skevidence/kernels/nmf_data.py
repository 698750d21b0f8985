"""A count matrix cut into blocks for the NMF kernels (ALGORITHMS.md section 4).

:class:`NMFData` is built once per fit and reused at every temperature: the
row and column group bounds, the per-block :math:`\\sum\\log\\Gamma(x+1)`, and
either the dense matrix or its non-zeros grouped by block.
"""

import numbers
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln

__all__ = ["NMFData", "block_bounds", "check_bounds", "group_by_blocks"]


def block_bounds(n, n_blocks, *, what="items"):
    """Bounds of ``n_blocks`` contiguous, near-equal groups of ``n`` items.

    The first ``n % n_blocks`` groups have one item more, as in
    :func:`numpy.array_split`.

    Parameters
    ----------
    n : int
        Number of items (rows or columns), at least 1.
    n_blocks : int
        Number of groups ``B``, at least 1 and at most ``n``.
    what : str, default="items"
        Name of the items, used in error messages (``"rows"``, ``"columns"``).

    Returns
    -------
    bounds : ndarray of shape (n_blocks + 1,), dtype int64
        Group ``g`` is ``bounds[g]:bounds[g + 1]``; ``bounds[0] = 0``, ``bounds[-1] = n``.
    """
    for name, value in (("n", n), ("n_blocks", n_blocks)):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    n, n_blocks = int(n), int(n_blocks)
    if n_blocks > n:
        raise ValueError(
            f"n_blocks={n_blocks} is larger than the number of {what} ({n}): every block "
            f"needs at least one of the {what}. Use n_blocks <= {n}."
        )
    sizes = np.full(n_blocks, n // n_blocks, dtype=np.int64)
    sizes[: n % n_blocks] += 1
    bounds = np.zeros(n_blocks + 1, dtype=np.int64)
    np.cumsum(sizes, out=bounds[1:])
    return bounds


def check_bounds(bounds, n, n_blocks, what):
    """``bounds`` as C-contiguous int64 if they cut ``n`` items (``what``) into ``n_blocks`` groups."""
    bounds = np.asarray(bounds)
    if (
        bounds.ndim != 1
        or bounds.shape[0] != n_blocks + 1
        or not np.issubdtype(bounds.dtype, np.integer)
        or bounds[0] != 0
        or bounds[-1] != n
        or np.any(np.diff(bounds) < 1)
    ):
        raise ValueError(
            f"The bounds of the {what} must be {n_blocks + 1} strictly increasing integers "
            f"from 0 to {n}, got {bounds!r}."
        )
    return np.ascontiguousarray(bounds, dtype=np.int64)


def group_by_blocks(X, row_bounds, col_bounds, n_blocks):
    r"""Non-zeros of a sparse matrix grouped by block, for the sparse kernel.

    Block ``(g, h)`` (row group ``g``, column group ``h``) has id ``g * B + h``.

    Parameters
    ----------
    X : scipy.sparse matrix or array (CSR, COO, ...)
        Non-negative counts; duplicate entries are summed, explicit zeros dropped.
    row_bounds, col_bounds : ndarray of shape (n_blocks + 1,)
        Group bounds, e.g. from :func:`block_bounds`.
    n_blocks : int
        ``B``.

    Returns
    -------
    rows, cols : ndarray of shape (nnz,), int64
        Global row and column indices, sorted by block, then row, then column.
    vals : ndarray of shape (nnz,), float64
        The non-zero values.
    block_ptr : ndarray of shape (B * B + 1,), int64
        Block ``q``'s non-zeros are ``block_ptr[q]:block_ptr[q + 1]``.
    block_lgamma : ndarray of shape (B * B,), float64
        :math:`\\sum_{(i,j) \\in q} \\log\\Gamma(x_{ij} + 1)` per block (zeros add nothing).
    """
    coo = sp.coo_array(X, copy=True)  # sum_duplicates works in place
    coo.sum_duplicates()
    coo.eliminate_zeros()
    I, J = coo.shape
    row_bounds = check_bounds(row_bounds, I, n_blocks, "rows")
    col_bounds = check_bounds(col_bounds, J, n_blocks, "columns")
    rows = np.asarray(coo.row, dtype=np.int64)
    cols = np.asarray(coo.col, dtype=np.int64)
    vals = np.asarray(coo.data, dtype=np.float64)
    block = (np.searchsorted(row_bounds, rows, side="right") - 1) * n_blocks + (
        np.searchsorted(col_bounds, cols, side="right") - 1
    )
    order = np.lexsort((cols, rows, block))
    rows, cols, vals, block = rows[order], cols[order], vals[order], block[order]
    block_ptr = np.zeros(n_blocks * n_blocks + 1, dtype=np.int64)
    np.cumsum(np.bincount(block, minlength=n_blocks * n_blocks), out=block_ptr[1:])
    block_lgamma = np.bincount(block, weights=gammaln(vals + 1.0), minlength=n_blocks * n_blocks)
    return (
        np.ascontiguousarray(rows),
        np.ascontiguousarray(cols),
        np.ascontiguousarray(vals),
        block_ptr,
        np.ascontiguousarray(block_lgamma, dtype=np.float64),
    )


@dataclass(frozen=True, eq=False)
class NMFData:
    r"""A count matrix prepared once for the NMF kernels, reused at every temperature.

    Build it with :meth:`from_array`. Holds the block bounds, the per-block
    :math:`\\sum \\log\\Gamma(x + 1)`, and either the dense matrix ``X`` or the
    non-zeros grouped by block (:func:`group_by_blocks`).
    """

    shape: tuple
    n_blocks: int
    row_bounds: np.ndarray
    col_bounds: np.ndarray
    block_lgamma: np.ndarray
    X: np.ndarray | None = None
    rows: np.ndarray | None = None
    cols: np.ndarray | None = None
    vals: np.ndarray | None = None
    block_ptr: np.ndarray | None = None

    @property
    def is_sparse(self):
        """Whether the sparse kernel is used."""
        return self.X is None

    @property
    def n_data(self):
        """Number of data ``N = I J`` (zeros included)."""
        return self.shape[0] * self.shape[1]

    @property
    def row_sums(self):
        r"""Row sums :math:`x_{i\cdot}` of ``X``, shape ``(I,)``."""
        if self.is_sparse:
            return np.bincount(self.rows, weights=self.vals, minlength=self.shape[0])
        return self.X.sum(axis=1)

    @property
    def col_sums(self):
        r"""Column sums :math:`x_{\cdot j}` of ``X``, shape ``(J,)``."""
        if self.is_sparse:
            return np.bincount(self.cols, weights=self.vals, minlength=self.shape[1])
        return self.X.sum(axis=0)

    @property
    def nnz(self):
        """Number of non-zero entries."""
        return int(self.vals.shape[0]) if self.is_sparse else int(np.count_nonzero(self.X))

    @classmethod
    def from_array(cls, X, n_blocks, *, sparse=None, row_bounds=None, col_bounds=None):
        """Prepare ``X`` for ``n_blocks x n_blocks`` blocks.

        Parameters
        ----------
        X : array-like or scipy sparse of shape (I, J)
            Non-negative, finite data (counts; non-integers are accepted, see
            ALGORITHMS.md section 5).
        n_blocks : int
            Number of row groups and of column groups ``B``.
        sparse : bool or None, default=None
            Use the sparse kernel; ``None`` means: if ``X`` is a scipy sparse matrix.
        row_bounds, col_bounds : array of int, optional
            Custom group bounds; default :func:`block_bounds`.
        """
        is_sp = sp.issparse(X)
        if sparse is None:
            sparse = is_sp
        if is_sp:
            X = X.tocsr() if not sparse else X
            values = X.data
            shape = X.shape
        else:
            X = np.asarray(X)
            if X.ndim != 2:
                raise ValueError(f"X must be 2-D, got an array of shape {X.shape}.")
            values = X
            shape = X.shape
        if len(shape) != 2 or shape[0] < 1 or shape[1] < 1:
            raise ValueError(f"X must be a non-empty 2-D matrix, got shape {shape}.")
        values = np.asarray(values, dtype=np.float64)
        if not np.all(np.isfinite(values)):
            raise ValueError("X contains NaN or infinity; remove or impute those entries.")
        if np.any(values < 0):
            raise ValueError("X contains negative values; the Poisson likelihood needs X >= 0.")
        I, J = int(shape[0]), int(shape[1])
        row_bounds = (
            block_bounds(I, n_blocks, what="rows")
            if row_bounds is None
            else check_bounds(row_bounds, I, n_blocks, "rows")
        )
        col_bounds = (
            block_bounds(J, n_blocks, what="columns")
            if col_bounds is None
            else check_bounds(col_bounds, J, n_blocks, "columns")
        )
        B = int(n_blocks)
        if sparse:
            rows, cols, vals, block_ptr, block_lgamma = group_by_blocks(
                X, row_bounds, col_bounds, B
            )
            return cls((I, J), B, row_bounds, col_bounds, block_lgamma,
                       rows=rows, cols=cols, vals=vals, block_ptr=block_ptr)
        Xd = np.array(X.toarray() if is_sp else X, dtype=np.float64, order="C", copy=True)
        lg = gammaln(Xd + 1.0)
        block_lgamma = np.empty(B * B)
        for g in range(B):
            for h in range(B):
                block_lgamma[g * B + h] = lg[row_bounds[g] : row_bounds[g + 1],
                                             col_bounds[h] : col_bounds[h + 1]].sum()
        return cls((I, J), B, row_bounds, col_bounds, block_lgamma, X=Xd)
