"""Top-k selection with random tie-breaking (docs/cai.md, Errata and modes (E10))."""

import jax
import jax.numpy as jnp

from dpsim.validate import require_int


def order_key(x):
    """Integer sort key with the order of the float array ``x``: −0 and 0 equal, every NaN equal
    and after +inf (the order :func:`jax.lax.sort` gives floats).

    The float's bits read as a signed integer already order the non-negative floats; the
    negative ones' are reversed by flipping every bit but the sign. Sorting on these keys
    compares integers, where a float key has the comparator canonicalise both operands' zeros
    and NaNs at every comparison.

    Integer and bool arrays are their own keys; 16-bit floats are widened to float32 first.

    Args:
        x: array of any real dtype, any shape.
    Returns:
        integer array of ``x``'s shape (int32 or int64 for floats, the width of ``x``'s dtype).
    """
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return x
    if x.dtype.itemsize < 4:
        x = x.astype(jnp.float32)
    itype = {4: jnp.int32, 8: jnp.int64}[x.dtype.itemsize]
    x = jnp.where(x == 0, jnp.zeros_like(x), x)
    x = jnp.where(jnp.isnan(x), jnp.full_like(x, jnp.nan), x)
    bits = jax.lax.bitcast_convert_type(x, itype)
    return jnp.where(bits < 0, bits ^ jnp.iinfo(itype).max, bits)


def descending_key(scores):
    """Integer keys in the reverse order of ``scores``, NaN last: ``order_key(−scores)`` for
    floats (−NaN is NaN), for integers and bools the bitwise complement of their int64 value
    (it reverses the order with no overflow, where negation would wrap). No key is the largest
    integer of its type, which :func:`tie_broken_ranks` gives the padding, except an int64
    score of −2⁶³ (uint64 scores must be below 2⁶³).

    Args:
        scores: array of any real dtype, any shape.
    Returns:
        integer array of ``scores``'s shape.
    """
    scores = jnp.asarray(scores)
    if jnp.issubdtype(scores.dtype, jnp.floating):
        return order_key(-scores)
    return ~scores.astype(jnp.int64)


def tie_broken_ranks(scores, jitter, real=None):
    """Rank (0 = first) of each item in the order (−score, jitter, index); NaN scores last,
    and padding entries (``real`` False) after every real item, in the order (jitter, index).

    This is the position ``jnp.lexsort((jitter, -scores))`` gives (lexsort is stable, so the
    index breaks exact jitter ties). The sort runs on two integer keys (:func:`order_key`);
    integer comparisons are cheaper than four float keys (jitter, −score, NaN, padding), whose
    comparator canonicalises zeros and NaNs (``benchmarks.cai`` section T times the sort).

    Always a sort. Counting ranks pairwise (``s[None, :] > s[:, None]``) is faster at small
    n but wrong inside compiled code on XLA:CPU (jaxlib 0.10.2): when ``scores`` is
    computed in the same program, the new CPU fusion emitters may evaluate its two broadcast
    copies with different roundings (one ulp), so an item can count itself, or both members
    of a tie each other, as ranked before it, and a top-k mask then holds k − 1 items
    (reproduced with ``s = log(x); s - s.mean()`` inside ``lax.map``; ``optimization_barrier`` does not
    prevent it, ``XLA_FLAGS=--xla_cpu_use_fusion_emitters=false`` does). A sort reads each
    score once. ``tests/library/test_metrics.py`` keeps that reproduction.

    Args:
        scores: ``(n,)`` scores (larger is better), any real dtype.
        jitter: ``(n,)`` tie-breaking keys (smaller first among equal scores), any real dtype.
        real: ``(n,)`` bool, the real items of a padded vector (None: all).
    Returns:
        ``(n,)`` int32 ranks, a permutation of 0 … n − 1.
    """
    n = scores.shape[0]
    first = descending_key(scores)
    if real is not None:  # padding after the NaN scores
        first = jnp.where(real, first, jnp.iinfo(first.dtype).max)
    order = jax.lax.sort((first, order_key(jitter), jax.lax.iota(jnp.int32, n)), num_keys=2)[2]
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
