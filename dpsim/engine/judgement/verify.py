"""``dpsim verify``: run what the checks need (resuming), then judge them on exactly the
replicates asked for; with mutants, judge them again under each plausible bug.

Runs go to ``runs/verify/<experiment>`` by default, apart from the ``dpsim run`` default
``runs/<experiment>``, so a study extended by hand (``--set link=probit``) is never mixed
into a check. With ``reps`` = R each check sees replicates 0 … R−1 exactly: missing ones are
computed, extra ones already on disk are left out (and the line says so).

Folders and code: a check never judges rows of code other than the one it checks (the
manifest's fingerprint, :mod:`dpsim.engine.storage.provenance`), and verify never deletes or
rewrites a folder that is not its own. The default ``runs/verify`` is dpsim's cache: the
folders verify creates there are marked ``"owner": "dpsim-cache"`` in their manifests
(:data:`~dpsim.engine.storage.store.CACHE_OWNER`), and such a folder made by other code is
replaced, with a note. Any other folder made by other code (every folder of a ``--runs DIR``
the user names, and an unmarked one in the cache, e.g. one made by ``dpsim run --out``) is
refused in one line naming the changed modules and the ways back, before anything is
computed (:func:`check_folders`); its files stay byte for byte as they were. Folders of the
same code are extended with the replicates a check needs.

Family-wise rule: the checks judged in one ``verify`` are one family of m tests (the
report-only ones excluded); a check FAILs only when its interval at the Bonferroni level
0.05/m lies outside its region, PASSes when its 95% interval lies inside
(:func:`dpsim.engine.judgement.checks.judge`).

Until decided (``--until-decided``, :class:`Sequential`, :func:`decided_on`): a check
INCONCLUSIVE at stage s gets the replicates of stage s + 1 (twice as many: R, 2R, 4R, …, at
most ``stages`` stages) at the data points it reads (:meth:`~dpsim.engine.judgement.verdicts.Check.used_rows`;
points shared by checks of one experiment are computed once) and is judged again on exactly
the first 2^s·R replicates there, at the stage's levels
(:func:`~dpsim.engine.judgement.verdicts.stage_share`: the sequential rule that keeps both error
rates), until it is decided, its stages are used up, or the budget (lanes beyond stage 1,
over the whole verify) cannot pay its next stage. The budget is charged by the schedule, not
by what happens to be on disk, so a re-run takes the same decisions and computes nothing.

Mutants (:mod:`dpsim.engine.judgement.mutants`): :func:`verify_mutants` re-runs each mutant's
experiments into ``RUNS/mutants/<mutant>/<experiment>`` and re-judges the checks on them with
the same family size; a mutant is *killed* when some check that did not FAIL on the real
code FAILs under it, and *survives* otherwise (a check that cannot be evaluated, ERROR, never
kills one).
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from dpsim.errors import UsageError, note, traceback_wanted
from dpsim.engine.judgement.verdicts import CheckResult, stage_share
from dpsim.engine.definition.grid import expand_grid
from dpsim.engine.execution.runner import run_experiment
from dpsim.engine.storage.provenance import describe, fingerprint
from dpsim.engine.storage import store
from dpsim.engine.storage.store import CACHE_OWNER, load_results, other_code
from dpsim.engine.judgement.verdicts import ALPHA

DEFAULT_RUNS = Path("runs") / "verify"


def run_directory(runs: Path, experiment: str, seed: int) -> Path:
    return Path(runs) / (experiment if seed == 0 else f"{experiment}-seed{seed}")


def cache_owner(runs: Path) -> str | None:
    """The ``owner`` of the folders verify creates under ``runs``: :data:`CACHE_OWNER` when
    ``runs`` is dpsim's cache (:data:`DEFAULT_RUNS`, from the working directory), else None
    (a folder the user named is the user's)."""
    return CACHE_OWNER if Path(runs).resolve() == DEFAULT_RUNS.resolve() else None


def refusal(out: Path, code: dict, experiment: str = "EXPERIMENT") -> str | None:
    """Why verify may not use ``out`` with ``code`` (module docstring), in one line; None when
    it may: the folder is new, made by ``code``, or one of dpsim's cache (replaced then)."""
    made = other_code(out, code)
    if made is None or store.owned_by_dpsim(out):
        return None
    in_cache = DEFAULT_RUNS.resolve() in Path(out).resolve().parents
    unmarked = (
        (
            " (it lies in the cache but is not marked as dpsim's: made by `dpsim run`, or before verify marked "
            "its folders; remove it to let verify recompute it)"
        )
        if in_cache
        else ""
    )
    return (
        f"{str(out)!r} holds rows made by {made}, not by this {describe(code)} "
        f"({store.code_change(out, code)}); verify replaces only the folders of its own cache and never "
        f"rewrites yours{unmarked}: go back to that code (`git stash`), extend the folder with this code by "
        f"`dpsim run {experiment} --out {out} --accept-code-change`, or give verify another --runs"
    )


def _prepared(out: Path, code: dict, experiment: str = "EXPERIMENT") -> bool:
    """Make ``out`` usable by verify with ``code``: refuse a folder that is not dpsim's (a
    UsageError, :func:`refusal`), replace one of its cache made by other code (with a note).
    Returns whether the folder is new (verify creates it)."""
    why = refusal(out, code, experiment)
    if why is not None:
        raise UsageError(why)
    made = other_code(out, code)
    if made is not None:  # dpsim's cache: rows of other code are recomputed, never judged
        note(
            f"{out}: made by {made}; recomputing it with {describe(code)} (a folder of dpsim's cache)"
        )
        shutil.rmtree(out)
    return store.read_manifest(out) is None


def _solve_stems(experiment, checks) -> list[str]:
    """The folder stem of each check's declared solve, in order: <experiment>-solve-<axis>, a
    second declaration on the same axis with a digest suffix (checks sharing a solve share it)."""
    stems, declared = [], {}
    for check in checks:
        solve = check.solve
        stem = f"{experiment.name}-solve-{solve.axis}"
        if declared.setdefault(stem, solve) != solve:
            stem += "-" + hashlib.sha1(repr(solve).encode()).hexdigest()[:6]
        stems.append(stem)
    return stems


def _mark_owner(out: Path, owner: str) -> None:
    """Record ``owner`` in the manifest of the folder ``out`` verify has just created."""
    with store.manifest_lock(out):
        manifest = store.read_manifest(out)
        if manifest is not None and "owner" not in manifest:
            store.write_manifest(out, {**manifest, "owner": owner})


def check_folders(experiments: Mapping[str, object], checks, runs: Path, seed: int) -> None:
    """Refuse, before anything is computed, a verify whose folders under ``runs`` include one
    it may not use (:func:`refusal`): one UsageError naming the first."""
    by_experiment: dict[str, list] = {}
    for check in checks:
        by_experiment.setdefault(check.experiment, []).append(check)
    for name, its_checks in by_experiment.items():
        experiment = experiments.get(name)
        if experiment is None or not hasattr(experiment, "axes"):
            continue
        code = fingerprint(experiment)
        solved = [c for c in its_checks if getattr(c, "solve", None) is not None]
        folders = [
            run_directory(runs, stem, seed)
            for stem in dict.fromkeys(_solve_stems(experiment, solved))
        ]
        if len(solved) < len(its_checks):
            folders.append(run_directory(runs, name, seed))
        for out in folders:
            why = refusal(out, code, name)
            if why is not None:
                raise UsageError(why)


@dataclass(frozen=True)
class Sequential:
    """``verify --until-decided`` (module docstring): at most ``stages`` looks (replicates R,
    2R, 4R, …); ``budget``: the lanes (data point × replicate) the stages after the first may
    add over the whole verify (None: no limit but the stages).

    Raises:
        UsageError: stages < 1 or budget < 1 (naming the value).
    """

    stages: int = 4
    budget: int | None = None

    def __post_init__(self):
        if isinstance(self.stages, bool) or not isinstance(self.stages, int) or self.stages < 1:
            raise UsageError(f"--stages {self.stages!r} must be an integer ≥ 1")
        if self.budget is not None and (
            isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 1
        ):
            raise UsageError(f"--budget {self.budget!r} must be a number of lanes ≥ 1")

    def reps(self, base: int, stage: int) -> int:
        """The replicates per point of look ``stage`` (1-based): ``base`` · 2^(stage − 1)."""
        return base * 2 ** (stage - 1)


class _Ledger:
    """The lanes a sequential verify's later stages have been granted (``left``: None when
    unlimited) and computed."""

    def __init__(self, budget: int | None):
        self.left, self.granted, self.computed = budget, 0, 0

    def grant(self, lanes: int) -> bool:
        if self.left is not None and lanes > self.left:
            return False
        self.granted += lanes
        if self.left is not None:
            self.left -= lanes
        return True


def verify(
    checks: Mapping[str, object],
    experiments: Mapping[str, object],
    names: Sequence[str] = (),
    *,
    runs: Path = DEFAULT_RUNS,
    seed: int = 0,
    reps: int | None = None,
    progress: bool = True,
    watchdog: float | None = None,
    sources: Mapping[str, str] | None = None,
    echo=None,
    family: int | None = None,
    sequential: Sequential | None = None,
    solver=None,
) -> tuple[list[CheckResult], Counter]:
    """Evaluate the named checks (all when ``names`` is empty), one experiment at a time: its
    runs are computed (what is missing), its checks judged and printed at once.

    Args:
        family: the number of tests a FAIL is adjusted for (default: the judged checks
            selected here, report-only ones excluded).
        sequential: judge until decided (:class:`Sequential`, :func:`decided_on`); each line
            then says at which stage, on how many replicates, its check was decided.
        solver: ``solver(experiment, solve, *, out, seed, progress) → roots table`` for the
            checks that declare a solve (:func:`judged_by_solves`; the command passes
            :func:`dpsim.engine.solving.solve.solve_experiment`'s).
    Returns:
        (results, verdict counts). A check that cannot be evaluated (:func:`judge`) is an
        ERROR line with the reason.
    """
    echo = echo or (lambda line: print(line, flush=True))
    if reps is not None and (isinstance(reps, bool) or not isinstance(reps, int) or reps < 1):
        raise UsageError(f"--reps {reps!r} must be an integer ≥ 1")  # before the family's header
    unknown = [n for n in names if n not in checks]
    if unknown:
        raise UsageError(f"unknown check {unknown[0]!r}; see `dpsim list`")
    selected = [checks[n] for n in (names or list(checks))]
    for check in selected:
        if check.experiment not in experiments:
            raise UsageError(
                f"check {check.name!r} needs experiment {check.experiment!r}, which is not defined"
            )
    family = family if family is not None else family_size(selected)
    check_folders(experiments, selected, runs, seed)  # a folder verify may not use: refused now
    owner = cache_owner(runs)
    if sequential is None:
        echo(
            f"family: {family} judged check{'s' * (family > 1)}; PASS when the 95% interval lies in the region, "
            f"FAIL when the interval at the Bonferroni level 0.05/{family} (per point judged) lies outside it"
        )
    else:
        echo(sequential_header(family, sequential))
    ledger = _Ledger(sequential.budget if sequential else None)
    by_experiment: dict[str, list] = {}
    for check in selected:
        by_experiment.setdefault(check.experiment, []).append(check)
    results, counts = [], Counter()
    # one experiment at a time: run what it needs, judge its checks and print them at once,
    # then let its table go (a full verify holds one experiment's rows, not every one's)
    for name, its_checks in by_experiment.items():
        judged = judged_all(
            experiments[name],
            its_checks,
            runs=runs,
            seed=seed,
            reps=reps,
            family=family,
            progress=progress,
            watchdog=watchdog,
            source=(sources or {}).get(name),
            solver=solver,
            sequential=sequential,
            ledger=ledger,
            owner=owner,
        )
        for result in judged:
            echo(result.line())
            claim = getattr(checks.get(result.name), "description", "")
            if claim:
                echo(f"{'':13}claim: {claim}")
            results.append(result)
            counts[result.verdict] += 1
    echo(summary_line(counts))
    if sequential is not None:
        budget = (
            "no budget"
            if sequential.budget is None
            else f"budget {sequential.budget}, {ledger.left} left"
        )
        echo(
            f"until decided: the later stages took {ledger.granted} lanes ({budget}); "
            f"{ledger.computed} computed now, the rest found on disk"
        )
    return results, counts


def sequential_header(family: int, sequential: Sequential) -> str:
    """The first line of ``verify --until-decided``: the stages and each stage's levels."""
    stages = sequential.stages
    first, later = stage_share(1, stages), (stage_share(2, stages) if stages > 1 else None)
    text = (
        f"family: {family} judged check{'s' * (family > 1)}; until decided, at most {stages} "
        f"stage{'s' * (stages > 1)} of R, 2R, 4R, … replicates; stage 1: PASS when the "
        f"{1 - ALPHA * first:.2%} interval lies in the region, FAIL when the one at {ALPHA:g}·{first:g}/{family} "
        f"(per point judged) lies outside it"
    )
    if later is not None:
        text += (
            f"; later stages at {1 - ALPHA * later:.2%} and {ALPHA:g}·{later:.3g}/{family} (alpha spent over "
            f"the stages)"
        )
    return text


def family_size(checks) -> int:
    """The number of tests in a verify's family: its checks less the report-only ones."""
    return max(1, sum(not getattr(c, "report_only", False) for c in checks))


def judged_on(
    experiment,
    checks,
    *,
    out: Path,
    seed: int,
    reps: int | None,
    family: int,
    progress: bool = True,
    watchdog: float | None = None,
    source: str | None = None,
    owner: str | None = None,
) -> list[CheckResult]:
    """Run ``experiment`` into ``out`` (what is missing) and judge ``checks`` on exactly the
    requested replicates. ``owner``: the manifest's owner if verify creates the folder."""
    want = experiment.reps if reps is None else reps
    table = _computed(
        experiment,
        out=out,
        seed=seed,
        reps=want,
        progress=progress,
        watchdog=watchdog,
        source=source,
        owner=owner,
    )
    extra = int((table["rep"] >= want).sum())
    table = table[table["rep"] < want]
    results = []
    for check in checks:
        result = judge(check, table, family)
        if extra:
            result = _noted(
                result, f"  [R = {want}; {extra} rows of further replicates on disk left out]"
            )
        results.append(result)
    return results


def judged_all(
    experiment,
    checks,
    *,
    runs: Path,
    seed: int,
    reps: int | None,
    family: int,
    progress: bool = True,
    watchdog: float | None = None,
    source: str | None = None,
    solver=None,
    sequential: Sequential | None = None,
    ledger=None,
    owner: str | None = None,
) -> list[CheckResult]:
    """``checks`` of ``experiment``: those on its grid (:func:`judged_on`, or with ``sequential``
    :func:`decided_on` spending ``ledger``'s budget, into RUNS/<experiment>[-seedS]), then
    those that declare a solve (:func:`judged_by_solves`). ``owner``: the manifest's owner of
    the folders verify creates (:func:`cache_owner`)."""
    grid = [c for c in checks if getattr(c, "solve", None) is None]
    solved = [c for c in checks if getattr(c, "solve", None) is not None]
    common = dict(
        out=run_directory(runs, experiment.name, seed),
        seed=seed,
        reps=reps,
        family=family,
        progress=progress,
        watchdog=watchdog,
        source=source,
        owner=owner,
    )
    results = (
        []
        if not grid
        else (
            judged_on(experiment, grid, **common)
            if sequential is None
            else decided_on(experiment, grid, sequential=sequential, ledger=ledger, **common)
        )
    )
    return results + (
        judged_by_solves(
            experiment,
            solved,
            runs=runs,
            seed=seed,
            family=family,
            progress=progress,
            solver=solver,
            owner=owner,
        )
        if solved
        else []
    )


def judged_by_solves(
    experiment,
    checks,
    *,
    runs: Path,
    seed: int,
    family: int,
    progress: bool = True,
    solver=None,
    owner: str | None = None,
) -> list[CheckResult]:
    """Checks judged on a solve's roots (:class:`~dpsim.engine.judgement.checks.ThresholdScalingCheck`):
    one solve per distinct ``check.solve``, into RUNS/<experiment>-solve-<axis>[-seedS] (a
    second declaration on the same axis gets a digest suffix), each check judged on its roots
    (``check.evaluate_roots``) and, when it has a ``figure``, drawn there as
    ``threshold-<check>.png``. Without a ``solver`` each is an ERROR line saying so. A folder
    is used as :func:`judged_on`'s (:func:`_prepared`); one verify creates is marked ``owner``
    once its solve returns."""
    results, solved = [], {}
    for check, stem in zip(checks, _solve_stems(experiment, checks)):
        if solver is None:
            results.append(
                CheckResult(
                    check.name,
                    "ERROR",
                    "-",
                    "-",
                    "cannot be evaluated: it needs a solve and "
                    "no solver was given (dpsim verify passes dpsim solve's)",
                )
            )
            continue
        solve = check.solve
        out = run_directory(runs, stem, seed)
        try:
            if stem not in solved:
                new = (
                    _prepared(out, fingerprint(experiment), experiment.name)
                    if hasattr(experiment, "axes")
                    else False
                )
                solved[stem] = solver(experiment, solve, out=out, seed=seed, progress=progress)
                if new and owner:
                    _mark_owner(out, owner)
            roots = solved[stem]
            result = check.evaluate_roots(roots, family)
        except UsageError as exc:
            results.append(
                CheckResult(check.name, "ERROR", "-", "-", f"cannot be evaluated: {exc}")
            )
            continue
        if hasattr(check, "figure") and not check.report_only:
            try:
                fig = check.figure(roots)
                path = out / f"threshold-{check.name}.png"
                store.write_file(path, lambda tmp, fig=fig: fig.savefig(tmp, dpi=130, format="png"))
                import matplotlib.pyplot as plt

                plt.close(fig)
                result = _noted(result, f"  [figure {path}]")
            except UsageError:
                pass
        results.append(result)
    return results


def _computed(
    experiment,
    *,
    out: Path,
    seed: int,
    reps: int,
    progress: bool,
    watchdog: float | None,
    source: str | None,
    owner: str | None = None,
):
    """``experiment`` run into ``out`` to ``reps`` replicates (what is missing; a folder of
    other code is refused, or recomputed from scratch when it is dpsim's cache:
    :func:`_prepared`), and its whole table. ``owner``: the manifest's owner if the run
    creates the folder."""
    _prepared(out, fingerprint(experiment), experiment.name)
    run_experiment(
        experiment,
        reps=reps,
        seed=seed,
        out=out,
        progress=progress,
        watchdog=watchdog,
        source=source,
        owner=owner,
    )
    return load_results(out)


def _noted(result: CheckResult, text: str) -> CheckResult:
    return CheckResult(**{**result.__dict__, "note": result.note + text})


def data_point_ids(experiment) -> dict[int, int]:
    """Each grid point's id (the ``point`` column of a results table) → the id of its data
    point (shape and data values, no analysis values): the key of ``run_experiment(reps_at=…)``,
    whose lanes (one replicate of a data point) serve every analysis point."""
    grid = expand_grid(experiment)
    return {
        experiment.point_id({**shape, **data, **a}): experiment.point_id({**shape, **data})
        for shape in grid.shapes
        for data in grid.data_points
        for a in grid.analysis_points
    }


def decided_on(
    experiment,
    checks,
    *,
    out: Path,
    seed: int,
    reps: int | None,
    family: int,
    sequential: Sequential,
    ledger: _Ledger,
    progress: bool = True,
    watchdog: float | None = None,
    source: str | None = None,
    owner: str | None = None,
) -> list[CheckResult]:
    """``checks`` of ``experiment`` judged until decided (module docstring).

    Stage 1 is plain verify's run (``reps`` = R, default the experiment's); at stage s a
    check is judged on the replicates < R·2^(s−1) at the stage's levels. The INCONCLUSIVE
    ones, in order, are granted the lanes of their next stage from ``ledger`` (a data point
    another check already raised costs nothing again), then one ``run_experiment(reps_at=…)``
    computes what is missing for all of them.

    Returns:
        One result per check, in order; its note says the stage, the replicates per data
        point and the lanes behind the verdict, or that the budget or the stages ran out.
    """
    base = experiment.reps if reps is None else reps
    stages = sequential.stages
    table = _computed(
        experiment,
        out=out,
        seed=seed,
        reps=base,
        progress=progress,
        watchdog=watchdog,
        source=source,
        owner=owner,
    )
    ids = data_point_ids(experiment)
    planned: dict[int, int] = {}  # data point id → replicates the stages so far asked for
    final: dict[str, CheckResult] = {}
    undecided = list(checks)
    for stage in range(1, stages + 1):
        want = sequential.reps(base, stage)
        upto = table[table["rep"] < want]
        growing = []
        for check in undecided:
            result = judge(check, upto, family, stage, stages)
            if result.verdict != "INCONCLUSIVE":
                points = _points(check, upto, ids) if result.verdict in ("PASS", "FAIL") else set()
                final[check.name] = (
                    _noted(result, _stage_note("decided at ", stage, stages, want, points))
                    if points
                    else result
                )
            elif stage == stages:
                final[check.name] = _noted(
                    result,
                    _stage_note(
                        f"undecided after all {stages} stages; ",
                        stage,
                        stages,
                        want,
                        _points(check, upto, ids),
                    ),
                )
            else:
                growing.append((check, result, _points(check, upto, ids)))
        undecided = []
        more = sequential.reps(base, stage + 1)
        for check, result, points in growing:
            cost = sum(max(0, more - planned.get(d, base)) for d in points)
            if not ledger.grant(cost):
                spent = f"budget spent: stage {stage + 1} needs {cost} more lanes, {ledger.left} left; judged at "
                final[check.name] = _noted(result, _stage_note(spent, stage, stages, want, points))
                continue
            planned.update({d: max(planned.get(d, base), more) for d in points})
            undecided.append(check)
        if not undecided:
            break
        summary = run_experiment(
            experiment,
            reps_at=planned,
            seed=seed,
            out=out,
            progress=progress,
            watchdog=watchdog,
            source=source,
        )
        ledger.computed += summary.lanes_run
        table = load_results(out)
    return [final[check.name] for check in checks]


def _points(check, table, ids: Mapping[int, int]) -> set[int]:
    """The data point ids of the rows ``check`` reads in ``table`` (:meth:`Check.used_rows`);
    none when it cannot even select them (its ERROR line says why)."""
    try:
        rows = check.used_rows(table)
    except UsageError:
        return set()
    return {ids[p] for p in rows["point"].unique().tolist() if p in ids}


def _stage_note(what: str, stage: int, stages: int, reps: int, points: set[int]) -> str:
    """``  [decided at stage 2/4: 400 replicates × 3 data points = 1200 lanes]`` (``what``:
    the words before "stage")."""
    return (
        f"  [{what}stage {stage}/{stages}: {reps} replicates × {len(points)} data "
        f"point{'s' * (len(points) != 1)} = {reps * len(points)} lanes]"
    )


def judge(check, table, family: int, stage: int = 1, stages: int = 1) -> CheckResult:
    """``check`` judged on ``table`` in a family of ``family`` tests (at look ``stage`` of
    ``stages`` of a sequential verify). A check that cannot be evaluated on it is an ERROR
    (never a FAIL: it claims nothing about the science) whose line gives the reason: a
    UsageError (e.g. the table lacks the values it compares, its prediction failed) or any
    other exception its code raises (named with its type; ``dpsim --traceback`` re-raises it
    as it was). A plain verify (one look) calls ``evaluate(table, family)``, so a study's own
    check written before sequential verify still works; only ``--until-decided`` passes the
    look."""
    try:
        if stages == 1:
            return check.evaluate(table, family)
        return check.evaluate(table, family, stage=stage, stages=stages)
    except UsageError as exc:
        return CheckResult(check.name, "ERROR", "-", "-", f"cannot be evaluated: {exc}")
    except Exception as exc:
        if traceback_wanted():
            raise
        message = " ".join(str(exc).split())[:300]
        return CheckResult(
            check.name,
            "ERROR",
            "-",
            "-",
            f"cannot be evaluated: {type(exc).__name__}: {message} "
            f"(dpsim --traceback … shows the whole trace)",
        )


@dataclass(frozen=True)
class MutantOutcome:
    """One mutant's outcome: the checks that FAIL under it (and did not on the real code);
    ``judged``: the checks that gave a verdict under it, ``errors`` those that could not be
    evaluated (ERROR: they neither kill nor spare it)."""

    mutant: str
    description: str
    killed_by: tuple[CheckResult, ...]
    judged: int
    seconds: float
    errors: int = 0

    @property
    def killed(self) -> bool:
        return bool(self.killed_by)

    def line(self) -> str:
        errors = f"; {self.errors} could not be evaluated (ERROR)" if self.errors else ""
        if not self.killed:
            return f"SURVIVED  {self.mutant:<40} {self.description}  (no FAIL among {self.judged} checks{errors})"
        names = ", ".join(r.name for r in self.killed_by)
        return (
            f"KILLED    {self.mutant:<40} {self.description}  by {len(self.killed_by)}/{self.judged}: "
            f"{names}" + (f"  ({errors[2:]})" if errors else "")
        )


def verify_mutants(
    checks: Mapping[str, object],
    experiments: Mapping[str, object],
    mutants: Sequence,
    base: Sequence[CheckResult],
    *,
    runs: Path = DEFAULT_RUNS,
    seed: int = 0,
    reps: int | None = None,
    family: int,
    progress: bool = True,
    watchdog: float | None = None,
    sources: Mapping[str, str] | None = None,
    echo=None,
    solver=None,
) -> list[MutantOutcome]:
    """Judge the checks again under each mutant (module docstring).

    Args:
        checks: the checks judged in the base run (name → check); a mutant is judged by those
            on the experiments it changes.
        mutants: :class:`~dpsim.engine.judgement.mutants.Mutant` objects.
        base: the base run's results: a check that FAILed there cannot kill a mutant.
        family: the base run's family size (the same Bonferroni level).
    Returns:
        One :class:`MutantOutcome` per mutant, in order; each is printed as it finishes, with
        the killing checks' lines indented below it.
    """
    echo = echo or (lambda line: print(line, flush=True))
    failed_before = {r.name for r in base if r.verdict == "FAIL"}
    owner = cache_owner(runs)
    for mutant in mutants:  # a folder verify may not use is refused before any mutant runs
        for name in mutant.experiments:
            if name in experiments:
                check_folders(
                    {name: mutant.mutate(experiments[name])},
                    [c for c in checks.values() if c.experiment == name],
                    Path(runs) / "mutants" / mutant.name,
                    seed,
                )
    outcomes = []
    for mutant in mutants:
        start = time.monotonic()
        killers, judged, errors = [], 0, 0
        for name in mutant.experiments:
            its_checks = [c for c in checks.values() if c.experiment == name]
            if not its_checks or name not in experiments:
                continue
            mutated = mutant.mutate(experiments[name])
            source = f"{(sources or {}).get(name, name)} + mutant {mutant.name}"
            for result in judged_all(
                mutated,
                its_checks,
                runs=Path(runs) / "mutants" / mutant.name,
                seed=seed,
                reps=reps,
                family=family,
                progress=progress,
                watchdog=watchdog,
                source=source,
                solver=solver,
                owner=owner,
            ):
                judged += result.verdict not in ("INFO", "ERROR")
                errors += result.verdict == "ERROR"
                if (
                    result.verdict == "FAIL" and result.name not in failed_before
                ):  # an ERROR never kills
                    killers.append(result)
        outcome = MutantOutcome(
            mutant.name,
            mutant.description,
            tuple(killers),
            judged,
            time.monotonic() - start,
            errors,
        )
        echo(outcome.line())
        for result in killers:
            echo("          " + result.line())
        outcomes.append(outcome)
    killed = sum(o.killed for o in outcomes)
    echo(
        f"mutants: {killed} killed, {len(outcomes) - killed} survived of {len(outcomes)} "
        f"({sum(o.seconds for o in outcomes):.0f} s)"
    )
    return outcomes


def summary_line(counts: Counter) -> str:
    """``N passed, N failed, N inconclusive`` (and refused, errors and report-only when present)."""
    parts = [
        f"{counts['PASS']} passed",
        f"{counts['FAIL']} failed",
        f"{counts['INCONCLUSIVE']} inconclusive",
    ]
    if counts["REFUSED"]:
        parts.append(f"{counts['REFUSED']} refused (unconverged fits)")
    if counts["ERROR"]:
        parts.append(f"{counts['ERROR']} could not be evaluated (ERROR)")
    if counts["INFO"]:
        parts.append(f"{counts['INFO']} reported only")
    return ", ".join(parts)
