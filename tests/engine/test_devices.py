"""Several devices in one process: a chunk's lanes sharded across the visible devices
(``shard_map`` over a one-axis mesh, :func:`dpsim.engine.execution.program.jitted_chunk_fn`), the
chunk padded to a multiple of the device count (:func:`dpsim.engine.execution.batching.chunk_layout`),
``$DPSIM_DEVICES`` to keep to fewer.

Four CPU devices are forced with ``XLA_FLAGS=--xla_force_host_platform_device_count=4``,
which XLA reads when JAX starts: so the sharded runs happen in a fresh interpreter, and their
tables are compared with runs on this process's one device.

The tables must be equal to the last bit. Keys come from (seed, grid point, replicate,
method), never from a lane's place in a batch; and the per-lane program computes each lane
with the same shapes whatever the sharding: on CPU lanes go one at a time (micro-batch 1)
on one device or four, and with ``micro_batch=2`` both layouts vmap micro-batches of exactly
2 lanes. Only the number of micro-batches per ``lax.map`` differs, which changes no
arithmetic. (A layout whose vmapped micro-batch differs would be equal only up to float
rounding; none is tested here.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dpsim.errors import UsageError
from dpsim.engine.execution import batching as batching_module
from dpsim.engine.storage import store
from dpsim.engine.execution.batching import Batching, batching, chunk_layout, device_count
from dpsim.engine.execution.runner import run_experiment
from toy import toy_experiment

DEVICES = 4
REPS = 5  # 2 data points (p) × 5 replicates = 10 lanes per shape point: not a multiple of 4
GRID = {"n_items": [8]}
KEY = ["point", "rep", "method"]
# name → run_experiment settings; each is run on 4 forced devices and on this process's one
CASES = {
    "default": {},  # 10 lanes → one chunk of 12 (2 padding lanes), 3 per device
    "micro": {
        "micro_batch": 2,
        "chunk": 6,
    },  # chunks of 8 (micro-batches of 2 on each device), the last padded
}

SCRIPT = r"""
import json, os, sys
import jax
from dpsim.engine.execution import executors, runner
from dpsim.engine.execution.batching import batching
from dpsim.engine.execution.runner import plan_run, run_experiment
from toy import toy_experiment

out, reps, grid, cases = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
report = {"visible": len(jax.devices()), "output_devices": []}
compile_step = executors.compiled_chunk_fn

def recording(*args):
    # the devices each chunk's output lives on: the program really is sharded
    program = compile_step(*args)
    def call(arguments):
        output = program.fn(arguments)
        report["output_devices"].append(len(jax.tree_util.tree_leaves(output)[0].sharding.device_set))
        return output
    return program._replace(fn=call)

executors.compiled_chunk_fn = recording
for name, settings in cases.items():
    exp = toy_experiment("t", reps=reps, **grid)
    plan = plan_run(exp, out=f"{out}/{name}", **settings)
    report[name] = {"plan": plan.describe(), "steps": [[s.size, s.micro, s.devices, len(s.chunks)] for s in plan.steps]}
    run_experiment(exp, out=f"{out}/{name}", progress=False, **settings)
os.environ["DPSIM_DEVICES"] = "1"
one = batching()
report["forced_one"] = {"devices": one.devices, "workers": one.workers}
print(json.dumps(report))
"""


def _table(path: Path) -> pd.DataFrame:
    df = store.load_results(path)
    return df.sort_values(KEY).reset_index(drop=True)[sorted(df.columns)]


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """The CASES run on 4 forced CPU devices in a fresh interpreter: (its report, its folder)."""
    out = tmp_path_factory.mktemp("sharded")
    tests = Path(__file__).resolve().parent
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "DPSIM_JAX_CACHE": "off",
        "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={DEVICES}".strip(),
        "PYTHONPATH": os.pathsep.join(
            [str(tests.parent), str(tests), os.environ.get("PYTHONPATH", "")]
        ),
    }
    env.pop("DPSIM_DEVICES", None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(out), str(REPS), json.dumps(GRID), json.dumps(CASES)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=out,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), out


@pytest.mark.parametrize("case", list(CASES))
def test_four_devices_give_the_one_device_table(sharded, case, tmp_path):
    report, out = sharded
    assert report["visible"] == DEVICES
    assert report["output_devices"] and set(report["output_devices"]) == {DEVICES}
    ours = tmp_path / case
    run_experiment(toy_experiment("t", reps=REPS, **GRID), out=ours, progress=False, **CASES[case])
    one, four = _table(ours), _table(out / case)
    assert len(four) == REPS * 2 * 4 * 2  # lanes × analysis points × methods: no padding row kept
    assert not four.duplicated(KEY).any()
    pd.testing.assert_frame_equal(four, one, check_exact=True)


def test_chunks_are_padded_to_a_multiple_of_the_devices(sharded):
    report, _ = sharded
    # 10 lanes: one chunk of 12 on 4 devices (3 lanes each, one at a time)
    assert report["default"]["steps"] == [[12, 1, DEVICES, 1]]
    # chunk 6 asked, micro-batch 2: each device gets 2 lanes, chunks of 8 (10 lanes → 2 chunks)
    assert report["micro"]["steps"] == [[8, 2, DEVICES, 2]]
    assert "4 cpu devices" in report["default"]["plan"][0]
    assert "1 worker(s)" in report["default"]["plan"][0]  # sharding replaces the chunk threads


def test_dpsim_devices_1_keeps_one_device_and_the_chunk_threads(sharded):
    report, _ = sharded
    assert report["forced_one"]["devices"] == 1
    assert report["forced_one"]["workers"] == batching_module.default_workers()


@pytest.mark.parametrize(
    "n_lanes, requested, micro_batch, want",
    [
        (10, None, None, (12, 1)),  # 3 lanes per device
        (4, None, None, (4, 1)),
        (1, None, None, (4, 1)),  # one lane and 3 padding lanes
        (10, 6, 2, (8, 2)),  # a requested size rounded up to devices × micro-batch
        (10, 3, None, (4, 1)),  # ceil(10/3) = 4 chunks of 3 lanes → 4 (one per device)
    ],
)
def test_chunk_layout_with_devices(n_lanes, requested, micro_batch, want):
    policy = batching("cpu", micro_batch=micro_batch)
    policy = Batching(**{**policy.__dict__, "devices": DEVICES, "workers": 1})
    size, micro = chunk_layout(n_lanes, 512, 4, requested, 1, policy)
    assert (size, micro) == want
    assert size % (DEVICES * micro) == 0


def test_one_device_layout_is_unchanged():
    policy = batching("cpu")
    assert policy.devices == 1
    assert chunk_layout(480, 8 * 300**2, 7, None, 2, policy) == (240, 1)


@pytest.mark.parametrize("text", ["0", "-1", "two", "2"])
def test_bad_dpsim_devices_is_refused_naming_it(monkeypatch, text):
    monkeypatch.setenv("DPSIM_DEVICES", text)  # this process sees 1 device
    with pytest.raises(UsageError, match=f"DPSIM_DEVICES='{text}'"):
        device_count()


@pytest.mark.parametrize("text, want", [("1", 1), ("all", 1), (" all ", 1)])
def test_dpsim_devices(monkeypatch, text, want):
    monkeypatch.setenv("DPSIM_DEVICES", text)
    assert device_count() == want
