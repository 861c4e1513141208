"""Checks the engine's classes do not offer, as subclasses of
:class:`dpsim.experiment.checks.Check` (same verdict rules: a 95% interval against a predicted
region; PASS inside, FAIL outside, INCONCLUSIVE straddling, REFUSED above 1% unconverged fits).

* :class:`EveryPointCheck`: a statistic at **every** value of an axis (e.g. the paired
  difference of two methods at each n): PASS when every point's interval lies in the
  region, FAIL when some point's interval lies wholly outside it, else INCONCLUSIVE (the
  line shows the decisive point). The statistics (:class:`PairedDifference`,
  :class:`RatioOfMeans`) are paired on the replicates.
* :class:`MethodRatioSlopeCheck`: the slope of log(RMS of method A / RMS of method B), the two
  methods on the same replicates, against log g(x) for a known function g (e.g. the RR
  factor (e^ε + 1)/(e^ε − 1), chowdhury P3, or the K-RR factor, P11).
* :class:`LinearSlopeCheck`: the slope of mean(scale·metric) in x by weighted least squares
  (not on logs: chowdhury P4 says n·MSE is linear in d), as a ratio to its predicted value.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from dpsim.errors import UsageError
from dpsim.experiment.checks import Check, Estimate, _interval, _reps
from dpsim.experiment.summary import Z95, describe_values, require_unpooled, select, slope_fit


def _paired(rows: pd.DataFrame, columns: dict) -> pd.DataFrame:
    """One row per (point, rep), one column per ``label: (method, metric)``; only replicates
    present for every label are kept (pairing)."""
    parts = []
    for label, (method, metric) in columns.items():
        part = rows[rows["method"] == method]
        if metric not in part:
            raise UsageError(f"no column {metric!r} in the results table")
        parts.append(part.set_index(["rep"])[metric].rename(label))
    for part in parts:
        if not part.index.is_unique:
            raise UsageError("rows are not unique per replicate within a point; narrow `where`")
    return pd.concat(parts, axis=1, join="inner").dropna()


@dataclass(frozen=True)
class PairedDifference:
    """mean(metric of ``better`` − metric of ``worse``) over paired replicates, with its
    normal 95% interval; predicted region (−∞, 0): ``better`` has the smaller mean."""

    metric: str
    better: str
    worse: str

    @property
    def methods(self):
        return (self.better, self.worse)

    region = (-math.inf, 0.0)

    @property
    def predicted(self) -> str:
        return f"{self.better} < {self.worse}"

    def compute(self, rows):
        wide = _paired(rows, {"a": (self.better, self.metric), "b": (self.worse, self.metric)})
        diff = (wide["a"] - wide["b"]).to_numpy(float)
        if len(diff) < 2:
            raise UsageError("fewer than two paired replicates")
        mean = float(diff.mean())
        half = Z95 * float(diff.std(ddof=1)) / math.sqrt(len(diff))
        return mean, mean - half, mean + half, len(diff)


def paired_difference(metric, better, worse) -> PairedDifference:
    return PairedDifference(metric, better, worse)


@dataclass(frozen=True)
class RatioOfMeans:
    """mean(``numerator``)/mean(``denominator``), two columns of one method on the same
    replicates (e.g. the simulated over the predicted MSE), with a delta-method interval on
    the log scale including their covariance; predicted region [``low``, ``high``]."""

    method: str
    numerator: str
    denominator: str
    low: float
    high: float

    @property
    def methods(self):
        return (self.method,)

    @property
    def region(self):
        return (self.low, self.high)

    @property
    def predicted(self) -> str:
        return f"[{self.low:.3g}, {self.high:.3g}]"

    def compute(self, rows):
        wide = _paired(rows, {"a": (self.method, self.numerator), "b": (self.method, self.denominator)})
        a, b = wide["a"].to_numpy(float), wide["b"].to_numpy(float)
        if len(a) < 2 or not (a.mean() > 0 and b.mean() > 0):
            raise UsageError(f"need two replicates and positive means of {self.numerator!r}, {self.denominator!r}")
        ma, mb = a.mean(), b.mean()
        cov = np.cov(a, b, ddof=1)
        var = (cov[0, 0] / ma ** 2 + cov[1, 1] / mb ** 2 - 2 * cov[0, 1] / (ma * mb)) / len(a)
        log_r, se = math.log(ma / mb), math.sqrt(max(var, 0.0))
        return math.exp(log_r), math.exp(log_r - Z95 * se), math.exp(log_r + Z95 * se), len(a)


@dataclass(frozen=True)
class EveryPointCheck(Check):
    """``statistic`` at every value of ``x`` (module docstring).

    Attributes: statistic: a :class:`PairedDifference` or :class:`RatioOfMeans`; x: the axis
    whose every value is judged (the other axes fixed by ``where``)."""

    statistic: object = None
    x: str = ""

    @property
    def methods(self):
        return self.statistic.methods

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, self.x, "method"], f"check {self.name!r}")
        lo, hi = self.statistic.region
        points = []
        for value in sorted(rows[self.x].dropna().unique()):
            v, low, high, n = self.statistic.compute(select(rows, {self.x: [value]}))
            points.append((value, v, low, high, n))
        if not points:
            raise UsageError(f"check {self.name!r}: no values of {self.x!r}")
        outside = [p for p in points if p[3] < lo or p[2] > hi]
        inside = [p for p in points if lo <= p[2] and p[3] <= hi]
        if outside:
            decisive = outside[0]
        elif len(inside) == len(points):
            decisive = min(points, key=lambda p: min(p[2] - lo, hi - p[3]))
        else:
            decisive = max(points, key=lambda p: max(lo - p[2], p[3] - hi))
        value, v, low, high, _ = decisive
        fmt = "{:+.4f}" if math.isinf(lo) or math.isinf(hi) else "{:.3f}"
        fitted = (f"{fmt.format(v)} [{fmt.format(low)}, {fmt.format(high)}] at {self.x}={value:g}; "
                  f"{len(inside)}/{len(points)} inside")
        evidence = f"{len(points)} values of {self.x} ({describe_values([p[0] for p in points])}), " \
                   f"{sum(p[4] for p in points)} paired obs"
        return Estimate(v, low, high, lo, hi, self.statistic.predicted + f" at every {self.x}", fitted, evidence,
                        _reps(rows), detail=pd.DataFrame(points, columns=[self.x, "value", "low", "high", "n"]))


@dataclass(frozen=True)
class MethodRatioSlopeCheck(Check):
    """Slope of log(√mean(metric, ``numerator``)/√mean(metric, ``denominator``)) on log g(x)
    across the values of ``x``, within ``tolerance`` of ``predicted``. Per x the two methods
    are paired on the replicates (delta-method standard error with their covariance); the
    slope is :func:`~dpsim.experiment.summary.slope_fit` with those standard errors."""

    metric: str = "mse"
    numerator: str = ""
    denominator: str = ""
    x: str = ""
    g: Callable[[float], float] = None
    g_label: str = "g"
    predicted: float = 1.0
    tolerance: float = 0.1

    @property
    def methods(self):
        return (self.numerator, self.denominator)

    def log_ratios(self, rows):
        xs, logs, ses, n_obs = [], [], [], 0
        for value in sorted(rows[self.x].dropna().unique()):
            wide = _paired(select(rows, {self.x: [value]}),
                           {"a": (self.numerator, self.metric), "b": (self.denominator, self.metric)})
            a, b = wide["a"].to_numpy(float), wide["b"].to_numpy(float)
            ma, mb = a.mean(), b.mean()
            cov = np.cov(a, b, ddof=1)
            var = (cov[0, 0] / ma ** 2 + cov[1, 1] / mb ** 2 - 2 * cov[0, 1] / (ma * mb)) / len(a)
            xs.append(float(value))
            logs.append(0.5 * math.log(ma / mb))
            ses.append(0.5 * math.sqrt(max(var, 0.0)))
            n_obs += 2 * len(a)
        return xs, logs, ses, n_obs

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, self.x, "method"], f"check {self.name!r}")
        xs, logs, ses, n_obs = self.log_ratios(rows)
        if len(xs) < 2:
            raise UsageError(f"check {self.name!r}: need two values of {self.x!r}")
        gx = np.log([self.g(v) for v in xs])
        slope, se = slope_fit(gx, logs, y_se=ses)
        lo, hi = slope - Z95 * se, slope + Z95 * se
        ratios = ", ".join(f"{math.exp(r):.2f}" for r in logs)
        return Estimate(slope, lo, hi, self.predicted - self.tolerance, self.predicted + self.tolerance,
                        f"{self.predicted:+.2f} ± {self.tolerance:.2f}", f"{slope:+.3f} {_interval(lo, hi)}",
                        f"slope in log {self.g_label}; RMS ratios {ratios} at {self.x} ∈ "
                        f"{{{describe_values(xs)}}}, {n_obs} obs", _reps(rows))


@dataclass(frozen=True)
class LinearSlopeCheck(Check):
    """Slope of mean(``scale`` · ``metric``) against x (weighted least squares on the grid
    means with their standard errors), as a ratio to ``predicted_slope``; region
    [1 − ``rel_tol``, 1 + ``rel_tol``]. ``scale`` names a column (e.g. n_samples for n·MSE)."""

    metric: str = "mse"
    method: str = ""
    x: str = ""
    scale: str | None = None
    predicted_slope: float = 1.0
    rel_tol: float = 0.1

    @property
    def methods(self):
        return (self.method,)

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, self.x, self.metric], f"check {self.name!r}")
        xs, means, ses = [], [], []
        for value in sorted(rows[self.x].dropna().unique()):
            part = select(rows, {self.x: [value]})
            y = part[self.metric].to_numpy(float) * (part[self.scale].to_numpy(float) if self.scale else 1.0)
            y = y[np.isfinite(y)]
            xs.append(float(value))
            means.append(float(y.mean()))
            ses.append(float(y.std(ddof=1) / math.sqrt(len(y))))
        if len(xs) < 2:
            raise UsageError(f"check {self.name!r}: need two values of {self.x!r}")
        slope, se = slope_fit(xs, means, y_se=ses)
        r, r_se = slope / self.predicted_slope, se / abs(self.predicted_slope)
        lo, hi = r - Z95 * r_se, r + Z95 * r_se
        what = f"{self.scale}·{self.metric}" if self.scale else self.metric
        return Estimate(r, lo, hi, 1 - self.rel_tol, 1 + self.rel_tol,
                        f"{self.predicted_slope:.3g} ×[{1 - self.rel_tol:.2f}, {1 + self.rel_tol:.2f}]",
                        f"slope {slope:.3g}, ratio {r:.3f} [{lo:.3f}, {hi:.3f}]",
                        f"WLS of mean {what} on {self.x} ∈ {{{describe_values(xs)}}}", _reps(rows))
