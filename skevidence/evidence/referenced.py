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
  (:func:`mode_search_error`, :func:`_search_reference`). The chains stay near
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
from concurrent.futures import ThreadPoolExecutor
from itertools import permutations
from numbers import Real

import numpy as np
from joblib import Parallel, delayed
from scipy import sparse
from scipy.optimize import minimize
from scipy.special import digamma, gammaln, polygamma
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from .._config import RTI_DEFAULTS
from .._validation import check_int
from ..kernels.hmc import cp_log_likelihood, fisher_pass, ratio_pass, run_referenced_ladder
from ..models._factorisation import check_real_entries, likelihood_shape_of
from ._counts import count_entries
from ._result import EvidenceResult
from ._stderr import batch_means_variance

__all__ = ["referenced_ti_log_evidence", "variational_reference", "laplace_reference", "mode_search_error",
           "RTI_DEFAULTS", "rti_temperatures", "simpson_weights"]

#: Largest rank at which log q_sym sums over every relabelling (6! = 720).
_ALL_PERMUTATIONS_UP_TO = 6

#: VB stops when the bound moves less than this (relative), or after _VB_MAX_ITER sweeps.
_VB_RTOL = 1e-7
_VB_MAX_ITER = 1000

# The search for the reference's mode stops below this share of tol, leaving the chains' pieces at
# least the same share (the two add in quadrature): a search stopped just below tol would leave the
# chains a sliver (0.99 of tol=1 leaves them 0.14, up to 256 times the first round's draws), while
# starts cost a fraction of a round (a 12x10x8 tensor at rank 6: 0.13 s a start, 21 s the first
# round; its mode piece 0.99, 0.51, 0.28 at 16, 32, 64 starts).
_SEARCH_SHARE = 1.0 / math.sqrt(2.0)

#: Iterations of a Laplace fit's L-BFGS, and the bound on log theta inside it (exp must not overflow).
_LAPLACE_MAX_ITER = 2000
_LAPLACE_PHI_BOUND = 300.0


def rti_temperatures(n_temperatures, power=5.0):
    r"""The ladder :math:`t_k = 1 - (1 - k/K)^{c}` and :math:`dt/dk` at its points."""
    k = np.arange(n_temperatures + 1, dtype=np.float64) / n_temperatures
    t = 1.0 - (1.0 - k) ** power
    dt = power * (1.0 - k) ** (power - 1.0) / n_temperatures
    t[0], t[-1] = 0.0, 1.0
    return t, dt


def simpson_weights(n_intervals):
    """Composite Simpson weights on ``n_intervals + 1`` unit-spaced points (``n_intervals`` even)."""
    if n_intervals % 2:
        raise ValueError(f"Simpson's rule needs an even number of intervals, got {n_intervals}.")
    w = np.ones(n_intervals + 1)
    w[1:-1:2] = 4.0
    w[2:-1:2] = 2.0
    return w / 3.0


class _Data:
    r"""The array in the form the kernels take: a dense matrix, or the non-zeros of anything.

    ``kappa`` is the likelihood's shape: 0 for Poisson, :math:`\kappa > 0` for
    Gamma entries of mean :math:`V` (:func:`likelihood_shape_of`). A Gamma
    likelihood has no sparse shortcut (a zero is an observation like any
    other), so its entries are all listed; ``lgamma_total`` is then minus the
    constant :math:`\sum_e \kappa\log\kappa - \log\Gamma(\kappa) + (\kappa - 1)\log x_e`.
    """

    def __init__(self, X, kappa=0.0):
        self.kappa = float(kappa)
        if self.kappa > 0.0:
            X = check_real_entries(X, kappa)
            shape = X.shape
            coords = np.indices(shape).reshape(len(shape), -1).T
            vals = X.ravel()
        else:
            coords, vals, shape = count_entries(X, method="referenced TI", integer=False)
        self.shape = shape
        # Dense matrices go through BLAS; anything else loops over the listed entries.
        self.dense2 = not sparse.issparse(X) and len(shape) == 2
        self.X = np.ascontiguousarray(X, dtype=np.float64) if self.dense2 else np.zeros((1, 1))
        self.coords = np.ascontiguousarray(coords, dtype=np.int64)
        self.vals = np.ascontiguousarray(vals, dtype=np.float64)
        self.offsets = np.concatenate([[0], np.cumsum(shape)]).astype(np.int64)
        if self.kappa > 0.0:
            k = self.kappa
            log_x = (k - 1.0) * np.log(self.vals).sum() if k != 1.0 else 0.0
            self.lgamma_total = -float(self.vals.size * (k * math.log(k) - math.lgamma(k)) + log_x)
        else:
            self.lgamma_total = float(gammaln(self.vals + 1.0).sum())
        self.total = float(self.vals.sum())

    def ratio(self, F, out, with_value=True):
        return ratio_pass(self.dense2, self.X, self.coords, self.vals, F, self.offsets, out, with_value, self.kappa)

    def log_likelihood(self, F, grad):
        r""":math:`\log p(X \mid F)` and its gradient in ``grad``."""
        sums = np.empty((len(self.shape), F.shape[1]))
        return cp_log_likelihood(self.dense2, self.X, self.coords, self.vals, F, self.offsets, grad, sums,
                                 self.lgamma_total, True, self.kappa)


def _row_rates(prior_rates, shape):
    rates = np.broadcast_to(np.asarray(prior_rates, dtype=np.float64), (len(shape),))
    return np.repeat(rates, shape)


def _random_start(data, R, rng, floor):
    """Random factors whose product has about the data's mean (``floor`` bounds the total from below)."""
    scale = (max(data.total, floor) / (R * math.prod(data.shape))) ** (1.0 / len(data.shape))
    return scale * rng.gamma(2.0, 0.5, size=(data.offsets[-1], R))


def _vb_fit(data, R, rates, mean):
    """One mean-field VB fit from the start ``mean`` (factors' means): ``(bound, alpha, beta)``."""
    offsets, shape = data.offsets, data.shape
    D, N = offsets[-1], len(shape)
    alpha = np.full((D, R), 1.0)
    beta = alpha / mean
    S = np.empty((D, R))
    bound_old = -np.inf
    bound = -np.inf
    for it in range(_VB_MAX_ITER):
        G = np.exp(digamma(alpha) - np.log(beta))
        x_log_v = data.ratio(G, S)
        # The bound at the current q (sources at their optimum for it).
        means = alpha / beta
        sums = np.stack([means[offsets[m]:offsets[m + 1]].sum(axis=0) for m in range(N)])
        bound = (x_log_v - data.lgamma_total - np.prod(sums, axis=0).sum()
                 + np.sum(np.log(rates)[:, None] - rates[:, None] * means + alpha - np.log(beta) + gammaln(alpha)
                          + (1.0 - alpha) * digamma(alpha)))
        if it > 5 and abs(bound - bound_old) <= _VB_RTOL * abs(bound):
            break
        bound_old = bound
        alpha = 1.0 + G * S
        for m in range(N):
            means = alpha / beta
            others = np.ones(R)
            for k in range(N):
                if k != m:
                    others *= means[offsets[k]:offsets[k + 1]].sum(axis=0)
            beta[offsets[m]:offsets[m + 1]] = rates[offsets[m]:offsets[m + 1], None] + others
    return bound, alpha, beta


def variational_reference(X, n_components, prior_rates=1.0, *, n_starts=8, random_state=None):
    r"""Mean-field variational Bayes for Poisson CP: the best of ``n_starts`` fits.

    :math:`q(F) = \prod \mathrm{Gamma}(F^{(m)}_{ir}; \alpha^{(m)}_{ir}, \beta^{(m)}_{ir})`
    with the latent-source updates of Cemgil (2009) under exponential priors;
    non-integer data are accepted (the bound is then that of the Poisson
    density extended by :math:`\Gamma(x + 1)`).

    Returns
    -------
    bound : float
        The best variational lower bound on :math:`\log p(X)`.
    alpha, beta : ndarray of shape (sum of the mode sizes, n_components)
        Shapes and rates of ``q``, the modes' rows stacked.
    bounds : ndarray of shape (n_starts,)
        Every start's bound (the spread shows how many optima there are).
    """
    data = X if isinstance(X, _Data) else _Data(X)
    return _best_of_starts(_vb_fit, data, n_components, prior_rates, n_starts, random_state)


def _fit_starts(fit, data, R, rates, rng, n_starts, n_jobs=1):
    """``n_starts`` fits from random starts drawn in turn from ``rng``, ``n_jobs`` at a time (threads).

    The starts are drawn before any fit, in order, and each fit is a
    deterministic function of its start run with one BLAS thread, so the fits,
    and what is drawn from ``rng`` after them, are the same for any ``n_jobs``
    and any machine: with a multithreaded BLAS the products' last bits, and
    through the optimiser's path a start's optimum, depended on the number of
    BLAS threads. One thread is also the faster for products of this size
    (the clip at rank 32: 8 Laplace fits in 17 s against 63 s with two BLAS
    threads, on a loaded 2-core machine). The kernels release the GIL.
    """
    starts = [_random_start(data, R, rng, floor=_START_FLOOR[fit]) for _ in range(n_starts)]
    with threadpool_limits(1):
        if n_jobs == 1 or n_starts == 1:
            return [fit(data, R, rates, start) for start in starts]
        with ThreadPoolExecutor(max_workers=min(n_jobs, n_starts)) as pool:
            return list(pool.map(lambda start: fit(data, R, rates, start), starts))


def _best_of_starts(fit, data, R, prior_rates, n_starts, random_state):
    """``(best bound, its alpha, its beta, every start's bound)`` of ``n_starts`` random starts of ``fit``."""
    rng = check_random_state(random_state)
    rates = _row_rates(prior_rates, data.shape)
    fits = _fit_starts(fit, data, R, rates, rng, n_starts)
    bounds = np.array([f[0] for f in fits])
    best = int(np.argmax(bounds))
    return bounds[best], fits[best][1], fits[best][2], bounds


def mode_search_error(bounds):
    r"""What a search of half the starts misses: :math:`E|\max A - \max B|` over the splits of the starts.

    Split the starts' bounds at random into two halves :math:`A` and
    :math:`B` (sizes :math:`\lfloor n/2 \rfloor` and :math:`\lceil n/2
    \rceil`): two independent searches of equal effort. The difference of
    their best bounds is one draw of what such a search misses; this is its
    average over every split, in closed form from the sorted bounds
    :math:`b_1 \ge b_2 \ge \dots`: the half without :math:`b_1` has its
    best at :math:`b_j`, :math:`j` the first index it holds. One fixed split
    has the same expectation (the starts are exchangeable) but is a single
    draw of it: on the bundled clip at rank 16 the first four of eight starts
    and the last four happened to hold bounds 13 nats apart, while the best
    of eight lay 185 nats below the best of other seeds' searches; the
    average over splits is 55 there.

    Parameters
    ----------
    bounds : array-like of shape (n_starts,)
        The best bound (ELBO or Laplace log-joint) each random start reached.

    Returns
    -------
    error : float
        The average difference in nats; 0 for fewer than two starts, or when
        every start reached the same bound.

    Examples
    --------
    >>> from skevidence.evidence import mode_search_error
    >>> mode_search_error([0.0, 0.0, 0.0, 10.0])  # every split misses the lone best by 10
    10.0
    >>> round(mode_search_error([10.0, 10.0, 0.0, 0.0]), 4)  # both bests in one half: 1 split in 3
    3.3333
    """
    b = np.sort(np.asarray(bounds, dtype=np.float64))[::-1]
    n = b.size
    if n < 2:
        return 0.0
    total = 0.0
    sizes = {n // 2, n - n // 2}  # one size when n is even
    for size in sizes:
        # b_1 lies in a half of this size with probability size / n.
        weight = size / n if len(sizes) == 2 else 1.0
        same, other = size - 1, n - size
        p_before = 1.0  # P(b_2 .. b_{j-1} all lie in b_1's half)
        for j in range(1, n):
            left = same + other
            total += weight * p_before * (other / left) * (b[0] - b[j])
            p_before *= same / left
            if same == 0:
                break
            same -= 1
    return float(total)


def _search_reference(fit, data, R, prior_rates, n_starts, max_starts, tol, out_of_time, rng, n_jobs=1):
    """Random starts of ``fit``, doubled while two halves of them disagree on the best mode.

    The posterior of a factorisation can have many modes, far apart in mass
    (a power spectrogram's at rank 2 has dozens, thousands of nats apart),
    and the chains of the ladder stay near the reference's: a reference at a
    lesser mode gives a lesser evidence, by about the difference of the
    modes' bounds, and no chain statistic shows it. Two halves of the starts
    are two independent searches of equal effort: the difference of their
    best bounds, averaged over every split (:func:`mode_search_error`), is
    ``mode_error``, what a search of that effort misses. The starts are
    doubled while it is above ``tol / sqrt(2)`` (``None``: no doubling), up to
    ``max_starts`` or until ``out_of_time()``; ``n_jobs`` fits run at a time
    (the result does not depend on it).

    Returns ``(best bound, its alpha, its beta, every start's bound, mode_error)``.
    """
    rates = _row_rates(prior_rates, data.shape)
    fits = []
    n = n_starts
    while True:
        fits += _fit_starts(fit, data, R, rates, rng, n - len(fits), n_jobs)
        bounds = np.array([f[0] for f in fits])
        mode_error = mode_search_error(bounds)
        if tol is None or mode_error <= _SEARCH_SHARE * tol or bounds.size >= max_starts or out_of_time():
            break
        n = min(2 * n, max_starts)
    best = int(np.argmax(bounds))
    return bounds[best], fits[best][1], fits[best][2], bounds, mode_error


def _laplace_fit(data, R, rates, start):
    r"""One Laplace fit in :math:`\log\theta` from the factors ``start``: ``(laplace bound, alpha, beta)``."""
    offsets = data.offsets
    D = offsets[-1]
    phi0 = np.log(start)
    grad = np.empty((D, R))
    lam = rates[:, None]

    def objective(flat):
        # The log posterior of phi = log theta (Jacobian included); phi is kept where exp cannot overflow.
        phi = np.clip(flat.reshape(D, R), -_LAPLACE_PHI_BOUND, _LAPLACE_PHI_BOUND)
        theta = np.exp(phi)
        value = data.log_likelihood(theta, grad) + np.sum(np.log(lam) - lam * theta + phi)
        g = theta * (grad - lam) + 1.0
        if not np.isfinite(value):
            return np.inf, np.zeros_like(flat)
        return -value, -g.ravel()

    fit = minimize(objective, phi0.ravel(), jac=True, method="L-BFGS-B",
                   options=dict(maxiter=_LAPLACE_MAX_ITER, ftol=_VB_RTOL * 1e-2, gtol=1e-6))
    phi = np.clip(fit.x.reshape(D, R), -_LAPLACE_PHI_BOUND, _LAPLACE_PHI_BOUND)
    theta = np.exp(phi)
    fisher = np.empty((D, R))
    fisher_pass(data.dense2, data.X, data.coords, theta, offsets, data.kappa, fisher)
    # Curvature of the log posterior in phi at its mode: 1 (from the prior and the Jacobian, where the
    # gradient vanishes) plus the likelihood's expected curvature; a Gamma(P, P / theta) has that
    # curvature and that mode in phi.
    precision = 1.0 + theta**2 * fisher
    bound = -float(fit.fun) + 0.5 * float(np.sum(np.log(2.0 * np.pi / precision)))
    return bound, precision, precision / theta


#: The floor of each fit's random start (:func:`_random_start`).
_START_FLOOR = {_vb_fit: 1.0, _laplace_fit: 1e-300}


def laplace_reference(X, n_components, prior_rates=1.0, *, likelihood_shape=1.0, n_starts=8,
                      random_state=None):
    r"""A product-of-Gammas reference for Gamma-likelihood CP models, from a Laplace fit in :math:`\log\theta`.

    The Gamma (and exponential) likelihood of real-valued entries has no
    latent-source augmentation, so the variational updates of
    :func:`variational_reference` do not apply. Instead the log posterior of
    :math:`\varphi = \log\theta` is maximised (L-BFGS, ``n_starts`` random
    starts) and every factor entry gets the Gamma whose density in
    :math:`\varphi` has the same mode and the same curvature there:
    :math:`\mathrm{Gamma}(P, P/\hat\theta)` with :math:`P = 1 +
    \hat\theta^2\,\kappa\sum_e (\partial V_e/\partial\theta)^2/V_e^2` (the
    likelihood's expected curvature, which is never negative). As with
    mean-field VB the reference ignores correlations between entries;
    referenced TI corrects for whatever it misses.

    Returns
    -------
    bound : float
        The best start's Laplace approximation of :math:`\log p(X)` (diagonal curvature).
    alpha, beta : ndarray of shape (sum of the mode sizes, n_components)
        Shapes and rates of ``q``, the modes' rows stacked.
    bounds : ndarray of shape (n_starts,)
        Every start's Laplace value.
    """
    data = X if isinstance(X, _Data) else _Data(X, likelihood_shape)
    return _best_of_starts(_laplace_fit, data, n_components, prior_rates, n_starts, random_state)


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
            data.dense2, data.X, data.coords, data.vals, data.offsets, data.lgamma_total, data.kappa, self.alpha,
            self.beta,
            self.rates, self.inv_mass, self.perms, self.log_r_fact, self.temperatures, levels, chained,
            self.phi, self.steps, n_burnin, n_keep, self.n_leapfrog, int(self.rng.randint(0, 2**31 - 1)), U,
            accept, self.theta_sum, True,
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


def referenced_ti_log_evidence(X, n_components, prior_rates=1.0, *, n_temperatures=RTI_DEFAULTS["n_temperatures"],
                               n_burnin=RTI_DEFAULTS["n_burnin"], n_keep=RTI_DEFAULTS["n_keep"],
                               n_leapfrog=RTI_DEFAULTS["n_leapfrog"], n_vb_starts=RTI_DEFAULTS["n_vb_starts"],
                               max_vb_starts=RTI_DEFAULTS["max_vb_starts"], tol=RTI_DEFAULTS["tol"],
                               max_time=RTI_DEFAULTS["max_time"], max_refinements=RTI_DEFAULTS["max_refinements"],
                               n_jobs=2,
                               likelihood="poisson", likelihood_shape=1.0, random_state=None, verbose=0):
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
    n_vb_starts : int, default=8
        Random starts of the reference's fit (variational or Laplace); the
        best bound is kept. Two halves of the starts are two independent
        searches for the posterior's best mode; while their best bounds differ
        by more than ``tol / sqrt(2)`` the starts are doubled (the chains then
        have at least that share of ``tol`` left).
    max_vb_starts : int, default=64
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
    likelihood : {"poisson", "exponential", "gamma"}, default="poisson"
        Density of an entry given its mean :math:`V`.
    likelihood_shape : float, default=1.0
        Shape :math:`\kappa` of the Gamma likelihood (``likelihood="gamma"`` only).
    random_state : int, RandomState instance or None
    verbose : int, default=0

    Returns
    -------
    EvidenceResult
        ``method="rti"``; ``std_error`` is the error bar (Monte-Carlo, lag,
        quadrature and mode search). ``diagnostics`` holds ``"ladders"`` (the
        two ladders' estimates), ``"mc_error"``, ``"lag_error"``,
        ``"quadrature_error"``, ``"mode_error"``, ``"reference_starts"``,
        ``"elbo"`` (the integrand at :math:`t = 0`), ``"vb_bound"`` (the
        Laplace value for the Gamma likelihoods) and ``"vb_bounds"`` (every
        start's), ``"acceptance"``, ``"step_size"``,
        ``"converged"``, ``"tol"``, ``"stop_reason"`` (why the budget
        loop stopped, in words), ``"rounds"`` (every check: budget,
        estimate, pieces, time) and the final ``"n_temperatures"`` and
        ``"n_keep"``. ``posterior_mean`` is the list of the factors'
        posterior means, mode by mode.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence.evidence import referenced_ti_log_evidence
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(2 * np.outer(rng.exponential(size=20), rng.exponential(size=15)))
    >>> result = referenced_ti_log_evidence(X, 1, 1.0, random_state=0)
    >>> bool(result.std_error <= 1.0)
    True
    """
    start = time.perf_counter()
    _check_settings(n_components, n_temperatures, n_burnin, n_keep, n_leapfrog, n_vb_starts, max_vb_starts, tol,
                    max_time, max_refinements)
    kappa = likelihood_shape_of(likelihood, likelihood_shape)
    data = _Data(X, kappa)
    rng = check_random_state(random_state)
    rates = _row_rates(prior_rates, data.shape)

    def out_of_time():
        # The next step costs about what has been spent so far.
        return max_time is not None and 2.0 * (time.perf_counter() - start) > max_time

    elbo_bound, alpha, beta, vb_bounds, mode = _search_reference(
        _vb_fit if kappa == 0.0 else _laplace_fit, data, n_components, prior_rates, n_vb_starts,
        max(n_vb_starts, max_vb_starts), tol, out_of_time, rng, n_jobs)
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
                  f"{vb_bounds.size} starts), {time.perf_counter() - start:.1f} s", flush=True)
        converged = tol is not None and err <= tol
        if converged:
            reason = f"the error bar is below tol={tol:g}"
        if tol is None or converged:
            break
        if err_chains <= ti_target:
            reason = (f"{vb_bounds.size} starts of the reference's fit found best modes {mode:.3g} nats apart, "
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
            + ("A longer search for the reference (max_vb_starts, max_time) may find a better mode."
               if err_chains <= ti_target else "Raise max_time or max_refinements (or tol)."),
            ConvergenceWarning, stacklevel=2,
        )
    offsets = data.offsets
    posterior_mean = sum(ladder.theta_sum for ladder in ladders) / (2.0 * n_kept)
    factors = [posterior_mean[offsets[m]:offsets[m + 1]] for m in range(len(data.shape))]
    U_mean = 0.5 * (parts[0][3] + parts[1][3])
    diagnostics = dict(
        ladders=(parts[0][0], parts[1][0]), mc_error=mc, lag_error=lag, quadrature_error=quad, mode_error=mode,
        reference_starts=int(vb_bounds.size),
        elbo=float(U_mean[0]), vb_bound=float(elbo_bound), vb_bounds=vb_bounds,
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


def _check_settings(n_components, n_temperatures, n_burnin, n_keep, n_leapfrog, n_vb_starts, max_vb_starts, tol,
                    max_time, max_refinements):
    checks = [("n_components", n_components, 1), ("n_temperatures", n_temperatures, 4), ("n_burnin", n_burnin, 0),
              ("n_keep", n_keep, 4), ("n_leapfrog", n_leapfrog, 1), ("n_vb_starts", n_vb_starts, 1),
              ("max_vb_starts", max_vb_starts, 1)]
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
