"""Results the papers' authors released, read from a local copy the user fetches.

The authors' repositories carry no licence, so dpsim ships none of their files: the script
``scripts/fetch_authors_data.py`` downloads them at a pinned commit into the folder
:func:`authors_dir` (``$DPSIM_AUTHORS_DATA``, default ``authors-data/`` under the working
directory), and the checks that compare with them (``cai-published-*``, docs/cai.md,
"Published numbers") are INCONCLUSIVE while it is absent.
"""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path

from dpsim.errors import UsageError

#: the authors' repository of cai (Edge-DP results of Figs 1–3) and the commit fetched
CAI_REPOSITORY = "abhinavc3/DP-Ranking"
CAI_COMMIT = "2c90b07e670964a7ba6e23856964052eb65f8717"
#: Fig N → the folder of its per-replicate CSVs in that repository
CAI_EDGE_FOLDERS = {
    1: "Edge-DP/accuracy-vs-n",
    2: "Edge-DP/accuracy-vs-p",
    3: "Edge-DP/accuracy-vs-epsilon",
}
#: dpsim's method → the file of its relative Hamming errors (Alg. 2 "count", Alg. 1 "est")
CAI_EDGE_FILES = {"counts": "hamming-error-count-priv.csv", "mle": "hamming-error-est-priv.csv"}
#: (figure, method) of the files the checks read (cai-published-fig1-counts)
CAI_CHECKED = ((1, "counts"),)
#: the R code's stand-in for ε = ∞ (docs/cai.md, Errata and modes (E10))
CAI_NON_PRIVATE_EPS = 1000.0

FETCH = "python scripts/fetch_authors_data.py"


def authors_dir() -> Path:
    """The folder holding the fetched files: ``$DPSIM_AUTHORS_DATA``, else ``./authors-data``."""
    return Path(os.environ.get("DPSIM_AUTHORS_DATA", "authors-data"))


def cai_edge_path(figure: int, method: str) -> Path:
    """Where the fetched CSV of cai Fig. ``figure`` (1–3) and ``method`` ('counts', 'mle') lies."""
    if figure not in CAI_EDGE_FOLDERS or method not in CAI_EDGE_FILES:
        raise UsageError(
            f"cai authors' data: no file for figure {figure!r} and method {method!r} "
            f"(figures {sorted(CAI_EDGE_FOLDERS)}, methods {sorted(CAI_EDGE_FILES)})"
        )
    return authors_dir() / "cai" / CAI_EDGE_FOLDERS[figure] / CAI_EDGE_FILES[method]


def replicate_summary(path: Path, keys: dict[str, str]) -> list[dict]:
    """Per row of one of the authors' result files (key columns, then one column per replicate,
    ``X1`` … ``XR``): the keys renamed by ``keys`` (file column → dpsim axis), ``value`` the
    mean over the replicates, ``se`` its standard error sd/√R and ``reps`` R.

    Raises:
        UsageError: a missing key column, a row without replicates or a value that is not a number.
    """
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        missing = [k for k in keys if k not in header]
        if missing:
            raise UsageError(
                f"{path}: no column {missing[0]!r} (columns {', '.join(header[:6])}, …)"
            )
        reps = [i for i, h in enumerate(header) if h.startswith("X")]
        out = []
        for line, row in enumerate(reader, start=2):
            try:
                xs = [float(row[i]) for i in reps if row[i] not in ("", "NA")]
                point = {axis: float(row[header.index(col)]) for col, axis in keys.items()}
            except ValueError as exc:
                raise UsageError(f"{path}, line {line}: {exc}") from None
            if len(xs) < 2:
                raise UsageError(f"{path}, line {line}: fewer than 2 replicates")
            mean = sum(xs) / len(xs)
            sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
            out.append({**point, "value": mean, "se": sd / math.sqrt(len(xs)), "reps": len(xs)})
    return out


def cai_edge_results(figure: int, method: str) -> list[dict] | None:
    """The authors' relative Hamming errors of cai Fig. ``figure`` (1–3, edge DP, §4.1) for
    ``method`` ('counts': Algorithm 2, 'mle': Algorithm 1), one dict per (n_items, p, eps) with
    ``value``/``se``/``reps`` (:func:`replicate_summary`), the non-private rows (ε coded 1000)
    left out: their ties are broken against the top items (docs/cai.md, Errata and modes (E10)).
    None when the file has not been fetched (``python scripts/fetch_authors_data.py``)."""
    path = cai_edge_path(figure, method)
    if not path.is_file():
        return None
    rows = replicate_summary(path, {"n": "n_items", "p": "p", "epsilon": "eps"})
    return [r for r in rows if r["eps"] != CAI_NON_PRIVATE_EPS]
