"""Solved thresholds against a theorem's rate: the weighted slope statistic
(:func:`threshold_slope`), censored roots, and :class:`ThresholdScalingCheck` passing on roots
that follow the rate and failing on roots that follow another."""

import math

import numpy as np
import pandas as pd
import pytest

from dpsim.errors import UsageError
from dpsim.engine.judgement.thresholds import Solve, ThresholdScalingCheck
from dpsim.engine.judgement.statistics import threshold_observations, threshold_slope
from dpsim.engine.presentation.summary import Z95

N = [100, 200, 400, 800]


def edge_rate(c):
    n, p, eps = c["n_items"], c["p"], c["eps"]
    return math.sqrt(math.log(n) / (n * p)) + math.log(n) / (n * p * eps)


def wrong_rate(c):
    """n in place of log n: √(1/p) + 1/(pε), flat in n."""
    return math.sqrt(1 / c["p"]) + 1 / (c["p"] * c["eps"])


def synthetic_roots(truth, *, se=0.05, seed=0, constant=1.3, search=(0.02, 0.48)):
    """One root per (n, p, ε) at constant·truth(config)·e^{N(0, se²)}, its 95% interval
    exp(±1.96 se); outside ``search`` it is reported not bracketed."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in (0.5, 1.0):
        for eps in (0.5, 2.0, math.inf):
            for n in N:
                c = {"n_items": n, "p": p, "eps": eps}
                root = constant * truth(c) * math.exp(rng.normal(0, se))
                row = {
                    **c,
                    "root": root,
                    "low": root * math.exp(-Z95 * se),
                    "high": root * math.exp(Z95 * se),
                    "status": "solved",
                    "lanes": 1000,
                    "searched_low": search[0],
                    "searched_high": search[1],
                }
                if root > search[1]:
                    row.update(root=math.nan, low=math.nan, high=math.nan, status="below_target")
                rows.append(row)
    return pd.DataFrame(rows)


def check(rate=edge_rate, region=(-0.15, 0.15), **kw):
    return ThresholdScalingCheck(
        "toy-threshold-scaling",
        "toy",
        Solve("gap", "exact_recovery@counts=0.5"),
        "n_items",
        ("p", "eps"),
        rate,
        region,
        **kw,
    )


def test_the_slope_is_the_hand_computed_weighted_regression():
    # two groups, one intercept each; y = log root, weights 1/se²
    x = np.array([100, 200, 400, 100, 200, 400], float)
    y = np.array([0.10, -0.20, -0.35, 0.50, 0.31, 0.02])
    se = np.array([0.05, 0.10, 0.20, 0.08, 0.04, 0.10])
    obs = pd.DataFrame({"n_items": x, "g": [0, 0, 0, 1, 1, 1], "kind": "value", "y": y, "se": se})
    fit = threshold_slope(obs, "n_items", ("g",))
    w = 1 / se**2
    design = np.column_stack([np.log(x), [1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]])
    xtwx = design.T @ (design * w[:, None])
    coef = np.linalg.solve(xtwx, design.T @ (w * y))
    assert fit.slope == pytest.approx(coef[0], rel=1e-10)
    resid = y - design @ coef
    chi2, dof = float(np.sum(w * resid**2)), 6 - 3
    assert fit.chi2 == pytest.approx(chi2) and fit.dof == dof
    assert fit.inflation == pytest.approx(max(1.0, math.sqrt(chi2 / dof)))
    assert fit.se == pytest.approx(math.sqrt(np.linalg.inv(xtwx)[0, 0]) * fit.inflation, rel=1e-10)
    assert (fit.low, fit.high) == pytest.approx((coef[0] - Z95 * fit.se, coef[0] + Z95 * fit.se))
    assert fit.values == 6 and fit.censored == 0 and fit.groups == 2


def test_groups_that_disagree_beyond_their_errors_widen_the_interval():
    x = np.array([100, 200, 400] * 2, float)
    obs = pd.DataFrame(
        {
            "n_items": x,
            "g": [0, 0, 0, 1, 1, 1],
            "kind": "value",
            "se": 0.01,
            "y": np.r_[0.2 * np.log(x[:3]), -0.2 * np.log(x[3:])],
        }
    )  # slopes +0.2 and −0.2
    fit = threshold_slope(obs, "n_items", ("g",))
    assert fit.slope == pytest.approx(0.0, abs=1e-12) and fit.inflation > 10
    assert fit.low < -0.1 and fit.high > 0.1  # the MC error alone would give ±0.01


def test_observations_take_the_log_ratio_and_its_se_from_the_interval():
    roots = pd.DataFrame(
        {"n_items": [100], "root": [0.2], "low": [0.1], "high": [0.4], "status": ["solved"]}
    )
    obs = threshold_observations(roots, ["n_items"], rate=lambda c: 0.1 * c["n_items"] / 100)
    assert obs["kind"][0] == "value"
    assert obs["y"][0] == pytest.approx(math.log(2.0))
    assert obs["se"][0] == pytest.approx(math.log(4.0) / (2 * Z95))


def test_roots_not_bracketed_are_bounds_on_the_side_the_direction_says():
    roots = pd.DataFrame(
        {
            "n_items": [100, 200],
            "root": [math.nan] * 2,
            "low": [math.nan] * 2,
            "high": [math.nan] * 2,
            "status": ["below_target", "above_target"],
        }
    )
    up = threshold_observations(roots, ["n_items"], search=(0.02, 0.48))
    assert list(up["kind"]) == ["lower", "upper"] and list(up["root"]) == [0.48, 0.02]
    down = threshold_observations(roots, ["n_items"], search=(0.02, 0.48), increasing=False)
    assert list(down["kind"]) == ["upper", "lower"] and list(down["root"]) == [0.02, 0.48]
    with pytest.raises(UsageError, match="unknown root status"):
        threshold_observations(roots.assign(status="lost"), ["n_items"], search=(0.02, 0.48))


def test_a_censored_root_opens_the_interval_on_the_side_it_can_push():
    # thresholds falling with n; the largest n only known to lie above its bound: the true
    # value can only raise the slope, so the interval is open above
    obs = pd.DataFrame(
        {
            "n_items": [100, 200, 400, 800],
            "kind": ["value", "value", "value", "lower"],
            "y": [0.0, -0.1, -0.2, -0.2],
            "se": [0.05, 0.05, 0.05, math.nan],
        }
    )
    fit = threshold_slope(obs, "n_items")
    assert math.isinf(fit.high) and math.isfinite(fit.low) and fit.lower == 1
    # the same bound at the smallest n pulls the other way
    obs2 = obs.assign(kind=["lower", "value", "value", "value"], se=[math.nan, 0.05, 0.05, 0.05])
    fit2 = threshold_slope(obs2, "n_items")
    assert math.isinf(fit2.low) and math.isfinite(fit2.high)


def test_the_check_passes_on_roots_that_follow_the_rate():
    roots = synthetic_roots(edge_rate, search=(0.005, 2.0))
    assert (roots["status"] == "solved").all()
    result = check().evaluate_roots(roots, family=1)
    assert result.verdict == "PASS", result.line()
    assert abs(result.value) < 0.05


def test_the_check_fails_on_roots_that_follow_another_rate():
    # thresholds that do not fall with n (the rate with n in place of log n) against r_E
    result = check().evaluate_roots(synthetic_roots(wrong_rate, constant=0.05), family=10)
    assert result.verdict == "FAIL", result.line()
    assert result.value > 0.3


def test_the_negative_control_lands_outside_with_a_wrong_rate():
    control = check(rate=wrong_rate, region=(-math.inf, -0.15), formula="r_E with n for log n")
    result = control.evaluate_roots(synthetic_roots(edge_rate, search=(0.005, 2.0)), family=1)
    assert result.verdict == "PASS" and result.value < -0.3, result.line()
    # ... and the same control fails on thresholds that do follow the wrong rate
    assert (
        control.evaluate_roots(synthetic_roots(wrong_rate, constant=0.05), family=10).verdict
        == "FAIL"
    )


def test_censored_roots_make_the_check_inconclusive_not_a_value():
    roots = synthetic_roots(edge_rate, constant=4.0)  # most thresholds beyond the search
    obs = threshold_observations(
        roots, ["p", "eps", "n_items"], rate=edge_rate, search=(0.02, 0.48)
    )
    assert (obs["kind"] == "lower").sum() > 3
    result = check().evaluate_roots(roots, family=1)
    assert result.verdict == "INCONCLUSIVE" and result.needed_reps is None, result.line()
    assert "only bounded below" in result.evidence


def test_reach_leaves_out_configurations_whose_search_cannot_hold_the_threshold():
    roots = synthetic_roots(edge_rate, constant=4.0)
    result = check(reach=(0.5, 2.5)).evaluate_roots(roots, family=1)
    assert "left out" in result.evidence
    obs = result.detail["observations"]
    kept = obs[obs["reached"]]
    assert (kept["rate"] * 2.5 <= 0.48).all() and len(kept) < len(obs)


def test_a_threshold_check_is_not_judged_on_grid_rows():
    with pytest.raises(UsageError, match="judged on the roots of a solve"):
        check().evaluate(pd.DataFrame({"rep": [0]}))


def test_verify_judges_a_solve_check_on_its_roots_and_draws_the_figure(tmp_path):
    from types import SimpleNamespace

    from dpsim.engine.judgement.verify import verify

    calls = []

    def solver(experiment, solve, *, out, seed, progress):
        calls.append((experiment.name, solve, out, seed))
        return synthetic_roots(edge_rate, search=(0.005, 2.0))

    right = check()
    control = ThresholdScalingCheck(
        "toy-threshold-scaling-wrong",
        "toy",
        right.solve,
        "n_items",
        ("p", "eps"),
        wrong_rate,
        (-math.inf, -0.15),
    )
    lines = []
    results, counts = verify(
        {c.name: c for c in (right, control)},
        {"toy": SimpleNamespace(name="toy")},
        runs=tmp_path,
        seed=1,
        solver=solver,
        echo=lines.append,
    )
    assert counts["PASS"] == 2, lines
    assert [c[2] for c in calls] == [tmp_path / "toy-solve-gap-seed1"] and calls[0][
        1
    ] == right.solve  # one solve, shared
    assert (
        tmp_path / "toy-solve-gap-seed1" / "threshold-toy-threshold-scaling.png"
    ).stat().st_size > 10_000
    # without a solver the check says what it needs, as an ERROR line (it cannot be evaluated)
    results, counts = verify(
        {right.name: right}, {"toy": SimpleNamespace(name="toy")}, runs=tmp_path, echo=lines.append
    )
    assert counts["ERROR"] == 1 and "no solver" in results[0].evidence


def test_the_papers_threshold_checks_are_listed(capsys):
    from dpsim.cli import main

    assert main(["list", "cai"]) == 0
    out = capsys.readouterr().out
    for name in (
        "cai-threshold-scaling-edge",
        "cai-threshold-scaling-edge-wrong-rate",
        "cai-threshold-scaling-individual",
        "cai-threshold-scaling-individual-statistical-rate",
    ):
        assert name in out
    assert main(["list", "nguyen"]) == 0
    out = capsys.readouterr().out
    assert (
        "nguyen-r6-topk-threshold-scaling" in out
        and "nguyen-r6-topk-threshold-scaling-no-log" in out
    )


def test_the_papers_regions_separate_the_right_and_the_wrong_rates():
    from dpsim.engine.judgement.deferred import resolved
    from experiments.cai.figures import threshold as ct
    from experiments.nguyen.figures import topk

    checks = {
        c.name: resolved(c) for c in [*ct.THRESHOLD_CHECKS, *topk.CHECKS] if hasattr(c, "solve")
    }
    for right, wrong in (
        ("cai-threshold-scaling-edge", "cai-threshold-scaling-edge-wrong-rate"),
        ("cai-threshold-scaling-individual", "cai-threshold-scaling-individual-statistical-rate"),
        ("nguyen-r6-topk-threshold-scaling", "nguyen-r6-topk-threshold-scaling-no-log"),
    ):
        lo, hi = checks[right].region
        w_lo, w_hi = checks[wrong].region
        assert lo < hi and (
            w_hi <= lo or w_lo >= hi
        )  # the control's region lies outside the claim's
    assert checks["nguyen-r6-topk-threshold-scaling"].region == pytest.approx(
        (0.043 - 0.1325, 0.043 + 0.1325), abs=0.002
    )


def test_the_rate_sees_every_axis_of_the_configuration(tmp_path):
    roots = synthetic_roots(edge_rate, search=(0.005, 2.0)).assign(per_user=5)
    seen = []

    def rate(config):
        seen.append(config["per_user"])
        return edge_rate(config)

    control = check(rate=rate, where={"eps": [0.5, 2.0]})
    assert control.evaluate_roots(roots).verdict == "PASS" and set(seen) == {5}
    control.figure(roots).savefig(tmp_path / "f.png")  # the curve's rate too
