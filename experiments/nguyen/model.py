"""nguyen's model (nguyen §2; §5; docs/nguyen.md, Model): the privacy parameters and x axes of
the paper's figures, the methods' names, the axis types of its experiments, the paper's symbols and
the labels every figure shares, the working set of one replicate, and the θ*, β* designs and
generators (Fig. 1's, the rate experiments', the top-K experiment's). The response generators
that also fit the non-private reference once per replicate (shared by every method) are their
figures' (:func:`.figures.synthetic.response_sample`, :mod:`.figures.real`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from dpsim.engine.definition import axes
from dpsim.errors import UsageError
from dpsim.estimators.spectral import differential_counts
from dpsim.mechanisms.count_noise import ACCOUNTING_MODES
from dpsim.mechanisms.zcdp import CONVERSIONS
from dpsim.models.rasch import (
    DESIGNS,
    authors_difficulties,
    rasch_abilities,
    rasch_difficulties,
    sample_rasch_responses,
)

INF = math.inf
DELTA = 1e-4
# The x axes of the paper's figures (nguyen §5, from the authors' scripts).
EPS_SYNTHETIC = [0.01, 0.05, 0.075, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 5.0, 7.5]
EPS_REAL = EPS_SYNTHETIC[:-1]
MODES = ("paper", "strict")
METHOD_NAMES = ("nonprivate", "gaussian", "gaussian_sparse", "laplace", "rr")
PROPOSED = "proposed"

SYMBOLS = {
    "n_items": "$m$",
    "n_users": "$n$",
    "eps": "$\\epsilon^*$",
    "delta": "$\\delta$",
    "p": "$p$",
    "p0": "$p_0$",
    "k": "$K$",
    "gap": "$\\Delta_K$",
    "eps0": "$\\epsilon_0$",
}
# what the figures write for the named values of the axes (FigureSpec.value_labels)
MODE_LABELS = {
    "paper": "paper mode (the authors' code)",
    "strict": "strict mode (the privacy claim holds)",
}
P0_LABELS = {
    "code_synthetic": "$p_0 = 1.1\\,\\log_2 m\\,/\\,m$ (proposed)",
    "code_real": "$p_0 = 2\\,\\log_2 m\\,/\\,m$ (proposed)",
}
VALUE_LABELS = {
    "mode": MODE_LABELS,
    "accounting": {
        "auto": "the mode's accounting",
        "paper": "accounting $\\Delta_2 = \\sqrt{\\#\\mathrm{pairs}}$",
        "synthetic_code": "accounting $\\Delta_2 = \\sqrt{\\#\\mathrm{pairs}/2}$",
        "tight_joint": "accounting $\\Delta_2^2 = 2\\min(|E|, \\lfloor m^2/4 \\rfloor)$",
    },
    "conversion": {
        "auto": "the mode's $(\\epsilon^*, \\delta) \\to \\rho$ conversion",
        "paper": "$\\epsilon_0 = \\epsilon^*/\\sqrt{2\\ln(1/\\delta)}$",
        "cks": "CKS20 $(\\epsilon^*, \\delta) \\to \\rho$ conversion",
        "bun_steinke": "Bun–Steinke $(\\epsilon^*, \\delta) \\to \\rho$ conversion",
    },
    "design": {
        "normal": "$\\theta^*, \\beta^* \\sim N(0, 1)$",
        "uniform": "$\\theta^*, \\beta^* \\sim U[-1, 1]$",
    },
    "dataset": {
        "lsat": "LSAT",
        "uci_student": "UCI student performance",
        "three_grades": "Three Grades",
        "movielens": "MovieLens",
    },
    "uci_file": {"stand-in": "UCI student: synthetic stand-in"},
    "grades_file": {"stand-in": "Three Grades: synthetic stand-in"},
    "ratings_file": {"stand-in": "MovieLens: synthetic stand-in"},
    "p0": {"proposed": P0_LABELS["code_real"]},
}
SYNTHETIC_VALUE_LABELS = {**VALUE_LABELS, "p0": {"proposed": P0_LABELS["code_synthetic"]}}
PROSE = {
    "nonprivate": "the non-private estimate",
    "gaussian": "the discrete-Gaussian chain",
    "gaussian_sparse": "the sparse discrete-Gaussian chain",
    "laplace": "the discrete-Laplace chain",
    "rr": "randomized response",
}
LABELS = {
    "nonprivate": "Non-private",
    "gaussian": "Discrete Gaussian",
    "gaussian_sparse": "Sparse discrete Gaussian",
    "laplace": "Discrete Laplace",
    "rr": "Randomized response",
}


# ---------------------------------------------------------------------------------------
# Axis types
# ---------------------------------------------------------------------------------------
def _p0_value(axis, value):
    if value == PROPOSED:
        return value
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise UsageError(
                f"{axis}={value!r} must be '{PROPOSED}' or a probability in (0, 1]"
            ) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise UsageError(f"{axis}={value!r} must be '{PROPOSED}' or a probability in (0, 1]")
    if not 0 < value <= 1:
        raise UsageError(f"{axis}={value!r} must lie in (0, 1] (or be '{PROPOSED}')")
    return f"{float(value):g}"  # stored as a name: one column type with 'proposed'


def file_axis(what: str) -> axes.AxisType:
    """A data file given by path, or ``stand-in`` for the deterministic synthetic stand-in."""
    return axes.name(f"{what}: a path, or 'stand-in' (the shape-matched synthetic stand-in)")


AXIS_TYPES = {
    "mode": axes.choice(
        *MODES,
        doc="paper: the authors' code (figures); strict: the privacy claim "
        "holds (module dpsim.experiments.nguyen.methods)",
    ),
    # accounting and conversion are not other names for the paper-vs-correct reading: that is
    # `mode`, which picks both; each overrides one ingredient of the reading alone (auto: the
    # mode's), so that its effect can be measured apart from the other (nguyen-rates-laplace fixes
    # both to the paper's under the strict mode)
    "accounting": axes.choice(
        "auto",
        *ACCOUNTING_MODES,
        doc="discrete-Gaussian/Laplace accounting, one "
        "ingredient of the mode's reading varied alone "
        "(auto: the mode's)",
    ),
    "conversion": axes.choice(
        "auto",
        *CONVERSIONS,
        doc="(ε*, δ) → ρ-zCDP conversion, one ingredient of the "
        "mode's reading varied alone (auto: the mode's)",
    ),
    "p0": axes.AxisType(
        _p0_value,
        f"edge probability of the sparse chain's item graph, in (0, 1], or "
        f"'{PROPOSED}' (the authors' rule); stored as a name",
    ),
    "design": axes.choice(
        *DESIGNS,
        doc="θ*, β* design: normal N(0, 1) (the paper's) or uniform "
        "Unif[−1, 1] (bounded, for rate checks)",
    ),
}


def lane_bytes(n_users: int, n_items: int) -> int:
    """Working set of one replicate: the response matrix and its two float copies, the
    m × m counts, chain and solve (about ten of them)."""
    return 24 * n_users * n_items + 80 * n_items * n_items


# ---------------------------------------------------------------------------------------
# θ* designs and generators (the response generators that also fit the non-private
# reference once per replicate are their figures': figures.synthetic.response_sample, figures.real)
# ---------------------------------------------------------------------------------------
def fig1_truth(key, shape):
    """β* = the authors' seed-119 draw for m (un-centred); θ* ~ N(0, 1), per (m, n)."""
    return {
        "beta": jnp.asarray(authors_difficulties(shape["n_items"])),
        "theta": rasch_abilities(key, shape["n_users"]),
    }


def rate_truth(key, shape):
    """θ* (n_users,) and β* (n_items,, centred) of the design, per replicate."""
    k_theta, k_beta = jax.random.split(key)
    return {
        "theta": rasch_abilities(k_theta, shape["n_users"], shape["design"]),
        "beta": rasch_difficulties(k_beta, shape["n_items"], shape["design"]),
    }


def topk_truth(key, shape):
    """θ* ~ Unif[−1, 1] (n_users,), per replicate."""
    return {"theta": rasch_abilities(key, shape["n_users"], "uniform")}


def two_level_difficulties(n_items: int, k: int, gap):
    """β* = Δ on the first k items, 0 on the others, centred (nguyen Theorem 3.4)."""
    beta = jnp.where(jnp.arange(n_items) < k, jnp.asarray(gap, jnp.float64), 0.0)
    return beta - jnp.mean(beta)


def topk_generate(key, shape, truth, data):
    """The two-level β* (:func:`two_level_difficulties`, gap Δ derived per point) and the
    differential counts of one draw of responses (nguyen eq. (2))."""
    beta = two_level_difficulties(shape["n_items"], shape["k"], data["gap"])
    r = sample_rasch_responses(key, truth["theta"], beta, data["p"])
    return {"Y": differential_counts(r.x, r.observed), "beta": beta}


def resolve_k(shape: dict) -> dict:
    """The shape, refused unless 1 ≤ k < n_items."""
    if not 1 <= shape["k"] < shape["n_items"]:
        raise UsageError(
            f"k={shape['k']} must lie in [1, n_items − 1] for n_items={shape['n_items']}"
        )
    return shape
