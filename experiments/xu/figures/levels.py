"""Closed forms that pin xu's mechanisms and estimator at their level, evaluated
from a grid point's values only (m, L, ε, mechanism, λ rule), for
:func:`~dpsim.engine.judgement.checks.level_check` predictions.

Written here from the paper's formulas (xu §3 eq. (1), Lemmas 1–2, §4.1 eq. (3);
xu §3.1–3.2; §4.1, eq. (3); docs/xu.md, Mechanisms and estimators; Predictions (P4)), on purpose **without** the library's helpers
(``dpsim.mechanisms``, ``dpsim.estimators.debiased_m.ridge_lambda``, ``dpsim.theory.xu``):
a bug in those would otherwise move the prediction with the simulation.

Per answer y ∈ {0, 1} with P(y = 1) = p (xu §3.1–3.2):

- classic RR keeps y with probability q = e^ε/(1 + e^ε), so E[ỹ − ½ | y] = (2q − 1)(y − ½) and
  the slope of the released mean on the raw mean is 2q − 1 = tanh(ε/2) (:func:`release_slope`);
- debiased RR z = ((e^ε + 1)ỹ − 1)/(e^ε − 1) has E[z | y] = y (slope 1) and Var(z | y) =
  ((e^ε + 1)/(e^ε − 1))²·q(1 − q) = e^ε/(e^ε − 1)², whatever y: the exact excess variance over
  the raw answer (Lemma 2: Var z = coth²(ε/2)/4 − (p − ½)² = p(1 − p) + e^ε/(e^ε − 1)²);
- Laplace z = y + Laplace(1/ε) (docs/xu.md, Errata and modes (A6)): slope 1, excess variance 2/ε² (:func:`excess_variance`).

The estimator (xu eq. (3), λ = G(ε)/L with G = coth²(ε/2), docs/xu.md, Mechanisms and estimators; Errata and modes (A4)) is pinned by the
ridge sandwich (:func:`sandwich_mse`): linearising the score at θ*, θ̂ − θ* ≈
A(Σ_e (z̄_e − p_e)(e_i − e_j) − 2λθ*) with A = (Lap(w) + 2λI)⁻¹, w_e = p_e(1 − p_e), so
E‖θ̂ − θ*‖²/m ≈ [tr(A V A) + ‖2λ A θ*‖²]/m, V = Lap(v_e/L), v_e the per-answer variance above;
:func:`expected_sandwich_mse` averages it over θ* ~ U(−2, 2)^m centred (xu §5.1) with a fixed
seed, so the prediction is a function of (m, L, ε, mechanism, λ rule) alone.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np


SANDWICH_DRAWS = (
    2000  # θ* draws of the expected sandwich (relative MC error ≤ 0.52% at m = 10, tests)
)
SANDWICH_SEED = 20_260_527


def keep_probability(eps: float) -> float:
    """q = e^ε/(1 + e^ε), classic RR's keep probability (xu §3.1)."""
    return 1.0 / (1.0 + math.exp(-eps))


def release_slope(eps: float, mechanism: str) -> float:
    """E of the metric ``release_slope``: 2q − 1 = (e^ε − 1)/(e^ε + 1) for classic RR (Lemma 1),
    1 for debiased RR, Laplace and the raw answers (unbiased releases)."""
    return 2.0 * keep_probability(eps) - 1.0 if mechanism == "classic_rr" else 1.0


def excess_variance(eps: float, mechanism: str) -> float:
    """E of the metric ``excess_var`` = L·mean_e(z̄_e − ȳ_e)², the released noise's variance per
    answer: e^ε/(e^ε − 1)² for debiased RR (eq. (1), module docstring), 2/ε² for Laplace
    (Laplace(1/ε), docs/xu.md, Errata and modes (A6)), 0 for ``none``. Classic RR is biased: undefined here."""
    if mechanism == "debiased_rr":
        return math.exp(eps) / math.expm1(eps) ** 2
    if mechanism == "laplace":
        return 2.0 / eps**2
    if mechanism == "none":
        return 0.0
    raise ValueError(f"no closed-form excess variance for mechanism={mechanism!r}")


def answer_variance(p: np.ndarray, eps: float, mechanism: str) -> np.ndarray:
    """Var of one released answer at P(y = 1) = p: p(1 − p) + :func:`excess_variance`
    (Lemma 2 for debiased RR, docs/xu.md, Mechanisms and estimators for Laplace)."""
    return p * (1.0 - p) + excess_variance(eps, mechanism)


def ridge_lambda(eps: float, n_users: int, rule: str = "g_over_l") -> float:
    """λ of xu eq. (3) (docs/xu.md, Mechanisms and estimators; Errata and modes (A4)): G/L = coth²(ε/2)/L, or the literal
    (e^ε + 1)²/((e^ε − 1)L) of the paper's text (``paper``)."""
    coth = (math.exp(eps) + 1.0) / math.expm1(eps)
    if rule == "g_over_l":
        return coth**2 / n_users
    if rule == "paper":
        return coth * (math.exp(eps) + 1.0) / n_users
    raise ValueError(f"unknown λ rule {rule!r}")


def sandwich_mse(
    theta: np.ndarray, n_users: int, eps: float, mechanism: str, lam: float
) -> np.ndarray:
    """The linearised E‖θ̂ − θ*‖²/m of the ridge M-estimator (module docstring) at each θ*.

    Args:
        theta: (D, m) true scores (any centring: only differences and ‖·‖ of the centred θ* enter;
            θ* is centred here).
        n_users: L; eps: ε per comparison; mechanism: ``debiased_rr`` or ``laplace``; lam: λ.
    Returns:
        (D,) float64: [tr(A V A) + ‖2λ A θ*‖²]/m.
    """
    theta = np.asarray(theta, float)
    theta = theta - theta.mean(axis=1, keepdims=True)
    d, m = theta.shape
    diff = theta[:, :, None] - theta[:, None, :]
    p = 1.0 / (1.0 + np.exp(-diff))
    off = ~np.eye(m, dtype=bool)

    def laplacian(weights):
        weights = np.where(off, weights, 0.0)
        return weights.sum(axis=2)[:, :, None] * np.eye(m) - weights

    # + 11ᵀ/m makes the λ = 0 Hessian invertible and changes nothing else: V, θ* and the
    # score have no component along 1
    hessian = laplacian(p * (1.0 - p)) + 2.0 * lam * np.eye(m) + np.full((m, m), 1.0 / m)
    a = np.linalg.inv(hessian)
    v = laplacian(answer_variance(p, eps, mechanism) / n_users)
    variance = np.trace(a @ v @ a, axis1=1, axis2=2)
    bias = (a @ (2.0 * lam * theta)[:, :, None])[:, :, 0]
    return (variance + np.sum(bias**2, axis=1)) / m


@lru_cache(maxsize=None)
def _draws(m: int, draws: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, m])
    return rng.uniform(-2.0, 2.0, size=(draws, m))


@lru_cache(maxsize=None)
def expected_sandwich(
    m: int,
    n_users: int,
    eps: float,
    mechanism: str,
    rule: str = "g_over_l",
    draws: int = SANDWICH_DRAWS,
    seed: int = SANDWICH_SEED,
) -> tuple[float, float]:
    """(mean, standard error) over θ* ~ U(−2, 2)^m centred (xu §5.1) of :func:`sandwich_mse` at
    (m, L, ε, mechanism, λ rule), from ``draws`` fixed draws (seeded by (seed, m): the same θ*
    draws at every (L, ε, mechanism))."""
    values = sandwich_mse(
        _draws(m, draws, seed), n_users, eps, mechanism, ridge_lambda(eps, n_users, rule)
    )
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(draws))


def expected_sandwich_mse(point: dict) -> float:
    """The level_check prediction of ``mse`` at a grid point (its n_items, n_users, eps,
    mechanism, mode values): :func:`expected_sandwich`'s mean."""
    return expected_sandwich(
        int(point["n_items"]),
        int(point["n_users"]),
        float(point["eps"]),
        str(point.get("mechanism", "debiased_rr")),
        str(point.get("mode", "g_over_l")),
    )[0]
