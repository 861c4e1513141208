"""No run hangs: a multi-shape experiment with concurrent chunks and background compilation
finishes 10 times out of 10 with results identical to one worker, and a stalled run is
stopped by the watchdog with a one-line error and resumes when run again.

That every registered experiment finishes with the default workers (at most two values of
each axis, 2 replicates, under the watchdog) is tested by its smoke run in
tests/conformance/test_conformance.py, the suite's one smoke run of every experiment.

Everything here that could hang runs in a subprocess with a time limit, so a hang fails the
test instead of hanging the suite. XLA:CPU's intra-op pool is forced to 2 threads
(``PJRT_NPROC=2``), the size on the 2-core machine where the deadlock was seen, so the
tests are as strict on a larger machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """Subprocess environment: a shared persistent compilation cache for this module; the
    suite's LLVM level comes with the environment (tests/conftest.py: 0 unless set; these runs
    are mostly compilation, and optimisation does not touch threads, where a hang would come
    from)."""
    cache = tmp_path_factory.mktemp("jax-cache")
    return {**os.environ, "PJRT_NPROC": "2", "DPSIM_JAX_CACHE": str(cache), "PYTHONUNBUFFERED": "1"}


STRESS = textwrap.dedent("""
    import hashlib, json, sys, tempfile
    import jax
    import dpsim
    from dpsim.engine.execution import program, runner
    from dpsim.engine.storage import store
    from dpsim.engine.registry import installed
    jax.config.update("jax_compilation_cache_dir", sys.argv[1])
    fig4 = installed().experiments["cai-fig4"]
    overrides = {"n_items": [48, 64], "eps": [1.0, 2.0]}
    KEY = ["point", "rep", "method"]

    def run(workers):
        program.clear_cache()  # compile again, in the background thread, every run
        with tempfile.TemporaryDirectory() as out:
            summary = runner.run_experiment(fig4, reps=6, seed=3, out=out, overrides=overrides, chunk=3,
                                            workers=workers, progress=False, watchdog=120, micro_batch=16)
            table = store.load_results(out).sort_values(KEY).reset_index(drop=True)
            assert len(store.part_files(out)) == 4, summary  # 2 chunks of 3 lanes per shape
        assert summary.lanes_run == 12, summary
        return table

    # the two-worker runs first: the first compiles every program afresh (the later ones read
    # them from the compilation cache); the one-worker reference, the same chunks one at a
    # time, comes last and compiles nothing new
    tables = []
    for repetition in range(10):
        tables.append(run(2))
        print("finished two-worker run", repetition, flush=True)
    reference = run(1)
    for repetition, table in enumerate(tables):
        same = table.drop(columns=["l2", "linf", "log_rel_l2", "log_rel_linf", "ergodicity", "noise_scale"]).equals(
            reference.drop(columns=["l2", "linf", "log_rel_l2", "log_rel_linf", "ergodicity", "noise_scale"]))
        close = ((table[["l2", "linf"]] - reference[["l2", "linf"]]).abs().max().max()
                 <= 1e-12 * reference[["l2", "linf"]].abs().max().max())
        print(json.dumps({"repetition": repetition, "rows": len(table), "same": bool(same), "close": bool(close)}),
              flush=True)
""")


def test_concurrent_chunks_with_background_compile_stress(env, tmp_path):
    """cai-fig4 (the one-shot method solves a linear system per lane: the LAPACK path that
    deadlocked) on 2 shapes (the second compiled while the first computes), vmapped
    micro-batches of lanes (the CPU default now runs lanes one at a time; batched lanes are
    what deadlocked), two workers, compiled afresh in the background thread each time: 10
    runs of 10 finish, each identical to a one-worker run of the same chunks (continuous
    metrics to 1e-12 relative, everything else exactly). An engine that batches LAPACK calls
    across threads hangs on this grid (at n ≤ 32 the LAPACK batches are small enough to run
    inline and would not)."""
    result = subprocess.run(
        [sys.executable, "-c", STRESS, str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 10, result.stdout
    assert all('"same": true' in line and '"close": true' in line for line in lines), result.stdout


WATCHDOG = textwrap.dedent("""
    import os, sys, tempfile, time
    import jax, jax.numpy as jnp, numpy as np
    import dpsim
    from dpsim.engine import Experiment, Method
    from dpsim.engine.execution import runner
    from dpsim.errors import RunStalled
    from dpsim.models import sample_er_comparisons

    def stall_at_p1(p):  # host callback: sleeps on the second data point when asked to
        if os.environ.get("STALL") and np.any(np.asarray(p) == 1.0):
            time.sleep(60)
        return np.zeros(np.shape(p))

    def wins(key, ctx):
        wait = jax.pure_callback(stall_at_p1, jax.ShapeDtypeStruct((), jnp.float64), ctx.data["p"],
                                 vmap_method="sequential")
        return {"wins": ctx.sample.sum() + wait}

    toy = Experiment(name="toy-stall", title="toy", axes={"n_items": [6], "p": [0.5, 1.0], "eps": [1.0]},
                     shape_axes=("n_items",), analysis_axes=("eps",), truth=lambda key, shape: {},
                     generate=lambda key, shape, truth, data: sample_er_comparisons(key, jnp.zeros(6), data["p"]),
                     methods={"sum": Method(wins, ("wins",))}, reps=4)
    # compiled first, without the stall and with no tight watchdog, so that the 3 s below time only
    # the chunks (the run reuses this process's program) and a slow compile on a busy machine
    # cannot be mistaken for the stall
    stall = os.environ.pop("STALL", None)
    with tempfile.TemporaryDirectory() as warm:
        runner.run_experiment(toy, out=warm, chunk=4, workers=1, progress=False, watchdog=600)
    if stall:
        os.environ["STALL"] = stall
    try:
        s = runner.run_experiment(toy, out=sys.argv[1], chunk=4, workers=1, progress=False, watchdog=3)
    except RunStalled as exc:
        print("STALLED:", exc, flush=True)
        os._exit(3)
    print("lanes_run", s.lanes_run, flush=True)
""")


def test_watchdog_stops_a_stalled_run_and_rerun_resumes(env, tmp_path):
    """The second chunk never finishes: after 3 s without progress the run stops with a
    message naming what it waited for; the first chunk is on disk; re-running (without the
    stall) computes only the missing chunk. Each process compiles the program before the
    watched run (a run of its own elsewhere), so the 3 s never include a compilation, which
    could take that long on a loaded machine (the suite runs on two workers)."""
    out = tmp_path / "run"
    stalled = subprocess.run(
        [sys.executable, "-c", WATCHDOG, str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "STALL": "1"},
        cwd=ROOT,
    )
    assert stalled.returncode == 3, stalled.stdout + stalled.stderr[-2000:]
    message = stalled.stdout.strip().splitlines()[-1]
    assert (
        "no progress for 3 s while waiting for a chunk of toy-stall at n_items=6 (chunk 2/2)"
        in message
    )
    assert "run the same command again to resume" in message
    assert len(list((out / "parts").glob("part-*.parquet"))) == 1
    resumed = subprocess.run(
        [sys.executable, "-c", WATCHDOG, str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert resumed.stdout.strip().splitlines()[-1] == "lanes_run 4"
    assert len(list((out / "parts").glob("part-*.parquet"))) == 2
