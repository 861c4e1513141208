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
from dpsim.validate import require, require_int, require_probability


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
    require_int(n_items, "n_items", 2)
    k = top_k_size(n_items) if k is None else k
    require_int(k, "k", 1, n_items - 1)
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
    require_int(k, "k", 1, n_items - 1)
    require("gap", gap, lambda g: (g > 0) & (g < 0.5), "must lie in (0, 1/2): ρ = 1/2 + Δ across blocks")
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
    W_ij = A_ij Y_ij, W_ji = A_ij (1 − Y_ij). Drawn with one uniform U per pair i < j on the
    2^-32 grid (the edge and its outcome together, as :func:`sample_er_win_counts`): i beats j
    when U < p·F(θ_i − θ_j), j beats i when p·F ≤ U < p, no edge when U ≥ p. A quarter of the
    random bits of drawing A and Y separately in float64, and a smaller program to compile.
    ``p`` may be traced. Returns float64 W of shape (n, n).
    Raises ValueError for a concrete p ∉ (0, 1] (a traced p is not checked).
    """
    require_probability(p)
    n = theta.shape[0]
    upper = jnp.triu(jnp.ones((n, n), dtype=bool), k=1)
    u = jax.random.bits(key, (n, n), jnp.uint32).astype(jnp.float64) * (2.0 ** -32)
    p = jnp.asarray(p, jnp.float64)
    threshold = p * link.cdf(theta[:, None] - theta[None, :])
    i_wins = (upper & (u < threshold)).astype(jnp.float64)
    j_wins = (upper & (u >= threshold) & (u < p)).astype(jnp.float64)
    return i_wins + j_wins.T


def _circulant_pairs(n_items: int):
    """Static layout of all C(n, 2) unordered pairs as an (n, ⌊n/2⌋) array.

    Entry (i, d − 1) is the pair {i, (i + d) mod n}, d = 1..⌊n/2⌋: every pair appears once,
    except that for even n the offset n/2 lists each pair twice, so only rows i < n/2 of
    the last column are ``valid``. ``back[i, d − 1] = (i − d) mod n`` is the row whose pair
    has i as its second item.
    """
    import numpy as np

    half = n_items // 2
    rows = np.arange(n_items)[:, None]
    offsets = np.arange(1, half + 1)[None, :]
    second = (rows + offsets) % n_items
    valid = np.ones((n_items, half), dtype=bool)
    if n_items % 2 == 0:
        valid[:, -1] = rows[:, 0] < half
    back = (rows - offsets) % n_items
    return second, valid, back


def sample_er_win_counts(key: jax.Array, theta: jax.Array, p, link: Link = LOGISTIC) -> jax.Array:
    """Win counts N_i = Σ_j W_ij of one comparison per edge of G(n, p) (cai §3.1), drawn
    without forming W: the sufficient statistic of Algorithm 2 (DESIGN: performance).

    Same law as ``sample_er_comparisons(key, theta, p, link).sum(axis=1)`` (not the same
    draws): every unordered pair {i, j} gets one uniform U on the 2^-32 grid, and
    i beats j when U < p·F(θ_i − θ_j), j beats i when p·F(θ_i − θ_j) ≤ U < p, no edge
    otherwise. One 32-bit word per pair instead of two 64-bit draws per ordered pair makes
    it ~8× cheaper in random bits. Probabilities are resolved to 2^-32. ``p`` may be traced.
    Returns float64 counts of shape (n,). Raises ValueError for a concrete p ∉ (0, 1].
    """
    require_probability(p)
    n = theta.shape[0]
    second, valid, back = _circulant_pairs(n)
    if link is LOGISTIC:  # σ(θ_i − θ_j) = a_i/(a_i + a_j): one exp per item, not per pair
        a = jnp.exp(theta - jnp.max(theta))
        first_wins_prob = a[:, None] / (a[:, None] + a[second])
    else:
        first_wins_prob = link.cdf(theta[:, None] - theta[second])
    p = jnp.asarray(p, jnp.float64)
    u = jax.random.bits(key, (n, n // 2), jnp.uint32).astype(jnp.float64) * (2.0 ** -32)
    threshold = p * first_wins_prob
    first_wins = (u < threshold) & valid
    second_wins = (u >= threshold) & (u < p) & valid
    losses = jnp.take_along_axis(second_wins, jnp.asarray(back), axis=0)
    return (first_wins.sum(axis=1) + losses.sum(axis=1)).astype(jnp.float64)
