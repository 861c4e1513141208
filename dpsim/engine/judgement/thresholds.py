"""Checks on phase transitions and solved thresholds: the spread of a transition's midpoints
(:class:`ThresholdCollapseCheck`) and how thresholds solved by ``dpsim solve`` scale against a
theorem's rate (:class:`ThresholdScalingCheck`, its :class:`Solve`)."""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass
from typing import Callable

import numpy as np
import pandas as pd

from dpsim.errors import UsageError
from dpsim.engine.judgement.checks import format_value
from dpsim.engine.judgement.statistics import (
    crossing,
    threshold_observations,
    threshold_slope,
    wilson,
)
from dpsim.engine.solving.search import isotonic
from dpsim.engine.presentation.summary import describe_values, require_unpooled, select
from dpsim.engine.judgement.verdicts import (
    Check,
    CheckResult,
    Estimate,
    _interval,
    _reps,
    format_region,
)


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
            raise UsageError(
                f"check {self.name!r}: no rows of method {self.method!r} in {dict(self.where)}"
            )
        if (rows[self.x] <= 0).any():
            raise UsageError(
                f"check {self.name!r}: {self.x!r} must be > 0 (it is put on a log scale)"
            )
        rows = rows.assign(_x=np.round(rows[self.x].to_numpy(float), 12))
        by = list(self.configs)
        curve = (
            rows.groupby(by + ["_x"], dropna=False)[self.metric]
            .agg(successes="sum", n="count")
            .reset_index()
            .rename(columns={"_x": self.x})
        )
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
            out.append(
                {
                    **dict(zip(by, key)),
                    "x_half": lo if status == "crossed" else math.nan,
                    "x_half_low": lo_ci,
                    "x_half_high": hi_ci,
                    "lo": lo,
                    "hi": hi,
                    "status": status,
                    "x_min": xs[0],
                    "x_max": xs[-1],
                    "n_obs": int(w.sum()),
                }
            )
        return pd.DataFrame(out), curve, len(rows)

    def names_read(self):
        return {
            "columns": (self.metric, self.x, *self.configs),
            "axes": (*self.where, *self.pool),
            "methods": self.methods,
        }

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
        span = (
            f"{mids.loc[crossed, 'x_half'].min():.3g}–{mids.loc[crossed, 'x_half'].max():.3g}"
            if n_crossed
            else "none"
        )
        forced = None
        if n_crossed < 2:
            forced = "FAIL"
        if self.expect_collapse:
            region = (1.0, self.max_ratio)
            predicted = (
                f"x½ spread ≤ {self.max_ratio:.2f}, P ≤ {self.p_low:.2f} at x ≤ {self.x_low:g}, "
                f"P ≥ {self.p_high:.2f} at x ≥ {self.x_high:g}"
            )
            sides = f"; P ≤ {max_below:.2f} below, P ≥ {min_above:.2f} above"
            if not (
                len(below) and max_below <= self.p_low and len(above) and min_above >= self.p_high
            ):
                forced = "FAIL"
        else:
            region = (self.max_ratio, math.inf)
            predicted = f"x½ spread > {self.max_ratio:.2f} (no collapse)"
            sides = ""
        fitted = (
            f"x½ {span}, spread {'≥ ' if censored else ''}{spread:.2f} "
            f"[{spread_low:.2f}, {spread_high:.2f}]{sides}"
        )
        evidence = f"{n_crossed}/{len(mids)} configurations cross ½, {n_obs} obs"
        if censored:
            evidence += (
                f"; {censored} censored (never reach ½ on the grid, or start above it): "
                f"their x½ is only bounded, extend the grid of {self.x} to decide"
            )
        detail = {"midpoints": mids, "max_below": max_below, "min_above": min_above}
        return Estimate(
            spread,
            spread_low,
            spread_high,
            *region,
            predicted,
            fitted,
            evidence,
            _reps(rows),
            verdict=forced,
            detail=detail,
        )


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
            object.__setattr__(
                self, "overrides", tuple((k, tuple(v)) for k, v in self.overrides.items())
            )

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
        return {
            "columns": (metric.strip(),),
            "axes": (*self.where, self.solve.axis, self.x, *self.by),
            "methods": (method.strip(),) if method.strip() else (),
        }

    def evaluate(self, table, family: int = 1, stage: int = 1, stages: int = 1):
        raise UsageError(
            f"check {self.name!r} is judged on the roots of a solve "
            f"(`dpsim solve {self.experiment} --for {self.solve.axis}`), not on a grid's rows"
        )

    def search(self, roots: pd.DataFrame) -> tuple[float, float] | None:
        if "searched_low" in roots:
            return None
        if self.solve.within is not None:
            return tuple(self.solve.within)
        return None

    def observations(
        self, roots: pd.DataFrame, search: tuple[float, float] | None = None
    ) -> pd.DataFrame:
        """The judged configurations' observations (:func:`threshold_observations`), with a
        ``reached`` column (the ``reach`` rule)."""
        roots = select(roots, self.where).reset_index(drop=True)
        if roots.empty:
            raise UsageError(f"check {self.name!r}: no roots where {dict(self.where)}")
        configs = [*self.by, self.x]
        level = float(roots["level"].iloc[0]) if "level" in roots else 0.95
        search = search or self.search(roots)
        obs = threshold_observations(
            roots,
            configs,
            rate=self.rate,
            increasing=self.solve.increasing,
            search=search,
            level=level,
        )
        obs["lanes"] = roots["lanes"].to_numpy() if "lanes" in roots else 0
        obs["reached"] = True
        if self.reach is not None:
            lows = (
                roots["searched_low"].to_numpy(float)
                if "searched_low" in roots
                else np.full(len(roots), search[0])
            )
            highs = (
                roots["searched_high"].to_numpy(float)
                if "searched_high" in roots
                else np.full(len(roots), search[1])
            )
            scale = self.reach_rate or self.rate
            rates = np.array([float(scale(row.to_dict())) for _, row in roots.iterrows()])
            obs["reached"] = (lows / rates <= self.reach[0]) & (highs / rates >= self.reach[1])
        return obs

    def evaluate_roots(
        self, roots: pd.DataFrame, family: int = 1, *, search: tuple[float, float] | None = None
    ) -> CheckResult:
        """The check's result on a solve's roots table (one row per configuration; see
        :func:`~dpsim.engine.judgement.statistics.threshold_observations`); ``search``: the interval
        searched when the table has no search columns (default ``solve.within``)."""
        est = self.with_predictions().estimate_roots(roots, search)
        fit = est.detail["slope"]
        # censored: a wider search decides, not replicates; inflated: the interval is the
        # groups' spread (se ∝ √(χ²/dof)·se_MC does not shrink with replicates)
        replicates_decide = (
            fit.inflation <= 1 and math.isfinite(est.low) and math.isfinite(est.high)
        )
        return self.result(est, family, needed=replicates_decide)

    def estimate_roots(
        self, roots: pd.DataFrame, search: tuple[float, float] | None = None
    ) -> Estimate:
        obs = self.observations(roots, search)
        kept = obs[obs["reached"]]
        left = len(obs) - len(kept)
        fit = threshold_slope(kept, self.x, self.by)
        lo, hi = self.region
        expected = (
            f"{self.center:+.3g} ± {(hi - lo) / 2:.2g}"
            if self.center is not None
            else format_region(lo, hi, signed=True)
        )
        bound = (
            ""
            if math.isfinite(fit.low) and math.isfinite(fit.high)
            else (
                "≥ "
                if math.isinf(fit.high) and math.isfinite(fit.low)
                else "≤ "
                if math.isfinite(fit.high)
                else ""
            )
        )
        fitted = f"{bound}{fit.slope:+.3f} {_interval(fit.low, fit.high)}"
        evidence = (
            f"slope of log(threshold / {self.formula}) on log {self.x}, {self.x} ∈ "
            f"{{{describe_values(list(kept[self.x]))}}}, one intercept per {', '.join(self.by) or 'all'} "
            f"({fit.groups} groups); {fit.values} solved, {fit.lower} only bounded below, "
            f"{fit.upper} only bounded above, {fit.unknown} unknown of {len(kept)} configurations; "
            f"χ²/dof {fit.chi2:.1f}/{fit.dof}"
            + (f", interval × {fit.inflation:.2g} (√(χ²/dof))" if fit.inflation > 1 else "")
        )
        if left:
            evidence += (
                f"; {left} of {len(obs)} configurations left out, their interval searched not covering "
                f"{self.reach[0]:g}–{self.reach[1]:g}× the rate"
            )
        if fit.censored and not (math.isfinite(fit.low) and math.isfinite(fit.high)):
            evidence += "; censored roots make the interval open: widen the search to decide"
        reps = max(int(kept["lanes"].sum()), 1)  # a solve's replicates (lanes), all configurations
        return Estimate(
            fit.slope,
            fit.low,
            fit.high,
            lo,
            hi,
            expected,
            fitted,
            evidence,
            reps,
            detail={"slope": fit, "observations": obs},
        )

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
        fig, axes = plt.subplots(
            1, len(panels), figsize=(4.2 * len(panels) + 1.2, 4.2), sharey=True, squeeze=False
        )
        colours = (
            obs[list(colour_axes)].drop_duplicates().sort_values(list(colour_axes))
            if colour_axes
            else None
        )
        cmap = plt.get_cmap("viridis")
        xs_all = np.sort(obs[self.x].unique().astype(float))
        dense = np.geomspace(xs_all[0], xs_all[-1], 60)
        for ax, panel in zip(axes[0], panels):
            part = obs if panel_axis is None else obs[obs[panel_axis] == panel]
            keys = (
                [()]
                if colours is None
                else [tuple(r) for r in colours.itertuples(index=False, name=None)]
            )
            for i, key in enumerate(keys):
                curve = part
                for a, v in zip(colour_axes, key):
                    curve = curve[curve[a] == v]
                if curve.empty:
                    continue
                colour = cmap(i / max(len(keys) - 1, 1))
                label = (
                    ", ".join(f"{a}={format_value(v)}" for a, v in zip(colour_axes, key)) or None
                )
                val = curve[curve["kind"] == "value"].sort_values(self.x)
                on = val[val["reached"]]
                ax.errorbar(
                    on[self.x],
                    on["root"],
                    yerr=[on["root"] - on["low"], on["high"] - on["root"]],
                    fmt="o",
                    color=colour,
                    ms=4,
                    capsize=2,
                    label=label,
                )
                off = val[~val["reached"]]
                ax.errorbar(
                    off[self.x],
                    off["root"],
                    yerr=[off["root"] - off["low"], off["high"] - off["root"]],
                    fmt="o",
                    mfc="none",
                    color=colour,
                    ms=4,
                    capsize=2,
                    alpha=0.6,
                )
                for kind, marker in (("lower", "^"), ("upper", "v")):
                    cens = curve[curve["kind"] == kind]
                    for reached, face in ((True, colour), (False, "none")):
                        pts = cens[cens["reached"] == reached]
                        ax.scatter(
                            pts[self.x],
                            pts["root"],
                            marker=marker,
                            s=40,
                            facecolors=face,
                            edgecolors=colour,
                        )
                point = selected.loc[curve.index[0]].to_dict()  # obs and selected share one index
                ax.plot(
                    dense,
                    [constant * float(self.rate({**point, self.x: x})) for x in dense],
                    "-",
                    color=colour,
                    lw=1,
                    alpha=0.8,
                )
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(xs_all, [format_value(float(v)) for v in xs_all])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set_xlabel(self.x)
            ax.set_title(f"{panel_axis}={format_value(panel)}" if panel_axis else "")
            ax.grid(True, which="both", alpha=0.25)
        axes[0][0].set_ylabel(f"solved {self.solve.axis} ({self.solve.target})")
        handles, labels = axes[0][0].get_legend_handles_labels()
        if handles:
            fig.legend(handles, labels, loc="center right", fontsize=8, frameon=False)
        fig.suptitle(
            f"{self.name}: solved thresholds and {constant:.3g}·{self.formula}\n"
            f"(95% CI; ▲ only bounded below, ▼ above; hollow: left out)",
            fontsize=9,
        )
        fig.tight_layout(rect=(0, 0, 0.86 if handles else 1, 0.92))
        return fig
