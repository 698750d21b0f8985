"""Stochastic gradient Langevin dynamics (Welling & Teh 2011)."""

import numpy as np

from ._base import Sampler

__all__ = ["SGLD"]


class SGLD(Sampler):
    r"""SGLD: :math:`\theta \leftarrow \theta + \epsilon g(\theta) + \mathcal{N}(0, 2\epsilon I)`.

    The Poisson NMF and PARAFAC kernels run the same rule with each entry's
    drift capped at ``LANGEVIN_MAX_DRIFT`` standard deviations of its noise
    (``skevidence._config``): their gradient diverges as an intensity
    nears zero. This generic version, for smooth models, has no cap.
    """

    name = "sgld"

    def step(self, theta, grad, mean_lik_grad, step_size, rng, state):
        noise = rng.standard_normal(theta.shape)
        return theta + step_size * grad + np.sqrt(2.0 * step_size) * noise

    def noise_std(self, step_size, state):
        return np.sqrt(2.0 * step_size)
