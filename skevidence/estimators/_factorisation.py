"""What the CP-model estimators (PoissonNMF, PoissonPARAFAC) share.

Their parameters, defaults and constraints, the choice of blocks, the Chib
branch and the fit bookkeeping live here once; a model estimator adds its
model, its input validation, its Chib call and the fitted factors.
"""

from dataclasses import replace
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._config import (
    AUTO_CHAIN,
    CHIB_DEFAULTS,
    CP_SAMPLER,
    DEFAULT_BLOCKS,
    DEFAULT_TOL,
    RTI_DEFAULTS,
    SMC_DEFAULTS,
    STI_DEFAULTS,
)
from ..samplers import Sampler
from ._base import STI_PARAMETER_CONSTRAINTS, EvidenceEstimatorMixin

__all__ = [
    "AUTO_CHAIN",
    "CHIB_DEFAULTS",
    "CP_PARAMETERS",
    "CP_PARAMETER_CONSTRAINTS",
    "CPEstimatorMixin",
    "DEFAULT_TOL",
    "SMC_DEFAULTS",
    "CP_SAMPLER",
    "check_ranks_supported",
]

#: The keyword-only parameters of every CP-model estimator and rank selector
#: with their defaults: the chains ("auto": those of the path ``reference``
#: chooses, see ``AUTO_CHAIN``), Chib's method, the SMC and the budget (added to
#: each ``__init__`` by :func:`~skevidence.estimators._signature.shared_parameters`).
CP_PARAMETERS = dict(
    temperatures="auto",
    ladder=STI_DEFAULTS["ladder"],
    n_samples="auto",
    n_burnin="auto",
    step_size=STI_DEFAULTS["step_size"],
    step_decay=STI_DEFAULTS["step_decay"],
    **CHIB_DEFAULTS,
    **SMC_DEFAULTS,
    reference="vb",
    tol=DEFAULT_TOL,
    max_time=None,
    max_refinements=RTI_DEFAULTS["max_refinements"],
)

#: Constraints of the parameters every CP-model estimator has (its rank and
#: ``prior_rate`` are its own).
CP_PARAMETER_CONSTRAINTS = {
    "method": [StrOptions({"sti", "chib", "smc"})],
    "reference": [StrOptions({"vb", "prior"})],
    "tol": [Interval(Real, 0, None, closed="neither"), None],
    "max_time": [Interval(Real, 0, None, closed="neither"), None],
    "max_refinements": [Interval(Integral, 0, None, closed="left"), None],
    "n_blocks": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "n_gibbs": [Interval(Integral, 2, None, closed="left")],
    "n_gibbs_burnin": [Interval(Integral, 0, None, closed="left")],
    "n_reduced": [Interval(Integral, 1, None, closed="left")],
    "n_particles": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
    "n_smc_runs": [Interval(Integral, 2, None, closed="left")],
    **STI_PARAMETER_CONSTRAINTS,
    "temperatures": [Interval(Integral, 1, None, closed="left"), "array-like", StrOptions({"auto"})],
    "n_samples": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
    "n_burnin": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
    "sampler": [StrOptions({"sgld", "psgld", "logsgld"}), Sampler],
}


def check_ranks_supported(name, ranks, limit, why):
    """Raise a ``ValueError`` if a rank in ``ranks`` exceeds ``limit``, the largest the data identify.

    The one check of the CP-model estimators, their rank selectors and the
    command line: ``name`` is the parameter that holds the ranks, ``why`` says
    what in the data bounds them.
    """
    ranks = np.atleast_1d(np.asarray(ranks))
    too_large = ranks > limit
    if np.any(too_large):
        raise ValueError(
            f"{name} {ranks[too_large].tolist()} exceed what the data allow: {why}, so a rank "
            f"above {limit} cannot be identified. Use smaller ranks or more data."
        )


class CPEstimatorMixin(EvidenceEstimatorMixin):
    """Fit = the evidence of a CP model of ``X`` and the posterior means of its factors.

    Subclasses set ``_rank_param``, the name of their rank parameter, and
    implement ``_rank_limit(X)`` returning ``(largest rank, why)`` (a static
    method: the rank selectors call it too), ``_model(X, n_blocks)``,
    ``_chib_log_evidence(model, X)`` and ``_validate_fit_data``; their ``fit``
    calls :meth:`_fit_factors`.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        return tags

    def _chain_settings(self):
        """``temperatures``, ``n_samples``, ``n_burnin`` with "auto" resolved for ``reference``."""
        auto = AUTO_CHAIN[self.reference]
        return {name: auto[name] if getattr(self, name) == "auto" else getattr(self, name) for name in auto}

    def _sti_params(self):
        # Only the STI settings the estimator has: PoissonPARAFAC has no batch_size.
        names = (name for name in STI_DEFAULTS if name in self._parameter_constraints)
        return {name: getattr(self, name) for name in names} | self._chain_settings() | {
            "random_state": self.random_state,
            "verbose": self.verbose,
        }

    def _chib_params(self):
        return dict(
            n_samples=self.n_gibbs,
            n_burnin=self.n_gibbs_burnin,
            n_reduced=self.n_reduced,
            random_state=self.random_state,
            verbose=self.verbose,
        )

    def _make_model(self, X):
        n_blocks = min(DEFAULT_BLOCKS, *X.shape) if self.n_blocks == "auto" else self.n_blocks
        return self._model(X, n_blocks)

    def _smc_log_evidence(self, model, X):
        from ..cp.smc import _MAX_REFERENCED_RANK, smc_log_evidence

        # The referenced path sums its weights over all R! labellings; beyond its ranks the prior's path
        # is the exact one left (result_.diagnostics["reference"] says which ran).
        reference = self.reference if model.n_components <= _MAX_REFERENCED_RANK else "prior"
        result = smc_log_evidence(
            X, model.n_components, model.prior_rates, n_particles=self.n_particles,
            n_runs=self.n_smc_runs, reference=reference, random_state=self.random_state, verbose=self.verbose,
        )
        return replace(result, posterior_mean=model._own_layout(result.posterior_mean))

    def _likelihood(self):
        """``(name, shape)`` of the estimator's likelihood (the CP estimators without one are Poisson)."""
        return getattr(self, "likelihood", "poisson"), getattr(self, "likelihood_shape", 1.0)

    def _check_method_supports_likelihood(self):
        likelihood = self._likelihood()[0]
        if likelihood == "poisson":
            return
        if self.method != "sti":
            raise ValueError(
                f"likelihood={likelihood!r} is estimated by STI only (method='sti'); got method={self.method!r}. "
                "Chib's method and the SMC rest on the Poisson likelihood's latent counts."
            )

    def _referenced_log_evidence(self, model, X):
        from ..cp.rti import referenced_ti_log_evidence

        likelihood, likelihood_shape = self._likelihood()
        chain = self._chain_settings()
        K = chain["temperatures"]
        if not isinstance(K, Integral):
            raise ValueError(
                "reference='vb' builds its own ladder: temperatures must be an int (its number of intervals) "
                "or 'auto'. Pass one, or reference='prior' for an explicit ladder."
            )
        # Simpson's rule on the ladder and on every other point of it.
        K = 4 * max(1, -(-int(K) // 4))
        n_keep = chain["n_samples"] - chain["n_burnin"]
        if n_keep < 4:
            raise ValueError(
                f"n_samples={chain['n_samples']} with n_burnin={chain['n_burnin']} keeps {n_keep} draws a "
                f"temperature; reference='vb' needs at least 4. Raise n_samples."
            )
        result = referenced_ti_log_evidence(
            X, model.n_components, model.prior_rates, n_temperatures=int(K), n_burnin=chain["n_burnin"],
            n_keep=n_keep, tol=self.tol, max_time=self.max_time, max_refinements=self.max_refinements,
            likelihood=likelihood,
            likelihood_shape=likelihood_shape, random_state=self.random_state, verbose=self.verbose,
        )
        return replace(result, posterior_mean=model._own_layout(result.posterior_mean))

    def _evidence(self, model, X, y):
        self._check_method_supports_likelihood()
        if self.method == "chib":
            return self._chib_log_evidence(model, X)
        if self.method == "smc":
            return self._smc_log_evidence(model, X)
        if self.reference == "vb":
            return self._referenced_log_evidence(model, X)
        return super()._evidence(model, X, y)

    def _fit_factors(self, X):
        """Validate ``X``, fit the evidence; the posterior means of the factors."""
        X, _ = self._validate_fit_data(X, None, reset=True)
        check_ranks_supported(self._rank_param, getattr(self, self._rank_param), *self._rank_limit(X))
        self._fit_evidence(X)
        mean = self.result_.posterior_mean
        if mean is None:
            raise ValueError(f"method={self.method!r} returned no posterior mean of the factors.")
        return mean
