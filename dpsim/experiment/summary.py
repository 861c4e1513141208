"""Summaries and log–log regressions, always derived from the tidy results table."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from dpsim.experiment.errors import UsageError

Z95 = 1.959963984540054


def select(table: pd.DataFrame, where: Mapping[str, Sequence] | None = None, method: str | None = None) -> pd.DataFrame:
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
        mask &= table["method"].to_numpy() == method
    return table[mask]


def summarise(table: pd.DataFrame, metric: str, by: Sequence[str]) -> pd.DataFrame:
    """Mean, standard deviation, count and 95% normal CI of ``metric`` per group."""
    if metric not in table:
        raise UsageError(f"unknown metric {metric!r}")
    grouped = table.groupby(list(by), dropna=False)[metric]
    out = grouped.agg(mean="mean", sd="std", n="count").reset_index()
    half = Z95 * out["sd"].fillna(0.0) / np.sqrt(out["n"].clip(lower=1))
    out["ci_low"], out["ci_high"] = out["mean"] - half, out["mean"] + half
    return out


@dataclass(frozen=True)
class SlopeFit:
    slope: float
    stderr: float
    ci_low: float
    ci_high: float
    n_points: int
    n_obs: int


def loglog_slope(table: pd.DataFrame, metric: str, x: str, *, log_y: bool = True) -> SlopeFit:
    """OLS slope of (log) metric on log x over replicate-level rows, with a 95% CI.

    The standard error is heteroscedasticity-robust (HC1) since the replicate spread of a
    log error changes along the grid. ``log_y=False`` for metrics that are already logs.
    """
    frame = table[[x, metric]].dropna()
    xs = np.log(frame[x].to_numpy(float))
    ys = frame[metric].to_numpy(float)
    if log_y:
        if np.any(ys <= 0):
            raise UsageError(f"metric {metric!r} has non-positive values; cannot take logs")
        ys = np.log(ys)
    n_points = len(np.unique(xs))
    if n_points < 2 or not np.all(np.isfinite(xs)):
        raise UsageError(f"need at least two finite values of {x!r} to fit a slope")
    design = np.column_stack([np.ones_like(xs), xs])
    coef, *_ = np.linalg.lstsq(design, ys, rcond=None)
    resid = ys - design @ coef
    n = len(ys)
    bread = np.linalg.inv(design.T @ design)
    meat = design.T @ (design * resid[:, None] ** 2)
    cov = bread @ meat @ bread * n / max(n - 2, 1)
    se = float(np.sqrt(cov[1, 1]))
    slope = float(coef[1])
    return SlopeFit(slope, se, slope - Z95 * se, slope + Z95 * se, n_points, n)
