"""The continuous estimators' ``method`` and ``method_params``: what each method runs, with which settings."""

import inspect
import warnings

import numpy as np
import pytest

from skevidence import (
    BayesianGMM,
    BayesianLinearRegression,
    BayesianLogisticRegression,
    GaussianAdditiveModel,
    ais_log_evidence,
    sgais_log_evidence,
    sti_log_evidence,
)
from skevidence.estimators._methods import method_settings
from skevidence.models import DiagonalGaussianMixture, GaussianAdditive, LinearGaussian

#: Short runs of each method: these tests check what runs, not its accuracy.
SHORT = {
    "rti": dict(temperatures=2, n_samples=40, n_burnin=10),
    "sti": dict(temperatures=2, n_samples=40, n_burnin=10),
    "sgais": dict(n_particles=4, target_ess=3, n_steps=2),
    "ais": dict(n_particles=3, n_temperatures=4),
    "exact": None,
}

#: Each estimator, its methods, and data it fits.
ESTIMATORS = {
    GaussianAdditiveModel: (("rti", "sti", "exact", "sgais", "ais"), "additive"),
    BayesianLinearRegression: (("rti", "sti", "exact", "sgais", "ais"), "regression"),
    BayesianLogisticRegression: (("sgais", "ais", "sti"), "classification"),
    BayesianGMM: (("sgais", "ais", "sti"), "mixture"),
}

CASES = [(cls, method) for cls, (methods, _) in ESTIMATORS.items() for method in methods]


def _data(kind):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    if kind == "additive":
        return X[:, :1] + 2.0, None
    if kind == "regression":
        return X, X @ [1.0, -0.5] + rng.normal(size=60)
    if kind == "classification":
        return X, (X[:, 0] > 0).astype(int)
    return X, None


def _fit(est, kind):
    X, y = _data(kind)
    with warnings.catch_warnings():
        # Ladders of a few temperatures: degenerate weights and rising integrands are expected.
        warnings.simplefilter("ignore")
        return est.fit(X, y)


@pytest.mark.parametrize("cls, method", CASES, ids=[f"{c.__name__}-{m}" for c, m in CASES])
def test_result_method_is_the_method_asked_for(cls, method):
    est = _fit(cls(method=method, method_params=SHORT[method], random_state=0), ESTIMATORS[cls][1])
    assert est.result_.method == method
    assert np.isfinite(est.log_evidence_)


@pytest.mark.parametrize("cls, method", CASES, ids=[f"{c.__name__}-{m}" for c, m in CASES])
def test_an_unknown_setting_is_refused_naming_the_allowed_ones(cls, method):
    function = {"rti": sti_log_evidence, "sti": sti_log_evidence, "sgais": sgais_log_evidence,
                "ais": ais_log_evidence}.get(method)
    allowed = method_settings(function, reserved=("random_state", "verbose")) if function else []
    est = cls(method=method, method_params={"n_sampels": 10})
    with pytest.raises(ValueError, match="n_sampels") as info:
        _fit(est, ESTIMATORS[cls][1])
    assert f"its settings are {allowed}" in str(info.value)
    for name in ("random_state", "verbose"):
        with pytest.raises(ValueError, match=name):
            _fit(cls(method=method, method_params={name: 0}), ESTIMATORS[cls][1])


@pytest.mark.parametrize("cls", list(ESTIMATORS), ids=lambda cls: cls.__name__)
def test_signatures_are_small_and_method_params_is_a_dict(cls):
    parameters = inspect.signature(cls).parameters
    assert len(parameters) <= 9
    assert {"method", "method_params", "random_state", "verbose"} <= set(parameters)
    assert parameters["method_params"].default is None
    assert cls._parameter_constraints["method_params"] == [dict, None]
    with pytest.raises(ValueError, match="method_params"):
        _fit(cls(method_params=[("n_particles", 4)]), ESTIMATORS[cls][1])


def test_default_method_params_are_the_functions_defaults():
    X, y = _data("regression")
    est = BayesianLinearRegression(method="sgais", random_state=3).fit(X, y)
    assert est.log_evidence_ == sgais_log_evidence(LinearGaussian(2), X, y, random_state=3).log_evidence
    x = _data("additive")[0]
    with warnings.catch_warnings():
        # 60 points from the prior's tail: the default chains need not equilibrate; the test is the settings.
        warnings.simplefilter("ignore")
        est = GaussianAdditiveModel(2, method="sti", random_state=3).fit(x)
        assert est.log_evidence_ == sti_log_evidence(GaussianAdditive(2), x, random_state=3).log_evidence
    assert est.result_.diagnostics["n_samples"] == inspect.signature(sti_log_evidence).parameters["n_samples"].default
    assert est.result_.temperatures.size == 21


def test_method_params_reach_the_function_and_override_the_estimators_defaults():
    X = _data("mixture")[0]
    model = DiagonalGaussianMixture(2, 2)
    gmm = BayesianGMM(2, random_state=1).fit(X)
    assert {k: gmm.result_.diagnostics[k] for k in ("n_particles", "target_ess", "learning_rate")} == {
        "n_particles": 30, "target_ess": 24, "learning_rate": 1.0,
    }
    direct = sgais_log_evidence(model, X, n_particles=30, target_ess=24, learning_rate=1.0, random_state=1)
    assert gmm.log_evidence_ == direct.log_evidence
    gmm = BayesianGMM(2, method_params={"n_particles": 6, "target_ess": 4}, random_state=1).fit(X)
    direct = sgais_log_evidence(model, X, n_particles=6, target_ess=4, learning_rate=1.0, random_state=1)
    assert gmm.log_evidence_ == direct.log_evidence and gmm.particles_.shape[0] == 6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ais = BayesianGMM(2, method="ais", method_params=SHORT["ais"], random_state=1).fit(X)
        direct = ais_log_evidence(model, X, **SHORT["ais"], random_state=1)
    assert ais.log_evidence_ == direct.log_evidence and ais.particles_.shape[0] == 3


def test_init_only_stores_and_fit_validates():
    est = GaussianAdditiveModel(method_params={"not_a_setting": 1})
    assert est.get_params()["method_params"] == {"not_a_setting": 1}
    with pytest.raises(ValueError, match="not_a_setting"):
        est.fit(np.ones((3, 1)))
