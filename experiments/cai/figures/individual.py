"""cai: "Optimal Differentially Private Ranking from Pairwise Comparisons" (Cai, Chakraborty,
Wang), Figures 4–8 (cai §4.2; §4.3; docs/cai.md, Experiments as run): the comparison with
the one-shot baseline under edge DP, the individual-DP simulations and the real data.

**Fig. 4** (``cai-fig4``; docs/cai.md, Experiments as run). The paper's figure has two panels with different x
axes, n at ε = 2 and ε at n = 350; one experiment covers both, on the grid
n ∈ {150, …, 650} × ε ∈ {0.1, 0.5, 1, 2, 5}, and each panel plots its slice. Edge DP, p = 1,
45 replicates; methods ``counts`` (Alg. 2, Laplace(2/ε)), ``mle`` (Alg. 1, λ = 8/ε,
γ = 2√(np log n)), ``one_shot`` (docs/cai.md, Mechanisms and estimators: Rank-Centrality stationary distribution plus
Laplace(λ_os), λ_os = 8s√(k log(n/δ))/ε, s = 2/(d(1 − ρ_erg)), d = np, δ = 1/n²). Data,
θ* and the two cai methods are exactly those of the ``edge`` module (θ* fixed per n, top k
last, centred); the authors redraw θ* per (n, ε) row, here it is shared by all ε of an n
(common random numbers). The grid also holds ε = 0.1 at every n, which the authors ran
and did not plot. As in the paper, each panel has one curve per method.

**Figs. 5–7** (``cai-fig5``/``-fig6``/``-fig7``; cai §4.2). Individual DP: m users
(``n_users``) × L = 5 (``per_user``) pairs uniform with replacement, BTL outcomes, drawn
as counts (:func:`dpsim.models.sample_user_comparisons`); k = n//4; 200 replicates.
θ* (k zeros, then n − k values log U(0.2, 0.7): top k *first*) is **redrawn every
replicate** inside ``generate``, as in the authors' code, and **centred** (docs/cai.md, Errata and modes (E6): the
authors' code leaves it uncentred, which adds a constant offset to the log-relative errors;
the paper says "up to centering"). Alg. 1 with λ = 8L/ε, γ = 2L/ε; ε = ∞ is the
unpenalised MLE (γ = 0, centred) with the disconnected-graph guard of docs/cai.md, Errata and modes (E17) (column
``strongly_connected``; ``gamma`` is the ridge used). Alg. 3 noise has the axis ``mode``: the
figures use ``mode = paper``
(Laplace(L/ε), the published scale, which is only 2ε-DP; docs/cai.md, Errata and modes (E3)); ``strict``
(Laplace(2L/ε), truly ε-DP) is the default of :func:`individual_experiment` and can be set
with ``--set mode=strict``. Newton from 0 to ‖∇‖∞ ≤ 1e-10 replaces cvxpy (same minimiser).

**Fig. 8** (``cai-fig8``; cai §4.3). The CEMS (n = 6, L = 15) and immigration (n = 4,
L = 6) win matrices shipped in ``dpsim/datasets/data`` (sources in its README), chosen by the
string shape axis ``dataset`` (``cems``, ``immigration``); ``n_items`` and ``per_user`` are
derived from it on the host and stored as columns. Per replicate
and ε: θ_DP = Alg. 1 (γ = 2L/ε, λ = 8L/ε), θ_ref = the same objective with w = 0; counts
with Laplace(L/ε) (``mode = paper``) against the raw counts; metric ``mean_rank_diff`` =
(1/n)Σ|rank(DP)_i − rank(ref)_i|. 1000 replicates. Any other win matrix (CSV) can be run
with :func:`real_data_experiment`.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from dpsim import metrics
from dpsim.datasets import cems, immigration
from dpsim.metrics import topk_metrics
from dpsim.estimators import (
    guarded_penalised_mle,
    guarded_perturbed_mle,
    one_shot_statistics,
    top_k_mask,
)
from dpsim.mechanisms import (
    noisy_counts_individual,
    objective_perturbation_individual,
    one_shot_scores,
)
from dpsim.engine import (
    Derived,
    Experiment,
    Tuning,
    FigureSpec,
    Method,
    Panel,
    trend_check,
    UsageError,
    axes,
    solver_diagnostics,
)
from dpsim.models import win_counts
from dpsim.results import first_failure
from .. import methods, model
from ..methods import INDIVIDUAL_METHODS
from ..model import (
    MODE,
    individual_generate,
    individual_lane_bytes,
    individual_resolve_shape,
    individual_truth,
)
from . import edge as cai

INF = math.inf

# ---------------------------------------------------------------------------------------
# Fig. 4: counting, noisy MLE and the one-shot baseline under edge DP (docs/cai.md, Experiments as run)
# ---------------------------------------------------------------------------------------
FIG4_REPS = 45


def one_shot_fn(key, ctx):
    """The one-shot baseline (docs/cai.md, Mechanisms and estimators): Rank-Centrality scores + Laplace(λ_os), top k; also
    reports the data-dependent ergodicity coefficient and the noise scale it implies."""
    k_noise, k_tie = jax.random.split(key)
    k = ctx.shape["k"]
    stats = one_shot_statistics(ctx.sample["W"], ctx.data["p"])
    os = one_shot_scores(
        k_noise, stats.stationary, stats.ergodicity, stats.degree, k, ctx.analysis["eps"]
    )
    return {
        **topk_metrics(top_k_mask(k_tie, os.scores, k), ctx.truth["top_k"]),
        "ergodicity": os.ergodicity,
        "noise_scale": os.noise_scale,
    }


ONE_SHOT = Method(
    one_shot_fn,
    methods.TOPK + ("ergodicity", "noise_scale"),
    label="One shot",
    doc="one-shot Laplace top-k of Qiao, Su & Zhang on Rank-Centrality scores (docs/cai.md, Mechanisms and estimators)",
)
FIG4_METHODS = {**methods.METHODS, "one_shot": ONE_SHOT}


HAMMING_PANELS = (Panel("relative_hamming", None, "Relative Hamming error"),)
FIG4_LABELS = {"counts": "Counting", "mle": "Noisy MLE", "one_shot": "One shot"}


def fig4_experiment(name, title, grid, figure, reps=FIG4_REPS):
    """An edge-DP experiment (:func:`edge.edge_experiment`, p = 1, c0 = 2) with the one-shot method."""
    return cai.edge_experiment(
        name,
        title,
        {"n_items": [350], "eps": [2.0], **grid},
        figure,
        reps=reps,
        methods=FIG4_METHODS,
        description="cai Fig. 4 (docs/cai.md, Experiments as run): counting vs noisy MLE vs one-shot [40], p = 1",
    )


FIG4 = fig4_experiment(
    "cai-fig4",
    "Comparison with the one-shot method: relative Hamming error versus n (ε = 2) and ε (n = 350)",
    {"n_items": [150, 250, 350, 450, 550, 650], "eps": [0.1, 0.5, 1.0, 2.0, 5.0]},
    FigureSpec(
        symbols=model.SYMBOLS,
        value_labels=model.VALUE_LABELS,
        x="n_items",
        curve="method",
        xlabel="$n$",
        curve_label="",
        curve_labels=FIG4_LABELS,
        panels=(
            Panel(
                "relative_hamming", None, "Relative Hamming error", at={"eps": 2.0}, title="vs $n$"
            ),
            Panel(
                "relative_hamming",
                None,
                "Relative Hamming error",
                at={"n_items": 350},
                title="vs $\\epsilon$",
                x="eps",
                xlabel="$\\epsilon$",
                logx=True,
            ),
        ),
        title="cai Fig. 4: counting vs noisy MLE vs one-shot",
    ),
)

# ---------------------------------------------------------------------------------------
# Figs. 5–7: individual DP (cai §4.2)
# ---------------------------------------------------------------------------------------
INDIVIDUAL_REPS = 200
AXIS_TYPES = {**model.AXIS_TYPES, "mode": MODE}


def individual_experiment(
    name,
    title,
    grid,
    figure=None,
    reps=INDIVIDUAL_REPS,
    description="",
    generate=individual_generate,
    methods=None,
):
    """An individual-DP experiment; defaults n = 16, m = 1000, L = 5, ε = 1, mode = strict."""
    full = {
        "n_items": [16],
        "k": ["auto"],
        "link": ["logistic"],
        "mode": ["strict"],
        "n_users": [1000],
        "per_user": [5],
        "eps": [1.0],
    }
    full.update(grid)
    return Experiment(
        name=name,
        title=title,
        axes=full,
        shape_axes=("n_items", "k", "link", "mode"),
        analysis_axes=("eps",),
        truth=individual_truth,
        generate=generate,
        methods=methods or INDIVIDUAL_METHODS,
        reps=reps,
        figure=figure,
        axis_types=AXIS_TYPES,
        resolve_shape=individual_resolve_shape,
        tuning=Tuning(lane_bytes=individual_lane_bytes),
        description=description,
    )


EPS_CURVES = [0.5, 1.0, 2.5, INF]
PAPER_MODE = ["paper"]

FIG5 = individual_experiment(
    "cai-fig5",
    "Individual DP errors versus the number of items n at various privacy levels",
    {"n_items": [12, 16, 20, 24, 28, 32], "n_users": [1000], "eps": EPS_CURVES, "mode": PAPER_MODE},
    FigureSpec(
        symbols=model.SYMBOLS,
        value_labels=model.VALUE_LABELS,
        x="n_items",
        curve="eps",
        xlabel="$n$",
        curve_label="$\\epsilon$",
        panels=cai.PANELS,
        title="cai Fig. 5: individual DP errors vs n",
    ),
    description="cai §4.2, Exp. 5",
)

FIG6 = individual_experiment(
    "cai-fig6",
    "Individual DP errors versus the number of individuals m at various privacy levels",
    {
        "n_items": [16],
        "n_users": [250, 500, 750, 1000, 1500, 2000],
        "eps": EPS_CURVES,
        "mode": PAPER_MODE,
    },
    FigureSpec(
        symbols=model.SYMBOLS,
        value_labels=model.VALUE_LABELS,
        x="n_users",
        curve="eps",
        xlabel="$m$",
        curve_label="$\\epsilon$",
        panels=cai.PANELS,
        title="cai Fig. 6: individual DP errors vs m",
    ),
    description="cai §4.2, Exp. 6",
)

FIG7 = individual_experiment(
    "cai-fig7",
    "Individual DP errors versus the privacy level ε at various levels of m",
    {
        "n_items": [16],
        "n_users": [250, 500, 1000, 2000],
        "eps": [0.25, 1.0, 2.0, 4.0, 8.0, 10.0],
        "mode": PAPER_MODE,
    },
    FigureSpec(
        symbols=model.SYMBOLS,
        value_labels=model.VALUE_LABELS,
        x="eps",
        curve="n_users",
        xlabel="$\\epsilon$",
        curve_label="$m$",
        panels=cai.PANELS,
        title="cai Fig. 7: individual DP errors vs ε",
    ),
    description="cai §4.2, Exp. 7",
)

# ---------------------------------------------------------------------------------------
# Fig. 8: real data (cai §4.3)
# ---------------------------------------------------------------------------------------
REAL_DATA_REPS = 1000
REAL_DATA_EPS = [0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0]


CEMS, IMMIGRATION = cems(), immigration()


def real_data_mle_fn(key, ctx):
    """DP vs non-DP ranks (cai §4.3): Alg. 1 against the same objective with w = 0;
    metric (1/n)Σ|rank(DP)_i − rank(ref)_i|. Converged when both fits converged; the result
    code is the DP fit's, or the reference's when only that one failed; grad_norm the DP fit's."""
    W, per_user = ctx.sample, ctx.shape["per_user"]
    fit = guarded_perturbed_mle(
        W, objective_perturbation_individual(key, ctx.analysis["eps"], per_user, W.shape[0])
    )
    ref = guarded_penalised_mle(W, fit.info["gamma"])
    return {
        "mean_rank_diff": metrics.mean_absolute_rank_difference(fit.theta, ref.theta),
        **fit.solver_diagnostics(),
        "converged": fit.converged & ref.converged,
        "result": first_failure(fit.result, ref.result),
    }


def real_data_counts_fn(key, ctx):
    """Alg. 3 against the raw counts (cai §4.3), same rank-difference metric."""
    W = ctx.sample
    noisy = noisy_counts_individual(
        key, W, ctx.analysis["eps"], ctx.shape["per_user"], ctx.shape["mode"]
    )
    return {"mean_rank_diff": metrics.mean_absolute_rank_difference(noisy, win_counts(W))}


REAL_DATA_METHODS = {
    "mle": Method(
        real_data_mle_fn,
        ("mean_rank_diff",),
        solver_diagnostics(),
        label="Parametric estimation",
        doc="Algorithm 1 vs the same objective without noise: mean rank difference",
    ),
    "counts": Method(
        real_data_counts_fn,
        ("mean_rank_diff",),
        label="Nonparametric ranking",
        doc="Algorithm 3 vs the raw counts: mean rank difference",
    ),
}
RANK_LABELS = {"mle": "Parametric estimation", "counts": "Nonparametric ranking"}


def real_data_experiment(
    name: str,
    title: str,
    datasets,
    *,
    reps: int = REAL_DATA_REPS,
    eps=REAL_DATA_EPS,
    mode=("paper",),
    figure: FigureSpec | None = None,
    description: str = "",
) -> Experiment:
    """Fig. 8's procedure on one or more win matrices (:class:`~dpsim.datasets.WinMatrix`, e.g.
    from :func:`~dpsim.datasets.load_win_matrix`). The string shape axis ``dataset`` selects
    the matrix; ``n_items`` and ``per_user`` are derived from it on the host."""
    datasets = list(datasets)
    by_name = {d.name: d for d in datasets}
    if len(by_name) != len(datasets):
        raise UsageError("datasets of one real-data experiment need distinct names")

    def describe(shape):
        d = by_name[shape["dataset"]]
        return {"n_items": d.n_items, "per_user": d.per_user}

    def truth(key, shape):
        return {"W": jnp.asarray(by_name[shape["dataset"]].W)}

    def generate(key, shape, truth, data):
        return truth["W"]

    figure = figure or FigureSpec(
        symbols=model.SYMBOLS,
        value_labels=model.VALUE_LABELS,
        x="eps",
        curve="method",
        xlabel="$\\epsilon$",
        curve_label="",
        curve_labels=RANK_LABELS,
        panels=tuple(
            Panel(
                "mean_rank_diff",
                None,
                "Mean rank difference",
                where={"dataset": [d.name]},
                title=d.name,
            )
            for d in datasets
        ),
        title=title,
    )
    return Experiment(
        name=name,
        title=title,
        axes={"dataset": list(by_name), "mode": list(mode), "eps": list(eps)},
        shape_axes=("dataset", "mode"),
        analysis_axes=("eps",),
        truth=truth,
        generate=generate,
        methods=REAL_DATA_METHODS,
        reps=reps,
        figure=figure,
        axis_types={**AXIS_TYPES, "dataset": axes.choice(*by_name, doc="win matrix (cai Fig. 8)")},
        derived=(
            Derived(
                ("n_items", "per_user"),
                describe,
                level="shape",
                doc="items and L of the chosen win matrix",
            ),
        ),
        description=description,
    )


FIG8 = real_data_experiment(
    "cai-fig8",
    "Mean rank difference versus ε (CEMS: n = 6, immigration: n = 4)",
    [CEMS, IMMIGRATION],
    figure=FigureSpec(
        symbols=model.SYMBOLS,
        value_labels=model.VALUE_LABELS,
        x="eps",
        curve="method",
        xlabel="$\\epsilon$",
        curve_label="",
        curve_labels=RANK_LABELS,
        panels=(
            Panel(
                "mean_rank_diff",
                None,
                "Mean rank difference",
                where={"dataset": ["cems"]},
                title="CEMS data",
            ),
            Panel(
                "mean_rank_diff",
                None,
                "Mean rank difference",
                where={"dataset": ["immigration"]},
                title="Immigration data",
            ),
        ),
        title="cai Fig. 8: mean rank difference vs ε",
    ),
    description="cai §4.3: the CEMS (n = 6, L = 15) and immigration (n = 4, L = 6) win matrices",
)

EXPERIMENTS = [FIG4, FIG5, FIG6, FIG7, FIG8]

# ---------------------------------------------------------------------------------------
# Trend checks (cai §4.2; docs/cai.md, Predictions (item 7)): the opposite n-monotonicity to edge DP, and
# monotone decrease in m and ε. They are fitted on the figure runs (paper count mode).
# ---------------------------------------------------------------------------------------
CHECKS = [
    trend_check(
        "cai-indiv-linf-increases-in-n",
        FIG5.name,
        "linf",
        "mle",
        "n_items",
        +1,
        where={"eps": [1.0]},
        description="individual DP: ℓ∞ error of Alg. 1 increases in n at m = 1000, ε = 1 "
        "(r_I = √(n log n/m) + n log n/(mε); opposite to edge DP)",
    ),
    trend_check(
        "cai-indiv-linf-increases-in-n-nonprivate",
        FIG5.name,
        "linf",
        "mle",
        "n_items",
        +1,
        where={"eps": [INF]},
        description="individual DP, ε = ∞: unpenalised-MLE ℓ∞ error increases in n",
    ),
    trend_check(
        "cai-indiv-linf-decreases-in-m",
        FIG6.name,
        "linf",
        "mle",
        "n_users",
        -1,
        where={"eps": [1.0]},
        description="individual DP: ℓ∞ error of Alg. 1 decreases in m at n = 16, ε = 1",
    ),
    trend_check(
        "cai-indiv-linf-decreases-in-eps",
        FIG7.name,
        "linf",
        "mle",
        "eps",
        -1,
        where={"n_users": [1000]},
        description="individual DP: ℓ∞ error of Alg. 1 decreases in ε at n = 16, m = 1000",
    ),
]
