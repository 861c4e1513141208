"""The results store: a directory of Parquet parts plus a JSON manifest.

One row per grid point × replicate × method (DESIGN "Results"). Parts are written
atomically (temporary file, then rename), so an interrupted run leaves only whole parts,
and re-running into the same directory computes only the missing (point, rep) pairs.
"""
from __future__ import annotations

import json
import math
import os
import platform
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dpsim.errors import UsageError

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
                raise UsageError(f"{what} {str(path)!r} lies under {str(parent)!r}, which is a file")
            if not path.exists() and not os.access(parent, os.W_OK | os.X_OK):
                raise UsageError(f"{what} {str(path)!r} cannot be created: {str(parent)!r} is not writable")
            break


def is_lock(name: str) -> bool:
    """Whether a file name in a run directory is one of its lock files (``.lock``, a part's
    ``.lock-part-I-of-N``, the manifest's ``.lock-manifest``): not results."""
    return name == LOCK or name.startswith(LOCK + "-")


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
        raise UsageError(f"cannot lock {handle.name!r} ({exc.strerror or exc}): this filesystem has no file locks; "
                         f"write into a local folder (parts: one folder each, then `dpsim merge`)") from None
    return True


def _other_split(out: Path, n: int) -> str | None:
    """A part I/M (M ≠ ``n``) another process is writing into ``out`` now, as "I/M", or None:
    parts of different splits of a grid overlap, so they never write one folder at once."""
    for path in sorted(out.glob(f"{LOCK}-part-*-of-*")):
        i, _, m = path.name[len(LOCK) + len("-part-"):].partition("-of-")
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

    Creates ``out``, and removes it again if it created it and nothing but lock files was
    written (a run that stopped before its manifest leaves nothing behind). Without
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
        if not _try_lock(handle, fcntl.LOCK_SH if part and fcntl else (fcntl.LOCK_EX if fcntl else 0)):
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise UsageError(f"another dpsim run ({holder}) is writing to {str(out)!r}; "
                             f"wait for it to finish, or choose another --out")
        if part is None:
            handle.seek(0)
            handle.truncate()
            handle.write(me)
            handle.flush()
        else:
            own = open(out / _part_lock(*part), "a+")
            if not _try_lock(own, fcntl.LOCK_EX if fcntl else 0):
                own.seek(0)
                raise UsageError(f"another dpsim run ({own.read().strip() or 'another process'}) is writing part "
                                 f"{part[0]}/{part[1]} to {str(out)!r}; wait for it to finish")
            other = _other_split(out, part[1])
            if other:
                raise UsageError(f"part {other} of another split is being written to {str(out)!r}; the parts "
                                 f"of one folder must share N, got --part {part[0]}/{part[1]}")
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
        handle.close()   # closing releases the lock
        if created and out.exists() and all(is_lock(p.name) for p in out.iterdir()):
            with open(out / LOCK, "a+") as last:    # nobody else is writing: remove what we made
                if _try_lock(last, fcntl.LOCK_EX if fcntl else 0):
                    for p in out.iterdir():
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


def _atomic_write_bytes(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600: results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


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


def read_manifest(out: Path) -> dict | None:
    """A run directory's manifest (None without one); the strings "inf", "-inf" and "nan"
    are read back as floats."""
    return read_json(Path(out) / MANIFEST)


def check_compatible(out: Path, experiment: str, seed: int) -> None:
    """Refuse to mix experiments or seeds in one directory (resume needs the same seed), and a
    path that cannot be a results directory."""
    check_directory(out, "--out")
    manifest = read_manifest(out)
    if manifest is None:
        if Path(out).exists() and any(not is_lock(p.name) for p in Path(out).iterdir()):
            raise UsageError(f"--out {str(out)!r} is not empty and holds no dpsim manifest")
        return
    if manifest["experiment"] != experiment or manifest["seed"] != seed:
        raise UsageError(f"--out {str(out)!r} holds experiment {manifest['experiment']!r} "
                         f"seed {manifest['seed']}; choose another directory")


CACHE_OWNER = "dpsim-cache"   # a manifest's "owner" when the folder is dpsim's own cache (verify's runs/verify)


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
    fingerprint, :mod:`dpsim.experiment.provenance`), as a description; None when the folder
    holds no run or one made by ``code``."""
    from dpsim.experiment.provenance import describe
    recorded = recorded_code(out)
    if recorded is None or recorded.get("hash") == code["hash"]:
        return None
    return describe(recorded) if recorded else "code that was not recorded (dpsim before 0.3)"


def code_change(out: Path, code: dict) -> str:
    """What changed between the code that made ``out`` and ``code``: "changed modules: a, b"
    (at most five named), or why they cannot be named."""
    from dpsim.experiment.provenance import changed_modules
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
    from dpsim.experiment.provenance import describe
    made = other_code(out, code)
    if made is None:
        return False
    if accept:
        return True
    raise UsageError(f"--out {str(out)!r} holds rows made by {made}; this is {describe(code)} "
                     f"({code_change(out, code)}): rows of different code are never mixed; go back to that code "
                     f"(`git stash`), choose another --out, or extend it with this code by `dpsim run "
                     f"--accept-code-change` (recorded in its manifest)")


def accepted_segments(previous: dict, code: dict, out: Path, when: str) -> list[dict]:
    """The manifest's ``segments`` after ``--accept-code-change`` into a folder whose manifest
    is ``previous``: the folder's segments so far (one for the code that made it, when it has
    none yet), then a new one for ``code``.

    A segment is {"code": fingerprint, "accepted": when it began, "parts_before": the part
    files stored when it began}: the rows of a segment are those of the parts its successor
    found that it did not (the last segment's: every part not listed in its
    ``parts_before``); every row of a part comes from one code.
    """
    from dpsim.experiment.provenance import changed_modules
    segments = list(previous.get("segments") or [{"code": previous.get("code", {}), "accepted": None,
                                                   "parts_before": []}])
    segments.append({"code": code, "accepted": when, "parts_before": [p.name for p in part_files(out)],
                     "changed_modules": changed_modules(previous.get("code", {}), code)})
    return segments


def write_manifest(out: Path, content: dict) -> None:
    """Write the manifest atomically, as valid JSON (non-finite floats as strings)."""
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


def write_part(out: Path, table: pa.Table) -> Path:
    """Write one chunk's rows as a new Parquet part, atomically."""
    path = Path(out) / PARTS / f"part-{uuid.uuid4().hex}.parquet"
    _atomic_write_bytes(path, lambda tmp: pq.write_table(table, tmp))
    return path


def remove_temporary(out: Path) -> list[Path]:
    """Remove the temporary files (``.tmp-*``, :func:`_atomic_write_bytes`) a killed run left
    in ``out`` and its parts: call it only while holding the folder (:func:`exclusive`), when
    no other writer can be half-way through one. Returns the files removed."""
    found = [p for folder in (Path(out), Path(out) / PARTS) if folder.is_dir() for p in folder.glob(".tmp-*")]
    for path in found:
        path.unlink(missing_ok=True)
    return found


def part_files(out: Path) -> list[Path]:
    return sorted((Path(out) / PARTS).glob("part-*.parquet"))


METHOD_COLUMNS_KEY = b"dpsim.method_columns"
DERIVED_COLUMNS_KEY = b"dpsim.derived_columns"


def mark_columns(table: pa.Table, method_columns, derived_columns=()) -> pa.Table:
    """Record in the schema which columns are method outputs (metrics and diagnostics) and
    which are values derived on the host from the grid (:class:`~dpsim.experiment.Derived`)."""
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
        elif nullable and pa.types.is_integer(column.type):     # a checked cast: a uint64 ≥ 2⁶³ raises, never wraps
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
    files = part_files(out)
    if not files:
        raise UsageError(f"no results in {str(out)!r}")
    tables = [pq.read_table(f) for f in files]
    methods = sorted({n for t in tables for n in _marked(t, METHOD_COLUMNS_KEY)})
    derived = sorted({n for t in tables for n in _marked(t, DERIVED_COLUMNS_KEY)})
    combined = pa.concat_tables([t.replace_schema_metadata(None) for t in tables], promote_options="default")
    order = [(c, "ascending") for c in ROW_ORDER if c in combined.column_names]
    if order:
        combined = combined.sort_by(order)
    return _to_pandas(mark_columns(combined, methods, derived))


def read_arrow_columns(out: Path, columns) -> pa.Table | None:
    """Only ``columns`` of every part (those a part lacks are left out), as one Arrow table;
    None when the folder has no parts."""
    tables = []
    for f in part_files(out):
        names = pq.read_schema(f).names
        tables.append(pq.read_table(f, columns=[c for c in columns if c in names]).replace_schema_metadata(None))
    return pa.concat_tables(tables, promote_options="default") if tables else None


def read_columns(out: Path, columns) -> pd.DataFrame:
    """Only ``columns`` of every part (those a part lacks are left out), as one pandas table."""
    table = read_arrow_columns(out, columns)
    return pd.DataFrame(columns=list(columns)) if table is None else _to_pandas(table)


def completed(out: Path) -> set[tuple[int, int]]:
    """The (point id, rep) pairs already stored."""
    done: set[tuple[int, int]] = set()
    for f in part_files(out):
        cols = pq.read_table(f, columns=["point", "rep"]).to_pydict()
        done.update(zip(cols["point"], cols["rep"]))
    return done
