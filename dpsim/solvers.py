"""Batched convex solvers shared by estimators.

Written for one problem and ``vmap``-ed over replicates: every loop has a fixed
iteration cap (a vmapped ``while_loop`` runs until its slowest lane finishes), and the
result carries a convergence flag, a result code (:mod:`dpsim.results`: successful,
max_steps_reached, nonfinite) and the iteration count (DESIGN: performance).

The main solver is an inexact (truncated) Newton method: the Newton system is solved by
Jacobi-preconditioned conjugate gradients on Hessian–vector products, with the
Eisenstat–Walker forcing term η_k = min(1/2, √‖g_k‖), and globalised by Armijo
backtracking on the merit function ½‖∇f‖² (for a strongly convex f its only stationary point
is the minimiser, and the inexact Newton direction d satisfies ∇fᵀ∇²f d ≤ −(1−η)‖∇f‖²,
so d is a descent direction for it). Using the gradient norm instead of f avoids the
cancellation that makes f itself useless as a test near the optimum, and saves a pass
of n² logarithms per trial point. For the BTL objectives of this package the Hessian is a weighted graph
Laplacian plus γI whose Jacobi-preconditioned spectrum is tightly clustered, so CG needs
few matrix–vector products (11 per fit at n = 300, 7 Newton iterations) and avoids the
O(n³) dense factorisation per iteration: a dense-Cholesky Newton is slower at n = 300 on
CPU in the runner's micro-batches (benchmarks/cai.py, section S).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax

from dpsim.linalg import unbatched_on_cpu
from dpsim.results import solver_result

Array = jax.Array


class SmoothObjective(NamedTuple):
    """A twice-differentiable convex objective, described by three pure functions.

    ``evaluate(x) -> (grad, curvature)``: one fused pass; ``curvature`` is whatever
    ``hvp`` and ``hess_diag`` need (e.g. the Laplacian weights).
    ``hvp(curvature, v) -> H v``;  ``hess_diag(curvature) -> diag(H)`` (preconditioner).
    """

    evaluate: Callable[[Array], tuple[Array, Array, Any]]
    hvp: Callable[[Any, Array], Array]
    hess_diag: Callable[[Any], Array]


class SolverResult(NamedTuple):
    x: Array
    converged: Array  # bool: ‖∇f(x)‖∞ ≤ tol within max_iter
    iterations: Array  # Newton iterations taken
    grad_norm: Array  # ‖∇f(x)‖∞ at the returned x
    cg_iterations: Array  # total conjugate-gradient iterations
    result: Array  # int8 code (dpsim.results.RESULTS): why the solve stopped


def preconditioned_cg(
    matvec: Callable[[Array], Array], b: Array, inv_diag: Array, rtol, max_iter: int
) -> tuple[Array, Array]:
    """Solve H x = b by Jacobi-preconditioned CG from x = 0 until ‖r‖₂ ≤ rtol‖b‖₂.

    Returns (x, iterations). Started from 0, every iterate is a descent direction for
    b = −∇f, so a truncated solve is still usable by a line search.
    """
    z0 = inv_diag * b
    b_norm = jnp.linalg.norm(b)
    init = (jnp.zeros_like(b), b, z0, jnp.dot(b, z0), jnp.asarray(0))

    def cond(state):
        _, r, _, _, k = state
        return (jnp.linalg.norm(r) > rtol * b_norm) & (k < max_iter)

    def body(state):
        x, r, p, rz, k = state
        hp = matvec(p)
        php = jnp.dot(p, hp)
        alpha = jnp.where(php > 0, rz / jnp.where(php > 0, php, 1.0), 0.0)
        x = x + alpha * p
        r = r - alpha * hp
        z = inv_diag * r
        rz_new = jnp.dot(r, z)
        beta = jnp.where(rz > 0, rz_new / jnp.where(rz > 0, rz, 1.0), 0.0)
        return x, r, z + beta * p, rz_new, k + 1

    x, _, _, _, k = jax.lax.while_loop(cond, body, init)
    return x, k


def _backtrack(
    objective: SmoothObjective,
    x,
    grad,
    curvature,
    direction,
    max_backtracks: int,
    armijo: float = 1e-4,
):
    """Armijo backtracking on m(x) = ½‖∇f(x)‖² from step 1, halving.

    Along an inexact Newton direction m'(0) ≈ −2m(0), so the test is
    m(x + t d) ≤ (1 − 2·armijo·t)·m(x). ``grad`` and ``curvature`` are the current point's
    (the curvature's buffer is reused for the trial points'). Returns (x_new, g_new, curv_new).
    """
    merit = 0.5 * jnp.dot(grad, grad)

    def trial(t):
        x_t = x + t * direction
        g_t, c_t = objective.evaluate(x_t)
        return x_t, g_t, c_t

    def ok(t, g_t):
        m_t = 0.5 * jnp.dot(g_t, g_t)
        return jnp.isfinite(m_t) & (m_t <= (1.0 - 2.0 * armijo * t) * merit)

    # The full step t = 1 is the loop's first iteration (k = 0, from t = 2 and k = −1), so
    # the program holds one copy of ``evaluate`` here instead of two (XLA:CPU
    # compile time grows with the code); the trial points are the same.
    # The loop's curvature slot starts as the current point's ``curvature`` (never read:
    # the first iteration overwrites it), not a fresh array: XLA then updates that buffer
    # in place through both loops instead of copying the (n, n) curvature out of this loop
    # into the Newton loop's state every iteration (bit-identical results).
    init = (jnp.asarray(2.0), x, jnp.zeros_like(grad), curvature, jnp.asarray(-1))

    def cond(state):
        t, _, g_t, _, k = state
        return (k < 0) | ((~ok(t, g_t)) & (k < max_backtracks))

    def body(state):
        t, _, _, _, k = state
        t = 0.5 * t
        return (t, *trial(t), k + 1)

    _, x_t, g_t, c_t, _ = jax.lax.while_loop(cond, body, init)
    return x_t, g_t, c_t


def newton_cg(
    objective: SmoothObjective,
    x0: Array,
    *,
    tol: float = 1e-10,
    max_iter: int = 50,
    cg_max_iter: int = 100,
    max_backtracks: int = 30,
) -> SolverResult:
    """Minimise a smooth strongly convex objective by truncated Newton (module docstring).

    Stops when ‖∇f‖∞ ≤ tol or after ``max_iter`` Newton iterations.
    """
    g0, c0 = objective.evaluate(x0)
    init = (x0, g0, c0, jnp.asarray(0), jnp.asarray(0))

    def gnorm(g):
        return jnp.max(jnp.abs(g))

    def cond(state):
        _, g, _, it, _ = state
        return (gnorm(g) > tol) & (it < max_iter)

    def body(state):
        x, g, curv, it, cg_total = state
        inv_diag = 1.0 / objective.hess_diag(curv)
        rtol = jnp.minimum(0.5, jnp.sqrt(jnp.linalg.norm(g)))
        direction, cg_it = preconditioned_cg(
            lambda v: objective.hvp(curv, v), -g, inv_diag, rtol, cg_max_iter
        )
        x, g, curv = _backtrack(objective, x, g, curv, direction, max_backtracks)
        return x, g, curv, it + 1, cg_total + cg_it

    x, g, _, it, cg_total = jax.lax.while_loop(cond, body, init)
    final = gnorm(g)
    return SolverResult(
        x=x,
        converged=final <= tol,
        iterations=it,
        grad_norm=final,
        cg_iterations=cg_total,
        result=solver_result(final <= tol, x, final),
    )


# =======================================================================================
# Constrained solvers on Θ_B = {θ : ⟨1, θ⟩ = 0 (optional), ‖θ‖₂ ≤ B} (docs/chowdhury.md, Mechanisms and estimators)
# and one-pass projected SGD (chowdhury Algorithm 1, chowdhury Algorithm 1, eq. (10), §4.3; docs/chowdhury.md, Experiments as run).
#
# The feasible set is a ball centred at the origin, optionally intersected with the
# subspace 1^⊥. A projected Newton step is the minimiser of the quadratic model over that
# set: a trust-region subproblem (TRS) centred at the origin, solved exactly through the
# eigen-decomposition of the (d, d) model Hessian and Newton's method on the secular
# equation 1/‖u(μ)‖ = 1/B (Moré–Sorensen; 1/‖u(μ)‖ is concave in μ, so Newton started left
# of the root increases monotonically to it). d is small (the feature dimension), so the
# dense eigen-decomposition is cheap; it runs through :func:`symmetric_eigh`, which keeps
# LAPACK unbatched under ``vmap`` on CPU (dpsim.linalg).
# =======================================================================================


def project_ball(x: Array, radius, sum_zero: bool = False) -> Array:
    """Euclidean projection onto Θ_B = {θ : ⟨1, θ⟩ = 0 (if ``sum_zero``), ‖θ‖₂ ≤ radius}
    (chowdhury eq. (10), Alg. 1; exact formula docs/chowdhury.md, Mechanisms and estimators).

    Θ_B is a subspace through the origin intersected with a ball centred at the origin, so
    the projection is the subspace projection followed by a radial clip (for v ∈ 1^⊥,
    ‖θ − v‖² = ‖θ − Pθ‖² + ‖Pθ − v‖²).

    Args:
        x: (dim,) point.
        radius: B > 0 (may be traced; ``inf`` gives no ball constraint).
        sum_zero: project onto 1^⊥ first (a Python bool).
    Returns:
        (dim,) the nearest point of Θ_B.
    """
    if sum_zero:
        x = x - jnp.mean(x)
    norm = jnp.linalg.norm(x)
    scale = jnp.minimum(1.0, radius / jnp.maximum(norm, jnp.finfo(x.dtype).tiny))
    return x * scale


@unbatched_on_cpu
def symmetric_eigh(a: Array):
    """(eigenvalues ascending (d,), eigenvectors (d, d)) of a symmetric matrix; LAPACK
    ``syevd`` kept unbatched under ``vmap`` on CPU (dpsim.linalg)."""
    return jnp.linalg.eigh(a)


def projection_stationarity(x: Array, grad: Array, radius, sum_zero: bool = False) -> Array:
    """‖x − Π(x − ∇f(x))‖∞, the gradient-mapping norm: zero exactly at a stationary point
    of f on Θ_B (equal to ‖∇f‖∞ for an interior point with a small gradient)."""
    return jnp.max(jnp.abs(x - project_ball(x - grad, radius, sum_zero)))


class DenseObjective(NamedTuple):
    """A smooth objective on R^d with a dense (d, d) Hessian, for small d.

    ``value(x) -> f``;  ``evaluate(x) -> (f, grad (d,), hess (d, d))``.
    """

    value: Callable[[Array], Array]
    evaluate: Callable[[Array], tuple[Array, Array, Array]]


class ConstrainedResult(NamedTuple):
    x: Array
    converged: Array  # bool: gradient mapping ‖x − Π(x − ∇f)‖∞ ≤ tol within max_iter
    iterations: Array  # outer (Newton or gradient) iterations taken
    stationarity: Array  # ‖x − Π(x − ∇f(x))‖∞ at the returned x
    on_boundary: Array  # bool: ‖x‖ ≥ radius·(1 − 1e-9)
    inner_iterations: Array  # total secular-equation (Newton) or backtracking steps
    result: Array  # int8 code (dpsim.results.RESULTS): why the solve stopped


def ball_trust_region_step(hess: Array, b: Array, radius, *, max_iter: int = 60):
    """argmin_{‖u‖ ≤ radius} ½uᵀHu − bᵀu for a positive semi-definite (d, d) H.

    u(μ) = (H + μI)⁻¹b with μ = 0 when ‖u(0)‖ ≤ radius, else the root of
    1/‖u(μ)‖ = 1/radius found by Newton's method from μ = 0 (monotone, quadratic).
    Eigenvalues are floored at 1e-13·λ_max so that a singular H (the de-biased RR loss
    far out, chowdhury eqs. (4)–(6), §4.2 warning) gives a finite boundary solution.

    Returns (u (d,), μ, iterations).
    """
    lam, q = symmetric_eigh(hess)
    lam = jnp.maximum(lam, 1e-13 * jnp.maximum(jnp.max(jnp.abs(lam)), jnp.finfo(lam.dtype).tiny))
    bt = q.T @ b
    bt2 = bt * bt
    tiny = jnp.finfo(lam.dtype).tiny

    def norm_u(mu):
        return jnp.sqrt(jnp.sum(bt2 / (lam + mu) ** 2))

    def newton(state):
        mu, _, k = state
        phi = norm_u(mu)
        dphi = -jnp.sum(bt2 / (lam + mu) ** 3) / jnp.maximum(phi, tiny)
        # h(μ) = 1/φ − 1/r, h' = −φ'/φ²: μ ← μ − h/h'
        step = (1.0 / phi - 1.0 / radius) * phi * phi / jnp.minimum(dphi, -tiny)
        mu_new = jnp.maximum(mu + step, 0.0)
        return mu_new, jnp.abs(norm_u(mu_new) - radius) > 1e-13 * radius, k + 1

    outside = norm_u(0.0) > radius
    mu, _, k = jax.lax.while_loop(
        lambda s: s[1] & (s[2] < max_iter),
        newton,
        (jnp.asarray(0.0, lam.dtype), outside, jnp.asarray(0)),
    )
    u = q @ (bt / (lam + mu))
    # Rounding can leave ‖u‖ a hair above the radius: clip radially (a no-op inside).
    return project_ball(u, radius), mu, k


def projected_newton(
    objective: DenseObjective,
    x0: Array,
    radius,
    *,
    sum_zero: bool = False,
    tol: float = 1e-10,
    max_iter: int = 50,
    max_backtracks: int = 40,
) -> ConstrainedResult:
    """Minimise a smooth convex f over Θ_B (ball of ``radius``, optionally ∩ 1^⊥) by projected
    Newton: each step minimises the quadratic model exactly over Θ_B
    (:func:`ball_trust_region_step`), then backtracks along the feasible segment with an
    Armijo test on f.

    The Armijo test allows a rounding slack of 1e-14·(1 + |f|) so that the full Newton step
    is accepted near the optimum, where f can no longer resolve the decrease. Converged
    means the gradient mapping ‖x − Π(x − ∇f(x))‖∞ ≤ tol (:func:`projection_stationarity`).

    Args:
        objective: f with its gradient and dense Hessian (f must be strictly convex on the
            subspace, or ``radius`` finite).
        x0: (d,) start; projected onto Θ_B first.
        radius: B (may be traced; ``inf`` for the unconstrained problem).
        sum_zero: constrain ⟨1, θ⟩ = 0 (Python bool).
        tol, max_iter, max_backtracks: stopping rule and caps (fixed, for ``vmap``).
    Returns:
        :class:`ConstrainedResult`.
    """
    d = x0.shape[0]
    x0 = project_ball(x0, radius, sum_zero)
    ones = jnp.full((d, d), 1.0 / d)
    centring = jnp.eye(d) - ones

    def model(hess, grad, x):
        if sum_zero:  # restrict the model to 1^⊥; the 1-direction gets curvature 1 and b ⊥ 1
            hess = centring @ hess @ centring + ones
            grad = centring @ grad
        return hess, hess @ x - grad

    f0, g0, h0 = objective.evaluate(x0)
    init = (
        x0,
        f0,
        g0,
        h0,
        projection_stationarity(x0, g0, radius, sum_zero),
        jnp.asarray(0),
        jnp.asarray(0),
    )

    def cond(state):
        return (state[4] > tol) & (state[5] < max_iter)

    def body(state):
        x, f, g, h, _, it, inner = state
        hess, b = model(h, g, x)
        u, _, k = ball_trust_region_step(hess, b, radius)
        direction = u - x
        slope = jnp.dot(g, direction)
        slack = 1e-14 * (1.0 + jnp.abs(f))

        def ok(t):
            f_t = objective.value(x + t * direction)
            return jnp.isfinite(f_t) & (f_t <= f + 1e-4 * t * slope + slack)

        t, _ = jax.lax.while_loop(
            lambda s: (~ok(s[0])) & (s[1] < max_backtracks),
            lambda s: (0.5 * s[0], s[1] + 1),
            (jnp.asarray(1.0), jnp.asarray(0)),
        )
        x_new = x + t * direction
        f_new, g_new, h_new = objective.evaluate(x_new)
        return (
            x_new,
            f_new,
            g_new,
            h_new,
            projection_stationarity(x_new, g_new, radius, sum_zero),
            it + 1,
            inner + k,
        )

    x, _, _, _, stat, it, inner = jax.lax.while_loop(cond, body, init)
    return ConstrainedResult(
        x=x,
        converged=stat <= tol,
        iterations=it,
        stationarity=stat,
        on_boundary=jnp.linalg.norm(x) >= radius * (1 - 1e-9),
        inner_iterations=inner,
        result=solver_result(stat <= tol, x, stat),
    )


def projected_gradient(
    value_and_grad: Callable[[Array], tuple[Array, Array]],
    x0: Array,
    radius,
    step0,
    *,
    sum_zero: bool = False,
    tol: float = 1e-10,
    max_iter: int = 5000,
    max_backtracks: int = 40,
) -> ConstrainedResult:
    """Minimise a smooth (possibly non-convex) f over Θ_B by projected gradient descent with
    Beck–Teboulle backtracking: from step t (doubled after each accepted step), halve until
    f(x⁺) ≤ f(x) + ∇fᵀ(x⁺ − x) + ‖x⁺ − x‖²/(2t) (+ a 1e-14·(1 + |f|) rounding slack),
    x⁺ = Π(x − t∇f(x)). Used for the non-convex naive RR likelihood (docs/chowdhury.md, Mechanisms and estimators).

    Converged means the gradient mapping ‖x − Π(x − ∇f(x))‖∞ ≤ tol (a stationary point; for
    a non-convex f not necessarily the global minimiser).

    Args:
        value_and_grad: x ↦ (f(x), ∇f(x)).
        x0: (d,) start (projected onto Θ_B first).
        radius: B (may be traced). step0: first trial step (may be traced), e.g. 1/smoothness.
        sum_zero, tol, max_iter, max_backtracks: as in :func:`projected_newton`.
    Returns:
        :class:`ConstrainedResult` (``inner_iterations`` counts the step halvings).
    """
    x0 = project_ball(x0, radius, sum_zero)
    f0, g0 = value_and_grad(x0)
    init = (
        x0,
        f0,
        g0,
        jnp.asarray(step0, x0.dtype),
        projection_stationarity(x0, g0, radius, sum_zero),
        jnp.asarray(0),
        jnp.asarray(0),
    )

    def cond(state):
        return (state[4] > tol) & (state[5] < max_iter)

    def body(state):
        x, f, g, t, _, it, inner = state

        def trial(t):
            x_t = project_ball(x - t * g, radius, sum_zero)
            f_t, g_t = value_and_grad(x_t)
            step = x_t - x
            ok = jnp.isfinite(f_t) & (
                f_t
                <= f + jnp.dot(g, step) + jnp.dot(step, step) / (2 * t) + 1e-14 * (1.0 + jnp.abs(f))
            )
            return x_t, f_t, g_t, ok

        x_t, f_t, g_t, ok = trial(t)

        def shrink(s):
            t, _, _, _, _, k = s
            t = 0.5 * t
            return (t, *trial(t), k + 1)

        t, x_t, f_t, g_t, _, k = jax.lax.while_loop(
            lambda s: (~s[4]) & (s[5] < max_backtracks),
            shrink,
            (t, x_t, f_t, g_t, ok, jnp.asarray(0)),
        )
        return (
            x_t,
            f_t,
            g_t,
            2.0 * t,
            projection_stationarity(x_t, g_t, radius, sum_zero),
            it + 1,
            inner + k,
        )

    x, _, _, _, stat, it, inner = jax.lax.while_loop(cond, body, init)
    return ConstrainedResult(
        x=x,
        converged=stat <= tol,
        iterations=it,
        stationarity=stat,
        on_boundary=jnp.linalg.norm(x) >= radius * (1 - 1e-9),
        inner_iterations=inner,
        result=solver_result(stat <= tol, x, stat),
    )


# ---------------------------------------------------------------------------------------
# One-pass projected SGD, written as an optax chain (chowdhury Alg. 1, chowdhury Algorithm 1, eq. (10), §4.3; docs/chowdhury.md, Experiments as run).
# ---------------------------------------------------------------------------------------
class SGDResult(NamedTuple):
    x: Array  # (d,) the last iterate θ̂_{n+1}
    x_average: Array  # (d,) the Polyak–Ruppert average (1/n) Σ_{t=2}^{n+1} θ̂_t
    last_step: Array  # η_n, the last step size used


def project_after_update(radius, sum_zero: bool = False):
    """An optax ``GradientTransformation`` that turns an update u into Π(θ + u) − θ, so
    that ``optax.apply_updates`` lands on the projection of the plain step onto Θ_B (the
    last link of an SGD chain; Alg. 1 line 5)."""

    def init_fn(params):
        return optax.EmptyState()

    def update_fn(updates, state, params=None):
        return project_ball(params + updates, radius, sum_zero) - params, state

    return optax.GradientTransformation(init_fn, update_fn)


def projected_sgd_optimizer(step_size: Callable[[Array], Array], radius, sum_zero: bool = False):
    """optax chain θ ← Π_{Θ_B}(θ − η_t g): ``scale_by_schedule(−η)`` then the projection.

    ``step_size(t)`` gets t = 1, 2, … (optax's count + 1)."""
    return optax.chain(
        optax.scale_by_schedule(lambda count: -step_size(count + 1)),
        project_after_update(radius, sum_zero),
    )


def projected_sgd(
    per_sample_grad: Callable[[Array, Any], Array],
    samples,
    x0: Array,
    step_size: Callable[[Array], Array],
    radius,
    *,
    sum_zero: bool = False,
) -> SGDResult:
    """One pass of projected SGD over ``samples`` (a pytree whose leaves have the sample
    axis first), each sample used once in order, as a ``lax.scan``.

    Args:
        per_sample_grad: (θ (d,), one sample) ↦ ĝ (d,).
        samples: pytree of (n_samples, …) arrays.
        x0: (d,) start θ̂_1 (projected onto Θ_B first).
        step_size: t ↦ η_t for t = 1, …, n (traced t).
        radius, sum_zero: Θ_B.
    Returns:
        :class:`SGDResult` with the last and the averaged iterate.
    """
    optimizer = projected_sgd_optimizer(step_size, radius, sum_zero)
    x0 = project_ball(x0, radius, sum_zero)

    def step(carry, sample):
        x, state, average, t = carry
        updates, state = optimizer.update(per_sample_grad(x, sample), state, x)
        x = optax.apply_updates(x, updates)
        average = average + (x - average) / t
        return (x, state, average, t + 1.0), None

    (x, _, average, t), _ = jax.lax.scan(
        step, (x0, optimizer.init(x0), jnp.zeros_like(x0), jnp.asarray(1.0, x0.dtype)), samples
    )
    return SGDResult(x=x, x_average=average, last_step=step_size(t - 1.0))
