"""Preconditioned SGLD with an RMSprop preconditioner (Li et al. 2016; Nguyen et al. 2018)."""

import numpy as np

from .._config import PSGLD_ALPHA, PSGLD_SIGMA
from ._base import Sampler

__all__ = ["PSGLD"]


class PSGLD(Sampler):
    r"""pSGLD, Nguyen et al. (2018) eq. 8-9 and its supplement eq. 1-3.

    .. math::
        v &\leftarrow \alpha v + (1-\alpha)\,\bar g \odot \bar g, \qquad
        G = 1 \oslash (\sigma + \sqrt{v}), \\
        \theta &\leftarrow \theta + \epsilon\, G \odot g(\theta)
              + \sqrt{G} \odot \mathcal{N}(0, 2\epsilon I),

    with :math:`\bar g` the tempered per-datum likelihood gradient of the
    minibatch. Like the papers, it omits the :math:`\Gamma(\theta)` drift
    correction, whose bias is :math:`O((1-\alpha)/\alpha^{3/2})` (Nguyen et al. 2018).

    The papers leave :math:`v_0` open; it is set to the first
    :math:`\bar g \odot \bar g`, so the first steps are not blown up by
    ``G = 1 / sigma``.

    The Poisson NMF and PARAFAC kernels run this rule with each entry's drift
    :math:`\epsilon G g` capped at ``LANGEVIN_MAX_DRIFT`` standard deviations
    of its noise :math:`\sqrt{2\epsilon G}` (``skevidence._config``): their
    gradient diverges as an intensity nears zero, and an uncapped Euler step
    from there throws the entry far into the tail. This generic version, for
    smooth models, has no cap.

    **Adapting and freezing.** With ``adapt="always"`` (the papers) ``v``
    keeps adapting while samples are kept. Because ``G`` then depends on the
    state, the chain's stationary law is not the target: without the
    :math:`\Gamma(\theta)` term it is :math:`\propto p_t(\theta)/G(\theta)`,
    a bias that is large where the gradient signal dominates its minibatch
    noise (low temperatures, large batches). The default ``adapt="burnin"``
    adapts ``v`` during burn-in only and freezes it for the kept samples: a
    constant preconditioner leaves the target invariant (up to the step-size
    bias), and this measurably reduces the evidence bias against closed forms
    (see the user guide).

    Parameters
    ----------
    alpha : float, default=0.99
        Decay :math:`\alpha \in [0, 1)` of the running mean of squared gradients.
    sigma : float, default=1e-5
        Floor :math:`\sigma > 0` added to :math:`\sqrt{v}`; it bounds ``G`` by ``1 / sigma``.
    adapt : {"burnin", "always"}, default="burnin"
        When ``v`` adapts: during burn-in only, then frozen; or at every
        iteration, as in Nguyen et al. (2018) and its supplement.
    """

    name = "psgld"

    def __init__(self, alpha=PSGLD_ALPHA, sigma=PSGLD_SIGMA, adapt="burnin"):
        if not 0.0 <= alpha < 1.0:
            raise ValueError(f"alpha must be in [0, 1), got {alpha!r}.")
        if not sigma > 0.0:
            raise ValueError(f"sigma must be positive, got {sigma!r}.")
        if adapt not in ("always", "burnin"):
            raise ValueError(f"adapt must be 'always' or 'burnin', got {adapt!r}.")
        self.alpha, self.sigma, self.adapt = float(alpha), float(sigma), adapt

    def init_state(self, theta):
        return {"v": None, "frozen": False}

    def end_burnin(self, state):
        state["frozen"] = self.adapt == "burnin"

    def step(self, theta, grad, mean_lik_grad, step_size, rng, state):
        v = state["v"]
        if v is None:
            v = mean_lik_grad * mean_lik_grad
        elif not state["frozen"]:
            v = self.alpha * v + (1.0 - self.alpha) * mean_lik_grad * mean_lik_grad
        state["v"] = v
        state["precond"] = precond = 1.0 / (self.sigma + np.sqrt(v))
        noise = rng.standard_normal(theta.shape)
        return theta + step_size * precond * grad + np.sqrt(2.0 * step_size * precond) * noise

    def noise_std(self, step_size, state):
        return np.sqrt(2.0 * step_size * state["precond"])
