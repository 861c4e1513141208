"""The composable checks: Claim = a statistic (Mean, MethodRatio, Difference, …) × an
aggregation (At, Every, Along) × a region, with a prediction evaluated from the grid, and
deferred predictions resolved when a check is judged. Each composition is checked against a
hand computation on a small synthetic table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpsim.errors import UsageError
from dpsim.engine import method_ratio_slope_check
from dpsim.engine.judgement.checks import Along, At, Claim, Every, level_check, slope_check
from dpsim.engine.judgement.deferred import Deferred, deferred_entries, deferred_table
from dpsim.engine.judgement.statistics import Difference, Mean, MethodRatio, Slope
from dpsim.engine.judgement.deferred import resolved
from dpsim.engine.presentation.summary import slope_fit

Z = 1.959963984540054


def _table(seed=0):
    """Two methods at three ε, 40 replicates: metric(a) ~ Gamma with mean 8/ε²; metric(b) =
    metric(a)·u with u ~ Gamma(mean 2), so mean a / mean b = ½ at every ε."""
    rng = np.random.default_rng(seed)
    rows = []
    for point, eps in enumerate((0.5, 1.0, 2.0)):
        a = rng.gamma(4.0, 2.0 / eps**2, size=40)
        b = a * rng.gamma(8.0, 0.25, size=40)
        for rep in range(40):
            rows.append({"eps": eps, "point": point, "rep": rep, "method": "a", "ms": a[rep]})
            rows.append({"eps": eps, "point": point, "rep": rep, "method": "b", "ms": b[rep]})
    table = pd.DataFrame(rows)
    table.attrs["method_columns"] = ["ms"]
    return table


def variance(point):
    return 8.0 / point["eps"] ** 2


def test_mean_with_a_prediction_by_hand():
    table = _table()
    rows = table[(table["method"] == "a") & (table["eps"] == 1.0)]
    x = rows["ms"].to_numpy()
    se = x.std(ddof=1) / math.sqrt(len(x)) / x.mean()  # delta method: sd/(√N·mean)
    result = Claim(
        "t", "e", Mean("ms", "a"), (0.8, 1.25), prediction=variance, where={"eps": [1.0]}
    ).evaluate(table)
    assert result.value == pytest.approx(x.mean() / 8.0, rel=1e-12)
    assert (result.low, result.high) == pytest.approx(
        (result.value * math.exp(-Z * se), result.value * math.exp(Z * se)), rel=1e-9
    )
    assert result.verdict == "PASS"
    halved = Claim(
        "t",
        "e",
        Mean("ms", "a"),
        (0.8, 1.25),
        prediction=lambda p: variance(p) / 4,
        where={"eps": [1.0]},
    ).evaluate(table)
    assert halved.verdict == "FAIL" and halved.value == pytest.approx(4 * result.value)


def test_level_check_judges_every_point_by_hand():
    table = _table()
    level = level_check("t", "e", "ms", "a", variance, 0.8, 1.25, at=("eps",))
    assert isinstance(level, Claim) and level.over == Every(("eps",))
    result = level.evaluate(table)
    ratios = [
        table[(table["method"] == "a") & (table["eps"] == e)]["ms"].mean() / (8 / e**2)
        for e in (0.5, 1.0, 2.0)
    ]
    np.testing.assert_allclose(result.detail["value"], ratios, rtol=1e-12)
    assert result.verdict == "PASS" and "3/3 inside" in result.fitted
    # σ halved (variance ÷ 4): every point far outside
    assert (
        level_check("t", "e", "ms", "a", lambda p: variance(p) / 4, 0.8, 1.25, at=("eps",))
        .evaluate(table)
        .verdict
        == "FAIL"
    )


def test_every_with_difference_by_hand():
    table = _table(1)
    new = Claim("t", "e", Difference("ms", "a", "b"), (-math.inf, 0.0), over=Every("eps")).evaluate(
        table
    )
    for (_, row), eps in zip(new.detail.iterrows(), (0.5, 1.0, 2.0)):
        at = table[table["eps"] == eps].sort_values("rep")
        d = at[at["method"] == "a"]["ms"].to_numpy() - at[at["method"] == "b"]["ms"].to_numpy()
        half = Z * d.std(ddof=1) / math.sqrt(len(d))
        assert (row["value"], row["low"], row["high"]) == pytest.approx(
            (d.mean(), d.mean() - half, d.mean() + half), rel=1e-12
        )
    assert new.verdict == "PASS"


def test_along_with_method_ratio_by_hand():
    """The slope of the per-ε log ratios of means on log ε, weighted by their delta-method
    standard errors (covariance of the paired a, b included)."""
    table = _table(2)
    logs, ses = [], []
    for eps in (0.5, 1.0, 2.0):
        at = table[table["eps"] == eps].sort_values("rep")
        a, b = at[at["method"] == "a"]["ms"].to_numpy(), at[at["method"] == "b"]["ms"].to_numpy()
        n = len(a)
        c = np.cov(a, b, ddof=1)
        logs.append(math.log(a.mean() / b.mean()))
        ses.append(
            math.sqrt(
                (
                    c[0, 0] / a.mean() ** 2
                    + c[1, 1] / b.mean() ** 2
                    - 2 * c[0, 1] / (a.mean() * b.mean())
                )
                / n
            )
        )
    slope, se = slope_fit(np.log([0.5, 1.0, 2.0]), logs, y_se=ses)
    new = Claim("t", "e", MethodRatio("ms", "a", "b"), (-0.2, 0.2), over=Along("eps")).evaluate(
        table
    )
    assert (new.value, new.low, new.high) == pytest.approx(
        (slope, slope - Z * se, slope + Z * se), rel=1e-9
    )
    preset = method_ratio_slope_check(
        "t",
        "e",
        metric="ms",
        numerator="a",
        denominator="b",
        x="eps",
        root=False,
        region=(-0.2, 0.2),
    ).evaluate(table)
    assert (
        (preset.value, preset.verdict) == (new.value, new.verdict) == (pytest.approx(slope), "PASS")
    )
    # the ratio is ½ at every ε: relative to a prediction of ½ it is 1
    level = Claim(
        "t",
        "e",
        MethodRatio("ms", "a", "b"),
        (0.75, 1.33),
        over=Every("eps"),
        prediction=lambda p: 0.5,
    ).evaluate(table)
    assert level.verdict == "PASS" and abs(level.value - 1) < 0.2
    wrong = Claim(
        "t",
        "e",
        MethodRatio("ms", "a", "b"),
        (0.75, 1.33),
        over=Every("eps"),
        prediction=lambda p: 1.0,
    ).evaluate(table)
    assert wrong.verdict == "FAIL"


def test_difference_relative_to_a_prediction():
    table = _table(3)
    plain = Claim(
        "t", "e", Difference("ms", "a", "b"), (-math.inf, math.inf), where={"eps": [2.0]}
    ).evaluate(table)
    shifted = Claim(
        "t",
        "e",
        Difference("ms", "a", "b"),
        (-math.inf, math.inf),
        where={"eps": [2.0]},
        prediction=lambda p: -1.0,
    ).evaluate(table)
    assert shifted.value == pytest.approx(plain.value + 1.0)
    assert shifted.high - shifted.low == pytest.approx(plain.high - plain.low)


def test_claims_refuse_what_they_cannot_judge():
    table = _table()
    with pytest.raises(UsageError, match="'eps'"):  # three ε pooled at one point
        Claim("t", "e", Mean("ms", "a"), (0.8, 1.25), over=At()).evaluate(table)
    with pytest.raises(UsageError, match="one positive finite value per judged point"):
        Claim(
            "t",
            "e",
            MethodRatio("ms", "a", "b"),
            (0.8, 1.25),
            over=At(),
            pool=("eps",),
            prediction=variance,
        ).evaluate(table)
    with pytest.raises(UsageError, match="two values"):
        Claim(
            "t", "e", MethodRatio("ms", "a", "b"), (-1, 1), over=Along("eps"), where={"eps": [1.0]}
        ).evaluate(table)


def test_deferred_predictions_are_computed_once_when_judged():
    calls = []

    def theory():
        calls.append(1)
        return {"ratio": 0.5, "by_eps": {1.0: 8.0}}

    table_of = deferred_table(theory)
    lo, hi = 0.6 * table_of["ratio"], 1.6 * table_of["ratio"]
    check = Claim("t", "e", MethodRatio("ms", "a", "b"), (lo, hi), where={"eps": [1.0]})
    assert calls == []  # nothing computed at construction
    with pytest.raises(TypeError, match="cannot be formatted"):
        f"{lo:.2f}"
    result = check.evaluate(_table())
    assert calls == [1] and result.verdict == "PASS"
    assert resolved(check).region == pytest.approx((0.3, 0.8))
    check.evaluate(_table(1))
    assert calls == [1]  # cached
    assert float(table_of["by_eps"][1.0] / 2 - 1) == 3.0 and float(-Deferred(lambda: 2.0)) == -2.0
    with pytest.raises(TypeError, match="take entries by key"):
        set(table_of)
    assert float(1 / Deferred(lambda: 4.0)) == 0.25 and float(Deferred(lambda: 9.0) ** 0.5) == 3.0


def test_deferred_entries_compute_only_the_entry_a_check_holds():
    calls = []
    entries = deferred_entries(
        {
            "cheap": lambda: calls.append("cheap") or 0.5,
            "costly": lambda: calls.append("costly") or 9.0,
        }
    )
    check = Claim(
        "t",
        "e",
        MethodRatio("ms", "a", "b"),
        (0.6 * entries["cheap"], 1.6 * entries["cheap"]),
        where={"eps": [1.0]},
    )
    assert check.evaluate(_table()).verdict == "PASS" and calls == ["cheap"]
    check.evaluate(_table(1))
    assert calls == ["cheap"] and float(entries["costly"]) == 9.0 and calls == ["cheap", "costly"]


def test_slope_check_centre_and_tolerance_are_deferred_too():
    """y = 2·x^(−1/2) exactly per point (noise-free up to the replicate scatter): a slope check
    whose predicted slope is deferred passes at −½ and fails at −1."""
    rng = np.random.default_rng(5)
    rows = [
        {
            "n": n,
            "point": i,
            "rep": r,
            "method": "a",
            "err": 2 * n**-0.5 * math.exp(0.01 * rng.normal()),
        }
        for i, n in enumerate((100, 400, 1600))
        for r in range(20)
    ]
    table = pd.DataFrame(rows)
    table.attrs["method_columns"] = ["err"]
    half, one = Deferred(lambda: -0.5), Deferred(lambda: -1.0)
    passed = slope_check("t", "e", "err", "a", "n", half, 0.05).evaluate(table)
    assert passed.verdict == "PASS" and passed.predicted == "-0.5 ± 0.05"
    assert slope_check("t", "e", "err", "a", "n", one, 0.05).evaluate(table).verdict == "FAIL"


def test_a_prediction_that_fails_is_one_error_naming_the_check():
    table = deferred_table(lambda: {"ratio": 0.5})
    check = Claim(
        "t-broken",
        "e",
        MethodRatio("ms", "a", "b"),
        (0.6 * table["ratoi"], 1.6 * table["ratio"]),
        where={"eps": [1.0]},
    )
    with pytest.raises(
        UsageError, match=r"check 't-broken': its prediction could not be computed: KeyError"
    ):
        check.evaluate(_table())
    with pytest.raises(TypeError, match="cannot be printed"):
        str(table["ratio"])


def test_a_hand_built_slope_claim_takes_its_pool_and_a_missing_axis_value_is_no_point():
    """Claim(Slope(...), pool=...) fits one intercept per pooled value (as slope_check does);
    rows whose judged axis is missing are left out, as they were."""
    rng = np.random.default_rng(7)
    rows = [
        {
            "n": n,
            "p": p,
            "point": i,
            "rep": r,
            "method": "a",
            "err": (1 + 3 * (p == 0.5)) * n**-0.5 * math.exp(0.01 * rng.normal()),
        }
        for i, (n, p) in enumerate([(n, p) for n in (100, 400, 1600) for p in (0.5, 1.0)])
        for r in range(10)
    ]
    table = pd.DataFrame(rows)
    table.attrs["method_columns"] = ["err"]
    pooled = Claim("t", "e", Slope("err", "a", "n"), (-0.55, -0.45), pool=("p",)).evaluate(table)
    assert pooled.verdict == "PASS" and pooled.value == pytest.approx(-0.5, abs=0.01)
    assert pooled.value == pytest.approx(
        slope_check("t", "e", "err", "a", "n", -0.5, 0.05, pool=("p",)).evaluate(table).value,
        rel=1e-12,
    )
    gappy = _table()
    gappy.loc[gappy["eps"] == 2.0, "eps"] = np.nan
    every = Claim(
        "t", "e", Difference("ms", "a", "b"), (-math.inf, math.inf), over=Every("eps")
    ).evaluate(gappy)
    assert len(every.detail) == 2
