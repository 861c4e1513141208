"""``dpsim solve`` on the engine (dpsim/engine/solving/solve.py): Bernoulli outcomes whose rate is a
known function of the axis (tests/solve_study.py), so every root is known in closed form.

Asserted: each true root lies within its 95% interval widened to the 99.9% level (×3.29/1.96: a
false alarm once in 1000 roots at any seed; the nominal coverage itself is measured over 2400
intervals in tests/engine/test_rootfinding.py and benchmarks/rootfinding.py); a second solve into the same
folder computes nothing and gives identical roots; a solve interrupted mid-stage and re-run
gives the roots of an uninterrupted one; the budget is never exceeded; a target the interval
never reaches is reported as not bracketed with the interval searched; an analysis axis (ε)
gets disjoint replicates per value; bad input is refused in one line, writing nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpsim.errors import UsageError
from dpsim.engine.execution import runner
from dpsim.engine.solving.solve import parse_target, solve_experiment
from dpsim.engine.storage.store import load_results

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cli_cases import refused, run_in_process  # noqa: E402
from solve_study import ANALYSIS, DATA, SHAPE, true_root  # noqa: E402

STUDY = Path(__file__).resolve().parents[1] / "solve_study.py"
ROOT_COLUMNS = ["p", "root", "low", "high", "status", "lanes"]


def solve(tmp_path, name="solve", **kw):
    kw = {"axis": "gap", "target": "hit=0.5", "seed": 1, "progress": False, **kw}
    return solve_experiment(DATA, out=tmp_path / name, **kw)


def test_roots_cover_the_truth_and_a_replay_computes_nothing(tmp_path):
    first = solve(tmp_path)
    table = first.table
    assert list(table["status"]) == ["solved", "solved"]
    truth = np.array([true_root(p, 0.5) for p in table["p"]])
    half = (np.log(table["high"]) - np.log(table["low"])) / 2 * 3.29 / 1.96
    centre = (np.log(table["high"]) + np.log(table["low"])) / 2
    assert np.all(np.abs(np.log(truth) - centre) <= half), table[ROOT_COLUMNS]
    assert np.all(np.abs(table["root"] / truth - 1) < 0.1)
    assert first.lanes_run == first.lanes_asked > 0 and first.stages >= 2
    # every evaluated point is stored as ordinary rows, each (p, gap) with the replicates the solve used
    rows = load_results(first.out)
    counts = rows.groupby(["p", "gap"])["rep"].agg(["nunique", "max"]).reset_index()
    evidence = first.evidence.merge(counts, on=["p", "gap"])
    assert len(evidence) == len(first.evidence) and (evidence["reps"] == evidence["nunique"]).all()
    assert (evidence["max"] == evidence["reps"] - 1).all()
    # the files
    assert {p.name for p in first.files} == {
        "roots.csv",
        "evidence.csv",
        "solve.json",
        "solve.png",
        "solve.pdf",
    }
    stored = pd.read_csv(first.out / "roots.csv")
    assert np.allclose(stored["root"], table["root"]) and list(stored["status"]) == [
        "solved",
        "solved",
    ]
    record = json.loads((first.out / "solve.json").read_text())
    assert record["request"]["target"] == "hit@bernoulli=0.5" and record["code"]["hash"]

    again = solve(tmp_path)
    assert again.lanes_run == 0 and again.stages == first.stages
    pd.testing.assert_frame_equal(again.table, table)


def test_an_interrupted_solve_finishes_with_the_same_roots(tmp_path, monkeypatch):
    whole = solve(tmp_path, "whole", figure=False)
    calls = {"n": 0}
    real = runner.run_experiment

    def stopping(*args, **kw):
        calls["n"] += 1
        if calls["n"] == 3:  # Ctrl-C in the third stage, after part of it is stored
            kw = {**kw, "reps_at": dict(list(kw["reps_at"].items())[:1])}
            real(*args, **kw)
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr("dpsim.engine.solving.solve.run_experiment", stopping)
    with pytest.raises(KeyboardInterrupt):
        solve(tmp_path, "cut", figure=False)
    monkeypatch.setattr("dpsim.engine.solving.solve.run_experiment", real)
    resumed = solve(tmp_path, "cut", figure=False)
    assert 0 < resumed.lanes_run < whole.lanes_run
    pd.testing.assert_frame_equal(resumed.table, whole.table)


def test_the_budget_is_never_exceeded(tmp_path):
    full = solve(tmp_path, "full", figure=False)
    cut = solve(tmp_path, "cut", figure=False, budget=full.lanes_asked // 3)
    assert 0 < cut.lanes_asked <= full.lanes_asked // 3 and cut.stages < full.stages
    assert cut.table["lanes"].sum() == cut.lanes_asked
    # a larger budget continues the same solve in the same folder
    more = solve(tmp_path, "cut", figure=False)
    pd.testing.assert_frame_equal(more.table, full.table)
    # a budget below the first stage runs nothing and writes nothing
    none = solve(tmp_path, "none", figure=False, budget=10)
    assert none.stages == 0 and none.files == [] and not (tmp_path / "none").exists()
    assert set(none.table["status"]) == {"undecided"}


def test_a_target_never_reached_is_not_bracketed(tmp_path):
    result = solve(
        tmp_path, target="hit=0.5", within=(1.5, 4.0), figure=False
    )  # p(x) > 0.9 throughout
    assert list(result.table["status"]) == ["above_target", "above_target"]
    assert result.table["root"].isna().all()
    assert (result.table["searched_low"] == 1.5).all() and (
        result.table["searched_high"] == 4.0
    ).all()


def test_an_analysis_axis_gets_disjoint_replicates_per_value(tmp_path):
    result = solve_experiment(
        ANALYSIS,
        axis="eps",
        target="hit=0.5",
        within=(0.05, 4.0),
        seed=1,
        overrides={"p": [0.5]},
        out=tmp_path / "eps",
        progress=False,
        figure=False,
    )
    assert result.table["status"].tolist() == ["solved"]
    low, high = np.log(result.table["low"][0]), np.log(result.table["high"][0])
    assert (
        abs(np.log(0.5) - (low + high) / 2) <= (high - low) / 2 * 3.29 / 1.96
    )  # the 99.9% interval
    assert (
        result.lanes_run == result.lanes_asked
    )  # a stage adding a value of ε reruns no stored lane
    rows = load_results(result.out)
    # one data point; the replicates of its values of ε were taken one after another
    assert rows["point"].nunique() == result.evidence[["eps"]].drop_duplicates().shape[0]
    assert rows["rep"].max() + 1 == result.evidence["reps"].sum() == result.lanes_asked


def test_a_shape_axis_is_solved_on_integers(tmp_path):
    """n, a shape axis (a program per value): the finder asks integers only, every asked n is
    stored as its own shape point, and the root lies where the closed form puts it."""
    result = solve_experiment(
        SHAPE,
        axis="n_items",
        target="hit=0.5",
        seed=1,
        out=tmp_path / "n",
        progress=False,
        figure=False,
    )
    assert result.table["status"].tolist() == ["solved"]
    asked = result.evidence["n_items"].to_numpy()
    assert np.all(asked == np.round(asked)) and 4 <= asked.min() and asked.max() <= 200
    assert sorted(load_results(result.out)["n_items"].unique()) == sorted(set(asked.astype(int)))
    low, high = np.log(result.table["low"][0]), np.log(result.table["high"][0])
    assert abs(np.log(true_root(20.0, 0.5)) - (low + high) / 2) <= (high - low) / 2 * 3.29 / 1.96


def test_parse_target():
    assert parse_target("hit=0.5", DATA) == ("hit", "bernoulli", 0.5)
    assert parse_target(" hit @ bernoulli = 0.25 ", DATA) == ("hit", "bernoulli", 0.25)
    for text, message in [
        ("hit", "METRIC"),
        ("hot=0.5", "did you mean 'hit'"),
        ("hit@bernouli=0.5", "did you mean 'bernoulli'"),
        ("hit=high", "'high' is not a number"),
        ("hit=nan", "finite"),
        ("hit@=0.5", "METRIC"),
    ]:
        with pytest.raises(UsageError, match=message):
            parse_target(text, DATA)


def test_the_command_solves_and_prints_the_roots(tmp_path, monkeypatch, capsys):
    code, out, err = run_in_process(
        [
            "solve",
            f"{STUDY}:solve-data",
            "--for",
            "gap",
            "--target",
            "hit=0.5",
            "--seed",
            "1",
            "--out",
            tmp_path / "s",
        ],
        tmp_path,
        monkeypatch,
        capsys,
    )
    assert code == 0, err
    assert "stage 1: 2 configs, 640 lanes" in err
    lines = out.splitlines()
    assert lines[0].startswith(
        "solve-data: gap where mean hit (bernoulli) = 0.5, searched [0.05, 4]"
    )
    assert sum(" solved " in line for line in lines) == 2
    assert "wrote roots.csv, evidence.csv, solve.json, solve.png, solve.pdf" in out


BAD = [
    (["--for", "gp", "--target", "hit=0.5"], "unknown axis (did you mean 'gap'?)"),
    (["--for", "gap", "--target", "hot=0.5"], "unknown metric 'hot' (did you mean 'hit'?)"),
    (["--for", "gap", "--target", "hit@bernouli=0.5"], "unknown method 'bernouli'"),
    (["--for", "gap", "--target", "hit=0.5", "--within", "0.1"], "--within '0.1': write LO:HI"),
    (["--for", "gap", "--target", "hit=0.5", "--within", "2:1"], "need LO < HI"),
    (["--for", "gap", "--target", "hit=0.5", "--within", "0.1:inf"], "finite"),
    (["--for", "gap", "--target", "hit=0.5", "--within=-1:2"], "gap=-1"),
    (["--for", "gap", "--target", "hit=0.5", "--set", "p=2"], "p=2"),
    (
        ["--for", "gap", "--target", "hit=0.5", "--finder", "newton"],
        "unknown root-finding method 'newton'",
    ),
    (["--for", "gap", "--target", "hit=0.5", "--budget", "0"], "--budget 0"),
    (["--for", "gap", "--target", "hit=0.5", "--level", "1.5"], "confidence level 1.5"),
    (["--for", "eps", "--target", "hit=0.5"], "--for eps: it has the one value 1"),
    (["--for", "n_items", "--target", "hit=0.5"], "--for n_items: it has the one value 2"),
]


@pytest.mark.parametrize("args, message", BAD)
def test_bad_input_is_refused_in_one_line_writing_nothing(
    tmp_path, monkeypatch, capsys, args, message
):
    line = refused(
        ["solve", f"{STUDY}:solve-data", *args, "--out", tmp_path / "s"],
        tmp_path,
        monkeypatch,
        capsys,
    )
    assert message in line, line


def test_an_infinite_default_end_and_another_request_are_refused(tmp_path, monkeypatch, capsys):
    line = refused(
        [
            "solve",
            f"{STUDY}:solve-analysis",
            "--for",
            "eps",
            "--target",
            "hit=0.5",
            "--out",
            tmp_path / "s",
        ],
        tmp_path,
        monkeypatch,
        capsys,
    )
    assert "end at inf" in line and "--within" in line
    solve(tmp_path, "one", figure=False, budget=700)
    with pytest.raises(UsageError, match="holds another solve \\(target"):
        solve(tmp_path, "one", target="hit=0.6")
