"""What made a study folder: the code that computed its rows, and where it ran.

A run directory's manifest records a *code fingerprint* (:func:`fingerprint`): one digest per
Python module that can change the experiment's rows, and a hash of them all. A module's
digest is taken from its syntax tree (:func:`~dpsim.engine.storage.digests.module_digest`: ``ast.parse``, docstrings
removed, positions left out), so an edit of a comment, a docstring, a blank line or the
layout keeps every folder usable, while any change of what the code does changes it. The
modules are:

* the experiment's *definition modules* (:func:`definition_modules`, :func:`_modules`):
  outside the library, the files of the functions it reaches (its seams, closures,
  ``functools.partial``, ``__wrapped__``) and of the statement that makes it (a module of
  the same package binding it), and the study or paper modules their code imports. Such a
  module counts by its *live* statements (:func:`live_lines`): those defining the reached
  functions and making the experiment, then every statement binding a name they use,
  followed through imports to the names imported, to a fixed point. So its ``CHECKS``,
  ``MUTANTS`` and ``AUDITS``, and what only they use (regions, predictions, a mutant's
  method), are not the rows' identity, and neither is a figure layout (a ``FigureSpec(...)``
  or ``Panel(...)`` call, a ``figure=`` argument, blanked before). Functions with no file
  (``python -c``) count by their bytecode, and plain values held in the reached functions'
  closures (a mutant's factor) by their ``repr``;
* the experiment's *wiring* (:func:`_structure`, recorded as ``<experiment NAME>``): its
  fields but the figure, title, description, default axis values and replicates, with each
  function named by module and name (which truth, which methods, which axes are shape or
  analysis axes, padding, derived values);
* the *library modules* (``dpsim/…``) that the definition modules and the engine
  (:mod:`dpsim.engine.execution.runner`, the modules of the functions reached) import, directly or
  through other modules, followed statically (imports inside functions and the packages
  above a module included); each whole but its docstrings. Their digests are kept between
  processes (:func:`~dpsim.engine.storage.digests.code_cache`, one file per module content), so a command reads them
  instead of parsing dpsim again.

The manifest keeps the per-module digests (``code["modules"]``), so a refusal names the
modules that changed (:func:`changed_modules`). Rows made by different code are never mixed:
extending a folder whose fingerprint differs is refused (:func:`dpsim.engine.storage.store.check_code`)
unless the run says ``--accept-code-change``, which the manifest records as a new segment
(:func:`dpsim.engine.storage.store.accepted_segments`); ``dpsim verify`` replaces only the folders
of its own cache (:data:`dpsim.engine.storage.store.CACHE_OWNER`) and refuses any other.

:func:`environment` records where it ran: the command line, host, CPU or device, and the
versions of Python, jax, jaxlib, numpy, pandas, pyarrow and matplotlib.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import os
import platform
import subprocess
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import dpsim
from dpsim.engine.storage.digests import definition_statements, digest_of, live_lines, module_digest

LIBRARY = Path(dpsim.__file__).resolve().parent
_LIBRARY_PREFIX = str(LIBRARY) + os.sep
_PAPERS_PREFIX = str(LIBRARY / "experiments") + os.sep  # papers installed as dpsim.experiments
ENGINE = ("dpsim.engine.execution.runner",)  # what every run executes, whatever the experiment
# top-level names whose statements are verification, not the rows' identity


def _functions(experiment) -> list[Any]:
    """Every function an experiment calls from its seams (methods, stages, derived values,
    host hooks)."""
    found = [
        experiment.truth,
        experiment.generate,
        experiment.privatise,
        experiment.resolve_shape,
        experiment.validate_point,
        experiment.tuning.lane_bytes,
        experiment.keys.stream_point,
    ]
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
            except ValueError:  # an empty cell
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
    except TypeError:  # a builtin or a C function
        return None
    return Path(source).resolve() if source and Path(source).is_file() else None


def _fileless_code(functions) -> bytes:
    """The bytecode of those of ``functions`` that have no source file (``python -c``, an
    interactive session, a block run by ``exec``), so that they still count in the
    fingerprint (:func:`_code_text`)."""
    codes = [
        _code_text(fn.__code__)
        for fn in functions
        if _source(fn) is None and hasattr(fn, "__code__")
    ]
    return "\n".join(sorted(codes)).encode()


def _constant_text(value) -> str:
    """A code object's constant as text: a nested code object by :func:`_code_text`, a
    frozenset in sorted order (its ``repr`` follows string hashing, which differs per process)."""
    if hasattr(value, "co_code"):
        return _code_text(value)
    if isinstance(value, frozenset):
        return "frozenset(" + ", ".join(sorted(_constant_text(v) for v in value)) + ")"
    if isinstance(value, tuple):
        return "(" + ", ".join(_constant_text(v) for v in value) + ")"
    return repr(value)


def _code_text(code) -> str:
    """A text that determines what a code object does: its bytecode, constants (nested code
    objects the same way), names and argument counts, without its file, lines or positions.
    (``marshal.dumps`` is not it: its bytes depend on the objects' reference counts.)"""
    consts = ", ".join(_constant_text(c) for c in code.co_consts)
    return (
        f"code({code.co_code.hex()}; [{consts}]; {code.co_names}; {code.co_varnames}; {code.co_freevars}; "
        f"{code.co_cellvars}; {code.co_argcount}, {code.co_posonlyargcount}, {code.co_kwonlyargcount}, "
        f"{code.co_flags})"
    )


PLAIN = (int, float, str, bool, bytes, type(None))


def _plain(value) -> bool:
    if isinstance(value, PLAIN):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(_plain(k) and _plain(v) for k, v in value.items())
    return False


def _closure_values(functions) -> bytes:
    """The plain values (numbers, strings, and lists, tuples and dicts of them) held in the
    closures of ``functions``, by ``repr``: what a factory such as a mutant's
    ``scaled_analysis({"eps": 2.0})`` was given, which its code alone does not show."""
    found = []
    for fn in functions:
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if _plain(value):
                found.append(f"{_where(fn)}:{getattr(fn, '__qualname__', '?')}:{value!r}")
    return "\n".join(sorted(found)).encode()


# fields of an experiment (and of its methods, derived values, axis types) that describe or
# draw it and cannot change a row; ``axes`` and ``reps`` are the default request (rows carry
# their own axis values and replicate numbers), of which only the axis names count
PRESENTATION_FIELDS = frozenset({"figure", "title", "description", "label", "doc", "reps"})


def _structure(value, seen=frozenset()) -> str:
    """A text of an experiment's wiring that determines its rows with its modules' code: its
    fields (not :data:`PRESENTATION_FIELDS`; of ``axes`` only the names), functions by module
    and qualified name (their code counts in their modules), dataclasses field by field,
    containers element by element, plain values by ``repr``; anything else by its type."""
    import dataclasses

    if isinstance(value, PLAIN):
        return repr(value)
    if id(value) in seen:
        return "<cycle>"
    seen = seen | {id(value)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = []
        for f in dataclasses.fields(value):
            if f.name in PRESENTATION_FIELDS:
                continue
            item = getattr(value, f.name)
            text = (
                repr(sorted(item))
                if f.name == "axes" and isinstance(item, dict)
                else _structure(item, seen)
            )
            fields.append(f"{f.name}={text}")
        return f"{type(value).__qualname__}({', '.join(fields)})"
    if isinstance(value, dict) or hasattr(value, "items") and hasattr(value, "keys"):
        return (
            "{"
            + ", ".join(
                f"{_structure(k, seen)}: {_structure(v, seen)}"
                for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))
            )
            + "}"
        )
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_structure(v, seen) for v in value) + "]"
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(_structure(v, seen) for v in value)) + "}"
    inner = getattr(value, "func", None)
    if inner is not None and callable(inner):  # functools.partial
        return (
            f"partial({_structure(inner, seen)}, {_structure(getattr(value, 'args', ()), seen)}, "
            f"{_structure(getattr(value, 'keywords', {}), seen)})"
        )
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{_where(value)}:{value.__qualname__}"
    return type(value).__qualname__


def _where(fn) -> str:
    """Where a function is defined, the same in every process: a library or definition
    module by its key (``dpsim/metrics.py``, ``study.py``; a study file's module name is made
    up when it loads), an installed package's by its module name."""
    path = _source(fn)
    if path is None or (_installed(path) and not _in_library(path)):
        return getattr(fn, "__module__", None) or "?"
    if _in_library(path):
        return str(path.relative_to(LIBRARY.parent))
    return str(path.relative_to(_anchor(path)))


def _module_file(base: Path, parts: list[str]) -> Path | None:
    """The file of module ``parts`` under directory ``base`` (``a/b.py`` or ``a/b/__init__.py``)."""
    if not parts:
        init = base / "__init__.py"
        return init if init.is_file() else None
    target = os.path.join(base, *parts)
    for path in (target + ".py", os.path.join(target, "__init__.py")):
        if os.path.isfile(path):
            return Path(path)  # under a resolved folder: resolved itself (no links inside packages)
    return None


def _anchor(path: Path) -> Path:
    """The directory above a definition module's top package (the module's own directory
    when it is in none): its key in the manifest is its path from there."""
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder


def _library_module(name: str) -> Path | None:
    parts = name.split(".")
    return _module_file(LIBRARY.parent, parts) if parts[0] == "dpsim" else None


def _resolved(path: Path, level: int, module: str, names: tuple, anchor: Path | None) -> list[Path]:
    """The files an import of the module at ``path`` loads that can matter: the module, each
    imported name that is itself a submodule, and the packages above them (library modules
    under ``dpsim/``, definition modules under ``anchor``, the definition's top folder)."""
    if level:
        base = path.parent
        for _ in range(level - 1):
            base = base.parent
        roots = [(base, module.split(".") if module else [])]
    else:
        parts = module.split(".")
        roots = [(LIBRARY.parent, parts)] if parts[0] == "dpsim" else []
        if anchor is not None:
            roots.append((anchor, parts))
        loaded = sys.modules.get(module)
        origin = getattr(loaded, "__file__", None)
        if origin and anchor is not None and Path(origin).resolve().is_relative_to(anchor):
            roots.append(
                (
                    Path(origin).resolve().parent,
                    [] if Path(origin).name == "__init__.py" else [Path(origin).stem],
                )
            )
    found = []
    for base, parts in roots:
        target = _module_file(base, parts)
        if target is None:
            continue
        for i in range(1, len(parts)):  # the packages above it run first
            above = _module_file(base, parts[:i])
            if above is not None:
                found.append(above)
        found.append(target)
        folder = target.parent if target.name == "__init__.py" else None
        for name in names if folder is not None else ():
            sub = _module_file(folder, [name])
            if sub is not None and name != "*":
                found.append(sub)
        break
    return found


def _in_library(path: Path) -> bool:
    """Whether ``path`` is a module of dpsim's library (not of the papers installed with it
    as ``dpsim.experiments``, which are definition modules)."""
    text = str(path)
    return text.startswith(_LIBRARY_PREFIX) and not text.startswith(_PAPERS_PREFIX)


@lru_cache(maxsize=1)
def _installed_roots() -> tuple[Path, ...]:
    """The folders of the standard library and installed packages."""
    paths = sysconfig.get_paths()
    return tuple(
        {
            Path(paths[k]).resolve()
            for k in ("stdlib", "platstdlib", "purelib", "platlib")
            if k in paths
        }
    )


@lru_cache(maxsize=1)
def _paper_packages() -> frozenset[str]:
    """The top-level packages of the papers installed under the ``dpsim.papers`` entry points."""
    from importlib.metadata import entry_points

    return frozenset(point.value.split(".")[0] for point in entry_points(group="dpsim.papers"))


def _installed(path: Path) -> bool:
    """Whether ``path`` is a module of Python or of an installed package (a virtual
    environment may lie inside a study's folder)."""
    text = str(path)
    return any(text.startswith(str(root) + os.sep) for root in _installed_roots())


def _is_definition(fn, path: Path) -> bool:
    """Whether the file of a reached function defines the experiment: outside the library,
    and not a module of Python or of an installed package other than a paper's (jax's own
    functions, reached through a ``jax.jit`` closure, are jax's version, not the study's)."""
    if _in_library(path):
        return False
    if not _installed(path):
        return True
    return (getattr(fn, "__module__", None) or "").split(".")[0] in _paper_packages() - {"dpsim"}


def definition_modules(experiment, functions=None) -> list[Path]:
    """The definition modules of ``experiment`` (module docstring): the file of each function
    it reaches outside the library, and the non-library modules those import (under the
    same top folder), followed statically. ``functions``: its reachable functions, when
    already found."""
    modules, library = _modules(experiment, functions)
    return sorted(modules)


class _Roots:
    """What of one definition module the rows depend on: the top-level names of the
    functions reached there (their own, or the def they are nested in) and the names other
    modules import from it (None: all of it), the first lines of top-level lambdas reached,
    and the live statements last found (:func:`live_lines`)."""

    def __init__(self, anchor: Path):
        self.anchor, self.lines, self.names, self.live = anchor, set(), set(), None

    def add(self, names) -> None:
        if names is None or self.names is None:
            self.names = None
        else:
            self.names |= set(names)


def _bindings(experiment, folders: set[Path]) -> dict[Path, set[str]]:
    """The modules loaded from ``folders`` (the packages of the reached functions' files) and
    their sub-packages (a paper's ``figures/``) that bind ``experiment`` (the object, or one of
    its class and name: a mutant of it), with the names they bind it to: where its wiring is
    written (xu's ``scenarios.py``, cai's ``figures/edge.py``)."""
    name, found = getattr(experiment, "name", None), {}
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if not isinstance(origin, str) or not origin.endswith(".py"):
            continue
        parent = Path(origin).parent.resolve()
        if parent not in folders and not any(folder in parent.parents for folder in folders):
            continue
        names = {
            key
            for key, value in list(vars(module).items())
            if value is experiment
            or (type(value) is type(experiment) and getattr(value, "name", None) == name)
        }
        if names:
            found.setdefault(Path(origin).resolve(), set()).update(names)
    return found


def _alias(node: ast.stmt) -> bool:
    """Whether a statement only names what another module made: an import, or an
    assignment of a name or attribute (``FIG7 = individual.FIG7``)."""
    return isinstance(node, (ast.Import, ast.ImportFrom)) or (
        isinstance(node, ast.Assign) and isinstance(node.value, (ast.Name, ast.Attribute))
    )


def _attributes_used(statements: tuple, live: list[int], name: str) -> set[str] | None:
    """The attributes the live statements read from the module bound to ``name`` (``m.x`` →
    "x"); None when they use it otherwise (passed on whole)."""
    found = set()
    for i in live:
        node = statements[i].node
        bases = {
            id(n.value)
            for n in ast.walk(node)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name
        }
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute) and id(n.value) in bases:
                found.add(n.attr)
            elif (
                isinstance(n, ast.Name)
                and n.id == name
                and id(n) not in bases
                and isinstance(n.ctx, ast.Load)
            ):
                return None
    return found


def _import_targets(path: Path, node, anchor: Path) -> list[tuple[Path, str | None, str | None]]:
    """What an import statement of the module at ``path`` brings in: (file, the name it binds,
    the name imported from the file, or None when the name is the module itself)."""
    found = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            for target in _resolved(path, 0, alias.name, (), anchor)[-1:]:
                found.append(
                    (target, alias.asname, None)
                )  # without "as", the top package is bound: all of it
        return found
    files = _resolved(path, node.level, node.module or "", (), anchor)
    if not files:
        return found
    module = files[-1]
    for alias in node.names:
        sub = _module_file(module.parent, [alias.name]) if module.name == "__init__.py" else None
        if sub is not None:
            found.append((sub, alias.asname or alias.name, None))
        else:
            found.append((module, None, alias.name))
    return found


def _modules(experiment, functions=None) -> tuple[dict[Path, tuple[Path, str]], set[Path]]:
    """(definition module → (its anchor, its digest), library modules) of ``experiment``.

    A definition module counts by its live statements (:func:`live_lines`): those holding a
    reached function or binding the experiment, those binding names that other live code
    imports from it, and what they need. Its live imports bring in further definition
    modules (with the names imported, or the attributes read from an imported module) and
    library modules."""
    functions = functions if functions is not None else _reachable(_functions(experiment))
    roots: dict[Path, _Roots] = {}
    library: set[Path] = {p for p in (_library_module(n) for n in ENGINE) if p is not None}
    for fn in functions:
        path = _source(fn)
        if path is None:
            continue
        if _in_library(path):
            library.add(path)
        elif _is_definition(fn, path):
            entry = roots.setdefault(path, _Roots(_anchor(path)))
            code = getattr(fn, "__code__", None)
            # the code's own name (a functools.wraps wrapper's __qualname__ is the wrapped one's)
            head = (
                getattr(code, "co_qualname", None) or getattr(fn, "__qualname__", None) or "<?>"
            ).split(".")[0]
            if not head.startswith("<") and any(
                head in st.binds for st in definition_statements(path)
            ):
                entry.add({head})  # a top-level def or class, or a function inside one
            elif code is not None:  # a lambda at the top level, or a name not bound there
                entry.lines.add(code.co_firstlineno)
            else:  # a class or object without code: all of its file
                entry.add(None)
    for path, names in _bindings(experiment, {p.parent for p in roots}).items():
        statements = definition_statements(path)
        made = {n for n in names if any(n in st.binds and not _alias(st.node) for st in statements)}
        if made and (_is_definition(None, path) or path in roots):
            roots.setdefault(path, _Roots(_anchor(path))).add(made)
    changed = True
    while changed:
        changed = False
        for path, entry in list(roots.items()):
            statements = definition_statements(path)
            live = live_lines(statements, entry.lines, entry.names)
            if live == entry.live:
                continue
            entry.live, changed = live, True
            for i in live:
                for node in ast.walk(statements[i].node):
                    if not isinstance(node, (ast.Import, ast.ImportFrom)):
                        continue
                    top = node is statements[i].node
                    for target, bound, imported in _import_targets(path, node, entry.anchor):
                        if _in_library(target):
                            library.add(target)
                        elif target.is_relative_to(entry.anchor) and not _installed(target):
                            other = roots.setdefault(target, _Roots(entry.anchor))
                            if imported is not None:
                                other.add({imported} if imported != "*" else None)
                            else:
                                other.add(
                                    _attributes_used(statements, live, bound)
                                    if top and bound
                                    else None
                                )
    definitions = {}
    for path, entry in roots.items():
        statements = definition_statements(path)
        text = "\n".join(statements[i].text for i in entry.live or ())
        definitions[path] = (entry.anchor, hashlib.sha256(text.encode()).hexdigest()[:16])
    return definitions, _library_closure(library)


def _library_closure(roots: set[Path]) -> set[Path]:
    """``roots`` and every library module they import, directly or through others."""
    found, stack = set(), list(roots)
    while stack:
        path = stack.pop()
        if path in found:
            continue
        found.add(path)
        for i in range(1, len(path.relative_to(LIBRARY.parent).parts)):  # its packages run first
            init = (
                LIBRARY.parent.joinpath(*path.relative_to(LIBRARY.parent).parts[:i]) / "__init__.py"
            )
            if init.is_file() and init not in found:
                stack.append(init)
        for level, module, names in digest_of(str(path))[1]:
            stack.extend(p for p in _resolved(path, level, module, names, None) if _in_library(p))
    return found


def _combined(digests: dict[str, str], extra: bytes = b"") -> str:
    text = "\n".join(f"{k} {v}" for k, v in sorted(digests.items())).encode()
    return hashlib.sha256(text + b"\0" + extra).hexdigest()[:16]


@lru_cache(maxsize=1)
def library_hash() -> str:
    """The hash of every module of the installed dpsim package, each by :func:`module_digest`
    (16 hex digits): what changes when any of dpsim's code does."""
    return _combined(
        {str(p.relative_to(LIBRARY.parent)): module_digest(p) for p in LIBRARY.rglob("*.py")}
    )


@lru_cache(maxsize=1)
def git_state() -> dict:
    """``{"commit": …, "dirty": bool}`` when dpsim runs from a git checkout, else ``{}``."""
    root = LIBRARY.parent
    if not (root / ".git").exists():
        return {}
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            [
                "git",
                "--no-optional-locks",
                "-C",
                str(root),
                "status",
                "--porcelain",
                "--untracked-files=no",
            ],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"commit": commit, "dirty": bool(status.strip())}


# The import closure of an experiment (:func:`_modules`) walks and parses its definition
# modules: tens of milliseconds a run, more than a short run computes. It is kept in this process
# per experiment object (at most _MEMO_SIZE) while none of the files it read changed (their
# modification time and size), so that a notebook's or a benchmark's re-runs do not walk again.
_MODULES_MEMO: dict = {}
_MEMO_SIZE = 64


def clear_fingerprints() -> None:
    """Forget what this process keeps of fingerprints (the import closures and the library
    digests): the next run walks and reads them again, as a fresh process would (the
    benchmarks' cold runs)."""
    from dpsim.engine.storage import digests

    _MODULES_MEMO.clear()
    digests._DIGESTS.clear()


def _file_stats(paths) -> tuple:
    """(path, modification time in ns, size) of each file, sorted; (path, None, None) for one gone."""
    out = []
    for path in sorted(paths, key=str):
        try:
            st = os.stat(path)
            out.append((str(path), st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((str(path), None, None))
    return tuple(out)


def _modules_memoised(experiment, functions) -> tuple[dict[Path, tuple[Path, str]], dict[str, str]]:
    """:func:`_modules` of ``experiment``, with the library modules' digests
    (``{key: module_digest}``, keyed as in :func:`fingerprint`), kept in this process while the
    files it read are unchanged (:data:`_MODULES_MEMO`): one ``stat`` per file, not a path
    resolution and a digest lookup per module."""
    key, functions_key = id(experiment), tuple(id(f) for f in functions)
    held = _MODULES_MEMO.get(key)
    if (
        held is not None
        and held[0] is experiment
        and held[1] == functions_key
        and _file_stats(held[2]) == held[3]
    ):
        return held[4]
    definitions, library = _modules(experiment, functions)
    paths = set(definitions) | set(library)
    stats = _file_stats(paths)
    lib = {str(p.relative_to(LIBRARY.parent)): module_digest(p) for p in library}
    _MODULES_MEMO.pop(key, None)
    while len(_MODULES_MEMO) >= _MEMO_SIZE:
        _MODULES_MEMO.pop(next(iter(_MODULES_MEMO)))
    _MODULES_MEMO[key] = (experiment, functions_key, paths, stats, (definitions, lib))
    return definitions, lib


def fingerprint(experiment) -> dict:
    """The code fingerprint recorded in a manifest (module docstring). Its import closure and
    library digests are kept in this process while the files they read are unchanged
    (:func:`_modules_memoised`, :func:`dpsim.engine.storage.digests.digest_of`).

    Returns:
        ``{"hash": …, "library": …, "definition": …, "modules": {key: digest},
        "definition_files": [...], "dpsim": version, "commit"?, "dirty"?}``; ``modules`` maps
        each module's key (``dpsim/metrics.py`` for the library, the path from its top
        folder for a definition module: ``experiments/cai/figures/edge.py``, ``study.py``) to its
        :func:`module_digest`; ``library`` and ``definition`` (16 hex digits each) combine
        those of each kind (the definition's with the bytecode of file-less functions and
        the plain closure values); ``hash`` combines both and is what must match to extend
        a folder.
    """
    functions = _reachable(_functions(experiment))
    definitions, lib = _modules_memoised(experiment, functions)
    own = {str(p.relative_to(anchor)): digest for p, (anchor, digest) in definitions.items()}
    wiring = hashlib.sha256(_structure(experiment).encode()).hexdigest()[:16]
    own[f"<experiment {getattr(experiment, 'name', '?')}>"] = wiring
    definition = _combined(own, _fileless_code(functions) + b"\0" + _closure_values(functions))
    library_digest = _combined(lib)
    combined = hashlib.sha256(f"{library_digest}:{definition}".encode()).hexdigest()[:16]
    out = {
        "hash": combined,
        "library": library_digest,
        "definition": definition,
        "modules": {**lib, **own},
        "definition_files": sorted(k for k in own if not k.startswith("<")),
        "dpsim": dpsim.__version__,
        **git_state(),
    }
    return out


def changed_modules(recorded: dict, code: dict) -> list[str] | None:
    """The modules whose digests differ between a recorded fingerprint and ``code`` (added or
    removed ones included), sorted; None when ``recorded`` has no per-module digests (a folder
    made before they were recorded)."""
    before, now = recorded.get("modules"), code.get("modules", {})
    if not isinstance(before, dict):
        return None
    return sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))


def describe(code: dict) -> str:
    """One line naming a fingerprint: its hash, the dpsim version and the commit."""
    commit = code.get("commit")
    where = (
        f", commit {commit[:10]}{' + uncommitted changes' if code.get('dirty') else ''}"
        if commit
        else ""
    )
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
    return {
        "command": sys.argv,
        "host": platform.node(),
        "cpu": _cpu(),
        "backend": jax.default_backend(),
        "device": getattr(device, "device_kind", str(device)),
        "python": platform.python_version(),
        "versions": {
            "dpsim": dpsim.__version__,
            "jax": jax.__version__,
            "jaxlib": jaxlib.__version__,
            "numpy": numpy.__version__,
            "pandas": pandas.__version__,
            "pyarrow": pyarrow.__version__,
            "matplotlib": matplotlib.__version__,
        },
    }
