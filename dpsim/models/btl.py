"""BTL-type comparison data on an Erdős–Rényi graph, and θ* designs.

cai §3.1 (edge-DP model): each pair {i, j} is compared once with probability p;
the outcome is Y_ij ~ Bernoulli(F(θ_i − θ_j)). Only the win-count matrix
W (W_ij = A_ij·Y_ij, W + Wᵀ = A) is returned: it is the sufficient statistic of
every cai estimator (DESIGN: draw sufficient statistics directly).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from dpsim.models.links import LOGISTIC, Link


def top_k_size(n_items: int) -> int:
    """k = round_half_even(n/4), the paper's top-k size (cai §3.4, R's ``round``)."""
    return int(round(n_items / 4))


def centre(theta: jax.Array) -> jax.Array:
    """θ − mean(θ)·1: the identifiable representative (1ᵀθ* = 0)."""
    return theta - jnp.mean(theta)


def theta_cai_design(key: jax.Array, n_items: int, k: int | None = None,
                     top_first: bool = False) -> jax.Array:
    """The paper's θ* design (cai §4.1.1 and §3.4), centred.

    e^{θ_i} = 1 for the k top items and e^{θ_i} ~ Unif(0.2, 0.7) otherwise, k = round(n/4).
    The edge-DP code puts the top items last (``top_first=False``); the individual-DP code
    puts them first.
    """
    k = top_k_size(n_items) if k is None else k
    rest = jnp.log(jax.random.uniform(key, (n_items - k,), minval=0.2, maxval=0.7))
    top = jnp.zeros((k,))
    theta = jnp.concatenate([top, rest] if top_first else [rest, top])
    return centre(theta)


def theta_uniform(key: jax.Array, n_items: int, low: float = -1.0, high: float = 1.0) -> jax.Array:
    """θ_i i.i.d. Uniform(low, high), centred."""
    return centre(jax.random.uniform(key, (n_items,), minval=low, maxval=high))


def theta_evenly_spaced(n_items: int, low: float = -1.0, high: float = 1.0) -> jax.Array:
    """θ evenly spaced on [low, high] (item n−1 best), centred."""
    return centre(jnp.linspace(low, high, n_items))


def theta_two_block(n_items: int, k: int, gap: float, link: Link = LOGISTIC) -> jax.Array:
    """Two-block instance of cai §3.5 realised parametrically: θ = α on the top k items
    (the last k indices), β elsewhere, with F(α − β) = 1/2 + gap, centred."""
    if link is not LOGISTIC:
        raise ValueError("theta_two_block is implemented for the logistic link only")
    diff = jnp.log((0.5 + gap) / (0.5 - gap))  # logit(1/2 + Δ)
    theta = jnp.where(jnp.arange(n_items) >= n_items - k, diff, 0.0)
    return centre(theta)


def true_top_k_mask(theta: jax.Array, k) -> jax.Array:
    """Boolean mask of the k largest θ* (stable order; designs here have no tie at the boundary)."""
    order = jnp.argsort(-theta, stable=True)
    ranks = jnp.empty_like(order).at[order].set(jnp.arange(theta.shape[0]))
    return ranks < k


def sample_er_comparisons(key: jax.Array, theta: jax.Array, p, link: Link = LOGISTIC) -> jax.Array:
    """Win-count matrix of one comparison per edge of G(n, p) with BTL-type outcomes.

    cai §3.1: A_ij ~ Bernoulli(p) for i < j; Y_ij ~ Bernoulli(F(θ_i − θ_j));
    W_ij = A_ij Y_ij, W_ji = A_ij (1 − Y_ij). Returns float64 W of shape (n, n).
    """
    n = theta.shape[0]
    k_edge, k_out = jax.random.split(key)
    upper = jnp.triu(jnp.ones((n, n), dtype=bool), k=1)
    edges = upper & jax.random.bernoulli(k_edge, p, (n, n))
    prob_i_wins = link.cdf(theta[:, None] - theta[None, :])
    i_wins = jax.random.uniform(k_out, (n, n)) < prob_i_wins
    upper_wins = (edges & i_wins).astype(jnp.float64)
    upper_losses = (edges & ~i_wins).astype(jnp.float64)
    return upper_wins + upper_losses.T
