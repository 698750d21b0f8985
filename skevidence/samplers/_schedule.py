"""The step-size schedule shared by every sampler."""

from dataclasses import dataclass


@dataclass(frozen=True)
class StepSizeSchedule:
    r"""Step sizes :math:`\epsilon_k = (a/k)^b` during burn-in, then fixed.

    This is the schedule of Şimşekli et al. (2016) and Nguyen et al. (2018):
    it decreases while the chain burns in and stays at
    :math:`\epsilon_{K_b} = (a/K_b)^b` afterwards, so the kept samples all
    share one step size. As a special case, ``b = 0``
    means a constant step size equal to ``a``.

    Parameters
    ----------
    a : float
        Scale :math:`a > 0`.
    b : float
        Decay exponent :math:`b \in [0, 1]`; the papers use ``0.51``. With
        ``b = 0`` the step size is ``a`` at every iteration.
    n_burnin : int
        Number of burn-in iterations :math:`K_b`, after which the step stays fixed.
    """

    a: float
    b: float
    n_burnin: int

    def __call__(self, k):
        """Step size of iteration ``k`` (1-based)."""
        if self.b == 0:
            return self.a
        return (self.a / min(max(k, 1), max(self.n_burnin, 1))) ** self.b

    @property
    def final(self):
        """The fixed step size used after burn-in."""
        return self(self.n_burnin)

    @classmethod
    def ending_at(cls, final_step_size, b, n_burnin):
        """The schedule whose step size after burn-in is ``final_step_size``."""
        if b == 0:
            return cls(final_step_size, 0.0, n_burnin)
        return cls(max(n_burnin, 1) * final_step_size ** (1.0 / b), b, n_burnin)
