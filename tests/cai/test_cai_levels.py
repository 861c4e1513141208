"""cai's level checks and mutants (experiments/cai/checks.py, mutants.py, the metrics of methods.py,
threshold.ReachableCollapseCheck): the closed forms against independent computations, the
two optimality identities of Algorithm 1 on real fits, the mutants' copies of Algorithm 1
against the library's, and a mutant caught at the level of its metric."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

import dpsim  # noqa: F401  (float64)
from dpsim.estimators.btl_mle import penalised_mle
from dpsim.engine.definition.experiment import Context
from dpsim.mechanisms import objective_perturbation_edge, objective_perturbation_individual
from dpsim.models import sample_er_comparisons, theta_cai_design
from experiments import cai
from experiments.cai import checks, methods, mutants
from experiments.cai.figures import design, published, threshold


# ---------------------------------------------------------------------------------------
# Closed forms (cai Algorithms 1–3 (§2.2.1, §2.3.1, §3.2, §3.3))
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.2, 1.0, 5.0])
def test_count_noise_variances_are_laplace_variances(eps):
    assert checks.edge_count_noise_variance(eps) == pytest.approx(
        stats.laplace(scale=2 / eps).var(), rel=1e-12
    )
    for mode, c in (("strict", 2.0), ("paper", 1.0)):
        assert checks.individual_count_noise_variance(eps, 5, mode) == pytest.approx(
            stats.laplace(scale=c * 5 / eps).var(), rel=1e-12
        )


def test_perturbation_constants_match_the_spec_numbers():
    # cai Algorithm 1, §2.2.1: λ = 8/ε; γ = 2√(np ln n), "≈ 26 at n = 300, p = 0.1" (c0 = 2); 1/ε when larger
    lam, gamma = checks.edge_perturbation(1.0, 300, 1.0, 2.0)
    assert lam == 8.0 and gamma == pytest.approx(2 * math.sqrt(300 * math.log(300)), rel=1e-12)
    assert checks.edge_perturbation(1.0, 300, 0.1, 2.0)[1] == pytest.approx(26.16, abs=0.01)
    assert checks.edge_perturbation(10.0, 200, 1.0, 0.0) == (0.8, 0.1)
    # cai Algorithm 1 under individual DP, §3.2: λ = 8L/ε, γ = 2L/ε (the code's lam = 8·1·L/ε, gamma = 8·0.25·L/ε)
    assert checks.individual_perturbation(2.0, 5) == (20.0, 5.0)
    assert checks.perturbation_mean_ratio(*checks.individual_perturbation(0.3, 7)) == pytest.approx(
        32.0
    )


def test_tau_shift_is_the_noise_over_np():
    # S = (n − 1)p: τ̂ − τ̂_raw = noise/(np), so its mean square is Var/(np)²
    assert checks.tau_shift_msq(3.0, 200, 199 * 0.5) == pytest.approx(
        3.0 / (200 * 0.5) ** 2, rel=1e-12
    )


def test_regions_are_six_standard_errors_rounded_outward():
    lo, hi = checks.region(0.01)
    assert lo <= math.exp(-0.06) and hi >= math.exp(0.06) and hi - lo < 0.14


# ---------------------------------------------------------------------------------------
# The identities of Algorithm 1 (levels docstring) on real fits
# ---------------------------------------------------------------------------------------
def _edge_data(n=40, p=0.6, seed=3):
    theta = theta_cai_design(jax.random.key(seed), n)
    return sample_er_comparisons(jax.random.key(seed + 1), theta, p)


def _user_counts(n, seed=7):
    """An aggregated win matrix of individual data (integer counts, zero diagonal)."""
    W = np.random.default_rng(seed).integers(0, 30, (n, n)).astype(float)
    np.fill_diagonal(W, 0.0)
    return jnp.asarray(W)


@jax.jit
def _fit_theta(W, gamma, w):
    """θ̃ of the perturbed objective, compiled once for every test of this file that fits."""
    return penalised_mle(W, gamma, w).theta


@pytest.mark.parametrize("gamma", [0.5, 20.0])
def test_perturbation_metrics_recover_the_noise_exactly(gamma):
    W = _edge_data()
    w = 3.0 * jax.random.laplace(jax.random.key(5), (W.shape[0],))
    m = methods.perturbation_metrics(W, _fit_theta(W, gamma, w))
    noise_msq = m["op_grad_msq"] - 2 * gamma * m["op_grad_theta"] + gamma**2 * m["op_theta_msq"]
    assert float(noise_msq) == pytest.approx(float(jnp.mean(w**2)), rel=1e-8)
    n = W.shape[0]
    assert float(m["op_theta_mean_sq"]) == pytest.approx(
        n * float(jnp.mean(w)) ** 2 / gamma**2, rel=1e-6
    )


@pytest.mark.parametrize("spread", [1.0, 60.0, 1200.0])
def test_expected_wins_match_scipy_expit_over_a_wide_score_range(spread):
    """Σ_j (W_ij + W_ji) σ(θ_i − θ_j) against SciPy's ``expit``, pair by pair in NumPy, for
    scores spread over up to 1200 (the b = exp(θ − midpoint) form stays finite there)."""
    W = np.asarray(_user_counts(30))
    theta = np.linspace(-spread / 2, spread / 2, 30)[np.random.default_rng(1).permutation(30)]
    want = ((W + W.T) * special.expit(theta[:, None] - theta[None, :])).sum(axis=1)
    got = np.asarray(jax.jit(methods.expected_wins)(jnp.asarray(W), jnp.asarray(theta)))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-12)


def test_perturbation_metrics_ignore_padding():
    W = _edge_data()
    theta = _fit_theta(W, 2.0, jax.random.laplace(jax.random.key(2), (40,)))
    padded_W = jnp.zeros((46, 46)).at[:40, :40].set(W)
    padded_theta = jnp.zeros(46).at[:40].set(theta)
    a, b = (
        methods.perturbation_metrics(W, theta),
        methods.perturbation_metrics(padded_W, padded_theta, 40),
    )
    for key in methods.PERTURBATION_METRICS:
        assert float(b[key]) == pytest.approx(float(a[key]), rel=1e-12, abs=1e-15)


# ---------------------------------------------------------------------------------------
# Mutants
# ---------------------------------------------------------------------------------------
def test_mutants_are_named_for_cai_and_mutate_their_experiments():
    experiments = {e.name: e for e in cai.EXPERIMENTS}
    assert cai.MUTANTS and len({m.name for m in cai.MUTANTS}) == len(cai.MUTANTS)
    # the level checks, and the checks against the authors' results (which judge once those are fetched)
    checked = {c.experiment for c in [*checks.LEVEL_CHECKS, *design.CHECKS, *published.CHECKS]}
    for mutant in cai.MUTANTS:
        assert mutant.name.startswith("cai-")
        for name in mutant.experiments:
            assert name in checked  # a level check of this experiment can catch it
            mutated = mutant.mutate(experiments[name])
            assert (
                mutated.name == name and mutated.methods.keys() == experiments[name].methods.keys()
            )


def test_mutant_copies_of_algorithm_1_equal_the_library_at_factor_one():
    """The mutants' Algorithm 1 releases at factor one are the library's (γ and w), from the same key."""
    capacity = _edge_data().shape[0]

    @jax.jit
    def releases(key):
        return (
            mutants.edge_release()(key, 0.7, 0.6, capacity, c0=2.0, n_items=40),
            objective_perturbation_edge(key, 0.7, 0.6, capacity, c0=2.0, n_items=40),
            mutants.individual_release()(key, 2.0, 5, 12),
            objective_perturbation_individual(key, 2.0, 5, 12),
        )

    ours_edge, library_edge, ours_individual, library_individual = releases(jax.random.key(9))
    for ours, library in ((ours_edge, library_edge), (ours_individual, library_individual)):
        np.testing.assert_allclose(ours.gamma, library.gamma, rtol=1e-15, atol=0)
        np.testing.assert_allclose(ours.w, library.w, rtol=1e-15, atol=0)
        assert float(jnp.max(jnp.abs(library.w))) > 0


def test_paper_as_strict_mutant_quadruples_the_count_noise():
    """The mutated fig7 counts method, called directly on one W over 400 keys: its noise_msq
    is 4× the paper-mode prediction 2(L/ε)², the real method's 1×."""
    fig7 = cai.figures.individual.FIG7
    mutant = next(m for m in cai.MUTANTS if m.name == "cai-indiv-counts-paper-as-strict")
    W = _user_counts(16)
    sample = {"W": W, "theta": jnp.zeros(16), "top_k": jnp.arange(16) < 4}
    ctx = Context(
        shape={"n_items": 16, "k": 4, "link": "logistic", "mode": "paper"},
        truth={},
        sample=sample,
        data={"n_users": 250, "per_user": 5},
        analysis={"eps": 1.0},
    )
    keys = jax.random.split(jax.random.key(6), 400)
    predicted = checks.individual_count_noise_variance(1.0, 5, "paper")
    for experiment, factor in ((fig7, 1.0), (mutant.mutate(fig7), 4.0)):
        fn = experiment.methods["counts"].fn
        msq = jax.jit(jax.vmap(lambda k: fn(k, ctx)["noise_msq"]))(keys)
        assert float(jnp.mean(msq)) / predicted == pytest.approx(factor, rel=0.15)


# ---------------------------------------------------------------------------------------
# Every path FAILs a 10% error in its noise variance at the default replicates
# ---------------------------------------------------------------------------------------
def test_per_row_ratio_weights_every_row_alike():
    """Rows of two points whose predictions differ 100-fold: the pooled statistic is the mean
    of the per-row ratios (1.2 and 0.8 → 1), where a ratio of pooled means would be ≈ 0.804."""
    rows = pd.DataFrame(
        {
            "eps": [1.0, 1.0, 10.0, 10.0],
            "rep": [0, 1, 0, 1],
            "method": "counts",
            "noise_msq": [100 * 1.2, 100 * 1.2, 0.8, 0.8],
        }
    )
    rows.attrs["method_columns"] = ["noise_msq"]
    stat = checks.PerRowRatio(
        "noise_msq",
        "counts",
        inner=checks.Mean("noise_msq", "counts"),
        reference=lambda point: 100.0 / point["eps"] ** 2,
    )
    assert math.exp(stat.estimate(rows).value) == pytest.approx(1.0, rel=1e-12)


# (check, its expected standard error from the law, the points it judges)
POWERED = [
    ("cai-level-edge-counts-noise", checks.SE_FIG3_SQUARES, 6),
    ("cai-level-edge-mle-noise", checks.SE_FIG3_SQUARES, 6),
    ("cai-level-matched-edge-counts-noise", checks.SE_M_SQUARES_POOLED, 2),
    ("cai-level-matched-edge-mle-noise", checks.SE_M_SQUARES_POOLED, 2),
    ("cai-level-indiv-counts-noise-strict-pooled", checks.SE_M_SQUARES_ALL, 1),
    ("cai-level-indiv-mle-noise-pooled", checks.SE_M_SQUARES_ALL, 1),
    ("cai-level-indiv-counts-noise-paper-pooled", checks.SE_FIG7_ALL, 1),
]


@pytest.mark.parametrize("name, se, points", POWERED)
def test_noise_checks_fail_a_ten_percent_variance_error_with_95_percent_power(name, se, points):
    """A variance × 1.1 (or ÷ 1.1) lies outside the region by at least the family-wise
    half-width of ``dpsim verify cai`` plus 1.645 standard errors (the verdicts' FAIL rule), so
    it FAILs with probability ≥ 95%, while the region stays ±6 expected standard errors."""
    from dpsim.engine.judgement.verdicts import family_z

    check = {c.name: c for c in checks.LEVEL_CHECKS}[name]
    lo, hi = check.region
    family = sum(1 for c in cai.CHECKS if not c.report_only)
    z = family_z(family * points)
    assert math.log(1.1) - math.log(hi) >= (z + 1.645) * se
    assert math.log(1.1) + math.log(lo) >= (z + 1.645) * se
    assert (lo, hi) == checks.region(se)


def test_one_path_variance_mutants_leave_the_other_unit_alone():
    """eps_scaled_where scales ε only on the named unit: the other unit's method sees the true ε."""
    seen = []
    wrapped = mutants.eps_scaled_where(0.5, unit="individual")(
        lambda key, ctx: seen.append(ctx.analysis["eps"])
    )
    for unit in ("edge", "individual"):
        wrapped(
            None, Context(shape={"unit": unit}, truth={}, sample={}, data={}, analysis={"eps": 2.0})
        )
    assert seen == [2.0, 1.0]
    names = {m.name for m in cai.MUTANTS if m.name.endswith("-variance-1.1")}
    assert len(names) == 7


# ---------------------------------------------------------------------------------------
# The threshold check keeps the configurations whose grid reaches x_high
# ---------------------------------------------------------------------------------------
def test_reachable_collapse_check_leaves_out_configurations_that_cannot_cross():
    rng = np.random.default_rng(0)
    rows = []
    # two configurations whose x reaches 3 (midpoint 1), one whose grid ends at 0.8
    for n, scale in ((100, 1.0), (200, 1.0), (300, 0.27)):
        for rep in range(200):
            for gap in np.geomspace(0.05, 0.48, 12):
                x = gap / 0.48 * 3.0 * scale
                rows.append(
                    {
                        "n_items": n,
                        "gap": gap,
                        "rep": rep,
                        "method": "counts",
                        "gap_over_rate": x,
                        "exact_recovery": float(rng.random() < 1 / (1 + (1 / x) ** 6)),
                    }
                )
    table = pd.DataFrame(rows)
    table.attrs["method_columns"] = ("gap_over_rate", "exact_recovery")
    check = threshold.ReachableCollapseCheck(
        "cai-test",
        "x",
        "exact_recovery",
        "counts",
        "gap_over_rate",
        pool=("gap",),
        configs=("n_items",),
        max_ratio=3.0,
        x_low=0.5,
        p_low=0.05,
        x_high=2.5,
        p_high=0.95,
    )
    result = check.evaluate(table)
    assert result.verdict == "PASS", result.line()
    assert "1 of 3 configurations left out" in result.evidence
