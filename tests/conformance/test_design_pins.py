"""The design and metric pins of cai, nguyen, chowdhury and xu (experiments/*/design.py, or the
paper's figures/design.py): their closed forms against independent numbers (enumeration, SciPy's
distributions and quadrature), the declared mutants (registered, applied to their calibration
experiment only), and the method functions on one hand-built replicate against direct NumPy formulas."""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special, stats

from dpsim import metrics
from dpsim.engine.definition.experiment import Context
from dpsim.engine.registry import installed
from dpsim.experiments.cai.figures import design as cai_design
from dpsim.experiments.chowdhury.figures import design as ch_design
from dpsim.experiments.nguyen.figures import design as ng_design
from dpsim.experiments.xu.figures import design as xu_design

MODULES = (cai_design, ng_design, ch_design, xu_design)


# ---------------------------------------------------------------------------------------
# cai: closed forms
# ---------------------------------------------------------------------------------------
def test_cai_strength_moments_against_scipy_uniform():
    u = stats.uniform(0.2, 0.5)
    assert cai_design.uniform_moment(lambda x: x) == pytest.approx(u.mean(), rel=1e-12)
    assert cai_design.log_strength_msq() == pytest.approx(
        u.expect(lambda x: math.log(x) ** 2), rel=1e-10
    )
    assert (
        cai_design.paper_k(40) == 10 and cai_design.paper_k(10) == 2 and cai_design.paper_k(6) == 2
    )  # half to even


def test_cai_degree_moments_against_the_binomial():
    b = stats.binom(39, 0.25)
    assert cai_design.degree_mean(40, 0.25) == pytest.approx(b.mean(), rel=1e-14)
    assert cai_design.degree_msq(40, 0.25) == pytest.approx(b.moment(2), rel=1e-14)


def test_cai_pair_count_moments_against_the_binomial_and_a_multinomial_draw():
    total, n = 500, 22
    pairs = n * (n - 1) // 2
    assert cai_design.pair_count_msq(total, n) == pytest.approx(
        stats.binom(total, 1 / pairs).moment(2), rel=1e-12
    )
    rng = np.random.default_rng(0)
    draws = rng.multinomial(total, np.full(pairs, 1 / pairs), size=4000)
    sim = (draws.astype(float) ** 2).mean(axis=1)
    se = sim.std(ddof=1) / math.sqrt(len(sim))
    assert abs(sim.mean() - cai_design.pair_count_msq(total, n)) < 5 * se
    assert cai_design.individual_k(22) == 5 and cai_design.paper_k(22) == 6


def test_cai_random_ranking_laws_by_enumeration():
    n, k = 6, 2
    truth = jnp.asarray([0.0, -1.0, -2.0, -3.0, 0.0, -4.0])  # two tied top items, as the design's
    kd, foot = [], []
    for perm in itertools.permutations(range(n)):
        scores = jnp.asarray(perm, jnp.float64)
        kd.append(float(metrics.kendall_distance(scores, truth)))
        foot.append(
            float(metrics.mean_absolute_rank_difference(scores, jnp.arange(n, dtype=jnp.float64)))
        )
    assert np.mean(kd) == pytest.approx(cai_design.kendall_random_mean(n, k), abs=1e-14)
    assert np.mean(foot) == pytest.approx(cai_design.footrule_mean(n), abs=1e-12)
    assert np.var(foot) == pytest.approx(cai_design.footrule_var(n), rel=1e-10)
    untied = [
        float(
            metrics.kendall_distance(jnp.asarray(p, jnp.float64), jnp.arange(n, dtype=jnp.float64))
        )
        for p in itertools.permutations(range(n))
    ]
    assert np.var(untied) == pytest.approx(cai_design.kendall_random_var(n), rel=1e-10)


def test_cai_normal_extremes_against_scipy():
    assert cai_design.expected_max_abs_normal(1) == pytest.approx(math.sqrt(2 / math.pi), rel=1e-10)
    assert cai_design.expected_max_abs_normal(1, 2) == pytest.approx(1.0, rel=1e-10)
    # max of n |Z|: cdf (2Φ − 1)^n, mean by SciPy's quadrature of the density
    n = 40
    pdf = lambda x: n * special.erf(x / math.sqrt(2)) ** (n - 1) * 2 * stats.norm.pdf(x)  # noqa: E731
    assert cai_design.expected_max_abs_normal(n) == pytest.approx(
        integrate.quad(lambda x: x * pdf(x), 0, 20)[0], rel=1e-9
    )
    assert cai_design.expected_chi_over_root_n(n) == pytest.approx(
        stats.chi(n).mean() / math.sqrt(n), rel=1e-12
    )


# ---------------------------------------------------------------------------------------
# nguyen and chowdhury: closed forms
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "design,law", [("normal", stats.norm()), ("uniform", stats.uniform(-1, 2))]
)
def test_nguyen_design_moments_against_scipy(design, law):
    assert ng_design.design_second_moment(design) == pytest.approx(law.moment(2), rel=1e-12)
    assert ng_design.design_fourth_moment(design) == pytest.approx(law.moment(4), rel=1e-12)
    # the divisor-m sample variance of m i.i.d. draws: E = (m − 1)/m·Var
    assert ng_design.centred_msq(10, design) == pytest.approx(0.9 * law.var(), rel=1e-12)


def test_nguyen_pair_term_against_a_triple_integral_on_the_uniform_design():
    sig = special.expit
    direct = integrate.tplquad(
        lambda bj, bi, t: sig(t - bi) * (1 - sig(t - bj)) / 8, -1, 1, -1, 1, -1, 1
    )[0]
    assert ng_design.pair_term("uniform") == pytest.approx(direct, rel=1e-6)


def test_chowdhury_theta_laws_against_scipy():
    d = 5
    truncated = stats.chi2(d).expect(lambda x: x, ub=4 * d, conditional=True)
    assert ch_design.theta_norm_sq(d, "faithful") == pytest.approx(truncated, rel=1e-9)
    second = stats.chi2(d).expect(lambda x: x * x, ub=4 * d, conditional=True)
    assert ch_design.theta_norm_sq_cv2(d) == pytest.approx(second / truncated**2 - 1, rel=1e-8)
    b = stats.beta((d - 1) / 2, 0.5)
    assert ch_design.perp_share(d, "faithful") == pytest.approx(b.mean(), rel=1e-14)
    assert ch_design.perp_share_cv2(d) == pytest.approx(b.var() / b.mean() ** 2, rel=1e-12)


# ---------------------------------------------------------------------------------------
# xu: closed forms
# ---------------------------------------------------------------------------------------
def test_xu_uniform_design_moments_against_scipy_and_a_simulation():
    u = stats.uniform(-2, 4)
    assert xu_design.uniform_moment(2) == pytest.approx(u.moment(2), rel=1e-12)
    assert xu_design.uniform_moment(4) == pytest.approx(u.moment(4), rel=1e-12)
    m = 10
    assert xu_design.centred_msq(m) == pytest.approx(0.9 * u.var(), rel=1e-12)
    b = stats.beta(m - 1, 2)  # (range)/4 of m uniforms
    assert xu_design.uniform_range_mean(m) == pytest.approx(4 * b.mean(), rel=1e-12)
    assert xu_design.uniform_range_cv2(m) == pytest.approx(b.var() / b.mean() ** 2, rel=1e-12)
    rng = np.random.default_rng(0)
    draws = rng.uniform(-2, 2, size=(200_000, m))
    msq = draws.var(axis=1)  # divisor m: the centred draw's mean square
    assert abs(msq.mean() / xu_design.centred_msq(m) - 1) < 5 * math.sqrt(
        xu_design.centred_msq_cv2(m) / len(msq)
    )
    assert msq.var() / msq.mean() ** 2 == pytest.approx(xu_design.centred_msq_cv2(m), rel=0.02)
    rng_ = draws.max(axis=1) - draws.min(axis=1)
    assert rng_.var() / rng_.mean() ** 2 == pytest.approx(xu_design.uniform_range_cv2(m), rel=0.02)
    assert xu_design.paper_k(10) == 5 and xu_design.paper_k(7) == 3


@pytest.mark.parametrize("gap", [0.2, 0.5])
def test_xu_ladder_wins_moments_against_the_binomial(gap):
    m, L = 6, 40
    laws = [stats.binom(L, special.expit(gap * k)) for k in range(1, m)]
    counts = [m - k for k in range(1, m)]
    assert xu_design.ladder_wins_mean(m, L, gap) == pytest.approx(
        sum(n * b.mean() for n, b in zip(counts, laws)), rel=1e-12
    )
    assert xu_design.ladder_wins_var(m, L, gap) == pytest.approx(
        sum(n * b.var() for n, b in zip(counts, laws)), rel=1e-12
    )
    assert xu_design.ladder_dev2_mean(m, L, gap) == pytest.approx(
        xu_design.ladder_wins_var(m, L, gap), rel=1e-15
    )
    var4 = sum(
        n * (b.expect(lambda x, mu=b.mean(): (x - mu) ** 4) - b.var() ** 2)
        for n, b in zip(counts, laws)
    )
    assert xu_design.ladder_dev2_var(m, L, gap) == pytest.approx(var4, rel=1e-9)


def test_xu_ladder_label_spread_and_excess_risk():
    for m in (3, 10):
        assert xu_design.rank_difference_moment(m, 2) == pytest.approx(m * (m + 1) / 6, rel=1e-12)
    # e_L of 2θ* against the library's exact sum on a permuted ladder
    m, gap = 10, 0.3
    theta = gap * (np.random.default_rng(1).permutation(m) - (m - 1) / 2)
    lib = float(metrics.excess_risk(jnp.asarray(2 * theta), jnp.asarray(theta)))
    assert xu_design.ladder_excess_risk(m, gap, 2.0) == pytest.approx(lib, rel=1e-10)


def test_xu_random_ranking_and_coin_laws_by_enumeration_with_the_recorded_scores():
    """The data-free estimators' laws against every permutation / every coin vector of a small
    m, scored by xu's own ``scores`` (what the experiments record)."""
    from dpsim.experiments.xu.methods import scores

    m, k = 6, 3
    truth = jnp.asarray(np.random.default_rng(2).normal(size=m))
    score = jax.jit(lambda a: scores(a, truth, k))
    perms = [score(jnp.asarray(p, jnp.float64)) for p in itertools.permutations(range(m))]
    kd = np.asarray([float(r["kendall"]) for r in perms])
    ham = np.asarray([float(r["top_k_hamming"]) for r in perms])
    assert kd.mean() == pytest.approx(0.5, abs=1e-12)
    assert kd.var() == pytest.approx(xu_design.kendall_random_var(m), rel=1e-10)
    assert ham.mean() == pytest.approx(1 - k / m, abs=1e-12)
    assert ham.var() == pytest.approx(xu_design.hamming_random_var(m, k), rel=1e-10)
    coins = [score(jnp.asarray(c, jnp.float64)) for c in itertools.product((0.0, 1.0), repeat=m)]
    laws = xu_design.coin_laws(m, k)
    for name in ("kendall", "kendall_strict", "top_k_hamming"):
        values = np.asarray([float(r[name]) for r in coins])
        assert (values.mean(), values.var()) == pytest.approx(laws[name], abs=1e-12), name
    assert laws["kendall"][0] == pytest.approx(0.5) and laws["kendall_strict"][0] == pytest.approx(
        0.25
    )
    assert laws["top_k_hamming"][0] == pytest.approx(1 - k / m)


def test_xu_heterogeneous_profiles_against_the_library():
    from dpsim.mechanisms.privacy_profile import PROFILES, privacy_G, profile_group_sizes

    for name, groups in xu_design.PROFILE_DEFINITIONS.items():
        assert np.asarray(groups) == pytest.approx(np.asarray(PROFILES[name]), abs=1e-15)
        sizes = profile_group_sizes(name, xu_design.HETERO_L)
        assert sizes / xu_design.HETERO_L == pytest.approx([f for f, _ in groups], abs=1e-15)
        eps = np.asarray([mult for _, mult in groups])
        assert xu_design.profile_G(name, 1.0) == pytest.approx(
            float(privacy_G(jnp.asarray(eps), jnp.asarray(sizes, jnp.float64))), rel=1e-12
        )
    assert xu_design.coth2_half(1.0) == pytest.approx(((math.e + 1) / (math.e - 1)) ** 2, rel=1e-14)
    assert xu_design.released_G("thirds", "same_mean_eps", 1.0) == pytest.approx(
        xu_design.coth2_half((0.25 + 1 + 4) / 3), rel=1e-14
    )


def test_xu_subsample_spread_by_enumerating_every_subsample():
    """E Σ_e (X_e − Lȳ_e)² of a sample of L users without replacement = Σ_e Lȳ_e(1 − ȳ_e)(N − L)/(N − 1):
    the method's expected column, against the mean over every L-subset of a small population."""
    y = np.asarray([[1, 0, 1], [0, 0, 1], [1, 1, 0], [1, 0, 0], [0, 1, 1]], np.uint8)
    n_total, L = 5, 2
    ybar = y.mean(axis=0)
    dev = [
        np.sum((y[list(s)].sum(axis=0) - L * ybar) ** 2)
        for s in itertools.combinations(range(n_total), L)
    ]
    ctx = Context(
        {},
        {"y": jnp.asarray(y)},
        {"wins": jnp.asarray(y[:L].sum(axis=0)[None, :], jnp.float64)},
        {"n_users": L},
        {},
    )
    out = xu_design.movielens_design_fn(None, ctx)
    assert float(out["dev2_expected"]) == pytest.approx(np.mean(dev), rel=1e-12)
    assert float(out["dev2"]) == pytest.approx(dev[0], rel=1e-12)


def test_xu_design_fn_and_hetero_design_fn_against_numpy():
    theta = np.asarray([0.5, -1.0, 1.5, -1.0 + 1e-3])
    i, j = np.triu_indices(4, 1)
    wins = np.asarray([3.0, 7.0, 1.0, 9.0, 4.0, 6.0])
    ctx = Context(
        {},
        {},
        {"theta": jnp.asarray(theta), "wins": jnp.asarray(wins[None, :])},
        {"n_users": 10},
        {},
    )
    out = xu_design.design_fn(None, ctx)
    better = [wins[e] if theta[i[e]] > theta[j[e]] else 10 - wins[e] for e in range(6)]
    assert float(out["better_wins"]) == sum(better)
    assert float(out["better_wins_expected"]) == pytest.approx(
        10 * sum(special.expit(abs(theta[a] - theta[b])) for a, b in zip(i, j)), rel=1e-12
    )
    assert float(out["theta_range"]) == pytest.approx(2.5)
    p_star = special.expit(theta[i] - theta[j])  # P(i beats j), the stored orientation
    assert float(out["wins_dev2"]) == pytest.approx(np.sum((wins - 10 * p_star) ** 2), rel=1e-12)
    assert float(out["wins_dev2_expected"]) == pytest.approx(
        np.sum(10 * p_star * (1 - p_star)), rel=1e-12
    )
    # two atoms (sizes 3 and 7) released as two groups at ε and ε/10
    atom_wins = np.stack([wins * 0.3, wins * 0.7])
    analysis = {
        "group_atoms": jnp.asarray([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]),
        "group_eps": jnp.asarray([1.0, 0.1, 1.0]),
    }
    ctx = Context(
        {},
        {},
        {"theta": jnp.asarray(theta), "wins": jnp.asarray(atom_wins)},
        {"atom_sizes": jnp.asarray([3.0, 7.0])},
        analysis,
    )
    out = xu_design.hetero_design_fn(None, ctx)
    coth2 = lambda e: (1 / math.tanh(e / 2)) ** 2  # noqa: E731
    assert float(out["G"]) == pytest.approx((3 * coth2(1.0) + 7 * coth2(0.1)) / 10, rel=1e-12)
    norm = sum(special.expit(abs(theta[a] - theta[b])) for a, b in zip(i, j)) * 10
    better0 = [
        atom_wins[0, e] if theta[i[e]] > theta[j[e]] else 3 - atom_wins[0, e] for e in range(6)
    ]
    assert float(out["share_0"]) == pytest.approx(sum(better0) / norm, rel=1e-12)


# ---------------------------------------------------------------------------------------
# The method functions on one replicate
# ---------------------------------------------------------------------------------------
def test_cai_design_fn_against_numpy():
    exp = cai_design.DESIGN
    shape = exp.resolve_shape({"n_items": 12, "k": "auto", "link": "logistic"})
    key = jax.random.PRNGKey(3)
    truth = exp.truth(key, shape)
    sample = exp.generate(jax.random.PRNGKey(4), shape, truth, {"p": 0.5})
    out = cai_design.design_fn(None, Context(shape, truth, sample, {"p": 0.5}, {}))
    theta, W = np.asarray(truth["theta"]), np.asarray(sample["W"])
    top = np.isclose(theta, theta.max(), atol=1e-9)
    A = W + W.T
    assert float(out["top_share"]) == pytest.approx(3 / 12)
    assert float(out["other_strength_mean"]) == pytest.approx(
        np.exp(theta[~top] - theta.max()).mean(), rel=1e-12
    )
    assert float(out["degree_mean"]) == pytest.approx(A.sum() / 12, rel=1e-12)
    expected = sum(
        A[i, j] * special.expit(theta[i] - theta[j])
        for i in np.flatnonzero(top)
        for j in np.flatnonzero(~top)
    )
    assert float(out["top_wins_expected"]) == pytest.approx(expected, rel=1e-12)
    assert float(out["top_wins"]) == W[np.ix_(top, ~top)].sum()


def test_nguyen_design_fn_differential_count_expectation_against_loops():
    theta, beta = np.array([0.3, -1.0, 2.0]), np.array([0.5, -0.5, 0.1, 0.0])
    p = 0.7
    x = np.zeros((3, 4), bool)
    sample = {"x": jnp.asarray(x), "observed": jnp.asarray(~x), "Y": jnp.zeros((4, 4))}
    out = ng_design.design_fn(
        None,
        Context({}, {"theta": jnp.asarray(theta), "beta": jnp.asarray(beta)}, sample, {"p": p}, {}),
    )
    s = special.expit(theta[:, None] - beta[None, :])
    expected = (
        p
        * p
        * sum(
            s[l, i] * (1 - s[l, j]) for l in range(3) for i in range(4) for j in range(4) if i != j
        )
    )
    assert float(out["y_expected"]) == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------------------------------
# Registration and mutants
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.split(".")[2])
def test_pins_are_registered_and_mutants_apply_to_the_calibration_experiment_only(module):
    found = installed()
    assert {m.name for m in module.MUTANTS} <= set(found.mutants)
    assert {ch.name for ch in module.CHECKS} <= set(found.checks)
    experiments = {e.name: e for e in module.EXPERIMENTS}
    assert module.DESIGN.name in experiments
    assert all(ch.experiment in experiments and not ch.report_only for ch in module.CHECKS)
    for mutant in module.MUTANTS:
        (name,) = mutant.experiments  # one calibration experiment, never a figure's
        mutated = mutant.mutate(experiments[name])
        assert mutated.name == name and set(mutated.methods) == set(experiments[name].methods)
        assert mutated != experiments[name]
        assert any(ch.experiment == name for ch in module.CHECKS)
    for check in module.CHECKS:
        lo, hi = check.region
        assert 0.5 < lo < 1.0 < hi < 2.0, check.name  # two-sided, about the exact prediction 1
