"""What every stochastic-gradient sampler provides."""

from abc import ABC, abstractmethod

import numpy as np


class Sampler(ABC):
    r"""One update rule of stochastic-gradient MCMC.

    A sampler is configuration only; the per-chain memory it needs (pSGLD's
    preconditioner, SGHMC's momentum) lives in the ``state`` returned by
    :meth:`init_state` and passed back to :meth:`step`, so one sampler object
    can drive any number of chains.
    """

    #: Short name used in results and messages.
    name = "sampler"

    def init_state(self, theta):
        """Per-chain memory for a chain starting at ``theta``."""
        return None

    def end_burnin(self, state):  # noqa: B027 (an optional hook: a no-op unless a sampler overrides it)
        """Called once when burn-in ends, before the first kept sample."""

    def noise_std(self, step_size, state):
        """Standard deviation of the noise the last :meth:`step` injected, per entry.

        A chain whose updates are many times this size is driven by its drift,
        not by its noise: its Euler steps are too long and it diverges (the
        runner raises :class:`~skevidence.SamplerDivergenceError`). ``None``,
        the default, means the sampler offers no such scale and is not checked.
        """
        return None

    @abstractmethod
    def step(self, theta, grad, mean_lik_grad, step_size, rng, state):
        r"""One update of ``theta``.

        Parameters
        ----------
        theta : ndarray of shape (n_params,)
            Current state (not modified).
        grad : ndarray of shape (n_params,)
            Minibatch estimate of the gradient of the log power posterior,
            :math:`g = t\,(N/N_s)\sum_{n\in S}\nabla\log p(x_n|\theta) + \nabla\log p(\theta)`.
        mean_lik_grad : ndarray of shape (n_params,)
            :math:`\bar g = (t/N_s)\sum_{n\in S}\nabla\log p(x_n|\theta)`, the
            tempered per-datum likelihood gradient (pSGLD's preconditioner uses it).
        step_size : float
            :math:`\epsilon` of this iteration.
        rng : numpy.random.Generator
            Source of the injected noise.
        state : object
            What :meth:`init_state` returned; updated in place.

        Returns
        -------
        theta : ndarray of shape (n_params,)
            The new state.
        """

    def __repr__(self):
        settings = ", ".join(f"{name}={value!r}" for name, value in vars(self).items())
        return f"{type(self).__name__}({settings})"


def mirror(theta, nonnegative):
    """Reflect negative entries of the non-negative parameters at zero (Nguyen et al. 2018)."""
    return theta if nonnegative is None else np.where(nonnegative, np.abs(theta), theta)
