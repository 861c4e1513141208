"""Noise on the pairwise differential counts of the private Rasch spectral estimator:
accounting (how much noise each count needs) and the noising itself (nguyen §4, Lemma 4.1,
Eq. (4); nguyen Lemma 4.1, §4.2; docs/nguyen.md, Mechanisms and estimators; Errata and modes (Q2–Q4)).

**Sensitivity** (nguyen Lemma 4.1, §4.2). One user changing their row changes each Y_ij by at most 1.
User l adds 1 to Y_ij exactly when (i, j) goes from the set P_l of items they answered
correctly to the set N_l of items they answered wrongly, a directed cut of the queried
graph G; so replacing a row changes the vector of queried counts on at most
|S Δ S′| ≤ 2·maxcut(G) coordinates, each by ±1: ‖ΔY‖₂² = ‖ΔY‖₁ ≤ 2·maxcut(G), with
maxcut(K_m) = ⌊m²/4⌋ (attained by x = (1,…,1,0,…,0) against 1 − x).

**Accounting modes** (``accounting``), the "Δ²" below, for the discrete Gaussian
σ = √(Δ²/(2ρ)) (ρ-zCDP; per-count composition of ρ_q = 1/(2σ²) or the multivariate bound
ρ = Δ₂²/(2σ²), CKS20) and the discrete Laplace scale t = Δ/ε (ε-DP):

- ``"paper"``: Δ² = #queried ordered pairs (m(m−1) dense, ΣG = 2|E| sparse): Lemma 4.1's
  composition over every count, and the real-data script. Valid.
- ``"synthetic_code"``: Δ² = #queried ordered pairs / 2 (the synthetic script, docs/nguyen.md, Mechanisms and estimators). **Not
  proven private**: at m = 25 it counts 300 queries, below the joint bound 2⌊m²/4⌋ = 312,
  so σ is ~2% short of the claimed ρ. Figure-reproduction only (Fig. 1).
- ``"tight_joint"`` (default): Δ² = 2·min(|E|, ⌊m²/4⌋) ≥ 2·maxcut(G), the joint L2
  (Gaussian) or L1 (Laplace) sensitivity bound above (= 2⌊m²/4⌋ dense, about half the
  paper's variance). Valid.

For the Laplace mechanism the paper's scale is m(m−1)/ε* (basic composition over every
count, A16); ``"synthetic_code"`` is the same there (both scripts use it).

**Noising** (docs/nguyen.md, Mechanisms and estimators): Ỹ_ij = clip(Y_ij + Z_ij) on queried pairs, 0 off the graph, with
``clip="one"`` (max(1, ·), the code's and the default, A15) or ``"zero"`` (max(0, ·)); and
``noise="all"`` (default: every queried count, including zeros) or ``"nonzero"`` (the code:
zero counts are left at 0 un-noised, which leaks which counts are zero, docs/nguyen.md, Errata and modes (Q2)).

Validation: concrete inputs are checked and a bad one raises ``ValueError`` naming the value
(dpsim.validate); traced values (inside jit/vmap) pass unchecked.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from dpsim.mechanisms.discrete import (
    DEFAULT_MAX_ROUNDS,
    discrete_gaussian_with_flag,
    discrete_laplace,
)
from dpsim.mechanisms.sparsify import DEFAULT_MAX_TRIES, dense_item_graph, sparsification_graph
from dpsim.validate import require_choice, require_eps, require_positive

ACCOUNTING_MODES = ("paper", "synthetic_code", "tight_joint")
MECHANISMS = ("gaussian", "laplace")
CLIP_MODES = ("one", "zero")
NOISE_MODES = ("all", "nonzero")

__all__ = [
    "ACCOUNTING_MODES",
    "MECHANISMS",
    "CLIP_MODES",
    "NOISE_MODES",
    "queried_pairs",
    "count_sensitivity",
    "gaussian_count_sigma",
    "laplace_count_scale",
    "count_noise",
    "noise_mean_square",
    "noised_counts",
    "privatise_counts",
    "max_cut_complete",
    "PrivateCounts",
    "private_differential_counts",
]


def max_cut_complete(n_items: int) -> int:
    """⌊m²/4⌋, the maximum cut of the complete graph K_m."""
    return (n_items * n_items) // 4


def queried_pairs(graph) -> jax.Array:
    """Number of ordered pairs (i, j), i ≠ j, with G_ij (= 2|E|). Args: graph (m, m) bool."""
    graph = jnp.asarray(graph, bool) & ~jnp.eye(graph.shape[0], dtype=bool)
    return jnp.sum(graph).astype(jnp.float64)


def count_sensitivity(graph, accounting: str = "tight_joint") -> jax.Array:
    """Δ² of the accounting mode (module docstring) for the queried graph (traceable).

    Args: graph: (n_items, n_items) bool (:func:`dpsim.mechanisms.sparsify.dense_item_graph`
    for the dense chain); accounting: one of :data:`ACCOUNTING_MODES`.
    Returns: float64 scalar: #pairs, #pairs/2 or 2·min(|E|, ⌊m²/4⌋).
    """
    require_choice("accounting", accounting, ACCOUNTING_MODES)
    pairs = queried_pairs(graph)
    if accounting == "paper":
        return pairs
    if accounting == "synthetic_code":
        return pairs / 2.0
    return 2.0 * jnp.minimum(pairs / 2.0, float(max_cut_complete(graph.shape[0])))


def gaussian_count_sigma(rho, graph, accounting: str = "tight_joint") -> jax.Array:
    """σ of the discrete Gaussian on each queried count for ρ-zCDP overall: √(Δ²/(2ρ))
    (nguyen Lemma 4.1 for ``"paper"``: σ² = m(m−1)/ε₀² with ρ = ε₀²/2; docs/nguyen.md, Mechanisms and estimators).

    Args: rho: ρ > 0 (traceable; from :func:`dpsim.mechanisms.zcdp.zcdp_rho` on the host);
    graph: (m, m) bool queried pairs; accounting: :data:`ACCOUNTING_MODES`.
    Returns: float64 σ (∞-safe: ρ = ∞ gives 0).
    """
    require_positive(rho, "rho", finite=False)
    return jnp.sqrt(count_sensitivity(graph, accounting) / (2.0 * jnp.asarray(rho, jnp.float64)))


def laplace_count_scale(eps, graph, accounting: str = "tight_joint") -> jax.Array:
    """Scale t of the discrete Laplace on each queried count for pure ε-DP overall: Δ/ε with
    Δ = #queried ordered pairs (``"paper"``/``"synthetic_code"``: basic composition, the
    code's m(m−1)/ε* dense, A16) or 2·min(|E|, ⌊m²/4⌋) (``"tight_joint"``: the joint L1
    sensitivity). Args: eps: ε > 0 (traceable); graph; accounting. Returns: float64 t."""
    require_eps(eps)
    require_choice("accounting", accounting, ACCOUNTING_MODES)
    delta1 = count_sensitivity(graph, "tight_joint" if accounting == "tight_joint" else "paper")
    return delta1 / jnp.asarray(eps, jnp.float64)


def count_noise(
    key, n_items: int, scale, mechanism: str = "gaussian", max_rounds: int = DEFAULT_MAX_ROUNDS
):
    """The noise Z of nguyen Eq. (4), one draw per ordered pair (docs/nguyen.md, Mechanisms and estimators step 1).

    Args:
        key: PRNG key.
        n_items: m; Z is (m, m) (the diagonal and the pairs off the graph are drawn and not used).
        scale: σ (``"gaussian"``, N_ℤ(0, σ²)) or t (``"laplace"``, Lap_ℤ(t)), traceable.
        mechanism: ``"gaussian"`` or ``"laplace"``; max_rounds: the discrete Gaussian sampler's cap.
    Returns:
        (Z (m, m) integers as float64, failed (m, m) bool: discrete-Gaussian draws that hit the
        sampler's round cap, expected none; all False for ``"laplace"``).
    """
    require_choice("mechanism", mechanism, MECHANISMS)
    shape = (n_items, n_items)
    if mechanism == "gaussian":
        return discrete_gaussian_with_flag(key, scale, shape, max_rounds)
    return discrete_laplace(key, scale, shape), jnp.zeros(shape, bool)


def noise_mean_square(z) -> jax.Array:
    """mean of Z_ij² over the m(m − 1) ordered pairs i ≠ j. Every pair's noise is i.i.d. and
    independent of the data, so its expectation is the sampler's variance at the mechanism's
    scale, whichever pairs the mode noises: what pins a release's calibration (nguyen's level
    checks). ``z``: (m, m)."""
    n = z.shape[0]
    off = ~jnp.eye(n, dtype=bool)
    return jnp.sum(jnp.where(off, z * z, 0.0)) / (n * (n - 1))


def noised_counts(Y, z, failed, graph, clip: str = "one", noise: str = "all"):
    """Ỹ = clip(Y + Z) on the queried pairs (docs/nguyen.md, Mechanisms and estimators step 2; module docstring).

    Args:
        Y: (m, m) differential counts; z, failed: :func:`count_noise`'s draw; graph: (m, m)
            bool queried pairs (symmetric); clip, noise: the modes (module docstring).
    Returns:
        (Ỹ (m, m) float64, sampler_failures int: failed draws on noised pairs).
    """
    require_choice("clip", clip, CLIP_MODES)
    require_choice("noise", noise, NOISE_MODES)
    Y = jnp.asarray(Y, jnp.float64)
    n = Y.shape[0]
    queried = jnp.asarray(graph, bool) & ~jnp.eye(n, dtype=bool)
    noised = queried if noise == "all" else queried & (Y != 0)
    floor = 1.0 if clip == "one" else 0.0
    out = jnp.where(noised, jnp.maximum(floor, Y + z), jnp.where(queried, Y, 0.0))
    return out, jnp.sum(failed & noised)


def privatise_counts(
    key,
    Y,
    graph,
    scale,
    mechanism: str = "gaussian",
    clip: str = "one",
    noise: str = "all",
    max_rounds: int = DEFAULT_MAX_ROUNDS,
):
    """The noised counts Ỹ of nguyen Eq. (4) as coded (docs/nguyen.md, Mechanisms and estimators steps 1–2):
    :func:`noised_counts` of :func:`count_noise`'s draw with ``key``.

    Args:
        key: PRNG key.
        Y: (n_items, n_items) differential counts.
        graph: (n_items, n_items) bool queried pairs (symmetric).
        scale: σ (``"gaussian"``, N_ℤ(0, σ²)) or t (``"laplace"``, Lap_ℤ(t)), traceable.
        mechanism: ``"gaussian"`` or ``"laplace"``; clip: ``"one"`` (default) or ``"zero"``;
        noise: ``"all"`` (default) or ``"nonzero"`` (module docstring).
        max_rounds: the discrete Gaussian sampler's cap.
    Returns:
        (Ỹ (n_items, n_items) float64, sampler_failures int: discrete-Gaussian draws that hit
        the sampler's round cap, expected 0).
    """
    z, failed = count_noise(key, jnp.shape(Y)[0], scale, mechanism, max_rounds)
    return noised_counts(Y, z, failed, graph, clip, noise)


class PrivateCounts(NamedTuple):
    """The release of nguyen Algorithm 2's privatisation step: the noised, clipped counts Ỹ and
    what the release reports.

    Attributes: counts: (n_items, n_items) Ỹ; info: ``noise_scale`` (σ or t), ``sampler_failures``,
    ``noise_mean_square`` (:func:`noise_mean_square` of the noise drawn), ``queried_pairs``, and for
    the sparse chain ``graph_connected`` and ``graph_rejections``."""

    counts: jax.Array
    info: dict


def private_differential_counts(
    key,
    Y,
    *,
    mechanism: str = "gaussian",
    rho=None,
    eps=None,
    p0=None,
    connect: bool = True,
    max_tries: int = DEFAULT_MAX_TRIES,
    accounting: str = "tight_joint",
    clip: str = "one",
    noise: str = "all",
    max_rounds: int = DEFAULT_MAX_ROUNDS,
) -> PrivateCounts:
    """nguyen Algorithm 2's release (Eq. (4), Lemma 4.1; docs/nguyen.md, Mechanisms and estimators): the
    queried item graph (dense, or ER(p₀) sparsified), the noise scale of the whole release, and every
    queried differential count noised and clipped (:func:`privatise_counts`).

    Args:
        key: PRNG key (split into the graph's and the noise's).
        Y: (n_items, n_items) exact differential counts.
        mechanism: ``"gaussian"`` (discrete Gaussian, ρ-zCDP; needs ``rho``) or
            ``"laplace"`` (discrete Laplace, ε-DP; needs ``eps``).
        rho: ρ > 0 of the whole release (traceable; host: ``zcdp_rho(eps, delta, conversion)``).
        eps: ε > 0 of the whole release for ``"laplace"`` (traceable).
        p0: None (default) for the dense graph (every ordered pair queried), or the
            sparsification edge probability p₀ ∈ (0, 1] (traceable; host: ``sparsification_p0``).
        connect, max_tries: redraw the sparse graph until connected (default) or not (the
            code); static.
        accounting, clip, noise: the modes of the module docstring; max_rounds: the discrete
            Gaussian sampler's cap.
    Returns:
        :class:`PrivateCounts`.
    Raises:
        ValueError naming a bad mode, a missing ρ or ε, or fewer than 2 items.
    """
    require_choice("mechanism", mechanism, MECHANISMS)
    require_choice("accounting", accounting, ACCOUNTING_MODES)
    require_choice("clip", clip, CLIP_MODES)
    require_choice("noise", noise, NOISE_MODES)
    if mechanism == "gaussian" and rho is None:
        raise ValueError("mechanism='gaussian' needs rho (host: zcdp_rho(eps, delta, conversion))")
    if mechanism == "laplace" and eps is None:
        raise ValueError("mechanism='laplace' needs eps")
    Y = jnp.asarray(Y, jnp.float64)
    n = Y.shape[0]
    if n < 2:
        raise ValueError(f"n_items={n} must be at least 2")
    k_graph, k_noise = jax.random.split(key)
    info = {}
    if p0 is None:
        graph = dense_item_graph(n)
    else:
        draw = sparsification_graph(k_graph, n, p0, connect, max_tries)
        graph = draw.graph
        info.update(graph_connected=draw.connected, graph_rejections=draw.rejections)
    if mechanism == "gaussian":
        scale = gaussian_count_sigma(rho, graph, accounting)
    else:
        scale = laplace_count_scale(eps, graph, accounting)
    z, failed = count_noise(k_noise, n, scale, mechanism, max_rounds)
    noisy, failures = noised_counts(Y, z, failed, graph, clip, noise)
    info.update(
        noise_scale=scale,
        sampler_failures=failures,
        noise_mean_square=noise_mean_square(z),
        queried_pairs=queried_pairs(graph),
    )
    return PrivateCounts(noisy, info)
