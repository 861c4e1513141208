"""The statistics checks are built from: the one pairing helper (:func:`paired`), the one
delta-method ratio helper (:func:`log_ratio_of_means`), predictions evaluated from the grid
at verify time (:func:`predictions`), ratios between two slices of an axis
(:func:`log_ratio_between`), the phase-transition helpers (isotonic regression, Wilson
bands, crossing points), and the composable statistics a
:class:`~dpsim.engine.judgement.checks.Claim` judges, each one number with its standard error
(:class:`Value`):

* levels and ratios (log scale): :class:`Mean` (of a metric, or of its square: an RMS),
  :class:`MethodRatio` (two methods, paired), :class:`ColumnRatio` (two columns of the same
  rows), :class:`SliceRatio` (two values of an axis);
* differences (linear): :class:`Difference` (two methods, paired);
* slopes (linear): :class:`Slope` (log–log over replicate rows), :class:`LinearSlope` (of
  grid means, on the axis itself).

Judging an estimate against a region is :mod:`dpsim.engine.judgement.verdicts`' job.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from dpsim.errors import UsageError
from dpsim.engine.solving.search import STATUS, z_quantile
from dpsim.engine.presentation.summary import (
    Z95,
    describe_values,
    grid_columns,
    loglog_slope,
    select,
    slope_fit,
    wilson_interval,
)


# Paired observations
def paired(
    rows: pd.DataFrame,
    series: Mapping[str, tuple[Mapping[str, Sequence], str]],
    on: Sequence[str] = ("point", "rep"),
    *,
    dropna: bool = True,
) -> pd.DataFrame:
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
            raise UsageError(
                f"rows are not unique on {tuple(keys)} where {dict(where)}; narrow `where`"
            )
        parts.append(part)
    joined = pd.concat(parts, axis=1, join="inner")
    return joined.dropna() if dropna else joined


def log_ratio_of_means(
    columns, signs, *, scale: float = 1.0, what: str = "the series"
) -> tuple[float, float]:
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

    The function sees only the grid axes of the table (:func:`~dpsim.engine.presentation.summary.grid_columns`:
    the axes' values, never a method's output or a host-derived value such as a σ the
    mechanism computed), so a bug in the mechanism or in a helper it calls cannot move the
    prediction with the simulation.

    Returns:
        (len(rows),) float64.
    """
    axes = [c for c in grid_columns(rows) if c in rows]
    points = rows[axes].drop_duplicates().reset_index(drop=True)
    points["_prediction"] = [
        float(prediction(dict(zip(axes, values))))
        for values in points.itertuples(index=False, name=None)
    ]
    merged = rows[axes].reset_index(drop=True).merge(points, on=axes, how="left", sort=False)
    return merged["_prediction"].to_numpy(float)


# Ratios between two slices of an axis
def log_ratio_between(
    rows: pd.DataFrame,
    metric: str,
    axis: str,
    numerator,
    denominator,
    root: bool,
    paired_on: Sequence[str] | None,
) -> tuple[float, float, int]:
    """log(stat(numerator slice)/stat(denominator slice)), its delta-method standard error
    (:func:`log_ratio_of_means`) and the observations used.

    stat = mean(metric) (or √mean with ``root``). Independent slices: the variances of the
    two log means add. ``paired_on`` (e.g. ("rep",)) aligns the two slices on those columns
    (:func:`paired`) and includes their covariance.
    """
    scale = 0.5 if root else 1.0
    what = f"{metric!r} in {axis}={numerator!r} and {axis}={denominator!r}"
    if paired_on:
        joined = paired(
            rows,
            {"a": ({axis: [numerator]}, metric), "b": ({axis: [denominator]}, metric)},
            on=paired_on,
        )
        num, den = joined["a"], joined["b"]
    else:
        num = select(rows, {axis: [numerator]})[metric].dropna()
        den = select(rows, {axis: [denominator]})[metric].dropna()
    if len(num) < 2 or len(den) < 2:
        raise UsageError(
            f"need at least two rows of {metric!r} in each slice "
            f"{axis}={numerator!r} and {axis}={denominator!r}"
        )
    if paired_on:
        log_r, se = log_ratio_of_means(joined.to_numpy(float), (1.0, -1.0), scale=scale, what=what)
    else:
        log_num, se_num = log_ratio_of_means(num.to_numpy(float), (1.0,), scale=scale, what=what)
        log_den, se_den = log_ratio_of_means(den.to_numpy(float), (1.0,), scale=scale, what=what)
        log_r, se = log_num - log_den, math.hypot(se_num, se_den)
    return log_r, se, len(num) + len(den)


# Phase transitions
def wilson(successes, n):
    """95% Wilson score interval of a binomial proportion (elementwise; the one helper is
    :func:`dpsim.engine.presentation.summary.wilson_interval`)."""
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


# Composable statistics (for :class:`dpsim.engine.judgement.checks.Claim`): each estimates one
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
        raise UsageError(
            f"the prediction must be one positive finite value per judged point, got {values[:3]}"
        )
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

    def estimate(
        self, rows: pd.DataFrame, prediction: Callable[[dict], float] | None = None
    ) -> Value:
        mine = select(rows, {"method": [self.method]}) if "method" in rows else rows
        values = self.metric_values(mine)
        columns = [values * values if self.square else values]
        if prediction is not None:
            columns.append(predictions(mine, prediction))
        data = np.column_stack(columns)
        data = data[np.all(np.isfinite(data), axis=1)]
        log_r, se = log_ratio_of_means(
            data,
            (1.0, -1.0)[: data.shape[1]],
            scale=0.5 if self.root else 1.0,
            what=self.describe(),
        )
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

    def estimate(
        self, rows: pd.DataFrame, prediction: Callable[[dict], float] | None = None
    ) -> Value:
        wide = paired(
            rows,
            {
                "a": ({"method": [self.numerator]}, self.metric),
                "b": ({"method": [self.denominator]}, self.metric),
            },
        ).to_numpy(float)
        if self.square:
            wide = wide * wide
        log_r, se = log_ratio_of_means(
            wide, (1.0, -1.0), scale=0.5 if self.root else 1.0, what=self.describe()
        )
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

    def estimate(
        self, rows: pd.DataFrame, prediction: Callable[[dict], float] | None = None
    ) -> Value:
        wide = paired(
            rows,
            {"a": ({"method": [self.a]}, self.metric), "b": ({"method": [self.b]}, self.metric)},
        )
        diff = (wide["a"] - wide["b"]).to_numpy(float)
        if len(diff) < 2:
            raise UsageError(f"fewer than two paired observations of {self.describe()}")
        shift = 0.0
        if prediction is not None:
            values = np.unique(predictions(rows, prediction))
            if len(values) != 1:
                raise UsageError("the prediction must be one value per judged point")
            shift = float(values[0])
        return Value(
            float(diff.mean()) - shift,
            float(diff.std(ddof=1)) / math.sqrt(len(diff)),
            len(diff),
            False,
        )


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

    def estimate(
        self, rows: pd.DataFrame, prediction: Callable[[dict], float] | None = None
    ) -> Value:
        for column in (self.numerator, self.denominator):
            if column not in rows:
                raise UsageError(f"no column {column!r} in the results table")
        mine = select(rows, {"method": [self.method]}) if "method" in rows else rows
        pairs = mine[[self.numerator, self.denominator]].dropna().to_numpy(float)
        log_r, se = log_ratio_of_means(
            pairs,
            (1.0, -1.0),
            scale=0.5 if self.root else 1.0,
            what=f"{self.numerator!r} and {self.denominator!r}",
        )
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

    def estimate(
        self, rows: pd.DataFrame, prediction: Callable[[dict], float] | None = None
    ) -> Value:
        if prediction is not None:
            raise UsageError(
                "a ratio between slices takes its prediction from a `reference` column"
            )
        mine = select(rows, {"method": [self.method]}) if "method" in rows else rows
        if self.reference is None:
            log_r, se, n = log_ratio_between(
                mine,
                self.metric,
                self.axis,
                self.numerator,
                self.denominator,
                self.root,
                self.paired_on,
            )
            return Value(log_r, se, n, True)
        num, den = {self.axis: [self.numerator]}, {self.axis: [self.denominator]}
        series = paired(
            mine,
            {
                "metric_a": (num, self.metric),
                "metric_b": (den, self.metric),
                "reference_a": (num, self.reference),
                "reference_b": (den, self.reference),
            },
            on=self.paired_on or ("rep",),
        ).to_numpy(float)
        log_r, se = log_ratio_of_means(
            series,
            (1.0, -1.0, -1.0, 1.0),
            scale=0.5 if self.root else 1.0,
            what=f"{self.metric!r} and {self.reference!r}",
        )
        return Value(log_r, se, len(series), True)


@dataclass(frozen=True)
class Slope(_OfOneMethod):
    """The slope of log ``metric`` (``metric`` itself with ``log_y=False``) on log ``x`` over
    the replicate-level rows of ``method``, with one intercept per value of each axis in
    ``per`` that varies (:func:`~dpsim.engine.presentation.summary.loglog_slope`; HC1 standard
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
        return (
            f"slope of {'log ' if self.log_y else ''}{self.metric} of {self.method} on log {self.x}"
        )

    def estimate(
        self, rows: pd.DataFrame, prediction: Callable[[dict], float] | None = None
    ) -> Value:
        if prediction is not None:
            raise UsageError("a slope's prediction is its region")
        fit = loglog_slope(
            rows, self.metric, self.x, log_y=self.log_y, method=self.method, pool=self.per or ()
        )
        return Value(fit.slope, fit.stderr, fit.n_obs, False, note=fit.rows)


@dataclass(frozen=True)
class LinearSlope(_OfOneMethod):
    """The slope in ``x`` itself (not its log) of the grid means of ``scale``·``metric`` of
    ``method`` (``scale`` a column, e.g. n_samples for n·MSE; None: 1), weighted least squares
    with the means' standard errors (:func:`~dpsim.engine.presentation.summary.slope_fit`), divided
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

    def estimate(
        self, rows: pd.DataFrame, prediction: Callable[[dict], float] | None = None
    ) -> Value:
        if prediction is not None:
            raise UsageError("a linear slope's prediction is `per`")
        mine = select(rows, {"method": [self.method]}) if "method" in rows else rows
        xs, means, ses, n = [], [], [], 0
        for value in sorted(mine[self.x].dropna().unique()):
            part = select(mine, {self.x: [value]})
            y = part[self.metric].to_numpy(float) * (
                part[self.scale].to_numpy(float) if self.scale else 1.0
            )
            y = y[np.isfinite(y)]
            xs.append(float(value))
            means.append(float(y.mean()))
            ses.append(float(y.std(ddof=1) / math.sqrt(len(y))))
            n += len(y)
        if len(xs) < 2:
            raise UsageError(f"need two values of {self.x!r} for a slope")
        slope, se = slope_fit(xs, means, y_se=ses)
        return Value(
            slope / self.per,
            se / abs(self.per),
            n,
            False,
            note=f"slope {slope:.4g} on {self.x} ∈ {{{describe_values(xs)}}}",
        )


def _label(value) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


# Solved thresholds (a solve's roots, :mod:`dpsim.engine.solving.solve`) against a theorem's rate
ROOT_STATUS = tuple(STATUS.values())  # the root finders' status names


def threshold_observations(
    roots: pd.DataFrame,
    configs: Sequence[str],
    *,
    rate: Callable[[dict], float] | None = None,
    increasing: bool = True,
    search: tuple[float, float] | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """Each configuration's solved threshold as one observation on the log scale, relative to a
    rate: y = log(root / rate(config)) with its standard error from the root's interval, or,
    where the root was not found, the bound the solve proves (a censored observation).

    Args:
        roots: one row per configuration: the ``configs`` columns, ``root``, ``low``, ``high``
            (the root's interval at ``level``; NaN where none) and ``status`` (a name of
            :data:`ROOT_STATUS`); optional ``searched_low``/``searched_high`` (the interval
            searched, else ``search``).
        configs: the configuration columns kept in the result.
        rate: ``row → positive number``, given the roots table's whole row (every axis of
            the configuration, e.g. an L or a mode beside n, m, ε; None: 1, the threshold).
        increasing: the solved metric increases along the axis (success against a gap): a
            root ``below_target`` (the target never reached) then lies above the interval
            searched, one ``above_target`` below it; ``False`` swaps them.
        search: (low, high) searched, when ``roots`` has no search columns.
        level: the level of the roots' intervals.
    Returns:
        One row per configuration: the ``configs`` columns, ``rate``, ``kind`` ("value": a
        root with a finite interval; "lower"/"upper": only bounded from below/above, ``y`` the
        log bound over the rate; "none": nothing known), ``y`` and ``se`` (NaN unless a
        value), ``status``, and ``root``, ``low``, ``high`` as given (the bound in ``root``
        for a censored one).
    Raises:
        UsageError: a missing column, an unknown status, a rate that is not positive and finite.
    """
    missing = [c for c in (*configs, "root", "low", "high", "status") if c not in roots]
    if missing:
        raise UsageError(f"the roots table has no column {missing[0]!r}")
    unknown = sorted(set(roots["status"]) - set(ROOT_STATUS))
    if unknown:
        raise UsageError(
            f"unknown root status {unknown[0]!r}; statuses are {', '.join(ROOT_STATUS)}"
        )
    z = z_quantile(level)
    out = []
    for _, row in roots.iterrows():
        config = {c: row[c] for c in configs}
        r = (
            1.0 if rate is None else float(rate(row.to_dict()))
        )  # the rate sees the whole configuration
        if not (r > 0 and math.isfinite(r)):
            raise UsageError(f"the rate at {config} is {r!r}; it must be positive and finite")
        lo_s = (
            float(row["searched_low"])
            if "searched_low" in roots
            else (search or (math.nan, math.nan))[0]
        )
        hi_s = (
            float(row["searched_high"])
            if "searched_high" in roots
            else (search or (math.nan, math.nan))[1]
        )
        root, low, high = float(row["root"]), float(row["low"]), float(row["high"])
        status = row["status"]
        kind, y, se, bound = "none", math.nan, math.nan, math.nan
        finite = all(math.isfinite(v) and v > 0 for v in (root, low, high))
        if status in ("solved", "undecided") and finite and high > low:
            kind, y, se = "value", math.log(root / r), (math.log(high) - math.log(low)) / (2 * z)
        elif status in ("below_target", "above_target"):
            beyond_high = (status == "below_target") == increasing
            bound = hi_s if beyond_high else lo_s
            kind = "lower" if beyond_high else "upper"
        elif status == "undecided":  # bracketed, but the interval is open on one side
            if math.isfinite(low) and low > 0 and not (math.isfinite(high)):
                kind, bound = "lower", low
            elif math.isfinite(high) and high > 0 and not (math.isfinite(low) and low > 0):
                kind, bound = "upper", high
        if kind in ("lower", "upper"):
            if not (bound > 0 and math.isfinite(bound)):
                kind = "none"
            else:
                y, root = math.log(bound / r), bound
        out.append(
            {
                **config,
                "rate": r,
                "kind": kind,
                "y": y,
                "se": se,
                "status": status,
                "root": root,
                "low": low,
                "high": high,
            }
        )
    return pd.DataFrame(
        out, columns=[*configs, "rate", "kind", "y", "se", "status", "root", "low", "high"]
    )


@dataclass(frozen=True)
class ThresholdSlope:
    """The slope of log(threshold / rate) on log ``x`` (one intercept per group of the other
    configuration axes), weighted least squares with each root's standard error.

    ``slope`` is the fit with every censored observation at its bound, ``se`` its standard
    error; [``low``, ``high``] its 95% interval, made infinite on the side a censored
    observation could move it (a root known only to exceed its bound pulls the slope one way
    without limit): the interval is then honest, and PASS needs the search extended.
    ``values``/``lower``/``upper``/``unknown`` count the configurations of each kind,
    ``groups`` the groups that enter the fit; ``chi2`` (over ``dof``) the residuals of the
    values in units of their standard errors (≈ 1 when the rate explains the thresholds up to
    Monte-Carlo error); when χ² > dof the standard error is scaled by ``inflation`` =
    √(χ²/dof) (Birge ratio: the groups disagree beyond Monte-Carlo error, and the interval
    then covers that spread); ``table``: the observations used, with the fitted line's ``fit``."""

    slope: float
    se: float
    low: float
    high: float
    values: int
    lower: int
    upper: int
    unknown: int
    groups: int
    chi2: float
    dof: int
    inflation: float
    table: pd.DataFrame

    @property
    def censored(self) -> int:
        return self.lower + self.upper


def threshold_slope(
    observations: pd.DataFrame, x: str, by: Sequence[str] = (), z: float = Z95
) -> ThresholdSlope:
    """The slope of :func:`threshold_observations`' y on log ``x`` with one intercept per
    group of ``by`` (:class:`ThresholdSlope`).

    Censored observations (kind "lower"/"upper") enter at their bound with the median
    standard error of the values; the slope is linear in each y, so the sign of its
    derivative in a censored y says which end of the interval that observation can push
    to infinity (a lower bound with a positive weight: the slope is only bounded below).
    Groups with fewer than two usable x values carry no information on the slope and are
    left out.

    Args:
        observations: from :func:`threshold_observations`.
        x: the configuration column regressed on (n_items, n_users, p, …), > 0.
        by: the other configuration columns (each combination one intercept).
        z: the interval's normal quantile.
    Raises:
        UsageError: no group with two x values of which at least one is a value, x ≤ 0, or
            no root solved.
    """
    obs = observations[observations["kind"] != "none"].copy()
    if x not in obs:
        raise UsageError(f"no column {x!r} among the configurations")
    xs = obs[x].to_numpy(float)
    if np.any(~(xs > 0) | ~np.isfinite(xs)):
        raise UsageError(f"{x} must be positive and finite to take its logarithm")
    values = obs["kind"] == "value"
    if not values.any():
        raise UsageError("no configuration's threshold was solved: no slope")
    keys = (
        obs[list(by)].astype(str).agg("|".join, axis=1) if by else pd.Series("all", index=obs.index)
    )
    obs["_group"] = keys
    spread = obs.groupby("_group")[x].transform("nunique")
    has_value = obs.groupby("_group")["kind"].transform(lambda k: (k == "value").any())
    obs = obs[(spread >= 2) & has_value]
    if obs.empty:
        raise UsageError(
            f"no group of {', '.join(by) or 'configurations'} has thresholds at two values of {x!r}"
        )
    nominal = float(np.median(obs.loc[obs["kind"] == "value", "se"]))
    se = np.where(obs["kind"] == "value", obs["se"].to_numpy(float), nominal)
    se = np.maximum(se, 1e-12)
    lx, y, groups = (
        np.log(obs[x].to_numpy(float)),
        obs["y"].to_numpy(float),
        obs["_group"].to_numpy(),
    )
    slope, slope_se = slope_fit(lx, y, groups=groups, y_se=se, weighted=True)
    kinds = obs["kind"].to_numpy()
    fitted = _fitted_line(lx, y, groups, se, slope)
    resid = (y - fitted)[kinds == "value"] / se[kinds == "value"]
    n_groups = len(set(groups))
    chi2, dof = float(np.sum(resid**2)), max(int((kinds == "value").sum()) - n_groups - 1, 0)
    # the groups may disagree beyond their Monte-Carlo errors (the rate holds only up to
    # lower-order terms that differ between groups): the standard error is then scaled by
    # √(χ²/dof) (Birge ratio), so the interval covers the spread of the groups' slopes too
    inflation = math.sqrt(chi2 / dof) if dof > 0 and chi2 > dof else 1.0
    slope_se *= inflation
    low, high = slope - z * slope_se, slope + z * slope_se
    for i in np.flatnonzero(kinds != "value"):
        bumped = y.copy()
        bumped[i] += 1.0
        weight = slope_fit(lx, bumped, groups=groups, y_se=se, weighted=True)[0] - slope
        if abs(weight) < 1e-9:
            continue
        grows = (kinds[i] == "lower") == (weight > 0)  # the true y can only move the slope this way
        if grows:
            high = math.inf
        else:
            low = -math.inf
    table = observations.copy()
    table["used"] = table.index.isin(obs.index)
    table["fit"] = np.nan
    table.loc[obs.index, "fit"] = fitted
    counts = observations["kind"].value_counts()
    return ThresholdSlope(
        slope,
        slope_se,
        low,
        high,
        int(counts.get("value", 0)),
        int(counts.get("lower", 0)),
        int(counts.get("upper", 0)),
        int(counts.get("none", 0)),
        n_groups,
        chi2,
        dof,
        inflation,
        table,
    )


def _fitted_line(lx, y, groups, se, slope) -> np.ndarray:
    """The WLS line at ``slope``: each group's intercept is the weighted mean of y − slope·lx."""
    w = 1.0 / se**2
    fitted = np.empty_like(y)
    for g in set(groups):
        mask = groups == g
        intercept = np.sum(w[mask] * (y[mask] - slope * lx[mask])) / np.sum(w[mask])
        fitted[mask] = intercept + slope * lx[mask]
    return fitted
