"""cai: "Optimal Differentially Private Ranking from Pairwise Comparisons" (Cai, Chakraborty,
Wang), Figures 4–8 (spec ../shared/papers/cai.md §8.2, §8.4, §8.5): the comparison with
the one-shot baseline under edge DP, the individual-DP simulations and the real data.

**Fig. 4** (``cai-fig4``; spec §8.2). The paper's figure has two panels with different x
axes, n at ε = 2 and ε at n = 350; one experiment covers both, on the grid
n ∈ {150, …, 650} × ε ∈ {0.1, 0.5, 1, 2, 5}, and each panel plots its slice. Edge DP, p = 1,
45 replicates; methods ``counts`` (Alg. 2, Laplace(2/ε)), ``mle`` (Alg. 1, λ = 8/ε,
γ = 2√(np log n)), ``one_shot`` (spec §5.6: Rank-Centrality stationary distribution plus
Laplace(λ_os), λ_os = 8s√(k log(n/δ))/ε, s = 2/(d(1 − ρ_erg)), d = np, δ = 1/n²). Data,
θ* and the two cai methods are exactly those of ``experiments.cai`` (θ* fixed per n, top k
last, centred); the authors redraw θ* per (n, ε) row, here it is shared by all ε of an n
(common random numbers). The grid also holds ε = 0.1 at every n, which the authors ran
and did not plot. As in the paper, each panel has one curve per method.

**Figs. 5–7** (``cai-fig5``/``-fig6``/``-fig7``; spec §8.4). Individual DP: m users
(``n_users``) × L = 5 (``per_user``) pairs uniform with replacement, BTL outcomes, drawn
as counts (:func:`dpsim.models.sample_user_comparisons`); k = n//4; 200 replicates.
θ* (k zeros, then n − k values log U(0.2, 0.7): top k *first*) is **redrawn every
replicate** inside ``generate``, as in the authors' code, and **centred** (spec §10.6: the
authors' code leaves it uncentred, which adds a constant offset to the log-relative errors;
the paper says "up to centering"). Alg. 1 with λ = 8L/ε, γ = 2L/ε; ε = ∞ is the
unpenalised MLE (γ = 0, centred) with the disconnected-graph guard of §10.17 (column
``well_posed``). Alg. 3 noise has the axis ``mode``: the figures use ``mode = paper``
(Laplace(L/ε), the published scale, which is only 2ε-DP; spec §10.3); ``strict``
(Laplace(2L/ε), truly ε-DP) is the default of :func:`individual_experiment` and can be set
with ``--set mode=strict``. Newton from 0 to ‖∇‖∞ ≤ 1e-10 replaces cvxpy (same minimiser).

**Fig. 8** (``cai-fig8``; spec §8.5). The CEMS (n = 6, L = 15) and immigration (n = 4,
L = 6) win matrices shipped in ``dpsim/datasets/data`` (sources in its README). The axis vocabulary
has no "dataset" axis, so the bundled dataset is selected by its item count: ``n_items = 6``
is CEMS and ``n_items = 4`` immigration; ``per_user`` is set from the dataset. Per replicate
and ε: θ_DP = Alg. 1 (γ = 2L/ε, λ = 8L/ε), θ_ref = the same objective with w = 0; counts
with Laplace(L/ε) (``mode = paper``) against the raw counts; metric ``mean_rank_diff`` =
(1/n)Σ|rank(DP)_i − rank(ref)_i|. 1000 replicates. Any other win matrix (CSV) can be run
with :func:`real_data_experiment`.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from dpsim import metrics
from dpsim.datasets import WinMatrix, cems, immigration, load_win_matrix
from dpsim.metrics import estimation_metrics, topk_metrics
from dpsim.estimators import (
    SCORE_TIE_TOL,
    guarded_penalised_mle,
    noisy_counts_individual,
    one_shot_scores,
    perturbed_mle_individual,
    top_k_mask,
    win_counts,
)
from dpsim.experiment import Experiment, FigureSpec, Panel, TrendCheck, UsageError
from dpsim.models import get_link, sample_user_comparisons, theta_cai_design, true_top_k_mask
from experiments import cai

INF = math.inf

# ---------------------------------------------------------------------------------------
# Fig. 4: counting, noisy MLE and the one-shot baseline under edge DP (spec §8.2)
# ---------------------------------------------------------------------------------------
FIG4_REPS = 45


def fig4_analyse(key, shape, truth, W, data, analysis):
    """cai's ``mle`` and ``counts`` (experiments.cai.analyse) plus ``one_shot`` (spec §5.6)."""
    out = cai.analyse(jax.random.fold_in(key, 0), shape, truth, W, data, analysis)
    k_noise, k_tie = jax.random.split(jax.random.fold_in(key, 1))
    k = shape["k"]
    os = one_shot_scores(k_noise, W, analysis["eps"], k, data["p"])
    out["one_shot"] = {**topk_metrics(top_k_mask(k_tie, os.scores, k), truth["top_k"]),
                       "converged": jnp.asarray(True), "iterations": jnp.asarray(0),
                       "ergodicity": os.ergodicity, "noise_scale": os.noise_scale}
    return out


HAMMING_PANELS = (Panel("relative_hamming", None, "Relative Hamming error"),)
FIG4_LABELS = {"counts": "Counting", "mle": "Noisy MLE", "one_shot": "One shot"}


def fig4_experiment(name, title, axes, figure, reps=FIG4_REPS):
    """An edge-DP experiment of ``experiments.cai`` (p = 1, c0 = 2) with the one-shot method."""
    return cai.edge_experiment(
        name, title, {"n_items": [350], "eps": [2.0], **axes}, figure, reps=reps, analyse=fig4_analyse,
        description="cai Fig. 4 (spec §8.2): counting vs noisy MLE vs one-shot [40], p = 1")


FIG4 = fig4_experiment(
    "cai-fig4", "Comparison with the one-shot method: relative Hamming error versus n (ε = 2) and ε (n = 350)",
    {"n_items": [150, 250, 350, 450, 550, 650], "eps": [0.1, 0.5, 1.0, 2.0, 5.0]},
    FigureSpec(x="n_items", curve="method", xlabel="$n$", curve_label="", curve_labels=FIG4_LABELS,
               panels=(Panel("relative_hamming", None, "Relative Hamming error", where={"eps": [2.0]},
                             title="vs $n$ ($\\epsilon$ = 2)"),
                       Panel("relative_hamming", None, "Relative Hamming error", where={"n_items": [350]},
                             title="vs $\\epsilon$ ($n$ = 350)", x="eps", xlabel="$\\epsilon$", logx=True)),
               title="cai Fig. 4: counting vs noisy MLE vs one-shot (p = 1)"))

# ---------------------------------------------------------------------------------------
# Figs. 5–7: individual DP (spec §8.4)
# ---------------------------------------------------------------------------------------
INDIVIDUAL_REPS = 200


def individual_top_k_size(n_items: int) -> int:
    """k = n//4, the individual-DP code's top-k size (spec §3.4, §10.5)."""
    return n_items // 4


def check_mode(shape: dict) -> None:
    if shape["mode"] not in ("paper", "strict"):
        raise UsageError(f"mode={shape['mode']!r}: choose 'paper' or 'strict'")


def individual_resolve_shape(shape: dict) -> dict:
    """Fill k = n//4 when 'auto'; check k ∈ [1, n − 1], the link and the count-noise mode."""
    check_mode(shape)
    return cai.resolve_k_and_link(shape, individual_top_k_size)


def individual_truth(key, shape):
    """Nothing fixed per shape point: θ* is redrawn every replicate (spec §8.4)."""
    return {}


def individual_generate(key, shape, truth, data):
    """θ* of spec §3.4 (top k first, centred), redrawn per replicate, and the aggregated W of
    m users × L uniform pairs (cai §3.2), drawn as counts."""
    k_theta, k_data = jax.random.split(key)
    theta = theta_cai_design(k_theta, shape["n_items"], k=shape["k"], top_first=True)
    W = sample_user_comparisons(k_data, theta, data["n_users"], data["per_user"], get_link(shape["link"]))
    return {"W": W, "theta": theta, "top_k": true_top_k_mask(theta, shape["k"])}


def individual_analyse(key, shape, truth, sample, data, analysis):
    """Algorithm 1 under individual DP (``mle``) and Algorithm 3 (``counts``)."""
    k_mle, k_counts, k_tie_mle, k_tie_counts = jax.random.split(key, 4)
    k, W = shape["k"], sample["W"]
    fit = perturbed_mle_individual(k_mle, W, analysis["eps"], data["per_user"])
    mle = {**estimation_metrics(fit.theta_centred, sample["theta"]),
           **topk_metrics(top_k_mask(k_tie_mle, fit.theta, k, tie_tol=SCORE_TIE_TOL),
                               sample["top_k"]),
           "converged": fit.converged, "iterations": fit.iterations,
           "well_posed": fit.info["strongly_connected"]}
    counts = noisy_counts_individual(k_counts, W, analysis["eps"], data["per_user"], shape["mode"])
    count = {**topk_metrics(top_k_mask(k_tie_counts, counts, k), sample["top_k"]),
             "converged": jnp.asarray(True), "iterations": jnp.asarray(0),
             "well_posed": jnp.asarray(True)}
    return {"mle": mle, "counts": count}


def individual_lane_bytes(shape):
    return 8 * shape["n_items"] ** 2 * 8


def individual_experiment(name, title, axes, figure=None, reps=INDIVIDUAL_REPS, description="",
                          generate=individual_generate, analyse=individual_analyse):
    """An individual-DP experiment; defaults n = 16, m = 1000, L = 5, ε = 1, mode = strict."""
    full = {"n_items": [16], "k": ["auto"], "link": ["logistic"], "mode": ["strict"],
            "n_users": [1000], "per_user": [5], "eps": [1.0]}
    full.update(axes)
    return Experiment(
        name=name, title=title, axes=full,
        shape_axes=("n_items", "k", "link", "mode"), analysis_axes=("eps",),
        truth=individual_truth, generate=generate, analyse=analyse,
        reps=reps, figure=figure, resolve_shape=individual_resolve_shape,
        lane_bytes=individual_lane_bytes, description=description)


EPS_CURVES = [0.5, 1.0, 2.5, INF]
PAPER_MODE = ["paper"]

FIG5 = individual_experiment(
    "cai-fig5", "Individual DP errors versus the number of items n at various privacy levels",
    {"n_items": [12, 16, 20, 24, 28, 32], "n_users": [1000], "eps": EPS_CURVES, "mode": PAPER_MODE},
    FigureSpec(x="n_items", curve="eps", xlabel="$n$", curve_label="$\\epsilon$", panels=cai.PANELS,
               title="cai Fig. 5: individual DP errors vs n (m = 1000, L = 5)"),
    description="spec §8.4, Exp. 5")

FIG6 = individual_experiment(
    "cai-fig6", "Individual DP errors versus the number of individuals m at various privacy levels",
    {"n_items": [16], "n_users": [250, 500, 750, 1000, 1500, 2000], "eps": EPS_CURVES, "mode": PAPER_MODE},
    FigureSpec(x="n_users", curve="eps", xlabel="$m$", curve_label="$\\epsilon$", panels=cai.PANELS,
               title="cai Fig. 6: individual DP errors vs m (n = 16, L = 5)"),
    description="spec §8.4, Exp. 6")

FIG7 = individual_experiment(
    "cai-fig7", "Individual DP errors versus the privacy level ε at various levels of m",
    {"n_items": [16], "n_users": [250, 500, 1000, 2000], "eps": [0.25, 1.0, 2.0, 4.0, 8.0, 10.0],
     "mode": PAPER_MODE},
    FigureSpec(x="eps", curve="n_users", xlabel="$\\epsilon$", curve_label="$m$", panels=cai.PANELS,
               title="cai Fig. 7: individual DP errors vs ε (n = 16, L = 5)"),
    description="spec §8.4, Exp. 7")

# ---------------------------------------------------------------------------------------
# Fig. 8: real data (spec §8.5)
# ---------------------------------------------------------------------------------------
REAL_DATA_REPS = 1000
REAL_DATA_EPS = [0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0]


CEMS, IMMIGRATION = cems(), immigration()


def real_data_analyse(key, shape, truth, W, data, analysis):
    """DP vs non-DP ranks (spec §8.5): Alg. 1 against the same objective with w = 0, and
    Alg. 3 against the raw counts; metric (1/n)Σ|rank(DP)_i − rank(ref)_i|."""
    k_mle, k_counts = jax.random.split(key)
    eps, per_user = analysis["eps"], shape["per_user"]
    fit = perturbed_mle_individual(k_mle, W, eps, per_user)
    ref = guarded_penalised_mle(W, fit.info["gamma"])
    mle = {"mean_rank_diff": metrics.mean_absolute_rank_difference(fit.theta, ref.theta),
           "converged": fit.converged & ref.converged, "iterations": fit.iterations}
    noisy = noisy_counts_individual(k_counts, W, eps, per_user, shape["mode"])
    counts = {"mean_rank_diff": metrics.mean_absolute_rank_difference(noisy, win_counts(W)),
              "converged": jnp.asarray(True), "iterations": jnp.asarray(0)}
    return {"mle": mle, "counts": counts}


RANK_LABELS = {"mle": "Parametric estimation", "counts": "Nonparametric ranking"}


def real_data_experiment(name: str, title: str, datasets, *, reps: int = REAL_DATA_REPS,
                         eps=REAL_DATA_EPS, mode=("paper",), figure: FigureSpec | None = None,
                         description: str = "") -> Experiment:
    """Fig. 8's procedure on one or more win matrices (:class:`WinMatrix`, e.g. from
    :func:`load_win_matrix`). The shape axis ``n_items`` selects the dataset (their item
    counts must differ); ``per_user`` comes from the dataset."""
    datasets = list(datasets)
    by_n = {d.n_items: d for d in datasets}
    if len(by_n) != len(datasets):
        raise UsageError("datasets of one real-data experiment need distinct item counts")

    def resolve(shape):
        n = shape["n_items"]
        if n not in by_n:
            raise UsageError(f"n_items={n}: no dataset with {n} items in {name!r} "
                             f"(have {', '.join(f'{d.name} (n = {d.n_items})' for d in datasets)})")
        check_mode(shape)
        return {**shape, "per_user": by_n[n].per_user}

    def truth(key, shape):
        return {"W": jnp.asarray(by_n[shape["n_items"]].W)}

    def generate(key, shape, truth, data):
        return truth["W"]

    figure = figure or FigureSpec(
        x="eps", curve="method", xlabel="$\\epsilon$", curve_label="", curve_labels=RANK_LABELS,
        panels=tuple(Panel("mean_rank_diff", None, "Mean rank difference", where={"n_items": [d.n_items]},
                           title=d.name) for d in datasets), title=title)
    return Experiment(
        name=name, title=title, axes={"n_items": list(by_n), "mode": list(mode), "eps": list(eps)},
        shape_axes=("n_items", "mode"), analysis_axes=("eps",), truth=truth, generate=generate,
        analyse=real_data_analyse, reps=reps, figure=figure, resolve_shape=resolve,
        description=description)


FIG8 = real_data_experiment(
    "cai-fig8", "Mean rank difference versus ε (CEMS: n = 6, immigration: n = 4)",
    [CEMS, IMMIGRATION],
    figure=FigureSpec(x="eps", curve="method", xlabel="$\\epsilon$", curve_label="", curve_labels=RANK_LABELS,
                      panels=(Panel("mean_rank_diff", None, "Mean rank difference", where={"n_items": [6]},
                                    title="CEMS data"),
                              Panel("mean_rank_diff", None, "Mean rank difference", where={"n_items": [4]},
                                    title="Immigration data")),
                      title="cai Fig. 8: mean rank difference vs ε"),
    description="spec §8.5; the dataset is selected by n_items (6: CEMS, 4: immigration)")

EXPERIMENTS = [FIG4, FIG5, FIG6, FIG7, FIG8]

# ---------------------------------------------------------------------------------------
# Trend checks (spec §7 item 7, §8.4): the opposite n-monotonicity to edge DP, and
# monotone decrease in m and ε. They are fitted on the figure runs (paper count mode).
# ---------------------------------------------------------------------------------------
CHECKS = [
    TrendCheck("indiv-linf-increases-in-n", FIG5.name, "linf", "mle", "n_items", +1,
               where={"eps": [1.0]},
               description="individual DP: ℓ∞ error of Alg. 1 increases in n at m = 1000, ε = 1 "
                           "(r_I = √(n log n/m) + n log n/(mε); opposite to edge DP)"),
    TrendCheck("indiv-linf-increases-in-n-nonprivate", FIG5.name, "linf", "mle", "n_items", +1,
               where={"eps": [INF]},
               description="individual DP, ε = ∞: unpenalised-MLE ℓ∞ error increases in n"),
    TrendCheck("indiv-linf-decreases-in-m", FIG6.name, "linf", "mle", "n_users", -1,
               where={"eps": [1.0]},
               description="individual DP: ℓ∞ error of Alg. 1 decreases in m at n = 16, ε = 1"),
    TrendCheck("indiv-linf-decreases-in-eps", FIG7.name, "linf", "mle", "eps", -1,
               where={"n_users": [1000]},
               description="individual DP: ℓ∞ error of Alg. 1 decreases in ε at n = 16, m = 1000"),
]
