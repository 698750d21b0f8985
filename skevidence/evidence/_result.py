"""The immutable record every evidence method returns."""

from dataclasses import dataclass, field, fields
from functools import partial
from types import MappingProxyType

import numpy as np

#: What an error bar can cover, by ``diagnostics`` key, with its name in
#: reports: the error bar is the root sum of squares of the pieces a method
#: reports (referenced TI reports all three).
ERROR_PIECES = {"mc_error": "Monte Carlo", "lag_error": "chain lag", "quadrature_error": "quadrature",
                "mode_error": "mode search"}


def _frozen(array):
    array = np.array(array, dtype=np.float64)
    array.flags.writeable = False
    return array


@dataclass(frozen=True, repr=False)
class EvidenceResult:
    r"""A log-evidence estimate with its uncertainty and how it was obtained.

    Attributes
    ----------
    log_evidence : float
        The estimate of :math:`\log p(x)`.
    std_error : float
        Its error bar, one standard error. What it covers depends on the
        method: for referenced TI (``"rti"``, the factorisations' default) the
        root sum of squares of the pieces in ``error_pieces``
        (Monte-Carlo error, the chains' lag, the quadrature error and the
        reference's mode search); for STI (``"sti"``: the papers' path from
        the prior, and the continuous models' from their Gaussian reference)
        the Monte-Carlo error only, the autocorrelation-corrected variance of
        each temperature's mean through the trapezoid weights, which does
        **not** cover the bias from the finite ladder and the step size
        (Şimşekli et al. 2016, Theorem 1); for the other methods their
        Monte-Carlo error (``"exact"``: 0).
    method : str
        ``"sti"``, ``"exact"``, ...
    temperatures : ndarray of shape (n_temperatures,)
        The ladder :math:`0 = t_0 < \dots < t_T = 1` (empty for methods without one).
    expected_log_likelihood : ndarray of shape (n_temperatures,)
        :math:`\hat E_{p_t}[\log p(x|\theta)]` at each temperature.
    expected_log_likelihood_std : ndarray of shape (n_temperatures,)
        Standard error of each of those means.
    n_likelihood_evaluations : int
        Number of per-datum likelihood evaluations spent.
    wall_time : float
        Seconds the estimate took.
    diagnostics : mapping
        Sampler diagnostics (read-only), e.g. ``"step_size"``,
        ``"autocorr_time"`` and ``"effective_sample_size"`` per temperature.
    posterior_mean : object or None
        Mean of the parameters over the kept samples at :math:`t = 1`, in the
        model's own layout (a flat array for
        :class:`~skevidence.evidence.GradientChainRunner`, ``(W, H)`` for
        factorisations); ``None`` when the method does not provide it.
    """

    log_evidence: float
    std_error: float
    method: str
    temperatures: np.ndarray = field(default_factory=lambda: _frozen([]))
    expected_log_likelihood: np.ndarray = field(default_factory=lambda: _frozen([]))
    expected_log_likelihood_std: np.ndarray = field(default_factory=lambda: _frozen([]))
    n_likelihood_evaluations: int = 0
    wall_time: float = 0.0
    diagnostics: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    posterior_mean: object = None

    def __post_init__(self):
        for name, kind in (("log_evidence", float), ("std_error", float), ("n_likelihood_evaluations", int),
                           ("wall_time", float)):
            object.__setattr__(self, name, kind(getattr(self, name)))
        for name in ("temperatures", "expected_log_likelihood", "expected_log_likelihood_std"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        diagnostics = {k: _frozen(v) if isinstance(v, np.ndarray) else v for k, v in dict(self.diagnostics).items()}
        object.__setattr__(self, "diagnostics", MappingProxyType(diagnostics))

    @property
    def error_pieces(self):
        """``{key: nats}`` of the pieces of ``ERROR_PIECES`` the error bar covers (NaN: not reported)."""
        return {key: float(self.diagnostics.get(key, np.nan)) for key in ERROR_PIECES}

    def _text(self):
        return f"log Z = {self.log_evidence:.6g} ± {self.std_error:.3g}"

    def summary(self):
        """Print ``log Z = x ± y`` with how it was obtained, and return the text."""
        lines = [f"{self._text()}  ({self.method})"]
        pieces = [(ERROR_PIECES[key], value) for key, value in self.error_pieces.items() if np.isfinite(value)]
        if pieces:
            # The error bar is the root sum of squares of what it covers.
            lines.append("  error bar covers: " + ", ".join(f"{name} {value:.3g}" for name, value in pieces))
        if "converged" in self.diagnostics:
            lines.append(f"  within tol={self.diagnostics.get('tol')}: {self.diagnostics['converged']}")
        if self.temperatures.size:
            lines.append(f"  temperatures: {self.temperatures.size}")
        lines.append(f"  likelihood evaluations: {self.n_likelihood_evaluations:,}")
        lines.append(f"  wall time: {self.wall_time:.3g} s")
        text = "\n".join(lines)
        print(text)
        return text

    def __repr__(self):
        return f"EvidenceResult({self._text()}, method={self.method!r})"

    def __reduce__(self):
        # MappingProxyType does not pickle; rebuild from plain values.
        state = {field.name: getattr(self, field.name) for field in fields(self)}
        return partial(EvidenceResult, **{**state, "diagnostics": dict(self.diagnostics)}), ()
