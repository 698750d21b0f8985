"""Stochastic thermodynamic integration (Şimşekli et al. 2016; Nguyen et al. 2018)."""

import numbers
import time
import warnings
from contextlib import closing

import numpy as np
from scipy import sparse
from sklearn.exceptions import ConvergenceWarning

from .._config import PSGLD_SIGMA, REWEIGHT_MIN_ESS, STI_DEFAULTS
from .._progress import progress
from .._random import seed_sequence
from .._validation import check_int
from ..samplers import StepSizeSchedule, get_sampler
from ._ladder import ladder_from, trapezoid_weights
from ._result import EvidenceResult
from ._runner import GradientChainRunner
from ._stderr import batch_means_variance, normalised_weights

__all__ = ["sti_log_evidence", "default_step_size", "check_step_size", "prepare_finite_data"]


def default_step_size(n_data, batch_size, sampler_name):
    r"""Step size after burn-in used when ``step_size="auto"``.

    pSGLD rescales gradients by their running RMS, so its drift per step is
    about :math:`\epsilon N \sqrt{N_s}` posterior standard deviations for a
    well-conditioned model; ``0.1 / (N \sqrt{N_s})`` keeps it a tenth. Where
    the likelihood gradient vanishes (near :math:`t = 0`) the preconditioner
    reaches its bound ``1 / sigma`` and the prior alone sets the scale, so the
    step is also capped at ``0.1 * sigma`` (stable for prior curvatures up to
    about 10). SGLD has no such scale: ``0.1 / N``
    suits likelihoods of unit per-datum curvature and must be tuned otherwise.
    """
    if sampler_name == "psgld":
        return min(0.1 / (n_data * np.sqrt(batch_size)), 0.1 * PSGLD_SIGMA)
    return 0.1 / n_data


def check_step_size(step_size):
    """``"auto"``, or ``step_size`` as a float if it is a positive finite number."""
    if isinstance(step_size, str) and step_size == "auto":
        return step_size
    if isinstance(step_size, numbers.Real) and np.isfinite(step_size) and step_size > 0:
        return float(step_size)
    raise ValueError(f"step_size must be a positive number or 'auto', got {step_size!r}.")


def prepare_finite_data(model, X, y):
    """``model.prepare_data`` with the checks every evidence method needs; returns ``(X, y, n_data)``.

    Complex data (a cast to float64 would drop the imaginary part) and sparse
    input are refused before ``prepare_data`` casts them silently or
    obscurely; prepared arrays are checked for NaN and infinity (a model whose
    prepared data are another kind of object, a factorisation's blocks, say,
    checks them in its own ``prepare_data``).
    """
    for name, arr in (("X", X), ("y", y)):
        if sparse.issparse(arr):
            raise ValueError(f"{name} is a sparse matrix, but {type(model).__name__} needs dense data: "
                             f"pass {name}.toarray().")
        if np.iscomplexobj(arr):
            raise ValueError(f"{name} is complex; the evidence needs real data (take magnitudes first).")
    X, y = model.prepare_data(X, y)
    for name, arr in (("X", X), ("y", y)):
        if isinstance(arr, np.ndarray) and not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinity; remove or impute those entries.")
    n_data = model.n_data(X, y)
    if n_data < 1:
        raise ValueError("The data are empty: the evidence needs at least one data point.")
    return X, y, n_data


def _reweighted_prior(prior, temperature, rng):
    """Expectation at ``temperature`` from exact prior draws, by importance weights.

    Returns ``(mean, variance, state, state_mean)`` or ``None`` once the weights
    ``p(x|theta)^t`` have become too uneven (ESS below ``REWEIGHT_MIN_ESS``).
    """
    log_lik, draws = prior
    w = normalised_weights(temperature * log_lik)
    if 1.0 / (w @ w) < REWEIGHT_MIN_ESS * w.size:
        return None
    # The minibatch noise in log_lik enters the weights too and shifts the mean
    # up by about t * Var(noise); the ESS bound keeps t small enough that this
    # is far below the chain's own error where the trapezoid weights are tiny.
    mean = w @ log_lik
    # Delta-method variance of a self-normalised importance-sampling mean.
    variance = (w**2) @ (log_lik - mean) ** 2
    return mean, variance, draws[rng.choice(w.size, p=w)].copy(), w @ draws


def _warn_if_not_increasing(temperatures, means, variances):
    r"""Warn when the estimated integrand decreases: chains that did not equilibrate.

    :math:`f(t) = E_t[\log p(x|\theta)]` has derivative
    :math:`\mathrm{Var}_t(\log p(x|\theta)) \ge 0`; an estimate that falls
    by more than 4 combined standard errors between two temperatures cannot
    be Monte-Carlo noise.
    """
    drops = np.diff(means) < -4.0 * np.sqrt(variances[:-1] + variances[1:])
    if drops.any():
        i = int(np.argmax(drops))
        warnings.warn(
            f"The estimated expected log-likelihood decreases from t={temperatures[i]:.3g} ({means[i]:.6g}) to "
            f"t={temperatures[i + 1]:.3g} ({means[i + 1]:.6g}), which it cannot do at equilibrium: the chains did "
            "not equilibrate and the evidence is unreliable. Increase n_samples and n_burnin, or lower step_size.",
            ConvergenceWarning, stacklevel=3)


def sti_log_evidence(model, X, y=None, *, temperatures=STI_DEFAULTS["temperatures"], ladder=STI_DEFAULTS["ladder"],
                     n_samples=STI_DEFAULTS["n_samples"], n_burnin=STI_DEFAULTS["n_burnin"],
                     batch_size=STI_DEFAULTS["batch_size"], sampler=STI_DEFAULTS["sampler"],
                     step_size=STI_DEFAULTS["step_size"], step_decay=STI_DEFAULTS["step_decay"], random_state=None,
                     verbose=0):
    r"""Estimate :math:`\log p(x)` by stochastic thermodynamic integration.

    STI integrates the expected log-likelihood under power posteriors
    :math:`p_t(\theta) \propto p(\theta)\,p(x|\theta)^t` over
    :math:`t \in [0, 1]` (the thermodynamic identity), estimating each
    expectation with a stochastic-gradient MCMC chain on minibatches and the
    integral with the trapezoid rule. Each chain starts where the previous
    temperature's ended; at :math:`t = 0` the prior is sampled exactly when the
    model can, and at the lowest temperatures those exact draws, reweighted by
    :math:`p(x|\theta)^t`, replace the chain for as long as their effective
    sample size stays above half the draws: that is exactly where chains mix
    worst (the target is barely narrower than the prior, while the gradient
    signal already dominates its noise).

    Parameters
    ----------
    model : EvidenceModel
        The model (see :class:`~skevidence.models.EvidenceModel`).
    X : array-like
        Data; each row (for :class:`~skevidence.models.GaussianAdditive`, each
        entry) is one datum.
    y : array-like, default=None
        Targets, for conditional models.
    temperatures : int or array-like, default=20
        An int ``T`` gives a ladder of ``T + 1`` temperatures of kind
        ``ladder``; an array is used as the ladder itself and must increase
        strictly from 0 to 1.
    ladder : {"power", "uniform"}, default="power"
        Kind of ladder built from an int ``temperatures``: ``"power"`` is
        :math:`t_i = (i/T)^5`, dense where the integrand is steep;
        ``"uniform"`` is :math:`t_i = i/T`, as in the papers.
    n_samples : int, default=3000
        Iterations of each chain, burn-in included (:math:`K`).
    n_burnin : int, default=1000
        Burn-in iterations, discarded; must be less than ``n_samples``.
    batch_size : int, default=250
        Minibatch size :math:`N_s` (capped at the number of data points).
    sampler : {"psgld", "sgld"} or Sampler, default="psgld"
        The SG-MCMC update rule.
    step_size : float or "auto", default="auto"
        The scale :math:`a` of the burn-in schedule :math:`\epsilon_k = (a/k)^b`
        (the notation of Şimşekli et al. 2016), after which the step stays at
        :math:`(a/K_b)^b`. ``"auto"`` chooses the schedule that ends at
        :func:`default_step_size`.
    step_decay : float, default=0.51
        The exponent :math:`b \in [0, 1]`; ``0`` means a constant step ``a``.
    random_state : int, RandomState, Generator or None, default=None
        Seed of every random stream; an int makes the result reproducible.
    verbose : int, default=0
        ``1``: a progress bar (tqdm, if installed) over temperatures;
        ``2``: one printed line per temperature.

    Returns
    -------
    result : EvidenceResult
        ``log_evidence ± std_error``, the ladder, the expected log-likelihood
        at each temperature with its standard error, and diagnostics per
        temperature (``"step_size"``, ``"autocorr_time"``,
        ``"effective_sample_size"``, ``"reweighted_prior"``, and
        ``"capped_fraction"``: the fraction of the kept updates whose drift the
        factorisation kernels capped, 0 for other models).

    Notes
    -----
    The standard error is Monte-Carlo error only: the variance of each
    temperature's mean by batch means (which accounts for autocorrelation),
    propagated through the trapezoid weights with the temperatures treated as
    independent. The bias of Theorem 1 of Şimşekli et al. (2016),
    :math:`O(1/(K\epsilon) + \epsilon + 1/T^2)` (plus
    :math:`O((1-\alpha)/\alpha^{3/2})` for pSGLD), is not included; compare
    estimates at two ladders or step sizes to gauge it.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence import sti_log_evidence
    >>> from skevidence.models import GaussianAdditive
    >>> model = GaussianAdditive(n_components=2, prior_mean=1.0, noise_var=1.0)
    >>> x = np.random.default_rng(0).normal(2.0, 1.0, size=500)
    >>> result = sti_log_evidence(model, x, n_samples=1000, n_burnin=300, random_state=0)
    >>> bool(abs(result.log_evidence - model.exact_log_evidence(x)) < 5 * result.std_error)
    True
    """
    start = time.perf_counter()
    n_samples = check_int("n_samples", n_samples)
    n_burnin = check_int("n_burnin", n_burnin, 0)
    if n_burnin >= n_samples - 1:
        raise ValueError(f"n_burnin ({n_burnin}) must be less than n_samples - 1 ({n_samples - 1}): "
                         "at least two samples must be kept after burn-in.")
    batch_size = check_int("batch_size", batch_size)
    if not (isinstance(step_decay, numbers.Real) and 0.0 <= step_decay <= 1.0):
        raise ValueError(f"step_decay must be in [0, 1], got {step_decay!r}.")
    step_size = check_step_size(step_size)
    ts = ladder_from(temperatures, ladder)
    sampler = get_sampler(sampler)

    X, y, n_data = prepare_finite_data(model, X, y)
    runner = model.chain_runner(X, y, sampler=sampler, batch_size=batch_size)
    runner = runner or GradientChainRunner(model, X, y, sampler=sampler, batch_size=batch_size)
    # A fused runner has its own minibatch (a factorisation's part).
    batch_size = runner.batch_size
    if step_size == "auto":
        schedule = StepSizeSchedule.ending_at(default_step_size(n_data, batch_size, sampler.name), step_decay, n_burnin)
    else:
        schedule = StepSizeSchedule(step_size, float(step_decay), n_burnin)

    streams = seed_sequence(random_state).spawn(ts.size + 1)
    state = runner.initial_state(np.random.default_rng(streams[0]))
    prior = None  # (log-likelihoods, draws) of exact prior draws, while they serve
    # Per temperature: mean, variance, autocorrelation time, step size, capped fraction, reweighted or not.
    rungs, n_evals = [], 0
    with closing(progress(ts.size, "STI", verbose)) as report:
        for t, stream in zip(ts, streams[1:]):
            rng = np.random.default_rng(stream)
            found = None if prior is None else _reweighted_prior(prior, t, rng)
            if found is not None:
                mean, variance, state, posterior_mean = found
                rungs.append((mean, variance, 1.0, np.nan, 0.0, True))
            else:
                prior = None
                state, trace = runner.run(state, float(t), n_samples=n_samples, n_burnin=n_burnin, schedule=schedule,
                                          rng=rng)
                mean = trace.log_likelihood.mean()
                variance, tau = batch_means_variance(trace.log_likelihood)
                rungs.append((mean, variance, tau, trace.step_size, trace.capped_fraction, False))
                n_evals += trace.n_likelihood_evaluations
                if trace.prior_draws is not None and model.reweight_prior_draws:
                    prior = (trace.log_likelihood, trace.prior_draws)
                posterior_mean = trace.state_mean
            report.update(1, f"t={t:.3g} E[log p(x|θ)]={mean:.6g} ± {np.sqrt(variance):.2g}")

    means, variances, taus, step_sizes, capped, reweighted = map(np.array, zip(*rungs))
    _warn_if_not_increasing(ts, means, variances)
    weights = trapezoid_weights(ts)
    diagnostics = dict(sampler=repr(sampler), n_samples=n_samples, n_burnin=n_burnin, batch_size=batch_size,
                       n_data=n_data, step_size_schedule=(schedule.a, schedule.b), step_size=step_sizes,
                       capped_fraction=capped, autocorr_time=taus, effective_sample_size=(n_samples - n_burnin) / taus,
                       reweighted_prior=reweighted)
    return EvidenceResult(weights @ means, np.sqrt(weights**2 @ variances), "sti", temperatures=ts,
                          expected_log_likelihood=means, expected_log_likelihood_std=np.sqrt(variances),
                          n_likelihood_evaluations=n_evals, wall_time=time.perf_counter() - start,
                          diagnostics=diagnostics, posterior_mean=posterior_mean)
