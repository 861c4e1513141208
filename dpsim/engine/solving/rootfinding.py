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
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Callable, NamedTuple, Protocol

import numpy as np

from dpsim.errors import UsageError

SOLVED, BELOW_TARGET, ABOVE_TARGET, UNDECIDED = 0, 1, 2, 3
STATUS = {SOLVED: "solved", BELOW_TARGET: "below_target", ABOVE_TARGET: "above_target", UNDECIDED: "undecided"}


def status_name(code) -> str:
    """The name of a status code (:data:`STATUS`); raises UsageError for an unknown code."""
    try:
        return STATUS[int(code)]
    except (KeyError, ValueError, TypeError):
        raise UsageError(f"unknown root status {code!r}; codes are {sorted(STATUS)}") from None


def z_quantile(level: float) -> float:
    """Two-sided normal quantile of a ``level`` interval (1.96 for 0.95)."""
    if not 0.0 < level < 1.0:
        raise UsageError(f"confidence level {level!r} must lie strictly between 0 and 1")
    return NormalDist().inv_cdf(0.5 + level / 2.0)


# ----------------------------------------------------------------------------- the search

@dataclass(frozen=True)
class Search:
    """The interval searched for one axis and the target.

    Attributes:
        low, high: the axis interval (inclusive), ``low < high`` (``low > 0`` when ``log``).
        target: b, solve mean(METRIC)(x) = b.
        integer: an integer axis: the lattice holds integers only.
        log: lattice and interpolation in log x; False: in x.
        points: lattice size K (an integer axis: at most this many distinct integers).
    """

    low: float
    high: float
    target: float
    integer: bool = False
    log: bool = True
    points: int = 65

    def __post_init__(self):
        if not (math.isfinite(self.low) and math.isfinite(self.high) and self.low < self.high):
            raise UsageError(f"search interval [{self.low}, {self.high}]: need finite low < high")
        if self.log and self.low <= 0:
            raise UsageError(f"search interval [{self.low}, {self.high}]: a log search needs low > 0")
        if not math.isfinite(self.target):
            raise UsageError(f"target {self.target!r} must be a finite number")
        if int(self.points) != self.points or self.points < 3:
            raise UsageError(f"lattice points {self.points!r}: need an integer ≥ 3")
        if self.integer and math.floor(self.high) - math.ceil(self.low) < 1:
            raise UsageError(f"integer search interval [{self.low}, {self.high}] holds fewer than 2 integers")

    def g(self, x) -> np.ndarray:
        """The scale the finders work on: log x or x."""
        x = np.asarray(x, dtype=float)
        return np.log(x) if self.log else x

    def g_inverse(self, u) -> np.ndarray:
        """x from g(x)."""
        u = np.asarray(u, dtype=float)
        return np.exp(u) if self.log else u

    def lattice(self) -> np.ndarray:
        """(K,) sorted distinct values, ``low`` and ``high`` included (an integer axis: the
        integers ⌈low⌉ … ⌊high⌋, all of them if at most ``points``, else ``points`` values
        spread evenly on the g scale and rounded, so possibly fewer)."""
        if self.integer:
            lo, hi = math.ceil(self.low), math.floor(self.high)
            if hi - lo + 1 <= self.points:
                return np.arange(lo, hi + 1, dtype=float)
            spread = self.g_inverse(np.linspace(self.g(lo), self.g(hi), self.points))
            return np.unique(np.clip(np.round(spread), lo, hi))
        values = self.g_inverse(np.linspace(self.g(self.low), self.g(self.high), self.points))
        values[0], values[-1] = self.low, self.high
        return values


class Ask(NamedTuple):
    """What a finder wants evaluated this stage, (C, J): lattice values ``x`` (NaN where a
    configuration asks nothing) and ``reps``, the new replicates wanted there (0 at NaN)."""

    x: np.ndarray
    reps: np.ndarray


class Observation(NamedTuple):
    """The evaluation of an :class:`Ask`, same (C, J) layout: ``mean`` and ``var`` (sample
    variance, ddof=1) of the metric over the new replicates, and ``n`` the replicates used."""

    mean: np.ndarray
    var: np.ndarray
    n: np.ndarray


@dataclass(frozen=True)
class Roots:
    """A solve's answer, (C,) arrays: ``root`` (estimate, in x) and its interval
    [``low``, ``high``] at ``level`` (NaN where there is none), ``status`` (int8,
    :data:`STATUS`), ``lanes`` (replicates spent per configuration), ``stages`` run,
    ``method`` and ``level``; ``search`` (the interval searched, reported with a root that
    was not bracketed) and ``increasing`` (+1 / −1, the direction used; 0 unknown)."""

    root: np.ndarray
    low: np.ndarray
    high: np.ndarray
    status: np.ndarray
    lanes: np.ndarray
    stages: int
    method: str
    level: float
    search: Search | None = None
    increasing: np.ndarray | None = None

    def names(self) -> list[str]:
        """The status names, one per configuration."""
        return [status_name(s) for s in self.status]


# ----------------------------------------------------------------------------- evidence

@dataclass(frozen=True)
class Evidence:
    """Every observation pooled per (configuration, lattice point), (C, K) arrays: ``n``
    replicates, ``total`` (sum of values) and ``square`` (sum of squared values)."""

    n: np.ndarray
    total: np.ndarray
    square: np.ndarray

    @staticmethod
    def empty(n_configs: int, k: int) -> "Evidence":
        return Evidence(np.zeros((n_configs, k), np.int64), np.zeros((n_configs, k)), np.zeros((n_configs, k)))

    def add(self, columns: np.ndarray, obs: Observation) -> "Evidence":
        """New evidence with ``obs`` pooled in; ``columns`` (C, J) lattice indices (−1: none)."""
        n_obs = np.where(columns >= 0, np.nan_to_num(np.asarray(obs.n, dtype=float)), 0).astype(np.int64)
        mean = np.where(n_obs > 0, np.nan_to_num(np.asarray(obs.mean, dtype=float)), 0.0)
        var = np.where(n_obs > 1, np.nan_to_num(np.asarray(obs.var, dtype=float)), 0.0)
        rows = np.broadcast_to(np.arange(columns.shape[0])[:, None], columns.shape)
        ok = n_obs > 0
        n, total, square = self.n.copy(), self.total.copy(), self.square.copy()
        np.add.at(n, (rows[ok], columns[ok]), n_obs[ok])
        np.add.at(total, (rows[ok], columns[ok]), (n_obs * mean)[ok])
        np.add.at(square, (rows[ok], columns[ok]), ((n_obs - 1) * var + n_obs * mean ** 2)[ok])
        return Evidence(n, total, square)

    def mean(self) -> np.ndarray:
        """(C, K) pooled means (NaN where nothing was observed)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.n > 0, self.total / np.maximum(self.n, 1), np.nan)

    def variance(self) -> np.ndarray:
        """(C, K) pooled sample variances, floored (:func:`floored_variance`)."""
        n = np.maximum(self.n, 1)
        mean = self.total / n
        raw = np.where(self.n > 1, (self.square - n * mean ** 2) / np.maximum(n - 1, 1), 0.0)
        return floored_variance(mean, np.maximum(raw, 0.0), self.n)


def floored_variance(mean: np.ndarray, var: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Variances safe to weigh by: a Bernoulli-looking point (its variance is p̂(1−p̂)·n/(n−1),
    or 0 with a mean of 0 or 1) gets at least p̃(1−p̃) with p̃ = (k + ½)/(n + 1), k = n·p̂
    successes (so 0 or 1 successes do not claim near-zero noise); any other zero variance is
    floored at 1e-12·max(1, mean²).

    Args:
        mean, var, n: same-shape arrays (pooled means, sample variances, replicates).
    Returns:
        the floored variances, same shape.
    """
    mean, var, n = np.asarray(mean, float), np.asarray(var, float), np.asarray(n, float)
    n1 = np.maximum(n, 1.0)
    bern = mean * (1.0 - mean) * n1 / np.maximum(n1 - 1.0, 1.0)
    in_unit = (mean >= 0.0) & (mean <= 1.0)
    looks_bernoulli = in_unit & ((np.abs(var - bern) <= 1e-9 * np.maximum(bern, 1e-300)) | (var == 0.0)
                                 & ((mean == 0.0) | (mean == 1.0)))
    p = (mean * n1 + 0.5) / (n1 + 1.0)
    floor = np.where(looks_bernoulli, p * (1.0 - p), 1e-12 * np.maximum(1.0, mean ** 2))
    return np.maximum(var, floor)


def lattice_columns(lattice: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Lattice indices of asked values ``x`` (−1 at NaN); raises UsageError for an off-lattice value."""
    x = np.asarray(x, dtype=float)
    idx = np.clip(np.searchsorted(lattice, np.nan_to_num(x, nan=lattice[0])), 0, len(lattice) - 1)
    left = np.clip(idx - 1, 0, len(lattice) - 1)
    idx = np.where(np.abs(lattice[left] - x) < np.abs(lattice[idx] - x), left, idx)
    bad = ~np.isnan(x) & ~np.isclose(lattice[idx], x, rtol=1e-9, atol=0.0)
    if bad.any():
        raise UsageError(f"asked value {x[bad][0]!r} is not on the search lattice")
    return np.where(np.isnan(x), -1, idx)


def make_ask(lattice: np.ndarray, columns: list[list[int]], reps: list[list[int]]) -> Ask | None:
    """An :class:`Ask` from per-configuration lists of lattice indices and replicates
    (a configuration with an empty list asks nothing; None when none asks anything)."""
    width = max((len(c) for c in columns), default=0)
    if width == 0:
        return None
    x = np.full((len(columns), width), np.nan)
    r = np.zeros((len(columns), width), np.int64)
    for c, (cols, rr) in enumerate(zip(columns, reps)):
        for j, (k, n) in enumerate(zip(cols, rr)):
            if n > 0:
                x[c, j], r[c, j] = lattice[k], n
    return Ask(x, r)


# ----------------------------------------------------------------------------- shared fits

def isotonic(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted non-decreasing least-squares fit (pool adjacent violators).

    Args:
        y, w: (m,) values in x order and positive weights.
    Returns:
        (m,) the fitted non-decreasing values.
    """
    blocks: list[list[float]] = []          # [weighted mean, weight, count]
    for yi, wi in zip(y, w):
        blocks.append([float(yi), float(wi), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    return np.concatenate([np.full(c, m) for m, _, c in blocks]) if blocks else np.zeros(0)


def direction(g: np.ndarray, mean: np.ndarray, weight: np.ndarray) -> int:
    """+1 if the evidence is better fit by a non-decreasing mean in g than a non-increasing
    one, else −1 (weighted isotonic residuals; a tie goes to the sign of the end difference)."""
    up = isotonic(mean, weight)
    down = -isotonic(-mean, weight)
    rss_up, rss_down = np.sum(weight * (mean - up) ** 2), np.sum(weight * (mean - down) ** 2)
    if not math.isclose(rss_up, rss_down, rel_tol=1e-12, abs_tol=1e-300):
        return 1 if rss_up < rss_down else -1
    return 1 if mean[-1] >= mean[0] else -1


def crossing(g: np.ndarray, fitted: np.ndarray) -> float:
    """Where a non-decreasing fit on points g crosses 0 (linear between the points; the middle
    of a plateau at exactly 0); NaN if it stays on one side."""
    if fitted[-1] < 0 or fitted[0] > 0:
        return math.nan
    zero = np.flatnonzero(fitted == 0)
    if zero.size:
        return 0.5 * (g[zero[0]] + g[zero[-1]])
    i = int(np.flatnonzero(fitted > 0)[0])
    return float(g[i - 1] + (g[i] - g[i - 1]) * (0 - fitted[i - 1]) / (fitted[i] - fitted[i - 1]))


def fieller(num: float, den: float, v_num: float, v_den: float, cov: float, z: float) -> tuple[float, float] | None:
    """Fieller's interval for θ = num/den: {θ : (num − θ·den)² ≤ z²·Var(num − θ·den)}.

    Returns:
        (low, high), or None when the set is unbounded (den not significantly non-zero).
    """
    a = den ** 2 - z ** 2 * v_den
    if a <= 0:
        return None
    b = num * den - z ** 2 * cov
    c = num ** 2 - z ** 2 * v_num
    disc = max(b * b - a * c, 0.0)
    root = math.sqrt(disc)
    return (b - root) / a, (b + root) / a


class LocalFit(NamedTuple):
    """A weighted linear fit of mean on g near a root: the root g, its Fieller interval
    (NaN, NaN when unbounded), the slope and its standard error, and the points used."""

    root: float
    low: float
    high: float
    slope: float
    slope_se: float
    points: int


def local_fit(g: np.ndarray, mean: np.ndarray, var: np.ndarray, n: np.ndarray, target: float,
              center: float, halfwidth: float, z: float) -> LocalFit | None:
    """Fit mean = α + β(g − center) by weighted least squares (weights n/var) over the
    observed points within ``halfwidth`` of ``center`` (widened to the nearest two distinct
    points if fewer), and solve α + β(g − center) = target with a Fieller interval. With
    more than two points the covariance is scaled by max(1, χ²/(m − 2))
    (the weighted residuals' excess over their variances: curvature, or noise the variances
    miss); measured on the benchmark's case it lifted the default's coverage at b = 0.8 from
    0.932 to 0.949 (1600 intervals each) for 10–17 % wider intervals. Every finder's local
    fit (Robbins–Monro's slope test too) is scaled so.

    Args:
        g, mean, var, n: (m,) observed points (n > 0), any order.
        target: b.  center: the current root estimate (g).  halfwidth: the window (g).
        z: the interval's normal quantile.
    Returns:
        a :class:`LocalFit`, or None with fewer than two points.
    """
    if g.size < 2:
        return None
    dist = np.abs(g - center)
    use = dist <= halfwidth * (1 + 1e-9)
    if use.sum() < 2:
        use = dist <= np.sort(dist)[1] * (1 + 1e-9)
    d, y, w = g[use] - center, mean[use], n[use] / var[use]
    xtwx = np.array([[w.sum(), (w * d).sum()], [(w * d).sum(), (w * d * d).sum()]])
    if np.linalg.det(xtwx) <= 1e-12 * xtwx[0, 0] * max(xtwx[1, 1], 1e-300):
        return None
    cov = np.linalg.inv(xtwx)
    alpha, beta = cov @ np.array([(w * y).sum(), (w * d * y).sum()])
    if use.sum() > 2:
        chi2 = float(np.sum(w * (y - alpha - beta * d) ** 2)) / (use.sum() - 2)
        cov = cov * max(1.0, chi2)
    root = center + (target - alpha) / beta if beta != 0 else math.nan
    ci = fieller(target - alpha, beta, cov[0, 0], cov[1, 1], -cov[0, 1], z)
    low, high = (math.nan, math.nan) if ci is None else (center + ci[0], center + ci[1])
    return LocalFit(float(root), float(low), float(high), float(beta), float(math.sqrt(cov[1, 1])), int(use.sum()))


def end_excludes(mean: float, var: float, n: float, target: float, side: int, z: float) -> bool:
    """True when the end point's mean lies beyond the target on ``side`` (+1 above, −1 below)
    with its ``z`` interval excluding it."""
    if n <= 0:
        return False
    half = z * math.sqrt(var / n)
    return (mean - half > target) if side > 0 else (mean + half < target)


def not_reached_status(sign_of_mean_minus_target: int) -> int:
    """BELOW_TARGET when the mean stays below b, ABOVE_TARGET when above."""
    return BELOW_TARGET if sign_of_mean_minus_target < 0 else ABOVE_TARGET


def observed(ev: Evidence, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Configuration c's observed lattice indices with their pooled mean, floored variance and n."""
    cols = np.flatnonzero(ev.n[c] > 0)
    row = Evidence(ev.n[c:c + 1, cols], ev.total[c:c + 1, cols], ev.square[c:c + 1, cols])   # row c only
    return cols, row.mean()[0], row.variance()[0], ev.n[c, cols].astype(float)


class Bracket(NamedTuple):
    """What the isotonic fit of one configuration's evidence says: the direction (±1), the
    crossing (g, NaN if none), and, if not reached, the status that would apply and whether
    the end point already excludes the target."""

    direction: int
    cross: float
    not_reached: int            # 0 (it crosses) or BELOW_TARGET / ABOVE_TARGET
    end: int                    # the lattice index of the end to examine when not reached (−1: none)
    excluded: bool


def bracket(search: Search, g: np.ndarray, ev: Evidence, c: int, increasing: bool | None, z: float) -> Bracket:
    """The isotonic reading of configuration c's evidence (:class:`Bracket`)."""
    cols, mean, var, n = observed(ev, c)
    w = n / var
    d = (1 if increasing else -1) if increasing is not None else direction(g[cols], mean, w)
    fitted = isotonic(d * (mean - search.target), w)
    cross = crossing(g[cols], fitted)
    if not math.isnan(cross):
        return Bracket(d, cross, 0, -1, False)
    if fitted[-1] < 0:        # d·(mean − b) < 0 everywhere: the high-x end is where it comes closest
        k, side = len(g) - 1, -d
    else:
        k, side = 0, d
    at = np.flatnonzero(cols == k)
    excl = bool(at.size) and end_excludes(mean[at[0]], var[at[0]], n[at[0]], search.target, side, z)
    return Bracket(d, math.nan, not_reached_status(side), k, excl)


# ----------------------------------------------------------------------------- the protocol

class RootFinder(Protocol):
    """A root-finding method: a value holding its settings; its state is a frozen dataclass."""

    name: str

    def init(self, search: Search, n_configs: int): ...

    def ask(self, state) -> Ask | None: ...

    def tell(self, state, ask: Ask, obs: Observation): ...

    def result(self, state, level: float = 0.95) -> Roots: ...


@dataclass(frozen=True)
class State:
    """A finder's state: the search, its lattice and g values, the pooled evidence, the
    stage count, per configuration ``done`` (bool) and ``status`` (int8, set for a
    configuration finished as not bracketed), and ``extra`` (method-specific arrays)."""

    search: Search
    lattice: np.ndarray
    g: np.ndarray
    evidence: Evidence
    stage: int
    done: np.ndarray
    status: np.ndarray
    extra: dict = field(default_factory=dict)

    @staticmethod
    def start(search: Search, n_configs: int, **extra) -> "State":
        if int(n_configs) != n_configs or n_configs < 1:
            raise UsageError(f"number of configurations {n_configs!r}: need an integer ≥ 1")
        lattice = search.lattice()
        return State(search, lattice, search.g(lattice), Evidence.empty(n_configs, len(lattice)), 0,
                     np.zeros(n_configs, bool), np.full(n_configs, SOLVED, np.int8), dict(extra))

    @property
    def lanes(self) -> np.ndarray:
        return self.evidence.n.sum(axis=1)


def told(state: State, ask: Ask, obs: Observation, **extra) -> State:
    """The state after pooling ``obs`` (for ``ask``) into the evidence, one stage later."""
    shape = np.shape(ask.x)
    for name, arr in zip(Observation._fields, obs):
        if np.shape(arr) != shape:
            raise UsageError(f"observation {name} has shape {np.shape(arr)}, the ask {shape}")
    ev = state.evidence.add(lattice_columns(state.lattice, ask.x), obs)
    return replace(state, evidence=ev, stage=state.stage + 1, extra={**state.extra, **extra})


def spread(k: int, count: int) -> list[int]:
    """``count`` lattice indices spread evenly over 0 … k−1, ends included."""
    return sorted({int(round(v)) for v in np.linspace(0, k - 1, count)})


def _roots(state: State, method: str, level: float, root_g, low_g, high_g, status, direction) -> Roots:
    s = state.search
    return Roots(root=s.g_inverse(root_g), low=s.g_inverse(low_g), high=s.g_inverse(high_g),
                 status=np.asarray(status, np.int8), lanes=state.lanes, stages=state.stage, method=method,
                 level=level, search=s, increasing=np.asarray(direction, np.int8))


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
        reps = int(round(self.initial_reps * self.growth ** state.stage))
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
        designs = [([], []) if state.done[c] else self._design(state, c, z) for c in range(len(state.done))]
        return make_ask(state.lattice, [d[0] for d in designs], [d[1] for d in designs])

    def tell(self, state: State, ask: Ask, obs: Observation) -> State:
        new = told(state, ask, obs)
        done, status = new.done.copy(), new.status.copy()
        z = z_quantile(self.level)
        for c in range(len(done)):
            if done[c]:
                continue
            if not np.any(ask.reps[c] > 0):           # asked nothing: budget spent
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
            for widen in (1, 2, 3):                 # a wider window only if the narrow one is unbounded
                fit = local_fit(state.g[cols], mean, var, n, state.search.target, br.cross,
                                widen * self.fit_window * step, z)
                if fit is not None and not math.isnan(fit.low) and fit.slope * br.direction > 0:
                    break
            root[c] = br.cross if fit is None else fit.root
            if fit is None or math.isnan(fit.low) or fit.slope * br.direction <= 0:
                status[c] = UNDECIDED
            else:
                low[c], high[c], status[c] = fit.low, fit.high, SOLVED
        return _roots(state, self.name, level, root, low, high, status, dirs)


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
        return replace(base, extra={"log_post": np.zeros((n_configs, k + 1)),
                                    "direction": np.zeros(n_configs, np.int8)})

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
                cols.append([self._median_point(state.extra["log_post"][c])]), reps.append([self.reps])
        return make_ask(state.lattice, cols, reps)

    @staticmethod
    def _posterior(log_post: np.ndarray) -> np.ndarray:
        p = np.exp(log_post - log_post.max())
        return p / p.sum()

    def _median_point(self, log_post: np.ndarray) -> int:
        """The lattice point j splitting the posterior nearest to halves (atoms ≤ j vs > j)."""
        cdf = np.cumsum(self._posterior(log_post))[:-1]          # P(atom ≤ j), j = 0 … K−1
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
                dirs[c] = (1 if self.increasing else -1) if self.increasing is not None else (
                    1 if obs.mean[c, 1] >= obs.mean[c, 0] else -1)
            for j in range(ask.x.shape[1]):
                if cols[c, j] < 0 or obs.n[c, j] <= 0:
                    continue
                var = floored_variance(obs.mean[c, j], obs.var[c, j] if obs.n[c, j] > 1 else 0.0, obs.n[c, j])
                zs = (obs.mean[c, j] - b) / math.sqrt(var / obs.n[c, j])
                p = min(max(NormalDist().cdf(abs(zs)), 0.5), self.p_max)
                beyond = atoms > cols[c, j]                 # the root lies above x_j
                says_beyond = dirs[c] * (obs.mean[c, j] - b) < 0
                log_post[c] += np.where(beyond == says_beyond, math.log(p), math.log1p(-p))
            post = self._posterior(log_post[c])
            outside = post[0] if post[0] > post[-1] else post[-1]
            if outside >= self.level:
                done[c] = True
                root_above = post[-1] > post[0]
                status[c] = not_reached_status(-dirs[c] if root_above else dirs[c])
        return replace(new, done=done, status=status, extra={"log_post": log_post, "direction": dirs})

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
            if a_lo == 0 or a_hi == len(post) - 1 or a_med in (0, len(post) - 1) or state.stage == 0:
                status[c] = UNDECIDED
                continue
            below = cdf[a_med - 1] if a_med > 0 else 0.0
            frac = (0.5 - below) / post[a_med] if post[a_med] > 0 else 0.5
            root[c] = g[a_med - 1] + frac * (g[a_med] - g[a_med - 1])     # atom a is the cell [g[a−1], g[a]]
            low[c], high[c] = g[a_lo - 1], g[a_hi]
        return _roots(state, self.name, level, root, low, high, status, dirs)


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
        return replace(base, extra={"u": np.full(n_configs, np.nan), "slope": np.full(n_configs, np.nan),
                                    "u_sum": np.zeros(n_configs), "u_count": np.zeros(n_configs, np.int64),
                                    "n_avg": np.zeros(n_configs, np.int64), "t": np.zeros(n_configs, np.int64)})

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
            if np.isnan(ex["u"][c]):                                 # stage 0: the pilot line
                var = floored_variance(m, np.where(n > 1, obs.var[c][used], 0.0), n)
                w = n / var
                gm = np.average(gc, weights=w)
                beta = np.sum(w * (gc - gm) * (m - np.average(m, weights=w))) / np.sum(w * (gc - gm) ** 2)
                d = (1 if self.increasing else -1) if self.increasing is not None else (1 if beta >= 0 else -1)
                span = g[-1] - g[0]
                beta = d * max(abs(beta), 1e-3 / span)              # a flat pilot still gives a finite gain
                u0 = gm + (b - np.average(m, weights=w)) / beta
                ex["slope"][c], ex["u"][c] = beta, float(np.clip(u0, g[0], g[-1]))
                continue
            y = np.sum(n * m) / n.sum()                              # the interpolated mean at u_t
            t = ex["t"][c]
            if t >= burn:
                ex["u_sum"][c] += ex["u"][c]
                ex["u_count"][c] += 1
                ex["n_avg"][c] += int(n.sum())
            slope = ex["slope"][c]
            if self.adapt:                                           # Venter: the gain from the local slope
                cc, mm, vv, nn = observed(new.evidence, c)
                fit = local_fit(g[cc], mm, vv, nn, b, ex["u"][c], 3.0 * (g[1] - g[0]), 1.0)
                if fit is not None and fit.slope * slope > 0 and abs(fit.slope) > 2.0 * fit.slope_se:
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
                    side = dirs[c] * (1 if k == 0 else -1)           # beyond the target on this side
                    if end_excludes(mean[at[0]], var[at[0]], n[at[0]], b, side, z):
                        status[c] = not_reached_status(side)
            if status[c] != SOLVED:
                continue
            fit = local_fit(g[cols], mean, var, n, b, u_bar, 2.0 * step, z)
            near = np.abs(g[cols] - u_bar) <= 2.0 * step
            sigma2 = np.average(var[near], weights=n[near]) if near.any() else np.average(var, weights=n)
            root[c] = u_bar
            if fit is None or fit.slope * dirs[c] <= 0 or abs(fit.slope) <= z * fit.slope_se:
                status[c] = UNDECIDED
                continue
            half = z * math.sqrt(sigma2 / state.extra["n_avg"][c]) / abs(fit.slope)
            low[c], high[c] = u_bar - half, u_bar + half
        return _roots(state, self.name, level, root, low, high, status, dirs)


DEFAULT_FINDER = MonotoneInterpolation()
FINDERS = {f.name: f for f in (MonotoneInterpolation(), ProbabilisticBisection(), RobbinsMonro())}


def finder_named(name: str) -> RootFinder:
    """The finder called ``name`` (:data:`FINDERS`) with its default settings."""
    try:
        return FINDERS[name]
    except KeyError:
        raise UsageError(f"unknown root-finding method {name!r}; choose from {', '.join(FINDERS)}") from None


# ----------------------------------------------------------------------------- synthetic oracles

def logistic_rate(x, x0, slope, floor: float = 0.0, ceiling: float = 1.0) -> np.ndarray:
    """A Bernoulli rate with a closed-form root: p(x) = floor + (ceiling − floor)·σ(slope·(log x − log x0)),
    σ the logistic function (slope < 0: decreasing in x). Broadcasts ``x`` (C, J) with (C,) parameters."""
    x = np.asarray(x, dtype=float)
    col = lambda v: np.asarray(v, dtype=float).reshape((-1,) + (1,) * (x.ndim - 1)) if np.ndim(v) else v
    t = col(slope) * (np.log(x) - np.log(col(x0)))
    return col(floor) + (col(ceiling) - col(floor)) / (1.0 + np.exp(-t))


def logistic_root(x0, slope, target, floor: float = 0.0, ceiling: float = 1.0) -> np.ndarray:
    """The x where :func:`logistic_rate` equals ``target`` (NaN if it never does)."""
    q = (np.asarray(target, float) - floor) / (np.asarray(ceiling, float) - floor)
    with np.errstate(invalid="ignore", divide="ignore"):
        root = np.asarray(x0, float) * np.exp(np.log(q / (1 - q)) / np.asarray(slope, float))
        return np.where((q > 0) & (q < 1), root, np.nan)


def bernoulli_oracle(rate: Callable[[np.ndarray], np.ndarray], seed: int) -> Callable[[Ask], Observation]:
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


def normal_oracle(mean_fn: Callable[[np.ndarray], np.ndarray], sd: float, seed: int) -> Callable[[Ask], Observation]:
    """An oracle for a continuous metric: ``reps`` draws of N(mean_fn(x), sd²) per asked
    point, summarised exactly (the mean ~ N(μ, sd²/n), the variance ~ sd²·χ²_{n−1}/(n−1))."""
    rng = np.random.default_rng(seed)

    def oracle(ask: Ask) -> Observation:
        n = np.asarray(ask.reps, np.int64)
        mu = mean_fn(np.where(np.isnan(ask.x), 1.0, ask.x))
        mean = np.where(n > 0, mu + sd * rng.standard_normal(n.shape) / np.sqrt(np.maximum(n, 1)), np.nan)
        var = np.where(n > 1, sd ** 2 * rng.chisquare(np.maximum(n - 1, 1)) / np.maximum(n - 1, 1), np.nan)
        return Observation(mean, var, n)

    return oracle


# ----------------------------------------------------------------------------- the loop

def solve_with(oracle: Callable[[Ask], Observation], finder: RootFinder, search: Search, n_configs: int, *,
               max_stages: int = 50, level: float = 0.95,
               progress: Callable[[int, Ask, Observation], None] | None = None
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

