"""chowdhury's model (chowdhury §2, §6; docs/chowdhury.md, Model; Experiments as run; Errata and
modes): the package's axes, the θ* designs, the data of one replicate and its exact non-private
MLE, the Plackett–Luce data, the shape-level radius, the paper's grid and symbols and the checks of
bad input.

**Pipeline of one replicate** (DESIGN "one pipeline").

* θ* (``truth``, per replicate: ``truth_per_replicate=True``): ``design = faithful`` draws
  θ* ~ N(0, I_d) conditioned on ‖θ*‖ ≤ B = 2√d (docs/chowdhury.md, Errata and modes (E4), the paper's §6 draw made to
  satisfy Assumption 2.1; no sum-zero); ``design = theory`` draws θ* uniformly on the sphere
  ‖θ*‖ = 1 of 1^⊥ (Assumption 2.1 exactly, with the sum-zero constraint in Θ_B, docs/chowdhury.md,
  Errata and modes (E4, E17)). The draw's ``ok`` flag (16 rejection candidates all refused: probability
  < 1e-21) is reported as the diagnostic ``theta_ok`` of every row.
  *Engine limitation:* the runner keys θ* by (seed, shape point, replicate), and n is a shape
  axis (it changes array shapes), so θ* is common to every ε, δ and method of a replicate
  but redrawn for each n (the paper does not say; chowdhury §6). Checks in n are therefore fits
  over independent θ* draws; the theory design (‖θ*‖ fixed) removes that variance.
* data (``generate``): x_i = ϕ¹ − ϕ⁰ ~ N(0, 2I_d) (``features = difference``, docs/chowdhury.md, Errata and modes (E5))
  or x_i ~ N(0, I_d) (``direct``), labels from the link (BTL; probit = Thurstone §4.4). The data
  key leaves out ε and δ, so every privacy level of a replicate sees the same data. The exact
  non-private MLE θ_MLE (eq. (8)) is fitted here, once per replicate, and every method also
  reports its ``shift`` = ‖θ̂ − θ_MLE‖ on the same data (the privacy cost alone, as the cai
  package does; far less Monte-Carlo noise than a difference of errors).

**Calibrations** (docs/chowdhury.md, Experiments as run). Radius B = 2√d for every design (stored as the shape-level
column ``radius``); the releases' L and β are those of :mod:`.methods`.
"""

from __future__ import annotations

import math

from dpsim.estimators.linear_btl import mle
from dpsim.estimators.linear_btl_sgd import SCHEDULES, feature_coverage
from dpsim.engine import Derived, UsageError
from dpsim.engine.definition import axes
from dpsim.engine.definition.axes import AxisType
from dpsim.models.linear_btl import (
    FEATURES,
    THETA_DESIGNS,
    default_radius,
    sample_linear_btl,
    sample_plackett_luce,
    sample_theta_star,
)

INF = math.inf
PAPER_REPS = 100  # "Each sample size is repeated 100 times" (chowdhury §6)
PAPER_DELTA = 1e-3  # δ = 0.001 for θ̂_obj (chowdhury §6)
PAPER_EPS = [0.1, 0.5, 1.0]
PAPER_N = list(
    range(1000, 10001, 1000)
)  # 1000 ≤ n ≤ 10000, docs/chowdhury.md, Experiments as run grid
THEORY_NORM = 1.0  # ‖θ*‖ of the theory design (docs/chowdhury.md, Errata and modes (E4), "e.g. 1")
FEATURE_SCALE = {"difference": math.sqrt(2.0), "direct": 1.0}  # x ~ N(0, s²I_d)


# ---------------------------------------------------------------------------------------
# Axes of the package (the vocabulary's n_samples, dim, eps, delta, n_actions, link are shared)
# ---------------------------------------------------------------------------------------
def _beta_value(axis, value):
    if value == "theory":
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < math.inf):
        raise UsageError(
            f"{axis}={value!r}: use 'theory' (β = √n/B, Thm 5.3) or a finite number > 0"
        )
    return float(value)


AXIS_TYPES = {
    "design": axes.choice(
        *THETA_DESIGNS,
        doc="θ* design: faithful (N(0, I_d) given ‖θ*‖ ≤ 2√d, no "
        "sum-zero) or theory (‖θ*‖ = 1 on 1^⊥, sum-zero Θ_B); docs/chowdhury.md, Errata and modes (E4)",
    ),
    "features": axes.choice(
        *FEATURES,
        doc="x = ϕ¹ − ϕ⁰ ~ N(0, 2I) (difference) or x ~ N(0, I) (direct); "
        "docs/chowdhury.md, Errata and modes (E5)",
    ),
    "mode": axes.choice(
        *SCHEDULES,
        doc="reading of the paper's SGD step sizes: literal η ≡ 0.1 (last "
        "iterate, the paper's words), theory 1/(λ̂(t + t0)) (the proof's "
        "schedule), averaged (η ≡ 0.1, Polyak–Ruppert); docs/chowdhury.md, Experiments as run",
    ),
    "beta": AxisType(
        _beta_value, "ridge β of objective perturbation: theory (√n/B, Thm 5.3) or a number"
    ),
}

# axes renamed after their random streams were fixed → the name they are keyed under
# (Experiment.stream_names): results are unchanged by the rename
STREAM_NAMES = {"n_actions": "k", "mode": "schedule"}

SYMBOLS = {
    "n_samples": "$n$",
    "dim": "$d$",
    "eps": "$\\epsilon$",
    "delta": "$\\delta$",
    "n_actions": "$K$",
    "beta": "$\\beta$",
    "radius": "$B$",
    "design": "θ* design",
    "features": "features",
    "mode": "schedule",
    "link": "link",
}
# what the figures write for the named values of the axes (FigureSpec.value_labels)
VALUE_LABELS = {
    "design": {
        "faithful": "$\\theta^* \\sim N(0, I_d)$ given $\\|\\theta^*\\|_2 \\leq 2\\sqrt{d}$",
        "theory": "$\\|\\theta^*\\|_2 = 1$, $\\theta^* \\perp \\mathbf{1}$",
    },
    "features": {
        "difference": "$x = \\phi^1 - \\phi^0 \\sim N(0, 2I_d)$",
        "direct": "$x \\sim N(0, I_d)$",
    },
    "beta": {"theory": "$\\beta = \\sqrt{n}/B$ (Thm 5.3)"},
    "mode": {
        "literal": "$\\eta \\equiv 0.1$, last iterate",
        "theory": "$\\eta_t = 1/(\\hat\\lambda(t + t_0))$",
        "averaged": "$\\eta \\equiv 0.1$, Polyak–Ruppert average",
    },
}


def sum_zero(shape: dict) -> bool:
    """The sum-zero constraint ⟨1, θ⟩ = 0 in Θ_B: on for the theory design only (docs/chowdhury.md, Errata and modes (E17))."""
    return shape["design"] == "theory"


def radius_of(point: dict) -> dict:
    """Shape-level derived value: B = 2√d (docs/chowdhury.md, Experiments as run), with the dimension checked."""
    d = point["dim"]
    if point.get("design") == "theory" and d < 2:
        raise UsageError(f"dim={d} is too small for design=theory (θ* ∈ 1^⊥ needs dim ≥ 2)")
    return {"radius": default_radius(d)}


RADIUS = Derived(
    ("radius",),
    radius_of,
    level="shape",
    doc="radius B = 2√d of Θ_B (docs/chowdhury.md, Experiments as run)",
)


# ---------------------------------------------------------------------------------------
# Truth and data
# ---------------------------------------------------------------------------------------
def truth(key, shape):
    """θ* of one replicate from the shape's design (module docstring)."""
    options = {"norm": THEORY_NORM} if shape["design"] == "theory" else {"radius": shape["radius"]}
    draw = sample_theta_star(key, shape["dim"], shape["design"], **options)
    return {"theta": draw.theta, "theta_ok": draw.ok}


def binary_data(key, shape, truth, link: str = "logistic") -> dict:
    """One replicate's features and labels (chowdhury eq. (1), §6): x (n, d), y (n,)."""
    data = sample_linear_btl(
        key, truth["theta"], shape["n_samples"], features=shape["features"], link=link
    )
    return {"x": data.x, "y": data.y}


def generate_with_mle(key, shape, truth, data):
    """:func:`binary_data` (logistic link) plus the exact non-private MLE on it (eq. (8)),
    shared by every method and ε of the replicate."""
    sample = binary_data(key, shape, truth)
    fit = mle(sample["x"], sample["y"], shape["radius"], sum_zero=sum_zero(shape))
    return {
        **sample,
        "mle_theta": fit.theta,
        **{f"mle_{k}": v for k, v in fit.solver_diagnostics().items()},
        "mle_on_boundary": fit.info["on_boundary"],
    }


def pl_generate(key, shape, truth, data):
    """n top-1 choices out of K actions with ϕ(s, a_j) ~ N(0, I_d) (chowdhury eq. (11), §4.4): the
    Plackett–Luce data of ``chowdhury-rates-k``."""
    sample = sample_plackett_luce(key, truth["theta"], shape["n_samples"], shape["n_actions"])
    return {"phi": sample.phi, "y": sample.y}


def sgd_generate(key, shape, truth, data):
    """:func:`binary_data` with the shape's link (logistic: BTL; probit: Thurstone), and the
    feature coverage κ̂ = λ_min(Σ_D) of the theory schedule, computed once per replicate
    (it depends on the features only) rather than by every SGD fit."""
    sample = binary_data(key, shape, truth, link=shape["link"])
    return {**sample, "kappa": feature_coverage(sample["x"])}


def binary_lane_bytes(shape) -> int:
    """Working set of one replicate: a few copies of the (n, d) design and (n,) vectors."""
    return 8 * shape["n_samples"] * (6 * shape["dim"] + 12)
