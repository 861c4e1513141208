"""MovieLens ratings, the real data of xu (Fig. 7) and nguyen (Fig. 3), from a file the user
supplies, with a deterministic synthetic stand-in of the same shape.

Both papers name "MovieLens 100K" but describe **ml-latest-small** (100,836 ratings from 610
users on 9,742 movies; xu §5.4; docs/xu.md, Errata and modes (A18), nguyen Fig. 3, §5.2; docs/nguyen.md, Errata and modes (A13)): its ``ratings.csv``
has the header ``userId,movieId,rating,timestamp`` and ratings 0.5–5.0 in half-star steps.
This environment cannot download it, so :func:`load_ratings` reads a local copy and
:func:`synthetic_ratings` makes a stand-in with the same users, a similar popularity profile
and the same rating scale; :func:`ratings_or_stand_in` picks one and says which.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpsim.errors import UsageError

HEADER = ("userId", "movieId", "rating", "timestamp")
N_USERS_SMALL = 610
RATING_SCALE = np.arange(1, 11) / 2.0  # 0.5, 1.0, …, 5.0


@dataclass(frozen=True)
class Ratings:
    """A ratings table as parallel arrays (one entry per rating).

    Attributes:
        user: (N,) int64 user ids.
        movie: (N,) int64 movie ids.
        rating: (N,) float64 ratings in {0.5, 1.0, …, 5.0}.
        source: where it came from: the file's path, or ``"synthetic stand-in (seed S)"``.
    """

    user: np.ndarray
    movie: np.ndarray
    rating: np.ndarray
    source: str

    @property
    def users(self) -> np.ndarray:
        """Sorted distinct user ids."""
        return np.unique(self.user)

    def most_rated(self, m: int) -> np.ndarray:
        """The ``m`` movie ids with the most ratings, ties broken by the smaller movieId
        (xu §5.4), most rated first."""
        if not (isinstance(m, (int, np.integer)) and m >= 2):
            raise UsageError(f"m={m!r} must be an integer ≥ 2")
        ids, counts = np.unique(self.movie, return_counts=True)
        if m > len(ids):
            raise UsageError(f"m={m} exceeds the {len(ids)} movies in {self.source}")
        order = np.lexsort((ids, -counts))
        return ids[order[:m]]

    def matrix(self, movies) -> np.ndarray:
        """(n_users, len(movies)) ratings, NaN where a user did not rate a movie; rows in
        the order of :attr:`users`, columns in the order of ``movies``."""
        movies = np.asarray(movies)
        users = self.users
        out = np.full((len(users), len(movies)), np.nan)
        col = {int(mv): j for j, mv in enumerate(movies)}
        keep = np.isin(self.movie, movies)
        rows = np.searchsorted(users, self.user[keep])
        cols = np.fromiter((col[int(mv)] for mv in self.movie[keep]), np.int64, int(keep.sum()))
        out[rows, cols] = self.rating[keep]
        return out


def load_ratings(path) -> Ratings:
    """Read an ml-latest-small ``ratings.csv``.

    Args:
        path: the file.
    Returns:
        :class:`Ratings`.
    Raises:
        UsageError (one line, naming the file and the problem) if it is missing,
        unreadable, not in the ``userId,movieId,rating,timestamp`` layout, or holds a rating
        off the half-star scale.
    """
    path = Path(path)
    try:
        with path.open(newline="") as f:
            reader = csv.reader(f)
            header = tuple(c.strip() for c in next(reader, ()))
            if header != HEADER:
                raise UsageError(
                    f"{str(path)!r} is not a MovieLens ratings.csv: header {','.join(header)!r}, "
                    f"expected {','.join(HEADER)!r}"
                )
            rows = [r for r in reader if r]
    except OSError as err:
        raise UsageError(
            f"cannot read MovieLens ratings {str(path)!r}: {err.strerror or err}"
        ) from None
    except UnicodeDecodeError:
        raise UsageError(f"{str(path)!r} is not a text CSV file") from None
    if not rows:
        raise UsageError(f"{str(path)!r} holds no ratings")
    try:
        user = np.asarray([int(r[0]) for r in rows], np.int64)
        movie = np.asarray([int(r[1]) for r in rows], np.int64)
        rating = np.asarray([float(r[2]) for r in rows], np.float64)
    except (ValueError, IndexError) as err:
        raise UsageError(f"{str(path)!r}: malformed row ({err})") from None
    if not np.all(np.isin(rating, RATING_SCALE)):
        bad = rating[~np.isin(rating, RATING_SCALE)][0]
        raise UsageError(f"{str(path)!r}: rating {bad:g} is not on the 0.5–5.0 half-star scale")
    return Ratings(user, movie, rating, str(path))


def synthetic_ratings(seed: int = 0, n_users: int = N_USERS_SMALL, n_movies: int = 400) -> Ratings:
    """A deterministic stand-in for ml-latest-small, restricted to its most-rated movies.

    610 users (as in ml-latest-small); movie i is rated by each user with probability
    decreasing from about 0.54 to 0.08 (ml-latest-small's most-rated movie has 329 ratings
    from 610 users, its 40th about 180 and its 400th about 50); a rating is a latent
    quality + user bias + noise, rounded to the half-star scale and clipped to [0.5, 5].

    Args:
        seed: NumPy seed (the stand-in is a pure function of its arguments).
        n_users, n_movies: its size.
    Returns:
        :class:`Ratings` whose ``source`` says it is synthetic.
    """
    rng = np.random.default_rng(seed)
    rank = np.arange(n_movies)
    p_rated = 0.08 + 0.46 * np.exp(-rank / 90.0)
    quality = rng.normal(3.5, 0.45, size=n_movies)
    bias = rng.normal(0.0, 0.5, size=n_users)
    rated = rng.uniform(size=(n_users, n_movies)) < p_rated[None, :]
    raw = quality[None, :] + bias[:, None] + rng.normal(0.0, 0.8, size=(n_users, n_movies))
    value = np.clip(np.round(raw * 2.0) / 2.0, 0.5, 5.0)
    users, movies = np.nonzero(rated)
    return Ratings(
        users.astype(np.int64) + 1,
        movies.astype(np.int64) + 1,
        value[users, movies],
        f"synthetic stand-in for ml-latest-small (seed {seed})",
    )


def ratings_or_stand_in(path=None, seed: int = 0) -> Ratings:
    """:func:`load_ratings` of ``path`` when one is given, else :func:`synthetic_ratings`;
    the result's ``source`` says which (experiments print it and store it in the manifest)."""
    return synthetic_ratings(seed) if path in (None, "") else load_ratings(path)
