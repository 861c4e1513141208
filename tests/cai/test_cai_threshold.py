"""The top-k phase transition (docs/cai.md, Model; Predictions (item 5)): the two-block instance, the
direct win-count sampler, the ThresholdCollapseCheck logic (it passes for the right rate
and fails for a wrong one), and small runs of ``cai-threshold`` / ``-individual``."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from dpsim.theory import cai as cai_theory
from dpsim.engine import ThresholdCollapseCheck, UsageError
from dpsim.engine.definition.grid import expand_grid
from dpsim.engine.execution.runner import run_experiment
from dpsim.engine.storage.store import load_results
from dpsim.models import PROBIT, sample_er_comparisons, theta_two_block
from dpsim.models.btl import sample_er_win_counts
from dpsim.engine import Context
from dpsim.engine.definition.ids import method_id
from dpsim.engine.execution.program import analyse_point, fold_in_words, id_words
from dpsim.experiments.cai.figures import threshold as ct

INF = math.inf


# ---------------------------------------------------------------------------------------
# The two-block instance and the count sampler
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("gap", [0.05, 0.2, 0.45])
def test_two_block_tau_gap_is_delta(gap):
    """ρ = F(θ_i − θ_j) is 1/2 within blocks and 1/2 + Δ across; τ_(k) − τ_(k+1) = Δ (docs/cai.md, Model)."""
    n, k = 20, 5
    theta = np.asarray(theta_two_block(n, k, gap))
    rho = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))
    top = np.arange(n) >= n - k
    np.testing.assert_allclose(rho[np.ix_(top, ~top)], 0.5 + gap, atol=1e-12)
    np.testing.assert_allclose(rho[np.ix_(top, top)], 0.5, atol=1e-12)
    np.testing.assert_allclose(rho[np.ix_(~top, ~top)], 0.5, atol=1e-12)
    tau = rho.mean(axis=1)  # includes ρ_ii = 1/2
    np.testing.assert_allclose(tau[top], 0.5 + (n - k) * gap / n, atol=1e-12)
    np.testing.assert_allclose(tau[~top], 0.5 - k * gap / n, atol=1e-12)
    assert tau[top].min() - tau[~top].max() == pytest.approx(gap, abs=1e-12)


def test_two_block_empirical_win_frequency():
    """Across blocks the top items win a fraction 1/2 + Δ of the comparisons, within blocks 1/2
    (MC, 4000 replicates of G(30, 0.5))."""
    n, k, gap, p = 30, 8, 0.15, 0.5
    theta = theta_two_block(n, k, gap)
    keys = jax.random.split(jax.random.key(3), 4000)
    W = np.asarray(jax.jit(jax.vmap(lambda key: sample_er_comparisons(key, theta, p)))(keys)).sum(0)
    top = np.arange(n) >= n - k
    cross = W[np.ix_(top, ~top)].sum() / (W[np.ix_(top, ~top)] + W[np.ix_(~top, top)].T).sum()
    within = W[np.ix_(top, top)].sum() / (W[np.ix_(top, top)] + W[np.ix_(top, top)].T).sum()
    n_cross = (W[np.ix_(top, ~top)] + W[np.ix_(~top, top)].T).sum()
    assert abs(cross - (0.5 + gap)) < 4 * math.sqrt(0.25 / n_cross)
    assert within == pytest.approx(0.5)  # each within-block comparison counted both ways


def test_win_count_gap_is_np_delta():
    """E N_a − E N_b = np(τ_a − τ_b) = npΔ between the blocks (cai §2.1, A.6)."""
    n, k, gap, p = 40, 10, 0.1, 0.6
    theta = theta_two_block(n, k, gap)
    keys = jax.random.split(jax.random.key(4), 20000)
    N = np.asarray(jax.jit(jax.vmap(lambda key: sample_er_win_counts(key, theta, p)))(keys))
    top = np.arange(n) >= n - k
    diff = N[:, top].mean(axis=1) - N[:, ~top].mean(axis=1)
    se = diff.std(ddof=1) / math.sqrt(len(diff))
    assert abs(diff.mean() - n * p * gap) < 4 * se


@pytest.mark.parametrize("n", [2, 3, 7, 8])
@pytest.mark.parametrize("probit", [False, True])
def test_win_counts_have_the_law_of_row_sums(n, probit):
    """sample_er_win_counts has the exact mean and covariance of the row sums of W:
    E N_i = Σ_j pF_ij, Var N_i = Σ_j pF_ij(1 − pF_ij), Cov(N_i, N_j) = −pF_ij·pF_ji."""
    link = PROBIT if probit else None
    kw = {"link": link} if probit else {}
    theta = jnp.linspace(-1.0, 1.5, n)
    p = 0.6
    keys = jax.random.split(jax.random.key(n), 100_000)
    N = np.asarray(jax.jit(jax.vmap(lambda key: sample_er_win_counts(key, theta, p, **kw)))(keys))
    cdf = (
        (lambda x: np.asarray(PROBIT.cdf(jnp.asarray(x))))
        if probit
        else (lambda x: 1 / (1 + np.exp(-x)))
    )
    th = np.asarray(theta)
    P = p * cdf(th[:, None] - th[None, :])
    np.fill_diagonal(P, 0.0)
    cov = -P * P.T
    np.fill_diagonal(cov, (P * (1 - P)).sum(axis=1))
    z_mean = (N.mean(0) - P.sum(1)) / np.sqrt(np.diag(cov) / len(N))
    assert np.abs(z_mean).max() < 4.5
    emp = np.cov(N.T).reshape(n, n)
    tol = 5 * np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / len(N))
    assert np.all(np.abs(emp - cov) < tol)
    assert np.all(N == np.round(N)) and N.min() >= 0


def test_theory_rates_are_traceable():
    """The rates are written once in jax.numpy: jitted (as inside ``analyse``) equals eager."""
    for n, p, eps in [(100, 0.5, 0.1), (800, 1.0, 2.0), (50, 0.3, INF)]:
        assert float(jax.jit(cai_theory.edge_dp_rate)(n, p, eps)) == pytest.approx(
            float(cai_theory.edge_dp_rate(n, p, eps))
        )
        assert float(jax.jit(cai_theory.edge_dp_statistical_term)(n, p)) == pytest.approx(
            float(cai_theory.edge_dp_statistical_term(n, p))
        )
    for n, m, eps, L in [(16, 1000, 0.5, 5), (44, 8000, INF, 3)]:
        assert float(jax.jit(cai_theory.individual_dp_rate)(n, m, eps)) == pytest.approx(
            float(cai_theory.individual_dp_rate(n, m, eps))
        )
        assert float(
            jax.jit(cai_theory.individual_dp_rate_explicit_l)(n, m, eps, L)
        ) == pytest.approx(float(cai_theory.individual_dp_rate_explicit_l(n, m, eps, L)))
        strict = cai_theory.individual_dp_statistical_term(
            n, m, per_user=L
        ) + 2 * cai_theory.individual_dp_privacy_term(n, m, eps, per_user=L)
        traced = jax.jit(lambda *a: cai_theory.individual_dp_rate_explicit_l(*a, noise_factor=2))
        assert float(traced(n, m, eps, L)) == pytest.approx(float(strict))


def test_edge_analysis_is_algorithm_2():
    """The experiment adds the Laplace(2/ε) noise of :func:`noisy_counts_edge` to the counts."""
    from dpsim.mechanisms import noisy_counts_edge

    theta = theta_two_block(40, 10, 0.2)
    W = sample_er_comparisons(jax.random.key(5), theta, 0.7)
    key = jax.random.key(6)
    shape = {"n_items": 40, "k": 10}
    truth = ct.truth(None, shape)
    out = analyse_point(
        ct.EDGE, key, Context(shape, truth, W.sum(axis=1), {"gap": 0.2, "p": 0.7}, {"eps": 0.5})
    )
    k_noise, k_tie = jax.random.split(fold_in_words(key, id_words(method_id("counts"))))
    mask = ct.top_k_mask(k_tie, noisy_counts_edge(k_noise, W, 0.5), 10)
    assert float(out["counts"]["exact_recovery"]) == float(jnp.all(mask == truth["top_k"]))
    assert float(out["counts"]["gap_over_rate"]) == pytest.approx(
        0.2 / cai_theory.edge_dp_rate(40, 0.7, 0.5)
    )


def test_gap_must_be_below_one_half():
    with pytest.raises(UsageError, match="Δ < 1/2"):
        expand_grid(ct.EDGE, {"gap": [0.1, 0.5]})
    with pytest.raises(UsageError, match="Δ < 1/2"):
        expand_grid(ct.INDIVIDUAL, {"gap": [0.7]})


# ---------------------------------------------------------------------------------------
# The check's logic on synthetic tables (a known phase transition in the rate r_E)
# ---------------------------------------------------------------------------------------
def synthetic_table(midpoint=lambda n, p, eps: 1.2, reps=200, seed=0, sharpness=6.0):
    """Success ~ Bernoulli(σ(s·log(x / x½))) with x = Δ / r_E(n, p, ε), over configurations
    where the privacy term dominates in some (ε = 0.02: log n/(npε) ≫ √(log n/(np))) and is
    absent in others (ε = ∞)."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in (100, 1000, 10000):
        for p in (0.2, 1.0):
            for eps in (0.02, 0.2, INF):
                rate = cai_theory.edge_dp_rate(n, p, eps)
                stat = cai_theory.edge_dp_statistical_term(n, p)
                for x in np.geomspace(0.1, 10, 15):
                    prob = 1 / (1 + np.exp(-sharpness * np.log(x / midpoint(n, p, eps))))
                    gap = float(x * rate)
                    for rep, ok in enumerate(rng.random(reps) < prob):
                        rows.append(
                            {
                                "n_items": n,
                                "p": p,
                                "eps": eps,
                                "gap": gap,
                                "rep": rep,
                                "method": "counts",
                                "exact_recovery": float(ok),
                                "gap_over_rate": float(gap / rate),
                                "gap_over_statistical_rate": float(gap / stat),
                            }
                        )
    table = pd.DataFrame(rows)
    table.attrs["method_columns"] = ["exact_recovery", "gap_over_rate", "gap_over_statistical_rate"]
    return table


CHECK = ThresholdCollapseCheck(
    "t",
    "t",
    "exact_recovery",
    "counts",
    "gap_over_rate",
    pool=("gap",),
    configs=("n_items", "p", "eps"),
    max_ratio=2.0,
    x_low=0.5,
    p_low=0.05,
    x_high=2.5,
    p_high=0.95,
)


@pytest.fixture(scope="module")
def synthetic():
    return synthetic_table()


def test_collapse_passes_with_the_right_rate(synthetic):
    result = CHECK.evaluate(synthetic)
    assert result.passed, result.line()
    crossed = result.detail["midpoints"][result.detail["midpoints"]["status"] == "crossed"]
    assert len(crossed) == 18
    assert np.allclose(crossed["x_half"], 1.2, rtol=0.1)
    assert result.value < 1.2
    assert result.low <= result.value <= result.high
    assert result.line().startswith("PASS")


def test_collapse_fails_with_a_rate_that_ignores_privacy(synthetic):
    """Measured against √(log n/(np)) alone, the midpoints of the privacy-dominated
    configurations move right by 1 + log n/(npε)/√(log n/(np)): no collapse."""
    wrong = dataclasses.replace(CHECK, x="gap_over_statistical_rate")
    result = wrong.evaluate(synthetic)
    assert not result.passed
    assert result.value > 10
    assert result.line().startswith("FAIL")
    control = dataclasses.replace(wrong, expect_collapse=False)
    assert control.evaluate(synthetic).passed
    assert not dataclasses.replace(CHECK, expect_collapse=False).evaluate(synthetic).passed


def test_collapse_fails_when_midpoints_drift(synthetic):
    """A transition whose constant grows like ε^{-1/2} is not captured by r_E."""
    drifting = synthetic_table(
        midpoint=lambda n, p, eps: 1.2 * (1 if math.isinf(eps) else eps**-0.5)
    )
    result = CHECK.evaluate(drifting)
    assert not result.passed and result.value > 2.0


def test_failing_below_and_succeeding_above_are_checked(synthetic):
    early = synthetic_table(midpoint=lambda n, p, eps: 0.4)
    result = CHECK.evaluate(early)
    assert result.detail["max_below"] > 0.05 and not result.passed
    late = synthetic_table(midpoint=lambda n, p, eps: 2.2, sharpness=3.0)
    result = CHECK.evaluate(late)
    assert result.detail["min_above"] < 0.95 and not result.passed
    assert not dataclasses.replace(CHECK, x_low=0.01).evaluate(synthetic).passed  # no x ≤ x_low


def test_censored_configuration_bounds_the_spread(synthetic):
    """A configuration that never reaches 1/2 on its grid has x½ > its largest x: if that
    bound is beyond the factor, the collapse fails even without a crossing."""
    late = synthetic.copy()
    mask = (late["n_items"] == 100) & (late["p"] == 0.2) & (late["eps"] == 0.02)
    late.loc[mask, "exact_recovery"] = 0.0
    result = CHECK.evaluate(late)
    row = result.detail["midpoints"][result.detail["midpoints"]["status"] == "below"]
    assert len(row) == 1 and row["lo"].iloc[0] == pytest.approx(10.0)
    assert result.value > 5 and not result.passed


def test_censored_configuration_keeps_the_spread_open(synthetic):
    """A configuration whose grid stops (x ≤ 1) before its curve reaches 1/2 (x½ = 1.2) is
    censored: its x½ could be anywhere above 1, so the spread's upper end is infinite and the
    collapse cannot PASS; nor is there evidence against it (INCONCLUSIVE). Taking its last x
    as a crossing, as the check once did, passed it."""
    config = (synthetic["n_items"] == 100) & (synthetic["p"] == 0.2) & (synthetic["eps"] == 0.02)
    short = synthetic[~config | (synthetic["gap_over_rate"] <= 1.05)]
    result = CHECK.evaluate(short)
    mids = result.detail["midpoints"]
    assert (mids["status"] == "below").sum() == 1
    assert math.isinf(result.high) and result.low <= CHECK.max_ratio
    assert result.verdict == "INCONCLUSIVE", result.line()
    assert "1 censored" in result.evidence


def test_check_rejects_bad_columns(synthetic):
    with pytest.raises(UsageError, match="no column"):
        dataclasses.replace(CHECK, x="nope").evaluate(synthetic)
    with pytest.raises(UsageError, match="> 0"):
        CHECK.evaluate(synthetic.assign(gap_over_rate=synthetic["gap_over_rate"] - 1.0))


def test_report_only_prints_info(synthetic):
    wrong = dataclasses.replace(CHECK, x="gap_over_statistical_rate", report_only=True)
    assert wrong.evaluate(synthetic).line().startswith("INFO")


# ---------------------------------------------------------------------------------------
# Small runs of the experiments
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def edge_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("threshold-edge")
    run_experiment(
        ct.EDGE,
        out=out,
        reps=60,
        progress=False,
        overrides={"n_items": [100, 200], "p": [1.0], "eps": [0.5, 2.0, INF]},
    )
    return load_results(out)


def test_edge_run_collapses(edge_run):
    check = ct.CHECKS[0]
    assert check.name == "cai-threshold-collapse-edge"
    result = check.evaluate(edge_run)
    assert result.passed, result.line()
    crossed = result.detail["midpoints"][result.detail["midpoints"]["status"] == "crossed"]
    # only n = 200 at ε ∈ {2, ∞} has a grid reaching x = 2.5 (x_max = 0.48/r_E ≥ 2.5); the four
    # others end below it (n = 100: x_max ≤ 2.24) and are left out by the grid rule
    assert len(crossed) == 2 and crossed["x_half"].between(0.7, 1.6).all()
    assert set(crossed["n_items"]) == {200} and "4 of 6 configurations left out" in result.evidence


def test_success_is_monotone_in_the_gap(edge_run):
    """Per configuration, the mean success never drops by more than MC noise as x grows, and
    it runs from 0 to (nearly) 1."""
    _, curve, _ = ct.CHECKS[0].midpoints(edge_run)
    for _, group in curve.groupby(["n_items", "p", "eps"]):
        means = group.sort_values("gap_over_rate")["mean"].to_numpy()
        drops = np.maximum(0.0, means[:-1] - means[1:])
        assert drops.max() <= 3 * math.sqrt(0.25 / 60)
        assert means[0] == 0.0 and means[-1] >= 0.9


def test_edge_run_columns(edge_run):
    rows = edge_run[(edge_run["eps"] == 0.5) & (edge_run["n_items"] == 200)]
    rate = cai_theory.edge_dp_rate(200, 1.0, 0.5)
    np.testing.assert_allclose(rows["gap_over_rate"], rows["gap"] / rate, rtol=1e-12)
    np.testing.assert_allclose(
        rows["gap_over_statistical_rate"],
        rows["gap"] / cai_theory.edge_dp_statistical_term(200, 1.0),
        rtol=1e-12,
    )
    assert set(edge_run["method"]) == {"counts"}
    assert set(edge_run["exact_recovery"].unique()) <= {0.0, 1.0}


def test_individual_run_collapses(tmp_path):
    run_experiment(
        ct.INDIVIDUAL,
        out=tmp_path,
        reps=40,
        progress=False,
        overrides={"n_items": [12], "n_users": [500, 2000], "eps": [0.5, INF]},
    )
    table = load_results(tmp_path)
    result = ct.CHECKS[2].evaluate(table)
    assert result.passed, result.line()
    rows = table[(table["eps"] == 0.5) & (table["n_users"] == 500)]
    np.testing.assert_allclose(
        rows["gap_over_stated_rate"],
        rows["gap"] / cai_theory.individual_dp_rate(12, 500, 0.5),
        rtol=1e-12,
    )


@pytest.mark.parametrize(
    "experiment, axes", [(ct.EDGE, ("n_items", "p")), (ct.INDIVIDUAL, ("n_items", "n_users"))]
)
def test_threshold_figures_draw_one_panel_per_pair_the_run_holds(experiment, axes):
    """After `--set n_items=100` the edge figure stopped with "panel '(c) n = 200, p = 0.5' has
    no data": its panels listed the default grid. They now follow the run's values."""
    from dpsim.engine.presentation.panels import expand_panels

    first, second = axes
    table = pd.DataFrame(
        {
            first: [100, 100, 300],
            second: [0.5, 1.0, 0.5],
            "method": ["counts"] * 3,
            "exact_recovery": [0.1, 0.2, 0.3],
            "eps": [1.0] * 3,
        }
    )
    panels = expand_panels(table, experiment.figure)
    assert [p.where for p in panels] == [
        {first: [100], second: [0.5]},
        {first: [100], second: [1.0]},
        {first: [300], second: [0.5]},
    ]
    symbols = experiment.figure.symbols
    assert panels[1].title == f"{symbols[first]} = 100, {symbols[second]} = 1"
