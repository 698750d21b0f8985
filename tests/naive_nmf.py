"""Slow NumPy twin of the NMF kernels (skevidence/kernels/nmf.py) and of their generator.

Everything the kernels do is redone here the plain way: a pure-Python
xoshiro256** (Python ints, independent of the numba code), dense matrix
products with ``@``, one block after the other. It consumes the random streams
exactly as the kernels do, so kernel and twin agree up to floating-point
rounding.
"""

import math

import numpy as np
from scipy.special import gammaln

from skevidence._config import LANGEVIN_MAX_DRIFT, LOG_SGLD_MAX_DRIFT
from skevidence.cp.kernels import rng as _rng
from skevidence.cp.kernels.rng import seed_streams
from skevidence.samplers import StepSizeSchedule

_MASK = (1 << 64) - 1


def _rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & _MASK


class PyXoshiro:
    """xoshiro256** on Python ints, from the reference C code."""

    def __init__(self, state):
        self.s = [int(w) for w in state]

    def next_uint64(self):
        s = self.s
        result = (_rotl((s[1] * 5) & _MASK, 7) * 9) & _MASK
        t = (s[1] << 17) & _MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        return result

    def next_double(self):
        return (float(self.next_uint64() >> 12) + 0.5) * 2.0**-52

    def uniform_index(self, n):
        return ((self.next_uint64() >> 32) * n) >> 32

    def standard_normals(self, n):
        """The ziggurat of Marsaglia & Tsang (2000), written out from the paper.

        Only the layer tables come from the kernel module (they define the
        generator); their geometry is checked in ``test_kernels_nmf``.
        """
        x, f = _rng._ZIG_X, _rng._ZIG_F
        r = _rng.ZIGGURAT_R
        out = np.empty(n)
        for k in range(n):
            while True:
                bits = self.next_uint64()
                i = bits & 255
                z = float(bits >> 12) * 2.0**-52 * x[i]
                if z < x[i + 1]:
                    break
                if i == 0:  # the tail beyond r
                    while True:
                        a = -math.log(self.next_double()) / r
                        if -2.0 * math.log(self.next_double()) > a * a:
                            break
                    z = r + a
                    break
                y = f[i] + self.next_double() * (f[i + 1] - f[i])  # the wedge
                if y < math.exp(-0.5 * z * z):
                    break
            out[k] = -z if (bits >> 8) & 1 else z
        return out


def _update(theta, v, g_lik, xi, *, eps, lik_scale, mean_scale, lam, psgld, init_v, adapt_v,
            alpha, sigma):
    """One update of a block of entries; returns the new entries and how many drifts were capped."""
    g = lik_scale * g_lik - lam
    if psgld == "log":  # SGLD on log(theta), fixed preconditioner v
        drift = eps * v * (theta * g + 1.0)
        n_capped = int(np.sum(np.abs(drift) > LOG_SGLD_MAX_DRIFT))
        drift = np.clip(drift, -LOG_SGLD_MAX_DRIFT, LOG_SGLD_MAX_DRIFT)
        return theta * np.exp(drift + np.sqrt(2.0 * eps * v) * xi), n_capped
    if psgld:
        gb = mean_scale * g_lik
        if init_v:
            v[...] = gb * gb
        elif adapt_v:
            v[...] = alpha * v + (1.0 - alpha) * (gb * gb)
        G = 1.0 / (sigma + np.sqrt(v))
        sd = np.sqrt(2.0 * eps * G)
        drift = eps * G * g
    else:
        sd = np.sqrt(2.0 * eps)
        drift = eps * g
    cap = LANGEVIN_MAX_DRIFT * sd
    n_capped = int(np.sum(np.abs(drift) > cap))
    return np.abs(theta + np.clip(drift, -cap, cap) + sd * xi), n_capped


def _entry_constant(x, kappa):
    """The data-only part of an entry's log-likelihood, subtracted: lgamma(x + 1) or minus the Gamma density's."""
    if kappa == 0:
        return math.lgamma(x + 1.0)
    return -(kappa * math.log(kappa) - math.lgamma(kappa) + ((kappa - 1.0) * math.log(x) if kappa != 1 else 0.0))


def _entry_loglik(x, V, kappa):
    """Entry-wise log-likelihood without the constant (Poisson: 0 log 0 = 0)."""
    if kappa == 0:
        nz = x != 0
        return np.where(nz, x * np.log(np.where(nz, V, 1.0)), 0.0) - V
    return -kappa * (np.log(V) + x / V)


def _entry_grad(x, V, kappa):
    """Entry-wise derivative in V of :func:`_entry_loglik`."""
    if kappa == 0:
        nz = x != 0
        return np.where(nz, x / np.where(nz, V, 1.0), 0.0) - 1.0
    return kappa * (x - V) / V**2


def naive_nmf_chain(X, W, H, *, temperature, n_samples, n_burnin, step_a, step_b, sampler,
                    alpha, sigma, freeze, lam_w, lam_h, row_bounds, col_bounds, seed_seq,
                    max_capped_fraction=None, kappa=0.0):
    """The block-parallel chain of ``run_nmf_chain``, one block at a time, on dense ``X``.

    Returns a dict with ``log_likelihood``, ``W_mean``, ``H_mean`` (over the
    pre-update states of the kept iterations), the final ``W`` and ``H``,
    ``step_size``, ``n_likelihood_evaluations`` and ``capped_fraction``.
    The twin never raises: ``max_capped_fraction`` is accepted and ignored.
    ``kappa`` is the likelihood: 0 Poisson, else a Gamma of that shape.
    """
    X = np.asarray(X, dtype=float)
    W = np.array(W, dtype=float)
    H = np.array(H, dtype=float)
    I, J = X.shape
    B = len(row_bounds) - 1
    psgld = "log" if sampler == "logsgld" else sampler == "psgld"
    schedule = StepSizeSchedule(step_a, step_b, n_burnin)
    states = seed_streams(seed_seq, B + 1)
    master = PyXoshiro(states[0])
    streams = [PyXoshiro(states[1 + b]) for b in range(B)]
    rg = [slice(row_bounds[g], row_bounds[g + 1]) for g in range(B)]
    cg = [slice(col_bounds[g], col_bounds[g + 1]) for g in range(B)]
    lgamma = np.array([[sum(_entry_constant(x, kappa) for x in X[rg[g], cg[h]].ravel())
                        for h in range(B)] for g in range(B)])
    vW, vH = np.zeros_like(W), np.zeros_like(H)
    if sampler == "logsgld":
        # The log-space curvature per row: x_i. (Poisson), kappa per entry (Gamma, at a fit).
        rows, cols = (X.sum(axis=1), X.sum(axis=0)) if kappa == 0 else (np.full(I, kappa * J), np.full(J, kappa * I))
        vW[...] = (1.0 / (1.0 + temperature * rows))[:, None]
        vH[...] = (1.0 / (1.0 + temperature * cols))[None, :]
    W_sum, H_sum = np.zeros_like(W), np.zeros_like(H)
    kept = []
    n_evals = n_capped = 0
    for k in range(1, n_samples + 1):
        p = master.uniform_index(B)
        blocks = [(b, (b + p) % B) for b in range(B)]
        n_s = sum(X[rg[b], cg[c]].size for b, c in blocks)
        scale = (I * J) / n_s
        eps = schedule(k)
        keep = k > n_burnin
        settings = dict(eps=eps, lik_scale=temperature * scale, mean_scale=temperature / n_s,
                        psgld=psgld, init_v=k == 1, adapt_v=not (freeze and keep),
                        alpha=alpha, sigma=sigma)
        ll_blocks = []
        for b, c in blocks:
            rs, cs = rg[b], cg[c]
            Wb, Hb, x = W[rs].copy(), H[:, cs].copy(), X[rs, cs]
            V = Wb @ Hb
            E = _entry_grad(x, V, kappa)
            if keep:
                ll_blocks.append(np.sum(_entry_loglik(x, V, kappa)) - lgamma[b, c])
                W_sum[rs] += Wb
                H_sum[:, cs] += Hb
            gW, gH = E @ Hb.T, Wb.T @ E
            xi_w = streams[b].standard_normals(Wb.size).reshape(Wb.shape)
            # H's noise comes column by column (the kernel holds H transposed)
            xi_h = streams[b].standard_normals(Hb.size).reshape(Hb.T.shape).T
            vWb, vHb = vW[rs].copy(), vH[:, cs].copy()
            W[rs], capped_w = _update(Wb, vWb, gW, xi_w, lam=lam_w, **settings)
            H[:, cs], capped_h = _update(Hb, vHb, gH, xi_h, lam=lam_h, **settings)
            vW[rs], vH[:, cs] = vWb, vHb
            if keep:
                n_capped += capped_w + capped_h
        n_evals += n_s
        if keep:
            kept.append(scale * sum(ll_blocks))
    n_kept = n_samples - n_burnin
    return {
        "log_likelihood": np.array(kept),
        "W_mean": W_sum / n_kept,
        "H_mean": H_sum / n_kept,
        "W": W,
        "H": H,
        "step_size": schedule(n_samples),
        "n_likelihood_evaluations": n_evals,
        "capped_fraction": n_capped / (n_kept * (W.size + H.size)),
    }


def naive_prior_scores(X, n_components, n_draws, *, lam_w, lam_h, row_bounds, col_bounds, streams, kappa=0.0):
    """NumPy twin of :func:`skevidence.cp.kernels.nmf.score_nmf_prior`, on the same streams (``kappa``: as above)."""
    X = np.asarray(X, dtype=float)
    I, J = X.shape
    B = len(row_bounds) - 1
    draws, parts = PyXoshiro(streams[1]), PyXoshiro(streams[0])
    lgamma = gammaln(X + 1.0) if kappa == 0 else np.vectorize(lambda x: _entry_constant(x, kappa))(X)
    scores, W_sum, H_sum = np.empty(n_draws), np.zeros((I, n_components)), np.zeros((n_components, J))
    for k in range(n_draws):
        W = np.array([-math.log(draws.next_double()) / lam_w for _ in range(I * n_components)]).reshape(I, -1)
        H = np.array([-math.log(draws.next_double()) / lam_h for _ in range(n_components * J)]).reshape(-1, J)
        W_sum += W
        H_sum += H
        p = parts.uniform_index(B)
        total, n_s = 0.0, 0
        for b in range(B):
            c = (b + p) % B
            rs = slice(row_bounds[b], row_bounds[b + 1])
            cs = slice(col_bounds[c], col_bounds[c + 1])
            V = W[rs] @ H[:, cs]
            x = X[rs, cs]
            total += np.sum(_entry_loglik(x, V, kappa) - lgamma[rs, cs])
            n_s += x.size
        scores[k] = total * I * J / n_s
    return scores, W_sum / n_draws, H_sum / n_draws, W, H
