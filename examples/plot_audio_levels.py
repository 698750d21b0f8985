"""
The rank of a recording, not of its loudness
============================================

Three recordings — the bundled trumpet clip, a NOIZEUS sentence (Hu and
Loizou 2007) and a music excerpt — each at three playback levels (peak 1, 0.1
and 0.01). The model is an NMF of the power spectrogram :math:`|STFT|^2` with
exponential entries of mean :math:`WH` (the composite Gaussian model whose
maximum likelihood is Itakura–Saito NMF; Févotte, Bertin and Durrieu 2009) and
the prior rate ``"auto"``, which follows the data's scale. Playing a recording
:math:`c` times louder multiplies its power by :math:`c^2` and shifts every
rank's log-evidence by the same :math:`-IJ\\log c^2`, so after that shift the
three curves of a recording lie on one another, and the chosen rank is the
same (the Poisson model of the papers, which reads magnitudes as counts,
chooses larger ranks for louder recordings).

The NOIZEUS sentence and the music are not shipped with skevidence: the
script looks for them next to the repository (``../shared/data/audio``) and
runs on the bundled clip alone when they are missing. The budget is small
(short excerpts, every rank screened by one round of its chains and the
ranks still in the running refined at most twice); the stated error bars say
what it buys. ``SKEVIDENCE_EXAMPLE_BUDGET=short`` (the documentation's CI
build) runs the same selector on the bundled clip alone, ranks 1 and 2, with
one second of it, short chains and no tolerance.
"""

# %%
import os
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from skevidence import BayesianNMFRankSelector
from skevidence.audio import SpectrogramTransformer, load_audio
from skevidence.datasets import load_example_audio


def find_shared_audio():
    """The folder of shared recordings next to the repository, or None."""
    candidates = []
    try:
        candidates.append(Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "audio")
    except NameError:  # sphinx-gallery may run the script without __file__
        pass
    for base in (Path.cwd(), Path.cwd().parent):
        candidates.append(base.parent / "shared" / "data" / "audio")
    for folder in candidates:
        if (folder / "noizeus" / "clean" / "sp01.wav").is_file():
            return folder.resolve()
    return None


SHORT = os.environ.get("SKEVIDENCE_EXAMPLE_BUDGET", "full") == "short"
if SHORT:
    print("SKEVIDENCE_EXAMPLE_BUDGET=short: the bundled clip alone, ranks 1 and 2, short chains")
SECONDS = 1.0 if SHORT else 1.5
recordings = {}
x, rate = load_example_audio()
recordings["trumpet (bundled)"] = (x[: int(SECONDS * rate)], rate)
shared = None if SHORT else find_shared_audio()
if shared is not None:
    x, rate = load_audio(shared / "noizeus" / "clean" / "sp01.wav")
    recordings["NOIZEUS sp01"] = (x[: int(SECONDS * rate)], rate)
    x, rate = load_audio(shared / "librosa-data" / "wav" / "Kevin_MacLeod_-_Vibe_Ace.wav")
    start = int(10 * rate)
    recordings["music (Vibe Ace)"] = (x[start : start + int(SECONDS * rate)], rate)

# %%
# Every recording at three levels: one rank selector each
# --------------------------------------------------------
# A rank whose error bar stays above ``tol`` raises a ``ConvergenceWarning``
# saying why (on these spectrograms, mostly the search for the posterior's
# best mode); they are counted and the first is printed.
RANKS = (1, 2) if SHORT else (1, 2, 4, 8)
if SHORT:
    settings = dict(method_params=dict(n_temperatures=4, n_burnin=20, n_keep=20, n_starts=2), tol=None)
else:
    settings = dict(method_params=dict(max_refinements=2), tol=2.0)
LEVELS = (1.0, 0.1, 0.01)
results = {}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for name, (x, rate) in recordings.items():
        x = x / np.abs(x).max()
        for level in LEVELS:
            X = SpectrogramTransformer(n_fft=512, scale=1.0, power=2, sample_rate=rate).fit_transform([level * x])
            selector = BayesianNMFRankSelector(
                ranks=RANKS, prior_rate="auto", likelihood="exponential", **settings, n_jobs=2, random_state=0,
            ).fit(X)
            # log Z(c^2 X) = log Z(X) - IJ log c^2: undo the shift to compare the levels.
            shift = X.size * np.log(level**2)
            results[name, level] = (selector, selector.log_evidence_ + shift)
            print(f"{name:20s} peak {level:<5g} chosen rank {selector.best_rank_}")
if caught:
    print(f"{len(caught)} warnings, the first: {caught[0].category.__name__}: {caught[0].message}")

# %%
# The evidence curves
# -------------------
# Differences from rank 1, in nats, with the stated error bars.
fig, axes = plt.subplots(1, len(recordings), figsize=(4.2 * len(recordings), 3.6), squeeze=False)
for ax, name in zip(axes[0], recordings):
    for level, marker in zip(LEVELS, "osd"):
        selector, shifted = results[name, level]
        ax.errorbar(RANKS, shifted - shifted[0], yerr=selector.log_evidence_std_, marker=marker, capsize=3,
                    label=f"peak {level:g} (rank {selector.best_rank_})")
    ax.set_xscale("log", base=2)
    ax.set_xticks(RANKS, [str(r) for r in RANKS])
    ax.set_xlabel("rank")
    ax.set_title(name)
    ax.legend(fontsize=8)
axes[0, 0].set_ylabel("log-evidence - rank 1's (nats)")
fig.tight_layout()

# %%
# The components of the chosen rank
# ---------------------------------
# Spectra (columns of ``H``, in dB) and activations (columns of ``W``) of the
# full-level trumpet at its chosen rank.
selector, _ = results["trumpet (bundled)", 1.0]
best = selector.best_estimator_
x, rate = recordings["trumpet (bundled)"]
X = SpectrogramTransformer(n_fft=512, scale=1.0, power=2, sample_rate=rate).fit_transform([x / np.abs(x).max()])
W = best.transform(X)
freqs = np.arange(X.shape[1]) * rate / 512
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
for r, spectrum in enumerate(best.components_):
    ax1.plot(freqs, 10 * np.log10(spectrum / spectrum.max()), lw=0.8, label=f"component {r + 1}")
    ax2.plot(W[:, r] / W[:, r].max() + r, lw=0.8)
ax1.set_xlabel("frequency (Hz)")
ax1.set_ylabel("dB")
ax1.set_ylim(-80, 3)
ax1.legend(fontsize=7)
ax2.set_xlabel("frame")
ax2.set_ylabel("activation (normalised, offset)")
fig.suptitle(f"trumpet at rank {selector.best_rank_}")
fig.tight_layout()
plt.show()
