r"""Count data of any order cut into blocks for the CP chains (Nguyen et al. 2018, supplement, §III).

A matrix is a two-way array and a PARAFAC tensor a three-way one: one
:class:`BlockData` serves both. It is built once per fit and reused at every
temperature: every mode is cut into ``B`` contiguous groups (``bounds``),
block ``(g_0, ..., g_{N-1})`` has id ``(...(g_0 B + g_1) B + ...) B + g_{N-1}``;
it holds the per-block constant of the log-likelihood (Poisson:
:math:`\sum\log\Gamma(x+1)`), the mode sums (:math:`x_{i\cdot}` and
:math:`x_{\cdot j}` of a matrix), the likelihood switch ``kappa`` (0: Poisson;
the Gamma shape otherwise, see :mod:`skevidence.kernels._likelihood`), and
either the dense array or its non-zeros grouped by block (Poisson only). :class:`NMFData` and
:class:`PARAFACData` are its two-way and three-way forms under the names
their callers use.
"""

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy import sparse
from scipy.special import gammaln

from .._validation import check_int

__all__ = [
    "BlockData",
    "count_entries",
    "NMFData",
    "PARAFACData",
    "block_bounds",
    "check_bounds",
    "group_by_blocks",
    "group_entries",
    "group_tensor_by_blocks",
]


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
    n, n_blocks = check_int("n", n), check_int("n_blocks", n_blocks)
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


def group_entries(coords, vals, shape, bounds, n_blocks):
    r"""Non-zeros of an N-way array grouped by block, for the sparse kernels.

    Duplicate coordinates are summed and zeros dropped; the caller's arrays
    are left alone.

    Parameters
    ----------
    coords : sequence of N int arrays of shape (n,)
        Indices along each mode.
    vals : ndarray of shape (n,)
        Non-negative values.
    shape : tuple of N int
        Shape of the array.
    bounds : sequence of N int64 arrays
        Group bounds of each mode, already checked.
    n_blocks : int
        ``B``.

    Returns
    -------
    coords : ndarray of shape (N, nnz), int64
        Global indices, sorted by block, then lexicographically.
    vals : ndarray of shape (nnz,), float64
        The non-zero values.
    block_ptr : ndarray of shape (B**N + 1,), int64
        Block ``q``'s non-zeros are ``block_ptr[q]:block_ptr[q + 1]``.
    block_lgamma : ndarray of shape (B**N,), float64
        :math:`\sum_{x \in q} \log\Gamma(x + 1)` per block (zeros add nothing).
    """
    coords = [np.asarray(c, dtype=np.int64).ravel() for c in coords]
    vals = np.asarray(vals, dtype=np.float64).ravel()
    # Sum duplicates: sort by the linear index, add runs of equal indices.
    linear = np.ravel_multi_index(coords, shape)
    order = np.argsort(linear, kind="stable")
    linear, vals = linear[order], vals[order]
    unique, first = np.unique(linear, return_index=True)
    vals = np.add.reduceat(vals, first) if vals.size else vals
    keep = vals != 0.0
    coords = np.array(np.unravel_index(unique[keep], shape), dtype=np.int64).reshape(len(shape), -1)
    vals = vals[keep]
    block = np.zeros(vals.shape[0], dtype=np.int64)
    for c, b in zip(coords, bounds):
        block = block * n_blocks + np.searchsorted(b, c, side="right") - 1
    # Stable: within a block the lexicographic order of the linear sort is kept.
    order = np.argsort(block, kind="stable")
    n_all = n_blocks ** len(shape)
    block_ptr = np.zeros(n_all + 1, dtype=np.int64)
    np.cumsum(np.bincount(block, minlength=n_all), out=block_ptr[1:])
    block_lgamma = np.bincount(block, weights=gammaln(vals + 1.0), minlength=n_all)
    return (np.ascontiguousarray(coords[:, order]), np.ascontiguousarray(vals[order]), block_ptr,
            np.ascontiguousarray(block_lgamma, dtype=np.float64))


def group_by_blocks(X, row_bounds, col_bounds, n_blocks):
    """:func:`group_entries` of a sparse matrix; returns ``rows, cols, vals, block_ptr, block_lgamma``."""
    coo = sp.coo_array(X)
    bounds = [check_bounds(b, n, n_blocks, what)
              for b, n, what in zip((row_bounds, col_bounds), coo.shape, ("rows", "columns"))]
    coords, vals, block_ptr, block_lgamma = group_entries(coo.coords, coo.data, coo.shape, bounds, n_blocks)
    return coords[0], coords[1], vals, block_ptr, block_lgamma


def group_tensor_by_blocks(coords, vals, shape, bounds, n_blocks):
    """:func:`group_entries` of a 3-way tensor; returns ``ii, jj, kk, vals, block_ptr, block_lgamma``."""
    bounds = [check_bounds(b, n, n_blocks, what) for b, n, what in zip(bounds, shape, PARAFACData.mode_names)]
    coords, vals, block_ptr, block_lgamma = group_entries(coords, vals, shape, bounds, n_blocks)
    return (*coords, vals, block_ptr, block_lgamma)


@dataclass(frozen=True, eq=False)
class BlockData:
    r"""An array of ``n_modes`` modes prepared once for the CP chains.

    Build it with :meth:`from_array` of a subclass that sets ``n_modes``,
    ``kind`` and ``mode_names`` (:class:`NMFData`, :class:`PARAFACData`).
    Holds the block bounds of every mode, the per-block constant
    ``block_lgamma`` that the kernels subtract from a block's log-likelihood
    (Poisson: :math:`\sum \log\Gamma(x + 1)`; Gamma of shape :math:`\kappa`:
    :math:`-\sum (\kappa\log\kappa - \log\Gamma(\kappa) + (\kappa - 1)\log x)`),
    the mode sums, the likelihood switch ``kappa``, and either the dense array
    ``X`` or the non-zeros grouped by block (:func:`group_entries`).
    """

    shape: tuple
    n_blocks: int
    bounds: tuple
    block_lgamma: np.ndarray
    mode_sums: tuple
    X: np.ndarray | None = None
    coords: np.ndarray | None = None
    vals: np.ndarray | None = None
    block_ptr: np.ndarray | None = None
    kappa: float = 0.0

    @property
    def is_sparse(self):
        """Whether the sparse kernels are used."""
        return self.X is None

    @property
    def n_data(self):
        """Number of data ``N`` (zeros included)."""
        return int(np.prod(self.shape))

    @property
    def nnz(self):
        """Number of non-zero entries."""
        return int(self.vals.shape[0]) if self.is_sparse else int(np.count_nonzero(self.X))

    @property
    def total(self):
        """Sum of all entries."""
        return float(self.mode_sums[0].sum())

    @property
    def curvature_sums(self):
        r"""Per row of every mode, the likelihood's log-space curvature summed over the row's entries.

        Log-space SGLD's preconditioner (:func:`~skevidence.kernels._langevin._sampler_mode`).
        Poisson: the data's sums :math:`x_{i\cdot}`. Gamma of shape :math:`\kappa`:
        :math:`\kappa x / v` per entry, :math:`\kappa` at a fit, so :math:`\kappa`
        times the row's number of entries.
        """
        if self.kappa == 0.0:
            return self.mode_sums
        return tuple(np.full(n, self.kappa * self.n_data / n) for n in self.shape)

    @classmethod
    def from_array(cls, X, n_blocks, *, sparse=None, bounds=None, kappa=0.0):
        """Prepare ``X`` for ``n_blocks ** n_modes`` blocks.

        Parameters
        ----------
        X : array-like or scipy sparse of shape (I, J[, K])
            Non-negative, finite data (counts; non-integers are accepted, see
            "Non-integer data and the prior rate" in the user guide's page on
            Poisson NMF). Duplicate coordinates of a sparse input are summed.
        n_blocks : int
            Number of groups ``B`` of every mode; at most the smallest dimension.
        sparse : bool or None, default=None
            Use the sparse kernels; ``None`` means: if ``X`` is a scipy sparse array.
        bounds : sequence of int arrays, one per mode, optional
            Custom group bounds; default :func:`block_bounds`.
        kappa : float, default=0.0
            The likelihood: 0 for Poisson, else the shape of a Gamma
            likelihood (1: exponential), whose kernels are dense (sparse
            input is made dense; ``sparse=True`` is refused).
        """
        kappa = float(kappa)
        if not (np.isfinite(kappa) and kappa >= 0.0):
            raise ValueError(f"kappa must be 0 (Poisson) or a positive Gamma shape, got {kappa!r}.")
        is_sp = sp.issparse(X)
        if kappa > 0.0 and sparse:
            raise ValueError("The Gamma likelihood has no sparse kernels (a zero is an observation like any "
                             "other, its term not linear in the intensity): pass sparse=False.")
        if kappa > 0.0 and is_sp:
            X, is_sp = X.toarray(), False
        sparse = is_sp if sparse is None else sparse
        if not is_sp:
            X = np.asarray(X)
        if len(X.shape) != cls.n_modes:
            raise ValueError(f"X must be {cls.kind}, got an array of shape {X.shape}.")
        shape = tuple(int(n) for n in X.shape)
        if min(shape) < 1:
            raise ValueError(f"X is empty (shape {shape}); the evidence needs at least one entry.")
        coo = sp.coo_array(X) if is_sp else None
        values = np.asarray(coo.data if is_sp else X, dtype=np.float64)
        if not np.all(np.isfinite(values)):
            raise ValueError("X contains NaN or infinity; remove or impute those entries.")
        if np.any(values < 0):
            name = "Poisson" if kappa == 0.0 else "Gamma"
            raise ValueError(f"X contains negative values; the {name} likelihood needs X >= 0.")
        if kappa not in (0.0, 1.0) and np.any(values == 0):
            raise ValueError(f"X has zero entries, which a Gamma likelihood of shape {kappa:g} cannot score.")
        B = check_int("n_blocks", n_blocks)
        if bounds is None:
            bounds = tuple(block_bounds(n, B, what=what) for n, what in zip(shape, cls.mode_names))
        else:
            bounds = tuple(check_bounds(b, n, B, what) for b, n, what in zip(bounds, shape, cls.mode_names))
        if sparse:
            coords = coo.coords if is_sp else np.nonzero(values)
            values = values if is_sp else values[coords]
            coords, vals, block_ptr, block_lgamma = group_entries(coords, values, shape, bounds, B)
            mode_sums = tuple(np.bincount(c, weights=vals, minlength=n) for c, n in zip(coords, shape))
            return cls(shape, B, bounds, block_lgamma, mode_sums, coords=coords, vals=vals, block_ptr=block_ptr)
        Xd = np.array(X.toarray() if is_sp else values, dtype=np.float64, order="C", copy=True)
        if kappa == 0.0:
            lg = gammaln(Xd + 1.0)
        else:  # minus the Gamma density's terms that do not involve the intensity
            lg = np.full_like(Xd, gammaln(kappa) - kappa * np.log(kappa))
            if kappa != 1.0:
                lg -= (kappa - 1.0) * np.log(Xd)
        block_lgamma = np.array([
            lg[tuple(slice(b[g], b[g + 1]) for b, g in zip(bounds, groups))].sum()
            for groups in itertools.product(range(B), repeat=len(shape))
        ])
        axes = range(len(shape))
        mode_sums = tuple(Xd.sum(axis=tuple(a for a in axes if a != m)) for m in axes)
        return cls(shape, B, bounds, block_lgamma, mode_sums, X=Xd, kappa=kappa)


class NMFData(BlockData):
    """A count matrix ``X`` (I, J) prepared for the NMF chains (a two-way :class:`BlockData`)."""

    n_modes, kind, mode_names = 2, "a 2-D matrix (I, J)", ("rows", "columns")

    @classmethod
    def from_array(cls, X, n_blocks, *, sparse=None, row_bounds=None, col_bounds=None, kappa=0.0):
        """:meth:`BlockData.from_array` with the row and column bounds named apart."""
        given = row_bounds is not None or col_bounds is not None
        bounds = (
            tuple(block_bounds(n, n_blocks, what=what) if b is None else b
                  for b, n, what in zip((row_bounds, col_bounds), np.shape(X), cls.mode_names))
            if given else None
        )
        return super().from_array(X, n_blocks, sparse=sparse, bounds=bounds, kappa=kappa)

    row_bounds = property(lambda self: self.bounds[0], doc="Bounds of the row groups.")
    col_bounds = property(lambda self: self.bounds[1], doc="Bounds of the column groups.")
    row_sums = property(lambda self: self.mode_sums[0], doc=r"Row sums :math:`x_{i\cdot}`.")
    col_sums = property(lambda self: self.mode_sums[1], doc=r"Column sums :math:`x_{\cdot j}`.")
    rows = property(lambda self: self.coords[0], doc="Row index of each non-zero (sparse data).")
    cols = property(lambda self: self.coords[1], doc="Column index of each non-zero (sparse data).")


class PARAFACData(BlockData):
    """A count tensor ``X`` (I, J, K) prepared for the PARAFAC chains (a three-way :class:`BlockData`)."""

    n_modes, kind = 3, "a 3-D tensor (I, J, K)"
    mode_names = ("mode-1 indices (axis 0)", "mode-2 indices (axis 1)", "mode-3 indices (axis 2)")
    ii = property(lambda self: self.coords[0], doc="Mode-1 index of each non-zero (sparse data).")
    jj = property(lambda self: self.coords[1], doc="Mode-2 index of each non-zero (sparse data).")
    kk = property(lambda self: self.coords[2], doc="Mode-3 index of each non-zero (sparse data).")

def count_entries(X, *, n_modes=None, method, advice="", integer=True):
    """Validate non-negative integer counts (dense, or scipy.sparse) of any order.

    With ``integer=False`` any finite non-negative values pass (magnitudes read
    as counts) and are returned as float64.

    Parameters
    ----------
    X : array-like or scipy.sparse matrix/array
    n_modes : int or None
        The order ``X`` must have (``None``: any order from 2 up).
    method, advice : str
        Name the method and what to do instead in the non-integer message.

    Returns
    -------
    idx : int64 array of shape (nnz, n_modes)
        The non-zero entries' indices, in row-major order.
    counts : int64 (float64 if not ``integer``) array of shape (nnz,)
    shape : tuple of int
    """
    if sparse.issparse(X):
        coo = sparse.coo_array(X)
        coo.sum_duplicates()
        coords = coo.coords if hasattr(coo, "coords") else (coo.row, coo.col)
        idx = np.stack([np.asarray(c, dtype=np.int64) for c in coords], axis=1)
        values = np.asarray(coo.data)
        shape = tuple(int(n) for n in coo.shape)
        keep = values != 0
        idx, values = idx[keep], values[keep]
    else:
        X = np.asarray(X)
        if X.dtype == object or not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
            raise ValueError(f"X must be numeric counts, got dtype {X.dtype}.")
        if np.iscomplexobj(X):
            raise ValueError("X must be real counts, got complex values.")
        shape = tuple(int(n) for n in X.shape)
        idx = np.argwhere(X != 0).astype(np.int64) if X.ndim else np.empty((0, 0), dtype=np.int64)
        values = X[tuple(idx.T)] if X.ndim else np.empty(0)
    if n_modes is not None and len(shape) != n_modes:
        raise ValueError(f"X must be {n_modes}-D, got an input of shape {shape}.")
    if len(shape) < 2:
        raise ValueError(f"X must have at least two modes (a matrix or a tensor), got shape {shape}.")
    if min(shape) == 0:
        raise ValueError(f"X is empty (shape {shape}): the evidence needs at least one entry.")
    values = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"X contains NaN or infinity; {method} needs finite integer counts.")
    if np.any(values < 0):
        raise ValueError(f"X has negative entries (min {values.min():g}); Poisson counts are non-negative.")
    fractional = values != np.round(values) if integer else np.zeros(values.shape, dtype=bool)
    if np.any(fractional):
        raise ValueError(
            f"{method} needs integer counts; X has non-integer entries (e.g. "
            f"{values[fractional][0]:g}, {int(fractional.sum())} of them): {advice}"
        )
    order = np.lexsort(idx.T[::-1]) if idx.shape[0] else np.arange(0)
    return idx[order], values[order].astype(np.int64 if integer else np.float64), shape
