"""Run an experiment's grid: validate, plan, compile per step, compute chunks concurrently,
write parts and the manifest, resume.

The run loop only: the device batching policy is :mod:`dpsim.engine.execution.batching`, the plan
(which lanes, in which programs and chunks) :mod:`dpsim.engine.execution.planning`, a chunk's
program arguments and Arrow rows :mod:`dpsim.engine.execution.chunk_io`, the compiled programs
:mod:`dpsim.engine.execution.program`, who computes the chunks :mod:`dpsim.engine.execution.executors`
(in this process by default: each step's program is compiled in a background thread while
the previous step computes, and on CPU several chunks are computed at the same time,
:func:`~dpsim.engine.execution.batching.default_workers`; or by Ray actors). Each chunk is written
as one atomic Parquet part, by the main thread of the driver only.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dpsim.errors import UsageError, note, warn
from dpsim.engine.execution import calibration
from dpsim.engine.storage import parts, store
from dpsim.engine.execution.batching import Batching, batching, memory_limit
from dpsim.engine.execution.chunk_io import method_columns
from dpsim.engine.execution.executors import Executor, Job, LocalExecutor
from dpsim.engine.definition.experiment import Experiment
from dpsim.engine.definition.grid import Grid, expand_grid
from dpsim.engine.execution.planning import (
    Plan,
    check_part,
    plan_steps,
    replicate_range,
    step_label,
)
from dpsim.engine.storage.provenance import environment, fingerprint
from dpsim.engine.execution.program import compiler_options
from dpsim.engine.presentation.units import format_bytes
from dpsim.results import reasons

DEFAULT_WATCHDOG_SECONDS = 900.0
# A run keeps the tables it wrote, up to this many rows, so that the manifest's summaries are
# made without reading its parts back (a short run's largest host cost after its chunks:
# docs/performance.md, "Cold runs and short runs"); a larger run reads them back.
SUMMARY_ROWS_HELD = 200_000

__all__ = [
    "run_experiment",
    "plan_run",
    "RunSummary",
    "watchdog_seconds",
    "folder_summaries",
    "study_summary",
    "unconverged",
    "nan_metrics",
]


def _progress_bar_class():
    """The progress bar: tqdm's notebook widget where a notebook can draw it (ipywidgets is
    installed), else its text bar. (``tqdm.auto`` alone warns with a TqdmWarning in a notebook
    without ipywidgets and then prints text bars anyway.) Returns: the tqdm class."""
    import importlib.util

    if importlib.util.find_spec("ipywidgets") is None:
        from tqdm.std import tqdm as text_bar

        return text_bar
    from tqdm.auto import tqdm as auto_bar

    return auto_bar


tqdm = _progress_bar_class()


@dataclass
class RunSummary:
    out: Path
    rows_written: int
    lanes_run: int
    seconds: float
    compile_seconds: float


def watchdog_seconds(value: float | None = None) -> float:
    """Seconds a run may go without progress (a compiled program or a finished chunk)
    before it is stopped: ``value``, else $DPSIM_WATCHDOG, else 900 (generous: a chunk is
    sized to take well under a minute on CPU)."""
    if value is None:
        text = os.environ.get("DPSIM_WATCHDOG")
        if text is None:
            return DEFAULT_WATCHDOG_SECONDS
        try:
            value = float(text)
        except ValueError:
            raise UsageError(f"DPSIM_WATCHDOG={text!r} must be a number of seconds") from None
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0 < value < math.inf):
        raise UsageError(f"watchdog={value!r} must be a number of seconds > 0")
    return float(value)


@dataclass(frozen=True)
class _Request:
    """A validated run request: the expanded grid and every setting, nothing read yet from
    the run directory's parts (:func:`_validated`)."""

    grid: Grid
    out: Path
    seed: int
    reps: int
    chunk: int | None
    policy: Batching  # its workers and chunks in flight are the request's (``workers`` given: both)
    overrides: Mapping[str, Sequence] | None
    code: dict
    part: tuple | None = None
    reps_at: Mapping[int, int] | None = None
    code_changed: bool = False  # --accept-code-change into a folder of other code: a new segment
    owner: str | None = None  # the manifest's "owner" when this run creates the folder


def _validated(
    experiment: Experiment,
    *,
    reps: int | None,
    seed: int,
    out,
    overrides,
    chunk: int | None,
    workers: int | None,
    micro_batch: int | None,
    part=None,
    reps_at=None,
    accept_code_change: bool = False,
    owner: str | None = None,
) -> _Request:
    """Check every setting and expand the grid, writing nothing (UsageError naming a bad value)."""
    if reps_at is not None:
        reps = _checked_reps_at(reps_at, part)
    reps = experiment.reps if reps is None else reps
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise UsageError(f"reps={reps!r} must be an integer ≥ 1")
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
        raise UsageError(f"chunk={chunk!r} must be an integer ≥ 1")
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
    ):
        raise UsageError(f"workers={workers!r} must be an integer ≥ 1")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise UsageError(f"seed={seed!r} must be an integer in [0, 2^31)")
    part = check_part(part)
    if out is not None and not str(out).strip():
        raise UsageError(
            f"--out {str(out)!r} names no folder (leave --out out for runs/{experiment.name})"
        )
    if accept_code_change and part is not None:
        raise UsageError(
            "--accept-code-change cannot be combined with --part: accept the change with one "
            "whole-grid run into the folder first (e.g. --reps 1 computes nothing already stored)"
        )
    calibration.mode()  # a bad $DPSIM_CALIBRATION is refused before anything is written
    grid = expand_grid(experiment, overrides)
    method_columns(experiment)
    out = Path(out or Path("runs") / experiment.name)
    store.check_compatible(out, experiment.name, seed)
    code = fingerprint(experiment)
    code_changed = store.check_code(out, code, accept=accept_code_change)
    policy = batching(micro_batch=micro_batch)
    if workers is not None:  # that many chunks planned at least, and that many in flight
        policy = dataclasses.replace(policy, workers=workers, in_flight=workers)
    if reps_at is not None:
        ids = {
            experiment.point_id({**shape, **data})
            for shape in grid.shapes
            for data in grid.data_points
        }
        stray = next((pid for pid in reps_at if pid not in ids), None)
        if stray is not None:
            raise UsageError(
                f"reps_at names data point id {stray}, which is not in the grid of {experiment.name}"
            )
        reps_at = dict(reps_at)
    return _Request(
        grid, out, seed, reps, chunk, policy, overrides, code, part, reps_at, code_changed, owner
    )


def _checked_reps_at(reps_at: Mapping[int, int | tuple[int, int]], part) -> int:
    """The largest stop of a valid ``reps_at`` (data point id → a replicate count ≥ 1, or a
    range (start, stop) with 0 ≤ start < stop); UsageError otherwise."""
    if part is not None:
        raise UsageError("reps_at (replicates per point) cannot be combined with part")
    if not reps_at:
        raise UsageError("reps_at names no data point")

    def whole(v, low):
        return not isinstance(v, bool) and isinstance(v, (int, np.integer)) and v >= low

    for pid, wanted in reps_at.items():
        if isinstance(wanted, tuple):
            if not (
                len(wanted) == 2
                and whole(wanted[0], 0)
                and whole(wanted[1], 1)
                and wanted[0] < wanted[1]
            ):
                raise UsageError(
                    f"reps_at[{pid}]={wanted!r} must be a range (start, stop) with 0 ≤ start < stop"
                )
        elif not whole(wanted, 1):
            raise UsageError(
                f"reps_at[{pid}]={wanted!r} must be an integer ≥ 1 or a range (start, stop)"
            )
    return int(max(replicate_range(w)[1] for w in reps_at.values()))


def _planned(request: _Request, calibrate: bool = True) -> Plan:
    """The plan of a validated request against what its directory holds now (``calibrate``:
    whether the executor can time candidate micro-batches, ``Executor.calibrates``). Raises
    UsageError, before anything is written, when one lane's working set exceeds the memory
    it would run in (:func:`memory_limit`)."""
    done = store.completed(request.out)
    path = calibration.cache_path()
    steps = plan_steps(
        request.grid,
        request.reps,
        done,
        request.chunk,
        request.policy.workers,
        request.policy,
        request.part,
        request.reps_at,
        cache=None if path is None else calibration.load(path),
        calibrate=calibrate,
    )
    limit, what = memory_limit(request.policy.backend)
    for step in steps:
        if limit and step.lane_bytes > limit:
            raise UsageError(
                f"{request.grid.experiment.name} at {step_label(request.grid, step)}: one replicate "
                f"lane needs about {format_bytes(step.lane_bytes)}, more than {what} "
                f"({format_bytes(limit)}); choose smaller sizes"
            )
    return Plan(request.grid, steps, done, request.out, request.reps, request.policy, request.part)


def plan_run(
    experiment: Experiment,
    *,
    reps: int | None = None,
    seed: int = 0,
    out=None,
    overrides=None,
    chunk: int | None = None,
    workers: int | None = None,
    micro_batch: int | None = None,
    part=None,
    reps_at=None,
    calibrate: bool = True,
    accept_code_change: bool = False,
) -> Plan:
    """Validate a request and plan it, writing nothing (``--dry-run``; :func:`run_experiment`).
    ``calibrate``: whether the executor that would run it times candidate micro-batches
    (``Executor.calibrates``: the local one does, Ray's does not)."""
    return _planned(
        _validated(
            experiment,
            reps=reps,
            seed=seed,
            out=out,
            overrides=overrides,
            chunk=chunk,
            workers=workers,
            micro_batch=micro_batch,
            part=part,
            reps_at=reps_at,
            accept_code_change=accept_code_change,
        ),
        calibrate,
    )


def run_experiment(
    experiment: Experiment,
    *,
    reps: int | None = None,
    seed: int = 0,
    out: str | Path | None = None,
    overrides: Mapping[str, Sequence] | None = None,
    chunk: int | None = None,
    progress: bool = True,
    workers: int | None = None,
    watchdog: float | None = None,
    source: str | None = None,
    micro_batch: int | None = None,
    executor: Executor | None = None,
    part=None,
    reps_at: Mapping[int, int] | None = None,
    accept_code_change: bool = False,
    owner: str | None = None,
    confirm: Callable[[Plan], None] | None = None,
) -> RunSummary:
    """Run (or resume) ``experiment`` into ``out``; returns what was computed.

    All input is validated before anything is written. Re-running into the same directory
    computes only the (grid point, replicate) pairs that are missing. ``chunk``: lanes per
    chunk (one Parquet part each); ``workers``: chunks computed at the same time (default
    :func:`default_workers`; on an accelerator, one computing and one queued behind it,
    :data:`~dpsim.engine.execution.batching.ACCELERATOR_CHUNKS_IN_FLIGHT`; ``workers`` given: that
    many in flight). Neither changes the results. ``watchdog``: seconds without
    progress after which the run stops with :class:`~dpsim.errors.RunStalled`
    (:func:`watchdog_seconds`); the chunks written so far are kept, so re-running resumes.
    ``source``: where the experiment is defined (a paper module or ``study.py:NAME``),
    recorded in the manifest so that ``dpsim plot`` finds it again. ``micro_batch``: at most
    this many lanes vmapped together (default :func:`batching` of the backend); it changes
    no result beyond float rounding. ``executor``: who computes the chunks
    (:mod:`dpsim.engine.execution.executors`; default :class:`~dpsim.engine.execution.executors.LocalExecutor`,
    in this process); with a :class:`~dpsim.engine.execution.executors.RayExecutor` and no
    ``workers``, each step gets at least as many chunks as it has actors. ``part`` (I, N):
    only that part of the lanes (:func:`~dpsim.engine.execution.planning.lane_part`; array jobs);
    the parts of one split may write one directory at the same time
    (:mod:`dpsim.engine.storage.parts`), which is marked complete when all its lanes are stored.
    Otherwise one run at a time writes into a directory
    (:func:`~dpsim.engine.storage.store.exclusive`); the plan is made once it is held.
    ``reps_at``: data point id (:meth:`~dpsim.engine.definition.grid.Experiment.point_id` of its shape
    and data values) → replicates wanted there, a count R (0 … R − 1) or a range (start, stop);
    only those points are run, each over its own replicates (``reps`` is ignored; ``dpsim solve`` and ``verify --until-decided`` ask for
    replicates where they need them). Keys are unchanged: replicate r of a point is the same
    draw whichever request computes it. ``confirm``: called with the plan before anything is
    computed or written (``dpsim run``'s guard against a run of days or beyond the free disk);
    it raises UsageError to stop the run.

    Code (:mod:`dpsim.engine.storage.provenance`): a folder whose rows were made by other code is
    refused (:func:`~dpsim.engine.storage.store.check_code`) unless ``accept_code_change``: then
    the rows stored stay, only the lanes not stored are computed by this code, and the
    manifest records a new segment (:func:`~dpsim.engine.storage.store.accepted_segments`: this
    code, when, the parts stored before it) and the history entry says so; its ``code`` is
    this code from then on. ``owner``: the manifest's ``owner`` when this run creates the
    folder (``dpsim verify`` marks its cache :data:`~dpsim.engine.storage.store.CACHE_OWNER`); an
    existing folder keeps its own.

    Threads: one background thread only *compiles* (the next step's program, while the
    current one computes); programs are executed by daemon threads, one per chunk in flight (chunks;
    each chunk draws θ* itself, :func:`~dpsim.engine.execution.program.make_chunk_fn`). No
    batched LAPACK call is ever executed on CPU (:mod:`dpsim.linalg`), which is what
    deadlocked concurrent chunks.
    """
    patience = watchdog_seconds(watchdog)
    compiler_options()  # a bad $DPSIM_XLA_CPU_OPT_LEVEL is refused before anything is written
    executor = executor or LocalExecutor()
    request = _validated(
        experiment,
        reps=reps,
        seed=seed,
        out=out,
        overrides=overrides,
        chunk=chunk,
        workers=workers if workers is not None else executor.workers,
        micro_batch=micro_batch,
        part=part,
        reps_at=reps_at,
        accept_code_change=accept_code_change,
        owner=owner,
    )  # writes nothing
    with store.exclusive(request.out, request.part):  # one writer per run directory (or per part)
        store.set_aside_unreadable(request.out)  # damaged parts: kept aside, their lanes run again
        work = _planned(request, executor.calibrates)
        if confirm is not None:
            confirm(work)
        return _run_planned(experiment, work, request, progress, patience, source, executor)


def _run_planned(
    experiment: Experiment,
    work: Plan,
    settings: _Request,
    progress: bool,
    patience: float,
    source: str | None,
    executor: Executor,
) -> RunSummary:
    """:func:`run_experiment` once the directory is held: ``work`` was planned under the
    lock, so it sees every part another run finished before, and no other run writes, so
    temporary files a killed run left are removed (:func:`~dpsim.engine.storage.store.remove_temporary`)."""
    overrides, chunk, seed = settings.overrides, settings.chunk, settings.seed
    grid, plan, done, out, workers = work.grid, work.steps, work.done, work.out, work.workers
    previous = store.read_manifest(out) or {}
    if not plan and previous.get("complete") and not settings.code_changed:
        # nothing to compute (e.g. verify judging a finished run): the folder is left as it was
        _warn_unconverged(experiment, previous.get("diagnostics", {}).get("unconverged", []))
        _warn_nan(experiment, previous.get("diagnostics", {}).get("nan", []))
        return RunSummary(out, 0, 0, 0.0, 0.0)
    if (
        settings.part is None
    ):  # parts of one split write this folder at once: their temporaries stay
        store.remove_temporary(out)
    reps = work.reps
    request = {
        "reps": reps,
        **({} if settings.reps_at is None else {"points": len(settings.reps_at)}),
        "overrides": {k: list(v) for k, v in (overrides or {}).items()},
        "chunk": chunk,
        "workers": workers,
        "in_flight": executor.in_flight(work.in_flight),
        "devices": work.policy.devices,
        "executor": executor.describe(),
        "grid": grid.axes,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
        **({} if settings.part is None else {"part": "{}/{}".format(*settings.part)}),
        **({"accept_code_change": True} if settings.code_changed else {}),
        **environment(),
    }
    segments = (
        store.accepted_segments(previous, settings.code, out, request["started"])
        if settings.code_changed
        else previous.get("segments")
    )
    owner = previous.get("owner") if previous else settings.owner
    manifest = {
        "experiment": experiment.name,
        "source": source or experiment.name,
        "code": settings.code,
        "title": experiment.title,
        "seed": seed,
        "shape_axes": list(experiment.shape_axes),
        "data_axes": list(experiment.data_axes),
        "analysis_axes": list(experiment.analysis_axes),
        "derived": list(experiment.derived_names()),
        "methods": list(experiment.methods),
        "history": [*previous.get("history", []), request],
        "study": previous.get("study", {}),
        "diagnostics": previous.get("diagnostics", {}),
        "complete": False,
        **({"owner": owner} if owner else {}),
        **({"segments": segments} if segments else {}),
    }
    if segments:
        note(
            f"{out}: its rows were made by {len(segments)} versions of the code, accepted with "
            f"--accept-code-change (the manifest's segments say which parts each made)"
        )
    if settings.part is None:
        store.write_manifest(out, manifest)
    else:
        parts.start(out, manifest, request)

    for line in _data_notes(experiment, grid):
        note(line)
    total_chunks = sum(len(step.chunks) for step in plan)
    started, first_chunks, rows_written, lanes_run = time.time(), 0.0, 0, 0
    writing, chunks_written = 0.0, 0  # the driver's own share: seconds in store.write_part
    written: dict | None = {}  # the parts this run wrote, name → table, for folder_summaries
    bar = tqdm(
        total=total_chunks,
        desc=experiment.name,
        unit="chunk",
        disable=not progress or total_chunks == 0,
    )
    job = Job(
        experiment,
        grid,
        plan,
        done,
        seed,
        work.in_flight,
        patience,
        source or experiment.name,
        overrides,
    )
    provenance = store.part_metadata(
        manifest, request
    )  # in every part: the manifest can be rebuilt
    try:
        executor.start(job)
        for index, step in enumerate(plan):
            t0 = time.time()
            for number, (table, lanes) in enumerate(executor.chunks(index, step)):
                if number == 0:
                    first_chunks += time.time() - t0
                t_write = time.perf_counter()
                part = store.write_part(out, store.with_provenance(table, provenance))
                writing += time.perf_counter() - t_write
                if written is not None and rows_written + table.num_rows <= SUMMARY_ROWS_HELD:
                    written[part.name] = table
                else:
                    written = None  # too many rows to hold: the summary reads the parts back
                chunks_written += 1
                rows_written += table.num_rows
                lanes_run += lanes
                bar.update(1)
    except BaseException:
        if not previous and rows_written == 0 and settings.part is None:
            # a run that failed before its first chunk leaves nothing behind (the lock's
            # holder then removes the folder it created)
            (out / store.MANIFEST).unlink(missing_ok=True)
        raise
    finally:
        executor.finish()
        bar.close()
    seconds = time.time() - started
    request["batching"] = _record_batching(
        grid, plan, executor.calibrations, work.policy.backend, executor.micros
    )
    request.update(
        {
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "seconds": round(seconds, 3),
            "lanes_run": lanes_run,
            "rows_written": rows_written,
            "first_chunks_seconds_incl_compile": round(first_chunks, 3),
            "chunks_written": chunks_written,
            "write_seconds": round(writing, 3),
        }
    )
    if settings.part is None:
        manifest.update(folder_summaries(out, experiment, written), complete=True)
        store.write_manifest(out, manifest)
    else:
        parts.finish(
            out,
            manifest,
            request,
            lambda: folder_summaries(out, experiment),
            lambda stored: not plan_steps(grid, reps, stored),
        )
    _warn_unconverged(experiment, manifest["diagnostics"]["unconverged"])
    _warn_nan(experiment, manifest["diagnostics"].get("nan", []))
    return RunSummary(out, rows_written, lanes_run, seconds, first_chunks)


def _record_batching(
    grid: Grid, plan: list, calibrations: Mapping, backend: str, micros: Mapping
) -> list[dict]:
    """Each step's batching as the manifest's history records it ({step, chunk, micro, from}),
    and, for steps with a calibration cache key, the cache updated (the layout compiled, and
    the calibration a step made: ``calibrations``, step index → {micro-batch: seconds per
    lane}, :class:`~dpsim.engine.execution.executors.LocalExecutor`). ``micros``: step
    index → the micro-batch its program was compiled at, where the executor says (it may be
    fewer lanes than planned, to fit the device's memory; a calibrated step's is the one
    chosen)."""
    updates, record = {}, []
    for index, step in enumerate(plan):
        micro, timings = micros.get(index, step.micro), calibrations.get(index)
        if step.key is not None:
            updates[step.key] = functools.partial(
                calibration.updated_entry,
                micro=micro,
                size=step.size,
                source="calibrated",
                what=f"{grid.experiment.name} at {step_label(grid, step)}",
                timings=timings,
            )
        shrunk = not timings and micro != step.micro
        record.append(
            {
                "step": step_label(grid, step),
                "chunk": step.size,
                "micro": micro,
                "from": f"{step.micro_from}; {step.micro} planned, fewer to fit the device's memory"
                if shrunk
                else step.micro_from,
            }
        )
    entries = calibration.save(calibration.cache_path(), updates)  # merged under the cache's lock
    for index, step in enumerate(plan):
        if calibrations.get(index) and step.key in entries:
            record[index]["from"] = calibration.describe(entries[step.key], backend)
    return record


def _warn_unconverged(experiment: Experiment, items: list[dict]) -> None:
    """One warning per method whose fits did not all converge (the manifest's diagnostics)."""
    for item in items:
        why = f": {item['reasons']}" if item.get("reasons") else ""
        warn(
            f"{experiment.name}: {item['failed']} of {item['fits']} {item['method']} fits did not converge{why} "
            f"({item['where']})"
        )


def _warn_nan(experiment: Experiment, items: list[dict]) -> None:
    """One warning per (method, metric) with NaN values (the manifest's diagnostics, :func:`nan_metrics`)."""
    for item in items:
        warn(
            f"{experiment.name}: {item['metric']} of {item['method']} is NaN in {item['nan']} of {item['rows']} rows "
            f"(stored as NaN; summaries and figures leave those rows out, the figure's panel says how many)"
        )


def _data_notes(experiment: Experiment, grid: Grid) -> list[str]:
    """One line per shape point with string values derived on the host (e.g. which data file,
    or which synthetic stand-in, a dataset axis resolved to)."""
    names = [n for n in experiment.derived_names("shape")]
    lines = []
    for shape in grid.shapes:
        strings = {n: shape[n] for n in names if isinstance(shape.get(n), str)}
        if strings:
            where = ", ".join(f"{a}={shape[a]}" for a in experiment.shape_axes)
            lines.append(
                f"{experiment.name} at {where}: "
                + "; ".join(f"{k}: {v}" for k, v in strings.items())
            )
    return list(dict.fromkeys(lines))


def folder_summaries(out: Path, experiment: Experiment, written: Mapping | None = None) -> dict:
    """The manifest's ``study`` (:func:`study_summary`) and ``diagnostics`` (:func:`unconverged`)
    of the study folder ``out``, from one read of the columns they use, in Arrow (through
    pandas it would be a large share of a short run).

    Args:
        written: the parts this run wrote (file name → table): when they are all the folder
            holds, the columns are taken from them rather than read back
            (:func:`dpsim.engine.storage.store.read_arrow_columns`).
    """
    metrics = [m for method in experiment.methods.values() for m in method.metrics]
    columns = [
        *experiment.axes,
        *experiment.derived_names("shape"),
        "point",
        "rep",
        "method",
        "converged",
        "result",
        *metrics,
    ]
    table = store.read_arrow_columns(out, list(dict.fromkeys(columns)), written=written)
    return {
        "study": study_summary(table, experiment),
        "diagnostics": {
            "unconverged": unconverged(table, experiment),
            "nan": nan_metrics(table, experiment),
        },
    }


def nan_metrics(table: pa.Table | None, experiment: Experiment) -> list[dict]:
    """Per method and each metric it declares, how many of its rows hold NaN there
    (``{"method", "metric", "nan", "rows"}``, only those with some NaN): a method's metric is
    stored as it returned it, and a NaN is said at run time (:func:`_warn_nan`), not found
    later by a figure or a check."""
    if table is None or table.num_rows == 0:
        return []
    found = []
    for name, method in experiment.methods.items():
        rows = table.filter(pc.equal(table["method"], name))
        for metric in method.metrics:
            if metric not in table.column_names or rows.num_rows == 0:
                continue
            values = rows[metric]
            nan = int(pc.sum(pc.is_nan(values.fill_null(float("nan")))).as_py() or 0)
            if nan:
                found.append(
                    {"method": name, "metric": metric, "nan": nan, "rows": int(rows.num_rows)}
                )
    return found


def study_summary(table: pa.Table | None, experiment: Experiment) -> dict:
    """What a folder's table (its rows, at least the axis, ``point`` and ``rep`` columns; None:
    no rows) holds: every axis's values, and the replicates of every grid point (``points``:
    [{axis values…, "reps": R}], by point id), so the manifest describes the data that
    figures, summaries and checks will use, whatever the requests were."""
    if table is None or table.num_rows == 0:
        return {"axes": {}, "points": [], "rows": 0}
    axes = [
        a for a in [*experiment.axes, *experiment.derived_names("shape")] if a in table.column_names
    ]
    per_point = (
        table.group_by("point", use_threads=False)
        .aggregate([(a, "first") for a in axes] + [("rep", "count_distinct")])
        .sort_by("point")
    )
    values = {a: per_point[f"{a}_first"].to_pylist() for a in axes}
    reps = per_point["rep_count_distinct"].to_pylist()
    points = [{**{a: values[a][i] for a in axes}, "reps": int(r)} for i, r in enumerate(reps)]
    return {
        "axes": {
            a: sorted(set(pc.unique(table[a]).to_pylist()), key=lambda v: (isinstance(v, str), v))
            for a in axes
        },
        "grid_points": len(points),
        "reps": {"min": int(min(reps)), "max": int(max(reps))},
        "rows": int(table.num_rows),
        "points": points,
    }


def unconverged(table: pa.Table | None, experiment: Experiment, limit: int = 3) -> list[dict]:
    """Per method with a solver: how many fits of a folder's table (None: no rows) did not
    converge, why (``reasons``, from the ``result`` codes: "10 max steps, 2 non-finite"; ""
    for rows without codes), and where in the grid (up to ``limit`` grid points with the most
    failures; equal counts in grid order)."""
    if table is None or "converged" not in table.column_names:
        return []
    varying = [a for a in experiment.axes if a in table.column_names and _distinct(table[a]) > 1]
    found = []
    for method in sorted(set(pc.unique(table["method"]).to_pylist())):
        rows = table.filter(pc.equal(table["method"], method))
        known = rows.filter(pc.is_valid(rows["converged"]))
        failed = known.filter(pc.invert(known["converged"]))
        if failed.num_rows == 0:
            continue
        if varying:
            counts = (
                failed.group_by(varying, use_threads=False)
                .aggregate([([], "count_all")])
                .sort_by([("count_all", "descending"), *((a, "ascending") for a in varying)])
            )
            keys = [counts[a].to_pylist() for a in varying]
            spots = [
                ", ".join(f"{a}={key[i]}" for a, key in zip(varying, keys)) + f" ({n})"
                for i, n in enumerate(counts["count_all"].to_pylist()[:limit])
            ]
            where = "; ".join(spots) + (
                f"; and {counts.num_rows - limit} more grid points"
                if counts.num_rows > limit
                else ""
            )
        else:
            where = "at the only grid point"
        why = reasons(failed["result"].to_pylist()) if "result" in failed.column_names else ""
        found.append(
            {
                "method": method,
                "failed": int(failed.num_rows),
                "fits": int(known.num_rows),
                "reasons": why,
                "where": where,
            }
        )
    return found


def _distinct(column: pa.ChunkedArray) -> int:
    """Distinct values of ``column`` other than null and NaN, as pandas' ``nunique``."""
    values = column.drop_null()
    if pa.types.is_floating(values.type):
        values = values.filter(pc.invert(pc.is_nan(values)))
    return len(pc.unique(values))
