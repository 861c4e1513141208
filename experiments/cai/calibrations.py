"""cai: the level checks that pin every mechanism's calibration, and the mutants (plausible
bugs) they must catch (closed forms and tolerances: :mod:`.levels`).

| mechanism | experiment | check(s) |
|---|---|---|
| Alg. 2, edge counts, Laplace(2/ε) | ``cai-fig3``; ``cai-edge-vs-individual`` (unit = edge) | ``cai-level-edge-counts-noise``, ``cai-level-matched-edge-counts-noise`` |
| Alg. 1, edge DP, λ = 8/ε, γ = max(1/ε, c0√(np ln n)) | ``cai-fig3`` (c0 = 2: the c0 branch) | ``cai-level-edge-mle-noise``, ``cai-level-edge-mle-mean`` |
| Alg. 1, edge DP, γ = 1/ε branch (c0 = 0) | ``cai-edge-vs-individual`` (unit = edge) | ``cai-level-matched-edge-mle-noise``, ``-mean`` |
| Alg. 1, individual DP, λ = 8L/ε, γ = 2L/ε | ``cai-edge-vs-individual`` (unit = individual, L = 1, 2, 5, 10) | ``cai-level-indiv-mle-noise``, ``-noise-pooled``, ``cai-level-indiv-mle-mean`` |
| Alg. 3 strict, Laplace(2L/ε) | ``cai-edge-vs-individual`` (unit = individual) | ``cai-level-indiv-counts-noise-strict``, ``-strict-pooled`` |
| Alg. 3 paper, Laplace(L/ε) | ``cai-fig7`` (mode = paper) | ``cai-level-indiv-counts-noise-paper``, ``-paper-pooled`` |

On every path one check FAILs a noise variance off by 10% at the default replicates (the
``*-variance-1.1`` mutants, one path each): the per-point checks of the individual paths
(100–200 rows per point) cannot, so the ``-pooled`` checks judge all of a path's rows at once,
each divided by its own point's closed form (:class:`.levels.PerRowRatio`; docs/cai.md,
Mutants and level checks, lists each check's power).

Each mutant re-runs only the experiment whose checks can catch it (``cai-fig3``,
``cai-edge-vs-individual`` or ``cai-fig7``; ``dpsim show`` estimates each one's run time).
"""
from __future__ import annotations

import math

import jax.numpy as jnp

from dpsim.engine.judgement.checks import level_check
from dpsim.engine.judgement.mutants import Mutant, replaced_method, scaled_analysis, wrapped_method
from dpsim.mechanisms.btl_perturbation import LaplacePerturbation
from dpsim.mechanisms.laplace import laplace_noise
from dpsim.models import real_items

from . import edge, individual, scaling
from dpsim.engine.judgement.statistics import Mean

from .levels import (NOISE_COLUMN, PerturbationNoise, edge_count_noise_variance, edge_perturbation,
                     expected_cv_se, individual_count_noise_variance, individual_perturbation,
                     perturbation_mean_ratio, perturbation_noise_check, perturbation_noise_msq,
                     pooled_level_check, region, tau_shift_msq)

INF = math.inf

# ---------------------------------------------------------------------------------------
# cai-fig3: edge DP, n = 300, p ∈ {0.25, 0.5, 0.75, 1}, c0 = 2, 120 replicates
# ---------------------------------------------------------------------------------------
FIG3 = edge.FIG3
FIG3_EPS = [e for e in FIG3.axes["eps"] if math.isfinite(e)]
FIG3_ROWS = FIG3.reps * len(FIG3.axes["p"])                         # rows per ε point (p pooled)
FIG3_N = FIG3.axes["n_items"][0]
SE_FIG3_SQUARES = expected_cv_se(5.0 / FIG3_N, FIG3_ROWS)           # 0.0059: a mean of n squared Laplace draws
SE_FIG3_MEAN = expected_cv_se(2.0, FIG3_ROWS)                       # 0.065: n·mean(θ̃)², a scaled χ²₁


def _edge_lam_gamma(point):
    return edge_perturbation(point["eps"], point["n_items"], point["p"], point["c0"])


FIG3_CHECKS = [
    level_check("cai-level-edge-counts-noise", FIG3.name, "noise_msq", "counts",
                lambda pt: edge_count_noise_variance(pt["eps"]), *region(SE_FIG3_SQUARES),
                where={"eps": FIG3_EPS}, pool=("p",), at=("eps",), formula="8/ε²",
                description="Alg. 2: mean square of the released count noise = 8/ε² (Laplace(2/ε), cai Algorithm 2, §2.3.1); "
                            f"exact, region ±6 expected SE ({SE_FIG3_SQUARES:.4f}: √(5/(n·R)), R = 4 p × 120)",
                pins=("mechanism:edge-counts",)),
    perturbation_noise_check("cai-level-edge-mle-noise", FIG3.name, "mle",
                           lambda pt: perturbation_noise_msq(_edge_lam_gamma(pt)[0]), *region(SE_FIG3_SQUARES),
                           where={"eps": FIG3_EPS}, pool=("p",), at=("eps",), formula="2λ², λ = 8/ε",
                           gamma=lambda pt: _edge_lam_gamma(pt)[1],
                           description="Alg. 1 (edge): mean (r − γθ̃)² = mean w² = 2λ², λ = 8/ε, with r = −∇𝓛(θ̃) "
                                       "and γ = max(1/ε, c0√(np ln n)) (cai Algorithm 1, §2.2.1); exact at the optimum, "
                                       f"region ±6 expected SE ({SE_FIG3_SQUARES:.4f})",
                           pins=("mechanism:edge-objective-perturbation",)),
    level_check("cai-level-edge-mle-mean", FIG3.name, "op_theta_mean_sq", "mle",
                lambda pt: perturbation_mean_ratio(*_edge_lam_gamma(pt)), *region(SE_FIG3_MEAN),
                where={"eps": FIG3_EPS}, pool=("p",), at=("eps",), formula="2λ²/γ²",
                description="Alg. 1 (edge): n·mean(θ̃)² = n·mean(w)²/γ² has mean 2λ²/γ² (1ᵀ∇𝓛 = 0, docs/cai.md, Mechanisms and estimators), "
                            f"pins λ/γ; exact, region ±6 expected SE ({SE_FIG3_MEAN:.3f}: √(2/R), χ²₁)",
                pins=("mechanism:edge-objective-perturbation",)),
]

# ---------------------------------------------------------------------------------------
# cai-edge-vs-individual: n = 200, p = 1 (S = 199), L ∈ {1, 2, 5, 10}, ε ∈ {10, 20}, 100 reps
# ---------------------------------------------------------------------------------------
MATCHED = scaling.MATCHED
M_N, M_REPS, M_L = scaling.MATCHED_N, MATCHED.reps, len(MATCHED.axes["per_user"])
SE_M_SQUARES_POOLED = expected_cv_se(5.0 / M_N, M_REPS * M_L)       # 0.0079 (edge rows, L labels pooled)
SE_M_SQUARES = expected_cv_se(5.0 / M_N, M_REPS)                     # 0.016 (one (L, ε) point)
SE_M_MEAN_POOLED = expected_cv_se(2.0, M_REPS * M_L)                 # 0.071 (edge: per_user labels pooled)
SE_M_MEAN = expected_cv_se(2.0, M_REPS * len(MATCHED.axes["eps"]))  # 0.10 (individual: ε pooled)
M_POINTS = M_L * len(MATCHED.axes["eps"])                           # individual (L, ε) points
SE_M_SQUARES_ALL = expected_cv_se(5.0 / M_N, M_REPS * M_POINTS)     # 0.0056 (individual: every (L, ε) pooled)
MATCHED_EDGE_C0 = 0.0   # the matched design's edge Alg. 1 uses the privacy-minimal ridge (scaling docstring)


def _matched_per_item(point):
    """S = (n − 1)p, the matched design's comparisons per item (:mod:`.scaling`)."""
    return (point["n_items"] - 1.0) * point["p"]


def _matched_count_variance(point):
    if point["unit"] == "edge":
        return edge_count_noise_variance(point["eps"])
    return individual_count_noise_variance(point["eps"], point["per_user"], point["mode"])


def _matched_lam_gamma(point):
    if point["unit"] == "edge":
        return edge_perturbation(point["eps"], point["n_items"], point["p"], MATCHED_EDGE_C0)
    return individual_perturbation(point["eps"], point["per_user"])


def _count_shift(point):
    return tau_shift_msq(_matched_count_variance(point), point["n_items"], _matched_per_item(point))


EDGE_UNIT, INDIVIDUAL_UNIT = {"unit": ["edge"]}, {"unit": ["individual"]}

MATCHED_CHECKS = [
    level_check("cai-level-matched-edge-counts-noise", MATCHED.name, "privacy_msq", "counts", _count_shift,
                *region(SE_M_SQUARES_POOLED), where=EDGE_UNIT, pool=("per_user",), at=("eps",),
                formula="8/ε²·(1/(np))²",
                description="Alg. 2 on the τ scale: mean (τ̂ − τ̂_raw)² = Var(Laplace(2/ε))·((n−1)/(nS))², "
                            f"S = (n − 1)p; exact, region ±6 expected SE ({SE_M_SQUARES_POOLED:.4f})",
                pins=("mechanism:edge-counts",)),
    level_check("cai-level-indiv-counts-noise-strict", MATCHED.name, "privacy_msq", "counts", _count_shift,
                *region(SE_M_SQUARES), where=INDIVIDUAL_UNIT, at=("per_user", "eps"),
                formula="2(2L/ε)²·(1/(np))²",
                description="Alg. 3 strict on the τ scale: Var(Laplace(2L/ε))·((n−1)/(nS))² at every L and ε "
                            f"(cai Algorithm 3, §3.3; docs/cai.md, Errata and modes (E3)); exact, region ±6 expected SE ({SE_M_SQUARES:.3f})",
                pins=("mechanism:individual-counts-strict",)),
    perturbation_noise_check("cai-level-matched-edge-mle-noise", MATCHED.name, "mle",
                           lambda pt: perturbation_noise_msq(_matched_lam_gamma(pt)[0]),
                           *region(SE_M_SQUARES_POOLED), where=EDGE_UNIT, pool=("per_user",), at=("eps",),
                           formula="2λ², λ = 8/ε", gamma=lambda pt: _matched_lam_gamma(pt)[1],
                           description="Alg. 1 (edge, γ = 4κ2/ε = 1/ε branch): mean (r − γθ̃)² = 2λ², λ = 8/ε; "
                                       f"exact, region ±6 expected SE ({SE_M_SQUARES_POOLED:.4f})",
                           pins=("mechanism:edge-objective-perturbation",)),
    level_check("cai-level-matched-edge-mle-mean", MATCHED.name, "op_theta_mean_sq", "mle",
                lambda pt: perturbation_mean_ratio(*_matched_lam_gamma(pt)), *region(SE_M_MEAN_POOLED),
                where=EDGE_UNIT, pool=("per_user",), at=("eps",), formula="2λ²/γ² = 128",
                description="Alg. 1 (edge, γ = 1/ε): n·mean(θ̃)² has mean 2λ²/γ² = 128; exact, region ±6 "
                            f"expected SE ({SE_M_MEAN_POOLED:.3f})", pins=("mechanism:edge-objective-perturbation",)),
    perturbation_noise_check("cai-level-indiv-mle-noise", MATCHED.name, "mle",
                           lambda pt: perturbation_noise_msq(_matched_lam_gamma(pt)[0]),
                           *region(SE_M_SQUARES), where=INDIVIDUAL_UNIT, at=("per_user", "eps"),
                           formula="2λ², λ = 8L/ε", gamma=lambda pt: _matched_lam_gamma(pt)[1],
                           description="Alg. 1 (individual, cai Algorithm 1 under individual DP, §3.2): mean (r − γθ̃)² = 2λ², λ = 8L/ε, "
                                       "γ = 2L/ε, at every L and ε; exact, region ±6 expected SE "
                                       f"({SE_M_SQUARES:.3f})", pins=("mechanism:individual-objective-perturbation",)),
    pooled_level_check("cai-level-indiv-counts-noise-strict-pooled", MATCHED.name, Mean("privacy_msq", "counts"),
                       _count_shift, SE_M_SQUARES_ALL, where=INDIVIDUAL_UNIT, pool=("per_user", "eps"),
                       formula="1 = mean of (τ̂ − τ̂_raw)²/(2(2L/ε)²·(1/(np))²)",
                       description="Alg. 3 strict on the τ scale, every (L, ε) pooled: mean over the rows of "
                                   "(τ̂ − τ̂_raw)² ÷ its own point's Var(Laplace(2L/ε))·((n−1)/(nS))² = 1 (each row "
                                   "weighted alike; a 10% error in the noise variance lies ≥ 10 SE outside, where the "
                                   "per-point check's ±6 SE of 0.016 cannot reach it); exact, region ±6 expected SE "
                                   f"({SE_M_SQUARES_ALL:.4f}: √(5/(n·R)), R = {M_POINTS} points × {M_REPS})", pins=("mechanism:individual-counts-strict",)),
    pooled_level_check("cai-level-indiv-mle-noise-pooled", MATCHED.name,
                       PerturbationNoise(NOISE_COLUMN, "mle", gamma=lambda pt: _matched_lam_gamma(pt)[1]),
                       lambda pt: perturbation_noise_msq(_matched_lam_gamma(pt)[0]), SE_M_SQUARES_ALL,
                       where=INDIVIDUAL_UNIT, pool=("per_user", "eps"), formula="1 = mean of (r − γθ̃)²/2λ², λ = 8L/ε",
                       description="Alg. 1 (individual), every (L, ε) pooled: mean over the rows of mean (r − γθ̃)² "
                                   "÷ its own point's 2λ², λ = 8L/ε, γ = 2L/ε = 1 (a 10% error in the noise variance "
                                   "lies ≥ 10 SE outside); exact, region ±6 expected SE "
                                   f"({SE_M_SQUARES_ALL:.4f})", pins=("mechanism:individual-objective-perturbation",)),
    level_check("cai-level-indiv-mle-mean", MATCHED.name, "op_theta_mean_sq", "mle",
                lambda pt: perturbation_mean_ratio(*_matched_lam_gamma(pt)), *region(SE_M_MEAN),
                where=INDIVIDUAL_UNIT, pool=("eps",), at=("per_user",), formula="2λ²/γ² = 32",
                description="Alg. 1 (individual): n·mean(θ̃)² has mean 2λ²/γ² = 2·4² = 32 at every L (λ/γ = 4); "
                            f"exact, region ±6 expected SE ({SE_M_MEAN:.2f})",
                pins=("mechanism:individual-objective-perturbation",)),
]

# ---------------------------------------------------------------------------------------
# cai-fig7: individual DP, mode = paper, n = 16, L = 5, 200 replicates
# ---------------------------------------------------------------------------------------
FIG7 = individual.FIG7
FIG7_EPS = [e for e in FIG7.axes["eps"] if math.isfinite(e)]
SE_FIG7 = expected_cv_se(5.0 / FIG7.axes["n_items"][0], FIG7.reps * len(FIG7.axes["n_users"]))   # 0.020
SE_FIG7_ALL = expected_cv_se(5.0 / FIG7.axes["n_items"][0],
                            FIG7.reps * len(FIG7.axes["n_users"]) * len(FIG7_EPS))             # 0.0081

FIG7_CHECKS = [
    level_check("cai-level-indiv-counts-noise-paper", FIG7.name, "noise_msq", "counts",
                lambda pt: individual_count_noise_variance(pt["eps"], pt["per_user"], pt["mode"]),
                *region(SE_FIG7), where={"eps": FIG7_EPS}, pool=("n_users",), at=("eps",), formula="2(L/ε)²",
                description="Alg. 3 in the paper's mode: mean square of the released count noise = 2(L/ε)² "
                            f"(Laplace(L/ε), cai Algorithm 3, §3.3); exact, region ±6 expected SE ({SE_FIG7:.3f})", pins=("mechanism:individual-counts-paper",)),
    pooled_level_check("cai-level-indiv-counts-noise-paper-pooled", FIG7.name, Mean("noise_msq", "counts"),
                       lambda pt: individual_count_noise_variance(pt["eps"], pt["per_user"], pt["mode"]),
                       SE_FIG7_ALL, where={"eps": FIG7_EPS}, pool=("n_users", "eps"),
                       formula="1 = mean of (Ñ − N)²/2(L/ε)²",
                       description="Alg. 3 in the paper's mode, every (m, ε) pooled: mean over the rows of the "
                                   "released count noise's mean square ÷ its own point's 2(L/ε)² = 1 (a 10% error in "
                                   "the noise variance lies ≥ 5.8 SE outside the region, where the per-ε check's "
                                   f"±6 SE of {SE_FIG7:.3f} cannot reach it); exact, region ±6 expected SE "
                                   f"({SE_FIG7_ALL:.4f}: √(5/(n·R)), R = {len(FIG7_EPS)} ε × 4 m × {FIG7.reps})", pins=("mechanism:individual-counts-paper",)),
]

CHECKS = [*FIG3_CHECKS, *MATCHED_CHECKS, *FIG7_CHECKS]


# ---------------------------------------------------------------------------------------
# Mutants: miscalibrated versions of the mechanisms (each declared on the one experiment
# whose level checks can catch it)
# ---------------------------------------------------------------------------------------
def edge_release(lam_factor: float = 1.0, log=jnp.log):
    """A miscalibrated Algorithm 1 release (edge DP) with the library's draws: λ = ``lam_factor``·8/ε,
    γ = max(1/ε, c0√(np·log n)) with the given ``log``."""
    def release(key, eps, p, capacity, *, c0, n_items):
        n = jnp.asarray(n_items, jnp.float64)
        lam = lam_factor * 8.0 / eps
        gamma = jnp.maximum(1.0 / eps, c0 * jnp.sqrt(n * p * log(n)))
        w = jnp.where(real_items(capacity, n_items), laplace_noise(key, lam, (capacity,)), 0.0)
        return LaplacePerturbation(gamma, w)
    return release


def individual_release(*, eps_factor: float = 1.0, lam_l: bool = True, gamma_l: bool = True,
                       lam_factor: float = 1.0):
    """A miscalibrated Algorithm 1 release (individual DP) with the library's draws: λ = ``lam_factor``·8L/ε and
    γ = 2L/ε at ε·``eps_factor``, L dropped from λ or γ when asked."""
    def release(key, eps, per_user, n_items):
        e = eps * eps_factor
        lam = lam_factor * 8.0 * (per_user if lam_l else 1.0) / e
        gamma = 2.0 * (per_user if gamma_l else 1.0) / e
        return LaplacePerturbation(gamma, laplace_noise(key, lam, (n_items,)))
    return release


def with_mode(mode: str):
    """A method wrapper: Algorithm 3 computed in ``mode`` whatever the grid's ``mode`` says."""
    def wrapper(fn):
        return lambda key, ctx: fn(key, ctx._replace(shape={**ctx.shape, "mode": mode}))
    return wrapper


def eps_scaled_where(factor: float, **shape):
    """A method wrapper: the method sees ε·``factor`` on the paths whose shape values are
    ``shape`` (e.g. ``unit="individual"``), the true ε elsewhere: one path miscalibrated alone."""
    def wrapper(fn):
        def mutated(key, ctx):
            if all(ctx.shape[axis] == value for axis, value in shape.items()):
                ctx = ctx._replace(analysis={**ctx.analysis, "eps": ctx.analysis["eps"] * factor})
            return fn(key, ctx)
        return mutated
    return wrapper


# A noise variance off by 10% on one path alone (noise scale × √1.1: ε ÷ √1.1 where the scale
# is ∝ 1/ε, or λ × √1.1): the smallest error the level checks must FAIL at the default
# replicates (docs/cai.md, Mutants and level checks).
VARIANCE_ERROR = 1.1
SCALE_ERROR = math.sqrt(VARIANCE_ERROR)

MUTANTS = [
    # also on cai-published-fig1, where the ε profile against the authors' results must see them
    Mutant("cai-edge-counts-noise-half", "Alg. 2 with Laplace(1/ε): the ℓ∞ sensitivity 1 for the ℓ1 sensitivity 2 "
           "(released at 2ε)", (FIG3.name, "cai-published-fig1"), scaled_analysis({"eps": 2.0}, methods=["counts"]), breaks=("mechanism:edge-counts",)),
    Mutant("cai-edge-counts-noise-double", "Alg. 2 with Laplace(4/ε) (noise × 2)", (FIG3.name, "cai-published-fig1"),
           scaled_analysis({"eps": 0.5}, methods=["counts"]), breaks=("mechanism:edge-counts",)),
    Mutant("cai-edge-mle-lambda-half", "Alg. 1 (edge) with λ = 4/ε (κ1 taken as ½)", (FIG3.name,),
           replaced_method("mle", edge.make_mle_fn(edge_release(lam_factor=0.5))),
                           breaks=("mechanism:edge-objective-perturbation",)),
    Mutant("cai-edge-mle-at-half-eps", "Alg. 1 (edge) calibrated at ε/2: λ = 16/ε (γ's c0 branch unchanged)",
           (FIG3.name,), scaled_analysis({"eps": 0.5}, methods=["mle"]),
           breaks=("mechanism:edge-objective-perturbation",)),
    Mutant("cai-edge-mle-gamma-log10", "Alg. 1 (edge) with γ = c0√(np log₁₀ n) (log base 10 for the natural log)",
           (FIG3.name,), replaced_method("mle", edge.make_mle_fn(edge_release(log=jnp.log10))),
           breaks=("mechanism:edge-objective-perturbation",)),
    Mutant("cai-indiv-counts-strict-as-paper", "Alg. 3 in strict mode computed with the paper's Laplace(L/ε) "
           "(the errata's factor 2, docs/cai.md, Errata and modes (E3))", (MATCHED.name,), wrapped_method("counts", with_mode("paper")),
           breaks=("mechanism:individual-counts-strict",)),
    Mutant("cai-indiv-mle-at-2eps", "Alg. 1 (individual) calibrated at 2ε: λ = 4L/ε, γ = L/ε", (MATCHED.name,),
           replaced_method("mle", scaling.make_matched_mle_fn(individual_release(eps_factor=2.0))),
                           breaks=("mechanism:individual-objective-perturbation",)),
    Mutant("cai-indiv-mle-lambda-without-L", "Alg. 1 (individual) with the edge λ = 8/ε (L dropped from the "
           "sensitivity), γ = 2L/ε", (MATCHED.name,),
           replaced_method("mle", scaling.make_matched_mle_fn(individual_release(lam_l=False))),
                           breaks=("mechanism:individual-objective-perturbation",)),
    Mutant("cai-indiv-mle-gamma-without-L", "Alg. 1 (individual) with γ = 2/ε (L dropped), λ = 8L/ε",
           (MATCHED.name,), replaced_method("mle", scaling.make_matched_mle_fn(individual_release(gamma_l=False))),
           breaks=("mechanism:individual-objective-perturbation",)),
    Mutant("cai-indiv-counts-paper-as-strict", "Alg. 3 in the paper's mode computed with Laplace(2L/ε) "
           "(the errata's factor 2 the other way)", (FIG7.name,), wrapped_method("counts", with_mode("strict")), breaks=("mechanism:individual-counts-paper",)),
    Mutant("cai-edge-counts-variance-1.1", "Alg. 2 with Laplace(2√1.1/ε): the count noise's variance × 1.1",
           (FIG3.name,), scaled_analysis({"eps": 1 / SCALE_ERROR}, methods=["counts"]), breaks=("mechanism:edge-counts",)),
    Mutant("cai-edge-mle-variance-1.1", "Alg. 1 (edge) with λ = 8√1.1/ε: w's variance × 1.1 (γ kept)", (FIG3.name,),
           replaced_method("mle", edge.make_mle_fn(edge_release(lam_factor=SCALE_ERROR))), breaks=("mechanism:edge-objective-perturbation",)),
    Mutant("cai-matched-edge-counts-variance-1.1", "Alg. 2 in the matched design with Laplace(2√1.1/ε) "
           "(unit = edge only)", (MATCHED.name,),
           wrapped_method("counts", eps_scaled_where(1 / SCALE_ERROR, unit="edge")), breaks=("mechanism:edge-counts",)),
    Mutant("cai-matched-edge-mle-variance-1.1", "Alg. 1 (edge, γ = 1/ε branch) calibrated at ε/√1.1: w's variance "
           "× 1.1, γ × √1.1 (unit = edge only)", (MATCHED.name,),
           wrapped_method("mle", eps_scaled_where(1 / SCALE_ERROR, unit="edge")), breaks=("mechanism:edge-objective-perturbation",)),
    Mutant("cai-indiv-counts-strict-variance-1.1", "Alg. 3 strict with Laplace(2√1.1·L/ε) (unit = individual only)",
           (MATCHED.name,), wrapped_method("counts", eps_scaled_where(1 / SCALE_ERROR, unit="individual")), breaks=("mechanism:individual-counts-strict",)),
    Mutant("cai-indiv-mle-variance-1.1", "Alg. 1 (individual) with λ = 8√1.1·L/ε: w's variance × 1.1 (γ kept)",
           (MATCHED.name,), replaced_method("mle", scaling.make_matched_mle_fn(individual_release(lam_factor=SCALE_ERROR))), breaks=("mechanism:individual-objective-perturbation",)),
    Mutant("cai-indiv-counts-paper-variance-1.1", "Alg. 3 in the paper's mode with Laplace(√1.1·L/ε)", (FIG7.name,),
           scaled_analysis({"eps": 1 / SCALE_ERROR}, methods=["counts"]), breaks=("mechanism:individual-counts-paper",)),
]
