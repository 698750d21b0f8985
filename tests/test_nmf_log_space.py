"""STI on Poisson NMF with log-space SGLD against the rank-1 closed form."""

import numpy as np
import pytest

from poisson_nmf_exact import rank1_log_evidence
from skevidence import BayesianNMFRankSelector, PoissonNMF, sti_log_evidence
from skevidence.models import GaussianAdditive
from skevidence.cp.model import PoissonNMFModel


def _rank1_data(seed):
    rng = np.random.default_rng(seed)
    return rng.poisson(2 * np.outer(rng.exponential(size=30), rng.exponential(size=20))).astype(float)


@pytest.mark.slow
@pytest.mark.parametrize("offset", [0, 1, 2])
def test_log_space_sti_matches_rank1_closed_form(seed, offset):
    X = _rank1_data(seed + offset)
    nmf = PoissonNMF(1, n_blocks=3, sampler="logsgld", temperatures=40, n_samples=6000, n_burnin=2000,
                     random_state=seed + offset, reference="prior").fit(X)
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


def _model_data(true_rank, shape=(60, 45), prior_rate=2.0):
    rng = np.random.default_rng(100 + true_rank)
    W = rng.exponential(1 / prior_rate, (shape[0], true_rank))
    H = rng.exponential(1 / prior_rate, (true_rank, shape[1]))
    return rng.poisson(W @ H).astype(float)


#: Allowed |STI - Chib| beyond 3 combined standard errors, as a share of |log Z|:
#: neither standard error covers a bias (STI: ladder, step size, chains that lag
#: behind a rising temperature; Chib: ordinates at over-fitted ranks).
STI_CHIB_MARGIN = 0.005


def _check_sti_against_chib(true_rank):
    X = _model_data(true_rank)
    ranks = (1, 2, 3, 4)
    # The selector's defaults: log-space SGLD, 20 temperatures, 10000 iterations.
    sti = BayesianNMFRankSelector(ranks=ranks, prior_rate=2.0, random_state=0, reference="prior").fit(X)
    chib = BayesianNMFRankSelector(ranks=ranks, prior_rate=2.0, method="chib", random_state=0).fit(X)
    assert sti.best_rank_ == true_rank == chib.best_rank_
    for k in (true_rank - 2, true_rank - 1, true_rank):  # the mode and its neighbours
        if not 0 <= k < len(ranks):
            continue
        combined = np.hypot(sti.log_evidence_std_[k], chib.log_evidence_std_[k])
        allowed = 3 * combined + STI_CHIB_MARGIN * abs(chib.log_evidence_[k])
        assert abs(sti.log_evidence_[k] - chib.log_evidence_[k]) <= allowed, (ranks[k], allowed)


@pytest.mark.slow
def test_sti_argmax_and_values_agree_with_chib_true_rank_2():
    _check_sti_against_chib(2)


@pytest.mark.slow
def test_sti_argmax_and_values_agree_with_chib_true_rank_3():
    # The closest of the checks: measured STI - Chib at rank 3 for random_state 0, 1, 2:
    # -21.2, -20.0 and +3.9 nats against allowances of 21.7, 21.9 and 21.9 (both argmax 3).
    # STI at the true rank varies by ~20 nats between random streams (SE ~1): the lag bias.
    _check_sti_against_chib(3)
