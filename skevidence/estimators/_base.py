"""What the continuous evidence-scored estimators share: ``fit``, ``partial_fit``, ``score`` and their methods."""

import warnings
from dataclasses import replace

import joblib
import numpy as np
from scipy.special import logsumexp
from sklearn.base import _fit_context
from sklearn.utils import gen_batches
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_array, check_is_fitted, check_X_y, validate_data

from .._docstrings import fill_doc
from ..evidence import ais_log_evidence, exact_log_evidence, sgais_log_evidence, sti_log_evidence
from ..evidence.sgais import sgais_advance, sgais_init
from ..evidence.sti import prepare_finite_data
from ._methods import method_kwargs

#: The function each ``method`` of the continuous estimators runs; ``method_params``
#: holds its keyword arguments (``"rti"``: STI on the model seen from its Laplace fit).
METHOD_FUNCTIONS = {
    "rti": sti_log_evidence,
    "sti": sti_log_evidence,
    "sgais": sgais_log_evidence,
    "ais": ais_log_evidence,
    "exact": exact_log_evidence,
}

#: Arguments of those functions the estimators pass from their own parameters; they
#: may change between partial_fit calls without breaking the stream.
RESERVED = ("random_state", "verbose")


def _method_is_sgais(estimator):
    if estimator.method != "sgais":
        raise AttributeError(
            f"partial_fit updates the evidence online with method='sgais' only; this {type(estimator).__name__} "
            f"has method={estimator.method!r}. Set method='sgais', or call fit with all the data."
        )
    return True


@fill_doc
class ContinuousEvidenceMixin:
    r"""Fit = estimate the evidence of the data; ``score`` = log-evidence; ``partial_fit`` by SGAIS.

    Subclasses implement ``_make_model(X)`` (the
    :class:`~skevidence.models.EvidenceModel` for the current parameters),
    set ``_supervised``, and may override the hooks ``_fit_targets(X, y,
    classes, first)`` (the ``(X, y)`` the model sees: a classifier sets
    ``classes_`` on the first call, checks it later and encodes ``y``) and
    ``_set_posterior(model, X, y, first)`` (the fitted attributes besides the
    evidence, from the data just added, all of them when ``first``).
    """

    #: Whether ``fit`` takes a target ``y``.
    _supervised = False
    #: ``{method: {setting: default}}``: the estimator's defaults that differ from the function's.
    _method_defaults = {}

    def _validate_fit_data(self, X, y, reset):
        """``validate_data`` of ``(X, y)`` (``y`` None for unsupervised models)."""
        if self._supervised:
            return validate_data(self, X, y, reset=reset, dtype=np.float64, y_numeric=True)
        return validate_data(self, X, reset=reset, dtype=np.float64), None

    def _fit_targets(self, X, y, classes, first):
        """The ``(X, y)`` the model sees; ``classes`` is for classifiers only."""
        if classes is not None:
            raise ValueError(f"classes is only for classifiers; {type(self).__name__}.partial_fit takes classes=None.")
        return X, y

    def _set_posterior(self, model, X, y, first):
        pass

    def _add_moments(self, moments, first):
        """Sufficient statistics of the data just added plus, unless ``first``, those of the data before."""
        if not first:
            moments = tuple(new + old for new, old in zip(moments, self._moments))
        self._moments = moments
        return moments

    def _method_params(self):
        """Keyword arguments of the function ``method`` runs: the estimator's defaults, then ``method_params``."""
        kwargs = method_kwargs(self, METHOD_FUNCTIONS[self.method], reserved=RESERVED)
        return {**self._method_defaults.get(self.method, {}), **kwargs}

    def _evidence(self, model, X, y):
        """Log-evidence of ``(X, y)`` by ``self.method``."""
        params = self._method_params()
        if self.method != "exact":
            params.update(random_state=self.random_state, verbose=self.verbose)
        if self.method == "rti":
            return self._referenced_evidence(model, X, y, params)
        return METHOD_FUNCTIONS[self.method](model, X, y, **params)

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
                stacklevel=6,
            )
        reference = model if found is None else GaussianReferencedModel(model, *found, n_data)
        result = sti_log_evidence(reference, X, y, **params)
        path = "prior" if found is None else "laplace"
        return replace(result, method="rti", diagnostics={**result.diagnostics, "path": path})

    def _stream_signature(self):
        params = self.get_params(deep=False)
        return joblib.hash({k: v for k, v in params.items() if k not in RESERVED})

    def _fit_data(self, X, y, classes, first):
        """Validate the data, add their evidence (to the stream, with SGAIS) and update the posterior."""
        X, y = self._validate_fit_data(X, y, reset=first)
        X, y = self._fit_targets(X, y, classes, first)
        model = self._make_model(X)
        if self.method == "sgais":
            if first:
                self._stream = sgais_init(model, **self._method_params(), random_state=self.random_state)
                self._stream_params = self._stream_signature()
                self.n_samples_seen_ = 0
            self.result_ = sgais_advance(self._stream, model, X, y, verbose=self.verbose).result()
            self.log_evidence_path_ = self.result_.diagnostics["log_evidence_path"]
            self.n_samples_seen_ += X.shape[0]
        else:
            # No stream to continue: a partial_fit after another method starts afresh.
            self._stream = None
            for name in ("log_evidence_path_", "n_samples_seen_"):
                self.__dict__.pop(name, None)
            self.result_ = self._evidence(model, X, y)
        self.log_evidence_ = self.result_.log_evidence
        self.log_evidence_std_ = self.result_.std_error
        # score(X) may reuse log_evidence_ only when X is all the data seen.
        self._fitted_data_hash = joblib.hash((X, y)) if first else None
        self._set_posterior(model, X, y, first)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Estimate the evidence of the data (``y`` given ``X`` for supervised models) and the posterior.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data, one row per observation (inputs, for supervised models).
        y : array-like of shape (n_samples,), default=None
            Targets (class labels for classifiers), required by supervised
            models; ignored by the others.

        Returns
        -------
        self : object
            Fitted estimator.

        Notes
        -----
        What every continuous estimator shares:

        - ``method_params`` holds keyword arguments of the function ``method``
          runs, other than ``random_state`` and ``verbose``: those of
          :func:`~skevidence.sti_log_evidence` for ``"rti"`` and ``"sti"``, of
          :func:`~skevidence.sgais_log_evidence` for ``"sgais"``, of
          :func:`~skevidence.evidence.ais_log_evidence` for ``"ais"``
          (``"exact"`` takes none). ``None`` keeps their defaults; any other
          key raises a ``ValueError`` naming the allowed ones.
        - ``random_state`` seeds every random stream; ``verbose`` is ``1`` for
          a progress bar, ``2`` for a line per temperature or chunk.
        - ``fit`` sets ``log_evidence_`` (of all the data fitted so far, by
          ``fit`` and ``partial_fit``), ``log_evidence_std_`` (its Monte-Carlo
          standard error: 0 for ``"exact"``; for ``"rti"`` and ``"sti"`` it does
          not cover the bias of the ladder and the step size) and ``result_``,
          the full :class:`~skevidence.EvidenceResult` (``result_.method`` is
          ``method``; with ``"rti"``, ``result_.diagnostics["path"]`` is
          ``"laplace"``, or ``"prior"`` where no Laplace fit was found and STI ran
          from the prior, with a warning). With ``method="sgais"`` it also sets
          ``log_evidence_path_``, the log-evidence after every chunk
          (``result_.diagnostics["n_seen"]`` holds their counts), and
          ``n_samples_seen_``, the rows seen by ``fit`` and ``partial_fit``.
        - With ``method="sgais"``, :meth:`partial_fit` continues the stream
          with new data only. Chunks follow the SGAIS schedule from the number
          of data seen, and each call ends its last chunk at its own end;
          ``fit`` on a data set therefore equals ``partial_fit`` on consecutive
          pieces of it that end at chunk boundaries
          (:func:`~skevidence.evidence.sgais.chunk_boundaries`), and is
          statistically equivalent otherwise. The whole SGAIS state is kept in
          the estimator, so one pickled between two calls continues exactly
          where it stopped.
        """
        return self._fit_data(X, y, None, first=True)

    @available_if(_method_is_sgais)
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None, classes=None):
        """Update the evidence with new data only (online SGAIS).

        The first call (or the first after ``fit`` with another method)
        starts a stream from the prior; later calls add their data to it, at
        a cost independent of the data seen before. Available with
        ``method="sgais"`` only.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New data; the same number of features as before.
        y : array-like of shape (n_samples,), default=None
            New targets, for supervised models.
        classes : array-like of shape (n_classes,), default=None
            All the classes, for classifiers, required on the first call;
            must be ``None`` for other estimators.

        Returns
        -------
        self : object
            The estimator, with ``log_evidence_`` (of all data seen),
            ``log_evidence_std_``, ``log_evidence_path_`` (after every chunk)
            and ``n_samples_seen_`` updated.

        Raises
        ------
        ValueError
            If the data do not match the earlier ones (number of features),
            contain NaN or infinity, or if parameters other than ``verbose``
            and ``random_state`` changed since the stream started.
        """
        first = getattr(self, "_stream", None) is None
        if not first and self._stream_signature() != self._stream_params:
            raise ValueError(
                f"The parameters of this {type(self).__name__} changed since its stream started; the stored "
                "evidence belongs to the old ones. Call fit, or clone the estimator to start a new stream."
            )
        return self._fit_data(X, y, classes, first)

    def score(self, X, y=None):
        """Log-evidence :math:`\\log p(X)` of the given data under the model.

        %(score_cached)s

        %(evidence_of_data)s
        """
        check_is_fitted(self)
        X, y = self._fit_targets(*self._validate_fit_data(X, y, reset=False), None, first=False)
        if joblib.hash((X, y)) == self._fitted_data_hash:
            return self.log_evidence_
        return self._evidence(self._make_model(X), X, y).log_evidence

    def _posterior_particles(self):
        """Posterior particles ``(M, n_params)`` and normalised weights ``(M,)``.

        Those ``result_`` carries (SGAIS's and AIS's, in ``diagnostics``), or
        else (STI) the single posterior mean it reports.
        """
        diagnostics = self.result_.diagnostics
        if "particles" not in diagnostics:
            return np.array(self.result_.posterior_mean, dtype=np.float64)[None, :], np.ones(1)
        log_w = diagnostics["log_weights"]
        return np.array(diagnostics["particles"], dtype=np.float64), np.exp(log_w - logsumexp(log_w))

    def _predict_blocks(self, X, predict, block_rows):
        """``predict(model, rows)`` over blocks of ``block_rows`` rows of validated ``X``, stacked."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        model = self._make_model(X)
        return np.concatenate([predict(model, X[rows]) for rows in gen_batches(X.shape[0], block_rows)])


@fill_doc
class ExactEvidenceMixin:
    """``exact_log_evidence`` for estimators whose model has a closed form."""

    def exact_log_evidence(self, X, y=None):
        """Closed-form log-evidence of ``X`` (and ``y``) under the current parameters.

        Needs no fit; it is what ``method="exact"`` computes.

        %(evidence_of_data)s
        """
        # Checked without validate_data: no fitted state is read or set.
        if self._supervised:
            X, y = check_X_y(X, y, dtype=np.float64, y_numeric=True)
        else:
            X = check_array(X, dtype=np.float64)
        return exact_log_evidence(self._make_model(X), X, y).log_evidence
