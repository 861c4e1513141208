"""The Python API (dpsim.api, exported by ``import dpsim``) and a researcher's method beside a
paper's (``Experiment.with_methods``, examples/my_method.py).

Runs are tiny (cai-fig3 at n = 20, a few replicates): what is tested is that the API returns
the command's numbers as data, that bad input is the command's one-line error, and that a
method added to a paper's experiment leaves the paper's rows bit for bit as they were.
"""

import dataclasses
import math
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpsim
from dpsim.cli import main
from dpsim.errors import UsageError
from dpsim.engine.registry import load_study

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "my_method.py"
SMALL = {"n_items": 20, "p": [0.25, 1.0], "eps": [2.0, math.inf]}
REPS = 3


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The paper's cai-fig3 and the example's cai-fig3+winrate on one small grid."""
    folder = tmp_path_factory.mktemp("api")
    paper = dpsim.run("cai-fig3", reps=REPS, out=folder / "paper", progress=False, **SMALL)
    mine = load_study(str(EXAMPLE)).EXPERIMENT
    extended = dpsim.run(mine, reps=REPS, out=folder / "extended", progress=False, **SMALL)
    return paper, extended


def test_overrides_are_scalars_or_sequences_and_bad_input_is_one_line(tmp_path):
    from dpsim.api import overrides_of

    assert overrides_of(
        {"eps": 1.0, "link": "probit", "p": (0.5, 1), "n_items": range(20, 40, 10)}
    ) == {"eps": [1.0], "link": ["probit"], "p": [0.5, 1], "n_items": [20, 30]}
    with pytest.raises(UsageError, match=r"eps=\{.*give one value or a list"):
        overrides_of({"eps": {"a": 1}})
    with pytest.raises(UsageError, match=r"did you mean 'eps'"):
        dpsim.run("cai-fig3", epss=1.0, out=tmp_path / "never", progress=False)
    with pytest.raises(UsageError, match="did you mean 'cai-fig3'"):
        dpsim.run("cai-fig33", out=tmp_path / "never", progress=False)
    with pytest.raises(UsageError, match="must be an integer"):
        dpsim.run("cai-fig3", reps=0, out=tmp_path / "never", progress=False)
    assert not (tmp_path / "never").exists()
    with pytest.raises(UsageError, match="holds no dpsim run"):
        dpsim.load(tmp_path)


def test_catalog_and_show_return_data():
    found = dpsim.catalog("cai")
    assert "cai-fig3" in set(found["experiments"]["name"])
    assert (found["checks"]["paper"] == "cai").all() and len(found["mutants"]) > 0
    shown = dpsim.show("cai-fig3")
    axes = shown["axes"].set_index("axis")
    assert axes.loc["eps", "kind"] == "analysis" and math.inf in axes.loc["eps", "default"]
    assert (
        list(shown["methods"]["method"]) == ["mle", "counts"]
        and shown["source"] == "dpsim.experiments.cai"
    )
    assert shown["lines"][0].startswith("cai-fig3: ")


def test_pins_return_data():
    """`dpsim.pins`: what `dpsim list PAPER --pins` prints, one row per declared component;
    every paper's without a name; an unknown paper is the one-line error."""
    table = dpsim.pins("cai")
    assert list(table.columns) == [
        "paper",
        "component",
        "kind",
        "description",
        "checks",
        "mutants",
        "gap",
    ]
    row = table.set_index("component").loc["mechanism:edge-counts"]
    assert (
        "cai-level-edge-counts-noise" in row["checks"]
        and "cai-edge-counts-noise-double" in row["mutants"]
    )
    assert set(dpsim.pins()["paper"]) >= {"cai", "chowdhury", "nguyen", "xu"}
    with pytest.raises(UsageError, match=r"unknown paper 'cia'.*did you mean 'cai'"):
        dpsim.pins("cia")


def test_a_method_beside_the_paper_leaves_its_rows_bit_for_bit(runs):
    """Common random numbers: the paper's methods' rows of the extended run are those of the
    paper's run to the last bit; the added method has rows at every grid point."""
    paper, extended = runs
    assert extended.experiment.name == "cai-fig3+winrate"
    mine = extended.table
    theirs = paper.table.reset_index(drop=True)
    same = mine[mine["method"] != "winrate"].reset_index(drop=True)[theirs.columns]
    pd.testing.assert_frame_equal(same, theirs, check_exact=True)
    added = mine[mine["method"] == "winrate"]
    assert len(added) == len(theirs) // 2 and added["relative_hamming"].between(0, 1).all()
    assert extended.manifest["source"].endswith("my_method.py:cai-fig3+winrate")


def test_with_methods_refuses_bad_additions_and_extends_the_figure():
    base = dpsim.experiment_named("cai-fig3")
    example = load_study(str(EXAMPLE))
    with pytest.raises(UsageError, match="already has a method 'mle'"):
        base.with_methods(mle=example.WIN_RATE)
    with pytest.raises(UsageError, match="is not a dpsim Method"):
        base.with_methods(mine=lambda key, ctx: {})
    panels = example.EXPERIMENT.figure.panels
    assert [p.method for p in panels] == ["mle", "mle", "mle", "counts", "winrate"]
    assert "Win rate" in example.EXPERIMENT.figure.title
    # where the figure's curves are methods, the new method is one more curve (same panels)
    from dpsim.engine import FigureSpec, Panel
    from dpsim.engine.definition.figure import figure_with_methods

    by_method = FigureSpec(
        x="eps",
        curve="method",
        xlabel="ε",
        curve_label="method",
        panels=(Panel("relative_hamming", None, "Hamming"),),
        curve_labels={"mle": "MLE"},
    )
    drawn = figure_with_methods(by_method, base.methods, {"winrate": example.WIN_RATE})
    assert drawn.panels == by_method.panels and drawn.curve_labels == {
        "mle": "MLE",
        "winrate": "Win rate",
    }
    # a method that does not mask padding runs the experiment unpadded (its arrays are then its own size)
    with pytest.warns(UserWarning, match="runs unpadded, one program per n_items value"):
        unpadded = base.with_methods(
            plain=dataclasses.replace(example.WIN_RATE, masks_padding=False)
        )
    assert base.tuning.padding is not None and unpadded.tuning.padding is None
    moved = dpsim.checks_for(example.EXPERIMENT)
    assert moved and all(
        c.experiment == "cai-fig3+winrate" and c.name.startswith("cai-fig3+winrate") for c in moved
    )
    assert example.EXPERIMENT.extends == "cai-fig3"
    renamed = base.with_methods(name="my-study", winrate=example.WIN_RATE)
    assert {c.experiment for c in dpsim.checks_for(renamed)} == {"my-study"}
    with pytest.raises(UsageError, match="extends no experiment"):
        dpsim.checks_for(base)


def test_summary_is_the_commands_numbers(runs, capsys):
    """Results.summary is what `dpsim summary` prints; the command names the metric, advises
    in its own options, and notes an incomplete run."""
    paper, _ = runs
    table = paper.summary("l2", by=["p", "eps"])
    assert table.attrs["metric"] == "l2" and list(table["method"].unique()) == ["mle"]
    rows = paper.table[
        (paper.table["method"] == "mle") & (paper.table["p"] == 1.0) & (paper.table["eps"] == 2.0)
    ]
    hit = table[(table["p"] == 1.0) & (table["eps"] == 2.0)].iloc[0]
    assert hit["mean"] == pytest.approx(rows["l2"].mean(), rel=1e-12) and hit["n"] == REPS
    assert hit["ci_low"] < hit["mean"] < hit["ci_high"]
    assert main(["summary", str(paper.out), "--metric", "l2", "--by", "p", "eps"]) == 0
    printed = capsys.readouterr().out
    assert (
        printed.splitlines()[1:]
        == table.drop(columns="metric")
        .to_string(index=False, float_format=lambda v: f"{v:.4g}")
        .splitlines()
    )
    assert main(["summary", str(paper.out)]) == 0
    assert capsys.readouterr().out.startswith(
        "l2: mean, sd, n and 95% interval per group (the first metric"
    )
    assert main(["summary", str(paper.out), "--by", "esp"]) == 2
    assert (
        "--by esp: 'esp' is not an axis of this run (did you mean --by eps?)"
        in capsys.readouterr().err
    )
    assert main(["summary", str(paper.out), "--metric", "l2", "--by", "eps"]) == 2
    err = capsys.readouterr().err
    assert (
        "(--where p=" in err and "--by eps p" in err and "--pool p" in err and "where={" not in err
    )
    with pytest.raises(UsageError, match=r"where=\{'p'"):
        paper.summary("l2", by=["eps"])
    pooled = paper.summary("l2", by="eps", pool="p")  # a name, not its letters
    assert list(pooled["n"]) == [2 * REPS, 2 * REPS]
    slopes = paper.summary(slope="l2:p", where={"eps": 2.0})
    assert list(slopes["method"]) == ["mle"] and slopes["slope"].notna().all()


def test_an_incomplete_folder_gets_a_note(runs, tmp_path, capsys):
    import json
    import shutil

    paper, _ = runs
    copy = tmp_path / "killed"
    shutil.copytree(paper.out, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").write_text(json.dumps({**manifest, "complete": False}))
    assert main(["summary", str(copy), "--metric", "l2", "--by", "p", "eps"]) == 0
    assert "holds an incomplete run" in capsys.readouterr().err
    assert not dpsim.load(copy).complete


def test_plot_returns_figures_and_saves_them(runs, tmp_path):
    _, extended = runs
    figures = extended.plot()
    assert len(figures) == 1 and len([ax for ax in figures[0].axes if ax.has_data()]) == 5
    paths = extended.plot(metric="relative_hamming", to=tmp_path / "hamming")
    assert [p.suffix for p in paths] == [".png", ".pdf", ".csv"] and all(p.exists() for p in paths)
    drawn = pd.read_csv(paths[2])
    assert set(drawn["method"]) == {"mle", "counts", "winrate"}
    # `dpsim plot` finds the study file's experiment again from the manifest's source
    assert main(["plot", str(extended.out), "--to", str(tmp_path / "again")]) == 0


def test_verify_returns_verdicts_with_intervals_and_regions(runs, tmp_path):
    """verify on an experiment object and a check of one's own (both defined here)."""
    from dpsim.engine import comparison_check

    example = load_study(str(EXAMPLE))
    small = dataclasses.replace(
        dpsim.experiment_named("cai-fig3"),
        name="cai-fig3-small",
        reps=REPS,
        axes={
            **dpsim.experiment_named("cai-fig3").axes,
            **{"n_items": [20], "p": [0.25], "eps": [2.0]},
        },
    )
    mine = small.with_methods(winrate=example.WIN_RATE)
    check = comparison_check(
        "small-winrate-vs-counts",
        mine.name,
        "relative_hamming",
        "winrate",
        "counts",
        description="win rate beats counts",
    )
    found = dpsim.verify(mine, check, runs=tmp_path, progress=False)
    row = found.table.set_index("name").loc["small-winrate-vs-counts"]
    assert (
        row["verdict"] in {"PASS", "FAIL", "INCONCLUSIVE"}
        and row["claim"] == "win rate beats counts"
    )
    assert (
        row["low"] <= row["value"] <= row["high"]
        and row["region_high"] == 0.0
        and row["region_low"] == -math.inf
    )
    assert sum(found.counts.values()) == 1 and re.match(
        r"[01] passed, [01] failed", found.lines[-1]
    )
    assert found.ok == (row["verdict"] != "FAIL")
    with pytest.raises(UsageError, match="pass it too"):
        dpsim.verify(check, runs=tmp_path, progress=False)


def test_an_experiment_defined_in_a_session_runs_and_plots(tmp_path, recwarn):
    """An experiment no file holds (a notebook's): it runs and plots from its Results; a later
    load names what is missing."""
    mine = dataclasses.replace(dpsim.experiment_named("cai-fig3"), name="cai-session")
    # the grid of the module's runs: the paper's programs, read from the compilation cache
    results = dpsim.run(mine, reps=REPS, out=tmp_path / "session", progress=False, **SMALL)
    assert any("defined in this session only" in str(w.message) for w in recwarn)
    assert len(results.plot()) == 1
    with pytest.raises(UsageError, match=r"pass it: dpsim.load\(folder, experiment=...\)"):
        dpsim.load(results.out).experiment
    assert len(dpsim.load(results.out, mine).plot()) == 1


def test_the_example_runs_as_a_script_and_a_study(tmp_path, monkeypatch, capsys):
    """The example's main() and `dpsim run` of the file, on the grid of the module's runs (the
    example's programs are the extended run's)."""
    monkeypatch.chdir(tmp_path)
    example = load_study(str(EXAMPLE))
    results = example.main(reps=REPS, **SMALL)
    printed = capsys.readouterr().out
    assert "winrate" in printed and "figure: runs/cai-fig3+winrate/figure.png" in printed
    assert (
        main(
            [
                "run",
                str(EXAMPLE),
                "--reps",
                str(REPS),
                "--set",
                "n_items=20",
                "--set",
                "p=0.25,1",
                "--set",
                "eps=2,inf",
                "--no-progress",
            ]
        )
        == 0
    )  # the same folder, nothing left to compute
    assert "0 replicate lanes" in capsys.readouterr().out
    per_method = 2 * 2 * REPS  # p × ε × replicates
    assert results.table["method"].value_counts().to_dict() == {
        "mle": per_method,
        "counts": per_method,
        "winrate": per_method,
    }


def test_solve_returns_roots_with_intervals(tmp_path):
    """dpsim.solve on tests/solve_study.py's Bernoulli rate, whose root is known in closed form."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from solve_study import true_root

    found = dpsim.solve(
        f"{Path(__file__).resolve().parents[1] / 'solve_study.py'}:solve-data",
        axis="gap",
        target="hit=0.5",
        within=(0.05, 4.0),
        seed=1,
        out=tmp_path / "solve",
        progress=False,
        p=0.25,
    )
    row = found.table.iloc[0]
    assert len(found.table) == 1 and row["p"] == 0.25 and row["status"] == "solved"
    truth = true_root(0.25, 0.5)
    half = (np.log(row["high"]) - np.log(row["low"])) / 2 * 3.29 / 1.96  # the 99.9% interval
    assert abs(np.log(truth) - (np.log(row["high"]) + np.log(row["low"])) / 2) <= half
    with pytest.raises(UsageError, match="did you mean 'gap'"):
        dpsim.solve(
            found.problem.experiment, axis="gap", target="hit=0.5", out=tmp_path / "never", gapp=1.0
        )


def test_an_experiment_imported_into_a_script_is_found_in_its_own_file(tmp_path):
    """A script that imports a study's experiment records the study's file as its source, not
    the script's: loading the source again (dpsim plot, dpsim report) must not run the script."""
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(EXAMPLE.parent)!r})
        from my_method import EXPERIMENT
        from dpsim.api import source_of
        print(source_of(EXPERIMENT))
    """)
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == f"{EXAMPLE}:cai-fig3+winrate"


def test_folder_commands_and_audits_return_data(tmp_path):
    """dpsim.info / repair / merge / audit: the data the commands print."""
    small = {"n_items": 20, "p": [1.0], "eps": [1.0]}
    parts = [
        dpsim.run("cai-fig2", reps=2, out=tmp_path / f"p{i}", progress=False, **small)
        for i in (1, 2)
    ]
    found = dpsim.info(parts[0].out)
    assert found["experiment"] == "cai-fig2" and found["complete"] is True
    assert dpsim.repair(parts[0].out)["changed"] is False
    merged = dpsim.merge(
        tmp_path / "merged", [p.out for p in parts]
    )  # the same lanes twice: kept once
    pd.testing.assert_frame_equal(
        merged.table.sort_values(["point", "rep", "method"]).reset_index(drop=True),
        parts[0].table.sort_values(["point", "rep", "method"]).reset_index(drop=True),
    )
    audits = dpsim.audit("chowdhury-label-rr", eps=[1.0], samples=1000)
    assert list(audits.columns) == list(dpsim.api.AUDIT_COLUMNS) and len(audits) >= 1
    assert audits["within_budget"].all() and (audits["exact_loss"] <= 1.0 + 1e-12).all()
    with pytest.raises(UsageError, match="eps=inf"):
        dpsim.audit("chowdhury-label-rr", eps=[float("inf")])


def test_plan_and_show_give_what_the_dry_run_and_show_print(capsys):
    """dpsim.plan is ``dpsim run --dry-run`` as data; dpsim.show carries the memory line (and,
    asked, the estimate) that ``dpsim show`` prints."""
    planned = dpsim.plan("cai-fig2", reps=3, n_items=20, p=[0.5, 1.0], eps=1.0)
    assert planned.lanes == 6 and planned.compute_seconds() > 0
    assert (
        main(
            [
                "run",
                "cai-fig2",
                "--reps",
                "3",
                "--set",
                "n_items=20",
                "--set",
                "p=0.5,1",
                "--set",
                "eps=1",
                "--dry-run",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out.splitlines()
    assert printed[1:] == planned.describe() == str(planned).splitlines()  # print(plan) reads as it
    shown = dpsim.show("cai-fig2")
    assert main(["show", "cai-fig2", "--no-estimate"]) == 0
    assert capsys.readouterr().out.splitlines() == [*shown["lines"], "  " + shown["memory"]]
    with pytest.raises(UsageError, match="n_itemz"):
        dpsim.plan("cai-fig2", n_itemz=20)


def test_every_exported_name_is_the_apis_own():
    """``import dpsim`` names the API's functions without importing it (dpsim.API); each of
    them, and nothing else, is what ``from dpsim.api import *`` gives."""
    import dpsim.api

    assert dpsim.api.__all__ == list(dpsim.API)
    for name in dpsim.API:
        assert getattr(dpsim, name) is getattr(dpsim.api, name), name
