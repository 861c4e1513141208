"""Shared setup of the cai estimator tests: Algorithm 1 end to end, the mechanism's release
(:mod:`dpsim.mechanisms.btl_perturbation`) fitted by its estimator, as the experiments compose
them (tests of the objective, the calibration or the guard call the pieces themselves)."""

from __future__ import annotations

import dpsim  # noqa: F401  (float64 before any array is created)
from dpsim.estimators import guarded_perturbed_mle, perturbed_mle
from dpsim.mechanisms import objective_perturbation_edge, objective_perturbation_individual


def alg1_edge(key, W, eps, p, *, c0=2.0, n_items=None, M=None):
    """cai Algorithm 1 under edge DP: the release (γ, w) drawn from ``key`` with W's capacity, then θ̃."""
    return perturbed_mle(
        W, objective_perturbation_edge(key, eps, p, W.shape[0], c0=c0, n_items=n_items), M=M
    )


def alg1_individual(key, W, eps, per_user):
    """cai Algorithm 1 under individual DP: the release (γ, w) drawn from ``key``, then the guarded θ̃."""
    return guarded_perturbed_mle(
        W, objective_perturbation_individual(key, eps, per_user, W.shape[0])
    )
