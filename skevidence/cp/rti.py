r"""Referenced thermodynamic integration for Poisson CP models (NMF, PARAFAC).

Instead of integrating from the prior, integrate from an exactly normalised,
exactly sampled approximation :math:`q` of the posterior (the generalised
stepping-stone idea of Fan et al. 2011, as "referenced TI" in Hawryluk et
al. 2023):

.. math::
    p_t \propto q^{1-t}\,(p(\theta)\,p(X\mid\theta))^t,\qquad
    \log p(X) = \int_0^1 E_{p_t}\big[\log p(X\mid\theta) + \log p(\theta) - \log q(\theta)\big]\,dt .

At :math:`t = 0` the integrand is the ELBO of :math:`q`; when :math:`q` is
close to the posterior the integrand is nearly flat and the chains barely
move along the path. Here :math:`q` is the best of several mean-field
variational fits (:func:`variational_reference`: a Gamma per factor entry,
the latent-source updates of Cemgil 2009), averaged over the :math:`R!`
relabellings of the components. The chains are Metropolis-adjusted HMC on
:math:`\log\theta` (:mod:`skevidence.kernels.hmc`), so no step-size bias
remains.

**Ladder and quadrature.** The integrand is convex in :math:`t` and rises
most near :math:`t = 1`, so the temperatures are
:math:`t_k = 1 - (1 - k/K)^5` and the integral is Simpson's rule in
:math:`k` of :math:`E_{t_k}[U]\,t'(k)`; :math:`t'(K) = 0`, so the slowly
mixing end of the path weighs little.

**Error bar.** Two independent ladders heat from :math:`q` side by side (one
thread each). The result is their mean and its error bar the root sum of
squares of

- the Monte-Carlo error: batch means of every temperature's chain through
  the Simpson weights, or half the two ladders' difference if larger;
- the chains' lag: the change of the estimate between the first half of every
  chain and the whole (a lagging chain drifts; its bias shrinks as it
  lengthens, about as 1/length once the transient is shorter than the chain);
- the quadrature error, Richardson's :math:`|S_K - S_{K/2}|/15` on the mean
  integrand;
- the mode search: the difference of the best bounds of two halves of the
  reference's random starts, averaged over every split of them
  (:func:`mode_search_error`, :func:`~skevidence.cp.reference.search_reference`). The chains stay near
  the reference's mode, and a factorisation's posterior can have many modes
  beyond its relabellings, far apart in mass: a reference at a lesser mode
  gives a lesser evidence, which no statistic of the chains shows.

A ladder cooling from a posterior state was tried as a bracket of the lag
and dropped: at over-fitted ranks its chains keep splittings of the
components that :math:`q` does not cover, and it ran 100-340 nats high on a
40x30 matrix of true rank 3.

**Budget.** With ``tol`` the chains are continued from where they stopped
(doubling their length), or the ladder refined when its error dominates,
until the error bar is below ``tol``, or ``max_time`` would be exceeded, or
``max_refinements`` steps (each doubling the cost so far: at most
:math:`2^8 = 256` times the first round by default) have run; then a
:class:`~sklearn.exceptions.ConvergenceWarning` says so and the result
records ``converged=False``. The cap on refinements bounds the work
deterministically, so that the same call gives the same numbers on any
machine and load, which a time limit cannot.
"""

import math
import time
import warnings
from itertools import permutations
from numbers import Real

import numpy as np
from joblib import Parallel, delayed
from scipy.special import polygamma
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from .._config import DEFAULT_TOL, RTI_DEFAULTS
from .._validation import check_int
from ..evidence._ladder import rti_temperatures, simpson_weights
from ..evidence._result import EvidenceResult
from ..evidence._stderr import batch_means_variance
from .kernels.hmc import run_referenced_ladder
from .likelihood import likelihood_kappa
from .reference import _row_rates, as_data, laplace_fit, search_reference, vb_fit

__all__ = ["referenced_ti_log_evidence"]

#: Largest rank at which log q_sym sums over every relabelling (6! = 720).
_ALL_PERMUTATIONS_UP_TO = 6

def _relabellings(R):
    """The relabellings ``q_sym`` sums over: every permutation up to ``_ALL_PERMUTATIONS_UP_TO``, else an
    empty ``(0, R)`` array, which the kernels read as the identity and every transposition."""
    if R <= _ALL_PERMUTATIONS_UP_TO:
        return np.array(list(permutations(range(R))), dtype=np.int64).reshape(-1, R)
    return np.zeros((0, R), dtype=np.int64)


class _Ladder:
    """One ladder's chains: their integrand samples, end states and step sizes, lengthened in place."""

    def __init__(self, data, alpha, beta, rates, seed):
        self.data, self.alpha, self.beta, self.rates = data, alpha, beta, rates
        self.rng = np.random.RandomState(seed)
        R = alpha.shape[1]
        self.perms = _relabellings(R)
        self.log_r_fact = math.lgamma(R + 1.0)
        # HMC's inverse mass is the variance of log θ (q's: trigamma(α)), so
        # that every coordinate moves on its own scale; its inverse (the
        # precision) squares the spread of scales instead of removing it.
        self.inv_mass = polygamma(1, alpha)
        self.theta_sum = np.zeros_like(alpha)
        self.n_grad = 0

    def _run(self, levels, chained, n_burnin, n_keep):
        data = self.data
        U = np.zeros((levels.size, n_keep))
        accept = np.zeros(levels.size)
        self.n_grad += run_referenced_ladder(
            *data.pass_args(), data.constant, self.alpha, self.beta, self.rates, self.inv_mass, self.perms,
            self.log_r_fact, self.temperatures, levels, chained, self.phi, self.steps, n_burnin, n_keep,
            self.n_leapfrog, int(self.rng.randint(0, 2**31 - 1)), U, accept, self.theta_sum, True,
        )
        for i, level in enumerate(levels):
            self.samples[level].append(U[i])
            self.accept[level] = accept[i]

    def start(self, n_temperatures, n_burnin, n_keep, n_leapfrog):
        """Heat from ``q``: each temperature's chain starts where the previous one stopped."""
        self.n_leapfrog = n_leapfrog
        self.temperatures, self.dt = rti_temperatures(n_temperatures)
        K1 = n_temperatures + 1
        self.phi = np.empty((K1,) + self.alpha.shape)
        self.phi[0] = np.log(self.alpha / self.beta)
        self.steps = np.full(K1, 0.1)
        self.samples = [[] for _ in range(K1)]
        self.accept = np.zeros(K1)
        self.n_burnin = n_burnin
        self._run(np.arange(K1), True, n_burnin, n_keep)

    def lengthen(self):
        """Continue every chain from where it stopped for as many draws as it holds."""
        n = self.n_kept
        self._run(np.arange(self.temperatures.size), False, 0, n)

    def refine(self):
        """Halve the ladder's spacing; each new chain starts from its lower neighbour's end state."""
        K = self.temperatures.size - 1
        n = self.n_kept
        phi = np.empty((2 * K + 1,) + self.alpha.shape)
        phi[0::2] = self.phi
        phi[1::2] = self.phi[:-1]
        steps = np.empty(2 * K + 1)
        steps[0::2] = self.steps
        steps[1::2] = self.steps[:-1]
        samples = [[] for _ in range(2 * K + 1)]
        samples[0::2] = self.samples
        accept = np.zeros(2 * K + 1)
        accept[0::2] = self.accept
        self.phi, self.steps, self.samples, self.accept = phi, steps, samples, accept
        self.temperatures, self.dt = rti_temperatures(2 * K)
        self._run(np.arange(1, 2 * K, 2), False, self.n_burnin, n)

    @property
    def n_kept(self):
        return sum(u.size for u in self.samples[-1])

    def estimate(self):
        """``(estimate, its Monte-Carlo SE, estimate from the first half of every chain, mean integrand)``."""
        K = self.temperatures.size - 1
        w = simpson_weights(K) * self.dt
        series = [np.concatenate(chunks) for chunks in self.samples]
        means = np.array([u.mean() for u in series])
        halves = np.array([u[: u.size // 2].mean() for u in series])
        var = np.array([batch_means_variance(u)[0] if np.ptp(u) > 0 else 0.0 for u in series])
        return float(w @ means), float(np.sqrt(np.sum(w**2 * var))), float(w @ halves), means


def referenced_ti_log_evidence(X, n_components, prior_rates=1.0, *, likelihood="poisson", likelihood_shape=1.0,
                               noise_floor=0.0, tol=DEFAULT_TOL, n_temperatures=RTI_DEFAULTS["n_temperatures"],
                               n_burnin=RTI_DEFAULTS["n_burnin"], n_keep=RTI_DEFAULTS["n_keep"],
                               n_leapfrog=RTI_DEFAULTS["n_leapfrog"], n_starts=RTI_DEFAULTS["n_starts"],
                               max_starts=RTI_DEFAULTS["max_starts"], max_refinements=RTI_DEFAULTS["max_refinements"],
                               max_time=RTI_DEFAULTS["max_time"], n_jobs=2, init=(), random_state=None,
                               verbose=0):
    r"""Log-evidence of a CP model (NMF for a matrix) by referenced TI with Metropolis-adjusted HMC.

    The entries are Poisson (the papers' model), or exponential or Gamma of
    mean :math:`V` (``likelihood``; densities of power spectrograms, whose
    maximum likelihood is Itakura–Saito NMF, Févotte, Bertin and Durrieu
    2009). The reference ``q`` is mean-field VB for Poisson
    (:func:`variational_reference`) and a Laplace fit in
    :math:`\log\theta` otherwise (:func:`laplace_reference`).

    Parameters
    ----------
    X : array-like or scipy.sparse array of shape (n_1, ..., n_N)
        Non-negative data (counts, or magnitudes read as counts, for Poisson;
        powers for the exponential and Gamma likelihoods).
    n_components : int
        Rank :math:`R`.
    prior_rates : float or sequence of float, default=1.0
        Rate of the exponential prior of every mode's factor.
    n_temperatures : int, default=16
        Intervals :math:`K` of the ladder (even; the budget loop may double it).
    n_burnin, n_keep : int, default=200, 400
        HMC iterations a temperature spends adapting the step size, and keeps
        in the first round (run in two halves: the lag check compares them).
    n_leapfrog : int, default=10
        Leapfrog steps per HMC iteration.
    n_starts : int, default=8
        Random starts of the reference's fit (variational or Laplace); the
        best bound is kept. Two halves of the starts are two independent
        searches for the posterior's best mode; while their best bounds differ
        by more than ``tol / sqrt(2)`` the starts are doubled (the chains then
        have at least that share of ``tol`` left).
    max_starts : int, default=64
        Most starts of the reference's fit.
    tol : float or None, default=1.0
        Target error bar in nats; ``None`` runs the first round only.
    max_time : float or None, default=None
        Seconds after which no further refinement starts.
    max_refinements : int or None, default=8
        Most refinement steps after the first round (each lengthens the
        chains or halves the ladder's spacing, doubling the work so far);
        ``None``: no cap. A deterministic bound on the work, reached only
        when ``tol`` is far below what the data allow (for example Poisson
        magnitudes at a 16-bit scale, whose log-evidences are millions of
        nats).
    n_jobs : int, default=2
        Threads for the two ladders and for the reference's random starts
        (at most two ladders run at a time; the result does not depend on it).
    init : sequence of ndarray, default=()
        Factors of lower ranks, each ``(sum of the mode sizes, R')`` stacked
        (for example an earlier result's ``diagnostics["reference_mean"]``):
        half the reference's first starts split their components.
    likelihood : {"poisson", "exponential", "gamma"}, default="poisson"
        Density of an entry given its mean :math:`V`.
    likelihood_shape : float, default=1.0
        Shape :math:`\kappa` of the Gamma likelihood (``likelihood="gamma"`` only).
    noise_floor : float, default=0.0
        The exponential and Gamma likelihoods' known noise floor :math:`f`: an
        entry's mean is :math:`V + f` (see
        :class:`~skevidence.audio.SpectrogramTransformer`'s ``noise_floor_``).
        Data with exact zeros need one under the exponential likelihood.
    random_state : int, RandomState instance or None
    verbose : int, default=0

    Returns
    -------
    EvidenceResult
        ``method="rti"``; ``std_error`` is the error bar (Monte-Carlo, lag,
        quadrature and mode search). ``diagnostics`` holds ``"ladders"`` (the
        two ladders' estimates), ``"mc_error"``, ``"lag_error"``,
        ``"quadrature_error"``, ``"mode_error"``, ``"reference_starts"``,
        ``"elbo"`` (the integrand at :math:`t = 0`), ``"reference_bound"`` (the
        best start's ELBO, or Laplace value for the Gamma likelihoods) and
        ``"reference_bounds"`` (every start's), ``"acceptance"``, ``"step_size"``,
        ``"converged"``, ``"tol"``, ``"stop_reason"`` (why the budget
        loop stopped, in words), ``"rounds"`` (every check: budget,
        estimate, pieces, time) and the final ``"n_temperatures"`` and
        ``"n_keep"``. ``posterior_mean`` is the list of the factors'
        posterior means, mode by mode.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence.cp import referenced_ti_log_evidence
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(2 * np.outer(rng.exponential(size=20), rng.exponential(size=15)))
    >>> result = referenced_ti_log_evidence(X, 1, 1.0, random_state=0)
    >>> bool(result.std_error <= 1.0)
    True
    """
    start = time.perf_counter()
    _check_settings(n_components, n_temperatures, n_burnin, n_keep, n_leapfrog, n_starts, max_starts, tol,
                    max_time, max_refinements)
    kappa = likelihood_kappa(likelihood, likelihood_shape)
    data = as_data(X, kappa, noise_floor)
    rng = check_random_state(random_state)
    rates = _row_rates(prior_rates, data.shape)

    def out_of_time():
        # The next step costs about what has been spent so far.
        return max_time is not None and 2.0 * (time.perf_counter() - start) > max_time

    best_bound, alpha, beta, bounds, mode = search_reference(
        vb_fit if kappa == 0.0 else laplace_fit, data, n_components, prior_rates, n_starts,
        max(n_starts, max_starts), tol, out_of_time, rng, n_jobs, init)
    # What the chains' own pieces must reach for the whole bar to be within tol; a mode error at or
    # above tol is not lowered by longer chains, which then need only be well below it.
    ti_target = None if tol is None else (math.sqrt(tol**2 - mode**2) if mode < tol else mode)
    ladders = [_Ladder(data, alpha, beta, rates, seed) for seed in rng.randint(0, 2**31 - 1, size=2)]

    def both(step, *args):
        # The two ladders run side by side, one a thread (the kernel releases
        # the GIL); one BLAS thread each, or they would fight over the cores.
        with threadpool_limits(1):
            Parallel(n_jobs=min(n_jobs, 2), backend="threading")(delayed(getattr(ladder, step))(*args)
                                                                 for ladder in ladders)

    # The first check needs every chain split in halves: n_keep in two runs.
    both("start", n_temperatures, n_burnin, max(n_keep // 2, 2), n_leapfrog)
    both("lengthen")
    rounds, reason = [], "tol is None: one round"
    while True:
        parts = [ladder.estimate() for ladder in ladders]
        estimate = 0.5 * (parts[0][0] + parts[1][0])
        # Batch means within the chains, checked by the two ladders' spread.
        mc = max(0.5 * math.hypot(parts[0][1], parts[1][1]), 0.5 * abs(parts[0][0] - parts[1][0]))
        # A lagging chain drifts: its first half is further off than the whole,
        # by about as much as the whole is (bias ~ 1/length).
        lag = abs(estimate - 0.5 * (parts[0][2] + parts[1][2]))
        K = ladders[0].temperatures.size - 1
        mean_g = 0.5 * (parts[0][3] + parts[1][3]) * ladders[0].dt
        quad = abs(estimate - 2.0 * float(simpson_weights(K // 2) @ mean_g[::2])) / 15.0
        err_chains = math.sqrt(mc**2 + lag**2 + quad**2)
        err = math.hypot(err_chains, mode)
        n_kept = ladders[0].n_kept
        rounds.append(dict(n_temperatures=K, n_keep=n_kept, log_evidence=estimate, error=err, mc=mc, lag=lag,
                           quad=quad, mode=mode, n_grad=sum(ladder.n_grad for ladder in ladders),
                           time=time.perf_counter() - start))
        if verbose:
            print(f"[rti] rank {n_components}, {K} temperatures, {n_kept} draws each: {estimate:.2f} ± {err:.2f} "
                  f"(Monte Carlo {mc:.2f}, lag {lag:.2f}, quadrature {quad:.2f}, mode search {mode:.2f} from "
                  f"{bounds.size} starts), {time.perf_counter() - start:.1f} s", flush=True)
        converged = tol is not None and err <= tol
        if converged:
            reason = f"the error bar is below tol={tol:g}"
        if tol is None or converged:
            break
        if err_chains <= ti_target:
            reason = (f"{bounds.size} starts of the reference's fit found best modes {mode:.3g} nats apart, "
                      f"so the posterior has modes no chain here visits (a better one raises the evidence), "
                      f"and longer chains cannot lower that")
            break
        if out_of_time():
            reason = f"max_time={max_time:g} s would be exceeded"
            break
        if max_refinements is not None and len(rounds) > max_refinements:
            reason = f"max_refinements={max_refinements} steps have run"
            break
        both("refine" if quad > max(mc, lag) else "lengthen")
    if tol is not None and not converged:
        warnings.warn(
            f"Referenced TI at rank {n_components} stopped at an error bar of {err:.3g} nats, above "
            f"tol={tol:g}, because {reason}; the estimate {estimate:.6g} may be off by more than tol. "
            + ("A longer search for the reference (max_starts, max_time) may find a better mode."
               if err_chains <= ti_target else "Raise max_time or max_refinements (or tol)."),
            ConvergenceWarning, stacklevel=2,
        )
    offsets = data.offsets
    posterior_mean = sum(ladder.theta_sum for ladder in ladders) / (2.0 * n_kept)
    factors = [posterior_mean[offsets[m]:offsets[m + 1]] for m in range(len(data.shape))]
    U_mean = 0.5 * (parts[0][3] + parts[1][3])
    diagnostics = dict(
        ladders=(parts[0][0], parts[1][0]), mc_error=mc, lag_error=lag, quadrature_error=quad, mode_error=mode,
        reference_starts=int(bounds.size), reference_mean=alpha / beta,
        elbo=float(U_mean[0]), reference_bound=float(best_bound), reference_bounds=bounds,
        acceptance=0.5 * (ladders[0].accept + ladders[1].accept),
        step_size=0.5 * (ladders[0].steps + ladders[1].steps), converged=bool(converged), tol=tol,
        stop_reason=reason,
        likelihood=likelihood, likelihood_shape=kappa if kappa > 0.0 else None,
        reference_fit="vb" if kappa == 0.0 else "laplace",
        rounds=tuple(rounds), n_temperatures=K, n_keep=n_kept,
    )
    size = data.X.size if data.dense2 else data.vals.size
    return EvidenceResult(
        log_evidence=estimate, std_error=err, method="rti", temperatures=ladders[0].temperatures,
        expected_log_likelihood=U_mean, expected_log_likelihood_std=np.zeros_like(U_mean),
        n_likelihood_evaluations=rounds[-1]["n_grad"] * size, wall_time=time.perf_counter() - start,
        diagnostics=diagnostics, posterior_mean=factors,
    )


def _check_settings(n_components, n_temperatures, n_burnin, n_keep, n_leapfrog, n_starts, max_starts, tol,
                    max_time, max_refinements):
    checks = [("n_components", n_components, 1), ("n_temperatures", n_temperatures, 4), ("n_burnin", n_burnin, 0),
              ("n_keep", n_keep, 4), ("n_leapfrog", n_leapfrog, 1), ("n_starts", n_starts, 1),
              ("max_starts", max_starts, 1)]
    if max_refinements is not None:
        checks.append(("max_refinements", max_refinements, 0))
    for name, value, low in checks:
        check_int(name, value, low)
    if n_temperatures % 4:
        raise ValueError(
            f"n_temperatures must be a multiple of 4 (Simpson's rule on the ladder and on every other point "
            f"of it), got {n_temperatures}."
        )
    for name, value in (("tol", tol), ("max_time", max_time)):
        if value is not None and (not isinstance(value, Real) or not value > 0):
            raise ValueError(f"{name} must be a positive number or None, got {value!r}.")
