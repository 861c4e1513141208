"""The Rasch model and the spectral estimator (nguyen §2–3, Algorithm 1): the sampler against
the exact response probabilities and a per-user reference sampler; the differential counts
against explicit loops; the detailed-balance identity of §3.1 on expected counts; β̂ against
a dense NumPy eigenvector and against a NumPy transcription of the authors' power-iteration
rules; consistency; the designs against the authors' seeded β*; the un-centred metric;
vmap safety and bad input."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpsim  # noqa: F401
from dpsim.estimators.spectral import (
    count_chain_stationary,
    differential_counts,
    regularise_counts,
    spectral_estimate,
)
from dpsim.linalg import batched_lapack_calls
from dpsim.metrics import rasch_l2_error
from dpsim.models.rasch import (
    authors_difficulties,
    expected_differential_counts,
    rasch_abilities,
    rasch_difficulties,
    rasch_probabilities,
    sample_rasch_responses,
    sample_rasch_responses_per_user,
)


def _data(seed=0, n_users=400, n_items=12, p=0.7):
    beta = rasch_difficulties(jax.random.key(seed), n_items)
    theta = rasch_abilities(jax.random.key(seed + 1), n_users)
    return theta, beta, sample_rasch_responses(jax.random.key(seed + 2), theta, beta, p)


def test_sampler_frequencies_match_the_model_and_the_reference_sampler():
    """P(observed) = p and P(correct | observed) = σ(θ_l − β_i) per entry, for the JAX
    sampler (4000 vmapped draws) and the per-user NumPy reference (2000 draws): every
    entry's frequency within 5 binomial SE (a 3 × 4 design with p = 0.6)."""
    theta = jnp.asarray([-1.0, 0.3, 2.0])
    beta = jnp.asarray([-0.5, 0.0, 0.8, 1.5])
    p = 0.6
    prob = np.asarray(rasch_probabilities(theta, beta))
    draws = jax.jit(jax.vmap(lambda k: sample_rasch_responses(k, theta, beta, p)))(
        jax.random.split(jax.random.key(3), 4000)
    )
    rng = np.random.default_rng(4)
    ref = [sample_rasch_responses_per_user(rng, theta, beta, p) for _ in range(2000)]
    for x, obs in (
        (np.asarray(draws.x), np.asarray(draws.observed)),
        (np.stack([r.x for r in ref]), np.stack([r.observed for r in ref])),
    ):
        reps = x.shape[0]
        assert not np.any(x & ~obs)
        want_obs = p
        assert np.all(np.abs(obs.mean(axis=0) - want_obs) <= 5 * math.sqrt(p * (1 - p) / reps))
        want = p * prob
        assert np.all(np.abs(x.mean(axis=0) - want) <= 5 * np.sqrt(want * (1 - want) / reps))


def test_differential_counts_match_explicit_loops():
    _, _, r = _data(n_users=60, n_items=7, p=0.6)
    x, obs = np.asarray(r.x), np.asarray(r.observed)
    want = np.zeros((7, 7))
    for l in range(60):
        for i in range(7):
            for j in range(7):
                if i != j and obs[l, i] and obs[l, j] and x[l, i] and not x[l, j]:
                    want[i, j] += 1
    np.testing.assert_array_equal(np.asarray(differential_counts(r.x, r.observed)), want)
    # full observation by default
    np.testing.assert_array_equal(
        np.asarray(differential_counts(r.x)),
        np.asarray(differential_counts(r.x, jnp.ones_like(r.x))),
    )


def test_differential_counts_are_exact_in_both_precisions(monkeypatch):
    """The float32 product (users ≤ 2²⁴) and the float64 one give the same whole counts, equal
    to NumPy's integer product, under jit and vmap too (the engine's setting)."""
    from dpsim.estimators import spectral

    rng = np.random.default_rng(3)
    x, obs = rng.random((4, 1500, 30)) < 0.5, rng.random((4, 1500, 30)) < 0.9
    right, wrong = (x & obs).astype(np.int64), (~x & obs).astype(np.int64)
    want = np.einsum("rli,rlj->rij", right, wrong) * (1 - np.eye(30, dtype=np.int64))

    def product_dtypes():
        jaxpr = jax.make_jaxpr(jax.vmap(spectral.differential_counts))(x, obs).jaxpr
        return {
            str(v.aval.dtype)
            for e in jaxpr.eqns
            if e.primitive.name == "dot_general"
            for v in e.invars
        }

    fast = jax.jit(jax.vmap(spectral.differential_counts))(x, obs)
    assert fast.dtype == jnp.float64 and product_dtypes() == {"float32"}  # users (axis 0) ≤ 2²⁴
    np.testing.assert_array_equal(np.asarray(fast), want)
    monkeypatch.setattr(spectral, "EXACT_FLOAT32_COUNT", 1000)  # 1500 users: the float64 path
    assert product_dtypes() == {"float64"}
    np.testing.assert_array_equal(np.asarray(jax.vmap(spectral.differential_counts)(x, obs)), want)


def test_detailed_balance_on_expected_counts_and_exact_recovery():
    """e^{β_i}E[Y_ij] = e^{β_j}E[Y_ji] (§3.1), so the chain on E[Y] (λ = 0) has π ∝ e^{β*}
    and the estimator returns the centred β* exactly."""
    theta = rasch_abilities(jax.random.key(5), 300)
    beta = rasch_difficulties(jax.random.key(6), 9)
    ey = np.asarray(expected_differential_counts(theta, beta, 0.7))
    b = np.asarray(beta)
    lhs = np.exp(b)[:, None] * ey
    np.testing.assert_allclose(lhs, lhs.T, rtol=1e-12)
    pi = np.asarray(count_chain_stationary(jnp.asarray(ey)))
    np.testing.assert_allclose(pi, np.exp(b) / np.exp(b).sum(), rtol=1e-10)
    fit = spectral_estimate(ey, lam=0.0)
    np.testing.assert_allclose(np.asarray(fit.theta), b - b.mean(), atol=1e-10)


def _regularise_np(Y, lam=1.0):
    R = ((Y != 0) | (Y.T != 0)) & ~np.eye(len(Y), dtype=bool)
    return Y + lam * R


def test_exact_solve_matches_a_dense_numpy_eigenvector():
    _, _, r = _data(seed=7, n_users=300, n_items=15, p=0.5)
    Y = np.asarray(differential_counts(r.x, r.observed))
    Ybar = _regularise_np(Y)
    d = Ybar.sum(axis=1).max() + 1
    P = Ybar / d
    P[np.diag_indices(15)] = 1 - P.sum(axis=1)
    vals, vecs = np.linalg.eig(P.T)
    v = np.real(vecs[:, np.argmin(np.abs(vals - 1))])
    v = v / v.sum()
    want = np.log(v) - np.log(v).mean()
    fit = spectral_estimate(Y)
    assert fit.converged is None and bool(fit.info["connected"])
    np.testing.assert_allclose(np.asarray(fit.theta), want, atol=1e-9)
    np.testing.assert_allclose(np.asarray(regularise_counts(Y)), Ybar)


def _authors_power(Y, lazy: bool):
    """NumPy transcription of the authors' rules (docs/nguyen.md, Mechanisms and estimators (a) non-private jump chain,
    (b)/docs/nguyen.md, Mechanisms and estimators private lazy chain)."""
    Ybar = _regularise_np(Y)
    m = len(Y)
    if lazy:
        d = np.full(m, Ybar.sum(axis=1).max() + 1)
        tol, cap = 1e-5, 1000
    else:
        d = np.maximum(Ybar.sum(axis=1), 1)
        tol, cap = 1e-6, 10000
    P = Ybar / d[:, None]
    P[np.diag_indices(m)] = 1 - P.sum(axis=1)
    pi = np.ones(m)
    iterations = 0
    for _ in range(cap):
        nxt = pi @ P
        nxt = nxt / nxt.sum()
        iterations += 1
        done = np.linalg.norm(nxt - pi) < tol
        pi = nxt
        if done:
            break
    z = pi / d if not lazy else pi / pi.sum()
    return np.log(z) - np.log(z).mean(), iterations


@pytest.mark.parametrize("solver, lazy", [("power_jump", False), ("power_lazy", True)])
def test_power_modes_follow_the_authors_rules(solver, lazy):
    _, _, r = _data(seed=9, n_users=200, n_items=10, p=0.8)
    Y = np.asarray(differential_counts(r.x, r.observed))
    want, iterations = _authors_power(Y, lazy)
    fit = spectral_estimate(Y, solver=solver)
    assert bool(fit.converged) and int(fit.iterations) == iterations
    np.testing.assert_allclose(np.asarray(fit.theta), want, atol=1e-12)
    # within the truncation error of the exact solution
    exact = np.asarray(spectral_estimate(Y).theta)
    assert np.max(np.abs(np.asarray(fit.theta) - exact)) < 1e-2
    capped = spectral_estimate(Y, solver=solver, max_iters=2)
    assert not bool(capped.converged) and int(capped.iterations) == 2


def test_error_shrinks_like_one_over_root_n():
    """Mean ℓ2 error over 16 replicates at n = 1000 and 4000 (m = 20, p = 1, bounded
    parameters): the ratio should be ≈ 1/2 (Thm 3.1 / R2 slope −1/2); accepted in
    [0.35, 0.65] (the ratio's Monte-Carlo SE is ≈ 0.03)."""
    beta = rasch_difficulties(jax.random.key(10), 20, "uniform")

    def err(key, n):
        k_t, k_x = jax.random.split(key)
        theta = rasch_abilities(k_t, n, "uniform")
        r = sample_rasch_responses(k_x, theta, beta, 1.0)
        return rasch_l2_error(spectral_estimate(differential_counts(r.x, r.observed)).theta, beta)

    keys = jax.random.split(jax.random.key(11), 16)
    e1 = float(jnp.mean(jax.jit(jax.vmap(lambda k: err(k, 1000)))(keys)))
    e4 = float(jnp.mean(jax.jit(jax.vmap(lambda k: err(k, 4000)))(keys)))
    assert 0.35 <= e4 / e1 <= 0.65


def test_disconnected_support_is_flagged():
    Y = np.zeros((4, 4))
    Y[0, 1] = Y[1, 0] = 3
    Y[2, 3] = 5
    assert not bool(spectral_estimate(Y).info["connected"])
    Y[1, 2] = 1
    assert bool(spectral_estimate(Y).info["connected"])


def test_vmapped_estimator_has_no_batched_lapack():
    theta, beta, _ = _data()

    def one(key):
        r = sample_rasch_responses(key, theta, beta, 0.7)
        return spectral_estimate(differential_counts(r.x, r.observed)).theta

    hlo = jax.jit(jax.vmap(one)).lower(jax.random.split(jax.random.key(0), 4)).compile().as_text()
    assert batched_lapack_calls(hlo) == []


def test_designs_and_the_authors_seeded_beta():
    """β* replayed with seed 119 on NumPy's legacy RandomState (docs/nguyen.md, Experiments as run):
    mean(β*) and κ per m."""
    for m, mean, kappa in (
        (25, 0.1367, 4.04),
        (50, 0.0500, 4.23),
        (100, -0.0039, 4.61),
        (200, 0.0248, 5.11),
    ):
        b = authors_difficulties(m)
        assert b.mean() == pytest.approx(mean, abs=6e-5)
        assert b.max() - b.min() == pytest.approx(kappa, abs=6e-3)
        assert np.linalg.norm(b - b.mean()) > 0
    b = rasch_difficulties(jax.random.key(0), 30)
    assert abs(float(b.mean())) < 1e-14
    raw = rasch_difficulties(jax.random.key(0), 30, "uniform", centred=False)
    assert float(raw.min()) >= -1 and float(raw.max()) <= 1
    np.testing.assert_allclose(
        np.asarray(rasch_difficulties(jax.random.key(0), 30, "uniform")),
        np.asarray(raw - raw.mean()),
    )


def test_uncentred_paper_metric_adds_the_mean_floor():
    """‖β̂ − β*‖² = ‖β̂ − β*_c‖² + m·mean(β*)² for a centred β̂ (docs/nguyen.md, Errata and modes (Q1)): the floor
    √m·|mean| = 0.683 at m = 25 under the authors' seed."""
    beta = authors_difficulties(25)
    beta_hat = jnp.asarray(beta - beta.mean() + 0.1 * np.random.default_rng(0).standard_normal(25))
    beta_hat = beta_hat - beta_hat.mean()
    centred = float(rasch_l2_error(beta_hat, beta))
    paper = float(rasch_l2_error(beta_hat, beta, mode="paper"))
    assert paper**2 == pytest.approx(centred**2 + 25 * beta.mean() ** 2, rel=1e-12)
    assert float(rasch_l2_error(beta - beta.mean(), beta, mode="paper")) == pytest.approx(
        0.683, abs=1e-3
    )
    with pytest.raises(ValueError, match="mode='raw'"):
        rasch_l2_error(beta_hat, beta, mode="raw")


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: sample_rasch_responses(jax.random.key(0), jnp.zeros(3), jnp.zeros(4), 0.0),
            "p=0.0",
        ),
        (
            lambda: sample_rasch_responses(jax.random.key(0), jnp.zeros(3), jnp.zeros(4), 1.5),
            "p=1.5",
        ),
        (
            lambda: sample_rasch_responses(jax.random.key(0), jnp.zeros(3), jnp.zeros(1), 1.0),
            "n_items ≥ 2",
        ),
        (lambda: rasch_difficulties(jax.random.key(0), 1), "n_items=1"),
        (lambda: rasch_difficulties(jax.random.key(0), 5, "cauchy"), "design='cauchy'"),
        (lambda: spectral_estimate(jnp.ones((3, 3)), solver="eig"), "solver='eig'"),
    ],
)
def test_bad_input_names_the_value(call, message):
    with pytest.raises(ValueError, match=message):
        call()
