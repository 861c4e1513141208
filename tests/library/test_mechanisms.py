"""Privacy calibrations (cai Prop 2.1, Thm 2.1, Alg. 2) and the Laplace noise sampler."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats as st

from dpsim.mechanisms import (
    edge_count_noise_scale,
    edge_objective_perturbation,
    laplace_noise,
    noisy_counts_edge,
)
from dpsim.models import LOGISTIC, Link, sample_er_comparisons, theta_cai_design, win_counts

INF = math.inf


# ----------------------------------------------------------------------------- calibrations


@pytest.mark.parametrize("eps", [0.01, 0.2, 0.5, 1.0, 2.5, 1000.0])
@pytest.mark.parametrize(
    "n, p, c0", [(300, 1.0, 2.0), (300, 0.1, 2.0), (12, 0.5, 0.1), (100, 0.25, 1.0)]
)
def test_edge_objective_perturbation_formula(eps, n, p, c0):
    """λ = 8κ1/ε, γ = max(4κ2/ε, c0√(np log n)) with the logistic κ1 = 1, κ2 = 1/4."""
    cal = edge_objective_perturbation(eps, n, p, c0=c0)
    assert float(cal.lam) == pytest.approx(8.0 / eps, rel=1e-14)
    want_gamma = max(1.0 / eps, c0 * math.sqrt(n * p * math.log(n)))
    assert float(cal.gamma) == pytest.approx(want_gamma, rel=1e-14)


def test_gamma_privacy_floor_binds_for_small_eps():
    """At small ε the privacy floor 4κ2/ε = 1/ε exceeds the statistical c0√(np log n)."""
    n, p, c0, eps = 12, 0.5, 0.1, 0.01
    assert 1.0 / eps > c0 * math.sqrt(n * p * math.log(n))
    assert float(edge_objective_perturbation(eps, n, p, c0=c0).gamma) == pytest.approx(100.0)
    # and the paper's setting (c0 = 2, smallest γ on the Fig. 2 grid ≈ 26, cai Algorithm 1, §2.2.1)
    assert float(edge_objective_perturbation(1.0, 300, 0.1).gamma) == pytest.approx(
        2 * math.sqrt(30 * math.log(300)), rel=1e-14
    )
    assert 25 < float(edge_objective_perturbation(1.0, 300, 0.1).gamma) < 27


def test_calibration_uses_link_constants():
    link = Link("test", jax.nn.sigmoid, kappa1=2.0, kappa2=3.0)
    cal = edge_objective_perturbation(0.5, 10, 0.2, c0=0.5, link=link)
    assert float(cal.lam) == pytest.approx(8 * 2.0 / 0.5)
    assert float(cal.gamma) == pytest.approx(max(4 * 3.0 / 0.5, 0.5 * math.sqrt(2 * math.log(10))))
    assert LOGISTIC.kappa1 == 1.0 and LOGISTIC.kappa2 == 0.25


def test_eps_inf_gives_no_noise_and_keeps_gamma():
    cal = edge_objective_perturbation(INF, 300, 0.5)
    assert float(cal.lam) == 0.0
    assert float(cal.gamma) == pytest.approx(2 * math.sqrt(150 * math.log(300)), rel=1e-14)
    assert float(edge_count_noise_scale(INF)) == 0.0


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0, 7.0])
def test_count_noise_scale_is_2_over_eps(eps):
    assert float(edge_count_noise_scale(eps)) == pytest.approx(2.0 / eps, rel=1e-15)


def test_calibration_vectorises_over_eps():
    eps = jnp.array([0.5, 1.0, INF])
    cal = edge_objective_perturbation(eps, 50, 1.0)
    np.testing.assert_allclose(cal.lam, [16.0, 8.0, 0.0])
    np.testing.assert_allclose(edge_count_noise_scale(eps), [4.0, 2.0, 0.0])


def test_zero_scale_gives_exactly_zero_noise():
    x = laplace_noise(jax.random.key(0), 0.0, (1000,))
    assert x.dtype == jnp.float64
    np.testing.assert_array_equal(x, np.zeros(1000))
    theta = theta_cai_design(jax.random.key(1), 16)
    W = sample_er_comparisons(jax.random.key(2), theta, 0.5)
    np.testing.assert_array_equal(noisy_counts_edge(jax.random.key(3), W, INF), win_counts(W))
    np.testing.assert_array_equal(win_counts(W), np.asarray(W).sum(axis=1))


# ----------------------------------------------------------------------------- Laplace noise


def test_laplace_moments():
    """X ~ Laplace(b): E X = 0, Var X = 2b², E|X| = b (density e^{−|x|/b}/(2b), cai §2).

    N = 200 000 draws, b = 1.7. Standard errors of the sample statistics:
      mean: √(2b²/N) = 0.0054;
      mean of X² (estimates Var X = 2b² because E X = 0): √(Var X²/N) with
          Var X² = E X⁴ − (E X²)² = 24b⁴ − 4b⁴ = 20b⁴, so SE = √20·b²/√N = 0.029;
      mean of |X|: √(Var|X|/N) with Var|X| = 2b² − b² = b², SE = b/√N = 0.0038.
    Tolerance 4.5 SE each (two-sided P ≈ 7e-6 per statistic). A scale read as a standard
    deviation (b/√2) shifts E|X| by 0.5 (130 SE) and Var by 2.9 (100 SE).
    """
    b, N = 1.7, 200_000
    x = np.asarray(laplace_noise(jax.random.key(42), b, (N,)))
    assert x.dtype == np.float64 and x.shape == (N,)
    assert abs(x.mean()) <= 4.5 * math.sqrt(2 * b**2 / N)
    assert abs(np.mean(x**2) - 2 * b**2) <= 4.5 * math.sqrt(20) * b**2 / math.sqrt(N)
    assert abs(np.mean(np.abs(x)) - b) <= 4.5 * b / math.sqrt(N)


def test_laplace_ks_against_scipy():
    """KS test at a fixed seed against scipy.stats.laplace(scale=b), N = 20 000.

    The test must have power: the same sample is rejected against a normal of equal
    variance and against Laplace(1.1 b) (10% scale error), both at p < 1e-3.
    """
    b, N = 1.7, 20_000
    x = np.asarray(laplace_noise(jax.random.key(7), b, (N,)))
    assert st.kstest(x, st.laplace(scale=b).cdf).pvalue > 0.01
    assert st.kstest(x, st.norm(scale=b * math.sqrt(2)).cdf).pvalue < 1e-3
    assert st.kstest(x, st.laplace(scale=1.1 * b).cdf).pvalue < 1e-3


def test_laplace_noise_is_keyed_and_batched_consistently():
    """Same key ⇒ same draws; different keys ⇒ independent draws; scale multiplies."""
    k = jax.random.key(3)
    a = laplace_noise(k, 2.0, (50,))
    np.testing.assert_array_equal(a, laplace_noise(k, 2.0, (50,)))
    np.testing.assert_allclose(a, 2.0 * laplace_noise(k, 1.0, (50,)), rtol=1e-15)
    assert not np.allclose(a, laplace_noise(jax.random.key(4), 2.0, (50,)))


def test_noisy_counts_noise_is_laplace_2_over_eps():
    """Alg. 2: N + Laplace(2/ε). noise = noisy − N over R·n = 20 000 draws at ε = 0.5 (b = 4):
    E|noise| = 4, SE = b/√N = 0.028, tolerance 4.5 SE; ε-independent noise (b = 2) would be
    off by 70 SE."""
    eps, R = 0.5, 1000
    theta = theta_cai_design(jax.random.key(5), 20)
    W = sample_er_comparisons(jax.random.key(6), theta, 0.5)
    keys = jax.random.split(jax.random.key(8), R)
    noise = jax.jit(jax.vmap(lambda k: noisy_counts_edge(k, W, eps) - win_counts(W)))(keys)
    noise = np.asarray(noise).ravel()
    b, N = 2.0 / eps, noise.size
    assert abs(np.mean(np.abs(noise)) - b) <= 4.5 * b / math.sqrt(N)
    assert abs(np.mean(noise)) <= 4.5 * math.sqrt(2) * b / math.sqrt(N)
