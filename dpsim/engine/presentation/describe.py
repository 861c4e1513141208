"""What ``dpsim list`` and ``dpsim show`` print: an experiment's axes (values, kinds, what they
are), methods and metrics, and an estimate of its run time on this machine; and what
``dpsim list PAPER --pins`` prints: each declared component and the checks that pin it."""

from __future__ import annotations

import json
import math
import tempfile
import time
import warnings
from pathlib import Path

from dpsim.errors import DpsimNote, DpsimWarning
from dpsim.engine.definition.axes import axis_type
from dpsim.engine.definition.experiment import Experiment


def _short(value) -> str:
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def compact_values(values) -> str:
    """``1,2,5`` for a few values, ``100…700 (9)`` for a long list."""
    values = list(values)
    if len(values) <= 6:
        return ",".join(_short(v) for v in values)
    return f"{_short(values[0])}…{_short(values[-1])} ({len(values)})"


def compact_grid(experiment: Experiment) -> str:
    """Every axis with several values, compactly: ``n_items=100…700 (9) eps=0.5,1,2.5,inf``."""
    return " ".join(f"{a}={compact_values(v)}" for a, v in experiment.axes.items() if len(v) > 1)


def describe(experiment: Experiment, source: str = "", page: str = "") -> list[str]:
    """The lines of ``dpsim show`` (without the time estimate). ``page``: the paper's page
    (its package's ``PAGE``), printed when given."""
    lines = [f"{experiment.name}: {experiment.title}"]
    if experiment.description:
        lines.append(f"  reproduces: {experiment.description}")
    if source:
        lines.append(f"  defined in: {source}")
    if page:
        lines.append(f"  paper's page: {page} (model, mechanisms, errata and modes)")
    lines.append(f"  replicates: {experiment.reps} per grid point (--reps)")
    lines.append("  axes (--set AXIS=V1,V2,...):")
    for axis, values in experiment.axes.items():
        kind = experiment.kind(axis)
        typ = axis_type(axis, experiment.axis_types)
        choices = f"; choices {', '.join(typ.choices)}" if typ.choices else ""
        lines.append(
            f"    {axis:<12} {kind:<9} default {compact_values(values):<28} {typ.doc}{choices}"
        )
    if experiment.derived:
        lines.append("  derived on the host (stored as columns):")
        for d in experiment.derived:
            lines.append(f"    {', '.join(d.names):<12} {d.level:<9} {d.doc}")
    if experiment.tuning.padding is not None:
        traced = ", ".join(experiment.tuning.padding.traced_axes)
        lines.append(
            f"  padding: {experiment.tuning.padding.axis} values share compiled programs sized for the largest "
            f"of their bucket ({traced} traced; DPSIM_PADDING=off: one program per value)"
        )
    lines.append("  methods:")
    for name, method in experiment.methods.items():
        solver = (
            "solver: " + ", ".join(method.diagnostics)
            if method.has_solver
            else (
                "no solver"
                + (f"; reports {', '.join(method.diagnostics)}" if method.diagnostics else "")
            )
        )
        lines.append(f"    {name:<12} {method.doc or method.label}  [{solver}]")
        lines.append(f"    {'':<12} metrics: {', '.join(method.metrics)}")
    if experiment.figure is not None:
        spec = experiment.figure
        panels = ", ".join(
            f"{p.metric}" + (f" per {'×'.join(p.each)}" if p.each else "") for p in spec.panels
        )
        lines.append(
            f"  figure: {spec.title} (panels: {panels}; x = {spec.x}, one curve per {spec.curve})"
        )
    return lines


def _earlier_rate(experiment: Experiment, runs: Path) -> tuple[float, int] | None:
    """Seconds per replicate lane measured by earlier runs of this experiment under ``runs``."""
    seconds, lanes = 0.0, 0
    for manifest in (
        runs / experiment.name / "manifest.json",
        runs / "verify" / experiment.name / "manifest.json",
    ):
        if not manifest.exists():
            continue
        for request in json.loads(manifest.read_text()).get("history", []):
            if request.get("lanes_run") and request.get("seconds"):
                seconds += request["seconds"]
                lanes += request["lanes_run"]
    return (seconds / lanes, lanes) if lanes else None


def default_plan(experiment: Experiment):
    """The plan of the default grid into an empty folder (nothing written)."""
    from dpsim.engine.execution.runner import plan_run

    with tempfile.TemporaryDirectory() as tmp:
        return plan_run(experiment, out=Path(tmp) / "plan")


def estimate_seconds(
    experiment: Experiment, runs: Path = Path("runs"), plan=None
) -> tuple[float, str]:
    """An estimate of the run time of the default grid on this machine, and how it was made:
    from earlier runs under ``runs``, else by a small calibration run (2 replicates at the
    largest shape point: one compilation and one warm run). ``plan``: the default grid's plan
    when the caller has it (:func:`default_plan`)."""
    from dpsim.engine.execution.program import lane_shape
    from dpsim.engine.execution.runner import run_experiment

    plan = plan or default_plan(experiment)
    total_lanes = plan.lanes
    earlier = _earlier_rate(experiment, runs)
    if earlier:
        rate, lanes = earlier
        return rate * total_lanes, f"from {lanes} replicate lanes run earlier on this machine"
    largest = max(plan.grid.shapes, key=experiment.tuning.lane_bytes)
    overrides = {a: [largest[a]] for a in experiment.shape_axes}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.time()
        run_experiment(
            experiment, reps=2, out=Path(tmp) / "cold", overrides=overrides, progress=False
        )
        cold_seconds = time.time() - t0
        with (
            warnings.catch_warnings()
        ):  # the same grid again: its notes and warnings were just shown
            warnings.simplefilter("ignore", DpsimWarning)
            warnings.simplefilter("ignore", DpsimNote)
            warm = run_experiment(
                experiment, reps=2, out=Path(tmp) / "warm", overrides=overrides, progress=False
            )
    per_lane = warm.seconds / max(warm.lanes_run, 1)
    compile_seconds = max(cold_seconds - warm.seconds, 0.0)
    # a lane's work grows with its working set: scale the calibrated cost by lane_bytes
    scale = experiment.tuning.lane_bytes(largest)
    compute = sum(
        per_lane
        * experiment.tuning.lane_bytes(lane_shape(experiment, step.shape))
        / scale
        * step.lanes
        for step in plan.steps
    )
    where = ", ".join(f"{a}={v}" for a, v in largest.items() if a in experiment.shape_axes)
    return compile_seconds * len(plan.steps) + compute, (
        f"calibrated at the largest shape ({where}): {compile_seconds:.1f} s to compile each of "
        f"{len(plan.steps)} programs, {per_lane * 1000:.1f} ms per replicate lane there, scaled by "
        f"working set for the other shapes; {total_lanes} lanes"
    )


PIN_FIELDS = ("paper", "component", "kind", "description", "checks", "mutants", "gap")


def pin_rows(paper: str, components, checks, mutants) -> list[dict]:
    """The pins table of one paper: one row per declared component (in declaration order),
    with the checks that pin it (their ``pins``) and the mutants that break it (their
    ``breaks``); ``gap`` is True when no check pins it (nothing would catch a bug there).

    Args:
        paper: the paper's name.  components: its ``COMPONENTS`` (``"KIND:NAME"`` → one line).
        checks, mutants: its checks and mutants.
    Returns:
        Dicts with the keys :data:`PIN_FIELDS` (``checks`` and ``mutants``: tuples of names).
    """
    from dpsim.engine.registry import named_components

    rows = []
    for component, description in components.items():
        pinned = tuple(
            c.name for c in checks if component in named_components(getattr(c, "pins", ()))
        )
        broken = tuple(
            m.name for m in mutants if component in named_components(getattr(m, "breaks", ()))
        )
        rows.append(
            {
                "paper": paper,
                "component": component,
                "kind": component.partition(":")[0],
                "description": description,
                "checks": pinned,
                "mutants": broken,
                "gap": not pinned,
            }
        )
    return rows


def pin_lines(rows) -> list[str]:
    """The lines of ``dpsim list PAPER --pins`` from :func:`pin_rows`' rows (or the API's
    DataFrame of them): each component, its checks, and its mutants; GAP where no check pins it."""
    lines = []
    for row in rows:
        flag = "GAP " if row["gap"] else "    "
        lines.append(f"{flag}{row['component']:<44} {row['description']}")
        lines.append(
            f"      checks ({len(row['checks'])}): {', '.join(row['checks']) or 'none: a bug here goes unseen'}"
        )
        if len(row["mutants"]):
            lines.append(f"      mutants ({len(row['mutants'])}): {', '.join(row['mutants'])}")
    gaps = sum(bool(row["gap"]) for row in rows)
    lines.append(f"{len(rows)} components, {gaps} without a check (GAP)")
    return lines
