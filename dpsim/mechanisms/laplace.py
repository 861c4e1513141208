"""The Laplace mechanism's noise.

Laplace(b) has density (1/(2b))·exp(−|x|/b), variance 2b² (cai §2, Lemma B.3).
A scale of 0 (ε = ∞) gives exactly zero noise.
"""

import jax
import jax.numpy as jnp

from dpsim.validate import require


def laplace_noise(key: jax.Array, scale, shape) -> jax.Array:
    """``scale`` × i.i.d. standard Laplace draws of the given shape (float64).

    Raises ValueError for a concrete negative or NaN scale (a traced one is not checked)."""
    require("scale", scale, lambda b: b >= 0, "must be ≥ 0")
    return jnp.asarray(scale, jnp.float64) * jax.random.laplace(key, shape, dtype=jnp.float64)
