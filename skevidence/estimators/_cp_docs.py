"""Docstring parts the CP-model estimators and their rank selectors share.

A line of a class docstring that reads ``%(name)s`` is replaced by the part
``name``, indented as the line is, so each text lives once and cannot drift
between the NMF and the PARAFAC classes.
"""

import textwrap

__all__ = ["fill_doc"]

_PARTS = {
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
            Iterations per temperature, burn-in included. ``"auto"``: as the
            model's for ``reference="vb"``; 10000 for ``reference="prior"``,
            whose chains approach equilibrium slowly as the temperature rises.
        n_burnin : int or "auto", default="auto"
            Iterations discarded at the start of each temperature
            (``"auto"``: the model's, or 4000 for ``reference="prior"``).
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


def fill_doc(cls):
    """Class decorator: replace every ``%(name)s`` line of ``cls.__doc__`` by its part."""
    lines = []
    for line in cls.__doc__.splitlines(keepends=True):
        key = line.strip()
        if key.startswith("%(") and key.endswith(")s"):
            line = textwrap.indent(_PARTS[key[2:-2]], line[: len(line) - len(line.lstrip())])
        lines.append(line)
    cls.__doc__ = "".join(lines)
    return cls
