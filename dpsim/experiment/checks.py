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
thresholds scale against a theorem's rate). Verdicts are
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
from dpsim.engine.judgement.deferred import Deferred, deferred_entries, deferred_table, resolved  # noqa: F401
from dpsim.engine.judgement.statistics import (ColumnRatio, Difference, LinearSlope, Mean, MethodRatio,  # noqa: F401
                                         SliceRatio, Slope, Value, crossing, exp_interval, isotonic,
                                         log_ratio_between, log_ratio_of_means, paired, predictions,
                                         threshold_observations, threshold_slope, wilson)
from dpsim.engine.presentation.summary import (Z95, SlopeFit, describe_values, grid_columns, require_unpooled, select,
                                      slope_fit)
from dpsim.engine.judgement.verdicts import (UNCONVERGED_LIMIT, VERDICTS, Check, CheckResult, Estimate,  # noqa: F401
                                       _interval, _reps, family_z, format_region, judge, stage_share, widened)

__all__ = ["UNCONVERGED_LIMIT", "VERDICTS", "Check", "CheckResult", "Estimate", "family_z", "format_region", "judge",
           "stage_share",
           "widened", "Deferred", "deferred_entries", "deferred_table", "crossing", "isotonic", "log_ratio_between",
           "log_ratio_of_means", "exp_interval", "paired", "predictions", "wilson",
           "Claim", "At", "Every", "Along", "Value", "Mean", "MethodRatio", "ColumnRatio", "SliceRatio", "Difference",
           "Slope", "LinearSlope", "slope_check", "slope_range_check", "trend_check", "linear_slope_check",
           "comparison_check", "level_check", "ratio_check", "ratio_slope_check", "column_ratio_check",
           "predicted_ratio_check", "method_ratio_check", "method_ratio_slope_check", "IdenticalAcrossCheck",
           "ThresholdCollapseCheck", "Solve", "ThresholdScalingCheck"]


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


def _fmt(value) -> str:
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
        axes = [*self.where, *self.pool, *self.over.axes, *getattr(self._pooled_statistic(), "spans", ()),
                *(a for a in (getattr(statistic, "paired_on", None) or ()) if a != "rep")]
        return {"columns": tuple(c for c in columns if isinstance(c, str)), "axes": tuple(axes),
                "methods": tuple(self.methods)}

    def mapped(self):
        return (*self.where, *self.pool, *self.over.axes, *getattr(self._pooled_statistic(), "spans", ()), "method")

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
        for key, part in rows.groupby(list(axes), sort=True):          # a missing axis value is not a point
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
        shown = ""
        if values[0][2].log:
            shown = "; " + ", ".join(f"{v.natural:.3g}" for _, _, v in values)
        n_obs = sum(v.n for _, _, v in values)
        used = f"{self.over.axis} ∈ {{{describe_values(list(xs))}}}"
        return Estimate(slope, low, high, lo, hi, self._expected(True), f"{slope:+.3f} {_interval(low, high)}",
                        f"slope of {what} on {on}, {used}{shown}, {n_obs} obs", _reps(rows),
                        detail=SlopeFit(slope, se, low, high, len(xs), n_obs, used))

    def estimate(self, rows):
        statistic = self._pooled_statistic()         # a slope: one intercept per where/pool axis
        if statistic is not self.statistic:
            return dataclasses.replace(self, statistic=statistic).estimate(rows)
        require_unpooled(rows, self.mapped(), f"check {self.name!r}")
        what = self.statistic.describe() + (f" / {self.formula or 'prediction'}" if self.prediction else "")
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
        return Estimate(value, low, high, lo, hi, self._expected(not log), fitted, evidence, _reps(rows),
                        points=tuple((p[1], p[2], p[3]) for p in points),
                        detail=pd.DataFrame(points, columns=["at", "value", "low", "high", "n"]))


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


def pinned_claim(name: str, experiment: str, statistic, rel_se: float, *, prediction, formula: str,
                 description: str, reps, at: tuple = (), widths: float = 6.0, **check) -> Claim:
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
    return Claim(name, experiment, statistic, (lo, hi), over=Every(at) if at else At(), prediction=prediction,
                 formula=formula, description=f"{description}; {made}", **check)


def slope_check(name: str, experiment: str, metric: str, method: str, x: str, predicted: float, tolerance: float,
                *, log_y: bool = True, **check) -> Claim:
    """The log–log slope of ``metric`` of ``method`` in ``x`` (replicate rows, :class:`Slope`)
    lies within ``tolerance`` of ``predicted``: the tolerance covers the rate's lower-order
    terms over the grid region; the interval is the Monte-Carlo error (HC1). ``check``: the
    :class:`~dpsim.engine.judgement.verdicts.Check` keywords (where, pool, description, …); the
    axes in ``where`` and ``pool`` get one intercept per value."""
    return Claim(name, experiment, _slope(metric, method, x, log_y, check), (predicted - tolerance,
                 predicted + tolerance), center=predicted, **check)


def slope_range_check(name: str, experiment: str, metric: str, method: str, x: str, low: float, high: float,
                      *, log_y: bool = True, **check) -> Claim:
    """The log–log slope (:func:`slope_check`) lies in [``low``, ``high``] (e.g. between the
    slopes of a rate's two terms, on a grid that straddles their crossover)."""
    return Claim(name, experiment, _slope(metric, method, x, log_y, check), (low, high), **check)


def trend_check(name: str, experiment: str, metric: str, method: str, x: str, sign: int,
                *, log_y: bool = True, **check) -> Claim:
    """The log–log slope (:func:`slope_check`) has the predicted sign (−1: decreasing, +1:
    increasing)."""
    region = (-math.inf, 0.0) if sign < 0 else (0.0, math.inf)
    return Claim(name, experiment, _slope(metric, method, x, log_y, check), region, **check)


def _slope(metric, method, x, log_y, check) -> Slope:
    return Slope(metric, method, x, log_y)


def linear_slope_check(name: str, experiment: str, *, metric: str, method: str, x: str, scale: str | None = None,
                       predicted_slope: float, rel_tol: float = 0.1, **check) -> Claim:
    """The slope of mean(``scale``·``metric``) in ``x`` itself (e.g. n·MSE linear in the
    dimension, :class:`LinearSlope`) over ``predicted_slope`` lies in [1 − ``rel_tol``,
    1 + ``rel_tol``]."""
    return Claim(name, experiment, LinearSlope(metric, method, x, scale, predicted_slope),
                 (1 - rel_tol, 1 + rel_tol), **check)


def comparison_check(name: str, experiment: str, metric: str, better: str, worse: str, *,
                     every: str | tuple[str, ...] | None = None, **check) -> Claim:
    """Two methods on the same replicates: the paired difference metric(``better``) −
    metric(``worse``) (:class:`Difference`) is < 0 (PASS when the whole interval is below 0),
    at one point or at every value of the ``every`` axes."""
    return Claim(name, experiment, Difference(metric, better, worse), (-math.inf, 0.0),
                 over=Every(every) if every else At(), **check)


def level_check(name: str, experiment: str, metric: str, method: str, prediction: Callable[[dict], float],
                lo: float, hi: float, *, at: tuple[str, ...] = (), root: bool = False, formula: str = "",
                **check) -> Claim:
    """A metric's level against an independent closed form, at every value of the ``at`` axes
    (one point when empty): the check that pins a mechanism's calibration.

    r = mean(``metric``)/mean(prediction) over the rows of ``method`` (:class:`Mean`; to the
    power ½ with ``root``, an RMS ratio from mean squares); ``prediction(point)`` is a function
    of the row's grid values only (:func:`predictions`), evaluated when the check is judged,
    e.g. the exact variance of the released noise from (ε, n, p). The region [``lo``,
    ``hi``] is the closed form's model error (1 when it is exact), two-sided, so a noise scale
    off by a factor in either direction fails. ``formula``: the prediction as printed."""
    return Claim(name, experiment, Mean(metric, method, root), (lo, hi), over=Every(at) if at else At(),
                 prediction=prediction, formula=formula, **check)


def ratio_check(name: str, experiment: str, metric: str, method: str, axis: str, numerator, denominator,
                lo: float, hi: float, *, root: bool = False, paired_on: tuple[str, ...] | None = None,
                **check) -> Claim:
    """The ratio of ``metric``'s mean between two values of ``axis`` (:class:`SliceRatio`) lies
    in [``lo``, ``hi``]."""
    return Claim(name, experiment, SliceRatio(metric, method, axis, numerator, denominator, root, paired_on),
                 (lo, hi), **check)


def ratio_slope_check(name: str, experiment: str, metric: str, method: str, axis: str, numerator, denominator,
                      x: str, predicted: float, tolerance: float, *, root: bool = False,
                      paired_on: tuple[str, ...] | None = None, **check) -> Claim:
    """The slope in log ``x`` of the log ratio between two values of ``axis``
    (:class:`SliceRatio` :class:`Along` ``x``) lies within ``tolerance`` of ``predicted``."""
    return Claim(name, experiment, SliceRatio(metric, method, axis, numerator, denominator, root, paired_on),
                 (predicted - tolerance, predicted + tolerance), over=Along(x), center=predicted, **check)


def column_ratio_check(name: str, experiment: str, metric: str, reference: str, method: str, lo: float, hi: float,
                       *, root: bool = True, **check) -> Claim:
    """Two columns of the same rows: (mean ``metric``/mean ``reference``)^(½ with ``root``)
    (:class:`ColumnRatio`, e.g. a simulated MSE over its predicted value) lies in [``lo``,
    ``hi``]."""
    return Claim(name, experiment, ColumnRatio(metric, reference, method, root), (lo, hi), **check)


def predicted_ratio_check(name: str, experiment: str, metric: str, prediction: str, method: str, axis: str,
                          numerator, denominator, lo: float, hi: float, *, root: bool = True,
                          paired_on: tuple[str, ...] = ("rep",), **check) -> Claim:
    """A simulated ratio between two values of ``axis`` over the same ratio of the
    ``prediction`` column (:class:`SliceRatio` with a reference) lies in [``lo``, ``hi``]."""
    return Claim(name, experiment, SliceRatio(metric, method, axis, numerator, denominator, root, paired_on,
                                              reference=prediction), (lo, hi), **check)


def method_ratio_check(name: str, experiment: str, metric: str, numerator: str, denominator: str, lo: float,
                       hi: float, *, root: bool = False, square: bool = False, **check) -> Claim:
    """mean(metric | ``numerator``)/mean(metric | ``denominator``) on the same replicates
    (:class:`MethodRatio`; ``root``: its square root; ``square``: square the metric first)
    lies in [``lo``, ``hi``]."""
    return Claim(name, experiment, MethodRatio(metric, numerator, denominator, root, square), (lo, hi), **check)


def method_ratio_slope_check(name: str, experiment: str, *, metric: str = "mse", numerator: str, denominator: str,
                             x: str, g: Callable[[float], float] | None = None, g_label: str = "g",
                             predicted: float = 1.0, tolerance: float = 0.1,
                             region: tuple[float, float] | None = None, root: bool = True, square: bool = False,
                             **check) -> Claim:
    """How the ratio of two methods grows with ``x`` or a known function ``g`` of it (e.g. a
    randomized-response factor (e^ε + 1)/(e^ε − 1) of ε): the slope of the log
    :class:`MethodRatio` (RMS ratio by default) on log g(x) (:class:`Along`) lies within
    ``tolerance`` of ``predicted``, or in ``region`` when given (e.g. (−∞, 0]: the ratio
    falls)."""
    center = None if region is not None else predicted
    region = region if region is not None else (predicted - tolerance, predicted + tolerance)
    return Claim(name, experiment, MethodRatio(metric, numerator, denominator, root, square), region,
                 over=Along(x, g, g_label), center=center, **check)


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
        return {"columns": tuple(self.metrics), "axes": (*self.where, *self.pool, self.axis), "methods": self.methods}

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
    of the right rate (e.g. docs/cai.md, Predictions (item 5): P(exact top-k recovery) against Δ / r_E).

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

    def names_read(self):
        return {"columns": (self.metric, self.x, *self.configs), "axes": (*self.where, *self.pool),
                "methods": self.methods}

    def mapped(self):
        return (*self.where, *self.pool, *self.configs, self.metric, self.x)

    def estimate(self, rows):
        require_unpooled(rows, self.mapped(), f"check {self.name!r}")
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
        # check cannot PASS until the grid of x is extended (an honest interval).
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


# ---------------------------------------------------------------------------------------
# Solved thresholds against a theorem's rate
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Solve:
    """The solve a check needs (``dpsim solve``, :mod:`dpsim.engine.solving.solve`): the value of
    ``axis`` where mean(METRIC of METHOD) = VALUE (``target`` 'METRIC@METHOD=VALUE') for every
    configuration of the other axes, searched in ``within`` (default: the axis's values),
    with ``overrides`` of the experiment's axes; ``increasing``: the metric grows along the
    axis (a recovery rate against a gap), which says on which side of the interval searched
    a root that was not bracketed lies."""

    axis: str
    target: str
    within: tuple[float, float] | None = None
    overrides: tuple[tuple[str, tuple], ...] = ()
    increasing: bool = True

    def __post_init__(self):
        if isinstance(self.overrides, dict):
            object.__setattr__(self, "overrides", tuple((k, tuple(v)) for k, v in self.overrides.items()))

    def override_dict(self) -> dict:
        return {k: list(v) for k, v in self.overrides}


@dataclass(frozen=True)
class ThresholdScalingCheck(Check):
    """Solved thresholds scale as a theorem's rate: the slope of log(threshold / rate) on log
    ``x`` (one intercept per group of the other configuration axes ``by``; weighted least
    squares with each root's interval, :func:`~dpsim.engine.judgement.statistics.threshold_slope`)
    lies in ``region``. "Threshold ≍ rate" says the ratio is constant up to constants, so the
    predicted slope is 0, within a tolerance the check states from the lower-order terms the
    "≍" hides over the range of ``x`` (chosen before the data). A negative control uses a
    wrong rate and the side of the complement theory predicts for it (e.g. region (0.15, ∞)).

    Why a slope rather than the spread max/min of the ratio: the theorem claims a scaling in
    ``x``; constants that differ between groups (a (1 − p/2) variance factor, the Laplace
    tails' cost per unit of rate) move a spread but not a within-group slope, and a slope
    pools every group's evidence into one number whose interval shrinks with replicates.

    Censored roots (not bracketed: the target never reached in the interval searched) are
    bounds, never values: they enter at their bound, and the interval is infinite on the
    side they could push the slope (so such a check is INCONCLUSIVE, or FAILs when even the
    bound lies outside). ``reach`` = (a, b) restricts the judged configurations to those
    whose interval searched, in units of ``reach_rate`` (default ``rate``), covers [a, b],
    where theory puts the threshold: a rule on the grid alone (the same at every seed),
    the left-out configurations counted in the evidence.

    Judged on a solve's roots (:meth:`evaluate_roots`), not on a grid's rows: ``dpsim
    verify`` solves ``solve`` into RUNS/<experiment>-solve-<axis> and judges there.
    """

    solve: Solve
    x: str
    by: tuple[str, ...]
    rate: Callable[[dict], float]
    region: tuple[float, float]
    _: KW_ONLY
    formula: str = "rate"
    reach: tuple[float, float] | None = None
    reach_rate: Callable[[dict], float] | None = None
    center: float | None = None

    def names_read(self):
        metric, _, method = self.solve.target.partition("=")[0].partition("@")
        return {"columns": (metric.strip(),), "axes": (*self.where, self.solve.axis, self.x, *self.by),
                "methods": (method.strip(),) if method.strip() else ()}

    def evaluate(self, table, family: int = 1, stage: int = 1, stages: int = 1):
        raise UsageError(f"check {self.name!r} is judged on the roots of a solve "
                         f"(`dpsim solve {self.experiment} --for {self.solve.axis}`), not on a grid's rows")

    def search(self, roots: pd.DataFrame) -> tuple[float, float] | None:
        if "searched_low" in roots:
            return None
        if self.solve.within is not None:
            return tuple(self.solve.within)
        return None

    def observations(self, roots: pd.DataFrame, search: tuple[float, float] | None = None) -> pd.DataFrame:
        """The judged configurations' observations (:func:`threshold_observations`), with a
        ``reached`` column (the ``reach`` rule)."""
        roots = select(roots, self.where).reset_index(drop=True)
        if roots.empty:
            raise UsageError(f"check {self.name!r}: no roots where {dict(self.where)}")
        configs = [*self.by, self.x]
        level = float(roots["level"].iloc[0]) if "level" in roots else 0.95
        search = search or self.search(roots)
        obs = threshold_observations(roots, configs, rate=self.rate, increasing=self.solve.increasing,
                                     search=search, level=level)
        obs["lanes"] = roots["lanes"].to_numpy() if "lanes" in roots else 0
        obs["reached"] = True
        if self.reach is not None:
            lows = roots["searched_low"].to_numpy(float) if "searched_low" in roots else np.full(len(roots), search[0])
            highs = roots["searched_high"].to_numpy(float) if "searched_high" in roots else np.full(len(roots), search[1])
            scale = self.reach_rate or self.rate
            rates = np.array([float(scale(row.to_dict())) for _, row in roots.iterrows()])
            obs["reached"] = (lows / rates <= self.reach[0]) & (highs / rates >= self.reach[1])
        return obs

    def evaluate_roots(self, roots: pd.DataFrame, family: int = 1, *,
                       search: tuple[float, float] | None = None) -> CheckResult:
        """The check's result on a solve's roots table (one row per configuration; see
        :func:`~dpsim.engine.judgement.statistics.threshold_observations`); ``search``: the interval
        searched when the table has no search columns (default ``solve.within``)."""
        est = self.with_predictions().estimate_roots(roots, search)
        fit = est.detail["slope"]
        # censored: a wider search decides, not replicates; inflated: the interval is the
        # groups' spread (se ∝ √(χ²/dof)·se_MC does not shrink with replicates)
        replicates_decide = fit.inflation <= 1 and math.isfinite(est.low) and math.isfinite(est.high)
        return self.result(est, family, needed=replicates_decide)

    def estimate_roots(self, roots: pd.DataFrame, search: tuple[float, float] | None = None) -> Estimate:
        obs = self.observations(roots, search)
        kept = obs[obs["reached"]]
        left = len(obs) - len(kept)
        fit = threshold_slope(kept, self.x, self.by)
        lo, hi = self.region
        expected = (f"{self.center:+.3g} ± {(hi - lo) / 2:.2g}" if self.center is not None
                    else format_region(lo, hi, signed=True))
        bound = "" if math.isfinite(fit.low) and math.isfinite(fit.high) else \
            ("≥ " if math.isinf(fit.high) and math.isfinite(fit.low) else "≤ " if math.isfinite(fit.high) else "")
        fitted = f"{bound}{fit.slope:+.3f} {_interval(fit.low, fit.high)}"
        evidence = (f"slope of log(threshold / {self.formula}) on log {self.x}, {self.x} ∈ "
                    f"{{{describe_values(list(kept[self.x]))}}}, one intercept per {', '.join(self.by) or 'all'} "
                    f"({fit.groups} groups); {fit.values} solved, {fit.lower} only bounded below, "
                    f"{fit.upper} only bounded above, {fit.unknown} unknown of {len(kept)} configurations; "
                    f"χ²/dof {fit.chi2:.1f}/{fit.dof}" + (f", interval × {fit.inflation:.2g} (√(χ²/dof))"
                                                          if fit.inflation > 1 else ""))
        if left:
            evidence += (f"; {left} of {len(obs)} configurations left out, their interval searched not covering "
                         f"{self.reach[0]:g}–{self.reach[1]:g}× the rate")
        if fit.censored and not (math.isfinite(fit.low) and math.isfinite(fit.high)):
            evidence += "; censored roots make the interval open: widen the search to decide"
        reps = max(int(kept["lanes"].sum()), 1)              # a solve's replicates (lanes), all configurations
        return Estimate(fit.slope, fit.low, fit.high, lo, hi, expected, fitted, evidence, reps,
                        detail={"slope": fit, "observations": obs})

    def figure(self, roots: pd.DataFrame, search: tuple[float, float] | None = None):
        """The solved thresholds against ``x`` with their intervals, one curve per group of
        ``by`` (panels by its first axis, colours by the others), roots not bracketed drawn as
        arrows from their bound (hollow: left out by ``reach``), and the theorem's curve
        C·rate(config) with one constant C for every curve (the weighted mean of
        threshold/rate over the solved ones, on the log scale). Returns a matplotlib Figure."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        obs = self.observations(roots, search)
        selected = select(roots, self.where).reset_index(drop=True)
        values = obs[obs["kind"] == "value"]
        if values.empty:
            raise UsageError(f"check {self.name!r}: no solved threshold to draw")
        w = 1.0 / values["se"].to_numpy(float) ** 2
        constant = math.exp(float(np.sum(w * values["y"].to_numpy(float)) / np.sum(w)))
        panel_axis, colour_axes = (self.by[0], self.by[1:]) if self.by else (None, ())
        panels = sorted(obs[panel_axis].unique()) if panel_axis else [None]
        fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 1.2, 4.2), sharey=True, squeeze=False)
        colours = obs[list(colour_axes)].drop_duplicates().sort_values(list(colour_axes)) if colour_axes else None
        cmap = plt.get_cmap("viridis")
        xs_all = np.sort(obs[self.x].unique().astype(float))
        dense = np.geomspace(xs_all[0], xs_all[-1], 60)
        for ax, panel in zip(axes[0], panels):
            part = obs if panel_axis is None else obs[obs[panel_axis] == panel]
            keys = [()] if colours is None else [tuple(r) for r in colours.itertuples(index=False, name=None)]
            for i, key in enumerate(keys):
                curve = part
                for a, v in zip(colour_axes, key):
                    curve = curve[curve[a] == v]
                if curve.empty:
                    continue
                colour = cmap(i / max(len(keys) - 1, 1))
                label = ", ".join(f"{a}={_fmt(v)}" for a, v in zip(colour_axes, key)) or None
                val = curve[curve["kind"] == "value"].sort_values(self.x)
                on = val[val["reached"]]
                ax.errorbar(on[self.x], on["root"], yerr=[on["root"] - on["low"], on["high"] - on["root"]],
                            fmt="o", color=colour, ms=4, capsize=2, label=label)
                off = val[~val["reached"]]
                ax.errorbar(off[self.x], off["root"], yerr=[off["root"] - off["low"], off["high"] - off["root"]],
                            fmt="o", mfc="none", color=colour, ms=4, capsize=2, alpha=0.6)
                for kind, marker in (("lower", "^"), ("upper", "v")):
                    cens = curve[curve["kind"] == kind]
                    for reached, face in ((True, colour), (False, "none")):
                        pts = cens[cens["reached"] == reached]
                        ax.scatter(pts[self.x], pts["root"], marker=marker, s=40, facecolors=face, edgecolors=colour)
                point = selected.loc[curve.index[0]].to_dict()           # obs and selected share one index
                ax.plot(dense, [constant * float(self.rate({**point, self.x: x})) for x in dense], "-",
                        color=colour, lw=1, alpha=0.8)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(xs_all, [_fmt(float(v)) for v in xs_all])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set_xlabel(self.x)
            ax.set_title(f"{panel_axis}={_fmt(panel)}" if panel_axis else "")
            ax.grid(True, which="both", alpha=0.25)
        axes[0][0].set_ylabel(f"solved {self.solve.axis} ({self.solve.target})")
        handles, labels = axes[0][0].get_legend_handles_labels()
        if handles:
            fig.legend(handles, labels, loc="center right", fontsize=8, frameon=False)
        fig.suptitle(f"{self.name}: solved thresholds and {constant:.3g}·{self.formula}\n"
                     f"(95% CI; ▲ only bounded below, ▼ above; hollow: left out)", fontsize=9)
        fig.tight_layout(rect=(0, 0, 0.86 if handles else 1, 0.92))
        return fig
