"""nguyen's checks (``CHECKS``): every figure's own (:mod:`.figures`), and the level checks
(``LEVEL_CHECKS``) that pin the calibration of every nguyen mechanism (nguyen §4; §4.3, Algorithm 2; supp. §4; docs/nguyen.md, Mechanisms and estimators; Errata and modes (Q3–Q4, A2, A3, A5)).

Slopes and paired signs are blind to a constant factor in a noise scale (a discrete-Gaussian σ
halved still passes every Fig. 2 claim). Each check here is a
:func:`~dpsim.engine.judgement.checks.level_check`: a metric the method reports
(:func:`.methods.make_methods` with ``calibration=True``) against a closed form written here
from the paper's formulas and evaluated from the grid's ε*, δ, mode, accounting, conversion,
m and n only: no σ, t, ρ or ε_RR the mechanism or its Derived values computed is read, and
no helper the mechanism calls is imported (the conversions, the discrete variances and the
shuffle bound are re-derived below; tests/nguyen/test_nguyen_levels.py compares them with SciPy
sums and with the library's values).

Metrics and their expectations:

* ``noise_ms`` (discrete-Gaussian and discrete-Laplace chains): the mean of Z_ij² over the
  m(m − 1) ordered pairs of the noise drawn for one release. E = Var N_ℤ(0, σ²) with
  σ² = Δ²/(2ρ) (CKS20 Thm 4 / Lemma 4.1), Δ² = m(m − 1) (``paper``), m(m − 1)/2
  (``synthetic_code``), 2⌊m²/4⌋ (``tight_joint``), ρ from (ε*, δ) by the conversion
  (``paper`` ε*²/(4 ln(1/δ)); ``bun_steinke`` (√(L + ε*) − √L)²; ``cks`` the inverse of
  inf_α αρ + log(1 − 1/α) − (log δ + log α)/(α − 1)); or Var Lap_ℤ(t) = 2α/(1 − α)²,
  α = e^{−1/t}, t = Δ₁/ε*, Δ₁ = m(m − 1) (``paper``, ``synthetic_code``: basic composition)
  or 2⌊m²/4⌋ (``tight_joint``). The sparse chain's σ² uses Δ² of its random ER(p₀) graph:
  its expectation over |E| ~ Binomial(m(m − 1)/2, p₀) is summed exactly.
* ``rr_signal`` (randomized response): 1 − 2·(share of responses flipped), E = tanh(ε′/2)
  with ε′ = ε_RR/m (every response observed, p = 1) and ε_RR = max(FMT22⁻¹(ε*, δ, n), ε*),
  the inverse capped at ln(n/(16 ln(2/δ))) (nguyen supp. §4; docs/nguyen.md, Errata and modes (A5)).

**Regions.** Every closed form is exact for its metric (the discrete sums are summed, not
approximated; the sparse chain's strict-mode graph is conditioned on being connected, which
moves E|E| by less than 1e-3 relative at the p₀ used), so the model error is 0 and the
region is set by the Monte-Carlo error alone: 1 ± 6·se, se the relative standard error of
the least precise point at the experiment's default replicates (from the metric's known
variance: 2σ⁴ per Gaussian Z², 5·(E Z²)² per Laplace Z², 1 − s² per RR response), rounded
up to 0.01. A point then leaves the region only by a 4-se deviation (probability 6e-5),
while a factor √2 in a noise scale is far outside it. :func:`relative_se` states each.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import optimize, stats

from dpsim.engine.judgement.checks import level_check

from .figures import design, rates, real, synthetic, topk
from .figures.real import FIG2, FIG3, REAL_REPS
from .figures.synthetic import FIG1, FIG1_REPS

# The data sets' shapes (n users, m items), nguyen Fig. 2, §5.2; docs/nguyen.md, Experiments as run (the stand-ins share them).
DATASET_SHAPES = {"lsat": (1000, 5), "uci_student": (131, 4), "three_grades": (649, 3)}
# What "auto" means in each experiment's paper mode (docs/nguyen.md, Mechanisms and estimators: the synthetic script counts
# m(m − 1)/2 queries, the real-data script m(m − 1); nguyen §4.3, Algorithm 2: its p₀ rule). Strict mode:
# tight_joint and the CKS conversion, every experiment.
PAPER_ACCOUNTING = {"nguyen-fig1": "synthetic_code", "nguyen-fig2": "paper", "nguyen-fig3": "paper"}
P0_RULE = {"nguyen-fig1": 1.1, "nguyen-fig3": 2.0}  # p₀ = c·log₂(m)/m


# ---------------------------------------------------------------------------------------
# Closed forms (nguyen §4; supp. §4; docs/nguyen.md, Mechanisms and estimators)
# ---------------------------------------------------------------------------------------
def rho_paper(eps: float, delta: float) -> float:
    """ρ = ε₀²/2, ε₀ = ε*/√(2 ln(1/δ)) (nguyen §4.1: the authors' inversion)."""
    return eps * eps / (4.0 * math.log(1.0 / delta))


def rho_bun_steinke(eps: float, delta: float) -> float:
    """ρ with ρ + 2√(ρ ln(1/δ)) = ε* (Bun–Steinke Prop. 1.3 inverted, docs/nguyen.md, Errata and modes (Q4))."""
    L = math.log(1.0 / delta)
    return (math.sqrt(L + eps) - math.sqrt(L)) ** 2


def cks_epsilon(rho: float, delta: float) -> float:
    """ε(ρ, δ) = inf_{α>1} αρ + log(1 − 1/α) − (log δ + log α)/(α − 1) (Canonne, Kamath,
    Steinke 2020, Cor. 13), by bounded Brent minimisation over log(α − 1) after a coarse
    grid (the library bisects the derivative instead)."""
    log_delta = math.log(delta)

    def f(u):
        a = 1.0 + math.exp(u)
        return a * rho + math.log1p(-1.0 / a) - (log_delta + math.log(a)) / (a - 1.0)

    grid = np.linspace(-20.0, 25.0, 451)
    values = [f(u) for u in grid]
    i = int(np.argmin(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    best = optimize.minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
    return max(0.0, min(float(best.fun), values[i]))


@lru_cache(maxsize=None)
def rho_cks(eps: float, delta: float) -> float:
    """The ρ whose CKS20 ε at δ is ε* (:func:`cks_epsilon` is increasing in ρ), by Brent's root."""
    return float(
        optimize.brentq(lambda r: cks_epsilon(r, delta) - eps, 1e-14, 1e3, xtol=1e-300, rtol=1e-13)
    )


RHO = {"paper": rho_paper, "bun_steinke": rho_bun_steinke, "cks": rho_cks}


def sensitivity_squared(m: int, accounting: str) -> float:
    """Δ² of the dense chain's m(m − 1) counts (nguyen Lemma 4.1, §4.2; docs/nguyen.md, Mechanisms and estimators): the paper's composition over
    every count, the synthetic script's half of it, or the joint bound 2⌊m²/4⌋."""
    return {
        "paper": m * (m - 1),
        "synthetic_code": m * (m - 1) / 2.0,
        "tight_joint": 2 * (m * m // 4),
    }[accounting]


def discrete_gaussian_var(sigma2):
    """Var N_ℤ(0, σ²) = Σ z² e^{−z²/2σ²}/Σ e^{−z²/2σ²}, summed over |z| ≤ 12σ + 2 for σ ≤ 8;
    σ² beyond (Poisson summation: the relative correction is below 1e-500). Elementwise."""
    sigma2 = np.atleast_1d(np.asarray(sigma2, float))
    out = sigma2.copy()
    for i, s2 in enumerate(sigma2):
        if s2 <= 64.0:
            k = int(math.ceil(12.0 * math.sqrt(s2))) + 2
            z = np.arange(-k, k + 1, dtype=float)
            w = np.exp(-z * z / (2.0 * s2))
            out[i] = float(np.sum(z * z * w) / np.sum(w))
    return out


def discrete_laplace_var(t: float) -> float:
    """Var Lap_ℤ(t) = 2α/(1 − α)², α = e^{−1/t} (P(z) ∝ α^{|z|}; docs/nguyen.md, Mechanisms and estimators)."""
    a = math.exp(-1.0 / t)
    return 2.0 * a / math.expm1(-1.0 / t) ** 2


def resolved(point: dict, experiment: str) -> tuple[str, str]:
    """(accounting, conversion) of a grid point: ``auto`` is the mode's (module constants)."""
    paper = point["mode"] == "paper"
    accounting, conversion = point.get("accounting", "auto"), point.get("conversion", "auto")
    if accounting == "auto":
        accounting = PAPER_ACCOUNTING[experiment] if paper else "tight_joint"
    if conversion == "auto":
        conversion = "paper" if paper else "cks"
    return accounting, conversion


def n_items_of(point: dict) -> int:
    return int(point["n_items"]) if "n_items" in point else DATASET_SHAPES[point["dataset"]][1]


def n_users_of(point: dict) -> int:
    return int(point["n_users"]) if "n_users" in point else DATASET_SHAPES[point["dataset"]][0]


def gaussian_noise_var(point: dict, experiment: str) -> float:
    """E noise_ms of the dense discrete-Gaussian chain: Var N_ℤ(0, Δ²/(2ρ))."""
    accounting, conversion = resolved(point, experiment)
    rho = RHO[conversion](float(point["eps"]), float(point["delta"]))
    return float(
        discrete_gaussian_var(sensitivity_squared(n_items_of(point), accounting) / (2.0 * rho))[0]
    )


def laplace_noise_var(point: dict, experiment: str) -> float:
    """E noise_ms of the discrete-Laplace chain: Var Lap_ℤ(Δ₁/ε*)."""
    accounting, _ = resolved(point, experiment)
    m = n_items_of(point)
    delta1 = 2 * (m * m // 4) if accounting == "tight_joint" else m * (m - 1)
    return discrete_laplace_var(delta1 / float(point["eps"]))


def p0_of(point: dict, experiment: str) -> float:
    """p₀: a number on the grid, or "proposed" = c·log₂(m)/m (nguyen §4.3, Algorithm 2), at most 1."""
    m = n_items_of(point)
    p0 = point.get("p0", "proposed")
    return min(1.0, P0_RULE[experiment] * math.log2(m) / m) if p0 == "proposed" else float(p0)


def sparse_gaussian_noise_var(point: dict, experiment: str) -> float:
    """E noise_ms of the sparse chain: E over |E| ~ Binomial(m(m − 1)/2, p₀) of
    Var N_ℤ(0, Δ²(|E|)/(2ρ)), Δ² = 2|E| (``paper``), |E| (``synthetic_code``),
    2·min(|E|, ⌊m²/4⌋) (``tight_joint``) (nguyen §4.3, Algorithm 2; docs/nguyen.md, Mechanisms and estimators)."""
    accounting, conversion = resolved(point, experiment)
    m = n_items_of(point)
    rho = RHO[conversion](float(point["eps"]), float(point["delta"]))
    pairs = m * (m - 1) // 2
    edges = np.arange(pairs + 1)
    weight = stats.binom.pmf(edges, pairs, p0_of(point, experiment))
    keep = weight > 1e-16
    edges, weight = edges[keep], weight[keep]
    delta2 = {
        "paper": 2.0 * edges,
        "synthetic_code": edges.astype(float),
        "tight_joint": 2.0 * np.minimum(edges, m * m // 4),
    }[accounting]
    return float(
        np.sum(weight * discrete_gaussian_var(np.maximum(delta2, 1e-300) / (2.0 * rho)))
        / np.sum(weight)
    )


def fmt22_epsilon(eps0: float, delta: float, n: int) -> float:
    """Central ε of n shuffled ε₀-LDP reports (Feldman, McMillan, Talwar 2022 Thm III.1, with
    the +8e^{ε₀}/n term: nguyen supp. §4; docs/nguyen.md, Errata and modes (A5))."""
    e = math.exp(eps0)
    return math.log1p(
        (e - 1.0)
        / (e + 1.0)
        * (8.0 * math.sqrt(e * math.log(4.0 / delta)) / math.sqrt(n) + 8.0 * e / n)
    )


def shuffled_rr_budget(eps: float, delta: float, n: int) -> float:
    """ε_RR = max(FMT22⁻¹(ε*), ε*), the inverse capped at ln(n/(16 ln(2/δ))) (nguyen supp. §4; no
    amplification when the cap is negative), by Brent's root on [0, cap]."""
    cap = math.log(n / (16.0 * math.log(2.0 / delta)))
    if cap < 0:
        return eps
    inverse = (
        cap
        if fmt22_epsilon(cap, delta, n) <= eps
        else optimize.brentq(lambda e0: fmt22_epsilon(e0, delta, n) - eps, 0.0, cap, xtol=1e-14)
    )
    return max(inverse, eps)


def rr_expected_signal(point: dict) -> float:
    """E rr_signal = tanh(ε_RR/(2m)) (per-response budget ε_RR/m, nguyen supp. §4)."""
    m = n_items_of(point)
    eps_rr = shuffled_rr_budget(float(point["eps"]), float(point["delta"]), n_users_of(point))
    return math.tanh(eps_rr / (2.0 * m))


# ---------------------------------------------------------------------------------------
# Regions from the Monte-Carlo error
# ---------------------------------------------------------------------------------------
SE_MULTIPLE = 6.0


def relative_se(
    kind: str, reps: int, m: int, *, p0: float = 1.0, signal: float = 1.0, responses: int = 0
) -> float:
    """The relative standard error of a level check's ratio at one point (module docstring):
    ``gaussian``/``laplace``/``sparse``: of the RMS ratio, ½·√(κ/(R·m(m − 1))) with κ = 2
    (Gaussian Z²) or 5 (Laplace Z²), and for the sparse chain the graph's spread of Δ²
    ((1 − p₀)/(p₀·m(m − 1)/2) per release) added; ``rr``: of the mean signal s over R·N
    responses, √((1 − s²)/(R·N))/s."""
    k = m * (m - 1)
    if kind == "rr":
        return math.sqrt((1.0 - signal * signal) / (reps * responses)) / signal
    kappa = 5.0 if kind == "laplace" else 2.0
    var = kappa / (reps * k)
    if kind == "sparse":
        var += (1.0 - p0) / (p0 * k / 2.0) / reps
    return 0.5 * math.sqrt(var)


def half_width(se: float) -> float:
    """The region's half-width: 6 standard errors, rounded up to 0.01."""
    return math.ceil(SE_MULTIPLE * se * 100.0 - 1e-9) / 100.0


# ---------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------
NOISE_INDEPENDENT = (
    "the noise draw does not depend on the fit, so the authors' unconverged power "
    "iterations do not matter here (no convergence limit)"
)
FIG2_EPS = [0.01, 0.1, 1.0, 5.0]
# RR at ε* ∈ {1, 2, 5}, where its signal is measurable (at ε* = 1 shuffling amplifies ε_RR to 1.84
# for LSAT, 1.41 for Three Grades); UCI (n = 131: no amplification, the cap is negative) from 2.
FIG2_RR_EPS = {"lsat": [1.0, 2.0, 5.0], "uci_student": [2.0, 5.0], "three_grades": [1.0, 2.0, 5.0]}
FIG1_EPS = [0.01, 0.1, 1.0, 7.5]
FIG3_EPS = [0.01, 0.1, 1.0, 5.0]


def _fig2_checks() -> list[level_check]:
    out = []
    for d, (n, m) in DATASET_SHAPES.items():
        for method, kind, fn, formula in (
            ("gaussian", "gaussian", gaussian_noise_var, "Var N_ℤ(0, Δ²/2ρ)"),
            ("laplace", "laplace", laplace_noise_var, "Var Lap_ℤ(Δ₁/ε*)"),
        ):
            a = half_width(relative_se(kind, REAL_REPS, m))
            out.append(
                level_check(
                    f"nguyen-fig2-{method}-noise-level-{d}",
                    FIG2.name,
                    "noise_ms",
                    method,
                    lambda point, fn=fn: fn(point, FIG2.name),
                    1.0 - a,
                    1.0 + a,
                    at=("eps", "mode"),
                    root=True,
                    where={"dataset": [d], "eps": FIG2_EPS},
                    formula=formula,
                    unconverged_limit=1.0,
                    pins=(f"mechanism:discrete-{method}",),
                    description=f"Fig. 2, {d} (m = {m}): the {method} chain's RMS noise per count equals the closed "
                    f"form's sd at every ε* ∈ {FIG2_EPS} in both modes (paper: Δ² = m(m − 1) or Δ₁ = "
                    f"m(m − 1), the paper's ρ = ε*²/4ln(1/δ); strict: 2⌊m²/4⌋ and CKS); exact, so "
                    f"± {a:.2f} = 6 MC standard errors at R = {REAL_REPS}; {NOISE_INDEPENDENT}",
                )
            )
        rr_eps = FIG2_RR_EPS[d]
        s_min = min(math.tanh(shuffled_rr_budget(e, 1e-4, n) / (2 * m)) for e in rr_eps)
        a = half_width(relative_se("rr", REAL_REPS, m, signal=s_min, responses=n * m))
        out.append(
            level_check(
                f"nguyen-fig2-rr-flip-level-{d}",
                FIG2.name,
                "rr_signal",
                "rr",
                rr_expected_signal,
                1.0 - a,
                1.0 + a,
                at=("eps", "mode"),
                where={"dataset": [d], "eps": rr_eps},
                formula="tanh(ε_RR/2m)",
                unconverged_limit=1.0,
                pins=("mechanism:shuffled-rr",),
                description=f"Fig. 2, {d} (n = {n}, m = {m}): randomized response keeps each response with "
                f"probability e^ε′/(1 + e^ε′), ε′ = ε_RR/m, ε_RR = max(FMT22⁻¹(ε*, δ, n), ε*): "
                f"1 − 2·flip share = tanh(ε′/2) at ε* ∈ {rr_eps}; exact, ± {a:.2f} = 6 MC "
                f"standard errors at the weakest point; the released responses do not depend on the "
                f"fit, so no convergence limit",
            )
        )
    return out


def _fig1_checks() -> list[level_check]:
    out = []
    for method, kind, fn, formula in (
        ("gaussian", "gaussian", gaussian_noise_var, "Var N_ℤ(0, Δ²/2ρ)"),
        ("laplace", "laplace", laplace_noise_var, "Var Lap_ℤ(Δ₁/ε*)"),
    ):
        a = half_width(relative_se(kind, FIG1_REPS, min(FIG1.axes["n_items"])))
        out.append(
            level_check(
                f"nguyen-fig1-{method}-noise-level",
                FIG1.name,
                "noise_ms",
                method,
                lambda point, fn=fn: fn(point, FIG1.name),
                1.0 - a,
                1.0 + a,
                at=("n_items", "eps", "mode"),
                root=True,
                where={"n_users": [1000], "eps": FIG1_EPS},
                formula=formula,
                unconverged_limit=1.0,
                pins=(f"mechanism:discrete-{method}",),
                description=f"Fig. 1 (n = 1000): the {method} chain's RMS noise per count equals the closed form's "
                f"sd at every m and ε* ∈ {FIG1_EPS}, both modes (paper: the synthetic script's "
                f"Δ² = m(m − 1)/2, Laplace Δ₁ = m(m − 1), the paper's ρ; strict: 2⌊m²/4⌋ and CKS); "
                f"exact, ± {a:.2f} = 6 MC standard errors at m = 25; {NOISE_INDEPENDENT}",
            )
        )
    return out


def _fig3_checks() -> list[level_check]:
    m = min(FIG3.axes["n_items"])
    p0 = min(1.0, P0_RULE[FIG3.name] * math.log2(m) / m)
    a = half_width(relative_se("sparse", REAL_REPS, m, p0=p0))
    return [
        level_check(
            "nguyen-fig3-sparse-noise-level",
            FIG3.name,
            "noise_ms",
            "gaussian_sparse",
            lambda point: sparse_gaussian_noise_var(point, FIG3.name),
            1.0 - a,
            1.0 + a,
            at=("n_items", "eps", "mode"),
            root=True,
            where={"eps": FIG3_EPS},
            formula="E Var N_ℤ(0, Δ²(G)/2ρ)",
            unconverged_limit=1.0,
            pins=("mechanism:sparse-discrete-gaussian",),
            description=f"Fig. 3: the sparse chain's RMS noise per count equals the closed form's sd averaged over "
            f"its ER(p₀ = 2 log₂m/m) graph (Δ² = 2|E| paper, 2 min(|E|, ⌊m²/4⌋) strict) at m ∈ "
            f"{{25, 200}}, ε* ∈ {FIG3_EPS}; model error < 1e-3 (strict mode's connected graphs), "
            f"± {a:.2f} = 6 MC standard errors at m = 25; {NOISE_INDEPENDENT}",
        )
    ]


LEVEL_CHECKS = [*_fig1_checks(), *_fig2_checks(), *_fig3_checks()]

# every check of the paper: the figures' own, with the level checks in the order they are listed in
CHECKS = [
    *synthetic.CHECKS,
    *real.CHECKS,
    *rates.CHECKS,
    *topk.CHECKS,
    *LEVEL_CHECKS,
    *design.CHECKS,
]
