"""xu's release and estimator (xu §3–§4; docs/xu.md, Mechanisms and estimators; Metrics): the
release stage (drawn through :mod:`dpsim.mechanisms.pairwise_ldp`), the ridge M-estimator of eq. (3)
wired as the Method ``m_est``, and its scores. The model (axes, θ*, raw wins) is :mod:`.model`.

**Release** (xu §3.1–3.2). The ``mechanism`` axis names what each user releases per
comparison, at ε per comparison: ``debiased_rr`` (the paper's z of eq. (1)), ``classic_rr``
(ỹ, the Scenario V baseline), ``laplace`` (y + Laplace(1/ε), docs/xu.md, Mechanisms and estimators; Errata and modes (A6)) or ``none``.
The analyst sees the per-pair mean z̄ (:func:`dpsim.mechanisms.pairwise_ldp.privatise`).
The randomness of the release is keyed by (lane, privacy level) and **not** by the
mechanism: classic and debiased RR at one ε see the *same* flipped counts N, so their
estimates rank the items identically, ties included (docs/xu.md, Mechanisms and estimators; Errata and modes (A22)), and Laplace sees the
same raw wins (docs/xu.md, Experiments as run). Each experiment declares the analysis axes that key its
release (``release_axes``: the privacy level, i.e. every analysis axis but ``mechanism`` and
``mode``), and the engine passes the release stage that key
(:mod:`dpsim.engine.execution.program`, "Keys").

**Estimator** (xu §4.1 eq. (3); xu §4.1). One method, ``m_est``: the debiased
M-estimator θ̂ = argmin Σ_{i<j}[z̄_ij(θ_j − θ_i) + log(1 + e^{θ_i − θ_j})] + λ‖θ‖², by
truncated Newton from 0 (:func:`dpsim.estimators.debiased_m.debiased_m_estimator`); on
classic-RR data it is the classic-RR MLE of Scenario V (docs/xu.md, Mechanisms and estimators; Errata and modes (A7)), on Laplace data the
Laplace baseline (A6), on raw data the non-private ridge MLE (eq. (2)). λ follows the
``mode`` axis, the ridge rule's reading (docs/xu.md, Mechanisms and estimators; Errata and modes (A4); keyed under its former name
``lambda_rule``, :data:`STREAM_NAMES`): ``g_over_l`` (default) λ = G(ε)/L, the paper's
"λ ≍ L⁻¹(e^ε+1)²/(e^ε−1)" with the square restored; ``paper`` the literal formula, which is
≈ 19× larger at ε = 3 and reverses the paper's own Fig. 2 ordering (``xu-lambda-rule``).
λ = 1/L for ``none``. λ changes no privacy guarantee (it acts on released data).

**Scores** (docs/xu.md, Metrics; docs/xu.md, Metrics; Errata and modes (A15, A16)). ``linf`` ‖θ̂ − θ*‖∞, ``l2_rms`` ‖θ̂ − θ*‖₂/√m,
``mse`` = ``l2_rms``², ``kendall`` the Kendall distance K(θ̂, θ*) with tied pairs of θ̂
counted ½ (its expectation under a random tie-break; A15), ``kendall_strict`` the paper's
strict "< 0" count, ``top_k_hamming`` H_K with ties at the K-boundary broken uniformly at
random, reported as its expectation (A15), and ``excess_risk`` e_L of eq. (4), exactly
(docs/xu.md, Metrics). Ties in θ̂ are |θ̂_i − θ̂_j| ≤ 1e-9·max(1, ‖θ̂‖∞). K = ``k`` (the ``k`` axis,
stored resolved; "auto": m//2, the paper's K = m/2). Optional metrics: ``oracle_mse``, the sandwich
prediction (tr Cov)/m of E‖θ̂ − θ*‖²/m at the simulated θ* (docs/xu.md, Predictions (P4), λ = 0, no bias term;
NaN for classic RR, which is biased), and ``floor_mse``, the squared ℓ2/√m error of the
classic-RR population limit at the simulated θ* (docs/xu.md, Mechanisms and estimators). Two metrics of the release
alone, for the level checks that pin the mechanisms (:mod:`.figures.levels`): ``release_slope``
Σ_e(z̄_e − ½)(ȳ_e − ½)/Σ_e(ȳ_e − ½)², the slope of the released mean on the raw one (E = 2q − 1
= tanh(ε/2) for classic RR, q the keep probability; 1 for the unbiased releases), and
``excess_var`` L·mean_e(z̄_e − ȳ_e)², the released noise's variance per answer (E =
e^ε/(e^ε − 1)² for debiased RR, 2/ε² for Laplace). Both read only the released z̄ and the raw
ȳ; neither changes a draw.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import jax.numpy as jnp

from dpsim.engine import Method, UsageError, solver_diagnostics
from dpsim.estimators.debiased_m import debiased_m_estimator, expected_top_k_hamming, ridge_lambda
from dpsim.mechanisms.pairwise_ldp import classic_rr_mean, debiased_rr_mean, privatise
from dpsim.metrics import excess_risk, kendall_distance, l2_rms_error, linf_error
from dpsim.models.btl import true_top_k_mask
from dpsim.theory import xu as theory

from .model import INF, ladder_counts

METRICS = ("linf", "l2_rms", "mse", "kendall", "kendall_strict", "top_k_hamming", "excess_risk")
OPTIONAL_METRICS = ("oracle_mse", "floor_mse", "release_slope", "excess_var")


def validate_lambda(point: dict) -> None:
    """The literal λ rule is undefined without privacy (it is ∞ at ε = ∞; docs/xu.md, Mechanisms and estimators)."""
    if (
        point.get("mode") == "paper"
        and math.isinf(point.get("eps", 1.0))
        and point.get("mechanism") != "none"
    ):
        raise UsageError(
            "mode=paper is undefined at eps=inf ((e^ε+1)²/((e^ε−1)L) → ∞); use mode=g_over_l"
        )


# ---------------------------------------------------------------------------------------
# The release
# ---------------------------------------------------------------------------------------
RR_MECHANISMS = ("debiased_rr", "classic_rr")


def homogeneous_groups(ctx):
    """(group wins (1, M), sizes (1,), budgets (1,)): every user at ε (the paper's setting)."""
    sizes = jnp.reshape(jnp.asarray(ctx.data["n_users"], jnp.float64), (1,))
    eps = jnp.reshape(jnp.asarray(ctx.analysis["eps"], jnp.float64), (1,))
    return ctx.sample["wins"], sizes, eps


def make_privatise(groups: Callable = homogeneous_groups):
    """The release stage: z̄ (M,) of the analysis point's mechanism, drawn with the release key
    the engine passes (keyed by the ``release_axes``: :func:`.model.release_axes`), with the privacy
    profile ``groups(ctx)``."""

    def release(key, ctx):
        wins, sizes, eps = groups(ctx)
        mechanism = ctx.analysis["mechanism"]
        if (
            "release_law" in ctx.analysis and mechanism in RR_MECHANISMS
        ):  # a ladder design: its tables
            counts = ladder_counts(
                key, ctx.truth["ladder"], ctx.analysis["release_law"], ctx.data["n_users"]
            )
            zbar = (
                classic_rr_mean(counts, sizes)
                if mechanism == "classic_rr"
                else debiased_rr_mean(counts, sizes, eps)
            )
        else:
            zbar = privatise(key, wins, sizes, eps, mechanism)
        return {"zbar": zbar, "sizes": sizes, "eps": eps}

    return release


# ---------------------------------------------------------------------------------------
# The estimator and its scores
# ---------------------------------------------------------------------------------------
def ridge(released, mechanism: str, rule: str):
    """λ of the estimator (docs/xu.md, Mechanisms and estimators; Errata and modes (A4)): ``rule`` applied to the release's profile; 1/L
    (G = 1) for the non-private mechanism."""
    eps = released["eps"]
    if mechanism == "none":
        return ridge_lambda(jnp.full_like(eps, INF), released["sizes"], "g_over_l")
    return ridge_lambda(eps, released["sizes"], rule)


def scores(theta_hat, theta, top_k: int) -> dict:
    """The metrics of docs/xu.md, Metrics (module docstring) of a centred θ̂ against θ*."""
    err = l2_rms_error(theta_hat, theta)
    return {
        "linf": linf_error(theta_hat, theta),
        "l2_rms": err,
        "mse": err**2,
        "kendall": kendall_distance(theta_hat, theta, ties="half"),
        "kendall_strict": kendall_distance(theta_hat, theta, ties="strict"),
        "top_k_hamming": expected_top_k_hamming(theta_hat, true_top_k_mask(theta, top_k), top_k),
        "excess_risk": excess_risk(theta_hat, theta),
    }


def oracle_mse(theta, released, mechanism: str):
    """(tr Cov)/m of the λ = 0 sandwich at θ* (docs/xu.md, Predictions (P4)); NaN for classic RR (biased)."""
    if mechanism == "classic_rr":
        return jnp.asarray(jnp.nan)
    moments = theory.oracle_moments(theta, released["sizes"], released["eps"], mechanism)
    return jnp.trace(moments.cov) / theta.shape[0]


def floor_mse(theta, released):
    """‖θ̃ − θ*‖²/m, θ̃ the classic-RR population limit at this privacy profile (docs/xu.md, Mechanisms and estimators)."""
    return theory.classic_rr_floor(theta, released["sizes"], released["eps"])["l2_rms"] ** 2


def release_metrics(released, wins) -> dict:
    """``release_slope`` and ``excess_var`` of the release (module docstring, "Scores"): z̄
    (M,) against the raw means ȳ = Σ_g wins_g / L, L = Σ_g sizes_g. The slope is NaN when
    every ȳ_e = ½ (no signal to regress on)."""
    n_users = jnp.sum(released["sizes"])
    raw = jnp.sum(wins, axis=0) / n_users
    centred = raw - 0.5
    denominator = jnp.sum(centred**2)
    slope = jnp.where(
        denominator > 0,
        jnp.sum((released["zbar"] - 0.5) * centred) / jnp.where(denominator > 0, denominator, 1.0),
        jnp.nan,
    )
    return {"release_slope": slope, "excess_var": n_users * jnp.mean((released["zbar"] - raw) ** 2)}


def m_estimator_method(extra: Sequence[str] = ()) -> Method:
    """The method ``m_est`` (module docstring), reporting :data:`METRICS`, the ``extra``
    metrics of :data:`OPTIONAL_METRICS`, and the solver's diagnostics plus λ."""
    unknown = set(extra) - set(OPTIONAL_METRICS)
    if unknown:
        raise ValueError(f"unknown extra metrics {sorted(unknown)}")

    def fn(key, ctx):
        released, mechanism = ctx.released, ctx.analysis["mechanism"]
        lam = ridge(released, mechanism, ctx.analysis["mode"])
        fit = debiased_m_estimator(released["zbar"], lam)
        theta = ctx.sample["theta"]
        out = {**scores(fit.theta, theta, ctx.shape["k"]), **fit.solver_diagnostics(), "lam": lam}
        if "oracle_mse" in extra:
            out["oracle_mse"] = oracle_mse(theta, released, mechanism)
        if "floor_mse" in extra:
            out["floor_mse"] = floor_mse(theta, released)
        if "release_slope" in extra or "excess_var" in extra:
            out.update(
                {
                    k: v
                    for k, v in release_metrics(released, ctx.sample["wins"]).items()
                    if k in extra
                }
            )
        return out

    return Method(
        fn,
        METRICS + tuple(extra),
        solver_diagnostics(lam="float"),
        label="M-estimator",
        doc="xu eq. (3): ridge M-estimator on the released z̄ (the debiased M-estimator on "
        "debiased_rr, the classic-RR MLE on classic_rr), Newton from 0",
    )
