"""chowdhury exact estimators (spec §4.0–4.3, §4.7) against independent references.

* The §4.3 identities: the de-biased loss (eq. (4)) equals its de-biased-label form, its
  gradient is Σ(p̃₁(z) − ỹ)x, its Hessian is label-free; the naive loss is the likelihood of
  the privatised labels, with the paper's V_{θ,i} gradient.
* The projection onto Θ_B against SciPy's SLSQP and a brute-force search.
* Every exact minimiser against SciPy on the same data, to 1e-6: a NumPy objective solved by
  ``trust-exact`` (or BFGS) and, when the constraint binds, Brent's root of ‖θ(μ)‖ = B over
  the Lagrangian ridge μ; with sum-zero in an orthonormal basis of 1^⊥.
* Input validation, vmap over replicates and traced ε/δ with no batched LAPACK call.
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
    draw_perturbation,
    mle,
    objective_perturbation,
    objective_perturbation_minimiser,
    rr_debiased,
    rr_debiased_loss,
    rr_debiased_loss_label_form,
    rr_naive_loss,
    rr_naive_mle,
    rr_naive_objective,
    rr_privatized_probability,
)
from dpsim.estimators import linear_btl as unjitted
from dpsim.linalg import batched_lapack_calls
from dpsim.mechanisms.randomized_response import randomized_response
from dpsim.metrics import feature_estimation_metrics, seminorm_error, squared_l2_error
from dpsim.models.linear_btl import sample_linear_btl, theta_faithful
from dpsim.solvers import project_ball

D = 4
# jitted once per shape: eager calls would compile every while_loop separately
mle = jax.jit(mle, static_argnames=("sum_zero",))
rr_debiased = jax.jit(rr_debiased, static_argnames=("sum_zero",))
rr_naive_mle = jax.jit(rr_naive_mle, static_argnames=("solver", "sum_zero", "max_iter"))
objective_perturbation = jax.jit(objective_perturbation, static_argnames=("privacy", "sum_zero"))
THETA = jnp.asarray([1.0, -0.5, 0.3, -0.8])


def _data(n, seed=0, theta=THETA):
    return sample_linear_btl(jax.random.key(seed), theta, n)


def _rr(y, eps, seed=1):
    return randomized_response(jax.random.key(seed), y, eps)


# ---------------------------------------------------------------------------------------
# Identities (spec §4.3, §4.2)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.1, 0.7, 3.0])
def test_debiased_loss_equals_label_form_and_gradient_forms(eps):
    data = _data(300)
    yt = _rr(data.y, eps)
    rng = np.random.default_rng(0)
    keep = 1 / (1 + math.exp(-eps))
    for _ in range(3):
        theta = jnp.asarray(rng.normal(size=D))
        z = np.asarray(data.x @ theta)
        # eq. (5) scores written directly: p̂₁ = σ^{σ(ε)}/(1−σ)^{1−σ(ε)}, p̂₀ = (1−σ)^{σ(ε)}/σ^{1−σ(ε)}
        s = 1 / (1 + np.exp(-z))
        p1_hat = s ** keep / (1 - s) ** (1 - keep)
        p0_hat = (1 - s) ** keep / s ** (1 - keep)
        np.testing.assert_allclose(np.log(p1_hat / p0_hat), z, atol=1e-10)   # logit identity
        paper = -np.mean(np.where(np.asarray(yt) == 1, np.log(p1_hat), np.log(p0_hat)))
        assert float(rr_debiased_loss(theta, data.x, yt, eps)) == pytest.approx(paper, rel=1e-10)
        assert float(rr_debiased_loss_label_form(theta, data.x, yt, eps)) == pytest.approx(paper, rel=1e-10)
        grad = jax.grad(rr_debiased_loss)(theta, data.x, yt, eps)
        p_tilde = np.asarray(rr_privatized_probability(jnp.asarray(z), eps))
        np.testing.assert_allclose(grad, np.asarray(data.x).T @ (p_tilde - np.asarray(yt)) / 300, atol=1e-12)
        hess = jax.hessian(rr_debiased_loss)(theta, data.x, yt, eps)
        hess_flipped = jax.hessian(rr_debiased_loss)(theta, data.x, 1 - yt, eps)
        X = np.asarray(data.x)
        np.testing.assert_allclose(hess, (2 * keep - 1) * (X.T * (s * (1 - s))) @ X / 300, atol=1e-12)
        np.testing.assert_allclose(hess, hess_flipped, atol=1e-12)               # label-free


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_naive_loss_is_the_privatised_likelihood_with_the_papers_gradient(eps):
    data = _data(200)
    yt = np.asarray(_rr(data.y, eps))
    X = np.asarray(data.x)
    theta = jnp.asarray([0.4, -1.2, 2.0, 0.1])
    z = X @ np.asarray(theta)
    # App. C: p̃₁ = (1 + e^−ε e^−z)/((1 + e^−z)(1 + e^−ε)), p̃₀ = (e^−ε + e^−z)/((1 + e^−z)(1 + e^−ε))
    p1 = (1 + np.exp(-eps - z)) / ((1 + np.exp(-z)) * (1 + np.exp(-eps)))
    p0 = (np.exp(-eps) + np.exp(-z)) / ((1 + np.exp(-z)) * (1 + np.exp(-eps)))
    np.testing.assert_allclose(p1 + p0, 1.0, atol=1e-14)
    nll = -np.mean(yt * np.log(p1) + (1 - yt) * np.log(p0))
    assert float(rr_naive_loss(theta, data.x, jnp.asarray(yt), eps)) == pytest.approx(nll, rel=1e-12)
    # spec §4.2: ∇ = −(1/n)Σ V x with the paper's V_{θ,i}
    ez = np.exp(-z)
    V = np.where(yt == 1, ez / (1 + ez) - np.exp(-eps) * ez / (1 + np.exp(-eps) * ez),
                 ez / (1 + ez) - ez / (np.exp(-eps) + ez))
    objective = rr_naive_objective(data.x, jnp.asarray(yt), eps)
    f, g, model = objective.evaluate(theta)
    assert float(f) == pytest.approx(nll, rel=1e-12)
    np.testing.assert_allclose(g, -X.T @ V / 200, atol=1e-12)
    hess = np.asarray(jax.hessian(objective.value)(theta))
    fisher_w = ((2 / (1 + np.exp(-eps)) - 1) * ez / (1 + ez) ** 2) ** 2 / (p1 * p0)
    fisher = (X.T * fisher_w) @ X / 200
    expected = hess if np.linalg.eigvalsh(hess)[0] > 0 else fisher
    np.testing.assert_allclose(model, expected, atol=1e-10)


# ---------------------------------------------------------------------------------------
# Projection (spec §4.0)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("sum_zero", [False, True])
def test_projection_matches_scipy_and_brute_force(sum_zero):
    rng = np.random.default_rng(3)
    for radius in (0.5, 2.0, 10.0):
        for _ in range(4):
            v = rng.normal(size=5) * 2 + (1.5 if sum_zero else 0.0)
            proj = np.asarray(project_ball(jnp.asarray(v), radius, sum_zero))
            cons = [{"type": "ineq", "fun": lambda t: radius ** 2 - t @ t, "jac": lambda t: -2 * t}]
            if sum_zero:
                cons.append({"type": "eq", "fun": lambda t: np.sum(t), "jac": lambda t: np.ones_like(t)})
            ref = optimize.minimize(lambda t: np.sum((t - v) ** 2), np.zeros(5), jac=lambda t: 2 * (t - v),
                                    constraints=cons, method="SLSQP", options={"ftol": 1e-15, "maxiter": 500})
            np.testing.assert_allclose(proj, ref.x, atol=1e-6)
            assert np.linalg.norm(proj) <= radius * (1 + 1e-12)
            if sum_zero:
                assert abs(proj.sum()) < 1e-12
            # brute force: no feasible random point is closer
            cand = rng.normal(size=(20000, 5))
            if sum_zero:
                cand -= cand.mean(axis=1, keepdims=True)
            cand *= (radius * rng.uniform(size=(20000, 1)) ** 0.25 / np.linalg.norm(cand, axis=1, keepdims=True))
            assert np.min(np.sum((cand - v) ** 2, axis=1)) >= np.sum((proj - v) ** 2) - 1e-12
            np.testing.assert_allclose(project_ball(jnp.asarray(proj), radius, sum_zero), proj, atol=1e-14)


# ---------------------------------------------------------------------------------------
# Exact minimisers against SciPy (to 1e-6)
# ---------------------------------------------------------------------------------------
def _np_objective(X, t, ridge=0.0, shift=None):
    n, d = X.shape
    shift = np.zeros(d) if shift is None else shift

    def f(th):
        z = X @ th
        return np.mean(np.logaddexp(0, z) - t * z) + 0.5 * ridge * th @ th + shift @ th

    def g(th):
        return X.T @ (1 / (1 + np.exp(-(X @ th))) - t) / n + ridge * th + shift

    def h(th):
        s = 1 / (1 + np.exp(-(X @ th)))
        return (X.T * (s * (1 - s))) @ X / n + ridge * np.eye(d)

    return f, g, h


def _scipy_ball_minimiser(f, g, h, d, radius, sum_zero=False, x0=None, method="trust-exact"):
    """argmin over {‖θ‖ ≤ B} (∩ 1^⊥): unconstrained solve, else Brent on the Lagrangian ridge."""
    if sum_zero:   # orthonormal basis V of 1^⊥: θ = Vφ, ‖θ‖ = ‖φ‖
        V = np.linalg.svd(np.eye(d) - 1.0 / d)[0][:, : d - 1]
        fr, gr, hr = (lambda p: f(V @ p)), (lambda p: V.T @ g(V @ p)), (lambda p: V.T @ h(V @ p) @ V)
        phi = _scipy_ball_minimiser(fr, gr, hr, d - 1, radius, x0=None, method=method)
        return V @ phi
    x0 = np.zeros(d) if x0 is None else x0

    def solve(mu):
        kw = dict(hess=lambda th: h(th) + mu * np.eye(d)) if method == "trust-exact" else {}
        res = optimize.minimize(lambda th: f(th) + 0.5 * mu * th @ th, x0, jac=lambda th: g(th) + mu * th,
                                method=method, options={"gtol": 1e-13, "maxiter": 2000}, **kw)
        return res.x

    free = solve(0.0)
    if np.linalg.norm(free) <= radius and np.all(np.isfinite(free)):
        return free
    mu = optimize.brentq(lambda m: np.linalg.norm(solve(m)) - radius, 1e-12, 1e3, xtol=1e-15, rtol=1e-14)
    return solve(mu)


def test_mle_matches_scipy_inside_and_on_the_ball():
    data = _data(1500, seed=5)
    X, y = np.asarray(data.x), np.asarray(data.y)
    f, g, h = _np_objective(X, y)
    for radius, sum_zero in [(math.inf, False), (10.0, False), (0.8, False), (0.8, True), (10.0, True)]:
        fit = mle(data.x, data.y, radius, sum_zero=sum_zero)
        assert bool(fit.converged)
        ref = _scipy_ball_minimiser(f, g, h, D, radius, sum_zero)
        np.testing.assert_allclose(fit.theta, ref, atol=1e-6)
        assert bool(fit.info["on_boundary"]) == (radius == 0.8)


@pytest.mark.parametrize("eps, radius", [(0.1, 2.0), (0.5, 2.0), (1.0, 5.0), (3.0, math.inf)])
def test_debiased_rr_matches_scipy(eps, radius):
    data = _data(1500, seed=6)
    yt = _rr(data.y, eps, seed=7)
    X = np.asarray(data.x)
    ybar = (np.asarray(yt) * (math.exp(eps) + 1) - 1) / (math.exp(eps) - 1)
    f, g, h = _np_objective(X, ybar)
    fit = rr_debiased(data.x, yt, eps, radius)
    assert bool(fit.converged)
    np.testing.assert_allclose(fit.theta, _scipy_ball_minimiser(f, g, h, D, radius), atol=1e-6)
    fit0 = rr_debiased(data.x, yt, eps, radius, sum_zero=True)
    np.testing.assert_allclose(fit0.theta, _scipy_ball_minimiser(f, g, h, D, radius, True), atol=1e-6)


def test_debiased_rr_at_small_eps_sits_on_the_ball():
    """ȳ ∉ [0, 1] makes the loss unbounded below at small n·tanh²(ε/2) (spec §4.3 warning)."""
    data = _data(1500, seed=8)
    fit = rr_debiased(data.x, _rr(data.y, 0.1, seed=9), 0.1, 3.0)
    assert bool(fit.converged) and bool(fit.info["on_boundary"])
    assert float(jnp.linalg.norm(fit.theta)) == pytest.approx(3.0, rel=1e-9)


@pytest.mark.parametrize("eps, radius", [(3.0, 10.0), (1.0, 10.0), (0.1, 2.0)])
def test_naive_rr_mle_matches_scipy_from_the_same_start(eps, radius):
    data = _data(1500, seed=10)
    yt = np.asarray(_rr(data.y, eps, seed=11))
    X = np.asarray(data.x)

    def f(th):
        z = X @ th
        log_p1 = np.logaddexp(-np.logaddexp(0, -eps) - np.logaddexp(0, -z), -np.logaddexp(0, eps) - np.logaddexp(0, z))
        log_p0 = np.logaddexp(-np.logaddexp(0, -eps) - np.logaddexp(0, z), -np.logaddexp(0, eps) - np.logaddexp(0, -z))
        return -np.mean(yt * log_p1 + (1 - yt) * log_p0)

    def g(th):
        ez = np.exp(-(X @ th))
        V = np.where(yt == 1, ez / (1 + ez) - np.exp(-eps) * ez / (1 + np.exp(-eps) * ez),
                     ez / (1 + ez) - ez / (np.exp(-eps) + ez))
        return -X.T @ V / X.shape[0]

    fit = rr_naive_mle(data.x, jnp.asarray(yt), eps, radius)
    assert bool(fit.converged)
    start = np.asarray(rr_debiased(data.x, jnp.asarray(yt), eps, radius).theta)
    ref = _scipy_ball_minimiser(f, g, None, D, radius, x0=start, method="BFGS")
    np.testing.assert_allclose(fit.theta, ref, atol=1e-6)
    if eps == 3.0:   # plain projected gradient: slow, but the same stationary point
        gradient = rr_naive_mle(data.x, jnp.asarray(yt), eps, radius, solver="gradient")
        np.testing.assert_allclose(gradient.theta, ref, atol=1e-5)


@pytest.mark.parametrize("radius, beta", [(math.inf, 3.0), (1.0, 3.0), (10.0, None)])
def test_objective_perturbation_matches_scipy_with_the_same_noise(radius, beta):
    data = _data(1500, seed=12)
    key = jax.random.key(13)
    fit = objective_perturbation(key, data.x, data.y, 0.5, 1e-3, radius, beta=beta)
    pert = draw_perturbation(key, data.x, 0.5, 1e-3, radius, beta=beta)
    X, n = np.asarray(data.x), 1500
    assert float(pert.beta) == pytest.approx(math.sqrt(n) / radius if beta is None else beta)
    assert float(pert.feature_bound) == pytest.approx(np.linalg.norm(X, axis=1).max() / 2)
    f, g, h = _np_objective(X, np.asarray(data.y), ridge=float(pert.beta) / n, shift=np.asarray(pert.w) / n)
    np.testing.assert_allclose(fit.theta, _scipy_ball_minimiser(f, g, h, D, radius), atol=1e-6)
    assert bool(fit.info["privacy_certified"]) and float(fit.info["sigma"]) == pytest.approx(float(pert.sigma))
    same = objective_perturbation_minimiser(data.x, data.y, pert.w, pert.beta, radius)
    np.testing.assert_allclose(same.theta, fit.theta, atol=0)


def test_standard_dp_raises_the_ridge_and_needs_an_explicit_bound():
    data = _data(100, seed=14)
    with pytest.raises(ValueError, match="feature_bound"):
        draw_perturbation(jax.random.key(0), data.x, 1.0, 1e-3, 5.0, privacy="standard")
    pert = draw_perturbation(jax.random.key(0), data.x, 0.5, 1e-3, 5.0, beta=0.1, feature_bound=2.0,
                             privacy="standard")
    assert float(pert.beta) == pytest.approx(4 * 2.0 ** 2 / 0.5)
    assert float(pert.sigma) == pytest.approx(4 * 2.0 * math.sqrt(8 * math.log(4e3) + 1.0) / 0.5)


def test_eps_infinity_debiased_rr_is_the_mle():
    data = _data(1500, seed=15)
    np.testing.assert_allclose(rr_debiased(data.x, data.y, math.inf, 10.0).theta,
                               mle(data.x, data.y, 10.0).theta, atol=1e-12)


# ---------------------------------------------------------------------------------------
# Metrics (spec §6.2)
# ---------------------------------------------------------------------------------------
def test_seminorm_and_squared_error_against_the_matrix_form():
    data = _data(300, seed=16)
    X = np.asarray(data.x)
    v_hat = jnp.asarray([0.3, 0.1, -0.2, 0.9])
    v = np.asarray(v_hat - THETA)
    for lam in (0.0, 0.7):
        expected = math.sqrt(v @ (X.T @ X / 300 + lam * np.eye(D)) @ v)
        assert float(seminorm_error(v_hat, THETA, data.x, lam)) == pytest.approx(expected, rel=1e-12)
    assert float(squared_l2_error(v_hat, THETA)) == pytest.approx(v @ v, rel=1e-14)
    m = feature_estimation_metrics(v_hat, THETA, data.x)
    assert set(m) == {"l2", "mse", "seminorm"} and float(m["l2"]) ** 2 == pytest.approx(float(m["mse"]))


# ---------------------------------------------------------------------------------------
# Validation, vmap, LAPACK
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, message", [
    (lambda x, y: unjitted.rr_debiased(x, y, 0.0, 1.0), "eps=0.0"),
    (lambda x, y: unjitted.rr_debiased(x, y, -1.0, 1.0), "eps=-1.0"),
    (lambda x, y: unjitted.rr_naive_mle(x, y, 1.0, 1.0, solver="lbfgs"), "solver='lbfgs'"),
    (lambda x, y: unjitted.mle(x, y, 0.0), "radius=0.0"),
    (lambda x, y: unjitted.mle(x, y[:-1], 1.0), r"y must have shape \(50,\)"),
    (lambda x, y: unjitted.mle(x[:, :0], y, 1.0), r"shape \(50, 0\)"),
    (lambda x, y: unjitted.objective_perturbation(jax.random.key(0), x, y, 1.0, 1.0, 1.0), "delta=1.0"),
    (lambda x, y: unjitted.objective_perturbation(jax.random.key(0), x, y, 1.0, 0.0, 1.0), "delta=0.0"),
    (lambda x, y: unjitted.objective_perturbation(jax.random.key(0), x, y, 0.0, 0.1, 1.0), "eps=0.0"),
    (lambda x, y: unjitted.objective_perturbation(jax.random.key(0), x, y, 1.0, 0.1, 1.0, beta=-1.0), "beta=-1.0"),
    (lambda x, y: unjitted.objective_perturbation(jax.random.key(0), x, y, 1.0, 0.1, 1.0, privacy="local"), "privacy='local'"),
])
def test_bad_inputs_raise_naming_the_value(call, message):
    data = _data(50)
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
        fits = [mle(data.x, data.y, radius), rr_debiased(data.x, yt, eps, radius),
                rr_naive_mle(data.x, yt, eps, radius),
                objective_perturbation(k_obj, data.x, data.y, eps, delta, radius)]
        return (jnp.stack([f.theta for f in fits]), jnp.stack([f.converged for f in fits]),
                jnp.stack([squared_l2_error(f.theta, theta) for f in fits]))

    keys = jax.random.split(jax.random.key(20), 3)
    eps = jnp.asarray([0.5, 1.0, 2.0])
    delta = jnp.asarray([1e-3, 1e-3, 1e-2])
    batched = jax.jit(jax.vmap(replicate))
    assert batched_lapack_calls(batched.lower(keys, eps, delta).compile().as_text()) == []
    theta, converged, err = batched(keys, eps, delta)
    assert bool(jnp.all(converged)) and bool(jnp.all(jnp.isfinite(err)))
    order = jnp.asarray([2, 0, 1])   # batch-position independence: permuted lanes, same results
    theta_perm = batched(keys[order], eps[order], delta[order])[0]
    np.testing.assert_allclose(theta_perm, theta[order], atol=1e-9)
