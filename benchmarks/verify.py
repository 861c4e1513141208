"""Benchmark: the whole ``dpsim verify PAPER --seed S`` as a user runs it, and its verdicts.

Run ``python -m benchmarks.verify [--papers xu,cai,nguyen,chowdhury] [--seeds 0,1,2]
[--runs DIR]`` from the repository root. Each (paper, seed) is ``dpsim verify PAPER --seed S
--runs DIR/PAPER-seedS --no-progress`` in a fresh process under an empty home folder (no JAX
compilation cache, no calibration or code-digest cache: a first run), one after the other.
Recorded per run: wall and CPU seconds (user + system of the process and its children), the
load average before and after (the machine may be shared: a load above the core count means
the run shared its cores), the exit status, and the count of each verdict read from the run's
``verdicts.json``.

``benchmarks/results/verify.json`` keeps one entry per (paper, seed): a new run replaces that
entry and leaves the others, so the file can be filled over several sittings (the whole matrix
takes hours on two cores). Every entry records its own commit, date, machine and load, so an
entry measured on other code is visible as such. ``--quick`` runs ``dpsim verify xu-fig2`` at
seed 0 alone (a smoke run of a minute) and writes ``verify_quick.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

from benchmarks import harness
from benchmarks.cold import dpsim_command, timed_process, user_env

PAPER = "verify"
PAPERS = ("xu", "cai", "nguyen", "chowdhury")
SEEDS = (0, 1, 2)
QUICK_TARGET = "xu-fig2"


def entry_key(paper: str, seed: int) -> str:
    """The results file's key of one run: ``PAPER/seedS``."""
    return f"{paper}/seed{seed}"


def verdict_counts(runs: Path) -> dict:
    """How many checks got each verdict, from ``runs/verdicts.json`` (``dpsim verify``'s
    record); an empty dict when the run wrote none."""
    path = runs / "verdicts.json"
    if not path.is_file():
        return {}
    checks = json.loads(path.read_text())["checks"]
    return dict(sorted(Counter(c["verdict"] for c in checks).items()))


def timed_verify(target: str, seed: int, runs: Path, home: str) -> dict:
    """``dpsim verify TARGET --seed SEED --runs RUNS --no-progress`` in a fresh process under
    ``home`` (:func:`benchmarks.cold.timed_process`, whatever its exit status): its wall and CPU
    seconds, load average before and after, exit status and verdict counts (module docstring)."""
    args = ["verify", target, "--seed", str(seed), "--runs", str(runs), "--no-progress"]
    done = timed_process([*dpsim_command(), *args], user_env(home), check=False)
    return {
        "command": " ".join(["dpsim", *args]),
        "wall_s": done["wall_s"],
        "cpu_s": done["cpu_s"],
        "exit_status": done["exit_status"],
        "verdicts": verdict_counts(runs),
        "stderr_tail": done["stderr_tail"][-1000:],
        "loadavg_before": done["loadavg_before"],
        "loadavg_after": done["loadavg_after"],
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "git": harness.git_info(),
        "machine": harness.machine_info(),
    }


def merged_document(path: Path, new: dict, command: str, quick: bool = False) -> dict:
    """The results document at ``path`` with the entries of ``new`` added or replaced (keys
    :func:`entry_key`), as a schema document (benchmarks/harness.py) whose sections are the
    entries' keys; a full one, or with ``quick`` a quick one."""
    old = json.loads(path.read_text())["results"] if path.is_file() else {}
    results = {**old, **new}
    keys = sorted(results)
    return harness.results_document(
        PAPER,
        mode="quick" if quick else "full",
        quick=quick,
        sections=keys,
        command=command,
        config={"papers": list(PAPERS), "seeds": list(SEEDS)},
        targets={},
        results=results,
        section_seconds={k: results[k]["wall_s"] for k in keys},
        seconds=float(sum(e["wall_s"] for e in new.values())),
    )


def parse_papers(text: str) -> list[str]:
    """``--papers``: comma-separated names of :data:`PAPERS`. Raises ValueError naming a bad one."""
    papers = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in papers if p not in PAPERS]
    if bad or not papers:
        raise ValueError(f"--papers {text!r}: choose from {', '.join(PAPERS)}")
    return papers


def parse_seeds(text: str) -> list[int]:
    """``--seeds``: comma-separated integers ≥ 0. Raises ValueError naming a bad one."""
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        seeds = []
    if not seeds or min(seeds) < 0:
        raise ValueError(f"--seeds {text!r}: give integers ≥ 0, comma-separated")
    return seeds


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", default=",".join(PAPERS), help="comma-separated papers")
    parser.add_argument(
        "--seeds", default=",".join(map(str, SEEDS)), help="comma-separated seeds (integers ≥ 0)"
    )
    parser.add_argument("--runs", help="folder for the runs (default: a temporary one, removed)")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_TARGET} at seed 0 only")
    args = parser.parse_args(argv)
    try:
        papers = [QUICK_TARGET] if args.quick else parse_papers(args.papers)
        seeds = [0] if args.quick else parse_seeds(args.seeds)
    except ValueError as exc:
        parser.error(str(exc))  # one line, exit 2, nothing run or written
    root = Path(args.runs) if args.runs else Path(tempfile.mkdtemp(prefix="dpsim-verify-bench-"))
    path = harness.results_path(PAPER, "quick" if args.quick else "full")
    command = " ".join(["python -m benchmarks.verify", *(sys.argv[1:] if argv is None else argv)])
    new = {}
    try:
        for paper in papers:
            for seed in seeds:
                with tempfile.TemporaryDirectory(prefix="dpsim-home-") as home:
                    entry = timed_verify(paper, seed, root / f"{paper}-seed{seed}", home)
                new[entry_key(paper, seed)] = entry
                print(
                    f"{entry_key(paper, seed)}: {entry['wall_s'] / 60:.1f} min wall, "
                    f"{entry['cpu_s'] / 60:.1f} min CPU, exit {entry['exit_status']}, "
                    f"{entry['verdicts']}, load {entry['loadavg_before'][0]:.1f} → "
                    f"{entry['loadavg_after'][0]:.1f}",
                    flush=True,
                )
                # written after every run: an interrupted sitting keeps what it measured
                harness.write_results(merged_document(path, new, command, args.quick), path)
    except KeyboardInterrupt:
        # verify keeps its completed chunks: the same command with --runs resumes them
        resume = f" (the same command with --runs {root} resumes its runs)" if args.runs else ""
        print(f"interrupted: {len(new)} entries written to {path}{resume}", file=sys.stderr)
        raise SystemExit(130) from None
    finally:
        if not args.runs:
            shutil.rmtree(root, ignore_errors=True)
    print(f"-> {path}")
    return new


if __name__ == "__main__":
    main()
