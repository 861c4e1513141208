"""The checks of theorems and of a paper's claims (DESIGN "Theory and verification").

One check, :class:`Claim`, composes a **statistic** × an **aggregation** × a **region**:

* statistics (:mod:`dpsim.engine.judgement.statistics`), each one number with its standard
  error: a mean or RMS (:class:`Mean`, optionally relative to a closed form of the grid), a
  paired difference (:class:`Difference`), ratios (:class:`MethodRatio`,
  :class:`ColumnRatio`, :class:`SliceRatio`) and slopes (:class:`Slope`,
  :class:`LinearSlope`);
* aggregations: :class:`At` (one estimate from the selected rows), :class:`Every` (one at
  every value of some axes, each judged), :class:`Along` (the slope of the statistic along
  an axis, or a known function of it);
* a region (low, high) for the judged number, with predictions computed from the grid at
  verify time (``prediction``, or a :class:`~dpsim.engine.judgement.deferred.Deferred` number).

The functions below (:func:`slope_check`, :func:`level_check`, :func:`ratio_check`, …) are
one-line forms of common claims; each returns a :class:`Claim`. Two checks judge statistics
of another kind: :class:`IdenticalAcrossCheck` (an exact identity, counted) and
:class:`ThresholdCollapseCheck` (the spread of phase-transition midpoints); one is judged on
a solve's roots instead of a grid's rows: :class:`ThresholdScalingCheck` (how solved
thresholds scale against a theorem's rate); and one compares the grid's means with numbers a
paper or its authors published: :class:`PublishedCheck` (:func:`published_check` for one
printed value; the numbers, their source and their own Monte-Carlo errors in a
:class:`Published`). Verdicts are
:mod:`dpsim.engine.judgement.verdicts`' (PASS / FAIL family-wise / INCONCLUSIVE / REFUSED / INFO / ERROR,
:func:`~dpsim.engine.judgement.verdicts.judge`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import KW_ONLY, dataclass
from typing import Callable

import numpy as np
import pandas as pd

from dpsim.errors import UsageError
from dpsim.engine.judgement.statistics import (
    ColumnRatio,
    Difference,
    LinearSlope,
    Mean,
    MethodRatio,
    SliceRatio,
    Slope,
    Value,
    paired,
)
from dpsim.engine.presentation.summary import (
    Z95,
    SlopeFit,
    describe_values,
    grid_columns,
    require_unpooled,
    select,
    slope_fit,
)
from dpsim.engine.judgement.verdicts import Check, Estimate, _interval, _reps, format_region

__all__ = [
    "Claim",
    "At",
    "Every",
    "Along",
    "slope_check",
    "slope_range_check",
    "trend_check",
    "linear_slope_check",
    "comparison_check",
    "level_check",
    "ratio_check",
    "ratio_slope_check",
    "column_ratio_check",
    "predicted_ratio_check",
    "method_ratio_check",
    "method_ratio_slope_check",
    "IdenticalAcrossCheck",
    "pinned_claim",
    "ratio_region",
    "format_value",
]


# ---------------------------------------------------------------------------------------
# Aggregations
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


def format_value(value) -> str:
    """A grid value as a verdict line shows it: a number in %g, anything else as text."""
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


_ENGINE_STATISTICS = (Mean, MethodRatio, Difference, ColumnRatio, SliceRatio, Slope, LinearSlope)


# ---------------------------------------------------------------------------------------
# The check: a statistic × an aggregation × a region
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Claim(Check):
    """A check composed of a statistic × an aggregation × a region, e.g. the calibration of
    a Laplace release in one line::

        Claim("…-variance", "exp", Mean("noise_ms", "laplace"), (0.9, 1.1), over=Every("eps"),
              prediction=lambda point: 8 / point["eps"] ** 2)

    Attributes:
        statistic: a statistic of :mod:`dpsim.engine.judgement.statistics` (anything with
            ``methods``, ``describe()`` and ``estimate(rows, prediction) → Value``; one with
            ``spans`` names the axes it varies over itself, e.g. a slope's x).
        region: (low, high) on the natural scale of what is judged: the statistic (a ratio,
            a difference, a slope; relative to the prediction when one is given) for
            :class:`At` and :class:`Every`, the slope for :class:`Along`. Its ends may be
            :class:`~dpsim.engine.judgement.deferred.Deferred` (computed when judged).
        over: :class:`At` (default), :class:`Every` or :class:`Along`.
        prediction: ``point → number``, a closed form evaluated from the grid's axis values
            when the check is judged (:func:`~dpsim.engine.judgement.statistics.predictions`); the
            statistic is then taken relative to it (a ratio on the log scale, a difference on
            the linear one).
        formula: the prediction as printed.
        center: printed as "center ± half-width" instead of the region (a predicted slope
            with its tolerance).

    Verdict: :func:`~dpsim.engine.judgement.verdicts.judge` on every point (Along: on the slope).
    """

    statistic: object
    region: tuple[float, float]
    _: KW_ONLY
    over: object = At()
    prediction: Callable[[dict], float] | None = None
    formula: str = ""
    center: float | None = None

    @property
    def methods(self):
        return self.statistic.methods

    def used_rows(self, table):
        """:meth:`Check.rows`, narrowed to the slices a statistic with ``reads`` (axis →
        values, e.g. :class:`SliceRatio`'s two slices) reads."""
        rows = self.rows(table)
        reads = getattr(self.statistic, "reads", None)
        return select(rows, reads) if reads else rows

    def _pooled_statistic(self):
        """The statistic as judged: a slope gets one intercept per where/pool axis."""
        if hasattr(self.statistic, "pooled"):
            return self.statistic.pooled((*self.where, *self.pool))
        return self.statistic

    def names_read(self):
        """The engine's statistics read ``metric`` (``reference``, ``scale``; a
        :class:`ColumnRatio` its two columns); a paper's own statistic (a subclass that may
        compute its values from other columns) only the ``columns`` it declares."""
        statistic = self.statistic
        if type(statistic) in _ENGINE_STATISTICS:
            columns = [getattr(statistic, f, None) for f in ("metric", "reference", "scale")]
            if isinstance(statistic, ColumnRatio):
                columns += [statistic.numerator, statistic.denominator]
        else:
            columns = list(getattr(statistic, "columns", ()))
        axes = [
            *self.where,
            *self.pool,
            *self.over.axes,
            *getattr(self._pooled_statistic(), "spans", ()),
            *(a for a in (getattr(statistic, "paired_on", None) or ()) if a != "rep"),
        ]
        return {
            "columns": tuple(c for c in columns if isinstance(c, str)),
            "axes": tuple(axes),
            "methods": tuple(self.methods),
        }

    def mapped(self):
        return (
            *self.where,
            *self.pool,
            *self.over.axes,
            *getattr(self._pooled_statistic(), "spans", ()),
            "method",
        )

    def _expected(self, signed: bool) -> str:
        lo, hi = self.region
        if self.center is not None:
            return f"{self.center:+.3g} ± {(hi - lo) / 2:.2g}"
        return format_region(lo, hi, signed=signed)

    def _values(self, rows) -> list[tuple[str, tuple, Value]]:
        """(label, key, Value) at each point of the aggregation (Along: one per axis value)."""
        axes = self.over.axes
        if not axes:
            return [("all rows", (), self.statistic.estimate(rows, self.prediction))]
        out = []
        for key, part in rows.groupby(list(axes), sort=True):  # a missing axis value is not a point
            key = key if isinstance(key, tuple) else (key,)
            label = ", ".join(f"{a}={format_value(v)}" for a, v in zip(axes, key))
            out.append((label, key, self.statistic.estimate(part, self.prediction)))
        return out

    def _slope(self, rows, what: str) -> Estimate:
        lo, hi = self.region
        values = self._values(rows)
        if len(values) < 2:
            raise UsageError(
                f"check {self.name!r}: need two values of {self.over.axis!r} to fit a slope"
            )
        xs = np.array([float(key[0]) for _, key, _ in values])
        gx = np.array([self.over.g(x) for x in xs], float) if self.over.g else xs
        if not np.all((gx > 0) & np.isfinite(gx)):
            raise UsageError(
                f"check {self.name!r}: {self.over.g_label if self.over.g else self.over.axis} "
                f"needs positive finite values"
            )
        slope, se = slope_fit(
            np.log(gx), [v.value for _, _, v in values], y_se=[v.se for _, _, v in values]
        )
        low, high = slope - Z95 * se, slope + Z95 * se
        on = (
            f"log {self.over.g_label}({self.over.axis})" if self.over.g else f"log {self.over.axis}"
        )
        shown = ""
        if values[0][2].log:
            shown = "; " + ", ".join(f"{v.natural:.3g}" for _, _, v in values)
        n_obs = sum(v.n for _, _, v in values)
        used = f"{self.over.axis} ∈ {{{describe_values(list(xs))}}}"
        return Estimate(
            slope,
            low,
            high,
            lo,
            hi,
            self._expected(True),
            f"{slope:+.3f} {_interval(low, high)}",
            f"slope of {what} on {on}, {used}{shown}, {n_obs} obs",
            _reps(rows),
            detail=SlopeFit(slope, se, low, high, len(xs), n_obs, used),
        )

    def estimate(self, rows):
        statistic = self._pooled_statistic()  # a slope: one intercept per where/pool axis
        if statistic is not self.statistic:
            return dataclasses.replace(self, statistic=statistic).estimate(rows)
        require_unpooled(rows, self.mapped(), f"check {self.name!r}")
        what = self.statistic.describe() + (
            f" / {self.formula or 'prediction'}" if self.prediction else ""
        )
        if isinstance(self.over, Along):
            return self._slope(rows, what)
        lo, hi = self.region
        values = self._values(rows)
        if not values:
            raise UsageError(f"check {self.name!r}: no rows to judge")
        points = [(label, v.natural, *v.interval(), v.n) for label, _, v in values]
        label, value, low, high, _ = _decisive(points, lo, hi)
        log = values[0][2].log
        fmt = "{:.3f}" if log else "{:+.4f}"
        fitted = f"{fmt.format(value)} [{fmt.format(low)}, {fmt.format(high)}]"
        if self.over.axes:
            inside = sum(lo <= p[2] and p[3] <= hi for p in points)
            fitted += f" at {label}; {inside}/{len(points)} inside"
        note = f"; {values[0][2].note}" if len(values) == 1 and values[0][2].note else ""
        evidence = f"{what}, {len(points)} point{'s' * (len(points) > 1)}, {sum(p[4] for p in points)} obs{note}"
        return Estimate(
            value,
            low,
            high,
            lo,
            hi,
            self._expected(not log),
            fitted,
            evidence,
            _reps(rows),
            points=tuple((p[1], p[2], p[3]) for p in points),
            detail=pd.DataFrame(points, columns=["at", "value", "low", "high", "n"]),
        )


# ---------------------------------------------------------------------------------------
# One-line forms of common claims (each returns a Claim)
# ---------------------------------------------------------------------------------------
def ratio_region(rel_se: float, widths: float = 6.0) -> tuple[float, float]:
    """A two-sided region for a ratio (observed ÷ predicted) whose relative Monte-Carlo
    standard error is ``rel_se``: e^{±widths·rel_se}, rounded outward to 4 decimals.

    Args:
        rel_se: the ratio's relative standard error at the check's replicates.
        widths: how many standard errors on each side (default 6).
    Returns:
        (low, high), low < 1 < high.
    """
    half = widths * rel_se
    return math.floor(1e4 * math.exp(-half)) / 1e4, math.ceil(1e4 * math.exp(half)) / 1e4


def pinned_claim(
    name: str,
    experiment: str,
    statistic,
    rel_se: float,
    *,
    prediction,
    formula: str,
    description: str,
    reps,
    at: tuple = (),
    widths: float = 6.0,
    **check,
) -> Claim:
    """A level check pinned to a closed form: ``statistic`` ÷ ``prediction`` in
    :func:`ratio_region` (e^{±widths·rel_se}), at every value of the axes ``at`` (one point when
    empty), its description ending in how the region was made.

    Args:
        name, experiment, statistic: as :class:`Claim`.  rel_se: the ratio's relative standard
            error, from the law at ``reps`` replicates (``reps`` is written in the description).
        prediction, formula: the closed form and how it reads.  description: what is pinned.
        at: the axes the claim is judged at every value of.  widths: standard errors per side.
        **check: the rest of :class:`Claim`'s fields (e.g. ``pool``).
    Returns:
        The :class:`Claim`.
    """
    lo, hi = ratio_region(rel_se, widths)
    made = f"exact, region [{lo:.4f}, {hi:.4f}] = e^(±{widths:g}·se), se = {rel_se:.2g} from the law at R = {reps}"
    return Claim(
        name,
        experiment,
        statistic,
        (lo, hi),
        over=Every(at) if at else At(),
        prediction=prediction,
        formula=formula,
        description=f"{description}; {made}",
        **check,
    )


def slope_check(
    name: str,
    experiment: str,
    metric: str,
    method: str,
    x: str,
    predicted: float,
    tolerance: float,
    *,
    log_y: bool = True,
    **check,
) -> Claim:
    """The log–log slope of ``metric`` of ``method`` in ``x`` (replicate rows, :class:`Slope`)
    lies within ``tolerance`` of ``predicted``: the tolerance covers the rate's lower-order
    terms over the grid region; the interval is the Monte-Carlo error (HC1). ``check``: the
    :class:`~dpsim.engine.judgement.verdicts.Check` keywords (where, pool, description, …); the
    axes in ``where`` and ``pool`` get one intercept per value."""
    return Claim(
        name,
        experiment,
        _slope(metric, method, x, log_y, check),
        (predicted - tolerance, predicted + tolerance),
        center=predicted,
        **check,
    )


def slope_range_check(
    name: str,
    experiment: str,
    metric: str,
    method: str,
    x: str,
    low: float,
    high: float,
    *,
    log_y: bool = True,
    **check,
) -> Claim:
    """The log–log slope (:func:`slope_check`) lies in [``low``, ``high``] (e.g. between the
    slopes of a rate's two terms, on a grid that straddles their crossover)."""
    return Claim(name, experiment, _slope(metric, method, x, log_y, check), (low, high), **check)


def trend_check(
    name: str,
    experiment: str,
    metric: str,
    method: str,
    x: str,
    sign: int,
    *,
    log_y: bool = True,
    **check,
) -> Claim:
    """The log–log slope (:func:`slope_check`) has the predicted sign (−1: decreasing, +1:
    increasing)."""
    region = (-math.inf, 0.0) if sign < 0 else (0.0, math.inf)
    return Claim(name, experiment, _slope(metric, method, x, log_y, check), region, **check)


def _slope(metric, method, x, log_y, check) -> Slope:
    return Slope(metric, method, x, log_y)


def linear_slope_check(
    name: str,
    experiment: str,
    *,
    metric: str,
    method: str,
    x: str,
    scale: str | None = None,
    predicted_slope: float,
    rel_tol: float = 0.1,
    **check,
) -> Claim:
    """The slope of mean(``scale``·``metric``) in ``x`` itself (e.g. n·MSE linear in the
    dimension, :class:`LinearSlope`) over ``predicted_slope`` lies in [1 − ``rel_tol``,
    1 + ``rel_tol``]."""
    return Claim(
        name,
        experiment,
        LinearSlope(metric, method, x, scale, predicted_slope),
        (1 - rel_tol, 1 + rel_tol),
        **check,
    )


def comparison_check(
    name: str,
    experiment: str,
    metric: str,
    better: str,
    worse: str,
    *,
    every: str | tuple[str, ...] | None = None,
    **check,
) -> Claim:
    """Two methods on the same replicates: the paired difference metric(``better``) −
    metric(``worse``) (:class:`Difference`) is < 0 (PASS when the whole interval is below 0),
    at one point or at every value of the ``every`` axes."""
    return Claim(
        name,
        experiment,
        Difference(metric, better, worse),
        (-math.inf, 0.0),
        over=Every(every) if every else At(),
        **check,
    )


def level_check(
    name: str,
    experiment: str,
    metric: str,
    method: str,
    prediction: Callable[[dict], float],
    lo: float,
    hi: float,
    *,
    at: tuple[str, ...] = (),
    root: bool = False,
    formula: str = "",
    **check,
) -> Claim:
    """A metric's level against an independent closed form, at every value of the ``at`` axes
    (one point when empty): the check that pins a mechanism's calibration.

    r = mean(``metric``)/mean(prediction) over the rows of ``method`` (:class:`Mean`; to the
    power ½ with ``root``, an RMS ratio from mean squares); ``prediction(point)`` is a function
    of the row's grid values only (:func:`predictions`), evaluated when the check is judged,
    e.g. the exact variance of the released noise from (ε, n, p). The region [``lo``,
    ``hi``] is the closed form's model error (1 when it is exact), two-sided, so a noise scale
    off by a factor in either direction fails. ``formula``: the prediction as printed."""
    return Claim(
        name,
        experiment,
        Mean(metric, method, root),
        (lo, hi),
        over=Every(at) if at else At(),
        prediction=prediction,
        formula=formula,
        **check,
    )


def ratio_check(
    name: str,
    experiment: str,
    metric: str,
    method: str,
    axis: str,
    numerator,
    denominator,
    lo: float,
    hi: float,
    *,
    root: bool = False,
    paired_on: tuple[str, ...] | None = None,
    **check,
) -> Claim:
    """The ratio of ``metric``'s mean between two values of ``axis`` (:class:`SliceRatio`) lies
    in [``lo``, ``hi``]."""
    return Claim(
        name,
        experiment,
        SliceRatio(metric, method, axis, numerator, denominator, root, paired_on),
        (lo, hi),
        **check,
    )


def ratio_slope_check(
    name: str,
    experiment: str,
    metric: str,
    method: str,
    axis: str,
    numerator,
    denominator,
    x: str,
    predicted: float,
    tolerance: float,
    *,
    root: bool = False,
    paired_on: tuple[str, ...] | None = None,
    **check,
) -> Claim:
    """The slope in log ``x`` of the log ratio between two values of ``axis``
    (:class:`SliceRatio` :class:`Along` ``x``) lies within ``tolerance`` of ``predicted``."""
    return Claim(
        name,
        experiment,
        SliceRatio(metric, method, axis, numerator, denominator, root, paired_on),
        (predicted - tolerance, predicted + tolerance),
        over=Along(x),
        center=predicted,
        **check,
    )


def column_ratio_check(
    name: str,
    experiment: str,
    metric: str,
    reference: str,
    method: str,
    lo: float,
    hi: float,
    *,
    root: bool = True,
    **check,
) -> Claim:
    """Two columns of the same rows: (mean ``metric``/mean ``reference``)^(½ with ``root``)
    (:class:`ColumnRatio`, e.g. a simulated MSE over its predicted value) lies in [``lo``,
    ``hi``]."""
    return Claim(name, experiment, ColumnRatio(metric, reference, method, root), (lo, hi), **check)


def predicted_ratio_check(
    name: str,
    experiment: str,
    metric: str,
    prediction: str,
    method: str,
    axis: str,
    numerator,
    denominator,
    lo: float,
    hi: float,
    *,
    root: bool = True,
    paired_on: tuple[str, ...] = ("rep",),
    **check,
) -> Claim:
    """A simulated ratio between two values of ``axis`` over the same ratio of the
    ``prediction`` column (:class:`SliceRatio` with a reference) lies in [``lo``, ``hi``]."""
    return Claim(
        name,
        experiment,
        SliceRatio(
            metric, method, axis, numerator, denominator, root, paired_on, reference=prediction
        ),
        (lo, hi),
        **check,
    )


def method_ratio_check(
    name: str,
    experiment: str,
    metric: str,
    numerator: str,
    denominator: str,
    lo: float,
    hi: float,
    *,
    root: bool = False,
    square: bool = False,
    **check,
) -> Claim:
    """mean(metric | ``numerator``)/mean(metric | ``denominator``) on the same replicates
    (:class:`MethodRatio`; ``root``: its square root; ``square``: square the metric first)
    lies in [``lo``, ``hi``]."""
    return Claim(
        name,
        experiment,
        MethodRatio(metric, numerator, denominator, root, square),
        (lo, hi),
        **check,
    )


def method_ratio_slope_check(
    name: str,
    experiment: str,
    *,
    metric: str = "mse",
    numerator: str,
    denominator: str,
    x: str,
    g: Callable[[float], float] | None = None,
    g_label: str = "g",
    predicted: float = 1.0,
    tolerance: float = 0.1,
    region: tuple[float, float] | None = None,
    root: bool = True,
    square: bool = False,
    **check,
) -> Claim:
    """How the ratio of two methods grows with ``x`` or a known function ``g`` of it (e.g. a
    randomized-response factor (e^ε + 1)/(e^ε − 1) of ε): the slope of the log
    :class:`MethodRatio` (RMS ratio by default) on log g(x) (:class:`Along`) lies within
    ``tolerance`` of ``predicted``, or in ``region`` when given (e.g. (−∞, 0]: the ratio
    falls)."""
    center = None if region is not None else predicted
    region = region if region is not None else (predicted - tolerance, predicted + tolerance)
    return Claim(
        name,
        experiment,
        MethodRatio(metric, numerator, denominator, root, square),
        region,
        over=Along(x, g, g_label),
        center=center,
        **check,
    )


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

    def names_read(self):
        return {
            "columns": tuple(self.metrics),
            "axes": (*self.where, *self.pool, self.axis),
            "methods": self.methods,
        }

    def estimate(self, rows):
        keys = [c for c in grid_columns(rows) if c != self.axis] + ["rep"]
        joined = paired(
            rows,
            {
                f"{m}_{side}": ({self.axis: [value]}, m)
                for side, value in (("a", self.a), ("b", self.b))
                for m in self.metrics
            },
            on=keys,
            dropna=False,
        )
        if len(joined) == 0:
            raise UsageError(
                f"check {self.name!r}: no paired rows of {self.axis}={self.a!r} and {self.b!r}"
            )
        diff = np.stack(
            [
                np.abs(joined[f"{m}_a"].to_numpy(float) - joined[f"{m}_b"].to_numpy(float))
                for m in self.metrics
            ],
            axis=1,
        )
        mismatch = int(np.sum(np.any(~(diff <= self.tol), axis=1)))
        detail = {m: float(np.nanmax(diff[:, i])) for i, m in enumerate(self.metrics)}
        worst = ", ".join(f"max |Δ{m}| {v:.1e}" for m, v in detail.items())
        return Estimate(
            float(mismatch),
            float(mismatch),
            float(mismatch),
            0.0,
            0.0,
            "0 mismatches",
            f"{mismatch} mismatches",
            f"{len(joined)} paired replicates × grid points; {worst}",
            _reps(rows),
            detail=detail,
        )


# ---------------------------------------------------------------------------------------
