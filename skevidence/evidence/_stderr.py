"""Monte-Carlo error: of a mean of autocorrelated samples, and the effective size of a weighted sample."""

import numpy as np
from scipy.special import logsumexp

from .._config import AUTOCORR_WINDOW, MIN_BATCHES


def integrated_autocorr_time(x):
    r"""Integrated autocorrelation time :math:`\tau = 1 + 2\sum_{k\ge1}\rho_k`.

    The autocorrelation :math:`\rho_k` is computed by FFT and summed up to
    Sokal's automatic window, the smallest :math:`M` with
    :math:`M \ge c\,\hat\tau(M)` (``c = AUTOCORR_WINDOW``), as in emcee.

    Parameters
    ----------
    x : ndarray of shape (n,)

    Returns
    -------
    tau : float
        At least 1; ``n`` when the series never decorrelates within its length.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    centred = x - x.mean()
    var = centred @ centred
    if n < 4 or var == 0:
        return 1.0
    size = 1 << (2 * n - 1).bit_length()
    spectrum = np.fft.rfft(centred, size)
    rho = np.fft.irfft(spectrum * spectrum.conjugate(), size)[:n] / var
    taus = 2.0 * np.cumsum(rho) - 1.0
    window = np.arange(n) >= AUTOCORR_WINDOW * taus
    if not window.any():
        return float(n)
    return float(max(taus[np.argmax(window)], 1.0))


def batch_means_variance(x):
    r"""Variance of the mean of a stationary, autocorrelated series.

    Two estimates are computed and the larger is returned, so that neither's
    failure mode goes unnoticed:

    - batch means: the series is cut into :math:`a` non-overlapping batches
      of length :math:`m = \lfloor\sqrt{n}\rfloor` (at least ``MIN_BATCHES``
      batches) and :math:`\widehat{\mathrm{Var}}(\bar x) = \mathrm{Var}(\text{batch means})/a`;
      it underestimates when batches are shorter than the correlation;
    - :math:`\hat\tau\,\hat\sigma^2/n` with :math:`\hat\tau` from
      :func:`integrated_autocorr_time`, which sees correlations longer than a
      batch but is noisier.

    Parameters
    ----------
    x : ndarray of shape (n,)

    Returns
    -------
    var_mean : float
        Estimated variance of ``x.mean()``.
    tau : float
        The implied integrated autocorrelation time,
        ``n * var_mean / var(x)`` (1 for independent samples).
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    if n < 2:
        return np.inf, np.nan
    var_x = x.var(ddof=1)
    if var_x == 0:
        return 0.0, 1.0
    batch_len = max(1, min(int(np.sqrt(n)), n // MIN_BATCHES))
    n_batches = n // batch_len
    # Drop the oldest samples that do not fill a batch: they are the least
    # stationary ones.
    means = x[n - n_batches * batch_len :].reshape(n_batches, batch_len).mean(axis=1)
    var_batch = means.var(ddof=1) / n_batches
    var_mean = max(var_batch, integrated_autocorr_time(x) * var_x / n, var_x / n)
    return float(var_mean), float(n * var_mean / var_x)


def normalised_weights(log_weights):
    """The weights ``exp(log_weights)`` scaled to sum to one."""
    log_w = np.asarray(log_weights, dtype=np.float64)
    return np.exp(log_w - logsumexp(log_w))


def effective_sample_size(log_weights):
    r"""Kish's effective sample size :math:`(\sum w)^2 / \sum w^2` of (unnormalised) log-weights."""
    log_w = np.asarray(log_weights, dtype=np.float64)
    return float(np.exp(2.0 * logsumexp(log_w) - logsumexp(2.0 * log_w)))
