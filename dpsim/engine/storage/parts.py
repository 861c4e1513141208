"""Runs of one part of a grid (``dpsim run --part I/N``) that share one folder.

Which lanes a part computes is :func:`dpsim.engine.execution.planning.lane_part`. This module is
how the parts of a split write one folder at the same time (a Slurm array on a shared
filesystem): each holds its own part lock and writes only its own Parquet parts
(:func:`dpsim.engine.storage.store.exclusive`); the manifest is read and rewritten under
:func:`dpsim.engine.storage.store.manifest_lock`, each part adding its own history entry, and it
is marked complete only when every lane of the grid is stored, by whichever part finishes
last. A later whole-grid ``dpsim run`` into the folder computes whatever is still missing.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Callable

from dpsim.engine.storage import store


def start(out: Path, manifest: dict, request: dict) -> None:
    """Write a part's manifest as it starts: the folder's current history (other parts may
    have written since this one planned) plus ``request``, marked incomplete. Refuses, in one
    line, a folder another part has meanwhile claimed for another experiment, seed or code.

    Args:
        out: the run folder (its part lock held).
        manifest: the manifest this run would write; its history and summaries are replaced
            by the folder's current ones.
        request: this run's history entry; given an ``id`` that :func:`finish` finds again.
    """
    request.setdefault("id", uuid.uuid4().hex)
    with store.manifest_lock(out):
        current = store.read_manifest(out) or {}
        if current:
            store.check_compatible(out, manifest["experiment"], manifest["seed"])
            store.check_code(out, manifest["code"])
        manifest.update(
            history=[*current.get("history", []), request],
            study=current.get("study", {}),
            diagnostics=current.get("diagnostics", {}),
            complete=False,
        )
        store.write_manifest(out, manifest)


def finish(
    out: Path,
    manifest: dict,
    request: dict,
    summaries: Callable[[], dict],
    complete: Callable[[set], bool],
) -> None:
    """Write a part's manifest as it ends: the folder's current history with this part's entry
    (``request``, now with its finishing fields), the summaries of every row stored now, and
    ``complete`` only when every lane of the grid is stored.

    Args:
        out: the run folder.
        manifest: the manifest this run writes (updated in place).
        request: this run's history entry, as given to :func:`start`.
        summaries: → {"study": …, "diagnostics": …} of the folder's rows (read under the lock,
            so the last part to finish records every row).
        complete: (point id, rep) pairs stored → whether the whole grid is stored.
    """
    with store.manifest_lock(out):
        current = store.read_manifest(out) or {}
        history = [
            entry for entry in current.get("history", []) if entry.get("id") != request["id"]
        ]
        manifest.update(
            history=[*history, request], **summaries(), complete=complete(store.completed(out))
        )
        store.write_manifest(out, manifest)
