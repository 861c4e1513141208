"""Spectral methods on comparison data: Markov chains on the items and their stationary
distributions (Rank Centrality, Negahban, Oh & Shah 2017; the Rasch spectral estimator of
Nguyen & Zhang builds on the same pieces).

All functions take one replicate's matrices and are jit- and vmap-compatible; the dense
solve is :func:`dpsim.linalg.solve`, which stays unbatched under ``vmap`` on CPU (the
batched LAPACK call deadlocks XLA:CPU, dpsim issue 7).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from dpsim.linalg import solve


def rank_centrality_transition(W, d):
    """The Rank-Centrality transition matrix (cai spec §5.6 step 2; Negahban, Oh & Shah).

    P_ij = W_ji/d for i ≠ j (the walk moves from i towards the items that beat it) and
    P_ii = 1 − Σ_{j≠i} P_ij. With one comparison per observed pair, W_ji = 1{(i, j) ∈ 𝒢 and
    j beat i}.

    Args:
        W: (n, n) win counts, W[i, j] = times i beat j.
        d: scalar normaliser; must exceed every item's number of losses.
    Returns:
        (n, n) row-stochastic matrix.
    """
    n = W.shape[0]
    off = jnp.where(jnp.eye(n, dtype=bool), 0.0, W.T / d)
    return off + jnp.diag(1.0 - off.sum(axis=1))


def stationary_distribution(P):
    """π with πᵀP = πᵀ, 1ᵀπ = 1 (cai spec §5.6 step 3), for an irreducible chain.

    Args:
        P: (n, n) row-stochastic matrix of an irreducible chain.
    Returns:
        (n,) stationary distribution.

    Solved directly: πᵀ(I − P + 11ᵀ) = 1ᵀ, a non-singular system when P is irreducible
    (one dense solve; no non-symmetric eigendecomposition, which JAX lacks on GPU). The
    solve is :func:`dpsim.linalg.solve`, which stays unbatched under ``vmap`` on CPU.
    """
    n = P.shape[0]
    A = jnp.eye(n) - P + jnp.ones((n, n))
    return solve(A.T, jnp.ones((n,)))


def ergodicity_coefficient(P, batch_size: int = 16):
    """Dobrushin's coefficient ρ = ½ max_{i,i'} Σ_l |P_il − P_i'l| (cai spec §5.6 step 4).

    Row by row (``lax.map``) so memory stays O(n²) instead of O(n³).

    Args:
        P: (n, n) row-stochastic matrix.
    Returns:
        scalar ρ ∈ [0, 1].
    """
    def row(p_i):
        return jnp.max(jnp.sum(jnp.abs(p_i[None, :] - P), axis=1))

    return 0.5 * jnp.max(jax.lax.map(row, P, batch_size=batch_size))
