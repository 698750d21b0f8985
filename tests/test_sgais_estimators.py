"""BayesianLogisticRegression and BayesianGMM: API checks, predictions, evidence, partial_fit."""

import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln, logsumexp
from sklearn.base import clone
from sklearn.datasets import make_blobs, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from skevidence.estimators import gmm as gmm_module
from skevidence.estimators import logistic_regression as lr_module
from skevidence.estimators._base import ContinuousEvidenceMixin
from skevidence.estimators.gmm import BayesianGMM, relabel_particles
from skevidence.estimators.logistic_regression import BayesianLogisticRegression
from skevidence.evidence.sgais import chunk_boundaries
from skevidence.models.gaussian_mixture import DiagonalGaussianMixture
from skevidence.models.softmax_regression import SoftmaxRegression

# Small runs: the common checks test the API, not the accuracy.
FAST_SGAIS = dict(method_params=dict(n_particles=4, target_ess=1.5, n_steps=2, resample=False), random_state=0)
FAST_AIS = dict(method="ais", method_params=dict(n_particles=3, n_temperatures=5), random_state=0)
STI_SETTINGS = dict(temperatures=3, n_samples=60, n_burnin=20, batch_size=50)
FAST_STI = dict(method="sti", method_params=STI_SETTINGS, random_state=0)
# check_classifiers_train wants 83% training accuracy: chains long enough to leave the prior.
FAST_STI_CLF = dict(
    method="sti", random_state=0,
    method_params={**STI_SETTINGS, "n_samples": 1000, "n_burnin": 300, "sampler": "sgld", "step_size": 2e-4,
                   "step_decay": 0.0},
)  # fmt: skip


def _sgais(**settings):
    """FAST_SGAIS with other SGAIS settings."""
    return dict(FAST_SGAIS, method_params={**FAST_SGAIS["method_params"], **settings})


def _estimators():
    return [
        BayesianLogisticRegression(**FAST_SGAIS),
        BayesianLogisticRegression(**FAST_AIS),
        BayesianLogisticRegression(**FAST_STI_CLF),
        BayesianGMM(n_components=2, **FAST_SGAIS),
        BayesianGMM(**FAST_AIS),
        BayesianGMM(**FAST_STI),
    ]


@parametrize_with_checks(_estimators())
def test_sklearn_compatible_estimator(estimator, check):
    with warnings.catch_warnings():
        # Tiny AIS ladders and SGAIS populations on the checks' unscaled data (e.g. centred at
        # 100) give degenerate weights and particles far out: expected with these settings.
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
        check(estimator)


# --------------------------------------------------------------------------- helpers


def _classification(seed=0, n=400, n_classes=3):
    X, y = make_classification(
        n_samples=n, n_features=5, n_informative=3, n_classes=n_classes, n_clusters_per_class=1,
        class_sep=2.0, random_state=seed,
    )  # fmt: skip
    return StandardScaler().fit_transform(X), y


def _blobs(seed=0, n=600):
    centers = [[-5.0, 0.0], [0.0, 5.0], [5.0, -2.0]]
    X, labels = make_blobs(
        n_samples=n, centers=centers, cluster_std=[0.6, 0.8, 0.5], random_state=seed
    )
    return X, labels, np.array(centers), np.array([0.6, 0.8, 0.5]) ** 2


def _nig_log_evidence(X, kappa, a, b):
    """Closed-form evidence of a one-component diagonal mixture (Normal-Inverse-Gamma per dim)."""
    n, xbar = X.shape[0], X.mean(axis=0)
    kappa_n, a_n = kappa + n, a + 0.5 * n
    b_n = b + 0.5 * ((X - xbar) ** 2).sum(axis=0) + 0.5 * kappa * n * xbar**2 / kappa_n
    return (
        -0.5 * n * np.log(2 * np.pi) + 0.5 * np.log(kappa / kappa_n)
        + a * np.log(b) - a_n * np.log(b_n) + gammaln(a_n) - gammaln(a)
    ).sum()  # fmt: skip


# --------------------------------------------------------------------------- classifier


def test_classifier_accuracy_close_to_sklearn_on_separable_data(seed):
    X, y = _classification(seed)
    clf = BayesianLogisticRegression(random_state=seed).fit(X, y)
    reference = LogisticRegression().fit(X, y).score(X, y)
    assert reference > 0.95
    assert (clf.predict(X) == y).mean() >= reference - 0.02
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # Confident where the data are separable, and the argmax is predict.
    assert np.median(proba.max(axis=1)) > 0.9
    np.testing.assert_array_equal(clf.classes_[proba.argmax(axis=1)], clf.predict(X))
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X)), proba)


def test_predict_proba_is_the_weighted_softmax_average_over_particles():
    X, y = _classification(n=150)
    clf = BayesianLogisticRegression(method_params=dict(n_particles=6, target_ess=3), random_state=1).fit(X, y)
    assert clf.particles_.shape == (6, (X.shape[1] + 1) * 3)
    np.testing.assert_allclose(clf.particle_weights_.sum(), 1.0)
    expected = np.zeros((X.shape[0], 3))
    for w, theta in zip(clf.particle_weights_, clf.particles_):
        W, b = theta[: 5 * 3].reshape(5, 3), theta[5 * 3 :]
        logits = X @ W + b
        expected += w * np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    np.testing.assert_allclose(clf.predict_proba(X), expected, rtol=1e-10)
    mean = clf.particle_weights_ @ clf.particles_
    np.testing.assert_allclose(clf.coef_, mean[:15].reshape(5, 3).T)
    np.testing.assert_allclose(clf.intercept_, mean[15:])


def test_predict_proba_in_blocks_equals_one_block(monkeypatch):
    X, y = _classification(n=100)
    clf = BayesianLogisticRegression(**FAST_SGAIS).fit(X, y)
    whole = clf.predict_proba(X)
    monkeypatch.setattr(lr_module, "_PREDICT_ROWS", 7)
    np.testing.assert_array_equal(clf.predict_proba(X), whole)


def test_string_labels_are_classes_and_score_is_the_evidence():
    X, y = _classification(n=120, n_classes=2)
    labels = np.array(["cat", "dog"])[y]
    clf = BayesianLogisticRegression(**FAST_SGAIS).fit(X, labels)
    np.testing.assert_array_equal(clf.classes_, ["cat", "dog"])
    assert set(clf.predict(X)) <= {"cat", "dog"}
    # score is the log-evidence (negative, data-size dependent), not an accuracy.
    assert clf.score(X, labels) == clf.log_evidence_ < 0
    # The evidence does not depend on the labels' names, only on the encoding.
    assert BayesianLogisticRegression(**FAST_SGAIS).fit(X, y).log_evidence_ == clf.log_evidence_
    with pytest.raises(ValueError, match="not in classes_"):
        clf.score(X[:3], ["cat", "bird", "dog"])


def test_classifier_evidence_matches_prior_importance_sampling(seed):
    """The estimator's data path (labels -> indices -> model): AIS vs brute force, tiny problem."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(10, 2))
    labels = np.array([5, 7, 9])[rng.integers(0, 3, 10)]
    labels[:3] = [5, 7, 9]
    prior_var = 2.0
    model = SoftmaxRegression(2, 3, prior_var=prior_var)
    Xp, yp = model.prepare_data(X, np.searchsorted([5, 7, 9], labels))
    thetas = model.sample_prior(rng, size=200_000)
    log_w = model.log_likelihood_particles(thetas, Xp, yp).sum(axis=1)
    truth = logsumexp(log_w) - np.log(log_w.size)
    clf = BayesianLogisticRegression(
        prior_var=prior_var, method="ais", method_params=dict(n_temperatures=100, n_particles=20), random_state=seed
    ).fit(X, labels)
    assert abs(clf.log_evidence_ - truth) < 4 * clf.log_evidence_std_ + 0.1


def test_evidence_prefers_the_prior_scale_that_generated_the_data(seed):
    """Data from weights of variance 0.01 are better explained by prior_var=0.01 than by 100."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 3))
    W = rng.normal(scale=0.1, size=(3, 3))
    logits = X @ W
    p = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    y = np.array([rng.choice(3, p=row) for row in p])
    small = BayesianLogisticRegression(prior_var=0.01, random_state=seed).fit(X, y)
    large = BayesianLogisticRegression(prior_var=100.0, random_state=seed).fit(X, y)
    assert small.score(X, y) > large.score(X, y) + 5


def test_classifier_partial_fit_classes_hook():
    X, y = _classification(n=200)
    clf = BayesianLogisticRegression(**FAST_SGAIS)
    # First call with classes=: a piece missing a class is fine.
    first = y != 2
    clf.partial_fit(X[first][:40], y[first][:40], classes=[0, 1, 2])
    np.testing.assert_array_equal(clf.classes_, [0, 1, 2])
    clf.partial_fit(X[:60], y[:60])
    assert clf.n_samples_seen_ == 100 and clf.particles_.shape[1] == 18
    with pytest.raises(ValueError, match="differs from the classes of the first call"):
        clf.partial_fit(X[:10], y[:10], classes=[0, 1])
    with pytest.raises(ValueError, match="not in classes_"):
        clf.partial_fit(X[:3], [0, 1, 3])
    with pytest.raises(ValueError, match="features"):
        clf.partial_fit(X[:10, :4], y[:10])

    # Without classes=, the first call's labels are the classes; new labels later raise.
    fresh = BayesianLogisticRegression(**FAST_SGAIS).partial_fit(X[first][:40], y[first][:40])
    np.testing.assert_array_equal(fresh.classes_, [0, 1])
    with pytest.raises(ValueError, match="pass classes= with all labels to the first call"):
        fresh.partial_fit(X[:20], np.full(20, 2))
    with pytest.raises(ValueError, match="one class"):
        BayesianLogisticRegression(**FAST_SGAIS).partial_fit(X[:5], np.zeros(5, dtype=int))


def test_classifier_partial_fit_at_chunk_boundaries_equals_fit():
    X, y = _classification(n=300)
    params = dict(method_params=dict(n_particles=5, target_ess=3), random_state=7)
    whole = BayesianLogisticRegression(**params).fit(X, y)
    ends = chunk_boundaries(300)
    cut = int(ends[len(ends) // 2])
    pieces = BayesianLogisticRegression(**params)
    pieces.partial_fit(X[:cut], y[:cut], classes=np.unique(y)).partial_fit(X[cut:], y[cut:])
    assert pieces.log_evidence_ == pytest.approx(whole.log_evidence_, rel=1e-12)
    np.testing.assert_allclose(pieces.particles_, whole.particles_, rtol=1e-10)
    np.testing.assert_allclose(pieces.predict_proba(X), whole.predict_proba(X), rtol=1e-10)


def test_partial_fit_needs_sgais():
    clf = BayesianLogisticRegression(method="sti")
    assert not hasattr(clf, "partial_fit")
    assert not hasattr(BayesianGMM(method="ais"), "partial_fit")


@pytest.mark.parametrize(
    "X, y, match",
    [
        (np.array([[0.0, np.nan], [1.0, 2.0]]), [0, 1], "NaN"),
        (np.array([[0.0, np.inf], [1.0, 2.0]]), [0, 1], "infinity"),
        (np.ones(4), [0, 1, 0, 1], "2D array"),
        (np.ones((0, 2)), [], "0 sample"),
        (np.ones((4, 2)), [0.5, 1.5, 0.5, 1.5], "Unknown label type"),
        (np.ones((4, 2)), [1, 1, 1, 1], "one class"),
        (np.ones((4, 2)), [0, 1, 0], "inconsistent numbers of samples"),
    ],
)
def test_classifier_bad_data_raise_value_error(X, y, match):
    with pytest.raises(ValueError, match=match):
        BayesianLogisticRegression(**FAST_SGAIS).fit(X, y)


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(prior_var=0.0), "prior_var"),
        (dict(method="exact"), "method"),
        (_sgais(n_particles=1), "n_particles"),
        (_sgais(n_particles=4, target_ess=6), "target_ess"),
        (_sgais(batch_size=0), "batch_size"),
        (_sgais(temperatures=3), "temperatures.*its settings are"),
    ],
)
def test_classifier_bad_parameters_raise_value_error(params, match):
    X, y = _classification(n=40)
    with pytest.raises(ValueError, match=match):
        BayesianLogisticRegression(**{**FAST_SGAIS, **params}).fit(X, y)


# --------------------------------------------------------------------------- mixture


def test_gmm_recovers_well_separated_blobs(seed):
    X, labels, centers, variances = _blobs(seed)
    gmm = BayesianGMM(n_components=3, random_state=seed).fit(X)
    assert adjusted_rand_score(labels, gmm.predict(X)) > 0.99
    # Match fitted components to the true ones by their means.
    order = [int(np.argmin(((gmm.means_ - c) ** 2).sum(axis=1))) for c in centers]
    assert sorted(order) == [0, 1, 2]
    np.testing.assert_allclose(gmm.means_[order], centers, atol=0.2)
    true_cov = np.repeat(variances[:, None], 2, axis=1)
    np.testing.assert_allclose(gmm.covariances_[order], true_cov, rtol=0.35)
    np.testing.assert_allclose(gmm.weights_[order], np.bincount(labels) / labels.size, atol=0.03)
    proba = gmm.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(proba.argmax(axis=1), gmm.predict(X))


@pytest.mark.slow
def test_gmm_evidence_selects_the_number_of_blobs():
    X, _, _, _ = _blobs()
    scores = {
        k: BayesianGMM(n_components=k, random_state=0).fit(X).log_evidence_ for k in (1, 2, 3, 4)
    }
    assert max(scores, key=scores.get) == 3, scores
    assert scores[3] > scores[2] + 100


def test_gmm_single_component_evidence_matches_closed_form_with_its_priors(seed):
    """Every prior parameter reaches the model: AIS vs the closed form at non-default priors."""
    rng = np.random.default_rng(seed)
    X = rng.normal([0.5, -1.0], [1.5, 0.4], size=(40, 2))
    priors = dict(weight_concentration=3.0, mean_precision=4.0, var_shape=5.0, var_scale=0.5)
    gmm = BayesianGMM(
        n_components=1, method="ais", method_params=dict(n_temperatures=100, n_particles=20), random_state=seed,
        **priors,
    ).fit(X)
    truth = _nig_log_evidence(X, kappa=4.0, a=5.0, b=0.5)
    assert abs(gmm.log_evidence_ - truth) < 4 * gmm.log_evidence_std_ + 0.2
    # A different prior gives a clearly different evidence, so the check has power.
    assert abs(_nig_log_evidence(X, kappa=0.25, a=1.0, b=1.0) - truth) > 10.0


def test_gmm_score_samples_is_the_particle_mixture_density():
    X, _, _, _ = _blobs(n=150)
    gmm = BayesianGMM(n_components=3, method_params=dict(n_particles=5, target_ess=3), random_state=0).fit(X)
    model = DiagonalGaussianMixture(2, 3)
    dens = np.zeros(len(X))
    for w, theta in zip(gmm.particle_weights_, gmm.particles_):
        weights, means, variances = model.constrained(theta)
        for k in range(3):
            dens += w * weights[k] * stats.multivariate_normal(means[k], np.diag(variances[k])).pdf(X)
    np.testing.assert_allclose(gmm.score_samples(X), np.log(dens), rtol=1e-10)


def test_gmm_predict_in_blocks_equals_one_block(monkeypatch):
    X, _, _, _ = _blobs(n=90)
    gmm = BayesianGMM(n_components=3, **FAST_SGAIS).fit(X)
    whole, dens = gmm.predict_proba(X), gmm.score_samples(X)
    monkeypatch.setattr(gmm_module, "_PREDICT_ROWS", 8)
    np.testing.assert_array_equal(gmm.predict_proba(X), whole)
    np.testing.assert_array_equal(gmm.score_samples(X), dens)


def test_relabel_particles_undoes_label_switching():
    rng = np.random.default_rng(0)
    model = DiagonalGaussianMixture(2, 3)
    means = np.array([[-4.0, 0.0], [0.0, 4.0], [4.0, -1.0]])
    variances = np.array([[0.5, 0.5], [1.0, 2.0], [0.3, 0.2]])
    weights = np.array([0.2, 0.3, 0.5])
    particles, perms = [], []
    for _ in range(12):
        perm = rng.permutation(3)
        jitter = means + 0.05 * rng.normal(size=means.shape)
        particles.append(model.pack(weights[perm], jitter[perm], variances[perm]))
        perms.append(perm)
    particles = np.array(particles)
    w = rng.dirichlet(np.ones(12))
    relabelled = relabel_particles(model, particles, w)
    rw, rmu, rvar = model.constrained(relabelled)
    # Every particle now lists the components in the order of the heaviest particle.
    ref = perms[int(np.argmax(w))]
    for i in range(12):
        np.testing.assert_allclose(rw[i], weights[ref], rtol=1e-12)
        np.testing.assert_allclose(rmu[i], means[ref], atol=0.3)
        np.testing.assert_allclose(rvar[i], variances[ref], rtol=1e-12)
    # The likelihood of every particle is unchanged by the relabelling.
    X = rng.normal(size=(5, 2))
    before = model.log_likelihood_particles(particles, X)
    np.testing.assert_allclose(model.log_likelihood_particles(relabelled, X), before, rtol=1e-12)


def test_posterior_particles_by_method():
    """A result with particles (SGAIS, AIS): those, with normalised weights; otherwise the posterior mean."""
    from types import SimpleNamespace

    from skevidence.evidence import EvidenceResult

    def posterior_particles(result):
        return ContinuousEvidenceMixin._posterior_particles(SimpleNamespace(result_=result))

    particles = np.arange(6.0).reshape(3, 2)
    log_w = np.log([0.2, 0.3, 0.5]) + 7.0  # unnormalised on purpose
    with_particles = EvidenceResult(
        0.0, 0.0, "ais", diagnostics={"particles": particles, "log_weights": log_w},
        posterior_mean=np.array([9.0, 9.0]),
    )  # fmt: skip
    got, w = posterior_particles(with_particles)
    np.testing.assert_array_equal(got, particles)
    np.testing.assert_allclose(w, [0.2, 0.3, 0.5])
    got, w = posterior_particles(EvidenceResult(0.0, 0.0, "sti", posterior_mean=np.array([1.0, 2.0])))
    np.testing.assert_array_equal(got, [[1.0, 2.0]])
    np.testing.assert_array_equal(w, [1.0])
    # SGAIS's result carries the stream's current particles and weights.
    X, y = _classification(n=60)
    clf = BayesianLogisticRegression(method_params=dict(n_particles=4, target_ess=3, n_steps=2), random_state=0)
    clf.partial_fit(X[:30], y[:30]).partial_fit(X[30:], y[30:])
    got, w = posterior_particles(clf.result_)
    np.testing.assert_array_equal(got, clf._stream.particles)
    np.testing.assert_allclose(w, np.exp(clf._stream.log_weights))


def test_gmm_partial_fit_updates_posterior_and_checks_features():
    X, labels, _, _ = _blobs(n=300)
    rng = np.random.default_rng(0)
    X = X[rng.permutation(len(X))]
    gmm = BayesianGMM(n_components=3, random_state=0)
    gmm.partial_fit(X[:100])
    first_evidence = gmm.log_evidence_
    gmm.partial_fit(X[100:])
    assert gmm.n_samples_seen_ == 300 and gmm.log_evidence_ < first_evidence
    np.testing.assert_allclose(np.sort(gmm.weights_), [1 / 3] * 3, atol=0.06)
    with pytest.raises(ValueError, match="features"):
        gmm.partial_fit(X[:5, :1])
    with pytest.raises(ValueError, match="classes is only for classifiers"):
        gmm.partial_fit(X[:5], classes=[0, 1])


def test_gmm_fit_is_reproducible_and_clone_refits_identically():
    X, _, _, _ = _blobs(n=120)
    a = BayesianGMM(n_components=2, **FAST_SGAIS).fit(X)
    b = clone(a).fit(X)
    assert a.log_evidence_ == b.log_evidence_
    np.testing.assert_array_equal(a.means_, b.means_)


@pytest.mark.parametrize(
    "X, match",
    [
        (np.array([[0.0, np.nan], [1.0, 2.0]]), "NaN"),
        (np.array([[0.0, np.inf], [1.0, 2.0]]), "infinity"),
        (np.ones(4), "2D array"),
        (np.ones((0, 2)), "0 sample"),
        (np.ones((2, 2, 2)), "dim 3"),
    ],
)
def test_gmm_bad_data_raise_value_error(X, match):
    with pytest.raises(ValueError, match=match):
        BayesianGMM(**FAST_SGAIS).fit(X)


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(n_components=0), "n_components"),
        (dict(n_components=1.5), "n_components"),
        (dict(weight_concentration=-1.0), "weight_concentration"),
        (dict(mean_precision=0.0), "mean_precision"),
        (dict(var_shape=0.0), "var_shape"),
        (dict(var_scale=-2.0), "var_scale"),
        (dict(method="exact"), "method"),
    ],
)
def test_gmm_bad_parameters_raise_value_error(params, match):
    with pytest.raises(ValueError, match=match):
        BayesianGMM(**{**FAST_SGAIS, **params}).fit(np.ones((5, 2)))


def test_gmm_predict_checks_features():
    X, _, _, _ = _blobs(n=60)
    gmm = BayesianGMM(n_components=2, **FAST_SGAIS).fit(X)
    with pytest.raises(ValueError, match="features"):
        gmm.predict(X[:, :1])


@pytest.mark.slow
def test_search_over_components_picks_the_blobs_like_bic():
    """EvidenceGridSearch over 1..8 components picks the true 3, as GaussianMixture's BIC does."""
    from sklearn.mixture import GaussianMixture

    from skevidence import EvidenceGridSearch

    X, _, _, _ = _blobs()
    ks = list(range(1, 9))
    search = EvidenceGridSearch(BayesianGMM(random_state=0), {"n_components": ks}, n_jobs=2).fit(X)
    bic = [GaussianMixture(k, covariance_type="diag", random_state=0).fit(X).bic(X) for k in ks]
    assert search.best_params_["n_components"] == 3 == ks[int(np.argmin(bic))], (
        search.cv_results_["mean_test_score"], bic,
    )


@pytest.mark.slow
def test_classifier_sgais_agrees_with_ais(seed):
    """SGAIS and AIS (full-data HMC) on a small softmax problem: within 4 combined standard errors."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(200, 3))
    W = rng.normal(size=(3, 3))
    logits = X @ W
    p = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
    y = np.array([rng.choice(3, p=row) for row in p])
    sgais = BayesianLogisticRegression(method_params=dict(n_particles=50, n_steps=40), random_state=seed).fit(X, y)
    ais = BayesianLogisticRegression(
        method="ais", method_params=dict(n_particles=20, n_temperatures=300), random_state=seed
    ).fit(X, y)
    combined = np.hypot(sgais.log_evidence_std_, ais.log_evidence_std_)
    assert abs(sgais.log_evidence_ - ais.log_evidence_) < 4 * combined, (
        sgais.log_evidence_, sgais.log_evidence_std_, ais.log_evidence_, ais.log_evidence_std_,
    )
