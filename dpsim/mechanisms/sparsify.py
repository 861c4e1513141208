"""Sparsification: the Erdős–Rényi item graph on which the private chain is built
(nguyen §4.3, Algorithm 2; docs/nguyen.md, Errata and modes (Q5, A4)).

Only the counts Y_ij, Y_ji of edges {i, j} of G ~ ER(n_items, p₀) are queried and noised;
the others are set to 0. G does not depend on the data, so it costs no privacy and may be
redrawn: by default it is resampled until connected (a disconnected G makes the chain
reducible and the β̂ of a cut-off item arbitrary), at most ``max_tries`` times, and the
number of rejections is reported. ``connect=False`` is the authors' code (no check).

Validation: concrete inputs are checked and a bad one raises ``ValueError`` naming the value
(dpsim.validate); traced values (inside jit/vmap) pass unchecked.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from dpsim.graph import reachable_from
from dpsim.validate import require, require_int, require_probability

P0_RULES = ("code_synthetic", "code_real", "log", "fixed")
DEFAULT_MAX_TRIES = 100

__all__ = [
    "P0_RULES",
    "DEFAULT_MAX_TRIES",
    "sparsification_p0",
    "er_item_graph",
    "GraphDraw",
    "sparsification_graph",
    "dense_item_graph",
]


def sparsification_p0(
    n_items: int, rule: str = "code_real", c: float = 1.0, value: float | None = None
) -> float:
    """p₀ by one of the rules of A4 (host), capped at 1.

    ``"code_synthetic"``: 1.1·log₂(m)/m (the synthetic script, Fig. 1); ``"code_real"``:
    2·log₂(m)/m (the real-data script, Figs 2–3, SF1 "proposed"); ``"log"``: c·ln(m)/m (the
    paper's (1 + o(1)) log m/m, c > 1 for connectivity w.h.p.); ``"fixed"``: ``value``
    (SF1's 0.2–0.5).

    Args: n_items: m ≥ 2; rule: one of :data:`P0_RULES`; c: the "log" constant; value: the
    "fixed" p₀ ∈ (0, 1]. Returns: p₀ ∈ (0, 1].
    """
    require_int(n_items, "n_items", 2)
    if rule not in P0_RULES:
        raise ValueError(f"rule={rule!r} is not a p0 rule; choose one of {P0_RULES}")
    if rule == "fixed":
        if value is None:
            raise ValueError("rule='fixed' needs value=p0")
        require_probability(value, "p0")
        return float(value)
    require("c", c, lambda v: (v > 0) & (v < float("inf")), "must be a finite number > 0")
    m = float(n_items)
    raw = {
        "code_synthetic": 1.1 * math.log2(m) / m,
        "code_real": 2.0 * math.log2(m) / m,
        "log": c * math.log(m) / m,
    }[rule]
    return min(1.0, raw)


def dense_item_graph(n_items: int) -> jax.Array:
    """The complete graph (every ordered pair i ≠ j queried): (n_items, n_items) bool."""
    return ~jnp.eye(n_items, dtype=bool)


def er_item_graph(key, n_items: int, p0) -> jax.Array:
    """G ~ ER(n_items, p₀) (the authors' ``subsampl_graph``): each pair {i, j} is an edge
    with probability p₀, independently. Args: key; n_items ≥ 2 (static); p0 ∈ (0, 1]
    (traceable). Returns: (n_items, n_items) symmetric bool adjacency, diagonal False."""
    require_int(n_items, "n_items", 2)
    require_probability(p0, "p0")
    upper = jnp.triu(jax.random.uniform(key, (n_items, n_items)) < p0, k=1)
    return upper | upper.T


class GraphDraw(NamedTuple):
    """A sparsification graph and how it was drawn.

    Attributes:
        graph: (n_items, n_items) symmetric bool adjacency.
        connected: bool, G is connected.
        rejections: int, disconnected graphs drawn and discarded before it (0 when
            ``connect=False``).
    """

    graph: jax.Array
    connected: jax.Array
    rejections: jax.Array


def _connected(graph):
    return jnp.all(reachable_from(graph))


def sparsification_graph(
    key, n_items: int, p0, connect: bool = True, max_tries: int = DEFAULT_MAX_TRIES
) -> GraphDraw:
    """The item graph of the sparse private chain (nguyen §4.3, Algorithm 2): ER(n_items, p₀), redrawn
    (key folded with the try number) until connected, at most ``max_tries`` draws, when
    ``connect`` (default); one draw, unchecked, otherwise (the authors' code, docs/nguyen.md, Errata and modes (Q5)).

    Args: key; n_items ≥ 2 (static); p0 ∈ (0, 1] (traceable); connect, max_tries: static.
    Returns: :class:`GraphDraw` (``connected`` False when every try failed; the last
    draw is returned).
    """
    if not (isinstance(max_tries, int) and max_tries >= 1):
        raise ValueError(f"max_tries={max_tries!r} must be an integer ≥ 1")
    first = er_item_graph(jax.random.fold_in(key, 0), n_items, p0)
    if not connect:
        return GraphDraw(first, _connected(first), jnp.asarray(0))

    def cond(state):
        _, ok, tries = state
        return ~ok & (tries < max_tries)

    def body(state):
        _, _, tries = state
        graph = er_item_graph(jax.random.fold_in(key, tries), n_items, p0)
        return graph, _connected(graph), tries + 1

    graph, ok, tries = jax.lax.while_loop(cond, body, (first, _connected(first), jnp.asarray(1)))
    return GraphDraw(graph, ok, tries - 1)
