"""Estimator for Bayesian softmax (multinomial logistic) regression scored by its evidence."""

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from .._docstrings import fill_doc
from .._init_params import store_init_params
from ..models.softmax_regression import SoftmaxRegression
from ._base import ContinuousEvidenceMixin
from ._methods import EVIDENCE_PARAMETER_CONSTRAINTS

__all__ = ["BayesianLogisticRegression"]

#: Rows per block when predicting, so that the (particles, rows, classes)
#: intermediate stays small whatever the size of ``X``.
_PREDICT_ROWS = 8192


@fill_doc
class BayesianLogisticRegression(ContinuousEvidenceMixin, ClassifierMixin, BaseEstimator):
    r"""Softmax (multinomial logistic) regression scored by its evidence (Cameron et al. 2019b, section 4.2).

    .. math::
        W_{jk}, b_k \sim \mathcal{N}(0, \sigma_w^2), \qquad
        p(y_n = k \mid x_n, W, b) = \mathrm{softmax}_k(x_n^T W + b),

    with weights and a bias for every one of the ``K`` classes (binary
    problems included: ``2(d + 1)`` parameters). ``fit`` estimates
    :math:`\log p(y \mid X)` by SGAIS (default), AIS or STI and keeps the
    posterior particles; :meth:`predict_proba` is the posterior predictive,
    the softmax averaged over the weighted particles. With SGAIS,
    :meth:`partial_fit` adds data without revisiting the old data.

    Unlike other classifiers, ``score`` returns the **log-evidence** of
    ``(X, y)``, not the accuracy, so that searches rank models (feature
    sets, prior variances) by it; use
    :func:`sklearn.metrics.accuracy_score` on :meth:`predict` for accuracy.

    Read more in the :ref:`User Guide <evidence>`.

    Parameters
    ----------
    prior_var : float, default=1.0
        Prior variance :math:`\sigma_w^2` of every weight and bias (Cameron et
        al. 2019b use 1). The prior is not scale-free: standardise the
        features, or the evidence compares scalings as much as models.
    method : {"sgais", "ais", "sti"}, default="sgais"
        How the evidence is computed: stochastic-gradient annealed importance
        sampling (:func:`~skevidence.sgais_log_evidence`), annealed importance
        sampling with full-data HMC (:func:`~skevidence.evidence.ais_log_evidence`),
        or stochastic thermodynamic integration from the prior
        (:func:`~skevidence.sti_log_evidence`).
    method_params : dict, default=None
        Keyword arguments of the function ``method`` runs (``n_particles``,
        ``learning_rate``... for SGAIS); ``None`` keeps its defaults. See :meth:`fit`.
    %(seed_progress)s

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels; column ``k`` of :meth:`predict_proba` is ``classes_[k]``.
    %(evidence_attributes)s
    particles_ : ndarray of shape (n_particles, n_params)
        Posterior particles ``(W.ravel(), b)``, ``W`` of shape
        ``(n_features, n_classes)`` (see
        :class:`~skevidence.models.SoftmaxRegression`).
        %(particles_source)s
        With a single row, :meth:`predict_proba` is a plug-in estimate.
    particle_weights_ : ndarray of shape (n_particles,)
        Their normalised importance weights.
    coef_ : ndarray of shape (n_classes, n_features)
        Posterior mean of the weights (transposed, in scikit-learn's layout).
    intercept_ : ndarray of shape (n_classes,)
        Posterior mean of the biases.
    %(features_in)s

    See Also
    --------
    skevidence.models.SoftmaxRegression : The model behind this estimator.
    sklearn.linear_model.LogisticRegression : The penalised maximum-likelihood fit.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence import BayesianLogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = np.where(X[:, 0] + X[:, 1] > 0, "yes", "no")
    >>> clf = BayesianLogisticRegression(random_state=0).fit(X, y)
    >>> clf.classes_
    array(['no', 'yes'], dtype='<U3')
    >>> bool((clf.predict(X) == y).mean() > 0.95)
    True
    """

    _supervised = True

    _parameter_constraints = {
        "prior_var": [Interval(Real, 0, None, closed="neither")],
        "method": [StrOptions({"sgais", "ais", "sti"})],
        **EVIDENCE_PARAMETER_CONSTRAINTS,
    }

    def __init__(self, prior_var=1.0, method="sgais", *, method_params=None, random_state=None, verbose=0):
        store_init_params(self, locals())

    def _make_model(self, X):
        return SoftmaxRegression(X.shape[1], len(self.classes_), self.prior_var)

    def _encode(self, y):
        """Class indices of labels ``y`` in ``classes_``; labels outside ``classes_`` raise."""
        known = np.isin(y, self.classes_)
        if not np.all(known):
            raise ValueError(
                f"y contains labels not in classes_ = {self.classes_.tolist()}: "
                f"{np.unique(y[~known]).tolist()}. Fit with data of every class, or pass "
                "classes= with all labels to the first call of partial_fit."
            )
        return np.searchsorted(self.classes_, y).astype(np.int64)

    def _validate_fit_data(self, X, y, reset):
        X, y = validate_data(self, X, y, reset=reset, dtype=np.float64)
        check_classification_targets(y)
        return X, y

    def _fit_targets(self, X, y, classes, first):
        """Labels as class indices in ``classes_``, which the first call sets (from ``classes`` or ``y``).

        Later calls check ``classes`` against it.
        """
        classes = None if classes is None else np.unique(classes)
        if first:
            classes = np.unique(y) if classes is None else classes
            if classes.size < 2:
                raise ValueError(
                    f"{type(self).__name__} needs data of at least 2 classes, got one class "
                    f"({classes.tolist()}); with a single class the evidence is trivially 0."
                )
            self.classes_ = classes
        elif classes is not None and not np.array_equal(classes, self.classes_):
            raise ValueError(
                f"classes={classes.tolist()} differs from the classes of the first call, "
                f"{self.classes_.tolist()}; a stream keeps its classes. Call fit to start anew."
            )
        return X, self._encode(y)

    def _set_posterior(self, model, X, y, first):
        """Particles and the posterior means of the weights and biases."""
        self.particles_, self.particle_weights_ = self._posterior_particles()
        W, b = model.unpack(self.particle_weights_ @ self.particles_)
        self.coef_, self.intercept_ = W.T.copy(), b.copy()

    def predict_proba(self, X):
        r"""Posterior-predictive class probabilities.

        :math:`\sum_i w_i\, \mathrm{softmax}(x^T W^{(i)} + b^{(i)})` over the
        weighted particles.

        Parameters
        ----------
        %(X_inputs)s

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        return self._predict_blocks(
            X, lambda model, rows: model.predict_proba(self.particles_, rows, self.particle_weights_), _PREDICT_ROWS
        )

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        %(X_inputs)s

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """Most probable class under the posterior predictive.

        Parameters
        ----------
        %(X_inputs)s

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        proba = self.predict_proba(X)  # first: it checks that the estimator is fitted
        return self.classes_[np.argmax(proba, axis=1)]
