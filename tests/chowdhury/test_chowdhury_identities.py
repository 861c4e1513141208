"""chowdhury estimator identities and plumbing (chowdhury eq. (3), Theorem 4.1; eqs. (4)–(6), §4.2; docs/chowdhury.md, Mechanisms and estimators; Experiments as run):

* the de-biased loss (eq. (4)) equals its de-biased-label form, its gradient is Σ(p̃₁(z) − ỹ)x
  and its Hessian is label-free; the naive loss is the likelihood of the privatised labels
  (App. C's p̃), with the paper's V_{θ,i} gradient and a closed-form Hessian;
* the projection onto Θ_B against SciPy's SLSQP and a brute-force search;
* the semi-norm and squared-error metrics against their matrix forms;
* input validation, vmap over replicates and traced ε/δ with no batched LAPACK call.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

import dpsim  # noqa: F401
from dpsim.estimators.linear_btl import (
    rr_debiased_loss,
    rr_debiased_loss_label_form,
    rr_naive_loss,
    rr_naive_objective,
    rr_privatised_probability,
)
from dpsim.estimators import linear_btl as unjitted
from dpsim.linalg import batched_lapack_calls
from dpsim.mechanisms.objective_perturbation import gaussian_objective_perturbation
from dpsim.mechanisms.randomized_response import randomized_response
from dpsim.metrics import feature_estimation_metrics, seminorm_error, squared_l2_error
from dpsim.models.linear_btl import sample_linear_btl, theta_faithful
from dpsim.solvers import project_ball
from chowdhury_fits import D, THETA, alg2, draw_data, draw_rr, mle, rr_debiased, rr_naive_mle


# ---------------------------------------------------------------------------------------
# Identities (chowdhury eqs. (4)–(6), §4.2; eq. (3), Theorem 4.1)
# ---------------------------------------------------------------------------------------
loss = jax.jit(rr_debiased_loss)
loss_label_form = jax.jit(rr_debiased_loss_label_form)
loss_grad = jax.jit(jax.grad(rr_debiased_loss))
loss_hess = jax.jit(jax.hessian(rr_debiased_loss))


@pytest.mark.parametrize("eps", [0.1, 0.7, 3.0])
def test_debiased_loss_equals_label_form_and_gradient_forms(eps):
    data = draw_data(300)
    yt = draw_rr(data.y, eps)
    rng = np.random.default_rng(0)
    keep = 1 / (1 + math.exp(-eps))
    for _ in range(3):
        theta = jnp.asarray(rng.normal(size=D))
        z = np.asarray(data.x @ theta)
        # eq. (5) scores written directly: p̂₁ = σ^{σ(ε)}/(1−σ)^{1−σ(ε)}, p̂₀ = (1−σ)^{σ(ε)}/σ^{1−σ(ε)}
        s = 1 / (1 + np.exp(-z))
        p1_hat = s**keep / (1 - s) ** (1 - keep)
        p0_hat = (1 - s) ** keep / s ** (1 - keep)
        np.testing.assert_allclose(np.log(p1_hat / p0_hat), z, atol=1e-10)  # logit identity
        paper = -np.mean(np.where(np.asarray(yt) == 1, np.log(p1_hat), np.log(p0_hat)))
        assert float(loss(theta, data.x, yt, eps)) == pytest.approx(paper, rel=1e-10)
        assert float(loss_label_form(theta, data.x, yt, eps)) == pytest.approx(paper, rel=1e-10)
        grad = loss_grad(theta, data.x, yt, eps)
        p_tilde = np.asarray(rr_privatised_probability(jnp.asarray(z), eps))
        np.testing.assert_allclose(
            grad, np.asarray(data.x).T @ (p_tilde - np.asarray(yt)) / 300, atol=1e-12
        )
        hess = loss_hess(theta, data.x, yt, eps)
        hess_flipped = loss_hess(theta, data.x, 1 - yt, eps)
        X = np.asarray(data.x)
        np.testing.assert_allclose(
            hess, (2 * keep - 1) * (X.T * (s * (1 - s))) @ X / 300, atol=1e-12
        )
        np.testing.assert_allclose(hess, hess_flipped, atol=1e-12)  # label-free


@jax.jit
def naive_pieces(theta, x, y_tilde, eps):
    objective = rr_naive_objective(x, y_tilde, eps)
    return (*objective.evaluate(theta), jax.hessian(objective.value)(theta))


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_naive_loss_is_the_privatised_likelihood_with_the_papers_gradient(eps):
    data = draw_data(200)
    yt = np.asarray(draw_rr(data.y, eps))
    X = np.asarray(data.x)
    theta = jnp.asarray([0.4, -1.2, 2.0, 0.1])
    z = X @ np.asarray(theta)
    # App. C: p̃₁ = (1 + e^−ε e^−z)/((1 + e^−z)(1 + e^−ε)), p̃₀ = (e^−ε + e^−z)/((1 + e^−z)(1 + e^−ε))
    p1 = (1 + np.exp(-eps - z)) / ((1 + np.exp(-z)) * (1 + np.exp(-eps)))
    p0 = (np.exp(-eps) + np.exp(-z)) / ((1 + np.exp(-z)) * (1 + np.exp(-eps)))
    np.testing.assert_allclose(p1 + p0, 1.0, atol=1e-14)
    nll = -np.mean(yt * np.log(p1) + (1 - yt) * np.log(p0))
    assert float(jax.jit(rr_naive_loss)(theta, data.x, jnp.asarray(yt), eps)) == pytest.approx(
        nll, rel=1e-12
    )
    # chowdhury eq. (3), Theorem 4.1: ∇ = −(1/n)Σ V x with the paper's V_{θ,i}
    ez = np.exp(-z)
    V = np.where(
        yt == 1,
        ez / (1 + ez) - np.exp(-eps) * ez / (1 + np.exp(-eps) * ez),
        ez / (1 + ez) - ez / (np.exp(-eps) + ez),
    )
    f, g, model, hess = naive_pieces(theta, data.x, jnp.asarray(yt), eps)
    assert float(f) == pytest.approx(nll, rel=1e-12)
    np.testing.assert_allclose(g, -X.T @ V / 200, atol=1e-12)
    hess = np.asarray(hess)
    fisher_w = ((2 / (1 + np.exp(-eps)) - 1) * ez / (1 + ez) ** 2) ** 2 / (p1 * p0)
    fisher = (X.T * fisher_w) @ X / 200
    expected = hess if np.linalg.eigvalsh(hess)[0] > 0 else fisher
    np.testing.assert_allclose(model, expected, atol=1e-10)


# ---------------------------------------------------------------------------------------
# Projection (docs/chowdhury.md, Mechanisms and estimators)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("sum_zero", [False, True])
def test_projection_matches_scipy_and_brute_force(sum_zero):
    rng = np.random.default_rng(3)
    for radius in (0.5, 2.0, 10.0):
        for _ in range(4):
            v = rng.normal(size=5) * 2 + (1.5 if sum_zero else 0.0)
            proj = np.asarray(project_ball(jnp.asarray(v), radius, sum_zero))
            cons = [{"type": "ineq", "fun": lambda t: radius**2 - t @ t, "jac": lambda t: -2 * t}]
            if sum_zero:
                cons.append(
                    {"type": "eq", "fun": lambda t: np.sum(t), "jac": lambda t: np.ones_like(t)}
                )
            ref = optimize.minimize(
                lambda t: np.sum((t - v) ** 2),
                np.zeros(5),
                jac=lambda t: 2 * (t - v),
                constraints=cons,
                method="SLSQP",
                options={"ftol": 1e-15, "maxiter": 500},
            )
            np.testing.assert_allclose(proj, ref.x, atol=1e-6)
            assert np.linalg.norm(proj) <= radius * (1 + 1e-12)
            if sum_zero:
                assert abs(proj.sum()) < 1e-12
            # brute force: no feasible random point is closer
            cand = rng.normal(size=(20000, 5))
            if sum_zero:
                cand -= cand.mean(axis=1, keepdims=True)
            cand *= (
                radius
                * rng.uniform(size=(20000, 1)) ** 0.25
                / np.linalg.norm(cand, axis=1, keepdims=True)
            )
            assert np.min(np.sum((cand - v) ** 2, axis=1)) >= np.sum((proj - v) ** 2) - 1e-12
            np.testing.assert_allclose(
                project_ball(jnp.asarray(proj), radius, sum_zero), proj, atol=1e-14
            )


# ---------------------------------------------------------------------------------------
# Metrics (docs/chowdhury.md, Experiments as run)
# ---------------------------------------------------------------------------------------
def test_seminorm_and_squared_error_against_the_matrix_form():
    data = draw_data(300, seed=16)
    X = np.asarray(data.x)
    v_hat = jnp.asarray([0.3, 0.1, -0.2, 0.9])
    v = np.asarray(v_hat - THETA)
    for lam in (0.0, 0.7):
        expected = math.sqrt(v @ (X.T @ X / 300 + lam * np.eye(D)) @ v)
        assert float(seminorm_error(v_hat, THETA, data.x, lam)) == pytest.approx(
            expected, rel=1e-12
        )
    assert float(squared_l2_error(v_hat, THETA)) == pytest.approx(v @ v, rel=1e-14)
    m = feature_estimation_metrics(v_hat, THETA, data.x)
    assert set(m) == {"l2", "mse", "seminorm"} and float(m["l2"]) ** 2 == pytest.approx(
        float(m["mse"])
    )


# ---------------------------------------------------------------------------------------
# Validation, vmap, LAPACK
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call, message",
    [
        (lambda x, y: unjitted.rr_debiased(x, y, 0.0, 1.0), "eps=0.0"),
        (lambda x, y: unjitted.rr_debiased(x, y, -1.0, 1.0), "eps=-1.0"),
        (lambda x, y: unjitted.rr_naive_mle(x, y, 1.0, 1.0, solver="lbfgs"), "solver='lbfgs'"),
        (lambda x, y: unjitted.mle(x, y, 0.0), "radius=0.0"),
        (lambda x, y: unjitted.mle(x, y[:-1], 1.0), r"y must have shape \(50,\)"),
        (lambda x, y: unjitted.mle(x[:, :0], y, 1.0), r"shape \(50, 0\)"),
        (
            lambda x, y: gaussian_objective_perturbation(jax.random.key(0), x, 1.0, 1.0, 1.0),
            "delta=1.0",
        ),
        (
            lambda x, y: gaussian_objective_perturbation(jax.random.key(0), x, 1.0, 0.0, 1.0),
            "delta=0.0",
        ),
        (
            lambda x, y: gaussian_objective_perturbation(jax.random.key(0), x, 0.0, 0.1, 1.0),
            "eps=0.0",
        ),
        (
            lambda x, y: gaussian_objective_perturbation(
                jax.random.key(0), x, 1.0, 0.1, 1.0, beta=-1.0
            ),
            "beta=-1.0",
        ),
        (
            lambda x, y: gaussian_objective_perturbation(
                jax.random.key(0), x, 1.0, 0.1, 1.0, privacy="local"
            ),
            "privacy='local'",
        ),
        (
            lambda x, y: unjitted.objective_perturbation(
                x,
                y,
                gaussian_objective_perturbation(jax.random.key(0), x, 1.0, 0.1, 1.0)._replace(
                    beta=-1.0
                ),
                1.0,
            ),
            "beta=-1.0",
        ),
        (
            lambda x, y: unjitted.objective_perturbation(
                x, y[:-1], gaussian_objective_perturbation(jax.random.key(0), x, 1.0, 0.1, 1.0), 1.0
            ),
            r"y must have shape \(50,\)",
        ),
    ],
)
def test_bad_inputs_raise_naming_the_value(call, message):
    data = draw_data(50)
    with pytest.raises(ValueError, match=message):
        call(data.x, data.y)


def test_vmap_over_replicates_and_traced_privacy_without_batched_lapack():
    """One compiled program per estimator, vmapped over 3 replicates and over (ε, δ)."""
    n, d = 400, 3

    def replicate(key, eps, delta):
        k_theta, k_data, k_rr, k_obj = jax.random.split(key, 4)
        theta = theta_faithful(k_theta, d).theta
        data = sample_linear_btl(k_data, theta, n)
        yt = randomized_response(k_rr, data.y, eps)
        radius = 2 * math.sqrt(d)
        fits = [
            mle(data.x, data.y, radius),
            rr_debiased(data.x, yt, eps, radius),
            rr_naive_mle(data.x, yt, eps, radius),
            alg2(k_obj, data.x, data.y, eps, delta, radius),
        ]
        return (
            jnp.stack([f.theta for f in fits]),
            jnp.stack([f.converged for f in fits]),
            jnp.stack([squared_l2_error(f.theta, theta) for f in fits]),
        )

    keys = jax.random.split(jax.random.key(20), 3)
    eps = jnp.asarray([0.5, 1.0, 2.0])
    delta = jnp.asarray([1e-3, 1e-3, 1e-2])
    batched = jax.jit(jax.vmap(replicate))
    assert batched_lapack_calls(batched.lower(keys, eps, delta).compile().as_text()) == []
    theta, converged, err = batched(keys, eps, delta)
    assert bool(jnp.all(converged)) and bool(jnp.all(jnp.isfinite(err)))
    order = jnp.asarray([2, 0, 1])  # batch-position independence: permuted lanes, same results
    theta_perm = batched(keys[order], eps[order], delta[order])[0]
    np.testing.assert_allclose(theta_perm, theta[order], atol=1e-9)
