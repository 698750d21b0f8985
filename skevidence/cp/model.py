r"""The CP factorisation model family: :math:`X \approx \sum_r a^{(1)}_r \circ \dots \circ a^{(N)}_r`.

Poisson NMF is the two-mode case and Poisson PARAFAC the three-mode one
(Cemgil 2009; Şimşekli et al. 2016; Nguyen et al. 2018); both have exponential priors on every
factor. What varies between models of the family is small: the likelihood
of an entry given its intensity (a :class:`PoissonLikelihood` today), the
number of modes, and which modes a model stores transposed (NMF keeps ``H``
as ``(R, J)``). The chains run in the fused kernels behind
:class:`~skevidence.models._cp_runner.CPChainRunner`.
"""

import numbers
from numbers import Real

import numpy as np
import scipy.sparse as sp
from scipy import sparse
from scipy.special import gammaln

from .._validation import check_int
from ..models._base import EvidenceModel
from ..models._trace import ChainTrace
from ..samplers import PSGLD, SGLD, LogSGLD
from .kernels.nmf import NMFData, run_nmf_chain, score_nmf_prior
from .kernels.parafac import PARAFACData, run_parafac_chain, score_parafac_prior

__all__ = ["CPModel", "GammaLikelihood", "PoissonLikelihood", "PoissonNMFModel", "PoissonPARAFACModel",
           "auto_prior_rate", "check_count_matrix", "check_count_tensor", "check_prior_rates", "check_real_entries",
           "likelihood_shape_of", "make_likelihood"]

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
        return CPChainRunner(self, X, sampler=sampler)






def check_count_matrix(X, *, name="X"):
    """A finite, non-negative, non-empty 2-D matrix as float64 (CSR if sparse).

    Raises :class:`ValueError` naming the problem otherwise. Duplicate entries
    of a sparse matrix are summed.
    """
    if sp.issparse(X):
        X = sp.csr_array(X, dtype=np.float64)
        X.sum_duplicates()
        values, shape = X.data, X.shape
    else:
        X = np.ascontiguousarray(real_array(X, name, "matrix"), dtype=np.float64)
        values, shape = X, X.shape
    if len(shape) != 2:
        raise ValueError(
            f"{name} must be a 2-D matrix (n_samples, n_features), got {len(shape)}-D input of shape {shape}."
        )
    PoissonNMFModel._check_entries(values, shape, name)
    return X


class PoissonNMFModel(CPModel):
    r"""Poisson NMF :math:`X \approx WH` with exponential priors.

    .. math::
        W_{ir} \sim \mathcal{E}(\lambda_w), \quad H_{rj} \sim \mathcal{E}(\lambda_h), \quad
        X_{ij} \mid W, H \sim \mathcal{PO}\Big(\sum_r W_{ir} H_{rj}\Big).

    Every entry of ``X`` is one datum (``N = I J``, zeros included). STI runs
    through the fused block-parallel kernel of :mod:`skevidence.kernels.nmf`
    (see :meth:`~skevidence.models.EvidenceModel.chain_runner`): rows and
    columns are split into ``n_blocks`` groups, and each iteration updates the
    ``n_blocks`` blocks of one part in parallel. The parameters ``theta`` of
    the generic interface are ``W.ravel()`` followed by ``H.ravel()``.

    For non-integer data (magnitude spectrograms) the likelihood keeps its
    formula with :math:`\log\Gamma(x+1)`; it is then not a normalised density,
    but comparisons between ranks on the same data remain meaningful.

    Parameters
    ----------
    n_components : int
        Rank :math:`R`.
    prior_rate_w, prior_rate_h : float
        Rates :math:`\lambda_w, \lambda_h > 0` of the exponential priors.
    n_blocks : int
        Number of row groups and of column groups :math:`B`.
    likelihood : PoissonLikelihood, GammaLikelihood or None
        The density of an entry given its mean (``None``: Poisson). The
        fused SG-MCMC kernels of the prior path run every likelihood (the
        Gamma family on dense blocks); referenced TI
        (:func:`~skevidence.evidence.referenced_ti_log_evidence`) too.
    """

    name = "Poisson NMF"
    array_name = "matrix"
    data_description = "counts or magnitudes"
    transposed = (1,)

    def __init__(self, n_components=1, prior_rate_w=1.0, prior_rate_h=1.0, n_blocks=1, likelihood=None):
        if int(n_components) != n_components or n_components < 1:
            raise ValueError(f"n_components must be a positive integer, got {n_components!r}.")
        if int(n_blocks) != n_blocks or n_blocks < 1:
            raise ValueError(f"n_blocks must be a positive integer, got {n_blocks!r}.")
        for name, value in (("prior_rate_w", prior_rate_w), ("prior_rate_h", prior_rate_h)):
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}.")
        self.n_components = int(n_components)
        self.prior_rates = (float(prior_rate_w), float(prior_rate_h))
        self.n_blocks = int(n_blocks)
        if likelihood is not None:
            # A Gamma/exponential likelihood (make_likelihood); the class's Poisson otherwise.
            self.likelihood = likelihood

    @property
    def prior_rate_w(self):
        r"""Rate :math:`\lambda_w` of the prior on ``W``."""
        return self.prior_rates[0]

    @property
    def prior_rate_h(self):
        r"""Rate :math:`\lambda_h` of the prior on ``H``."""
        return self.prior_rates[1]

    @staticmethod
    def check_data(X):
        """:func:`check_count_matrix`."""
        return check_count_matrix(X)

    def split_log_prior(self, W, H):
        """Log prior density of the factors ``W`` (I×R) and ``H`` (R×J)."""
        if np.any(W < 0) or np.any(H < 0):
            return -np.inf
        return (
            W.size * np.log(self.prior_rate_w) - self.prior_rate_w * W.sum()
            + H.size * np.log(self.prior_rate_h) - self.prior_rate_h * H.sum()
        )

    def sample_factors(self, rng, n_rows, n_cols):
        """An exact prior draw of ``(W, H)``."""
        return self._draw_factors(rng, (n_rows, n_cols))







def check_count_tensor(X, *, name="X"):
    """A finite, non-negative, non-empty 3-D tensor as float64.

    A 2-D ``(I, J)`` input is taken as ``(I, J, 1)``. Sparse input (any 2-D
    scipy format, or a 3-D :class:`scipy.sparse.coo_array`) becomes a 3-D
    ``coo_array`` with duplicate coordinates summed; dense input a
    C-contiguous float64 array. Raises :class:`ValueError` naming the problem
    otherwise.
    """
    if sp.issparse(X):
        if len(X.shape) not in (2, 3):
            raise ValueError(
                f"{name} must be a 3-D tensor (I, J, K) or a 2-D matrix (I, J), taken as "
                "(I, J, 1); "
                f"got a sparse input of shape {X.shape}."
            )
        X = sp.coo_array(X, dtype=np.float64)
        if X.ndim == 2:
            X = X.reshape((*X.shape, 1))
        X.sum_duplicates()
        values, shape = X.data, X.shape
    else:
        X = real_array(X, name, "tensor")
        if X.ndim == 2:
            X = X[:, :, None]
        if X.ndim != 3:
            raise ValueError(
                f"{name} must be a 3-D tensor (I, J, K) or a 2-D matrix (I, J), taken as "
                "(I, J, 1); "
                f"got {X.ndim}-D input of shape {X.shape}."
            )
        X = np.ascontiguousarray(X, dtype=np.float64)
        values, shape = X, X.shape
    PoissonPARAFACModel._check_entries(values, shape, name)
    return X


def check_prior_rates(prior_rates, name="prior_rate"):
    """Three positive finite rates from a number or a sequence of 3 numbers."""
    if isinstance(prior_rates, numbers.Real) and not isinstance(prior_rates, bool):
        rates = (prior_rates,) * 3
    else:
        try:
            rates = tuple(prior_rates)
        except TypeError:
            rates = ()
    valid = all(
        isinstance(r, numbers.Real) and not isinstance(r, bool) and np.isfinite(r) and r > 0
        for r in rates
    )
    if len(rates) != 3 or not valid:
        raise ValueError(
            f"{name} must be a positive finite number or a sequence of 3 of them (one per mode), "
            f"got {prior_rates!r}."
        )
    return tuple(float(r) for r in rates)


class PoissonPARAFACModel(CPModel):
    r"""Poisson PARAFAC :math:`X \approx \sum_r a_r \circ b_r \circ c_r` with exponential priors.

    .. math::
        a_{ir} \sim \mathcal{E}(\lambda_a), \quad b_{jr} \sim \mathcal{E}(\lambda_b), \quad
        c_{kr} \sim \mathcal{E}(\lambda_c), \quad
        x_{ijk} \mid A, B, C \sim \mathcal{PO}\Big(\sum_r a_{ir} b_{jr} c_{kr}\Big)

    (Nguyen et al. 2018, eq. 11). Every entry of ``X`` is one datum (``N = I J K``,
    zeros included). STI runs through the fused block-parallel kernel of
    :mod:`skevidence.kernels.parafac` (see
    :meth:`~skevidence.models.EvidenceModel.chain_runner`): each mode is
    split into ``n_blocks`` groups, and each iteration updates the
    ``n_blocks`` mutually disjoint blocks of one randomly drawn part in
    parallel. The parameters ``theta`` of the generic interface are
    ``A.ravel()``, ``B.ravel()``, ``C.ravel()`` concatenated, for a dense
    3-D ``X``.

    For non-integer data the likelihood keeps its formula with
    :math:`\log\Gamma(x+1)`; it is then not a normalised density, but
    comparisons between ranks on the same data remain meaningful.

    Parameters
    ----------
    n_components : int
        Rank :math:`R`.
    prior_rates : float or sequence of 3 floats, default=1.0
        Rates :math:`\lambda_a, \lambda_b, \lambda_c > 0` of the exponential priors.
    n_blocks : int
        Number of groups :math:`B` of every mode.
    """

    name = "Poisson PARAFAC"

    def __init__(self, n_components=1, prior_rates=1.0, n_blocks=1):
        self.n_components = check_int("n_components", n_components)
        self.prior_rates = check_prior_rates(prior_rates, "prior_rates")
        self.n_blocks = check_int("n_blocks", n_blocks)

    @staticmethod
    def check_data(X):
        """:func:`check_count_tensor`."""
        return check_count_tensor(X)

    def split_log_prior(self, factors):
        """Log prior density of the factors ``(A, B, C)``."""
        return self._log_prior(factors)

    def sample_factors(self, rng, shape):
        """An exact prior draw of ``(A, B, C)`` for a tensor of ``shape``."""
        return self._draw_factors(rng, shape)





#: The blocked data the kernels take, by number of modes.
_DATA = {2: NMFData, 3: PARAFACData}
#: Their types, for ``isinstance``: prepared data pass through ``prepare_data``.
BLOCKED_DATA = tuple(_DATA.values())


def block_data(X, n_blocks, kappa=0.0):
    """Split a validated ``X`` into ``n_blocks`` groups per mode for its kernel (``kappa``: the likelihood)."""
    return _DATA[len(X.shape)].from_array(X, n_blocks, kappa=kappa)


def _run_two_modes(data, model, factors, seed_seq, n_kept=None, **chain):
    """``(factors, kernel output, factor means)`` of NMF's kernel; prior draws if ``factors`` is None."""
    rates = dict(lam_w=model.prior_rates[0], lam_h=model.prior_rates[1])
    if factors is None:
        out, W, H = score_nmf_prior(data, model.n_components, n_kept, **rates, seed_seq=seed_seq)
        factors = (W, H)
    else:
        out = run_nmf_chain(data, *factors, **chain, **rates, seed_seq=seed_seq)
    return factors, out, (out.W_mean, out.H_mean)


def _run_three_modes(data, model, factors, seed_seq, n_kept=None, **chain):
    """As :func:`_run_two_modes`, with PARAFAC's kernel."""
    if factors is None:
        out, factors = score_parafac_prior(
            data, model.n_components, n_kept, prior_rates=model.prior_rates, seed_seq=seed_seq
        )
    else:
        out = run_parafac_chain(data, factors, **chain, prior_rates=model.prior_rates, seed_seq=seed_seq)
    return factors, out, out.factor_means


_KERNELS = {2: _run_two_modes, 3: _run_three_modes}


class CPChainRunner:
    """Run CP-model chains with the block-parallel kernel of their number of modes.

    The state passed between temperatures is the tuple of factors, in the
    model's layout. The minibatch is a part (``B`` blocks, disjoint in every
    mode), so :attr:`batch_size` is the number of entries of a part,
    :math:`I_1 \\cdots I_N / B^{N-1}` for even groups.

    Parameters
    ----------
    model : CPModel
        Rank and prior rates.
    data : NMFData or PARAFACData
        The blocked array.
    sampler : SGLD, PSGLD or LogSGLD
        Which update the kernel runs, with its settings.
    """

    def __init__(self, model, data, *, sampler):
        if not isinstance(sampler, (SGLD, PSGLD, LogSGLD)):
            raise ValueError(
                f"{model.name} runs SGLD, pSGLD or log-space SGLD inside its kernel; got the sampler {sampler!r}."
            )
        self.model, self.data, self.sampler = model, data, sampler
        self.batch_size = max(1, data.n_data // data.n_blocks ** (len(data.shape) - 1))
        self._kernel = _KERNELS[len(data.shape)]

    def _kernel_args(self):
        sampler = self.sampler
        if isinstance(sampler, LogSGLD):
            return dict(sampler="logsgld")
        if isinstance(sampler, PSGLD):
            return dict(sampler="psgld", alpha=sampler.alpha, sigma=sampler.sigma, freeze=sampler.adapt == "burnin")
        return dict(sampler="sgld")

    def initial_state(self, rng):
        return self.model._draw_factors(rng, self.data.shape)

    def run(self, state, temperature, *, n_samples, n_burnin, schedule, rng):
        """One chain at ``temperature`` from the factors ``state``; exact prior draws at ``t = 0``."""
        seed_seq = np.random.SeedSequence(rng.integers(2**63))
        if temperature == 0.0:
            factors, out, means = self._kernel(self.data, self.model, None, seed_seq, n_kept=n_samples - n_burnin)
            return factors, ChainTrace(out.log_likelihood, out.n_likelihood_evaluations, np.nan, None, means)
        factors = [np.array(F, dtype=np.float64, order="C") for F in state]
        _, out, means = self._kernel(
            self.data, self.model, factors, seed_seq, temperature=temperature, n_samples=n_samples,
            n_burnin=n_burnin, step_a=schedule.a, step_b=schedule.b, **self._kernel_args(),
        )
        trace = ChainTrace(out.log_likelihood, out.n_likelihood_evaluations, out.step_size, None, means,
                           out.capped_fraction)
        return tuple(factors), trace
