"""The one-shot private top-k baseline of Qiao, Su & Zhang [40] on Rank-Centrality scores,
exactly as cai's authors implemented it for their Fig. 4 (docs/cai.md, Mechanisms and estimators; Experiments as run; Errata and modes (E13)).

Steps (docs/cai.md, Mechanisms and estimators): d = np; Rank-Centrality transition matrix P; its stationary
distribution π; the data-dependent ergodicity coefficient ρ_erg of P (not privatised, as in
the authors' code); π + Laplace(λ_os) with λ_os = 8·s·√(k log(n/δ))/ε, s = 2/(dL(1 − ρ_erg)),
δ = 1/n², L = 1. Top-k of the noisy scores is then taken by :func:`top_k_mask`.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from dpsim.mechanisms.calibration import one_shot_noise_scale
from dpsim.estimators.spectral import (ergodicity_coefficient, rank_centrality_transition,
                                        stationary_distribution)
from dpsim.mechanisms.laplace import laplace_noise


class OneShotScores(NamedTuple):
    """Noisy scores π + Laplace(λ_os), and the pieces: π, ρ_erg, λ_os."""

    scores: jax.Array
    stationary: jax.Array
    ergodicity: jax.Array
    noise_scale: jax.Array


def one_shot_scores(key, W, eps, k, p, *, per_user=1.0, delta=None) -> OneShotScores:
    """One-shot Laplace top-k scores of [40] on Rank-Centrality, as in cai's code (docs/cai.md, Mechanisms and estimators).

    d = n·p; P = :func:`rank_centrality_transition`; π = :func:`stationary_distribution`;
    ρ_erg = :func:`ergodicity_coefficient`; scores = π + Laplace(λ_os)^n with λ_os from
    :func:`one_shot_noise_scale` (δ = 1/n² by default). The authors claim (ε, δ)-DP; ρ_erg is
    computed from the data, so the calibration itself is not private (docs/cai.md, Errata and modes (E13)).
    """
    n = W.shape[0]
    d = n * jnp.asarray(p, jnp.float64)
    P = rank_centrality_transition(W, d)
    pi = stationary_distribution(P)
    rho = ergodicity_coefficient(P)
    scale = one_shot_noise_scale(rho, d, k, n, eps, per_user, delta)
    return OneShotScores(pi + laplace_noise(key, scale, (n,)), pi, rho, scale)
