"""Validation of *concrete* inputs to the public library functions.

A generator, mechanism or estimator called with Python or NumPy values (or concrete JAX
arrays) checks them and raises ``ValueError`` naming the bad value; inside ``jit``/``vmap``
the values are tracers, which cannot be inspected, and are passed through unchecked (the
experiment runner validates every grid value on the host before tracing).
"""
from __future__ import annotations

import math

import jax
import numpy as np


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
    """Raise ``ValueError("{name}={bad!r} {requirement}")`` when a concrete ``value`` has an
    element for which ``ok(element array)`` is False (NaN always fails)."""
    array = concrete(value)
    if array is None:
        return
    if array.dtype == bool or array.dtype.kind not in "iuf":
        raise ValueError(f"{name}={value!r} is not a number")
    with np.errstate(invalid="ignore"):
        bad = ~np.asarray(ok(array.astype(np.float64)), dtype=bool) | np.isnan(array.astype(np.float64))
    if bad.any():
        raise ValueError(f"{name}={_first_bad(array, bad)!r} {requirement}")


def require_choice(name: str, value, choices) -> None:
    """ValueError naming ``value`` unless it is one of ``choices`` (a mode or a name)."""
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not known; choose one of {tuple(choices)}")


def require_eps(eps, name: str = "eps") -> None:
    """ε > 0 (ε = ∞, the non-private case, is allowed)."""
    require(name, eps, lambda e: e > 0, "must be > 0 (inf for the non-private case)")


def require_probability(p, name: str = "p") -> None:
    """p ∈ (0, 1]."""
    require(name, p, lambda v: (v > 0) & (v <= 1), "must lie in (0, 1]")


def require_open_unit(x, name: str) -> None:
    """x ∈ (0, 1), e.g. δ."""
    require(name, x, lambda v: (v > 0) & (v < 1), "must lie in (0, 1)")


def require_positive(x, name: str, finite: bool = True) -> None:
    """x > 0 (and finite unless ``finite=False``)."""
    if finite:
        require(name, x, lambda v: (v > 0) & np.isfinite(v), "must be a finite number > 0")
    else:
        require(name, x, lambda v: v > 0, "must be > 0")


def require_int(x, name: str, low: int, high: int | None = None) -> None:
    """An integer in [low, high] (``high`` = None: no upper bound)."""
    upper = math.inf if high is None else high
    text = f"must be an integer ≥ {low}" if high is None else f"must be an integer in [{low}, {high}]"
    require(name, x, lambda v: (v == np.round(v)) & (v >= low) & (v <= upper), text)


def require_counts_matrix(W, name: str = "W") -> None:
    """A square matrix of finite non-negative counts."""
    array = concrete(W)
    if array is None:
        return
    if array.ndim != 2 or array.shape[0] != array.shape[1]:
        raise ValueError(f"{name} must be a square (n, n) matrix, got shape {array.shape}")
    if array.shape[0] < 2:
        raise ValueError(f"{name} must compare at least 2 items, got shape {array.shape}")
    require(f"{name} entry", array, lambda v: (v >= 0) & np.isfinite(v), "must be a finite count ≥ 0")


def require_group_sizes(group_sizes, name: str = "group_sizes") -> None:
    """Concrete group sizes must be integers ≥ 0 with a positive sum (traced: unchecked)."""
    require_int(group_sizes, name, 0)
    array = concrete(group_sizes)
    if array is not None and float(np.sum(array)) < 1:
        raise ValueError(f"{name}={array.tolist()!r} must hold at least one user (n_users ≥ 1)")
