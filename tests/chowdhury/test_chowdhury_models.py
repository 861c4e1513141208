"""chowdhury generators (chowdhury §2; §6; §4; docs/chowdhury.md, Errata and modes (E4–E5)) against exact laws.

Monte-Carlo tolerances are 5 standard errors (fixed seeds) or a goodness-of-fit p-value
> 10⁻³ (KS, χ²); each test also checks that a wrong law (the other link, the other feature
option) is rejected, so it can fail."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import dpsim  # noqa: F401
from dpsim.models.linear_btl import (
    default_radius,
    link_scores,
    preference_probability,
    sample_features,
    sample_labels,
    sample_linear_btl,
    sample_plackett_luce,
    sample_plackett_luce_labels,
    sample_theta_star,
    theta_faithful,
    theta_theory,
)

THETA = jnp.asarray([1.0, -0.5, 0.3])


@pytest.mark.parametrize("features, scale2", [("difference", 2.0), ("direct", 1.0)])
def test_feature_covariance(features, scale2):
    n, d = 100_000, 3
    x = np.asarray(sample_features(jax.random.key(0), n, d, features))
    cov = x.T @ x / n
    se = scale2 * math.sqrt(2 / n)  # SE of a diagonal entry of a Gaussian covariance
    assert np.all(np.abs(np.diag(cov) - scale2) <= 5 * se)
    assert np.all(np.abs(cov - np.diag(np.diag(cov))) <= 5 * scale2 / math.sqrt(n))
    assert stats.kstest(x[:, 0] / math.sqrt(scale2), "norm").pvalue > 1e-3
    other = 1.0 if scale2 == 2.0 else 2.0
    assert stats.kstest(x[:, 0] / math.sqrt(other), "norm").pvalue < 1e-3


@pytest.mark.parametrize("link, other", [("logistic", "probit"), ("probit", "logistic")])
def test_labels_follow_the_link(link, other):
    """Calibration in 10 quantile bins of z = xᵀθ: mean(y) − mean(F(z)) within 5 SE per bin."""
    n = 200_000
    data = sample_linear_btl(jax.random.key(1), THETA, n, link=link)
    z = np.asarray(data.x @ THETA)
    y = np.asarray(data.y)
    assert set(np.unique(y)) == {0.0, 1.0}
    edges = np.quantile(z, np.linspace(0, 1, 11))
    bins = np.clip(np.searchsorted(edges, z, side="right") - 1, 0, 9)

    def worst(which):
        p = np.asarray(preference_probability(data.x, THETA, which))
        out = 0.0
        for b in range(10):
            m = bins == b
            se = math.sqrt(np.mean(p[m] * (1 - p[m])) / m.sum())
            out = max(out, abs(y[m].mean() - p[m].mean()) / se)
        return out

    assert worst(link) <= 5
    assert worst(other) > 5


def test_faithful_theta_is_a_truncated_gaussian():
    d, draws = 3, 20_000
    default = jax.vmap(lambda k: theta_faithful(k, d))(jax.random.split(jax.random.key(2), 2000))
    assert bool(jnp.all(default.ok)) and float(
        jnp.max(jnp.linalg.norm(default.theta, axis=1))
    ) <= default_radius(d)
    # a radius that truncates half the mass, so that the untruncated law is clearly rejected
    B = 1.5
    out = jax.vmap(lambda k: theta_faithful(k, d, radius=B, n_candidates=64))(
        jax.random.split(jax.random.key(3), draws)
    )
    norms2 = np.asarray(jnp.sum(out.theta**2, axis=1))
    assert bool(jnp.all(out.ok)) and np.all(norms2 <= B**2 * (1 + 1e-12))
    cdf = lambda v: stats.chi2.cdf(v, d) / stats.chi2.cdf(B**2, d)  # noqa: E731  (χ²_d truncated at B²)
    assert stats.kstest(norms2, cdf).pvalue > 1e-3
    assert (
        stats.kstest(norms2, lambda v: stats.chi2.cdf(v, d)).pvalue < 1e-3
    )  # untruncated is rejected
    # the first coordinate is symmetric with the truncated variance E‖θ‖²/d
    assert abs(np.asarray(out.theta)[:, 0].mean()) <= 5 * math.sqrt(norms2.mean() / d / draws)


def test_faithful_theta_flags_failure():
    draw = theta_faithful(jax.random.key(3), 5, radius=0.05, n_candidates=4)
    assert not bool(draw.ok)
    assert float(jnp.linalg.norm(draw.theta)) == pytest.approx(0.05)


def test_theory_theta_is_sum_zero_with_the_given_norm():
    for seed in range(5):
        draw = sample_theta_star(jax.random.key(seed), 4, "theory", norm=1.5)
        assert abs(float(draw.theta.sum())) < 1e-14 and float(
            jnp.linalg.norm(draw.theta)
        ) == pytest.approx(1.5)
    np.testing.assert_allclose(
        theta_theory(jax.random.key(9), 4).theta,
        sample_theta_star(jax.random.key(9), 4, "theory").theta,
    )


def test_plackett_luce_choices_follow_the_softmax():
    k = 4
    phi = jnp.asarray(np.random.default_rng(0).normal(size=(1, k, 3)))
    m = 100_000
    ys = jax.vmap(lambda key: sample_plackett_luce_labels(key, phi, THETA)[0])(
        jax.random.split(jax.random.key(4), m)
    )
    counts = np.bincount(np.asarray(ys), minlength=k)
    pmf = np.asarray(jax.nn.softmax(phi[0] @ THETA))
    assert stats.chisquare(counts, m * pmf).pvalue > 1e-3
    assert stats.chisquare(counts, m * np.roll(pmf, 1)).pvalue < 1e-3
    data = sample_plackett_luce(jax.random.key(5), THETA, 50, k)
    assert data.phi.shape == (50, k, 3) and data.y.shape == (50,) and data.y.dtype == jnp.int32


@pytest.mark.parametrize("link", ["logistic", "probit"])
def test_link_scores_are_derivatives_of_the_log_likelihood(link):
    z = np.linspace(-8.0, 8.0, 33)
    s1, s0 = link_scores(jnp.asarray(z), link)
    if link == "logistic":
        ref1, ref0 = 1 / (1 + np.exp(z)), -1 / (1 + np.exp(-z))
    else:  # SciPy's tail-accurate Φ and 1 − Φ
        ref1, ref0 = stats.norm.pdf(z) / stats.norm.cdf(z), -stats.norm.pdf(z) / stats.norm.sf(z)
    np.testing.assert_allclose(s1, ref1, rtol=1e-9)
    np.testing.assert_allclose(s0, ref0, rtol=1e-9)
    # and a central finite difference of log F where it is well conditioned
    F = jax.nn.sigmoid if link == "logistic" else jax.scipy.stats.norm.cdf
    h, zz = 1e-5, np.linspace(-3, 3, 7)
    fd = (np.log(np.asarray(F(zz + h))) - np.log(np.asarray(F(zz - h)))) / (2 * h)
    np.testing.assert_allclose(link_scores(jnp.asarray(zz), link)[0], fd, rtol=1e-6)
    assert bool(jnp.all(jnp.isfinite(jnp.stack(link_scores(jnp.asarray([-40.0, 40.0]), link)))))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: sample_features(jax.random.key(0), 0, 3), "n_samples=0"),
        (lambda: sample_features(jax.random.key(0), 10, 0), "dim=0"),
        (lambda: sample_features(jax.random.key(0), 10, 3, "gaussian"), "features='gaussian'"),
        (lambda: sample_linear_btl(jax.random.key(0), THETA, 10, link="cauchit"), "link='cauchit'"),
        (
            lambda: sample_labels(jax.random.key(0), jnp.ones((2, 3)), THETA, "logit"),
            "link='logit'",
        ),
        (lambda: sample_plackett_luce(jax.random.key(0), THETA, 10, 1), "k=1"),
        (lambda: sample_theta_star(jax.random.key(0), 3, "paper"), "design='paper'"),
        (lambda: theta_theory(jax.random.key(0), 1), "dim=1"),
        (lambda: theta_faithful(jax.random.key(0), 3, radius=-1.0), "radius=-1.0"),
    ],
)
def test_bad_inputs_raise(call, message):
    with pytest.raises(ValueError, match=message):
        call()
