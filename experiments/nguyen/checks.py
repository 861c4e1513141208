"""Checks that the engine's classes do not offer, built on :class:`dpsim.experiment.checks.Check`
(same verdict rules: a 95% interval judged against a predicted region; spec §5.7).

* :class:`MethodRatioCheck`: the ratio of a metric's mean between two methods **on the same
  replicates** (paired on grid point and replicate; e.g. R7's private/non-private ℓ2 ratio,
  R9's Laplace/Gaussian privacy-shift ratio).
* :class:`MethodRatioSlopeCheck`: the slope in log x of that log ratio (e.g. R9: the
  Laplace/Gaussian ratio grows like √(m(m − 1))).
* :class:`MetricRatioSlopeCheck`: for one method, the slope in log x of log(mean a/mean b) for
  two metrics of the same fits (R3: ‖·‖∞/‖·‖₂ shrinks like √(log m/m)).
* :class:`RelativeLevelCheck`: a metric's mean relative to a known level (R11: "very
  inaccurate" means an error at least that of the estimate 0, ‖β*‖₂).

Intervals: delta method on log ratios, with the covariance of paired observations (the
engine's :func:`~dpsim.experiment.checks.paired` and
:func:`~dpsim.experiment.checks.log_ratio_of_means`); slopes by
:func:`dpsim.experiment.summary.slope_fit` with the per-x standard errors (x values hold
independent data). :class:`MethodRatioSlopeCheck` here is not the engine's class of that name
(which fits the log RMS ratio against log g(x) with a symmetric tolerance): this one takes the
ratio of means or of RMS and any region, e.g. (−∞, 0] for "falls".
"""
from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass

import numpy as np
import pandas as pd

from dpsim.errors import UsageError
from dpsim.experiment.checks import Check, Estimate, log_ratio_of_means, paired
from dpsim.experiment.summary import Z95, require_unpooled, select, slope_fit


def paired_log_ratio(a, b, root: bool = False) -> tuple[float, float]:
    """log(mean a / mean b) and its delta-method standard error for paired samples a, b
    (equal length, aligned); with ``root``, of √mean(a²)/√mean(b²) (an RMS ratio). The
    engine's :func:`~dpsim.experiment.checks.log_ratio_of_means` on the two columns."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if root:
        a, b = a * a, b * b
    return log_ratio_of_means(np.column_stack([a, b]), (1.0, -1.0), scale=0.5 if root else 1.0)


def _paired(rows: pd.DataFrame, metric: str, numerator: str, denominator: str):
    """``metric`` of two methods on the same (point, replicate) observations (the engine's
    :func:`~dpsim.experiment.checks.paired`)."""
    both = paired(rows, {"a": ({"method": [numerator]}, metric), "b": ({"method": [denominator]}, metric)})
    return both["a"].to_numpy(float), both["b"].to_numpy(float)


def _reps(rows) -> int:
    return int(rows["rep"].nunique())


def _fmt_region(lo, hi, digits=3) -> str:
    if math.isinf(hi):
        return f"≥ {lo:.{digits}g}"
    if math.isinf(lo):
        return f"≤ {hi:.{digits}g}"
    return f"[{lo:.{digits}g}, {hi:.{digits}g}]"


@dataclass(frozen=True)
class MethodRatioCheck(Check):
    """mean(metric | ``numerator``)/mean(metric | ``denominator``) on the same replicates lies
    in [``lo``, ``hi``] (``root``: the ratio of root mean squares)."""

    metric: str
    numerator: str
    denominator: str
    lo: float
    hi: float
    _: KW_ONLY
    root: bool = False

    @property
    def methods(self):
        return (self.numerator, self.denominator)

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, "method", self.metric], f"check {self.name!r}")
        a, b = _paired(rows, self.metric, self.numerator, self.denominator)
        log_r, se = paired_log_ratio(a, b, self.root)
        r, low, high = math.exp(log_r), math.exp(log_r - Z95 * se), math.exp(log_r + Z95 * se)
        what = "RMS" if self.root else "mean"
        return Estimate(r, low, high, self.lo, self.hi, _fmt_region(self.lo, self.hi),
                        f"{r:.3f} [{low:.3f}, {high:.3f}]",
                        f"{what} ratio {self.numerator}/{self.denominator}, {len(a)} paired obs", _reps(rows))


def _slope_estimate(name, xs, logs, ses, low, high, reps, what) -> Estimate:
    if len(xs) < 2:
        raise UsageError(f"check {name!r}: need at least two values of x to fit a slope")
    slope, se = slope_fit(np.log(xs), logs, y_se=ses)
    lo, hi = slope - Z95 * se, slope + Z95 * se
    return Estimate(slope, lo, hi, low, high, _fmt_region(low, high, 3) if (math.isinf(low) or math.isinf(high))
                    else f"[{low:+.2f}, {high:+.2f}]", f"{slope:+.3f} [{lo:+.3f}, {hi:+.3f}]",
                    f"{what}, {len(xs)} grid values", reps)


@dataclass(frozen=True)
class MethodRatioSlopeCheck(Check):
    """The slope in log ``x`` of log(mean metric | numerator / mean metric | denominator),
    each ratio paired on the replicates at one x, lies in [``low``, ``high``]."""

    metric: str
    numerator: str
    denominator: str
    x: str
    low: float
    high: float
    _: KW_ONLY
    root: bool = False

    @property
    def methods(self):
        return (self.numerator, self.denominator)

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, "method", self.x, self.metric], f"check {self.name!r}")
        xs = sorted(float(v) for v in rows[self.x].dropna().unique())
        if any(not (v > 0 and math.isfinite(v)) for v in xs):
            raise UsageError(f"check {self.name!r}: {self.x!r} needs positive finite values")
        logs, ses = [], []
        for v in xs:
            a, b = _paired(select(rows, {self.x: [v]}), self.metric, self.numerator, self.denominator)
            log_r, se = paired_log_ratio(a, b, self.root)
            logs.append(log_r)
            ses.append(se)
        return _slope_estimate(self.name, xs, logs, ses, self.low, self.high, _reps(rows),
                               f"log ratio {self.numerator}/{self.denominator} vs log {self.x}")


@dataclass(frozen=True)
class MetricRatioSlopeCheck(Check):
    """For one method, the slope in log ``x`` of log(mean ``numerator`` / mean ``denominator``)
    (two metrics of the same fits, paired) lies in [``low``, ``high``]."""

    method: str
    numerator: str
    denominator: str
    x: str
    low: float
    high: float

    @property
    def methods(self):
        return (self.method,)

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, self.x, self.numerator], f"check {self.name!r}")
        xs = sorted(float(v) for v in rows[self.x].dropna().unique())
        logs, ses = [], []
        for v in xs:
            at = select(rows, {self.x: [v]})[[self.numerator, self.denominator]].dropna()
            log_r, se = paired_log_ratio(at[self.numerator], at[self.denominator])
            logs.append(log_r)
            ses.append(se)
        return _slope_estimate(self.name, xs, logs, ses, self.low, self.high, _reps(rows),
                               f"log(mean {self.numerator}/mean {self.denominator}) vs log {self.x}")


@dataclass(frozen=True)
class RelativeLevelCheck(Check):
    """mean(metric)/``reference`` lies in [``lo``, ``hi``] (``reference`` a known level, e.g.
    the error of the estimate 0)."""

    metric: str
    method: str
    reference: float
    lo: float
    hi: float
    _: KW_ONLY
    reference_name: str = "reference"

    @property
    def methods(self):
        return (self.method,)

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, self.metric], f"check {self.name!r}")
        values = rows[self.metric].dropna().to_numpy(float)
        if len(values) < 2:
            raise UsageError(f"check {self.name!r}: fewer than two observations")
        mean = values.mean() / self.reference
        half = Z95 * values.std(ddof=1) / math.sqrt(len(values)) / self.reference
        return Estimate(mean, mean - half, mean + half, self.lo, self.hi,
                        f"{_fmt_region(self.lo, self.hi)}×{self.reference_name}",
                        f"{mean:.3f} [{mean - half:.3f}, {mean + half:.3f}]",
                        f"mean {self.metric}/{self.reference:.4g}, {len(values)} obs", _reps(rows))


@dataclass(frozen=True)
class RMSSlopeCheck(Check):
    """For one method, the slope in log ``x`` of log √mean(metric²) (the root mean square:
    what a linearised prediction E‖J z‖² = σ²‖J‖_F² gives exactly, whereas the mean of
    log ‖J z‖ also depends on the shape of the distribution, which changes with the
    dimension) lies in [``low``, ``high``]."""

    metric: str
    method: str
    x: str
    low: float
    high: float

    @property
    def methods(self):
        return (self.method,)

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, self.x, self.metric], f"check {self.name!r}")
        xs = sorted(float(v) for v in rows[self.x].dropna().unique())
        logs, ses = [], []
        for v in xs:
            sq = select(rows, {self.x: [v]})[self.metric].dropna().to_numpy(float) ** 2
            if len(sq) < 2 or not sq.mean() > 0:
                raise UsageError(f"check {self.name!r}: too few positive values of {self.metric!r} at {self.x}={v:g}")
            logs.append(0.5 * math.log(sq.mean()))
            ses.append(0.5 * sq.std(ddof=1) / (math.sqrt(len(sq)) * sq.mean()))
        return _slope_estimate(self.name, xs, logs, ses, self.low, self.high, _reps(rows),
                               f"log RMS {self.metric} vs log {self.x}")
