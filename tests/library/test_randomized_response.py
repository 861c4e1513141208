"""Randomized response against its closed forms. Monte-Carlo tolerances are 5 standard errors
of the estimate (fixed seeds), so a wrong flip rate, debiasing constant or count law fails."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpsim.mechanisms.randomized_response import (
    debiased_response,
    flip_probability,
    kary_keep_probability,
    kary_randomized_response,
    keep_probability,
    randomized_response,
    randomized_response_counts,
)

N = 400_000


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_flip_rate_and_ldp_ratio(eps):
    q = 1 / (1 + math.exp(eps))
    assert float(flip_probability(eps)) == pytest.approx(q, rel=1e-14)
    assert float(keep_probability(eps)) == pytest.approx(1 - q, rel=1e-14)
    assert float(keep_probability(eps) / flip_probability(eps)) == pytest.approx(
        math.exp(eps), rel=1e-12
    )
    released = randomized_response(jax.random.key(1), jnp.ones(N, jnp.int32), eps)
    rate = float(jnp.mean(released == 0))
    assert abs(rate - q) <= 5 * math.sqrt(q * (1 - q) / N)
    zeros = randomized_response(jax.random.key(2), jnp.zeros(N, jnp.int32), eps)
    assert abs(float(jnp.mean(zeros == 1)) - q) <= 5 * math.sqrt(q * (1 - q) / N)


def test_infinite_eps_keeps_everything_and_bad_eps_is_refused():
    y = jnp.asarray([0, 1, 1, 0])
    assert np.array_equal(randomized_response(jax.random.key(0), y, math.inf), y)
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(ValueError, match="eps="):
            randomized_response(jax.random.key(0), y, bad)


def test_debiased_values_example():
    # ε = log 2: z = 2 for a released 1 and −1 for a released 0 (xu eq. (1))
    np.testing.assert_allclose(
        debiased_response(jnp.asarray([0.0, 1.0]), math.log(2.0)), [-1.0, 2.0], rtol=1e-14
    )


@pytest.mark.parametrize("eps, p_true", [(0.5, 0.8), (2.0, 0.3)])
def test_debiased_mean_and_variance_closed_form(eps, p_true):
    """E z = p and Var z = coth²(ε/2)/4 − (p − 1/2)² (xu Lemma 2 and xu §3.2, eq. (1), Lemma 2)."""
    k_y, k_rr = jax.random.split(jax.random.key(3))
    y = (jax.random.uniform(k_y, (N,)) < p_true).astype(jnp.int32)
    z = np.asarray(debiased_response(randomized_response(k_rr, y, eps), eps))
    var = 1 / math.tanh(eps / 2) ** 2 / 4 - (p_true - 0.5) ** 2
    assert abs(z.mean() - p_true) <= 5 * math.sqrt(var / N)
    assert z.var() == pytest.approx(var, rel=5 * math.sqrt(2 / N) * 3)


def test_counts_match_per_answer_sums_in_distribution():
    """Binomial(ones, 1 − q) + Binomial(total − ones, q) against summing per-answer RR
    outputs: equal means and variances (both estimated on 20 000 draws)."""
    eps, ones, total, reps = 0.7, 12, 40, 20_000
    counts = np.asarray(
        randomized_response_counts(jax.random.key(4), jnp.full(reps, ones), total, eps)
    )
    answers = jnp.broadcast_to((jnp.arange(total) < ones).astype(jnp.int32), (reps, total))
    summed = np.asarray(randomized_response(jax.random.key(5), answers, eps).sum(axis=1))
    q = 1 / (1 + math.exp(eps))
    mean = ones * (1 - q) + (total - ones) * q
    var = total * q * (1 - q)
    for sample in (counts, summed):
        assert abs(sample.mean() - mean) <= 5 * math.sqrt(var / reps)
        assert sample.var() == pytest.approx(var, rel=5 * math.sqrt(2 / reps) * 1.5)


@pytest.mark.parametrize("k", [2, 4, 8])
def test_kary_frequencies(k):
    eps = 1.0
    keep = math.exp(eps) / (math.exp(eps) + k - 1)
    assert float(kary_keep_probability(eps, k)) == pytest.approx(keep, rel=1e-14)
    labels = np.asarray(
        kary_randomized_response(jax.random.key(6), jnp.zeros(N, jnp.int32), eps, k)
    )
    freq = np.bincount(labels, minlength=k) / N
    want = np.r_[keep, np.full(k - 1, (1 - keep) / (k - 1))]
    np.testing.assert_allclose(freq, want, atol=5 * math.sqrt(0.25 / N))
    # likelihood ratio of the most and least likely output: e^ε (ε-LDP, tight)
    assert want[0] / want[1] == pytest.approx(math.exp(eps), rel=1e-12)


def test_kary_rejects_k_below_two():
    with pytest.raises(ValueError, match="k=1"):
        kary_randomized_response(jax.random.key(0), jnp.zeros(3, jnp.int32), 1.0, 1)
