"""Poisson PARAFAC of count tensors scored by its evidence."""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import validate_data

from .._config import DEFAULT_TOL
from .._docstrings import fill_doc
from .._init_params import store_init_params
from ..cp.model import check_prior_rates
from ._factorisation import CP_PARAMETER_CONSTRAINTS, CPEstimatorMixin

__all__ = ["PoissonPARAFAC"]


@fill_doc
class PoissonPARAFAC(CPEstimatorMixin, BaseEstimator):
    r"""Poisson PARAFAC with exponential priors, scored by its evidence.

    .. math::
        a_{ir} \sim \mathcal{E}(\lambda_a), \quad b_{jr} \sim \mathcal{E}(\lambda_b), \quad
        c_{kr} \sim \mathcal{E}(\lambda_c), \quad
        x_{ijk} \sim \mathcal{PO}\Big(\sum_{r=1}^R a_{ir} b_{jr} c_{kr}\Big)

    (Nguyen et al. 2018, eq. 11). ``fit`` estimates :math:`\log p(X)` of a
    3-D count tensor by ``method``. A 3-D :class:`scipy.sparse.coo_array`
    costs :math:`O(\mathrm{nnz}\,R)` a pass and never forms the :math:`IJK`
    intensities.

    Read more in the :ref:`User Guide <parafac>`.

    Parameters
    ----------
    rank : int, default=1
        Rank :math:`R`.
    prior_rate : float or sequence of 3 floats, default=1.0
        Rate of the exponential priors, one for all three factors or
        :math:`(\lambda_a, \lambda_b, \lambda_c)`.
    method : {"rti", "sti", "smc", "chib"}, default="rti"
        What estimates the evidence, as for :class:`PoissonNMF`: referenced
        TI (:func:`~skevidence.cp.referenced_ti_log_evidence`), the papers'
        STI from the prior with block-parallel pSGLD or SGLD
        (:func:`~skevidence.cp.sti_log_evidence`), the exact-kernel SMC
        (:func:`~skevidence.cp.smc_log_evidence`) or Chib's method
        (:func:`~skevidence.cp.chib_log_evidence`).
    method_params, tol, random_state, verbose
        As for :class:`PoissonNMF`: the method's settings (keyword arguments of
        its function), the target error bar of ``method="rti"``, the seed and
        the progress reporting.

    Attributes
    ----------
    log_evidence_, log_evidence_std_, result_
        As for :class:`PoissonNMF`: the estimate, its error bar and its record.
    factors_ : tuple of 3 ndarrays
        Posterior means of ``A``, ``B``, ``C``, shapes (I, R), (J, R), (K, R)
        (Chib's method: its point). The model is invariant under rescaling
        :math:`(c_1 a_r, c_2 b_r, c_3 c_r)` with :math:`c_1 c_2 c_3 = 1` and
        under permutations of the components, so only the component tensors
        :math:`a_r \circ b_r \circ c_r` are comparable between fits.
    prior_rates_ : tuple of 3 floats
        The prior rates used.
    n_features_in_ : int
        Size ``J`` of the second mode of the tensor seen during ``fit``.

    See Also
    --------
    PARAFACRankSelector : Choose ``rank`` by the evidence.
    PoissonNMF : The two-mode model.

    Notes
    -----
    Input: a 3-D array or a 3-D :class:`scipy.sparse.coo_array` (duplicate
    coordinates are summed); a 2-D ``(I, J)`` input is taken as ``(I, J, 1)``.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence import PoissonPARAFAC
    >>> rng = np.random.default_rng(0)
    >>> A, B, C = (rng.exponential(size=(n, 2)) for n in (8, 6, 5))
    >>> X = rng.poisson(np.einsum("ir,jr,kr->ijk", A, B, C))
    >>> est = PoissonPARAFAC(rank=2, random_state=0).fit(X)
    >>> [F.shape for F in est.factors_]
    [(8, 2), (6, 2), (5, 2)]
    >>> est.score(X) == est.log_evidence_
    True
    """

    #: The fitted attribute a rank selector copies from its best model.
    _fitted_factors = "factors_"
    _rank_param = "rank"
    _cost_params = ("rank",)

    _parameter_constraints = {
        "rank": [Interval(Integral, 1, None, closed="left")],
        "prior_rate": [Interval(Real, 0, None, closed="neither"), "array-like"],
        **CP_PARAMETER_CONSTRAINTS,
    }

    def __init__(self, rank=1, prior_rate=1.0, *, method="rti", method_params=None, tol=DEFAULT_TOL,
                 random_state=None, verbose=0):
        store_init_params(self, locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        return tags

    def _prior_rates(self, X):
        return check_prior_rates(self.prior_rate, 3)

    @staticmethod
    def _validate_input(estimator, X, reset):
        """``validate_data`` for a non-negative 3-D tensor, dense or a 3-D ``coo_array``; 2-D taken as (I, J, 1)."""
        shape = np.shape(X)
        if len(shape) >= 3 and 0 in shape:
            # Before validate_data, whose non-negativity test fails obscurely on empty 3-D input.
            raise ValueError(f"X is empty (shape {tuple(shape)}); the evidence needs at least one entry.")
        if len(shape) > 3:
            raise ValueError(f"X must be a 3-D tensor (I, J, K) or a 2-D matrix (I, J), taken as (I, J, 1); got "
                             f"{len(shape)}-D input of shape {tuple(shape)}.")
        X = validate_data(estimator, X, reset=reset, accept_sparse=("coo", "csr", "csc"), dtype=np.float64,
                          ensure_non_negative=True, allow_nd=True)
        if sp.issparse(X):
            X = sp.coo_array(X)
            X.sum_duplicates()
        return X.reshape((*X.shape, 1)) if X.ndim == 2 else X

    def _set_factors(self, factors):
        self.factors_ = tuple(factors)
