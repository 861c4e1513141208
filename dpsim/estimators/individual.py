"""Estimators under individual DP (cai §3): Algorithm 1's fit of the individual-DP release
(:func:`dpsim.mechanisms.btl_perturbation.objective_perturbation_individual`) and the unpenalised
MLE of the non-private curve, with the existence guard.

Adjacency: two datasets are neighbours when they differ in all L comparisons of one of
the m users (cai §3.1; worst-case replacement, docs/cai.md, Errata and modes (E18)).
"""

from __future__ import annotations

import jax.numpy as jnp

from dpsim.estimators.btl_mle import penalised_mle
from dpsim.estimators.fit import Fit
from dpsim.graph import strongly_connected
from dpsim.mechanisms.btl_perturbation import LaplacePerturbation

FALLBACK_GAMMA = 1e-8


def guarded_penalised_mle(
    W,
    gamma,
    w=None,
    *,
    fallback_gamma: float = FALLBACK_GAMMA,
    M=None,
    tol: float = 1e-10,
    max_iter: int = 50,
) -> Fit:
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


def guarded_perturbed_mle(
    W, release: LaplacePerturbation, *, M=None, tol: float = 1e-10, max_iter: int = 50
) -> Fit:
    """The estimate of cai Algorithm 1 under individual DP (Prop 3.1, Thm 3.1): θ̃ = argmin
    𝓛(θ; W) + (γ/2)‖θ‖² + wᵀθ for a release (γ, w) of
    :func:`dpsim.mechanisms.btl_perturbation.objective_perturbation_individual`, with the guard
    of :func:`guarded_penalised_mle` (at ε = ∞, γ = 0: the unpenalised MLE, cai §4.2; docs/cai.md,
    Errata and modes (E17)).

    Args: W: (n, n) win counts; release: :class:`~dpsim.mechanisms.btl_perturbation.LaplacePerturbation`
    (γ, w (n,)); M: W + Wᵀ when the caller has it. Returns: :class:`Fit` as :func:`guarded_penalised_mle`.
    Raises: ValueError naming a bad concrete W (traced values are not checked).
    """
    return guarded_penalised_mle(W, release.gamma, release.w, M=M, tol=tol, max_iter=max_iter)
