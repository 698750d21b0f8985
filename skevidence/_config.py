"""Numerical settings and defaults of the whole package, in one place.

Every tolerance, floor and default lives here, the estimators', the
functions' and the command line's, so that a change of policy is a change of
one line and two defaults that differ stand side by side with the reason.
"""

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


# ----------------------------------------------------------------------------
# Defaults of the estimators, the evidence functions and the command line.

#: Minibatch and chunk size of SGAIS (Cameron et al. 2019a): larger than STI's,
#: since a chunk's annealing reweights every particle by the whole minibatch.
SGAIS_BATCH_SIZE = 500

#: The friction alpha of Cameron et al. (2019b) (1 - alpha is the fraction of velocity kept per step).
SGAIS_MOMENTUM_DECAY = 0.2

#: Defaults of :func:`~skevidence.sti_log_evidence`, and so of the continuous
#: estimators' ``method="sti"`` and ``method="rti"``: the papers' settings
#: (Şimşekli et al. 2016) with twenty temperatures of the power ladder, which
#: keeps the ladder's error below the Monte-Carlo error across the models and
#: data sizes of the tests (ten leave nats); the minibatch is the papers'
#: N_s = 250 (section 4.1.1).
STI_DEFAULTS = dict(temperatures=20, ladder="power", n_samples=3000, n_burnin=1000, batch_size=250, sampler="psgld",
                    step_size="auto", step_decay=STEP_DECAY)

#: Default settings of :func:`~skevidence.sgais_log_evidence` and :func:`~skevidence.evidence.sgais_init`; the
#: learning rate is the per-observation rate of Cameron et al. (2019b): eta = 0.1 / n.
SGAIS_DEFAULTS = dict(n_particles=10, target_ess=8, chunk_size=None, n_steps=20, learning_rate=0.1, resample=True,
                      reservoir_size=None)

#: ``BayesianGMM``'s SGAIS settings where they differ from the function's. A
#: per-observation learning rate of 1.0 (the value Cameron et al. 2019a run their
#: mixture with): at 0.1, 20 SGHMC steps are too short to carry a component
#: across the data while only tens of points are seen, the particles miss the
#: modes a new cluster opens, and the evidence of the true number of components
#: is tens of nats low, that of a larger number less so. 30 particles at an ESS
#: of 24: when a new cluster opens a mode few particles reach it, and the log of
#: the estimate is biased low; with 10 particles the evidence of 5 separated
#: clusters is 14 nats below its lower bound at K = 5 and 5 at K = 6, enough to
#: pick 6; with 30, 3 and 1 nats.
GMM_SGAIS_DEFAULTS = dict(n_particles=30, target_ess=24, learning_rate=1.0)

#: Defaults of the referenced path (:func:`~skevidence.evidence.referenced_ti_log_evidence`;
#: measured on the bundled clip and on simulated counts against the SMC; see the user guide).
RTI_DEFAULTS = dict(n_temperatures=16, n_burnin=200, n_keep=400, n_leapfrog=10, n_starts=8, max_starts=64,
                    max_time=None, max_refinements=8)

#: Default number of groups of every mode of the block-parallel SG-MCMC chains (Şimşekli et al. 2016 use
#: 5 x 5 on a 100 x 75 matrix).
DEFAULT_BLOCKS = 5

#: The rank selectors' first round of referenced TI, a quarter of a model's (``RTI_DEFAULTS``: its ladder, a
#: quarter of its iterations): every rank runs it once (the screen), and a rank far below the best needs no more;
#: a rank in the running is refined from it. Not cheaper: at 8 temperatures the quadrature's bias (4-8 nats on
#: bench_accuracy's t16x16x16r4) is far above what Richardson's estimate from 4 and 8 intervals states; at 75
#: iterations the clip's ranks 16 and 32 come out 46 and 53 nats below four times the budget (34 and 32 at
#: 150), against chain pieces of 7 and 10 nats (6 and 16) in their error bars.
SELECTOR_SCREEN = dict(n_temperatures=16, n_burnin=50, n_keep=100, n_starts=4)

#: A rank whose log-evidence is below the best's by more than this many combined
#: error bars is out of the running: it is not refined further, and the choice is
#: decided when every other rank is that far below.
DECISION_Z = 3.0

#: Defaults of ``skevidence nmf-rank``. ``scale`` multiplies the 16-bit sample units (the Poisson likelihood
#: reads magnitudes as counts at that scale). ``max_refinements`` bounds the refinement of a rank in each pass
#: (each step doubles the work so far): the same bound on any machine, so the same seed gives the same numbers.
CLI_DEFAULTS = dict(ranks=(1, 2, 4, 8, 16, 32), scale=1e-3, max_refinements=3)
