"""The exponential and Gamma likelihoods of spectrograms: kernels against NumPy twins, the evidence against
brute-force importance sampling, scale invariance with ``prior_rate="auto"``, counting notes, bad input."""

import functools
import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import sparse, stats
from scipy.special import gammaln, logsumexp

from cp_twins import naive_intensity, numeric_gradient, stacked_factors
from naive_cp import log_density
from skevidence import BayesianNMFRankSelector, PoissonNMF
from skevidence.cp.data import CPData
from skevidence.cp.kernels.passes import fisher_pass, log_likelihood
from skevidence.cp.likelihood import dense_entries, entry
from skevidence.cp.model import auto_prior_rate
from skevidence.cp.reference import laplace_reference
from skevidence.cp.rti import referenced_ti_log_evidence
from skevidence.datasets import make_harmonic_melody

# ----------------------------------------------------------------------------- NumPy twins


def naive_log_likelihood(X, F, offsets, kappa, floor=0.0):
    V = naive_intensity(F, offsets, X.shape) + floor
    return float(np.sum(stats.gamma.logpdf(X, kappa, scale=V / kappa)))


@pytest.mark.parametrize("shape", [(5, 4), (4, 3, 5)])
@pytest.mark.parametrize(("kappa", "floor"), [(1.0, 0.0), (2.5, 0.0), (1.0, 0.3), (2.5, 0.3)])
@pytest.mark.parametrize("as_sparse", [False, True])
def test_gamma_log_likelihood_matches_numpy(shape, kappa, floor, as_sparse):
    rng = np.random.default_rng(0)
    R = 3
    F, offsets = stacked_factors(rng, shape, R)
    X = rng.gamma(kappa, naive_intensity(F, offsets, shape) / kappa)
    # A sparse input is read densely: every entry is an observation.
    data = CPData.from_array(sparse.coo_array(X) if as_sparse and len(shape) == 2 else X, kappa, floor=floor)
    dense2, Xd, coords, vals, _, _, _ = data.pass_args()
    grad = np.empty_like(F)
    sums = np.empty((len(shape), R))
    value = log_likelihood(dense2, Xd, coords, vals, F, offsets, kappa, floor, data.constant, grad, sums, True)
    assert value == pytest.approx(naive_log_likelihood(X, F, offsets, kappa, floor), rel=1e-12)
    expected = numeric_gradient(lambda G: naive_log_likelihood(X, G, offsets, kappa, floor), F)
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-6)
    # Without the value, the same gradient.
    grad2 = np.empty_like(F)
    log_likelihood(dense2, Xd, coords, vals, F, offsets, kappa, floor, data.constant, grad2, sums, False)
    np.testing.assert_allclose(grad2, grad, rtol=1e-12)


@pytest.mark.parametrize("shape", [(5, 4), (4, 3, 5)])
def test_fisher_pass_matches_numpy(shape):
    rng = np.random.default_rng(1)
    kappa, R = 2.0, 3
    F, offsets = stacked_factors(rng, shape, R)
    X = rng.gamma(kappa, naive_intensity(F, offsets, shape) / kappa)
    data = CPData.from_array(X, kappa)
    dense2, Xd, coords, _, _, _, floor = data.pass_args()
    out = np.empty_like(F)
    fisher_pass(dense2, Xd, coords, F, offsets, kappa, floor, out)
    # The expected curvature: kappa * sum_e (dV_e / dF)^2 / V_e^2, by finite differences of V.
    V = naive_intensity(F, offsets, shape)
    expected = np.zeros_like(F)
    for idx in np.ndindex(F.shape):
        Fp = F.copy()
        Fp[idx] += 1e-6
        dV = (naive_intensity(Fp, offsets, shape) - V) / 1e-6
        expected[idx] = kappa * np.sum(dV**2 / V**2)
    np.testing.assert_allclose(out, expected, rtol=1e-4)


def test_entry_density_and_derivative_match_scipy():
    rng = np.random.default_rng(2)
    V = rng.gamma(2.0, 1.0, size=(4, 5))
    X = rng.gamma(3.0, V / 3.0)
    np.testing.assert_allclose(log_density(X, V, 3.0), stats.gamma.logpdf(X, 3.0, scale=V / 3.0), rtol=1e-12)
    h = 1e-7
    numeric = (log_density(X, V + h, 3.0) - log_density(X, V - h, 3.0)) / (2 * h)
    scalar = getattr(entry, "py_func", entry)
    derivative = np.vectorize(lambda x, v: scalar(x, v, 3.0, False)[1])(X, V)
    np.testing.assert_allclose(derivative, numeric, rtol=1e-5)


@pytest.mark.parametrize("kappa", [0.0, 1.0, 2.5])
def test_dense_entries_sum_entry_over_the_matrix(kappa):
    """The dense pass's sum (the Gamma family's logarithms taken of products of means) is :func:`entry`'s, to
    rounding; means whose product leaves the double range, and a mean that underflowed, as :func:`entry`."""
    scalar = getattr(entry, "py_func", entry)
    rng = np.random.default_rng(5)
    V = rng.gamma(2.0, 1.0, size=(5, 19))
    V[1, :10] = 1e-80  # eight tiny means: a product below 1e-300
    V[2, 3:12] = 1e90  # and eight huge ones
    X = rng.poisson(2.0, size=V.shape).astype(np.float64) if kappa == 0.0 else rng.gamma(2.0, 1.0, size=V.shape)
    floor = 0.0 if kappa == 0.0 else 1e-3
    for with_value in (True, False):
        pairs = [scalar(x, v + floor, kappa, with_value) for x, v in zip(X.ravel(), V.ravel())]
        out = V.copy()
        total = dense_entries(X, out, floor, kappa, with_value)
        assert total == pytest.approx(sum(p[0] for p in pairs), rel=1e-13)
        np.testing.assert_allclose(out.ravel(), [p[1] for p in pairs], rtol=1e-13)
    V[4, 7], X[4, 7] = -2 * floor - 1.0, 1.0  # an underflowed mean
    out = V.copy()
    assert dense_entries(X, out, floor, kappa, True) == -np.inf
    assert out[4, 7] == np.inf

def test_data_of_the_gamma_likelihood():
    rng = np.random.default_rng(3)
    X = rng.exponential(size=(6, 5))
    X[0, 0] = 0.0  # a zero is an observation of the exponential likelihood, given a noise floor
    with pytest.raises(ValueError, match="noise_floor"):
        CPData.from_array(X, 1.0)
    data = CPData.from_array(sparse.csr_array(X), 1.0, floor=0.1)
    assert data.X is not None and data.vals.size == X.size  # sparse input is read densely, every entry listed
    assert data.constant == 0.0  # the exponential density's constant
    with pytest.raises(ValueError, match="zero entries"):
        CPData.from_array(X, 2.0)
    with pytest.raises(ValueError, match="floor"):
        CPData.from_array(X, 1.0, floor=-1.0)


# ----------------------------------------------------------------------------- against brute force


def _brute_force_log_evidence(X, R, lam, kappa, seed, floor=0.0, n_draws=400_000, n_batches=8):
    """Importance sampling from the Laplace reference widened sixfold, over every relabelling; no MCMC.

    The mean of an entry is ``WH + floor``. Returns the estimate and its
    standard error (spread of ``n_batches`` batches).
    """
    rng = np.random.default_rng(seed)
    data = CPData.from_array(X, kappa, floor=floor)
    _, alpha, beta, _ = laplace_reference(data, R, lam, random_state=seed)
    a, b = alpha / 6.0, beta / 6.0  # same mean, six times the variance
    I = X.shape[0]
    perms = list(itertools.permutations(range(R)))
    const = np.sum(kappa * np.log(kappa) - gammaln(kappa) + (kappa - 1.0) * np.log(np.where(X > 0, X, 1.0)))
    estimates = []
    for _ in range(n_batches):
        n = n_draws // n_batches
        # A draw from q_sym: a labelling at random, then the product of Gammas it relabels.
        which = rng.integers(len(perms), size=n)
        theta = rng.gamma(a, 1.0 / b, size=(n,) + a.shape)
        for k, p in enumerate(perms):
            theta[which == k] = theta[which == k][:, :, list(p)]
        log_q = logsumexp([np.sum(a[:, list(p)] * np.log(b[:, list(p)]) - gammaln(a[:, list(p)])
                                  + (a[:, list(p)] - 1.0) * np.log(theta) - b[:, list(p)] * theta, axis=(1, 2))
                           for p in perms], axis=0) - math.log(len(perms))
        V = np.einsum("nir,njr->nij", theta[:, :I], theta[:, I:]) + floor
        log_lik = const + np.sum(-kappa * (np.log(V) + X / V), axis=(1, 2))
        log_prior = np.sum(np.log(lam) - lam * theta, axis=(1, 2))
        estimates.append(logsumexp(log_lik + log_prior - log_q) - math.log(n))
    estimates = np.array(estimates)
    return estimates.mean(), estimates.std(ddof=1) / math.sqrt(n_batches)


@functools.cache
def _brute_force_case(shape, R, kappa, seed, floor=0.0):
    rng = np.random.default_rng(seed)
    V = rng.exponential(size=(shape[0], R)) @ rng.exponential(size=(R, shape[1]))
    X = rng.gamma(kappa, (V + floor) / kappa)
    if floor:
        X[0] = 0.0  # a silent frame: exact zeros, which only the floor makes scorable
    return X, *_brute_force_log_evidence(X, R, 1.0, kappa, seed, floor)


#: (shape, rank, kappa, seed, noise floor)
BRUTE_FORCE_CASES = [((3, 3), 1, 1.0, 0, 0.0), ((3, 3), 1, 1.0, 1, 0.0), ((3, 3), 1, 3.0, 0, 0.0),
                     ((4, 3), 2, 1.0, 0, 0.0), ((3, 3), 1, 1.0, 2, 0.3), ((4, 3), 2, 1.0, 1, 0.2)]


@pytest.mark.parametrize(("shape", "R", "kappa", "seed", "floor"), BRUTE_FORCE_CASES)
def test_evidence_agrees_with_brute_force(shape, R, kappa, seed, floor):
    X, exact, exact_se = _brute_force_case(shape, R, kappa, seed, floor)
    result = referenced_ti_log_evidence(X, R, 1.0, likelihood="gamma", likelihood_shape=kappa, noise_floor=floor,
                                        random_state=seed)
    assert abs(result.log_evidence - exact) <= 3.0 * math.hypot(result.std_error, exact_se)
    assert result.diagnostics["reference_fit"] == "laplace"


@pytest.mark.parametrize("floor", [0.0, 0.4])
def test_rank1_evidence_agrees_with_exact_integration(floor):
    """A 1 x 2 matrix at rank 1: log p(X) by three-dimensional quadrature, against referenced TI."""
    from scipy import integrate

    X = np.array([[0.0 if floor else 0.7, 2.1]])

    def integrand(h2, h1, w):  # the joint density: Exp(1) priors, exponential entries of mean w h + floor
        v1, v2 = w * h1 + floor, w * h2 + floor
        return math.exp(-w - h1 - h2 - X[0, 0] / v1 - X[0, 1] / v2) / (v1 * v2)

    value, error = integrate.tplquad(integrand, 0, np.inf, 0, np.inf, 0, np.inf, epsabs=1e-11, epsrel=1e-9)
    exact = math.log(value)
    result = referenced_ti_log_evidence(X, 1, 1.0, likelihood="exponential", noise_floor=floor, random_state=0)
    assert error < 1e-3 * value
    assert abs(result.log_evidence - exact) <= 3.0 * result.std_error, (result.log_evidence, exact)


# ----------------------------------------------------------------------------- scale invariance


def test_auto_prior_rate_follows_the_scale():
    rng = np.random.default_rng(3)
    X = rng.exponential(size=(6, 5))
    for R in (1, 3):
        rate = auto_prior_rate(X, R)
        assert R / rate**2 == pytest.approx(X.mean(), rel=1e-12)  # the prior mean of WH is the data's
        assert auto_prior_rate(100.0 * X, R) == pytest.approx(rate / 10.0, rel=1e-12)
    T = rng.exponential(size=(4, 5, 6))
    assert 2 / auto_prior_rate(T, 2) ** 3 == pytest.approx(T.mean(), rel=1e-12)


def test_evidence_is_scale_free_with_the_auto_prior():
    """log Z(cX) = log Z(X) - N log c at every rank, within the stated errors."""
    rng = np.random.default_rng(4)
    X = rng.exponential(rng.exponential(size=(30, 2)) @ rng.exponential(size=(2, 25)))
    for R in (1, 2, 3):
        results = []
        for c in (1.0, 1e-4):  # peaks 1 and 0.01 in amplitude
            est = PoissonNMF(R, prior_rate="auto", likelihood="exponential", random_state=R).fit(c * X)
            results.append((est.log_evidence_ + X.size * math.log(c), est.log_evidence_std_))
            np.testing.assert_allclose(est.prior_rates_, auto_prior_rate(c * X, R), rtol=1e-12)
        (z0, s0), *rest = results
        for z, s in rest:
            assert abs(z - z0) <= 3.0 * math.hypot(s, s0)


def test_the_chosen_rank_does_not_depend_on_the_level():
    x, _ = make_harmonic_melody(2, random_state=0, sample_rate=4000, note_duration=0.2)
    from skevidence.audio import SpectrogramTransformer

    chosen, gaps = [], []
    for peak in (1.0, 0.1, 0.01):
        X = SpectrogramTransformer(n_fft=128, scale=1.0, power=2).fit_transform([peak * x / np.abs(x).max()])
        sel = BayesianNMFRankSelector(ranks=(1, 2, 3), prior_rate="auto", likelihood="exponential",
                                      random_state=0).fit(X)
        chosen.append(sel.best_rank_)
        gaps.append((sel.log_evidence_ - sel.log_evidence_[0], sel.log_evidence_std_))
    assert len(set(chosen)) == 1
    (d0, s0), *rest = gaps
    for d, s in rest:
        assert np.all(np.abs(d - d0) <= 3.0 * np.hypot(s, s0) + 3.0 * s0[0] + 3.0 * s[0])


# ----------------------------------------------------------------------------- counting notes


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 4])
def test_counting_notes(k):
    from skevidence.audio import SpectrogramTransformer

    x, _ = make_harmonic_melody(k, random_state=k)
    X = SpectrogramTransformer(n_fft=256, scale=1.0, power=2).fit_transform([x])
    sel = BayesianNMFRankSelector(ranks=tuple(range(max(1, k - 1), k + 4)), prior_rate="auto",
                                  likelihood="exponential", random_state=0).fit(X)
    assert k <= sel.best_rank_ <= k + 2


# ----------------------------------------------------------------------------- estimator and bad input


def test_estimator_fits_and_transforms():
    rng = np.random.default_rng(5)
    X = rng.exponential(rng.exponential(size=(20, 2)) @ rng.exponential(size=(2, 15)))
    est = PoissonNMF(2, prior_rate="auto", likelihood="exponential", random_state=0).fit(X)
    assert est.components_.shape == (2, 15)
    W = est.transform(X)
    assert W.shape == (20, 2) and np.all(W > 0) and np.all(np.isfinite(W))
    assert est.result_.diagnostics["likelihood"] == "exponential"
    gamma = PoissonNMF(2, likelihood="gamma", likelihood_shape=2.0, random_state=0).fit(X)
    assert np.isfinite(gamma.log_evidence_) and gamma.result_.diagnostics["likelihood_shape"] == 2.0


@pytest.mark.parametrize(("params", "message"), [
    (dict(method="chib"), "Poisson likelihood's latent counts"),
    (dict(method="smc"), "Poisson likelihood's latent counts"),
])
def test_methods_that_need_poisson_say_so(params, message):
    X = np.random.default_rng(6).exponential(size=(6, 5))
    with pytest.raises(ValueError, match=message):
        PoissonNMF(1, likelihood="exponential", **params).fit(X)


@pytest.mark.parametrize(("X", "likelihood", "message"), [
    (np.array([[1.0, np.nan], [1.0, 2.0]]), "exponential", "NaN"),
    (np.zeros((3, 3)), "exponential", "zero everywhere"),
    (np.array([[1.0, 0.0], [1.0, 2.0]]), "gamma", "zero entries"),
])
def test_bad_input_is_named(X, likelihood, message):
    with pytest.raises(ValueError, match=message):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            PoissonNMF(1, likelihood=likelihood, likelihood_shape=2.0).fit(X)
