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


@dataclass(frozen=True)
class CheckResult:
    name: str
    predicted: str
    fit: SlopeFit
    passed: bool
    report_only: bool = False

    def line(self) -> str:
        f = self.fit
        verdict = "INFO" if self.report_only else ("PASS" if self.passed else "FAIL")
        return (f"{verdict}  {self.name:<44} predicted {self.predicted:<16} fitted {f.slope:+.3f} "
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
        verdict = "PASS" if self.passed else "FAIL"
        return (f"{verdict}  {self.name:<44} predicted {self.predicted:<16} fitted {self.mean:+.4f} "
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
        verdict = "INFO" if self.report_only else ("PASS" if self.passed else "FAIL")
        return (f"{verdict}  {self.name:<44} predicted {self.predicted:<16} fitted {self.ratio:.3f} "
                f"[{self.ci_low:.3f}, {self.ci_high:.3f}]  (ratio, {self.n_obs} obs)")


@dataclass(frozen=True)
class RatioCheck:
    """The ratio of a summary statistic of ``metric`` between two slices of the table,
    ``axis = numerator`` over ``axis = denominator`` (the rest of the grid restricted by
    ``where``), passes when its 95% CI lies within [``lo``, ``hi``].

    The statistic is the mean over rows, or its square root with ``root=True`` (e.g. an RMS
    from a per-replicate mean square). The CI is the delta method on the log ratio
    (independent slices, or aligned on ``paired_on`` columns with their covariance).
    """

    name: str
    experiment: str
    metric: str
    method: str
    axis: str
    numerator: object
    denominator: object
    lo: float
    hi: float
    where: Mapping[str, Sequence] = field(default_factory=dict)
    root: bool = False
    paired_on: tuple[str, ...] | None = None
    description: str = ""
    report_only: bool = False

    def evaluate(self, table: pd.DataFrame) -> RatioResult:
        rows = select(table, self.where, self.method)
        log_r, se, n_obs = _log_ratio(rows, self.metric, self.axis, self.numerator, self.denominator,
                                      self.root, self.paired_on)
        low, high = math.exp(log_r - Z95 * se), math.exp(log_r + Z95 * se)
        passed = self.lo <= low and high <= self.hi
        return RatioResult(self.name, f"[{self.lo:.3g}, {self.hi:.3g}]", math.exp(log_r), low, high,
                           n_obs, passed, self.report_only)


@dataclass(frozen=True)
class RatioSlopeCheck:
    """The slope of log(ratio) on log ``x``, where the ratio is that of :class:`RatioCheck`
    computed at each value of ``x``; passes when the slope lies within ``tolerance`` of
    ``predicted``. E.g. a privacy-cost ratio that grows like L has slope 1 in log L.

    The slope is the OLS fit over the x values; its CI propagates the delta-method variances
    of the log ratios (independent across x values, which hold different data).
    """

    name: str
    experiment: str
    metric: str
    method: str
    axis: str
    numerator: object
    denominator: object
    x: str
    predicted: float
    tolerance: float
    where: Mapping[str, Sequence] = field(default_factory=dict)
    root: bool = False
    paired_on: tuple[str, ...] | None = None
    description: str = ""
    report_only: bool = False

    def evaluate(self, table: pd.DataFrame) -> CheckResult:
        from dpsim.experiment.errors import UsageError

        rows = select(table, self.where, self.method)
        xs = sorted(float(v) for v in rows[self.x].dropna().unique())
        if len(xs) < 2 or any(not (v > 0 and math.isfinite(v)) for v in xs):
            raise UsageError(f"need at least two positive finite values of {self.x!r} to fit a slope")
        logs, ses, n_obs = [], [], 0
        for v in xs:
            log_r, se, n = _log_ratio(select(rows, {self.x: [v]}), self.metric, self.axis,
                                      self.numerator, self.denominator, self.root, self.paired_on)
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
