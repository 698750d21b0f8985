"""The bundled example clip: it loads, has the documented length and rate, and its credit."""

import hashlib
from pathlib import Path

import numpy as np
import pytest
from scipy.io import wavfile

from skevidence.audio import SpectrogramTransformer
from skevidence.datasets import (
    EXAMPLE_AUDIO,
    example_audio_credit,
    example_audio_path,
    load_example_audio,
)

#: What the docstrings and the user guide promise about each clip.
DOCUMENTED = {"trumpet": dict(sample_rate=11025, n_samples=58801, n_frames=231)}


def test_every_clip_is_documented():
    assert set(EXAMPLE_AUDIO) == set(DOCUMENTED)


@pytest.mark.parametrize("name", EXAMPLE_AUDIO)
def test_clip_loads_with_the_documented_shape(name):
    path = example_audio_path(name)
    assert isinstance(path, Path) and path.is_file() and path.suffix == ".wav"
    assert path.stat().st_size < 300_000
    rate, raw = wavfile.read(path)
    assert raw.dtype == np.int16 and raw.ndim == 1  # 16-bit mono, as documented
    waveform, sample_rate = load_example_audio(name)
    doc = DOCUMENTED[name]
    assert sample_rate == rate == doc["sample_rate"]
    assert waveform.shape == (doc["n_samples"],) and waveform.dtype == np.float64
    np.testing.assert_array_equal(waveform, raw / 32768.0)
    assert 0.1 < np.abs(waveform).max() < 1.0  # neither silent nor clipped
    assert load_example_audio(name, dtype=np.float32)[0].dtype == np.float32
    assert SpectrogramTransformer().transform(waveform).shape == (doc["n_frames"], 257)


@pytest.mark.parametrize("name", EXAMPLE_AUDIO)
def test_clip_has_its_credit_file(name):
    credit_path = example_audio_path(name).with_suffix(".txt")
    assert credit_path.is_file()
    credit = example_audio_credit(name)
    assert credit == credit_path.read_text(encoding="utf-8")
    for field in ("Title:", "Author:", "Source:", "License:", "Changes"):
        assert field in credit


def test_trumpet_credit_names_author_and_license():
    credit = example_audio_credit("trumpet")
    assert "Mihai Sorohan" in credit and "https://freesound.org/s/77711/" in credit
    assert "CC BY 3.0" in credit and "resample_poly" in credit


def test_trumpet_is_the_credited_recording():
    """The bundled file is the one whose changes the credit describes (no silent re-encode)."""
    digest = hashlib.sha256(example_audio_path("trumpet").read_bytes()).hexdigest()
    assert digest == "a13cbda4db6934e91ee922b6b4644896c731b913f885c6f3249bc8f3f7ffea1e"


@pytest.mark.parametrize("bad", ["violin", "", None, 3])
def test_unknown_names_are_refused(bad):
    for function in (example_audio_path, example_audio_credit, load_example_audio):
        with pytest.raises(ValueError, match="available ones are \\['trumpet'\\]"):
            function(bad)
