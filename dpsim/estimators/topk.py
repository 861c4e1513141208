"""Top-k selection with random tie-breaking (cai §10.10)."""
import jax
import jax.numpy as jnp

from dpsim.validate import require_int

# Up to this many items the ranks are counted pairwise (O(n²) comparisons, fused
# elementwise); above it they come from a sort. Both give the same ranks. Measured per call
# (vmapped, 2-core CPU, benchmarks/cai.py section T): n = 40: sort 5.4 µs, pairwise
# 0.7 µs; n = 100: 16.9 vs 4.7; n = 300: 63 vs 47 (70 vs 77 in another run: the crossover);
# n = 1000: 251 vs 1538 µs.
PAIRWISE_RANK_MAX_N = 128


def tie_broken_ranks(scores, jitter):
    """Rank (0 = first) of each item in the order (−score, jitter, index).

    The rank of i counts the items j before it: s_j > s_i, or s_j = s_i and (u_j < u_i, or
    u_j = u_i and j < i); NaN scores come after all others. This is the position ``jnp.lexsort((jitter, -scores))`` gives
    (lexsort is stable, so index breaks exact jitter ties); small n counts it pairwise, large
    n sorts (``PAIRWISE_RANK_MAX_N``).
    """
    n = scores.shape[0]
    if n > PAIRWISE_RANK_MAX_N:
        order = jnp.lexsort((jitter, -scores))
        return jnp.empty((n,), jnp.int32).at[order].set(jnp.arange(n, dtype=jnp.int32))
    nan = jnp.isnan(scores)                 # the sort puts NaN scores last
    scores = jnp.where(nan, 0.0, scores)
    index = jnp.arange(n)
    s_i, s_j = scores[:, None], scores[None, :]
    u_i, u_j = jitter[:, None], jitter[None, :]
    n_i, n_j = nan[:, None], nan[None, :]
    tie_break = (u_j < u_i) | ((u_j == u_i) & (index[None, :] < index[:, None]))
    before = (n_j < n_i) | ((n_j == n_i) & ((s_j > s_i) | ((s_j == s_i) & tie_break)))
    return jnp.sum(before, axis=1, dtype=jnp.int32)


def top_k_mask(key, scores, k, tie_tol: float = 0.0):
    """Boolean mask of the k largest scores; ties are broken uniformly at random.

    Ordering by (−score, U) with U i.i.d. uniform gives every tied item the same chance of
    selection (a stable or index-ordered sort would favour low or high indices, the
    artefact in the paper's ε = ∞ counting curve). ``k`` may be traced.

    ``tie_tol`` > 0 rounds scores to that grid first, so scores that are mathematically
    equal but were computed by an iterative solver (e.g. the penalised MLE of items with
    equal win counts on a complete graph, equal up to ~1e-17) count as ties instead of
    being ordered by rounding error.
    """
    n = scores.shape[0]
    require_int(k, "k", 0, n)
    if tie_tol > 0:
        scores = jnp.round(scores / tie_tol)
    jitter = jax.random.uniform(key, (n,))
    return tie_broken_ranks(scores, jitter) < k
