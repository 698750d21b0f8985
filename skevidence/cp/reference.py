r"""The reference of referenced TI: a product of Gammas fitted at a posterior mode, and the search for the mode.

Mean-field variational Bayes for the Poisson likelihood
(:func:`variational_reference`: the latent-source updates of Cemgil 2009)
and a Laplace fit in :math:`\log\theta` for the Gamma family
(:func:`laplace_reference`), each from several random starts: a
factorisation's posterior has many modes beyond its relabellings, and
:func:`mode_search_error` says what a search of that effort misses.
"""

import math

import numpy as np
from scipy.special import digamma, polygamma
from sklearn.utils import check_random_state

from .data import CPData
from .kernels.fit import _TINY, map_fit
from .kernels.lbfgs import PHI_BOUND, laplace_mode
from .kernels.passes import fisher_pass
from .kernels.vb import vb_sweeps
from .model import check_prior_rates

__all__ = ["laplace_reference", "mode_search_error", "moment_reference", "variational_reference"]

#: VB stops when the bound moves less than this (relative), or after _VB_MAX_ITER sweeps.
_VB_RTOL = 1e-7
_VB_MAX_ITER = 1000

# The search for the reference's mode stops below this share of tol, leaving the chains' pieces at
# least the same share (the two add in quadrature): a search stopped just below tol would leave the
# chains a sliver (0.99 of tol=1 leaves them 0.14, up to 256 times the first round's draws), while
# starts cost a fraction of a round (a 12x10x8 tensor at rank 6: 0.13 s a start, 21 s the first
# round; its mode piece 0.99, 0.51, 0.28 at 16, 32, 64 starts).
_SEARCH_SHARE = 1.0 / math.sqrt(2.0)

#: Sweeps of multiplicative updates that take a start to the posterior's mode before the Laplace fit, and the
#: relative change of the log posterior at which they stop.
_MAP_MAX_ITER = 200
_MAP_RTOL = 1e-6

#: Sweeps of multiplicative updates before a VB fit: they choose the start's basin, and VB's own sweeps (with their
#: closed-form moves along the scale ridges, which the updates lack) converge within it. On P5's tensor (10^6
#: non-zeros) at ranks 3, 6 and 11, VB reaches the same bound (within 0.1 nat) after 25 to 400 of them, which take
#: 1.5 to 18 s a start. Where VB does not converge within _VB_MAX_ITER (the speech matrix read as 16-bit counts,
#: rank 32), the basin a start reaches can change with their count by millions of nats, as it does with the start:
#: the mode-search piece says so.
_VB_MAP_ITER = 50

#: Iterations of a Laplace fit's L-BFGS in :class:`~skevidence.cp.rti.RankRun`: its first search stops at the
#: first count, and each start that stopped there goes on for up to the second before the rank's ladders run (in
#: a rank selector, only a rank still in the running runs them). On the speech matrix (1660 x 257) at rank 256,
#: L-BFGS takes 1,400 iterations (30 ms each) to gain 7,500 nats over the multiplicative updates, 5,000 of them
#: in the first 200: ranks that far apart need no more to be told apart.
_LAPLACE_MAX_ITER = (250, 2000)

def as_data(X, kappa=0.0, floor=0.0):
    """``X`` as :class:`~skevidence.cp.data.CPData` (prepared data pass through)."""
    return X if isinstance(X, CPData) else CPData.from_array(X, kappa, floor=floor)


def _row_rates(prior_rates, shape):
    """Every factor row's prior rate, the modes' rows stacked."""
    return np.repeat(check_prior_rates(prior_rates, len(shape)), shape)


def _random_start(data, R, rng, least_total):
    """Random factors whose product has about the data's mean (``least_total`` bounds the total from below)."""
    scale = (max(data.total, least_total) / (R * math.prod(data.shape))) ** (1.0 / len(data.shape))
    return scale * rng.gamma(2.0, 0.5, size=(data.offsets[-1], R))


def _split_start(F, R, rng):
    r"""A start of rank ``R`` from the factors ``F`` of a lower rank: its largest components split in two.

    A component :math:`r` becomes :math:`(u \odot f^{(1)}_r, f^{(2)}_r, \dots)` and
    :math:`((1 - u) \odot f^{(1)}_r, f^{(2)}_r, \dots)` with :math:`u` uniform on
    :math:`(0.25, 0.75)` per row: the intensity is the same, the two parts differ.
    """
    F = np.array(F, dtype=np.float64)
    while F.shape[1] < R:
        r = int(np.argmax(np.log(np.maximum(np.abs(F), 1e-300)).sum(axis=0)))  # the largest geometric mean
        u = rng.uniform(0.25, 0.75, size=F.shape[0])
        part = F[:, r].copy()
        F[:, r] = u * part
        F = np.column_stack([F, (1.0 - u) * part])
    return F[:, :R]


def _mode(data, R, rates, start, a, max_iter=_MAP_MAX_ITER):
    """The posterior mode in the factors (``a = 1``) or their logs (``a = 2``) from ``start``, by at most
    ``max_iter`` sweeps of multiplicative updates (:func:`~skevidence.cp.kernels.fit.map_fit`)."""
    F = np.ascontiguousarray(np.maximum(start, _TINY), dtype=np.float64)
    dense2, X, coords, vals, offsets, kappa, floor = data.pass_args()
    map_fit(dense2, X, coords, vals, F, offsets, kappa, floor, rates, float(a), max_iter, _MAP_RTOL)
    return F


def vb_fit(data, R, rates, start):
    """One mean-field VB fit from the posterior mode found from ``start``: ``(bound, alpha, beta, True)``
    (:func:`~skevidence.cp.kernels.vb.vb_sweeps`)."""
    alpha = np.full((data.offsets[-1], R), 1.0)
    beta = alpha / np.maximum(_mode(data, R, rates, start, 1.0, _VB_MAP_ITER), 1e-12 * np.max(start))
    dense2, X, coords, vals, offsets, _, _ = data.pass_args()
    bound, _ = vb_sweeps(dense2, X, coords, vals, offsets, data.constant, rates, alpha, beta, _VB_MAX_ITER, _VB_RTOL,
                         data.single(R))
    return bound, alpha, beta, True


def variational_reference(X, n_components, prior_rates=1.0, *, n_starts=8, random_state=None):
    r"""Mean-field variational Bayes for Poisson CP: the best of ``n_starts`` fits.

    :math:`q(F) = \prod \mathrm{Gamma}(F^{(m)}_{ir}; \alpha^{(m)}_{ir}, \beta^{(m)}_{ir})`
    with the latent-source updates of Cemgil (2009) under exponential priors,
    each sweep ended by a closed-form move of every component along its scale
    ridges (:mod:`~skevidence.cp.kernels.vb`); non-integer data are accepted (the bound is then that of the Poisson
    density extended by :math:`\Gamma(x + 1)`).

    Returns
    -------
    bound : float
        The best variational lower bound on :math:`\log p(X)`.
    alpha, beta : ndarray of shape (sum of the mode sizes, n_components)
        Shapes and rates of ``q``, the modes' rows stacked.
    bounds : ndarray of shape (n_starts,)
        Every start's bound (the spread shows how many optima there are).
    """
    data = as_data(X)
    return _best_of_starts(vb_fit, data, n_components, prior_rates, n_starts, random_state)


def _best_of_starts(fit, data, R, prior_rates, n_starts, random_state):
    """``(best bound, its alpha, its beta, every start's bound)`` of ``n_starts`` random starts of ``fit``."""
    rng = check_random_state(random_state)
    rates = _row_rates(prior_rates, data.shape)
    fits = [fit(data, R, rates, _random_start(data, R, rng, _START_TOTAL[fit])) for _ in range(n_starts)]
    bounds = np.array([f[0] for f in fits])
    best = int(np.argmax(bounds))
    return bounds[best], fits[best][1], fits[best][2], bounds


def mode_search_error(bounds):
    r"""What a search of half the starts misses: :math:`E|\max A - \max B|` over the splits of the starts.

    Split the starts' bounds at random into two halves :math:`A` and
    :math:`B` (sizes :math:`\lfloor n/2 \rfloor` and :math:`\lceil n/2
    \rceil`): two independent searches of equal effort. The difference of
    their best bounds is one draw of what such a search misses; this is its
    average over every split, in closed form from the sorted bounds
    :math:`b_1 \ge b_2 \ge \dots`: the half without :math:`b_1` has its
    best at :math:`b_j`, :math:`j` the first index it holds. One fixed split
    has the same expectation (the starts are exchangeable) but is a single
    draw of it: on the bundled clip at rank 16 the first four of eight starts
    and the last four happened to hold bounds 13 nats apart, while the best
    of eight lay 185 nats below the best of other seeds' searches; the
    average over splits is 55 there.

    Parameters
    ----------
    bounds : array-like of shape (n_starts,)
        The best bound (ELBO or Laplace log-joint) each random start reached.

    Returns
    -------
    error : float
        The average difference in nats; 0 for fewer than two starts, or when
        every start reached the same bound.

    Examples
    --------
    >>> from skevidence.cp import mode_search_error
    >>> mode_search_error([0.0, 0.0, 0.0, 10.0])  # every split misses the lone best by 10
    10.0
    >>> round(mode_search_error([10.0, 10.0, 0.0, 0.0]), 4)  # both bests in one half: 1 split in 3
    3.3333
    """
    b = np.asarray(bounds, dtype=np.float64)
    b = np.sort(b[np.isfinite(b)])[::-1]  # a diverged start is no search
    n = b.size
    if n < 2:
        return 0.0
    total = 0.0
    sizes = {n // 2, n - n // 2}  # one size when n is even
    for size in sizes:
        # b_1 lies in a half of this size with probability size / n.
        weight = size / n if len(sizes) == 2 else 1.0
        same, other = size - 1, n - size
        p_before = 1.0  # P(b_2 .. b_{j-1} all lie in b_1's half)
        for j in range(1, n):
            left = same + other
            total += weight * p_before * (other / left) * (b[0] - b[j])
            p_before *= same / left
            if same == 0:
                break
            same -= 1
    return float(total)


def moment_reference(sums, n, alpha):
    r"""The Gammas that match draws' means of :math:`\theta` and :math:`\log\theta`, never narrower than a fit's.

    Matching these moments minimises :math:`\mathrm{KL}(p\,\|\,q)` over
    Gammas (:ref:`Minka 2002 <ref-minka2002>`): the shape solves
    :math:`\log a - \psi(a) = \log\bar\theta - \overline{\log\theta}`
    (Newton's method from Minka's closed-form start) and the rate is
    :math:`a/\bar\theta`. A fit's Gammas (VB, Laplace) are as narrow as each
    coordinate is with the others held; the cap keeps a coordinate the draws
    barely moved no narrower than that.

    Parameters
    ----------
    sums : ndarray of shape (2, ...)
        The draws' sums of :math:`\theta` and of :math:`\log\theta`, entry by entry.
    n : int
        The number of draws.
    alpha : ndarray of shape sums.shape[1:]
        The fit's shapes: the largest the result takes.

    Returns
    -------
    alpha, beta : ndarray of shape sums.shape[1:]
        The shapes and rates.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence.cp import moment_reference
    >>> x = np.random.default_rng(0).gamma(3.0, 1 / 2.0, size=(100000, 1))
    >>> a, b = moment_reference(np.stack([x.sum(0), np.log(x).sum(0)]), x.shape[0], np.full(1, np.inf))
    >>> np.round([a[0], b[0]], 1).tolist()
    [3.0, 2.0]
    """
    mean = sums[0] / n
    gap = np.maximum(np.log(mean) - sums[1] / n, 1e-12)  # > 0 by Jensen's inequality, unless the draws are equal
    a = (3.0 - gap + np.sqrt((gap - 3.0) ** 2 + 24.0 * gap)) / (12.0 * gap)
    for _ in range(6):  # log a - digamma(a) is convex and decreasing: Newton converges from Minka's start
        a = np.maximum(a - (np.log(a) - digamma(a) - gap) / (1.0 / a - polygamma(1, a)), 0.5 * a)
    a = np.minimum(a, alpha)
    return a, a / mean


def laplace_fit(data, R, rates, start, max_iter=_LAPLACE_MAX_ITER[1], polish=False):
    r"""One Laplace fit in :math:`\log\theta` from the factors ``start``: ``(laplace bound, alpha, beta,
    whether L-BFGS converged within max_iter)``; ``polish``: L-BFGS goes on from ``start``, where an earlier fit's
    stopped (no multiplicative updates first)."""
    phi = np.log(start if polish else _mode(data, R, rates, start, 2.0))
    dense2, X, coords, vals, offsets, kappa, floor = data.pass_args()
    value, n_iter = laplace_mode(dense2, X, coords, vals, offsets, kappa, floor, data.constant, rates, phi,
                                 max_iter, _VB_RTOL * 1e-2, 1e-6)
    theta = np.exp(np.clip(phi, -PHI_BOUND, PHI_BOUND))
    fisher = np.empty_like(theta)
    fisher_pass(dense2, X, coords, theta, offsets, kappa, floor, fisher)
    # Curvature of the log posterior in phi at its mode: 1 (from the prior and the Jacobian, where the
    # gradient vanishes) plus the likelihood's expected curvature; a Gamma(P, P / theta) has that
    # curvature and that mode in phi.
    precision = 1.0 + theta**2 * fisher
    bound = value + 0.5 * float(np.sum(np.log(2.0 * np.pi / precision)))
    return bound, precision, precision / theta, n_iter < max_iter


#: The least total of each fit's random start (:func:`_random_start`).
_START_TOTAL = {vb_fit: 1.0, laplace_fit: 1e-300}


def laplace_reference(X, n_components, prior_rates=1.0, *, likelihood_shape=1.0, n_starts=8, random_state=None):
    r"""A product-of-Gammas reference for Gamma-likelihood CP models, from a Laplace fit in :math:`\log\theta`.

    The Gamma (and exponential) likelihood of real-valued entries has no
    latent-source augmentation, so the variational updates of
    :func:`variational_reference` do not apply. Instead the log posterior of
    :math:`\varphi = \log\theta` is maximised (L-BFGS, ``n_starts`` random
    starts) and every factor entry gets the Gamma whose density in
    :math:`\varphi` has the same mode and the same curvature there:
    :math:`\mathrm{Gamma}(P, P/\hat\theta)` with :math:`P = 1 +
    \hat\theta^2\,\kappa\sum_e (\partial V_e/\partial\theta)^2/V_e^2` (the
    likelihood's expected curvature, which is never negative). As with
    mean-field VB the reference ignores correlations between entries;
    referenced TI corrects for whatever it misses.

    Returns
    -------
    bound : float
        The best start's Laplace approximation of :math:`\log p(X)` (diagonal curvature).
    alpha, beta : ndarray of shape (sum of the mode sizes, n_components)
        Shapes and rates of ``q``, the modes' rows stacked.
    bounds : ndarray of shape (n_starts,)
        Every start's Laplace value.
    """
    data = as_data(X, likelihood_shape)
    return _best_of_starts(laplace_fit, data, n_components, prior_rates, n_starts, random_state)


