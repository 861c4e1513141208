"""MovieLens rankings for xu's real-data experiment (xu §5.4; docs/xu.md, Errata and modes (A19)): the
comparison rules on hand-made ratings, the stand-in and a user-supplied ratings.csv, θ* against
choix, and subsampling without replacement against the hypergeometric law (SciPy)."""

from __future__ import annotations

import csv
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import choix
import dpsim  # noqa: F401
from dpsim.datasets import (
    load_ratings,
    movielens_rankings,
    movielens_theta,
    subsample_pair_wins,
    synthetic_ratings,
)
from dpsim.datasets.movielens_rankings import comparisons_from_ratings
from dpsim.errors import UsageError

NAN = math.nan


def test_comparison_rules():
    ratings = np.array(
        [
            [4.0, 3.0, NAN],  # both rated; one rated; one rated
            [2.0, 5.0, 5.0],  # both rated (0 < 1); (0 < 2); equal → coin
            [NAN, NAN, 1.0],
        ]
    )  # neither → coin; only 2 rated; only 2 rated
    y = comparisons_from_ratings(ratings, seed=3)  # pairs (0,1), (0,2), (1,2)
    coin = np.random.default_rng(3).integers(0, 2, size=(3, 3))
    expected = np.array([[1, 1, 1], [0, 0, coin[1, 2]], [coin[2, 0], 0, 0]])
    np.testing.assert_array_equal(y, expected)
    assert y.dtype == np.uint8
    # the coins are fixed by the seed, and fair
    np.testing.assert_array_equal(comparisons_from_ratings(ratings, seed=3), y)
    ties = comparisons_from_ratings(np.full((20_000, 2), 3.5), seed=1)[:, 0]
    neither = comparisons_from_ratings(np.full((20_000, 2), NAN), seed=2)[:, 0]
    for flips in (ties, neither):
        assert abs(flips.mean() - 0.5) <= 5 * 0.5 / math.sqrt(flips.size)
    with pytest.raises(UsageError, match="shape"):
        comparisons_from_ratings(np.zeros((4, 1)))


@pytest.fixture(scope="module")
def stand_in():
    return movielens_rankings(synthetic_ratings())


def test_stand_in_and_user_supplied_file_agree(stand_in, tmp_path):
    assert stand_in.y.shape == (610, 780) and stand_in.n_items == 40 and stand_in.n_users == 610
    np.testing.assert_array_equal(stand_in.movies, synthetic_ratings().most_rated(40))
    assert "synthetic" in stand_in.source
    # a user-supplied ratings.csv with the same ratings gives the same rankings
    table = synthetic_ratings()
    path = tmp_path / "ratings.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["userId", "movieId", "rating", "timestamp"])
        for u, mv, r in zip(table.user, table.movie, table.rating):
            writer.writerow([u, mv, f"{r:g}", 964982703])
    from_file = movielens_rankings(load_ratings(path))
    np.testing.assert_array_equal(from_file.y, stand_in.y)
    np.testing.assert_array_equal(from_file.movies, stand_in.movies)
    assert from_file.source == str(path)
    with pytest.raises(UsageError, match="m=500"):
        movielens_rankings(load_ratings(path), n_items=500)


def test_theta_star_is_the_centred_ridge_fit():
    """λ = 1/L on the per-user mean = choix's α‖θ‖² with α = λL = 1 on all comparisons (m = 10)."""
    rankings = movielens_rankings(synthetic_ratings(), n_items=10)
    theta = movielens_theta(rankings)
    assert abs(theta.sum()) < 1e-12
    i, j = np.triu_indices(10, 1)
    data = [
        (int(a), int(b)) if won else (int(b), int(a))
        for row in rankings.y
        for a, b, won in zip(i, j, row)
    ]
    ref = choix.opt_pairwise(10, data, alpha=1.0, method="Newton-CG", tol=1e-12)
    np.testing.assert_allclose(theta, ref - ref.mean(), atol=1e-6)


def test_subsampling_is_without_replacement(stand_in):
    y = jnp.asarray(stand_in.y)
    total = stand_in.y.sum(axis=0)
    np.testing.assert_array_equal(subsample_pair_wins(jax.random.key(0), y, 610)[0], total)
    # groups split one subsample
    one = subsample_pair_wins(jax.random.key(1), y, 100)
    split = subsample_pair_wins(jax.random.key(1), y, (30, 70))
    assert split.shape == (2, 780)
    np.testing.assert_array_equal(split.sum(axis=0), one[0])
    # the law: wins of pair e ~ Hypergeometric(610, K_e, L) (with replacement the variance would be
    # (N − 1)/(N − L) ≈ 2.9 times larger at L = 400); mean and variance within 5 SE over 4000 draws
    L, reps = 400, 4000
    draws = np.asarray(
        jax.jit(jax.vmap(lambda k: subsample_pair_wins(k, y, L)[0, :5]))(
            jax.random.split(jax.random.key(2), reps)
        )
    )
    for e in range(5):
        law = stats.hypergeom(610, int(total[e]), L)
        assert abs(draws[:, e].mean() - law.mean()) <= 5 * math.sqrt(law.var() / reps)
        assert abs(draws[:, e].var() / law.var() - 1) <= 5 * math.sqrt(2 / reps)
    with pytest.raises(UsageError, match="group_sizes"):
        subsample_pair_wins(jax.random.key(0), y, 611)


def test_subsampling_with_a_traced_number_of_users(stand_in):
    """L may be traced (one compiled program for every L): same draws as a Python int L."""
    y = jnp.asarray(stand_in.y)
    traced = jax.jit(lambda key, L: subsample_pair_wins(key, y, jnp.reshape(L, (1,))))
    for L in (100, 250, 610):
        np.testing.assert_array_equal(
            traced(jax.random.key(3), float(L)), subsample_pair_wins(jax.random.key(3), y, L)
        )
    with pytest.raises(Exception, match="group_sizes"):
        subsample_pair_wins(jax.random.key(0), y, jnp.asarray([2.5]))
