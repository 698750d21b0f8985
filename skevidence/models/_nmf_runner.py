"""The chain runner of Poisson NMF: one fused numba kernel call per temperature."""

import numpy as np

from ..kernels.nmf import run_nmf_chain, score_nmf_prior
from ..samplers import PSGLD, SGLD, LogSGLD
from ._trace import ChainTrace

__all__ = ["NMFChainRunner"]


class NMFChainRunner:
    """Run Poisson NMF chains with the block-parallel kernel of :mod:`skevidence.kernels.nmf`.

    The state passed between temperatures is ``(W, H)``. The minibatch is a
    part (``B`` blocks, one per row group), so :attr:`batch_size` is the
    number of entries of a part, ``I J / B`` for even groups.

    Parameters
    ----------
    model : PoissonNMFModel
        Rank and prior rates.
    data : NMFData
        The blocked matrix.
    sampler : SGLD or PSGLD
        Which update the kernel runs, with its settings.
    """

    def __init__(self, model, data, *, sampler):
        if not isinstance(sampler, (SGLD, PSGLD, LogSGLD)):
            raise ValueError(
                f"Poisson NMF runs SGLD, pSGLD or log-space SGLD inside its kernel; got the sampler {sampler!r}."
            )
        self.model, self.data, self.sampler = model, data, sampler
        n_rows, n_cols = data.shape
        self.batch_size = max(1, (n_rows * n_cols) // data.n_blocks)

    def _kernel_args(self):
        sampler = self.sampler
        if isinstance(sampler, LogSGLD):
            return dict(sampler="logsgld")
        if isinstance(sampler, PSGLD):
            return dict(sampler="psgld", alpha=sampler.alpha, sigma=sampler.sigma, freeze=sampler.adapt == "burnin")
        return dict(sampler="sgld")

    def initial_state(self, rng):
        return self.model.sample_factors(rng, *self.data.shape)

    def run(self, state, temperature, *, n_samples, n_burnin, schedule, rng):
        """One chain at ``temperature`` from ``(W, H)``; exact prior draws at ``t = 0``."""
        if temperature == 0.0:
            out, W, H = score_nmf_prior(
                self.data, self.model.n_components, n_samples - n_burnin,
                lam_w=self.model.prior_rate_w, lam_h=self.model.prior_rate_h,
                seed_seq=np.random.SeedSequence(rng.integers(2**63)),
            )
            return (W, H), ChainTrace(out.log_likelihood, out.n_likelihood_evaluations, np.nan, None,
                                      (out.W_mean, out.H_mean))
        W, H = (np.array(a, dtype=np.float64, order="C") for a in state)
        out = run_nmf_chain(
            self.data, W, H, temperature=temperature, n_samples=n_samples, n_burnin=n_burnin,
            step_a=schedule.a, step_b=schedule.b,
            lam_w=self.model.prior_rate_w, lam_h=self.model.prior_rate_h,
            seed_seq=np.random.SeedSequence(rng.integers(2**63)), **self._kernel_args(),
        )
        trace = ChainTrace(out.log_likelihood, out.n_likelihood_evaluations, out.step_size, None,
                           (out.W_mean, out.H_mean), out.capped_fraction)
        return (W, H), trace
