r"""Choose a CP model's rank by referenced TI: decide first, refine only what is undecided.

Every rank is screened: its reference's starts, then its bracket
(:meth:`~skevidence.cp.rti.RankRun.bracket`: the log-evidence lies between
the reference's bound and the integrand at the posterior), then, if it is
still in the running, one round of one ladder (a rank the screen puts out
needs no check of its Monte-Carlo error by a second; the best, unless every
other rank is out by then, and a rank at its first refinement step, run the
second). A round runs in three steps, each ending in an estimate with its
error bar: a quarter (every other temperature, a quarter of the draws), the
rest of the first half (the other temperatures join, every chain continues),
the second half; a rank an estimate puts out runs no further step, and once
every other rank is out the best's estimate as it stands decides. A rank whose
log-evidence is more than ``DECISION_Z`` combined error bars below the best
is out and is never refined: a rank whose bracket lies that far below runs
no ladder at all. So is a rank whose estimate plus
``DECISION_Z`` error bars lies below another rank's lower bound (the lower
end of its bracket, less ``DECISION_Z`` times its Monte-Carlo error: a bound
for any reference): the best's own bracket may be wide, its lower end is not
in doubt. A rank that only its mode search keeps in the running searches
more before any ladder runs; if the brackets then put every other rank out,
no ladder runs at all (the best's bracket is its estimate); otherwise the
best by its bracket runs its round first, alone: its estimate is what the
others must reach (``_screen``). The
ranks still in the running (the contenders) then take one
refinement step each per pass (longer chains, a finer ladder or more starts,
continuing what they have), until the best leads every other by
``DECISION_Z`` combined bars, or every contender's bar is within ``tol``, or
none can go further within its budget: then the choice is reported as not
decided between the contenders, with their posterior probabilities.

**The best's mode search is one-sided.** A better mode can only raise an
estimate, so the best's own mode-search piece stays out of the combined
bars: the best's estimate less its chains' error is what another rank's
estimate with its whole bar must reach. The best never searches for more
modes for the sake of the decision, and its chains are refined only where
their error is the larger piece of some combined bar.

**Both cores on every rank.** A pass gathers the pieces of work of every rank
it advances (every reference start, every ladder's runs of temperatures) and
runs them on ``n_jobs`` threads, the costliest first. Decisions are taken
between passes from the numbers alone, and every piece has a seed of its own,
so the same ``random_state`` gives the same numbers for any ``n_jobs``.
Reference searches run in rank order, so that half the starts of a rank
split the components of the best fit of the rank below.

**Resumable.** With a ``checkpoint`` path every pass's state is saved there;
a call with the same data and settings continues from the last saved pass.
"""

import math
import os
import time
from types import SimpleNamespace

import joblib
import numpy as np
from scipy.special import softmax

from .._config import DECISION_Z
from .._random import seed_sequence
from .rti import RankRun, run_pieces

__all__ = ["decision", "in_the_running", "select_rank", "standings"]


def in_the_running(scores, stds, modes=None, lower_bounds=None):
    """Which candidates could be the best: within ``DECISION_Z`` combined error bars of it (failed ones are not).

    A better mode can only raise an estimate, so the best's own mode-search
    piece (``modes``, the error bars' mode-search pieces) is left out of the
    combination: its estimate, less its chains' error, is what a candidate's
    estimate with its whole error bar must reach. A candidate whose estimate
    plus ``DECISION_Z`` error bars lies below another's lower bound
    (``lower_bounds``: what each log-evidence is above, ``-inf`` where none
    is known) is out as well.
    """
    scores = np.asarray(scores, dtype=np.float64)
    ok = np.isfinite(scores)
    if not ok.any():
        return ok
    stds = np.nan_to_num(np.asarray(stds, dtype=np.float64), nan=0.0)
    best = int(np.argmax(np.where(ok, scores, -np.inf)))
    running = ok & (scores[best] - scores <= DECISION_Z * np.hypot(stds, _down(stds, modes, best)))
    if lower_bounds is not None:
        running &= scores + DECISION_Z * stds >= _floor(lower_bounds, ok)[0]
    running[best] = True
    return running


def _floor(lower_bounds, ok):
    """The largest lower bound of the candidates that did not fail (``-inf`` if none), and whose it is."""
    bounds = np.where(ok, np.nan_to_num(np.asarray(lower_bounds, dtype=np.float64), nan=-np.inf), -np.inf)
    k = int(np.argmax(bounds))
    return float(bounds[k]), k


def _down(stds, modes, best):
    """The best's error bar without its mode-search piece."""
    mode = 0.0 if modes is None else float(np.nan_to_num(modes[best], nan=0.0))
    return math.sqrt(max(stds[best] ** 2 - mode**2, 0.0))


def standings(runs, errors):
    """Every rank's log-evidence, error bar, its mode-search piece and its lower bound as they stand (NaN where
    it failed)."""
    values = np.array([(math.nan,) * 4 if i in errors else (*run.standing, run.mode_error, run.lower_bound)
                       for i, run in enumerate(runs)])
    return tuple(values[:, k] for k in range(4))


def _screen(state):
    """The next pass of the screen once the references are fitted, or ``{}`` when every rank in the running has
    run its ladders' first round.

    A rank that only its mode search keeps in the running (out by its error
    bar without the mode-search piece) doubles its starts, up to eight times
    the first search's, before any ladder of it runs (a start costs a small
    part of a round); a better mode found so is bracketed again. Then the
    best runs the first step of its round first: its estimate is what the
    others must reach; every other rank in the running runs its round's
    steps beside the rest of the best's, each while it is still in the
    running; then the best runs its second ladder. As soon as every other
    rank is out (by the brackets alone, or by an estimate), the choice is
    decided and the screen stops: the best's estimate is where it stands
    (its bracket, or its round so far).
    """
    runs, live = state.runs, [i for i in range(len(state.runs)) if i not in state.errors]

    def unfinished(run):  # a bracket (again, if a better mode came before any ladder), or a round it restarts
        return (run.bracket() if not run.rounds and run.bracketed_at != run.best_bound
                else run.plan(None) if run.rounds and run.ladders is None else [])

    if plans := {i: pieces for i in live if (pieces := unfinished(runs[i]))}:
        return plans
    values, bars, modes, lowers = standings(runs, state.errors)
    running, best = in_the_running(values, bars, modes, lowers), int(np.nanargmax(values))
    if len(live) > 1 and running.sum() == 1:  # decided: the best's estimate as it stands (its bracket, or a round)
        runs[best].stop_reason = ("it leads by its bracket alone: every other rank is out" if not runs[best].rounds
                                  else "it leads: every other rank is out")
        return {}
    # A round's first steps put out a rank far below the best; the ranks still in the running finish theirs.
    halves = {i: pieces for i in np.flatnonzero(running) if runs[i].halfway and (pieces := runs[i].plan(None))}
    pending = [i for i in np.flatnonzero(running) if not runs[i].rounds]
    others = [i for i in pending if i != best]  # the best's mode-search piece is left out of every comparison
    bars[others] = np.sqrt(np.maximum(bars[others] ** 2 - modes[others] ** 2, 0.0))
    kept = in_the_running(values, bars, modes, lowers)
    if plans := {i: pieces for i in others if not kept[i] and runs[i].bounds.size < 8 * runs[i].n_starts
                 and (pieces := runs[i].search_more())}:
        return {**halves, **plans}
    if any(runs[i].rounds for i in live):  # every other round at once; then the best's second ladder checks its first
        plans = {**halves, **{i: runs[i].plan(None) for i in pending}} or {best: runs[best].second_ladder()}
        return {i: pieces for i, pieces in plans.items() if pieces}
    return {best: runs[best].plan(None)}


def _refinement(state, tol):
    """The next refinement pass of the ranks in the running towards ``tol`` (see the module), or ``{}``."""
    values, bars, modes, lowers = standings(state.runs, state.errors)
    running = np.flatnonzero(in_the_running(values, bars, modes, lowers))
    if running.size <= 1:
        return {}
    # The leader's chains are refined only where its own error is the larger piece of some combined bar.
    best = int(np.nanargmax(values))
    lead = _down(bars, modes, best) > min(bars[i] for i in running if i != best)
    if not lead:
        state.runs[best].stop_reason = ("it leads: its mode search is left alone (a better mode can only raise "
                                        "it) and its chains' error is below every other contender's bar")
    return {int(i): pieces for i in running if (i != best or lead) and (pieces := state.runs[i].plan(tol, i != best))}


def _run_pass(state, plans, n_jobs, report):
    """Run the pieces the ``plans`` (rank index -> pieces) hold, costliest first; finish every rank's step."""
    order = sorted(plans, key=lambda i: -state.runs[i].n_components)
    pieces = [piece for i in order for piece in plans[i]]
    owners = [i for i in order for _ in plans[i]]
    start = time.perf_counter()
    results = run_pieces([_guarded(piece) for piece in pieces], n_jobs)
    elapsed = time.perf_counter() - start
    for i in order:
        mine = [res for res, owner in zip(results, owners) if owner == i]
        failed = [res for res in mine if isinstance(res, Exception)]
        run = state.runs[i]
        if failed:
            state.errors[i] = f"{type(failed[0]).__name__}: {failed[0]}"
        else:
            new = run.finish(mine)
            # The threads' time, shared among the pieces by their count.
            run.time += elapsed * len(mine) / max(len(pieces), 1)
            if new:
                report(run)


def _guarded(piece):
    def run():
        try:
            return piece()
        except Exception as exc:  # a failing rank is recorded, the others go on
            return exc
    return run


def select_rank(data, ranks, prior_rates, *, tol, settings, n_jobs=1, random_state=None, verbose=0, checkpoint=None):
    """Screen every rank, then refine the contenders until the choice is decided (see the module).

    Parameters
    ----------
    data : CPData
        The prepared data.
    ranks : sequence of int
        The candidate ranks.
    prior_rates : callable
        ``prior_rates(rank)``: the prior rates of that rank.
    tol : float or None
        The error bar a contender is refined to; ``None``: the screen alone.
    settings : dict
        :class:`~skevidence.cp.rti.RankRun`'s settings.
    n_jobs : int, default=1
        Threads that run the pieces.
    random_state : int, RandomState instance or None
    verbose : int, default=0
        ``>= 1``: a line each time a rank's estimate is updated.
    checkpoint : str or None
        A file to save every pass's state to, and to resume from.

    Returns
    -------
    runs : list of RankRun
        One a rank, in the order given.
    errors : dict
        Rank index -> the message of its failure.
    """
    seeds = [int(s.generate_state(1)[0]) for s in seed_sequence(random_state).spawn(len(ranks))]
    state = None
    if checkpoint is not None and os.path.exists(checkpoint):
        state = joblib.load(checkpoint)
    if state is None:
        # What a checkpoint holds: every rank's run, the failures (rank index -> message), the passes so far.
        state = SimpleNamespace(runs=[RankRun(data, R, prior_rates(R), **settings, screen=True, random_state=seed)
                                      for R, seed in zip(map(int, ranks), seeds)], errors={}, passes=0)

    def report(run):
        if verbose:
            print(f"[select_rank] {run.summary()}", flush=True)

    def save():
        state.passes += 1
        if checkpoint is not None:
            joblib.dump(state, checkpoint)

    by_rank = sorted(range(len(ranks)), key=lambda i: ranks[i])
    if state.passes == 0:
        # The references, rank after rank: half the starts of a rank split the best fit of the rank below.
        below = None
        for i in by_rank:
            run = state.runs[i]
            run.init = [below] if below is not None and run.n_components > below.shape[1] else []
            _run_pass(state, {i: run.plan(None)}, n_jobs, report)
            if i not in state.errors:
                below = run.alpha / run.beta
        save()
    while plans := _screen(state) or (_refinement(state, tol) if tol is not None else {}):
        _run_pass(state, plans, n_jobs, report)
        save()
    return state.runs, state.errors


def decision(ranks, values, bars, modes=None, lower_bounds=None):
    """``(decided, status, text)``: every rank's status ("chosen", "contender", "out", "failed") and a sentence.

    The combined error bars and the lower bounds are :func:`in_the_running`'s.
    """
    values = np.asarray(values, dtype=np.float64)
    bars = np.nan_to_num(np.asarray(bars, dtype=np.float64), nan=0.0)
    ok = np.isfinite(values)
    running = in_the_running(values, bars, modes, lower_bounds)
    best = int(np.argmax(np.where(ok, values, -np.inf)))
    status = np.where(~ok, "failed", np.where(running, "contender", "out")).astype(object)
    status[best] = "chosen"
    others = [i for i in range(values.size) if i != best and ok[i]]
    if not others:
        return True, status, "decided: only one rank was estimated."
    down = _down(bars, modes, best)
    gaps = [(values[best] - values[i]) / math.hypot(down, bars[i]) for i in others]
    closest = others[int(np.argmin(gaps))]
    if running.sum() == 1:
        text = (f"decided: the runner-up, rank {ranks[closest]}, is {values[best] - values[closest]:.1f} nats below "
                f"({min(gaps):.1f} combined error bars")
        if min(gaps) < DECISION_Z:  # out by a lower bound
            floor, k = _floor(lower_bounds, ok)
            text += f"; with {DECISION_Z:g} error bars it lies below the lower bound {floor:.1f} of rank {ranks[k]}"
        return True, status, text + ")."
    near = [i for i in np.flatnonzero(running)]
    spread = values[best] - values[near].min()
    probs = softmax(np.where(ok, values, -np.inf))
    listed = ", ".join(f"{ranks[i]} ({probs[i]:.2f})" for i in near)
    return False, status, (f"NOT decided: ranks {', '.join(str(ranks[i]) for i in near)} lie within {spread:.1f} nats "
                           f"and {DECISION_Z:g} combined error bars of each other; posterior probabilities {listed}.")
