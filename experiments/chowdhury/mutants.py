"""chowdhury's mutants: plausible bugs that ``dpsim verify chowdhury --mutants`` must see killed
(some check FAILs under each); those of the mechanisms are defined here, those of the θ* designs,
features, labels and metrics in :mod:`.figures.design`.

**Mutants** (:data:`MUTANTS`): RR released at 2ε and at ε/2 (debiased at ε), the RR
debiasing removed (logistic MLE on ỹ), K-RR released at ε/2, objective perturbation with
σ ÷ 1.5 (the reviewers' case) and σ × 2 (L read as a bound on ‖x‖ instead of ‖ϕ‖, docs/chowdhury.md,
Errata and modes (E7)), in the exact method (``chowdhury-rates-eps``) and σ ÷ 1.5 in the SGD reading
(``chowdhury-fig1-sgd``).
"""

from __future__ import annotations

import math

from dpsim.estimators.linear_btl import mle
from dpsim.engine.judgement.mutants import Mutant, chain, replaced_method, scaled_analysis

from . import methods, model
from .figures import design, rates
from .figures.releases import KRR_RELEASE, OBJPERT_RELEASE


# ---------------------------------------------------------------------------------------
# Mutants
# ---------------------------------------------------------------------------------------
def naive_rr_fn(key, ctx):
    """Debiasing removed: the logistic MLE fitted on the released labels ỹ as if they were clear
    (θ̂ shrinks by about tanh(ε/2)); same metrics as ``rr_local``."""
    fit = mle(
        ctx.sample["x"],
        ctx.released["y_tilde"],
        ctx.shape["radius"],
        sum_zero=model.sum_zero(ctx.shape),
    )
    return {
        **methods.exact_row(ctx, fit.theta, fit.solver_diagnostics(), fit.info["on_boundary"]),
        **methods.rr_prediction(ctx, ctx.analysis["eps"]),
        "flip_rate": methods.flip_rate(ctx),
    }


def noise_scaled(factor: float, method_fn):
    """The method with L (hence σ ∝ L, Thm 5.2) multiplied by ``factor``."""

    def fn(key, ctx):
        return method_fn(
            key, ctx, feature_bound=factor * methods.public_feature_bound(ctx.sample["x"])
        )

    return fn


EPS_EXP = rates.RATES_EPS.name
MECHANISM_MUTANTS = [
    Mutant(
        "chowdhury-rr-release-2eps",
        "binary RR released at 2ε, debiased at ε",
        (EPS_EXP,),
        scaled_analysis({"eps": 2.0}, methods=(), privatise=True),
        breaks=("mechanism:rr-labels",),
    ),
    Mutant(
        "chowdhury-rr-release-half-eps",
        "binary RR released at ε/2 (flips × ≈2 at small ε), debiased at ε",
        (EPS_EXP,),
        scaled_analysis({"eps": 0.5}, methods=(), privatise=True),
        breaks=("mechanism:rr-labels",),
    ),
    Mutant(
        "chowdhury-rr-debias-removed",
        "θ̂_RR without the de-biased loss: logistic MLE on ỹ",
        (EPS_EXP,),
        replaced_method("rr_local", naive_rr_fn),
        breaks=("mechanism:rr-debiased-loss",),
    ),
    Mutant(
        "chowdhury-krr-release-half-eps",
        "K-ary RR released at ε/2",
        (KRR_RELEASE.name,),
        scaled_analysis({"eps": 0.5}, methods=(), privatise=True),
        breaks=("mechanism:krr-labels",),
    ),
    Mutant(
        "chowdhury-objpert-sigma-div1.5",
        "objective perturbation σ ÷ 1.5 (less noise than Thm 5.2 needs)",
        (EPS_EXP,),
        replaced_method("objpert_central", noise_scaled(1 / 1.5, methods.objpert_central_fn)),
        breaks=("mechanism:objective-perturbation",),
    ),
    Mutant(
        "chowdhury-objpert-sigma-x2",
        "objective perturbation σ × 2 (L read as a bound on ‖x‖, docs/chowdhury.md, Errata and modes (E7))",
        (EPS_EXP,),
        replaced_method("objpert_central", noise_scaled(2.0, methods.objpert_central_fn)),
        breaks=("mechanism:objective-perturbation",),
    ),
    # a noise variance off by 10% on one path alone (σ × √1.1; docs/chowdhury.md, Mutants and level checks)
    Mutant(
        "chowdhury-objpert-variance-1.1",
        "objective perturbation (exact minimiser) with σ × √1.1: σ² × 1.1",
        (OBJPERT_RELEASE.name,),
        replaced_method(
            "objpert_central", noise_scaled(math.sqrt(1.1), methods.objpert_central_fn)
        ),
        breaks=("mechanism:objective-perturbation",),
    ),
    Mutant(
        "chowdhury-sgd-objpert-variance-1.1",
        "SGD objective perturbation with σ × √1.1: σ² × 1.1",
        ("chowdhury-fig1-sgd",),
        replaced_method("sgd_objpert", noise_scaled(math.sqrt(1.1), methods.sgd_objpert_fn)),
        breaks=("mechanism:sgd-objective-perturbation",),
    ),
    Mutant(
        "chowdhury-sgd-objpert-sigma-div1.5",
        "SGD objective perturbation σ ÷ 1.5",
        ("chowdhury-fig1-sgd",),
        chain(replaced_method("sgd_objpert", noise_scaled(1 / 1.5, methods.sgd_objpert_fn))),
        breaks=("mechanism:sgd-objective-perturbation",),
    ),
]


MUTANTS = [*MECHANISM_MUTANTS, *design.MUTANTS]
