"""Decide, then refine: ``cp.select`` and the continued referenced TI it drives."""

import numpy as np

from skevidence.cp.reference import as_data
from skevidence.cp.rti import RankRun, run_pieces
from skevidence.cp.select import decision, in_the_running, select_rank

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


def test_a_rank_far_below_is_never_refined():
    data = _data(seed=2)  # ranks 2 and 3 within a nat of each other, rank 1 far below
    runs, errors = select_rank(data, [1, 2, 3], lambda R: np.ones(2), tol=0.05, settings=SETTINGS, random_state=0)
    assert not errors
    values = np.array([r.value for r in runs])
    assert values.max() - values[0] > 40.0
    assert len(runs[0].rounds) == 1  # rank 1 lies over 40 nats below: the screen only
    assert max(len(r.rounds) for r in runs[1:]) > 1  # the contenders are refined


def test_selection_does_not_depend_on_n_jobs_and_resumes(tmp_path):
    data = _data(seed=1)
    kwargs = dict(tol=0.5, settings=SETTINGS, random_state=3)
    one, _ = select_rank(data, [1, 2, 3], lambda R: np.ones(2), n_jobs=1, **kwargs)
    two, _ = select_rank(data, [1, 2, 3], lambda R: np.ones(2), n_jobs=2, **kwargs)
    assert [r.value for r in one] == [r.value for r in two]
    assert [r.error for r in one] == [r.error for r in two]
    # Stopped after the screen (tol=None), then resumed from the checkpoint to tol: the same numbers.
    path = str(tmp_path / "state.pkl")
    select_rank(data, [1, 2, 3], lambda R: np.ones(2), checkpoint=path, **dict(kwargs, tol=None))
    resumed, _ = select_rank(data, [1, 2, 3], lambda R: np.ones(2), checkpoint=path, **kwargs)
    assert [r.value for r in resumed] == [r.value for r in one]


def test_refinement_continues_the_chains():
    """A refinement step adds to the chains it has: the draws grow, the first round's draws are kept."""
    run = RankRun(_data(seed=2), 2, np.ones(2), **SETTINGS, random_state=0)
    while not run.estimated:
        run.finish(run_pieces(run.plan(None), 1))
    first = [np.concatenate(chunks).copy() for chunks in run.ladders[0].samples]
    n_grad = run.n_grad
    run.finish(run_pieces(run.plan(1e-6), 2))
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


def test_a_failing_rank_is_recorded_and_the_others_go_on(monkeypatch):
    import skevidence.cp.rti as rti

    fit = rti.vb_fit

    def failing(data, R, rates, start):
        if R == 3:
            raise FloatingPointError("broken fit")
        return fit(data, R, rates, start)

    monkeypatch.setattr(rti, "vb_fit", failing)
    monkeypatch.setitem(rti._START_TOTAL, failing, rti._START_TOTAL[fit])
    runs, errors = select_rank(_data(seed=4), [1, 2, 3], lambda R: np.ones(2), tol=None, settings=SETTINGS,
                               random_state=0)
    assert list(errors) == [2] and "broken fit" in errors[2]
    assert runs[0].estimated and runs[1].estimated
