"""xu's data-generating process (xu §2; docs/xu.md, Mechanisms and estimators): raw wins per privacy group
against Binomial(L_g, p*) (SciPy pmf) and the per-user reference, and the θ* designs (A2, A3)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import dpsim  # noqa: F401
from dpsim.models.btl import theta_uniform
from dpsim.models.complete_btl import (
    condition_number,
    gaps_sorted,
    n_items_of_pairs,
    pair_win_probabilities,
    sample_pair_wins,
    sample_rankings_per_user,
    theta_evenly_spaced_permuted,
    theta_uniform_centred,
)

R = 20_000


def _binomial_gof_pvalue(draws, n, p):
    """Chi-square goodness of fit of integer draws to Binomial(n, p) (cells with expected count
    < 5 pooled into one)."""
    observed = np.bincount(np.asarray(draws).astype(int), minlength=n + 1)
    expected = stats.binom.pmf(np.arange(n + 1), n, p) * len(draws)
    keep = expected >= 5
    obs, exp = observed[keep], expected[keep]
    if expected[~keep].sum() > 0:
        obs, exp = np.append(obs, observed[~keep].sum()), np.append(exp, expected[~keep].sum())
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


def test_pair_probabilities_and_indexing():
    theta = jnp.asarray([0.3, -0.1, 0.8, -1.0])
    p = np.asarray(pair_win_probabilities(theta))
    i, j = np.triu_indices(4, 1)
    np.testing.assert_allclose(
        p, np.exp(theta[i]) / (np.exp(theta[i]) + np.exp(theta[j])), rtol=1e-14
    )
    assert n_items_of_pairs(6) == 4 and n_items_of_pairs(780) == 40
    with pytest.raises(ValueError, match="length 7"):
        n_items_of_pairs(7)


def test_raw_wins_follow_the_binomial_pmf_per_group():
    theta = jnp.asarray([-0.8, 0.1, 0.7])
    sizes = jnp.asarray([5.0, 17.0, 0.0])
    wins = np.asarray(
        jax.jit(jax.vmap(lambda k: sample_pair_wins(k, theta, sizes)))(
            jax.random.split(jax.random.key(0), R)
        )
    )
    assert wins.shape == (R, 3, 3)
    assert np.all(wins[:, 2] == 0)  # an empty group has no wins
    p = np.asarray(pair_win_probabilities(theta))
    for g, L in enumerate((5, 17)):
        for e in range(3):
            assert _binomial_gof_pvalue(wins[:, g, e], L, p[e]) > 1e-4


def test_per_user_reference_sums_to_the_same_law():
    """Σ_l y^{(l)} of the per-user sampler has the Binomial(L, p*) mean and variance (5 SE)."""
    theta = jnp.asarray([-0.8, 0.1, 0.7])
    L = 12
    y = jax.jit(jax.vmap(lambda k: sample_rankings_per_user(k, theta, L)))(
        jax.random.split(jax.random.key(1), R)
    )
    assert y.shape == (R, L, 3) and set(np.unique(np.asarray(y))) <= {0, 1}
    wins = np.asarray(y).sum(axis=1)
    p = np.asarray(pair_win_probabilities(theta))
    var = L * p * (1 - p)
    assert np.all(np.abs(wins.mean(axis=0) - L * p) <= 5 * np.sqrt(var / R))
    assert np.all(np.abs(wins.var(axis=0) - var) <= 5 * var * math.sqrt(2 / R) * 1.5)


def test_group_sizes_may_be_traced():
    theta = jnp.asarray([0.0, 0.5])
    draw = jax.jit(jax.vmap(lambda L: sample_pair_wins(jax.random.key(2), theta, L)))
    out = np.asarray(draw(jnp.asarray([[1.0], [100.0], [10_000.0]])))
    assert out.shape == (3, 1, 1) and out[0, 0, 0] <= 1 and out[2, 0, 0] <= 10_000


def test_theta_uniform_centred():
    theta = theta_uniform_centred(jax.random.key(3), 10)
    np.testing.assert_allclose(theta, theta_uniform(jax.random.key(3), 10, -2.0, 2.0))
    assert abs(float(theta.sum())) < 1e-12
    big = np.asarray(theta_uniform_centred(jax.random.key(4), 20_000))
    assert big.min() > -4 and big.max() < 4
    # before centring the draws are U(−2, 2): the centred sample shifted back by its offset
    raw = np.asarray(jax.random.uniform(jax.random.key(4), (20_000,), minval=-2.0, maxval=2.0))
    np.testing.assert_allclose(big, raw - raw.mean(), atol=1e-12)
    assert stats.kstest(raw, stats.uniform(-2, 4).cdf).pvalue > 1e-4
    assert float(condition_number(theta)) == pytest.approx(
        math.exp(float(theta.max() - theta.min()))
    )


def test_theta_evenly_spaced_permuted():
    m, gap = 10, 0.2
    theta = np.asarray(theta_evenly_spaced_permuted(jax.random.key(5), m, gap))
    np.testing.assert_allclose(
        np.sort(theta), gap * (np.arange(1, m + 1) - (m + 1) / 2), atol=1e-15
    )
    assert abs(theta.sum()) < 1e-12
    np.testing.assert_allclose(gaps_sorted(jnp.asarray(theta)), gap, rtol=1e-12)
    assert float(condition_number(jnp.asarray(theta))) == pytest.approx(math.exp((m - 1) * gap))
    # one permutation per key, shared across Δ (so Δ may be a traced axis)
    gaps = jnp.asarray([0.05, 0.1, 0.2])
    thetas = np.asarray(
        jax.jit(jax.vmap(lambda g: theta_evenly_spaced_permuted(jax.random.key(5), m, g)))(gaps)
    )
    order = np.argsort(thetas, axis=1)
    assert np.all(order == order[0])
    # label permutations are uniform: the best item's label is spread over all m positions
    best = np.asarray(
        jax.vmap(lambda k: jnp.argmax(theta_evenly_spaced_permuted(k, m, gap)))(
            jax.random.split(jax.random.key(6), 5000)
        )
    )
    counts = np.bincount(best, minlength=m)
    assert stats.chisquare(counts).pvalue > 1e-4


def test_bad_input_names_the_value():
    with pytest.raises(ValueError, match="n_items=1"):
        theta_uniform_centred(jax.random.key(0), 1)
    with pytest.raises(ValueError, match="n_items=1"):
        theta_evenly_spaced_permuted(jax.random.key(0), 1, 0.1)
    for bad in (0.0, -0.1):
        with pytest.raises(ValueError, match="gap="):
            theta_evenly_spaced_permuted(jax.random.key(0), 5, bad)
    with pytest.raises(ValueError, match="n_users=0"):
        sample_rankings_per_user(jax.random.key(0), jnp.zeros(3), 0)
    with pytest.raises(ValueError, match="group_sizes"):
        sample_pair_wins(jax.random.key(0), jnp.zeros(3), 0)
    with pytest.raises(ValueError, match="n_items=1"):
        sample_pair_wins(jax.random.key(0), jnp.zeros(1), 10)
