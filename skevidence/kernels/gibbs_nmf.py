r"""Gibbs sampling for Poisson NMF with latent sources, and Chib's conditional ordinates.

Model: :math:`X_{ij} \sim \mathcal{PO}(\sum_r W_{ir} H_{rj})`, :math:`W_{ir} \sim
\mathcal{E}(\lambda_w)`, :math:`H_{rj} \sim \mathcal{E}(\lambda_h)`. With the
sources :math:`S_{ijr} \sim \mathcal{PO}(W_{ir} H_{rj})`,
:math:`X_{ij} = \sum_r S_{ijr}` (seed 000, section 4.1.2), one sweep is

1. :math:`S_{ij:} \mid W, H \sim \mathrm{Multinomial}(X_{ij};\ p_r \propto W_{ir} H_{rj})`
   for the non-zero :math:`X_{ij}` only (a zero count has zero sources):
   unit by unit for small counts, by sequential binomials for large ones;
   only the sums :math:`\sum_j S_{ijr}` (``row_stats``) and
   :math:`\sum_i S_{ijr}` (``col_stats``) are kept, never the
   :math:`I \times J \times R` tensor;
2. :math:`W_{ir} \mid S, H \sim \mathcal{G}(1 + \sum_j S_{ijr},\ \lambda_w + \sum_j H_{rj})`
   (shape, rate), for the rows that are not held fixed;
3. :math:`H_{rj} \mid S, W \sim \mathcal{G}(1 + \sum_i S_{ijr},\ \lambda_h + \sum_i W_{ir})`;
4. when no row of W is held fixed, a Metropolis move of each component
   along its scale ridge :math:`(c\,w_r, h_r / c)`, which leaves the
   likelihood unchanged and which the Gibbs steps cross slowly when counts
   are large (:func:`_rescale_components`), and optionally a relabelling of
   the components to a reference (:func:`relabel_to`). Neither changes a
   conditional used by Chib's method, only how the chain moves.

The S-step computes :math:`V_{ij} = \sum_r W_{ir} H_{rj}` at every non-zero
anyway, so it also returns the log-likelihood of the state entering the sweep
at no extra cost; the zeros enter through
:math:`\sum_{ij} V_{ij} = \sum_r (\sum_i W_{ir})(\sum_j H_{rj})`.

Layout: the kernels take ``W`` as ``(I, R)`` and ``HT`` (that is
:math:`H^\top`) as ``(J, R)``, both C-contiguous float64, so the R values an
entry needs are adjacent in memory; the non-zeros come as int64 COO arrays
sorted row-major. Random numbers come from numba's ``np.random`` (one
Mersenne Twister per thread), seeded inside each call with
``np.random.seed(seed)``: a call is deterministic given its seed, whatever
runs on other threads. The kernels are serial (run independent ranks in
parallel instead). Numba's binomial stream equals NumPy's legacy
``RandomState.binomial`` for the same seed; its gamma stream does not.
"""

import math

import numpy as np
from numba import njit

from .._config import FASTMATH

__all__ = [
    "gibbs_nmf_sweeps",
    "match_components",
    "relabel_to",
    "row_log_gamma_density",
    "sample_sources",
    "split_count",
]

#: Random-walk step of the scale move, in units of the conditional's standard deviation.
SCALE_STEP = 2.0

#: Counts up to this are split among components unit by unit (one uniform and a
#: linear search each); larger ones by sequential binomials.
CATEGORICAL_MAX_COUNT = 8


@njit(cache=True, fastmath=FASTMATH)
def sample_sources(rows, cols, counts, W, HT, row_stats, col_stats):
    r"""The S-step: draw the sources of every non-zero count, keep their sums.

    ``row_stats`` (I, R) and ``col_stats`` (J, R), int64, are overwritten with
    :math:`\sum_j S_{ijr}` and :math:`\sum_i S_{ijr}`. For each non-zero
    :math:`x = X_{ij}`, with :math:`q_r = W_{ir} H_{rj}` and tails
    :math:`t_r = \sum_{r' \ge r} q_{r'}` (summed from the last component):
    if :math:`x \le` ``CATEGORICAL_MAX_COUNT``, each unit draws
    :math:`u = t_0 U` (one uniform) and goes to the first ``r`` with
    :math:`u < t_0 - t_{r+1}` (the last component otherwise); else
    :math:`S_r \sim \mathrm{Bin}(x - \sum_{r'<r} S_{r'},\ q_r / t_r)` for
    ``r = 0 .. R-2``, the last component taking the rest, no draw once
    nothing is left.

    Returns
    -------
    sum_x_log_v : float
        :math:`\sum_{X_{ij} > 0} X_{ij} \log V_{ij}` at the given ``W, HT``.
    """
    n_components = W.shape[1]
    row_stats[:] = 0
    col_stats[:] = 0
    q = np.empty(n_components)
    tail = np.empty(n_components)
    alloc = np.empty(n_components, dtype=np.int64)
    sum_x_log_v = 0.0
    for k in range(rows.shape[0]):
        i = rows[k]
        j = cols[k]
        x = counts[k]
        for r in range(n_components):
            q[r] = W[i, r] * HT[j, r]
        sum_x_log_v += x * math.log(split_count(x, q, tail, alloc))
        for r in range(n_components):
            row_stats[i, r] += alloc[r]
            col_stats[j, r] += alloc[r]
    return sum_x_log_v


@njit(cache=True, fastmath=FASTMATH)
def split_count(x, q, tail, alloc):
    r"""Split ``x`` units among components of intensities ``q``: one multinomial draw.

    Writes the counts into ``alloc`` (int64, like ``q``) and the tails
    :math:`t_r = \sum_{r' \ge r} q_{r'}` into ``tail``; returns
    :math:`t_0 = \sum_r q_r`. The draws are those :func:`sample_sources`
    describes (categorical units for small counts, sequential binomials
    otherwise), shared by the NMF and PARAFAC Gibbs samplers.
    """
    n_components = q.shape[0]
    acc = 0.0
    for r in range(n_components - 1, -1, -1):
        acc += q[r]
        tail[r] = acc
        alloc[r] = 0
    if x <= CATEGORICAL_MAX_COUNT and acc > 0.0:
        # Small counts: one categorical draw per unit is cheaper than R - 1 binomials.
        for _ in range(x):
            u = np.random.random() * acc
            r = 0
            while r < n_components - 1 and u >= acc - tail[r + 1]:
                r += 1
            alloc[r] += 1
        return acc
    left = x
    for r in range(n_components - 1):
        if left == 0:
            break
        if tail[r] > 0.0:
            p = q[r] / tail[r]
            if p > 1.0:
                p = 1.0
        else:
            # All remaining intensities underflowed: share evenly.
            p = 1.0 / (n_components - r)
        s = np.random.binomial(left, p)
        alloc[r] = s
        left -= s
    alloc[n_components - 1] += left
    return acc


@njit(cache=True, fastmath=FASTMATH)
def _column_sums(A):
    out = np.zeros(A.shape[1])
    for a in range(A.shape[0]):
        for r in range(A.shape[1]):
            out[r] += A[a, r]
    return out


@njit(cache=True, fastmath=FASTMATH)
def _sample_factor(stats, other, prior_rate, out, first_free, first_component):
    r"""Draw ``out[a, r] ~ Gamma(1 + stats[a, r], rate = prior_rate + sum_b other[b, r])``.

    For rows ``a >= first_free`` and components ``r >= first_component``
    only, in row-major order. Used for W (``other`` = :math:`H^\top`) and for
    :math:`H^\top` (``other`` = W).
    """
    rate = prior_rate + _column_sums(other)
    for a in range(first_free, out.shape[0]):
        for r in range(first_component, out.shape[1]):
            out[a, r] = np.random.gamma(1.0 + stats[a, r], 1.0 / rate[r])


@njit(cache=True, fastmath=FASTMATH)
def _rescale_components(W, HT, prior_rate_w, prior_rate_h):
    r"""A Metropolis move along each component's scale ridge :math:`(c\,w_r,\ h_r / c)`.

    The likelihood depends on :math:`w_r h_r^\top` only, so the Gibbs steps,
    whose conditionals are narrow when counts are large, crawl along this
    ridge. For :math:`u = \log c` the target is (Liu & Sabatti 2000,
    generalised Gibbs with the Haar measure :math:`dc/c` of the scaling group)
    :math:`g(u) = (I - J)u - \lambda_w A e^u - \lambda_h B e^{-u}`,
    :math:`A = \sum_i W_{ir}`, :math:`B = \sum_j H_{rj}`: log-concave with
    curvature :math:`\lambda_w A e^u + \lambda_h B e^{-u}`, which is at least
    :math:`2\sqrt{\lambda_w A \lambda_h B}` and equals it where the two terms
    balance. That bound sets the random-walk step: the product
    :math:`\lambda_w A \cdot \lambda_h B` does not change under the move, so
    the proposal is symmetric and the Metropolis test needs no Hastings term
    (a step set by the curvature at the current state would not be). Only
    valid when no entry of W is held fixed.
    """
    n_rows, n_components = W.shape
    n_cols = HT.shape[0]
    w_sums = _column_sums(W)
    h_sums = _column_sums(HT)
    for r in range(n_components):
        a = prior_rate_w * w_sums[r]
        b = prior_rate_h * h_sums[r]
        u = np.random.standard_normal() * SCALE_STEP / math.sqrt(2.0 * math.sqrt(a * b))
        log_ratio = (n_rows - n_cols) * u - a * (math.exp(u) - 1.0) - b * (math.exp(-u) - 1.0)
        if math.log(np.random.random()) < log_ratio:
            c = math.exp(u)
            for i in range(n_rows):
                W[i, r] *= c
            for j in range(n_cols):
                HT[j, r] /= c


@njit(cache=True, fastmath=FASTMATH)
def match_components(cost, perms):
    r"""The matching of components to reference components of least total ``cost``.

    ``cost[r, c]`` is the cost of calling component ``r`` reference component
    ``c``. The total is minimised exactly over ``perms`` (rows are
    permutations, e.g. all :math:`R!` for small R) or, if ``perms`` is
    empty, greedily (cheapest remaining pair first). Returns ``order``: new
    component ``c`` is old component ``order[c]``.
    """
    n_components = cost.shape[0]
    order = np.arange(n_components)
    if perms.shape[0] > 0:
        best = np.inf
        for p in range(perms.shape[0]):
            total = 0.0
            for c in range(n_components):
                total += cost[perms[p, c], c]
            if total < best:
                best = total
                order[:] = perms[p]
        return order
    used_r = np.zeros(n_components, dtype=np.bool_)
    used_c = np.zeros(n_components, dtype=np.bool_)
    for _ in range(n_components):
        best = np.inf
        best_r = 0
        best_c = 0
        for r in range(n_components):
            if used_r[r]:
                continue
            for c in range(n_components):
                if not used_c[c] and cost[r, c] < best:
                    best = cost[r, c]
                    best_r = r
                    best_c = c
        used_r[best_r] = True
        used_c[best_c] = True
        order[best_c] = best_r
    return order


@njit(cache=True, fastmath=FASTMATH)
def relabel_to(W, HT, ref_W, ref_HT, perms):
    r"""Permute the components of ``(W, HT)`` in place to match a reference; return 1 if moved.

    The cost of matching component :math:`r` to reference component :math:`c`
    is :math:`\|w_r h_r^\top - w^{\text{ref}}_c h_c^{\text{ref}\top}\|_F^2`
    (rank-one terms: no dependence on the scale ambiguity), from inner
    products in :math:`O((I + J) R^2)`, and the matching is
    :func:`match_components`'s. Permuting the components
    leaves the label-symmetric posterior invariant, and relabelling after
    every sweep makes the chain sample the posterior folded onto the
    reference's labelling, :math:`R!\,p` on the region nearest to it.
    """
    n_components = W.shape[1]
    own = np.zeros(n_components)
    other = np.zeros(n_components)
    for r in range(n_components):
        own[r] = np.sum(W[:, r] ** 2) * np.sum(HT[:, r] ** 2)
        other[r] = np.sum(ref_W[:, r] ** 2) * np.sum(ref_HT[:, r] ** 2)
    cost = np.empty((n_components, n_components))
    for r in range(n_components):
        for c in range(n_components):
            cross = np.sum(W[:, r] * ref_W[:, c]) * np.sum(HT[:, r] * ref_HT[:, c])
            cost[r, c] = own[r] + other[c] - 2.0 * cross
    order = match_components(cost, perms)
    if np.all(order == np.arange(n_components)):
        return 0
    W[:, :] = W[:, order].copy()
    HT[:, :] = HT[:, order].copy()
    return 1


@njit(cache=True, fastmath=FASTMATH)
def _modal_scale(dim_difference, a, b):
    r"""The most probable :math:`c` for :math:`(c\,w_r, h_r / c)` given :math:`w_r h_r^\top`.

    The mode of :math:`g(u)` of :func:`_rescale_components`:
    :math:`a e^{2u} - (I - J) e^u - b = 0`, with :math:`a = \lambda_w \sum_i W_{ir}`,
    :math:`b = \lambda_h \sum_j H_{rj}`.
    """
    if a <= 0.0 or b <= 0.0:
        return 1.0
    return (dim_difference + math.sqrt(dim_difference * dim_difference + 4.0 * a * b)) / (2.0 * a)


@njit(cache=True, fastmath=FASTMATH)
def _log_gamma_density(x, s, rate):
    r""":math:`\log \mathcal{G}(x;\ 1 + s,\ \text{rate})` (shape, rate), integer ``s >= 0``."""
    out = (1.0 + s) * math.log(rate) - math.lgamma(1.0 + s) - rate * x
    if s > 0:
        out += s * math.log(x)
    return out


@njit(cache=True, fastmath=FASTMATH)
def row_log_gamma_density(point, stats, rate, a):
    r""":math:`\sum_r \log \mathcal{G}(P_{ar};\ 1 + s_{ar},\ b_r)` (shape, rate) for row ``a``."""
    total = 0.0
    for r in range(point.shape[1]):
        total += _log_gamma_density(point[a, r], stats[a, r], rate[r])
    return total


@njit(cache=True, fastmath=FASTMATH)
def gibbs_nmf_sweeps(
    rows, cols, counts, W, HT, prior_rate_w, prior_rate_h, n_sweeps, seed, n_fixed, block_end,
    target, ref_W, ref_HT, perms,
):  # fmt: skip
    r"""Run ``n_sweeps`` Gibbs sweeps from ``(W, HT)``; return what Chib's method needs.

    Parameters
    ----------
    rows, cols, counts : int64 arrays of shape (nnz,)
        The non-zero counts, sorted row-major.
    W : float64 array of shape (I, R)
    HT : float64 array of shape (J, R)
        Starting state (copied, not modified).
    prior_rate_w, prior_rate_h : float
    n_sweeps : int
    seed : int
        Seed of numba's ``np.random`` for this call (``0 <= seed < 2**32``).
    n_fixed : int
        Rows ``0 .. n_fixed-1`` of W are held at their starting values (a
        reduced run); ``n_fixed = I`` leaves only S and H to sample. With
        ``n_fixed = 0`` every sweep ends with the scale move.
    block_end : int
        With ``n_fixed < I``: record the W-step's conditional log density at
        ``target`` (:math:`W^*`, shape (I, R)) for each row
        ``n_fixed .. block_end-1``. With ``n_fixed = I``: components
        ``0 .. block_end-1`` of H are held at their starting values too, and
        the H-step's conditional log density of component ``block_end`` at
        ``target`` (:math:`H^{*\top}`, shape (J, R)) is recorded for each
        column (``block_end = -1``: nothing of H held, all components' log
        densities summed per column).
    target : float64 array of shape (I, R) or (J, R)
        The point; a ``(0, 0)`` array records nothing.
    ref_W, ref_HT : float64 arrays of shapes (I, R) and (J, R)
        With ``n_fixed = 0``, every sweep ends by permuting the components to
        match this reference (:func:`relabel_to`), which keeps the chain in
        the reference's labelling; ``(0, 0)`` arrays switch it off.
    perms : int64 array of shape (R!, R) or (0, R)
        The permutations :func:`relabel_to` searches; none: greedy matching.

    Returns
    -------
    W, HT : float64 arrays
        The final state.
    sum_x_log_v, sum_v, log_prior : float64 arrays of shape (n_sweeps,)
        :math:`\sum_{X_{ij}>0} X_{ij} \log V_{ij}`, :math:`\sum_{ij} V_{ij}` and
        :math:`\log p(W) + \log p(H)` of the state entering each sweep; its
        log-likelihood is ``sum_x_log_v - sum_v - sum(lgamma(X + 1))``.
    unit_log_density : float64 array of shape (n_sweeps, n_units)
        Per recorded row (or column) and sweep,
        :math:`\sum_r \log \mathcal{G}(W^*_{ir}; 1 + \sum_j S_{ijr}, \lambda_w + \sum_j H_{rj})`
        with the S and H this sweep's W is drawn from (or the H analogue,
        :math:`\mathcal{G}(H^*_{rj}; 1 + \sum_i S_{ijr}, \lambda_h + \sum_i W_{ir})`).
    W_mean, HT_mean : float64 arrays
        Mean of the states entering the sweeps, each component first moved
        along its scale ridge to its most probable scale
        (:func:`_modal_scale`): a mean in that gauge lies near the ridge
        :math:`w_r h_r^\top = \text{const}`, a plain mean inside its bend.
    n_relabelled : int
        Sweeps that ended with a non-trivial permutation.
    """
    np.random.seed(seed)
    n_rows, n_components = W.shape
    n_cols = HT.shape[0]
    W = W.copy()
    HT = HT.copy()
    row_stats = np.zeros((n_rows, n_components), dtype=np.int64)
    col_stats = np.zeros((n_cols, n_components), dtype=np.int64)
    sum_x_log_v = np.empty(n_sweeps)
    sum_v = np.empty(n_sweeps)
    log_prior = np.empty(n_sweeps)
    fix_all = n_fixed >= n_rows
    if target.size == 0:
        n_units = 0
    elif fix_all:
        n_units = n_cols
    else:
        n_units = block_end - n_fixed
    unit_log_density = np.zeros((n_sweeps, n_units))
    const_prior = n_rows * n_components * math.log(prior_rate_w) + n_cols * n_components * math.log(
        prior_rate_h
    )
    W_mean = np.zeros_like(W)
    HT_mean = np.zeros_like(HT)
    relabel = ref_W.size > 0
    n_relabelled = 0
    for sweep in range(n_sweeps):
        w_sums = _column_sums(W)
        h_sums = _column_sums(HT)
        for r in range(n_components):
            c = _modal_scale(n_rows - n_cols, prior_rate_w * w_sums[r], prior_rate_h * h_sums[r])
            for i in range(n_rows):
                W_mean[i, r] += W[i, r] * c
            for j in range(n_cols):
                HT_mean[j, r] += HT[j, r] / c
        log_prior[sweep] = const_prior - prior_rate_w * w_sums.sum() - prior_rate_h * h_sums.sum()
        sum_v[sweep] = (w_sums * h_sums).sum()
        sum_x_log_v[sweep] = sample_sources(rows, cols, counts, W, HT, row_stats, col_stats)
        if fix_all:
            if n_units > 0:
                rate = prior_rate_h + w_sums
                for j in range(n_cols):
                    if block_end < 0:
                        value = row_log_gamma_density(target, col_stats, rate, j)
                        unit_log_density[sweep, j] = value
                    else:
                        unit_log_density[sweep, j] = _log_gamma_density(
                            target[j, block_end], col_stats[j, block_end], rate[block_end]
                        )
        else:
            if n_units > 0:
                rate = prior_rate_w + h_sums
                for u in range(n_units):
                    unit_log_density[sweep, u] = row_log_gamma_density(
                        target, row_stats, rate, n_fixed + u
                    )
            _sample_factor(row_stats, HT, prior_rate_w, W, n_fixed, 0)
        _sample_factor(col_stats, W, prior_rate_h, HT, 0, max(block_end, 0) if fix_all else 0)
        if n_fixed == 0:
            _rescale_components(W, HT, prior_rate_w, prior_rate_h)
            if relabel:
                n_relabelled += relabel_to(W, HT, ref_W, ref_HT, perms)
    if n_sweeps > 0:
        W_mean /= n_sweeps
        HT_mean /= n_sweeps
    return W, HT, sum_x_log_v, sum_v, log_prior, unit_log_density, W_mean, HT_mean, n_relabelled
