"""The CPU's small-lane rule (:func:`dpsim.experiment.batching.cpu_small_lane_micro`): small
lanes in a big step are vmapped in micro-batches of 32, everything else runs one lane at a
time, ``--micro-batch`` overrides, and ``--dry-run`` shows the choice. That results do not
depend on the micro-batch beyond float rounding is tested in tests/test_runner.py
(``test_results_do_not_depend_on_micro_batch_size``)."""
from __future__ import annotations

import jax
import pytest

from dpsim.experiment import registry, runner
from dpsim.experiment.batching import (SMALL_LANE_BYTES_CPU, SMALL_LANE_MICRO_CPU, SMALL_LANE_MIN_WORK_CPU,
                                       batching, chunk_layout, cpu_small_lane_micro)

XU_M10_LANE = 12_200          # bytes of one xu-fig4 lane at m = 10 (its lane_bytes)
CAI_N300_LANE = 8 * 300**2 * 10


@pytest.mark.parametrize("n_lanes, lane_bytes, n_analysis, want", [
    (SMALL_LANE_MIN_WORK_CPU, XU_M10_LANE, 1, SMALL_LANE_MICRO_CPU),         # at the threshold
    (SMALL_LANE_MIN_WORK_CPU - 1, XU_M10_LANE, 1, 1),                         # just below it
    (SMALL_LANE_MIN_WORK_CPU // 7 + 1, XU_M10_LANE, 7, SMALL_LANE_MICRO_CPU),  # analysis points count
    (3200, XU_M10_LANE, 1, 1),                                  # xu-fig4 at the paper's 200 reps
    (10**6, CAI_N300_LANE, 7, 1),                               # big lanes: never vmapped
    (10**6, int(SMALL_LANE_BYTES_CPU) + 1, 1, 1),
])
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
    forced = runner.plan_run(experiment, reps=2000, overrides={"n_items": [10]}, micro_batch=1).describe()
    assert f"micro-batch {SMALL_LANE_MICRO_CPU};" in big[1]
    assert "micro-batch 1;" in small[1] and "micro-batch 1;" in forced[1]
