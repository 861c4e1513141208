"""BTL rankings on the complete graph: xu's data-generating process
(xu §2), and its θ* designs.

L users (``n_users``) each compare **all** m(m−1)/2 pairs of m items (``n_items``) once; user
l's answer for the pair i < j is y^{(l)}_ij ~ Bernoulli(p*_ij), p*_ij = σ(θ*_i − θ*_j),
independent over pairs and users (xu §2).

Pairs are indexed in ``jnp.triu_indices(m, 1)`` order (:func:`dpsim.models.individual.pair_index`);
a per-pair statistic is an (M,) vector, M = m(m−1)/2, entry e = (i, j) with i < j, "i beat j".

The estimators need only the raw wins per pair, so :func:`sample_pair_wins` draws
n1_e ~ Binomial(L_g, p*_e) for each privacy group g (docs/xu.md, Mechanisms and estimators; groups: see
:mod:`dpsim.mechanisms.privacy_profile`) and never loops over users.
:func:`sample_rankings_per_user` materialises every user's answers; it is the slow reference
for tests.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from dpsim.models.btl import theta_uniform
from dpsim.models.individual import pair_index
from dpsim.samplers import alias_draw, binomial_table
from dpsim.validate import require_group_sizes, require_int, require_positive


def n_items_of_pairs(n_pairs_: int) -> int:
    """m with m(m−1)/2 = M (static), for an (M,) per-pair vector; ValueError if none."""
    m = int(round((1 + math.sqrt(1 + 8 * n_pairs_)) / 2))
    if m * (m - 1) // 2 != n_pairs_ or m < 2:
        raise ValueError(
            f"a per-pair vector of length {n_pairs_} is not m(m-1)/2 for any n_items >= 2"
        )
    return m


def require_theta(theta) -> int:
    """θ must be a vector of n_items ≥ 2 entries; returns n_items (static)."""
    shape = jnp.shape(theta)
    if len(shape) != 1:
        raise ValueError(f"theta must be a vector (n_items,), got shape {shape}")
    require_int(shape[0], "n_items", 2)
    return shape[0]


def pair_differences(theta) -> jax.Array:
    """θ_i − θ_j for every pair i < j (triu order). Args: theta (m,). Returns: (M,)."""
    i, j = pair_index(theta.shape[0])
    return theta[i] - theta[j]


def pair_win_probabilities(theta) -> jax.Array:
    """p*_ij = e^{θ_i}/(e^{θ_i} + e^{θ_j}) = σ(θ_i − θ_j), i < j (xu §2, BTL).

    Args: theta: (n_items,). Returns: (M,) float64, M = n_items(n_items−1)/2."""
    require_theta(theta)
    return jax.nn.sigmoid(pair_differences(jnp.asarray(theta, jnp.float64)))


def sample_pair_wins(key, theta, group_sizes) -> jax.Array:
    """Raw wins per privacy group and pair: n1_{g,e} ~ Binomial(L_g, p*_e), independent
    (xu §2; docs/xu.md, Mechanisms and estimators: the sufficient statistic of L_g users' answers, Σ_l y^{(l)}_e).

    Every mechanism of :mod:`dpsim.mechanisms.pairwise_ldp` privatises these counts, so
    passing the same wins to all of them gives common random numbers (the same raw data
    for classic RR, debiased RR, Laplace and the non-private fit). The draw depends on ε
    only through the group sizes: with one group (homogeneous ε) it is the same for every ε.

    Args:
        key: PRNG key.
        theta: (n_items,) θ*.
        group_sizes: (n_groups,) user counts L_g (integers ≥ 0; may be traced), or a scalar L
            for one group.
    Returns:
        (n_groups, M) float64 counts (1 group for a scalar L).
    """
    require_theta(theta)
    require_group_sizes(group_sizes)
    sizes = jnp.atleast_1d(jnp.asarray(group_sizes, jnp.float64))
    p = pair_win_probabilities(theta)
    shape = (sizes.shape[0], p.shape[0])
    return jax.random.binomial(
        key, jnp.broadcast_to(sizes[:, None], shape), jnp.broadcast_to(p[None, :], shape)
    ).astype(jnp.float64)


def ladder_count_tables(n_users: int, probabilities):
    """Alias tables (:func:`dpsim.samplers.binomial_table`) of Binomial(L, p_k) for each
    p_k of ``probabilities`` (k = 1 … K): the per-pair counts of an evenly spaced θ* (xu
    §5.2), whose pair laws depend only on the rank difference k (p_k = σ(Δk) for the raw
    wins). Args: n_users: L ≥ 0 (int); probabilities: (K,). Returns: ``AliasTable`` (K, L + 1)."""
    return binomial_table(int(n_users), probabilities)


def sample_ladder_pair_counts(key, ladder, threshold, alias, n_users, first_law=0) -> jax.Array:
    """Per-pair counts of an evenly spaced θ* drawn through tables of their laws (exact,
    :mod:`dpsim.samplers`): pair e = (i, j), i < j, whose items are k = |r_i − r_j| steps
    apart on the ladder r, draws X from law row ``first_law`` + k − 1 and returns X when
    r_i > r_j, L − X otherwise (the law of a count of "i beat j" under a difference −k is
    that of L minus the count under +k, for the raw wins Bin(L, σ(Δk)) and for RR releases).

    Args:
        key: PRNG key (one 64-bit word per pair).
        ladder: (m,) the ladder positions r (integers up to a common shift: the unit-gap
            permuted ladder of :func:`theta_evenly_spaced_permuted`).
        threshold, alias: [R, K] tables, row ``first_law`` + k − 1 the law for difference k,
            over {0, …, L} (K ≥ L + 1; zero-padded beyond).
        n_users: L (may be traced). first_law: int (may be traced).
    Returns:
        (M,) float64 counts in [0, L].
    """
    diff = pair_differences(jnp.asarray(ladder, jnp.float64))
    steps = jnp.rint(jnp.abs(diff)).astype(jnp.int32)
    bits = jax.random.bits(key, diff.shape, jnp.uint64)
    size = jnp.asarray(n_users, jnp.float64).astype(jnp.uint64) + jnp.uint64(1)
    x = alias_draw(bits, threshold, alias, first_law + steps - 1, size).astype(jnp.float64)
    return jnp.where(diff > 0, x, jnp.asarray(n_users, jnp.float64) - x)


def sample_rankings_per_user(key, theta, n_users: int) -> jax.Array:
    """Every user's answers y^{(l)}_e ~ Bernoulli(p*_e) (xu §2): the per-user
    reference sampler (tests only; :func:`sample_pair_wins` is its sufficient statistic).

    Args:
        key: PRNG key.
        theta: (n_items,) θ*.
        n_users: L ≥ 1 (static Python int).
    Returns:
        (n_users, M) int32 answers in {0, 1} (1: the first item of the pair won).
    """
    require_theta(theta)
    require_int(n_users, "n_users", 1)
    p = pair_win_probabilities(theta)
    return (jax.random.uniform(key, (int(n_users), p.shape[0])) < p[None, :]).astype(jnp.int32)


# ---------------------------------------------------------------------------------------
# θ* designs (xu §5.1–5.3, docs/xu.md, Model; Errata and modes (A2, A3))
# ---------------------------------------------------------------------------------------
def theta_uniform_centred(key, n_items: int, half_width: float = 2.0) -> jax.Array:
    """θ*_i iid Uniform(−2, 2), centred (xu §5.1 Scenarios I–II, §5.3 Scenario V; docs/xu.md, Model; Errata and modes (A2, A14)).

    The paper does not centre; centring is needed because θ̂ always sums to zero (Lemma 3)
    and changes no BTL probability. κ ≤ e^{2·half_width}.

    Args: key: PRNG key; n_items: m ≥ 2; half_width: 2 in the paper.
    Returns: (n_items,) float64 with mean 0.
    """
    require_int(n_items, "n_items", 2)
    require_positive(half_width, "half_width")
    return theta_uniform(key, n_items, -half_width, half_width)


def theta_evenly_spaced_permuted(key, n_items: int, gap) -> jax.Array:
    """Evenly spaced θ* with gap Δ: θ*_i = Δ(i − (m+1)/2), i = 1..m, then item labels
    permuted at random (xu §5.2 Scenarios III, IV; docs/xu.md, Model; Errata and modes (A3)).

    The permutation keeps index-order tie-breaking from lining up with the truth; it depends
    only on ``key`` and m, so a replicate keeps its permutation across Δ, L and ε. κ = e^{(m−1)Δ}.

    Args:
        key: PRNG key (per replicate).
        n_items: m ≥ 2.
        gap: Δ > 0 (may be traced).
    Returns:
        (n_items,) float64, sum 0, sorted values Δ·(1 − (m+1)/2), …, Δ·(m − (m+1)/2).
    """
    require_int(n_items, "n_items", 2)
    require_positive(gap, "gap")
    ladder = jnp.asarray(gap, jnp.float64) * (jnp.arange(1, n_items + 1) - (n_items + 1) / 2.0)
    return jax.random.permutation(key, ladder)


def condition_number(theta) -> jax.Array:
    """κ = max_i e^{θ_i} / min_i e^{θ_i} = exp(max θ − min θ) (xu §4.1; docs/xu.md, Model). Returns: scalar."""
    theta = jnp.asarray(theta, jnp.float64)
    return jnp.exp(jnp.max(theta) - jnp.min(theta))


def gaps_sorted(theta) -> jax.Array:
    """Δ_i = θ_(i) − θ_(i+1), i = 1..m−1, of the sorted θ (xu §4.3, Thm 6). Returns: (m−1,)."""
    ordered = jnp.sort(jnp.asarray(theta, jnp.float64))[::-1]
    return ordered[:-1] - ordered[1:]


__all__ = [
    "n_items_of_pairs",
    "pair_differences",
    "pair_win_probabilities",
    "sample_pair_wins",
    "ladder_count_tables",
    "sample_ladder_pair_counts",
    "sample_rankings_per_user",
    "theta_uniform_centred",
    "theta_evenly_spaced_permuted",
    "condition_number",
    "gaps_sorted",
]
