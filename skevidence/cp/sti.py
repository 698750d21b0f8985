r"""The papers' stochastic thermodynamic integration from the prior, for CP models.

STI integrates :math:`E_{p_t}[\log p(X \mid \theta)]` over the power
posteriors :math:`p_t \propto p(\theta)\,p(X \mid \theta)^t` from the prior
(:func:`~skevidence.sti_log_evidence`), each temperature's expectation from a
chain of the block-parallel SGLD or pSGLD kernel of
:mod:`~skevidence.cp.kernels.sgmcmc` (Şimşekli et al. 2016; Nguyen et al.
2018). Its error bar is the chains' Monte-Carlo error only: the bias of
unadjusted minibatch steps and of the ladder is not in it, so the estimators'
default is referenced TI (:func:`~skevidence.cp.referenced_ti_log_evidence`).
"""

from dataclasses import replace

import numpy as np

from .._config import DEFAULT_BLOCKS, STI_DEFAULTS
from ..evidence.sti import sti_log_evidence as _sti
from ..models._base import EvidenceModel
from ..samplers import PSGLD, SGLD
from .kernels.sgmcmc import run_chain, score_prior
from .likelihood import likelihood_kappa
from .reference import as_data

__all__ = ["CPModel", "sti_log_evidence"]


class CPModel(EvidenceModel):
    """The CP model as the STI driver sees it: prepared data, and its own chain runner.

    The runner makes one fused kernel call a temperature; the state between
    temperatures is the stacked factors.

    Parameters
    ----------
    n_components : int
    prior_rates : float or tuple of float
        One rate per mode (one for all).
    n_blocks : int
        Groups :math:`B` of every mode.
    """

    def __init__(self, n_components, prior_rates, n_blocks):
        self.n_components, self.prior_rates, self.n_blocks = n_components, prior_rates, n_blocks

    def prepare_data(self, X, y=None):
        return X, None

    def n_data(self, X, y=None):
        return X.n_data

    def chain_runner(self, X, y, *, sampler, batch_size):
        if not isinstance(sampler, (SGLD, PSGLD)):
            raise ValueError(f"The CP chains run SGLD or pSGLD inside their kernel; got the sampler {sampler!r}.")
        self.data, self.sampler, self.blocks = X, sampler, X.blocks(self.n_blocks)
        # A part of B blocks is the minibatch.
        self.batch_size = max(1, X.n_data // self.n_blocks ** (len(X.shape) - 1))
        return self

    def initial_state(self, rng):
        return None

    def run(self, state, temperature, *, n_samples, n_burnin, schedule, rng):
        """One chain at ``temperature`` from ``state``, updated in place; exact prior draws at ``t = 0``."""
        seed_seq = np.random.SeedSequence(rng.integers(2**63))
        if temperature == 0.0:  # the ladder's first rung
            trace, F = score_prior(self.data, self.blocks, self.n_components, n_samples - n_burnin,
                                   prior_rates=self.prior_rates, seed_seq=seed_seq)
            return F, trace
        sampler = self.sampler
        psgld = (dict(alpha=sampler.alpha, sigma=sampler.sigma, freeze=sampler.adapt == "burnin")
                 if isinstance(sampler, PSGLD) else {})
        return state, run_chain(self.data, self.blocks, state, temperature=temperature, n_samples=n_samples,
                                n_burnin=n_burnin, step_a=schedule.a, step_b=schedule.b, sampler=sampler.name,
                                prior_rates=self.prior_rates, seed_seq=seed_seq, **psgld)


def sti_log_evidence(X, n_components, prior_rates=1.0, *, likelihood="poisson", likelihood_shape=1.0,
                     noise_floor=0.0, temperatures=STI_DEFAULTS["temperatures"], ladder=STI_DEFAULTS["ladder"],
                     n_samples=STI_DEFAULTS["n_samples"], n_burnin=STI_DEFAULTS["n_burnin"],
                     sampler=STI_DEFAULTS["sampler"], step_size=STI_DEFAULTS["step_size"],
                     step_decay=STI_DEFAULTS["step_decay"], n_blocks="auto", random_state=None, verbose=0):
    r"""Log-evidence of a CP model (NMF for a matrix) by the papers' STI from the prior.

    Parameters
    ----------
    X : array-like or scipy.sparse array of shape (n_1, ..., n_N), N = 2 or 3
        Non-negative data (see :func:`~skevidence.cp.referenced_ti_log_evidence`).
    n_components : int
        Rank :math:`R`.
    prior_rates : float or sequence of N floats, default=1.0
        Rates of the exponential priors.
    likelihood : {"poisson", "exponential", "gamma"}, default="poisson"
    likelihood_shape : float, default=1.0
        Shape :math:`\kappa` of the Gamma likelihood.
    noise_floor : float, default=0.0
        The known noise floor added to every entry's mean (see
        :func:`~skevidence.cp.referenced_ti_log_evidence`).
    temperatures, ladder, n_samples, n_burnin, step_size, step_decay
        The ladder and the chains, as for :func:`skevidence.sti_log_evidence`
        (a part of ``B`` blocks is the minibatch).
    sampler : {"psgld", "sgld"} or Sampler, default="psgld"
        pSGLD (Nguyen et al. 2018) or SGLD (Şimşekli et al. 2016).
    n_blocks : int or "auto", default="auto"
        Groups :math:`B` of every mode (parts of :math:`\prod_m n_m / B^{N-1}`
        entries); ``"auto"`` is ``min(5, n_1, ..., n_N)``.
    random_state : int, RandomState instance or None, default=None
    verbose : int, default=0

    Returns
    -------
    EvidenceResult
        ``method="sti"``; ``posterior_mean`` holds each mode's factor
        ``(n_m, R)``, the chain's mean at :math:`t = 1`.
    """
    data = as_data(X, likelihood_kappa(likelihood, likelihood_shape), noise_floor)
    if len(data.shape) not in (2, 3):
        raise ValueError(f"The CP chains take two- and three-way data, got shape {data.shape}.")
    B = min(DEFAULT_BLOCKS, *data.shape) if n_blocks == "auto" else n_blocks
    if isinstance(B, bool) or not isinstance(B, (int, np.integer)) or not 1 <= B <= min(data.shape):
        raise ValueError(f"n_blocks must be 'auto' or an integer from 1 to {min(data.shape)} (every mode is cut "
                         f"into n_blocks non-empty groups), got {n_blocks!r}.")
    # The kernels check the prior rates.
    model = CPModel(int(n_components), prior_rates, int(B))
    result = _sti(model, data, temperatures=temperatures, ladder=ladder, n_samples=n_samples, n_burnin=n_burnin,
                  sampler=sampler, step_size=step_size, step_decay=step_decay, random_state=random_state,
                  verbose=verbose)
    return replace(result, posterior_mean=np.split(result.posterior_mean, data.offsets[1:-1]))
