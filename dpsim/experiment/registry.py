"""Where the ``dpsim`` command finds experiments, checks and audits.

* **Installed papers**: every module registered under the ``dpsim.papers`` entry-point group
  (dpsim's own ``dpsim.experiments.cai``, …, and any other installed package that registers
  one). A paper module exposes ``EXPERIMENTS``, ``CHECKS`` and ``AUDITS`` (lists) and may
  expose ``MUTANTS`` (plausible bugs its checks must catch, :mod:`dpsim.experiment.mutants`),
  ``PAPER`` and ``TITLE``.
* **Study files**: ``path/to/study.py`` or ``path/to/study.py:NAME``, a researcher's own file
  (no installation, no edit of dpsim): its module-level :class:`Experiment` objects (or its
  ``EXPERIMENTS`` list), ``CHECKS``, ``AUDITS`` and ``MUTANTS``.

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

from dpsim.errors import UsageError
from dpsim.experiment.grid import Experiment

GROUP = "dpsim.papers"


@dataclass
class Catalogue:
    """Experiments, checks, audits and mutants by name, and where each experiment came from
    (``source[name]``: a paper module's name, or ``path.py:NAME`` for a study file)."""

    experiments: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)
    audits: dict = field(default_factory=dict)
    mutants: dict = field(default_factory=dict)
    source: dict = field(default_factory=dict)
    papers: dict = field(default_factory=dict)

    def add(self, module: ModuleType, origin: str, path: str | None = None) -> None:
        experiments = list(getattr(module, "EXPERIMENTS", None) or
                           [v for v in vars(module).values() if isinstance(v, Experiment)])
        for experiment in experiments:
            if experiment.name in self.experiments and self.experiments[experiment.name] is not experiment:
                raise UsageError(f"experiment {experiment.name!r} is defined twice "
                                 f"({self.source[experiment.name]} and {origin})")
            self.experiments[experiment.name] = experiment
            self.source[experiment.name] = f"{path}:{experiment.name}" if path else origin
        for kind in ("checks", "audits", "mutants"):
            table = getattr(self, kind)
            for item in getattr(module, kind.upper(), []) or []:
                if item.name in table and table[item.name] is not item:
                    raise UsageError(f"{kind[:-1]} {item.name!r} is defined twice")
                table[item.name] = item
        self.papers[getattr(module, "PAPER", origin)] = getattr(module, "TITLE", "")


@lru_cache(maxsize=None)
def installed() -> Catalogue:
    """Every installed paper (entry points of ``dpsim.papers``)."""
    catalogue = Catalogue()
    for point in sorted(entry_points(group=GROUP), key=lambda p: p.name):
        catalogue.add(point.load(), point.value)
    return catalogue


@lru_cache(maxsize=None)
def paper(name: str) -> Catalogue | None:
    """The one installed paper registered as ``name`` (entry point of ``dpsim.papers``), or
    None. Loading one paper instead of all of them saves a fresh ``dpsim run cai-…`` the
    import of the other three (measured on the 2-core CPU: 1.0 s instead of 1.7 s)."""
    points = [p for p in entry_points(group=GROUP) if p.name == name]
    if len(points) != 1:
        return None
    catalogue = Catalogue()
    catalogue.add(points[0].load(), points[0].value)
    return catalogue


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
        raise UsageError(f"study file {str(path)!r} failed to load: {type(exc).__name__}: {exc}") from None
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
    base = installed()
    for name in ("experiments", "checks", "audits", "mutants", "source", "papers"):
        getattr(combined, name).update(getattr(base, name))
    combined.add(load_study(path), path, path=path)
    return combined


def experiment(target: str) -> tuple[Experiment, str]:
    """The experiment ``target`` names, and its source (recorded in a run's manifest).

    ``target``: an experiment's name (``cai-fig3``), a study file (``study.py``, when it defines
    exactly one experiment) or ``study.py:NAME``.
    """
    if not is_study(target):
        own = paper(target.split("-")[0])   # experiment names begin with their paper's name
        found = own if own is not None and target in own.experiments else installed()
        if target not in found.experiments:
            raise UsageError(f"unknown experiment {target!r}{did_you_mean(target, installed().experiments)}; "
                             f"see `dpsim list`")
        return found.experiments[target], found.source[target]
    path, _, name = target.partition(":")
    module = load_study(path)
    found = Catalogue()
    found.add(module, path, path=path)
    if name:
        if name not in found.experiments:
            raise UsageError(f"study file {path!r} defines no experiment {name!r} "
                             f"(it defines {', '.join(found.experiments) or 'none'})")
        return found.experiments[name], f"{path}:{name}"
    if len(found.experiments) != 1:
        raise UsageError(f"study file {path!r} defines {len(found.experiments)} experiments "
                         f"({', '.join(found.experiments) or 'none'}); name one as {path}:NAME")
    (only,) = found.experiments.values()
    return only, f"{path}:{only.name}"


def did_you_mean(name: str, known) -> str:
    """", did you mean 'x'?" for the closest known names, or "" when none is close."""
    import difflib
    close = difflib.get_close_matches(name, list(known), n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def matching(table: dict, name: str) -> list:
    """The items of ``table`` named ``name`` exactly, else those whose names begin with the
    prefix ``name-`` (a paper's name selects every ``cai-…``); possibly none."""
    return [v for k, v in table.items() if k == name] or \
        [v for k, v in table.items() if k.startswith(name.rstrip("-") + "-")]


def select(table: dict, names, what: str) -> list:
    """Items of ``table`` named by ``names``: exact names, or a prefix such as a paper's name
    (``cai`` selects every ``cai-…``); all items when ``names`` is empty."""
    if not names:
        return list(table.values())
    chosen = []
    for name in names:
        hits = matching(table, name)
        if not hits:
            raise UsageError(f"unknown {what} {name!r}{did_you_mean(name, table)}; see `dpsim list`")
        chosen.extend(h for h in hits if h not in chosen)
    return chosen
