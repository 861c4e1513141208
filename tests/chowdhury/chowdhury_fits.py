"""Shared setup of the chowdhury estimator tests (test_chowdhury_estimators.py and
test_chowdhury_identities.py): the exact estimators jitted once (objective perturbation end to
end: the mechanism's release, then its minimiser), a fixed θ* in dimension D, and seeded draws of
the linear-BTL data and of its randomized-response labels."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import dpsim  # noqa: F401  (float64 before any array is created)
from dpsim.estimators import linear_btl
from dpsim.mechanisms.objective_perturbation import gaussian_objective_perturbation
from dpsim.mechanisms.randomized_response import randomized_response
from dpsim.models.linear_btl import sample_linear_btl

D = 4
THETA = jnp.asarray([1.0, -0.5, 0.3, -0.8])

# jitted once per shape: eager calls would compile every while_loop separately
mle = jax.jit(linear_btl.mle, static_argnames=("sum_zero",))
rr_debiased = jax.jit(linear_btl.rr_debiased, static_argnames=("sum_zero",))
rr_naive_mle = jax.jit(linear_btl.rr_naive_mle, static_argnames=("solver", "sum_zero", "max_iter"))


def _alg2(
    key, x, y, eps, delta, radius, *, beta=None, feature_bound=None, privacy="label", sum_zero=False
):
    """chowdhury Algorithm 2: the release (w, σ, β, L) drawn from ``key``, then θ̂_obj."""
    release = gaussian_objective_perturbation(
        key, x, eps, delta, radius, beta=beta, feature_bound=feature_bound, privacy=privacy
    )
    return linear_btl.objective_perturbation(x, y, release, radius, sum_zero=sum_zero)


alg2 = jax.jit(_alg2, static_argnames=("privacy", "sum_zero"))


def draw_data(n, seed=0, theta=THETA):
    """n linear-BTL comparisons (features x, labels y) drawn from ``theta`` (seeded)."""
    return sample_linear_btl(jax.random.key(seed), theta, n)


def draw_rr(y, eps, seed=1):
    """The labels ``y`` privatised by ε-randomized response (seeded)."""
    return randomized_response(jax.random.key(seed), y, eps)
