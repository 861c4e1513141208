"""The JAX discrete Gaussian and discrete Laplace samplers (nguyen §4.2, supp. §4) against
their exact pmfs (χ²), against OpenDP's samplers (two-sample χ²), their variances and tails,
and the discrete Gaussian's failure flag.

Statistical tests use fixed seeds. A χ² test passes when its p-value exceeds 1e-4 (a
correct sampler fails with probability 1e-4 per test; the seeds are fixed, so the outcome
is reproducible). Moment and frequency checks allow 5 Monte-Carlo standard errors (stated
at each check). ``test_chi2_rejects_a_rounded_continuous_gaussian`` shows the χ² test has
the power to fail a wrong sampler.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import opendp.prelude as dp
import pytest
from scipy import stats

import dpsim  # noqa: F401
from dpsim.mechanisms.discrete import (
    MIN_ACCEPTANCE,
    discrete_gaussian,
    discrete_gaussian_with_flag,
    discrete_laplace,
    discrete_gaussian_acceptance,
    discrete_gaussian_pmf,
    discrete_gaussian_variance,
    discrete_laplace_pmf,
)

N = 200_000
P_MIN = 1e-4

# σ and t are traced: one program per sampler (and per cap) serves every scale below
_gauss = jax.jit(lambda key, sigma: discrete_gaussian_with_flag(key, sigma, (N,)))
_laplace = jax.jit(lambda key, scale: discrete_laplace(key, scale, (N,)))
_capped = {
    rounds: jax.jit(
        lambda key, sigma, rounds=rounds: discrete_gaussian_with_flag(
            key, sigma, (N,), max_rounds=rounds
        )
    )
    for rounds in (1, 2)
}


def _many(sampler, key, scale, n):
    """``n`` draws (a multiple of N) of ``sampler`` at ``scale``, N per key split from ``key``."""
    return np.concatenate(
        [np.asarray(sampler(k, scale)) for k in jax.random.split(key, n // N)], axis=-1
    )


def chi2_against_pmf(samples, pmf, min_expected: float = 20.0):
    """χ² p-value of integer samples against a pmf, integers with expected count ≥
    min_expected kept as cells, both tails pooled into one cell each."""
    samples = np.asarray(samples).astype(np.int64)
    lo, hi = samples.min(), samples.max()
    support = np.arange(lo - 1, hi + 2)
    expected = pmf(support) * samples.size
    keep = support[expected >= min_expected]
    a, b = keep.min(), keep.max()
    cells = np.arange(a, b + 1)
    observed = np.array(
        [np.sum(samples < a)] + [np.sum(samples == c) for c in cells] + [np.sum(samples > b)]
    )
    probs = np.concatenate(
        [[pmf(np.arange(a - 2000, a)).sum()], pmf(cells), [pmf(np.arange(b + 1, b + 2001)).sum()]]
    )
    probs = probs / probs.sum()
    return stats.chisquare(observed, probs * samples.size).pvalue


@pytest.mark.parametrize("sigma", [0.3, 0.5, 1.0, 3.0, 10.0, 50.0])
def test_discrete_gaussian_matches_exact_pmf(sigma):
    z, failed = _gauss(jax.random.key(int(sigma * 10)), sigma)
    assert not bool(failed.any())
    assert np.all(np.asarray(z) == np.round(np.asarray(z)))
    assert chi2_against_pmf(z, lambda k: discrete_gaussian_pmf(k, sigma)) > P_MIN


def test_chi2_rejects_a_rounded_continuous_gaussian():
    """The rounded continuous Gaussian is the obvious wrong sampler: at σ = 0.5 its P(0) is
    0.683 against the discrete Gaussian's 0.787, and the test above rejects it."""
    wrong = np.round(0.5 * np.random.default_rng(0).standard_normal(N))
    assert chi2_against_pmf(wrong, lambda k: discrete_gaussian_pmf(k, 0.5)) < 1e-30


@pytest.mark.parametrize("scale", [0.5, 3.0, 20.0])
def test_discrete_laplace_matches_exact_pmf(scale):
    z = _laplace(jax.random.key(7), scale)
    assert chi2_against_pmf(z, lambda k: discrete_laplace_pmf(k, scale)) > P_MIN


def _two_sample_p(a, b):
    """χ² test of homogeneity of two integer samples (cells with ≥ 20 expected pooled)."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    both = np.concatenate([a, b])
    lo, hi = np.quantile(both, [0.001, 0.999]).astype(np.int64)
    edges = np.concatenate([[-np.inf], np.arange(lo, hi + 1) + 0.5, [np.inf]])
    table = np.array([np.histogram(a, edges)[0], np.histogram(b, edges)[0]])
    table = table[:, table.sum(axis=0) >= 40]
    return stats.chi2_contingency(table)[1]


@pytest.mark.parametrize("sigma", [0.5, 4.0, 1000.0])
def test_discrete_gaussian_agrees_with_opendp(sigma):
    dp.enable_features("contrib")
    n = 60_000
    meas = dp.m.make_gaussian(
        dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int), scale=sigma
    )
    theirs = np.asarray(meas([0] * n))
    ours = np.asarray(_gauss(jax.random.key(11), sigma)[0])[:n]
    assert _two_sample_p(ours, theirs) > P_MIN


@pytest.mark.parametrize("scale", [0.5, 6.0])
def test_discrete_laplace_agrees_with_opendp(scale):
    dp.enable_features("contrib")
    n = 60_000
    meas = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=scale
    )
    theirs = np.asarray(meas([0] * n))
    ours = np.asarray(_laplace(jax.random.key(12), scale))[:n]
    assert _two_sample_p(ours, theirs) > P_MIN


@pytest.mark.parametrize("sigma", [0.5, 1.0, 7.0, 1e5])
def test_discrete_gaussian_variance(sigma):
    """Sample variance within 5 standard errors of the exact variance (SE of a variance
    estimate ≈ √((μ₄ − v²)/N) ≈ v√(2/N) for σ ≳ 1; for σ = 0.5 the kurtosis term is
    computed from the pmf)."""
    z = np.asarray(_gauss(jax.random.key(3), sigma)[0])
    if sigma < 1e3:
        v = discrete_gaussian_variance(sigma)
        k = np.arange(-int(40 * sigma) - 2, int(40 * sigma) + 3)
        mu4 = float(np.sum(k.astype(float) ** 4 * discrete_gaussian_pmf(k, sigma)))
    else:
        v, mu4 = sigma**2, 3 * sigma**4  # N_ℤ(0, σ²) = N(0, σ²) to 1e-70 here
    se = math.sqrt((mu4 - v * v) / N)
    assert abs(z.var() - v) <= 5 * se
    assert abs(z.mean()) <= 5 * math.sqrt(v / N)


def test_discrete_laplace_variance_at_huge_scale():
    """Scale 4e6 (ε_q = 2.5e-7, docs/nguyen.md, Mechanisms and estimators): Var = 2α/(1 − α)² with α = e^{−1/t}; SE of the
    variance estimate √((μ₄ − v²)/N), μ₄ ≈ 6·v² for a Laplace law."""
    t = 4e6
    z = np.asarray(_laplace(jax.random.key(4), t))
    a = math.exp(-1 / t)
    v = 2 * a / (1 - a) ** 2
    assert abs(z.var() - v) <= 5 * math.sqrt(5 * v * v / N)


def test_tails():
    """Discrete Gaussian (σ = 2): P(|Z| ≥ 3σ) within 5 SE of the exact tail and no draw
    beyond 10σ among 10⁶ (exact P(|Z| > 10σ) ≈ 1e-22). Discrete Laplace (t = 2): the
    frequency of |Z| > 10t within 5 SE of the exact 2α^{21}/(1 + α) ≈ 4.0e-5 (≈ 40 draws)."""
    n = 1_000_000
    sigma = 2.0
    z = _many(lambda k, s: _gauss(k, s)[0], jax.random.key(5), sigma, n)
    k = np.arange(-200, 201)
    pmf = discrete_gaussian_pmf(k, sigma)
    tail = pmf[np.abs(k) >= 3 * sigma].sum()
    assert abs(np.mean(np.abs(z) >= 3 * sigma) - tail) <= 5 * math.sqrt(tail * (1 - tail) / n)
    assert np.max(np.abs(z)) <= 10 * sigma
    t = 2.0
    y = _many(_laplace, jax.random.key(6), t, n)
    a = math.exp(-1 / t)
    tail = 2 * a**21 / (1 + a)
    assert abs(np.mean(np.abs(y) > 10 * t) - tail) <= 5 * math.sqrt(tail / n)


@pytest.mark.parametrize("sigma", [0.3, 2.0, 40.0])
def test_failure_flag_and_acceptance(sigma):
    """An element fails exactly when its 3 + max_rounds proposals are all rejected: with
    max_rounds = 1 and 2 the flagged fraction is (1 − a)^(3 + max_rounds), a the exact
    acceptance probability (5 SE); flagged draws are 0; a ≥ MIN_ACCEPTANCE."""
    a = discrete_gaussian_acceptance(sigma)
    assert a >= MIN_ACCEPTANCE
    for rounds in (1, 2):
        z, failed = _capped[rounds](jax.random.key(8), sigma)
        q = (1 - a) ** (3 + rounds)
        assert abs(float(failed.mean()) - q) <= 5 * math.sqrt(q * (1 - q) / N)
        assert np.all(np.asarray(z)[np.asarray(failed)] == 0)


def test_no_failures_at_default_cap():
    """No flagged element among 10⁶ draws at σ = 0.3 (five batches of N)."""
    failed = _many(lambda k, s: _gauss(k, s)[1], jax.random.key(9), 0.3, 1_000_000)
    assert failed.shape == (1_000_000,) and not failed.any()


def test_zero_scale_is_no_noise_and_bad_scale_is_refused():
    z, failed = _gauss(jax.random.key(0), 0.0)
    assert np.all(np.asarray(z) == 0) and not bool(failed.any())
    assert np.all(np.asarray(_laplace(jax.random.key(0), 0.0)) == 0)
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="sigma="):
            discrete_gaussian(jax.random.key(0), bad, (3,))
        with pytest.raises(ValueError, match="scale="):
            discrete_laplace(jax.random.key(0), bad, (3,))
    with pytest.raises(ValueError, match="max_rounds"):
        discrete_gaussian(jax.random.key(0), 1.0, (3,), max_rounds=0)


def test_vmap_over_sigma_and_keys_matches_single_calls():
    """σ traced under vmap; each lane equals the un-batched call with the same key and σ
    (a lane's draws depend only on its own key, not on the batch), made through
    discrete_gaussian: it returns the flagged sampler's draws."""
    sigmas = jnp.asarray([0.0, 0.4, 3.0, 2e4])
    keys = jax.random.split(jax.random.key(10), 4)
    f = lambda k, s: discrete_gaussian_with_flag(k, s, (300,))
    batched, flags = jax.jit(jax.vmap(f))(keys, sigmas)
    one = jax.jit(lambda k, s: discrete_gaussian(k, s, (300,)))
    for i in range(4):
        single = one(keys[i], sigmas[i])
        np.testing.assert_array_equal(np.asarray(batched[i]), np.asarray(single))
    assert not bool(flags.any())
    lap = jax.jit(jax.vmap(lambda k, s: discrete_laplace(k, s, (300,))))(keys, sigmas)
    np.testing.assert_array_equal(
        np.asarray(lap[2]), np.asarray(discrete_laplace(keys[2], 3.0, (300,)))
    )
