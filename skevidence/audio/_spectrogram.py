"""Magnitude and power spectrograms of waveforms, frames as rows, with the noise floor of their samples."""

import math
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.signal import ShortTimeFFT, get_window
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions

from .._init_params import store_init_params

__all__ = ["SpectrogramTransformer", "quantization_step"]

#: Full scale of 16-bit PCM: a waveform in [-1, 1) times this is in int16 sample units.
INT16_FULL_SCALE = 2.0**15


def quantization_step(x):
    """The step of the lattice the samples of ``x`` lie on (PCM read as floats), or 0 if they lie on none.

    A PCM recording read as floats holds integer multiples of one step (1/32768
    for 16-bit samples, times any factor applied since). The step is the
    largest divisor of the smallest gap between the sample values (the gap over
    1, 2, ... 256) that divides every one of them; samples of a float
    recording (synthesised, resampled) lie on no such lattice.
    """
    values = np.unique(np.abs(np.asarray(x, dtype=np.float64)))
    # A lattice scaled and stored as float32 (read as such, or as float64) is off by a few ulps of each value.
    eps = np.finfo(np.float32 if np.array_equal(values, values.astype(np.float32)) else np.float64).eps
    if values.size < 2:
        return 0.0
    # A first step from the smallest gap among the smallest values, where that rounding is smallest.
    gap = float(np.diff(values[:64]).min())
    for k in range(1, 257):
        step = gap / k
        if values[-1] / step >= 2**32:
            break
        # Refined by least squares on ever more values, so that it holds up to the largest.
        for m in (1024, values.size):
            units = np.round(values[:m] / step)
            step = float(values[:m] @ units / (units @ units))
        units = values / step
        # (A lattice finer than the float format's rounding is no lattice.)
        atol = 1e-6 + 4.0 * eps * units.max()
        if atol <= 0.05 and np.allclose(units, np.round(units), rtol=0.0, atol=atol):
            return step
    return 0.0


class SpectrogramTransformer(TransformerMixin, BaseEstimator):
    r"""Magnitude spectrogram of one or several waveforms, frames as rows.

    Computes :math:`|c\,\mathrm{STFT}(x)|^{p}` with
    :class:`scipy.signal.ShortTimeFFT`, where :math:`c` is ``scale`` and
    :math:`p` is ``power``, and returns it in scikit-learn's orientation:
    one **row per time frame** and one column per frequency bin,
    ``(n_frames, n_fft // 2 + 1)``. This is the ``X`` that
    :class:`~skevidence.PoissonNMF` and
    :class:`~skevidence.BayesianNMFRankSelector` factorise, so
    ``make_pipeline(SpectrogramTransformer(), BayesianNMFRankSelector())``
    chooses the number of spectral templates of a recording.

    The defaults follow Şimşekli et al. (2016, section 4.2): a Hamming
    window of 512 samples with 50% overlap, magnitudes (``power=1``) of the
    raw 16-bit samples (``scale="int16"``).

    Read more in the :ref:`User Guide <audio>`.

    Parameters
    ----------
    n_fft : int, default=512
        Window length and FFT size, at least 2. The spectrogram has
        ``n_fft // 2 + 1`` frequency bins.
    hop_length : int or None, default=None
        Samples between the starts of consecutive frames, from 1 to
        ``n_fft``. ``None`` means ``n_fft // 2`` (50% overlap).
    window : str, tuple or array-like, default="hamming"
        A window name, or a tuple of a name and its parameters such as
        ``("kaiser", 8.0)``, passed to :func:`scipy.signal.get_window`
        (periodic, "DFT-even" windows); or the ``n_fft`` window values
        themselves.
    scale : {"int16", "peak"} or float, default="int16"
        Factor :math:`c` the waveform is multiplied by before the transform.
        It sets how many "counts" the Poisson likelihood of NMF sees, and so
        moves the chosen rank (see Notes).

        - ``"int16"``: :math:`c = 32768`. A float waveform in [-1, 1) (what
          :func:`~skevidence.audio.load_audio` returns) is brought back to
          16-bit sample units, so a 16-bit recording gives the magnitudes of
          its raw integer samples, the scale Şimşekli et al. (2016) work at.
        - ``"peak"``: :math:`c = 32768 / \max_k |x_k|` for each recording,
          i.e. each recording is normalised to full scale first. The rank no
          longer depends on the recording level (microphone gain), but the
          recordings of a list lose their relative levels.
        - a float :math:`c > 0`: that factor.
    power : float, default=1.0
        Exponent :math:`p` of the magnitude: 1 for the magnitude spectrogram
        (Şimşekli et al. 2016), 2 for the power spectrogram.
    sample_rate : float or None, default=None
        Sample rate of the waveforms in Hz, used only to express
        ``frequencies_`` and the feature names in Hz. ``None`` gives
        frequencies in cycles per sample (0 to 0.5).

    Attributes
    ----------
    n_freq_ : int
        Number of frequency bins (columns of the output), ``n_fft // 2 + 1``.
    frequencies_ : ndarray of shape (`n_freq_`,)
        Centre frequency of each bin, in Hz if ``sample_rate`` is given,
        otherwise in cycles per sample.
    hop_length_ : int
        The hop used (``n_fft // 2`` when ``hop_length`` is ``None``).
    window_ : ndarray of shape (n_fft,)
        The window used.
    noise_floor_ : float
        The expected value of an entry of the spectrogram of the waveforms'
        quantisation noise alone, in the output's units: every recording's
        noise floor. PCM samples lie on a lattice of step :math:`\Delta`
        (1/32768 for 16-bit samples read by :func:`load_audio`), and rounding
        to it adds white noise of variance :math:`\Delta^2/12` a sample, whose
        STFT has the power :math:`s^2 = \Delta^2/12 \sum_n w[n]^2` in every bin;
        the floor is :math:`\Gamma(1 + p/2)\,(c\,s)^p`. The step is read from
        the samples themselves (:func:`quantization_step`), so that scaling a
        waveform scales its floor with it; samples on no lattice (a float
        recording) have no known floor, 0. With several recordings, the
        largest floor. Pass it to :class:`~skevidence.PoissonNMF`'s
        ``noise_floor`` with the exponential likelihood (``power=2``).

    See Also
    --------
    load_audio : Read a recording as a float waveform.
    skevidence.BayesianNMFRankSelector : Choose the NMF rank of the spectrogram.
    scipy.signal.ShortTimeFFT : The STFT computed here.

    Notes
    -----
    **Input.** ``X`` is a waveform or a list of them:

    - a 1-D array of samples: one recording;
    - a 2-D array of shape ``(1, n_samples)`` or ``(n_samples, 1)``: one
      recording (it is flattened). Other 2-D arrays are refused, because a
      multichannel recording is ambiguous: mix it down
      (``load_audio(path, mono=True)``) or pass its channels as a list;
    - a list (or tuple) of such waveforms, possibly of different lengths:
      several recordings, transformed one by one, their frames stacked
      vertically in the order given (the training matrix of Şimşekli et al.
      2016 is 20 sentences concatenated frame-wise). No frame straddles two
      recordings.

    Samples are floats, expected in [-1, 1) with the ``"int16"`` scale: a
    warning is issued when a waveform exceeds 1 in absolute value (raw integer
    PCM samples should be divided by 32768, or passed with ``scale=1.0``).
    Every waveform needs at least ``n_fft`` samples.

    **Framing.** Frame :math:`m` is centred on sample :math:`m h` (``h`` the
    hop), i.e. covers samples :math:`m h - \lfloor n_{fft}/2 \rfloor` to
    :math:`m h - \lfloor n_{fft}/2 \rfloor + n_{fft} - 1`, and the signal is
    zero-padded outside its ends; all the frames of this grid that overlap
    the signal by at least one sample are kept (``ShortTimeFFT``'s default
    range). So the first and last samples are covered by as many frames as
    the middle ones, which makes :meth:`istft` exact, and a waveform of
    :math:`n` samples gives
    :math:`\lceil (n + \lfloor n_{fft}/2 \rfloor) / h \rceil
    - \lfloor (\lfloor n_{fft}/2 \rfloor - n_{fft}) / h \rfloor - 1` frames
    (:math:`\lceil (n + 256) / 256 \rceil` with the defaults). With these
    defaults the first 20 clean NOIZEUS sentences (8 kHz) give a
    :math:`1661 \times 257` matrix, the size Şimşekli et al. (2016) report.
    Each row is ``abs(np.fft.rfft(window * frame))`` times :math:`c`, to the
    power :math:`p`.

    **Scaling.** The Poisson likelihood of NMF is not scale-invariant. An
    entry :math:`x` counts as :math:`x` events, so multiplying the
    spectrogram by :math:`c` makes the data look like :math:`c` times more
    counts: the likelihood sharpens, the evidence can support more
    components, and the chosen rank grows with :math:`c`; a smaller
    :math:`c` favours smaller ranks. Magnitudes are not counts, so the scale
    is a modelling choice, like the prior rate of
    :class:`~skevidence.PoissonNMF` (a priori
    :math:`E[X_{ij}] = R / (\lambda_w \lambda_h)`, so the rate should follow
    the scale: Şimşekli et al. (2016) use
    :math:`\lambda_w = \lambda_h = 4 \times 10^{-4}` on raw 16-bit magnitudes).
    ``"int16"`` is the default because it is the paper's scale and because it
    is tied to the recording itself, not to an arbitrary normalisation; report
    the scale together with the chosen rank.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence.audio import SpectrogramTransformer
    >>> t = np.arange(8000) / 8000
    >>> x = 0.5 * np.sin(2 * np.pi * 1000 * t)
    >>> spec = SpectrogramTransformer(sample_rate=8000).fit(x)
    >>> S = spec.transform(x)
    >>> S.shape
    (33, 257)
    >>> float(spec.frequencies_[S[10].argmax()])
    1000.0
    >>> np.allclose(spec.istft(spec.stft(x), len(x)), x)
    True
    """

    _parameter_constraints = {
        "n_fft": [Interval(Integral, 2, None, closed="left")],
        "hop_length": [Interval(Integral, 1, None, closed="left"), None],
        "window": [str, tuple, "array-like"],
        "scale": [StrOptions({"int16", "peak"}), Interval(Real, 0, None, closed="neither")],
        "power": [Interval(Real, 0, None, closed="neither")],
        "sample_rate": [Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(self, n_fft=512, hop_length=None, window="hamming", scale="int16", power=1.0, sample_rate=None):
        store_init_params(self, locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Nothing is learnt: transform, stft and istft work on an unfitted instance.
        tags.requires_fit = False
        # The input is waveforms, not an (n_samples, n_features) table: each
        # output row is a frame, not an input row. See test_audio.py for the
        # common checks that still apply.
        tags.input_tags.one_d_array = True
        tags.input_tags.two_d_array = False
        return tags

    # -- set-up -------------------------------------------------------------

    def _window(self):
        n_fft, window = self.n_fft, self.window
        try:
            values = (get_window(window, n_fft, fftbins=True) if isinstance(window, (str, tuple))
                      else np.asarray(window, dtype=np.float64))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"window={window!r:.200} is not a window scipy.signal.get_window knows ({exc}): use a "
                             f"name such as 'hann', a tuple such as ('kaiser', 8), or n_fft={n_fft} numbers.") from exc
        if values.shape != (n_fft,):
            raise ValueError(f"window has shape {values.shape}, but an explicit window must be 1-D with n_fft={n_fft} "
                             "values; change n_fft or the window.")
        if not np.all(np.isfinite(values)) or not np.any(values):
            raise ValueError("window must be finite and not all zero.")
        return values

    def _check_settings(self):
        """Validate the parameters (fitted or not) and build the STFT."""
        self._validate_params()
        hop = self.n_fft // 2 if self.hop_length is None else int(self.hop_length)
        if hop > self.n_fft:
            raise ValueError(f"hop_length={hop} exceeds n_fft={self.n_fft}: the samples between frames would be "
                             "skipped and the STFT could not be inverted. Use hop_length <= n_fft.")
        fs = 1.0 if self.sample_rate is None else float(self.sample_rate)
        # phase_shift=None: each column is the plain rfft of its windowed frame.
        return ShortTimeFFT(self._window(), hop, fs, fft_mode="onesided", mfft=self.n_fft, phase_shift=None)

    # -- input --------------------------------------------------------------

    def _check_waveform(self, x, what):
        if sp.issparse(x):
            raise TypeError(f"{what} is a sparse matrix; pass a dense 1-D array of samples.")
        x = np.asarray(x)
        if x.dtype.kind not in "biuf":
            raise TypeError(f"{what} must hold numbers, real samples, got dtype {x.dtype}"
                            + ("; for a complex STFT use istft." if x.dtype.kind == "c" else "."))
        if x.size == 0:
            raise ValueError(f"{what} is empty; pass at least n_fft={self.n_fft} samples.")
        if x.ndim == 2 and 1 in x.shape:
            x = x.reshape(-1)
        if x.ndim != 1:
            raise ValueError(f"{what} has shape {x.shape}; a waveform is 1-D (or one row or column). Mix a multichannel"
                             " recording down (load_audio(path, mono=True)) or pass its channels as a list of arrays.")
        x = x.astype(np.float64)
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{what} contains NaN or infinity ({np.count_nonzero(~np.isfinite(x))} samples); "
                             "remove or replace them, e.g. with np.nan_to_num.")
        if x.size < self.n_fft:
            raise ValueError(f"{what} has {x.size} samples, fewer than n_fft={self.n_fft}: not one full frame. "
                             "Use a smaller n_fft or a longer recording.")
        return x

    def _waveforms(self, X):
        """``(name, 1-D float64 waveform)`` for each recording in ``X`` (see the class Notes)."""
        if isinstance(X, (list, tuple)):
            if len(X) == 0:
                raise ValueError("X is an empty list; pass a waveform or a list of waveforms.")
            dims = [np.ndim(x) for x in X]
            if all(d >= 1 for d in dims):
                named = [(f"waveform {i} of X", x) for i, x in enumerate(X)]
                return [(name, self._check_waveform(x, name)) for name, x in named]
            if any(d >= 1 for d in dims):
                raise ValueError("X mixes numbers and arrays; pass one waveform or a list of waveforms.")
        return [("the waveform X", self._check_waveform(X, "the waveform X"))]

    def _scale_factor(self, x, what, warn=True):
        if self.scale not in ("int16", "peak"):
            return float(self.scale)
        peak = np.max(np.abs(x))
        if self.scale == "int16":
            if warn and peak > 1.0:
                warnings.warn(f"{what} reaches {peak:g} in absolute value, but scale='int16' expects samples in [-1, "
                              "1) (as load_audio returns). Divide raw int16 samples by 32768, or pass scale=1.0 to use "
                              "the numbers as they are.", UserWarning, stacklevel=3)
            return INT16_FULL_SCALE
        if peak == 0:
            raise ValueError(f"{what} is silent (all zeros): it cannot be normalised to its peak; drop it or use "
                             "scale='int16'.")
        return INT16_FULL_SCALE / peak

    # -- API ----------------------------------------------------------------

    def fit(self, X, y=None):
        """Check the parameters and the waveforms; nothing is learnt.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or list of such arrays
            One waveform or several (see the class Notes).
        y : None
            Ignored.

        Returns
        -------
        self : object
            The transformer, with `n_freq_`, `frequencies_`, `hop_length_`,
            `window_` and `noise_floor_` set.
        """
        stft = self._check_settings()
        # The quantisation noise's power in a bin times the scale squared, to the power p / 2, times a complex
        # Gaussian's moment; transform warns of samples beyond full scale, not fit.
        powers = [(self._scale_factor(x, name, warn=False) * quantization_step(x)) ** 2 / 12.0
                  * float(np.sum(stft.win**2)) for name, x in self._waveforms(X)]
        self.window_ = stft.win.copy()
        self.noise_floor_ = math.gamma(1.0 + self.power / 2.0) * float(max(powers)) ** (self.power / 2.0)
        self.hop_length_ = stft.hop
        self.frequencies_ = np.fft.rfftfreq(self.n_fft, d=1.0 / stft.fs)
        self.n_freq_ = self.frequencies_.size
        return self

    def transform(self, X):
        """Magnitude spectrogram of the waveform(s), frames as rows.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or list of such arrays
            One waveform or several (see the class Notes).

        Returns
        -------
        S : ndarray of shape (n_frames, n_fft // 2 + 1)
            :math:`|c\\,\\mathrm{STFT}|^p`; with a list, the frames of each
            waveform in turn.

        Raises
        ------
        ValueError
            If the spectrogram is all zeros (a silent recording): a model of
            it has nothing to factorise. The command line refuses a silent
            file through this check.
        """
        stft = self._check_settings()
        S = np.ascontiguousarray(np.vstack([(self._scale_factor(x, name) * np.abs(stft.stft(x)).T) ** self.power
                                            for name, x in self._waveforms(X)]))
        if not np.any(S):
            raise ValueError("the spectrogram is all zeros (silent recording): nothing to factorise.")
        return S

    def stft(self, waveform):
        """Complex STFT of one waveform, with the framing of :meth:`transform`.

        ``scale`` and ``power`` are not applied: the result is in the
        waveform's own units, so that :meth:`istft` returns the waveform
        itself, and ``transform(x) == (c * abs(stft(x))) ** power``. To
        resynthesise a part of a recording (e.g. speech enhancement), multiply
        this STFT by a mask computed from scaled magnitudes (a ratio such as
        ``V_speech / V_total`` does not depend on the scale) and call
        :meth:`istft`.

        Parameters
        ----------
        waveform : array-like of shape (n_samples,)
            One waveform.

        Returns
        -------
        Z : ndarray of shape (n_frames, n_fft // 2 + 1), complex
            Row ``m`` is ``np.fft.rfft(window * frame_m)``.
        """
        stft = self._check_settings()
        x = self._check_waveform(waveform, "the waveform")
        return np.ascontiguousarray(stft.stft(x).T)

    def istft(self, Z, n_samples):
        """Waveform of ``n_samples`` samples whose :meth:`stft` is ``Z``.

        The inverse uses the canonical dual window of ``window`` and the hop
        (:class:`scipy.signal.ShortTimeFFT`), so ``istft(stft(x), len(x))``
        returns ``x`` up to rounding. For a modified ``Z`` it returns the
        least-squares waveform.

        Parameters
        ----------
        Z : array-like of shape (n_frames, n_fft // 2 + 1)
            Complex STFT with the framing of :meth:`stft`.
        n_samples : int
            Length of the waveform; it must give ``n_frames`` frames.

        Returns
        -------
        waveform : ndarray of shape (n_samples,)
        """
        stft = self._check_settings()
        if isinstance(n_samples, bool) or not isinstance(n_samples, Integral):
            raise TypeError(f"n_samples must be an int, got {n_samples!r}.")
        if n_samples < 1:
            raise ValueError(f"n_samples must be at least 1, got {n_samples}.")
        Z = np.asarray(Z)
        if Z.dtype.kind not in "biufc":
            raise TypeError(f"Z must hold numbers, got dtype {Z.dtype}.")
        if Z.ndim != 2 or Z.shape[1] != stft.f_pts:
            raise ValueError(f"Z has shape {Z.shape}, but an STFT of this transformer has shape (n_frames, "
                             f"{stft.f_pts}) (frames as rows, n_fft // 2 + 1 columns).")
        n_frames = stft.p_max(n_samples) - stft.p_min
        if Z.shape[0] != n_frames:
            raise ValueError(f"Z has {Z.shape[0]} frames, but a waveform of n_samples={n_samples} has {n_frames}; "
                             "pass the length of the waveform the STFT was computed from.")
        if not np.all(np.isfinite(Z)):
            raise ValueError("Z contains NaN or infinity.")
        try:
            x = stft.istft(Z.T.astype(np.complex128), k1=n_samples)
        except ValueError as exc:
            raise ValueError(f"window={self.window!r} with hop_length={stft.hop} cannot be inverted (some sample is "
                             "covered by no non-zero window value); use a smaller hop_length.") from exc
        return np.ascontiguousarray(np.real(x), dtype=np.float64)

    def get_feature_names_out(self, input_features=None):
        """Names of the frequency bins: ``freq0``, ... or their frequencies in Hz.

        Parameters
        ----------
        input_features : None
            Ignored (the input is a waveform, it has no features).

        Returns
        -------
        names : ndarray of str of shape (n_fft // 2 + 1,)
            ``"freq0"`` to ``"freq{n_fft // 2}"``, or, with ``sample_rate``,
            the centre frequencies such as ``"31.25Hz"``.
        """
        self._validate_params()
        if self.sample_rate is None:
            return np.array([f"freq{k}" for k in range(self.n_fft // 2 + 1)], dtype=object)
        freqs = np.fft.rfftfreq(self.n_fft, d=1.0 / float(self.sample_rate))
        for digits in range(6, 18):  # as few digits as keep the names distinct
            names = [f"{f:.{digits}g}Hz" for f in freqs]
            if len(set(names)) == freqs.size:
                break
        return np.array(names, dtype=object)
