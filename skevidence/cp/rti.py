r"""Referenced thermodynamic integration for CP models (NMF, PARAFAC).

Instead of integrating from the prior, integrate from an exactly normalised,
exactly sampled approximation :math:`q` of the posterior (the generalised
stepping-stone idea of Fan et al. 2011, as "referenced TI" in Hawryluk et
al. 2023):

.. math::
    p_t \propto q^{1-t}\,(p(\theta)\,p(X\mid\theta))^t,\qquad
    \log p(X) = \int_0^1 E_{p_t}\big[\log p(X\mid\theta) + \log p(\theta) - \log q(\theta)\big]\,dt .

At :math:`t = 0` the integrand is the bound of :math:`q`; when :math:`q` is
close to the posterior the integrand is nearly flat: its whole rise is
:math:`\mathrm{KL}(q\,\|\,p) + \mathrm{KL}(p\,\|\,q)`. Here :math:`q` is a
product of Gammas fitted at the best posterior mode several starts found
(:mod:`~skevidence.cp.reference`: mean-field VB for the Poisson likelihood,
a Laplace fit in :math:`\log\theta` for the Gamma family), averaged over
the :math:`R!` relabellings of the components. Up to
:data:`~skevidence.cp.kernels.hmc.EXACT_RELABEL_RANK` it is then fitted
again, to the means of :math:`\theta` and :math:`\log\theta` of the
bracket's chain at :math:`t = 1` (below;
:func:`~skevidence.cp.reference.moment_reference`): a fit's spreads are
those of each coordinate with the others held, far narrower than the
posterior's along the components' scale ridges. On P2's matrix at rank 6
the rise falls from about 2,800 nats to 400--600. The chains are
Metropolis-adjusted HMC on :math:`\log\theta`
(:mod:`~skevidence.cp.kernels.hmc`), so no step-size bias remains.

**Ladder and quadrature.** The temperatures are
:math:`t_k = 1 - (1 - k/K)^c` and the integral is Simpson's rule in
:math:`k` of :math:`E_{t_k}[U]\,t'(k)`; :math:`t'(K) = 0`, so the slowly
mixing end of the path weighs little. From a fit the integrand rises most
near :math:`t = 1`: :math:`c = 5`; from the moments it rises most near
:math:`t = 0` and evenly after: :math:`c = 2`. An integer :math:`c` keeps
the integrand in :math:`k` smooth at :math:`k = K`, so that Simpson's error
falls as :math:`h^4`, as the quadrature piece's estimate assumes (with
:math:`c = 1.5` it has a square-root cusp there, and on P2's matrix a bias
of 8 nats that the estimate puts at 0.9).

**Error bar.** Two independent ladders; the estimate is their mean and its
error bar the root sum of squares of

- the Monte-Carlo error: batch means of every temperature's chain through
  the Simpson weights, or half the two ladders' difference if larger (a
  rank selection's screen runs the first ladder alone: batch means only,
  and no bar counts as within ``tol`` before the second has run);
- the chains' lag: the change of the estimate between the first half of every
  chain and the whole (a lagging chain drifts; its bias shrinks as it
  lengthens, about as 1/length once the transient is shorter than the chain);
- the quadrature error, Richardson's :math:`|S_K - S_{K/2}|/15` on the mean
  integrand;
- the mode search: the difference of the best bounds of two halves of the
  reference's starts, averaged over every split of them
  (:func:`~skevidence.cp.reference.mode_search_error`). The chains stay near
  the reference's mode, and a factorisation's posterior can have many modes
  beyond its relabellings, far apart in mass: a reference at a lesser mode
  gives a lesser evidence, which no statistic of the chains shows.

**Bracket.** The integrand's mean rises with :math:`t` (its derivative is
its variance), so :math:`\log p(X)` lies between :math:`E_q[U]`, the
reference's bound, and :math:`E_p[U]`. Exact draws of :math:`q` and a short
chain at :math:`t = 1` give both ends for a small part of a ladder's work
(:meth:`RankRun.bracket`), from the fit's :math:`q`, before every first
round of ladders from a reference; the rank selection takes out a rank whose
bracket lies far below the best's, or below another rank's lower end, before
any ladder runs. Its estimate is then the bracket's midpoint, and its error
bar the bracket's half-width with the chain's Monte-Carlo error and lag and
the mode search.

**Single precision inside a trajectory.** On a dense matrix of
:data:`~skevidence.cp.data.SINGLE_PRECISION_SIZE` or more entries times
components, the gradients
between a trajectory's end points are taken in single precision, in half
the time: any deterministic field keeps the leapfrog map reversible and
volume-preserving, and the Metropolis step (on the value and end points in
double precision) keeps the target exact.

**Work in parallel, and continued.** :class:`RankRun` plans one step at a
time (the reference's starts, the ladders' first round, a lengthening of
every chain, a finer ladder, more starts) as independent pieces of work:
every start, and every ladder cut into a fixed number of runs of
temperatures (each from :math:`q`'s mean or from where its chains stopped),
each with its own seed. They run side by side on threads (the kernels
release the GIL), and the numbers do not depend on how many. A refined rank
continues its chains and keeps its reference unless more starts find a
better mode.

**Budget.** With ``tol`` the steps go on until the error bar is below
``tol``, or ``max_time`` would be exceeded, or ``max_refinements`` steps
(each adding at most the cost so far) have run from the current reference
(a better mode restarts the chains, so while the halves of the starts
disagree by more than a share of ``tol`` the search goes first); then a
:class:`~sklearn.exceptions.ConvergenceWarning` says so and the result
records ``converged=False``. The cap on refinements bounds the work
deterministically, so that the same call gives the same numbers on any
machine and load, which a time limit cannot.
"""

import math
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.special import polygamma
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from .._config import DECISION_Z, DEFAULT_TOL, RTI_DEFAULTS
from .._validation import check_int, check_positive_real
from ..evidence._ladder import rti_temperatures, simpson_weights
from ..evidence._result import EvidenceResult
from ..evidence._stderr import batch_means_variance
from . import reference
from .kernels.hmc import EXACT_RELABEL_RANK, run_referenced_ladder
from .kernels.rng import seed_streams
from .likelihood import likelihood_kappa

__all__ = ["RankRun", "referenced_ti_log_evidence", "run_pieces"]

#: Every ladder's temperatures are cut into this many runs, each a piece of work of its own (a fixed number:
#: the numbers must not depend on how many threads run the pieces).
_CHUNKS = 2


def run_pieces(pieces, n_jobs):
    """Run independent pieces of work (callables), ``n_jobs`` at a time on threads, one BLAS thread each.

    Returns their results in order. The pieces' kernels release the GIL; one
    BLAS thread each, or they would fight over the cores.
    """
    with threadpool_limits(1):
        if n_jobs == 1 or len(pieces) <= 1:
            return [piece() for piece in pieces]
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            return list(pool.map(lambda piece: piece(), pieces))


def _chains(run, temperatures, levels, chained, phi, steps, n_burnin, n_keep, seed, theta_sum):
    """Run the chains of ``levels`` (:func:`~skevidence.cp.kernels.hmc.run_referenced_ladder`).

    Returns ``(gradients spent, U of shape (levels, n_keep), acceptance rates)``."""
    U = np.zeros((levels.size, n_keep))
    accept = np.zeros(levels.size)
    n_grad = run_referenced_ladder(
        *run.data.pass_args(), run.data.constant, run.alpha, run.beta, run.rates, run.inv_mass, temperatures,
        levels, chained, phi, steps, n_burnin, n_keep, run.n_leapfrog, seed,
        seed_streams(np.random.SeedSequence(seed), 1)[0], U, accept, theta_sum, True, run.single,
    )
    return n_grad, U, accept


def _var_of_mean(u):
    """The variance of ``u``'s mean (:func:`~skevidence.evidence.batch_means_variance`; 0 for a constant series)."""
    return batch_means_variance(u)[0] if np.ptp(u) > 0 else 0.0


def _two_chains(a, se_a, b, se_b):
    """Two independent estimates' mean and its Monte-Carlo error: their SEs combined, checked by their spread."""
    return 0.5 * (a + b), max(0.5 * math.hypot(se_a, se_b), 0.5 * abs(a - b))


class _Ladder:
    """One ladder's chains: their integrand samples, end states and step sizes, continued in place."""

    def __init__(self, run, seed):
        self.run = run
        self.rng = np.random.RandomState(seed)
        self.theta_sum = np.zeros((2,) + run.alpha.shape)

    def _piece(self, levels, chained, n_burnin, n_keep):
        """A piece of work: the chains of ``levels`` (from their entries in ``phi``), with a seed of its own."""
        seed = int(self.rng.randint(0, 2**31 - 1))

        def piece():
            n_grad, U, accept = _chains(self.run, self.temperatures, levels, chained, self.phi, self.steps,
                                        n_burnin, n_keep, seed, self.theta_sum)
            for i, level in enumerate(levels):
                self.samples[level].append(U[i])
                self.accept[level] = accept[i]
            return n_grad

        return piece

    def _pieces(self, levels, chained, n_burnin, n_keep):
        return [self._piece(chunk, chained, n_burnin, n_keep) for chunk in np.array_split(levels, _CHUNKS)
                if chunk.size]

    def start(self, n_temperatures, n_burnin, n_keep):
        """Heat from ``q``: a run of temperatures starts at ``q``'s mean, each chain where the previous stopped."""
        self.temperatures, self.dt = rti_temperatures(n_temperatures, self.run.ladder_power)
        K1 = n_temperatures + 1
        self.phi = np.repeat(np.log(self.run.alpha / self.run.beta)[None], K1, axis=0)
        self.steps = np.full(K1, 0.1)
        self.samples = [[] for _ in range(K1)]
        self.accept = np.zeros(K1)
        self.n_burnin = n_burnin
        return self._pieces(np.arange(K1), True, n_burnin, n_keep)

    def lengthen(self, n_more=None):
        """Continue every chain from where it stopped for ``n_more`` draws (default: as many as it holds)."""
        return self._pieces(np.arange(self.temperatures.size), False, 0, n_more or self.n_kept)

    def refine(self, n_more=0):
        """Halve the ladder's spacing; each new chain starts from its lower neighbour's end state and keeps as
        many draws as the old chains will hold, which add ``n_more`` each."""
        K, n_kept = self.temperatures.size - 1, self.n_kept
        self.phi, self.steps, self.accept = (np.repeat(a, 2, axis=0)[:-1] for a in (self.phi, self.steps, self.accept))
        self.samples = [s for old in self.samples for s in (old, [])][:-1]
        self.temperatures, self.dt = rti_temperatures(2 * K, self.run.ladder_power)
        new = self._pieces(np.arange(1, 2 * K, 2), False, self.n_burnin, n_kept + n_more)
        return new + (self._pieces(np.arange(0, 2 * K + 1, 2), False, 0, n_more) if n_more else [])

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
        var = np.array([_var_of_mean(u) for u in series])
        return float(w @ means), float(np.sqrt(np.sum(w**2 * var))), float(w @ halves), means


class RankRun:
    """Referenced TI of one rank, a step at a time: :meth:`plan` a step's pieces, run them, :meth:`finish` it.

    Every choice is made in :meth:`plan` and :meth:`finish`, between steps,
    from the numbers alone, and every piece draws from a seed of its own, so
    the same ``random_state`` gives the same numbers however the pieces run.
    The settings are those of :func:`referenced_ti_log_evidence`; with
    ``screen=True`` (a rank selection's screen) the first round runs one of
    the two ladders, starting from a quarter of it (every other temperature,
    a quarter of the draws), and the first refinement step the other.
    """

    def __init__(self, data, n_components, prior_rates, *, n_temperatures, n_burnin, n_keep, n_leapfrog, n_starts,
                 max_starts, max_refinements, max_time, init=(), screen=False, random_state=None):
        for name, value, low in [("n_components", n_components, 1), ("n_temperatures", n_temperatures, 4),
                                 ("n_burnin", n_burnin, 0), ("n_keep", n_keep, 4), ("n_leapfrog", n_leapfrog, 1),
                                 ("n_starts", n_starts, 1), ("max_starts", max_starts, 1),
                                 ("max_refinements", max_refinements, 0)]:
            if value is not None or name != "max_refinements":
                check_int(name, value, low)
        if n_temperatures % 4:
            raise ValueError(f"n_temperatures must be a multiple of 4 (Simpson's rule on the ladder and on every "
                             f"other point of it), got {n_temperatures}.")
        if max_time is not None:
            check_positive_real("max_time", max_time)
        self.data, self.n_components = data, n_components
        self.single = data.single(n_components)
        self.rates = reference._row_rates(prior_rates, data.shape)
        self.prior_rates = prior_rates
        self.settings = dict(n_temperatures=n_temperatures, n_burnin=n_burnin, n_keep=n_keep)
        self.n_leapfrog, self.n_starts, self.max_starts = n_leapfrog, n_starts, max(n_starts, max_starts)
        self.max_refinements, self.max_time = max_refinements, max_time
        self.init = list(init)
        # A screen's first round runs one ladder (a rank far below the best needs no more); the first refinement
        # step adds the second, from the seed drawn with the first, and no bar is within tol before both ran.
        self.screen = screen
        self.rng = check_random_state(random_state)
        self.fit = reference.vb_fit if data.kappa == 0.0 else reference.laplace_fit
        # A Laplace fit's L-BFGS stops early until the rank, still in the running before its ladders, is polished.
        self.polished = self.fit is reference.vb_fit
        # bracketed_at: the reference's bound when its bracket was taken (a better mode needs another).
        self.fits, self.ladders, self.rounds, self.bracketed, self.bracketed_at = [], None, [], None, None
        self.n_refinements, self.stop_reason, self.time, self.n_grad = 0, None, 0.0, 0
        self._next, self._polishing = None, []  # the step its pieces are for; the starts a polish continues
        self.halfway = False  # the last round holds a first part of its draws (an estimate of its own)
        self.moments = False  # whether q is fitted to the moments of a chain at t = 1 (else the fit's)

    # -- the reference ------------------------------------------------------------------------------

    def _search(self, n):
        """Pieces that fit ``n`` more starts (the first search: half of them split ``init``'s components)."""
        warm = self.init[: self.n_starts // 2] if not self.fits else []
        data, R, rates, fit = self.data, self.n_components, self.rates, self.fit
        starts = [reference._split_start(warm[k % len(warm)], R, self.rng) if k < len(warm)
                  else reference._random_start(data, R, self.rng, reference._START_TOTAL[fit]) for k in range(n)]
        cap = {} if self.polished else {"max_iter": reference._LAPLACE_MAX_ITER[0]}
        self._next = "searched"
        return [lambda start=start: fit(data, R, rates, start, **cap) for start in starts]

    def _polish(self):
        """Pieces that continue every start the first search stopped early to L-BFGS's full count, once, or
        ``[]``: a rank far below the best is told apart by its bracket alone."""
        if self.polished:
            return []
        self.polished, self._next, self._polishing = True, "polished", [k for k, f in enumerate(self.fits) if not f[3]]
        data, R, rates = self.data, self.n_components, self.rates
        return [lambda f=self.fits[k]: reference.laplace_fit(data, R, rates, f[1] / f[2], polish=True)
                for k in self._polishing]

    def _take_reference(self):
        """Use the best start's fit as ``q``; the ladders start (again) from it."""
        bounds = self.bounds
        if not np.isfinite(bounds).any():
            raise FloatingPointError(f"every one of the {bounds.size} starts of the reference's fit at rank "
                                     f"{self.n_components} diverged (its bound is not finite).")
        best = int(np.argmax(np.where(np.isfinite(bounds), bounds, -np.inf)))
        self.best_bound, self.alpha, self.beta = bounds[best], self.fits[best][1], self.fits[best][2]
        # HMC's inverse mass is the variance of log θ (q's: trigamma(α)), so that every coordinate moves on its
        # own scale.
        self.inv_mass = polygamma(1, self.alpha)
        self.ladders, self.halfway, self.moments, self.n_refinements = None, False, False, 0

    @property
    def bounds(self):
        return np.array([f[0] for f in self.fits])

    @property
    def ladder_power(self):
        """The ladder's power (see the module): 2 from the moments' reference, 5 from the fit's."""
        return 2.0 if self.moments else 5.0

    @property
    def n_bracket(self):
        """Draws a bracket's chains keep: a quarter of a round's (a rank far below needs no more)."""
        return max(self.settings["n_keep"] // 4, 4)

    @property
    def mode_error(self):
        return reference.mode_search_error(self.bounds)

    # -- the steps ----------------------------------------------------------------------------------

    def bracket(self):
        """The pieces that bracket the log-evidence from the reference (see the module): two of them, each
        :attr:`n_bracket` exact draws of ``q``, then a chain at :math:`t = 1` from the last of them
        (``n_burnin`` iterations that adapt its step, :attr:`n_bracket` kept)."""
        s = self.settings
        ends = np.array([0.0, 1.0])

        def piece(seed):  # its own sum of the factors at t = 1: the two pieces run side by side
            phi = np.repeat(np.log(self.alpha / self.beta)[None], 2, axis=0)
            theta_sum = np.zeros((2,) + self.alpha.shape)
            n_grad, U, _ = _chains(self, ends, np.arange(2), True, phi, np.full(2, 0.1), s["n_burnin"],
                                   self.n_bracket, seed, theta_sum)
            return n_grad, U, theta_sum

        self._next, self._seeds = "bracketed", self.rng.randint(0, 2**31 - 1, size=2)
        return [lambda seed=int(seed): piece(seed) for seed in self._seeds]

    def _take_bracket(self, results):
        """The bracket's ends, from the two pieces' ``U`` (rows: draws of ``q``, the chain at t = 1)."""
        (_, U_a, sum_a), (_, U_b, sum_b) = results
        (lower, mc_lower), (upper, mc_upper) = (
            _two_chains(U_a[k].mean(), math.sqrt(_var_of_mean(U_a[k])), U_b[k].mean(), math.sqrt(_var_of_mean(U_b[k])))
            for k in (0, 1))
        sums = sum_a + sum_b
        self.theta_sum = sums[0]
        if self.n_components <= EXACT_RELABEL_RANK:
            lower, mc_lower = self._take_moments(sums, lower, mc_lower, upper)
        # The chain at t = 1 starts from a draw of q: a lagging chain still rises.
        halves = 0.5 * (U_a[1][: U_a.shape[1] // 2].mean() + U_b[1][: U_b.shape[1] // 2].mean())
        self.bracketed = dict(lower=lower, lower_mc=mc_lower, upper=upper, log_evidence=0.5 * (lower + upper),
                              mc=math.hypot(mc_lower, mc_upper), lag=abs(upper - halves),
                              quad=0.5 * max(upper - lower, 0.0))
        self.stop_reason, self.bracketed_at = "its bracket alone ran", self.best_bound

    def _take_moments(self, sums, lower, mc_lower, upper):
        """The ladders run from the Gammas that match the chain's moments at t = 1 (see the module) unless the
        integrand's slope where their path starts, the variance of ``U`` over exact draws of them, is above the
        whole rise of the fit's path: a product of Gammas as wide as the posterior along the scale ridges of
        three or more modes puts mass far off them (on a 14 x 12 x 10 tensor at rank 3, a slope of 430,000
        against a rise of 2,900 nats, and most of the path's rise within its first eighth). The higher of the
        two bounds is the bracket's lower end (returned with its Monte-Carlo error). HMC's mass stays the fit's:
        its spreads are those along each coordinate with the others held, which set the leapfrog's stable step."""
        fit = self.alpha, self.beta
        self.alpha, self.beta = reference.moment_reference(sums, 2 * self.n_bracket, self.alpha)
        phi = np.log(self.alpha / self.beta)[None].copy()
        _, U, _ = _chains(self, np.zeros(1), np.arange(1), True, phi, np.ones(1), 0, self.n_bracket,
                          int(self._seeds[0] ^ self._seeds[1]), np.zeros((2,) + self.alpha.shape))
        self.moments = bool(U[0].var() <= upper - lower)
        if not self.moments:
            self.alpha, self.beta = fit
        return (U[0].mean(), math.sqrt(_var_of_mean(U[0]))) if U[0].mean() > lower else (lower, mc_lower)

    @property
    def lower_bound(self):
        """What the log-evidence is above: the bracket's lower end, :math:`E_q[U]` from exact draws of ``q``
        (a bound for any ``q``), less ``DECISION_Z`` times its Monte-Carlo error; ``-inf`` before the bracket."""
        if self.bracketed is None:
            return -math.inf
        return self.bracketed["lower"] - DECISION_Z * self.bracketed["lower_mc"]

    def search_more(self):
        """Pieces that double the reference's starts (up to ``max_starts``), or ``[]``."""
        return self._search(n) if (n := min(2 * self.bounds.size, self.max_starts) - self.bounds.size) > 0 else []

    def plan(self, tol, search=True):
        """The pieces of the next step towards an error bar of ``tol`` (``None``: one round), or ``[]`` if none.

        ``[]`` means the bar is within ``tol``, or the budget is spent (``stop_reason`` says why).
        ``search=False`` leaves the mode search alone and refines the chains
        until their own pieces are within ``tol`` (the leader of a rank
        selection: a better mode can only raise its estimate).
        """
        if not self.fits:
            return self._search(self.n_starts)
        if self.ladders is None:
            if pieces := self._polish():
                return pieces
            # Two halves of the starts that disagree on the best mode by more than that share of tol: more
            # starts, before any chain runs from a reference a better mode would replace.
            if tol is not None and self.mode_error > reference._SEARCH_SHARE * tol \
                    and self.bounds.size < self.max_starts and not self._out_of_time():
                return self.search_more()
            if self.bracketed_at != self.best_bound:  # the chain at t = 1 the ladders' reference is fitted to
                return self.bracket()
            self.seeds = self.rng.randint(0, 2**31 - 1, size=2)
            self.ladders = [_Ladder(self, seed) for seed in self.seeds[: 2 - self.screen]]
            self.stop_reason = "one round of its ladders ran"
            s = self.settings
            # The first check needs every chain split in halves: n_keep in two runs, each ending in an estimate.
            # A screen's first half starts as a quarter: every other temperature, half its draws (an estimate
            # that puts out a rank far below the best for 40% of a half's work), then the ladder's other
            # temperatures and the rest of the half's draws.
            K, n_keep = s["n_temperatures"], max(s["n_keep"] // 2, 2)
            quarter = self.screen and K % 8 == 0 and n_keep >= 8
            self._next = "quarter" if quarter else "half"
            return [p for ladder in self.ladders
                    for p in ladder.start(K // 2 if quarter else K, s["n_burnin"], n_keep // 2 if quarter else n_keep)]
        if self._next == "quarter":
            self._next = "half"
            return [p for ladder in self.ladders for p in ladder.refine(ladder.n_kept)]
        if self._next == "half":
            self._next = "estimate"
            return [p for ladder in self.ladders for p in ladder.lengthen()]
        mode = self.mode_error if search else 0.0
        chains = math.sqrt(self.mc**2 + self.lag**2 + self.quad**2)
        if tol is None or (math.hypot(chains, mode) <= tol and len(self.ladders) == 2):
            self.stop_reason = ("tol is None: one round" if tol is None else f"the error bar is below tol={tol:g}"
                                if search else f"the chains' error is below tol={tol:g}")
            return []
        # What the chains' own pieces must reach for the whole bar to be within tol.
        ti_target = math.sqrt(tol**2 - mode**2) if mode < reference._SEARCH_SHARE * tol else None
        if ti_target is None and chains <= mode and self.bounds.size >= self.max_starts:
            self.stop_reason = (f"{self.bounds.size} starts of the reference's fit found best modes {mode:.3g} "
                                "nats apart, so the posterior has modes no chain here visits (a better one raises "
                                "the evidence), and longer chains cannot lower that")
            return []
        if self._out_of_time():
            self.stop_reason = f"max_time={self.max_time:g} s would be exceeded"
            return []
        if self.max_refinements is not None and self.n_refinements >= self.max_refinements:
            self.stop_reason = f"max_refinements={self.max_refinements} steps have run"
            return []
        self.n_refinements += 1
        if ti_target is None and self.bounds.size < self.max_starts:  # a better mode restarts the chains: first
            return self.search_more()
        if len(self.ladders) == 1:
            return self.second_ladder()
        self._next = "estimate"
        if self.quad > max(self.mc, self.lag):
            return [p for ladder in self.ladders for p in ladder.refine()]
        return [p for ladder in self.ladders for p in ladder.lengthen(self._n_more(ti_target or mode))]

    def _n_more(self, goal):
        """Draws every chain adds for its Monte-Carlo error and lag to reach ``goal`` beside the quadrature's:
        both fall at least as 1/sqrt(length), so the length grows by their ratio squared, with a fifth more for
        the noise of the error estimates; from a quarter of the draws it holds to as many."""
        room = goal**2 - self.quad**2
        grow = 2.0 if room <= 0.0 else min(max(1.2 * (self.mc**2 + self.lag**2) / room, 1.25), 2.0)
        return math.ceil((grow - 1.0) * self.ladders[0].n_kept)

    def second_ladder(self):
        """The pieces of the second ladder, as long as the first (the two check each other), or ``[]`` if it
        has run or no round has."""
        if not self.estimated or len(self.ladders) == 2:
            return []
        first, self._next = self.ladders[0], "estimate"
        self.ladders.append(_Ladder(self, self.seeds[1]))
        return self.ladders[1].start(first.temperatures.size - 1, self.settings["n_burnin"], first.n_kept)

    def _out_of_time(self):
        # The next step costs about what has been spent so far.
        return self.max_time is not None and 2.0 * self.time > self.max_time

    @property
    def error(self):
        """The error bar: the root sum of squares of its four pieces."""
        return math.sqrt(self.mc**2 + self.lag**2 + self.quad**2 + self.mode_error**2)

    def finish(self, results):
        """Take in the results of the step's pieces (a search's fits, a bracket's chains, or the ladders'
        gradient counts); returns whether the step changed the estimate or its error bar."""
        new = False
        if self._next == "searched":
            first = not self.fits
            previous = None if first else self.best_bound
            self.fits += results
            if first or self.bounds.max() > previous:
                self._take_reference()  # a better mode: the ladders start again from it
            self._next = None
            # The first search (reported as it is), or the same mode: the estimate stands, with a new mode piece.
            new = self.estimated or self.bracketed is None
        elif self._next == "polished":  # a better mode needs its bracket again
            for k, fit in zip(self._polishing, results):
                self.fits[k] = fit
            self._take_reference()
            self._next = None
        elif self._next == "bracketed":
            self.n_grad += sum(res[0] for res in results)
            self._take_bracket(results)
            self._next, new = None, True
        else:
            self.n_grad += sum(results)
            if self._next in ("quarter", "half", "estimate"):  # a round's first part is an estimate too (_estimate)
                self._estimate()
                new = True
        return new

    def _estimate(self):
        parts = [ladder.estimate() for ladder in self.ladders]
        # Batch means within the chains, checked by the two ladders' spread (one ladder: batch means alone).
        self.value, self.mc = (_two_chains(parts[0][0], parts[0][1], parts[1][0], parts[1][1]) if len(parts) == 2
                               else parts[0][:2])
        # A lagging chain drifts: its first half is further off than the whole, by about as much as the whole
        # is (bias ~ 1/length).
        self.lag = abs(self.value - sum(part[2] for part in parts) / len(parts))
        ladder = self.ladders[0]
        K = ladder.temperatures.size - 1
        self.U_mean = sum(part[3] for part in parts) / len(parts)
        self.quad = abs(self.value - 2.0 * float(simpson_weights(K // 2) @ (self.U_mean * ladder.dt)[::2])) / 15.0
        self.parts = parts
        entry = dict(n_temperatures=K, n_keep=ladder.n_kept, log_evidence=self.value, error=self.error, mc=self.mc,
                     lag=self.lag, quad=self.quad, mode=self.mode_error, n_grad=self.n_grad, time=self.time)
        # A round's first part stands for the round until the round is whole (it is replaced then): a screen
        # puts out a rank far below the best by it, and the rest of the round never runs.
        self.rounds[len(self.rounds) - self.halfway:] = [entry]
        self.halfway = self._next in ("quarter", "half")

    @property
    def estimated(self):
        """Whether the run holds an estimate from its current reference (a better mode restarts the ladders)."""
        return self.ladders is not None and bool(self.rounds) and self._next not in ("quarter", "half")

    @property
    def standing(self):
        """``(log-evidence, error bar)``: the estimate, the last one while the ladders restart from a better
        mode, or NaN before any."""
        if self.estimated:
            return self.value, self.error
        if self.rounds:
            return self.rounds[-1]["log_evidence"], self.rounds[-1]["error"]
        if self.bracketed is not None:
            b = self.bracketed  # its error bar with the mode search of every start so far
            return b["log_evidence"], math.sqrt(b["mc"] ** 2 + b["lag"] ** 2 + b["quad"] ** 2 + self.mode_error**2)
        return math.nan, math.nan

    def summary(self):
        """One line: the estimate, its error bar and its pieces (before the bracket: the reference's search)."""
        if self.bracketed is None and not self.rounds:
            return (f"rank {self.n_components}, reference fitted from {self.bounds.size} starts: best bound "
                    f"{self.best_bound:.2f}, mode search {self.mode_error:.2f}, {self.time:.1f} s")
        if not self.rounds:
            b = self.bracketed
            return (f"rank {self.n_components}, bracketed between {b['lower']:.2f} (q) and {b['upper']:.2f} "
                    f"(t = 1): {b['log_evidence']:.2f} ± {self.standing[1]:.2f} (Monte Carlo {b['mc']:.2f}, lag "
                    f"{b['lag']:.2f}, half-width {b['quad']:.2f}, mode search {self.mode_error:.2f} from "
                    f"{self.bounds.size} starts), {self.time:.1f} s")
        K, n = self.rounds[-1]["n_temperatures"], self.rounds[-1]["n_keep"]
        return (f"rank {self.n_components}, {K} temperatures, {n} draws each: {self.value:.2f} ± {self.error:.2f} "
                f"(Monte Carlo {self.mc:.2f}, lag {self.lag:.2f}, quadrature {self.quad:.2f}, mode search "
                f"{self.mode_error:.2f} from {self.bounds.size} starts), {self.time:.1f} s")

    def result(self, tol, likelihood, warn=True):
        """The :class:`~skevidence.evidence.EvidenceResult` of the run; warns if ``tol`` was not reached.

        A run bracketed only (no ladder ran) reports the bracket's midpoint and error bar, its ends as the
        integrand at t = 0 and 1, and the mean of its chain at t = 1 as the posterior mean.
        """
        value, error = self.standing
        converged = tol is not None and error <= tol
        if warn and tol is not None and not converged:
            warnings.warn(
                f"Referenced TI at rank {self.n_components} stopped at an error bar of {error:.3g} nats, "
                f"above tol={tol:g}, because {self.stop_reason}; the estimate {value:.6g} may be off by more "
                "than tol." + ("" if str(self.stop_reason).startswith("it leads") else
                               " A longer search for the reference (max_starts, max_time) may find a better mode."
                               if "modes" in str(self.stop_reason) else " Raise max_time or max_refinements (or tol)."),
                ConvergenceWarning, stacklevel=3,
            )
        data = self.data
        diagnostics = dict(
            mode_error=self.mode_error, reference_starts=int(self.bounds.size), reference_mean=self.alpha / self.beta,
            reference_bound=float(self.best_bound), reference_bounds=self.bounds, converged=bool(converged), tol=tol,
            stop_reason=self.stop_reason, likelihood=likelihood,
            likelihood_shape=data.kappa if data.kappa > 0.0 else None, noise_floor=data.floor,
            reference_fit="vb" if data.kappa == 0.0 else "laplace", reference_moments=self.moments,
            rounds=tuple(self.rounds))
        if self.rounds:
            ladders, n_kept = self.ladders, self.ladders[0].n_kept
            posterior_mean = sum(ladder.theta_sum[0] for ladder in ladders) / (len(ladders) * n_kept)
            temperatures, U_mean = ladders[0].temperatures, self.U_mean
            diagnostics.update(
                ladders=tuple(part[0] for part in self.parts), mc_error=self.mc, lag_error=self.lag,
                quadrature_error=self.quad, acceptance=sum(ladder.accept for ladder in ladders) / len(ladders),
                step_size=sum(ladder.steps for ladder in ladders) / len(ladders), n_temperatures=temperatures.size - 1,
                n_keep=n_kept)
        else:
            b = self.bracketed
            posterior_mean = self.theta_sum / (2.0 * self.n_bracket)
            temperatures, U_mean = np.array([0.0, 1.0]), np.array([b["lower"], b["upper"]])
            diagnostics.update(bracket=(b["lower"], b["upper"]), mc_error=b["mc"], lag_error=b["lag"],
                               quadrature_error=b["quad"], n_temperatures=1, n_keep=self.n_bracket)
        diagnostics["elbo"] = float(U_mean[0])
        size = data.X.size if data.dense2 else data.vals.size
        return EvidenceResult(
            log_evidence=value, std_error=error, method="rti", temperatures=temperatures,
            expected_log_likelihood=U_mean, expected_log_likelihood_std=np.zeros_like(U_mean),
            n_likelihood_evaluations=self.n_grad * size, wall_time=self.time, diagnostics=diagnostics,
            posterior_mean=np.split(posterior_mean, data.offsets[1:-1]))


def referenced_ti_log_evidence(X, n_components, prior_rates=1.0, *, likelihood="poisson", likelihood_shape=1.0,
                               noise_floor=0.0, tol=DEFAULT_TOL, n_temperatures=RTI_DEFAULTS["n_temperatures"],
                               n_burnin=RTI_DEFAULTS["n_burnin"], n_keep=RTI_DEFAULTS["n_keep"],
                               n_leapfrog=RTI_DEFAULTS["n_leapfrog"], n_starts=RTI_DEFAULTS["n_starts"],
                               max_starts=RTI_DEFAULTS["max_starts"], max_refinements=RTI_DEFAULTS["max_refinements"],
                               max_time=RTI_DEFAULTS["max_time"], n_jobs=2, init=(), random_state=None,
                               verbose=0):
    r"""Log-evidence of a CP model (NMF for a matrix) by referenced TI with Metropolis-adjusted HMC.

    The entries are Poisson (the papers' model), or exponential or Gamma of
    mean :math:`V + f` (``likelihood``, ``noise_floor``: densities of power
    spectrograms, whose maximum likelihood is Itakura–Saito NMF; Févotte,
    Bertin and Durrieu 2009). The reference ``q`` is mean-field VB for
    Poisson (:func:`~skevidence.cp.variational_reference`) and a Laplace fit
    in :math:`\log\theta` otherwise (:func:`~skevidence.cp.laplace_reference`),
    each at the best posterior mode its starts found.

    Parameters
    ----------
    X : array-like or scipy.sparse array of shape (n_1, ..., n_N)
        Non-negative data (counts, or magnitudes read as counts, for Poisson;
        powers for the exponential and Gamma likelihoods).
    n_components : int
        Rank :math:`R`.
    prior_rates : float or sequence of float, default=1.0
        Rate of the exponential prior of every mode's factor.
    likelihood : {"poisson", "exponential", "gamma"}, default="poisson"
        Density of an entry given its mean.
    likelihood_shape : float, default=1.0
        Shape :math:`\kappa` of the Gamma likelihood (``likelihood="gamma"`` only).
    noise_floor : float, default=0.0
        The exponential and Gamma likelihoods' known noise floor :math:`f`: an
        entry's mean is :math:`V + f` (see
        :class:`~skevidence.audio.SpectrogramTransformer`'s ``noise_floor_``).
        Data with exact zeros need one under the exponential likelihood.
    tol : float or None, default=1.0
        Target error bar in nats; ``None`` runs the first round only.
    n_temperatures : int, default=16
        Intervals :math:`K` of the ladder (a multiple of 4; refinement may double it).
    n_burnin, n_keep : int, default=200, 400
        HMC iterations a temperature spends adapting the step size, and keeps
        in the first round (run in two halves: the lag check compares them).
    n_leapfrog : int, default=10
        Leapfrog steps per HMC iteration.
    n_starts : int, default=8
        Starts of the reference's fit (its posterior mode by multiplicative
        updates, then the variational or Laplace fit there); the best bound
        is kept. Two halves of the starts are two independent searches for
        the posterior's best mode; while their best bounds differ by more
        than ``tol / sqrt(2)`` the starts are doubled (the chains then have at
        least that share of ``tol`` left).
    max_starts : int, default=64
        Most starts of the reference's fit.
    max_refinements : int or None, default=8
        Most refinement steps after the first round (each lengthens the
        chains, halves the ladder's spacing or doubles the starts, doubling
        the work so far); ``None``: no cap. A deterministic bound on the work.
    max_time : float or None, default=None
        Seconds after which no further refinement starts.
    n_jobs : int, default=2
        Threads that run the starts and the ladders' pieces (the result does
        not depend on it).
    init : sequence of ndarray, default=()
        Factors of lower ranks, each ``(sum of the mode sizes, R')`` stacked
        (for example an earlier result's ``diagnostics["reference_mean"]``):
        half the reference's first starts split their components.
    random_state : int, RandomState instance or None
    verbose : int, default=0

    Returns
    -------
    EvidenceResult
        ``method="rti"``; ``std_error`` is the error bar (Monte-Carlo, lag,
        quadrature and mode search). ``diagnostics`` holds ``"ladders"`` (the
        two ladders' estimates), ``"mc_error"``, ``"lag_error"``,
        ``"quadrature_error"``, ``"mode_error"``, ``"reference_starts"``,
        ``"reference_mean"`` (the factors' means under ``q``, stacked),
        ``"elbo"`` (the integrand at :math:`t = 0`), ``"reference_bound"``
        (the best start's ELBO, or Laplace value for the Gamma likelihoods)
        and ``"reference_bounds"`` (every start's), ``"acceptance"``,
        ``"step_size"``, ``"converged"``, ``"tol"``, ``"stop_reason"``,
        ``"rounds"`` (every check: budget, estimate, pieces, time) and the
        final ``"n_temperatures"`` and ``"n_keep"``. ``posterior_mean`` is the
        list of the factors' posterior means, mode by mode.

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
    if tol is not None:
        check_positive_real("tol", tol)
    data = reference.as_data(X, likelihood_kappa(likelihood, likelihood_shape), noise_floor)
    run = RankRun(data, n_components, prior_rates, n_temperatures=n_temperatures, n_burnin=n_burnin, n_keep=n_keep,
                  n_leapfrog=n_leapfrog, n_starts=n_starts, max_starts=max_starts, max_refinements=max_refinements,
                  max_time=max_time, init=init, random_state=random_state)
    while pieces := run.plan(tol):
        start = time.perf_counter()
        run.finish(run_pieces(pieces, n_jobs))
        run.time += time.perf_counter() - start
        if verbose and run.estimated:
            print(f"[rti] {run.summary()}", flush=True)
    return run.result(tol, likelihood)
