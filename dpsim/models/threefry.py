"""The Threefry-2x32 hash of JAX's default PRNG, written out for large draws.

Threefry-2x32 with 20 rounds (Salmon, Moraes, Dror, Shaw 2011, "Parallel random numbers:
as easy as 1, 2, 3", the Random123 library; the hash of JAX's ``threefry2x32`` keys). With
``jax_threefry_partitionable`` (JAX's default) ``jax.random.bits(key, shape, uint32)``
gives the element at flat index c the word y0 ⊕ y1 of threefry2x32(key, (0, c)):
:func:`random_bits` is that, value for value.

Why not ``jax.random.bits``: on CPU, JAX lowers the hash as a 5-step loop whose state holds
the key words broadcast to the draw's shape and rotates them each step, so XLA copies
three (n, n) arrays per step; here the key words stay scalars and the 20 rounds are
unrolled into one fused kernel that writes each word once.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
KEY_PARITY = 0x1BD11BDA


def _rotate_left(x, bits: int):
    return (x << jnp.uint32(bits)) | (x >> jnp.uint32(32 - bits))


def threefry2x32(key_words: jax.Array, x0: jax.Array, x1: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Threefry-2x32-20 of the counters (x0, x1) under one key.

    Args:
        key_words: (2,) uint32, the key (``jax.random.key_data`` of a threefry key).
        x0, x1: uint32 counter words, arrays of one shape.
    Returns:
        (y0, y1), uint32 arrays of that shape.
    """
    k0, k1 = key_words[0], key_words[1]
    keys = (k0, k1, k0 ^ k1 ^ jnp.uint32(KEY_PARITY))
    x0, x1 = x0 + keys[0], x1 + keys[1]
    for step in range(5):  # 5 × 4 rounds, a key injection after each 4
        for bits in ROTATIONS[step % 2]:
            x0 = x0 + x1
            x1 = _rotate_left(x1, bits) ^ x0
        x0 = x0 + keys[(step + 1) % 3]
        x1 = x1 + keys[(step + 2) % 3] + jnp.uint32(step + 1)
    return x0, x1


def default_threefry(key: jax.Array) -> bool:
    """Whether ``key`` is a threefry2x32 key with partitionable draws (JAX's defaults): the
    layout :func:`counter_bits` and :func:`random_bits` reproduce."""
    return str(jax.random.key_impl(key)) == "threefry2x32" and bool(
        jax.config.jax_threefry_partitionable
    )


def _hashed(key: jax.Array, counter: jax.Array) -> jax.Array:
    y0, y1 = threefry2x32(jax.random.key_data(key), jnp.zeros_like(counter), counter)
    return y0 ^ y1


def requiredefault_threefry(key: jax.Array) -> None:
    """Raise ValueError unless ``key`` is a threefry2x32 key and draws are partitionable
    (JAX's defaults), the layout :func:`random_bits` reproduces."""
    if not default_threefry(key):
        raise ValueError(
            "dpsim's threefry draws need JAX's default threefry2x32 keys with "
            "jax_threefry_partitionable"
        )


def counter_bits(key: jax.Array, counter: jax.Array) -> jax.Array:
    """y0 ⊕ y1 of threefry2x32(key, (0, counter)): the bits ``jax.random.bits`` gives the
    element at flat index ``counter`` (uint32, any shape; traceable)."""
    requiredefault_threefry(key)
    return _hashed(key, jnp.asarray(counter, jnp.uint32))


def random_bits(key: jax.Array, shape: tuple) -> jax.Array:
    """``jax.random.bits(key, shape, jnp.uint32)``, value for value (module docstring). Other
    key implementations, other threefry layouts and draws of 2³² elements or more (64-bit
    counters) are left to ``jax.random.bits``. Returns uint32 of ``shape``."""
    shape = tuple(int(d) for d in shape)
    size = math.prod(shape)
    if size >= 2**32 or not default_threefry(key):
        return jax.random.bits(key, shape, jnp.uint32)
    return _hashed(key, jnp.arange(size, dtype=jnp.uint32).reshape(shape))
