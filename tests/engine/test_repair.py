"""A damaged study folder is repaired, never a dead end: every part records what made it, so a
lost or damaged manifest is rebuilt from the parts (`dpsim repair`, or the next run); parts
that cannot be read are set aside, kept, and their lanes counted as missing; `dpsim info`
reports provenance, completeness and damage; writes are whole or absent (temporary file,
fsync, rename), figures included. The faults themselves are tests/engine/test_faults.py."""

from __future__ import annotations

import json
import textwrap

import matplotlib.figure
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpsim.cli import main
from dpsim.errors import UsageError
from dpsim.engine.storage import store
from dpsim.engine.storage.folder import folder_info, info_lines, repair_folder
from laplace_study import study_text

KEY = ["point", "rep", "method"]
STUDY = study_text("mended", n_items=8, reps=3, region=(0.5, 2.0), figure=True).replace(
    '"p": [1.0]', '"p": [0.5, 1.0]'
)
LANES = 2 * 3  # data points × reps, one part each (--chunk 1)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A finished run of the study (one lane per part) in ``tmp_path/run``."""
    (tmp_path / "study.py").write_text(textwrap.dedent(STUDY))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPSIM_JAX_CACHE", "off")
    assert _run(tmp_path / "run") == 0
    return tmp_path / "run"


def _run(out, *extra) -> int:
    return main(["run", "study.py", "--out", str(out), "--no-progress", "--chunk", "1", *extra])


def _table(out) -> pd.DataFrame:
    return store.load_results(out).sort_values(KEY).reset_index(drop=True)


def test_every_part_records_what_made_it(folder):
    manifest = store.read_manifest(folder)
    for part in store.part_files(folder):
        record = store.part_provenance(part)
        assert {k: record[k] for k in store.MANIFEST_FIELDS} == {
            k: manifest[k] for k in store.MANIFEST_FIELDS
        }
        request = manifest["history"][0]
        assert record["request"] == {k: v for k, v in request.items() if k in record["request"]}
        assert record["request"]["started"] == request["started"] and record["request"]["reps"] == 3


def test_a_lost_manifest_is_read_back_from_the_parts_and_repaired(folder, capsys):
    original = store.read_manifest(folder)
    table = _table(folder)
    (folder / store.MANIFEST).unlink()
    rebuilt = store.read_manifest(folder)
    assert {k: rebuilt[k] for k in store.MANIFEST_FIELDS} == {
        k: original[k] for k in store.MANIFEST_FIELDS
    }
    assert (
        rebuilt["history"][0]["started"] == original["history"][0]["started"]
        and rebuilt["history"][0]["from_parts"]
    )
    assert not rebuilt["complete"] and "repaired" in rebuilt["history"][-1]
    assert (
        main(["export", str(folder), "--to", str(folder.parent / "t.csv")]) == 0
    )  # no manifest needed
    assert len(pd.read_csv(folder.parent / "t.csv")) == len(table)
    capsys.readouterr()
    assert main(["repair", str(folder)]) == 0
    assert "manifest.json missing: rebuilt from the parts" in capsys.readouterr().out
    repaired = json.loads((folder / store.MANIFEST).read_text())
    assert repaired["complete"] and repaired["study"] == original["study"]
    assert [e.get("started") for e in repaired["history"][:-1]] == [
        e["started"] for e in original["history"]
    ]
    assert "repaired" in repaired["history"][-1]
    assert main(["repair", str(folder)]) == 0 and "nothing to repair" in capsys.readouterr().out


def test_an_unreadable_part_is_set_aside_and_counted_missing(folder, capsys):
    table = _table(folder)
    victim = store.part_files(folder)[2]
    victim.write_bytes(victim.read_bytes()[:100])  # truncated
    lanes = folder_info(folder)["lanes"]
    assert (lanes["stored"], lanes["planned"]) == (LANES - 1, LANES)
    report = repair_folder(folder)
    assert [name for name, _ in report["set_aside"]] == [victim.name] and report[
        "complete"
    ] is False
    assert (
        victim.parent / (victim.name + store.CORRUPT)
    ).stat().st_size == 100 and not victim.exists()
    assert not store.read_manifest(folder)["complete"]
    info = folder_info(folder)
    assert info["lanes"]["stored"] == LANES - 1 and info["parts"]["set_aside"] == [
        victim.name + store.CORRUPT
    ]
    assert any("set aside" in w for w in info["warnings"]) and any(
        "incomplete" in w for w in info["warnings"]
    )
    capsys.readouterr()
    assert _run(folder) == 0
    assert (
        "mended: 1 replicate lanes, 2 rows" in capsys.readouterr().out
    )  # the lost lane, computed again
    pd.testing.assert_frame_equal(_table(folder), table, check_exact=True)
    assert folder_info(folder)["complete"]


def test_parts_that_disagree_are_refused_in_one_line(folder, capsys):
    part = store.part_files(folder)[0]
    table = pq.read_table(part)
    record = store.part_provenance(part)
    meta = dict(table.schema.metadata)
    meta[store.PART_KEY] = json.dumps({**record, "seed": 5}).encode()
    pq.write_table(table.replace_schema_metadata(meta), part)
    (folder / store.MANIFEST).unlink()
    capsys.readouterr()
    for command in (["repair", str(folder)], ["info", str(folder)]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "disagree on the seed" in err
    assert _run(folder) == 2
    assert "disagree on the seed" in capsys.readouterr().err
    assert not (folder / store.MANIFEST).exists()  # nothing written


def test_a_damaged_manifest_with_no_parts_is_refused_in_one_line(tmp_path, capsys):
    out = tmp_path / "bare"
    out.mkdir()
    (out / store.MANIFEST).write_text('{"experiment": "x", "se')
    with pytest.raises(UsageError, match="damaged"):
        store.read_manifest(out)
    capsys.readouterr()
    assert main(["info", str(out)]) == 2 and main(["info", str(tmp_path / "none")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 2


def test_info_reports_provenance_completeness_and_requests(folder, capsys):
    capsys.readouterr()
    assert main(["info", str(folder), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    manifest = store.read_manifest(folder)
    assert info["experiment"] == "mended" and info["seed"] == 0 and info["code"] == manifest["code"]
    assert info["lanes"]["stored"] == info["lanes"]["planned"] == LANES and info["complete"]
    assert info["rows"] == len(_table(folder)) and info["parts"]["readable"] == LANES
    assert info["manifest"] == "ok" and info["warnings"] == [] and len(info["requests"]) == 1
    assert set(info["versions"]) >= {"python", "jax", "numpy", "pyarrow"}
    assert main(["info", str(folder)]) == 0
    text = capsys.readouterr().out
    assert (
        f"completeness: {LANES} of {LANES} replicate lanes stored" in text
        and manifest["code"]["hash"] in text
    )
    assert info_lines(folder_info(folder)) == text.splitlines()


def test_writes_are_flushed_renamed_and_whole_or_absent(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSIM_FSYNC", "on")
    synced = []
    real_fsync = store.os.fsync
    monkeypatch.setattr(store.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    target = tmp_path / "a.json"
    store.write_json(target, {"x": 1})
    assert len(synced) == 2  # the file, then its directory
    store.write_part(tmp_path, pa.table({"point": [1], "rep": [0]}))
    assert len(synced) == 4

    def half(tmp):
        open(tmp, "w").write('{"x": ')
        raise OSError(27, "File too large")

    with pytest.raises(UsageError, match="File too large") as error:
        store.write_file(target, half)
    assert "\n" not in str(error.value) and json.loads(target.read_text()) == {"x": 1}
    assert not list(tmp_path.glob(".tmp-*"))


def test_a_figure_that_cannot_be_written_leaves_the_old_one_whole(folder, monkeypatch, capsys):
    before = (folder / "figure-p=1.png").read_bytes()

    def broken(self, fname, *args, **kwargs):
        open(fname, "wb").write(b"half a figure")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", broken)
    capsys.readouterr()
    assert main(["plot", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "No space left on device" in err
    assert (folder / "figure-p=1.png").read_bytes() == before and not list(folder.glob(".tmp-*"))
