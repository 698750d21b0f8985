r"""Gibbs sampling for Poisson PARAFAC with latent sources, and Chib's conditional ordinates.

Model (seed 001, eq. 11): :math:`x_{ijk} \sim \mathcal{PO}(\sum_r a_{ir} b_{jr} c_{kr})`,
:math:`a_{ir} \sim \mathcal{E}(\lambda_a)`, :math:`b_{jr} \sim \mathcal{E}(\lambda_b)`,
:math:`c_{kr} \sim \mathcal{E}(\lambda_c)`. With the sources
:math:`S_{ijkr} \sim \mathcal{PO}(a_{ir} b_{jr} c_{kr})`, :math:`x_{ijk} = \sum_r S_{ijkr}`,
one sweep is

1. :math:`S_{ijk:} \mid A, B, C \sim
   \mathrm{Multinomial}(x_{ijk};\ p_r \propto a_{ir} b_{jr} c_{kr})`
   for the non-zero counts only, by the scheme of
   :func:`skevidence.kernels.gibbs_nmf.sample_sources` (unit by unit up to
   ``CATEGORICAL_MAX_COUNT``, sequential binomials above); only the mode
   sums :math:`\sum_{jk} S_{ijkr}`, :math:`\sum_{ik} S_{ijkr}`,
   :math:`\sum_{ij} S_{ijkr}` are kept;
2. :math:`a_{ir} \mid \cdot \sim
   \mathcal{G}(1 + \sum_{jk} S_{ijkr},\ \lambda_a + (\sum_j b_{jr})(\sum_k c_{kr}))`
   (shape, rate) for the rows that are not held fixed;
3. :math:`b_{jr} \mid \cdot \sim
   \mathcal{G}(1 + \sum_{ik} S_{ijkr},\ \lambda_b + (\sum_i a_{ir})(\sum_k c_{kr}))`;
4. :math:`c_{kr} \mid \cdot \sim
   \mathcal{G}(1 + \sum_{ij} S_{ijkr},\ \lambda_c + (\sum_i a_{ir})(\sum_j b_{jr}))`;
5. Metropolis moves along the scale ridges the likelihood is flat on, which
   the Gibbs steps cross slowly when counts are large: with nothing of A
   held, each component moves along
   :math:`(e^{u_1} a_r, e^{u_2} b_r, e^{-u_1-u_2} c_r)`
   (:func:`_rescale_abc`); with A (partly) held and nothing of B, along
   :math:`(e^{u} b_r, e^{-u} c_r)` (:func:`_rescale_bc`); and optionally a
   relabelling of the components to a reference (:func:`relabel_to`). None
   of these changes a conditional used by Chib's method, only how the
   chain moves.

Which factor is recorded (and which held) is the ``stage`` of a call:
``0`` (rows of A), ``1`` (A held; rows of B), ``2`` (A and B held; one
component of C per row). The S-step computes :math:`V` at every non-zero,
so it also returns :math:`\sum x \log V` of the state entering the sweep;
:math:`\sum V = \sum_r (\sum_i a_{ir})(\sum_j b_{jr})(\sum_k c_{kr})`.

Layout: factors ``(I, R)``, ``(J, R)``, ``(K, R)``, C-contiguous float64; the
non-zeros int64 COO arrays. Random numbers come from numba's ``np.random``,
seeded inside each call with ``np.random.seed(seed)``: a call is
deterministic given its seed. The kernels are serial.
"""

import math

import numpy as np
from numba import njit

from .._config import FASTMATH
from .gibbs_nmf import (
    SCALE_STEP,
    _column_sums,
    _log_gamma_density,
    match_components,
    row_log_gamma_density,
    split_count,
)

__all__ = ["gibbs_parafac_sweeps", "modal_scales", "relabel_to", "sample_sources"]

#: Stages of a call: the factor whose conditional ordinate is recorded.
STAGE_A, STAGE_B, STAGE_C = 0, 1, 2


@njit(cache=True, fastmath=FASTMATH)
def sample_sources(ii, jj, kk, counts, A, B, C, stats_a, stats_b, stats_c):
    r"""The S-step: draw the sources of every non-zero count, keep their mode sums.

    ``stats_a`` (I, R), ``stats_b`` (J, R), ``stats_c`` (K, R), int64, are
    overwritten with :math:`\sum_{jk} S_{ijkr}`, :math:`\sum_{ik} S_{ijkr}`,
    :math:`\sum_{ij} S_{ijkr}`. The draws follow
    :func:`skevidence.kernels.gibbs_nmf.sample_sources` with
    :math:`q_r = a_{ir} b_{jr} c_{kr}`.

    Returns
    -------
    sum_x_log_v : float
        :math:`\sum_{x_{ijk} > 0} x_{ijk} \log V_{ijk}` at the given factors.
    """
    R = A.shape[1]
    stats_a[:] = 0
    stats_b[:] = 0
    stats_c[:] = 0
    q = np.empty(R)
    tail = np.empty(R)
    alloc = np.empty(R, dtype=np.int64)
    sum_x_log_v = 0.0
    for e in range(ii.shape[0]):
        i = ii[e]
        j = jj[e]
        k = kk[e]
        x = counts[e]
        for r in range(R):
            q[r] = A[i, r] * B[j, r] * C[k, r]
        sum_x_log_v += x * math.log(split_count(x, q, tail, alloc))
        for r in range(R):
            stats_a[i, r] += alloc[r]
            stats_b[j, r] += alloc[r]
            stats_c[k, r] += alloc[r]
    return sum_x_log_v


@njit(cache=True, fastmath=FASTMATH)
def _sample_factor(stats, rate, out, first_free, first_component):
    """Draw ``out[a, r] ~ Gamma(1 + stats[a, r], rate[r])`` (shape, rate).

    For rows ``a >= first_free`` and components ``r >= first_component`` only.
    """
    for a in range(first_free, out.shape[0]):
        for r in range(first_component, out.shape[1]):
            out[a, r] = np.random.gamma(1.0 + stats[a, r], 1.0 / rate[r])


@njit(cache=True, fastmath=FASTMATH)
def _scale_component(F, r, factor):
    for a in range(F.shape[0]):
        F[a, r] *= factor


@njit(cache=True, fastmath=FASTMATH)
def _rescale_abc(A, B, C, lam_a, lam_b, lam_c):
    r"""A Metropolis move of each component along its scale ridge.

    The ridge is :math:`(e^{u_1} a_r, e^{u_2} b_r, e^{-u_1-u_2} c_r)`.

    The likelihood depends on :math:`a_r \circ b_r \circ c_r` only. The
    target of :math:`(u_1, u_2)` (generalised Gibbs with the Haar measure
    :math:`du_1\,du_2` of the scaling group; the Jacobian is
    :math:`e^{I u_1 + J u_2 - K(u_1 + u_2)}`) is
    :math:`g = (I - K)u_1 + (J - K)u_2 - \alpha e^{u_1} - \beta e^{u_2} - \gamma e^{-u_1-u_2}`
    with :math:`\alpha = \lambda_a \sum_i a_{ir}` etc. The random-walk step is
    set by :math:`(\alpha\beta\gamma)^{1/3}` and the dimensions, which the move
    leaves unchanged, so the proposal is symmetric.
    """
    I, R = A.shape
    J = B.shape[0]
    K = C.shape[0]
    sa = _column_sums(A)
    sb = _column_sums(B)
    sc = _column_sums(C)
    for r in range(R):
        a = lam_a * sa[r]
        b = lam_b * sb[r]
        c = lam_c * sc[r]
        curvature = 2.0 * (a * b * c) ** (1.0 / 3.0) + 0.5 * (abs(I - K) + abs(J - K))
        scale = SCALE_STEP / math.sqrt(curvature + 1e-300)
        u1 = np.random.standard_normal() * scale
        u2 = np.random.standard_normal() * scale
        log_ratio = ((I - K) * u1 + (J - K) * u2 - a * (math.exp(u1) - 1.0)
                     - b * (math.exp(u2) - 1.0) - c * (math.exp(-u1 - u2) - 1.0))
        if math.log(np.random.random()) < log_ratio:
            _scale_component(A, r, math.exp(u1))
            _scale_component(B, r, math.exp(u2))
            _scale_component(C, r, math.exp(-u1 - u2))


@njit(cache=True, fastmath=FASTMATH)
def _rescale_bc(B, C, lam_b, lam_c):
    r"""A Metropolis move of each component along :math:`(e^{u} b_r, e^{-u} c_r)`, A untouched.

    Target :math:`g(u) = (J - K)u - \beta e^{u} - \gamma e^{-u}`; the step is set
    by the invariant :math:`\sqrt{\beta\gamma}`.
    """
    J, R = B.shape
    K = C.shape[0]
    sb = _column_sums(B)
    sc = _column_sums(C)
    for r in range(R):
        b = lam_b * sb[r]
        c = lam_c * sc[r]
        curvature = 2.0 * math.sqrt(b * c) + 0.5 * abs(J - K)
        u = np.random.standard_normal() * SCALE_STEP / math.sqrt(curvature + 1e-300)
        log_ratio = (J - K) * u - b * (math.exp(u) - 1.0) - c * (math.exp(-u) - 1.0)
        if math.log(np.random.random()) < log_ratio:
            _scale_component(B, r, math.exp(u))
            _scale_component(C, r, math.exp(-u))


@njit(cache=True, fastmath=FASTMATH)
def modal_scales(dims, a, b, c):
    r"""The most probable :math:`(c_1, c_2, c_3)`, :math:`c_1 c_2 c_3 = 1`, for one component.

    The mode of :math:`g(u_1, u_2)` of :func:`_rescale_abc`: with
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
def relabel_to(A, B, C, ref_A, ref_B, ref_C, perms):
    r"""Permute the components of ``(A, B, C)`` in place to match a reference; return 1 if moved.

    The cost of matching component :math:`r` to reference component :math:`s`
    is :math:`\|a_r \circ b_r \circ c_r
    - a^{\text{ref}}_s \circ b^{\text{ref}}_s \circ c^{\text{ref}}_s\|_F^2`
    (rank-one tensors: no dependence on the scale ambiguity), from inner
    products, matched by :func:`skevidence.kernels.gibbs_nmf.match_components`. See
    :func:`skevidence.kernels.gibbs_nmf.relabel_to` for why this is valid.
    """
    R = A.shape[1]
    own = np.zeros(R)
    other = np.zeros(R)
    for r in range(R):
        own[r] = np.sum(A[:, r] ** 2) * np.sum(B[:, r] ** 2) * np.sum(C[:, r] ** 2)
        other[r] = np.sum(ref_A[:, r] ** 2) * np.sum(ref_B[:, r] ** 2) * np.sum(ref_C[:, r] ** 2)
    cost = np.empty((R, R))
    for r in range(R):
        for s in range(R):
            cross = (np.sum(A[:, r] * ref_A[:, s]) * np.sum(B[:, r] * ref_B[:, s])
                     * np.sum(C[:, r] * ref_C[:, s]))
            cost[r, s] = own[r] + other[s] - 2.0 * cross
    order = match_components(cost, perms)
    if np.all(order == np.arange(R)):
        return 0
    A[:, :] = A[:, order].copy()
    B[:, :] = B[:, order].copy()
    C[:, :] = C[:, order].copy()
    return 1


@njit(cache=True, fastmath=FASTMATH)
def gibbs_parafac_sweeps(ii, jj, kk, counts, A, B, C, lam_a, lam_b, lam_c, n_sweeps, seed, stage,
                         n_fixed, block_end, target, ref_A, ref_B, ref_C, perms):
    r"""Run ``n_sweeps`` Gibbs sweeps from ``(A, B, C)``; return what Chib's method needs.

    Parameters
    ----------
    ii, jj, kk, counts : int64 arrays of shape (nnz,)
        The non-zero counts.
    A, B, C : float64 arrays of shapes (I, R), (J, R), (K, R)
        Starting state (copied, not modified).
    lam_a, lam_b, lam_c : float
    n_sweeps : int
    seed : int
        Seed of numba's ``np.random`` for this call (``0 <= seed < 2**32``).
    stage : {0, 1, 2}
        ``0``: rows ``0 .. n_fixed-1`` of A are held; the A-step's conditional
        log density at ``target`` (:math:`A^*`) is recorded for rows
        ``n_fixed .. block_end-1``. ``1``: A is held entirely, and rows
        ``0 .. n_fixed-1`` of B; B's rows ``n_fixed .. block_end-1`` are
        recorded (``target`` = :math:`B^*`). ``2``: A and B are held, and
        components ``0 .. block_end-1`` of C; the C-step's conditional log
        density of component ``block_end`` at ``target`` (:math:`C^*`) is
        recorded for each row of C (``block_end = -1``: nothing of C held,
        all components summed per row).
    n_fixed, block_end : int
    target : float64 array
        The point's factor for the stage; a ``(0, 0)`` array records nothing.
    ref_A, ref_B, ref_C : float64 arrays
        With ``stage = 0`` and ``n_fixed = 0``, every sweep ends by permuting
        the components to match this reference (:func:`relabel_to`);
        ``(0, 0)`` arrays switch it off.
    perms : int64 array of shape (R!, R) or (0, R)
        The permutations :func:`relabel_to` searches; none: greedy matching.

    Returns
    -------
    A, B, C : float64 arrays
        The final state.
    sum_x_log_v, sum_v, log_prior : float64 arrays of shape (n_sweeps,)
        Of the state entering each sweep; its log-likelihood is
        ``sum_x_log_v - sum_v - sum(lgamma(x + 1))``.
    unit_log_density : float64 array of shape (n_sweeps, n_units)
        Per recorded row and sweep, the conditional log density (see ``stage``)
        with the sources and factors the sweep's step draws from.
    A_mean, B_mean, C_mean : float64 arrays
        Mean of the states entering the sweeps, each component first moved
        to its most probable scale (:func:`modal_scales`).
    n_relabelled : int
        Sweeps that ended with a non-trivial permutation.
    """
    np.random.seed(seed)
    I, R = A.shape
    J = B.shape[0]
    K = C.shape[0]
    dims = np.array([I, J, K])
    A = A.copy()
    B = B.copy()
    C = C.copy()
    stats_a = np.zeros((I, R), dtype=np.int64)
    stats_b = np.zeros((J, R), dtype=np.int64)
    stats_c = np.zeros((K, R), dtype=np.int64)
    sum_x_log_v = np.empty(n_sweeps)
    sum_v = np.empty(n_sweeps)
    log_prior = np.empty(n_sweeps)
    if target.size == 0:
        n_units = 0
    elif stage == STAGE_C:
        n_units = K
    else:
        n_units = block_end - n_fixed
    unit_log_density = np.zeros((n_sweeps, n_units))
    const_prior = R * (I * math.log(lam_a) + J * math.log(lam_b) + K * math.log(lam_c))
    A_mean = np.zeros_like(A)
    B_mean = np.zeros_like(B)
    C_mean = np.zeros_like(C)
    relabel = ref_A.size > 0 and stage == STAGE_A and n_fixed == 0
    n_relabelled = 0
    for sweep in range(n_sweeps):
        sa = _column_sums(A)
        sb = _column_sums(B)
        sc = _column_sums(C)
        total_v = 0.0
        for r in range(R):
            c1, c2, c3 = modal_scales(dims, lam_a * sa[r], lam_b * sb[r], lam_c * sc[r])
            for i in range(I):
                A_mean[i, r] += A[i, r] * c1
            for j in range(J):
                B_mean[j, r] += B[j, r] * c2
            for k in range(K):
                C_mean[k, r] += C[k, r] * c3
            total_v += sa[r] * sb[r] * sc[r]
        log_prior[sweep] = const_prior - lam_a * sa.sum() - lam_b * sb.sum() - lam_c * sc.sum()
        sum_v[sweep] = total_v
        sum_x_log_v[sweep] = sample_sources(ii, jj, kk, counts, A, B, C, stats_a, stats_b, stats_c)
        if stage == STAGE_A:
            rate = lam_a + sb * sc
            for u in range(n_units):
                unit_log_density[sweep, u] = row_log_gamma_density(
                    target, stats_a, rate, n_fixed + u
                )
            _sample_factor(stats_a, rate, A, n_fixed, 0)
            sa = _column_sums(A)
        if stage != STAGE_C:
            rate = lam_b + sa * sc
            if stage == STAGE_B:
                for u in range(n_units):
                    unit_log_density[sweep, u] = row_log_gamma_density(
                        target, stats_b, rate, n_fixed + u
                    )
            _sample_factor(stats_b, rate, B, n_fixed if stage == STAGE_B else 0, 0)
            sb = _column_sums(B)
        rate = lam_c + sa * sb
        if stage == STAGE_C and n_units > 0:
            for k in range(K):
                if block_end < 0:
                    unit_log_density[sweep, k] = row_log_gamma_density(target, stats_c, rate, k)
                else:
                    unit_log_density[sweep, k] = _log_gamma_density(
                        target[k, block_end], stats_c[k, block_end], rate[block_end]
                    )
        _sample_factor(stats_c, rate, C, 0, max(block_end, 0) if stage == STAGE_C else 0)
        if stage == STAGE_A and n_fixed == 0:
            _rescale_abc(A, B, C, lam_a, lam_b, lam_c)
            if relabel:
                n_relabelled += relabel_to(A, B, C, ref_A, ref_B, ref_C, perms)
        elif stage == STAGE_A or (stage == STAGE_B and n_fixed == 0):
            _rescale_bc(B, C, lam_b, lam_c)
    if n_sweeps > 0:
        A_mean /= n_sweeps
        B_mean /= n_sweeps
        C_mean /= n_sweeps
    return (A, B, C, sum_x_log_v, sum_v, log_prior, unit_log_density, A_mean, B_mean, C_mean,
            n_relabelled)
