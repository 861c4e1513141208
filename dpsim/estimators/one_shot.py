"""The statistics of the one-shot private top-k baseline of Qiao, Su & Zhang [40] on Rank-Centrality
scores, exactly as cai's authors implemented it for their Fig. 4 (docs/cai.md, Mechanisms and estimators; Experiments as run; Errata and modes (E13)).

Steps (docs/cai.md, Mechanisms and estimators): d = np; Rank-Centrality transition matrix P; its stationary
distribution π; the data-dependent ergodicity coefficient ρ_erg of P (not privatised, as in
the authors' code). The release π + Laplace(λ_os) is :func:`dpsim.mechanisms.one_shot.one_shot_scores`;
top-k of the noisy scores is then taken by :func:`top_k_mask`.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from dpsim.estimators.spectral import (
    ergodicity_coefficient,
    rank_centrality_transition,
    stationary_distribution,
)


class RankCentrality(NamedTuple):
    """π of the Rank-Centrality chain, its ergodicity coefficient ρ_erg and the degree d = np."""

    stationary: jax.Array
    ergodicity: jax.Array
    degree: jax.Array


def one_shot_statistics(W, p) -> RankCentrality:
    """The non-private statistics the one-shot release perturbs (docs/cai.md, Mechanisms and estimators).

    d = n·p; P = :func:`rank_centrality_transition`; π = :func:`stationary_distribution`;
    ρ_erg = :func:`ergodicity_coefficient`.

    Args: W: (n, n) win counts; p: edge probability. Returns: :class:`RankCentrality`.
    """
    d = W.shape[0] * jnp.asarray(p, jnp.float64)
    P = rank_centrality_transition(W, d)
    return RankCentrality(stationary_distribution(P), ergodicity_coefficient(P), d)
