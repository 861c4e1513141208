"""A toy experiment that belongs to no paper, for testing the engine's seams.

BTL comparisons on G(n, p) with θ* evenly spaced over a width ``spread`` (a new data axis);
the counts are privatised by a mechanism named on a string analysis axis (``mechanism`` =
laplace or gaussian), whose noise scale is derived on the host from (ε, δ); methods:
``borda`` (noisy win counts, top k: no solver) and ``mle`` (ridge-penalised BTL MLE on the
raw comparisons, a solver with diagnostics; its key breaks top-k ties).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from dpsim.estimators import penalised_mle, top_k_mask
from dpsim.engine import Derived, Experiment, Tuning, Method, solver_diagnostics
from dpsim.engine.definition import axes
from dpsim.metrics import estimation_metrics, topk_metrics
from dpsim.models import sample_er_comparisons, true_top_k_mask, win_counts

K = 3


def noise_scale(point: dict) -> dict:
    """Host-side: the noise scale of the chosen mechanism at (ε, δ) (sensitivity 2 in ℓ1 and
    √2 in ℓ2 for one flipped comparison): Laplace 2/ε; Gaussian √(2 ln(1.25/δ))·√2/ε."""
    eps = point["eps"]
    if math.isinf(eps):
        return {"noise_scale": 0.0}
    if point["mechanism"] == "laplace":
        return {"noise_scale": 2.0 / eps}
    return {"noise_scale": math.sqrt(2 * math.log(1.25 / point["delta"])) * math.sqrt(2.0) / eps}


def generate(key, shape, truth, data):
    n = shape["n_items"]
    theta = data["spread"] * (jnp.arange(n) / (n - 1) - 0.5)
    return {"W": sample_er_comparisons(key, theta, data["p"]), "theta": theta}


def borda(key, ctx):
    k_noise, k_tie = jax.random.split(key)
    counts = win_counts(ctx.sample["W"])
    if ctx.analysis["mechanism"] == "laplace":  # a static (string) analysis value
        noise = jax.random.laplace(k_noise, counts.shape)
    else:
        noise = jax.random.normal(k_noise, counts.shape)
    noisy = counts + ctx.analysis["noise_scale"] * noise
    return topk_metrics(top_k_mask(k_tie, noisy, K), true_top_k_mask(ctx.sample["theta"], K))


def mle(key, ctx):
    fit = penalised_mle(ctx.sample["W"], 1.0)
    theta = ctx.sample["theta"]
    return {
        **estimation_metrics(fit.theta_centred, theta - jnp.mean(theta)),
        **topk_metrics(top_k_mask(key, fit.theta, K, tie_tol=1e-9), true_top_k_mask(theta, K)),
        **fit.diagnostics(),
    }


TOPK = ("relative_hamming", "exact_recovery")
METHODS = {
    "borda": Method(borda, TOPK, doc="noisy win counts, top k (no solver)"),
    "mle": Method(
        mle,
        ("l2", "linf", "log_rel_l2", "log_rel_linf") + TOPK,
        solver_diagnostics(),
        doc="ridge-penalised BTL MLE (γ = 1) on the raw comparisons",
    ),
}
AXIS_TYPES = {
    "spread": axes.positive("width of θ* (evenly spaced)"),
    "mechanism": axes.choice("laplace", "gaussian", doc="noise added to the win counts"),
}
DEFAULT_GRID = {
    "n_items": [8, 12],
    "p": [0.5, 1.0],
    "spread": [2.0],
    "eps": [1.0, math.inf],
    "mechanism": ["laplace", "gaussian"],
    "delta": [1e-3],
}


def toy_experiment(name: str = "toy", reps: int = 6, methods=None, **grid) -> Experiment:
    """The toy experiment; ``grid`` overrides default axis values, ``methods`` the methods."""
    return Experiment(
        name=name,
        title="toy: noisy Borda vs ridge MLE",
        axes={**DEFAULT_GRID, **grid},
        shape_axes=("n_items",),
        analysis_axes=("eps", "mechanism", "delta"),
        truth=lambda key, shape: {},
        generate=generate,
        methods=methods or METHODS,
        reps=reps,
        axis_types=AXIS_TYPES,
        derived=(
            Derived(("noise_scale",), noise_scale, level="analysis", doc="mechanism noise scale"),
        ),
        tuning=Tuning(lane_bytes=lambda shape: 8 * shape["n_items"] ** 2),
    )
