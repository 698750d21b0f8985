"""STI on Poisson NMF with log-space SGLD against the rank-1 closed form."""

import numpy as np
import pytest
from poisson_nmf_exact import rank1_log_evidence

from skevidence import PoissonNMF, sti_log_evidence
from skevidence.models import GaussianAdditive, PoissonNMFModel


def _rank1_data(seed):
    rng = np.random.default_rng(seed)
    return rng.poisson(2 * np.outer(rng.exponential(size=30), rng.exponential(size=20))).astype(float)


@pytest.mark.slow
@pytest.mark.parametrize("offset", [0, 1, 2])
def test_log_space_sti_matches_rank1_closed_form(seed, offset):
    X = _rank1_data(seed + offset)
    nmf = PoissonNMF(1, n_blocks=3, sampler="logsgld", temperatures=40, n_samples=6000, n_burnin=2000,
                     random_state=seed + offset).fit(X)
    exact = rank1_log_evidence(X, 1.0, 1.0)
    assert abs(nmf.log_evidence_ - exact) <= 4 * nmf.log_evidence_std_
    assert nmf.log_evidence_std_ < 2e-3 * abs(exact)


def test_log_space_needs_positive_parameters():
    with pytest.raises(ValueError, match="needs every parameter to be positive"):
        sti_log_evidence(GaussianAdditive(1), np.ones(10), sampler="logsgld", n_samples=20, n_burnin=5)


def test_functional_core_with_log_space_sampler():
    X = _rank1_data(0)
    result = sti_log_evidence(PoissonNMFModel(1, n_blocks=3), X, sampler="logsgld", temperatures=4,
                              n_samples=200, n_burnin=50, random_state=0)
    assert np.isfinite(result.log_evidence)
    assert result.diagnostics["step_size"][-1] == pytest.approx(0.01)
