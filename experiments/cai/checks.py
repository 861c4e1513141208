"""cai's checks: ``CHECKS``, every figure's checks (``figures``) and the level checks that pin
each mechanism's calibration (cai Algorithms 1–3 (§2.2.1, §2.3.1, §3.2, §3.3); docs/cai.md,
Errata and modes (E3)); the mutants they must catch are in ``mutants.py``.

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
each divided by its own point's closed form (:class:`PerRowRatio`; docs/cai.md,
Mutants and level checks, lists each check's power).

**Closed forms** (written here from the paper's formulas, on purpose *without* the library's
helpers ``dpsim.mechanisms.calibration`` or ``dpsim.theory``, which the mechanisms call: a bug
there would otherwise move the prediction with the simulation). A Laplace(b) draw has
variance 2b², so

- Algorithm 2 (edge DP, cai Algorithm 2, §2.3.1): N + Laplace(2/ε)ⁿ (ℓ1 sensitivity 2), E mean_i (Ñ_i − N_i)² = 8/ε²;
- Algorithm 3 (individual DP, cai Algorithm 3, §3.3; docs/cai.md, Errata and modes (E3)): Laplace(c·L/ε), c = 2 (``mode = strict``, the ℓ1
  sensitivity 2L) or 1 (``mode = paper``, as published), E mean_i (Ñ_i − N_i)² = 2(cL/ε)²;
- Algorithm 1 (cai Algorithm 1, §2.2.1; Algorithm 1 under individual DP, §3.2): θ̃ = argmin 𝓛(θ; W) + (γ/2)‖θ‖² + wᵀθ, w ~ Laplace(λ)ⁿ, with
  λ = 8κ1/ε, γ = max(4κ2/ε, c0√(np ln n)) under edge DP and λ = 8Lκ1/ε, γ = 8Lκ2/ε under
  individual DP (logistic: κ1 = 1, κ2 = 1/4).

**What pins Algorithm 1.** Its output θ̃ and the data W determine r = −∇𝓛(θ̃; W)
(:func:`.methods.perturbation_metrics`, a gradient written there from docs/cai.md, Mechanisms and estimators, not the solver's), and the
optimality condition ∇𝓛(θ̃) + γθ̃ + w = 0 gives two exact identities (up to the solver's
tolerance ‖∇R‖∞ ≤ 1e-10), whatever the data and however non-linear the fit:

1. 1ᵀ∇𝓛 = 0 (𝓛 depends on differences only; docs/cai.md, Mechanisms and estimators), so γ·mean(θ̃) = −mean(w) and
   E[n·mean(θ̃)²] = 2λ²/γ² (metric ``op_theta_mean_sq``; θ̃ uncentred): pins λ/γ;
2. w = r − γθ̃, so with the predicted γ, mean_i (r_i − γθ̃_i)² has expectation 2λ² exactly
   (:class:`PerturbationNoise`, from the per-fit moments ``op_grad_msq`` = mean r²,
   ``op_grad_theta`` = mean r·θ̃, ``op_theta_msq`` = mean θ̃²): pins λ, and γ too where γθ̃
   is not small against w.

**Tolerances.** Every prediction above is exact (model error 0), so each region is set from
the Monte-Carlo error alone, at about 6 expected standard errors of one point's ratio
(``Region``): a 95% interval then lies inside with probability > 0.999 per point, while a
factor 2 on a noise scale (4 on a variance) lies ≥ 10 standard errors outside. The
expected standard errors, from the replicate counts and the per-row coefficient of
variation (CV² = 5/n for a mean of n squared Laplace draws, since E X⁴ = 24b⁴ = 6(EX²)²;
CV² = 2 for n·mean(θ̃)², a scaled χ²₁ as mean(w) is nearly normal), are stated beside each
check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from dpsim.engine.judgement.checks import At, Claim, Every, Mean, level_check
from dpsim.engine.judgement.statistics import predictions

from .figures import design, edge, individual, published, scaling, threshold
from .methods import PERTURBATION_METRICS

INF = math.inf
LOGISTIC_KAPPA1, LOGISTIC_KAPPA2 = (
    1.0,
    0.25,
)  # cai (A1)–(A2), §2.2.1; docs/cai.md, Errata and modes (E4)
COUNT_NOISE_FACTOR = {
    "strict": 2.0,
    "paper": 1.0,
}  # Alg. 3's c in Laplace(c·L/ε) (docs/cai.md, Errata and modes (E3))


# ---------------------------------------------------------------------------------------
# Closed forms (cai Algorithms 1–3 (§2.2.1, §2.3.1, §3.2, §3.3)), from a grid point's values only
# ---------------------------------------------------------------------------------------
def laplace_variance(scale: float) -> float:
    """Var Laplace(b) = 2b²."""
    return 2.0 * scale**2


def edge_count_noise_variance(eps: float) -> float:
    """Algorithm 2 (cai Algorithm 2, §2.3.1): Laplace(2/ε) per item, variance 8/ε²."""
    return laplace_variance(2.0 / eps)


def individual_count_noise_variance(eps: float, per_user: float, mode: str) -> float:
    """Algorithm 3 (cai Algorithm 3, §3.3; docs/cai.md, Errata and modes (E3)): Laplace(c·L/ε), c = 2 (strict) or 1 (paper): 2(cL/ε)²."""
    return laplace_variance(COUNT_NOISE_FACTOR[mode] * per_user / eps)


def edge_perturbation(eps: float, n_items: float, p: float, c0: float) -> tuple[float, float]:
    """Algorithm 1 under edge DP (cai Algorithm 1, §2.2.1): (λ, γ) = (8κ1/ε, max(4κ2/ε, c0√(np ln n)))."""
    return 8.0 * LOGISTIC_KAPPA1 / eps, max(
        4.0 * LOGISTIC_KAPPA2 / eps, c0 * math.sqrt(n_items * p * math.log(n_items))
    )


def individual_perturbation(eps: float, per_user: float) -> tuple[float, float]:
    """Algorithm 1 under individual DP (cai Algorithm 1 under individual DP, §3.2): (λ, γ) = (8Lκ1/ε, 8Lκ2/ε)."""
    return 8.0 * per_user * LOGISTIC_KAPPA1 / eps, 8.0 * per_user * LOGISTIC_KAPPA2 / eps


def perturbation_noise_msq(lam: float) -> float:
    """E mean_i w_i² = 2λ² (identity 2 of the module docstring)."""
    return laplace_variance(lam)


def perturbation_mean_ratio(lam: float, gamma: float) -> float:
    """E[n·mean(θ̃)²] = n·Var(mean w)/γ² = 2λ²/γ² (identity 1 of the module docstring)."""
    return laplace_variance(lam) / gamma**2


def tau_shift_msq(noise_variance: float, n_items: float, per_item: float) -> float:
    """E of ``privacy_msq`` for counts (:mod:`.scaling`): τ̂ − τ̂_ref = noise·(n − 1)/(S·n), so
    its mean square has expectation Var(noise)·((n − 1)/(S n))²."""
    return noise_variance * ((n_items - 1.0) / (per_item * n_items)) ** 2


def expected_cv_se(cv2: float, rows: int) -> float:
    """The standard error of a log ratio of means over ``rows`` rows with per-row CV² ``cv2``."""
    return math.sqrt(cv2 / rows)


def region(se: float, widths: float = 6.0) -> tuple[float, float]:
    """A two-sided region exp(±``widths``·se) about the exact prediction 1, rounded outward to
    two decimals (module docstring, "Tolerances")."""
    half = widths * se
    return math.floor(100 * math.exp(-half)) / 100, math.ceil(100 * math.exp(half)) / 100


# ---------------------------------------------------------------------------------------
# The check of identity 2
# ---------------------------------------------------------------------------------------
NOISE_COLUMN = "op_noise_msq"


@dataclass(frozen=True)
class PerturbationNoise(Mean):
    """The statistic of identity 2 (module docstring): mean_i (r_i − γθ̃_i)² = mean w² of
    ``method``, γ = ``gamma(point)`` the closed form at the row's grid point; the per-row value
    is formed from the moments ``op_grad_msq − 2γ·op_grad_theta + γ²·op_theta_msq`` (``metric``
    names it in the verdict line)."""

    gamma: Callable[[dict], float] | None = None

    def metric_values(self, rows):
        g = predictions(rows, self.gamma)
        return (
            rows["op_grad_msq"].to_numpy(float)
            - 2.0 * g * rows["op_grad_theta"].to_numpy(float)
            + g * g * rows["op_theta_msq"].to_numpy(float)
        )


@dataclass(frozen=True)
class PerRowRatio(Mean):
    """``inner``'s per-row value over the closed form ``reference(point)`` of the row's grid
    point, averaged over rows pooled across points (judged against 1).

    Each row then has expectation 1 and the same coefficient of variation whatever its point,
    so the pooled mean has the standard error of all its rows, √(CV²/rows). A ratio of pooled
    means (:class:`~dpsim.engine.judgement.statistics.Mean` with a prediction) weights each row by its
    prediction instead: rows of points whose variances differ by (L/ε)² would leave the
    largest point alone to decide. ``inner``: a :class:`Mean` (its ``metric`` column) or
    :class:`PerturbationNoise`; ``metric`` and ``method`` are ``inner``'s."""

    inner: Mean | None = None
    reference: Callable[[dict], float] | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.inner.metric,) if type(self.inner) is Mean else PERTURBATION_METRICS[:3]

    def metric_values(self, rows):
        return self.inner.metric_values(rows) / predictions(rows, self.reference)


def pooled_level_check(name, experiment, inner, reference, rel_se, *, formula="", **check):
    """A level check of :class:`PerRowRatio` (``inner`` over ``reference``, rows pooled over
    every selected point) in :func:`region` (±6 ``rel_se``)."""
    return Claim(
        name,
        experiment,
        PerRowRatio(inner.metric, inner.method, inner=inner, reference=reference),
        region(rel_se),
        over=At(),
        formula=formula,
        **check,
    )


def perturbation_noise_check(
    name, experiment, method, prediction, lo, hi, *, gamma, at=(), formula="", **check
):
    """A level check (:func:`~dpsim.engine.judgement.checks.level_check`) of
    :class:`PerturbationNoise` against ``prediction`` (2λ²)."""
    return Claim(
        name,
        experiment,
        PerturbationNoise(NOISE_COLUMN, method, gamma=gamma),
        (lo, hi),
        over=Every(at) if at else At(),
        prediction=prediction,
        formula=formula,
        **check,
    )


# ---------------------------------------------------------------------------------------
# cai-fig3: edge DP, n = 300, p ∈ {0.25, 0.5, 0.75, 1}, c0 = 2, 120 replicates
# ---------------------------------------------------------------------------------------
FIG3 = edge.FIG3
FIG3_EPS = [e for e in FIG3.axes["eps"] if math.isfinite(e)]
FIG3_ROWS = FIG3.reps * len(FIG3.axes["p"])  # rows per ε point (p pooled)
FIG3_N = FIG3.axes["n_items"][0]
SE_FIG3_SQUARES = expected_cv_se(
    5.0 / FIG3_N, FIG3_ROWS
)  # 0.0059: a mean of n squared Laplace draws
SE_FIG3_MEAN = expected_cv_se(2.0, FIG3_ROWS)  # 0.065: n·mean(θ̃)², a scaled χ²₁


def _edge_lam_gamma(point):
    return edge_perturbation(point["eps"], point["n_items"], point["p"], point["c0"])


FIG3_CHECKS = [
    level_check(
        "cai-level-edge-counts-noise",
        FIG3.name,
        "noise_msq",
        "counts",
        lambda pt: edge_count_noise_variance(pt["eps"]),
        *region(SE_FIG3_SQUARES),
        where={"eps": FIG3_EPS},
        pool=("p",),
        at=("eps",),
        formula="8/ε²",
        description="Alg. 2: mean square of the released count noise = 8/ε² (Laplace(2/ε), cai Algorithm 2, §2.3.1); "
        f"exact, region ±6 expected SE ({SE_FIG3_SQUARES:.4f}: √(5/(n·R)), R = 4 p × 120)",
        pins=("mechanism:edge-counts",),
    ),
    perturbation_noise_check(
        "cai-level-edge-mle-noise",
        FIG3.name,
        "mle",
        lambda pt: perturbation_noise_msq(_edge_lam_gamma(pt)[0]),
        *region(SE_FIG3_SQUARES),
        where={"eps": FIG3_EPS},
        pool=("p",),
        at=("eps",),
        formula="2λ², λ = 8/ε",
        gamma=lambda pt: _edge_lam_gamma(pt)[1],
        description="Alg. 1 (edge): mean (r − γθ̃)² = mean w² = 2λ², λ = 8/ε, with r = −∇𝓛(θ̃) "
        "and γ = max(1/ε, c0√(np ln n)) (cai Algorithm 1, §2.2.1); exact at the optimum, "
        f"region ±6 expected SE ({SE_FIG3_SQUARES:.4f})",
        pins=("mechanism:edge-objective-perturbation",),
    ),
    level_check(
        "cai-level-edge-mle-mean",
        FIG3.name,
        "op_theta_mean_sq",
        "mle",
        lambda pt: perturbation_mean_ratio(*_edge_lam_gamma(pt)),
        *region(SE_FIG3_MEAN),
        where={"eps": FIG3_EPS},
        pool=("p",),
        at=("eps",),
        formula="2λ²/γ²",
        description="Alg. 1 (edge): n·mean(θ̃)² = n·mean(w)²/γ² has mean 2λ²/γ² (1ᵀ∇𝓛 = 0, docs/cai.md, Mechanisms and estimators), "
        f"pins λ/γ; exact, region ±6 expected SE ({SE_FIG3_MEAN:.3f}: √(2/R), χ²₁)",
        pins=("mechanism:edge-objective-perturbation",),
    ),
]

# ---------------------------------------------------------------------------------------
# cai-edge-vs-individual: n = 200, p = 1 (S = 199), L ∈ {1, 2, 5, 10}, ε ∈ {10, 20}, 100 reps
# ---------------------------------------------------------------------------------------
MATCHED = scaling.MATCHED
M_N, M_REPS, M_L = scaling.MATCHED_N, MATCHED.reps, len(MATCHED.axes["per_user"])
SE_M_SQUARES_POOLED = expected_cv_se(5.0 / M_N, M_REPS * M_L)  # 0.0079 (edge rows, L labels pooled)
SE_M_SQUARES = expected_cv_se(5.0 / M_N, M_REPS)  # 0.016 (one (L, ε) point)
SE_M_MEAN_POOLED = expected_cv_se(2.0, M_REPS * M_L)  # 0.071 (edge: per_user labels pooled)
SE_M_MEAN = expected_cv_se(2.0, M_REPS * len(MATCHED.axes["eps"]))  # 0.10 (individual: ε pooled)
M_POINTS = M_L * len(MATCHED.axes["eps"])  # individual (L, ε) points
SE_M_SQUARES_ALL = expected_cv_se(
    5.0 / M_N, M_REPS * M_POINTS
)  # 0.0056 (individual: every (L, ε) pooled)
MATCHED_EDGE_C0 = (
    0.0  # the matched design's edge Alg. 1 uses the privacy-minimal ridge (scaling docstring)
)


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
    level_check(
        "cai-level-matched-edge-counts-noise",
        MATCHED.name,
        "privacy_msq",
        "counts",
        _count_shift,
        *region(SE_M_SQUARES_POOLED),
        where=EDGE_UNIT,
        pool=("per_user",),
        at=("eps",),
        formula="8/ε²·(1/(np))²",
        description="Alg. 2 on the τ scale: mean (τ̂ − τ̂_raw)² = Var(Laplace(2/ε))·((n−1)/(nS))², "
        f"S = (n − 1)p; exact, region ±6 expected SE ({SE_M_SQUARES_POOLED:.4f})",
        pins=("mechanism:edge-counts",),
    ),
    level_check(
        "cai-level-indiv-counts-noise-strict",
        MATCHED.name,
        "privacy_msq",
        "counts",
        _count_shift,
        *region(SE_M_SQUARES),
        where=INDIVIDUAL_UNIT,
        at=("per_user", "eps"),
        formula="2(2L/ε)²·(1/(np))²",
        description="Alg. 3 strict on the τ scale: Var(Laplace(2L/ε))·((n−1)/(nS))² at every L and ε "
        f"(cai Algorithm 3, §3.3; docs/cai.md, Errata and modes (E3)); exact, region ±6 expected SE ({SE_M_SQUARES:.3f})",
        pins=("mechanism:individual-counts-strict",),
    ),
    perturbation_noise_check(
        "cai-level-matched-edge-mle-noise",
        MATCHED.name,
        "mle",
        lambda pt: perturbation_noise_msq(_matched_lam_gamma(pt)[0]),
        *region(SE_M_SQUARES_POOLED),
        where=EDGE_UNIT,
        pool=("per_user",),
        at=("eps",),
        formula="2λ², λ = 8/ε",
        gamma=lambda pt: _matched_lam_gamma(pt)[1],
        description="Alg. 1 (edge, γ = 4κ2/ε = 1/ε branch): mean (r − γθ̃)² = 2λ², λ = 8/ε; "
        f"exact, region ±6 expected SE ({SE_M_SQUARES_POOLED:.4f})",
        pins=("mechanism:edge-objective-perturbation",),
    ),
    level_check(
        "cai-level-matched-edge-mle-mean",
        MATCHED.name,
        "op_theta_mean_sq",
        "mle",
        lambda pt: perturbation_mean_ratio(*_matched_lam_gamma(pt)),
        *region(SE_M_MEAN_POOLED),
        where=EDGE_UNIT,
        pool=("per_user",),
        at=("eps",),
        formula="2λ²/γ² = 128",
        description="Alg. 1 (edge, γ = 1/ε): n·mean(θ̃)² has mean 2λ²/γ² = 128; exact, region ±6 "
        f"expected SE ({SE_M_MEAN_POOLED:.3f})",
        pins=("mechanism:edge-objective-perturbation",),
    ),
    perturbation_noise_check(
        "cai-level-indiv-mle-noise",
        MATCHED.name,
        "mle",
        lambda pt: perturbation_noise_msq(_matched_lam_gamma(pt)[0]),
        *region(SE_M_SQUARES),
        where=INDIVIDUAL_UNIT,
        at=("per_user", "eps"),
        formula="2λ², λ = 8L/ε",
        gamma=lambda pt: _matched_lam_gamma(pt)[1],
        description="Alg. 1 (individual, cai Algorithm 1 under individual DP, §3.2): mean (r − γθ̃)² = 2λ², λ = 8L/ε, "
        "γ = 2L/ε, at every L and ε; exact, region ±6 expected SE "
        f"({SE_M_SQUARES:.3f})",
        pins=("mechanism:individual-objective-perturbation",),
    ),
    pooled_level_check(
        "cai-level-indiv-counts-noise-strict-pooled",
        MATCHED.name,
        Mean("privacy_msq", "counts"),
        _count_shift,
        SE_M_SQUARES_ALL,
        where=INDIVIDUAL_UNIT,
        pool=("per_user", "eps"),
        formula="1 = mean of (τ̂ − τ̂_raw)²/(2(2L/ε)²·(1/(np))²)",
        description="Alg. 3 strict on the τ scale, every (L, ε) pooled: mean over the rows of "
        "(τ̂ − τ̂_raw)² ÷ its own point's Var(Laplace(2L/ε))·((n−1)/(nS))² = 1 (each row "
        "weighted alike; a 10% error in the noise variance lies ≥ 10 SE outside, where the "
        "per-point check's ±6 SE of 0.016 cannot reach it); exact, region ±6 expected SE "
        f"({SE_M_SQUARES_ALL:.4f}: √(5/(n·R)), R = {M_POINTS} points × {M_REPS})",
        pins=("mechanism:individual-counts-strict",),
    ),
    pooled_level_check(
        "cai-level-indiv-mle-noise-pooled",
        MATCHED.name,
        PerturbationNoise(NOISE_COLUMN, "mle", gamma=lambda pt: _matched_lam_gamma(pt)[1]),
        lambda pt: perturbation_noise_msq(_matched_lam_gamma(pt)[0]),
        SE_M_SQUARES_ALL,
        where=INDIVIDUAL_UNIT,
        pool=("per_user", "eps"),
        formula="1 = mean of (r − γθ̃)²/2λ², λ = 8L/ε",
        description="Alg. 1 (individual), every (L, ε) pooled: mean over the rows of mean (r − γθ̃)² "
        "÷ its own point's 2λ², λ = 8L/ε, γ = 2L/ε = 1 (a 10% error in the noise variance "
        "lies ≥ 10 SE outside); exact, region ±6 expected SE "
        f"({SE_M_SQUARES_ALL:.4f})",
        pins=("mechanism:individual-objective-perturbation",),
    ),
    level_check(
        "cai-level-indiv-mle-mean",
        MATCHED.name,
        "op_theta_mean_sq",
        "mle",
        lambda pt: perturbation_mean_ratio(*_matched_lam_gamma(pt)),
        *region(SE_M_MEAN),
        where=INDIVIDUAL_UNIT,
        pool=("eps",),
        at=("per_user",),
        formula="2λ²/γ² = 32",
        description="Alg. 1 (individual): n·mean(θ̃)² has mean 2λ²/γ² = 2·4² = 32 at every L (λ/γ = 4); "
        f"exact, region ±6 expected SE ({SE_M_MEAN:.2f})",
        pins=("mechanism:individual-objective-perturbation",),
    ),
]

# ---------------------------------------------------------------------------------------
# cai-fig7: individual DP, mode = paper, n = 16, L = 5, 200 replicates
# ---------------------------------------------------------------------------------------
FIG7 = individual.FIG7
FIG7_EPS = [e for e in FIG7.axes["eps"] if math.isfinite(e)]
SE_FIG7 = expected_cv_se(
    5.0 / FIG7.axes["n_items"][0], FIG7.reps * len(FIG7.axes["n_users"])
)  # 0.020
SE_FIG7_ALL = expected_cv_se(
    5.0 / FIG7.axes["n_items"][0], FIG7.reps * len(FIG7.axes["n_users"]) * len(FIG7_EPS)
)  # 0.0081

FIG7_CHECKS = [
    level_check(
        "cai-level-indiv-counts-noise-paper",
        FIG7.name,
        "noise_msq",
        "counts",
        lambda pt: individual_count_noise_variance(pt["eps"], pt["per_user"], pt["mode"]),
        *region(SE_FIG7),
        where={"eps": FIG7_EPS},
        pool=("n_users",),
        at=("eps",),
        formula="2(L/ε)²",
        description="Alg. 3 in the paper's mode: mean square of the released count noise = 2(L/ε)² "
        f"(Laplace(L/ε), cai Algorithm 3, §3.3); exact, region ±6 expected SE ({SE_FIG7:.3f})",
        pins=("mechanism:individual-counts-paper",),
    ),
    pooled_level_check(
        "cai-level-indiv-counts-noise-paper-pooled",
        FIG7.name,
        Mean("noise_msq", "counts"),
        lambda pt: individual_count_noise_variance(pt["eps"], pt["per_user"], pt["mode"]),
        SE_FIG7_ALL,
        where={"eps": FIG7_EPS},
        pool=("n_users", "eps"),
        formula="1 = mean of (Ñ − N)²/2(L/ε)²",
        description="Alg. 3 in the paper's mode, every (m, ε) pooled: mean over the rows of the "
        "released count noise's mean square ÷ its own point's 2(L/ε)² = 1 (a 10% error in "
        "the noise variance lies ≥ 5.8 SE outside the region, where the per-ε check's "
        f"±6 SE of {SE_FIG7:.3f} cannot reach it); exact, region ±6 expected SE "
        f"({SE_FIG7_ALL:.4f}: √(5/(n·R)), R = {len(FIG7_EPS)} ε × 4 m × {FIG7.reps})",
        pins=("mechanism:individual-counts-paper",),
    ),
]

LEVEL_CHECKS = [*FIG3_CHECKS, *MATCHED_CHECKS, *FIG7_CHECKS]

# the figures' checks, with the level checks in their place after the threshold checks (``dpsim list cai``)
CHECKS = [
    *edge.CHECKS,
    *individual.CHECKS,
    *scaling.CHECKS,
    *threshold.CHECKS,
    *LEVEL_CHECKS,
    *design.CHECKS,
    *published.CHECKS,
]
