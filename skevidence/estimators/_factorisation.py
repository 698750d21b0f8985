"""What the CP-model estimators (PoissonNMF, PoissonPARAFAC) share: the method that runs, the fit, ``score``.

A model estimator adds its input validation, its prior rates and its fitted
factors; the evidence comes from the function of :mod:`skevidence.cp` that
``method`` names, with ``method_params`` as its keyword arguments.
"""

from numbers import Real

import joblib
import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._docstrings import fill_doc
from ..cp import chib_log_evidence, referenced_ti_log_evidence, smc_log_evidence, sti_log_evidence
from ._methods import EVIDENCE_PARAMETER_CONSTRAINTS, method_kwargs

__all__ = ["CP_METHODS", "CP_PARAMETER_CONSTRAINTS", "CPEstimatorMixin"]

#: What each ``method`` runs.
CP_METHODS = {
    "rti": referenced_ti_log_evidence,
    "sti": sti_log_evidence,
    "smc": smc_log_evidence,
    "chib": chib_log_evidence,
}

#: The methods that take a likelihood other than Poisson (the others rest on the Poisson likelihood's latent counts).
_ANY_LIKELIHOOD = ("rti", "sti")

#: What the estimator passes to the method itself, from its own parameters.
_RESERVED = ("likelihood", "likelihood_shape", "noise_floor", "tol", "random_state", "verbose")

#: Constraints of the parameters every CP-model estimator has.
CP_PARAMETER_CONSTRAINTS = {
    "method": [StrOptions(set(CP_METHODS))],
    "tol": [Interval(Real, 0, None, closed="neither"), None],
    **EVIDENCE_PARAMETER_CONSTRAINTS,
}


@fill_doc
class CPEstimatorMixin:
    """Fit = the evidence of a CP model of ``X`` and the posterior means of its factors.

    Subclasses implement the static ``_validate_input(estimator, X, reset)``
    (``validate_data`` and the model's own checks; the rank selectors call it
    too), ``_prior_rates(X)`` and ``_set_factors(factors)`` (the fitted
    attributes from the posterior means, one ``(n_m, R)`` array per mode), and
    name their rank parameter in ``_rank_param``.
    """

    #: The likelihood's name, shape and noise floor (the estimators without the parameters are Poisson).
    likelihood = "poisson"
    likelihood_shape = 1.0
    noise_floor = 0.0

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        return tags

    def _log_evidence(self, X):
        """The :class:`~skevidence.EvidenceResult` of ``X`` (validated) by ``method``."""
        function = CP_METHODS[self.method]
        kwargs = method_kwargs(self, function, reserved=_RESERVED)
        if self.method in _ANY_LIKELIHOOD:
            kwargs.update(likelihood=self.likelihood, likelihood_shape=self.likelihood_shape,
                          noise_floor=self.noise_floor)
        elif self.likelihood != "poisson" or self.noise_floor:
            raise ValueError(
                f"likelihood={self.likelihood!r} with noise_floor={self.noise_floor:g} is estimated by method='rti' "
                f"or 'sti'; method={self.method!r} rests on the Poisson likelihood's latent counts (no floor)."
            )
        if self.method == "rti":
            kwargs["tol"] = self.tol
        return function(X, getattr(self, self._rank_param), self._prior_rates(X), **kwargs,
                        random_state=self.random_state, verbose=self.verbose)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Estimate the evidence of ``X`` and the posterior means of the factors.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features), or of shape (I, J, K) or (I, J)
            Non-negative data: a matrix for :class:`PoissonNMF` (counts for
            Poisson; powers for the exponential and Gamma likelihoods), a
            tensor of counts for :class:`PoissonPARAFAC` (a 2-D input is taken
            as ``(I, J, 1)``; a sparse tensor is a 3-D
            :class:`scipy.sparse.coo_array`). Duplicate entries of sparse input
            are summed.
        %(y_ignored_fitted)s
        """
        X = self._validate_input(self, X, reset=True)
        return self._set_fitted(X, self._log_evidence(X))

    def _set_fitted(self, X, result):
        """The fitted attributes from the :class:`~skevidence.EvidenceResult` of the validated ``X``."""
        self.result_ = result
        self.log_evidence_ = self.result_.log_evidence
        self.log_evidence_std_ = self.result_.std_error
        self.prior_rates_ = tuple(np.broadcast_to(self._prior_rates(X), (len(X.shape),)).astype(float))
        self._set_factors([np.asarray(F, dtype=np.float64) for F in self.result_.posterior_mean])
        self._fitted_data_hash = joblib.hash(X)
        return self

    def score(self, X, y=None):
        """Log-evidence :math:`\\log p(X)` under the model.

        %(score_cached)s

        Parameters
        ----------
        X : array-like or sparse
            Non-negative data, as ``fit`` takes it.
        y : None
            Ignored.

        Returns
        -------
        log_evidence : float
        """
        check_is_fitted(self)
        X = self._validate_input(self, X, reset=False)
        if joblib.hash(X) == self._fitted_data_hash:
            return self.log_evidence_
        return self._log_evidence(X).log_evidence
