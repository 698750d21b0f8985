"""What the evidence-scored estimators share: fit bookkeeping, ``score``, and the continuous models' methods."""

import warnings
from dataclasses import replace

import joblib
import numpy as np
from sklearn.utils.validation import check_array, check_is_fitted, check_X_y, validate_data

from ..evidence import ais_log_evidence, exact_log_evidence, sgais_log_evidence, sti_log_evidence
from ..evidence.sti import prepare_finite_data
from ._methods import method_kwargs

__all__ = [
    "CONTINUOUS_PARAMETER_CONSTRAINTS",
    "METHOD_FUNCTIONS",
    "ContinuousEvidenceMixin",
    "EvidenceEstimatorMixin",
    "ExactEvidenceMixin",
]

#: The function each ``method`` of the continuous estimators runs; ``method_params``
#: holds its keyword arguments (``"rti"``: STI on the model seen from its Laplace fit).
METHOD_FUNCTIONS = {
    "rti": sti_log_evidence,
    "sti": sti_log_evidence,
    "sgais": sgais_log_evidence,
    "ais": ais_log_evidence,
    "exact": exact_log_evidence,
}

#: Arguments of those functions the estimators pass from their own parameters.
RESERVED = ("random_state", "verbose")

#: Constraints of the parameters every continuous estimator has besides its model's and ``method``.
CONTINUOUS_PARAMETER_CONSTRAINTS = {
    "method_params": [dict, None],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}


class EvidenceEstimatorMixin:
    """Fit = estimate the evidence of the data; ``score`` = log-evidence.

    Subclasses implement ``_make_model(X)`` (the
    :class:`~skevidence.models.EvidenceModel` for the current parameters) and
    ``_evidence(model, X, y)`` (the :class:`~skevidence.evidence.EvidenceResult`
    of the data), set ``_supervised``, and call :meth:`_fit_evidence` from ``fit``.
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

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data.
        y : array-like of shape (n_samples,), default=None
            Targets, for supervised models.

        Returns
        -------
        log_evidence : float
        """
        check_is_fitted(self)
        X, y = self._validate_fit_data(X, y, reset=False)
        if joblib.hash((X, y)) == self._fitted_data_hash:
            return self.log_evidence_
        return self._evidence(self._make_model(X), X, y).log_evidence


class ContinuousEvidenceMixin(EvidenceEstimatorMixin):
    """The continuous models' ``method`` and ``method_params``.

    ``method`` names what runs (:data:`METHOD_FUNCTIONS`); ``method_params``
    holds keyword arguments of that function, checked by
    :func:`~skevidence.estimators._methods.method_kwargs` when the estimator
    fits. Subclasses may set ``_method_defaults``: per method, their own
    defaults where they differ from the function's.
    """

    #: ``{method: {setting: default}}``: the estimator's defaults that differ from the function's.
    _method_defaults = {}

    def _method_params(self):
        """Keyword arguments of the function ``method`` runs: the estimator's defaults, then ``method_params``."""
        kwargs = method_kwargs(self, METHOD_FUNCTIONS[self.method], reserved=RESERVED)
        return {**self._method_defaults.get(self.method, {}), **kwargs}

    def _evidence(self, model, X, y):
        """Log-evidence of ``(X, y)`` by ``self.method``."""
        params = self._method_params()
        if self.method == "exact":
            return exact_log_evidence(model, X, y)
        seeded = dict(params, random_state=self.random_state, verbose=self.verbose)
        if self.method == "rti":
            return self._referenced_evidence(model, X, y, seeded)
        return METHOD_FUNCTIONS[self.method](model, X, y, **seeded)

    def _referenced_evidence(self, model, X, y, params):
        """STI on ``model`` seen from its Laplace fit; from the prior, with a warning, if there is none.

        ``result_.diagnostics["path"]`` says which ran: ``"laplace"`` or ``"prior"``.
        """
        from ..models._referenced import GaussianReferencedModel, laplace_reference

        Xp, yp, n_data = prepare_finite_data(model, X, y)
        # A fixed start: the fit must not draw from the stream that seeds the chains.
        found = laplace_reference(model, Xp, yp, random_state=0)
        if found is None:
            warnings.warn(
                f"{type(self).__name__}: no Laplace fit of the posterior (the optimiser failed or its "
                "Hessian is not negative definite); method='rti' ran STI from the prior, as method='sti' "
                "does (result_.diagnostics['path'] is 'prior').",
                UserWarning,
                stacklevel=5,
            )
            result, path = sti_log_evidence(model, X, y, **params), "prior"
        else:
            result = sti_log_evidence(GaussianReferencedModel(model, *found, n_data), X, y, **params)
            path = "laplace"
        return replace(result, method="rti", diagnostics={**result.diagnostics, "path": path})


class ExactEvidenceMixin:
    """``exact_log_evidence`` for estimators whose model has a closed form."""

    def exact_log_evidence(self, X, y=None):
        """Closed-form log-evidence of ``X`` (and ``y``) under the current parameters.

        Needs no fit; it is what ``method="exact"`` computes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data.
        y : array-like of shape (n_samples,), default=None
            Targets, for supervised models.

        Returns
        -------
        log_evidence : float
        """
        X, y = self._validate_fit_data(X, y, reset=None)
        model = self._make_model(X)
        return model.exact_log_evidence(X) if y is None else model.exact_log_evidence(X, y)
