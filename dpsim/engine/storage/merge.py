"""``dpsim merge OUT DIR1 DIR2 …``: join run folders of one study (e.g. the parts of an array
job, each written into its own folder with ``dpsim run --part I/N``) into one folder that
``dpsim summary``, ``plot``, ``export`` and ``verify`` read as one run's.

Folders of different experiments, seeds or code (:mod:`dpsim.engine.storage.provenance`) are
refused, as is a (point, rep) stored in two folders with different rows; one stored twice
with the same rows is kept once, so no row is ever duplicated. A part that cannot be read is
left out with a warning (the merged folder is then incomplete, and `dpsim run` into it
computes the missing lanes); a folder whose manifest was lost is merged from its parts'
metadata (:func:`~dpsim.engine.storage.store.read_manifest`). Everything is checked before
anything is written, and OUT appears whole (built beside it, then renamed) or not at all.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from dpsim.errors import UsageError
from dpsim.engine.storage import store


def source_manifests(sources: Sequence[Path]) -> list[dict]:
    """The manifests of the folders to merge, once each is known to hold a run of the same
    experiment, seed and code as the first, and none is being written now.

    Raises:
        UsageError: one line naming the folder that differs and how.
    """
    if len(sources) < 1:
        raise UsageError("dpsim merge needs OUT and at least one run folder")
    if len({Path(s).resolve() for s in sources}) < len(sources):
        raise UsageError("a folder is named twice among the folders to merge")
    manifests = []
    for path in sources:
        manifest = store.read_manifest(path) if Path(path).is_dir() else None
        if manifest is None:
            raise UsageError(f"{str(path)!r} holds no dpsim run (no manifest.json)")
        if store.being_written(path):
            raise UsageError(
                f"{str(path)!r} is being written by a dpsim run; merge it when the run has finished"
            )
        manifests.append(manifest)
    first, where = manifests[0], str(sources[0])
    for path, manifest in zip(sources[1:], manifests[1:]):
        for key, what in (("experiment", "experiment"), ("seed", "seed")):
            if manifest[key] != first[key]:
                raise UsageError(
                    f"{str(path)!r} holds {what} {manifest[key]!r} and {where!r} {what} "
                    f"{first[key]!r}: only runs of one experiment and seed are merged"
                )
        mine, theirs = manifest.get("code", {}).get("hash"), first.get("code", {}).get("hash")
        if mine != theirs:
            raise UsageError(
                f"{str(path)!r} holds rows made by code {mine} and {where!r} by code {theirs}: rows of "
                f"different code are never mixed"
            )
    return manifests


def _keys(table: pa.Table) -> np.ndarray:
    """(point, rep) of every row as one structured array, for set operations."""
    keys = np.empty(table.num_rows, dtype=[("point", np.int64), ("rep", np.int64)])
    keys["point"] = table.column("point").to_numpy()
    keys["rep"] = table.column("rep").to_numpy()
    return keys


def _rows_of(folder: Path, pairs: np.ndarray) -> pd.DataFrame:
    """The rows of the readable parts of ``folder`` whose (point, rep) is among ``pairs``, sorted
    by point, rep and method, with a fresh index (to compare two folders' copies of the same
    lanes)."""
    tables = []
    for _, table in store.iter_parts(folder):
        table = table.replace_schema_metadata(None)
        tables.append(table.filter(pa.array(np.isin(_keys(table), pairs))))
    frame = pa.concat_tables(tables, promote_options="default").to_pandas()
    return frame.sort_values(list(store.ROW_ORDER)).reset_index(drop=True)


def _check_overlaps(sources: Sequence[Path], stored: list[np.ndarray]) -> None:
    """Refuse, in one line, a (point, rep) that two folders store with different rows."""
    for j in range(1, len(sources)):
        for i in range(j):
            both = np.intersect1d(stored[i], stored[j])
            if not len(both):
                continue
            a = _rows_of(sources[i], both)
            b = _rows_of(sources[j], both)
            try:
                pd.testing.assert_frame_equal(
                    a, b[a.columns] if set(a.columns) == set(b.columns) else b, check_exact=True
                )
            except AssertionError:
                raise UsageError(
                    f"{str(sources[i])!r} and {str(sources[j])!r} both store {len(both)} (point, rep) "
                    f"lanes, with different rows (first: point {both[0]['point']}, rep "
                    f"{both[0]['rep']}): they were not made by one study"
                ) from None


def _copy_parts(sources: Sequence[Path], target: Path) -> int:
    """Write every row of ``sources`` into ``target``'s parts, a (point, rep) stored by an
    earlier folder left out; returns the rows written."""
    taken = np.empty(0, dtype=[("point", np.int64), ("rep", np.int64)])
    rows = 0
    for source in sources:
        mine = []
        for _, table in store.iter_parts(source):  # an unreadable part is left out, with a warning
            keys = _keys(table)
            keep = ~np.isin(keys, taken)
            if keep.any():
                store.write_part(target, table if keep.all() else table.filter(pa.array(keep)))
                rows += int(keep.sum())
            mine.append(keys)
        if mine:
            taken = np.union1d(taken, np.concatenate(mine))
    return rows


def merge_folders(out, sources: Sequence, experiment_of: Callable[[dict], object]) -> dict:
    """Merge the run folders ``sources`` into the new folder ``out``.

    Args:
        out: the folder to create (it must not exist, or be empty, and not be a source).
        sources: run folders of one experiment, seed and code.
        experiment_of: manifest → the experiment it holds (for the study summary).
    Returns:
        the merged folder's manifest.
    Raises:
        UsageError: one line, before anything is written.
    """
    from dpsim.engine.definition.grid import expand_grid
    from dpsim.engine.execution.planning import plan_steps
    from dpsim.engine.storage.provenance import environment
    from dpsim.engine.execution.runner import folder_summaries

    out, sources = Path(out), [Path(s) for s in sources]
    store.check_directory(out, "OUT")
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"OUT {str(out)!r} is not empty: dpsim merge writes a new folder")
    if any(out.resolve() == s.resolve() for s in sources):
        raise UsageError(f"OUT {str(out)!r} is one of the folders to merge: name a new folder")
    manifests = source_manifests(sources)
    experiment = experiment_of(manifests[0])
    stored = [
        np.unique(
            np.concatenate(
                [_keys(table) for table in store.read_parts(s, ["point", "rep"])[0]]
                or [np.empty(0, dtype=[("point", np.int64), ("rep", np.int64)])]
            )
        )
        for s in sources
    ]
    _check_overlaps(sources, stored)
    building = out.parent / f".tmp-merge-{uuid.uuid4().hex}"
    try:
        building.mkdir(parents=True)
        rows = _copy_parts(sources, building)
        history = [entry for m in manifests for entry in m.get("history", [])]
        done = store.completed(building)
        requests = {repr((e.get("overrides"), e.get("reps"))): e for e in history if "reps" in e}
        complete = all(
            not plan_steps(expand_grid(experiment, e.get("overrides") or None), e["reps"], done)
            for e in requests.values()
        )
        merged = {
            **manifests[0],
            "history": [
                *history,
                {
                    "merged": [str(s) for s in sources],
                    "rows_written": rows,
                    "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
                    **environment(),
                },
            ],
            **folder_summaries(building, experiment),
            "complete": complete,
        }
        store.write_manifest(building, merged)
        if out.exists():
            out.rmdir()
        os.replace(building, out)
    finally:
        if building.exists():
            shutil.rmtree(building)
    return merged
