"""chowdhury exact estimators (chowdhury §4; Algorithm 2, §5, App. D) against SciPy on the same data, to 1e-6:
a NumPy objective solved by ``trust-exact`` (or BFGS for the non-convex naive likelihood) and,
when the constraint binds, Brent's root of ‖θ(μ)‖ = B over the Lagrangian ridge μ; with
sum-zero in an orthonormal basis of 1^⊥. (Identities, projection, validation and vmap:
test_chowdhury_identities.py.)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

import dpsim  # noqa: F401
from dpsim.estimators.linear_btl import objective_perturbation
from dpsim.mechanisms.objective_perturbation import gaussian_objective_perturbation
from chowdhury_fits import D, alg2, draw_data, draw_rr, mle, rr_debiased, rr_naive_mle


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


def _scipy_ball_minimiser(f, g, h, d, radius, sum_zero=False):
    """argmin over {‖θ‖ ≤ B} (∩ 1^⊥): unconstrained solve, else Brent on the Lagrangian ridge."""
    if sum_zero:  # orthonormal basis V of 1^⊥: θ = Vφ, ‖θ‖ = ‖φ‖
        V = np.linalg.svd(np.eye(d) - 1.0 / d)[0][:, : d - 1]
        fr, gr, hr = (
            (lambda p: f(V @ p)),
            (lambda p: V.T @ g(V @ p)),
            (lambda p: V.T @ h(V @ p) @ V),
        )
        phi = _scipy_ball_minimiser(fr, gr, hr, d - 1, radius)
        return V @ phi
    last = [np.zeros(d)]

    def solve(mu, maxiter=2000):
        start = (
            last[0]
            if np.linalg.norm(last[0]) <= 2 * radius
            else last[0] * radius / np.linalg.norm(last[0])
        )
        res = optimize.minimize(
            lambda th: f(th) + 0.5 * mu * th @ th,
            start,
            jac=lambda th: g(th) + mu * th,
            hess=lambda th: h(th) + mu * np.eye(d),
            method="trust-exact",
            options={"gtol": 1e-13, "maxiter": maxiter},
        )
        last[0] = res.x  # warm start for Brent's next ridge
        return res.x

    free = solve(0.0, maxiter=200)  # unbounded below at small ε: stops early, outside
    if np.linalg.norm(free) <= radius and np.all(np.isfinite(free)):
        return free
    mu = optimize.brentq(
        lambda m: np.linalg.norm(solve(m)) - radius, 1e-8, 1e3, xtol=1e-15, rtol=1e-14
    )
    return solve(mu)


def _numeric_hessian(g, th, step=1e-6):
    """Central differences of the gradient ``g`` at ``th``, symmetrised; shape (d, d)."""
    d = th.size
    cols = [(g(th + step * e) - g(th - step * e)) / (2 * step) for e in np.eye(d)]
    hess = np.column_stack(cols)
    return (hess + hess.T) / 2


def _ball_kkt(g, th, radius):
    """The KKT quantities of min f on {‖θ‖ ≤ B} at ``th``: the multiplier μ ≥ 0 that best fits
    ∇f + μθ = 0 (0 inside the ball), the gradient residual ‖∇f + μθ‖, and whether θ is on the
    boundary (‖θ‖ = B to 1e-12 relative)."""
    grad = g(th)
    on_boundary = abs(np.linalg.norm(th) - radius) <= 1e-12 * radius
    mu = max(0.0, -(grad @ th) / (th @ th)) if on_boundary else 0.0
    return mu, float(np.linalg.norm(grad + mu * th)), on_boundary


def _tangent_curvature(g, th, mu, on_boundary):
    """Smallest eigenvalue of the Lagrangian's Hessian ∇²f + μI on the tangent space of the
    active constraint (all of R^d inside the ball): a KKT residual r then places θ within about
    r / curvature of the exact stationary point."""
    hess = _numeric_hessian(g, th) + mu * np.eye(th.size)
    if on_boundary:  # orthonormal basis of θ^⊥
        basis = np.linalg.svd(np.eye(th.size) - np.outer(th, th) / (th @ th))[0][:, : th.size - 1]
        hess = basis.T @ hess @ basis
    return float(np.linalg.eigvalsh(hess)[0])


def _kkt_polished(g, th, radius, steps=20):
    """Newton's method on the KKT system of min f on {‖θ‖ ≤ B} from ``th`` (the stationarity
    equations inside the ball; with the active constraint ‖θ‖² = B² and its multiplier on the
    boundary), with the Hessian from central differences of ``g``."""
    th = th.copy()
    on_boundary = np.linalg.norm(th) >= radius * (1 - 1e-6)
    if on_boundary:
        th *= radius / np.linalg.norm(th)
    mu = _ball_kkt(g, th, radius)[0] if on_boundary else 0.0
    d = th.size
    for _ in range(steps):
        hess = _numeric_hessian(g, th) + mu * np.eye(d)
        if on_boundary:
            system = np.block([[hess, th[:, None]], [th[None, :], np.zeros((1, 1))]])
            rhs = -np.append(g(th) + mu * th, (th @ th - radius**2) / 2)
            delta = np.linalg.solve(system, rhs)
            th, mu = th + delta[:d], mu + delta[d]
            th *= radius / np.linalg.norm(th)
        else:
            th = th - np.linalg.solve(hess, g(th))
    return th


def _scipy_slsqp_ball_minimiser(f, g, radius, x0, atol):
    """A stationary point of f on {‖θ‖ ≤ B} near ``x0``: SciPy's SLSQP with the ball as an
    inequality constraint, polished by Newton's method on the KKT system, and accepted by the
    KKT conditions rather than by an optimiser's status flag (SLSQP's at ``ftol`` 1e-16 depends
    on the CPU on this flat boundary optimum, Hessian eigenvalues ~2e-4 at ε = 0.1).

    Asserted: the constraint (‖θ‖ ≤ B), complementary slackness (μ ≥ 0, and μ = 0 unless
    ‖θ‖ = B), and a gradient residual ‖∇f + μθ‖ at most 0.1 · ``atol`` · λ, λ the Lagrangian's
    smallest tangent curvature (> 0: a strict local minimum), so the reference lies within
    about 0.1 · ``atol`` of the exact KKT point. ``radius`` finite. Returns θ, shape (d,)."""
    ball = {"type": "ineq", "fun": lambda th: radius**2 - th @ th, "jac": lambda th: -2 * th}
    res = optimize.minimize(
        f, x0, jac=g, method="SLSQP", constraints=[ball], options={"ftol": 1e-16, "maxiter": 1000}
    )
    th = _kkt_polished(g, res.x, radius)
    mu, residual, on_boundary = _ball_kkt(g, th, radius)
    curvature = _tangent_curvature(g, th, mu, on_boundary)
    assert np.linalg.norm(th) <= radius * (1 + 1e-12)
    assert mu >= 0 and (on_boundary or mu == 0)
    assert curvature > 0, curvature
    assert residual <= 0.1 * atol * curvature, (residual, curvature)
    return th


def test_mle_matches_scipy_inside_and_on_the_ball():
    data = draw_data(1500, seed=5)
    X, y = np.asarray(data.x), np.asarray(data.y)
    f, g, h = _np_objective(X, y)
    for radius, sum_zero in [
        (math.inf, False),
        (10.0, False),
        (0.8, False),
        (0.8, True),
        (10.0, True),
    ]:
        fit = mle(data.x, data.y, radius, sum_zero=sum_zero)
        assert bool(fit.converged)
        ref = _scipy_ball_minimiser(f, g, h, D, radius, sum_zero)
        np.testing.assert_allclose(fit.theta, ref, atol=1e-6)
        assert bool(fit.info["on_boundary"]) == (radius == 0.8)


@pytest.mark.parametrize("eps, radius", [(0.1, 2.0), (0.5, 2.0), (1.0, 5.0), (3.0, math.inf)])
def test_debiased_rr_matches_scipy(eps, radius):
    data = draw_data(1500, seed=6)
    yt = draw_rr(data.y, eps, seed=7)
    X = np.asarray(data.x)
    ybar = (np.asarray(yt) * (math.exp(eps) + 1) - 1) / (math.exp(eps) - 1)
    f, g, h = _np_objective(X, ybar)
    fit = rr_debiased(data.x, yt, eps, radius)
    assert bool(fit.converged)
    np.testing.assert_allclose(fit.theta, _scipy_ball_minimiser(f, g, h, D, radius), atol=1e-6)
    fit0 = rr_debiased(data.x, yt, eps, radius, sum_zero=True)
    np.testing.assert_allclose(
        fit0.theta, _scipy_ball_minimiser(f, g, h, D, radius, True), atol=1e-6
    )


def test_debiased_rr_at_small_eps_sits_on_the_ball():
    """ȳ ∉ [0, 1] makes the loss unbounded below at small n·tanh²(ε/2) (chowdhury eqs. (4)–(6), §4.2 warning)."""
    data = draw_data(1500, seed=8)
    fit = rr_debiased(data.x, draw_rr(data.y, 0.1, seed=9), 0.1, 3.0)
    assert bool(fit.converged) and bool(fit.info["on_boundary"])
    assert float(jnp.linalg.norm(fit.theta)) == pytest.approx(3.0, rel=1e-9)


def _naive_rr_objective(X, yt, eps):
    """The naive likelihood of ε-RR labels (its negative mean log and gradient) in NumPy."""

    def f(th):
        z = X @ th
        log_p1 = np.logaddexp(
            -np.logaddexp(0, -eps) - np.logaddexp(0, -z), -np.logaddexp(0, eps) - np.logaddexp(0, z)
        )
        log_p0 = np.logaddexp(
            -np.logaddexp(0, -eps) - np.logaddexp(0, z), -np.logaddexp(0, eps) - np.logaddexp(0, -z)
        )
        return -np.mean(yt * log_p1 + (1 - yt) * log_p0)

    def g(th):
        ez = np.exp(-(X @ th))
        V = np.where(
            yt == 1,
            ez / (1 + ez) - np.exp(-eps) * ez / (1 + np.exp(-eps) * ez),
            ez / (1 + ez) - ez / (np.exp(-eps) + ez),
        )
        return -X.T @ V / X.shape[0]

    return f, g


def _naive_rr_case(eps, radius):
    """(data, RR labels, f, g, reference) for the naive-likelihood comparisons."""
    data = draw_data(1500, seed=10)
    yt = np.asarray(draw_rr(data.y, eps, seed=11))
    f, g = _naive_rr_objective(np.asarray(data.x), yt, eps)
    start = np.asarray(rr_debiased(data.x, jnp.asarray(yt), eps, radius).theta)
    return data, yt, f, g, _scipy_slsqp_ball_minimiser(f, g, radius, x0=start, atol=1e-6)


@pytest.mark.parametrize("eps, radius", [(3.0, 10.0), (1.0, 10.0), (0.1, 2.0)])
def test_naive_rr_mle_matches_scipy_from_the_same_start(eps, radius):
    data, yt, f, g, ref = _naive_rr_case(eps, radius)
    # tol 1e-10 (the default 1e-8 is for flat boundary optima, where θ is determined only to
    # ~tol/curvature; this data set converges to 1e-10)
    fit = rr_naive_mle(data.x, jnp.asarray(yt), eps, radius, tol=1e-10)
    assert bool(fit.converged)
    np.testing.assert_allclose(fit.theta, ref, atol=1e-6)
    if eps == 3.0:  # plain projected gradient: slow, but the same stationary point
        gradient = rr_naive_mle(data.x, jnp.asarray(yt), eps, radius, solver="gradient")
        np.testing.assert_allclose(gradient.theta, ref, atol=1e-5)


@pytest.mark.parametrize("eps, radius", [(1.0, 10.0), (0.1, 2.0)])
def test_naive_rr_reference_rejects_a_perturbed_estimator(eps, radius):
    """The comparison can fail: an estimator that privatises at 2ε (the ε ↔ 2ε bug) or stops
    1e-5 along the boundary from the optimum is told apart from the reference, and the KKT
    acceptance refuses a point moved that far."""
    data, yt, f, g, ref = _naive_rr_case(eps, radius)
    wrong_eps = np.asarray(rr_naive_mle(data.x, jnp.asarray(yt), 2 * eps, radius, tol=1e-10).theta)
    assert np.abs(wrong_eps - ref).max() > 1e-4
    tangent = np.linalg.svd(np.eye(D) - np.outer(ref, ref) / (ref @ ref))[0][:, 0]
    moved = ref + 1e-5 * tangent
    moved *= min(1.0, radius / np.linalg.norm(moved))
    mu, residual, on_boundary = _ball_kkt(g, moved, radius)
    assert residual > 0.1 * 1e-6 * _tangent_curvature(g, moved, mu, on_boundary)


@pytest.mark.parametrize("radius, beta", [(math.inf, 3.0), (1.0, 3.0), (10.0, None)])
def test_objective_perturbation_matches_scipy_with_the_same_noise(radius, beta):
    data = draw_data(1500, seed=12)
    key = jax.random.key(13)
    fit = alg2(key, data.x, data.y, 0.5, 1e-3, radius, beta=beta)
    pert = gaussian_objective_perturbation(key, data.x, 0.5, 1e-3, radius, beta=beta)
    X, n = np.asarray(data.x), 1500
    assert float(pert.beta) == pytest.approx(math.sqrt(n) / radius if beta is None else beta)
    assert float(pert.feature_bound) == pytest.approx(np.linalg.norm(X, axis=1).max() / 2)
    f, g, h = _np_objective(
        X, np.asarray(data.y), ridge=float(pert.beta) / n, shift=np.asarray(pert.w) / n
    )
    np.testing.assert_allclose(fit.theta, _scipy_ball_minimiser(f, g, h, D, radius), atol=1e-6)
    assert bool(fit.info["privacy_certified"]) and float(fit.info["sigma"]) == pytest.approx(
        float(pert.sigma)
    )
    same = objective_perturbation(data.x, data.y, pert, radius)  # the same release, unjitted
    np.testing.assert_allclose(same.theta, fit.theta, atol=0)


def test_standard_dp_raises_the_ridge_and_needs_an_explicit_bound():
    data = draw_data(100, seed=14)
    with pytest.raises(ValueError, match="feature_bound"):
        gaussian_objective_perturbation(
            jax.random.key(0), data.x, 1.0, 1e-3, 5.0, privacy="standard"
        )
    pert = gaussian_objective_perturbation(
        jax.random.key(0), data.x, 0.5, 1e-3, 5.0, beta=0.1, feature_bound=2.0, privacy="standard"
    )
    assert float(pert.beta) == pytest.approx(4 * 2.0**2 / 0.5)
    assert float(pert.sigma) == pytest.approx(4 * 2.0 * math.sqrt(8 * math.log(4e3) + 1.0) / 0.5)


def test_eps_infinity_debiased_rr_is_the_mle():
    data = draw_data(1500, seed=15)
    np.testing.assert_allclose(
        rr_debiased(data.x, data.y, math.inf, 10.0).theta,
        mle(data.x, data.y, 10.0).theta,
        atol=1e-12,
    )
