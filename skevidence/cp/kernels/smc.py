r"""Numba kernels of the count-arrival SMC for Poisson CP factorisations (NMF is two-way CP).

Model: :math:`x_e \sim \mathcal{PO}(V_e)`, :math:`V_e = \sum_r \prod_m F^{(m)}_{i_m(e) r}`,
every factor entry :math:`\sim \mathcal{E}(\lambda_m)`. Every count unit gets
an arrival time on (0, 1); the target at time :math:`s` is the posterior of
the units arrived by :math:`s`, :math:`y(s)`, under the exposure :math:`s`:
:math:`\gamma_s(\theta) = q(\theta)^{1-s} p(\theta)^s \prod_e \mathcal{PO}(y_e(s);\ s V_e(\theta))`,
:math:`q` a reference (a product of Gammas, symmetrised over the labellings
of the components; the prior itself for the path from the prior). The
latent-source Gibbs sweep leaves each :math:`\gamma_s` exactly invariant
(:func:`move_particles`); going from :math:`(y, s)` to :math:`(y', s')`
multiplies a particle's weight by
:math:`\prod_e V_e^{y'_e - y_e}\, e^{-(s' - s) \sum_e V_e}`
(:func:`log_intensity_block`, :func:`next_stop`) times the reference's part
(:func:`reference_weights`) and a factor shared by all particles.

Layout: the factors of a particle are stacked into one ``(D, R)`` array,
:math:`D = \sum_m I_m`, mode ``m`` in rows ``offsets[m]:offsets[m+1]``; the
particles form a C-contiguous ``(P, D, R)`` float64 array. An entry is a row
of ``idx`` (int64, ``(nnz, n_modes)``), its rows already offset into the
stack. Work is parallel over particles; each particle's draws come from
numba's ``np.random`` seeded with that particle's own seed at the start of
its move, so results depend on the seeds alone, not on the thread count.
"""

# numba's njit supports only the legacy np.random functions (one state per thread, np.random.seed).
# ruff: noqa: NPY002
import math

import numpy as np
from numba import njit, prange

from ..._config import FASTMATH
from .gibbs import draw_rows, entry_intensities, likelihood_rates, sample_sources, scale_moves, summed_intensity

__all__ = ["log_intensity_block", "move_particles", "next_stop", "reference_weights", "total_intensity"]

#: Metropolis steps along a component's scale ridge per sweep (each costs O(1)).
_RIDGE_STEPS = 16


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def total_intensity(particles, offsets):
    r"""``(P,)``: :math:`\sum_e V_e` over every entry of the array, zeros included, per particle."""
    out = np.empty(particles.shape[0])
    for p in prange(particles.shape[0]):
        out[p] = summed_intensity(particles[p], offsets)
    return out


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def log_intensity_block(particles, idx, entries, out):
    r"""``out[p, u] = log V_{entries[u]}`` for particle ``p``: the log-intensities of arriving units.

    ``entries`` (int64, ``(n,)``) are the entries of ``n`` consecutive units;
    ``out`` is ``(P, n)`` float64.
    """
    q = np.empty((particles.shape[0], particles.shape[2]))
    for p in prange(particles.shape[0]):
        for u in range(entries.shape[0]):
            out[p, u] = math.log(entry_intensities(particles[p], idx, entries[u], q[p]))


@njit(cache=True, fastmath=FASTMATH)
def _log_ess(log_w):
    """Log of the effective sample size ``(sum w)^2 / sum w^2`` of unnormalised log-weights.

    :func:`~skevidence.evidence._stderr.effective_sample_size` compiled, for :func:`next_stop`'s scan.
    """
    peak = log_w.max()
    if peak == -np.inf:
        return -np.inf
    w = np.exp(log_w - peak)
    return 2.0 * math.log(w.sum()) - math.log(np.sum(w * w))


@njit(cache=True, fastmath=FASTMATH)
def next_stop(log_v, times, s, total_v, sum_log_v, min_log_ess, must_add):
    r"""How many of the next units to add before the effective sample size drops too far.

    Scans the units whose log-intensities are the columns of ``log_v``
    (``(P, n)``, from :func:`log_intensity_block`) and whose arrival times
    are ``times`` (``(n,)``, ascending, after ``s``). With the units already
    accepted in this step summed in ``sum_log_v`` (``(P,)``, updated in
    place), adding units ``0 .. k-1`` gives particle ``p`` the log
    incremental weight :math:`\Sigma_p + \sum_{u<k} \log V_{pu} -
    (\text{times}[k-1] - s) \sum_e V_{pe}`. Returns the largest ``k`` whose
    weights keep ``log ESS >= min_log_ess`` (at least 1 when ``must_add``:
    a step adds at least one unit). ``k == n``: every unit of the block
    passed, and the caller scans the next block.
    """
    n_particles, n = log_v.shape
    trial = np.empty(n_particles)
    accepted = 0
    for u in range(n):
        for p in range(n_particles):
            trial[p] = sum_log_v[p] + log_v[p, u] - (times[u] - s) * total_v[p]
        if _log_ess(trial) < min_log_ess and (u > 0 or not must_add):
            break
        accepted = u + 1
        for p in range(n_particles):
            sum_log_v[p] += log_v[p, u]
    return accepted


@njit(cache=True, fastmath=FASTMATH)
def _label_scores(F, alpha, beta, scores):
    r"""``scores[r, c]`` :math:`= \sum_a (\alpha_{ac} - 1)\log F_{ar} - \beta_{ac} F_{ar}`.

    :math:`\log q_\sigma(\theta) = \sum_r` ``scores[r, sigma[r]]`` plus a
    constant that no labelling changes.
    """
    R = F.shape[1]
    scores[:] = 0.0
    for a in range(F.shape[0]):
        for r in range(R):
            f = F[a, r]
            log_f = math.log(f)
            for c in range(R):
                scores[r, c] += (alpha[a, c] - 1.0) * log_f - beta[a, c] * f


@njit(cache=True, fastmath=FASTMATH)
def _labelling_logits(scores, perms, weight, out):
    """``out[k] = weight * sum_r scores[r, perms[k, r]]`` for every labelling; returns their log-sum-exp."""
    for k in range(perms.shape[0]):
        total = 0.0
        for r in range(perms.shape[1]):
            total += scores[r, perms[k, r]]
        out[k] = weight * total
    peak = out.max()
    return peak + math.log(np.sum(np.exp(out - peak)))


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def reference_weights(particles, offsets, prior_rates, alpha, beta, perms, exposure, new_exposure, out, slope):
    r"""The reference-and-prior part of a step's log-weight, and its slope in the exposure.

    With the labelling summed out, the target's non-likelihood part at
    exposure :math:`s` is :math:`p(\theta)^s \frac{1}{L}\sum_\sigma q_\sigma(\theta)^{1-s}` over the
    :math:`L` labellings ``perms`` (``(L, R)``, as :func:`move_particles`'s).
    ``out[p]`` is its log-change from ``exposure`` to ``new_exposure`` less
    the constants (:math:`\Delta s \sum \log\lambda` and
    :math:`-\Delta s \sum(\alpha\log\beta - \log\Gamma(\alpha))`, added once
    at the end); ``slope[p]`` is minus its derivative at ``exposure`` (below 1)
    (:math:`\lambda \sum F + E_{\sigma\mid\theta}[\log q_\sigma]` less the
    constant), which the search for the next stop uses.
    """
    n_particles, _, R = particles.shape
    n_modes = offsets.shape[0] - 1
    for p in prange(n_particles):
        F = particles[p]
        prior = 0.0
        for m in range(n_modes):
            prior += prior_rates[m] * np.sum(F[offsets[m] : offsets[m + 1]])
        scores = np.empty((R, R))
        _label_scores(F, alpha, beta, scores)
        logits = np.empty(perms.shape[0])
        lse_new = _labelling_logits(scores, perms, 1.0 - new_exposure, logits)
        lse = _labelling_logits(scores, perms, 1.0 - exposure, logits)
        mean = np.sum(np.exp(logits - lse) * logits)
        out[p] = lse_new - lse - (new_exposure - exposure) * prior
        slope[p] = prior + mean / (1.0 - exposure)


@njit(cache=True, fastmath=FASTMATH, parallel=True)
def move_particles(particles, offsets, idx, counts, prior_rates, alpha, beta, perms, exposure, n_sweeps, seeds):
    r"""``n_sweeps`` Gibbs sweeps of every particle at the target at exposure :math:`s`.

    The target is :math:`q_\sigma(\theta)^{1-s}\, p(\theta)^s
    \prod_e \mathcal{PO}(y_e(s);\ s V_e(\theta))`: the reference and the
    prior are products of Gammas, so their geometric mix is one too, and
    given the sources each factor entry is
    :math:`\mathrm{Gamma}(1 + (1-s)(\alpha - 1) + S,\ (1-s)\beta + s\lambda + s \prod_{m'}\textstyle\sum)`.

    Parameters
    ----------
    particles : float64 array of shape (P, D, R)
        Updated in place.
    offsets : int64 array of shape (n_modes + 1,)
    idx : int64 array of shape (n, n_modes)
        The entries with arrived units.
    counts : int64 array of shape (n,)
        Their arrived units, :math:`y_e(s)`.
    prior_rates : float64 array of shape (n_modes,)
    alpha, beta : float64 arrays of shape (D, R)
        The reference's shapes and rates (the prior's, 1 and :math:`\lambda`, for the path from the prior).
    perms : int64 array of shape (L, R)
        Every labelling of the components the reference is symmetrised over (all :math:`R!`, or the identity
        alone for a symmetric reference).
    exposure : float
        :math:`s`.
    n_sweeps : int
    seeds : int64 array of shape (P,)
        Seed of numba's ``np.random`` for each particle's move.

    Notes
    -----
    A sweep draws the labelling :math:`\sigma` from its conditional
    (:math:`\propto q_\sigma(\theta)^{1-s}`), then the S-step (the sources of
    the arrived units given the factors,
    :func:`~skevidence.cp.kernels.gibbs.sample_sources`), each mode's draw
    given :math:`\sigma` (modes in order,
    :func:`~skevidence.cp.kernels.gibbs.draw_rows`), and ``_RIDGE_STEPS``
    Metropolis steps along every component's scale ridge between consecutive
    modes (:func:`~skevidence.cp.kernels.gibbs.scale_moves`), which leave
    every intensity, so the likelihood at any exposure, unchanged. The
    labelling is redrawn at every sweep, not kept, so the particles' weights
    can sum it out (:func:`reference_weights`).
    """
    n_particles, n_rows, R = particles.shape
    n_modes = offsets.shape[0] - 1
    w = 1.0 - exposure
    row_rate = np.empty((n_rows, 1))
    for m in range(n_modes):
        row_rate[offsets[m] : offsets[m + 1]] = prior_rates[m]
    for p in prange(n_particles):
        np.random.seed(seeds[p])
        F = particles[p]
        stats = np.empty((n_rows, R), dtype=np.int64)
        scores = np.empty((R, R))
        logits = np.empty(perms.shape[0])
        for _ in range(n_sweeps):
            k = 0
            if perms.shape[0] > 1:
                # The labelling from its conditional given the factors, prop. to q_sigma^(1-s).
                _label_scores(F, alpha, beta, scores)
                lse = _labelling_logits(scores, perms, w, logits)
                k = min(np.searchsorted(np.cumsum(np.exp(logits - lse)), np.random.random()), perms.shape[0] - 1)
            shape = 1.0 + w * (alpha[:, perms[k]] - 1.0)
            rate = w * beta[:, perms[k]] + exposure * row_rate
            sample_sources(idx, counts, F, stats)
            for m in range(n_modes):
                other = likelihood_rates(F, offsets, m, exposure)
                draw_rows(F, offsets[m], offsets[m + 1], 0, stats, shape, rate, other)
            scale_moves(F, offsets, 0, shape, rate, _RIDGE_STEPS)
