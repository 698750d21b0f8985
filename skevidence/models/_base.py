"""The interface every model implements to have its evidence estimated."""

import numpy as np

LOG_2PI = np.log(2.0 * np.pi)


class EvidenceModel:
    r"""A Bayesian model :math:`p(x \mid \theta)\, p(\theta)` with i.i.d. data.

    This is the one interface between a model and the evidence methods. The
    parameters :math:`\theta` are a flat float64 vector of length
    :attr:`n_params`; the data are the rows of ``X`` (and of ``y`` when the
    model is conditional), each row one datum :math:`x_n`.

    To make a model of your own, subclass this and implement (the generic
    chain runner calls them; a model with its own runner needs only
    :meth:`prepare_data`, :meth:`n_data` and :meth:`chain_runner`)

    - :meth:`log_likelihood_and_grad`: per-datum log-likelihoods of some rows
      and the gradient of their sum;
    - :meth:`log_prior` and :meth:`grad_log_prior`;
    - :meth:`sample_prior` if the prior can be sampled exactly (then set
      ``exact_prior_sampling = True``), otherwise :meth:`initial_params`;
    - :attr:`nonnegative`, a boolean mask of the parameters constrained to be
      non-negative (they are mirrored at zero by the samplers), or ``None``.

    Evidence methods only ever see a model through these methods; a model with
    a faster way to run a whole chain (a fused numba kernel, say) overrides
    :meth:`chain_runner`, the seam between the STI driver and the model.

    **Batched over particles (optional).** SGAIS and AIS move a population of
    ``M`` parameter vectors at once, stacked as ``thetas`` of shape
    ``(M, n_params)``. They call

    - :meth:`log_likelihood_and_grad_particles` ``(thetas, X, y)`` →
      ``(log_lik, grads)`` of shapes ``(M, n_rows)`` and ``(M, n_params)``:
      per-datum log-likelihoods of every particle on the same rows, and each
      particle's gradient of their sum;
    - :meth:`log_likelihood_particles` ``(thetas, X, y)`` → ``(M, n_rows)``,
      the same without gradients (cheaper when only weights are needed);
    - :meth:`log_prior_particles` ``(thetas)`` → ``(M,)`` and
      :meth:`grad_log_prior_particles` ``(thetas)`` → ``(M, n_params)``.

    The defaults loop over the particles with the single-``theta`` methods
    above, so a model works without them; a model that can vectorise (one
    matrix product for all particles) overrides them, which is what makes
    SGAIS fast, and may then leave out the single-``theta`` methods, whose
    defaults take the one particle of the batched ones. Both
    methods also need exact prior draws (:meth:`sample_prior` with
    ``size=M``), and rows of the prepared data indexable along the first
    axis (``X[idx]``, ``y[idx]``) since they draw minibatches by index.
    """

    #: Whether :meth:`sample_prior` draws exactly from the prior; if so, STI
    #: uses exact prior draws at temperature zero instead of a chain.
    exact_prior_sampling = False

    #: Whether STI may estimate the lowest temperatures by reweighting those
    #: exact prior draws (while their weights stay even) instead of running chains.
    reweight_prior_draws = True

    #: Boolean mask of parameters constrained to be non-negative, or ``None``.
    nonnegative = None

    #: Number of columns of ``X`` (each row one datum) that :meth:`prepare_data`
    #: checks, or ``None`` for any shape.
    n_features = None

    @property
    def n_params(self):
        """Number of scalar parameters, the length of ``theta`` (``None`` if it depends on the data)."""
        return None

    def prepare_data(self, X, y=None):
        """Return ``(X, y)`` in the form the other methods expect.

        The default makes float64 C-contiguous arrays and checks that ``X``
        has :attr:`n_features` columns (when set) and ``y`` as many rows as
        ``X``. Models override it to reshape their data.
        """
        X = np.ascontiguousarray(X, dtype=np.float64)
        if self.n_features is not None and (X.ndim != 2 or X.shape[1] != self.n_features):
            raise ValueError(f"X must have shape (n_samples, {self.n_features}), got {X.shape}.")
        if y is not None:
            y = np.ascontiguousarray(y, dtype=np.float64)
            if y.shape[0] != X.shape[0]:
                raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}; they must describe the same data "
                                 "points.")
        return X, y

    def n_data(self, X, y=None):
        """Number of i.i.d. data points ``N`` in prepared data."""
        return X.shape[0]

    def log_likelihood(self, theta, X, y=None):
        """Per-datum log-likelihoods ``log p(x_n | theta)``, shape ``(n,)``."""
        return self.log_likelihood_and_grad(theta, X, y)[0]

    def log_likelihood_and_grad(self, theta, X, y=None):
        """Per-datum log-likelihoods and the gradient of their sum.

        The default takes the one particle of
        :meth:`log_likelihood_and_grad_particles`, for a model that implements
        the batched methods only.

        Parameters
        ----------
        theta : ndarray of shape (n_params,)
            Parameters.
        X : ndarray
            Rows of the prepared data (a minibatch).
        y : ndarray or None
            Matching rows of the targets, for conditional models.

        Returns
        -------
        log_lik : ndarray of shape (n_rows,)
            ``log p(x_n | theta)`` for each row.
        grad : ndarray of shape (n_params,)
            ``sum_n grad_theta log p(x_n | theta)`` over the rows.
        """
        log_lik, grads = self._batched("log_likelihood_and_grad")(np.atleast_2d(theta), X, y)
        return log_lik[0], grads[0]

    def log_prior(self, theta):
        """Log prior density ``log p(theta)``."""
        return float(self._batched("log_prior")(np.atleast_2d(theta))[0])

    def grad_log_prior(self, theta):
        """Gradient of :meth:`log_prior`, shape ``(n_params,)``."""
        return self._batched("grad_log_prior")(np.atleast_2d(theta))[0]

    def _batched(self, method):
        """The batched ``<method>_particles`` a single-``theta`` default falls back on, if the model has it."""
        batched = f"{method}_particles"
        if getattr(type(self), batched) is getattr(EvidenceModel, batched):
            raise TypeError(f"{type(self).__name__} implements neither {method} nor {batched}, one of which the "
                            "evidence methods need: implement it, or return your own chain runner from chain_runner.")
        return getattr(self, batched)

    def log_likelihood_particles(self, thetas, X, y=None):
        """Per-datum log-likelihoods for a stack of parameters, shape ``(M, n_rows)``.

        The default takes them from :meth:`log_likelihood_and_grad_particles`;
        see the class docstring for the batched interface.
        """
        return self.log_likelihood_and_grad_particles(thetas, X, y)[0]

    def log_likelihood_and_grad_particles(self, thetas, X, y=None):
        """Per-datum log-likelihoods and summed gradients for a stack of parameters.

        Parameters
        ----------
        thetas : ndarray of shape (M, n_params)
            One parameter vector per row (particle).
        X : ndarray
            Rows of the prepared data, shared by all particles.
        y : ndarray or None
            Matching rows of the targets, for conditional models.

        Returns
        -------
        log_lik : ndarray of shape (M, n_rows)
            ``log p(x_n | theta_m)``.
        grads : ndarray of shape (M, n_params)
            ``sum_n grad log p(x_n | theta_m)`` for each particle.

        Notes
        -----
        The default loops over particles with :meth:`log_likelihood_and_grad`.
        """
        log_lik, grads = zip(*(self.log_likelihood_and_grad(theta, X, y) for theta in thetas))
        return np.array(log_lik, dtype=np.float64), np.array(grads, dtype=np.float64)

    def log_prior_particles(self, thetas):
        """Log prior density of each particle, shape ``(M,)``; loops over :meth:`log_prior` by default."""
        return np.array([self.log_prior(theta) for theta in thetas], dtype=np.float64)

    def grad_log_prior_particles(self, thetas):
        """Gradient of the log prior of each particle, shape ``(M, n_params)``; loops by default."""
        return np.array([self.grad_log_prior(theta) for theta in thetas], dtype=np.float64)

    def sample_prior(self, rng, size=None):
        """Exact draws from the prior.

        Parameters
        ----------
        rng : numpy.random.Generator
            Source of randomness.
        size : int or None
            Number of draws; ``None`` for a single draw of shape ``(n_params,)``.

        Returns
        -------
        theta : ndarray of shape (n_params,) or (size, n_params)
        """
        raise TypeError(f"{type(self).__name__} cannot sample its prior exactly; override sample_prior (and set "
                        "exact_prior_sampling = True) or initial_params.")

    def initial_params(self, rng):
        """Starting point of the first chain; a prior draw by default."""
        return self.sample_prior(rng)

    def chain_runner(self, X, y, *, sampler, batch_size):
        """Return a model-specific chain runner, or ``None`` for the generic one.

        This is the seam between the STI driver and a model. ``None`` (the
        default) makes the driver use
        :class:`~skevidence.evidence.GradientChainRunner`, which drives a
        :mod:`~skevidence.samplers` sampler with minibatches of rows through
        :meth:`log_likelihood_and_grad`. A model with a fused kernel (a whole
        chain in one numba call) returns its own object with the same
        ``initial_state`` and ``run`` methods; the driver does not change.
        """
        return None


class GaussianPriorModel(EvidenceModel):
    """A model whose parameters are independent ``N(prior_mean, prior_var)`` a priori, sampled exactly."""

    exact_prior_sampling = True
    prior_mean = 0.0

    def log_prior_particles(self, thetas):
        d = np.atleast_2d(thetas) - self.prior_mean
        sq = np.einsum("ij,ij->i", d, d)
        return -0.5 * (self.n_params * (LOG_2PI + np.log(self.prior_var)) + sq / self.prior_var)

    def grad_log_prior_particles(self, thetas):
        return -(np.atleast_2d(thetas) - self.prior_mean) / self.prior_var

    def sample_prior(self, rng, size=None):
        shape = self.n_params if size is None else (size, self.n_params)
        return self.prior_mean + np.sqrt(self.prior_var) * rng.standard_normal(shape)
