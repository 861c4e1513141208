"""nguyen's rates and predictions (dpsim.theory.nguyen; §3): closed forms by hand,
log-slopes, the constants γ, γ̄, κ against brute force, and R10's RR population limit
against its limits and a Monte-Carlo run of the RR baseline."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpsim  # noqa: F401
from dpsim.estimators.private_spectral import rr_spectral_estimate
from dpsim.mechanisms.shuffle import randomize_responses
from dpsim.models.rasch import (
    rasch_abilities,
    rasch_difficulties,
    rasch_probabilities,
    sample_rasch_responses,
)
from dpsim.theory import log_slope
from dpsim.theory import nguyen as th


def test_rates_by_hand():
    n, m, p = 800, 50, 0.6
    assert float(th.entrywise_rate(n, m, p)) == pytest.approx(
        math.sqrt(math.log(m) / (n * p)), rel=1e-14
    )
    assert float(th.l2_rate(n, m, p)) == pytest.approx(math.sqrt(m / (n * p)), rel=1e-14)
    assert float(th.basic_entrywise_rate(n, p)) == pytest.approx(
        math.sqrt(math.log(n * p * p) / (n * p * p)), rel=1e-14
    )
    assert float(th.minimax_l2_sq_lower(n, m, p)) == pytest.approx(m / (n * p))
    assert float(th.minimax_linf_sq_lower(n, p)) == pytest.approx(1 / (n * p))
    assert float(th.linf_l2_ratio(m)) == pytest.approx(math.sqrt(math.log(m) / m))
    assert float(th.private_excess_linf(n, m, p, 0.2, 0.25)) == pytest.approx(
        math.sqrt(m * math.log(m)) / (0.2 * n * p * p * 0.25), rel=1e-14
    )
    assert float(th.laplace_excess_l2(n, m, p, 2.0)) == pytest.approx(
        m * m / (2 * n * p * p), rel=1e-14
    )
    assert bool(th.entrywise_conditions(n, m, p)) and not bool(th.entrywise_conditions(5, m, 0.1))


@pytest.mark.parametrize(
    "rate, axis, want",
    [
        (lambda n_users, n_items, p: th.entrywise_rate(n_users, n_items, p), "n_users", -0.5),
        (lambda n_users, n_items, p: th.entrywise_rate(n_users, n_items, p), "p", -0.5),
        (lambda n_users, n_items, p: th.l2_rate(n_users, n_items, p), "n_items", 0.5),
        (
            lambda n_users, n_items, p: th.private_excess_l2(n_users, n_items, p, 0.1),
            "n_users",
            -1.0,
        ),
        (
            lambda n_users, n_items, p: th.private_excess_l2(n_users, n_items, p, 0.1),
            "n_items",
            1.0,
        ),
        (lambda n_users, n_items, p: th.private_excess_l2(n_users, n_items, p, 0.1), "p", -2.0),
        (
            lambda n_users, n_items, p: th.laplace_excess_l2(n_users, n_items, p, 1.0),
            "n_items",
            2.0,
        ),
    ],
)
def test_slopes(rate, axis, want):
    assert log_slope(
        lambda **kw: float(rate(**kw)), axis, {"n_users": 1000.0, "n_items": 50.0, "p": 0.5}
    ) == pytest.approx(want, abs=1e-6)


def test_r8_crossover_and_r7_condition():
    m, p, eps0 = 40, 0.8, 0.3
    n_star = float(th.private_crossover_users(m, p, eps0))
    assert float(th.private_excess_l2(n_star, m, p, eps0, gamma_bar=1.0)) == pytest.approx(
        float(th.l2_rate(n_star, m, p)), rel=1e-12
    )
    n_suff = float(th.private_sufficient_users(m, p, 1.0))
    assert n_suff == pytest.approx(max(math.log(m), m * m) / p**2)
    assert bool(th.private_sufficient_condition(n_suff * 1.01, m, p, 1.0))
    assert not bool(th.private_sufficient_condition(n_suff * 0.99, m, p, 1.0))


def test_explicit_bound_is_vacuous_for_small_n_and_decays_like_root_n():
    """With κ = 2, γ = 0.1, m = 20 the spectral-gap term γ/(3e^{2κ}) = 6.1e-4 needs
    α⁺ < 3e-4, i.e. n > 5e10: the explicit constants are astronomically conservative."""
    assert math.isinf(float(th.entrywise_bound_explicit(1e10, 20, 1.0, kappa=2.0, gamma=0.1)))
    big = [
        float(th.entrywise_bound_explicit(n, 20, 1.0, kappa=2.0, gamma=0.1)) for n in (1e14, 4e14)
    ]
    assert all(math.isfinite(b) for b in big)
    assert big[1] / big[0] == pytest.approx(0.5, rel=0.03)


def test_constants_against_brute_force():
    theta = rasch_abilities(jax.random.key(0), 7)
    beta = rasch_difficulties(jax.random.key(1), 5)
    prob = np.asarray(rasch_probabilities(theta, beta))
    brute = min(prob[l, i] * (1 - prob[l, j]) for l in range(7) for i in range(5) for j in range(5))
    assert float(th.rasch_gamma(theta, beta)) == pytest.approx(brute, rel=1e-12)
    pairs = [
        prob[l, i] * (1 - prob[l, j])
        for l in range(7)
        for i in range(5)
        for j in range(5)
        if i != j
    ]
    assert float(th.rasch_gamma_bar(theta, beta)) == pytest.approx(np.mean(pairs), rel=1e-12)
    assert float(th.rasch_kappa(beta)) == pytest.approx(float(beta.max() - beta.min()))
    assert float(th.top_k_gap(jnp.asarray([0.1, 2.0, -1.0, 1.5]), 2)) == pytest.approx(1.4)
    assert float(th.top_k_signal(100, 20, 0.5, 0.5)) == pytest.approx(
        100 * 0.5 * 0.25 / math.log(20)
    )


def test_flip_probability_and_high_privacy_level():
    assert float(th.rr_flip_probability(2.0, 4)) == pytest.approx(
        1 / (1 + math.exp(0.5)), rel=1e-14
    )
    b = jnp.asarray([1.0, 2.0, 6.0])
    assert float(th.high_privacy_limit_l2(b)) == pytest.approx(math.sqrt(4 + 1 + 9), rel=1e-14)


def test_rr_population_limit():
    """R10: β_∞ → β*_c as ε_RR/m → ∞, → 0 as ε_RR/m → 0, attenuated in between; and the
    RR baseline's mean estimate at n = 20 000 (8 replicates, m = 5) lies within 0.05 of
    β_∞ in every coordinate (the per-coordinate Monte-Carlo SE is ≈ 0.01)."""
    theta = rasch_abilities(jax.random.key(2), 20_000)
    beta = rasch_difficulties(jax.random.key(3), 5)
    bc = np.asarray(beta - beta.mean())
    np.testing.assert_allclose(
        np.asarray(th.rr_population_limit(theta, beta, 500.0)), bc, atol=1e-8
    )
    assert float(jnp.max(jnp.abs(th.rr_population_limit(theta, beta, 1e-6)))) < 1e-5
    limit = np.asarray(th.rr_population_limit(theta, beta, 5.0))
    assert np.linalg.norm(limit) < 0.9 * np.linalg.norm(bc)

    def one(key):
        k_x, k_rr = jax.random.split(key)
        r = sample_rasch_responses(k_x, theta, beta, 1.0)
        return rr_spectral_estimate(
            randomize_responses(k_rr, r.x, r.observed, 5.0), r.observed
        ).theta

    est = np.asarray(jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(4), 8))).mean(axis=0)
    assert np.max(np.abs(est - limit)) < 0.05
