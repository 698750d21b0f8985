"""
=====================================================
Why the power ladder beats the uniform one
=====================================================

At the same number of temperatures, the power ladder
:math:`t_i = (i/T)^5` gives a far more accurate evidence than the uniform
ladder :math:`t_i = i/T` of the papers, because the integrand of
thermodynamic integration changes almost entirely at small :math:`t`.

Stochastic thermodynamic integration estimates

.. math::
    \\log p(x) = \\int_0^1 E_{p_t}[\\log p(x \\mid \\theta)]\\, dt,
    \\qquad p_t(\\theta) \\propto p(\\theta)\\, p(x \\mid \\theta)^t,

by the trapezoid rule on a ladder :math:`0 = t_0 < \\dots < t_T = 1`. Even a
tiny power :math:`t` of the likelihood of thousands of data points
overwhelms the prior, so :math:`E_{p_t}[\\log p(x|\\theta)]` climbs steeply
from its prior value and is nearly flat for most of :math:`[0, 1]`. A uniform
ladder puts one interval across that climb and the trapezoid rule
underestimates its area; the power ladder spends its points there.

We use the Gaussian additive model, whose integrand and evidence are both
known in closed form, so every error below is measured against the truth.
"""

# %%
# Data and the exact integrand
# ----------------------------
# Only :math:`s = \sum_r \theta_r` enters the likelihood. Its prior is
# :math:`\mathcal{N}(R\mu, R\sigma_\theta^2)` and the tempered likelihood is
# Gaussian, so the power posterior of :math:`s` is Gaussian with precision
# :math:`\lambda_t = 1/(R\sigma_\theta^2) + tN/\sigma_x^2` and mean
# :math:`m_t = (\mu/\sigma_\theta^2 + t\sum_n x_n/\sigma_x^2)/\lambda_t`, which
# gives the integrand
# :math:`f(t) = -\frac{N}{2}\log(2\pi\sigma_x^2)
# - \big[\sum_n (x_n - m_t)^2 + N/\lambda_t\big] / (2\sigma_x^2)`.

import os

import matplotlib.pyplot as plt
import numpy as np

from skevidence import sti_log_evidence
from skevidence.models import GaussianAdditive

prior_mean, prior_var, noise_var, R, n_obs = 5.0, 0.5, 5.0, 3, 2000
rng = np.random.default_rng(0)
x = rng.normal(rng.normal(prior_mean, np.sqrt(prior_var), size=R).sum(), np.sqrt(noise_var), n_obs)

model = GaussianAdditive(R, prior_mean, prior_var, noise_var)
exact = model.exact_log_evidence(x)


def integrand(t):
    """E_t[log p(x | theta)] in closed form, vectorised over t."""
    t = np.asarray(t, dtype=float)
    precision = 1.0 / (R * prior_var) + t * n_obs / noise_var
    mean = (prior_mean / prior_var + t * x.sum() / noise_var) / precision
    sq_resid = ((x - mean[..., None]) ** 2).sum(axis=-1)
    return -0.5 * n_obs * np.log(2 * np.pi * noise_var) - (sq_resid + n_obs / precision) / (
        2 * noise_var
    )


def trapezoid(ts, values):
    return float(np.sum(np.diff(ts) * (values[1:] + values[:-1]) / 2))


# %%
# Two ladders of ten intervals
# ----------------------------
# One STI run per ladder, with the same seed and the same chains otherwise.
# :class:`~skevidence.EvidenceResult` keeps the ladder and the estimated
# integrand at every temperature, with its standard error.

# SKEVIDENCE_EXAMPLE_BUDGET=short (the documentation's CI build): shorter chains and no T = 40.
SHORT = os.environ.get("SKEVIDENCE_EXAMPLE_BUDGET", "full") == "short"
if SHORT:
    print("SKEVIDENCE_EXAMPLE_BUDGET=short: chains of 200 iterations, no T = 40")
chains = dict(n_samples=200, n_burnin=100) if SHORT else dict(n_samples=1500, n_burnin=500)
settings = dict(temperatures=10, **chains, random_state=0)
results = {
    ladder: sti_log_evidence(model, x, ladder=ladder, **settings) for ladder in ("uniform", "power")
}
for ladder, res in results.items():
    ladder_only = trapezoid(res.temperatures, integrand(res.temperatures))
    print(
        f"{ladder:>7}: STI {res.log_evidence:.2f} ± {res.std_error:.2f}, "
        f"trapezoid of the exact integrand {ladder_only:.2f}, exact {exact:.2f}"
    )

# %%
# How the error shrinks with the number of temperatures
# ------------------------------------------------------
# The discretisation error of the trapezoid rule falls as :math:`O(1/T^2)`,
# but with a constant that is huge for the uniform ladder. The hollow markers
# apply the trapezoid rule to the exact integrand: the error STI would have
# with perfect chains.

n_temps = [5, 10, 20] if SHORT else [5, 10, 20, 40]
errors = {ladder: [] for ladder in results}
for ladder in results:
    for T in n_temps:
        res = results[ladder] if T == 10 else sti_log_evidence(
            model, x, ladder=ladder, **(settings | {"temperatures": T})
        )
        ladder_only = trapezoid(res.temperatures, integrand(res.temperatures))
        errors[ladder].append((res.log_evidence - exact, res.std_error, ladder_only - exact))
errors = {ladder: np.array(e) for ladder, e in errors.items()}

# %%
# The figure
# ----------
# Left and middle: the exact integrand and the STI estimates of it on each
# ladder (error bars are two standard errors), on a linear and on a
# logarithmic :math:`t` axis; the shaded area is what the uniform ladder's
# first interval misses. Right: the error
# of the evidence against the number of intervals.

colors = {"uniform": "C1", "power": "C0"}
fig, axes = plt.subplots(1, 3, figsize=(13.0, 4.2), layout="constrained")
t_fine = np.concatenate([[0.0], np.logspace(-7, 0, 400)])
for ax in axes[:2]:
    ax.plot(t_fine, integrand(t_fine), "k-", lw=1.2, label="exact $E_t[\\log p(x|\\theta)]$")
    for ladder, res in results.items():
        ax.errorbar(
            res.temperatures,
            res.expected_log_likelihood,
            yerr=2 * res.expected_log_likelihood_std,
            fmt="o",
            ms=5,
            color=colors[ladder],
            capsize=3,
            label=f"STI, {ladder} ladder",
        )
    ax.set_xlabel("inverse temperature $t$")
t0, t1 = results["uniform"].temperatures[:2]
t_first = np.linspace(t0, t1, 200)
chord = integrand(t0) + (integrand(t1) - integrand(t0)) * (t_first - t0) / (t1 - t0)
axes[0].fill_between(
    t_first,
    chord,
    integrand(t_first),
    color=colors["uniform"],
    alpha=0.25,
    label="area the uniform ladder misses",
)
axes[0].set_ylabel("$E_t[\\log p(x|\\theta)]$")
axes[0].set_title("The integrand is steep near $t = 0$")
axes[0].legend(loc="lower right", fontsize="small")
axes[1].set_xscale("symlog", linthresh=1e-6)
axes[1].set_xlim(0, 1.5)
axes[1].set_title("The same, on a logarithmic $t$ axis")

ax = axes[2]
for ladder, err in errors.items():
    ax.errorbar(
        n_temps, -err[:, 0], yerr=2 * err[:, 1], fmt="o-", color=colors[ladder], capsize=3,
        label=f"STI, {ladder}",
    )
    ax.plot(
        n_temps, -err[:, 2], "o--", mfc="white", color=colors[ladder],
        label=f"trapezoid of exact, {ladder}",
    )
ax.set_xscale("log")
ax.set_yscale("symlog", linthresh=1.0)
ax.set_xticks(n_temps, [str(T) for T in n_temps])
ax.minorticks_off()
ax.set_xlabel("number of intervals $T$")
ax.set_ylabel("exact $-$ estimate (nats)")
ax.set_title("Error of the log-evidence")
ax.legend(fontsize="small")
plt.show()

# %%
# With ten intervals the uniform ladder misses the climb between
# :math:`t = 0` and :math:`t = 0.1` almost entirely; the power ladder's first
# points are at :math:`10^{-5}, 3\cdot 10^{-4}, 2\cdot 10^{-3}, \dots`, right
# where the integrand changes. This is why ``ladder="power"`` is the default
# of :func:`~skevidence.sti_log_evidence` and of every estimator, and
# ``ladder="uniform"`` is there to reproduce the papers. The ladder error is a
# bias: the standard error of :class:`~skevidence.EvidenceResult` does not
# include it (see :ref:`evidence-stderr`).
