"""CellArrays: arrays built on the host once per cell of a few axes and handed to every lane
(data level) or analysis point (analysis level) of that cell, zero-padded to one shape per
program; the plan shows them; results do not depend on the micro-batch."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from dpsim.engine import CellArrays, Experiment, Method
from dpsim.engine.execution import planning
from dpsim.engine.storage import store
from dpsim.engine.execution.runner import plan_run, run_experiment

BUILT: list = []


def ramp(point):
    """A data-level cell of n_users: [100·L, 100·L + 1, …] of length L (lengths differ)."""
    BUILT.append(("ramp", point["n_users"]))
    return {"v": 100.0 * point["n_users"] + np.arange(point["n_users"])}


def scaled(point):
    """An analysis-level cell of (n_users, eps): [L·ε, −L·ε]."""
    BUILT.append(("scaled", point["n_users"], point["eps"]))
    return {"v": np.asarray([point["n_users"] * point["eps"], -point["n_users"] * point["eps"]])}


def read_cells(key, ctx):
    ramp_cell, scaled_cell = ctx.data["ramp"], ctx.analysis["scaled"]
    row = ramp_cell.tables["v"][ramp_cell.index]
    return {
        "ramp_first": row[0],
        "ramp_sum": jnp.sum(row),
        "ramp_width": jnp.asarray(row.shape[0], jnp.float64),
        "scaled": scaled_cell.tables["v"][scaled_cell.index, 0],
        "scaled_neg": scaled_cell.tables["v"][scaled_cell.index, 1],
    }


def cell_experiment() -> Experiment:
    return Experiment(
        name="cells",
        title="cell arrays",
        axes={"n_items": [3], "n_users": [2, 5, 7], "eps": [1.0, 2.0]},
        shape_axes=("n_items",),
        analysis_axes=("eps",),
        truth=lambda key, shape: {},
        generate=lambda k, s, t, d: {},
        methods={
            "read": Method(
                read_cells, ("ramp_first", "ramp_sum", "ramp_width", "scaled", "scaled_neg")
            )
        },
        reps=3,
        axis_types={},
        cell_arrays=(
            CellArrays("ramp", ("n_users",), ramp),
            CellArrays("scaled", ("n_users", "eps"), scaled),
        ),
    )


def test_each_lane_reads_its_own_cell(tmp_path):
    BUILT.clear()
    planning.clear_cell_cache()
    run_experiment(cell_experiment(), out=tmp_path / "a", progress=False)
    df = store.load_results(tmp_path / "a")
    assert len(df) == 3 * 2 * 3
    L, eps = df["n_users"].to_numpy(), df["eps"].to_numpy()
    np.testing.assert_array_equal(df["ramp_first"], 100.0 * L)
    np.testing.assert_array_equal(
        df["ramp_sum"], 100.0 * L * L + L * (L - 1) / 2
    )  # the padding is zeros
    np.testing.assert_array_equal(df["ramp_width"], 7.0)  # padded to the largest
    np.testing.assert_array_equal(df["scaled"], L * eps)
    np.testing.assert_array_equal(df["scaled_neg"], -L * eps)
    # each distinct cell built once for the whole run (one step), not per lane or chunk
    assert sorted(b for b in BUILT if b[0] == "ramp") == [("ramp", 2), ("ramp", 5), ("ramp", 7)]
    assert len([b for b in BUILT if b[0] == "scaled"]) == 6
    run_experiment(cell_experiment(), out=tmp_path / "b", progress=False, chunk=4, micro_batch=2)
    other = store.load_results(tmp_path / "b")
    key = ["n_users", "eps", "rep"]
    np.testing.assert_array_equal(
        df.sort_values(key)[["scaled", "ramp_sum"]].to_numpy(),
        other.sort_values(key)[["scaled", "ramp_sum"]].to_numpy(),
    )


def test_a_process_builds_a_cell_once_within_the_cache_bound(tmp_path, monkeypatch):
    """A second run of the same grid in one process reuses the cells built by the first (the
    same rows); past CELL_CACHE_BYTES the least recently used cells are built again."""
    planning.clear_cell_cache()
    BUILT.clear()
    run_experiment(cell_experiment(), out=tmp_path / "a", progress=False)
    first = len(BUILT)
    assert first == 3 + 6
    run_experiment(cell_experiment(), out=tmp_path / "b", progress=False)
    assert len(BUILT) == first  # nothing built again
    key = ["n_users", "eps", "rep"]
    a, b = (store.load_results(tmp_path / n).sort_values(key) for n in "ab")
    np.testing.assert_array_equal(
        a[["ramp_sum", "scaled", "scaled_neg"]].to_numpy(),
        b[["ramp_sum", "scaled", "scaled_neg"]].to_numpy(),
    )
    # a bound of 40 bytes holds at most 2 of the 16-byte "scaled" cells (and no 56-byte ramp):
    # the next plan builds every ramp cell and at least 4 of the 6 scaled cells again
    monkeypatch.setattr(planning, "CELL_CACHE_BYTES", 40)
    planning.clear_cell_cache()
    plan_run(cell_experiment())
    BUILT.clear()
    plan_run(cell_experiment())
    assert sum(b[0] == "ramp" for b in BUILT) == 3 and sum(b[0] == "scaled" for b in BUILT) >= 4
    assert sum(v.nbytes for cell in planning._CELL_CACHE.values() for v in cell.values()) <= 40
    planning.clear_cell_cache()


def test_the_plan_shows_the_cells():
    plan = plan_run(cell_experiment())
    text = "\n".join(plan.describe())
    assert (
        "cell arrays (built once, shared by its chunks): ramp 3 cell(s), scaled 6 cell(s)" in text
    )
    cells = plan.steps[0].cells
    assert cells.nbytes == 3 * 7 * 8 + 6 * 2 * 8
    assert plan.chunk_bytes(plan.steps[0]) >= cells.nbytes


def test_bad_declarations_are_named():
    with pytest.raises(ValueError, match="cell arrays 'ramp' depend on \\['users'\\]"):
        Experiment(
            name="x",
            title="",
            axes={"n_items": [3]},
            shape_axes=("n_items",),
            analysis_axes=(),
            truth=lambda k, s: {},
            generate=lambda k, s, t, d: {},
            methods={"read": Method(read_cells, ("ramp_first",))},
            reps=1,
            cell_arrays=(CellArrays("ramp", ("users",), ramp),),
        )
