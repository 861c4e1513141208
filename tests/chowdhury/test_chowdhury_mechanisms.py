"""chowdhury mechanisms (chowdhury eq. (2), eq. (12), Algorithm 2, Theorem 5.2, App. E): the Thm 5.2 noise constant and its privacy-loss
inequality (P14), Thm E.1's constants in both modes, the exact Gaussian-mechanism profile
against dp-accounting, K-RR keep rates (P12) against the exact pmf, and the RR / K-RR /
objective-perturbation audits."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy import stats

import dpsim  # noqa: F401
from dpsim.audits.label_audit import audit_label_krr, audit_label_rr, audit_objective_perturbation
from dpsim.mechanisms.objective_perturbation import (
    feature_bound_from_data,
    gaussian_mechanism_delta,
    gaussian_mechanism_epsilon,
    label_dp_noise_scale,
    label_dp_privacy_exponent,
    perturbation_noise,
    perturbation_noise_scale,
    standard_dp_min_ridge,
    standard_dp_noise_scale,
    standard_dp_t1_exponent,
    standard_dp_t2_exponent,
)
from dpsim.mechanisms.randomized_response import kary_keep_probability, kary_randomized_response


@pytest.mark.parametrize(
    "eps, sigma, exponent", [(0.1, 78.235, 0.099999), (0.5, 15.850, 0.49994), (1.0, 8.050, 0.99951)]
)
def test_p14_noise_constants_and_exponents(eps, sigma, exponent):
    """chowdhury Algorithm 2, Theorem 5.2: σ/L at δ = 10⁻³ and the exponent εa/s + 2ε²/s² (printed to 5 digits)."""
    assert float(label_dp_noise_scale(eps, 1e-3)) == pytest.approx(sigma, abs=5e-4)
    assert float(label_dp_noise_scale(eps, 1e-3, 2.5)) == pytest.approx(
        2.5 * float(label_dp_noise_scale(eps, 1e-3))
    )
    assert float(label_dp_privacy_exponent(eps, 1e-3)) == pytest.approx(exponent, abs=6e-6)


def test_label_dp_exponent_is_at_most_eps_on_a_grid():
    """εa/s + 2ε²/s² ≤ ε ⟺ as ≤ a² + 2ε (chowdhury Algorithm 2, Theorem 5.2), for every L, ε, δ; and a σ 1% smaller
    than Thm 5.2's is not always enough (so the check can fail)."""
    eps = np.geomspace(1e-3, 20, 40)[:, None, None]
    delta = np.geomspace(1e-12, 0.9, 30)[None, :, None]
    L = np.asarray([0.1, 1.0, 7.0])[None, None, :]
    e = np.asarray(label_dp_privacy_exponent(eps, delta, L))
    assert np.all(e <= eps * (1 + 1e-12))
    a = np.sqrt(8 * np.log(2 / delta))
    s = np.sqrt(a**2 + 4 * eps)
    np.testing.assert_allclose(
        e, np.broadcast_to(eps * a / s + 2 * eps**2 / s**2, e.shape), rtol=1e-12
    )
    smaller = np.asarray(
        label_dp_privacy_exponent(eps, delta, L, 0.99 * label_dp_noise_scale(eps, delta, L))
    )
    assert np.any(smaller > eps)


def test_standard_dp_constants_strict_and_paper_modes():
    eps = np.geomspace(1e-3, 20, 40)[:, None]
    delta = np.geomspace(1e-12, 0.9, 30)[None, :]
    strict = np.asarray(standard_dp_t1_exponent(eps, delta, 2.0))
    paper = np.asarray(standard_dp_t1_exponent(eps, delta, 2.0, mode="paper"))
    assert np.all(strict <= eps / 2 * (1 + 1e-12))  # Thm E.1's σ suffices, corrected
    assert np.all(paper < strict)  # the printed exponent under-counts
    assert np.all(np.asarray(standard_dp_t2_exponent(eps, 2.0)) <= eps / 2 + 1e-12)
    assert float(standard_dp_noise_scale(1.0, 1e-3, 1.0)) == pytest.approx(
        4 * math.sqrt(8 * math.log(4e3) + 2)
    )
    assert float(standard_dp_min_ridge(0.5, 3.0)) == pytest.approx(72.0)
    assert float(perturbation_noise_scale(1.0, 1e-3, 1.0, "standard")) == float(
        standard_dp_noise_scale(1.0, 1e-3)
    )
    with pytest.raises(ValueError, match="mode='printed'"):
        standard_dp_t1_exponent(1.0, 1e-3, mode="printed")


def test_eps_infinity_means_no_noise_and_bad_values_raise():
    assert float(label_dp_noise_scale(math.inf, 1e-3)) == 0.0
    assert float(standard_dp_noise_scale(math.inf, 1e-3)) == 0.0
    for call, message in [
        (lambda: label_dp_noise_scale(0.0, 1e-3), "eps=0.0"),
        (lambda: label_dp_noise_scale(1.0, 0.0), "delta=0.0"),
        (lambda: label_dp_noise_scale(1.0, 1.0), "delta=1.0"),
        (lambda: label_dp_noise_scale(1.0, 1e-3, -1.0), "feature_bound=-1.0"),
        (lambda: perturbation_noise_scale(1.0, 1e-3, privacy="local"), "privacy='local'"),
    ]:
        with pytest.raises(ValueError, match=message):
            call()


def test_noise_draw_and_feature_bound():
    w = np.asarray(
        jax.vmap(lambda k: perturbation_noise(k, 3, 2.5))(
            jax.random.split(jax.random.key(0), 20000)
        )
    )
    assert w.shape == (20000, 3)
    # each coordinate N(0, 2.5²): KS test, and the sample variance within 5 SE (SE = σ²√(2/n))
    assert stats.kstest(w[:, 1] / 2.5, "norm").pvalue > 1e-3
    assert abs(w.var() - 6.25) <= 5 * 6.25 * math.sqrt(2 / w.size)
    x = jnp.asarray([[3.0, 4.0], [1.0, 0.0], [0.0, -6.0]])
    assert float(feature_bound_from_data(x)) == 3.0


@pytest.mark.parametrize(
    "sigma, sensitivity, delta", [(8.05, 2.0, 1e-3), (26.2, 3.3, 1e-3), (2.0, 1.0, 1e-6)]
)
def test_exact_gaussian_profile_matches_dp_accounting(sigma, sensitivity, delta):
    eps = float(gaussian_mechanism_epsilon(delta, sensitivity, sigma))
    ref = pld.from_gaussian_mechanism(
        sigma, sensitivity=sensitivity, value_discretization_interval=1e-5
    ).get_epsilon_for_delta(delta)
    assert eps == pytest.approx(ref, abs=2e-4)
    assert float(gaussian_mechanism_delta(eps, sensitivity, sigma)) == pytest.approx(
        delta, rel=1e-6
    )


@pytest.mark.parametrize("k", [2, 4, 8])
@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_krr_keep_rates_against_the_exact_pmf(k, eps):
    """P12: keep e^ε/(e^ε + K − 1), each other value 1/(e^ε + K − 1): χ² test of the released
    counts against the pmf (p > 10⁻³; a keep rate off by 0.01 fails at this n)."""
    n = 200_000
    keep = math.exp(eps) / (math.exp(eps) + k - 1)
    assert float(kary_keep_probability(eps, k)) == pytest.approx(keep, rel=1e-14)
    out = np.asarray(
        kary_randomized_response(jax.random.key(k * 10 + int(eps * 10)), jnp.full((n,), 1), eps, k)
    )
    counts = np.bincount(out, minlength=k)
    pmf = np.full(k, (1 - keep) / (k - 1))
    pmf[1] = keep
    assert stats.chisquare(counts, n * pmf).pvalue > 1e-3
    assert abs(counts[1] / n - keep) <= 5 * math.sqrt(keep * (1 - keep) / n)


def test_rr_and_krr_audits_lose_exactly_eps():
    for results in (
        audit_label_rr(jax.random.key(1), eps_values=(0.1, 1.0, 3.0), n_samples=100_000),
        audit_label_krr(jax.random.key(2), eps_values=(0.1, 1.0, 3.0), k=5, n_samples=100_000),
    ):
        for r in results:
            assert r.exact_loss == pytest.approx(r.eps, rel=1e-12)
            assert r.within_budget and r.empirically_consistent, r
            assert r.sampled_max_loss == pytest.approx(r.eps, rel=1e-12)


def test_objective_perturbation_audit_within_eps_and_matches_the_gaussian_profile():
    results = audit_objective_perturbation(jax.random.key(3), eps_values=(0.5, 2.0), n_samples=8000)
    for r in results:
        assert r.within_budget and r.exact_loss < r.eps
        assert abs(r.empirical_loss - r.exact_loss) <= 4 * r.empirical_se + 0.02, r
