"""The authors' released results (dpsim/datasets/authors.py) and the check that reads them
(cai-published-fig1-counts): a file in the authors' layout written here is summarised by hand;
without the fetched files the check is INCONCLUSIVE and names the script that fetches them."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpsim.datasets.authors import cai_edge_path, cai_edge_results, replicate_summary
from dpsim.errors import UsageError
from dpsim.experiments.cai.figures.published import CHECKS, PUBLISHED_FIG1

CHECK = CHECKS[0]


def _write(path, rows):
    """A result file in the authors' layout: n, p, epsilon, then X1 … XR."""
    path.parent.mkdir(parents=True, exist_ok=True)
    reps = len(rows[0][3])
    lines = [",".join(['"n"', '"p"', '"epsilon"'] + [f'"X{i + 1}"' for i in range(reps)])]
    lines += [",".join(str(v) for v in (n, p, eps, *xs)) for n, p, eps, xs in rows]
    path.write_text("\n".join(lines) + "\n")


def test_replicate_summary_by_hand(tmp_path):
    path = tmp_path / "f.csv"
    _write(path, [(100, 1, 0.5, [0.1, 0.2, 0.3]), (175, 1, 1000, [0.0, 0.5, 1.0])])
    rows = replicate_summary(path, {"n": "n_items", "p": "p", "epsilon": "eps"})
    assert rows[0] == pytest.approx(
        {"n_items": 100, "p": 1, "eps": 0.5, "value": 0.2, "se": 0.1 / math.sqrt(3), "reps": 3}
    )
    with pytest.raises(UsageError, match="no column 'k'"):
        replicate_summary(path, {"k": "k"})


def test_cai_results_leave_out_the_non_private_rows(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSIM_AUTHORS_DATA", str(tmp_path))
    assert cai_edge_results(1, "counts") is None  # not fetched
    _write(cai_edge_path(1, "counts"), [(100, 1, 0.5, [0.2, 0.3]), (100, 1, 1000, [0.1, 0.1])])
    assert [r["eps"] for r in cai_edge_results(1, "counts")] == [0.5]  # ε = ∞ coded 1000: E10
    with pytest.raises(UsageError, match="no file"):
        cai_edge_path(4, "counts")


def _reproduction(scale: float) -> pd.DataFrame:
    """Rows of cai-published-fig1's counting method at two of its points, err = scale × 0.2 ± 0.05."""
    rng = np.random.default_rng(0)
    rows = [
        {
            "n_items": n,
            "k": round(n / 4),
            "link": "logistic",
            "p": 1.0,
            "eps": 0.5,
            "c0": 2.0,
            "point": i,
            "rep": r,
            "method": "counts",
            "relative_hamming": float(x),
        }
        for i, n in enumerate((100, 175))
        for r, x in enumerate(rng.normal(0.2 * scale, 0.05, 2000))
    ]
    table = pd.DataFrame(rows)
    table.attrs["method_columns"] = ["relative_hamming"]
    return table


def test_the_cai_check_reads_the_fetched_file(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSIM_AUTHORS_DATA", str(tmp_path))
    missing = CHECK.evaluate(_reproduction(1.0))
    assert missing.verdict == "INCONCLUSIVE" and "scripts/fetch_authors_data.py" in missing.evidence
    rng = np.random.default_rng(1)
    _write(
        cai_edge_path(1, "counts"),
        [(n, 1, 0.5, list(np.round(rng.normal(0.2, 0.05, 2000), 6))) for n in (100, 175)],
    )
    assert CHECK.evaluate(_reproduction(1.0)).verdict == "PASS"
    assert CHECK.evaluate(_reproduction(0.85), family=60).verdict == "FAIL"
    assert PUBLISHED_FIG1.truth_per_replicate  # its mean is over θ*, as the authors' θ* is one draw


def test_the_fetch_script_lists_what_the_checks_read(tmp_path, monkeypatch, capsys):
    import runpy

    monkeypatch.setenv("DPSIM_AUTHORS_DATA", str(tmp_path))
    script = runpy.run_path(
        str(Path(__file__).resolve().parents[2] / "scripts" / "fetch_authors_data.py")
    )
    assert script["main"](["--list"]) == 0
    out = capsys.readouterr().out
    assert "raw.githubusercontent.com/abhinavc3/DP-Ranking/2c90b07" in out
    assert str(cai_edge_path(1, "counts")) in out and not any(tmp_path.iterdir())  # nothing fetched
