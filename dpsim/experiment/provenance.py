"""What made a study folder: the code that computed its rows, and where it ran.

A run directory's manifest records a *code fingerprint* (:func:`fingerprint`): a hash of
the library's source (every ``.py`` file of the installed ``dpsim`` package) and a hash of
the experiment's definition (the source files of its functions, found through their
closures: a paper package whole, a study file and any helper module it imports; the bytecode
of functions that have no file, as in ``python -c``), with the
dpsim version and, when dpsim runs from a git checkout, the commit and whether the tree was
dirty. Rows made by different code are never mixed: extending a folder whose fingerprint
differs is refused (:func:`dpsim.experiment.store.check_code`), and ``dpsim verify``, whose
folders are its own cache, recomputes such a folder instead.

:func:`environment` records where it ran: the command line, host, CPU or device, and the
versions of Python, jax, jaxlib, numpy, pandas, pyarrow and matplotlib.
"""
from __future__ import annotations

import hashlib
import inspect
import marshal
import platform
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import dpsim

LIBRARY = Path(dpsim.__file__).resolve().parent


def _functions(experiment) -> list[Any]:
    """Every function an experiment calls from its seams (methods, stages, derived values,
    host hooks)."""
    found = [experiment.truth, experiment.generate, experiment.privatise, experiment.resolve_shape,
             experiment.validate_point, experiment.lane_bytes, experiment.stream_point]
    found += [m.fn for m in experiment.methods.values()]
    found += [d.fn for d in experiment.derived]
    return [f for f in found if f is not None]


def _reachable(roots: Iterable[Any]) -> list[Any]:
    """The functions reachable from ``roots`` through closures, ``functools.partial`` and
    ``__wrapped__`` (a mutant's wrapper reaches the function it wraps)."""
    seen, stack, out = set(), list(roots), []
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        out.append(fn)
        inner = getattr(fn, "func", None) or getattr(fn, "__wrapped__", None)
        if callable(inner):
            stack.append(inner)
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:            # an empty cell
                continue
            if callable(value):
                stack.append(value)
            elif isinstance(value, dict):
                stack.extend(v for v in value.values() if callable(v))
            elif isinstance(value, (list, tuple)):
                stack.extend(v for v in value if callable(v))
    return out


def _source(fn) -> Path | None:
    """The file a function was defined in, or None (a builtin, or code with no file such as
    ``python -c``)."""
    try:
        source = inspect.getsourcefile(fn)
    except TypeError:                     # a builtin or a C function
        return None
    return Path(source).resolve() if source and Path(source).is_file() else None


def _fileless_code(functions) -> bytes:
    """The bytecode of those of ``functions`` that have no source file (``python -c``, an
    interactive session), so that they still count in the fingerprint."""
    codes = [marshal.dumps(fn.__code__) for fn in functions if _source(fn) is None and hasattr(fn, "__code__")]
    return b"".join(sorted(codes))


def definition_files(experiment, functions=None) -> list[Path]:
    """The source files that define ``experiment`` outside the library: each function's file,
    and for a function inside a package (a paper's ``experiments/<paper>/``) every ``.py``
    file of that package, so its checks, mutants and helpers count too. ``functions``: the
    experiment's reachable functions, when already found."""
    files: set[Path] = set()
    for fn in functions if functions is not None else _reachable(_functions(experiment)):
        path = _source(fn)
        if path is None:
            continue
        if LIBRARY in path.parents:
            continue
        package = path.parent
        files |= set(package.glob("*.py")) if (package / "__init__.py").exists() else {path}
    return sorted(files)


def _digest(files: Iterable[Path], root: Path | None = None) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        name = str(path.relative_to(root)) if root and root in path.parents else path.name
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@lru_cache(maxsize=1)
def library_hash() -> str:
    """The hash of every ``.py`` file of the installed dpsim package (16 hex digits)."""
    return _digest(LIBRARY.rglob("*.py"), LIBRARY)


@lru_cache(maxsize=1)
def git_state() -> dict:
    """``{"commit": …, "dirty": bool}`` when dpsim runs from a git checkout, else ``{}``."""
    root = LIBRARY.parent
    if not (root / ".git").exists():
        return {}
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"commit": commit, "dirty": bool(status.strip())}


def fingerprint(experiment) -> dict:
    """The code fingerprint recorded in a manifest.

    Returns:
        ``{"hash": …, "library": …, "definition": …, "definition_files": [...],
        "dpsim": version, "commit"?, "dirty"?}``; ``hash`` (16 hex digits) combines the
        library's and the definition's and is what must match to extend a folder.
    """
    functions = _reachable(_functions(experiment))
    files = definition_files(experiment, functions)
    definition = hashlib.sha256(_digest(files).encode() + _fileless_code(functions)).hexdigest()[:16]
    library = library_hash()
    combined = hashlib.sha256(f"{library}:{definition}".encode()).hexdigest()[:16]
    return {"hash": combined, "library": library, "definition": definition,
            "definition_files": [p.name for p in files], "dpsim": dpsim.__version__, **git_state()}


def describe(code: dict) -> str:
    """One line naming a fingerprint: its hash, the dpsim version and the commit."""
    commit = code.get("commit")
    where = f", commit {commit[:10]}{' + uncommitted changes' if code.get('dirty') else ''}" if commit else ""
    return f"code {code.get('hash', '?')} (dpsim {code.get('dpsim', '?')}{where})"


@lru_cache(maxsize=1)
def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment() -> dict:
    """Where and how a run was made: command line, host, CPU, device, package versions."""
    import jax
    import jaxlib
    import matplotlib
    import numpy
    import pandas
    import pyarrow
    device = jax.devices()[0]
    return {"command": sys.argv, "host": platform.node(), "cpu": _cpu(), "backend": jax.default_backend(),
            "device": getattr(device, "device_kind", str(device)), "python": platform.python_version(),
            "versions": {"dpsim": dpsim.__version__, "jax": jax.__version__, "jaxlib": jaxlib.__version__,
                         "numpy": numpy.__version__, "pandas": pandas.__version__, "pyarrow": pyarrow.__version__,
                         "matplotlib": matplotlib.__version__}}
