r"""Chib's method (Chib 1995) for Poisson NMF and PARAFAC, one implementation for both.

NMF is the two-way and PARAFAC the three-way Poisson CP model, and both run
the Gibbs sampler over latent sources of :mod:`skevidence.kernels.gibbs`.
One driver (:func:`_chib`) orders the modes by length, runs the main chain to
find the point, estimates the ordinate of every mode but the last by blocks
of rows planned from the measured variance of each block's log density, and
that of the last mode, whose rows are conditionally independent given the
others, one component at a time. :func:`chib_log_evidence_nmf` describes the
method in full.
"""

import math
import time
import warnings
from dataclasses import dataclass, replace
from itertools import permutations

import numpy as np
from scipy import optimize, special

from .._progress import progress
from .._random import seed_sequence
from .._validation import check_int, check_positive_real
from .kernels.gibbs import gibbs_sweeps, relabel_to
from .model import check_prior_rates
from .data import count_entries
from ..evidence._result import EvidenceResult
from ..evidence._stderr import batch_means_variance

__all__ = ["chib_log_evidence_nmf", "chib_log_evidence_parafac"]

#: Default bound on the variance (nats squared) of one block's log conditional
#: ordinate across draws: the blocks of rows are grown up to it.
BLOCK_VARIANCE = 1.5

#: The main run's kept sweeps run in this many chunks; each updates the relabelling reference.
N_CHUNKS = 20

#: Up to this rank the per-sweep relabelling searches all R! permutations;
#: above it, it matches greedily.
MAX_EXACT_RELABEL_RANK = 6

#: Separation (nats) of a pair of components beyond which the row order of the
#: blocks stops trying to increase it (see ``_discriminating_order``).
LABEL_SEPARATION = 10.0

#: Fewest sweeps a reduced run gets, whatever ``n_reduced`` allows.
MIN_RUN_SWEEPS = 20

#: Below this effective sample size an averaged ordinate triggers a warning.
MIN_ORDINATE_ESS = 10.0


@dataclass(frozen=True)
class _Variant:
    """Details in which the NMF and PARAFAC methods, written apart, chose differently.

    None changes what is estimated; they are kept so that both methods
    reproduce their earlier results bitwise.
    """

    #: The factors' names, for messages.
    letters: str
    #: Relabel whole states by the Hungarian algorithm (else by the kernel's matching).
    hungarian: bool
    #: After renumbering the rows of the first mode, sort the non-zeros row-major again.
    resort: bool
    #: Every reduced run takes a new child of one seed sequence (else one sequence per stage).
    flat_streams: bool
    #: The last mode's runs share what is left equally and discard a tenth (else the
    #: budget's running share, discarding at least ``MIN_RUN_SWEEPS // 2``).
    equal_last_shares: bool


_NMF = _Variant("WH", hungarian=True, resort=True, flat_streams=True, equal_last_shares=True)
_PARAFAC = _Variant("ABC", hungarian=False, resort=False, flat_streams=False,
                    equal_last_shares=False)


def _check_runs(n_samples, n_burnin, n_reduced, block_variance):
    n_samples = check_int("n_samples", n_samples, 2)
    n_burnin = check_int("n_burnin", n_burnin, 0)
    n_reduced = check_int("n_reduced", n_reduced, 1)
    block_variance = check_positive_real("block_variance", block_variance)
    if n_burnin > n_samples - 2:
        raise ValueError(
            f"n_burnin ({n_burnin}) must be at most n_samples - 2 ({n_samples - 2}): "
            "at least two sweeps must be kept after burn-in."
        )
    return n_samples, n_burnin, n_reduced, block_variance


def _matrix_counts(X):
    """Validate a matrix of integer counts; its non-zeros as ``(coords, counts, shape)``."""
    idx, counts, shape = count_entries(
        X, n_modes=2, method="Chib's method",
        advice="the Gibbs sampler's latent sources exist only for integer data; use STI for "
        "magnitude spectrograms.",
    )
    return (idx[:, 0], idx[:, 1]), counts.astype(np.float64), shape


def _tensor_counts(X):
    """Validate a tensor of integer counts (2-D as (I, J, 1)); ``(coords, counts, shape)``."""
    idx, counts, shape = count_entries(
        X, n_modes=3, method="Chib's method", advice="use STI (method='sti') instead."
    )
    return tuple(idx.T), counts.astype(np.float64), shape


def _log_ordinate(log_densities):
    r"""``log mean exp`` of per-draw log densities, the delta-method variance of that log, the ESS.

    The variance of the mean of the rescaled densities :math:`e^{\ell_m - \max\ell}`
    comes from :func:`~skevidence.evidence._stderr.batch_means_variance`
    (batch means or the integrated autocorrelation time, whichever is
    larger); :math:`\mathrm{Var}(\log\hat p) \approx \mathrm{Var}(\hat p)/\hat p^2`.
    """
    top = log_densities.max()
    weights = np.exp(log_densities - top)
    mean = weights.mean()
    var_mean, _ = batch_means_variance(weights)
    ess = weights.sum() ** 2 / (weights @ weights)
    return top + np.log(mean), var_mean / mean**2, ess


def _initial_state(rng, shape, n_components, rates, total):
    """A prior draw, every factor rescaled by one factor so that sum(V) matches sum(X)."""
    state = [rng.exponential(1.0 / lam, size=(n, n_components)) for n, lam in zip(shape, rates)]
    if total > 0:
        sums = [F.sum(axis=0) for F in state]
        # Two modes: a dot product and a square root, as the NMF method always computed it.
        if len(state) == 2:
            scale = np.sqrt(total / (sums[0] @ sums[1]))
        else:
            scale = (total / np.sum(np.prod(sums, axis=0))) ** (1.0 / len(state))
        state = [F * scale for F in state]
    return tuple(state)


def _relabel(state, point):
    r"""Permute the components of ``state`` (copies) to match those of the point.

    The permutation minimises the summed squared distances of the rank-one
    terms (no dependence on the scale ambiguity), by the Hungarian algorithm.
    Returns ``(state, changed)``.
    """
    cross = np.prod([F.T @ P for F, P in zip(state, point)], axis=0)
    own = np.prod([(F**2).sum(axis=0) for F in state], axis=0)
    other = np.prod([(P**2).sum(axis=0) for P in point], axis=0)
    cost = own[:, None] + other[None, :] - 2.0 * cross
    state_index, point_index = optimize.linear_sum_assignment(cost)
    order = np.empty_like(state_index)
    order[point_index] = state_index
    changed = bool(np.any(order != np.arange(order.size)))
    return tuple(np.ascontiguousarray(F[:, order]) for F in state), changed


def _next_block_size(unit_log_density, max_variance):
    """How many leading rows to group: grow while the variance of their summed log
    densities (one column per row, one line per draw) stays below ``max_variance``."""
    total = unit_log_density[:, 0].copy()
    size = 1
    while size < unit_log_density.shape[1]:
        candidate = total + unit_log_density[:, size]
        if candidate.var() > max_variance:
            break
        total = candidate
        size += 1
    return size


def _discriminating_order(W_star, HT_star, lam_w, cap=LABEL_SEPARATION):
    r"""An order of the rows of the first factor that fixes the labels of the components early.

    Swapping components :math:`r, r'` in row :math:`i` costs, under the
    conditionals at the point (:math:`s_{ir} \approx W^*_{ir} b_r`,
    :math:`b_r = \lambda_w + \sum_j H^*_{rj}`; for PARAFAC ``HT_star`` is the
    one row :math:`(\sum_j b_{jr})(\sum_k c_{kr})`),
    :math:`\Delta_i(r, r') = b_r\,\mathrm{KL}(W^*_{ir}, W^*_{ir'})
    + b_{r'}\,\mathrm{KL}(W^*_{ir'}, W^*_{ir})`
    nats, with :math:`\mathrm{KL}(x, y) = x \log(x/y) - x + y`. Rows are taken
    greedily by their gain in :math:`\sum_{r<r'} \min(D_{rr'}, \text{cap})`, :math:`D`
    the separation accumulated by the rows already taken; once no row adds
    any, the rest follow in their natural order. The first blocks then tell
    every pair of components apart that some row can, and the chains of the
    later blocks cannot swap them.
    """
    n_rows, n_components = W_star.shape
    if n_components < 2:
        return np.arange(n_rows)
    rate = lam_w + HT_star.sum(axis=0)
    x = np.maximum(W_star, 1e-300)[:, :, None]
    y = np.maximum(W_star, 1e-300)[:, None, :]
    kl = rate[None, :, None] * (x * np.log(x / y) - x + y)
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


def _numba_seed(seq):
    return int(seq.generate_state(1, dtype=np.uint32)[0])


class _Budget:
    """Sweeps of the reduced runs left to share."""

    def __init__(self, n_sweeps):
        self.remaining = max(n_sweeps, 0)

    def take(self, n_runs):
        share = max(self.remaining // max(n_runs, 1), MIN_RUN_SWEEPS)
        self.remaining = max(self.remaining - share, 0)
        return share


class _Sampler:
    """The validated data and priors, bound to the kernel; one call is one run.

    Holds the non-zeros in the kernel's stacked layout; states travel as
    tuples of factors, one per mode, stacked and split at each call.
    """

    def __init__(self, coords, counts, rates, shape, n_components, variant):
        self.counts, self.variant = counts, variant
        self.rates = np.array(rates, dtype=np.float64)
        self.offsets = np.concatenate(([0], np.cumsum(shape))).astype(np.int64)
        self.coords = [np.asarray(c, dtype=np.int64) for c in coords]
        exact = n_components <= MAX_EXACT_RELABEL_RANK
        perms = list(permutations(range(n_components))) if exact else []
        self.perms = np.array(perms, dtype=np.int64).reshape(-1, n_components)
        self.n_sweeps = 0
        self.n_relabelled = 0
        self._stack_indices()

    def _stack_indices(self):
        self.idx = np.ascontiguousarray(
            np.stack([c + o for c, o in zip(self.coords, self.offsets)], axis=1)
        )

    def _split(self, F):
        return tuple(F[lo:hi] for lo, hi in zip(self.offsets[:-1], self.offsets[1:]))

    def renumber(self, order):
        """Renumber the rows of the first mode: new row ``k`` is old row ``order[k]``."""
        position = np.empty_like(order)
        position[order] = np.arange(order.size)
        self.coords[0] = position[self.coords[0]]
        if self.variant.resort:
            by_row = np.lexsort(self.coords[::-1])
            self.coords = [np.ascontiguousarray(c[by_row]) for c in self.coords]
            self.counts = np.ascontiguousarray(self.counts[by_row])
        self._stack_indices()

    def relabel(self, state, point):
        """Permute the components of ``state`` (copies) to match ``point``; ``(state, changed)``."""
        if self.variant.hungarian:
            return _relabel(state, point)
        F = np.vstack(state)
        changed = relabel_to(F, self.offsets, np.vstack(point), self.perms)
        return tuple(f.copy() for f in self._split(F)), bool(changed)

    def __call__(self, state, n_sweeps, seq, stage=0, n_fixed=0, block_end=0, target=None,
                 reference=None):
        """:func:`~skevidence.kernels.gibbs.gibbs_sweeps` from ``state``.

        Returns ``(state, sum_x_log_v, sum_v, log_prior, unit_log_density, mean, n_relabelled)``.
        """
        empty = np.zeros((0, 0))
        out = gibbs_sweeps(
            self.idx, self.counts, np.vstack(state), self.offsets, self.rates, int(n_sweeps),
            _numba_seed(seq), stage, int(n_fixed), int(block_end),
            empty if target is None else target,
            empty if reference is None else np.vstack(reference), self.perms,
        )  # fmt: skip
        self.n_sweeps += int(n_sweeps)
        self.n_relabelled += out[6]
        return (self._split(out[0]), *out[1:5], self._split(out[5]), out[6])


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
    reference = tuple(F.copy() for F in state)
    traces = []
    for c, chunk_seq in enumerate(kept_seq.spawn(bounds.size - 1)):
        n = bounds[c + 1] - bounds[c]
        chunk = sampler(state, n, chunk_seq, reference=reference)
        state = chunk[0]
        for total, mean in zip(sums, chunk[5]):
            total += n * mean
        traces.append(chunk[1] - chunk[2])
        reference = tuple(total / bounds[c + 1] for total in sums)
    return state, tuple(total / n_kept for total in sums), np.concatenate(traces)


def _blocked_ordinate(sampler, stage, state, point, record, budget, runs_after, block_variance,
                      seq, report):
    r""":math:`\log p(F^{(m)*} \mid F^{(<m)*}, X)` for mode ``m = stage``, by blocks of rows.

    ``record`` is a pilot's log densities of every row of the mode (one line
    per sweep); each block grows from the previous run's record of the rows
    still free (:func:`_next_block_size`), and each block's run holds the
    earlier modes and the earlier rows at the point. Runs of the first mode
    start from a state relabelled to the point, and with no row held the
    kernel relabels every sweep. ``runs_after`` is the number of runs of the
    later stages, for the budget.
    """
    target = point[stage]
    n_rows = target.shape[0]
    arrays = ("sweeps", "log_ordinate", "variance", "ess")
    out = {"blocks": [], "relabelled": 0, **{key: [] for key in arrays}}
    first = 0
    while first < n_rows:
        size = _next_block_size(record, block_variance)
        end = first + size
        share = budget.take(-(-(n_rows - first) // size) + runs_after)
        if stage == 0:
            state, switched = sampler.relabel(state, point)
            out["relabelled"] += switched
        state = [F.copy() for F in state]
        state[:stage] = [F.copy() for F in point[:stage]]
        state[stage][:first] = target[:first]
        run = sampler(state, share, seq.spawn(1)[0], stage, first, n_rows, target,
                      reference=point if stage == 0 else None)
        state = run[0]
        kept = run[4][max(MIN_RUN_SWEEPS // 2, share // 10) :]
        log_ord, var, ess = _log_ordinate(kept[:, :size].sum(axis=1))
        for key, value in (("blocks", (first, end)), ("sweeps", share), ("log_ordinate", log_ord),
                           ("variance", var), ("ess", ess)):
            out[key].append(value)
        letter = sampler.variant.letters[stage]
        report.update(size, f"{letter} rows {first}-{end - 1}: {share} sweeps, log p {log_ord:.4g}")
        record = kept[:, size:]
        first = end
    out["state"] = state
    return {k: (np.array(v, dtype=float) if k in arrays else v) for k, v in out.items()}


def _last_ordinate(sampler, state, point, budget, seq):
    r""":math:`\log p(F^{(N)*} \mid F^{(<N)*}, X)`, one component at a time, row by row.

    With the other modes at the point the rows of the last mode are
    independent, and each is the product of
    :math:`p(F^*_{kr} \mid F^*_{k,<r}, \cdot)` over components :math:`r`: run
    :math:`r` holds components :math:`< r` at the point and records the
    one-dimensional conditional of component :math:`r` per row. (One density
    per row, rather than a product of R, keeps the averages reliable where
    near-collinear factors leave a ridge, as over-fitted ranks do.) Returns an
    array of shape ``(R * K, 3)``: ``_log_ordinate`` of every (component, row).
    """
    n_components = point[0].shape[1]
    last = len(point) - 1
    equal = sampler.variant.equal_last_shares
    if equal:
        share = max(max(budget.remaining, MIN_RUN_SWEEPS) // n_components, MIN_RUN_SWEEPS)
    out = []
    F = state[last]
    for r in range(n_components):
        if not equal:
            share = budget.take(n_components - r)
        F = F.copy()
        F[:, :r] = point[last][:, :r]
        run = sampler((*point[:last], F), share, seq.spawn(1)[0], last, 0, r, point[last])
        F = run[0][last]
        burn = share // 10 if equal else max(MIN_RUN_SWEEPS // 2, share // 10)
        out.extend(_log_ordinate(col) for col in run[4][burn:].T)
    return np.array(out)


def _log_joint(coords, counts, point, rates):
    """``sum(x log V) - sum(V)`` at the point (without ``lgamma(x + 1)``), and the log prior."""
    subscripts = ",".join(["er"] * len(point)) + "->e"
    intensity = np.einsum(subscripts, *(F[c] for F, c in zip(point, coords)))
    sums = [F.sum(axis=0) for F in point]
    terms = [F.size * np.log(lam) - lam * F.sum() for F, lam in zip(point, rates)]
    if len(point) == 2:  # the NMF method's order of operations, kept for bitwise results
        total = sums[0] @ sums[1]
        log_prior = terms[0] + point[1].size * np.log(rates[1]) - rates[1] * point[1].sum()
    else:
        total = np.sum(np.prod(sums, axis=0))
        log_prior = sum(terms)
    return float(counts @ np.log(intensity) - total), float(log_prior)


def _chib(variant, coords, counts, shape, rates, n_components, n_samples, n_burnin, n_reduced,
          block_variance, random_state, verbose):
    """Chib's method for the CP model of ``len(shape)`` modes; the terms of the identity.

    The modes are first ordered by length (stable), the first the shortest
    (its blocks are the most expensive) and the last the longest (its
    ordinate is the cheapest), and the non-zeros sorted row-major in that
    order, so that the draws do not depend on the input's layout.
    """
    n_modes = len(shape)
    mode_order = np.argsort(shape, kind="stable")
    coords = [np.asarray(coords[m], dtype=np.int64) for m in mode_order]
    order = np.lexsort(coords[::-1])
    coords = [np.ascontiguousarray(c[order]) for c in coords]
    counts = np.ascontiguousarray(np.asarray(counts)[order], dtype=np.int64)
    shape = tuple(shape[m] for m in mode_order)
    rates = tuple(rates[m] for m in mode_order)
    log_factorial_x = float(special.gammaln(counts + 1.0).sum())

    init_seq, main_seq, reduced_seq = seed_sequence(random_state).spawn(3)
    state = _initial_state(
        np.random.default_rng(init_seq), shape, n_components, rates, counts.sum()
    )
    sampler = _Sampler(coords, counts, rates, shape, n_components, variant)
    n_blocked = n_modes - 1
    if variant.flat_streams:
        pilot_seqs = [reduced_seq.spawn(1)[0] for _ in range(n_blocked)]
        stage_seqs = [reduced_seq] * n_modes
    else:
        children = reduced_seq.spawn(n_blocked + n_modes)
        pilot_seqs, stage_seqs = children[:n_blocked], children[n_blocked:]

    if verbose and not getattr(gibbs_sweeps, "signatures", True):
        print("[Chib] compiling the Gibbs kernel (first call; cached afterwards)", flush=True)
    report = progress(sum(shape[:n_blocked]) + 2, "Chib", verbose)
    try:
        state, point, log_lik_trace = _main_run(
            sampler, state, n_burnin, n_samples - n_burnin, main_seq
        )
        report.update(1, f"main run: {n_samples} sweeps")
        state, relabelled = sampler.relabel(state, point)
        # The blocks of the first mode take its rows in an order that pins the labels early;
        # the rate of row i's conditional is lam + prod of the other modes' column sums.
        other_sums = np.prod([F.sum(axis=0) for F in point[1:]], axis=0)[None, :]
        row_order = _discriminating_order(point[0], other_sums, rates[0])
        sampler.renumber(row_order)
        point = (np.ascontiguousarray(point[0][row_order]), *point[1:])
        state = (np.ascontiguousarray(state[0][row_order]), *state[1:])

        n_pilot = max(MIN_RUN_SWEEPS, n_reduced // 20)
        budget = _Budget(n_reduced - n_blocked * n_pilot)
        pilots = []
        for m in range(n_blocked):
            start = (*point[:m], *state[m:])
            run = sampler(start, n_pilot, pilot_seqs[m], m, 0, shape[m], point[m],
                          reference=point if m == 0 else None)
            pilots.append(run)
            state = run[0]
        runs = [-(-shape[m] // _next_block_size(run[4], block_variance)) for m, run in
                enumerate(pilots)]
        stages = []
        for m in range(n_blocked):
            runs_after = sum(runs[m + 1 :]) + n_components
            stages.append(_blocked_ordinate(sampler, m, pilots[m][0], point, pilots[m][4], budget,
                                            runs_after, block_variance, stage_seqs[m], report))
            relabelled += stages[m]["relabelled"]
        state = stages[-1]["state"]
        if n_blocked == 1:  # its runs left the first mode free: labels may have switched
            state, switched = sampler.relabel(state, point)
            relabelled += switched
        last_sweeps = max(budget.remaining, MIN_RUN_SWEEPS)
        rows = _last_ordinate(sampler, state, point, budget, stage_seqs[-1])
        report.update(1, f"{variant.letters[-1]} runs: {last_sweeps} sweeps")
    finally:
        report.close()
    n_reduced_used = sampler.n_sweeps - n_samples
    if n_reduced_used > n_reduced:
        blocks = ", ".join(
            f"{len(s['blocks'])}{' blocks' if m == 0 else ''} of {variant.letters[m]} rows"
            for m, s in enumerate(stages)
        )
        warnings.warn(
            f"n_reduced={n_reduced} is too small for {blocks} and the {variant.letters[-1]} runs "
            f"(at least {MIN_RUN_SWEEPS} sweeps each); used {n_reduced_used}. Raise n_reduced.",
            UserWarning,
            stacklevel=3,
        )

    log_likelihood, log_prior = _log_joint(sampler.coords, sampler.counts, point, rates)
    log_likelihood -= log_factorial_x
    log_ords = [s["log_ordinate"].sum() for s in stages] + [rows[:, 0].sum()]
    variances = [s["variance"].sum() for s in stages] + [rows[:, 1].sum()]
    log_label = math.lgamma(n_components + 1)
    log_evidence = log_likelihood + log_prior
    for log_ord in log_ords:
        log_evidence -= log_ord
    log_evidence += log_label
    std_error = math.sqrt(sum(variances))
    min_ess = min(*(s["ess"].min() for s in stages), rows[:, 2].min())
    if min_ess < MIN_ORDINATE_ESS:
        warnings.warn(
            f"Chib's ordinate averages rest on few draws (smallest effective sample size "
            f"{min_ess:.1f}); log Z = {log_evidence:.6g} ± {std_error:.3g} is then likely too "
            "high by more than its standard error. Raise n_reduced.",
            UserWarning,
            stacklevel=3,
        )
    # The point in the caller's layout: undo the row order, then the mode order.
    first = np.empty_like(point[0])
    first[row_order] = point[0]
    internal = (first, *point[1:])
    posterior_mean = [None] * n_modes
    for position, mode in enumerate(mode_order):
        posterior_mean[mode] = np.ascontiguousarray(internal[position])
    return {
        "log_evidence": log_evidence,
        "std_error": std_error,
        "posterior_mean": posterior_mean,
        "n_likelihood_evaluations": counts.size * sampler.n_sweeps,
        "mode_order": tuple(int(m) for m in mode_order),
        "n_sweeps": sampler.n_sweeps,
        "n_nonzero": int(counts.size),
        "log_likelihood": float(log_likelihood),
        "log_prior": float(log_prior),
        "log_ordinates": [float(v) for v in log_ords],
        "ordinate_std": [math.sqrt(v) for v in variances],
        "log_label_permutations": log_label,
        "stages": stages,
        "last_sweeps": int(last_sweeps),
        "last_ess_min": float(rows[:, 2].min()),
        "relabelled_runs": int(relabelled),
        "relabelled_sweeps": int(sampler.n_relabelled),
        "log_likelihood_trace": log_lik_trace - log_factorial_x,
    }


def _ordinate_diagnostics(out, names, block_prefixes):
    """The ordinates per mode (``log_ordinate_<name>[_std]``) and the blocks per blocked mode."""
    diagnostics = {}
    for name, log_ord, std in zip(names, out["log_ordinates"], out["ordinate_std"]):
        diagnostics.update({f"log_ordinate_{name}": log_ord, f"log_ordinate_{name}_std": std})
    for prefix, stage in zip(block_prefixes, out["stages"]):
        diagnostics.update({
            f"{prefix}block_rows": np.array([end - first for first, end in stage["blocks"]],
                                            dtype=float),
            f"{prefix}block_sweeps": stage["sweeps"],
            f"{prefix}block_log_ordinate": stage["log_ordinate"],
            f"{prefix}block_std": np.sqrt(stage["variance"]),
            f"{prefix}block_ess": stage["ess"],
        })
    return diagnostics


def _evidence_result(out, start, n_components, runs, posterior_mean, diagnostics):
    """The ``EvidenceResult`` of a ``_chib`` run, with the diagnostics both methods share."""
    shared = ("n_sweeps", "n_nonzero", "log_likelihood", "log_prior", "log_label_permutations",
              "relabelled_runs", "relabelled_sweeps", "log_likelihood_trace")
    return EvidenceResult(
        log_evidence=out["log_evidence"],
        std_error=out["std_error"],
        posterior_mean=posterior_mean,
        method="chib",
        n_likelihood_evaluations=out["n_likelihood_evaluations"],
        wall_time=time.perf_counter() - start,
        diagnostics={
            "n_components": n_components,
            **dict(zip(("n_samples", "n_burnin", "n_reduced"), runs[:3])),
            **{key: out[key] for key in shared},
            **diagnostics,
        },
    )


def chib_log_evidence_nmf(X, n_components, *, prior_rate_w=1.0, prior_rate_h=1.0, n_samples=9000,
                          n_burnin=7000, n_reduced=5000, block_variance=BLOCK_VARIANCE,
                          random_state=None, verbose=0):
    r"""Estimate :math:`\log p(X)` of Poisson NMF by Chib's method with a Gibbs sampler.

    The model is :math:`X_{ij} \sim \mathcal{PO}(\sum_r W_{ir} H_{rj})` with
    :math:`W_{ir} \sim \mathcal{E}(\lambda_w)`, :math:`H_{rj} \sim \mathcal{E}(\lambda_h)`
    (Şimşekli et al. 2016, eq. 13). Chib's identity holds at any point :math:`(W^*, H^*)`:

    .. math::
        \log p(X) = \log p(X|W^*,H^*) + \log p(W^*) + \log p(H^*)
                    - \log p(W^*|X) - \log p(H^*|W^*,X).

    1. **Main run.** A Gibbs sampler over the latent sources :math:`S` and
       :math:`W, H` (:mod:`skevidence.kernels.gibbs`; with a Metropolis
       move along each component's scale ridge :math:`(c\,w_r, h_r/c)`
       whenever no row of W is fixed) runs ``n_samples`` sweeps from a
       rescaled prior draw; after the ``n_burnin`` first, the point is the
       posterior mean of the kept draws. (A central point, not
       a draw: in a Gaussian analogue with conditional-to-marginal excess
       variance ratio :math:`\rho` per coordinate, the log conditional
       density varies across draws with variance :math:`\rho^2/2` per
       coordinate at the mean but :math:`\rho(1+\rho) + \rho^2/2` at a
       typical draw.)
    2. **W ordinate, by blocks of rows** (Chib 1995, section 2.2):
       :math:`p(W^*|X) = \prod_b p(W^*_{G_b} \mid W^*_{G_1 \cup \dots \cup G_{b-1}}, X)`
       over consecutive row groups :math:`G_b`. Factor :math:`b` is
       Rao-Blackwellised over a reduced run that holds the earlier groups at
       :math:`W^*` and samples all else:
       :math:`\hat p_b = \frac1M \sum_m \prod_{i \in G_b, r}
       \mathcal{G}(W^*_{ir};\ 1 + \sum_j S^{(m)}_{ijr},\ \lambda_w + \sum_j H^{(m-1)}_{rj})`,
       the conditionals the sampler draws :math:`W_{G_b}` from. Each run
       also records the log densities of the rows still free, and the next
       group grows from them, row by row, while the variance of its summed
       log density stays below ``block_variance`` (a pilot run with nothing
       fixed plans the first group). One group for all of W (the textbook
       two-block form) fails beyond rank 1: the product of :math:`IR`
       conditional densities varies by many nats between draws, one draw
       carries the average, and the estimate is tens of nats off.
    3. **H ordinate.** With W held at :math:`W^*` the columns of H are
       conditionally independent, so :math:`p(H^*|W^*,X)` is a product over
       columns of per-column averages; each is split further over components,
       :math:`\prod_k p(H^*_{kj} \mid H^*_{<k,j}, W^*, X)`, one reduced run
       per component holding the earlier ones at :math:`H^*`, so that every
       average is over one-dimensional densities.
    4. **Budget.** ``n_reduced`` sweeps in all: the pilot gets a twentieth,
       and each run takes an equal share of what is left, counting the runs
       still to come as if the remaining blocks were as large as the
       current one (the R runs of H count as R). Each run discards a tenth
       of its sweeps as burn-in.

    When :math:`I > J` the method runs on :math:`X^\top` (rates swapped), so
    that the blocks are over the shorter factor.

    Parameters
    ----------
    X : array-like or scipy.sparse matrix/array of shape (I, J)
        Non-negative integer counts. The sweeps visit only the non-zeros.
    n_components : int
        The rank :math:`R`.
    prior_rate_w, prior_rate_h : float, default=1.0
        Rates :math:`\lambda_w, \lambda_h` of the exponential priors.
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
        ``posterior_mean`` is the point, ``(W, H)`` of shapes (I, R) and
        (R, J): the mean of the kept main-run draws, each component taken at
        its most probable scale along :math:`(c\,w_r, h_r / c)` first.
        ``diagnostics`` holds the terms of the identity (``log_likelihood``,
        ``log_prior``, ``log_ordinate_w``, ``log_ordinate_h``,
        ``log_label_permutations``), the blocks with their ordinates,
        standard errors, effective sample sizes and sweeps, and the main
        run's log-likelihood trace.

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
    with no row of W fixed (the main run, the pilot, the first block)
    relabel the components after every sweep to the running mean or the
    point (a move that leaves the symmetric posterior invariant; matched on
    the rank-one terms :math:`w_r h_r^\top`); every reduced run starts from
    a relabelled state; and the blocks take first the rows that tell the
    components of :math:`W^*` apart (their swap costs the most log density),
    so that the later runs, which cannot be relabelled, are pinned. When
    components are nearly exchangeable (redundant components of an
    over-fitted rank that no row tells apart) the modes overlap and the
    correction overestimates the evidence by up to :math:`\log k!` for
    :math:`k` such components. ``diagnostics["relabelled_sweeps"]`` and
    ``["relabelled_runs"]`` count the relabellings.

    **Standard error and bias.** Each average's Monte-Carlo error is the
    batch-means / autocorrelation-time variance of the mean of its rescaled
    conditional densities, put on the log scale by the delta method; the
    runs' and columns' variances add (separate runs; columns independent
    given :math:`W^*`). The likelihood and prior at the point are exact.
    The log of an average is biased low by about half its variance, so the
    estimate is biased high by about ``std_error**2 / 2``, and by more when
    an average rests on a few draws (``diagnostics["block_ess"]``,
    ``["h_ess_min"]``). Over-fitted ranks are the hard case: redundant
    components form ridges that the Gibbs sampler crosses slowly and along
    which the conditionals are far narrower than the posterior, so their
    estimates come out too high unless ``n_reduced`` is raised (on 40 x 30
    or 60 x 40 matrices of rank 3, rank 4 wants about 40000). A chain
    trapped in a minor mode (beyond the label symmetry) makes the estimate
    too low; compare ``random_state`` values when in doubt. Integer data
    only; for real-valued data use :func:`~skevidence.sti_log_evidence`.

    References
    ----------
    S. Chib (1995), Marginal likelihood from the Gibbs output, JASA 90(432).
    R. M. Neal (1999), Erroneous results in "Marginal likelihood from the Gibbs output".
    S. Frühwirth-Schnatter (2004), Estimating marginal likelihoods for mixture and Markov
    switching models using bridge sampling techniques, Econometrics Journal 7.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence.evidence.chib import chib_log_evidence_nmf
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(rng.exponential(size=(20, 1)) @ rng.exponential(size=(1, 15)))
    >>> result = chib_log_evidence_nmf(X, 1, n_samples=1500, n_burnin=500, n_reduced=1000,
    ...                                random_state=0)
    >>> result.method, bool(result.std_error < 0.2)
    ('chib', True)
    """
    start = time.perf_counter()
    n_components = check_int("n_components", n_components, 1)
    rates = (check_positive_real("prior_rate_w", prior_rate_w), check_positive_real("prior_rate_h", prior_rate_h))
    runs = _check_runs(n_samples, n_burnin, n_reduced, block_variance)
    out = _chib(_NMF, *_matrix_counts(X), rates, n_components, *runs, random_state, verbose)
    W, HT = out["posterior_mean"]
    return _evidence_result(out, start, n_components, runs, (W, np.ascontiguousarray(HT.T)), {
        "prior_rates": (float(prior_rate_w), float(prior_rate_h)),
        "transposed": out["mode_order"] == (1, 0),
        **_ordinate_diagnostics(out, "wh", ("",)),
        "h_sweeps": out["last_sweeps"],
        "h_ess_min": out["last_ess_min"],
    })


def chib_log_evidence_parafac(X, n_components, *, prior_rates=1.0, n_samples=9000, n_burnin=7000,
                              n_reduced=5000, block_variance=BLOCK_VARIANCE, random_state=None,
                              verbose=0):
    r"""Estimate :math:`\log p(X)` of Poisson PARAFAC by Chib's method with a Gibbs sampler.

    The model is :math:`x_{ijk} \sim \mathcal{PO}(\sum_r a_{ir} b_{jr} c_{kr})`
    with exponential priors of rates :math:`\lambda_a, \lambda_b, \lambda_c`
    (Nguyen et al. 2018, eq. 11). Chib's identity at a point :math:`(A^*, B^*, C^*)`:

    .. math::
        \log p(X) = \log p(X|A^*,B^*,C^*) + \log p(A^*) + \log p(B^*) + \log p(C^*)
                    - \log p(A^*|X) - \log p(B^*|A^*,X) - \log p(C^*|A^*,B^*,X).

    1. **Main run.** A Gibbs sampler over the latent sources and the factors
       (:mod:`skevidence.kernels.gibbs`, with Metropolis moves along
       each component's scale ridge) runs ``n_samples`` sweeps from a
       rescaled prior draw, relabelling the components to the running mean
       after burn-in; the point is the mean of the kept draws, each
       component taken at its most probable scale.
    2. **A ordinate, by blocks of rows**, as the W ordinate of
       :func:`~skevidence.evidence.chib.chib_log_evidence_nmf`: factor
       :math:`b` of :math:`\prod_b p(A^*_{G_b} \mid A^*_{G_{<b}}, X)` is the
       Rao-Blackwell average, over a reduced run that holds the earlier rows
       at the point, of the Gamma conditionals
       :math:`\prod_{i \in G_b, r}\mathcal{G}(a^*_{ir};\ 1 + \sum_{jk} S_{ijkr},\
       \lambda_a + (\sum_j b_{jr})(\sum_k c_{kr}))`; the groups grow while the
       variance of their summed log density stays below ``block_variance``.
       The rows go in an order that tells the components apart first.
    3. **B ordinate** likewise, from reduced runs that hold all of A at
       :math:`A^*` (and the earlier rows of B).
    4. **C ordinate.** With A and B at the point the rows of C are
       independent; each is split over components, one reduced run per
       component, as the H ordinate of the NMF method.
    5. **Budget.** ``n_reduced`` sweeps in all: the two pilots (A and B)
       get a twentieth each, and each run an equal share of what is left,
       counting the runs still to come. Each run discards a tenth of its
       sweeps as burn-in.

    The modes are first reordered by length, so that A is the shortest (its
    blocks are the most expensive) and C the longest (its ordinate is the
    cheapest); results are returned in the caller's order.

    Parameters
    ----------
    X : array-like or scipy.sparse.coo_array of shape (I, J, K), or (I, J)
        Non-negative integer counts (2-D taken as (I, J, 1); duplicate
        coordinates summed). The sweeps visit only the non-zeros.
    n_components : int
        The rank :math:`R`.
    prior_rates : float or sequence of 3 floats, default=1.0
        :math:`\lambda_a, \lambda_b, \lambda_c`.
    n_samples, n_burnin, n_reduced, block_variance, random_state, verbose
        As for :func:`chib_log_evidence_nmf` (same defaults); ``n_reduced``
        counts the sweeps of the pilots of A and B and of all reduced runs.

    Returns
    -------
    result : EvidenceResult
        ``method="chib"``; ``posterior_mean`` is the point ``(A, B, C)`` in
        the caller's mode order; ``diagnostics`` holds the terms of the
        identity, the blocks with their ordinates, standard errors, effective
        sample sizes and sweeps, and the main run's log-likelihood trace.

    Warns
    -----
    UserWarning
        When an averaged ordinate has an effective sample size below 10, or
        when ``n_reduced`` is too small for the runs planned.

    Notes
    -----
    Label switching, standard errors and bias are as for
    :func:`~skevidence.evidence.chib.chib_log_evidence_nmf`: :math:`\log R!` is
    added for the sampler kept in one labelling (an overestimate by up to
    :math:`\log k!` when :math:`k` redundant components are exchangeable);
    the standard error is the delta-method Monte-Carlo error of the
    averages, which are biased low on the log scale by about half their
    variance; over-fitted ranks need more reduced sweeps.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence.evidence.chib import chib_log_evidence_parafac
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(np.einsum("i,j,k->ijk", *(rng.exponential(size=n) for n in (6, 5, 4))))
    >>> result = chib_log_evidence_parafac(X, 1, n_samples=1500, n_burnin=500, n_reduced=3000,
    ...                                    random_state=0)
    >>> [F.shape for F in result.posterior_mean], bool(result.std_error < 0.3)
    ([(6, 1), (5, 1), (4, 1)], True)
    """
    start = time.perf_counter()
    n_components = check_int("n_components", n_components, 1)
    rates = check_prior_rates(prior_rates, 3, "prior_rates")
    runs = _check_runs(n_samples, n_burnin, n_reduced, block_variance)
    out = _chib(_PARAFAC, *_tensor_counts(X), rates, n_components, *runs, random_state, verbose)
    return _evidence_result(out, start, n_components, runs, tuple(out["posterior_mean"]), {
        "prior_rates": tuple(float(r) for r in rates),
        "mode_order": out["mode_order"],
        **_ordinate_diagnostics(out, "abc", ("a_", "b_")),
        "c_ess_min": out["last_ess_min"],
    })


def chib_log_evidence(X, n_components, prior_rates=1.0, *, n_samples=9000, n_burnin=7000, n_reduced=5000,
                      block_variance=BLOCK_VARIANCE, random_state=None, verbose=0):
    """Chib's method for a matrix or a three-way tensor (interim dispatch)."""
    rates = np.broadcast_to(np.asarray(prior_rates, dtype=float), (len(X.shape),))
    kw = dict(n_samples=n_samples, n_burnin=n_burnin, n_reduced=n_reduced, block_variance=block_variance,
              random_state=random_state, verbose=verbose)
    if len(X.shape) == 2:
        r = chib_log_evidence_nmf(X, n_components, prior_rate_w=rates[0], prior_rate_h=rates[1], **kw)
        W, H = r.posterior_mean
        return replace(r, posterior_mean=[W, H.T])
    return chib_log_evidence_parafac(X, n_components, prior_rates=tuple(rates), **kw)
