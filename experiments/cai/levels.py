"""cai: level checks that pin each mechanism's calibration, and the mutants they must catch
(cai Algorithms 1–3 (§2.2.1, §2.3.1, §3.2, §3.3); docs/cai.md, Errata and modes (E3)).

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
(:func:`perturbation_metrics`, a gradient written here from docs/cai.md, Mechanisms and estimators, not the solver's), and the
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

import jax
import jax.numpy as jnp

from dpsim.engine.judgement.checks import At, Claim, Every, Mean, comparison_check
from dpsim.engine.judgement.statistics import predictions

INF = math.inf
LOGISTIC_KAPPA1, LOGISTIC_KAPPA2 = 1.0, 0.25      # cai (A1)–(A2), §2.2.1; docs/cai.md, Errata and modes (E4)
COUNT_NOISE_FACTOR = {"strict": 2.0, "paper": 1.0}  # Alg. 3's c in Laplace(c·L/ε) (docs/cai.md, Errata and modes (E3))


# ---------------------------------------------------------------------------------------
# Closed forms (cai Algorithms 1–3 (§2.2.1, §2.3.1, §3.2, §3.3)), from a grid point's values only
# ---------------------------------------------------------------------------------------
def laplace_variance(scale: float) -> float:
    """Var Laplace(b) = 2b²."""
    return 2.0 * scale ** 2


def edge_count_noise_variance(eps: float) -> float:
    """Algorithm 2 (cai Algorithm 2, §2.3.1): Laplace(2/ε) per item, variance 8/ε²."""
    return laplace_variance(2.0 / eps)


def individual_count_noise_variance(eps: float, per_user: float, mode: str) -> float:
    """Algorithm 3 (cai Algorithm 3, §3.3; docs/cai.md, Errata and modes (E3)): Laplace(c·L/ε), c = 2 (strict) or 1 (paper): 2(cL/ε)²."""
    return laplace_variance(COUNT_NOISE_FACTOR[mode] * per_user / eps)


def edge_perturbation(eps: float, n_items: float, p: float, c0: float) -> tuple[float, float]:
    """Algorithm 1 under edge DP (cai Algorithm 1, §2.2.1): (λ, γ) = (8κ1/ε, max(4κ2/ε, c0√(np ln n)))."""
    return 8.0 * LOGISTIC_KAPPA1 / eps, max(4.0 * LOGISTIC_KAPPA2 / eps, c0 * math.sqrt(n_items * p * math.log(n_items)))


def individual_perturbation(eps: float, per_user: float) -> tuple[float, float]:
    """Algorithm 1 under individual DP (cai Algorithm 1 under individual DP, §3.2): (λ, γ) = (8Lκ1/ε, 8Lκ2/ε)."""
    return 8.0 * per_user * LOGISTIC_KAPPA1 / eps, 8.0 * per_user * LOGISTIC_KAPPA2 / eps


def perturbation_noise_msq(lam: float) -> float:
    """E mean_i w_i² = 2λ² (identity 2 of the module docstring)."""
    return laplace_variance(lam)


def perturbation_mean_ratio(lam: float, gamma: float) -> float:
    """E[n·mean(θ̃)²] = n·Var(mean w)/γ² = 2λ²/γ² (identity 1 of the module docstring)."""
    return laplace_variance(lam) / gamma ** 2


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
# Metrics (added to the methods; they read the method's output and its data, no draw)
# ---------------------------------------------------------------------------------------
def expected_wins(W, theta):
    """Σ_j M_ij σ(θ_i − θ_j), M = W + Wᵀ (docs/cai.md, Mechanisms and estimators): the wins item i is expected to have, given
    the comparisons W and scores θ; (n,) for (n, n) W and (n,) θ.

    With b = exp(θ − c), c the midpoint of θ's range, σ(θ_i − θ_j) = b_i/(b_i + b_j), so the sum
    is b_i Σ_j (W_ij + W_ji) Q_ij with Q_ij = 1/(b_i + b_j) symmetric: the row and the column
    sums of W∘Q, one division per pair and no transpose of W. Writing σ through ``sigmoid``
    (one exponential per pair) and M = W + Wᵀ took twice as long at n = 300. Exact up to rounding while θ's range is under ≈ 1400 (b then neither overflows
    nor underflows to 0 for both items of a pair).
    """
    b = jnp.exp(theta - 0.5 * (jnp.max(theta) + jnp.min(theta)))
    weighted = W / (b[:, None] + b[None, :])
    ones = jnp.ones_like(b)
    return b * (weighted @ ones + ones @ weighted)


def perturbation_metrics(W, theta, n_items=None) -> dict:
    """Per-fit moments of r = −∇𝓛(θ̃; W) = W·1 − Σ_j M_ij σ(θ̃_i − θ̃_j) (docs/cai.md, Mechanisms and estimators; M = W + Wᵀ)
    and of the *uncentred* θ̃ (module docstring). Padding items (θ̃ = 0, W = 0 there) add 0 to
    every sum, so means over the ``n_items`` real items are sums / n_items.

    Returns: ``op_grad_msq`` = mean r², ``op_grad_theta`` = mean r·θ̃, ``op_theta_msq`` =
    mean θ̃², ``op_theta_mean_sq`` = n·mean(θ̃)².
    """
    n = jnp.asarray(W.shape[0] if n_items is None else n_items, jnp.float64)
    r = W.sum(axis=1) - expected_wins(W, theta)
    mean_theta = jnp.sum(theta) / n
    return {"op_grad_msq": jnp.sum(r * r) / n, "op_grad_theta": jnp.sum(r * theta) / n,
            "op_theta_msq": jnp.sum(theta * theta) / n, "op_theta_mean_sq": n * mean_theta ** 2}


PERTURBATION_METRICS = ("op_grad_msq", "op_grad_theta", "op_theta_msq", "op_theta_mean_sq")


def count_noise_metrics(noisy, counts, real=None, n_items=None) -> dict:
    """``noise_msq`` = mean over the real items of (Ñ_i − N_i)², the released noise's mean square."""
    d = noisy - counts
    if real is not None:
        d = jnp.where(real, d, 0.0)
    n = jnp.asarray(d.shape[0] if n_items is None else n_items, jnp.float64)
    return {"noise_msq": jnp.sum(d * d) / n}


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
        return (rows["op_grad_msq"].to_numpy(float) - 2.0 * g * rows["op_grad_theta"].to_numpy(float)
                + g * g * rows["op_theta_msq"].to_numpy(float))


def perturbation_noise_check(name, experiment, method, prediction, lo, hi, *, gamma, at=(), formula="", **check):
    """A level check (:func:`~dpsim.engine.judgement.checks.level_check`) of
    :class:`PerturbationNoise` against ``prediction`` (2λ²)."""
    return Claim(name, experiment, PerturbationNoise(NOISE_COLUMN, method, gamma=gamma), (lo, hi),
                 over=Every(at) if at else At(), prediction=prediction, formula=formula, **check)


def every_p_comparison(name, experiment, metric, better, worse, where, pool, description):
    """A paired comparison at every value of p (:func:`~dpsim.engine.judgement.checks.comparison_check`)."""
    return comparison_check(name, experiment, metric, better, worse, every="p", where=where, pool=pool,
                            description=description)
