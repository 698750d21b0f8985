"""Protocol P1 of Şimşekli et al. (2016, section 4.1.1): STI on the Gaussian additive model.

theta_r ~ N(mu, sigma_theta^2), r = 1..R;  x_n | theta ~ N(sum_r theta_r, sigma_x^2),
mu = 5, sigma_theta^2 = 3, sigma_x^2 = 5, N = 5000, N_s = 250, K = 3000 (1000 burn-in).

For each true R in {2, 3, 4} data are drawn from the model with a fixed seed and
the evidence of every candidate R = 1..6 is estimated by STI, for

* the ladders "uniform" (the paper's) and "power" with T = 5, 10, 20 intervals;
* the samplers SGLD with the paper's step size a = 1e-8, b = 0.51, and pSGLD
  with the package default ``step_size="auto"``.

Each estimate is compared with the closed-form evidence. To separate ladder
bias from sampler bias, the trapezoid rule is also applied to the *exact*
integrand f(t) = E_t[log p(x|theta)] on the same ladder: its error is the pure
discretisation error, and STI minus it is what the sampler contributes.

Run ``python benchmarks/bench_p1_gaussian_additive.py --help`` for the options;
see ``benchmarks/README.md`` for what the columns mean.
"""

import argparse
import os
import platform
import sys
import time

import numpy as np
from scipy import integrate

import skevidence
from skevidence import exact_log_evidence, sti_log_evidence
from skevidence.evidence import temperature_ladder
from skevidence.exceptions import SamplerDivergenceError
from skevidence.models import GaussianAdditive

from _environment import blas_gflops, blas_threads, git_state

# ---------------------------------------------------------------- protocol P1
MU, PRIOR_VAR, NOISE_VAR = 5.0, 3.0, 5.0
N_DATA, BATCH_SIZE, N_SAMPLES, N_BURNIN = 5000, 250, 3000, 1000
CANDIDATES = tuple(range(1, 7))
SGLD_A, STEP_DECAY = 1e-8, 0.51

FULL = dict(true_rs=(2, 3, 4), ts=(5, 10, 20), ladders=("uniform", "power"), samplers=("sgld", "psgld"))
QUICK = dict(true_rs=(3,), ts=(10, 20), ladders=("uniform", "power"), samplers=("psgld",))

SAMPLER_KW = {
    "sgld": dict(sampler="sgld", step_size=SGLD_A, step_decay=STEP_DECAY),
    "psgld": dict(sampler="psgld", step_size="auto", step_decay=STEP_DECAY),
}


# ------------------------------------------------------------ exact integrand
def exact_integrand(t, x, n_components, mu=MU, prior_var=PRIOR_VAR, noise_var=NOISE_VAR):
    r"""f(t) = E_{p_t}[log p(x|theta)] in closed form (vectorised over ``t``).

    The likelihood depends on theta through s = sum_r theta_r only; s has prior
    N(R mu, R sigma_theta^2), and the tempered likelihood p(x|s)^t is Gaussian
    with noise variance sigma_x^2 / t, so the power posterior of s is Gaussian
    with precision 1/(R sigma_theta^2) + t N / sigma_x^2 and
    f(t) = -N/2 log(2 pi sigma_x^2) - [sum (x_n - xbar)^2 + N((xbar - m_t)^2 + v_t)] / (2 sigma_x^2).
    """
    t = np.asarray(t, dtype=np.float64)
    n = x.size
    xbar = x.mean()
    ss = np.sum((x - xbar) ** 2)
    prior_prec = 1.0 / (n_components * prior_var)
    prec = prior_prec + t * n / noise_var
    v_t = 1.0 / prec
    m_t = v_t * (prior_prec * n_components * mu + t * n * xbar / noise_var)
    return -0.5 * n * np.log(2 * np.pi * noise_var) - (ss + n * ((xbar - m_t) ** 2 + v_t)) / (2 * noise_var)


def trapezoid(ts, f):
    """Plain trapezoid rule (independent of the package's trapezoid_weights)."""
    return float(np.sum(np.diff(ts) * (f[1:] + f[:-1]) / 2.0))


def exact_integrand_check(x, n_components, exact):
    """|int_0^1 f(t) dt - log p(x)|: validates the closed-form integrand."""
    # f is steep near t = 0 (scale ~ sigma_x^2 / (N R sigma_theta^2)); help quad with breakpoints.
    f = lambda t: float(exact_integrand(t, x, n_components))  # noqa: E731
    total, edges = 0.0, [0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]
    for lo, hi in zip(edges[:-1], edges[1:]):
        total += integrate.quad(f, lo, hi, epsabs=1e-10, epsrel=1e-13, limit=200)[0]
    return abs(total - exact)


# --------------------------------------------------------------- data
def make_data(true_r, seed):
    """theta and x drawn from the model; the stream depends on (seed, true R) only."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, true_r]))
    theta = MU + np.sqrt(PRIOR_VAR) * rng.standard_normal(true_r)
    x = theta.sum() + np.sqrt(NOISE_VAR) * rng.standard_normal(N_DATA)
    return theta, x


def time_exact(model, x, repeats=25):
    """Median wall time of the package's exact method (one call is tens of microseconds)."""
    times = [exact_log_evidence(model, x).wall_time for _ in range(repeats)]
    return float(np.median(times))


def run_sti(model, x, ladder, n_temps, sampler, seed, true_r, cand_r):
    rs = np.random.SeedSequence([seed, true_r, cand_r, 1])
    try:
        res = sti_log_evidence(
            model,
            x,
            temperatures=n_temps,
            ladder=ladder,
            n_samples=N_SAMPLES,
            n_burnin=N_BURNIN,
            batch_size=BATCH_SIZE,
            random_state=rs,
            **SAMPLER_KW[sampler],
        )
    except SamplerDivergenceError as err:
        return None, str(err)
    return res, None


def near(true_r):
    return [r for r in (true_r - 1, true_r, true_r + 1) if r in CANDIDATES]


def fmt(value, spec):
    return "nan" if value is None or not np.isfinite(value) else format(value, spec)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="true R = 3, T in {10, 20}, pSGLD only")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and of every chain (default 0)")
    parser.add_argument(
        "--detail", action="store_true", help="also print one line per candidate R (estimate, SE, errors)"
    )
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    out = sys.stdout

    def p(line=""):
        print(line, file=out, flush=True)

    start_all = time.perf_counter()
    gf_best, gf_med = blas_gflops()
    p("=" * 100)
    p("P1 (Şimşekli et al. 2016, sec. 4.1.1): STI on the Gaussian additive model"
      + ("  [--quick]" if args.quick else ""))
    p(
        f"mu={MU:g} sigma_theta^2={PRIOR_VAR:g} sigma_x^2={NOISE_VAR:g} N={N_DATA} N_s={BATCH_SIZE} "
        f"K={N_SAMPLES} (burn-in {N_BURNIN}) candidates R={CANDIDATES[0]}..{CANDIDATES[-1]} seed={args.seed}"
    )
    p(
        f"skevidence {skevidence.__version__} ({git_state()}), numpy {np.__version__}, "
        f"python {platform.python_version()}, {os.cpu_count()} CPUs, load avg {os.getloadavg()[0]:.2f}"
    )
    p(
        f"BLAS ({blas_threads()}): 1000x1000 float64 np.dot -> {gf_best:.1f} GFLOP/s best of 5, "
        f"{gf_med:.1f} GFLOP/s median"
    )
    p(
        f"samplers: sgld = SGLD, step_size={SGLD_A:g}, step_decay={STEP_DECAY} (paper); "
        f"psgld = pSGLD, step_size='auto', step_decay={STEP_DECAY} (package default)"
    )

    # ---- data, exact evidences, exact method timing, integrand check
    data, exact, t_exact = {}, {}, {}
    worst_check = 0.0
    p()
    p("Data and exact log-evidence log p(x|R) (the 'exact' method):")
    p(f"{'true R':>6}  {'sum theta':>9}  {'xbar':>8}  " + "  ".join(f"{'R=' + str(r):>11}" for r in CANDIDATES)
      + f"  {'argmax':>6}  {'t_exact(s)':>10}")
    for true_r in cfg["true_rs"]:
        theta, x = make_data(true_r, args.seed)
        data[true_r] = x
        t_exact[true_r] = 0.0
        for r in CANDIDATES:
            model = GaussianAdditive(r, MU, PRIOR_VAR, NOISE_VAR)
            exact[true_r, r] = exact_log_evidence(model, x).log_evidence
            t_exact[true_r] += time_exact(model, x)
            worst_check = max(worst_check, exact_integrand_check(x, r, exact[true_r, r]))
        ex = [exact[true_r, r] for r in CANDIDATES]
        p(f"{true_r:>6}  {theta.sum():>9.4f}  {x.mean():>8.4f}  " + "  ".join(f"{v:>11.2f}" for v in ex)
          + f"  {CANDIDATES[int(np.argmax(ex))]:>6}  {t_exact[true_r]:>10.2e}")
    p(f"(t_exact: median time of one exact_log_evidence call, summed over the {len(CANDIDATES)} candidates)")
    p(f"check: max over data and R of |quad integral of exact f(t) over [0,1] - exact log p(x|R)| = {worst_check:.2e}")

    # ---- pure discretisation error: trapezoid rule on the exact integrand
    trap = {}
    p()
    p("Ladder (discretisation) error alone: trapezoid rule on the EXACT integrand f(t) minus exact log p(x|R)")
    p(f"{'ladder':<8} {'T':>3} {'true R':>6}  " + "  ".join(f"{'R=' + str(r):>9}" for r in CANDIDATES)
      + f"  {'mean|err|':>9}  {'argmax':>6}")
    for ladder in cfg["ladders"]:
        for n_temps in cfg["ts"]:
            ts = temperature_ladder(n_temps, kind=ladder)
            for true_r in cfg["true_rs"]:
                errs = []
                for r in CANDIDATES:
                    trap[ladder, n_temps, true_r, r] = trapezoid(ts, exact_integrand(ts, data[true_r], r))
                    errs.append(trap[ladder, n_temps, true_r, r] - exact[true_r, r])
                am = CANDIDATES[int(np.argmax([trap[ladder, n_temps, true_r, r] for r in CANDIDATES]))]
                p(f"{ladder:<8} {n_temps:>3} {true_r:>6}  " + "  ".join(f"{e:>9.2f}" for e in errs)
                  + f"  {np.mean(np.abs(errs)):>9.2f}  {am:>6}")

    # ---- STI runs
    p()
    p("STI against the exact evidence (one row = one data set, all candidates R=1..6):")
    head = (
        f"{'ladder':<8} {'T':>3} {'sampler':<6} {'trueR':>5} {'argSTI':>6} {'argEx':>5} {'argTrap':>7} "
        f"{'max|z|':>8} {'max|zs|':>8} {'mean|STI-ex|':>12} {'mean|trap-ex|':>13} {'mean|STI-trap|':>14} "
        f"{'meanSE':>8} {'wall(s)':>8} {'Mlik/s':>7} {'t/t_exact':>9}"
    )
    p(head)
    p("-" * len(head))
    rows_detail = []
    total_sti_time = 0.0
    for ladder in cfg["ladders"]:
        for n_temps in cfg["ts"]:
            for sampler in cfg["samplers"]:
                for true_r in cfg["true_rs"]:
                    x = data[true_r]
                    est, se, wall, nev, failed = {}, {}, 0.0, 0, []
                    for r in CANDIDATES:
                        model = GaussianAdditive(r, MU, PRIOR_VAR, NOISE_VAR)
                        res, err = run_sti(model, x, ladder, n_temps, sampler, args.seed, true_r, r)
                        if res is None:
                            est[r], se[r] = np.nan, np.nan
                            failed.append(r)
                            rows_detail.append((ladder, n_temps, sampler, true_r, r, None, err))
                            continue
                        assert np.allclose(res.temperatures, temperature_ladder(n_temps, kind=ladder))
                        est[r], se[r] = res.log_evidence, res.std_error
                        wall += res.wall_time
                        nev += res.n_likelihood_evaluations
                        rows_detail.append((ladder, n_temps, sampler, true_r, r, res, None))
                    total_sti_time += wall
                    ok = [r for r in CANDIDATES if np.isfinite(est[r])]
                    e_ex = np.array([est[r] - exact[true_r, r] for r in ok])
                    t_ex = np.array([trap[ladder, n_temps, true_r, r] - exact[true_r, r] for r in CANDIDATES])
                    e_tr = np.array([est[r] - trap[ladder, n_temps, true_r, r] for r in ok])
                    nr = [r for r in near(true_r) if r in ok]
                    zmax = max((abs(est[r] - exact[true_r, r]) / se[r] for r in nr), default=np.nan)
                    zsmax = max((abs(est[r] - trap[ladder, n_temps, true_r, r]) / se[r] for r in nr), default=np.nan)
                    arg_sti = CANDIDATES[int(np.nanargmax([est[r] for r in CANDIDATES]))] if ok else "-"
                    arg_ex = CANDIDATES[int(np.argmax([exact[true_r, r] for r in CANDIDATES]))]
                    arg_tr = CANDIDATES[int(np.argmax([trap[ladder, n_temps, true_r, r] for r in CANDIDATES]))]
                    rate = nev / wall if wall > 0 else np.nan
                    p(
                        f"{ladder:<8} {n_temps:>3} {sampler:<6} {true_r:>5} {arg_sti!s:>6} {arg_ex:>5} {arg_tr:>7} "
                        f"{fmt(zmax, '8.2f'):>8} {fmt(zsmax, '8.2f'):>8} "
                        f"{fmt(np.mean(np.abs(e_ex)) if ok else None, '12.2f'):>12} "
                        f"{np.mean(np.abs(t_ex)):>13.2f} {fmt(np.mean(np.abs(e_tr)) if ok else None, '14.2f'):>14} "
                        f"{fmt(np.mean([se[r] for r in ok]) if ok else None, '8.2f'):>8} {wall:>8.2f} "
                        f"{fmt(rate / 1e6, '7.2f'):>7} {wall / t_exact[true_r]:>9.0f}"
                        + (f"  DIVERGED at R={failed}" if failed else "")
                    )

    if args.detail:
        p()
        p("Per candidate:")
        dh = (
            f"{'ladder':<8} {'T':>3} {'sampler':<6} {'trueR':>5} {'R':>2} {'exact':>11} {'STI':>11} {'SE':>7} "
            f"{'STI-ex':>9} {'trap-ex':>9} {'STI-trap':>9} {'z':>7} {'wall(s)':>7} {'Mlik/s':>7}"
        )
        p(dh)
        for ladder, n_temps, sampler, true_r, r, res, err in rows_detail:
            ex, tr = exact[true_r, r], trap[ladder, n_temps, true_r, r]
            if res is None:
                p(f"{ladder:<8} {n_temps:>3} {sampler:<6} {true_r:>5} {r:>2} {ex:>11.2f}  {err}")
                continue
            v, s = res.log_evidence, res.std_error
            p(
                f"{ladder:<8} {n_temps:>3} {sampler:<6} {true_r:>5} {r:>2} {ex:>11.2f} {v:>11.2f} {s:>7.2f} "
                f"{v - ex:>9.2f} {tr - ex:>9.2f} {v - tr:>9.2f} {(v - ex) / s:>7.2f} {res.wall_time:>7.2f} "
                f"{res.n_likelihood_evaluations / res.wall_time / 1e6:>7.2f}"
            )

    gf_best2, gf_med2 = blas_gflops()
    p()
    p(
        "Columns: argSTI/argEx/argTrap = argmax over R of STI / exact / trapezoid-on-exact-integrand; "
        "max|z| = max over R in {true-1,true,true+1} of |STI-exact|/SE; max|zs| = same with the trapezoid-on-exact "
        "value in place of exact (sampler error only); mean|..| and meanSE average over R=1..6; wall = sum of "
        "result.wall_time over the 6 candidates; Mlik/s = sum n_likelihood_evaluations / sum wall_time (millions of "
        "per-datum evaluations per second); t/t_exact = that wall time / the exact method's summed time."
    )
    p(
        f"BLAS again at the end: {gf_best2:.1f} GFLOP/s best, {gf_med2:.1f} median; "
        f"load avg {os.getloadavg()[0]:.2f}; "
        f"STI total {total_sti_time:.1f} s; benchmark total {time.perf_counter() - start_all:.1f} s"
    )


if __name__ == "__main__":
    main()
