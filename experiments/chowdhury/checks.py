"""chowdhury's checks: those of every figure module (:mod:`.figures`), and the paper-wide level
checks that pin each privacy mechanism's calibration (chowdhury eq. (2), Algorithm 2, Theorem 5.2;
docs/chowdhury.md, Predictions (P12), P14); the mutants they must catch are in :mod:`.mutants`.

**Closed forms** (written here from the paper's formulas, never through the mechanisms' own
helpers, and evaluated from the grid's ε, δ, K at verify time):

* binary RR (eq. (2), chowdhury eq. (2)): P(ỹ ≠ y) = 1/(1 + e^ε) exactly (:func:`rr_flip_probability`);
* K-ary RR (eq. (12), chowdhury eq. (12), §4.4): P(ỹ = y) = e^ε/(e^ε + K − 1) and, for each other label,
  1/(e^ε + K − 1) exactly (:func:`krr_keep_probability`, :func:`krr_other_probability`);
* objective perturbation (Thm 5.2, chowdhury Algorithm 2, Theorem 5.2): (σ/L)² = (8 log(2/δ) + 4ε)/ε²
  (:func:`thm52_noise_sq_per_l_sq`); the exact method's metric ``noise_sq`` is the noise the
  minimiser actually carries, recovered from its first-order condition
  (:func:`.methods.effective_noise_sq`), so E[noise_sq] equals this closed form exactly.

**Regions.** Each closed form above is exact (model error 0), so the region is the
Monte-Carlo error alone: [e^{−5·se}, e^{5·se}] with se the relative standard error of the
mean at the point with the fewest observations, computed from the law itself
(:func:`binomial_rel_se`, :func:`chi2_rel_se`). Five standard errors: a correct mechanism
PASSes unless its 95% interval reaches past 5 se (|z| > 3.04, probability 0.24% per point), and
a FAIL needs the family-wise interval outside, which a correct mechanism reaches with
probability ≪ 0.05/m.

The level checks read the figures' experiments and the two release experiments of
:mod:`.figures.releases`.
"""

from __future__ import annotations

import math

from dpsim.engine.judgement.checks import level_check

from . import model
from .figures import design, fig1, lower_bound, rates
from .figures.releases import KRR_RELEASE, KRR_REPS, OBJPERT_EPS, OBJPERT_RELEASE, OBJPERT_REPS

SE_REGION = 5.0  # region half-width in relative standard errors (module docstring)


# ---------------------------------------------------------------------------------------
# Closed forms (chowdhury eq. (2), Algorithm 2, Theorem 5.2), from the grid's values
# ---------------------------------------------------------------------------------------
def rr_flip_probability(eps: float) -> float:
    """P(ỹ ≠ y) = 1/(1 + e^ε) of binary RR (chowdhury eq. (2), chowdhury eq. (2); 0 at ε = ∞)."""
    return 0.0 if math.isinf(eps) else 1.0 / (1.0 + math.exp(eps))


def krr_keep_probability(eps: float, k: int) -> float:
    """P(ỹ = y) = e^ε/(e^ε + K − 1) of K-ary RR (chowdhury eq. (12), chowdhury eq. (12), §4.4)."""
    return 1.0 / (1.0 + (k - 1) * math.exp(-eps))


def krr_other_probability(eps: float, k: int) -> float:
    """P(ỹ = y') = 1/(e^ε + K − 1) for each given y' ≠ y (eq. (12))."""
    return 1.0 / (math.exp(eps) + k - 1)


def thm52_noise_sq_per_l_sq(eps: float, delta: float) -> float:
    """(σ/L)² = (8 log(2/δ) + 4ε)/ε², Thm 5.2's noise (chowdhury §5, chowdhury Algorithm 2, Theorem 5.2; docs/chowdhury.md, Predictions (P14))."""
    return (8.0 * math.log(2.0 / delta) + 4.0 * eps) / eps**2


def binomial_rel_se(p: float, trials: float) -> float:
    """Relative standard error of a mean of ``trials`` Bernoulli(p) draws: √((1 − p)/(p·trials))."""
    return math.sqrt((1.0 - p) / (p * trials))


def chi2_rel_se(dof: int, rows: int) -> float:
    """Relative standard error of the mean of ``rows`` draws of χ²_r/r: √(2/(r·rows))."""
    return math.sqrt(2.0 / (dof * rows))


def mc_region(rel_se: float, k: float = SE_REGION) -> tuple[float, float]:
    """[e^{−k·se}, e^{k·se}]: an exact closed form's region from the Monte-Carlo error alone."""
    return math.exp(-k * rel_se), math.exp(k * rel_se)


def _region_text(lo, hi, why):
    return f"region [{lo:.4f}, {hi:.4f}] = e^(±{SE_REGION:g}·se), se = {why}; model error 0 (exact law)"


# ---------------------------------------------------------------------------------------
# Level checks
# ---------------------------------------------------------------------------------------
def _rr_flip_check(
    name, experiment, method, eps_values, labels_per_point, where=None, pool=(), pins=()
):
    se = max(binomial_rel_se(rr_flip_probability(e), labels_per_point) for e in eps_values)
    lo, hi = mc_region(se)
    return level_check(
        name,
        experiment,
        "flip_rate",
        method,
        lambda p: rr_flip_probability(p["eps"]),
        lo,
        hi,
        at=("eps",),
        where=where or {},
        pool=pool,
        formula="1/(1+e^ε)",
        pins=pins,
        description="binary RR (eq. (2)): mean flip rate of the released labels / 1/(1+e^ε) at every ε; "
        + _region_text(
            lo, hi, f"{se:.2g} (binomial, {labels_per_point:.3g} labels at the worst ε)"
        ),
    )


def _noise_check(name, experiment, eps_values, rows_per_point, dof, pool=(), pins=()):
    se = chi2_rel_se(dof, rows_per_point)
    lo, hi = mc_region(se)
    return level_check(
        name,
        experiment,
        "noise_sq",
        "objpert_central",
        lambda p: thm52_noise_sq_per_l_sq(p["eps"], p["delta"]),
        lo,
        hi,
        at=("eps",),
        pool=pool,
        pins=pins,
        formula="(8 log(2/δ)+4ε)/ε²",
        description="objective perturbation (Alg. 2, Thm 5.2): mean ‖P_V w‖²/(r L²) of the noise the exact "
        "minimiser carries (first-order condition) / Thm 5.2's (σ/L)² at every ε; "
        + _region_text(lo, hi, f"{se:.2g} (χ²_{dof}/{dof} over {rows_per_point} fits)"),
    )


def _krr_check(name, metric, law, formula, pins=()):
    points = [(e, k) for e in rates.K_EPS for k in rates.K_GRID]
    se = max(binomial_rel_se(law(e, k), rates.K_N * KRR_REPS) for e, k in points)
    lo, hi = mc_region(se)
    return level_check(
        name,
        KRR_RELEASE.name,
        metric,
        "krr_release",
        lambda p: law(p["eps"], p["n_actions"]),
        lo,
        hi,
        at=("eps", "n_actions"),
        formula=formula,
        pins=pins,
        description=f"K-ary RR (eq. (12)): mean {metric} / {formula} at every (ε, K); "
        + _region_text(lo, hi, f"{se:.2g} (binomial, {rates.K_N * KRR_REPS:.3g} labels per point)"),
    )


THEORY_DOF = 4  # theory design: V = 1^⊥ in d = 5
LEVEL_CHECKS = [
    _rr_flip_check(
        "chowdhury-level-rr-flip-rates-eps",
        rates.RATES_EPS.name,
        "rr_local",
        rates.EPS_GRID,
        rates.EPS_N * rates.RATES_EPS.reps,
        pins=("mechanism:rr-labels",),
    ),
    _rr_flip_check(
        "chowdhury-level-rr-flip-fig1",
        "chowdhury-fig1",
        "rr_local",
        model.PAPER_EPS,
        sum(model.PAPER_N) * model.PAPER_REPS,
        pool=("n_samples",),
        pins=("mechanism:rr-labels",),
    ),
    _rr_flip_check(
        "chowdhury-level-sgd-rr-flip-fig1-sgd",
        "chowdhury-fig1-sgd",
        "sgd_rr",
        model.PAPER_EPS,
        sum(model.PAPER_N) * model.PAPER_REPS,
        where={"mode": ["theory"]},
        pool=("n_samples",),
        pins=("mechanism:rr-labels",),
    ),
    _noise_check(
        "chowdhury-level-objpert-noise-rates-eps",
        rates.RATES_EPS.name,
        rates.EPS_GRID,
        rates.RATES_EPS.reps,
        THEORY_DOF,
        pins=("mechanism:objective-perturbation",),
    ),
    _noise_check(
        "chowdhury-level-objpert-noise-rates-n",
        rates.RATES_N.name,
        rates.N_EPS,
        rates.RATE_REPS * len(rates.N_GRID),
        THEORY_DOF,
        pool=("n_samples",),
        pins=("mechanism:objective-perturbation",),
    ),
    _noise_check(
        "chowdhury-level-objpert-noise-release",
        OBJPERT_RELEASE.name,
        [OBJPERT_EPS],
        OBJPERT_REPS,
        THEORY_DOF,
        pins=("mechanism:objective-perturbation",),
    ),
    level_check(
        "chowdhury-level-sgd-objpert-sigma-fig1-sgd",
        "chowdhury-fig1-sgd",
        "sigma_sq_per_l_sq",
        "sgd_objpert",
        lambda p: thm52_noise_sq_per_l_sq(p["eps"], p["delta"]),
        1 - 1e-6,
        1 + 1e-6,
        at=("eps",),
        where={"mode": ["theory"]},
        pool=("n_samples",),
        formula="(8 log(2/δ)+4ε)/ε²",
        description="SGD objective perturbation (§6 reading): (σ/L)² of the σ the fit reports, L = max‖x‖/2 "
        "computed apart, / Thm 5.2's (8 log(2/δ)+4ε)/ε² at every ε; deterministic per fit, so "
        "region 1 ± 1e-6 (float rounding). The one-pass SGD does not return its w, so this pins "
        "the calibration, not the draw (the exact method's noise check pins the draw)",
        pins=("mechanism:sgd-objective-perturbation",),
    ),
    _krr_check(
        "chowdhury-level-krr-keep",
        "keep_rate",
        krr_keep_probability,
        "e^ε/(e^ε+K−1)",
        pins=("mechanism:krr-labels",),
    ),
    _krr_check(
        "chowdhury-level-krr-other",
        "next_rate",
        krr_other_probability,
        "1/(e^ε+K−1)",
        pins=("mechanism:krr-labels",),
    ),
]


# the order `dpsim list chowdhury` shows: the figures', the level checks, then the design calibration's
CHECKS = [*fig1.CHECKS, *rates.CHECKS, *lower_bound.CHECKS, *LEVEL_CHECKS, *design.CHECKS]
