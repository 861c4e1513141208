"""Real data: shipped data sets and loaders of user-supplied files, each with a deterministic
synthetic stand-in of the same shape where the data cannot be shipped (nothing is downloaded
at run time). Loaders raise :class:`dpsim.errors.UsageError` with a one-line message naming
the file and the problem."""

from dpsim.datasets.winmatrix import DATA_DIR, WinMatrix, cems, immigration, load_win_matrix
from dpsim.datasets.movielens import Ratings, load_ratings, ratings_or_stand_in, synthetic_ratings
from dpsim.datasets.movielens_rankings import (
    PairwiseRankings,
    comparisons_from_ratings,
    movielens_rankings,
    movielens_theta,
    subsample_pair_wins,
)
from dpsim.datasets.responses import (
    ResponseData,
    load_three_grades,
    load_uci_student,
    lsat,
    movielens_responses,
    ratings_responses,
    three_grades,
    uci_student,
)

__all__ = [
    "DATA_DIR",
    "WinMatrix",
    "cems",
    "immigration",
    "load_win_matrix",
    "Ratings",
    "load_ratings",
    "ratings_or_stand_in",
    "synthetic_ratings",
    "PairwiseRankings",
    "comparisons_from_ratings",
    "movielens_rankings",
    "movielens_theta",
    "subsample_pair_wins",
    "ResponseData",
    "load_three_grades",
    "load_uci_student",
    "lsat",
    "movielens_responses",
    "ratings_responses",
    "three_grades",
    "uci_student",
]
