"""The vocabulary of grid axes (DESIGN.md, "Notation") and their validation.

Every experiment uses these names for its axes, so the results table, the CLI and the
checks speak one language. Each validator raises :class:`UsageError` with a one-line
message naming the bad value.
"""
from __future__ import annotations

import math

from dpsim.experiment.errors import UsageError


def _number(axis, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{axis}={value!r} is not a number")
    if math.isnan(value):
        raise UsageError(f"{axis}={value!r} is not a number")
    return value


def _positive_eps(axis, value):
    value = _number(axis, value)
    if not value > 0:
        raise UsageError(f"{axis}={value!r} must be > 0 (use inf for the non-private case)")
    return float(value)


def _probability(axis, value):
    value = _number(axis, value)
    if not (0 < value <= 1):
        raise UsageError(f"{axis}={value!r} must lie in (0, 1]")
    return float(value)


def _open_unit(axis, value):
    value = _number(axis, value)
    if not (0 < value < 1):
        raise UsageError(f"{axis}={value!r} must lie in (0, 1)")
    return float(value)


def _int_at_least(minimum):
    def check(axis, value):
        value = _number(axis, value)
        if not float(value).is_integer() or value < minimum or math.isinf(value):
            raise UsageError(f"{axis}={value!r} must be an integer ≥ {minimum}")
        return int(value)
    return check


def _positive_finite(axis, value):
    value = _number(axis, value)
    if not (0 < value < math.inf):
        raise UsageError(f"{axis}={value!r} must be a finite number > 0")
    return float(value)


def _nonneg_finite(axis, value):
    value = _number(axis, value)
    if not (0 <= value < math.inf):
        raise UsageError(f"{axis}={value!r} must be a finite number ≥ 0")
    return float(value)


def _k(axis, value):
    if value == "auto":
        return value
    return _int_at_least(1)(axis, value)


def _name(axis, value):
    if not isinstance(value, str) or not value:
        raise UsageError(f"{axis}={value!r} must be a name")
    return value


VALIDATORS = {
    "n_items": _int_at_least(2),
    "n_users": _int_at_least(1),
    "per_user": _int_at_least(1),
    "n_samples": _int_at_least(1),
    "dim": _int_at_least(1),
    "p": _probability,
    "eps": _positive_eps,
    "delta": _open_unit,
    "k": _k,
    "c0": _positive_finite,
    "gap": _open_unit,
    "scale": _nonneg_finite,
    "link": _name,
    "mode": _name,
    "unit": _name,  # privacy unit (e.g. cai: edge or individual); a string axis, so a shape axis
}


def validate_value(axis: str, value):
    """Validate (and normalise) one grid value of a known axis."""
    try:
        validator = VALIDATORS[axis]
    except KeyError:
        raise UsageError(f"unknown axis {axis!r}") from None
    return validator(axis, value)


def parse_value(text: str):
    """Parse one value of ``--set axis=v1,v2``: int, float, inf, or a bare name."""
    text = text.strip()
    if not text:
        raise UsageError("empty value in --set")
    lowered = text.lower()
    if lowered in ("inf", "+inf", "infinity"):
        return math.inf
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return text
    if math.isnan(value):
        raise UsageError(f"value {text!r} is not a number")
    return value


def parse_set_option(option: str) -> tuple[str, list]:
    """Parse ``axis=v1,v2,...`` into (axis, [values]); malformed text → UsageError."""
    if "=" not in option:
        raise UsageError(f"malformed --set {option!r}: expected axis=v1,v2,...")
    axis, _, values = option.partition("=")
    axis = axis.strip()
    if not axis or not values.strip():
        raise UsageError(f"malformed --set {option!r}: expected axis=v1,v2,...")
    return axis, [parse_value(v) for v in values.split(",")]
