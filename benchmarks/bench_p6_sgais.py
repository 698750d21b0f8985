"""Protocol P6 (Cameron et al. 2019a section 7.1, 2019b section 4): SGAIS against AIS and dynesty.

Three problems of Cameron et al. (2019b), data drawn from each model with a fixed seed:

* linear regression: 5 standardised features + intercept (6 parameters), weights
  and intercept ~ N(0, 1), noise variance 1 known; the exact evidence is the reference;
* softmax regression: 10 standardised features, 4 classes, every class with its
  own weights and bias ~ N(0, 1) (44 parameters);
* diagonal Gaussian mixture: 2-D, 5 components, Dirichlet(1) weights,
  sigma^2 ~ InvGamma(1, 1), mu | sigma^2 ~ N(0, 4 sigma^2); parameters drawn from
  that prior, data standardised afterwards (an affine map keeps them a 5-component
  diagonal mixture).

On each, in the same run and one after the other, each in its own process with
BLAS and numba on one thread (the papers' "single threaded" comparison):

* SGAIS: ``sgais_log_evidence`` with the package defaults (M = 10, target ESS 8,
  minibatch 500, the chunk schedule of Cameron et al. 2019b, 20 SGHMC steps,
  learning rate 0.1/n, resampling, control variates);
* AIS: ``ais_log_evidence`` with full-data HMC (``--ais-particles``,
  ``--ais-temperatures``, 10 leapfrog steps, power ladder, automatic step size);
* dynesty: static ``NestedSampler`` (``--nlive``, bound "multi", sample "auto",
  ``dlogz=0.1``) on the model's full-data log-likelihood and a prior transform of
  the unit cube (normal quantiles; for the mixture, stick-breaking Beta quantiles
  for the Dirichlet weights, inverse-gamma quantiles for the variances).

Every method runs under a wall-time limit (``--time-limit``); one that does not
finish is reported as such, with no estimate. The reference is the exact evidence
(linear regression), else dynesty, else AIS (named in the table).

Run ``python benchmarks/bench_p6_sgais.py --help`` for the options.
"""

import argparse
import multiprocessing as mp
import os
import platform
import sys
import time
import traceback
import warnings

import numpy as np
from scipy import stats
from scipy.special import betaincinv, gammainccinv, ndtri

import skevidence
from skevidence.evidence import ais_log_evidence, sgais_log_evidence
from skevidence.models import DiagonalGaussianMixture, LinearGaussian, SoftmaxRegression

from _environment import blas_gflops, blas_threads, git_state

# ---------------------------------------------------------------- protocol P6
PROBLEMS = ("linear", "softmax", "gmm")
TITLES = {
    "linear": "linear regression: 5 features + intercept (6 params), noise variance 1 known",
    "softmax": "softmax regression: 10 features, 4 classes (44 params)",
    "gmm": "diagonal Gaussian mixture: 2-D, 5 components (25 params, 24 degrees of freedom)",
}
METHODS = ("sgais", "ais", "dynesty")
NOISE_VAR = 1.0
# The papers' targets on this comparison: SGAIS >= 10x dynesty, >= 25x AIS, |err|/N <= 1e-3.
TARGET_NS, TARGET_AIS, TARGET_ERR = 10.0, 25.0, 1e-3
# Seconds the parent waits beyond the limit for a dynesty child to stop by itself and report.
_GRACE = 120.0
# Seconds a child may take to import and generate its data.
_STARTUP = 600.0


# --------------------------------------------------------------- problems
def make_model(name):
    if name == "linear":
        return LinearGaussian(5, noise_var=NOISE_VAR, prior_var=1.0)
    if name == "softmax":
        return SoftmaxRegression(10, 4)
    return DiagonalGaussianMixture(2, 5)


def _standardise(X):
    return (X - X.mean(axis=0)) / X.std(axis=0)


def make_data(name, n, seed):
    """``(model, X, y, theta_true)``: data drawn from the model; the stream depends on (seed, problem) only.

    The first ``n`` rows of a larger draw are not the rows of a smaller one
    (standardisation uses all rows), so every N is its own data set.
    """
    model = make_model(name)
    rng = np.random.default_rng(np.random.SeedSequence([seed, PROBLEMS.index(name)]))
    theta = model.sample_prior(rng)
    if name == "linear":
        X = _standardise(rng.standard_normal((n, 5)))
        y = X @ theta[:5] + theta[5] + np.sqrt(NOISE_VAR) * rng.standard_normal(n)
        return model, X, y, theta
    if name == "softmax":
        X = _standardise(rng.standard_normal((n, 10)))
        W, b = model.unpack(theta)
        logits = X @ W + b
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        # Inverse-CDF sampling of one label per row.
        y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
        return model, X, np.minimum(y, 3).astype(np.int64), theta
    weights, means, variances = model.constrained(theta)
    z = rng.choice(5, size=n, p=weights / weights.sum())
    X = means[z] + np.sqrt(variances[z]) * rng.standard_normal((n, 2))
    return model, _standardise(X), None, theta


# --------------------------------------------------------------- dynesty glue
def prior_transform(model):
    """Unit cube -> the model's prior, as dynesty wants it; returns ``(transform, ndim, to_theta)``.

    ``to_theta`` maps the transformed point to the model's unconstrained ``theta``.
    """
    if isinstance(model, (LinearGaussian, SoftmaxRegression)):
        scale = np.sqrt(model.prior_var)
        return (lambda u: scale * ndtri(u)), model.n_params, (lambda v: v)

    k, d = model.n_components, model.n_features
    alpha, kappa, a, b = model.weight_concentration, model.mean_precision, model.var_shape, model.var_scale
    # Stick-breaking: v_j ~ Beta(alpha, (k - 1 - j) alpha) gives Dirichlet(alpha) weights with k - 1
    # dimensions, one fewer than the model's Gamma-normalisation logits (which carry a redundant scale).
    beta_b = alpha * np.arange(k - 1, 0, -1, dtype=np.float64)

    def transform(u):
        v = betaincinv(alpha, beta_b, u[: k - 1])
        rest = np.concatenate([[1.0], np.cumprod(1.0 - v)])
        weights = np.append(v, 1.0) * rest
        # InvGamma(a, b) quantile: P(b / G <= x) = P(G >= b / x) with G ~ Gamma(a, 1).
        var = b / gammainccinv(a, u[k - 1 : k - 1 + k * d])
        mu = np.sqrt(var / kappa) * ndtri(u[k - 1 + k * d :])
        # dynesty wants as many outputs as cube dimensions: the last weight is implied.
        return np.concatenate([weights[:-1], mu, var])

    def to_theta(v):
        w = v[: k - 1]
        weights = np.maximum(np.append(w, 1.0 - w.sum()), 1e-300)
        mu, var = v[k - 1 : k - 1 + k * d], v[k - 1 + k * d :]
        return model.pack(weights, mu.reshape(k, d), var.reshape(k, d))

    return transform, k - 1 + 2 * k * d, to_theta


def check_prior_transform(model, n=20000, seed=0):
    """Largest two-sample KS statistic between transformed uniforms and ``model.sample_prior``.

    Compares the constrained parameters (weights, means, variances) marginal by
    marginal; two samples of 20000 from the same law give D ~ 0.01.
    """
    transform, ndim, to_theta = prior_transform(model)
    rng = np.random.default_rng(seed)
    via_cube = np.array([to_theta(transform(u)) for u in rng.random((n, ndim))])
    direct = model.sample_prior(rng, size=n)
    if isinstance(model, DiagonalGaussianMixture):
        def cons(t):
            w, mu, var = model.constrained(t)
            return np.concatenate([w, mu.reshape(len(t), -1), np.log(var).reshape(len(t), -1)], axis=1)

        via_cube, direct = cons(via_cube), cons(direct)
    return max(stats.ks_2samp(via_cube[:, j], direct[:, j]).statistic for j in range(direct.shape[1]))


# --------------------------------------------------------------- methods (run in a child process)
def run_sgais(model, X, y, args, limit):
    res = sgais_log_evidence(model, X, y, random_state=args.seed)
    steps = res.diagnostics["annealing_steps"]
    return dict(
        logz=res.log_evidence,
        err=res.std_error,
        time=res.wall_time,
        note=f"{steps.size} chunks, {int(steps.sum())} annealing steps, "
        f"{res.n_likelihood_evaluations / 1e6:.0f}M datum-evals",
    )


def run_ais(model, X, y, args, limit):
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = ais_log_evidence(
            model, X, y, n_particles=args.ais_particles, n_temperatures=args.ais_temperatures,
            random_state=args.seed,
        )  # fmt: skip
    d = res.diagnostics
    warned = " DEGENERATE WEIGHTS (warning)" if any("degenerate" in str(w.message) for w in caught) else ""
    return dict(
        logz=res.log_evidence,
        err=res.std_error,
        time=time.perf_counter() - start,
        note=f"ESS {d['ess']:.1f}/{d['n_particles']}, mean accept {np.nanmean(d['acceptance_rate']):.2f}{warned}",
    )


def run_dynesty(model, X, y, args, limit):
    import dynesty

    Xp, yp = model.prepare_data(X, y)
    transform, ndim, to_theta = prior_transform(model)

    def loglike(v):
        # The full data, vectorised over rows, summed: each call is one pass over the N data.
        return float(model.log_likelihood_particles(to_theta(v)[None, :], Xp, yp).sum())

    start = time.perf_counter()
    sampler = dynesty.NestedSampler(
        loglike, transform, ndim, nlive=args.nlive, bound="multi", sample="auto",
        rstate=np.random.default_rng(args.seed),
    )  # fmt: skip
    it, last = 0, None
    for last in sampler.sample(dlogz=args.dlogz):
        it += 1
        if time.perf_counter() - start > limit:
            logz, dlogz = _field(last, "logz", 6), _field(last, "delta_logz", 14)
            return dict(
                logz=None,
                time=time.perf_counter() - start,
                note=f"stopped at the time limit after {it} iterations, {sampler.ncall} calls; "
                f"running logz {logz:.1f}, remaining dlogz {dlogz:.3g} (no estimate)",
            )
    for _ in sampler.add_live_points():
        pass
    res = sampler.results
    return dict(
        logz=float(res.logz[-1]),
        err=float(res.logzerr[-1]),
        time=time.perf_counter() - start,
        note=f"{res.niter} iterations, {int(np.sum(res.ncall))} likelihood calls, "
        f"sampler {type(sampler.internal_sampler).__name__}",
    )


def _field(result, name, index):
    return getattr(result, name) if hasattr(result, name) else result[index]


RUNNERS = {"sgais": run_sgais, "ais": run_ais, "dynesty": run_dynesty}


def _child(conn, name, method, args, limit):
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=args.threads)
        import numba

        numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
        model, X, y, _ = make_data(name, args.n, args.data_seed)
        conn.send("started")  # the parent's clock for the time limit starts here
        conn.send(RUNNERS[method](model, X, y, args, limit))
    except BaseException as err:  # the parent reports it
        conn.send(dict(logz=None, time=np.nan, note=f"FAILED: {type(err).__name__}: {err}",
                       trace=traceback.format_exc()))  # fmt: skip
    finally:
        conn.close()


def run_limited(name, method, args):
    """Run one method in a fresh process; kill it at the time limit (dynesty gets a grace to stop itself)."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, name, method, args, args.time_limit))
    proc.start()
    child.close()
    out = None
    # Imports and data generation come before the limit's clock starts.
    if parent.poll(_STARTUP):
        first = parent.recv()
        if first != "started":
            out = first
        elif parent.poll(args.time_limit + (_GRACE if method == "dynesty" else 5.0)):
            out = parent.recv()
        else:
            out = dict(logz=None, time=None, killed=True,
                       note=f"did not finish within the time limit of {args.time_limit:.0f} s (killed)")  # fmt: skip
    else:
        out = dict(logz=None, time=None, note=f"FAILED: no start within {_STARTUP:.0f} s")
    if proc.is_alive():
        proc.kill()
    proc.join()
    if out.get("logz") is not None and out["time"] > args.time_limit:
        out["note"] += f"; exceeded the {args.time_limit:.0f} s limit"
    return out


# --------------------------------------------------------------- table
def _spent(out, args):
    """Seconds an unfinished method ran before it was stopped (None if it failed instead)."""
    if out.get("killed"):
        return args.time_limit
    if "time limit" in out["note"] and out.get("time"):
        return out["time"]
    return None


def fmt(value, spec, missing="-"):
    return missing if value is None or not np.isfinite(value) else format(value, spec)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="N = 1e4, nlive 100, 500 AIS temperatures, 60 s limit (each unless given)")
    parser.add_argument("--n", type=float, default=None, help="data points N (default 1e6, the protocol)")
    parser.add_argument("--problems", default=",".join(PROBLEMS),
                        help="comma-separated subset of " + ",".join(PROBLEMS))
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated subset of " + ",".join(METHODS))
    parser.add_argument("--time-limit", type=float, default=None,
                        help="wall seconds per method and problem (default 1800, --quick 60)")
    parser.add_argument("--nlive", type=int, default=None, help="dynesty live points (default 500, --quick 100)")
    parser.add_argument("--dlogz", type=float, default=0.1, help="dynesty stopping criterion (default 0.1)")
    parser.add_argument("--ais-temperatures", type=int, default=None,
                        help="AIS ladder size (default 2000, --quick 500)")
    parser.add_argument("--ais-particles", type=int, default=20, help="AIS particles (default 20)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS/numba threads per method (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every method (default 0)")
    parser.add_argument("--data-seed", type=int, default=0, help="seed of the data (default 0)")
    args = parser.parse_args(argv)
    defaults = dict(n=1e4, time_limit=60.0, nlive=100, ais_temperatures=500) if args.quick else dict(
        n=1e6, time_limit=1800.0, nlive=500, ais_temperatures=2000
    )
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.n = int(args.n)
    problems = [p for p in args.problems.split(",") if p]
    methods = [m for m in args.methods.split(",") if m]
    for p_ in problems:
        if p_ not in PROBLEMS:
            parser.error(f"unknown problem {p_!r}; choose from {PROBLEMS}")
    for m in methods:
        if m not in METHODS:
            parser.error(f"unknown method {m!r}; choose from {METHODS}")
    if args.n < 100:
        parser.error(f"--n must be at least 100, got {args.n}")

    def p(line=""):
        print(line, file=sys.stdout, flush=True)

    start_all = time.perf_counter()
    gf_best, gf_med = blas_gflops()
    p("=" * 110)
    p(f"P6 (Cameron et al. 2019a sec. 7.1, 2019b sec. 4): SGAIS vs AIS vs dynesty, N = {args.n:,}"
      + ("  [--quick]" if args.quick else ""))  # fmt: skip
    p(
        f"skevidence {skevidence.__version__} ({git_state()}), numpy {np.__version__}, "
        f"python {platform.python_version()}, {os.cpu_count()} CPUs, load avg {os.getloadavg()[0]:.2f}"
    )
    p(f"BLAS ({blas_threads()}): 1000x1000 float64 np.dot -> {gf_best:.1f} GFLOP/s best of 5, {gf_med:.1f} median"
      f" (all threads); the methods run with {args.threads} BLAS/numba thread(s), one after the other")  # fmt: skip
    try:
        import dynesty

        dyn_version = dynesty.__version__
    except ImportError:
        dyn_version = None
        if "dynesty" in methods:
            methods.remove("dynesty")
            p('dynesty is not installed (pip install "skevidence[benchmark]"): skipped')
    p("SGAIS: package defaults (M=10, target ESS 8, |B|=500, Cameron et al. 2019b chunks, 20 SGHMC steps, "
      "eta=0.1/n, resample, control variates)")  # fmt: skip
    p(f"AIS: {args.ais_particles} particles, {args.ais_temperatures} power-ladder temperatures, 1 HMC transition "
      "of 10 leapfrog steps each on the full data, automatic step size")  # fmt: skip
    p(f"dynesty {dyn_version}: static NestedSampler, nlive={args.nlive}, bound='multi', sample='auto', "
      f"dlogz={args.dlogz}; full-data log-likelihood per call")  # fmt: skip
    p(f"time limit per method: {args.time_limit:.0f} s; seeds: data {args.data_seed}, methods {args.seed}")

    summary = []
    for name in problems:
        model, X, y, _ = make_data(name, args.n, args.data_seed)
        p()
        p("-" * 110)
        p(f"{name}: {TITLES[name]}, N = {args.n:,}")
        exact = model.exact_log_evidence(X, y) if name == "linear" else None
        if exact is not None:
            p(f"exact log p(y|X) = {exact:.3f} ({exact / args.n:.6f} per datum)")
        if "dynesty" in methods:
            p(f"prior transform check: max KS D between cube->prior and model.sample_prior over all marginals "
              f"(20000 draws each) = {check_prior_transform(model):.4f}")  # fmt: skip
        del X, y
        out = {}
        for method in methods:
            out[method] = run_limited(name, method, args)
            o = out[method]
            p(f"  {method:<8} done in {fmt(o['time'], '.1f')} s: {o['note']}")
            if "trace" in o:
                p(o["trace"])

        if exact is not None:
            ref, ref_name = exact, "exact"
        elif out.get("dynesty", {}).get("logz") is not None:
            ref, ref_name = out["dynesty"]["logz"], "dynesty"
        elif out.get("ais", {}).get("logz") is not None:
            ref, ref_name = out["ais"]["logz"], "AIS (dynesty did not finish)"
        else:
            ref, ref_name = None, "none"
        t_sgais = out.get("sgais", {}).get("time") if out.get("sgais", {}).get("logz") is not None else None
        p(f"reference: {ref_name}")
        head = (f"{'method':<8} {'log-evidence':>14} {'± SE':>8} {'per datum':>11} {'|err|/N':>9} "
                f"{'time (s)':>9} {'SGAIS speed-up':>15}")  # fmt: skip
        p(head)
        p("-" * len(head))
        for method in methods:
            o = out[method]
            logz = o.get("logz")
            if logz is None:
                spent = _spent(o, args)
                speed = f"> {spent / t_sgais:.1f}x" if t_sgais and spent else "-"
                shown = f"> {spent:.0f}" if spent else "-"
                p(f"{method:<8} {'not finished':>14} {'':>8} {'':>11} {'':>9} {shown:>9} {speed:>15}")
                continue
            err = abs(logz - ref) / args.n if ref is not None else None
            speed = o["time"] / t_sgais if t_sgais else None
            p(
                f"{method:<8} {logz:>14.3f} {fmt(o.get('err'), '8.3f'):>8} {logz / args.n:>11.6f} "
                f"{fmt(err, '9.2e'):>9} {o['time']:>9.1f} {fmt(speed, '14.1f') + 'x' if speed else '-':>15}"
            )
        summary.append((name, ref_name, out, ref, t_sgais))

    p()
    p("=" * 110)
    p(f"Targets: SGAIS >= {TARGET_NS:g}x faster than dynesty, >= {TARGET_AIS:g}x faster than AIS, "
      f"|error|/N <= {TARGET_ERR:g} against the reference")  # fmt: skip
    for name, ref_name, out, ref, t_sgais in summary:
        parts = []
        s = out.get("sgais", {})
        if s.get("logz") is not None and ref is not None and ref_name != "none":
            e = abs(s["logz"] - ref) / args.n
            parts.append(f"|err|/N = {e:.2e} vs {ref_name.split()[0]} ({'met' if e <= TARGET_ERR else 'NOT met'})")
        for method, target in (("dynesty", TARGET_NS), ("ais", TARGET_AIS)):
            o = out.get(method)
            if o is None or not t_sgais:
                continue
            if o.get("logz") is not None:
                sp = o["time"] / t_sgais
                parts.append(f"vs {method} {sp:.1f}x ({'met' if sp >= target else 'NOT met'})")
            elif _spent(o, args):
                sp = _spent(o, args) / t_sgais
                parts.append(f"vs {method} > {sp:.1f}x ({'met' if sp >= target else 'undecided'}: {method} unfinished)")
            else:
                parts.append(f"vs {method}: failed")
        p(f"{name:<8} " + "; ".join(parts))
    gf_best2, gf_med2 = blas_gflops()
    p(f"BLAS again at the end: {gf_best2:.1f} GFLOP/s best, {gf_med2:.1f} median; load avg {os.getloadavg()[0]:.2f}; "
      f"benchmark total {time.perf_counter() - start_all:.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
