"""Semi-supervised speech + noise NMF for speech enhancement: Poisson (Şimşekli et al. 2016, §4.2, eq. 14) or
exponential (Itakura–Saito; Févotte, Bertin and Durrieu 2009)."""

import warnings
from dataclasses import dataclass, fields
from numbers import Integral, Real

import numpy as np
from scipy.special import xlogy
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_array, check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._docstrings import fill_doc
from .._init_params import store_init_params

__all__ = ["SemiSupervisedNMF", "SeparationResult"]

#: The intensity ``V = W H`` is floored at this fraction of ``max(X)`` before
#: ``X / V``: the ratio then stays below ``1 / _REL_FLOOR`` and cannot overflow
#: where an entry of the model has died out (a frequency no atom covers).
_REL_FLOOR = 1e-12
_TINY = np.finfo(np.float64).tiny

#: ``prior_rate="auto"`` under the Poisson likelihood: Şimşekli et al. (2016)'s rate on 16-bit magnitudes.
_PAPER_PRIOR_RATE = 0.0004


def _floor_of(X):
    return max(_REL_FLOOR * float(X.max(initial=0.0)), _TINY)


def _data_constant(X, floor, likelihood):
    r"""The part of the divergence that depends on ``X`` only: :math:`\sum X \log X - X` (KL) or
    :math:`\sum \log X + 1` (IS, ``X`` floored)."""
    if likelihood == "poisson":
        return float(np.sum(xlogy(X, X) - X))
    return float(np.sum(np.log(np.maximum(X, floor)) + 1.0))


def _divergence(X, V, constant, likelihood):
    r"""The divergence of ``X`` from ``V``: the negative log-likelihood less a constant of ``X``.

    Poisson: the generalised KL divergence :math:`\sum X \log(X/V) - X + V`,
    which differs from the Poisson negative log-likelihood
    :math:`\sum V - X \log V + \log\Gamma(X+1)` by a constant of ``X``
    only. Exponential: the Itakura–Saito divergence :math:`\sum X/V - \log(X/V)
    - 1`, the exponential negative log-likelihood :math:`\sum \log V + X/V`
    less a constant of ``X`` (zeros of ``X`` taken at the floor of ``V``).
    Either is zero for a perfect fit, which makes its relative decrease a
    meaningful stopping rule. ``V`` is floored, so its log is finite;
    ``constant`` is :func:`_data_constant`.
    """
    if likelihood == "poisson":
        return constant + float(V.sum()) - float(np.sum(X * np.log(V)))
    return float(np.sum(X / V + np.log(V))) - constant


def _multiplier(X, V, H, rates, likelihood):
    r"""The multiplicative update's factor of ``W`` in :math:`V = WH` (``rates``: the prior's, broadcast to ``W``).

    Poisson: :math:`(X/V) H^\top` over :math:`\mathbf{1} H^\top + \lambda`;
    exponential: the square root of :math:`(X/V^2) H^\top` over
    :math:`V^{-1} H^\top + \lambda`. The factor of ``H`` is that of
    :math:`W^\top` in :math:`V^\top = H^\top W^\top`.
    """
    if likelihood == "poisson":
        return ((X / V) @ H.T) / np.maximum(H.sum(axis=1) + rates, _TINY)
    inverse = 1.0 / V
    return np.sqrt(((X * inverse * inverse) @ H.T) / np.maximum(inverse @ H.T + rates, _TINY))


def _em(X, W, H, *, prior_rate, max_iter, tol, first_learned=0, likelihood="poisson", activation_rates=None):
    r"""MAP of Poisson or exponential NMF with exponential priors by multiplicative updates, from ``(W, H)``, in place.

    Each iteration updates ``W`` given ``H``, then the rows
    ``H[first_learned:]`` given ``W`` (the rows above stay fixed). Poisson:
    the EM steps of the latent-source augmentation (Cemgil 2009), i.e. Lee &
    Seung's KL multiplicative updates with the prior rate added to the
    denominator. Exponential: the majorisation-minimisation steps of the
    Itakura–Saito divergence (Févotte and Idier 2011), the factor
    :math:`\big(W^\top (X V^{-2}) / (W^\top V^{-1} + \lambda)\big)^{1/2}`
    (the convex :math:`X/V` majorised by Jensen's inequality, the concave
    :math:`\log V` by its tangent, the prior's linear term kept). Either way
    the objective, the divergence plus :math:`\lambda(\sum W + \sum H)`,
    never increases. ``activation_rates`` (broadcast to ``W``) replace the
    prior rate on ``W``. It stops when an iteration decreases the objective
    by at most ``tol`` times its value (never with ``tol=0``), or after
    ``max_iter`` iterations.

    Returns ``(W, H, objective_path, n_iter, converged)``; ``objective_path``
    has ``n_iter + 1`` entries, the first at the starting point.
    """
    floor = _floor_of(X)
    constant = _data_constant(X, floor, likelihood)
    rates_W = prior_rate if activation_rates is None else activation_rates
    path = []
    for n_iter in range(max_iter + 1):
        V = np.maximum(W @ H, floor)
        path.append(_divergence(X, V, constant, likelihood) + float(np.sum(rates_W * W))
                    + prior_rate * float(H[first_learned:].sum()))
        converged = n_iter > 0 and tol > 0 and path[-2] - path[-1] <= tol * abs(path[-2])
        if converged or n_iter == max_iter:
            return W, H, np.asarray(path), n_iter, converged
        W *= _multiplier(X, V, H, rates_W, likelihood)
        V = np.maximum(W @ H, floor)
        H[first_learned:] *= _multiplier(X.T, V.T, W[:, first_learned:].T, prior_rate, likelihood).T


@dataclass(frozen=True, repr=False, eq=False)
class SeparationResult:
    r"""The factors of a noisy spectrogram under the speech + noise model.

    Returned by :meth:`SemiSupervisedNMF.decompose`. With the library's
    orientation (frames are rows), the mixture is modelled as
    ``X ≈ speech_activations @ speech_components + noise_activations @ noise_components``.

    Attributes
    ----------
    speech_activations : ndarray of shape (n_frames, n_speech_components)
        MAP activations of the fixed speech dictionary.
    noise_activations : ndarray of shape (n_frames, n_noise_components)
        MAP activations of the noise dictionary.
    speech_components : ndarray of shape (n_speech_components, n_freq)
        The speech dictionary (the estimator's ``components_``, unchanged).
    noise_components : ndarray of shape (n_noise_components, n_freq)
        The noise dictionary learned on the mixture.
    objective_path : ndarray of shape (n_iter + 1,)
        Negative log posterior (up to a constant) at the start and after each
        EM iteration; never increasing.
    n_iter : int
        EM iterations run.
    """

    speech_activations: np.ndarray
    noise_activations: np.ndarray
    speech_components: np.ndarray
    noise_components: np.ndarray
    objective_path: np.ndarray
    n_iter: int

    def __post_init__(self):
        for name in [field.name for field in fields(self) if field.type is np.ndarray]:
            array = np.array(getattr(self, name), dtype=np.float64)
            array.flags.writeable = False
            object.__setattr__(self, name, array)
        object.__setattr__(self, "n_iter", int(self.n_iter))

    def __repr__(self):
        n_frames, r_sp = self.speech_activations.shape
        return (
            f"SeparationResult(n_frames={n_frames}, n_speech_components={r_sp}, "
            f"n_noise_components={self.noise_components.shape[0]}, n_iter={self.n_iter})"
        )

    @property
    def speech(self):
        """Speech intensity ``speech_activations @ speech_components``, shape (n_frames, n_freq)."""
        return self.speech_activations @ self.speech_components

    @property
    def noise(self):
        """Noise intensity ``noise_activations @ noise_components``, shape (n_frames, n_freq)."""
        return self.noise_activations @ self.noise_components

    @property
    def mask(self):
        r"""Wiener-style speech mask :math:`V^{sp} / (V^{sp} + V^{no})`, in :math:`[0, 1]`.

        Zero where both intensities vanish.
        """
        speech, noise = self.speech, self.noise
        return speech / np.maximum(speech + noise, _TINY)


@fill_doc
class SemiSupervisedNMF(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    r"""Speech enhancement by semi-supervised NMF (speech dictionary fixed, noise learned), Poisson or exponential.

    A noisy spectrogram ``X`` of shape ``(n_frames, n_freq)`` (frames are
    rows, as everywhere in scikit-learn) is modelled as

    .. math::
        X_{tf} \sim \mathcal{PO}(V_{tf}) \text{ or } \mathcal{E}(V_{tf}),
        \qquad V_{tf} = \sum_{r=1}^{R_{sp}} W^{sp}_{tr} H^{sp}_{rf}
        + \sum_{r=1}^{R_{no}} W^{no}_{tr} H^{no}_{rf}

    for frame :math:`t` and frequency :math:`f`, with exponential priors of
    rate ``prior_rate`` on every factor: Poisson for a magnitude spectrogram,
    exponential (mean :math:`V`) for a power spectrogram, whose MAP is
    Itakura–Saito NMF (Févotte, Bertin and Durrieu 2009). The Poisson model
    is Şimşekli et al. (2016), eq. 14, transposed: the paper's speech dictionary :math:`W^{sp}` is
    :math:`H^{sp}` = ``components_`` here. ``fit`` learns the speech dictionary
    on clean speech, or takes it from ``speech_components``. :meth:`decompose`
    holds it fixed and learns, on the mixture, a small noise dictionary
    :math:`H^{no}` and all activations :math:`W^{sp}, W^{no}`; speech is
    recovered by the Wiener-style mask :math:`V^{sp} / (V^{sp} + V^{no})` with
    :math:`V^{sp} = W^{sp} H^{sp}`, :math:`V^{no} = W^{no} H^{no}`
    (:meth:`speech_mask`, :meth:`denoise`).

    All factors are MAP estimates by multiplicative updates, with
    :math:`V = WH`. Poisson: EM, Lee & Seung's updates for the KL divergence
    with the prior rate :math:`\lambda` added to the denominators (Cemgil
    2009); exponential: the majorisation-minimisation updates of the
    Itakura–Saito divergence (Févotte and Idier 2011), likewise penalised:

    .. math::
        H \leftarrow H \odot \frac{W^\top (X / V)}{W^\top \mathbf{1} + \lambda}
        \quad\text{(Poisson)},
        \qquad
        H \leftarrow H \odot \Big(\frac{W^\top (X / V^2)}{W^\top V^{-1} + \lambda}\Big)^{1/2}
        \quad\text{(exponential)},

    and their mirror images for :math:`W`. The negative log posterior never
    increases.

    Read more in the :ref:`User Guide <speech_enhancement>`.

    Parameters
    ----------
    n_components : int, default=32
        Size :math:`R_{sp}` of the speech dictionary learned by ``fit``;
        at most the number of training frames. Ignored when
        ``speech_components`` is given. Choose it by the evidence with
        :class:`BayesianNMFRankSelector` (see the user guide).
    n_noise_components : int, default=5
        Size :math:`R_{no}` of the noise dictionary learned on each mixture
        (Şimşekli et al. 2016 use 5); at most the number of frames of the
        mixture.
    likelihood : {"poisson", "exponential"}, default="poisson"
        Density of the spectrogram given :math:`V`: ``"poisson"`` for a
        magnitude spectrogram (the paper's model, KL divergence),
        ``"exponential"`` for a power spectrogram (``power=2`` in
        :class:`~skevidence.audio.SpectrogramTransformer`; Itakura–Saito
        divergence, blind to the recording's level but for the prior).
    prior_rate : float or "auto", default="auto"
        Rate :math:`\lambda` of the exponential priors on all factors. ``0``
        gives the maximum-likelihood factorisation. ``"auto"``: 0.0004 under
        the Poisson likelihood (the value of Şimşekli et al. 2016 for
        magnitude spectrograms of 16-bit audio); under the exponential one
        :math:`\sqrt{R_{sp} / \bar X}` of the training spectrogram, at which
        the prior mean of :math:`W^{sp} H^{sp}` is the data's mean (the
        command line's rule).
    sparsity : float, default=0.0
        Rate of a further exponential prior on the speech activations in a
        separation, per unit of activation of a speech atom scaled to unit
        sum: under the Poisson likelihood a speech atom must then explain
        ``1 + sparsity`` times what it costs, a rate free of the
        spectrogram's scale; under the exponential one the rate is divided by
        each frame's mean power. A speaker-independent dictionary also fits
        much of the noise, and without it the mask keeps most of the noise;
        on NOIZEUS (see the user guide) ``0.3`` turns an SDR gain of about
        0.4 dB into several dB. ``0`` is the model of Şimşekli et al. (2016).
    max_iter : int, default=200
        Maximum number of EM iterations, in ``fit`` and in each separation
        (see Notes).
    tol : float, default=1e-4
        Stop when an iteration decreases the objective (the negative log
        posterior up to a constant, see ``objective_path_``) by less than
        ``tol`` times its value. ``0`` runs ``max_iter`` iterations.
    speech_components : array-like of shape (n_speech_components, n_freq), default=None
        A fixed speech dictionary, e.g. the ``components_`` of a fitted
        :class:`PoissonNMF` or :class:`BayesianNMFRankSelector`. ``fit`` then
        learns nothing: it checks ``X`` against it and copies it to
        ``components_``.
    random_state : int, RandomState instance or None, default=None
        Seed of the random starting factors of ``fit`` and of the noise
        dictionary in every separation; an int makes both reproducible.

    Attributes
    ----------
    components_ : ndarray of shape (n_speech_components, n_freq)
        The speech dictionary, one spectral atom per row.
    n_iter_ : int
        EM iterations run by ``fit`` (0 when ``speech_components`` is given).
    prior_rate_ : float
        The prior rate used, ``prior_rate`` or its ``"auto"`` value.
    reconstruction_err_ : float
        Divergence of the training data from :math:`WH` at the end of
        ``fit``: generalised KL (Poisson) or Itakura–Saito (exponential); NaN
        when ``speech_components`` is given: nothing was fitted.
    objective_path_ : ndarray of shape (`n_iter_` + 1,)
        Negative log posterior (up to a constant), the divergence plus
        :math:`\lambda(\sum W + \sum H)`, at the start and after each
        iteration of ``fit``; empty when ``speech_components`` is given.
    n_features_in_ : int
        Number of frequencies seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when ``X`` has string column names.

    See Also
    --------
    PoissonNMF : Bayesian Poisson NMF scored by its evidence.
    BayesianNMFRankSelector : Choose the speech dictionary size by the evidence.
    sklearn.decomposition.NMF : Point-estimate NMF.

    Notes
    -----
    ``fit`` starts from random factors; a separation starts from equal
    activations in every frame and random noise atoms, all seeded by
    ``random_state``. The noise dictionary is learned from all frames of the
    mixture, so the result for a frame depends on the other frames (but not
    on their order). Each of :meth:`separate`, :meth:`speech_mask`,
    :meth:`denoise` and :meth:`transform` runs the separation again; call
    :meth:`decompose` once to get every factor.

    The parameters ``n_noise_components``, ``max_iter`` and ``tol`` are read
    again at every separation, so ``model.set_params(max_iter=25)`` after
    ``fit`` changes the separation only. That matters: the noise dictionary,
    free to fit the mixture, absorbs more and more of the speech as the
    iterations go on, and on real recordings the enhancement is often best
    after a few dozen iterations (see the user guide).

    The Poisson likelihood is not scale-invariant: ``prior_rate`` and the
    scale of the spectrogram go together (Şimşekli et al. 2016 use 0.0004 on
    the magnitudes of 16-bit samples, the default of
    :class:`~skevidence.audio.SpectrogramTransformer`). The Itakura–Saito
    divergence is, and ``prior_rate="auto"`` follows the training data's
    level; zeros in an exponential model's ``X`` (digital silence) pull
    :math:`V` to zero there, so leave all-zero frames out.

    References
    ----------
    U. Şimşekli, R. Badeau, G. Richard, A. T. Cemgil, "Stochastic
    thermodynamic integration: efficient Bayesian model selection via
    stochastic gradient MCMC", ICASSP 2016, §4.2.

    A. T. Cemgil, "Bayesian inference for nonnegative matrix factorisation
    models", Computational Intelligence and Neuroscience, 2009.

    D. D. Lee, H. S. Seung, "Algorithms for non-negative matrix
    factorization", NIPS 2000.

    C. Févotte, N. Bertin, J.-L. Durrieu, "Nonnegative matrix factorization
    with the Itakura-Saito divergence: with application to music analysis",
    Neural Computation, 2009.

    C. Févotte, J. Idier, "Algorithms for nonnegative matrix factorization
    with the beta-divergence", Neural Computation, 2011.

    Examples
    --------
    Speech atoms on the lower half of the frequencies, a noise atom on the
    upper half:

    >>> import numpy as np
    >>> from skevidence import SemiSupervisedNMF
    >>> rng = np.random.default_rng(0)
    >>> speech_atoms = np.hstack([rng.exponential(size=(3, 10)), np.zeros((3, 10))])
    >>> noise_atoms = np.hstack([np.zeros((1, 10)), rng.exponential(size=(1, 10))])
    >>> clean = rng.exponential(size=(100, 3)) @ speech_atoms
    >>> speech = rng.exponential(size=(40, 3)) @ speech_atoms
    >>> noisy = speech + rng.exponential(size=(40, 1)) @ noise_atoms
    >>> model = SemiSupervisedNMF(n_components=3, n_noise_components=1, tol=0.0,
    ...                           random_state=0).fit(clean)
    >>> model.components_.shape, model.transform(noisy).shape
    ((3, 20), (40, 3))
    >>> before = np.linalg.norm(noisy - speech) / np.linalg.norm(speech)
    >>> after = np.linalg.norm(model.denoise(noisy) - speech) / np.linalg.norm(speech)
    >>> bool(after < 0.2 * before)
    True
    """

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "n_noise_components": [Interval(Integral, 1, None, closed="left")],
        "likelihood": [StrOptions({"poisson", "exponential"})],
        "prior_rate": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "sparsity": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "speech_components": ["array-like", None],
        "random_state": ["random_state"],
    }

    def __init__(self, n_components=32, n_noise_components=5, *, likelihood="poisson", prior_rate="auto",
                 sparsity=0.0, max_iter=200, tol=1e-4, speech_components=None, random_state=None):
        store_init_params(self, locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def _validate_input(self, X, reset):
        return validate_data(self, X, reset=reset, dtype=np.float64, ensure_non_negative=True, ensure_min_samples=1)

    def _run_em(self, X, W, H, where, stacklevel, **kwargs):
        """:func:`_em` with this estimator's settings; a ConvergenceWarning naming ``where`` if it stops at max_iter."""
        W, H, path, n_iter, converged = _em(X, W, H, prior_rate=self.prior_rate_, max_iter=self.max_iter, tol=self.tol,
                                            likelihood=self.likelihood, **kwargs)
        if self.tol > 0 and not converged:
            warnings.warn(f"{where}: EM did not reach tol={self.tol} in max_iter={self.max_iter} iterations; increase "
                          "max_iter (or tol).", ConvergenceWarning, stacklevel=stacklevel)
        return W, H, path, n_iter

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the speech dictionary ``components_`` from a clean-speech spectrogram.

        Parameters
        ----------
        X : array-like of shape (n_frames, n_freq)
            Non-negative magnitude spectrogram of clean speech, frames as
            rows (several sentences may be stacked).
        %(y_ignored_fitted)s
        """
        X = self._validate_input(X, reset=True)
        if self.prior_rate != "auto":
            self.prior_rate_ = float(self.prior_rate)
        elif self.likelihood == "poisson":
            self.prior_rate_ = _PAPER_PRIOR_RATE
        else:
            n_atoms = self.n_components if self.speech_components is None else len(self.speech_components)
            self.prior_rate_ = float(np.sqrt(n_atoms / max(float(X.mean()), _TINY)))
        if self.speech_components is not None:
            H = check_array(self.speech_components, dtype=np.float64, ensure_non_negative=True,
                            input_name="speech_components")
            if H.shape[1] != X.shape[1]:
                raise ValueError(f"speech_components has {H.shape[1]} frequencies (columns) but X has {X.shape[1]}: "
                                 "the dictionary must come from spectrograms of the same size (same n_fft).")
            self.components_ = H.copy()
            self.n_iter_ = 0
            self.reconstruction_err_ = float("nan")
            self.objective_path_ = np.empty(0)
            return self
        n_frames = X.shape[0]
        if self.n_components > n_frames:
            raise ValueError(f"n_components={self.n_components} exceeds the number of training frames: X has "
                             f"n_samples = {n_frames}, and a dictionary of more atoms than frames is not identified. "
                             "Use more clean speech or a smaller n_components.")
        rng = check_random_state(self.random_state)
        scale = np.sqrt(X.mean() / self.n_components)
        W = scale * rng.uniform(0.5, 1.5, size=(n_frames, self.n_components))
        H = scale * rng.uniform(0.5, 1.5, size=(self.n_components, X.shape[1]))
        W, H, path, n_iter = self._run_em(X, W, H, "fit", stacklevel=4)
        self.components_ = H
        self.n_iter_ = n_iter
        self.objective_path_ = path
        # The objective at the end less the prior's term.
        self.reconstruction_err_ = float(path[-1] - self.prior_rate_ * (W.sum() + H.sum()))
        return self

    def decompose(self, X):
        """Learn the noise dictionary and all activations of a mixture, speech dictionary fixed.

        Nothing is stored on the estimator: the call is a pure function of
        ``X``, the fitted ``components_`` and the parameters.

        Parameters
        ----------
        %(X_mixture)s

        Returns
        -------
        result : SeparationResult
            The four factors, the objective path and the number of iterations.
        """
        check_is_fitted(self)
        X = self._validate_input(X, reset=False)
        n_frames = X.shape[0]
        r_no = self.n_noise_components
        if r_no > n_frames:
            raise ValueError(f"n_noise_components={r_no} exceeds the number of frames of the mixture (n_samples = "
                             f"{n_frames}); pass a longer mixture or a smaller n_noise_components.")
        H_sp = self.components_
        r_sp = H_sp.shape[0]
        # The speech atoms at unit sum, where the sparsity's rate is free of the spectrogram's scale: a unit of
        # activation costs as much as it can explain (Poisson), or that relative to its frame's mean (exponential).
        atom_sums = np.maximum(H_sp.sum(axis=1), _TINY)
        speech_rates = np.full((n_frames, 1), float(self.sparsity))
        if self.likelihood == "exponential":
            speech_rates /= np.maximum(X.mean(axis=1, keepdims=True), _floor_of(X))
        rates = np.hstack([self.prior_rate_ / atom_sums + speech_rates, np.full((n_frames, r_no), self.prior_rate_)])
        H_unit = H_sp / atom_sums[:, None]
        half_mean = 0.5 * X.mean()
        # Activations start equal in every frame, so the result does not depend on
        # the order of the frames; the random noise atoms break the symmetry.
        speech_level = half_mean / max(float(H_unit.sum(axis=0).mean()), _TINY)
        noise_scale = np.sqrt(half_mean / r_no)
        W = np.hstack([np.full((n_frames, r_sp), speech_level), np.full((n_frames, r_no), noise_scale)])
        noise_atoms = check_random_state(self.random_state).uniform(0.5, 1.5, size=(r_no, X.shape[1]))
        H = np.vstack([H_unit, noise_scale * noise_atoms])
        W, H, path, n_iter = self._run_em(X, W, H, "separation", stacklevel=3, first_learned=r_sp,
                                          activation_rates=rates)
        return SeparationResult(
            speech_activations=W[:, :r_sp] / atom_sums, noise_activations=W[:, r_sp:], speech_components=H_sp,
            noise_components=H[r_sp:], objective_path=path, n_iter=n_iter,
        )

    def separate(self, X):
        """Speech and noise intensities of a mixture.

        Parameters
        ----------
        %(X_mixture)s

        Returns
        -------
        speech : ndarray of shape (n_frames, n_freq)
            :math:`W^{sp} H^{sp}`, with ``H^{sp} = components_``.
        noise : ndarray of shape (n_frames, n_freq)
            :math:`W^{no} H^{no}`.
        """
        result = self.decompose(X)
        return result.speech, result.noise

    def speech_mask(self, X):
        r"""Wiener-style speech mask :math:`V^{sp} / (V^{sp} + V^{no})` of a mixture.

        Parameters
        ----------
        %(X_mixture)s

        Returns
        -------
        mask : ndarray of shape (n_frames, n_freq)
            Values in :math:`[0, 1]`.
        """
        return self.decompose(X).mask

    def denoise(self, X):
        """Speech estimate: the mixture's STFT through the speech mask, in the units of ``X``.

        The mask times a magnitude spectrogram (Poisson), the mask squared
        times a power spectrogram (exponential): either way the square root
        of a power, times the mixture's phase, inverts to the waveform of the
        masked STFT.

        Parameters
        ----------
        %(X_mixture)s

        Returns
        -------
        speech : ndarray of shape (n_frames, n_freq)
            ``speech_mask(X) * X`` (Poisson) or ``speech_mask(X) ** 2 * X``
            (exponential).
        """
        X = self._validate_input(X, reset=False)
        mask = self.decompose(X).mask
        return (mask if self.likelihood == "poisson" else mask**2) * X

    def transform(self, X):
        """Speech activations of a mixture (noise modelled and discarded).

        Parameters
        ----------
        X : array-like of shape (n_frames, n_freq)
            Non-negative magnitude spectrogram.

        Returns
        -------
        W : ndarray of shape (n_frames, n_speech_components)
            MAP activations of ``components_``; deterministic for an int
            ``random_state``.
        """
        return np.array(self.decompose(X).speech_activations)
