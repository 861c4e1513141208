"""Pairwise rankings from MovieLens ratings, xu's real data (xu §5.4, Fig. 7;
xu §5.4; docs/xu.md, Errata and modes (A18–A19)).

Each user becomes one "ranking": an answer for every pair of the m = 40 most-rated movies
(ties in rating count broken by the smaller movieId, :meth:`dpsim.datasets.Ratings.most_rated`).
For the pair i < j (movies in most-rated order), with r the user's ratings:

- both rated: y = 1 if r_i > r_j, 0 if r_i < r_j, a fair coin if r_i = r_j ("random comparisons
  are generated for two same ratings");
- exactly one rated: the rated movie wins ("items without ratings are considered less preferred");
- neither rated: a fair coin (unspecified in the paper; docs/xu.md, Errata and modes (A19)).

The coins are drawn once from ``seed`` (NumPy) and shared by θ* and every replicate
(docs/xu.md, Errata and modes (A19)). θ* is the non-private ridge fit of xu eq. (3) on all users with λ = 1/L_total
(1/610), centred (:func:`movielens_theta`). Replicates subsample L users **without
replacement** (:func:`subsample_pair_wins`) and privatise their raw wins like synthetic data.

Works with a user-supplied ml-latest-small ``ratings.csv``
(:func:`dpsim.datasets.load_ratings`) or the deterministic stand-in
(:func:`dpsim.datasets.synthetic_ratings`).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from dpsim.datasets.movielens import Ratings
from dpsim.estimators.debiased_m import debiased_m_estimator
from dpsim.errors import UsageError
from dpsim.validate import concrete

N_ITEMS_XU = 40  # the 40 most-rated movies (xu §5.4)
COIN_SEED = 0  # default seed of the fixed tie-breaking coins


@dataclass(frozen=True)
class PairwiseRankings:
    """Every user's answers for every pair of the chosen movies.

    Attributes:
        y: (n_users, M) uint8 answers, M = m(m−1)/2 in triu order; 1 = the first movie of
            the pair preferred.
        movies: (m,) movie ids, most rated first (item i of θ is ``movies[i]``).
        users: (n_users,) user ids (rows of ``y``).
        source: where the ratings came from (file path or stand-in).
        seed: the seed of the tie-breaking coins.
    """

    y: np.ndarray
    movies: np.ndarray
    users: np.ndarray
    source: str
    seed: int

    @property
    def n_users(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_items(self) -> int:
        return int(self.movies.shape[0])


def comparisons_from_ratings(rating_matrix, seed: int = COIN_SEED) -> np.ndarray:
    """The comparison rules of xu §5.4 applied to a ratings matrix (module docstring).

    Args:
        rating_matrix: (n_users, m) ratings, NaN where a user did not rate a movie.
        seed: NumPy seed of the fair coins for equal ratings and pairs rated by neither.
    Returns:
        (n_users, M) uint8 answers for the pairs i < j in ``np.triu_indices(m, 1)`` order.
    """
    r = np.asarray(rating_matrix, np.float64)
    if r.ndim != 2 or r.shape[1] < 2:
        raise UsageError(f"ratings matrix must be (n_users, n_items ≥ 2), got shape {r.shape}")
    i, j = np.triu_indices(r.shape[1], 1)
    ri, rj = r[:, i], r[:, j]
    rated_i, rated_j = ~np.isnan(ri), ~np.isnan(rj)
    coin = np.random.default_rng(seed).integers(0, 2, size=ri.shape).astype(bool)
    both = rated_i & rated_j
    with np.errstate(invalid="ignore"):
        first_wins = np.where(
            both, np.where(ri == rj, coin, ri > rj), np.where(rated_i ^ rated_j, rated_i, coin)
        )
    return first_wins.astype(np.uint8)


def movielens_rankings(
    ratings: Ratings, n_items: int = N_ITEMS_XU, seed: int = COIN_SEED
) -> PairwiseRankings:
    """The pairwise rankings of xu's real-data experiment: the ``n_items`` most-rated movies,
    one ranking per user (xu §5.4).

    Args:
        ratings: a :class:`~dpsim.datasets.Ratings` table (``load_ratings`` or ``synthetic_ratings``).
        n_items: m (40 in the paper).
        seed: the coin seed (fixed once, A19).
    Returns:
        :class:`PairwiseRankings` with y of shape (number of users, m(m−1)/2).
    Raises:
        UsageError if m is not an integer ≥ 2 or exceeds the movies in the table.
    """
    movies = ratings.most_rated(n_items)
    y = comparisons_from_ratings(ratings.matrix(movies), seed)
    return PairwiseRankings(
        y=y, movies=movies, users=ratings.users, source=ratings.source, seed=seed
    )


def movielens_theta(rankings: PairwiseRankings, lam: float | None = None) -> np.ndarray:
    """θ*, the non-private ridge fit of xu eq. (3) on all users (z̄ = ȳ, λ = 1/L_total, e.g.
    1/610), centred (xu §5.4 "we fit the BTL model using the whole dataset"; docs/xu.md, Errata and modes (A19)).

    Args: rankings: from :func:`movielens_rankings`; lam: λ (default 1/number of users).
    Returns: (m,) float64 NumPy array with mean 0.
    Raises: UsageError if the solver does not converge (it converges in ~7 iterations)."""
    lam = 1.0 / rankings.n_users if lam is None else lam
    fit = debiased_m_estimator(jnp.asarray(rankings.y.mean(axis=0), jnp.float64), lam)
    if not bool(fit.converged):
        raise UsageError(f"the ridge fit of θ* on {rankings.source} did not converge")
    theta = np.asarray(fit.theta)
    return theta - theta.mean()


def subsample_pair_wins(key, y, group_sizes) -> jax.Array:
    """Raw wins of L users drawn **without replacement** from the rankings (docs/xu.md, Experiments as run),
    split into privacy groups: the first L_1 sampled users form group 1, and so on.

    Args:
        key: PRNG key (per replicate).
        y: (n_total, M) answers (``PairwiseRankings.y``; pass it as a JAX array).
        group_sizes: user counts L_g, Σ L_g ≤ n_total: Python ints (a tuple, or one int L),
            or a JAX array, which may be traced (e.g. L as a traced grid value): the number
            of groups is its length, fixed, and the sizes only enter comparisons, so one
            compiled program serves every L. Concrete sizes are validated.
    Returns:
        (n_groups, M) float64 win counts, the input of :mod:`dpsim.mechanisms.pairwise_ldp`.
    """
    n_total = y.shape[0]
    fixed = concrete(group_sizes)
    if fixed is not None:
        sizes = np.atleast_1d(fixed).astype(np.float64)
        if (
            sizes.ndim != 1
            or np.any(sizes < 0)
            or np.any(sizes != np.round(sizes))
            or not 1 <= sizes.sum() <= n_total
        ):
            raise UsageError(
                f"group_sizes={sizes.astype(np.int64).tolist()} must be integers ≥ 0 summing to "
                f"between 1 and the {n_total} users available"
            )
    sizes = jnp.atleast_1d(jnp.asarray(group_sizes, jnp.float64))
    # position of every user in a uniformly random order; the first L_1 positions form group 1, …
    position = (
        jnp.empty((n_total,), jnp.int32)
        .at[jax.random.permutation(key, n_total)]
        .set(jnp.arange(n_total, dtype=jnp.int32))
        .astype(jnp.float64)
    )
    bounds = jnp.concatenate([jnp.zeros((1,)), jnp.cumsum(sizes)])
    membership = (position[None, :] >= bounds[:-1, None]) & (position[None, :] < bounds[1:, None])
    return membership.astype(jnp.float64) @ jnp.asarray(y, jnp.float64)


__all__ = [
    "N_ITEMS_XU",
    "COIN_SEED",
    "PairwiseRankings",
    "comparisons_from_ratings",
    "movielens_rankings",
    "movielens_theta",
    "subsample_pair_wins",
]
