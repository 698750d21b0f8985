"""Annealed importance sampling with full-data HMC transitions, and importance-weight helpers.

AIS (Neal 2001) is the reference the stochastic-gradient methods are checked
against: its transitions use the whole data set and a Metropolis test, so each
one leaves its annealed distribution exactly invariant and the evidence
estimate is unbiased (its logarithm is biased low by about half its variance).
The weight helpers here are shared with SGAIS.
"""

import time
import warnings
from contextlib import closing
from functools import partial

import numpy as np
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning

from .._progress import progress
from .._random import seed_sequence
from .._validation import check_int
from ._ladder import ladder_from
from ._result import EvidenceResult
from ._runner import NOT_FINITE_AT_PRIOR
from ._stderr import effective_sample_size, normalised_weights
from .sti import check_step_size, prepare_finite_data

__all__ = ["ais_log_evidence", "log_mean_weight_variance", "prior_particles", "systematic_resample"]

#: Acceptance rate the HMC step size is tuned towards (between temperatures).
TARGET_ACCEPT = 0.8
#: Largest factor by which the step size changes from one temperature to the next.
_MAX_STEP_CHANGE = 2.0
#: Below this fraction of the particles the final ESS triggers a warning.
_MIN_ESS_FRACTION = 0.1


def log_mean_weight_variance(log_weights):
    r"""Delta-method variance of :math:`\log \frac1M \sum_i W_i` from the weights themselves.

    With :math:`a_i = W_i / \bar W` the sample variance is
    :math:`s^2 = (M^2/\mathrm{ESS} - M)/(M-1)`, and
    :math:`\mathrm{Var}(\log \bar W) \approx s^2/M = (M/\mathrm{ESS} - 1)/(M-1)`,
    for ``M`` independent weights. Zero for equal weights.
    """
    log_w = np.asarray(log_weights, dtype=np.float64)
    m = log_w.size
    if m < 2:
        return 0.0
    return max(m / effective_sample_size(log_w) - 1.0, 0.0) / (m - 1)


def systematic_resample(log_weights, rng):
    """Indices of a systematic resample (one uniform draw; lower variance than multinomial)."""
    cdf = np.cumsum(normalised_weights(log_weights))
    cdf[-1] = 1.0
    m = cdf.size
    points = (rng.random() + np.arange(m)) / m
    return np.minimum(np.searchsorted(cdf, points, side="right"), m - 1)


def prior_particles(model, n_particles, rng, method):
    """``n_particles`` exact prior draws of ``model``, shape ``(n_particles, n_params)``, to start ``method`` from."""
    if not model.exact_prior_sampling:
        raise TypeError(f"{method} starts its particles from exact prior draws, but {type(model).__name__} cannot "
                        "sample its prior exactly: implement sample_prior(rng, size) and set exact_prior_sampling = "
                        "True, or use method='sti'.")
    return np.array(model.sample_prior(rng, size=n_particles), dtype=np.float64).reshape(n_particles, -1)


def _tempered(model, X, y, thetas):
    """Full-data log-likelihood sums, log priors and both gradients of a stack of particles, shapes (M,) / (M, P)."""
    log_lik, grad_lik = model.log_likelihood_and_grad_particles(thetas, X, y)
    return log_lik.sum(axis=1), model.log_prior_particles(thetas), grad_lik, model.grad_log_prior_particles(thetas)


@np.errstate(over="ignore", invalid="ignore")
def _hmc_transition(tempered, t, thetas, cache, step_size, n_leapfrog, rng):
    """One HMC transition of every particle at inverse temperature ``t``, Metropolis-corrected.

    ``tempered(thetas)`` is :func:`_tempered` on the data; ``cache`` holds its
    ``(log_lik, log_prior, grad_lik, grad_prior)`` at ``thetas``.
    Returns the new particles, their cache and the acceptance probabilities.
    """
    log_lik, log_prior, grad_lik, grad_prior = cache
    momentum = rng.standard_normal(thetas.shape)
    # A random step length per transition avoids periodic orbits of fixed-length leapfrogs.
    eps = step_size * rng.uniform(0.8, 1.2)
    energy0 = -(log_prior + t * log_lik) + 0.5 * np.einsum("ij,ij->i", momentum, momentum)
    q, p = thetas.copy(), momentum + 0.5 * eps * (grad_prior + t * grad_lik)
    for i in range(n_leapfrog):
        q = q + eps * p
        new = tempered(q)
        grad = new[3] + t * new[2]
        p = p + (eps if i < n_leapfrog - 1 else 0.5 * eps) * grad
    energy1 = -(new[1] + t * new[0]) + 0.5 * np.einsum("ij,ij->i", p, p)
    log_accept = np.minimum(energy0 - energy1, 0.0)
    log_accept = np.where(np.isfinite(log_accept), log_accept, -np.inf)
    accept = np.log(rng.random(thetas.shape[0])) < log_accept
    thetas = np.where(accept[:, None], q, thetas)
    cache = tuple(np.where(accept[:, None] if c.ndim == 2 else accept, n, c) for n, c in zip(new, cache))
    return thetas, cache, np.exp(log_accept)


def ais_log_evidence(model, X, y=None, *, n_particles=20, n_temperatures=500, ladder="power", n_steps=1, n_leapfrog=10,
                     step_size="auto", random_state=None, verbose=0):
    r"""Estimate :math:`\log p(x)` by annealed importance sampling with full-data HMC.

    ``M`` particles drawn from the prior are moved through the power posteriors
    :math:`p_t(\theta) \propto p(\theta)\,p(x|\theta)^t` of a ladder
    :math:`0 = t_0 < \dots < t_T = 1`. Before the moves at :math:`t_k` each
    particle's log-weight gains :math:`(t_k - t_{k-1}) \log p(x|\theta)`; the
    moves are ``n_steps`` Hamiltonian Monte Carlo transitions of
    ``n_leapfrog`` leapfrog steps on the **full data** with a Metropolis
    test, so each leaves :math:`p_{t_k}` exactly invariant and
    :math:`\hat Z = \frac1M\sum_i W_i` is unbiased (Neal 2001). It costs
    :math:`O(N)` per gradient: a reference for checking the stochastic-gradient
    methods, not a method for large data.

    Parameters
    ----------
    model : EvidenceModel
        The model; it must sample its prior exactly. Its batched methods
        (``log_likelihood_and_grad_particles`` ...) are used when it has them.
    X : array-like
        Data; each row (each entry for
        :class:`~skevidence.models.GaussianAdditive`) is one datum.
    y : array-like, default=None
        Targets, for conditional models.
    n_particles : int, default=20
        Number of independent AIS runs :math:`M` (at least 2).
    n_temperatures : int or array-like, default=500
        An int ``T`` gives a ladder of ``T + 1`` temperatures of kind
        ``ladder``; an array is the ladder itself (strictly increasing from 0
        to 1). The variance of the log-weights falls like :math:`1/T`.
    ladder : {"power", "uniform"}, default="power"
        Kind of ladder built from an int: :math:`t_i = (i/T)^5` (dense near
        :math:`t = 0`, where the power posteriors change fastest) or
        :math:`t_i = i/T`.
    n_steps : int, default=1
        HMC transitions per temperature.
    n_leapfrog : int, default=10
        Leapfrog steps per transition.
    step_size : float or "auto", default="auto"
        Leapfrog step. ``"auto"`` starts at half the smallest prior standard
        deviation (estimated from the prior draws) and, between temperatures,
        multiplies it by :math:`\exp(2(\bar a - 0.8))` (at most a factor 2),
        :math:`\bar a` the mean acceptance probability at the previous
        temperature. Tuning only on the past keeps every transition a valid
        Metropolis kernel for its target. A float is used at every temperature.
    random_state : int, RandomState, Generator or None, default=None
        Seed; an int makes the result reproducible.
    verbose : int, default=0
        ``1``: a progress bar over temperatures (tqdm, if installed); ``2``:
        one printed line per temperature.

    Returns
    -------
    result : EvidenceResult
        ``method="ais"``; ``temperatures`` is the ladder and
        ``expected_log_likelihood`` the weighted mean of
        :math:`\log p(x|\theta)` at each temperature (a by-product). The
        diagnostics hold ``"ess"`` (of the final weights), ``"log_weights"``
        and ``"particles"`` (the final particles, a weighted posterior sample),
        ``"acceptance_rate"`` and ``"step_size"`` per temperature.

    Warns
    -----
    ConvergenceWarning
        When the final effective sample size is below a tenth of the
        particles: the weights are then dominated by a few particles, and the
        estimate and its standard error are unreliable. Use more temperatures.

    See Also
    --------
    sgais_log_evidence : The stochastic-gradient, online counterpart.
    sti_log_evidence : Stochastic thermodynamic integration.

    Notes
    -----
    The standard error is the delta-method error of :math:`\log\bar W` over
    the ``M`` independent runs,
    :math:`\sqrt{(M/\mathrm{ESS} - 1)/(M - 1)}`. It is itself estimated from
    ``M`` weights and is too small when the weights are heavy-tailed (few
    temperatures); the warning above flags the worst cases.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence.evidence import ais_log_evidence
    >>> from skevidence.models import GaussianAdditive
    >>> model = GaussianAdditive(n_components=2, prior_mean=1.0)
    >>> x = np.random.default_rng(0).normal(2.0, 1.0, size=200)
    >>> result = ais_log_evidence(model, x, n_temperatures=100, random_state=0)
    >>> bool(abs(result.log_evidence - model.exact_log_evidence(x)) < 4 * result.std_error + 0.05)
    True
    """
    start = time.perf_counter()
    n_particles = check_int("n_particles", n_particles, 2)
    n_steps = check_int("n_steps", n_steps, 1)
    n_leapfrog = check_int("n_leapfrog", n_leapfrog, 1)
    ts = ladder_from(n_temperatures, ladder)
    step_size = check_step_size(step_size)
    X, y, n_data = prepare_finite_data(model, X, y)
    rng = np.random.default_rng(seed_sequence(random_state))
    thetas = prior_particles(model, n_particles, rng, "AIS")
    eps = 0.5 * float(np.min(np.std(thetas, axis=0))) if step_size == "auto" else step_size
    if not (np.isfinite(eps) and eps > 0):  # prior draws without spread in some parameter
        eps = 0.1
    tempered = partial(_tempered, model, X, y)
    cache = tempered(thetas)
    if not np.all(np.isfinite(cache[0])):
        raise ValueError(NOT_FINITE_AT_PRIOR)

    log_w = np.zeros(n_particles)
    moments = [_weighted_moments(log_w, cache[0])]
    acceptance, step_sizes = [np.nan], [np.nan]
    with closing(progress(ts.size - 1, "AIS", verbose)) as report:
        for t_previous, t in zip(ts[:-1], ts[1:]):
            log_w += (t - t_previous) * cache[0]
            rates = []
            for _ in range(n_steps):
                thetas, cache, accept = _hmc_transition(tempered, t, thetas, cache, eps, n_leapfrog, rng)
                rates.append(accept.mean())
            acceptance.append(np.mean(rates))
            step_sizes.append(eps)
            moments.append(_weighted_moments(log_w, cache[0]))
            if step_size == "auto":
                factor = np.exp(2.0 * (acceptance[-1] - TARGET_ACCEPT))
                eps *= min(max(factor, 1.0 / _MAX_STEP_CHANGE), _MAX_STEP_CHANGE)
            report.update(1, f"t={t:.3g} accept={acceptance[-1]:.2f} ESS={effective_sample_size(log_w):.1f}")

    means, stds = np.array(moments).T
    log_evidence = logsumexp(log_w) - np.log(n_particles)
    ess = effective_sample_size(log_w)
    if ess < max(_MIN_ESS_FRACTION * n_particles, 1.5):
        warnings.warn(f"The AIS weights are degenerate (effective sample size {ess:.2f} of {n_particles} particles): "
                      f"log Z = {log_evidence:.6g} and its standard error are unreliable. Increase n_temperatures or "
                      "n_steps.", ConvergenceWarning, stacklevel=2)
    # The weighted particles are the posterior sample (estimators keep them).
    diagnostics = dict(n_particles=n_particles, n_steps=n_steps, n_leapfrog=n_leapfrog, n_data=n_data, ess=ess,
                       log_weights=log_w.copy(), acceptance_rate=np.array(acceptance), step_size=np.array(step_sizes),
                       std_error_method="delta method over independent particles", particles=thetas.copy())
    # Every particle on every row: at the prior draws, then at every leapfrog step.
    n_evals = n_particles * n_data * (1 + (ts.size - 1) * n_steps * n_leapfrog)
    return EvidenceResult(log_evidence, np.sqrt(log_mean_weight_variance(log_w)), "ais", temperatures=ts,
                          expected_log_likelihood=means, expected_log_likelihood_std=stds,
                          n_likelihood_evaluations=n_evals, wall_time=time.perf_counter() - start,
                          diagnostics=diagnostics, posterior_mean=normalised_weights(log_w) @ thetas)


def _weighted_moments(log_w, values):
    """Weighted mean of ``values`` and its standard error (weighted sd over sqrt(ESS))."""
    w = normalised_weights(log_w)
    mean = w @ values
    return mean, np.sqrt(max(w @ (values - mean) ** 2, 0.0) * (w @ w))
