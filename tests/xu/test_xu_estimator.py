"""The debiased M-estimator of xu eq. (3) (xu §4.1; docs/xu.md, Mechanisms and estimators) against
an independent solver (SciPy trust-region Newton on the objective written here in NumPy) and
choix (non-private BTL), its Lemma 3 / Lemma S5 properties, and the Borda-order identity."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize, root

import choix
import dpsim  # noqa: F401
from dpsim.estimators.btl_mle import btl_objective
from dpsim.estimators.debiased_m import (
    borda_scores,
    classic_rr_mle,
    debiased_m_estimator,
    debiased_m_gradient,
    debiased_m_objective_value,
    estimated_top_k_mask,
    ridge_lambda,
    tied_ranks,
    win_value_matrix,
)
from dpsim.linalg import batched_lapack_calls
from dpsim.mechanisms.pairwise_ldp import privatise_all
from dpsim.metrics import kendall_distance
from dpsim.models.btl import true_top_k_mask
from dpsim.models.complete_btl import (
    sample_pair_wins,
    sample_rankings_per_user,
    theta_uniform_centred,
)


@jax.jit
def _privatised(key, theta, sizes, eps):
    k_data, k_priv = jax.random.split(key)
    return privatise_all(k_priv, sample_pair_wins(k_data, theta, sizes), sizes, eps)


_fit = jax.jit(debiased_m_estimator)


def _data(m, L, eps, seed, mechanism="debiased_rr"):
    theta = theta_uniform_centred(jax.random.key(seed), m)
    sizes, e = jnp.asarray([float(L)]), jnp.asarray([eps])
    zbar = getattr(_privatised(jax.random.key(seed + 1), theta, sizes, e), mechanism)
    return theta, zbar, float(ridge_lambda(e, sizes))


# ----------------------------------------------------------------------------- NumPy reference objective
def _np_objective(theta, zbar, lam, i, j):
    d = theta[i] - theta[j]
    return np.sum(-zbar * d + np.logaddexp(0.0, d)) + lam * theta @ theta


def _np_gradient(theta, zbar, lam, i, j):
    d = theta[i] - theta[j]
    r = 1 / (1 + np.exp(-d)) - zbar
    g = 2 * lam * theta
    np.add.at(g, i, r)
    np.add.at(g, j, -r)
    return g


def _np_hessian(theta, lam, i, j):
    d = theta[i] - theta[j]
    s = 1 / (2 + np.exp(d) + np.exp(-d))
    h = 2 * lam * np.eye(theta.shape[0])
    np.add.at(h, (i, i), s)
    np.add.at(h, (j, j), s)
    np.add.at(h, (i, j), -s)
    np.add.at(h, (j, i), -s)
    return h


CASES = [  # (m, L, eps, mechanism): z̄ outside [0, 1] at small ε and L; two m (one compilation each)
    (10, 100, 1.0, "debiased_rr"),
    (10, 50, 0.2, "debiased_rr"),
    (20, 400, 2.0, "laplace"),
    (10, 30, 0.5, "classic_rr"),
    (10, 200, 3.0, "none"),
    (20, 100, 0.5, "debiased_rr"),
]


@pytest.mark.parametrize("m, L, eps, mechanism", CASES)
def test_agrees_with_scipy_and_has_lemma_3_and_lemma_s5_properties(m, L, eps, mechanism):
    theta_star, zbar, lam = _data(m, L, eps, seed=3 * m + L, mechanism=mechanism)
    fit = _fit(zbar, lam)
    assert bool(fit.converged) and int(fit.iterations) <= 15
    theta = np.asarray(fit.theta)
    zb = np.asarray(zbar)
    i, j = np.triu_indices(m, 1)
    if mechanism == "debiased_rr" and eps <= 0.5:
        assert zb.min() < 0 or zb.max() > 1  # the case where λ > 0 is essential
    # SciPy: BFGS on the NumPy objective, polished by MINPACK's hybrid root finder on ∇ = 0
    start = minimize(
        _np_objective,
        np.zeros(m),
        args=(zb, lam, i, j),
        jac=_np_gradient,
        method="BFGS",
        options={"gtol": 1e-8},
    )
    ref = root(
        _np_gradient,
        start.x,
        args=(zb, lam, i, j),
        jac=lambda t, *a: _np_hessian(t, lam, i, j),
        method="hybr",
        tol=1e-14,
    )
    assert np.max(np.abs(_np_gradient(ref.x, zb, lam, i, j))) < 1e-11  # SciPy reached the optimum
    np.testing.assert_allclose(theta, ref.x, atol=1e-6)
    assert np.max(np.abs(theta - ref.x)) < 1e-8  # measured: ≤ 1e-10
    # stationarity (independent gradient) and Lemma 3: 1ᵀθ̂ = 0
    assert np.max(np.abs(_np_gradient(theta, zb, lam, i, j))) <= 1e-10 * m
    assert abs(theta.sum()) <= 1e-12 and abs(float(fit.info["sum_theta"])) <= 1e-8
    np.testing.assert_allclose(
        debiased_m_gradient(fit.theta, zbar, lam), _np_gradient(theta, zb, lam, i, j), atol=1e-12
    )
    assert float(debiased_m_objective_value(fit.theta, zbar, lam)) == pytest.approx(
        _np_objective(theta, zb, lam, i, j), rel=1e-13
    )
    # Lemma S5: the solver's Hessian is Σ s_ij (e_i − e_j)(e_i − e_j)ᵀ + 2λI, 2λ ≤ eig ≤ 2(λ + max_i Σ_j s_ij)
    _, curvature = btl_objective(win_value_matrix(zbar), 2 * lam, 0.0).evaluate(fit.theta)
    hvp = btl_objective(win_value_matrix(zbar), 2 * lam, 0.0).hvp
    dense = np.asarray(jax.vmap(lambda v: hvp(curvature, v))(jnp.eye(m)))
    np.testing.assert_allclose(dense, _np_hessian(theta, lam, i, j), atol=1e-13)
    eig = np.linalg.eigvalsh(dense)
    s = 1 / (2 + np.exp(theta[:, None] - theta[None, :]) + np.exp(theta[None, :] - theta[:, None]))
    np.fill_diagonal(s, 0.0)
    assert eig.min() >= 2 * lam * (1 - 1e-9)
    assert eig.max() <= 2 * (lam + s.sum(axis=1).max()) * (1 + 1e-9)
    assert eig.min() == pytest.approx(2 * lam, rel=1e-9)  # eigenvector 1


def test_non_private_fit_agrees_with_choix():
    """Raw answers, λ‖θ‖² on the per-user-averaged objective = choix's α‖θ‖² with α = λL on the sum."""
    m, L = 8, 60
    theta_star = theta_uniform_centred(jax.random.key(20), m)
    y = np.asarray(sample_rankings_per_user(jax.random.key(21), theta_star, L))
    i, j = np.triu_indices(m, 1)
    data = [
        (int(a), int(b)) if won else (int(b), int(a)) for row in y for a, b, won in zip(i, j, row)
    ]
    lam = 1.0 / L
    fit = debiased_m_estimator(jnp.asarray(y.mean(axis=0), jnp.float64), lam)
    ref = choix.opt_pairwise(m, data, alpha=lam * L, method="Newton-CG", tol=1e-12)
    np.testing.assert_allclose(np.asarray(fit.theta), ref, atol=1e-6)


def test_consistency_without_privacy():
    """ε = ∞, λ → 0, L large: θ̂ → θ* (docs/xu.md, Predictions)."""
    m, L = 10, 2_000_000
    theta_star = theta_uniform_centred(jax.random.key(22), m)
    sizes = jnp.asarray([float(L)])
    zbar = privatise_all(
        jax.random.key(24),
        sample_pair_wins(jax.random.key(23), theta_star, sizes),
        sizes,
        jnp.asarray([math.inf]),
    ).debiased_rr
    fit = debiased_m_estimator(zbar, 1e-10)
    assert bool(fit.converged)
    assert float(jnp.max(jnp.abs(fit.theta - theta_star))) < 0.02  # sd ≈ 1/√(L·m·p(1−p)) ≈ 0.002


# ----------------------------------------------------------------------------- Borda order (docs/xu.md, Mechanisms and estimators)
def test_classic_and_debiased_rr_rank_identically_and_in_borda_order():
    """m = 10, L = 50, ε = 2, λ = G/L, 200 replicates with the same flipped counts (docs/xu.md, Predictions (check 2))."""
    m, L, eps = 10, 50, 2.0
    sizes, e = jnp.asarray([float(L)]), jnp.asarray([eps])
    lam = ridge_lambda(e, sizes)

    def replicate(key):
        k_theta, k_data, k_priv = jax.random.split(key, 3)
        theta = theta_uniform_centred(k_theta, m)
        means = privatise_all(k_priv, sample_pair_wins(k_data, theta, sizes), sizes, e)
        deb, cls = (
            debiased_m_estimator(means.debiased_rr, lam),
            classic_rr_mle(means.classic_rr, lam),
        )
        return (
            tied_ranks(deb.theta),
            tied_ranks(cls.theta),
            tied_ranks(borda_scores(means.classic_rr)),
            kendall_distance(deb.theta, theta),
            kendall_distance(cls.theta, theta),
            deb.converged & cls.converged,
        )

    r_deb, r_cls, r_borda, k_deb, k_cls, ok = jax.jit(jax.vmap(replicate))(
        jax.random.split(jax.random.key(30), 200)
    )
    assert bool(jnp.all(ok))
    np.testing.assert_array_equal(r_deb, r_cls)
    np.testing.assert_array_equal(r_deb, r_borda)
    np.testing.assert_array_equal(k_deb, k_cls)  # identical Kendall errors (A22)
    has_tie = np.any(
        np.sort(np.asarray(r_deb), axis=1)[:, 1:] == np.sort(np.asarray(r_deb), axis=1)[:, :-1],
        axis=1,
    )
    assert 0 < has_tie.sum() < 200  # ties are real (≈12% of replicates at m = 10, L = 50)


def test_ties_and_top_k():
    theta = jnp.asarray([0.5, 0.5 + 1e-12, -0.2, 0.1, -0.9])
    np.testing.assert_array_equal(tied_ranks(theta), [1, 1, 4, 3, 5])
    # a tie at the K = 1 boundary is broken at random, evenly
    picks = jax.vmap(lambda k: estimated_top_k_mask(k, theta, 1))(
        jax.random.split(jax.random.key(31), 4000)
    )
    assert np.all(np.asarray(picks).sum(axis=1) == 1)
    share = float(jnp.mean(picks[:, 0]))
    assert abs(share - 0.5) < 5 * 0.5 / math.sqrt(4000)
    assert not np.any(np.asarray(picks)[:, 2:])
    # no ties: the true top-K
    np.testing.assert_array_equal(
        estimated_top_k_mask(jax.random.key(0), theta.at[1].set(0.7), 2),
        true_top_k_mask(theta.at[1].set(0.7), 2),
    )


# ----------------------------------------------------------------------------- λ rule, vmap safety
def test_ridge_lambda_rules():
    for eps in (1.0, 3.0):
        G = (math.exp(eps) + 1) ** 2 / (math.exp(eps) - 1) ** 2
        assert float(ridge_lambda(eps, 100)) == pytest.approx(G / 100, rel=1e-12)
        assert float(ridge_lambda(eps, 100, "paper")) == pytest.approx(
            (math.exp(eps) + 1) ** 2 / (math.exp(eps) - 1) / 100, rel=1e-12
        )
    # the literal formula is ≈ 19x larger at ε = 3 (docs/xu.md, Mechanisms and estimators)
    assert float(ridge_lambda(3.0, 100, "paper") / ridge_lambda(3.0, 100)) == pytest.approx(
        math.e**3 - 1
    )
    assert float(ridge_lambda(math.inf, 100)) == pytest.approx(1 / 100)
    # heterogeneous: G over users / L
    lam = ridge_lambda(jnp.asarray([0.5, 2.0]), jnp.asarray([10.0, 30.0]))
    G = (10 / math.tanh(0.25) ** 2 + 30 / math.tanh(1.0) ** 2) / 40
    assert float(lam) == pytest.approx(G / 40, rel=1e-12)


def test_vmapped_estimator_has_no_batched_lapack_and_traced_eps():
    m = 10
    theta = theta_uniform_centred(jax.random.key(40), m)

    def fit(key, eps):
        sizes, e = jnp.asarray([80.0]), jnp.reshape(eps, (1,))
        means = privatise_all(key, sample_pair_wins(key, theta, sizes), sizes, e)
        return debiased_m_estimator(means.debiased_rr, ridge_lambda(e, sizes)).theta

    keys = jax.random.split(jax.random.key(41), 8)
    eps = jnp.linspace(0.5, 3.0, 8)
    hlo = jax.jit(jax.vmap(fit)).lower(keys, eps).compile().as_text()
    assert batched_lapack_calls(hlo) == []
    assert np.all(np.isfinite(np.asarray(jax.jit(jax.vmap(fit))(keys, eps))))


def test_bad_input_names_the_value():
    zbar = jnp.full((6,), 0.5)
    with pytest.raises(ValueError, match="lam=-1"):
        debiased_m_estimator(zbar, -1.0)
    with pytest.raises(ValueError, match="length 5"):
        debiased_m_estimator(jnp.zeros(5), 0.1)
    with pytest.raises(ValueError, match="rule='literal'"):
        ridge_lambda(1.0, 10, "literal")
    with pytest.raises(ValueError, match="eps=0"):
        ridge_lambda(0.0, 10)
    with pytest.raises(ValueError, match="group_sizes"):
        ridge_lambda(1.0, 0)
    with pytest.raises(ValueError, match="k=5"):
        estimated_top_k_mask(jax.random.key(0), jnp.zeros(4), 5)


def test_expected_top_k_hamming_is_the_mean_over_random_tie_breaks():
    """E H_K in closed form (docs/xu.md, Errata and modes (A15)) = the average of H_K over many random tie-breaks of
    estimated_top_k_mask; without ties it is the plain H_K; it never exceeds min(K, m−K)/K."""
    from dpsim.estimators.debiased_m import expected_top_k_hamming
    from dpsim.metrics import relative_hamming_error

    theta_hat = jnp.asarray(
        [1.5, 0.7, 0.2, 0.2, 0.2, 0.2, -1.0, 0.9]
    )  # a 4-way tie across the K boundary
    k = 4
    truth = true_top_k_mask(jnp.asarray([4.0, 3.0, 2.5, 2.0, 0.0, -0.5, -1.0, -2.0]), k)
    draws = jax.vmap(
        lambda key: relative_hamming_error(estimated_top_k_mask(key, theta_hat, k), truth)
    )(jax.random.split(jax.random.key(0), 20_000))
    # items 0, 7, 1 are in; one slot of four tied items (2, 3, 4, 5), two of which (2, 3) are true top 4:
    # E hits = 1 (item 0) + 1 (item 1) + 2·(1/4) = 2.5, E H_K = (4 − 2.5)/4
    exact = float(expected_top_k_hamming(theta_hat, truth, k))
    assert exact == pytest.approx(1.5 / 4, abs=1e-15)
    assert float(draws.mean()) == pytest.approx(
        exact, abs=4 * float(draws.std()) / math.sqrt(draws.size)
    )
    distinct = jnp.asarray([0.3, 2.0, -1.0, 0.5, 1.0, -0.2])
    true6 = true_top_k_mask(jnp.asarray([1.0, 0.9, 0.8, -0.1, -0.5, -2.0]), 3)
    plain = relative_hamming_error(estimated_top_k_mask(jax.random.key(1), distinct, 3), true6)
    assert float(expected_top_k_hamming(distinct, true6, 3)) == pytest.approx(
        float(plain), abs=1e-15
    )
    assert float(expected_top_k_hamming(-jnp.arange(6.0), true6, 3)) == 0.0
    assert float(expected_top_k_hamming(jnp.arange(6.0), true6, 3)) == 1.0
    with pytest.raises(ValueError, match="k=6"):
        expected_top_k_hamming(distinct, true6, 6)
