"""Benchmark: cold runs as a user runs them, and cai's small-n workloads beside the vectorised baseline.

Run ``python -m benchmarks.cold [--quick] [--sections C,R]`` from the repository root. Tables
are printed and ``benchmarks/results/cold.json`` is written (``cold_quick.json`` with
``--quick``, ``cold_partial.json`` for one section; both git-ignored). The load average is
recorded before and after every timed piece: the machine may be shared.

Sections
--------
C. ``dpsim run cai-fig1``, ``cai-fig2``, ``cai-fig3`` at the paper's size as three fresh
   processes, one after the other, as a new user runs them: one empty home folder shared by
   the three (``HOME``; no ``XDG_CACHE_HOME``, ``MPLCONFIGDIR`` or dpsim cache variables: the
   JAX compilation cache, the code-digest cache and matplotlib's font list start empty), the
   figure drawn (PNG, PDF, CSV). Per process: wall and CPU seconds (user + system, from the
   child's resource usage), the run's own seconds (as ``dpsim run`` prints them), *start*
   (from the process start to the run's line, less the run: interpreter, imports, the
   experiment), *figure* (from the run's line to the last figure line) and *exit*. Each
   figure's CSV is compared with the committed ``figures/<name>.csv`` (the same random
   streams give the same bytes). Beside them, ``python -c "import dpsim.cli"`` and
   ``python -c pass`` in fresh processes under an empty home. Target (issue 44): < 20 s for
   the three on a quiet machine.
R. cai at small n (n = 20 and 40, p = 1, the ten ε of benchmarks/cai.py, 120 replicates: its
   section B workload): the engine's warm re-run (``run_experiment`` into a fresh folder, its
   programs compiled in this process) against the vectorised NumPy baseline
   (:func:`benchmarks.cai.time_vectorised`, one OpenBLAS thread) in interleaved rounds, so that
   the machine's load weighs on both; medians per contender, ratio = engine fits per second ÷
   the baseline's. Engine designs, each timed in every round: *one lane at a time* (the
   default policy's choice while no vmapped program of the step was compiled: its wider
   program's compile does not pay within one run, :func:`dpsim.engine.execution.batching.small_lane_layout`),
   and *default policy, wide program compiled before* (after one run at ``--micro-batch 32``
   recorded its layout in the calibration cache: the policy then vmaps). Each design's cold
   run is recorded (its compile seconds) and, per design, where a warm run's time goes: chunk
   calls (``busy``) and the host's share (planning, keys, rows, Parquet parts, manifest).
   Targets (issue 44): n = 20 ≥ 2×, n = 40 ≥ 5× the baseline.

``--quick`` runs Fig. 3 alone at 2 replicates in C and 2 rounds at n = 20 in R: a smoke run.
"""

from __future__ import annotations

import hashlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchmarks import harness  # first: sets the BLAS threads before NumPy loads

from benchmarks import cai
from dpsim.engine.execution import calibration, program

PAPER = "cold"
TARGETS = {"figs_cold_total_s": 20.0, "n20_vs_vectorised": 2.0, "n40_vs_vectorised": 5.0}
WIDE = 32  # the micro-batch of the run that compiles the wide program (the small-lane rule's)
# Variables a fresh user's process would not have: every cache starts empty under the new home.
CLEARED = (
    "XDG_CACHE_HOME",
    "MPLCONFIGDIR",
    "DPSIM_JAX_CACHE",
    "DPSIM_CODE_CACHE",
    "DPSIM_CALIBRATION_CACHE",
    "JAX_COMPILATION_CACHE_DIR",
)


@dataclass(frozen=True)
class Config:
    figures: tuple  # C: the experiments run as fresh processes
    figure_reps: int | None  # C: --reps (None: the experiment's own)
    small_ns: tuple  # R: item counts
    reps: int  # R: replicates per run
    rounds: int  # R: interleaved rounds (medians over them)


FULL = Config(
    figures=("cai-fig1", "cai-fig2", "cai-fig3"),
    figure_reps=None,
    small_ns=(20, 40),
    reps=120,
    rounds=7,
)
QUICK = Config(figures=("cai-fig3",), figure_reps=2, small_ns=(20,), reps=120, rounds=2)


# ----------------------------------------------------------------------------- C


def user_env(home: str) -> dict:
    """A fresh user's environment: this one's without the cache variables, ``HOME`` = ``home``."""
    env = {k: v for k, v in harness._fresh_env(None).items() if k not in CLEARED}
    env["HOME"] = home
    return env


def dpsim_command() -> list[str]:
    """The ``dpsim`` console script beside this interpreter (as a user types it), else ``python -m dpsim.cli``."""
    script = Path(sys.executable).with_name("dpsim")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "dpsim.cli"]


def timed_process(cmd: list[str], env: dict, *, check: bool = True) -> dict:
    """Run ``cmd``: its wall and CPU seconds (user + system of the process and its children),
    exit status, each stdout line with the seconds since the start at which it arrived, the end
    of its stderr (read beside stdout, so that neither pipe fills and blocks the process), and
    the load average before and after. ``check``: raise RuntimeError when the exit status is not
    0 (its stderr's end in the message)."""
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=harness.ROOT
    )
    stderr: list[str] = []
    reader = threading.Thread(target=lambda: stderr.append(proc.stderr.read()), daemon=True)
    reader.start()
    lines = [(time.perf_counter() - t0, line.rstrip("\n")) for line in proc.stdout]
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    reader.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    tail = "".join(stderr)[-2000:]
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{tail}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "exit_status": proc.returncode,
        "lines": lines,
        "stderr_tail": tail,
        "loadavg_before": list(load_before),
        "loadavg_after": list(os.getloadavg()),
    }


RUN_LINE = re.compile(r"replicate lanes, .* rows in ([0-9.]+) s -> ")


def figure_process(name: str, reps: int | None, home: str, out: Path) -> dict:
    """``dpsim run NAME`` in a fresh process under ``home``, its phases (module docstring, C)
    and whether its figure CSV equals the committed one."""
    cmd = [*dpsim_command(), "run", name, "--out", str(out), "--no-progress"]
    cmd += [] if reps is None else ["--reps", str(reps)]
    done = timed_process(cmd, user_env(home))
    run_at, run_s = next(
        (t, float(m.group(1))) for t, line in done["lines"] if (m := RUN_LINE.search(line))
    )
    figure_at = max((t for t, line in done["lines"] if line.startswith("figure: ")), default=run_at)
    csv = out / "figure.csv"
    committed = harness.ROOT / "figures" / f"{name}.csv"
    same = (
        reps is None
        and csv.is_file()
        and committed.is_file()
        and hashlib.sha256(csv.read_bytes()).digest()
        == hashlib.sha256(committed.read_bytes()).digest()
    )
    return {
        "figure": name,
        "reps": reps,
        "wall_s": done["wall_s"],
        "cpu_s": done["cpu_s"],
        "run_s": run_s,
        "start_s": run_at - run_s,
        "figure_s": figure_at - run_at,
        "exit_s": done["wall_s"] - figure_at,
        "csv_identical_to_committed": same if reps is None else None,
        "loadavg_before": done["loadavg_before"],
        "loadavg_after": done["loadavg_after"],
    }


def section_c(bench: harness.Bench) -> dict:
    cfg = bench.cfg
    with (
        tempfile.TemporaryDirectory(prefix="dpsim-cold-home-") as home,
        tempfile.TemporaryDirectory(prefix="dpsim-cold-out-") as out,
    ):
        runs = [
            figure_process(name, cfg.figure_reps, home, Path(out) / name) for name in cfg.figures
        ]
    with tempfile.TemporaryDirectory(prefix="dpsim-cold-home-") as home:
        imports = timed_process([sys.executable, "-c", "import dpsim.cli"], user_env(home))
    with tempfile.TemporaryDirectory(prefix="dpsim-cold-home-") as home:
        bare = timed_process([sys.executable, "-c", "pass"], user_env(home))
    for r in (imports, bare):
        r.pop("lines")
    total = sum(r["wall_s"] for r in runs)
    target = (
        TARGETS["figs_cold_total_s"]
        if set(cfg.figures) == set(FULL.figures) and cfg.figure_reps is None
        else None
    )
    harness.print_table(
        harness.format_table(
            "`dpsim run NAME` as three fresh processes under one empty home folder, figures drawn",
            (
                "figure",
                "wall s",
                "CPU s",
                "start s",
                "run s",
                "figure s",
                "exit s",
                "CSV = committed",
                "load before",
            ),
            [
                [
                    r["figure"],
                    r["wall_s"],
                    r["cpu_s"],
                    r["start_s"],
                    r["run_s"],
                    r["figure_s"],
                    r["exit_s"],
                    r["csv_identical_to_committed"],
                    r["loadavg_before"][0],
                ]
                for r in runs
            ]
            + [
                [
                    "total",
                    total,
                    sum(r["cpu_s"] for r in runs),
                    sum(r["start_s"] for r in runs),
                    sum(r["run_s"] for r in runs),
                    sum(r["figure_s"] for r in runs),
                    sum(r["exit_s"] for r in runs),
                    None,
                    None,
                ]
            ],
            (None, "{:.1f}", "{:.1f}", "{:.2f}", "{:.1f}", "{:.2f}", "{:.2f}", "{}", "{:.1f}"),
        )
    )
    print(
        f"fresh `python -c 'import dpsim.cli'`: {imports['wall_s']:.2f} s wall, {imports['cpu_s']:.2f} s CPU; "
        f"`python -c pass`: {bare['wall_s']:.2f} s wall"
    )
    ok = harness.verdict(total, target, lower_is_better=True)
    print(
        f"total {total:.1f} s"
        + (
            f" (target < {target:.0f} s on a quiet machine: {ok}; load average "
            f"{runs[0]['loadavg_before'][0]:.1f} at the start)"
            if target
            else " (no target: not Figs 1–3 at paper size)"
        )
    )
    return {
        "runs": runs,
        "total_s": total,
        "total_cpu_s": sum(r["cpu_s"] for r in runs),
        "target_s": target,
        "verdict": ok,
        "import_dpsim_cli": imports,
        "bare_python": bare,
    }


# ----------------------------------------------------------------------------- R


@contextmanager
def calibration_cache(path: Path):
    """The engine's calibration cache at ``path`` (empty) and in ``auto`` mode, for the block."""
    saved = {k: os.environ.get(k) for k in (calibration.CACHE_VARIABLE, calibration.MODE_VARIABLE)}
    os.environ[calibration.CACHE_VARIABLE], os.environ[calibration.MODE_VARIABLE] = (
        str(path),
        "auto",
    )
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _run(experiment, reps: int, micro_batch: int | None) -> dict:
    run = harness.run_engine(experiment, reps, micro_batch=micro_batch, **cai.ENGINE)
    run["loadavg"] = list(os.getloadavg())
    return run


def _summary(runs: list[dict]) -> dict:
    """Medians of a design's warm runs: wall, chunk calls (busy), host, lead, tail; fits per second."""
    med = {
        k: statistics.median(r[k] for r in runs)
        for k in ("wall_s", "busy_s", "host_s", "lead_s", "tail_s")
    }
    return {
        **med,
        "fits": runs[0]["fits"],
        "fits_per_s": runs[0]["fits"] / med["wall_s"],
        "batching": runs[0]["batching"],
        "walls_s": [r["wall_s"] for r in runs],
    }


def small_n_ratios(n: int, cfg: Config) -> dict:
    """Section R at ``n`` items: both engine designs and the baseline, interleaved."""
    experiment = cai.small_n_experiment(n)
    with (
        tempfile.TemporaryDirectory(prefix="dpsim-bench-") as tmp,
        calibration_cache(Path(tmp) / "batching.json"),
    ):
        program.clear_cache()
        cold_one = _run(experiment, cfg.reps, None)  # the policy's first choice, compiled
        cold_wide = _run(
            experiment, cfg.reps, WIDE
        )  # compiles the wide program, records its layout
        chosen = _run(experiment, cfg.reps, None)  # the policy's choice now
        designs = {
            "one lane at a time": (1, []),
            "default policy, wide program compiled before": (None, []),
        }
        vectorised = []
        for _ in range(cfg.rounds):
            for micro, runs in designs.values():
                runs.append(_run(experiment, cfg.reps, micro))
            vectorised.append(
                {**cai.time_vectorised(n, [1.0], cfg.reps), "loadavg": list(os.getloadavg())}
            )
    vec = {
        "wall_s": statistics.median(v["wall_s"] for v in vectorised),
        "fits": vectorised[0]["fits_timed"],
        "walls_s": [v["wall_s"] for v in vectorised],
        "loadavg": [v["loadavg"][0] for v in vectorised],
    }
    vec["fits_per_s"] = vec["fits"] / vec["wall_s"]
    out = {
        "n": n,
        "reps": cfg.reps,
        "rounds": cfg.rounds,
        "vectorised": vec,
        "first_choice": {
            "batching": cold_one["batching"],
            "compile_s": cold_one["compile_s"],
            "wall_s": cold_one["wall_s"],
        },
        "wide_compile": {
            "batching": cold_wide["batching"],
            "compile_s": cold_wide["compile_s"],
            "wall_s": cold_wide["wall_s"],
        },
        "choice_after_wide_compiled": chosen["batching"],
        "designs": {},
    }
    for name, (_, runs) in designs.items():
        s = _summary(runs)
        s["ratio"] = s["fits_per_s"] / vec["fits_per_s"]
        out["designs"][name] = s
    return out


def section_r(bench: harness.Bench) -> dict:
    cfg, results = bench.cfg, {}
    rows = []
    for n in cfg.small_ns:
        r = small_n_ratios(n, cfg)
        results[f"n{n}"] = r
        target = TARGETS.get(f"n{n}_vs_vectorised")
        for name, d in r["designs"].items():
            rows.append(
                [
                    n,
                    name,
                    d["batching"][0]["micro"],
                    d["wall_s"] * 1e3,
                    d["busy_s"] * 1e3,
                    d["host_s"] * 1e3,
                    r["vectorised"]["wall_s"] * 1e3,
                    d["ratio"],
                    target,
                    harness.verdict(d["ratio"], target) if target else "",
                ]
            )
            d["target"], d["verdict"] = target, rows[-1][-1]
        print(
            f"n = {n}: first choice {r['first_choice']['batching'][0]['micro']} "
            f"({r['first_choice']['batching'][0]['from']}; compile {r['first_choice']['compile_s']:.1f} s), "
            f"wide program compile {r['wide_compile']['compile_s']:.1f} s, then "
            f"{r['choice_after_wide_compiled'][0]['micro']} ({r['choice_after_wide_compiled'][0]['from']})"
        )
    harness.print_table(
        harness.format_table(
            "cai small n, 120 replicates × 10 ε (1200 MLE fits): warm engine runs against the vectorised NumPy "
            "baseline, interleaved rounds, medians (ms)",
            (
                "n",
                "engine design",
                "micro",
                "engine ms",
                "chunk calls ms",
                "host ms",
                "vectorised ms",
                "ratio",
                "target",
                "verdict",
            ),
            rows,
            ("{}", None, "{}", "{:.1f}", "{:.1f}", "{:.1f}", "{:.1f}", "{:.2f}", "{}", None),
        )
    )
    return results


SECTIONS = (
    harness.Section(
        "C",
        "cai Figures 1–3 as a user runs them: fresh processes, empty home, figures drawn",
        section_c,
    ),
    harness.Section("R", "cai small n against the vectorised baseline, side by side", section_r),
)


def main(argv=None) -> dict:
    return harness.main(
        PAPER,
        SECTIONS,
        full=FULL,
        quick=QUICK,
        targets=TARGETS,
        argv=argv,
        description=__doc__.splitlines()[0],
    )


if __name__ == "__main__":
    main()
