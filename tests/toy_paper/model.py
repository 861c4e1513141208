"""toy's model: BTL comparisons of n items, one per edge of the Erdős–Rényi graph G(n, p),
with θ* evenly spaced in [−1, 1], and the true top-k set.

Replace this with your paper's model: its θ* designs (``truth``) and its generator
(``generate``), each a pure function of a key and the grid point, built from ``dpsim.models``.
"""

from __future__ import annotations

import jax.numpy as jnp

from dpsim.errors import UsageError
from dpsim.models import sample_er_comparisons, true_top_k_mask


def theta(n_items: int) -> jnp.ndarray:
    """θ*: n values evenly spaced in [−1, 1] (the last item the best). Returns: (n,) array."""
    return jnp.linspace(-1.0, 1.0, n_items)


def truth(key, shape) -> dict:
    """The θ* design of one shape point (fixed here, so the key is unused). Returns: {}."""
    return {}


def generate(key, shape, truth, data) -> dict:
    """One replicate: a comparison per edge of G(n, p) and the true top-k mask.

    Returns: {"W": (n, n) win counts, "top": (n,) bool mask of the true top k}."""
    th = theta(shape["n_items"])
    return {"W": sample_er_comparisons(key, th, data["p"]), "top": true_top_k_mask(th, shape["k"])}


def require_k_below_n(point: dict) -> None:
    """A top-k size must leave an item out: 1 ≤ k < n_items (UsageError naming k)."""
    if not 1 <= point["k"] < point["n_items"]:
        raise UsageError(f"k={point['k']} must be ≥ 1 and < n_items={point['n_items']}")
