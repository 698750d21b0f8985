r"""The CP model's priors: exponential rates, one per mode, and the rate that follows the data's scale.

Every method of the family evaluates the same model,

.. math::
    x_{i_1 \dots i_N} \mid \theta \sim p(x \mid v),\quad
    v = \sum_r \prod_m F^{(m)}_{i_m r} + f,\quad F^{(m)}_{ir} \sim \mathcal{E}(\lambda_m),

with the likelihood of :mod:`~skevidence.cp.likelihood` (Cemgil 2009;
Şimşekli et al. 2016; Nguyen et al. 2018).
"""

import numbers

import numpy as np

__all__ = ["auto_prior_rate", "check_prior_rates"]


def check_prior_rates(prior_rates, n_modes, name="prior_rates"):
    """``n_modes`` positive finite rates (a tuple) from a number or a sequence of ``n_modes``, or a ``ValueError``."""
    if isinstance(prior_rates, numbers.Real) and not isinstance(prior_rates, bool):
        rates = (prior_rates,) * n_modes
    else:
        try:
            rates = tuple(prior_rates)
        except TypeError:
            rates = ()
    valid = all(isinstance(r, numbers.Real) and not isinstance(r, bool) and np.isfinite(r) and r > 0 for r in rates)
    # numpy scalars are Real; a numpy array of rates is a sequence of them.
    if len(rates) != n_modes or not valid:
        raise ValueError(f"{name} must be a positive finite number or a sequence of {n_modes} of them (one per "
                         f"mode), got {prior_rates!r}.")
    return tuple(float(r) for r in rates)


def auto_prior_rate(X, n_components):
    r"""The exponential priors' rate that follows the data's scale: :math:`(R / \bar x)^{1/N}`.

    With this rate on every one of the :math:`N` modes the prior mean of
    every entry of the intensity, :math:`R / \lambda^N`, is the data's mean
    :math:`\bar x`, at every rank. Scaling ``X`` by :math:`c` scales
    :math:`\lambda` by :math:`c^{-1/N}`, and the map :math:`F^{(m)} \mapsto
    c^{1/N} F^{(m)}` carries one posterior onto the other: for a likelihood
    that is a density of real values (exponential, Gamma),
    :math:`\log Z(cX) = \log Z(X) - n \log c` exactly (``n`` entries), the
    same shift at every rank (see the user guide for the proof).
    """
    total = float(X.sum())
    size = float(np.prod(X.shape))
    if not total > 0:
        raise ValueError("prior_rate='auto' needs data with a positive mean; X is zero everywhere.")
    return float((n_components * size / total) ** (1.0 / len(X.shape)))
