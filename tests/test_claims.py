"""The composable checks (issue 27 item 7): Claim = a statistic (Mean, MethodRatio,
Difference) × an aggregation (At, Every, Along) × a region, with a prediction evaluated from
the grid. Each composition is checked against the catalogue class it generalises (same
numbers on the same table) or against a hand computation."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpsim.errors import UsageError
from dpsim.experiment import EveryPointCheck, MethodRatioSlopeCheck, PairedDifference
from dpsim.experiment.checks import Along, At, Claim, Difference, Every, LevelCheck, Mean, MethodRatio

Z = 1.959963984540054


def _table(seed=0):
    """Two methods at three ε, 40 replicates: metric(a) ~ Gamma with mean 8/ε²; metric(b) =
    metric(a)·u with u ~ Gamma(mean 2), so mean a / mean b = ½ at every ε."""
    rng = np.random.default_rng(seed)
    rows = []
    for point, eps in enumerate((0.5, 1.0, 2.0)):
        a = rng.gamma(4.0, 2.0 / eps ** 2, size=40)
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
    se = x.std(ddof=1) / math.sqrt(len(x)) / x.mean()            # delta method: sd/(√N·mean)
    result = Claim("t", "e", Mean("ms", "a"), (0.8, 1.25), prediction=variance, where={"eps": [1.0]}).evaluate(table)
    assert result.value == pytest.approx(x.mean() / 8.0, rel=1e-12)
    assert (result.low, result.high) == pytest.approx((result.value * math.exp(-Z * se),
                                                       result.value * math.exp(Z * se)), rel=1e-9)
    assert result.verdict == "PASS"
    halved = Claim("t", "e", Mean("ms", "a"), (0.8, 1.25), prediction=lambda p: variance(p) / 4,
                   where={"eps": [1.0]}).evaluate(table)
    assert halved.verdict == "FAIL" and halved.value == pytest.approx(4 * result.value)


def test_level_check_is_a_claim():
    table = _table()
    level = LevelCheck("t", "e", "ms", "a", variance, 0.8, 1.25, at=("eps",))
    a, b = level.evaluate(table), level.claim().evaluate(table)
    assert (a.verdict, a.value, a.low, a.high, a.fitted) == (b.verdict, b.value, b.low, b.high, b.fitted)
    assert level.evaluate(table).verdict == "PASS" and "3/3 inside" in level.evaluate(table).fitted


def test_every_with_difference_matches_every_point_check():
    table = _table(1)
    old = EveryPointCheck("t", "e", statistic=PairedDifference("ms", "a", "b"), x="eps").evaluate(table)
    new = Claim("t", "e", Difference("ms", "a", "b"), (-math.inf, 0.0), over=Every("eps")).evaluate(table)
    assert (new.value, new.low, new.high, new.verdict) == pytest.approx((old.value, old.low, old.high, old.verdict))
    assert new.verdict == "PASS"


def test_along_with_method_ratio_matches_method_ratio_slope_check():
    table = _table(2)
    old = MethodRatioSlopeCheck("t", "e", metric="ms", numerator="a", denominator="b", x="eps", root=False,
                                region=(-0.2, 0.2)).evaluate(table)
    new = Claim("t", "e", MethodRatio("ms", "a", "b"), (-0.2, 0.2), over=Along("eps")).evaluate(table)
    assert (new.value, new.low, new.high) == pytest.approx((old.value, old.low, old.high), rel=1e-12)
    assert new.verdict == old.verdict == "PASS"
    # the ratio is ½ at every ε: relative to a prediction of ½ it is 1
    level = Claim("t", "e", MethodRatio("ms", "a", "b"), (0.75, 1.33), over=Every("eps"),
                  prediction=lambda p: 0.5).evaluate(table)
    assert level.verdict == "PASS" and abs(level.value - 1) < 0.2
    wrong = Claim("t", "e", MethodRatio("ms", "a", "b"), (0.75, 1.33), over=Every("eps"),
                  prediction=lambda p: 1.0).evaluate(table)
    assert wrong.verdict == "FAIL"


def test_difference_relative_to_a_prediction():
    table = _table(3)
    plain = Claim("t", "e", Difference("ms", "a", "b"), (-math.inf, math.inf), where={"eps": [2.0]}).evaluate(table)
    shifted = Claim("t", "e", Difference("ms", "a", "b"), (-math.inf, math.inf), where={"eps": [2.0]},
                    prediction=lambda p: -1.0).evaluate(table)
    assert shifted.value == pytest.approx(plain.value + 1.0)
    assert shifted.high - shifted.low == pytest.approx(plain.high - plain.low)


def test_claims_refuse_what_they_cannot_judge():
    table = _table()
    with pytest.raises(UsageError, match="'eps'"):             # three ε pooled at one point
        Claim("t", "e", Mean("ms", "a"), (0.8, 1.25), over=At()).evaluate(table)
    with pytest.raises(UsageError, match="one positive finite value per judged point"):
        Claim("t", "e", MethodRatio("ms", "a", "b"), (0.8, 1.25), over=At(), pool=("eps",),
              prediction=variance).evaluate(table)
    with pytest.raises(UsageError, match="two values"):
        Claim("t", "e", MethodRatio("ms", "a", "b"), (-1, 1), over=Along("eps"),
              where={"eps": [1.0]}).evaluate(table)
