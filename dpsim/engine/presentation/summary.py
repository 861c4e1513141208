"""Summaries and log–log regressions, always derived from the tidy results table.

Nothing is pooled silently: a summary or a slope uses rows whose grid axes take one value
each, except the axes it maps (its x axis, its ``by`` columns) and the axes it is told to
pool over; any other axis with several values in the rows is refused with a one-line error
naming it. A slope pooled over an axis gets one intercept per value of it (fixed effects),
so that its levels cannot bias the slope.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from dpsim.errors import UsageError, did_you_mean
from dpsim.results import reasons

Z95 = 1.959963984540054
NOT_AXES = ("rep", "point", "method")


def select(
    table: pd.DataFrame, where: Mapping[str, Sequence] | None = None, method: str | None = None
) -> pd.DataFrame:
    """Rows whose axes take the listed values (floats compared with a relative tolerance)."""
    mask = np.ones(len(table), dtype=bool)
    for axis, values in (where or {}).items():
        if axis not in table:
            raise UsageError(f"unknown axis {axis!r} in the results table")
        column = table[axis].to_numpy()
        if column.dtype.kind in "fi":
            hit = np.zeros(len(table), dtype=bool)
            for v in values:
                hit |= np.isclose(column.astype(float), float(v), rtol=1e-9, atol=0) | (column == v)
            mask &= hit
        else:
            mask &= np.isin(column, list(values))
    if method is not None:
        if "method" in table and method not in set(table["method"]):
            raise UsageError(
                f"no rows of method {method!r} (methods: {', '.join(sorted(set(table['method'])))})"
            )
        mask &= table["method"].to_numpy() == method
    return table[mask]


def grid_columns(table: pd.DataFrame) -> list[str]:
    """The grid axes of a results table: every column except the methods' outputs and the
    host-derived values (both recorded by the store), and rep, point, method."""
    skip = set(table.attrs.get("method_columns", ())) | set(table.attrs.get("derived_columns", ()))
    return [c for c in table.columns if c not in skip and c not in NOT_AXES]


def _format(value) -> str:
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return f"{value:g}" if isinstance(value, (int, float, np.number)) else str(value)


def describe_values(values) -> str:
    values = sorted(set(values), key=lambda v: (isinstance(v, str), v))
    text = ", ".join(_format(v) for v in values[:6])
    return text + (f", … ({len(values)} values)" if len(values) > 6 else "")


def require_unpooled(
    rows: pd.DataFrame, mapped: Sequence[str], what: str, *, cli: bool = False
) -> None:
    """Refuse when a grid axis outside ``mapped`` takes several values within one combination
    of the mapped columns' values (an axis that is a function of mapped ones, such as cai's
    k = round(n/4) beside n, is not pooled). Columns of ``mapped`` absent from ``rows`` (e.g.
    a metric) are ignored. ``cli``: advise in ``dpsim summary``'s options (--where, --by,
    --pool) instead of Python keywords."""
    keys = [c for c in dict.fromkeys(mapped) if c in rows and c in grid_columns(rows)]
    for column in grid_columns(rows):
        if column in mapped:
            continue
        values = rows[column].dropna().unique()
        if len(values) < 2:
            continue
        within = rows.groupby(keys, dropna=False)[column].nunique().max() if keys else len(values)
        if within > 1:
            grouped = [c for c in keys if c != "method"]
            advice = (
                (
                    f"select one (--where {column}={_format(values[0])}), or map it: group by it "
                    f"(--by {' '.join([*grouped, column])}) or average over it deliberately (--pool {column})"
                )
                if cli
                else (
                    f"select one (where={{{column!r}: [{_format(values[0])!s}]}}), or map it: group by it "
                    f"(summarise(..., by=[..., {column!r}])) or pool it deliberately (pool=[{column!r}], "
                    f"one intercept per value in a slope)"
                )
            )
            raise UsageError(
                f"{what} would pool {len(values)} values of {column!r} ({describe_values(values)}); "
                f"{advice}"
            )
    if "method" in rows and rows["method"].nunique() > 1 and "method" not in mapped:
        raise UsageError(
            f"{what} would pool methods {describe_values(rows['method'].unique())}; select one"
        )


def wilson_interval(successes, n, z: float = Z95):
    """The Wilson score interval of binomial proportions (elementwise): (low, high) arrays."""
    successes, n = np.asarray(successes, float), np.asarray(n, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        phat = successes / n
        z2 = z**2
        centre = (phat + z2 / (2 * n)) / (1 + z2 / n)
        half = z * np.sqrt(phat * (1 - phat) / n + z2 / (4 * n**2)) / (1 + z2 / n)
    return centre - half, centre + half


def summarise(
    table: pd.DataFrame, metric: str, by: Sequence[str], *, pool: Sequence[str] = ()
) -> pd.DataFrame:
    """Mean, standard deviation, count and 95% CI of ``metric`` per group of ``by``: normal,
    or Wilson's for a 0/1 metric (a proportion).

    Args:
        table: tidy results rows.
        metric: the column to summarise.
        by: the columns that define a group (they are mapped, not pooled).
        pool: axes deliberately averaged over within a group.
    Returns:
        One row per group: the ``by`` columns, ``mean``, ``sd``, ``n`` (rows used),
        ``ci_low``, ``ci_high`` and, when the rows have a ``converged`` column,
        ``unconverged`` (rows whose fit did not converge).
    Raises:
        UsageError if another axis has several values (it would be pooled silently).
    """
    if metric not in table:
        raise UsageError(f"unknown metric {metric!r}")
    require_unpooled(table, [*by, *pool, metric], f"summarising {metric!r} by {list(by)}")
    grouped = table.groupby(list(by), dropna=False)
    out = grouped[metric].agg(mean="mean", sd="std", n="count").reset_index()
    values = table[metric].dropna()
    if len(values) and values.isin([0.0, 1.0]).all():
        # a proportion (e.g. exact recovery): Wilson score interval, inside [0, 1] and not a
        # point when every replicate fails or succeeds
        out["ci_low"], out["ci_high"] = wilson_interval(
            out["mean"].to_numpy(float) * out["n"].to_numpy(float), out["n"].to_numpy(float)
        )
    else:
        half = Z95 * out["sd"].fillna(0.0) / np.sqrt(out["n"].clip(lower=1))
        out["ci_low"], out["ci_high"] = out["mean"] - half, out["mean"] + half
    if "converged" in table:
        failed = (table["converged"] == False).fillna(False)  # noqa: E712 (nullable boolean)
        out["unconverged"] = failed.groupby([table[c] for c in by], dropna=False).sum().to_numpy()
    return out


def failure_reasons(table: pd.DataFrame, by: Sequence[str]) -> list[str]:
    """Per group of ``by`` (in :func:`summarise`'s row order): the result codes of the fits
    that did not converge, named and counted ("10 max steps, 2 non-finite"; "" when none
    failed or the rows have no ``result`` column, :func:`dpsim.results.reasons`)."""
    if "result" not in table:
        return [""] * table.groupby(list(by), dropna=False).ngroups
    return [reasons(part) for _, part in table.groupby(list(by), dropna=False)["result"]]


@dataclass(frozen=True)
class SlopeFit:
    """A fitted slope with its standard error and 95% CI; ``n_points`` distinct x values,
    ``n_obs`` observations; ``rows``: which rows were used (for the check's line)."""

    slope: float
    stderr: float
    ci_low: float
    ci_high: float
    n_points: int
    n_obs: int
    rows: str = ""


def slope_fit(x, y, *, groups=None, y_se=None, weighted: bool = False) -> tuple[float, float]:
    """The one slope helper: OLS slope of ``y`` on ``x`` (one intercept per group) and its
    standard error from a sandwich covariance (X'X)⁻¹ X'ΩX (X'X)⁻¹.

    Ω = diag(residual²)·n/(n − p) (HC1, robust to a replicate spread that changes along the
    grid) for replicate-level rows, or diag(y_se²) when each y is an estimate with a known
    standard error (e.g. a log ratio per grid value, delta method). With ``weighted`` (and
    ``y_se``): weighted least squares instead, weights 1/y_se², covariance (X'WX)⁻¹ (the
    efficient fit when the y's precisions differ a lot, e.g. solved thresholds with their
    intervals).

    Args:
        x, y: (N,) values; ``groups``: (N,) labels for separate intercepts (None: one).
        y_se: (N,) standard errors of the y values, or None.
        weighted: WLS with weights 1/y_se² (needs ``y_se``, all > 0 and finite).
    Returns:
        (slope, standard error).
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    labels = np.zeros(len(x), int) if groups is None else pd.factorize(pd.Series(list(groups)))[0]
    design = np.column_stack(
        [x, (labels[:, None] == np.arange(labels.max() + 1)[None, :]).astype(float)]
    )
    if np.linalg.matrix_rank(design) < design.shape[1]:
        raise UsageError(
            "the slope is not identified: x takes one value within every group of the pooled axes "
            "(each group's intercept absorbs it); pool an axis along which x varies, or none"
        )
    if weighted:
        if y_se is None:
            raise UsageError("a weighted slope needs the standard errors of its y values")
        se = np.asarray(y_se, float)
        if not np.all(np.isfinite(se) & (se > 0)):
            raise UsageError("a weighted slope needs positive finite standard errors")
        w = 1.0 / se**2
        bread = np.linalg.pinv(design.T @ (design * w[:, None]))
        coef = bread @ design.T @ (w * y)
        return float(coef[0]), float(math.sqrt(max(bread[0, 0], 0.0)))
    bread = np.linalg.pinv(design.T @ design)
    coef = bread @ design.T @ y
    if y_se is None:
        resid = y - design @ coef
        n, p = design.shape
        omega = resid**2 * n / max(n - p, 1)
    else:
        omega = np.asarray(y_se, float) ** 2
    cov = bread @ (design.T @ (design * omega[:, None])) @ bread
    return float(coef[0]), float(math.sqrt(max(cov[0, 0], 0.0)))


def loglog_slope(
    table: pd.DataFrame,
    metric: str,
    x: str,
    *,
    log_y: bool = True,
    method: str | None = None,
    where: Mapping[str, Sequence] | None = None,
    pool: Sequence[str] = (),
) -> SlopeFit:
    """Slope of (log) ``metric`` on log ``x`` over replicate-level rows, with a 95% CI.

    Args:
        table: tidy results rows; ``method`` and ``where`` select the rows first.
        metric, x: the y and x columns; ``log_y=False`` for metrics that are already logs.
        pool: axes whose several values are pooled. Every axis with several values that is
            listed in ``where`` or ``pool`` gets one intercept per value (fixed effects).
    Returns:
        :class:`SlopeFit`, whose ``rows`` says which rows it used.
    Raises:
        UsageError naming the problem: an axis pooled silently, several methods, x ≤ 0 or
        infinite (e.g. ε = inf, the non-private case, has no logarithm), fewer than two
        values of x, or non-positive y with ``log_y``.
    """
    rows = select(table, where, method)
    if rows.empty:
        raise UsageError(f"no rows for method={method!r} where={dict(where or {})}")
    require_unpooled(rows, [x, metric, *(where or {}), *pool], f"a slope of {metric!r} in {x!r}")
    pooled = [a for a in dict.fromkeys([*(where or {}), *pool]) if a != x and rows[a].nunique() > 1]
    frame = rows[[x, metric, *pooled]].dropna(subset=[x, metric])
    xs = frame[x].to_numpy(float)
    if np.any(np.isinf(xs)):
        raise UsageError(
            f"{x}=inf is in the rows (the non-private case), and log(inf) has no slope; "
            f"select finite values of {x!r}"
        )
    if np.any(xs <= 0):
        raise UsageError(f"{x} has values ≤ 0, which have no logarithm")
    ys = frame[metric].to_numpy(float)
    if log_y:
        if np.any(ys <= 0):
            raise UsageError(f"metric {metric!r} has non-positive values; cannot take logs")
        ys = np.log(ys)
    n_points = len(np.unique(xs))
    if n_points < 2:
        raise UsageError(f"need at least two values of {x!r} to fit a slope, got {n_points}")
    groups = frame[pooled].astype(str).agg("|".join, axis=1).to_numpy() if pooled else None
    slope, se = slope_fit(np.log(xs), ys, groups=groups)
    used = f"{x} ∈ {{{describe_values(xs)}}}"
    if pooled:
        used += "; one intercept per " + ", ".join(
            f"{a} ∈ {{{describe_values(frame[a])}}}" for a in pooled
        )
    return SlopeFit(slope, se, slope - Z95 * se, slope + Z95 * se, n_points, len(ys), used)


# ---------------------------------------------------------------------------------------
# What `dpsim summary` prints, as data (the command only formats it; dpsim.api's
# Results.summary returns it)
# ---------------------------------------------------------------------------------------
def declared_metrics(experiment) -> list[str] | None:
    """Every metric the methods of ``experiment`` declare, in their order (None without one)."""
    if experiment is None:
        return None
    return [m for method in experiment.methods.values() for m in method.metrics]


def metric_names(table: pd.DataFrame, declared: Sequence[str] | None = None) -> list[str]:
    """The metrics of a results table, in order: ``declared`` (the experiment's methods'
    metrics) that the table holds, or, without a declaration, its float method columns other
    than a solver's diagnostics (``converged``, ``iterations``, ``result``: not floats;
    ``grad_norm``)."""
    columns = list(table.attrs.get("method_columns", ()))
    if declared is not None:
        return [m for m in dict.fromkeys(declared) if m in table]
    return [c for c in columns if c in table and c != "grad_norm" and table[c].dtype.kind == "f"]


def _option(name: str, values: Sequence[str], cli: bool) -> str:
    """How the user wrote an option: ``--by eps`` on the command line, ``by=['eps']`` in Python."""
    return f"--{name} {' '.join(values)}" if cli else f"{name}={list(values)!r}"


def _check_axes(
    table: pd.DataFrame, axes: Sequence[str], option: str, cli: bool, allow_method: bool = False
) -> None:
    """UsageError naming the first of ``axes`` that is neither a grid axis of ``table`` nor a
    value derived from one (with the closest one, and the axes it has)."""
    import difflib

    known = [
        *grid_columns(table),
        *table.attrs.get("derived_columns", ()),
        *(["method"] if allow_method else []),
    ]
    for axis in axes:
        if axis not in known:
            close = difflib.get_close_matches(axis, known, n=1, cutoff=0.6)
            hint = f" (did you mean {_option(option, [close[0]], cli)}?)" if close else ""
            raise UsageError(
                f"{_option(option, [axis], cli)}: {axis!r} is not an axis of this run{hint}; "
                f"its axes are {', '.join(known) or 'none'}"
            )


def summary_table(
    table: pd.DataFrame,
    metric: str | None = None,
    by: Sequence[str] | None = None,
    *,
    where: Mapping[str, Sequence] | None = None,
    pool: Sequence[str] = (),
    metrics: Sequence[str] | None = None,
    cli: bool = False,
) -> pd.DataFrame:
    """Means with 95% intervals of one metric per method and group: what ``dpsim summary``
    prints (:func:`summarise` per method and each varying axis, with the fits' failure
    reasons).

    Args:
        table: the tidy results rows (:func:`dpsim.engine.storage.store.load_results`).
        metric: the metric summarised; None: the first of :func:`metric_names` (``metrics``,
            the experiment's declared metrics, when known).
        by: the axes of a group besides ``method`` (default: every axis with several values).
        where: axis → values, the rows used (as ``dpsim plot --where``).
        pool: axes averaged over deliberately.
        cli: word errors in the command's options (``--by``) instead of Python keywords.
    Returns:
        One row per group: ``metric``, ``method``, the ``by`` axes, ``mean``, ``sd``, ``n``,
        ``ci_low``, ``ci_high``, ``unconverged`` (when the rows report ``converged``) and
        ``why`` (the result codes of the unconverged fits, when any failed);
        ``attrs["metric"]`` names the metric and ``attrs["metrics"]`` lists all of them.
    Raises:
        UsageError: an unknown metric or axis (naming the closest), or an axis with several
        values that is neither grouped, selected nor pooled.
    """
    names = metric_names(table, metrics)
    if metric is None:
        if not names:
            raise UsageError("this run holds no metric to summarise")
        metric = names[0]
    if metric not in names:
        hint = did_you_mean(str(metric), names, n=1)
        raise UsageError(f"unknown metric {metric!r}{hint}; this run has {', '.join(names)}")
    _check_axes(table, list(by or ()), "by", cli)
    _check_axes(table, list(pool), "pool", cli)
    _check_axes(table, list(where or {}), "where", cli, allow_method=True)
    rows = select(table, where) if where else table
    rows = rows[rows[metric].notna()]  # methods that do not report it
    if rows.empty:
        raise UsageError(
            f"no rows report {metric!r}"
            + (f" where {dict(where)}" if where else "")
            + " (every value is missing or NaN)"
        )
    group = [
        "method",
        *(
            by
            if by is not None
            else [c for c in grid_columns(rows) if c not in pool and rows[c].nunique() > 1]
        ),
    ]
    what = f"summarising {metric!r} by {list(group)}"
    require_unpooled(rows, [*group, *pool, metric], what, cli=cli)
    out = summarise(rows, metric, group, pool=pool)
    why = failure_reasons(rows, group)
    if any(why):
        out["why"] = why  # e.g. "10 max steps, 2 non-finite" (the result codes)
    out.insert(0, "metric", metric)
    out.attrs.update(metric=metric, metrics=names)
    return out


def _slope_spec(spec) -> tuple[str, str]:
    """(metric, axis) from ``"METRIC:AXIS"`` or a pair."""
    if isinstance(spec, str):
        metric, _, axis = spec.partition(":")
        return metric, axis
    if isinstance(spec, (tuple, list)) and len(spec) == 2:
        return str(spec[0]), str(spec[1])
    raise UsageError(f"slope {spec!r}: write 'METRIC:AXIS' or (METRIC, AXIS)")


def slope_table(
    table: pd.DataFrame,
    slopes,
    *,
    where: Mapping[str, Sequence] | None = None,
    pool: Sequence[str] = (),
    cli: bool = False,
) -> pd.DataFrame:
    """Slopes of log METRIC on log AXIS (:func:`loglog_slope`), per method and per value of
    every other axis with several values (those pooled excepted): what
    ``dpsim summary --slope METRIC:AXIS`` prints.

    Args:
        table: the tidy results rows.
        slopes: one ``"METRIC:AXIS"`` (or (metric, axis)), or several.
        where: axis → values, the rows used.  pool: axes averaged over (one intercept each).
        cli: word errors in the command's options.
    Returns:
        One row per fit: ``metric``, ``axis``, ``method``, the other varying axes, ``slope``,
        ``stderr``, ``ci_low``, ``ci_high``, ``n_points``, ``n_obs``, ``rows`` (which rows it used).
    Raises:
        UsageError: a malformed spec, an unknown metric or axis, or a slope that cannot be fitted.
    """
    specs = (
        [slopes]
        if isinstance(slopes, str)
        or (
            isinstance(slopes, tuple)
            and len(slopes) == 2
            and all(isinstance(s, str) for s in slopes)
        )
        else list(slopes)
    )
    _check_axes(table, list(pool), "pool", cli)
    _check_axes(table, list(where or {}), "where", cli, allow_method=True)
    base = select(table, where) if where else table
    found = []
    for spec in specs:
        metric, axis = _slope_spec(spec)
        if not axis or metric not in base or axis not in base:
            text = f"--slope {spec!r}" if cli else f"slope={spec!r}"
            raise UsageError(f"{text}: write METRIC:AXIS with a metric and an axis of this run")
        rows = base[base[metric].notna() & np.isfinite(base[axis].astype(float))]
        others = [
            c for c in grid_columns(rows) if c != axis and c not in pool and rows[c].nunique() > 1
        ]
        for key, part in rows.groupby(["method", *others], sort=True):
            key = key if isinstance(key, tuple) else (key,)
            fit = loglog_slope(part, metric, axis, pool=pool)
            found.append(
                {
                    "metric": metric,
                    "axis": axis,
                    "method": key[0],
                    **dict(zip(others, key[1:])),
                    "slope": fit.slope,
                    "stderr": fit.stderr,
                    "ci_low": fit.ci_low,
                    "ci_high": fit.ci_high,
                    "n_points": fit.n_points,
                    "n_obs": fit.n_obs,
                    "rows": fit.rows,
                }
            )
    return pd.DataFrame(found)
