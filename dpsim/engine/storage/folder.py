"""A study folder as a whole: what it holds and what made it (``dpsim info``, :func:`folder_info`),
and its repair after damage (``dpsim repair``, :func:`repair_folder`).

The parts and manifest themselves are :mod:`dpsim.engine.storage.store`: a part that cannot be
read is left out of reads with a warning and set aside (``NAME.corrupt``) by the next run; a
missing or damaged manifest is read back from the parts' metadata. :func:`repair_folder`
does all of it at once, without computing anything, and writes the manifest again with the
study summary and completeness of the rows that remain.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from dpsim.errors import UsageError
from dpsim.engine.storage import store


def _folder(path) -> Path:
    out = Path(path)
    if not out.is_dir():
        raise UsageError(f"{str(path)!r} is not a folder")
    if (
        not (out / store.MANIFEST).exists()
        and not store.part_files(out)
        and not store.set_aside_files(out)
    ):
        raise UsageError(f"{str(path)!r} holds no dpsim run (no manifest.json and no parts)")
    return out


def experiment_of(manifest: dict):
    """The experiment a folder holds, found again from its manifest's source (a paper's
    experiment name, or ``study.py:NAME``). Raises UsageError when it cannot be found."""
    from dpsim.engine.registry import experiment as resolve
    from dpsim.engine.registry import is_study

    source = manifest.get("source") or manifest["experiment"]
    return resolve(source if is_study(source) else manifest["experiment"])[0]


def request_grids(manifest: dict) -> list[dict]:
    """The grids the folder's requests asked for, one per distinct set of ``--set`` overrides,
    each with the most replicates asked: [{"overrides": {...}, "reps": R}]. Parts of a split
    (``--part``) count as their whole grid; requests of adaptive runs (``dpsim solve``,
    ``verify --until-decided``: replicates per point) are left out, their lanes are what
    they stored."""
    grids: dict[str, dict] = {}
    for entry in manifest.get("history", []):
        if "reps" not in entry or "points" in entry:
            continue
        overrides = entry.get("overrides") or {}
        key = store.json_text(overrides)
        grid = grids.setdefault(key, {"overrides": overrides, "reps": 0})
        grid["reps"] = max(grid["reps"], int(entry["reps"]))
    return list(grids.values())


def completeness(experiment, manifest: dict, done: set) -> dict:
    """How many replicate lanes (data point × replicate) the folder's requests planned
    (:func:`request_grids`), and how many of those are stored whole (every analysis point's
    rows). Returns {"stored": S, "planned": P, "grids": [{"overrides", "reps", "stored",
    "planned"}]}."""
    from dpsim.engine.definition.grid import expand_grid
    from dpsim.engine.execution.planning import plan_steps

    grids = []
    for grid in request_grids(manifest):
        expanded = expand_grid(experiment, grid["overrides"] or None)
        planned = sum(step.lanes for step in plan_steps(expanded, grid["reps"], set()))
        missing = sum(step.lanes for step in plan_steps(expanded, grid["reps"], done))
        grids.append({**grid, "stored": planned - missing, "planned": planned})
    return {
        "stored": sum(g["stored"] for g in grids),
        "planned": sum(g["planned"] for g in grids),
        "grids": grids,
    }


def repair_folder(path) -> dict:
    """Repair the study folder ``path`` without computing anything: remove the temporary
    files a killed run left, set aside every part that cannot be read (``NAME.corrupt``,
    kept), rebuild a missing or damaged manifest from the parts' metadata (a damaged one is
    kept as ``manifest.json.corrupt``), and write the manifest again with the study summary
    and completeness of the rows that remain, recording the repair in its history. A
    folder with nothing to repair is left as it is. The folder is held while it is repaired
    (:func:`~dpsim.engine.storage.store.exclusive`): a folder a run is writing now is refused.

    Returns:
        {"folder", "temporaries": [names removed], "set_aside": [[part name, why]],
        "manifest": "kept" | "missing: rebuilt from the parts" | "damaged (why): rebuilt …",
        "changed": bool, "complete": bool | None, "lanes": completeness or None,
        "experiment_missing": str | None (why the experiment could not be found)}
    Raises:
        UsageError: one line: not a folder, being written, or a manifest that cannot be
            rebuilt (no part records it, or they disagree).
    """
    from dpsim.engine.execution.runner import folder_summaries

    out = _folder(path)
    report = {
        "folder": str(out),
        "temporaries": [],
        "set_aside": [],
        "manifest": "kept",
        "changed": False,
        "complete": None,
        "lanes": None,
        "experiment_missing": None,
    }
    with store.exclusive(out):
        report["temporaries"] = [p.name for p in store.remove_temporary(out)]
        report["set_aside"] = [
            [p.name, why] for p, why in store.set_aside_unreadable(out, say=False)
        ]
        manifest, damage = store.manifest_file(out)
        if manifest is None:
            manifest = store.manifest_from_parts(out)
            if manifest is None:
                raise UsageError(
                    f"{str(out)!r}: manifest.json is {f'damaged ({damage})' if damage else 'missing'} "
                    f"and no readable part records what made it: it cannot be rebuilt"
                )
            report["manifest"] = (
                f"damaged ({damage}): rebuilt from the parts, the damaged one kept as "
                f"{store.MANIFEST}{store.CORRUPT}"
                if damage
                else "missing: rebuilt from the parts"
            )
        report["changed"] = bool(
            report["temporaries"] or report["set_aside"] or report["manifest"] != "kept"
        )
        if not report["changed"]:
            report["complete"] = manifest.get("complete")
            return report
        try:
            experiment = experiment_of(manifest)
            lanes = completeness(experiment, manifest, store.completed(out))
        except UsageError as exc:
            experiment, report["experiment_missing"] = None, str(exc)
        if experiment is not None:
            if lanes["grids"]:
                report["lanes"], report["complete"] = lanes, lanes["stored"] == lanes["planned"]
            else:  # adaptive requests only (solve): complete as recorded, unless lanes were lost
                report["complete"] = bool(manifest.get("complete")) and not report["set_aside"]
            manifest.update(folder_summaries(out, experiment), complete=report["complete"])
        else:
            manifest["complete"] = False
        actions = (
            [f"removed temporary files {', '.join(report['temporaries'])}"]
            if report["temporaries"]
            else []
        )
        actions += [f"set aside {name} ({why})" for name, why in report["set_aside"]]
        actions += [f"manifest {report['manifest']}"] if report["manifest"] != "kept" else []
        history = manifest.get("history", [])
        if report["manifest"] != "kept":
            history = history[:-1]  # the rebuild's own note, replaced by this repair's
        manifest["history"] = [
            *history,
            {
                "repaired": actions,
                "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "command": sys.argv,
            },
        ]
        store.write_manifest(out, manifest)
    return report


def folder_info(path) -> dict:
    """What a study folder holds and what made it, read without writing anything (``dpsim
    info``; the Python API returns it as it is).

    Returns:
        {"folder", "experiment", "title", "source", "seed", "code" (the fingerprint: hash,
        library, definition, dpsim version, commit, dirty), "versions" (of the latest
        request), "requests": [{started, finished, reps, overrides, part, lanes_run,
        rows_written, seconds, host, command}], "manifest": "ok" | "missing" | "damaged: …",
        "parts": {"readable", "unreadable": [[name, why]], "set_aside": [names]}, "rows",
        "lanes": {"stored", "planned", "grids"} (None: no request with a fixed grid, or the
        experiment not found), "complete": bool, "being_written":
        bool, "warnings": [one line each]}
    Raises:
        UsageError: one line when ``path`` is no study folder, or its manifest is damaged
            and cannot be read back from the parts.
    """
    out = _folder(path)
    warnings: list[str] = []
    content, damage = store.manifest_file(out)
    state = "ok" if content is not None else f"damaged: {damage}" if damage else "missing"
    manifest = content if content is not None else store.manifest_from_parts(out)
    if manifest is None:
        raise UsageError(
            f"{str(out)!r}: manifest.json is {state} and no readable part records what made it"
        )
    if content is None:
        warnings.append(
            f"manifest.json is {state}: read back from the parts' metadata; `dpsim repair {out}` "
            f"writes it again"
        )
    tables, unreadable = store.read_parts(out, ["point", "rep"], say=False)
    done = {
        pair
        for t in tables
        for pair in zip(t.column("point").to_pylist(), t.column("rep").to_pylist())
    }
    rows = sum(t.num_rows for t in tables)
    if unreadable:
        warnings.append(store.unreadable_line(out, unreadable))
    aside = store.set_aside_files(out)
    if aside:
        warnings.append(
            f"{len(aside)} damaged file{'s' if len(aside) > 1 else ''} set aside and not read: "
            f"{', '.join(p.name for p in aside[:3])}{' …' if len(aside) > 3 else ''}"
        )
    lanes = None
    try:
        lanes = completeness(experiment_of(manifest), manifest, done)
    except UsageError as exc:
        warnings.append(f"completeness unknown: {exc}")
    if lanes is not None and not lanes["grids"]:
        lanes = None  # adaptive requests only (dpsim solve): no fixed grid to count against
    complete = lanes["stored"] == lanes["planned"] if lanes else bool(manifest.get("complete"))
    being_written = store.being_written(out)
    if being_written:
        warnings.append("a dpsim run is writing this folder now")
    elif not complete:
        warnings.append(
            "incomplete: `dpsim run` into it (the same request) computes what is missing"
        )
    temporaries = store.temporary_files(out)
    if temporaries and not being_written:
        warnings.append(
            f"{len(temporaries)} temporary file{'s' if len(temporaries) > 1 else ''} of a killed run "
            f"(removed by the next run or repair)"
        )
    history = manifest.get("history", [])
    requests = [
        {
            k: entry.get(k)
            for k in (
                "started",
                "finished",
                "reps",
                "overrides",
                "part",
                "lanes_run",
                "rows_written",
                "seconds",
                "host",
                "command",
                "merged",
                "repaired",
                "from_parts",
                "points",
            )
            if entry.get(k) is not None
        }
        for entry in history
    ]
    latest = next((e for e in reversed(history) if e.get("versions")), {})
    return {
        "folder": str(out),
        "experiment": manifest.get("experiment"),
        "title": manifest.get("title"),
        "source": manifest.get("source"),
        "seed": manifest.get("seed"),
        "code": manifest.get("code", {}),
        "versions": {"python": latest.get("python"), **latest.get("versions", {})}
        if latest
        else {},
        "requests": requests,
        "manifest": state,
        "parts": {
            "readable": len(tables),
            "unreadable": [[p.name, why] for p, why in unreadable],
            "set_aside": [p.name for p in aside],
        },
        "rows": rows,
        "lanes": lanes,
        "complete": complete,
        "being_written": being_written,
        "warnings": warnings,
    }


def info_lines(info: dict) -> list[str]:
    """:func:`folder_info` in human form, as ``dpsim info`` prints it."""
    code = info["code"] or {}
    commit = code.get("commit")
    made = (
        f"{code.get('hash', 'not recorded')} (library {code.get('library', '?')}, definition "
        f"{code.get('definition', '?')}), dpsim {code.get('dpsim', '?')}"
    )
    if commit:
        made += f", commit {commit[:12]}" + (
            " with uncommitted changes (dirty)" if code.get("dirty") else ", clean"
        )
    lines = [
        f"folder:       {info['folder']}",
        f"experiment:   {info['experiment']}"
        + (f" — {info['title']}" if info.get("title") else ""),
        f"source:       {info['source']}, seed {info['seed']}",
        f"code:         {made}",
    ]
    if info["versions"]:
        lines.append(
            "versions:     " + ", ".join(f"{k} {v}" for k, v in info["versions"].items() if v)
        )
    lines.append(f"manifest:     {info['manifest']}")
    lanes = info["lanes"]
    parts = info["parts"]
    stored = (
        f"{lanes['stored']} of {lanes['planned']} replicate lanes stored, "
        if lanes
        else "no fixed grid to count lanes against, "
    )
    lines.append(
        f"completeness: {stored}{info['rows']} rows in {parts['readable']} parts "
        f"({'complete' if info['complete'] else 'incomplete'})"
    )
    lines.append(f"requests:     {len(info['requests'])}")
    for entry in info["requests"]:
        lines.append("  - " + _request_text(entry))
    if info["warnings"]:
        lines.append("warnings:")
        lines += [f"  - {w}" for w in info["warnings"]]
    return lines


def _request_text(entry: dict) -> str:
    if "repaired" in entry:
        what = entry["repaired"]
        return f"{entry.get('started', '')} repaired: {'; '.join(what) if isinstance(what, list) else what}"
    if "merged" in entry:
        return f"{entry.get('started', '')} merged from {', '.join(entry['merged'])}"
    sets = " ".join(
        f"--set {k}={','.join(map(str, v))}" for k, v in (entry.get("overrides") or {}).items()
    )
    reps = (
        f"replicates per point at {entry['points']} points (up to {entry.get('reps', '?')})"
        if "points" in entry
        else f"--reps {entry.get('reps', '?')}"
    )
    text = f"{entry.get('started', '?')} {reps}" + (f" {sets}" if sets else "")
    if entry.get("part"):
        text += f" --part {entry['part']}"
    if "lanes_run" in entry:
        text += f": {entry['lanes_run']} lanes, {entry.get('rows_written', 0)} rows in {entry.get('seconds', 0):g} s"
    elif entry.get("from_parts"):
        text += ": read back from its parts (what it computed is not recorded)"
    else:
        text += ": did not finish"
    return text + (f" on {entry['host']}" if entry.get("host") else "")
