"""The alias-table sampler (dpsim.samplers) and the RR release given the raw count, against
SciPy's exact laws: χ² at 10⁶ draws per law (fixed seed), a test with power (a table built
at p·1.02 is rejected), and the tables' own law recomputed exactly."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import dpsim  # noqa: F401  (float64)
from dpsim.mechanisms.randomized_response import released_count_pmf
from dpsim.samplers import alias_draw, alias_law, alias_table, binomial_pmf, binomial_table

DRAWS = 10**6
# (n, p): p near 0 and 1, n from 1 to 10⁴, and xu's Scenario III laws σ(Δk) at L = 400
CASES = [
    (1, 0.5),
    (1, 1e-3),
    (10, 1e-4),
    (10, 0.9999),
    (50, 0.999),
    (400, 0.3),
    (400, float(1 / (1 + np.exp(-0.05 * 29)))),
    (2000, 0.01),
    (10**4, 1e-3),
    (10**4, 0.5),
]


def chi2_pvalue(counts: np.ndarray, expected_p: np.ndarray) -> float:
    """Pearson χ² p-value of observed ``counts`` against probabilities ``expected_p``, the
    outcomes of expected count < 5 pooled from each tail inwards (one cell per tail)."""
    expected = expected_p * counts.sum()
    order = np.arange(len(expected))
    keep = expected >= 5
    lo, hi = order[keep].min(), order[keep].max()
    obs = np.concatenate([[counts[: lo + 1].sum()], counts[lo + 1 : hi], [counts[hi:].sum()]])
    exp = np.concatenate([[expected[: lo + 1].sum()], expected[lo + 1 : hi], [expected[hi:].sum()]])
    obs, exp = obs[exp > 0], exp[exp > 0]
    if len(exp) < 2:
        return 1.0 if np.allclose(obs, exp) else 0.0
    return float(stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)


def draw_rows(table, sizes, key=0) -> np.ndarray:
    """DRAWS draws from each law (row) of a padded table, in one compiled call: [DRAWS, R]."""
    rows = table.threshold.shape[0]
    bits = jax.random.bits(jax.random.key(key), (DRAWS, rows), jnp.uint64)
    fn = jax.jit(lambda b, t, a, s: alias_draw(b, t, a, jnp.arange(rows), s))
    return np.asarray(
        fn(bits, jnp.asarray(table.threshold), jnp.asarray(table.alias), jnp.asarray(sizes))
    )


def padded_binomials(cases, scale=1.0):
    """One table per law on its own n + 1 outcomes, zero-padded to the largest (as the
    engine stacks the cells of a program), drawn with each law's own size."""
    size = max(n for n, _ in cases) + 1
    threshold = np.zeros((len(cases), size), np.uint64)
    alias = np.zeros((len(cases), size), np.int32)
    for r, (n, p) in enumerate(cases):
        table = binomial_table(n, [min(p * scale, 1.0)])
        threshold[r, : n + 1], alias[r, : n + 1] = table.threshold[0], table.alias[0]
    return type(table)(threshold, alias), np.asarray([n + 1 for n, _ in cases])


def test_binomial_pmf_matches_scipy():
    for n, p in CASES:
        np.testing.assert_allclose(
            binomial_pmf(n, p), stats.binom.pmf(np.arange(n + 1), n, p), rtol=1e-9, atol=1e-300
        )


def test_table_encodes_the_law():
    """(*) of the module docstring: the table's law is the pmf to the thresholds' rounding."""
    for n, p in CASES:
        pmf = binomial_pmf(n, p)
        assert np.abs(alias_law(alias_table(pmf)) - pmf).sum() < 2 * (
            2.0**-33 + (n + 1) * 2.0**-52
        ) * (n + 1)
    rng = np.random.default_rng(3)
    laws = rng.dirichlet(np.full(37, 0.3), size=50)
    laws[:, 5] = 0.0
    laws /= laws.sum(axis=1, keepdims=True)
    table = alias_table(laws)
    np.testing.assert_allclose(alias_law(table), laws, atol=1e-9)
    assert np.all(table.alias[:, 5] != 5) or np.all(table.threshold[:, 5] == 0)


def test_binomial_draws_chi2_against_scipy():
    table, sizes = padded_binomials(CASES)
    draws = draw_rows(table, sizes)
    for r, (n, p) in enumerate(CASES):
        counts = np.bincount(draws[:, r], minlength=n + 1)
        assert counts[n + 1 :].sum() == 0, (n, p)
        pvalue = chi2_pvalue(counts[: n + 1], stats.binom.pmf(np.arange(n + 1), n, p))
        assert pvalue > 1e-3, (n, p, pvalue)


def test_chi2_has_power_against_two_percent_error_in_p():
    """The same test rejects a table built at p·1.02 (n ≥ 50: a 2 % error in p is then
    within reach of 10⁶ draws; at n = 1, p = 0.5 it would need ~10⁷)."""
    cases = [(n, p) for n, p in CASES if n >= 50 and p * 1.02 < 1]
    table, sizes = padded_binomials(cases, scale=1.02)
    draws = draw_rows(table, sizes, key=1)
    for r, (n, p) in enumerate(cases):
        counts = np.bincount(draws[:, r], minlength=n + 1)[: n + 1]
        assert chi2_pvalue(counts, stats.binom.pmf(np.arange(n + 1), n, p)) < 1e-6, (n, p)


@pytest.mark.parametrize("total,eps", [(100, 1.0), (400, 0.3)])
def test_release_given_raw_count_against_scipy(total, eps):
    """Row w of released_count_pmf is Bin(w, 1 − p_ε) + Bin(total − w, p_ε) (SciPy's pmfs,
    convolved independently), and its draws pass χ² at 10⁶ per row; the joint draw's
    marginal of N is Bin(total, ½ + (p − ½)tanh(ε/2)) (Lemma 1) when w ~ Bin(total, p)."""
    law = released_count_pmf(total, eps)
    flip = 1 / (1 + np.exp(eps))
    k = np.arange(total + 1)
    for w in (0, total // 3, total):
        ref = np.convolve(
            stats.binom.pmf(np.arange(w + 1), w, 1 - flip),
            stats.binom.pmf(np.arange(total - w + 1), total - w, flip),
        )
        np.testing.assert_allclose(law[w], ref, atol=1e-12)
    rows = [0, total // 3, total]
    table = alias_table(law[rows])
    draws = draw_rows(table, np.full(len(rows), total + 1), key=2)
    for r, w in enumerate(rows):
        assert chi2_pvalue(np.bincount(draws[:, r], minlength=total + 1), law[w]) > 1e-3, w
    p = 0.7
    marginal = stats.binom.pmf(k, total, p) @ law
    np.testing.assert_allclose(
        marginal, stats.binom.pmf(k, total, 0.5 + (p - 0.5) * np.tanh(eps / 2)), atol=1e-12
    )


def test_bad_input_named():
    with pytest.raises(ValueError, match="p="):
        binomial_pmf(10, 1.5)
    with pytest.raises(ValueError, match="size=3"):
        binomial_pmf(10, 0.5, 3)
    with pytest.raises(ValueError, match="nonnegative"):
        alias_table([0.5, -0.1, 0.6])
    with pytest.raises(ValueError):
        binomial_table(-1, [0.5])
