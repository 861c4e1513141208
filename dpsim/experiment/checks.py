"""Declarative rate and trend checks (DESIGN "Theory and verification").

A check names an experiment, a metric and method, an x axis, the region of the grid, and
what a theorem predicts: a slope with a tolerance (:class:`SlopeCheck`) or the sign of the
trend (:class:`TrendCheck`), or which of two methods is better on the same replicates
(:class:`ComparisonCheck`). Each is evaluated on the tidy results table and can fail.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import pandas as pd

from dpsim.experiment.summary import Z95, SlopeFit, loglog_slope, select


def verdict(passed: bool, report_only: bool = False) -> str:
    """The first word of a check's line: INFO for a report-only check, else PASS or FAIL."""
    return "INFO" if report_only else ("PASS" if passed else "FAIL")


@dataclass(frozen=True)
class CheckResult:
    name: str
    predicted: str
    fit: SlopeFit
    passed: bool
    report_only: bool = False

    def line(self) -> str:
        f = self.fit
        return (f"{verdict(self.passed, self.report_only)}  {self.name:<44} "
                f"predicted {self.predicted:<16} fitted {f.slope:+.3f} "
                f"[{f.ci_low:+.3f}, {f.ci_high:+.3f}]  ({f.n_points} grid values, {f.n_obs} obs)")


@dataclass(frozen=True)
class SlopeCheck:
    """Passes when the fitted log–log slope lies within ``tolerance`` of ``predicted``.

    The tolerance covers the lower-order terms of the rate (log n factors, the other term
    of a two-term rate) over the grid region; the reported CI is the Monte-Carlo error.
    """

    name: str
    experiment: str
    metric: str
    method: str
    x: str
    predicted: float
    tolerance: float
    where: Mapping[str, Sequence] = field(default_factory=dict)
    log_y: bool = True
    description: str = ""
    report_only: bool = False  # printed as INFO (e.g. the paper's c0), never fails verify

    def evaluate(self, table: pd.DataFrame) -> CheckResult:
        fit = loglog_slope(select(table, self.where, self.method), self.metric, self.x, log_y=self.log_y)
        passed = abs(fit.slope - self.predicted) <= self.tolerance
        return CheckResult(self.name, f"{self.predicted:+.2f} ± {self.tolerance:.2f}", fit, passed,
                           self.report_only)


@dataclass(frozen=True)
class TrendCheck:
    """Passes when the whole 95% CI of the log–log slope has the predicted sign."""

    name: str
    experiment: str
    metric: str
    method: str
    x: str
    sign: int  # −1: decreasing, +1: increasing
    where: Mapping[str, Sequence] = field(default_factory=dict)
    log_y: bool = True
    description: str = ""

    def evaluate(self, table: pd.DataFrame) -> CheckResult:
        fit = loglog_slope(select(table, self.where, self.method), self.metric, self.x, log_y=self.log_y)
        passed = fit.ci_high < 0 if self.sign < 0 else fit.ci_low > 0
        return CheckResult(self.name, "< 0" if self.sign < 0 else "> 0", fit, passed)


@dataclass(frozen=True)
class ComparisonResult:
    name: str
    predicted: str
    mean: float
    ci_low: float
    ci_high: float
    n_obs: int
    passed: bool

    def line(self) -> str:
        return (f"{verdict(self.passed)}  {self.name:<44} "
                f"predicted {self.predicted:<16} fitted {self.mean:+.4f} "
                f"[{self.ci_low:+.4f}, {self.ci_high:+.4f}]  ({self.n_obs} paired obs)")


@dataclass(frozen=True)
class ComparisonCheck:
    """Two methods on the same replicates: passes when the 95% CI of the paired mean
    difference ``metric(better) − metric(worse)`` lies entirely below 0."""

    name: str
    experiment: str
    metric: str
    better: str
    worse: str
    where: Mapping[str, Sequence] = field(default_factory=dict)
    description: str = ""

    def evaluate(self, table: pd.DataFrame) -> ComparisonResult:
        rows = select(table, self.where)
        wide = rows.pivot_table(index=["point", "rep"], columns="method", values=self.metric)
        diff = (wide[self.better] - wide[self.worse]).dropna().to_numpy(float)
        mean = float(diff.mean())
        half = Z95 * float(diff.std(ddof=1)) / math.sqrt(len(diff))
        return ComparisonResult(self.name, f"{self.better} < {self.worse}", mean, mean - half,
                                mean + half, len(diff), mean + half < 0)


# ---------------------------------------------------------------------------------------
# Slope ranges and ratios of summary statistics between two slices of one table (used by
# the cai individual-DP scaling checks, experiments/cai_scaling.py; generic).
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SlopeRangeCheck:
    """Passes when the log–log slope lies in [``low``, ``high``].

    For a rate with two terms of different slopes (e.g. −1/2 and −1 in m for individual DP)
    the slope over a grid that straddles the crossover lies between them. With
    ``ci_inside=True`` (default) the whole 95% CI must lie in the range, so the data
    establish the claim; with ``False`` only the point estimate must.
    """

    name: str
    experiment: str
    metric: str
    method: str
    x: str
    low: float
    high: float
    where: Mapping[str, Sequence] = field(default_factory=dict)
    log_y: bool = True
    ci_inside: bool = True
    description: str = ""
    report_only: bool = False

    def evaluate(self, table: pd.DataFrame) -> CheckResult:
        fit = loglog_slope(select(table, self.where, self.method), self.metric, self.x, log_y=self.log_y)
        if self.ci_inside:
            passed = self.low <= fit.ci_low and fit.ci_high <= self.high
        else:
            passed = self.low <= fit.slope <= self.high
        return CheckResult(self.name, f"[{self.low:+.2f}, {self.high:+.2f}]", fit, passed, self.report_only)


def _log_ratio(rows: pd.DataFrame, metric: str, axis: str, numerator, denominator, root: bool,
               paired_on: Sequence[str] | None) -> tuple[float, float, int]:
    """log(stat(numerator slice)/stat(denominator slice)) and its delta-method standard error.

    stat = mean(metric) (or √mean with ``root``). Independent slices: var(log mean) =
    var/(N·mean²) each. ``paired_on`` (e.g. ("rep",)) aligns the two slices on those columns
    and includes their covariance.
    """
    from dpsim.experiment.errors import UsageError

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
class RatioResult:
    name: str
    predicted: str
    ratio: float
    ci_low: float
    ci_high: float
    n_obs: int
    passed: bool
    report_only: bool = False

    def line(self) -> str:
        return (f"{verdict(self.passed, self.report_only)}  {self.name:<44} "
                f"predicted {self.predicted:<16} fitted {self.ratio:.3f} "
                f"[{self.ci_low:.3f}, {self.ci_high:.3f}]  (ratio, {self.n_obs} obs)")


@dataclass(frozen=True)
class _RatioSlices:
    """What a ratio check compares: a summary statistic of ``metric`` on the slice
    ``axis = numerator`` over the slice ``axis = denominator`` (the rest of the grid
    restricted by ``where``). The statistic is the mean over rows, or its square root with
    ``root=True`` (e.g. an RMS from a per-replicate mean square); its CI is the delta method
    on the log ratio (independent slices, or aligned on ``paired_on`` columns with their
    covariance). The optional fields are keyword-only, so subclasses add positional ones."""

    name: str
    experiment: str
    metric: str
    method: str
    axis: str
    numerator: object
    denominator: object
    where: Mapping[str, Sequence] = field(default_factory=dict, kw_only=True)
    root: bool = field(default=False, kw_only=True)
    paired_on: tuple[str, ...] | None = field(default=None, kw_only=True)
    description: str = field(default="", kw_only=True)
    report_only: bool = field(default=False, kw_only=True)

    def log_ratio(self, rows: pd.DataFrame) -> tuple[float, float, int]:
        return _log_ratio(rows, self.metric, self.axis, self.numerator, self.denominator,
                          self.root, self.paired_on)


@dataclass(frozen=True)
class RatioCheck(_RatioSlices):
    """Passes when the 95% CI of the ratio (see :class:`_RatioSlices`) lies in [``lo``, ``hi``]."""

    lo: float
    hi: float

    def evaluate(self, table: pd.DataFrame) -> RatioResult:
        log_r, se, n_obs = self.log_ratio(select(table, self.where, self.method))
        low, high = math.exp(log_r - Z95 * se), math.exp(log_r + Z95 * se)
        passed = self.lo <= low and high <= self.hi
        return RatioResult(self.name, f"[{self.lo:.3g}, {self.hi:.3g}]", math.exp(log_r), low, high,
                           n_obs, passed, self.report_only)


@dataclass(frozen=True)
class RatioSlopeCheck(_RatioSlices):
    """The slope of log(ratio) on log ``x``, the ratio (:class:`_RatioSlices`) computed at
    each value of ``x``; passes when the slope lies within ``tolerance`` of ``predicted``.
    E.g. a privacy-cost ratio that grows like L has slope 1 in log L.

    The slope is the OLS fit over the x values; its CI propagates the delta-method variances
    of the log ratios (independent across x values, which hold different data).
    """

    x: str
    predicted: float
    tolerance: float

    def evaluate(self, table: pd.DataFrame) -> CheckResult:
        from dpsim.experiment.errors import UsageError

        rows = select(table, self.where, self.method)
        xs = sorted(float(v) for v in rows[self.x].dropna().unique())
        if len(xs) < 2 or any(not (v > 0 and math.isfinite(v)) for v in xs):
            raise UsageError(f"need at least two positive finite values of {self.x!r} to fit a slope")
        logs, ses, n_obs = [], [], 0
        for v in xs:
            log_r, se, n = self.log_ratio(select(rows, {self.x: [v]}))
            logs.append(log_r)
            ses.append(se)
            n_obs += n
        lx = [math.log(v) for v in xs]
        centre = sum(lx) / len(lx)
        sxx = sum((u - centre) ** 2 for u in lx)
        coef = [(u - centre) / sxx for u in lx]
        slope = sum(c * r for c, r in zip(coef, logs))
        se = math.sqrt(sum((c * s) ** 2 for c, s in zip(coef, ses)))
        fit = SlopeFit(slope, se, slope - Z95 * se, slope + Z95 * se, len(xs), n_obs)
        passed = abs(slope - self.predicted) <= self.tolerance
        return CheckResult(self.name, f"{self.predicted:+.2f} ± {self.tolerance:.2f}", fit, passed,
                           self.report_only)


# ---------------------------------------------------------------------------------------
# Phase transitions: success probability against a gap measured in units of a rate.
# ---------------------------------------------------------------------------------------
import numpy as np  # noqa: E402

from dpsim.experiment.errors import UsageError  # noqa: E402


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
class ThresholdResult:
    """Outcome of a :class:`ThresholdCollapseCheck`; ``midpoints`` has one row per
    configuration (its columns, ``x_half`` with its 95% MC interval, ``status``)."""

    name: str
    predicted: str
    midpoints: pd.DataFrame
    spread: float
    spread_low: float
    spread_high: float
    max_below: float
    min_above: float
    n_obs: int
    passed: bool
    expect_collapse: bool = True
    report_only: bool = False

    def line(self) -> str:
        crossed = self.midpoints[self.midpoints["status"] == "crossed"]["x_half"]
        span = f"{crossed.min():.3g}–{crossed.max():.3g}" if len(crossed) else "none"
        sides = "" if not self.expect_collapse else \
            f"; P ≤ {self.max_below:.2f} below, P ≥ {self.min_above:.2f} above"
        return (f"{verdict(self.passed, self.report_only)}  {self.name:<44} "
                f"predicted {self.predicted}  fitted x½ {span}, "
                f"spread {self.spread:.2f} [{self.spread_low:.2f}, {self.spread_high:.2f}]{sides}  "
                f"({len(crossed)}/{len(self.midpoints)} configurations cross ½, {self.n_obs} obs)")


@dataclass(frozen=True)
class ThresholdCollapseCheck:
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

    Passes when (a) the mean success is ≤ ``p_low`` at every x ≤ ``x_low`` and ≥ ``p_high``
    at every x ≥ ``x_high`` (failing below and succeeding above constants; both sides must
    be observed somewhere), and (b) the spread of the midpoints, max x½ / min x½, is
    ≤ ``max_ratio`` (the collapse, up to the constants of the rate), with at least two
    configurations crossing 1/2. ``expect_collapse=False`` makes it a negative control: it
    passes when the spread exceeds ``max_ratio``, i.e. when x measured in a wrong rate does
    not collapse (criterion (a) is not applied: its constants belong to the right rate).
    """

    name: str
    experiment: str
    metric: str
    method: str
    x: str
    configs: tuple[str, ...]
    max_ratio: float
    x_low: float
    p_low: float
    x_high: float
    p_high: float
    where: Mapping[str, Sequence] = field(default_factory=dict)
    expect_collapse: bool = True
    description: str = ""
    report_only: bool = False  # printed as INFO, never fails verify

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

    def evaluate(self, table: pd.DataFrame) -> ThresholdResult:
        mids, curve, n_obs = self.midpoints(table)
        below = curve[curve[self.x] <= self.x_low]["mean"]
        above = curve[curve[self.x] >= self.x_high]["mean"]
        max_below = float(below.max()) if len(below) else math.nan
        min_above = float(above.min()) if len(above) else math.nan
        n_crossed = int((mids["status"] == "crossed").sum())
        spread = float(mids["lo"].max() / mids["hi"].min())
        # MC interval of the spread: each crossing x½ at either end of its 95% interval; a
        # configuration that does not cross keeps its censoring bound (lo or hi).
        crossed = (mids["status"] == "crossed").to_numpy()
        lo_min, lo_max = (np.where(crossed, mids[c], mids["lo"]) for c in ("x_half_low", "x_half_high"))
        hi_min, hi_max = (np.where(crossed, mids[c], mids["hi"]) for c in ("x_half_low", "x_half_high"))
        spread_low = max(1.0, float(lo_min.max() / hi_max.min()))
        spread_high = float(lo_max.max() / hi_min.min())
        if self.expect_collapse:
            passed = (n_crossed >= 2 and spread <= self.max_ratio
                      and len(below) > 0 and max_below <= self.p_low
                      and len(above) > 0 and min_above >= self.p_high)
            predicted = (f"x½ spread ≤ {self.max_ratio:.2f}, "
                         f"P ≤ {self.p_low:.2f} at x ≤ {self.x_low:g}, "
                         f"P ≥ {self.p_high:.2f} at x ≥ {self.x_high:g}")
        else:
            passed = n_crossed >= 2 and spread > self.max_ratio
            predicted = f"x½ spread > {self.max_ratio:.2f} (no collapse)"
        return ThresholdResult(self.name, predicted, mids, spread, spread_low, spread_high,
                               max_below, min_above, n_obs, passed, self.expect_collapse,
                               self.report_only)
