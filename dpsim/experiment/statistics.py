"""The statistics checks are built from (issue 27, "checks that compose"): the one pairing
helper (:func:`paired`), the one delta-method ratio helper (:func:`log_ratio_of_means`), the
two-method and two-column statistics (:class:`PairedDifference`, :class:`RatioOfMeans`),
predictions evaluated from the grid at verify time (:func:`predictions`), ratios between two
slices of an axis (:func:`log_ratio_between`), and the phase-transition helpers (isotonic
regression, Wilson bands, crossing points).

Each returns an estimate with its standard error or its 95% interval; judging it against a
region is :mod:`dpsim.experiment.verdicts`' job.
"""
from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from dpsim.errors import UsageError
from dpsim.experiment.summary import Z95, grid_columns, select, wilson_interval


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


@dataclass(frozen=True)
class PairedDifference:
    """A statistic (for :class:`ComparisonCheck` and :class:`EveryPointCheck`): two methods
    on the same observations.

    Estimates: the mean over paired observations (:func:`paired`: one replicate at one grid
    point, present for both methods) of metric(``better``) − metric(``worse``). Interval:
    mean ± z·sd/√N (normal, sd with ddof 1). Region (−∞, 0]: PASS when the whole interval is
    below 0 (``better`` has the smaller mean), FAIL when it is wholly above.
    """

    metric: str
    better: str
    worse: str

    region = (-math.inf, 0.0)

    @property
    def methods(self):
        return (self.better, self.worse)

    @property
    def predicted(self) -> str:
        return f"{self.better} < {self.worse}"

    def compute(self, rows: pd.DataFrame) -> tuple[float, float, float, int]:
        """(mean difference, low, high, paired observations)."""
        wide = paired(rows, {"a": ({"method": [self.better]}, self.metric),
                             "b": ({"method": [self.worse]}, self.metric)})
        diff = (wide["a"] - wide["b"]).to_numpy(float)
        if len(diff) < 2:
            raise UsageError("fewer than two paired observations")
        mean = float(diff.mean())
        half = Z95 * float(diff.std(ddof=1)) / math.sqrt(len(diff))
        return mean, mean - half, mean + half, len(diff)


@dataclass(frozen=True)
class RatioOfMeans:
    """A statistic (for :class:`EveryPointCheck` and :class:`MeanRatioCheck`): two columns of
    the same rows of one method (e.g. the simulated over the predicted MSE).

    Estimates: mean(``numerator``)/mean(``denominator``) over the rows of ``method`` where both
    have a value, or its square root with ``root`` (an RMS ratio). Interval: exp(log r ± z·se)
    with the delta-method standard error of :func:`log_ratio_of_means`, the two columns
    paired per row (their covariance enters). Region [``low``, ``high``]: PASS when the
    interval lies inside, FAIL when it lies wholly outside.
    """

    method: str
    numerator: str
    denominator: str
    low: float
    high: float
    _: KW_ONLY
    root: bool = False

    @property
    def methods(self):
        return (self.method,)

    @property
    def region(self):
        return (self.low, self.high)

    @property
    def predicted(self) -> str:
        return f"[{self.low:.3g}, {self.high:.3g}]"

    def log_ratio(self, rows: pd.DataFrame) -> tuple[float, float, int]:
        """(log ratio, its standard error, paired rows): the scale on which a slope of the
        ratio along an axis is fitted."""
        for column in (self.numerator, self.denominator):
            if column not in rows:
                raise UsageError(f"no column {column!r} in the results table")
        mine = select(rows, {"method": [self.method]}) if "method" in rows else rows
        pairs = mine[[self.numerator, self.denominator]].dropna().to_numpy(float)
        log_r, se = log_ratio_of_means(pairs, (1.0, -1.0), scale=0.5 if self.root else 1.0,
                                       what=f"{self.numerator!r} and {self.denominator!r}")
        return log_r, se, len(pairs)

    def compute(self, rows: pd.DataFrame) -> tuple[float, float, float, int]:
        """(ratio, low, high, paired rows)."""
        log_r, se, n = self.log_ratio(rows)
        return (*exp_interval(log_r, se), n)


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
@dataclass(frozen=True)
class Value:
    """One statistic's estimate on its scale: ``value`` and its standard error ``se`` (on the
    log scale when ``log``), from ``n`` observations. :attr:`natural` and :meth:`interval`
    give it back on the natural scale."""

    value: float
    se: float
    n: int
    log: bool

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
class Mean:
    """The mean of ``metric`` over the rows of ``method`` (its square root with ``root``: an
    RMS from mean squares). With a prediction: mean(metric)/mean(prediction), the two paired
    per row (rows of several grid points may then be pooled). Log scale; delta method
    (:func:`log_ratio_of_means`)."""

    metric: str
    method: str
    root: bool = False

    @property
    def methods(self):
        return (self.method,)

    def describe(self) -> str:
        return f"{'RMS' if self.root else 'mean'} {self.metric} of {self.method}"

    def estimate(self, rows: pd.DataFrame, prediction: Callable[[dict], float] | None = None) -> Value:
        mine = select(rows, {"method": [self.method]})
        columns = [mine[self.metric].to_numpy(float)]
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
