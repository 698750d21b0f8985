r"""Chib's method for Poisson PARAFAC (Chib 1995; the reference method of seed 001).

The three-factor counterpart of :mod:`skevidence.evidence.chib`, with its
lessons: multi-block ordinates planned from the measured variance of each
block's log density, relabelling of the components against label switching,
and Metropolis moves along the scale ridges. Its helpers are reused by import.
"""

import math
import time
import warnings
from itertools import permutations

import numpy as np
from scipy import special

from .._progress import progress
from .._random import seed_sequence
from ..kernels.gibbs_parafac import STAGE_A, STAGE_B, STAGE_C, gibbs_parafac_sweeps, relabel_to
from ..models.poisson_parafac import check_count_tensor, check_prior_rates
from ._result import EvidenceResult
from .chib import (
    BLOCK_VARIANCE,
    MAX_EXACT_RELABEL_RANK,
    MIN_ORDINATE_ESS,
    MIN_RUN_SWEEPS,
    N_CHUNKS,
    _check_int,
    _check_rate,
    _discriminating_order,
    _log_ordinate,
    _next_block_size,
    _numba_seed,
)

__all__ = ["chib_log_evidence_parafac"]


def _nonzero_counts(X):
    """Validate integer counts (2-D as (I, J, 1)); the non-zeros as ``(coords, counts, shape)``."""
    X = check_count_tensor(X)
    if hasattr(X, "coords"):  # a 3-D coo_array, duplicates summed
        coords, values = tuple(np.asarray(c) for c in X.coords), np.asarray(X.data)
    else:
        coords = np.nonzero(X)
        values = X[coords]
    fractional = values != np.round(values)
    if np.any(fractional):
        raise ValueError(
            "Chib's method needs integer counts; X has non-integer entries "
            f"(e.g. {values[fractional][0]:g}, {int(fractional.sum())} of them). The Gibbs "
            "sampler's latent sources exist only for integer data; use STI (method='sti') instead."
        )
    keep = values > 0
    coords = tuple(np.ascontiguousarray(c[keep], dtype=np.int64) for c in coords)
    counts = np.ascontiguousarray(values[keep], dtype=np.int64)
    return coords, counts, tuple(int(n) for n in X.shape)


class _Sampler:
    """The validated data and priors, bound to the kernel; one call is one run."""

    def __init__(self, coords, counts, rates, n_components):
        self.coords, self.counts, self.rates = list(coords), counts, rates
        exact = n_components <= MAX_EXACT_RELABEL_RANK
        perms = list(permutations(range(n_components))) if exact else []
        self.perms = np.array(perms, dtype=np.int64).reshape(-1, n_components)
        self.n_sweeps = 0
        self.n_relabelled = 0

    def renumber(self, mode, order):
        """Renumber the indices of ``mode``: new index ``k`` is old index ``order[k]``."""
        position = np.empty_like(order)
        position[order] = np.arange(order.size)
        self.coords[mode] = np.ascontiguousarray(position[self.coords[mode]])

    def __call__(self, state, n_sweeps, seq, stage=STAGE_A, n_fixed=0, block_end=0, target=None,
                 reference=None):
        empty = np.zeros((0, 0))
        target = empty if target is None else target
        ref = (empty, empty, empty) if reference is None else reference
        out = gibbs_parafac_sweeps(
            *self.coords, self.counts, *state, *self.rates, int(n_sweeps), _numba_seed(seq), stage,
            int(n_fixed), int(block_end), target, *ref, self.perms,
        )  # fmt: skip
        self.n_sweeps += int(n_sweeps)
        self.n_relabelled += out[10]
        return out


def _relabel(state, point, perms):
    """Permute the components of ``state`` (copies) to match ``point``; ``(state, changed)``."""
    state = tuple(np.array(F, order="C") for F in state)
    changed = relabel_to(*state, *point, perms)
    return state, bool(changed)


def _main_run(sampler, state, n_burnin, n_kept, seq):
    """Burn-in, then the kept sweeps in chunks, relabelled every sweep to the running mean.

    Returns the final state, the posterior means (in the modal-scale gauge)
    and the kept sweeps' ``sum(x log V) - sum(V)``.
    """
    burnin_seq, kept_seq = seq.spawn(2)
    state = sampler(state, n_burnin, burnin_seq)[:3]
    bounds = np.linspace(0, n_kept, min(N_CHUNKS, n_kept) + 1).astype(np.int64)
    sums = [np.zeros_like(F) for F in state]
    reference = tuple(F.copy() for F in state)
    traces = []
    for c, chunk_seq in enumerate(kept_seq.spawn(bounds.size - 1)):
        n = bounds[c + 1] - bounds[c]
        chunk = sampler(state, n, chunk_seq, reference=reference)
        state = chunk[:3]
        for total, mean in zip(sums, chunk[7:10]):
            total += n * mean
        traces.append(chunk[3] - chunk[4])
        reference = tuple(total / bounds[c + 1] for total in sums)
    return state, tuple(total / n_kept for total in sums), np.concatenate(traces)


class _Budget:
    """Sweeps of the reduced runs left to share."""

    def __init__(self, n_sweeps):
        self.remaining = n_sweeps

    def take(self, n_runs):
        share = max(self.remaining // max(n_runs, 1), MIN_RUN_SWEEPS)
        self.remaining = max(self.remaining - share, 0)
        return share


def _blocked_ordinate(sampler, stage, state, point, record, budget, runs_after, block_variance, seq,
                      report):
    r""":math:`\log p(A^*|X)` (``stage=0``) or :math:`\log p(B^*|A^*,X)` (``stage=1``), by blocks.

    ``record`` is a pilot's log densities of every row (one line per sweep);
    each block grows from the previous run's record of the rows still free
    (see :func:`skevidence.evidence.chib._next_block_size`), and each block's
    run holds the earlier rows (and, at ``stage=1``, all of A) at the point.
    ``runs_after`` is the number of runs of the later stages, for the budget.
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
        state = [F.copy() for F in state]
        if stage == STAGE_A:
            state, switched = _relabel(state, point, sampler.perms)
            out["relabelled"] += switched
            state = list(state)
        else:
            state[STAGE_A] = point[STAGE_A].copy()
        state[stage][:first] = target[:first]
        # With no row fixed (the first block of A) the kernel relabels every sweep.
        run = sampler(state, share, seq.spawn(1)[0], stage, first, n_rows, target,
                      reference=point if stage == STAGE_A else None)
        state = run[:3]
        kept = run[6][max(MIN_RUN_SWEEPS // 2, share // 10) :]
        log_ord, var, ess = _log_ordinate(kept[:, :size].sum(axis=1))
        for key, value in (("blocks", (first, end)), ("sweeps", share), ("log_ordinate", log_ord),
                           ("variance", var), ("ess", ess)):
            out[key].append(value)
        report.update(
            size, f"{'AB'[stage]} rows {first}-{end - 1}: {share} sweeps, log p {log_ord:.4g}"
        )
        record = kept[:, size:]
        first = end
    out["state"] = state
    return {k: (np.array(v, dtype=float) if k in arrays else v) for k, v in out.items()}


def _c_ordinate(sampler, state, point, budget, seq):
    r""":math:`\log p(C^*|A^*,B^*,X)`, one component at a time, row by row.

    With A and B at the point the rows of C are independent, and each is the
    product of :math:`p(c^*_{kr} \mid c^*_{k,<r}, A^*, B^*, X)` over components
    :math:`r`: run :math:`r` holds components :math:`< r` at :math:`C^*` and
    records the one-dimensional conditional of component :math:`r` per row.
    Returns an array of shape ``(R * K, 3)``: ``_log_ordinate`` of every
    (component, row).
    """
    n_components = point[0].shape[1]
    out = []
    C = np.array(state[STAGE_C])
    for r in range(n_components):
        share = budget.take(n_components - r)
        C = C.copy()
        C[:, :r] = point[STAGE_C][:, :r]
        run = sampler((point[0], point[1], C), share, seq.spawn(1)[0], STAGE_C, 0, r,
                      point[STAGE_C])
        C = run[2]
        out.extend(_log_ordinate(col) for col in run[6][max(MIN_RUN_SWEEPS // 2, share // 10) :].T)
    return np.array(out)


def _log_joint(sampler, point, rates):
    """``sum(x log V) - sum(V)`` at the point (without ``lgamma(x + 1)``), and the log prior."""
    A, B, C = point
    ii, jj, kk = sampler.coords
    intensity = np.einsum("er,er,er->e", A[ii], B[jj], C[kk])
    total = np.sum(A.sum(axis=0) * B.sum(axis=0) * C.sum(axis=0))
    log_lik = sampler.counts @ np.log(intensity) - total
    log_prior = sum(F.size * np.log(lam) - lam * F.sum() for F, lam in zip(point, rates))
    return float(log_lik), float(log_prior)


def chib_log_evidence_parafac(
    X,
    n_components,
    *,
    prior_rates=1.0,
    n_samples=9000,
    n_burnin=7000,
    n_reduced=5000,
    block_variance=BLOCK_VARIANCE,
    random_state=None,
    verbose=0,
):
    r"""Estimate :math:`\log p(X)` of Poisson PARAFAC by Chib's method with a Gibbs sampler.

    The model is :math:`x_{ijk} \sim \mathcal{PO}(\sum_r a_{ir} b_{jr} c_{kr})`
    with exponential priors of rates :math:`\lambda_a, \lambda_b, \lambda_c`
    (seed 001, eq. 11). Chib's identity at a point :math:`(A^*, B^*, C^*)`:

    .. math::
        \log p(X) = \log p(X|A^*,B^*,C^*) + \log p(A^*) + \log p(B^*) + \log p(C^*)
                    - \log p(A^*|X) - \log p(B^*|A^*,X) - \log p(C^*|A^*,B^*,X).

    1. **Main run.** A Gibbs sampler over the latent sources and the factors
       (:mod:`skevidence.kernels.gibbs_parafac`, with Metropolis moves along
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
    n_samples : int, default=9000
        Sweeps of the main run, burn-in included.
    n_burnin : int, default=7000
        Burn-in sweeps of the main run; at least two sweeps must be kept.
    n_reduced : int, default=5000
        Sweeps of the pilots and reduced runs together.
    block_variance : float, default=1.5
        Largest variance (nats squared) of a block's log conditional density
        across pilot draws.
    random_state : int, RandomState, Generator or None, default=None
        Seed of every random stream; an int makes the result reproducible.
    verbose : int, default=0
        ``1``: a progress bar over the stages; ``2``: one line per stage.

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
    >>> from skevidence.evidence.chib_parafac import chib_log_evidence_parafac
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson(np.einsum("i,j,k->ijk", *(rng.exponential(size=n) for n in (6, 5, 4))))
    >>> result = chib_log_evidence_parafac(X, 1, n_samples=1500, n_burnin=500, n_reduced=3000,
    ...                                    random_state=0)
    >>> result.method, bool(result.std_error < 0.3)
    ('chib', True)
    """
    start = time.perf_counter()
    n_components = _check_int("n_components", n_components, 1)
    rates = check_prior_rates(prior_rates, "prior_rates")
    n_samples = _check_int("n_samples", n_samples, 2)
    n_burnin = _check_int("n_burnin", n_burnin, 0)
    n_reduced = _check_int("n_reduced", n_reduced, 1)
    block_variance = _check_rate("block_variance", block_variance)
    if n_burnin > n_samples - 2:
        raise ValueError(
            f"n_burnin ({n_burnin}) must be at most n_samples - 2 ({n_samples - 2}): "
            "at least two sweeps must be kept after burn-in."
        )
    coords, counts, shape = _nonzero_counts(X)
    # Modes by length: A the shortest (the costly blocked ordinate), C the longest.
    mode_order = np.argsort(shape, kind="stable")
    coords = [coords[m] for m in mode_order]
    # Row-major in the internal layout, so that the sweeps' draws do not depend on the input's.
    order = np.lexsort(coords[::-1])
    coords = [np.ascontiguousarray(c[order]) for c in coords]
    counts = np.ascontiguousarray(counts[order])
    shape = tuple(shape[m] for m in mode_order)
    rates = tuple(rates[m] for m in mode_order)
    log_factorial_x = float(special.gammaln(counts + 1.0).sum())

    init_seq, main_seq, reduced_seq = seed_sequence(random_state).spawn(3)
    init_rng = np.random.default_rng(init_seq)
    state = tuple(
        init_rng.exponential(1.0 / lam, size=(n, n_components)) for n, lam in zip(shape, rates)
    )
    total = counts.sum()
    if total > 0:  # one common factor so that sum(V) matches sum(X)
        scale = (total / np.sum(np.prod([F.sum(axis=0) for F in state], axis=0))) ** (1.0 / 3.0)
        state = tuple(F * scale for F in state)
    sampler = _Sampler(coords, counts, rates, n_components)

    if verbose and not getattr(gibbs_parafac_sweeps, "signatures", True):
        print("[Chib] compiling the Gibbs kernel (first call; cached afterwards)", flush=True)
    report = progress(shape[0] + shape[1] + 2, "Chib", verbose)
    try:
        state, point, log_lik_trace = _main_run(
            sampler, state, n_burnin, n_samples - n_burnin, main_seq
        )
        report.update(1, f"main run: {n_samples} sweeps")
        state, switched = _relabel(state, point, sampler.perms)
        # The blocks of A take the rows in an order that pins the labels early; the rate of
        # row i's conditional is lam_a + (sum_j b_jr)(sum_k c_kr), passed as a one-row "H".
        rate_rows = (point[1].sum(axis=0) * point[2].sum(axis=0))[None, :]
        row_order = _discriminating_order(point[0], rate_rows, rates[0])
        sampler.renumber(0, row_order)
        point = (np.ascontiguousarray(point[0][row_order]), point[1], point[2])
        state = (np.ascontiguousarray(state[0][row_order]), state[1], state[2])

        budget = _Budget(n_reduced)
        n_pilot = max(MIN_RUN_SWEEPS, n_reduced // 20)
        pilot_seq_a, pilot_seq_b, a_seq, b_seq, c_seq = reduced_seq.spawn(5)
        budget.remaining -= 2 * n_pilot
        pilot_a = sampler(state, n_pilot, pilot_seq_a, STAGE_A, 0, shape[0], point[0],
                          reference=point)
        pilot_b = sampler((point[0], pilot_a[1], pilot_a[2]), n_pilot, pilot_seq_b, STAGE_B, 0,
                          shape[1], point[1])
        b_runs = -(-shape[1] // _next_block_size(pilot_b[6], block_variance))
        a_runs = _blocked_ordinate(sampler, STAGE_A, pilot_a[:3], point, pilot_a[6], budget,
                                   b_runs + n_components, block_variance, a_seq, report)
        b_start = (point[0], pilot_b[1], pilot_b[2])
        b_runs = _blocked_ordinate(sampler, STAGE_B, b_start, point, pilot_b[6], budget,
                                   n_components, block_variance, b_seq, report)
        c_start = b_runs["state"]
        rows = _c_ordinate(sampler, c_start, point, budget, c_seq)
        report.update(1, "C runs")
    finally:
        report.close()
    n_reduced_used = sampler.n_sweeps - n_samples
    if n_reduced_used > n_reduced:
        warnings.warn(
            f"n_reduced={n_reduced} is too small for {len(a_runs['blocks'])} blocks of A rows, "
            f"{len(b_runs['blocks'])} of B rows and the C runs (at least {MIN_RUN_SWEEPS} sweeps "
            f"each); used {n_reduced_used}. Raise n_reduced.",
            UserWarning,
            stacklevel=2,
        )

    log_likelihood, log_prior = _log_joint(sampler, point, rates)
    log_likelihood -= log_factorial_x
    log_ord_a = a_runs["log_ordinate"].sum()
    log_ord_b = b_runs["log_ordinate"].sum()
    log_ord_c = rows[:, 0].sum()
    log_label = math.lgamma(n_components + 1)
    log_evidence = log_likelihood + log_prior - log_ord_a - log_ord_b - log_ord_c + log_label
    var_a, var_b, var_c = a_runs["variance"].sum(), b_runs["variance"].sum(), rows[:, 1].sum()
    std_error = math.sqrt(var_a + var_b + var_c)

    min_ess = min(a_runs["ess"].min(), b_runs["ess"].min(), rows[:, 2].min())
    if min_ess < MIN_ORDINATE_ESS:
        warnings.warn(
            f"Chib's ordinate averages rest on few draws (smallest effective sample size "
            f"{min_ess:.1f}); log Z = {log_evidence:.6g} ± {std_error:.3g} is then likely too "
            "high by more than its standard error. Raise n_reduced.",
            UserWarning,
            stacklevel=2,
        )
    # The point in the caller's layout: undo the row order of A, then the mode order.
    A_point = np.empty_like(point[0])
    A_point[row_order] = point[0]
    internal = (A_point, point[1], point[2])
    posterior_mean = [None] * 3
    for position, mode in enumerate(mode_order):
        posterior_mean[mode] = np.ascontiguousarray(internal[position])
    return EvidenceResult(
        log_evidence=log_evidence,
        std_error=std_error,
        posterior_mean=tuple(posterior_mean),
        method="chib",
        n_likelihood_evaluations=counts.size * sampler.n_sweeps,
        wall_time=time.perf_counter() - start,
        diagnostics={
            "n_components": n_components,
            "prior_rates": tuple(float(r) for r in check_prior_rates(prior_rates, "prior_rates")),
            "n_samples": n_samples,
            "n_burnin": n_burnin,
            "n_reduced": n_reduced,
            "n_sweeps": sampler.n_sweeps,
            "n_nonzero": int(counts.size),
            "mode_order": tuple(int(m) for m in mode_order),
            "log_likelihood": float(log_likelihood),
            "log_prior": float(log_prior),
            "log_ordinate_a": float(log_ord_a),
            "log_ordinate_a_std": math.sqrt(var_a),
            "log_ordinate_b": float(log_ord_b),
            "log_ordinate_b_std": math.sqrt(var_b),
            "log_ordinate_c": float(log_ord_c),
            "log_ordinate_c_std": math.sqrt(var_c),
            "log_label_permutations": log_label,
            "a_block_rows": np.array([end - first for first, end in a_runs["blocks"]], dtype=float),
            "a_block_log_ordinate": a_runs["log_ordinate"],
            "a_block_std": np.sqrt(a_runs["variance"]),
            "a_block_ess": a_runs["ess"],
            "a_block_sweeps": a_runs["sweeps"],
            "b_block_rows": np.array([end - first for first, end in b_runs["blocks"]], dtype=float),
            "b_block_log_ordinate": b_runs["log_ordinate"],
            "b_block_std": np.sqrt(b_runs["variance"]),
            "b_block_ess": b_runs["ess"],
            "b_block_sweeps": b_runs["sweeps"],
            "c_ess_min": float(rows[:, 2].min()),
            "relabelled_runs": int(switched + a_runs["relabelled"]),
            "relabelled_sweeps": int(sampler.n_relabelled),
            "log_likelihood_trace": log_lik_trace - log_factorial_x,
        },
    )
