"""The parameter groups added to ``__init__`` and the docstring parts filled with their defaults."""

import ast
import inspect
import math
import re

import pytest
from sklearn.base import BaseEstimator, clone

import skevidence.estimators as estimators
from skevidence.estimators._base import EVIDENCE_PARAMETERS
from skevidence.estimators._docs import fill_doc
from skevidence.estimators._signature import shared_parameters

ESTIMATORS = [
    cls for cls in (getattr(estimators, name) for name in estimators.__all__)
    if inspect.isclass(cls) and issubclass(cls, BaseEstimator)
]


@shared_parameters({"alpha": 1.0, "mode": "fast"}, mode="slow", seed=None)
class _Toy(BaseEstimator):
    def __init__(self, size=3, *, label="a"):
        self.size = size
        self.label = label


def test_group_joins_the_signature_as_keyword_only_parameters():
    parameters = inspect.signature(_Toy).parameters
    assert list(parameters) == ["size", "label", "alpha", "mode", "seed"]
    assert [parameters[name].kind for name in ("alpha", "mode", "seed")] == [inspect.Parameter.KEYWORD_ONLY] * 3
    assert {name: parameters[name].default for name in ("alpha", "mode", "seed")} == {
        "alpha": 1.0, "mode": "slow", "seed": None,
    }


def test_init_stores_every_parameter_unchanged():
    toy = _Toy(5, alpha=2.5, label="b")
    assert toy.get_params() == {"size": 5, "label": "b", "alpha": 2.5, "mode": "slow", "seed": None}
    assert clone(toy).get_params() == toy.get_params()
    with pytest.raises(TypeError, match="unexpected keyword"):
        _Toy(beta=1)
    with pytest.raises(TypeError):
        _Toy(1, 2)  # the group's parameters are keyword-only


def test_positional_group_follows_the_own_positional_parameters():
    @shared_parameters({"tol": 1.0}, positional={"rate": 2.0, "seed": None})
    class _Selector(BaseEstimator):
        def __init__(self, ranks=(1, 2), *, memory=None):
            self.ranks = ranks
            self.memory = memory

    parameters = inspect.signature(_Selector).parameters
    assert list(parameters) == ["ranks", "rate", "seed", "memory", "tol"]
    assert [p.kind for p in parameters.values()] == [inspect.Parameter.POSITIONAL_OR_KEYWORD] * 3 + [
        inspect.Parameter.KEYWORD_ONLY] * 2
    selector = _Selector((3,), 5.0, 7, tol=0.5)
    assert selector.get_params() == {"ranks": (3,), "rate": 5.0, "seed": 7, "memory": None, "tol": 0.5}
    with pytest.raises(TypeError, match="too many positional"):
        _Selector((3,), 5.0, 7, None)


def test_a_group_may_not_repeat_a_parameter_of_the_class():
    with pytest.raises(TypeError, match=r"already takes \['size'\]"):
        @shared_parameters({"size": 4})
        class _Clash(BaseEstimator):
            def __init__(self, size=3):
                self.size = size


def test_fill_doc_writes_the_signature_defaults_into_the_parts():
    @fill_doc
    @shared_parameters(EVIDENCE_PARAMETERS, batch_size=123, n_particles=7)
    class _Documented(BaseEstimator):
        """Toy.

        Parameters
        ----------
        %(evidence_parameters)s
        """

        def __init__(self):
            pass

    assert "batch_size : int, default=123\n" in _Documented.__doc__
    assert "n_particles : int, default=7\n" in _Documented.__doc__
    assert "learning_rate : float, default=0.1\n" in _Documented.__doc__
    assert "%(" not in _Documented.__doc__ and "<>" not in _Documented.__doc__


def test_fill_doc_refuses_a_part_whose_parameters_the_class_lacks():
    with pytest.raises(TypeError, match="documents 'temperatures'"):
        @fill_doc
        class _Undocumented(BaseEstimator):
            """Toy.

            Parameters
            ----------
            %(evidence_parameters)s
            """


def _same(documented, default):
    if isinstance(documented, float) and isinstance(default, float) and math.isnan(default):
        return math.isnan(documented)
    return documented == default


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_every_documented_default_is_the_signature_default(cls):
    """The defaults a class docstring states (written out or filled from a part) are its signature's."""
    assert "%(" not in cls.__doc__ and "default=<>" not in cls.__doc__
    parameters = inspect.signature(cls).parameters
    section = cls.__doc__.split("Attributes\n")[0]
    checked = 0
    for name, text in re.findall(r"^\s*(\w+) : [^\n]*default=([^\n]+)$", section, re.M):
        if "..." in text:
            continue
        try:
            documented = ast.literal_eval(text.strip().replace("np.nan", "float('nan')"))
        except ValueError:
            documented = float("nan") if text.strip() == "np.nan" else text
        assert name in parameters, f"{cls.__name__} documents {name!r}, which it does not take"
        assert _same(documented, parameters[name].default), (cls.__name__, name, text, parameters[name].default)
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("cls", [estimators.BayesianNMFRankSelector, estimators.PARAFACRankSelector],
                         ids=lambda cls: cls.__name__)
def test_selectors_hand_their_models_every_shared_parameter_but_verbose(cls):
    selector = set(inspect.signature(cls).parameters)
    model = set(inspect.signature(cls._model_class).parameters)
    assert set(cls._passthrough) == (selector & model) - {"verbose"}
    assert {"prior_rate", "method", "reference", "tol", "n_blocks", "sampler", "random_state"} <= set(cls._passthrough)
    assert set(cls._parameter_constraints) == selector
