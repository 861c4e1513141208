"""dpsim.datasets: the shipped win matrices, the MovieLens loader and its stand-in, and the
one-line errors for missing, unreadable or malformed files."""

from __future__ import annotations

import numpy as np
import pytest

from dpsim.datasets import (
    cems,
    immigration,
    load_ratings,
    load_win_matrix,
    ratings_or_stand_in,
    synthetic_ratings,
)
from dpsim.errors import UsageError


def test_shipped_win_matrices_match_the_spec_totals():
    c, i = cems(), immigration()
    assert c.n_items == 6 and c.per_user == 15 and c.W.sum() == 3967
    assert list(c.W.sum(axis=1)) == [614, 1082, 511, 737, 631, 392]  # cai §4.3
    assert i.n_items == 4 and i.per_user == 6 and i.W.sum() == 379
    assert list(i.W.sum(axis=1)) == [135, 63, 131, 50]


def test_win_matrix_errors_name_the_problem(tmp_path):
    with pytest.raises(UsageError, match="cannot read win matrix"):
        load_win_matrix(tmp_path / "missing.csv", per_user=1)
    bad = tmp_path / "bad.csv"
    bad.write_text("0,1\n-1,0\n")
    with pytest.raises(UsageError, match="non-negative integers"):
        load_win_matrix(bad, per_user=1)


RATINGS = (
    "userId,movieId,rating,timestamp\n1,10,4.0,1\n1,20,3.5,2\n2,10,5.0,3\n3,30,0.5,4\n2,20,2.0,5\n"
)


def test_load_ratings_and_matrix(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text(RATINGS)
    r = load_ratings(path)
    assert list(r.users) == [1, 2, 3] and r.source == str(path)
    assert list(r.most_rated(2)) == [10, 20]  # 2 ratings each, tie → smaller id
    m = r.matrix([10, 20])
    np.testing.assert_array_equal(m, [[4.0, 3.5], [5.0, 2.0], [np.nan, np.nan]])


@pytest.mark.parametrize(
    "text, message",
    [
        ("user,movie,rating\n1,2,3\n", "not a MovieLens ratings.csv"),
        ("userId,movieId,rating,timestamp\n1,2,x,4\n", "malformed row"),
        ("userId,movieId,rating,timestamp\n1,2,3.3,4\n", "half-star"),
        ("userId,movieId,rating,timestamp\n", "holds no ratings"),
    ],
)
def test_load_ratings_refuses_wrong_layout(tmp_path, text, message):
    path = tmp_path / "ratings.csv"
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        load_ratings(path)


def test_load_ratings_missing_and_binary(tmp_path):
    with pytest.raises(UsageError, match="cannot read MovieLens ratings"):
        load_ratings(tmp_path / "nope.csv")
    path = tmp_path / "bin.csv"
    path.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(UsageError):
        load_ratings(path)


def test_stand_in_is_deterministic_and_shaped_like_ml_latest_small():
    a, b = synthetic_ratings(3), synthetic_ratings(3)
    np.testing.assert_array_equal(a.rating, b.rating)
    assert len(a.users) == 610 and "synthetic" in a.source
    top = a.matrix(a.most_rated(40))
    counts = np.isfinite(top).sum(axis=0)
    assert 250 <= counts[0] <= 400 and 150 <= counts[-1] <= 260  # ml-latest-small: 329 … ≈180
    assert set(np.unique(a.rating)) <= set(np.arange(1, 11) / 2)
    assert "synthetic" in ratings_or_stand_in(None).source
