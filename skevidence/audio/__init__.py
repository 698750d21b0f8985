"""Audio input: read recordings and turn them into magnitude spectrograms.

:func:`load_audio` reads a file as a float waveform; :class:`SpectrogramTransformer`
turns waveforms into the ``(n_frames, n_freq)`` magnitude spectrogram that
:class:`~skevidence.BayesianNMFRankSelector` factorises. Reading formats other
than WAV needs the optional dependency soundfile (``pip install "skevidence[audio]"``).
"""

from ._io import load_audio
from ._spectrogram import SpectrogramTransformer, quantization_step

__all__ = ["SpectrogramTransformer", "load_audio", "quantization_step"]
