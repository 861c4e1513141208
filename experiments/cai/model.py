"""cai's model (docs/cai.md, Model): BTL comparisons of n items, their θ* designs and generators.

* **edge DP** (cai §2.1, §4.1): one comparison per edge of G(n, p), θ* of docs/cai.md, Model (top
  k = round(n/4) items last, centred) drawn once per shape point; several n share one compiled
  program (``PADDING``; arrays at the bucket's ``capacity``, the padding masked everywhere);
* **individual DP** (cai §3.1, §4.2): m users × L uniform pairs each, θ* (top k = n//4 items
  first, centred) redrawn every replicate.

Also the axis types, the working-set sizes (``lane_bytes``) and the symbols and value labels
the figures share.
"""

from __future__ import annotations

import jax

from dpsim.engine import Padding, UsageError, axes
from dpsim.models.btl import MAX_FLAT_ITEMS
from dpsim.models import (
    get_link,
    real_items,
    sample_er_graph,
    sample_user_comparisons,
    theta_cai_design,
    top_k_size,
    true_top_k_mask,
)


# ---------------------------------------------------------------------------------------
# Edge DP (cai §2.1; docs/cai.md, Model)
# ---------------------------------------------------------------------------------------
def resolve_k(shape: dict, default_k) -> dict:
    """Fill k = default_k(n) when k is 'auto'; check k ∈ [1, n − 1]. An automatic k that
    falls outside (small n) is reported with its rule, ``default_k.__doc__``'s first line."""
    n = shape["n_items"]
    if shape.get("k", "auto") == "auto":
        k = default_k(n)
        if not 1 <= k <= n - 1:
            rule = (default_k.__doc__ or "the paper's rule").strip().splitlines()[0].rstrip(".")
            raise UsageError(
                f"n_items={n} is too small for the automatic top-k size ({rule}: k = {k}); "
                f"set k explicitly (--set k=1) or use more items"
            )
        return {**shape, "k": k}
    k = shape["k"]
    if not 1 <= k <= n - 1:
        raise UsageError(f"k={k} must lie in [1, n_items − 1] = [1, {n - 1}] for n_items={n}")
    return {**shape, "k": k}


def resolve_k_and_link(shape: dict, default_k) -> dict:
    """:func:`resolve_k`, and check the link name."""
    try:
        get_link(shape["link"])
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return resolve_k(shape, default_k)


MAX_ITEMS = MAX_FLAT_ITEMS  # the padded draw's flat indices i·n + j are 32-bit (dpsim.models.btl)


def resolve_shape(shape: dict) -> dict:
    """Edge DP: k = round(n/4) (docs/cai.md, Model, R's round-half-even) when 'auto'; n ≤ 65536."""
    if shape["n_items"] > MAX_ITEMS:
        raise UsageError(
            f"n_items={shape['n_items']} is more than the edge-DP sampler's {MAX_ITEMS} items"
        )
    return resolve_k_and_link(shape, top_k_size)


PADDING = Padding("n_items", traced=("k",), capacity="capacity")


def capacity(shape) -> int:
    """The static length of the program's arrays: the bucket's capacity (PADDING), else n."""
    return shape.get(PADDING.capacity, shape["n_items"])


def real(shape):
    """(capacity,) bool mask of the real items (all True without padding)."""
    return real_items(capacity(shape), shape["n_items"])


def truth(key, shape):
    """θ* of docs/cai.md, Model (top k items last, centred) and its top-k mask; fixed per shape point.
    Padded to the capacity with zeros (never in the top k)."""
    theta = theta_cai_design(key, shape["n_items"], k=shape["k"], capacity=capacity(shape))
    return {"theta": theta, "top_k": true_top_k_mask(theta, shape["k"], real(shape))}


def generate(key, shape, truth, data):
    """One comparison per edge of G(n, p), outcomes from the chosen link (cai §2.1):
    {"W": win counts, "M": W + Wᵀ, the graph} (:func:`dpsim.models.sample_er_graph`; the fits
    take M so that XLA does not recompute the draw to transpose W). Both are 0 in the padding
    rows and columns."""
    W, M = sample_er_graph(
        key, truth["theta"], data["p"], get_link(shape["link"]), n_items=shape["n_items"]
    )
    return {"W": W, "M": M}


AXIS_TYPES = {
    "c0": axes.positive("ridge constant c0 of γ = max(4κ2/ε, c0√(np log n)) (cai Thm 2.1)")
}


def lane_bytes(shape):
    """Working set of one replicate, counted as one (n, n) float64 matrix, W (n at the capacity
    when padded). The sample's M = W + Wᵀ and a fit's curvature are more such matrices, left
    out as batching's bound says (``dpsim.engine.execution.batching``): the accelerator's memory
    guard reads XLA's own buffer sizes."""
    return 8 * shape["n_items"] ** 2


SYMBOLS = {
    "n_items": "$n$",
    "n_users": "$m$",
    "per_user": "$L$",
    "p": "$p$",
    "eps": "$\\epsilon$",
    "c0": "$c_0$",
    "k": "$k$",
    "gap": "$\\Delta$",
}
# what the figures write for the named values of the axes (FigureSpec.value_labels)
VALUE_LABELS = {
    "mode": {
        "strict": "Laplace($2L/\\epsilon$) noise, $\\epsilon$-DP",
        "paper": "Laplace($L/\\epsilon$) noise as published (only $2\\epsilon$-DP)",
    },
    "unit": {"edge": "edge DP", "individual": "individual DP"},
    "dataset": {"cems": "CEMS", "immigration": "Immigration"},
}


# ---------------------------------------------------------------------------------------
# Individual DP (cai §3.1; docs/cai.md, Model)
# ---------------------------------------------------------------------------------------
def individual_top_k_size(n_items: int) -> int:
    """k = n//4, the individual-DP code's top-k size (docs/cai.md, Model; Errata and modes (E5))."""
    return n_items // 4


MODE = axes.choice(
    "strict",
    "paper",
    doc="Algorithm 3 noise: strict Laplace(2L/ε), ε-DP; paper "
    "Laplace(L/ε), as published, only 2ε-DP (docs/cai.md, Errata and modes (E3))",
)


def individual_resolve_shape(shape: dict) -> dict:
    """Fill k = n//4 when 'auto'; check k ∈ [1, n − 1] and the link."""
    return resolve_k_and_link(shape, individual_top_k_size)


def individual_truth(key, shape):
    """Nothing fixed per shape point: θ* is redrawn every replicate (cai §4.2)."""
    return {}


def individual_generate(key, shape, truth, data):
    """θ* of docs/cai.md, Model (top k first, centred), redrawn per replicate, and the aggregated W of
    m users × L uniform pairs (cai §3.1), drawn as counts."""
    k_theta, k_data = jax.random.split(key)
    theta = theta_cai_design(k_theta, shape["n_items"], k=shape["k"], top_first=True)
    W = sample_user_comparisons(
        k_data, theta, data["n_users"], data["per_user"], get_link(shape["link"])
    )
    return {"W": W, "theta": theta, "top_k": true_top_k_mask(theta, shape["k"])}


def individual_lane_bytes(shape):
    return 8 * shape["n_items"] ** 2 * 8
