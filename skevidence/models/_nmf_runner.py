"""The chain runner of Poisson NMF: one fused numba kernel call per temperature."""

import numpy as np

from ..evidence._runner import ChainTrace
from ..kernels.nmf import run_nmf_chain
from ..samplers import PSGLD, SGLD, LogSGLD

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

    def _prior_draw(self, rng):
        return self.model.sample_factors(rng, *self.data.shape)

    def initial_state(self, rng):
        return self._prior_draw(rng)

    def _chain(self, W, H, temperature, n_samples, n_burnin, schedule, rng):
        return run_nmf_chain(
            self.data,
            W,
            H,
            temperature=temperature,
            n_samples=n_samples,
            n_burnin=n_burnin,
            step_a=schedule.a,
            step_b=schedule.b,
            lam_w=self.model.prior_rate_w,
            lam_h=self.model.prior_rate_h,
            seed_seq=np.random.SeedSequence(rng.integers(2**63)),
            **self._kernel_args(),
        )

    def run(self, state, temperature, *, n_samples, n_burnin, schedule, rng):
        """One chain at ``temperature`` from ``(W, H)``; exact prior draws at ``t = 0``."""
        n_kept = n_samples - n_burnin
        if temperature == 0.0:
            # Exact independent prior draws, each scored on one random part by
            # a one-iteration kernel call (its update is discarded).
            kept = np.empty(n_kept)
            W_sum, H_sum = 0.0, 0.0
            n_evals = 0
            for k in range(n_kept):
                W, H = self._prior_draw(rng)
                W_sum, H_sum = W_sum + W, H_sum + H
                out = self._chain(W.copy(), H.copy(), 0.0, 1, 0, schedule, rng)
                kept[k] = out.log_likelihood[0]
                n_evals += out.n_likelihood_evaluations
            return (W, H), ChainTrace(kept, n_evals, np.nan, None, (W_sum / n_kept, H_sum / n_kept))
        W, H = (np.array(a, dtype=np.float64, order="C") for a in state)
        out = self._chain(W, H, temperature, n_samples, n_burnin, schedule, rng)
        trace = ChainTrace(
            out.log_likelihood, out.n_likelihood_evaluations, out.step_size, None, (out.W_mean, out.H_mean)
        )
        return (W, H), trace
