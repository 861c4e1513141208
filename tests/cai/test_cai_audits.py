"""Privacy audit of cai's count mechanisms (docs/cai.md, Errata and modes (E3, E18); Privacy audit): on worst-case
neighbours Alg. 2 and Alg. 3 (strict) lose exactly ε, Alg. 3 as published (paper) 2ε."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpsim  # noqa: F401
from dpsim.models import win_counts
from dpsim.experiments.cai.audits import (
    audit_counts,
    edge_worst_case_pair,
    individual_worst_case_pair,
)
from dpsim.audits.audit import histogram_epsilon, laplace_privacy_loss, max_laplace_privacy_loss

L = 5


def _others(n=6):
    return jnp.ones((n, n)) - jnp.eye(n)


def test_worst_case_neighbours_are_adjacent_with_maximal_l1_change():
    W, Wp = edge_worst_case_pair(_others(), 0, 1)
    assert float(W.sum()) == float(Wp.sum())  # one comparison changed, none added
    assert float(jnp.abs(W - Wp).sum()) == 2  # one outcome flipped
    assert float(jnp.abs(win_counts(W) - win_counts(Wp)).sum()) == 2
    W, Wp = individual_worst_case_pair(_others(), 2, 4, L)
    assert float(W.sum()) == float(Wp.sum())  # the user keeps L comparisons
    assert float(jnp.abs(W - Wp).sum()) == 2 * L  # all L outcomes of one user move
    d = win_counts(W) - win_counts(Wp)
    assert float(jnp.abs(d).sum()) == 2 * L and float(jnp.abs(d).max()) == L  # ℓ1 = 2L, ℓ∞ = L


def test_closed_form_is_the_maximum_over_outputs():
    N = jnp.asarray([3.0, 10.0, 7.0])
    Np = jnp.asarray([8.0, 5.0, 7.0])
    b = 2.0
    grid = np.linspace(-15, 30, 181)
    ys = jnp.asarray([[a, c, 7.0] for a, c in itertools.product(grid, grid)])
    brute = float(jnp.max(laplace_privacy_loss(ys, N, Np, b)))
    assert brute == pytest.approx(float(max_laplace_privacy_loss(N, Np, b))) == pytest.approx(5.0)


def test_histogram_estimate_is_zero_for_identical_datasets():
    rng = np.random.default_rng(0)
    est, se = histogram_epsilon(rng.laplace(size=40000), rng.laplace(size=40000))
    assert abs(est) <= 4 * se + 0.02


def test_strict_mode_stays_within_eps_and_paper_mode_reaches_two_eps():
    results = audit_counts(
        jax.random.key(0), eps_values=(0.5, 1.0, 2.0), per_user=L, n_samples=60000
    )
    seen = set()
    for r in results:
        seen.add((r.mechanism, r.mode))
        factor = 2.0 if r.mode == "paper" else 1.0
        assert r.exact_loss == pytest.approx(factor * r.eps)
        assert r.sampled_max_loss == pytest.approx(factor * r.eps, abs=1e-9)
        assert abs(r.empirical_loss - factor * r.eps) <= 4 * r.empirical_se + 0.02, r
        if r.mode == "paper":
            assert not r.within_budget
            assert r.empirical_loss > r.eps + 4 * r.empirical_se  # the violation is detected
        else:
            assert r.within_budget
            assert r.empirical_loss <= r.eps + 4 * r.empirical_se + 0.02
    assert seen == {("alg2-edge", "-"), ("alg3-individual", "strict"), ("alg3-individual", "paper")}


def test_empirical_epsilon_for_delta_matches_the_gaussian_curve_and_its_bracket():
    """The shared bisection (label and response audits): on samples of the Gaussian
    mechanism's privacy loss (ℓ ~ N(μ, 2μ), μ = Δ²/(2σ²)) the estimate agrees with the
    exact smallest ε' of Balle & Wang's δ(ε') within 4 standard errors, the result meets
    the constraint, and a loss below 1 everywhere (bracket [0, 1]) and a loss that never
    exceeds δ (ε̂ = 0) are handled."""
    from dpsim.audits.audit import empirical_epsilon_for_delta, smallest_epsilon
    from dpsim.mechanisms.objective_perturbation import gaussian_mechanism_epsilon

    delta = 1e-3
    for sigma in (1.0, 8.0):
        mu = 1.0 / (2 * sigma * sigma)
        loss = np.asarray(mu + np.sqrt(2 * mu) * jax.random.normal(jax.random.key(3), (400_000,)))
        eps_hat, se = empirical_epsilon_for_delta(loss, delta)
        exact = float(gaussian_mechanism_epsilon(delta, 1.0, sigma))
        assert abs(eps_hat - exact) <= 4 * se
        assert np.mean(np.clip(-np.expm1(eps_hat - loss), 0, None)) <= delta
    assert loss.max() < 1.0  # the σ = 8 case used the bracket [0, 1]
    assert empirical_epsilon_for_delta(np.full(10, -1.0), delta)[0] == 0.0
    assert smallest_epsilon(lambda e: np.exp(-e), 1e-3, 1.0) == pytest.approx(
        np.log(1e3), rel=1e-12
    )
