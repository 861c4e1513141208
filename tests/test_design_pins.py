"""The design and metric pins of cai, nguyen and chowdhury (experiments/*/design.py): their
closed forms against independent numbers (enumeration, SciPy's distributions and quadrature),
the declared mutants (registered, applied to their calibration experiment only), and the
method functions on one hand-built replicate against direct NumPy formulas."""
from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special, stats

from dpsim import metrics
from dpsim.engine.definition.grid import Context
from dpsim.engine.registry import installed
from dpsim.experiments.cai import design as cai_design
from dpsim.experiments.chowdhury import design as ch_design
from dpsim.experiments.nguyen import design as ng_design

MODULES = (cai_design, ng_design, ch_design)


# ---------------------------------------------------------------------------------------
# cai: closed forms
# ---------------------------------------------------------------------------------------
def test_cai_strength_moments_against_scipy_uniform():
    u = stats.uniform(0.2, 0.5)
    assert cai_design.uniform_moment(lambda x: x) == pytest.approx(u.mean(), rel=1e-12)
    assert cai_design.log_strength_msq() == pytest.approx(u.expect(lambda x: math.log(x) ** 2), rel=1e-10)
    assert cai_design.paper_k(40) == 10 and cai_design.paper_k(10) == 2 and cai_design.paper_k(6) == 2   # half to even


def test_cai_degree_moments_against_the_binomial():
    b = stats.binom(39, 0.25)
    assert cai_design.degree_mean(40, 0.25) == pytest.approx(b.mean(), rel=1e-14)
    assert cai_design.degree_msq(40, 0.25) == pytest.approx(b.moment(2), rel=1e-14)


def test_cai_pair_count_moments_against_the_binomial_and_a_multinomial_draw():
    total, n = 500, 22
    pairs = n * (n - 1) // 2
    assert cai_design.pair_count_msq(total, n) == pytest.approx(stats.binom(total, 1 / pairs).moment(2), rel=1e-12)
    rng = np.random.default_rng(0)
    draws = rng.multinomial(total, np.full(pairs, 1 / pairs), size=4000)
    sim = (draws.astype(float) ** 2).mean(axis=1)
    se = sim.std(ddof=1) / math.sqrt(len(sim))
    assert abs(sim.mean() - cai_design.pair_count_msq(total, n)) < 5 * se
    assert cai_design.individual_k(22) == 5 and cai_design.paper_k(22) == 6


def test_cai_random_ranking_laws_by_enumeration():
    n, k = 6, 2
    truth = jnp.asarray([0.0, -1.0, -2.0, -3.0, 0.0, -4.0])       # two tied top items, as the design's
    kd, foot = [], []
    for perm in itertools.permutations(range(n)):
        scores = jnp.asarray(perm, jnp.float64)
        kd.append(float(metrics.kendall_distance(scores, truth)))
        foot.append(float(metrics.mean_absolute_rank_difference(scores, jnp.arange(n, dtype=jnp.float64))))
    assert np.mean(kd) == pytest.approx(cai_design.kendall_random_mean(n, k), abs=1e-14)
    assert np.mean(foot) == pytest.approx(cai_design.footrule_mean(n), abs=1e-12)
    assert np.var(foot) == pytest.approx(cai_design.footrule_var(n), rel=1e-10)
    untied = [float(metrics.kendall_distance(jnp.asarray(p, jnp.float64), jnp.arange(n, dtype=jnp.float64)))
              for p in itertools.permutations(range(n))]
    assert np.var(untied) == pytest.approx(cai_design.kendall_random_var(n), rel=1e-10)


def test_cai_normal_extremes_against_scipy():
    assert cai_design.expected_max_abs_normal(1) == pytest.approx(math.sqrt(2 / math.pi), rel=1e-10)
    assert cai_design.expected_max_abs_normal(1, 2) == pytest.approx(1.0, rel=1e-10)
    # max of n |Z|: cdf (2Φ − 1)^n, mean by SciPy's quadrature of the density
    n = 40
    pdf = lambda x: n * special.erf(x / math.sqrt(2)) ** (n - 1) * 2 * stats.norm.pdf(x)   # noqa: E731
    assert cai_design.expected_max_abs_normal(n) == pytest.approx(integrate.quad(lambda x: x * pdf(x), 0, 20)[0],
                                                                  rel=1e-9)
    assert cai_design.expected_chi_over_root_n(n) == pytest.approx(stats.chi(n).mean() / math.sqrt(n), rel=1e-12)


# ---------------------------------------------------------------------------------------
# nguyen and chowdhury: closed forms
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("design,law", [("normal", stats.norm()), ("uniform", stats.uniform(-1, 2))])
def test_nguyen_design_moments_against_scipy(design, law):
    assert ng_design.design_second_moment(design) == pytest.approx(law.moment(2), rel=1e-12)
    assert ng_design.design_fourth_moment(design) == pytest.approx(law.moment(4), rel=1e-12)
    # the divisor-m sample variance of m i.i.d. draws: E = (m − 1)/m·Var
    assert ng_design.centred_msq(10, design) == pytest.approx(0.9 * law.var(), rel=1e-12)


def test_nguyen_pair_term_against_a_triple_integral_on_the_uniform_design():
    sig = special.expit
    direct = integrate.tplquad(lambda bj, bi, t: sig(t - bi) * (1 - sig(t - bj)) / 8, -1, 1, -1, 1, -1, 1)[0]
    assert ng_design.pair_term("uniform") == pytest.approx(direct, rel=1e-6)


def test_chowdhury_theta_laws_against_scipy():
    d = 5
    truncated = stats.chi2(d).expect(lambda x: x, ub=4 * d, conditional=True)
    assert ch_design.theta_norm_sq(d, "faithful") == pytest.approx(truncated, rel=1e-9)
    second = stats.chi2(d).expect(lambda x: x * x, ub=4 * d, conditional=True)
    assert ch_design.theta_norm_sq_cv2(d) == pytest.approx(second / truncated ** 2 - 1, rel=1e-8)
    b = stats.beta((d - 1) / 2, 0.5)
    assert ch_design.perp_share(d, "faithful") == pytest.approx(b.mean(), rel=1e-14)
    assert ch_design.perp_share_cv2(d) == pytest.approx(b.var() / b.mean() ** 2, rel=1e-12)


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
    assert float(out["other_strength_mean"]) == pytest.approx(np.exp(theta[~top] - theta.max()).mean(), rel=1e-12)
    assert float(out["degree_mean"]) == pytest.approx(A.sum() / 12, rel=1e-12)
    expected = sum(A[i, j] * special.expit(theta[i] - theta[j]) for i in np.flatnonzero(top)
                   for j in np.flatnonzero(~top))
    assert float(out["top_wins_expected"]) == pytest.approx(expected, rel=1e-12)
    assert float(out["top_wins"]) == W[np.ix_(top, ~top)].sum()


def test_nguyen_design_fn_differential_count_expectation_against_loops():
    theta, beta = np.array([0.3, -1.0, 2.0]), np.array([0.5, -0.5, 0.1, 0.0])
    p = 0.7
    x = np.zeros((3, 4), bool)
    sample = {"x": jnp.asarray(x), "observed": jnp.asarray(~x), "Y": jnp.zeros((4, 4))}
    out = ng_design.design_fn(None, Context({}, {"theta": jnp.asarray(theta), "beta": jnp.asarray(beta)}, sample,
                                            {"p": p}, {}))
    s = special.expit(theta[:, None] - beta[None, :])
    expected = p * p * sum(s[l, i] * (1 - s[l, j]) for l in range(3) for i in range(4) for j in range(4) if i != j)
    assert float(out["y_expected"]) == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------------------------------
# Registration and mutants
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 2)[-2])
def test_pins_are_registered_and_mutants_apply_to_the_calibration_experiment_only(module):
    found = installed()
    assert {m.name for m in module.MUTANTS} <= set(found.mutants)
    assert {ch.name for ch in module.CHECKS} <= set(found.checks)
    experiments = {e.name: e for e in module.EXPERIMENTS}
    assert module.DESIGN.name in experiments
    assert all(ch.experiment in experiments and not ch.report_only for ch in module.CHECKS)
    for mutant in module.MUTANTS:
        (name,) = mutant.experiments                         # one calibration experiment, never a figure's
        mutated = mutant.mutate(experiments[name])
        assert mutated.name == name and set(mutated.methods) == set(experiments[name].methods)
        assert mutated != experiments[name]
        assert any(ch.experiment == name for ch in module.CHECKS)
    for check in module.CHECKS:
        lo, hi = check.region
        assert 0.5 < lo < 1.0 < hi < 2.0, check.name        # two-sided, about the exact prediction 1
