"""The ``skevidence`` command line: choose the NMF rank of a recording's spectrogram.

``skevidence nmf-rank [FILE ...]`` reads one or more recordings (or, with no
file, the clip bundled with the package), computes their power spectrogram
(magnitudes with ``--likelihood poisson``) with
:class:`~skevidence.audio.SpectrogramTransformer`, runs
:class:`~skevidence.BayesianNMFRankSelector` over the candidate ranks and
prints a table of log-evidence ± standard error and posterior probability per
rank, then the chosen rank. ``--plot`` draws the evidence curve
(:class:`~skevidence.plotting.EvidenceCurveDisplay`, needs the ``plot``
extra) and ``--json`` writes the numbers.
"""

import argparse
import functools
import gc
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from ._config import CLI_DEFAULTS, DEFAULT_TOL, SELECTOR_SCREEN, STI_DEFAULTS

__all__ = ["command", "main"]


def _number(convert, noun, zero=False, auto=False):
    """An argparse ``type``: ``convert(text)``, finite and positive (non-negative with ``zero``), or ``"auto"``."""

    def parse(text):
        if auto and text == "auto":
            return text
        value = convert(text)
        if not (np.isfinite(value) and (value >= 0 if zero else value > 0)):
            raise argparse.ArgumentTypeError(f"must be a {noun}, got {text!r}")
        return value

    parse.__name__ = noun  # argparse names the type when convert refuses the text
    return parse


_positive_float = _number(float, "positive number")
_positive_int = _number(int, "positive integer")
_non_negative_int = _number(int, "non-negative integer", zero=True)


def _build_parser():
    parser = argparse.ArgumentParser(prog="skevidence",
                                     description="Bayesian model selection by the evidence, from the command line.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    nmf = commands.add_parser(
        "nmf-rank", help="choose the NMF rank of the spectrogram of audio files",
        description="Choose the rank of a Bayesian NMF of the spectrogram of one or more audio files by its evidence: "
        "by default an exponential (Itakura-Saito) NMF of the power spectrogram above the recording's noise floor, "
        "every rank screened by referenced thermodynamic integration and the contenders refined until the choice is "
        "decided. Several files are stacked frame-wise into one matrix. With no FILE, runs on the clip bundled with "
        "skevidence.", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add = nmf.add_argument
    add("files", nargs="*", type=Path, metavar="FILE", help="audio files (WAV; other formats need the 'audio' extra)")
    add("--ranks", type=_positive_int, nargs="+", default=list(CLI_DEFAULTS["ranks"]), help="candidate ranks")
    add("--n-jobs", type=int, help="threads that run the ranks' pieces of work (-1: all cores); the numbers do not "
        "depend on it")
    add("--plot", type=Path, metavar="PNG", help="write the evidence curve to this image file")
    add("--json", type=Path, metavar="JSON", help="write the results to this JSON file")
    add("--n-fft", type=_positive_int, default=512, help="window and FFT length (samples)")
    add("--hop-length", type=_positive_int, help="hop (samples); default n_fft // 2")
    add("--window", default="hamming", help="window name for scipy.signal.get_window")
    add("--likelihood", choices=("exponential", "gamma", "poisson"), default="exponential",
        help="density of the spectrogram given WH: 'exponential' (default) models the power spectrogram |STFT|^2 "
        "(Itakura-Saito NMF), so the rank does not depend on the recording's level; 'gamma' with --likelihood-shape; "
        "'poisson' reads magnitudes as counts at --scale (the papers' model)")
    add("--likelihood-shape", type=_positive_float, default=1.0,
        help="shape of the Gamma likelihood (--likelihood gamma)")
    add("--scale", type=_positive_float, default=CLI_DEFAULTS["scale"],
        help="factor on the 16-bit sample units before the STFT; the Poisson likelihood reads magnitudes as counts, "
        "so a larger scale favours larger ranks (with the exponential and Gamma likelihoods and --prior-rate auto it "
        "shifts every rank's log-evidence by the same constant)")
    add("--noise-floor", type=_number(float, "non-negative number", zero=True, auto=True), default="auto",
        help="the spectrogram's noise floor, added to every entry's mean WH (the exponential and Gamma likelihoods): "
        "'auto' is the power of the recording's quantisation noise in a bin, known from its samples (1/12 of a "
        "16-bit step squared, times the window's energy; 0 for a float recording); a number sets it in the "
        "spectrogram's units. Without a floor, digital silence would decide the evidence")
    add("--prior-rate", type=_number(float, "positive number", auto=True), default="auto",
        help="rate of the exponential priors on both factors; 'auto' is sqrt(rank / mean of the spectrogram), so "
        "that every rank's prior mean of WH equals the data's mean")
    add("--method", choices=("rti", "sti"), default="rti",
        help="what estimates the evidence: 'rti', thermodynamic integration referenced from a fit of the posterior "
        "with Metropolis-adjusted HMC (an error bar that covers chain lag, quadrature and the search for the best "
        "mode), or 'sti', the papers' stochastic TI from the prior (Monte-Carlo error only)")
    add("--tol", type=_positive_float, default=DEFAULT_TOL,
        help="target error bar of every rank still in the running, in nats (--method rti)")
    add("--max-refinements", type=_non_negative_int, default=CLI_DEFAULTS["max_refinements"],
        help="most refinement steps of a rank in each pass, each adding at most the work so far (--method rti); a rank "
        "that does not reach --tol is reported with a warning. Unlike --max-time, the same on any machine")
    add("--max-time", type=_positive_float, help="seconds a rank may spend on each refinement of its estimate "
        "(--method rti; default: no limit). A limit makes the numbers depend on the machine's speed")
    add("--sampler", choices=("psgld", "sgld"), default=STI_DEFAULTS["sampler"], help="SG-MCMC sampler (--method sti)")
    add("--step-size", type=_positive_float, help="scale a of the SG-MCMC steps (a/k)^b of burn-in, which then stay "
        "at their last (--method sti; default: auto). A chain that diverges names the a it ran with")
    add("--temperatures", type=_positive_int, help="ladder intervals of the first round (default: "
        f"{SELECTOR_SCREEN['n_temperatures']} for rti, rounded up to a multiple of 4, which refinement may halve; "
        f"{STI_DEFAULTS['temperatures']} for sti)")
    add("--n-samples", type=_positive_int, help="iterations per temperature, burn-in included (default: "
        f"{SELECTOR_SCREEN['n_burnin'] + SELECTOR_SCREEN['n_keep']} for rti, which --tol lengthens; "
        f"{STI_DEFAULTS['n_samples']} for sti)")
    add("--n-burnin", type=_non_negative_int, help="burn-in iterations per temperature (default: "
        f"{SELECTOR_SCREEN['n_burnin']} for rti; {STI_DEFAULTS['n_burnin']} for sti)")
    add("--seed", type=int, default=0, help="random seed (the same seed gives the same numbers)")
    add("--cache", type=Path, metavar="DIR",
        help="keep finished ranks in DIR: an interrupted run started again with the same DIR resumes")
    add("-q", "--quiet", action="store_true", help="no progress report")
    return parser


def _finite_or_none(values):
    return [float(v) if np.isfinite(v) else None for v in values]


def _method_params(args):
    """The selector's ``method_params`` from the command line's chain settings (those not given are left out)."""
    if args.method == "sti":
        params = dict(sampler=args.sampler, temperatures=args.temperatures, n_samples=args.n_samples,
                      n_burnin=args.n_burnin, step_size=args.step_size)
    else:
        n_burnin = SELECTOR_SCREEN["n_burnin"] if args.n_burnin is None else args.n_burnin
        n_keep = None if args.n_samples is None else args.n_samples - n_burnin
        if n_keep is not None and n_keep < 4:
            raise ValueError(f"--n-samples {args.n_samples} with --n-burnin {n_burnin} keeps fewer than 4 draws a "
                             "temperature; raise --n-samples.")
        # The referenced ladder's intervals come in multiples of 4.
        n_temperatures = None if args.temperatures is None else 4 * -(-args.temperatures // 4)
        params = dict(max_refinements=args.max_refinements, max_time=args.max_time, n_temperatures=n_temperatures,
                      n_burnin=args.n_burnin, n_keep=n_keep)
    return {name: value for name, value in params.items() if value is not None}


def _nmf_rank(args, out):
    from .audio import SpectrogramTransformer, load_audio
    from .cp import auto_prior_rate
    from .datasets import example_audio_path
    from .estimators import BayesianNMFRankSelector
    from .evidence import ERROR_PIECES

    say = functools.partial(print, file=out, flush=True)
    paths = args.files or [example_audio_path()]  # the bundled clip when no file is given
    waveforms, rates = zip(*(load_audio(path) for path in paths))
    if len(set(rates)) > 1:
        raise ValueError(f"the files have different sample rates {sorted(set(rates))} Hz: resample them to one rate.")
    rate = rates[0]
    # The Gamma family models powers; Poisson reads magnitudes as counts.
    power = 1.0 if args.likelihood == "poisson" else 2.0
    spectrogram = SpectrogramTransformer(n_fft=args.n_fft, hop_length=args.hop_length, window=args.window,
                                         scale=32768.0 * args.scale, power=power, sample_rate=rate)
    X = spectrogram.fit_transform(waveforms)  # refuses a silent recording
    # A frame of digital silence (every sample in its window zero) has an all-zero spectrum: there is no sound
    # in it to factorise, and every component's activation there must sit near zero, a prior mass that shrinks
    # with the rank, so each such frame would move the evidence towards small ranks (user guide, audio page).
    sounding = X.any(axis=1)
    n_silent = int(X.shape[0] - sounding.sum())
    X = X[sounding]
    if args.likelihood == "poisson":
        noise_floor, floor_text = 0.0, "none (the Poisson likelihood of counts takes none)"
    elif args.noise_floor == "auto":
        noise_floor = spectrogram.noise_floor_
        floor_text = f"{noise_floor:.4g} (the samples' quantisation noise)" if noise_floor else "0 (float samples)"
    else:
        noise_floor, floor_text = args.noise_floor, f"{args.noise_floor:.4g}"
    auto = args.prior_rate == "auto"
    prior_rates = [auto_prior_rate(X, r) if auto else args.prior_rate for r in args.ranks]
    rate_text = ", ".join(f"{v:.4g} at rank {r}" for r, v in zip(args.ranks, prior_rates))
    rate_text = f"auto ({rate_text})" if auto else f"{args.prior_rate:.4g}"
    shape_text = f" shape {args.likelihood_shape:g}" if args.likelihood == "gamma" else ""
    names = ", ".join(p.name for p in paths)
    say(f"skevidence nmf-rank: {names}")
    say(f"{'power' if power == 2.0 else 'magnitude'} spectrogram {X.shape[0]} frames x {X.shape[1]} bins "
        f"({rate:g} Hz, n_fft={args.n_fft}, hop={spectrogram.hop_length_}, {args.window}"
        f"{f', {n_silent} frames of digital silence left out' if n_silent else ''}), scale={args.scale:g}, "
        f"mean={X.mean():.4g}; {args.likelihood}{shape_text} likelihood, noise floor {floor_text}, "
        f"prior rate={rate_text}")
    method_params = _method_params(args)
    if args.method == "sti":
        say(f"STI from the prior: {method_params}, seed {args.seed}")
    else:
        fit = "variational Bayes" if args.likelihood == "poisson" else "a Laplace fit"
        limit = "" if args.max_time is None else f" and {args.max_time:g} s"
        say(f"TI referenced by {fit} (up to rank 10, by the moments of a chain at the posterior where they serve "
            f"better), Metropolis-adjusted HMC: error bar <= {args.tol:g} nats for every rank in the running "
            f"(refining with at most {args.max_refinements} steps a rank and pass, each adding at most the work so "
            f"far{limit}), seed {args.seed}")
    start = time.perf_counter()
    selector = BayesianNMFRankSelector(
        ranks=tuple(args.ranks), prior_rate=args.prior_rate, likelihood=args.likelihood,
        likelihood_shape=args.likelihood_shape, noise_floor=noise_floor, method=args.method,
        method_params=method_params, tol=args.tol, n_jobs=args.n_jobs, random_state=args.seed,
        verbose=0 if args.quiet else 1, memory=None if args.cache is None else str(args.cache))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        selector.fit(X)
    elapsed = time.perf_counter() - start

    # Every rank is chosen, a contender (within 3 combined error bars of the chosen), out or failed.
    results = selector.cv_results_
    say(f"\n{'rank':>5}  {'log-evidence':>16} {'± SE':>10}  {'P(rank | X)':>11}  status")
    for rank, logz, se, prob, state in zip(selector.ranks_, selector.log_evidence_, selector.log_evidence_std_,
                                           selector.model_probabilities_, results["status"]):
        if int(rank) in selector.errors_:
            say(f"{rank:>5}  {'':>16} {'':>10}  {'':>11}  failed: {selector.errors_[int(rank)]}")
        else:
            say(f"{rank:>5}  {logz:16.1f} {se:10.1f}  {prob:11.3f}  {state}")
    say(f"\nchosen rank: {selector.best_rank_}  ({elapsed:.1f} s)")
    say(selector.decision_)
    for w in caught:
        say(f"warning: {w.message}")

    if args.json is not None:
        record = dict(
            files=[str(p) for p in paths], shape=list(X.shape), silent_frames=n_silent, sample_rate=rate,
            scale=args.scale, likelihood=args.likelihood,
            likelihood_shape=args.likelihood_shape if args.likelihood == "gamma" else None, noise_floor=noise_floor,
            power=power, prior_rate=args.prior_rate, prior_rates=prior_rates, ranks=[int(r) for r in selector.ranks_],
            log_evidence=_finite_or_none(selector.log_evidence_),
            log_evidence_std=_finite_or_none(selector.log_evidence_std_),
            model_probabilities=_finite_or_none(selector.model_probabilities_),
            # What every rank's log-evidence is above (null where no bracket ran).
            lower_bound=_finite_or_none(results.get("lower_bound", np.full(len(selector.ranks_), np.nan))),
            best_rank=int(selector.best_rank_), decided=bool(selector.decided_), decision=selector.decision_,
            status=[str(v) for v in results["status"]], within_tol=[bool(v) for v in results["within_tol"]],
            # What every rank's error bar is made of (NaN, written null, where the method reports no piece).
            error_pieces={key: _finite_or_none(results[key]) for key in ERROR_PIECES},
            errors={str(k): v for k, v in selector.errors_.items()},
            settings=dict(method=args.method, tol=args.tol, method_params=method_params, seed=args.seed,
                          n_fft=args.n_fft, hop_length=spectrogram.hop_length_, window=args.window),
            wall_time=elapsed,
        )
        args.json.write_text(json.dumps(record, indent=2) + "\n")
        say(f"results written to {args.json}")
    if args.plot is not None:
        from .plotting import EvidenceCurveDisplay

        display = EvidenceCurveDisplay.from_estimator(selector, name=names)
        display.ax_.set_title(f"NMF rank of {names}")
        display.figure_.savefig(args.plot, dpi=120, bbox_inches="tight")
        import matplotlib.pyplot as plt

        plt.close(display.figure_)  # called in-process (main()), the command leaves no figure open
        say(f"evidence curve written to {args.plot}")
    return 0


def main(argv=None, out=None):
    """Run the ``skevidence`` command line; returns the exit status.

    Parameters
    ----------
    argv : list of str, default=None
        Arguments (``sys.argv[1:]`` when None).
    out : file-like, default=None
        Where the report goes (``sys.stdout`` when None).
    """
    args = _build_parser().parse_args(argv)
    if args.plot is not None:
        try:
            import matplotlib
        except ImportError:
            print('error: --plot needs matplotlib: pip install "skevidence[plot]"', file=sys.stderr)
            return 2
        matplotlib.use("Agg")
    try:
        return _nmf_rank(args, sys.stdout if out is None else out)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def command():
    """The ``skevidence`` executable (and ``python -m skevidence``): :func:`main` on ``sys.argv``, whose exit
    status ends the process."""
    status = main()
    # The interpreter's exit collects garbage over every object numba, SciPy and scikit-learn made (half a
    # second after the bundled clip's run); a process that ends now needs none of them collected.
    gc.freeze()
    return status
