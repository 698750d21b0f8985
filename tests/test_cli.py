"""The ``skevidence`` command line, run as users run it: in a subprocess."""

import contextlib
import io
import json
import re
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.io import wavfile
from sklearn.pipeline import make_pipeline

from skevidence import BayesianNMFRankSelector
from skevidence.audio import SpectrogramTransformer, load_audio
from skevidence.cli import main
from skevidence.datasets import example_audio_path

#: Small settings: the point is the plumbing, not the evidence.
FAST = ["--ranks", "1", "2", "--likelihood", "poisson", "--temperatures", "4", "--n-samples", "60",
        "--n-burnin", "20", "--tol", "1e9", "-q"]


def _cli(*args, cwd=None):
    """The command in a subprocess, as users run it."""
    return subprocess.run(
        [sys.executable, "-m", "skevidence", *args], capture_output=True, text=True, cwd=cwd, timeout=3600
    )


def _main(*args):
    """The command in this process (what :func:`_cli` runs, without a new interpreter's imports)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(list(args), out=out)
    return SimpleNamespace(returncode=status, stdout=out.getvalue(), stderr=err.getvalue())


def test_nmf_rank_on_the_bundled_clip_matches_the_selector(tmp_path):
    out = tmp_path / "out.json"
    run = _cli("nmf-rank", *FAST, "--json", str(out))
    assert run.returncode == 0, run.stderr
    record = json.loads(out.read_text())
    # The same numbers as the library called directly with what the CLI says it did.
    x, rate = load_audio(example_audio_path())
    X = SpectrogramTransformer(scale=32768.0 * record["scale"], sample_rate=rate).fit_transform(x)
    assert record["shape"] == list(X.shape)
    assert record["prior_rate"] == "auto" and record["likelihood"] == "poisson" and record["power"] == 1.0
    assert record["noise_floor"] == 0.0 and "noise floor none" in run.stdout
    np.testing.assert_allclose(record["prior_rates"], [np.sqrt(r / X.mean()) for r in (1, 2)], rtol=1e-12)
    selector = BayesianNMFRankSelector(
        ranks=(1, 2), prior_rate=record["prior_rate"], random_state=0, tol=1e9,
        method_params=dict(n_temperatures=4, n_keep=40, n_burnin=20, max_refinements=3),
    ).fit(X)
    assert record["settings"]["method_params"] == dict(n_temperatures=4, n_keep=40, n_burnin=20, max_refinements=3)
    np.testing.assert_allclose(record["log_evidence"], selector.log_evidence_, rtol=1e-12)
    np.testing.assert_allclose(record["log_evidence_std"], selector.log_evidence_std_, rtol=1e-12)
    assert record["best_rank"] == selector.best_rank_
    # The printed table has one row per rank and names the chosen one.
    rows = [line.split() for line in run.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [int(r[0]) for r in rows] == [1, 2]
    assert float(rows[0][1]) == pytest.approx(selector.log_evidence_[0], abs=0.06)
    assert f"chosen rank: {selector.best_rank_}" in run.stdout


def test_nmf_rank_default_model_does_not_depend_on_the_level(tmp_path):
    """The default (exponential likelihood of the power spectrogram, prior 'auto'): the same rank at -40 dB."""
    rate, samples = wavfile.read(example_audio_path())
    quiet = tmp_path / "quiet.wav"
    # A float WAV: 16-bit rounding at -40 dB would add noise the louder file does not have.
    wavfile.write(quiet, rate, (samples / 32768.0 * 0.01).astype(np.float32))
    records = []
    for i, files in enumerate(([], [str(quiet)])):
        out = tmp_path / f"out{i}.json"
        # One short round a rank: the ranks' gaps are thousands of nats, the point is the model's scale.
        run = _main("nmf-rank", *files, "--ranks", "1", "2", "4", "--temperatures", "4", "--n-samples", "60",
                   "--n-burnin", "20", "--tol", "1e9", "-q", "--json", str(out))
        assert run.returncode == 0, run.stderr
        records.append(json.loads(out.read_text()))
        assert "exponential likelihood" in run.stdout
    loud, soft = records
    assert loud["likelihood"] == soft["likelihood"] == "exponential" and loud["power"] == 2.0
    assert loud["best_rank"] == soft["best_rank"]
    # The differences between ranks agree within the stated errors.
    diff = np.diff(loud["log_evidence"]) - np.diff(soft["log_evidence"])
    se = np.hypot(np.hypot(loud["log_evidence_std"][1:], loud["log_evidence_std"][:-1]),
                  np.hypot(soft["log_evidence_std"][1:], soft["log_evidence_std"][:-1]))
    assert np.all(np.abs(diff) <= 3.0 * se)


def test_nmf_rank_plot_and_several_files(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    rate, samples = wavfile.read(example_audio_path())
    first, second = tmp_path / "a.wav", tmp_path / "b.wav"
    wavfile.write(first, rate, samples[: samples.size // 2])
    wavfile.write(second, rate, samples[samples.size // 2 :])
    png, out = tmp_path / "curve.png", tmp_path / "out.json"
    run = _main("nmf-rank", str(first), str(second), *FAST, "--plot", str(png), "--json", str(out))
    assert run.returncode == 0, run.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plt.get_fignums() == []  # the figure is closed once written
    record = json.loads(out.read_text())
    halves = [samples[: samples.size // 2] / 32768.0, samples[samples.size // 2 :] / 32768.0]
    stacked = SpectrogramTransformer(scale=32.768).fit_transform(halves)
    assert record["shape"] == list(stacked.shape) and record["files"] == [str(first), str(second)]


@pytest.mark.parametrize(
    "args, message",
    [
        (["no_such_file.wav"], "no_such_file.wav"),
        (["--ranks", "0"], "positive integer"),
        (["--scale", "-1"], "positive number"),
    ],
)
def test_nmf_rank_bad_input_exits_2_with_a_message(args, message, capsys):
    # argparse rejects malformed options itself (SystemExit); the rest return 2.
    try:
        status = main(["nmf-rank", *args, "-q"])
    except SystemExit as exit_:
        status = exit_.code
    assert status == 2
    assert message in capsys.readouterr().err


SILENT = "the spectrogram is all zeros (silent recording): nothing to factorise."


def test_silent_recording_is_refused_by_the_cli_and_the_pipeline(tmp_path, capsys):
    # One check, in the transformer: the command line and a pipeline of the
    # transformer and the selector refuse silence with the same message.
    silent = tmp_path / "silent.wav"
    wavfile.write(silent, 16000, np.zeros(8000, dtype=np.int16))
    assert main(["nmf-rank", str(silent), *FAST]) == 2
    assert SILENT in capsys.readouterr().err
    pipe = make_pipeline(SpectrogramTransformer(), BayesianNMFRankSelector(ranks=[2]))
    with pytest.raises(ValueError, match=re.escape(SILENT)):
        pipe.fit(np.zeros(8000))


@pytest.mark.slow
def test_readme_main_command_runs_with_its_defaults(tmp_path):
    # The README's main command, as printed there (the plot needs matplotlib).
    pytest.importorskip("matplotlib")
    run = _cli("nmf-rank", "--plot", "evidence.png", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "chosen rank:" in run.stdout and (tmp_path / "evidence.png").stat().st_size > 0
    rows = [line.split() for line in run.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [int(r[0]) for r in rows] == [1, 2, 4, 8, 16, 32]
    probs = [float(r[3]) for r in rows]
    assert sum(probs) == pytest.approx(1.0, abs=0.01)


def test_nmf_rank_cache_resumes_with_the_same_numbers(tmp_path):
    cache, first, second = tmp_path / "cache", tmp_path / "a.json", tmp_path / "b.json"
    run = _main("nmf-rank", *FAST, "--cache", str(cache), "--json", str(first))
    assert run.returncode == 0, run.stderr
    assert any(cache.rglob("skevidence-rank-selection-*.pkl")), "every pass is saved in the cache"
    run = _main("nmf-rank", *FAST, "--cache", str(cache), "--json", str(second))
    assert run.returncode == 0, run.stderr
    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    assert a["log_evidence"] == b["log_evidence"] and a["best_rank"] == b["best_rank"]


def test_nmf_rank_referenced_path_reports_its_decision(tmp_path):
    out = tmp_path / "out.json"
    run = _main("nmf-rank", "--ranks", "1", "2", "--tol", "50", "--max-time", "20", "--n-samples", "60",
               "--n-burnin", "20", "-q", "--json", str(out))
    assert run.returncode == 0, run.stderr
    record = json.loads(out.read_text())
    assert record["settings"]["method"] == "rti" and record["settings"]["tol"] == 50.0
    # Rank 2 is tens of thousands of nats above rank 1 on the clip.
    assert record["best_rank"] == 2 and record["decided"] is True
    assert "decided:" in run.stdout and "NOT decided" not in run.stdout
    # Every rank is marked: the chosen one, and the others out (or contenders, were the choice open).
    assert record["status"] == ["out", "chosen"] and record["decision"].startswith("decided:")
    rows = [line.split() for line in run.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [r[-1] for r in rows] == ["out", "chosen"]
    # The error bars' pieces, per rank, whose root sum of squares is the bar.
    pieces = record["error_pieces"]
    assert set(pieces) == {"mc_error", "lag_error", "quadrature_error", "mode_error"}
    np.testing.assert_allclose(np.sqrt(sum(np.square(v) for v in pieces.values())), record["log_evidence_std"])
    # Every rank was bracketed: a lower bound below its estimate.
    assert all(low < value for low, value in zip(record["lower_bound"], record["log_evidence"]))


def test_nmf_rank_reports_the_noise_floor_it_used(tmp_path):
    """The exponential likelihood's floor is the recording's quantisation noise; digital silence needs it."""
    rate = 8000
    t = np.arange(rate) / rate
    x = np.concatenate([np.zeros(rate // 2), 0.3 * np.sin(2 * np.pi * 440 * t), np.zeros(rate // 2)])
    wav = tmp_path / "tone.wav"
    wavfile.write(wav, rate, np.round(x * 32767).astype(np.int16))
    out = tmp_path / "out.json"
    run = _main("nmf-rank", str(wav), "--ranks", "1", "2", "--temperatures", "4", "--n-samples", "40", "--n-burnin",
               "20", "--tol", "1e9", "-q", "--json", str(out))
    assert run.returncode == 0, run.stderr
    record = json.loads(out.read_text())
    floor = SpectrogramTransformer(scale=32768 * 1e-3, power=2).fit(np.round(x * 32767) / 32768).noise_floor_
    assert record["noise_floor"] == pytest.approx(floor, rel=1e-12) and floor > 0
    assert "(the samples' quantisation noise)" in run.stdout
    assert np.all(np.isfinite(record["log_evidence"]))
    # The frames whose window holds only the zeros at either end are left out, and said so.
    X = SpectrogramTransformer(scale=32768 * 1e-3, power=2).fit_transform(np.round(x * 32767) / 32768)
    silent = int(np.sum(~X.any(axis=1)))
    assert silent > 20 and record["silent_frames"] == silent
    assert record["shape"] == [X.shape[0] - silent, X.shape[1]]
    assert f"{silent} frames of digital silence left out" in run.stdout


def test_nmf_rank_sti_takes_the_step_size_its_divergence_error_names(tmp_path):
    """--method sti runs the papers' STI with --step-size's a; a diverging chain's message names the a to lower."""
    out = tmp_path / "out.json"
    args = ["nmf-rank", "--method", "sti", "--ranks", "1", "--temperatures", "2", "--n-samples", "40", "--n-burnin",
            "10", "-q", "--json", str(out)]
    run = _main(*args, "--step-size", "1e-16")
    assert run.returncode == 0, run.stderr
    record = json.loads(out.read_text())
    assert record["settings"]["method_params"]["step_size"] == 1e-16 and np.isfinite(record["log_evidence"][0])
    run = _main(*args, "--step-size", "1e3")
    assert run.returncode == 2 and re.search(r"diverged .* Lower step_size \(now a=1e\+03\)", run.stderr)
