"""Turning a scikit-learn ``random_state`` into independent NumPy streams."""

import numbers

import numpy as np

__all__ = ["seed_sequence"]


def seed_sequence(random_state):
    """A :class:`numpy.random.SeedSequence` from a scikit-learn style ``random_state``.

    An int is used as the seed itself, so the same int always gives the same
    streams; a ``RandomState`` or ``Generator`` is advanced by one draw; ``None``
    takes fresh entropy from the OS. Streams for separate pieces of work (one
    temperature, one block) are then ``spawn``-ed children, which keeps results
    independent of the order or the thread the pieces run on.
    """
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be non-negative, got {random_state}.")
        return np.random.SeedSequence(int(random_state))
    if isinstance(random_state, (np.random.RandomState, np.random.Generator)):
        return np.random.SeedSequence(int.from_bytes(random_state.bytes(8), "little"))  # one draw of 64 bits
    raise ValueError("random_state must be None, a non-negative int, a numpy RandomState or Generator, got "
                     f"{random_state!r}.")
