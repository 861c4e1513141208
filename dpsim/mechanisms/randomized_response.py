"""Randomized response (Warner 1965): binary and K-ary, with the debiased release of xu and
the sufficient-statistic form used to privatise counts without materialising every answer.

Used by xu (per-comparison RR and its debiased value, xu §3; docs/xu.md, Mechanisms and estimators), nguyen (RR on
responses before shuffling, nguyen supp. §4) and chowdhury (label RR and K-ary RR,
chowdhury eq. (2); eq. (12), §4.4). ε = ∞ (no privacy) keeps every answer.

Privacy: binary RR that keeps the answer with probability e^ε/(1 + e^ε) is ε-LDP per answer
(the likelihood ratio of any output under two inputs is at most e^ε); K-ary RR that keeps it
with probability e^ε/(e^ε + K − 1) and otherwise reports one of the other K − 1 values
uniformly is ε-LDP.

ε is validated once per call chain (:mod:`dpsim.validate`): each public function checks it and
calls its ``_``-prefixed twin, which the mechanisms built on it (:mod:`.pairwise_ldp`) call
after checking ε themselves under their own argument's name.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from dpsim.samplers import binomial_pmf
from dpsim.validate import require_eps, require_int


def keep_probability(eps):
    """e^ε/(1 + e^ε) = σ(ε), the probability that binary RR reports the true answer.

    Args: eps: ε > 0 (scalar or array; ∞ gives 1). Returns: same shape, float64."""
    require_eps(eps)
    return jax.nn.sigmoid(jnp.asarray(eps, jnp.float64))


def flip_probability(eps):
    """1/(1 + e^ε) = p_ε, the probability that binary RR flips the answer (xu §3.1)."""
    require_eps(eps)
    return _flip(eps)


def _flip(eps):
    """:func:`flip_probability` of an ε its caller has validated (one check per call chain)."""
    return jax.nn.sigmoid(-jnp.asarray(eps, jnp.float64))


def randomized_response(key, y, eps):
    """Binary RR of each entry of ``y``: kept with probability e^ε/(1 + e^ε), else flipped.

    Args:
        key: PRNG key.
        y: array of 0/1 answers (bool, int or float).
        eps: ε > 0, a scalar or an array broadcastable to ``y`` (per-answer budgets).
    Returns:
        The released answers, same shape and dtype as ``y``.
    """
    require_eps(eps)
    return _randomized_response(key, y, eps)


def _randomized_response(key, y, eps):
    """:func:`randomized_response` of an ε its caller has validated (one check per call chain)."""
    flip = jax.random.uniform(key, jnp.shape(y)) < _flip(eps)
    y = jnp.asarray(y)
    released = jnp.where(flip, 1 - y.astype(jnp.int32), y.astype(jnp.int32))
    return released.astype(y.dtype)


def debiased_response(y_released, eps):
    """z = ((e^ε + 1)ỹ − 1)/(e^ε − 1), the unbiased post-processing of a binary RR output
    (xu eq. (1), Lemma 2; chowdhury's surrogate label ȳ, chowdhury eqs. (4)–(6), §4.2): E[z | y] = y.

    Args: y_released: RR outputs in {0, 1}; eps: ε > 0 (broadcastable). Returns: float64,
    e^ε/(e^ε − 1) where ỹ = 1 and −1/(e^ε − 1) where ỹ = 0 (ε = ∞: z = ỹ)."""
    require_eps(eps)
    return _debiased_response(y_released, eps)


def _debiased_response(y_released, eps):
    """:func:`debiased_response` of an ε its caller has validated (one check per call chain)."""
    eps = jnp.asarray(eps, jnp.float64)
    y = jnp.asarray(y_released, jnp.float64)
    # (e^ε + 1)/(e^ε − 1) = (1 + e^−ε)/(1 − e^−ε) = coth(ε/2), written to stay finite at ε = ∞.
    return y * (1.0 + jnp.exp(-eps)) / -jnp.expm1(-eps) - 1.0 / jnp.expm1(eps)


def randomized_response_counts(key, ones, total, eps):
    """The number of 1s released when ``total`` binary answers, ``ones`` of them 1, each go
    through RR with budget ε: Binomial(ones, 1 − p_ε) + Binomial(total − ones, p_ε), the
    sufficient statistic of docs/xu.md, Mechanisms and estimators (same law as summing the per-answer outputs).

    Args:
        key: PRNG key.
        ones, total: arrays of counts (float or int, 0 ≤ ones ≤ total), broadcastable.
        eps: ε > 0 (broadcastable).
    Returns:
        float64 counts, the broadcast shape of the inputs.
    """
    require_eps(eps)
    return _randomized_response_counts(key, ones, total, eps)


def _randomized_response_counts(key, ones, total, eps):
    """:func:`randomized_response_counts` of an ε its caller has validated (one check per call
    chain)."""
    k_keep, k_flip = jax.random.split(key)
    ones = jnp.asarray(ones, jnp.float64)
    total = jnp.asarray(total, jnp.float64)
    q = _flip(eps)
    shape = jnp.broadcast_shapes(ones.shape, total.shape, jnp.shape(q))
    kept = jax.random.binomial(
        k_keep, jnp.broadcast_to(ones, shape), jnp.broadcast_to(1.0 - q, shape)
    )
    flipped = jax.random.binomial(
        k_flip, jnp.broadcast_to(total - ones, shape), jnp.broadcast_to(q, shape)
    )
    return kept + flipped


def released_count_pmf(total: int, eps) -> np.ndarray:
    """The law of the released count N of :func:`randomized_response_counts` given each raw
    count: row w (w = 0 … total) is the law of Bin(w, 1 − p_ε) + Bin(total − w, p_ε) on
    {0, …, total}, computed on the host in float64 (the convolution of the two binomial
    laws, :func:`dpsim.samplers.binomial_pmf`). Tabulated (:func:`dpsim.samplers.alias_table`)
    it draws the release jointly with the raw count, one word per pair: common random
    numbers between raw and released counts without the two binomials' draws.

    Args: total: answers per pair ≥ 0 (int); eps: ε > 0 (float; ∞ keeps every answer).
    Returns: (total + 1, total + 1) float64, rows summing to 1."""
    require_eps(eps)
    require_int(total, "total", 0)
    flip = float(1.0 / (1.0 + math.exp(float(eps)))) if math.isfinite(float(eps)) else 0.0
    kept = [binomial_pmf(w, 1.0 - flip) for w in range(total + 1)]
    flipped = [binomial_pmf(total - w, flip) for w in range(total + 1)]
    law = np.stack([np.convolve(a, b) for a, b in zip(kept, flipped)])
    return law / law.sum(axis=1, keepdims=True)


def kary_keep_probability(eps, k):
    """e^ε/(e^ε + K − 1), the probability that K-ary RR reports the true value (chowdhury
    eq. (12)). Args: eps: ε > 0; k: K ≥ 2 (Python int). Returns: float64."""
    require_eps(eps)
    require_int(k, "k", 2)
    eps = jnp.asarray(eps, jnp.float64)
    return 1.0 / (1.0 + (k - 1) * jnp.exp(-eps))


def kary_randomized_response(key, y, eps, k: int):
    """K-ary RR of integer labels ``y`` ∈ {0, …, K − 1}: kept with probability
    e^ε/(e^ε + K − 1), otherwise replaced by one of the other K − 1 values, uniformly.

    Args:
        key: PRNG key.
        y: int array of labels.
        eps: ε > 0 (broadcastable to ``y``).
        k: K ≥ 2, a Python int.
    Returns:
        int32 array of released labels, the shape of ``y``.
    """
    require_int(k, "k", 2)
    k_keep, k_other = jax.random.split(key)
    y = jnp.asarray(y, jnp.int32)
    keep = jax.random.uniform(k_keep, y.shape) < kary_keep_probability(eps, k)
    shift = jax.random.randint(k_other, y.shape, 1, k)  # uniform over the K − 1 other values
    return jnp.where(keep, y, (y + shift) % k).astype(jnp.int32)
