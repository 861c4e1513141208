"""Exact samplers for the discrete Gaussian and the discrete Laplace distributions on ℤ,
written in JAX (float64), jit- and vmap-compatible, with ``sigma``/``scale`` traceable.

**Discrete Laplace** Lap_ℤ(t) (Ghosh, Roughgarden & Sundararajan 2009; nguyen supp. §4,
Definition 1; docs/nguyen.md, Mechanisms and estimators): P(Z = z) = ((1 − α)/(1 + α))·α^|z|,
α = e^{−1/t}. One 64-bit word per draw: |Z| by inversion of its tail
P(|Z| ≥ k) = 2α^k/(1 + α) (k ≥ 1) from a uniform U on (0, 1] made of 52 of the bits, the sign
from another bit (the same law as G₁ − G₂ of two geometrics, at half the random
bits and logarithms). No rejection, so no failure.

**Discrete Gaussian** N_ℤ(0, σ²) (Canonne, Kamath & Steinke 2020, "CKS", Algorithm 3;
nguyen §4.2, supp. §4): P(Z = z) ∝ exp(−z²/(2σ²)). A proposal Z ~ Lap_ℤ(t), t = ⌊σ⌋ + 1,
is accepted with probability exp(−(|Z| − σ²/t)²/(2σ²)); since
e^{−|z|/t}·e^{−(|z| − σ²/t)²/(2σ²)} = e^{−z²/(2σ²)}·e^{−σ²/(2t²)}, an accepted proposal has
exactly the discrete Gaussian law (a vectorisable equivalent of CKS's
Bernoulli-exp loops). The acceptance probability per proposal is at least 0.445 for every
σ > 0 (its minimum, at σ ≈ 0.30; 0.518 at σ = 0.5, 0.70 at σ = 3, 0.760 for σ ≥ 100;
computed from the exact pmfs, :func:`discrete_gaussian_acceptance`).

Proposals are organised so that the work follows the number actually needed (about 1.3
per draw for σ ≥ 10), not the worst element of the array: three rounds for every element,
then the pending ones (1.4% of them for σ ≥ 10) are gathered into a buffer of an eighth of
the array, whose slots get one proposal per ``lax.while_loop`` round until all have
accepted, at most ``max_rounds`` rounds; elements that did not fit (only for σ ≲ 0.4) get
the same loop over the full array. Every proposal is fresh, so the law is the rejection
sampler's, and an element fails exactly when its 3 + ``max_rounds`` proposals were all
rejected: probability at most 0.555⁶⁷ < 1e-17 per draw at the default ``max_rounds = 64``
(a study of 10¹⁰ draws meets a failure with probability < 1e-7). A failed element is
returned as 0 and flagged (:func:`discrete_gaussian_with_flag`). The buffer is filled from
a lane's own arrays, so under ``vmap`` a lane's draws depend only on its key. Draws per
second against OpenDP's samplers and the authors': ``benchmarks/nguyen.py``, section A.

**Exactness in floating point.** Both samplers are exact in exact arithmetic. In float64 the
uniform U lies on the grid 2⁻⁵²·{1, …, 2⁵²}, so every tail probability P(|Z| ≥ k) of the
discrete Laplace is resolved to 2⁻⁵² (Kolmogorov distance ≤ 2⁻⁵²; the tail beyond ≈ 36·t, of
mass ≈ e⁻³⁶ ≈ 2e-16, is cut), and an acceptance probability below 2⁻⁵³ is rounded to 0.
These deviations are far below anything a Monte-Carlo study can detect (the tests check the
pmf by χ², against OpenDP, the variance and the tails), but, unlike CKS's integer-arithmetic
sampler, this is not a hardened implementation for deployment against floating-point side
channels. Tested from σ = 0.3 to σ = 1e5 (float64 integers are exact far beyond that).

Validation: concrete inputs are checked and a bad one raises ``ValueError`` naming the value
(dpsim.validate); traced values (inside jit/vmap) pass unchecked. ``sigma = 0`` (ε = ∞) and
``scale = 0`` give exactly zero noise.
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

__all__ = [
    "discrete_laplace",
    "discrete_gaussian",
    "discrete_gaussian_with_flag",
    "discrete_laplace_pmf",
    "discrete_gaussian_pmf",
    "discrete_gaussian_normaliser",
    "discrete_gaussian_variance",
    "discrete_gaussian_acceptance",
    "DEFAULT_MAX_ROUNDS",
    "MIN_ACCEPTANCE",
]


def _require_scale(value, name: str) -> None:
    require(name, value, lambda v: (v >= 0) & np.isfinite(v), "must be a finite number ≥ 0")


def _laplace_from_bits(bits, scale):
    """Lap_ℤ(scale) from one 64-bit word per draw, by inversion of |Z| and a sign bit.

    U = (⌊bits/2¹²⌋ + 1)·2⁻⁵² is uniform on 2⁻⁵²·{1, …, 2⁵²} ⊂ (0, 1]; |Z| = ⌊−t·log(U·(1 + α)/2)⌋,
    so P(|Z| ≥ k) = P(U ≤ 2α^k/(1 + α)) = 2α^k/(1 + α) for k ≥ 1, the discrete Laplace tail; the
    sign is bit 0 (independent of the 52 bits of U)."""
    u = ((bits >> 12).astype(jnp.float64) + 1.0) * (2.0**-52)
    log_half_one_plus_alpha = jnp.log1p(0.5 * jnp.expm1(-1.0 / scale))  # log((1 + α)/2)
    magnitude = jnp.maximum(jnp.floor(-scale * (jnp.log(u) + log_half_one_plus_alpha)), 0.0)
    return jnp.where((bits & 1) == 1, magnitude, -magnitude) + 0.0


def discrete_laplace(key, scale, shape=()) -> jax.Array:
    """I.i.d. draws of the discrete Laplace Lap_ℤ(t), t = ``scale``: P(Z = z) ∝ e^{−|z|/t}
    (nguyen supp. §4 Definition 1, the noise of the Laplace baseline, docs/nguyen.md, Mechanisms and estimators).

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
    return _laplace_from_bits(jax.random.bits(key, shape, jnp.uint64), scale)


FIRST_ROUNDS = 3
# The pending elements after FIRST_ROUNDS rounds (≤ 1.4% for σ ≥ 10, 11% at σ = 0.5, 17% at
# the worst σ ≈ 0.3, in expectation) are gathered into a buffer of this fraction of the array.
BUFFER_FRACTION = 1 / 8
BUFFER_MARGIN = 16


def _flat_discrete_gaussian(key, sigma, n: int, max_rounds: int):
    """n i.i.d. N_ℤ(0, σ²) draws (flat) and the failed ones; the algorithm of the module
    docstring, organised so that the work follows the proposals actually needed:

    1. every element gets FIRST_ROUNDS proposals (vectorised over all n);
    2. the still pending elements are gathered (``nonzero`` of static size) into a buffer
       of ⌈n/8⌉ + 16 slots, which gets one fresh proposal per pending slot per
       ``while_loop`` round until all have accepted, at most ``max_rounds`` rounds;
    3. pending elements that did not fit in the buffer (only for σ ≲ 0.4, where more than
       1/8 may be pending) get the same loop over the full array (normally 0 rounds).

    Every proposal is fresh and independent and an element keeps its first accepted one, so
    the law is the rejection sampler's, and an element fails exactly when its
    FIRST_ROUNDS + max_rounds proposals were all rejected. Round r uses ``fold_in(key, r)``;
    the buffer is filled from this lane's own arrays, so a lane's draws depend only on its key.
    """
    sigma = jnp.asarray(sigma, jnp.float64)
    zero = sigma == 0.0
    s = jnp.where(zero, 1.0, sigma)  # any positive value: the draws are discarded
    t = jnp.floor(s) + 1.0
    shift = s * s / t
    two_var = 2.0 * s * s

    def propose(r, size):
        bits = jax.random.bits(jax.random.fold_in(key, r), (2, size), jnp.uint64)
        z = _laplace_from_bits(bits[0], t)
        u = ((bits[1] >> 12).astype(jnp.float64) + 0.5) * (2.0**-52)  # uniform on (0, 1)
        return z, u < jnp.exp(-((jnp.abs(z) - shift) ** 2) / two_var)

    def step(value, done, r):
        z, accept = propose(r, value.shape[0])
        return jnp.where(accept & ~done, z, value), done | accept

    def until_done(value, done, first_round):
        def cond(state):
            _, finished, r = state
            return (r < first_round + max_rounds) & ~jnp.all(finished)

        def body(state):
            return (*step(state[0], state[1], state[2]), state[2] + 1)

        value, done, _ = lax.while_loop(cond, body, (value, done, jnp.asarray(first_round)))
        return value, done

    value, done = jnp.zeros((n,), jnp.float64), jnp.broadcast_to(zero, (n,))
    value, done = lax.fori_loop(0, FIRST_ROUNDS, lambda r, state: step(*state, r), (value, done))
    size = math.ceil(n * BUFFER_FRACTION) + BUFFER_MARGIN
    if size < n:
        slot = jnp.nonzero(~done, size=size, fill_value=n)[0]  # n marks an empty slot
        empty = slot == n
        fill = jnp.minimum(slot, n - 1)
        buffer_value, buffer_done = until_done(jnp.zeros((size,), jnp.float64), empty, FIRST_ROUNDS)
        value = value.at[slot].set(jnp.where(buffer_done, buffer_value, value[fill]), mode="drop")
        done = done.at[slot].set(buffer_done | done[fill], mode="drop")
        # elements beyond the buffer (if any) get their rounds after the buffer's rounds
        in_buffer = jnp.zeros((n,), bool).at[slot].set(True, mode="drop")
        value, rest_done = until_done(value, done | in_buffer, FIRST_ROUNDS + max_rounds)
        done = jnp.where(in_buffer, done, rest_done)
    else:
        value, done = until_done(value, done, FIRST_ROUNDS)
    return value, ~done


def discrete_gaussian_with_flag(key, sigma, shape=(), max_rounds: int = DEFAULT_MAX_ROUNDS):
    """I.i.d. draws of the discrete Gaussian N_ℤ(0, σ²) and the elements that failed.

    CKS20 Algorithm 3 with discrete-Laplace proposals (module docstring; nguyen §4.2),
    vectorised in shrinking stages (:func:`_flat_discrete_gaussian`).

    Args:
        key: PRNG key.
        sigma: σ ≥ 0, a scalar (may be traced; 0 gives zeros). For ½ε²-zCDP on an integer
            query of sensitivity Δ take σ = Δ/ε (CKS20 Thm 4; nguyen supp. Lemma 3.2).
        shape: static output shape.
        max_rounds: static cap on the rounds after the first three (an element fails with
            probability (1 − a)^(3 + max_rounds) ≤ 0.555^(3 + max_rounds), a the acceptance
            probability of :func:`discrete_gaussian_acceptance`).
    Returns:
        (z, failed): z float64 integers of ``shape`` (0 where failed); failed bool of
        ``shape``, True where no proposal was accepted.
    """
    _require_scale(sigma, "sigma")
    if not (isinstance(max_rounds, int) and max_rounds >= 1):
        raise ValueError(f"max_rounds={max_rounds!r} must be an integer ≥ 1")
    n = math.prod(shape)
    if n == 0:
        return jnp.zeros(shape, jnp.float64), jnp.zeros(shape, bool)
    value, failed = _flat_discrete_gaussian(key, sigma, n, max_rounds)
    return value.reshape(shape), failed.reshape(shape)


def discrete_gaussian(key, sigma, shape=(), max_rounds: int = DEFAULT_MAX_ROUNDS) -> jax.Array:
    """I.i.d. draws of the discrete Gaussian N_ℤ(0, σ²), P(Z = z) ∝ exp(−z²/(2σ²)) (CKS20;
    nguyen §4.2). Same as :func:`discrete_gaussian_with_flag` without the flag (a failed
    element, probability < 1e-17 per draw at the default cap, is returned as 0).

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
    return (-math.expm1(-1.0 / scale) / (1.0 + a)) * np.exp(
        -np.abs(np.asarray(z, np.float64)) / scale
    )


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
    accept = np.exp(-((np.abs(z) - sigma * sigma / t) ** 2) / (2.0 * sigma * sigma))
    return float(np.sum(discrete_laplace_pmf(z, t) * accept))
