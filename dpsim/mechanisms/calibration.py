"""Noise calibrations, one function per mechanism, each citing its paper.

ε = ∞ (the non-private grid value) is allowed everywhere and gives zero noise.
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from dpsim.models.links import LOGISTIC, Link


class EdgePerturbation(NamedTuple):
    """Algorithm 1 parameters: Laplace scale λ of w and ridge γ."""

    lam: jnp.ndarray
    gamma: jnp.ndarray


def edge_objective_perturbation(eps, n_items, p, c0=2.0, link: Link = LOGISTIC) -> EdgePerturbation:
    """Algorithm 1 under edge DP (cai Prop 2.1 and Thm 2.1, spec §5.1).

    λ = 8κ1/ε and γ = max(4κ2/ε, c0·√(n p log n)).  Prop 2.1 needs λ ≥ 8κ1/ε and
    γ ≥ 4κ2/ε for (ε, 0)-edge DP; Thm 2.1 takes γ = c0√(np log n) (the authors' code uses
    c0 = 2). At ε = ∞, λ = 0 and γ = c0√(np log n) (the paper's non-private curve keeps γ).
    """
    eps = jnp.asarray(eps, jnp.float64)
    lam = 8.0 * link.kappa1 / eps
    gamma = jnp.maximum(4.0 * link.kappa2 / eps, c0 * jnp.sqrt(n_items * p * jnp.log(n_items)))
    return EdgePerturbation(lam=lam, gamma=gamma)


def edge_count_noise_scale(eps):
    """Algorithm 2 (cai §5.3): Laplace(2/ε) on the win counts; 2 is the ℓ1 sensitivity of
    (N_1, …, N_n) when one comparison outcome flips or one edge moves."""
    return 2.0 / jnp.asarray(eps, jnp.float64)
