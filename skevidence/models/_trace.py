"""What one chain at one temperature reports back to the STI driver.

It lives with the models because a model's own chain runner (see
:meth:`~skevidence.models.EvidenceModel.chain_runner`) builds it, and models
never import the evidence methods that read it.
"""

from typing import NamedTuple

import numpy as np


class ChainTrace(NamedTuple):
    """What one chain at one temperature reports back to the driver."""

    #: Kept log-likelihood estimates ``(N / N_s) * sum_{n in S_k} log p(x_n | theta_k)``.
    log_likelihood: np.ndarray
    #: Per-datum likelihood evaluations spent by the chain.
    n_likelihood_evaluations: int
    #: Step size in force for the kept samples (NaN for exact prior draws).
    step_size: float
    #: The kept states when they are exact independent prior draws, else ``None``.
    prior_draws: np.ndarray | None = None
    #: Mean of the kept states (in the runner's layout), or ``None``.
    state_mean: object = None
    #: Fraction of the kept entry updates whose drift a fused kernel capped (0 elsewhere).
    capped_fraction: float = 0.0
