"""The statistics checks are built from: the one pairing helper (:func:`paired`), the one
delta-method ratio helper (:func:`log_ratio_of_means`), predictions evaluated from the grid
at verify time (:func:`predictions`), ratios between two slices of an axis
(:func:`log_ratio_between`), the phase-transition helpers (isotonic regression, Wilson
bands, crossing points), and the composable statistics a
:class:`~dpsim.experiment.checks.Claim` judges, each one number with its standard error
(:class:`Value`):

* levels and ratios (log scale): :class:`Mean` (of a metric, or of its square: an RMS),
  :class:`MethodRatio` (two methods, paired), :class:`ColumnRatio` (two columns of the same
  rows), :class:`SliceRatio` (two values of an axis);
* differences (linear): :class:`Difference` (two methods, paired);
* slopes (linear): :class:`Slope` (log–log over replicate rows), :class:`LinearSlope` (of
  grid means, on the axis itself).

Judging an estimate against a region is :mod:`dpsim.experiment.verdicts`' job.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from dpsim.errors import UsageError
from dpsim.experiment.summary import (Z95, describe_values, grid_columns, loglog_slope, select, slope_fit,
                                      wilson_interval)


# Paired observations
def paired(rows: pd.DataFrame, series: Mapping[str, tuple[Mapping[str, Sequence], str]],
           on: Sequence[str] = ("point", "rep"), *, dropna: bool = True) -> pd.DataFrame:
    """Several series aligned on the same observations (the one pairing helper).

    Args:
        rows: results rows.
        series: label → (where, column): the values of ``column`` on the rows
            ``select(rows, where)``, e.g. ``{"a": ({"method": ["mle"]}, "l2")}`` or
            ``{"a": ({"eps": [1.0]}, "mse")}``.
        on: the columns that identify one observation (default: one replicate at one grid
            point; two slices of an axis are paired on the replicate, ``("rep",)``).
        dropna: drop the observations where some series has no value.
    Returns:
        One row per key present in every series (inner join), one column per label.
    Raises:
        UsageError: a missing column, or a key repeated within one series (an axis varying
            inside it): nothing is averaged silently.
    """
    keys = list(on)
    parts = []
    for label, (where, column) in series.items():
        part = select(rows, where)
        missing = [c for c in (column, *keys) if c not in part]
        if missing:
            raise UsageError(f"no column {missing[0]!r} in the results table")
        part = part.set_index(keys)[column].rename(label)
        if not part.index.is_unique:
            raise UsageError(f"rows are not unique on {tuple(keys)} where {dict(where)}; narrow `where`")
        parts.append(part)
    joined = pd.concat(parts, axis=1, join="inner")
    return joined.dropna() if dropna else joined


def log_ratio_of_means(columns, signs, *, scale: float = 1.0, what: str = "the series") -> tuple[float, float]:
    """``scale`` · log Π_j mean(c_j)^{s_j} and its delta-method standard error (the one
    ratio-of-means helper).

    Args:
        columns: (N, J) paired observations of J series (row i of every column from the
            same observation, e.g. :func:`paired`), or (N,) for one series.
        signs: (J,) the exponents s_j, e.g. (1, −1) for mean(c₁)/mean(c₂).
        scale: ½ for the log of a square root (an RMS ratio from mean squares).
        what: names the series in error messages.
    Returns:
        (log ratio, standard error): with g = s / means and Σ the sample covariance (ddof 1)
        of the columns, var = gᵀΣg / N, so the covariance of paired series enters (one
        series alone gives var/(N·mean²); independent samples add their variances).
    """
    columns = np.asarray(columns, float)
    columns = columns[:, None] if columns.ndim == 1 else columns
    signs = np.atleast_1d(np.asarray(signs, float))
    n = columns.shape[0]
    if n < 2:
        raise UsageError(f"need at least two paired observations of {what}")
    means = columns.mean(axis=0)
    if not np.all(means > 0):
        raise UsageError(f"a mean of {what} is not positive; cannot take a ratio")
    grad = signs / means
    cov = np.atleast_2d(np.cov(columns, rowvar=False, ddof=1))
    var = float(grad @ cov @ grad) / n
    return scale * float(signs @ np.log(means)), scale * math.sqrt(max(var, 0.0))


def exp_interval(log_r: float, se: float) -> tuple[float, float, float]:
    """(ratio, low, high): the 95% interval of a log ratio, exponentiated."""
    return math.exp(log_r), math.exp(log_r - Z95 * se), math.exp(log_r + Z95 * se)


# Levels against a closed form evaluated from the grid
def predictions(rows: pd.DataFrame, prediction: Callable[[dict], float]) -> np.ndarray:
    """``prediction`` evaluated at each row's grid point (one call per distinct point).

    The function sees only the grid axes of the table (:func:`~dpsim.experiment.summary.grid_columns`:
    the axes' values, never a method's output or a host-derived value such as a σ the
    mechanism computed), so a bug in the mechanism or in a helper it calls cannot move the
    prediction with the simulation.

    Returns:
        (len(rows),) float64.
    """
    axes = [c for c in grid_columns(rows) if c in rows]
    points = rows[axes].drop_duplicates().reset_index(drop=True)
    points["_prediction"] = [float(prediction(dict(zip(axes, values))))
                             for values in points.itertuples(index=False, name=None)]
    merged = rows[axes].reset_index(drop=True).merge(points, on=axes, how="left", sort=False)
    return merged["_prediction"].to_numpy(float)


# Ratios between two slices of an axis
def log_ratio_between(rows: pd.DataFrame, metric: str, axis: str, numerator, denominator, root: bool,
               paired_on: Sequence[str] | None) -> tuple[float, float, int]:
    """log(stat(numerator slice)/stat(denominator slice)), its delta-method standard error
    (:func:`log_ratio_of_means`) and the observations used.

    stat = mean(metric) (or √mean with ``root``). Independent slices: the variances of the
    two log means add. ``paired_on`` (e.g. ("rep",)) aligns the two slices on those columns
    (:func:`paired`) and includes their covariance.
    """
    scale = 0.5 if root else 1.0
    what = f"{metric!r} in {axis}={numerator!r} and {axis}={denominator!r}"
    if paired_on:
        joined = paired(rows, {"a": ({axis: [numerator]}, metric), "b": ({axis: [denominator]}, metric)},
                        on=paired_on)
        num, den = joined["a"], joined["b"]
    else:
        num = select(rows, {axis: [numerator]})[metric].dropna()
        den = select(rows, {axis: [denominator]})[metric].dropna()
    if len(num) < 2 or len(den) < 2:
        raise UsageError(f"need at least two rows of {metric!r} in each slice "
                         f"{axis}={numerator!r} and {axis}={denominator!r}")
    if paired_on:
        log_r, se = log_ratio_of_means(joined.to_numpy(float), (1.0, -1.0), scale=scale, what=what)
    else:
        log_num, se_num = log_ratio_of_means(num.to_numpy(float), (1.0,), scale=scale, what=what)
        log_den, se_den = log_ratio_of_means(den.to_numpy(float), (1.0,), scale=scale, what=what)
        log_r, se = log_num - log_den, math.hypot(se_num, se_den)
    return log_r, se, len(num) + len(den)


# Phase transitions
def isotonic(y, w):
    """Weighted least-squares non-decreasing fit (pool adjacent violators)."""
    blocks = []  # [mean, weight, length]
    for value, weight in zip(y, w):
        blocks.append([float(value), float(weight), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, n2 = blocks.pop()
            m1, w1, n1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, n1 + n2])
    return np.concatenate([np.full(n, m) for m, _, n in blocks])


def wilson(successes, n):
    """95% Wilson score interval of a binomial proportion (elementwise; the one helper is
    :func:`dpsim.experiment.summary.wilson_interval`)."""
    return wilson_interval(successes, n)


def crossing(x, y, level=0.5):
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


# Composable statistics (for :class:`dpsim.experiment.checks.Claim`): each estimates one
# number and its standard error on its own scale, optionally relative to a prediction
# evaluated from the grid (:func:`predictions`).
class _OfOneMethod:
    """A statistic of the rows of one method (its ``method`` field)."""

    @property
    def methods(self) -> tuple[str, ...]:
        return (self.method,)


@dataclass(frozen=True)
class Value:
    """One statistic's estimate on its scale: ``value`` and its standard error ``se`` (on the
    log scale when ``log``), from ``n`` observations; ``note``: which rows it used. :attr:`natural` and :meth:`interval`
    give it back on the natural scale."""

    value: float
    se: float
    n: int
    log: bool
    note: str = ""

    @property
    def natural(self) -> float:
        return math.exp(self.value) if self.log else self.value

    def interval(self, z: float = Z95) -> tuple[float, float]:
        lo, hi = self.value - z * self.se, self.value + z * self.se
        return (math.exp(lo), math.exp(hi)) if self.log else (lo, hi)


def _relative(rows: pd.DataFrame, prediction: Callable[[dict], float] | None) -> float:
    """The prediction at the rows' one grid point (log scale), for statistics that compare a
    single point's estimate with it; 0 without a prediction."""
    if prediction is None:
        return 0.0
    values = np.unique(predictions(rows, prediction))
    if len(values) != 1 or not (values[0] > 0 and math.isfinite(values[0])):
        raise UsageError(f"the prediction must be one positive finite value per judged point, got {values[:3]}")
    return math.log(values[0])


@dataclass(frozen=True)
class Mean(_OfOneMethod):
    """The mean of ``metric`` over the rows of ``method`` (its square root with ``root``: an
    RMS from mean squares; ``square`` squares the metric first, so ``root`` and ``square``
    give the RMS of a norm). With a prediction: mean(metric)/mean(prediction), the two paired
    per row (rows of several grid points may then be pooled). Log scale; delta method
    (:func:`log_ratio_of_means`)."""

    metric: str
    method: str
    root: bool = False
    square: bool = False

    def metric_values(self, rows: pd.DataFrame) -> np.ndarray:
        """The per-row values averaged: the ``metric`` column (a subclass may form them from
        several columns). Returns (len(rows),) float64."""
        return rows[self.metric].to_numpy(float)

    def describe(self) -> str:
        metric = f"{self.metric}²" if self.square and not self.root else self.metric
        return f"{'RMS' if self.root else 'mean'} {metric} of {self.method}"

    def estimate(self, rows: pd.DataFrame, prediction: Callable[[dict], float] | None = None) -> Value:
        mine = select(rows, {"method": [self.method]}) if "method" in rows else rows
        values = self.metric_values(mine)
        columns = [values * values if self.square else values]
        if prediction is not None:
            columns.append(predictions(mine, prediction))
        data = np.column_stack(columns)
        data = data[np.all(np.isfinite(data), axis=1)]
        log_r, se = log_ratio_of_means(data, (1.0, -1.0)[:data.shape[1]], scale=0.5 if self.root else 1.0,
                                       what=self.describe())
        return Value(log_r, se, len(data), True)


@dataclass(frozen=True)
class MethodRatio:
    """mean(metric | ``numerator``)/mean(metric | ``denominator``) on the same observations
    (:func:`paired`; their covariance enters the delta method); ``root``: the ratio of RMS
    (from mean squares); ``square``: square the metric first (a norm's RMS ratio with
    ``root``). With a prediction: over the predicted ratio at the point. Log scale."""

    metric: str
    numerator: str
    denominator: str
    root: bool = False
    square: bool = False

    @property
    def methods(self):
        return (self.numerator, self.denominator)

    def describe(self) -> str:
        return f"{'RMS ' if self.root else ''}ratio {self.numerator}/{self.denominator} of {self.metric}"

    def estimate(self, rows: pd.DataFrame, prediction: Callable[[dict], float] | None = None) -> Value:
        wide = paired(rows, {"a": ({"method": [self.numerator]}, self.metric),
                             "b": ({"method": [self.denominator]}, self.metric)}).to_numpy(float)
        if self.square:
            wide = wide * wide
        log_r, se = log_ratio_of_means(wide, (1.0, -1.0), scale=0.5 if self.root else 1.0, what=self.describe())
        return Value(log_r - _relative(rows, prediction), se, 2 * len(wide), True)


@dataclass(frozen=True)
class Difference:
    """mean of metric(``a``) − metric(``b``) on the same observations (:func:`paired`), normal
    standard error sd/√N. With a prediction: minus the predicted difference at the point.
    Linear scale."""

    metric: str
    a: str
    b: str

    @property
    def methods(self):
        return (self.a, self.b)

    def describe(self) -> str:
        return f"{self.metric}({self.a}) − {self.metric}({self.b})"

    def estimate(self, rows: pd.DataFrame, prediction: Callable[[dict], float] | None = None) -> Value:
        wide = paired(rows, {"a": ({"method": [self.a]}, self.metric), "b": ({"method": [self.b]}, self.metric)})
        diff = (wide["a"] - wide["b"]).to_numpy(float)
        if len(diff) < 2:
            raise UsageError(f"fewer than two paired observations of {self.describe()}")
        shift = 0.0
        if prediction is not None:
            values = np.unique(predictions(rows, prediction))
            if len(values) != 1:
                raise UsageError("the prediction must be one value per judged point")
            shift = float(values[0])
        return Value(float(diff.mean()) - shift, float(diff.std(ddof=1)) / math.sqrt(len(diff)), len(diff), False)


@dataclass(frozen=True)
class ColumnRatio(_OfOneMethod):
    """mean(``numerator``)/mean(``denominator``), two columns of the same rows of ``method``
    (e.g. a simulated MSE over its predicted value in another column), paired per row (their
    covariance enters the delta method); ``root``: its square root (an RMS ratio). Log
    scale."""

    numerator: str
    denominator: str
    method: str
    root: bool = False

    def describe(self) -> str:
        return f"{'RMS ratio' if self.root else 'ratio of means'} {self.numerator}/{self.denominator} of {self.method}"

    def estimate(self, rows: pd.DataFrame, prediction: Callable[[dict], float] | None = None) -> Value:
        for column in (self.numerator, self.denominator):
            if column not in rows:
                raise UsageError(f"no column {column!r} in the results table")
        mine = select(rows, {"method": [self.method]}) if "method" in rows else rows
        pairs = mine[[self.numerator, self.denominator]].dropna().to_numpy(float)
        log_r, se = log_ratio_of_means(pairs, (1.0, -1.0), scale=0.5 if self.root else 1.0,
                                       what=f"{self.numerator!r} and {self.denominator!r}")
        return Value(log_r - _relative(rows, prediction), se, len(pairs), True)


@dataclass(frozen=True)
class SliceRatio(_OfOneMethod):
    """stat(``axis`` = ``numerator``)/stat(``axis`` = ``denominator``) for ``metric`` of
    ``method``, stat = the mean (its square root with ``root``). Independent slices, or
    aligned on ``paired_on`` columns with their covariance (:func:`log_ratio_between`).

    With ``reference`` (a column of a predicted value per row): the simulated ratio over the
    same ratio of the reference column, the four series paired on ``paired_on`` (default the
    replicate) with their covariance. Log scale."""

    metric: str
    method: str
    axis: str
    numerator: object
    denominator: object
    root: bool = False
    paired_on: tuple[str, ...] | None = None
    reference: str | None = None

    @property
    def spans(self) -> tuple[str, ...]:
        return (self.axis,)

    @property
    def reads(self) -> dict:
        """The slices it reads (axis → its two values), within the check's rows."""
        return {self.axis: [self.numerator, self.denominator]}

    def describe(self) -> str:
        ratio = f"{self.axis} {_label(self.numerator)}/{_label(self.denominator)}"
        what = f"{'RMS ' if self.root else ''}ratio {ratio} of {self.metric}"
        return what + (f" over the same ratio of {self.reference}" if self.reference else "")

    def estimate(self, rows: pd.DataFrame, prediction: Callable[[dict], float] | None = None) -> Value:
        if prediction is not None:
            raise UsageError("a ratio between slices takes its prediction from a `reference` column")
        mine = select(rows, {"method": [self.method]}) if "method" in rows else rows
        if self.reference is None:
            log_r, se, n = log_ratio_between(mine, self.metric, self.axis, self.numerator, self.denominator,
                                             self.root, self.paired_on)
            return Value(log_r, se, n, True)
        num, den = {self.axis: [self.numerator]}, {self.axis: [self.denominator]}
        series = paired(mine, {"metric_a": (num, self.metric), "metric_b": (den, self.metric),
                               "reference_a": (num, self.reference), "reference_b": (den, self.reference)},
                        on=self.paired_on or ("rep",)).to_numpy(float)
        log_r, se = log_ratio_of_means(series, (1.0, -1.0, -1.0, 1.0), scale=0.5 if self.root else 1.0,
                                       what=f"{self.metric!r} and {self.reference!r}")
        return Value(log_r, se, len(series), True)


@dataclass(frozen=True)
class Slope(_OfOneMethod):
    """The slope of log ``metric`` (``metric`` itself with ``log_y=False``) on log ``x`` over
    the replicate-level rows of ``method``, with one intercept per value of each axis in
    ``per`` that varies (:func:`~dpsim.experiment.summary.loglog_slope`; HC1 standard
    error). Linear scale. ``per`` None (default): the axes of the Claim's ``where`` and
    ``pool`` (:meth:`pooled`)."""

    metric: str
    method: str
    x: str
    log_y: bool = True
    per: tuple[str, ...] | None = None

    def pooled(self, axes: tuple[str, ...]) -> "Slope":
        """This slope with one intercept per value of ``axes`` unless ``per`` was given."""
        return self if self.per is not None else dataclasses.replace(self, per=tuple(axes))

    @property
    def spans(self) -> tuple[str, ...]:
        return (self.x,)

    def describe(self) -> str:
        return f"slope of {'log ' if self.log_y else ''}{self.metric} of {self.method} on log {self.x}"

    def estimate(self, rows: pd.DataFrame, prediction: Callable[[dict], float] | None = None) -> Value:
        if prediction is not None:
            raise UsageError("a slope's prediction is its region")
        fit = loglog_slope(rows, self.metric, self.x, log_y=self.log_y, method=self.method, pool=self.per or ())
        return Value(fit.slope, fit.stderr, fit.n_obs, False, note=fit.rows)


@dataclass(frozen=True)
class LinearSlope(_OfOneMethod):
    """The slope in ``x`` itself (not its log) of the grid means of ``scale``·``metric`` of
    ``method`` (``scale`` a column, e.g. n_samples for n·MSE; None: 1), weighted least squares
    with the means' standard errors (:func:`~dpsim.experiment.summary.slope_fit`), divided
    by ``per`` (a predicted slope, so the region is relative to it). Linear scale."""

    metric: str
    method: str
    x: str
    scale: str | None = None
    per: float = 1.0

    @property
    def spans(self) -> tuple[str, ...]:
        return (self.x,)

    def describe(self) -> str:
        what = f"{self.scale}·{self.metric}" if self.scale else self.metric
        return f"WLS slope of mean {what} of {self.method} on {self.x} / {self.per:.4g}"

    def estimate(self, rows: pd.DataFrame, prediction: Callable[[dict], float] | None = None) -> Value:
        if prediction is not None:
            raise UsageError("a linear slope's prediction is `per`")
        mine = select(rows, {"method": [self.method]}) if "method" in rows else rows
        xs, means, ses, n = [], [], [], 0
        for value in sorted(mine[self.x].dropna().unique()):
            part = select(mine, {self.x: [value]})
            y = part[self.metric].to_numpy(float) * (part[self.scale].to_numpy(float) if self.scale else 1.0)
            y = y[np.isfinite(y)]
            xs.append(float(value))
            means.append(float(y.mean()))
            ses.append(float(y.std(ddof=1) / math.sqrt(len(y))))
            n += len(y)
        if len(xs) < 2:
            raise UsageError(f"need two values of {self.x!r} for a slope")
        slope, se = slope_fit(xs, means, y_se=ses)
        return Value(slope / self.per, se / abs(self.per), n, False,
                     note=f"slope {slope:.4g} on {self.x} ∈ {{{describe_values(xs)}}}")


def _label(value) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)
