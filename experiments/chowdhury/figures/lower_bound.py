"""chowdhury Theorem 3.2 on its own hypercube instance (chowdhury §3,
P13): the explicit Assouad constants of the proof (App. B.2).

For a fixed design X (n × d) and θ_e = Δe, e uniform on {±1}^d, the proof bounds the
hypercube-**average** risk of *any* estimator (the first step of Lemma B.4 bounds the maximum
by the average): for clear labels, Δ² = d/(4‖X‖_F²) gives E‖θ̂ − θ_e‖² ≥ d²/(16‖X‖_F²); for
ε-LDP labels (Duchi et al.'s contraction), Δ² = d/(8(e^ε − 1)²‖X‖_F²) gives
≥ d²/(32(e^ε − 1)²‖X‖_F²). Under local ε-label DP both hold (a private estimator is an
estimator), so each ε uses the instance of the larger bound (the private one for
(e^ε − 1)² < 1/2, i.e. ε < 0.535) and ε = ∞ the non-private one.

``chowdhury-lower-bound``: d = 5, n ∈ {1000, 10000}, x = ϕ¹ − ϕ⁰ ~ N(0, 2I) drawn per
replicate (the bound is conditional on X and is computed per replicate), ε ∈ {0.1, 0.25, 0.5,
1, ∞} (a data axis here: Δ, hence θ* and the labels, depend on ε), labels through RR at ε,
400 replicates. Methods:

* ``bayes``: the posterior mean of θ under the uniform prior on the 2^d vertices given the
  released labels (exact: the likelihood of every vertex, with the RR law p̃ of chowdhury eq. (2)).
  It minimises the hypercube-average risk, so it is the sharpest test of the bound's
  constants: a Bayes risk below the bound would mean the theorem (as read) is false.
* ``rr_local``: θ̂_RR on the released labels (the MLE at ε = ∞), B = 2√d.

Metrics: ``mse``, ``l2`` and ``lower_bound`` (the bound for this X and ε). The checks (one
per ε and method, at every n): mean MSE / mean bound ≥ 1, **report only**: a
lower bound holds for any estimator, even one that ignores privacy, so none of them can fail
under a plausible bug of the mechanisms (measured ratios ≥ 1.38 even without privacy).
"""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np

from dpsim.estimators.linear_btl import rr_debiased, rr_naive_log_probabilities
from dpsim.engine import (
    ColumnRatio,
    Claim,
    Every,
    Experiment,
    Tuning,
    FigureSpec,
    Method,
    Panel,
    UsageError,
    solver_diagnostics,
)
from dpsim.mechanisms.randomized_response import randomized_response
from dpsim.metrics import l2_error, squared_l2_error
from dpsim.models.linear_btl import sample_features, sample_labels

from .. import model

MAX_DIM = 10
LB_EPS = [0.1, 0.25, 0.5, 1.0, math.inf]
LB_N = [1000, 10_000]


def vertices(dim: int) -> np.ndarray:
    """The 2^d vertices of {±1}^d, (2^d, d)."""
    return np.asarray(list(itertools.product((-1.0, 1.0), repeat=dim)))


def instance(frob_sq, dim, eps):
    """(Δ², bound) of the larger of Thm 3.2's two explicit bounds for ‖X‖_F² = ``frob_sq``."""
    nonprivate = dim**2 / (16.0 * frob_sq)
    em1 = jnp.expm1(jnp.asarray(eps, jnp.float64))
    private = dim**2 / (32.0 * em1**2 * frob_sq)
    use_private = private > nonprivate
    delta_sq = jnp.where(use_private, dim / (8.0 * em1**2 * frob_sq), dim / (4.0 * frob_sq))
    return delta_sq, jnp.maximum(private, nonprivate)


def lb_truth(key, shape):
    """The hypercube vertex e ∈ {±1}^d of one replicate (uniform)."""
    e = jnp.where(jax.random.bernoulli(key, 0.5, (shape["dim"],)), 1.0, -1.0)
    return {"e": e}


def lb_generate(key, shape, truth, data):
    """X, then θ* = Δe with Δ of the instance at ε, labels from the BTL model, released through
    RR at ε (ε = ∞: clear)."""
    k_x, k_y, k_rr = jax.random.split(key, 3)
    x = sample_features(k_x, shape["n_samples"], shape["dim"], shape["features"])
    delta_sq, bound = instance(jnp.sum(x * x), shape["dim"], data["eps"])
    theta = jnp.sqrt(delta_sq) * truth["e"]
    y = sample_labels(k_y, x, theta)
    return {
        "x": x,
        "theta": theta,
        "delta": jnp.sqrt(delta_sq),
        "bound": bound,
        "y_tilde": randomized_response(k_rr, y, data["eps"]),
    }


def _row(theta_hat, s) -> dict:
    mse = squared_l2_error(theta_hat, s["theta"])
    return {
        "mse": mse,
        "l2": l2_error(theta_hat, s["theta"]),
        "lower_bound": s["bound"],
        "risk_ratio": mse / s["bound"],
    }


def bayes_fn(key, ctx):
    """Posterior mean of θ_e given the released labels (uniform prior on the vertices)."""
    s = ctx.sample
    corners = jnp.asarray(vertices(ctx.shape["dim"]))
    z = s["x"] @ (s["delta"] * corners.T)  # (n, 2^d)
    log_p1, log_p0 = rr_naive_log_probabilities(z, ctx.data["eps"])
    y = s["y_tilde"][:, None]
    loglik = jnp.sum(y * log_p1 + (1.0 - y) * log_p0, axis=0)
    weights = jax.nn.softmax(loglik)
    theta_hat = s["delta"] * (weights @ corners)
    return _row(theta_hat, s)


def rr_fn(key, ctx):
    """θ̂_RR on the released labels (the MLE at ε = ∞), B = 2√d."""
    s = ctx.sample
    fit = rr_debiased(s["x"], s["y_tilde"], ctx.data["eps"], ctx.shape["radius"])
    return {**_row(fit.theta, s), **fit.solver_diagnostics()}


LB_METRICS = ("mse", "l2", "lower_bound", "risk_ratio")
METHODS = {
    "bayes": Method(
        bayes_fn,
        LB_METRICS,
        label="Bayes posterior mean",
        doc="posterior mean under the uniform hypercube prior (minimises the average risk)",
    ),
    "rr_local": Method(
        rr_fn,
        LB_METRICS,
        solver_diagnostics(),
        label="θ̂_RR / MLE",
        doc="θ̂_RR on the released labels (the MLE at ε = ∞)",
    ),
}


def validate_dim(point: dict) -> None:
    if point["dim"] > MAX_DIM:
        raise UsageError(
            f"dim={point['dim']} is too large for chowdhury-lower-bound: the Bayes estimator "
            f"enumerates the 2^d hypercube vertices (dim ≤ {MAX_DIM})"
        )


LOWER_BOUND = Experiment(
    name="chowdhury-lower-bound",
    title="Thm 3.2's explicit ℓ2 lower bound on its hypercube instance (Assouad), clear and RR labels",
    axes={"dim": [5], "n_samples": LB_N, "features": ["difference"], "eps": LB_EPS},
    shape_axes=("dim", "n_samples", "features"),
    analysis_axes=(),
    truth=lb_truth,
    generate=lb_generate,
    methods=METHODS,
    reps=400,
    truth_per_replicate=True,
    figure=FigureSpec(
        x="eps",
        curve="n_samples",
        xlabel="$\\epsilon$",
        curve_label="$n$",
        logx=True,
        panels=tuple(
            Panel(
                "risk_ratio", m, "$\\|\\hat\\theta-\\theta_e\\|^2$ / bound", title=METHODS[m].label
            )
            for m in METHODS
        ),
        title="chowdhury Thm 3.2 on its hypercube instance (P13): risk / lower bound",
        symbols=model.SYMBOLS,
        value_labels=model.VALUE_LABELS,
    ),
    axis_types=model.AXIS_TYPES,
    derived=(model.RADIUS,),
    validate_point=validate_dim,
    tuning=Tuning(
        lane_bytes=lambda shape: 8 * shape["n_samples"] * (2 ** shape["dim"] * 3 + 6 * shape["dim"])
    ),
    description="chowdhury §3; docs/chowdhury.md, Predictions (P13): achieved MSE ≥ d²/(16‖X‖_F²) and d²/(32(e^ε−1)²‖X‖_F²)",
)

EXPERIMENTS = [LOWER_BOUND]

CHECKS = [
    Claim(
        f"chowdhury-lower-bound-{method}-eps{eps:g}",
        LOWER_BOUND.name,
        ColumnRatio("mse", "lower_bound", method),
        (1.0, math.inf),
        over=Every("n_samples"),
        where={"eps": [eps]},
        report_only=True,
        description=f"P13 at ε = {eps:g}: mean MSE of {method} / Thm 3.2's explicit bound ≥ 1 at every n "
        f"(hypercube average). Report only: a lower bound holds for every estimator, a "
        f"non-private one included (ratios ≥ 1.38; the private estimators' margins are "
        f"64–2000×), so no plausible bug in the mechanisms can make it fail",
    )
    for method in METHODS
    for eps in LB_EPS
]
