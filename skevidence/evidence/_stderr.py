"""Monte-Carlo error of a mean of autocorrelated samples."""

import numpy as np

from .._config import MIN_BATCHES

__all__ = ["batch_means_variance"]


def batch_means_variance(x):
    r"""Variance of the mean of a stationary, autocorrelated series, by batch means.

    The series is cut into :math:`a` non-overlapping batches of length
    :math:`m = \lfloor\sqrt{n}\rfloor` (at least ``MIN_BATCHES`` batches);
    the variance of the mean is :math:`\mathrm{Var}(\bar x_{\rm batch})/a`.
    It is consistent when the batches are longer than the autocorrelation
    time; the returned integrated autocorrelation time
    :math:`\hat\tau = n\,\widehat{\mathrm{Var}}(\bar x)/\hat\sigma^2` tells
    whether they were.

    Parameters
    ----------
    x : ndarray of shape (n,)

    Returns
    -------
    var_mean : float
        Estimated variance of ``x.mean()``.
    tau : float
        Estimated integrated autocorrelation time (1 for independent samples).
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    if n < 2:
        return np.inf, np.nan
    batch_len = max(1, min(int(np.sqrt(n)), n // MIN_BATCHES))
    n_batches = n // batch_len
    # Drop the oldest samples that do not fill a batch: they are the least
    # stationary ones.
    means = x[n - n_batches * batch_len :].reshape(n_batches, batch_len).mean(axis=1)
    var_mean = means.var(ddof=1) / n_batches
    var_x = x.var(ddof=1)
    tau = n * var_mean / var_x if var_x > 0 else 1.0
    # Batch means underestimate for series shorter than their correlation;
    # never report less than the independent-sample variance.
    var_mean = max(var_mean, var_x / n)
    return float(var_mean), float(max(tau, 1.0))
