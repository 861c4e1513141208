"""Noise calibrations, one function per mechanism, each citing its paper.

ε = ∞ (the non-private grid value) is allowed everywhere and gives zero noise.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from dpsim.models.links import LOGISTIC, Link
from dpsim.validate import require_eps, require_probability


class EdgePerturbation(NamedTuple):
    """Algorithm 1 parameters: Laplace scale λ of w and ridge γ."""

    lam: jnp.ndarray
    gamma: jnp.ndarray


def edge_objective_perturbation(eps, n_items, p, c0=2.0, link: Link = LOGISTIC) -> EdgePerturbation:
    """Algorithm 1 under edge DP (cai Prop 2.1 and Thm 2.1, cai Algorithm 1, §2.2.1).

    λ = 8κ1/ε and γ = max(4κ2/ε, c0·√(n p log n)).  Prop 2.1 needs λ ≥ 8κ1/ε and
    γ ≥ 4κ2/ε for (ε, 0)-edge DP; Thm 2.1 takes γ = c0√(np log n) (the authors' code uses
    c0 = 2). At ε = ∞, λ = 0 and γ = c0√(np log n) (the paper's non-private curve keeps γ).
    """
    require_eps(eps)
    require_probability(p)
    eps = jnp.asarray(eps, jnp.float64)
    n = jnp.asarray(n_items, jnp.float64)  # may be traced (an integer array's log would be float32)
    lam = 8.0 * link.kappa1 / eps
    gamma = jnp.maximum(4.0 * link.kappa2 / eps, c0 * jnp.sqrt(n * p * jnp.log(n)))
    return EdgePerturbation(lam=lam, gamma=gamma)


def edge_count_noise_scale(eps):
    """Algorithm 2 (cai Algorithm 2, §2.3.1): Laplace(2/ε) on the win counts; 2 is the ℓ1 sensitivity of
    (N_1, …, N_n) when one comparison outcome flips or one edge moves."""
    require_eps(eps)
    return 2.0 / jnp.asarray(eps, jnp.float64)


def individual_objective_perturbation(
    eps, per_user, link: Link = LOGISTIC, *, c0=0.0, n_items=None, n_users=None
) -> EdgePerturbation:
    """Algorithm 1 under individual DP (cai Prop 3.1 and Thm 3.1, cai Algorithm 1 under individual DP, §3.2; docs/cai.md, Errata and modes (E1)).

    λ = 8Lκ1/ε and γ = 8Lκ2/ε (= 8L/ε and 2L/ε for the logistic link; the authors' code).
    Prop 3.1 needs λ ≥ 8Lκ1/ε and γ ≥ 8Lκ2/ε for (ε, 0)-individual DP, L = ``per_user``.
    Optional (docs/cai.md, Errata and modes (E1), the proof of Thm 3.1): with ``c0`` > 0, γ = max(8Lκ2/ε,
    c0·√(S log n)), S = 2mL/n, which needs ``n_items`` and ``n_users``. At ε = ∞, λ = 0 and
    γ = 0 (with c0 = 0): the unpenalised MLE of the paper's non-private curve (cai §4.2).
    """
    eps = jnp.asarray(eps, jnp.float64)
    per_user = jnp.asarray(per_user, jnp.float64)
    lam = 8.0 * per_user * link.kappa1 / eps
    gamma = 8.0 * per_user * link.kappa2 / eps
    if c0:
        if n_items is None or n_users is None:
            raise ValueError("c0 > 0 needs n_items and n_users (γ = c0·√(S log n), S = 2mL/n)")
        s = 2.0 * jnp.asarray(n_users, jnp.float64) * per_user / n_items
        gamma = jnp.maximum(gamma, c0 * jnp.sqrt(s * jnp.log(n_items)))
    return EdgePerturbation(lam=lam, gamma=gamma)


COUNT_NOISE_MODES = {"paper": 1.0, "strict": 2.0}


def individual_count_noise_scale(eps, per_user, mode: str = "strict"):
    """cai Algorithm 3 (cai Algorithm 3, §3.3; docs/cai.md, Errata and modes (E3)): Laplace scale c·L/ε on the win counts.

    ``mode="paper"``: c = 1, Laplace(L/ε) as published (and in the authors' code). It uses
    the ℓ∞ sensitivity L of (N_1, …, N_n), so it is only 2ε-DP.
    ``mode="strict"`` (default): c = 2, Laplace(2L/ε); 2L is the ℓ1 sensitivity (one user's
    L wins move between items), so the Laplace mechanism is (ε, 0)-individual DP.
    """
    try:
        factor = COUNT_NOISE_MODES[mode]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown count-noise mode {mode!r}; choose one of {sorted(COUNT_NOISE_MODES)}"
        ) from None
    return factor * jnp.asarray(per_user, jnp.float64) / jnp.asarray(eps, jnp.float64)


def one_shot_noise_scale(ergodicity, d, k, n_items, eps, per_user=1.0, delta=None):
    """Laplace scale of the one-shot spectral top-k baseline (Qiao, Su & Zhang [40] as coded
    by cai's authors, one-shot steps 5–6 of docs/cai.md, Mechanisms and estimators; Errata and
    modes (E13)).

    s = 2/(d·L·(1 − ρ_erg)) (the authors' ℓ∞-sensitivity bound of the stationary
    distribution) and λ_os = 8·s·√(k log(n/δ))/ε with δ = 1/n² by default. ρ_erg is the
    data-dependent ergodicity coefficient (not privatised, as in the authors' code).
    """
    delta = 1.0 / n_items**2 if delta is None else delta
    s = 2.0 / (jnp.asarray(d, jnp.float64) * per_user * (1.0 - ergodicity))
    return 8.0 * s * jnp.sqrt(k * jnp.log(n_items / delta)) / jnp.asarray(eps, jnp.float64)
