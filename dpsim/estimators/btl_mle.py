"""ℓ2-penalised and objective-perturbed BTL maximum likelihood.

Objective (cai eq. (2.1) with the ridge and the linear perturbation of Algorithm 1):

    R(θ) = Σ_{i≠j} W_ij · softplus(θ_j − θ_i) + (γ/2)‖θ‖² + wᵀθ,

with closed-form gradient and Hessian (cai (A.2), (A.9); docs/cai.md, Mechanisms and estimators):

    ∇R_i = Σ_j (M_ij σ(θ_i − θ_j) − W_ij) + γθ_i + w_i,     M = W + Wᵀ,
    ∇²R  = diag(C1) − C + γI,   C_ij = M_ij σ_ij (1 − σ_ij)   (a weighted graph Laplacian).

σ_ij is computed as a_i/(a_i + a_j) with a = exp(θ − max θ): one exponential per item
instead of one per pair. The solver's ``evaluate`` forms C in one elementwise pass (one
division per pair) and gets both the gradient and diag(∇²R) from one product with it:
since σ_ij + σ_ji = 1, Σ_j M_ij σ_ij = Σ_j C_ij (1 + a_i/a_j), so
the (2, n) × (n, n) product [1, 1/a]ᵀ C gives both sums (C is symmetric). Forming σ, M∘σ and C as
separate (n, n) arrays and reducing each (XLA:CPU does not fuse those reductions) took
1.4–2.4× longer (benchmarks/cai.py, section P).
"""

from __future__ import annotations

import jax.numpy as jnp

from dpsim.estimators.fit import Fit
from dpsim.mechanisms.btl_perturbation import LaplacePerturbation
from dpsim.solvers import SmoothObjective, SolverResult, newton_cg
from dpsim.validate import require, require_counts_matrix, require_pair_totals


def _pairwise(theta):
    """(σ_ij, log(a_i + a_j), log a_i) with a = exp(θ − max θ)."""
    log_a = theta - jnp.max(theta)
    a = jnp.exp(log_a)
    total = a[:, None] + a[None, :]
    return a[:, None] / total, jnp.log(total), log_a


def btl_neg_log_likelihood(theta, W):
    """𝓛(θ; W) = Σ_{i≠j} W_ij log(1 + exp(θ_j − θ_i))  (cai eq. (2.1), logistic F)."""
    sig, log_total, log_a = _pairwise(theta)
    return jnp.sum(W * log_total) - jnp.dot(W.sum(axis=1), log_a)


def btl_gradient(theta, W):
    """∇𝓛(θ)_i = Σ_j (M_ij σ(θ_i − θ_j) − W_ij)  (cai (A.2) with logistic weight 1)."""
    sig, _, _ = _pairwise(theta)
    M = W + W.T
    return jnp.sum(M * sig, axis=1) - W.sum(axis=1)


def comparisons_per_pair(W, M=None):
    """M = W + Wᵀ, the comparisons of each pair, or the caller's ``M`` when given (a sampler
    that draws the graph has it: :func:`dpsim.models.sample_er_graph`, whose docstring says
    why it is worth passing). A given M is checked like W, and against W + Wᵀ when both are
    concrete. Returns (n, n)."""
    if M is None:
        return W + W.T
    require_counts_matrix(M, "M")
    require_pair_totals(W, M)
    return M


def btl_objective(W, gamma, w, M=None) -> SmoothObjective:
    """R(θ) = 𝓛(θ; W) + (γ/2)‖θ‖² + wᵀθ as a :class:`SmoothObjective`.

    The curvature is (C, diag(∇²R)); the Hessian–vector product is diag·v − C v.
    ``M``: W + Wᵀ when the caller has it (:func:`comparisons_per_pair`).

    With γ = 0 the gradient is returned projected onto 1^⊥ (its mean removed): R is then
    invariant under θ + c·1 (for w = 0), so 1ᵀ∇R = 0 exactly and its computed value is
    rounding, which the Newton–CG step cannot remove (∇²R is singular along 1). Left in, it
    made CG run to its cap and the line search stall at ‖∇R‖∞ ≈ 1.1e-10 in one of cai
    Fig. 6's unpenalised fits (n = 16, m = 1000, L = 5; tests/library/test_btl_mle.py). The
    minimiser found is the one of R on 1^⊥ up to a shift, i.e. the sum-zero MLE after
    centring (docs/cai.md, Mechanisms and estimators).
    """
    return _btl_objective(W, comparisons_per_pair(W, M), gamma, w)


def _btl_objective(W, M, gamma, w) -> SmoothObjective:
    """:func:`btl_objective` with M = W + Wᵀ already formed (or checked)."""
    wins = W.sum(axis=1)

    def evaluate(theta):
        a = jnp.exp(theta - jnp.max(theta))
        r = 1.0 / (a[:, None] + a[None, :])
        C = M * ((a[:, None] * r) * (a[None, :] * r))  # M_ij σ_ij σ_ji, symmetric
        row, scaled = jnp.stack([jnp.ones_like(a), 1.0 / a]) @ C
        grad = row + a * scaled - wins + gamma * theta + w  # Σ_j M_ij σ_ij = Σ_j C_ij (1 + a_i/a_j)
        return jnp.where(gamma > 0, grad, grad - jnp.mean(grad)), (C, row + gamma)

    def hvp(curvature, v):
        C, diag = curvature
        return diag * v - C @ v

    def hess_diag(curvature):
        return curvature[1]

    return SmoothObjective(evaluate, hvp, hess_diag)


def _fit(result: SolverResult) -> Fit:
    """θ̃ (the uncentred minimiser) with the solver's result code, iterations and ‖∇R(θ̃)‖∞."""
    return Fit(
        theta=result.x,
        result=result.result,
        iterations=result.iterations,
        grad_norm=result.grad_norm,
    )


GRADIENT_SCALE_COMPARISONS = 1000.0

# θ̃ is solved to ‖∇R‖∞ ≤ 1e-10 (scaled with the comparisons per item), so its error is far
# below this: ranking θ̃ with ``top_k_mask(..., tie_tol=SCORE_TIE_TOL)`` treats values within
# 1e-9 as ties (broken at random), as the mathematically tied θ̃ of items with equal win
# counts on a complete graph must be (they differ by ~1e-17 from rounding alone).
SCORE_TIE_TOL = 1e-9


def gradient_tolerance(W, tol, M=None):
    """tol × max(1, d_max/1000), d_max the most comparisons of any item (``M``: W + Wᵀ when
    the caller has it).

    ∇𝓛_i sums d_i terms of size ≤ 1, so its float64 rounding error grows with d_i: an
    absolute 1e-10 is out of reach with 10⁵ comparisons per item (measured: 0.03–0.5% of
    fits hit the iteration cap in cai-rate-m / cai-rate-L). Up to 1000 comparisons per item
    (every edge-DP grid of cai) the tolerance is the absolute ``tol``.
    """
    return _gradient_tolerance(comparisons_per_pair(W, M), tol)


def _gradient_tolerance(M, tol):
    """:func:`gradient_tolerance` from M = W + Wᵀ."""
    return tol * jnp.maximum(1.0, jnp.max(M.sum(axis=1)) / GRADIENT_SCALE_COMPARISONS)


def penalised_mle(W, gamma, w=None, *, M=None, tol: float = 1e-10, max_iter: int = 50) -> Fit:
    """argmin_θ 𝓛(θ; W) + (γ/2)‖θ‖² + wᵀθ by truncated Newton from θ = 0.

    With w = 0 this is the non-private ℓ2-penalised MLE of Chen et al. (docs/cai.md, Mechanisms and estimators). The
    minimiser satisfies 1ᵀθ̃ = −1ᵀw/γ (docs/cai.md, Mechanisms and estimators); centring afterwards is post-processing.
    Converged means ‖∇R‖∞ ≤ :func:`gradient_tolerance` (W, tol).

    Args:
        W: (n, n) win counts, W[i, j] = times i beat j.
        gamma: ridge γ ≥ 0 (γ > 0 makes the objective strongly convex).
        w: (n,) linear perturbation, or None for 0.
        M: (n, n) W + Wᵀ when the caller has it, or None (:func:`comparisons_per_pair`).
    Returns:
        :class:`~dpsim.estimators.Fit` with the uncentred θ̃ (n,), result (converged),
        iterations and grad_norm ‖∇R(θ̃)‖∞ (with γ = 0 the gradient projected onto 1^⊥).
    Raises:
        ValueError for a concrete non-square or negative W, a negative γ, or a given M that
        is not W + Wᵀ (traced values are not checked).
    """
    require_counts_matrix(W)
    require("gamma", gamma, lambda g: g >= 0, "must be ≥ 0")
    n = W.shape[0]
    w = jnp.zeros((n,)) if w is None else w
    M = comparisons_per_pair(W, M)
    result = newton_cg(
        _btl_objective(W, M, gamma, w),
        jnp.zeros((n,)),
        tol=_gradient_tolerance(M, tol),
        max_iter=max_iter,
    )
    return _fit(result)


def perturbed_mle(
    W, release: LaplacePerturbation, *, M=None, tol: float = 1e-10, max_iter: int = 50
) -> Fit:
    """The estimate of cai Algorithm 1: θ̃ = argmin 𝓛(θ; W) + (γ/2)‖θ‖² + wᵀθ for a release
    (γ, w) of the mechanism (:func:`dpsim.mechanisms.btl_perturbation.objective_perturbation_edge`:
    (ε, 0)-edge DP for links with finite κ1, κ2; at ε = ∞ the non-private penalised MLE).

    Args:
        W: (n, n) win counts (0 in the padding rows and columns when padded: the padding
            entries of w are 0 too, so they decouple, with θ_i = 0 there).
        release: :class:`~dpsim.mechanisms.btl_perturbation.LaplacePerturbation` (γ, w (n,)).
        M: (n, n) W + Wᵀ when the caller has it (:func:`comparisons_per_pair`), or None.
    Returns:
        :class:`~dpsim.estimators.Fit` (uncentred θ̃; ``theta_centred`` for the estimate,
        or :func:`dpsim.models.centre` with the real items when padded).
    Raises:
        ValueError naming a bad concrete W (traced values are not checked).
    """
    return penalised_mle(W, release.gamma, release.w, M=M, tol=tol, max_iter=max_iter)
