"""load_audio and SpectrogramTransformer: against direct NumPy computations, bad input, API."""

import pickle
import sys

import numpy as np
import pytest
from scipy.io import wavfile
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.utils import estimator_checks

from skevidence import BayesianNMFRankSelector
from skevidence.audio import SpectrogramTransformer, load_audio

# -- load_audio ----------------------------------------------------------------


def _write(tmp_path, name, data, rate=8000):
    path = tmp_path / name
    wavfile.write(path, rate, data)
    return path


@pytest.mark.parametrize(
    "dtype, to_float",
    [
        (np.int16, lambda x: x / 32768.0),
        (np.int32, lambda x: x / 2.0**31),
        (np.uint8, lambda x: (x - 128.0) / 128.0),
        (np.float32, lambda x: x.astype(np.float64)),
    ],
)
def test_wav_round_trip_is_exact(tmp_path, rng, dtype, to_float):
    if np.dtype(dtype).kind == "f":
        samples = rng.uniform(-1, 1, size=500).astype(dtype)
    else:
        info = np.iinfo(dtype)
        samples = rng.integers(info.min, info.max, size=500, endpoint=True).astype(dtype)
        samples[:2] = info.min, info.max  # the extremes map to -1 and just below 1
    path = _write(tmp_path, "x.wav", samples, rate=11025)
    waveform, rate = load_audio(path)
    assert rate == 11025 and isinstance(rate, int)
    assert waveform.dtype == np.float64 and waveform.shape == (500,)
    np.testing.assert_array_equal(waveform, to_float(samples.astype(np.float64)))
    if dtype is not np.float32:
        assert waveform[0] == -1.0 and waveform[1] < 1.0


def test_stereo_is_averaged_or_kept(tmp_path, rng):
    stereo = rng.integers(-32768, 32767, size=(300, 2), endpoint=True).astype(np.int16)
    path = _write(tmp_path, "stereo.wav", stereo, rate=16000)
    both, rate = load_audio(path, mono=False)
    assert rate == 16000
    np.testing.assert_array_equal(both, stereo / 32768.0)
    mono, _ = load_audio(path)
    np.testing.assert_array_equal(mono, (stereo[:, 0] / 32768.0 + stereo[:, 1] / 32768.0) / 2)
    single, _ = load_audio(_write(tmp_path, "mono.wav", stereo[:, 0]), mono=False)
    assert single.shape == (300, 1)


def test_load_audio_dtype(tmp_path):
    path = _write(tmp_path, "x.wav", np.array([-32768, 0, 16384], dtype=np.int16))
    waveform, _ = load_audio(path, dtype=np.float32)
    assert waveform.dtype == np.float32
    np.testing.assert_array_equal(waveform, np.array([-1.0, 0.0, 0.5], dtype=np.float32))
    with pytest.raises(TypeError, match="floating-point"):
        load_audio(path, dtype=np.int16)
    with pytest.raises(TypeError, match="mono"):
        load_audio(path, mono="yes")


def test_load_audio_bad_files(tmp_path):
    missing = tmp_path / "nowhere.wav"
    with pytest.raises(FileNotFoundError, match="nowhere.wav"):
        load_audio(missing)
    with pytest.raises(ValueError, match="no audio samples"):
        load_audio(_write(tmp_path, "empty.wav", np.zeros(0, dtype=np.int16)))
    with pytest.raises(ValueError, match="NaN or infinite"):
        load_audio(_write(tmp_path, "nan.wav", np.array([0.0, np.nan, 0.5], dtype=np.float32)))
    garbage = tmp_path / "garbage.wav"
    garbage.write_bytes(b"this is not a RIFF file at all")
    with pytest.raises(ValueError, match="garbage.wav"):
        load_audio(garbage)
    with pytest.raises(IsADirectoryError, match="is a directory"):
        load_audio(tmp_path)


def test_other_formats_need_soundfile(tmp_path, monkeypatch):
    path = tmp_path / "clip.flac"
    path.write_bytes(b"fLaC")
    monkeypatch.setitem(sys.modules, "soundfile", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r'pip install "skevidence\[audio\]"'):
        load_audio(path)


# -- SpectrogramTransformer against an explicit NumPy computation ------------------


def _periodic(name, n):
    """Periodic ("DFT-even") window from NumPy's symmetric one of length n + 1."""
    return {"hamming": np.hamming, "hann": np.hanning}[name](n + 1)[:-1]


def naive_frames(x, n_fft, hop):
    """Every frame centred on a multiple of ``hop`` that overlaps the signal, zero-padded."""
    half, n = n_fft // 2, len(x)
    frames = []
    for m in range(-n_fft // hop - 2, (n + n_fft) // hop + 2):  # a range wide enough
        start = m * hop - half
        if start + n_fft <= 0 or start >= n:
            continue
        frame = np.zeros(n_fft)
        lo, hi = max(start, 0), min(start + n_fft, n)
        frame[lo - start : hi - start] = x[lo:hi]
        frames.append(frame)
    return np.array(frames)


def naive_spectrogram(x, n_fft=512, hop=256, window="hamming", c=32768.0, power=1.0):
    frames = naive_frames(x, n_fft, hop)
    return (c * np.abs(np.fft.rfft(frames * _periodic(window, n_fft), axis=1))) ** power


@pytest.mark.parametrize(
    "n_fft, hop, window, n",
    [(512, None, "hamming", 4000), (512, 100, "hamming", 3001), (256, 64, "hann", 1000),
     (255, 255, "hamming", 900), (64, 7, "hann", 300)],
)  # fmt: skip
def test_spectrogram_matches_explicit_frames(rng, n_fft, hop, window, n):
    x = rng.uniform(-0.5, 0.5, size=n)
    spec = SpectrogramTransformer(n_fft=n_fft, hop_length=hop, window=window)
    S = spec.fit_transform(x)
    expected = naive_spectrogram(x, n_fft, n_fft // 2 if hop is None else hop, window)
    assert S.shape == expected.shape and S.shape[1] == n_fft // 2 + 1
    np.testing.assert_allclose(S, expected, rtol=1e-10, atol=1e-9 * expected.max())
    assert S.flags.c_contiguous and S.dtype == np.float64
    Z = spec.stft(x)
    frames = naive_frames(x, n_fft, spec.hop_length_)
    np.testing.assert_allclose(Z, np.fft.rfft(frames * spec.window_, axis=1), atol=1e-10)


def test_default_framing_counts():
    """ceil((n + 256) / 256) frames of 257 bins (see the class Notes)."""
    spec = SpectrogramTransformer()
    for n in (512, 513, 767, 768, 8000, 8001):
        assert spec.transform(np.full(n, 0.1)).shape == (-(-(n + 256) // 256), 257)


def test_sine_peaks_at_its_frequency():
    rate, freq = 8000, 1000.0
    x = 0.25 * np.sin(2 * np.pi * freq * np.arange(rate) / rate)
    spec = SpectrogramTransformer(sample_rate=rate).fit(x)
    S = spec.transform(x)
    assert np.all(spec.frequencies_[S[2:-2].argmax(axis=1)] == freq)
    # A full-window sinusoid of amplitude a has peak |rfft| = a * sum(window) / 2.
    np.testing.assert_allclose(S[10].max(), 32768 * 0.25 * spec.window_.sum() / 2, rtol=1e-9)


@pytest.mark.parametrize(
    "n_fft, hop, window",
    [(512, None, "hamming"), (512, 100, "hamming"), (256, 128, "hann"), (255, 50, ("kaiser", 8.0))],
)
def test_istft_inverts_stft(rng, n_fft, hop, window):
    x = rng.uniform(-1, 1, size=3333)
    spec = SpectrogramTransformer(n_fft=n_fft, hop_length=hop, window=window)
    Z = spec.stft(x)
    assert np.iscomplexobj(Z) and Z.shape == (spec.transform(x).shape[0], n_fft // 2 + 1)
    y = spec.istft(Z, len(x))
    assert y.shape == x.shape and y.dtype == np.float64
    np.testing.assert_allclose(y, x, rtol=0, atol=1e-10)


def test_transform_is_scaled_stft_magnitude(rng):
    x = rng.uniform(-1, 1, size=2000)
    spec = SpectrogramTransformer(scale=3.0, power=2.0)
    np.testing.assert_allclose(spec.transform(x), (3.0 * np.abs(spec.stft(x))) ** 2, rtol=1e-12)


def test_list_of_waveforms_is_stacked_frame_wise(rng):
    waves = [rng.uniform(-1, 1, size=n) for n in (600, 1500, 900)]
    for scale in ("int16", "peak", 2.5):
        spec = SpectrogramTransformer(scale=scale)
        stacked = spec.fit_transform(waves)
        np.testing.assert_array_equal(stacked, np.vstack([spec.transform(w) for w in waves]))
    assert stacked.shape[0] == sum(-(-(n + 256) // 256) for n in (600, 1500, 900))
    np.testing.assert_array_equal(spec.transform(tuple(waves)), stacked)


def test_two_d_single_recording_is_flattened(rng):
    x = rng.uniform(-1, 1, size=1000)
    spec = SpectrogramTransformer()
    expected = spec.transform(x)
    np.testing.assert_array_equal(spec.transform(x[np.newaxis, :]), expected)
    np.testing.assert_array_equal(spec.transform(x[:, np.newaxis]), expected)
    np.testing.assert_array_equal(spec.transform(list(x)), expected)  # a list of numbers


def test_scale_is_linear_and_int16_is_full_scale(rng):
    x = rng.uniform(-0.5, 0.5, size=1200)
    base = SpectrogramTransformer(scale=1.0).transform(x)
    expected = naive_spectrogram(x, c=1.0)
    np.testing.assert_allclose(base, expected, rtol=1e-10, atol=1e-10 * expected.max())
    for c in (1e-3, 7.0, 1e4):
        scaled = SpectrogramTransformer(scale=c).transform(x)
        np.testing.assert_allclose(scaled, c * base, rtol=1e-12)
    int16 = SpectrogramTransformer(scale="int16").transform(x)
    np.testing.assert_allclose(int16, 32768 * base, rtol=1e-12)
    peak = np.abs(x).max()
    np.testing.assert_allclose(
        SpectrogramTransformer(scale="peak").transform(x), 32768 / peak * base, rtol=1e-12
    )
    # "peak" forgets the level of the recording, "int16" keeps it.
    np.testing.assert_allclose(
        SpectrogramTransformer(scale="peak").transform(0.1 * x),
        SpectrogramTransformer(scale="peak").transform(x), rtol=1e-12,
    )  # fmt: skip
    power = SpectrogramTransformer(power=2.0).transform(x)
    np.testing.assert_allclose(power, (32768 * base) ** 2, rtol=1e-12)


def test_raw_integer_samples_warn_with_int16_scale():
    x = np.round(10000 * np.sin(np.arange(2000) / 5)).astype(np.int16)
    with pytest.warns(UserWarning, match="waveform X reaches 10000.*Divide raw int16 samples by"):
        SpectrogramTransformer().transform(x)
    np.testing.assert_allclose(
        SpectrogramTransformer(scale=1.0).transform(x),
        SpectrogramTransformer().transform(x / 32768.0),
        rtol=1e-12,
    )


def test_fitted_attributes_and_feature_names():
    x = np.zeros(1000)
    spec = SpectrogramTransformer(n_fft=8, sample_rate=8000).fit(x)
    assert spec.n_freq_ == 5 and spec.hop_length_ == 4
    np.testing.assert_array_equal(spec.frequencies_, [0, 1000, 2000, 3000, 4000])
    np.testing.assert_allclose(spec.window_, _periodic("hamming", 8), rtol=1e-14)
    assert spec.get_feature_names_out().tolist() == ["0Hz", "1000Hz", "2000Hz", "3000Hz", "4000Hz"]
    unitless = SpectrogramTransformer(n_fft=8).fit(x)
    np.testing.assert_array_equal(unitless.frequencies_, [0, 0.125, 0.25, 0.375, 0.5])
    assert unitless.get_feature_names_out().tolist() == [f"freq{k}" for k in range(5)]
    fine = SpectrogramTransformer(n_fft=2**16, sample_rate=44100.0).get_feature_names_out()
    assert len(set(fine)) == fine.size == 2**15 + 1
    assert SpectrogramTransformer(window=np.ones(8), n_fft=8).fit(x).window_.tolist() == [1.0] * 8


# -- bad input ------------------------------------------------------------------


@pytest.mark.parametrize(
    "X, match",
    [
        (np.array([0.1, np.nan] + [0.0] * 600), "NaN or infinity"),
        (np.array([0.1, np.inf] + [0.0] * 600), "NaN or infinity"),
        (np.array([]), "empty"),
        ([], "empty list"),
        (np.zeros((2, 600)), "shape \\(2, 600\\)"),
        (np.zeros((600, 2)), "Mix a multichannel recording down"),
        (np.zeros((1, 600, 1)), "shape \\(1, 600, 1\\)"),
        (np.zeros(100), "100 samples, fewer than n_fft=512"),
        ([np.zeros(600), np.zeros(10)], "waveform 1 of X has 10 samples"),
        ([np.zeros(600), 0.5], "mixes numbers and arrays"),
        (np.float64(0.5), "shape \\(\\)"),
    ],
)
def test_bad_waveforms(X, match):
    with pytest.raises(ValueError, match=match):
        SpectrogramTransformer().fit(X)
    with pytest.raises(ValueError, match=match):
        SpectrogramTransformer().transform(X)


def test_bad_waveform_types():
    import scipy.sparse as sp

    with pytest.raises(TypeError, match="complex"):
        SpectrogramTransformer().transform(np.ones(600, dtype=complex))
    with pytest.raises(TypeError, match="must hold numbers"):
        SpectrogramTransformer().transform(np.array(["a"] * 600))
    with pytest.raises(TypeError, match="sparse"):
        SpectrogramTransformer().transform(sp.csr_matrix(np.ones((1, 600))))
    with pytest.raises(ValueError, match="silent"):
        SpectrogramTransformer(scale="peak").transform(np.zeros(600))


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(n_fft=1), "'n_fft' parameter"),
        (dict(n_fft=512.0), "'n_fft' parameter"),
        (dict(hop_length=513), "hop_length=513 exceeds n_fft=512"),
        (dict(hop_length=0), "'hop_length' parameter"),
        (dict(scale=0.0), "'scale' parameter"),
        (dict(scale=-1.0), "'scale' parameter"),
        (dict(scale="loud"), "'scale' parameter"),
        (dict(power=0), "'power' parameter"),
        (dict(sample_rate=-8000), "'sample_rate' parameter"),
        (dict(window="no-such-window"), "not a window scipy.signal.get_window knows"),
        (dict(window=np.ones(100)), "n_fft=512 values"),
        (dict(window=np.zeros(512)), "not all zero"),
        (dict(window=[np.nan] * 512), "finite"),
    ],
)
def test_bad_parameters(params, match):
    x = np.zeros(2000)
    for call in (lambda s: s.fit(x), lambda s: s.transform(x), lambda s: s.stft(x)):
        with pytest.raises(ValueError, match=match):
            call(SpectrogramTransformer(**params))


def test_bad_istft_input(rng):
    x = rng.uniform(-1, 1, size=1000)
    spec = SpectrogramTransformer()
    Z = spec.stft(x)
    with pytest.raises(ValueError, match=r"Z has shape \(256, 5\)"):
        spec.istft(Z[:, :-1].T, 1000)
    with pytest.raises(ValueError, match="5 frames, but a waveform of n_samples=2000 has 9"):
        spec.istft(Z, 2000)
    with pytest.raises(ValueError, match="at least 1"):
        spec.istft(Z, 0)
    with pytest.raises(TypeError, match="n_samples must be an int"):
        spec.istft(Z, 1000.0)
    Z[1, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        spec.istft(Z, 1000)
    # A Hann window (zero at its first sample) with hop = n_fft leaves samples uncovered.
    gappy = SpectrogramTransformer(n_fft=64, hop_length=64, window="hann")
    with pytest.raises(ValueError, match="cannot be inverted"):
        gappy.istft(gappy.stft(x), 1000)
    with pytest.raises(ValueError, match="1-D"):
        spec.stft([x, x])


# -- scikit-learn API ---------------------------------------------------------------

# The input is one waveform or a list of them, not an (n_samples, n_features)
# table, and output rows are frames, not input rows: the tags say so
# (two_d_array=False), and parametrize_with_checks then skips every check.
# The checks that need no data run below; those that feed random 2-D tables
# (pickling, fit returning self, not overwriting parameters, read-only input)
# are restated with waveforms in the tests after it.
_DATA_FREE_CHECKS = [
    "check_estimator_cloneable",
    "check_estimator_tags_renamed",
    "check_valid_tag_types",
    "check_estimator_repr",
    "check_no_attributes_set_in_init",
    "check_do_not_raise_errors_in_init_or_set_params",
    "check_mixin_order",
    "check_parameters_default_constructible",
    "check_get_params_invariance",
    "check_set_params",
]


@pytest.mark.parametrize("check", _DATA_FREE_CHECKS)
def test_sklearn_checks_without_data(check):
    getattr(estimator_checks, check)("SpectrogramTransformer", SpectrogramTransformer(scale=2.0))


def test_clone_params_pickle_and_readonly_input(rng):
    x = rng.uniform(-1, 1, size=3000)
    spec = SpectrogramTransformer(n_fft=256, hop_length=100, window=("kaiser", 8.0), scale="peak")
    params = spec.get_params()
    fitted = spec.fit(x, y=np.zeros(3))  # y is ignored
    assert fitted is spec and spec.get_params() == params  # fit returns self, changes no parameter
    twin = clone(spec)
    assert twin.get_params() == params and not hasattr(twin, "n_freq_")
    assert twin.set_params(n_fft=128).n_fft == 128 and spec.n_fft == 256
    restored = pickle.loads(pickle.dumps(spec))
    assert restored.n_freq_ == spec.n_freq_ == 129
    np.testing.assert_array_equal(restored.transform(x), spec.transform(x))
    readonly = x.copy()
    readonly.setflags(write=False)
    np.testing.assert_array_equal(spec.transform(readonly), spec.transform(x))
    assert SpectrogramTransformer().__sklearn_tags__().requires_fit is False


def test_unfitted_transformer_transforms(rng):
    x = rng.uniform(-1, 1, size=1000)
    np.testing.assert_array_equal(
        SpectrogramTransformer().transform(x), SpectrogramTransformer().fit(x).transform(x)
    )


# -- the pipeline ------------------------------------------------------------------


def _two_tone_waveform(rate=8000, seconds=0.6):
    """Two tones taking turns, a spectrogram of rank about 2."""
    t = np.arange(int(rate * seconds)) / rate
    gate = (np.floor(t * 10) % 2).astype(float)
    low, high = np.sin(2 * np.pi * 500 * t), np.sin(2 * np.pi * 1500 * t)
    return 0.3 * (gate * low + (1 - gate) * high)


def test_pipeline_selects_a_rank_and_scores(rng):
    x = _two_tone_waveform() + 1e-3 * rng.standard_normal(4800)
    selector = BayesianNMFRankSelector(
        ranks=(1, 2), method_params=dict(n_temperatures=4, n_burnin=10, n_keep=20, n_starts=2), tol=None,
        random_state=0
    )
    pipe = make_pipeline(SpectrogramTransformer(), selector).fit(x)
    score = pipe.score(x)
    assert np.isfinite(score)
    # The pipeline is the selector on the spectrogram: same seed, same evidence.
    X = SpectrogramTransformer().transform(x)
    direct = clone(selector).fit(X)
    assert X.shape == (20, 257) and pipe[-1].n_features_in_ == 257
    np.testing.assert_array_equal(pipe[-1].log_evidence_, direct.log_evidence_)
    assert score == direct.score(X)
    assert pipe.transform(x).shape == (20, pipe[-1].best_rank_)


def test_quantization_step_is_read_from_the_samples():
    from skevidence.audio import quantization_step

    rng = np.random.default_rng(0)
    pcm = rng.integers(-3000, 3000, size=5000).astype(np.int16)
    x = pcm / 32768.0
    assert quantization_step(x) == pytest.approx(1 / 32768, rel=1e-12)
    assert quantization_step(0.3 * x) == pytest.approx(0.3 / 32768, rel=1e-12)
    # Scaled and stored as float32 (a quieter float WAV): still the lattice, up to float32's rounding.
    assert quantization_step((0.01 * pcm / 32768.0).astype(np.float32)) == pytest.approx(0.01 / 32768, rel=1e-6)
    assert quantization_step(rng.normal(size=5000)) == 0.0  # float samples lie on no lattice
    assert quantization_step(rng.normal(size=5000).astype(np.float32)) == 0.0
    # A pure tone holds few values, 5 steps apart at the least: the lattice is still the 16-bit one.
    tone = np.round(0.3 * 32767 * np.sin(2 * np.pi * 440 * np.arange(8000) / 8000)) / 32768
    assert quantization_step(tone) == pytest.approx(1 / 32768, rel=1e-12)
    assert quantization_step(np.zeros(10)) == 0.0


@pytest.mark.parametrize("power", [1, 2])
def test_noise_floor_is_the_quantisation_noise_spectrum(power):
    """The floor is the mean spectrogram entry of the rounding noise alone, and scales with the waveform."""
    rng = np.random.default_rng(1)
    y = rng.normal(0.0, 0.3, 200_000)
    q = np.round(y * 32768) / 32768
    spec = SpectrogramTransformer(power=power, scale=2.0).fit(q)
    noise = SpectrogramTransformer(power=power, scale=2.0).fit_transform(q - y)[5:-5, 1:-1]
    assert spec.noise_floor_ == pytest.approx(noise.mean(), rel=0.01)
    assert SpectrogramTransformer(power=power, scale=2.0).fit(0.1 * q).noise_floor_ == pytest.approx(
        0.1**power * spec.noise_floor_, rel=1e-9)
    assert SpectrogramTransformer(power=power).fit(y).noise_floor_ == 0.0
