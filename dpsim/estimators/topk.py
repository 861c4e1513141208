"""Top-k selection with random tie-breaking (cai §10.10)."""
import jax
import jax.numpy as jnp


def top_k_mask(key, scores, k, tie_tol: float = 0.0):
    """Boolean mask of the k largest scores; ties are broken uniformly at random.

    Sorting by (−score, U) with U i.i.d. uniform gives every tied item the same chance of
    selection (a stable or index-ordered sort would favour low or high indices, the
    artefact in the paper's ε = ∞ counting curve). ``k`` may be traced.

    ``tie_tol`` > 0 rounds scores to that grid first, so scores that are mathematically
    equal but were computed by an iterative solver (e.g. the penalised MLE of items with
    equal win counts on a complete graph, equal up to ~1e-17) count as ties instead of
    being ordered by rounding error.
    """
    n = scores.shape[0]
    if tie_tol > 0:
        scores = jnp.round(scores / tie_tol)
    jitter = jax.random.uniform(key, (n,))
    order = jnp.lexsort((jitter, -scores))
    ranks = jnp.empty((n,), jnp.int32).at[order].set(jnp.arange(n, dtype=jnp.int32))
    return ranks < k
