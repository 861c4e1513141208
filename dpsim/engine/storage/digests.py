"""A Python module's digest from its syntax tree: what the code does, not how it is written.

:func:`module_digest` parses a module (``ast.parse``), removes its docstrings and leaves out
positions, so an edit of a comment, a docstring, a blank line or the layout keeps the digest,
while any change of what the code does changes it. :func:`live_lines` picks a study or paper
module's *live* statements (those the experiment's reached functions and its making need,
followed through the names they use), so its ``CHECKS``, ``MUTANTS``, ``AUDITS`` and figure
layouts are not the rows' identity. Library digests are kept between processes
(:func:`code_cache`, ``$DPSIM_CODE_CACHE``). :mod:`dpsim.engine.storage.provenance` combines them
into a run's code fingerprint.
"""

from __future__ import annotations

import ast
import hashlib
import os
from functools import lru_cache
import json
import sys
from pathlib import Path

VERIFICATION_NAMES = ("CHECKS", "MUTANTS", "AUDITS")
FIGURE_CALLS = ("FigureSpec", "Panel")


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """``tree`` without the docstrings of its module, classes and functions (in place)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
    return tree


class _FiguresBlanked(ast.NodeTransformer):
    """Replaces every figure layout (a ``FigureSpec(...)`` or ``Panel(...)`` call, the value
    of a ``figure=`` argument) by one constant."""

    def visit_Call(self, node):
        func = node.func
        name = (
            func.id
            if isinstance(func, ast.Name)
            else func.attr
            if isinstance(func, ast.Attribute)
            else None
        )
        if name in FIGURE_CALLS:
            return ast.Constant("figure")
        self.generic_visit(node)
        node.keywords = [
            ast.keyword(arg=k.arg, value=ast.Constant("figure")) if k.arg == "figure" else k
            for k in node.keywords
        ]
        return node


def _serialised(node) -> str:
    """A text of a syntax tree that determines it: node types and fields, no positions; a
    field that is None or empty is left out, so the text does not change when a newer Python
    adds an empty field (``type_params``)."""
    if isinstance(node, ast.AST):
        fields = []
        for name, value in ast.iter_fields(node):
            if value is None or value == [] or isinstance(value, ast.expr_context):
                continue
            fields.append(f"{name}={_serialised(value)}")
        return f"{type(node).__name__}({', '.join(fields)})"
    if isinstance(node, list):
        return "[" + ", ".join(_serialised(v) for v in node) + "]"
    return repr(node)


def _is_verification_name(name: str) -> bool:
    return any(name == v or name.endswith("_" + v) for v in VERIFICATION_NAMES)


def _verification_only(statement: ast.stmt) -> bool:
    """Whether a top-level statement only defines verification (:data:`VERIFICATION_NAMES`,
    alone or as the end of a name: ``LEVEL_CHECKS``): it binds only such names, or calls a
    method of one (``CHECKS.extend(...)``)."""
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        return (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and _is_verification_name(func.value.id)
        )
    else:
        return False
    names = [t.id for t in targets if isinstance(t, ast.Name)]
    return len(names) == len(targets) and all(_is_verification_name(n) for n in names)


class _Statement:
    """One top-level statement of a definition module, as liveness needs it: its lines
    (decorators included), the names it binds and uses, whether it only binds names (a
    definition, an import, an assignment to names), whether it is verification, and its text
    (:func:`_serialised`)."""

    def __init__(self, node: ast.stmt):
        self.node = node
        self.start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        self.end = node.end_lineno
        self.binds = _bound_names(node)
        self.uses = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        targets = getattr(node, "targets", None) or (
            [node.target]
            if hasattr(node, "target") and isinstance(node, (ast.AnnAssign, ast.AugAssign))
            else []
        )
        self.pure = isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
        ) or (
            isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
            and all(
                isinstance(t, ast.Name)
                or isinstance(t, (ast.Tuple, ast.List))
                and all(isinstance(e, ast.Name) for e in t.elts)
                for t in targets
            )
        )
        self.verification = _verification_only(node)
        self.text = _serialised(node)


def _bound_names(node: ast.stmt) -> set[str]:
    """The module-level names a top-level statement binds (``*`` for a star import)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Import):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, ast.ImportFrom):
        return {a.asname or a.name for a in node.names}
    found, stack = set(), [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store):
            found.add(item.id)
        elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(item.name)
        elif isinstance(item, (ast.Import, ast.ImportFrom)):
            found |= _bound_names(item)
        elif not isinstance(item, (ast.Lambda, ast.comprehension)):
            stack.extend(ast.iter_child_nodes(item))
    return found


def live_lines(statements: tuple, lines: set[int], names: set[str] | None) -> list[int]:
    """The indices of the statements of a definition module that its rows depend on: those
    holding a reached function's first line (``lines``) or binding one of ``names`` (None: the
    whole module but its verification), then, to a fixed point, every statement binding a name
    a live one uses, and every other statement (not a pure binding) using or binding one;
    verification (:func:`_verification_only`) only when a live statement uses what it binds."""
    if names is None:
        return [i for i, s in enumerate(statements) if not s.verification]
    live = {
        i
        for i, s in enumerate(statements)
        if any(s.start <= line <= s.end for line in lines) or s.binds & names or "*" in s.binds
    }
    needed = set(names).union(*(statements[i].uses for i in live))
    changed = True
    while changed:
        changed = False
        for i, s in enumerate(statements):
            if i in live or not (
                s.binds & needed or (not s.pure and not s.verification and s.uses & needed)
            ):
                continue
            live.add(i)
            needed |= s.uses | s.binds
            changed = True
    return sorted(live)


@lru_cache(maxsize=1024)
def _statements(data: bytes, path: str) -> tuple:
    """The top-level statements of a definition module (:class:`_Statement`), docstrings
    removed and figure layouts blanked (cached by the file's bytes)."""
    tree = _FiguresBlanked().visit(_strip_docstrings(ast.parse(data, filename=path)))
    return tuple(_Statement(node) for node in tree.body)


def definition_statements(path: Path) -> tuple:
    return _statements(path.read_bytes(), str(path))


CODE_CACHE_VARIABLE = "DPSIM_CODE_CACHE"


def code_cache() -> Path | None:
    """The folder of library modules' digests kept between processes (a file per module
    content and Python version, so an edited file is parsed again): ``$DPSIM_CODE_CACHE``
    (``off``: none), else ``$XDG_CACHE_HOME/dpsim/code``, else ``~/.cache/dpsim/code``.
    Parsing dpsim's modules takes about a second; reading their digests, milliseconds."""
    text = os.environ.get(CODE_CACHE_VARIABLE)
    if text == "off":
        return None
    if text:
        return Path(text)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dpsim" / "code"


_DIGESTS: dict = {}  # path → ((modification time in ns, size), (digest, imports)): this process's


def digest_of(path: str) -> tuple[str, tuple]:
    """(digest, imports) of one library module as :func:`module_digest` takes it (cached by
    its bytes, in this process and on disk, :func:`code_cache`: an edited file is parsed again;
    in this process first by its modification time and size, which spares reading it)."""
    try:
        st = os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = None
    held = _DIGESTS.get(path)
    if stamp is not None and held is not None and held[0] == stamp:
        return held[1]
    found = _digest_of_bytes(path)
    if stamp is not None:
        _DIGESTS[path] = (stamp, found)
    return found


def _digest_of_bytes(path: str) -> tuple[str, tuple]:
    """:func:`digest_of` from the file's bytes (the disk cache, else parsed)."""
    data = Path(path).read_bytes()
    key = hashlib.sha256(data + b"\0" + sys.version.encode()).hexdigest()
    folder = code_cache()
    stored = _stored_digest(folder / f"{key}.json") if folder else None
    if stored is not None:
        return stored
    found = _parsed_digest(data, path)
    if folder is not None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".tmp-{key}-{os.getpid()}"
            tmp.write_text(json.dumps([found[0], [list(i) for i in found[1]]]))
            os.replace(tmp, folder / f"{key}.json")
        except OSError:  # a read-only home: the digest is computed again next time
            pass
    return found


def _stored_digest(path: Path) -> tuple[str, tuple] | None:
    """A digest :func:`digest_of` stored (None: none, or one that does not read back)."""
    try:
        digest, imports = json.loads(path.read_text())
        if not (isinstance(digest, str) and len(digest) == 16):
            return None
        return digest, tuple(
            (int(level), str(module), tuple(str(n) for n in names))
            for level, module, names in imports
        )
    except (OSError, ValueError, TypeError):
        return None


@lru_cache(maxsize=4096)
def _parsed_digest(data: bytes, path: str) -> tuple[str, tuple]:
    tree = ast.parse(data, filename=path)
    out, imports = [], []
    _serialise_fast(tree, out, imports)  # one pass: the same text as _serialised, docstrings out
    return hashlib.sha256("".join(out).encode()).hexdigest()[:16], tuple(imports)


_DOC_OWNERS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_PASS = ast.Pass()


def _is_docstring(node) -> bool:
    return (
        type(node) is ast.Expr
        and type(node.value) is ast.Constant
        and type(node.value.value) is str
    )


def _serialise_fast(node, out: list, imports: list) -> None:
    """Append :func:`_serialised` of ``node`` with its docstrings removed
    (:func:`_strip_docstrings`) to ``out``, and its imports as (level, module, names) to ``imports``,
    in one walk (a library module's digest is taken in every command)."""
    kind = type(node)
    if kind is ast.Import:
        imports.extend((0, alias.name, ()) for alias in node.names)
    elif kind is ast.ImportFrom:
        imports.append((node.level, node.module or "", tuple(a.name for a in node.names)))
    out.append(kind.__name__)
    out.append("(")
    first = True
    for name in node._fields:
        value = getattr(node, name, None)
        if value is None or isinstance(value, ast.expr_context):
            continue
        if type(value) is list:
            if (
                name == "body"
                and value
                and isinstance(node, _DOC_OWNERS)
                and _is_docstring(value[0])
            ):
                value = value[1:] or [_PASS]
            if not value:
                continue
            out.append(f"{'' if first else ', '}{name}=[")
            for i, item in enumerate(value):
                if i:
                    out.append(", ")
                if isinstance(item, ast.AST):
                    _serialise_fast(item, out, imports)
                else:
                    out.append(repr(item))
            out.append("]")
        elif isinstance(value, ast.AST):
            out.append(f"{'' if first else ', '}{name}=")
            _serialise_fast(value, out, imports)
        else:
            out.append(f"{'' if first else ', '}{name}={value!r}")
        first = False
    out.append(")")


def module_digest(path: Path) -> str:
    """The digest of one library module (16 hex digits): its syntax tree without docstrings
    or positions (:func:`_serialised`), so comments and layout do not count.

    Raises:
        SyntaxError: the file does not parse.
    """
    return digest_of(str(Path(path).resolve()))[0]
