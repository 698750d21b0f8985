"""Synthetic melodies of harmonic notes: recordings whose number of distinct sources is known."""

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["make_harmonic_melody"]


def make_harmonic_melody(n_notes=4, *, n_events=None, sample_rate=8000, note_duration=0.25, n_harmonics=6,
                         noise_level=1e-3, peak=0.5, random_state=None):
    """A waveform of ``n_notes`` distinct harmonic notes, each played several times with a decaying envelope.

    Every note is a fundamental drawn from a chromatic scale between A3 and
    A5 (no two the same) with ``n_harmonics`` partials of decaying, note-specific
    amplitudes; its events start at random, last ``note_duration`` seconds
    with an exponential decay, and may overlap. A faint white noise floor
    (``noise_level`` of the peak) keeps silences from being digital zeros.
    An NMF of its power spectrogram needs about one component a note, so
    the recording's rank is known: the counting check of the rank selectors.

    Parameters
    ----------
    n_notes : int, default=4
        Distinct notes (at most 25).
    n_events : int or None, default=None
        Note onsets in all; ``None`` is ``3 * n_notes`` (every note at least twice).
    sample_rate : int, default=8000
    note_duration : float, default=0.25
        Seconds a note sounds.
    n_harmonics : int, default=6
        Partials of every note (those above the Nyquist frequency are dropped).
    noise_level : float, default=1e-3
        Standard deviation of the noise floor, relative to the peak.
    peak : float, default=0.5
        Largest absolute sample of the returned waveform.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    waveform : ndarray of shape (n_samples,)
    notes : ndarray of shape (n_notes,)
        The fundamentals in Hz.

    Examples
    --------
    >>> from skevidence.datasets import make_harmonic_melody
    >>> x, notes = make_harmonic_melody(3, random_state=0)
    >>> x.shape, notes.shape
    ((12800,), (3,))
    """
    if not (isinstance(n_notes, (int, np.integer)) and 1 <= n_notes <= 25):
        raise ValueError(f"n_notes must be an integer from 1 to 25, got {n_notes!r}.")
    rng = check_random_state(random_state)
    n_events = 3 * n_notes if n_events is None else int(n_events)
    if n_events < n_notes:
        raise ValueError(f"n_events={n_events} cannot play each of the {n_notes} notes.")
    notes = 220.0 * 2.0 ** (rng.choice(25, size=n_notes, replace=False) / 12.0)
    partials = rng.uniform(0.3, 1.0, size=(n_notes, n_harmonics)) / np.arange(1, n_harmonics + 1)
    n_note = int(note_duration * sample_rate)
    # Every note at least twice (or once if n_events < 2 n_notes), the rest at random.
    order = np.concatenate([np.arange(n_notes)] * min(2, n_events // n_notes))
    order = rng.permutation(np.concatenate([order, rng.randint(n_notes, size=n_events - order.size)]))
    hop = int(0.6 * n_note)
    waveform = np.zeros(hop * n_events + n_note)
    t = np.arange(n_note) / sample_rate
    envelope = np.exp(-t / (0.3 * note_duration)) * np.minimum(1.0, t * sample_rate / 40.0)
    for event, note in enumerate(order):
        f = notes[note] * np.arange(1, n_harmonics + 1)
        f = f[f < sample_rate / 2]  # the partials below the Nyquist frequency, each with a random phase
        phases = rng.uniform(0, 2 * np.pi, size=f.size)
        tone = partials[note, :f.size] @ np.sin(2 * np.pi * f[:, np.newaxis] * t + phases[:, np.newaxis])
        start = event * hop + rng.randint(0, hop // 4)
        waveform[start:start + n_note] += envelope * tone
    waveform /= np.abs(waveform).max()
    waveform += noise_level * rng.standard_normal(waveform.size)
    return peak * waveform / np.abs(waveform).max(), notes
