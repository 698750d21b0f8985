"""Bundled example data: short recordings with their credits.

:data:`EXAMPLE_AUDIO` lists the clips; :func:`load_example_audio` reads one as
a waveform, :func:`example_audio_path` gives its file and
:func:`example_audio_credit` its author, source and license.
:func:`load_event_tensor` and :func:`event_count_tensor` turn event logs
(sender, receiver, time) into sparse count tensors for PARAFAC.
:func:`make_harmonic_melody` writes a melody of a known number of notes.
"""

from ._base import EXAMPLE_AUDIO, example_audio_credit, example_audio_path, load_example_audio
from ._events import TIME_BINS, event_count_tensor, load_event_tensor
from ._melody import make_harmonic_melody

__all__ = ["EXAMPLE_AUDIO", "TIME_BINS", "event_count_tensor", "example_audio_credit", "example_audio_path",
           "load_event_tensor", "load_example_audio", "make_harmonic_melody"]
