"""Local privacy for pairwise rankings (xu §3; docs/xu.md, Mechanisms and estimators):
classic randomized response (RR), debiased RR and the Laplace mechanism, applied by each user
to each of their m(m−1)/2 comparisons, with budget ε_l per comparison.

Mechanisms (names used by :func:`privatise`):

- ``"classic_rr"`` (xu §3.1): ỹ = y w.p. 1 − p_ε, 1 − y w.p. p_ε = 1/(1 + e^ε). The
  analyst sees ỹ̄_e, the mean of ỹ over users, which is shrunk toward ½ (Lemma 1), so
  the classic-RR MLE is inconsistent (docs/xu.md, Mechanisms and estimators).
- ``"debiased_rr"`` (xu §3.2 eq. (1), Lemma 2): z = ((e^ε+1)ỹ − 1)/(e^ε − 1); E z = p*_e,
  Var z = coth²(ε/2)/4 − (p*_e − ½)². The analyst sees z̄_e.
- ``"laplace"`` (docs/xu.md, Mechanisms and estimators; Errata and modes (A6); the paper does not specify it): z = y + Laplace(1/ε),
  unclipped; E z = p*_e, Var z = p*(1 − p*) + 2/ε².
- ``"none"``: the raw mean ȳ_e.

Each is ε_l-LDP per comparison (RR: the likelihood ratio of a released bit is e^ε; debiased
RR is a post-processing of it; Laplace: sensitivity 1, scale 1/ε). A user's whole vector is
(m(m−1)/2)·ε_l-LDP by composition (:func:`dpsim.mechanisms.privacy_profile.composed_user_budget`).

**Sufficient statistics** (docs/xu.md, Mechanisms and estimators). Everything here starts from the raw wins per privacy
group and pair, n1_{g,e} (:func:`dpsim.models.complete_btl.sample_pair_wins`), and draws the
privatised sums directly:

- RR: N_{g,e} = Bin(n1, 1 − p_ε) + Bin(L_g − n1, p_ε) ones released
  (:func:`dpsim.mechanisms.randomized_response.randomized_response_counts`);
  classic ỹ̄_e = Σ_g N_{g,e}/L, debiased z̄_e = L⁻¹ Σ_g ((e^{ε_g}+1)N_{g,e} − L_g)/(e^{ε_g} − 1).
- Laplace: z̄_e = L⁻¹ (Σ_g n1_{g,e} + Σ_g (Γ_g − Γ'_g)/ε_g), Γ, Γ' iid Gamma(L_g, 1): exact,
  since a Laplace(b) variable is the difference of two Exp(b) variables.

**Common random numbers.** :func:`privatise_all` returns all four views from one key: the
same raw wins for every mechanism and the **same flipped counts N** for classic and debiased
RR (so their rankings coincide exactly under homogeneous ε, docs/xu.md, Mechanisms and estimators). :func:`privatise`
returns one of them and uses the same sub-keys, so calling it per mechanism with one key gives
the same draws.

:func:`release_per_user` is the slow per-user reference (materialises ỹ, z), for tests.

**Validation.** Each public function checks its concrete inputs once (:func:`_groups`: the
group sizes and ``group_eps``; ``user_eps``) and then calls the unchecked ``_`` kernels here
and in :mod:`.randomized_response`, so a bad ε is reported once, under the caller's name.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from dpsim.mechanisms.laplace import laplace_noise
from dpsim.mechanisms.privacy_profile import coth_half, tanh_half
from dpsim.mechanisms.randomized_response import (
    _debiased_response,
    _randomized_response,
    _randomized_response_counts,
)
from dpsim.validate import require, require_eps, require_group_sizes

MECHANISMS = ("debiased_rr", "classic_rr", "laplace", "none")


def require_mechanism(mechanism: str, allowed=MECHANISMS) -> None:
    """ValueError naming ``mechanism`` unless it is one of ``allowed``."""
    if mechanism not in allowed:
        raise ValueError(f"mechanism={mechanism!r} is unknown; choose one of {list(allowed)}")


def _groups(group_sizes, group_eps):
    """(sizes, eps) as float64 vectors of one length (validated when concrete: the one check
    of ``group_eps`` in each public function's call chain)."""
    require_group_sizes(group_sizes)
    require_eps(group_eps, "group_eps")
    sizes = jnp.atleast_1d(jnp.asarray(group_sizes, jnp.float64))
    eps = jnp.broadcast_to(jnp.atleast_1d(jnp.asarray(group_eps, jnp.float64)), sizes.shape)
    return sizes, eps


def _require_wins(wins, sizes):
    require("wins", wins, lambda w: w >= 0, "must be a count ≥ 0")
    if jnp.ndim(wins) != 2 or jnp.shape(wins)[0] != sizes.shape[0]:
        raise ValueError(
            f"wins must have shape (n_groups, n_pairs) with n_groups={sizes.shape[0]}, "
            f"got {jnp.shape(wins)}"
        )


def rr_win_probability(p_star, eps):
    """P(ỹ_ij = 1) = ½ + (p*_ij − ½)·tanh(ε/2) under classic RR (xu §3.1 Lemma 1, Example 1).

    Args: p_star: BTL probabilities (any shape); eps: ε > 0 (broadcastable).
    Returns: same shape, float64. Example 1: p* = 2/3, ε = log 2 → 5/9; p* = 4/5 → 3/5."""
    require_eps(eps)
    _require_p_star(p_star)
    return _rr_win(p_star, eps)


def _require_p_star(p_star):
    require("p_star", p_star, lambda p: (p >= 0) & (p <= 1), "must lie in [0, 1]")


def _rr_win(p_star, eps):
    """:func:`rr_win_probability` of validated inputs."""
    return 0.5 + (jnp.asarray(p_star, jnp.float64) - 0.5) * tanh_half(eps)


# ---------------------------------------------------------------------------------------
# Sufficient-statistic samplers (docs/xu.md, Mechanisms and estimators)
# ---------------------------------------------------------------------------------------
def rr_pair_counts(key, wins, group_sizes, group_eps) -> jax.Array:
    """Released ones N_{g,e} when each of the L_g users of group g sends each answer through
    classic RR at ε_g (xu §3.1; docs/xu.md, Mechanisms and estimators): Bin(n1, 1 − p_ε) + Bin(L_g − n1, p_ε).

    Args:
        key: PRNG key.
        wins: (n_groups, M) raw wins n1 (from ``sample_pair_wins``).
        group_sizes: (n_groups,) L_g.  group_eps: (n_groups,) ε_g > 0 (or a scalar).
    Returns:
        (n_groups, M) float64 released counts.
    """
    sizes, eps = _groups(group_sizes, group_eps)
    _require_wins(wins, sizes)
    return _pair_counts(key, wins, sizes, eps)


def _pair_counts(key, wins, sizes, eps):
    """:func:`rr_pair_counts` of the validated vectors of :func:`_groups`."""
    return _randomized_response_counts(key, wins, sizes[:, None], eps[:, None])


def _group_share(sizes):
    return sizes / jnp.sum(sizes)


def classic_rr_mean(counts, group_sizes) -> jax.Array:
    """ỹ̄_e = L⁻¹ Σ_g N_{g,e}, the mean classic-RR answer per pair (xu §5.3 baseline; docs/xu.md, Mechanisms and estimators; Errata and modes (A7)).

    Args: counts: (n_groups, M) from :func:`rr_pair_counts`; group_sizes: (n_groups,).
    Returns: (M,) float64 in [0, 1]."""
    require_group_sizes(group_sizes)
    return _classic_mean(counts, jnp.atleast_1d(jnp.asarray(group_sizes, jnp.float64)))


def _classic_mean(counts, sizes):
    """:func:`classic_rr_mean` of validated float64 ``sizes``."""
    return jnp.sum(counts, axis=0) / jnp.sum(sizes)


def debiased_rr_mean(counts, group_sizes, group_eps) -> jax.Array:
    """z̄_e = L⁻¹ Σ_g ((e^{ε_g}+1)N_{g,e} − L_g)/(e^{ε_g} − 1), the mean debiased-RR release
    per pair (xu §3.2 eq. (1), Lemma 2; docs/xu.md, Mechanisms and estimators): the group mean of ỹ put through
    :func:`~dpsim.mechanisms.randomized_response.debiased_response`, weighted by L_g/L.

    Args: counts: (n_groups, M); group_sizes, group_eps: (n_groups,).
    Returns: (M,) float64; unbiased for p*_e, may lie outside [0, 1]."""
    return _debiased_mean(counts, *_groups(group_sizes, group_eps))


def _debiased_mean(counts, sizes, eps):
    """:func:`debiased_rr_mean` of the validated vectors of :func:`_groups`."""
    group_mean = counts / jnp.where(sizes > 0, sizes, 1.0)[:, None]
    per_group = _debiased_response(group_mean, eps[:, None])
    return jnp.sum(
        jnp.where(sizes[:, None] > 0, _group_share(sizes)[:, None] * per_group, 0.0), axis=0
    )


def nonprivate_mean(wins, group_sizes) -> jax.Array:
    """ȳ_e = L⁻¹ Σ_g n1_{g,e}, the raw win frequency (xu §4.1 eq. (2)). Returns: (M,)."""
    return classic_rr_mean(wins, group_sizes)


def laplace_pair_mean(key, wins, group_sizes, group_eps) -> jax.Array:
    """z̄_e = L⁻¹ Σ_l (y^{(l)}_e + Laplace(1/ε_l)) drawn from its sufficient statistic
    (docs/xu.md, Mechanisms and estimators): L⁻¹ (Σ_g n1_{g,e} + Σ_g (Γ_{g,e} − Γ'_{g,e})/ε_g), Γ, Γ' iid
    Gamma(L_g, 1) (exact: Laplace(b) = Exp(b) − Exp(b)). ε = ∞ adds nothing.

    Args: key; wins: (n_groups, M); group_sizes, group_eps: (n_groups,).
    Returns: (M,) float64, unbiased for p*_e, unclipped."""
    sizes, eps = _groups(group_sizes, group_eps)
    _require_wins(wins, sizes)
    return _laplace_mean(key, wins, sizes, eps)


def _laplace_mean(key, wins, sizes, eps):
    """:func:`laplace_pair_mean` of the validated vectors of :func:`_groups`."""
    k_plus, k_minus = jax.random.split(key)
    shape = jnp.shape(wins)
    shape_param = jnp.broadcast_to(sizes[:, None], shape)
    gamma_diff = jax.random.gamma(k_plus, shape_param) - jax.random.gamma(k_minus, shape_param)
    noise = jnp.where(sizes[:, None] > 0, gamma_diff / eps[:, None], 0.0)
    return (jnp.sum(wins, axis=0) + jnp.sum(noise, axis=0)) / jnp.sum(sizes)


class PairMeans(NamedTuple):
    """The per-pair means an analyst sees under each mechanism, from one replicate's raw wins
    (common random numbers). Each field: (M,) float64."""

    none: jax.Array
    classic_rr: jax.Array
    debiased_rr: jax.Array
    laplace: jax.Array


def _keys(key):
    k_rr, k_laplace = jax.random.split(key)
    return k_rr, k_laplace


def privatise_all(key, wins, group_sizes, group_eps) -> PairMeans:
    """Every mechanism's per-pair mean from the same raw wins, with the same RR counts N for
    classic and debiased RR (docs/xu.md, Experiments as run: common random numbers).

    Args: key: the privacy key; wins: (n_groups, M); group_sizes, group_eps: (n_groups,).
    Returns: :class:`PairMeans`."""
    sizes, eps = _groups(group_sizes, group_eps)
    _require_wins(wins, sizes)
    k_rr, k_laplace = _keys(key)
    counts = _pair_counts(k_rr, wins, sizes, eps)
    return PairMeans(
        none=_classic_mean(wins, sizes),
        classic_rr=_classic_mean(counts, sizes),
        debiased_rr=_debiased_mean(counts, sizes, eps),
        laplace=_laplace_mean(k_laplace, wins, sizes, eps),
    )


def privatise(key, wins, group_sizes, group_eps, mechanism: str) -> jax.Array:
    """One mechanism's per-pair mean (the field ``mechanism`` of :func:`privatise_all`, with
    the same draws for the same key, but only that mechanism's work).

    Args: as :func:`privatise_all`; mechanism: one of :data:`MECHANISMS` (Python string).
    Returns: (M,) float64."""
    require_mechanism(mechanism)
    if mechanism == "none":  # ε plays no part: not checked
        return nonprivate_mean(wins, group_sizes)
    sizes, eps = _groups(group_sizes, group_eps)
    _require_wins(wins, sizes)
    k_rr, k_laplace = _keys(key)
    if mechanism == "laplace":
        return _laplace_mean(k_laplace, wins, sizes, eps)
    counts = _pair_counts(k_rr, wins, sizes, eps)
    if mechanism == "classic_rr":
        return _classic_mean(counts, sizes)
    return _debiased_mean(counts, sizes, eps)


def release_per_user(key, y, user_eps, mechanism: str) -> jax.Array:
    """Every user's released values (the slow per-user reference of docs/xu.md, Mechanisms and estimators, for tests).

    Args:
        key: PRNG key.
        y: (n_users, M) raw answers in {0, 1}.
        user_eps: (n_users,) per-comparison budgets ε_l (or a scalar).
        mechanism: one of :data:`MECHANISMS`.
    Returns:
        (n_users, M) float64: ỹ (classic RR), z (debiased RR, eq. (1)), y + Laplace(1/ε_l)
        (Laplace) or y (none). The analyst's z̄ is the mean over axis 0.
    """
    require_mechanism(mechanism)
    require_eps(user_eps, "user_eps")
    y = jnp.asarray(y)
    eps = jnp.broadcast_to(jnp.reshape(jnp.asarray(user_eps, jnp.float64), (-1, 1)), y.shape)
    if mechanism == "none":
        return y.astype(jnp.float64)
    if mechanism == "laplace":
        return y.astype(jnp.float64) + laplace_noise(key, 1.0 / eps, y.shape)
    released = _randomized_response(key, y, eps).astype(jnp.float64)
    return released if mechanism == "classic_rr" else _debiased_response(released, eps)


# ---------------------------------------------------------------------------------------
# Exact moments of the per-pair means (used by the oracle of dpsim.theory.xu and by tests)
# ---------------------------------------------------------------------------------------
def pair_mean_expectation(p_star, group_sizes, group_eps, mechanism: str) -> jax.Array:
    """E z̄_e: p*_e for the unbiased mechanisms, L⁻¹ Σ_g L_g q̃_g(p*_e) for classic RR (Lemma 1).

    Args: p_star: (M,); group_sizes, group_eps: (n_groups,); mechanism. Returns: (M,)."""
    require_mechanism(mechanism)
    sizes, eps = _groups(group_sizes, group_eps)
    p = jnp.asarray(p_star, jnp.float64)
    if mechanism != "classic_rr":
        return p
    _require_p_star(p)
    return jnp.sum(_group_share(sizes)[:, None] * _rr_win(p[None, :], eps[:, None]), axis=0)


def pair_mean_variance(p_star, group_sizes, group_eps, mechanism: str) -> jax.Array:
    """Var z̄_e = L⁻² Σ_g L_g v_g(p*_e), with the per-answer variance v (xu §3.2, eq. (1), Lemma 2; docs/xu.md, Mechanisms and estimators; Predictions (P4)):

    - none: p(1 − p);  classic RR: q̃(1 − q̃), q̃ = ½ + (p − ½)tanh(ε/2);
    - debiased RR: coth²(ε/2)/4 − (p − ½)² (Lemma 2);  Laplace: p(1 − p) + 2/ε².

    Args: p_star: (M,) BTL probabilities; group_sizes, group_eps: (n_groups,); mechanism.
    Returns: (M,) float64.
    """
    require_mechanism(mechanism)
    sizes, eps = _groups(group_sizes, group_eps)
    p = jnp.asarray(p_star, jnp.float64)[None, :]
    e = eps[:, None]
    if mechanism == "none":
        per_answer = jnp.broadcast_to(p * (1 - p), (sizes.shape[0], p.shape[1]))
    elif mechanism == "classic_rr":
        _require_p_star(p)
        q = _rr_win(p, e)
        per_answer = q * (1 - q)
    elif mechanism == "debiased_rr":
        per_answer = coth_half(e) ** 2 / 4 - (p - 0.5) ** 2
    else:
        per_answer = p * (1 - p) + 2.0 / e**2
    return jnp.sum(sizes[:, None] * per_answer, axis=0) / jnp.sum(sizes) ** 2


__all__ = [
    "MECHANISMS",
    "require_mechanism",
    "rr_win_probability",
    "rr_pair_counts",
    "classic_rr_mean",
    "debiased_rr_mean",
    "nonprivate_mean",
    "laplace_pair_mean",
    "PairMeans",
    "privatise_all",
    "privatise",
    "release_per_user",
    "pair_mean_expectation",
    "pair_mean_variance",
]
