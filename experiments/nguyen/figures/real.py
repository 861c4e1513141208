"""nguyen's real-data experiments: Figure 2 (education data), Figure 3 (MovieLens) and
supplementary Figure 1 (the sparse chain's p₀) (nguyen §5.2, supp. §4;
nguyen §5; docs/nguyen.md, Experiments as run; Errata and modes (A13)).

**Data.** The response matrices are fixed (p = 1), so a trial redraws only the privacy
noise: the non-private spectral estimate on the same data is the reference β and the
metric is ‖β̃ − β‖₂ (the paper's; ``linf`` beside it). Data sets are chosen on the host
(shape-level, before anything is run or written; which file or stand-in was used is
printed and recorded in the run's manifest):

- ``lsat``: LSAT section 6, 1000 × 5, rebuilt from its 32 pattern counts (docs/nguyen.md, Experiments as run;
  A13 flags that the authors' file may be section 7);
- ``uci_student``: the UCI Student Academic Performance ``.arff`` (131 × 4; nguyen Fig. 2, §5.2),
  from ``--set uci_file=PATH``, else a Rasch stand-in of the same shape;
- ``three_grades``: ``student-por.csv`` (649 × 3, G1–G3 above the item median), from
  ``--set grades_file=PATH``, else a Rasch stand-in;
- MovieLens (Fig. 3, SF1): ml-latest-small's ``ratings.csv`` (610 users) from
  ``--set ratings_file=PATH``, else the deterministic 610 × 400 stand-in of
  :func:`dpsim.datasets.synthetic_ratings`; rank-30 NMF, binarised per user at the user's
  mean, m movies drawn with NumPy seed 119 (nguyen Fig. 3, §5.2).

A missing, unreadable or wrongly laid out file stops the run with a one-line error naming
it, before anything is written.

**Grids** (the authors' ``real_privacy_experiments.py``): the eleven ε* ∈ {0.01, …, 5},
δ = 1e-4, 100 trials, both modes (:mod:`..methods`; ``paper`` uses the real-data script's
√#pairs accounting and p₀ = 2·log₂(m)/m). Fig. 3's "small m" and "large m" are not stated
(A14): m ∈ {25, 200}, the ends of the authors' m grid {25, 50, 75, 100, 125, 150, 200}
(``--set n_items=25,50,75,100,125,150,200`` runs it all). SF1's data set is not stated:
MovieLens at m = 200 (the large-m panel of Fig. 3, where sparsification is recommended),
p₀ ∈ {proposed = 2·log₂(m)/m, 0.2, 0.3, 0.4, 0.5}.

**Claims** (nguyen §5) are paired comparisons on the same noise replicates, in
``paper`` mode, except those on the sparse chain at m = 200: there the authors' lazy power
iteration (tolerance 1e-5, at most 1000 steps) stops unconverged in 18–45% of the fits at
every ε* (measured: median 260–780 iterations with p₀ = 2·log₂(m)/m ≈ 0.076, the graph
connected), so the published sparse curves are truncated iterations; those claims (Fig. 3(b),
both of SF1's) are judged in ``strict`` mode (exact stationary distribution).
"""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np

from dpsim.datasets import lsat, movielens_responses, three_grades, uci_student
from dpsim.errors import UsageError
from dpsim.estimators.spectral import differential_counts
from dpsim.engine import (
    Derived,
    Experiment,
    Tuning,
    FigureSpec,
    Panel,
    axes,
    comparison_check,
    method_ratio_check,
    ratio_check,
)

from ..methods import REAL, ReferenceScore, make_methods, nonprivate_fits, privacy_derived
from ..model import (
    AXIS_TYPES,
    DELTA,
    EPS_REAL,
    LABELS,
    MODES,
    PROPOSED,
    PROSE,
    SYMBOLS,
    VALUE_LABELS,
    file_axis,
    lane_bytes,
)

STAND_IN = "stand-in"
EDUCATION = ("lsat", "uci_student", "three_grades")
DATASET_TITLES = {
    "lsat": "LSAT",
    "uci_student": "UCI student performance",
    "three_grades": "Three Grades",
    "movielens": "MovieLens",
}
REAL_REPS = 100


@lru_cache(maxsize=None)
def load(dataset: str, path: str = STAND_IN, n_items: int | None = None):
    """The :class:`dpsim.datasets.ResponseData` of ``dataset`` (cached per process).

    Args:
        dataset: ``lsat``, ``uci_student``, ``three_grades`` or ``movielens``.
        path: the data file, or ``stand-in`` (LSAT is shipped and takes no file).
        n_items: MovieLens only: the number of movies m.
    Raises:
        UsageError naming a missing, unreadable or malformed file.
    """
    file = None if path == STAND_IN else path
    if dataset == "lsat":
        return lsat()
    if dataset == "uci_student":
        return uci_student(file)
    if dataset == "three_grades":
        return three_grades(file)
    if dataset == "movielens":
        return movielens_responses(int(n_items), file)
    raise UsageError(f"dataset={dataset!r}: choose one of {', '.join((*EDUCATION, 'movielens'))}")


def _describe(data) -> dict:
    return {"n_items": int(data.n_items), "n_users": int(data.n_users), "source": data.source}


def _describe_prepared(dataset: str, path: str, n_items: int | None = None) -> dict:
    """Shape-level derived values of a data set; prepares (caches) its counts and reference
    fit on the host, before anything is traced."""
    _prepared(dataset, path, n_items)
    return _describe(load(dataset, path, n_items))


@lru_cache(maxsize=None)
def _prepared(dataset: str, path: str, n_items: int | None) -> dict:
    """The fixed responses and everything the methods share, computed once on the host:
    ``x``, ``observed``, the counts ``Y`` and the non-private fits by both solvers (the
    reference β). NumPy arrays (traced programs take them as constants)."""
    data = load(dataset, path, n_items)
    with jax.ensure_compile_time_eval():  # eager even when first called while tracing
        x, observed = jnp.asarray(data.x), jnp.asarray(data.observed)
        Y = differential_counts(x, observed)
        out = {"x": x, "observed": observed, "Y": Y, "nonprivate": nonprivate_fits(Y)}
        return jax.tree_util.tree_map(np.asarray, out)


def fixed_truth(dataset: str, path: str = STAND_IN, n_items: int | None = None) -> dict:
    """:func:`_prepared` as JAX arrays (the θ*-design of a real-data shape point)."""
    return jax.tree_util.tree_map(jnp.asarray, _prepared(dataset, path, n_items))


def _generate(key, shape, truth, data):
    return truth  # the data are fixed; each trial redraws the privacy noise only


PANEL_Y = "$\\|\\tilde\\beta-\\hat\\beta\\|_2$"


# ---------------------------------------------------------------------------------------
# Figure 2: education data
# ---------------------------------------------------------------------------------------
def _education_file(shape) -> str:
    return {"uci_student": shape["uci_file"], "three_grades": shape["grades_file"]}.get(
        shape["dataset"], STAND_IN
    )


FIG2 = Experiment(
    name="nguyen-fig2",
    title="Education data: ℓ2 distance to the non-private estimate vs ε* (nguyen Fig. 2)",
    axes={
        "dataset": list(EDUCATION),
        "uci_file": [STAND_IN],
        "grades_file": [STAND_IN],
        "eps": EPS_REAL,
        "delta": [DELTA],
        "mode": list(MODES),
        "accounting": ["auto"],
        "conversion": ["auto"],
    },
    shape_axes=("dataset", "uci_file", "grades_file"),
    analysis_axes=("eps", "delta", "mode", "accounting", "conversion"),
    truth=lambda key, shape: fixed_truth(shape["dataset"], _education_file(shape)),
    generate=_generate,
    methods=make_methods(
        ("gaussian", "laplace", "rr"),
        REAL,
        ReferenceScore(),
        lambda ctx: ctx.sample["nonprivate"],
        calibration=True,
    ),
    reps=REAL_REPS,
    axis_types={
        **AXIS_TYPES,
        "dataset": axes.choice(*EDUCATION, doc="education data set (nguyen §5.2)"),
        "uci_file": file_axis("the UCI Student Academic Performance .arff"),
        "grades_file": file_axis("the Three Grades student-por.csv"),
    },
    derived=(
        Derived(
            ("n_items", "n_users", "source"),
            lambda shape: _describe_prepared(shape["dataset"], _education_file(shape)),
            level="shape",
            doc="the data set's shape and where it came from",
        ),
        privacy_derived(REAL),
    ),
    tuning=Tuning(lane_bytes=lambda shape: lane_bytes(shape["n_users"], shape["n_items"])),
    figure=FigureSpec(
        x="eps",
        curve="method",
        xlabel="$\\epsilon^*$",
        curve_label="method",
        logx=True,
        panels=(Panel("l2", None, PANEL_Y, each=("dataset",)),),
        columns=2,
        curve_labels=LABELS,
        symbols=SYMBOLS,
        value_labels=VALUE_LABELS,
        title="nguyen Fig. 2: education data sets",
        shown_with={
            "uci_file": ("dataset", "uci_student"),
            "grades_file": ("dataset", "three_grades"),
        },
    ),
    description="nguyen §5.2, Fig. 2; docs/nguyen.md, Experiments as run (LSAT rebuilt; stand-ins)",
)


# ---------------------------------------------------------------------------------------
# Figure 3 and SF1: MovieLens
# ---------------------------------------------------------------------------------------
def movielens_experiment(
    name, title, grid, methods, figure, description, reps=REAL_REPS, calibration=False
) -> Experiment:
    """A MovieLens experiment (defaults: m ∈ {25, 200}, the stand-in ratings, both modes;
    ``calibration``: the methods also report their calibration metrics, :func:`..methods.make_methods`)."""
    base = {
        "n_items": [25, 200],
        "ratings_file": [STAND_IN],
        "eps": EPS_REAL,
        "delta": [DELTA],
        "mode": list(MODES),
        "accounting": ["auto"],
        "conversion": ["auto"],
        "p0": [PROPOSED],
    }
    return Experiment(
        name=name,
        title=title,
        axes={**base, **grid},
        shape_axes=("n_items", "ratings_file"),
        analysis_axes=("eps", "delta", "mode", "accounting", "conversion", "p0"),
        truth=lambda key, shape: fixed_truth(
            "movielens", shape["ratings_file"], int(shape["n_items"])
        ),
        generate=_generate,
        methods=make_methods(
            methods,
            REAL,
            ReferenceScore(),
            lambda ctx: ctx.sample["nonprivate"],
            calibration=calibration,
        ),
        reps=reps,
        axis_types={**AXIS_TYPES, "ratings_file": file_axis("ml-latest-small's ratings.csv")},
        derived=(
            Derived(
                ("n_users", "source"),
                lambda shape: {
                    k: v
                    for k, v in _describe_prepared(
                        "movielens", shape["ratings_file"], int(shape["n_items"])
                    ).items()
                    if k != "n_items"
                },
                level="shape",
                doc="the users and where the ratings came from",
            ),
            privacy_derived(REAL),
        ),
        tuning=Tuning(lane_bytes=lambda shape: lane_bytes(shape["n_users"], shape["n_items"])),
        figure=figure,
        description=description,
    )


FIG3 = movielens_experiment(
    "nguyen-fig3",
    "MovieLens: ℓ2 distance to the non-private estimate vs ε*, small and large m (nguyen Fig. 3)",
    {},
    ("gaussian", "gaussian_sparse", "laplace", "rr"),
    FigureSpec(
        x="eps",
        curve="method",
        xlabel="$\\epsilon^*$",
        curve_label="method",
        logx=True,
        # one panel per (mode, m) run: the paper's two panels (small and large m) in
        # the first row, the same study in strict mode below it
        panels=(Panel("l2", None, PANEL_Y, each=("mode", "n_items")),),
        columns=2,
        curve_labels=LABELS,
        symbols=SYMBOLS,
        value_labels=VALUE_LABELS,
        title="nguyen Fig. 3: MovieLens",
    ),
    "nguyen §5.2, Fig. 3 (pipeline, stand-in; docs/nguyen.md, Errata and modes (A13, A14))",
    calibration=True,
)

P0_VALUES = [PROPOSED, "0.2", "0.3", "0.4", "0.5"]
P0 = movielens_experiment(
    "nguyen-p0",
    "Sparse discrete Gaussian chain: effect of the edge probability p₀ (nguyen supp. Fig. 1)",
    {"n_items": [200], "p0": P0_VALUES},
    ("gaussian_sparse",),
    FigureSpec(
        x="eps",
        curve="p0",
        xlabel="$\\epsilon^*$",
        curve_label="$p_0$",
        logx=True,
        panels=tuple(
            Panel(metric, "gaussian_sparse", label, title=f"{norm} distance", each=("mode",))
            for metric, norm, label in (
                ("l2", "ℓ2", PANEL_Y),
                ("linf", "ℓ∞", "$\\|\\tilde\\beta-\\hat\\beta\\|_\\infty$"),
            )
        ),
        symbols=SYMBOLS,
        value_labels=VALUE_LABELS,
        title="nguyen supp. Fig. 1: the sparse chain's edge probability $p_0$",
    ),
    "nguyen supp. §4, Fig. 1",
)

EXPERIMENTS = [FIG2, FIG3, P0]


# ---------------------------------------------------------------------------------------
# Claims (nguyen §5)
# ---------------------------------------------------------------------------------------
def _edu(dataset, eps, mode="paper"):
    return {"dataset": [dataset], "eps": [eps], "mode": [mode]}


# The paper-mode claims judge the authors' truncated power iterations (lazy chain, tolerance 1e-5,
# at most 1000 steps; jump chain 1e-6, 10 000 for RR): at ε* = 0.01 they stop unconverged in
# 1.5–2.5% of the fits at some seeds (measured at seed 1), which is the
# published curve's own truncation, so these checks judge with up to 5% unconverged fits.
PAPER_ITERATION_LIMIT = 0.05
_TRUNCATED = (
    "; judged with up to 5% unconverged fits (the authors' truncated power iteration, paper mode)"
)


FIG2_CHECKS = [
    *[
        comparison_check(
            f"nguyen-fig2-rr-beats-{other}-at-eps0.01-{d}",
            FIG2.name,
            "l2",
            "rr",
            other,
            where=_edu(d, 0.01),
            unconverged_limit=PAPER_ITERATION_LIMIT,
            description=f"Fig. 2, {DATASET_TITLES[d]}: at ε* = 0.01 randomized response is more "
            f"accurate than {PROSE[other]} (paired){_TRUNCATED}",
        )
        for d in EDUCATION
        for other in ("gaussian", "laplace")
    ],
    *[
        comparison_check(
            f"nguyen-fig2-{better}-beats-rr-at-eps1-{d}",
            FIG2.name,
            "l2",
            better,
            "rr",
            where=_edu(d, 1.0),
            unconverged_limit=PAPER_ITERATION_LIMIT,
            description=f"Fig. 2, {DATASET_TITLES[d]}: at ε* = 1 {PROSE[better]} beats "
            f"randomized response (paired){_TRUNCATED}",
        )
        for d in EDUCATION
        for better in ("gaussian", "laplace")
    ],
]


def _ml(m, eps, mode="paper"):
    return {"n_items": [m], "eps": [eps], "mode": [mode]}


FIG3_CHECKS = [
    *[
        comparison_check(
            f"nguyen-fig3-gaussian-beats-{other}-m{m}",
            FIG3.name,
            "l2",
            "gaussian",
            other,
            where=_ml(m, 1.0),
            description=f"Fig. 3 (m = {m}): at ε* = 1 the Gaussian chain beats "
            f"{PROSE[other]} (paired)",
        )
        for m in (25, 200)
        for other in ("laplace", "rr")
    ],
    method_ratio_check(
        "nguyen-fig3-sparse-no-gain-small-m",
        FIG3.name,
        "l2",
        "gaussian_sparse",
        "gaussian",
        0.9,
        np.inf,
        where=_ml(25, 1.0),
        description="Fig. 3(a): at small m (25, ε* = 1) sparsification does not significantly "
        "improve on the dense chain (error ratio ≥ 0.9)",
    ),
    comparison_check(
        "nguyen-fig3-sparse-beats-dense-large-m",
        FIG3.name,
        "l2",
        "gaussian_sparse",
        "gaussian",
        where=_ml(200, 2.0, "strict"),
        description="Fig. 3(b): at large m (200, ε* = 2 ≥ 1) the sparse chain is more accurate "
        "than the dense one (paired; strict mode: the authors' sparse power iteration "
        "stops unconverged in 18% of these fits)",
    ),
]

P0_CHECKS = [
    ratio_check(
        "nguyen-p0-larger-p0-better-high-privacy",
        P0.name,
        "l2",
        "gaussian_sparse",
        "p0",
        "0.5",
        PROPOSED,
        0.0,
        1.0,
        where={"eps": [0.05], "mode": ["strict"]},
        paired_on=("rep",),
        description="SF1: at high privacy (ε* = 0.05) p₀ = 0.5 is more accurate than the proposed "
        "2 log₂ m/m (error ratio < 1; strict mode: the authors' sparse power iteration "
        "does not converge there)",
    ),
    ratio_check(
        "nguyen-p0-sparse-better-low-privacy",
        P0.name,
        "l2",
        "gaussian_sparse",
        "p0",
        PROPOSED,
        "0.5",
        0.0,
        1.0,
        where={"eps": [5.0], "mode": ["strict"]},
        paired_on=("rep",),
        description="SF1: at low privacy (ε* = 5) the proposed sparse graph is more accurate than "
        "p₀ = 0.5 (error ratio < 1; strict mode: the authors' power iteration stops "
        "unconverged in 35% of the proposed graph's fits there)",
    ),
]

CHECKS = [*FIG2_CHECKS, *FIG3_CHECKS, *P0_CHECKS]
