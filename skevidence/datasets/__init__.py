"""Bundled example data: short recordings with their credits.

:data:`EXAMPLE_AUDIO` lists the clips; :func:`load_example_audio` reads one as
a waveform, :func:`example_audio_path` gives its file and
:func:`example_audio_credit` its author, source and license.
"""

from ._base import EXAMPLE_AUDIO, example_audio_credit, example_audio_path, load_example_audio

__all__ = ["EXAMPLE_AUDIO", "example_audio_credit", "example_audio_path", "load_example_audio"]
