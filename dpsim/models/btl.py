"""BTL-type comparison data on an Erdős–Rényi graph, and θ* designs.

cai §2.1 (edge-DP model): each pair {i, j} is compared once with probability p;
the outcome is Y_ij ~ Bernoulli(F(θ_i − θ_j)). The win-count matrix
W (W_ij = A_ij·Y_ij) is the sufficient statistic of every cai estimator (DESIGN: draw
sufficient statistics directly); :func:`sample_er_graph` returns A = W + Wᵀ beside it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from dpsim.models.links import LOGISTIC, Link
from dpsim.models.threefry import counter_bits, default_threefry, random_bits
from dpsim.validate import require, require_int, require_probability


def top_k_size(n_items: int) -> int:
    """k = round_half_even(n/4), the paper's top-k size (docs/cai.md, Model, R's ``round``)."""
    return int(round(n_items / 4))


def centre(theta: jax.Array, real: jax.Array | None = None) -> jax.Array:
    """θ − mean(θ)·1: the identifiable representative (1ᵀθ* = 0).

    ``real``: (n,) bool mask of the real items of a padded vector (see :func:`real_items`):
    the mean is over them and the padding entries are returned as 0."""
    if real is None:
        return theta - jnp.mean(theta)
    mean = jnp.sum(jnp.where(real, theta, 0.0)) / jnp.sum(real)
    return jnp.where(real, theta - mean, 0.0)


def real_items(capacity: int, n_items) -> jax.Array:
    """(capacity,) bool: True for the first ``n_items`` entries, the real items of a vector
    padded to a static ``capacity`` (``n_items`` may be traced, so that one
    compiled program serves several n)."""
    return jnp.arange(capacity) < n_items


def theta_cai_design(
    key: jax.Array, n_items, k=None, top_first: bool = False, capacity: int | None = None
) -> jax.Array:
    """The paper's θ* design (cai §4.1.1 and docs/cai.md, Model), centred.

    e^{θ_i} = 1 for the k top items and e^{θ_i} ~ Unif(0.2, 0.7) otherwise, k = round(n/4).
    The edge-DP code puts the top items last (``top_first=False``); the individual-DP code
    puts them first. The n − k uniforms are the first n − k of one draw of ``capacity``
    (1-D threefry draws are prefix-stable), so a padded design equals the unpadded one.

    Args:
        key: PRNG key; n_items, k: sizes (Python ints, or traced with ``capacity``).
        capacity: static length ≥ n_items of the returned vector (default n_items);
            entries n_items, …, capacity − 1 are 0 (padding).
    Returns:
        (capacity,) float64 θ*, centred over the real items.
    """
    if capacity is None:
        require_int(n_items, "n_items", 2)
        capacity = n_items
    k = top_k_size(n_items) if k is None else k
    require_int(k, "k", 1, n_items - 1)
    uniforms = jax.random.uniform(key, (capacity,), minval=0.2, maxval=0.7)
    index = jnp.arange(capacity)
    rest = index - k if top_first else index  # position among the n − k others
    is_top = (index < k) if top_first else (index >= n_items - k)
    theta = jnp.where(is_top, 0.0, jnp.log(uniforms[jnp.clip(rest, 0, capacity - 1)]))
    return centre(theta, real_items(capacity, n_items))


def theta_uniform(key: jax.Array, n_items: int, low: float = -1.0, high: float = 1.0) -> jax.Array:
    """θ_i i.i.d. Uniform(low, high), centred."""
    return centre(jax.random.uniform(key, (n_items,), minval=low, maxval=high))


def theta_evenly_spaced(n_items: int, low: float = -1.0, high: float = 1.0) -> jax.Array:
    """θ evenly spaced on [low, high] (item n−1 best), centred."""
    return centre(jnp.linspace(low, high, n_items))


def theta_two_block(n_items: int, k: int, gap: float, link: Link = LOGISTIC) -> jax.Array:
    """Two-block instance of docs/cai.md, Model realised parametrically: θ = α on the top k items
    (the last k indices), β elsewhere, with F(α − β) = 1/2 + gap, centred."""
    if link is not LOGISTIC:
        raise ValueError("theta_two_block is implemented for the logistic link only")
    require_int(k, "k", 1, n_items - 1)
    require(
        "gap", gap, lambda g: (g > 0) & (g < 0.5), "must lie in (0, 1/2): ρ = 1/2 + Δ across blocks"
    )
    diff = jnp.log((0.5 + gap) / (0.5 - gap))  # logit(1/2 + Δ)
    theta = jnp.where(jnp.arange(n_items) >= n_items - k, diff, 0.0)
    return centre(theta)


def true_top_k_mask(theta: jax.Array, k, real: jax.Array | None = None) -> jax.Array:
    """Boolean mask of the k largest θ* (stable order; designs here have no tie at the boundary).

    ``real``: (n,) mask of the real items of a padded θ* (padding is never in the top k)."""
    padding = jnp.zeros(theta.shape, bool) if real is None else ~real
    order = jnp.lexsort((-theta, padding))
    ranks = jnp.empty_like(order).at[order].set(jnp.arange(theta.shape[0], dtype=order.dtype))
    return ranks < k


def pair_bits(key: jax.Array, n_items, capacity: int) -> jax.Array:
    """``jax.random.bits(key, (n, n), uint32)`` laid out in the top-left (n, n) block of a
    (capacity, capacity) array, with n = ``n_items`` possibly traced (a program
    padded to ``capacity`` draws exactly the unpadded program's bits).

    JAX's partitionable threefry (the default) gives the element at flat index c = i·n + j
    the bits b1 ⊕ b2 of threefry2x32(key, (0, c)); this evaluates that at c = i·n + j.
    Entries outside the block hold other bits (mask them). Needs the threefry2x32 key
    implementation and ``jax_threefry_partitionable`` (both JAX's defaults); raises
    ValueError otherwise. Hashed by :func:`dpsim.models.threefry.counter_bits` (one fused
    kernel, where JAX's CPU lowering copies the draw's arrays every round: the module
    docstring of :mod:`dpsim.models.threefry`). Returns uint32 of shape
    (capacity, capacity).
    """
    _require_flat_indices(capacity)
    index = jnp.arange(capacity, dtype=jnp.uint32)
    return counter_bits(key, index[:, None] * jnp.asarray(n_items, jnp.uint32) + index[None, :])


MAX_FLAT_ITEMS = 2**16  # an (n, n) draw's flat indices i·n + j fit in 32 bits up to this n


def _require_flat_indices(capacity: int) -> None:
    if capacity > MAX_FLAT_ITEMS:
        raise ValueError(
            f"capacity={capacity} must be ≤ {MAX_FLAT_ITEMS} (flat indices are 32-bit)"
        )


def pair_draw_bits(key: jax.Array, n: int, n_items=None) -> jax.Array:
    """The bits of each pair {i, j} at both its entries: (i, j) and (j, i) hold
    ``jax.random.bits(key, (m, m), uint32)[min, max]``, m = ``n_items`` (or n), in the top-left
    (m, m) block of an (n, n) array (other entries hold other bits: mask them).

    With JAX's default keys each entry hashes its own counter min·m + max
    (:func:`dpsim.models.threefry.counter_bits`), so no entry needs a transpose. Other key
    implementations, and more than :data:`MAX_FLAT_ITEMS` items, draw
    :func:`~dpsim.models.threefry.random_bits` (which defers to ``jax.random.bits``) and
    mirror its upper triangle; unpadded only: a traced ``n_items`` needs both, and raises
    ValueError otherwise (as :func:`pair_bits`). Returns uint32 of shape (n, n).
    """
    index = jnp.arange(n, dtype=jnp.uint32)
    i, j = index[:, None], index[None, :]
    if n_items is None and (n > MAX_FLAT_ITEMS or not default_threefry(key)):
        bits = random_bits(key, (n, n))
        return jnp.where(i < j, bits, bits.T)
    _require_flat_indices(n)
    width = jnp.uint32(n) if n_items is None else jnp.asarray(n_items, jnp.uint32)
    return counter_bits(key, jnp.minimum(i, j) * width + jnp.maximum(i, j))


def sample_er_graph(
    key: jax.Array, theta: jax.Array, p, link: Link = LOGISTIC, n_items=None
) -> tuple[jax.Array, jax.Array]:
    """Win counts and comparison graph of one comparison per edge of G(n, p) with BTL-type
    outcomes.

    cai §2.1: A_ij ~ Bernoulli(p) for i < j; Y_ij ~ Bernoulli(F(θ_i − θ_j));
    W_ij = A_ij Y_ij, W_ji = A_ij (1 − Y_ij). Drawn with one uniform U per pair i < j on the
    2^-32 grid (the edge and its outcome together, as :func:`sample_er_win_counts`): i beats j
    when U < p·F(θ_i − θ_j), j beats i when p·F ≤ U < p, no edge when U ≥ p. A quarter of the
    random bits of drawing A and Y separately in float64, and a smaller program to compile.
    U of the pair {i, j}, i < j, is ``jax.random.bits(key, (n, n), uint32)[i, j]``·2^-32.
    ``p`` may be traced.

    Every entry is computed from its own pair's U and threshold: (i, j) and (j, i) both read
    the pair's bits (:func:`pair_draw_bits`) and compare them with p·F(θ_lo − θ_hi), so neither
    W nor A needs a transpose. A is returned because the estimators need W + Wᵀ: formed from
    W, XLA:CPU fused this sampler into that transposed read and hashed every pair again, in
    transposed order; with A passed to the fits the draw is computed once (the same W).

    ``n_items`` (may be traced): the real items when θ is padded to a longer static length;
    W and A are then the unpadded ones in their top-left block and 0 elsewhere, drawn from
    the same bits (those :func:`pair_bits` lays out).

    Returns:
        (W, A), float64 of shape (n, n): W[i, j] = 1 when i beat j; A = W + Wᵀ, the
        symmetric 0/1 adjacency of the comparison graph (zero diagonal).
    Raises ValueError for a concrete p ∉ (0, 1] (a traced p is not checked).
    """
    require_probability(p)
    n = theta.shape[0]
    index = jnp.arange(n, dtype=jnp.uint32)
    i, j = index[:, None], index[None, :]
    upper, lower = i < j, i > j
    if n_items is not None:
        real = real_items(n, n_items)
        both = real[:, None] & real[None, :]
        upper, lower = upper & both, lower & both
    u = pair_draw_bits(key, n, n_items).astype(jnp.float64) * (2.0**-32)
    p = jnp.asarray(p, jnp.float64)
    lo_beats_hi = u < p * link.cdf(
        jnp.where(upper, theta[:, None] - theta[None, :], theta[None, :] - theta[:, None])
    )
    compared = (u < p) & (upper | lower)
    W = jnp.where(upper, lo_beats_hi, lower & ~lo_beats_hi & compared)
    return W.astype(jnp.float64), compared.astype(jnp.float64)


def sample_er_comparisons(
    key: jax.Array, theta: jax.Array, p, link: Link = LOGISTIC, n_items=None
) -> jax.Array:
    """The win counts W of :func:`sample_er_graph` alone: float64 of shape (n, n).

    Where W + Wᵀ is needed too, draw both with :func:`sample_er_graph` (its docstring says
    why). Raises ValueError for a concrete p ∉ (0, 1]."""
    return sample_er_graph(key, theta, p, link, n_items)[0]


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


def win_counts(W: jax.Array) -> jax.Array:
    """N_i = Σ_j W_ij, the number of comparisons item i won: the sufficient statistic of cai's
    counting estimators (cai Algorithm 2, §2.3.1 step 1; Algorithm 3, §3.3).

    Args: W: (n, n) win counts, W[i, j] = times i beat j. Returns: (n,) win counts."""
    return W.sum(axis=1)


def sample_er_win_counts(key: jax.Array, theta: jax.Array, p, link: Link = LOGISTIC) -> jax.Array:
    """Win counts N_i = Σ_j W_ij of one comparison per edge of G(n, p) (cai §2.1), drawn
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
    u = jax.random.bits(key, (n, n // 2), jnp.uint32).astype(jnp.float64) * (2.0**-32)
    threshold = p * first_wins_prob
    first_wins = (u < threshold) & valid
    second_wins = (u >= threshold) & (u < p) & valid
    losses = jnp.take_along_axis(second_wins, jnp.asarray(back), axis=0)
    return (first_wins.sum(axis=1) + losses.sum(axis=1)).astype(jnp.float64)
