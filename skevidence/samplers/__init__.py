"""Stochastic-gradient MCMC samplers: one small class each."""

from ._base import Sampler, mirror
from ._schedule import StepSizeSchedule
from .psgld import PSGLD
from .sghmc import SGHMC
from .sgld import SGLD

__all__ = ["PSGLD", "SGHMC", "SGLD", "Sampler", "StepSizeSchedule", "get_sampler", "mirror"]

_BY_NAME = {"sgld": SGLD, "psgld": PSGLD, "sghmc": SGHMC}


def get_sampler(sampler):
    """A :class:`Sampler` from its name (``"sgld"``, ``"psgld"``, ``"sghmc"``) or itself."""
    if isinstance(sampler, Sampler):
        return sampler
    if isinstance(sampler, str) and sampler.lower() in _BY_NAME:
        return _BY_NAME[sampler.lower()]()
    raise ValueError(f"sampler must be one of {sorted(_BY_NAME)} or a Sampler instance, got {sampler!r}.")
