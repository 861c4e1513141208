"""The import graph of dpsim: one module per concept, no back-arrow, no cycle.

Every module under dpsim/ (and the paper packages of experiments/, installed as
``dpsim.experiments``) is parsed with ``ast``; every import counts, function-local ones and
``TYPE_CHECKING`` ones included. ``from package import name`` is an import of the module
``package.name`` when there is one, else of ``package``; importing a submodule is not counted
as importing its parent package's ``__init__``.

:data:`LAYERS` (bottom first) is the intended layering, also written out in
docs/architecture.md. An entry is a module or a package; a package whose submodules are
listed themselves (``dpsim``, ``dpsim.engine``) stands for its ``__init__`` alone, and
then every one of its direct submodules must be listed. A module may import modules of its
own entry and of entries on lower layers only: never a peer on its own layer, never a higher
layer. A new module goes on the lowest layer above everything it imports, here and in
docs/architecture.md.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"

LAYERS: list[list[str]] = [
    # foundations: no model, no privacy, no experiment in them
    ["dpsim", "dpsim.errors"],
    ["dpsim.validate", "dpsim.linalg", "dpsim.graph", "dpsim.metrics", "dpsim.results"],
    ["dpsim.solvers", "dpsim.samplers"],
    # the science library
    ["dpsim.models"],
    ["dpsim.mechanisms"],
    ["dpsim.estimators"],
    ["dpsim.audits", "dpsim.theory", "dpsim.datasets"],
    # the experiment engine (no science module: see test_the_engine_knows_no_science)
    ["dpsim.engine.storage.digests"],
    [
        "dpsim.engine.definition",
        "dpsim.engine.execution",
        "dpsim.engine.storage",
        "dpsim.engine.judgement",
        "dpsim.engine.solving",
        "dpsim.engine.presentation",
        "dpsim.engine.definition.axes",
        "dpsim.engine.definition.figure",
        "dpsim.engine.definition.ids",
        "dpsim.engine.presentation.units",
        "dpsim.engine.execution.threads",
        "dpsim.engine.storage.provenance",
        "dpsim.engine.presentation.summary",
        "dpsim.engine.judgement.deferred",
        "dpsim.engine.execution.batching",
        "dpsim.engine.solving.search",
        "dpsim.engine.scaffold",
    ],
    [
        "dpsim.engine.definition.experiment",
        "dpsim.engine.solving.rootfinding",
        "dpsim.engine.solving.oracles",
        "dpsim.engine.storage.store",
        "dpsim.engine.judgement.statistics",
        "dpsim.engine.judgement.verdicts",
        "dpsim.engine.presentation.labels",
    ],
    [
        "dpsim.engine.definition.grid",
        "dpsim.engine.execution.program",
        "dpsim.engine.registry",
        "dpsim.engine.judgement.mutants",
        "dpsim.engine.judgement.checks",
        "dpsim.engine.storage.parts",
        "dpsim.engine.execution.calibration",
        "dpsim.engine.presentation.panels",
        "dpsim.engine.presentation.verdict_files",
    ],
    [
        "dpsim.engine.execution.planning",
        "dpsim.engine.judgement.published",
        "dpsim.engine.judgement.thresholds",
    ],
    ["dpsim.engine.execution.chunk_io"],
    ["dpsim.engine.execution.executors"],
    ["dpsim.engine.execution.runner"],
    [
        "dpsim.engine.presentation.describe",
        "dpsim.engine.judgement.verify",
        "dpsim.engine.presentation.plots",
        "dpsim.engine.storage.merge",
        "dpsim.engine.solving.solve",
        "dpsim.engine.storage.folder",
    ],
    ["dpsim.engine.presentation.report_data"],
    ["dpsim.engine.presentation.report"],
    ["dpsim.engine", "dpsim.api"],
    # on top: the papers (engine + science), the command
    ["dpsim.experiments"],
    ["dpsim.cli"],
]
ENGINE = ("dpsim.engine", "dpsim.api", "dpsim.cli")
SCIENCE = (
    "dpsim.models",
    "dpsim.mechanisms",
    "dpsim.estimators",
    "dpsim.audits",
    "dpsim.theory",
    "dpsim.datasets",
    "dpsim.experiments",
)


# ----------------------------------------------------------------------------- the graph


def modules(root: Path = ROOT) -> dict[str, Path]:
    """{dotted module name: file} of dpsim/ and of experiments/ (as dpsim.experiments); the
    dpsim/experiments link of a development checkout is skipped (it is experiments/)."""
    found = {}
    for base, prefix in (
        (root / "dpsim", ["dpsim"]),
        (root / "experiments", ["dpsim", "experiments"]),
    ):
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if prefix == ["dpsim"] and parts[0] == "experiments":
                continue
            name = prefix + (parts[:-1] if parts[-1] == "__init__" else parts)
            found[".".join(name)] = path
    return found


def _known(name: str, known) -> str | None:
    """The longest prefix of ``name`` that is a module of the tree (None: not dpsim)."""
    parts = name.split(".")
    while parts and ".".join(parts) not in known:
        parts.pop()
    return ".".join(parts) or None


def imports_of(name: str, path: Path, known) -> set[str]:
    """The dpsim modules that module ``name`` imports, anywhere in its code."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(_known(alias.name, known) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            for alias in node.names:
                found.add(
                    _known(f"{source}.{alias.name}", known)
                    if f"{source}.{alias.name}" in known
                    else _known(source, known)
                )
    return {m for m in found if m is not None and m != name}


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    known = modules(root)
    return {name: imports_of(name, path, known) for name, path in known.items()}


# ----------------------------------------------------------------------------- the rules


def _itemised() -> set[str]:
    entries = [e for layer in LAYERS for e in layer]
    return {e for e in entries if any(o.startswith(e + ".") for o in entries)}


def entry_of(module: str) -> str | None:
    """The LAYERS entry a module belongs to: itself, or the package entry it is inside."""
    itemised = _itemised()
    best = None
    for entry in (e for layer in LAYERS for e in layer):
        if module == entry or (module.startswith(entry + ".") and entry not in itemised):
            if best is None or len(entry) > len(best):
                best = entry
    return best


def layer_of(module: str) -> int:
    entry = entry_of(module)
    return next(i for i, layer in enumerate(LAYERS) if entry in layer)


def back_arrows(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a peer on the same layer or of a higher layer."""
    found = []
    for module, imported in sorted(graph.items()):
        for other in sorted(imported):
            if entry_of(other) == entry_of(module):
                continue
            if layer_of(other) >= layer_of(module):
                found.append(
                    f"{module} (layer {layer_of(module)}) imports {other} (layer {layer_of(other)})"
                )
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _inside(module: str, packages) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


# ----------------------------------------------------------------------------- the tests


def test_the_parser_sees_function_local_imports_and_resolves_modules():
    graph = import_graph()
    assert (
        "dpsim.engine.execution.runner" in graph["dpsim.engine.presentation.describe"]
    )  # inside estimate_seconds
    assert (
        "dpsim.engine.storage.store" in graph["dpsim.engine.execution.runner"]
    )  # from dpsim.engine import store
    assert (
        "dpsim.engine" not in graph["dpsim.engine.execution.runner"]
    )  # ... is not the package facade
    assert (
        "dpsim.audits.audit" in graph["dpsim.experiments.cai.audits"]
    )  # papers are read from experiments/


def test_the_rules_catch_a_back_arrow_and_a_cycle():
    """The checks are not vacuous: a model importing a mechanism, a peer import and a cycle
    are all reported."""
    assert back_arrows({"dpsim.models.btl": {"dpsim.mechanisms.laplace"}})
    assert back_arrows({"dpsim.theory.cai": {"dpsim.audits.audit"}})
    assert back_arrows({"dpsim.engine.execution.planning": {"dpsim.engine.execution.runner"}})
    assert not back_arrows({"dpsim.engine.execution.runner": {"dpsim.engine.execution.planning"}})
    assert not back_arrows({"dpsim.models.btl": {"dpsim.models.links"}})  # inside one package
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_module_has_a_layer_and_every_layer_entry_exists():
    tree = set(modules())
    entries = [e for layer in LAYERS for e in layer]
    assert len(entries) == len(set(entries)), "an entry is listed twice"
    assert sorted(e for e in entries if e not in tree) == [], (
        "LAYERS names modules that are not in the tree"
    )
    assert sorted(m for m in tree if entry_of(m) is None) == [], (
        "modules without a layer: add them to LAYERS"
    )
    for package in _itemised():  # a package that is itemised is itemised completely
        children = {m for m in tree if m.rpartition(".")[0] == package}
        assert sorted(children - set(entries)) == [], f"submodules of {package} missing from LAYERS"


def test_no_back_arrow():
    """A module imports only its own package entry and lower layers (docs/architecture.md)."""
    assert back_arrows(import_graph()) == []


def test_the_engine_knows_no_science():
    """The experiment engine, the figures and the command import no model, mechanism,
    estimator, audit, theory, dataset or paper: papers reach the engine through the registry."""
    graph = import_graph()
    found = [
        f"{m} imports {o}"
        for m in sorted(graph)
        if _inside(m, ENGINE)
        for o in sorted(graph[m])
        if _inside(o, SCIENCE)
    ]
    assert found == []


def test_no_import_cycle():
    """No cycle among modules, inside a package included (between packages the layers already
    exclude one)."""
    assert cycles(import_graph()) == []


def documented_layers(text: str) -> list[list[str]]:
    """The layers of docs/architecture.md's "Modules and layers" section: one per
    ``### Layer N`` heading, holding the modules of its ``- `name` — role`` items."""
    section = text.split("## Modules and layers", 1)[1].split("\n## ", 1)[0]
    layers: list[list[str]] = []
    for line in section.splitlines():
        if line.startswith("### Layer"):
            assert line.split()[2] == str(len(layers)), f"layers out of order at {line!r}"
            layers.append([])
        elif item := re.match(r"- `(dpsim[\w.]*)` — ", line):
            layers[-1].append(item.group(1))
    return layers


def test_docs_list_the_modules_of_the_tree_in_the_same_layers():
    """docs/architecture.md lists exactly the LAYERS entries, on the same layers; together with
    test_every_module_has_a_layer_and_every_layer_entry_exists, it names every module (or
    package) of the tree and nothing that is not there."""
    documented = documented_layers(DOC.read_text())
    assert [sorted(layer) for layer in documented] == [sorted(layer) for layer in LAYERS]
    assert (
        len(DOC.read_text().splitlines()) < 190
    )  # one screenful per part: a page a newcomer reads whole
