"""Stochastic gradient Hamiltonian Monte Carlo (Chen et al. 2014; Cameron et al. 2019b, eq. 5)."""

import numbers

import numpy as np

from .._validation import check_positive_real
from ._base import Sampler

__all__ = ["SGHMC"]


class SGHMC(Sampler):
    r"""SGHMC in the parametrisation of Cameron et al. (2019b), eq. 5.

    .. math::
        \Delta v &= -\eta\,\nabla\hat U(\theta) - \alpha v
                    + \mathcal{N}\big(0,\ 2(\alpha - \hat\beta)\,\eta\,I\big), \\
        \Delta\theta &= v,

    with :math:`\hat U` the minibatch estimate of the negative log target, so
    :math:`-\nabla\hat U` is the ``grad`` the caller passes. The velocity is
    updated first and the position moves with the new velocity. The velocity
    :math:`v` is the per-chain state; at equilibrium it is
    :math:`\mathcal{N}(0, \eta I)`, which is where a new chain starts it, and
    when :math:`\eta` changes between calls (SGAIS lowers it as data arrive)
    it is rescaled by :math:`\sqrt{\eta_\text{new}/\eta_\text{old}}` so that
    it stays at equilibrium.

    Every operation is element-wise, so ``theta`` may also be a stack of
    chains of shape ``(M, n_params)`` (SGAIS moves all its particles at once).

    Parameters
    ----------
    learning_rate : float or None, default=None
        :math:`\eta`. ``None`` uses the ``step_size`` the caller passes (the
        step-size schedule of STI, or SGAIS's :math:`0.1/n`); a number fixes
        :math:`\eta` whatever the caller passes.
    momentum_decay : float, default=0.2
        The friction :math:`\alpha \in (0, 1]`: each step keeps a fraction
        :math:`1 - \alpha` of the velocity (the papers call :math:`1-\alpha`
        the momentum decay and use :math:`\alpha = 0.2`).
    noise_correction : float, default=0.0
        :math:`\hat\beta \in [0, \alpha]`, an estimate of the gradient-noise
        variance subtracted from the injected noise; 0 in the papers, where
        :math:`\eta = O(1/n)` makes the gradient noise negligible.

    Notes
    -----
    For a Gaussian target of curvature :math:`\lambda` the update is stable
    for :math:`\eta\lambda < 2(2 - \alpha)`; its stationary variance carries a
    discretisation bias of order :math:`\eta\lambda`.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence.samplers import SGHMC
    >>> sampler, rng = SGHMC(learning_rate=0.05), np.random.default_rng(0)
    >>> theta = np.zeros(1)
    >>> state = sampler.init_state(theta)
    >>> draws = []
    >>> for _ in range(20000):  # standard normal target: grad log p = -theta
    ...     theta = sampler.step(theta, -theta, None, None, rng, state)
    ...     draws.append(theta[0])
    >>> bool(abs(np.std(draws) - 1.0) < 0.1)
    True
    """

    name = "sghmc"

    def __init__(self, learning_rate=None, momentum_decay=0.2, noise_correction=0.0):
        if not (isinstance(momentum_decay, numbers.Real) and 0.0 < momentum_decay <= 1.0):
            raise ValueError(f"momentum_decay must be in (0, 1], got {momentum_decay!r}.")
        if not (isinstance(noise_correction, numbers.Real) and 0.0 <= noise_correction <= momentum_decay):
            raise ValueError(f"noise_correction must be in [0, momentum_decay] = [0, {momentum_decay!r}], "
                             f"got {noise_correction!r}: it is subtracted from the friction's noise.")
        self.learning_rate = None if learning_rate is None else check_positive_real("learning_rate", learning_rate)
        self.momentum_decay, self.noise_correction = float(momentum_decay), float(noise_correction)

    def init_state(self, theta):
        return {"v": None, "eta": None}

    def step(self, theta, grad, mean_lik_grad, step_size, rng, state):
        eta = self.learning_rate if self.learning_rate is not None else step_size
        if eta is None or not eta > 0:
            raise ValueError("SGHMC needs a learning rate: pass learning_rate or a positive step_size.")
        v = state["v"]
        if v is None:
            v = np.sqrt(eta) * rng.standard_normal(np.shape(theta))
        elif eta != state["eta"]:
            v = v * np.sqrt(eta / state["eta"])
        noise = rng.standard_normal(np.shape(theta))
        v = (1.0 - self.momentum_decay) * v + eta * grad
        v += np.sqrt(2.0 * (self.momentum_decay - self.noise_correction) * eta) * noise
        state["v"], state["eta"] = v, eta
        return theta + v
