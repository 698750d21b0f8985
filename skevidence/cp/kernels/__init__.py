"""Numba kernels of the CP family, one concept a module.

:mod:`~skevidence.cp.kernels.passes` (the likelihood's passes over the data),
:mod:`~skevidence.cp.kernels.hmc` (the Metropolis-adjusted HMC ladder of
referenced TI), :mod:`~skevidence.cp.kernels.sgmcmc` (the papers'
block-parallel SG-MCMC chains), :mod:`~skevidence.cp.kernels.gibbs` (latent-source
Gibbs sweeps), :mod:`~skevidence.cp.kernels.smc` (the count-arrival SMC's
moves and weights), :mod:`~skevidence.cp.kernels.assignment` (the matching
of components), :mod:`~skevidence.cp.kernels.fastexp` (a vectorised
exponential) and :mod:`~skevidence.cp.kernels.rng` (per-block random
streams). The kernels take validated, C-contiguous float64 arrays and know
nothing of estimators or evidence methods.
"""
