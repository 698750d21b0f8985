"""Numerical settings shared by the whole package, in one place.

Every tolerance, floor and default that more than one module relies on lives
here, so that a change of policy is a change of one line.
"""

__all__ = [
    "DEFAULT_LADDER_POWER",
    "DEFAULT_TOL",
    "FASTMATH",
    "AUTOCORR_WINDOW",
    "MIN_BATCHES",
    "PSGLD_ALPHA",
    "PSGLD_SIGMA",
    "STEP_DECAY",
    "LADDER_ATOL",
    "LOG_SGLD_STEP",
    "LOG_SGLD_MAX_DRIFT",
    "LANGEVIN_MAX_DRIFT",
    "MAX_CAPPED_FRACTION",
    "PARALLEL_MIN_PART",
    "REWEIGHT_MIN_ESS",
]

#: Exponent ``c`` of the power ladder ``t_i = (i / T) ** c`` (Friel & Pettitt 2008).
DEFAULT_LADDER_POWER = 5.0

#: Default tolerance (nats) of the error bar of the referenced path: the
#: estimators', the rank selectors' and the command line's.
DEFAULT_TOL = 1.0

#: Default exponent ``b`` of the burn-in step-size schedule ``(a / k) ** b``.
STEP_DECAY = 0.51

#: pSGLD defaults of Nguyen et al. (2018, eq. 8-9): RMSprop decay and the diagonal floor.
PSGLD_ALPHA = 0.99
PSGLD_SIGMA = 1e-5

#: Fewest batches the batch-means standard error is computed from.
MIN_BATCHES = 10

#: Sokal's window constant ``c`` for the integrated autocorrelation time.
AUTOCORR_WINDOW = 5.0

#: Tolerance on the end points of a user-supplied temperature ladder.
LADDER_ATOL = 1e-12

#: Near t = 0, exact prior draws reweighted by ``p(x|theta)^t`` replace a chain
#: while their effective sample size stays above this fraction of the draws.
REWEIGHT_MIN_ESS = 0.5

#: fastmath for the numba kernels. Off: the kernels must match their NumPy
#: twins to rounding and detect non-finite values, which fastmath's
#: no-NaN/no-inf assumptions would break.
FASTMATH = False

#: Step size (log units) of log-space SGLD after burn-in with step_size="auto".
LOG_SGLD_STEP = 0.01

#: Largest log-space drift of one log-space SGLD step (a factor e per step).
#: Near equilibrium drifts are O(step) and never reach it; it only tames the
#: first steps from a state far from the data (a prior draw at a large scale,
#: where the data-given preconditioner underestimates the curvature), which
#: would otherwise overflow exp.
LOG_SGLD_MAX_DRIFT = 1.0

#: Largest drift of one SGLD or pSGLD step of the factorisation kernels, in
#: standard deviations of the step's own noise. The Poisson gradient
#: ``x / V - 1`` diverges as an intensity ``V`` approaches 0 with ``x > 0``, and
#: an Euler step taken from there (a mirrored entry landing near 0) can throw
#: the entry orders of magnitude past the posterior, a burst the chain takes
#: thousands of iterations to forget. Where the Euler step is accurate the
#: drift is a small fraction of the noise (about sqrt(step / variance) of it):
#: the cap binds only where the linearised step is already wrong, and vanishes
#: in the small-step limit like the step's own bias.
LANGEVIN_MAX_DRIFT = 3.0

#: A factorisation chain whose drift cap cuts more than this fraction of its
#: entry updates after burn-in raises SamplerDivergenceError: its steps are too
#: long for the Euler scheme almost everywhere, not only near an intensity of 0.
MAX_CAPPED_FRACTION = 0.01

#: A generic SG-MCMC chain (:class:`~skevidence.evidence.GradientChainRunner`)
#: has diverged when, after burn-in, more than ``MAX_CAPPED_FRACTION`` of its
#: entry updates exceed this many standard deviations of the sampler's own
#: noise. Where the Euler step is accurate the drift is a small fraction of
#: the noise, and Gaussian noise alone never passes this bound; a chain whose
#: steps are far too long is carried by its drift, orders of magnitude past
#: it. The bound is wide on purpose: a short or mildly mistuned chain (a
#: frozen pSGLD preconditioner a few times too large) is biased, and the
#: ladder's monotonicity check warns of it, but it has not diverged.
GENERIC_MAX_STEP = 100.0

#: Fewest entries in a part for the NMF kernel to run its blocks in parallel;
#: below it the per-iteration fork/join of the threads costs more than it saves.
PARALLEL_MIN_PART = 20_000
