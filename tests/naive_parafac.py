"""Slow NumPy twin of the PARAFAC kernels (skevidence/kernels/parafac.py).

Everything the kernels do is redone here the plain way, on the dense tensor:
``einsum`` for the intensities and the three gradients, one block after the
other, and the pure-Python xoshiro256** of ``naive_nmf.py``. It consumes the
random streams exactly as the kernels do, so kernel and twin agree up to
floating-point rounding.
"""

import math

import numpy as np
from scipy.special import gammaln

from naive_nmf import PyXoshiro, _entry_constant, _entry_grad, _entry_loglik, _update
from skevidence.cp.kernels.rng import seed_streams
from skevidence.samplers import StepSizeSchedule


def _groups(bounds):
    return [[slice(b[g], b[g + 1]) for g in range(len(b) - 1)] for b in bounds]


def _block_terms(x, Ab, Bb, Cb, kappa=0.0):
    """Log-likelihood (without its constant) and the three likelihood gradients of one block."""
    V = np.einsum("ir,jr,kr->ijk", Ab, Bb, Cb)
    E = _entry_grad(x, V, kappa)
    ll = np.sum(_entry_loglik(x, V, kappa))
    gA = np.einsum("ijk,jr,kr->ir", E, Bb, Cb)
    gB = np.einsum("ijk,ir,kr->jr", E, Ab, Cb)
    gC = np.einsum("ijk,ir,jr->kr", E, Ab, Bb)
    return ll, (gA, gB, gC)


def naive_parafac_chain(X, factors, *, temperature, n_samples, n_burnin, step_a, step_b, sampler,
                        alpha, sigma, freeze, prior_rates, bounds, seed_seq, max_capped_fraction=None,
                        kappa=0.0):
    """The block-parallel chain of ``run_parafac_chain``, one block at a time, on dense ``X``.

    Returns a dict with ``log_likelihood``, ``means`` (over the pre-update
    states of the kept iterations), the final ``factors``, ``step_size``,
    ``n_likelihood_evaluations`` and ``capped_fraction``. The twin never
    raises: ``max_capped_fraction`` is accepted and ignored.
    """
    X = np.asarray(X, dtype=float)
    F = [np.array(f, dtype=float) for f in factors]
    nb = len(bounds[0]) - 1
    psgld = "log" if sampler == "logsgld" else sampler == "psgld"
    schedule = StepSizeSchedule(step_a, step_b, n_burnin)
    states = seed_streams(seed_seq, nb + 1)
    master = PyXoshiro(states[0])
    streams = [PyXoshiro(states[1 + b]) for b in range(nb)]
    gi, gj, gk = _groups(bounds)
    v = [np.zeros_like(f) for f in F]
    if sampler == "logsgld":
        sums = ((X.sum(axis=(1, 2)), X.sum(axis=(0, 2)), X.sum(axis=(0, 1))) if kappa == 0
                else tuple(np.full(n, kappa * X.size / n) for n in X.shape))
        for vm, s in zip(v, sums):
            vm[...] = (1.0 / (1.0 + temperature * s))[:, None]
    totals = [np.zeros_like(f) for f in F]
    kept, n_evals, n_capped = [], 0, 0
    for it in range(1, n_samples + 1):
        p, q = divmod(master.uniform_index(nb * nb), nb)
        blocks = [(gi[b], gj[(b + p) % nb], gk[(b + q) % nb]) for b in range(nb)]
        n_s = sum(X[s].size for s in blocks)
        scale = nb * nb  # each entry is in one of the nb**2 equally likely parts
        keep = it > n_burnin
        settings = dict(eps=schedule(it), lik_scale=temperature * scale,
                        mean_scale=temperature / n_s, psgld=psgld, init_v=it == 1,
                        adapt_v=not (freeze and keep),
                        alpha=alpha, sigma=sigma)
        ll_blocks = []
        for b, sl in enumerate(blocks):
            cur = [F[m][sl[m]].copy() for m in range(3)]
            x = X[sl]
            ll, grads = _block_terms(x, *cur, kappa)
            if keep:
                ll_blocks.append(ll - sum(_entry_constant(e, kappa) for e in x.ravel()))
                for m in range(3):
                    totals[m][sl[m]] += cur[m]
            noise = [streams[b].standard_normals(c.size).reshape(c.shape) for c in cur]
            for m in range(3):
                vb = v[m][sl[m]].copy()
                F[m][sl[m]], capped = _update(cur[m], vb, grads[m], noise[m], lam=prior_rates[m],
                                              **settings)
                v[m][sl[m]] = vb
                if keep:
                    n_capped += capped
        n_evals += n_s
        if keep:
            kept.append(scale * sum(ll_blocks))
    n_kept = n_samples - n_burnin
    return {
        "log_likelihood": np.array(kept),
        "means": [t / n_kept for t in totals],
        "factors": F,
        "step_size": schedule(n_samples),
        "n_likelihood_evaluations": n_evals,
        "capped_fraction": n_capped / (n_kept * sum(f.size for f in F)),
    }


def naive_prior_scores(X, n_components, n_draws, *, prior_rates, bounds, streams, kappa=0.0):
    """NumPy twin of :func:`skevidence.cp.kernels.parafac.score_parafac_prior`, on the same streams."""
    X = np.asarray(X, dtype=float)
    draws, parts = PyXoshiro(streams[1]), PyXoshiro(streams[0])
    nb = len(bounds[0]) - 1
    gi, gj, gk = _groups(bounds)
    lgamma = gammaln(X + 1.0) if kappa == 0 else np.vectorize(lambda x: _entry_constant(x, kappa))(X)
    scores = np.empty(n_draws)
    totals = [np.zeros((n, n_components)) for n in X.shape]
    for k in range(n_draws):
        F = [np.array([-math.log(draws.next_double()) / lam for _ in range(n * n_components)])
             .reshape(n, -1) for n, lam in zip(X.shape, prior_rates)]
        for t, f in zip(totals, F):
            t += f
        p, q = divmod(parts.uniform_index(nb * nb), nb)
        total = 0.0
        for b in range(nb):
            sl = (gi[b], gj[(b + p) % nb], gk[(b + q) % nb])
            ll, _ = _block_terms(X[sl], *(F[m][sl[m]] for m in range(3)), kappa)
            total += ll - lgamma[sl].sum()
        scores[k] = total * nb * nb
    return scores, [t / n_draws for t in totals], F
