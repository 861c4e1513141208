"""Benchmark: the stochastic root-finders of :mod:`dpsim.engine.solving.rootfinding` on a case
with a known answer, side by side, and against a grid of equal precision.

Run ``python -m benchmarks.rootfinding [--quick] [--sections A,B]`` from the repository
root; it writes ``benchmarks/results/rootfinding.json`` (the shared :mod:`benchmarks.harness`).

The known-root case: C configurations, each a Bernoulli rate
p_c(x) = σ(a_c·(log x − log x0_c)) (x0_c spread over 3 … 40, slopes a_c over 2 … 4), searched
over x ∈ [1, 1000] on the 65-point log lattice, for targets b ∈ {0.5, 0.8, 0.9}; the root is
x0_c·exp(logit(b)/a_c). Every method solves all C configurations at once, R times with
different seeds (R·C intervals per method and target).

Sections
--------
A. The three methods at their default settings (the same lane budget per configuration):
   bias and RMSE of log(root), coverage of the 95 % intervals (with the number of
   intervals), median interval width (log(high/low)), lanes per configuration, solved share,
   wall seconds.
B. A grid of equal precision: a uniform grid of G points with r replicates per point, read
   by the same isotonic crossing and local linear fit (window 1.5 grid steps, Fieller
   interval); r is the fewest for which the grid's median interval width is at most the
   method's; the grid's G·r lanes beside the method's lanes give the lane saving ratio.
   G = 65 (the whole lattice: the same fit at the same resolution as the solver, the fair
   comparison) and G = 17 (every 4th point, a typical hand-made grid: at equal width its
   local fit spans 4× more of the curve: its lack-of-fit term grows with r, so it may never
   be as narrow; then ``reached`` is false, r is the largest tried (at most
   ``grid_max_reps``) and the saving a lower bound; its error and coverage are reported).
   Pure NumPy: no JAX work is timed here.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

from benchmarks import harness  # first: sets the BLAS threads before NumPy loads

import numpy as np

from dpsim.engine.solving import oracles, rootfinding as rf, search as sr

PAPER = "rootfinding"
TARGETS = {"coverage": 0.95}


@dataclass(frozen=True)
class Config:
    configs: int = 40  # C, solved at once
    repeats: int = 20  # R solves per method and target
    targets: tuple = (0.5, 0.8, 0.9)
    low: float = 1.0
    high: float = 1000.0
    points: int = 65
    grid_points: tuple = (65, 17)  # G: the whole lattice, every 4th lattice point
    grid_pilot_reps: int = 256
    grid_max_reps: int = (
        100_000  # per point: a grid that is not as precise by then never reaches it
    )
    seed: int = 0


FULL = Config()
QUICK = Config(configs=8, repeats=3, targets=(0.8,))


def case(cfg: Config) -> tuple[np.ndarray, np.ndarray]:
    """(x0, slope), (C,) each: the known-root configurations."""
    return np.geomspace(3.0, 40.0, cfg.configs), np.linspace(2.0, 4.0, cfg.configs)


def finders() -> list:
    return [rf.MonotoneInterpolation(), rf.ProbabilisticBisection(), rf.RobbinsMonro()]


def score(roots_list: list[sr.Roots], truth: np.ndarray) -> dict:
    """Bias, RMSE (of log root), coverage, median width and lanes over repeated solves."""
    err, cov, width, lanes, solved = [], [], [], [], []
    for roots in roots_list:
        ok = roots.status == sr.SOLVED
        solved.append(ok)
        err.append(np.log(roots.root[ok] / truth[ok]))
        cov.append((roots.low[ok] <= truth[ok]) & (truth[ok] <= roots.high[ok]))
        with np.errstate(divide="ignore"):  # a Fieller bound at x = 0: an infinite width
            width.append(np.log(roots.high[ok] / roots.low[ok]))
        lanes.append(roots.lanes)
    err, cov, width = np.concatenate(err), np.concatenate(cov), np.concatenate(width)
    m = int(cov.size)
    return {
        "intervals": m,
        "covered": int(cov.sum()),
        "coverage": cov.mean() if m else math.nan,
        "coverage_tolerance_3sd": 3 * math.sqrt(0.95 * 0.05 / m) if m else math.nan,
        "bias_log": err.mean() if m else math.nan,
        "rmse_log": math.sqrt(np.mean(err**2)) if m else math.nan,
        "median_width_log": float(np.median(width)) if m else math.nan,
        "lanes_per_config": float(np.mean(np.concatenate(lanes))),
        "solved_share": float(np.mean(np.concatenate(solved))),
    }


def repeated(finder, cfg: Config, b: float, seed0: int) -> tuple[list[sr.Roots], float]:
    """R solves of the C configurations at target b; returns the roots and wall seconds."""
    x0, slope = case(cfg)
    search = sr.Search(cfg.low, cfg.high, b, points=cfg.points)
    t0 = time.perf_counter()
    out = [
        rf.solve_with(
            oracles.bernoulli_oracle(lambda x: oracles.logistic_rate(x, x0, slope), seed0 + r),
            finder,
            search,
            cfg.configs,
        )[0]
        for r in range(cfg.repeats)
    ]
    return out, time.perf_counter() - t0


@dataclass(frozen=True)
class Grid:
    """A fixed grid as a one-stage "finder": every ``every``-th lattice point with ``reps``
    replicates, read by :class:`~dpsim.engine.solving.rootfinding.MonotoneInterpolation`'s result
    (the same isotonic crossing and local linear fit, its window 1.5 grid steps)."""

    every: int
    reps: int
    name: str = "grid"

    def init(self, search, n_configs):
        return sr.State.start(search, n_configs)

    def ask(self, state):
        if state.stage:
            return None
        cols = list(range(0, len(state.lattice), self.every))
        n = state.done.size
        return sr.make_ask(state.lattice, [cols] * n, [[self.reps] * len(cols)] * n)

    def tell(self, state, ask, obs):
        return sr.told(state, ask, obs)

    def result(self, state, level=0.95):
        return replace(
            rf.MonotoneInterpolation(fit_window=1.5 * self.every).result(state, level),
            method=self.name,
        )


def grid_of_precision(cfg: Config, points: int, b: float, width: float, seed0: int) -> dict:
    """The fewest replicates per point r (within 2 %) for which a grid of ``points`` lattice
    points has a median interval width ≤ ``width``: from a pilot, r ← r·(w_r/width)²
    (width ∝ 1/√r) until r is bracketed between a too-wide and a narrow-enough value, then
    bisection; the grid's numbers at that r (the same seeds at every r)."""
    every = (cfg.points - 1) // (points - 1)
    x0, slope = case(cfg)
    truth = oracles.logistic_root(x0, slope, b)
    seen: dict[int, dict] = {}

    def at(reps: int) -> dict:
        if reps not in seen:
            seen[reps] = score(repeated(Grid(every, reps), cfg, b, seed0)[0], truth)
        return seen[reps]

    lo, hi, reps = 1, None, cfg.grid_pilot_reps  # lo: too wide (or the floor), hi: narrow enough
    for _ in range(16):
        if reps > cfg.grid_max_reps:
            break
        w = at(reps)["median_width_log"]
        if w <= width:
            hi = reps if hi is None else min(hi, reps)
        else:
            lo = max(lo, reps)
        if hi is not None and lo > 1:
            break
        scaled = max(2, round(reps * (w / width) ** 2 * (1.1 if w > width else 0.9)))
        reps = scaled if scaled != reps else (reps * 2 if w > width else max(2, reps // 2))
    while hi is not None and hi - lo > max(1, 0.02 * hi):
        mid = (lo + hi) // 2
        if at(mid)["median_width_log"] <= width:
            hi = mid
        else:
            lo = mid
    reps = hi if hi is not None else max(seen)
    tries = [
        {"reps_per_point": r, "median_width_log": v["median_width_log"]}
        for r, v in sorted(seen.items())
    ]
    return {
        "grid_points": len(range(0, cfg.points, every)),
        "reps_per_point": reps,
        "reached": hi is not None,
        "tries": tries,
        **at(reps),
    }


def section_a(bench: harness.Bench) -> dict:
    cfg = bench.cfg
    x0, slope = case(cfg)
    rows = []
    for b in cfg.targets:
        truth = oracles.logistic_root(x0, slope, b)
        for finder in finders():
            roots, seconds = repeated(finder, cfg, b, cfg.seed)
            rows.append(
                {
                    "method": finder.name,
                    "target": b,
                    "budget": finder.budget,
                    "seconds": seconds,
                    **score(roots, truth),
                }
            )
    harness.print_table(
        harness.format_table(
            f"A. {cfg.configs} configurations × {cfg.repeats} solves per method and target (log-scale errors)",
            (
                "method",
                "b",
                "bias",
                "RMSE",
                "coverage",
                "intervals",
                "median width",
                "lanes/config",
                "solved",
                "s",
            ),
            [
                [
                    r["method"],
                    r["target"],
                    r["bias_log"],
                    r["rmse_log"],
                    r["coverage"],
                    r["intervals"],
                    r["median_width_log"],
                    r["lanes_per_config"],
                    r["solved_share"],
                    r["seconds"],
                ]
                for r in rows
            ],
            (
                None,
                "{:.2f}",
                "{:+.4f}",
                "{:.4f}",
                "{:.3f}",
                "{:d}",
                "{:.4f}",
                "{:.0f}",
                "{:.3f}",
                "{:.1f}",
            ),
        )
    )
    return {"rows": rows}


def section_b(bench: harness.Bench) -> dict:
    cfg = bench.cfg
    rows_a = bench.results.get("A", {}).get("rows") or section_a(bench)["rows"]
    rows = []
    for r in rows_a:
        for points in cfg.grid_points:
            grid = grid_of_precision(
                cfg, points, r["target"], r["median_width_log"], cfg.seed + 10_000
            )
            lanes = grid["grid_points"] * grid["reps_per_point"]
            rows.append(
                {
                    "method": r["method"],
                    "target": r["target"],
                    "solver_lanes_per_config": r["lanes_per_config"],
                    "solver_median_width_log": r["median_width_log"],
                    "solver_coverage": r["coverage"],
                    "solver_rmse_log": r["rmse_log"],
                    "grid_lanes_per_config": lanes,
                    "grid_reps_per_point": grid["reps_per_point"],
                    "grid_points": grid["grid_points"],
                    "grid_median_width_log": grid["median_width_log"],
                    "grid_coverage": grid["coverage"],
                    "grid_rmse_log": grid["rmse_log"],
                    "grid_solved_share": grid["solved_share"],
                    "reached": grid["reached"],
                    "lane_saving": lanes / r["lanes_per_config"],
                    "grid": grid,
                }
            )
    harness.print_table(
        harness.format_table(
            "B. a uniform grid of equal precision (same local fit): lanes per configuration",
            (
                "method",
                "b",
                "solver lanes",
                "width",
                "RMSE",
                "grid G×r",
                "grid lanes",
                "grid width",
                "grid RMSE",
                "grid coverage",
                "saving",
            ),
            [
                [
                    r["method"],
                    r["target"],
                    r["solver_lanes_per_config"],
                    r["solver_median_width_log"],
                    r["solver_rmse_log"],
                    f"{r['grid_points']}×{r['grid_reps_per_point']}",
                    r["grid_lanes_per_config"],
                    r["grid_median_width_log"],
                    r["grid_rmse_log"],
                    r["grid_coverage"],
                    f"{r['lane_saving']:.1f}"
                    if r["reached"]
                    else f"> {r['lane_saving']:.0f} (never as narrow)",
                ]
                for r in rows
            ],
            (
                None,
                "{:.2f}",
                "{:.0f}",
                "{:.4f}",
                "{:.4f}",
                None,
                "{:d}",
                "{:.4f}",
                "{:.4f}",
                "{:.3f}",
                None,
            ),
        )
    )
    return {"rows": rows}


SECTIONS = (
    harness.Section("A", "the three methods on the known-root case", section_a),
    harness.Section("B", "a grid of equal precision", section_b),
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
