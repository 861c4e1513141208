"""chowdhury (Chowdhury, Zhou, Natarajan, "Differentially Private Reward Estimation with
Preference Feedback"; spec ../shared/papers/chowdhury.md §5): the local and central lower and
upper bounds, one function per theorem, and the sharp asymptotic constants (A1)–(A3) of
spec §5.5.

Conventions. n = ``n_samples``, d = ``dim``, L = ``feature_bound`` (‖ϕ‖ ≤ L, so ‖x‖ ≤ 2L), B =
``radius``, κ = ``kappa`` (λ_min(Σ)), γ = ``gamma`` (curvature lower bound; :func:`gamma_btl`
gives the theorems' value, ≈ e^{−2LB}), α = ``alpha`` (failure probability). The theorems'
constants C, C' are unspecified, so every bound is written with C = C' = 1 and is compared with
simulations through slopes and ratios (DESIGN "Theory and verification"), except where an
explicit constant is given (Thm 3.2, Thm 5.1's private term, the SGD proof). Functions are
written with jax.numpy: numbers in, a 0-d array out (wrap in ``float``), and traceable.
"""
from __future__ import annotations

import jax.numpy as jnp
from jax.scipy.stats import norm

from dpsim.solvers import symmetric_eigh


def _f64(*values):
    return tuple(jnp.asarray(v, jnp.float64) for v in values)


# ---------------------------------------------------------------------------------------
# Privacy factors and curvature constants
# ---------------------------------------------------------------------------------------
def rr_privacy_factor(eps):
    """(e^ε + 1)/(e^ε − 1) = coth(ε/2) = 1/(2σ(ε) − 1), the local-model price of RR
    (chowdhury Thms 4.2, 4.5; spec §3.2 table: 20.017, 4.083, 2.164 at ε = 0.1, 0.5, 1)."""
    (eps,) = _f64(eps)
    return 1.0 / jnp.tanh(eps / 2.0)


def krr_privacy_factor(eps, k):
    """(e^ε + K − 1)/(e^ε − 1), the price of K-ary RR (chowdhury Thm C.2; P11)."""
    eps, k = _f64(eps, k)
    return (jnp.exp(eps) + k - 1.0) / jnp.expm1(eps)


def rr_excess_variance_factor(eps):
    """e^ε/(e^ε − 1)² = (1 − c²)/(4c²), c = tanh(ε/2): the privacy excess factor of (A2)
    (spec §5.5; 99.917, 3.918, 0.921 at ε = 0.1, 0.5, 1)."""
    (eps,) = _f64(eps)
    return jnp.exp(eps) / jnp.expm1(eps) ** 2


def gamma_btl(feature_bound, radius):
    """γ = 1/(2 + e^{−2LB} + e^{2LB}) = min_{|z| ≤ 2LB} σ'(z) (chowdhury §4, BTL; spec §2.3)."""
    L, B = _f64(feature_bound, radius)
    c = 2.0 * L * B
    return 1.0 / (2.0 + jnp.exp(-c) + jnp.exp(c))


def gamma_thurstone(feature_bound, radius):
    """γ_Th = min_{|z| ≤ c} −(log Φ)''(z) = φ(c)(cΦ(c) + φ(c))/Φ(c)², c = 2LB (chowdhury §4.4
    gives none; spec §4.5, §8 item 12 [derived]: 0.6366 at c = 0, 0.3703 at 1, 0.1135 at 2)."""
    L, B = _f64(feature_bound, radius)
    c = 2.0 * L * B
    phi, Phi = norm.pdf(c), norm.cdf(c)
    return phi * (c * Phi + phi) / Phi ** 2


def gamma_plackett_luce(feature_bound, radius, mode: str = "appendix"):
    """γ for Plackett–Luce: e^{−4LB}/2 (Thm C.2, ``mode="appendix"``, spec §8 item 11 [rec]) or
    e^{−4LB} (main text, ``mode="main"``)."""
    if mode not in ("appendix", "main"):
        raise ValueError(f"mode={mode!r} is not one of ['appendix', 'main']")
    L, B = _f64(feature_bound, radius)
    g = jnp.exp(-4.0 * L * B)
    return g / 2.0 if mode == "appendix" else g


def gamma_rr_naive(eps, logit_bound, gamma=None):
    """γ̃_ε = γ(e^ε − 1)(e^ε e^{−2c} − 1)/(e^ε e^c + 1)², the strong-convexity modulus of the
    naive RR likelihood (chowdhury Thm 4.1 proof; spec §2.3), c = bound on |xᵀθ|; positive only
    for ε > 2c. ``gamma`` defaults to 1/(2 + e^{−c} + e^{c})."""
    eps, c = _f64(eps, logit_bound)
    gamma = 1.0 / (2.0 + jnp.exp(-c) + jnp.exp(c)) if gamma is None else gamma
    e = jnp.exp(eps)
    return gamma * jnp.expm1(eps) * (e * jnp.exp(-2.0 * c) - 1.0) / (e * jnp.exp(c) + 1.0) ** 2


# ---------------------------------------------------------------------------------------
# Local model: lower bounds (Thms 3.1, 3.2)
# ---------------------------------------------------------------------------------------
def local_seminorm_lower_bound(n_samples, dim, eps):
    """d/n + d/((e^ε − 1)²n): chowdhury Thm 3.1, the minimax order of E‖θ̂ − θ*‖²_{Σ_D+λI}
    under local ε-label DP (fixed design; constant unspecified)."""
    n, d, eps = _f64(n_samples, dim, eps)
    return d / n + d / (jnp.expm1(eps) ** 2 * n)


def local_l2_lower_bound(n_samples, dim, eps, feature_bound):
    """(d/L²)(d/n + d/((e^ε − 1)²n)): chowdhury Thm 3.2, order of the minimax E‖θ̂ − θ*‖²₂
    under local ε-label DP (L bounds ‖x‖ in this proof, spec §8 item 7)."""
    (L,) = _f64(feature_bound)
    return dim / L ** 2 * local_seminorm_lower_bound(n_samples, dim, eps)


def local_l2_lower_bound_explicit(x, eps):
    """max(d²/(16‖X‖_F²), d²/(32(e^ε − 1)²‖X‖_F²)): the explicit Assouad constants of the proof
    of chowdhury Thm 3.2 for the fixed design X (spec §5.1; P13, a minimax sanity bound).

    Args: x: (n_samples, dim); eps. Returns: scalar."""
    (eps,) = _f64(eps)
    d = x.shape[1]
    frob = jnp.sum(x * x)
    return jnp.maximum(d ** 2 / (16.0 * frob), d ** 2 / (32.0 * jnp.expm1(eps) ** 2 * frob))


# ---------------------------------------------------------------------------------------
# Local model: upper bounds (Thms 4.1, 4.2, Cor 4.3, Thm 4.5, Thm C.2)
# ---------------------------------------------------------------------------------------
def rr_mle_seminorm_bound(n_samples, dim, eps, feature_bound, radius, *, alpha=0.05, lam=0.0, gamma=1.0):
    """(1/γ)·(e^{ε+2LB} + 1)/(e^{ε−2LB} − 1)·√((d + log(1/α))/n) + √λ·B: chowdhury Thm 4.1, the
    naive RR-MLE's semi-norm bound, valid only for ε > 2LB (NaN otherwise; the proof needs
    ε > 2c, spec §8 item 10)."""
    n, d, eps, L, B, alpha, lam = _f64(n_samples, dim, eps, feature_bound, radius, alpha, lam)
    c = 2.0 * L * B
    factor = (jnp.exp(eps + c) + 1.0) / jnp.expm1(eps - c)
    bound = factor / gamma * jnp.sqrt((d + jnp.log(1.0 / alpha)) / n) + jnp.sqrt(lam) * B
    return jnp.where(eps > c, bound, jnp.nan)


def rr_seminorm_bound(n_samples, dim, eps, radius, *, alpha=0.05, lam=0.0, gamma=1.0):
    """(1/γ)·((e^ε + 1)/(e^ε − 1))·√((d + log(1/α))/n) + √λ·B: chowdhury Thm 4.2 eq. (7), the
    semi-norm bound of θ̂_RR for every ε > 0."""
    n, d, B, alpha, lam = _f64(n_samples, dim, radius, alpha, lam)
    return (rr_privacy_factor(eps) / gamma * jnp.sqrt((d + jnp.log(1.0 / alpha)) / n)
            + jnp.sqrt(lam) * B)


def rr_seminorm_balanced_lambda(n_samples, dim, eps, radius, *, alpha=0.05, gamma=1.0):
    """λ = ((e^ε + 1)/(e^ε − 1))²(d + log(1/α))/(B²γ²n), which balances the two terms of
    Thm 4.2 (chowdhury §4.2; spec §8 item 16)."""
    n, d, B, alpha = _f64(n_samples, dim, radius, alpha)
    return rr_privacy_factor(eps) ** 2 * (d + jnp.log(1.0 / alpha)) / (B ** 2 * gamma ** 2 * n)


def rr_l2_bound(n_samples, dim, eps, kappa_d, *, alpha=0.05, gamma=1.0):
    """(1/(γ√λ_min(Σ_D)))·((e^ε + 1)/(e^ε − 1))·√((d + log(1/α))/n): chowdhury Cor 4.3, the ℓ2
    bound of θ̂_RR (``kappa_d`` = λ_min(Σ_D))."""
    n, d, kappa_d, alpha = _f64(n_samples, dim, kappa_d, alpha)
    return rr_privacy_factor(eps) / (gamma * jnp.sqrt(kappa_d)) * jnp.sqrt((d + jnp.log(1.0 / alpha)) / n)


def sgd_rr_l2_bound(n_samples, eps, feature_bound, kappa, *, alpha=0.05, gamma=1.0):
    """(L/(γκ))·((e^ε + 1)/(e^ε − 1))·√(log(log(n)/α)/n): chowdhury Thm 4.5, θ̂_SGD-RR in ℓ2
    (for every iterate t ≤ n with n → t)."""
    n, L, kappa, alpha = _f64(n_samples, feature_bound, kappa, alpha)
    return L / (gamma * kappa) * rr_privacy_factor(eps) * jnp.sqrt(jnp.log(jnp.log(n) / alpha) / n)


def sgd_rr_l2_bound_explicit(t, n_samples, eps, feature_bound, kappa, *, alpha=0.05, gamma=1.0):
    """√((624 log(log n/α) + 1)·G²/(λ²t)) with G = 4L and λ = γ(2σ(ε) − 1)κ: the explicit bound on
    ‖θ̂_{t+1} − θ*‖ from the proof of chowdhury Thm 4.5 (App. C.3; spec §4.4), for the proof's
    step η_t = 1/(λt)."""
    t, n, L, kappa, alpha = _f64(t, n_samples, feature_bound, kappa, alpha)
    lam = gamma / rr_privacy_factor(eps) * kappa
    return jnp.sqrt((624.0 * jnp.log(jnp.log(n) / alpha) + 1.0) * (4.0 * L) ** 2 / (lam ** 2 * t))


def sgd_krr_l2_bound(n_samples, eps, k, feature_bound, kappa, *, alpha=0.05, gamma=1.0):
    """(L/(γκ))·((e^ε + K − 1)/(e^ε − 1))·√(log(log n/α)/n): chowdhury Thm C.2, θ̂_SGD-KRR for
    Plackett–Luce top-1 (γ from :func:`gamma_plackett_luce` for the theorem's constant)."""
    n, L, kappa, alpha = _f64(n_samples, feature_bound, kappa, alpha)
    return L / (gamma * kappa) * krr_privacy_factor(eps, k) * jnp.sqrt(jnp.log(jnp.log(n) / alpha) / n)


# ---------------------------------------------------------------------------------------
# Central model (Thms 5.1, 5.3, Cor 5.4, D.3, D.5)
# ---------------------------------------------------------------------------------------
def central_l2_lower_bound(n_samples, dim, eps, delta, feature_bound):
    """d²/(nL²) + d/(n²(ε + δ)²): chowdhury Thm 5.1, order of the minimax E‖θ̂ − θ*‖²₂ under
    central (ε, δ)-label DP."""
    n, d, eps, delta, L = _f64(n_samples, dim, eps, delta, feature_bound)
    return d ** 2 / (n * L ** 2) + d / (n ** 2 * (eps + delta) ** 2)


def central_l2_lower_bound_private_explicit(n_samples, dim, eps, delta):
    """4·10⁻⁴·d/(n²(ε + δ)²), the private term of Thm 5.1 with the DP-Assouad constants
    (Δ = 0.04/(n(ε + δ)); spec §5.3 [derived arithmetic])."""
    n, d, eps, delta = _f64(n_samples, dim, eps, delta)
    return 4e-4 * d / (n ** 2 * (eps + delta) ** 2)


def central_seminorm_lower_bound(n_samples, dim, eps):
    """d/n + d²/(n²ε²): chowdhury Thm D.3, the semi-norm minimax order under central pure
    (ε, 0)-label DP."""
    n, d, eps = _f64(n_samples, dim, eps)
    return d / n + d ** 2 / (n ** 2 * eps ** 2)


def objective_perturbation_l2_bound(n_samples, dim, sigma, feature_bound, kappa, *, alpha=0.05, gamma=1.0):
    """(L/(κγ))√(log(1/α)/n) + σ(√d + √log(1/α))/(nκγ): chowdhury Thm 5.3, θ̂_obj in ℓ2 with
    β = √n/B (needs n ≥ 8L² log(d/α)/κ)."""
    n, d, sigma, L, kappa, alpha = _f64(n_samples, dim, sigma, feature_bound, kappa, alpha)
    la = jnp.log(1.0 / alpha)
    return L / (kappa * gamma) * jnp.sqrt(la / n) + sigma * (jnp.sqrt(d) + jnp.sqrt(la)) / (n * kappa * gamma)


def objective_perturbation_l2_rate(n_samples, dim, eps, delta, feature_bound, kappa, *, gamma=1.0):
    """L/(κγ√n) + L√(d log(1/δ))/(nεκγ): chowdhury Cor 5.4 (σ of Thm 5.2 plugged in), the central
    rate; the privacy cost is the additive 1/(εn) term (Remark 5.5)."""
    n, d, eps, delta, L, kappa = _f64(n_samples, dim, eps, delta, feature_bound, kappa)
    return L / (kappa * gamma * jnp.sqrt(n)) + L * jnp.sqrt(d * jnp.log(1.0 / delta)) / (n * eps * kappa * gamma)


def objective_perturbation_seminorm_bound(n_samples, dim, sigma, radius, *, alpha=0.05, gamma=1.0):
    """(1/γ)√((d + log(1/α))/n) + √σ(d log(1/α))^{1/4}/√(nγB): chowdhury Thm D.5, θ̂_obj in
    ‖·‖_{Σ_D+λ'I} with β = σ√(d log(1/α))/B, λ' = β/(γn) (not tight, spec §5.3)."""
    n, d, sigma, B, alpha = _f64(n_samples, dim, sigma, radius, alpha)
    la = jnp.log(1.0 / alpha)
    return jnp.sqrt((d + la) / n) / gamma + jnp.sqrt(sigma) * (d * la) ** 0.25 / jnp.sqrt(n * gamma * B)


def seminorm_ridge_theory(sigma, dim, radius, *, alpha=0.05):
    """β = σ√(d log(1/α))/B, the ridge of chowdhury Thm D.5 (spec §4.7)."""
    sigma, d, B, alpha = _f64(sigma, dim, radius, alpha)
    return sigma * jnp.sqrt(d * jnp.log(1.0 / alpha)) / B


# ---------------------------------------------------------------------------------------
# Sharp asymptotic constants (spec §5.5 (A1)–(A3), [derived])
# ---------------------------------------------------------------------------------------
_GRID = jnp.linspace(-12.0, 12.0, 4801)
_WEIGHTS = norm.pdf(_GRID) * (_GRID[1] - _GRID[0])


def gaussian_design_information(theta, scale=jnp.sqrt(2.0)):
    """(H, Σ) for x ~ N(0, s²I_d): H = E[σ'(xᵀθ)xxᵀ] (per-sample Fisher information at θ) and
    Σ = E[xxᵀ] = s²I (spec §5.5). With u = θ/‖θ‖ and z = s‖θ‖g, g ~ N(0, 1):
    H = s²[E σ'(z)·(I − uuᵀ) + E σ'(z)g²·uuᵀ], the two expectations by the trapezoid rule on
    [−12, 12] (4801 points; spectrally accurate for this smooth integrand).

    Args: theta: (dim,); scale: s (√2 for x = ϕ¹ − ϕ⁰, 1 for x ~ N(0, I)).
    Returns: (H (dim, dim), Σ (dim, dim))."""
    d = theta.shape[0]
    r = jnp.linalg.norm(theta)
    u = theta / jnp.maximum(r, jnp.finfo(jnp.float64).tiny)
    z = scale * r * _GRID
    ds = jnp.exp(-jnp.logaddexp(0.0, z) - jnp.logaddexp(0.0, -z))     # σ'(z)
    a, b = jnp.sum(_WEIGHTS * ds), jnp.sum(_WEIGHTS * ds * _GRID ** 2)
    uu = jnp.outer(u, u)
    return scale ** 2 * (a * (jnp.eye(d) - uu) + b * uu), scale ** 2 * jnp.eye(d)


def empirical_information(x, theta):
    """(H_D, Σ_D) = ((1/n)Σ σ'(x_iᵀθ)x_i x_iᵀ, (1/n)Σ x_i x_iᵀ), the fixed-design versions.
    Args: x (n_samples, dim); theta (dim,). Returns: two (dim, dim)."""
    s = jnp.exp(-jnp.logaddexp(0.0, x @ theta) - jnp.logaddexp(0.0, -(x @ theta)))
    n = x.shape[0]
    return (x.T * s) @ x / n, x.T @ x / n


def mle_asymptotic_mse(information, n_samples):
    """(A1): E‖θ_MLE − θ*‖² ≈ tr(H⁻¹)/n (spec §5.5). Args: information: H (dim, dim)."""
    lam, _ = symmetric_eigh(information)
    return jnp.sum(1.0 / lam) / n_samples


def rr_asymptotic_mse(information, covariance, n_samples, eps):
    """(A2): E‖θ̂_RR − θ*‖² ≈ [tr(H⁻¹) + (e^ε/(e^ε − 1)²)·tr(H⁻¹ΣH⁻¹)]/n (M-estimator sandwich;
    spec §5.5, P3'). Args: information H, covariance Σ (dim, dim); n; eps."""
    lam, q = symmetric_eigh(information)
    sandwich = jnp.sum(jnp.diag(q.T @ covariance @ q) / lam ** 2)
    return (jnp.sum(1.0 / lam) + rr_excess_variance_factor(eps) * sandwich) / n_samples


def objective_perturbation_asymptotic_mse(information, theta, n_samples, sigma, beta):
    """(A3), first order: with H_β = H + (β/n)I,
    E‖θ̂_obj − θ*‖² ≈ tr(H_β⁻¹HH_β⁻¹)/n + σ²tr(H_β⁻²)/n² + (β/n)²‖H_β⁻¹θ*‖² (statistical, privacy
    and ridge-bias terms; spec §5.5). Args: information H (dim, dim); theta θ* (dim,); n; σ; β."""
    n, sigma, beta = _f64(n_samples, sigma, beta)
    lam, q = symmetric_eigh(information)
    lam_b = lam + beta / n
    stat = jnp.sum(lam / lam_b ** 2) / n
    privacy = sigma ** 2 * jnp.sum(1.0 / lam_b ** 2) / n ** 2
    bias = (beta / n) ** 2 * jnp.sum((q.T @ theta) ** 2 / lam_b ** 2)
    return stat + privacy + bias
