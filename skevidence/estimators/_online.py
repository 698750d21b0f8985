"""Online evidence: ``partial_fit`` for the evidence estimators, by SGAIS."""

import joblib
import numpy as np
from scipy.special import logsumexp
from sklearn.base import _fit_context
from sklearn.utils.metaestimators import available_if

from ..evidence.sgais import sgais_advance, sgais_init

__all__ = ["OnlineEvidenceMixin", "posterior_particles"]

#: Parameters that may change between partial_fit calls without breaking the stream.
_FREE_PARAMS = ("verbose", "random_state")


def _method_is_sgais(estimator):
    if estimator.method != "sgais":
        raise AttributeError(
            f"partial_fit updates the evidence online with method='sgais' only; this "
            f"{type(estimator).__name__} has method={estimator.method!r}. Set method='sgais', "
            "or call fit with all the data."
        )
    return True


def posterior_particles(estimator):
    """Posterior particles ``(M, n_params)`` and normalised weights ``(M,)`` of a fitted estimator.

    SGAIS: the stream's current particles and weights. AIS: its final
    particles when the result carries them (``diagnostics["particles"]``).
    Otherwise (STI) the single posterior mean the method reports.
    """
    stream = getattr(estimator, "_stream", None)
    if estimator.method == "sgais" and stream is not None:
        particles, log_w = stream.particles, stream.log_weights
    elif "particles" in estimator.result_.diagnostics:
        particles = estimator.result_.diagnostics["particles"]
        log_w = estimator.result_.diagnostics["log_weights"]
    else:
        mean = np.array(estimator.result_.posterior_mean, dtype=np.float64)
        return mean[None, :], np.ones(1)
    return np.array(particles, dtype=np.float64), np.exp(log_w - logsumexp(log_w))


class OnlineEvidenceMixin:
    """``partial_fit`` and a resumable ``fit`` for evidence estimators, by SGAIS.

    With ``method="sgais"``, ``fit`` starts a stream and runs it over all the
    data, and ``partial_fit`` continues it with new data only: the evidence
    of everything seen is updated at a cost that does not depend on how much
    was seen before (:func:`~skevidence.sgais_log_evidence`). Both keep the
    whole SGAIS state in the estimator, so an estimator pickled between two
    calls continues exactly where it stopped.

    Chunks follow the SGAIS schedule from the number of data seen, and each
    call ends its last chunk at its own end; ``fit`` on a data set therefore
    equals ``partial_fit`` on consecutive pieces of it that end at chunk
    boundaries (:func:`~skevidence.evidence.sgais.chunk_boundaries`), and is
    statistically equivalent otherwise.

    Estimators mix this in before :class:`ContinuousEvidenceMixin`, whose
    ``method_params`` hold the settings of the stream (those of
    :func:`~skevidence.sgais_log_evidence`); hooks:

    - ``_partial_fit_targets(X, y, classes, first)`` returns the ``(X, y)``
      the model sees. The default rejects ``classes``; a classifier sets
      ``classes_`` on the first call, checks it later and encodes ``y``.
    - ``_partial_fit_update(X, y, first)`` updates the estimator's other
      fitted attributes (a posterior, say) from the new data; no-op by default.
    """

    def _stream_signature(self):
        params = self.get_params(deep=False)
        return joblib.hash({k: v for k, v in params.items() if k not in _FREE_PARAMS})

    def _start_stream(self, model):
        self._stream = sgais_init(model, **self._method_params(), random_state=self.random_state)
        self._stream_params = self._stream_signature()
        return self._stream

    def _advance_stream(self, model, X, y):
        """Add ``(X, y)`` to the stream and refresh the evidence attributes."""
        stream = sgais_advance(self._stream, model, X, y, verbose=self.verbose)
        self.result_ = stream.result()
        self.log_evidence_ = self.result_.log_evidence
        self.log_evidence_std_ = self.result_.std_error
        self.log_evidence_path_ = self.result_.diagnostics["log_evidence_path"]
        self.n_samples_seen_ = getattr(self, "n_samples_seen_", 0) + X.shape[0]

    def _fit_evidence(self, X, y=None):
        if self.method != "sgais":
            # Another method: no stream to continue; partial_fit would start afresh.
            self._stream = None
            for name in ("log_evidence_path_", "n_samples_seen_"):
                self.__dict__.pop(name, None)
            return super()._fit_evidence(X, y)
        model = self._make_model(X)
        self.n_samples_seen_ = 0
        self._start_stream(model)
        self._advance_stream(model, X, y)
        self._fitted_data_hash = joblib.hash((X, y))
        return model

    def _partial_fit_targets(self, X, y, classes, first):
        if classes is not None:
            raise ValueError(
                f"classes is only for classifiers; {type(self).__name__}.partial_fit takes classes=None."
            )
        return X, y

    def _partial_fit_update(self, X, y, first):
        pass

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
                f"The parameters of this {type(self).__name__} changed since its stream started; "
                "the stored evidence belongs to the old ones. Call fit, or clone the estimator "
                "to start a new stream."
            )
        X, y = self._validate_fit_data(X, y, reset=first)
        X, y = self._partial_fit_targets(X, y, classes, first)
        model = self._make_model(X)
        if first:
            self.n_samples_seen_ = 0
            self._start_stream(model)
        self._advance_stream(model, X, y)
        # score(X) may reuse log_evidence_ only when X is all the data seen.
        self._fitted_data_hash = joblib.hash((X, y)) if first else None
        self._partial_fit_update(X, y, first)
        return self
