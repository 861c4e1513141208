"""Exact samplers for the discrete Gaussian and the discrete Laplace distributions on ℤ,
written in JAX (float64), jit- and vmap-compatible, with ``sigma``/``scale`` traceable.

**Discrete Laplace** Lap_ℤ(t) (Ghosh, Roughgarden & Sundararajan 2009; nguyen supp. §4,
Definition 1; spec ../shared/papers/nguyen.md §4.7): P(Z = z) = ((1 − α)/(1 + α))·α^|z|,
α = e^{−1/t}. Sampled as G₁ − G₂ with G₁, G₂ i.i.d. geometric on {0, 1, …},
P(G ≥ k) = α^k, each drawn by inversion, G = ⌊−t·log U⌋ with U uniform on (0, 1]. No
rejection, so no failure.

**Discrete Gaussian** N_ℤ(0, σ²) (Canonne, Kamath & Steinke 2020, "CKS", Algorithm 3;
nguyen §4.2, supp. §4): P(Z = z) ∝ exp(−z²/(2σ²)). A proposal Z ~ Lap_ℤ(t), t = ⌊σ⌋ + 1,
is accepted with probability exp(−(|Z| − σ²/t)²/(2σ²)); since
e^{−|z|/t}·e^{−(|z| − σ²/t)²/(2σ²)} = e^{−z²/(2σ²)}·e^{−σ²/(2t²)}, an accepted proposal has
exactly the discrete Gaussian law (the spec's "JAX-friendly equivalent" of CKS's
Bernoulli-exp loops). Rounds are repeated in a ``lax.while_loop`` until every element of the
array has accepted, at most ``max_rounds`` times. The acceptance probability per round is at
least 0.445 for every σ > 0 (its minimum, at σ ≈ 0.30; 0.518 at σ = 0.5, 0.70 at σ = 3,
0.760 for σ ≥ 100; computed from the exact pmfs), so with the default ``max_rounds = 64`` an
element fails with probability at most 0.555⁶⁴ < 5e-17. A failed element is returned as 0
and flagged (:func:`discrete_gaussian_with_flag`); a study of 10¹⁰ draws meets a failure
with probability < 1e-6. Under ``vmap`` the loop runs until the slowest lane has finished
(about log(N)/log(1/0.24) ≈ 11 rounds for N = 10⁵ draws at σ ≥ 10); lanes that have
finished keep their values, so a lane's result depends only on its own key.

**Exactness in floating point.** Both samplers are exact in exact arithmetic. In float64 the
uniform U lies on the grid 2⁻⁵²·{1, …, 2⁵²}, so every geometric CDF value P(G ≥ k) is
resolved to 2⁻⁵² (Kolmogorov distance ≤ 2⁻⁵²; the tail beyond 36·t, of mass e⁻³⁶ ≈ 2e-16,
is cut), and an acceptance probability below 2⁻⁵² is rounded to 0. These deviations are
far below anything a Monte-Carlo study can detect (the tests check the pmf by χ², against
OpenDP, the variance and the tails), but, unlike CKS's integer-arithmetic sampler, this is
not a hardened implementation for deployment against floating-point side channels.
Tested from σ = 0.3 to σ = 1e5 (float64 integers are exact far beyond that).
``sigma = 0`` (ε = ∞) and ``scale = 0`` give exactly zero noise.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dpsim.validate import require

DEFAULT_MAX_ROUNDS = 64
# Minimum over σ > 0 of the per-round acceptance probability (module docstring).
MIN_ACCEPTANCE = 0.445

__all__ = ["discrete_laplace", "discrete_gaussian", "discrete_gaussian_with_flag",
           "discrete_laplace_pmf", "discrete_gaussian_pmf", "discrete_gaussian_normaliser",
           "discrete_gaussian_variance", "discrete_gaussian_acceptance", "DEFAULT_MAX_ROUNDS",
           "MIN_ACCEPTANCE"]


def _require_scale(value, name: str) -> None:
    require(name, value, lambda v: (v >= 0) & np.isfinite(v), "must be a finite number ≥ 0")


def _geometric(key, scale, shape):
    """G ≥ 0 with P(G ≥ k) = e^{−k/scale}: ⌊−scale·log U⌋, U uniform on (0, 1] (float64)."""
    u = 1.0 - jax.random.uniform(key, shape, jnp.float64)     # on 2⁻⁵²·{1, …, 2⁵²}
    return jnp.floor(-scale * jnp.log(u))


def discrete_laplace(key, scale, shape=()) -> jax.Array:
    """I.i.d. draws of the discrete Laplace Lap_ℤ(t), t = ``scale``: P(Z = z) ∝ e^{−|z|/t}
    (nguyen supp. §4 Definition 1, the noise of the Laplace baseline, spec §4.7–4.8).

    Args:
        key: PRNG key.
        scale: t ≥ 0, a scalar (may be traced; 0 gives zeros). For ε-DP on a query of
            sensitivity Δ take t = Δ/ε (supp. Lemma 4.2).
        shape: static output shape.
    Returns:
        float64 array of integers, ``shape``. Variance 2α/(1 − α)², α = e^{−1/t}.
    """
    _require_scale(scale, "scale")
    scale = jnp.asarray(scale, jnp.float64)
    k1, k2 = jax.random.split(key)
    return _geometric(k1, scale, shape) - _geometric(k2, scale, shape)


def discrete_gaussian_with_flag(key, sigma, shape=(), max_rounds: int = DEFAULT_MAX_ROUNDS):
    """I.i.d. draws of the discrete Gaussian N_ℤ(0, σ²) and the elements that failed.

    CKS20 Algorithm 3 with geometric-difference proposals (module docstring; nguyen §4.2).

    Args:
        key: PRNG key.
        sigma: σ ≥ 0, a scalar (may be traced; 0 gives zeros). For ½ε²-zCDP on an integer
            query of sensitivity Δ take σ = Δ/ε (CKS20 Thm 4; nguyen supp. Lemma 3.2).
        shape: static output shape.
        max_rounds: static cap on the proposal rounds (each element fails with probability
            ≤ (1 − 0.445)^max_rounds).
    Returns:
        (z, failed): z float64 integers of ``shape`` (0 where failed); failed bool of
        ``shape``, True where no proposal was accepted within ``max_rounds``.
    """
    _require_scale(sigma, "sigma")
    if not (isinstance(max_rounds, int) and max_rounds >= 1):
        raise ValueError(f"max_rounds={max_rounds!r} must be an integer ≥ 1")
    sigma = jnp.asarray(sigma, jnp.float64)
    zero = sigma == 0.0
    s = jnp.where(zero, 1.0, sigma)               # any positive value: the draws are discarded
    t = jnp.floor(s) + 1.0
    shift = s * s / t
    two_var = 2.0 * s * s

    def propose(r):
        k_lap, k_acc = jax.random.split(jax.random.fold_in(key, r))
        z = discrete_laplace(k_lap, t, shape)
        accept = jax.random.uniform(k_acc, shape, jnp.float64) < jnp.exp(-(jnp.abs(z) - shift) ** 2 / two_var)
        return z, accept

    def cond(state):
        _, done, r = state
        return (r < max_rounds) & ~jnp.all(done)

    def body(state):
        value, done, r = state
        z, accept = propose(r)
        take = accept & ~done
        return jnp.where(take, z, value), done | accept, r + 1

    init = (jnp.zeros(shape, jnp.float64), jnp.broadcast_to(zero, shape), jnp.asarray(0))
    value, done, _ = lax.while_loop(cond, body, init)
    return value, ~done


def discrete_gaussian(key, sigma, shape=(), max_rounds: int = DEFAULT_MAX_ROUNDS) -> jax.Array:
    """I.i.d. draws of the discrete Gaussian N_ℤ(0, σ²), P(Z = z) ∝ exp(−z²/(2σ²)) (CKS20;
    nguyen §4.2). Same as :func:`discrete_gaussian_with_flag` without the flag (a failed
    element, probability < 5e-17 per draw at the default cap, is returned as 0).

    Args: key: PRNG key; sigma: σ ≥ 0 (traceable); shape: static shape.
    Returns: float64 integers of ``shape``; Var ≤ σ² (≈ σ² for σ ≳ 1).
    """
    return discrete_gaussian_with_flag(key, sigma, shape, max_rounds)[0]


# ---------------------------------------------------------------------------------------
# Exact probability mass functions (host, NumPy): references for tests and audits.
# ---------------------------------------------------------------------------------------
def discrete_laplace_pmf(z, scale: float) -> np.ndarray:
    """P(Z = z) = ((1 − α)/(1 + α))·α^|z|, α = e^{−1/scale}, of Lap_ℤ(scale) (host)."""
    a = math.exp(-1.0 / scale)
    return (-math.expm1(-1.0 / scale) / (1.0 + a)) * np.exp(-np.abs(np.asarray(z, np.float64)) / scale)


def discrete_gaussian_normaliser(sigma: float) -> float:
    """Σ_{z∈ℤ} exp(−z²/(2σ²)): by direct summation for σ < 3, else by Poisson summation
    σ√(2π)·(1 + 2Σ_{k≥1} e^{−2π²σ²k²}) (the k ≥ 1 terms are below 1e-77 there)."""
    if sigma < 3.0:
        half = int(math.ceil(40.0 * sigma)) + 2
        z = np.arange(-half, half + 1, dtype=np.float64)
        return float(np.sum(np.exp(-z * z / (2.0 * sigma * sigma))))
    return sigma * math.sqrt(2.0 * math.pi)


def discrete_gaussian_pmf(z, sigma: float) -> np.ndarray:
    """P(Z = z) = exp(−z²/(2σ²))/Σ_k exp(−k²/(2σ²)) of N_ℤ(0, σ²) (host, σ > 0)."""
    z = np.asarray(z, np.float64)
    return np.exp(-z * z / (2.0 * sigma * sigma)) / discrete_gaussian_normaliser(sigma)


def discrete_gaussian_variance(sigma: float) -> float:
    """Var N_ℤ(0, σ²) = Σ z² P(z) (≤ σ²; 0.86σ² at σ = 0.5, σ² to 1e-12 relative for σ ≥ 2)."""
    half = int(math.ceil(40.0 * sigma)) + 2
    z = np.arange(-half, half + 1, dtype=np.float64)
    return float(np.sum(z * z * discrete_gaussian_pmf(z, sigma)))


def discrete_gaussian_acceptance(sigma: float) -> float:
    """The per-round acceptance probability of the sampler: E[exp(−(|Z| − σ²/t)²/(2σ²))]
    for Z ~ Lap_ℤ(t), t = ⌊σ⌋ + 1 (host; ≥ 0.445 for every σ > 0)."""
    t = math.floor(sigma) + 1.0
    half = int(math.ceil(60.0 * max(sigma, t))) + 50
    z = np.arange(-half, half + 1, dtype=np.float64)
    accept = np.exp(-(np.abs(z) - sigma * sigma / t) ** 2 / (2.0 * sigma * sigma))
    return float(np.sum(discrete_laplace_pmf(z, t) * accept))
