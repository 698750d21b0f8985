"""Docstring parts the estimators share.

A line of a class docstring that reads ``%(name)s`` is replaced by the part
``name``, indented as the line is, so each text lives once and cannot drift
between the classes that take the same parameters (the continuous models'
STI and SGAIS settings; the NMF and PARAFAC classes). A part's
``default=<>`` is filled with the class's own default of that parameter,
read from its signature, so the text holds where the defaults differ.
"""

import inspect
import textwrap

__all__ = ["fill_doc"]

_PARTS = {
    "evidence_of_data": r"""
        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data.
        y : array-like of shape (n_samples,), default=None
            Targets, for supervised models.

        Returns
        -------
        log_evidence : float
        """,
    "fit_returns": r"""
        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted estimator.
        """,
    "closed_form_method_parameters": r"""
        method : {"sti", "exact", "sgais", "ais"}, default="sti"
            How the evidence is computed: stochastic thermodynamic integration
            (:func:`~skevidence.sti_log_evidence`), the closed form, stochastic
            gradient annealed importance sampling
            (:func:`~skevidence.sgais_log_evidence`, the only method with
            ``partial_fit``), or annealed importance sampling with full-data HMC
            (:func:`~skevidence.evidence.ais_log_evidence`, a reference).
        reference : {"laplace", "prior"}, default="laplace"
            Where the STI path starts (``method="sti"``). ``"laplace"``: the
            Laplace fit of the posterior, a Gaussian :math:`q`; the path
            :math:`q^{1-t}(p(\theta)\,p(\cdot\mid\theta))^t` has an integrand that is
            constant where the posterior is Gaussian, so neither the chains' lag
            nor the step-size bias of SG-MCMC moves it (the posterior of this
            model is Gaussian). ``"prior"``: the papers' path from the prior.
        """,
    "evidence_parameters": r"""
        temperatures : int or array-like, default=<>
            Ladder of STI (see :func:`~skevidence.sti_log_evidence`), also used
            by ``method="ais"``, which needs hundreds.
        ladder : {"power", "uniform"}, default=<>
            Kind of ladder built from an int ``temperatures``.
        n_samples : int, default=<>
            STI: iterations per temperature, burn-in included.
        n_burnin : int, default=<>
            STI: burn-in iterations per temperature.
        batch_size : int, default=<>
            Minibatch size of STI and SGAIS.
        sampler : {"psgld", "sgld"} or Sampler, default=<>
            STI: SG-MCMC update rule.
        step_size : float or "auto", default=<>
            STI: scale :math:`a` of the step-size schedule :math:`(a/k)^b`.
        step_decay : float, default=<>
            STI: exponent :math:`b` of the schedule.
        n_particles : int, default=<>
            Particles of SGAIS (and independent runs of AIS).
        target_ess : float, default=<>
            SGAIS: effective sample size each annealing step aims at, in
            ``(1, n_particles]``.
        chunk_size : int or None, default=<>
            SGAIS: data per chunk; ``None`` is the schedule of Cameron et al. (2019b).
        n_steps : int, default=<>
            SGAIS: SGHMC steps after each annealing step.
        learning_rate : float, default=<>
            SGAIS: per-observation learning rate; SGHMC uses
            :math:`\eta = \text{learning\_rate}/n` with :math:`n` the data seen.
        resample : bool, default=<>
            SGAIS: resample the particles after every annealing step.
        reservoir_size : int or None, default=<>
            SGAIS: keep a uniform reservoir of this many past rows for the
            minibatches instead of all of them (bounded memory for streams).
        random_state : int, RandomState instance or None, default=None
            Seed; an int makes ``fit`` reproducible.
        verbose : int, default=0
            Progress reporting (see :func:`~skevidence.sti_log_evidence`).
        """,
    "online_evidence_attributes": r"""
        log_evidence_ : float
            Estimated log-evidence of all the data fitted so far (by ``fit``
            and ``partial_fit``).
        log_evidence_std_ : float
            Its Monte-Carlo standard error (0 for a closed form, ``method="exact"``).
        result_ : EvidenceResult
            The full record of the estimate.
        log_evidence_path_ : ndarray of shape (n_chunks,)
            ``method="sgais"`` only: the log-evidence of the data seen after
            every chunk (``result_.diagnostics["n_seen"]`` holds their counts).
        n_samples_seen_ : int
            ``method="sgais"`` only: number of rows seen by ``fit`` and
            ``partial_fit``.
        """,
    "feature_attributes": r"""
        n_features_in_ : int
            Number of features seen during ``fit``.
        feature_names_in_ : ndarray of shape (`n_features_in_`,)
            Feature names, when ``X`` has string column names.
        """,
    "reference_parameters": r"""
        reference : {"vb", "prior"}, default="vb"
            Where the path starts (``method="sti"`` and ``method="smc"``).
            ``"vb"``: from a variational fit of the posterior — for STI,
            referenced thermodynamic integration with Metropolis-adjusted HMC
            and an error bar that covers the Monte-Carlo error, the chains'
            lag and the quadrature
            (:func:`~skevidence.evidence.referenced_ti_log_evidence`); for the
            SMC, a path of far fewer steps (its estimate is exact either way,
            see :func:`~skevidence.evidence.smc_log_evidence`; above rank 7
            the SMC runs from the prior). ``"prior"``:
            from the prior — the papers' STI with SG-MCMC, whose chains lag
            behind the temperature (its error bar covers their Monte-Carlo
            noise only; see the user guide), and Chopin's (2002) data-arrival
            SMC.
        tol : float or None, default=1.0
            With ``reference="vb"``: the chains are lengthened (and the ladder
            refined) until the error bar is at most ``tol`` nats; ``None`` runs
            the given chain lengths once.
        max_time : float or None, default=None
            With ``reference="vb"``: seconds after which no refinement starts;
            if ``tol`` is not reached then, a
            :class:`~sklearn.exceptions.ConvergenceWarning` says so and
            ``result_.diagnostics["converged"]`` is False. The numbers then
            depend on the machine's speed; ``max_refinements`` bounds the work
            the same on any machine.
        max_refinements : int or None, default=8
            With ``reference="vb"``: the most refinement steps after the first
            round, each doubling the work so far (lengthening the chains,
            refining the ladder, or doubling the reference's random starts);
            if ``tol`` is not reached then, the same warning. ``None``: no
            bound but ``max_time``. ``result_.diagnostics["stop_reason"]``
            says which bound stopped the refinement.
        """,
    "sti_parameters": r"""
        temperatures : int, array-like or "auto", default="auto"
            The ladder. ``reference="prior"``: see
            :func:`~skevidence.sti_log_evidence` (``"auto"`` is 20).
            ``reference="vb"``: its number of intervals :math:`K`, rounded up
            to a multiple of 4 (``"auto"`` is 16; the budget may double it).
        ladder : {"power", "uniform"}, default="power"
            Kind of ladder built from an int ``temperatures`` (``reference="prior"``).
        n_samples : int or "auto", default="auto"
            Iterations per temperature, burn-in included (``"auto"``: 3000 for
            ``reference="prior"``, 300 for ``"vb"``, where ``tol`` may lengthen them).
        n_burnin : int or "auto", default="auto"
            Burn-in iterations per temperature (``"auto"``: 1000, or 100 for ``"vb"``).
        """,
    "step_and_chib_parameters": r"""
        step_size : float or "auto", default="auto"
            Scale :math:`a` of the step-size schedule :math:`(a/k)^b`.
        step_decay : float, default=0.51
            Exponent :math:`b` of the schedule.
        n_gibbs : int, default=9000
            Gibbs sweeps of Chib's main run (the setting of Şimşekli et al. 2016).
        n_gibbs_burnin : int, default=7000
            Their burn-in.
        n_reduced : int, default=5000
            Sweeps of Chib's reduced runs together.
        n_particles : int or "auto", default="auto"
            Particles of each run of the count-arrival SMC (``method="smc"``);
            ``"auto"`` raises them until the runs agree within a nat (see
            :func:`~skevidence.evidence.smc_log_evidence`).
        n_smc_runs : int, default=8
            Independent SMC runs; their spread is the SMC's error bar.
        random_state : int, RandomState instance or None, default=None
            Seed of the sampler; an int makes ``fit`` reproducible (for any
            number of numba threads).
        verbose : int, default=0
            Progress reporting.
        """,
    "evidence_attributes": r"""
        log_evidence_ : float
            Estimated :math:`\log p(X)`.
        log_evidence_std_ : float
            Its error bar. With ``reference="vb"`` it covers the Monte-Carlo
            error, the chains' lag and the quadrature error (the pieces are in
            ``result_.diagnostics``); with ``reference="prior"`` the
            Monte-Carlo error only (not the bias of the ladder and the step
            size); for ``method="smc"`` the spread of independent runs.
        result_ : EvidenceResult
            The full record of the estimate.
        """,
    "search_parameters": r"""
        n_jobs : int, default=None
            Ranks fitted in parallel; each task caps numba's threads at
            ``cores // n_jobs``. Results do not depend on it.
        random_state : int, RandomState instance or None, default=None
            Seed shared by every rank (common random numbers).
        verbose : int, default=0
            ``>= 1``: a line per finished rank; ``>= 2``: also per temperature.
        """,
    "selector_chain_parameters": r"""
        n_samples : int or "auto", default="auto"
            Iterations per temperature, burn-in included. ``"auto"``: 150 for
            ``reference="vb"``, a quarter of the model's first round: every
            rank runs one round (the screen), and the ranks still in the
            running are lengthened from it, doubling by doubling, to ``tol``
            (with ``tol=None`` that round is all); 10000 for
            ``reference="prior"``, whose chains approach equilibrium slowly as
            the temperature rises.
        n_burnin : int or "auto", default="auto"
            Iterations discarded at the start of each temperature
            (``"auto"``: 50 for ``reference="vb"``, 4000 for ``reference="prior"``).
        """,
    "failure_parameters": r"""
        error_score : "raise" or float, default=np.nan
            Score of a rank whose fit fails (``"raise"`` propagates the error).
        memory : str, path-like or joblib.Memory, default=None
            Cache of finished ranks: an interrupted selection run again with the
            same ``memory`` resumes where it stopped (see
            :class:`EvidenceGridSearch`).
        """,
    "selector_attributes": r"""
        ranks_ : ndarray of shape (n_ranks,)
            The candidate ranks, in the order given.
        log_evidence_ : ndarray of shape (n_ranks,)
            Log-evidence of each rank (``error_score`` where it failed).
        log_evidence_std_ : ndarray of shape (n_ranks,)
            Their standard errors.
        model_probabilities_ : ndarray of shape (n_ranks,)
            Posterior probability of each rank under a uniform prior over ``ranks``.
        best_rank_ : int
            The rank of largest evidence.
        errors_ : dict
            Rank -> error message, for the ranks whose fit failed.
        cv_results_ : dict
            The underlying :class:`EvidenceGridSearch` results.
        """,
}
_PARTS = {name: textwrap.dedent(text).strip("\n") + "\n" for name, text in _PARTS.items()}


def _format_default(value):
    """A default as numpydoc writes it: strings quoted, the rest as Python writes them."""
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _default(defaults, row, where):
    """The default of the parameter that ``row`` (``"name : type, default=<>"``) documents."""
    name = row.split(" : ")[0].strip()
    if name not in defaults:
        raise TypeError(f"{where}'s docstring documents {name!r}, which its __init__ does not take.")
    return _format_default(defaults[name])


def _fill(doc, defaults, where):
    """``doc`` with every ``%(name)s`` line replaced by its part, indented as the line is."""
    lines = []
    for line in doc.splitlines(keepends=True):
        key = line.strip()
        if key.startswith("%(") and key.endswith(")s"):
            part = "".join(
                row.replace("<>", _default(defaults, row, where)) if row.rstrip().endswith("default=<>") else row
                for row in _PARTS[key[2:-2]].splitlines(keepends=True)
            )
            line = textwrap.indent(part, line[: len(line) - len(line.lstrip())])
        lines.append(line)
    return "".join(lines)


def fill_doc(cls):
    """Class decorator: fill the ``%(name)s`` lines of the docstrings of ``cls`` and of its methods.

    Apply it outermost (after :func:`~skevidence.estimators._signature.shared_parameters`),
    so that the signature it reads the defaults from is complete.
    """
    defaults = {name: p.default for name, p in inspect.signature(cls).parameters.items()}
    cls.__doc__ = _fill(cls.__doc__, defaults, cls.__name__)
    for member in vars(cls).values():
        function = getattr(member, "__func__", member)
        if callable(function) and function.__doc__ and "%(" in function.__doc__:
            function.__doc__ = _fill(function.__doc__, defaults, cls.__name__)
    return cls
