"""xu's mechanisms (xu §3; docs/xu.md, Mechanisms and estimators) against closed forms, exact pmfs
(SciPy) and the slow per-user reference sampler.

Monte-Carlo tolerances (fixed seeds): a mean is within 5 standard errors √(v/R); a variance
within 5 standard errors √((μ4 − σ⁴)/R) estimated from the sample (≈ σ²√(2/R) for a Gaussian);
a goodness-of-fit test must have p > 1e-4. Each fails for a wrong flip rate, debiasing constant
or noise scale (a 10% error in a variance is > 10 standard errors at R = 40 000, and ≥ 9 at
the R_SAMPLERS = 20 000 draws of each of the two samplers compared below, both with 5 as the bound).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import dpsim  # noqa: F401
from dpsim.experiments import xu
from dpsim.mechanisms.pairwise_ldp import (
    MECHANISMS,
    classic_rr_mean,
    debiased_rr_mean,
    laplace_pair_mean,
    privatise,
    privatise_all,
    release_per_user,
    rr_pair_counts,
    rr_win_probability,
)
from dpsim.mechanisms.privacy_profile import (
    PROFILES,
    composed_user_budget,
    homogeneous_profile,
    pad_profile,
    per_user_eps,
    privacy_G,
    privacy_H,
    privacy_K,
    privacy_profile,
    profile_group_eps,
    profile_group_sizes,
)
from dpsim.models.complete_btl import (
    pair_win_probabilities,
    sample_pair_wins,
    sample_rankings_per_user,
)

R = 40_000
R_SAMPLERS = 20_000  # draws of the sufficient-statistic sampler and of the per-user reference


def coth(x):
    return 1.0 / math.tanh(x)


# ----------------------------------------------------------------------------- Lemma 1, Example 1
def test_example_1_numbers():
    """θ2 − θ1 = θ3 − θ2 = log 2, p_ε = 1/3 (ε = log 2): the better item wins w.p. 5/9, 5/9, 3/5."""
    theta = jnp.asarray([0.0, math.log(2), 2 * math.log(2)])
    p_star = pair_win_probabilities(theta)  # pairs (0,1), (0,2), (1,2)
    np.testing.assert_allclose(p_star, [1 / 3, 1 / 5, 1 / 3], rtol=1e-14)
    eps = math.log(2.0)
    assert 1 / (1 + math.exp(eps)) == pytest.approx(1 / 3)
    better_wins = 1.0 - rr_win_probability(p_star, eps)
    np.testing.assert_allclose(better_wins, [5 / 9, 3 / 5, 5 / 9], rtol=1e-14)
    # not BTL: transitivity would force odds (5/4)² for the pair 1-3, i.e. 25/41 ≠ 3/5
    odds = (5 / 9) / (4 / 9)
    assert odds**2 / (1 + odds**2) == pytest.approx(25 / 41)
    assert abs(25 / 41 - 3 / 5) > 0.009
    # the samplers realise them: raw BTL wins, then RR, with many users
    L = 400_000.0
    wins = sample_pair_wins(jax.random.key(0), theta, jnp.asarray([L]))
    released = privatise(jax.random.key(1), wins, jnp.asarray([L]), eps, "classic_rr")
    np.testing.assert_allclose(
        1.0 - np.asarray(released), [5 / 9, 3 / 5, 5 / 9], atol=5 * 0.5 / math.sqrt(L)
    )


@pytest.mark.parametrize("eps", [0.2, 1.0, 3.0])
def test_flip_rate_and_ldp_ratio(eps):
    L = 200_000.0
    q = 1 / (1 + math.exp(eps))
    sizes = jnp.asarray([L])
    ones = rr_pair_counts(jax.random.key(1), jnp.asarray([[L]]), sizes, eps)  # all answers 1
    zeros = rr_pair_counts(jax.random.key(2), jnp.asarray([[0.0]]), sizes, eps)  # all answers 0
    se = math.sqrt(q * (1 - q) / L)
    assert abs(float(1 - ones[0, 0] / L) - q) <= 5 * se
    assert abs(float(zeros[0, 0] / L) - q) <= 5 * se
    assert (1 - q) / q == pytest.approx(math.exp(eps), rel=1e-12)


# ----------------------------------------------------------------------------- Lemma 2
@pytest.mark.parametrize("eps, p", [(0.5, 0.8), (2.0, 0.3), (1.0, 0.5)])
def test_debiased_value_mean_and_variance(eps, p):
    """E z = p and Var z = coth²(ε/2)/4 − (p − ½)² (Lemma 2), via the per-user reference path."""
    k_y, k_rr = jax.random.split(jax.random.key(3))
    y = (jax.random.uniform(k_y, (R, 1)) < p).astype(jnp.int32)
    z = np.asarray(release_per_user(k_rr, y, eps, "debiased_rr"))[:, 0]
    var = coth(eps / 2) ** 2 / 4 - (p - 0.5) ** 2
    fourth = np.mean((z - z.mean()) ** 4)
    assert abs(z.mean() - p) <= 5 * math.sqrt(var / R)
    assert abs(z.var() - var) <= 5 * math.sqrt((fourth - var**2) / R)
    # the two values of eq. (1)
    values = np.unique(np.round(z, 12))
    np.testing.assert_allclose(
        values, [-1 / math.expm1(eps), math.exp(eps) / math.expm1(eps)], rtol=1e-10
    )


# ----------------------------------------------------------------------------- exact pmfs
def test_rr_counts_follow_the_binomial_pmf():
    """Homogeneous ε: N ~ Binomial(L, q̃) with q̃ from Lemma 1 (chi-square against scipy.stats.binom)."""
    L, eps, p = 30, 1.0, 0.7
    q = 0.5 + (p - 0.5) * math.tanh(eps / 2)
    theta = jnp.asarray([math.log(p / (1 - p)), 0.0])
    sizes = jnp.asarray([float(L)])

    def draw(key):
        k_data, k_priv = jax.random.split(key)
        return rr_pair_counts(k_priv, sample_pair_wins(k_data, theta, sizes), sizes, eps)[0, 0]

    n = np.asarray(jax.jit(jax.vmap(draw))(jax.random.split(jax.random.key(4), R))).astype(int)
    observed = np.bincount(n, minlength=L + 1)
    expected = stats.binom.pmf(np.arange(L + 1), L, q) * R
    keep = expected >= 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    assert stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-4


def test_laplace_gamma_difference_is_laplace():
    """One user: n1 + (Γ(1) − Γ(1))/ε is y + Laplace(1/ε) (KS against scipy.stats.laplace)."""
    eps = 0.7
    draw = jax.jit(
        jax.vmap(lambda k: laplace_pair_mean(k, jnp.asarray([[1.0]]), jnp.asarray([1.0]), eps)[0])
    )
    x = np.asarray(draw(jax.random.split(jax.random.key(5), R)))
    assert stats.kstest(x, stats.laplace(loc=1.0, scale=1 / eps).cdf).pvalue > 1e-4
    # several users: mean of L Laplace draws has variance 2/(ε² L)
    L = 25
    draw = jax.jit(
        jax.vmap(
            lambda k: laplace_pair_mean(k, jnp.asarray([[0.0]]), jnp.asarray([float(L)]), eps)[0]
        )
    )
    x = np.asarray(draw(jax.random.split(jax.random.key(6), R)))
    var = 2 / eps**2 / L
    assert abs(x.mean()) <= 5 * math.sqrt(var / R)
    assert abs(x.var() - var) <= 5 * math.sqrt((np.mean(x**4) - x.var() ** 2) / R)


# ----------------------------------------------------------------------------- sufficient statistics vs per-user
THETA = jnp.asarray([-1.2, 0.0, 0.4, 0.8]) - 0.0
SIZES = (7, 13)
GROUP_EPS = (0.5, 2.0)


def _closed_form_moments(mechanism):
    """E z̄ and Var z̄ per pair, written here independently of the library."""
    p = np.asarray(jax.nn.sigmoid(THETA[:, None] - THETA[None, :]))[np.triu_indices(4, 1)]
    L = sum(SIZES)
    mean, var = np.zeros_like(p), np.zeros_like(p)
    for size, eps in zip(SIZES, GROUP_EPS):
        t = math.tanh(eps / 2)
        q = 0.5 + (p - 0.5) * t
        if mechanism == "classic_rr":
            m_, v_ = q, q * (1 - q)
        elif mechanism == "debiased_rr":
            m_, v_ = p, 1 / t**2 / 4 - (p - 0.5) ** 2
        elif mechanism == "laplace":
            m_, v_ = p, p * (1 - p) + 2 / eps**2
        else:
            m_, v_ = p, p * (1 - p)
        mean += size * m_ / L
        var += size * v_ / L**2
    return mean, var


@pytest.fixture(scope="module")
def both_samplers():
    sizes = jnp.asarray(SIZES, jnp.float64)
    eps = jnp.asarray(GROUP_EPS)
    user_eps = jnp.asarray(per_user_eps(eps, sizes))
    L = sum(SIZES)

    def fast(key):
        k_data, k_priv = jax.random.split(key)
        return privatise_all(k_priv, sample_pair_wins(k_data, THETA, sizes), sizes, eps)

    def slow(key):
        k_data, k_priv = jax.random.split(key)
        y = sample_rankings_per_user(k_data, THETA, L)
        return {
            m: jnp.mean(release_per_user(jax.random.fold_in(k_priv, i), y, user_eps, m), axis=0)
            for i, m in enumerate(MECHANISMS)
        }

    fast_out = jax.jit(jax.vmap(fast))(jax.random.split(jax.random.key(7), R_SAMPLERS))
    slow_out = jax.jit(jax.vmap(slow))(jax.random.split(jax.random.key(8), R_SAMPLERS))
    return (
        {m: np.asarray(getattr(fast_out, m)) for m in MECHANISMS},
        {m: np.asarray(v) for m, v in slow_out.items()},
    )


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("sampler", ["sufficient", "per_user"])
def test_sampler_moments_match_closed_form(both_samplers, mechanism, sampler):
    """Heterogeneous ε (groups of 7 users at ε = 0.5 and 13 at ε = 2): mean and variance of z̄ per
    pair, from the sufficient-statistic sampler and from the per-user reference, each within
    5 SE at R_SAMPLERS draws (a variance 10% off is ≥ 9 SE away: at seeds 7/8, 17/18 and 27/28
    every case is within 3.1 SE, and a variance scaled by 1.1 or 0.9 is 9.4–13.9 SE off)."""
    zbar = both_samplers[0 if sampler == "sufficient" else 1][mechanism]
    mean, var = _closed_form_moments(mechanism)
    centred = zbar - zbar.mean(axis=0)
    fourth = np.mean(centred**4, axis=0)
    n = R_SAMPLERS
    assert np.all(np.abs(zbar.mean(axis=0) - mean) <= 5 * np.sqrt(var / n))
    assert np.all(
        np.abs(zbar.var(axis=0) - var) <= 5 * np.sqrt((fourth - zbar.var(axis=0) ** 2) / n)
    )


@pytest.mark.parametrize("mechanism", ["classic_rr", "debiased_rr"])
def test_rr_sampler_and_reference_have_the_same_law(both_samplers, mechanism):
    """The RR means take finitely many values: a chi-square two-sample test on their frequencies."""
    fast, slow = (np.round(s[mechanism][:, 0], 9) for s in both_samplers)
    values = np.union1d(fast, slow)
    table = np.array([[np.sum(fast == v) for v in values], [np.sum(slow == v) for v in values]])
    table = table[:, table.sum(axis=0) >= 10]
    assert stats.chi2_contingency(table).pvalue > 1e-4


# ----------------------------------------------------------------------------- common random numbers
def test_common_random_numbers():
    theta = jnp.asarray([-1.0, -0.2, 0.3, 0.9])
    sizes, eps = jnp.asarray([40.0]), jnp.asarray([1.3])
    wins = sample_pair_wins(jax.random.key(9), theta, sizes)
    means = privatise_all(jax.random.key(10), wins, sizes, eps)
    for mechanism in MECHANISMS:  # one mechanism at a time: the same draws
        np.testing.assert_array_equal(
            privatise(jax.random.key(10), wins, sizes, eps, mechanism), getattr(means, mechanism)
        )
    # classic and debiased RR share the flipped counts: z̄ = (coth(ε/2)·ỹ̄ − 1/(e^ε − 1)) exactly
    np.testing.assert_allclose(
        means.debiased_rr,
        coth(1.3 / 2) * means.classic_rr - 1 / math.expm1(1.3),
        rtol=1e-12,
        atol=1e-12,
    )
    np.testing.assert_array_equal(means.none, wins[0] / 40.0)
    # the raw wins do not depend on ε (homogeneous: one group of the same size)
    np.testing.assert_array_equal(
        sample_pair_wins(jax.random.key(9), theta, jnp.asarray([40.0])), wins
    )


def test_padding_groups_change_nothing():
    theta = jnp.asarray([-0.5, 0.1, 0.4])
    profile = homogeneous_profile(30, 0.8)
    padded = pad_profile(profile, 3)
    wins = sample_pair_wins(jax.random.key(11), theta, padded.group_sizes)
    assert float(jnp.sum(wins[1:])) == 0.0
    counts = rr_pair_counts(jax.random.key(12), wins, padded.group_sizes, padded.group_eps)
    ref = rr_pair_counts(jax.random.key(12), wins, padded.group_sizes, padded.group_eps)[:1]
    np.testing.assert_array_equal(classic_rr_mean(counts, padded.group_sizes), ref[0] / 30.0)
    np.testing.assert_allclose(
        debiased_rr_mean(counts, padded.group_sizes, padded.group_eps),
        debiased_rr_mean(ref, profile.group_sizes, profile.group_eps),
        rtol=1e-14,
    )
    assert np.all(
        np.isfinite(
            laplace_pair_mean(jax.random.key(13), wins, padded.group_sizes, padded.group_eps)
        )
    )
    assert float(privacy_G(padded.group_eps, padded.group_sizes)) == pytest.approx(coth(0.4) ** 2)
    assert float(privacy_H(padded.group_eps, padded.group_sizes)) == pytest.approx(coth(0.4))


# ----------------------------------------------------------------------------- privacy summaries
def test_privacy_summaries():
    # G(ε) = mean coth²(ε_l/2) (xu §4.1): reference values
    for eps, g in [(1.0, 4.6827), (2.0, 1.7241), (3.0, 1.2206)]:
        assert float(privacy_G(eps)) == pytest.approx(g, abs=1e-4)
        assert float(privacy_H(eps)) == pytest.approx(math.sqrt(g), abs=1e-4)
        assert float(privacy_K(eps)) == pytest.approx(1 / float(privacy_G(eps)), rel=1e-12)
    assert float(privacy_G(math.inf)) == 1.0 and float(privacy_K(math.inf)) == 1.0
    # heterogeneous: user means over groups, Jensen G ≥ 1/K (strict for a mix)
    eps, sizes = jnp.asarray([0.1, 5.0]), jnp.asarray([30.0, 70.0])
    users = per_user_eps(eps, sizes)
    assert users.shape == (100,)
    assert float(privacy_G(eps, sizes)) == pytest.approx(
        np.mean([coth(e / 2) ** 2 for e in users]), rel=1e-12
    )
    assert float(privacy_K(eps, sizes)) == pytest.approx(
        np.mean([math.tanh(e / 2) ** 2 for e in users]), rel=1e-12
    )
    assert float(privacy_H(eps, sizes)) == pytest.approx(coth(0.05), rel=1e-12)
    assert float(privacy_G(eps, sizes)) > 10 / float(privacy_K(eps, sizes))
    assert float(composed_user_budget(10, 0.5)) == pytest.approx(22.5)


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_named_profiles_resolve_to_fixed_arrays(name):
    for n_users in (1, 7, 100, 1601):
        sizes = profile_group_sizes(name, n_users)
        assert sizes.sum() == n_users and np.all(sizes >= 0)
        assert sizes.shape == (len(PROFILES[name]),)
    profile = privacy_profile(name, 100, 2.0)
    np.testing.assert_allclose(profile.group_eps, [2.0 * mult for _, mult in PROFILES[name]])
    np.testing.assert_allclose(
        profile.group_sizes, [round(100 * f) for f, _ in PROFILES[name]], atol=1
    )
    # the budgets may be traced
    traced = jax.jit(lambda e: profile_group_eps(name, e))(2.0)
    np.testing.assert_allclose(traced, profile.group_eps)


# ----------------------------------------------------------------------------- audits
def test_audits_are_within_eps():
    """The registered audit (experiments/xu/audits.py, which calls audit_pairwise with m = 10)
    at ε = 0.5 and 2, 20 000 draws per input: the empirical loss's SE is at most 0.03 (the
    Laplace case at ε = 2), so a mechanism run at 2ε or ε/2 moves the estimate by ≥ 0.25, more
    than 8 SE, and fails both the one-sided bound and the 4-SE consistency."""
    rows = xu.AUDITS[0].run(jax.random.key(14), (0.5, 2.0), 20_000)
    assert {r.mechanism for r in rows} == {"xu-classic-rr", "xu-debiased-rr", "xu-laplace"}
    assert len(rows) == 6
    for r in rows:
        assert r.exact_loss == pytest.approx(r.eps, rel=1e-9), r
        assert r.within_budget
        assert r.empirical_loss <= r.eps + 4 * r.empirical_se, r
        assert r.empirically_consistent, r
        assert "user-level budget" in r.detail


# ----------------------------------------------------------------------------- bad input
def test_bad_input_names_the_value():
    wins, sizes = jnp.asarray([[3.0]]), jnp.asarray([5.0])
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match="eps"):
            rr_pair_counts(jax.random.key(0), wins, sizes, bad)
        with pytest.raises(ValueError, match="eps"):
            privacy_G(bad)
    with pytest.raises(ValueError, match="mechanism='gaussian'"):
        privatise(jax.random.key(0), wins, sizes, 1.0, "gaussian")
    with pytest.raises(ValueError, match="profile='mixed'"):
        privacy_profile("mixed", 10, 1.0)
    with pytest.raises(ValueError, match="n_users=0"):
        privacy_profile("homogeneous", 0, 1.0)
    with pytest.raises(ValueError, match="n_users=0"):
        homogeneous_profile(0, 1.0)
    with pytest.raises(ValueError, match="group_sizes"):
        rr_pair_counts(jax.random.key(0), wins, jnp.asarray([0.0]), 1.0)
    with pytest.raises(ValueError, match="group_sizes=-2"):
        sample_pair_wins(jax.random.key(0), jnp.zeros(3), jnp.asarray([-2.0]))
    with pytest.raises(ValueError, match="n_items=1"):
        composed_user_budget(1, 1.0)


def _eps_checks(monkeypatch) -> list:
    """The names under which ε is validated (dpsim.validate.check with the EPS requirement)."""
    from dpsim import validate

    seen, check = [], validate.check
    monkeypatch.setattr(
        validate,
        "check",
        lambda name, value, requirement: (
            seen.append(name) if requirement is validate.EPS else None,
            check(name, value, requirement),
        )[1],
    )
    return seen


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_eps_is_checked_once_per_call_chain_under_the_callers_name(monkeypatch, mechanism):
    """privatise and release_per_user validate ε once (group_eps / user_eps) and call the
    unchecked randomized_response kernels; a bad ε reads as it did when checked twice."""
    seen = _eps_checks(monkeypatch)
    key, wins, sizes = jax.random.key(0), jnp.asarray([[3.0, 1.0]]), jnp.asarray([5.0])
    calls = {
        "privatise": lambda eps: privatise(key, wins, sizes, eps, mechanism),
        "release_per_user": lambda eps: release_per_user(key, jnp.ones((2, 2)), eps, mechanism),
    }
    for name, call in calls.items():
        seen.clear()
        call(jnp.asarray([1.0]))
        want = (
            []
            if (name, mechanism) == ("privatise", "none")
            else ["user_eps" if name == "release_per_user" else "group_eps"]
        )
        assert seen == want, (name, seen)
    if mechanism != "none":
        with pytest.raises(
            ValueError, match=r"^group_eps=0 must be > 0 \(inf for the non-private case\)$"
        ):
            privatise(key, wins, sizes, 0, mechanism)
    with pytest.raises(
        ValueError, match=r"^user_eps=-1.0 must be > 0 \(inf for the non-private case\)$"
    ):
        release_per_user(key, jnp.ones((2, 2)), -1.0, mechanism)


def test_the_group_samplers_check_eps_once(monkeypatch):
    seen = _eps_checks(monkeypatch)
    key, wins, sizes = jax.random.key(0), jnp.asarray([[3.0, 1.0]]), jnp.asarray([5.0])
    for name, call in (
        ("privatise_all", lambda: privatise_all(key, wins, sizes, 1.0)),
        ("rr_pair_counts", lambda: rr_pair_counts(key, wins, sizes, 1.0)),
        ("debiased_rr_mean", lambda: debiased_rr_mean(wins, sizes, 1.0)),
    ):
        seen.clear()
        call()
        assert seen == ["group_eps"], (name, seen)
