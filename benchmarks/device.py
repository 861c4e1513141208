"""Benchmark: the dpsim engine on whatever device JAX sees (a GPU when one is lent), every
paper in one command, one results file naming the device.

Run ``python -m benchmarks.device [--quick] [--sections E,C,X,M]`` from the repository root. It
writes ``benchmarks/results/device_<backend>.json`` (``device_gpu.json`` on a GPU,
``device_cpu.json`` on CPU; ``_quick`` / ``_partial`` variants are git-ignored), whose
``machine`` names the device (``device_kind``, ``jax_backend``). Timing, the results file and
the command line are the shared :mod:`benchmarks.harness`.

Sections
--------
E. Every paper's main workload with the engine, at the size of its own benchmark's full run:
   cai Fig. 3 (120 reps), xu Fig. 4 (100 reps), nguyen Fig. 1 (paper mode, 20 trials) and
   chowdhury Fig. 1 (exact, 100 reps): a cold run (compiled programs forgotten) and the best of
   the warm re-runs (:func:`benchmarks.harness.measure_engine`), fits per second.
C. cai Figures 1–3 at paper size (120 replicates), each in a fresh process (imports and
   compilation included) and then again in that process (warm), as ``benchmarks.cai``
   section C does (:func:`benchmarks.cai.figure_worker`). Target on an H100: the three cold
   processes under 2 minutes in all.
X. The cai Fig. 3 workload at 100× the paper's replicates (12 000 reps, 336 000 MLE fits):
   cold and one warm re-run, then a warm re-run with one chunk in flight (``workers=1``: the
   device idles while the host makes a chunk's rows and writes it), side by side. Target on an
   H100: ≥ 30 000 fits/s warm (the default, two chunks in flight on an accelerator).

M. The micro-batch on this device: the cai Fig. 3 workload at 10× the paper's replicates (1200
   reps, 33 600 fits), one warm run per micro-batch (``micro_batch``, the setting
   ``--micro-batch`` gives; each compiled by a cold run first), beside the micro-batch that
   calibration picks (:mod:`dpsim.engine.execution.calibration`) in section X.

Targets (issue 25) are judged only on a GPU at full size: MET / MISSED there, "n.a." on CPU
or in a quick run. ``--quick`` shrinks every grid to a point or two and the replicates to a
few (about a minute on a 2-core CPU; CI runs it): its numbers are not representative.

On a lent GPU machine (JAX with CUDA installed, no internet; the other dependencies are in
its image), the device ``run`` tool's command from the repository root (timeout_s 590), one
section per process so that a section cut short loses only itself (each section's limit
leaves room over its time in ``benchmarks/results/device/``)::

    python3 -m pip install -q --no-deps \
    --no-build-isolation -e . >/dev/null 2>&1; for s in X:120 M:110 C:120 E:230; do \
    n=${s%%:*}; t=${s##*:}; PYTHONUNBUFFERED=1 timeout $t python3 -m benchmarks.device \
    --sections $n > $OUT/device_$n.log 2>&1; \
    cp benchmarks/results/device_gpu_partial.json $OUT/device_gpu_$n.json; done

``python3 -m pip``, not ``pip``: on the lent machines ``pip`` installed dpsim where
``python3`` did not find it (no ``dpsim.papers`` entry points).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from benchmarks import harness  # first: sets the BLAS threads before NumPy loads

import jax

from benchmarks import cai, chowdhury, nguyen, xu
from dpsim.engine.execution.batching import device_memory_stats
from dpsim.engine.registry import installed

# issue 25, on an H100: the Fig. 3 workload ≥ 30 000 fits/s warm; cai Figs 1–3 at paper size,
# cold, under 2 minutes in all
TARGETS = {"fig3_100x_warm_fits_per_s": 30_000.0, "cai_figures_cold_total_s": 120.0}
GPU_BACKENDS = ("gpu", "cuda", "rocm")


@dataclass(frozen=True)
class Workload:
    """One engine workload: a registered experiment, replicates, grid overrides and the
    results-table method whose rows are its fits (None: every row)."""

    paper: str
    experiment: str
    reps: int
    overrides: tuple = ()  # (axis, values) pairs
    fits_method: str | None = None


@dataclass(frozen=True)
class Config:
    engines: tuple  # E: Workloads
    warm_runs: int  # E: warm re-runs (best kept)
    figures: tuple  # C: (experiment, overrides) run in fresh processes
    figure_reps: int
    fig3_multiple: int  # X: multiple of the paper's 120 replicates
    fig3_overrides: tuple = ()  # X, M: grid overrides (quick only)
    sweep_micros: tuple = (256, 512, 1024, 2048, 4096)  # M: micro-batches timed
    sweep_multiple: int = 10  # M: multiple of the paper's 120 replicates


PAPER_ENGINES = (
    Workload("cai", "cai-fig3", cai.FULL.reps, fits_method="mle"),
    Workload("xu", "xu-fig4", xu.FULL.reps, fits_method="m_est"),
    Workload(
        "nguyen",
        "nguyen-fig1",
        nguyen.FULL.fig1_reps,
        (
            ("n_items", list(nguyen.FULL.fig1_items)),
            ("n_users", list(nguyen.FULL.fig1_users)),
            ("mode", ["paper"]),
        ),
    ),
    Workload("chowdhury", "chowdhury-fig1", chowdhury.FULL.reps),
)
FULL = Config(
    engines=PAPER_ENGINES,
    warm_runs=harness.WARM_RUNS,
    figures=(("cai-fig1", ()), ("cai-fig2", ()), ("cai-fig3", ())),
    figure_reps=cai.FULL.figure_reps,
    fig3_multiple=100,
)
TINY_FIG3 = (("n_items", [20]), ("p", [1.0]), ("eps", [1.0, math.inf]))
QUICK = Config(
    engines=(
        Workload("cai", "cai-fig3", 2, TINY_FIG3, "mle"),
        Workload(
            "xu", "xu-fig4", 2, (("n_items", [10]), ("n_users", [50]), ("gap", [0.1])), "m_est"
        ),
        Workload(
            "nguyen",
            "nguyen-fig1",
            2,
            (("n_items", [25]), ("n_users", [200]), ("eps", [1.0]), ("mode", ["paper"])),
        ),
        Workload("chowdhury", "chowdhury-fig1", 2, (("n_samples", [1000]), ("eps", [1.0]))),
    ),
    warm_runs=1,
    figures=(("cai-fig3", TINY_FIG3),),
    figure_reps=2,
    fig3_multiple=2,
    fig3_overrides=TINY_FIG3,
    sweep_micros=(1, 2),
    sweep_multiple=2,
)


def on_gpu() -> bool:
    return jax.default_backend() in GPU_BACKENDS


def device_verdict(
    value: float, target: float, *, judged: bool, lower_is_better: bool = False
) -> str:
    """ "MET" / "MISSED" against an H100 target where ``judged`` (a GPU, full size), else "n.a."."""
    if not judged:
        return "n.a."
    return (
        "MET"
        if harness.verdict(value, target, lower_is_better=lower_is_better) == "MET"
        else "MISSED"
    )


def experiment(name: str):
    return installed().experiments[name]


def section_e(bench: harness.Bench) -> dict:
    rows = []
    for w in bench.cfg.engines:
        run = harness.measure_engine(
            experiment(w.experiment),
            w.reps,
            warm_runs=bench.cfg.warm_runs,
            overrides=dict(w.overrides) or None,
            fits_method=w.fits_method,
        )
        rows.append(
            {
                "paper": w.paper,
                "experiment": w.experiment,
                "reps": w.reps,
                "overrides": dict(w.overrides),
                "lanes": run["cold"]["lanes"],
                "fits": run["cold"]["fits"],
                "cold_wall_s": run["cold"]["wall_s"],
                "compile_s": run["cold"]["compile_s"],
                "warm_wall_s": run["warm"]["wall_s"] if run["warm"] else None,
                "fits_per_s": run["fits_per_s"],
                "fits_per_s_excl_compile": run["fits_per_s_excl_compile"],
                "engine": run,
            }
        )
    harness.print_table(
        harness.format_table(
            "E. every paper's engine workload (cold: compiled programs forgotten; warm: best re-run)",
            (
                "paper",
                "workload",
                "reps",
                "lanes",
                "fits",
                "cold s",
                "compile s",
                "warm s",
                "fits/s cold",
                "fits/s warm",
            ),
            [
                [
                    r["paper"],
                    r["experiment"],
                    r["reps"],
                    r["lanes"],
                    r["fits"],
                    r["cold_wall_s"],
                    r["compile_s"],
                    r["warm_wall_s"],
                    r["fits_per_s"],
                    r["fits_per_s_excl_compile"],
                ]
                for r in rows
            ],
            (None, None, "{}", "{}", "{}", "{:.2f}", "{:.2f}", "{:.2f}", "{:.0f}", "{:.0f}"),
        )
    )
    return {"rows": rows}


def section_c(bench: harness.Bench) -> dict:
    cfg = bench.cfg
    figs = []
    for name, overrides in cfg.figures:
        out = harness.cold_call(
            "benchmarks.cai:figure_worker",
            {"name": name, "reps": cfg.figure_reps, "overrides": dict(overrides) or None},
        )
        run = out["result"]
        figs.append(
            {
                "figure": name,
                "reps": cfg.figure_reps,
                "overrides": dict(overrides),
                "process_wall_s": out["process_wall_s"],
                "cold_process_s": out["process_wall_s"] - run["warm"]["wall_s"],
                "run_wall_s": run["wall_s"],
                "compile_s": run["compile_s"],
                "compiles": run["compiles"],
                "warm_wall_s": run["warm"]["wall_s"],
                "fits": run["fits"],
                "fits_per_s_warm": harness.ratio(run["warm"]["fits"], run["warm"]["wall_s"]),
            }
        )
    total = sum(f["cold_process_s"] for f in figs)
    paper_size = cfg.figures == FULL.figures and cfg.figure_reps == FULL.figure_reps
    verdict = device_verdict(
        total,
        TARGETS["cai_figures_cold_total_s"],
        judged=on_gpu() and paper_size,
        lower_is_better=True,
    )
    harness.print_table(
        harness.format_table(
            "C. cai figures, one fresh process each (cold: imports and compilation included), then warm in it",
            (
                "figure",
                "reps",
                "fits",
                "compiles",
                "cold process s",
                "compile s",
                "warm run s",
                "fits/s warm",
            ),
            [
                [
                    f["figure"],
                    f["reps"],
                    f["fits"],
                    f["compiles"],
                    f["cold_process_s"],
                    f["compile_s"],
                    f["warm_wall_s"],
                    f["fits_per_s_warm"],
                ]
                for f in figs
            ]
            + [["total", None, None, None, total, None, None, None]],
            (None, "{}", "{}", "{}", "{:.1f}", "{:.1f}", "{:.2f}", "{:.0f}"),
        )
    )
    print(
        f"cold total {total:.1f} s; target on an H100 < {TARGETS['cai_figures_cold_total_s']:.0f} s: {verdict}"
    )
    return {
        "runs": figs,
        "cold_total_s": total,
        "target_s": TARGETS["cai_figures_cold_total_s"],
        "verdict": verdict,
    }


def fig3_overrides(cfg: Config) -> dict | None:
    """The grid overrides of sections X and M (None: the paper's grid)."""
    return dict(cfg.fig3_overrides) or None


def section_x(bench: harness.Bench) -> dict:
    cfg = bench.cfg
    reps = cfg.fig3_multiple * cai.FULL.reps if not bench.quick else cfg.fig3_multiple
    overrides = fig3_overrides(cfg)
    run = harness.measure_engine(
        experiment("cai-fig3"), reps, warm_runs=1, overrides=overrides, **cai.ENGINE
    )
    one = harness.run_engine(
        experiment("cai-fig3"), reps, overrides=overrides, workers=1, **cai.ENGINE
    )
    warm = run["fits_per_s_excl_compile"]
    one_rate = one["fits"] / one["wall_s"]
    verdict = device_verdict(
        warm, TARGETS["fig3_100x_warm_fits_per_s"], judged=on_gpu() and not bench.quick
    )
    in_flight = run["warm"]["in_flight"]
    harness.print_table(
        harness.format_table(
            f"X. cai Fig. 3 workload at {cfg.fig3_multiple}× {'(tiny grid) ' if bench.quick else ''}the paper's "
            f"replicates: {reps} reps",
            (
                "run",
                "chunks in flight",
                "fits",
                "wall s",
                "compile s",
                "busy s",
                "host s",
                "lead s",
                "tail s",
                "fits/s",
            ),
            [
                [
                    label,
                    r["in_flight"],
                    r["fits"],
                    r["wall_s"],
                    r["compile_s"],
                    r["busy_s"],
                    r["host_s"],
                    r["lead_s"],
                    r["tail_s"],
                    rate,
                ]
                for label, r, rate in (
                    ("cold", run["cold"], run["fits_per_s"]),
                    ("warm", run["warm"], warm),
                    ("warm, workers=1", one, one_rate),
                )
            ],
            (
                None,
                "{}",
                "{}",
                "{:.2f}",
                "{:.2f}",
                "{:.2f}",
                "{:.2f}",
                "{:.2f}",
                "{:.2f}",
                "{:.0f}",
            ),
        )
    )
    print(
        "host s: wall − busy (no chunk call under way); lead s before the first chunk call, tail s after the last"
        + (
            "; workers=1 plans other chunks on CPU (it compiles: not warm there)"
            if not on_gpu()
            else ""
        )
    )
    print(
        "batching (warm): "
        + "; ".join(
            f"{b['step']}: chunk {b['chunk']}, micro-batch {b['micro']} ({b['from']})"
            for b in run["warm"]["batching"]
        )
    )
    print(
        f"warm {warm:.0f} fits/s ({harness.ratio(warm, one_rate):.3f}× one chunk in flight); "
        f"target on an H100 ≥ {TARGETS['fig3_100x_warm_fits_per_s']:.0f}: {verdict}"
    )
    return {
        "reps": reps,
        "multiple": cfg.fig3_multiple,
        "engine": run,
        "fits_per_s_warm": warm,
        "in_flight": in_flight,
        "one_in_flight": one,
        "fits_per_s_warm_one_in_flight": one_rate,
        "device_memory": device_memory(),
        "target_fits_per_s": TARGETS["fig3_100x_warm_fits_per_s"],
        "verdict": verdict,
    }


def section_m(bench: harness.Bench) -> dict:
    cfg = bench.cfg
    reps = cfg.sweep_multiple * (cai.FULL.reps if not bench.quick else 1)
    rows = []
    for micro in cfg.sweep_micros:
        run = harness.measure_engine(
            experiment("cai-fig3"),
            reps,
            warm_runs=1,
            overrides=fig3_overrides(cfg),
            micro_batch=micro,
            **cai.ENGINE,
        )
        rows.append(
            {
                "micro_batch": micro,
                "chunk": run["warm"]["batching"][0]["chunk"],
                "fits": run["warm"]["fits"],
                "compile_s": run["cold"]["compile_s"],
                "warm_wall_s": run["warm"]["wall_s"],
                "busy_s": run["warm"]["busy_s"],
                "fits_per_s_warm": run["fits_per_s_excl_compile"],
            }
        )
    best = max(rows, key=lambda r: r["fits_per_s_warm"])
    harness.print_table(
        harness.format_table(
            f"M. micro-batch on this device: cai Fig. 3 workload, {reps} reps, warm",
            ("micro-batch", "chunk", "fits", "compile s", "warm s", "busy s", "fits/s warm"),
            [
                [
                    r["micro_batch"],
                    r["chunk"],
                    r["fits"],
                    r["compile_s"],
                    r["warm_wall_s"],
                    r["busy_s"],
                    r["fits_per_s_warm"],
                ]
                for r in rows
            ],
            ("{}", "{}", "{}", "{:.2f}", "{:.2f}", "{:.2f}", "{:.0f}"),
        )
    )
    print(f"fastest here: micro-batch {best['micro_batch']}")
    return {"reps": reps, "rows": rows, "fastest_micro_batch": best["micro_batch"]}


def device_memory() -> dict | None:
    """The default device's memory statistics (bytes in use, peak, limit), None where it
    keeps none (CPU)."""
    stats = device_memory_stats()
    keys = ("bytes_in_use", "peak_bytes_in_use", "bytes_limit")
    return {k: int(stats[k]) for k in keys if k in stats} or None


SECTIONS = (
    harness.Section("E", "every paper's engine workload", section_e),
    harness.Section("C", "cai Figures 1–3 cold and warm, fresh processes", section_c),
    harness.Section("X", "cai Fig. 3 workload at 100× the replicates", section_x),
    harness.Section("M", "the micro-batch on this device", section_m),
)


def main(argv=None) -> dict:
    return harness.main(
        f"device_{jax.default_backend()}",
        SECTIONS,
        full=FULL,
        quick=QUICK,
        targets=TARGETS,
        argv=argv,
        description=__doc__.splitlines()[0],
        module="benchmarks.device",
    )


if __name__ == "__main__":
    main()
