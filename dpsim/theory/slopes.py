"""Slopes of theoretical rates: what a log–log regression of an error on a grid should find
if the error is proportional to the rate (the predicted slope of a rate check)."""

from __future__ import annotations

import numpy as np


def log_slope(rate, axis: str, at: dict, rel_step: float = 1e-4) -> float:
    """Local slope d log rate / d log x of ``rate(**at)`` in the argument ``axis``."""
    hi = dict(at, **{axis: at[axis] * (1 + rel_step)})
    lo = dict(at, **{axis: at[axis] * (1 - rel_step)})
    return float(
        (np.log(rate(**hi)) - np.log(rate(**lo))) / (np.log1p(rel_step) - np.log1p(-rel_step))
    )


def loglog_fit(xs, ys) -> float:
    """Least-squares slope of log ``ys`` on log ``xs`` (positive values, same length)."""
    return float(np.polyfit(np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float)), 1)[0])


def fitted_rate_slope(rate, axis: str, values, at: dict) -> float:
    """Least-squares slope of log rate on log x over the grid ``values`` of ``axis``.

    This is the slope a log–log regression of the error on that grid should recover if
    the error is proportional to the rate: the predicted slope of a rate check.
    """
    xs = np.asarray(values, float)
    return loglog_fit(xs, [rate(**dict(at, **{axis: x})) for x in xs])
