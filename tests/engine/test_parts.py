"""A grid split into parts for array jobs (`dpsim run --part I/N`, `dpsim merge`): the parts
are disjoint and cover the grid whatever the chunk size, worker count or rows stored; parts
written into one folder, or into three folders then merged, make the table of one run to the
last bit; a whole-grid run resumes a folder whose parts did not all run; bad --part values and
bad merges are one-line errors that write nothing."""

from __future__ import annotations

import os
import shutil
import textwrap

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from dpsim.cli import main
from dpsim.errors import UsageError
from dpsim.engine.storage import store
from dpsim.engine.definition.grid import expand_grid
from dpsim.engine.execution.planning import check_part, lane_part, parse_part, plan_steps
from dpsim.engine.execution.runner import plan_run
from laplace_study import study_text
from toy import toy_experiment

KEY = ["point", "rep", "method"]
STUDY = study_text("parted", n_items=8, reps=5, region=(0.5, 2.0), figure=True).replace(
    '"n_items": [8], "p": [1.0]', '"n_items": [8, 12], "p": [0.5, 1.0]'
)
LANES = 2 * 2 * 5  # shapes × data points × reps


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A folder with the study file, and one whole run of it (``one``), the reference."""
    root = tmp_path_factory.mktemp("parts")
    (root / "study.py").write_text(textwrap.dedent(STUDY))
    old = os.environ.get("DPSIM_JAX_CACHE")
    os.environ["DPSIM_JAX_CACHE"] = "off"  # keep the test session's compilation cache
    _run(root, "--out", str(root / "one"))
    yield root
    if old is None:
        os.environ.pop("DPSIM_JAX_CACHE", None)
    else:
        os.environ["DPSIM_JAX_CACHE"] = old


def _run(root, *args, study="study.py"):
    assert main(["run", str(root / study), "--no-progress", *args]) == 0


def _table(out) -> pd.DataFrame:
    return store.load_results(out).sort_values(KEY).reset_index(drop=True)


def _lanes(steps) -> list[tuple[int, int]]:
    """(grid point id, rep) of every lane a plan computes."""
    return [
        (lane.data_id, lane.rep) for step in steps for chunk in step.chunks for lane in chunk.lanes
    ]


def _written(tmp_path) -> list[str]:
    return sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.name != "study.py")


# --- the assignment -------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7])
def test_parts_are_disjoint_and_cover_the_grid_whatever_the_chunking(n):
    grid = expand_grid(toy_experiment("t", reps=7))
    whole = _lanes(plan_steps(grid, 7, set()))
    assert len(whole) == len(set(whole)) == 2 * 2 * 7  # shapes × data points × reps
    layouts = [(None, 1), (None, 3), (1, 1), (2, 4), (5, 2)]
    seen = {}
    for chunk, workers in layouts:
        parts = [
            _lanes(plan_steps(grid, 7, set(), chunk, workers, part=(i, n))) for i in range(1, n + 1)
        ]
        assert sum(len(p) for p in parts) == len(whole)  # disjoint ...
        assert set().union(*map(set, parts)) == set(whole)  # ... and covering
        for i, lanes in enumerate(parts, 1):
            ids, reps = np.array(lanes, dtype=np.int64).reshape(-1, 2).T
            assert (lane_part(ids, reps, n) == i).all()  # the one rule decides
            seen.setdefault(i, set(lanes))
            assert set(lanes) == seen[i]  # the same lanes at every layout
    # balance: a grid point's 7 replicates go round-robin, so each part gets ⌊7/n⌋ or ⌈7/n⌉ of each
    points = {d for d, _ in whole}
    for lanes in seen.values():
        per_point = [sum(d == p for d, _ in lanes) for p in points]
        assert all(7 // n <= c <= -(-7 // n) for c in per_point), per_point


def test_a_part_plans_only_its_missing_lanes():
    grid = expand_grid(toy_experiment("t", reps=9))
    steps = plan_steps(grid, 9, set())
    stored = {
        (pid, lane.rep)
        for step in steps
        for chunk in step.chunks
        for lane in chunk.lanes[::2]
        for pid in lane.points
    }  # every other lane is stored
    missing = set(_lanes(plan_steps(grid, 9, stored)))
    parts = [set(_lanes(plan_steps(grid, 9, stored, 2, 2, part=(i, 4)))) for i in range(1, 5)]
    assert set().union(*parts) == missing and sum(map(len, parts)) == len(missing)
    assert 0 < len(missing) < 4 * 9


def test_part_values():
    assert (
        parse_part("2/3") == (2, 3) and parse_part("1/1") == (1, 1) and check_part([3, 3]) == (3, 3)
    )
    for bad in ("0/3", "4/3", "x", "1/0", "1/", "/3", "1.5/3", "-1/3", ""):
        with pytest.raises(UsageError, match="--part"):
            parse_part(bad)
    for bad in ((0, 3), (4, 3), (1,), "1/3", (True, 3), (1.0, 3)):
        with pytest.raises(UsageError, match="part="):
            check_part(bad)
    with pytest.raises(UsageError, match=r"part=\(0, 3\)"):
        plan_run(toy_experiment("t"), part=(0, 3))


# --- locks ----------------------------------------------------------------------------------


def test_parts_of_one_split_share_a_folder_and_nothing_else_does(tmp_path):
    out = tmp_path / "run"
    with store.exclusive(out, (1, 3)):
        with store.exclusive(out, (2, 3)):  # another part of the split: fine
            assert store.being_written(out)
        for other, what in (
            ((1, 3), "part 1/3"),
            (None, "another dpsim run"),
            ((1, 2), "another split"),
        ):
            with pytest.raises(UsageError, match=what):
                with store.exclusive(out, other):
                    pass
    assert not out.exists()  # nothing but locks was written
    with store.exclusive(out):
        with pytest.raises(UsageError, match="another dpsim run"):
            with store.exclusive(out, (1, 3)):
                pass


# --- one shared folder ----------------------------------------------------------------------


def test_parts_into_one_folder_equal_one_run(folder, capsys):
    shared = folder / "shared"
    assert (
        main(["run", str(folder / "study.py"), "--part", "2/3", "--out", str(shared), "--dry-run"])
        == 0
    )
    dry = capsys.readouterr().out
    assert "part 2/3 of the grid" in dry and not shared.exists()
    planned = plan_run(store_experiment(folder), out=shared, part=(2, 3)).lanes
    assert f"{planned} replicate lanes" in dry and 0 < planned < LANES
    counts = []
    for i in (1, 2, 3):
        _run(folder, "--part", f"{i}/3", "--out", str(shared))
        manifest = store.read_manifest(shared)
        assert manifest["complete"] == (i == 3)  # complete once every lane is stored
        counts.append(manifest["study"]["rows"])
    pd.testing.assert_frame_equal(_table(shared), _table(folder / "one"), check_exact=True)
    assert [h["part"] for h in manifest["history"]] == ["1/3", "2/3", "3/3"]
    assert counts[-1] == len(_table(folder / "one")) and counts[0] < counts[1] < counts[2]
    assert list(shared.glob("figure*.png"))  # the last part draws the figure
    assert main(["summary", str(shared)]) == 0 and main(["plot", str(shared)]) == 0


def store_experiment(folder):
    from dpsim.engine.registry import experiment

    return experiment(str(folder / "study.py"))[0]


def test_a_whole_run_resumes_a_folder_whose_parts_did_not_all_run(folder):
    out = folder / "resumed"
    _run(folder, "--part", "1/3", "--out", str(out))
    _run(folder, "--part", "3/3", "--out", str(out))
    assert not store.read_manifest(out)["complete"]
    _run(folder, "--out", str(out))
    assert store.read_manifest(out)["complete"]
    pd.testing.assert_frame_equal(_table(out), _table(folder / "one"), check_exact=True)


# --- separate folders, merged ---------------------------------------------------------------


@pytest.fixture(scope="module")
def three(folder):
    """Parts 1/3, 2/3, 3/3 in three folders."""
    for i in (1, 2, 3):
        _run(folder, "--part", f"{i}/3", "--out", str(folder / f"p{i}"))
    return [str(folder / f"p{i}") for i in (1, 2, 3)]


def test_three_folders_merged_equal_one_run(folder, three, capsys):
    out = folder / "merged"
    assert main(["merge", str(out), *three]) == 0
    assert "(complete)" in capsys.readouterr().out
    pd.testing.assert_frame_equal(_table(out), _table(folder / "one"), check_exact=True)
    manifest, reference = store.read_manifest(out), store.read_manifest(folder / "one")
    assert manifest["complete"] and manifest["code"] == reference["code"]
    assert manifest["study"]["points"] == reference["study"]["points"]
    assert not any(p.name.startswith(".tmp-merge") for p in folder.iterdir())
    # the merged folder is one run's: summary and plot read it, a run into it has nothing to do
    assert main(["summary", str(out)]) == 0 and main(["plot", str(out)]) == 0
    summary = capsys.readouterr().out
    assert main(["summary", str(folder / "one")]) == 0
    assert capsys.readouterr().out == summary.split("figure:")[0]
    _run(folder, "--out", str(out))
    pd.testing.assert_frame_equal(_table(out), _table(folder / "one"), check_exact=True)


def test_verify_judges_a_merged_folder_as_one_run(folder, three, capsys):
    """`dpsim verify --runs R` finds R/<experiment>: merged, it judges as on one run's folder
    and computes nothing."""
    assert main(["merge", str(folder / "vmerged" / "parted"), *three]) == 0
    shutil.copytree(folder / "one", folder / "vone" / "parted")
    verdicts = []
    for runs in ("vmerged", "vone"):
        before = store.part_files(folder / runs / "parted")
        capsys.readouterr()
        code = main(
            ["verify", str(folder / "study.py"), "--runs", str(folder / runs), "--no-progress"]
        )
        assert store.part_files(folder / runs / "parted") == before
        verdicts.append((code, capsys.readouterr().out.replace(str(folder / runs), "RUNS")))
    assert verdicts[0] == verdicts[1] and "parted-variance" in verdicts[0][1]


def test_a_lane_in_two_folders_is_kept_once(folder, three):
    out = folder / "overlap"
    assert main(["merge", str(out), *three, str(folder / "one")]) == 0
    pd.testing.assert_frame_equal(_table(out), _table(folder / "one"), check_exact=True)


def _refused(capsys, args, match):
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("dpsim: error: ") and err.count("\n") == 1, err
    assert match in err, err


def test_bad_merges_are_one_line_and_write_nothing(folder, three, capsys, tmp_path):
    out = tmp_path / "out"
    # another seed
    _run(folder, "--part", "1/3", "--seed", "1", "--out", str(tmp_path / "seed1"))
    _refused(capsys, ["merge", str(out), three[0], str(tmp_path / "seed1")], "seed 1")
    # another experiment
    (folder / "other.py").write_text(
        textwrap.dedent(STUDY.replace('name="parted"', 'name="other"'))
    )
    _run(folder, "--part", "2/3", "--out", str(tmp_path / "other"), study="other.py")
    _refused(capsys, ["merge", str(out), three[0], str(tmp_path / "other")], "experiment 'other'")
    # other code (the same study, its file changed)
    (folder / "changed.py").write_text(textwrap.dedent(STUDY) + "\n# changed\n")
    _run(folder, "--part", "2/3", "--out", str(tmp_path / "changed"), study="changed.py")
    _refused(capsys, ["merge", str(out), three[0], str(tmp_path / "changed")], "different code")
    # one lane stored with different rows
    forged = tmp_path / "forged"
    shutil.copytree(three[1], forged)
    part = store.part_files(forged)[0]
    table = pq.read_table(part)
    noise = table.column("noise_ms").to_numpy().copy()
    noise[0] += 1e-12
    pq.write_table(
        table.set_column(table.schema.get_field_index("noise_ms"), "noise_ms", [noise]), part
    )
    _refused(capsys, ["merge", str(out), three[1], str(forged)], "different rows")
    # not a run folder, a folder twice, OUT not empty, OUT a source
    _refused(capsys, ["merge", str(out), three[0], str(tmp_path)], "holds no dpsim run")
    _refused(capsys, ["merge", str(out), three[0], three[0]], "named twice")
    _refused(capsys, ["merge", three[0], three[1]], "not empty")
    assert not out.exists()
    assert not any(p.name.startswith(".tmp-merge") for p in tmp_path.iterdir())


def test_bad_part_values_are_one_line_and_write_nothing(folder, capsys, tmp_path):
    for bad in ("0/3", "4/3", "x"):
        _refused(
            capsys,
            ["run", str(folder / "study.py"), "--part", bad, "--out", str(tmp_path / "out")],
            f"--part {bad!r}",
        )
    assert _written(tmp_path) == []
