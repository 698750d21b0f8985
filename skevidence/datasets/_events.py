"""Count tensors (sender x receiver x time bin) from event logs."""

from pathlib import Path

import numpy as np
from scipy import sparse
from sklearn.utils import Bunch

__all__ = ["TIME_BINS", "event_count_tensor", "load_event_tensor"]

#: Named time bins, in seconds.
TIME_BINS = {"hour": 3600, "day": 86400, "week": 7 * 86400, "month": 30 * 86400}


def event_count_tensor(senders, receivers, times, *, bin="week"):
    """Count events per (sender, receiver, time bin): a sparse 3-D count tensor.

    Senders and receivers share one index (a node is the same row and column),
    numbered ``0 .. n_nodes - 1`` in the order of their sorted labels; time
    bins start at the earliest event. Events in the same cell are summed.

    Parameters
    ----------
    senders, receivers : array-like of shape (n_events,)
        Node labels (any sortable values).
    times : array-like of shape (n_events,)
        Event times in seconds.
    bin : {"hour", "day", "week", "month"} or float, default="week"
        Width of a time bin (a month is 30 days), or a number of seconds.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``tensor`` (:class:`scipy.sparse.coo_array` of shape
        ``(n_nodes, n_nodes, n_bins)``, float64 counts, duplicates summed),
        ``nodes`` (the label of every index), ``bin_edges`` (``n_bins + 1``
        times in seconds) and ``n_events``.

    Examples
    --------
    >>> from skevidence.datasets import event_count_tensor
    >>> data = event_count_tensor(["a", "b", "a"], ["b", "a", "b"], [0, 10, 20], bin=60)
    >>> data.tensor.shape, data.tensor.todense()[0, 1, 0]
    ((2, 2, 1), np.float64(2.0))
    """
    senders, receivers = np.asarray(senders), np.asarray(receivers)
    times = np.asarray(times, dtype=np.float64)
    if not (senders.ndim == receivers.ndim == times.ndim == 1 and senders.size == receivers.size == times.size):
        raise ValueError("senders, receivers and times must be 1-D and of the same length, got shapes "
                         f"{senders.shape}, {receivers.shape} and {times.shape}.")
    if times.size == 0:
        raise ValueError("There are no events: a count tensor needs at least one.")
    if not np.all(np.isfinite(times)):
        raise ValueError("times contain NaN or infinity; remove those events.")
    width = TIME_BINS.get(bin, bin) if isinstance(bin, str) else bin
    if isinstance(width, (str, bool)) or not np.isscalar(width) or not (np.isfinite(width) and width > 0):
        raise ValueError(f"bin must be one of {sorted(TIME_BINS)} or a positive number of seconds, got {bin!r}.")
    labels = np.concatenate([senders, receivers])
    if labels.dtype.kind in "fc" and not np.all(np.isfinite(labels)):
        raise ValueError("senders or receivers contain NaN or infinity; every event needs two node labels.")
    try:
        nodes, index = np.unique(labels, return_inverse=True)
    except TypeError as exc:
        raise ValueError(f"node labels must be mutually comparable (all numbers or all strings): {exc}") from exc
    start = times.min()
    time_bin = np.floor((times - start) / width).astype(np.int64)
    n_bins = int(time_bin.max()) + 1
    n = senders.size
    tensor = sparse.coo_array((np.ones(n), (index[:n], index[n:], time_bin)), shape=(nodes.size, nodes.size, n_bins))
    tensor.sum_duplicates()
    return Bunch(tensor=tensor, nodes=nodes, bin_edges=start + width * np.arange(n_bins + 1), n_events=n)


def load_event_tensor(path, *, bin="week"):
    """Read an event log (``sender receiver time`` per line) into a sparse count tensor.

    The format of the SNAP and KONECT temporal networks: whitespace-separated
    columns, optionally gzip-compressed (``.gz``); lines starting with ``%``
    or ``#`` are comments, and columns after the third (KONECT's weights) are
    ignored.

    Parameters
    ----------
    path : str or path-like
        The file.
    bin : {"hour", "day", "week", "month"} or float, default="week"
        Width of a time bin (see :func:`event_count_tensor`).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        As :func:`event_count_tensor` returns, plus ``path``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No event log at {path}: check the path.")
    try:  # numpy decompresses a .gz file itself
        table = np.loadtxt(path, comments=("%", "#"), usecols=(0, 1, 2), ndmin=2, dtype=np.float64)
    except (OSError, ValueError) as exc:
        raise ValueError(f"Could not read {path} as an event log of 'sender receiver time' lines: {exc}") from exc
    senders, receivers = table[:, 0].astype(np.int64), table[:, 1].astype(np.int64)
    return Bunch(**event_count_tensor(senders, receivers, table[:, 2], bin=bin), path=path)
