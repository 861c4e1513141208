"""Result codes of a fit: why a solve stopped (optimistix's ``RESULTS``, as data).

``converged`` says whether a fit can be trusted; the code says why not. A code is an int8
scalar made inside traced code from the solver's final state (:func:`solver_result`), so
it runs under ``jit`` and ``vmap`` and never raises; the host turns codes into words
(:func:`describe`, :func:`reasons`). Stored rows keep the small integer (column
``result``); ``dpsim summary`` and the "did not converge" warnings print the names.

Codes (the order is the precedence when several apply, :func:`first_failure` aside):

=====  ======================  ==========================================================
 code  name                    meaning
=====  ======================  ==========================================================
 0     ``successful``          met the tolerance (or, for a one-pass method, finished
                               with a finite estimate)
 1     ``max_steps_reached``   the iteration cap came first (a power iteration's or a
                               Newton solve's)
 2     ``nonfinite``           the estimate or its gradient is NaN or infinite (e.g. NaN
                               data, an overflowing step)
 3     ``disconnected``        the comparison graph / chain is not connected, so the
                               estimate is not unique (a spectral estimator's exact solve)
=====  ======================  ==========================================================
"""

from __future__ import annotations

from enum import IntEnum

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "RESULTS",
    "NAMES",
    "describe",
    "reasons",
    "solver_result",
    "first_failure",
    "where_disconnected",
]

RESULT_DTYPE = jnp.int8


class RESULTS(IntEnum):
    """Why a fit stopped (module docstring). ``int(RESULTS.x)`` is the stored code."""

    successful = 0
    max_steps_reached = 1
    nonfinite = 2
    disconnected = 3


NAMES: dict[int, str] = {int(r): r.name for r in RESULTS}

# Short words for warnings and tables ("10 max steps, 2 non-finite").
_WORDS = {
    RESULTS.successful: "converged",
    RESULTS.max_steps_reached: "max steps",
    RESULTS.nonfinite: "non-finite",
    RESULTS.disconnected: "disconnected",
}


def _missing(code) -> bool:
    """True for a row without a code: None, NaN or pandas' NA."""
    if code is None:
        return True
    try:
        return bool(np.isnan(float(code)))
    except (TypeError, ValueError):
        return True


def describe(code) -> str:
    """The short word of one code (e.g. ``"max steps"``); ``"unknown code 7"`` for any other
    integer, and ``"no solver"`` for a missing one (None or NaN: a row without a solver)."""
    if _missing(code):
        return "no solver"
    try:
        return _WORDS[RESULTS(int(code))]
    except (ValueError, TypeError):
        return f"unknown code {code}"


def reasons(codes) -> str:
    """The failures among ``codes``, counted and named, most frequent first:
    ``"10 max steps, 2 non-finite"`` ("" when every fit succeeded or none has a code).

    Args:
        codes: an iterable of codes (ints; None / NaN / pandas NA entries are skipped).
    Returns:
        a string for a warning or a table cell.
    """
    counts: dict[int, int] = {}
    for code in codes:
        if _missing(code):
            continue
        code = int(code)
        if code != RESULTS.successful:
            counts[code] = counts.get(code, 0) + 1
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{n} {describe(code)}" for code, n in ordered)


def _all_finite(values) -> jax.Array:
    finite = jnp.asarray(True)
    for value in values:
        finite = finite & jnp.all(jnp.isfinite(value))
    return finite


def solver_result(met_tolerance, *values) -> jax.Array:
    """The code of an iterative solve from its final state (traceable; no exception).

    Args:
        met_tolerance: bool scalar, the solver's stopping test held at the returned point.
        *values: arrays that must be finite (the estimate, its gradient norm, …).
    Returns:
        int8 scalar: ``nonfinite`` if any value is not finite, else ``successful`` when
        ``met_tolerance``, else ``max_steps_reached``.
    """
    code = jnp.where(met_tolerance, RESULTS.successful, RESULTS.max_steps_reached)
    code = jnp.where(_all_finite(values), code, RESULTS.nonfinite)
    return code.astype(RESULT_DTYPE)


def where_disconnected(code, connected) -> jax.Array:
    """``code``, or ``disconnected`` where ``connected`` is False and the code is not already
    ``nonfinite`` (a NaN input is reported as such). Traceable; int8 scalar."""
    code = jnp.asarray(code, RESULT_DTYPE)
    return jnp.where(
        jnp.asarray(connected) | (code == RESULTS.nonfinite), code, RESULTS.disconnected
    ).astype(RESULT_DTYPE)


def first_failure(*codes) -> jax.Array:
    """The first code that is not ``successful`` (``successful`` when all are): the code of a
    result that needs several fits (e.g. a fit and its reference). Traceable; int8 scalar."""
    out = jnp.asarray(RESULTS.successful, RESULT_DTYPE)
    for code in reversed(codes):
        code = jnp.asarray(code, RESULT_DTYPE)
        out = jnp.where(code != RESULTS.successful, code, out)
    return out.astype(RESULT_DTYPE)
