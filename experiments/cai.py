"""cai: "Optimal Differentially Private Ranking from Pairwise Comparisons" (Cai, Chakraborty,
Wang), edge-DP part: Figures 1–3 and the edge-DP rate checks (spec ../shared/papers/cai.md).

Settings follow the authors' code (spec §8.1): BTL, k = round(n/4), θ* of §3.4 drawn once
per n and held fixed across replicates, p and ε; 120 replicates; Algorithm 1 with
λ = 8/ε and γ = max(1/ε, c0√(np log n)), c0 = 2; Algorithm 2 with Laplace(2/ε); ε = ∞ is
the non-private curve (λ = 0, the same γ; no count noise).

Differences from the authors' code, each the correct mechanism or a documented choice:
- a fresh Laplace vector w per replicate and per ε (the R code reuses one w, spec §10.7);
- Newton to ‖∇‖∞ ≤ 1e-10 from θ = 0, not BFGS started at θ* (§10.8);
- errors of the *centred* θ̃ (centring is privacy-free post-processing, §5.0); the R code
  scores the uncentred θ̃;
- ties in top-k broken at random (§10.10), which removes the paper's ε = ∞ counting artefact.
The ``link`` axis changes only the data-generating link (probit data: no DP issue, since
the estimator's likelihood, and so its calibration, stays logistic).
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from dpsim import metrics
from dpsim.estimators import noisy_counts_edge, perturbed_mle_edge, top_k_mask
from dpsim.experiment import Experiment, FigureSpec, Panel, SlopeCheck, TrendCheck, UsageError
from dpsim.models import get_link, sample_er_comparisons, theta_cai_design, top_k_size, true_top_k_mask

INF = math.inf
PAPER_REPS = 120


def resolve_shape(shape: dict) -> dict:
    """Fill k = round(n/4) (cai §3.4) when k is 'auto'; check k ∈ [1, n − 1]."""
    n = shape["n_items"]
    k = top_k_size(n) if shape.get("k", "auto") == "auto" else shape["k"]
    if not 1 <= k <= n - 1:
        raise UsageError(f"k={k} must lie in [1, n_items − 1] = [1, {n - 1}] for n_items={n}")
    get_link(shape["link"])
    return {**shape, "k": k}


def truth(key, shape):
    """θ* of cai §3.4 (top k items last, centred) and its top-k mask; fixed per shape point."""
    theta = theta_cai_design(key, shape["n_items"], k=shape["k"])
    return {"theta": theta, "top_k": true_top_k_mask(theta, shape["k"])}


def generate(key, shape, truth, data):
    """One comparison per edge of G(n, p), outcomes from the chosen link (cai §3.1)."""
    return sample_er_comparisons(key, truth["theta"], data["p"], get_link(shape["link"]))


def _estimation_metrics(theta_hat, theta):
    return {"l2": metrics.l2_error(theta_hat, theta), "linf": metrics.linf_error(theta_hat, theta),
            "log_rel_l2": metrics.log_relative_l2_error(theta_hat, theta),
            "log_rel_linf": metrics.log_relative_linf_error(theta_hat, theta)}


def _topk_metrics(mask, truth_mask):
    return {"relative_hamming": metrics.relative_hamming_error(mask, truth_mask),
            "exact_recovery": metrics.exact_recovery(mask, truth_mask)}


def analyse(key, shape, truth, W, data, analysis):
    """Algorithm 1 (perturbed MLE, method ``mle``) and Algorithm 2 (noisy counts, ``counts``)."""
    k_mle, k_counts, k_tie_mle, k_tie_counts = jax.random.split(key, 4)
    k = shape["k"]
    fit = perturbed_mle_edge(k_mle, W, analysis["eps"], data["p"], c0=analysis["c0"])
    mle = {**_estimation_metrics(fit.theta_centred, truth["theta"]),
           **_topk_metrics(top_k_mask(k_tie_mle, fit.theta, k), truth["top_k"]),
           "converged": fit.converged, "iterations": fit.iterations}
    counts = noisy_counts_edge(k_counts, W, analysis["eps"])
    count = {**_topk_metrics(top_k_mask(k_tie_counts, counts, k), truth["top_k"]),
             "converged": jnp.asarray(True), "iterations": jnp.asarray(0)}
    return {"mle": mle, "counts": count}


def lane_bytes(shape):
    return 8 * shape["n_items"] ** 2


PANELS = (
    Panel("log_rel_l2", "mle", "Log rel. $\\ell_2$ err."),
    Panel("log_rel_linf", "mle", "Log rel. $\\ell_\\infty$ err."),
    Panel("relative_hamming", "mle", "Rel. Hamming err. via estimation"),
    Panel("relative_hamming", "counts", "Rel. Hamming err. via counting"),
)


def edge_experiment(name, title, axes, figure=None, reps=PAPER_REPS, description=""):
    full = {"n_items": [300], "k": ["auto"], "link": ["logistic"], "p": [1.0], "eps": [1.0], "c0": [2.0]}
    full.update(axes)
    return Experiment(
        name=name, title=title, axes=full,
        shape_axes=("n_items", "k", "link"), analysis_axes=("eps", "c0"),
        truth=truth, generate=generate, analyse=analyse, reps=reps, figure=figure,
        resolve_shape=resolve_shape, lane_bytes=lane_bytes, description=description)


EPS_CURVES = [0.5, 1.0, 2.5, INF]

FIG1 = edge_experiment(
    "cai-fig1", "Edge DP estimation errors versus the number of items n at various privacy levels",
    {"n_items": list(range(100, 701, 75)), "p": [1.0], "eps": EPS_CURVES},
    FigureSpec(x="n_items", curve="eps", xlabel="$n$", curve_label="$\\epsilon$", panels=PANELS,
               title="cai Fig. 1: edge DP errors vs n (p = 1)"))

FIG2 = edge_experiment(
    "cai-fig2", "Edge DP estimation errors versus the edge probability p at various privacy levels",
    {"n_items": [300], "p": [round(0.1 + 0.075 * i, 3) for i in range(13)], "eps": EPS_CURVES},
    FigureSpec(x="p", curve="eps", xlabel="$p$", curve_label="$\\epsilon$", panels=PANELS,
               where={"p": [0.1, 0.25, 0.4, 0.625, 0.85, 1.0]},
               title="cai Fig. 2: edge DP errors vs p (n = 300)"))

FIG3 = edge_experiment(
    "cai-fig3", "Edge DP errors versus the privacy parameter ε at various edge probability values",
    {"n_items": [300], "p": [0.25, 0.5, 0.75, 1.0],
     "eps": [1 / 5, 1 / 4, 1 / 3, 1 / 2, 1.0, 3 / 2, 2.0, 5 / 2, 5.0, INF]},
    FigureSpec(x="eps", curve="p", xlabel="$\\epsilon$", curve_label="$p$", panels=PANELS,
               where={"eps": [0.2, 0.5, 1.0, 2.0, 2.5, 5.0]},
               title="cai Fig. 3: edge DP errors vs ε (n = 300)"))

EXPERIMENTS = [FIG1, FIG2, FIG3]
CHECKS = []
