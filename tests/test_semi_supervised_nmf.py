"""SemiSupervisedNMF: the updates against a per-entry twin, monotone objective, separation, bad input."""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from skevidence.estimators.semi_supervised_nmf import SemiSupervisedNMF, SeparationResult, _em

# Short runs on purpose; test_not_converged_warns checks the warning itself.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

# ------------------------------------------------------------------ helpers


def _twin_iteration(X, W, H, lam, first_learned=0, likelihood="poisson"):
    """One iteration written entry by entry: the W update, then the learned rows of H.

    Poisson: X / V against ones; exponential: the square root of X / V^2 against 1 / V.
    """
    power = 2 if likelihood == "exponential" else 1
    exponent = 0.5 if likelihood == "exponential" else 1.0
    n, R = W.shape
    F = H.shape[1]
    W, H = W.copy(), H.copy()

    def intensity(W, H):
        return np.array(
            [[sum(W[i, r] * H[r, j] for r in range(R)) for j in range(F)] for i in range(n)]
        )

    V = intensity(W, H)
    W_new = np.empty_like(W)
    for i in range(n):
        for r in range(R):
            num = sum(X[i, j] / V[i, j] ** power * H[r, j] for j in range(F))
            den = sum(H[r, j] / V[i, j] ** (power - 1) for j in range(F)) + lam
            W_new[i, r] = W[i, r] * (num / den) ** exponent
    V = intensity(W_new, H)
    H_new = H.copy()
    for r in range(first_learned, R):
        for j in range(F):
            num = sum(W_new[i, r] * X[i, j] / V[i, j] ** power for i in range(n))
            den = sum(W_new[i, r] / V[i, j] ** (power - 1) for i in range(n)) + lam
            H_new[r, j] = H[r, j] * (num / den) ** exponent
    return W_new, H_new


def _twin_objective(X, W, H, lam, first_learned=0, likelihood="poisson"):
    V = W @ H
    if likelihood == "poisson":
        divergence = sum((X[i, j] * np.log(X[i, j] / V[i, j]) if X[i, j] > 0 else 0.0) - X[i, j] + V[i, j]
                         for i in range(X.shape[0]) for j in range(X.shape[1]))
    else:  # Itakura-Saito, for positive X
        divergence = sum(X[i, j] / V[i, j] - np.log(X[i, j] / V[i, j]) - 1.0
                         for i in range(X.shape[0]) for j in range(X.shape[1]))
    return divergence + lam * (W.sum() + H[first_learned:].sum())


def _disjoint_problem(seed, n_frames=120, n_freq=40, r_sp=4, r_no=2, scale=50.0):
    """Speech atoms on the lower half of the frequencies, noise atoms on the upper half.

    Each speech atom is silent in about half of the frames. Without silences
    the split would not be identified: a noise atom could take a mix of speech
    atoms, the speech activations giving it back, at no cost to the fit.
    """
    rng = np.random.default_rng(seed)
    half = n_freq // 2
    H_sp = np.zeros((r_sp, n_freq))
    H_sp[:, :half] = rng.exponential(size=(r_sp, half))
    H_no = np.zeros((r_no, n_freq))
    H_no[:, half:] = rng.exponential(size=(r_no, n_freq - half))

    def speech_activations(n):
        return rng.exponential(size=(n, r_sp)) * (rng.random((n, r_sp)) < 0.5)

    clean = rng.poisson(scale * speech_activations(3 * n_frames) @ H_sp).astype(float)
    speech = scale * speech_activations(n_frames) @ H_sp
    noise = scale * rng.exponential(size=(n_frames, r_no)) @ H_no
    return clean, speech, noise, H_sp, H_no


def _exponential_nmf(seed, shape=(60, 25), rank=3, scale=20.0):
    """A power spectrogram's model: exponential entries of mean W H."""
    rng = np.random.default_rng(seed)
    V = scale * rng.exponential(size=(shape[0], rank)) @ rng.exponential(size=(rank, shape[1]))
    return V * rng.exponential(size=shape)


def _poisson_nmf(seed, shape=(60, 25), rank=3, scale=20.0):
    rng = np.random.default_rng(seed)
    W = rng.exponential(size=(shape[0], rank))
    return rng.poisson(scale * W @ rng.exponential(size=(rank, shape[1])))


# ------------------------------------------------------------------ API


@parametrize_with_checks(
    [SemiSupervisedNMF(n_components=2, n_noise_components=1, max_iter=30, random_state=0),
     SemiSupervisedNMF(n_components=2, n_noise_components=1, likelihood="exponential", max_iter=30,
                       random_state=0)],
    expected_failed_checks=lambda est: {
        "check_methods_subset_invariance": (
            "transform learns a noise dictionary shared by all frames of the mixture, so a "
            "frame's activations depend on the other frames"
        ),
    },
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


# ------------------------------------------------------------------ the EM updates


@pytest.mark.parametrize("likelihood", ["poisson", "exponential"])
@pytest.mark.parametrize("first_learned", [0, 2])
@pytest.mark.parametrize("lam", [0.0, 0.7])
def test_one_iteration_equals_the_per_entry_twin(first_learned, lam, likelihood):
    rng = np.random.default_rng(1)
    if likelihood == "poisson":
        X = rng.poisson(3.0, size=(6, 5)).astype(float)
        X[0, 0] = 0.0
    else:
        X = rng.exponential(3.0, size=(6, 5))
    W0 = rng.uniform(0.2, 1.5, size=(6, 4))
    H0 = rng.uniform(0.2, 1.5, size=(4, 5))
    W, H, path, n_iter, _ = _em(X, W0.copy(), H0.copy(), prior_rate=lam, max_iter=1, tol=0.0,
                                first_learned=first_learned, likelihood=likelihood)
    W_twin, H_twin = _twin_iteration(X, W0, H0, lam, first_learned, likelihood)
    np.testing.assert_allclose(W, W_twin, rtol=1e-12)
    np.testing.assert_allclose(H, H_twin, rtol=1e-12)
    np.testing.assert_array_equal(H[:first_learned], H0[:first_learned])
    assert n_iter == 1 and path.shape == (2,)
    np.testing.assert_allclose(path[0], _twin_objective(X, W0, H0, lam, first_learned, likelihood), rtol=1e-12)
    np.testing.assert_allclose(
        path[1], _twin_objective(X, W_twin, H_twin, lam, first_learned, likelihood), rtol=1e-12
    )
    assert path[1] <= path[0]


@pytest.mark.parametrize("likelihood", ["poisson", "exponential"])
def test_fit_objective_never_increases(likelihood):
    X = _poisson_nmf(2).astype(float) if likelihood == "poisson" else _exponential_nmf(2)
    lam = 0.05
    est = SemiSupervisedNMF(n_components=3, likelihood=likelihood, prior_rate=lam, max_iter=400, tol=0.0,
                            random_state=0)
    est.fit(X)
    path = est.objective_path_
    assert est.n_iter_ == 400 and path.shape == (401,)
    assert np.all(np.diff(path) <= 1e-10 * path[:-1])
    assert path[-1] < 0.5 * path[0]
    # The divergence alone: the objective without the prior term.
    assert 0 < est.reconstruction_err_ < path[-1]


def test_fit_reaches_a_stationary_point_of_the_posterior():
    """Run long, the dictionary-learning EM satisfies the MAP's stationarity (KKT) conditions."""
    X = _poisson_nmf(13).astype(float)
    lam = 0.3
    rng = np.random.default_rng(0)
    W, H, *_ = _em(X, rng.uniform(0.5, 1.5, (60, 3)), rng.uniform(0.5, 1.5, (3, 25)),
                   prior_rate=lam, max_iter=5000, tol=1e-13)  # fmt: skip
    Q = X / (W @ H)
    for factor, ratio in ((W, (Q @ H.T) / (H.sum(axis=1) + lam)),
                          (H, (W.T @ Q) / (W.sum(axis=0) + lam)[:, None])):  # fmt: skip
        active = factor > 1e-3 * factor.max()
        assert np.abs(ratio[active] - 1).max() < 1e-3
        assert np.all(ratio[~active] <= 1 + 1e-2)


def test_exponential_fit_reaches_a_stationary_point_of_the_posterior():
    """Run long, the Itakura-Saito updates satisfy the MAP's stationarity (KKT) conditions: at a fixed point
    of the multiplicative step, X / V^2 against 1 / V plus the prior rate balance on every active entry."""
    X = _exponential_nmf(13)
    lam = 0.3
    rng = np.random.default_rng(0)
    W, H, *_ = _em(X, rng.uniform(0.5, 1.5, (60, 3)), rng.uniform(0.5, 1.5, (3, 25)), prior_rate=lam,
                   max_iter=20000, tol=1e-14, likelihood="exponential")
    V = W @ H
    for factor, ratio in ((W, ((X / V**2) @ H.T) / ((1 / V) @ H.T + lam)),
                          (H, (W.T @ (X / V**2)) / (W.T @ (1 / V) + lam))):  # fmt: skip
        active = factor > 1e-3 * factor.max()
        assert np.abs(ratio[active] - 1).max() < 1e-3
        assert np.all(ratio[~active] <= 1 + 1e-2)


def test_prior_rate_auto():
    X = _exponential_nmf(3)
    assert SemiSupervisedNMF(n_components=3, max_iter=2).fit(X).prior_rate_ == 0.0004
    exponential = SemiSupervisedNMF(n_components=3, likelihood="exponential", max_iter=2).fit(X)
    assert exponential.prior_rate_ == pytest.approx(np.sqrt(3 / X.mean()), rel=1e-12)
    # The rule reads the dictionary's size when the dictionary is given.
    given = SemiSupervisedNMF(likelihood="exponential", speech_components=np.ones((5, X.shape[1]))).fit(X)
    assert given.prior_rate_ == pytest.approx(np.sqrt(5 / X.mean()), rel=1e-12)
    assert SemiSupervisedNMF(n_components=3, prior_rate=0.2, max_iter=2).fit(X).prior_rate_ == 0.2


@pytest.mark.parametrize("seed", [5, 6])
def test_exponential_mask_recovers_speech_with_disjoint_supports(seed):
    """On power spectrograms (exponential entries) the mask is 1 where only speech has energy and 0 where only
    noise has, and denoise gives back the speech bins of the mixture."""
    clean, speech, noise, H_sp, _ = _disjoint_problem(seed)
    rng = np.random.default_rng(seed)
    clean = (clean + 1e-3) * rng.exponential(size=clean.shape)
    X = (speech + noise + 1e-3) * rng.exponential(size=speech.shape)
    est = SemiSupervisedNMF(n_components=4, n_noise_components=2, likelihood="exponential", max_iter=500,
                            random_state=0).fit(clean)
    result = est.decompose(X)
    mask = result.mask
    speech_bins, noise_bins = speech > 1e-3 * speech.max(), noise > 1e-3 * noise.max()
    assert np.median(mask[speech_bins & ~noise_bins]) > 0.95
    assert np.median(mask[noise_bins & ~speech_bins]) < 0.05
    np.testing.assert_array_equal(est.denoise(X), mask**2 * X)
    kept = np.where(speech_bins, X, 0.0)
    assert np.linalg.norm(est.denoise(X) - kept) < 0.1 * np.linalg.norm(kept)
    assert np.linalg.norm(X - kept) > 0.3 * np.linalg.norm(kept)


def test_separation_objective_never_increases_and_speech_dictionary_stays_fixed():
    clean, speech, noise, H_sp, _ = _disjoint_problem(3)
    est = SemiSupervisedNMF(
        speech_components=H_sp, n_noise_components=2, max_iter=300, tol=0.0, random_state=0
    )
    est.fit(clean)
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(est).items()}
    result = est.decompose(speech + noise)
    path = result.objective_path
    assert result.n_iter == 300 and path.shape == (301,)
    assert np.all(np.diff(path) <= 1e-10 * path[:-1])
    np.testing.assert_array_equal(result.speech_components, H_sp)
    np.testing.assert_array_equal(est.components_, H_sp)
    # No state change outside fit: the same attributes with the same values.
    assert set(vars(est)) == set(before)
    for key, value in before.items():
        np.testing.assert_array_equal(getattr(est, key), value)


@pytest.mark.parametrize("sparsity", [0.0, 0.4])
def test_separation_is_a_fixed_point_of_the_em_map(sparsity):
    """The returned factors satisfy the stationarity conditions of the MAP (KKT): every factor under the prior
    rate, the speech activations under ``sparsity`` per unit of a unit-sum atom as well (``sparsity`` times the
    atom's sum per unit of the activation returned)."""
    clean, speech, noise, H_sp, _ = _disjoint_problem(4)
    lam = 0.5
    est = SemiSupervisedNMF(
        speech_components=H_sp, n_noise_components=2, prior_rate=lam, sparsity=sparsity, max_iter=3000,
        tol=1e-12, random_state=0,
    ).fit(clean)  # fmt: skip
    res = est.decompose(speech + noise)
    X = speech + noise
    W = np.hstack([res.speech_activations, res.noise_activations])
    H = np.vstack([res.speech_components, res.noise_components])
    Q = X / (W @ H)
    rates = np.concatenate([lam + sparsity * H_sp.sum(axis=1), np.full(2, lam)])
    ratio_w = (Q @ H.T) / (H.sum(axis=1) + rates)
    active = W > 1e-3 * W.max()
    assert np.abs(ratio_w[active] - 1).max() < 1e-2
    assert np.all(ratio_w[~active] <= 1 + 1e-2)
    Wn = res.noise_activations
    ratio_h = (Wn.T @ Q) / (Wn.sum(axis=0) + lam)[:, None]
    active = res.noise_components > 1e-3 * res.noise_components.max()
    assert np.abs(ratio_h[active] - 1).max() < 1e-2


# ------------------------------------------------------------------ separation quality


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_mask_recovers_speech_with_disjoint_supports(seed):
    clean, speech, noise, H_sp, _ = _disjoint_problem(seed)
    X = speech + noise
    est = SemiSupervisedNMF(n_components=4, n_noise_components=2, max_iter=500, random_state=0)
    est.fit(clean)
    # The learned dictionary has no energy where clean speech has none.
    assert est.components_[:, 20:].max() < 1e-8 * est.components_.max()
    estimate = est.denoise(X)
    error = np.linalg.norm(estimate - speech) / np.linalg.norm(speech)
    assert error < 0.01
    # Without the noise model (mask = 1) the error is the noise itself: far larger.
    assert np.linalg.norm(X - speech) / np.linalg.norm(speech) > 0.3
    speech_hat, noise_hat = est.separate(X)
    np.testing.assert_allclose(speech_hat + noise_hat, X, rtol=0, atol=0.01 * X.max())
    # The same with the true dictionary given instead of learned.
    given = SemiSupervisedNMF(speech_components=H_sp, n_noise_components=2, max_iter=500,
                              random_state=0).fit(clean)  # fmt: skip
    assert np.linalg.norm(given.denoise(X) - speech) / np.linalg.norm(speech) < 0.01


def test_separate_mask_denoise_transform_agree_with_decompose():
    clean, speech, noise, _, _ = _disjoint_problem(6, n_frames=40)
    X = speech + noise
    est = SemiSupervisedNMF(n_components=4, n_noise_components=2, random_state=0).fit(clean)
    res = est.decompose(X)
    assert isinstance(res, SeparationResult)
    speech_hat, noise_hat = est.separate(X)
    np.testing.assert_array_equal(speech_hat, res.speech_activations @ est.components_)
    np.testing.assert_array_equal(noise_hat, res.noise_activations @ res.noise_components)
    mask = est.speech_mask(X)
    np.testing.assert_array_equal(mask, speech_hat / (speech_hat + noise_hat))
    assert mask.min() >= 0 and mask.max() <= 1
    np.testing.assert_array_equal(est.denoise(X), mask * X)
    np.testing.assert_array_equal(est.transform(X), res.speech_activations)
    assert est.transform(X).shape == (40, 4)


def test_transform_does_not_depend_on_frame_order():
    clean, speech, noise, _, _ = _disjoint_problem(7, n_frames=50)
    X = speech + noise
    est = SemiSupervisedNMF(n_components=4, n_noise_components=2, random_state=3).fit(clean)
    perm = np.random.default_rng(0).permutation(50)
    np.testing.assert_allclose(
        est.transform(X[perm]), est.transform(X)[perm], rtol=1e-8, atol=1e-12
    )


def test_random_state_makes_everything_reproducible():
    X = _poisson_nmf(8)
    a = SemiSupervisedNMF(n_components=3, n_noise_components=2, random_state=4).fit(X)
    b = SemiSupervisedNMF(n_components=3, n_noise_components=2, random_state=4).fit(X)
    np.testing.assert_array_equal(a.components_, b.components_)
    np.testing.assert_array_equal(a.transform(X), b.transform(X))
    np.testing.assert_array_equal(a.transform(X), a.transform(X))
    c = SemiSupervisedNMF(n_components=3, n_noise_components=2, random_state=5).fit(X)
    assert not np.array_equal(a.components_, c.components_)


# ------------------------------------------------------------------ a given dictionary


def test_given_speech_components_are_not_learned():
    clean, speech, noise, H_sp, _ = _disjoint_problem(9)
    given = H_sp.copy()
    est = SemiSupervisedNMF(n_components=17, speech_components=given, random_state=0).fit(clean)
    np.testing.assert_array_equal(est.components_, H_sp)
    assert est.components_ is not given  # a copy: editing the parameter cannot change the model
    assert est.n_iter_ == 0 and est.objective_path_.size == 0 and np.isnan(est.reconstruction_err_)
    assert est.transform(speech + noise).shape == (speech.shape[0], H_sp.shape[0])
    assert est.get_feature_names_out().tolist() == [f"semisupervisednmf{i}" for i in range(4)]


def test_dictionary_from_poisson_nmf_plugs_in():
    """A PoissonNMF's components_ are a valid speech dictionary."""
    from skevidence import PoissonNMF

    clean, speech, noise, _, _ = _disjoint_problem(10, n_frames=30, n_freq=12, r_sp=2)
    nmf = PoissonNMF(2, random_state=0).fit(clean[:60])
    est = SemiSupervisedNMF(speech_components=nmf.components_, n_noise_components=1, random_state=0)
    mask = est.fit(clean).speech_mask(speech + noise)
    assert mask.shape == speech.shape and 0 <= mask.min() and mask.max() <= 1


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "X, match",
    [
        (np.array([[1.0, np.nan], [1.0, 2.0]]), "NaN"),
        (np.array([[1.0, np.inf], [1.0, 2.0]]), "infinity"),
        (np.array([[1.0, -1.0], [1.0, 2.0]]), "Negative values"),
        (np.ones(5), "2D array"),
        (np.ones((2, 2, 2)), "dim"),
        (np.empty((0, 3)), "0 sample"),
    ],
)
def test_bad_data_raise_value_error(X, match):
    with pytest.raises(ValueError, match=match):
        SemiSupervisedNMF(n_components=1, n_noise_components=1).fit(X)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_components": 0}, "n_components"),
        ({"n_noise_components": 0}, "n_noise_components"),
        ({"prior_rate": -1.0}, "prior_rate"),
        ({"prior_rate": np.inf}, "prior_rate"),
        ({"prior_rate": np.nan}, "prior_rate"),
        ({"prior_rate": "fast"}, "prior_rate"),
        ({"likelihood": "gamma"}, "likelihood"),
        ({"max_iter": 0}, "max_iter"),
        ({"tol": -1e-3}, "tol"),
        ({"n_components": 2.5}, "n_components"),
    ],
)
def test_bad_parameters_raise_value_error(params, match):
    with pytest.raises(ValueError, match=match):
        SemiSupervisedNMF(**params).fit(np.ones((10, 4)))


def test_too_large_ranks_and_mismatched_shapes_raise():
    X = _poisson_nmf(11, shape=(20, 8)).astype(float)
    with pytest.raises(ValueError, match="n_components=21 exceeds the number of training frames"):
        SemiSupervisedNMF(n_components=21).fit(X)
    est = SemiSupervisedNMF(n_components=2, n_noise_components=5, random_state=0).fit(X)
    with pytest.raises(ValueError, match="n_noise_components=5 exceeds the number of frames"):
        est.separate(X[:4])
    with pytest.raises(ValueError, match="X has 7 features, but SemiSupervisedNMF is expecting 8"):
        est.denoise(X[:, :7])
    with pytest.raises(ValueError, match="Negative values"):
        est.speech_mask(-X)
    with pytest.raises(ValueError, match="speech_components has 3 frequencies .* but X has 8"):
        SemiSupervisedNMF(speech_components=np.ones((2, 3))).fit(X)
    with pytest.raises(ValueError, match="speech_components contains NaN"):
        SemiSupervisedNMF(speech_components=np.full((2, 8), np.nan)).fit(X)
    with pytest.raises(ValueError, match="Negative values in data passed to speech_components"):
        SemiSupervisedNMF(speech_components=-np.ones((2, 8))).fit(X)


def test_not_converged_warns():
    X = _poisson_nmf(12).astype(float)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        est = SemiSupervisedNMF(n_components=3, max_iter=2, random_state=0).fit(X)
    with pytest.warns(ConvergenceWarning, match="separation"):
        est.separate(X)
