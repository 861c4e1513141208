"""dpsim as a library: everything the ``dpsim`` command does, as functions that return data.

``import dpsim`` exports these names (lazily: the engine is imported on first use)::

    import dpsim
    dpsim.catalog()["experiments"]                    # what can be run (a DataFrame)
    dpsim.pins("cai")                                 # each component and the checks that pin it
    dpsim.show("cai-fig3")["axes"]                    # its axes, kinds and defaults
    results = dpsim.run("cai-fig3", reps=20, n_items=100, eps=[0.5, float("inf")])
    results.table                                     # the tidy rows (pandas)
    results.summary("l2")                             # means with 95% intervals, as `dpsim summary`
    results.plot()                                    # the paper's figure (matplotlib)
    dpsim.verify("cai-fig3").table                    # verdicts with estimates, intervals, regions

An *override* is a scalar or a sequence: ``eps=0.5`` runs one value, ``eps=[0.5, 1]`` two; a
string is one value (``link="probit"``), never iterated letter by letter. An experiment is
named as on the command line (``"cai-fig3"``, ``"study.py"``, ``"study.py:NAME"``) or given as
an :class:`~dpsim.engine.Experiment` object, e.g. a paper's with a method of your own
(:meth:`~dpsim.engine.Experiment.with_methods`, ``examples/my_method.py``).

Bad input raises the one-line :class:`~dpsim.errors.UsageError` the command prints, before
anything is written. The command's subcommands call these functions and only format what
they return.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from dpsim import API as _EXPORTED
from dpsim.errors import UsageError, did_you_mean, note, stage_failed, traceback_wanted
from dpsim.engine.definition.experiment import Experiment, Method  # noqa: F401 (exported)

# The names ``import dpsim`` exports (dpsim.API, the package root's one list: the root names them
# without importing this module).
__all__ = list(_EXPORTED)


# ------------------------------------------------------------------------------------- experiments
def experiment_named(target: str) -> Experiment:
    """The experiment ``target`` names: an installed one (``"cai-fig3"``, see :func:`catalog`),
    a study file (``"study.py"``, when it defines one) or ``"study.py:NAME"``.

    Raises:
        UsageError: an unknown name (with the closest ones).
    """
    return _resolved(target)[0]


def _resolved(experiment_or_name) -> tuple[Experiment, str | None]:
    """(experiment, source): the source recorded in a run's manifest, by which ``dpsim plot``
    and :func:`load` find the experiment again (a paper module or ``path.py:NAME``; None for
    an experiment defined where no file holds it, e.g. a notebook cell)."""
    from dpsim.engine.registry import experiment as resolve

    if isinstance(experiment_or_name, Experiment):
        return experiment_or_name, source_of(experiment_or_name)
    if isinstance(experiment_or_name, (str, Path)):
        return resolve(str(experiment_or_name))
    raise UsageError(f"{experiment_or_name!r} is neither an experiment's name nor an Experiment")


def source_of(experiment: Experiment) -> str | None:
    """Where ``experiment`` (an object) is defined, as a run's manifest records it: the module
    of the installed paper that holds this very object, else ``path.py:NAME`` of the study file
    or other Python file whose module holds it as a global (a script run as ``__main__``
    included: guard its own run with ``if __name__ == "__main__":``, since ``dpsim plot``
    imports the file again), else None (defined in a notebook or an interactive session)."""
    from dpsim.engine.registry import experiment as resolve

    try:
        found, source = resolve(experiment.name)
        if found is experiment:
            return source
    except UsageError:
        pass
    holders = []
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        if not path.endswith(".py") or (
            module.__name__.split(".")[0] == "dpsim"
            and not module.__name__.startswith("dpsim_study_")
        ):
            continue
        if any(value is experiment for value in list(vars(module).values())):
            holders.append((module.__name__ in ("__main__", "__mp_main__"), path))
    # a module the script imported it from before the script itself: loading that module
    # again later (dpsim plot, dpsim report) does not run the script a second time
    return f"{min(holders)[1]}:{experiment.name}" if holders else None


def checks_for(experiment: Experiment, checks: Sequence | None = None) -> list:
    """The checks of the experiment ``experiment`` extends (:meth:`Experiment.with_methods`),
    judged on ``experiment`` instead: the paper's claims about its own methods, on the run that
    also holds yours (its rows of the paper's methods are the same). Each is renamed after the
    new experiment (``cai-fig3-…`` → ``cai-fig3+mine-…``; a name that does not begin with the
    extended experiment's gets it as a prefix, ``cai-fig3+mine:…``), so it stands beside the
    paper's own in ``dpsim list`` and ``dpsim verify``.

    Args:
        experiment: an experiment made by ``with_methods``.
        checks: the checks to move (default: every installed check of the extended experiment).
    Returns:
        The checks, for a study file's ``CHECKS``.
    Raises:
        UsageError: ``experiment`` extends no experiment (and no ``checks`` are given).
    """
    import dataclasses

    from dpsim.engine.registry import installed

    base = experiment.extends
    if checks is None:
        if not base:
            raise UsageError(
                f"experiment {experiment.name!r} extends no experiment (made by with_methods), "
                f"so it has no paper's checks to take"
            )
        checks = [c for c in installed().checks.values() if c.experiment == base]
    moved = []
    for check in checks:
        name = (
            experiment.name + check.name[len(base) :]
            if base and check.name.startswith(base)
            else f"{experiment.name}:{check.name}"
        )
        moved.append(
            dataclasses.replace(check, name=name, experiment=experiment.name, pins=())
        )  # pins: the paper's table
    return moved


def overrides_of(overrides: Mapping[str, Any]) -> dict[str, list]:
    """Axis → list of values from keyword overrides: a scalar (or a string) is one value, a
    sequence (list, tuple, range, NumPy array) its values.

    Raises:
        UsageError: a value that is neither (e.g. a dict, None, an empty sequence).
    """
    import numpy as np

    out = {}
    for axis, value in overrides.items():
        if isinstance(value, (str, bytes, int, float, np.generic)) and not isinstance(
            value, np.ndarray
        ):
            values = [value.item() if isinstance(value, np.generic) else value]
        elif isinstance(value, (list, tuple, range, np.ndarray, pd.Series, pd.Index)):
            values = [v.item() if isinstance(v, np.generic) else v for v in list(value)]
        else:
            raise UsageError(f"{axis}={value!r}: give one value or a list of values")
        if not values:
            raise UsageError(f"{axis}={value!r}: give at least one value")
        out[axis] = values
    return out


def show(target, *, estimate: bool = False) -> dict:
    """What ``dpsim show`` prints, as data.

    Args:
        target: a name, ``study.py[:NAME]`` or an :class:`Experiment`.
        estimate: also time the default grid's largest shape here (compiles it once) for
            "estimated_seconds" and "estimate_how", as ``dpsim show`` prints them.
    Returns:
        {"name", "title", "description", "source", "page" (the paper's page, or ""), "reps", "axes" (a DataFrame: axis, kind,
        default (the list of values), doc, choices), "derived" (DataFrame: names, level, doc),
        "methods" (DataFrame: method, label, doc, metrics, diagnostics, solver), "figure" (its
        title, x, curve and panels' metrics, or None), "lines" (the text ``dpsim show`` prints),
        "experiment" (the object), "memory" (the default grid's working set against this
        machine's memory); with ``estimate``, "estimated_seconds" and "estimate_how"}.
    """
    from dpsim.engine.definition.axes import axis_type
    from dpsim.engine.presentation.describe import describe
    from dpsim.engine.registry import page_of

    experiment, source = _resolved(target)
    axes = pd.DataFrame(
        [
            {
                "axis": a,
                "kind": experiment.kind(a),
                "default": list(values),
                "doc": axis_type(a, experiment.axis_types).doc,
                "choices": tuple(axis_type(a, experiment.axis_types).choices or ()),
            }
            for a, values in experiment.axes.items()
        ]
    )
    derived = pd.DataFrame(
        [{"names": tuple(d.names), "level": d.level, "doc": d.doc} for d in experiment.derived],
        columns=["names", "level", "doc"],
    )
    methods = pd.DataFrame(
        [
            {
                "method": name,
                "label": m.label or name,
                "doc": m.doc,
                "metrics": tuple(m.metrics),
                "diagnostics": dict(m.diagnostics),
                "solver": m.has_solver,
            }
            for name, m in experiment.methods.items()
        ]
    )
    page = page_of(target) if isinstance(target, str) else ""
    spec = experiment.figure
    figure = (
        None
        if spec is None
        else {
            "title": spec.title,
            "x": spec.x,
            "curve": spec.curve,
            "panels": [(p.metric, p.method) for p in spec.panels],
        }
    )
    shown = {
        "name": experiment.name,
        "title": experiment.title,
        "description": experiment.description,
        "source": source,
        "reps": experiment.reps,
        "axes": axes,
        "derived": derived,
        "methods": methods,
        "figure": figure,
        "page": page,
        "lines": describe(experiment, source or "", page),
        "experiment": experiment,
    }
    from dpsim.engine.presentation.describe import default_plan, estimate_seconds

    default = default_plan(experiment)  # planned once, for the memory line and the estimate
    shown["memory"] = default.memory_line()
    if estimate:
        shown["estimated_seconds"], shown["estimate_how"] = estimate_seconds(
            experiment, plan=default
        )
    return shown


def plan(experiment_or_name, *, reps: int | None = None, seed: int = 0, out=None, **overrides):
    """What ``dpsim run --dry-run`` prints, as data: the request validated and planned, nothing
    written or computed.

    Args:
        experiment_or_name, reps, seed, out, **overrides: as :func:`run`.
    Returns:
        The :class:`~dpsim.engine.execution.planning.Plan`: its steps, lanes, chunks, micro-batch,
        memory, ``compute_seconds()`` (the cost model's estimate) and ``describe()`` (the lines
        ``--dry-run`` prints).
    Raises:
        UsageError: a bad name, axis, value or option (one line).
    """
    from dpsim.engine.execution.runner import plan_run

    experiment, _ = _resolved(experiment_or_name)
    target = Path(out) if out is not None else Path("runs") / experiment.name
    return plan_run(
        experiment, reps=reps, seed=seed, out=target, overrides=overrides_of(overrides) or None
    )


def catalog(target: str | None = None) -> dict[str, pd.DataFrame]:
    """What ``dpsim list`` lists, as data: {"experiments", "checks", "audits", "mutants"}, one
    DataFrame each.

    Args:
        target: None (everything installed), a paper or item name (``"cai"``,
            ``"cai-fig3"``: only its items), or a study file (its items added).
    Returns:
        experiments: name, paper, reps, title, grid (the axes with several values), source;
        checks: name, paper, experiment, description; audits: name, paper, description;
        mutants: name, paper, experiments, description.
    Raises:
        UsageError: an unknown name (with the closest ones).
    """
    from dpsim.engine.presentation.describe import compact_grid
    from dpsim.engine.registry import catalogue, is_study

    found = catalogue(target if target and is_study(target) else None)
    name = target if target and not is_study(target) else None
    if name:
        found.select(
            "experiments", [name], "paper or experiment"
        )  # unknown: one line, with a suggestion

    def chosen(kind):
        return found.select(kind, [], kind) if name is None else found.matching(kind, name)

    def paper(kind, item):
        return found.paper_of[kind].get(item.name, "")

    return {
        "experiments": pd.DataFrame(
            [
                {
                    "name": e.name,
                    "paper": paper("experiments", e),
                    "reps": e.reps,
                    "title": e.title,
                    "grid": compact_grid(e),
                    "source": found.source.get(e.name),
                }
                for e in chosen("experiments")
            ],
            columns=["name", "paper", "reps", "title", "grid", "source"],
        ),
        "checks": pd.DataFrame(
            [
                {
                    "name": c.name,
                    "paper": paper("checks", c),
                    "experiment": c.experiment,
                    "description": c.description,
                }
                for c in chosen("checks")
            ],
            columns=["name", "paper", "experiment", "description"],
        ),
        "audits": pd.DataFrame(
            [
                {"name": a.name, "paper": paper("audits", a), "description": a.description}
                for a in chosen("audits")
            ],
            columns=["name", "paper", "description"],
        ),
        "mutants": pd.DataFrame(
            [
                {
                    "name": m.name,
                    "paper": paper("mutants", m),
                    "experiments": tuple(m.experiments),
                    "description": m.description,
                }
                for m in chosen("mutants")
            ],
            columns=["name", "paper", "experiments", "description"],
        ),
    }


def pins(target: str | None = None) -> pd.DataFrame:
    """What ``dpsim list PAPER --pins`` prints, as data: each component a paper declares
    (``COMPONENTS``: the generators, mechanisms, estimators and metrics it simulates and scores) with the
    checks that pin it and the mutants that break it, so a component no check pins shows.

    Args:
        target: a paper's name (``"cai"``), None (every installed paper) or a study file
            (its own ``COMPONENTS``).
    Returns:
        One row per component: paper, component (``KIND:NAME``), kind, description, checks
        and mutants (tuples of names), gap (True when no check pins it).
    Raises:
        UsageError: an unknown paper (with the closest names).
    """
    from dpsim.engine.presentation.describe import PIN_FIELDS, pin_rows
    from dpsim.engine.registry import catalogue, is_study

    study = bool(target) and is_study(target)
    found = catalogue(target if study else None)
    if study:
        papers = [target.split(":")[0]]
    elif target:
        if target not in found.papers:
            raise UsageError(
                f"unknown paper {target!r}{did_you_mean(target, found.papers)}; "
                f"the papers are {', '.join(found.papers)}"
            )
        papers = [target]
    else:
        papers = list(found.papers)

    def of(kind, paper):
        return [
            item
            for name, item in getattr(found, kind).items()
            if found.paper_of[kind].get(name) == paper
        ]

    rows = [
        row
        for paper in papers
        for row in pin_rows(
            paper, found.components.get(paper, {}), of("checks", paper), of("mutants", paper)
        )
    ]
    return pd.DataFrame(rows, columns=list(PIN_FIELDS))


# ------------------------------------------------------------------------------------- run and load
def run(
    experiment_or_name,
    *,
    reps: int | None = None,
    seed: int = 0,
    out=None,
    executor=None,
    progress: bool = True,
    **overrides,
) -> "Results":
    """Run (or resume) an experiment, as ``dpsim run``; returns its folder's results.

    Args:
        experiment_or_name: a name (``"cai-fig3"``), ``"study.py[:NAME]"`` or an
            :class:`Experiment` (e.g. one defined in a notebook, or a paper's
            ``.with_methods(...)``).
        reps: replicates per grid point (default: the experiment's).
        seed: the run's seed (keys derive from it and the grid point, never from positions).
        out: the folder (default ``runs/<experiment name>``, as the command); a folder holding
            a finished run of the same experiment, seed and code is extended or left as is.
        executor: None or ``"local"`` (this process), ``"ray"`` (Ray actors), or an executor
            object (:mod:`dpsim.engine.execution.executors`).
        progress: show a progress bar.
        overrides: axis=value or axis=[values] (module docstring), e.g. ``eps=[0.5, 1]``.
    Returns:
        :class:`Results` of the folder (every row it holds, earlier runs' included).
    Raises:
        UsageError: a bad value, before anything is written.
    """
    from dpsim.engine.execution.executors import Executor
    from dpsim.engine.execution.executors import executor as make_executor
    from dpsim.engine.execution.runner import run_experiment

    experiment, source = _resolved(experiment_or_name)
    values = overrides_of(overrides)
    if isinstance(out, str) and not out.strip():
        raise UsageError("out='' names no folder; give a path, or None for runs/<experiment>")
    target = Path(out) if out is not None else Path("runs") / experiment.name
    if source is None:
        note(
            f"{experiment.name} is defined in this session only: `dpsim plot {target}` will not find it "
            f"(define it in a study file to plot from the command line; here use Results.plot)"
        )

    def go(chosen):
        return run_experiment(
            experiment,
            reps=reps,
            seed=seed,
            out=target,
            overrides=values or None,
            progress=progress,
            source=source,
            executor=chosen,
        )

    if executor is None or isinstance(executor, Executor):
        go(executor)
    elif isinstance(executor, str):
        with make_executor(executor) as chosen:
            go(chosen)
    else:
        raise UsageError(
            f"executor={executor!r}: name one ('local' or 'ray') or pass an executor object"
        )
    return Results(target, experiment)


def load(folder, experiment: Experiment | None = None) -> "Results":
    """The results of a run folder (``dpsim run``'s or :func:`run`'s ``out``).

    Args:
        folder: the folder.
        experiment: the experiment that made it, for one the manifest's source cannot find
            again (defined in a notebook); default: found from the manifest when needed.
    Raises:
        UsageError: the folder holds no dpsim run.
    """
    from dpsim.engine.storage.store import read_manifest

    out = Path(folder)
    if not out.is_dir() or read_manifest(out) is None:
        raise UsageError(f"{str(folder)!r} holds no dpsim run (no manifest.json)")
    return Results(out, experiment)


def info(folder) -> dict:
    """A study folder's provenance and completeness, as ``dpsim info DIR --json`` prints it
    (:func:`dpsim.engine.storage.folder.folder_info`): experiment, seed, code fingerprint, commit and
    dirty flag, versions, requests, replicate lanes stored of planned, damage and warnings."""
    from dpsim.engine.storage.folder import folder_info

    return folder_info(folder)


def repair(folder) -> dict:
    """``dpsim repair DIR``: a killed run's temporary files removed, unreadable parts set aside
    (``*.corrupt``, kept), a lost or damaged manifest rebuilt from the parts; nothing computed.
    Returns what was done (:func:`dpsim.engine.storage.folder.repair_folder`)."""
    from dpsim.engine.storage.folder import repair_folder

    return repair_folder(folder)


def merge(out, folders: Sequence) -> "Results":
    """``dpsim merge OUT DIR...``: run folders of one experiment, seed and code joined into
    ``out`` (a lane stored twice with the same rows is kept once; different rows, experiments,
    seeds or code are refused in one line). Returns the merged folder's results."""
    from dpsim.engine.storage.merge import merge_folders

    if not str(out).strip():
        raise UsageError("the merged folder is empty: name a folder")
    merge_folders(str(out), [str(f) for f in folders], experiment_of)
    return Results(Path(out), None)


AUDIT_COLUMNS = (
    "audit",
    "mechanism",
    "mode",
    "eps",
    "delta",
    "exact_loss",
    "empirical_loss",
    "empirical_se",
    "within_budget",
    "empirically_consistent",
    "known_violation",
    "detail",
)


def audit(
    *names: str, eps: Sequence[float] = (0.5, 1.0, 2.0), samples: int = 200_000, seed: int = 0
) -> pd.DataFrame:
    """``dpsim audit``: each selected privacy audit (a paper's ``AUDITS``; all by default) at
    each ε: the exact privacy loss on worst-case neighbours against the claimed ε, and its
    estimate from ``samples`` draws of the mechanism.

    Returns:
        One row per audit × mechanism × ε, columns :data:`AUDIT_COLUMNS`; ``within_budget``
        (the exact loss ≤ ε), ``empirically_consistent`` (the sampled loss agrees with it).
    Raises:
        UsageError: an unknown audit, ε = inf, or fewer than 1000 samples.
    """
    import jax

    from dpsim.engine.definition.axes import validate_value
    from dpsim.engine.registry import installed

    eps_values = [validate_value("eps", e) for e in eps]
    if any(e == float("inf") for e in eps_values):
        raise UsageError("eps=inf has no privacy loss to audit")
    if samples < 1000:
        raise UsageError(f"samples={samples} must be ≥ 1000")
    rows = []
    for number, chosen in enumerate(installed().select("audits", list(names), "audit")):
        for r in chosen.run(jax.random.fold_in(jax.random.key(seed), number), eps_values, samples):
            rows.append(
                {
                    "audit": chosen.name,
                    "mechanism": r.mechanism,
                    "mode": r.mode,
                    "eps": r.eps,
                    "delta": r.delta,
                    "exact_loss": r.exact_loss,
                    "empirical_loss": r.empirical_loss,
                    "empirical_se": r.empirical_se,
                    "within_budget": r.within_budget,
                    "empirically_consistent": r.empirically_consistent,
                    "known_violation": r.known_violation,
                    "detail": r.detail,
                }
            )
    return pd.DataFrame(rows, columns=list(AUDIT_COLUMNS))


def experiment_of(manifest: Mapping) -> Experiment:
    """The experiment a run folder holds, found again from its manifest's source (a paper
    module or ``path.py:NAME``) or name.

    Raises:
        UsageError: neither finds it (e.g. it was defined in a notebook: pass it to :func:`load`).
    """
    from dpsim.engine.storage.folder import experiment_of as found_again

    try:
        return found_again(manifest)
    except UsageError as exc:
        raise UsageError(
            f"the experiment of this folder cannot be found again ({exc}); "
            f"pass it: dpsim.load(folder, experiment=...)"
        ) from None


@dataclass
class Results:
    """A run folder's results (:func:`run`, :func:`load`).

    Attributes:
        out: the folder (``parts/``, ``manifest.json``, figures).
        manifest: its manifest (what was run, by which code, where; read when asked).
        table: the tidy rows, one per grid point × replicate × method (pandas; read once).
        experiment: the experiment (given, or found from the manifest's source).
        complete: whether every lane asked for is stored (False after an interrupted run).
    """

    out: Path
    _experiment: Experiment | None = field(default=None, repr=False)
    _table: pd.DataFrame | None = field(default=None, repr=False, init=False)

    def __post_init__(self):
        self.out = Path(self.out)

    def __repr__(self) -> str:
        return (
            f"Results({self.manifest.get('experiment', '?')!r}, out={str(self.out)!r}"
            + ("" if self.complete else ", incomplete")
            + ")"
        )

    @property
    def manifest(self) -> dict:
        from dpsim.engine.storage.store import read_manifest

        return read_manifest(self.out) or {}

    @property
    def complete(self) -> bool:
        return bool(self.manifest.get("complete", True))

    @property
    def experiment(self) -> Experiment:
        if self._experiment is None:
            self._experiment = experiment_of(self.manifest)
        return self._experiment

    @property
    def table(self) -> pd.DataFrame:
        from dpsim.engine.storage.store import load_results

        if self._table is None:
            if not self.complete:
                note(
                    f"{self.out} holds an incomplete run (interrupted or still running): its rows so far; "
                    f"run it again to finish it"
                )
            self._table = load_results(self.out)
        return self._table

    def _declared_metrics(self) -> list[str] | None:
        from dpsim.engine.presentation.summary import declared_metrics

        try:
            return declared_metrics(self.experiment)
        except UsageError:
            return None

    def summary(
        self,
        metric: str | None = None,
        by: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        slope=None,
        *,
        pool: Sequence[str] = (),
        cli: bool = False,
    ) -> pd.DataFrame:
        """Means with 95% intervals per method and group, or log–log slopes: the numbers
        ``dpsim summary`` prints (:func:`dpsim.engine.presentation.summary.summary_table`,
        :func:`~dpsim.engine.presentation.summary.slope_table`).

        Args:
            metric: the metric (default: the experiment's first; ``attrs["metric"]`` names it).
            by: the axes of a group besides the method (default: every axis with several values);
                an axis name or a list.
            where: axis → value(s), the rows used, e.g. ``{"p": 1}``.
            slope: ``"METRIC:AXIS"`` (or several): slopes of log METRIC on log AXIS instead.
            pool: axes averaged over deliberately (a name or a list).
            cli: word errors in ``dpsim summary``'s options.
        """
        from dpsim.engine.presentation.summary import slope_table, summary_table

        chosen = overrides_of(where) if where else None
        pool = (pool,) if isinstance(pool, str) else tuple(pool)
        if slope is not None:
            return slope_table(self.table, slope, where=chosen, pool=pool, cli=cli)
        by = (
            [by]
            if isinstance(by, str)
            else None
            if by is None
            else [b for b in by if b != "method"]
        )
        return summary_table(
            self.table,
            metric,
            by,
            where=chosen,
            pool=pool,
            metrics=self._declared_metrics(),
            cli=cli,
        )

    def plot(
        self,
        metric: str | None = None,
        where: Mapping[str, Any] | None = None,
        logy: bool | None = None,
        *,
        to=None,
        save: bool = False,
    ) -> list:
        """The experiment's figure(s) of these rows, in the paper's layout (one per value of an
        axis the figure does not map), as ``dpsim plot``.

        Args:
            metric: draw this metric (every method reporting it) instead of the declared panels.
            where: axis → value(s), the rows drawn.  logy: log (True) or linear (False) y axes.
            to: a file stem: write each figure there as PNG, PDF and the plotted points' CSV.
            save: write them as ``dpsim plot`` does, to ``out/figure.*`` (``to`` when given).
        Returns:
            The matplotlib figures; with ``to`` or ``save``, the paths written instead.
        Raises:
            UsageError: the experiment defines no figure, or a bad metric, axis or value.
        """
        chosen = overrides_of(where) if where else None
        if to is not None or save:
            return draw_folder(
                self.out,
                self.experiment,
                None if to is None else Path(to),
                where=chosen,
                metric=metric,
                logy=logy,
                table=self.table,
            )
        from dpsim.engine.presentation.plots import draw_figures

        spec = _figure_spec(self.experiment, self.table, chosen, metric, logy)
        return [drawn.figure for drawn in draw_figures(_rows(self.table, chosen), spec)]

    def report(self, out=None) -> Path:
        """The folder's page for a coauthor, as ``dpsim report``: :func:`report` of ``self.out``.

        Args:
            out: the HTML file (default ``out/report.html``).
        Returns:
            The path written.
        """
        return report(self.out, out)


def report(paths, out=None) -> Path:
    """One self-contained HTML page of run folders or a verify folder (figures, summaries,
    verdicts with their intervals and regions, the kill matrix, warnings, provenance), read from
    the folders alone, as ``dpsim report``.

    Args:
        paths: one folder (str or Path) or several.
        out: the HTML file (default FOLDER/report.html for one folder; required for several).
    Returns:
        The path written.
    Raises:
        UsageError: no folder, a folder that holds no run and no verdicts, or a bad ``out``;
            nothing is written then.
    """
    from dpsim.engine.presentation.report import write_report

    return write_report(paths, out)


def _rows(table: pd.DataFrame, where) -> pd.DataFrame:
    from dpsim.engine.presentation.panels import filter_rows

    return filter_rows(table, where) if where else table


def _figure_spec(experiment: Experiment, table: pd.DataFrame, where, metric, logy):
    from dpsim.engine.presentation.panels import metric_spec, with_logy

    if experiment.figure is None:
        raise UsageError(f"experiment {experiment.name!r} defines no figure")
    from dpsim.engine.presentation.panels import titled

    rows = _rows(table, where)
    declared = titled(experiment.figure, experiment.title)
    spec = metric_spec(rows, declared, metric) if metric else declared
    return with_logy(spec, logy)


def draw_folder(
    out: Path,
    experiment: Experiment,
    to: Path | None = None,
    *,
    where: dict | None = None,
    metric: str | None = None,
    logy: bool | None = None,
    table: pd.DataFrame | None = None,
) -> list[Path]:
    """Draw the experiment's figure(s) from a run folder's table: PNG, PDF and the plotted
    points as CSV, beside each other (several figures when an axis the figure does not map
    has several values), to ``to`` or ``out/figure``; ``where``, ``metric`` and ``logy`` are
    ``dpsim plot``'s --where, --metric and --logy / --no-logy. The declared figure drawn from
    every row into the folder removes the folder's figures of an earlier split that are no
    longer drawn. Returns the paths written ([] when the experiment defines no figure); a bad
    option is a UsageError raised before anything is written."""
    from dpsim.engine.presentation.plots import draw_figures, save_figure
    from dpsim.engine.storage.store import load_results

    if experiment.figure is None:
        return []
    table = load_results(out) if table is None else table
    spec = _figure_spec(experiment, table, where, metric, logy)
    paths = []
    try:
        for drawn in draw_figures(_rows(table, where), spec):
            paths += save_figure(drawn, to or out / "figure")
    except (UsageError, OSError):
        raise
    except Exception as exc:  # e.g. a FigureSpec's labels that do not fit its axes: one line
        if traceback_wanted():
            raise
        raise stage_failed(experiment.name, "figure", "", exc) from None
    # the declared figure drawn from every row: figures of an earlier split (figure-link=probit.png, …)
    # no longer drawn are removed (a figure of some rows or of one metric removes none)
    if to is None and not where and not metric:
        drawn_now = {Path(p).resolve() for p in paths}
        for stale in out.glob("figure*"):
            if stale.suffix in (".png", ".pdf", ".csv") and stale.resolve() not in drawn_now:
                stale.unlink()
    return paths


# ------------------------------------------------------------------------------------- verify, solve
@dataclass
class Verification:
    """What :func:`verify` found.

    Attributes:
        table: one row per check: name, experiment, verdict (PASS, FAIL, INCONCLUSIVE,
            REFUSED, INFO), value and its 95% interval (low, high), the predicted region
            (region_low, region_high; NaN where a check states none), predicted and fitted
            (as the line prints them), evidence, needed_reps (INCONCLUSIVE: about how many
            replicates would decide), claim (what the paper says), note.
        counts: verdict → number of checks.
        mutants: with ``mutants``: one row per mutant (name, killed, line); else None.
        lines: what ``dpsim verify`` prints.
        records: the records of ``RUNS/verdicts.json`` (:func:`dpsim.engine.presentation.verdict_files.verdict_records`:
            per check its claim, statistic, estimate, interval, region, verdict, family-wise rule
            and replicates).
    """

    table: pd.DataFrame
    counts: dict
    mutants: pd.DataFrame | None
    lines: list[str]
    records: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No check FAILed or was REFUSED, and no mutant survived."""
        survived = self.mutants is not None and not self.mutants["killed"].all()
        return not (self.counts.get("FAIL") or self.counts.get("REFUSED") or survived)


def verify(
    *targets,
    runs="runs/verify",
    seed: int = 0,
    reps: int | None = None,
    until_decided: bool = False,
    budget: int | None = None,
    stages: int | None = None,
    mutants: bool | Sequence[str] = False,
    progress: bool = True,
    echo=None,
    watchdog: float | None = None,
    cli: bool = False,
) -> Verification:
    """Run what the checks need (resuming) and judge them, as ``dpsim verify``.

    Args:
        targets: check names, a paper (``"cai"``), experiment names (their checks), a study
            file (its checks), check objects, or :class:`Experiment` objects (their checks: for
            one made by ``with_methods``, the paper's, :func:`checks_for`); none: every check.
        runs: the folder of the checks' runs.  seed: the runs' seed.
        reps: judge on exactly this many replicates (default: each experiment's own).
        until_decided, budget, stages: ``--until-decided [--budget] [--stages]``.
        mutants: True (every mutant of the checks' experiments) or mutant names: judge again
            under each; one that no check catches survives.
        progress: the runs' progress bars, and each line printed as it is judged.
        echo: called with each line instead (default: ``print`` with ``progress``, else nothing).
        watchdog: as :func:`run`'s engine (``--watchdog``).
        cli: word errors in the command's options (``--budget``).
    Returns:
        :class:`Verification`.
    Raises:
        UsageError: an unknown name, or a bad option.
    """
    from dpsim.engine.registry import Catalogue, catalogue, is_study
    from dpsim.engine.presentation.verdict_files import (
        kill_records,
        verdict_records,
        write_verdicts,
    )
    from dpsim.engine.judgement.verify import family_size, sequential_header
    from dpsim.engine.judgement.verify import verify as judge_checks
    from dpsim.engine.judgement.verify import verify_mutants

    sequential = _sequential(until_decided, budget, stages, bool(mutants), cli)
    names = [str(t) for t in targets if isinstance(t, (str, Path))]
    given = [t for t in targets if isinstance(t, Experiment)]
    objects = [t for t in targets if not isinstance(t, (str, Path, Experiment))]
    study = next((n for n in names if is_study(n)), None)
    if study:
        names.remove(study)
    found = Catalogue()
    found.update(catalogue(study))  # a copy: the installed catalogue is shared
    for experiment in given:
        found.experiments[experiment.name] = experiment
        found.source[experiment.name] = source_of(experiment) or experiment.name
        if not any(c.experiment == experiment.name for c in objects):
            own = [c for c in found.checks.values() if c.experiment == experiment.name]
            objects += own or checks_for(experiment)
    for check in objects:
        if not hasattr(check, "experiment") or not hasattr(check, "evaluate"):
            raise UsageError(f"verify: {check!r} is neither a name, an experiment nor a check")
        if check.experiment not in found.experiments:
            raise UsageError(
                f"check {check.name!r} needs experiment {check.experiment!r}: pass it too, "
                f"dpsim.verify(experiment, *checks)"
            )
        found.checks[check.name] = check
    if study and not names and not objects:
        names = [c.name for c in found.matching("checks", study.split(":")[0])]
        if not names:
            raise UsageError(f"study file {study!r} defines no checks")
    selected = (
        found.select("checks", _checks_of_experiments(found, names), "check")
        if names or not objects
        else []
    )
    checks = {c.name: c for c in [*selected, *objects]}
    chosen = _selected_mutants(found, checks, mutants)
    echo = echo or ((lambda line: print(line, flush=True)) if progress else (lambda line: None))
    lines: list[str] = []

    def kept(line):
        lines.append(line)
        echo(line)

    family = family_size(checks.values())
    results, counts = judge_checks(
        checks,
        found.experiments,
        [],
        runs=Path(runs),
        seed=seed,
        reps=reps,
        progress=progress,
        watchdog=watchdog,
        sources=found.source,
        family=family,
        sequential=sequential,
        solver=_check_solver,
        echo=kept,
    )
    table = pd.DataFrame(
        [_verdict_row(r, checks[r.name]) for r in results], columns=VERDICT_COLUMNS
    )
    # the verdicts as data beside the runs: RUNS/verdicts.json, verdicts.csv (and the kill matrix)
    records = verdict_records(results, checks, family)
    files = dict(
        rule=None if sequential is None else sequential_header(family, sequential),
        seed=seed,
        reps=reps,
    )
    write_verdicts(Path(runs), records, **files)
    outcome = None
    if chosen is not None:
        outcomes = verify_mutants(
            checks,
            found.experiments,
            chosen,
            results,
            runs=Path(runs),
            seed=seed,
            reps=reps,
            family=family,
            progress=progress,
            watchdog=watchdog,
            sources=found.source,
            solver=_check_solver,
            echo=kept,
        )
        outcome = pd.DataFrame(
            [{"name": o.mutant, "killed": o.killed, "line": o.line()} for o in outcomes],
            columns=["name", "killed", "line"],
        )
        write_verdicts(
            Path(runs),
            records,
            **files,
            outcomes=outcomes,
            kills=kill_records(outcomes, chosen, checks, results),
        )
    return Verification(table, dict(Counter(counts)), outcome, lines, records)


def _sequential(until_decided: bool, budget, stages, mutants: bool, cli: bool):
    """The :class:`~dpsim.engine.judgement.verify.Sequential` rule asked for, or None; UsageError for
    a bad value or a combination it refuses (worded in the command's options with ``cli``)."""
    from dpsim.engine.judgement.verify import Sequential

    word = (lambda name: f"--{name.replace('_', '-')}") if cli else (lambda name: name)
    if not until_decided:
        extra = "budget" if budget is not None else "stages" if stages is not None else None
        if extra:
            raise UsageError(f"{word(extra)} needs {word('until_decided')}")
        return None
    if mutants:
        raise UsageError(
            f"{word('until_decided')} cannot be combined with "
            f"{'--mutants/--mutant' if cli else 'mutants'} (judge mutants at fixed replicates)"
        )
    return Sequential(**({} if stages is None else {"stages": stages}), budget=budget)


def _selected_mutants(found, checks: Mapping, mutants):
    """The mutants asked for: every mutant of the checks' experiments (``mutants`` True), the
    named ones (a name or names), or None (False)."""
    from dpsim.engine.judgement.mutants import mutants_of

    if not mutants:
        return None
    relevant = mutants_of(found.mutants.values(), {c.experiment for c in checks.values()})
    if not isinstance(mutants, bool):
        chosen = found.select(
            "mutants", [mutants] if isinstance(mutants, str) else list(mutants), "mutant"
        )
        outside = [m.name for m in chosen if m not in relevant]
        if outside:
            raise UsageError(
                f"mutant {outside[0]!r} changes none of the selected checks' experiments"
            )
        relevant = chosen
    if not relevant:
        raise UsageError("no mutant changes the selected checks' experiments; see `dpsim list`")
    return relevant


VERDICT_COLUMNS = [
    "name",
    "experiment",
    "verdict",
    "value",
    "low",
    "high",
    "region_low",
    "region_high",
    "predicted",
    "fitted",
    "evidence",
    "needed_reps",
    "claim",
    "note",
]


def _verdict_row(result, check) -> dict:
    return {
        "name": result.name,
        "experiment": check.experiment,
        "verdict": result.verdict,
        "value": result.value,
        "low": result.low,
        "high": result.high,
        "region_low": getattr(result, "region_low", math.nan),
        "region_high": getattr(result, "region_high", math.nan),
        "predicted": result.predicted,
        "fitted": result.fitted,
        "evidence": result.evidence,
        "needed_reps": result.needed_reps,
        "claim": getattr(check, "description", ""),
        "note": result.note.strip(),
    }


def _checks_of_experiments(found, names: list[str]) -> list[str]:
    """``names`` with each experiment name replaced by the names of the checks judged on it
    (``dpsim verify cai-fig3`` runs cai-fig3's checks); other names are left as they are."""
    out = []
    for name in names:
        if name in found.experiments and name not in found.checks:
            own = [c.name for c in found.checks.values() if c.experiment == name]
            if not own:
                raise UsageError(f"experiment {name!r} has no checks; see `dpsim list`")
            out.extend(own)
        else:
            out.append(name)
    return out


def _check_solver(experiment, solve, *, out, seed, progress):
    """The roots table of a check's declared solve, computed (or replayed) by ``dpsim solve``'s back end."""
    from dpsim.engine.solving.solve import solve_experiment

    return solve_experiment(
        experiment,
        axis=solve.axis,
        target=solve.target,
        within=solve.within,
        overrides=solve.override_dict() or None,
        seed=seed,
        out=out,
        progress=progress,
    ).table


def solve(
    experiment_or_name,
    *,
    axis: str,
    target: str,
    within: tuple[float, float] | None = None,
    finder: str | None = None,
    level: float = 0.95,
    budget: int | None = None,
    seed: int = 0,
    out=None,
    progress: bool = True,
    watchdog: float | None = None,
    **overrides,
):
    """For every configuration of the other axes, the value of ``axis`` where the mean of a
    metric reaches a value, as ``dpsim solve``.

    Args:
        experiment_or_name: as :func:`run`.  axis: the numeric axis solved for.
        target: ``"METRIC[@METHOD]=VALUE"``.  within: the interval searched (default: the
            axis's smallest and largest values).  finder: the root-finder's name.
        level: the roots' confidence level.  budget: replicate lanes asked, at most.
        seed, out, progress: as :func:`run` (default folder ``runs/<name>-solve-<axis>``).
        watchdog: seconds without progress before a run stops (``--watchdog``).
        overrides: the other axes' values (each combination is one configuration).
    Returns:
        :class:`~dpsim.engine.solving.solve.SolveResult`: ``.table`` has one row per configuration
        (its axes, ``root``, ``low``, ``high``, ``status``, ``lanes``), ``.evidence`` every
        evaluated point, ``.out`` the folder.
    """
    from dpsim.engine.solving.solve import solve_experiment

    experiment, source = _resolved(experiment_or_name)
    return solve_experiment(
        experiment,
        axis=axis,
        target=target,
        within=within,
        finder=finder,
        overrides=overrides_of(overrides) or None,
        seed=seed,
        out=out,
        level=level,
        budget=budget,
        progress=progress,
        source=source,
        watchdog=watchdog,
    )
