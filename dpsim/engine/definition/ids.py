"""Stable ids: the integers random keys are folded with, from axis values and method names alone
(never a position in a batch), so results do not depend on a grid's extent, chunking or run order."""

from __future__ import annotations

import hashlib
import math
from typing import Any, Mapping


def stable_id(point: Mapping[str, Any]) -> int:
    """A stable 63-bit integer for a dict of axis values (independent of grid order).

    Keys are derived from these ids, never from a position in a batch, so results do not
    depend on the grid's extent, chunking or run order.
    """
    text = ";".join(f"{k}={canonical(point[k])}" for k in sorted(point))
    return (
        int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        & 0x7FFFFFFFFFFFFFFF
    )


def method_id(name: str) -> int:
    """The stable id a method's key is folded with (from its name alone)."""
    return stable_id({"method": name})


def canonical(value) -> str:
    """The text a value is hashed as: an integral finite float as its integer (``2.0`` keys like ``2``)."""
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        return repr(int(value))
    return repr(value)
