"""Conformance: every registered experiment gets these tests with no test code of its own.

"Registered": the installed papers' experiments (entry points of ``dpsim.papers``), the example
study's (``examples/custom_study.py``, a study file given by path) and a fifth, toy paper's
(``tests/toy_paper``, installed here for this module by its one entry-point line). For each:

* **bad input** through ``dpsim run`` (in this process): an unknown axis, one value of each kind
  that each of its axes' types refuses (:meth:`AxisType.invalid_examples`) and, where it has the
  shared axes ``k`` and ``n_items``, a top-k size k = n_items: exit status 2, one line on stderr
  naming the value, nothing written (neither ``--out`` nor the working directory);
* a **smoke run** at (at most) the first two values of every axis and at most two shapes to
  compile (:func:`smoke_axes`: a shape axis of categories, such as a dataset, keeps two; a shape
  axis of sizes keeps its two smallest only in the first experiment of each paper that has one,
  and its smallest elsewhere), 2 replicates, with the default workers and a watchdog: it
  finishes (a hang stops as :class:`RunStalled` instead of hanging the suite), with one row per
  grid point, replicate and method, every declared metric and diagnostic present. This is the
  suite's one smoke run of every experiment;
* its **figure** drawn from that run by ``dpsim plot RUN --to FILE`` into non-empty files (or,
  for an experiment that declares none, a one-line refusal);
* its **checks** judged on that run as ``dpsim verify`` judges them: a verdict for each (on 2
  replicates mostly INCONCLUSIVE, or an ERROR line saying why it cannot be evaluated), never an
  exception.

One smoke run per experiment is shared by its tests (a module-scoped fixture). Two shapes make
the background thread compile the next step's program while chunks of the previous one compute
(tests/engine/test_no_hang.py stresses that path); a second size of the same code adds a program
to compile and little else, so each paper runs two sizes once. Every wait has the watchdog's
timeout (dpsim/engine/execution/threads.py) and worker threads are daemons, so a stuck run
cannot hold the suite. XLA:CPU's intra-op pool is left at its default (``PJRT_NPROC`` is read
when JAX creates its CPU client, before this module runs in a whole-suite run).

The console script's exit status and one-line error, end to end in a fresh interpreter, are
tested once, in tests/engine/test_cli.py.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import math
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpsim.errors import RunStalled
from dpsim.engine import registry
from dpsim.engine.definition.axes import axis_type
from dpsim.engine.judgement.verdicts import CheckResult
from dpsim.engine.definition.grid import expand_grid
from dpsim.engine.execution.runner import run_experiment
from dpsim.engine.storage.store import load_results
from dpsim.engine.judgement.verdicts import VERDICTS
from dpsim.engine.judgement.verify import family_size, judge

from cli_cases import refused, run_in_process
from dpsim.engine.scaffold import SKELETON, new_paper

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "examples" / "custom_study.py"
TOY_ENTRY_POINT = (
    "[dpsim.papers]\ntoy = toy_paper\nfifth = fifth\n"  # one registration line each: the toy paper
)
# (tests/toy_paper) and a paper written by `dpsim new-paper fifth` into the installed folder
REPS = 2
SMOKE_VALUES = 2  # the first values of each axis in the smoke run
WATCHDOG = 240  # seconds without progress before a smoke run stops as RunStalled


# ----------------------------------------------------------------------------- the toy paper
@contextmanager
def toy_paper_installed(folder: Path):
    """The toy paper, and a paper written from the template (``fifth``), installed while the
    block runs: a ``toy_paper-0.0.dist-info`` holding their entry-point lines, in ``folder`` put on ``sys.path`` (where importlib.metadata looks
    for installed distributions; ``toy_paper`` itself is imported from tests/). The registry
    forgets what it found on entry and on exit, so no other test module sees the toy paper."""
    if not (folder / "fifth").exists():
        new_paper("fifth", folder, title="A fifth paper, as dpsim new-paper writes it")
    info = folder / "toy_paper-0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy_paper\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(TOY_ENTRY_POINT)
    sys.path.append(str(folder))
    importlib.invalidate_caches()
    registry.forget_installed()
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m == "fifth" or m.startswith("fifth.")]:
            del sys.modules[name]  # written into this folder: the next install writes it afresh
        importlib.invalidate_caches()
        registry.forget_installed()


def _registered() -> dict[str, tuple]:
    """Every registered experiment by its target, as ``dpsim run`` takes it (an installed
    experiment's name, or ``path.py:NAME`` for the study file's): (the experiment, its source:
    the paper's package or the study file)."""
    with tempfile.TemporaryDirectory() as folder, toy_paper_installed(Path(folder)):
        found = registry.catalogue(str(STUDY))
        return {
            (source if registry.is_study(source) else name): (experiment, source)
            for name, experiment in found.experiments.items()
            for source in [found.source[name]]
        }


REGISTERED = _registered()
TARGETS = list(REGISTERED)
IDS = [target.rpartition(":")[2] for target in TARGETS]


@pytest.fixture(scope="module", autouse=True)
def toy_paper(tmp_path_factory):
    """The toy paper installed for this module's tests, as it was when they were collected."""
    with toy_paper_installed(tmp_path_factory.mktemp("site-packages")):
        yield


# ----------------------------------------------------------------------------- registration
def test_the_toy_paper_is_found_by_its_entry_point_and_named_by_it(tmp_path, monkeypatch, capsys):
    """One entry-point line registers the toy paper under its name: `dpsim list toy` lists
    both its experiments, the one not named after the paper included, and its checks."""
    found = registry.installed()
    assert found.papers["toy"].startswith("A toy paper")
    assert {"toy-noise", "noisy-borda-size"} <= set(found.experiments)
    assert found.source["noisy-borda-size"] == "toy_paper"
    code, out, err = run_in_process(["list", "toy"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert "toy-noise" in out and "noisy-borda-size" in out and "toy-noise-variance" in out
    assert "cai-fig1" not in out
    assert registry.experiment("noisy-borda-size")[1] == "toy_paper"
    assert {"cai", "chowdhury", "nguyen", "xu", "toy"} <= set(registry.paper_names())


def test_every_experiment_is_tested_here():
    """Every installed paper's experiments, the study file's and the toy paper's."""
    names = set(IDS)
    assert set(registry.installed().experiments) <= names
    assert {
        "borda-noise",
        "toy-noise",
        "noisy-borda-size",
        "fifth-noise",
        "cai-fig1",
        "xu-fig2",
    } <= names
    assert len(names) == len(IDS)


# ----------------------------------------------------------------------------- bad input
def bad_cases(experiment) -> list[tuple[list[str], list[str]]]:
    """The bad ``--set`` options for ``experiment``, each with the texts its error line must
    name: an unknown axis; each axis set to each kind of value its type refuses; and a
    top-k size ``k`` equal to ``n_items`` (the shared vocabulary's axes), where it has both."""
    cases = [(["--set", "nosuch=1"], ["nosuch"])]
    for axis in experiment.axes:
        for value in axis_type(axis, experiment.axis_types).invalid_examples():
            cases.append((["--set", f"{axis}={value}"], [axis, str(value)]))
    if "k" in experiment.axes and "n_items" in experiment.axes:
        n = min(v for v in experiment.axes["n_items"])
        cases.append((["--set", f"n_items={n}", "--set", f"k={n}"], [f"k={n}"]))
    return cases


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(target, tmp_path, monkeypatch, capsys):
    experiment, _ = registry.experiment(target)
    for options, names in bad_cases(experiment):
        line = refused(
            ["run", target, *options, "--out", tmp_path / "out", "--no-progress"],
            tmp_path,
            monkeypatch,
            capsys,
        )
        assert all(name in line for name in names), (options, line)


# ----------------------------------------------------------------------------- smoke run
@dataclass(frozen=True)
class Smoke:
    """One experiment's smoke run: the experiment, how `dpsim` names it, the axis values it
    ran ({axis: values}), where the run is, what the runner returned and the stored table."""

    experiment: object
    target: str
    axes: dict
    out: Path
    summary: object
    table: pd.DataFrame

    @property
    def points(self) -> int:
        """Grid points run: the product of the axes' value counts."""
        return math.prod(len(values) for values in self.axes.values())


def _numbers(values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def smoke_axes(experiment, sizes: int = 1) -> dict:
    """The smoke run's values: the first two of every axis, with at most two shape points
    (each a program to compile). Of the shape axes, only the first that holds two values keeps
    two: two categories where they are not numbers (a dataset, a design: different code or
    data), else its ``sizes`` smallest values (the same code at another size: the cheapest
    programs to build and run); the other shape axes keep their first value.

    Args: experiment; sizes: how many values a numeric shape axis keeps (1 or 2).
    Returns: {axis: values}."""
    axes, shaped = {}, False
    for axis, values in experiment.axes.items():
        values = list(values)
        if axis in experiment.shape_axes and len(values) > 1:
            numeric = _numbers(values)
            keep = 1 if shaped else (sizes if numeric else SMOKE_VALUES)
            values, shaped = (sorted(values) if numeric else values)[:keep], True
        axes[axis] = values[:SMOKE_VALUES]
    return axes


def _two_sizes() -> set[str]:
    """The targets whose smoke run keeps two sizes: in each paper (each registered source), the
    first experiment whose smoke run two sizes would change (:func:`smoke_axes`)."""
    chosen, sources = set(), set()
    for target, (experiment, source) in REGISTERED.items():
        if source not in sources and smoke_axes(experiment, 2) != smoke_axes(experiment, 1):
            chosen.add(target)
            sources.add(source)
    return chosen


TWO_SIZES = _two_sizes()


@pytest.fixture(scope="module", params=TARGETS, ids=IDS)
def smoke(request, tmp_path_factory) -> Smoke:
    """The experiment run at :func:`smoke_axes` (the first two values of every axis, two
    shapes at most, two sizes only in the :data:`TWO_SIZES` experiments), 2 replicates, with
    the default workers and the watchdog (its tests share it). A run that stops making progress
    fails its tests with the watchdog's one-line message."""
    target = request.param
    experiment, source = registry.experiment(target)
    out = tmp_path_factory.mktemp("smoke") / experiment.name
    axes = smoke_axes(experiment, sizes=2 if target in TWO_SIZES else 1)
    try:
        summary = run_experiment(
            experiment,
            reps=REPS,
            out=out,
            progress=False,
            source=source,
            overrides=axes,
            watchdog=WATCHDOG,
        )
    except RunStalled as exc:
        pytest.fail(f"{experiment.name} stalled: {exc}")
    return Smoke(experiment, target, axes, out, summary, load_results(out))


def test_smoke_run_finishes_with_a_row_per_point_replicate_and_method(smoke):
    """The run finishes with the default workers (no hang, no stall) and stores one row per
    grid point, replicate and method, each axis at the values it was given."""
    table, methods = smoke.table, smoke.experiment.methods
    assert len(table) == smoke.points * REPS * len(methods)
    assert smoke.summary.rows_written == len(table)
    assert table["point"].nunique() == smoke.points
    assert set(table["method"]) == set(methods) and set(table["rep"]) == set(range(REPS))
    assert not table.duplicated(["point", "rep", "method"]).any()
    grid = expand_grid(smoke.experiment, smoke.axes)
    for axis in smoke.axes:
        if axis in table:  # the values given; a shape axis's as resolved (k="auto": a number)
            shaped = axis in smoke.experiment.shape_axes
            given = {shape[axis] for shape in grid.shapes} if shaped else set(grid.axes[axis])
            assert set(table[axis].tolist()) == given, (axis, given, table[axis].unique())
    for name, method in methods.items():
        rows = table[table["method"] == name]
        for column in method.metrics:
            assert column in table, (name, column)
        for column in method.diagnostics:
            assert rows[column].notna().all(), (name, column)


def test_smoke_run_metrics_are_numbers(smoke):
    """Every declared metric is stored as a float, and every method reports a number (NaN is
    a metric's way of saying "undefined here", e.g. chowdhury's noise_sq for a fit on the
    boundary, so a method may leave some metrics NaN, but not all of them)."""
    for name, method in smoke.experiment.methods.items():
        rows = smoke.table[smoke.table["method"] == name]
        values = rows[list(method.metrics)].to_numpy(dtype=float)
        assert all(rows[m].dtype.kind == "f" for m in method.metrics), (name, rows.dtypes)
        assert not np.isnan(values).all(), (name, "every metric is NaN")


# ----------------------------------------------------------------------------- figure
def test_figure_is_drawn_from_the_run(smoke, tmp_path, monkeypatch, capsys):
    code, out, err = run_in_process(
        ["plot", smoke.out, "--to", tmp_path / "figure"], tmp_path, monkeypatch, capsys
    )
    if smoke.experiment.figure is None:
        assert (
            code == 2
            and err.strip()
            == f"dpsim: error: experiment {smoke.experiment.name!r} defines no figure"
        )
        return
    assert code == 0, err
    drawn = [
        Path(line.removeprefix("figure: "))
        for line in out.splitlines()
        if line.startswith("figure: ")
    ]
    assert any(p.suffix == ".png" for p in drawn), out
    for path in drawn:
        assert path.parent == tmp_path and path.stat().st_size > 0, path


# ----------------------------------------------------------------------------- checks
def test_checks_are_judged_on_the_run(smoke):
    found = registry.catalogue(smoke.target)
    checks = [c for c in found.checks.values() if c.experiment == smoke.experiment.name]
    family = family_size(checks)
    for check in checks:
        result = judge(check, smoke.table, family)
        assert isinstance(result, CheckResult) and result.name == check.name
        assert result.verdict in VERDICTS and "\n" not in result.line(), result.line()


# ----------------------------------------------------------------------------- the paper skeleton
CONTRACT = {"TITLE", "PAGE", "EXPERIMENTS", "CHECKS", "MUTANTS", "AUDITS", "COMPONENTS"}


def _package_folder(paper: str) -> Path:
    """The folder of a registered paper's package (its entry point's module)."""
    (module,) = [
        e.value for e in importlib.metadata.entry_points(group="dpsim.papers") if e.name == paper
    ]
    return Path(importlib.import_module(module).__file__).parent


@pytest.mark.parametrize("paper", ["toy", "fifth", "cai", "chowdhury", "nguyen", "xu"])
def test_every_paper_package_follows_the_skeleton(paper):
    """Every paper package holds the skeleton's files (docs/architecture.md, "A paper's skeleton"),
    and its ``__init__.py`` is the contract only: imports and the six names, nothing defined."""
    folder = _package_folder(paper)
    missing = [path for path in SKELETON if not (folder / path).is_file()]
    assert not missing, f"{paper} lacks {missing}"
    tree = ast.parse((folder / "__init__.py").read_text())
    assigned = set()
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):  # the docstring
            continue
        assert isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign)), (
            f"{paper}/__init__.py defines {type(node).__name__} at line {node.lineno}: the contract only"
        )
        if isinstance(node, ast.Assign):
            assigned |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    assert assigned <= CONTRACT and CONTRACT - {"COMPONENTS"} <= assigned, (
        f"{paper}/__init__.py assigns {sorted(assigned)}"
    )


def test_a_new_paper_refuses_a_bad_name_or_an_existing_folder_and_writes_nothing(
    tmp_path, monkeypatch, capsys
):
    """``dpsim new-paper``: a bad name, a --to that is not a folder, or a package already there is
    refused in one line and writes nothing; otherwise it writes the skeleton and the entry point to add."""
    papers, cwd = tmp_path / "papers", tmp_path / "cwd"
    papers.mkdir(), cwd.mkdir()
    for argv, says in (
        (["new-paper", "Smith", "--to", str(papers)], "lower-case Python identifier"),
        (["new-paper", "smith", "--to", str(tmp_path / "nowhere")], "is not a folder"),
        (["new-paper", "class", "--to", str(papers)], "lower-case Python identifier"),
    ):
        assert says in refused(argv, cwd, monkeypatch, capsys)
        assert not any(papers.iterdir())
    code, out, err = run_in_process(
        ["new-paper", "smith", "--to", str(papers)], cwd, monkeypatch, capsys
    )
    assert code == 0 and 'smith = "dpsim.experiments.smith"' in out, err
    written = sorted(
        p.relative_to(papers / "smith").as_posix() for p in (papers / "smith").rglob("*.py")
    )
    assert written == sorted([*SKELETON, "figures/noise.py"])
    assert "already exists" in refused(
        ["new-paper", "smith", "--to", str(papers)], cwd, monkeypatch, capsys
    )


@pytest.mark.parametrize("name", ["a", "smith", "a_paper_with_a_long_name_of_forty_letters"])
def test_a_new_paper_is_written_in_the_project_style(name, tmp_path):
    """What ``dpsim new-paper`` writes passes the project's linter and formatter check as it is
    (``ruff check``, ``ruff format --check`` with the repository's pyproject.toml), whatever the
    length of the name and of the title, so a paper added to experiments/ keeps CI green."""
    new_paper(name, tmp_path, title="On minimax rates under local and central privacy " * 2)
    config = ["--config", str(ROOT / "pyproject.toml")]
    for command in (["check", *config], ["format", "--check", *config]):
        result = subprocess.run(
            [sys.executable, "-m", "ruff", *command, str(tmp_path / name)],
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, (command, result.stdout[-2000:], result.stderr[-2000:])
