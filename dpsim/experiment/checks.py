"""The catalogue of checks of theorems and of a paper's claims (DESIGN "Theory and
verification"). Verdicts are :mod:`dpsim.experiment.verdicts`'; the statistics the checks
compute, :mod:`dpsim.experiment.statistics`'. Both are re-exported here.

Every check is a :class:`~dpsim.experiment.verdicts.Check`: it names an experiment, the
region of the grid (``where``), the axes it deliberately pools over (``pool``), and a
prediction, i.e. a *region* for one statistic (a slope, the sign of a trend, a paired
difference, a ratio, a level against a closed form, a phase-transition spread). Evaluated on
the tidy results table it yields the statistic's 95% interval (one per point for the checks
that judge every value of an axis), judged PASS / FAIL (family-wise) / INCONCLUSIVE /
REFUSED / INFO by :func:`~dpsim.experiment.verdicts.judge`.

The checks, by the statistic they judge:

* slopes: :class:`SlopeCheck`, :class:`SlopeRangeCheck`, :class:`TrendCheck` (log–log, on
  replicate-level rows) and :class:`LinearSlopeCheck` (linear, on grid means);
* paired comparisons (one pairing helper, :func:`paired`): :class:`ComparisonCheck` (the
  :class:`PairedDifference` of two methods) and :class:`EveryPointCheck` (a statistic,
  :class:`PairedDifference` or :class:`RatioOfMeans`, at every value of an axis);
* ratios of means (one delta-method helper, :func:`log_ratio_of_means`): :class:`RatioCheck`
  and :class:`RatioSlopeCheck` (between two slices of an axis), :class:`MeanRatioCheck`
  (two columns of the same rows), :class:`PredictedRatioCheck` (a simulated ratio of two
  slices over the same ratio of a prediction column), :class:`MethodRatioSlopeCheck` (the
  ratio of two methods against an axis or a known function of it);
* levels against a closed form evaluated from the grid at verify time: :class:`LevelCheck`
  (the calibration of a mechanism);
* exact identities: :class:`IdenticalAcrossCheck`;
* phase transitions: :class:`ThresholdCollapseCheck`.
"""
from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass
from typing import Callable

import numpy as np
import pandas as pd

from dpsim.errors import UsageError
from dpsim.experiment.statistics import (Difference, Mean, MethodRatio, PairedDifference, RatioOfMeans,  # noqa: F401
                                         Value, crossing, isotonic,
                                         log_ratio_between, log_ratio_of_means, paired, predictions, wilson,
                                         exp_interval)
from dpsim.experiment.summary import (Z95, SlopeFit, describe_values, grid_columns, loglog_slope, require_unpooled,
                                      select, slope_fit)
from dpsim.experiment.verdicts import (UNCONVERGED_LIMIT, VERDICTS, Check, CheckResult, Estimate,  # noqa: F401
                                       _interval, _reps, family_z, format_region, judge, widened)

__all__ = ["UNCONVERGED_LIMIT", "VERDICTS", "Check", "CheckResult", "Estimate", "family_z", "format_region", "judge",
           "widened", "PairedDifference", "RatioOfMeans", "crossing", "isotonic", "log_ratio_between",
           "log_ratio_of_means", "exp_interval", "paired", "predictions", "wilson", "SlopeCheck", "SlopeRangeCheck", "TrendCheck",
           "LinearSlopeCheck", "ComparisonCheck", "EveryPointCheck", "LevelCheck", "RatioCheck", "RatioSlopeCheck",
           "MeanRatioCheck", "PredictedRatioCheck", "MethodRatioSlopeCheck", "IdenticalAcrossCheck",
           "ThresholdCollapseCheck", "Claim", "At", "Every", "Along", "Mean", "MethodRatio", "Difference", "Value"]


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


@dataclass(frozen=True)
class LinearSlopeCheck(Check):
    """The slope of mean(``scale`` · ``metric``) in ``x`` (not on logs: e.g. n·MSE linear in
    the dimension), as a ratio to ``predicted_slope``.

    Estimates: at each value of ``x`` the mean of ``scale``·``metric`` over its rows
    (``scale`` names a column, e.g. n_samples for n·MSE; None: 1) and its standard error;
    the slope is the weighted least-squares fit of those means on x
    (:func:`~dpsim.experiment.summary.slope_fit` with their standard errors), divided by
    ``predicted_slope``. Interval: ratio ± z·se. Verdict: PASS when the interval lies in
    [1 − ``rel_tol``, 1 + ``rel_tol``], FAIL when it lies outside.
    """

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



# ---------------------------------------------------------------------------------------
# Paired comparisons of two methods
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ComparisonCheck(Check):
    """Two methods on the same replicates: the :class:`PairedDifference`
    ``metric(better) − metric(worse)`` (mean over paired observations, normal 95% interval)
    is < 0: PASS when the whole interval is below 0, FAIL when it is wholly above."""

    metric: str
    better: str
    worse: str

    @property
    def methods(self):
        return (self.better, self.worse)

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, "method", self.metric], f"check {self.name!r}")
        statistic = PairedDifference(self.metric, self.better, self.worse)
        mean, low, high, n = statistic.compute(rows)
        return Estimate(mean, low, high, *statistic.region, statistic.predicted,
                        f"{mean:+.4f} {_interval(low, high, 4)}", f"{n} paired obs", _reps(rows))


@dataclass(frozen=True)
class EveryPointCheck(Check):
    """A ``statistic`` at **every** value of the axis ``x`` (the other axes fixed by ``where``).

    Attributes:
        statistic: a :class:`PairedDifference` or :class:`RatioOfMeans` (anything with
            ``methods``, ``region``, ``predicted`` and ``compute(rows) → (value, low, high,
            n)``), computed on the rows of each value of ``x`` with its own 95% interval.
        x: the axis whose every value is judged.

    Verdict: PASS when every point's interval lies in the statistic's region; FAIL when some
    point's family-wise interval (:func:`judge`, K points count K tests) lies wholly
    outside it; else INCONCLUSIVE. The line shows the decisive
    point: the first one outside (FAIL), the one nearest a boundary (PASS), or the one
    reaching furthest outside (INCONCLUSIVE); its interval is the one judged.
    """

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
        inside = [p for p in points if lo <= p[2] and p[3] <= hi]
        value, v, low, high, _ = _decisive(points, lo, hi)
        fmt = "{:+.4f}" if math.isinf(lo) or math.isinf(hi) else "{:.3f}"
        fitted = (f"{fmt.format(v)} [{fmt.format(low)}, {fmt.format(high)}] at {self.x}={value:g}; "
                  f"{len(inside)}/{len(points)} inside")
        evidence = f"{len(points)} values of {self.x} ({describe_values([p[0] for p in points])}), " \
                   f"{sum(p[4] for p in points)} paired obs"
        return Estimate(v, low, high, lo, hi, self.statistic.predicted + f" at every {self.x}", fitted, evidence,
                        _reps(rows), detail=pd.DataFrame(points, columns=[self.x, "value", "low", "high", "n"]),
                        points=tuple((p[1], p[2], p[3]) for p in points))


# ---------------------------------------------------------------------------------------
# Composed claims: a statistic × an aggregation × a region; levels against a closed form
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class At:
    """Aggregation: one estimate from every selected row (pooled only over ``pool``)."""

    @property
    def axes(self) -> tuple[str, ...]:
        return ()


@dataclass(frozen=True)
class Every:
    """Aggregation: one estimate at every combination of the values of ``axes``, each judged
    (K points count K tests for a FAIL)."""

    axes: tuple[str, ...]

    def __post_init__(self):
        if isinstance(self.axes, str):
            object.__setattr__(self, "axes", (self.axes,))


@dataclass(frozen=True)
class Along:
    """Aggregation: the slope of the statistic (on its scale: log for ratios and means) on log
    ``axis``, or on log g(axis) with ``g`` (e.g. a randomized-response factor of ε); weighted
    by the per-value standard errors (values of the axis hold independent data)."""

    axis: str
    g: Callable[[float], float] | None = None
    g_label: str = "g"

    @property
    def axes(self) -> tuple[str, ...]:
        return (self.axis,)


def _decisive(points, lo, hi):
    """The point a line shows, of (label, value, low, high, n) points: the first one outside
    the region, else the one nearest a boundary when all lie inside, else the one reaching
    furthest outside."""
    outside = [p for p in points if p[3] < lo or p[2] > hi]
    if outside:
        return outside[0]
    if all(lo <= p[2] and p[3] <= hi for p in points):
        return min(points, key=lambda p: min(p[2] - lo, hi - p[3]))
    return max(points, key=lambda p: max(lo - p[2], p[3] - hi))


@dataclass(frozen=True)
class Claim(Check):
    """A check composed of a statistic × an aggregation × a region (issue 27, "checks that
    compose"), e.g. the calibration of a Laplace release in one line::

        Claim("…-variance", "exp", Mean("noise_ms", "laplace"), (0.9, 1.1), over=Every("eps"),
              prediction=lambda point: 8 / point["eps"] ** 2)

    Attributes:
        statistic: :class:`~dpsim.experiment.statistics.Mean`,
            :class:`~dpsim.experiment.statistics.MethodRatio` or
            :class:`~dpsim.experiment.statistics.Difference` (anything with ``methods``,
            ``describe()`` and ``estimate(rows, prediction) → Value``).
        region: (low, high) on the natural scale of what is judged: the statistic (a ratio,
            a difference; relative to the prediction when one is given) for :class:`At` and
            :class:`Every`, the slope for :class:`Along`.
        over: :class:`At` (default), :class:`Every` or :class:`Along`.
        prediction: ``point → number``, a closed form evaluated from the grid's axis values
            when the check is judged (:func:`~dpsim.experiment.statistics.predictions`); the
            statistic is then taken relative to it (a ratio on the log scale, a difference on
            the linear one).
        formula: the prediction as printed.

    Verdict: :func:`~dpsim.experiment.verdicts.judge` on every point (Along: on the slope).
    """

    statistic: object
    region: tuple[float, float]
    _: KW_ONLY
    over: object = At()
    prediction: Callable[[dict], float] | None = None
    formula: str = ""

    @property
    def methods(self):
        return self.statistic.methods

    def _values(self, rows) -> list[tuple[str, tuple, Value]]:
        """(label, key, Value) at each point of the aggregation (Along: one per axis value)."""
        axes = self.over.axes
        if not axes:
            return [("all rows", (), self.statistic.estimate(rows, self.prediction))]
        out = []
        for key, part in rows.groupby(list(axes), sort=True, dropna=False):
            key = key if isinstance(key, tuple) else (key,)
            label = ", ".join(f"{a}={_fmt(v)}" for a, v in zip(axes, key))
            out.append((label, key, self.statistic.estimate(part, self.prediction)))
        return out

    def _slope(self, rows, what: str) -> Estimate:
        lo, hi = self.region
        values = self._values(rows)
        if len(values) < 2:
            raise UsageError(f"check {self.name!r}: need two values of {self.over.axis!r} to fit a slope")
        xs = np.array([float(key[0]) for _, key, _ in values])
        gx = np.array([self.over.g(x) for x in xs], float) if self.over.g else xs
        if not np.all((gx > 0) & np.isfinite(gx)):
            raise UsageError(f"check {self.name!r}: {self.over.g_label if self.over.g else self.over.axis} "
                             f"needs positive finite values")
        slope, se = slope_fit(np.log(gx), [v.value for _, _, v in values], y_se=[v.se for _, _, v in values])
        low, high = slope - Z95 * se, slope + Z95 * se
        on = f"log {self.over.g_label}({self.over.axis})" if self.over.g else f"log {self.over.axis}"
        return Estimate(slope, low, high, lo, hi, format_region(lo, hi, signed=True),
                        f"{slope:+.3f} {_interval(low, high)}",
                        f"slope of {what} on {on}, {self.over.axis} ∈ {{{describe_values(list(xs))}}}, "
                        f"{sum(v.n for _, _, v in values)} obs", _reps(rows))

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, *self.over.axes, "method"], f"check {self.name!r}")
        what = self.statistic.describe() + (f" / {self.formula or 'prediction'}" if self.prediction else "")
        if isinstance(self.over, Along):
            return self._slope(rows, what)
        lo, hi = self.region
        values = self._values(rows)
        if not values:
            raise UsageError(f"check {self.name!r}: no rows to judge")
        points = [(label, v.natural, *v.interval(), v.n) for label, _, v in values]
        label, value, low, high, _ = _decisive(points, lo, hi)
        inside = sum(lo <= p[2] and p[3] <= hi for p in points)
        fmt = "{:.3f}" if values[0][2].log else "{:+.4f}"
        fitted = f"{fmt.format(value)} [{fmt.format(low)}, {fmt.format(high)}]" + \
            (f" at {label}; {inside}/{len(points)} inside" if self.over.axes else "")
        evidence = f"{what}, {len(points)} point{'s' * (len(points) > 1)}, {sum(p[4] for p in points)} obs"
        return Estimate(value, low, high, lo, hi, format_region(lo, hi), fitted, evidence, _reps(rows),
                        points=tuple((p[1], p[2], p[3]) for p in points),
                        detail=pd.DataFrame(points, columns=["at", "value", "low", "high", "n"]))


@dataclass(frozen=True)
class LevelCheck(Check):
    """A metric's level against an independent closed form, at every value of the ``at`` axes
    (issue 27: the check that pins a mechanism's calibration); the one-line form of
    ``Claim(name, experiment, Mean(metric, method, root), (lo, hi), over=Every(at),
    prediction=prediction)``.

    Estimates: at each combination of the ``at`` axes' values (one point when ``at`` is
    empty), r = mean(``metric``)/mean(prediction) over the rows of ``method`` there, to the
    power ½ with ``root`` (an RMS ratio from mean squares); ``prediction(point)`` is a
    function of the row's grid values (:func:`predictions`), evaluated when the check is
    judged, e.g. the exact variance of the released noise from (ε, n, p). Rows of several
    grid points are pooled only over the axes in ``pool``. Interval: exp(log r ± z·se), delta
    method (:func:`log_ratio_of_means`, metric and prediction paired per row). Region
    [``lo``, ``hi``]: the model error of the closed form (1 when it is exact), two-sided, so
    a noise scale off by a factor in either direction fails. Verdict: :func:`judge` on every
    point (PASS when all lie inside, FAIL when one lies outside family-wise).

    Attributes:
        formula: the prediction as printed (e.g. "Var = 8/ε²").
    """

    metric: str
    method: str
    prediction: Callable[[dict], float]
    lo: float
    hi: float
    _: KW_ONLY
    at: tuple[str, ...] = ()
    root: bool = False
    formula: str = ""

    @property
    def methods(self):
        return (self.method,)

    def claim(self) -> Claim:
        """The same check as a :class:`Claim`."""
        return Claim(self.name, self.experiment, Mean(self.metric, self.method, self.root), (self.lo, self.hi),
                     over=Every(self.at) if self.at else At(), prediction=self.prediction, formula=self.formula,
                     where=self.where, pool=self.pool)

    def estimate(self, rows):
        return self.claim().estimate(rows)


# ---------------------------------------------------------------------------------------
# Ratios between two slices of an axis
# ---------------------------------------------------------------------------------------
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
        return log_ratio_between(rows, self.metric, self.axis, self.numerator, self.denominator,
                          self.root, self.paired_on)


@dataclass(frozen=True)
class RatioCheck(_RatioSlices):
    """The ratio (:class:`_RatioSlices`) lies in [``lo``, ``hi``]."""

    lo: float
    hi: float

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, self.axis, self.metric], f"check {self.name!r}")
        log_r, se, n_obs = self.log_ratio(rows)
        value, low, high = exp_interval(log_r, se)
        return Estimate(value, low, high, self.lo, self.hi, f"[{self.lo:.3g}, {self.hi:.3g}]",
                        f"{value:.3f} [{low:.3f}, {high:.3f}]", f"ratio, {n_obs} obs", _reps(rows))


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


def _fmt(value) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


@dataclass(frozen=True)
class MeanRatioCheck(Check):
    """Two columns of the *same* rows: the :class:`RatioOfMeans`
    (mean(``metric``)/mean(``reference``))^(½ if ``root``) over the selected rows of
    ``method`` (e.g. a simulated mean square error over its predicted value), paired per row.

    Interval: exp(log r ± z·se), delta method with the two columns' covariance. Verdict:
    PASS when the interval lies in [``lo``, ``hi``], FAIL when it lies wholly outside.
    """

    metric: str
    reference: str
    method: str
    lo: float
    hi: float
    _: KW_ONLY
    root: bool = True

    @property
    def methods(self):
        return (self.method,)

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, self.metric, self.reference], f"check {self.name!r}")
        statistic = RatioOfMeans(self.method, self.metric, self.reference, self.lo, self.hi, root=self.root)
        value, low, high, n = statistic.compute(rows)
        what = "RMS ratio" if self.root else "ratio of means"
        return Estimate(value, low, high, self.lo, self.hi, statistic.predicted,
                        f"{value:.3f} [{low:.3f}, {high:.3f}]",
                        f"{what} {self.metric}/{self.reference}, {n} paired obs", _reps(rows))


@dataclass(frozen=True)
class PredictedRatioCheck(Check):
    """Does a simulated ratio between two slices track the predicted one?

    Estimates: the simulated ratio mean(``metric`` | ``axis`` = ``numerator``) /
    mean(``metric`` | ``axis`` = ``denominator``) divided by the same ratio of the
    ``prediction`` column, to the power ½ with ``root``. The slices are paired on
    ``paired_on`` (the replicate, and any pooled axes). Interval: exp(log r ± z·se), delta
    method (:func:`log_ratio_of_means`) over the four paired series with their covariance.
    Verdict: PASS when the interval lies in [``lo``, ``hi``], FAIL when it lies wholly
    outside.
    """

    metric: str
    prediction: str
    method: str
    axis: str
    numerator: object
    denominator: object
    lo: float
    hi: float
    _: KW_ONLY
    root: bool = True
    paired_on: tuple[str, ...] = ("rep",)

    @property
    def methods(self):
        return (self.method,)

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, self.axis, self.metric, self.prediction],
                         f"check {self.name!r}")
        num, den = {self.axis: [self.numerator]}, {self.axis: [self.denominator]}
        series = paired(rows, {"metric_a": (num, self.metric), "metric_b": (den, self.metric),
                               "prediction_a": (num, self.prediction), "prediction_b": (den, self.prediction)},
                        on=self.paired_on).to_numpy(float)
        scale = 0.5 if self.root else 1.0
        log_r, se = log_ratio_of_means(series, (1.0, -1.0, -1.0, 1.0), scale=scale,
                                       what=f"{self.metric!r} and {self.prediction!r}")
        value, low, high = exp_interval(log_r, se)
        sim = math.exp(scale * (math.log(series[:, 0].mean()) - math.log(series[:, 1].mean())))
        pred = math.exp(scale * (math.log(series[:, 2].mean()) - math.log(series[:, 3].mean())))
        return Estimate(value, low, high, self.lo, self.hi, f"[{self.lo:.3g}, {self.hi:.3g}]",
                        f"{value:.3f} [{low:.3f}, {high:.3f}]",
                        f"{self.axis} {_fmt(self.numerator)}/{_fmt(self.denominator)}: simulated ratio {sim:.3f}, "
                        f"predicted {pred:.3f}; {len(series)} paired obs", _reps(rows))


@dataclass(frozen=True)
class MethodRatioSlopeCheck(Check):
    """How the ratio of two methods grows with an axis, or with a known function g of it
    (e.g. a randomized-response factor (e^ε + 1)/(e^ε − 1) of ε).

    Estimates: at each value of ``x`` the log ratio of the means of ``metric`` between the
    ``numerator`` and ``denominator`` methods, paired on the observations (:func:`paired`),
    with its delta-method standard error including their covariance
    (:func:`log_ratio_of_means`). By default the metric is a mean square (e.g. mse) and the
    ratio is its square root, the RMS ratio; ``root=False``: the plain ratio of means;
    ``square=True``: the metric is squared first (a norm, e.g. ℓ2, whose RMS ratio is
    √(mean a²/mean b²) with ``root``). The statistic is the slope of those log ratios on
    log g(x) (``g`` None: on log x) (:func:`~dpsim.experiment.summary.slope_fit` with their
    standard errors). Interval: slope ± z·se. Verdict: PASS when the interval lies within
    ``tolerance`` of ``predicted``, or in ``region`` (low, high) when given (e.g.
    (−∞, 0] for "the ratio falls"); FAIL when it lies wholly outside.

    Evidence: with ``g``, the ratios at each x and the observations; without, the number of
    grid values.
    """

    metric: str = "mse"
    numerator: str = ""
    denominator: str = ""
    x: str = ""
    g: Callable[[float], float] | None = None
    g_label: str = "g"
    predicted: float = 1.0
    tolerance: float = 0.1
    region: tuple[float, float] | None = None
    root: bool = True
    square: bool = False

    @property
    def methods(self):
        return (self.numerator, self.denominator)

    def log_ratios(self, rows):
        """(x values, log ratios, their standard errors, observations used)."""
        xs, logs, ses, n_obs = [], [], [], 0
        for value in sorted(rows[self.x].dropna().unique()):
            wide = paired(select(rows, {self.x: [value]}),
                          {"a": ({"method": [self.numerator]}, self.metric),
                           "b": ({"method": [self.denominator]}, self.metric)}).to_numpy(float)
            if self.square:
                wide = wide * wide
            log_r, se = log_ratio_of_means(wide, (1.0, -1.0), scale=0.5 if self.root else 1.0,
                                           what=f"{self.metric!r} at {self.x}={value:g}")
            xs.append(float(value))
            logs.append(log_r)
            ses.append(se)
            n_obs += 2 * len(wide)
        return xs, logs, ses, n_obs

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, self.x, "method", self.metric], f"check {self.name!r}")
        xs, logs, ses, n_obs = self.log_ratios(rows)
        if len(xs) < 2:
            raise UsageError(f"check {self.name!r}: need two values of {self.x!r}")
        gx = np.array([self.g(v) for v in xs] if self.g is not None else xs, float)
        if not np.all((gx > 0) & np.isfinite(gx)):
            raise UsageError(f"check {self.name!r}: {self.g_label if self.g is not None else self.x} "
                             f"needs positive finite values at every {self.x}")
        slope, se = slope_fit(np.log(gx), logs, y_se=ses)
        lo, hi = slope - Z95 * se, slope + Z95 * se
        if self.region is not None:
            low, high = self.region
            predicted = format_region(low, high, signed=True)
        else:
            low, high = self.predicted - self.tolerance, self.predicted + self.tolerance
            predicted = f"{self.predicted:+.2f} ± {self.tolerance:.2f}"
        if self.g is not None:
            ratios = ", ".join(f"{math.exp(r):.2f}" for r in logs)
            evidence = (f"slope in log {self.g_label}; {'RMS' if self.root else 'mean'} ratios {ratios} at "
                        f"{self.x} ∈ {{{describe_values(xs)}}}, {n_obs} obs")
        else:
            evidence = f"log ratio {self.numerator}/{self.denominator} vs log {self.x}, {len(xs)} grid values"
        return Estimate(slope, lo, hi, low, high, predicted, f"{slope:+.3f} {_interval(lo, hi)}", evidence,
                        _reps(rows))



# ---------------------------------------------------------------------------------------
# Exact identities
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class IdenticalAcrossCheck(Check):
    """Two values ``a`` and ``b`` of an axis give identical ``metrics`` of ``method`` on every
    paired observation (e.g. two mechanisms that share their randomness and must rank alike).

    Estimates: the number of pairs where some metric differs by more than ``tol`` (a missing
    value counts as a mismatch); rows are paired (:func:`paired`) on every grid axis except
    ``axis``, and on the replicate. The count is exact (no Monte-Carlo error): its interval
    is the point itself. Verdict: PASS at 0 mismatches (the region is {0}), else FAIL.
    """

    metrics: tuple[str, ...]
    method: str
    axis: str
    a: object
    b: object
    _: KW_ONLY
    tol: float = 1e-12

    @property
    def methods(self):
        return (self.method,)

    def estimate(self, rows):
        keys = [c for c in grid_columns(rows) if c != self.axis] + ["rep"]
        joined = paired(rows, {f"{m}_{side}": ({self.axis: [value]}, m)
                               for side, value in (("a", self.a), ("b", self.b)) for m in self.metrics},
                        on=keys, dropna=False)
        if len(joined) == 0:
            raise UsageError(f"check {self.name!r}: no paired rows of {self.axis}={self.a!r} and {self.b!r}")
        diff = np.stack([np.abs(joined[f"{m}_a"].to_numpy(float) - joined[f"{m}_b"].to_numpy(float))
                         for m in self.metrics], axis=1)
        mismatch = int(np.sum(np.any(~(diff <= self.tol), axis=1)))
        detail = {m: float(np.nanmax(diff[:, i])) for i, m in enumerate(self.metrics)}
        worst = ", ".join(f"max |Δ{m}| {v:.1e}" for m, v in detail.items())
        return Estimate(float(mismatch), float(mismatch), float(mismatch), 0.0, 0.0, "0 mismatches",
                        f"{mismatch} mismatches", f"{len(joined)} paired replicates × grid points; {worst}",
                        _reps(rows), detail=detail)


# ---------------------------------------------------------------------------------------
# Phase transitions: success probability against a gap measured in units of a rate
# ---------------------------------------------------------------------------------------
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
    1/2 on its grid is *censored*: its x½ is only bounded from below (its interval is open
    above), and one that starts above 1/2 only from above; the spread's interval is then
    infinite at the end such a configuration could decide, so the check is INCONCLUSIVE
    (or FAIL, when even the bounds exceed the region) until the grid is extended.

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
            low_band, high_band = wilson(group["successes"].to_numpy(float), w)
            lo, hi = crossing(xs, isotonic(group["mean"].to_numpy(float), w))
            lo_ci, _ = crossing(xs, isotonic(high_band, w))
            _, hi_ci = crossing(xs, isotonic(low_band, w))
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
        # The point estimate uses each configuration's crossing, or its censoring bound (x_max
        # for a curve that never reaches ½, x_min for one that starts above): a lower bound of
        # the spread when some configuration is censored.
        spread = float(mids["lo"].max() / mids["hi"].min())
        # MC interval of the spread from every configuration's 95% interval [L, U] of x½,
        # taken from the crossings of its Wilson bands. A censored configuration's interval is
        # open on its censored side (U = ∞ when the curve never reaches ½, L = 0 when it
        # starts above), so where it can decide the spread's end, that end is infinite: the
        # check cannot PASS until the grid of x is extended (issue 27, "honest intervals").
        lows, highs = mids["x_half_low"].to_numpy(float), mids["x_half_high"].to_numpy(float)
        spread_low = max(1.0, float(lows.max() / highs.min()))
        spread_high = float(highs.max() / lows.min()) if lows.min() > 0 else math.inf
        censored = int((~crossed).sum())
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
        fitted = (f"x½ {span}, spread {'≥ ' if censored else ''}{spread:.2f} "
                  f"[{spread_low:.2f}, {spread_high:.2f}]{sides}")
        evidence = f"{n_crossed}/{len(mids)} configurations cross ½, {n_obs} obs"
        if censored:
            evidence += (f"; {censored} censored (never reach ½ on the grid, or start above it): "
                         f"their x½ is only bounded, extend the grid of {self.x} to decide")
        detail = {"midpoints": mids, "max_below": max_below, "min_above": min_above}
        return Estimate(spread, spread_low, spread_high, *region, predicted, fitted, evidence,
                        _reps(rows), verdict=forced, detail=detail)
