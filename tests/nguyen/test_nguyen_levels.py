"""nguyen's level checks and mutants (experiments/nguyen/checks.py, mutants.py):

* the closed forms the level checks predict from, against independent references (reference
  values, SciPy/NumPy sums, the library's own conversions as a cross-check);
* the calibration metrics measure what was released: the estimate rebuilt from the redrawn
  noise (or the redrawn RR responses) is the estimate the mechanism returned;
* every declared mutant applies to its experiments and changes what it claims to change;
* a level check PASSes on the real calibration and FAILs under a mutant, on noise drawn
  through the experiment's own derived values and the library's σ (a few seconds)."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import dpsim  # noqa: F401
from dpsim.estimators.private_spectral import private_spectral_estimate
from dpsim.estimators.spectral import differential_counts, spectral_estimate
from dpsim.engine.judgement.mutants import Mutant, overridden_derived
from dpsim.mechanisms.count_noise import (
    count_noise,
    gaussian_count_sigma,
    laplace_count_scale,
    noise_mean_square,
    private_differential_counts,
)
from dpsim.mechanisms.discrete import discrete_gaussian_variance
from dpsim.mechanisms.shuffle import shuffle_rr_epsilon
from dpsim.mechanisms.sparsify import dense_item_graph
from dpsim.mechanisms.zcdp import zcdp_rho
from dpsim.experiments.nguyen import CHECKS, EXPERIMENTS, MUTANTS
from dpsim.experiments.nguyen import checks as levels
from dpsim.experiments.nguyen.figures.real import FIG2, load
from dpsim.experiments.nguyen.figures.synthetic import FIG1
from dpsim.experiments.nguyen.methods import REAL, SYNTHETIC, resolve, rr_signal

DELTA = 1e-4


# ---------------------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------------------
def test_conversions_match_the_spec_and_the_library():
    # docs/nguyen.md, Errata and modes (Q4) at ε* = 1, δ = 1e-4: paper 0.0271, Bun–Steinke 0.0258, CKS 0.0406
    assert levels.rho_paper(1.0, DELTA) == pytest.approx(0.0271, abs=5e-5)
    assert levels.rho_bun_steinke(1.0, DELTA) == pytest.approx(0.0258, abs=5e-5)
    assert levels.rho_cks(1.0, DELTA) == pytest.approx(0.0406, abs=5e-5)
    # Bun–Steinke's forward map inverted exactly
    r = levels.rho_bun_steinke(2.0, DELTA)
    assert r + 2 * math.sqrt(r * math.log(1 / DELTA)) == pytest.approx(2.0, rel=1e-12)
    for eps in (0.01, 0.1, 1.0, 7.5):
        for conversion in ("paper", "bun_steinke", "cks"):
            assert levels.RHO[conversion](eps, DELTA) == pytest.approx(
                float(zcdp_rho(eps, DELTA, conversion)), rel=1e-7
            )


def test_cks_epsilon_is_the_infimum_over_a_dense_grid():
    rho = 0.05
    alpha = 1.0 + np.geomspace(1e-4, 1e6, 200001)
    brute = np.min(
        alpha * rho + np.log1p(-1 / alpha) - (math.log(DELTA) + np.log(alpha)) / (alpha - 1)
    )
    assert levels.cks_epsilon(rho, DELTA) == pytest.approx(brute, rel=1e-6)


def test_discrete_variances_against_direct_sums():
    for sigma in (0.3, 0.5, 1.0, 2.5, 9.0):
        z = np.arange(-2000, 2001, dtype=float)
        w = np.exp(-z * z / (2 * sigma * sigma))
        assert levels.discrete_gaussian_var(sigma * sigma)[0] == pytest.approx(
            np.sum(z * z * w) / np.sum(w), rel=1e-12
        )
        assert levels.discrete_gaussian_var(sigma * sigma)[0] == pytest.approx(
            discrete_gaussian_variance(sigma), rel=1e-12
        )
    assert levels.discrete_gaussian_var(0.25)[0] / 0.25 == pytest.approx(
        0.86, abs=0.005
    )  # nguyen §4.2
    for t in (0.7, 3.0, 40.0):
        z = np.arange(-200000, 200001, dtype=float)
        p = np.exp(-np.abs(z) / t)
        assert levels.discrete_laplace_var(t) == pytest.approx(
            np.sum(z * z * p) / np.sum(p), rel=1e-10
        )
    assert levels.discrete_laplace_var(2000.0) == pytest.approx(2 * 2000.0**2, rel=1e-6)


def test_noise_predictions_reproduce_the_spec_table():
    # docs/nguyen.md, Mechanisms and estimators: paper accounting, ε* = 1: σ = √(m(m − 1))/ε₀ = 19.2 at m = 5; synthetic ÷ √2;
    # Laplace t = m(m − 1)/ε* = 20 at m = 5; strict: Δ² = 2⌊m²/4⌋ = 12 with the CKS ρ
    point = {
        "dataset": "lsat",
        "eps": 1.0,
        "delta": DELTA,
        "mode": "paper",
        "accounting": "auto",
        "conversion": "auto",
    }
    assert math.sqrt(levels.gaussian_noise_var(point, "nguyen-fig2")) == pytest.approx(
        19.2, abs=0.05
    )
    fig1 = {**point, "n_items": 5}
    assert math.sqrt(levels.gaussian_noise_var(fig1, "nguyen-fig1")) == pytest.approx(
        19.2 / math.sqrt(2), abs=0.05
    )
    assert levels.laplace_noise_var(point, "nguyen-fig2") == pytest.approx(
        levels.discrete_laplace_var(20.0)
    )
    strict = {**point, "mode": "strict"}
    assert levels.gaussian_noise_var(strict, "nguyen-fig2") == pytest.approx(
        12 / (2 * 0.04063), rel=1e-3
    )
    assert levels.laplace_noise_var(strict, "nguyen-fig2") == pytest.approx(
        levels.discrete_laplace_var(12.0)
    )


def test_sparse_prediction_is_the_binomial_average():
    point = {
        "n_items": 25,
        "eps": 1.0,
        "delta": DELTA,
        "mode": "paper",
        "accounting": "auto",
        "conversion": "auto",
        "p0": "proposed",
    }
    p0 = 2 * math.log2(25) / 25
    # σ² is linear in |E| here (σ ≫ 1), so the average is p₀·m(m − 1)/(2ρ)
    assert levels.sparse_gaussian_noise_var(point, "nguyen-fig3") == pytest.approx(
        p0 * 600 / (2 * levels.rho_paper(1.0, DELTA)), rel=1e-9
    )
    dense = {**point, "p0": "1"}
    assert levels.sparse_gaussian_noise_var(dense, "nguyen-fig3") == pytest.approx(
        levels.gaussian_noise_var({k: v for k, v in dense.items() if k != "p0"}, "nguyen-fig3"),
        rel=1e-12,
    )


def test_shuffled_rr_budget_matches_the_spec_table_and_the_library():
    # ε_RR from the authors' inversion (nguyen supp. §4; docs/nguyen.md, Mechanisms and estimators), δ = 1e-4
    for n, eps, want in (
        (1000, 0.01, 0.0239),
        (1000, 1.0, 1.8423),
        (649, 1.0, 1.41),
        (649, 0.4, 0.6951),
        (131, 1.0, 1.0),
        (1000, 5.0, 5.0),
    ):
        assert levels.shuffled_rr_budget(eps, DELTA, n) == pytest.approx(want, abs=6e-4)
    for n in (131, 649, 1000, 2000):
        for eps in (0.05, 0.5, 1.0, 2.0):
            assert levels.shuffled_rr_budget(eps, DELTA, n) == pytest.approx(
                shuffle_rr_epsilon(eps, DELTA, n), rel=1e-6
            )


def test_dataset_shapes_are_the_loaded_ones_and_fully_observed():
    for name, (n, m) in levels.DATASET_SHAPES.items():
        data = load(name)
        assert (data.n_users, data.n_items) == (n, m)
        assert bool(np.all(np.asarray(data.observed)))  # k_l = m for every user (RR's split)


def test_regions_follow_the_monte_carlo_error():
    assert levels.relative_se("gaussian", 100, 5) == pytest.approx(0.5 * math.sqrt(2 / 2000))
    assert levels.half_width(0.0158) == 0.10
    for check in levels.LEVEL_CHECKS:
        lo, hi = check.region
        assert lo < 1.0 < hi and hi - 1.0 == pytest.approx(1.0 - lo)
        assert hi - 1.0 <= 0.3
        assert "6 MC standard errors" in check.description


# ---------------------------------------------------------------------------------------
# The metrics measure the release
# ---------------------------------------------------------------------------------------
def _counts(m=5, n=300, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((n, m)) < 0.5
    observed = np.ones((n, m), bool)
    return (
        jnp.asarray(x),
        jnp.asarray(observed),
        differential_counts(jnp.asarray(x), jnp.asarray(observed)),
    )


def released_noise(key, n_items: int, mechanism: str, scale) -> jax.Array:
    """The noise Z (n_items, n_items) that :func:`private_differential_counts` adds to the counts
    with ``key`` at ``scale`` (its ``info["noise_scale"]``), drawn again: the same key path
    (the second half of ``jax.random.split(key)``) and the same sampler, so these are the very
    draws it released on the queried pairs."""
    _, k_noise = jax.random.split(key)
    return count_noise(k_noise, n_items, scale, mechanism)[0]


@functools.partial(jax.jit, static_argnames="mechanism")
def _released_and_rebuilt(key, Y, mechanism):
    """The mechanism's estimate, and the estimate rebuilt from the redrawn noise (one program)."""
    kw = {"rho": 0.05} if mechanism == "gaussian" else {"eps": 2.0}
    release = private_differential_counts(
        key, Y, mechanism=mechanism, noise="all", clip="one", **kw
    )
    fit = private_spectral_estimate(release, solver="solve")
    z = released_noise(key, Y.shape[0], mechanism, fit.info["noise_scale"])
    off = ~jnp.eye(Y.shape[0], dtype=bool)
    rebuilt = spectral_estimate(jnp.where(off, jnp.maximum(1.0, Y + z), 0.0), 1.0, "solve")
    return (
        fit.theta,
        rebuilt.theta,
        noise_mean_square(z),
        jnp.sum(jnp.where(off, z * z, 0.0)),
        fit.info["noise_mean_square"],
    )


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_redrawn_noise_is_the_released_noise(mechanism):
    """The redrawn noise rebuilds the released estimate, and the estimate's own
    ``noise_mean_square`` (what the ``noise_ms`` metric reports) is that noise's mean square
    over the 5 × 4 ordered pairs."""
    _, _, Y = _counts()
    theta, rebuilt, ms, total, reported = _released_and_rebuilt(jax.random.PRNGKey(3), Y, mechanism)
    np.testing.assert_allclose(np.asarray(rebuilt), np.asarray(theta), rtol=0, atol=1e-12)
    assert float(ms) == pytest.approx(float(total) / 20) and float(total) > 0
    assert float(reported) == pytest.approx(float(total) / 20, rel=1e-12)


def test_rr_signal_is_of_the_released_responses():
    x, observed, _ = _counts()
    assert float(rr_signal(x, x, observed)) == 1.0
    assert float(rr_signal(~x, x, observed)) == -1.0


def test_calibrated_experiments_report_the_metrics():
    by_name = {e.name: e for e in EXPERIMENTS}
    for check in levels.LEVEL_CHECKS:
        assert (
            check.statistic.metric
            in by_name[check.experiment].methods[check.statistic.method].metrics
        )
    assert "noise_ms" not in by_name["nguyen-p0"].methods["gaussian_sparse"].metrics


# ---------------------------------------------------------------------------------------
# Mutants
# ---------------------------------------------------------------------------------------
def _derived(experiment, point):
    out = {}
    for d in experiment.derived:
        if "rho" in d.names:
            out.update(d.fn(point))
    return out


def _point(mode="paper", eps=1.0):
    return {
        "dataset": "lsat",
        "n_items": 5,
        "n_users": 1000,
        "eps": eps,
        "delta": DELTA,
        "mode": mode,
        "accounting": "auto",
        "conversion": "auto",
    }


def test_mutants_are_named_and_apply():
    names = [m.name for m in MUTANTS]
    assert len(set(names)) == len(names) and all(n.startswith("nguyen-") for n in names)
    experiments = {e.name: e for e in EXPERIMENTS}
    for mutant in MUTANTS:
        for name in mutant.experiments:
            assert mutant.mutate(experiments[name]).name == name


@pytest.mark.parametrize(
    "name, value, factor",
    [
        ("nguyen-gaussian-sigma-half", "rho", 4.0),
        ("nguyen-gaussian-sigma-double", "rho", 0.25),
        ("nguyen-gaussian-zcdp-half-dropped", "rho", 2.0),
        ("nguyen-gaussian-eps-not-converted", "rho", 2 * math.log(1 / DELTA)),
        ("nguyen-gaussian-lemma41-as-printed", "rho", math.sqrt(20)),
        ("nguyen-rr-at-2eps", "eps_rr", 2.0),
        ("nguyen-rr-no-budget-split", "eps_rr", 5.0),
        ("nguyen-rr-no-shuffle-amplification", "eps_rr", 1.0 / 1.8423),
    ],
)
def test_mutants_change_what_they_claim(name, value, factor):
    mutant = {m.name: m for m in MUTANTS}[name]
    base, mutated = _derived(FIG2, _point()), _derived(mutant.mutate(FIG2), _point())
    assert mutated[value] / base[value] == pytest.approx(factor, rel=1e-3)


def test_strict_conversion_mutant_leaves_paper_mode_alone():
    mutant = {m.name: m for m in MUTANTS}["nguyen-gaussian-strict-paper-conversion"]
    assert _derived(mutant.mutate(FIG2), _point())["rho"] == _derived(FIG2, _point())["rho"]
    assert _derived(mutant.mutate(FIG2), _point("strict"))["rho"] == pytest.approx(
        levels.rho_paper(1.0, DELTA)
    )


# ---------------------------------------------------------------------------------------
# A level check catches a mutant (noise drawn through the experiment's derived ρ)
# ---------------------------------------------------------------------------------------
_noise = jax.jit(
    jax.vmap(
        lambda key, sigma: noise_mean_square(released_noise(key, 5, "gaussian", sigma)),
        in_axes=(0, None),
    )
)


def _noise_table(experiment, reps=100):
    rows = []
    keys = jax.random.split(jax.random.PRNGKey(11), reps)
    for eps in levels.FIG2_EPS:
        for mode in ("paper", "strict"):
            point = _point(mode, eps)
            rho = _derived(experiment, point)["rho"]
            sigma = gaussian_count_sigma(rho, dense_item_graph(5), resolve(point, REAL).accounting)
            for rep, v in enumerate(np.asarray(_noise(keys, sigma))):
                rows.append(
                    {
                        "dataset": "lsat",
                        "eps": eps,
                        "delta": DELTA,
                        "mode": mode,
                        "accounting": "auto",
                        "conversion": "auto",
                        "rep": rep,
                        "method": "gaussian",
                        "noise_ms": float(v),
                    }
                )
    table = pd.DataFrame(rows)
    table.attrs["method_columns"] = ["noise_ms"]
    return table


def test_level_check_passes_on_the_code_and_fails_under_mutants():
    check = {c.name: c for c in CHECKS}["nguyen-fig2-gaussian-noise-level-lsat"]
    assert check.evaluate(_noise_table(FIG2), family=60).verdict == "PASS"
    mutants = {m.name: m for m in MUTANTS}
    for name in (
        "nguyen-gaussian-sigma-half",
        "nguyen-gaussian-zcdp-half-dropped",
        "nguyen-gaussian-strict-paper-conversion",
    ):
        assert (
            check.evaluate(_noise_table(mutants[name].mutate(FIG2)), family=60).verdict == "FAIL"
        ), name


# ---------------------------------------------------------------------------------------
# A noise variance off by 10% on one path (chain × mode) alone FAILs Fig. 1's level check at
# its default replicates (docs/nguyen.md, Mutants and level checks). Fig. 1 runs for tens of minutes, so
# these mutants are judged here, on the noise drawn through Fig. 1's derived ρ and the
# library's σ and t at the points the check reads, not re-run by `dpsim verify --mutants`.
# ---------------------------------------------------------------------------------------
VARIANCE_ERROR = 1.1


def _one_mode_rho(mode: str) -> Mutant:
    """Fig. 1's discrete-Gaussian ρ ÷ 1.1 (σ² × 1.1) in ``mode`` only."""
    return Mutant(
        f"nguyen-gaussian-{mode}-variance-1.1",
        "σ² × 1.1 in one mode",
        (FIG1.name,),
        overridden_derived(
            "rho",
            lambda point, derived: (
                derived["rho"] / VARIANCE_ERROR if point["mode"] == mode else derived["rho"]
            ),
        ),
    )


@functools.partial(jax.jit, static_argnames=("n_items", "mechanism"))
def _fig1_noise(keys, scale, n_items, mechanism):
    return jax.vmap(lambda key: noise_mean_square(count_noise(key, n_items, scale, mechanism)[0]))(
        keys
    )


def _fig1_noise_table(experiment, mechanism: str, scaled_mode: str | None = None):
    """noise_ms rows of Fig. 1 at the points its level check reads (n = 1000) with its two
    smallest m (the larger m only add power: their standard errors are 2–8× smaller, and they
    would take minutes to draw), R = its default replicates; ``scaled_mode``: the
    discrete-Laplace t × √1.1 in that mode (Laplace's variance × 1.1, its t ≥ 80 here)."""
    rows = []
    keys = jax.random.split(jax.random.PRNGKey(12), FIG1.reps)
    for m in sorted(FIG1.axes["n_items"])[:2]:
        for eps in levels.FIG1_EPS:
            for mode in ("paper", "strict"):
                point = {
                    "n_items": m,
                    "n_users": 1000,
                    "eps": eps,
                    "delta": FIG1.axes["delta"][0],
                    "mode": mode,
                    "accounting": "auto",
                    "conversion": "auto",
                    "p0": "proposed",
                }
                accounting = resolve(point, SYNTHETIC).accounting
                if mechanism == "gaussian":
                    scale = gaussian_count_sigma(
                        _derived(experiment, point)["rho"], dense_item_graph(m), accounting
                    )
                else:
                    scale = laplace_count_scale(eps, dense_item_graph(m), accounting)
                    scale = scale * math.sqrt(VARIANCE_ERROR) if mode == scaled_mode else scale
                for rep, v in enumerate(np.asarray(_fig1_noise(keys, scale, m, mechanism))):
                    rows.append({**point, "rep": rep, "method": mechanism, "noise_ms": float(v)})
    table = pd.DataFrame(rows)
    table.attrs["method_columns"] = ["noise_ms"]
    return table


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_fig1_level_check_fails_a_ten_percent_variance_error_on_one_mode(mechanism):
    check = {c.name: c for c in CHECKS}[f"nguyen-fig1-{mechanism}-noise-level"]
    family = sum(1 for c in CHECKS if not c.report_only)
    assert check.evaluate(_fig1_noise_table(FIG1, mechanism), family=family).verdict == "PASS"
    for mode in ("paper", "strict"):
        if mechanism == "gaussian":
            table = _fig1_noise_table(_one_mode_rho(mode).mutate(FIG1), mechanism)
        else:
            table = _fig1_noise_table(FIG1, mechanism, scaled_mode=mode)
        assert check.evaluate(table, family=family).verdict == "FAIL", mode
