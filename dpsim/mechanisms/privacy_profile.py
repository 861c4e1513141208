"""Per-user privacy levels of xu (Xu, Sun, Cheng, "Rate-Optimal Rank Aggregation with Private
Pairwise Rankings"; xu §4.1; docs/xu.md, Errata and modes (A20–A21)): heterogeneous ε as groups of
users, the paper's privacy summaries G(ε), H(ε), K(ε), ρ(ε, κ), and the composed per-user budget.

**Groups.** L users (``n_users``) with personal budgets ε_l are stored as groups of users that
share a budget: ``group_eps`` (n_groups,) and ``group_sizes`` (n_groups,) with Σ sizes = L. A
homogeneous ε is one group. Samplers draw one binomial count per group and pair (docs/xu.md, Mechanisms and estimators),
so the work does not grow with L. Groups of size 0 are padding (they let profiles with
different numbers of groups share one array shape) and contribute nothing.

**Named profiles** (an extension, docs/xu.md, Errata and modes (A21): the paper's experiments are all homogeneous).
A profile is a tuple of (fraction of users, multiple of the base ε); group sizes are resolved
on the host for a given L (largest remainder, so they sum to L), the budgets are
multiplier·ε and may be traced. ``"homogeneous"`` is the paper's setting.

**Budgets.** ε is a *per-comparison* budget throughout (the paper's "privacy guarantee for each
pairwise ranking"): each released comparison is ε_l-LDP. A user releases all m(m−1)/2
comparisons, so by basic composition the user's whole vector is (m(m−1)/2)·ε_l-LDP
(:func:`composed_user_budget`, xu §3.2, eq. (1), Lemma 2; docs/xu.md, Errata and modes (A20); reported as metadata only).

ε = ∞ (no privacy) is allowed everywhere and gives coth(∞) = tanh(∞) = 1.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpsim.validate import require, require_eps, require_group_sizes, require_int

# name -> ((fraction of users, multiple of the base ε), ...); fractions sum to 1.
PROFILES: dict[str, tuple[tuple[float, float], ...]] = {
    "homogeneous": ((1.0, 1.0),),
    # half of the users at ε, half ten times stricter: G ≫ 1/K (xu Theorems 1–6, §4 Thm 3 caveat)
    "half_tenth": ((0.5, 1.0), (0.5, 0.1)),
    # thirds at ε/4, ε and 4ε
    "thirds": ((1 / 3, 0.25), (1 / 3, 1.0), (1 / 3, 4.0)),
    # a strict minority: 10% of the users at ε/10, the rest at ε
    "strict_minority": ((0.9, 1.0), (0.1, 0.1)),
}


class PrivacyProfile(NamedTuple):
    """Users grouped by privacy budget.

    Attributes:
        group_eps: (n_groups,) float64 per-comparison budgets ε_g.
        group_sizes: (n_groups,) float64 user counts L_g (integers; 0 = padding).
    """

    group_eps: jax.Array
    group_sizes: jax.Array

    @property
    def n_users(self):
        """L = Σ_g L_g."""
        return jnp.sum(self.group_sizes)


def _require_profile_name(name: str) -> None:
    if name not in PROFILES:
        raise ValueError(f"profile={name!r} is unknown; choose one of {sorted(PROFILES)}")


def profile_group_sizes(name: str, n_users: int) -> np.ndarray:
    """The group sizes L_g of a named profile for L users (host; largest-remainder rounding,
    so they sum to L exactly).

    Args:
        name: a key of :data:`PROFILES`.
        n_users: L ≥ 1 (Python int).
    Returns:
        (n_groups,) int64 sizes.
    """
    _require_profile_name(name)
    require_int(n_users, "n_users", 1)
    fractions = np.asarray([f for f, _ in PROFILES[name]])
    exact = fractions * int(n_users)
    sizes = np.floor(exact).astype(np.int64)
    short = int(n_users) - int(sizes.sum())
    order = np.lexsort((np.arange(len(exact)), -(exact - sizes)))
    sizes[order[:short]] += 1
    return sizes


def profile_group_eps(name: str, eps) -> jax.Array:
    """The group budgets multiplier·ε of a named profile (ε may be traced).

    Args:
        name: a key of :data:`PROFILES`.
        eps: the base per-comparison budget ε > 0 (scalar).
    Returns:
        (n_groups,) float64.
    """
    _require_profile_name(name)
    require_eps(eps)
    multipliers = jnp.asarray([mult for _, mult in PROFILES[name]], jnp.float64)
    return multipliers * jnp.asarray(eps, jnp.float64)


def privacy_profile(name: str, n_users: int, eps) -> PrivacyProfile:
    """A named profile resolved for L users at base budget ε (sizes on the host, budgets
    traceable). ``privacy_profile("homogeneous", L, eps)`` is the paper's setting."""
    return PrivacyProfile(
        profile_group_eps(name, eps), jnp.asarray(profile_group_sizes(name, n_users), jnp.float64)
    )


def homogeneous_profile(n_users, eps) -> PrivacyProfile:
    """All L users at budget ε: one group (ε and L may be traced)."""
    require_int(n_users, "n_users", 1)
    require_eps(eps)
    return PrivacyProfile(
        jnp.reshape(jnp.asarray(eps, jnp.float64), (1,)),
        jnp.reshape(jnp.asarray(n_users, jnp.float64), (1,)),
    )


def pad_profile(profile: PrivacyProfile, n_groups: int) -> PrivacyProfile:
    """``profile`` padded with empty groups (ε = 1, size 0) to ``n_groups`` groups, so that
    profiles with different numbers of groups share one array shape."""
    extra = n_groups - profile.group_eps.shape[0]
    if extra < 0:
        raise ValueError(
            f"n_groups={n_groups} is smaller than the profile's {profile.group_eps.shape[0]} groups"
        )
    return PrivacyProfile(
        jnp.concatenate([profile.group_eps, jnp.ones((extra,))]),
        jnp.concatenate([profile.group_sizes, jnp.zeros((extra,))]),
    )


def per_user_eps(group_eps, group_sizes) -> np.ndarray:
    """(L,) the budget of every user, groups in order (host; for per-user reference samplers)."""
    return np.repeat(np.asarray(group_eps, np.float64), np.asarray(group_sizes).astype(np.int64))


# ---------------------------------------------------------------------------------------
# Privacy summaries (xu §4.1): means over users, written over groups with weights L_g.
# ---------------------------------------------------------------------------------------
def coth_half(eps):
    """coth(ε/2) = (e^ε + 1)/(e^ε − 1), written to stay finite at ε = ∞ (→ 1)."""
    eps = jnp.asarray(eps, jnp.float64)
    return (1.0 + jnp.exp(-eps)) / -jnp.expm1(-eps)


def tanh_half(eps):
    """tanh(ε/2) = (e^ε − 1)/(e^ε + 1) = 1 − 2p_ε (ε = ∞ → 1)."""
    return jnp.tanh(jnp.asarray(eps, jnp.float64) / 2.0)


def _user_mean(values, group_sizes):
    if group_sizes is None:
        return jnp.mean(values)
    sizes = jnp.asarray(group_sizes, jnp.float64)
    return jnp.sum(sizes * values) / jnp.sum(sizes)


def _check(eps, group_sizes):
    require_eps(eps)
    if group_sizes is not None:
        require_group_sizes(group_sizes)


def privacy_G(eps, group_sizes=None):
    """G(ε) = L⁻¹ Σ_l ((e^{ε_l}+1)/(e^{ε_l}−1))² = mean_l coth²(ε_l/2), the "averaged privacy"
    (xu §4.1, Thm 1, Thm 2 eqs. (6)–(7); xu §4.1); G ≥ 1, ≈ 4/ε² for small ε, 1 at ε = ∞.

    Args:
        eps: a scalar ε (homogeneous), per-user budgets (L,), or group budgets (n_groups,).
        group_sizes: (n_groups,) user counts when ``eps`` holds group budgets; None otherwise.
    Returns:
        scalar float64.
    """
    _check(eps, group_sizes)
    return _user_mean(coth_half(eps) ** 2, group_sizes)


def privacy_H(eps, group_sizes=None):
    """H(ε) = max_l (e^{ε_l}+1)/(e^{ε_l}−1) = max_l coth(ε_l/2) (xu §4.1 before Thm 1; not squared).
    Empty groups (size 0) are ignored. Args and Returns as :func:`privacy_G`."""
    _check(eps, group_sizes)
    values = coth_half(eps)
    if group_sizes is None:
        return jnp.max(values)
    return jnp.max(jnp.where(jnp.asarray(group_sizes) > 0, values, 1.0))


def privacy_K(eps, group_sizes=None):
    """K(ε) = L⁻¹ Σ_l ((e^{ε_l}−1)/(e^{ε_l}+1))² = mean_l tanh²(ε_l/2) (xu §4.1, proof of Thm 3 in the supplement; the
    minimax lower bound is 1/√(κ m L K(ε))). By Jensen G ≥ 1/K, equality iff ε is
    homogeneous. Args and Returns as :func:`privacy_G`."""
    _check(eps, group_sizes)
    return _user_mean(tanh_half(eps) ** 2, group_sizes)


def privacy_rho(eps, kappa, group_sizes=None):
    """ρ(ε, κ) = (1 + κ)·max{H(ε), G(ε)} (xu §4.1 Thm 1, eq. (5); xu §4.1). Args: as :func:`privacy_G`, and
    κ ≥ 1 the condition number. Returns: scalar."""
    require("kappa", kappa, lambda k: k >= 1, "must be ≥ 1")
    return (1.0 + jnp.asarray(kappa, jnp.float64)) * jnp.maximum(
        privacy_H(eps, group_sizes), privacy_G(eps, group_sizes)
    )


def composed_user_budget(n_items: int, eps):
    """(m(m−1)/2)·ε, the LDP budget of one user's whole vector of comparisons by basic
    composition (not in the paper; xu §3.2, eq. (1), Lemma 2; docs/xu.md, Errata and modes (A20); the paper's ε is per comparison). Metadata only.

    Args: n_items: m ≥ 2; eps: per-comparison ε (any shape). Returns: same shape as eps."""
    require_int(n_items, "n_items", 2)
    require_eps(eps)
    return n_items * (n_items - 1) / 2 * jnp.asarray(eps, jnp.float64)


__all__ = [
    "PROFILES",
    "PrivacyProfile",
    "profile_group_sizes",
    "profile_group_eps",
    "privacy_profile",
    "homogeneous_profile",
    "pad_profile",
    "per_user_eps",
    "coth_half",
    "tanh_half",
    "privacy_G",
    "privacy_H",
    "privacy_K",
    "privacy_rho",
    "composed_user_budget",
]
