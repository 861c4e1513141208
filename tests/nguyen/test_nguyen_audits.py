"""Privacy audits of nguyen's mechanisms (discrete Gaussian (ε, δ), discrete Laplace ε, RR
local ε): the exact privacy-loss computation against independent references (a direct
convolution, the continuous Gaussian's analytic δ(ε)), and the audits' verdicts.

The empirical estimates come from samples of the library's samplers and must agree with the
exact losses within 4 standard errors (``AuditResult.empirically_consistent``)."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from scipy import stats

import dpsim  # noqa: F401
from dpsim.audits.audit_responses import (
    audit_discrete_gaussian,
    audit_discrete_laplace,
    audit_response_rr,
    gaussian_count_delta,
    gaussian_count_epsilon,
    worst_case_count_shift,
)
from dpsim.mechanisms.discrete import discrete_gaussian_pmf


def test_worst_case_shift_is_two_floor_m_squared_over_four():
    for m in (2, 3, 4, 5, 8):
        d = worst_case_count_shift(m)
        assert np.max(np.abs(d)) == 1 and np.sum(d * d) == 2 * (m * m // 4)


@pytest.mark.parametrize("sigma, n_coords, eps", [(0.8, 1, 0.5), (2.0, 3, 1.0), (1.5, 2, 0.2)])
def test_exact_delta_against_direct_convolution(sigma, n_coords, eps):
    """δ(ε) = Σ_s P(S = s)(1 − e^{ε − ℓ(s)})₊ with the law of S built by np.convolve."""
    k = np.arange(-60, 61)
    base = discrete_gaussian_pmf(k, sigma)
    law = base
    for _ in range(n_coords - 1):
        law = np.convolve(law, base)
    s = np.arange(law.size) - 60 * n_coords
    loss = (2 * s + n_coords) / (2 * sigma**2)
    want = float(np.sum(law * np.clip(1 - np.exp(eps - loss), 0, None)))
    assert gaussian_count_delta(eps, sigma, n_coords) == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("sigma, n_coords", [(30.0, 12), (80.0, 312)])
def test_exact_delta_matches_the_continuous_gaussian_for_large_sigma(sigma, n_coords):
    """For σ ≫ 1 the discrete Gaussian's privacy loss is the continuous one's: the analytic
    δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ), μ = √D/σ (Balle & Wang 2018), to 1%."""
    mu = math.sqrt(n_coords) / sigma
    for eps in (0.2, 0.6, 1.0):
        want = stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(
            -mu / 2 - eps / mu
        )
        assert gaussian_count_delta(eps, sigma, n_coords) == pytest.approx(want, rel=1e-2)
    e = gaussian_count_epsilon(1e-5, sigma, n_coords)
    assert gaussian_count_delta(e, sigma, n_coords) == pytest.approx(1e-5, rel=1e-6)


def test_gaussian_audit():
    rows = audit_discrete_gaussian(jax.random.key(0), eps_values=(1.0,), n_samples=100_000)
    by_mode = {r.mode: r for r in rows}
    assert set(by_mode) == {
        "tight_joint/cks",
        "tight_joint/bun_steinke",
        "paper/bun_steinke",
        "paper/paper",
        "synthetic_code/paper",
    }
    for r in rows:
        assert r.within_budget and r.empirically_consistent and not r.known_violation
    # the tight modes spend more of the budget than the paper's accounting
    assert (
        by_mode["tight_joint/cks"].exact_loss
        > by_mode["tight_joint/bun_steinke"].exact_loss
        > by_mode["paper/bun_steinke"].exact_loss
    )
    assert "unproven" in by_mode["synthetic_code/paper"].detail


def test_laplace_and_rr_audits():
    lap = audit_discrete_laplace(jax.random.key(1), eps_values=(1.0,), n_samples=100_000)
    tight = next(r for r in lap if r.mode == "tight_joint")
    paper = next(r for r in lap if r.mode == "paper")
    assert tight.exact_loss == pytest.approx(1.0) and paper.exact_loss == pytest.approx(8 / 12)
    rr = audit_response_rr(jax.random.key(2), eps_values=(0.5, 2.0), n_samples=100_000)
    for r in lap + rr:
        assert r.within_budget and r.empirically_consistent
    assert [r.exact_loss for r in rr] == [0.5, 2.0]
