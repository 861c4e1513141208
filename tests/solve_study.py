"""A study file for tests/engine/test_solve.py: Bernoulli outcomes whose rate is known in closed form,
p(x) = logistic(SLOPE · log(x / x0)), so the root of p(x) = b is x0 · (b / (1 − b))^(1/SLOPE).

``solve-data``: x is the data axis ``gap``, x0 the data axis ``p`` (each configuration's own
root); ``solve-analysis``: x is the analysis axis ``eps`` (one uniform draw per lane, shared by
every ε: common random numbers), x0 again ``p``. Used by path (``dpsim solve
tests/solve_study.py:solve-data``) and imported."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from dpsim.engine import Experiment, Method

SLOPE = 2.0


def true_root(x0: float, b: float) -> float:
    """The x where logistic(SLOPE · log(x / x0)) = b."""
    return x0 * (b / (1.0 - b)) ** (1.0 / SLOPE)


def rate(x, x0):
    return jax.nn.sigmoid(SLOPE * jnp.log(x / x0))


def generate(key, shape, truth, data):
    return {"u": jax.random.uniform(key)}


def hit_at_gap(key, ctx):
    return {"hit": (ctx.sample["u"] < rate(ctx.data["gap"], ctx.data["p"])).astype(jnp.float64)}


def hit_at_eps(key, ctx):
    return {"hit": (ctx.sample["u"] < rate(ctx.analysis["eps"], ctx.data["p"])).astype(jnp.float64)}


DATA = Experiment(
    name="solve-data",
    title="Bernoulli rate logistic(2 log(gap/p))",
    axes={"n_items": [2], "p": [0.25, 0.5], "gap": [0.05, 4.0], "eps": [1.0]},
    shape_axes=("n_items",),
    analysis_axes=("eps",),
    truth=lambda key, shape: {},
    generate=generate,
    methods={"bernoulli": Method(hit_at_gap, ("hit",))},
    reps=10,
)

ANALYSIS = Experiment(
    name="solve-analysis",
    title="Bernoulli rate logistic(2 log(eps/p))",
    axes={"n_items": [2], "p": [0.25, 0.5], "eps": [0.05, 4.0, math.inf]},
    shape_axes=("n_items",),
    analysis_axes=("eps",),
    truth=lambda key, shape: {},
    generate=generate,
    methods={"bernoulli": Method(hit_at_eps, ("hit",))},
    reps=10,
)


def hit_at_n(key, ctx):
    return {
        "hit": (ctx.sample["u"] < rate(ctx.shape["n_items"], 40.0 * ctx.data["p"])).astype(
            jnp.float64
        )
    }


SHAPE = Experiment(
    name="solve-shape",
    title="Bernoulli rate logistic(2 log(n/(40 p))) against the shape axis n",
    axes={"n_items": [4, 200], "p": [0.5], "eps": [1.0]},
    shape_axes=("n_items",),
    analysis_axes=("eps",),
    truth=lambda key, shape: {},
    generate=generate,
    methods={"bernoulli": Method(hit_at_n, ("hit",))},
    reps=10,
)
