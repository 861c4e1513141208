"""Gaussian objective perturbation for logistic regression on preference labels (chowdhury
Algorithm 2, §5.2 Thm 5.2; App. E Thm E.1; chowdhury Algorithm 2, Theorem 5.2; App. E, Theorem E.1).

Algorithm 2 minimises (1/n)Σ ℓ(θ; x_i, y_i) + (β/(2n))‖θ‖² + wᵀθ/n over Θ_B with a single
draw w ~ N(0, σ²I_d). This module holds the calibrations (σ, the β floor, the default β), the
release (:func:`gaussian_objective_perturbation`: w, σ, β, L), the privacy-loss exponents of
the two proofs (for tests and audits) and the data-derived feature bound L; the minimiser of
a release is :func:`dpsim.estimators.linear_btl.objective_perturbation`.

Label DP (Thm 5.2): σ = L√(8 log(2/δ) + 4ε)/ε gives (ε, δ)-label DP for any β > 0 when
‖ϕ‖ ≤ L (so ‖x‖ ≤ 2L, the sensitivity of the gradient to one label). Post-processing view
(used by the audit in dpsim.audits.label_audit): changing label j shifts the objective by
(y_j − y'_j)x_jᵀθ, i.e. by a shift of w by Δ = (y_j − y'_j)x_j, so the exact minimiser over
Θ_B is a fixed map of w + ψ_D and the mechanism is a post-processing of the Gaussian
mechanism with ℓ2 sensitivity ‖x_j‖ ≤ 2L; the guarantee therefore also holds for the
*projected* exact minimiser, and for none of the SGD approximations.

Standard DP (Thm E.1, features and labels private): σ ≥ 4L√(8 log(4/δ) + 2ε)/ε and
β ≥ 4L²/ε. The printed T1 exponent "2Lσ√(8 log(4/δ))" should read 4Lσ√(8 log(4/δ)) (docs/chowdhury.md,
Errata and modes (E20)); both are available as modes of :func:`standard_dp_t1_exponent`, and the stated σ is
enough under the corrected (``"strict"``) one.

ε = ∞ gives σ = 0 (no noise) everywhere.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.stats import norm

from dpsim.validate import require_eps, require_open_unit, require_positive

PERTURBATION_PRIVACY = ("label", "standard")


def _eps_delta(eps, delta):
    require_eps(eps)
    require_open_unit(delta, "delta")
    return jnp.asarray(eps, jnp.float64), jnp.asarray(delta, jnp.float64)


def label_dp_noise_scale(eps, delta, feature_bound=1.0):
    """σ = L·√(8 log(2/δ) + 4ε)/ε (chowdhury Thm 5.2, Alg. 2 line 1).

    Written as L·√(8 log(2/δ)/ε² + 4/ε) so that ε = ∞ gives 0. P14: at L = 1, δ = 10⁻³,
    σ = 78.235, 15.850, 8.050 for ε = 0.1, 0.5, 1.

    Args: eps: ε > 0; delta: δ ∈ (0, 1); feature_bound: L ≥ ‖ϕ‖ (so ‖x‖ ≤ 2L). All may be
    traced and broadcast. Returns: σ, float64."""
    eps, delta = _eps_delta(eps, delta)
    require_positive(feature_bound, "feature_bound")
    return feature_bound * jnp.sqrt(8.0 * jnp.log(2.0 / delta) / eps**2 + 4.0 / eps)


def label_dp_privacy_exponent(eps, delta, feature_bound=1.0, sigma=None):
    """(2Lσa + 4L²)/(2σ²) with a = √(8 log(2/δ)): the bound on the log density ratio of
    Thm 5.2's proof (T1; the Jacobian T2 ratio is 1 under label DP), holding with
    probability ≥ 1 − δ. With σ from :func:`label_dp_noise_scale` it equals
    εa/s + 2ε²/s² ≤ ε, s = √(a² + 4ε) (docs/chowdhury.md, Mechanisms and estimators: 0.099999, 0.49994, 0.99951 at
    L = 1, δ = 10⁻³, ε = 0.1, 0.5, 1).

    Args: eps, delta; feature_bound: L; sigma: noise std (default Thm 5.2's). Returns: float64."""
    eps, delta = _eps_delta(eps, delta)
    sigma = label_dp_noise_scale(eps, delta, feature_bound) if sigma is None else sigma
    a = jnp.sqrt(8.0 * jnp.log(2.0 / delta))
    L = feature_bound
    return (2.0 * L * sigma * a + 4.0 * L**2) / (2.0 * sigma**2)


def standard_dp_noise_scale(eps, delta, feature_bound=1.0):
    """σ = 4L√(8 log(4/δ) + 2ε)/ε, the smallest σ of chowdhury Thm E.1 (standard DP,
    neighbours differ in a whole (x, y); chowdhury App. E, Theorem E.1). ε = ∞ gives 0.

    Args: eps, delta, feature_bound: L. Returns: σ, float64."""
    eps, delta = _eps_delta(eps, delta)
    require_positive(feature_bound, "feature_bound")
    return 4.0 * feature_bound * jnp.sqrt(8.0 * jnp.log(4.0 / delta) / eps**2 + 2.0 / eps)


def standard_dp_min_ridge(eps, feature_bound=1.0):
    """β ≥ 4L²/ε, the ridge floor of chowdhury Thm E.1 (bounds the Jacobian ratio T2 by
    (1 + L²/β)² ≤ e^{2L²/β} ≤ e^{ε/2}). ε = ∞ gives 0. Returns: float64."""
    require_eps(eps)
    require_positive(feature_bound, "feature_bound")
    return 4.0 * feature_bound**2 / jnp.asarray(eps, jnp.float64)


def standard_dp_t1_exponent(eps, delta, feature_bound=1.0, sigma=None, mode: str = "strict"):
    """The T1 log-ratio bound of Thm E.1's proof, (cLσa + (4L)²)/(2σ²) with a = √(8 log(4/δ)).

    ``mode="strict"`` (default): c = 4, from 2|⟨w, Δ⟩| ≤ 2·4Lσ√(2 log(4/δ)), ‖Δ‖ ≤ 4L; it is
    ≤ ε/2 at the stated σ (docs/chowdhury.md, Mechanisms and estimators). ``mode="paper"``: c = 2 as printed (docs/chowdhury.md,
    Errata and modes (E20)), which under-counts the cross term.

    Args: eps, delta, feature_bound: L; sigma (default :func:`standard_dp_noise_scale`); mode.
    Returns: float64."""
    if mode not in ("strict", "paper"):
        raise ValueError(f"mode={mode!r} is not one of ['strict', 'paper']")
    eps, delta = _eps_delta(eps, delta)
    sigma = standard_dp_noise_scale(eps, delta, feature_bound) if sigma is None else sigma
    a = jnp.sqrt(8.0 * jnp.log(4.0 / delta))
    L = feature_bound
    c = 4.0 if mode == "strict" else 2.0
    return (c * L * sigma * a + 16.0 * L**2) / (2.0 * sigma**2)


def standard_dp_t2_exponent(eps, feature_bound=1.0, beta=None):
    """log of Thm E.1's Jacobian-ratio bound (1 + L²/β)² (≤ 2L²/β ≤ ε/2 for β ≥ 4L²/ε).

    Args: eps; feature_bound: L; beta (default :func:`standard_dp_min_ridge`). Returns: float64."""
    beta = standard_dp_min_ridge(eps, feature_bound) if beta is None else beta
    return 2.0 * jnp.log1p(feature_bound**2 / beta)


def perturbation_noise_scale(eps, delta, feature_bound=1.0, privacy: str = "label"):
    """σ for ``privacy="label"`` (Thm 5.2, default) or ``"standard"`` (Thm E.1)."""
    if privacy not in PERTURBATION_PRIVACY:
        raise ValueError(f"privacy={privacy!r} is not one of {list(PERTURBATION_PRIVACY)}")
    if privacy == "label":
        return label_dp_noise_scale(eps, delta, feature_bound)
    return standard_dp_noise_scale(eps, delta, feature_bound)


def perturbation_noise(key, dim: int, sigma) -> jax.Array:
    """w ~ N(0, σ²I_d), drawn once per fit (chowdhury Alg. 2 line 2).

    Args: key; dim: d (static); sigma: σ ≥ 0 (may be traced). Returns: (dim,) float64."""
    return sigma * jax.random.normal(key, (dim,))


def feature_bound_from_data(x) -> jax.Array:
    """L := max_i ‖x_i‖₂/2 (docs/chowdhury.md, Errata and modes (E6)): the features are public under label DP, so
    a data-derived L is legitimate, and 2L = max‖x_i‖ is the exact label sensitivity of the
    gradient. (Not valid under standard DP, where the features are private.)

    Args: x: (n_samples, dim). Returns: scalar float64."""
    return 0.5 * jnp.max(jnp.linalg.norm(x, axis=-1))


def theory_ridge(n_samples, radius):
    """β = √n/B, the ridge of chowdhury Thm 5.3 (ℓ2 bound; the default of docs/chowdhury.md, Errata and modes (E8))."""
    return jnp.sqrt(jnp.asarray(n_samples, jnp.float64)) / radius


class GaussianPerturbation(NamedTuple):
    """The release of chowdhury Algorithm 2 for one fit.

    Attributes: w: (dim,) noise; sigma: its std σ; beta: the ridge β; feature_bound: L."""

    w: jax.Array
    sigma: jax.Array
    beta: jax.Array
    feature_bound: jax.Array


def gaussian_objective_perturbation(
    key, x, eps, delta, radius, *, beta=None, feature_bound=None, privacy: str = "label"
) -> GaussianPerturbation:
    """The release of chowdhury Algorithm 2 (Thm 5.2; App. E Thm E.1) for one fit: (w, σ, β, L).

    L: ``feature_bound`` (a bound on ‖ϕ‖, ‖x‖ ≤ 2L) or, when None, max_i‖x_i‖/2 from the
    public features (:func:`feature_bound_from_data`; label DP only). σ: Thm 5.2
    (``privacy="label"``: (ε, δ)-label DP) or Thm E.1 (``"standard"``: (ε, δ)-DP). β: ``beta`` or,
    when None, √n/B (:func:`theory_ridge`); under standard DP raised to at least 4L²/ε (Thm E.1).
    w ~ N(0, σ²I_d) from ``key`` (:func:`perturbation_noise`). The guarantee holds for the exact
    minimiser of the perturbed objective (module docstring).

    Args:
        key: PRNG key of w. x: (n, dim) features (public under label DP).
        eps: ε > 0; delta: δ ∈ (0, 1) (both may be traced). radius: B (the default β's).
        beta: β > 0 or None. feature_bound: L or None. privacy: ``"label"`` or ``"standard"``.
    Returns:
        :class:`GaussianPerturbation` (float64).
    Raises:
        ValueError naming a bad concrete ε, δ, β, L or privacy, or standard DP without L.
    """
    if privacy == "standard" and feature_bound is None:
        raise ValueError(
            "privacy='standard' needs feature_bound: under standard DP the features "
            "are private, so L cannot be read from them"
        )
    if beta is not None:
        require_positive(beta, "beta")
    L = (
        feature_bound_from_data(x)
        if feature_bound is None
        else jnp.asarray(feature_bound, jnp.float64)
    )
    sigma = perturbation_noise_scale(eps, delta, L, privacy)
    beta = theory_ridge(x.shape[0], radius) if beta is None else jnp.asarray(beta, jnp.float64)
    if privacy == "standard":
        beta = jnp.maximum(beta, standard_dp_min_ridge(eps, L))
    return GaussianPerturbation(perturbation_noise(key, x.shape[1], sigma), sigma, beta, L)


def gaussian_mechanism_delta(eps, sensitivity, sigma):
    """Exact δ(ε) of the Gaussian mechanism with ℓ2 sensitivity Δ and noise σ (Balle & Wang
    2018, Thm 8): Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ), μ = Δ/σ. Objective perturbation under
    label DP is a post-processing of it with Δ = ‖x_j‖ ≤ 2L (module docstring).

    Args: eps ≥ 0; sensitivity: Δ > 0; sigma: σ > 0. Returns: float64."""
    mu = jnp.asarray(sensitivity, jnp.float64) / sigma
    eps = jnp.asarray(eps, jnp.float64)
    # e^ε Φ(−μ/2 − ε/μ) in log space: stays finite where e^ε overflows.
    return norm.cdf(mu / 2 - eps / mu) - jnp.exp(eps + norm.logcdf(-mu / 2 - eps / mu))


def gaussian_mechanism_epsilon(delta, sensitivity, sigma, *, iterations: int = 200):
    """The smallest ε with δ(ε) ≤ δ for the Gaussian mechanism (:func:`gaussian_mechanism_delta`
    is decreasing in ε), by bisection. Host-side or traced.

    Args: delta ∈ (0, 1); sensitivity: Δ; sigma: σ. Returns: float64 ε (0 if δ(0) ≤ δ)."""
    delta = jnp.asarray(delta, jnp.float64)
    mu = jnp.asarray(sensitivity, jnp.float64) / sigma
    hi = mu * mu / 2 + mu * jnp.sqrt(2 * jnp.log(1.25 / delta)) + 1.0  # δ(hi) < δ (classical bound)

    def body(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        above = gaussian_mechanism_delta(mid, sensitivity, sigma) > delta
        return jnp.where(above, mid, lo), jnp.where(above, hi, mid)

    lo, hi = jax.lax.fori_loop(0, iterations, body, (jnp.zeros_like(hi), hi))
    return hi
