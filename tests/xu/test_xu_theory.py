"""xu theory (xu §4): the adaptive schemes against P5 (docs/xu.md, Predictions),
Table 1's directions, the rates' closed forms, the sandwich oracle against a short simulation,
the classic-RR population floor against SciPy and reference values (docs/xu.md, Mechanisms and estimators), and the excess risk
against its definition."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import root
from scipy.special import expit, rel_entr

import dpsim  # noqa: F401
from dpsim.estimators.debiased_m import debiased_m_estimator, ridge_lambda
from dpsim.linalg import batched_lapack_calls
from dpsim.mechanisms.pairwise_ldp import privatise
from dpsim.metrics import excess_risk, kendall_distance, linf_error
from dpsim.models.complete_btl import sample_pair_wins, theta_uniform_centred
from dpsim.theory import xu


# ----------------------------------------------------------------------------- schemes (docs/xu.md, Predictions (P5))
P5_TABLE = [  # m, L, ε_S1, ε_S2, ε_S3, proxy S1, S2, S3 (S1 = log/√, S2 = 1/√, S3 = 1/(√·log))
    (10, 100, 1, 1, 1, 0.0684, 0.0684, 0.0684),
    (10, 200, 0.7781, 0.7071, 0.6426, 0.0603, 0.0659, 0.0720),
    (10, 400, 0.6003, 0.5000, 0.4164, 0.0542, 0.0646, 0.0770),
    (10, 800, 0.4600, 0.3536, 0.2717, 0.0495, 0.0639, 0.0828),
    (10, 1600, 0.3503, 0.2500, 0.1784, 0.0456, 0.0636, 0.0889),
    (20, 1600, 0.3412, 0.2500, 0.1832, 0.0331, 0.0450, 0.0612),
    (30, 1600, 0.3366, 0.2500, 0.1857, 0.0274, 0.0367, 0.0493),
]
ORDER = ("eps_log_over_sqrt", "eps_inv_sqrt", "eps_inv_sqrt_log")


@pytest.mark.parametrize("row", P5_TABLE)
def test_scheme_table(row):
    m, L = row[:2]
    for scheme, eps, proxy in zip(ORDER, row[2:5], row[5:]):
        assert float(xu.adaptive_eps(m, L, scheme)) == pytest.approx(eps, abs=6e-5)
        assert float(xu.scheme_error_proxy(m, L, scheme)) == pytest.approx(proxy, abs=6e-5)


def test_scheme_normalisation_and_table_1_directions():
    for scheme in ORDER:
        for m in (10, 20, 40):
            assert float(xu.adaptive_eps(m, 100, scheme)) == pytest.approx(1.0, rel=1e-14)
            assert float(xu.adaptive_eps(m, 50, scheme, l0=50)) == pytest.approx(1.0, rel=1e-14)
    # Scenario IV at L = 50 with L0 = 100 (xu Scenario IV, §5.2): 1.272, 1.414, 1.572 for m = 10
    np.testing.assert_allclose(
        [xu.adaptive_eps(10, 50, s) for s in ORDER], [1.272, 1.414, 1.572], atol=6e-4
    )
    Ls = np.array([100, 200, 400, 800, 1600, 3200, 12800])
    for m in (10, 20, 30):
        for scheme in ORDER:
            proxy = xu.scheme_error_proxy(m, Ls, scheme)
            change = np.diff(np.log(proxy))
            trend = xu.table1_trend(scheme)
            if trend == "decrease":
                assert np.all(change < 0)
            elif trend == "increase":
                assert np.all(change > 0)
            else:
                assert trend == "stable" and abs(proxy[-1] / proxy[0] - 1) < 0.1
    # labels: Scheme 1 is log/√ (the paper's text swaps the behaviour of Schemes 1 and 3, A8)
    assert (
        xu.PAPER_SCHEME_NUMBER["eps_log_over_sqrt"] == 1
        and xu.table1_trend("eps_log_over_sqrt") == "decrease"
    )


def test_critical_eps_keeps_the_lower_bound_constant():
    """Cor 2: at ε = 1/√(mL) the Thm 3 lower bound stays ≍ 1 as L grows (→ 2/√κ)."""
    bounds = [
        float(xu.minimax_lower_bound(10, L, xu.critical_eps(10, L)))
        for L in (100, 10_000, 1_000_000)
    ]
    np.testing.assert_allclose(bounds, 2.0, rtol=1e-3)
    # and at ε ≍ log(mL)/√(mL) (Cor 1) the upper bound's √(G log(mL)/(mL)) shrinks like 1/√log(mL)
    rates = [float(xu.l2_rate(10, L, xu.consistency_eps(10, L))) for L in (100, 10_000, 1_000_000)]
    assert rates[0] > rates[1] > rates[2]


# ----------------------------------------------------------------------------- rates (closed forms)
def test_rates_closed_forms():
    m, L, eps, kappa = 10, 200, 1.0, 3.0
    G = 1 / math.tanh(eps / 2) ** 2
    base = G * math.log(m * L) / (m * L)
    assert float(xu.excess_risk_rate(m, L, eps, kappa)) == pytest.approx(kappa * base, rel=1e-12)
    assert float(xu.l2_rate(m, L, eps, kappa)) == pytest.approx(kappa * math.sqrt(base), rel=1e-12)
    assert float(xu.linf_rate(m, L, eps, kappa)) == pytest.approx(
        kappa**2 * math.sqrt(base), rel=1e-12
    )
    assert float(xu.minimax_lower_bound(m, L, eps, kappa)) == pytest.approx(
        1 / math.sqrt(kappa * m * L) / math.tanh(eps / 2), rel=1e-12
    )
    rho = (1 + kappa) * max(G, math.sqrt(G))
    assert float(xu.excess_risk_tail_bound(0.01, m, L, eps, kappa)) == pytest.approx(
        2 * math.exp(-(m**2) * L * 0.01 / (80 * rho)), rel=1e-12
    )
    gap = 0.1
    assert float(xu.top_k_error_bound(m, L, eps, kappa, gap)) == pytest.approx(
        math.exp(-m * L * gap**2 / (G * kappa**4)), rel=1e-12
    )
    assert float(xu.kendall_error_bound(m, L, eps, kappa, gap)) == pytest.approx(
        2 * math.exp(-m * L * gap**2 / (G * kappa**4)), rel=1e-12
    )
    # non-private limit: G = 1
    assert float(xu.l2_rate(m, L, math.inf)) == pytest.approx(math.sqrt(math.log(m * L) / (m * L)))
    # heterogeneous: upper bound (G) above lower bound (1/K) beyond the homogeneous ratio
    eps_g, sizes = jnp.asarray([0.1, 5.0]), jnp.asarray([100.0, 100.0])
    ratio = float(
        xu.l2_rate(m, 200, eps_g, group_sizes=sizes)
        / xu.minimax_lower_bound(m, 200, eps_g, group_sizes=sizes)
    )
    assert ratio > 3 * math.sqrt(math.log(m * 200))
    # Thm 4: the threshold solves L = 2Gκ⁴ log(mL)/(mΔ²)
    L_star = xu.exact_top_k_users(m, eps, 1.5, 0.2)
    c = 2 * G * 1.5**4 / (m * 0.04)
    assert L_star == pytest.approx(c * math.log(m * L_star), rel=1e-9)
    assert xu.exact_top_k_users(m, math.inf, 1.0, 50.0) == 1.0


# ----------------------------------------------------------------------------- oracle (docs/xu.md, Predictions (P4))
def test_oracle_matches_a_short_simulation():
    """(m, L, ε) = (20, 400, 1), debiased RR, λ = G/L, 600 replicates at one θ*: E‖θ̂ − θ*‖²/m within
    5% + 3 SE of the λ = 0 sandwich (docs/xu.md, Predictions (P4): "within a few percent at ε ≥ 1"; measured 0.6%), the
    Kendall error within 3 SE + 10%, E‖·‖∞ within 5%."""
    m, L, eps, R = 20, 400, 1.0, 600
    theta = theta_uniform_centred(jax.random.key(100), m)
    sizes, e = jnp.asarray([float(L)]), jnp.asarray([eps])
    lam = ridge_lambda(e, sizes)

    def replicate(key):
        k_data, k_priv = jax.random.split(key)
        zbar = privatise(k_priv, sample_pair_wins(k_data, theta, sizes), sizes, e, "debiased_rr")
        fit = debiased_m_estimator(zbar, lam)
        return (
            jnp.sum((fit.theta - theta) ** 2) / m,
            linf_error(fit.theta, theta),
            kendall_distance(fit.theta, theta),
        )

    mse, linf, kendall = (
        np.asarray(a) for a in jax.jit(jax.vmap(replicate))(jax.random.split(jax.random.key(7), R))
    )
    pred = {
        k: float(v)
        for k, v in xu.oracle_predictions(jax.random.key(1), theta, sizes, e, "debiased_rr").items()
    }
    assert abs(mse.mean() / pred["mse"] - 1) <= 0.05 + 3 * mse.std() / math.sqrt(R) / pred["mse"]
    assert (
        abs(kendall.mean() - pred["kendall"])
        <= 3 * kendall.std() / math.sqrt(R) + 0.1 * pred["kendall"]
    )
    assert linf.mean() == pytest.approx(pred["linf"], rel=0.05)
    assert pred["rmse_l2_rms"] == pytest.approx(math.sqrt(pred["mse"]))


def test_oracle_moments_closed_form_and_vmap_safety():
    """The sandwich against NumPy's pseudo-inverse, the Laplace/RR variance ratio of docs/xu.md, Mechanisms and estimators,
    and no batched LAPACK call under vmap."""
    m, L = 6, 100
    theta = theta_uniform_centred(jax.random.key(3), m)
    sizes = jnp.asarray([float(L)])
    t = np.asarray(theta)
    i, j = np.triu_indices(m, 1)
    p = expit(t[i] - t[j])

    def lap(w):
        a = np.zeros((m, m))
        np.add.at(a, (i, j), -w)
        np.add.at(a, (j, i), -w)
        return a - np.diag(a.sum(axis=1))

    for mechanism, eps, v in [
        ("debiased_rr", 2.0, (1 / math.tanh(1.0) ** 2 / 4 - (p - 0.5) ** 2) / L),
        ("laplace", 2.0, (p * (1 - p) + 2 / 4) / L),
        ("none", 1.0, p * (1 - p) / L),
    ]:
        pinv = np.linalg.pinv(lap(p * (1 - p)))
        moments = xu.oracle_moments(theta, sizes, jnp.asarray([eps]), mechanism)
        np.testing.assert_allclose(moments.cov, pinv @ lap(v) @ pinv, atol=1e-12)
        np.testing.assert_allclose(moments.bias, 0.0, atol=1e-15)
    # with a ridge: bias = −(H + 2λI)⁻¹ 2λθ*
    lam = 0.05
    moments = xu.oracle_moments(theta, sizes, jnp.asarray([1.0]), "none", lam)
    np.testing.assert_allclose(
        moments.bias,
        -np.linalg.solve(lap(p * (1 - p)) + 2 * lam * np.eye(m), 2 * lam * t),
        atol=1e-12,
    )
    thetas = jax.vmap(lambda k: theta_uniform_centred(k, m))(jax.random.split(jax.random.key(4), 4))
    hlo = jax.jit(
        jax.vmap(
            lambda th: xu.oracle_predictions(
                jax.random.key(0), th, sizes, jnp.asarray([1.0]), "debiased_rr", n_mc=200
            )["linf"]
        )
    ).lower(thetas)
    assert batched_lapack_calls(hlo.compile().as_text()) == []


# ----------------------------------------------------------------------------- classic RR floor (docs/xu.md, Mechanisms and estimators)
def test_classic_rr_population_limit_against_scipy():
    m, eps = 10, 2.0
    theta = np.asarray(theta_uniform_centred(jax.random.key(5), m))
    fit = xu.classic_rr_population_limit(jnp.asarray(theta), jnp.asarray([1.0]), jnp.asarray([eps]))
    assert bool(fit.converged)
    i, j = np.triu_indices(m, 1)
    q = 0.5 + (expit(theta[i] - theta[j]) - 0.5) * math.tanh(eps / 2)

    def equations(x):  # Σ_j σ(x_i − x_j) − Σ_j q̃_ij for i < m, and 1ᵀx = 0
        r = expit(x[i] - x[j]) - q
        g = np.zeros(m)
        np.add.at(g, i, r)
        np.add.at(g, j, -r)
        return np.append(g[:-1], x.sum())

    # accepted by its residual, not by hybr's status flag (whose verdict at tol 1e-14 is the
    # solver's own stopping rule and can differ between machines): the Jacobian's smallest
    # singular value here is about 0.7, so a residual of 1e-11 places the root within
    # ~2e-11 of the exact one, far inside the comparison's 1e-8
    ref = root(equations, np.zeros(m), method="hybr", tol=1e-14)
    assert np.abs(equations(ref.x)).max() <= 1e-11
    np.testing.assert_allclose(np.asarray(fit.theta), ref.x, atol=1e-8)


@pytest.mark.parametrize("m, l2, linf", [(10, 0.39, 0.69), (20, 0.41, 0.77)])
def test_classic_rr_floor_matches_spec_numbers(m, l2, linf):
    """ε = 2, θ* ~ U(−2, 2) centred, mean over 200 draws (docs/xu.md, Mechanisms and estimators; measured 0.393/0.701 and
    0.408/0.754). Tolerance: 3 SE + 0.01 (the reference values are rounded to 2 decimals); shrink slope 0.62–0.65."""
    floor = jax.jit(
        jax.vmap(
            lambda k: xu.classic_rr_floor(
                theta_uniform_centred(k, m), jnp.asarray([1.0]), jnp.asarray([2.0])
            )
        )
    )
    out = {k: np.asarray(v) for k, v in floor(jax.random.split(jax.random.key(6), 200)).items()}
    assert out["converged"].all()
    for key, target in (("l2_rms", l2), ("linf", linf)):
        assert abs(out[key].mean() - target) <= 3 * out[key].std() / math.sqrt(200) + 0.01
    assert 0.62 <= out["shrink_slope"].mean() <= 0.65


def test_classic_rr_estimate_plateaus_at_the_floor():
    m, eps, L = 10, 2.0, 200_000
    theta = theta_uniform_centred(jax.random.key(8), m)
    sizes, e = jnp.asarray([float(L)]), jnp.asarray([eps])
    zbar = privatise(
        jax.random.key(9),
        sample_pair_wins(jax.random.key(10), theta, sizes),
        sizes,
        e,
        "classic_rr",
    )
    fit = debiased_m_estimator(zbar, ridge_lambda(e, sizes))
    floor = xu.classic_rr_population_limit(theta, sizes, e)
    assert float(jnp.max(jnp.abs(fit.theta - floor.theta))) < 0.03  # sd ≈ 0.005 at L = 2e5
    assert float(jnp.max(jnp.abs(fit.theta - theta))) > 0.3


# ----------------------------------------------------------------------------- excess risk (docs/xu.md, Metrics)
def test_excess_risk_against_its_definition_and_kl():
    m = 7
    theta = np.asarray(theta_uniform_centred(jax.random.key(11), m))
    theta_hat = theta + np.asarray(jax.random.normal(jax.random.key(12), (m,))) * 0.3
    i, j = np.triu_indices(m, 1)
    p = expit(theta[i] - theta[j])
    q = expit(theta_hat[i] - theta_hat[j])
    kl = np.sum(rel_entr(p, q) + rel_entr(1 - p, 1 - q)) / m**2

    # the definition: E over z with E z = p* of L_ij(θ̂, z) − L_ij(θ*, z), L_ij(θ, z) = z(θ_j − θ_i) + log(1 + e^{θ_i − θ_j})
    def loss(t, z):
        return z * (t[j] - t[i]) + np.logaddexp(0, t[i] - t[j])

    definition = np.sum(loss(theta_hat, p) - loss(theta, p)) / m**2
    value = float(excess_risk(jnp.asarray(theta_hat), jnp.asarray(theta)))
    assert value == pytest.approx(kl, rel=1e-12)
    assert value == pytest.approx(definition, rel=1e-10)
    assert float(excess_risk(jnp.asarray(theta + 3.0), jnp.asarray(theta))) == pytest.approx(
        0.0, abs=1e-15
    )
    assert np.isfinite(float(excess_risk(jnp.asarray(theta * 200), jnp.asarray(theta))))


# ----------------------------------------------------------------------------- bad input
def test_bad_input_names_the_value():
    theta = jnp.zeros(4)
    sizes, e = jnp.asarray([10.0]), jnp.asarray([1.0])
    with pytest.raises(ValueError, match="scheme='eps_sqrt'"):
        xu.adaptive_eps(10, 100, "eps_sqrt")
    with pytest.raises(ValueError, match="scheme='scheme1'"):
        xu.table1_trend("scheme1")
    with pytest.raises(ValueError, match="n_items=1"):
        xu.l2_rate(1, 100, 1.0)
    with pytest.raises(ValueError, match="n_users=0"):
        xu.linf_rate(10, 0, 1.0)
    with pytest.raises(ValueError, match="eps=-1"):
        xu.l2_rate(10, 100, -1.0)
    with pytest.raises(ValueError, match="gap=0"):
        xu.top_k_error_bound(10, 100, 1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="kappa=0.5"):
        xu.l2_rate(10, 100, 1.0, 0.5)
    with pytest.raises(ValueError, match="mechanism='classic_rr'"):
        xu.oracle_moments(theta, sizes, e, "classic_rr")
    with pytest.raises(ValueError, match="n_items=1"):
        xu.oracle_moments(jnp.zeros(1), sizes, e, "none")
    with pytest.raises(ValueError, match="l0=0"):
        xu.adaptive_eps(10, 100, "eps_inv_sqrt", l0=0)


def test_rms_ratio_bounds_homogeneous_eps_and_proxy_slopes():
    """Lemma 2 bounds (docs/xu.md, Predictions (P3)): the sandwich ratio at any θ* lies between them; the ε with a
    given G inverts coth²(ε/2); the proxy slopes reproduce the P5 changes over L = 100 → 1600."""
    G = lambda e: float(xu.privacy_G(e))  # noqa: E731
    low, high = xu.rms_ratio_bounds(G(1.0), G(3.0))
    assert low == pytest.approx(1.0 / math.tanh(0.5) / (1.0 / math.tanh(1.5)))
    assert high == pytest.approx(math.sqrt((G(1.0) - 1) / (G(3.0) - 1)))
    assert xu.rms_ratio_bounds(G(1.0), 1.0)[1] == math.inf
    for seed in range(3):
        theta = theta_uniform_centred(jax.random.key(seed), 10)
        mse = [
            float(
                jnp.trace(
                    xu.oracle_moments(
                        theta, jnp.asarray([100.0]), jnp.asarray([e]), "debiased_rr"
                    ).cov
                )
            )
            for e in (1.0, 3.0)
        ]
        assert low <= math.sqrt(mse[0] / mse[1]) <= high
    for eps in (0.1, 1.0, 4.0):
        assert xu.homogeneous_eps_for_G(G(eps)) == pytest.approx(eps, rel=1e-12)
    assert xu.homogeneous_eps_for_G(1.0) == math.inf
    Ls = [100, 200, 400, 800, 1600]
    slopes = {s: xu.scheme_proxy_slope(10, Ls, s) for s in xu.SCHEMES}
    assert slopes["eps_log_over_sqrt"] < slopes["eps_inv_sqrt"] < 0 < slopes["eps_inv_sqrt_log"]
    assert math.exp(slopes["eps_inv_sqrt"] * math.log(16)) == pytest.approx(
        0.0636 / 0.0684, rel=0.01
    )
    with pytest.raises(ValueError, match="G_num"):
        xu.rms_ratio_bounds(1.0, 2.0)
    with pytest.raises(ValueError, match="G=0.5"):
        xu.homogeneous_eps_for_G(0.5)
