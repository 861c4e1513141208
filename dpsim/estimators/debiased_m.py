"""The debiased M-estimator of xu (eq. (3), §4.1; docs/xu.md, Mechanisms and estimators),
the classic-RR MLE baseline (docs/xu.md, Mechanisms and estimators; Errata and modes (A7)), and rankings from θ̂ (docs/xu.md, Mechanisms and estimators; Errata and modes (A15)).

**Objective** (xu §4.1 eq. (3)), with z̄_e the per-pair mean release (:mod:`dpsim.mechanisms.pairwise_ldp`):

    L_λ(θ) = Σ_{i<j} [ z̄_ij (θ_j − θ_i) + log(1 + e^{θ_i − θ_j}) ] + λ‖θ‖²,   θ̂ = argmin L_λ.

The sum runs over pairs (not averaged) and the ridge is λ‖θ‖² (not λ/2). With the win value
w_ij = z̄_ij (i < j), w_ji = 1 − z̄_ij, this is Σ_{i≠j} w_ij softplus(θ_j − θ_i) + λ‖θ‖², i.e. the
BTL objective of :func:`dpsim.estimators.btl_mle.btl_objective` with W = w (W + Wᵀ = 1 off the
diagonal) and γ = 2λ, whose gradient and Hessian are the closed forms of the paper:

    ∂L_λ/∂θ_i = Σ_{j≠i} (σ(θ_i − θ_j) − w_ij) + 2λθ_i,
    ∇²L_λ = Σ_{i<j} s_ij (e_i − e_j)(e_i − e_j)ᵀ + 2λI,  s_ij = σ'(θ_i − θ_j)   (Lemma S5),

a weighted complete-graph Laplacian plus 2λI, so 2λ ≤ eig ≤ 2(λ + max_i Σ_j s_ij). It is solved by
the shared truncated Newton method (:func:`dpsim.solvers.newton_cg`, Armijo backtracking on
‖∇‖², which avoids the false non-convergence of an Armijo test on L_λ itself near the optimum,
docs/xu.md, Mechanisms and estimators) from θ = 0, in float64, to ‖∇‖∞ ≤ 1e-10·max(1, m) within 50 iterations (docs/xu.md, Errata and modes (A5)).
It minimises F = L_λ + (μ/2)(1ᵀθ)² (μ = 1/4), which has the same minimiser (1ᵀθ̂ = 0, Lemma 3)
but curvature 2λ + μm instead of 2λ along 1: the Jacobi-preconditioned CG directions are not
sum-zero, and with curvature 2λ alone the iterates' sum converged only to ~1e-7.
z̄ may lie outside [0, 1] (debiased data); λ > 0 then keeps the objective bounded below and
strictly convex (docs/xu.md, Mechanisms and estimators). The minimiser sums to zero for every λ > 0 (Lemma 3); the
returned θ̂ is centred exactly.

**λ** (docs/xu.md, Mechanisms and estimators; Errata and modes (A4)): ``rule="g_over_l"`` (default) λ = G(ε)/L, the paper's
"λ ≍ L⁻¹(e^ε+1)²/(e^ε−1)" with the square of the denominator restored; ``rule="paper"`` the
literal (e^ε+1)²/((e^ε−1)L), ≈ 19× larger at ε = 3 and badly biased there. Neither affects
privacy (λ is applied to already-private data).

**Ranking** (docs/xu.md, Mechanisms and estimators). The stationarity equation Σ_{j≠i} σ(θ_i − θ_j) + 2λθ_i = s_i with the
Borda score s_i = Σ_{j≠i} w_ij shows θ̂_i > θ̂_k ⇔ s_i > s_k: θ̂ ranks items in Borda order, ties
included; under homogeneous ε classic and debiased RR (w affine in each other with a positive
slope) rank identically. Ties are real with discrete data, so values within
1e-9·max(1, ‖θ̂‖∞) are treated as tied (A15).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from dpsim.estimators.btl_mle import btl_objective
from dpsim.estimators.fit import Fit
from dpsim.estimators.topk import top_k_mask
from dpsim.mechanisms.privacy_profile import coth_half, privacy_G
from dpsim.models.complete_btl import n_items_of_pairs
from dpsim.models.individual import pair_index
from dpsim.solvers import SmoothObjective, newton_cg
from dpsim.validate import require, require_eps, require_group_sizes, require_int

LAMBDA_RULES = ("g_over_l", "paper")
RANK_TIE_TOL = 1e-9  # docs/xu.md, Errata and modes (A15): |θ̂_i − θ̂_j| ≤ 1e-9·max(1, ‖θ̂‖∞) is a tie
SOLVER_TOL = 1e-10  # ‖∇L_λ‖∞ ≤ SOLVER_TOL·max(1, m) (docs/xu.md, Mechanisms and estimators)
SOLVER_MAX_ITER = 50


def ridge_lambda(group_eps, group_sizes, rule: str = "g_over_l"):
    """The ridge parameter λ of the debiased M-estimator (xu §5.1 Scenario I; docs/xu.md, Mechanisms and estimators; Errata and modes (A4)).

    - ``"g_over_l"`` (default; docs/xu.md, Errata and modes (A4)): λ = G(ε)/L = L⁻¹ mean_l coth²(ε_l/2); 1/L at ε = ∞.
      Consistent with Thm 1's condition λ ≲ m G log(mL)/(L‖θ*‖²).
    - ``"paper"``: the literal "λ ≍ L⁻¹(e^ε+1)²/(e^ε−1)" = L⁻¹ mean_l coth(ε_l/2)(e^{ε_l}+1),
      which is G·(e^ε − 1)/L for homogeneous ε (∞ at ε = ∞: the rule is undefined there).

    Args:
        group_eps: (n_groups,) budgets (or a scalar for one group).
        group_sizes: (n_groups,) user counts L_g (or a scalar L).
        rule: a Python string, one of :data:`LAMBDA_RULES`.
    Returns:
        scalar float64.
    """
    if rule not in LAMBDA_RULES:
        raise ValueError(f"rule={rule!r} is unknown; choose one of {list(LAMBDA_RULES)}")
    require_eps(group_eps, "group_eps")
    require_group_sizes(group_sizes)
    sizes = jnp.atleast_1d(jnp.asarray(group_sizes, jnp.float64))
    eps = jnp.broadcast_to(jnp.atleast_1d(jnp.asarray(group_eps, jnp.float64)), sizes.shape)
    n_users = jnp.sum(sizes)
    if rule == "g_over_l":
        return privacy_G(eps, sizes) / n_users
    literal = coth_half(eps) * (jnp.exp(eps) + 1.0)
    return jnp.sum(sizes * literal) / n_users**2


def win_value_matrix(zbar) -> jax.Array:
    """w with w_ij = z̄_ij and w_ji = 1 − z̄_ij for i < j, 0 on the diagonal: the "win value" of
    i over j (xu §4.1, gradient of eq. (3)).

    Args: zbar: (M,) per-pair means in triu order. Returns: (m, m) float64."""
    zbar = jnp.asarray(zbar, jnp.float64)
    m = n_items_of_pairs(zbar.shape[0])
    i, j = pair_index(m)
    return jnp.zeros((m, m)).at[i, j].set(zbar).at[j, i].set(1.0 - zbar)


def borda_scores(zbar) -> jax.Array:
    """s_i = Σ_{j≠i} w_ij, the Borda score whose order θ̂ reproduces (docs/xu.md, Mechanisms and estimators).

    Args: zbar: (M,). Returns: (m,) float64."""
    return jnp.sum(win_value_matrix(zbar), axis=1)


def debiased_m_objective_value(theta, zbar, lam):
    """L_λ(θ) of xu §4.1 eq. (3) (for checks; the solver never evaluates it).

    Args: theta: (m,); zbar: (M,); lam: λ ≥ 0. Returns: scalar."""
    i, j = pair_index(theta.shape[0])
    d = theta[i] - theta[j]
    return jnp.sum(-zbar * d + jax.nn.softplus(d)) + lam * jnp.dot(theta, theta)


def debiased_m_gradient(theta, zbar, lam):
    """∇L_λ(θ)_i = Σ_{j≠i}(σ(θ_i − θ_j) − w_ij) + 2λθ_i (xu §4.1, gradient of eq. (3), supplement Lemma S8). Returns: (m,)."""
    grad, _ = btl_objective(win_value_matrix(zbar), 2.0 * lam, 0.0).evaluate(theta)
    return grad


SUM_PENALTY = 0.25


def _with_sum_penalty(objective: SmoothObjective, mu: float = SUM_PENALTY) -> SmoothObjective:
    """F(θ) = L_λ(θ) + (μ/2)(1ᵀθ)², which has the same minimiser as L_λ (it sums to zero,
    Lemma 3, where the penalty and its gradient vanish) and curvature 2λ + μm instead of 2λ
    along 1, so truncated Newton converges there as fast as elsewhere."""

    def evaluate(theta):
        grad, curvature = objective.evaluate(theta)
        return grad + mu * jnp.sum(theta), curvature

    def hvp(curvature, v):
        return objective.hvp(curvature, v) + mu * jnp.sum(v)

    def hess_diag(curvature):
        return objective.hess_diag(curvature) + mu

    return SmoothObjective(evaluate, hvp, hess_diag)


def debiased_m_estimator(
    zbar, lam, *, tol: float = SOLVER_TOL, max_iter: int = SOLVER_MAX_ITER
) -> Fit:
    """θ̂ = argmin_θ Σ_{i<j}[z̄_ij(θ_j − θ_i) + log(1 + e^{θ_i−θ_j})] + λ‖θ‖², the debiased
    M-estimator of xu §4.1 eq. (3) (xu §4.1), by truncated Newton from θ = 0.

    With z̄ from debiased RR this is the paper's estimator; from Laplace, the Laplace baseline
    (docs/xu.md, Errata and modes (A6)); from raw answers, the non-private ridge MLE (eq. (2)).

    Args:
        zbar: (M,) per-pair means, M = m(m−1)/2, triu order (values outside [0, 1] allowed).
        lam: λ ≥ 0 (may be traced; λ = 0 needs z̄ ∈ (0, 1) for a minimiser to exist). Use
            :func:`ridge_lambda`.
        tol: gradient tolerance, scaled by max(1, m).
        max_iter: Newton iteration cap.
    Returns:
        :class:`~dpsim.estimators.fit.Fit` with theta (m,) (the last iterate, centred),
        result / converged (the solver reached ‖∇F‖∞ ≤ tol·max(1, m), F = L_λ + (μ/2)(1ᵀθ)²),
        iterations, grad_norm ‖∇L_λ(θ̂)‖∞ at the returned (centred) θ̂,
        and info {"lam", "sum_theta" (1ᵀθ of the last iterate before
        centring: 0 by Lemma 3 up to the tolerance), "cg_iterations"}.
    """
    require("lam", lam, lambda v: (v >= 0) & np.isfinite(v), "must be a finite number ≥ 0")
    zbar = jnp.asarray(zbar, jnp.float64)
    m = n_items_of_pairs(zbar.shape[0])
    lam = jnp.asarray(lam, jnp.float64)
    objective = btl_objective(win_value_matrix(zbar), 2.0 * lam, 0.0)
    result = newton_cg(
        _with_sum_penalty(objective), jnp.zeros((m,)), tol=tol * max(1, m), max_iter=max_iter
    )
    # The minimiser sums to zero (Lemma 3); the last iterate does up to the tolerance (measured
    # |1ᵀθ| ≤ 1e-10 with the sum penalty, up to 6e-8 without it at λ = 1/L). Centring is the
    # exact minimisation of L_λ along 1 (L_0 is shift-invariant), so θ̂ is returned centred.
    theta = result.x - jnp.mean(result.x)
    grad, _ = objective.evaluate(theta)
    info = {"lam": lam, "sum_theta": jnp.sum(result.x), "cg_iterations": result.cg_iterations}
    return Fit(
        theta=theta,
        result=result.result,
        iterations=result.iterations,
        grad_norm=jnp.max(jnp.abs(grad)),
        info=info,
    )


def classic_rr_mle(
    ybar_released, lam, *, tol: float = SOLVER_TOL, max_iter: int = SOLVER_MAX_ITER
) -> Fit:
    """The classic-RR baseline of xu §5.3 Scenario V (docs/xu.md, Mechanisms and estimators; Errata and modes (A7)): the same objective with the mean
    classic-RR answer ỹ̄ in place of z̄, and the same λ. Inconsistent for θ* (its limit is
    shrunk toward 0, :func:`dpsim.theory.xu.classic_rr_population_limit`), but it ranks
    exactly like the debiased estimator under homogeneous ε (docs/xu.md, Mechanisms and estimators).

    Args and Returns: as :func:`debiased_m_estimator`, with ``ybar_released`` (M,) in [0, 1].
    """
    return debiased_m_estimator(ybar_released, lam, tol=tol, max_iter=max_iter)


def _tie_scale(theta_hat, tie_tol):
    return tie_tol * jnp.maximum(1.0, jnp.max(jnp.abs(theta_hat)))


def tied_ranks(theta_hat, tie_tol: float = RANK_TIE_TOL) -> jax.Array:
    """σ̂_i, the rank of θ̂_i (1 = largest), with values within tie_tol·max(1, ‖θ̂‖∞) sharing the
    smallest rank of their tie (competition ranking; docs/xu.md, Mechanisms and estimators; Errata and modes (A15)).

    Args: theta_hat: (m,); tie_tol: relative tie tolerance (Python float).
    Returns: (m,) int32 ranks in 1..m."""
    tol = _tie_scale(theta_hat, tie_tol)
    above = (theta_hat[None, :] - theta_hat[:, None]) > tol
    return 1 + jnp.sum(above, axis=1, dtype=jnp.int32)


def estimated_top_k_mask(key, theta_hat, k, tie_tol: float = RANK_TIE_TOL) -> jax.Array:
    """The estimated top-K set {i : σ̂_i ≤ K} (xu §4.2; docs/xu.md, Metrics) with ties at the K-boundary broken
    uniformly at random (docs/xu.md, Errata and modes (A15)): :func:`dpsim.estimators.top_k_mask` on θ̂/max(1, ‖θ̂‖∞)
    with tie tolerance ``tie_tol`` (values on one grid step of the rescaled θ̂ are tied).

    Args: key: PRNG key (its own stream: the tie-break); theta_hat: (m,); k: K in [1, m]
    (may be traced); tie_tol: relative tolerance (Python float).
    Returns: (m,) bool with exactly K True."""
    require_int(k, "k", 1, theta_hat.shape[0])
    scaled = theta_hat / jnp.maximum(1.0, jnp.max(jnp.abs(theta_hat)))
    return top_k_mask(key, scaled, k, tie_tol=tie_tol)


def expected_top_k_hamming(theta_hat, mask_true, k, tie_tol: float = RANK_TIE_TOL) -> jax.Array:
    """E H_K(θ̂, θ*) under a uniform random tie-break at the K-boundary (xu §4.2 H_K; docs/xu.md, Metrics,
    A15 "report the expectation"): the top-K normalised Hamming error of
    :func:`estimated_top_k_mask`, averaged over its tie-breaks, in closed form.

    Item i with a_i items strictly above it and t_i items tied with it (itself included; ties
    within tie_tol·max(1, ‖θ̂‖∞), as :func:`tied_ranks`) occupies one of the ranks
    a_i + 1 … a_i + t_i uniformly, so it enters the top K with probability
    clip(K − a_i, 0, t_i)/t_i; H_K = (K − Σ_{i ∈ S} P(i ∈ Ŝ))/K for the true top-K set S.
    Deterministic in θ̂ (like the Kendall distance with ``ties="half"``), so two estimates
    with the same order and ties (classic and debiased RR, docs/xu.md, Mechanisms and estimators) score exactly alike.

    Args:
        theta_hat: (m,) estimate.
        mask_true: (m,) bool, the true top-K set (K items), e.g. ``true_top_k_mask(θ*, K)``.
        k: K in [1, m − 1] (static Python int or traced).
        tie_tol: relative tie tolerance (Python float).
    Returns:
        scalar float64 in [0, min(K, m − K)/K].
    """
    require_int(k, "k", 1, theta_hat.shape[0] - 1)
    tol = _tie_scale(theta_hat, tie_tol)
    diff = theta_hat[None, :] - theta_hat[:, None]  # diff[i, j] = θ̂_j − θ̂_i
    above = jnp.sum(diff > tol, axis=1)
    tied = jnp.sum(jnp.abs(diff) <= tol, axis=1)  # ≥ 1 (the item itself)
    k = jnp.asarray(k, jnp.float64)
    p_in = jnp.clip(k - above, 0.0, tied) / tied
    hits = jnp.sum(jnp.where(mask_true, p_in, 0.0))
    return (k - hits) / k


__all__ = [
    "LAMBDA_RULES",
    "RANK_TIE_TOL",
    "SOLVER_TOL",
    "SOLVER_MAX_ITER",
    "ridge_lambda",
    "win_value_matrix",
    "borda_scores",
    "debiased_m_objective_value",
    "debiased_m_gradient",
    "debiased_m_estimator",
    "classic_rr_mle",
    "tied_ranks",
    "estimated_top_k_mask",
    "expected_top_k_hamming",
]
