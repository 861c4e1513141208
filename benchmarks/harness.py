"""The shared benchmark harness: timing, engine workloads, side-by-side baselines, results
files and the command line of every paper's benchmark module. Nothing here knows a paper.

A paper's module (``benchmarks/<paper>.py``) declares its sections and two configurations
and hands them to :func:`main`::

    from benchmarks import harness

    def section_a(bench: harness.Bench) -> dict:
        engine = harness.measure_engine(FIG, bench.cfg.reps, fits_method="mle")
        scipy, _ = harness.time_baseline(harness.Baseline("SciPy", scipy_lane, fits_per_item=10), lanes)
        rows = harness.compare({"cold": engine["fits_per_s"]}, {"SciPy": scipy["fits_per_s"]},
                               targets={"SciPy": 3.0})
        harness.print_table(harness.comparison_table("A. engine ÷ baselines", rows))
        return {"engine": engine, "scipy": scipy, "comparison": rows}

    SECTIONS = (harness.Section("A", "Fig. 3, n = 300", section_a), ...)
    if __name__ == "__main__":
        harness.main("cai", SECTIONS, full=FULL, quick=QUICK, targets=TARGETS)

``python -m benchmarks.<paper>`` then runs every section and writes
``benchmarks/results/<paper>.json``; ``--quick`` a smoke run into ``<paper>_quick.json``;
``--sections A,B`` a subset into ``<paper>_partial.json`` (both git-ignored).

Fresh processes (cold timings, compilation included) run ``python -m benchmarks.harness``
(see :func:`cold_call` and :func:`time_cli`): it records JAX's compile time in that process
and prints one JSON line, which the parent reads back.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import importlib.metadata
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import dpsim  # noqa: F401  (enables float64 in JAX before anything is traced)
import jax

from dpsim.engine.execution import executors, planning, program, runner
from dpsim.engine.storage import provenance
from dpsim.engine.storage.store import load_results, read_manifest

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "benchmarks" / "results"
SCHEMA_VERSION = 1
MARKER = "BENCH-RESULT "  # prefix of the one JSON line a fresh process prints
WARM_RUNS = 3  # warm re-runs of an engine workload (the best is kept)
DEFAULT_PACKAGES = ("dpsim", "jax", "jaxlib", "numpy", "scipy", "choix", "pyarrow", "pandas")

# ----------------------------------------------------------------------------- timing

_COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)
_compile = {"seconds": 0.0, "count": 0}
_compile_lock = threading.Lock()


def _on_duration(event: str, duration: float, **_) -> None:
    """JAX monitoring listener: sums tracing, lowering and XLA compile seconds (the runner
    compiles in a background thread, hence the lock); counts XLA compiles."""
    if event in _COMPILE_EVENTS:
        with _compile_lock:
            _compile["seconds"] += duration
            _compile["count"] += event == _COMPILE_EVENTS[-1]


jax.monitoring.register_event_duration_secs_listener(_on_duration)


@contextmanager
def measured():
    """Yield a dict filled on exit with ``wall_s``, ``cpu_s`` (all threads of this process),
    ``compile_s`` (JAX tracing + lowering + XLA compile, summed over threads, so it may
    overlap compute) and ``compiles`` (XLA compiles)."""
    out: dict = {}
    c0, n0 = _compile["seconds"], _compile["count"]
    w0, p0 = time.perf_counter(), time.process_time()
    try:
        yield out
    finally:
        out["wall_s"] = time.perf_counter() - w0
        out["cpu_s"] = time.process_time() - p0
        out["compile_s"] = _compile["seconds"] - c0
        out["compiles"] = _compile["count"] - n0


def best_of(fn: Callable[[], Any], repeats: int = 7, number: int = 1) -> float:
    """Best wall seconds per call of ``fn`` over ``repeats`` rounds of ``number`` calls each
    (warm timing: compile ``fn`` before; JAX results are waited for)."""
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            jax.block_until_ready(fn())
        best = min(best, (time.perf_counter() - t0) / number)
    return best


# ----------------------------------------------------------------------------- engine


@contextmanager
def instrumented_runner():
    """Time the runner's chunk calls: wraps the compiled programs that
    the local executor's ``compiled_chunk_fn`` returns, so the timed calls are pure compute
    (compilation happens before, in the executor's background thread). Yields a dict that
    holds, once the block ends, ``compute_s`` (the calls' seconds summed over chunks
    computed, or queued on an accelerator, at the same time), ``busy_s`` (the seconds in
    which at least one chunk call was under way: :func:`covered_seconds` of the calls),
    ``lead_s`` (from entering the block to the first call: planning, the first chunk's
    arguments) and ``tail_s`` (from the end of the last call to leaving the block: the last
    chunk's rows and Parquet part, the folder's summaries, the manifest)."""
    stats, calls, lock = (
        {"compute_s": 0.0, "busy_s": 0.0, "lead_s": 0.0, "tail_s": 0.0},
        [],
        threading.Lock(),
    )
    entered = time.perf_counter()
    original_compiled = executors.compiled_chunk_fn

    def timed_compiled(*args, **kwargs):
        program = original_compiled(*args, **kwargs)

        def call(*call_args):
            t0 = time.perf_counter()
            out = jax.block_until_ready(program.fn(*call_args))
            with lock:
                calls.append((t0, time.perf_counter()))
            return out

        return program._replace(fn=call)

    executors.compiled_chunk_fn = timed_compiled
    try:
        yield stats
    finally:
        executors.compiled_chunk_fn = original_compiled
        left = time.perf_counter()
        stats.update(
            compute_s=sum(end - start for start, end in calls),
            busy_s=covered_seconds(calls),
            lead_s=min((start for start, _ in calls), default=left) - entered,
            tail_s=left - max((end for _, end in calls), default=left),
        )


def covered_seconds(intervals: Sequence[tuple[float, float]]) -> float:
    """The length of the union of ``intervals`` ((start, end) seconds): the time in which at
    least one of them was under way."""
    covered, reach = 0.0, -math.inf
    for start, end in sorted(intervals):
        if end > reach:
            covered += end - max(start, reach)
            reach = end
    return covered


def run_engine(
    experiment,
    reps: int,
    *,
    overrides: Mapping | None = None,
    workers: int | None = None,
    chunk: int | None = None,
    micro_batch: int | None = None,
    fits_method: str | None = None,
    describe: Callable[[Any], Mapping] | None = None,
) -> dict:
    """One ``run_experiment`` into a fresh temporary directory, end to end.

    Returns wall/cpu/compile seconds (:func:`measured`), ``compute_s`` (chunk calls, summed),
    ``busy_s`` (time with a chunk call under way), ``host_s`` = wall − busy (no chunk
    computing: unhidden compile, keys, rows, Parquet), of which ``lead_s`` before the first
    chunk call and ``tail_s`` after the last (:func:`instrumented_runner`), ``lanes``, ``rows``
    and ``fits`` (result rows of ``fits_method``, or all rows), ``batching`` (each step's chunk
    size and micro-batch, and where it came from) and ``in_flight`` (chunks in flight), as the
    manifest records them, plus ``describe(table)``
    of the results table (e.g. solver iterations). ``micro_batch``: lanes vmapped together
    (default: the device's choice, :func:`dpsim.engine.execution.batching.batching`). Compiled
    programs cached in this process are reused: see :func:`measure_engine` for a cold run."""
    with tempfile.TemporaryDirectory(prefix="dpsim-bench-") as tmp:
        with instrumented_runner() as chunks, measured() as m:
            summary = runner.run_experiment(
                experiment,
                out=Path(tmp) / "run",
                reps=reps,
                overrides=overrides,
                chunk=chunk,
                workers=workers,
                progress=False,
                micro_batch=micro_batch,
            )
        table = load_results(summary.out)
        request = (read_manifest(summary.out) or {}).get("history", [{}])[-1]
    fitted = table if fits_method is None else table[table["method"] == fits_method]
    return {
        **m,
        "compute_s": chunks["compute_s"],
        "busy_s": chunks["busy_s"],
        "lead_s": chunks["lead_s"],
        "tail_s": chunks["tail_s"],
        "batching": request.get("batching", []),
        "in_flight": request.get("in_flight"),
        "host_s": max(0.0, m["wall_s"] - chunks["busy_s"]),
        "lanes": summary.lanes_run,
        "rows": summary.rows_written,
        "fits": int(len(fitted)),
        **(dict(describe(fitted)) if describe else {}),
    }


def engine_rates(cold: dict, warm: dict | None = None) -> dict:
    """Fits per second of a cold run (compile included) and without compile: the warm
    re-run's (it compiles nothing) when there is one, else the cold run's wall − compile."""
    steady = (
        warm["fits"] / warm["wall_s"]
        if warm is not None
        else cold["fits"] / max(cold["wall_s"] - cold["compile_s"], 1e-9)
    )
    return {"fits_per_s": cold["fits"] / cold["wall_s"], "fits_per_s_excl_compile": steady}


def measure_engine(experiment, reps: int, *, warm_runs: int = WARM_RUNS, **kwargs) -> dict:
    """An engine workload: a cold run (the process's compiled programs, cell arrays and code
    fingerprints forgotten first, so compilation, the cells' tables and the fingerprint's
    parsing are included), then the best (least wall time) of ``warm_runs`` re-runs, which
    compile nothing and reuse the cells and fingerprint the cold run made
    (:func:`dpsim.engine.execution.planning.step_cells`, :func:`dpsim.engine.storage.provenance.fingerprint`). ``kwargs`` go to
    :func:`run_engine`. Returns ``cold``, ``warm`` (None when ``warm_runs`` is 0) and
    :func:`engine_rates`."""
    program.clear_cache()
    planning.clear_cell_cache()
    provenance.clear_fingerprints()
    cold = run_engine(experiment, reps, **kwargs)
    warm = min(
        (run_engine(experiment, reps, **kwargs) for _ in range(warm_runs)),
        key=lambda r: r["wall_s"],
        default=None,
    )
    return {"cold": cold, "warm": warm, "warm_runs": warm_runs, **engine_rates(cold, warm)}


# ----------------------------------------------------------------------------- fresh processes


def _fresh_env(env: Mapping[str, str] | None) -> dict:
    """The environment of a fresh process: this one's, without an inherited JAX persistent
    cache (a cold timing must compile), the repository on PYTHONPATH, then ``env``."""
    out = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), out.get("PYTHONPATH")) if p)
    out.update(env or {})
    return out


def _run_marked(args: Sequence[str], env: Mapping[str, str] | None, timeout: float | None) -> dict:
    """Run ``python -m benchmarks.harness ARGS`` in a fresh process; its wall time as
    ``process_wall_s`` and the JSON line it printed after :data:`MARKER`."""
    cmd = [sys.executable, "-m", "benchmarks.harness", *args]
    t0 = time.perf_counter()
    done = subprocess.run(
        cmd, capture_output=True, text=True, cwd=ROOT, env=_fresh_env(env), timeout=timeout
    )
    wall = time.perf_counter() - t0
    lines = [line[len(MARKER) :] for line in done.stdout.splitlines() if line.startswith(MARKER)]
    if done.returncode != 0 or not lines:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise RuntimeError(
            f"fresh process {shlex.join(cmd)} failed (exit {done.returncode}):\n{tail}"
        )
    return {"process_wall_s": wall, **json.loads(lines[-1])}


def cold_call(
    target: str,
    kwargs: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> dict:
    """Call ``target`` ("package.module:function", JSON-able ``kwargs``) once in a fresh
    Python process: imports and compilation included, no persistent compilation cache
    unless ``env`` sets one. Returns ``process_wall_s`` (the whole process), ``call``
    (:func:`measured` of the call alone) and ``result`` (what the function returned, a
    JSON-able dict)."""
    return _run_marked(["call", target, json.dumps(dict(kwargs or {}))], env, timeout)


def time_cli(
    args: Sequence[str],
    *,
    cache: str | os.PathLike = "off",
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> dict:
    """Time one ``dpsim ARGS`` command (e.g. ``["run", "cai-fig3", "--reps", "120", "--out",
    DIR]``) in a fresh process, as ``dpsim.cli.main`` runs it. ``cache``: "off" (the
    persistent compilation cache disabled, DPSIM_JAX_CACHE=off), "empty" (a new empty cache
    directory, removed afterwards), or a directory (e.g. one shared by two calls, to time a
    warm cache). Returns ``process_wall_s``, ``call`` (:func:`measured` inside the process:
    its compile time) and ``returncode``."""
    with tempfile.TemporaryDirectory(prefix="dpsim-bench-cache-") as empty:
        where = {"off": "off", "empty": empty}.get(str(cache), str(cache))
        out = _run_marked(
            ["dpsim", *map(str, args)], {"DPSIM_JAX_CACHE": where, **(env or {})}, timeout
        )
    return {**out, "cache": str(cache)}


def _worker(argv: Sequence[str]) -> int:
    """Entry point of a fresh process (``python -m benchmarks.harness call|dpsim ...``)."""
    if len(argv) == 3 and argv[0] == "call":
        module, _, name = argv[1].partition(":")
        fn = getattr(importlib.import_module(module), name)
        with measured() as m:
            result = fn(**json.loads(argv[2]))
        print(
            MARKER + json.dumps(jsonable({"call": m, "result": result}), allow_nan=False),
            flush=True,
        )
        return 0
    if argv and argv[0] == "dpsim":
        from dpsim.cli import main as dpsim_main

        with measured() as m:
            code = dpsim_main(list(argv[1:]))
        print(
            MARKER + json.dumps(jsonable({"call": m, "returncode": code}), allow_nan=False),
            flush=True,
        )
        return code
    print(
        "usage: python -m benchmarks.harness call MODULE:FUNCTION JSON | dpsim ARGS...",
        file=sys.stderr,
    )
    return 2


# ----------------------------------------------------------------------------- baselines


@dataclass(frozen=True)
class Baseline:
    """A named baseline: ``fn(item)`` does ``fits_per_item`` fits of one item (e.g. one
    replicate's data at every ε); every baseline of a comparison is timed on the same items."""

    name: str
    fn: Callable[[Any], Any]
    fits_per_item: int = 1
    note: str = ""


def time_baseline(baseline: Baseline, items: Iterable[Any]) -> tuple[dict, list]:
    """Time ``baseline.fn`` over ``items`` in order (one pass, prepared data outside the
    timing). Returns (stats, outputs): stats ``name``, ``fits_timed``, ``wall_s``,
    ``fits_per_s``, ``ms_per_fit``; outputs the values ``fn`` returned (diagnostics)."""
    items, outputs = list(items), []
    t0 = time.perf_counter()
    for item in items:
        outputs.append(baseline.fn(item))
    wall = time.perf_counter() - t0
    fits = len(items) * baseline.fits_per_item
    return (
        {
            "name": baseline.name,
            "fits_timed": fits,
            "wall_s": wall,
            "fits_per_s": ratio(fits, wall),
            "ms_per_fit": 1e3 * ratio(wall, fits),
            "note": baseline.note,
        },
        outputs,
    )


def ratio(a: float, b: float) -> float:
    """a / b, NaN when b is 0 or either is not finite (a ratio that cannot be measured)."""
    if not (math.isfinite(a) and math.isfinite(b)) or b == 0:
        return math.nan
    return a / b


def verdict(value: float, target: float | None, *, lower_is_better: bool = False) -> str:
    """ "MET" / "NOT MET" for ``value`` against ``target`` (value ≥ target, or ≤ with
    ``lower_is_better``); "" without a target. A NaN value never meets a target."""
    if target is None:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return "NOT MET"
    met = value <= target if lower_is_better else value >= target
    return "MET" if met else "NOT MET"


def compare(
    engine: Mapping[str, float],
    baselines: Mapping[str, float],
    targets: Mapping[str, float] | None = None,
) -> list[dict]:
    """Side-by-side ratios: one row per (engine rate, baseline rate), ``ratio`` = engine ÷
    baseline (rates in fits per second, so > 1 means the engine is faster) and, where
    ``targets`` names the pair (engine label, baseline label) or else the baseline, the
    target ratio and its verdict."""
    targets = targets or {}
    rows = []
    for e_label, e_rate in engine.items():
        for b_label, b_rate in baselines.items():
            r, target = ratio(e_rate, b_rate), targets.get((e_label, b_label), targets.get(b_label))
            rows.append(
                {
                    "engine": e_label,
                    "baseline": b_label,
                    "engine_fits_per_s": e_rate,
                    "baseline_fits_per_s": b_rate,
                    "ratio": r,
                    "target": target,
                    "verdict": verdict(r, target),
                }
            )
    return rows


# ----------------------------------------------------------------------------- tables


def _cell(value, fmt: str | None) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return fmt.format(value) if fmt else str(value)


def format_table(
    title: str,
    header: Sequence[str],
    rows: Sequence[Sequence],
    formats: Sequence[str | None] = (),
    align: str = "",
) -> str:
    """A titled text table. Cells are formatted with ``formats`` (``str.format`` patterns,
    None for ``str``; a None cell prints blank); ``align`` gives one letter per column, "l"
    or "r" (default: the first column left, the others right)."""
    formats = list(formats) + [None] * (len(header) - len(formats))
    align = (align or "l" + "r" * (len(header) - 1)).ljust(len(header), "r")
    cells = [[_cell(v, f) for v, f in zip(row, formats)] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]

    def line(values):
        return "  ".join(
            v.ljust(w) if a == "l" else v.rjust(w) for v, w, a in zip(values, widths, align)
        ).rstrip()

    return "\n".join([f"\n-- {title} --", line(header), *(line(r) for r in cells)])


def print_table(text: str) -> None:
    print(text, flush=True)


CONTENDER_HEADER = ("contender", "wall s", "compile s", "compute s", "other s", "fits/s", "ms/fit")
CONTENDER_FORMATS = (None, "{:.2f}", "{:.2f}", "{:.2f}", "{:.2f}", "{:.1f}", "{:.3f}")


def contender_table(
    title: str, engine_runs: Mapping[str, dict], baselines: Mapping[str, dict], total_fits: int
) -> str:
    """The workload table: engine runs (:func:`run_engine` dicts: wall, compile, compute,
    other) and baselines (:func:`time_baseline` stats, their time extrapolated from their
    rate to ``total_fits``), each with fits/s and ms per fit."""
    rows = []
    for label, run in engine_runs.items():
        fps = ratio(run["fits"], run["wall_s"])
        rows.append(
            [
                label,
                run["wall_s"],
                run["compile_s"],
                run["compute_s"],
                run["host_s"],
                fps,
                1e3 / fps,
            ]
        )
    for label, stats in baselines.items():
        fps = stats["fits_per_s"]
        rows.append(
            [
                f"{label} ({stats['fits_timed']} fits timed, extrap.)",
                total_fits / fps,
                None,
                None,
                None,
                fps,
                1e3 / fps,
            ]
        )
    return format_table(title, CONTENDER_HEADER, rows, CONTENDER_FORMATS)


def comparison_table(title: str, rows: Sequence[dict]) -> str:
    """The rows of :func:`compare`: engine ÷ baseline, target, verdict."""
    return format_table(
        title,
        ("engine ÷ baseline", "ratio", "target", "verdict"),
        [
            [
                f"{r['engine']} ÷ {r['baseline']}",
                f"{r['ratio']:.2f}×",
                f"≥ {r['target']:g}×" if r["target"] is not None else None,
                r["verdict"],
            ]
            for r in rows
        ],
    )


# ----------------------------------------------------------------------------- results file


def jsonable(value):
    """A strict-JSON copy: dataclasses and mappings → dicts, tuples → lists, NumPy scalars
    → Python numbers, non-finite floats → strings ("inf", "-inf", "nan")."""
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and getattr(value, "shape", None) == ():  # NumPy / JAX scalar
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return value


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_info(packages: Sequence[str] = DEFAULT_PACKAGES) -> dict:
    """The machine a run measured: CPU model (/proc/cpuinfo), cores (all, and usable by
    this process), platform, JAX backend and device kind, Python and package versions, and
    the load average now (the machine may be shared)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    device = jax.devices()[0]
    return {
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_usable": usable,
        "platform": platform.platform(),
        "jax_backend": jax.default_backend(),
        "device_kind": device.device_kind,
        "device_count": jax.device_count(),
        "python": platform.python_version(),
        "versions": {p: _version(p) for p in packages},
        "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def git_info() -> dict:
    """Commit of the checkout and whether it has changes, untracked files included (None
    outside git); results files (``benchmarks/results/``) are not changes to the code, so that
    benchmarks run one after another on one commit record it clean."""

    def git(*args):
        try:
            return subprocess.run(
                ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    commit = git("rev-parse", "HEAD")
    return {
        "commit": commit or None,
        "dirty": bool(git("status", "--porcelain", "--", ".", ":(exclude)benchmarks/results"))
        if commit
        else None,
    }


def run_mode(quick: bool, selected: Sequence[str], available: Sequence[str]) -> str:
    """ "partial" when only some sections run (with or without --quick), else "quick" or
    "full": a quick or full results file always holds every section."""
    if set(selected) != set(available):
        return "partial"
    return "quick" if quick else "full"


def results_path(paper: str, mode: str, directory: Path | None = None) -> Path:
    """``<paper>.json`` for a full run (kept in git), ``<paper>_quick.json`` /
    ``<paper>_partial.json`` otherwise (git-ignored); in :data:`RESULTS_DIR` by default."""
    if mode not in ("full", "quick", "partial"):
        raise ValueError(f"mode {mode!r}: choose full, quick or partial")
    return (directory or RESULTS_DIR) / (
        f"{paper}.json" if mode == "full" else f"{paper}_{mode}.json"
    )


# key → type of every top-level field of a results file (schema 1)
SCHEMA = {
    "schema": int,
    "paper": str,
    "mode": str,
    "quick": bool,
    "sections": list,
    "command": str,
    "date": str,
    "git": dict,
    "machine": dict,
    "config": dict,
    "targets": dict,
    "results": dict,
    "section_seconds": dict,
    "seconds": float,
    "loadavg_end": (list, type(None)),
}
MACHINE_KEYS = (
    "cpu_model",
    "cpu_count",
    "platform",
    "jax_backend",
    "device_kind",
    "python",
    "versions",
)


def results_document(
    paper: str,
    *,
    mode: str,
    quick: bool,
    sections: Sequence[str],
    command: str,
    config: Any,
    targets: Mapping[str, float],
    results: Mapping[str, Any],
    section_seconds: Mapping[str, float],
    seconds: float,
    machine: Mapping | None = None,
    git: Mapping | None = None,
    date: str | None = None,
) -> dict:
    """The results file's content (:data:`SCHEMA`), strict JSON (:func:`jsonable`): what ran
    (paper, mode, sections, command, config, targets), where and when (machine, git, date)
    and every number (``results``: section key → what the section returned)."""
    doc = {
        "schema": SCHEMA_VERSION,
        "paper": paper,
        "mode": mode,
        "quick": quick,
        "sections": list(sections),
        "command": command,
        "date": date or datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "git": dict(git) if git is not None else git_info(),
        "machine": dict(machine) if machine is not None else machine_info(),
        "config": config,
        "targets": dict(targets),
        "results": dict(results),
        "section_seconds": dict(section_seconds),
        "seconds": float(seconds),
        "loadavg_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }
    doc = jsonable(doc)
    validate_document(doc)
    return doc


def validate_document(doc: Mapping) -> None:
    """Raise ValueError naming every way ``doc`` departs from the results-file schema."""
    problems = [f"missing {k!r}" for k in SCHEMA if k not in doc]
    problems += [
        f"{k!r} is {type(doc[k]).__name__}"
        for k, t in SCHEMA.items()
        if k in doc and not isinstance(doc[k], t)
    ]
    if not problems:
        if doc["schema"] != SCHEMA_VERSION:
            problems.append(f"schema {doc['schema']} (expected {SCHEMA_VERSION})")
        if doc["mode"] not in ("full", "quick", "partial"):
            problems.append(f"mode {doc['mode']!r}")
        problems += [f"machine lacks {k!r}" for k in MACHINE_KEYS if k not in doc["machine"]]
        if sorted(doc["results"]) != sorted(doc["sections"]):
            problems.append(
                f"results {sorted(doc['results'])} differ from sections {doc['sections']}"
            )
        try:
            json.dumps(doc, allow_nan=False)
        except (TypeError, ValueError) as exc:
            problems.append(f"not strict JSON: {exc}")
    if problems:
        raise ValueError("results file: " + "; ".join(problems))


def write_results(doc: Mapping, path: Path) -> Path:
    """Validate and write ``doc`` (indented JSON) to ``path``."""
    validate_document(doc)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n")
    return path


# ----------------------------------------------------------------------------- command line


@dataclass(frozen=True)
class Section:
    """One part of a paper's benchmark: ``key`` (one letter, used by --sections), a title,
    and ``run(bench) -> dict`` that prints its tables and returns its numbers."""

    key: str
    title: str
    run: Callable[["Bench"], Mapping[str, Any]]


@dataclass
class Bench:
    """What a section sees: the paper, the configuration (``full`` or ``quick``), whether
    it is a smoke run, and the results of the sections already run (e.g. a profile section
    reading the workload section's cold run)."""

    paper: str
    cfg: Any
    quick: bool
    results: dict


def select_sections(spec: str | None, available: Sequence[str]) -> list[str]:
    """The sections a ``--sections`` value names ("A,b, C"; None or "" = all), in the
    declared order, each once. Raises ValueError naming unknown sections."""
    if spec is None or not spec.strip():
        return list(available)
    asked = [part.strip().upper() for part in spec.split(",") if part.strip()]
    unknown = [part for part in asked if part not in available]
    if unknown:
        raise ValueError(
            f"unknown section(s) {', '.join(unknown)}; choose from {','.join(available)}"
        )
    return [key for key in available if key in asked]


def main(
    paper: str,
    sections: Sequence[Section],
    *,
    full: Any,
    quick: Any,
    targets: Mapping[str, float] | None = None,
    argv: Sequence[str] | None = None,
    description: str = "",
    module: str | None = None,
) -> dict:
    """The command line of ``python -m benchmarks.<paper> [--quick] [--sections A,B]``: runs
    the chosen sections in their declared order, prints a header, each section's tables and
    a footer, and writes the results file (:func:`results_path`). Returns the document.

    ``full`` and ``quick`` are the paper's two configurations (dataclasses or dicts; the
    sections read the chosen one as ``bench.cfg``, and it is stored in the results file);
    ``targets`` are the paper's target numbers, stored beside the results."""
    keys = [s.key for s in sections]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate section keys {keys}")
    parser = argparse.ArgumentParser(
        prog=f"python -m {module or 'benchmarks.' + paper}", description=description
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: small sizes, numbers not representative"
    )
    parser.add_argument(
        "--sections",
        default=None,
        help=f"comma-separated subset of {','.join(keys)} (default: all); "
        f"written to results/{paper}_partial.json",
    )
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    try:
        selected = select_sections(args.sections, keys)
    except ValueError as exc:
        parser.error(f"--sections: {exc}")
    mode = run_mode(args.quick, selected, keys)
    cfg = quick if args.quick else full
    command = shlex.join(["python", "-m", module or f"benchmarks.{paper}", *argv])
    machine = machine_info()
    print(
        f"dpsim {paper} benchmark ({mode}{', quick' if args.quick and mode == 'partial' else ''}: "
        f"{','.join(selected)}); {machine['cpu_model']}, {machine['cpu_usable']} usable cores, "
        f"jax {machine['versions']['jax']} (backend {machine['jax_backend']}, device {machine['device_kind']}); "
        f"load average at start {machine['loadavg'][0]:.2f}",
        flush=True,
    )
    if args.quick:
        print("smoke run: numbers are not representative (compile dominates)", flush=True)

    bench = Bench(paper, cfg, args.quick, {})
    started, section_seconds = time.perf_counter(), {}
    by_key = {s.key: s for s in sections}
    for key in selected:
        print(f"\n==== {key}. {by_key[key].title} ====", flush=True)
        t0 = time.perf_counter()
        bench.results[key] = dict(by_key[key].run(bench))
        section_seconds[key] = time.perf_counter() - t0

    doc = results_document(
        paper,
        mode=mode,
        quick=args.quick,
        sections=selected,
        command=command,
        config=cfg,
        targets=targets or {},
        results=bench.results,
        section_seconds=section_seconds,
        seconds=time.perf_counter() - started,
        machine=machine,
    )
    path = write_results(doc, results_path(paper, mode))
    print(
        f"\nload average at end {doc['loadavg_end'][0]:.2f}; benchmark took {doc['seconds']:.0f} s "
        f"({', '.join(f'{k} {v:.0f} s' for k, v in section_seconds.items())}); "
        f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}",
        flush=True,
    )
    return doc


if __name__ == "__main__":
    # Run the worker from the canonical module object (not this __main__ copy), so that the
    # code a call imports (which imports benchmarks.harness) shares its compile counters.
    from benchmarks import harness as _harness

    sys.exit(_harness._worker(sys.argv[1:]))
