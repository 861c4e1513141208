"""xu (Xu, Sun, Cheng, "Rate-Optimal Rank Aggregation with Private Pairwise Rankings";
xu §4): the rates of Theorems 1–6, the adaptive privacy schemes of
Scenario II with Table 1, the sandwich ("oracle") prediction of the error (docs/xu.md, Predictions (P4)), and
the population limit of the classic-RR MLE (docs/xu.md, Mechanisms and estimators).

Notation: m = ``n_items``, L = ``n_users``, ε per comparison. A privacy level is a scalar ε
(homogeneous, as in all the paper's experiments) or group budgets ``eps`` (n_groups,) with
``group_sizes`` (n_groups,) (:mod:`dpsim.mechanisms.privacy_profile`); the rates depend on it
through G(ε) = mean_l coth²(ε_l/2), H(ε) and K(ε) = mean_l tanh²(ε_l/2).

"≲" in the theorems hides universal constants; compare rates with simulations through slopes
or ratios, not levels. κ = exp(max θ* − min θ*) enters the upper and lower bounds in opposite
directions and its powers are inconsistent in the paper (docs/xu.md, Errata and modes (A17)): do not test κ-dependence.
The log(mL) of the upper bounds is a proof artefact (the lower bound has none; docs/xu.md, Predictions (P1)).

The rates are written with jax.numpy (traceable); the scheme functions and
:func:`exact_top_k_users` are host functions (NumPy / Python floats).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.stats import norm

from dpsim.estimators.debiased_m import debiased_m_estimator
from dpsim.estimators.fit import Fit
from dpsim.linalg import unbatched_on_cpu
from dpsim.mechanisms.pairwise_ldp import (
    pair_mean_expectation,
    pair_mean_variance,
    require_mechanism,
)
from dpsim.mechanisms.privacy_profile import privacy_G, privacy_K, privacy_rho
from dpsim.metrics import relative_hamming_error
from dpsim.models.btl import true_top_k_mask
from dpsim.models.complete_btl import pair_differences, pair_win_probabilities, require_theta
from dpsim.models.individual import pair_index
from dpsim.theory.slopes import loglog_fit
from dpsim.validate import require, require_int, require_positive


def _f64(*values):
    return tuple(jnp.asarray(v, jnp.float64) for v in values)


def _require_sizes(n_items, n_users):
    require_int(n_items, "n_items", 2)
    require_int(n_users, "n_users", 1)


def _statistical_factor(n_items, n_users, eps, group_sizes):
    """G(ε)·log(mL)/(mL), the common factor of Thms 1–2."""
    _require_sizes(n_items, n_users)
    m, L = _f64(n_items, n_users)
    return privacy_G(eps, group_sizes) * jnp.log(m * L) / (m * L)


def _require_kappa(kappa):
    require("kappa", kappa, lambda k: k >= 1, "must be ≥ 1")


# ---------------------------------------------------------------------------------------
# Theorems 1–6 (xu §4.1–4.3)
# ---------------------------------------------------------------------------------------
def excess_risk_rate(n_items, n_users, eps, kappa=1.0, group_sizes=None):
    """δ_{m,L} = κ·G(ε)·log(mL)/(mL): the excess-risk level of xu §4.1 Thm 1 (eq. (5)); e_L(θ̂, θ*)
    exceeds δ ≳ this with probability ≲ exp(−C m² L δ/ρ(ε, κ)). P7 (docs/xu.md, Predictions): m·L·e_L/G ≈ const.

    Args: n_items m ≥ 2; n_users L ≥ 1; eps ε > 0 (scalar, or group budgets with
    ``group_sizes``); kappa κ ≥ 1. Returns: scalar float64."""
    _require_kappa(kappa)
    return jnp.asarray(kappa, jnp.float64) * _statistical_factor(n_items, n_users, eps, group_sizes)


def excess_risk_tail_bound(delta, n_items, n_users, eps, kappa=1.0, group_sizes=None):
    """2·exp(−m²L·δ/(80 ρ(ε, κ))), the explicit tail bound of P(e_L ≥ δ) in the proof of xu
    Thm 1, ρ = (1 + κ)·max{H(ε), G(ε)}. Returns: scalar."""
    _require_sizes(n_items, n_users)
    require_positive(delta, "delta")
    m, L, delta = _f64(n_items, n_users, delta)
    return 2.0 * jnp.exp(-(m**2) * L * delta / (80.0 * privacy_rho(eps, kappa, group_sizes)))


def l2_rate(n_items, n_users, eps, kappa=1.0, group_sizes=None):
    """κ·√(G(ε) log(mL)/(mL)): the bound on m^{−1/2}‖θ̂ − θ*‖₂ of xu §4.1 Thm 2(1), eq. (6).
    Args as :func:`excess_risk_rate`. Returns: scalar."""
    _require_kappa(kappa)
    return jnp.asarray(kappa, jnp.float64) * jnp.sqrt(
        _statistical_factor(n_items, n_users, eps, group_sizes)
    )


def linf_rate(n_items, n_users, eps, kappa=1.0, group_sizes=None):
    """κ²·√(G(ε) log(mL)/(mL)): the bound on ‖θ̂ − θ*‖∞ of xu §4.1 Thm 2(2), eq. (7) (its proof
    assumes θ*_i bounded away from 0, xu Theorems 1–6, §4). Returns: scalar."""
    _require_kappa(kappa)
    return jnp.asarray(kappa, jnp.float64) ** 2 * jnp.sqrt(
        _statistical_factor(n_items, n_users, eps, group_sizes)
    )


def consistency_eps(n_items, n_users):
    """log(mL)/√(mL): under homogeneous ε ≳ this the ℓ2/√m and ℓ∞ errors are o(1) (xu
    §4.1 Cor 1). Returns: scalar."""
    _require_sizes(n_items, n_users)
    m, L = _f64(n_items, n_users)
    return jnp.log(m * L) / jnp.sqrt(m * L)


def critical_eps(n_items, n_users):
    """1/√(mL): the critical privacy level; for ε_l ≍ 1/√(mL) the errors stay bounded away
    from 0 (xu §4.1 Cor 2 with Thm 3), so it separates consistency from inconsistency. Returns: scalar."""
    _require_sizes(n_items, n_users)
    m, L = _f64(n_items, n_users)
    return 1.0 / jnp.sqrt(m * L)


def minimax_lower_bound(n_items, n_users, eps, kappa=1.0, group_sizes=None):
    """1/√(κ·m·Σ_l tanh²(ε_l/2)) = 1/√(κ m L K(ε)): the minimax lower bound on
    E m^{−1/2}‖θ̂ − θ*‖₂ (and so on E‖θ̂ − θ*‖∞) of xu §4.1 Thm 3; coth(ε/2)/√(κmL) for homogeneous
    ε. For heterogeneous ε it is below the upper bound's √G scale (G ≥ 1/K, xu Theorems 1–6, §4).
    Returns: scalar."""
    _require_sizes(n_items, n_users)
    _require_kappa(kappa)
    m, L, kappa = _f64(n_items, n_users, kappa)
    return 1.0 / jnp.sqrt(kappa * m * L * privacy_K(eps, group_sizes))


def exact_top_k_users(n_items, eps, kappa, gap, group_sizes=None) -> float:
    """The smallest L with m²L/2 ≥ G(ε)κ⁴ m log(mL)/Δ_K², i.e. L ≥ 2Gκ⁴ log(mL)/(mΔ_K²): the
    sample size beyond which xu §4.2 Thm 4 recovers the top-K set exactly w.h.p. (up to its
    constant). G depends on the profile's proportions only. Host function (bisection).

    Args: n_items m; eps (scalar or group budgets with group_sizes); kappa κ ≥ 1; gap Δ_K > 0.
    Returns: Python float ≥ 1."""
    require_int(n_items, "n_items", 2)
    _require_kappa(kappa)
    require_positive(gap, "gap")
    c = 2.0 * float(privacy_G(eps, group_sizes)) * float(kappa) ** 4 / (n_items * float(gap) ** 2)

    def slack(L):
        return L - c * np.log(n_items * L)

    if slack(1.0) >= 0:
        return 1.0
    lo, hi = max(1.0, c), max(2.0, c)
    while slack(hi) < 0:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if slack(mid) < 0 else (lo, mid)
    return hi


def top_k_error_bound(n_items, n_users, eps, kappa, gap, c0=1.0, group_sizes=None):
    """exp(−C0·m·L·Δ_K²/(G(ε)κ⁴)): the bound on E H_K(θ̂, θ*) of xu §4.2 Thm 5 (C0 unknown; the κ⁴
    makes it vacuous for large (m−1)Δ, docs/xu.md, Predictions (P8): test monotonicity, not C0). Returns: scalar."""
    _require_sizes(n_items, n_users)
    _require_kappa(kappa)
    require_positive(gap, "gap")
    m, L, kappa, gap, c0 = _f64(n_items, n_users, kappa, gap, c0)
    return jnp.exp(-c0 * m * L * gap**2 / (privacy_G(eps, group_sizes) * kappa**4))


def kendall_error_bound(n_items, n_users, eps, kappa, gaps, c0=1.0, group_sizes=None):
    """(2/(m−1))·Σ_{i=1}^{m−1} exp(−C0·m·L·Δ_i²/(G(ε)κ⁴)), Δ_i = θ*_(i) − θ*_(i+1): the bound on
    E K(θ̂, θ*) of xu §4.3 Thm 6; 2·exp(−C0 mLΔ²/(Gκ⁴)) for evenly spaced θ*.

    Args: as :func:`top_k_error_bound`, with gaps: (m−1,) sorted gaps or a scalar Δ.
    Returns: scalar."""
    _require_sizes(n_items, n_users)
    _require_kappa(kappa)
    require_positive(gaps, "gaps")
    m, L, kappa, c0 = _f64(n_items, n_users, kappa, c0)
    gaps = jnp.broadcast_to(jnp.asarray(gaps, jnp.float64), (n_items - 1,))
    terms = jnp.exp(-c0 * m * L * gaps**2 / (privacy_G(eps, group_sizes) * kappa**4))
    return 2.0 / (m - 1.0) * jnp.sum(terms)


# ---------------------------------------------------------------------------------------
# Adaptive privacy schemes (xu §5.1 Scenario II, §5.2 Scenario IV; docs/xu.md, Predictions (P5); Errata and modes (A8, A9)) and Table 1
# ---------------------------------------------------------------------------------------
SCHEMES = ("eps_log_over_sqrt", "eps_inv_sqrt", "eps_inv_sqrt_log")
# The paper's numbers for the schemes (its Scenario II list). Its text and the Fig. 3 and
# Fig. 7 discussion describe Schemes 1 and 3 with swapped behaviour (xu Scenario II, §5.1; docs/xu.md, Errata and modes (A8)): trust
# the formulas and Table 1.
PAPER_SCHEME_NUMBER = {"eps_log_over_sqrt": 1, "eps_inv_sqrt": 2, "eps_inv_sqrt_log": 3}
# Table 1: the behaviour of E m^{-1/2}‖θ̂ − θ*‖₂ and E‖θ̂ − θ*‖∞ as m or L grows.
TABLE1_TREND = {
    "eps_inv_sqrt_log": "increase",
    "eps_inv_sqrt": "stable",
    "eps_log_over_sqrt": "decrease",
}
DEFAULT_L0 = 100  # Scenario II: ε(m, 100) = 1; use the grid's smallest L otherwise (A9)


def _require_scheme(scheme: str) -> None:
    if scheme not in SCHEMES:
        raise ValueError(f"scheme={scheme!r} is unknown; choose one of {list(SCHEMES)}")


def scheme_shape(n_items, n_users, scheme: str):
    """The unnormalised scheme f(mL): log(mL)/√(mL) (``eps_log_over_sqrt``), 1/√(mL)
    (``eps_inv_sqrt``) or 1/(√(mL)·log(mL)) (``eps_inv_sqrt_log``) (xu §5.1, Scenario II).
    Host function: NumPy in, NumPy out."""
    _require_scheme(scheme)
    x = np.asarray(n_items, np.float64) * np.asarray(n_users, np.float64)
    if scheme == "eps_log_over_sqrt":
        return np.log(x) / np.sqrt(x)
    if scheme == "eps_inv_sqrt":
        return 1.0 / np.sqrt(x)
    return 1.0 / (np.sqrt(x) * np.log(x))


def adaptive_eps(n_items, n_users, scheme: str, l0: int = DEFAULT_L0):
    """ε(m, L) = f(mL)/f(m·L0): the adaptive scheme normalised so that ε(m, L0) = 1 (xu
    Scenario II: "ε1(m,100) = ε2(m,100) = ε3(m,100) = 1"; xu Scenario II, §5.1). Explicitly
    ε = √(L0/L)·log(mL)/log(mL0), √(L0/L) and √(L0/L)·log(mL0)/log(mL). Use L0 = 100 for
    Scenario II and L0 = the grid's smallest L for Scenario IV and the real data (A9).

    Args: n_items m ≥ 2, n_users L ≥ 1 (numbers or NumPy arrays); scheme: one of
    :data:`SCHEMES`; l0: L0 ≥ 1. Returns: float64 NumPy value(s) (host function)."""
    _require_scheme(scheme)
    require_int(n_items, "n_items", 2)
    require_int(n_users, "n_users", 1)
    require_int(l0, "l0", 1)
    return scheme_shape(n_items, n_users, scheme) / scheme_shape(n_items, l0, scheme)


def scheme_error_proxy(n_items, n_users, scheme: str, l0: int = DEFAULT_L0):
    """√(G(ε)/(mL)) at ε = :func:`adaptive_eps` (m, L): the error scale of Thm 2 without its
    log (docs/xu.md, Predictions (P1, P5)), whose trend in L is Table 1's. Host function."""
    eps = adaptive_eps(n_items, n_users, scheme, l0)
    G = np.asarray(1.0 / np.tanh(eps / 2.0)) ** 2
    return np.sqrt(G / (np.asarray(n_items, np.float64) * np.asarray(n_users, np.float64)))


def table1_trend(scheme: str) -> str:
    """Table 1 of xu (§4.1): "increase", "stable" or "decrease", the behaviour of the ℓ2/√m and ℓ∞
    errors as m or L grows under the scheme (Cor 1–2; docs/xu.md, Predictions (P5))."""
    _require_scheme(scheme)
    return TABLE1_TREND[scheme]


def scheme_proxy_slope(n_items, n_users_grid, scheme: str, l0: int = DEFAULT_L0) -> float:
    """The least-squares slope of log :func:`scheme_error_proxy` on log L over ``n_users_grid``
    at m = ``n_items``: the Table 1 trend of a scheme on a concrete grid, as a number
    (docs/xu.md, Predictions (P5): ≈ −33%, −7% and +30% over L = 100 → 1600 at m = 10). Host function.

    Args: n_items m; n_users_grid: ≥ 2 values of L; scheme; l0. Returns: Python float."""
    Ls = np.asarray(n_users_grid, np.float64)
    if Ls.ndim != 1 or len(np.unique(Ls)) < 2:
        raise ValueError("n_users_grid needs at least two distinct values of L")
    return loglog_fit(Ls, scheme_error_proxy(n_items, Ls.astype(np.int64), scheme, l0))


# ---------------------------------------------------------------------------------------
# Privacy-level ratios (xu §3.2, Lemma 2; docs/xu.md, Predictions (P3))
# ---------------------------------------------------------------------------------------
def rms_ratio_bounds(g_num: float, g_den: float) -> tuple[float, float]:
    """Bounds on RMS(θ̂ at G_num)/RMS(θ̂ at G_den) for the debiased estimator at one θ*, L and m
    under the sandwich (docs/xu.md, Predictions (P3, P4), derived from xu Lemma 2): the per-pair variance of z̄ is
    (G/4 − (p*_e − ½)²)/L, with 0 ≤ (p* − ½)² < 1/4, so the ratio of the error variances
    Σ_e c_e (G_num/4 − d_e)/Σ_e c_e (G_den/4 − d_e) (c_e ≥ 0) lies between G_num/G_den
    (all d_e = 0) and (G_num − 1)/(G_den − 1) (all d_e → 1/4). For homogeneous ε, G = coth²(ε/2)
    and the lower bound is the coth(ε/2) ratio of P3.

    Args: g_num, g_den: G ≥ 1 of the two privacy levels (G_num ≥ G_den), Python floats.
    Returns: (low, high) of the RMS ratio; high = inf when G_den = 1 (no privacy)."""
    g_num, g_den = float(g_num), float(g_den)
    if not (g_num >= g_den >= 1.0):
        raise ValueError(f"need G_num ≥ G_den ≥ 1, got {g_num!r}, {g_den!r}")
    low = math.sqrt(g_num / g_den)
    high = math.inf if g_den == 1.0 else math.sqrt((g_num - 1.0) / (g_den - 1.0))
    return low, high


def homogeneous_eps_for_G(G: float) -> float:
    """The homogeneous per-comparison ε with coth²(ε/2) = G, i.e. ε = 2·artanh(1/√G): the
    homogeneous profile with the same averaged privacy G(ε) as a heterogeneous one (xu §4.1;
    docs/xu.md, Errata and modes (A21)). Host function. Args: G ≥ 1 (Python float). Returns: ε (inf for G = 1)."""
    G = float(G)
    if not G >= 1.0:
        raise ValueError(f"G={G!r} must be ≥ 1")
    return math.inf if G == 1.0 else 2.0 * math.atanh(1.0 / math.sqrt(G))


# ---------------------------------------------------------------------------------------
# Sandwich (oracle) prediction (docs/xu.md, Predictions (P4), derived)
# ---------------------------------------------------------------------------------------
ORACLE_MECHANISMS = ("debiased_rr", "laplace", "none")


class OracleMoments(NamedTuple):
    """Gaussian approximation θ̂ − θ* ≈ N(bias, cov) (docs/xu.md, Predictions (P4)).

    Attributes: bias: (m,) −(H* + 2λI)⁻¹ 2λθ* (0 at λ = 0); cov: (m, m) (H* + 2λI)⁻¹ V (H* + 2λI)⁻¹,
    with the pseudo-inverse on 1ᵀθ = 0 at λ = 0."""

    bias: jax.Array
    cov: jax.Array


def _laplacian(weights, n_items):
    """Σ_e w_e (e_i − e_j)(e_i − e_j)ᵀ for per-pair weights (M,). Returns (m, m)."""
    i, j = pair_index(n_items)
    off = jnp.zeros((n_items, n_items)).at[i, j].set(-weights).at[j, i].set(-weights)
    return off - jnp.diag(jnp.sum(off, axis=1))


@unbatched_on_cpu
def _inv(a):
    return jnp.linalg.inv(a)


@unbatched_on_cpu
def _cholesky(a):
    return jnp.linalg.cholesky(a)


def oracle_moments(theta, group_sizes, group_eps, mechanism: str, lam=0.0) -> OracleMoments:
    """The sandwich moments of θ̂ at θ* (docs/xu.md, Predictions (P4), derived; matched simulation within a few
    percent at ε ≥ 1 with λ = 0 — the default: the ridge's
    first-order bias over-predicts by 4–10% at m = 10, L = 100).

    H* = Σ_e p*_e(1 − p*_e) a_e a_eᵀ, V = Σ_e Var(z̄_e) a_e a_eᵀ with a_e = e_i − e_j and the exact
    per-pair variance of :func:`~dpsim.mechanisms.pairwise_ldp.pair_mean_variance`.

    Args:
        theta: (m,) θ* (centred internally).
        group_sizes, group_eps: (n_groups,) the privacy profile (ε ignored for "none").
        mechanism: "debiased_rr", "laplace" or "none" (classic RR is biased: see
            :func:`classic_rr_population_limit`).
        lam: λ ≥ 0 of the estimator (0: the plain sandwich).
    Returns:
        :class:`OracleMoments`. vmap-safe (LAPACK unbatched on CPU).
    """
    require_mechanism(mechanism, ORACLE_MECHANISMS)
    require("lam", lam, lambda v: (v >= 0) & np.isfinite(v), "must be a finite number ≥ 0")
    m = require_theta(theta)
    theta = jnp.asarray(theta, jnp.float64)
    theta = theta - jnp.mean(theta)
    p = pair_win_probabilities(theta)
    h_star = _laplacian(p * (1 - p), m)
    v = _laplacian(pair_mean_variance(p, group_sizes, group_eps, mechanism), m)
    lam = jnp.asarray(lam, jnp.float64)
    # Every vector hit by the inverse is ⊥ 1 (V's range, centred θ*), where
    # (H* + 2λI + 11ᵀ/m)⁻¹ acts as (H* + 2λI)⁻¹ (and as the pseudo-inverse at λ = 0).
    inv = _inv(h_star + 2.0 * lam * jnp.eye(m) + jnp.ones((m, m)) / m)
    cov = inv @ v @ inv
    cov = 0.5 * (cov + cov.T)
    bias = -inv @ (2.0 * lam * theta)
    return OracleMoments(bias=bias, cov=cov)


def oracle_predictions(
    key,
    theta,
    group_sizes,
    group_eps,
    mechanism: str,
    lam=0.0,
    k: int | None = None,
    n_mc: int = 20_000,
) -> dict:
    """Predicted errors of the estimator at θ* from θ̂ − θ* ≈ N(bias, cov) (docs/xu.md, Predictions (P4)):

    - ``mse``: E‖θ̂ − θ*‖²/m = (tr cov + ‖bias‖²)/m; ``rmse_l2_rms``: √mse (the RMSE of ℓ2/√m);
    - ``kendall``: E K = mean_{i<j} Φ(−(|d*_ij| + sign(d*_ij)(b_i − b_j))/sd(θ̂_i − θ̂_j)) (eq. (9),
      orientation corrected, A16);
    - ``l2_rms``, ``linf``, ``top_k_hamming``: Monte Carlo means of ‖x‖/√m, ‖x‖∞ and H_K over
      ``n_mc`` draws x ~ N(bias, cov) (K = ``k``, default m//2).

    Args: key: PRNG key (the Monte Carlo draws); theta, group_sizes, group_eps, mechanism,
    lam: as :func:`oracle_moments`; k: K (static); n_mc: draws (static).
    Returns: dict of scalars.
    """
    m = require_theta(theta)
    k = m // 2 if k is None else k
    require_int(k, "k", 1, m - 1)
    require_int(n_mc, "n_mc", 2)
    theta = jnp.asarray(theta, jnp.float64)
    theta = theta - jnp.mean(theta)
    bias, cov = oracle_moments(theta, group_sizes, group_eps, mechanism, lam)
    mse = (jnp.trace(cov) + jnp.dot(bias, bias)) / m
    # Kendall by Φ
    i, j = pair_index(m)
    d_true = pair_differences(theta)
    mean_diff = d_true + bias[i] - bias[j]
    sd = jnp.sqrt(jnp.maximum(cov[i, i] + cov[j, j] - 2.0 * cov[i, j], 1e-300))
    kendall = jnp.mean(norm.cdf(-jnp.sign(d_true) * mean_diff / sd))
    # Monte Carlo: cov + 11ᵀ/m is positive definite; centring a draw from it removes the 1-part
    chol = _cholesky(cov + jnp.ones((m, m)) / m)
    xi = jax.random.normal(key, (n_mc, m))
    x = xi @ chol.T
    x = x - jnp.mean(x, axis=1, keepdims=True) + bias
    true_mask = true_top_k_mask(theta, k)
    hamming = jax.vmap(lambda e: relative_hamming_error(true_top_k_mask(theta + e, k), true_mask))(
        x
    )
    return {
        "mse": mse,
        "rmse_l2_rms": jnp.sqrt(mse),
        "l2_rms": jnp.mean(jnp.linalg.norm(x, axis=1)) / jnp.sqrt(m),
        "linf": jnp.mean(jnp.max(jnp.abs(x), axis=1)),
        "kendall": kendall,
        "top_k_hamming": jnp.mean(hamming),
    }


# ---------------------------------------------------------------------------------------
# Classic RR: population limit (docs/xu.md, Mechanisms and estimators)
# ---------------------------------------------------------------------------------------
def classic_rr_population_limit(theta, group_sizes, group_eps) -> Fit:
    """θ̃, the limit of the classic-RR MLE as L → ∞ and λ → 0 (docs/xu.md, Mechanisms and estimators, derived from xu
    Lemma 1): the solution of Σ_{j≠i} σ(θ̃_i − θ̃_j) = Σ_{j≠i} q̃_ij with 1ᵀθ̃ = 0, where
    q̃_ij = ½ + (p*_ij − ½)·mean_l tanh(ε_l/2) is the mean classic-RR answer. It is the
    estimator of eq. (3) with z̄ = q̃ and λ = 0 (q̃ ∈ (0, 1), so the minimiser exists and sums to
    zero), solved by the same Newton method.

    Args: theta: (m,) θ*; group_sizes, group_eps: (n_groups,) the privacy profile.
    Returns: :class:`~dpsim.estimators.fit.Fit` whose theta is θ̃ (m,)."""
    require_theta(theta)
    q = pair_mean_expectation(pair_win_probabilities(theta), group_sizes, group_eps, "classic_rr")
    return debiased_m_estimator(q, 0.0)


def classic_rr_floor(theta, group_sizes, group_eps) -> dict:
    """The classic-RR estimation-error floor at θ* (docs/xu.md, Mechanisms and estimators; Predictions (P10)): ``l2_rms`` ‖θ̃ − θ*‖₂/√m,
    ``linf`` ‖θ̃ − θ*‖∞ and ``shrink_slope`` (the least-squares slope of θ̃ on centred θ*, < 1),
    with θ̃ from :func:`classic_rr_population_limit`. Returns: dict of scalars
    (plus ``converged``)."""
    theta = jnp.asarray(theta, jnp.float64)
    theta = theta - jnp.mean(theta)
    fit = classic_rr_population_limit(theta, group_sizes, group_eps)
    err = fit.theta - theta
    return {
        "l2_rms": jnp.linalg.norm(err) / jnp.sqrt(theta.shape[0]),
        "linf": jnp.max(jnp.abs(err)),
        "shrink_slope": jnp.dot(fit.theta, theta) / jnp.dot(theta, theta),
        "converged": fit.converged,
    }


__all__ = [
    "excess_risk_rate",
    "excess_risk_tail_bound",
    "l2_rate",
    "linf_rate",
    "consistency_eps",
    "critical_eps",
    "minimax_lower_bound",
    "exact_top_k_users",
    "top_k_error_bound",
    "kendall_error_bound",
    "SCHEMES",
    "PAPER_SCHEME_NUMBER",
    "TABLE1_TREND",
    "DEFAULT_L0",
    "scheme_shape",
    "adaptive_eps",
    "scheme_error_proxy",
    "table1_trend",
    "scheme_proxy_slope",
    "rms_ratio_bounds",
    "homogeneous_eps_for_G",
    "ORACLE_MECHANISMS",
    "OracleMoments",
    "oracle_moments",
    "oracle_predictions",
    "classic_rr_population_limit",
    "classic_rr_floor",
]
