"""Benchmark: one study scaled out — in one process, on 2 local Ray workers, as 2 concurrent
parts of one folder, and sharded over 2 forced host devices — with the same table each time.

Run ``python -m benchmarks.scale_out [--quick] [--sections L,R,P,S,E]`` from the repository
root. Tables are printed and ``benchmarks/results/scale_out.json`` is written
(``scale_out_quick.json`` with ``--quick``, ``scale_out_partial.json`` for a subset; both
git-ignored). Timing, the results file and the command line are :mod:`benchmarks.harness`.

Every run is ``dpsim run STUDY --reps R --seed 0`` in a FRESH process (imports, Ray start
and compilation included; the persistent compilation cache off), into a fresh folder. The
study: ``cai-fig3`` (the default grid: n = 300, p ∈ {0.25, 0.5, 0.75, 1}, seven ε per lane,
edge DP) at ``cfg.reps`` replicates per grid point.

Sections
--------
L. Local, one process: the baseline's process wall time, and the run's own seconds from the
   manifest's history (``seconds``, ``first_chunks_seconds_incl_compile``, the driver's
   ``write_seconds``, ``chunks_written``).
R. ``--executor ray --ray-workers 2`` (a local Ray instance started on demand): wall time;
   Ray's start-up and shut-down, estimated as this process's time outside its run minus L's;
   the overhead per task, (Ray run seconds − L's run seconds) / chunks (rough: it also holds
   any difference in compile time and machine load); the driver's share (``write_seconds``
   / run seconds).
P. Two parts at the same time (``--part 1/2`` and ``--part 2/2`` as two concurrent
   processes) into one shared folder: the pair's wall time.
S. Sharded over 2 forced host devices (``XLA_FLAGS=--xla_force_host_platform_device_count=2``)
   in one process.
E. Extrapolations for the README's "Scaling up" section, from L (and R): a Figure 3 study of
   10⁶ replicates per grid point on one machine like this one, and on a 64-core Ray cluster
   (:func:`extrapolate`; compute assumed to scale linearly with cores). Meaningful only when
   the study is ``cai-fig3``'s default grid (it is in both configurations).

Every table (R, P, S) is compared with L's, rows in the store's (point, rep, method) order:
"identical", or how it differs and the largest absolute difference in a float column
(:func:`table_difference`). Speed-ups are L's process wall time ÷ the section's.

On a 2-core machine the processes compete for the same 2 cores: R, P and S show the
overhead of each way of scaling out, not a gain; the gain comes with more cores or devices.
``--quick`` (a few replicates) is a smoke test: compile and start-up dominate, and its
numbers are not representative.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from benchmarks import harness  # first: sets the BLAS threads before NumPy loads

import numpy as np

from benchmarks.compare import frame_difference
from dpsim.engine.storage.store import load_results, read_manifest
from dpsim.engine.presentation.units import format_duration

PAPER = "scale_out"
TARGETS: dict = {}  # no target is set: speed-ups and overheads are reported
FIG3_REPLICATES = 10**6  # E: replicates per grid point of the extrapolated study
CLUSTER_CORES = 64  # E: the Ray cluster extrapolated to
TIMEOUT_S = 3600  # one process at most (a stalled run is stopped by dpsim's watchdog first)


@dataclass(frozen=True)
class Config:
    study: str  # an experiment name (`dpsim list`) or path/to/study.py[:NAME]
    reps: int  # replicates per grid point
    sets: tuple  # --set AXIS=V1,V2 overrides (none: the default grid)
    seed: int
    ray_workers: int  # R: actors
    devices: int  # S: forced host devices


# FULL: 4 × 13 000 lanes of cai-fig3, a few minutes in one process on a 2-core machine (its
# warm lanes per second: benchmarks/results/cai.json).
FULL = Config(study="cai-fig3", reps=13_000, sets=(), seed=0, ray_workers=2, devices=2)
QUICK = Config(study="cai-fig3", reps=12, sets=(), seed=0, ray_workers=2, devices=2)

_WORK: dict = {}  # "dir": the folder of this benchmark's runs (set by main)


# ----------------------------------------------------------------------------- runs


def run_args(cfg: Config, out: Path, *extra: str) -> list[str]:
    """The ``dpsim`` arguments of one run of the study into ``out``."""
    sets = [arg for spec in cfg.sets for arg in ("--set", spec)]
    return [
        "run",
        cfg.study,
        "--reps",
        str(cfg.reps),
        "--seed",
        str(cfg.seed),
        "--out",
        str(out),
        "--no-progress",
        *sets,
        *extra,
    ]


def run_records(out: Path) -> list[dict]:
    """The history entries of the runs that computed lanes into ``out`` (one, or one per part)."""
    manifest = read_manifest(out) or {}
    return [h for h in manifest.get("history", []) if "seconds" in h]


def record_numbers(record: dict) -> dict:
    """The numbers of one history entry: run seconds, time to the first chunk of each step
    (compile included), the driver's write seconds, chunks, lanes, devices."""
    keys = (
        "seconds",
        "first_chunks_seconds_incl_compile",
        "write_seconds",
        "chunks_written",
        "lanes_run",
        "rows_written",
        "devices",
        "workers",
    )
    return {k: record.get(k) for k in keys}


def timed_run(cfg: Config, out: Path, *extra: str, env: dict | None = None) -> dict:
    """One fresh ``dpsim run`` (:func:`benchmarks.harness.time_cli`, compilation cache off):
    its process wall time, JAX compile seconds in the driver, and its run's history numbers."""
    t = harness.time_cli(run_args(cfg, out, *extra), cache="off", env=env, timeout=TIMEOUT_S)
    records = run_records(out)
    return {
        "process_wall_s": t["process_wall_s"],
        "driver_compile_s": t["call"]["compile_s"],
        "run": record_numbers(records[-1]) if records else {},
    }


def table_difference(run: Path, baseline: Path) -> dict:
    """How ``run``'s table differs from ``baseline``'s (both in the store's row order):
    ``difference`` (:func:`benchmarks.compare.frame_difference`: "identical", float rounding,
    or what changed), ``identical`` and ``max_abs_diff`` over the float columns (0.0 when
    equal to the last bit; NaN when the layouts differ)."""
    a, b = load_results(baseline), load_results(run)
    text = frame_difference(a, b)
    worst = math.nan
    if list(a.columns) == list(b.columns) and len(a) == len(b):
        floats = [c for c in a.columns if a[c].dtype.kind == "f"]
        worst = float(
            max((float_difference(a[c].to_numpy(), b[c].to_numpy()) for c in floats), default=0.0)
        )
    return {
        "difference": text,
        "identical": text == "identical",
        "max_abs_diff": worst,
        "rows": int(len(b)),
    }


def float_difference(x: np.ndarray, y: np.ndarray) -> float:
    """max |x − y| over the entries where x and y differ (equal values, infinities and NaNs
    in the same places count 0; NaN against a number counts ∞)."""
    moved = ~((x == y) | (np.isnan(x) & np.isnan(y)))
    if not moved.any():
        return 0.0
    with np.errstate(invalid="ignore"):
        diff = np.abs(x[moved] - y[moved])
    return float(np.max(np.where(np.isnan(diff), np.inf, diff)))


def baseline_dir() -> Path | None:
    """L's run folder when section L ran in this benchmark (else None: nothing to compare)."""
    out = _WORK["dir"] / "L"
    return out if (read_manifest(out) or {}).get("complete") else None


def against_l(bench: harness.Bench, out: Path, process_wall_s: float) -> dict:
    """Speed-up over L (L's process wall ÷ this one's) and the table compared with L's."""
    local, where = bench.results.get("L"), baseline_dir()
    if local is None or where is None:
        return {
            "speedup_vs_L": math.nan,
            "table": {
                "difference": "L not run",
                "identical": False,
                "max_abs_diff": math.nan,
                "rows": 0,
            },
        }
    return {
        "speedup_vs_L": harness.ratio(local["process_wall_s"], process_wall_s),
        "table": table_difference(out, where),
    }


def print_runs(title: str, rows: list[list]) -> None:
    harness.print_table(
        harness.format_table(
            title,
            (
                "run",
                "process s",
                "run s",
                "to 1st chunks s",
                "writes s",
                "chunks",
                "lanes",
                "devices",
                "× L",
                "table vs L",
            ),
            rows,
            (None, "{:.1f}", "{:.1f}", "{:.1f}", "{:.2f}", "{}", "{}", "{}", "{:.2f}", None),
        )
    )


def table_cell(vs: dict) -> str:
    """The "table vs L" cell: "identical", or the difference and its largest absolute value."""
    table = vs["table"]
    return (
        table["difference"]
        if table["identical"]
        else f"{table['difference']} (max abs {table['max_abs_diff']:.1e})"
    )


def row(label: str, process_wall_s: float, run: dict, vs: dict | None) -> list:
    return [
        label,
        process_wall_s,
        run.get("seconds"),
        run.get("first_chunks_seconds_incl_compile"),
        run.get("write_seconds"),
        run.get("chunks_written"),
        run.get("lanes_run"),
        run.get("devices"),
        None if vs is None else vs["speedup_vs_L"],
        None if vs is None else table_cell(vs),
    ]


def steady_lanes_per_s(run: dict) -> float:
    """Lanes per second once each step's first chunks are done (compile excluded): the lanes
    after the first ``workers`` chunks over the time after them (NaN when no lane is left:
    a run too small to tell; with several steps this is approximate)."""
    per_chunk = harness.ratio(run["lanes_run"], run["chunks_written"])
    after = run["lanes_run"] - min(run["chunks_written"], run.get("workers") or 1) * per_chunk
    if not after > 0:
        return math.nan
    return harness.ratio(after, run["seconds"] - run["first_chunks_seconds_incl_compile"])


# ----------------------------------------------------------------------------- sections


def section_l(bench: harness.Bench) -> dict:
    cfg = bench.cfg
    out = timed_run(cfg, _WORK["dir"] / "L")
    run = out["run"]
    steady = steady_lanes_per_s(run)
    out.update(
        lanes_per_s=harness.ratio(run["lanes_run"], run["seconds"]),
        lanes_per_s_after_first_chunks=steady,
        lanes_per_chunk=harness.ratio(run["lanes_run"], run["chunks_written"]),
        driver_write_share=harness.ratio(run["write_seconds"], run["seconds"]),
        outside_run_s=out["process_wall_s"] - run["seconds"],
    )
    print_runs(
        f"`dpsim run {cfg.study} --reps {cfg.reps}`, one process",
        [row("local", out["process_wall_s"], run, None)],
    )
    print(
        f"{out['lanes_per_s']:.0f} lanes/s over the run, {steady:.0f} lanes/s after each step's first chunks "
        f"(compile excluded); the driver's writes {100 * out['driver_write_share']:.1f}% of the run; "
        f"{out['outside_run_s']:.1f} s of the process outside the run (imports, figure)",
        flush=True,
    )
    return out


def section_r(bench: harness.Bench) -> dict:
    cfg, where = bench.cfg, _WORK["dir"] / "R"
    out = timed_run(cfg, where, "--executor", "ray", "--ray-workers", str(cfg.ray_workers))
    run, local = out["run"], bench.results.get("L")
    out["outside_run_s"] = out["process_wall_s"] - run["seconds"]
    out["driver_write_share"] = harness.ratio(run["write_seconds"], run["seconds"])
    if local is not None:
        # rough: also holds any difference in compile time (the actors compile) and machine load
        out["ray_start_and_stop_s_est"] = out["outside_run_s"] - local["outside_run_s"]
        out["overhead_per_task_s"] = harness.ratio(
            run["seconds"] - local["run"]["seconds"], run["chunks_written"]
        )
        after_first = (
            run["seconds"]
            - run["first_chunks_seconds_incl_compile"]
            - (local["run"]["seconds"] - local["run"]["first_chunks_seconds_incl_compile"])
        )
        out["overhead_per_task_after_first_chunks_s"] = harness.ratio(
            after_first, run["chunks_written"]
        )
    out.update(against_l(bench, where, out["process_wall_s"]))
    print_runs(
        f"--executor ray --ray-workers {cfg.ray_workers} (local Ray instance)",
        [row("ray", out["process_wall_s"], run, out)],
    )
    if local is not None:
        print(
            f"Ray start and stop ≈ {out['ray_start_and_stop_s_est']:.1f} s (time outside the run, minus L's); "
            f"overhead per task ≈ {1e3 * out['overhead_per_task_s']:.0f} ms ((Ray run s − L run s) / chunks: "
            f"rough), {1e3 * out['overhead_per_task_after_first_chunks_s']:.0f} ms after each step's first chunks "
            f"(the actors' compile excluded); the driver's writes {100 * out['driver_write_share']:.1f}% of the run",
            flush=True,
        )
    return out


def section_p(bench: harness.Bench) -> dict:
    cfg, where = bench.cfg, _WORK["dir"] / "P"
    n = 2
    t0 = time.perf_counter()
    with ThreadPoolExecutor(n) as pool:
        runs = list(
            pool.map(
                lambda i: harness.time_cli(
                    run_args(cfg, where, "--part", f"{i}/{n}"), cache="off", timeout=TIMEOUT_S
                ),
                range(1, n + 1),
            )
        )
    wall = time.perf_counter() - t0
    records = sorted(run_records(where), key=lambda h: h.get("part", ""))
    out = {
        "pair_wall_s": wall,
        "process_wall_s": [r["process_wall_s"] for r in runs],
        "parts": [{"part": h.get("part"), **record_numbers(h)} for h in records],
        "complete": bool((read_manifest(where) or {}).get("complete")),
        **against_l(bench, where, wall),
    }
    print_runs(
        f"--part 1/{n} and --part 2/{n} at the same time, one shared folder",
        [row(f"part {h['part']}", r["process_wall_s"], h, None) for r, h in zip(runs, out["parts"])]
        + [row("the pair", wall, {}, out)],
    )
    return out


def section_s(bench: harness.Bench) -> dict:
    cfg, where = bench.cfg, _WORK["dir"] / "S"
    flags = " ".join(
        filter(
            None,
            [
                os.environ.get("XLA_FLAGS", ""),
                f"--xla_force_host_platform_device_count={cfg.devices}",
            ],
        )
    )
    out = timed_run(cfg, where, env={"XLA_FLAGS": flags})
    out["xla_flags"] = flags
    out.update(against_l(bench, where, out["process_wall_s"]))
    print_runs(
        f"sharded over {cfg.devices} forced host devices, one process",
        [row("sharded", out["process_wall_s"], out["run"], out)],
    )
    return out


def extrapolate(
    *,
    lanes_per_s: float,
    cores: int,
    lanes: float,
    lanes_per_chunk: float,
    compile_s: float,
    overhead_per_task_s: float,
    write_s_per_chunk: float,
    cluster_cores: int = CLUSTER_CORES,
) -> dict:
    """How long ``lanes`` replicate lanes take on one machine like the measured one and on a
    Ray cluster of ``cluster_cores`` cores.

    Assumptions (stated in the document): compute scales linearly with cores
    (``lanes_per_s`` measured on ``cores``); chunks keep the measured ``lanes_per_chunk``;
    programs compile once (``compile_s``; on the cluster every actor compiles at the same
    time); the driver alone receives and writes every chunk, one after another, so its
    serial time is chunks × (``overhead_per_task_s`` + ``write_s_per_chunk``), and it
    overlaps the actors' compute. A negative measured overhead counts as 0.

    Returns:
        seconds on one machine (compile + compute, writes included as measured), and on the
        cluster: compute, the driver's serial time, the estimate compile + max(compute,
        driver) and the upper bound compile + compute + driver.
    """
    chunks = lanes / lanes_per_chunk
    one = compile_s + lanes / lanes_per_s
    compute = lanes / (lanes_per_s * cluster_cores / cores)
    driver = chunks * (max(overhead_per_task_s, 0.0) + write_s_per_chunk)
    return {
        "lanes": lanes,
        "chunks": chunks,
        "one_machine_s": one,
        "cluster_cores": cluster_cores,
        "cluster_compute_s": compute,
        "cluster_driver_s": driver,
        "cluster_s": compile_s + max(compute, driver),
        "cluster_upper_s": compile_s + compute + driver,
    }


def section_e(bench: harness.Bench) -> dict:
    local, ray = bench.results.get("L"), bench.results.get("R")
    cfg = bench.cfg
    if local is None:
        print("E needs section L", flush=True)
        return {"skipped": "L not run"}
    run = local["run"]
    points = run["lanes_run"] // cfg.reps
    # the steady overhead (the actors' compile excluded, as compile_s counts it once), else the raw one
    overhead = math.nan
    for key in ("overhead_per_task_after_first_chunks_s", "overhead_per_task_s"):
        if ray and math.isnan(overhead):
            overhead = ray.get(key, math.nan)
    rate, rate_how = local["lanes_per_s_after_first_chunks"], "after each step's first chunks"
    if math.isnan(rate):
        rate, rate_how = (
            local["lanes_per_s"],
            "over the whole run, compile included (too few chunks to tell)",
        )
    write_per_chunk = harness.ratio(run["write_seconds"], run["chunks_written"])
    cores = os.cpu_count() or 1
    est = extrapolate(
        lanes_per_s=rate,
        cores=cores,
        lanes=points * FIG3_REPLICATES,
        lanes_per_chunk=local["lanes_per_chunk"],
        compile_s=run["first_chunks_seconds_incl_compile"],
        overhead_per_task_s=0.0 if math.isnan(overhead) else overhead,
        write_s_per_chunk=write_per_chunk,
    )
    valid = cfg.study == "cai-fig3" and not cfg.sets
    out = {
        "valid_for_fig3": valid,
        "grid_points": points,
        "replicates_per_point": FIG3_REPLICATES,
        "cores_measured": cores,
        "lanes_per_s": rate,
        "lanes_per_s_how": rate_how,
        "overhead_per_task_s": overhead,
        "write_s_per_chunk": write_per_chunk,
        **est,
        "assumptions": "compute scales linearly with cores; chunks of the measured size; compile once; the "
        "driver receives and writes every chunk serially, overlapping the actors' compute; "
        "no GPU (none measured)",
    }
    harness.print_table(
        harness.format_table(
            f"{FIG3_REPLICATES:,} replicates × {points} grid points of {cfg.study}"
            + ("" if valid else " (NOT the Figure 3 grid: not valid)"),
            ("where", "estimate", "compute", "driver"),
            [
                [
                    f"one {cores}-core machine like this one",
                    format_duration(est["one_machine_s"]),
                    None,
                    None,
                ],
                [
                    f"{CLUSTER_CORES}-core Ray cluster (≤ upper bound {format_duration(est['cluster_upper_s'])})",
                    format_duration(est["cluster_s"]),
                    format_duration(est["cluster_compute_s"]),
                    format_duration(est["cluster_driver_s"]),
                ],
            ],
            align="lrrr",
        )
    )
    print(
        f"from {out['lanes_per_s']:.0f} lanes/s ({rate_how}) on {cores} cores, {local['lanes_per_chunk']:.0f} lanes per chunk, "
        f"{1e3 * write_per_chunk:.1f} ms of driver writes per chunk, Ray overhead "
        f"{'not measured' if math.isnan(overhead) else f'{1e3 * overhead:.0f} ms'} per task; {out['assumptions']}",
        flush=True,
    )
    return out


SECTIONS = (
    harness.Section("L", "local: one process (the baseline)", section_l),
    harness.Section("R", "Ray: a local instance, 2 workers", section_r),
    harness.Section("P", "two parts at the same time, one shared folder", section_p),
    harness.Section("S", "sharded over forced host devices, one process", section_s),
    harness.Section("E", "extrapolations for the README's 'Scaling up'", section_e),
)


def main(argv=None) -> dict:
    with tempfile.TemporaryDirectory(prefix="dpsim-scale-out-") as tmp:
        _WORK["dir"] = Path(tmp)
        try:
            return harness.main(
                PAPER,
                SECTIONS,
                full=FULL,
                quick=QUICK,
                targets=TARGETS,
                argv=argv,
                description=__doc__.splitlines()[0],
            )
        finally:
            _WORK.pop("dir", None)


if __name__ == "__main__":
    main()
