"""``dpsim solve``: for every configuration of the other axes, the value of one axis at which
the mean of a metric equals a target, found by a stochastic root-finder on the engine.

A *configuration* is one combination of the values of every axis but the solved one (AXIS);
all of them advance together. Each *stage* of the finder (:mod:`dpsim.engine.solving.rootfinding`)
asks, per configuration, for new replicates at a few values of AXIS on its lattice; the stage
is ONE :func:`~dpsim.engine.execution.runner.run_experiment` call over all of them (the union of the
asked values, ``reps_at`` naming each asked data point and its replicate count), so each
shape compiles once per stage, and every evaluated point is stored as ordinary rows with the
keys of ``dpsim run``: replicate r of a point is the same draw whichever solve or run made it.

**Replicates.** The solve counts, per configuration and data point, the replicates it has
used there (``used[(c, data point)]``); an ask for R new ones at (c, x) reads the rows of x with
rep in [used, used + R) and moves the count on. When AXIS is a data or shape axis each value
is its own data point, so this is a count per (c, x). When AXIS is an analysis axis (ε) all
values of a configuration share one data point, and they get disjoint replicates: means at
different x are then independent, as the finders assume (the same draws at every x, the
engine's common random numbers, would make the pooled evidence look more precise than it
is). Several configurations may share a data point (a configuration axis that is an analysis
axis): each keeps its own count. The run is asked for the range of replicates the stage adds
there (``reps_at`` ranges), so lanes below it are not run again when a stage adds a value.

**Resume is replay.** A finder is deterministic given its observations, and the observations
are read from stored rows, so re-running the same solve into the same folder asks the same
points, and its runs compute nothing already stored; an interrupted solve (Ctrl-C mid-stage)
re-run finishes with the roots of an uninterrupted one. ``solve.json`` records the request; a
different request into the same folder is refused (``budget`` and ``level`` may change: a
larger budget continues a solve, a level only changes the intervals), and so is a folder whose
rows were made by other code (:func:`~dpsim.engine.storage.store.check_code`), before anything is
written: a solve never rewrites another code's rows.

**Budget** (``budget``, in replicate lanes asked: the sum of the finder's asked replicates,
the same on a fresh and on a resumed solve): no stage starts that would exceed it; the roots
then come from the evidence so far (status ``undecided`` where it does not decide).

**Missing values.** A row whose metric is NaN is not an observation: it is counted
(``nan_rows``) and reported, and the mean is over the others; rows of fits that did not
converge are kept in the mean and counted (``unconverged_rows``).

Outputs in ``out`` (default ``runs/<experiment>-solve-<axis>``): the runs' parts and manifest,
``roots.csv`` (one row per configuration), ``evidence.csv`` (every evaluated point: replicates,
mean and its 95% interval), ``solve.json`` (the request, finder, seed, code fingerprint, the
stages and lanes) and the figure ``solve.png`` / ``solve.pdf``: the evaluated means against
AXIS per configuration, the target, and each root with its interval.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd

from dpsim.errors import UsageError
from dpsim.engine.solving import rootfinding as rf, search as sr
from dpsim.engine.storage import store
from dpsim.engine.definition.axes import axis_type
from dpsim.engine.definition.experiment import Experiment
from dpsim.engine.definition.grid import expand_grid
from dpsim.engine.storage.provenance import fingerprint
from dpsim.engine.registry import did_you_mean
from dpsim.engine.execution.runner import run_experiment
from dpsim.engine.presentation.summary import Z95

SOLVE_FILE = "solve.json"
ROOTS_FILE = "roots.csv"
EVIDENCE_FILE = "evidence.csv"
FIGURE_STEM = "solve"
# the request fields that must match to extend a solve folder (budget and level may change)
KEYED = (
    "experiment",
    "axis",
    "target",
    "within",
    "integer",
    "log",
    "points",
    "finder",
    "overrides",
    "seed",
)


class Target(NamedTuple):
    """``METRIC@METHOD=VALUE``: solve mean(metric of method)(x) = value."""

    metric: str
    method: str
    value: float

    def text(self) -> str:
        return f"{self.metric}@{self.method}={self.value:g}"


def _did_you_mean(name: str, known: Sequence[str]) -> str:
    return did_you_mean(name, known, n=1, cutoff=0.5)


def parse_target(text: str, experiment: Experiment) -> Target:
    """``'METRIC[@METHOD]=VALUE'`` → :class:`Target`, checked against ``experiment``.

    METHOD may be left out when the experiment has one method, or when one method alone
    reports METRIC.

    Raises:
        UsageError: one line naming the bad part (an unknown metric or method, with the
        closest known name; a value that is not a finite number).
    """
    left, eq, value_text = str(text).partition("=")
    metric, at, method = left.strip().partition("@")
    metric, method = metric.strip(), method.strip()
    if not eq or not metric or (at and not method):
        raise UsageError(
            f"--target {text!r}: write METRIC[@METHOD]=VALUE, e.g. exact_recovery@counts=0.5"
        )
    try:
        value = float(value_text)
    except ValueError:
        raise UsageError(f"--target {text!r}: {value_text.strip()!r} is not a number") from None
    if not math.isfinite(value):
        raise UsageError(f"--target {text!r}: the value must be a finite number")
    metrics = list(dict.fromkeys(m for meth in experiment.methods.values() for m in meth.metrics))
    if metric not in metrics:
        raise UsageError(
            f"--target {text!r}: unknown metric {metric!r}{_did_you_mean(metric, metrics)}; "
            f"{experiment.name} reports {', '.join(metrics)}"
        )
    reporting = [name for name, meth in experiment.methods.items() if metric in meth.metrics]
    if not method:
        if len(reporting) != 1:
            raise UsageError(
                f"--target {text!r}: name the method ({metric}@METHOD=…): "
                f"{', '.join(reporting)} report {metric}"
            )
        method = reporting[0]
    elif method not in experiment.methods:
        raise UsageError(
            f"--target {text!r}: unknown method {method!r}{_did_you_mean(method, experiment.methods)}; "
            f"{experiment.name} has {', '.join(experiment.methods)}"
        )
    elif method not in reporting:
        raise UsageError(
            f"--target {text!r}: method {method!r} does not report {metric!r} "
            f"(reported by {', '.join(reporting)})"
        )
    return Target(metric, method, value)


def parse_within(text: str) -> tuple[float, float]:
    """``--within LO:HI`` → (lo, hi) floats (checked further by :func:`search_of`)."""
    lo, colon, hi = str(text).partition(":")
    try:
        if not colon:
            raise ValueError
        return float(lo), float(hi)
    except ValueError:
        raise UsageError(
            f"--within {text!r}: write LO:HI with two numbers, e.g. 0.01:0.45"
        ) from None


# ----------------------------------------------------------------------------- the problem


@dataclass(frozen=True)
class Problem:
    """A validated solve request.

    Attributes:
        experiment, axis, target, search: what is solved, over which interval and lattice.
        config_axes: every axis but ``axis``, in the experiment's order.
        configs: (C,) dicts of their values, the product in grid order.
        varying: the configuration axes with more than one value.
        finder: the root-finder (a :class:`~dpsim.engine.solving.sr.RootFinder`).
        out, seed, level, budget: as :func:`solve_experiment` takes them.
        request: what ``solve.json`` records (JSON-able).
    """

    experiment: Experiment
    axis: str
    target: Target
    search: Any
    config_axes: tuple[str, ...]
    configs: list[dict]
    varying: tuple[str, ...]
    finder: Any
    out: Path
    seed: int
    level: float
    budget: int | None
    request: dict = field(default_factory=dict)


def is_integer_axis(experiment: Experiment, axis: str, value) -> bool:
    """Whether ``axis`` takes integers: its type's validator returns an int for ``value``."""
    checked = axis_type(axis, experiment.axis_types)(axis, value)
    return isinstance(checked, (int, np.integer)) and not isinstance(checked, bool)


def search_of(
    experiment: Experiment, axis: str, values: Sequence, within, target: float, points: int
):
    """The :class:`~dpsim.engine.solving.sr.Search` of ``axis``: ``within`` (lo, hi), by
    default the smallest and largest of its values; a log lattice when lo > 0; integers when
    the axis's type is an integer type.

    Raises:
        UsageError: a string axis, an infinite or NaN end, lo ≥ hi."""
    if any(isinstance(v, str) for v in values):
        raise UsageError(
            f"--for {axis}: a string axis ({', '.join(map(str, values))}) has no values between "
            f"its values to solve over"
        )
    lo, hi = (min(values), max(values)) if within is None else within
    for end in (lo, hi):
        if not isinstance(end, (int, float, np.integer, np.floating)) or not math.isfinite(end):
            where = "its values" if within is None else "--within"
            raise UsageError(
                f"--for {axis}: {where} end at {end!r}; give finite ends with --within LO:HI"
            )
    if not lo < hi:
        raise UsageError(
            f"--within {lo:g}:{hi:g}: need LO < HI"
            if within is not None
            else f"--for {axis}: it has the one value {lo:g}; give the interval with --within LO:HI"
        )
    integer = is_integer_axis(experiment, axis, values[0])
    return sr.Search(
        float(lo), float(hi), float(target), integer=integer, log=lo > 0, points=points
    )


def _finder(finder):
    if finder is None:
        return rf.DEFAULT_FINDER
    if isinstance(finder, str):
        return rf.finder_named(finder)
    return finder


def prepare(
    experiment: Experiment,
    *,
    axis: str,
    target,
    within=None,
    finder=None,
    overrides=None,
    seed: int = 0,
    out=None,
    level: float = 0.95,
    budget: int | None = None,
    points: int = 65,
) -> Problem:
    """Validate a solve request, writing nothing (a one-line UsageError naming a bad value).

    Every lattice value of ``axis`` is checked against its type and the experiment's
    ``validate_point`` with every configuration, before anything runs."""
    if axis not in experiment.axes:
        raise UsageError(
            f"--for {axis!r}: unknown axis{_did_you_mean(axis, experiment.axes)}; "
            f"{experiment.name} has {', '.join(experiment.axes)}"
        )
    target = target if isinstance(target, Target) else parse_target(target, experiment)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise UsageError(f"seed={seed!r} must be an integer in [0, 2^31)")
    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
    ):
        raise UsageError(f"--budget {budget!r} must be a number of replicate lanes ≥ 1")
    sr.z_quantile(level)
    finder = _finder(finder)
    overrides = {a: list(v) for a, v in (overrides or {}).items()}
    axes = expand_grid(experiment, overrides).axes  # every --set value checked
    search = search_of(experiment, axis, axes[axis], within, target.value, points)
    config_axes = tuple(a for a in experiment.axes if a != axis)
    configs = [
        dict(zip(config_axes, combo))
        for combo in itertools.product(*(axes[a] for a in config_axes))
    ]
    lattice = [_axis_value(search, x) for x in search.lattice()]
    expand_grid(
        experiment, {**{a: axes[a] for a in config_axes}, axis: lattice}
    )  # validate_point on all
    out = Path(out or Path("runs") / f"{experiment.name}-solve-{axis}")
    store.check_directory(out, "--out")
    store.check_code(
        out, fingerprint(experiment)
    )  # rows of other code: refused before any stage runs
    request = {
        "experiment": experiment.name,
        "axis": axis,
        "target": target.text(),
        "within": [search.low, search.high],
        "integer": search.integer,
        "log": search.log,
        "points": len(lattice),
        "finder": finder.name,
        "overrides": {a: list(axes[a]) for a in config_axes},
        "seed": seed,
        "level": level,
        "budget": budget,
    }
    _check_request(out, request)
    varying = tuple(a for a in config_axes if len(axes[a]) > 1)
    return Problem(
        experiment,
        axis,
        target,
        search,
        config_axes,
        configs,
        varying,
        finder,
        out,
        seed,
        level,
        budget,
        request,
    )


def _check_request(out: Path, request: dict) -> None:
    """Refuse a request into ``out`` that differs from the one its ``solve.json`` records."""
    stored = store.read_json(out / SOLVE_FILE)
    if stored is None:
        return
    mine = json.loads(store.json_text({k: request[k] for k in KEYED}))
    theirs = json.loads(store.json_text({k: stored["request"].get(k) for k in KEYED}))
    differ = [k for k in KEYED if mine[k] != theirs[k]]
    if differ:
        k = differ[0]
        raise UsageError(
            f"--out {str(out)!r} holds another solve ({k} {theirs[k]!r}, not {mine[k]!r}); "
            f"choose another --out"
        )


def _axis_value(search, x: float):
    """A lattice value as the grid takes it: an int on an integer axis, else a float."""
    return int(round(x)) if search.integer else float(x)


# ----------------------------------------------------------------------------- the oracle


def point_ids(experiment: Experiment, items: tuple) -> tuple[int, int]:
    """(data point id, grid point id) of one grid point given as (axis, value) pairs: the ids
    the engine keys its lanes and rows by (:func:`~dpsim.engine.execution.planning.plan_steps`)."""
    grid = expand_grid(experiment, {a: [v] for a, v in items})
    shape, data, analysis = grid.shapes[0], grid.data_points[0], grid.analysis_points[0]
    return experiment.point_id({**shape, **data}), experiment.point_id(
        {**shape, **data, **analysis}
    )


@dataclass
class Tally:
    """What the solve has seen at one (configuration, value): replicates used there, and the
    sums of the metric's finite values, their count, and the rows left out or flagged."""

    used: int = 0
    n: int = 0
    total: float = 0.0
    squares: float = 0.0
    nan: int = 0
    unconverged: int = 0


class EngineOracle:
    """Evaluates a finder's :class:`~dpsim.engine.solving.sr.Ask` with ONE engine run
    (module docstring), counting per (configuration, value) the replicates used."""

    def __init__(
        self, problem: Problem, *, progress: bool, source: str | None, watchdog: float | None
    ):
        self.problem, self.progress, self.source, self.watchdog = (
            problem,
            progress,
            source,
            watchdog,
        )
        self.tally: dict[tuple[int, float], Tally] = {}
        self.used: dict[
            tuple[int, int], int
        ] = {}  # (configuration, data point id) → replicates used
        self.stages, self.lanes_asked, self.lanes_run = 0, 0, 0
        self._ids: dict[tuple, tuple[int, int]] = {}

    def ids(self, c: int, x: float) -> tuple[int, int]:
        """(data point id, grid point id) of configuration ``c`` at ``x`` (cached)."""
        point = self._point(c, x)
        if point not in self._ids:
            self._ids[point] = point_ids(self.problem.experiment, point)
        return self._ids[point]

    def _point(self, c: int, x: float) -> tuple:
        p = self.problem
        return tuple({**p.configs[c], p.axis: _axis_value(p.search, x)}.items())

    def __call__(self, ask) -> "sr.Observation":
        p = self.problem
        cells = [
            (c, j) for c, j in zip(*np.nonzero(np.isfinite(ask.x) & (np.asarray(ask.reps) > 0)))
        ]
        shape = np.shape(ask.x)
        mean, var, n = np.full(shape, np.nan), np.full(shape, np.nan), np.zeros(shape, np.int64)
        if not cells:
            return sr.Observation(mean, var, n)
        active = sorted({c for c, _ in cells})
        new_lanes = int(sum(int(ask.reps[c, j]) for c, j in cells))
        self.stages += 1
        if self.progress:
            print(
                f"stage {self.stages}: {len(active)} configs, {new_lanes} lanes",
                file=sys.stderr,
                flush=True,
            )
        reps_at: dict[int, tuple[int, int]] = {}
        wanted = {}
        for c, j in cells:
            x, r = float(ask.x[c, j]), int(ask.reps[c, j])
            data_id, point_id = self.ids(c, x)
            self.tally.setdefault((c, x), Tally())
            used = self.used.get((c, data_id), 0)
            self.used[(c, data_id)] = used + r
            start, stop = reps_at.get(data_id, (used, used + r))
            reps_at[data_id] = (min(start, used), max(stop, used + r))  # only the new replicates
            wanted[(c, j)] = (point_id, used, used + r)
        overrides = {a: list(dict.fromkeys(p.configs[c][a] for c in active)) for a in p.config_axes}
        overrides[p.axis] = sorted({_axis_value(p.search, float(ask.x[c, j])) for c, j in cells})
        summary = run_experiment(
            p.experiment,
            reps_at=reps_at,
            overrides=overrides,
            out=p.out,
            seed=p.seed,
            progress=self.progress,
            source=self.source,
            watchdog=self.watchdog,
        )
        self.lanes_asked += new_lanes
        self.lanes_run += summary.lanes_run
        if self.stages == 1:
            record_request(p)
        rows = _rows(p.out, p.target, {w[0] for w in wanted.values()})
        for (c, j), (point_id, start, stop) in wanted.items():
            metric, reps, flagged = rows.get(
                point_id, (np.empty(0), np.empty(0, np.int64), np.empty(0, bool))
            )
            take = (reps >= start) & (reps < stop)
            if take.sum() != stop - start:
                raise RuntimeError(
                    f"solve: {p.experiment.name} at {dict(self._point(c, ask.x[c, j]))}: "
                    f"{int(take.sum())} rows of reps [{start}, {stop}) stored, expected "
                    f"{stop - start}"
                )
            got = metric[take]
            finite = got[np.isfinite(got)]
            t = self.tally[(c, float(ask.x[c, j]))]
            t.used, t.n = t.used + stop - start, t.n + len(finite)
            t.total, t.squares = t.total + float(finite.sum()), t.squares + float((finite**2).sum())
            t.nan += int(len(got) - len(finite))
            t.unconverged += int(flagged[take].sum())
            n[c, j] = len(finite)
            mean[c, j] = finite.mean() if len(finite) else np.nan
            var[c, j] = finite.var(ddof=1) if len(finite) > 1 else np.nan
        return sr.Observation(mean, var, n)


def _rows(
    out: Path, target: Target, points: set
) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """{grid point id: (metric values, reps, not-converged flags)} of the rows of ``target``'s
    method at ``points`` (flags False where the method reports no ``converged``)."""
    table = store.read_columns(out, ["point", "rep", "method", target.metric, "converged"])
    table = table[(table["method"] == target.method) & table["point"].isin(points)]
    metric = table[target.metric].to_numpy(float)
    reps = table["rep"].to_numpy(np.int64)
    flags = (
        (table["converged"] == False).fillna(False).to_numpy(bool)  # noqa: E712 (elementwise)
        if "converged" in table  # noqa: E712
        else np.zeros(len(table), bool)
    )
    return {
        int(pid): (metric[i], reps[i], flags[i])
        for pid, i in table.groupby("point").indices.items()
    }


# ----------------------------------------------------------------------------- the budget


class _Spent(NamedTuple):
    inner: Any
    spent: int


@dataclass(frozen=True)
class Budgeted:
    """A finder that asks nothing once its next ask would take the lanes asked past ``budget``
    (the roots then come from the evidence so far); otherwise ``finder`` itself."""

    finder: Any
    budget: int

    @property
    def name(self) -> str:
        return self.finder.name

    def init(self, search, n_configs: int) -> _Spent:
        return _Spent(self.finder.init(search, n_configs), 0)

    def ask(self, state: _Spent):
        ask = self.finder.ask(state.inner)
        if ask is None or state.spent + int(np.asarray(ask.reps).sum()) > self.budget:
            return None
        return ask

    def tell(self, state: _Spent, ask, obs) -> _Spent:
        return _Spent(
            self.finder.tell(state.inner, ask, obs), state.spent + int(np.asarray(ask.reps).sum())
        )

    def result(self, state: _Spent, level: float = 0.95):
        return self.finder.result(state.inner, level)


# ----------------------------------------------------------------------------- the solve


@dataclass
class SolveResult:
    """What a solve found and did.

    Attributes:
        roots: the finder's :class:`~dpsim.engine.solving.sr.Roots` ((C,) arrays).
        table: ``roots.csv`` as a DataFrame (one row per configuration).
        evidence: ``evidence.csv`` as a DataFrame (one row per evaluated point).
        out: the folder; files: the files written besides the runs' (roots, evidence, request, figure).
        stages: engine runs made; lanes_asked: replicate lanes the finder asked for (what
        ``budget`` counts); lanes_run: lanes the runs computed (0 on a replay of a stored solve).
        nan_rows, unconverged_rows: rows with a NaN metric (left out of the means) and of fits
        that did not converge (kept), over the solve's evidence.
        seconds: wall time.
    """

    problem: Problem
    roots: Any
    table: pd.DataFrame
    evidence: pd.DataFrame
    out: Path
    files: list[Path]
    stages: int
    lanes_asked: int
    lanes_run: int
    nan_rows: int
    unconverged_rows: int
    seconds: float


def solve_experiment(
    experiment: Experiment,
    *,
    axis: str,
    target,
    within=None,
    finder=None,
    overrides=None,
    seed: int = 0,
    out=None,
    level: float = 0.95,
    budget: int | None = None,
    progress: bool = True,
    source: str | None = None,
    watchdog: float | None = None,
    points: int = 65,
    max_stages: int = 50,
    figure: bool = True,
) -> SolveResult:
    """Solve mean(``target``'s metric)(``axis``) = ``target``'s value for every configuration of
    the other axes (module docstring), into ``out``; resumes (replays) a stored solve.

    Args:
        experiment: the experiment.  axis: the axis solved for (shape, data or analysis;
            numeric).  target: ``'METRIC[@METHOD]=VALUE'`` or a :class:`Target`.
        within: (lo, hi) searched (default: the smallest and largest of the axis's values).
        finder: a finder, a finder's name, or None (:data:`~dpsim.engine.solving.rootfinding.DEFAULT_FINDER`).
        overrides: ``--set`` values of the other axes (their defaults otherwise).
        seed, out, source, watchdog: as :func:`~dpsim.engine.execution.runner.run_experiment`.
        level: the roots' confidence level.  budget: replicate lanes asked, at most.
        progress: a line per stage and the runs' progress bars.  points: lattice size.
        max_stages: stage cap.  figure: draw ``solve.png`` / ``solve.pdf``.
    Returns:
        :class:`SolveResult`.
    """
    started = time.time()
    problem = prepare(
        experiment,
        axis=axis,
        target=target,
        within=within,
        finder=finder,
        overrides=overrides,
        seed=seed,
        out=out,
        level=level,
        budget=budget,
        points=points,
    )
    oracle = EngineOracle(problem, progress=progress, source=source, watchdog=watchdog)
    finder = problem.finder if budget is None else Budgeted(problem.finder, budget)
    roots, _ = rf.solve_with(
        oracle, finder, problem.search, len(problem.configs), max_stages=max_stages, level=level
    )
    evidence = evidence_table(problem, oracle.tally)
    table = roots_table(problem, roots, oracle.tally)
    files = write_outputs(problem, roots, table, evidence, oracle, figure)
    return SolveResult(
        problem,
        roots,
        table,
        evidence,
        problem.out,
        files,
        oracle.stages,
        oracle.lanes_asked,
        oracle.lanes_run,
        int(table["nan_rows"].sum()),
        int(table["unconverged_rows"].sum()),
        time.time() - started,
    )


def roots_table(problem: Problem, roots, tally: Mapping) -> pd.DataFrame:
    """``roots.csv``: per configuration its axis values, the root, its interval, status, lanes,
    stages, finder, level, the interval searched and the rows left out or flagged."""
    names = roots.names()
    rows = []
    for c, config in enumerate(problem.configs):
        mine = [t for (cc, _), t in tally.items() if cc == c]
        rows.append(
            {
                **config,
                "axis": problem.axis,
                "metric": problem.target.metric,
                "method": problem.target.method,
                "target": problem.target.value,
                "root": float(roots.root[c]),
                "low": float(roots.low[c]),
                "high": float(roots.high[c]),
                "status": names[c],
                "lanes": int(roots.lanes[c]),
                "stages": int(roots.stages),
                "finder": roots.method,
                "level": float(roots.level),
                "searched_low": problem.search.low,
                "searched_high": problem.search.high,
                "nan_rows": sum(t.nan for t in mine),
                "unconverged_rows": sum(t.unconverged for t in mine),
            }
        )
    return pd.DataFrame(rows)


def evidence_table(problem: Problem, tally: Mapping) -> pd.DataFrame:
    """``evidence.csv``: per evaluated (configuration, value) the replicates, the mean of the
    metric and its 95% interval (normal, mean ± 1.96·sd/√n), and the rows left out or flagged."""
    rows = []
    for (c, x), t in sorted(tally.items()):
        mean = t.total / t.n if t.n else math.nan
        var = (t.squares - t.n * mean**2) / (t.n - 1) if t.n > 1 else math.nan
        half = Z95 * math.sqrt(max(var, 0.0) / t.n) if t.n > 1 else math.nan
        rows.append(
            {
                **problem.configs[c],
                problem.axis: _axis_value(problem.search, x),
                "config": c,
                "reps": t.used,
                "n": t.n,
                "mean": mean,
                "ci_low": mean - half,
                "ci_high": mean + half,
                "nan_rows": t.nan,
                "unconverged_rows": t.unconverged,
            }
        )
    columns = [
        *problem.config_axes,
        problem.axis,
        "config",
        "reps",
        "n",
        "mean",
        "ci_low",
        "ci_high",
        "nan_rows",
        "unconverged_rows",
    ]
    return pd.DataFrame(rows, columns=columns)


def record_request(problem: Problem, **more) -> None:
    """Write ``solve.json``: the request, the finder and the code fingerprint (and ``more``)."""
    store.write_json(
        problem.out / SOLVE_FILE,
        {
            "request": problem.request,
            "code": fingerprint(problem.experiment),
            "finder": {"name": problem.finder.name, "settings": repr(problem.finder)},
            **more,
        },
    )


def write_outputs(
    problem: Problem,
    roots,
    table: pd.DataFrame,
    evidence: pd.DataFrame,
    oracle: EngineOracle,
    figure: bool,
) -> list[Path]:
    """Write ``roots.csv``, ``evidence.csv``, ``solve.json`` (atomically) and the figure;
    nothing when no stage ran into a new folder (e.g. a budget below the first stage's lanes)."""
    out = problem.out
    if not (out / store.MANIFEST).exists():
        return []
    store.write_text(out / ROOTS_FILE, table.to_csv(index=False))
    store.write_text(out / EVIDENCE_FILE, evidence.to_csv(index=False))
    counts = {
        name: int(count)
        for name, count in pd.Series(roots.names()).value_counts().sort_index().items()
    }
    record_request(problem, stages=oracle.stages, lanes_asked=oracle.lanes_asked, roots=counts)
    files = [out / ROOTS_FILE, out / EVIDENCE_FILE, out / SOLVE_FILE]
    if figure and len(evidence):
        fig = draw_solve(problem, table, evidence)
        for suffix in (".png", ".pdf"):
            path = out / f"{FIGURE_STEM}{suffix}"
            store.write_file(
                path, lambda tmp, suffix=suffix: fig.savefig(tmp, dpi=130, format=suffix[1:])
            )
            files.append(path)
        import matplotlib.pyplot as plt

        plt.close(fig)
    return files


# ----------------------------------------------------------------------------- the figure

MAX_CURVES = 8


def layout_axes(problem: Problem) -> tuple[str | None, tuple[str, ...]]:
    """(the curve axis, the panel axes): curves by the varying configuration axis with the
    most values up to :data:`MAX_CURVES` (the last such on a tie), panels by the others."""
    values = {a: len({c[a] for c in problem.configs}) for a in problem.varying}
    fitting = [a for a in problem.varying if values[a] <= MAX_CURVES]
    if not fitting:
        return None, problem.varying
    curve = max(reversed(fitting), key=lambda a: values[a])
    return curve, tuple(a for a in problem.varying if a != curve)


def _label(axis: str, value) -> str:
    if isinstance(value, float):
        return f"{axis}=∞" if math.isinf(value) else f"{axis}={value:.3g}"
    return f"{axis}={value}"


def draw_solve(problem: Problem, roots: pd.DataFrame, evidence: pd.DataFrame):
    """The solve's figure: per panel (a combination of the panel axes), each configuration's
    evaluated means with 95% intervals against AXIS (log x on a log lattice), the target
    (dashed), and each root with its interval (a bar at the target's height); configurations
    whose target was not bracketed are named in the panel with the interval searched."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    curve, panel_axes = layout_axes(problem)
    keys = list(dict.fromkeys(tuple(c[a] for a in panel_axes) for c in problem.configs))
    ncols = min(4, len(keys))
    nrows = -(-len(keys) // ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(max(4.6 * ncols, 7.0), 3.4 * nrows + 1.2), squeeze=False, sharey=True
    )
    curve_values = list(dict.fromkeys(c[curve] for c in problem.configs)) if curve else [None]
    colours = {
        v: plt.get_cmap("viridis" if len(curve_values) > 10 else "tab10")(
            i / max(len(curve_values) - 1, 1) if len(curve_values) > 10 else i
        )
        for i, v in enumerate(curve_values)
    }
    axis, target = problem.axis, problem.target
    for k, key in enumerate(keys):
        ax = axes[k // ncols][k % ncols]
        notes = []
        for c, config in enumerate(problem.configs):
            if tuple(config[a] for a in panel_axes) != key:
                continue
            colour = colours[config[curve] if curve else None]
            pts = evidence[evidence["config"] == c].sort_values(axis)
            if len(pts):
                ax.errorbar(
                    pts[axis],
                    pts["mean"],
                    yerr=[pts["mean"] - pts["ci_low"], pts["ci_high"] - pts["mean"]],
                    fmt="o-",
                    ms=3,
                    lw=0.8,
                    capsize=2,
                    color=colour,
                    label=_label(curve, config[curve]) if curve else None,
                )
            row = roots.iloc[c]
            if row["status"] == "solved" or np.isfinite(row["root"]):
                lo = row["low"] if np.isfinite(row["low"]) else problem.search.low
                hi = row["high"] if np.isfinite(row["high"]) else problem.search.high
                ax.errorbar(
                    [row["root"]],
                    [target.value],
                    xerr=[[row["root"] - lo], [hi - row["root"]]],
                    fmt="D",
                    ms=6,
                    mfc="white",
                    mec=colour,
                    ecolor=colour,
                    elinewidth=2.5,
                    capsize=4,
                )
            if row["status"] != "solved":
                notes.append(
                    f"{_label(curve, config[curve]) if curve else 'root'}: {row['status'].replace('_', ' ')}"
                )
        ax.axhline(target.value, color="0.4", ls="--", lw=1)
        if problem.search.log:
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlim(
            problem.search.low / 1.15 if problem.search.log else problem.search.low,
            problem.search.high * 1.15 if problem.search.log else problem.search.high,
        )
        ax.set_title(
            ", ".join(_label(a, v) for a, v in zip(panel_axes, key)) or problem.experiment.name,
            fontsize=10,
        )
        ax.set_xlabel(axis)
        if k % ncols == 0:
            ax.set_ylabel(f"mean {target.metric} ({target.method})")
        if notes:
            ax.text(
                0.02,
                0.98,
                "\n".join(notes[:6] + ([f"… {len(notes) - 6} more"] if len(notes) > 6 else [])),
                transform=ax.transAxes,
                va="top",
                fontsize=7,
                color="0.25",
            )
    for k in range(len(keys), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if curve:
        fig.legend(
            handles,
            labels,
            loc="lower center",
            bbox_to_anchor=(0.5, 0.03),
            ncol=min(len(labels), 8),
            fontsize=8,
            frameon=False,
        )
    fixed = [
        _label(a, problem.configs[0][a]) for a in problem.config_axes if a not in problem.varying
    ]
    fig.suptitle(
        f"{problem.experiment.name}: {axis} where mean {target.metric} ({target.method}) = "
        f"{target.value:g}\n{', '.join(fixed)}",
        fontsize=11,
    )
    lanes = int(roots["lanes"].sum())
    fig.text(
        0.5,
        0.005,
        f"points: mean ± 95% CI; diamonds: roots with {roots['level'].iloc[0]:.0%} CI "
        f"({roots['finder'].iloc[0]}); searched [{problem.search.low:g}, {problem.search.high:g}]; "
        f"{lanes} lanes",
        ha="center",
        va="bottom",
        fontsize=7,
        color="0.3",
    )
    fig.tight_layout(
        rect=(0, (0.75 if curve else 0.35) / fig.get_figheight(), 1, 1 - 0.6 / fig.get_figheight())
    )
    return fig
