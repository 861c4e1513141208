"""A study written outside dpsim: does Gaussian noise on the win counts rank the top k as well
as Laplace noise at the same privacy level, and how does the answer change with the spread
of the items' strengths?

Run it from any directory, without installing anything beyond dpsim:

    dpsim show examples/custom_study.py             # its axes, methods and expected run time
    dpsim run examples/custom_study.py --reps 50    # → runs/borda-noise/{parts, manifest.json, figure.*}
    dpsim run examples/custom_study.py --set noise=gaussian --set spread=1,2
    dpsim verify examples/custom_study.py           # its own checks
    dpsim verify examples/custom_study.py --mutants # ... and whether they catch a miscalibrated noise

It shows every seam a new study uses:

* a **new axis** of its own, ``spread`` (the range of θ*), declared with a validator;
* a **string axis**, ``noise`` ∈ {laplace, gaussian}, an analysis axis: both noises see the
  same comparisons (common random numbers);
* a **value derived on the host** before tracing, ``sigma``: the noise scale that makes the
  release (ε, δ)-DP, Laplace 2/ε or the analytic Gaussian √(2 ln(1.25/δ))·√2/ε (one flipped
  comparison moves the win counts by 2 in ℓ1 and √2 in ℓ2);
* a **method without a solver**, ``borda`` (noisy win counts, no convergence to report),
  beside one with a solver, ``mle`` (the ridge-penalised BTL MLE on the raw comparisons,
  whose ``converged``, ``iterations``, ``result`` code and ``grad_norm`` are stored);
* a figure in the layout of the papers and checks judged on the data it ran: a trend, and a
  level check that pins the noise's calibration to its closed form;
* **mutants**: plausible bugs (the noise scale halved or doubled) that ``--mutants`` shows
  the checks catch.
"""

import math

import jax
import jax.numpy as jnp

from dpsim.estimators import penalised_mle, top_k_mask
from dpsim.engine import (
    Derived,
    Experiment,
    Tuning,
    FigureSpec,
    Method,
    Panel,
    trend_check,
    axes,
    solver_diagnostics,
)
from dpsim.engine.judgement.checks import level_check
from dpsim.engine.judgement.mutants import Mutant, scaled_derived
from dpsim.metrics import topk_metrics
from dpsim.models import sample_er_comparisons, true_top_k_mask, win_counts

K = 5


def noise_scale(point: dict) -> dict:
    """Host-side: the noise scale of the chosen mechanism at (ε, δ)."""
    eps = point["eps"]
    if math.isinf(eps):
        return {"sigma": 0.0}
    if point["noise"] == "laplace":
        return {"sigma": 2.0 / eps}
    return {"sigma": math.sqrt(2.0 * math.log(1.25 / point["delta"])) * math.sqrt(2.0) / eps}


def generate(key, shape, truth, data):
    """One comparison per edge of G(n, p) under BTL, θ* evenly spaced over ``spread``."""
    n = shape["n_items"]
    theta = data["spread"] * (jnp.arange(n) / (n - 1) - 0.5)
    return {"W": sample_er_comparisons(key, theta, data["p"]), "top_k": true_top_k_mask(theta, K)}


def borda(key, ctx):
    """Win counts + noise of scale σ (Laplace or Gaussian), top k with random tie-break."""
    k_noise, k_tie = jax.random.split(key)
    counts = win_counts(ctx.sample["W"])
    if ctx.analysis["noise"] == "laplace":
        noise = jax.random.laplace(k_noise, counts.shape)
    else:
        noise = jax.random.normal(k_noise, counts.shape)
    released_noise = ctx.analysis["sigma"] * noise
    noisy = counts + released_noise
    return {
        **topk_metrics(top_k_mask(k_tie, noisy, K), ctx.sample["top_k"]),
        "noise_ms": jnp.mean(released_noise**2),
    }


def mle(key, ctx):
    """The non-private ridge-penalised MLE (γ = 1): a reference with a solver."""
    fit = penalised_mle(ctx.sample["W"], 1.0)
    mask = top_k_mask(key, fit.theta, K, tie_tol=1e-9)
    return {**topk_metrics(mask, ctx.sample["top_k"]), **fit.diagnostics()}


TOPK = ("relative_hamming", "exact_recovery")

STUDY = Experiment(
    name="borda-noise",
    title="Noisy Borda top-k: Laplace vs Gaussian noise on the win counts",
    axes={
        "n_items": [40],
        "p": [1.0],
        "spread": [6.0],
        "eps": [0.5, 1.0, 2.0, 4.0, math.inf],
        "noise": ["laplace", "gaussian"],
        "delta": [1e-5],
    },
    shape_axes=("n_items",),
    analysis_axes=("eps", "noise", "delta"),
    truth=lambda key, shape: {},
    generate=generate,
    methods={
        "borda": Method(
            borda,
            TOPK + ("noise_ms",),
            label="noisy Borda",
            doc="noisy win counts (no solver); noise_ms: mean square of the released noise",
        ),
        "mle": Method(
            mle,
            TOPK,
            solver_diagnostics(),
            label="MLE (non-private)",
            doc="ridge-penalised BTL MLE on the raw comparisons",
        ),
    },
    reps=100,
    axis_types={
        "spread": axes.positive("range of θ*, evenly spaced"),
        "noise": axes.choice("laplace", "gaussian", doc="noise added to the win counts"),
    },
    derived=(Derived(("sigma",), noise_scale, level="analysis", doc="noise scale for (ε, δ)-DP"),),
    figure=FigureSpec(
        x="eps",
        curve="noise",
        xlabel="$\\epsilon$",
        curve_label="noise",
        logx=True,
        panels=(
            Panel("relative_hamming", "borda", "relative Hamming error", title="noisy Borda"),
            Panel("exact_recovery", "borda", "P(exact top-k)", title="noisy Borda"),
        ),
        title="Noisy Borda top-k (custom study)",
        symbols={"n_items": "$n$", "spread": "spread", "delta": "$\\delta$"},
    ),
    tuning=Tuning(lane_bytes=lambda shape: 8 * shape["n_items"] ** 2),
    description="a study outside dpsim (examples/custom_study.py)",
)


def noise_variance(point: dict) -> float:
    """The variance the release must have, written from the mechanisms' definitions (not by
    calling ``noise_scale``, so a bug there cannot cancel out): Laplace(2/ε) has variance
    2·(2/ε)² = 8/ε²; the analytic Gaussian (ℓ2 sensitivity √2) has 2·2 ln(1.25/δ)/ε²."""
    if point["noise"] == "laplace":
        return 8.0 / point["eps"] ** 2
    return 4.0 * math.log(1.25 / point["delta"]) / point["eps"] ** 2


CHECKS = [
    # The level check that pins the calibration: with 40 counts × 100 replicates the mean
    # square of Laplace noise has a coefficient of variation √20/2/√4000 = 3.5% (7% at 95%),
    # Gaussian noise √2/√4000 = 2.2%: the region ±20% is the Monte-Carlo error with room,
    # and a noise scale off by 2 (variance × 4 or ¼) falls far outside.
    level_check(
        "borda-noise-variance",
        STUDY.name,
        "noise_ms",
        "borda",
        noise_variance,
        0.8,
        1.25,
        where={"eps": [0.5, 1.0, 2.0, 4.0]},
        at=("eps", "noise"),
        formula="Var of the mechanism",
        description="the released noise has the variance its (ε, δ) calibration requires, at every ε and noise",
    ),
    trend_check(
        "borda-noise-laplace-improves-with-eps",
        STUDY.name,
        "relative_hamming",
        "borda",
        "eps",
        -1,
        where={"noise": ["laplace"], "eps": [0.5, 1.0, 2.0, 4.0]},
        log_y=False,
        description="the Laplace-noised Borda top-k error decreases in ε (slope of the error, "
        "which can be 0, on log ε)",
    ),
]

# Plausible bugs the checks must catch: `dpsim verify examples/custom_study.py --mutants`
# re-runs the study under each and lists the checks that FAIL (the trend check alone kills
# neither: noisier or quieter, the error still falls with ε).
MUTANTS = [
    Mutant(
        "borda-noise-scale-halved",
        "noise scale σ × ½ (the release is only 2ε-DP)",
        (STUDY.name,),
        scaled_derived({"sigma": 0.5}),
    ),
    Mutant(
        "borda-noise-scale-doubled",
        "noise scale σ × 2 (a release at ε/2)",
        (STUDY.name,),
        scaled_derived({"sigma": 2.0}),
    ),
]
