"""The chain runner of the CP models: one fused numba kernel call per temperature.

Two modes run the kernel of :mod:`skevidence.kernels.nmf`, three that of
:mod:`skevidence.kernels.parafac`; this module is the one place that knows
which.
"""

import numpy as np

from ..kernels.nmf import NMFData, run_nmf_chain, score_nmf_prior
from ..kernels.parafac import run_parafac_chain, score_parafac_prior
from ..kernels.parafac_data import PARAFACData
from ..samplers import PSGLD, SGLD, LogSGLD
from ._trace import ChainTrace

__all__ = ["BLOCKED_DATA", "CPChainRunner", "block_data"]

#: The blocked data the kernels take, by number of modes.
_DATA = {2: NMFData, 3: PARAFACData}
#: Their types, for ``isinstance``: prepared data pass through ``prepare_data``.
BLOCKED_DATA = tuple(_DATA.values())


def block_data(X, n_blocks, kappa=0.0):
    """Split a validated ``X`` into ``n_blocks`` groups per mode for its kernel (``kappa``: the likelihood)."""
    return _DATA[len(X.shape)].from_array(X, n_blocks, kappa=kappa)


def _run_two_modes(data, model, factors, seed_seq, n_kept=None, **chain):
    """``(factors, kernel output, factor means)`` of NMF's kernel; prior draws if ``factors`` is None."""
    rates = dict(lam_w=model.prior_rates[0], lam_h=model.prior_rates[1])
    if factors is None:
        out, W, H = score_nmf_prior(data, model.n_components, n_kept, **rates, seed_seq=seed_seq)
        factors = (W, H)
    else:
        out = run_nmf_chain(data, *factors, **chain, **rates, seed_seq=seed_seq)
    return factors, out, (out.W_mean, out.H_mean)


def _run_three_modes(data, model, factors, seed_seq, n_kept=None, **chain):
    """As :func:`_run_two_modes`, with PARAFAC's kernel."""
    if factors is None:
        out, factors = score_parafac_prior(
            data, model.n_components, n_kept, prior_rates=model.prior_rates, seed_seq=seed_seq
        )
    else:
        out = run_parafac_chain(data, factors, **chain, prior_rates=model.prior_rates, seed_seq=seed_seq)
    return factors, out, out.factor_means


_KERNELS = {2: _run_two_modes, 3: _run_three_modes}


class CPChainRunner:
    """Run CP-model chains with the block-parallel kernel of their number of modes.

    The state passed between temperatures is the tuple of factors, in the
    model's layout. The minibatch is a part (``B`` blocks, disjoint in every
    mode), so :attr:`batch_size` is the number of entries of a part,
    :math:`I_1 \\cdots I_N / B^{N-1}` for even groups.

    Parameters
    ----------
    model : CPModel
        Rank and prior rates.
    data : NMFData or PARAFACData
        The blocked array.
    sampler : SGLD, PSGLD or LogSGLD
        Which update the kernel runs, with its settings.
    """

    def __init__(self, model, data, *, sampler):
        if not isinstance(sampler, (SGLD, PSGLD, LogSGLD)):
            raise ValueError(
                f"{model.name} runs SGLD, pSGLD or log-space SGLD inside its kernel; got the sampler {sampler!r}."
            )
        self.model, self.data, self.sampler = model, data, sampler
        self.batch_size = max(1, data.n_data // data.n_blocks ** (len(data.shape) - 1))
        self._kernel = _KERNELS[len(data.shape)]

    def _kernel_args(self):
        sampler = self.sampler
        if isinstance(sampler, LogSGLD):
            return dict(sampler="logsgld")
        if isinstance(sampler, PSGLD):
            return dict(sampler="psgld", alpha=sampler.alpha, sigma=sampler.sigma, freeze=sampler.adapt == "burnin")
        return dict(sampler="sgld")

    def initial_state(self, rng):
        return self.model._draw_factors(rng, self.data.shape)

    def run(self, state, temperature, *, n_samples, n_burnin, schedule, rng):
        """One chain at ``temperature`` from the factors ``state``; exact prior draws at ``t = 0``."""
        seed_seq = np.random.SeedSequence(rng.integers(2**63))
        if temperature == 0.0:
            factors, out, means = self._kernel(self.data, self.model, None, seed_seq, n_kept=n_samples - n_burnin)
            return factors, ChainTrace(out.log_likelihood, out.n_likelihood_evaluations, np.nan, None, means)
        factors = [np.array(F, dtype=np.float64, order="C") for F in state]
        _, out, means = self._kernel(
            self.data, self.model, factors, seed_seq, temperature=temperature, n_samples=n_samples,
            n_burnin=n_burnin, step_a=schedule.a, step_b=schedule.b, **self._kernel_args(),
        )
        trace = ChainTrace(out.log_likelihood, out.n_likelihood_evaluations, out.step_size, None, means,
                           out.capped_fraction)
        return tuple(factors), trace
