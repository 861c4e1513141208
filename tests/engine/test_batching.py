"""The CPU's small-lane rule (:func:`dpsim.engine.execution.batching.cpu_small_lane_micro`): small
lanes in a big step are vmapped in micro-batches of 32, everything else runs one lane at a
time, except a short step whose vmapped program was compiled before
(:func:`dpsim.engine.execution.batching.small_lane_layout`: the wide program's compile against the run
it saves), ``--micro-batch`` overrides, and ``--dry-run`` shows the choice. That results do not
depend on the micro-batch beyond float rounding is tested in tests/engine/test_runner.py
(``test_results_do_not_depend_on_micro_batch_size``), and here for a calibrated run, whose
first chunks are computed at several micro-batches.

Batching from measurement (:mod:`dpsim.engine.execution.calibration`, off in the rest of the suite):
a calibration is cached per (program, device) and reused, ``--micro-batch`` overrides it, a
corrupted cache is ignored with one warning and rewritten, and a run at other ``--reps``
reuses the chunk layout compiled before. Calibration timings come from an injected clock."""

from __future__ import annotations

import json
import warnings

import jax
import pytest

from dpsim.errors import DpsimWarning, UsageError
from dpsim.engine.execution import calibration, program, runner
from dpsim.engine import registry
from dpsim.engine.storage import store
from dpsim.engine.execution.batching import (
    SMALL_LANE_BYTES_CPU,
    SMALL_LANE_MICRO_CPU,
    SMALL_LANE_MIN_WORK_CPU,
    SMALL_LANE_SAVING_CPU,
    VMAP_COMPILE_FACTOR_CPU,
    batching,
    chunk_layout,
    cpu_small_lane_micro,
    layout_lanes,
    reuse_layout,
    small_lane_layout,
)
from dpsim.engine.execution.executors import LocalExecutor
from test_runner import assert_same_results, table
from toy import toy_experiment

XU_M10_LANE = 12_200  # bytes of one xu-fig4 lane at m = 10 (its lane_bytes)
CAI_N300_LANE = 8 * 300**2 * 10


@pytest.mark.parametrize(
    "n_lanes, lane_bytes, n_analysis, want",
    [
        (SMALL_LANE_MIN_WORK_CPU, XU_M10_LANE, 1, SMALL_LANE_MICRO_CPU),  # at the threshold
        (SMALL_LANE_MIN_WORK_CPU - 1, XU_M10_LANE, 1, 1),  # just below it
        (
            SMALL_LANE_MIN_WORK_CPU // 7 + 1,
            XU_M10_LANE,
            7,
            SMALL_LANE_MICRO_CPU,
        ),  # analysis points count
        (3200, XU_M10_LANE, 1, 1),  # xu-fig4 at the paper's 200 reps
        (10**6, CAI_N300_LANE, 7, 1),  # big lanes: never vmapped
        (10**6, int(SMALL_LANE_BYTES_CPU) + 1, 1, 1),
    ],
)
def test_small_lane_rule(n_lanes, lane_bytes, n_analysis, want):
    assert cpu_small_lane_micro(n_lanes, lane_bytes, n_analysis, batching("cpu")) == want


def test_chunk_layout_uses_the_rule_on_cpu():
    size, micro = chunk_layout(32_000, XU_M10_LANE, 1, None, 2, batching("cpu"))
    assert micro == SMALL_LANE_MICRO_CPU and size == 16_000 and size % micro == 0
    assert chunk_layout(3200, XU_M10_LANE, 1, None, 2, batching("cpu")) == (1600, 1)


@pytest.mark.parametrize("micro_batch", [1, 8])
def test_micro_batch_overrides_the_rule(micro_batch):
    policy = batching("cpu", micro_batch=micro_batch)
    assert cpu_small_lane_micro(32_000, XU_M10_LANE, 1, policy) == 1
    assert chunk_layout(32_000, XU_M10_LANE, 1, None, 2, policy)[1] == micro_batch


def test_accelerators_keep_their_policy():
    gpu = batching("gpu", memory=16 * 2**30)
    assert gpu.small_micro == 1
    assert cpu_small_lane_micro(10**6, XU_M10_LANE, 1, gpu) == 1


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the rule is the CPU's")
def test_dry_run_shows_the_choice():
    experiment, _ = registry.experiment("xu-fig4")
    big = runner.plan_run(experiment, reps=2000, overrides={"n_items": [10]}).describe()
    small = runner.plan_run(experiment, reps=20, overrides={"n_items": [10]}).describe()
    forced = runner.plan_run(
        experiment, reps=2000, overrides={"n_items": [10]}, micro_batch=1
    ).describe()
    assert f"micro-batch {SMALL_LANE_MICRO_CPU};" in big[1]
    assert "micro-batch 1;" in small[1] and "micro-batch 1;" in forced[1]


# ---------------------------------------------------------------------------------------------
# Batching from measurement

TOY = {"n_items": [8]}  # one program; 2 data points × 4 analysis points


@pytest.fixture
def cache_file(monkeypatch, tmp_path):
    """Calibration on (``always``), a cache file of its own, and two CPU candidates (1, 2)
    so that the test compiles little."""
    path = tmp_path / "batching.json"
    monkeypatch.setenv(calibration.MODE_VARIABLE, "always")
    monkeypatch.setenv(calibration.CACHE_VARIABLE, str(path))
    monkeypatch.setattr(calibration, "CANDIDATES_CPU", (1, 2))
    return path


def clock(*readings):
    """A fake clock returning ``readings`` in turn (two per timed chunk: start, end)."""
    values = iter(readings)
    return lambda: next(values)


def no_clock():
    raise AssertionError("calibrated again")


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the CPU's candidates")
def test_calibration_is_cached_reused_and_changes_no_result(cache_file, monkeypatch, tmp_path):
    experiment = toy_experiment("calibrated", reps=12, **TOY)
    plan = runner.plan_run(experiment, out=tmp_path / "a", chunk=4)
    step = plan.steps[0]
    assert step.calibrate == (1, 2) and step.size == 4 and len(step.chunks) == 6
    assert "calibrated while it runs at 1, 2" in plan.describe()[1]
    uncalibrated = runner.plan_run(
        experiment, out=tmp_path / "a", chunk=4, calibrate=False
    )  # Ray's dry run
    assert uncalibrated.steps[0].calibrate == () and "calibrated" not in uncalibrated.describe()[1]
    executor = LocalExecutor()
    executor.clock = clock(0.0, 1.0, 1.0, 1.5)  # micro-batch 1: 0.25 s per lane, 2: 0.125 s
    runner.run_experiment(
        experiment, out=tmp_path / "a", chunk=4, progress=False, executor=executor
    )
    entry = next(iter(json.loads(cache_file.read_text()).values()))
    assert (
        entry["micro"] == 2
        and entry["timings"] == {"1": 0.25, "2": 0.125}
        and entry["layouts"] == [[4, 2]]
    )
    recorded = store.read_manifest(tmp_path / "a")["history"][-1]["batching"]
    assert recorded[0]["micro"] == 2 and recorded[0]["from"].startswith("calibrated ")
    assert "1 → 250 ms/lane, 2 → 125 ms/lane" in recorded[0]["from"]
    # the rows of the calibration chunks (micro-batches 1 and 2) and the rest (2): as one lane at a time
    runner.run_experiment(experiment, out=tmp_path / "one", chunk=4, progress=False, micro_batch=1)
    assert_same_results(table(tmp_path / "a"), table(tmp_path / "one"))
    # a re-run at other reps reads the cache and does not calibrate
    monkeypatch.setenv(calibration.MODE_VARIABLE, "auto")
    again = runner.plan_run(experiment, reps=20, out=tmp_path / "b")
    assert again.steps[0].calibrate == () and again.steps[0].micro == 2
    assert "micro-batch 2 (calibrated " in again.describe()[1]
    executor = LocalExecutor()
    executor.clock = no_clock
    runner.run_experiment(
        experiment, reps=20, out=tmp_path / "b", progress=False, executor=executor
    )
    # --micro-batch overrides the cached choice
    forced = runner.plan_run(experiment, reps=20, out=tmp_path / "c", micro_batch=1)
    assert forced.steps[0].micro == 1 and forced.steps[0].calibrate == ()
    assert "micro-batch 1 (--micro-batch)" in forced.describe()[1]
    # another program (a mutant: same name, another definition) misses the cache
    other = toy_experiment(
        "calibrated", reps=12, methods={"borda": experiment.methods["borda"]}, **TOY
    )
    missed = runner.plan_run(other, reps=20, out=tmp_path / "d").steps[0]
    assert missed.micro == 1 and missed.micro_from.startswith("rule: ")


def test_cache_key_names_program_and_device():
    identity, shape = ("toy", "code", "digest"), {"n_items": 8}
    key = calibration.step_key(identity, shape, {}, "cpu:cpu×1 jax 0.4")
    assert key == calibration.step_key(identity, dict(shape), {}, "cpu:cpu×1 jax 0.4")
    assert (
        len(
            {
                key,
                calibration.step_key(identity, shape, {}, "gpu:H100×1 jax 0.4"),
                calibration.step_key(identity, shape, {}, "cpu:cpu×2 jax 0.4"),
                calibration.step_key(("toy", "code", "other"), shape, {}, "cpu:cpu×1 jax 0.4"),
                calibration.step_key(identity, {"n_items": 12}, {}, "cpu:cpu×1 jax 0.4"),
                calibration.step_key(identity, shape, {"link": "probit"}, "cpu:cpu×1 jax 0.4"),
            }
        )
        == 6
    )


def test_a_corrupted_cache_is_ignored_once_and_rewritten(tmp_path, monkeypatch):
    path = tmp_path / "batching.json"
    path.write_text("{not json")
    monkeypatch.setattr(calibration, "_warned", set())
    with pytest.warns(DpsimWarning, match="unreadable"):
        assert calibration.load(path) == {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert calibration.load(path) == {}  # one warning per file
        entry = calibration.updated_entry(
            None,
            micro=8,
            size=64,
            source="calibrated",
            what="x",
            timings={1: 2e-4, 8: 1e-4},
            today="2026-11-26",
        )
        calibration.save(path, {"k": entry})
        assert calibration.load(path) == {"k": entry}
    assert json.loads(path.read_text())["k"]["micro"] == 8
    assert not list(tmp_path.glob("*.tmp"))


def test_calibration_rule():
    assert calibration.calibration_cost(3, 2.0, 1.0, 2) == 2 * 2.0 + 3 * 0.5
    assert calibration.should_calibrate(55.0, 5.5, 6, 3, "auto", cached=False)
    assert not calibration.should_calibrate(54.0, 5.5, 6, 3, "auto", cached=False)  # costs > 10 %
    assert not calibration.should_calibrate(1e6, 5.5, 6, 3, "auto", cached=True)
    assert not calibration.should_calibrate(
        1e6, 5.5, 5, 3, "always", cached=False
    )  # too few chunks
    assert calibration.should_calibrate(1.0, 5.5, 6, 3, "always", cached=True)
    assert not calibration.should_calibrate(1e6, 0.0, 100, 3, "off", cached=False)
    assert calibration.pick({1: 3e-4, 8: 2e-4, 32: 2e-4}) == 8
    assert calibration.candidates("gpu", 1e6, 1e9) == (64, 512)
    assert calibration.candidates("gpu", 1e5, 1e9) == (64, 512, 2048)
    assert calibration.candidates("gpu", 1e9, 1e9) == (64,)


def test_reuse_layout():
    """A layout compiled before is reused while padding costs less than a compilation and at
    most 1.5× the step's own work; else the step's own."""
    assert reuse_layout(4800, 2, (2400, 1), [(1600, 1)], 2.0, 1e-4) == (
        1600,
        1,
    )  # 3200 ≤ 3600 lanes
    assert reuse_layout(4800, 2, (2400, 1), [(1600, 1)], 2.0, 1e-2) == (
        2400,
        1,
    )  # padding costs 8 s
    assert reuse_layout(4800, 2, (2400, 1), [(65536, 1)], 1e9, 1e-9) == (2400, 1)  # 27× the work
    assert reuse_layout(4800, 2, (2400, 1), [(2400, 1), (1600, 1)], 2.0, 1e-4) == (2400, 1)
    assert reuse_layout(4800, 2, (2400, 1), [(2, 1)], 1e9, 1e-9) == (2400, 1)  # 1200× the chunks


def test_small_lane_layout_weighs_the_wide_compile_against_the_run():
    """A short step of small lanes is vmapped where its wide program was compiled before (no
    compile to pay, each lane cheaper), not where the wide program would compile first: one
    run does not earn the longer compile back. A wide layout compiled before that pads beyond
    reuse_layout's bounds is not taken."""
    one, wide = (60, 1), (60, 30)
    assert small_lane_layout(120, 2, one, wide, [], 2.0, 4e-4) == one  # nothing compiled
    assert small_lane_layout(120, 2, one, wide, [[60, 1]], 2.0, 4e-4) == one  # the one-lane program
    assert small_lane_layout(120, 2, one, wide, [[60, 30]], 2.0, 4e-4) == wide  # the wide one
    assert small_lane_layout(120, 2, one, wide, [[60, 1], [64, 32]], 2.0, 4e-4) == (
        64,
        32,
    )  # 128 ≤ 1.5 × 120 lanes
    assert small_lane_layout(120, 2, one, wide, [[4096, 32]], 2.0, 4e-4) == one  # 34× the work
    # long enough, the wide program pays for its own compile: the break-even by the constants
    extra = (VMAP_COMPILE_FACTOR_CPU - 1) * 2.0
    lanes_even = extra / (SMALL_LANE_SAVING_CPU * 4e-4)  # lane-computations on the critical path
    big = int(2.2 * lanes_even)
    own = chunk_layout(big, 1000, 1, None, 2, batching("cpu", micro_batch=1))
    assert small_lane_layout(big, 2, own, (own[0], 32), [], 2.0, 4e-4) == (own[0], 32)
    assert layout_lanes(big, own[0], 2) * SMALL_LANE_SAVING_CPU * 4e-4 > extra
    small = int(1.8 * lanes_even)
    own = chunk_layout(small, 1000, 1, None, 2, batching("cpu", micro_batch=1))
    assert small_lane_layout(small, 2, own, (own[0], 32), [], 2.0, 4e-4) == own


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the rule is the CPU's")
def test_a_short_step_uses_its_wide_program_compiled_before(monkeypatch, tmp_path):
    """The plan of a short step of small lanes: one lane at a time while only that program is
    cached; vmapped once the calibration cache records its wide layout (e.g. a run at
    --micro-batch 32 compiled it, or a big run); ``off`` reads no cache; --micro-batch wins."""
    path = tmp_path / "batching.json"
    monkeypatch.setenv(calibration.MODE_VARIABLE, "auto")
    monkeypatch.setenv(calibration.CACHE_VARIABLE, str(path))
    experiment = toy_experiment("short", reps=120, **TOY)  # 2 data points: 240 lanes, 2 chunks
    first = runner.plan_run(experiment, out=tmp_path / "a", workers=2).steps[0]
    assert (first.size, first.micro) == (
        120,
        1,
    ) and first.micro_from == "rule: one lane at a time on CPU"
    calibration.save(path, {first.key: {"what": "toy", "layouts": [[120, 1]]}})
    assert runner.plan_run(experiment, out=tmp_path / "a", workers=2).steps[0].micro == 1
    calibration.save(path, {first.key: {"what": "toy", "layouts": [[120, 30], [120, 1]]}})
    plan = runner.plan_run(experiment, out=tmp_path / "a", workers=2)
    assert (plan.steps[0].size, plan.steps[0].micro) == (120, 30)
    assert (
        "micro-batch 30 (rule: small lanes, their vmapped program compiled before)"
        in plan.describe()[1]
    )
    assert (
        runner.plan_run(experiment, out=tmp_path / "a", workers=2, micro_batch=1).steps[0].micro
        == 1
    )
    monkeypatch.setenv(calibration.MODE_VARIABLE, "off")
    assert runner.plan_run(experiment, out=tmp_path / "a", workers=2).steps[0].micro == 1


def test_other_reps_reuse_the_compiled_chunk_layout(cache_file, monkeypatch, tmp_path):
    """``--reps 12`` then ``--reps 18`` into another folder: the same chunk shape, so no new program."""
    monkeypatch.setenv(calibration.MODE_VARIABLE, "auto")
    experiment = toy_experiment("reused", reps=12, **TOY)
    runner.run_experiment(experiment, out=tmp_path / "a", progress=False, workers=2)
    first = store.read_manifest(tmp_path / "a")["history"][-1]["batching"][0]
    compiled = set(program._COMPILED)
    plan = runner.plan_run(experiment, reps=18, out=tmp_path / "b", workers=2)
    assert (plan.steps[0].size, plan.steps[0].micro) == (first["chunk"], first["micro"]) == (12, 1)
    assert "chunks of 12 as compiled before" in plan.describe()[1]
    runner.run_experiment(experiment, reps=18, out=tmp_path / "b", progress=False, workers=2)
    assert set(program._COMPILED) == compiled  # nothing compiled again
    monkeypatch.setenv(calibration.MODE_VARIABLE, "off")  # off: the step's own layout
    assert runner.plan_run(experiment, reps=18, out=tmp_path / "c", workers=2).steps[0].size == 18


def test_a_bad_calibration_mode_is_refused_before_anything_is_written(monkeypatch, tmp_path):
    monkeypatch.setenv(calibration.MODE_VARIABLE, "sometimes")
    with pytest.raises(
        UsageError, match="DPSIM_CALIBRATION='sometimes' must be one of auto, always, off"
    ):
        runner.run_experiment(toy_experiment("bad", **TOY), out=tmp_path / "x", progress=False)
    assert not (tmp_path / "x").exists()


def test_concurrent_writers_keep_every_entry(tmp_path):
    """Writers (the parts of a split) merge under a lock and replace the file atomically."""
    import threading

    path = tmp_path / "batching.json"

    def writer(w):
        for i in range(10):
            calibration.save(
                path,
                {
                    f"{w}-{i}": calibration.updated_entry(
                        None, micro=1, size=8, source="rule", what="x"
                    )
                },
            )

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(calibration.load(path)) == {f"{w}-{i}" for w in range(6) for i in range(10)}


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the CPU's candidates")
def test_calibration_keeps_a_chunk_size_it_would_have_to_round(cache_file, tmp_path):
    """--chunk wins over calibration: a chunk the candidates (1, 2) do not divide is kept as
    asked, planned without calibrating; one they divide is calibrated as before."""
    experiment = toy_experiment("calibrated", reps=12, **TOY)
    odd = runner.plan_run(experiment, out=tmp_path / "a", chunk=3).steps[0]
    assert odd.size == 3 and odd.calibrate == ()
    even = runner.plan_run(experiment, out=tmp_path / "b", chunk=4).steps[0]
    assert even.size == 4 and even.calibrate == (1, 2)
