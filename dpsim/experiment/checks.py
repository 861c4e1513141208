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
