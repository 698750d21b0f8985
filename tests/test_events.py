"""Event logs to sparse count tensors (skevidence.datasets)."""

import gzip

import numpy as np
import pytest

from skevidence.datasets import event_count_tensor, load_event_tensor


def _dense_counts(senders, receivers, times, width):
    """Brute-force twin: one loop over the events into a dense array."""
    nodes = sorted(set(senders) | set(receivers))
    index = {node: k for k, node in enumerate(nodes)}
    start = min(times)
    bins = [int((t - start) // width) for t in times]
    out = np.zeros((len(nodes), len(nodes), max(bins) + 1))
    for s, r, b in zip(senders, receivers, bins):
        out[index[s], index[r], b] += 1
    return out


def test_counts_match_a_brute_force_count():
    rng = np.random.default_rng(0)
    senders = rng.integers(10, 30, size=500)
    receivers = rng.integers(5, 25, size=500)
    times = rng.uniform(1e9, 1e9 + 60 * 86400, size=500)
    data = event_count_tensor(senders, receivers, times, bin="week")
    expected = _dense_counts(senders.tolist(), receivers.tolist(), times.tolist(), 7 * 86400)
    np.testing.assert_array_equal(data.tensor.todense(), expected)
    assert data.tensor.nnz == np.count_nonzero(expected)  # duplicates summed
    assert data.n_events == 500
    np.testing.assert_array_equal(data.nodes, np.unique(np.concatenate([senders, receivers])))
    assert data.bin_edges[0] == times.min() and data.bin_edges.size == expected.shape[2] + 1
    assert data.bin_edges[-1] > times.max()


def test_load_event_tensor_reads_gzip_comments_and_extra_columns(tmp_path):
    path = tmp_path / "log.txt.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("% sender receiver weight time\n3 4 0 1\n4 3 3600 1\n3 4 7200 1\n3 4 90000 1\n")
    data = load_event_tensor(path, bin="day")
    dense = data.tensor.todense()
    assert dense.shape == (2, 2, 2)
    assert dense[0, 1, 0] == 2 and dense[1, 0, 0] == 1 and dense[0, 1, 1] == 1
    assert dense.sum() == 4


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(senders=[], receivers=[], times=[]), "no events"),
        (dict(senders=[1, 2], receivers=[1], times=[0, 1]), "same length"),
        (dict(senders=[1], receivers=[2], times=[np.nan]), "NaN"),
        (dict(senders=[1], receivers=[2], times=[0], bin="fortnight"), "bin must be"),
        (dict(senders=[1], receivers=[2], times=[0], bin=0), "bin must be"),
    ],
)
def test_bad_events_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        event_count_tensor(**kwargs)


def test_missing_or_unreadable_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="No event log"):
        load_event_tensor(tmp_path / "nope.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("a b c\n")
    with pytest.raises(ValueError, match="Could not read"):
        load_event_tensor(bad)
