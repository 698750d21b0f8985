"""
=====================================================================
Speech enhancement with a fixed speech dictionary
=====================================================================

A dictionary of spectral atoms learned on clean speech, held fixed, and a
small noise dictionary learned on the noisy recording itself separate a
NOIZEUS sentence from street noise. A speaker-independent speech dictionary of
a few dozen atoms fits street noise about as well as it fits speech, so on its
own the mask keeps much of the noise; a sparsity penalty on the speech
activations (``sparsity``) sends the noise the speech atoms fit no better than
the noise atoms to the noise, and the separation is best stopped early: the
longer the noise dictionary is fitted to the mixture, the more of the speech
it takes.

This is the semi-supervised model of
:ref:`Şimşekli et al. (2016) <ref-simsekli2016>`, §4.2 (eq. 14), in the
library's orientation (frames are rows):

.. math::
    X \\sim \\mathcal{PO}\\big(W^{sp} H^{sp} + W^{no} H^{no}\\big),

with ``X`` the magnitude spectrogram of the mixture, :math:`H^{sp}` the speech
dictionary (``components_`` of :class:`~skevidence.SemiSupervisedNMF`, learned
on clean speech by EM), :math:`H^{no}` a noise dictionary of 5 atoms and all
activations :math:`W` learned on the mixture. The speech estimate is the
mixture times the mask :math:`V^{sp} / (V^{sp} + V^{no})`, resynthesised
with the mixture's phase. See :ref:`speech_enhancement` for the model and for
choosing the size of the speech dictionary by the evidence.
"""

# %%
# Where the recordings are
# ------------------------
# The NOIZEUS corpus (Hu & Loizou 2007: 30 IEEE sentences by 6 speakers, 8 kHz,
# with 8 real noises at 4 SNRs) is not shipped with skevidence. The script
# looks for it in ``$SKEVIDENCE_NOIZEUS``, then in ``../shared/data/audio/noizeus``
# next to the repository. Without it, it falls back to the bundled trumpet
# clip with synthetic noise: the code is the same, the numbers are not.

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from skevidence import SemiSupervisedNMF
from skevidence.audio import SpectrogramTransformer, load_audio


def find_noizeus():
    """The NOIZEUS folder (with ``clean/`` and ``noisy/``), or None."""
    candidates = []
    if os.environ.get("SKEVIDENCE_NOIZEUS"):
        candidates.append(Path(os.environ["SKEVIDENCE_NOIZEUS"]))
    try:
        repository = Path(__file__).resolve().parent.parent
        candidates.append(repository.parent / "shared" / "data" / "audio" / "noizeus")
    except NameError:  # sphinx-gallery may run the script without __file__
        pass
    # From the repository root, or from examples/ or docs/ (sphinx-gallery's cwd).
    for base in (Path.cwd(), Path.cwd().parent):
        candidates.append(base.parent / "shared" / "data" / "audio" / "noizeus")
    for folder in candidates:
        if (folder / "clean" / "sp01.wav").is_file():
            return folder.resolve()
    return None


# SKEVIDENCE_EXAMPLE_BUDGET=short (the documentation's CI build): 3 training sentences, fewer EM
# iterations; the same model. The numbers then differ from the text.
SHORT = os.environ.get("SKEVIDENCE_EXAMPLE_BUDGET", "full") == "short"
if SHORT:
    print("SKEVIDENCE_EXAMPLE_BUDGET=short: 3 training sentences, 30 EM iterations, up to 50 separation iterations")

noizeus = find_noizeus()
if noizeus is not None:
    # The training set of Şimşekli et al. (2016): the first 20 clean sentences
    # (4 speakers). The test sentence is spoken by a fifth speaker, in street
    # noise at 5 dB SNR.
    training = [load_audio(noizeus / "clean" / f"sp{k:02d}.wav")[0] for k in range(1, 4 if SHORT else 21)]
    clean, sample_rate = load_audio(noizeus / "clean" / "sp21.wav")
    noisy, _ = load_audio(noizeus / "noisy" / "street_5dB" / "sp21_street_sn5.wav")
    print(f"NOIZEUS from {noizeus}: {len(training)} training sentences, sp21 in street noise at 5 dB to test")
else:
    from skevidence.datasets import load_example_audio

    waveform, sample_rate = load_example_audio("trumpet")
    cut = int(0.6 * waveform.size)
    training, clean = [waveform[:cut]], waveform[cut:]
    # Low-pass ("brown") noise at 5 dB SNR stands in for street noise.
    rng = np.random.default_rng(0)
    noise = np.cumsum(rng.normal(size=clean.size))
    noise -= np.convolve(noise, np.ones(64) / 64, mode="same")  # remove the drift
    noise *= np.linalg.norm(clean) / np.linalg.norm(noise) * 10 ** (-5 / 20)
    noisy = clean + noise
    print("NOIZEUS not found (set SKEVIDENCE_NOIZEUS): using the bundled trumpet clip, "
          "first 60% to train, the rest with synthetic noise at 5 dB SNR")

# %%
# Spectrograms
# ------------
# As in Şimşekli et al. (2016): a Hamming window of 512 samples with 50%
# overlap, magnitudes of the 16-bit samples. Frames are rows. The STFT of the
# mixture keeps its phase for the resynthesis.

spectrogram = SpectrogramTransformer(n_fft=512, hop_length=256, window="hamming")
X_train = spectrogram.transform(training)
X_noisy = spectrogram.transform(noisy)
Z_noisy = spectrogram.stft(noisy)
print(f"training spectrogram {X_train.shape}, mixture {X_noisy.shape} (frames x frequencies)")

# %%
# The speech dictionary
# ---------------------
# ``fit`` learns 64 spectral atoms from the clean training speech by EM (the
# MAP of Poisson NMF with exponential priors of rate 0.0004, the value of
# Şimşekli et al. 2016). ``tol=0`` runs exactly ``max_iter`` iterations.

model = SemiSupervisedNMF(
    n_components=64, n_noise_components=5, max_iter=30 if SHORT else 150, tol=0.0, random_state=0
)
model.fit(X_train)
print(f"speech dictionary {model.components_.shape}, {model.n_iter_} EM iterations, "
      f"KL divergence per entry {model.reconstruction_err_ / X_train.size:.1f}")

# %%
# Separation and resynthesis
# --------------------------
# :meth:`~skevidence.SemiSupervisedNMF.decompose` keeps the speech dictionary
# fixed and learns the noise dictionary and all activations on the mixture; it
# stores nothing on the model. The mask times the mixture's complex STFT,
# inverted, is the speech estimate. We score it with the scale-invariant SDR,
# :math:`10 \log_{10} \|\alpha s\|^2 / \|\alpha s - \hat s\|^2` with
# :math:`\alpha = \langle \hat s, s\rangle / \|s\|^2`.


def si_sdr(reference, estimate):
    """Scale-invariant signal-to-distortion ratio in dB."""
    target = (estimate @ reference) / (reference @ reference) * reference
    return 10 * np.log10((target @ target) / np.sum((estimate - target) ** 2))


model.set_params(max_iter=25)
separation = model.decompose(X_noisy)
enhanced = spectrogram.istft(separation.mask * Z_noisy, noisy.size)
print(f"SI-SDR of the mixture {si_sdr(clean, noisy):.2f} dB, "
      f"of the estimate {si_sdr(clean, enhanced):.2f} dB (25 separation iterations)")

# %%
# Where does the mask go wrong? The clean sentence is known, so the noise is
# too (``noisy - clean``): we measure how much of the energy of each the mask
# keeps.

S_clean = spectrogram.transform(clean)
S_noise = spectrogram.transform(noisy - clean)
mask = separation.mask
kept_speech = np.sum((mask * S_clean) ** 2) / np.sum(S_clean**2)
kept_noise = np.sum((mask * S_noise) ** 2) / np.sum(S_noise**2)
print(f"the mask keeps {kept_speech:.0%} of the speech energy and {kept_noise:.0%} of the noise's")

# %%
# A sparsity penalty on the speech activations: per unit of a unit-sum speech
# atom, an activation must explain ``1 + sparsity`` times what it costs, so the
# noise the speech atoms fit only as well as the noise atoms goes to the noise.
# The mask then keeps less of both, far less of the noise.

sparse = model.set_params(sparsity=0.3).decompose(X_noisy)
enhanced_sparse = spectrogram.istft(sparse.mask * Z_noisy, noisy.size)
kept_speech = np.sum((sparse.mask * S_clean) ** 2) / np.sum(S_clean**2)
kept_noise = np.sum((sparse.mask * S_noise) ** 2) / np.sum(S_noise**2)
print(f"sparsity=0.3: SI-SDR of the estimate {si_sdr(clean, enhanced_sparse):.2f} dB; the mask keeps "
      f"{kept_speech:.0%} of the speech energy and {kept_noise:.0%} of the noise's")
model.set_params(sparsity=0.0)

# %%
# Spectrograms of the mixture, the estimate and the clean speech (in dB, on a
# common scale), and the mask. The speech harmonics survive, but so does much
# of the noise: even where nobody speaks the mask stays well above zero,
# because the speech dictionary explains the noise there too.

frame_times = np.arange(X_noisy.shape[0]) * spectrogram.hop_length / sample_rate
frequencies = np.fft.rfftfreq(512, d=1.0 / sample_rate) / 1000
panels = [
    ("noisy mixture", X_noisy),
    ("estimated speech", spectrogram.transform(enhanced)),
    ("clean speech", S_clean),
]
top = 20 * np.log10(X_noisy.max())
fig, axes = plt.subplots(4, 1, figsize=(6.4, 9.0), sharex=True, sharey=True, layout="constrained")
for ax, (title, S) in zip(axes, panels):
    image = ax.pcolormesh(
        frame_times, frequencies, 20 * np.log10(np.maximum(S, 1e-3)).T,
        vmin=top - 70, vmax=top, cmap="magma", shading="nearest",
    )  # fmt: skip
    ax.set_title(title)
fig.colorbar(image, ax=axes[:3], label="magnitude (dB)")
mask_image = axes[3].pcolormesh(frame_times, frequencies, mask.T, vmin=0, vmax=1, cmap="viridis",
                                shading="nearest")  # fmt: skip
axes[3].set_title("speech mask $V^{sp} / (V^{sp} + V^{no})$")
fig.colorbar(mask_image, ax=axes[3], label="mask")
for ax in axes:
    ax.set_ylabel("frequency (kHz)")
axes[-1].set_xlabel("time (s)")
plt.show()

# %%
# How long to fit the noise
# -------------------------
# Every separation iteration lowers the objective, but the noise dictionary,
# free to fit the mixture, slowly takes over speech that the speech dictionary
# fits no better than noise. The estimate is best after a few dozen
# iterations and degrades afterwards.

n_iterations = [10, 25, 50] if SHORT else [10, 25, 50, 100, 200]
scores = []
for n in n_iterations:
    result = model.set_params(max_iter=n).decompose(X_noisy)
    scores.append(si_sdr(clean, spectrogram.istft(result.mask * Z_noisy, noisy.size)))
    print(f"{n:4d} iterations: SI-SDR {scores[-1]:.2f} dB")

fig, ax = plt.subplots(figsize=(6.4, 3.2), layout="constrained")
ax.plot(n_iterations, scores, "o-", label="estimate")
ax.axhline(si_sdr(clean, noisy), color="k", ls="--", lw=1, label="mixture")
ax.set_xscale("log")
ax.set_xticks(n_iterations, [str(n) for n in n_iterations])
ax.set_xlabel("separation EM iterations")
ax.set_ylabel("SI-SDR (dB)")
ax.legend()
plt.show()

# %%
# The size of the speech dictionary matters as much: too few atoms and the
# dictionary cannot follow the speech, so the noise atoms take it. Şimşekli
# et al. (2016) choose it by the evidence of the clean training spectrogram
# with :class:`~skevidence.BayesianNMFRankSelector`, which needs no noisy
# validation data; :ref:`speech_enhancement` shows how, and
# ``SemiSupervisedNMF(speech_components=selector.components_)`` plugs the
# chosen dictionary in.
