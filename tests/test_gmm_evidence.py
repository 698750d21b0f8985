"""The mixture evidence against exact references.

Two references that share no code with the model:

- on tiny data, the sum over every assignment of the conjugate evidences
  (``gmm_exact.py``), itself checked against two-dimensional quadrature of the
  model's own likelihood and prior (normalising constants and Jacobians);
- on separated clusters, the term of the true partition under all its
  labellings, a strict lower bound of the evidence that is tight when no point
  is ambiguous (full-data AIS on 100 of these points agrees within 0.4 nats).
"""

import warnings

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp
from sklearn.datasets import make_blobs

from gmm_exact import _nig_log_marginal, gmm_exact_log_evidence
from skevidence import BayesianGMM, EvidenceGridSearch
from skevidence.models import DiagonalGaussianMixture

#: The clusters of the defect report: four unit-variance blobs 8 to 12 standard deviations apart.
CENTERS = [[-6, 0], [0, 5], [6, -1], [1, -6]]


def _tiny_data():
    rng = np.random.default_rng(0)
    return np.concatenate([rng.normal(-1.5, 0.5, (5, 1)), rng.normal(1.5, 0.5, (5, 1))])


def partition_log_evidence(X, labels, n_components, *, mean_precision=0.25, var_shape=1.0, var_scale=1.0):
    r"""Log of the evidence's terms for the partition ``labels`` under all its labellings by K components.

    :math:`\frac{K!}{(K-G)!}\, p(z)\prod_g p(x_g)` with :math:`G` occupied groups,
    the Dirichlet(1)-multinomial :math:`p(z)` and each group's normal-inverse-gamma
    marginal: a lower bound of :math:`\log p(X)`.
    """
    groups = np.unique(labels)
    n, k = X.shape[0], n_components
    counts = np.array([np.sum(labels == g) for g in groups])
    log_pz = gammaln(k) - gammaln(n + k) + gammaln(counts + 1.0).sum()
    log_labellings = gammaln(k + 1) - gammaln(k - groups.size + 1)
    marginals = sum(_nig_log_marginal(X[labels == g], mean_precision, var_shape, var_scale) for g in groups)
    return log_pz + log_labellings + marginals


def _gauss_legendre(lo, hi, panels, order):
    """Nodes and weights of Gauss-Legendre's rule of ``order`` points on each of ``panels`` equal panels."""
    x, w = np.polynomial.legendre.leggauss(order)
    edges = np.linspace(lo, hi, panels + 1)
    half = np.diff(edges)[:, None] / 2
    return ((edges[:-1, None] + half) + half * x).ravel(), (half * w).ravel()


def test_enumeration_matches_quadrature_of_the_model():
    # K = 1 in one dimension: integrate the model's likelihood times its prior
    # over (mu, log sigma^2), the weight's logit held at 0 (its prior density
    # there divided out). This checks the model's normalising constants and its
    # Jacobian against the conjugate formula of the enumeration. The rule is a
    # product of panelled Gauss-Legendre rules, converged where two orders agree.
    X = _tiny_data()
    model = DiagonalGaussianMixture(1, 1)
    log_p_eta0 = -1.0  # Gamma(1, 1) density of g = e^eta at eta = 0, times the Jacobian e^eta
    values = []
    for order in (10, 20):
        mu, w_mu = _gauss_legendre(-8.0, 8.0, 16, order)
        s, w_s = _gauss_legendre(-10.0, 8.0, 18, order)
        M, S = np.meshgrid(mu, s, indexing="ij")
        thetas = np.column_stack([np.zeros(M.size), M.ravel(), S.ravel()])
        log_f = model.log_likelihood_particles(thetas, X).sum(axis=-1) + model.log_prior_particles(thetas)
        values.append(logsumexp(log_f - log_p_eta0 + np.log(np.outer(w_mu, w_s)).ravel()))
        # The stacked evaluation is the model's own, point by point.
        for theta, value in zip(thetas[:: thetas.shape[0] // 5], log_f[:: thetas.shape[0] // 5]):
            assert model.log_likelihood(theta, X).sum() + model.log_prior(theta) == pytest.approx(value, abs=1e-9)
    assert values[0] == pytest.approx(values[1], abs=1e-8)
    assert values[1] == pytest.approx(gmm_exact_log_evidence(X, 1), abs=1e-6)


@pytest.mark.parametrize("n_components", [1, 2, 3])
@pytest.mark.parametrize("method", ["sgais", "ais"])
def test_evidence_matches_enumeration_on_tiny_data(n_components, method, seed):
    X = _tiny_data()
    exact = gmm_exact_log_evidence(X, n_components)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = BayesianGMM(n_components=n_components, method=method, random_state=seed).fit(X).result_
    assert abs(result.log_evidence - exact) < 4 * result.std_error + 0.5


def test_separated_clusters_are_not_over_selected(seed):
    # With the general learning rate 0.1 the K = 4 evidence fell about 40 nats
    # below the true partition's term within the first 100 points, K = 6 less,
    # and the search picked 6.
    X, labels = make_blobs(n_samples=400, centers=CENTERS, cluster_std=1.0, random_state=11)
    evidences = {}
    for k in (4, 6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = BayesianGMM(n_components=k, random_state=seed).fit(X).result_
        bound = partition_log_evidence(X, labels, k)
        assert result.log_evidence > bound - 4 * result.std_error - 1.0, (k, result, bound)
        assert result.log_evidence < bound + 4 * result.std_error + 3.0, (k, result, bound)
        evidences[k] = result.log_evidence
    assert evidences[4] > evidences[6]


@pytest.mark.slow
@pytest.mark.parametrize("n_clusters", [3, 4, 5])
def test_search_on_separated_blobs_picks_their_number(n_clusters):
    # The 4-blob set is the defect report's; the search picked 6 there.
    centers = CENTERS + [[-6, -7]] if n_clusters == 5 else CENTERS[:n_clusters]
    X, _ = make_blobs(n_samples=3000, centers=centers, cluster_std=1.0, random_state=11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = EvidenceGridSearch(BayesianGMM(random_state=0), {"n_components": [1, 2, 3, 4, 5, 6]}).fit(X)
    assert search.best_params_ == {"n_components": n_clusters}
