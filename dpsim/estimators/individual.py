"""Estimators under individual DP (cai §3): Algorithm 1 with the individual calibration,
the unpenalised MLE of the non-private curve, and Algorithm 3 (noisy counts).

Adjacency: two datasets are neighbours when they differ in all L comparisons of one of
the m users (cai §3.1; worst-case replacement, docs/cai.md, Errata and modes (E18)).
"""
from __future__ import annotations

import jax.numpy as jnp

from dpsim.estimators.btl_mle import penalised_mle
from dpsim.estimators.counts import win_counts
from dpsim.estimators.fit import Fit
from dpsim.graph import strongly_connected
from dpsim.mechanisms.calibration import (
    individual_count_noise_scale,
    individual_objective_perturbation,
)
from dpsim.mechanisms.laplace import laplace_noise
from dpsim.models.links import LOGISTIC, Link
from dpsim.validate import require_counts_matrix, require_eps, require_int

FALLBACK_GAMMA = 1e-8


def guarded_penalised_mle(W, gamma, w=None, *, fallback_gamma: float = FALLBACK_GAMMA, M=None,
                          tol: float = 1e-10, max_iter: int = 50) -> Fit:
    """:func:`penalised_mle` with the existence guard of docs/cai.md, Errata and modes (E17).

    With γ = 0 the MLE exists (and is unique after centring, i.e. under the paper's
    constraint 1ᵀθ = 0) iff the win digraph is strongly connected; otherwise γ is replaced by
    ``fallback_gamma`` and the fit is reported with ``strongly_connected = False``. With γ > 0
    the objective is strongly convex and nothing changes. ``M``: W + Wᵀ when the caller has it
    (:func:`~dpsim.estimators.btl_mle.comparisons_per_pair`).

    Returns:
        :class:`Fit` with ``info = {"strongly_connected": bool, "gamma": the ridge used}``.
    """
    connected = strongly_connected(W)
    gamma = jnp.asarray(gamma, jnp.float64)
    gamma_used = jnp.where((gamma > 0) | connected, gamma, fallback_gamma)
    fit = penalised_mle(W, gamma_used, w, M=M, tol=tol, max_iter=max_iter)
    return fit._replace(info={"strongly_connected": connected, "gamma": gamma_used})


def unpenalised_mle(W, *, M=None, tol: float = 1e-10, max_iter: int = 50) -> Fit:
    """The BTL MLE with γ = 0, identified by centring (docs/cai.md, Mechanisms and estimators: the individual-DP
    non-private baseline, "unpenalised MLE with the sum-zero constraint"; docs/cai.md, Errata and modes (E17) guard).
    ``M``: W + Wᵀ when the caller has it."""
    return guarded_penalised_mle(W, 0.0, M=M, tol=tol, max_iter=max_iter)


def perturbed_mle_individual(key, W, eps, per_user, *, link: Link = LOGISTIC, c0: float = 0.0,
                             n_users=None, tol: float = 1e-10, max_iter: int = 50) -> Fit:
    """Algorithm 1 of cai under individual DP (Prop 3.1, Thm 3.1).

    λ = 8Lκ1/ε, γ = 8Lκ2/ε (L = ``per_user``); w ~ Laplace(λ)^n;
    θ̃ = argmin 𝓛(θ; W) + (γ/2)‖θ‖² + wᵀθ is (ε, 0)-individual DP for links with finite
    κ1, κ2. At ε = ∞: λ = γ = 0, the unpenalised MLE (cai §4.2), with the guard of docs/cai.md, Errata and modes (E17).
    ``c0`` > 0 uses γ = max(8Lκ2/ε, c0√(S log n)), S = 2mL/n (docs/cai.md, Errata and modes (E1); needs ``n_users``).

    Raises: ValueError naming a bad concrete ε, L or W (traced values are not checked).
    """
    require_eps(eps)
    require_int(per_user, "per_user", 1)
    require_counts_matrix(W)
    n = W.shape[0]
    cal = individual_objective_perturbation(eps, per_user, link, c0=c0, n_items=n, n_users=n_users)
    w = laplace_noise(key, cal.lam, (n,))
    return guarded_penalised_mle(W, cal.gamma, w, tol=tol, max_iter=max_iter)


def noisy_counts_individual(key, W, eps, per_user, mode: str = "strict"):
    """Algorithm 3 of cai (individual DP): N + Laplace(c·L/ε)^n (cai Algorithm 3, §3.3; docs/cai.md, Errata and modes (E3)).

    ``mode="strict"`` (default, c = 2: the ℓ1 sensitivity 2L) is (ε, 0)-individual DP;
    ``mode="paper"`` (c = 1, as published) is only 2ε-DP. ``mode`` must be a Python string.

    Args: key; W: (n, n) win counts; eps: ε > 0; per_user: L ≥ 1. Returns: (n,) noisy counts.
    Raises: ValueError naming a bad concrete ε, L, W or mode (traced values are not checked).
    """
    require_eps(eps)
    require_int(per_user, "per_user", 1)
    require_counts_matrix(W)
    counts = win_counts(W)
    return counts + laplace_noise(key, individual_count_noise_scale(eps, per_user, mode), counts.shape)
