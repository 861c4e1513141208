"""The vectorised NumPy baselines' shared solver: a damped Newton method over a batch of
independent problems (replicates × ε), the way a careful researcher writes it without dpsim:
every replicate's gradient and Hessian in one array operation, the Newton steps by one
batched ``np.linalg.solve`` on (k, d, d) Hessians, converged problems dropped from the batch.
Nothing here knows a paper: each paper's benchmark supplies its gradient and Hessian.

The step is damped by the same rule as :func:`dpsim.solvers.newton_cg`: halve until the merit
½‖∇‖² decreases by the Armijo factor (1 − 2·10⁻⁴·t), and the stopping rule is the engine's,
‖∇‖∞ ≤ tol per problem, so a baseline solves the same problem to the same tolerance.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

ARMIJO = 2e-4
MAX_HALVINGS = 30


def batched_cg(H: np.ndarray, b: np.ndarray, rtol: np.ndarray, max_iter: int) -> np.ndarray:
    """Solve H x = b for k symmetric positive definite systems at once by conjugate gradients
    (matrix–vector products only, O(d²) each), problem i stopping at ‖r_i‖ ≤ rtol_i·‖b_i‖.
    Shapes: H (k, d, d), b (k, d), rtol (k,). Returns x (k, d)."""
    x, r = np.zeros_like(b), b.copy()
    p, rr = r.copy(), np.einsum("kd,kd->k", r, r)
    stop = (rtol * np.sqrt(rr)) ** 2
    for _ in range(max_iter):
        live = rr > stop
        if not live.any():
            break
        Hp = np.einsum("kij,kj->ki", H, p)
        alpha = np.where(live, rr / np.maximum(np.einsum("kd,kd->k", p, Hp), 1e-300), 0.0)
        x += alpha[:, None] * p
        r -= alpha[:, None] * Hp
        rr_new = np.einsum("kd,kd->k", r, r)
        p = r + np.where(live, rr_new / np.maximum(rr, 1e-300), 0.0)[:, None] * p
        rr = rr_new
    return x


def batched_newton(
    derivs: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
    x0: np.ndarray,
    tol,
    *,
    max_iter: int = 50,
    solver: str = "direct",
    abandon: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Damped Newton on k independent smooth convex problems at once.

    Args:
        derivs: ``derivs(x, rows) -> (grad (r, d), hess (r, d, d))`` of the problems ``rows``
            (an index array into the batch) at ``x`` (r, d).
        x0: (k, d) starting points.
        tol: gradient tolerance, a scalar or (k,): problem i stops when ‖∇_i‖∞ ≤ tol_i.
        max_iter: Newton iterations at most.
        solver: the Newton step by "direct" (one batched ``np.linalg.solve``, O(d³) per
            problem: the faster for small d) or "cg" (truncated Newton: batched conjugate
            gradients to the forcing tolerance min(0.5, √‖∇‖)·‖∇‖, as the engine's
            ``newton_cg``: the faster for large d).
        abandon: optional ``abandon(x (r, d)) -> (r,) bool``: problems to stop early, left
            unconverged (e.g. iterates far outside a constraint the caller handles otherwise).
    Returns:
        (x (k, d), iterations (k,), final ‖∇‖∞ (k,)).
    """
    x = np.array(x0, dtype=float, copy=True)
    k = x.shape[0]
    tol = np.broadcast_to(np.asarray(tol, dtype=float), (k,))
    iters, grad_inf = np.zeros(k, dtype=int), np.zeros(k)
    rows = np.arange(k)
    g, H = derivs(x, rows)
    for _ in range(max_iter + 1):
        gi = np.abs(g).max(axis=1)
        grad_inf[rows] = gi
        keep = gi > tol[rows]
        if abandon is not None:
            keep &= ~abandon(x[rows])
        rows, g, H = rows[keep], g[keep], H[keep]
        if rows.size == 0 or _ >= max_iter:
            break
        if solver == "cg":
            norm = np.sqrt(np.einsum("kd,kd->k", g, g))
            step = -batched_cg(H, g, np.minimum(0.5, np.sqrt(norm)), 10 * x.shape[1])
        else:
            step = -np.linalg.solve(H, g[..., None])[..., 0]
        merit = 0.5 * np.einsum("kd,kd->k", g, g)
        t = np.ones(rows.size)
        trial = x[rows] + step
        g_new, H_new = derivs(trial, rows)
        for _h in range(MAX_HALVINGS):  # rarely entered: the full step is accepted
            bad = 0.5 * np.einsum("kd,kd->k", g_new, g_new) > (1.0 - ARMIJO * t) * merit
            if not bad.any():
                break
            t[bad] *= 0.5
            trial[bad] = x[rows[bad]] + t[bad, None] * step[bad]
            g_new[bad], H_new[bad] = derivs(trial[bad], rows[bad])
        x[rows] = trial
        iters[rows] += 1
        g, H = g_new, H_new
    return x, iters, grad_inf


def batched_sphere_newton(
    derivs: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
    x0: np.ndarray,
    radius: float,
    tol: float,
    *,
    max_iter: int = 50,
) -> tuple[np.ndarray, np.ndarray]:
    """Minimise k smooth convex problems on the sphere ‖x‖ = radius (their minimisers over the
    ball, when the unconstrained ones lie outside) by Newton on the KKT system ∇f + μx = 0,
    (‖x‖² − radius²)/2 = 0: one batched solve of the (k, d+1, d+1) bordered Hessians per
    iteration, steps halved until the residual's norm decreases.

    Args:
        derivs: as in :func:`batched_newton`.
        x0: (k, d) starts (projected onto the sphere first).
        radius: the sphere's radius.
        tol: a problem has converged when ‖∇f + μx‖∞ ≤ tol and |‖x‖ − radius| ≤ tol.
    Returns:
        (x (k, d), ok (k,)): ok where converged with μ ≥ 0 (the ball's minimiser is on the
        sphere); the others are left to the caller.
    """
    k, d = x0.shape
    x = radius * x0 / np.maximum(np.linalg.norm(x0, axis=1, keepdims=True), 1e-300)
    rows = np.arange(k)
    g, H = derivs(x, rows)
    mu = np.maximum(0.0, -np.einsum("kd,kd->k", x, g) / radius**2)
    ok = np.zeros(k, dtype=bool)

    def residual(x, g, mu):
        return np.concatenate(
            [g + mu[:, None] * x, 0.5 * (np.einsum("kd,kd->k", x, x) - radius**2)[:, None]], axis=1
        )

    r = residual(x, g, mu)
    for it in range(max_iter + 1):
        done = (np.abs(r[:, :d]).max(axis=1) <= tol) & (
            np.abs(np.linalg.norm(x[rows], axis=1) - radius) <= tol
        )
        ok[rows[done]] = mu[done] >= 0
        live = ~done
        rows, g, H, mu, r = rows[live], g[live], H[live], mu[live], r[live]
        if rows.size == 0 or it == max_iter:
            break
        J = np.zeros((rows.size, d + 1, d + 1))
        J[:, :d, :d] = H + mu[:, None, None] * np.eye(d)
        J[:, :d, d], J[:, d, :d] = x[rows], x[rows]
        step = -np.linalg.solve(J, r[..., None])[..., 0]
        t = np.ones(rows.size)
        merit = np.einsum("kd,kd->k", r, r)
        for _h in range(MAX_HALVINGS):
            xt, mt = x[rows] + t[:, None] * step[:, :d], mu + t * step[:, d]
            gt, Ht = derivs(xt, rows)
            rt = residual(xt, gt, mt)
            bad = np.einsum("kd,kd->k", rt, rt) > (1.0 - ARMIJO * t) * merit
            if not bad.any():
                break
            t[bad] *= 0.5
        x[rows], mu, g, H, r = xt, mt, gt, Ht, rt
    return x, ok
