"""The private Rasch spectral estimators (nguyen §4, Algorithm 2): the counts' sensitivity on
neighbouring data sets, the noise calibration of every accounting mode against reference
values (docs/nguyen.md, Mechanisms and estimators), the noising options, sparsification and its connectivity rule, the
end-to-end estimators (large-ε limits, vmap safety), and bad input."""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpsim  # noqa: F401
from dpsim.estimators.private_spectral import private_spectral_estimate, rr_spectral_estimate
from dpsim.estimators.spectral import differential_counts, spectral_estimate
from dpsim.linalg import batched_lapack_calls
from dpsim.mechanisms.count_noise import (
    count_sensitivity,
    gaussian_count_sigma,
    laplace_count_scale,
    private_differential_counts,
    privatise_counts,
)
from dpsim.mechanisms.shuffle import randomize_responses
from dpsim.mechanisms.sparsify import (
    dense_item_graph,
    er_item_graph,
    sparsification_graph,
    sparsification_p0,
)
from dpsim.mechanisms.zcdp import zcdp_rho
from dpsim.models.rasch import rasch_abilities, rasch_difficulties, sample_rasch_responses
from dpsim.theory.nguyen import laplace_gauss_sigma_ratio


def _row_counts(x, obs):
    return np.asarray(differential_counts(x[None, :], obs[None, :]))


def test_sensitivity_exhaustive_over_rows_with_missing_entries():
    """m = 4: every pair of rows over {0, 1, missing}⁴ (81² pairs): |ΔY_ij| ≤ 1 and
    ‖ΔY‖₂² ≤ 2⌊m²/4⌋ = 8, attained (nguyen Lemma 4.1, §4.2). Other users cancel from ΔY."""
    m = 4
    states = list(itertools.product((0, 1, 2), repeat=m))  # 2 = missing
    counts = {}
    for s in states:
        s = np.asarray(s)
        counts[tuple(s)] = _row_counts(s == 1, s != 2)
    worst_sq, worst_abs = 0.0, 0.0
    for a, b in itertools.product(states, repeat=2):
        d = counts[a] - counts[b]
        worst_sq = max(worst_sq, float(np.sum(d * d)))
        worst_abs = max(worst_abs, float(np.max(np.abs(d))))
    assert worst_abs == 1 and worst_sq == 2 * (m * m // 4)


def test_sensitivity_on_random_neighbouring_datasets():
    """300 random data sets (m = 9, 30 users, p = 0.7) with one user's row replaced: every
    |ΔY_ij| ≤ 1 and ‖ΔY‖₂² ≤ 2⌊81/4⌋ = 40; the balanced row against its complement
    attains 40."""
    rng = np.random.default_rng(0)
    m = 9
    for _ in range(300):
        x = rng.uniform(size=(30, m)) < 0.5
        obs = rng.uniform(size=(30, m)) < 0.7
        x2, obs2 = x.copy(), obs.copy()
        x2[5] = rng.uniform(size=m) < 0.5
        obs2[5] = rng.uniform(size=m) < 0.7
        d = np.asarray(differential_counts(x & obs, obs)) - np.asarray(
            differential_counts(x2 & obs2, obs2)
        )
        assert np.max(np.abs(d)) <= 1 and np.sum(d * d) <= 40
    row = np.arange(m) < 5
    d = _row_counts(row, np.ones(m, bool)) - _row_counts(~row, np.ones(m, bool))
    assert np.sum(d * d) == 40


@pytest.mark.parametrize(
    "m, sigma", [(3, 10.5), (4, 14.9), (5, 19.2), (25, 105), (50, 212), (100, 427), (200, 856)]
)
def test_gaussian_sigma_matches_the_spec_table(m, sigma):
    """docs/nguyen.md, Mechanisms and estimators at ε* = 1, δ = 1e-4: σ = √(m(m−1))/ε₀ (paper accounting and conversion),
    the synthetic script's σ/√2, and the tight joint √(2⌊m²/4⌋)/ε₀."""
    rho = zcdp_rho(1.0, 1e-4, "paper")
    g = dense_item_graph(m)
    assert float(gaussian_count_sigma(rho, g, "paper")) == pytest.approx(sigma, rel=5e-3)
    assert float(gaussian_count_sigma(rho, g, "synthetic_code")) == pytest.approx(
        sigma / math.sqrt(2), rel=5e-3
    )
    eps0 = 1 / math.sqrt(2 * math.log(1e4))
    assert float(gaussian_count_sigma(rho, g, "tight_joint")) == pytest.approx(
        math.sqrt(2 * (m * m // 4)) / eps0, rel=1e-12
    )


@pytest.mark.parametrize("m, scale", [(5, 20), (25, 600), (100, 9900), (200, 39800)])
def test_laplace_scale_matches_the_spec_table(m, scale):
    g = dense_item_graph(m)
    assert float(laplace_count_scale(1.0, g, "paper")) == pytest.approx(scale, rel=1e-12)
    assert float(laplace_count_scale(1.0, g, "tight_joint")) == pytest.approx(
        2 * (m * m // 4), rel=1e-12
    )


@pytest.mark.parametrize("m, ratio", [(3, 0.81), (4, 1.14), (5, 1.47), (25, 8.1), (200, 66)])
def test_laplace_to_gauss_noise_ratio(m, ratio):
    """σ_Lap/σ_Gauss = √(m(m−1)/ln(1/δ)) under the paper's accounting (docs/nguyen.md, Mechanisms and estimators; Predictions (R9)): the
    standard deviation of Lap_ℤ(t) (≈ √2·t) over σ, and the theory function."""
    g = dense_item_graph(m)
    t = float(laplace_count_scale(1.0, g, "paper"))
    a = math.exp(-1 / t)
    sd_lap = math.sqrt(2 * a) / (1 - a)
    sd_gauss = float(gaussian_count_sigma(zcdp_rho(1.0, 1e-4, "paper"), g, "paper"))
    assert sd_lap / sd_gauss == pytest.approx(ratio, rel=1e-2)
    assert float(laplace_gauss_sigma_ratio(m, 1e-4)) == pytest.approx(sd_lap / sd_gauss, rel=2e-3)


def test_sparse_sensitivity_counts_edges():
    g = np.zeros((6, 6), bool)
    for i, j in ((0, 1), (1, 2), (2, 3), (4, 5)):
        g[i, j] = g[j, i] = True
    g = jnp.asarray(g)
    assert float(count_sensitivity(g, "paper")) == 8  # ΣG = 2|E|
    assert float(count_sensitivity(g, "synthetic_code")) == 4  # |E|
    assert float(count_sensitivity(g, "tight_joint")) == 8  # 2·min(|E|, ⌊36/4⌋)
    dense5 = dense_item_graph(5)
    assert float(count_sensitivity(dense5, "tight_joint")) == 12  # 2⌊25/4⌋, not 2|E| = 20


def test_privatise_counts_modes():
    """Noise on counts far from the clip is N_ℤ(0, σ²): mean 0 and variance σ² within 5 SE
    over 40 000 counts; clipping and masking rules of docs/nguyen.md, Mechanisms and estimators."""
    n = 200
    Y = jnp.full((n, n), 1000.0) * (1 - jnp.eye(n))
    g = dense_item_graph(n)
    noisy, fails = privatise_counts(jax.random.key(0), Y, g, 7.0)
    z = np.asarray(noisy - Y)[~np.eye(n, dtype=bool)]
    assert int(fails) == 0
    assert abs(z.mean()) <= 5 * 7 / math.sqrt(z.size)
    assert abs(z.var() - 49) <= 5 * 49 * math.sqrt(2 / z.size)
    small = jnp.asarray([[0.0, 0.0, 3.0], [2.0, 0.0, 0.0], [5.0, 1.0, 0.0]])
    g3 = jnp.asarray([[False, True, True], [True, False, False], [True, False, False]])
    for clip, floor in (("one", 1.0), ("zero", 0.0)):
        out, _ = privatise_counts(jax.random.key(1), small, g3, 50.0, clip=clip)
        out = np.asarray(out)
        assert out[1, 2] == 0 and out[2, 1] == 0 and np.all(np.diag(out) == 0)  # off the graph
        assert np.all(out[np.asarray(g3)] >= floor)
    out, _ = privatise_counts(jax.random.key(2), small, g3, 50.0, noise="nonzero")
    assert (
        float(out[0, 1]) == 0.0
    )  # a zero count stays 0, un-noised (docs/nguyen.md, Errata and modes (Q2))
    out, _ = privatise_counts(jax.random.key(2), small, g3, 50.0, noise="all")
    assert float(out[0, 1]) >= 1.0
    lap, _ = privatise_counts(jax.random.key(3), Y, g, 7.0, mechanism="laplace")
    a = math.exp(-1 / 7)
    z = np.asarray(lap - Y)[~np.eye(n, dtype=bool)]
    assert abs(z.var() - 2 * a / (1 - a) ** 2) <= 5 * math.sqrt(5) * (
        2 * a / (1 - a) ** 2
    ) / math.sqrt(z.size)


@pytest.mark.parametrize(
    "m, syn, real",
    [
        (3, 0.581, 1.0),
        (5, 0.511, 0.929),
        (25, 0.204, 0.372),
        (100, 0.073, 0.133),
        (200, 0.042, 0.076),
    ],
)
def test_p0_rules(m, syn, real):
    """The authors' p₀ rules 1.1·log₂m/m and 2·log₂m/m, capped at 1 (nguyen §4.3, Algorithm 2;
    docs/nguyen.md, Errata and modes (A4))."""
    assert sparsification_p0(m, "code_synthetic") == pytest.approx(syn, abs=6e-4)
    assert sparsification_p0(m, "code_real") == pytest.approx(real, abs=6e-4)
    assert sparsification_p0(m, "log", c=1.0) == pytest.approx(min(1, math.log(m) / m))
    assert sparsification_p0(m, "fixed", value=0.3) == 0.3


def test_er_graph_and_connectivity_rule():
    """ER(m, p₀): symmetric, no loops, edge frequency p₀ (5 SE). At p₀ = ln m/m (m = 30)
    P(connected) ≈ 0.3: the unchecked draws include disconnected graphs; the resampled ones
    are all connected, and their mean rejection count agrees with (1 − q)/q, q the connected
    fraction of the unchecked draws (5 SE by the delta method, 400 draws each)."""
    m, reps = 30, 400
    p0 = math.log(m) / m
    keys = jax.random.split(jax.random.key(4), reps)
    g = np.asarray(jax.vmap(lambda k: er_item_graph(k, m, p0))(keys))
    assert np.all(g == np.swapaxes(g, 1, 2)) and not np.any(g[:, np.arange(m), np.arange(m)])
    freq = g[:, np.triu_indices(m, 1)[0], np.triu_indices(m, 1)[1]].mean()
    assert abs(freq - p0) <= 5 * math.sqrt(p0 * (1 - p0) / (reps * m * (m - 1) / 2))
    free = jax.jit(jax.vmap(lambda k: sparsification_graph(k, m, p0, connect=False)))(keys)
    fixed = jax.jit(jax.vmap(lambda k: sparsification_graph(k, m, p0)))(
        jax.random.split(jax.random.key(5), reps)
    )
    q = float(free.connected.mean())
    assert 0.05 < q < 0.9 and np.all(np.asarray(free.rejections) == 0)
    assert bool(fixed.connected.all())
    rej = np.asarray(fixed.rejections)
    want = (1 - q) / q
    se = math.sqrt(rej.var() / reps + (q * (1 - q) / reps) / q**4)
    assert abs(rej.mean() - want) <= 5 * se
    capped = sparsification_graph(jax.random.key(6), m, 0.01, max_tries=3)
    assert not bool(capped.connected) and int(capped.rejections) == 2


def _setup(n_users=600, n_items=12):
    beta = rasch_difficulties(jax.random.key(20), n_items)
    theta = rasch_abilities(jax.random.key(21), n_users)
    r = sample_rasch_responses(jax.random.key(22), theta, beta, 1.0)
    return beta, r, differential_counts(r.x, r.observed)


def test_private_estimators_reduce_to_the_non_private_one_at_huge_budgets():
    """ρ, ε → ∞: the noise (σ ~ 1e-3, t ~ 1e-4) never moves a count, so β̂ equals the
    non-private estimate; the same for RR at ε_RR = 1e4 (flip probability e^{−833})."""
    beta, r, Y = _setup()
    base = np.asarray(spectral_estimate(Y).theta)
    for fit in (
        private_spectral_estimate(private_differential_counts(jax.random.key(0), Y, rho=1e8)),
        private_spectral_estimate(
            private_differential_counts(jax.random.key(0), Y, rho=1e8, p0=1.0)
        ),
        private_spectral_estimate(
            private_differential_counts(jax.random.key(0), Y, mechanism="laplace", eps=1e6)
        ),
        rr_spectral_estimate(
            randomize_responses(jax.random.key(0), r.x, r.observed, 1e4), r.observed
        ),
    ):
        np.testing.assert_allclose(np.asarray(fit.theta), base, atol=1e-12)


def test_private_estimator_diagnostics_faithful_mode_and_vmap():
    beta, r, Y = _setup()
    rho = zcdp_rho(1.0, 1e-4)

    def run(key, rho_):
        dense = private_spectral_estimate(private_differential_counts(key, Y, rho=rho_))
        sparse = private_spectral_estimate(private_differential_counts(key, Y, rho=rho_, p0=0.4))
        faithful = private_spectral_estimate(
            private_differential_counts(
                key,
                Y,
                rho=rho_,
                accounting="synthetic_code",
                noise="nonzero",
                p0=0.4,
                connect=False,
            ),
            solver="power_lazy",
        )
        return dense, sparse, faithful

    f = jax.jit(jax.vmap(run, in_axes=(0, None)))
    keys = jax.random.split(jax.random.key(1), 3)
    dense, sparse, faithful = f(keys, rho)
    assert batched_lapack_calls(f.lower(keys, rho).compile().as_text()) == []
    assert np.all(np.asarray(dense.info["sampler_failures"]) == 0)
    assert float(dense.info["noise_scale"][0]) == pytest.approx(
        math.sqrt(2 * 36 / (2 * rho)), rel=1e-12
    )
    assert bool(sparse.info["graph_connected"].all()) and bool(dense.info["connected"].all())
    assert np.all(np.asarray(faithful.converged)) and faithful.iterations is not None
    # the noise costs accuracy, but the estimate keeps the signal at ε* = 1, m = 12, n = 600
    err = np.linalg.norm(np.asarray(dense.theta) - np.asarray(beta), axis=1)
    assert np.all(err < float(jnp.linalg.norm(beta)))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(mechanism="gauss", rho=1.0), "mechanism='gauss'"),
        (dict(rho=1.0, accounting="joint"), "accounting='joint'"),
        (dict(rho=1.0, clip="two"), "clip='two'"),
        (dict(rho=1.0, noise="some"), "noise='some'"),
        (dict(rho=-1.0), "rho=-1.0"),
        (dict(mechanism="laplace", eps=0.0), "eps=0.0"),
        (dict(rho=1.0, p0=0.0), "p0=0.0"),
        (dict(rho=1.0, p0=1.5), "p0=1.5"),
        (dict(), "needs rho"),
        (dict(mechanism="laplace"), "needs eps"),
    ],
)
def test_bad_input_names_the_value(kwargs, message):
    Y = jnp.ones((4, 4)) - jnp.eye(4)
    with pytest.raises(ValueError, match=message):
        private_differential_counts(jax.random.key(0), Y, **kwargs)


def test_bad_sizes_and_rules():
    with pytest.raises(ValueError, match="n_items=1"):
        private_differential_counts(jax.random.key(0), jnp.zeros((1, 1)), rho=1.0)
    with pytest.raises(ValueError, match="n_items=1"):
        sparsification_p0(1)
    with pytest.raises(ValueError, match="rule='paper'"):
        sparsification_p0(10, "paper")
    with pytest.raises(ValueError, match="p0=0.0"):
        sparsification_p0(10, "fixed", value=0.0)
    with pytest.raises(ValueError, match="eps_rr=0.0"):
        randomize_responses(jax.random.key(0), jnp.zeros((3, 4), bool), jnp.ones((3, 4), bool), 0.0)
