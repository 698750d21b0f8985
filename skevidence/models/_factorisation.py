r"""The CP factorisation model family: :math:`X \approx \sum_r a^{(1)}_r \circ \dots \circ a^{(N)}_r`.

Poisson NMF is the two-mode case and Poisson PARAFAC the three-mode one
(Cemgil 2009; Şimşekli et al. 2016; Nguyen et al. 2018); both have exponential priors on every
factor. What varies between models of the family is small: the likelihood
of an entry given its intensity (a :class:`PoissonLikelihood` today), the
number of modes, and which modes a model stores transposed (NMF keeps ``H``
as ``(R, J)``). The chains run in the fused kernels behind
:class:`~skevidence.models._cp_runner.CPChainRunner`.
"""

from numbers import Real

import numpy as np
from scipy import sparse
from scipy.special import gammaln

from ._base import EvidenceModel

__all__ = ["CPModel", "GammaLikelihood", "PoissonLikelihood", "check_real_entries", "likelihood_shape_of",
           "make_likelihood", "auto_prior_rate"]

_MODE_LETTERS = "ijklmnopq"


class PoissonLikelihood:
    r"""Poisson entries :math:`x \sim \mathcal{PO}(v)` of intensity :math:`v`.

    Its ``kappa`` (the kernels' likelihood switch) is 0.

    For non-integer data the log-density keeps its formula with
    :math:`\log\Gamma(x+1)`; it is then not normalised, but comparisons
    between ranks on the same data remain meaningful.
    """

    kappa = 0.0

    def log_density(self, X, V):
        """Entry-wise :math:`\\log p(x \\mid v)`."""
        return X * np.log(V) - V - gammaln(X + 1)

    def grad_intensity(self, X, V):
        """Entry-wise :math:`\\partial \\log p(x \\mid v) / \\partial v`."""
        return X / V - 1.0

    def check_entries(self, values, shape, *, name, model_name, data_kind):
        """Raise a :class:`ValueError` naming the problem unless the entries are valid counts."""
        _check_nonnegative(values, shape, name, model_name, f"non-negative data ({data_kind})",
                           "shift or take magnitudes first")


def _check_nonnegative(values, shape, name, model_name, what, fix):
    """The checks every likelihood of the family makes: non-empty, finite, non-negative."""
    if min(shape) == 0:
        raise ValueError(f"{name} is empty (shape {shape}); the evidence needs at least one entry.")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} contains NaN or infinity; {model_name} needs finite non-negative values.")
    if np.any(values < 0):
        raise ValueError(f"{name} has negative entries; {model_name} models {what}: {fix}.")


class GammaLikelihood:
    r"""Gamma entries of shape :math:`\kappa` and mean :math:`v`: :math:`x \sim \mathcal{G}(\kappa, \kappa / v)`.

    :math:`\kappa = 1` is the exponential likelihood of a power spectrogram
    under the composite Gaussian model (its maximum likelihood is
    Itakura–Saito NMF, Févotte, Bertin and Durrieu 2009); :math:`\kappa > 1`
    suits powers averaged over :math:`\kappa` frames or channels. It is a
    density of real values, so :math:`\log p(cX \mid cV) = \log p(X \mid V)
    - \log c` per entry: the evidence does not depend on the unit of ``X``
    beyond that constant.
    """

    def __init__(self, kappa=1.0):
        self.kappa = float(kappa)

    def log_density(self, X, V):
        r"""Entry-wise :math:`\log p(x \mid v)`."""
        k = self.kappa
        log_x = (k - 1.0) * np.log(X) if k != 1.0 else 0.0
        return k * np.log(k) - gammaln(k) + log_x - k * (np.log(V) + X / V)

    def grad_intensity(self, X, V):
        r"""Entry-wise :math:`\partial \log p(x \mid v) / \partial v = \kappa (x - v) / v^2`."""
        return self.kappa * (X - V) / (V * V)

    def check_entries(self, values, shape, *, name, model_name, data_kind):
        """Raise a :class:`ValueError` naming the problem unless the entries have a positive density."""
        _check_real_values(values, shape, self.kappa, name)


def likelihood_shape_of(likelihood, shape=1.0):
    """The kernels' ``kappa`` of a likelihood name: 0 (Poisson) or the Gamma shape (1 for exponential)."""
    if likelihood == "poisson":
        return 0.0
    if likelihood == "exponential":
        return 1.0
    if likelihood == "gamma":
        if not (isinstance(shape, Real) and np.isfinite(shape) and shape > 0):
            raise ValueError(f"likelihood_shape must be a positive finite number, got {shape!r}.")
        return float(shape)
    raise ValueError(f"likelihood must be 'poisson', 'exponential' or 'gamma', got {likelihood!r}.")


def make_likelihood(likelihood="poisson", shape=1.0):
    """The likelihood object of a name (:func:`likelihood_shape_of` for ``shape``)."""
    kappa = likelihood_shape_of(likelihood, shape)
    return PoissonLikelihood() if kappa == 0.0 else GammaLikelihood(kappa)


def real_array(X, name, noun):
    """``X`` as a NumPy array of real numbers (bools count), or a ``ValueError`` naming its dtype."""
    X = np.asarray(X)
    numeric = np.issubdtype(X.dtype, np.number) or X.dtype == bool
    if X.dtype == object or np.iscomplexobj(X) or not numeric:
        raise ValueError(f"{name} must be a real numeric {noun}, got dtype {X.dtype}.")
    return X


def _check_real_values(values, shape, kappa, name):
    if len(shape) < 2:
        raise ValueError(f"{name} must have at least two modes, got shape {shape}.")
    _check_nonnegative(values, shape, name, "the Gamma likelihood", "powers (|STFT|^2)",
                       "take squared magnitudes first")
    if not np.any(values > 0):
        raise ValueError(f"{name} is zero everywhere; there is no signal to factorise.")
    if kappa != 1.0 and np.any(values == 0):
        raise ValueError(
            f"{name} has {int(np.sum(values == 0))} zero entries, which a Gamma likelihood of shape {kappa:g} "
            "gives density 0 (shape > 1) or infinity (shape < 1). Use likelihood='exponential' (shape 1, "
            "zeros allowed), or add a floor below the noise (for example 1e-10 * X.max())."
        )


def check_real_entries(X, kappa, *, name="X"):
    """Dense float64 entries a Gamma likelihood of shape ``kappa`` can score, or a ``ValueError`` saying why not.

    Sparse input is made dense: a zero is an observation like any other here.
    """
    X = X.toarray() if sparse.issparse(X) else np.asarray(X)
    if X.dtype == object or np.iscomplexobj(X):
        raise ValueError(
            f"{name} must be real; for a complex STFT pass the power spectrogram np.abs(S) ** 2 "
            "(SpectrogramTransformer(power=2))."
        )
    X = np.ascontiguousarray(X, dtype=np.float64)
    _check_real_values(X, X.shape, kappa, name)
    return X


def auto_prior_rate(X, n_components):
    r"""The exponential priors' rate that follows the data's scale: :math:`(R / \bar x)^{1/N}`.

    With this rate on every one of the :math:`N` modes the prior mean of
    every entry of the intensity, :math:`R / \lambda^N`, is the data's mean
    :math:`\bar x`, at every rank. Scaling ``X`` by :math:`c` scales
    :math:`\lambda` by :math:`c^{-1/N}`, and the map :math:`F^{(m)} \mapsto
    c^{1/N} F^{(m)}` carries one posterior onto the other: for a likelihood
    that is a density of real values (:class:`GammaLikelihood`),
    :math:`\log Z(cX) = \log Z(X) - n \log c` exactly (``n`` entries), the
    same shift at every rank (see the user guide for the proof).
    """
    total = float(X.sum())
    size = float(np.prod(X.shape))
    if not total > 0:
        raise ValueError("prior_rate='auto' needs data with a positive mean; X is zero everywhere.")
    return float((n_components * size / total) ** (1.0 / len(X.shape)))


def cp_intensity(factors):
    """The tensor :math:`\\sum_r a^{(1)}_r \\circ \\dots \\circ a^{(N)}_r` of factors ``(I_n, R)``."""
    if len(factors) == 2:
        # One BLAS product: faster than einsum, and the numbers NMF has always given.
        A, B = factors
        return A @ B.T
    letters = _MODE_LETTERS[: len(factors)]
    return np.einsum(",".join(c + "r" for c in letters) + "->" + letters, *factors)


def cp_gradients(E, factors):
    """The gradient of :math:`\\sum E \\odot V` with respect to each factor, shapes ``(I_n, R)``."""
    if len(factors) == 2:
        A, B = factors
        return E @ B, (A.T @ E).T
    letters = _MODE_LETTERS[: len(factors)]
    return tuple(
        np.einsum(f"{letters},{','.join(c + 'r' for c in letters if c != m)}->{m}r", E,
                  *(F for c, F in zip(letters, factors) if c != m))
        for m in letters
    )


class CPModel(EvidenceModel):
    """A CP factorisation of an N-way array with exponential priors on its factors.

    Subclasses set :attr:`name`, :attr:`array_name` and
    :attr:`data_description` (for messages), :attr:`transposed` (the modes
    stored as ``(R, I_n)``), implement ``check_data(X)`` (with
    :meth:`_check_entries` for the entries) and store ``n_components``,
    ``prior_rates`` (one per mode) and ``n_blocks``. Every entry of ``X`` is one datum
    (``N = I J ...``, zeros included).
    """

    exact_prior_sampling = True
    accepts_sparse = True
    nonnegative = True

    #: The likelihood of an entry given its intensity.
    likelihood = PoissonLikelihood()
    #: The model's name in messages.
    name = "CP"
    #: The kind of array, for messages ("matrix", "tensor").
    array_name = "tensor"
    #: What the data are, for messages.
    data_description = "counts"
    #: Modes whose factor the model stores as ``(R, I_n)`` (NMF's ``H``).
    transposed = ()

    # -- data ----------------------------------------------------------------

    @classmethod
    def _check_entries(cls, values, shape, name):
        cls.likelihood.check_entries(values, shape, name=name, model_name=cls.name, data_kind=cls.data_description)

    def prepare_data(self, X, y=None):
        """Validate ``X`` and split it into blocks for the kernel (prepared blocks pass through)."""
        from ._cp_runner import BLOCKED_DATA, block_data

        if isinstance(X, BLOCKED_DATA):
            data = X
        else:
            kappa = self.likelihood.kappa
            # The Gamma family checks its entries itself (zeros, real values) and is dense.
            X = self.check_data(X) if kappa == 0.0 else check_real_entries(X, kappa)
            if self.n_blocks > min(X.shape):
                raise ValueError(
                    f"n_blocks={self.n_blocks} is larger than the {self.array_name} allows: X has shape "
                    f"{X.shape}, and each mode must be split into n_blocks non-empty groups. "
                    f"Use n_blocks <= {min(X.shape)}."
                )
            data = block_data(X, self.n_blocks, self.likelihood.kappa)
        if data.n_blocks != self.n_blocks:
            raise ValueError(f"The prepared data have {data.n_blocks} blocks, the model {self.n_blocks}.")
        if data.kappa != self.likelihood.kappa:
            raise ValueError(f"The prepared data were blocked for kappa={data.kappa:g}, the model's likelihood "
                             f"has kappa={self.likelihood.kappa:g}.")
        return data, None

    def n_data(self, X, y=None):
        return X.n_data

    # -- the generic interface, on theta = the factors raveled in order, and a dense X --

    def _cp_factors(self, theta, shape):
        """The factors of a flat ``theta`` as ``(I_n, R)`` arrays (views)."""
        R = self.n_components
        parts = np.split(theta, np.cumsum([n * R for n in shape])[:-1])
        return tuple(
            part.reshape(R, n).T if m in self.transposed else part.reshape(n, R)
            for m, (part, n) in enumerate(zip(parts, shape))
        )

    def _own_layout(self, factors):
        return tuple(F.T if m in self.transposed else F for m, F in enumerate(factors))

    def split(self, theta, shape):
        """The factors of a flat ``theta`` for an array of ``shape``, in the model's layout."""
        return self._own_layout(self._cp_factors(theta, shape))

    def log_likelihood_and_grad(self, theta, X, y=None):
        """Per-entry log-likelihoods of a dense ``X`` and the gradient of their sum.

        ``theta`` is the factors raveled in the model's layout and
        concatenated. STI does not use this (it runs the fused kernel); it is
        here for checks and for users.
        """
        X = np.asarray(X, dtype=np.float64)
        factors = self._cp_factors(theta, X.shape)
        V = cp_intensity(factors)
        grads = cp_gradients(self.likelihood.grad_intensity(X, V), factors)
        log_lik = self.likelihood.log_density(X, V)
        return log_lik.ravel(), np.concatenate([g.ravel() for g in self._own_layout(grads)])

    def _log_prior(self, factors):
        if any(np.any(F < 0) for F in factors):
            return -np.inf
        terms = (F.size * np.log(lam) - lam * F.sum() for F, lam in zip(factors, self.prior_rates))
        return float(sum(terms))

    def _draw_factors(self, rng, shape):
        """An exact prior draw of the factors, in the model's layout, for an array of ``shape``."""
        R = self.n_components
        return tuple(
            rng.exponential(1.0 / lam, size=(R, n) if m in self.transposed else (n, R))
            for m, (n, lam) in enumerate(zip(shape, self.prior_rates))
        )

    def chain_runner(self, X, y, *, sampler, batch_size):
        """The fused block-parallel runner; ``batch_size`` is not used (the minibatch is a part)."""
        from ._cp_runner import CPChainRunner

        return CPChainRunner(self, X, sampler=sampler)
