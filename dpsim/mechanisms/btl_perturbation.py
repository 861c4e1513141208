"""Laplace objective perturbation of the BTL likelihood: the release of cai Algorithm 1.

The mechanism releases the ridge γ and the linear term w ~ Laplace(λ)^n of the perturbed
objective 𝓛(θ; W) + (γ/2)‖θ‖² + wᵀθ (cai eq. (2.1) with Algorithm 1's terms); the minimiser
(:func:`dpsim.estimators.perturbed_mle`, :func:`dpsim.estimators.guarded_perturbed_mle`) is
a function of W and this release. λ and γ are the calibrations of
:mod:`dpsim.mechanisms.calibration` (edge DP: Prop 2.1, Thm 2.1; individual DP: Prop 3.1,
Thm 3.1). ε = ∞ gives w = 0.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from dpsim.mechanisms.calibration import (
    edge_objective_perturbation,
    individual_objective_perturbation,
)
from dpsim.mechanisms.laplace import laplace_noise
from dpsim.models.btl import real_items
from dpsim.models.links import LOGISTIC, Link
from dpsim.validate import require, require_eps, require_int, require_probability


class LaplacePerturbation(NamedTuple):
    """The release of cai Algorithm 1: the ridge γ (scalar) and the Laplace vector w (n,)."""

    gamma: jax.Array
    w: jax.Array


def objective_perturbation_edge(
    key, eps, p, capacity: int, *, c0=2.0, link: Link = LOGISTIC, n_items=None
) -> LaplacePerturbation:
    """cai Algorithm 1 under edge DP (§2.2.1, Prop 2.1, Thm 2.1): λ = 8κ1/ε,
    γ = max(4κ2/ε, c0√(np log n)) and w ~ Laplace(λ)^n.

    Args:
        key: PRNG key of w.
        eps: ε > 0 (inf: w = 0); p: edge probability in (0, 1]; c0: ridge constant ≥ 0;
            link: the comparison link (κ1, κ2). All but ``link`` may be traced.
        capacity: the length of w (n, or the padded capacity).
        n_items: the real items when padded (may be traced): n in γ, and w is 0 in the
            padding (the real entries are the unpadded draws: prefix-stable).
    Returns:
        :class:`LaplacePerturbation` (γ scalar, w (capacity,)).
    Raises:
        ValueError naming a bad concrete ε, p or c0.
    """
    require_eps(eps)
    require_probability(p)
    require("c0", c0, lambda c: c >= 0, "must be ≥ 0")
    n = capacity if n_items is None else n_items
    cal = edge_objective_perturbation(eps, n, p, c0=c0, link=link)
    w = laplace_noise(key, cal.lam, (capacity,))
    if n_items is not None:
        w = jnp.where(real_items(capacity, n_items), w, 0.0)
    return LaplacePerturbation(cal.gamma, w)


def objective_perturbation_individual(
    key, eps, per_user, n_items: int, *, link: Link = LOGISTIC, c0: float = 0.0, n_users=None
) -> LaplacePerturbation:
    """cai Algorithm 1 under individual DP (§3.2, Prop 3.1, Thm 3.1): λ = 8Lκ1/ε, γ = 8Lκ2/ε
    (L = ``per_user``) and w ~ Laplace(λ)^n; at ε = ∞, λ = γ = 0 (the unpenalised MLE, cai §4.2).
    ``c0`` > 0 uses γ = max(8Lκ2/ε, c0√(S log n)), S = 2mL/n (docs/cai.md, Errata and modes (E1);
    needs ``n_users``).

    Args: key: PRNG key of w; eps: ε > 0; per_user: L ≥ 1; n_items: n, the length of w.
    Returns: :class:`LaplacePerturbation` (γ scalar, w (n,)).
    Raises: ValueError naming a bad concrete ε or L.
    """
    require_eps(eps)
    require_int(per_user, "per_user", 1)
    cal = individual_objective_perturbation(
        eps, per_user, link, c0=c0, n_items=n_items, n_users=n_users
    )
    return LaplacePerturbation(cal.gamma, laplace_noise(key, cal.lam, (n_items,)))
