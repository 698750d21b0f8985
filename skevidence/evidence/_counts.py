"""Validating count arrays: the one check behind Chib's method, the SMC and referenced TI."""

import numpy as np
from scipy import sparse

__all__ = ["count_entries"]


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
