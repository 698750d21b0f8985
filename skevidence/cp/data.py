r"""The data of a CP model, prepared once: dense or sparse, two or three modes, any likelihood.

:class:`CPData` holds what every evidence method of the family reads: the
dense array where the input was dense (the dense passes use BLAS on it;
Poisson counts of few non-zeros keep only their list), the
*listed entries* (the non-zeros for the Poisson likelihood, whose zero counts
add nothing but the linear part; every entry for the Gamma family, where a
zero is an observation like any other), the data's constant of
:mod:`~skevidence.cp.likelihood`, the likelihood's switch ``kappa`` and the
noise floor. :meth:`CPData.blocks` cuts it into the blocks of the papers'
block-parallel SG-MCMC chains (Gemulla et al. 2011; Nguyen et al. 2018).
:func:`count_entries` is the check of integer counts behind Chib's method and
the SMC.
"""

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import sparse

from .._validation import check_int
from .likelihood import check_entries, entry_constant

__all__ = ["Blocks", "CPData", "block_bounds", "count_entries"]

#: Dense Poisson counts with fewer non-zeros than this share of the entries are kept as the listed non-zeros
#: only: a pass over them costs less than the dense pass's three BLAS products over every entry (one thread,
#: 100 x 75 to 1000 x 257: 0.3-0.6 of the dense time at a tenth non-zero, 0.5-1.0 at a fifth, ranks 3-32).
_LISTED_BELOW = 0.2

#: The listed entries run through tiles of this many indices of every mode but the first (row-major within a
#: tile), so that a pass's scattered rows of those modes stay in a core's cache: a pass over P5's 42390 x 39986
#: x 1506 tensor (10^6 non-zeros, one thread) takes 21.3 ms at rank 6 and 37.3 ms at rank 11 in tiles of 4096,
#: 27.0 and 44.0 ms in row-major order. Data whose later modes are at most this long stay in row-major order (a
#: dense array's unsorted: sorting the 10^7 entries of a long power spectrogram would take a second).
_TILE = 4096

#: The size (entries times components) of a dense matrix from which the gradients that need no value (a
#: trajectory's inner steps, VB's sweeps between bound checks) take their products in single precision
#: (:func:`~skevidence.cp.kernels.passes.single_dense_pass`): half the time of the double ones at large ranks
#: (1660 x 257 at rank 512, one thread: 13.7 ms against 26.9); below, they cost less than the rest of a step.
SINGLE_PRECISION_SIZE = 2**22


def block_bounds(n, n_blocks, *, what="items"):
    """Bounds of ``n_blocks`` contiguous, near-equal groups of ``n`` items (the first ``n % n_blocks`` one larger).

    Returns an int64 array of ``n_blocks + 1`` bounds from 0 to ``n``; group
    ``g`` is ``bounds[g]:bounds[g + 1]``. ``what`` names the items in errors.
    """
    n, n_blocks = check_int("n", n), check_int("n_blocks", n_blocks)
    if n_blocks > n:
        raise ValueError(
            f"n_blocks={n_blocks} is larger than the number of {what} ({n}): every block needs at least one of "
            f"the {what}. Use n_blocks <= {n}."
        )
    sizes = np.full(n_blocks, n // n_blocks, dtype=np.int64)
    sizes[: n % n_blocks] += 1
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


class Blocks(NamedTuple):
    """:class:`CPData` cut into ``B`` groups per mode for the block-parallel chains."""

    #: ``(N, B + 1)`` group bounds of every mode.
    bounds: np.ndarray
    #: The listed entries sorted by block (``(n, N)`` coordinates and values), and block ``q``'s range
    #: ``block_ptr[q]:block_ptr[q + 1]``; block ``(g_0, ..., g_{N-1})`` is ``q = (...(g_0 B + g_1) B ...)``.
    coords: np.ndarray
    vals: np.ndarray
    block_ptr: np.ndarray
    #: The data's constant of every block.
    block_constant: np.ndarray


@dataclass(frozen=True, eq=False)
class CPData:
    r"""An N-way array prepared for the CP family's passes (build it with :meth:`from_array`).

    Attributes
    ----------
    shape : tuple of int
    kappa : float
        The likelihood's switch (:func:`~skevidence.cp.likelihood.likelihood_kappa`).
    coords : ndarray of shape (n, N), int64
        The listed entries' indices, in row-major order of tiles of
        ``_TILE`` indices of every mode but the first, row-major within a
        tile.
    vals : ndarray of shape (n,)
    X : ndarray or None
        The dense float64 array, where the input was dense (and, for Poisson
        counts, at least a fifth of it non-zero).
    constant : float
        :math:`\sum c(x)` over every entry.
    floor : float
        The noise floor added to every entry's mean (0 for counts).
    """

    shape: tuple
    kappa: float
    coords: np.ndarray
    vals: np.ndarray
    X: np.ndarray | None
    constant: float
    floor: float = 0.0

    @classmethod
    def from_array(cls, X, kappa=0.0, *, floor=0.0):
        """Check ``X`` for the likelihood ``kappa`` and prepare it.

        ``X`` is a dense array or a ``scipy.sparse`` matrix or (3-D) ``coo_array``
        of non-negative finite values; duplicate coordinates of a sparse
        input are summed. The Gamma family lists every entry, so its sparse
        input is made dense.
        """
        kappa = float(kappa)
        if sparse.issparse(X):
            X = sparse.coo_array(X)
            X.sum_duplicates()
            if kappa > 0.0:
                X = X.toarray()
        if not (np.isfinite(floor) and floor >= 0.0):
            raise ValueError(f"noise_floor must be a non-negative number, got {floor!r}.")
        check_entries(X, kappa, floor)
        shape = tuple(int(n) for n in X.shape)
        if sparse.issparse(X):
            coords = np.stack([np.asarray(c, dtype=np.int64) for c in X.coords], axis=1)
            vals = np.asarray(X.data, dtype=np.float64)
            keep = vals != 0.0
            coords, vals, dense = coords[keep], vals[keep], None
        else:
            # Writable as well: numba compiles every kernel again for a read-only array (a memmap).
            dense = np.require(X, dtype=np.float64, requirements=["C", "W"])
            coords = np.argwhere(dense != 0.0) if kappa == 0.0 else np.indices(shape).reshape(len(shape), -1).T
            vals = dense[tuple(coords.T)]
            if kappa == 0.0 and vals.size < _LISTED_BELOW * dense.size:
                dense = None
        # Tiles of the later modes longer than _TILE in row-major order, row-major within a tile; a dense array's
        # entries come row-major already, and need sorting only when tiled.
        tiles = [coords[:, m] // _TILE for m in range(len(shape) - 1, 0, -1) if shape[m] > _TILE]
        order = np.lexsort([*coords.T[::-1], *tiles]) if tiles or sparse.issparse(X) else slice(None)
        coords, vals = coords[order], vals[order]
        constant = float(entry_constant(vals, kappa).sum())
        return cls(shape, kappa, np.ascontiguousarray(coords, dtype=np.int64), np.ascontiguousarray(vals), dense,
                   constant, float(floor))

    @property
    def offsets(self):
        """Where each mode's rows start in the stacked ``(sum of the mode sizes, R)`` factors."""
        return np.concatenate([[0], np.cumsum(self.shape)]).astype(np.int64)

    @property
    def n_data(self):
        """Number of entries, zeros included."""
        return math.prod(self.shape)

    @property
    def total(self):
        """Sum of the entries."""
        return float(self.vals.sum())

    @property
    def dense2(self):
        """Whether the passes take the dense matrix through BLAS."""
        return self.X is not None and len(self.shape) == 2

    def single(self, n_components):
        """Whether the gradients that need no value take their products in single precision at this rank."""
        return bool(self.dense2) and self.X.size * n_components >= SINGLE_PRECISION_SIZE

    def pass_args(self):
        """The arguments the likelihood passes take: ``(dense2, X, coords, vals, offsets, kappa, floor)``."""
        X = self.X if self.dense2 else np.zeros((1, 1))
        return self.dense2, X, self.coords, self.vals, self.offsets, self.kappa, self.floor

    def blocks(self, n_blocks):
        """The data cut into ``n_blocks`` contiguous groups per mode (:class:`Blocks`)."""
        B = check_int("n_blocks", n_blocks)
        names = ("rows", "columns", "tubes")
        bounds = np.stack([block_bounds(n, B, what=what) for n, what in zip(self.shape, names)])
        block = np.zeros(self.vals.size, dtype=np.int64)
        for m in range(len(self.shape)):
            block = block * B + np.searchsorted(bounds[m], self.coords[:, m], side="right") - 1
        order = np.argsort(block, kind="stable")
        n_all = B ** len(self.shape)
        block_ptr = np.concatenate([[0], np.cumsum(np.bincount(block, minlength=n_all))]).astype(np.int64)
        constant = np.bincount(block, weights=entry_constant(self.vals, self.kappa), minlength=n_all)
        return Blocks(bounds, np.ascontiguousarray(self.coords[order]), np.ascontiguousarray(self.vals[order]),
                      block_ptr, np.ascontiguousarray(constant, dtype=np.float64))


def count_entries(X, *, n_modes=None, method, advice=""):
    """Validate non-negative integer counts (dense or scipy.sparse) of two or more modes.

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
        The non-zero entries' indices, in :class:`CPData`'s order.
    counts : int64 array of shape (nnz,)
    shape : tuple of int
    """
    if not sparse.issparse(X):
        X = np.asarray(X)
        if X.dtype == object or not (np.issubdtype(X.dtype, np.number) or X.dtype == bool) or np.iscomplexobj(X):
            raise ValueError(f"X must be real numeric counts, got dtype {X.dtype}.")
    if n_modes is not None and len(X.shape) != n_modes:
        raise ValueError(f"X must be {n_modes}-D, got an input of shape {X.shape}.")
    data = CPData.from_array(X)
    fractional = data.vals != np.round(data.vals)
    if np.any(fractional):
        raise ValueError(f"{method} needs integer counts; X has non-integer entries (e.g. "
                         f"{data.vals[fractional][0]:g}, {int(fractional.sum())} of them): {advice}")
    return data.coords, data.vals.astype(np.int64), data.shape
