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
   (shape, rate), for the rows that are not held fixed (:func:`draw_rows`);
3. Metropolis moves along the scale ridges the likelihood is flat on, which
   the Gibbs steps cross slowly when counts are large (:func:`scale_moves`),
   and optionally a relabelling of the components to a reference
   (:func:`relabel_to`). None of these changes a conditional used
   by Chib's method, only how the chain moves.

:func:`draw_rows` and :func:`scale_moves` take the prior's part of the
conditionals as a Gamma per factor entry (shape 1, rate :math:`\lambda_m`
here), so that the SMC's tempered targets (:mod:`~skevidence.cp.kernels.smc`)
draw with them too.

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
from .assignment import best_matching
from .passes import column_sums, other_modes

__all__ = ["CATEGORICAL_MAX_COUNT", "draw_rows", "entry_intensities", "gibbs_sweeps", "likelihood_rates",
           "modal_scales", "relabel_to", "sample_sources", "scale_moves", "split_count", "summed_intensity"]

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
        # If all remaining intensities underflowed, share evenly.
        p = min(q[r] / tail[r], 1.0) if tail[r] > 0.0 else 1.0 / (n_components - r)
        s = np.random.binomial(left, p)
        alloc[r] = s
        left -= s
    alloc[n_components - 1] += left
    return acc


@njit(cache=True, fastmath=FASTMATH)
def entry_intensities(F, idx, e, q):
    """``q[r] = prod_m F[idx[e, m], r]`` (the product in mode order), the components' intensities at entry ``e``;
    returns their sum."""
    total = 0.0
    for r in range(F.shape[1]):
        prod = F[idx[e, 0], r]
        for m in range(1, idx.shape[1]):
            prod *= F[idx[e, m], r]
        q[r] = prod
        total += prod
    return total


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
        :math:`\sum_e x_e \log V_e` at ``F`` (:func:`entry_intensities`). The
        draws are :func:`split_count`'s.
    """
    n_components = F.shape[1]
    stats[:] = 0
    q = np.empty(n_components)
    tail = np.empty(n_components)
    alloc = np.empty(n_components, dtype=np.int64)
    sum_x_log_v = 0.0
    for e in range(idx.shape[0]):
        entry_intensities(F, idx, e, q)
        sum_x_log_v += counts[e] * math.log(split_count(counts[e], q, tail, alloc))
        for m in range(idx.shape[1]):
            for r in range(n_components):
                stats[idx[e, m], r] += alloc[r]
    return sum_x_log_v


@njit(cache=True, fastmath=FASTMATH)
def _mode_sums(F, offsets):
    """The column sums of every mode, shape (N, R)."""
    sums = np.empty((offsets.shape[0] - 1, F.shape[1]))
    column_sums(F, offsets, sums)
    return sums


@njit(cache=True, fastmath=FASTMATH)
def summed_intensity(F, offsets):
    r""":math:`\sum_e V_e = \sum_r \prod_m \sum_i F^{(m)}_{ir}` over every entry of the array, zeros included."""
    sums = _mode_sums(F, offsets)
    total = 0.0
    for r in range(F.shape[1]):
        total += sums[0, r] * other_modes(sums, 0, r)
    return total


@njit(cache=True, fastmath=FASTMATH)
def likelihood_rates(F, offsets, mode, exposure):
    r""":math:`s \prod_{m' \ne m} \sum_i F^{(m')}_{ir}` per component: the likelihood's part of the rates of
    mode ``m``'s conditionals at the exposure :math:`s` (1 for the posterior)."""
    sums = _mode_sums(F, offsets)
    rate = np.empty(F.shape[1])
    for r in range(F.shape[1]):
        rate[r] = exposure * other_modes(sums, mode, r)
    return rate


@njit(cache=True, fastmath=FASTMATH)
def draw_rows(F, first_row, end_row, first_component, stats, shape, rate, likelihood_rate):
    r"""Rows ``first_row .. end_row-1``, components from ``first_component``, from their Gamma conditionals.

    ``F[a, r] ~ Gamma(shape[a, r] + stats[a, r], rate[a, r] + likelihood_rate[r])`` (shape, rate): ``shape``
    and ``rate`` (``(D, R)``) are the Gamma that stands for the prior (the exponential prior: 1 and
    :math:`\lambda_m`), ``likelihood_rate`` is :func:`likelihood_rates`'s.
    """
    for a in range(first_row, end_row):
        for r in range(first_component, F.shape[1]):
            F[a, r] = np.random.gamma(shape[a, r] + stats[a, r], 1.0 / (rate[a, r] + likelihood_rate[r]))


@njit(cache=True, fastmath=FASTMATH)
def scale_moves(F, offsets, first_mode, shape, rate, n_steps):
    r"""Metropolis moves of each component along :math:`(e^{u} f^{(m)}_r, e^{-u} f^{(m+1)}_r)`, for every pair
    of consecutive modes from ``first_mode`` on, in order.

    The likelihood depends on the product of a component's factors only, so
    the Gibbs steps, whose conditionals are narrow when counts are large,
    crawl along these ridges. With the factors' Gamma part ``shape``,
    ``rate`` (as :func:`draw_rows`'s), the target of :math:`u` is (Liu &
    Sabatti 2000, generalised Gibbs with the Haar measure of the scaling
    group) :math:`g(u) = d\,u - a (e^u - 1) - b (e^{-u} - 1)`, :math:`d` the
    summed shapes of mode :math:`m` less those of mode :math:`m + 1` (the
    shapes' :math:`-1` cancels the Jacobian of the scaling; for the
    exponential prior :math:`d = I_m - I_{m+1}`), :math:`a, b` the summed rates
    times the factors of each mode: log-concave, with curvature
    :math:`\sqrt{d^2 + 4ab}` at its mode. A move leaves :math:`ab` unchanged,
    so that curvature, which sets the random-walk step, is the same all
    along the ridge: the proposal is symmetric and the Metropolis test needs
    no Hastings term. Each component takes ``n_steps`` steps, each O(1) since
    :math:`a, b` scale with :math:`e^{\pm u}`.
    """
    for m in range(first_mode, offsets.shape[0] - 2):
        for r in range(F.shape[1]):
            d = a = b = 0.0
            for row in range(offsets[m], offsets[m + 1]):
                d += shape[row, r]
                a += rate[row, r] * F[row, r]
            for row in range(offsets[m + 1], offsets[m + 2]):
                d -= shape[row, r]
                b += rate[row, r] * F[row, r]
            step = SCALE_STEP / math.sqrt(math.sqrt(d * d + 4.0 * a * b) + 1e-300)
            total = 0.0
            for _ in range(n_steps):
                u = np.random.standard_normal() * step
                up = math.exp(u)
                if math.log(np.random.random()) < d * u - a * (up - 1.0) - b * (1.0 / up - 1.0):
                    total += u
                    a *= up
                    b /= up
            if total != 0.0:
                up = math.exp(total)
                for row in range(offsets[m], offsets[m + 1]):
                    F[row, r] *= up
                for row in range(offsets[m + 1], offsets[m + 2]):
                    F[row, r] /= up


@njit(cache=True, fastmath=FASTMATH)
def modal_scales(dims, coefs):
    r"""The most probable scales :math:`c_m`, :math:`\prod_m c_m = 1`, of one component's factors.

    Under the exponential priors the factors :math:`c_m f^{(m)}_r` (the
    rank-one term unchanged) have the log density
    :math:`\sum_m (I_m \log c_m - \kappa_m c_m)`, ``dims`` the :math:`I_m`
    and ``coefs`` the :math:`\kappa_m = \lambda_m \sum_i f^{(m)}_{ir}`. At its
    mode :math:`x_m = \kappa_m c_m = z + I_m - I_N` with :math:`z = x_N`, and
    :math:`\prod_m x_m = \prod_m \kappa_m`: :math:`z` is the one root above
    :math:`\max_m (I_N - I_m)` of that increasing, convex polynomial, found
    by Newton's method from the right.
    """
    if np.any(coefs <= 0.0):
        return np.ones(dims.shape[0])
    d = (dims - dims[-1]).astype(np.float64)
    target = np.prod(coefs)
    z = -d.min() + target ** (1.0 / dims.shape[0])
    for _ in range(200):
        f, df = 1.0, 0.0
        for m in range(d.shape[0]):
            df = df * (z + d[m]) + f
            f *= z + d[m]
        step = (f - target) / df
        z -= step
        if abs(step) <= 1e-15 * z:
            break
    return (z + d) / coefs


@njit(cache=True, fastmath=FASTMATH)
def _add_gauged(F, offsets, prior_rates, total):
    """Add ``F`` to ``total``, each component first moved to its most probable scale (:func:`modal_scales`).

    A mean in that gauge lies near the ridge of equal products, a plain mean inside its bend.
    """
    dims = offsets[1:] - offsets[:-1]
    sums = _mode_sums(F, offsets)
    scales = np.empty((F.shape[1], dims.shape[0]))
    for r in range(F.shape[1]):
        scales[r] = modal_scales(dims, prior_rates * sums[:, r])
    for m in range(dims.shape[0]):  # row by row, as the factors are stored
        for a in range(offsets[m], offsets[m + 1]):
            for r in range(F.shape[1]):
                total[a, r] += F[a, r] * scales[r, m]


@njit(cache=True, fastmath=FASTMATH)
def _term_products(A, B, offsets):
    r"""``(R, R)``: the inner products :math:`\prod_m \langle a^{(m)}_r, b^{(m)}_c \rangle` of the rank-one
    terms of the stacked factors ``A`` and ``B``."""
    out = np.ones((A.shape[1], B.shape[1]))
    for m in range(offsets.shape[0] - 1):
        for r in range(A.shape[1]):
            for c in range(B.shape[1]):
                out[r, c] *= np.sum(A[offsets[m] : offsets[m + 1], r] * B[offsets[m] : offsets[m + 1], c])
    return out


@njit(cache=True, fastmath=FASTMATH)
def relabel_to(F, offsets, ref):
    r"""Permute the components of ``F`` in place to match a reference; return 1 if moved.

    The cost of matching component :math:`r` to reference component :math:`c`
    is the squared Frobenius distance of their rank-one terms
    :math:`\circ_m f^{(m)}_r` (no dependence on the scale ambiguity), from
    inner products in :math:`O(D R^2)`, and the matching of least total cost
    is :func:`~skevidence.cp.kernels.assignment.best_matching`'s. ``ref`` is
    stacked like ``F``. Permuting the
    components leaves the label-symmetric posterior invariant, and
    relabelling after every sweep makes the chain sample the posterior folded
    onto the reference's labelling, :math:`R!\,p` on the region nearest to it.
    """
    # The distances' squared norms sum to the same over every matching: the inner products decide.
    order = best_matching(_term_products(F, ref, offsets))[0]  # new component c is old component order[c]
    if np.all(order == np.arange(F.shape[1])):
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
def gibbs_sweeps(idx, counts, F, offsets, prior_rates, n_sweeps, seed, stage, n_held, record_end, target, ref):
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
        Every sweep ends with the scale moves (:func:`scale_moves`) of the
        modes from the first with no row held on, and, when no row is held
        (``stage = 0``, ``n_held = 0``), by permuting the components to match
        this reference (:func:`relabel_to`); a ``(0, 0)`` array switches the
        relabelling off.

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
    last = n_modes - 1
    F = F.copy()
    stats = np.zeros(F.shape, dtype=np.int64)
    prior_shape = np.ones_like(F)
    prior_rate = np.empty_like(F)
    for m in range(n_modes):
        prior_rate[offsets[m] : offsets[m + 1]] = prior_rates[m]
    log_likelihood = np.empty(n_sweeps)
    # The recorded units: rows n_held .. record_end-1 of a blocked mode over every component, or every row of
    # the last mode for component n_held; the held rows or components are not drawn.
    held_rows, first_component, end_component = (n_held, 0, F.shape[1]) if stage < last else (0, n_held, n_held + 1)
    n_units = 0 if target.size == 0 else (record_end - n_held if stage < last else offsets[-1] - offsets[last])
    unit_log_density = np.zeros((n_sweeps, n_units))
    F_mean = np.zeros_like(F)
    # The first mode with nothing held: the scale moves act on it and the modes after it.
    first_free_mode = stage if stage < last and n_held == 0 else stage + 1
    relabel = ref.size > 0 and first_free_mode == 0
    n_relabelled = 0
    for sweep in range(n_sweeps):
        _add_gauged(F, offsets, prior_rates, F_mean)
        log_likelihood[sweep] = sample_sources(idx, counts, F, stats) - summed_intensity(F, offsets)
        other = likelihood_rates(F, offsets, stage, 1.0)
        first_row = offsets[stage] + held_rows
        for u in range(n_units):
            for r in range(first_component, end_component):
                unit_log_density[sweep, u] += _log_gamma_density(
                    target[held_rows + u, r], stats[first_row + u, r], prior_rates[stage] + other[r])
        draw_rows(F, first_row, offsets[stage + 1], first_component, stats, prior_shape, prior_rate, other)
        for m in range(stage + 1, n_modes):
            other = likelihood_rates(F, offsets, m, 1.0)
            draw_rows(F, offsets[m], offsets[m + 1], 0, stats, prior_shape, prior_rate, other)
        scale_moves(F, offsets, first_free_mode, prior_shape, prior_rate, 1)
        if relabel:
            n_relabelled += relabel_to(F, offsets, ref)
    if n_sweeps > 0:
        F_mean /= n_sweeps
    return F, log_likelihood, unit_log_density, F_mean, n_relabelled
