"""Linear-feature preference models of chowdhury (Chowdhury, Zhou, Natarajan, "Differentially
Private Reward Estimation with Preference Feedback"; docs/chowdhury.md):
the linear BTL model on feature differences (eq. (1)), its Thurstone (probit) variant (§4.4),
Plackett–Luce top-1 choice out of K actions (eq. (11)), and the θ* designs of docs/chowdhury.md, Errata and modes (E4).

Every draw is per replicate (features included: chowdhury §6 "features ϕ are sampled iid"),
a pure function of a PRNG key; shapes (n_samples, dim, k) are static Python ints. Labels
are per sample: the feature differences vary from sample to sample, so there is no count
statistic to draw instead.

Conventions: ``x`` (n_samples, dim) are the public feature differences
x_i = ϕ(s_i, a_i¹) − ϕ(s_i, a_i⁰); ``y`` (n_samples,) the labels, y = 1 when a¹ is preferred,
P(y = 1 | x) = F(xᵀθ*), F = σ (logistic, BTL) or Φ (probit, Thurstone).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import log_ndtr

from dpsim.models.links import get_link
from dpsim.solvers import project_ball
from dpsim.validate import require_choice, require_int, require_positive

FEATURES = ("difference", "direct")
LINKS = ("logistic", "probit")
THETA_DESIGNS = ("faithful", "theory")


class PreferenceData(NamedTuple):
    """Pairwise preference data of the linear model (chowdhury §2).

    Attributes:
        x: (n_samples, dim) feature differences ϕ(s, a¹) − ϕ(s, a⁰) (public).
        y: (n_samples,) float64 labels in {0, 1}; 1 means a¹ is preferred (private).
    """

    x: jax.Array
    y: jax.Array


class ChoiceData(NamedTuple):
    """Plackett–Luce top-1 data (chowdhury §4.4 eq. (11)).

    Attributes:
        phi: (n_samples, k, dim) action features ϕ(s, a_1..a_K) (public).
        y: (n_samples,) int32 index in {0, …, K−1} of the most preferred action (private).
    """

    phi: jax.Array
    y: jax.Array


class ThetaDraw(NamedTuple):
    """A drawn θ* and whether the draw succeeded.

    Attributes:
        theta: (dim,) θ*.
        ok: bool scalar; False when the fixed-shape rejection sampler found no accepted
            candidate (θ is then the first candidate clipped to the ball; count and report).
    """

    theta: jax.Array
    ok: jax.Array


# ---------------------------------------------------------------------------------------
# θ* designs (docs/chowdhury.md, Errata and modes (E4); Experiments as run)
# ---------------------------------------------------------------------------------------
def default_radius(dim: int) -> float:
    """B = 2√d, the faithful design's radius (docs/chowdhury.md, Experiments as run): E‖θ‖² = d under N(0, I_d),
    so the conditioning rejects little (P(χ²_d > 4d) ≤ 0.046 for every d ≥ 1)."""
    require_int(dim, "dim", 1)
    return 2.0 * math.sqrt(dim)


def theta_faithful(key, dim: int, radius=None, n_candidates: int = 16) -> ThetaDraw:
    """θ* ~ N(0, I_d) conditioned on ‖θ*‖ ≤ B (docs/chowdhury.md, Errata and modes (E4), faithful config; the paper's
    "θ* ~ N(0, I_d)" of §6 made to satisfy Assumption 2.1's norm bound, no sum-zero).

    Fixed-shape rejection: ``n_candidates`` i.i.d. N(0, I_d) draws, the first with norm ≤ B
    is returned. With B = 2√d each candidate is rejected with probability ≤ 0.046, so 16
    candidates all fail with probability < 1e-21; a failure is flagged (``ok`` False).

    Args:
        key: PRNG key.
        dim: d ≥ 1 (static).
        radius: B > 0 (default 2√d; may be traced).
        n_candidates: candidates drawn (static).
    Returns:
        :class:`ThetaDraw` with theta (dim,).
    """
    require_int(dim, "dim", 1)
    require_int(n_candidates, "n_candidates", 1)
    radius = default_radius(dim) if radius is None else radius
    require_positive(radius, "radius")
    candidates = jax.random.normal(key, (n_candidates, dim))
    accepted = jnp.linalg.norm(candidates, axis=1) <= radius
    first = jnp.argmax(accepted)
    ok = jnp.any(accepted)
    theta = jnp.where(ok, candidates[first], project_ball(candidates[0], radius))
    return ThetaDraw(theta=theta, ok=ok)


def theta_theory(key, dim: int, norm=1.0) -> ThetaDraw:
    """θ* = B₀·Pg/‖Pg‖ with g ~ N(0, I_d) and P the projection onto 1^⊥ (docs/chowdhury.md, Errata and modes (E4),
    theory config): θ* ∈ Θ_{B₀} with ⟨1, θ*⟩ = 0 and ‖θ*‖ = B₀ exactly (Assumption 2.1(a)).

    Args:
        key: PRNG key. dim: d ≥ 2 (1^⊥ is {0} for d = 1). norm: B₀ > 0 (may be traced).
    Returns:
        :class:`ThetaDraw` (ok is always True).
    """
    require_int(dim, "dim", 2)
    require_positive(norm, "norm")
    g = jax.random.normal(key, (dim,))
    g = g - jnp.mean(g)
    return ThetaDraw(theta=norm * g / jnp.linalg.norm(g), ok=jnp.asarray(True))


def sample_theta_star(key, dim: int, design: str = "faithful", **options) -> ThetaDraw:
    """θ* from a named design: ``"faithful"`` (:func:`theta_faithful`, options ``radius``,
    ``n_candidates``) or ``"theory"`` (:func:`theta_theory`, option ``norm``)."""
    require_choice("design", design, THETA_DESIGNS)
    return (theta_faithful if design == "faithful" else theta_theory)(key, dim, **options)


# ---------------------------------------------------------------------------------------
# Features and labels
# ---------------------------------------------------------------------------------------
def sample_features(key, n_samples: int, dim: int, features: str = "difference") -> jax.Array:
    """Feature differences x_i (chowdhury §6; docs/chowdhury.md, Errata and modes (E5)).

    ``"difference"`` (default): x = ϕ¹ − ϕ⁰ with ϕ⁰, ϕ¹ ~ N(0, I_d) i.i.d., so x ~ N(0, 2I_d)
    (κ = λ_min(Σ) = 2). ``"direct"``: x ~ N(0, I_d) (κ = 1).

    Args:
        key: PRNG key. n_samples: n ≥ 1. dim: d ≥ 1 (both static).
        features: ``"difference"`` or ``"direct"``.
    Returns:
        (n_samples, dim) float64.
    """
    require_int(n_samples, "n_samples", 1)
    require_int(dim, "dim", 1)
    require_choice("features", features, FEATURES)
    if features == "direct":
        return jax.random.normal(key, (n_samples, dim))
    phi = jax.random.normal(key, (2, n_samples, dim))
    return phi[1] - phi[0]


def preference_probability(x, theta, link: str = "logistic") -> jax.Array:
    """P(y = 1 | x) = F(xᵀθ): σ for BTL (chowdhury eq. (1)), Φ for Thurstone (§4.4).

    Args: x: (..., dim); theta: (dim,); link: ``"logistic"`` or ``"probit"``.
    Returns: (...) probabilities."""
    require_choice("link", link, LINKS)
    return get_link(link).cdf(x @ theta)


def sample_labels(key, x, theta, link: str = "logistic") -> jax.Array:
    """Labels y_i ~ Bernoulli(F(x_iᵀθ)) (chowdhury eq. (1); probit for Thurstone, §4.4).

    Args: key; x: (n_samples, dim); theta: (dim,); link. Returns: (n_samples,) float64 0/1."""
    p = preference_probability(x, theta, link)
    return (jax.random.uniform(key, p.shape) < p).astype(jnp.float64)


def sample_linear_btl(
    key, theta, n_samples: int, *, features: str = "difference", link: str = "logistic"
) -> PreferenceData:
    """n samples of the linear BTL (or Thurstone) model (chowdhury §2 eq. (1), §6):
    features from :func:`sample_features`, labels from :func:`sample_labels`.

    Args:
        key: PRNG key (split into a feature key and a label key).
        theta: (dim,) θ*.
        n_samples: n ≥ 1 (static).
        features: ``"difference"`` (x = ϕ¹ − ϕ⁰, default) or ``"direct"`` (x ~ N(0, I)).
        link: ``"logistic"`` (BTL) or ``"probit"`` (Thurstone).
    Returns:
        :class:`PreferenceData` with x (n_samples, dim) and y (n_samples,).
    """
    require_choice("link", link, LINKS)
    k_x, k_y = jax.random.split(key)
    x = sample_features(k_x, n_samples, theta.shape[0], features)
    return PreferenceData(x=x, y=sample_labels(k_y, x, theta, link))


def sample_plackett_luce_labels(key, phi, theta) -> jax.Array:
    """Top-1 choices y_i with P(y_i = k) = exp(ϕ_ikᵀθ)/Σ_j exp(ϕ_ijᵀθ) (chowdhury eq. (11)).

    Args: key; phi: (n_samples, k, dim); theta: (dim,). Returns: (n_samples,) int32."""
    return jax.random.categorical(key, phi @ theta, axis=-1).astype(jnp.int32)


def sample_plackett_luce(key, theta, n_samples: int, k: int) -> ChoiceData:
    """n Plackett–Luce top-1 samples out of K actions (chowdhury §4.4 eq. (11), App. C.4):
    ϕ(s, a_j) ~ N(0, I_d) i.i.d. for each sample and action (chowdhury §6 features), labels from
    :func:`sample_plackett_luce_labels`.

    Args: key; theta: (dim,); n_samples: n ≥ 1; k: K ≥ 2 (static).
    Returns: :class:`ChoiceData` with phi (n_samples, k, dim) and y (n_samples,)."""
    require_int(n_samples, "n_samples", 1)
    require_int(k, "k", 2)
    k_phi, k_y = jax.random.split(key)
    phi = jax.random.normal(k_phi, (n_samples, k, theta.shape[0]))
    return ChoiceData(phi=phi, y=sample_plackett_luce_labels(k_y, phi, theta))


# ---------------------------------------------------------------------------------------
# Score functions d/dz log F(z) and d/dz log(1 − F(z)) of the binary links
# ---------------------------------------------------------------------------------------
def link_scores(z, link: str = "logistic"):
    """(s₁(z), s₀(z)) = (d/dz log F(z), d/dz log(1 − F(z))), so ∇_θ log p_y = s_y(xᵀθ)·x
    (chowdhury §4.4: BTL s₁ = 1 − σ, s₀ = −σ; Thurstone s₁ = φ/Φ, s₀ = −φ/(1 − Φ)),
    computed in log space (stable for large |z|).

    Args: z: array of xᵀθ; link: ``"logistic"`` or ``"probit"``. Returns: two arrays like z."""
    require_choice("link", link, LINKS)
    if link == "logistic":
        return jax.nn.sigmoid(-z), -jax.nn.sigmoid(z)
    log_pdf = -0.5 * z * z - 0.5 * math.log(2 * math.pi)
    return jnp.exp(log_pdf - log_ndtr(z)), -jnp.exp(log_pdf - log_ndtr(-z))
