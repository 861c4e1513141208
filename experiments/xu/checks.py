"""Checks the engine's classes do not offer, written on :class:`dpsim.experiment.checks.Check`
so that they share its verdict rules (PASS / FAIL / INCONCLUSIVE on a 95% interval against a
predicted region, REFUSED above 1% unconverged fits) and its one-line format.

* :class:`MeanRatioCheck`: the ratio of the means of two columns of the *same* rows (e.g.
  the simulated mean square error over the sandwich prediction at the simulated θ*, spec
  P4; or the classic-RR error over its population floor, xu spec §3.7), paired per row.
* :class:`PredictedRatioCheck`: a ratio between two slices of an axis (e.g. ε = 1 over
  ε = 3) divided by the same ratio of a prediction column: does the simulated ratio track
  the predicted one (xu spec P3)?
* :class:`IdenticalAcrossCheck`: two values of an axis (classic and debiased RR) give
  identical metrics on every paired replicate (xu spec §4.6, A22): an exact identity, so the
  statistic is the number of mismatches and its region is {0}.

Intervals use the delta method on per-replicate values, paired where the rows are.
"""
from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass

import numpy as np
from dpsim.errors import UsageError
from dpsim.experiment.checks import Check, Estimate, _reps
from dpsim.experiment.summary import Z95, grid_columns, require_unpooled, select


def _log_mean_ratio_se(columns: np.ndarray, signs: np.ndarray) -> tuple[float, float]:
    """log Π mean(c_j)^{s_j} and its delta-method standard error, for paired per-row series
    ``columns`` (n, J) (their full covariance is used) and exponents ``signs`` (J,)."""
    n = columns.shape[0]
    if n < 2:
        raise UsageError("need at least two paired rows")
    means = columns.mean(axis=0)
    if not np.all(means > 0):
        raise UsageError("a mean is not positive; cannot take a ratio")
    grad = signs / means
    cov = np.atleast_2d(np.cov(columns, rowvar=False, ddof=1))
    var = float(grad @ cov @ grad) / n
    return float(signs @ np.log(means)), math.sqrt(max(var, 0.0))


def _fmt(value) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


def _interval(value, se, root):
    scale = 0.5 if root else 1.0
    centre, half = scale * value, scale * Z95 * se
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)


@dataclass(frozen=True)
class MeanRatioCheck(Check):
    """(mean(metric)/mean(reference))^(½ if ``root``) over the selected rows of ``method`` lies
    in [``lo``, ``hi``]; the two columns are paired per row (same replicate and grid point),
    and the interval is the delta method with their covariance."""

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
        for column in (self.metric, self.reference):
            if column not in rows:
                raise UsageError(f"check {self.name!r}: no column {column!r} in the results table")
        pairs = rows[[self.metric, self.reference]].dropna().to_numpy(float)
        log_r, se = _log_mean_ratio_se(pairs, np.array([1.0, -1.0]))
        value, low, high = _interval(log_r, se, self.root)
        what = "RMS ratio" if self.root else "ratio of means"
        return Estimate(value, low, high, self.lo, self.hi, f"[{self.lo:.3g}, {self.hi:.3g}]",
                        f"{value:.3f} [{low:.3f}, {high:.3f}]",
                        f"{what} {self.metric}/{self.reference}, {len(pairs)} paired obs", _reps(rows))


@dataclass(frozen=True)
class PredictedRatioCheck(Check):
    """The simulated ratio [mean(metric | axis = numerator) / mean(metric | axis = denominator)]
    divided by the predicted ratio [the same with the ``prediction`` column], to the power ½
    with ``root``, lies in [``lo``, ``hi``]. The slices are aligned on ``paired_on`` (the
    replicate and the pooled axes), and the interval is the delta method over the four
    paired per-replicate series."""

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
        keys = list(self.paired_on)
        a = select(rows, {self.axis: [self.numerator]}).set_index(keys)[[self.metric, self.prediction]]
        b = select(rows, {self.axis: [self.denominator]}).set_index(keys)[[self.metric, self.prediction]]
        if not (a.index.is_unique and b.index.is_unique):
            raise UsageError(f"check {self.name!r}: rows are not unique on {tuple(keys)} within a slice")
        joined = a.add_suffix("_a").join(b.add_suffix("_b"), how="inner").dropna()
        cols = [f"{self.metric}_a", f"{self.metric}_b", f"{self.prediction}_a", f"{self.prediction}_b"]
        series = joined[cols].to_numpy(float)
        log_r, se = _log_mean_ratio_se(series, np.array([1.0, -1.0, -1.0, 1.0]))
        value, low, high = _interval(log_r, se, self.root)
        sim = math.exp((0.5 if self.root else 1.0) * (math.log(series[:, 0].mean()) - math.log(series[:, 1].mean())))
        pred = math.exp((0.5 if self.root else 1.0) * (math.log(series[:, 2].mean()) - math.log(series[:, 3].mean())))
        return Estimate(value, low, high, self.lo, self.hi, f"[{self.lo:.3g}, {self.hi:.3g}]",
                        f"{value:.3f} [{low:.3f}, {high:.3f}]",
                        f"{self.axis} {_fmt(self.numerator)}/{_fmt(self.denominator)}: simulated ratio {sim:.3f}, "
                        f"predicted {pred:.3f}; {len(series)} paired obs", _reps(rows))


@dataclass(frozen=True)
class IdenticalAcrossCheck(Check):
    """For every replicate and grid point, the ``metrics`` of ``method`` at ``axis = a`` and at
    ``axis = b`` are identical (|difference| ≤ ``tol``). Rows are paired on every grid axis
    except ``axis``, and on the replicate. The statistic is the number of mismatching pairs
    (exact, no Monte-Carlo error); the predicted region is {0}."""

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
        left = select(rows, {self.axis: [self.a]}).set_index(keys)[list(self.metrics)]
        right = select(rows, {self.axis: [self.b]}).set_index(keys)[list(self.metrics)]
        if not (left.index.is_unique and right.index.is_unique):
            raise UsageError(f"check {self.name!r}: rows are not unique per grid point and replicate")
        joined = left.add_suffix("_a").join(right.add_suffix("_b"), how="inner")
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
