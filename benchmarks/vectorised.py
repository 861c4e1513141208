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


def batched_newton(derivs: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]], x0: np.ndarray,
                   tol, *, max_iter: int = 50, solver: str = "direct") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        for _h in range(MAX_HALVINGS):           # rarely entered: the full step is accepted
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
