"""Top-k selection with random tie-breaking (cai §10.10)."""
import jax
import jax.numpy as jnp

from dpsim.validate import require_int

def tie_broken_ranks(scores, jitter, real=None):
    """Rank (0 = first) of each item in the order (−score, jitter, index); NaN scores last,
    and padding entries (``real`` False) after every real item.

    This is the position ``jnp.lexsort((jitter, -scores))`` gives (lexsort is stable, so the
    index breaks exact jitter ties).

    Always a sort. Counting ranks pairwise (``s[None, :] > s[:, None]``) was 7× faster at
    n = 40 but is wrong inside compiled code on XLA:CPU (jaxlib 0.10.2): when ``scores`` is
    computed in the same program, the new CPU fusion emitters may evaluate its two broadcast
    copies with different roundings (one ulp), so an item can count itself, or both members
    of a tie each other, as ranked before it, and a top-k mask then holds k − 1 items
    (found in nguyen's top-K experiment: 40% of the m = 100 replicates; reproduced with
    ``s = log(x); s - s.mean()`` inside ``lax.map``; ``optimization_barrier`` does not
    prevent it, ``XLA_FLAGS=--xla_cpu_use_fusion_emitters=false`` does). A sort reads each
    score once. ``tests/test_metrics.py`` keeps that reproduction.

    Args:
        scores: ``(n,)`` float scores (larger is better).
        jitter: ``(n,)`` tie-breaking keys (smaller first among equal scores).
        real: ``(n,)`` bool, the real items of a padded vector (None: all).
    Returns:
        ``(n,)`` int32 ranks, a permutation of 0 … n − 1.
    """
    n = scores.shape[0]
    nan = jnp.isnan(scores)
    keys = (jitter, -jnp.where(nan, 0.0, scores), nan) + (() if real is None else (~real,))
    order = jnp.lexsort(keys)
    return jnp.empty((n,), jnp.int32).at[order].set(jnp.arange(n, dtype=jnp.int32))


def top_k_mask(key, scores, k, tie_tol: float = 0.0, real=None):
    """Boolean mask of the k largest scores; ties are broken uniformly at random.

    Ordering by (−score, U) with U i.i.d. uniform gives every tied item the same chance of
    selection (a stable or index-ordered sort would favour low or high indices, the
    artefact in the paper's ε = ∞ counting curve). ``k`` may be traced.

    ``tie_tol`` > 0 rounds scores to that grid first, so scores that are mathematically
    equal but were computed by an iterative solver (e.g. the penalised MLE of items with
    equal win counts on a complete graph, equal up to ~1e-17) count as ties instead of
    being ordered by rounding error.

    ``real``: (n,) bool, the real items of a padded score vector: padding is never
    selected, and the jitter of the real items is the unpadded call's (1-D draws are
    prefix-stable), so the mask of the real items is the unpadded mask.
    """
    n = scores.shape[0]
    require_int(k, "k", 0, n)
    if tie_tol > 0:
        scores = jnp.round(scores / tie_tol)
    jitter = jax.random.uniform(key, (n,))
    return tie_broken_ranks(scores, jitter, real) < k
