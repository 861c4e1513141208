"""toy — a fifth paper that exists only for the tests: a paper package as an outside author
writes one, from dpsim's public API alone, registered by ONE entry-point line
(``toy = toy_paper`` in the ``dpsim.papers`` group; tests/conformance/test_conformance.py writes that line
into a ``toy_paper-0.0.dist-info`` for its tests). It has no test code of its own: the
conformance suite finds it like any installed paper and runs its bad-input cases, a smoke run,
its figures and its checks.

Its second experiment is deliberately not named after the paper (``noisy-borda-size``): a
paper's items are its own by registration, not by a name prefix (``dpsim list toy`` lists it).

The model: BTL comparisons of n items on G(n, p), θ* evenly spaced in [−1, 1]; the win counts
released with Laplace noise of scale 2/ε (one flipped comparison moves them by 2 in ℓ1), and
the top k of the noisy counts.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from dpsim.errors import UsageError
from dpsim.estimators import top_k_mask
from dpsim.engine import Derived, Experiment, Tuning, FigureSpec, Method, Panel, level_check, trend_check
from dpsim.metrics import topk_metrics
from dpsim.models import sample_er_comparisons, true_top_k_mask, win_counts

TITLE = "A toy paper: Laplace-noised win counts (tests only)"


def laplace_scale(point: dict) -> dict:
    """Host-side: the Laplace scale 2/ε of the released counts (0 at ε = ∞)."""
    return {"scale": 0.0 if math.isinf(point["eps"]) else 2.0 / point["eps"]}


def require_k_below_n(point: dict) -> None:
    """A top-k size must leave an item out: 1 ≤ k < n_items (UsageError naming k)."""
    if point.get("k", 1) >= point["n_items"]:
        raise UsageError(f"k={point['k']} must be < n_items={point['n_items']}")


def generate(key, shape, truth, data):
    """One comparison per edge of G(n, p) and the true top-k mask.

    Returns: {"W": (n, n) win counts, "top": (n,) bool mask of the true top k}."""
    theta = jnp.linspace(-1.0, 1.0, shape["n_items"])
    return {"W": sample_er_comparisons(key, theta, data["p"]), "top": true_top_k_mask(theta, shape.get("k", 2))}


def noisy_counts(key, ctx):
    """Win counts + Laplace(2/ε) noise; the top k with random tie-breaks. Metrics: top-k
    errors and the mean square of the released noise (its variance is 8/ε²)."""
    k_noise, k_tie = jax.random.split(key)
    counts = win_counts(ctx.sample["W"])
    noise = ctx.analysis["scale"] * jax.random.laplace(k_noise, counts.shape)
    mask = top_k_mask(k_tie, counts + noise, ctx.shape.get("k", 2))
    return {**topk_metrics(mask, ctx.sample["top"]), "noise_ms": jnp.mean(noise ** 2)}


def raw_counts(key, ctx):
    """The non-private reference: the top k of the raw win counts."""
    return topk_metrics(top_k_mask(key, win_counts(ctx.sample["W"]), ctx.shape.get("k", 2)), ctx.sample["top"])


TOPK = ("relative_hamming", "exact_recovery")
NOISY = Method(noisy_counts, TOPK + ("noise_ms",), label="noisy counts", doc="Laplace(2/ε) on the win counts")
SCALE = Derived(("scale",), laplace_scale, level="analysis", doc="Laplace scale 2/ε")

NOISE = Experiment(
    name="toy-noise", title="toy: noisy win counts against ε",
    axes={"n_items": [6], "p": [1.0], "eps": [0.5, 1.0, 2.0, math.inf]},
    shape_axes=("n_items",), analysis_axes=("eps",),
    truth=lambda key, shape: {}, generate=generate, methods={"noisy": NOISY}, reps=200,
    derived=(SCALE,),
    figure=FigureSpec(x="eps", curve="method", xlabel="$\\epsilon$", curve_label="method", logx=True,
                      panels=(Panel("relative_hamming", None, "relative Hamming error"),),
                      title="toy: top-k error against ε"),
    tuning=Tuning(lane_bytes=lambda shape: 8 * shape["n_items"] ** 2), description="a toy paper's experiment (tests/toy_paper)")

SIZE = Experiment(
    name="noisy-borda-size", title="toy: noisy and raw win counts against n",
    axes={"n_items": [6, 10], "k": [2], "p": [0.5, 1.0], "eps": [1.0]},
    shape_axes=("n_items", "k"), analysis_axes=("eps",),
    truth=lambda key, shape: {}, generate=generate, methods={"noisy": NOISY, "raw": Method(raw_counts, TOPK)},
    reps=100, derived=(SCALE,), validate_point=require_k_below_n,
    figure=FigureSpec(x="n_items", curve="method", xlabel="$n$", curve_label="method",
                      panels=(Panel("relative_hamming", None, "relative Hamming error", each=("p",)),),
                      title="toy: top-k error against n"),
    tuning=Tuning(lane_bytes=lambda shape: 8 * shape["n_items"] ** 2), description="a toy paper's experiment not named after its paper (tests/toy_paper)")

EXPERIMENTS = [NOISE, SIZE]
CHECKS = [
    level_check("toy-noise-variance", NOISE.name, "noise_ms", "noisy", lambda point: 8.0 / point["eps"] ** 2,
                0.8, 1.25, where={"eps": [0.5, 1.0, 2.0]}, at=("eps",), formula="8/ε²",
                description="the released noise has the variance of Laplace(2/ε)"),
    trend_check("toy-noise-error-falls-with-eps", NOISE.name, "relative_hamming", "noisy", "eps", -1,
                where={"eps": [0.5, 1.0, 2.0]}, log_y=False,
                description="the noisy top-k error decreases in ε"),
]
AUDITS: list = []
