"""SGLD on the logarithm of positive parameters."""

import numpy as np

from ._base import Sampler

__all__ = ["LogSGLD"]


class LogSGLD(Sampler):
    r"""SGLD on :math:`u = \log\theta` for strictly positive parameters.

    The chain targets :math:`p_t(e^u)\,e^{\sum u}` (the Jacobian included), so
    :math:`\nabla_u = \theta \odot g(\theta) + 1`, and

    .. math::
        \theta \leftarrow \theta \odot \exp\big(\epsilon\,(\theta \odot g + 1)
              + \mathcal{N}(0, 2\epsilon I)\big).

    Moves are multiplicative, so scale parameters that span orders of
    magnitude (NMF factors under exponential priors) mix far better than with
    additive moves and mirroring, and the state stays positive. The step size
    is in log units (about ``0.01``). Poisson NMF's fused kernel adds a fixed,
    data-given diagonal preconditioner (see
    :func:`skevidence.kernels.nmf.run_nmf_chain`); this generic version has
    none. Models must declare all parameters non-negative
    (``nonnegative = True``) and start from a strictly positive state.
    """

    name = "logsgld"
    requires_positive = True

    def step(self, theta, grad, mean_lik_grad, step_size, rng, state):
        noise = rng.standard_normal(theta.shape)
        return theta * np.exp(step_size * (theta * grad + 1.0) + np.sqrt(2.0 * step_size) * noise)

    def __repr__(self):
        return "LogSGLD()"
