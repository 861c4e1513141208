"""Studies that fail say so in one line: an exception in a study's own code (derived values,
truth, generate, a method, the figure) names the stage, the grid point and the exception, exits
non-zero and writes nothing (`dpsim --traceback` shows all of it); a metric that is NaN in
some rows is counted and warned about when it is computed, kept in the manifest and marked in
the figure, whose panel with no finite value is drawn empty. And the smaller refusals: an empty
--out, a run of days or beyond the free disk, verify --reps 0, a study without an Experiment;
`dpsim merge` draws the merged figure; a figure without a title of its own takes the
experiment's; reproduce.sh lists the figures it wrote."""

from __future__ import annotations

import json
import math
import subprocess
import textwrap
import warnings
from pathlib import Path

import pandas as pd
import pytest

from dpsim.cli import main
from dpsim.errors import DpsimNote
from dpsim.engine import FigureSpec, Panel
from dpsim.engine.presentation.plots import draw_figures
from laplace_study import study_text

STUDY = study_text("errs", n_items=8, reps=4, region=(0.5, 2.0), figure=True)
RESULT = 'return {"noise_ms": jnp.mean(noise ** 2)}'


@pytest.fixture
def study(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPSIM_JAX_CACHE", "off")
    monkeypatch.setenv("DPSIM_TRACEBACK", "")  # undone after the test (--traceback sets it)
    path = tmp_path / "study.py"
    path.write_text(textwrap.dedent(STUDY))
    return path


DERIVED = STUDY.replace("from dpsim.engine import", "from dpsim.engine import Derived,").replace(
    "reps=4,", 'reps=4, derived=(Derived(("s",), lambda p: {"s": 1 / (p["eps"] - 1)}),),'
)
GENERATE = STUDY.replace(
    '    return {"W": sample_er', '    raise KeyError("no W here")\n    return {"W": sample_er'
)


@pytest.mark.parametrize(
    "text, words",
    [
        (DERIVED, ["derived 's' failed: ZeroDivisionError", "at n_items=8, p=1.0, eps=1.0"]),
        (GENERATE, ["generate failed: KeyError", "no W here", "at n_items=8"]),
        (
            STUDY.replace("truth=lambda key, shape: {}", "truth=lambda key, shape: 1 / 0"),
            ["truth failed: ZeroDivisionError", "at n_items=8"],
        ),
    ],
)
def test_an_exception_in_a_study_is_one_line_naming_stage_and_point(study, capsys, text, words):
    study.write_text(text)
    assert main(["run", "study.py", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and all(w in err for w in words) and "--traceback" in err, err
    assert not (study.parent / "runs" / "errs").exists()


def test_traceback_shows_a_derived_functions_own_exception(study):
    study.write_text(DERIVED)
    with pytest.raises(ZeroDivisionError):
        main(["--traceback", "run", "study.py", "--no-progress"])


HALF_NAN = STUDY.replace(
    RESULT,
    'return {"noise_ms": jnp.where(ctx.analysis["eps"] > 1.5, jnp.nan, jnp.mean(noise ** 2))}',
)


def test_nan_rows_are_counted_warned_and_kept(study, capsys):
    study.write_text(HALF_NAN)
    assert main(["run", "study.py", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "warning: errs: noise_ms of laplace is NaN in 4 of 8 rows" in err, err
    manifest = json.loads((study.parent / "runs" / "errs" / "manifest.json").read_text())
    assert manifest["diagnostics"]["nan"] == [
        {"method": "laplace", "metric": "noise_ms", "nan": 4, "rows": 8}
    ]
    assert (study.parent / "runs" / "errs" / "figure.png").is_file()


def _table(values) -> pd.DataFrame:
    table = pd.DataFrame(
        {
            "eps": [1.0, 1.0, 2.0, 2.0],
            "method": "m",
            "rep": [0, 1, 0, 1],
            "point": [0, 0, 1, 1],
            "err": values,
        }
    )
    table.attrs["method_columns"] = ["err"]
    return table


SPEC = FigureSpec(
    x="eps", curve="method", xlabel="ε", curve_label="", panels=(Panel("err", "m", "error"),)
)


def test_a_figure_marks_nan_rows_and_draws_a_panel_without_values_empty():
    (drawn,) = draw_figures(_table([1.0, 2.0, math.nan, 3.0]), SPEC)
    assert any("err NaN in 1 of 4 rows" in t.get_text() for t in drawn.figure.axes[0].texts)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (drawn,) = draw_figures(
            _table([math.nan] * 4), SPEC
        )  # was: "has no data", exit 2 after the run
    assert any("no finite value of err" in t.get_text() for t in drawn.figure.axes[0].texts)
    assert any(
        issubclass(w.category, DpsimNote) and "drawn empty" in str(w.message) for w in caught
    )


def test_a_figure_without_its_own_title_takes_the_experiments(study, monkeypatch):
    from dpsim.engine.presentation import plots

    titles, save = [], plots.save_figure

    def saved(drawn, stem):
        titles.append(drawn.figure._suptitle.get_text())
        return save(drawn, stem)

    monkeypatch.setattr(plots, "save_figure", saved)
    study.write_text(STUDY.replace('title="t"', 'title="Laplace noise on the counts"'))
    assert main(["run", "study.py", "--no-progress"]) == 0
    assert titles == ["Laplace noise on the counts"]


def test_an_empty_out_is_refused(study, capsys):
    assert main(["run", "study.py", "--out", "", "--no-progress"]) == 2
    assert "--out '' names no folder" in capsys.readouterr().err
    assert not (study.parent / "runs" / "errs").exists()
    assert main(["verify", "study.py", "--runs", " ", "--no-progress"]) == 2  # would write into .
    assert "--runs ' ' names no folder" in capsys.readouterr().err
    assert sorted(p.name for p in study.parent.iterdir()) == ["study.py"]


def test_a_run_of_days_is_refused_without_yes(study, capsys, monkeypatch):
    assert (
        main(["run", "study.py", "--reps", "1000000000", "--no-progress"]) == 2
    )  # stdin is not a terminal
    err = capsys.readouterr().err.strip()
    assert (
        len(err.splitlines()) == 1
        and "nothing started" in err
        and "--yes" in err
        and " h by the" in err
    ), err
    assert not (study.parent / "runs" / "errs").exists()
    import dpsim.cli

    monkeypatch.setattr(dpsim.cli, "LARGE_RUN_SECONDS", 0.0)  # every run is "long": --yes starts it
    assert main(["run", "study.py", "--no-progress"]) == 2
    assert main(["run", "study.py", "--yes", "--no-progress"]) == 0


def test_verify_refuses_reps_0_before_its_header(study, capsys):
    assert main(["verify", "study.py", "--reps", "0", "--runs", "vr"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "--reps 0 must be an integer ≥ 1" in captured.err


def test_a_study_without_an_experiment_says_so(study, capsys):
    study.write_text("X = 1\n")
    assert main(["run", "study.py"]) == 2
    err = capsys.readouterr().err
    assert "defines no Experiment" in err and "name one as" not in err


def test_merge_draws_the_merged_figure(study, capsys):
    for part in ("1/2", "2/2"):
        assert (
            main(["run", "study.py", "--part", part, "--out", f"p{part[0]}", "--no-progress"]) == 0
        )
    assert main(["merge", "merged", "p1", "p2"]) == 0
    assert "figure: merged/figure.png" in capsys.readouterr().out
    assert (study.parent / "merged" / "figure.png").is_file() and (
        study.parent / "merged" / "figure.csv"
    ).is_file()


def test_reproduce_lists_the_figures_it_wrote(tmp_path):
    """nguyen-fig2 writes figure-mode=paper.png and figure-mode=strict.png, no figure.png: the last
    lines of scripts/reproduce.sh name what is there."""
    script = (
        (Path(__file__).resolve().parents[2] / "scripts" / "reproduce.sh").read_text().splitlines()
    )
    first = next(i for i, line in enumerate(script) if line.startswith('echo "reproduce: done'))
    last = next(i for i in range(first, len(script)) if script[i].startswith("done"))
    for name, files in (
        ("one", ["figure.png"]),
        ("two", ["figure-mode=paper.png", "figure-mode=strict.png"]),
    ):
        (tmp_path / name).mkdir()
        for f in files:
            (tmp_path / name / f).write_bytes(b"png")
    shell = "\n".join(
        [
            f"runs={tmp_path}",
            "experiments=(one two)",
            "start=$(date +%s)",
            *script[first : last + 1],
        ]
    )
    out = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, check=True).stdout
    for written in ("one/figure.png", "two/figure-mode=paper.png", "two/figure-mode=strict.png"):
        assert f"{tmp_path}/{written}" in out, out
    assert f"{tmp_path}/two/figure.png" not in out


def test_an_exception_drawing_the_figure_is_one_line(study, capsys):
    """A FigureSpec value of the wrong type fails inside matplotlib's layout: one line naming
    the figure; the rows computed before it are kept."""
    study.write_text(STUDY.replace('curve_label="method",', 'curve_label="method", columns="two",'))
    assert main(["run", "study.py", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "experiment 'errs': figure failed: TypeError" in err, err
    assert list((study.parent / "runs" / "errs" / "parts").glob("*.parquet"))
