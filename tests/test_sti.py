"""STI against closed-form evidences, its bad-input handling, and reproducibility.

Every comparison with a closed form allows 4 of the estimate's own standard
errors. That error covers Monte-Carlo noise only; the ladder and step-size
biases (Theorem 1 of seed 000) are kept below it by the settings, which the
user guide discusses.
"""

import warnings

import numpy as np
import pytest

from skevidence import (
    BayesianGMM,
    BayesianLinearRegression,
    GaussianAdditiveModel,
    SamplerDivergenceError,
    sti_log_evidence,
)
from skevidence.models import GaussianAdditive, LinearGaussian
from skevidence.samplers import PSGLD, SGLD


def _gaussian_additive_data(seed, prior_mean, prior_var, noise_var, n, true_rank):
    rng = np.random.default_rng(seed)
    theta = rng.normal(prior_mean, np.sqrt(prior_var), true_rank)
    return rng.normal(theta.sum(), np.sqrt(noise_var), n)


# (name, prior_mean, prior_var, noise_var, N, true R, candidate R, STI settings,
#  the largest standard error relative to |log Z| that still decides)
GAUSSIAN_SETTINGS = [
    # P1 of seed 000 with the power ladder (the uniform ladder's O(1/T^2) bias is
    # hundreds of nats at T = 10; see benchmarks/bench_p1_gaussian_additive.py).
    ("P1", 5.0, 3.0, 5.0, 5000, 3, (2, 3, 4), dict(temperatures=20, batch_size=250), 2e-4),
    # A sharper prior: the evidence separates the ranks by several nats.
    ("decisive", 5.0, 0.5, 5.0, 5000, 3, (2, 3, 4), dict(temperatures=20, batch_size=250), 2e-4),
    # Fewer data, small minibatches, a different truth, a short ladder.
    ("small", 1.0, 1.0, 1.0, 2000, 2, (1, 2, 3), dict(temperatures=10, batch_size=100), 1e-3),
]


@pytest.mark.slow
@pytest.mark.parametrize("setting", GAUSSIAN_SETTINGS, ids=[s[0] for s in GAUSSIAN_SETTINGS])
def test_sti_matches_exact_gaussian_additive(seed, setting):
    name, mu, s2, sx, n, true_rank, ranks, kwargs, max_relative_se = setting
    x = _gaussian_additive_data(seed, mu, s2, sx, n, true_rank)
    for rank in ranks:
        model = GaussianAdditive(rank, mu, s2, sx)
        result = sti_log_evidence(model, x, random_state=seed, **kwargs)
        exact = model.exact_log_evidence(x)
        assert abs(result.log_evidence - exact) <= 4 * result.std_error, (name, rank, result, exact)
        assert result.std_error < max_relative_se * abs(exact)


@pytest.mark.slow
def test_sti_argmax_equals_exact_argmax(seed):
    mu, s2, sx = 5.0, 0.5, 5.0
    x = _gaussian_additive_data(seed, mu, s2, sx, 5000, true_rank=3)
    ranks = np.arange(1, 7)
    sti = [sti_log_evidence(GaussianAdditive(r, mu, s2, sx), x, temperatures=20, random_state=seed) for r in ranks]
    exact = [GaussianAdditive(r, mu, s2, sx).exact_log_evidence(x) for r in ranks]
    assert ranks[np.argmax([s.log_evidence for s in sti])] == ranks[np.argmax(exact)]
    # The decision is not a coin toss: the exact gap to the runner-up exceeds
    # the standard error of the estimates.
    gap = np.sort(exact)[-1] - np.sort(exact)[-2]
    assert gap > max(s.std_error for s in sti)


@pytest.mark.slow
def test_sti_matches_exact_linear_regression(seed):
    rng = np.random.default_rng(seed)
    n, d = 2000, 5
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) + 0.3 + rng.normal(size=n)
    model = LinearGaussian(d, noise_var=1.0)
    result = sti_log_evidence(
        model, X, y, temperatures=30, batch_size=500, n_samples=10000, n_burnin=3000, random_state=seed
    )
    exact = model.exact_log_evidence(X, y)
    assert abs(result.log_evidence - exact) <= 4 * result.std_error, (result, exact)
    assert result.std_error < 2e-4 * abs(exact)


def test_sti_quick_agreement_and_result_fields(seed):
    """A fast end-to-end check that runs in every test session."""
    x = _gaussian_additive_data(seed, 1.0, 1.0, 1.0, 2000, 2)
    model = GaussianAdditive(2, 1.0, 1.0, 1.0)
    result = sti_log_evidence(
        model, x, temperatures=10, n_samples=1000, n_burnin=300, batch_size=100, random_state=seed
    )
    assert abs(result.log_evidence - model.exact_log_evidence(x)) <= 4 * result.std_error
    assert result.method == "sti"
    assert result.temperatures.shape == result.expected_log_likelihood.shape == (11,)
    assert result.expected_log_likelihood_std.shape == (11,)
    # f(t) increases (f' = Var_t log p(x|theta)): from the prior to the posterior at least.
    assert result.expected_log_likelihood[-1] > result.expected_log_likelihood[0]
    assert result.wall_time > 0
    assert set(result.diagnostics) >= {"step_size", "autocorr_time", "effective_sample_size", "sampler"}


def test_likelihood_evaluations_are_counted(seed):
    x = np.random.default_rng(seed).normal(size=200)
    result = sti_log_evidence(
        GaussianAdditive(1), x, temperatures=3, n_samples=50, n_burnin=20, batch_size=40, random_state=seed
    )
    # t = 0: 30 exact prior draws on minibatches of 40; each chain at t > 0:
    # 50 iterations of 40; temperatures served by reweighted prior draws: none.
    n_chains = 3 - result.diagnostics["reweighted_prior"].sum()
    assert result.diagnostics["reweighted_prior"][0] == False  # noqa: E712
    assert result.n_likelihood_evaluations == 30 * 40 + n_chains * 50 * 40


def test_same_seed_same_result_and_different_seed_differs():
    x = np.random.default_rng(1).normal(2.0, 1.0, size=400)
    model = GaussianAdditive(2, 1.0, 1.0, 1.0)
    kwargs = dict(temperatures=4, n_samples=300, n_burnin=100)
    a = sti_log_evidence(model, x, random_state=42, **kwargs)
    b = sti_log_evidence(model, x, random_state=42, **kwargs)
    c = sti_log_evidence(model, x, random_state=43, **kwargs)
    assert a.log_evidence == b.log_evidence
    np.testing.assert_array_equal(a.expected_log_likelihood, b.expected_log_likelihood)
    assert a.log_evidence != c.log_evidence


@pytest.mark.parametrize("ladder", ["power", "uniform"])
def test_ladder_kinds_and_explicit_ladders(ladder):
    x = np.random.default_rng(2).normal(size=100)
    model = GaussianAdditive(1)
    result = sti_log_evidence(model, x, temperatures=4, ladder=ladder, n_samples=60, n_burnin=20, random_state=0)
    expected = (np.arange(5) / 4) ** (5 if ladder == "power" else 1)
    np.testing.assert_allclose(result.temperatures, expected)
    explicit = sti_log_evidence(model, x, temperatures=[0.0, 0.3, 1.0], n_samples=60, n_burnin=20, random_state=0)
    np.testing.assert_allclose(explicit.temperatures, [0.0, 0.3, 1.0])


@pytest.mark.parametrize("sampler", ["sgld", "psgld", SGLD(), PSGLD(adapt="always")])
def test_samplers_run(sampler):
    x = np.random.default_rng(3).normal(size=100)
    result = sti_log_evidence(
        GaussianAdditive(1), x, sampler=sampler, step_size=1e-3, step_decay=0.0,
        temperatures=3, n_samples=100, n_burnin=50, random_state=0,
    )
    assert np.isfinite(result.log_evidence) and np.isfinite(result.std_error)


def test_verbose_reports_each_temperature(capsys):
    x = np.random.default_rng(3).normal(size=50)
    sti_log_evidence(GaussianAdditive(1), x, temperatures=3, n_samples=40, n_burnin=10, verbose=2, random_state=0)
    err = capsys.readouterr().err
    assert err.count("[STI]") == 4 and "4/4" in err


X_OK = np.random.default_rng(0).normal(size=50)


@pytest.mark.parametrize(
    "x, kwargs, match",
    [
        (np.r_[X_OK, np.nan], {}, "NaN or infinity"),
        (np.r_[X_OK, np.inf], {}, "NaN or infinity"),
        (np.array([]), {}, "empty"),
        (X_OK, {"temperatures": [0.1, 0.5, 1.0]}, "start at 0 and end at 1"),
        (X_OK, {"temperatures": [0.0, 0.5, 0.9]}, "start at 0 and end at 1"),
        (X_OK, {"temperatures": [0.0, 0.7, 0.4, 1.0]}, "strictly increasing"),
        (X_OK, {"temperatures": 0}, ">= 1"),
        (X_OK, {"ladder": "cosine"}, "ladder must be one of"),
        (X_OK, {"n_samples": 100, "n_burnin": 100}, "n_burnin"),
        (X_OK, {"n_samples": 100, "n_burnin": 150}, "n_burnin"),
        (X_OK, {"n_samples": 0}, "n_samples must be an integer >= 1"),
        (X_OK, {"n_burnin": -1}, "n_burnin must be an integer >= 0"),
        (X_OK, {"batch_size": 0}, "batch_size must be an integer >= 1"),
        (X_OK, {"step_size": -1.0}, "step_size must be a positive number"),
        (X_OK, {"step_size": np.nan}, "step_size must be a positive number"),
        (X_OK, {"step_decay": 1.5}, "step_decay must be in"),
        (X_OK, {"sampler": "nuts"}, "sampler must be one of"),
        (X_OK, {"random_state": -3}, "random_state must be non-negative"),
    ],
)
def test_bad_input_raises_value_error_naming_the_problem(x, kwargs, match):
    with pytest.raises(ValueError, match=match):
        sti_log_evidence(GaussianAdditive(1), x, **{"n_samples": 50, "n_burnin": 10, **kwargs})


def test_linear_regression_bad_input():
    with pytest.raises(ValueError, match="y is required"):
        sti_log_evidence(LinearGaussian(2), np.ones((5, 2)))
    with pytest.raises(ValueError, match="NaN or infinity"):
        sti_log_evidence(LinearGaussian(2), np.ones((5, 2)), np.array([1, 2, np.nan, 4, 5]))


def test_diverging_chain_names_the_step_size():
    x = np.random.default_rng(0).normal(size=500)
    with pytest.raises(SamplerDivergenceError, match=r"diverged.*Lower step_size") as info:
        sti_log_evidence(
            GaussianAdditive(2), x, sampler="sgld", step_size=10.0, step_decay=0.0,
            temperatures=3, n_samples=200, n_burnin=50, random_state=0,
        )
    assert isinstance(info.value, ValueError)
    assert info.value.step_size == 10.0 and info.value.temperature > 0


def test_reweighted_prior_draws_match_the_exact_integrand(seed):
    """At tiny t, exact prior draws reweighted by p(x|theta)^t give E_t[log p(x|theta)]."""
    mu, s2, sx, n, rank = 0.5, 1.0, 1.0, 200, 2
    x = _gaussian_additive_data(seed, mu, s2, sx, n, rank)
    ts = [0.0, 1e-5, 1e-4, 1.0]
    result = sti_log_evidence(
        GaussianAdditive(rank, mu, s2, sx), x, temperatures=ts, batch_size=n,
        n_samples=3000, n_burnin=500, random_state=seed,
    )
    reweighted = result.diagnostics["reweighted_prior"]
    assert not reweighted[0] and reweighted[1] and not reweighted[-1]

    def exact_integrand(t):  # the power posterior of sum(theta) is Gaussian
        precision = 1 / (rank * s2) + t * n / sx
        mean = (rank * mu / (rank * s2) + t * n * x.mean() / sx) / precision
        sq = ((x - x.mean()) ** 2).sum() + n * ((x.mean() - mean) ** 2 + 1 / precision)
        return -n / 2 * np.log(2 * np.pi * sx) - sq / (2 * sx)

    for i in np.flatnonzero(reweighted):
        err = abs(result.expected_log_likelihood[i] - exact_integrand(ts[i]))
        assert err <= 4 * result.expected_log_likelihood_std[i]


def test_posterior_mean_of_the_last_chain(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(1000, 2))
    y = X @ [1.0, -1.0] + 0.5 + rng.normal(size=1000)
    model = LinearGaussian(2)
    result = sti_log_evidence(model, X, y, temperatures=10, batch_size=200, random_state=seed)
    mean, cov = model.posterior(X, y)
    # 2000 kept samples of a chain that decorrelates within ~100 steps: the
    # Monte-Carlo error of the mean is well below half a posterior sd.
    np.testing.assert_array_less(np.abs(result.posterior_mean - mean), 0.5 * np.sqrt(np.diag(cov)))


def test_warns_when_the_integrand_decreases():
    """A chain runner whose traces fall with t (chains stuck off equilibrium) triggers a warning."""
    from sklearn.exceptions import ConvergenceWarning

    from skevidence.evidence import ChainTrace

    class StuckRunner:
        batch_size = 10

        def initial_state(self, rng):
            return np.zeros(1)

        def run(self, state, temperature, *, n_samples, n_burnin, schedule, rng):
            kept = -100.0 * temperature + rng.normal(size=n_samples - n_burnin)
            return state, ChainTrace(kept, n_samples * 10, 1e-3)

    class StuckModel(GaussianAdditive):
        def chain_runner(self, X, y, *, sampler, batch_size):
            return StuckRunner()

    x = np.random.default_rng(0).normal(size=100)
    with pytest.warns(ConvergenceWarning, match="did not equilibrate"):
        sti_log_evidence(StuckModel(1), x, temperatures=3, n_samples=100, n_burnin=10, random_state=0)


_RNG = np.random.default_rng


@pytest.mark.parametrize(
    "make_estimator, X, y, sampler",
    [
        (lambda: GaussianAdditiveModel(n_components=2), _RNG(0).normal(5, 2, (500, 1)), None, "psgld"),
        (lambda: GaussianAdditiveModel(n_components=2), _RNG(0).normal(5, 2, (500, 1)), None, "sgld"),
        (lambda: BayesianLinearRegression(), _RNG(1).normal(size=(300, 2)), _RNG(2).normal(size=300), "sgld"),
        (lambda: BayesianGMM(n_components=2, method="sti"), _RNG(3).normal(size=(300, 2)), None, "psgld"),
        (lambda: BayesianGMM(n_components=2, method="sti"), _RNG(3).normal(size=(300, 2)), None, "sgld"),
    ],
    ids=["gaussian-additive-psgld", "gaussian-additive-sgld", "linear-regression-sgld", "gmm-psgld", "gmm-sgld"],
)
def test_diverging_chain_raises_naming_the_step_size(make_estimator, X, y, sampler):
    # A chain whose steps are far too long can stay finite while its drift
    # carries it far past the posterior (log Z = -1e112 and worse): it must
    # raise, not return that number.
    est = make_estimator().set_params(
        method_params=dict(step_size=1e6, sampler=sampler, temperatures=3, n_samples=300, n_burnin=100),
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(SamplerDivergenceError, match="step size") as info:
            est.fit(X, y)
    assert info.value.step_size > 0
