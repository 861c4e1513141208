"""nguyen's top-K phase transition (Theorems 3.2 and 3.4;
docs/nguyen.md, Predictions (R6)): exact recovery of the top K items by the spectral estimate switches on at
np ≍ log m/Δ_K², from both sides (Thm 3.2: np ≥ C_K log m/Δ_K² suffices; Thm 3.4: np ≤
c_K log m/Δ_K² makes every estimator fail w.p. ≥ ½). So P(exact recovery) plotted against
x = npΔ_K²/log m should collapse onto one curve across m (at fixed K: the constants C_K,
c_K depend on K).

**Instance.** The top-K construction of the lower bound (nguyen Theorem 3.4): β*_i = Δ for the K
items of the top set, 0 for the rest (then centred), so Δ_K = Δ exactly; abilities θ* i.i.d.
Unif[−1, 1] per replicate (bounded, A18); full responses (p = 1); n = 400 users; K = 3;
m ∈ {10, 30, 100, 300}. The grid axis is x = npΔ_K²/log m itself (``signal``, a data axis
common to every m, 1 … 64 in 19 steps of 2^{1/3}); the gap Δ = √(x·log m/(np)) is derived
from it on the host (stored as the column ``gap``), and npΔ² (the negative control's x,
without the log m) is reported per row as ``topk_signal_nolog``, with ``linf`` and
``linf_over_gap`` = ‖β̂ − β*‖∞/Δ_K (Thm 3.2's proof: exact recovery once it is < 1/2, A7).
Estimator: Algorithm 1 (exact solve), top K of β̂ (docs/nguyen.md, Mechanisms and estimators; see :func:`topk_fn`).

**Predictions and tolerances** (:func:`dpsim.theory.nguyen.top_k_midpoint_factor`). With
independent N(0, s²/(np)) errors the K top items clear the others iff
Δ√(np)/s > M₁ + M₂ (M₁, M₂ the maxima of m − K and K standard normals), so the midpoint is
x½ = s²·median(M₁ + M₂)²/log m: over this m grid the log m normalisation leaves a spread of
max/min x½ = 1.17, while npΔ² alone spreads by 2.90. The check asks for a spread ≤ 1.8, the
geometric midpoint of the two predictions (it separates them symmetrically), and the
negative control for a spread > 1.8 in npΔ². Side criteria, from the same model with the
per-item variance at its Fisher bound s² = 1/E[σ(θ)(1 − σ(θ))] = 4.33 (the spectral
estimate's is at least that, which only lowers the success probability below the midpoint):
at x ≤ 2 it bounds the recovery probability by 0.11 (m = 10; less for larger m), and the
check asks for ≤ 0.25 (5 Monte-Carlo standard errors of slack at 200 replicates); at
x ≥ 40 (about 4 x½) the recovery probability must be ≥ 0.9.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from dpsim.estimators import top_k_mask
from dpsim.estimators.spectral import exact_solve_result, spectral_estimate
from dpsim.engine import (
    Derived,
    Experiment,
    Tuning,
    FigureSpec,
    Method,
    Panel,
    Solve,
    ThresholdCollapseCheck,
    ThresholdScalingCheck,
    axes,
    deferred_table,
)
from dpsim.metrics import linf_error, topk_metrics
from dpsim.models.btl import true_top_k_mask
from dpsim.results import RESULTS
from dpsim.theory import nguyen as rates

from ..model import AXIS_TYPES, SYMBOLS, lane_bytes, resolve_k, topk_generate, topk_truth

TOPK_ITEMS = [10, 30, 100, 300]
TOPK_USERS = 400
TOPK_K = 3
TOPK_SIGNAL = [float(f"{x:.4g}") for x in np.geomspace(1.0, 64.0, 19)]
TOPK_REPS = 200


def derive_gap(point: dict) -> dict:
    """Δ = √(x·log m/(np)) for x = ``signal`` (host)."""
    return {
        "gap": math.sqrt(
            point["signal"] * math.log(point["n_items"]) / (point["n_users"] * point["p"])
        )
    }


def topk_fn(key, ctx):
    """Algorithm 1 (exact solve), its top K against the true top K, npΔ² and ‖β̂ − β*‖∞.

    The estimated top K is :func:`dpsim.estimators.top_k_mask` of β̂ (a sort; its random
    tie-break never acts, a continuous estimate has no ties); the true top K is
    :func:`true_top_k_mask` of β* (no tie at the boundary of the two-level design)."""
    shape, data = ctx.shape, ctx.data
    fit = spectral_estimate(ctx.sample["Y"])
    beta = ctx.sample["beta"]
    mask = top_k_mask(key, fit.theta, shape["k"])
    truth = true_top_k_mask(beta, shape["k"])
    n = shape["n_users"]
    signal = n * data["p"] * data["gap"] ** 2  # npΔ²
    linf = linf_error(fit.theta, beta)  # both centred
    result = exact_solve_result(fit.theta, fit.info["connected"])
    return {
        **topk_metrics(mask, truth),
        "topk_signal_nolog": signal,
        "linf": linf,
        "linf_over_gap": linf / data["gap"],
        "converged": result == RESULTS.successful,
        "iterations": jnp.asarray(0, jnp.int64),
        "result": result,
    }


TOPK = Experiment(
    name="nguyen-topk",
    title="Top-K recovery by the spectral estimate: phase transition in npΔ_K²/log m (nguyen Thms 3.2, 3.4)",
    axes={
        "n_items": TOPK_ITEMS,
        "n_users": [TOPK_USERS],
        "k": [TOPK_K],
        "p": [1.0],
        "signal": TOPK_SIGNAL,
    },
    shape_axes=("n_items", "n_users", "k"),
    analysis_axes=(),
    truth=topk_truth,
    truth_per_replicate=True,
    generate=topk_generate,
    methods={
        "nonprivate": Method(
            topk_fn,
            ("relative_hamming", "exact_recovery", "topk_signal_nolog", "linf", "linf_over_gap"),
            {"converged": "bool", "iterations": "int", "result": "int"},
            "Spectral (Algorithm 1)",
            "Algorithm 1 (exact solve), top K of β̂; x = npΔ_K²/log m",
        )
    },
    reps=TOPK_REPS,
    resolve_shape=resolve_k,
    axis_types={
        **AXIS_TYPES,
        "signal": axes.positive(
            "x = npΔ_K²/log m, the top-K signal (R6); the gap Δ_K is derived from it"
        ),
    },
    derived=(Derived(("gap",), derive_gap, level="data", doc="Δ_K = √(x·log m/(np))"),),
    tuning=Tuning(lane_bytes=lambda shape: lane_bytes(shape["n_users"], shape["n_items"])),
    figure=FigureSpec(
        x="signal",
        curve="n_items",
        xlabel="$np\\Delta_K^2/\\ln m$",
        curve_label="$m$",
        logx=True,
        panels=(
            Panel(
                "exact_recovery",
                "nonprivate",
                "P(exact top-$K$ recovery)",
                title="exact recovery against $np\\Delta_K^2/\\ln m$",
            ),
            Panel(
                "relative_hamming",
                "nonprivate",
                "relative Hamming error",
                title="relative Hamming error against $np\\Delta_K^2/\\ln m$",
            ),
            Panel(
                "linf_over_gap",
                "nonprivate",
                "$\\|\\hat\\beta-\\beta^*\\|_\\infty/\\Delta_K$",
                title="entrywise error in units of the gap (Thm 3.2: ≤ 1/2 separates)",
            ),
            Panel(
                "linf",
                "nonprivate",
                "$\\|\\hat\\beta-\\beta^*\\|_\\infty$",
                title="entrywise error $\\|\\hat\\beta-\\beta^*\\|_\\infty$",
            ),
        ),
        symbols=SYMBOLS,
        title="nguyen Thms 3.2/3.4: top-K phase transition",
    ),  # K and n: the subtitle
    description="nguyen §3.2–3.3, Thms 3.2, 3.4; docs/nguyen.md, Predictions (R6)",
)

EXPERIMENTS = [TOPK]

FISHER_S2 = 2.0 / (float(jax.nn.sigmoid(1.0)) - float(jax.nn.sigmoid(-1.0)))  # 4.33


def predictions() -> dict:
    """The extreme-value model's numbers (:mod:`dpsim.theory.nguyen`, host, SciPy), computed
    when the first check that uses them is judged (:data:`PREDICTED`)."""
    factors = {m: rates.top_k_midpoint_factor(m, TOPK_K) for m in TOPK_ITEMS}
    nolog = {m: f * math.log(m) for m, f in factors.items()}
    log_m = np.log(TOPK_ITEMS)
    return {
        "midpoint_factors": factors,
        # slopes on log m of log x½ (the model's finite-m drift) and of log log m (what
        # dropping the log m normalisation adds)
        "midpoint_slope": float(np.polyfit(log_m, np.log([factors[m] for m in TOPK_ITEMS]), 1)[0]),
        "log_m_slope": float(np.polyfit(log_m, np.log(log_m), 1)[0]),
        "spread": max(factors.values()) / min(factors.values()),  # 1.17
        "spread_nolog": max(nolog.values()) / min(nolog.values()),  # 2.90
        "p_low_bound": max(
            rates.top_k_success_probability(m, TOPK_K, 2.0, FISHER_S2) for m in TOPK_ITEMS
        ),
    }


# computed from the model when the first check that uses them is judged (dpsim.engine.judgement.deferred)
PREDICTED = deferred_table(predictions, "nguyen's top-K predictions")
# the collapse bound: the geometric mean of the predicted spreads with and without log m
# (1.17 and 2.90 on this grid), so the right scaling passes and the wrong one fails by the
# same factor
COLLAPSE = (PREDICTED["spread"] * PREDICTED["spread_nolog"]) ** 0.5
# the side criterion below the transition: the success probability at x ≤ 2 stays under 1/4
# (the model's bound there is about 0.11)
P_LOW = 0.25

CHECKS = [
    ThresholdCollapseCheck(
        "nguyen-r6-topk-collapse",
        TOPK.name,
        "exact_recovery",
        "nonprivate",
        "signal",
        ("n_items",),
        COLLAPSE,
        2.0,
        P_LOW,
        40.0,
        0.9,
        description="R6 (Thms 3.2, 3.4): P(exact top-3 recovery) against npΔ²/log m collapses across "
        "m ∈ {10, …, 300}: the midpoints' spread is at most the geometric mean of the predicted "
        "spreads with and without log m",
    ),
    ThresholdCollapseCheck(
        "nguyen-r6-topk-no-log-control",
        TOPK.name,
        "exact_recovery",
        "nonprivate",
        "topk_signal_nolog",
        ("n_items",),
        COLLAPSE,
        0.0,
        0.0,
        math.inf,
        1.0,
        pool=("signal",),
        expect_collapse=False,
        description="R6 negative control: against npΔ² (no log m) the midpoints do not collapse "
        "(the spread exceeds the same bound)",
    ),
]


# The solved threshold (issue 26 item 2): `dpsim solve` finds, per m, the x½ = npΔ²/log m
# where P(exact top-3 recovery) = 1/2; Thms 3.2/3.4 say npΔ²½ ≍ log m, i.e. x½ ≍ 1 (the rate
# in units of x is 1). Its slope on log m is predicted by the extreme-value model
# (``midpoint_slope``, +0.043 over m = 10…300); dropping the log m (the control's rate
# 1/log m) adds the slope of log log m (+0.265). The region is the model's slope ± half
# of that, so the right and the wrong scaling are separated symmetrically (as the collapse
# check's geometric-mean bound does).
TOPK_SOLVE = Solve(
    "signal", "exact_recovery@nonprivate=0.5", within=(TOPK_SIGNAL[0], TOPK_SIGNAL[-1])
)
SLOPE_HALF_WIDTH = PREDICTED["log_m_slope"] / 2
CHECKS += [
    ThresholdScalingCheck(
        "nguyen-r6-topk-threshold-scaling",
        TOPK.name,
        TOPK_SOLVE,
        "n_items",
        (),
        lambda config: 1.0,
        (
            PREDICTED["midpoint_slope"] - SLOPE_HALF_WIDTH,
            PREDICTED["midpoint_slope"] + SLOPE_HALF_WIDTH,
        ),
        formula="1 (x already in units of log m/(np))",
        description="R6 (Thms 3.2, 3.4): the solved npΔ²½ where P(exact top-3) = 1/2 scales as log m: the "
        "slope of log(x½) on log m is the extreme-value model's within half the slope log log m "
        "adds",
    ),
    ThresholdScalingCheck(
        "nguyen-r6-topk-threshold-scaling-no-log",
        TOPK.name,
        TOPK_SOLVE,
        "n_items",
        (),
        lambda config: 1.0 / math.log(config["n_items"]),
        (PREDICTED["midpoint_slope"] + SLOPE_HALF_WIDTH, math.inf),
        formula="1/log m (log m dropped)",
        description="negative control: with the log m dropped (npΔ²½ ≍ 1) the slope exceeds the band",
    ),
]
