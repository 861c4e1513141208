"""θ* designs (docs/cai.md, Model), the ER comparison generator (cai §2.1) and link functions
((A0)–(A2), cai §2.2.1)."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats as st
from scipy import integrate
from scipy.special import expit

from dpsim.models import (
    LOGISTIC,
    PROBIT,
    get_link,
    sample_er_comparisons,
    sample_er_graph,
    theta_cai_design,
    theta_evenly_spaced,
    theta_two_block,
    theta_uniform,
    top_k_size,
    true_top_k_mask,
)

# Bonferroni bound used by the per-pair tests below: P(|Z| > 4.5) = 6.8e-6 for a standard
# normal Z, so over ≤ 45 pairs a correct generator fails with probability < 3.1e-4 (and the
# seeds are fixed, so the test is deterministic).
Z_MAX = 4.5


# ----------------------------------------------------------------------------- θ* designs


@pytest.mark.parametrize(
    "n, k",
    [
        (250, 62),
        (150, 38),
        (350, 88),
        (450, 112),
        (550, 138),
        (650, 162),
        (175, 44),
        (475, 119),
        (100, 25),
        (300, 75),
        (10, 2),
        (14, 4),
        (6, 2),
        (12, 3),
    ],
)
def test_top_k_size_is_round_half_even(n, k):
    """k = R's round(n/4) (round half to even), docs/cai.md, Model: 250 → 62, 150 → 38, 10 → 2, 14 → 4."""
    assert top_k_size(n) == k


@pytest.mark.parametrize("n", [12, 250])
def test_theta_cai_design_structure(n):
    k = top_k_size(n)
    theta = np.asarray(theta_cai_design(jax.random.key(n), n))
    assert theta.shape == (n,) and theta.dtype == np.float64
    assert abs(theta.mean()) < 1e-14  # centred
    top, rest = theta[n - k :], theta[: n - k]
    assert np.all(top == top[0])  # tied top block ...
    assert top[0] == theta.max() and np.all(rest < top[0])  # ... in the last k indices
    ratio = np.exp(rest - top[0])  # = the Unif(0.2, 0.7) draws
    assert np.all((ratio >= 0.2) & (ratio <= 0.7))
    mask = np.asarray(true_top_k_mask(jnp.asarray(theta), k))
    np.testing.assert_array_equal(mask, np.arange(n) >= n - k)


def test_theta_cai_design_top_first_and_explicit_k():
    theta = np.asarray(theta_cai_design(jax.random.key(0), 20, k=7, top_first=True))
    assert np.all(theta[:7] == theta.max()) and np.all(theta[7:] < theta.max())
    assert abs(theta.mean()) < 1e-14


def test_theta_cai_design_distribution():
    """n = 4000: the non-top e^{θ − θ_top} are Unif(0.2, 0.7) (KS) and the centred top level is
    −mean(uncentred θ) = (n−k)/n · mean(−log U) ≈ 0.75·0.8556 = 0.642 (docs/cai.md, Model).

    SE of the top level: (n−k)/n · sd(log U)/√(n−k), with sd(log U) from quadrature (0.348),
    i.e. 0.75·0.348/√3000 = 0.0048; tolerance 4.5 SE.
    """
    n = 4000
    k = top_k_size(n)
    theta = np.asarray(theta_cai_design(jax.random.key(99), n))
    top = theta[-1]
    u = np.exp(theta[: n - k] - top)
    assert st.kstest(u, st.uniform(loc=0.2, scale=0.5).cdf).pvalue > 0.01
    assert st.kstest(u, st.uniform(loc=0.2, scale=0.55).cdf).pvalue < 1e-3  # the KS has power
    m1 = integrate.quad(lambda x: np.log(x) / 0.5, 0.2, 0.7)[0]
    m2 = integrate.quad(lambda x: np.log(x) ** 2 / 0.5, 0.2, 0.7)[0]
    assert m1 == pytest.approx(-0.8556, abs=1e-4)
    se = (n - k) / n * math.sqrt(m2 - m1**2) / math.sqrt(n - k)
    assert abs(top - (n - k) / n * (-m1)) <= 4.5 * se


def test_theta_two_block():
    n, k, gap = 16, 4, 0.15
    theta = np.asarray(theta_two_block(n, k, gap))
    assert abs(theta.mean()) < 1e-14
    assert np.all(theta[-k:] == theta.max()) and np.all(theta[:-k] == theta.min())
    # F(α − β) = 1/2 + Δ (docs/cai.md, Model)
    assert float(jax.nn.sigmoid(theta.max() - theta.min())) == pytest.approx(0.5 + gap, abs=1e-14)
    with pytest.raises(ValueError):
        theta_two_block(n, k, gap, link=PROBIT)


def test_theta_uniform_and_evenly_spaced():
    t = np.asarray(theta_uniform(jax.random.key(1), 50, -2.0, 3.0))
    assert abs(t.mean()) < 1e-14 and np.ptp(t) <= 5.0 and np.ptp(t) > 4.0
    e = np.asarray(theta_evenly_spaced(11, -1.0, 1.0))
    np.testing.assert_allclose(e, np.linspace(-1, 1, 11), atol=1e-15)  # already centred
    np.testing.assert_allclose(np.diff(e), 0.2, atol=1e-14)


# ----------------------------------------------------------------------------- ER generator


@functools.lru_cache(maxsize=None)
def _sampler(link):
    """jit(vmap) of the generator over keys, θ and p traced: one compile per link and shape."""
    return jax.jit(
        jax.vmap(
            lambda k, theta, p: sample_er_comparisons(k, theta, p, link), in_axes=(0, None, None)
        )
    )


def _sample_batch(theta, p, R, link=LOGISTIC, seed=0):
    keys = jax.random.split(jax.random.key(seed), R)
    return np.asarray(_sampler(link)(keys, jnp.asarray(theta), p))


@pytest.mark.parametrize(
    "n, p, n_items", [(7, 0.6, None), (40, 1.0, None), (40, 0.3, 23), (64, 0.5, 64)]
)
def test_er_draw_is_the_pair_uniform_construction_from_jax_bits(n, p, n_items):
    """W is built, in NumPy, from ``jax.random.bits(key, (m, m))`` of the m real items (the
    documented stream: one uniform per pair i < j on the 2^-32 grid; i wins when U < p·F,
    j when p·F ≤ U < p), with F = SciPy's logistic CDF: entry for entry, the padding 0; the
    graph ``sample_er_graph`` returns beside it is W + Wᵀ."""
    m = n if n_items is None else n_items
    key = jax.random.key(100 + n)
    theta = np.asarray(theta_cai_design(jax.random.key(3), n))
    u = np.asarray(jax.random.bits(key, (m, m), jnp.uint32)).astype(np.float64) * 2.0**-32
    threshold = p * expit(theta[:m, None] - theta[None, :m])
    upper = np.triu(np.ones((m, m), bool), 1)
    want = np.zeros((n, n))
    want[:m, :m] = (upper & (u < threshold)) + (upper & (threshold <= u) & (u < p)).T
    args = (key, jnp.asarray(theta), p, LOGISTIC, None if n_items is None else jnp.int64(n_items))
    W, A = jax.jit(sample_er_graph, static_argnums=3)(*args)
    np.testing.assert_array_equal(np.asarray(W), want)
    np.testing.assert_array_equal(np.asarray(A), want + want.T)  # the graph, W + Wᵀ
    np.testing.assert_array_equal(
        np.asarray(jax.jit(sample_er_comparisons, static_argnums=3)(*args)), want
    )


def test_er_draw_with_another_key_implementation_is_the_same_construction():
    """With a non-threefry key (``rbg``) the unpadded draw still reads ``jax.random.bits`` of
    the pair's upper-triangle entry; a padded draw needs the default keys and says so."""
    n, p = 12, 0.7
    key = jax.random.key(7, impl="rbg")
    theta = np.asarray(theta_cai_design(jax.random.key(3), n))
    u = np.asarray(jax.random.bits(key, (n, n), jnp.uint32)).astype(np.float64) * 2.0**-32
    threshold = p * expit(theta[:, None] - theta[None, :])
    upper = np.triu(np.ones((n, n), bool), 1)
    want = (upper & (u < threshold)) + (upper & (threshold <= u) & (u < p)).T
    W, A = sample_er_graph(key, jnp.asarray(theta), p)
    np.testing.assert_array_equal(np.asarray(W), want)
    np.testing.assert_array_equal(np.asarray(A), want + want.T)
    with pytest.raises(ValueError, match="threefry"):
        sample_er_graph(key, jnp.asarray(theta), p, n_items=jnp.int64(10))


def test_er_structure():
    n, R = 9, 3000
    theta = theta_cai_design(jax.random.key(2), n)
    for p in (0.3, 1.0):
        W = _sample_batch(theta, p, R, seed=3)
        assert W.dtype == np.float64 and W.shape == (R, n, n)
        A = W + W.transpose(0, 2, 1)
        assert set(np.unique(W)) <= {0.0, 1.0}
        assert set(np.unique(A)) <= {0.0, 1.0}  # ≤ one comparison per pair
        assert np.all(np.diagonal(W, axis1=1, axis2=2) == 0)
        if p == 1.0:  # complete graph
            np.testing.assert_array_equal(A, np.broadcast_to(1 - np.eye(n), A.shape))
        else:
            assert 0 < A.mean() < 1


def _pair_z_scores(W, theta, p, cdf):
    """Per pair i < j over R replicates: z of the edge count m_ij ~ Bin(R, p) and of the win
    count of i given m_ij, ~ Bin(m_ij, F(θ_i − θ_j))."""
    R, n, _ = W.shape
    iu = np.triu_indices(n, 1)
    wins = W.sum(axis=0)[iu]
    m = (W + W.transpose(0, 2, 1)).sum(axis=0)[iu]
    prob = np.asarray(cdf(theta[:, None] - theta[None, :]))[iu]
    z_edge = (m - R * p) / math.sqrt(R * p * (1 - p))
    z_win = (wins - m * prob) / np.sqrt(m * prob * (1 - prob))
    return z_edge, z_win, m


@pytest.mark.parametrize("link", [LOGISTIC, PROBIT], ids=lambda l: l.name)
def test_er_edge_and_win_frequencies(link):
    """Edge frequency ≈ p and win frequency ≈ F(θ_i − θ_j) for every pair (n = 9, R = 3000).

    Each z is a standardised binomial count, ≈ N(0, 1) for a correct generator; Z_MAX = 4.5
    with a Bonferroni bound over the 36 pairs (see top). The pooled edge frequency has
    SE √(p(1−p)/(36R)). Swapping winner and loser, or the other link, moves the z of the
    widest pairs by > 20.
    """
    n, p, R = 9, 0.6, 3000
    theta = jnp.linspace(-2.0, 2.0, n)
    W = _sample_batch(theta, p, R, link=link, seed=4)
    z_edge, z_win, m = _pair_z_scores(W, theta, p, link.cdf)
    assert np.max(np.abs(z_edge)) <= Z_MAX
    assert np.max(np.abs(z_win)) <= Z_MAX
    pooled = m.sum() / (R * len(m))
    assert abs(pooled - p) <= 4.5 * math.sqrt(p * (1 - p) / (R * len(m)))
    # the test can fail: against the other direction / the other link it does
    _, z_swapped, _ = _pair_z_scores(W.transpose(0, 2, 1), theta, p, link.cdf)
    assert np.max(np.abs(z_swapped)) > 20
    other = PROBIT if link is LOGISTIC else LOGISTIC
    _, z_other, _ = _pair_z_scores(W, theta, p, other.cdf)
    assert np.max(np.abs(z_other)) > 2 * Z_MAX


# ----------------------------------------------------------------------------- links


def test_link_registry_and_dp_flags():
    assert get_link("logistic") is LOGISTIC and get_link("probit") is PROBIT
    assert LOGISTIC.dp_guarantee is True
    assert (
        PROBIT.dp_guarantee is False
    )  # κ1 = ∞: no DP guarantee (cai §2.2.1; docs/cai.md, Errata and modes (E15))
    assert math.isinf(PROBIT.kappa1)
    with pytest.raises(ValueError, match="cauchit"):
        get_link("cauchit")


def test_link_constants_match_assumptions():
    """(A1) sup F'/(F(1−F)) ≤ κ1 and (A2) sup (−log F)'' ≤ κ2, checked by autodiff on a grid."""
    x = jnp.linspace(-20.0, 20.0, 2001)

    def ratio(cdf):
        @jax.jit
        def r(x):
            F = cdf(x)
            return jax.vmap(jax.grad(cdf))(x) / (F * (1 - F))

        return r(x)

    def curvature(neglog):
        return jax.jit(jax.vmap(jax.grad(jax.grad(neglog))))(x)

    # logistic: F' = F(1−F) ⇒ ratio ≡ 1 = κ1; (−log F)'' = F(1−F) ≤ 1/4 = κ2, equality at 0
    r = ratio(LOGISTIC.cdf)[jnp.abs(x) <= 15]
    np.testing.assert_allclose(r, 1.0, rtol=1e-8)
    c = curvature(lambda t: jax.nn.softplus(-t))
    assert float(jnp.max(c)) <= LOGISTIC.kappa2 + 1e-12
    assert float(jnp.max(c)) == pytest.approx(0.25, abs=1e-6)
    # probit: the ratio grows like |x| (unbounded ⇒ κ1 = ∞); (−log Φ)'' < 1 = κ2
    # (evaluated at x < 0, where 1 − Φ(x) is not rounded; the Mills ratio φ/Φ(−10) ≈ 10.1)
    pr = ratio(PROBIT.cdf)
    at = lambda v: float(pr[jnp.argmin(jnp.abs(x - v))])
    assert at(-10.0) > 10.0 and at(-10.0) > at(-5.0) > at(-2.0) > 1.0
    c = curvature(lambda t: -jax.scipy.special.log_ndtr(t))
    assert float(jnp.max(c)) <= PROBIT.kappa2
    np.testing.assert_allclose(PROBIT.cdf(x), jax.scipy.stats.norm.cdf(x))
