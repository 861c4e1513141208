"""Stochastic root-finders (dpsim.engine.solving.rootfinding) on synthetic oracles whose root is
known in closed form. Tolerances are derived from Monte Carlo error: an interval covers the
truth with probability ≈ 0.95, so over m intervals the covered fraction is within
3·sqrt(0.95·0.05/m) of 0.95 except with probability ≈ 0.003; all seeds are fixed."""

import math

import numpy as np
import pytest

from dpsim.errors import UsageError
from dpsim.engine.solving import oracles, rootfinding as rf, search as sr

C = 40
X0 = np.geomspace(3.0, 40.0, C)  # C configurations with different roots
SLOPE = np.linspace(2.0, 4.0, C)


def tolerance(m: int, level: float = 0.95) -> float:
    return 3.0 * math.sqrt(level * (1 - level) / m)


def solve(finder, search, rate, seed, n=C):
    return rf.solve_with(oracles.bernoulli_oracle(rate, seed), finder, search, n)


def covered(roots: sr.Roots, truth: np.ndarray) -> np.ndarray:
    return (roots.low <= truth) & (truth <= roots.high)


# ----------------------------------------------------------------------------- pieces


def test_lattice_log_linear_and_integer():
    log = sr.Search(1.0, 1000.0, 0.5).lattice()
    assert log.shape == (65,) and log[0] == 1.0 and log[-1] == 1000.0
    np.testing.assert_allclose(np.diff(np.log(log)), math.log(1000) / 64)
    lin = sr.Search(0.0, 8.0, 0.5, log=False, points=9).lattice()
    np.testing.assert_allclose(lin, np.arange(9.0))
    small = sr.Search(2, 10, 0.5, integer=True).lattice()
    np.testing.assert_array_equal(small, np.arange(2.0, 11.0))  # every integer when they fit
    big = sr.Search(2, 5000, 0.5, integer=True, points=33).lattice()
    assert big[0] == 2 and big[-1] == 5000 and len(big) <= 33 and np.all(big == np.round(big))
    assert np.all(np.diff(big) > 0)


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(low=5.0, high=1.0, target=0.5), "low < high"),
        (dict(low=0.0, high=1.0, target=0.5), "low > 0"),
        (dict(low=1.0, high=2.0, target=float("nan")), "target"),
        (dict(low=1.0, high=2.0, target=0.5, points=2), "points"),
        (dict(low=1.2, high=1.8, target=0.5, integer=True), "fewer than 2 integers"),
    ],
)
def test_bad_searches_are_usage_errors(kwargs, word):
    with pytest.raises(UsageError, match=word):
        sr.Search(**kwargs)


def test_status_names_and_unknown_code():
    assert [sr.status_name(c) for c in range(4)] == [
        "solved",
        "below_target",
        "above_target",
        "undecided",
    ]
    with pytest.raises(UsageError, match="unknown root status 9"):
        sr.status_name(9)


def test_variance_floor_for_zero_or_one_successes():
    n = np.array([50, 50, 50, 50])
    mean = np.array([0.0, 1 / 50, 1.0, 0.5])
    var = mean * (1 - mean) * n / (n - 1)
    floored = sr.floored_variance(mean, var, n)
    p0 = 0.5 / 51
    assert floored[0] == pytest.approx(p0 * (1 - p0))  # (k + ½)/(n + 1), k = 0
    p1 = 1.5 / 51
    assert floored[1] == pytest.approx(max(var[1], p1 * (1 - p1)))
    assert floored[2] == pytest.approx(p0 * (1 - p0))  # n successes: symmetric
    assert floored[3] == pytest.approx(var[3], rel=0.03)  # a rate near ½ keeps its variance
    # a continuous metric keeps its (non-Bernoulli) variance, a constant one gets a tiny floor
    assert (
        sr.floored_variance(np.array([3.0, 3.0]), np.array([0.2, 0.0]), np.array([10, 10]))[0]
        == 0.2
    )
    assert 0 < sr.floored_variance(np.array([3.0]), np.array([0.0]), np.array([10]))[0] < 1e-10


def test_isotonic_pools_violators_with_weights():
    fit = sr.isotonic(np.array([1.0, 3.0, 2.0, 4.0]), np.array([1.0, 1.0, 3.0, 1.0]))
    np.testing.assert_allclose(fit, [1.0, 2.25, 2.25, 4.0])
    assert np.all(np.diff(sr.isotonic(np.array([5.0, 4.0, 3.0]), np.ones(3))) >= 0)


def test_fieller_is_the_ratio_interval_and_unbounded_for_a_flat_slope():
    # an exactly known denominator: the interval is num/den ± z·sd(num)/den
    low, high = sr.fieller(2.0, 4.0, 0.25, 0.0, 0.0, 1.96)
    assert (low, high) == pytest.approx((0.5 - 1.96 * 0.5 / 4, 0.5 + 1.96 * 0.5 / 4))
    assert sr.fieller(1.0, 0.1, 0.01, 0.01, 0.0, 1.96) is None


def test_bad_observations_and_asks_are_usage_errors():
    finder, search = rf.DEFAULT_FINDER, sr.Search(1.0, 100.0, 0.5)
    state = finder.init(search, 2)
    ask = finder.ask(state)
    with pytest.raises(UsageError, match="shape"):
        finder.tell(
            state, ask, sr.Observation(np.zeros((2, 1)), np.zeros((2, 1)), np.ones((2, 1), int))
        )
    off = sr.Ask(np.where(np.isnan(ask.x), np.nan, ask.x * 1.01), ask.reps)
    with pytest.raises(UsageError, match="not on the search lattice"):
        finder.tell(
            state, off, sr.Observation(np.zeros(ask.x.shape), np.zeros(ask.x.shape), ask.reps)
        )
    with pytest.raises(UsageError, match="unknown root-finding method"):
        rf.finder_named("newton")


# ----------------------------------------------------------------------------- known roots


def test_default_finder_solves_forty_configurations_at_once():
    b = 0.7
    truth = oracles.logistic_root(X0, SLOPE, b)
    roots, history = solve(
        rf.DEFAULT_FINDER,
        sr.Search(1.0, 1000.0, b),
        lambda x: oracles.logistic_rate(x, X0, SLOPE),
        1,
    )
    assert np.all(roots.status == sr.SOLVED) and np.all(roots.increasing == 1)
    assert all(ask.x.shape[0] == C for ask, _ in history)  # one ask per stage covers all
    assert np.all(roots.lanes <= rf.DEFAULT_FINDER.budget)
    # ≥ 0.95 − 3 sd of the 40 intervals cover; the errors are of the intervals' size
    assert covered(roots, truth).mean() >= 0.95 - tolerance(C)
    err = np.log(roots.root / truth)
    se = np.log(roots.high / roots.low) / (2 * 1.96)
    assert np.abs(err.mean()) <= 3 * np.sqrt(np.mean(se**2) / C) + 0.005
    assert np.all(np.abs(err) <= 5 * se)


def test_a_decreasing_rate_is_found_with_its_direction():
    b = 0.3
    truth = oracles.logistic_root(X0, -SLOPE, b)
    roots, _ = solve(
        rf.DEFAULT_FINDER,
        sr.Search(1.0, 1000.0, b),
        lambda x: oracles.logistic_rate(x, X0, -SLOPE),
        2,
    )
    assert np.all(roots.status == sr.SOLVED) and np.all(roots.increasing == -1)
    assert covered(roots, truth).mean() >= 0.95 - tolerance(C)


def test_a_continuous_metric_on_a_linear_axis():
    # mean(x) = 1 + s·x with normal noise (sd 2), target 6: root (6 − 1)/s
    s = np.linspace(0.2, 1.0, C)
    truth = 5.0 / s
    oracle = oracles.normal_oracle(lambda x: 1.0 + s[:, None] * x, 2.0, 3)
    roots, _ = rf.solve_with(oracle, rf.DEFAULT_FINDER, sr.Search(0.0, 40.0, 6.0, log=False), C)
    assert np.all(roots.status == sr.SOLVED)
    assert covered(roots, truth).mean() >= 0.95 - tolerance(C)
    assert np.max(np.abs(roots.root - truth) / (roots.high - roots.low)) < 2.0


def test_an_integer_axis_asks_integers_only():
    b = 0.5
    x0 = np.geomspace(40.0, 900.0, C)
    truth = oracles.logistic_root(x0, SLOPE, b)
    search = sr.Search(10, 2000, b, integer=True)
    roots, history = solve(
        rf.DEFAULT_FINDER, search, lambda x: oracles.logistic_rate(x, x0, SLOPE), 4
    )
    asked = np.concatenate([ask.x[ask.reps > 0] for ask, _ in history])
    np.testing.assert_array_equal(asked, np.round(asked))
    assert set(asked) <= set(search.lattice())
    assert np.all(roots.status == sr.SOLVED)
    assert covered(roots, truth).mean() >= 0.95 - tolerance(C)


@pytest.mark.parametrize(
    "finder",
    [rf.MonotoneInterpolation(), rf.ProbabilisticBisection(), rf.RobbinsMonro()],
    ids=lambda f: f.name,
)
def test_a_target_never_reached_is_reported_not_bracketed(finder):
    # an increasing rate that saturates at 0.5 never reaches 0.9: below target, for every
    # configuration, with no root and no interval; the interval searched goes with the answer
    search = sr.Search(1.0, 1000.0, 0.9)
    n = 8
    x0, slope = np.geomspace(3, 30, n), np.full(n, 3.0)
    roots, _ = solve(
        finder, search, lambda x: oracles.logistic_rate(x, x0, slope, ceiling=0.5), 5, n=n
    )
    assert roots.names() == ["below_target"] * n
    assert (
        np.all(np.isnan(roots.root))
        and np.all(np.isnan(roots.low))
        and np.all(np.isnan(roots.high))
    )
    assert (roots.search.low, roots.search.high) == (1.0, 1000.0)
    # a decreasing rate that stays above 0.2 is above a target of 0.1
    roots, _ = solve(
        finder,
        sr.Search(1.0, 1000.0, 0.1),
        lambda x: oracles.logistic_rate(x, x0, -slope, floor=0.2),
        6,
        n=n,
    )
    assert roots.names() == ["above_target"] * n


def test_mixed_configurations_bracketed_or_not():
    # half the configurations reach the target inside the interval, half saturate below it
    n = 10
    x0, slope = np.geomspace(3, 30, n), np.full(n, 3.0)
    ceiling = np.where(np.arange(n) % 2 == 0, 1.0, 0.6)
    roots, _ = solve(
        rf.DEFAULT_FINDER,
        sr.Search(1.0, 1000.0, 0.8),
        lambda x: oracles.logistic_rate(x, x0, slope, ceiling=ceiling),
        7,
        n=n,
    )
    np.testing.assert_array_equal(
        roots.status, np.where(ceiling == 1.0, sr.SOLVED, sr.BELOW_TARGET)
    )


@pytest.mark.parametrize(
    "finder", [rf.ProbabilisticBisection(), rf.RobbinsMonro()], ids=lambda f: f.name
)
def test_the_other_finders_find_the_root_roughly(finder):
    n, b = 10, 0.6
    x0, slope = np.geomspace(3, 30, n), np.full(n, 3.0)
    truth = oracles.logistic_root(x0, slope, b)
    roots, _ = solve(
        finder, sr.Search(1.0, 1000.0, b), lambda x: oracles.logistic_rate(x, x0, slope), 8, n=n
    )
    assert np.all(roots.status == sr.SOLVED) and np.all(roots.lanes <= finder.budget)
    assert np.all(
        np.abs(np.log(roots.root / truth)) < 0.15
    )  # within 15 % (the lattice step is 11 %)
    assert np.all(roots.low < roots.root) and np.all(roots.root < roots.high)


# ----------------------------------------------------------------------------- coverage and replay


def test_default_finder_covers_at_the_nominal_rate():
    # 30 solves × 40 configurations = 1200 intervals at a target of 0.75 (curvature near the root);
    # measured over 50 solves (2000 intervals): 0.960 (b = 0.75), 0.966 (0.5), 0.957 (0.9); half as wide: 0.67–0.72
    solves, b = 30, 0.75
    truth = oracles.logistic_root(X0, SLOPE, b)
    search = sr.Search(1.0, 1000.0, b)
    hits, half_hits, m = 0, 0, 0
    for seed in range(100, 100 + solves):
        roots, _ = solve(
            rf.DEFAULT_FINDER, search, lambda x: oracles.logistic_rate(x, X0, SLOPE), seed
        )
        assert np.all(roots.status == sr.SOLVED)
        hits += covered(roots, truth).sum()
        # the same intervals, half as wide around their centre
        mid, half = (
            (np.log(roots.low) + np.log(roots.high)) / 2,
            (np.log(roots.high) - np.log(roots.low)) / 4,
        )
        half_hits += (np.abs(np.log(truth) - mid) <= half).sum()
        m += C
    tol = tolerance(m)
    assert abs(hits / m - 0.95) <= tol, f"coverage {hits}/{m}"
    assert half_hits / m < 0.95 - tol, (
        f"half-width intervals cover {half_hits}/{m}: the test cannot tell"
    )


def test_solves_are_deterministic_and_replay_from_their_history():
    rate = lambda x: oracles.logistic_rate(x, X0, SLOPE)
    search = sr.Search(1.0, 1000.0, 0.8)
    for finder in (rf.MonotoneInterpolation(), rf.ProbabilisticBisection(), rf.RobbinsMonro()):
        first, history = solve(finder, search, rate, 11)
        again, _ = solve(finder, search, rate, 11)
        replies = iter(obs for _, obs in history)
        replayed, replay_history = rf.solve_with(lambda ask: next(replies), finder, search, C)
        for other in (again, replayed):
            for name in ("root", "low", "high", "status", "lanes", "increasing"):
                np.testing.assert_array_equal(getattr(first, name), getattr(other, name))
            assert other.stages == first.stages
        for (a1, _), (a2, _) in zip(history, replay_history):  # the replay asks the same points
            np.testing.assert_array_equal(a1.x, a2.x)
            np.testing.assert_array_equal(a1.reps, a2.reps)


def test_the_benchmark_quick_run_writes_its_tables(monkeypatch, tmp_path):
    """``python -m benchmarks.rootfinding --quick``: every method and grid row is there,
    and a grid of equal precision is as narrow as the method it is set beside, or says it never was."""
    import importlib
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    bench = importlib.import_module("benchmarks.rootfinding")
    monkeypatch.setattr(bench.harness, "RESULTS_DIR", tmp_path)
    doc = bench.main(["--quick"])
    assert (tmp_path / "rootfinding_quick.json").exists()
    rows_a, rows_b = doc["results"]["A"]["rows"], doc["results"]["B"]["rows"]
    assert sorted(r["method"] for r in rows_a) == ["bisection", "monotone", "robbins-monro"]
    assert len(rows_b) == len(rows_a) * len(bench.QUICK.grid_points)
    assert any(r["reached"] and r["grid_points"] == 65 for r in rows_b)
    for r in rows_b:
        assert r["reached"] == (r["grid_median_width_log"] <= r["solver_median_width_log"])
        assert r["lane_saving"] == pytest.approx(
            r["grid_lanes_per_config"] / r["solver_lanes_per_config"]
        )
