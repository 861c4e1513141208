"""toy's release and methods: the win counts released with Laplace noise of scale 2/ε (one
flipped comparison moves the count vector by 2 in ℓ1), and the top k of the released counts.

The release is drawn in ``privatise`` through ``dpsim.mechanisms`` (mechanisms own every
release); the methods read it as ``ctx.released`` and never draw noise themselves.
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from dpsim.engine import Derived, Method
from dpsim.estimators import top_k_mask
from dpsim.mechanisms.laplace import laplace_noise
from dpsim.metrics import topk_metrics
from dpsim.models import win_counts

SENSITIVITY = 2.0  # ℓ1 change of the win counts when one comparison flips
TOPK = ("relative_hamming", "exact_recovery")


def laplace_scale(point: dict) -> dict:
    """Host-side: the Laplace scale sensitivity/ε of the released counts (0 at ε = ∞)."""
    return {"scale": 0.0 if math.isinf(point["eps"]) else SENSITIVITY / point["eps"]}


SCALE = Derived(("scale",), laplace_scale, level="analysis", doc="Laplace scale 2/ε")


def privatise(key, ctx) -> dict:
    """The release: win counts + Laplace(2/ε) noise. Returns: {"counts": (n,), "noise": (n,)}."""
    counts = win_counts(ctx.sample["W"])
    noise = laplace_noise(key, ctx.analysis["scale"], counts.shape)
    return {"counts": counts + noise, "noise": noise}


def noisy_top_k(key, ctx) -> dict:
    """The top k of the released counts (random tie-breaks), its top-k errors, and the mean square
    of the released noise (its variance is 2·(2/ε)² = 8/ε²)."""
    mask = top_k_mask(key, ctx.released["counts"], ctx.shape["k"])
    return {
        **topk_metrics(mask, ctx.sample["top"]),
        "noise_ms": jnp.mean(ctx.released["noise"] ** 2),
    }


def raw_top_k(key, ctx) -> dict:
    """The non-private reference: the top k of the raw win counts."""
    return topk_metrics(
        top_k_mask(key, win_counts(ctx.sample["W"]), ctx.shape["k"]), ctx.sample["top"]
    )


NOISY = Method(
    noisy_top_k,
    TOPK + ("noise_ms",),
    label="noisy counts",
    doc="top k of Laplace(2/ε)-noised win counts",
)
RAW = Method(raw_top_k, TOPK, label="raw counts", doc="top k of the raw win counts (no privacy)")
METHODS = {"noisy": NOISY, "raw": RAW}
