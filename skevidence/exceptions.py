"""Exceptions raised by skevidence."""

__all__ = ["SamplerDivergenceError"]


class SamplerDivergenceError(ValueError, FloatingPointError):
    """A sampler produced a non-finite state.

    Raised instead of returning a NaN evidence. It is a :class:`ValueError`
    (the settings are wrong for the data) and a :class:`FloatingPointError`
    (the arithmetic overflowed), so either ``except`` clause catches it.

    Attributes
    ----------
    temperature : float
        Inverse temperature of the chain that diverged.
    iteration : int
        1-based iteration at which the state stopped being finite.
    step_size : float
        Step size in force at that iteration.
    """

    def __init__(self, message, *, temperature=None, iteration=None, step_size=None):
        super().__init__(message)
        self.temperature, self.iteration, self.step_size = temperature, iteration, step_size
