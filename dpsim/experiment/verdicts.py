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
* **INFO**: a report-only check, never judged.

Every result prints through one formatter, :meth:`CheckResult.line`. The statistics the
checks compute live in :mod:`dpsim.experiment.statistics`, the checks themselves in
:mod:`dpsim.experiment.checks`.
"""
from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass, field
from typing import Mapping, Sequence

import pandas as pd

from dpsim.errors import UsageError
from dpsim.experiment.deferred import resolved
from dpsim.experiment.summary import Z95, select

UNCONVERGED_LIMIT = 0.01
VERDICTS = ("PASS", "FAIL", "INCONCLUSIVE", "REFUSED", "INFO")


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome; :meth:`line` is the one line ``dpsim verify`` prints."""

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

    @property
    def passed(self) -> bool:
        return self.verdict == "PASS"

    def line(self) -> str:
        extra = self.note
        if self.verdict == "INCONCLUSIVE":
            extra = (f"  needs about {self.needed_reps} replicates to decide" if self.needed_reps
                     else "  the estimate sits on the boundary: no replicate count decides it") + extra
        return (f"{self.verdict:<12} {self.name:<48} predicted {self.predicted:<16} fitted {self.fitted}  "
                f"({self.evidence}){extra}")


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


def family_z(tests: int) -> float:
    """The two-sided normal quantile of the Bonferroni level 0.05/``tests`` (Z95 for 1)."""
    from statistics import NormalDist
    tests = max(int(tests), 1)
    return Z95 if tests == 1 else NormalDist().inv_cdf(1.0 - 0.025 / tests)


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


def judge(estimate: Estimate, family: int = 1) -> tuple[str, int | None]:
    """PASS / FAIL / INCONCLUSIVE of an estimate against its region (module docstring), and
    for INCONCLUSIVE the replicates that would shrink the interval's half-width below the
    estimate's distance to the nearest boundary (None when that distance is 0).

    Args:
        estimate: the statistic, its 95% interval and region; with ``points`` (value, low,
            high) it judges every point: PASS when every point's interval lies inside, FAIL
            when some point's family-wise interval lies wholly outside.
        family: the number of judged checks in the run; FAIL uses the Bonferroni level
            0.05/(family · number of points).
    """
    lo, hi = estimate.region_low, estimate.region_high
    points = estimate.points or ((estimate.value, estimate.low, estimate.high),)
    z = family_z(family * len(points))
    if all(lo <= p_lo and p_hi <= hi for _, p_lo, p_hi in points):
        return "PASS", None
    for value, p_lo, p_hi in points:
        w_lo, w_hi = widened(value, p_lo, p_hi, z)
        if w_hi < lo or w_lo > hi:
            return "FAIL", None
    inside = lo <= estimate.value <= hi
    margin = min(estimate.value - lo, hi - estimate.value) if inside else \
        (lo - estimate.value if estimate.value < lo else estimate.value - hi)
    half = (estimate.high - estimate.low) / 2
    if not inside:    # outside at 95% but not family-wise: the family-wise half-width decides
        half *= z / Z95
    if not margin > 0 or not math.isfinite(half):
        return "INCONCLUSIVE", None
    return "INCONCLUSIVE", max(estimate.reps + 1, math.ceil(estimate.reps * (half / margin) ** 2 * 1.1))


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

    @property
    def methods(self) -> tuple[str, ...]:
        return ()

    def rows(self, table: pd.DataFrame) -> pd.DataFrame:
        rows = select(table, self.where)
        if self.methods:
            rows = rows[rows["method"].isin(self.methods)]
        if rows.empty:
            raise UsageError(f"check {self.name!r}: no rows of {', '.join(self.methods) or 'any method'} "
                             f"where {dict(self.where)}")
        return rows

    def estimate(self, rows: pd.DataFrame) -> Estimate:  # pragma: no cover - abstract
        raise NotImplementedError

    def evaluate(self, table: pd.DataFrame, family: int = 1) -> CheckResult:
        """The check's result on ``table``; ``family``: the number of judged checks in the run
        (the Bonferroni factor of a FAIL, :func:`judge`). Deferred predictions
        (:mod:`dpsim.experiment.deferred`) are computed first; one that fails to compute
        is a UsageError naming the check (verify reports it on the check's line and goes
        on)."""
        try:
            self = resolved(self)
        except UsageError:
            raise
        except Exception as exc:
            raise UsageError(f"check {self.name!r}: its prediction could not be computed: "
                             f"{type(exc).__name__}: {exc}") from None
        rows = self.rows(table)
        if "converged" in rows:
            failed = int((rows["converged"] == False).fillna(False).sum())  # noqa: E712
            judged = int(rows["converged"].notna().sum())
            if judged and failed > self.unconverged_limit * judged:
                return CheckResult(self.name, "REFUSED", "-", "-",
                                   f"{failed} of {judged} fits did not converge, above the "
                                   f"{self.unconverged_limit:.0%} limit", note="")
        est = self.estimate(rows)
        verdict, needed = (est.verdict, None) if est.verdict else judge(est, family)
        if self.report_only:
            verdict, needed = "INFO", None
        return CheckResult(self.name, verdict, est.predicted, est.fitted, est.evidence, needed,
                           detail=est.detail, value=est.value, low=est.low, high=est.high)


def _reps(rows: pd.DataFrame) -> int:
    return int(rows["rep"].nunique()) if "rep" in rows else len(rows)
