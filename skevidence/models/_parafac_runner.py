"""The chain runner of Poisson PARAFAC: one fused numba kernel call per temperature."""

import numpy as np

from ..kernels.parafac import run_parafac_chain, score_parafac_prior
from ..samplers import PSGLD, SGLD, LogSGLD
from ._trace import ChainTrace

__all__ = ["PARAFACChainRunner"]


class PARAFACChainRunner:
    """Run Poisson PARAFAC chains with the kernel of :mod:`skevidence.kernels.parafac`.

    The state passed between temperatures is ``(A, B, C)``. The minibatch is
    a part (``B`` blocks disjoint in every mode), so :attr:`batch_size` is the
    number of entries of a part, ``I J K / B**2`` for even groups.

    Parameters
    ----------
    model : PoissonPARAFACModel
        Rank and prior rates.
    data : PARAFACData
        The blocked tensor.
    sampler : SGLD, PSGLD or LogSGLD
        Which update the kernel runs, with its settings.
    """

    def __init__(self, model, data, *, sampler):
        if not isinstance(sampler, (SGLD, PSGLD, LogSGLD)):
            raise ValueError(
                "Poisson PARAFAC runs SGLD, pSGLD or log-space SGLD inside its kernel; "
                f"got the sampler {sampler!r}."
            )
        self.model, self.data, self.sampler = model, data, sampler
        self.batch_size = max(1, data.n_data // (data.n_blocks * data.n_blocks))

    def _kernel_args(self):
        sampler = self.sampler
        if isinstance(sampler, LogSGLD):
            return dict(sampler="logsgld")
        if isinstance(sampler, PSGLD):
            return dict(sampler="psgld", alpha=sampler.alpha, sigma=sampler.sigma,
                        freeze=sampler.adapt == "burnin")
        return dict(sampler="sgld")

    def initial_state(self, rng):
        return self.model.sample_factors(rng, self.data.shape)

    def run(self, state, temperature, *, n_samples, n_burnin, schedule, rng):
        """One chain at ``temperature`` from ``(A, B, C)``; exact prior draws at ``t = 0``."""
        seed_seq = np.random.SeedSequence(rng.integers(2**63))
        if temperature == 0.0:
            out, factors = score_parafac_prior(
                self.data, self.model.n_components, n_samples - n_burnin,
                prior_rates=self.model.prior_rates, seed_seq=seed_seq,
            )
            trace = ChainTrace(out.log_likelihood, out.n_likelihood_evaluations, np.nan, None,
                               out.factor_means)
            return factors, trace
        factors = [np.array(F, dtype=np.float64, order="C") for F in state]
        out = run_parafac_chain(
            self.data, factors, temperature=temperature, n_samples=n_samples, n_burnin=n_burnin,
            step_a=schedule.a, step_b=schedule.b, prior_rates=self.model.prior_rates,
            seed_seq=seed_seq, **self._kernel_args(),
        )
        trace = ChainTrace(out.log_likelihood, out.n_likelihood_evaluations, out.step_size, None,
                           out.factor_means, out.capped_fraction)
        return tuple(factors), trace
