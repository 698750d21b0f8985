r"""An exact-kernel SMC over count arrivals: the reference evidence of Poisson NMF and CP.

Every count unit of the data gets an arrival time, uniform on (0, 1). The
target at time :math:`s` is the posterior of the units arrived by then,
:math:`y(s)`, with every Poisson mean scaled by the exposure :math:`s`,

.. math::
   \gamma_s(\theta) = p(\theta) \prod_e \mathcal{PO}\big(y_e(s);\ s V_e(\theta)\big),
   \qquad Z_0 = 1,\quad Z_1 = p(X).

Each target is a Poisson factorisation posterior with integer data, so the
latent-source Gibbs sweep (with the factor rates :math:`\lambda + s \cdot`
the product of the other factors' sums) leaves it exactly invariant: no step
size, no discretisation, no Metropolis rejection. The sampler is the SMC
sampler of Del Moral, Doucet & Jasra (2006) on the data-tempering path of
Chopin (2002): add units, reweight, resample, move every particle with Gibbs
sweeps, and multiply the running estimate of :math:`Z` by the mean
incremental weight. A pilot run chooses the steps (each adds units while the
effective sample size of the incremental weights stays above a fraction of
the particles); the runs that make the estimate follow them. Going from
:math:`(y, s)` to :math:`(y', s')` weights a particle by
:math:`\prod_e V_e^{y'_e - y_e} \exp(-(s' - s)\sum_e V_e)`; the factors shared
by all particles, :math:`s'^{|y'|} s^{-|y|} \prod_e y_e!/y'_e!`, telescope to
:math:`-\sum_e \log x_e!`. (The code runs this path as the referenced path
below with the prior itself as the reference :math:`q`: Gammas of shape 1
and rate :math:`\lambda`, one labelling; the reference's part of the
weights then vanishes.)

**Referenced path** (``reference="vb"``, the default up to rank 7). From the prior the
path is long: the first units move the particles across the whole prior,
and the number of steps grows with the information in the data. Starting
instead from the mean-field variational fit :math:`q` (a Gamma per factor
entry, :func:`~skevidence.cp.reference.variational_reference`), the
targets

.. math::
   \gamma_s(\theta, \sigma) = \tfrac{1}{R!}\, q_\sigma(\theta)^{1-s}\, p(\theta)^s
   \prod_e \mathcal{PO}\big(y_e(s);\ s V_e(\theta)\big)

keep the posterior's width all along (the reference's share of the
precision falls as the data's rises), and the path is short: on a 30 x 20
matrix of 6,649 counts at rank 2, with 128 particles, 89 steps against 518
from the prior. :math:`q_\sigma` is :math:`q` with its
components relabelled by :math:`\sigma`: :math:`\gamma_0` is the
:math:`R!`-fold symmetrised reference, exactly normalised, and
:math:`\gamma_1` the posterior. The Gibbs sweep redraws :math:`\sigma` from
its conditional :math:`\propto q_\sigma^{1-s}` and then the factors given it
(:math:`q_\sigma^{1-s} p^s` is a product of Gammas, so the sweep stays
exact), and the weights sum :math:`\sigma` out, :math:`(p^{s'}\sum_\sigma
q_\sigma^{1-s'}) / (p^{s}\sum_\sigma q_\sigma^{1-s})`. Summing it out matters:
near :math:`s = 1` every labelling of every mode carries the same mass, and
the sweeps rarely carry a particle from one labelling's region to another's,
so particles that kept the labelling they started with would not spread over
them. The sum over :math:`R!` labellings limits this path to ranks up to 7.

**Where the referenced path runs low.** Its estimate of :math:`Z` is
unbiased, but its particles start at the reference's mode, and at an
over-fitted rank the posterior has other modes (other ways of splitting a
component) that the Gibbs sweeps reach too slowly: there the runs' logs sit
below :math:`\log Z` by more than their spread shows (by a few nats on the
14 x 12 x 10 tensor of true rank 3 ``t14x12x10r3`` of
``benchmarks/bench_accuracy.py`` at rank 4, against the path from the prior
and referenced TI). The path from the prior, whose particles meet every mode
as the units arrive, is far less exposed to it: where the two disagree at
an over-fitted rank, ``reference="prior"`` is the one to believe.
"""

import time
import warnings
from itertools import permutations

import numpy as np
from joblib import effective_n_jobs
from scipy import sparse, special

from .._progress import progress
from .._random import seed_sequence
from .._threads import numba_threads
from .._validation import check_int
from ..evidence._result import EvidenceResult
from ..evidence._stderr import effective_sample_size
from .data import count_entries
from .kernels.gibbs import relabel_to
from .kernels.smc import log_intensity_block, move_particles, next_stop, reference_weights, total_intensity
from .model import check_prior_rates
from .reference import variational_reference

__all__ = ["combine_runs", "smc_log_evidence"]

#: Units whose log-intensities one kernel call computes while a step's stop is sought.
_SCAN_BLOCK = 512

#: Runs whose log-evidences spread by more than this (nats) raise a warning.
_MAX_SPREAD = 1.5

#: n_particles="auto": the first and the largest number of particles, the spread
#: (nats) a batch of runs must reach, and the largest growth from one batch to the next.
_AUTO_PARTICLES = (128, 8192)
_AUTO_SPREAD = 1.0
_AUTO_MAX_GROWTH = 8.0

#: reference="vb" sums the labelling out of the weights over all R! of them.
_MAX_REFERENCED_RANK = 7

#: A run is refused beyond this many SMC steps: the particles are then far too
#: few for the data (each step costs a full Gibbs move of every particle).
_MAX_STEPS = 1_000_000


def combine_runs(log_z):
    r"""Combine independent runs' :math:`\log \hat Z_k`: ``(estimate, std_error, spread)``.

    Each :math:`\hat Z_k` is unbiased for :math:`Z`, and for many steps and
    particles :math:`\log \hat Z_k` is normal with mean
    :math:`\log Z - \sigma^2/2` and variance :math:`\sigma^2` (Bérard, Del
    Moral & Doucet 2014). So the estimate is :math:`\bar L + s^2/2` from the
    runs' mean :math:`\bar L` and variance :math:`s^2`, with the standard
    error :math:`\sqrt{s^2/n + s^4/(2(n-1))}` (the second term is the
    uncertainty of the correction itself). The mean of the logs alone would
    be low by :math:`\sigma^2/2`; the log of the mean of the
    :math:`\hat Z_k` is low too while :math:`e^{\sigma^2}` is not small
    against the number of runs, since its mean is carried by the rare high
    runs. ``spread`` is :math:`s`.
    """
    log_z = np.asarray(log_z, dtype=np.float64)
    n = log_z.size
    var = float(log_z.var(ddof=1))
    estimate = float(log_z.mean() + var / 2.0)
    std_error = float(np.sqrt(var / n + var**2 / (2.0 * (n - 1))))
    return estimate, std_error, float(np.sqrt(var))


def _aligned_mean(particles, offsets):
    """Mean of the particles' stacked factors after matching their components to the first particle's.

    The particles sit in all :math:`R!` labellings of the posterior; a plain
    mean would blur the components together. The matching is
    :func:`~skevidence.cp.kernels.gibbs.relabel_to`'s, on the rank-one terms.
    """
    aligned = particles.copy()
    for F in aligned:
        relabel_to(F, offsets, particles[0])
    return aligned.mean(axis=0)


def _smc_run(idx, counts, offsets, rates, reference, n_particles, n_sweeps, min_log_ess, seed_seq, schedule=None):
    r"""One SMC run: ``(log Z, diagnostics)``. ``idx`` is already offset into the factor stack.

    ``reference`` is ``(alpha, beta, perms)``: the Gammas of :math:`q` and the
    labellings it is symmetrised over. Without a ``schedule`` the run draws
    the units' arrival order and chooses its steps on the way (each adds
    units while the effective sample size stays above
    ``exp(min_log_ess)``); ``diagnostics["schedule"]`` records ``(unit_entry,
    times, exposures)``. With another run's schedule the run follows its
    arrival order and goes to its next exposure at every step whatever the
    weights: the steps then do not depend on this run's particles, and its
    :math:`\hat Z` is exactly unbiased (steps chosen from the weights that
    enter the estimate make it depend on them, and it is biased low). The
    exposures belong to their arrival order: with another order some steps
    would add far more units than the weights allow.
    """
    rng = np.random.default_rng(seed_seq)
    alpha, beta, perms = reference
    if schedule is None:
        # The arrival order of the units: each unit's entry, sorted by a uniform time.
        unit_entry = np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts)
        times = rng.random(unit_entry.shape[0])
        order = np.argsort(times, kind="stable")
        unit_entry, times = unit_entry[order], times[order]
    else:
        unit_entry, times, steps = schedule
    n_units = unit_entry.shape[0]

    # The start is the symmetrised reference, exactly normalised (Z_0 = 1): a labelling sigma uniformly, then
    # theta from q_sigma.
    sigma = perms[rng.integers(perms.shape[0], size=n_particles)]
    particles = np.ascontiguousarray(rng.gamma(alpha[:, sigma].transpose(1, 0, 2)) / beta[:, sigma].transpose(1, 0, 2))
    ref_step, ref_slope = np.empty(n_particles), np.empty(n_particles)
    arrived = np.zeros(counts.shape[0], dtype=np.int64)
    log_z, s, k = 0.0, 0.0, 0
    exposures, ess_trace = [], []
    log_v = np.empty((n_particles, _SCAN_BLOCK))
    visited = 0
    while s < 1.0:
        if len(exposures) >= _MAX_STEPS:
            raise RuntimeError(f"the SMC took more than {_MAX_STEPS} steps; use more particles.")
        total_v = total_intensity(particles, offsets)
        sum_log_v = np.zeros(n_particles)
        if schedule is None:
            # The stop is sought with the reference's part of the weight linear in the exposure.
            reference_weights(particles, offsets, rates, alpha, beta, perms, s, s, ref_step, ref_slope)
            slope_v = total_v + ref_slope
            k_new = k
            while k_new < n_units:
                n_scan = min(n_units - k_new, _SCAN_BLOCK)
                block = log_v[:, :n_scan]
                log_intensity_block(particles, idx, unit_entry[k_new:k_new + n_scan], block)
                accepted = next_stop(block, times[k_new:k_new + n_scan], s, slope_v, sum_log_v, min_log_ess, k_new == k)
                k_new += accepted
                if accepted < n_scan:
                    break
            s_new = times[k_new - 1] if k_new > k else 1.0
            if k_new == n_units and np.log(effective_sample_size(sum_log_v - (1.0 - s) * slope_v)) >= min_log_ess:
                # Every unit is in and the weights allow the full exposure at once.
                s_new = 1.0
        else:
            s_new = steps[len(exposures)]
            k_new = n_units if s_new >= 1.0 else int(np.searchsorted(times, s_new, side="right"))
            for start in range(k, k_new, _SCAN_BLOCK):
                block = log_v[:, :min(k_new - start, _SCAN_BLOCK)]
                log_intensity_block(particles, idx, unit_entry[start:start + block.shape[1]], block)
                sum_log_v += block.sum(axis=1)
        visited += (k_new - k) * n_particles
        reference_weights(particles, offsets, rates, alpha, beta, perms, s, s_new, ref_step, ref_slope)
        log_inc = sum_log_v - (s_new - s) * total_v + ref_step
        peak = log_inc.max()
        weights = np.exp(log_inc - peak)
        log_z += peak + np.log(weights.mean())
        ess_trace.append(effective_sample_size(log_inc))
        exposures.append(s_new)
        np.add.at(arrived, unit_entry[k:k_new], 1)
        k, s = k_new, s_new
        # Resample (systematic) and move every particle at the new target.
        weights /= weights.sum()
        positions = (rng.random() + np.arange(n_particles)) / n_particles
        ancestors = np.minimum(np.searchsorted(np.cumsum(weights), positions), n_particles - 1)
        particles = particles[ancestors]
        active = np.flatnonzero(arrived)
        seeds = rng.integers(0, 2**32, size=n_particles, dtype=np.int64)
        move_particles(particles, offsets, idx[active], arrived[active], rates, alpha, beta, perms, s, n_sweeps, seeds)
        visited += active.shape[0] * n_sweeps * n_particles
    # The constants reference_weights leaves out (the exposures' steps sum to one), and the data's.
    log_z += alpha.shape[1] * float(np.diff(offsets) @ np.log(rates))
    log_z += float(np.sum(special.gammaln(alpha) - alpha * np.log(beta)) - special.gammaln(counts + 1.0).sum())
    return log_z, {
        "exposures": np.asarray(exposures), "schedule": (unit_entry, times, np.asarray(exposures)),
        "ess": np.asarray(ess_trace) / n_particles, "n_visited": visited, "particles": particles,
    }


def smc_log_evidence(
    X, n_components, prior_rates=1.0, *, n_particles="auto", n_runs=8, n_sweeps=2,
    ess_threshold=0.5, reference="auto", n_jobs=None, random_state=None, verbose=0,
):  # fmt: skip
    r"""The log-evidence of Poisson CP (NMF for a matrix) by an exact-kernel SMC over count arrivals.

    See the module's description for the path and the weights. A pilot run
    draws the units' arrival order and chooses the steps adaptively (each
    adds count units while the effective sample size of the incremental
    weights stays above ``ess_threshold``); the ``n_runs`` runs that enter
    the estimate then follow that order and those steps with particles of
    their own, so that each run's :math:`\hat Z_k` is an unbiased estimate
    of :math:`Z = p(X)` (steps chosen from a run's own weights would bias
    it low). The runs are combined by :func:`combine_runs`.

    Parameters
    ----------
    X : array-like of shape (I, J) or (I, J, K, ...), or scipy.sparse matrix/array
        Non-negative integer counts.
    n_components : int
        The rank :math:`R`.
    prior_rates : float or sequence of float, default=1.0
        Rates of the exponential priors of each mode's factor (one value for
        all modes, or one per mode).
    n_particles : int or "auto", default="auto"
        Particles of each run. ``"auto"``: batches of ``n_runs`` runs, from
        128 particles up, each batch's size set from the previous batch's
        spread (the variance of :math:`\log \hat Z` falls as one over the
        particles), until the runs' log-evidences spread by at most one nat
        or 8192 particles are reached; only the last batch is kept.
    n_runs : int, default=8
        Independent runs; their spread is the error bar (at least 2). The
        spread of a few runs is itself uncertain: with 4 runs a stated error
        bar can be half the error, so 8 is the default.
    n_sweeps : int, default=2
        Gibbs sweeps of every particle after each resampling.
    ess_threshold : float, default=0.5
        A step adds count units while the effective sample size of the
        incremental weights stays at least this fraction of the particles.
    reference : {"auto", "vb", "prior"}, default="auto"
        Where the path starts. ``"prior"``: the prior, the path of Chopin
        (2002). ``"vb"``: the mean-field variational fit :math:`q`
        (:func:`~skevidence.cp.reference.variational_reference`),
        symmetrised over the components' labellings (see the module's
        description; ranks up to 7): far fewer steps when the data are many.
        ``"auto"``: ``"vb"`` up to rank 7, ``"prior"`` above.
    n_jobs : int or None, default=None
        Threads the kernels use (parallel over particles); ``None``: all.
    random_state : int, RandomState, Generator or None, default=None
    verbose : int, default=0
        ``1``: a progress bar over the runs; ``2``: one line per run.

    Returns
    -------
    result : EvidenceResult
        ``method="smc"``. ``std_error`` is the delta-method standard error of
        :math:`\log \frac1n\sum_k \hat Z_k` from the spread of the runs'
        :math:`\hat Z_k`. ``diagnostics`` holds each run's ``run_log_evidence``,
        ``n_steps``, the smallest ``min_ess`` (fraction of particles), the
        ``exposures`` of the pilot's steps, the ``ess`` of the first run's,
        and ``n_particles`` with the sizes ``particles_tried``.
        ``posterior_mean`` holds each mode's factor, shape ``(I_m, R)``, the
        mean over the last run's particles after matching their component
        labels.

    Notes
    -----
    **Cost.** A step costs one Gibbs move of every particle: ``n_sweeps``
    passes over the entries with arrived units, :math:`O(n_{nz} R M)` for
    :math:`M` modes plus the multinomial splits, and the number of steps
    grows with the information the data hold about the parameters (roughly
    with :math:`R \sum_m I_m \log(n)` for :math:`n` count units). The
    weights cost :math:`O(n R M)` per particle over the whole run.

    **Error bar.** With too few particles (or sweeps) a run's
    :math:`\hat Z_k` is skewed: most runs come out low and the rare high
    one is missed, and the spread of a handful of runs then understates the
    error. Runs whose :math:`\log \hat Z_k` spread by more than about one
    nat raise a warning: add particles or sweeps until they do not.

    References
    ----------
    N. Chopin (2002), A sequential particle filter method for static models, Biometrika 89(3).
    P. Del Moral, A. Doucet & A. Jasra (2006), Sequential Monte Carlo samplers, JRSS B 68(3).
    A. T. Cemgil (2009), Bayesian inference for nonnegative matrix factorisation models,
    Computational Intelligence and Neuroscience.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence.cp.smc import smc_log_evidence
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(rng.exponential(size=(8, 1)) @ rng.exponential(size=(1, 6)))
    >>> result = smc_log_evidence(X, 1, n_particles=64, n_runs=2, random_state=0)
    >>> result.method
    'smc'
    """
    start = time.perf_counter()
    advice = "for real-valued data use method='sti'."
    idx, counts, shape = count_entries(X, method="the count-arrival SMC", advice=advice)
    n_components = check_int("n_components", n_components, 1)
    rates = np.array(check_prior_rates(prior_rates, len(shape)))
    auto = isinstance(n_particles, str)
    if auto and n_particles != "auto":
        raise ValueError(f"n_particles must be an integer or 'auto', got {n_particles!r}.")
    n_runs, n_sweeps = check_int("n_runs", n_runs, 2), check_int("n_sweeps", n_sweeps, 1)
    size = _AUTO_PARTICLES[0] if auto else check_int("n_particles", n_particles, 2)
    if not 0.0 < ess_threshold < 1.0:
        raise ValueError(f"ess_threshold must lie in (0, 1), got {ess_threshold!r}.")
    if reference not in ("auto", "prior", "vb"):
        raise ValueError(f"reference must be 'auto', 'prior' or 'vb', got {reference!r}.")
    if reference == "auto":
        reference = "vb" if n_components <= _MAX_REFERENCED_RANK else "prior"
    if reference == "vb" and n_components > _MAX_REFERENCED_RANK:
        raise ValueError(
            f"reference='vb' sums the weights over all R! labellings of the components, up to rank "
            f"{_MAX_REFERENCED_RANK}; got rank {n_components}. Use reference='prior'."
        )
    offsets = np.concatenate([[0], np.cumsum(shape)]).astype(np.int64)
    stacked = np.ascontiguousarray(idx + offsets[:-1], dtype=np.int64)

    pilot_seq, batch_root, vb_seq = seed_sequence(random_state).spawn(3)
    if reference == "vb":
        # The fit reads the validated non-zeros, so that dense and sparse input give the same numbers.
        entries = sparse.coo_array((counts.astype(np.float64), tuple(idx.T)), shape=shape)
        _, alpha, beta, _ = variational_reference(entries, n_components, rates,
                                                  random_state=int(vb_seq.generate_state(1)[0]))
        perms = np.array(list(permutations(range(n_components))), dtype=np.int64)
    else:
        # The prior is a product of Gammas too (shape 1, rate lambda), the same under every labelling.
        alpha = np.ones((offsets[-1], n_components))
        beta = np.repeat(rates, shape)[:, None] * alpha
        perms = np.arange(n_components)[None]
    q = (np.ascontiguousarray(alpha), np.ascontiguousarray(beta), perms)
    n_threads = effective_n_jobs(n_jobs) if n_jobs is not None else 10**6
    tried = []
    with numba_threads(n_threads):
        # A pilot run chooses the steps; the runs that enter the estimate follow them.
        _, pilot = _smc_run(stacked, counts, offsets, rates, q, size, n_sweeps,
                            float(np.log(ess_threshold * size)), pilot_seq)
        # With n_particles="auto", batches of runs with ever more particles until the runs agree:
        # the variance of log Z-hat falls as 1/particles, so the next size follows from the spread.
        while True:
            report = progress(n_runs, f"SMC ({size} particles)", verbose)
            log_z, diags = [], []
            for seq in batch_root.spawn(1)[0].spawn(n_runs):
                value, diag = _smc_run(stacked, counts, offsets, rates, q, size, n_sweeps, 0.0, seq, pilot["schedule"])
                log_z.append(value)
                diags.append(diag)
                report.update(1)
            report.close()
            log_z = np.asarray(log_z)
            estimate, std_error, spread = combine_runs(log_z)
            tried.append(size)
            if not auto or spread <= _AUTO_SPREAD or size >= _AUTO_PARTICLES[1]:
                break
            grow = min(_AUTO_MAX_GROWTH, (spread / _AUTO_SPREAD) ** 2)
            size = int(min(_AUTO_PARTICLES[1], 2 ** np.ceil(np.log2(size * grow))))
    if spread > _MAX_SPREAD:
        warnings.warn(
            f"the SMC runs' log-evidences spread by {spread:.2g} nats (rank {n_components}): with so few "
            "particles the runs are far from their log-normal limit and the error bar may understate "
            "the error. Raise n_particles (or leave it at 'auto').",
            UserWarning, stacklevel=2,
        )
    mean = _aligned_mean(diags[-1]["particles"], offsets)
    diagnostics = {
        "run_log_evidence": log_z, "log_mean_evidence": float(special.logsumexp(log_z) - np.log(log_z.size)),
        "run_spread": spread, "n_steps": np.array([d["exposures"].size for d in diags]),
        "min_ess": float(min(d["ess"].min() for d in diags)), "exposures": pilot["exposures"], "ess": diags[0]["ess"],
        "n_particles": size, "particles_tried": np.array(tried), "n_sweeps": n_sweeps, "reference": reference,
    }
    return EvidenceResult(
        log_evidence=estimate, std_error=std_error, method="smc", diagnostics=diagnostics,
        n_likelihood_evaluations=sum(d["n_visited"] for d in diags), wall_time=time.perf_counter() - start,
        posterior_mean=tuple(mean[lo:hi] for lo, hi in zip(offsets[:-1], offsets[1:])),
    )
