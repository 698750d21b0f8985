"""Read audio files into floating-point waveforms."""

from pathlib import Path

import numpy as np

__all__ = ["load_audio"]

_SOUNDFILE_HINT = 'install soundfile with `pip install "skevidence[audio]"`'


def _read_soundfile(path, reason):
    try:
        import soundfile
    except ImportError as exc:
        raise ImportError(f"Reading '{path}' needs the optional dependency soundfile ({reason}): "
                          f"{_SOUNDFILE_HINT}.") from exc
    try:
        # soundfile scales integer formats by the same rule as load_audio's WAV branch.
        data, rate = soundfile.read(path, dtype="float64", always_2d=True)
    except (RuntimeError, TypeError, ValueError) as exc:  # LibsndfileError is a RuntimeError
        raise ValueError(f"soundfile cannot read '{path}': {exc}") from exc
    return data, int(rate)


def load_audio(path, *, mono=True, dtype=np.float64):
    """Read an audio file as a floating-point waveform and its sample rate.

    WAV files are read with :func:`scipy.io.wavfile.read`; integer PCM is
    scaled to floats in [-1, 1): int16 samples are divided by 32768, int32
    (and 24-bit, which scipy returns as int32) by :math:`2^{31}`, and 8-bit
    unsigned samples are centred, ``(x - 128) / 128``. Float WAV files are
    kept as they are. Other formats (FLAC, OGG, ...) and WAV encodings scipy
    does not read (compressed WAV) go through the optional dependency
    `soundfile <https://python-soundfile.readthedocs.io>`_
    (``pip install "skevidence[audio]"``), which scales integers the same way.

    Parameters
    ----------
    path : str or os.PathLike
        The audio file.
    mono : bool, default=True
        Average the channels into one (a stereo recording becomes
        ``(left + right) / 2``). With ``False`` the channels are kept.
    dtype : floating dtype, default=np.float64
        Floating-point type of the returned waveform.

    Returns
    -------
    waveform : ndarray of shape (n_samples,) or (n_samples, n_channels)
        The samples; 1-D when ``mono=True``, otherwise 2-D with one column
        per channel (a single column for a mono file).
    sample_rate : int
        Samples per second.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ImportError
        If the file is not a WAV file scipy reads and soundfile is not installed.
    ValueError
        If the file cannot be decoded, holds no samples, or holds NaN or
        infinite samples.

    See Also
    --------
    SpectrogramTransformer : Turn the waveform into a magnitude spectrogram.
    skevidence.datasets.load_example_audio : The bundled example clip.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.io import wavfile
    >>> from skevidence.audio import load_audio
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tone.wav")
    >>> wavfile.write(path, 8000, np.array([0, 16384, -32768], dtype=np.int16))
    >>> load_audio(path)
    (array([ 0. ,  0.5, -1. ]), 8000)
    """
    if not isinstance(mono, (bool, np.bool_)):
        raise TypeError(f"mono must be True or False, got {mono!r}.")
    dtype = np.dtype(dtype)  # numpy names a dtype it does not know
    if dtype.kind != "f":
        raise TypeError(f"dtype must be a floating-point type such as np.float64, got {dtype}.")
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"No such audio file: '{path}'.")
    if path.is_dir():
        raise IsADirectoryError(f"'{path}' is a directory, not an audio file.")

    if path.suffix.lower() in (".wav", ".wave"):  # what scipy.io.wavfile reads; everything else goes to soundfile
        from scipy.io import wavfile

        try:
            rate, data = wavfile.read(path)
        except ValueError as exc:
            # Compressed WAV encodings (ADPCM, mu-law...) are beyond scipy, not soundfile.
            try:
                data, rate = _read_soundfile(path, "scipy cannot read this WAV encoding")
            except ImportError:
                raise ValueError(f"scipy cannot read the WAV file '{path}' ({exc}); soundfile may: "
                                 f"{_SOUNDFILE_HINT}.") from exc
        if data.dtype.kind in "iu":
            # b-bit PCM over 2 ** (b - 1) (float64 holds every int32 exactly); 8-bit WAV is unsigned, centred first.
            half = 2.0 ** (8 * data.dtype.itemsize - 1)
            data = (data - (half if data.dtype.kind == "u" else 0.0)) / half
    else:
        data, rate = _read_soundfile(path, f"scipy reads only WAV, this is {path.suffix or 'a file without suffix'}")

    if data.ndim == 1:
        data = data[:, np.newaxis]
    if data.shape[0] == 0 or data.shape[1] == 0:
        raise ValueError(f"'{path}' holds no audio samples (empty recording).")
    if not np.all(np.isfinite(data)):
        raise ValueError(f"'{path}' holds NaN or infinite samples ({np.count_nonzero(~np.isfinite(data))} of "
                         f"{data.size}); repair the file, e.g. replace them with zeros, before loading it.")
    if mono:
        data = data.mean(axis=1, dtype=np.float64)
    return np.ascontiguousarray(data, dtype=dtype), rate
