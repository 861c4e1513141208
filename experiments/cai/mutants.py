"""cai's mutants (``MUTANTS``): plausible bugs that ``dpsim verify cai --mutants`` must see killed
(some check FAILs under each): miscalibrated versions of Algorithms 1–3, each declared on the one
experiment whose level checks (``checks.py``) can catch it (``cai-fig3``, ``cai-edge-vs-individual``
or ``cai-fig7``; ``dpsim show`` estimates each one's run time), and the design's and metrics'
mutants (``figures/design.py``).
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from dpsim.engine.judgement.mutants import Mutant, replaced_method, scaled_analysis, wrapped_method
from dpsim.mechanisms.btl_perturbation import LaplacePerturbation
from dpsim.mechanisms.laplace import laplace_noise
from dpsim.models import real_items

from . import methods
from .figures import design, scaling
from .figures.edge import FIG3
from .figures.individual import FIG7
from .figures.scaling import MATCHED


# ---------------------------------------------------------------------------------------
# Mutants: miscalibrated versions of the mechanisms (each declared on the one experiment
# whose level checks can catch it)
# ---------------------------------------------------------------------------------------
def edge_release(lam_factor: float = 1.0, log=jnp.log):
    """A miscalibrated Algorithm 1 release (edge DP) with the library's draws: λ = ``lam_factor``·8/ε,
    γ = max(1/ε, c0√(np·log n)) with the given ``log``."""

    def release(key, eps, p, capacity, *, c0, n_items):
        n = jnp.asarray(n_items, jnp.float64)
        lam = lam_factor * 8.0 / eps
        gamma = jnp.maximum(1.0 / eps, c0 * jnp.sqrt(n * p * log(n)))
        w = jnp.where(real_items(capacity, n_items), laplace_noise(key, lam, (capacity,)), 0.0)
        return LaplacePerturbation(gamma, w)

    return release


def individual_release(
    *, eps_factor: float = 1.0, lam_l: bool = True, gamma_l: bool = True, lam_factor: float = 1.0
):
    """A miscalibrated Algorithm 1 release (individual DP) with the library's draws: λ = ``lam_factor``·8L/ε and
    γ = 2L/ε at ε·``eps_factor``, L dropped from λ or γ when asked."""

    def release(key, eps, per_user, n_items):
        e = eps * eps_factor
        lam = lam_factor * 8.0 * (per_user if lam_l else 1.0) / e
        gamma = 2.0 * (per_user if gamma_l else 1.0) / e
        return LaplacePerturbation(gamma, laplace_noise(key, lam, (n_items,)))

    return release


def with_mode(mode: str):
    """A method wrapper: Algorithm 3 computed in ``mode`` whatever the grid's ``mode`` says."""

    def wrapper(fn):
        return lambda key, ctx: fn(key, ctx._replace(shape={**ctx.shape, "mode": mode}))

    return wrapper


def eps_scaled_where(factor: float, **shape):
    """A method wrapper: the method sees ε·``factor`` on the paths whose shape values are
    ``shape`` (e.g. ``unit="individual"``), the true ε elsewhere: one path miscalibrated alone."""

    def wrapper(fn):
        def mutated(key, ctx):
            if all(ctx.shape[axis] == value for axis, value in shape.items()):
                ctx = ctx._replace(analysis={**ctx.analysis, "eps": ctx.analysis["eps"] * factor})
            return fn(key, ctx)

        return mutated

    return wrapper


# A noise variance off by 10% on one path alone (noise scale × √1.1: ε ÷ √1.1 where the scale
# is ∝ 1/ε, or λ × √1.1): the smallest error the level checks must FAIL at the default
# replicates (docs/cai.md, Mutants and level checks).
VARIANCE_ERROR = 1.1
SCALE_ERROR = math.sqrt(VARIANCE_ERROR)

LEVEL_MUTANTS = [
    # also on cai-published-fig1, where the ε profile against the authors' results must see them
    Mutant(
        "cai-edge-counts-noise-half",
        "Alg. 2 with Laplace(1/ε): the ℓ∞ sensitivity 1 for the ℓ1 sensitivity 2 (released at 2ε)",
        (FIG3.name, "cai-published-fig1"),
        scaled_analysis({"eps": 2.0}, methods=["counts"]),
        breaks=("mechanism:edge-counts",),
    ),
    Mutant(
        "cai-edge-counts-noise-double",
        "Alg. 2 with Laplace(4/ε) (noise × 2)",
        (FIG3.name, "cai-published-fig1"),
        scaled_analysis({"eps": 0.5}, methods=["counts"]),
        breaks=("mechanism:edge-counts",),
    ),
    Mutant(
        "cai-edge-mle-lambda-half",
        "Alg. 1 (edge) with λ = 4/ε (κ1 taken as ½)",
        (FIG3.name,),
        replaced_method("mle", methods.make_mle_fn(edge_release(lam_factor=0.5))),
        breaks=("mechanism:edge-objective-perturbation",),
    ),
    Mutant(
        "cai-edge-mle-at-half-eps",
        "Alg. 1 (edge) calibrated at ε/2: λ = 16/ε (γ's c0 branch unchanged)",
        (FIG3.name,),
        scaled_analysis({"eps": 0.5}, methods=["mle"]),
        breaks=("mechanism:edge-objective-perturbation",),
    ),
    Mutant(
        "cai-edge-mle-gamma-log10",
        "Alg. 1 (edge) with γ = c0√(np log₁₀ n) (log base 10 for the natural log)",
        (FIG3.name,),
        replaced_method("mle", methods.make_mle_fn(edge_release(log=jnp.log10))),
        breaks=("mechanism:edge-objective-perturbation",),
    ),
    Mutant(
        "cai-indiv-counts-strict-as-paper",
        "Alg. 3 in strict mode computed with the paper's Laplace(L/ε) "
        "(the errata's factor 2, docs/cai.md, Errata and modes (E3))",
        (MATCHED.name,),
        wrapped_method("counts", with_mode("paper")),
        breaks=("mechanism:individual-counts-strict",),
    ),
    Mutant(
        "cai-indiv-mle-at-2eps",
        "Alg. 1 (individual) calibrated at 2ε: λ = 4L/ε, γ = L/ε",
        (MATCHED.name,),
        replaced_method("mle", scaling.make_matched_mle_fn(individual_release(eps_factor=2.0))),
        breaks=("mechanism:individual-objective-perturbation",),
    ),
    Mutant(
        "cai-indiv-mle-lambda-without-L",
        "Alg. 1 (individual) with the edge λ = 8/ε (L dropped from the sensitivity), γ = 2L/ε",
        (MATCHED.name,),
        replaced_method("mle", scaling.make_matched_mle_fn(individual_release(lam_l=False))),
        breaks=("mechanism:individual-objective-perturbation",),
    ),
    Mutant(
        "cai-indiv-mle-gamma-without-L",
        "Alg. 1 (individual) with γ = 2/ε (L dropped), λ = 8L/ε",
        (MATCHED.name,),
        replaced_method("mle", scaling.make_matched_mle_fn(individual_release(gamma_l=False))),
        breaks=("mechanism:individual-objective-perturbation",),
    ),
    Mutant(
        "cai-indiv-counts-paper-as-strict",
        "Alg. 3 in the paper's mode computed with Laplace(2L/ε) "
        "(the errata's factor 2 the other way)",
        (FIG7.name,),
        wrapped_method("counts", with_mode("strict")),
        breaks=("mechanism:individual-counts-paper",),
    ),
    Mutant(
        "cai-edge-counts-variance-1.1",
        "Alg. 2 with Laplace(2√1.1/ε): the count noise's variance × 1.1",
        (FIG3.name,),
        scaled_analysis({"eps": 1 / SCALE_ERROR}, methods=["counts"]),
        breaks=("mechanism:edge-counts",),
    ),
    Mutant(
        "cai-edge-mle-variance-1.1",
        "Alg. 1 (edge) with λ = 8√1.1/ε: w's variance × 1.1 (γ kept)",
        (FIG3.name,),
        replaced_method("mle", methods.make_mle_fn(edge_release(lam_factor=SCALE_ERROR))),
        breaks=("mechanism:edge-objective-perturbation",),
    ),
    Mutant(
        "cai-matched-edge-counts-variance-1.1",
        "Alg. 2 in the matched design with Laplace(2√1.1/ε) (unit = edge only)",
        (MATCHED.name,),
        wrapped_method("counts", eps_scaled_where(1 / SCALE_ERROR, unit="edge")),
        breaks=("mechanism:edge-counts",),
    ),
    Mutant(
        "cai-matched-edge-mle-variance-1.1",
        "Alg. 1 (edge, γ = 1/ε branch) calibrated at ε/√1.1: w's variance "
        "× 1.1, γ × √1.1 (unit = edge only)",
        (MATCHED.name,),
        wrapped_method("mle", eps_scaled_where(1 / SCALE_ERROR, unit="edge")),
        breaks=("mechanism:edge-objective-perturbation",),
    ),
    Mutant(
        "cai-indiv-counts-strict-variance-1.1",
        "Alg. 3 strict with Laplace(2√1.1·L/ε) (unit = individual only)",
        (MATCHED.name,),
        wrapped_method("counts", eps_scaled_where(1 / SCALE_ERROR, unit="individual")),
        breaks=("mechanism:individual-counts-strict",),
    ),
    Mutant(
        "cai-indiv-mle-variance-1.1",
        "Alg. 1 (individual) with λ = 8√1.1·L/ε: w's variance × 1.1 (γ kept)",
        (MATCHED.name,),
        replaced_method(
            "mle", scaling.make_matched_mle_fn(individual_release(lam_factor=SCALE_ERROR))
        ),
        breaks=("mechanism:individual-objective-perturbation",),
    ),
    Mutant(
        "cai-indiv-counts-paper-variance-1.1",
        "Alg. 3 in the paper's mode with Laplace(√1.1·L/ε)",
        (FIG7.name,),
        scaled_analysis({"eps": 1 / SCALE_ERROR}, methods=["counts"]),
        breaks=("mechanism:individual-counts-paper",),
    ),
]

MUTANTS = [*LEVEL_MUTANTS, *design.MUTANTS]
