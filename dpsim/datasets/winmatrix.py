"""Win-count matrices of real comparison data: the two data sets of cai Fig. 8 (shipped) and
a loader for a user's own matrix.

``W[i, j]`` = number of decisive comparisons in which item *i* was preferred to item *j*
(row = winner, column = loser), the convention of every estimator in dpsim. Sources of the
shipped matrices: ``data/README.md`` beside this module.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpsim.errors import UsageError

DATA_DIR = Path(__file__).parent / "data"


@dataclass(frozen=True)
class WinMatrix:
    """A named win-count matrix (W[i, j] = times i beat j) and L, the most comparisons any
    one user contributed (the individual-DP sensitivity parameter)."""

    name: str
    items: tuple[str, ...]
    W: np.ndarray
    per_user: int

    @property
    def n_items(self) -> int:
        return len(self.items)


def load_win_matrix(path, per_user: int, name: str | None = None) -> WinMatrix:
    """Read a win-count CSV: either labelled (header row ``winner,item1,…``; first column the
    winner's name, as in ``dpsim/datasets/data``) or a plain square numeric matrix.

    Args:
        path: the CSV file. Row = winner, column = loser.
        per_user: L, the most comparisons one user contributed (individual-DP sensitivity).
        name: the data set's name (default: the file's stem).
    Returns:
        :class:`WinMatrix`.
    Raises:
        UsageError naming the problem if the file is missing or unreadable, or the matrix
        is not square, has negative or non-integer entries, or a non-zero diagonal.
    """
    path = Path(path)
    try:
        with path.open(newline="") as f:
            rows = [r for r in csv.reader(f) if r and any(c.strip() for c in r)]
    except OSError as err:
        raise UsageError(f"cannot read win matrix {str(path)!r}: {err.strerror or err}") from None
    if not rows:
        raise UsageError(f"{str(path)!r} is empty")
    try:
        float(rows[0][0])
        labelled = False
    except ValueError:
        labelled = True
    if labelled:
        items = tuple(c.strip() for c in rows[0][1:])
        body = [r[1:] for r in rows[1:]]
        row_names = tuple(r[0].strip() for r in rows[1:])
        if row_names != items:
            raise UsageError(
                f"{str(path)!r}: row labels {row_names} differ from column labels {items}"
            )
    else:
        body = rows
        items = tuple(f"item{i + 1}" for i in range(len(rows)))
    try:
        W = np.asarray([[float(c) for c in r] for r in body], dtype=np.float64)
    except ValueError as err:
        raise UsageError(f"{str(path)!r}: non-numeric entry ({err})") from None
    n = len(items)
    if W.shape != (n, n) or n < 2:
        raise UsageError(
            f"{str(path)!r}: need a square win matrix with ≥ 2 items, got shape {W.shape}"
        )
    if np.any(W < 0) or np.any(W != np.round(W)):
        raise UsageError(f"{str(path)!r}: win counts must be non-negative integers")
    if np.any(np.diag(W) != 0):
        raise UsageError(f"{str(path)!r}: the diagonal (self-comparisons) must be 0")
    if not (isinstance(per_user, int) and per_user >= 1):
        raise UsageError(f"per_user={per_user!r} must be an integer ≥ 1")
    return WinMatrix(name or path.stem, items, W, per_user)


def cems() -> WinMatrix:
    """CEMS university preferences (Dittrich, Hatzinger & Katzenbeisser 1998): n = 6 schools,
    303 students × L = 15 pairs, 3967 decisive comparisons (cai §4.3)."""
    return load_win_matrix(DATA_DIR / "cems.csv", per_user=15, name="cems")


def immigration() -> WinMatrix:
    """Student attitudes towards immigration (Weber & Hatzinger 2011): n = 4 statements,
    98 students × L ≤ 6 pairs, 379 decisive comparisons (cai §4.3)."""
    return load_win_matrix(DATA_DIR / "immigration.csv", per_user=6, name="immigration")
