"""The pipeline every xu experiment shares (xu §2–§5; docs/xu.md, Model; Mechanisms and estimators; Experiments as run):
axes, θ* designs, data, the released statistics, the estimator and its scores.

**Per replicate** (docs/xu.md, Mechanisms and estimators). θ* is drawn per (m, replicate) and shared by every L, Δ,
ε, scheme and mechanism of that replicate (``truth_per_replicate``; docs/xu.md, Errata and modes (A2, A24)): θ*_i ~
U(−2, 2) centred (Scenarios I, II, V; A2, A14), or the evenly spaced ladder Δ(i − (m+1)/2)
with its item labels permuted per replicate (Scenarios III, IV; A3), whose permutation is
drawn once and scaled by the data axis Δ. The raw answers of the L users are drawn as their
sufficient statistic, the wins per pair n1_e ~ Bin(L, p*_e)
(:func:`dpsim.models.complete_btl.sample_pair_wins`), keyed by (m, L, Δ, replicate): every
privacy level and mechanism sees the same raw data (common random numbers).

**Tables** (Scenarios III, IV). On the ladder θ* = Δ·r every pair's law depends only on the rank
difference k = |r_i − r_j| of its items: the raw wins are Bin(L, σ(Δk)) and the RR count
Bin(L, ½ + (σ(Δk) − ½)tanh(ε/2)) (Lemma 1), k = 1 … m − 1. Their alias tables are built on the
host once per cell (the engine's :class:`~dpsim.engine.CellArrays` ``win_law`` of (m, L, Δ)
and ``release_law`` of (m, L, Δ, ε), :data:`LADDER_CELLS`) and every pair is drawn with one
64-bit word (:func:`dpsim.models.complete_btl.sample_ladder_pair_counts`, exact:
:mod:`dpsim.samplers`). No figure of these scenarios compares raw and released counts, so the
RR count is drawn from its own law (keyed by the release key), not from the raw wins:
classic and debiased RR share it, Laplace and ``none`` read the raw wins. The tables' laws
are computed from the grid's values on the host, so code that changes ε at trace time (a
mutant's scaled ε) does not reach them. With θ* ~ U(−2, 2) the laws are not known before
tracing and ``jax.random.binomial`` draws the counts.

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
alone, for the level checks that pin the mechanisms (``levels``): ``release_slope``
Σ_e(z̄_e − ½)(ȳ_e − ½)/Σ_e(ȳ_e − ½)², the slope of the released mean on the raw one (E = 2q − 1
= tanh(ε/2) for classic RR, q the keep probability; 1 for the unbiased releases), and
``excess_var`` L·mean_e(z̄_e − ȳ_e)², the released noise's variance per answer (E =
e^ε/(e^ε − 1)² for debiased RR, 2/ε² for Laplace). Both read only the released z̄ and the raw
ȳ; neither changes a draw.

**Budget** (xu §3.2, eq. (1), Lemma 2; docs/xu.md, Errata and modes (A20)). ε is per comparison, as in the paper; a user's whole vector of
m(m−1)/2 answers is (m(m−1)/2)·ε-LDP by composition, stored as the metadata column
``eps_user`` (homogeneous ε only).
"""
from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

import jax.numpy as jnp

from dpsim.estimators.debiased_m import (LAMBDA_RULES, debiased_m_estimator, expected_top_k_hamming,
                                         ridge_lambda)
import numpy as np

from dpsim.engine import CellArrays, Derived, Experiment, FigureSpec, Method, UsageError, solver_diagnostics
from dpsim.engine.definition import axes
from dpsim.mechanisms.pairwise_ldp import MECHANISMS, classic_rr_mean, debiased_rr_mean, privatise
from dpsim.metrics import excess_risk, kendall_distance, l2_rms_error, linf_error
from dpsim.models.btl import true_top_k_mask
from dpsim.models.complete_btl import (ladder_count_tables, sample_ladder_pair_counts, sample_pair_wins,
                                       theta_evenly_spaced_permuted, theta_uniform_centred)
from dpsim.theory import xu as theory

INF = math.inf

# ---------------------------------------------------------------------------------------
# Axes of the xu package (the shared vocabulary: n_items = m, n_users = L, eps, gap = Δ, k = K)
# ---------------------------------------------------------------------------------------
MECHANISM = axes.choice(*MECHANISMS, doc="what each user releases per comparison: debiased_rr (eq. (1)), "
                                         "classic_rr, laplace (y + Laplace(1/ε)) or none (xu §3, xu §3.1–3.2)")
MODE = axes.choice(*LAMBDA_RULES, doc="the ridge λ's reading: g_over_l = G(ε)/L (default) or paper = the "
                                      "literal (e^ε+1)²/((e^ε−1)L) (docs/xu.md, Mechanisms and estimators; Errata and modes (A4))")
SCHEME = axes.choice(*theory.SCHEMES, doc="adaptive ε(m, L) ∝ log(mL)/√(mL), 1/√(mL) or 1/(√(mL)·log(mL)), "
                                          "= 1 at L = L0 (xu §5.1 Scenario II; docs/xu.md, Errata and modes (A8))")
L0 = axes.integer(1, "L0: the L at which every adaptive scheme gives ε = 1 (xu §5.1; docs/xu.md, Errata and modes (A9))")
AXIS_TYPES = {"mechanism": MECHANISM, "mode": MODE, "scheme": SCHEME, "l0": L0}

# the analysis axes that do NOT key the release (common random numbers across them)
NOT_RELEASE_AXES = ("mechanism", "mode")
# renamed axes keyed under their former names (Experiment.stream_names): the rename of
# lambda_rule to mode (the one word for a paper-versus-correct reading) changes no number
STREAM_NAMES = {"mode": "lambda_rule"}

SYMBOLS = {"n_items": "$m$", "n_users": "$L$", "eps": "$\\epsilon$", "gap": "$\\Delta$", "k": "$K$",
           "l0": "$L_0$", "scheme": "scheme", "mechanism": "mechanism", "mode": "$\\lambda$ rule",
           "ratings_file": "ratings", "profile": "profile", "match": "profile match"}
# what the figures write for the named values of the axes (FigureSpec.value_labels): the
# schemes by formula (their names in the paper's text are swapped, A8), natural logs as in
# dpsim.theory.xu.scheme_shape
VALUE_LABELS = {
    "scheme": {"eps_log_over_sqrt": "$\\epsilon \\propto \\ln(mL)/\\sqrt{mL}$",
               "eps_inv_sqrt": "$\\epsilon \\propto 1/\\sqrt{mL}$",
               "eps_inv_sqrt_log": "$\\epsilon \\propto 1/(\\sqrt{mL}\\,\\ln(mL))$"},
    "mechanism": {"classic_rr": "classic RR", "debiased_rr": "debiased RR", "laplace": "Laplace",
                  "none": "no privacy"},
    "mode": {"g_over_l": "$\\lambda = G(\\epsilon)/L$",
             "paper": "$\\lambda = (e^\\epsilon+1)^2/((e^\\epsilon-1)L)$ (literal)"},
    "match": {"profile": "the profile", "same_g": "homogeneous $\\epsilon$, same $G(\\epsilon)$",
              "same_mean_eps": "homogeneous $\\epsilon$, same mean $\\epsilon$"},
    "profile": {"half_tenth": "½ of users at $\\epsilon$, ½ at $\\epsilon/10$",
                "thirds": "⅓ each at $\\epsilon/4$, $\\epsilon$, $4\\epsilon$",
                "strict_minority": "90% at $\\epsilon$, 10% at $\\epsilon/10$"},
    "ratings_file": {"stand-in": "MovieLens: synthetic stand-in"},
}
# the paper's symbols for the metrics (docs/xu.md, Metrics, figure axes)
YLABEL = {"linf": "$\\|\\hat\\theta-\\theta^*\\|_\\infty$", "l2_rms": "$m^{-1/2}\\|\\hat\\theta-\\theta^*\\|_2$",
          "kendall": "$K(\\hat\\theta,\\theta^*)$", "top_k_hamming": "$H_K(\\hat\\theta,\\theta^*)$",
          "mse": "$m^{-1}\\|\\hat\\theta-\\theta^*\\|_2^2$", "oracle_mse": "sandwich $m^{-1}E\\|\\hat\\theta-\\theta^*\\|_2^2$",
          "floor_mse": "classic-RR floor $m^{-1}\\|\\tilde\\theta-\\theta^*\\|_2^2$"}

METRICS = ("linf", "l2_rms", "mse", "kendall", "kendall_strict", "top_k_hamming", "excess_risk")
OPTIONAL_METRICS = ("oracle_mse", "floor_mse", "release_slope", "excess_var")


# ---------------------------------------------------------------------------------------
# Host-side values
# ---------------------------------------------------------------------------------------
def resolve_k(shape: dict, auto: Callable[[int], int] = lambda m: m // 2) -> dict:
    """The shape with ``k`` resolved to the integer K ("auto": ``auto(m)``, m//2 = the paper's
    K = m/2; xu §5.2, Scenario III), checked to lie in [1, m − 1] (docs/xu.md, Errata and modes (A23)). The stored
    ``k`` is this integer (the shared rule, :mod:`dpsim.engine.definition.axes`)."""
    m, k = shape["n_items"], shape.get("k", "auto")
    top_k = auto(m) if k == "auto" else k
    if not 1 <= top_k <= m - 1:
        raise UsageError(f"k={k} gives K = {top_k}, which must lie in [1, n_items − 1] = [1, {m - 1}] "
                         f"for n_items={m}")
    return {**shape, "k": int(top_k)}


def keyed_as_before(auto: Callable[[int], int] = lambda m: m // 2) -> Callable[[dict], dict]:
    """``Experiment.stream_point`` of xu: a grid point as xu keyed it while it stored ``k``
    as declared beside a ``top_k`` column (``k = "auto"`` where K is the rule's ``auto(m)``,
    K in ``top_k``), so storing the resolved ``k`` changed no random stream and no number."""
    def point(p: dict) -> dict:
        if "k" not in p:
            return p
        k = p["k"]
        return {**p, "k": "auto" if k == auto(p["n_items"]) else k, "top_k": k}
    return point


def scheme_eps(point: dict) -> dict:
    """ε(m, L) of the adaptive scheme, normalised to 1 at L = L0 (xu Scenario II, §5.1)."""
    return {"eps": float(theory.adaptive_eps(point["n_items"], point["n_users"], point["scheme"], point["l0"]))}


def user_budget(point: dict) -> dict:
    """``eps_user`` = m(m−1)/2·ε, the composed per-user LDP budget (metadata; xu §3.2, eq. (1), Lemma 2; docs/xu.md, Errata and modes (A20))."""
    m = point["n_items"]
    return {"eps_user": m * (m - 1) / 2 * point["eps"]}


def release_axes(analysis_axes: Sequence[str]) -> tuple[str, ...]:
    """The axes that key the release (``Experiment.release_axes``): every analysis axis but
    ``mechanism`` and ``mode`` (module docstring, "Release")."""
    return tuple(a for a in analysis_axes if a not in NOT_RELEASE_AXES)


def validate_lambda(point: dict) -> None:
    """The literal λ rule is undefined without privacy (it is ∞ at ε = ∞; docs/xu.md, Mechanisms and estimators)."""
    if point.get("mode") == "paper" and math.isinf(point.get("eps", 1.0)) and \
            point.get("mechanism") != "none":
        raise UsageError("mode=paper is undefined at eps=inf ((e^ε+1)²/((e^ε−1)L) → ∞); "
                         "use mode=g_over_l")


# ---------------------------------------------------------------------------------------
# θ*, data, release
# ---------------------------------------------------------------------------------------
def truth_uniform(key, shape):
    """θ*_i ~ U(−2, 2), centred (xu §5.1, §5.3; docs/xu.md, Model; Errata and modes (A2, A14)), per (m, replicate)."""
    theta = theta_uniform_centred(key, shape["n_items"])
    return {"theta": theta}


def truth_ladder(key, shape):
    """The evenly spaced ladder with unit gap, item labels permuted (xu §5.2; docs/xu.md, Errata and modes (A3)), per
    (m, replicate); ``generate`` scales it by the data axis Δ."""
    return {"ladder": theta_evenly_spaced_permuted(key, shape["n_items"], 1.0)}


def theta_of(truth, data):
    """θ* of one lane: the uniform draw, or Δ × the permuted ladder."""
    return truth["theta"] if "theta" in truth else data["gap"] * truth["ladder"]


def _ladder_win_probabilities(point: dict) -> np.ndarray:
    """σ(Δk), k = 1 … m − 1: a pair's win probability on the ladder at rank difference k. (m − 1,)"""
    return 1.0 / (1.0 + np.exp(-point["gap"] * np.arange(1, point["n_items"])))


def ladder_win_laws(point: dict) -> dict:
    """The cell arrays ``win_law`` of a ladder design (module docstring, "Tables"): alias tables of
    the raw wins' laws Bin(L, σ(Δk)), k = 1 … m − 1, at (m, L, Δ). Returns {"threshold",
    "alias"}: (m − 1, L + 1)."""
    return ladder_count_tables(point["n_users"], _ladder_win_probabilities(point))._asdict()


def ladder_release_laws(point: dict) -> dict:
    """The cell arrays ``release_law`` of a ladder design: alias tables of the laws of the RR
    release's count, Bin(L, ½ + (σ(Δk) − ½)·tanh(ε/2)) (each answer released as 1 w.p. q̃,
    xu §3.1 Lemma 1), k = 1 … m − 1, at (m, L, Δ, ε). Returns {"threshold", "alias"}: (m − 1, L + 1)."""
    shrink = 1.0 if math.isinf(point["eps"]) else math.tanh(point["eps"] / 2)
    p_star = _ladder_win_probabilities(point)
    return ladder_count_tables(point["n_users"], 0.5 + (p_star - 0.5) * shrink)._asdict()


LADDER_CELLS = (
    CellArrays("win_law", ("n_items", "n_users", "gap"), ladder_win_laws,
               doc="alias tables of the raw wins' laws Bin(L, σ(Δk)), k = 1 … m − 1 (Scenarios III, IV)"),
    CellArrays("release_law", ("n_items", "n_users", "gap", "eps"), ladder_release_laws,
               doc="alias tables of the RR count's laws Bin(L, ½ + (σ(Δk) − ½)tanh(ε/2)) (Scenarios III, IV)"),
)
RR_MECHANISMS = ("debiased_rr", "classic_rr")


def ladder_counts(key, ladder, cell, n_users):
    """(1, M) counts per pair of a ladder design drawn through the tables of one cell (a
    :class:`~dpsim.engine.Cell` of :data:`LADDER_CELLS`): one 64-bit word per pair."""
    threshold, alias = cell.tables["threshold"], cell.tables["alias"]
    laws = threshold.shape[1]
    rows = (-1, threshold.shape[-1])
    counts = sample_ladder_pair_counts(key, ladder, threshold.reshape(rows), alias.reshape(rows), n_users,
                                       cell.index * laws)
    return counts[None, :]


def generate(key, shape, truth, data):
    """One replicate's raw wins n1_e ~ Bin(L, p*_e) over the m(m−1)/2 pairs (xu §2; docs/xu.md, Mechanisms and estimators)
    and θ*: through the cell's tables for a ladder design (``win_law``), else by
    ``jax.random.binomial``. Returns {"theta": (m,), "wins": (1, M)}."""
    theta = theta_of(truth, data)
    if "win_law" in data:
        return {"theta": theta, "wins": ladder_counts(key, truth["ladder"], data["win_law"], data["n_users"])}
    return {"theta": theta, "wins": sample_pair_wins(key, theta, data["n_users"])}


def homogeneous_groups(ctx):
    """(group wins (1, M), sizes (1,), budgets (1,)): every user at ε (the paper's setting)."""
    sizes = jnp.reshape(jnp.asarray(ctx.data["n_users"], jnp.float64), (1,))
    eps = jnp.reshape(jnp.asarray(ctx.analysis["eps"], jnp.float64), (1,))
    return ctx.sample["wins"], sizes, eps


def make_privatise(groups: Callable = homogeneous_groups):
    """The release stage: z̄ (M,) of the analysis point's mechanism, drawn with the release key
    the engine passes (keyed by the ``release_axes``; module docstring), with the privacy
    profile ``groups(ctx)``."""
    def release(key, ctx):
        wins, sizes, eps = groups(ctx)
        mechanism = ctx.analysis["mechanism"]
        if "release_law" in ctx.analysis and mechanism in RR_MECHANISMS:   # a ladder design: its tables
            counts = ladder_counts(key, ctx.truth["ladder"], ctx.analysis["release_law"], ctx.data["n_users"])
            zbar = (classic_rr_mean(counts, sizes) if mechanism == "classic_rr"
                    else debiased_rr_mean(counts, sizes, eps))
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
    return {"linf": linf_error(theta_hat, theta), "l2_rms": err, "mse": err ** 2,
            "kendall": kendall_distance(theta_hat, theta, ties="half"),
            "kendall_strict": kendall_distance(theta_hat, theta, ties="strict"),
            "top_k_hamming": expected_top_k_hamming(theta_hat, true_top_k_mask(theta, top_k), top_k),
            "excess_risk": excess_risk(theta_hat, theta)}


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
    denominator = jnp.sum(centred ** 2)
    slope = jnp.where(denominator > 0, jnp.sum((released["zbar"] - 0.5) * centred) / jnp.where(
        denominator > 0, denominator, 1.0), jnp.nan)
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
            out.update({k: v for k, v in release_metrics(released, ctx.sample["wins"]).items() if k in extra})
        return out

    return Method(fn, METRICS + tuple(extra), solver_diagnostics(lam="float"), label="M-estimator",
                  doc="xu eq. (3): ridge M-estimator on the released z̄ (the debiased M-estimator on "
                      "debiased_rr, the classic-RR MLE on classic_rr), Newton from 0")


def lane_bytes(shape: dict) -> int:
    """Working set of one lane: a few m×m matrices of the solver and (M,) pair vectors."""
    m = shape["n_items"]
    return 8 * (8 * m * m + 16 * m * (m - 1) // 2)


# ---------------------------------------------------------------------------------------
# The experiment factory
# ---------------------------------------------------------------------------------------
def xu_experiment(name: str, title: str, grid: Mapping[str, Sequence], *, truth: Callable, reps: int,
                  figure: FigureSpec | None = None, description: str = "", extra: Sequence[str] = (),
                  validate: Callable[[dict], None] | None = None) -> Experiment:
    """A synthetic xu experiment (module docstring). ``grid`` gives the axis values; the
    defaults are m = 10, K auto, L = 100, ε = 1, debiased RR, λ = G/L. A grid with ``scheme``
    derives ε from (m, L, scheme, L0) instead of an ``eps`` axis. ``truth``: :func:`truth_uniform`
    or :func:`truth_ladder` (then ``gap`` is a data axis)."""
    adaptive = "scheme" in grid
    full: dict = {"n_items": [10], "k": ["auto"], "n_users": [100]}
    if truth is truth_ladder:
        full["gap"] = [0.1]
    if adaptive:
        full.update({"scheme": list(theory.SCHEMES), "l0": [theory.DEFAULT_L0]})
    else:
        full["eps"] = [1.0]
    full.update({"mechanism": ["debiased_rr"], "mode": ["g_over_l"]})
    unknown = set(grid) - set(full)
    if unknown:
        raise ValueError(f"experiment {name!r}: axes {sorted(unknown)} are not xu axes here")
    full.update(grid)
    analysis = tuple(a for a in ("eps", "scheme", "l0", "mechanism", "mode") if a in full)
    derived = []
    if adaptive:
        derived.append(Derived(("eps",), scheme_eps, level="analysis",
                               doc="ε(m, L) of the scheme, = 1 at L = L0 (xu Scenario II)"))
    derived += [Derived(("eps_user",), user_budget, level="analysis",
                        doc="m(m−1)/2·ε, the composed per-user budget (metadata, docs/xu.md, Errata and modes (A20))")]

    def validate_point(point):
        validate_lambda(point)
        if validate is not None:
            validate(point)

    return Experiment(
        name=name, title=title, axes=full, shape_axes=("n_items", "k"), analysis_axes=analysis,
        release_axes=release_axes(analysis), truth=truth, generate=generate, privatise=make_privatise(), methods={"m_est": m_estimator_method(extra)},
        reps=reps, figure=figure, axis_types=AXIS_TYPES, derived=tuple(derived), truth_per_replicate=True,
        resolve_shape=resolve_k, stream_point=keyed_as_before(), stream_names=STREAM_NAMES,
        validate_point=validate_point, lane_bytes=lane_bytes, description=description,
        cell_arrays=LADDER_CELLS if truth is truth_ladder else ())
