"""Theoretical rates (cai Thm 2.1 / Remark 1, Thm 3.1) and their log-slopes (docs/cai.md, Predictions)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsim import theory
from dpsim.theory import cai as cai_theory


@pytest.mark.parametrize(
    "n, p, eps", [(100, 0.5, 2.0), (300, 1.0, 0.5), (700, 0.1, 0.2), (12, 1.0, 1.0)]
)
def test_edge_dp_rate_by_hand(n, p, eps):
    want = math.sqrt(math.log(n) / (n * p)) + math.log(n) / (n * p * eps)
    assert float(cai_theory.edge_dp_rate(n, p, eps)) == pytest.approx(want, rel=1e-14)


def test_edge_dp_rate_specific_value():
    # n = 100, p = 0.5, ε = 2: √(log 100 / 50) + log 100 / 100 = 0.303485... + 0.046052...
    assert float(cai_theory.edge_dp_rate(100, 0.5, 2.0)) == pytest.approx(
        0.3034854258770293 + 0.04605170185988091, rel=1e-12
    )


def test_edge_dp_rate_eps_inf_is_non_private_rate():
    assert float(cai_theory.edge_dp_rate(300, 0.25, math.inf)) == pytest.approx(
        math.sqrt(math.log(300) / 75), rel=1e-14
    )


def test_edge_dp_rate_broadcasts():
    r = cai_theory.edge_dp_rate(np.array([100, 200]), 1.0, np.array([[1.0], [math.inf]]))
    assert r.shape == (2, 2)
    assert r[0, 0] > r[1, 0] and r[0, 0] > r[0, 1]


@pytest.mark.parametrize("n, p, want", [(300, 1.0, 0.138), (300, 0.25, 0.276), (300, 0.1, 0.436)])
def test_crossover(n, p, want):
    """ε* = √(log n/(np)) (docs/cai.md, Predictions (item 1)): the two terms of r_E are equal there."""
    eps_star = float(cai_theory.edge_dp_crossover_eps(n, p))
    assert eps_star == pytest.approx(want, abs=5e-4)
    stat = math.sqrt(math.log(n) / (n * p))
    assert float(cai_theory.edge_dp_rate(n, p, eps_star)) == pytest.approx(2 * stat, rel=1e-12)
    # privacy term dominates below ε*, statistical term above
    assert math.log(n) / (n * p * eps_star / 2) > stat > math.log(n) / (n * p * eps_star * 2)


def test_log_slope_in_eps_limits():
    """d log r_E / d log ε → −1 when privacy dominates (ε ≪ ε*), → 0 when ε ≫ ε*."""
    at = dict(n_items=300, p=0.5)
    eps_star = float(cai_theory.edge_dp_crossover_eps(**at))
    assert theory.log_slope(
        cai_theory.edge_dp_rate, "eps", {**at, "eps": 1e-6 * eps_star}
    ) == pytest.approx(-1.0, abs=1e-5)
    assert theory.log_slope(
        cai_theory.edge_dp_rate, "eps", {**at, "eps": 1e6 * eps_star}
    ) == pytest.approx(0.0, abs=1e-5)
    # at ε* the two terms are equal: slope −1/2
    assert theory.log_slope(
        cai_theory.edge_dp_rate, "eps", {**at, "eps": eps_star}
    ) == pytest.approx(-0.5, abs=1e-6)


def test_log_slope_in_p_limits():
    """In p (n fixed): −1/2 non-private (ε = ∞, exactly), → −1 when privacy dominates."""
    at = dict(n_items=300, p=0.5)
    assert theory.log_slope(cai_theory.edge_dp_rate, "p", {**at, "eps": math.inf}) == pytest.approx(
        -0.5, abs=1e-8
    )
    assert theory.log_slope(cai_theory.edge_dp_rate, "p", {**at, "eps": 1e-7}) == pytest.approx(
        -1.0, abs=1e-4
    )


def test_log_slope_in_n_limits():
    """In n (p fixed): −1/2 + 1/(2 log n) non-private, → −1 + 1/log n in the privacy regime."""
    n = 300
    non_private = theory.log_slope(
        cai_theory.edge_dp_rate, "n_items", dict(n_items=n, p=1.0, eps=math.inf)
    )
    assert non_private == pytest.approx(-0.5 + 1 / (2 * math.log(n)), abs=1e-7)
    private = theory.log_slope(cai_theory.edge_dp_rate, "n_items", dict(n_items=n, p=1.0, eps=1e-8))
    assert private == pytest.approx(-1 + 1 / math.log(n), abs=1e-4)


def test_individual_dp_rate_and_slopes():
    n, m, eps = 16, 1000, 0.5
    want = math.sqrt(n * math.log(n) / m) + n * math.log(n) / (m * eps)
    assert float(cai_theory.individual_dp_rate(n, m, eps)) == pytest.approx(want, rel=1e-14)
    assert theory.log_slope(
        cai_theory.individual_dp_rate, "n_users", dict(n_items=n, n_users=m, eps=math.inf)
    ) == pytest.approx(-0.5, abs=1e-8)
    assert theory.log_slope(
        cai_theory.individual_dp_rate, "n_users", dict(n_items=n, n_users=m, eps=1e-8)
    ) == pytest.approx(-1.0, abs=1e-4)
    # the error grows with n under individual DP (opposite to edge DP)
    assert (
        theory.log_slope(
            cai_theory.individual_dp_rate, "n_items", dict(n_items=n, n_users=m, eps=1.0)
        )
        > 0
    )


def test_fitted_rate_slope():
    """On a pure power law the least-squares slope is the exponent, whatever the grid."""
    grid = [0.1, 0.175, 0.25, 0.5, 1.0]
    at = dict(n_items=300, eps=math.inf)
    assert theory.fitted_rate_slope(cai_theory.edge_dp_rate, "p", grid, at) == pytest.approx(
        -0.5, abs=1e-12
    )
    fitted = theory.fitted_rate_slope(
        cai_theory.edge_dp_rate, "eps", [0.2, 0.5, 1, 2, 5], dict(n_items=300, p=1.0)
    )
    assert -1.0 < fitted < 0.0
