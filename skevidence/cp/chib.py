r"""Chib's method (Chib 1995) for Poisson CP models: NMF (two modes) and PARAFAC (three).

:func:`chib_log_evidence` runs the Gibbs sampler over latent sources of
:mod:`skevidence.cp.kernels.gibbs`: it orders the modes by length, runs the
main chain to find the point, estimates the ordinate of every mode but the
last by blocks of rows planned from the measured variance of each block's
log density, and that of the last mode, whose rows are conditionally
independent given the others, one component at a time.
"""

import math
import time
import warnings

import numpy as np
from scipy import special

from .._progress import progress
from .._random import seed_sequence
from .._validation import check_int, check_positive_real
from ..evidence._result import EvidenceResult
from ..evidence._stderr import batch_means_variance, effective_sample_size
from .data import count_entries
from .kernels.gibbs import gibbs_sweeps, likelihood_rates, relabel_to, summed_intensity
from .model import check_prior_rates

__all__ = ["chib_log_evidence"]

#: Default bound on the variance (nats squared) of one block's log conditional
#: ordinate across draws: the blocks of rows are grown up to it.
BLOCK_VARIANCE = 1.5

#: The main run's kept sweeps run in this many chunks; each updates the relabelling reference.
N_CHUNKS = 20

#: Separation (nats) of a pair of components beyond which the row order of the
#: blocks stops trying to increase it (see ``_discriminating_order``).
LABEL_SEPARATION = 10.0

#: Fewest sweeps a pilot or reduced run gets, whatever ``n_reduced`` allows; a
#: run discards a tenth of its sweeps, and at least half this many, as burn-in.
MIN_RUN_SWEEPS = 20

#: Below this effective sample size an averaged ordinate triggers a warning.
MIN_ORDINATE_ESS = 10.0


def _log_ordinate(log_densities):
    r"""``log mean exp`` of per-draw log densities, the delta-method variance of that log, the ESS.

    The variance of the mean of the rescaled densities :math:`e^{\ell_m - \max\ell}`
    comes from :func:`~skevidence.evidence._stderr.batch_means_variance`
    (batch means or the integrated autocorrelation time, whichever is
    larger); :math:`\mathrm{Var}(\log\hat p) \approx \mathrm{Var}(\hat p)/\hat p^2`.
    The effective sample size is that of the densities as weights.
    """
    top = log_densities.max()
    weights = np.exp(log_densities - top)
    mean = weights.mean()
    var_mean, _ = batch_means_variance(weights)
    return top + np.log(mean), var_mean / mean**2, effective_sample_size(log_densities)


def _initial_state(rng, shape, n_components, rates, total):
    """A prior draw, every factor rescaled by one factor so that sum(V) matches sum(X)."""
    state = [rng.exponential(1.0 / lam, size=(n, n_components)) for n, lam in zip(shape, rates)]
    if total > 0:
        scale = (total / np.sum(np.prod([F.sum(axis=0) for F in state], axis=0))) ** (1.0 / len(state))
        state = [F * scale for F in state]
    return tuple(state)


def _next_block_size(unit_log_density, max_variance):
    """How many leading rows to group: the rows before the first whose addition takes the variance of their
    summed log densities (one column per row, one line per draw) above ``max_variance``; at least one."""
    too_wide = np.append(np.cumsum(unit_log_density, axis=1).var(axis=0), np.inf) > max_variance
    return max(1, int(np.argmax(too_wide)))


def _discriminating_order(F_star, rate, cap=LABEL_SEPARATION):
    r"""An order of the rows of the first factor that fixes the labels of the components early.

    Swapping components :math:`r, r'` in row :math:`i` costs, under the
    conditionals at the point (:math:`s_{ir} \approx F^*_{ir} b_r`, ``rate``
    the conditionals' rates :math:`b_r`: the prior rate plus the product of
    the other modes' column sums),
    :math:`\Delta_i(r, r') = b_r\,\mathrm{KL}(F^*_{ir}, F^*_{ir'})
    + b_{r'}\,\mathrm{KL}(F^*_{ir'}, F^*_{ir})`
    nats, with :math:`\mathrm{KL}(x, y) = x \log(x/y) - x + y`. Rows are taken
    greedily by their gain in :math:`\sum_{r<r'} \min(D_{rr'}, \text{cap})`, :math:`D`
    the separation accumulated by the rows already taken; once no row adds
    any, the rest follow in their natural order. The first blocks then tell
    every pair of components apart that some row can, and the chains of the
    later blocks cannot swap them.
    """
    n_rows, n_components = F_star.shape
    x = np.maximum(F_star, 1e-300)[:, :, None]
    y = np.maximum(F_star, 1e-300)[:, None, :]
    kl = np.asarray(rate)[None, :, None] * (x * np.log(x / y) - x + y)
    delta = kl + kl.transpose(0, 2, 1)  # (rows, r, r')
    pairs = np.triu_indices(n_components, 1)
    delta = delta[:, pairs[0], pairs[1]]  # (rows, pairs)
    separation = np.zeros(delta.shape[1])
    order, left = [], list(range(n_rows))
    while left:
        capped = np.minimum(separation + delta[left], cap).sum(axis=1)
        gains = capped - np.minimum(separation, cap).sum()
        best = int(np.argmax(gains))
        if gains[best] <= 0:
            break
        separation += delta[left[best]]
        order.append(left.pop(best))
    return np.array(order + left, dtype=np.int64)


class _Budget:
    """Sweeps of the reduced runs left to share."""

    def __init__(self, n_sweeps):
        self.remaining = n_sweeps

    def take(self, n_runs):
        """One run's share (at least ``MIN_RUN_SWEEPS``) when ``n_runs`` runs, this one included, are to come."""
        share = max(self.remaining // n_runs, MIN_RUN_SWEEPS)
        self.remaining = max(self.remaining - share, 0)
        return share


def _kept(run_records, n_sweeps):
    """A run's records after its burn-in: a tenth of its sweeps, at least ``MIN_RUN_SWEEPS // 2``."""
    return run_records[max(MIN_RUN_SWEEPS // 2, n_sweeps // 10) :]


class _Sampler:
    """The validated data and priors, bound to the kernel; one call is one run.

    Holds the non-zeros in the kernel's stacked layout; states travel as
    tuples of factors, one per mode, stacked and split at each call.
    """

    def __init__(self, idx, counts, rates, shape, n_components):
        self.counts = counts
        self.rates = np.array(rates, dtype=np.float64)
        self.offsets = np.concatenate(([0], np.cumsum(shape))).astype(np.int64)
        self.idx = np.ascontiguousarray(idx + self.offsets[:-1])
        self.n_sweeps = 0
        self.n_relabelled = 0

    def renumber(self, order):
        """Renumber the rows of the first mode (the first in the stack): new row ``k`` is old row ``order[k]``."""
        position = np.empty_like(order)
        position[order] = np.arange(order.size)
        self.idx[:, 0] = position[self.idx[:, 0]]

    def relabel(self, state, point):
        """Permute the components of ``state`` to match ``point``; ``(state, changed)``.

        The kernel's matching (:func:`~skevidence.cp.kernels.gibbs.relabel_to`),
        the one the runs relabel with after every sweep.
        """
        F = np.vstack(state)
        changed = relabel_to(F, self.offsets, np.vstack(point))
        return np.split(F, self.offsets[1:-1]), bool(changed)

    def log_joint(self, point):
        """``sum(x log V) - sum(V)`` at ``point`` (without ``lgamma(x + 1)``), and the log prior."""
        F = np.vstack(point)
        intensity = np.prod(F[self.idx], axis=1).sum(axis=1)
        rates = np.repeat(self.rates, np.diff(self.offsets))[:, None]
        log_likelihood = self.counts @ np.log(intensity) - summed_intensity(F, self.offsets)
        return float(log_likelihood), float(np.sum(np.log(rates) - rates * F))

    def __call__(self, state, n_sweeps, seq, stage=0, n_held=0, record_end=0, target=None, reference=None):
        """:func:`~skevidence.cp.kernels.gibbs.gibbs_sweeps` from ``state``.

        Returns ``(state, log_likelihood, unit_log_density, mean)``.
        """
        empty = np.zeros((0, 0))
        F, log_likelihood, unit_log_density, mean, n_relabelled = gibbs_sweeps(
            self.idx, self.counts, np.vstack(state), self.offsets, self.rates, int(n_sweeps),
            int(seq.generate_state(1)[0]), stage, int(n_held), int(record_end),
            empty if target is None else target, empty if reference is None else np.vstack(reference),
        )  # fmt: skip
        self.n_sweeps += int(n_sweeps)
        self.n_relabelled += n_relabelled
        return np.split(F, self.offsets[1:-1]), log_likelihood, unit_log_density, np.split(mean, self.offsets[1:-1])


def _main_run(sampler, state, n_burnin, n_kept, seq):
    """Burn-in, then the kept sweeps in chunks, relabelled every sweep to the running mean.

    Relabelling keeps the mean over one labelling of the components. Returns
    the final state, the posterior means (in the modal-scale gauge of the
    kernel) and the kept sweeps' ``sum(x log V) - sum(V)``.
    """
    burnin_seq, kept_seq = seq.spawn(2)
    state = sampler(state, n_burnin, burnin_seq)[0]
    bounds = np.linspace(0, n_kept, min(N_CHUNKS, n_kept) + 1).astype(np.int64)
    sums = [np.zeros_like(F) for F in state]
    reference = state
    traces = []
    for c, chunk_seq in enumerate(kept_seq.spawn(bounds.size - 1)):
        n = bounds[c + 1] - bounds[c]
        state, trace, _, means = sampler(state, n, chunk_seq, reference=reference)
        for total, mean in zip(sums, means):
            total += n * mean
        traces.append(trace)
        reference = tuple(total / bounds[c + 1] for total in sums)
    return state, tuple(total / n_kept for total in sums), np.concatenate(traces)


def _blocked_ordinate(sampler, stage, state, point, record, budget, runs_after, block_variance, seq, report,
                      name):  # fmt: skip
    r""":math:`\log p(F^{(m)*} \mid F^{(<m)*}, X)` for the mode at position ``m = stage``, by blocks of rows.

    ``record`` is a pilot's log densities of every row of the mode (one line
    per sweep); each block grows from the previous run's record of the rows
    still free (:func:`_next_block_size`), and each block's run holds the
    earlier modes and the earlier rows at the point. Runs of the first mode
    start from a state relabelled to the point, and with no row held the
    kernel relabels every sweep. ``runs_after`` is the number of runs of the
    later stages, for the budget; ``name`` names the mode in messages.

    Returns the last run's state, the number of relabelled starts and one
    ``(rows, sweeps, log_ordinate, variance, ess)`` per block.
    """
    target = point[stage]
    n_rows = target.shape[0]
    blocks, relabelled = [], 0
    first = 0
    while first < n_rows:
        size = _next_block_size(record, block_variance)
        end = first + size
        share = budget.take(-(-(n_rows - first) // size) + runs_after)
        if stage == 0:
            state, switched = sampler.relabel(state, point)
            relabelled += switched
        state = (*point[:stage], np.vstack((target[:first], state[stage][first:])), *state[stage + 1 :])
        state, _, densities, _ = sampler(state, share, seq.spawn(1)[0], stage, first, n_rows, target,
                                         reference=point if stage == 0 else None)
        kept = _kept(densities, share)
        log_ord, var, ess = _log_ordinate(kept[:, :size].sum(axis=1))
        blocks.append((size, share, log_ord, var, ess))
        report.update(size, f"{name} rows {first}-{end - 1}: {share} sweeps, log p {log_ord:.4g}")
        record = kept[:, size:]
        first = end
    return state, relabelled, blocks


def _last_ordinate(sampler, state, point, budget, seq):
    r""":math:`\log p(F^{(N)*} \mid F^{(<N)*}, X)`, one component at a time, row by row.

    With the other modes at the point the rows of the last mode are
    independent, and each is the product of
    :math:`p(F^*_{kr} \mid F^*_{k,<r}, \cdot)` over components :math:`r`: run
    :math:`r` holds components :math:`< r` at the point and records the
    one-dimensional conditional of component :math:`r` per row. (One density
    per row, rather than a product of R, keeps the averages reliable where
    near-collinear factors leave a ridge, as over-fitted ranks do.) Returns,
    per component, ``(sweeps, rows)`` with ``rows`` of shape ``(K, 3)``:
    ``_log_ordinate`` of every row.
    """
    n_components = point[0].shape[1]
    last = len(point) - 1
    out = []
    for r in range(n_components):
        share = budget.take(n_components - r)
        F = np.hstack((point[last][:, :r], state[last][:, r:]))
        state, _, densities, _ = sampler((*point[:last], F), share, seq.spawn(1)[0], last, r, 0, point[last])
        out.append((share, np.array([_log_ordinate(column) for column in _kept(densities, share).T])))
    return out


def chib_log_evidence(X, n_components, prior_rates=1.0, *, n_samples=9000, n_burnin=7000, n_reduced=5000,
                      block_variance=BLOCK_VARIANCE, random_state=None, verbose=0):  # fmt: skip
    r"""Estimate :math:`\log p(X)` of Poisson NMF or PARAFAC by Chib's method with a Gibbs sampler.

    The model is the Poisson CP model of a count array with :math:`N = 2`
    (NMF, :math:`X \approx W H`, :math:`F^{(1)} = W`, :math:`F^{(2)} = H^\top`;
    Şimşekli et al. 2016, eq. 13) or :math:`N = 3` modes (PARAFAC,
    :math:`F^{(1,2,3)} = A, B, C`; Nguyen et al. 2018, eq. 11):

    .. math::
        x_{i_1 \dots i_N} \sim \mathcal{PO}\Big(\sum_r \prod_m F^{(m)}_{i_m r}\Big),
        \qquad F^{(m)}_{ir} \sim \mathcal{E}(\lambda_m).

    Chib's identity holds at any point :math:`F^* = (F^{(1)*}, \dots, F^{(N)*})`:

    .. math::
        \log p(X) = \log p(X|F^*) + \sum_m \log p(F^{(m)*})
                    - \sum_m \log p(F^{(m)*} \mid F^{(1)*}, \dots, F^{(m-1)*}, X).

    The modes are first ordered by length, the shortest first (its blocks are
    the most expensive) and the longest last (its ordinate is the cheapest);
    below, mode 1 is the shortest.

    1. **Main run.** A Gibbs sampler over the latent sources and the factors
       (:mod:`skevidence.cp.kernels.gibbs`; Cemgil 2009), with Metropolis
       moves along each component's scale ridge whenever no row of the
       first mode is held, runs ``n_samples`` sweeps from a rescaled prior
       draw, relabelling the components to the running mean after the
       ``n_burnin`` first. The point is the mean of the kept draws, each
       component taken at its most probable scale first. (A central point,
       not a draw: in a Gaussian analogue with conditional-to-marginal excess
       variance ratio :math:`\rho` per coordinate, the log conditional
       density varies across draws with variance :math:`\rho^2/2` per
       coordinate at the mean but :math:`\rho(1+\rho) + \rho^2/2` at a
       typical draw.)
    2. **Ordinates of every mode but the last, by blocks of rows** (Chib
       1995, section 2.2): :math:`p(F^{(m)*} \mid \cdot) = \prod_b
       p(F^{(m)*}_{G_b} \mid F^{(m)*}_{G_1 \cup \dots \cup G_{b-1}}, \cdot)`
       over consecutive row groups :math:`G_b`. Factor :math:`b` is
       Rao-Blackwellised over a reduced run that holds the earlier modes and
       groups at the point and samples all else:
       :math:`\hat p_b = \frac1M \sum_k \prod_{i \in G_b, r}
       \mathcal{G}(F^{(m)*}_{ir};\ 1 + S^{(k)}_{ir},\ \lambda_m + \prod_{m' \ne m}
       \sum_{i'} F^{(m', k)}_{i'r})`, the conditionals the sampler draws
       :math:`F^{(m)}_{G_b}` from (:math:`S_{ir}` the sources summed over the
       entries of row :math:`i`). Each run also records the log densities of
       the rows still free, and the next group grows from them, row by row,
       while the variance of its summed log density stays below
       ``block_variance`` (a pilot run per mode plans the first group). One
       group for a whole factor (the textbook form) fails beyond rank 1: the
       product of its conditional densities varies by many nats between
       draws, one draw carries the average, and the estimate is tens of nats
       off. The rows of mode 1 go in an order that tells the components
       apart first (see Notes).
    3. **Ordinate of the last mode.** With the other modes at the point its
       rows are conditionally independent, so its ordinate is a product over
       rows of per-row averages; each is split further over components,
       :math:`\prod_r p(F^{(N)*}_{kr} \mid F^{(N)*}_{k,<r}, \cdot)`, one
       reduced run per component holding the earlier ones at the point, so
       that every average is over one-dimensional densities.
    4. **Budget.** ``n_reduced`` sweeps in all: each pilot gets a twentieth,
       and each run an equal share of what is left, counting the runs still
       to come as if the remaining blocks of a mode were as large as its
       current one (the R runs of the last mode count as R). Each run
       discards a tenth of its sweeps as burn-in.

    Parameters
    ----------
    X : array-like or scipy.sparse matrix/array of shape (I, J) or (I, J, K)
        Non-negative integer counts (duplicate coordinates of a sparse input
        summed). A matrix is NMF's, a 3-D tensor PARAFAC's. The sweeps visit
        only the non-zeros.
    n_components : int
        The rank :math:`R`.
    prior_rates : float or sequence of float, default=1.0
        Rates :math:`\lambda_m` of the exponential priors: one for all modes
        or one per mode (NMF: :math:`(\lambda_w, \lambda_h)`).
    n_samples : int, default=9000
        Sweeps of the main run, burn-in included (the setting of Şimşekli
        et al. 2016).
    n_burnin : int, default=7000
        Burn-in sweeps of the main run; at least two sweeps must be kept.
    n_reduced : int, default=5000
        Sweeps of the pilots and reduced runs together (the "5000 more samples"
        of Şimşekli et al. 2016). Over-fitted ranks need more (see Notes).
    block_variance : float, default=1.5
        Largest variance (nats squared) of a block's log conditional density
        across pilot draws. Smaller blocks average more reliably but are
        more numerous; for log-normal weights the cost per unit of
        variance, :math:`(e^v - 1)/v^2`, is smallest near :math:`v = 1.6`.
    random_state : int, RandomState, Generator or None, default=None
        Seed of every random stream; an int makes the result reproducible.
    verbose : int, default=0
        ``1``: a progress bar over the stages; ``2``: one line per stage.

    Returns
    -------
    result : EvidenceResult
        ``method="chib"``. ``n_likelihood_evaluations`` counts the non-zero
        entries visited by all sweeps (the zeros enter in closed form).
        ``posterior_mean`` is the point, the list of factors mode by mode,
        each of shape ``(n_m, R)`` (for a matrix: :math:`W` and
        :math:`H^\top`). ``diagnostics`` holds, with modes named by their
        index in ``X``:

        - the terms of the identity: ``log_likelihood``, ``log_prior``,
          ``log_ordinates`` and ``log_ordinate_std`` (one per mode),
          ``log_label_permutations``;
        - ``mode_order``: the modes in the order their ordinates are taken
          (the first one blocked first, the last one by components);
        - one entry per block of rows: ``block_mode``, ``block_rows``,
          ``block_sweeps``, ``block_log_ordinate``, ``block_std``,
          ``block_ess``;
        - one entry per component run of the last mode:
          ``component_sweeps``, ``component_log_ordinate``,
          ``component_std``, ``component_ess_min`` (over its rows);
        - ``min_ess``, the smallest effective sample size of any average;
          ``relabelled_runs`` and ``relabelled_sweeps``; ``n_sweeps``,
          ``n_nonzero``, the settings, and the main run's
          ``log_likelihood_trace``.

    Warns
    -----
    UserWarning
        When an averaged ordinate has an effective sample size below 10
        (its log is then biased low, the evidence high, beyond what
        ``std_error`` says), or when ``n_reduced`` is too small for the runs
        planned.

    Notes
    -----
    **Label switching.** The posterior is invariant under the :math:`R!`
    permutations of the components; the sampler is kept in the mode of the
    point and estimates that mode's ordinate, :math:`R!` times the symmetric
    posterior's when the modes are separated, so :math:`\log R!` is added
    (Neal 1999; Frühwirth-Schnatter 2004). Three things keep it there: runs
    with no row of the first mode fixed (the main run, its pilot, its first
    block) relabel the components after every sweep to the running mean or
    the point (a move that leaves the symmetric posterior invariant; matched
    on the rank-one terms :math:`\circ_m f^{(m)}_r`); every reduced run
    starts from a relabelled state; and the blocks take first the rows that
    tell the components of :math:`F^{(1)*}` apart (their swap costs the most
    log density), so that the later runs, which cannot be relabelled, are
    pinned. When components are nearly exchangeable (redundant components
    of an over-fitted rank that no row tells apart) the modes overlap and the
    correction overestimates the evidence by up to :math:`\log k!` for
    :math:`k` such components.

    **Standard error and bias.** Each average's Monte-Carlo error is the
    batch-means / autocorrelation-time variance of the mean of its rescaled
    conditional densities, put on the log scale by the delta method; the
    runs' and rows' variances add (separate runs; rows of the last mode
    independent given the others). The likelihood and prior at the point are
    exact. The log of an average is biased low by about half its variance, so
    the estimate is biased high by about ``std_error**2 / 2``, and by more
    when an average rests on a few draws (``diagnostics["min_ess"]``).
    Over-fitted ranks are the hard case: redundant components form ridges
    that the Gibbs sampler crosses slowly and along which the conditionals
    are far narrower than the posterior, so their estimates come out too high
    unless ``n_reduced`` is raised (on 40 x 30 or 60 x 40 matrices of rank 3,
    rank 4 wants about 40000). A chain trapped in a minor mode (beyond the
    label symmetry) makes the estimate too low; compare ``random_state``
    values when in doubt. Integer data only; for real-valued data use STI.

    References
    ----------
    S. Chib (1995), Marginal likelihood from the Gibbs output, JASA 90(432).
    R. M. Neal (1999), Erroneous results in "Marginal likelihood from the Gibbs output".
    S. Frühwirth-Schnatter (2004), Estimating marginal likelihoods for mixture and Markov
    switching models using bridge sampling techniques, Econometrics Journal 7.
    A. T. Cemgil (2009), Bayesian inference for nonnegative matrix factorisation models,
    Computational Intelligence and Neuroscience.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence.cp import chib_log_evidence
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(rng.exponential(size=(20, 1)) @ rng.exponential(size=(1, 15)))
    >>> result = chib_log_evidence(X, 1, n_samples=1500, n_burnin=500, n_reduced=1000, random_state=0)
    >>> [F.shape for F in result.posterior_mean], bool(result.std_error < 0.2)
    ([(20, 1), (15, 1)], True)
    """
    start = time.perf_counter()
    idx, counts, shape = count_entries(
        X, method="Chib's method",
        advice="the Gibbs sampler's latent sources exist only for integer counts; use STI (method='sti') instead.",
    )
    if len(shape) > 3:
        raise ValueError(f"Chib's method takes a matrix or a 3-D tensor of counts, got an input of shape {shape}.")
    n_components = check_int("n_components", n_components, 1)
    rates = check_prior_rates(prior_rates, len(shape))
    n_samples = check_int("n_samples", n_samples, 2)
    n_burnin = check_int("n_burnin", n_burnin, 0)
    n_reduced = check_int("n_reduced", n_reduced, 1)
    block_variance = check_positive_real("block_variance", block_variance)
    if n_burnin > n_samples - 2:
        raise ValueError(f"n_burnin ({n_burnin}) must be at most n_samples - 2 ({n_samples - 2}): "
                         "at least two sweeps must be kept after burn-in.")
    # The modes ordered by length (stable), the first the shortest (its blocks are the most expensive) and the
    # last the longest (its ordinate is the cheapest), and the non-zeros sorted row-major in that order, so that
    # the draws do not depend on the input's layout. Modes are named by their index in the caller's order.
    n_modes = len(shape)
    n_blocked = n_modes - 1
    mode_order = np.argsort(shape, kind="stable")
    idx = idx[:, mode_order]
    order = np.lexsort(idx.T[::-1])
    idx, counts = idx[order], counts[order]
    shape = tuple(shape[m] for m in mode_order)
    internal_rates = tuple(rates[m] for m in mode_order)
    names = [f"mode {m}" for m in mode_order]
    log_factorial_x = float(special.gammaln(counts + 1.0).sum())

    # One stream per stage, each run a child of its stage's: a stage's draws do not depend on
    # how many runs the stages before it made.
    init_seq, main_seq, reduced_seq = seed_sequence(random_state).spawn(3)
    children = reduced_seq.spawn(n_blocked + n_modes)
    pilot_seqs, stage_seqs = children[:n_blocked], children[n_blocked:]
    state = _initial_state(np.random.default_rng(init_seq), shape, n_components, internal_rates, counts.sum())
    sampler = _Sampler(idx, counts, internal_rates, shape, n_components)

    if verbose and not getattr(gibbs_sweeps, "signatures", True):
        print("[Chib] compiling the Gibbs kernel (first call; cached afterwards)", flush=True)
    report = progress(sum(shape[:n_blocked]) + 2, "Chib", verbose)
    try:
        state, point, log_lik_trace = _main_run(sampler, state, n_burnin, n_samples - n_burnin, main_seq)
        report.update(1, f"main run: {n_samples} sweeps")
        state, relabelled = sampler.relabel(state, point)
        # The blocks of the first mode take its rows in an order that pins the labels early;
        # the rate of row i's conditional is lam + the product of the other modes' column sums.
        rate = internal_rates[0] + likelihood_rates(np.vstack(point), sampler.offsets, 0, 1.0)
        row_order = _discriminating_order(point[0], rate)
        sampler.renumber(row_order)
        point = (np.ascontiguousarray(point[0][row_order]), *point[1:])
        state = (np.ascontiguousarray(state[0][row_order]), *state[1:])

        n_pilot = max(MIN_RUN_SWEEPS, n_reduced // 20)
        budget = _Budget(n_reduced - n_blocked * n_pilot)
        pilots = []
        for m in range(n_blocked):
            pilots.append(sampler((*point[:m], *state[m:]), n_pilot, pilot_seqs[m], m, 0, shape[m], point[m],
                                  reference=point if m == 0 else None))
            state = pilots[-1][0]
        runs = [-(-shape[m] // _next_block_size(run[2], block_variance)) for m, run in enumerate(pilots)]
        blocks = []
        for m in range(n_blocked):
            state, switched, stage_blocks = _blocked_ordinate(
                sampler, m, pilots[m][0], point, pilots[m][2], budget, sum(runs[m + 1 :]) + n_components,
                block_variance, stage_seqs[m], report, names[m],
            )  # fmt: skip
            relabelled += switched
            blocks.append(stage_blocks)
        # The last runs start from a state in the point's labelling.
        state, switched = sampler.relabel(state, point)
        relabelled += switched
        components = _last_ordinate(sampler, state, point, budget, stage_seqs[-1])
        report.update(1, f"{names[-1]}: {n_components} runs of {sum(c[0] for c in components)} sweeps")
    finally:
        report.close()
    n_reduced_used = sampler.n_sweeps - n_samples
    if n_reduced_used > n_reduced:
        planned = ", ".join(f"{len(b)} blocks of {names[m]}" for m, b in enumerate(blocks))
        warnings.warn(
            f"n_reduced={n_reduced} is too small for {planned} and the {n_components} runs of {names[-1]} "
            f"(at least {MIN_RUN_SWEEPS} sweeps each); used {n_reduced_used}. Raise n_reduced.",
            UserWarning, stacklevel=2,
        )

    log_likelihood, log_prior = sampler.log_joint(point)
    log_likelihood -= log_factorial_x
    block_table = np.array([b for stage_blocks in blocks for b in stage_blocks])  # (blocks, 5)
    component_rows = np.stack([rows for _, rows in components])  # (R, K, 3)
    log_ords = [sum(b[2] for b in stage_blocks) for stage_blocks in blocks] + [component_rows[:, :, 0].sum()]
    variances = [sum(b[3] for b in stage_blocks) for stage_blocks in blocks] + [component_rows[:, :, 1].sum()]
    log_label = math.lgamma(n_components + 1)
    log_evidence = log_likelihood + log_prior - sum(log_ords) + log_label
    std_error = math.sqrt(sum(variances))
    min_ess = float(min(block_table[:, 4].min(), component_rows[:, :, 2].min()))
    if min_ess < MIN_ORDINATE_ESS:
        warnings.warn(
            f"Chib's ordinate averages rest on few draws (smallest effective sample size "
            f"{min_ess:.1f}); log Z = {log_evidence:.6g} ± {std_error:.3g} is then likely too "
            "high by more than its standard error. Raise n_reduced.",
            UserWarning, stacklevel=2,
        )
    # The point in the caller's layout: undo the row order, then the mode order.
    internal = (point[0][np.argsort(row_order)], *point[1:])
    position = np.argsort(mode_order)
    return EvidenceResult(
        log_evidence=log_evidence, std_error=std_error, method="chib",
        posterior_mean=[np.ascontiguousarray(internal[p]) for p in position],
        n_likelihood_evaluations=counts.size * sampler.n_sweeps, wall_time=time.perf_counter() - start,
        diagnostics={
            "n_components": n_components, "prior_rates": rates, "n_samples": n_samples, "n_burnin": n_burnin,
            "n_reduced": n_reduced, "block_variance": block_variance, "mode_order": tuple(int(m) for m in mode_order),
            "n_sweeps": sampler.n_sweeps, "n_nonzero": int(counts.size),
            "log_likelihood": float(log_likelihood), "log_prior": float(log_prior),
            "log_ordinates": np.array(log_ords)[position], "log_ordinate_std": np.sqrt(variances)[position],
            "log_label_permutations": log_label,
            "block_mode": np.array([mode_order[m] for m, b in enumerate(blocks) for _ in b]),
            "block_rows": block_table[:, 0], "block_sweeps": block_table[:, 1],
            "block_log_ordinate": block_table[:, 2], "block_std": np.sqrt(block_table[:, 3]),
            "block_ess": block_table[:, 4],
            "component_sweeps": np.array([share for share, _ in components]),
            "component_log_ordinate": component_rows[:, :, 0].sum(axis=1),
            "component_std": np.sqrt(component_rows[:, :, 1].sum(axis=1)),
            "component_ess_min": component_rows[:, :, 2].min(axis=1), "min_ess": min_ess,
            "relabelled_runs": int(relabelled), "relabelled_sweeps": int(sampler.n_relabelled),
            "log_likelihood_trace": log_lik_trace - log_factorial_x,
        }
    )
