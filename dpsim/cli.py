"""The ``dpsim`` command: list, show, run, solve, merge, plot, export, info, repair, summary, verify, report, audit, new-paper.

Bad input gives a one-line error naming the bad value, exit status 2, and writes nothing.
"""

from __future__ import annotations

from collections import Counter

import argparse
import functools
import os
import sys
import threading
import warnings
from pathlib import Path

from dpsim.errors import DpsimNote, DpsimWarning, RunStalled, UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        raise UsageError(message)


def cmd_list(args) -> int:
    from dpsim.api import catalog

    if args.pins:
        return cmd_list_pins(args)
    found = catalog(args.study)
    print("experiments (details: dpsim show NAME):")
    for e in found["experiments"].itertuples():
        print(f"  {e.name:<26} {e.reps:>5} reps  {e.title}")
        print(f"  {'':<26}            {e.grid}")
    print("checks:")
    for c in found["checks"].itertuples():
        print(f"  {c.name:<48} ({c.experiment}) {c.description}")
    print("audits:")
    for a in found["audits"].itertuples():
        print(f"  {a.name:<26} {a.description}")
    print("mutants (plausible bugs `dpsim verify --mutants` must catch):")
    for m in found["mutants"].itertuples():
        print(f"  {m.name:<40} ({', '.join(m.experiments)}) {m.description}")
    return 0


def cmd_list_pins(args) -> int:
    """`dpsim list PAPER --pins`: each component the paper declares, the checks that pin it and
    the mutants that break it; GAP where no check pins it (:func:`dpsim.api.pins`)."""
    from dpsim.api import pins
    from dpsim.engine.presentation.describe import pin_lines

    table = pins(args.study)
    for paper, rows in table.groupby("paper", sort=False):
        print(
            f"{paper}: components and the checks that pin them (mutants: those declared to break it)"
        )
        for line in pin_lines(rows.to_dict("records")):
            print("  " + line)
    if table.empty:
        print(f"{args.study or 'no paper'} declares no COMPONENTS")
    return 0


def _parse_sets(options):
    from dpsim.engine.definition.axes import parse_set_option

    overrides = {}
    for option in options or []:
        axis, values = parse_set_option(option)
        if axis in overrides:
            raise UsageError(f"--set {axis} given twice")
        overrides[axis] = values
    return overrides


def _plot_dir(
    out: Path,
    experiment,
    to: Path | None = None,
    *,
    where: dict | None = None,
    metric: str | None = None,
    logy: bool | None = None,
) -> list[Path]:
    """Draw the experiment's figure(s) into the run directory (:func:`dpsim.api.draw_folder`)."""
    from dpsim.api import draw_folder

    return draw_folder(out, experiment, to, where=where, metric=metric, logy=logy)


def _prepare_figures(experiment) -> threading.Thread:
    """Load the plotting libraries, fonts and mathtext parser in a daemon thread
    (:func:`dpsim.engine.presentation.plots.prepare`) while a run computes: most of that time is spent
    while the run's compilation and chunks hold no Python lock, so the figure drawn after the
    run starts at once. A failure here is left to the drawing, which loads them itself.

    The experiment's code fingerprint is taken first, in this thread: it parses the code with
    ``ast.parse``, which CPython 3.11 does not make safe against another thread building
    syntax trees at the same time (SystemError "AST constructor recursion depth mismatch");
    the run then finds it kept in the process (:mod:`dpsim.engine.storage.provenance`) and parses
    nothing more."""
    from dpsim.engine.storage.provenance import fingerprint

    fingerprint(experiment)

    def load():
        try:
            from dpsim.engine.presentation.plots import prepare

            prepare()
        except Exception:  # noqa: BLE001 - drawing says what fails
            pass

    thread = threading.Thread(target=load, name="dpsim-prepare-figures", daemon=True)
    thread.start()
    return thread


def cmd_show(args) -> int:
    from dpsim.api import show
    from dpsim.engine.presentation.units import format_duration

    shown = show(args.experiment, estimate=not args.no_estimate)
    for line in shown["lines"]:
        print(line)
    print("  " + shown["memory"])
    if not args.no_estimate:
        print(
            f"  estimated run time of the default grid here: {format_duration(shown['estimated_seconds'])} "
            f"({shown['estimate_how']})"
        )
    return 0


def cmd_run(args) -> int:
    from dpsim.engine.execution.executors import executor as make_executor
    from dpsim.engine.execution.planning import parse_part
    from dpsim.engine.registry import experiment as resolve
    from dpsim.engine.execution.runner import plan_run, run_experiment

    part = None if args.part is None else parse_part(args.part)
    overrides = _parse_sets(args.set)
    if args.dry_run:
        make_executor(
            args.executor, address=args.address, workers=args.ray_workers, check_only=True
        )
        experiment, source = resolve(args.experiment)
        plan = plan_run(
            experiment,
            reps=args.reps,
            seed=args.seed,
            out=args.out,
            overrides=overrides,
            chunk=args.chunk,
            workers=args.workers,
            micro_batch=args.micro_batch,
            part=part,
            calibrate=args.executor == "local",  # Ray's actors do not calibrate
            accept_code_change=args.accept_code_change,
        )
        print(f"{experiment.name} (dry run, nothing written):")  # dpsim.plan gives the same Plan
        for line in plan.describe():
            print(line)
        return 0
    # Ray (when chosen) starts before this process's first JAX computation
    with make_executor(args.executor, address=args.address, workers=args.ray_workers) as executor:
        experiment, source = resolve(args.experiment)
        # a fresh process only (the command line): in a process that runs several commands (a
        # notebook, the tests) a loading thread left by a refused run would overlap the next
        # command's own imports and parsing
        figures = (
            _prepare_figures(experiment)
            if experiment.figure is not None and _COMMAND_LINE
            else None
        )
        summary = run_experiment(
            experiment,
            reps=args.reps,
            seed=args.seed,
            out=args.out,
            overrides=overrides,
            chunk=args.chunk,
            workers=args.workers,
            progress=not args.no_progress,
            watchdog=args.watchdog,
            source=source,
            micro_batch=args.micro_batch,
            executor=executor,
            part=part,
            accept_code_change=args.accept_code_change,
            confirm=None if args.yes else _confirm_large,
        )
    which = "" if part is None else f" (part {part[0]}/{part[1]})"
    print(
        f"{experiment.name}{which}: {summary.lanes_run} replicate lanes, {summary.rows_written} rows "
        f"in {summary.seconds:.1f} s -> {summary.out}"
    )
    from dpsim.engine.storage.store import read_manifest

    if part is None or read_manifest(summary.out).get(
        "complete"
    ):  # the last part of a shared folder draws
        if figures is not None:
            figures.join()
        for path in _plot_dir(summary.out, experiment):
            print(f"figure: {path}")
    return 0


LARGE_RUN_SECONDS = 86400.0  # a run estimated longer than a day asks for --yes


def estimated_bytes(plan) -> float:
    """About how many bytes a plan's rows take on disk: rows (lanes × analysis points ×
    methods) × 8 bytes per column (axes, derived values, every method's columns, rep, point,
    method); Parquet compresses little of a float's random digits."""
    experiment = plan.grid.experiment
    columns = (
        len(experiment.axes)
        + len(experiment.derived_names())
        + 3
        + sum(len(m.columns) for m in experiment.methods.values())
    )
    return (
        float(plan.lanes) * len(plan.grid.analysis_points) * len(experiment.methods) * columns * 8
    )


def _free_bytes(out: Path) -> float:
    """Free bytes on the file system that holds ``out`` (its nearest existing ancestor)."""
    import shutil

    path = Path(out).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return float(shutil.disk_usage(path).free)


def _confirm_large(plan) -> None:
    """`dpsim run`'s guard, before anything is computed: a plan estimated longer than a day
    (the engine's cost model, as --dry-run prints it) or larger than the free disk asks
    "start it? [y/N]" on a terminal, and is refused in one line elsewhere (stdin not a tty):
    --yes starts it without asking."""
    from dpsim.engine.presentation.units import format_bytes, format_duration

    seconds, size, free = plan.compute_seconds(), estimated_bytes(plan), _free_bytes(plan.out)
    reasons = (
        [f"about {format_duration(seconds)} by the engine's cost model"]
        if seconds > LARGE_RUN_SECONDS
        else []
    ) + (
        [
            f"about {format_bytes(size)} of rows, more than the {format_bytes(free)} free "
            f"where {plan.out} is"
        ]
        if size > free
        else []
    )
    if not reasons:
        return
    what = f"{plan.grid.experiment.name}: {plan.lanes} replicate lanes would take {' and '.join(reasons)}"
    if sys.stdin is not None and sys.stdin.isatty():
        answer = input(f"{what}; start it? [y/N] ").strip().lower()
        if answer in ("y", "yes"):
            return
    raise UsageError(
        f"{what}; nothing started: give fewer --reps or --set values (`--dry-run` shows the plan), "
        f"or --yes to start it anyway"
    )


def _named_folder(value: str | None, option: str) -> None:
    """Refuse an empty folder name (``--out ""`` would write to the default or the working
    directory): UsageError naming the option. None (not given) passes."""
    if value is not None and not str(value).strip():
        raise UsageError(f"{option} {value!r} names no folder")


def cmd_solve(args) -> int:
    """For every configuration of the other axes, the value of --for where mean METRIC = VALUE."""
    from dpsim.api import solve
    from dpsim.engine.solving.solve import parse_within

    _named_folder(args.out, "--out")
    overrides = _parse_sets(args.set)
    within = None if args.within is None else parse_within(args.within)
    result = solve(
        args.experiment,
        axis=args.axis,
        target=args.target,
        within=within,
        finder=args.finder,
        seed=args.seed,
        out=args.out,
        level=args.level,
        budget=args.budget,
        progress=not args.no_progress,
        watchdog=args.watchdog,
        **overrides,
    )
    for line in solve_lines(result):
        print(line)
    return 0


def solve_lines(result) -> list[str]:
    """What `dpsim solve` prints: one line per configuration (the axes that vary, the root and
    its interval, status, lanes), then the totals and where the files are."""
    import math

    problem, table = result.problem, result.table
    level = f"{problem.level:.0%}"
    head = "".join(f"{a:>10} " for a in problem.varying)
    lines = [
        f"{problem.experiment.name}: {problem.axis} where mean {problem.target.metric} "
        f"({problem.target.method}) = {problem.target.value:g}, searched [{problem.search.low:g}, "
        f"{problem.search.high:g}], finder {table['finder'].iloc[0]}",
        f"{head}{'root':>10} {level + ' CI':>23}  {'status':<13} {'lanes':>7}",
    ]

    def number(v):
        return "-" if math.isnan(v) else f"{v:.4g}"

    for _, row in table.iterrows():
        axes = "".join(f"{_value_text(row[a]):>10} " for a in problem.varying)
        ci = f"[{number(row['low'])}, {number(row['high'])}]"
        lines.append(
            f"{axes}{number(row['root']):>10} {ci:>23}  {row['status']:<13} {row['lanes']:>7}"
        )
    flagged = [f"{result.nan_rows} rows with a NaN metric left out"] if result.nan_rows else []
    flagged += (
        [f"{result.unconverged_rows} rows of unconverged fits kept"]
        if result.unconverged_rows
        else []
    )
    lines.append(
        f"{result.stages} stages, {result.lanes_asked} lanes asked, {result.lanes_run} computed now, "
        f"{result.seconds:.1f} s" + "".join(f"; {f}" for f in flagged)
    )
    if result.files:
        lines.append(f"wrote {', '.join(path.name for path in result.files)} in {result.out}")
    else:
        lines.append(
            f"nothing written: the budget ({problem.budget} lanes) is below the first stage's"
        )
    return lines


def _value_text(value) -> str:
    if isinstance(value, float):
        return "inf" if value == float("inf") else f"{value:g}"
    return str(value)


def cmd_merge(args) -> int:
    """Join run folders of one experiment, seed and code (e.g. the parts of an array job); a
    complete merged folder gets its figure, as the last part of a split into one folder draws it."""
    from dpsim.api import merge

    _named_folder(args.out, "the merged folder")
    manifest = merge(args.out, args.dirs).manifest
    rows = manifest["study"].get("rows", 0)
    state = (
        "complete"
        if manifest["complete"]
        else "incomplete: `dpsim run` into it computes what is missing"
    )
    print(
        f"{manifest['experiment']}: {len(args.dirs)} folders, {rows} rows -> {args.out} ({state})"
    )
    if manifest["complete"]:  # as the last part of a split writing one folder draws it
        for path in _plot_dir(Path(args.out), _manifest_experiment(manifest)):
            print(f"figure: {path}")
    return 0


def _run_directory(path: str) -> Path:
    """A folder whose rows can be read: a manifest, or parts alone (a lost manifest)."""
    from dpsim.engine.storage.store import MANIFEST, part_files

    out = Path(path)
    if not out.is_dir() or not ((out / MANIFEST).exists() or part_files(out)):
        raise UsageError(f"{path!r} holds no dpsim run (no manifest.json)")
    return out


def cmd_info(args) -> int:
    """A study folder's provenance and completeness (dpsim.engine.storage.folder.folder_info)."""
    from dpsim.api import info as folder_info
    from dpsim.engine.storage.folder import info_lines
    from dpsim.engine.storage.store import json_text

    info = folder_info(args.dir)
    print(json_text(info) if args.json else "\n".join(info_lines(info)))
    return 0


def cmd_repair(args) -> int:
    """Set aside damaged parts and rebuild a lost manifest (dpsim.engine.storage.folder.repair_folder)."""
    from dpsim.api import repair

    report = repair(args.dir)
    if not report["changed"]:
        print(f"{args.dir}: nothing to repair")
        return 0
    for name in report["temporaries"]:
        print(f"removed {name} (a temporary file of a killed run)")
    for name, why in report["set_aside"]:
        print(f"set aside {name} as {name}.corrupt ({why})")
    if report["manifest"] != "kept":
        print(f"manifest.json {report['manifest']}")
    if report["experiment_missing"]:
        print(f"completeness not recounted: {report['experiment_missing']}")
    elif not report["complete"]:
        lanes = report["lanes"]
        stored = (
            f"{lanes['stored']} of {lanes['planned']} replicate lanes stored"
            if lanes
            else "incomplete"
        )
        print(f"{args.dir}: {stored}: `dpsim run` into it computes the rest")
    else:
        print(f"{args.dir}: complete")
    return 0


EXPORT_FORMATS = (".csv", ".parquet", ".feather")


def cmd_export(args) -> int:
    """The tidy table of a run directory as one file (CSV, Parquet or Feather, by suffix)."""
    from dpsim.engine.storage.store import check_directory, load_results, write_file

    out = _run_directory(args.dir)
    target = Path(args.to)
    if target.suffix not in EXPORT_FORMATS:
        raise UsageError(f"--to {args.to!r}: name a file ending in {', '.join(EXPORT_FORMATS)}")
    check_directory(target.parent, "--to")
    table = load_results(out)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_file(
            target,
            {
                ".csv": lambda tmp: table.to_csv(tmp, index=False),  # whole or not at all
                ".parquet": lambda tmp: table.to_parquet(tmp, index=False),
                ".feather": lambda tmp: table.reset_index(drop=True).to_feather(tmp),
            }[target.suffix],
        )
    except OSError as exc:
        raise UsageError(f"cannot write {args.to!r}: {exc.strerror or exc}") from None
    print(f"{len(table)} rows, {len(table.columns)} columns -> {target}")
    return 0


def cmd_summary(args) -> int:
    """Means with 95% intervals per group, and log–log slopes, from the command line: the
    numbers of :meth:`dpsim.api.Results.summary`, formatted."""
    import pandas as pd

    from dpsim.api import load
    from dpsim.engine.presentation.panels import parse_where

    where = parse_where(args.where or [])
    results = load(_run_directory(args.dir))
    pool = tuple(args.pool or ())
    if args.slope:
        fits = results.summary(slope=args.slope, where=where, pool=pool, cli=True)
        for _, fit in fits.iterrows():
            others = [c for c in fits.columns if c not in SLOPE_COLUMNS]
            label = f"{fit['method']:<16}" + "".join(
                f" {a}={fit[a]}" for a in others if pd.notna(fit[a])
            )
            print(
                f"{label}: slope of log {fit['metric']} on log {fit['axis']} {fit['slope']:+.3f} "
                f"[{fit['ci_low']:+.3f}, {fit['ci_high']:+.3f}]  ({fit['rows']})"
            )
        return 0
    out = results.summary(args.metric, args.by, where=where, pool=pool, cli=True)
    metric, metrics = out.attrs["metric"], out.attrs["metrics"]
    others = [m for m in metrics if m != metric]
    how = (
        ""
        if args.metric
        else " (the first metric; --metric NAME for another"
        + (f": {', '.join(others)})" if others else ")")
    )
    print(f"{metric}: mean, sd, n and 95% interval per group{how}")
    with pd.option_context("display.max_rows", 500, "display.width", 160):
        print(out.drop(columns="metric").to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    return 0


SLOPE_COLUMNS = (
    "metric",
    "axis",
    "method",
    "slope",
    "stderr",
    "ci_low",
    "ci_high",
    "n_points",
    "n_obs",
    "rows",
)


def cmd_plot(args) -> int:
    from dpsim.engine.storage.store import check_directory, read_manifest
    from dpsim.engine.presentation.panels import parse_where

    where = parse_where(args.where or [])
    out = Path(args.dir)
    if args.to:
        check_directory(Path(args.to).parent, "--to")
    manifest = read_manifest(out) if out.is_dir() else None
    if manifest is None:
        raise UsageError(f"{str(out)!r} holds no dpsim run (no manifest.json)")
    experiment = _manifest_experiment(manifest)
    if not manifest.get("complete", True):
        print(
            f"note: {out} holds an incomplete run (interrupted or still running); the figure draws the rows "
            f"computed so far: run the same command again to finish it",
            file=sys.stderr,
        )
    try:
        paths = _plot_dir(
            out,
            experiment,
            Path(args.to) if args.to else None,
            where=where,
            metric=args.metric,
            logy=args.logy,
        )
    except OSError as exc:
        raise UsageError(
            f"cannot write the figure: {exc.strerror or exc} ({exc.filename or args.to or out})"
        ) from None
    if not paths:
        raise UsageError(f"experiment {experiment.name!r} defines no figure")
    for path in paths:
        print(f"figure: {path}")
    return 0


def _manifest_experiment(manifest: dict):
    """The experiment a run directory holds, found again from the manifest's source."""
    from dpsim.api import experiment_of

    return experiment_of(manifest)


def cmd_verify(args) -> int:
    from dpsim.api import verify

    _named_folder(args.runs, "--runs")
    found = verify(
        *args.checks,
        runs=args.runs,
        seed=args.seed,
        reps=args.reps,
        until_decided=args.until_decided,
        budget=args.budget,
        stages=args.stages,
        mutants=args.mutant or args.mutants,
        progress=not args.no_progress,
        echo=lambda line: print(line, flush=True),
        watchdog=args.watchdog,
        cli=True,
    )
    names = [
        "verdicts.json",
        "verdicts.csv",
        *(["kill-matrix.csv"] if found.mutants is not None else []),
    ]
    print(
        f"verdicts: {', '.join(str(Path(args.runs) / n) for n in names)}", file=sys.stderr
    )  # stdout: the verdicts
    survivors = 0 if found.mutants is None else int((~found.mutants["killed"]).sum())
    return verify_status(Counter(found.counts), survivors)


VERIFY_STATUS = """exit status: 0 every judged check passed; 1 a check FAILed (the data contradict its claim,
family-wise), was REFUSED (too many unconverged fits) or a mutant survived; 4 a check could not
be evaluated (ERROR: a broken check, e.g. its statistic is NaN; no claim about the science);
3 some checks INCONCLUSIVE (more replicates would decide them); 2 bad input (one line, nothing
computed: a check naming a metric, method or axis its experiment lacks, or pooling an axis, is
refused when its paper or study loads)."""


def verify_status(counts, survivors: int = 0) -> int:
    """`dpsim verify`'s exit status (:data:`VERIFY_STATUS`): 1 for a FAIL, a REFUSED check or a
    surviving mutant, else 4 for an ERROR, else 3 for an INCONCLUSIVE check, else 0."""
    if counts["FAIL"] or counts["REFUSED"] or survivors:
        return 1
    if counts["ERROR"]:
        return 4
    return 3 if counts["INCONCLUSIVE"] else 0


def cmd_report(args) -> int:
    """One self-contained HTML page of run folders or verify folders (:mod:`dpsim.engine.presentation.report`)."""
    from dpsim.engine.presentation.report import write_report

    path = write_report(args.paths, args.out)
    print(f"report: {path}")
    if args.open:
        import webbrowser

        webbrowser.open(path.resolve().as_uri())
    return 0


def cmd_audit(args) -> int:
    """Run privacy audits (each paper's ``AUDITS``): the exact privacy loss on worst-case
    neighbours against the claimed ε, and its estimate from samples of the mechanism."""
    from dpsim.api import audit

    found = audit(*args.audits, eps=args.eps, samples=args.samples, seed=args.seed)
    print(
        f"{'mechanism':<22} {'mode':<14} {'eps':>5} {'delta':>7} {'exact loss':>10} {'empirical':>16} "
        f"{'verdict':>12}  detail"
    )
    for r in found.itertuples():
        verdict = "within ε" if r.within_budget else f"{r.exact_loss / r.eps:.2g}×ε"
        if not r.empirically_consistent:
            verdict += " (sampling disagrees)"
        print(
            f"{r.mechanism:<22} {r.mode:<14} {r.eps:>5g} {r.delta:>7.2g} {r.exact_loss:>10.4f} "
            f"{r.empirical_loss:>9.4f} ± {r.empirical_se:.3f} {verdict:>12}  {r.detail}"
        )
    ok = (
        (found["within_budget"] | found["known_violation"]) & found["empirically_consistent"]
    ).all()
    return 0 if ok else 1


def cmd_new_paper(args) -> int:
    from dpsim.engine.scaffold import new_paper, next_steps

    package = new_paper(args.name, args.to, title=args.title)
    print("\n".join(next_steps(args.name, package)))
    return 0


def _add_watchdog(parser) -> None:
    parser.add_argument(
        "--watchdog",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop with an error when no chunk finishes for this long "
        "(default $DPSIM_WATCHDOG or 900); re-running resumes",
    )


EPILOG = """start with `dpsim list` (experiments, checks, audits) and `dpsim show NAME` (axes, methods,
metrics, expected run time); then `dpsim run NAME [--set AXIS=V1,V2] [--dry-run]`; thresholds:
`dpsim solve NAME --for AXIS --target METRIC@METHOD=VALUE`."""


def _list_parser(sub) -> None:
    """``dpsim list``'s arguments."""
    lister = sub.add_parser("list", help="list experiments, checks and audits")
    lister.add_argument(
        "study",
        nargs="?",
        default=None,
        help="a paper (cai) or name prefix to list only its items, or a study file to add its own "
        "(path/to/study.py)",
    )
    lister.add_argument(
        "--pins",
        action="store_true",
        help="instead: each generator, mechanism, estimator and metric the paper declares, the checks that pin "
        "it and the mutants that break it; GAP where no check pins it",
    )
    lister.set_defaults(func=cmd_list)


def _show_parser(sub) -> None:
    """``dpsim show``'s arguments."""
    show = sub.add_parser(
        "show", help="an experiment's axes, methods, metrics and expected run time"
    )
    show.add_argument("experiment", help="a name from `dpsim list`, or path/to/study.py[:NAME]")
    show.add_argument("--no-estimate", action="store_true", help="skip the run-time estimate")
    show.set_defaults(func=cmd_show)


def _run_parser(sub) -> None:
    """``dpsim run``'s arguments."""
    run = sub.add_parser(
        "run",
        help="run (or resume) an experiment",
        epilog="experiments: `dpsim list`; an experiment's axes and defaults: `dpsim show NAME`",
    )
    run.add_argument("experiment", help="a name from `dpsim list`, or path/to/study.py[:NAME]")
    run.add_argument("--reps", type=int, default=None, help="replicates per grid point")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--out", default=None, help="output directory (default runs/EXPERIMENT)")
    run.add_argument(
        "--set", action="append", metavar="AXIS=V1,V2,...", help="override a grid axis"
    )
    run.add_argument("--chunk", type=int, default=None, help="replicate lanes per chunk")
    run.add_argument(
        "--micro-batch",
        type=int,
        default=None,
        metavar="LANES",
        help="at most this many replicate lanes vmapped together (default: chosen for the "
        "device: 1 on CPU, up to 2048 on a GPU; $DPSIM_MICRO_BATCH)",
    )
    run.add_argument(
        "--workers",
        type=int,
        default=None,
        help="chunks computed at the same time (default: CPU cores, at most 4; on a GPU one, "
        "with the next queued behind it)",
    )
    run.add_argument(
        "--executor",
        default="local",
        metavar="NAME",
        help="who computes the chunks: local (this process, the default) or ray (Ray actors; "
        "pip install 'dpsim[ray]')",
    )
    run.add_argument(
        "--address",
        default=None,
        metavar="ADDR",
        help="with --executor ray: the Ray cluster to use (default: start a local Ray instance)",
    )
    run.add_argument(
        "--ray-workers",
        type=int,
        default=None,
        metavar="N",
        help="with --executor ray: actors (default: one per GPU, else one per 4 CPU cores)",
    )
    run.add_argument(
        "--part",
        default=None,
        metavar="I/N",
        help="compute only part I of N of the grid's replicate lanes (array jobs: the N parts, in one "
        "shared --out or joined by `dpsim merge`, make the table of one run)",
    )
    run.add_argument("--no-progress", action="store_true")
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (programs, lanes, chunks); write nothing",
    )
    run.add_argument(
        "--accept-code-change",
        action="store_true",
        help="extend a folder made by other code: its rows stay, only lanes not stored are computed "
        "by this code, and the manifest records the change as a new segment",
    )
    run.add_argument(
        "--yes",
        action="store_true",
        help="start a run estimated longer than a day or larger than the free disk without asking "
        "(without it such a run asks on a terminal and is refused elsewhere)",
    )
    _add_watchdog(run)
    run.set_defaults(func=cmd_run)


def _solve_parser(sub) -> None:
    """``dpsim solve``'s arguments."""
    solve = sub.add_parser(
        "solve",
        help="for every configuration of the other axes, the value of an axis where "
        "a metric's mean reaches a target (a stochastic root-finder)",
        epilog="e.g. dpsim solve cai-threshold --for gap --target exact_recovery@counts=0.5 "
        "--set n_items=100,200 --set eps=0.5,inf",
    )
    solve.add_argument("experiment", help="a name from `dpsim list`, or path/to/study.py[:NAME]")
    solve.add_argument(
        "--for",
        dest="axis",
        required=True,
        metavar="AXIS",
        help="the numeric axis to solve for (shape, data or analysis axis)",
    )
    solve.add_argument(
        "--target",
        required=True,
        metavar="METRIC[@METHOD]=VALUE",
        help="solve mean METRIC (of METHOD; optional with one method) = VALUE",
    )
    solve.add_argument(
        "--within",
        default=None,
        metavar="LO:HI",
        help="the interval searched (default: the smallest and largest of AXIS's values)",
    )
    solve.add_argument(
        "--finder", default=None, metavar="NAME", help="the root-finding method (default: monotone)"
    )
    solve.add_argument(
        "--level", type=float, default=0.95, help="confidence level of the roots' intervals"
    )
    solve.add_argument(
        "--budget",
        type=int,
        default=None,
        metavar="LANES",
        help="at most this many replicate lanes asked in all (roots then from the evidence so far)",
    )
    solve.add_argument(
        "--set",
        action="append",
        metavar="AXIS=V1,V2,...",
        help="values of another axis (each combination of the other axes is one configuration)",
    )
    solve.add_argument("--seed", type=int, default=0)
    solve.add_argument(
        "--out", default=None, help="output directory (default runs/EXPERIMENT-solve-AXIS)"
    )
    solve.add_argument("--no-progress", action="store_true")
    _add_watchdog(solve)
    solve.set_defaults(func=cmd_solve)


def _merge_parser(sub) -> None:
    """``dpsim merge``'s arguments."""
    merge = sub.add_parser(
        "merge", help="join run folders of one experiment, seed and code into one"
    )
    merge.add_argument("out", help="the new folder")
    merge.add_argument("dirs", nargs="+", help="run folders (e.g. those of `dpsim run --part I/N`)")
    merge.set_defaults(func=cmd_merge)


def _plot_parser(sub) -> None:
    """``dpsim plot``'s arguments."""
    plot = sub.add_parser("plot", help="draw the figure of a run directory")
    plot.add_argument("dir")
    plot.add_argument("--to", default=None, help="file stem for PNG and PDF (default DIR/figure)")
    plot.add_argument(
        "--metric",
        default=None,
        metavar="NAME",
        help="draw this metric (every method that reports it) instead of the declared panels",
    )
    plot.add_argument(
        "--logy",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="log (--logy) or linear (--no-logy) y axis on every panel (default: as declared)",
    )
    plot.add_argument(
        "--where",
        action="append",
        metavar="AXIS=V1,V2,...",
        help="draw only the rows whose AXIS (a grid axis or method) takes these values; repeatable",
    )
    plot.set_defaults(func=cmd_plot)


def _export_parser(sub) -> None:
    """``dpsim export``'s arguments."""
    export = sub.add_parser("export", help="write a run directory's tidy table as one file")
    export.add_argument("dir")
    export.add_argument("--to", required=True, help="FILE.csv, FILE.parquet or FILE.feather")
    export.set_defaults(func=cmd_export)


def _info_parser(sub) -> None:
    """``dpsim info``'s arguments."""
    info = sub.add_parser(
        "info",
        help="what a run directory holds and what made it (code, versions, requests, "
        "completeness, damage)",
    )
    info.add_argument("dir")
    info.add_argument("--json", action="store_true", help="print it as JSON")
    info.set_defaults(func=cmd_info)


def _repair_parser(sub) -> None:
    """``dpsim repair``'s arguments."""
    repair = sub.add_parser(
        "repair",
        help="set aside a run directory's damaged parts and rebuild its manifest from "
        "the parts (computes nothing)",
    )
    repair.add_argument("dir")
    repair.set_defaults(func=cmd_repair)


def _summary_parser(sub) -> None:
    """``dpsim summary``'s arguments."""
    summ = sub.add_parser(
        "summary", help="means with 95%% intervals (or log-log slopes) of a run directory"
    )
    summ.add_argument("dir")
    summ.add_argument(
        "--metric",
        default=None,
        help="the metric to summarise (default: the first; the output names it)",
    )
    summ.add_argument(
        "--by",
        nargs="+",
        default=None,
        help="group by these axes (default: every axis that varies)",
    )
    summ.add_argument("--pool", nargs="+", default=None, help="axes to average over deliberately")
    summ.add_argument(
        "--where",
        action="append",
        metavar="AXIS=V1,V2,...",
        help="summarise only the rows whose AXIS (a grid axis or method) takes these values; repeatable",
    )
    summ.add_argument(
        "--slope",
        action="append",
        metavar="METRIC:AXIS",
        help="print the slope of log METRIC on log AXIS per method instead",
    )
    summ.set_defaults(func=cmd_summary)


def _verify_parser(sub) -> None:
    """``dpsim verify``'s arguments."""
    ver = sub.add_parser(
        "verify",
        help="run and evaluate rate checks",
        epilog=VERIFY_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ver.add_argument(
        "checks",
        nargs="*",
        help="check names, a paper prefix (cai), experiment names (their checks), or path/to/study.py",
    )
    ver.add_argument(
        "--runs",
        default=str(Path("runs") / "verify"),
        help="directory holding the checks' runs (default runs/verify, apart from `dpsim run`'s)",
    )
    ver.add_argument("--seed", type=int, default=0)
    ver.add_argument(
        "--reps",
        type=int,
        default=None,
        help="judge on exactly this many replicates (computed if missing; default: each "
        "experiment's own)",
    )
    ver.add_argument(
        "--until-decided",
        action="store_true",
        help="give INCONCLUSIVE checks more replicates at the points they read, in stages (R, 2R, "
        "4R, …), until decided; stage levels spend the error rates so both stay at their nominal "
        "values (alpha spending over the stages)",
    )
    ver.add_argument(
        "--budget",
        type=int,
        default=None,
        metavar="LANES",
        help="with --until-decided: the most lanes (data point × replicate) the later stages may add, "
        "over the whole verify (default: no limit but --stages)",
    )
    ver.add_argument(
        "--stages",
        type=int,
        default=None,
        metavar="S",
        help="with --until-decided: the most stages, the first included (default 4: up to 8R replicates)",
    )
    ver.add_argument(
        "--mutants",
        action="store_true",
        help="then judge the checks again under each declared mutant (a plausible bug) of their "
        "experiments; exit 1 when one survives (no check FAILs under it)",
    )
    ver.add_argument(
        "--mutant",
        action="append",
        metavar="NAME",
        help="judge under this mutant only (repeatable; implies --mutants)",
    )
    ver.add_argument("--no-progress", action="store_true")
    _add_watchdog(ver)
    ver.set_defaults(func=cmd_verify)


def _report_parser(sub) -> None:
    """``dpsim report``'s arguments."""
    report = sub.add_parser(
        "report",
        help="one self-contained HTML page of run folders or a verify folder: "
        "figures, summaries, verdicts, kill matrix, warnings, provenance",
    )
    report.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a run folder, several, or a verify folder (its run folders and verdicts.json)",
    )
    report.add_argument(
        "--out",
        default=None,
        metavar="FILE.html",
        help="the page (default PATH/report.html for one PATH; needed for several)",
    )
    report.add_argument("--open", action="store_true", help="open the page in the web browser")
    report.set_defaults(func=cmd_report)


def _audit_parser(sub) -> None:
    """``dpsim audit``'s arguments."""
    audit = sub.add_parser("audit", help="privacy audits of the papers' mechanisms")
    audit.add_argument("audits", nargs="*", help="audit names or a paper prefix (default: all)")
    audit.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    audit.add_argument("--samples", type=int, default=200_000)
    audit.add_argument("--seed", type=int, default=0)
    audit.set_defaults(func=cmd_audit)


def _new_paper_parser(sub) -> None:
    """``dpsim new-paper``'s arguments."""
    new = sub.add_parser(
        "new-paper",
        help="write a new paper package from the template, in the skeleton every "
        "paper follows (model, methods, figures, checks, mutants, audits)",
    )
    new.add_argument("name", help="the paper's name: a lower-case Python identifier, e.g. smith")
    new.add_argument(
        "--to",
        default="experiments",
        help="the folder holding paper packages (default: experiments)",
    )
    new.add_argument("--title", default=None, help="the paper's title")
    new.set_defaults(func=cmd_new_paper)


SUBCOMMANDS = (
    _list_parser,
    _show_parser,
    _run_parser,
    _solve_parser,
    _merge_parser,
    _plot_parser,
    _export_parser,
    _info_parser,
    _repair_parser,
    _summary_parser,
    _verify_parser,
    _report_parser,
    _audit_parser,
    _new_paper_parser,
)  # each adds one subcommand, in the order `dpsim --help` lists them


@functools.lru_cache(maxsize=None)
def build_parser() -> argparse.ArgumentParser:
    """The command's parser, built once per process (tests call :func:`main` hundreds of
    times in one process and would pay the build each time)."""
    from dpsim import __version__

    parser = _Parser(
        prog="dpsim",
        description="Minimax-rate experiments for differentially private "
        "learning from pairwise comparisons and response data.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"dpsim {__version__}")
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="show the whole Python trace of an error in a study's own code (truth, generate, "
        "derived values, methods, figure, checks; sets DPSIM_TRACEBACK=1)",
    )
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def enable_compilation_cache() -> None:
    """Keep XLA executables across processes (JAX's persistent compilation cache), so a
    re-run, a resume or `dpsim verify` after `dpsim run` skips compilation. Location:
    $DPSIM_JAX_CACHE, default ~/.cache/dpsim/jax; DPSIM_JAX_CACHE=off disables it."""
    import os

    import jax

    path = os.environ.get("DPSIM_JAX_CACHE", str(Path.home() / ".cache" / "dpsim" / "jax"))
    if path.lower() in ("off", "0", "none", ""):
        return
    jax.config.update("jax_compilation_cache_dir", path)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """dpsim's warnings as one line each; others as Python prints them."""
    if issubclass(category, DpsimWarning):
        print(f"dpsim: warning: {message}", file=sys.stderr, flush=True)
    elif issubclass(category, DpsimNote):
        print(f"dpsim: note: {message}", file=sys.stderr, flush=True)
    else:
        _python_showwarning(message, category, filename, lineno, file, line)


_python_showwarning = warnings.showwarning


def main(argv=None) -> int:
    with warnings.catch_warnings():
        # each command says its notes and warnings afresh: setting a filter clears Python's
        # once-per-location memory, which would hide a note an earlier command in the same
        # process (a notebook, a test) already gave
        warnings.simplefilter("default", DpsimNote)
        warnings.simplefilter("default", DpsimWarning)
        code = _main(argv)
    if argv is None:
        _leave(code)
    return code


def _leave(code: int) -> None:
    """End a command-line process once its command has returned: the exit handlers run (a
    local Ray cluster is shut down, locks released, logs flushed), then the process exits
    without the interpreter's teardown of every module and of XLA's compiled programs, which
    costs a CPU process most of a second and writes nothing (docs/performance.md, "Cold runs
    and short runs"). Every file a command writes is whole and flushed before it returns."""
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that stopped reading, a stream closed
            pass
    os._exit(0 if code is None else code if isinstance(code, int) else 1)


_COMMAND_LINE = False  # True when main() reads sys.argv: this process runs one command


def _main(argv) -> int:
    global _COMMAND_LINE
    _COMMAND_LINE = argv is None
    from dpsim.engine.storage.store import forget_said

    forget_said()
    warnings.showwarning = _show_warning
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.traceback:
            os.environ["DPSIM_TRACEBACK"] = "1"
        if args.command is None:
            parser.print_help()
            return 0
        if args.command in ("run", "solve", "verify", "show"):
            enable_compilation_cache()
        return args.func(args)
    except UsageError as exc:
        print(f"dpsim: error: {exc}", file=sys.stderr)
        if argv is None and threading.active_count() > 1:
            # A run stopped part-way (e.g. a write failed on a full disk) while its daemon threads
            # may still be compiling or computing inside XLA, where interpreter shutdown can crash
            # (SIGSEGV after the error line): leave without it. What was written is whole.
            sys.stderr.flush()
            sys.stdout.flush()
            os._exit(2)
        return 2
    except RunStalled as exc:
        # A thread may be stuck inside a native call that no Python code can interrupt:
        # report, flush, and leave without running interpreter shutdown (which could wait
        # on it). Everything already written is complete (atomic parts).
        print(f"dpsim: error: {exc}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(3)
    except KeyboardInterrupt:
        print(
            "dpsim: interrupted; completed chunks are saved, re-run to resume",
            file=sys.stderr,
            flush=True,
        )
        if argv is None:
            # From the command line: leave without interpreter shutdown, which aborts with
            # "terminate called ... FATAL: exception not rethrown" while XLA's worker threads
            # are still running a chunk. Every completed part is already on disk (atomic).
            sys.stdout.flush()
            os._exit(130)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        warnings.showwarning = _python_showwarning


if __name__ == "__main__":
    sys.exit(main())
