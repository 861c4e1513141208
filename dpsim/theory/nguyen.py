"""nguyen (Nguyen & Zhang, "Optimal and Private Learning from Human Response Data", AISTATS
2023; nguyen §3): the rates of Theorems 3.1–3.4, the supplement's
explicit and private bounds, and the predictions R1–R12 of docs/nguyen.md, Predictions, one function each.

Notation: ``n_users`` = the paper's n, ``n_items`` = its m, p = observation probability.
Rates are written with jax.numpy (traceable; wrap in ``float`` on the host). "≲" hides
constants: compare rates with simulations through slopes (:mod:`dpsim.theory.slopes`).
Use bounded parameters (e.g. Unif[−1, 1]) for slope checks, so that κ and γ do not grow
with m (docs/nguyen.md, Predictions; Errata and modes (A18)).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from dpsim.estimators.spectral import spectral_estimate
from dpsim.models.rasch import rasch_probabilities

__all__ = [
    "entrywise_rate",
    "entrywise_conditions",
    "entrywise_bound_explicit",
    "basic_entrywise_rate",
    "l2_rate",
    "linf_l2_ratio",
    "minimax_l2_sq_lower",
    "minimax_linf_sq_lower",
    "top_k_gap",
    "top_k_sample_threshold",
    "top_k_signal",
    "private_sufficient_condition",
    "private_sufficient_users",
    "private_excess_l2",
    "private_excess_linf",
    "private_crossover_users",
    "laplace_gauss_sigma_ratio",
    "laplace_excess_l2",
    "rr_flip_probability",
    "rr_population_limit",
    "high_privacy_limit_l2",
    "rasch_gamma",
    "rasch_gamma_bar",
    "rasch_kappa",
    "quantile_design",
    "rr_floor_l2",
    "laplace_gauss_shift_ratio",
    "top_k_midpoint_factor",
    "top_k_success_probability",
    "linearised_shift_rms",
    "discrete_laplace_sd",
]


def _f64(*values):
    return tuple(jnp.asarray(v, jnp.float64) for v in values)


# --------------------------------------------------------------------- constants of nguyen §2
def rasch_kappa(beta):
    """κ = β*_max − β*_min (nguyen §2). Args: beta (n_items,). Returns: scalar."""
    return jnp.max(beta) - jnp.min(beta)


def rasch_gamma(theta, beta):
    """γ = min_{l,i,j} σ(θ_l − β_i)(1 − σ(θ_l − β_j)) = min_l σ(θ_l − β_max)(1 − σ(θ_l − β_min))
    (nguyen §2; the spectral gap of M* is ≥ γ/(3e^{2κ})). Args: theta (n_users,), beta."""
    theta = jnp.asarray(theta, jnp.float64)
    return jnp.min(jax.nn.sigmoid(theta - jnp.max(beta)) * jax.nn.sigmoid(jnp.min(beta) - theta))


def rasch_gamma_bar(theta, beta):
    """γ̄ = the average of E[X_li(1 − X_lj)] over users and pairs i ≠ j (R8's constant; ≈ 0.2
    for N(0, 1) parameters). Args: theta (n_users,), beta (n_items,). Returns: scalar."""
    prob = rasch_probabilities(theta, beta)
    m = prob.shape[1]
    pair_sum = jnp.sum(
        prob.sum(axis=1) * (1.0 - prob).sum(axis=1) - jnp.sum(prob * (1.0 - prob), axis=1)
    )
    return pair_sum / (prob.shape[0] * m * (m - 1))


# --------------------------------------------------------------------- Theorem 3.1 (R1)
def entrywise_rate(n_users, n_items, p):
    """√(log m/(np)): the ℓ∞ rate of the spectral estimator (nguyen Thm 3.1; R1)."""
    n, m, p = _f64(n_users, n_items, p)
    return jnp.sqrt(jnp.log(m) / (n * p))


def entrywise_conditions(n_users, n_items, p, c1=1.0, c2=1.0):
    """Thm 3.1's sampling conditions np² ≥ C₁ log m and mp ≥ C₂ log n (bool)."""
    n, m, p = _f64(n_users, n_items, p)
    return (n * p * p >= c1 * jnp.log(m)) & (m * p >= c2 * jnp.log(n))


def entrywise_bound_explicit(n_users, n_items, p, kappa, gamma, c=12.0, c1_plus=2.0, c_plus=10.0):
    """The explicit ℓ∞ bound of Supp. Thm 3.1 (via Thm 1.10 and Lemma 1.6; nguyen Theorem 3.1):

        (6e^{2κ}/(γ(1 − α⁺)))·[(1 + α⁺)/(γ/(3e^{2κ}) − 2α⁺)·√(4C₁⁺ log m)
                               + 2√12·√(C⁺ log m)/√γ]·1/√(np),
        α⁺ = √12·√(C log m)/(√γ·√(np²)),

    holding with probability ≥ 1 − O(e^{−4m}) − 4/m^{C⁺} − e^{−np²/10} − n^{−10} (C ≥ 12 makes
    2/m^{C−2} ≤ 2m^{−10}). Returns ∞ where the bound is vacuous (α⁺ ≥ 1 or the spectral-gap
    term ≤ 0, i.e. np² too small)."""
    n, m, p, kappa, gamma = _f64(n_users, n_items, p, kappa, gamma)
    log_m = jnp.log(m)
    alpha = jnp.sqrt(12.0 * c * log_m) / (jnp.sqrt(gamma) * jnp.sqrt(n * p * p))
    gap = gamma / (3.0 * jnp.exp(2.0 * kappa)) - 2.0 * alpha
    bracket = (1.0 + alpha) / gap * jnp.sqrt(4.0 * c1_plus * log_m) + 2.0 * jnp.sqrt(
        12.0
    ) * jnp.sqrt(c_plus * log_m) / jnp.sqrt(gamma)
    bound = 6.0 * jnp.exp(2.0 * kappa) / (gamma * (1.0 - alpha)) * bracket / jnp.sqrt(n * p)
    return jnp.where((alpha < 1.0) & (gap > 0.0), bound, jnp.inf)


def basic_entrywise_rate(n_users, p):
    """√(log(np²)/(np²)): the ℓ∞ rate without the mp condition (Supp. Thm 1.7; R5: the
    estimator is consistent entrywise for a fixed number of items)."""
    n, p = _f64(n_users, p)
    s = n * p * p
    return jnp.sqrt(jnp.log(s) / s)


def l2_rate(n_users, n_items, p):
    """√(m/(np)): the ℓ2 rate (Nguyen & Zhang 2022 Thm 3.3; R2)."""
    n, m, p = _f64(n_users, n_items, p)
    return jnp.sqrt(m / (n * p))


def linf_l2_ratio(n_items):
    """√(log m/m): the predicted order of ‖·‖∞/‖·‖₂ (R3: the error spreads evenly)."""
    (m,) = _f64(n_items)
    return jnp.sqrt(jnp.log(m) / m)


# --------------------------------------------------------------------- Theorem 3.3 (R4)
def minimax_l2_sq_lower(n_users, n_items, p):
    """m/(np): the order of the minimax lower bound on E‖β̂ − β*‖₂² (nguyen Thm 3.3; R4)."""
    n, m, p = _f64(n_users, n_items, p)
    return m / (n * p)


def minimax_linf_sq_lower(n_users, p):
    """1/(np): the implied lower bound on E‖β̂ − β*‖∞² (nguyen Thm 3.3 corollary)."""
    n, p = _f64(n_users, p)
    return 1.0 / (n * p)


# ----------------------------------------------------------------- Theorems 3.2, 3.4 (R6)
def top_k_gap(beta, k: int):
    """Δ_K = β*_[K] − β*_[K+1], the gap between the K-th and (K+1)-th largest β* (Thm 3.2).
    Args: beta (n_items,); k: 1 ≤ K < n_items (static). Returns: scalar."""
    ordered = jnp.sort(beta)[::-1]
    return ordered[k - 1] - ordered[k]


def top_k_sample_threshold(n_items, gap):
    """log m/Δ_K²: the order of np at which exact top-K recovery switches on (upper bound
    Thm 3.2, np ≥ C_K log m/Δ_K², with the ℓ∞ ≤ Δ_K/2 separation of A7; lower bound Thm
    3.4, np ≤ c_K log m/Δ_K² makes every estimator fail w.p. ≥ ½)."""
    m, gap = _f64(n_items, gap)
    return jnp.log(m) / (gap * gap)


def top_k_signal(n_users, n_items, p, gap):
    """x = npΔ_K²/log m: R6's collapse variable (recovery probability vs x should not depend
    on m or K)."""
    n, p = _f64(n_users, p)
    return n * p / top_k_sample_threshold(n_items, gap)


# --------------------------------------------------------------------- private (R7–R12)
def private_sufficient_condition(n_users, n_items, p, eps, c1=1.0):
    """np² ≥ C₁·max{log m, m²/ε*²} (Supp. private entrywise theorem, A8 with the missing
    "max"; ε* the zCDP parameter): then the private ℓ∞ error is O(√(log m/(np))) (R7)."""
    (n,) = _f64(n_users)
    return n >= private_sufficient_users(n_items, p, eps, c1)


def private_sufficient_users(n_items, p, eps, c1=1.0):
    """The n at which R7's condition switches on: C₁·max{log m, m²/ε*²}/p²."""
    m, p, eps = _f64(n_items, p, eps)
    return c1 * jnp.maximum(jnp.log(m), m * m / (eps * eps)) / (p * p)


def private_excess_l2(n_users, n_items, p, eps0, gamma_bar=0.2):
    """m/(ε₀ n p² γ̄): R8's heuristic excess ℓ2 error of the dense Gaussian chain (derived,
    not in the paper, A17; ε₀ = the paper's per-mechanism ε, σ ≈ m/ε₀). Slopes: n −1,
    m +1, ε₀ −1, p −2."""
    n, m, p, eps0, gamma_bar = _f64(n_users, n_items, p, eps0, gamma_bar)
    return m / (eps0 * n * p * p * gamma_bar)


def private_excess_linf(n_users, n_items, p, eps0, gamma_bar=0.2):
    """√(m log m)/(ε₀ n p² γ̄): R8's heuristic excess ℓ∞ error."""
    n, m, p, eps0, gamma_bar = _f64(n_users, n_items, p, eps0, gamma_bar)
    return jnp.sqrt(m * jnp.log(m)) / (eps0 * n * p * p * gamma_bar)


def private_crossover_users(n_items, p, eps0):
    """n* = m/(ε₀² p³): where R8's excess ℓ2 equals the non-private √(m/(np)) (much earlier
    than R7's m²/ε*²)."""
    m, p, eps0 = _f64(n_items, p, eps0)
    return m / (eps0 * eps0 * p**3)


def laplace_gauss_sigma_ratio(n_items, delta):
    """σ_Lap/σ_Gauss = √(m(m−1)/ln(1/δ)) under the paper's accounting (docs/nguyen.md, Mechanisms and estimators; Predictions (R9)): 0.81
    at m = 3, 1.14 at m = 4, 8.1 at m = 25 (δ = 1e-4); Laplace wins only for m ≲ 3.5."""
    m, delta = _f64(n_items, delta)
    return jnp.sqrt(m * (m - 1.0) / -jnp.log(delta))


def laplace_excess_l2(n_users, n_items, p, eps):
    """m²/(ε n p²): R9's order of the Laplace chain's excess ℓ2 error (slope +2 in m)."""
    n, m, p, eps = _f64(n_users, n_items, p, eps)
    return m * m / (eps * n * p * p)


def rr_flip_probability(eps_rr, responses_per_user):
    """q = 1/(1 + e^{ε_RR/k}): the flip probability of each response under the RR baseline
    (nguyen supp. §4; k = responses per user, m at p = 1)."""
    eps_rr, k = _f64(eps_rr, responses_per_user)
    return jax.nn.sigmoid(-eps_rr / k)


def rr_population_limit(theta, beta, eps_rr, p=1.0):
    """β_∞: the n → ∞ limit of the RR baseline's estimate (R10), the spectral estimate of the
    expected flipped counts E[Ỹ_ij] = p²Σ_l r_li(1 − r_lj), r = q + (1 − 2q)σ(θ_l − β_i),
    q = :func:`rr_flip_probability` with k = m·p (exact at p = 1). Its distance to the
    centred β* is R10's error floor; it tends to 0 (the floor to ‖β*_c‖₂, R11) as
    ε_RR/m → 0 and to β*_c as ε_RR/m → ∞.

    Args: theta (n_users,); beta (n_items,); eps_rr > 0; p. Returns: (n_items,) centred."""
    prob = rasch_probabilities(theta, beta)
    q = rr_flip_probability(eps_rr, prob.shape[1] * jnp.asarray(p, jnp.float64))
    r = q + (1.0 - 2.0 * q) * prob
    expected = jnp.asarray(p, jnp.float64) ** 2 * (r.T @ (1.0 - r))
    expected = jnp.where(jnp.eye(prob.shape[1], dtype=bool), 0.0, expected)
    return spectral_estimate(expected, lam=0.0).theta


def high_privacy_limit_l2(beta):
    """‖β*_c‖₂: the ℓ2 error of an estimate that carries no signal (β̂ = 0), R11's level."""
    beta = jnp.asarray(beta, jnp.float64)
    return jnp.linalg.norm(beta - jnp.mean(beta))


# ------------------------------------------------------- numbers the rate checks predict
def quantile_design(size: int, low: float = -1.0, high: float = 1.0):
    """The ``size`` mid-quantiles of Unif[low, high] (host, NumPy): a deterministic stand-in
    for a uniform θ* or β* draw when a prediction needs "the" design (R10's floor)."""
    import numpy as np

    return low + (high - low) * (np.arange(size) + 0.5) / size


def rr_floor_l2(eps_rr, n_items: int, n_users: int = 2000, p=1.0):
    """R10's error floor ‖β_∞ − β*_c‖₂ of the RR baseline at ε_RR for the bounded design
    (θ*, β* the mid-quantiles of Unif[−1, 1], :func:`quantile_design`): what its error tends to
    as n → ∞ at fixed ε_RR (:func:`rr_population_limit`). Host; returns a float."""
    import numpy as np

    theta = jnp.asarray(quantile_design(n_users))
    beta = jnp.asarray(quantile_design(n_items))
    limit = rr_population_limit(theta, beta, eps_rr, p)
    return float(np.linalg.norm(np.asarray(limit) - np.asarray(beta - jnp.mean(beta))))


def laplace_gauss_shift_ratio(n_items: int, eps: float, delta: float) -> float:
    """R9's Laplace/Gaussian ratio of the privacy shifts ‖β̃ − β̂‖ (RMS) in the linear regime:
    the ratio of the noise standard deviations, both chains being the same linear map of
    their noise. Paper accounting and conversion (docs/nguyen.md, Mechanisms and estimators): discrete Gaussian
    σ = √(m(m − 1))/ε₀, ε₀ = ε*/√(2 ln(1/δ)); discrete Laplace t = m(m − 1)/ε*; exact discrete
    variances (2α/(1 − α)², α = e^{−1/t}, for Lap_ℤ(t)). ≈ √(m(m − 1)/ln(1/δ))
    (:func:`laplace_gauss_sigma_ratio`) for t ≫ 1. Host; returns a float."""
    import math

    from dpsim.mechanisms.discrete import discrete_gaussian_variance

    pairs = n_items * (n_items - 1)
    sigma = math.sqrt(pairs) * math.sqrt(2.0 * math.log(1.0 / delta)) / eps
    return discrete_laplace_sd(pairs / eps) / math.sqrt(discrete_gaussian_variance(sigma))


def _top_k_sum_cdf(n_items: int, k: int):
    """t ↦ P(M₁ + M₂ ≤ t), M₁ the maximum of n_items − k and M₂ of k standard normals."""
    import numpy as np
    from scipy import stats

    z = np.linspace(-9.0, 12.0, 8401)
    dz = z[1] - z[0]
    rest = n_items - k
    density = rest * stats.norm.pdf(z) * stats.norm.cdf(z) ** (rest - 1)  # of M₁
    return lambda t: float(np.sum(density * stats.norm.cdf(t - z) ** k) * dz)


def top_k_midpoint_factor(n_items: int, k: int) -> float:
    """R6's extreme-value prediction of where exact top-K recovery reaches probability ½, in
    units of x = npΔ_K²/log m, up to the per-item variance s² = n·Var(β̂_i) (a common factor
    that cancels in ratios across m): with independent N(0, s²/(np)) errors, the top K
    (at Δ_K) and the rest (at 0) are separated iff Δ_K√(np)/s > M₁ + M₂, M₁ the maximum of
    m − K and M₂ of K standard normals, so x½ = s²·median(M₁ + M₂)²/log m. Computed by
    numerical integration (host); returns median(M₁ + M₂)²/log m."""
    import math

    from scipy import optimize

    cdf = _top_k_sum_cdf(n_items, k)
    median = optimize.brentq(lambda t: cdf(t) - 0.5, -10.0, 20.0)
    return median * median / math.log(n_items)


def top_k_success_probability(n_items: int, k: int, x: float, s2: float) -> float:
    """The same model's P(exact top-K recovery) at x = npΔ_K²/log m for a per-item variance
    s² = n·Var(β̂_i): P(M₁ + M₂ < √(x·log m/s²)) (host)."""
    import math

    return _top_k_sum_cdf(n_items, k)(math.sqrt(x * math.log(n_items) / s2))


@jax.jit
def _spectral_jacobian(counts):
    """∂θ̂/∂Y of the spectral estimate at ``counts`` ((m, m) → (m, m, m)), compiled once per m:
    traced op by op it would compile hundreds of small programs for R9's values of m."""
    return jax.jacfwd(lambda y: spectral_estimate(y).theta)(counts)


def linearised_shift_rms(n_items: int, n_users: int, noise_sd: float, p: float = 1.0) -> float:
    """The RMS privacy shift √E‖β̃ − β̂‖₂² of a count-noising chain in its linear regime (R8,
    R9): with i.i.d. noise of standard deviation ``noise_sd`` on every ordered count,
    β̃ − β̂ ≈ J z with J = ∂β̂/∂Y at the expected counts, so the RMS is noise_sd·‖J‖_F. J is
    the exact Jacobian of the spectral estimate (λ = 1, exact stationary distribution) at
    E[Y] of the bounded design's mid-quantiles (:func:`quantile_design`; θ* for n_users users,
    β* for n_items items). Unlike the heuristic m/(ε₀np²γ̄) it keeps every finite-m effect
    (centring, each count entering two balance equations). Host; returns a float.
    O(m²) forward-mode derivatives: meant for m ≲ 50."""
    import numpy as np
    from dpsim.models.rasch import expected_differential_counts

    theta = jnp.asarray(quantile_design(n_users))
    beta = jnp.asarray(quantile_design(n_items))
    ey = expected_differential_counts(theta, beta, p)
    jac = _spectral_jacobian(ey)  # (m, m, m)
    off = ~np.eye(n_items, dtype=bool)
    return float(noise_sd * np.sqrt(np.sum(np.asarray(jac)[:, off] ** 2)))


def discrete_laplace_sd(scale: float) -> float:
    """Standard deviation of Lap_ℤ(t): √(2α/(1 − α)²), α = e^{−1/t}."""
    import math

    alpha = math.exp(-1.0 / scale)
    return math.sqrt(2.0 * alpha) / (1.0 - alpha)
