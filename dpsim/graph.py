"""Connectivity of the comparison digraph.

The unpenalised BTL MLE exists and is unique up to a common shift iff for every split of
the items into two non-empty groups some item of each group beat some item of the other
(Zermelo 1929; Ford 1957), i.e. iff the digraph with an arc i → j whenever W_ij > 0 is
strongly connected (docs/cai.md, Errata and modes (E17)). The same condition makes the Rank-Centrality chain
(docs/cai.md, Mechanisms and estimators) irreducible, so its stationary distribution is unique.

Graph reachability is used by estimators (both conditions above) and by mechanisms (a
sparsification graph is redrawn until connected, :mod:`dpsim.mechanisms.sparsify`), so it
sits below both.
"""

import jax
import jax.numpy as jnp


def reachable_from(adjacency, source: int = 0):
    """Boolean vector of the nodes reachable from ``source`` along arcs of ``adjacency``.

    A frontier iteration r ← r ∨ (Aᵀ r > 0), run to its fixed point (at most n − 1 steps;
    each step is one matrix–vector product, O(n²)).
    """
    n = adjacency.shape[0]
    a = adjacency.astype(jnp.float64)
    start = jnp.zeros((n,), bool).at[source].set(True)

    def cond(state):
        reached, changed, it = state
        return changed & (it < n)

    def body(state):
        reached, _, it = state
        new = reached | ((a.T @ reached.astype(jnp.float64)) > 0)
        return new, jnp.any(new != reached), it + 1

    reached, _, _ = jax.lax.while_loop(cond, body, (start, jnp.asarray(True), jnp.asarray(0)))
    return reached


def strongly_connected(W):
    """True iff the win digraph (i → j when W_ij > 0) is strongly connected: every item is
    reachable from item 0 along "beat" arcs and along reversed arcs."""
    arcs = W > 0
    return jnp.all(reachable_from(arcs)) & jnp.all(reachable_from(arcs.T))
