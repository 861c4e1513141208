"""The results store: a directory of Parquet parts plus a JSON manifest.

One row per grid point × replicate × method. Parts, the manifest and figures are written
atomically (a temporary file, flushed to disk with ``fsync``, then renamed), so an
interrupted run leaves only whole files, and re-running into the same directory computes
only the missing (point, rep) pairs.

Damage is repaired, never fatal: a part that cannot be read (garbage, truncated, a page
whose checksum fails) is left out of every read with one warning, and a run into the folder
moves it aside (``NAME.corrupt``, kept) and computes its lanes again
(:func:`set_aside_unreadable`). Every part records in its Arrow schema metadata what made
it (experiment, seed, code fingerprint, the request: :func:`part_metadata`), so a missing
or damaged ``manifest.json`` is read back from the parts (:func:`manifest_from_parts`) when
they all agree; a damaged manifest is moved aside (``manifest.json.corrupt``) before a new
one is written. ``dpsim repair`` and ``dpsim info`` are :mod:`dpsim.engine.storage.folder`.
"""

from __future__ import annotations

import errno
import json
import math
import os
import platform
import re
import tempfile
import time
import uuid
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dpsim.errors import UsageError, note, warn

try:
    import fcntl
except ImportError:  # Windows has no flock: runs into one directory are not guarded there
    fcntl = None

MANIFEST = "manifest.json"
PARTS = "parts"
LOCK = ".lock"


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()  # read once, at import (os.umask is process-wide, not thread-safe)


def check_directory(path: Path, what: str) -> None:
    """One-line UsageError when ``path`` cannot be a directory we write into: it is a file,
    a component above it is a file, or the nearest existing directory is not writable."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{what} {str(path)!r} is a file, not a directory")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(
                    f"{what} {str(path)!r} lies under {str(parent)!r}, which is a file"
                )
            if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
                raise UsageError(
                    f"{what} {str(path)!r} cannot be created: {str(parent)!r} is not writable"
                )
            break


def is_lock(name: str) -> bool:
    """Whether a file name in a run directory is one of its lock files (``.lock``, a part's
    ``.lock-part-I-of-N``, the manifest's ``.lock-manifest``): not results."""
    return name == LOCK or name.startswith(LOCK + "-")


def _no_result(path: Path) -> bool:
    """Whether an entry of a run directory holds no result: a lock file, a temporary file of
    an interrupted write (``.tmp-*``), or a ``parts`` folder holding nothing else (a run that
    failed before its first part leaves one)."""
    if is_lock(path.name) or path.name.startswith(".tmp-"):
        return True
    return (
        path.name == PARTS
        and path.is_dir()
        and all(p.name.startswith(".tmp-") for p in path.iterdir())
    )


def _part_lock(i: int, n: int) -> str:
    return f"{LOCK}-part-{i}-of-{n}"


def _try_lock(handle, mode) -> bool:
    """Take an advisory lock without waiting; False when another process holds it. A
    filesystem without locks is a one-line UsageError."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(handle, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as exc:
        raise UsageError(
            f"cannot lock {handle.name!r} ({exc.strerror or exc}): this filesystem has no file locks; "
            f"write into a local folder (parts: one folder each, then `dpsim merge`)"
        ) from None
    return True


def _other_split(out: Path, n: int) -> str | None:
    """A part I/M (M ≠ ``n``) another process is writing into ``out`` now, as "I/M", or None:
    parts of different splits of a grid overlap, so they never write one folder at once."""
    for path in sorted(out.glob(f"{LOCK}-part-*-of-*")):
        i, _, m = path.name[len(LOCK) + len("-part-") :].partition("-of-")
        if m == str(n) or fcntl is None:
            continue
        with open(path, "a+") as probe:
            if not _try_lock(probe, fcntl.LOCK_SH):
                return f"{i}/{m}"
    return None


@contextmanager
def exclusive(out: Path, part: tuple | None = None):
    """Hold the run directory ``out`` for writing: an advisory lock (``flock``) on
    ``out/.lock``, released when the block ends or the process dies.

    A whole-grid run holds it alone: two ``dpsim run`` into one directory at the same time
    would both compute the missing lanes and store them twice; the second is refused
    instead, with a one-line UsageError naming the holder. A run of one part (I, N)
    (``--part``, array jobs) shares ``.lock`` with the other parts of the same split and
    holds ``.lock-part-I-of-N`` alone (parts are disjoint lanes); a whole-grid run, the same
    part twice, or a part of another split (other N) at the same time is refused. Parts
    coordinate their manifest with :func:`manifest_lock`.

    Creates ``out``, and removes it again if it created it and nothing but lock files,
    temporaries and an empty ``parts`` folder was written (a run that stopped before its
    manifest, or failed writing its first part, leaves nothing behind). Without
    ``fcntl`` (Windows) nothing is locked."""
    out = Path(out)
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {str(out)!r} cannot be created: {exc.strerror or exc}") from None
    handle = open(out / LOCK, "a+")
    own = None
    me = f"pid {os.getpid()} on {platform.node()}"
    try:
        if not _try_lock(
            handle, fcntl.LOCK_SH if part and fcntl else (fcntl.LOCK_EX if fcntl else 0)
        ):
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise UsageError(
                f"another dpsim run ({holder}) is writing to {str(out)!r}; "
                f"wait for it to finish, or choose another --out"
            )
        if part is None:
            handle.seek(0)
            handle.truncate()
            handle.write(me)
            handle.flush()
        else:
            own = open(out / _part_lock(*part), "a+")
            if not _try_lock(own, fcntl.LOCK_EX if fcntl else 0):
                own.seek(0)
                raise UsageError(
                    f"another dpsim run ({own.read().strip() or 'another process'}) is writing part "
                    f"{part[0]}/{part[1]} to {str(out)!r}; wait for it to finish"
                )
            other = _other_split(out, part[1])
            if other:
                raise UsageError(
                    f"part {other} of another split is being written to {str(out)!r}; the parts "
                    f"of one folder must share N, got --part {part[0]}/{part[1]}"
                )
            own.seek(0)
            own.truncate()
            own.write(me)
            own.flush()
            handle.seek(0)
            handle.truncate()
            handle.write(f"parts of a split into {part[1]}, {me} and others")
            handle.flush()
        yield
    finally:
        if own is not None:
            own.close()
        handle.close()  # closing releases the lock
        if created and out.exists() and all(_no_result(p) for p in out.iterdir()):
            with open(out / LOCK, "a+") as last:  # nobody else is writing: remove what we made
                if _try_lock(last, fcntl.LOCK_EX if fcntl else 0):
                    for p in out.iterdir():
                        if p.is_dir():
                            for inner in p.iterdir():
                                inner.unlink()
                            p.rmdir()
                        else:
                            p.unlink()
                    out.rmdir()


def being_written(out: Path) -> bool:
    """Whether a dpsim run (of the whole grid or of a part) holds ``out`` now."""
    path = Path(out) / LOCK
    if fcntl is None or not path.exists():
        return False
    with open(path, "a+") as probe:
        return not _try_lock(probe, fcntl.LOCK_EX)


@contextmanager
def file_lock(path: Path):
    """Hold an exclusive lock on the lock file ``path`` (waiting for it), for a
    read-merge-write of a shared file; without ``fcntl`` (Windows) nothing is locked."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def manifest_lock(out: Path):
    """Hold ``out/.lock-manifest`` (waiting for it) while reading and rewriting the manifest:
    the parts of a split running into one folder update it one at a time."""
    return file_lock(Path(out) / f"{LOCK}-manifest")


def fsync_enabled() -> bool:
    """Whether writes are flushed to disk before they are renamed into place: yes, unless
    ``$DPSIM_FSYNC`` is ``off`` (then a killed process still leaves whole files, the rename
    being atomic, but a machine that loses power may not; the test suite turns it off, its
    folders being temporary)."""
    return os.environ.get("DPSIM_FSYNC", "on").lower() not in ("off", "0", "no")


def _fsync(path, directory: bool = False) -> None:
    """Flush ``path`` (a file, or a directory's entries) to disk. A filesystem that cannot
    sync a directory (some network filesystems) is let be: the rename is still atomic."""
    if not fsync_enabled():
        return
    try:
        fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    except OSError:
        if directory:
            return
        raise
    try:
        os.fsync(fd)
    except OSError:
        if not directory:
            raise
    finally:
        os.close(fd)


def _atomic_write_bytes(path: Path, write) -> None:
    """Make ``path`` whole or not at all: ``write(temporary path)`` writes a temporary file
    beside it, which is flushed to disk (``fsync``), made readable as the umask allows, and
    renamed over ``path``; the directory entry is then flushed too. A crash at any moment
    leaves the old file or the new one, never a part of one (a temporary ``.tmp-*`` is
    removed by the next run, :func:`remove_temporary`).

    Raises:
        UsageError: one line when the file cannot be written (disk full, a file-size limit,
            no permission); nothing is left behind.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
        os.close(fd)
    except OSError as exc:
        raise _write_error(path, exc) from None
    try:
        write(tmp)
        _fsync(tmp)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600: results are meant to be shared
        os.replace(tmp, path)
        _fsync(path.parent, directory=True)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.remove(tmp)
        if isinstance(exc, OSError):
            raise _write_error(path, exc) from None
        raise


def _write_error(path: Path, exc: OSError) -> UsageError:
    """The one-line error of a write that failed with ``exc``."""
    text = str(exc).strip().splitlines()
    why = exc.strerror or (text[0] if text else type(exc).__name__)
    code = exc.errno or next(
        (int(n) for n in re.findall(r"errno (\d+)", why)), None
    )  # Arrow's text holds it
    full = code in (errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC))
    advice = (
        "free space (or raise the limit) and run again to resume"
        if full
        else "nothing was left half-written"
    )
    return UsageError(
        f"cannot write {str(path)!r}: {why}; what was written before is kept whole: {advice}"
    )


NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def _json_safe(value):
    """``value`` with every non-finite float written as the string "inf", "-inf" or "nan"
    (bare ``Infinity`` is not JSON: jq and JavaScript reject it)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _from_json(value):
    if isinstance(value, str) and value in NON_FINITE:
        return NON_FINITE[value]
    if isinstance(value, dict):
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


_SAID: set[str] = set()


def forget_said() -> None:
    """Start a new command: what :func:`_once` said before is said again when it recurs (a
    notebook or a test runs several commands in one process)."""
    _SAID.clear()


def _once(say, message: str) -> None:
    """``say(message)`` (:func:`~dpsim.errors.warn` or :func:`~dpsim.errors.note`) the first
    time only: one command reads a folder several times, and says what is wrong with it once."""
    if message not in _SAID:
        _SAID.add(message)
        say(message)


MANIFEST_FIELDS = (
    "experiment",
    "source",
    "code",
    "title",
    "seed",
    "shape_axes",
    "data_axes",
    "analysis_axes",
    "derived",
    "methods",
)


def manifest_file(out: Path) -> tuple[dict | None, str | None]:
    """The manifest file of ``out`` as it is on disk: (its content, None) when it reads as a
    manifest, (None, None) when there is none, (None, why) when it is damaged (not JSON,
    truncated, not an object naming an experiment). Raises UsageError (one line)
    when it exists but cannot be opened (permissions)."""
    path = Path(out) / MANIFEST
    if not path.exists():
        return None, None
    try:
        text = path.read_bytes().decode()
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except OSError as exc:
        raise UsageError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    try:
        content = _from_json(json.loads(text))
    except json.JSONDecodeError as exc:
        return None, f"not JSON ({exc.msg.lower()}, line {exc.lineno})" if text.strip() else "empty"
    if not isinstance(content, dict) or "experiment" not in content:
        return None, "not a dpsim manifest (it names no experiment)"
    return content, None


def read_manifest(out: Path) -> dict | None:
    """A run directory's manifest (None without one and without parts that say what made
    them); the strings "inf", "-inf" and "nan" are read back as floats.

    A missing or damaged ``manifest.json`` is read back from the metadata of the folder's
    parts when they all agree (:func:`manifest_from_parts`; one note says so): it is not
    written here (a run into the folder writes it, as does ``dpsim repair``).

    Raises:
        UsageError: one line when the manifest is damaged and the parts cannot stand in for
            it (none records what made it, or they disagree).
    """
    content, damage = manifest_file(out)
    if content is not None:
        return content
    if not part_files(out):
        if damage:
            raise UsageError(
                f"{str(Path(out) / MANIFEST)!r} is damaged ({damage}) and the folder holds no parts "
                f"to rebuild it from; move it away to use the folder"
            )
        return None
    rebuilt = manifest_from_parts(out)
    if rebuilt is None:
        if damage:
            raise UsageError(
                f"{str(Path(out) / MANIFEST)!r} is damaged ({damage}) and no part records what made it "
                f"(parts written before dpsim recorded it): it cannot be rebuilt"
            )
        return None
    _once(
        note,
        f"{out}: manifest.json is {f'damaged ({damage})' if damage else 'missing'}; read back from its parts' "
        f"metadata (`dpsim repair {out}` writes it again; a run into the folder does too)",
    )
    return rebuilt


def check_compatible(out: Path, experiment: str, seed: int) -> None:
    """Refuse to mix experiments or seeds in one directory (resume needs the same seed), and a
    path that cannot be a results directory."""
    check_directory(out, "--out")
    manifest = read_manifest(out)
    if manifest is None:
        if Path(out).exists() and any(not _no_result(p) for p in Path(out).iterdir()):
            raise UsageError(f"--out {str(out)!r} is not empty and holds no dpsim manifest")
        return
    if manifest["experiment"] != experiment or manifest["seed"] != seed:
        raise UsageError(
            f"--out {str(out)!r} holds experiment {manifest['experiment']!r} "
            f"seed {manifest['seed']}; choose another directory"
        )


CACHE_OWNER = "dpsim-cache"  # a manifest's "owner" when the folder is dpsim's own cache (verify's runs/verify)


def recorded_code(out: Path) -> dict | None:
    """The code fingerprint a run directory's manifest records (None: no manifest, or one
    written before dpsim recorded its code: ``{}``)."""
    manifest = read_manifest(out)
    return None if manifest is None else manifest.get("code", {})


def owned_by_dpsim(out: Path) -> bool:
    """Whether ``out`` is a folder of dpsim's own cache (its manifest's ``owner`` is
    :data:`CACHE_OWNER`), which ``dpsim verify`` may replace; any other folder is its user's."""
    manifest = read_manifest(out)
    return bool(manifest) and manifest.get("owner") == CACHE_OWNER


def other_code(out: Path, code: dict) -> str | None:
    """How the rows of a run directory were made when that is not by ``code`` (a different
    fingerprint, :mod:`dpsim.engine.storage.provenance`), as a description; None when the folder
    holds no run or one made by ``code``."""
    from dpsim.engine.storage.provenance import describe

    recorded = recorded_code(out)
    if recorded is None or recorded.get("hash") == code["hash"]:
        return None
    return describe(recorded) if recorded else "code that was not recorded (dpsim before 0.3)"


def code_change(out: Path, code: dict) -> str:
    """What changed between the code that made ``out`` and ``code``: "changed modules: a, b"
    (at most five named), or why they cannot be named."""
    from dpsim.engine.storage.provenance import changed_modules

    changed = changed_modules(recorded_code(out) or {}, code)
    if changed is None:
        return "its manifest names no modules (made before dpsim recorded them)"
    if not changed:
        return "no module changed (the file-less code or closure values did)"
    more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
    return f"changed module{'s' * (len(changed) > 1)}: {', '.join(changed[:5])}{more}"


def check_code(out: Path, code: dict, accept: bool = False) -> bool:
    """Refuse to extend a run directory whose rows were made by other code, in one line
    naming both fingerprints, the changed modules and the ways back.

    Args:
        accept: ``--accept-code-change``: allow it (the run records a new segment,
            :func:`accepted_segments`).
    Returns:
        Whether the folder holds rows of other code (only ever True with ``accept``).
    """
    from dpsim.engine.storage.provenance import describe

    made = other_code(out, code)
    if made is None:
        return False
    if accept:
        return True
    raise UsageError(
        f"--out {str(out)!r} holds rows made by {made}; this is {describe(code)} "
        f"({code_change(out, code)}): rows of different code are never mixed; go back to that code "
        f"(`git stash`), choose another --out, or extend it with this code by `dpsim run "
        f"--accept-code-change` (recorded in its manifest)"
    )


def accepted_segments(previous: dict, code: dict, out: Path, when: str) -> list[dict]:
    """The manifest's ``segments`` after ``--accept-code-change`` into a folder whose manifest
    is ``previous``: the folder's segments so far (one for the code that made it, when it has
    none yet), then a new one for ``code``.

    A segment is {"code": fingerprint, "accepted": when it began, "parts_before": the part
    files stored when it began}: the rows of a segment are those of the parts its successor
    found that it did not (the last segment's: every part not listed in its
    ``parts_before``); every row of a part comes from one code.
    """
    from dpsim.engine.storage.provenance import changed_modules

    segments = list(
        previous.get("segments")
        or [{"code": previous.get("code", {}), "accepted": None, "parts_before": []}]
    )
    segments.append(
        {
            "code": code,
            "accepted": when,
            "parts_before": [p.name for p in part_files(out)],
            "changed_modules": changed_modules(previous.get("code", {}), code),
        }
    )
    return segments


def write_manifest(out: Path, content: dict) -> None:
    """Write the manifest atomically, as valid JSON (non-finite floats as strings). A damaged
    manifest in its place is first moved aside (``manifest.json.corrupt``), never deleted."""
    if manifest_file(out)[1] is not None:
        set_aside(Path(out) / MANIFEST)
    write_json(Path(out) / MANIFEST, content)


def json_text(content) -> str:
    """``content`` as the JSON dpsim writes: sorted keys, non-finite floats as strings."""
    return json.dumps(_json_safe(content), indent=2, sort_keys=True, default=str, allow_nan=False)


def write_json(path: Path, content) -> None:
    """Write ``content`` to ``path`` atomically as :func:`json_text` (read back by :func:`read_json`)."""
    write_text(path, json_text(content))


def read_json(path: Path):
    """A file :func:`write_json` wrote (None when it does not exist); "inf", "-inf", "nan" as floats."""
    path = Path(path)
    return _from_json(json.loads(path.read_text())) if path.exists() else None


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a temporary file, then a rename)."""
    write_file(path, lambda tmp: Path(tmp).write_text(text))


def write_file(path: Path, write) -> None:
    """Make ``path`` atomically: ``write(temporary path)`` writes it, then it is renamed."""
    _atomic_write_bytes(Path(path), write)


PART_KEY = b"dpsim.part"


def part_metadata(manifest: dict, request: dict) -> dict:
    """What every part a run writes records of it (in its Arrow schema metadata, under
    :data:`PART_KEY`): the manifest's identity fields (:data:`MANIFEST_FIELDS`: experiment,
    source, seed, code fingerprint, axes, methods) and the run's request (its history
    entry as the run started), so that the manifest can be rebuilt from the parts alone
    (:func:`manifest_from_parts`)."""
    return {**{k: manifest[k] for k in MANIFEST_FIELDS if k in manifest}, "request": request}


def with_provenance(table: pa.Table, provenance: dict) -> pa.Table:
    """``table`` with ``provenance`` (:func:`part_metadata`) in its schema metadata, where
    :func:`write_part` keeps it (a part copied by ``dpsim merge`` keeps its own)."""
    meta = dict(table.schema.metadata or {})
    meta[PART_KEY] = json.dumps(
        _json_safe(provenance), sort_keys=True, default=str, allow_nan=False
    ).encode()
    return table.replace_schema_metadata(meta)


def write_part(out: Path, table: pa.Table) -> Path:
    """Write one chunk's rows as a new Parquet part, atomically, with page checksums (a
    damaged page is found when read, never read as other numbers), and with the schema
    metadata of ``table`` (its provenance: :func:`with_provenance`)."""
    path = Path(out) / PARTS / f"part-{uuid.uuid4().hex}.parquet"
    _atomic_write_bytes(path, lambda tmp: pq.write_table(table, tmp, write_page_checksum=True))
    return path


CORRUPT = ".corrupt"


def set_aside(path: Path) -> Path:
    """Rename a damaged file ``path`` to ``NAME.corrupt`` (``NAME.corrupt-2``, … when taken),
    where no read looks for it; it is kept, never deleted. Returns the new path."""
    path = Path(path)
    target, n = path.with_name(path.name + CORRUPT), 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}{CORRUPT}-{n}")
    os.replace(path, target)
    _fsync(path.parent, directory=True)
    return target


def set_aside_files(out: Path) -> list[Path]:
    """The files of ``out`` set aside as damaged (:func:`set_aside`)."""
    return sorted(
        p
        for folder in (Path(out), Path(out) / PARTS)
        if folder.is_dir()
        for p in folder.glob(f"*{CORRUPT}*")
    )


def temporary_files(out: Path) -> list[Path]:
    """The temporary files (``.tmp-*``, :func:`_atomic_write_bytes`) in ``out`` and its parts."""
    return [
        p
        for folder in (Path(out), Path(out) / PARTS)
        if folder.is_dir()
        for p in folder.glob(".tmp-*")
    ]


def remove_temporary(out: Path) -> list[Path]:
    """Remove the temporary files a killed run left in ``out`` and its parts
    (:func:`temporary_files`): call it only while holding the folder (:func:`exclusive`), when
    no other writer can be half-way through one. Returns the files removed."""
    found = temporary_files(out)
    for path in found:
        path.unlink(missing_ok=True)
    return found


def part_files(out: Path) -> list[Path]:
    """The folder's Parquet parts (not those set aside as damaged), by name."""
    return sorted((Path(out) / PARTS).glob("part-*.parquet"))


UNREADABLE = (
    pa.ArrowException,
    OSError,
    ValueError,
    EOFError,
)  # what a damaged Parquet file raises


def _read_part(path: Path, columns=None) -> pa.Table:
    """One part, or only those of ``columns`` it has, its page checksums verified. Raises one
    of :data:`UNREADABLE` when the file is damaged or is no part (no point and rep columns)."""
    names = pq.read_schema(path).names
    if "point" not in names or "rep" not in names:
        raise ValueError("no point and rep columns")
    wanted = None if columns is None else [c for c in columns if c in names]
    return pq.read_table(path, columns=wanted, page_checksum_verification=True)


def _reason(exc: BaseException) -> str:
    """Why a file could not be read, short: the exception's name and its first sentence."""
    text = str(exc).strip().splitlines()
    return (
        f"{type(exc).__name__}: {text[0].split('. ')[0].rstrip('.')[:120]}"
        if text
        else type(exc).__name__
    )


def iter_parts(out: Path, columns=None, *, unreadable: list | None = None, say: bool = True):
    """Each readable part of ``out`` as (path, table), one at a time (``columns``: only those);
    the unreadable ones are left out, appended to ``unreadable`` as (path, why), and named by
    one :func:`warn` line once all are read (``say``: False when the caller reports them)."""
    bad = [] if unreadable is None else unreadable
    for f in part_files(out):
        try:
            table = _read_part(f, columns)
        except FileNotFoundError:  # set aside meanwhile by a run of another part of a split
            continue
        except UNREADABLE as exc:
            bad.append((f, _reason(exc)))
            continue
        yield f, table
    if bad and say:
        _once(warn, unreadable_line(out, bad))


def read_parts(
    out: Path, columns=None, *, say: bool = True
) -> tuple[list[pa.Table], list[tuple[Path, str]]]:
    """Every readable part of ``out`` (``columns``: only those), and the unreadable ones as
    (path, why) — one :func:`warn` line names them and says the folder reads as incomplete
    (``say``: False when the caller reports them itself)."""
    unreadable: list = []
    tables = [table for _, table in iter_parts(out, columns, unreadable=unreadable, say=say)]
    return tables, unreadable


def unreadable_line(out: Path, unreadable: list[tuple[Path, str]]) -> str:
    """The one line that names a folder's unreadable parts."""
    first, why = unreadable[0]
    more = f" and {len(unreadable) - 1} more" if len(unreadable) > 1 else ""
    return (
        f"{out}: {len(unreadable)} part{'s' if len(unreadable) > 1 else ''} cannot be read and "
        f"{'are' if len(unreadable) > 1 else 'is'} left out, so the folder is incomplete ({PARTS}/{first.name}: "
        f"{why}{more}): `dpsim run` into it computes the lanes again, `dpsim repair {out}` sets "
        f"{'them' if len(unreadable) > 1 else 'it'} aside"
    )


def set_aside_unreadable(out: Path, *, say: bool = True) -> list[tuple[Path, str]]:
    """Move every part of ``out`` that cannot be read (read whole, checksums verified) aside
    as ``NAME.corrupt`` (:func:`set_aside`; kept, never deleted), so that a run computes its
    lanes again; one note names them (``say``: False when the caller reports them itself). Call it holding the folder (:func:`exclusive`).
    Returns: (the part's former path, why) of each part set aside."""
    moved = []
    for f in part_files(out):
        try:
            _read_part(f)
        except FileNotFoundError:
            continue
        except UNREADABLE as exc:
            try:
                set_aside(f)
            except FileNotFoundError:  # another part of a split set it aside first
                continue
            moved.append((f, _reason(exc)))
    if moved and say:
        first, why = moved[0]
        more = f" and {len(moved) - 1} more" if len(moved) > 1 else ""
        note(
            f"{out}: {len(moved)} part{'s' if len(moved) > 1 else ''} could not be read ({PARTS}/{first.name}: "
            f"{why}{more}); moved aside as *{CORRUPT} (kept), {'their' if len(moved) > 1 else 'its'} lanes are "
            f"computed again"
        )
    return moved


def part_provenance(path: Path) -> dict | None:
    """What a part records of the run that wrote it (:func:`part_metadata`), None for a part
    written before dpsim recorded it. Raises one of :data:`UNREADABLE` for a damaged file."""
    raw = (pq.read_schema(path).metadata or {}).get(PART_KEY)
    return None if raw is None else _from_json(json.loads(raw))


def manifest_from_parts(out: Path) -> dict | None:
    """The manifest of ``out`` as its parts record it (:func:`part_metadata`): the identity
    fields they share, the history of the requests that wrote them (in the order they
    started; each marked ``from_parts``: what it computed is not recorded) and an entry
    saying it was rebuilt; no study summary, and marked incomplete
    until a run or ``dpsim repair`` (:mod:`dpsim.engine.storage.folder`) recounts it. None when
    no readable part records it.

    Raises:
        UsageError: one line when some parts record it and others do not, or they disagree
            on the experiment, seed or code.
    """
    records, unmarked = [], 0
    for f in part_files(out):
        try:
            record = part_provenance(f)
        except FileNotFoundError:
            continue
        except UNREADABLE:
            continue  # damaged: warned about, and set aside, where the parts are read
        if record is None:
            unmarked += 1
        else:
            records.append(record)
    if not records:
        return None
    if unmarked:
        raise UsageError(
            f"{out}: {unmarked} of {unmarked + len(records)} parts do not record what made them "
            f"(written before dpsim recorded it): its manifest cannot be rebuilt from them"
        )
    first = records[0]
    for record in records[1:]:
        for key, value in (
            ("experiment", record.get("experiment")),
            ("seed", record.get("seed")),
            ("code", record.get("code", {}).get("hash")),
        ):
            mine = first.get(key) if key != "code" else first.get("code", {}).get("hash")
            if value != mine:
                raise UsageError(
                    f"{out}: its parts disagree on the {key} ({mine!r} and {value!r}): its manifest "
                    f"cannot be rebuilt from them"
                )
    requests = {
        json.dumps(_json_safe(r["request"]), sort_keys=True, default=str): {
            **r["request"],
            "from_parts": True,
        }
        for r in records
        if r.get("request")
    }
    history = sorted(requests.values(), key=lambda r: str(r.get("started", "")))
    repaired = {
        "repaired": f"manifest rebuilt from the metadata of {len(records)} parts",
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    return {
        **{k: first[k] for k in MANIFEST_FIELDS if k in first},
        "history": [*history, repaired],
        "study": {},
        "diagnostics": {},
        "complete": False,
    }


METHOD_COLUMNS_KEY = b"dpsim.method_columns"
DERIVED_COLUMNS_KEY = b"dpsim.derived_columns"


def mark_columns(table: pa.Table, method_columns, derived_columns=()) -> pa.Table:
    """Record in the schema which columns are method outputs (metrics and diagnostics) and
    which are values derived on the host from the grid (:class:`~dpsim.engine.Derived`)."""
    meta = dict(table.schema.metadata or {})
    meta[METHOD_COLUMNS_KEY] = json.dumps(list(method_columns)).encode()
    meta[DERIVED_COLUMNS_KEY] = json.dumps(list(derived_columns)).encode()
    return table.replace_schema_metadata(meta)


def _marked(table: pa.Table, key: bytes) -> list:
    return json.loads((table.schema.metadata or {}).get(key, b"[]"))


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    """Arrow → pandas. Bool and int method outputs (diagnostics such as ``converged``,
    ``iterations``) load as pandas' nullable ``boolean`` / ``Int64`` whether or not this table
    has nulls, so a method without a solver (null ``converged``) never changes the dtypes."""
    frame = table.to_pandas()
    method_columns = set(_marked(table, METHOD_COLUMNS_KEY))
    for name, column in zip(table.column_names, table.columns):
        nullable = name in method_columns or column.null_count
        if nullable and pa.types.is_boolean(column.type):
            frame[name] = _nullable(column, False, pd.arrays.BooleanArray)
        elif nullable and pa.types.is_integer(
            column.type
        ):  # a checked cast: a uint64 ≥ 2⁶³ raises, never wraps
            frame[name] = _nullable(column.cast(pa.int64()), 0, pd.arrays.IntegerArray)
    frame.attrs["method_columns"] = sorted(method_columns)
    frame.attrs["derived_columns"] = _marked(table, DERIVED_COLUMNS_KEY)
    return frame


def _nullable(column: pa.ChunkedArray, fill, array_type):
    """``column`` (bool, or int64) as a pandas masked array (``array_type``: BooleanArray or
    IntegerArray), nulls masked, without going through Python objects (half the time of
    :func:`_to_pandas` on a large table)."""
    return array_type(column.fill_null(fill).to_numpy(), column.is_null().to_numpy())


ROW_ORDER = ("point", "rep", "method")


def load_results(out: Path) -> pd.DataFrame:
    """The tidy results table of a run directory: all parts concatenated, rows sorted by
    (point, rep, method) so that everything computed from it (summaries, figures' CSVs,
    checks) is the same to the last digit however the chunks were ordered on disk (parts
    have random names and chunks finish in any order)."""
    tables, _ = read_parts(out)
    if not tables:
        raise UsageError(f"no results in {str(out)!r}")
    methods = sorted({n for t in tables for n in _marked(t, METHOD_COLUMNS_KEY)})
    derived = sorted({n for t in tables for n in _marked(t, DERIVED_COLUMNS_KEY)})
    combined = pa.concat_tables(
        [t.replace_schema_metadata(None) for t in tables], promote_options="default"
    )
    order = [(c, "ascending") for c in ROW_ORDER if c in combined.column_names]
    if order:
        combined = combined.sort_by(order)
    return _to_pandas(mark_columns(combined, methods, derived))


def read_arrow_columns(out: Path, columns, *, written: Mapping | None = None) -> pa.Table | None:
    """Only ``columns`` of every part (those a part lacks are left out), as one Arrow table;
    None when the folder has no parts.

    Args:
        written: the parts this process wrote, by file name → the table written there. When the
            folder holds exactly those parts, they are taken from memory instead of read back
            (the same table: a part's bytes are its table's).
    """
    if written is not None and {p.name for p in part_files(out)} == set(written):
        tables = [  # in part_files' order, as a read would give them
            written[name].select([c for c in columns if c in written[name].column_names])
            for name in sorted(written)
        ]
    else:
        tables = read_parts(out, columns)[0]
    tables = [t.replace_schema_metadata(None) for t in tables]
    return pa.concat_tables(tables, promote_options="default") if tables else None


def read_columns(out: Path, columns) -> pd.DataFrame:
    """Only ``columns`` of every part (those a part lacks are left out), as one pandas table."""
    table = read_arrow_columns(out, columns)
    return pd.DataFrame(columns=list(columns)) if table is None else _to_pandas(table)


def completed(out: Path) -> set[tuple[int, int]]:
    """The (point id, rep) pairs already stored (in the parts that can be read)."""
    done: set[tuple[int, int]] = set()
    for table in read_parts(out, ["point", "rep"])[0]:
        cols = table.to_pydict()
        done.update(zip(cols["point"], cols["rep"]))
    return done
