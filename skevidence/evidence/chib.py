r"""Chib's method for Poisson NMF (Chib 1995; the reference method of seeds 000 and 001).

Seed 000 (section 4.1.2) estimates the evidence with the two-block form
:math:`p(W^*|X)\,p(H^*|W^*,X)`. Its first ordinate, one Rao-Blackwell
average of a product of :math:`IR` Gamma densities, has an effective sample
size near 1 beyond rank 1 (its estimates are then off by tens of nats), so
this module uses Chib's multi-block form over groups of W rows, planned from
the measured variance of each group's log density, and exploits the
conditional independence of the columns of H given W for the last ordinate.
"""

import math
import numbers
import time
import warnings
from itertools import permutations

import numpy as np
from scipy import optimize, sparse, special

from .._progress import progress
from .._random import seed_sequence
from ..kernels.gibbs_nmf import gibbs_nmf_sweeps
from ._result import EvidenceResult
from ._stderr import batch_means_variance

__all__ = ["chib_log_evidence_nmf"]

#: Default bound on the variance (nats squared) of one block's log conditional
#: ordinate across draws: the blocks of W rows are grown up to it.
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


def _check_int(name, value, minimum):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def _check_rate(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}.")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}.")
    return float(value)


def _nonzero_counts(X):
    """Validate integer counts; the non-zeros as ``(rows, cols, counts, shape)``, row-major."""
    if sparse.issparse(X):
        if len(X.shape) != 2:
            raise ValueError(f"X must be 2-D, got a sparse input of shape {X.shape}.")
        coo = sparse.coo_matrix(X)
        coo.sum_duplicates()
        values, rows, cols = coo.data, coo.row, coo.col
        shape = coo.shape
    else:
        X = np.asarray(X)
        if X.dtype == object or not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
            raise ValueError(f"X must be numeric counts, got dtype {X.dtype}.")
        if np.iscomplexobj(X):
            raise ValueError("X must be real counts, got complex values.")
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (I x J counts), got an array of shape {X.shape}.")
        rows, cols = np.nonzero(X)
        values = X[rows, cols]
        shape = X.shape
    if shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"X is empty (shape {shape}): the evidence needs at least one entry.")
    values = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError("X contains NaN or infinity; Chib's method needs finite integer counts.")
    if np.any(values < 0):
        raise ValueError(
            f"X has negative entries (min {values.min():g}); Poisson counts are non-negative."
        )
    fractional = values != np.round(values)
    if np.any(fractional):
        raise ValueError(
            "Chib's method needs integer counts; X has non-integer entries "
            f"(e.g. {values[fractional][0]:g}, {int(fractional.sum())} of them). The Gibbs "
            "sampler's latent sources exist only for integer data; use STI for magnitude "
            "spectrograms."
        )
    keep = values > 0
    order = np.lexsort((cols[keep], rows[keep]))
    return (
        np.ascontiguousarray(rows[keep][order], dtype=np.int64),
        np.ascontiguousarray(cols[keep][order], dtype=np.int64),
        np.ascontiguousarray(values[keep][order], dtype=np.int64),
        (int(shape[0]), int(shape[1])),
    )


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


def _initial_state(rng, shape, n_components, lam_w, lam_h, total):
    """A prior draw, both factors rescaled by one factor so that sum(W H) matches sum(X)."""
    W = rng.exponential(1.0 / lam_w, size=(shape[0], n_components))
    HT = rng.exponential(1.0 / lam_h, size=(shape[1], n_components))
    if total > 0:
        scale = np.sqrt(total / (W.sum(axis=0) @ HT.sum(axis=0)))
        W *= scale
        HT *= scale
    return W, HT


def _relabel(W, HT, W_star, HT_star):
    r"""Permute the components of ``(W, HT)`` to match those of the point.

    The permutation minimises
    :math:`\sum_r \|w_r h_r^\top - w^*_{\sigma(r)} h^{*\top}_{\sigma(r)}\|_F^2`
    (Hungarian algorithm); rank-one terms do not depend on the scale
    ambiguity :math:`(w_r c, h_r / c)`. Returns ``W, HT, changed``.
    """
    cross = (W.T @ W_star) * (HT.T @ HT_star)
    own = (W**2).sum(axis=0) * (HT**2).sum(axis=0)
    other = (W_star**2).sum(axis=0) * (HT_star**2).sum(axis=0)
    cost = own[:, None] + other[None, :] - 2.0 * cross
    state_index, point_index = optimize.linear_sum_assignment(cost)
    order = np.empty_like(state_index)
    order[point_index] = state_index
    changed = bool(np.any(order != np.arange(order.size)))
    return np.ascontiguousarray(W[:, order]), np.ascontiguousarray(HT[:, order]), changed


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


def _log_joint(rows, cols, counts, W, HT, lam_w, lam_h):
    """``sum(x log V) - sum(V)`` over the data (without ``lgamma(x + 1)``), and the log prior."""
    intensity = np.einsum("kr,kr->k", W[rows], HT[cols])
    log_lik = counts @ np.log(intensity) - W.sum(axis=0) @ HT.sum(axis=0)
    n_params_w, n_params_h = W.size, HT.size
    log_prior = (
        n_params_w * np.log(lam_w) - lam_w * W.sum() + n_params_h * np.log(lam_h) - lam_h * HT.sum()
    )
    return float(log_lik), float(log_prior)


def _discriminating_order(W_star, HT_star, lam_w, cap=LABEL_SEPARATION):
    r"""An order of the rows of W that fixes the labels of the components early.

    Swapping components :math:`r, r'` in row :math:`i` costs, under the
    conditionals at the point (:math:`s_{ir} \approx W^*_{ir} b_r`,
    :math:`b_r = \lambda_w + \sum_j H^*_{rj}`),
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


class _Sampler:
    """The validated data and priors, bound to the kernel; one call is one run."""

    def __init__(self, rows, cols, counts, lam_w, lam_h, n_components):
        self.rows, self.cols, self.counts = rows, cols, counts
        self.lam_w, self.lam_h = lam_w, lam_h
        exact = n_components <= MAX_EXACT_RELABEL_RANK
        perms = list(permutations(range(n_components))) if exact else []
        self.perms = np.array(perms, dtype=np.int64).reshape(-1, n_components)
        self.n_sweeps = 0
        self.n_relabelled = 0

    def permute_rows(self, order):
        """Renumber the rows of the data: new row ``k`` is old row ``order[k]``."""
        position = np.empty_like(order)
        position[order] = np.arange(order.size)
        rows = position[self.rows]
        by_row = np.lexsort((self.cols, rows))
        self.rows = np.ascontiguousarray(rows[by_row])
        self.cols = np.ascontiguousarray(self.cols[by_row])
        self.counts = np.ascontiguousarray(self.counts[by_row])

    def __call__(self, W, HT, n_sweeps, seq, n_fixed=0, block_end=0, target=None, reference=None):
        """``gibbs_nmf_sweeps`` from ``(W, HT)``; ``reference`` = ``(W_ref, HT_ref)`` or None."""
        empty = np.zeros((0, 0))
        target = empty if target is None else target
        ref_W, ref_HT = (empty, empty) if reference is None else reference
        out = gibbs_nmf_sweeps(
            self.rows, self.cols, self.counts, W, HT, self.lam_w, self.lam_h,
            int(n_sweeps), _numba_seed(seq), int(n_fixed), int(block_end), target,
            ref_W, ref_HT, self.perms,
        )  # fmt: skip
        self.n_sweeps += int(n_sweeps)
        self.n_relabelled += out[8]
        return out


def _main_run(sampler, W, HT, n_burnin, n_kept, seq):
    """Burn-in, then the kept sweeps in chunks, relabelled every sweep to the running mean.

    Relabelling keeps the mean over one labelling of the components. Returns
    the final state, the posterior means (in the modal-scale gauge of the
    kernel) and the kept sweeps' ``sum(x log V) - sum(V)``.
    """
    burnin_seq, kept_seq = seq.spawn(2)
    W, HT = sampler(W, HT, n_burnin, burnin_seq)[:2]
    bounds = np.linspace(0, n_kept, min(N_CHUNKS, n_kept) + 1).astype(np.int64)
    W_sum, HT_sum = np.zeros_like(W), np.zeros_like(HT)
    reference = (W.copy(), HT.copy())
    traces = []
    for c, chunk_seq in enumerate(kept_seq.spawn(bounds.size - 1)):
        n = bounds[c + 1] - bounds[c]
        chunk = sampler(W, HT, n, chunk_seq, reference=reference)
        W, HT = chunk[:2]
        W_sum += n * chunk[6]
        HT_sum += n * chunk[7]
        traces.append(chunk[2] - chunk[3])
        reference = (W_sum / bounds[c + 1], HT_sum / bounds[c + 1])
    return W, HT, W_sum / n_kept, HT_sum / n_kept, np.concatenate(traces)


def _w_ordinate(sampler, W, HT, W_star, HT_star, n_reduced, block_variance, seq, report):
    r""":math:`\log p(W^*|X)` by blocks of rows, each from its own reduced run.

    Blocks are planned one at a time: every run records the log densities of
    all rows not yet fixed, and the next block grows from them; a pilot with
    nothing fixed plans the first. Returns per-block arrays (``blocks``,
    ``sweeps``, ``log_ordinate``, ``variance``, ``ess``), the number of runs
    that started from switched labels, and ``state``: the final
    ``(W, HT, budget left for the H run)``.
    """
    n_rows = W.shape[0]
    n_pilot = max(MIN_RUN_SWEEPS, n_reduced // 20)
    point = (W_star, HT_star)
    pilot = sampler(W, HT, n_pilot, seq.spawn(1)[0], 0, n_rows, W_star, reference=point)
    W, HT = pilot[:2]
    record = pilot[5]
    remaining = max(n_reduced - n_pilot, 0)
    blocks, sweeps, log_ords, variances, esss, relabelled = [], [], [], [], [], 0
    first = 0
    while first < n_rows:
        end = first + _next_block_size(record, block_variance)
        # Runs to come: blocks of this size, then one H run per component.
        runs_left = -(-(n_rows - first) // (end - first)) + W.shape[1]
        share = max(remaining // runs_left, MIN_RUN_SWEEPS)
        remaining -= share
        W, HT, switched = _relabel(W, HT, W_star, HT_star)
        relabelled += switched
        W[:first] = W_star[:first]
        # With no row fixed (the first block) the kernel relabels every sweep.
        run = sampler(W, HT, share, seq.spawn(1)[0], first, n_rows, W_star, reference=point)
        W, HT = run[:2]
        kept = run[5][max(MIN_RUN_SWEEPS // 2, share // 10) :]
        log_ord, var, ess = _log_ordinate(kept[:, : end - first].sum(axis=1))
        blocks.append((first, end))
        sweeps.append(share)
        log_ords.append(log_ord)
        variances.append(var)
        esss.append(ess)
        report.update(end - first, f"W rows {first}-{end - 1}: {share} sweeps, log p {log_ord:.4g}")
        record = kept[:, end - first :]
        first = end
    return {
        "blocks": blocks,
        "sweeps": np.array(sweeps, dtype=float),
        "log_ordinate": np.array(log_ords),
        "variance": np.array(variances),
        "ess": np.array(esss),
        "relabelled": relabelled,
        "state": (W, HT, remaining),
    }


def _h_ordinate(sampler, HT, W_star, HT_star, n_sweeps, seq):
    r""":math:`\log p(H^*|W^*,X)`, one component at a time, column by column.

    With W at :math:`W^*` the columns of H are independent, and each is the
    product of :math:`p(H^*_{kj} \mid H^*_{<k,j}, W^*, X)` over components
    :math:`k`: run :math:`k` holds components :math:`< k` of H at :math:`H^*`
    and records the one-dimensional conditional of component :math:`k` per
    column. (One density per column, rather than a product of R, keeps the
    averages reliable where near-collinear columns of :math:`W^*` leave H a
    ridge, as over-fitted ranks do.) Returns an array of shape
    ``(R * J, 3)``: ``_log_ordinate`` of every (component, column).
    """
    n_rows, n_components = W_star.shape
    share = max(n_sweeps // n_components, MIN_RUN_SWEEPS)
    out = []
    for k in range(n_components):
        HT = HT.copy()
        HT[:, :k] = HT_star[:, :k]
        run = sampler(W_star, HT, share, seq.spawn(1)[0], n_rows, k, HT_star)
        HT = run[1]
        out.extend(_log_ordinate(col) for col in run[5][share // 10 :].T)
    return np.array(out)


def chib_log_evidence_nmf(
    X,
    n_components,
    *,
    prior_rate_w=1.0,
    prior_rate_h=1.0,
    n_samples=9000,
    n_burnin=7000,
    n_reduced=5000,
    block_variance=BLOCK_VARIANCE,
    random_state=None,
    verbose=0,
):
    r"""Estimate :math:`\log p(X)` of Poisson NMF by Chib's method with a Gibbs sampler.

    The model is :math:`X_{ij} \sim \mathcal{PO}(\sum_r W_{ir} H_{rj})` with
    :math:`W_{ir} \sim \mathcal{E}(\lambda_w)`, :math:`H_{rj} \sim \mathcal{E}(\lambda_h)`
    (seed 000, eq. 13). Chib's identity holds at any point :math:`(W^*, H^*)`:

    .. math::
        \log p(X) = \log p(X|W^*,H^*) + \log p(W^*) + \log p(H^*)
                    - \log p(W^*|X) - \log p(H^*|W^*,X).

    1. **Main run.** A Gibbs sampler over the latent sources :math:`S` and
       :math:`W, H` (:mod:`skevidence.kernels.gibbs_nmf`; with a Metropolis
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
        Sweeps of the main run, burn-in included (seed 000's setting).
    n_burnin : int, default=7000
        Burn-in sweeps of the main run; at least two sweeps must be kept.
    n_reduced : int, default=5000
        Sweeps of the pilots and reduced runs together (seed 000's "5000
        more samples"). Over-fitted ranks need more (see Notes).
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
        When an averaged ordinate has an effective sample size below 10:
        its log is then biased low, the evidence high, beyond what
        ``std_error`` says.

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
    n_components = _check_int("n_components", n_components, 1)
    lam_w = _check_rate("prior_rate_w", prior_rate_w)
    lam_h = _check_rate("prior_rate_h", prior_rate_h)
    n_samples = _check_int("n_samples", n_samples, 2)
    n_burnin = _check_int("n_burnin", n_burnin, 0)
    n_reduced = _check_int("n_reduced", n_reduced, 1)
    block_variance = _check_rate("block_variance", block_variance)
    if n_burnin > n_samples - 2:
        raise ValueError(
            f"n_burnin ({n_burnin}) must be at most n_samples - 2 ({n_samples - 2}): "
            "at least two sweeps must be kept after burn-in."
        )
    rows, cols, counts, shape = _nonzero_counts(X)
    transposed = shape[0] > shape[1]
    if transposed:
        order = np.lexsort((rows, cols))
        rows, cols, counts = cols[order], rows[order], counts[order]
        shape = shape[::-1]
        lam_w, lam_h = lam_h, lam_w
    n_rows = shape[0]
    log_factorial_x = float(special.gammaln(counts + 1.0).sum())

    init_seq, main_seq, reduced_seq = seed_sequence(random_state).spawn(3)
    init_rng = np.random.default_rng(init_seq)
    W, HT = _initial_state(init_rng, shape, n_components, lam_w, lam_h, counts.sum())
    sampler = _Sampler(rows, cols, counts, lam_w, lam_h, n_components)

    if verbose and not getattr(gibbs_nmf_sweeps, "signatures", True):
        print("[Chib] compiling the Gibbs kernel (first call; cached afterwards)", flush=True)
    report = progress(n_rows + 2, "Chib", verbose)
    try:
        W, HT, W_star, HT_star, log_lik_trace = _main_run(
            sampler, W, HT, n_burnin, n_samples - n_burnin, main_seq
        )
        report.update(1, f"main run: {n_samples} sweeps")

        W, HT, switched = _relabel(W, HT, W_star, HT_star)
        # The blocks take the rows in an order that pins the labels early.
        row_order = _discriminating_order(W_star, HT_star, lam_w)
        sampler.permute_rows(row_order)
        W, W_star = np.ascontiguousarray(W[row_order]), np.ascontiguousarray(W_star[row_order])
        w_runs = _w_ordinate(
            sampler, W, HT, W_star, HT_star, n_reduced, block_variance, reduced_seq, report
        )
        W, HT, budget_left = w_runs.pop("state")
        h_sweeps = max(budget_left, MIN_RUN_SWEEPS)
        W, HT, switched_h = _relabel(W, HT, W_star, HT_star)
        columns = _h_ordinate(sampler, HT, W_star, HT_star, h_sweeps, reduced_seq)
        report.update(1, f"H runs: {h_sweeps} sweeps")
    finally:
        report.close()
    relabelled = switched + w_runs["relabelled"] + switched_h
    n_reduced_used = sampler.n_sweeps - n_samples
    if n_reduced_used > n_reduced:
        warnings.warn(
            f"n_reduced={n_reduced} is too small for {len(w_runs['blocks'])} blocks of W rows "
            f"and the H run (at least {MIN_RUN_SWEEPS} sweeps each); used {n_reduced_used}. "
            "Raise n_reduced.",
            UserWarning,
            stacklevel=2,
        )

    # W_star's rows are in the sampler's (reordered) numbering.
    log_likelihood, log_prior = _log_joint(
        sampler.rows, sampler.cols, sampler.counts, W_star, HT_star, lam_w, lam_h
    )
    log_likelihood -= log_factorial_x
    log_ord_w = w_runs["log_ordinate"].sum()
    log_ord_h = columns[:, 0].sum()
    log_label = math.lgamma(n_components + 1)
    log_evidence = log_likelihood + log_prior - log_ord_w - log_ord_h + log_label
    var_w, var_h = w_runs["variance"].sum(), columns[:, 1].sum()
    std_error = math.sqrt(var_w + var_h)

    min_ess = min(w_runs["ess"].min(), columns[:, 2].min())
    if min_ess < MIN_ORDINATE_ESS:
        warnings.warn(
            f"Chib's ordinate averages rest on few draws (smallest effective sample size "
            f"{min_ess:.1f}); log Z = {log_evidence:.6g} ± {std_error:.3g} is then likely too "
            "high by more than its standard error. Raise n_reduced.",
            UserWarning,
            stacklevel=2,
        )
    # The point in the caller's layout: undo the row order, then the transpose.
    W_mean = np.empty_like(W_star)
    W_mean[row_order] = W_star
    posterior_mean = (HT_star, W_mean.T) if transposed else (W_mean, HT_star.T)
    return EvidenceResult(
        log_evidence=log_evidence,
        std_error=std_error,
        posterior_mean=tuple(np.ascontiguousarray(a) for a in posterior_mean),
        method="chib",
        n_likelihood_evaluations=rows.size * sampler.n_sweeps,
        wall_time=time.perf_counter() - start,
        diagnostics={
            "n_components": n_components,
            "prior_rates": (float(prior_rate_w), float(prior_rate_h)),
            "n_samples": n_samples,
            "n_burnin": n_burnin,
            "n_reduced": n_reduced,
            "n_sweeps": sampler.n_sweeps,
            "n_nonzero": int(rows.size),
            "transposed": transposed,
            "log_likelihood": float(log_likelihood),
            "log_prior": float(log_prior),
            "log_ordinate_w": float(log_ord_w),
            "log_ordinate_w_std": math.sqrt(var_w),
            "log_ordinate_h": float(log_ord_h),
            "log_ordinate_h_std": math.sqrt(var_h),
            "log_label_permutations": log_label,
            "block_rows": np.array([end - first for first, end in w_runs["blocks"]], dtype=float),
            "block_sweeps": w_runs["sweeps"],
            "block_log_ordinate": w_runs["log_ordinate"],
            "block_std": np.sqrt(w_runs["variance"]),
            "block_ess": w_runs["ess"],
            "h_sweeps": int(h_sweeps),
            "h_ess_min": float(columns[:, 2].min()),
            "relabelled_runs": relabelled,
            "relabelled_sweeps": sampler.n_relabelled,
            "log_likelihood_trace": log_lik_trace - log_factorial_x,
        },
    )
