"""Stochastic root-finders: the axis value where the mean of a metric equals a target.

Pure NumPy (no JAX, no SciPy): a finder only sees means, variances and replicate counts at
the points it asked for, so :func:`solve_with` drives it with any ``oracle`` (the engine's
runs, or a synthetic function in the tests and the benchmark). A finder is a value (its
settings) and a state (a frozen dataclass): ``init`` → (``ask`` → oracle → ``tell``)* →
``result``. Everything is deterministic given the observations (no hidden random numbers),
so a solve resumes by replaying its asks against stored rows.

Vocabulary, for one configuration c of the other axes (C of them advance together):

* the *lattice*: the K values of the axis a finder may ask for (:meth:`Search.lattice`),
  equally spaced in g(x) = log x (``log=True``) or x; integers only on an integer axis;
* an *ask*: (C, J) lattice values and the new replicates wanted at each (NaN / 0: nothing);
* the *evidence*: every observation pooled per (configuration, lattice point): replicates,
  mean, variance (:class:`Evidence`);
* the target b; the direction (the mean increasing or decreasing in x) is found from the
  evidence unless a finder is told (``increasing``);
* a root's status (:data:`STATUS`): solved; ``below_target`` (the mean stays below b over
  the whole interval searched, b not reached); ``above_target`` (it stays above b); or
  ``undecided`` (bracketed, but the interval is unbounded or the budget ran out first).

The three methods (:class:`ProbabilisticBisection`, :class:`RobbinsMonro`,
:class:`MonotoneInterpolation`) were compared on Bernoulli rates with a closed-form root
(``python -m benchmarks.rootfinding``; ``benchmarks/results/rootfinding.json``: 40
configurations × 20 solves per target b ∈ {0.5, 0.8, 0.9}, 4096 lanes per configuration).
:data:`DEFAULT_FINDER` is :class:`MonotoneInterpolation`, because it had

* the smallest error: RMSE of log(root) 0.015 / 0.018 / 0.023 against 0.033 / 0.043 / 0.038
  for probabilistic bisection and 0.025 / 0.032 / 0.079 for Robbins–Monro;
* intervals that cover at the nominal rate: 0.945 / 0.935 / 0.976 of 800 (bisection
  0.966 / 0.935 / 0.943, but at lattice resolution: its median width is one fixed 0.108;
  Robbins–Monro 0.74 / 0.87 / 0.48, its delta-method interval is too narrow for a finite
  run whose early iterates are far from the root);
* every configuration solved but one of 2400 (Robbins–Monro left 2–17 % undecided).

Its final fit uses every replicate near the root, with an exact (Fieller) interval;
probabilistic bisection keeps only a sign per stage, Robbins–Monro spends its early stages
far from the root. A 65-point grid (the same lattice and fit) needs 14–17× the lanes for
intervals as narrow as the default's; a 17-point grid never gets as narrow (its local fit
spans four times more of the curve).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Callable

import numpy as np

from dpsim.engine.solving.search import (
    Ask,
    Observation,
    RootFinder,
    Roots,
    SOLVED,
    Search,
    State,
    UNDECIDED,
    bracket,
    end_excludes,
    floored_variance,
    lattice_columns,
    local_fit,
    make_ask,
    not_reached_status,
    observed,
    roots_of,
    spread,
    told,
    z_quantile,
)
from dpsim.errors import UsageError


# ----------------------------------------------------------------------------- monotone interpolation


@dataclass(frozen=True)
class MonotoneInterpolation:
    """Staged design with a monotone fit (the default, :data:`DEFAULT_FINDER`).

    Stage 0 evaluates ``initial_points`` lattice points spread over the interval with
    ``initial_reps`` each. Each later stage fits all evidence by weighted isotonic
    regression (direction from the evidence unless ``increasing`` is given), takes its
    crossing of the target, and evaluates the nearest lattice point and the points
    ± ``window`` lattice steps away; the window halves each stage down to one step, and the
    replicates per point grow by ``growth``. A configuration whose fit never reaches the
    target re-evaluates the nearest end point until its interval excludes the target
    (below/above target) or the budget is spent. The estimate is a weighted linear fit of
    the mean on g over the points within ``fit_window`` lattice steps of the crossing, with
    a Fieller interval; if that is unbounded the window is doubled, then tripled (still
    unbounded: undecided). The narrow window keeps the curvature's bias small: 3 steps
    doubled the RMSE at a target of 0.8 in the tuning runs. A configuration stops when its next stage
    would exceed ``budget`` lanes.
    """

    name: str = "monotone"
    initial_points: int = 5
    initial_reps: int = 64
    growth: float = 2.0
    window: int = 4
    min_window: int = 1
    fit_window: float = 1.5
    budget: int = 4096
    increasing: bool | None = None
    level: float = 0.95

    def init(self, search: Search, n_configs: int) -> State:
        return State.start(search, n_configs)

    def _design(self, state: State, c: int, z: float) -> tuple[list[int], list[int]]:
        k = len(state.lattice)
        if state.stage == 0:
            cols = spread(k, min(self.initial_points, k))
            return cols, [self.initial_reps] * len(cols)
        reps = int(round(self.initial_reps * self.growth**state.stage))
        br = bracket(state.search, state.g, state.evidence, c, self.increasing, z)
        if br.not_reached:
            cols = [br.end]
        else:
            center = int(np.argmin(np.abs(state.g - br.cross)))
            w = max(self.min_window, self.window >> (state.stage - 1))
            cols = sorted({min(max(center + o, 0), k - 1) for o in (-w, 0, w)})
        spent = int(state.evidence.n[c].sum())
        while cols and spent + reps * len(cols) > self.budget:
            reps = (self.budget - spent) // len(cols)
            if reps < 2:
                return [], []
        return cols, [reps] * len(cols)

    def ask(self, state: State) -> Ask | None:
        z = z_quantile(self.level)
        designs = [
            ([], []) if state.done[c] else self._design(state, c, z) for c in range(len(state.done))
        ]
        return make_ask(state.lattice, [d[0] for d in designs], [d[1] for d in designs])

    def tell(self, state: State, ask: Ask, obs: Observation) -> State:
        new = told(state, ask, obs)
        done, status = new.done.copy(), new.status.copy()
        z = z_quantile(self.level)
        for c in range(len(done)):
            if done[c]:
                continue
            if not np.any(ask.reps[c] > 0):  # asked nothing: budget spent
                done[c] = True
                continue
            br = bracket(new.search, new.g, new.evidence, c, self.increasing, z)
            if br.not_reached and br.excluded:
                done[c], status[c] = True, br.not_reached
        return replace(new, done=done, status=status)

    def result(self, state: State, level: float = 0.95) -> Roots:
        z = z_quantile(level)
        C = len(state.done)
        root, low, high = np.full(C, np.nan), np.full(C, np.nan), np.full(C, np.nan)
        status, dirs = state.status.copy(), np.zeros(C, np.int8)
        step = abs(state.g[1] - state.g[0]) if len(state.g) > 1 else 1.0
        for c in range(C):
            if not state.evidence.n[c].any():
                status[c] = UNDECIDED
                continue
            br = bracket(state.search, state.g, state.evidence, c, self.increasing, z)
            dirs[c] = br.direction
            if br.not_reached:
                status[c] = br.not_reached if br.excluded else UNDECIDED
                continue
            cols, mean, var, n = observed(state.evidence, c)
            for widen in (1, 2, 3):  # a wider window only if the narrow one is unbounded
                fit = local_fit(
                    state.g[cols],
                    mean,
                    var,
                    n,
                    state.search.target,
                    br.cross,
                    widen * self.fit_window * step,
                    z,
                )
                if fit is not None and not math.isnan(fit.low) and fit.slope * br.direction > 0:
                    break
            root[c] = br.cross if fit is None else fit.root
            if fit is None or math.isnan(fit.low) or fit.slope * br.direction <= 0:
                status[c] = UNDECIDED
            else:
                low[c], high[c], status[c] = fit.low, fit.high, SOLVED
        return roots_of(state, self.name, level, root, low, high, status, dirs)


# ----------------------------------------------------------------------------- probabilistic bisection


@dataclass(frozen=True)
class ProbabilisticBisection:
    """Probabilistic bisection (Waeber, Frazier & Henderson 2013), batched.

    The root's posterior is discrete: K−1 lattice cells plus two atoms for "below low" and
    "above high", uniform at first. Stage 0 evaluates both end points (the direction, unless
    ``increasing`` is given); each later stage queries the lattice point at the posterior
    median with ``reps`` replicates, reads the sign of (stage mean − b), and multiplies the
    cells on the side it points to by p and the others by 1 − p, where p = Φ(|z|) of the
    stage's own z statistic, kept within [½, ``p_max``]. The interval is the posterior's
    equal-tailed credible set, at cell resolution; the estimate its median (linear within a
    cell). An outside atom holding ``level`` of the mass: not bracketed.
    """

    name: str = "bisection"
    reps: int = 128
    p_max: float = 0.9
    budget: int = 4096
    increasing: bool | None = None
    level: float = 0.95

    def init(self, search: Search, n_configs: int) -> State:
        base = State.start(search, n_configs)
        k = len(base.lattice)
        return replace(
            base,
            extra={
                "log_post": np.zeros((n_configs, k + 1)),
                "direction": np.zeros(n_configs, np.int8),
            },
        )

    def ask(self, state: State) -> Ask | None:
        k = len(state.lattice)
        cols, reps = [], []
        for c in range(len(state.done)):
            spent = int(state.evidence.n[c].sum())
            if state.done[c]:
                cols.append([]), reps.append([])
            elif state.stage == 0:
                cols.append([0, k - 1]), reps.append([self.reps, self.reps])
            elif spent + self.reps > self.budget:
                cols.append([]), reps.append([])
            else:
                (
                    cols.append([self._median_point(state.extra["log_post"][c])]),
                    reps.append([self.reps]),
                )
        return make_ask(state.lattice, cols, reps)

    @staticmethod
    def _posterior(log_post: np.ndarray) -> np.ndarray:
        p = np.exp(log_post - log_post.max())
        return p / p.sum()

    def _median_point(self, log_post: np.ndarray) -> int:
        """The lattice point j splitting the posterior nearest to halves (atoms ≤ j vs > j)."""
        cdf = np.cumsum(self._posterior(log_post))[:-1]  # P(atom ≤ j), j = 0 … K−1
        return int(np.argmin(np.abs(cdf - 0.5)))

    def tell(self, state: State, ask: Ask, obs: Observation) -> State:
        new = told(state, ask, obs)
        k, b = len(new.lattice), new.search.target
        log_post, dirs = new.extra["log_post"].copy(), new.extra["direction"].copy()
        done, status = new.done.copy(), new.status.copy()
        cols = lattice_columns(new.lattice, ask.x)
        atoms = np.arange(k + 1)
        for c in range(len(done)):
            if done[c]:
                continue
            if not np.any(ask.reps[c] > 0):
                done[c] = True
                continue
            if dirs[c] == 0:
                dirs[c] = (
                    (1 if self.increasing else -1)
                    if self.increasing is not None
                    else (1 if obs.mean[c, 1] >= obs.mean[c, 0] else -1)
                )
            for j in range(ask.x.shape[1]):
                if cols[c, j] < 0 or obs.n[c, j] <= 0:
                    continue
                var = floored_variance(
                    obs.mean[c, j], obs.var[c, j] if obs.n[c, j] > 1 else 0.0, obs.n[c, j]
                )
                zs = (obs.mean[c, j] - b) / math.sqrt(var / obs.n[c, j])
                p = min(max(NormalDist().cdf(abs(zs)), 0.5), self.p_max)
                beyond = atoms > cols[c, j]  # the root lies above x_j
                says_beyond = dirs[c] * (obs.mean[c, j] - b) < 0
                log_post[c] += np.where(beyond == says_beyond, math.log(p), math.log1p(-p))
            post = self._posterior(log_post[c])
            outside = post[0] if post[0] > post[-1] else post[-1]
            if outside >= self.level:
                done[c] = True
                root_above = post[-1] > post[0]
                status[c] = not_reached_status(-dirs[c] if root_above else dirs[c])
        return replace(
            new, done=done, status=status, extra={"log_post": log_post, "direction": dirs}
        )

    def result(self, state: State, level: float = 0.95) -> Roots:
        C, g = len(state.done), state.g
        root, low, high = np.full(C, np.nan), np.full(C, np.nan), np.full(C, np.nan)
        status, dirs = state.status.copy(), state.extra["direction"]
        for c in range(C):
            if status[c] != SOLVED:
                continue
            post = self._posterior(state.extra["log_post"][c])
            cdf = np.cumsum(post)
            a_lo = int(np.searchsorted(cdf, (1 - level) / 2))
            a_hi = int(np.searchsorted(cdf, 1 - (1 - level) / 2))
            a_med = int(np.searchsorted(cdf, 0.5))
            if (
                a_lo == 0
                or a_hi == len(post) - 1
                or a_med in (0, len(post) - 1)
                or state.stage == 0
            ):
                status[c] = UNDECIDED
                continue
            below = cdf[a_med - 1] if a_med > 0 else 0.0
            frac = (0.5 - below) / post[a_med] if post[a_med] > 0 else 0.5
            root[c] = g[a_med - 1] + frac * (
                g[a_med] - g[a_med - 1]
            )  # atom a is the cell [g[a−1], g[a]]
            low[c], high[c] = g[a_lo - 1], g[a_hi]
        return roots_of(state, self.name, level, root, low, high, status, dirs)


# ----------------------------------------------------------------------------- Robbins–Monro


@dataclass(frozen=True)
class RobbinsMonro:
    """Robbins–Monro on g(x) with Polyak–Ruppert averaging.

    Stage 0 evaluates both ends and the middle with ``initial_reps``; a weighted line through
    them gives the direction, the gain slope β₀ and the start u₀ (its root, clipped). Each
    later stage evaluates the iterate u_t with ``reps`` replicates split between its two
    neighbouring lattice points in proportion to the linear interpolation weights (so the
    interpolated mean is unbiased for the piecewise-linear mean), and steps
    u_{t+1} = clip(u_t − (Ȳ_t − b) / (β_t (t+1)^γ)), β_t the slope of a local linear fit of
    the evidence within 3 steps of u_t when it is significant (``adapt``), else β₀. The
    estimate averages the iterates after the first third of the stages; its interval is
    ū ± z·σ/(|β̂|√N) (delta method: σ² the pooled variance near ū, β̂ a local linear fit's
    slope, N the replicates averaged).
    An average within a step of an end whose interval excludes b: not bracketed.
    """

    name: str = "robbins-monro"
    initial_reps: int = 128
    reps: int = 128
    gamma: float = 0.7
    adapt: bool = True
    budget: int = 4096
    increasing: bool | None = None
    level: float = 0.95

    def init(self, search: Search, n_configs: int) -> State:
        base = State.start(search, n_configs)
        return replace(
            base,
            extra={
                "u": np.full(n_configs, np.nan),
                "slope": np.full(n_configs, np.nan),
                "u_sum": np.zeros(n_configs),
                "u_count": np.zeros(n_configs, np.int64),
                "n_avg": np.zeros(n_configs, np.int64),
                "t": np.zeros(n_configs, np.int64),
            },
        )

    def _stages(self) -> int:
        return max(1, (self.budget - 3 * self.initial_reps) // self.reps)

    def _split(self, g: np.ndarray, u: float) -> tuple[list[int], list[int]]:
        k = len(g)
        i = int(np.clip(np.searchsorted(g, u) - 1, 0, k - 2))
        w = float(np.clip((u - g[i]) / (g[i + 1] - g[i]), 0.0, 1.0))
        hi = int(round(self.reps * w))
        cols = [c for c, r in ((i, self.reps - hi), (i + 1, hi)) if r > 0]
        return cols, [r for r in (self.reps - hi, hi) if r > 0]

    def ask(self, state: State) -> Ask | None:
        k = len(state.lattice)
        cols, reps = [], []
        for c in range(len(state.done)):
            if state.done[c]:
                cols.append([]), reps.append([])
            elif state.stage == 0:
                three = spread(k, 3)
                cols.append(three), reps.append([self.initial_reps] * len(three))
            elif state.extra["t"][c] >= self._stages():
                cols.append([]), reps.append([])
            else:
                cc, rr = self._split(state.g, state.extra["u"][c])
                cols.append(cc), reps.append(rr)
        return make_ask(state.lattice, cols, reps)

    def tell(self, state: State, ask: Ask, obs: Observation) -> State:
        new = told(state, ask, obs)
        g, b = new.g, new.search.target
        ex = {key: v.copy() for key, v in new.extra.items()}
        done = new.done.copy()
        cols = lattice_columns(new.lattice, ask.x)
        burn = self._stages() // 3
        for c in range(len(done)):
            if done[c]:
                continue
            if not np.any(ask.reps[c] > 0):
                done[c] = True
                continue
            used = (cols[c] >= 0) & (obs.n[c] > 0)
            gc, m, n = g[cols[c][used]], obs.mean[c][used], obs.n[c][used].astype(float)
            if np.isnan(ex["u"][c]):  # stage 0: the pilot line
                var = floored_variance(m, np.where(n > 1, obs.var[c][used], 0.0), n)
                w = n / var
                gm = np.average(gc, weights=w)
                beta = np.sum(w * (gc - gm) * (m - np.average(m, weights=w))) / np.sum(
                    w * (gc - gm) ** 2
                )
                d = (
                    (1 if self.increasing else -1)
                    if self.increasing is not None
                    else (1 if beta >= 0 else -1)
                )
                span = g[-1] - g[0]
                beta = d * max(abs(beta), 1e-3 / span)  # a flat pilot still gives a finite gain
                u0 = gm + (b - np.average(m, weights=w)) / beta
                ex["slope"][c], ex["u"][c] = beta, float(np.clip(u0, g[0], g[-1]))
                continue
            y = np.sum(n * m) / n.sum()  # the interpolated mean at u_t
            t = ex["t"][c]
            if t >= burn:
                ex["u_sum"][c] += ex["u"][c]
                ex["u_count"][c] += 1
                ex["n_avg"][c] += int(n.sum())
            slope = ex["slope"][c]
            if self.adapt:  # Venter: the gain from the local slope
                cc, mm, vv, nn = observed(new.evidence, c)
                fit = local_fit(g[cc], mm, vv, nn, b, ex["u"][c], 3.0 * (g[1] - g[0]), 1.0)
                if (
                    fit is not None
                    and fit.slope * slope > 0
                    and abs(fit.slope) > 2.0 * fit.slope_se
                ):
                    ex["slope"][c] = slope = fit.slope
            step = (y - b) / (slope * (t + 1) ** self.gamma)
            ex["u"][c] = float(np.clip(ex["u"][c] - step, g[0], g[-1]))
            ex["t"][c] = t + 1
        return replace(new, done=done, extra=ex)

    def result(self, state: State, level: float = 0.95) -> Roots:
        z = z_quantile(level)
        C, g, b = len(state.done), state.g, state.search.target
        root, low, high = np.full(C, np.nan), np.full(C, np.nan), np.full(C, np.nan)
        status = state.status.copy()
        dirs = np.sign(np.nan_to_num(state.extra["slope"])).astype(np.int8)
        step = abs(g[1] - g[0])
        for c in range(C):
            count = state.extra["u_count"][c]
            if count == 0:
                status[c] = UNDECIDED
                continue
            u_bar = state.extra["u_sum"][c] / count
            cols, mean, var, n = observed(state.evidence, c)
            for end, k in ((g[0], 0), (g[-1], len(g) - 1)):
                at = np.flatnonzero(cols == k)
                if abs(u_bar - end) <= step and at.size:
                    side = dirs[c] * (1 if k == 0 else -1)  # beyond the target on this side
                    if end_excludes(mean[at[0]], var[at[0]], n[at[0]], b, side, z):
                        status[c] = not_reached_status(side)
            if status[c] != SOLVED:
                continue
            fit = local_fit(g[cols], mean, var, n, b, u_bar, 2.0 * step, z)
            near = np.abs(g[cols] - u_bar) <= 2.0 * step
            sigma2 = (
                np.average(var[near], weights=n[near]) if near.any() else np.average(var, weights=n)
            )
            root[c] = u_bar
            if fit is None or fit.slope * dirs[c] <= 0 or abs(fit.slope) <= z * fit.slope_se:
                status[c] = UNDECIDED
                continue
            half = z * math.sqrt(sigma2 / state.extra["n_avg"][c]) / abs(fit.slope)
            low[c], high[c] = u_bar - half, u_bar + half
        return roots_of(state, self.name, level, root, low, high, status, dirs)


DEFAULT_FINDER = MonotoneInterpolation()
FINDERS = {f.name: f for f in (MonotoneInterpolation(), ProbabilisticBisection(), RobbinsMonro())}


def finder_named(name: str) -> RootFinder:
    """The finder called ``name`` (:data:`FINDERS`) with its default settings."""
    try:
        return FINDERS[name]
    except KeyError:
        raise UsageError(
            f"unknown root-finding method {name!r}; choose from {', '.join(FINDERS)}"
        ) from None


# ----------------------------------------------------------------------------- the loop


def solve_with(
    oracle: Callable[[Ask], Observation],
    finder: RootFinder,
    search: Search,
    n_configs: int,
    *,
    max_stages: int = 50,
    level: float = 0.95,
    progress: Callable[[int, Ask, Observation], None] | None = None,
) -> tuple[Roots, list[tuple[Ask, Observation]]]:
    """Run ``finder`` against ``oracle`` until it asks nothing or ``max_stages`` ran.

    Args:
        oracle: evaluates an :class:`Ask` (C, J) into an :class:`Observation` (same layout).
        finder: a :class:`RootFinder` value.  search: the interval and target.
        n_configs: C.  max_stages: the stage cap (a configuration still going is undecided
        only if its own rule says so; its estimate uses the evidence so far).
        level: the intervals' confidence level (a finder's own ``level`` setting decides
            when to stop on a root that is not bracketed).
        progress: called after each stage with (stage index, ask, observation).
    Returns:
        (the :class:`Roots`, the list of (ask, observation) per stage).
    """
    z_quantile(level)
    state = finder.init(search, n_configs)
    history: list[tuple[Ask, Observation]] = []
    for stage in range(max_stages):
        ask = finder.ask(state)
        if ask is None:
            break
        obs = Observation(*(np.asarray(a) for a in oracle(ask)))
        state = finder.tell(state, ask, obs)
        history.append((ask, obs))
        if progress is not None:
            progress(stage, ask, obs)
    return finder.result(state, level), history
