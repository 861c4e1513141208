"""Dense linear algebra that is safe to ``vmap`` on the CPU backend.

**Why this module exists**. On XLA:CPU, jaxlib's LAPACK kernels
(``lapack_dgetrf_ffi``, ``lapack_dtrsm_ffi``, ``lapack_dsyevd_ffi``, …) split a *batched*
call over XLA's intra-op thread pool (``jax::ParallelBatchMap``) and block the calling pool
thread until the pieces finish. The calling thread is itself a pool thread, so when as many
batched LAPACK calls run at once as the pool has threads (2 on a 2-core machine), every
thread waits for work that no thread is left to run: the process deadlocks with no CPU use.
Two vmapped ``jnp.linalg.solve`` calls in one jitted program are enough, even with a single
Python thread. An *unbatched* call runs inline and cannot deadlock. Reproduction (2-core
machine, jax 0.10.2): ``jax.jit(lambda As, b: [jax.vmap(jnp.linalg.solve)(A, b) for A in As])``
with two 64×40×40 batches hangs on its first call; with ``lax.map`` instead of ``vmap`` it
runs.

The functions here therefore keep LAPACK calls unbatched under ``vmap`` on CPU (the batch
is mapped sequentially with ``lax.map``, one LAPACK call per matrix) and batched on other
backends (cuSOLVER's batched kernels have no such problem). The experiment runner refuses
a compiled CPU program that still contains a batched LAPACK call
(:func:`batched_lapack_calls`), so a study cannot reintroduce the deadlock unnoticed.

Limitation: functions wrapped by :func:`unbatched_on_cpu` are not differentiable (JAX's
``custom_vmap`` has no autodiff rule); every estimator in dpsim uses closed-form gradients.
"""

from __future__ import annotations

import re
from typing import Callable

import jax
import jax.numpy as jnp
from jax import lax

__all__ = ["unbatched_on_cpu", "solve", "batched_lapack_calls"]


def unbatched_on_cpu(fn: Callable) -> Callable:
    """Wrap ``fn`` (positional array arguments, pytree output) so that ``vmap`` of it maps
    sequentially on the CPU backend (``lax.map``: every LAPACK call inside stays unbatched)
    and vectorises normally elsewhere.

    Args:
        fn: a function of positional JAX arrays.
    Returns:
        A function with the same signature and results; nested ``vmap``/``lax.map``
        batching is handled recursively.
    """
    wrapped = jax.custom_batching.custom_vmap(fn)

    @wrapped.def_vmap
    def _rule(axis_size, in_batched, *args):
        args = [
            a if batched else jnp.broadcast_to(a, (axis_size, *jnp.shape(a)))
            for a, batched in zip(args, in_batched)
        ]
        out = lax.platform_dependent(
            *args, cpu=lambda *xs: lax.map(lambda x: wrapped(*x), xs), default=jax.vmap(fn)
        )
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return wrapped


@unbatched_on_cpu
def _solve_vector(a, b):
    return jnp.linalg.solve(a, b[:, None])[:, 0]


def solve(a: jax.Array, b: jax.Array) -> jax.Array:
    """x with a x = b for one square system (LU with partial pivoting, LAPACK ``getrf``).

    Args:
        a: (n, n) non-singular matrix.
        b: (n,) right-hand side.
    Returns:
        x, shape (n,). Safe under ``vmap`` on CPU (module docstring).
    """
    a, b = jnp.asarray(a), jnp.asarray(b)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or b.shape != (a.shape[0],):
        raise ValueError(
            f"solve needs a square (n, n) matrix and an (n,) vector, got {a.shape} and {b.shape}"
        )
    return _solve_vector(a, b)


_LAPACK_CALL = re.compile(r'custom_call_target="(lapack_[a-z0-9_]+)"')
_FIRST_OPERAND = re.compile(r"operand_layout_constraints=\{[a-z0-9]+\[([0-9,]*)\]")


def batched_lapack_calls(hlo_text: str) -> list[str]:
    """The LAPACK custom calls of a compiled program (``compiled.as_text()``) that work on a
    batch of more than one matrix, e.g. ``['lapack_dgetrf_ffi f64[60,40,40]']``.

    Args:
        hlo_text: optimised HLO text of a CPU executable.
    Returns:
        One description per batched call (empty when the program is deadlock-safe).
    """
    found = []
    for line in hlo_text.splitlines():
        target = _LAPACK_CALL.search(line)
        if not target:
            continue
        shape = _FIRST_OPERAND.search(line)
        dims = [int(d) for d in shape.group(1).split(",") if d] if shape else []
        batch = 1
        for d in dims[:-2]:
            batch *= d
        if batch > 1:
            found.append(f"{target.group(1)} [{','.join(map(str, dims))}]")
    return found
