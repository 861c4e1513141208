"""Validation of *concrete* values: the one family of checks of the library and the grid.

A generator, mechanism or estimator called with Python or NumPy values (or concrete JAX
arrays) checks them and raises :class:`~dpsim.errors.UsageError` (a ``ValueError``) naming
the bad value in one line, ``{name}={value!r} {requirement}``; inside ``jit``/``vmap`` the
values are tracers, which cannot be inspected, and are passed through unchecked. The grid's
axis types (:mod:`dpsim.engine.definition.axes`) validate every grid value on the host before
tracing with the same :class:`Requirement` s, so a bad ``--set eps=0`` and a bad
``privatise(…, eps=0)`` say the same thing (the CLI prints it and exits 2).
"""

from __future__ import annotations

import math
import numbers
from typing import Callable, NamedTuple

import jax
import numpy as np

from dpsim.errors import UsageError


class Requirement(NamedTuple):
    """A condition on numbers and the words that state it (the tail of the error message)."""

    ok: Callable[[np.ndarray], np.ndarray]  # float64 array → bool array, elementwise
    text: str


EPS = Requirement(lambda v: v > 0, "must be > 0 (inf for the non-private case)")
PROBABILITY = Requirement(lambda v: (v > 0) & (v <= 1), "must lie in (0, 1]")
OPEN_UNIT = Requirement(lambda v: (v > 0) & (v < 1), "must lie in (0, 1)")
POSITIVE = Requirement(lambda v: (v > 0) & np.isfinite(v), "must be a finite number > 0")
NONNEGATIVE = Requirement(lambda v: (v >= 0) & np.isfinite(v), "must be a finite number ≥ 0")


def integer_in(low: int, high: int | None = None) -> Requirement:
    """An integer in [low, high] (``high`` = None: no upper bound; never ±inf)."""
    upper = math.inf if high is None else high
    text = (
        f"must be an integer ≥ {low}" if high is None else f"must be an integer in [{low}, {high}]"
    )
    return Requirement(
        lambda v: np.isfinite(v) & (v == np.round(v)) & (v >= low) & (v <= upper), text
    )


def concrete(value) -> np.ndarray | None:
    """``value`` as a NumPy array when it is concrete, ``None`` when it is traced."""
    if isinstance(value, jax.core.Tracer):
        return None
    try:
        return np.asarray(value)
    except Exception:  # an abstract value that is not a Tracer subclass
        return None


def _first_bad(array: np.ndarray, bad: np.ndarray):
    return array.reshape(-1)[int(np.argmax(bad.reshape(-1)))].item() if array.ndim else array.item()


def require(name: str, value, ok, requirement: str) -> None:
    """Raise ``UsageError("{name}={bad!r} {requirement}")`` when a concrete ``value`` has an
    element for which ``ok(element array)`` is False; a value that is not numeric, or NaN, is
    ``"{name}=… is not a number"``. Traced values pass unchecked.

    Args:
        value: a scalar or an array (any shape); ``ok``: elementwise test on float64.
    """
    array = concrete(value)
    if array is None:
        return
    if array.dtype == bool or array.dtype.kind not in "iuf":
        raise UsageError(f"{name}={value!r} is not a number")
    values = array.astype(np.float64)
    for bad, tail in ((np.isnan(values), "is not a number"), (None, requirement)):
        if bad is None:
            with np.errstate(invalid="ignore"):
                bad = ~np.asarray(ok(values), dtype=bool)
        if bad.any():
            raise UsageError(f"{name}={_first_bad(array, bad)!r} {tail}")


def check(name: str, value, requirement: Requirement) -> None:
    """:func:`require` with a named :class:`Requirement`."""
    require(name, value, requirement.ok, requirement.text)


def require_number(name: str, value) -> None:
    """One real number (not a bool, a string or an array): else ``{name}=… is not a number``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise UsageError(f"{name}={value!r} is not a number")


def require_choice(name: str, value, choices) -> None:
    """UsageError naming ``value`` unless it is one of ``choices`` (a mode or a name)."""
    if value not in choices:
        raise UsageError(
            f"{name}={value!r} is not known; choose one of {', '.join(map(str, choices))}"
        )


def require_eps(eps, name: str = "eps") -> None:
    """ε > 0 (ε = ∞, the non-private case, is allowed)."""
    check(name, eps, EPS)


def require_probability(p, name: str = "p") -> None:
    """p ∈ (0, 1]."""
    check(name, p, PROBABILITY)


def require_open_unit(x, name: str) -> None:
    """x ∈ (0, 1), e.g. δ."""
    check(name, x, OPEN_UNIT)


def require_positive(x, name: str, finite: bool = True) -> None:
    """x > 0 (and finite unless ``finite=False``)."""
    if finite:
        check(name, x, POSITIVE)
    else:
        require(name, x, lambda v: v > 0, "must be > 0")


def require_int(x, name: str, low: int, high: int | None = None) -> None:
    """An integer in [low, high] (``high`` = None: no upper bound)."""
    check(name, x, integer_in(low, high))


def require_counts_matrix(W, name: str = "W") -> None:
    """A square matrix of finite non-negative counts."""
    array = concrete(W)
    if array is None:
        return
    if array.ndim != 2 or array.shape[0] != array.shape[1]:
        raise UsageError(f"{name} must be a square (n, n) matrix, got shape {array.shape}")
    if array.shape[0] < 2:
        raise UsageError(f"{name} must compare at least 2 items, got shape {array.shape}")
    require(
        f"{name} entry", array, lambda v: (v >= 0) & np.isfinite(v), "must be a finite count ≥ 0"
    )


def require_pair_totals(W, M) -> None:
    """M must be W + Wᵀ (the comparisons of each pair) when both are concrete."""
    w, m = concrete(W), concrete(M)
    if w is None or m is None:
        return
    if m.shape != w.shape:
        raise UsageError(f"M must have W's shape {w.shape}, got {m.shape}")
    bad = np.argwhere(m != w + w.T)
    if len(bad):
        i, j = bad[0]
        raise UsageError(
            f"M must be W + Wᵀ: M[{i}, {j}]={m[i, j]:g}, W[{i}, {j}] + W[{j}, {i}]={w[i, j] + w[j, i]:g}"
        )


def require_group_sizes(group_sizes, name: str = "group_sizes") -> None:
    """Concrete group sizes must be integers ≥ 0 with a positive sum (traced: unchecked)."""
    require_int(group_sizes, name, 0)
    array = concrete(group_sizes)
    if array is not None and float(np.sum(array)) < 1:
        raise UsageError(f"{name}={array.tolist()!r} must hold at least one user (n_users ≥ 1)")
