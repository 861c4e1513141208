"""chowdhury (Chowdhury, Zhou, Natarajan, "Differentially Private Reward Estimation with
Preference Feedback"; chowdhury §3–5): the local and central lower and
upper bounds, one function per theorem, and the sharp asymptotic constants (A1)–(A3) of
docs/chowdhury.md, Predictions.

Conventions. n = ``n_samples``, d = ``dim``, L = ``feature_bound`` (‖ϕ‖ ≤ L, so ‖x‖ ≤ 2L), B =
``radius``, κ = ``kappa`` (λ_min(Σ)), γ = ``gamma`` (curvature lower bound; :func:`gamma_btl`
gives the theorems' value, ≈ e^{−2LB}), α = ``alpha`` (failure probability). The theorems'
constants C, C' are unspecified, so every bound is written with C = C' = 1 and is compared with
simulations through slopes and ratios (DESIGN "Theory and verification"), except where an
explicit constant is given (Thm 3.2, Thm 5.1's private term, the SGD proof). Functions are
written with jax.numpy: numbers in, a 0-d array out (wrap in ``float``), and traceable.
"""

from __future__ import annotations

import functools

import jax
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
    (chowdhury Thms 4.2, 4.5; 20.017, 4.083, 2.164 at ε = 0.1, 0.5, 1)."""
    (eps,) = _f64(eps)
    return 1.0 / jnp.tanh(eps / 2.0)


def krr_privacy_factor(eps, k):
    """(e^ε + K − 1)/(e^ε − 1), the price of K-ary RR (chowdhury Thm C.2; P11)."""
    eps, k = _f64(eps, k)
    return (jnp.exp(eps) + k - 1.0) / jnp.expm1(eps)


def rr_excess_variance_factor(eps):
    """e^ε/(e^ε − 1)² = (1 − c²)/(4c²), c = tanh(ε/2): the privacy excess factor of (A2)
    (docs/chowdhury.md, Predictions; 99.917, 3.918, 0.921 at ε = 0.1, 0.5, 1)."""
    (eps,) = _f64(eps)
    return jnp.exp(eps) / jnp.expm1(eps) ** 2


def gamma_btl(feature_bound, radius):
    """γ = 1/(2 + e^{−2LB} + e^{2LB}) = min_{|z| ≤ 2LB} σ'(z) (chowdhury §4, BTL; docs/chowdhury.md, Model)."""
    L, B = _f64(feature_bound, radius)
    c = 2.0 * L * B
    return 1.0 / (2.0 + jnp.exp(-c) + jnp.exp(c))


def gamma_thurstone(feature_bound, radius):
    """γ_Th = min_{|z| ≤ c} −(log Φ)''(z) = φ(c)(cΦ(c) + φ(c))/Φ(c)², c = 2LB (chowdhury §4.4
    gives none; chowdhury §4.4 (Thurstone); docs/chowdhury.md, Errata and modes (E12): 0.6366 at c = 0, 0.3703 at 1, 0.1135 at 2)."""
    L, B = _f64(feature_bound, radius)
    c = 2.0 * L * B
    phi, Phi = norm.pdf(c), norm.cdf(c)
    return phi * (c * Phi + phi) / Phi**2


def gamma_plackett_luce(feature_bound, radius, mode: str = "appendix"):
    """γ for Plackett–Luce: e^{−4LB}/2 (Thm C.2, ``mode="appendix"``, docs/chowdhury.md, Errata and modes (E11)) or
    e^{−4LB} (main text, ``mode="main"``)."""
    if mode not in ("appendix", "main"):
        raise ValueError(f"mode={mode!r} is not one of ['appendix', 'main']")
    L, B = _f64(feature_bound, radius)
    g = jnp.exp(-4.0 * L * B)
    return g / 2.0 if mode == "appendix" else g


def gamma_rr_naive(eps, logit_bound, gamma=None):
    """γ̃_ε = γ(e^ε − 1)(e^ε e^{−2c} − 1)/(e^ε e^c + 1)², the strong-convexity modulus of the
    naive RR likelihood (chowdhury Thm 4.1 proof; docs/chowdhury.md, Model), c = bound on |xᵀθ|; positive only
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


def local_l2_lower_bound_explicit(x, eps):
    """max(d²/(16‖X‖_F²), d²/(32(e^ε − 1)²‖X‖_F²)): the explicit Assouad constants of the proof
    of chowdhury Thm 3.2 for the fixed design X (chowdhury §3; P13, a minimax sanity bound).

    Args: x: (n_samples, dim); eps. Returns: scalar."""
    (eps,) = _f64(eps)
    d = x.shape[1]
    frob = jnp.sum(x * x)
    return jnp.maximum(d**2 / (16.0 * frob), d**2 / (32.0 * jnp.expm1(eps) ** 2 * frob))


# ---------------------------------------------------------------------------------------
# Local model: upper bounds (Thms 4.1, 4.2, Cor 4.3, Thm 4.5, Thm C.2)
# ---------------------------------------------------------------------------------------
def rr_mle_seminorm_bound(
    n_samples, dim, eps, feature_bound, radius, *, alpha=0.05, lam=0.0, gamma=1.0
):
    """(1/γ)·(e^{ε+2LB} + 1)/(e^{ε−2LB} − 1)·√((d + log(1/α))/n) + √λ·B: chowdhury Thm 4.1, the
    naive RR-MLE's semi-norm bound, valid only for ε > 2LB (NaN otherwise; the proof needs
    ε > 2c, docs/chowdhury.md, Errata and modes (E10))."""
    n, d, eps, L, B, alpha, lam = _f64(n_samples, dim, eps, feature_bound, radius, alpha, lam)
    c = 2.0 * L * B
    factor = (jnp.exp(eps + c) + 1.0) / jnp.expm1(eps - c)
    bound = factor / gamma * jnp.sqrt((d + jnp.log(1.0 / alpha)) / n) + jnp.sqrt(lam) * B
    return jnp.where(eps > c, bound, jnp.nan)


def rr_seminorm_bound(n_samples, dim, eps, radius, *, alpha=0.05, lam=0.0, gamma=1.0):
    """(1/γ)·((e^ε + 1)/(e^ε − 1))·√((d + log(1/α))/n) + √λ·B: chowdhury Thm 4.2 eq. (7), the
    semi-norm bound of θ̂_RR for every ε > 0."""
    n, d, B, alpha, lam = _f64(n_samples, dim, radius, alpha, lam)
    return (
        rr_privacy_factor(eps) / gamma * jnp.sqrt((d + jnp.log(1.0 / alpha)) / n)
        + jnp.sqrt(lam) * B
    )


def rr_seminorm_balanced_lambda(n_samples, dim, eps, radius, *, alpha=0.05, gamma=1.0):
    """λ = ((e^ε + 1)/(e^ε − 1))²(d + log(1/α))/(B²γ²n), which balances the two terms of
    Thm 4.2 (chowdhury §4.2; docs/chowdhury.md, Errata and modes (E16))."""
    n, d, B, alpha = _f64(n_samples, dim, radius, alpha)
    return rr_privacy_factor(eps) ** 2 * (d + jnp.log(1.0 / alpha)) / (B**2 * gamma**2 * n)


def sgd_rr_l2_bound_explicit(t, n_samples, eps, feature_bound, kappa, *, alpha=0.05, gamma=1.0):
    """√((624 log(log n/α) + 1)·G²/(λ²t)) with G = 4L and λ = γ(2σ(ε) − 1)κ: the explicit bound on
    ‖θ̂_{t+1} − θ*‖ from the proof of chowdhury Thm 4.5 (App. C.3; chowdhury Algorithm 1, eq. (10), §4.3), for the proof's
    step η_t = 1/(λt)."""
    t, n, L, kappa, alpha = _f64(t, n_samples, feature_bound, kappa, alpha)
    lam = gamma / rr_privacy_factor(eps) * kappa
    return jnp.sqrt((624.0 * jnp.log(jnp.log(n) / alpha) + 1.0) * (4.0 * L) ** 2 / (lam**2 * t))


# ---------------------------------------------------------------------------------------
# Central model (Thms 5.1, 5.3, Cor 5.4, D.3, D.5)
# ---------------------------------------------------------------------------------------
def central_l2_lower_bound_private_explicit(n_samples, dim, eps, delta):
    """4·10⁻⁴·d/(n²(ε + δ)²), the private term of Thm 5.1 with the DP-Assouad constants
    (Δ = 0.04/(n(ε + δ)); the proof of chowdhury Thm 5.1)."""
    n, d, eps, delta = _f64(n_samples, dim, eps, delta)
    return 4e-4 * d / (n**2 * (eps + delta) ** 2)


def central_seminorm_lower_bound(n_samples, dim, eps):
    """d/n + d²/(n²ε²): chowdhury Thm D.3, the semi-norm minimax order under central pure
    (ε, 0)-label DP."""
    n, d, eps = _f64(n_samples, dim, eps)
    return d / n + d**2 / (n**2 * eps**2)


def objective_perturbation_l2_rate(n_samples, dim, eps, delta, feature_bound, kappa, *, gamma=1.0):
    """L/(κγ√n) + L√(d log(1/δ))/(nεκγ): chowdhury Cor 5.4 (σ of Thm 5.2 plugged in), the central
    rate; the privacy cost is the additive 1/(εn) term (Remark 5.5)."""
    n, d, eps, delta, L, kappa = _f64(n_samples, dim, eps, delta, feature_bound, kappa)
    return L / (kappa * gamma * jnp.sqrt(n)) + L * jnp.sqrt(d * jnp.log(1.0 / delta)) / (
        n * eps * kappa * gamma
    )


# ---------------------------------------------------------------------------------------
# Sharp asymptotic constants (docs/chowdhury.md, Predictions (A1)–(A3))
# ---------------------------------------------------------------------------------------
@functools.cache
def _quadrature():
    """(grid, weights) of the trapezoid rule for E f(g), g ~ N(0, 1), on [−12, 12] (4801
    points). Computed on first use, concretely even when first called under a trace (an
    import-time jnp computation would slow every ``dpsim`` command)."""
    with jax.ensure_compile_time_eval():
        grid = jnp.linspace(-12.0, 12.0, 4801)
        return grid, norm.pdf(grid) * (grid[1] - grid[0])


def gaussian_design_information(theta, scale=jnp.sqrt(2.0)):
    """(H, Σ) for x ~ N(0, s²I_d): H = E[σ'(xᵀθ)xxᵀ] (per-sample Fisher information at θ) and
    Σ = E[xxᵀ] = s²I (docs/chowdhury.md, Predictions). With u = θ/‖θ‖ and z = s‖θ‖g, g ~ N(0, 1):
    H = s²[E σ'(z)·(I − uuᵀ) + E σ'(z)g²·uuᵀ], the two expectations by the trapezoid rule on
    [−12, 12] (4801 points; spectrally accurate for this smooth integrand).

    Args: theta: (dim,); scale: s (√2 for x = ϕ¹ − ϕ⁰, 1 for x ~ N(0, I)).
    Returns: (H (dim, dim), Σ (dim, dim))."""
    d = theta.shape[0]
    r = jnp.linalg.norm(theta)
    u = theta / jnp.maximum(r, jnp.finfo(jnp.float64).tiny)
    grid, weights = _quadrature()
    z = scale * r * grid
    ds = jnp.exp(-jnp.logaddexp(0.0, z) - jnp.logaddexp(0.0, -z))  # σ'(z)
    a, b = jnp.sum(weights * ds), jnp.sum(weights * ds * grid**2)
    uu = jnp.outer(u, u)
    return scale**2 * (a * (jnp.eye(d) - uu) + b * uu), scale**2 * jnp.eye(d)


def mle_asymptotic_mse(information, n_samples):
    """(A1): E‖θ_MLE − θ*‖² ≈ tr(H⁻¹)/n (docs/chowdhury.md, Predictions). Args: information: H (dim, dim)."""
    lam, _ = symmetric_eigh(information)
    return jnp.sum(1.0 / lam) / n_samples


def rr_asymptotic_mse(information, covariance, n_samples, eps):
    """(A2): E‖θ̂_RR − θ*‖² ≈ [tr(H⁻¹) + (e^ε/(e^ε − 1)²)·tr(H⁻¹ΣH⁻¹)]/n (M-estimator sandwich;
    docs/chowdhury.md, Predictions (P3')). Args: information H, covariance Σ (dim, dim); n; eps."""
    lam, q = symmetric_eigh(information)
    sandwich = jnp.sum(jnp.diag(q.T @ covariance @ q) / lam**2)
    return (jnp.sum(1.0 / lam) + rr_excess_variance_factor(eps) * sandwich) / n_samples


def objective_perturbation_asymptotic_mse(information, theta, n_samples, sigma, beta):
    """(A3), first order: with H_β = H + (β/n)I,
    E‖θ̂_obj − θ*‖² ≈ tr(H_β⁻¹HH_β⁻¹)/n + σ²tr(H_β⁻²)/n² + (β/n)²‖H_β⁻¹θ*‖² (statistical, privacy
    and ridge-bias terms; docs/chowdhury.md, Predictions). Args: information H (dim, dim); theta θ* (dim,); n; σ; β."""
    n, sigma, beta = _f64(n_samples, sigma, beta)
    lam, q = symmetric_eigh(information)
    lam_b = lam + beta / n
    stat = jnp.sum(lam / lam_b**2) / n
    privacy = sigma**2 * jnp.sum(1.0 / lam_b**2) / n**2
    bias = (beta / n) ** 2 * jnp.sum((q.T @ theta) ** 2 / lam_b**2)
    return stat + privacy + bias


# ---------------------------------------------------------------------------------------
# Closed forms for isotropic Gaussian designs (used per replicate inside experiments, where
# an eigen-decomposition under vmap would be a batched LAPACK call; docs/chowdhury.md, Predictions)
# ---------------------------------------------------------------------------------------
def gaussian_design_eigenvalues(theta_norm, scale=jnp.sqrt(2.0)):
    """(a⊥, a∥): for x ~ N(0, s²I_d) the information is H = a⊥(I − uuᵀ) + a∥uuᵀ with
    u = θ/‖θ‖, a⊥ = s²E σ'(z) and a∥ = s²E σ'(z)g², z = s‖θ‖g, g ~ N(0, 1) (the two
    expectations of :func:`gaussian_design_information`; docs/chowdhury.md, Predictions). Traceable.

    Args: theta_norm: ‖θ*‖ ≥ 0; scale: s. Returns: (a⊥, a∥), float64."""
    r, s = _f64(theta_norm, scale)
    grid, weights = _quadrature()
    z = s * r * grid
    ds = jnp.exp(-jnp.logaddexp(0.0, z) - jnp.logaddexp(0.0, -z))
    return s**2 * jnp.sum(weights * ds), s**2 * jnp.sum(weights * ds * grid**2)


def isotropic_design_traces(theta_norm, dim, scale=jnp.sqrt(2.0), *, sum_zero=False, ridge=0.0):
    """The traces (A1)–(A3) need for x ~ N(0, s²I_d), in closed form from
    :func:`gaussian_design_eigenvalues` (docs/chowdhury.md, Predictions).

    With ``sum_zero`` the estimation space is V = 1^⊥ (dimension d − 1) and θ* ∈ V: every
    matrix is restricted to V (the sum-zero constraint of Θ_B, docs/chowdhury.md, Errata and modes (E17)), which keeps
    the same two eigenvalues, a⊥ with multiplicity r − 1 and a∥ once (r = dim V). ``ridge``
    = β/n adds to both (H_β = H + (β/n)I, (A3)).

    Args: theta_norm: ‖θ*‖; dim: d (static int); scale: s; sum_zero; ridge ≥ 0.
    Returns: dict of float64 scalars: ``tr_inv`` = tr H_β⁻¹; ``sandwich`` = tr(H⁻¹ΣH⁻¹)
    (ridge-free, Σ = s²I); ``tr_inv_sq`` = tr H_β⁻²; ``stat`` = tr(H_β⁻¹HH_β⁻¹);
    ``bias_factor`` = 1/(a∥ + β/n)² (so ‖H_β⁻¹θ*‖² = ‖θ*‖²·bias_factor)."""
    a_perp, a_par = gaussian_design_eigenvalues(theta_norm, scale)
    (s, ridge) = _f64(scale, ridge)
    r = dim - 1 if sum_zero else dim
    p, q = a_perp + ridge, a_par + ridge
    return {
        "tr_inv": (r - 1) / p + 1.0 / q,
        "sandwich": s**2 * ((r - 1) / a_perp**2 + 1.0 / a_par**2),
        "tr_inv_sq": (r - 1) / p**2 + 1.0 / q**2,
        "stat": (r - 1) * a_perp / p**2 + a_par / q**2,
        "bias_factor": 1.0 / q**2,
    }


def objective_perturbation_asymptotic_shift(tr_inv_sq, bias_norm_sq, n_samples, sigma, beta):
    """E‖θ̂_obj − θ_MLE‖² ≈ (σ²tr(H_β⁻²) + β²‖H_β⁻¹θ*‖²)/n², the first-order shift of the
    objective-perturbation minimiser from the MLE on the same data: one Newton step from θ_MLE
    against the perturbation's gradient (β/n)θ + w/n (docs/chowdhury.md, Predictions (A3, P6)). The σ² term is the
    privacy cost (∝ 1/(εn)² in mean square, P6); the β² term the ridge bias.

    Args: tr_inv_sq: tr H_β⁻²; bias_norm_sq: ‖H_β⁻¹θ*‖²; n_samples; sigma: σ; beta: β.
    Returns: float64."""
    t, b, n, sigma, beta = _f64(tr_inv_sq, bias_norm_sq, n_samples, sigma, beta)
    return (sigma**2 * t + beta**2 * b) / n**2


def expected_max_norm(n_samples, dim, scale=jnp.sqrt(2.0), *, points: int = 20001):
    """E max_{i≤n} ‖x_i‖ for x_i ~ N(0, s²I_d) i.i.d. (‖x‖/s ~ χ_d):
    ∫₀^∞ 1 − F(t)ⁿ dt with F(t) = P(χ²_d ≤ t²/s²), by the trapezoid rule. Twice the
    data-derived feature bound L = max‖x_i‖/2 of docs/chowdhury.md, Errata and modes (E6), so that σ of Thm 5.2
    grows with n like this (P6's prediction with that L).

    Args: n_samples: n ≥ 1; dim: d ≥ 1; scale: s; points: quadrature points.
    Returns: float64."""
    from jax.scipy.special import gammainc

    n, d, s = _f64(n_samples, dim, scale)
    upper = s * (jnp.sqrt(d) + 12.0 + jnp.sqrt(2.0 * jnp.log(n + 1.0)) * 2.0)
    t = jnp.linspace(0.0, upper, points)
    cdf = gammainc(d / 2.0, t**2 / (2.0 * s**2))
    tail = -jnp.expm1(n * jnp.log(jnp.clip(cdf, 1e-300, 1.0)))
    return jnp.sum(0.5 * (tail[1:] + tail[:-1]) * jnp.diff(t))


@functools.lru_cache(maxsize=16)
def plackett_luce_score_moments(theta_norm, dim, k, *, sum_zero=True, samples=200_000, seed=0):
    """The ε-free moments of the Plackett–Luce top-1 scores g_j = ∇log p_j(θ*) = ϕ_j − Σ_i p_i ϕ_i
    over features ϕ(s, a_j) ~ N(0, I_d), j = 1…K, by Monte Carlo with ``samples`` draws (fixed
    ``seed``); θ* is a random direction (in 1^⊥ with ``sum_zero``) of norm ``theta_norm``.
    Cached: the K-RR variance of every ε is a combination of these (:func:`sgd_krr_asymptotic_ratio`).

    Args: theta_norm: ‖θ*‖; dim: d; k: K; sum_zero; samples; seed.
    Returns: (H, G, SS), each a (d, d) NumPy array: H = E Σ_j p_j g_j g_jᵀ (the Fisher
    information), G = E Σ_j g_j g_jᵀ and SS = E S Sᵀ with S = Σ_j g_j."""
    import numpy as np

    key = jax.random.key(seed)
    k_theta, k_phi = jax.random.split(key)
    theta = jax.random.normal(k_theta, (dim,))
    if sum_zero:
        theta = theta - jnp.mean(theta)
    theta = theta_norm * theta / jnp.linalg.norm(theta)
    phi = jax.random.normal(k_phi, (samples, k, dim))
    p = jax.nn.softmax(phi @ theta, axis=-1)
    grads = phi - jnp.einsum("nk,nkd->nd", p, phi)[:, None, :]  # g_j, (N, K, d)
    total = grads.sum(axis=1)  # S, (N, d)
    H = jnp.einsum("nk,nkd,nke->de", p, grads, grads) / samples
    G = jnp.einsum("nkd,nke->de", grads, grads) / samples
    SS = jnp.einsum("nd,ne->de", total, total) / samples
    return tuple(np.asarray(m) for m in (H, G, SS))


def sgd_krr_asymptotic_ratio(
    theta_norm,
    dim,
    k,
    eps,
    gamma_kappa=0.2,
    *,
    sum_zero=True,
    samples: int = 200_000,
    seed: int = 0,
):
    """RMS error ratio of SGD-KRR to non-private SGD on the same Plackett–Luce data, as n → ∞,
    for the step η_t = 1/(λ̂t) with λ̂ = c·γ̂κ̂ (c = (e^ε − 1)/(e^ε + K − 1) for K-RR, 1 without
    privacy; dpsim.estimators.linear_btl_sgd, chowdhury §4.4, App. C.4; docs/chowdhury.md, Predictions (P11)).

    For η_t = 1/(λ̂t) and mean gradient field c·H(θ − θ*), t·Cov(θ̂_t) → S with
    (A S + S A) = V/(c γ̂κ̂)², A = H/(γ̂κ̂) − I/2 (the c of the field and of λ̂ cancel in A), V the
    covariance of the stochastic gradient at θ*. So the MSE ratio is
    tr S(V_ε)/(c² tr S(V_np)): the K-RR factor 1/c = (e^ε + K − 1)/(e^ε − 1) of P11 times a
    variance ratio, which is 1 at θ* = 0 and departs from 1 as ‖θ*‖ grows. V_np = H (Fisher);
    V_ε = E Σ_j q_j (m − g_j)(m − g_j)ᵀ with q the K-RR law of ỹ, q_j = ((e^ε − 1)p_j + 1)/a,
    a = e^ε + K − 1, and m = S/a, S = Σ_j g_j (chowdhury App. C.4). Since Σ_j p_j g_j = 0, this is
    V_ε = ((e^ε − 1)H + G)/a − E S Sᵀ/a², from the ε-free moments of
    :func:`plackett_luce_score_moments` (Monte Carlo, fixed ``seed``, shared by every ε). With
    ``sum_zero`` the matrices are restricted to 1^⊥ (θ* ∈ 1^⊥). Features are isotropic, so the
    result depends on θ* only through ‖θ*‖. Host-side (numbers in, a float out).

    Args: theta_norm: ‖θ*‖; dim: d; k: K ≥ 2; eps: ε > 0; gamma_kappa: γ̂κ̂ of the schedule
    (0.1 × κ = 2 by default); sum_zero; samples; seed. Returns: float."""
    import math

    import numpy as np

    H, G, SS = plackett_luce_score_moments(
        float(theta_norm), int(dim), int(k), sum_zero=sum_zero, samples=samples, seed=seed
    )
    e = math.exp(float(eps))
    a = e + k - 1.0
    V_eps = ((e - 1.0) * H + G) / a - SS / a**2
    c = (e - 1.0) / a
    basis = np.eye(dim)
    if sum_zero:
        basis = np.linalg.svd(np.eye(dim) - np.ones((dim, dim)) / dim)[0][:, : dim - 1]
    A = basis.T @ (H / gamma_kappa - np.eye(dim) / 2) @ basis
    w, U = np.linalg.eigh(A)

    def lyapunov_trace(V):
        Vt = U.T @ (basis.T @ V @ basis) @ U
        return float(np.trace(Vt / (w[:, None] + w[None, :])))

    return float(np.sqrt(lyapunov_trace(V_eps) / (c**2 * lyapunov_trace(H))))
