"""chowdhury theory (chowdhury eq. (2), §4.4, §3–5; docs/chowdhury.md, Predictions): constants against reference values and
brute force, the Gaussian-design information against SciPy quadrature, and the sharp
asymptotics (A1), (A2) against a simulation of the exact estimators (200 replicates; the
tolerance is 4 Monte-Carlo standard errors of the simulated MSE plus 5% for finite n)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

import dpsim  # noqa: F401
from dpsim.estimators.linear_btl import mle, rr_debiased
from dpsim.mechanisms.randomized_response import randomized_response
from dpsim.models.linear_btl import sample_linear_btl
from dpsim.theory import chowdhury as th


@pytest.mark.parametrize(
    "eps, factor, excess",
    [(0.1, 20.017, 99.917), (0.5, 4.083, 3.918), (1.0, 2.164, 0.921), (2.0, 1.313, 0.181)],
)
def test_privacy_factors_match_the_spec_table(eps, factor, excess):
    assert float(th.rr_privacy_factor(eps)) == pytest.approx(factor, abs=6e-4)
    assert float(th.rr_excess_variance_factor(eps)) == pytest.approx(excess, abs=6e-4)
    assert float(th.krr_privacy_factor(eps, 2)) == pytest.approx(
        float(th.rr_privacy_factor(eps)), rel=1e-12
    )
    # P11: for small ε the K-ary factor is ≈ K/2 times the binary one
    assert float(th.krr_privacy_factor(1e-4, 8) / th.rr_privacy_factor(1e-4)) == pytest.approx(
        4.0, rel=1e-3
    )


def test_curvature_constants_against_brute_force():
    for L, B in [(0.5, 1.0), (1.0, 2.0)]:
        z = np.linspace(-2 * L * B, 2 * L * B, 200001)
        s = 1 / (1 + np.exp(-z))
        assert float(th.gamma_btl(L, B)) == pytest.approx(np.min(s * (1 - s)), rel=1e-9)
        h = 1e-4  # −(log Φ)'' by central differences, minimised over [−c, c]
        f = lambda v: -stats.norm.logcdf(v)  # noqa: E731
        second = (f(z + h) - 2 * f(z) + f(z - h)) / h**2
        assert float(th.gamma_thurstone(L, B)) == pytest.approx(np.min(second), rel=1e-5)
    for c, value in [(0.0, 0.6366), (1.0, 0.3703), (2.0, 0.1135)]:  # chowdhury §4.4 (Thurstone)
        assert float(th.gamma_thurstone(c / 2, 1.0)) == pytest.approx(value, abs=6e-5)
    assert float(th.gamma_plackett_luce(1.0, 0.5)) == pytest.approx(math.exp(-2) / 2)
    assert float(th.gamma_plackett_luce(1.0, 0.5, "main")) == pytest.approx(math.exp(-2))
    assert (
        float(th.gamma_rr_naive(1.0, 1.0)) < 0 < float(th.gamma_rr_naive(3.0, 1.0))
    )  # needs ε > 2c


def test_bounds_spot_values():
    n, d = 1000, 5
    assert float(th.local_seminorm_lower_bound(n, d, 1.0)) == pytest.approx(
        d / n + d / ((math.e - 1) ** 2 * n)
    )
    assert float(th.central_l2_lower_bound_private_explicit(n, d, 0.5, 1e-3)) == pytest.approx(
        4e-4 * d / (n**2 * 0.501**2)
    )
    assert float(th.central_seminorm_lower_bound(n, d, 0.5)) == pytest.approx(
        d / n + d**2 / (n**2 * 0.25)
    )
    assert float(th.rr_seminorm_bound(n, d, 1.0, 2.0, lam=0.0)) == pytest.approx(
        float(th.rr_privacy_factor(1.0)) * math.sqrt((d + math.log(20)) / n)
    )
    lam = th.rr_seminorm_balanced_lambda(n, d, 1.0, 2.0)
    assert float(th.rr_seminorm_bound(n, d, 1.0, 2.0, lam=lam)) == pytest.approx(
        2 * float(th.rr_seminorm_bound(n, d, 1.0, 2.0))
    )  # the two terms are equal
    assert math.isnan(float(th.rr_mle_seminorm_bound(n, d, 1.0, 1.0, 1.0)))  # ε ≤ 2LB
    assert math.isfinite(float(th.rr_mle_seminorm_bound(n, d, 5.0, 1.0, 1.0)))
    # Cor 5.4: the privacy term decays like 1/(εn)
    r = [
        float(th.objective_perturbation_l2_rate(m, d, 1.0, 1e-3, 1.0, 1.0) - 1 / math.sqrt(m))
        for m in (1e3, 1e4)
    ]
    assert r[0] / r[1] == pytest.approx(10.0)
    # the explicit SGD bound uses G = 4L and λ = γ tanh(ε/2) κ
    lam_sgd = math.tanh(0.5) * 0.5
    assert float(th.sgd_rr_l2_bound_explicit(100, 1000, 1.0, 1.0, 0.5, gamma=1.0)) == pytest.approx(
        math.sqrt((624 * math.log(math.log(1000) / 0.05) + 1) * 16 / (lam_sgd**2 * 100))
    )


def test_explicit_local_lower_bound_on_gaussian_design():
    """(1/(dn))Σ‖x‖² ≈ 2 under x ~ N(0, 2I), so the bounds are ≈ d/(32n) and d/(64(e^ε − 1)²n)."""
    x = sample_linear_btl(jax.random.key(0), jnp.zeros(5), 50_000).x
    assert float(th.local_l2_lower_bound_explicit(x, 5.0)) == pytest.approx(
        5 / (32 * 50_000), rel=0.01
    )
    assert float(th.local_l2_lower_bound_explicit(x, 0.1)) == pytest.approx(
        5 / (64 * math.expm1(0.1) ** 2 * 50_000), rel=0.01
    )


@pytest.mark.parametrize("scale", [1.0, math.sqrt(2.0)])
def test_gaussian_design_information_against_quadrature(scale):
    theta = np.asarray([1.5, -2.0, 0.7])
    H, Sigma = th.gaussian_design_information(jnp.asarray(theta), scale)
    r = np.linalg.norm(theta)
    u = theta / r
    sig1 = lambda z: math.exp(-abs(z)) / (1 + math.exp(-abs(z))) ** 2  # noqa: E731  (σ'(z))
    a = integrate.quad(
        lambda g: sig1(scale * r * g) * stats.norm.pdf(g), -np.inf, np.inf, epsabs=1e-13
    )[0]
    b = integrate.quad(
        lambda g: sig1(scale * r * g) * g * g * stats.norm.pdf(g), -np.inf, np.inf, epsabs=1e-13
    )[0]
    expected = scale**2 * (a * (np.eye(3) - np.outer(u, u)) + b * np.outer(u, u))
    np.testing.assert_allclose(H, expected, atol=1e-10)
    np.testing.assert_allclose(Sigma, scale**2 * np.eye(3))
    H0, _ = th.gaussian_design_information(jnp.zeros(3), scale)
    np.testing.assert_allclose(H0, scale**2 / 4 * np.eye(3), atol=1e-12)


def test_asymptotic_formulas_against_matrix_algebra():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(3, 3))
    H = A @ A.T + 0.5 * np.eye(3)
    S = np.diag([2.0, 1.0, 3.0])
    theta = np.asarray([0.5, -1.0, 2.0])
    n, sigma, beta, eps = 500, 7.0, 20.0, 0.8
    Hi = np.linalg.inv(H)
    assert float(th.mle_asymptotic_mse(jnp.asarray(H), n)) == pytest.approx(
        np.trace(Hi) / n, rel=1e-12
    )
    assert float(th.rr_asymptotic_mse(jnp.asarray(H), jnp.asarray(S), n, eps)) == pytest.approx(
        (np.trace(Hi) + math.exp(eps) / math.expm1(eps) ** 2 * np.trace(Hi @ S @ Hi)) / n, rel=1e-12
    )
    Hb = np.linalg.inv(H + beta / n * np.eye(3))
    a3 = (
        np.trace(Hb @ H @ Hb) / n
        + sigma**2 * np.trace(Hb @ Hb) / n**2
        + (beta / n) ** 2 * np.sum((Hb @ theta) ** 2)
    )
    assert float(
        th.objective_perturbation_asymptotic_mse(jnp.asarray(H), jnp.asarray(theta), n, sigma, beta)
    ) == pytest.approx(a3, rel=1e-12)


@pytest.mark.parametrize("k, eps", [(2, 0.5), (4, 1.0), (8, 2.0)])
def test_sgd_krr_ratio_is_the_krr_factor_at_theta_zero(k, eps):
    """At θ* = 0 every p_j = 1/K, so S = Σ_j g_j = 0 and the K-RR gradient covariance equals the
    Fisher information: the asymptotic RMS ratio is exactly P11's factor (e^ε + K − 1)/(e^ε − 1)."""
    ratio = th.sgd_krr_asymptotic_ratio(0.0, 5, k, eps, samples=20_000)
    assert ratio == pytest.approx(float(th.krr_privacy_factor(eps, k)), rel=1e-9)


@pytest.mark.parametrize("k, eps", [(3, 0.5), (6, 1.5)])
def test_sgd_krr_ratio_against_the_direct_krr_covariance(k, eps):
    """Away from θ* = 0, the ratio against the covariance of the K-RR debiased score written out
    per draw in NumPy, on the same draws (the function's key, split the same way): ỹ ~ q = p·P
    with P(ỹ | y) the K-RR channel, score (a·g_ỹ − Σ_j g_j)/(e^ε − 1), a = e^ε + K − 1, whose
    covariance is the V_ε/c² of the function's App. C.4 form; the Lyapunov equations are solved
    by SciPy."""
    from scipy.linalg import solve_continuous_lyapunov

    dim, samples, norm, gk = 4, 20_000, 1.3, 0.2
    k_theta, k_phi = jax.random.split(jax.random.key(0))
    theta = np.asarray(jax.random.normal(k_theta, (dim,)))
    theta = theta - theta.mean()
    theta = norm * theta / np.linalg.norm(theta)
    phi = np.asarray(jax.random.normal(k_phi, (samples, k, dim)))
    z = phi @ theta
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    g = phi - np.einsum("nk,nkd->nd", p, phi)[:, None, :]
    e = math.exp(eps)
    channel = (np.full((k, k), 1.0) + (e - 1.0) * np.eye(k)) / (e + k - 1.0)  # P(ỹ | y)
    q = p @ channel
    # the K-RR debiased score of ỹ: (a·g_ỹ − Σ_j g_j)/(e^ε − 1); its covariance over ỹ ~ q
    debiased = ((e + k - 1.0) * g - g.sum(axis=1, keepdims=True)) / (e - 1.0)
    mean = np.einsum("nk,nkd->nd", q, debiased)
    dev = debiased - mean[:, None, :]
    V = np.einsum("nk,nkd,nke->de", q, dev, dev) / samples
    H = np.einsum("nk,nkd,nke->de", p, g, g) / samples
    basis = np.linalg.svd(np.eye(dim) - np.ones((dim, dim)) / dim)[0][:, : dim - 1]
    A = basis.T @ (H / gk - np.eye(dim) / 2) @ basis

    def mse(cov):
        return np.trace(solve_continuous_lyapunov(A, basis.T @ cov @ basis))

    expected = math.sqrt(mse(V) / mse(H))
    got = th.sgd_krr_asymptotic_ratio(norm, dim, k, eps, gk, samples=samples)
    assert got == pytest.approx(expected, rel=1e-9)


def test_a1_a2_predict_the_simulated_mse():
    """docs/chowdhury.md, Experiments as run; Predictions (A2) check set-up: d = 3, θ* = (1, −0.5, 0.3), x ~ N(0, 2I), n = 4000, ε = 2
    (n(e^ε − 1)²/e^ε ≈ 2.2·10⁴ ≫ d), unconstrained exact fits, 200 replicates."""
    theta = jnp.asarray([1.0, -0.5, 0.3])
    n, reps, eps = 4000, 200, 2.0

    def replicate(key):
        k_data, k_rr = jax.random.split(key)
        data = sample_linear_btl(k_data, theta, n)
        yt = randomized_response(k_rr, data.y, eps)
        return jnp.stack(
            [
                jnp.sum((mle(data.x, data.y, jnp.inf).theta - theta) ** 2),
                jnp.sum((rr_debiased(data.x, yt, eps, jnp.inf).theta - theta) ** 2),
            ]
        )

    sq = np.asarray(jax.jit(jax.vmap(replicate))(jax.random.split(jax.random.key(7), reps)))
    H, Sigma = th.gaussian_design_information(theta, math.sqrt(2.0))
    predicted = [float(th.mle_asymptotic_mse(H, n)), float(th.rr_asymptotic_mse(H, Sigma, n, eps))]
    for column, pred in zip(sq.T, predicted):
        se = column.std(ddof=1) / math.sqrt(reps)
        assert abs(column.mean() - pred) <= 4 * se + 0.05 * pred, (column.mean(), pred, se)
    # and the privacy excess is visible: the RR prediction is well above the MLE one
    assert predicted[1] > 1.5 * predicted[0]
