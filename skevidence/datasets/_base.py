"""The example recordings that ship with skevidence."""

from pathlib import Path

import numpy as np

__all__ = ["EXAMPLE_AUDIO", "example_audio_credit", "example_audio_path", "load_example_audio"]

#: Names of the bundled example clips, for :func:`example_audio_path` and
#: :func:`load_example_audio`. Each ``<name>.wav`` has a ``<name>.txt``
#: credit and license file next to it.
EXAMPLE_AUDIO = ("trumpet",)


def example_audio_path(name="trumpet"):
    """Path of a bundled example recording (16-bit mono WAV).

    Parameters
    ----------
    name : str, default="trumpet"
        One of :data:`EXAMPLE_AUDIO`:

        - ``"trumpet"``: a solo trumpet phrase by Mihai Sorohan (CC BY 3.0),
          5.33 s at 11025 Hz (58801 samples), 231 frames of 257 bins with
          :class:`~skevidence.audio.SpectrogramTransformer`'s defaults.

    Returns
    -------
    path : pathlib.Path
        The WAV file.

    See Also
    --------
    load_example_audio : Read it.
    example_audio_credit : Its author, source, license and changes.

    Examples
    --------
    >>> from skevidence.datasets import example_audio_path
    >>> example_audio_path("trumpet").name
    'trumpet.wav'
    """
    if not isinstance(name, str) or name not in EXAMPLE_AUDIO:
        raise ValueError(f"Unknown example clip {name!r}; the available ones are {list(EXAMPLE_AUDIO)}.")
    return Path(__file__).resolve().parent / "data" / f"{name}.wav"


def example_audio_credit(name="trumpet"):
    """Credit and license text of a bundled example recording.

    Parameters
    ----------
    name : str, default="trumpet"
        One of :data:`EXAMPLE_AUDIO`.

    Returns
    -------
    credit : str
        Title, author, source, license and the changes made to the recording.

    See Also
    --------
    example_audio_path : The recording itself.

    Examples
    --------
    >>> from skevidence.datasets import example_audio_credit
    >>> "CC BY 3.0" in example_audio_credit("trumpet")
    True
    """
    return example_audio_path(name).with_suffix(".txt").read_text(encoding="utf-8")


def load_example_audio(name="trumpet", *, dtype=np.float64):
    """Read a bundled example recording as a float waveform.

    Parameters
    ----------
    name : str, default="trumpet"
        One of :data:`EXAMPLE_AUDIO` (see :func:`example_audio_path`).
    dtype : floating dtype, default=np.float64
        Type of the returned samples.

    Returns
    -------
    waveform : ndarray of shape (n_samples,)
        Samples in [-1, 1) (the 16-bit samples divided by 32768).
    sample_rate : int
        Samples per second.

    See Also
    --------
    skevidence.audio.load_audio : Read any recording.
    skevidence.audio.SpectrogramTransformer : Its magnitude spectrogram.

    Examples
    --------
    >>> from skevidence.datasets import load_example_audio
    >>> waveform, sample_rate = load_example_audio("trumpet")
    >>> waveform.shape, sample_rate
    ((58801,), 11025)
    """
    from ..audio import load_audio

    return load_audio(example_audio_path(name), mono=True, dtype=dtype)
