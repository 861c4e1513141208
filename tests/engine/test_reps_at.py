"""``run_experiment(reps_at=…)``: replicates per data point (the engine seam of ``dpsim solve``
and ``verify --until-decided``). Only the named points are run, each up to its own count, and
replicate r of a point is the same draw as in an ordinary run (keys never come from the request)."""

from __future__ import annotations

import pandas as pd
import pytest

from dpsim.errors import UsageError
from dpsim.engine.execution.runner import run_experiment
from dpsim.engine.storage.store import load_results
from toy_paper.figures.size import SIZE

COLUMNS = ["point", "rep", "method", "n_items", "p", "relative_hamming"]


def data_id(n_items: int, p: float) -> int:
    shape = SIZE.resolve_shape({"n_items": n_items, "k": 2})
    return SIZE.point_id({**shape, "p": p})


def _sorted(table: pd.DataFrame) -> pd.DataFrame:
    return table[COLUMNS].sort_values(["point", "rep", "method"]).reset_index(drop=True)


def test_only_named_points_each_to_its_own_count_and_same_draws(tmp_path):
    wanted = {data_id(6, 0.5): 3, data_id(10, 1.0): 7}
    run_experiment(SIZE, reps_at=wanted, out=tmp_path / "some", progress=False)
    some = load_results(tmp_path / "some")
    counts = some.groupby(["n_items", "p"])["rep"].agg(["max", "nunique"])
    assert counts.to_dict("index") == {
        (6, 0.5): {"max": 2, "nunique": 3},
        (10, 1.0): {"max": 6, "nunique": 7},
    }

    run_experiment(SIZE, reps=7, out=tmp_path / "all", progress=False)
    full = load_results(tmp_path / "all")
    same = full.merge(some[["point", "rep", "method"]], on=["point", "rep", "method"])
    pd.testing.assert_frame_equal(_sorted(some), _sorted(same), check_exact=True)

    # more replicates at one point later: only the missing ones are computed
    summary = run_experiment(
        SIZE, reps_at={data_id(6, 0.5): 5}, out=tmp_path / "some", progress=False
    )
    assert summary.lanes_run == 2
    assert load_results(tmp_path / "some").query("n_items == 6 and p == 0.5")["rep"].nunique() == 5


@pytest.mark.parametrize(
    "reps_at, message",
    [
        ({123: 3}, "data point id 123"),
        ({data_id(6, 0.5): 0}, "must be an integer ≥ 1"),
        ({}, "names no data point"),
    ],
)
def test_bad_reps_at_is_refused_writing_nothing(tmp_path, reps_at, message):
    with pytest.raises(UsageError, match=message):
        run_experiment(SIZE, reps_at=reps_at, out=tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


def test_a_range_runs_only_its_replicates(tmp_path):
    run_experiment(SIZE, reps_at={data_id(6, 0.5): (2, 5)}, out=tmp_path / "run", progress=False)
    assert sorted(load_results(tmp_path / "run")["rep"].unique()) == [2, 3, 4]
    with pytest.raises(UsageError, match=r"reps_at\[.*\]=\(3, 3\) must be a range"):
        run_experiment(
            SIZE, reps_at={data_id(6, 0.5): (3, 3)}, out=tmp_path / "bad", progress=False
        )
