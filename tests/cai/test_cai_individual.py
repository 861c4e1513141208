"""Individual-DP pieces of cai (cai §3.1; Algorithm 1 under individual DP, §3.2; Algorithm 3, §3.3; docs/cai.md, Mechanisms and estimators; Errata and modes (E3, E17)): the count
generator, Algorithm 1 (individual) and the unpenalised MLE against choix, the one-shot
baseline against numpy / choix references, the calibrations, and the connectivity guard."""

import functools
import math

import choix
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpsim  # noqa: F401  (float64)
from dpsim.estimators import (
    ergodicity_coefficient,
    guarded_penalised_mle,
    one_shot_statistics,
    rank_centrality_transition,
    stationary_distribution,
    unpenalised_mle,
)
from dpsim.graph import strongly_connected
from dpsim.mechanisms import (
    individual_count_noise_scale,
    individual_objective_perturbation,
    laplace_noise,
    noisy_counts_individual,
    one_shot_noise_scale,
    one_shot_scores,
)
from dpsim.models import (
    PROBIT,
    aggregate_user_comparisons,
    sample_er_comparisons,
    sample_user_comparisons,
    sample_user_comparisons_per_user,
    theta_cai_design,
    uniform_multinomial,
    win_counts,
)
from cai_fits import alg1_individual

Z = 4.5  # Monte-Carlo tolerance in standard errors (many comparisons per test)


def _theta(n, seed=0):
    return theta_cai_design(jax.random.key(seed), n, k=n // 4 if n >= 4 else 1, top_first=True)


@functools.lru_cache(maxsize=None)
def _user_data(n=8, m=200, L=5, seed=1):
    theta = _theta(n, seed)
    return theta, sample_user_comparisons(jax.random.key(seed + 100), theta, m, L)


# --------------------------------------------------------------------------- generator


def _numpy_per_comparison(rng, theta, n_users, per_user):
    """Reference: the authors' procedure, one pair and one outcome per comparison (cai §3.1;
    the users' draws are i.i.d., so all m·L comparisons are drawn in one vectorised step)."""
    n = len(theta)
    i, j = np.triu_indices(n, 1)
    idx = rng.integers(0, len(i), size=n_users * per_user)
    a, b = i[idx], j[idx]
    a_wins = rng.random(len(idx)) < 1.0 / (1.0 + np.exp(-(theta[a] - theta[b])))
    W = np.zeros((n, n))
    np.add.at(W, (np.where(a_wins, a, b), np.where(a_wins, b, a)), 1.0)
    return W


def _mean_and_var_se(x):
    """Sample mean and variance per column with their Monte-Carlo standard errors."""
    r = x.shape[0]
    mean, var = x.mean(0), x.var(0, ddof=1)
    m4 = ((x - mean) ** 4).mean(0)
    return mean, np.sqrt(var / r), var, np.sqrt(np.maximum(m4 - var**2, 1e-12) / r)


def test_count_generator_matches_per_comparison_loop_in_distribution():
    n, m, L, reps = 5, 30, 4, 3000
    theta = np.asarray(_theta(n))
    keys = jax.random.split(jax.random.key(7), reps)
    # n_users and per_user are traced arguments here (they need not be static)
    sampler = jax.jit(
        jax.vmap(
            lambda k, m_, L_: sample_user_comparisons(k, jnp.asarray(theta), m_, L_),
            in_axes=(0, None, None),
        )
    )
    W_jax = np.asarray(sampler(keys, float(m), float(L)))
    rng = np.random.default_rng(3)
    W_np = np.stack([_numpy_per_comparison(rng, theta, m, L) for _ in range(reps)])

    i, j = np.triu_indices(n, 1)
    total, pairs = m * L, len(i)
    sig = 1.0 / (1.0 + np.exp(-(theta[i] - theta[j])))
    for name, get in (("M", lambda W: W[:, i, j] + W[:, j, i]), ("W", lambda W: W[:, i, j])):
        a_mean, a_mse, a_var, a_vse = _mean_and_var_se(get(W_jax))
        b_mean, b_mse, b_var, b_vse = _mean_and_var_se(get(W_np))
        assert np.all(np.abs(a_mean - b_mean) <= Z * np.hypot(a_mse, b_mse)), name
        assert np.all(np.abs(a_var - b_var) <= Z * np.hypot(a_vse, b_vse)), name
        # exact marginals: M_ij ~ Bin(mL, 1/P), W_ij ~ Bin(mL, σ_ij/P)
        q = np.full(pairs, 1.0 / pairs) if name == "M" else sig / pairs
        assert np.all(np.abs(a_mean - total * q) <= Z * a_mse), name
        assert np.all(np.abs(a_var - total * q * (1 - q)) <= Z * a_vse), name

    # every replicate has exactly mL comparisons, integer counts, empty diagonal
    assert np.all(W_jax.sum((1, 2)) == total)
    assert np.all(W_jax == np.round(W_jax)) and np.all(W_jax >= 0)
    assert np.all(np.einsum("rii->ri", W_jax) == 0)
    # multinomial dependence: Cov(M_01, M_02) = −mL/P²
    M = W_jax[:, i, j] + W_jax[:, j, i]
    cov = np.cov(M[:, 0], M[:, 1])[0, 1]
    se = np.std((M[:, 0] - M[:, 0].mean()) * (M[:, 1] - M[:, 1].mean())) / np.sqrt(reps)
    assert abs(cov + total / pairs**2) <= Z * se


def test_uniform_multinomial_is_exact_and_accepts_traced_totals():
    reps = 4000
    totals = jnp.asarray([0.0, 1.0, 7.0, 1000.0] + [60.0] * (reps - 4))
    f = jax.jit(jax.vmap(lambda key, total: uniform_multinomial(key, total, 13)))
    draws = np.asarray(f(jax.random.split(jax.random.key(0), reps), totals))
    assert draws.shape == (reps, 13) and draws.min() >= 0 and np.all(draws == np.round(draws))
    np.testing.assert_array_equal(draws.sum(1), np.asarray(totals))
    np.testing.assert_allclose(draws[4:].mean(0), 60 / 13, atol=Z * np.sqrt(60 / 13 / reps))


def test_per_user_sampler_shapes_and_aggregation():
    n, m, L = 7, 50, 5
    theta = _theta(n)
    data = jax.jit(sample_user_comparisons_per_user, static_argnums=(2, 3))(
        jax.random.key(2), theta, m, L
    )
    assert data.first.shape == data.second.shape == data.first_wins.shape == (m, L)
    assert bool(jnp.all(data.first < data.second))
    W = jax.jit(aggregate_user_comparisons, static_argnums=1)(data, n)
    assert float(W.sum()) == m * L
    winners = np.where(data.first_wins, data.first, data.second)
    np.testing.assert_array_equal(
        np.asarray(win_counts(W)), np.bincount(np.asarray(winners).ravel(), minlength=n)
    )


# --------------------------------------------------------------------------- calibration


def test_individual_calibration_formulas():
    cal = individual_objective_perturbation(0.5, 5)
    assert float(cal.lam) == pytest.approx(80.0) and float(cal.gamma) == pytest.approx(
        20.0
    )  # 8L/ε, 2L/ε
    cal = individual_objective_perturbation(2.0, 3, PROBIT)  # κ1 = ∞, κ2 = 1
    assert math.isinf(float(cal.lam)) and float(cal.gamma) == pytest.approx(12.0)
    cal = individual_objective_perturbation(math.inf, 5)
    assert float(cal.lam) == 0.0 and float(cal.gamma) == 0.0
    # docs/cai.md, Errata and modes (E1) option: γ = max(8Lκ2/ε, c0√(S log n)), S = 2mL/n
    cal = individual_objective_perturbation(1.0, 5, c0=2.0, n_items=16, n_users=1000)
    assert float(cal.gamma) == pytest.approx(
        max(10.0, 2.0 * math.sqrt(2 * 1000 * 5 / 16 * math.log(16)))
    )
    with pytest.raises(ValueError):
        individual_objective_perturbation(1.0, 5, c0=2.0)


def test_count_noise_scale_modes():
    assert float(individual_count_noise_scale(0.5, 5)) == pytest.approx(20.0)  # strict default
    assert float(individual_count_noise_scale(0.5, 5, "strict")) == pytest.approx(20.0)
    assert float(individual_count_noise_scale(0.5, 5, "paper")) == pytest.approx(10.0)
    assert float(individual_count_noise_scale(math.inf, 5, "paper")) == 0.0
    with pytest.raises(ValueError, match="'loose'"):
        individual_count_noise_scale(1.0, 5, "loose")


@pytest.mark.parametrize("mode, factor", [("paper", 1.0), ("strict", 2.0)])
def test_algorithm3_noise_has_the_mode_scale(mode, factor):
    _, W = _user_data()
    eps, L, reps = 1.5, 5, 20000
    keys = jax.random.split(jax.random.key(11), reps)
    noise = jax.vmap(lambda k: noisy_counts_individual(k, W, eps, L, mode))(keys) - win_counts(W)
    b = factor * L / eps  # E|Laplace(b)| = b, sd |Laplace(b)| = b
    mad = np.abs(np.asarray(noise)).mean(0)
    assert np.all(np.abs(mad - b) <= Z * b / np.sqrt(reps))
    np.testing.assert_array_equal(
        noisy_counts_individual(keys[0], W, math.inf, L, mode), win_counts(W)
    )


# --------------------------------------------------------------------------- MLE vs choix


def test_unpenalised_mle_matches_choix():
    theta, W = _user_data()
    fit = jax.jit(unpenalised_mle)(W)
    assert (
        bool(fit.converged)
        and bool(fit.info["strongly_connected"])
        and float(fit.info["gamma"]) == 0.0
    )
    ref = choix.ilsr_pairwise_dense(np.asarray(W), alpha=0.0, tol=1e-13, max_iter=10000)
    np.testing.assert_allclose(np.asarray(fit.theta_centred), ref - ref.mean(), atol=1e-6)
    assert abs(float(fit.theta_centred.sum())) < 1e-10


def _choix_data(W):
    W = np.asarray(W).astype(int)
    return [(a, b) for a in range(W.shape[0]) for b in range(W.shape[0]) for _ in range(W[a, b])]


def test_penalised_individual_mle_matches_choix():
    theta, W = _user_data(n=8, m=120, L=5)
    eps, L = 1.0, 5
    gamma = float(individual_objective_perturbation(eps, L).gamma)  # 2L/ε = 10
    fit = guarded_penalised_mle(W, gamma)
    # choix's objective is alpha·‖θ‖² + NLL, so alpha = γ/2
    ref = choix.opt_pairwise(8, _choix_data(W), alpha=gamma / 2, method="Newton-CG", tol=1e-12)
    np.testing.assert_allclose(np.asarray(fit.theta), ref, atol=1e-6)
    np.testing.assert_allclose(np.asarray(fit.theta_centred), ref - ref.mean(), atol=1e-6)


def test_perturbed_individual_mle_is_algorithm_1():
    _, W = _user_data()
    key, eps, L = jax.random.key(5), 0.8, 5
    fit = jax.jit(alg1_individual)(key, W, eps, L)
    cal = individual_objective_perturbation(eps, L)
    w = laplace_noise(key, cal.lam, (W.shape[0],))
    assert float(fit.info["gamma"]) == pytest.approx(2 * L / eps) and bool(fit.converged)
    # first-order condition of argmin 𝓛 + (γ/2)‖θ‖² + wᵀθ, with 1ᵀθ̃ = −1ᵀw/γ (docs/cai.md, Mechanisms and estimators)
    theta = np.asarray(fit.theta)
    Wn = np.asarray(W)
    sig = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))
    grad = ((Wn + Wn.T) * sig).sum(1) - Wn.sum(1) + cal.gamma * theta + np.asarray(w)
    assert np.max(np.abs(grad)) < 1e-8
    assert theta.sum() == pytest.approx(-float(w.sum()) / float(cal.gamma), abs=1e-8)
    # ε = ∞: no noise, γ = 0: the unpenalised MLE
    inf_fit = alg1_individual(key, W, math.inf, L)
    np.testing.assert_allclose(inf_fit.theta_centred, unpenalised_mle(W).theta_centred, atol=1e-12)


# --------------------------------------------------------------------------- connectivity guard


def test_strong_connectivity():
    cycle = jnp.zeros((3, 3)).at[0, 1].set(1).at[1, 2].set(1).at[2, 0].set(1)
    chain = jnp.zeros((3, 3)).at[0, 1].set(1).at[1, 2].set(1)  # connected, not strongly
    two_parts = jnp.zeros((4, 4)).at[0, 1].set(1).at[1, 0].set(1).at[2, 3].set(1).at[3, 2].set(1)
    f = jax.jit(strongly_connected)
    assert bool(f(cycle)) and not bool(f(chain)) and not bool(f(two_parts))
    assert list(np.asarray(jax.vmap(strongly_connected)(jnp.stack([cycle, chain])))) == [
        True,
        False,
    ]


def test_unpenalised_mle_guard_on_disconnected_graph():
    _, W = _user_data()
    loser = W.at[0, :].set(0.0)  # item 0 never wins: the MLE sends θ_0 → −∞
    split = W.at[:4, 4:].set(0.0).at[4:, :4].set(0.0)  # two components
    for bad in (loser, split):
        fit = jax.jit(unpenalised_mle)(bad)
        assert not bool(fit.info["strongly_connected"])
        assert float(fit.info["gamma"]) == pytest.approx(1e-8)
        assert bool(jnp.all(jnp.isfinite(fit.theta_centred)))
    assert float(jax.jit(unpenalised_mle)(loser).theta_centred[0]) < -5.0
    ok = unpenalised_mle(W)
    assert bool(ok.info["strongly_connected"]) and float(ok.info["gamma"]) == 0.0
    # with γ > 0 the guard changes nothing
    assert float(guarded_penalised_mle(loser, 3.0).info["gamma"]) == 3.0


# --------------------------------------------------------------------------- one-shot (docs/cai.md, Mechanisms and estimators)


def _edge_data(n=30, seed=0):
    theta = theta_cai_design(jax.random.key(seed), n)
    return sample_er_comparisons(jax.random.key(seed + 1), theta, 1.0)


def test_stationary_distribution_matches_numpy_and_choix():
    n = 30
    W = _edge_data(n)
    P = rank_centrality_transition(W, float(n))
    Pn = np.asarray(P)
    assert np.allclose(Pn.sum(1), 1.0) and np.all(Pn >= 0)
    i, j = 3, 7
    assert Pn[i, j] == pytest.approx(float(W[j, i]) / n)  # moves towards the winner
    pi = np.asarray(stationary_distribution(P))
    values, vectors = np.linalg.eig(Pn.T)
    ref = np.real(vectors[:, np.argmin(np.abs(values - 1.0))])
    ref = ref / ref.sum()
    np.testing.assert_allclose(pi, ref, atol=1e-12)
    rc = choix.rank_centrality(n, _choix_data(W))  # log-centred stationary distribution
    np.testing.assert_allclose(np.log(pi) - np.log(pi).mean(), rc, atol=1e-9)


def test_ergodicity_coefficient_and_one_shot_scale():
    n, k, eps = 30, 8, 2.0
    W = _edge_data(n)
    P = rank_centrality_transition(W, float(n))
    Pn = np.asarray(P)
    brute = 0.5 * np.abs(Pn[:, None, :] - Pn[None, :, :]).sum(-1).max()
    rho = float(ergodicity_coefficient(P))
    assert rho == pytest.approx(brute, abs=1e-14) and 0 < rho < 1
    stats = one_shot_statistics(W, 1.0)
    assert float(stats.ergodicity) == pytest.approx(brute, abs=1e-14) and float(stats.degree) == n
    out = jax.jit(one_shot_scores, static_argnums=(4,))(
        jax.random.key(0), stats.stationary, stats.ergodicity, stats.degree, k, eps
    )
    s = 2.0 / (n * (1 - brute))
    expected = 8 * s * math.sqrt(k * math.log(n / (1 / n**2))) / eps
    assert float(out.noise_scale) == pytest.approx(expected)
    assert float(one_shot_noise_scale(brute, n, k, n, eps)) == pytest.approx(expected)
    np.testing.assert_allclose(out.stationary, stationary_distribution(P), atol=1e-14)
    noise = out.scores - out.stationary
    np.testing.assert_allclose(noise, laplace_noise(jax.random.key(0), expected, (n,)), rtol=1e-10)


# --------------------------------------------------------------------------- real data (Fig. 8)


def test_bundled_win_matrices_match_the_spec():
    from dpsim.experiments.cai.figures.individual import CEMS, IMMIGRATION

    assert CEMS.items[1] == "London" and CEMS.per_user == 15
    np.testing.assert_array_equal(CEMS.W.sum(1), [614, 1082, 511, 737, 631, 392])
    assert CEMS.W.sum() == 3967
    pair_totals = (CEMS.W + CEMS.W.T)[np.triu_indices(6, 1)]
    assert pair_totals.min() == 180 and pair_totals.max() == 284
    np.testing.assert_array_equal(IMMIGRATION.W.sum(1), [135, 63, 131, 50])
    assert IMMIGRATION.W.sum() == 379 and IMMIGRATION.per_user == 6


def test_load_user_win_matrix(tmp_path):
    from dpsim.engine import UsageError
    from dpsim.datasets import load_win_matrix
    from dpsim.engine.definition.grid import expand_grid
    from dpsim.experiments.cai.figures.individual import real_data_experiment

    plain = tmp_path / "plain.csv"
    plain.write_text("0,3,1\n2,0,4\n5,1,0\n")
    wm = load_win_matrix(plain, per_user=2)
    assert wm.n_items == 3 and wm.W[2, 0] == 5 and wm.items == ("item1", "item2", "item3")
    exp = real_data_experiment("mine", "my data", [wm], reps=3, eps=[1.0])
    (shape,) = expand_grid(exp).shapes
    assert shape["dataset"] == "plain" and shape["per_user"] == 2 and shape["n_items"] == 3
    bad = tmp_path / "bad.csv"
    bad.write_text("1,3\n2,0\n")
    with pytest.raises(UsageError, match="diagonal"):
        load_win_matrix(bad, per_user=1)
    bad.write_text("0,-3\n2,0\n")
    with pytest.raises(UsageError, match="non-negative"):
        load_win_matrix(bad, per_user=1)


def test_experiments_are_registered():
    from dpsim.engine.registry import installed

    found = installed()
    for name in ("cai-fig4", "cai-fig5", "cai-fig6", "cai-fig7", "cai-fig8"):
        assert name in found.experiments
    assert found.experiments["cai-fig5"].axes["mode"] == ["paper"]
    assert "cai-indiv-linf-increases-in-n" in found.checks
