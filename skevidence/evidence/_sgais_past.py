"""What SGAIS keeps of the past data: the rows themselves (or a reservoir) and control variates.

:class:`_PastData` holds the rows the stochastic potential draws its
minibatches from, growing its buffers geometrically so that adding a chunk
does not copy everything seen before; with a capacity it keeps a uniform
reservoir instead (Cameron et al. 2019a, section 5). :class:`_Anchors` keeps, per
particle, an anchor point with the exact past-data gradient there, so that a
minibatch only estimates the difference (control variates).
"""

import numpy as np


class _PastData:
    """The past rows minibatches are drawn from: all of them, or a reservoir.

    Rows live in buffers that grow geometrically, so appending a chunk costs
    amortised O(chunk). With ``capacity`` set, the buffer stops growing and
    holds a uniform random sample of every row offered so far (Vitter's
    reservoir sampling, algorithm R; Cameron et al. 2019a, section 5).
    """

    def __init__(self, capacity=None):
        self.capacity = capacity
        self.X = self.y = None
        self.size = 0  # rows stored
        self.n_offered = 0  # rows ever appended

    @property
    def complete(self):
        """Whether every row ever appended is stored."""
        return self.size == self.n_offered

    def _grow(self, rows):
        """Move the stored rows to buffers of ``rows`` rows."""
        for name in ("X", "y"):
            old = getattr(self, name)
            if old is not None:
                new = np.empty((rows,) + old.shape[1:], dtype=old.dtype)
                new[: self.size] = old[: self.size]
                setattr(self, name, new)

    def _buffers(self, X, y):
        """``(buffer, new rows)`` of ``X`` and, for a conditional model, of ``y``."""
        return [(self.X, X)] if y is None else [(self.X, X), (self.y, y)]

    def append(self, X, y, rng):
        if self.X is None:
            self.X, self.y = X[:0], None if y is None else y[:0]
        if X.shape[1:] != self.X.shape[1:]:
            raise ValueError(f"New data have rows of shape {X.shape[1:]}, but the earlier data of this stream had "
                             f"{self.X.shape[1:]}: every piece of a stream needs the same number of features.")
        if (y is None) != (self.y is None) or (y is not None and y.shape[1:] != self.y.shape[1:]):
            raise ValueError("New targets do not match the earlier targets of this stream in presence or shape.")
        n_new, limit = X.shape[0], self.capacity
        free = n_new if limit is None else max(0, min(n_new, limit - self.size))
        if free:
            need = self.size + free
            if need > self.X.shape[0]:
                rows = max(need, 2 * self.X.shape[0], 64)
                self._grow(rows if limit is None else min(rows, limit))
            for buffer, new in self._buffers(X, y):
                buffer[self.size : need] = new[:free]
            self.size = need
        if free < n_new:
            # Algorithm R: the row with 0-based stream index t replaces a uniform
            # slot j of the reservoir when j = randint(0, t) falls below capacity.
            t = self.n_offered + np.arange(free, n_new)
            slots = rng.integers(0, t + 1)
            keep = np.flatnonzero(slots < limit)
            if keep.size:
                # A slot drawn twice keeps the later row, as the sequential algorithm would.
                rev = keep[::-1]
                _, first = np.unique(slots[rev], return_index=True)
                for buffer, new in self._buffers(X, y):
                    buffer[slots[rev[first]]] = new[free + rev[first]]
        self.n_offered += n_new

    def rows(self, idx):
        """Stored rows ``(X[idx], y[idx])`` (``y`` is ``None`` for unconditional models)."""
        return self.X[idx], None if self.y is None else self.y[idx]

    def minibatch(self, batch_size, rng):
        """Rows ``(X, y)`` of a minibatch and the scale ``n_past / |B|`` of its sums."""
        if self.complete and self.size <= batch_size:
            # Few enough past rows: use them all, an exact gradient at the same cost.
            return *self.rows(slice(0, self.size)), 1.0
        return *self.rows(rng.integers(0, self.size, size=batch_size)), self.n_offered / batch_size

    def __getstate__(self):
        # Pickle the rows only, not the unused capacity of the buffers.
        state = self.__dict__.copy()
        if self.X is not None:
            state["X"], state["y"] = self.rows(slice(0, self.size))
        return state


class _Anchors:
    r"""Control variates for the past-data gradient, one anchor per particle.

    With anchors :math:`\hat\theta_m` and the exact sums
    :math:`G_m = \sum_{x \in \text{past}} \nabla\log p(x|\hat\theta_m)`,

    .. math::
        G_m + \frac{n_\text{past}}{|B|}\sum_{x\in B}
        \big(\nabla\log p(x|\theta_m) - \nabla\log p(x|\hat\theta_m)\big)

    is still an unbiased estimate of the past-data gradient, but its noise
    scales with :math:`\|\theta_m - \hat\theta_m\|` instead of with the
    spread of the per-datum gradients. Without it the minibatch noise of
    SGHMC with :math:`\eta = 0.1/n` grows like :math:`n / |B|` relative to
    the injected noise, and the particles drift ever further from the
    posterior (measurably, a bias of order one nat per chunk at
    :math:`n = 10^4`).

    The sums are kept exact as rows arrive (each new chunk is added at the
    current anchors). Every time the data seen double, the anchors move to
    the current particles; the sums at the new anchors are accumulated over
    the stored rows a slice per chunk (at most ``max(2 * chunk, batch)``
    rows), and replace the old ones once complete, so no chunk costs more
    than a bounded amount. A reservoir that has started to drop rows cannot
    be re-summed: the anchors then stay where they are.
    """

    def __init__(self):
        self.theta = self.grad_sum = None
        self.n_anchor = 0  # data seen when the anchors in use were placed
        self.pending = self.pending_sum = None
        self.pending_pos = self.pending_n = 0

    @property
    def active(self):
        return self.theta is not None

    def permute(self, idx):
        """Follow the particles through a resampling."""
        for name in ("theta", "grad_sum", "pending", "pending_sum"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, value[idx])

    def past_gradient(self, model, theta, Xb, yb, scale):
        """Control-variate estimate of the past-data gradient of every particle."""
        m = theta.shape[0]
        grads = model.log_likelihood_and_grad_particles(np.vstack([theta, self.theta]), Xb, yb)[1]
        return self.grad_sum + scale * (grads[:m] - grads[m:])

    def after_append(self, state, model, X, y, particles):
        """Keep the sums exact after ``X`` joined the past; place and re-sum anchors."""
        past, batch = state.past, state.settings["batch_size"]
        m = particles.shape[0]
        if self.active:
            self.grad_sum = self.grad_sum + model.log_likelihood_and_grad_particles(self.theta, X, y)[1]
            state.n_likelihood_evaluations += m * X.shape[0]
        if not past.complete:
            self.pending = self.pending_sum = None
            return
        due = past.size > batch // 2 if not self.active else past.n_offered >= 2 * self.n_anchor
        if self.pending is None and due:
            self.pending, self.pending_sum = particles.copy(), np.zeros_like(particles)
            self.pending_pos, self.pending_n = 0, past.n_offered
        if self.pending is not None:
            stop = min(past.size, self.pending_pos + max(2 * X.shape[0], batch))
            rows = past.rows(slice(self.pending_pos, stop))
            grads = model.log_likelihood_and_grad_particles(self.pending, *rows)[1]
            self.pending_sum = self.pending_sum + grads
            state.n_likelihood_evaluations += m * (stop - self.pending_pos)
            self.pending_pos = stop
            if stop == past.size:
                self.theta, self.grad_sum, self.n_anchor = self.pending, self.pending_sum, self.pending_n
                self.pending = self.pending_sum = None
