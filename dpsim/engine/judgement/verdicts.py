"""Verdicts (DESIGN "Theory and verification"): what a check measured, how it is
judged, and the base class of every check.

A check (:class:`Check`) turns the rows of a results table into an :class:`Estimate`: a
statistic, its 95% Monte-Carlo interval (or one interval per point it judges) and the
predicted region. :func:`judge` gives the verdict:

* **PASS**: every 95% interval lies inside the region;
* **FAIL**: some interval widened to the Bonferroni level 0.05/(m·K) lies wholly outside it
  (m the judged checks of the run, its *family*; K the points the check judges): a FAIL
  claims a discrepancy, so it needs family-wise evidence;
* **INCONCLUSIVE**: neither; the line says roughly how many replicates would decide it;
* **REFUSED**: more than the check's allowance of fits did not converge (1% by default);
* **INFO**: a report-only check, never judged;
* **ERROR**: the check could not be evaluated (it would pool an axis, names a metric or axis
  its experiment does not have, its statistic is NaN, e.g. every value of its metric is NaN,
  or its prediction raised): no claim about the science, never a FAIL, never the killer of
  a mutant; ``dpsim verify`` exits 4. What can be found without data (an unknown metric,
  method or axis, an axis the check would pool) is refused when the paper or study loads
  (:meth:`Check.validate`), before anything is computed.

**Sequential verdicts** (``dpsim verify --until-decided``): a check that is INCONCLUSIVE is
looked at again with more replicates, at most S times (*stages*, the replicates doubling from
stage to stage: R, 2R, 4R, …, a schedule fixed before any data is seen). Both verdicts are
error claims (a PASS claims the quantity lies in the region, a FAIL that it lies outside), and
looking after every stage at the same level would inflate both errors. So stage s spends the
share w_s of each error rate (:func:`stage_share`; Σ_s w_s = 1): its PASS intervals are at
level 1 − 0.05·w_s and its FAIL intervals at 1 − 0.05·w_s/(m·K). Because the replicate
counts of the looks are fixed in advance (a look on the first 2^(s−1)·R replicates of every
point the check reads), a wrong verdict at some stage is a wrong verdict of one of S
fixed-size intervals, and by the union bound (Bonferroni over the looks, whatever the
correlation of nested looks and whatever rule stops early):

* P(wrong PASS) ≤ Σ_s 0.05·w_s / 2 = 0.025 (one side of a two-sided 95% level, as plain
  verify's PASS: the truth outside the region lies beyond one of its ends);
* P(some wrong FAIL in the family) ≤ 0.05, as plain verify's.

The shares: all of it at stage 1 with one stage (``--stages 1`` is plain verify, exactly);
otherwise half at stage 1 and the rest evenly over the later stages. Stage 1 is then
*stricter* than plain verify (PASS at 97.5% instead of 95%, FAIL at half the Bonferroni
level): the price of the later looks. It is spent there because most checks are decided at
stage 1, where replicates are cheapest. A stage that a check cannot afford in full is not
taken (a partial stage would make the replicate count depend on the data): the check stays
INCONCLUSIVE, "budget spent". The union bound is conservative (nested looks are positively
correlated); tests/engine/test_until_decided.py measures the error rates.

Every result prints through one formatter, :meth:`CheckResult.line`. The statistics the
checks compute live in :mod:`dpsim.engine.judgement.statistics`, the checks themselves in
:mod:`dpsim.engine.judgement.checks`.
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass, field
from typing import Mapping, Sequence

import pandas as pd

from dpsim.errors import UsageError, did_you_mean
from dpsim.engine.definition.axes import axis_type
from dpsim.engine.judgement.deferred import resolved
from dpsim.engine.solving.search import z_quantile
from dpsim.engine.presentation.summary import NOT_AXES, Z95, require_unpooled, select

UNCONVERGED_LIMIT = 0.01
VERDICTS = ("PASS", "FAIL", "INCONCLUSIVE", "REFUSED", "INFO", "ERROR")


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome; :meth:`line` is the one line ``dpsim verify`` prints. ``value``
    [``low``, ``high``]: the estimate and its 95% interval; [``region_low``, ``region_high``]:
    the predicted region; ``reps``: the replicates behind it; ``points``: the points it judges
    (K of the Bonferroni level); NaN / None where the check was not evaluated."""

    name: str
    verdict: str
    predicted: str
    fitted: str
    evidence: str
    needed_reps: int | None = None
    note: str = ""
    detail: object = None
    value: float = math.nan
    low: float = math.nan
    high: float = math.nan
    region_low: float = math.nan
    region_high: float = math.nan
    reps: int | None = None
    points: int = 1

    @property
    def passed(self) -> bool:
        return self.verdict == "PASS"

    def line(self) -> str:
        extra = self.note
        if self.verdict == "INCONCLUSIVE" and (
            self.needed_reps or not extra
        ):  # a note may say why instead
            extra = (
                f"  needs about {self.needed_reps} replicates to decide"
                if self.needed_reps
                else "  the estimate sits on the boundary: no replicate count decides it"
            ) + extra
        return (
            f"{self.verdict:<12} {self.name:<48} predicted {self.predicted:<16} fitted {self.fitted}  "
            f"({self.evidence}){extra}"
        )


@dataclass(frozen=True)
class Estimate:
    """What a check measured: the estimate, its 95% interval, the predicted region
    [region_low, region_high], and the texts of the line; ``reps`` is the number of
    replicates behind it; ``verdict`` forces one (e.g. a failed side criterion)."""

    value: float
    low: float
    high: float
    region_low: float
    region_high: float
    predicted: str
    fitted: str
    evidence: str
    reps: int
    verdict: str | None = None
    detail: object = None
    points: tuple[tuple[float, float, float], ...] = ()


ALPHA = 0.05


def stage_share(stage: int, stages: int) -> float:
    """The share w_s of the error rates spent at look ``stage`` (1-based) of at most
    ``stages`` (module docstring): 1 with one stage; else ½ at stage 1 and ½/(S − 1) at each
    later one, so Σ_s w_s = 1.

    Raises:
        ValueError: ``stage`` outside 1 … ``stages``.
    """
    if not 1 <= stage <= stages:
        raise ValueError(f"stage {stage} is not in 1 … {stages}")
    if stages == 1:
        return 1.0
    return 0.5 if stage == 1 else 0.5 / (stages - 1)


def family_z(tests: int, share: float = 1.0) -> float:
    """The two-sided normal quantile of the level ALPHA·``share``/``tests`` (the Bonferroni
    level of ``tests`` tests, at a stage spending ``share`` of it; Z95 for 1 test, share 1)."""
    tests = max(int(tests), 1)
    if tests == 1 and share == 1.0:
        return Z95
    return z_quantile(1.0 - ALPHA * share / tests)


def widened(value: float, low: float, high: float, z: float) -> tuple[float, float]:
    """A 95% interval (``low``, ``high``) about ``value`` widened to the normal quantile ``z``.

    On the log scale when the interval is symmetric there (a ratio's exp(log r ± z·se)),
    else linearly, each side by its own half-width (a slope's ± z·se; an asymmetric interval
    such as a crossing point's keeps its shape). An interval of zero width (an exact count)
    stays a point; an infinite end stays infinite."""
    if not (math.isfinite(value) and z > Z95):
        return low, high
    factor = z / Z95
    if value > 0 and low > 0 and math.isfinite(high):
        down, up = math.log(value) - math.log(low), math.log(high) - math.log(value)
        if abs(down - up) <= 1e-9 * max(1.0, abs(down) + abs(up)):
            return value * math.exp(-factor * down), value * math.exp(factor * up)
    return value - factor * (value - low), value + factor * (high - value)


def judge(
    estimate: Estimate, family: int = 1, stage: int = 1, stages: int = 1
) -> tuple[str, int | None]:
    """PASS / FAIL / INCONCLUSIVE of an estimate against its region (module docstring), and
    for INCONCLUSIVE the replicates that would shrink the interval's half-width below the
    estimate's distance to the nearest boundary (None when that distance is 0). The one
    place where the levels of the intervals are chosen.

    Args:
        estimate: the statistic, its 95% interval and region; with ``points`` (value, low,
            high) it judges every point: PASS when every point's interval lies inside, FAIL
            when some point's family-wise interval lies wholly outside.
        family: the number of judged checks in the run; FAIL uses the Bonferroni level
            0.05/(family · number of points).
        stage, stages: the look of a sequential verify (``--until-decided``) and the most
            looks it takes; both levels spend the share :func:`stage_share` of their error
            rate at this look (1, 1: plain verify).
    """
    share = stage_share(stage, stages)
    lo, hi = estimate.region_low, estimate.region_high
    points = estimate.points or ((estimate.value, estimate.low, estimate.high),)
    z_pass = family_z(1, share)
    z = family_z(family * len(points), share)
    if all(
        lo <= w_lo and w_hi <= hi
        for w_lo, w_hi in (widened(v, p_lo, p_hi, z_pass) for v, p_lo, p_hi in points)
    ):
        return "PASS", None
    for value, p_lo, p_hi in points:
        w_lo, w_hi = widened(value, p_lo, p_hi, z)
        if w_hi < lo or w_lo > hi:
            return "FAIL", None
    inside = lo <= estimate.value <= hi
    margin = (
        min(estimate.value - lo, hi - estimate.value)
        if inside
        else (lo - estimate.value if estimate.value < lo else estimate.value - hi)
    )
    # the half-width at the level that decides: PASS's when inside, else the family-wise one
    half = (estimate.high - estimate.low) / 2 * (z_pass if inside else z) / Z95
    if not margin > 0 or not math.isfinite(half):
        return "INCONCLUSIVE", None
    return "INCONCLUSIVE", max(
        estimate.reps + 1, math.ceil(estimate.reps * (half / margin) ** 2 * 1.1)
    )


def _interval(lo: float, hi: float, digits: int = 3) -> str:
    return f"[{lo:+.{digits}f}, {hi:+.{digits}f}]"


def format_region(low: float, high: float, *, signed: bool = False) -> str:
    """A predicted region [``low``, ``high``] as a check's line prints it: "≥ low" or
    "≤ high" when the other bound is infinite (3 significant digits), else "[low, high]"
    (3 significant digits, or two signed decimals with ``signed``, as slopes print)."""
    if math.isinf(high):
        return f"≥ {low:.3g}"
    if math.isinf(low):
        return f"≤ {high:.3g}"
    return f"[{low:+.2f}, {high:+.2f}]" if signed else f"[{low:.3g}, {high:.3g}]"


@dataclass(frozen=True)
class Check:
    """The base of every check (module docstring).

    Attributes:
        name: begins with the paper's name (``cai-…``), so ``dpsim verify cai`` selects it.
        experiment: the experiment whose table it is evaluated on.
        where: axis → values, the region of the grid it uses (listing several values maps
            that axis explicitly).
        pool: axes it deliberately averages over (any other axis with several values in its
            rows is refused: nothing is pooled silently).
        description: one line; ``report_only``: print as INFO, never judge.
        pins: the components of its paper it pins (``"generator:…"``, ``"mechanism:…"``,
            ``"estimator:…"``, ``"metric:…"``, declared in the paper's ``COMPONENTS``): a level
            check of a mechanism's calibration pins that mechanism, a design check its
            generator, a metric's reference value that metric; a slope or trend usually pins
            none (``dpsim list PAPER --pins``).
        unconverged_limit: the largest share of unconverged fits it judges (default 1%;
            above it the check is REFUSED). A check of a method whose non-convergence is the
            paper's own (e.g. the authors' capped power iteration) states a larger allowance
            and why in its description.
    """

    name: str
    experiment: str
    _: KW_ONLY
    where: Mapping[str, Sequence] = field(default_factory=dict)
    pool: tuple[str, ...] = ()
    description: str = ""
    report_only: bool = False
    unconverged_limit: float = UNCONVERGED_LIMIT
    pins: tuple[str, ...] = ()

    @property
    def methods(self) -> tuple[str, ...]:
        return ()

    def rows(self, table: pd.DataFrame) -> pd.DataFrame:
        rows = select(table, self.where)
        if self.methods:
            rows = rows[rows["method"].isin(self.methods)]
        if rows.empty:
            raise UsageError(
                f"check {self.name!r}: no rows of {', '.join(self.methods) or 'any method'} "
                f"where {dict(self.where)}"
            )
        return rows

    def estimate(self, rows: pd.DataFrame) -> Estimate:  # pragma: no cover - abstract
        raise NotImplementedError

    def names_read(self) -> dict[str, tuple[str, ...]]:
        """What the check reads, known without data: ``{"columns": metrics, diagnostics or
        derived values, "axes": grid axes (or derived values) it selects or maps, "methods":
        …}``. The base: its ``where`` and ``pool`` axes and :attr:`methods`; a check reading
        more names says so (:mod:`dpsim.engine.judgement.checks`)."""
        return {"columns": (), "axes": (*self.where, *self.pool), "methods": tuple(self.methods)}

    def mapped(self) -> tuple[str, ...] | None:
        """The columns its statistic maps (every other grid axis with several values in its rows
        would be pooled: :func:`~dpsim.engine.presentation.summary.require_unpooled`), or None when only
        the data tells."""
        return None

    def validate(self, experiment, grid: pd.DataFrame | None = None) -> None:
        """Refuse, before anything is computed, what makes this check impossible to evaluate on
        ``experiment``'s default grid (the one verify runs): a method, metric or axis the
        experiment does not have (with a did-you-mean), or an axis its rows would pool
        (:meth:`mapped` on the grid's values, no data needed). ``grid``: the experiment's
        :func:`grid_table`, when the caller validates several checks of it.

        Raises:
            UsageError: one line naming the check and the bad name.
        """
        names = self.names_read()
        what = f"check {self.name!r}"
        for method in names.get("methods", ()):
            if method not in experiment.methods:
                raise UsageError(
                    f"{what}: experiment {experiment.name!r} has no method {method!r}"
                    f"{did_you_mean(method, experiment.methods)}; its methods are "
                    f"{', '.join(experiment.methods)}"
                )
        derived = [n for d in experiment.derived for n in d.names]
        axes = [*experiment.axes, *derived, *NOT_AXES]
        for axis in names.get("axes", ()):
            if axis not in axes:
                raise UsageError(
                    f"{what}: experiment {experiment.name!r} has no axis {axis!r}"
                    f"{did_you_mean(axis, axes)}; its axes are {', '.join(experiment.axes)}"
                )
        methods = [experiment.methods[m] for m in names.get("methods", ())] or list(
            experiment.methods.values()
        )
        columns = list(
            dict.fromkeys([*(c for m in methods for c in m.columns), *derived, *experiment.axes])
        )
        for column in names.get("columns", ()):
            if column not in columns:
                raise UsageError(
                    f"{what}: experiment {experiment.name!r} reports no metric {column!r}"
                    f"{did_you_mean(column, columns)}; its metrics are "
                    f"{', '.join(c for m in methods for c in m.columns)}"
                )
        mapped = self.mapped()
        varying = {a for a, values in experiment.axes.items() if len(values) > 1}
        if mapped is None or varying <= set(mapped):  # nothing it could pool
            return
        grid = grid if grid is not None else grid_table(experiment)
        if not grid.empty:
            rows = select(grid, {a: v for a, v in self.where.items() if a in grid})
            if self.methods:
                rows = rows[rows["method"].isin(self.methods)]
            if not rows.empty:
                require_unpooled(rows, mapped, what)

    def used_rows(self, table: pd.DataFrame) -> pd.DataFrame:
        """The rows of ``table`` its statistic reads (its selection of the grid): the grid
        points where ``verify --until-decided`` adds replicates. Default :meth:`rows`; a
        check reading fewer narrows it."""
        return self.rows(table)

    def evaluate(
        self, table: pd.DataFrame, family: int = 1, stage: int = 1, stages: int = 1
    ) -> CheckResult:
        """The check's result on ``table``; ``family``: the number of judged checks in the run
        (the Bonferroni factor of a FAIL, :func:`judge`); ``stage`` of ``stages``: the look of
        a sequential verify (:func:`judge`, :func:`stage_share`). Deferred predictions
        (:mod:`dpsim.engine.judgement.deferred`) are computed first; one that fails to compute
        is a UsageError naming the check (verify reports it on the check's line and goes
        on)."""
        self = self.with_predictions()
        rows = self.rows(table)
        if "converged" in rows:
            failed = int((rows["converged"] == False).fillna(False).sum())  # noqa: E712
            judged = int(rows["converged"].notna().sum())
            if judged and failed > self.unconverged_limit * judged:
                return CheckResult(
                    self.name,
                    "REFUSED",
                    "-",
                    "-",
                    f"{failed} of {judged} fits did not converge, above the "
                    f"{self.unconverged_limit:.0%} limit",
                    note="",
                )
        return self.result(self.estimate(rows), family, stage, stages)

    def with_predictions(self) -> "Check":
        """This check with its deferred predictions computed (:func:`resolved`); one that fails
        is a UsageError naming the check."""
        try:
            return resolved(self)
        except UsageError:
            raise
        except Exception as exc:
            raise UsageError(
                f"check {self.name!r}: its prediction could not be computed: "
                f"{type(exc).__name__}: {exc}"
            ) from None

    def result(
        self, est: "Estimate", family: int = 1, stage: int = 1, stages: int = 1, needed: bool = True
    ) -> CheckResult:
        """The verdict on an estimate (:func:`judge`; INFO for a report-only check);
        ``needed=False`` drops the replicate count an INCONCLUSIVE line would suggest."""
        if not est.verdict and math.isnan(est.value) and not self.report_only:
            return CheckResult(
                self.name,
                "ERROR",
                est.predicted,
                est.fitted,
                f"cannot be evaluated: its statistic is NaN; {est.evidence}",
                detail=est.detail,
            )
        verdict, reps = (est.verdict, None) if est.verdict else judge(est, family, stage, stages)
        if self.report_only:
            verdict, reps = "INFO", None
        return CheckResult(
            self.name,
            verdict,
            est.predicted,
            est.fitted,
            est.evidence,
            reps if needed else None,
            detail=est.detail,
            value=est.value,
            low=est.low,
            high=est.high,
            region_low=est.region_low,
            region_high=est.region_high,
            reps=est.reps,
            points=max(1, len(est.points)),
        )


GRID_ROWS_LIMIT = 200_000


def grid_table(experiment) -> pd.DataFrame:
    """One row per point of ``experiment``'s default grid (its axes' values, shape points
    resolved as the grid resolves them) × method, the columns a results table holds for them:
    what :meth:`Check.validate` tells pooling from. Empty when the grid is too large to list
    cheaply or a value does not resolve (verify then finds out from the data)."""
    import itertools

    size = len(experiment.methods)
    for values in experiment.axes.values():
        size *= max(len(values), 1)
    if size > GRID_ROWS_LIMIT:
        return pd.DataFrame()
    try:
        axes = {
            a: [axis_type(a, experiment.axis_types)(a, v) for v in values]
            for a, values in experiment.axes.items()
        }
        shapes = [
            experiment.resolve_shape(dict(zip(experiment.shape_axes, combo)))
            for combo in itertools.product(*(axes[a] for a in experiment.shape_axes))
        ]
        rest = [a for a in experiment.axes if a not in experiment.shape_axes]
        rows = [
            {**shape, **dict(zip(rest, combo)), "method": method}
            for shape in shapes
            for combo in itertools.product(*(axes[a] for a in rest))
            for method in experiment.methods
        ]
    except Exception:  # a hook that needs more than the grid's values: the data will tell
        return pd.DataFrame()
    table = pd.DataFrame(rows)
    table.attrs["method_columns"], table.attrs["derived_columns"] = (), ()
    return table


def _reps(rows: pd.DataFrame) -> int:
    return int(rows["rep"].nunique()) if "rep" in rows else len(rows)
