"""xu's mutants: plausible bugs of its release and estimator that
``dpsim verify xu --mutants`` must kill (:mod:`dpsim.engine.judgement.mutants`).

xu's release (:mod:`.methods`, "Release") is keyed by its privacy level, not its mechanism (the
experiment's ``release_axes``): the ``privatise`` stage reads ε and the
mechanism from ``ctx.analysis`` and returns the profile (sizes, ε) that the estimator's λ then
reads. A consistent release at a wrong ε is therefore the engine's
:func:`~dpsim.engine.judgement.mutants.scaled_analysis` on the privatise stage (the release and
λ both see the wrong ε, the estimator believes it); the mismatched releases below rebuild the
stage from the same sub-keys as :func:`dpsim.mechanisms.pairwise_ldp.privatise` (one
``jax.random.split`` of the stage's release key: RR first, Laplace second), so every draw but the
mutated one is the real code's.

Mutants (each applied only to the experiments whose checks can see it):

- ``xu-rr-flips-at-2eps-debiased-at-eps``: RR flips at 2ε, debiased with the ε-constants of eq. (1);
- ``xu-release-at-half-eps`` / ``xu-release-at-2eps``: the whole release at ε/2 (noise too
  large: a budget split twice) or 2ε (a privacy leak);
- ``xu-debiasing-removed``: debiased RR releases the classic ỹ̄ (the estimator is then the
  classic-RR MLE, docs/xu.md, Mechanisms and estimators; Errata and modes (A7));
- ``xu-laplace-sensitivity-2``: Laplace noise of scale 2/ε (answers coded ±1, docs/xu.md, Errata and modes (A6));
- ``xu-lambda-paper-rule``: λ = G/L replaced by the literal (e^ε+1)²/((e^ε−1)L) (errata A4);
  ``xu-lambda-rule-ignored``: the other way round, the literal rule computed as G/L;
- ``xu-classic-rr-flips-at-2eps``: classic RR's keep probability at 2ε, reported at ε;
- ``xu-schemes-swapped``: the adaptive schemes log/√ and 1/(√·log) exchanged (errata A8).
- ``xu-laplace-variance-1.1``, ``xu-debiased-rr-variance-1.1``, ``xu-classic-rr-variance-1.1``:
  one mechanism's noise variance off by 10% (Laplace scale × √1.1; RR at the ε′ whose
  e^ε′/(e^ε′ − 1)² is 1.1× that at ε), the others exact.

``MUTANTS`` gathers these (``RELEASE_MUTANTS``) and the calibration experiments' mutants of the
θ* designs, raw wins and metrics (:mod:`.figures.design`).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp

from dpsim.engine import Experiment
from dpsim.engine.judgement.mutants import Mutant, scaled_analysis, wrapped_method
from dpsim.mechanisms.pairwise_ldp import debiased_rr_mean, laplace_pair_mean, rr_pair_counts

from .figures import design
from .methods import homogeneous_groups

ORACLE, FIG2, FIG3, FIG6, FLOOR, LAMBDA = (
    "xu-oracle",
    "xu-fig2",
    "xu-fig3",
    "xu-fig6",
    "xu-classic-floor",
    "xu-lambda-rule",
)


def replaced_release(mechanism: str, release: Callable) -> Callable[[Experiment], Experiment]:
    """The experiment with ``mechanism``'s release replaced by ``release(key, ctx) -> z̄``
    (homogeneous ε only; ``key``: the release key); every other mechanism keeps the real stage."""

    def apply(experiment: Experiment) -> Experiment:
        real = experiment.privatise

        def privatise(key, ctx):
            if ctx.analysis["mechanism"] != mechanism:
                return real(key, ctx)
            _, sizes, eps = homogeneous_groups(ctx)
            return {"zbar": release(key, ctx), "sizes": sizes, "eps": eps}

        return dataclasses.replace(experiment, privatise=privatise)

    return apply


def _rr_keys(key):
    return jax.random.split(key)


def rr_mismatched(flip_factor: float) -> Callable:
    """Debiased RR whose flips use ε·``flip_factor`` and whose debiasing uses ε (eq. (1) at ε)."""

    def release(key, ctx):
        wins, sizes, eps = homogeneous_groups(ctx)
        counts = rr_pair_counts(_rr_keys(key)[0], wins, sizes, eps * flip_factor)
        return debiased_rr_mean(counts, sizes, eps)

    return release


def rr_not_debiased(key, ctx):
    """The classic mean ỹ̄ of the same flips, released as if it were the debiased z̄."""
    wins, sizes, eps = homogeneous_groups(ctx)
    return rr_pair_counts(_rr_keys(key)[0], wins, sizes, eps).sum(axis=0) / sizes.sum()


def laplace_scaled(noise_factor: float) -> Callable:
    """Laplace noise of scale ``noise_factor``/ε (the ε the mechanism believes stays ε)."""

    def release(key, ctx):
        wins, sizes, eps = homogeneous_groups(ctx)
        return laplace_pair_mean(_rr_keys(key)[1], wins, sizes, eps / noise_factor)

    return release


def classic_flips(flip_factor: float) -> Callable:
    """Classic RR whose keep probability is e^{ε·f}/(1 + e^{ε·f}), f = ``flip_factor``."""

    def release(key, ctx):
        wins, sizes, eps = homogeneous_groups(ctx)
        return (
            rr_pair_counts(_rr_keys(key)[0], wins, sizes, eps * flip_factor).sum(axis=0)
            / sizes.sum()
        )

    return release


def variance_matched_eps(eps, variance_factor: float):
    """ε′ whose RR noise variance e^ε′/(e^ε′ − 1)² = 1/(4 sinh²(ε′/2)) is ``variance_factor``
    times that at ε (xu eq. (1), Lemma 2): ε′ = 2 asinh(sinh(ε/2)/√factor)."""
    return 2.0 * jnp.arcsinh(jnp.sinh(eps / 2.0) / jnp.sqrt(variance_factor))


def rr_variance_scaled(variance_factor: float, debiased: bool) -> Callable:
    """RR whose flips (and, when ``debiased``, eq. (1)'s debiasing) use the ε′ of
    :func:`variance_matched_eps`: a consistent release whose noise variance is off by
    ``variance_factor``, reported at ε."""

    def release(key, ctx):
        wins, sizes, eps = homogeneous_groups(ctx)
        eps_v = variance_matched_eps(eps, variance_factor)
        counts = rr_pair_counts(_rr_keys(key)[0], wins, sizes, eps_v)
        return (
            debiased_rr_mean(counts, sizes, eps_v) if debiased else counts.sum(axis=0) / sizes.sum()
        )

    return release


# the paper's text gives Schemes 1 and 3 each other's behaviour (docs/xu.md, Errata and modes (A8))
SWAPPED_SCHEMES = {"eps_log_over_sqrt": "eps_inv_sqrt_log", "eps_inv_sqrt_log": "eps_log_over_sqrt"}


def schemes_swapped(experiment: Experiment) -> Experiment:
    """ε(m, L) of each adaptive scheme computed with the other's formula (log/√ ↔ 1/(√·log))."""

    def wrap(derived):
        if derived.names != ("eps",):
            return derived
        return dataclasses.replace(
            derived,
            fn=lambda point: derived.fn(
                {**point, "scheme": SWAPPED_SCHEMES.get(point["scheme"], point["scheme"])}
            ),
        )

    return dataclasses.replace(experiment, derived=tuple(wrap(d) for d in experiment.derived))


def ridge_rule_as(rule: str) -> Callable[[Experiment], Experiment]:
    """The estimator computes λ with ``rule`` whatever the ``mode`` axis (the λ rule) says."""

    def wrapper(fn):
        return lambda key, ctx: fn(key, ctx._replace(analysis={**ctx.analysis, "mode": rule}))

    return wrapped_method("m_est", wrapper)


VARIANCE_ERROR = 1.1  # the smallest noise-variance error the level checks must FAIL

RELEASE_MUTANTS = [
    Mutant(
        "xu-rr-flips-at-2eps-debiased-at-eps",
        "debiased RR: answers flipped at 2ε, debiased with eq. (1) at ε",
        (ORACLE,),
        replaced_release("debiased_rr", rr_mismatched(2.0)),
        breaks=("mechanism:debiased-rr",),
    ),
    Mutant(
        "xu-release-at-half-eps",
        "every mechanism released (and λ computed) at ε/2: noise too large",
        (ORACLE,),
        scaled_analysis({"eps": 0.5}, methods=(), privatise=True),
        breaks=("mechanism:classic-rr", "mechanism:debiased-rr", "mechanism:laplace"),
    ),
    Mutant(
        "xu-release-at-2eps",
        "every mechanism released (and λ computed) at 2ε: a privacy leak",
        (ORACLE,),
        scaled_analysis({"eps": 2.0}, methods=(), privatise=True),
        breaks=("mechanism:classic-rr", "mechanism:debiased-rr", "mechanism:laplace"),
    ),
    Mutant(
        "xu-debiasing-removed",
        "debiased RR releases the classic mean ỹ̄ (the M-estimator becomes the "
        "classic-RR MLE, docs/xu.md, Mechanisms and estimators; Errata and modes (A7))",
        (ORACLE, FIG2, FIG3, FIG6, FLOOR),
        replaced_release("debiased_rr", rr_not_debiased),
        breaks=("mechanism:debiased-rr",),
    ),
    Mutant(
        "xu-laplace-sensitivity-2",
        "Laplace noise of scale 2/ε (sensitivity 2: answers coded ±1; docs/xu.md, Errata and modes (A6))",
        (ORACLE,),
        replaced_release("laplace", laplace_scaled(2.0)),
        breaks=("mechanism:laplace",),
    ),
    Mutant(
        "xu-lambda-paper-rule",
        "λ = G/L replaced by the literal (e^ε+1)²/((e^ε−1)L) of the paper's text (errata A4)",
        (LAMBDA, FIG2),
        ridge_rule_as("paper"),
        breaks=("estimator:ridge-m-estimator",),
    ),
    Mutant(
        "xu-lambda-rule-ignored",
        "the mode axis (λ rule) ignored: λ = G/L for the literal rule too",
        (LAMBDA,),
        ridge_rule_as("g_over_l"),
        breaks=("estimator:ridge-m-estimator",),
    ),
    Mutant(
        "xu-classic-rr-flips-at-2eps",
        "classic RR keeps answers w.p. e^{2ε}/(1+e^{2ε}) (ε doubled, e.g. by a "
        "±1 coding), reported at ε",
        (ORACLE, FLOOR),
        replaced_release("classic_rr", classic_flips(2.0)),
        breaks=("mechanism:classic-rr",),
    ),
    # a noise variance off by 10% on one mechanism alone (docs/xu.md, Mutants and level checks)
    Mutant(
        "xu-laplace-variance-1.1",
        "Laplace noise of scale √1.1/ε: its variance × 1.1",
        (ORACLE,),
        replaced_release("laplace", laplace_scaled(VARIANCE_ERROR**0.5)),
        breaks=("mechanism:laplace",),
    ),
    Mutant(
        "xu-debiased-rr-variance-1.1",
        "debiased RR flipped and debiased at the ε′ whose excess variance "
        "e^ε′/(e^ε′−1)² is 1.1× that at ε",
        (ORACLE,),
        replaced_release("debiased_rr", rr_variance_scaled(VARIANCE_ERROR, debiased=True)),
        breaks=("mechanism:debiased-rr",),
    ),
    Mutant(
        "xu-classic-rr-variance-1.1",
        "classic RR flipped at the same ε′ (the debiased release's noise "
        "variance × 1.1), reported at ε",
        (ORACLE,),
        replaced_release("classic_rr", rr_variance_scaled(VARIANCE_ERROR, debiased=False)),
        breaks=("mechanism:classic-rr",),
    ),
    Mutant(
        "xu-schemes-swapped",
        "the adaptive schemes log(mL)/√(mL) and 1/(√(mL)·log(mL)) swapped, as the "
        "paper's text swaps them (docs/xu.md, Errata and modes (A8))",
        (FIG3,),
        schemes_swapped,
    ),
]

# every mutant of the paper: the release's and estimator's above, then the calibration
# experiments' (their definitions live beside the closed forms they break, :mod:`.figures.design`)
MUTANTS = [*RELEASE_MUTANTS, *design.MUTANTS]
