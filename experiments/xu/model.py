"""xu's model (xu §2–§5; docs/xu.md, Model; Experiments as run): the axes every experiment shares,
the θ* designs, the raw data and their tables, and the labels the figures share. The release, the
estimator and its scores are :mod:`.methods`.

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

**Keys**. The release is keyed by the privacy level, not the mechanism (:mod:`.methods`,
"Release"): each experiment declares the analysis axes that key its release (:func:`release_axes`:
every analysis axis but ``mechanism`` and ``mode``), and the engine passes the release stage that
key (:mod:`dpsim.engine.execution.program`, "Keys").

**Budget** (xu §3.2, eq. (1), Lemma 2; docs/xu.md, Errata and modes (A20)). ε is per comparison, as in the paper; a user's whole vector of
m(m−1)/2 answers is (m(m−1)/2)·ε-LDP by composition, stored as the metadata column
``eps_user`` (homogeneous ε only).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from dpsim.engine import CellArrays, UsageError
from dpsim.engine.definition import axes
from dpsim.estimators.debiased_m import LAMBDA_RULES
from dpsim.mechanisms.pairwise_ldp import MECHANISMS
from dpsim.models.complete_btl import (
    ladder_count_tables,
    sample_ladder_pair_counts,
    sample_pair_wins,
    theta_evenly_spaced_permuted,
    theta_uniform_centred,
)
from dpsim.theory import xu as theory

INF = math.inf

# ---------------------------------------------------------------------------------------
# Axes of the xu package (the shared vocabulary: n_items = m, n_users = L, eps, gap = Δ, k = K)
# ---------------------------------------------------------------------------------------
MECHANISM = axes.choice(
    *MECHANISMS,
    doc="what each user releases per comparison: debiased_rr (eq. (1)), "
    "classic_rr, laplace (y + Laplace(1/ε)) or none (xu §3, xu §3.1–3.2)",
)
MODE = axes.choice(
    *LAMBDA_RULES,
    doc="the ridge λ's reading: g_over_l = G(ε)/L (default) or paper = the "
    "literal (e^ε+1)²/((e^ε−1)L) (docs/xu.md, Mechanisms and estimators; Errata and modes (A4))",
)
SCHEME = axes.choice(
    *theory.SCHEMES,
    doc="adaptive ε(m, L) ∝ log(mL)/√(mL), 1/√(mL) or 1/(√(mL)·log(mL)), "
    "= 1 at L = L0 (xu §5.1 Scenario II; docs/xu.md, Errata and modes (A8))",
)
L0 = axes.integer(
    1,
    "L0: the L at which every adaptive scheme gives ε = 1 (xu §5.1; docs/xu.md, Errata and modes (A9))",
)
AXIS_TYPES = {"mechanism": MECHANISM, "mode": MODE, "scheme": SCHEME, "l0": L0}

# the analysis axes that do NOT key the release (common random numbers across them)
NOT_RELEASE_AXES = ("mechanism", "mode")
# renamed axes keyed under their former names (Experiment.stream_names): the rename of
# lambda_rule to mode (the one word for a paper-versus-correct reading) changes no number
STREAM_NAMES = {"mode": "lambda_rule"}

SYMBOLS = {
    "n_items": "$m$",
    "n_users": "$L$",
    "eps": "$\\epsilon$",
    "gap": "$\\Delta$",
    "k": "$K$",
    "l0": "$L_0$",
    "scheme": "scheme",
    "mechanism": "mechanism",
    "mode": "$\\lambda$ rule",
    "ratings_file": "ratings",
    "profile": "profile",
    "match": "profile match",
}
# what the figures write for the named values of the axes (FigureSpec.value_labels): the
# schemes by formula (their names in the paper's text are swapped, A8), natural logs as in
# dpsim.theory.xu.scheme_shape
VALUE_LABELS = {
    "scheme": {
        "eps_log_over_sqrt": "$\\epsilon \\propto \\ln(mL)/\\sqrt{mL}$",
        "eps_inv_sqrt": "$\\epsilon \\propto 1/\\sqrt{mL}$",
        "eps_inv_sqrt_log": "$\\epsilon \\propto 1/(\\sqrt{mL}\\,\\ln(mL))$",
    },
    "mechanism": {
        "classic_rr": "classic RR",
        "debiased_rr": "debiased RR",
        "laplace": "Laplace",
        "none": "no privacy",
    },
    "mode": {
        "g_over_l": "$\\lambda = G(\\epsilon)/L$",
        "paper": "$\\lambda = (e^\\epsilon+1)^2/((e^\\epsilon-1)L)$ (literal)",
    },
    "match": {
        "profile": "the profile",
        "same_g": "homogeneous $\\epsilon$, same $G(\\epsilon)$",
        "same_mean_eps": "homogeneous $\\epsilon$, same mean $\\epsilon$",
    },
    "profile": {
        "half_tenth": "½ of users at $\\epsilon$, ½ at $\\epsilon/10$",
        "thirds": "⅓ each at $\\epsilon/4$, $\\epsilon$, $4\\epsilon$",
        "strict_minority": "90% at $\\epsilon$, 10% at $\\epsilon/10$",
    },
    "ratings_file": {"stand-in": "MovieLens: synthetic stand-in"},
}
# the paper's symbols for the metrics (docs/xu.md, Metrics, figure axes)
YLABEL = {
    "linf": "$\\|\\hat\\theta-\\theta^*\\|_\\infty$",
    "l2_rms": "$m^{-1/2}\\|\\hat\\theta-\\theta^*\\|_2$",
    "kendall": "$K(\\hat\\theta,\\theta^*)$",
    "top_k_hamming": "$H_K(\\hat\\theta,\\theta^*)$",
    "mse": "$m^{-1}\\|\\hat\\theta-\\theta^*\\|_2^2$",
    "oracle_mse": "sandwich $m^{-1}E\\|\\hat\\theta-\\theta^*\\|_2^2$",
    "floor_mse": "classic-RR floor $m^{-1}\\|\\tilde\\theta-\\theta^*\\|_2^2$",
}


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
        raise UsageError(
            f"k={k} gives K = {top_k}, which must lie in [1, n_items − 1] = [1, {m - 1}] "
            f"for n_items={m}"
        )
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
    return {
        "eps": float(
            theory.adaptive_eps(point["n_items"], point["n_users"], point["scheme"], point["l0"])
        )
    }


def user_budget(point: dict) -> dict:
    """``eps_user`` = m(m−1)/2·ε, the composed per-user LDP budget (metadata; xu §3.2, eq. (1), Lemma 2; docs/xu.md, Errata and modes (A20))."""
    m = point["n_items"]
    return {"eps_user": m * (m - 1) / 2 * point["eps"]}


def release_axes(analysis_axes: Sequence[str]) -> tuple[str, ...]:
    """The axes that key the release (``Experiment.release_axes``): every analysis axis but
    ``mechanism`` and ``mode`` (module docstring, "Keys"; :mod:`.methods`, "Release")."""
    return tuple(a for a in analysis_axes if a not in NOT_RELEASE_AXES)


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
    CellArrays(
        "win_law",
        ("n_items", "n_users", "gap"),
        ladder_win_laws,
        doc="alias tables of the raw wins' laws Bin(L, σ(Δk)), k = 1 … m − 1 (Scenarios III, IV)",
    ),
    CellArrays(
        "release_law",
        ("n_items", "n_users", "gap", "eps"),
        ladder_release_laws,
        doc="alias tables of the RR count's laws Bin(L, ½ + (σ(Δk) − ½)tanh(ε/2)) (Scenarios III, IV)",
    ),
)


def ladder_counts(key, ladder, cell, n_users):
    """(1, M) counts per pair of a ladder design drawn through the tables of one cell (a
    :class:`~dpsim.engine.Cell` of :data:`LADDER_CELLS`): one 64-bit word per pair."""
    threshold, alias = cell.tables["threshold"], cell.tables["alias"]
    laws = threshold.shape[1]
    rows = (-1, threshold.shape[-1])
    counts = sample_ladder_pair_counts(
        key, ladder, threshold.reshape(rows), alias.reshape(rows), n_users, cell.index * laws
    )
    return counts[None, :]


def generate(key, shape, truth, data):
    """One replicate's raw wins n1_e ~ Bin(L, p*_e) over the m(m−1)/2 pairs (xu §2; docs/xu.md, Mechanisms and estimators)
    and θ*: through the cell's tables for a ladder design (``win_law``), else by
    ``jax.random.binomial``. Returns {"theta": (m,), "wins": (1, M)}."""
    theta = theta_of(truth, data)
    if "win_law" in data:
        return {
            "theta": theta,
            "wins": ladder_counts(key, truth["ladder"], data["win_law"], data["n_users"]),
        }
    return {"theta": theta, "wins": sample_pair_wins(key, theta, data["n_users"])}


def lane_bytes(shape: dict) -> int:
    """Working set of one lane: a few m×m matrices of the solver and (M,) pair vectors."""
    m = shape["n_items"]
    return 8 * (8 * m * m + 16 * m * (m - 1) // 2)
