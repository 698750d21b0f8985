r"""Gibbs sampling with latent sources for Poisson CP models (NMF is the two-way case).

Model: an N-way count array :math:`x_{i_1 \dots i_N} \sim \mathcal{PO}(V_{i_1 \dots i_N})`,
:math:`V = \sum_r \prod_m F^{(m)}_{i_m r}`, with exponential priors
:math:`F^{(m)}_{ir} \sim \mathcal{E}(\lambda_m)`. NMF is :math:`N = 2`
(:math:`F^{(1)} = W`, :math:`F^{(2)} = H^\top`; Cemgil 2009), PARAFAC
:math:`N = 3` (:math:`A, B, C`). With the sources
:math:`S_{e r} \sim \mathcal{PO}(\prod_m F^{(m)}_{i_m r})`, :math:`x_e = \sum_r S_{er}`,
one sweep is

1. the S-step: :math:`S_{e:} \mid F \sim \mathrm{Multinomial}(x_e;\ p_r \propto \prod_m
   F^{(m)}_{i_m r})` for the non-zero counts only (a zero count has zero
   sources), unit by unit for small counts and by sequential binomials for
   large ones (:func:`split_count`); only the per-row sums
   :math:`\sum_{e:\,i_m(e) = i} S_{er}` of every mode are kept, never the
   sources themselves (:func:`sample_sources`);
2. for each mode in turn, :math:`F^{(m)}_{ir} \mid \cdot \sim
   \mathcal{G}(1 + \sum_{e:\,i_m(e)=i} S_{er},\ \lambda_m + \prod_{m' \ne m} \sum_i F^{(m')}_{ir})`
   (shape, rate), for the rows that are not held fixed (:func:`sample_mode`
   draws a whole mode);
3. Metropolis moves along the scale ridges the likelihood is flat on, which
   the Gibbs steps cross slowly when counts are large (:func:`_rescale_pair`,
   :func:`_rescale_three`), and optionally a relabelling of the components to
   a reference (:func:`relabel_to`). None of these changes a conditional used
   by Chib's method, only how the chain moves.

The S-step computes :math:`V` at every non-zero anyway, so it also returns
:math:`\sum_e x_e \log V_e` of the state entering the sweep at no extra cost;
the zeros enter through :math:`\sum V = \sum_r \prod_m \sum_i F^{(m)}_{ir}`.

Layout (stacked factors): the factors of all modes are the row blocks of one
C-contiguous float64 array ``F`` of shape (D, R), :math:`D = \sum_m I_m`;
mode ``m`` is ``F[offsets[m]:offsets[m + 1]]`` (``offsets``: int64, length
N + 1), so the R values an entry needs are adjacent in memory. The non-zeros
come as ``idx`` (int64, (nnz, N)), holding row indices of ``F`` (already
offset: ``idx[e, m] = offsets[m] + i_m``), and ``counts`` (int64, (nnz,)).
Random numbers come from numba's ``np.random`` (one Mersenne Twister per
thread); :func:`gibbs_sweeps` seeds it with ``np.random.seed(seed)``, so a
call is deterministic given its seed whatever runs on other threads. The
kernels are serial (run independent chains in parallel instead). Numba's
binomial and uniform streams equal NumPy's legacy ``RandomState`` ones for
the same seed; its gamma and normal streams do not.
"""

# numba's njit supports only the legacy np.random functions (one state per thread, np.random.seed).
# ruff: noqa: NPY002
import math

import numpy as np
from numba import njit

from ..._config import FASTMATH

__all__ = [
    "CATEGORICAL_MAX_COUNT",
    "column_sums",
    "gibbs_sweeps",
    "match_components",
    "modal_scales",
    "relabel_to",
    "row_log_gamma_density",
    "sample_mode",
    "sample_sources",
    "split_count",
]

#: Random-walk step of the scale moves, in units of the conditional's standard deviation.
SCALE_STEP = 2.0

#: Counts up to this are split among components unit by unit (one uniform and a
#: linear search each); larger ones by sequential binomials.
CATEGORICAL_MAX_COUNT = 8


@njit(cache=True, fastmath=FASTMATH)
def split_count(x, q, tail, alloc):
    r"""Split ``x`` units among components of intensities ``q``: one multinomial draw.

    Writes the counts into ``alloc`` (int64, like ``q``) and the tails
    :math:`t_r = \sum_{r' \ge r} q_{r'}` (summed from the last component) into
    ``tail``; returns :math:`t_0 = \sum_r q_r`. If :math:`x \le`
    ``CATEGORICAL_MAX_COUNT``, each unit draws :math:`u = t_0 U` (one uniform)
    and goes to the first ``r`` with :math:`u < t_0 - t_{r+1}` (the last
    component otherwise); else :math:`S_r \sim \mathrm{Bin}(x - \sum_{r'<r}
    S_{r'},\ q_r / t_r)` for ``r = 0 .. R-2``, the last component taking the
    rest, no draw once nothing is left.
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
def sample_sources(idx, counts, F, stats):
    r"""The S-step: draw the sources of every non-zero count, keep their per-row sums.

    Parameters
    ----------
    idx : int64 array of shape (nnz, N)
        Rows of ``F`` of each non-zero, one per mode (offsets included).
    counts : int64 array of shape (nnz,)
    F : float64 array of shape (D, R)
        The stacked factors.
    stats : int64 array of shape (D, R)
        Overwritten with :math:`\sum_{e:\,i_m(e) = i} S_{er}` in row
        ``offsets[m] + i``.

    Returns
    -------
    sum_x_log_v : float
        :math:`\sum_e x_e \log V_e` at ``F``, with
        :math:`V_e = \sum_r \prod_m F_{\mathrm{idx}[e, m],\,r}` (the product
        taken in mode order). The draws are :func:`split_count`'s.
    """
    n_modes = idx.shape[1]
    n_components = F.shape[1]
    stats[:] = 0
    q = np.empty(n_components)
    tail = np.empty(n_components)
    alloc = np.empty(n_components, dtype=np.int64)
    sum_x_log_v = 0.0
    for e in range(idx.shape[0]):
        x = counts[e]
        first = idx[e, 0]
        for r in range(n_components):
            q[r] = F[first, r]
        for m in range(1, n_modes):
            row = idx[e, m]
            for r in range(n_components):
                q[r] *= F[row, r]
        sum_x_log_v += x * math.log(split_count(x, q, tail, alloc))
        for m in range(n_modes):
            row = idx[e, m]
            for r in range(n_components):
                stats[row, r] += alloc[r]
    return sum_x_log_v


@njit(cache=True, fastmath=FASTMATH)
def column_sums(A):
    """``A.sum(axis=0)`` of a 2-D array, summed row by row."""
    out = np.zeros(A.shape[1])
    for a in range(A.shape[0]):
        for r in range(A.shape[1]):
            out[r] += A[a, r]
    return out


@njit(cache=True, fastmath=FASTMATH)
def _mode_sums(F, offsets):
    """The column sums of every mode, shape (N, R)."""
    sums = np.empty((offsets.shape[0] - 1, F.shape[1]))
    for m in range(sums.shape[0]):
        sums[m] = column_sums(F[offsets[m] : offsets[m + 1]])
    return sums


@njit(cache=True, fastmath=FASTMATH)
def _conditional_rate(sums, mode, prior_rate, exposure):
    r""":math:`\lambda + s \prod_{m' \ne m} \sum_i F^{(m')}_{ir}`, the product in mode order."""
    rate = np.empty(sums.shape[1])
    for r in range(sums.shape[1]):
        product = 1.0
        for other in range(sums.shape[0]):
            if other != mode:
                product *= sums[other, r]
        rate[r] = prior_rate + exposure * product
    return rate


@njit(cache=True, fastmath=FASTMATH)
def _draw_rows(F, first_row, end_row, stats, rate, first_component):
    """Rows ``first_row .. end_row-1``, components from ``first_component``, from their Gamma conditionals."""
    for a in range(first_row, end_row):
        for r in range(first_component, F.shape[1]):
            F[a, r] = np.random.gamma(1.0 + stats[a, r], 1.0 / rate[r])


@njit(cache=True, fastmath=FASTMATH)
def sample_mode(F, offsets, mode, stats, prior_rate, exposure):
    r"""Draw every row of one mode from its Gamma conditional, in place.

    ``F[offsets[mode] + i, r] ~ Gamma(1 + stats[offsets[mode] + i, r],
    rate = prior_rate + exposure * prod_{m != mode} sum_i F^(m)[i, r])``
    (shape, rate), in row-major order. ``exposure = 1.0`` is the ordinary
    posterior; an exposure :math:`s \in [0, 1]` is the posterior of the
    likelihood's intensity scaled by :math:`s` (the sources ``stats`` then
    come from data observed under that exposure).
    """
    rate = _conditional_rate(_mode_sums(F, offsets), mode, prior_rate, exposure)
    _draw_rows(F, offsets[mode], offsets[mode + 1], stats, rate, 0)


@njit(cache=True, fastmath=FASTMATH)
def _scale_component(F, first_row, end_row, r, factor):
    for a in range(first_row, end_row):
        F[a, r] *= factor


@njit(cache=True, fastmath=FASTMATH)
def _rescale_pair(F, offsets, m1, m2, lam1, lam2):
    r"""A Metropolis move of each component along :math:`(e^{u} f^{(m_1)}_r, e^{-u} f^{(m_2)}_r)`.

    The likelihood depends on the product of a component's factors only, so
    the Gibbs steps, whose conditionals are narrow when counts are large,
    crawl along this ridge. For :math:`u` the target is (Liu & Sabatti 2000,
    generalised Gibbs with the Haar measure of the scaling group)
    :math:`g(u) = d\,u - \alpha e^u - \beta e^{-u}`, :math:`d = I_1 - I_2`,
    :math:`\alpha = \lambda_1 \sum_i f^{(m_1)}_{ir}`,
    :math:`\beta = \lambda_2 \sum_i f^{(m_2)}_{ir}`: log-concave, with
    curvature :math:`\sqrt{d^2 + 4\alpha\beta}` at its mode. The move leaves
    :math:`\alpha\beta` unchanged, so that curvature, which sets the
    random-walk step, is the same before and after it: the proposal is
    symmetric and the Metropolis test needs no Hastings term.
    """
    lo1, hi1 = offsets[m1], offsets[m1 + 1]
    lo2, hi2 = offsets[m2], offsets[m2 + 1]
    d = (hi1 - lo1) - (hi2 - lo2)
    sums1 = column_sums(F[lo1:hi1])
    sums2 = column_sums(F[lo2:hi2])
    for r in range(F.shape[1]):
        a = lam1 * sums1[r]
        b = lam2 * sums2[r]
        step = SCALE_STEP / math.sqrt(math.sqrt(d * d + 4.0 * a * b) + 1e-300)
        u = np.random.standard_normal() * step
        log_ratio = d * u - a * (math.exp(u) - 1.0) - b * (math.exp(-u) - 1.0)
        if math.log(np.random.random()) < log_ratio:
            _scale_component(F, lo1, hi1, r, math.exp(u))
            _scale_component(F, lo2, hi2, r, math.exp(-u))


@njit(cache=True, fastmath=FASTMATH)
def _rescale_three(F, offsets, lams):
    r"""A Metropolis move of each component along its three-way scale ridge.

    The ridge is :math:`(e^{u_1} a_r, e^{u_2} b_r, e^{-u_1-u_2} c_r)`.

    The target of :math:`(u_1, u_2)` (Haar measure :math:`du_1\,du_2`; the
    Jacobian is :math:`e^{I u_1 + J u_2 - K(u_1 + u_2)}`) is
    :math:`g = (I - K)u_1 + (J - K)u_2 - \alpha e^{u_1} - \beta e^{u_2} - \gamma e^{-u_1-u_2}`
    with :math:`\alpha = \lambda_a \sum_i a_{ir}` etc. The random-walk step is
    set by :math:`(\alpha\beta\gamma)^{1/3}` and the dimensions, which the
    move leaves unchanged, so the proposal is symmetric.
    """
    I = offsets[1] - offsets[0]
    J = offsets[2] - offsets[1]
    K = offsets[3] - offsets[2]
    sa = column_sums(F[offsets[0] : offsets[1]])
    sb = column_sums(F[offsets[1] : offsets[2]])
    sc = column_sums(F[offsets[2] : offsets[3]])
    for r in range(F.shape[1]):
        a = lams[0] * sa[r]
        b = lams[1] * sb[r]
        c = lams[2] * sc[r]
        curvature = 2.0 * (a * b * c) ** (1.0 / 3.0) + 0.5 * (abs(I - K) + abs(J - K))
        scale = SCALE_STEP / math.sqrt(curvature + 1e-300)
        u1 = np.random.standard_normal() * scale
        u2 = np.random.standard_normal() * scale
        log_ratio = ((I - K) * u1 + (J - K) * u2 - a * (math.exp(u1) - 1.0)
                     - b * (math.exp(u2) - 1.0) - c * (math.exp(-u1 - u2) - 1.0))
        if math.log(np.random.random()) < log_ratio:
            _scale_component(F, offsets[0], offsets[1], r, math.exp(u1))
            _scale_component(F, offsets[1], offsets[2], r, math.exp(u2))
            _scale_component(F, offsets[2], offsets[3], r, math.exp(-u1 - u2))


@njit(cache=True, fastmath=FASTMATH)
def _modal_scale(dim_difference, a, b):
    r"""The most probable :math:`c` for :math:`(c\,w_r, h_r / c)` given :math:`w_r h_r^\top`.

    The mode of :math:`g(u)` of :func:`_rescale_pair`:
    :math:`a e^{2u} - (I - J) e^u - b = 0`.
    """
    if a <= 0.0 or b <= 0.0:
        return 1.0
    return (dim_difference + math.sqrt(dim_difference * dim_difference + 4.0 * a * b)) / (2.0 * a)


@njit(cache=True, fastmath=FASTMATH)
def modal_scales(dims, a, b, c):
    r"""The most probable :math:`(c_1, c_2, c_3)`, :math:`c_1 c_2 c_3 = 1`, for one component.

    The mode of :math:`g(u_1, u_2)` of :func:`_rescale_three`: with
    :math:`x = a e^{u_1}`, :math:`y = b e^{u_2}`, :math:`z = c e^{-u_1-u_2}`
    it solves :math:`x = z + (I - K)`, :math:`y = z + (J - K)`, :math:`xyz = abc`:
    the one root of the increasing, convex cubic :math:`z(z + d_1)(z + d_2) - abc`
    above :math:`\max(0, -d_1, -d_2)`, by Newton's method from the right.
    ``dims`` is ``(I, J, K)``; ``a, b, c`` are :math:`\lambda_a \sum_i a_{ir}` etc.
    """
    if a <= 0.0 or b <= 0.0 or c <= 0.0:
        return 1.0, 1.0, 1.0
    d1 = float(dims[0] - dims[2])
    d2 = float(dims[1] - dims[2])
    P = a * b * c
    z = max(0.0, -d1, -d2) + P ** (1.0 / 3.0)
    for _ in range(200):
        f = z * (z + d1) * (z + d2) - P
        df = (z + d1) * (z + d2) + z * (z + d2) + z * (z + d1)
        step = f / df
        z -= step
        if abs(step) <= 1e-15 * z:
            break
    return (z + d1) / a, (z + d2) / b, z / c


@njit(cache=True, fastmath=FASTMATH)
def _add_gauged(F, offsets, lams, sums, total):
    r"""Add ``F`` (two or three modes) to ``total``, each component first moved to its most probable scale.

    A mean in that gauge lies near the ridge of equal products, a plain mean
    inside its bend. Two modes: :func:`_modal_scale`; three: :func:`modal_scales`.
    """
    dims = offsets[1:] - offsets[:-1]
    for r in range(F.shape[1]):
        if offsets.shape[0] == 3:
            c = _modal_scale(dims[0] - dims[1], lams[0] * sums[0, r], lams[1] * sums[1, r])
            scales = (c, 1.0 / c, 1.0)
        else:
            scales = modal_scales(dims, lams[0] * sums[0, r], lams[1] * sums[1, r], lams[2] * sums[2, r])
        for m in range(offsets.shape[0] - 1):
            for a in range(offsets[m], offsets[m + 1]):
                total[a, r] += F[a, r] * scales[m]


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
def relabel_to(F, offsets, ref, perms):
    r"""Permute the components of ``F`` in place to match a reference; return 1 if moved.

    The cost of matching component :math:`r` to reference component :math:`c`
    is the squared Frobenius distance of their rank-one terms
    :math:`\circ_m f^{(m)}_r` (no dependence on the scale ambiguity), from
    inner products in :math:`O(D R^2)`, and the matching is
    :func:`match_components`'s. ``ref`` is stacked like ``F``. Permuting the
    components leaves the label-symmetric posterior invariant, and
    relabelling after every sweep makes the chain sample the posterior folded
    onto the reference's labelling, :math:`R!\,p` on the region nearest to it.
    """
    n_modes = offsets.shape[0] - 1
    n_components = F.shape[1]
    own = np.zeros(n_components)
    other = np.zeros(n_components)
    cost = np.empty((n_components, n_components))
    for r in range(n_components):
        own[r] = np.sum(F[offsets[0] : offsets[1], r] ** 2)
        other[r] = np.sum(ref[offsets[0] : offsets[1], r] ** 2)
        for m in range(1, n_modes):
            own[r] *= np.sum(F[offsets[m] : offsets[m + 1], r] ** 2)
            other[r] *= np.sum(ref[offsets[m] : offsets[m + 1], r] ** 2)
    for r in range(n_components):
        for c in range(n_components):
            cross = np.sum(F[offsets[0] : offsets[1], r] * ref[offsets[0] : offsets[1], c])
            for m in range(1, n_modes):
                lo, hi = offsets[m], offsets[m + 1]
                cross *= np.sum(F[lo:hi, r] * ref[lo:hi, c])
            cost[r, c] = own[r] + other[c] - 2.0 * cross
    order = match_components(cost, perms)
    if np.all(order == np.arange(n_components)):
        return 0
    F[:, :] = F[:, order].copy()
    return 1


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
def gibbs_sweeps(idx, counts, F, offsets, prior_rates, n_sweeps, seed, stage, n_held, record_end, target, ref,
                 perms):  # fmt: skip
    r"""Run ``n_sweeps`` Gibbs sweeps from ``F``; return what Chib's method needs.

    Parameters
    ----------
    idx, counts : int64 arrays of shapes (nnz, N) and (nnz,)
        The non-zero counts (:func:`sample_sources`), N = 2 or 3 modes.
    F : float64 array of shape (D, R)
        Stacked starting state (copied, not modified).
    offsets : int64 array of shape (N + 1,)
    prior_rates : float64 array of shape (N,)
    n_sweeps : int
    seed : int
        Seed of numba's ``np.random`` for this call (``0 <= seed < 2**32``).
    stage : int
        The mode whose conditional ordinate is recorded; modes before it are
        held entirely. For ``stage < N - 1``, rows ``0 .. n_held-1`` of the
        mode are held too, and the conditional log density at ``target``
        (that mode's factor at the point) is recorded for rows
        ``n_held .. record_end-1``. For the last mode, ``stage = N - 1``,
        components ``0 .. n_held-1`` of it are held, and the conditional log
        density of component ``n_held`` at ``target`` is recorded for every
        row (``record_end`` is not used).
    n_held, record_end : int
    target : float64 array
        The point's factor of mode ``stage``; a ``(0, 0)`` array records nothing.
    ref : float64 array of shape (D, R) or (0, 0)
        When no row is held (``stage = 0``, ``n_held = 0``), every sweep ends
        with the scale moves of all modes and by permuting the components to
        match this reference (:func:`relabel_to`); a ``(0, 0)`` array switches
        the relabelling off. When only the first mode is held and two are
        free, the sweep ends with the scale move of those two.
    perms : int64 array of shape (R!, R) or (0, R)
        The permutations :func:`relabel_to` searches; none: greedy matching.

    Returns
    -------
    F : float64 array
        The final state.
    log_likelihood : float64 array of shape (n_sweeps,)
        :math:`\sum_e x_e \log V_e - \sum V` of the state entering each
        sweep, the log-likelihood up to ``-sum(lgamma(x + 1))``.
    unit_log_density : float64 array of shape (n_sweeps, n_units)
        Per recorded row and sweep, the conditional log density (see
        ``stage``) with the sources and factors the sweep's step draws from.
    F_mean : float64 array
        Mean of the states entering the sweeps, each component first moved
        to its most probable scale (:func:`_add_gauged`).
    n_relabelled : int
        Sweeps that ended with a non-trivial permutation.
    """
    np.random.seed(seed)
    n_modes = offsets.shape[0] - 1
    n_components = F.shape[1]
    last = n_modes - 1
    F = F.copy()
    stats = np.zeros(F.shape, dtype=np.int64)
    log_likelihood = np.empty(n_sweeps)
    lo, hi = offsets[stage], offsets[stage + 1]
    if target.size == 0:
        n_units = 0
    elif stage == last:
        n_units = hi - lo
    else:
        n_units = record_end - n_held
    unit_log_density = np.zeros((n_sweeps, n_units))
    F_mean = np.zeros_like(F)
    # The first mode with nothing held: the scale moves act on it and the modes after it.
    first_free_mode = stage if stage < last and n_held == 0 else stage + 1
    n_free = n_modes - first_free_mode
    relabel = ref.size > 0 and first_free_mode == 0
    n_relabelled = 0
    for sweep in range(n_sweeps):
        sums = _mode_sums(F, offsets)
        _add_gauged(F, offsets, prior_rates, sums, F_mean)
        total_v = 0.0
        for r in range(n_components):
            term = sums[0, r]
            for m in range(1, n_modes):
                term *= sums[m, r]
            total_v += term
        log_likelihood[sweep] = sample_sources(idx, counts, F, stats) - total_v
        for m in range(stage, n_modes):
            rate = _conditional_rate(sums, m, prior_rates[m], 1.0)
            if m == stage and stage < last:
                for u in range(n_units):
                    unit_log_density[sweep, u] = row_log_gamma_density(target, stats[lo:hi], rate, n_held + u)
                _draw_rows(F, lo + n_held, hi, stats, rate, 0)
            elif m == stage:
                for u in range(n_units):
                    unit_log_density[sweep, u] = _log_gamma_density(
                        target[u, n_held], stats[lo + u, n_held], rate[n_held]
                    )
                _draw_rows(F, lo, hi, stats, rate, n_held)
            else:
                _draw_rows(F, offsets[m], offsets[m + 1], stats, rate, 0)
            sums[m] = column_sums(F[offsets[m] : offsets[m + 1]])
        if n_free == 3:
            _rescale_three(F, offsets, prior_rates)
        elif n_free == 2:
            m1 = first_free_mode
            _rescale_pair(F, offsets, m1, m1 + 1, prior_rates[m1], prior_rates[m1 + 1])
        if relabel:
            n_relabelled += relabel_to(F, offsets, ref, perms)
    if n_sweeps > 0:
        F_mean /= n_sweeps
    return F, log_likelihood, unit_log_density, F_mean, n_relabelled
