"""Quantities as short text for plans and summaries: bytes and durations."""

from __future__ import annotations


def format_bytes(n: float) -> str:
    """n bytes in B, kB, MB, GB or TB (powers of 1000), 3 significant digits."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def format_duration(seconds: float) -> str:
    """Seconds as "42 s", "3.5 min", "2.1 h" or "3.2 days"."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h" if seconds < 172800 else f"{seconds / 86400:.1f} days"
