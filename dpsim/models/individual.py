"""Per-user BTL comparison data: the individual-DP model of cai §3.1.

m users (``n_users``) each make L draws (``per_user``); in each draw a user picks an
unordered pair {i, j} uniformly from all C(n, 2) pairs, **with replacement**, and records
that i won with probability F(θ_i − θ_j). Draws are independent across users and draws.

Only the aggregated win-count matrix W is needed by the cai estimators, and it depends on
the users only through the pair counts, so :func:`sample_user_comparisons` draws the
sufficient statistics directly (DESIGN: performance):

    M  ~ Multinomial(mL; uniform over the C(n, 2) pairs),
    W_ij | M ~ Binomial(M_ij, F(θ_i − θ_j)) for i < j,   W_ji = M_ij − W_ij.

This is exactly the law of Σ_a Σ_l (per-draw win indicators): given the pair of each draw
the outcomes are independent Bernoulli(F(θ_i − θ_j)), so the wins on a pair are binomial in
the number of its draws. The multinomial is drawn exactly by binary splitting: the count of
a block of pairs is split between its two halves by a Binomial with success probability
(pairs in the left half)/(pairs in the block). There are ⌈log₂ C(n, 2)⌉ levels, each one
vectorised binomial draw, and the total mL may be a traced value (it enters only as a
binomial count), so ``n_users`` and ``per_user`` need not be static.

:func:`sample_user_comparisons_per_user` keeps the per-user draws (static m and L), for
tests and per-user adjacency audits (docs/cai.md, Errata and modes (E18)).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpsim.models.links import LOGISTIC, Link
from dpsim.validate import require_int


def n_pairs(n_items: int) -> int:
    """C(n, 2), the number of unordered pairs."""
    return n_items * (n_items - 1) // 2


def pair_index(n_items: int) -> tuple[jax.Array, jax.Array]:
    """(i, j) with i < j of every unordered pair, in ``jnp.triu_indices(n, 1)`` order."""
    return jnp.triu_indices(n_items, 1)


def _splitting_tables(n_cells: int) -> tuple[np.ndarray, np.ndarray]:
    """Static tables of the binary splitting of :func:`uniform_multinomial`.

    The cells are the leaves 0..n_cells−1 of a binary tree padded to Q = 2^depth leaves
    (padding leaves have probability 0). At level l the count of each block of width
    w = Q/2^l sits at the block's first leaf; ``fractions[l, s]`` is, for a block starting
    at s, the share of its real leaves in its left half (0 elsewhere), and ``shifts[l]`` = w/2
    is where the right half's count goes.
    """
    depth = max(1, int(np.ceil(np.log2(n_cells))))
    size = 2**depth
    fractions = np.zeros((depth, size))
    shifts = np.zeros((depth,), dtype=np.int32)
    for level in range(depth):
        width = size >> level
        starts = np.arange(0, size, width)
        total = np.clip(n_cells - starts, 0, width)
        left = np.clip(n_cells - starts, 0, width // 2)
        fractions[level, starts] = np.where(total > 0, left / np.maximum(total, 1), 0.0)
        shifts[level] = width // 2
    return fractions, shifts


def _split_and_bernoulli(key, total, n_cells: int, success_prob):
    """Multinomial splitting of ``total`` into ``n_cells`` uniform cells, then one more
    binomial thinning of every cell with probability ``success_prob`` (shape (n_cells,)).

    All ⌈log₂ n_cells⌉ + 1 binomial draws run in one ``lax.scan`` over fixed-size arrays, so
    the (expensive to compile) binomial sampler is compiled once. Returns (cell counts,
    thinned counts).
    """
    fractions, shifts = _splitting_tables(n_cells)
    size = fractions.shape[1]
    last = jnp.zeros((size,)).at[:n_cells].set(success_prob)
    probs = jnp.concatenate([jnp.asarray(fractions), last[None, :]])
    shifts = jnp.concatenate([jnp.asarray(shifts), jnp.zeros((1,), jnp.int32)])
    counts = jnp.zeros((size,)).at[0].set(jnp.asarray(total, jnp.float64))

    def step(counts, args):
        level, prob, shift = args
        left = jax.random.binomial(jax.random.fold_in(key, level), counts, prob)
        left = jnp.where(counts > 0, left, 0.0)
        return left + jnp.roll(counts - left, shift), left

    levels = jnp.arange(probs.shape[0])
    counts, drawn = jax.lax.scan(step, counts, (levels, probs, shifts))
    return counts[:n_cells], drawn[-1, :n_cells]


def uniform_multinomial(key: jax.Array, total, n_cells: int) -> jax.Array:
    """Exact Multinomial(total; uniform over ``n_cells`` cells) by binary binomial splitting.

    ``total`` may be traced (a float or int holding a non-negative integer). Returns float64
    counts of shape (n_cells,) summing to ``total``.
    """
    return _split_and_bernoulli(key, total, n_cells, jnp.zeros((n_cells,)))[0]


def sample_user_comparisons(
    key: jax.Array, theta: jax.Array, n_users, per_user, link: Link = LOGISTIC
) -> jax.Array:
    """Aggregated win-count matrix W of the individual-DP model (cai §3.1), drawn directly.

    M ~ Multinomial(n_users·per_user, uniform over C(n, 2) pairs) and, for i < j,
    W_ij ~ Binomial(M_ij, F(θ_i − θ_j)), W_ji = M_ij − W_ij (module docstring). ``n_users``
    and ``per_user`` may be traced. Returns float64 W of shape (n, n) with zero diagonal.
    Raises ValueError for concrete ``n_users`` or ``per_user`` < 1.
    """
    require_int(n_users, "n_users", 1)
    require_int(per_user, "per_user", 1)
    n = theta.shape[0]
    i, j = pair_index(n)
    total = jnp.asarray(n_users, jnp.float64) * jnp.asarray(per_user, jnp.float64)
    m_pairs, wins = _split_and_bernoulli(key, total, n_pairs(n), link.cdf(theta[i] - theta[j]))
    return jnp.zeros((n, n)).at[i, j].set(wins).at[j, i].set(m_pairs - wins)


class UserComparisons(NamedTuple):
    """Per-user draws: ``first``/``second`` (m, L) item indices with first < second, and
    ``first_wins`` (m, L) bool, True when ``first`` was preferred."""

    first: jax.Array
    second: jax.Array
    first_wins: jax.Array


def sample_user_comparisons_per_user(
    key: jax.Array, theta: jax.Array, n_users: int, per_user: int, link: Link = LOGISTIC
) -> UserComparisons:
    """Per-user comparisons of the individual-DP model (cai §3.1), one draw at a time.

    Each of the m·L draws picks a pair index uniformly from C(n, 2) (with replacement) and
    an outcome Bernoulli(F(θ_i − θ_j)); ``n_users`` and ``per_user`` are static shapes.
    :func:`aggregate_user_comparisons` turns the result into W.
    """
    n = theta.shape[0]
    k_pairs, k_wins = jax.random.split(key)
    i, j = pair_index(n)
    idx = jax.random.randint(k_pairs, (n_users, per_user), 0, n_pairs(n))
    first, second = i[idx], j[idx]
    first_wins = jax.random.uniform(k_wins, (n_users, per_user)) < link.cdf(
        theta[first] - theta[second]
    )
    return UserComparisons(first, second, first_wins)


def aggregate_user_comparisons(data: UserComparisons, n_items: int) -> jax.Array:
    """W_ij = number of draws (over all users) in which i beat j (cai §3.1, aggregation)."""
    winner = jnp.where(data.first_wins, data.first, data.second).reshape(-1)
    loser = jnp.where(data.first_wins, data.second, data.first).reshape(-1)
    return jnp.zeros((n_items, n_items)).at[winner, loser].add(1.0)
