"""Chain runners: one SG-MCMC chain at one temperature.

A runner is the seam between the STI driver and a model. The driver reads
its ``batch_size`` (the minibatch size :math:`N_s`), calls
``initial_state(rng)`` once and ``run(state, temperature, ...)`` once per
temperature, passing the returned state on (the warm start). The generic
:class:`GradientChainRunner` below drives a Python-level sampler through a
model's :meth:`~skevidence.models.EvidenceModel.log_likelihood_and_grad`;
factorisation models plug in fused numba runners with the same two methods.
"""

import numpy as np

from .._config import GENERIC_MAX_STEP, MAX_CAPPED_FRACTION
from ..exceptions import SamplerDivergenceError
from ..models._trace import ChainTrace
from ..samplers import mirror

#: Raised when exact prior draws make the log-likelihood infinite: the data are outside the model's support.
NOT_FINITE_AT_PRIOR = "The log-likelihood is not finite at some prior draws; check that the data suit the model."


def minibatches(n_data, batch_size, rng):
    """Row indices of minibatches of a fixed size, drawn without replacement, forever.

    Each epoch is a fresh random permutation cut into consecutive batches, so
    every batch is a simple random sample of the rows (which keeps the
    log-likelihood estimate unbiased) and every row is visited once per epoch.
    Rows left over at the end of a permutation wait for the next epoch.
    With a batch as large as the data every batch is ``slice(None)``, all rows.
    """
    while batch_size >= n_data:
        yield slice(None)
    while True:
        perm = rng.permutation(n_data)
        for start in range(0, n_data - batch_size + 1, batch_size):
            yield perm[start : start + batch_size]


def divergence_error(sampler_name, temperature, k, step_size, a, failure="(non-finite state)"):
    """The :class:`~skevidence.SamplerDivergenceError` of a chain that diverged (as ``failure`` says) at ``k``."""
    return SamplerDivergenceError(f"The {sampler_name} chain at temperature t={temperature:.4g} diverged {failure} at "
                                  f"iteration {k}, with step size {step_size:.3g}. Lower step_size (now a={a:.3g}), "
                                  "e.g. by a factor of 10.", temperature=temperature, iteration=k, step_size=step_size)


class GradientChainRunner:
    """Run a :class:`~skevidence.samplers.Sampler` chain on minibatches of rows.

    Parameters
    ----------
    model : EvidenceModel
        The model, through its gradient interface.
    X, y : ndarray
        Data prepared by ``model.prepare_data``.
    sampler : Sampler
        The update rule.
    batch_size : int
        Minibatch size :math:`N_s`.
    """

    def __init__(self, model, X, y, *, sampler, batch_size):
        self.model, self.X, self.y, self.sampler = model, X, y, sampler
        self.n_data = model.n_data(X, y)
        self.batch_size = min(int(batch_size), self.n_data)
        #: Gradient and log-likelihood scale ``N / N_s`` of a minibatch.
        self.scale = self.n_data / self.batch_size

    def initial_state(self, rng):
        theta = np.array(self.model.initial_params(rng), dtype=np.float64).reshape(-1)
        return mirror(theta, self.model.nonnegative)

    def _rows(self, idx):
        return self.X[idx], None if self.y is None else self.y[idx]

    def run(self, state, temperature, *, n_samples, n_burnin, schedule, rng):
        """Run one chain at ``temperature`` from ``state``; see the module docstring."""
        batches = minibatches(self.n_data, self.batch_size, rng)
        if temperature == 0.0 and self.model.exact_prior_sampling:
            # The target is the prior: exact independent draws.
            n_draws = n_samples - n_burnin
            draws = np.asarray(self.model.sample_prior(rng, size=n_draws), dtype=np.float64)
            kept = np.array([self.scale * self.model.log_likelihood(theta, *self._rows(next(batches))).sum()
                             for theta in draws])
            if not np.all(np.isfinite(kept)):
                raise ValueError(NOT_FINITE_AT_PRIOR)
            return draws[-1].copy(), ChainTrace(kept, n_draws * self.batch_size, np.nan, draws, draws.mean(axis=0))
        return self._run_chain(state, temperature, n_samples, n_burnin, schedule, batches, rng)

    @np.errstate(over="ignore", invalid="ignore")  # a diverging chain is caught by the finiteness checks
    def _run_chain(self, state, temperature, n_samples, n_burnin, schedule, batches, rng):
        model, sampler, scale = self.model, self.sampler, self.scale
        n_kept = n_samples - n_burnin
        theta = np.array(state, dtype=np.float64)
        sampler_state = sampler.init_state(theta)
        kept = np.empty(n_kept)
        state_sum = np.zeros_like(theta)
        n_long = 0
        for k in range(1, n_samples + 1):
            Xb, yb = self._rows(next(batches))
            log_lik, lik_grad = model.log_likelihood_and_grad(theta, Xb, yb)
            if k == n_burnin + 1:
                sampler.end_burnin(sampler_state)
            if k > n_burnin:
                kept[k - n_burnin - 1] = scale * log_lik.sum()
                state_sum += theta
            step_size = schedule(k)
            grad = (temperature * scale) * lik_grad + model.grad_log_prior(theta)
            mean_lik_grad = (temperature / self.batch_size) * lik_grad
            previous = theta
            theta = mirror(sampler.step(theta, grad, mean_lik_grad, step_size, rng, sampler_state), model.nonnegative)
            if not np.isfinite(theta).all():
                raise divergence_error(sampler.name, temperature, k, step_size, schedule.a)
            # Entries of the update longer than GENERIC_MAX_STEP noise standard deviations.
            noise_std = sampler.noise_std(step_size, sampler_state)
            if k > n_burnin and noise_std is not None:
                n_long += np.count_nonzero(np.abs(theta - previous) > GENERIC_MAX_STEP * noise_std)
        if not np.isfinite(kept).all():
            raise divergence_error(sampler.name, temperature, n_samples, step_size, schedule.a)
        long_fraction = n_long / (n_kept * theta.size)
        if long_fraction > MAX_CAPPED_FRACTION:
            failure = (f"by {100 * long_fraction:.2g}% of its updates after burn-in exceeding {GENERIC_MAX_STEP:g} "
                       "standard deviations of its noise (its steps are too long to sample the posterior)")
            raise divergence_error(sampler.name, temperature, n_samples, step_size, schedule.a, failure)
        trace = ChainTrace(kept, n_samples * self.batch_size, step_size, None, state_sum / n_kept)
        return theta, trace
