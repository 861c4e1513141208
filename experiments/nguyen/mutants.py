"""nguyen's mutants: plausible bugs in the calibration of its three mechanisms
(nguyen §4.1; Lemma 4.1, §4.2; supp. §4; docs/nguyen.md, Mechanisms and estimators; Errata and modes (Q3–Q4, A2, A3, A5)), each applied
to Fig. 2 (the cheapest run that holds all three), where the level checks of :mod:`.checks` judge every mechanism in
both modes. ``dpsim verify nguyen --mutants`` must kill every one.

Discrete Gaussian (through its host-derived ρ, or the method's analysis values):

* σ × ½ and σ × 2 (ρ × 4, ρ × ¼);
* the ½ of "½ε₀²-zCDP" dropped: ρ = ε₀² (σ/√2);
* ε* used as Lemma 4.1's zCDP ε without the (ε*, δ) → ε₀ conversion (A3: ρ = ε*²/2);
* Lemma 4.1 as printed (A2): variance √(m(m − 1))/ε₀² instead of m(m − 1)/ε₀²;
* the synthetic script's accounting in the real-data script's paper mode (docs/nguyen.md, Errata and modes (Q3): √(#pairs/2));
* strict mode with the paper's approximate conversion instead of CKS (docs/nguyen.md, Errata and modes (Q4): σ × 1.22 at ε* = 1).

Discrete Laplace: released at 2ε* (t/2), and at ε*/2 (t × 2).

Randomized response: released at 2ε_RR; the per-user budget not split over the m responses
(each at ε_RR); the shuffle amplification forgotten (ε_RR = ε*, A5).
"""

from __future__ import annotations

import math

from dpsim.engine.judgement.mutants import (
    Mutant,
    overridden_derived,
    scaled_analysis,
    scaled_derived,
    wrapped_method,
)

from .figures.design import MUTANTS as DESIGN_MUTANTS
from .figures.real import FIG2

EXPERIMENTS = (FIG2.name,)


def _paper_mode_accounting(accounting: str):
    """The method's paper mode resolves its accounting to ``accounting`` (strict unchanged)."""

    def wrapper(fn):
        def mutated(key, ctx):
            if ctx.analysis["mode"] == "paper" and ctx.analysis.get("accounting", "auto") == "auto":
                ctx = ctx._replace(analysis={**ctx.analysis, "accounting": accounting})
            return fn(key, ctx)

        return mutated

    return wrapper


def _strict_rho_paper(point: dict, derived: dict) -> float:
    if point["mode"] != "strict":
        return derived["rho"]
    return point["eps"] ** 2 / (4.0 * math.log(1.0 / point["delta"]))


MUTANTS = [
    Mutant(
        "nguyen-gaussian-sigma-half",
        "discrete-Gaussian σ × ½ (ρ × 4)",
        EXPERIMENTS,
        scaled_derived({"rho": 4.0}),
        breaks=("mechanism:discrete-gaussian",),
    ),
    Mutant(
        "nguyen-gaussian-sigma-double",
        "discrete-Gaussian σ × 2 (ρ × ¼)",
        EXPERIMENTS,
        scaled_derived({"rho": 0.25}),
        breaks=("mechanism:discrete-gaussian",),
    ),
    Mutant(
        "nguyen-gaussian-zcdp-half-dropped",
        "ρ = ε₀² instead of ½ε₀² (σ/√2)",
        EXPERIMENTS,
        scaled_derived({"rho": 2.0}),
        breaks=("mechanism:discrete-gaussian",),
    ),
    Mutant(
        "nguyen-gaussian-eps-not-converted",
        "ε* used as Lemma 4.1's zCDP ε without the (ε*, δ) → ε₀ conversion (A3: ρ = ε*²/2)",
        EXPERIMENTS,
        overridden_derived("rho", lambda point, derived: point["eps"] ** 2 / 2.0),
        breaks=("mechanism:discrete-gaussian",),
    ),
    Mutant(
        "nguyen-gaussian-lemma41-as-printed",
        "Lemma 4.1 as printed (A2): variance √(m(m − 1))/ε₀², not m(m − 1)/ε₀²",
        EXPERIMENTS,
        overridden_derived(
            "rho",
            lambda point, derived: (
                derived["rho"] * math.sqrt(point["n_items"] * (point["n_items"] - 1))
            ),
        ),
        breaks=("mechanism:discrete-gaussian",),
    ),
    Mutant(
        "nguyen-gaussian-synthetic-accounting-on-real-data",
        "the real-data paper mode with the synthetic script's √(#pairs/2) accounting (docs/nguyen.md, Errata and modes (Q3))",
        EXPERIMENTS,
        wrapped_method("gaussian", _paper_mode_accounting("synthetic_code")),
        breaks=("mechanism:discrete-gaussian",),
    ),
    Mutant(
        "nguyen-gaussian-strict-paper-conversion",
        "strict mode with the paper's approximate ε → ρ conversion instead of CKS (docs/nguyen.md, Errata and modes (Q4))",
        EXPERIMENTS,
        overridden_derived("rho", _strict_rho_paper),
        breaks=("mechanism:discrete-gaussian",),
    ),
    Mutant(
        "nguyen-laplace-at-2eps",
        "discrete Laplace released at 2ε* (t/2)",
        EXPERIMENTS,
        scaled_analysis({"eps": 2.0}, methods=("laplace",)),
        breaks=("mechanism:discrete-laplace",),
    ),
    Mutant(
        "nguyen-laplace-at-half-eps",
        "discrete Laplace released at ε*/2 (t × 2)",
        EXPERIMENTS,
        scaled_analysis({"eps": 0.5}, methods=("laplace",)),
        breaks=("mechanism:discrete-laplace",),
    ),
    Mutant(
        "nguyen-rr-at-2eps",
        "randomized response released at 2ε_RR",
        EXPERIMENTS,
        scaled_derived({"eps_rr": 2.0}),
        breaks=("mechanism:shuffled-rr",),
    ),
    Mutant(
        "nguyen-rr-no-budget-split",
        "each response at ε_RR instead of ε_RR/m (budget not split)",
        EXPERIMENTS,
        overridden_derived("eps_rr", lambda point, derived: derived["eps_rr"] * point["n_items"]),
        breaks=("mechanism:shuffled-rr",),
    ),
    Mutant(
        "nguyen-rr-no-shuffle-amplification",
        "ε_RR = ε* (the shuffle amplification forgotten, A5)",
        EXPERIMENTS,
        overridden_derived("eps_rr", lambda point, derived: point["eps"]),
        breaks=("mechanism:shuffled-rr",),
    ),
    *DESIGN_MUTANTS,
]
