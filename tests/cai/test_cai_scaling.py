"""The individual-DP scaling checks (the cai package's scaling module; docs/cai.md, Predictions (items 7–9)):
the check classes slope_range_check / ratio_check / ratio_slope_check on synthetic tables (pass on
correct data, fail on wrong), the L-explicit theory terms, and the experiment's pieces
(unbiased τ̂, matched design, calibrations of the privacy shift)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import dpsim  # noqa: F401  (float64)
from dpsim import theory
from dpsim.theory import cai as cai_theory
from dpsim.engine import UsageError
from dpsim.engine.judgement.checks import ratio_check, ratio_slope_check, slope_range_check
from dpsim.engine.definition.grid import expand_grid
from dpsim.models import theta_cai_design
from dpsim.engine import Context
from dpsim.engine.execution.program import analyse_point
from dpsim.experiments.cai.figures import scaling as cs


# ---------------------------------------------------------------------------------------
# synthetic tables
# ---------------------------------------------------------------------------------------
def _slope_table(slope, xs=(1000, 2000, 4000, 8000), reps=200, sd=0.1, seed=0, intercept=1.0):
    """Rows of metric = exp(intercept + slope·log x + N(0, sd²)), one method 'm'."""
    rng = np.random.default_rng(seed)
    rows = [
        {
            "n_users": x,
            "rep": r,
            "method": "m",
            "err": math.exp(intercept + slope * math.log(x) + sd * rng.standard_normal()),
        }
        for x in xs
        for r in range(reps)
    ]
    table = pd.DataFrame(rows)
    table.attrs["method_columns"] = ["err"]
    return table


def _ratio_table(ratio_of_means, xs=(1, 2, 5, 10), reps=200, seed=0, scale_fn=None):
    """Two slices unit ∈ {a, b} per x: metric ~ mean·Exp(1)-ish (positive, skewed), with
    mean(a)/mean(b) = ratio_of_means(x)."""
    rng = np.random.default_rng(seed)
    rows = []
    for x in xs:
        for unit, mean in (("a", ratio_of_means(x)), ("b", 1.0)):
            vals = mean * rng.gamma(4.0, 0.25, size=reps)  # mean·(Gamma with mean 1)
            rows += [
                {"per_user": x, "unit": unit, "rep": r, "method": "m", "msq": v}
                for r, v in enumerate(vals)
            ]
    table = pd.DataFrame(rows)
    table.attrs["method_columns"] = ["msq"]
    return table


# ---------------------------------------------------------------------------------------
# slope_range_check
# ---------------------------------------------------------------------------------------
def _range_check(**kw):
    return slope_range_check("r", "e", "err", "m", "n_users", -1.0, -0.5, **kw)


def test_slope_range_passes_inside():
    res = _range_check().evaluate(_slope_table(-0.75))
    assert res.passed and -0.8 < res.value < -0.7
    assert "[-1.00, -0.50]" in res.line() and res.line().startswith("PASS")


@pytest.mark.parametrize("slope", [-1.2, -0.3, 0.0])
def test_slope_range_fails_outside(slope):
    res = _range_check().evaluate(_slope_table(slope))
    assert not res.passed and res.line().startswith("FAIL")


def test_slope_range_straddling_ci_is_inconclusive_with_the_replicates_needed():
    """A slope near the edge: the CI crosses −1/2, so the check neither passes nor fails, and
    says how many replicates would shrink the CI inside the range."""
    table = _slope_table(-0.51, sd=0.6, reps=60, seed=3)
    res = _range_check().evaluate(table)
    assert res.low < -0.5 < res.high and res.value < -0.5
    assert res.verdict == "INCONCLUSIVE" and not res.passed
    half = (res.high - res.low) / 2
    assert res.needed_reps == pytest.approx(60 * (half / (-0.5 - res.value)) ** 2 * 1.1, rel=0.02)
    assert f"needs about {res.needed_reps} replicates" in res.line()


def test_slope_range_report_only_is_info():
    res = _range_check(report_only=True).evaluate(_slope_table(-2.0))
    assert res.line().startswith("INFO")


# ---------------------------------------------------------------------------------------
# ratio_check
# ---------------------------------------------------------------------------------------
def _ratio_check(L, lo, hi, **kw):
    return ratio_check(
        "q", "e", "msq", "m", "unit", "a", "b", lo, hi, where={"per_user": [L]}, root=True, **kw
    )


@pytest.mark.parametrize("L", [2, 5, 10])
def test_ratio_check_passes_on_ratio_L(L):
    table = _ratio_table(lambda x: x**2)  # mean-square ratio L² → RMS ratio L
    res = _ratio_check(L, L / 2, 2 * L).evaluate(table)
    assert res.passed and res.value == pytest.approx(L, rel=0.05)
    assert res.low < res.value < res.high


@pytest.mark.parametrize("L", [5, 10])
def test_ratio_check_fails_on_sqrt_L(L):
    """If the cost scaled like √L (as the statistical term does) the band [L/2, 2L] fails."""
    table = _ratio_table(lambda x: x)  # RMS ratio √L
    assert _ratio_check(L, L / 2, 2 * L).evaluate(table).verdict == "FAIL"


def test_ratio_check_needs_the_whole_ci_in_the_band():
    table = _ratio_table(lambda x: x**2, reps=20, seed=5)
    res = _ratio_check(5, 1.0, 100.0).evaluate(table)
    assert res.passed
    tight = _ratio_check(5, res.value * 0.999, res.value * 1.001).evaluate(table)
    assert tight.verdict == "INCONCLUSIVE"  # the point estimate is in the band, its CI is not


def test_ratio_check_delta_ci_matches_bootstrap():
    table = _ratio_table(lambda x: 9.0, reps=300, seed=7)
    res = _ratio_check(2, 0.1, 100.0).evaluate(table)
    rows = table[table.per_user == 2]
    a = rows[rows.unit == "a"].msq.to_numpy()
    b = rows[rows.unit == "b"].msq.to_numpy()
    rng = np.random.default_rng(0)
    boot = [
        math.log(math.sqrt(rng.choice(a, a.size).mean() / rng.choice(b, b.size).mean()))
        for _ in range(2000)
    ]
    se_delta = (math.log(res.high) - math.log(res.low)) / (2 * 1.959963984540054)
    assert se_delta == pytest.approx(np.std(boot), rel=0.15)


def test_ratio_check_without_root_and_paired():
    """Paired slices whose values are exactly proportional: ratio exact, zero-width CI."""
    rng = np.random.default_rng(1)
    base = rng.gamma(2.0, 1.0, size=50)
    table = pd.DataFrame(
        [
            {"unit": u, "rep": r, "method": "m", "msq": f * v}
            for u, f in (("a", 3.0), ("b", 1.0))
            for r, v in enumerate(base)
        ]
    )
    table.attrs["method_columns"] = ["msq"]
    check = ratio_check("q", "e", "msq", "m", "unit", "a", "b", 2.99, 3.01, paired_on=("rep",))
    res = check.evaluate(table)
    assert res.value == pytest.approx(3.0, rel=1e-12)
    assert res.high - res.low < 1e-6 and res.passed
    unpaired = ratio_check("q", "e", "msq", "m", "unit", "a", "b", 2.99, 3.01).evaluate(table)
    assert unpaired.value == pytest.approx(3.0, rel=1e-12) and unpaired.verdict == "INCONCLUSIVE"


def test_ratio_check_errors():
    table = _ratio_table(lambda x: 1.0)
    with pytest.raises(UsageError):
        ratio_check("q", "e", "msq", "m", "unit", "a", "zzz", 0.5, 2).evaluate(table)
    table["msq"] = 0.0
    with pytest.raises(UsageError):
        ratio_check("q", "e", "msq", "m", "unit", "a", "b", 0.5, 2).evaluate(table)


# ---------------------------------------------------------------------------------------
# ratio_slope_check
# ---------------------------------------------------------------------------------------
def _ratio_slope_check():
    return ratio_slope_check(
        "s", "e", "msq", "m", "unit", "a", "b", "per_user", 1.0, 0.1, root=True
    )


def test_ratio_slope_passes_on_L():
    res = _ratio_slope_check().evaluate(_ratio_table(lambda x: x**2))
    assert res.passed and res.value == pytest.approx(1.0, abs=0.03)
    assert res.detail.n_points == 4 and res.low < res.value < res.high


@pytest.mark.parametrize("power", [0.5, 0.0])
def test_ratio_slope_fails_on_sqrt_L_or_flat(power):
    res = _ratio_slope_check().evaluate(_ratio_table(lambda x: x ** (2 * power)))
    assert res.verdict == "FAIL" and res.value == pytest.approx(power, abs=0.05)


def test_ratio_slope_se_is_propagated():
    """The slope's SE shrinks like 1/√reps."""
    se_small = _ratio_slope_check().evaluate(_ratio_table(lambda x: x**2, reps=50)).detail.stderr
    se_large = _ratio_slope_check().evaluate(_ratio_table(lambda x: x**2, reps=800)).detail.stderr
    assert se_large == pytest.approx(se_small / 4, rel=0.25)


# ---------------------------------------------------------------------------------------
# theory (docs/cai.md, Predictions (items 8–9))
# ---------------------------------------------------------------------------------------
def test_individual_terms_by_hand():
    n, m, L, eps = 16, 1000, 5, 0.5
    S = 2 * m * L / n
    assert float(cai_theory.individual_dp_comparisons_per_item(n, m, L)) == pytest.approx(625.0)
    assert float(cai_theory.individual_dp_statistical_term(n, m, eps, L)) == pytest.approx(
        math.sqrt(n * math.log(n) / (2 * m * L)), rel=1e-14
    )
    assert float(cai_theory.individual_dp_privacy_term(n, m, eps, L)) == pytest.approx(
        n * math.log(n) / (2 * m * eps), rel=1e-14
    )
    assert float(cai_theory.individual_dp_rate_explicit_l(n, m, eps, L)) == pytest.approx(
        math.sqrt(math.log(n) / S) + (L / eps) * math.log(n) / S, rel=1e-14
    )


def test_privacy_term_is_flat_in_L_and_statistical_term_is_not():
    at = {"n_items": 16.0, "n_users": 32000.0, "eps": 0.125, "per_user": 5.0}
    assert theory.log_slope(cai_theory.individual_dp_privacy_term, "per_user", at) == pytest.approx(
        0.0, abs=1e-8
    )
    assert theory.log_slope(
        cai_theory.individual_dp_statistical_term, "per_user", at
    ) == pytest.approx(-0.5, abs=1e-8)
    assert theory.log_slope(cai_theory.individual_dp_privacy_term, "n_users", at) == pytest.approx(
        -1.0, abs=1e-8
    )
    assert theory.log_slope(
        cai_theory.individual_dp_statistical_term, "n_users", at
    ) == pytest.approx(-0.5, abs=1e-8)
    # the explicit-L rate in m runs from −1 (privacy) to −1/2 (statistical)
    tiny, huge = dict(at, eps=1e-9), dict(at, eps=math.inf)
    assert theory.log_slope(
        cai_theory.individual_dp_rate_explicit_l, "n_users", tiny
    ) == pytest.approx(-1.0, abs=1e-4)
    assert theory.log_slope(
        cai_theory.individual_dp_rate_explicit_l, "n_users", huge
    ) == pytest.approx(-0.5, abs=1e-8)


@pytest.mark.parametrize(
    "n, m, L, eps", [(200, 1990, 10, 10.0), (16, 1000, 5, 1.0), (50, 7, 3, 0.3)]
)
def test_matched_ratio_is_L(n, m, L, eps):
    p = cai_theory.matched_edge_probability(n, m, L)
    assert float(n * p) == pytest.approx(
        float(cai_theory.individual_dp_comparisons_per_item(n, m, L))
    )
    assert float(cai_theory.individual_to_edge_privacy_ratio(n, m, eps, L)) == pytest.approx(
        L, rel=1e-12
    )
    # and the statistical terms agree at matched S
    assert float(cai_theory.individual_dp_statistical_term(n, m, eps, L)) == pytest.approx(
        float(cai_theory.edge_dp_statistical_term(n, p)), rel=1e-12
    )


def test_predicted_slopes_used_by_the_checks():
    assert cs.STAT_SLOPE_M == pytest.approx(-0.5, abs=1e-8)
    assert cs.PRIVACY_SLOPE_M == pytest.approx(-1.0, abs=1e-8)
    assert cs.STAT_SLOPE_L == pytest.approx(-0.5, abs=1e-8)
    assert cs.PRIVACY_SLOPE_L == pytest.approx(0.0, abs=1e-8)
    assert cs.RATIO_SLOPE_L == pytest.approx(1.0, abs=1e-8)


# ---------------------------------------------------------------------------------------
# experiment pieces
# ---------------------------------------------------------------------------------------
def test_tau_hat_is_unbiased_in_both_models():
    """τ̂ of the expected win counts equals τ exactly (edge: E W_ij = pF_ij; individual:
    E W_ij = (mL/C(n,2))F_ij)."""
    n = 12
    theta = theta_cai_design(jax.random.key(0), n, k=3, top_first=True)
    F = jax.nn.sigmoid(theta[:, None] - theta[None, :]) * (1 - jnp.eye(n))
    tau = cs.average_win_probability(theta)
    assert float(jnp.sum(tau)) == pytest.approx(n / 2)
    p, m, L = 0.4, 300, 5
    edge = cs.tau_from_counts(jnp.sum(p * F, axis=1), (n - 1) * p)
    indiv = cs.tau_from_counts(jnp.sum(m * L / (n * (n - 1) / 2) * F, axis=1), 2 * m * L / n)
    np.testing.assert_allclose(edge, tau, rtol=1e-12)
    np.testing.assert_allclose(indiv, tau, rtol=1e-12)


def test_matched_design_and_validation():
    n, p = cs.MATCHED_N, cs.MATCHED_P
    total = cs.matched_total(n, p)
    assert 2 * total / n == pytest.approx((n - 1) * p)  # S_individual = S_edge
    assert all(total % L == 0 for L in cs.MATCHED_L)
    expand_grid(cs.MATCHED)  # the default grid is valid
    with pytest.raises(UsageError, match="per_user"):
        expand_grid(cs.MATCHED, {"per_user": [3]})  # 19900 users·L not divisible by 3
    with pytest.raises(UsageError, match="finite"):
        expand_grid(cs.MATCHED, {"eps": [math.inf]})
    with pytest.raises(UsageError, match="unit"):
        expand_grid(cs.MATCHED, {"unit": ["household"]})


def _matched(unit, L, eps, n=20, p=1.0, seed=0):
    shape = cs.matched_resolve_shape(
        {"n_items": n, "k": "auto", "unit": unit, "mode": "strict", "p": p}
    )
    key = jax.random.key(seed)
    sample = cs.matched_generate(jax.random.fold_in(key, 1), shape, {}, {"per_user": L})
    out = analyse_point(
        cs.MATCHED,
        jax.random.fold_in(key, 2),
        Context(shape, {}, sample, {"per_user": L}, {"eps": eps}),
    )
    return sample, jax.tree_util.tree_map(float, out)


def test_matched_pieces_calibration():
    """Counts: the τ̂ shift is the Laplace noise over S, so with the same analysis key the
    individual/edge mean-square shift ratio is exactly L² (strict: 2L/ε vs 2/ε). Alg. 1:
    the privacy shift vanishes as ε → ∞ and the fit converges."""
    L, eps = 5, 2.0
    s_edge, edge = _matched("edge", L, eps)
    s_ind, ind = _matched("individual", L, eps)
    n = 20
    assert float(s_edge["W"].sum()) == n * (n - 1) / 2  # p = 1: one comparison per pair
    assert float(s_ind["W"].sum()) == cs.matched_total(n, 1.0)
    assert ind["counts"]["privacy_msq"] / edge["counts"]["privacy_msq"] == pytest.approx(
        L**2, rel=1e-10
    )
    assert edge["mle"]["converged"] and ind["mle"]["converged"]
    _, quiet = _matched("individual", L, 1e9)
    assert quiet["mle"]["privacy_linf"] < 1e-6 and quiet["counts"]["privacy_linf"] < 1e-6
