"""dpsim.models.threefry against JAX's own threefry draws and the Random123 known answers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpsim.models.threefry import counter_bits, random_bits, threefry2x32


@pytest.mark.parametrize(
    "key_words, counter, expected",
    [
        # Random123's kat_vectors for threefry2x32_20 (also JAX's tests/random_test.py).
        ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
        ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
        ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
    ],
)
def test_threefry2x32_known_answers(key_words, counter, expected):
    words = jnp.asarray(key_words, jnp.uint32)
    y0, y1 = threefry2x32(
        words, jnp.asarray([counter[0]], jnp.uint32), jnp.asarray([counter[1]], jnp.uint32)
    )
    assert (int(y0[0]), int(y1[0])) == expected


@pytest.mark.parametrize("shape", [(1,), (7,), (300,), (13, 17), (2, 3, 5)])
@pytest.mark.parametrize("seed", [0, 12345])
def test_random_bits_equal_jax_random_bits(shape, seed):
    key = jax.random.fold_in(jax.random.key(seed), 3)
    want = np.asarray(jax.random.bits(key, shape, jnp.uint32))
    np.testing.assert_array_equal(np.asarray(random_bits(key, shape)), want)
    np.testing.assert_array_equal(
        np.asarray(jax.jit(random_bits, static_argnums=1)(key, shape)), want
    )


def test_counter_bits_under_vmap_equal_per_key_draws():
    keys = jax.random.split(jax.random.key(9), 4)
    got = jax.vmap(lambda k: counter_bits(k, jnp.arange(50, dtype=jnp.uint32)))(keys)
    for row, key in zip(np.asarray(got), keys):
        np.testing.assert_array_equal(row, np.asarray(jax.random.bits(key, (50,), jnp.uint32)))


def test_counter_bits_refuses_other_key_implementations_and_random_bits_defers_to_jax():
    key = jax.random.key(0, impl="rbg")
    with pytest.raises(ValueError, match="threefry2x32"):
        counter_bits(key, jnp.arange(3, dtype=jnp.uint32))
    np.testing.assert_array_equal(
        np.asarray(random_bits(key, (4, 5))), np.asarray(jax.random.bits(key, (4, 5), jnp.uint32))
    )


@pytest.mark.parametrize("shape", [(), (0,), (3, 0)])
def test_random_bits_of_empty_and_scalar_shapes(shape):
    key = jax.random.key(2)
    np.testing.assert_array_equal(
        np.asarray(random_bits(key, shape)), np.asarray(jax.random.bits(key, shape, jnp.uint32))
    )
