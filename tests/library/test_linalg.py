"""dpsim.linalg: solves that stay unbatched under vmap on CPU, and the detector of batched
LAPACK calls that the runner uses to refuse deadlocking programs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from dpsim.linalg import batched_lapack_calls, solve


def systems(shape, n, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(size=(*shape, n, n)) + n * np.eye(n)
    b = rng.normal(size=(*shape, n))
    return a, b, np.linalg.solve(a, b[..., None])[..., 0]


def test_solve_matches_numpy_unbatched():
    a, b, x = systems((), 7)
    np.testing.assert_allclose(solve(a, b), x, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("how", ["vmap", "vmap-vmap", "lax.map-batch", "jit-vmap"])
def test_solve_matches_numpy_under_batching(how):
    a, b, x = systems((3, 4), 6)
    f = {
        "vmap": lambda a, b: jax.vmap(jax.vmap(solve))(a, b),
        "vmap-vmap": jax.vmap(jax.vmap(solve)),
        "lax.map-batch": lambda a, b: lax.map(
            lambda ab: jax.vmap(solve)(*ab), (a, b), batch_size=2
        ),
        "jit-vmap": jax.jit(jax.vmap(jax.vmap(solve))),
    }[how]
    np.testing.assert_allclose(f(a, b), x, rtol=1e-12, atol=1e-13)


def test_solve_broadcasts_an_unbatched_argument():
    a, b, _ = systems((5,), 4)
    out = jax.vmap(solve, in_axes=(0, None))(a, b[0])
    np.testing.assert_allclose(
        out, np.linalg.solve(a, np.broadcast_to(b[0], (5, 4))[..., None])[..., 0], rtol=1e-12
    )


def test_solve_rejects_bad_shapes():
    with pytest.raises(ValueError, match=r"\(3, 4\)"):
        solve(np.ones((3, 4)), np.ones(3))


def _lapack_hlo(fn, *args):
    return jax.jit(fn).lower(*args).compile().as_text()


def test_detector_finds_batched_lapack_and_not_dpsim_solve():
    a, b, _ = systems((8,), 5)
    raw = _lapack_hlo(jax.vmap(lambda a, b: jnp.linalg.solve(a, b[:, None])[:, 0]), a, b)
    found = batched_lapack_calls(raw)
    assert found and all("[8," in f for f in found) and any("getrf" in f for f in found)
    assert batched_lapack_calls(_lapack_hlo(jax.vmap(solve), a, b)) == []
    assert batched_lapack_calls(_lapack_hlo(lambda a, b: jnp.linalg.solve(a[0], b[0]), a, b)) == []
    eigh = _lapack_hlo(lambda a: jnp.linalg.eigh(a)[0], a)
    assert any("syevd" in f for f in batched_lapack_calls(eigh))


# The deadlock itself, in a subprocess with a time limit and XLA:CPU's intra-op pool forced
# to 2 threads (PJRT_NPROC), as on a 2-core machine: two batched solves in one
# program, executed from two threads at once. With jnp.linalg.solve under vmap this
# program never returns (measured: jax 0.10.2, 2 cores); with dpsim.linalg.solve it must.
SCRIPT = textwrap.dedent("""
    import sys
    from concurrent.futures import ThreadPoolExecutor
    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    from dpsim.linalg import solve
    As = [jnp.eye(40) * 40 + jax.random.uniform(jax.random.key(i), (64, 40, 40)) for i in range(2)]
    b = jnp.ones((64, 40))
    f = jax.jit(lambda As, b: [jax.vmap(solve)(A, b) for A in As]).lower(As, b).compile()
    pool = ThreadPoolExecutor(2)
    for _ in range(50):
        list(pool.map(lambda _: jax.device_get(f(As, b)), range(2)))
    print("done")
""")


def test_two_batched_solves_in_two_threads_do_not_deadlock():
    env = {**os.environ, "PJRT_NPROC": "2"}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, env=env
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "done"
