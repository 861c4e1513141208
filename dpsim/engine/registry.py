"""Where the ``dpsim`` command finds experiments, checks and audits.

* **Installed papers**: every module registered under the ``dpsim.papers`` entry-point group,
  one line ``NAME = "package.module"`` (dpsim's own ``cai = "dpsim.experiments.cai"``, …, and any
  other installed package that registers one). The entry point's NAME is the paper's name:
  ``dpsim list NAME``, ``dpsim verify NAME`` and ``dpsim audit NAME`` select what that module
  defines, whatever its items are called. A paper module exposes ``EXPERIMENTS``, ``CHECKS``
  and ``AUDITS`` (lists) and may expose ``MUTANTS`` (plausible bugs its checks must catch,
  :mod:`dpsim.engine.judgement.mutants`), ``TITLE`` and ``PAGE`` (the paper's page in its
  repository, printed by ``dpsim show``).
* **Study files**: ``path/to/study.py`` or ``path/to/study.py:NAME``, a researcher's own file
  (no installation, no edit of dpsim): its module-level :class:`Experiment` objects (or its
  ``EXPERIMENTS`` list), ``CHECKS``, ``AUDITS`` and ``MUTANTS``. Its path is its paper name.

Nothing in ``dpsim`` imports a paper package statically: the registry loads them by name.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType

from dpsim.errors import UsageError, did_you_mean
from dpsim.engine.definition.experiment import Experiment

GROUP = "dpsim.papers"
KINDS = ("experiments", "checks", "audits", "mutants")
COMPONENT_KINDS = ("generator", "mechanism", "estimator", "metric")


@dataclass
class Catalogue:
    """Experiments, checks, audits and mutants by name; where each experiment came from
    (``source[name]``: a paper module's name, or ``path.py:NAME`` for a study file); each
    paper's title (``papers[paper]``), page (``pages[paper]``) and components
    (``components[paper]``: ``"KIND:NAME"`` → one line); and the paper that defines each item
    (``paper_of[kind][name]``, kind one of :data:`KINDS`)."""

    experiments: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)
    audits: dict = field(default_factory=dict)
    mutants: dict = field(default_factory=dict)
    source: dict = field(default_factory=dict)
    papers: dict = field(default_factory=dict)
    pages: dict = field(default_factory=dict)
    components: dict = field(default_factory=dict)
    paper_of: dict = field(default_factory=lambda: {kind: {} for kind in KINDS})

    def add(self, module: ModuleType, paper: str, module_name: str | None = None) -> None:
        """Add what ``module`` defines.

        Args:
            module: an installed paper's package, or a study file's module.
            paper: the paper's name: its entry point's name, or the study file's path.
            module_name: an installed paper's module (each experiment's recorded source);
                None for a study file, whose experiments' source is ``path:NAME``.
        """
        experiments = list(
            getattr(module, "EXPERIMENTS", None)
            or [v for v in vars(module).values() if isinstance(v, Experiment)]
        )
        for experiment in experiments:
            origin = module_name or f"{paper}:{experiment.name}"
            if (
                experiment.name in self.experiments
                and self.experiments[experiment.name] is not experiment
            ):
                raise UsageError(
                    f"experiment {experiment.name!r} is defined twice "
                    f"({self.source[experiment.name]} and {origin})"
                )
            self.experiments[experiment.name] = experiment
            self.source[experiment.name] = origin
            self.paper_of["experiments"][experiment.name] = paper
        for kind in ("checks", "audits", "mutants"):
            table = getattr(self, kind)
            for item in getattr(module, kind.upper(), []) or []:
                if item.name in table and table[item.name] is not item:
                    raise UsageError(f"{kind[:-1]} {item.name!r} is defined twice")
                table[item.name] = item
                self.paper_of[kind][item.name] = paper
        self.papers[paper] = getattr(module, "TITLE", "")
        self.pages[paper] = getattr(module, "PAGE", "")
        self.components[paper] = dict(getattr(module, "COMPONENTS", None) or {})
        validate_checks(getattr(module, "CHECKS", []) or [], self.experiments)
        validate_components(
            self.components[paper],
            getattr(module, "CHECKS", []) or [],
            getattr(module, "MUTANTS", []) or [],
            paper,
        )

    def update(self, other: "Catalogue") -> None:
        """Add everything ``other`` holds (its items replace same-named ones)."""
        for name in (*KINDS, "source", "papers", "pages", "components"):
            getattr(self, name).update(getattr(other, name))
        for kind in KINDS:
            self.paper_of[kind].update(other.paper_of[kind])

    def matching(self, kind: str, name: str) -> list:
        """The items of ``kind`` named ``name``; else those of the paper ``name``; else, for
        checks and mutants, those of the experiment ``name`` (the checks judged on it, the
        mutants that change it); possibly none."""
        table = getattr(self, kind)
        if name in table:
            return [table[name]]
        if name in self.papers:
            return [table[n] for n, paper in self.paper_of[kind].items() if paper == name]
        if kind == "checks":
            return [c for c in table.values() if c.experiment == name]
        if kind == "mutants":
            return [m for m in table.values() if name in m.experiments]
        return []

    def select(self, kind: str, names, what: str) -> list:
        """Items of ``kind`` named by ``names`` (:meth:`matching`: item names, paper names,
        experiment names); all of them when ``names`` is empty. An unknown name is a
        UsageError suggesting the closest known ones."""
        table = getattr(self, kind)
        if not names:
            return list(table.values())
        chosen = []
        for name in names:
            hits = self.matching(kind, name)
            if not hits:
                known = [*table, *self.papers]
                raise UsageError(
                    f"unknown {what} {name!r}{did_you_mean(name, known)}; see `dpsim list`"
                )
            chosen.extend(h for h in hits if h not in chosen)
        return chosen


def validate_checks(checks, experiments) -> None:
    """Refuse a check that cannot be evaluated whatever the data (``Check.validate``: an
    unknown method, metric or axis, an axis it would pool), when its paper or study loads:
    one line, before anything is computed. A check of an experiment not (yet) known is left
    to ``dpsim verify``, which names it."""
    from dpsim.engine.judgement.verdicts import grid_table

    grids = {}
    for check in checks:
        experiment = experiments.get(getattr(check, "experiment", None))
        if experiment is None or not hasattr(check, "validate"):
            continue
        if experiment.name not in grids:
            grids[experiment.name] = grid_table(experiment)
        check.validate(experiment, grids[experiment.name])


def named_components(names) -> tuple[str, ...]:
    """A check's ``pins`` or a mutant's ``breaks`` as a tuple of component names (one name
    given as a string counts as one)."""
    return (names,) if isinstance(names, str) else tuple(names or ())


def validate_components(components, checks, mutants, paper: str) -> None:
    """Refuse, when a paper or study loads, a component not named ``KIND:NAME`` (KIND one of
    :data:`COMPONENT_KINDS`) and a check's ``pins`` or a mutant's ``breaks`` naming a component
    its paper does not declare in ``COMPONENTS`` (one line, with a did-you-mean)."""
    for name in components:
        kind, _, rest = str(name).partition(":")
        if kind not in COMPONENT_KINDS or not rest:
            raise UsageError(
                f"{paper}: component {name!r} is not KIND:NAME with KIND one of "
                f"{', '.join(COMPONENT_KINDS)}"
            )
    for what, items, attribute in (("check", checks, "pins"), ("mutant", mutants, "breaks")):
        for item in items:
            for name in named_components(getattr(item, attribute, ())):
                if name not in components:
                    raise UsageError(
                        f"{what} {item.name!r}: {attribute} {name!r}, which {paper} does not declare in "
                        f"COMPONENTS{did_you_mean(name, components)}"
                    )


@lru_cache(maxsize=None)
def _entry_points() -> tuple:
    """The entry points of every installed paper, by name (one scan of the installed
    distributions per process)."""
    return tuple(sorted(entry_points(group=GROUP), key=lambda p: p.name))


def paper_names() -> list[str]:
    """The names of the installed papers (their entry points), sorted."""
    return sorted({p.name for p in _entry_points()})


@lru_cache(maxsize=None)
def installed() -> Catalogue:
    """Every installed paper (entry points of ``dpsim.papers``)."""
    catalogue = Catalogue()
    for point in _entry_points():
        catalogue.add(point.load(), point.name, point.value)
    return catalogue


@lru_cache(maxsize=None)
def paper(name: str) -> Catalogue | None:
    """The one installed paper registered as ``name`` (entry point of ``dpsim.papers``), or
    None. Loading one paper instead of all of them saves a fresh ``dpsim run cai-…`` the
    import of the other three."""
    points = [p for p in _entry_points() if p.name == name]
    if len(points) != 1:
        return None
    catalogue = Catalogue()
    catalogue.add(points[0].load(), name, points[0].value)
    return catalogue


def page_of(name: str) -> str:
    """The page (``PAGE``) of the installed paper that defines the experiment ``name``: a path
    in that paper's repository, e.g. ``docs/cai.md``; "" for a study file or a paper without one."""
    for paper_name in paper_names():
        found = paper(paper_name)
        if found is not None and name in found.experiments:
            return found.pages.get(paper_name, "")
    return ""


def forget_installed() -> None:
    """Forget what was found installed (after a distribution is added or removed in this
    process, e.g. by a test): the next lookup scans the entry points again."""
    for cached in (_entry_points, installed, paper):
        cached.cache_clear()


def load_study(path: str | Path) -> ModuleType:
    """Import a study file by path (its directory is put first on ``sys.path`` while it loads,
    so it may import its own helper modules)."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"study file {str(path)!r} does not exist")
    name = f"dpsim_study_{abs(hash(str(path.resolve())))}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))
    try:
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except UsageError:
        sys.modules.pop(name, None)
        raise
    except Exception as exc:
        sys.modules.pop(name, None)
        raise UsageError(
            f"study file {str(path)!r} failed to load: {type(exc).__name__}: {exc}"
        ) from None
    finally:
        sys.path.pop(0)
    return module


def is_study(target: str) -> bool:
    """True when ``target`` names a study file (``….py`` or ``….py:NAME``)."""
    return target.split(":")[0].endswith(".py")


def catalogue(target: str | None = None) -> Catalogue:
    """The installed papers, plus the study file of ``target`` when it names one."""
    if target is None or not is_study(target):
        return installed()
    path = target.split(":")[0]
    combined = Catalogue()
    combined.update(installed())
    combined.add(load_study(path), path)
    return combined


def experiment(target: str) -> tuple[Experiment, str]:
    """The experiment ``target`` names, and its source (recorded in a run's manifest).

    ``target``: an experiment's name (``cai-fig3``), a study file (``study.py``, when it defines
    exactly one experiment) or ``study.py:NAME``.
    """
    if not is_study(target):
        # papers are loaded one at a time until one defines ``target``; a paper whose name
        # begins the experiment's (``cai`` for ``cai-fig3``) is tried first, which only saves
        # loading the others: an experiment may be named anything
        for name in sorted(paper_names(), key=lambda n: not target.startswith(f"{n}-")):
            found = paper(name)
            if found is not None and target in found.experiments:
                return found.experiments[target], found.source[target]
        raise UsageError(
            f"unknown experiment {target!r}{did_you_mean(target, installed().experiments)}; "
            f"see `dpsim list`"
        )
    path, _, name = target.partition(":")
    module = load_study(path)
    found = Catalogue()
    found.add(module, path)
    if name:
        if name not in found.experiments:
            raise UsageError(
                f"study file {path!r} defines no experiment {name!r} "
                f"(it defines {', '.join(found.experiments) or 'none'})"
            )
        return found.experiments[name], f"{path}:{name}"
    if not found.experiments:
        raise UsageError(
            f"study file {path!r} defines no Experiment (it needs a module-level "
            f"dpsim.engine.Experiment(...), or an EXPERIMENTS list of them)"
        )
    if len(found.experiments) != 1:
        raise UsageError(
            f"study file {path!r} defines {len(found.experiments)} experiments "
            f"({', '.join(found.experiments) or 'none'}); name one as {path}:NAME"
        )
    (only,) = found.experiments.values()
    return only, f"{path}:{only.name}"
