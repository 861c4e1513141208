"""Checks that the engine's classes do not offer, built on :class:`dpsim.experiment.checks.Check`
(same verdict rules: a 95% interval judged against a predicted region; spec §5.7).

* :class:`MethodRatioCheck`: the ratio of a metric's mean between two methods **on the same
  replicates** (paired on grid point and replicate; e.g. R7's private/non-private ℓ2 ratio,
  R9's Laplace/Gaussian privacy-shift ratio).
* :class:`MetricRatioSlopeCheck`: for one method, the slope in log x of log(mean a/mean b) for
  two metrics of the same fits (R3: ‖·‖∞/‖·‖₂ shrinks like √(log m/m)).
* :class:`RelativeLevelCheck`: a metric's mean relative to a known level (R11: "very
  inaccurate" means an error at least that of the estimate 0, ‖β*‖₂).
* :class:`RMSSlopeCheck`: for one method, the slope in log x of the log root mean square of a
  metric (R9: the Laplace chain's privacy shift).

The slope in log x of a ratio of two methods (R7: the ratio falls; R9: the Laplace/Gaussian
ratio grows like √(m(m − 1))) is the engine's
:class:`~dpsim.experiment.checks.MethodRatioSlopeCheck` with a ``region``.

Intervals: delta method on log ratios, with the covariance of paired observations (the
engine's :func:`~dpsim.experiment.checks.paired` and
:func:`~dpsim.experiment.checks.log_ratio_of_means`, and for two metrics of the same fits its
:class:`~dpsim.experiment.checks.RatioOfMeans`); slopes by
:func:`dpsim.experiment.summary.slope_fit` with the per-x standard errors (x values hold
independent data). Predicted regions print by the engine's
:func:`~dpsim.experiment.checks.format_region`.
"""
from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass

import numpy as np

from dpsim.errors import UsageError
from dpsim.experiment.checks import (Check, Claim, Estimate, MethodRatio, RatioOfMeans, _reps, format_region,
                                     log_ratio_of_means)
from dpsim.experiment.summary import Z95, require_unpooled, select, slope_fit


@dataclass(frozen=True)
class MethodRatioCheck(Check):
    """mean(metric | ``numerator``)/mean(metric | ``denominator``) on the same replicates lies
    in [``lo``, ``hi``]; as in the engine's ratio checks, ``root`` takes its square root and
    ``square`` squares the metric first (both: the ratio of root mean squares of a norm). The
    one-line form of the engine's ``Claim(…, MethodRatio(metric, numerator, denominator,
    root, square), (lo, hi))``."""

    metric: str
    numerator: str
    denominator: str
    lo: float
    hi: float
    _: KW_ONLY
    root: bool = False
    square: bool = False

    @property
    def methods(self):
        return (self.numerator, self.denominator)

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, "method", self.metric], f"check {self.name!r}")
        claim = Claim(self.name, self.experiment, MethodRatio(self.metric, self.numerator, self.denominator,
                                                              self.root, self.square),
                      (self.lo, self.hi), where=self.where, pool=self.pool)
        return claim.estimate(rows)


def _slope_estimate(check, rows, log_at, what) -> Estimate:
    """The slope in log ``check.x`` of a log quantity judged against [``check.low``,
    ``check.high``]: ``log_at(rows at x, x)`` gives its (value, standard error) at each x of
    the grid, and the slope is fitted with those standard errors (x values hold independent
    data)."""
    xs = sorted(float(v) for v in rows[check.x].dropna().unique())
    logs, ses = [], []
    for v in xs:
        log_v, se = log_at(select(rows, {check.x: [v]}), v)
        logs.append(log_v)
        ses.append(se)
    if len(xs) < 2:
        raise UsageError(f"check {check.name!r}: need at least two values of x to fit a slope")
    slope, se = slope_fit(np.log(xs), logs, y_se=ses)
    lo, hi = slope - Z95 * se, slope + Z95 * se
    return Estimate(slope, lo, hi, check.low, check.high, format_region(check.low, check.high, signed=True),
                    f"{slope:+.3f} [{lo:+.3f}, {hi:+.3f}]", f"{what}, {len(xs)} grid values", _reps(rows))


@dataclass(frozen=True)
class MetricRatioSlopeCheck(Check):
    """For one method, the slope in log ``x`` of log(mean ``numerator`` / mean ``denominator``)
    (two metrics of the same fits, paired) lies in [``low``, ``high``]."""

    method: str
    numerator: str
    denominator: str
    x: str
    low: float
    high: float

    @property
    def methods(self):
        return (self.method,)

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, self.x, self.numerator], f"check {self.name!r}")
        ratio = RatioOfMeans(self.method, self.numerator, self.denominator, -math.inf, math.inf)
        return _slope_estimate(self, rows, lambda at_x, v: ratio.log_ratio(at_x)[:2],
                               f"log(mean {self.numerator}/mean {self.denominator}) vs log {self.x}")


@dataclass(frozen=True)
class RelativeLevelCheck(Check):
    """mean(metric)/``reference`` lies in [``lo``, ``hi``] (``reference`` a known level, e.g.
    the error of the estimate 0)."""

    metric: str
    method: str
    reference: float
    lo: float
    hi: float
    _: KW_ONLY
    reference_name: str = "reference"

    @property
    def methods(self):
        return (self.method,)

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, self.metric], f"check {self.name!r}")
        values = rows[self.metric].dropna().to_numpy(float)
        if len(values) < 2:
            raise UsageError(f"check {self.name!r}: fewer than two observations")
        mean = values.mean() / self.reference
        half = Z95 * values.std(ddof=1) / math.sqrt(len(values)) / self.reference
        return Estimate(mean, mean - half, mean + half, self.lo, self.hi,
                        f"{format_region(self.lo, self.hi)}×{self.reference_name}",
                        f"{mean:.3f} [{mean - half:.3f}, {mean + half:.3f}]",
                        f"mean {self.metric}/{self.reference:.4g}, {len(values)} obs", _reps(rows))


@dataclass(frozen=True)
class RMSSlopeCheck(Check):
    """For one method, the slope in log ``x`` of log √mean(metric²) (the root mean square:
    what a linearised prediction E‖J z‖² = σ²‖J‖_F² gives exactly, whereas the mean of
    log ‖J z‖ also depends on the shape of the distribution, which changes with the
    dimension) lies in [``low``, ``high``]."""

    metric: str
    method: str
    x: str
    low: float
    high: float

    @property
    def methods(self):
        return (self.method,)

    def estimate(self, rows):
        require_unpooled(rows, [*self.where, *self.pool, self.x, self.metric], f"check {self.name!r}")
        def log_rms(at_x, v):
            sq = at_x[self.metric].dropna().to_numpy(float) ** 2
            return log_ratio_of_means(sq, (1.0,), scale=0.5, what=f"{self.metric!r} at {self.x}={v:g}")

        return _slope_estimate(self, rows, log_rms, f"log RMS {self.metric} vs log {self.x}")
