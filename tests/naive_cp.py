"""Slow NumPy twin of the block-parallel SG-MCMC kernel (skevidence/cp/kernels/sgmcmc.py) and of its generator.

Everything the kernel does is redone here the plain way: a pure-Python
xoshiro256** (Python ints, independent of the numba code), the blocks' means
by ``einsum``, one block after the other, on the dense array. It consumes the
random streams exactly as the kernel does, so kernel and twin agree up to
floating-point rounding. An entry's density comes from
:mod:`skevidence.cp.likelihood` (its Python function), the one every kernel uses.
"""

import math

import numpy as np

from skevidence._config import LANGEVIN_MAX_DRIFT
from skevidence.cp.kernels import rng as _rng
from skevidence.cp.kernels.rng import seed_streams
from skevidence.cp.likelihood import entry, entry_constant
from skevidence.samplers import StepSizeSchedule

_MASK = (1 << 64) - 1
_ENTRY = getattr(entry, "py_func", entry)
_LETTERS = "ijk"


def log_density(X, V, kappa):
    r"""Entry-wise :math:`\log p(x \mid v)` from :func:`~skevidence.cp.likelihood.entry`'s Python function."""
    X, V = np.broadcast_arrays(np.asarray(X, dtype=np.float64), np.asarray(V, dtype=np.float64))
    term = np.array([_ENTRY(x, v, kappa, True)[0] for x, v in zip(X.ravel(), V.ravel())]).reshape(X.shape)
    linear = -V if kappa == 0.0 else 0.0
    return term + linear - entry_constant(X, kappa)


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
        generator); their geometry is checked in the tests.
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


def _block_terms(x, factors, kappa, floor):
    """A block's log-likelihood without its constant, and the likelihood's gradient in each factor."""
    letters = _LETTERS[: x.ndim]
    V = np.einsum(",".join(c + "r" for c in letters) + "->" + letters, *factors) + floor
    pairs = [_ENTRY(xe, ve, kappa, True) for xe, ve in zip(x.ravel(), V.ravel())]
    term = np.array([p[0] for p in pairs]).reshape(x.shape)
    E = np.array([p[1] for p in pairs]).reshape(x.shape)
    if kappa == 0.0:  # the linear part -V
        term, E = term - V, E - 1.0
    grads = []
    for m, c in enumerate(letters):
        others = [F for o, F in enumerate(factors) if o != m]
        spec = letters + "," + ",".join(o + "r" for o in letters if o != c) + "->" + c + "r"
        grads.append(np.einsum(spec, E, *others))
    return float(term.sum()), grads


def _update(theta, v, g_lik, xi, *, eps, lik_scale, mean_scale, lam, psgld, init_v, adapt_v, alpha, sigma):
    """One update of a block of entries; returns the new entries and how many drifts were capped."""
    g = lik_scale * g_lik - lam
    if psgld:
        gb = mean_scale * g_lik
        if init_v:
            v[...] = gb * gb
        elif adapt_v:
            v[...] = alpha * v + (1.0 - alpha) * (gb * gb)
        G = 1.0 / (sigma + np.sqrt(v))
    else:
        G = 1.0
    sd = np.sqrt(2.0 * eps * G)
    drift = eps * G * g
    cap = LANGEVIN_MAX_DRIFT * sd
    n_capped = int(np.sum(np.abs(drift) > cap))
    return np.abs(theta + np.clip(drift, -cap, cap) + sd * xi), n_capped


def _part_blocks(bounds, part, n_modes):
    """The groups, mode by mode, of the ``B`` blocks of ``part``."""
    B = len(bounds[0]) - 1
    shifts = []
    for _ in range(n_modes - 1):
        shifts.append(part % B)
        part //= B
    shifts = shifts[::-1]
    return [[b] + [(b + s) % B for s in shifts] for b in range(B)]


def naive_chain(X, factors, *, bounds, temperature, n_samples, n_burnin, step_a, step_b, sampler, alpha=0.99,
                sigma=1e-5, freeze=True, prior_rates, seed_seq, kappa=0.0, floor=0.0):
    """The block-parallel chain of ``run_chain``, one block at a time, on the dense ``X``.

    ``factors`` are one ``(n_m, R)`` array per mode. Returns a dict with
    ``log_likelihood``, ``means`` (over the pre-update states of the kept
    iterations), the final ``factors``, ``step_size``,
    ``n_likelihood_evaluations`` and ``capped_fraction``.
    """
    X = np.asarray(X, dtype=float)
    F = [np.array(f, dtype=float) for f in factors]
    N = X.ndim
    B = len(bounds[0]) - 1
    groups = [[slice(b[g], b[g + 1]) for g in range(B)] for b in bounds]
    rates = np.broadcast_to(np.asarray(prior_rates, dtype=float), (N,))
    schedule = StepSizeSchedule(step_a, step_b, n_burnin)
    states = seed_streams(seed_seq, B + 1)
    master = PyXoshiro(states[0])
    streams = [PyXoshiro(states[1 + b]) for b in range(B)]
    constants = entry_constant(X, kappa)
    v = [np.zeros_like(f) for f in F]
    totals = [np.zeros_like(f) for f in F]
    n_parts = B ** (N - 1)
    kept = []
    n_evals = n_capped = 0
    for k in range(1, n_samples + 1):
        part = master.uniform_index(n_parts)
        blocks = _part_blocks(bounds, part, N)
        n_s = sum(X[tuple(groups[m][g] for m, g in enumerate(bl))].size for bl in blocks)
        eps = schedule(k)
        keep = k > n_burnin
        settings = dict(eps=eps, lik_scale=temperature * n_parts, mean_scale=temperature / n_s,
                        psgld=sampler == "psgld", init_v=k == 1, adapt_v=not (freeze and keep), alpha=alpha,
                        sigma=sigma)
        total = 0.0
        for b, bl in enumerate(blocks):
            sl = [groups[m][g] for m, g in enumerate(bl)]
            x = X[tuple(sl)]
            block = [F[m][sl[m]].copy() for m in range(N)]
            ll, grads = _block_terms(x, block, kappa, floor)
            total += ll - constants[tuple(sl)].sum()
            for m in range(N):
                if keep:
                    totals[m][sl[m]] += block[m]
                xi = streams[b].standard_normals(block[m].size).reshape(block[m].shape)
                vm = v[m][sl[m]].copy()
                F[m][sl[m]], capped = _update(block[m], vm, grads[m], xi, lam=rates[m], **settings)
                v[m][sl[m]] = vm
                if keep:
                    n_capped += capped
        n_evals += n_s
        if keep:
            kept.append(total * n_parts)
    n_kept = n_samples - n_burnin
    return {
        "log_likelihood": np.array(kept),
        "means": [t / n_kept for t in totals],
        "factors": F,
        "step_size": schedule(n_samples),
        "n_likelihood_evaluations": n_evals,
        "capped_fraction": n_capped / (n_kept * sum(f.size for f in F)),
    }


def naive_prior_scores(X, n_components, n_draws, *, bounds, prior_rates, streams, kappa=0.0, floor=0.0):
    """NumPy twin of ``score_prior``, on the same two streams: ``(scores, means, last draw)``."""
    X = np.asarray(X, dtype=float)
    N = X.ndim
    B = len(bounds[0]) - 1
    groups = [[slice(b[g], b[g + 1]) for g in range(B)] for b in bounds]
    rates = np.broadcast_to(np.asarray(prior_rates, dtype=float), (N,))
    draws, parts = PyXoshiro(streams[1]), PyXoshiro(streams[0])
    constants = entry_constant(X, kappa)
    scores = np.empty(n_draws)
    sums = [np.zeros((n, n_components)) for n in X.shape]
    n_parts = B ** (N - 1)
    for k in range(n_draws):
        F = [np.array([-math.log(draws.next_double()) / rates[m] for _ in range(n * n_components)])
             .reshape(n, n_components) for m, n in enumerate(X.shape)]
        for s, f in zip(sums, F):
            s += f
        total = 0.0
        for bl in _part_blocks(bounds, parts.uniform_index(n_parts), N):
            sl = [groups[m][g] for m, g in enumerate(bl)]
            ll, _ = _block_terms(X[tuple(sl)], [F[m][sl[m]] for m in range(N)], kappa, floor)
            total += ll - constants[tuple(sl)].sum()
        scores[k] = total * n_parts
    return scores, [s / n_draws for s in sums], F
