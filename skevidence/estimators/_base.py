"""What every evidence-scored estimator shares: STI settings, fit bookkeeping, ``score``."""

import warnings
from numbers import Integral, Real

import joblib
import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array, check_is_fitted, check_X_y, validate_data

from .._config import SGAIS_DEFAULTS, STI_DEFAULTS
from ..evidence import ais_log_evidence, exact_log_evidence, sgais_log_evidence, sti_log_evidence
from ..evidence.sti import prepare_finite_data
from ..samplers import Sampler
from ._docs import fill_doc

__all__ = [
    "CLOSED_FORM_METHOD_CONSTRAINTS",
    "EVIDENCE_PARAMETERS",
    "EVIDENCE_PARAMETER_CONSTRAINTS",
    "EvidenceEstimatorMixin", "ExactEvidenceMixin",
]

#: Constraints of the STI settings, shared by every estimator that has them.
STI_PARAMETER_CONSTRAINTS = {
    "temperatures": [Interval(Integral, 1, None, closed="left"), "array-like"],
    "ladder": [StrOptions({"power", "uniform"})],
    "n_samples": [Interval(Integral, 2, None, closed="left")],
    "n_burnin": [Interval(Integral, 0, None, closed="left")],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "sampler": [StrOptions({"sgld", "psgld"}), Sampler],
    "step_size": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
    "step_decay": [Interval(Real, 0, 1, closed="both")],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}

#: The parameters of every continuous-model estimator beyond its model's: the
#: STI and SGAIS settings, the seed and the verbosity (added to each ``__init__``
#: by :func:`~skevidence.estimators._signature.shared_parameters`).
EVIDENCE_PARAMETERS = {**STI_DEFAULTS, **SGAIS_DEFAULTS, "random_state": None, "verbose": 0}

#: Constraints of the SGAIS settings (``batch_size``, ``random_state`` and
#: ``verbose`` are shared with STI). ``target_ess <= n_particles`` is checked at fit.
SGAIS_PARAMETER_CONSTRAINTS = {
    "n_particles": [Interval(Integral, 2, None, closed="left")],
    "target_ess": [Interval(Real, 1, None, closed="neither")],
    "chunk_size": [Interval(Integral, 1, None, closed="left"), None],
    "n_steps": [Interval(Integral, 1, None, closed="left")],
    "learning_rate": [Interval(Real, 0, None, closed="neither")],
    "resample": ["boolean"],
    "reservoir_size": [Interval(Integral, 1, None, closed="left"), None],
}


#: Constraints of :data:`EVIDENCE_PARAMETERS`.
EVIDENCE_PARAMETER_CONSTRAINTS = {**STI_PARAMETER_CONSTRAINTS, **SGAIS_PARAMETER_CONSTRAINTS}

#: Constraints of ``method`` and ``reference`` of the estimators whose model has a
#: closed form (and so ``method="exact"``) and a Laplace-referenced STI path.
CLOSED_FORM_METHOD_CONSTRAINTS = {
    "method": [StrOptions({"sti", "exact", "sgais", "ais"})],
    "reference": [StrOptions({"laplace", "prior"})],
}


@fill_doc
class EvidenceEstimatorMixin:
    """Fit = estimate the evidence of the data; ``score`` = log-evidence.

    Subclasses implement ``_make_model(X)`` (the
    :class:`~skevidence.models.EvidenceModel` for the current parameters),
    set ``_supervised``, and call :meth:`_fit_evidence` from ``fit``.
    """

    #: Whether ``fit`` takes a target ``y``.
    _supervised = False
    #: Parameters the time of a fit grows with; EvidenceGridSearch dispatches
    #: the candidates of largest product first when it runs them in parallel.
    _cost_params = ()

    def _validate_fit_data(self, X, y, reset):
        """Validate data; ``reset=None`` checks it without touching fitted state."""
        kwargs = dict(dtype=np.float64, ensure_min_samples=1)
        if self._supervised:
            if reset is None:
                return check_X_y(X, y, y_numeric=True, **kwargs)
            return validate_data(self, X, y, reset=reset, y_numeric=True, **kwargs)
        if reset is None:
            return check_array(X, **kwargs), None
        return validate_data(self, X, reset=reset, **kwargs), None

    def _sti_params(self):
        return {name: getattr(self, name) for name in STI_DEFAULTS} | {
            "random_state": self.random_state,
            "verbose": self.verbose,
        }

    def _sgais_params(self):
        """Settings of :func:`~skevidence.evidence.sgais_init` from the estimator's parameters."""
        return {name: getattr(self, name) for name in SGAIS_DEFAULTS} | {
            "batch_size": self.batch_size,
            "random_state": self.random_state,
        }

    def _ais_params(self):
        """Settings of :func:`~skevidence.evidence.ais_log_evidence` from the estimator's parameters.

        AIS shares ``n_particles`` with SGAIS and the ladder (``temperatures``,
        ``ladder``) with STI; its transitions keep the function's defaults.
        """
        return {
            "n_particles": self.n_particles,
            "n_temperatures": self.temperatures,
            "ladder": self.ladder,
            "random_state": self.random_state,
            "verbose": self.verbose,
        }

    def _evidence(self, model, X, y):
        """Log-evidence of prepared ``(X, y)`` by ``self.method``."""
        if self.method == "exact":
            return exact_log_evidence(model, X, y)
        if self.method == "sgais":
            return sgais_log_evidence(model, X, y, **self._sgais_params(), verbose=self.verbose)
        if self.method == "ais":
            return ais_log_evidence(model, X, y, **self._ais_params())
        return sti_log_evidence(self._sti_model(model, X, y), X, y, **self._sti_params())

    def _sti_model(self, model, X, y):
        """The model STI runs on: ``model``, or with ``reference="laplace"`` the model seen from its Laplace fit."""
        if getattr(self, "reference", "prior") != "laplace":
            return model
        from ..models._referenced import GaussianReferencedModel, laplace_reference

        Xp, yp = prepare_finite_data(model, X, y)[:2]
        # A fixed start: the fit must not draw from the stream that seeds the chains.
        found = laplace_reference(model, Xp, yp, random_state=0)
        if found is None:
            warnings.warn(
                f"{type(self).__name__}: no Laplace fit of the posterior (the optimiser failed or its "
                "Hessian is not negative definite); STI runs from the prior (reference='prior').",
                UserWarning,
                stacklevel=4,
            )
            return model
        return GaussianReferencedModel(model, *found, model.n_data(Xp, yp))

    def _fit_evidence(self, X, y=None):
        """Set ``result_``, ``log_evidence_``, ``log_evidence_std_`` for the fitted data."""
        model = self._make_model(X)
        self.result_ = self._evidence(model, X, y)
        self.log_evidence_ = self.result_.log_evidence
        self.log_evidence_std_ = self.result_.std_error
        self._fitted_data_hash = joblib.hash((X, y))
        return model

    def score(self, X, y=None):
        """Log-evidence :math:`\\log p(X)` of the given data under the model.

        For the data the estimator was fitted on this is the cached
        ``log_evidence_``; for other data the evidence is estimated anew with
        the same settings and ``random_state``.

        %(evidence_of_data)s
        """
        check_is_fitted(self)
        X, y = self._validate_fit_data(X, y, reset=False)
        if joblib.hash((X, y)) == self._fitted_data_hash:
            return self.log_evidence_
        return self._evidence(self._make_model(X), X, y).log_evidence


@fill_doc
class ExactEvidenceMixin:
    """``exact_log_evidence`` for estimators whose model has a closed form."""

    def exact_log_evidence(self, X, y=None):
        """Closed-form log-evidence of ``X`` (and ``y``) under the current parameters.

        Needs no fit; it is what ``method="exact"`` computes.

        %(evidence_of_data)s
        """
        X, y = self._validate_fit_data(X, y, reset=None)
        model = self._make_model(X)
        return model.exact_log_evidence(X) if y is None else model.exact_log_evidence(X, y)
