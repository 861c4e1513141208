"""chowdhury's release experiments: each privacy mechanism's release alone, cheap enough to
re-run under every mutant; the level checks read on them are paper-wide (:mod:`..checks`).

**Experiment** ``chowdhury-krr-release``: the K-ary RR release of ``chowdhury-rates-k``
(same data and ``privatise`` stage; K ∈ {2, 4, 8}, ε ∈ {0.5, 1}, n = 5·10⁴) without the SGD
fits, 100 replicates: seconds, where re-running ``chowdhury-rates-k`` under a mutant takes
minutes. Its method ``krr_release`` reports the keep rate and the rate of one given wrong
label ((y + 1) mod K).

**Experiment** ``chowdhury-objpert-release``: the exact objective perturbation of
``chowdhury-rates-eps`` at n = 10³, ε = 1, 6000 cheap fits, so that a 10% error in Thm 5.2's σ²
FAILs its level check.
"""

from __future__ import annotations

import jax.numpy as jnp

from dpsim.engine import Experiment, Keys, Method

from .. import methods, model
from . import rates

# ---------------------------------------------------------------------------------------
# chowdhury-krr-release: the K-RR release alone (module docstring)
# ---------------------------------------------------------------------------------------
KRR_REPS = 100


def krr_release_fn(key, ctx):
    """Keep rate mean(ỹ = y) and the rate mean(ỹ = (y + 1) mod K) of the K-RR release."""
    y, y_tilde, k = ctx.sample["y"], ctx.released["y_tilde"], ctx.shape["n_actions"]
    return {
        "keep_rate": jnp.mean(jnp.asarray(y_tilde == y, jnp.float64)),
        "next_rate": jnp.mean(jnp.asarray(y_tilde == (y + 1) % k, jnp.float64)),
    }


KRR_RELEASE = Experiment(
    name="chowdhury-krr-release",
    title="K-ary RR release of the Plackett–Luce top-1 labels (eq. (12))",
    axes={
        "dim": [5],
        "n_samples": [rates.K_N],
        "n_actions": rates.K_GRID,
        **rates.THEORY,
        "eps": rates.K_EPS,
    },
    shape_axes=("dim", "n_samples", "n_actions", "design", "features"),
    analysis_axes=("eps",),
    truth=model.truth,
    generate=model.pl_generate,
    privatise=methods.privatise_krr,
    methods={
        "krr_release": Method(
            krr_release_fn,
            ("keep_rate", "next_rate"),
            label="K-RR release",
            doc="keep rate and one wrong label's rate of the K-RR labels",
        )
    },
    reps=KRR_REPS,
    axis_types=model.AXIS_TYPES,
    derived=(model.RADIUS,),
    truth_per_replicate=True,
    tuning=rates.RATES_K.tuning,
    keys=Keys(stream_names=model.STREAM_NAMES),
    description="chowdhury eq. (12), §4.4; docs/chowdhury.md, Predictions (P12): K-RR keep rate e^ε/(e^ε+K−1) and other-label rate 1/(e^ε+K−1), exactly",
)

# ---------------------------------------------------------------------------------------
# chowdhury-objpert-release: the exact objective perturbation alone, many cheap fits
# ---------------------------------------------------------------------------------------
OBJPERT_N = 1000  # small n: cheap exact fits; noise_sq is exact at any n (first-order condition)
OBJPERT_EPS = 1.0
OBJPERT_REPS = 6000  # se √(2/(4·6000)) = 0.0091: a 10% error in σ² lies ≥ 5.5 se outside the region

OBJPERT_RELEASE = rates.rates_experiment(
    "chowdhury-objpert-release",
    "Objective perturbation's noise level by the exact minimiser (n = 10³, ε = 1, 6000 fits)",
    {"n_samples": [OBJPERT_N], "eps": [OBJPERT_EPS]},
    None,
    "chowdhury Algorithm 2, Theorem 5.2; docs/chowdhury.md, Mutants and level checks: the noise ‖P_V w‖²/(rL²) the exact "
    "minimiser carries, at enough fits that a 10% error in Thm 5.2's σ² FAILs",
    methods={"objpert_central": methods.EXACT_METHODS["objpert_central"]},
    reps=OBJPERT_REPS,
)

EXPERIMENTS = [KRR_RELEASE, OBJPERT_RELEASE]
CHECKS = []  # the level checks on these experiments are paper-wide: checks.LEVEL_CHECKS
