r"""The density of an entry given its mean: Poisson, or Gamma of shape :math:`\kappa` (exponential: 1).

Every kernel, fit and twin of the CP family scores an entry ``x`` of mean
``v`` through :func:`entry`, switched by ``kappa`` (0: Poisson; a positive
``kappa``: Gamma of shape :math:`\kappa` and mean :math:`v`, whose
:math:`\kappa = 1` is the exponential likelihood of a power spectrogram,
Itakura–Saito NMF's model; Févotte, Bertin and Durrieu 2009). The log-density
is split in three parts,

.. math::
    \log p(x \mid v) = \underbrace{\tau(x, v)}_{\text{entry}}
    + \underbrace{\ell(v)}_{\text{linear}} - \underbrace{c(x)}_{\text{constant}},

Poisson: :math:`\tau = x \log v` (0 for :math:`x = 0`), :math:`\ell = -v`,
:math:`c = \log\Gamma(x + 1)`; Gamma: :math:`\tau = -\kappa(\log v + x/v)`,
:math:`\ell = 0`, :math:`c = -(\kappa\log\kappa - \log\Gamma(\kappa) +
(\kappa - 1)\log x)`. The passes visit the listed entries for :math:`\tau`
(for Poisson counts only the non-zeros: a zero count's :math:`\tau` is 0),
take :math:`\sum \ell` and its gradient in closed form from the factors'
column sums, and the data's constant once. Non-integer data under the Poisson
likelihood keep the formula with :math:`\log\Gamma(x + 1)`: it is then not a
normalised density, but ranks compared on the same data stay comparable.
"""

import math

import numpy as np
from numba import njit
from scipy import sparse
from scipy.special import gammaln

from .._config import FASTMATH
from .._validation import check_positive_real

__all__ = ["LIKELIHOODS", "WITH_VALUE", "check_entries", "dense_entries", "entry", "entry_constant", "likelihood_kappa"]

#: The likelihoods' names.
LIKELIHOODS = ("poisson", "exponential", "gamma")

#: ``with_value=True`` for a kernel calling a pass: a NumPy bool, which numba types as ``bool``, so each pass
#: compiles once (a Python ``True`` in jitted code is a literal and would compile a second version).
WITH_VALUE = np.bool_(True)


def likelihood_kappa(likelihood, shape=1.0):
    """The kernels' ``kappa`` of a likelihood: 0 (Poisson) or the Gamma shape (1 for exponential)."""
    if likelihood == "poisson":
        return 0.0
    if likelihood == "exponential":
        return 1.0
    if likelihood == "gamma":
        return check_positive_real("likelihood_shape", shape)
    raise ValueError(f"likelihood must be one of {LIKELIHOODS}, got {likelihood!r}.")


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", inline="always")
def _gamma_terms(x, v, kappa):
    r"""The Gamma family's :math:`x / v` and :math:`\partial_v \tau = \kappa (x - v) / v^2` (``v > 0``)."""
    inv = 1.0 / v
    return x * inv, kappa * (x - v) * inv * inv


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", inline="always")
def entry(x, v, kappa, with_value):
    r"""An entry's :math:`\tau(x, v)` (0 without ``with_value``) and :math:`\partial\tau/\partial v`.

    An underflowed mean ``v <= 0`` gives ``-inf`` and ``inf`` where the
    density needs ``v > 0``: the callers report them as a divergence.
    """
    if kappa > 0.0:
        if not v > 0.0:
            return -np.inf, np.inf
        ratio, slope = _gamma_terms(x, v, kappa)
        return (-kappa * (math.log(v) + ratio) if with_value else 0.0), slope
    if x == 0.0:
        return 0.0, 0.0
    if not v > 0.0:
        return -np.inf, np.inf
    return (x * math.log(v) if with_value else 0.0), x / v


#: Means whose logarithms the Gamma family's dense pass takes as one logarithm of their product.
_LOG_CHUNK = 8


@njit(cache=True, fastmath=FASTMATH, error_model="numpy", inline="always")
def dense_entries(X, V, floor, kappa, with_value):
    r""":math:`\sum \tau(x, v)` over a dense ``X`` of means ``V + floor``; ``V`` becomes :math:`\partial_v \tau`.

    The sum of :func:`entry` over every entry (the Gamma family's terms from
    the same :func:`_gamma_terms`), except that the Gamma family's
    :math:`\log v` are summed as the logarithm of the product of
    ``_LOG_CHUNK`` means at a time (a logarithm costs several times the rest
    of an entry's work); a product outside :math:`[10^{-300}, 10^{300}]`
    takes its means' logarithms one by one.
    """
    n, m = X.shape
    total = 0.0
    if kappa == 0.0 or not with_value:
        for i in range(n):
            for j in range(m):
                term, V[i, j] = entry(X[i, j], V[i, j] + floor, kappa, with_value)
                total += term
        return total
    log_sum = 0.0
    ratio_sum = 0.0
    underflow = False
    means = np.empty(_LOG_CHUNK)
    for i in range(n):
        k = 0
        for j in range(m):
            v = V[i, j] + floor
            if v > 0.0:
                ratio, V[i, j] = _gamma_terms(X[i, j], v, kappa)
                ratio_sum += ratio
            else:  # as entry: -inf and inf, which the callers report as a divergence
                underflow = True
                V[i, j] = np.inf
                v = 1.0
            means[k] = v
            k += 1
            if k == _LOG_CHUNK or j == m - 1:
                product = 1.0
                for c in range(k):
                    product *= means[c]
                if 1e-300 < product < 1e300:
                    log_sum += math.log(product)
                else:
                    for c in range(k):
                        log_sum += math.log(means[c])
                k = 0
    return -np.inf if underflow else -kappa * (log_sum + ratio_sum)


def entry_constant(x, kappa):
    r"""Per entry, the constant :math:`c(x)` of the module's split (NumPy, any shape)."""
    x = np.asarray(x, dtype=np.float64)
    if kappa == 0.0:
        return gammaln(x + 1.0)
    log_x = (kappa - 1.0) * np.log(x) if kappa != 1.0 else 0.0
    return np.full_like(x, math.lgamma(kappa) - kappa * math.log(kappa)) - log_x


def check_entries(X, kappa, floor=0.0, *, name="X"):
    """The values of ``X`` (dense or scipy.sparse) if the likelihood can score them; else a ``ValueError`` saying why.

    Under the exponential likelihood an exact zero has the density :math:`1/v`,
    which grows without bound as its mean :math:`v` goes to 0: without a
    noise floor the evidence of data with exact zeros (digital silence) would
    measure how well each rank fits them, so they are refused then. Returns
    the values checked: a sparse input's stored values, or the dense array.
    """
    values = X.data if sparse.issparse(X) else np.asarray(X)
    if values.dtype == object or np.iscomplexobj(values) or not (
            np.issubdtype(values.dtype, np.number) or values.dtype == bool):
        raise ValueError(f"{name} must be real numbers, got dtype {values.dtype}; for a complex STFT pass "
                         "np.abs(S) ** 2 (SpectrogramTransformer(power=2)).")
    values = np.asarray(values, dtype=np.float64)
    if len(X.shape) < 2:
        raise ValueError(f"{name} must have at least two modes (a matrix or a tensor), got shape {X.shape}.")
    if min(X.shape) == 0:
        raise ValueError(f"{name} is empty (shape {X.shape}); the evidence needs at least one entry.")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} contains NaN or infinity; remove or impute those entries.")
    if np.any(values < 0):
        kind = "Poisson counts are" if kappa == 0.0 else "powers (|STFT|^2) are"
        raise ValueError(f"{name} has negative entries (min {values.min():g}); {kind} non-negative: shift or "
                         "take magnitudes first.")
    if kappa > 0.0 and not np.any(values > 0):
        raise ValueError(f"{name} is zero everywhere; there is no signal to factorise.")
    if kappa == 0.0:
        if floor > 0.0:
            raise ValueError(f"noise_floor={floor:g}: a noise floor belongs to the Gamma family's powers; the "
                             "Poisson likelihood of counts takes none (noise_floor=0).")
        return values
    n_zeros = int(np.sum(values == 0)) + (int(np.prod(X.shape)) - X.nnz if sparse.issparse(X) else 0)
    if n_zeros and kappa != 1.0:
        raise ValueError(
            f"{name} has {n_zeros} zero entries, which a Gamma likelihood of shape {kappa:g} gives density 0 "
            "(shape > 1) or infinity (shape < 1) whatever their mean. Use likelihood='exponential' with a "
            "noise_floor, or add the recording's noise before the spectrogram."
        )
    if n_zeros and floor == 0.0:
        raise ValueError(
            f"{name} has {n_zeros} exact zeros, whose density under the exponential likelihood, 1 / mean, grows "
            "without bound as the mean WH goes to 0: the evidence would measure how well each rank fits them "
            "(digital silence, say). Pass the recording's noise power as noise_floor (for PCM audio "
            "SpectrogramTransformer's noise_floor_; the command line sets it from the sample format)."
        )
    return values
