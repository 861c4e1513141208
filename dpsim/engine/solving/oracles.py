"""Synthetic oracles with a closed-form root, for the tests and the benchmark of the root-finders:
a logistic Bernoulli rate and its root, and oracles drawing Bernoulli or normal observations
for an :class:`~dpsim.engine.solving.search.Ask`. Pure NumPy."""

from __future__ import annotations

from typing import Callable

import numpy as np

from dpsim.engine.solving.search import Ask, Observation


# ----------------------------------------------------------------------------- synthetic oracles


def logistic_rate(x, x0, slope, floor: float = 0.0, ceiling: float = 1.0) -> np.ndarray:
    """A Bernoulli rate with a closed-form root: p(x) = floor + (ceiling − floor)·σ(slope·(log x − log x0)),
    σ the logistic function (slope < 0: decreasing in x). Broadcasts ``x`` (C, J) with (C,) parameters."""
    x = np.asarray(x, dtype=float)
    col = lambda v: (
        np.asarray(v, dtype=float).reshape((-1,) + (1,) * (x.ndim - 1)) if np.ndim(v) else v
    )
    t = col(slope) * (np.log(x) - np.log(col(x0)))
    return col(floor) + (col(ceiling) - col(floor)) / (1.0 + np.exp(-t))


def logistic_root(x0, slope, target, floor: float = 0.0, ceiling: float = 1.0) -> np.ndarray:
    """The x where :func:`logistic_rate` equals ``target`` (NaN if it never does)."""
    q = (np.asarray(target, float) - floor) / (np.asarray(ceiling, float) - floor)
    with np.errstate(invalid="ignore", divide="ignore"):
        root = np.asarray(x0, float) * np.exp(np.log(q / (1 - q)) / np.asarray(slope, float))
        return np.where((q > 0) & (q < 1), root, np.nan)


def bernoulli_oracle(
    rate: Callable[[np.ndarray], np.ndarray], seed: int
) -> Callable[[Ask], Observation]:
    """An oracle drawing, for each asked (c, j), ``reps`` Bernoulli(rate(x)) replicates from
    its own seeded generator (deterministic given the seed and the sequence of asks); the
    variance is the sample variance p̂(1−p̂)·n/(n−1) the engine reports for a rate."""
    rng = np.random.default_rng(seed)

    def oracle(ask: Ask) -> Observation:
        n = np.asarray(ask.reps, np.int64)
        p = np.where(n > 0, rate(np.where(np.isnan(ask.x), 1.0, ask.x)), 0.0)
        mean = np.where(n > 0, rng.binomial(n, np.clip(p, 0.0, 1.0)) / np.maximum(n, 1), np.nan)
        var = np.where(n > 1, mean * (1 - mean) * n / np.maximum(n - 1, 1), np.nan)
        return Observation(mean, var, n)

    return oracle


def normal_oracle(
    mean_fn: Callable[[np.ndarray], np.ndarray], sd: float, seed: int
) -> Callable[[Ask], Observation]:
    """An oracle for a continuous metric: ``reps`` draws of N(mean_fn(x), sd²) per asked
    point, summarised exactly (the mean ~ N(μ, sd²/n), the variance ~ sd²·χ²_{n−1}/(n−1))."""
    rng = np.random.default_rng(seed)

    def oracle(ask: Ask) -> Observation:
        n = np.asarray(ask.reps, np.int64)
        mu = mean_fn(np.where(np.isnan(ask.x), 1.0, ask.x))
        mean = np.where(
            n > 0, mu + sd * rng.standard_normal(n.shape) / np.sqrt(np.maximum(n, 1)), np.nan
        )
        var = np.where(
            n > 1, sd**2 * rng.chisquare(np.maximum(n - 1, 1)) / np.maximum(n - 1, 1), np.nan
        )
        return Observation(mean, var, n)

    return oracle
