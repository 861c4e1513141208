"""Batching from measurement: a step's micro-batch and chunk size per (program, device), cached.

A step (one compiled program, :mod:`dpsim.engine.execution.planning`) whose run time by the cost
model (:class:`~dpsim.engine.execution.batching.Batching`) is long enough is *calibrated* while it
runs (:class:`~dpsim.engine.execution.executors.LocalExecutor`): its first chunks are computed by
programs compiled at each candidate micro-batch (:func:`candidates`: CPU 1, 8, 32;
accelerators 64, 512, 2048 within the policy's memory bound), one real chunk each, timed,
and the fastest per lane computes the rest. The calibration chunks are the step's own: their
rows are written like any chunk's (results do not depend on the micro-batch beyond float
rounding: keys come from stable ids, never from positions). The rule (:func:`should_calibrate`):
calibrate when the extra compilations plus the calibration chunks' lost concurrency cost at
most :data:`CALIBRATION_SHARE` of the step's estimated wall time.

The choice is cached on disk (:func:`cache_path`: ``$DPSIM_CALIBRATION_CACHE``, else
``$XDG_CACHE_HOME/dpsim/batching.json``, else ``~/.cache/dpsim/batching.json``), one entry per
:func:`step_key` (the experiment's :func:`~dpsim.engine.execution.program.program_identity`, i.e. code
fingerprint and definition digest, the step's program shape and string data values, the
device platform, kind and count, and the JAX version). An entry holds the micro-batch, where
it came from, the calibration timings, and the (chunk size, micro-batch) layouts the program
was compiled with before: a later plan of the same program, at any ``--reps``, reuses one of
them where the cost model says padding costs less than a compilation
(:func:`~dpsim.engine.execution.batching.reuse_layout`), so the persistent compilation cache hits.
``$DPSIM_CALIBRATION``: ``auto`` (default), ``always`` (calibrate every step with enough
chunks, even when cached), ``off`` (no calibration, no cache read or written). ``--micro-batch``
(``$DPSIM_MICRO_BATCH``) overrides all of it. The code fingerprint covers the modules a run
imports: any change of what their code does (not a comment) starts new entries. Writers (the parts of a split, several runs)
merge their entries under a lock and replace the file atomically; an unreadable file is
ignored with one warning and rewritten.
"""

from __future__ import annotations

import datetime
import hashlib
import math
import os
from pathlib import Path
from typing import Mapping

import jax

from dpsim.errors import UsageError, warn
from dpsim.engine.storage import store

MODE_VARIABLE = "DPSIM_CALIBRATION"
CACHE_VARIABLE = "DPSIM_CALIBRATION_CACHE"
MODES = ("auto", "always", "off")
CANDIDATES_CPU = (1, 8, 32)
CANDIDATES_ACCELERATOR = (
    64,
    512,
    2048,
)  # the memory-bound fallback, a middle size, the cap (batching)
# A step is calibrated when calibrating costs at most this share of its estimated wall time
# (the cost model): (candidates − 1) extra compilations, plus the calibration chunks computed
# one at a time instead of ``workers`` at a time. One chunk per candidate is a noisy
# measurement on a loaded machine, so on CPU the cost model makes `auto` calibrate only long
# steps (cai-fig3 from several thousand replicates; xu, whose lanes the cost model
# underestimates, never).
CALIBRATION_SHARE = 0.1
KEEP_LAYOUTS = 4  # (chunk size, micro-batch) layouts remembered per program
_warned: set = set()  # cache files already warned about (one warning each per process)


def mode() -> str:
    """``$DPSIM_CALIBRATION`` (auto, always or off); UsageError naming another value."""
    text = os.environ.get(MODE_VARIABLE, "auto").strip().lower()
    if text not in MODES:
        raise UsageError(f"{MODE_VARIABLE}={text!r} must be one of {', '.join(MODES)}")
    return text


def cache_path() -> Path | None:
    """The calibration cache file, or None when ``$DPSIM_CALIBRATION=off`` (module docstring)."""
    if mode() == "off":
        return None
    if os.environ.get(CACHE_VARIABLE):
        return Path(os.environ[CACHE_VARIABLE])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dpsim" / "batching.json"


def device_label(backend: str, devices: int) -> str:
    """The device a step runs on, as a cache key part: platform, kind, count, JAX version."""
    try:
        kind = getattr(jax.devices(backend)[0], "device_kind", backend)
    except RuntimeError:
        kind = backend
    return f"{backend}:{kind}×{devices} jax {jax.__version__}"


def step_key(identity: tuple, shape: Mapping, static_data: Mapping, device: str) -> str:
    """The cache key of one step's program on one device (16 hex digits).

    Args:
        identity: the experiment's :func:`~dpsim.engine.execution.program.program_identity`.
        shape: the step's program shape; static_data: its string data values.
        device: :func:`device_label`.
    """
    text = repr((tuple(identity), sorted(shape.items()), sorted(static_data.items()), device))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load(path: Path | None) -> dict:
    """The cache's entries ({key: entry}); {} when there is no file, and, with one warning,
    when it cannot be read as a cache (it is rewritten at the next :func:`save`)."""
    if path is None or not path.exists():
        return {}
    try:
        entries = store.read_json(path)
        if not isinstance(entries, dict) or not all(isinstance(e, dict) for e in entries.values()):
            raise ValueError("not a mapping of entries")
        return entries
    except (OSError, ValueError) as exc:
        if str(path) not in _warned:
            _warned.add(str(path))
            warn(
                f"the batching calibration cache {path} is unreadable ({type(exc).__name__}); it is ignored "
                f"and will be rewritten"
            )
        return {}


def save(path: Path | None, updates: Mapping[str, object]) -> dict:
    """Merge ``updates`` into the cache file under its lock (:func:`~dpsim.engine.storage.store.file_lock`):
    re-read, merge, replace the file atomically, so concurrent writers never leave a torn
    file nor lose each other's entries. A value is an entry, or a function of the entry
    stored now (None if none) returning the new one (:func:`updated_entry`), applied under
    the lock. Returns the merged entries ({} and nothing written when ``path`` is None or
    there is nothing to write; the entries read, and nothing written, when no update changes
    its entry, e.g. a re-run of a step whose layout is the newest cached)."""
    if path is None or not updates:
        return {}
    entries = load(path)  # nothing changes (a re-run of a step as cached): no lock, no write
    if all(
        (value(entries.get(key)) if callable(value) else value) == entries.get(key)
        for key, value in updates.items()
    ):
        return entries
    with store.file_lock(path.with_name(path.name + ".lock")):
        entries = load(path)
        for key, value in updates.items():
            entries[key] = value(entries.get(key)) if callable(value) else value
        store.write_json(path, entries)
    return entries


def candidates(backend: str, lane_bytes: float, micro_bytes: float) -> tuple[int, ...]:
    """The micro-batches a calibration times: CPU :data:`CANDIDATES_CPU`; accelerators
    :data:`CANDIDATES_ACCELERATOR` whose working set (× ``lane_bytes``) fits ``micro_bytes``
    (the smallest always)."""
    if backend == "cpu":
        return CANDIDATES_CPU
    fits = tuple(c for c in CANDIDATES_ACCELERATOR if c * lane_bytes <= micro_bytes)
    return fits or CANDIDATES_ACCELERATOR[:1]


def calibration_cost(
    n_candidates: int, compile_seconds: float, chunk_seconds: float, workers: int
) -> float:
    """Wall seconds a calibration adds to a step: the extra compilations, and the
    calibration chunks computed one at a time rather than ``workers`` at once. (On an
    accelerator, one worker, the calibration chunks also go without the second chunk in
    flight, so their host work is not hidden; that share of a chunk's time is left out here.)"""
    return (n_candidates - 1) * compile_seconds + n_candidates * chunk_seconds * (
        1 - 1 / max(workers, 1)
    )


def should_calibrate(
    step_seconds: float, cost: float, n_chunks: int, n_candidates: int, how: str, cached: bool
) -> bool:
    """Whether to calibrate a step: never when ``how`` is off or ``reuse`` (cached choices only,
    for an executor that cannot time candidates) or the step has fewer than two
    chunks per candidate; with ``always`` otherwise yes; with ``auto`` when no calibration is
    cached and ``cost`` ≤ :data:`CALIBRATION_SHARE` × ``step_seconds`` (its estimated wall time)."""
    if how in ("off", "reuse") or n_chunks < 2 * n_candidates:
        return False
    if how == "always":
        return True
    return not cached and cost <= CALIBRATION_SHARE * step_seconds


def pick(timings: Mapping[int, float]) -> int:
    """The micro-batch with the fewest seconds per lane (ties: the smaller micro-batch)."""
    return min(timings, key=lambda m: (timings[m], m))


def updated_entry(
    entry: Mapping | None,
    *,
    micro: int,
    size: int,
    source: str,
    what: str,
    timings: Mapping[int, float] | None = None,
    today: str | None = None,
) -> dict:
    """A cache entry after a run of its step: ``size`` × ``micro`` added to its layouts
    (newest first, at most :data:`KEEP_LAYOUTS`), and with ``timings`` (micro-batch → seconds
    per lane) the calibration recorded (micro-batch, date, timings). ``what``: the step
    as text (for people reading the file)."""
    entry = dict(entry or {})
    layouts = [[size, micro]] + [
        list(l) for l in entry.get("layouts", []) if list(l) != [size, micro]
    ]
    entry.update(what=what, layouts=layouts[:KEEP_LAYOUTS])
    if timings:
        entry.update(
            micro=int(micro),
            source=source,
            date=today or datetime.date.today().isoformat(),
            timings={str(m): float(s) for m, s in sorted(timings.items())},
        )
    return entry


def calibrated_micro(entry: Mapping | None) -> int | None:
    """The calibrated micro-batch of a cache entry, or None."""
    if not entry or "timings" not in entry or not isinstance(entry.get("micro"), int):
        return None
    return entry["micro"]


def seconds_per_lane(entry: Mapping | None) -> float | None:
    """The calibrated seconds per lane of the entry's micro-batch, or None."""
    micro = calibrated_micro(entry)
    return None if micro is None else float(entry["timings"].get(str(micro), math.nan))


def describe(entry: Mapping, backend: str) -> str:
    """A calibration as text: ``calibrated DATE on BACKEND: MICRO → TIME ms/lane, …``, one
    ``MICRO → TIME`` per candidate micro-batch timed (``entry["timings"]``)."""
    timings = ", ".join(
        f"{m} → {float(s) * 1e3:.3g} ms/lane"
        for m, s in sorted(entry["timings"].items(), key=lambda kv: int(kv[0]))
    )
    return f"calibrated {entry.get('date', '?')} on {backend}: {timings}"


def choose(
    n_lanes: int,
    total_lanes: int,
    lane_bytes: int,
    n_analysis: int,
    requested: int | None,
    workers: int,
    policy,
    entry: Mapping | None,
    how: str,
) -> tuple[int, int, str, tuple]:
    """A step's batching: (chunk size, micro-batch, where the micro-batch came from, the
    candidate micro-batches to calibrate at run time or ()).

    ``--micro-batch`` (``policy.override``) wins; else a calibrated micro-batch cached in
    ``entry``; else the policy's rule (:func:`~dpsim.engine.execution.batching.chunk_layout`). A
    step without a cached calibration is calibrated when :func:`should_calibrate` says so
    (its chunks then a multiple of every candidate; not when ``--chunk`` is not one). Without
    ``requested`` (``--chunk``), a layout the program was compiled with before
    (``entry['layouts']``) is reused where :func:`~dpsim.engine.execution.batching.reuse_layout`
    says it pays.

    Args:
        n_lanes: lanes of the step's largest shape point; total_lanes: all its lanes.
        lane_bytes, n_analysis: one lane's working set and analysis points.
        requested: ``--chunk``; workers: chunks at a time; policy: the device's :class:`Batching`.
        entry: the step's cache entry (None: none); how: :func:`mode`.
    """
    from dpsim.engine.execution.batching import chunk_layout, reuse_layout, small_lane_layout

    own = chunk_layout(n_lanes, lane_bytes, n_analysis, requested, workers, policy)
    if policy.override:
        return *own, "--micro-batch", ()
    model_seconds = lane_bytes * n_analysis * policy.seconds_per_byte  # the cost model, per lane
    micro = calibrated_micro(entry) if how != "off" else None
    if micro is not None:
        own = chunk_layout(n_lanes, lane_bytes, n_analysis, requested, workers, policy, micro=micro)
        origin = describe(entry, policy.backend)
    elif own[1] > 1 and policy.backend == "cpu":
        origin = "rule: small lanes in a big step"
    elif policy.backend == "cpu":
        origin = "rule: one lane at a time on CPU"
    else:
        origin = "rule: the accelerator's memory bound"
    options = candidates(policy.backend, lane_bytes, policy.micro_bytes)
    unit = max(1, policy.devices) * max(options)
    size = unit * math.ceil(
        chunk_layout(
            n_lanes, lane_bytes, n_analysis, requested, workers, policy, micro=max(options)
        )[0]
        / unit
    )
    cost = calibration_cost(len(options), policy.compile_seconds, size * model_seconds, workers)
    chunk_kept = (
        requested is None or requested % unit == 0
    )  # calibrating rounds the chunk to a multiple of unit
    if chunk_kept and should_calibrate(
        total_lanes * model_seconds / max(workers, 1),
        cost,
        math.ceil(total_lanes / size),
        len(options),
        how,
        micro is not None,
    ):
        micro = max(
            [c for c in options if c <= own[1]] or [min(options)]
        )  # a candidate: it divides the size
        return (
            size,
            micro,
            origin + f"; calibrated while it runs at {', '.join(map(str, options))}",
            options,
        )
    if (
        requested is None
        and entry
        and how != "off"
        and micro is None
        and own[1] == 1
        and policy.backend == "cpu"
        and policy.small_micro > 1
        and lane_bytes <= policy.small_lane_bytes
    ):
        wide = chunk_layout(
            n_lanes, lane_bytes, n_analysis, None, workers, policy, micro=policy.small_micro
        )
        layout = small_lane_layout(
            n_lanes,
            workers,
            own,
            wide,
            entry.get("layouts", []),
            policy.compile_seconds,
            model_seconds,
        )
        if layout != own:
            return *layout, "rule: small lanes, their vmapped program compiled before", ()
    if requested is None and entry and how != "off":
        earlier = [tuple(l) for l in entry.get("layouts", []) if int(l[1]) == own[1]]
        layout = reuse_layout(
            n_lanes,
            workers,
            own,
            earlier,
            policy.compile_seconds,
            seconds_per_lane(entry) or model_seconds,
        )
        if layout != own:
            return *layout, origin + f"; chunks of {layout[0]} as compiled before", ()
    return *own, origin, ()
