"""Before/after, side by side: the same experiments run by two versions of dpsim, alternating,
each experiment in a fresh process with the persistent compilation cache off (imports and
compilation included), and their result tables compared.

    python -m benchmarks.compare --base 1bc03a0                     # cai Figures 1–3, 3 rounds
    python -m benchmarks.compare --base HEAD~2 --rounds 4 --reps 60 cai-fig3 xu-fig4

``--base REV`` is checked out with ``git archive`` into a temporary folder; the other side is
this checkout as it is (``--head REV`` for another commit). Each version runs from its own
folder (``dpsim`` and its ``dpsim.experiments`` both from there, whatever is installed), in
the same Python environment. The rounds alternate the order of the versions, so a machine
that speeds up or slows down during the comparison is shared fairly; read medians, not one
round: on a shared 2-core machine one figure's time varies by ±15 % between runs.

Reported per version: the median over rounds of each experiment's process wall time, of the
total, and of the CPU time (user + system, all threads). Then, from the first round, the
result tables of the two versions side by side: identical, equal up to a relative difference
in the float columns (printed), or different (integer, boolean or text columns, or rows).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_EXPERIMENTS = ("cai-fig1", "cai-fig2", "cai-fig3")

# Run in a fresh process with cwd = the version's folder: import that folder's dpsim and its
# experiments package (the installed dpsim.experiments may point at another checkout).
CHILD = """
import importlib.util, sys
root, name, reps, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
sys.path.insert(0, root)
import dpsim
assert dpsim.__file__.startswith(root), dpsim.__file__
spec = importlib.util.spec_from_file_location("dpsim.experiments", root + "/experiments/__init__.py",
                                              submodule_search_locations=[root + "/experiments"])
module = importlib.util.module_from_spec(spec)
sys.modules["dpsim.experiments"] = module
spec.loader.exec_module(module)
from dpsim.engine.registry import experiment
from dpsim.engine.execution.runner import run_experiment
run_experiment(experiment(name)[0], reps=reps, out=out, progress=False)
"""


def export(rev: str, into: Path) -> Path:
    """The tree of commit ``rev`` written into ``into`` (``git archive``); returns ``into``.
    Raises SystemExit with one line if ``rev`` is not a commit of this repository."""
    done = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev], capture_output=True
    )
    if done.returncode != 0:
        raise SystemExit(
            f"compare: --base/--head {rev!r} is not a commit here: "
            f"{done.stderr.decode().strip().splitlines()[-1]}"
        )
    into.mkdir(parents=True)
    tarfile.open(fileobj=io.BytesIO(done.stdout)).extractall(into, filter="data")
    return into


def run_once(root: Path, name: str, reps: int, out: Path) -> tuple[float, float]:
    """Run experiment ``name`` with the dpsim in ``root`` in a fresh process into ``out``:
    (wall s, CPU s of the process, user + system)."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JAX_COMPILATION_CACHE_DIR")
    }
    env.update(DPSIM_JAX_CACHE="off", PYTHONPATH=str(root))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), name, str(reps), str(out)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-10:])
        raise SystemExit(f"compare: {name} failed with the dpsim in {root}:\n{tail}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def frame_difference(a, b) -> str:
    """How two result tables (pandas, rows in :func:`~dpsim.engine.storage.store.load_results`' order) differ: "identical", "float columns within
    X relative, the rest identical", or what differs (layout, NaN positions, and for each
    non-float column whose values moved, how many rows moved and by how much at most,
    followed by the float columns' largest relative change)."""
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return f"different layout: columns {sorted(set(a.columns) ^ set(b.columns))}, rows {len(a)} vs {len(b)}"
    floats = [c for c in a.columns if a[c].dtype.kind == "f"]
    moved_columns = []
    for c in a.columns:
        if c in floats or a[c].equals(b[c]):
            continue
        rows = int((a[c] != b[c]).sum())
        if a[c].dtype.kind in "iub" and b[c].dtype.kind in "iub":
            step = int(np.max(np.abs(a[c].to_numpy(np.int64) - b[c].to_numpy(np.int64))))
            moved_columns.append(f"{c} in {rows} of {len(a)} rows (by at most {step})")
        else:
            moved_columns.append(f"{c} in {rows} of {len(a)} rows")
    worst = 0.0
    for c in floats:
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if not np.array_equal(np.isnan(x), np.isnan(y)):
            return f"different NaNs in {c}"
        moved = ~np.isnan(x) & (x != y)
        if moved.any():
            scale = np.maximum(np.abs(x[moved]), np.abs(y[moved]))
            worst = max(worst, float(np.max(np.abs(x[moved] - y[moved]) / scale)))
    if moved_columns:
        return (
            "different values: "
            + "; ".join(moved_columns)
            + f"; float columns within {worst:.1e} relative"
        )
    return (
        "identical"
        if worst == 0.0
        else f"float columns within {worst:.1e} relative, the rest identical"
    )


def table_difference(a_dir: Path, b_dir: Path) -> str:
    """:func:`frame_difference` of the result tables in two run folders."""
    from dpsim.engine.storage import store

    return frame_difference(store.load_results(a_dir), store.load_results(b_dir))


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.compare", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "experiments",
        nargs="*",
        default=list(DEFAULT_EXPERIMENTS),
        help="experiments to run (default: cai-fig1 cai-fig2 cai-fig3)",
    )
    parser.add_argument("--base", required=True, help="the commit to compare against (e.g. HEAD~3)")
    parser.add_argument(
        "--head", default=None, help="the other commit (default: this checkout as it is)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument(
        "--reps", type=int, default=120, help="replicates per experiment (default 120)"
    )
    parser.add_argument(
        "--json", type=Path, default=None, help="also write every number to this file"
    )
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.reps < 1:
        parser.error(f"--rounds {args.rounds} and --reps {args.reps} must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse(argv)
    with tempfile.TemporaryDirectory(prefix="dpsim-compare-") as tmp:
        tmp = Path(tmp)
        roots = {
            "base": export(args.base, tmp / "base"),
            "head": export(args.head, tmp / "head") if args.head else ROOT,
        }
        labels = {
            "base": f"base {args.base}",
            "head": f"head {args.head}" if args.head else "this checkout",
        }
        times = {tag: [] for tag in roots}
        print(
            f"{len(args.experiments)} experiment(s) at {args.reps} replicates, {args.rounds} rounds, "
            f"fresh processes, compilation cache off",
            flush=True,
        )
        for r in range(args.rounds):
            for tag in ("base", "head") if r % 2 == 0 else ("head", "base"):
                row = {
                    name: run_once(roots[tag], name, args.reps, tmp / "runs" / f"{r}-{tag}-{name}")
                    for name in args.experiments
                }
                times[tag].append(row)
                print(
                    f"round {r + 1} {labels[tag]:>24}: "
                    + ", ".join(f"{n} {w:.1f} s" for n, (w, _) in row.items())
                    + f"; total {sum(w for w, _ in row.values()):.1f} s, CPU {sum(c for _, c in row.values()):.0f} s",
                    flush=True,
                )
        summary = {}
        print("\nmedians over rounds (process wall s; CPU s, all threads):")
        for tag, rows in times.items():
            summary[labels[tag]] = {
                "per_experiment_s": {
                    n: statistics.median(row[n][0] for row in rows) for n in args.experiments
                },
                "total_s": statistics.median(sum(w for w, _ in row.values()) for row in rows),
                "totals_s": [round(sum(w for w, _ in row.values()), 2) for row in rows],
                "cpu_s": statistics.median(sum(c for _, c in row.values()) for row in rows),
            }
            s = summary[labels[tag]]
            print(
                f"  {labels[tag]:>24}: total {s['total_s']:.1f} s (rounds {s['totals_s']}), CPU {s['cpu_s']:.0f} s; "
                + ", ".join(f"{n} {t:.1f} s" for n, t in s["per_experiment_s"].items())
            )
        ratio = summary[labels["head"]]["total_s"] / summary[labels["base"]]["total_s"]
        print(f"  head ÷ base, total wall: {ratio:.3f}")
        print("\nresult tables, round 1:")
        tables = {}
        for name in args.experiments:
            tables[name] = table_difference(
                tmp / "runs" / f"0-base-{name}", tmp / "runs" / f"0-head-{name}"
            )
            print(f"  {name}: {tables[name]}")
        if args.json:
            args.json.write_text(
                json.dumps(
                    {
                        "experiments": args.experiments,
                        "reps": args.reps,
                        "rounds": args.rounds,
                        "summary": summary,
                        "tables": tables,
                        "raw": {labels[tag]: rows for tag, rows in times.items()},
                    },
                    indent=1,
                )
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
