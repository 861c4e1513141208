"""Declarative checks of theorems and of a paper's claims (DESIGN "Theory and verification").

Every check is a :class:`Check`: it names an experiment, the region of the grid
(``where``), the axes it deliberately pools over (``pool``), and a prediction, i.e. a
*region* for one statistic (a slope, the sign of a trend, a paired difference, a ratio, a
phase-transition spread). Evaluated on the tidy results table it yields a 95% confidence
interval for that statistic and a verdict that respects its uncertainty:

* **PASS**: the whole interval lies inside the predicted region;
* **FAIL**: the whole interval lies outside it;
* **INCONCLUSIVE**: the interval straddles a boundary; the line says roughly how many
  replicates would decide it (the interval's half-width shrinks like 1/√R);
* **REFUSED**: more than 1% of the fits the statistic uses did not converge: there is
  nothing trustworthy to judge;
* **INFO**: a report-only check (e.g. the paper's own constant, shown beside the check),
  never judged.

Every result prints through one formatter, :meth:`CheckResult.line`.
"""
from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from dpsim.errors import UsageError
from dpsim.experiment.summary import (Z95, SlopeFit, describe_values, loglog_slope, require_unpooled, select,
                                      slope_fit)

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


def judge(estimate: Estimate) -> tuple[str, int | None]:
    """PASS / FAIL / INCONCLUSIVE of an interval against a region, and for INCONCLUSIVE the
    replicates that would shrink the interval's half-width below the estimate's distance to
    the nearest boundary (None when that distance is 0)."""
    lo, hi = estimate.region_low, estimate.region_high
    if lo <= estimate.low and estimate.high <= hi:
        return "PASS", None
    if estimate.high < lo or estimate.low > hi:
        return "FAIL", None
    inside = lo <= estimate.value <= hi
    margin = min(estimate.value - lo, hi - estimate.value) if inside else \
        (lo - estimate.value if estimate.value < lo else estimate.value - hi)
    half = (estimate.high - estimate.low) / 2
    if not margin > 0 or not math.isfinite(half):
        return "INCONCLUSIVE", None
    return "INCONCLUSIVE", max(estimate.reps + 1, math.ceil(estimate.reps * (half / margin) ** 2 * 1.1))


def _interval(lo: float, hi: float, digits: int = 3) -> str:
    return f"[{lo:+.{digits}f}, {hi:+.{digits}f}]"


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
    """

    name: str
    experiment: str
    _: KW_ONLY
    where: Mapping[str, Sequence] = field(default_factory=dict)
    pool: tuple[str, ...] = ()
    description: str = ""
    report_only: bool = False

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

    def evaluate(self, table: pd.DataFrame) -> CheckResult:
        rows = self.rows(table)
        if "converged" in rows:
            failed = int((rows["converged"] == False).fillna(False).sum())  # noqa: E712
            judged = int(rows["converged"].notna().sum())
            if judged and failed > UNCONVERGED_LIMIT * judged:
                return CheckResult(self.name, "REFUSED", "-", "-",
                                   f"{failed} of {judged} fits did not converge, above the "
                                   f"{UNCONVERGED_LIMIT:.0%} limit", note="")
        est = self.estimate(rows)
        verdict, needed = (est.verdict, None) if est.verdict else judge(est)
        if self.report_only:
            verdict, needed = "INFO", None
        return CheckResult(self.name, verdict, est.predicted, est.fitted, est.evidence, needed,
                           detail=est.detail, value=est.value, low=est.low, high=est.high)


def _reps(rows: pd.DataFrame) -> int:
    return int(rows["rep"].nunique()) if "rep" in rows else len(rows)


# ---------------------------------------------------------------------------------------
# Slopes
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _SlopeBase(Check):
    metric: str
    method: str
    x: str
    _: KW_ONLY
    log_y: bool = True

    @property
    def methods(self):
        return (self.method,)

    def fit(self, rows):
        return loglog_slope(rows, self.metric, self.x, log_y=self.log_y, method=self.method,
                            where=self.where, pool=self.pool)

    def _estimate(self, rows, lo, hi, predicted) -> Estimate:
        f = self.fit(rows)
        return Estimate(f.slope, f.ci_low, f.ci_high, lo, hi, predicted,
                        f"{f.slope:+.3f} {_interval(f.ci_low, f.ci_high)}",
                        f"{f.n_points} grid values, {f.n_obs} obs, {f.rows}", _reps(rows), detail=f)


@dataclass(frozen=True)
class SlopeCheck(_SlopeBase):
    """The log–log slope of ``metric`` in ``x`` lies within ``tolerance`` of ``predicted``.
    The tolerance covers the lower-order terms of the rate over the grid region; the
    interval is the Monte-Carlo error (HC1)."""

    predicted: float
    tolerance: float

    def estimate(self, rows):
        return self._estimate(rows, self.predicted - self.tolerance, self.predicted + self.tolerance,
                              f"{self.predicted:+.2f} ± {self.tolerance:.2f}")


@dataclass(frozen=True)
class SlopeRangeCheck(_SlopeBase):
    """The slope lies in [``low``, ``high``] (e.g. between the slopes of a rate's two terms,
    on a grid that straddles their crossover)."""

    low: float
    high: float

    def estimate(self, rows):
        return self._estimate(rows, self.low, self.high, f"[{self.low:+.2f}, {self.high:+.2f}]")


@dataclass(frozen=True)
class TrendCheck(_SlopeBase):
    """The log–log slope has the predicted sign (−1: decreasing, +1: increasing)."""

    sign: int

    def estimate(self, rows):
        lo, hi = (-math.inf, 0.0) if self.sign < 0 else (0.0, math.inf)
        return self._estimate(rows, lo, hi, "< 0" if self.sign < 0 else "> 0")


# ---------------------------------------------------------------------------------------
# Paired comparisons of two methods
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ComparisonCheck(Check):
    """Two methods on the same replicates: the mean paired difference
    ``metric(better) − metric(worse)`` is < 0."""

    metric: str
    better: str
    worse: str

    @property
    def methods(self):
        return (self.better, self.worse)

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, "method", self.metric], f"check {self.name!r}")
        wide = rows.pivot_table(index=["point", "rep"], columns="method", values=self.metric)
        diff = (wide[self.better] - wide[self.worse]).dropna().to_numpy(float)
        if len(diff) < 2:
            raise UsageError(f"check {self.name!r}: fewer than two paired observations")
        mean = float(diff.mean())
        half = Z95 * float(diff.std(ddof=1)) / math.sqrt(len(diff))
        return Estimate(mean, mean - half, mean + half, -math.inf, 0.0, f"{self.better} < {self.worse}",
                        f"{mean:+.4f} {_interval(mean - half, mean + half, 4)}", f"{len(diff)} paired obs",
                        _reps(rows))


# ---------------------------------------------------------------------------------------
# Ratios of summary statistics between two slices of one table
# ---------------------------------------------------------------------------------------
def _log_ratio(rows: pd.DataFrame, metric: str, axis: str, numerator, denominator, root: bool,
               paired_on: Sequence[str] | None) -> tuple[float, float, int]:
    """log(stat(numerator slice)/stat(denominator slice)) and its delta-method standard error.

    stat = mean(metric) (or √mean with ``root``). Independent slices: var(log mean) =
    var/(N·mean²) each. ``paired_on`` (e.g. ("rep",)) aligns the two slices on those columns
    and includes their covariance.
    """
    scale = 0.5 if root else 1.0
    num = select(rows, {axis: [numerator]})[metric].dropna()
    den = select(rows, {axis: [denominator]})[metric].dropna()
    if paired_on:
        a = select(rows, {axis: [numerator]}).set_index(list(paired_on))[metric]
        b = select(rows, {axis: [denominator]}).set_index(list(paired_on))[metric]
        if not (a.index.is_unique and b.index.is_unique):
            raise UsageError(f"rows are not unique on {tuple(paired_on)} within a slice; narrow `where`")
        joined = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
        num, den = joined["a"], joined["b"]
    if len(num) < 2 or len(den) < 2:
        raise UsageError(f"need at least two rows of {metric!r} in each slice "
                         f"{axis}={numerator!r} and {axis}={denominator!r}")
    m_num, m_den = float(num.mean()), float(den.mean())
    if not (m_num > 0 and m_den > 0):
        raise UsageError(f"metric {metric!r} has a non-positive mean in a slice; cannot take a ratio")
    var = float(num.var(ddof=1)) / (len(num) * m_num ** 2) + float(den.var(ddof=1)) / (len(den) * m_den ** 2)
    if paired_on:
        cov = float(((num - m_num) * (den - m_den)).sum()) / (len(num) - 1)
        var -= 2.0 * cov / (len(num) * m_num * m_den)
    return scale * math.log(m_num / m_den), scale * math.sqrt(max(var, 0.0)), len(num) + len(den)


@dataclass(frozen=True)
class _RatioSlices(Check):
    """What a ratio check compares: a summary statistic of ``metric`` on the slice
    ``axis = numerator`` over the slice ``axis = denominator`` (the rest of the grid
    restricted by ``where``). The statistic is the mean over rows, or its square root with
    ``root=True`` (e.g. an RMS from a per-replicate mean square); its CI is the delta method
    on the log ratio (independent slices, or aligned on ``paired_on`` columns with their
    covariance)."""

    metric: str
    method: str
    axis: str
    numerator: object
    denominator: object
    _: KW_ONLY
    root: bool = False
    paired_on: tuple[str, ...] | None = None

    @property
    def methods(self):
        return (self.method,)

    def log_ratio(self, rows: pd.DataFrame) -> tuple[float, float, int]:
        return _log_ratio(rows, self.metric, self.axis, self.numerator, self.denominator,
                          self.root, self.paired_on)


@dataclass(frozen=True)
class RatioCheck(_RatioSlices):
    """The ratio (:class:`_RatioSlices`) lies in [``lo``, ``hi``]."""

    lo: float
    hi: float

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, self.axis, self.metric], f"check {self.name!r}")
        log_r, se, n_obs = self.log_ratio(rows)
        low, high = math.exp(log_r - Z95 * se), math.exp(log_r + Z95 * se)
        return Estimate(math.exp(log_r), low, high, self.lo, self.hi, f"[{self.lo:.3g}, {self.hi:.3g}]",
                        f"{math.exp(log_r):.3f} [{low:.3f}, {high:.3f}]", f"ratio, {n_obs} obs", _reps(rows))


@dataclass(frozen=True)
class RatioSlopeCheck(_RatioSlices):
    """The slope of log(ratio) on log ``x``, the ratio computed at each value of ``x``, lies
    within ``tolerance`` of ``predicted`` (e.g. a privacy-cost ratio growing like L has
    slope 1 in log L). The slope is fitted by :func:`~dpsim.experiment.summary.slope_fit`
    with the delta-method standard errors of the log ratios (independent across x values,
    which hold different data)."""

    x: str
    predicted: float
    tolerance: float

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, self.axis, self.x, self.metric], f"check {self.name!r}")
        xs = sorted(float(v) for v in rows[self.x].dropna().unique())
        if len(xs) < 2 or any(not (v > 0 and math.isfinite(v)) for v in xs):
            raise UsageError(f"need at least two positive finite values of {self.x!r} to fit a slope")
        logs, ses, n_obs = [], [], 0
        for v in xs:
            log_r, se, n = self.log_ratio(select(rows, {self.x: [v]}))
            logs.append(log_r)
            ses.append(se)
            n_obs += n
        slope, se = slope_fit(np.log(xs), logs, y_se=ses)
        lo, hi = slope - Z95 * se, slope + Z95 * se
        fit = SlopeFit(slope, se, lo, hi, len(xs), n_obs, f"{self.x} ∈ {{{describe_values(xs)}}}")
        return Estimate(slope, lo, hi, self.predicted - self.tolerance, self.predicted + self.tolerance,
                        f"{self.predicted:+.2f} ± {self.tolerance:.2f}", f"{slope:+.3f} {_interval(lo, hi)}",
                        f"{len(xs)} grid values, {n_obs} obs", _reps(rows), detail=fit)


# ---------------------------------------------------------------------------------------
# Phase transitions: success probability against a gap measured in units of a rate.
# ---------------------------------------------------------------------------------------
def _isotonic(y, w):
    """Weighted least-squares non-decreasing fit (pool adjacent violators)."""
    blocks = []  # [mean, weight, length]
    for value, weight in zip(y, w):
        blocks.append([float(value), float(weight), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, n2 = blocks.pop()
            m1, w1, n1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, n1 + n2])
    return np.concatenate([np.full(n, m) for m, _, n in blocks])


def _wilson(successes, n):
    """95% Wilson score interval of a binomial proportion (elementwise)."""
    phat = successes / n
    z2 = Z95 ** 2
    centre = (phat + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * np.sqrt(phat * (1 - phat) / n + z2 / (4 * n ** 2)) / (1 + z2 / n)
    return centre - half, centre + half


def _crossing(x, y, level=0.5):
    """Where a non-decreasing curve (x increasing) first reaches ``level``, interpolated
    linearly in log x. Returns (lo, hi): lo = hi = the crossing; (0, x_min) when the curve
    starts at or above the level; (x_max, inf) when it never reaches it."""
    above = y >= level
    if above.all():
        return 0.0, float(x[0])
    if not above.any():
        return float(x[-1]), math.inf
    i = int(np.argmax(above))
    t = (level - y[i - 1]) / (y[i] - y[i - 1])
    value = float(np.exp(np.log(x[i - 1]) + t * (np.log(x[i]) - np.log(x[i - 1]))))
    return value, value


@dataclass(frozen=True)
class ThresholdCollapseCheck(Check):
    """A phase transition that collapses onto one curve when the gap is measured in units
    of the right rate (e.g. cai spec §7 item 5: P(exact top-k recovery) against Δ / r_E).

    ``metric`` is a replicate-level success indicator (0/1), ``x`` the column holding the
    gap in units of the rate (x > 0), and ``configs`` the columns that identify one
    configuration (e.g. n, p, ε); every configuration is one success curve against x.
    For each, the mean curve is made non-decreasing (isotonic regression) and its midpoint
    x½, where it reaches 1/2, is interpolated in log x; the 95% MC interval of x½ comes from
    the crossings of the (isotonic) Wilson bands. A configuration whose curve never reaches
    1/2 on its grid only bounds x½ from below by its largest x (and one that starts above 1/2
    from above by its smallest x); these bounds enter the spread.

    The statistic is the spread of the midpoints, max x½ / min x½, with its interval; the
    predicted region is spread ≤ ``max_ratio`` (the collapse, up to the constants of the
    rate), with at least two configurations crossing 1/2. Side criteria: the mean success
    is ≤ ``p_low`` at every x ≤ ``x_low`` and ≥ ``p_high`` at every x ≥ ``x_high`` (failing
    below and succeeding above constants; both sides must be observed), else FAIL.
    ``expect_collapse=False`` makes it a negative control: the region is spread >
    ``max_ratio``, i.e. x measured in a wrong rate does not collapse (no side criteria:
    their constants belong to the right rate).
    """

    metric: str
    method: str
    x: str
    configs: tuple[str, ...]
    max_ratio: float
    x_low: float
    p_low: float
    x_high: float
    p_high: float
    _: KW_ONLY
    expect_collapse: bool = True

    @property
    def methods(self):
        return (self.method,)

    def midpoints(self, table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, int]:
        """(per-configuration midpoints, per-(configuration, x) curve, observations used)."""
        rows = select(table, self.where, self.method)
        for column in (self.metric, self.x, *self.configs):
            if column not in rows:
                raise UsageError(f"check {self.name!r}: no column {column!r} in the results table")
        rows = rows[rows[self.metric].notna() & rows[self.x].notna()]
        if rows.empty:
            raise UsageError(f"check {self.name!r}: no rows of method {self.method!r} in {dict(self.where)}")
        if (rows[self.x] <= 0).any():
            raise UsageError(f"check {self.name!r}: {self.x!r} must be > 0 (it is put on a log scale)")
        rows = rows.assign(_x=np.round(rows[self.x].to_numpy(float), 12))
        by = list(self.configs)
        curve = (rows.groupby(by + ["_x"], dropna=False)[self.metric]
                 .agg(successes="sum", n="count").reset_index().rename(columns={"_x": self.x}))
        curve["mean"] = curve["successes"] / curve["n"]
        out = []
        for key, group in curve.groupby(by, dropna=False, sort=True):
            group = group.sort_values(self.x)
            xs = group[self.x].to_numpy(float)
            w = group["n"].to_numpy(float)
            low_band, high_band = _wilson(group["successes"].to_numpy(float), w)
            lo, hi = _crossing(xs, _isotonic(group["mean"].to_numpy(float), w))
            lo_ci, _ = _crossing(xs, _isotonic(high_band, w))
            _, hi_ci = _crossing(xs, _isotonic(low_band, w))
            status = "crossed" if lo == hi else ("below" if math.isinf(hi) else "above")
            key = key if isinstance(key, tuple) else (key,)
            out.append({**dict(zip(by, key)), "x_half": lo if status == "crossed" else math.nan,
                        "x_half_low": lo_ci, "x_half_high": hi_ci, "lo": lo, "hi": hi,
                        "status": status, "x_min": xs[0], "x_max": xs[-1], "n_obs": int(w.sum())})
        return pd.DataFrame(out), curve, len(rows)

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, *self.configs, self.metric, self.x],
                         f"check {self.name!r}")
        mids, curve, n_obs = self.midpoints(rows)
        below = curve[curve[self.x] <= self.x_low]["mean"]
        above = curve[curve[self.x] >= self.x_high]["mean"]
        max_below = float(below.max()) if len(below) else math.nan
        min_above = float(above.min()) if len(above) else math.nan
        crossed = (mids["status"] == "crossed").to_numpy()
        n_crossed = int(crossed.sum())
        spread = float(mids["lo"].max() / mids["hi"].min())
        # MC interval of the spread: each crossing x½ at either end of its 95% interval; a
        # configuration that does not cross keeps its censoring bound (lo or hi).
        lo_min, lo_max = (np.where(crossed, mids[c], mids["lo"]) for c in ("x_half_low", "x_half_high"))
        hi_min, hi_max = (np.where(crossed, mids[c], mids["hi"]) for c in ("x_half_low", "x_half_high"))
        spread_low = max(1.0, float(lo_min.max() / hi_max.min()))
        spread_high = float(lo_max.max() / hi_min.min())
        span = (f"{mids.loc[crossed, 'x_half'].min():.3g}–{mids.loc[crossed, 'x_half'].max():.3g}"
                if n_crossed else "none")
        forced = None
        if n_crossed < 2:
            forced = "FAIL"
        if self.expect_collapse:
            region = (1.0, self.max_ratio)
            predicted = (f"x½ spread ≤ {self.max_ratio:.2f}, P ≤ {self.p_low:.2f} at x ≤ {self.x_low:g}, "
                         f"P ≥ {self.p_high:.2f} at x ≥ {self.x_high:g}")
            sides = f"; P ≤ {max_below:.2f} below, P ≥ {min_above:.2f} above"
            if not (len(below) and max_below <= self.p_low and len(above) and min_above >= self.p_high):
                forced = "FAIL"
        else:
            region = (self.max_ratio, math.inf)
            predicted = f"x½ spread > {self.max_ratio:.2f} (no collapse)"
            sides = ""
        fitted = f"x½ {span}, spread {spread:.2f} [{spread_low:.2f}, {spread_high:.2f}]{sides}"
        evidence = f"{n_crossed}/{len(mids)} configurations cross ½, {n_obs} obs"
        detail = {"midpoints": mids, "max_below": max_below, "min_above": min_above}
        return Estimate(spread, spread_low, spread_high, *region, predicted, fitted, evidence,
                        _reps(rows), verdict=forced, detail=detail)
