"""Decide, then refine: ``cp.select`` and the continued referenced TI it drives."""

from types import SimpleNamespace

import numpy as np
import pytest

from poisson_nmf_exact import rank1_log_evidence
from skevidence.cp.reference import as_data
from skevidence.cp.rti import RankRun, run_pieces
from skevidence.cp.select import decision, in_the_running, select_rank, standings

SETTINGS = dict(n_temperatures=8, n_burnin=40, n_keep=80, n_leapfrog=8, n_starts=4, max_starts=16,
                max_refinements=4, max_time=None)


def _data(seed=0, R=2, shape=(24, 18)):
    rng = np.random.default_rng(seed)
    V = rng.exponential(size=(shape[0], R)) @ rng.exponential(size=(R, shape[1]))
    return as_data(rng.poisson(3 * V).astype(float), 0.0, 0.0)


def test_in_the_running_and_decision():
    values = np.array([-120.0, -100.0, -101.0, np.nan, -150.0])
    bars = np.array([1.0, 0.5, 0.5, np.nan, 2.0])
    np.testing.assert_array_equal(in_the_running(values, bars), [False, True, True, False, False])
    decided, status, text = decision([1, 2, 3, 4, 5], values, bars)
    assert not decided
    assert list(status) == ["out", "chosen", "contender", "failed", "out"]
    assert text.startswith("NOT decided: ranks 2, 3 lie within 1.0 nats")
    decided, status, text = decision([1, 2, 3], [-120.0, -100.0, -110.0], [1.0, 0.5, 0.5])
    assert decided and list(status) == ["out", "chosen", "out"]
    assert "rank 3, is 10.0 nats below" in text
    assert decision([4], [-1.0], [0.1])[0]


def test_the_best_mode_search_is_one_sided():
    """A better mode can only raise the best's estimate: its mode-search piece keeps no other rank in."""
    values, bars = [-100.0, -110.0], [5.0, 1.0]
    assert list(in_the_running(values, bars)) == [True, True]
    assert list(in_the_running(values, bars, [4.9, 0.0])) == [True, False]
    assert list(in_the_running(values, [1.0, 5.0], [0.0, 4.9])) == [True, True]  # the other's own search counts
    decided, status, text = decision([1, 2], values, bars, [4.9, 0.0])
    assert decided and list(status) == ["chosen", "out"] and "rank 2, is 10.0 nats below (7.1 combined" in text


def test_a_rank_below_another_ranks_lower_bound_is_out():
    """However wide the best's bar, its lower bound takes out a rank whose estimate with 3 bars lies below it."""
    values, bars = [100.0, 80.0, 93.0], [20.0, 2.0, 1.0]
    assert list(in_the_running(values, bars)) == [True, True, True]
    lowers = [95.0, 70.0, -np.inf]
    assert list(in_the_running(values, bars, None, lowers)) == [True, False, True]
    # The bound of any rank counts, and the best is in the running whatever the bounds say.
    assert list(in_the_running(values, bars, None, [-np.inf, 70.0, 120.0])) == [True, False, False]
    decided, status, text = decision([1, 2], values[:2], bars[:2], None, lowers[:2])
    assert decided and list(status) == ["chosen", "out"]
    assert "rank 2, is 20.0 nats below (1.0 combined error bars; with 3 error bars it lies below the lower " \
           "bound 95.0 of rank 1)" in text
    # Without a bound the same numbers are not decided.
    assert not decision([1, 2], values[:2], bars[:2])[0]


def test_more_starts_update_the_bracket_error_bar():
    rng = np.random.default_rng(5)
    X = rng.poisson(2 * np.outer(rng.exponential(size=30), rng.exponential(size=20))).astype(float)
    run = _bracketed(as_data(X), 1, 5)
    assert run.bracketed_at == run.best_bound
    run.finish(run_pieces(run.search_more(), 2))
    b = run.bracketed  # its error bar holds the mode search of every start so far
    assert run.bounds.size == 2 * SETTINGS["n_starts"]
    assert run.standing[1] == pytest.approx(np.sqrt(b["mc"] ** 2 + b["lag"] ** 2 + b["quad"] ** 2 + run.mode_error**2))


def test_the_best_by_its_bracket_runs_its_round_first(monkeypatch):
    import skevidence.cp.select as select

    passes, run_pass = [], select._run_pass

    def recorded(state, plans, n_jobs, report):
        passes.append({state.runs[i].n_components: state.runs[i].bracketed is not None for i in plans})
        run_pass(state, plans, n_jobs, report)

    monkeypatch.setattr(select, "_run_pass", recorded)
    runs, _ = select_rank(_data(seed=2), [1, 2, 3], lambda R: np.ones(2), tol=None, settings=SETTINGS, random_state=0)
    first = next(k for k, p in enumerate(passes) if all(p.values()) and len(p) == 1)  # the first ladder pass
    best = max(runs, key=lambda r: r.bracketed["log_evidence"])
    assert list(passes[first]) == [best.n_components] and best.n_components in {2, 3}
    # Then the rest of its round, beside the first half of every other rank's still in the running.
    assert passes[first + 1].keys() >= {best.n_components} and len(passes[first + 1]) > 1


def test_the_leader_refines_its_chains_never_its_search():
    run = RankRun(_data(seed=2), 2, np.ones(2), **SETTINGS, random_state=0)
    while not run.estimated:
        run.finish(run_pieces(run.plan(None), 1))
    starts = run.bounds.size
    run.finish(run_pieces(run.plan(1e-6, search=False), 2))
    assert run.bounds.size == starts and len(run.rounds) == 2
    assert run.plan(1e9, search=False) == [] and "chains" in run.stop_reason


def test_a_rank_far_below_is_never_refined():
    data = _data(seed=2)  # ranks 2 and 3 within a nat of each other, rank 1 far below
    runs, errors = select_rank(data, [1, 2, 3], lambda R: np.ones(2), tol=0.05, settings=SETTINGS, random_state=0)
    assert not errors
    values = np.array([r.value for r in runs])
    assert values.max() - values[0] > 40.0
    assert len(runs[0].rounds) == 1  # rank 1 lies over 40 nats below: the screen only
    assert max(len(r.rounds) for r in runs[1:]) > 1  # the contenders are refined
    # The screen's round ran one ladder; the best and every rank refined run both.
    assert len(runs[0].ladders) == 1 and runs[0].result(None, "poisson").diagnostics["ladders"] == (values[0],)
    assert all(len(r.ladders) == 2 for r in runs[1:])


def _bracketed(data, R, seed=0):
    """A run of rank ``R`` through its reference and its bracket."""
    run = RankRun(data, R, np.ones(2), **SETTINGS, random_state=seed)
    run.finish(run_pieces(run.plan(None), 1))
    run.finish(run_pieces(run.bracket(), 2))
    return run


@pytest.mark.parametrize("seed", range(3))
def test_the_bracket_holds_the_closed_form(seed):
    """Rank 1: the log-evidence lies between the reference's bound and the integrand at the posterior."""
    rng = np.random.default_rng(seed)
    X = rng.poisson(2 * np.outer(rng.exponential(size=30), rng.exponential(size=20))).astype(float)
    run = _bracketed(as_data(X), 1, seed)
    b, exact = run.bracketed, rank1_log_evidence(X, 1.0, 1.0)
    noise = 3.0 * np.hypot(b["mc"], b["lag"])
    assert b["lower"] - noise <= exact <= b["upper"] + noise, (b, exact)
    assert abs(b["log_evidence"] - exact) <= 3.0 * run.standing[1]


def test_a_rank_far_below_runs_its_bracket_alone():
    """Rank 1 lies thousands of nats below rank 3: the brackets say so, and no ladder runs, not even rank 3's
    (no round would change the choice; its bracket is its estimate)."""
    rng = np.random.default_rng(0)
    V = rng.exponential(size=(24, 3)) @ rng.exponential(size=(3, 18))
    data = as_data(rng.poisson(20 * V).astype(float))
    runs, errors = select_rank(data, [1, 3], lambda R: np.ones(2), tol=0.5, settings=SETTINGS, random_state=0)
    assert not errors and all(run.ladders is None and not run.rounds for run in runs)
    assert runs[1].stop_reason.startswith("it leads by its bracket alone")
    # The bracket's two chains run side by side with n_jobs=2: the same sums of draws as one after the other.
    two, _ = select_rank(data, [1, 3], lambda R: np.ones(2), tol=0.5, settings=SETTINGS, random_state=0, n_jobs=2)
    np.testing.assert_array_equal(two[0].theta_sum, runs[0].theta_sum)
    assert two[0].bracketed == runs[0].bracketed
    assert list(decision([1, 3], *standings(runs, errors))[1]) == ["out", "chosen"]
    result = runs[0].result(0.5, "poisson", warn=False)
    b = runs[0].bracketed
    assert (result.log_evidence, result.std_error) == runs[0].standing and result.log_evidence == b["log_evidence"]
    np.testing.assert_array_equal(result.temperatures, [0.0, 1.0])
    assert result.diagnostics["bracket"] == (b["lower"], b["upper"]) and not result.diagnostics["converged"]
    # The bracket holds what a ladder of rank 1 estimates.
    run = _bracketed(data, 1)
    while not run.estimated:
        run.finish(run_pieces(run.plan(None), 2))
    noise = 3.0 * np.hypot(run.bracketed["mc"], run.bracketed["lag"]) + 3.0 * run.error
    assert run.bracketed["lower"] - noise <= run.value <= run.bracketed["upper"] + noise


def test_selection_does_not_depend_on_n_jobs_and_resumes(tmp_path):
    data = _data(seed=1)
    kwargs = dict(tol=0.5, settings=SETTINGS, random_state=3)
    one, _ = select_rank(data, [1, 2, 3], lambda R: np.ones(2), n_jobs=1, **kwargs)
    two, _ = select_rank(data, [1, 2, 3], lambda R: np.ones(2), n_jobs=2, **kwargs)
    assert [r.standing for r in one] == [r.standing for r in two]
    # Stopped after the screen (tol=None), then resumed from the checkpoint to tol: the same numbers.
    path = str(tmp_path / "state.pkl")
    screened, errors = select_rank(data, [1, 2, 3], lambda R: np.ones(2), checkpoint=path, **dict(kwargs, tol=None))
    best = int(np.nanargmax(standings(screened, errors)[0]))  # the screen ends with the best's second ladder
    assert len(screened[best].ladders) == 2 and len(screened[best].rounds) == 2
    resumed, _ = select_rank(data, [1, 2, 3], lambda R: np.ones(2), checkpoint=path, **kwargs)
    assert [r.standing for r in resumed] == [r.standing for r in one]


def test_refinement_continues_the_chains():
    """A refinement step adds to the chains it has: the draws grow, the first round's draws are kept."""
    run = RankRun(_data(seed=2), 2, np.ones(2), **SETTINGS, random_state=0)
    while not run.estimated:
        run.finish(run_pieces(run.plan(None), 1))
    first = [np.concatenate(chunks).copy() for chunks in run.ladders[0].samples]
    n_grad = run.n_grad
    run.finish(run_pieces(run.plan(1e-6, search=False), 2))  # the chains' step (with search, more starts first)
    assert run.n_refinements == 1 and len(run.rounds) == 2
    if run.ladders[0].temperatures.size == len(first):  # lengthened: every chain extended
        for before, after in zip(first, run.ladders[0].samples):
            after = np.concatenate(after)
            assert after.size == 2 * before.size
            np.testing.assert_array_equal(after[: before.size], before)
    else:  # refined: the old temperatures keep their draws
        for before, after in zip(first, run.ladders[0].samples[0::2]):
            np.testing.assert_array_equal(np.concatenate(after), before)
    # The work of the step is about that of the first round, not first round + step (no restart).
    assert run.n_grad - n_grad <= 1.1 * n_grad


def test_a_refinement_searches_before_it_lengthens():
    """While the mode search's piece alone exceeds a share of tol, a step doubles the starts before any chain
    grows (a better mode restarts the chains); a better mode starts the count of refinements again."""
    run = RankRun(_data(seed=2), 2, np.ones(2), **SETTINGS, random_state=0)
    while not run.estimated:
        run.finish(run_pieces(run.plan(None), 1))
    starts, kept, best = run.bounds.size, run.ladders[0].n_kept, run.best_bound
    assert run.mode_error > 0.0
    pieces = run.plan(1e-6)
    assert len(pieces) == starts and run.n_refinements == 1
    run.finish(run_pieces(pieces, 2))
    assert run.bounds.size == 2 * starts
    if run.best_bound > best:
        assert run.ladders is None and run.n_refinements == 0
    else:
        assert run.ladders[0].n_kept == kept and run.n_refinements == 1


def test_a_screen_runs_one_ladder_and_its_first_refinement_adds_the_second():
    """A screen's first round is one ladder of the full round's size, estimating the same log-evidence; the
    first refinement step runs the second ladder as long, and no bar counts as within tol before it."""
    data = _data(seed=2)
    full = RankRun(data, 2, np.ones(2), **SETTINGS, random_state=0)
    screen = RankRun(data, 2, np.ones(2), **SETTINGS, screen=True, random_state=0)
    for run in (full, screen):
        while run.bracketed is None:  # the references, then the bracket
            run.finish(run_pieces(run.plan(None), 2))
        bracket = run.n_grad  # the bracket's gradients, before the ladders
        while not run.estimated:
            run.finish(run_pieces(run.plan(None), 2))
        assert run.plan(None) == []
    result, both = screen.result(None, "poisson"), full.result(None, "poisson")
    assert len(result.diagnostics["ladders"]) == 1 and result.log_evidence == result.diagnostics["ladders"][0]
    assert result.diagnostics["acceptance"].shape == full.ladders[0].accept.shape
    assert screen.ladders[0].n_kept == full.ladders[0].n_kept
    assert abs(result.log_evidence - both.log_evidence) <= 3.0 * np.hypot(result.std_error, both.std_error)
    kept, n_grad = screen.ladders[0].n_kept, screen.n_grad
    # A tol any bar meets: the second ladder still runs, once, and the first is left as it was.
    screen.finish(run_pieces(screen.plan(1e6), 2))
    assert screen.n_refinements == 1 and len(screen.rounds) == 2
    assert [ladder.n_kept for ladder in screen.ladders] == [kept, kept]
    assert screen.n_grad - n_grad == pytest.approx(n_grad - bracket, rel=0.05)
    assert len(screen.result(1e6, "poisson").diagnostics["ladders"]) == 2
    assert screen.plan(1e6) == [] and "below tol" in screen.stop_reason


def test_a_screens_first_round_starts_at_every_other_temperature_and_continues_its_chains():
    """A screen's round begins with a quarter of its work (every other temperature, half the first half's
    draws), an estimate of its own; then the other temperatures join and every chain continues to the half."""
    run = RankRun(_data(seed=2), 2, np.ones(2), **SETTINGS, screen=True, random_state=0)
    while run.bracketed is None:
        run.finish(run_pieces(run.plan(None), 2))
    run.finish(run_pieces(run.plan(None), 2))
    K, half = SETTINGS["n_temperatures"], SETTINGS["n_keep"] // 2
    ladder = run.ladders[0]
    assert ladder.temperatures.size == K // 2 + 1 and ladder.n_kept == half // 2
    assert run.halfway and not run.estimated and len(run.rounds) == 1 and np.isfinite(run.standing).all()
    temperatures, quarter = ladder.temperatures.copy(), [np.concatenate(s).copy() for s in ladder.samples]
    run.finish(run_pieces(run.plan(None), 2))
    assert ladder.temperatures.size == K + 1 and run.halfway and len(run.rounds) == 1
    np.testing.assert_array_equal(ladder.temperatures[::2], temperatures)
    assert [np.concatenate(s).size for s in ladder.samples] == [half] * (K + 1)
    for before, after in zip(quarter, ladder.samples[::2]):
        np.testing.assert_array_equal(np.concatenate(after)[: before.size], before)
    run.finish(run_pieces(run.plan(None), 2))
    assert run.estimated and ladder.n_kept == SETTINGS["n_keep"] and len(run.rounds) == 1


def test_a_failing_rank_is_recorded_and_the_others_go_on(monkeypatch):
    from skevidence.cp import reference

    fit = reference.vb_fit

    def failing(data, R, rates, start):
        if R == 3:
            raise FloatingPointError("broken fit")
        return fit(data, R, rates, start)

    monkeypatch.setattr(reference, "vb_fit", failing)
    monkeypatch.setitem(reference._START_TOTAL, failing, reference._START_TOTAL[fit])
    runs, errors = select_rank(_data(seed=4), [1, 2, 3], lambda R: np.ones(2), tol=None, settings=SETTINGS,
                               random_state=0)
    assert list(errors) == [2] and "broken fit" in errors[2]
    assert np.isfinite(runs[0].standing).all() and np.isfinite(runs[1].standing).all()
    assert runs[0].bracketed is not None and runs[1].bracketed is not None  # both went on past their searches


class _Run:
    """A stand-in for RankRun in :func:`_screen`: its standing, mode piece and starts, and what it plans."""

    def __init__(self, value, bar, mode, rounds, starts=4):
        self.standing, self.mode_error, self.lower_bound = (value, bar), mode, -np.inf
        self.rounds, self.bounds, self.n_starts = [{}] * rounds, np.zeros(starts), 4
        self.ladders, self.estimated, self.best_bound = (object(), True, 1.0) if rounds else (None, False, 1.0)
        self.bracketed_at, self.halfway = 1.0, False

    def plan(self, tol):
        return ["ladder"]

    def search_more(self):
        return ["search"]


def test_a_rank_only_its_mode_search_keeps_in_searches_before_any_ladder():
    from skevidence.cp.select import _screen

    runs = [_Run(100.0, 1.0, 0.0, 1), _Run(90.0, 4.0, 3.9, 0), _Run(99.0, 1.0, 0.5, 0), _Run(50.0, 1.0, 0.0, 0)]
    state = SimpleNamespace(runs=runs, errors={})
    assert _screen(state) == {1: ["search"]}  # rank 1 is 2.4 combined bars below, 7.5 without its search
    runs[1].bounds = np.zeros(32)  # eight times the first search's starts: its ladders run
    assert _screen(state) == {1: ["ladder"], 2: ["ladder"]}
    runs[2].bracketed_at = 0.5  # a better mode since its bracket: bracketed again first
    runs[2].bracket = lambda: ["bracket"]
    assert _screen(state) == {2: ["bracket"]}


def test_before_any_round_the_brackets_may_decide():
    """Before any ladder: a rank kept by its mode search alone searches first; then, if the brackets put every
    other rank out, no round runs; if not, the best by its bracket runs its round first."""
    from skevidence.cp.select import _screen

    runs = [_Run(100.0, 2.0, 1.5, 0), _Run(80.0, 8.0, 7.9, 0), _Run(50.0, 1.0, 0.0, 0)]
    state = SimpleNamespace(runs=runs, errors={})
    assert _screen(state) == {1: ["search"]}  # 2.5 combined bars below, 10.9 without its mode search
    runs[1].standing, runs[1].mode_error = (80.0, 1.0), 0.5  # more starts: its mode piece shrinks
    runs[0].stop_reason = None
    assert _screen(state) == {} and runs[0].stop_reason.startswith("it leads by its bracket alone")
    runs[1].standing = (97.0, 1.0)  # within 3 combined bars: the best runs its round first
    assert _screen(state) == {0: ["ladder"]}


def test_a_screen_that_puts_every_other_rank_out_stops_there():
    """Once every other rank is out, the best's estimate as it stands decides (its round's first part too):
    no second ladder runs, and no other rank finishes its round."""
    from skevidence.cp.select import _screen

    runs = [_Run(100.0, 2.0, 0.0, 1), _Run(96.0, 1.0, 0.0, 1), _Run(50.0, 1.0, 0.0, 1)]
    runs[0].halfway = runs[1].halfway = True
    runs[0].second_ladder = lambda: ["second ladder"]
    state = SimpleNamespace(runs=runs, errors={})
    assert _screen(state) == {0: ["ladder"], 1: ["ladder"]}  # rank 1 is 1.8 combined bars below: both finish
    runs[1].standing = (90.0, 1.0)  # 4.5 combined bars below: out
    runs[0].stop_reason = None
    assert _screen(state) == {} and runs[0].stop_reason == "it leads: every other rank is out"


def test_split_start_splits_the_largest_component_of_many_rows():
    """A warm start splits the component of the largest geometric mean, also where the product of a
    thousand rows overflows, and keeps every entry's intensity."""
    from skevidence.cp.reference import _split_start

    F = np.full((2000, 3), 10.0)
    F[:, 1] *= 2.0
    with np.errstate(all="raise"):
        G = _split_start(F, 4, np.random.RandomState(0))
    np.testing.assert_allclose(G[:, [0, 2]], F[:, [0, 2]])
    np.testing.assert_allclose(G[:, 1] + G[:, 3], F[:, 1])


def test_only_a_rank_in_the_running_polishes_its_laplace_search(monkeypatch):
    """A rank out by its bracket keeps the first search's short L-BFGS; ranks the brackets cannot tell apart go
    on before their rounds."""
    from skevidence.cp import reference

    monkeypatch.setattr(reference, "_LAPLACE_MAX_ITER", (3, 2000))
    rng = np.random.default_rng(5)
    X = rng.exponential((rng.exponential(size=(40, 3)) ** 3) @ (rng.exponential(size=(3, 30)) ** 3))
    runs, errors = select_rank(as_data(X, 1.0), [1, 3, 4], lambda R: np.ones(2), tol=None, settings=SETTINGS,
                               random_state=0)
    assert not errors and not runs[0].rounds and runs[1].rounds and runs[2].rounds  # rank 1 is out by its bracket
    assert all(run.polished and all(fit[3] for fit in run.fits) for run in runs[1:])
    assert not runs[0].polished and not any(fit[3] for fit in runs[0].fits)
