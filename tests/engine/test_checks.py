"""The engine's paired, ratio and identity checks (dpsim/engine/judgement/checks.py) on small
synthetic tables whose answers are computed here by hand: the one pairing helper, the paired
difference (Difference, comparison_check, at one point and at every value of an axis), the
delta-method ratio of means (ColumnRatio, column_ratio_check, predicted_ratio_check, ratio_check, method_ratio_slope_check and its options),
linear_slope_check, IdenticalAcrossCheck, the printed region (format_region) and the
comparison with published numbers (PublishedCheck, published_check). (Log–log
slopes: test_summary.py; ratio_check and ratio_slope_check against a bootstrap: test_cai_scaling.py;
the phase-transition check: test_cai_threshold.py.)"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpsim.errors import UsageError
from dpsim.engine import (
    ColumnRatio,
    Difference,
    IdenticalAcrossCheck,
    Published,
    PublishedCheck,
    column_ratio_check,
    comparison_check,
    linear_slope_check,
    method_ratio_slope_check,
    predicted_ratio_check,
    published_check,
    ratio_check,
)
from dpsim.engine.judgement.verdicts import format_region
from dpsim.engine.judgement.statistics import log_ratio_of_means, paired
from dpsim.engine.judgement.published import pooled_clusters, published_points, relative_points

Z = 1.959963984540054


def _table(rows, outputs, seed=None) -> pd.DataFrame:
    """A results table (rows shuffled when ``seed`` is given: pairing must not rely on order)."""
    table = pd.DataFrame(rows)
    if seed is not None:
        table = table.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    table.attrs["method_columns"] = list(outputs)
    return table


def _normal_interval(x):
    x = np.asarray(x, float)
    half = Z * math.sqrt(((x - x.mean()) ** 2).sum() / (len(x) - 1)) / math.sqrt(len(x))
    return x.mean(), x.mean() - half, x.mean() + half


# ---------------------------------------------------------------------------------------
# Paired differences
# ---------------------------------------------------------------------------------------
# Two grid points (n = 10, 20), four replicates each; methods a and b. The replicate numbers
# repeat across the points, so pairing must use (point, rep). Extra rows without a partner
# (rep 4: b missing; rep 5: no b row at all) are dropped.
A = {10: [1.0, 2.0, 3.0, 4.0], 20: [0.5, 0.7, 0.9, 1.1]}
B = {10: [1.5, 2.1, 3.6, 4.2], 20: [0.8, 0.9, 1.0, 1.6]}
DIFFS = {10: [-0.5, -0.1, -0.6, -0.2], 20: [-0.3, -0.2, -0.1, -0.5]}


def _pairs_table(seed=3):
    rows = []
    for point, n in enumerate((10, 20)):
        for rep in range(4):
            rows.append({"n": n, "point": point, "rep": rep, "method": "a", "err": A[n][rep]})
            rows.append({"n": n, "point": point, "rep": rep, "method": "b", "err": B[n][rep]})
        rows.append({"n": n, "point": point, "rep": 4, "method": "a", "err": 9.0})
        rows.append({"n": n, "point": point, "rep": 4, "method": "b", "err": math.nan})
        rows.append({"n": n, "point": point, "rep": 5, "method": "a", "err": -9.0})
    return _table(rows, ["err"], seed=seed)


def test_paired_aligns_on_point_and_replicate():
    wide = paired(
        _pairs_table(), {"x": ({"method": ["a"]}, "err"), "y": ({"method": ["b"]}, "err")}
    )
    assert len(wide) == 8
    for (point, rep), row in wide.iterrows():
        n = (10, 20)[point]
        assert (row["x"], row["y"]) == (A[n][rep], B[n][rep])
    kept = paired(
        _pairs_table(),
        {"x": ({"method": ["a"]}, "err"), "y": ({"method": ["b"]}, "err")},
        dropna=False,
    )
    assert len(kept) == 10 and kept["y"].isna().sum() == 2  # rep 4 kept, rep 5 has no b row
    with pytest.raises(UsageError, match="not unique"):  # rep alone repeats across the points
        paired(_pairs_table(), {"x": ({"method": ["a"]}, "err")}, on=("rep",))
    with pytest.raises(UsageError, match="no column 'zzz'"):
        paired(_pairs_table(), {"x": ({"method": ["a"]}, "zzz")})


def test_paired_difference_matches_the_hand_computation():
    expected = _normal_interval(DIFFS[10] + DIFFS[20])
    value = Difference("err", "a", "b").estimate(_pairs_table())
    mean, (low, high), n = value.value, value.interval(), value.n
    assert n == 8 and not value.log
    np.testing.assert_allclose((mean, low, high), expected, rtol=1e-12)
    assert mean == pytest.approx(-0.3125, rel=1e-12)


def test_comparison_check_passes_because_it_pairs():
    table = _pairs_table()
    result = comparison_check("t", "e", "err", "a", "b", pool=("n",)).evaluate(table)
    mean, low, high = _normal_interval(DIFFS[10] + DIFFS[20])
    assert result.verdict == "PASS"
    assert (result.value, result.low, result.high) == pytest.approx((mean, low, high), rel=1e-12)
    assert result.predicted == "≤ 0" and result.evidence == "err(a) − err(b), 1 point, 8 obs"
    assert result.fitted == f"{mean:+.4f} [{low:+.4f}, {high:+.4f}]"
    # the same numbers unpaired (Welch) would straddle 0: the PASS comes from the pairing
    a, b = np.r_[A[10], A[20]], np.r_[B[10], B[20]]
    welch = Z * math.sqrt(a.var(ddof=1) / 8 + b.var(ddof=1) / 8)
    assert a.mean() - b.mean() + welch > 0
    # and the worse method first fails
    assert (
        comparison_check("t", "e", "err", "b", "a", pool=("n",)).evaluate(table).verdict == "FAIL"
    )


def test_every_point_check_judges_each_point_and_shows_the_decisive_one():
    check = comparison_check("t", "e", "err", "a", "b", every="n")
    result = check.evaluate(_pairs_table())
    per_point = {n: _normal_interval(DIFFS[n]) for n in (10, 20)}
    assert result.verdict == "PASS"
    nearest = max(per_point, key=lambda n: per_point[n][2])  # the interval closest to 0
    assert (result.value, result.low, result.high) == pytest.approx(per_point[nearest], rel=1e-12)
    assert result.fitted.endswith(f"at n={nearest}; 2/2 inside")
    assert result.predicted == "≤ 0" and result.evidence.startswith("err(a) − err(b), 2 points")
    np.testing.assert_allclose(
        result.detail[["value", "low", "high"]].to_numpy(),
        [per_point[10], per_point[20]],
        rtol=1e-12,
    )
    # one point reversed: FAIL, shown at that point
    table = _pairs_table()
    flip = (table["n"] == 20) & table["method"].isin(["a", "b"])
    table.loc[flip, "method"] = table.loc[flip, "method"].map({"a": "b", "b": "a"})
    failed = check.evaluate(table)
    assert failed.verdict == "FAIL" and "at n=20;" in failed.fitted and failed.low > 0


# ---------------------------------------------------------------------------------------
# Ratios of means (delta method)
# ---------------------------------------------------------------------------------------
NUM = np.array([2.0, 3.0, 5.0, 4.0, 6.0])
DEN = np.array([1.0, 2.0, 2.0, 3.0, 2.5])


def _delta_by_hand(num, den):
    """log(mean num/mean den) and its delta-method standard error, covariance included."""
    n = len(num)
    mn, md = num.sum() / n, den.sum() / n
    vn = ((num - mn) ** 2).sum() / (n - 1)
    vd = ((den - md) ** 2).sum() / (n - 1)
    c = ((num - mn) * (den - md)).sum() / (n - 1)
    return math.log(mn / md), math.sqrt((vn / mn**2 + vd / md**2 - 2 * c / (mn * md)) / n)


def _columns_table(num, den, seed=None):
    rows = [
        {"point": 0, "rep": r, "method": "m", "sim": x, "pred": y}
        for r, (x, y) in enumerate(zip(num, den))
    ]
    rows += [
        {"point": 0, "rep": r, "method": "other", "sim": 1e6, "pred": 1.0} for r in range(len(num))
    ]
    return _table(rows, ["sim", "pred"], seed=seed)


def test_ratio_of_means_matches_the_closed_form():
    log_r, se = _delta_by_hand(NUM, DEN)
    table = _columns_table(NUM, DEN, seed=1)
    plain = ColumnRatio("sim", "pred", "m").estimate(table)
    assert plain.n == 5 and plain.log
    np.testing.assert_allclose(
        (plain.natural, *plain.interval()),
        (math.exp(log_r), math.exp(log_r - Z * se), math.exp(log_r + Z * se)),
        rtol=1e-12,
    )
    rooted = ColumnRatio("sim", "pred", "m", root=True).estimate(table)
    root = (rooted.natural, *rooted.interval())
    np.testing.assert_allclose(
        root,
        (math.exp(log_r / 2), math.exp((log_r - Z * se) / 2), math.exp((log_r + Z * se) / 2)),
        rtol=1e-12,
    )
    result = column_ratio_check("t", "e", "sim", "pred", "m", 0.5, 5.0).evaluate(
        table
    )  # root by default
    assert result.verdict == "PASS" and result.value == pytest.approx(root[0], rel=1e-12)
    assert result.evidence == "RMS ratio sim/pred of m, 1 point, 5 obs"
    assert (
        column_ratio_check("t", "e", "sim", "pred", "m", 3.0, 5.0, root=False)
        .evaluate(table)
        .verdict
        == "FAIL"
    )


def test_ratio_of_means_uses_the_covariance():
    """Exactly proportional columns: the ratio is exact and its interval has zero width.
    Without the covariance term (or with its sign wrong) the interval would be wide."""
    ratio = ColumnRatio("sim", "pred", "m").estimate(_columns_table(NUM, NUM / 2))
    value, (low, high) = ratio.natural, ratio.interval()
    assert value == pytest.approx(2.0, rel=1e-14) and high - low < 1e-6
    n, m = len(NUM), NUM.mean()
    without = math.sqrt(2 * NUM.var(ddof=1) / (n * m**2))
    assert 2.0 * (math.exp(Z * without) - math.exp(-Z * without)) > 0.5


def test_log_ratio_of_means_general_signs_against_a_double_sum():
    rng = np.random.default_rng(4)
    base = rng.gamma(3.0, 1.0, size=40)
    cols = np.stack([base * rng.gamma(9.0, 1 / 9, 40) * s for s in (1.0, 2.0, 0.5, 3.0)], axis=1)
    signs = np.array([1.0, -1.0, -1.0, 1.0])
    n, means = len(cols), cols.mean(axis=0)
    var = (
        sum(
            signs[j]
            / means[j]
            * signs[k]
            / means[k]
            * ((cols[:, j] - means[j]) * (cols[:, k] - means[k])).sum()
            / (n - 1)
            for j in range(4)
            for k in range(4)
        )
        / n
    )
    log_r, se = log_ratio_of_means(cols, signs, scale=0.5)
    assert log_r == pytest.approx(
        0.5 * sum(s * math.log(m) for s, m in zip(signs, means)), rel=1e-12
    )
    assert se == pytest.approx(0.5 * math.sqrt(var), rel=1e-12)
    with pytest.raises(UsageError, match="not positive"):
        log_ratio_of_means(-cols, signs)
    with pytest.raises(UsageError, match="two paired"):
        log_ratio_of_means(cols[:1], signs)


def test_ratio_check_of_independent_slices_adds_the_variances():
    a, b = np.array([4.0, 5.0, 7.0, 6.0]), np.array([1.0, 2.0, 1.5])
    rows = [{"unit": "a", "rep": r, "method": "m", "msq": v} for r, v in enumerate(a)]
    rows += [{"unit": "b", "rep": r, "method": "m", "msq": v} for r, v in enumerate(b)]
    result = ratio_check("t", "e", "msq", "m", "unit", "a", "b", 1.0, 10.0).evaluate(
        _table(rows, ["msq"])
    )
    se = math.sqrt(
        a.var(ddof=1) / (len(a) * a.mean() ** 2) + b.var(ddof=1) / (len(b) * b.mean() ** 2)
    )
    r = a.mean() / b.mean()
    np.testing.assert_allclose(
        (result.value, result.low, result.high),
        (r, r * math.exp(-Z * se), r * math.exp(Z * se)),
        rtol=1e-12,
    )
    assert result.evidence == "ratio unit a/b of msq, 1 point, 7 obs"


def test_predicted_ratio_check_divides_by_the_predicted_ratio():
    """metric = c(ε)·prediction on every replicate, c(1) = 2, c(3) = 1: the simulated ratio is
    exactly twice the predicted one, and the paired interval has zero width (it would not if
    the slices were paired wrongly: the rows are shuffled)."""
    rng = np.random.default_rng(2)
    rows = []
    for eps, c, level in ((1.0, 2.0, 4.0), (3.0, 1.0, 1.0)):
        pred = level * rng.gamma(5.0, 0.2, size=30)
        rows += [
            {"eps": eps, "point": int(eps), "rep": r, "method": "m", "mse": c * p, "oracle": p}
            for r, p in enumerate(pred)
        ]
    table = _table(rows, ["mse", "oracle"], seed=5)
    result = predicted_ratio_check(
        "t", "e", "mse", "oracle", "m", "eps", 1.0, 3.0, 1.9, 2.1, root=False
    ).evaluate(table)
    assert result.verdict == "PASS" and result.value == pytest.approx(2.0, rel=1e-12)
    assert result.high - result.low < 1e-6
    sim = table[table.eps == 1].mse.mean() / table[table.eps == 3].mse.mean()
    pred = table[table.eps == 1].oracle.mean() / table[table.eps == 3].oracle.mean()
    assert result.value == pytest.approx(sim / pred, rel=1e-12)
    assert result.evidence == "ratio eps 1/3 of mse over the same ratio of oracle, 1 point, 30 obs"
    rooted = predicted_ratio_check(
        "t", "e", "mse", "oracle", "m", "eps", 1.0, 3.0, 0.9, 1.1
    ).evaluate(table)
    assert rooted.verdict == "FAIL" and rooted.value == pytest.approx(math.sqrt(2.0), rel=1e-12)


def test_method_ratio_slope_check_recovers_the_exponent():
    """metric(a) = c·g(x)^(2p)·metric(b) on every paired replicate: the RMS ratio is √c·g^p,
    so the slope in log g is p exactly (forgetting the square root would give 2p)."""
    rng = np.random.default_rng(6)
    p, c, g = 0.75, 3.0, {1.0: 1.5, 2.0: 3.0, 4.0: 7.0}
    rows = []
    for i, (eps, gx) in enumerate(g.items()):
        for rep, v in enumerate(rng.gamma(4.0, 0.25, size=20)):
            rows.append({"eps": eps, "point": i, "rep": rep, "method": "b", "mse": v})
            rows.append(
                {"eps": eps, "point": i, "rep": rep, "method": "a", "mse": c * gx ** (2 * p) * v}
            )
    table = _table(rows, ["mse"], seed=7)

    def make(predicted):
        return method_ratio_slope_check(
            "t",
            "e",
            metric="mse",
            numerator="a",
            denominator="b",
            x="eps",
            g=g.__getitem__,
            g_label="g",
            predicted=predicted,
            tolerance=0.05,
        )

    result = make(p).evaluate(table)
    assert result.verdict == "PASS" and result.value == pytest.approx(p, rel=1e-10)
    assert result.high - result.low < 1e-6
    ratios = ", ".join(f"{math.sqrt(c) * gx**p:.2f}" for gx in g.values())
    assert (
        result.evidence
        == f"slope of RMS ratio a/b of mse on log g(eps), eps ∈ {{1, 2, 4}}; {ratios}, 120 obs"
    )
    assert make(2 * p).evaluate(table).verdict == "FAIL"


def test_method_ratio_slope_check_root_square_and_plain_x():
    """metric(a) = c·x^q·metric(b) on every paired replicate, slope taken in log x itself
    (g None). The four statistics give four different exact slopes: the ratio of means
    c·x^q → q; its square root (the default, for a mean-square metric) → q/2; the RMS ratio
    of a norm, √(mean a²/mean b²) (square, root) = c·x^q → q; the ratio of mean squares
    (square, no root) → 2q."""
    rng = np.random.default_rng(9)
    q, c = 0.75, 3.0
    rows = []
    for i, x in enumerate((2.0, 4.0, 8.0)):
        for rep, v in enumerate(rng.gamma(4.0, 0.25, size=20)):
            rows.append({"m": x, "point": i, "rep": rep, "method": "b", "l2": v})
            rows.append({"m": x, "point": i, "rep": rep, "method": "a", "l2": c * x**q * v})
    table = _table(rows, ["l2"], seed=10)

    def make(**options):
        return method_ratio_slope_check(
            "t", "e", metric="l2", numerator="a", denominator="b", x="m", **options
        )

    for options, slope in (
        ({"root": False}, q),
        ({}, q / 2),
        ({"square": True}, q),
        ({"square": True, "root": False}, 2 * q),
    ):
        result = make(region=(slope - 0.01, slope + 0.01), **options).evaluate(table)
        assert result.verdict == "PASS" and result.value == pytest.approx(slope, rel=1e-10), options
        assert result.high - result.low < 1e-6
    falls = make(root=False, region=(-math.inf, 0.0)).evaluate(table)
    assert falls.verdict == "FAIL" and falls.predicted == "≤ 0"
    assert falls.fitted == f"{q:+.3f} [{falls.low:+.3f}, {falls.high:+.3f}]"
    assert falls.evidence.startswith("slope of ratio a/b of l2 on log m, m ∈ {2, 4, 8}; ")
    assert make(root=False, region=(0.5, 1.0)).evaluate(table).predicted == "[+0.50, +1.00]"
    # without a region, predicted ± tolerance as before
    assert make(root=False, predicted=q, tolerance=0.05).evaluate(table).predicted == "+0.75 ± 0.05"
    assert make(root=False, predicted=2 * q, tolerance=0.05).evaluate(table).verdict == "FAIL"


def test_method_ratio_slope_check_interval_by_hand():
    """Two values of x, noisy paired replicates: each log ratio and its delta-method standard
    error computed here (_delta_by_hand); through two points the slope is the difference of
    the log ratios over Δ log x, its variance (se₁² + se₂²)/(Δ log x)². With ``square`` the
    same on the squared values, halved by the root."""
    a = {1.0: np.array([2.0, 3.0, 4.0, 3.5]), 4.0: np.array([5.0, 7.0, 6.0, 9.0])}
    b = {1.0: np.array([1.0, 2.0, 2.0, 1.5]), 4.0: np.array([1.0, 1.5, 2.0, 2.5])}
    rows = [
        {"x": x, "point": i, "rep": r, "method": method, "err": v}
        for i, x in enumerate(a)
        for method, values in (("a", a[x]), ("b", b[x]))
        for r, v in enumerate(values)
    ]
    table = _table(rows, ["err"], seed=11)
    dx = math.log(4.0)
    for square, root, power, scale in ((False, False, 1, 1.0), (True, True, 2, 0.5)):
        (l1, s1), (l4, s4) = (_delta_by_hand(a[x] ** power, b[x] ** power) for x in (1.0, 4.0))
        slope, se = scale * (l4 - l1) / dx, scale * math.sqrt(s1**2 + s4**2) / dx
        result = method_ratio_slope_check(
            "t",
            "e",
            metric="err",
            numerator="a",
            denominator="b",
            x="x",
            region=(-math.inf, math.inf),
            root=root,
            square=square,
        ).evaluate(table)
        np.testing.assert_allclose(
            (result.value, result.low, result.high),
            (slope, slope - Z * se, slope + Z * se),
            rtol=1e-10,
        )


def test_format_region():
    assert format_region(-math.inf, 0.0) == "≤ 0" and format_region(0.9, math.inf) == "≥ 0.9"
    assert (
        format_region(0.9, 1.1) == "[0.9, 1.1]"
        and format_region(0.70625, 0.8631) == "[0.706, 0.863]"
    )
    assert format_region(1.0, 1.2, signed=True) == "[+1.00, +1.20]"
    assert format_region(-math.inf, 0.5, signed=True) == "≤ 0.5"


def test_column_ratio_is_on_the_log_scale():
    log_r, se = _delta_by_hand(NUM, DEN)
    got = ColumnRatio("sim", "pred", "m").estimate(_columns_table(NUM, DEN, seed=2))
    np.testing.assert_allclose((got.value, got.se, got.n), (log_r, se, 5), rtol=1e-12)
    rooted = ColumnRatio("sim", "pred", "m", root=True).estimate(_columns_table(NUM, DEN))
    np.testing.assert_allclose(
        (rooted.value, rooted.se, rooted.n), (log_r / 2, se / 2, 5), rtol=1e-12
    )


# ---------------------------------------------------------------------------------------
# Linear slope and exact identity
# ---------------------------------------------------------------------------------------
def test_linear_slope_check_weighted_least_squares_by_hand():
    """y = 3 + 2·dim ± 1 (two replicates): the means lie on the line, each with standard error
    1, so the WLS slope is 2 with standard error 1/√Sxx."""
    dims = np.array([2.0, 4.0, 8.0])
    rows = [
        {
            "dim": d,
            "point": i,
            "rep": r,
            "method": "m",
            "n_samples": 100.0,
            "mse": (3 + 2 * d + s) / 100,
        }
        for i, d in enumerate(dims)
        for r, s in enumerate((1.0, -1.0))
    ]
    table = _table(rows, ["mse"])
    se = 1 / math.sqrt(((dims - dims.mean()) ** 2).sum())

    def make(slope, rel_tol):
        return linear_slope_check(
            "t",
            "e",
            metric="mse",
            method="m",
            x="dim",
            scale="n_samples",
            predicted_slope=slope,
            rel_tol=rel_tol,
        )

    result = make(2.0, 0.3).evaluate(table)
    assert result.verdict == "PASS"
    np.testing.assert_allclose(
        (result.value, result.low, result.high), (1.0, 1 - Z * se / 2, 1 + Z * se / 2), rtol=1e-10
    )
    assert result.evidence == (
        "WLS slope of mean n_samples·mse of m on dim / 2, 1 point, 6 obs; "
        "slope 2 on dim ∈ {2, 4, 8}"
    )
    assert make(2.0, 0.1).evaluate(table).verdict == "INCONCLUSIVE"  # 1 ± 0.227 straddles 1 ± 0.1
    assert make(1.0, 0.3).evaluate(table).verdict == "FAIL"  # ratio 2 ± 0.45


def test_identical_across_check_counts_mismatches():
    rows = [
        {
            "mech": m,
            "n": n,
            "point": 10 * n + (m == "b"),
            "rep": r,
            "method": "m",
            "k": float(n + r),
        }
        for m in ("a", "b")
        for n in (1, 2)
        for r in range(3)
    ]
    table = _table(rows, ["k"], seed=8)
    check = IdenticalAcrossCheck("t", "e", ("k",), "m", "mech", "a", "b")
    same = check.evaluate(table)
    assert (
        same.verdict == "PASS"
        and same.value == 0
        and same.evidence.startswith("6 paired replicates")
    )
    b_rows = table.index[table["mech"] == "b"]
    table.loc[b_rows[0], "k"] += 1e-9  # beyond tol = 1e-12
    table.loc[b_rows[1], "k"] = math.nan  # a missing value is a mismatch
    table.loc[b_rows[2], "k"] += 1e-13  # within tol
    result = check.evaluate(table)
    assert result.verdict == "FAIL" and result.value == 2
    assert result.detail["k"] == pytest.approx(1e-9, rel=1e-3)


# ---------------------------------------------------------------------------------------
# Published numbers (PublishedCheck, published_check)
# ---------------------------------------------------------------------------------------
def _reproduction(means: dict, sd: float, reps: int, seed: int, scale: float = 1.0) -> pd.DataFrame:
    """Replicate rows of method m at each n, err ~ Normal(scale·mean_n, sd) (a reproduction
    off by the factor ``scale``)."""
    rng = np.random.default_rng(seed)
    rows = [
        {"n": n, "eps": 1.0, "point": i, "rep": r, "method": "m", "err": float(x)}
        for i, (n, mu) in enumerate(means.items())
        for r, x in enumerate(rng.normal(scale * mu, sd, reps))
    ]
    return _table(rows, ["err"])


PUBLISHED_MEANS = {100: 0.30, 200: 0.20, 300: 0.12, 400: 0.08}


def _published(se: float = 0.002) -> Published:
    table = pd.DataFrame(
        [{"n": n, "eps": 1.0, "value": v, "se": se} for n, v in PUBLISHED_MEANS.items()]
    )
    return Published("Table 9 of a paper, p. 1", table)


def test_published_points_by_hand():
    table = _table(
        [
            {"n": 1, "point": 0, "rep": r, "method": "m", "err": x}
            for r, x in enumerate([1.0, 2.0, 3.0])
        ]
        + [
            {"n": 2, "point": 1, "rep": r, "method": "m", "err": x}
            for r, x in enumerate([4.0, 6.0])
        ],
        ["err"],
    )
    published = pd.DataFrame({"n": [1, 2, 3], "value": [2.5, 5.0, 1.0], "se": [0.5, 0.0, 0.1]})
    points = published_points(table, published, ["n"], "err")
    assert list(points["n"]) == [1, 2]  # n = 3 is not reproduced
    se_1, se_2 = 1 / math.sqrt(3), math.sqrt(2) / math.sqrt(2)  # sd/√n: sd 1 and √2
    np.testing.assert_allclose(points["log_ratio"], [math.log(2 / 2.5), 0.0])
    np.testing.assert_allclose(points["se"], [math.hypot(se_1 / 2, 0.5 / 2.5), se_2 / 5])
    by_reps = published_points(table, published.drop(columns="se").assign(reps=4), ["n"], "err")
    np.testing.assert_allclose(
        by_reps["se_value"], [1 / 2, math.sqrt(2) / 2]
    )  # the reproduction's sd / √4
    clusters = pooled_clusters(points.assign(c=[7, 7]), ["c"])
    w = 1 / points["se"] ** 2
    np.testing.assert_allclose(
        clusters["log_ratio"], [float((w * points["log_ratio"]).sum() / w.sum())]
    )
    np.testing.assert_allclose(clusters["se"], [1 / math.sqrt(w.sum())])


def test_published_check_passes_the_right_reproduction_and_fails_one_off_by_10_to_20_percent():
    check = PublishedCheck("t", "e", "err", "m", _published(), ("n", "eps"))
    # region: e^(±6 s), s = 1/√Σ(value/se)² from the published numbers alone
    s = 1 / math.sqrt(sum((v / 0.002) ** 2 for v in PUBLISHED_MEANS.values()))
    right = check.evaluate(_reproduction(PUBLISHED_MEANS, 0.04, 400, seed=1))
    assert right.verdict == "PASS", right
    assert (right.region_low, right.region_high) == pytest.approx(
        (math.exp(-6 * s), math.exp(6 * s)), abs=1e-4
    )
    assert "Table 9 of a paper, p. 1" in right.predicted and "4 points" in right.evidence
    for scale in (0.8, 0.9, 1.1, 1.2):
        off = check.evaluate(
            _reproduction(PUBLISHED_MEANS, 0.04, 400, seed=1, scale=scale), family=50
        )
        assert off.verdict == "FAIL", (scale, off)
        assert off.value == pytest.approx(scale, rel=0.03)


def test_published_check_widens_by_the_spread_of_clusters():
    """Points sharing one draw of the publisher's design (a cluster) that disagree beyond
    Monte-Carlo error widen the interval by √(χ²/dof) of the clusters."""
    wobbly = {n: v * f for (n, v), f in zip(PUBLISHED_MEANS.items(), (1.15, 0.87, 1.12, 0.9))}
    table = _reproduction(wobbly, 0.04, 400, seed=2)
    plain = PublishedCheck("t", "e", "err", "m", _published(), ("n", "eps")).evaluate(table)
    clustered = PublishedCheck(
        "t", "e", "err", "m", _published(), ("n", "eps"), cluster=("n",)
    ).evaluate(table)
    assert clustered.value == pytest.approx(plain.value)  # one point per cluster: the same pooling
    assert "interval ×" in plain.evidence
    assert plain.verdict != "PASS"  # a wobble of ±13% is no agreement


def test_published_check_without_the_numbers_is_inconclusive():
    absent = Published(
        "the authors' CSV", lambda: None, missing="run `python scripts/fetch.py` to fetch them"
    )
    result = PublishedCheck("t", "e", "err", "m", absent, ("n", "eps")).evaluate(
        _reproduction(PUBLISHED_MEANS, 0.04, 10, seed=3)
    )
    assert result.verdict == "INCONCLUSIVE"
    assert "not here" in result.evidence and "scripts/fetch.py" in result.evidence
    with pytest.raises(UsageError, match="'value'"):
        PublishedCheck(
            "t", "e", "err", "m", Published("x", pd.DataFrame({"n": [1]})), ("n",)
        ).evaluate(_reproduction(PUBLISHED_MEANS, 0.04, 10, seed=3))


def test_published_check_of_one_printed_value():
    table = _reproduction(PUBLISHED_MEANS, 0.04, 400, seed=4)
    one = published_check(
        "t", "e", "err", "m", 0.12, at={"n": 300}, reps=1000, source="Table 2, p. 7"
    )
    assert one.where == {"n": [300]}
    result = one.evaluate(table)
    assert result.verdict == "PASS" and "Table 2, p. 7" in result.predicted
    # se from the reproduction's sd over the paper's 1000 replicates: region e^(±6·(0.04/√1000)/0.12)
    assert result.region_high == pytest.approx(
        math.exp(6 * 0.04 / math.sqrt(1000) / 0.12), rel=0.02
    )
    for off in (0.8, 1.2):
        assert (
            published_check("t", "e", "err", "m", 0.12 * off, at={"n": 300}, reps=1000, source="x")
            .evaluate(table)
            .verdict
            == "FAIL"
        )
    # at the paper's 100 replicates its own error (±20% region) cannot tell 20% apart
    assert (
        published_check("t", "e", "err", "m", 0.12 * 1.2, at={"n": 300}, reps=100, source="x")
        .evaluate(table)
        .verdict
        == "INCONCLUSIVE"
    )
    with pytest.raises(UsageError, match="one of them"):
        published_check("t", "e", "err", "m", 0.12, at={"n": 300}, source="x")


def test_published_check_clusters_are_keys():
    with pytest.raises(UsageError, match="must be among the keys"):
        PublishedCheck("t", "e", "err", "m", _published(), ("n",), cluster=("eps",))


def _profile_table(scale_at_half: float, seed: int) -> pd.DataFrame:
    """Replicate rows at n × ε ∈ {0.5, 2.5}: err ~ Normal(μ, 0.04), μ = 0.3·(100/n) at ε = 0.5
    (× ``scale_at_half``) and half of it at ε = 2.5."""
    rng = np.random.default_rng(seed)
    rows, point = [], 0
    for n in (100, 200, 300, 400):
        for eps, mu in ((0.5, 0.3 * 100 / n * scale_at_half), (2.5, 0.15 * 100 / n)):
            rows += [
                {"n": n, "eps": eps, "point": point, "rep": r, "method": "m", "err": float(x)}
                for r, x in enumerate(rng.normal(mu, 0.04, 400))
            ]
            point += 1
    return _table(rows, ["err"])


def test_published_profile_cancels_an_offset_per_cluster():
    """Published means with one offset per n (a design draw shared by its ε): the level check
    cannot pass them, the profile along ε relative to ε = 2.5 does, and fails a reproduction
    whose ε = 0.5 error alone is 20% off."""
    offsets = {100: 1.15, 200: 0.87, 300: 1.12, 400: 0.9}
    published = Published(
        "Fig. 9",
        pd.DataFrame(
            [
                {
                    "n": n,
                    "eps": eps,
                    "value": f * (0.3 if eps == 0.5 else 0.15) * 100 / n,
                    "se": 0.002,
                }
                for n, f in offsets.items()
                for eps in (0.5, 2.5)
            ]
        ),
    )
    level = PublishedCheck("t", "e", "err", "m", published, ("n", "eps"), cluster=("n",))
    profile = PublishedCheck(
        "t", "e", "err", "m", published, ("n", "eps"), cluster=("n",), relative_to=("eps", 2.5)
    )
    right = _profile_table(1.0, seed=5)
    assert level.evaluate(right).verdict != "PASS"
    result = profile.evaluate(right)
    assert result.verdict == "PASS", result
    assert "4 points in 4 clusters" in result.evidence and "relative to eps=2.5" in result.evidence
    for scale in (0.8, 1.2):
        assert profile.evaluate(_profile_table(scale, seed=5), family=50).verdict == "FAIL", scale
    points = relative_points(
        published_points(right, published.table, ["n", "eps"], "err"), ["n", "eps"], "eps", 2.5
    )
    assert list(points["eps"]) == [0.5] * 4
    np.testing.assert_allclose(
        points["rel_se_value"],
        [math.hypot(0.002 / v, 0.002 / (v / 2)) for v in (0.345, 0.1305, 0.112, 0.0675)],
        rtol=1e-9,
    )
    with pytest.raises(UsageError, match="relative_to"):
        PublishedCheck("t", "e", "err", "m", published, ("n", "eps"), relative_to=("p", 1.0))


def test_published_check_lines_say_why_they_are_open():
    absent = Published("x", lambda: None, missing="run it")
    line = (
        PublishedCheck("t", "e", "err", "m", absent, ("n", "eps"))
        .evaluate(_reproduction(PUBLISHED_MEANS, 0.04, 10, seed=3))
        .line()
    )
    assert "once they are here" in line and "boundary" not in line
    wide = PublishedCheck(
        "t", "e", "err", "m", _published(se=0.01), ("n", "eps")
    )  # their error: ±17% region
    result = wide.evaluate(
        _reproduction(PUBLISHED_MEANS, 0.04, 400, seed=1, scale=1.17)
    )  # on its edge
    assert result.verdict == "INCONCLUSIVE" and "own error keeps it open" in result.line()
    assert result.needed_reps is None
