"""Run an experiment's grid: plan, chunks, compilation per step, concurrent chunks, resume.

A *lane* is one (data point, replicate) pair (:mod:`dpsim.experiment.program`). A chunk's
lanes are processed by ``lax.map``, in vmapped micro-batches of several lanes on an
accelerator and one lane at a time on CPU (:func:`batching`: on the 2-core CPU, vmapping
lanes made programs slower to compile and, for iterative solvers, slower to run, since
every lane of a micro-batch waits for the slowest one's while-loop). Chunks of lanes have a
fixed size per step (the last one is padded), so each step compiles once; on CPU several
chunks are computed at the same time (:func:`default_workers`); each chunk is written as one
atomic Parquet part, by the main thread. A step is one shape point with one combination of
string data values, or with :class:`~dpsim.experiment.grid.Padding` a bucket of shape
points of several sizes (:func:`size_buckets`), each chunk holding lanes of one of them.
"""
from __future__ import annotations

import dataclasses
import math
import os
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Mapping, Sequence

import jax
import numpy as np
import pyarrow as pa
from tqdm.auto import tqdm

from dpsim.errors import UsageError, note, warn
from dpsim.experiment import store
from dpsim.experiment.grid import Experiment, Grid, expand_grid, stable_id
from dpsim.experiment.provenance import environment, fingerprint
from dpsim.experiment.program import (clear_cache, compiled_chunk_fn, compiler_options, id_words, lane_key,
                                      lane_shape, program_shape, static_shape, traced_shape_values, truth_key,
                                      truth_words)
from dpsim.experiment.threads import DaemonPool, in_order, wait

# CPU: lanes one at a time. Measured on the 2-core CPU, fresh process / warm re-run,
# against the earlier cache-sized micro-batches (≤ 3 MiB, ≤ 128 lanes): cai Fig. 3 (n = 300)
# 4.3 / 2.4 s against 7.0 / 4.6 s; cai n = 200 2.0 / 0.37 s against 3.0 / 0.82 s; n = 40
# 1.7 / 0.064 s against 2.5 / 0.055 s; compiling a program took 15–30 % less in every
# experiment tried (xu-fig4, nguyen-fig1, chowdhury-fig1, cai-fig5), and their warm runs
# were within ±15 %. --micro-batch N (or $DPSIM_MICRO_BATCH) vmaps N lanes again.
MAX_MICRO_BATCH_CPU = 1
MAX_WORKERS = 4
CHUNK_WORK = 2e8
DEFAULT_WATCHDOG_SECONDS = 900.0
# Accelerators: many lanes per vmapped micro-batch (measured on an H100 for the cai Fig. 3
# workload at 2400 replicates: micro-batches of 4 lanes 27.8 s, 64 4.1 s, 512 2.6 s, 4096
# 3.4 s), bounded by a share of the device's memory; a chunk holds a few of them.
MAX_MICRO_BATCH_ACCELERATOR = 512
ACCELERATOR_MEMORY_SHARE = 0.25
ACCELERATOR_MICRO_BATCHES_PER_CHUNK = 4
# Size buckets of padded experiments (:func:`size_buckets`): the cost model of one program.
# CPU, measured on the 2-core CPU (cai Fig. 1, benchmarks/cai.py): its nine programs compiled
# in 18.0 s (2.0 s each) and computed 120 lanes × 4 ε × 8n² bytes (n = 100 … 700) in 8.6 s,
# 1.26e-9 s per lane-analysis byte. Accelerators: compiling took ~6 s per program on an H100
# (56 s for cai Fig. 1's nine) and a fit ran ~27× faster than on the CPU (0.027 ms
# against 0.73 ms per n = 300 fit, benchmarks/cai.py): estimates, not measured with padding
# on a GPU. When a later change halved the CPU compute per byte (BTL evaluate), the choice
# was re-checked rather than refit: Figure 1 in fresh processes,
# 2 rounds, 3 programs (these constants) 12.8 / 13.7 s, 2 programs (at 0.9e-9 s per byte)
# 14.3 / 12.3 s, 4 programs (at 2.5e-9) 14.9 / 15.8 s.
COMPILE_SECONDS_CPU, SECONDS_PER_BYTE_CPU = 2.0, 1.26e-9
COMPILE_SECONDS_ACCELERATOR, SECONDS_PER_BYTE_ACCELERATOR = 6.0, 1.26e-9 / 27
PADDING_VARIABLE = "DPSIM_PADDING"

__all__ = ["run_experiment", "RunSummary", "default_workers", "chunk_layout", "micro_batch_size",
           "size_buckets", "watchdog_seconds", "clear_cache", "lane_key", "truth_key"]


@dataclass
class RunSummary:
    out: Path
    rows_written: int
    lanes_run: int
    seconds: float
    compile_seconds: float


@dataclass(frozen=True)
class Batching:
    """How a device groups lanes: at most ``max_micro`` lanes (and ``micro_bytes`` of working
    set) per vmapped micro-batch, chunks of about ``chunk_work`` bytes of work or
    ``micro_per_chunk`` micro-batches, and ``workers`` chunks computed at the same time.
    With a padded experiment, sizes share a program where the cost model says it pays:
    ``compile_seconds`` per program against ``seconds_per_byte`` per lane-analysis byte of
    padded work (:func:`size_buckets`; ``compile_seconds`` 0: one program per size).
    Results do not depend on any of these beyond float rounding (keys come from stable ids,
    not positions)."""

    backend: str
    micro_bytes: float
    max_micro: int
    workers: int
    chunk_work: float | None = None
    micro_per_chunk: int | None = None
    compile_seconds: float = COMPILE_SECONDS_CPU
    seconds_per_byte: float = SECONDS_PER_BYTE_CPU


def device_memory_bytes(device=None) -> float | None:
    """The memory an accelerator lets one process use (``bytes_limit``), or None if unknown."""
    device = device or jax.devices()[0]
    try:
        stats = device.memory_stats() or {}
    except Exception:  # a backend without memory statistics
        return None
    return stats.get("bytes_limit")


def host_memory_bytes() -> float | None:
    """The machine's physical memory in bytes (None where the OS does not say)."""
    try:
        return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def memory_limit(backend: str) -> tuple[float | None, str]:
    """(bytes, what) of the memory one lane's working set must fit in: an accelerator's
    per-process limit, or the host's physical memory on CPU."""
    if backend == "cpu":
        return host_memory_bytes(), "this machine's memory"
    return device_memory_bytes(), f"the {backend} device's memory"


def format_bytes(n: float) -> str:
    """n bytes in B, kB, MB, GB or TB (powers of 1000), 3 significant digits."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def batching(backend: str | None = None, *, micro_batch: int | None = None,
             memory: float | None = None) -> Batching:
    """The batching of ``backend`` (default: JAX's default backend).

    CPU (the measured choice, ``MAX_MICRO_BATCH_CPU``): lanes one at a time, chunks of ~2e8
    bytes of work, one chunk per core (≤ 4) at a time. Accelerators: micro-batches of up to
    512 lanes within a quarter of the device's memory (``memory``, default its
    ``bytes_limit``, else 16 GiB), 4 micro-batches per chunk, one chunk at a time.
    ``micro_batch`` (lanes; ``--micro-batch``, $DPSIM_MICRO_BATCH) caps the micro-batch on
    any backend. The size buckets' cost model is the backend's (constants above);
    ``$DPSIM_PADDING=off`` gives every size its own program (``auto``, the default: buckets).
    """
    backend = backend or jax.default_backend()
    if micro_batch is None and os.environ.get("DPSIM_MICRO_BATCH"):
        text = os.environ["DPSIM_MICRO_BATCH"]
        try:
            micro_batch = int(text)
        except ValueError:
            raise UsageError(f"DPSIM_MICRO_BATCH={text!r} must be a number of lanes") from None
    if micro_batch is not None and (isinstance(micro_batch, bool) or not isinstance(micro_batch, int)
                                    or micro_batch < 1):
        raise UsageError(f"micro_batch={micro_batch!r} must be an integer ≥ 1")
    padding = os.environ.get(PADDING_VARIABLE, "auto")
    if padding not in ("auto", "off"):
        raise UsageError(f"{PADDING_VARIABLE}={padding!r} must be 'auto' or 'off'")
    if backend == "cpu":
        policy = Batching("cpu", math.inf, MAX_MICRO_BATCH_CPU, default_workers(), chunk_work=CHUNK_WORK)
    else:
        memory = memory or (device_memory_bytes() if backend == jax.default_backend() else None) or 16 * 2**30
        policy = Batching(backend, ACCELERATOR_MEMORY_SHARE * memory, MAX_MICRO_BATCH_ACCELERATOR, 1,
                          micro_per_chunk=ACCELERATOR_MICRO_BATCHES_PER_CHUNK,
                          compile_seconds=COMPILE_SECONDS_ACCELERATOR, seconds_per_byte=SECONDS_PER_BYTE_ACCELERATOR)
    if micro_batch is not None:
        policy = dataclasses.replace(policy, micro_bytes=math.inf, max_micro=micro_batch)
    if padding == "off":
        policy = dataclasses.replace(policy, compile_seconds=0.0)
    return policy


def micro_batch_size(lane_bytes: int, policy: Batching | None = None) -> int:
    """Most lanes vmapped together: the largest power of two whose working set fits the
    policy's micro-batch bytes, at most its ``max_micro``; exactly ``max_micro`` when the
    policy sets no byte bound (CPU: 1; an explicit ``--micro-batch``)."""
    policy = policy or batching("cpu")
    if math.isinf(policy.micro_bytes):          # an explicit --micro-batch: exactly that many lanes
        return int(policy.max_micro)
    size = max(1, int(policy.micro_bytes // max(lane_bytes, 1)))
    return int(min(policy.max_micro, 2 ** int(math.log2(size))))


def default_workers() -> int:
    """Chunks computed at the same time: the available CPU cores (at most MAX_WORKERS) on the
    CPU backend, one chunk at a time on an accelerator.

    XLA:CPU splits each operation over its thread pool, which pays off for big operations
    but not for the many small ones of a small-n solve. Measured on 2 cores
    (benchmarks/cai.py, section W, warm runs end to end): the n = 40 workload (120
    lanes × 10 ε) took 0.047 s with two chunks of 60 computed at once against 0.055 s with
    one at a time; Fig. 3 (n = 300) 4.99 s against 5.19 s.
    """
    if jax.default_backend() != "cpu":
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cores))


def chunk_layout(n_lanes: int, lane_bytes: int, n_analysis: int, requested: int | None,
                 workers: int = 1, policy: Batching | None = None) -> tuple[int, int]:
    """(chunk size, micro-batch size) for ``n_lanes`` lanes of one step, under ``policy``
    (default: the CPU's).

    Chunks: ``requested`` lanes each, else about ``chunk_work`` bytes of work each (CPU) or
    ``micro_per_chunk`` full micro-batches (accelerators), and at least ``workers`` chunks
    when there are enough lanes, all of one size (one compilation). The micro-batch is then
    the fewest micro-batches of at most :func:`micro_batch_size` lanes that cover a chunk,
    balanced, so a chunk is padded by less than one lane per micro-batch.
    """
    policy = policy or batching("cpu")
    largest = micro_batch_size(lane_bytes, policy)
    if requested is not None:
        n_chunks = math.ceil(n_lanes / requested)
    else:
        if policy.micro_per_chunk is not None:
            target = largest * policy.micro_per_chunk
        else:
            target = max(largest, int((policy.chunk_work or CHUNK_WORK) / max(lane_bytes * n_analysis / 8, 1)))
        n_chunks = max(math.ceil(n_lanes / target), min(workers, n_lanes))
    size = math.ceil(n_lanes / max(n_chunks, 1))
    batches = math.ceil(size / largest)
    micro = math.ceil(size / batches)
    return batches * micro, micro


def watchdog_seconds(value: float | None = None) -> float:
    """Seconds a run may go without progress (a compiled program or a finished chunk)
    before it is stopped: ``value``, else $DPSIM_WATCHDOG, else 900 (generous: a chunk is
    sized to take well under a minute on CPU)."""
    if value is None:
        text = os.environ.get("DPSIM_WATCHDOG")
        if text is None:
            return DEFAULT_WATCHDOG_SECONDS
        try:
            value = float(text)
        except ValueError:
            raise UsageError(f"DPSIM_WATCHDOG={text!r} must be a number of seconds") from None
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0 < value < math.inf):
        raise UsageError(f"watchdog={value!r} must be a number of seconds > 0")
    return float(value)


@dataclass(frozen=True)
class _Lane:
    """One (data point, replicate): ``d`` indexes grid.data_points; ``points`` holds the
    stable id of every analysis point of this lane (grid order); ``data_id`` its data id."""

    d: int
    rep: int
    points: tuple
    data_id: int


class _MissingReps:
    """The replicates 0 … ``reps`` − 1 not in ``complete`` (sorted, distinct, < reps), in
    order, without listing them: the k-th is k + #{i : complete[i] − i ≤ k} (complete[i] − i
    counts the missing replicates below complete[i]). Memory and time are independent of
    ``reps``."""

    def __init__(self, reps: int, complete: np.ndarray):
        self.reps = reps
        self._gaps = np.asarray(complete, np.int64) - np.arange(len(complete))

    def __len__(self) -> int:
        return self.reps - len(self._gaps)

    def take(self, start: int, stop: int) -> np.ndarray:
        """The missing replicates at positions [start, stop), (stop − start,) int64."""
        k = np.arange(start, stop, dtype=np.int64)
        return k + np.searchsorted(self._gaps, k, side="right")


@dataclass(frozen=True)
class _Block:
    """The lanes of one data point ``d`` still to compute: its missing replicates."""

    d: int
    points: tuple
    data_id: int
    reps: _MissingReps


class _Lanes:
    """The lanes of one shape point in one step, data point by data point, materialised only
    a slice at a time (``lanes[i:j]`` → list of :class:`_Lane`): a plan's size and the time
    to make it do not grow with the replicate count."""

    def __init__(self, blocks: list[_Block]):
        self.blocks = [b for b in blocks if len(b.reps)]
        self._starts = np.cumsum([0] + [len(b.reps) for b in self.blocks])

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __getitem__(self, index: slice) -> list[_Lane]:
        start, stop, _ = index.indices(len(self))
        lanes = []
        first = int(np.searchsorted(self._starts, start, side="right")) - 1
        for b in range(max(first, 0), len(self.blocks)):
            lo, hi = int(self._starts[b]), int(self._starts[b + 1])
            if lo >= stop:
                break
            block = self.blocks[b]
            for rep in block.reps.take(max(start, lo) - lo, min(stop, hi) - lo):
                lanes.append(_Lane(block.d, int(rep), block.points, block.data_id))
        return lanes


@dataclass(frozen=True)
class _Chunk:
    """Lanes of one shape point ``s`` (grid.shapes[s]), computed by one program call."""

    s: int
    lanes: list

    def __len__(self) -> int:
        return len(self.lanes)


class _Tasks(Sequence):
    """``count`` tasks, the i-th ``partial(task, i)``, made when taken (a step's chunks are
    not all listed up front)."""

    def __init__(self, count: int, task: Callable[[int], object]):
        self.count, self.task = count, task

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int):
        if not 0 <= index < self.count:
            raise IndexError(index)
        return partial(self.task, index)


class _Chunks:
    """A step's chunks, made when asked for: each shape point's lanes cut into pieces of
    ``size`` (the last one shorter). ``len`` and indexing cost nothing per replicate."""

    def __init__(self, members: list[tuple[int, _Lanes]], size: int):
        self.members, self.size = members, size
        self._starts = np.cumsum([0] + [math.ceil(len(lanes) / size) for _, lanes in members])

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __getitem__(self, index: int) -> _Chunk:
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        index %= len(self)
        m = int(np.searchsorted(self._starts, index, side="right")) - 1
        s, lanes = self.members[m]
        i = (index - int(self._starts[m])) * self.size
        return _Chunk(s, lanes[i:i + self.size])

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    @property
    def lanes(self) -> int:
        return sum(len(lanes) for _, lanes in self.members)


@dataclass
class _Step:
    """One compiled program's worth of lanes: the program's static ``shape``
    (:func:`~dpsim.experiment.program.program_shape`) with static data values; its chunks
    may belong to several shape points (``points``: their indices) when the experiment pads
    sizes (:class:`~dpsim.experiment.grid.Padding`)."""

    shape: dict
    static_data: dict
    chunks: _Chunks
    size: int
    micro: int
    points: tuple = ()
    lane_bytes: int = 0

    @property
    def lanes(self) -> int:
        return self.chunks.lanes


def _groups(grid: Grid) -> list:
    """Analysis points grouped by their string (static) values, in grid order:
    [(static values, [analysis indices])]."""
    groups: dict = {}
    for a, point in enumerate(grid.analysis_points):
        static = tuple((k, point[k]) for k in grid.static_analysis)
        groups.setdefault(static, []).append(a)
    return [(dict(static), indices) for static, indices in groups.items()]


def size_buckets(sizes: Sequence[int], cost: Callable[[int, int], float], compile_seconds: float) -> dict:
    """Which program capacity computes each size: the distinct sizes, sorted, split into
    runs that each share one program compiled at the run's largest size, minimising
    ``compile_seconds`` × programs + Σ ``cost(size, capacity)`` (exact, by dynamic
    programming over the O(s²) runs).

    Args:
        sizes: the sizes (e.g. n_items) of the shape points.
        cost: seconds to compute every lane of ``size`` in a program of ``capacity``.
        compile_seconds: seconds to compile one program (0: every size its own program).
    Returns:
        {size: capacity}.
    """
    values = sorted(set(int(v) for v in sizes))
    best = [0.0] + [math.inf] * len(values)     # best[j]: cheapest plan of values[:j]
    cut = [0] * (len(values) + 1)
    for j in range(1, len(values) + 1):
        capacity = values[j - 1]
        run_cost = 0.0
        for i in range(j - 1, -1, -1):          # the run values[i:j]
            run_cost += cost(values[i], capacity)
            total = best[i] + compile_seconds + run_cost
            if total < best[j]:
                best[j], cut[j] = total, i
    capacities, j = {}, len(values)
    while j > 0:
        i = cut[j]
        capacities.update({v: values[j - 1] for v in values[i:j]})
        j = i
    return capacities


def _capacities(grid: Grid, reps: int, policy: Batching) -> list:
    """The program shape of every shape point (:func:`program_shape`): without padding the
    point itself; with padding, points that agree on the static axes are bucketed by size
    (:func:`size_buckets`, the whole grid's work, so a resumed run buckets as the first).
    Raises UsageError, before anything is written, for a traced shape value that is not an
    integer."""
    experiment = grid.experiment
    padding = experiment.padding
    if padding is None:
        return [program_shape(experiment, shape) for shape in grid.shapes]
    for shape in grid.shapes:
        for axis in padding.traced_axes:
            if isinstance(shape[axis], bool) or not isinstance(shape[axis], (int, np.integer)):
                raise UsageError(f"experiment {experiment.name!r}: padded shape axis {axis}={shape[axis]!r} "
                                 f"must be an integer")
    families: dict = {}
    for s, shape in enumerate(grid.shapes):
        families.setdefault(repr(sorted(static_shape(experiment, shape).items())), []).append(s)
    lanes_per_point = reps * len(grid.data_points) * len(grid.analysis_points)
    shapes = [None] * len(grid.shapes)
    for members in families.values():
        first = grid.shapes[members[0]]
        count: dict = {}
        for s in members:
            size = int(grid.shapes[s][padding.axis])
            count[size] = count.get(size, 0) + 1

        def cost(size, capacity, first=first, count=count):
            working = experiment.lane_bytes(lane_shape(experiment, program_shape(experiment, first, capacity)))
            return count[size] * lanes_per_point * working * policy.seconds_per_byte

        capacity = size_buckets(list(count), cost, policy.compile_seconds)
        for s in members:
            shapes[s] = program_shape(experiment, grid.shapes[s], capacity[int(grid.shapes[s][padding.axis])])
    return shapes


def _complete_reps(done: set) -> dict:
    """point id → the sorted replicates stored for it (from the (point, rep) pairs)."""
    by_point: dict = {}
    for pid, rep in done:
        by_point.setdefault(pid, []).append(rep)
    return {pid: np.unique(np.asarray(reps, np.int64)) for pid, reps in by_point.items()}


def _missing(points: tuple, reps: int, stored: dict) -> _MissingReps:
    """The replicates < ``reps`` of a lane whose analysis ``points`` are not all stored (a
    lane is complete only when every one of its points is)."""
    complete = None
    for pid in points:
        have = stored.get(pid)
        if have is None:
            return _MissingReps(reps, np.empty(0, np.int64))
        complete = have if complete is None else np.intersect1d(complete, have, assume_unique=True)
    complete = np.empty(0, np.int64) if complete is None else complete
    return _MissingReps(reps, complete[complete < reps])


def _plan(grid: Grid, reps: int, done: set, chunk: int | None = None, workers: int = 1,
          policy: Batching | None = None) -> list[_Step]:
    """For each step (a program shape and static data values), the lanes still missing,
    split per shape point into chunks of one fixed size. A lane is re-run if any of its
    analysis points is missing; rows already stored are dropped on write. Time and memory
    grow with the grid and the stored rows, not with ``reps`` (lanes are listed lazily)."""
    experiment = grid.experiment
    policy = policy or batching("cpu")
    stored = _complete_reps(done)
    by_static: dict = {}
    for d, data in enumerate(grid.data_points):
        by_static.setdefault(tuple((k, data[k]) for k in grid.static_data), []).append(d)
    steps: dict = {}
    for s, (shape, compiled) in enumerate(zip(grid.shapes, _capacities(grid, reps, policy))):
        for static, data_indices in by_static.items():
            blocks = []
            for d in data_indices:
                data = grid.data_points[d]
                points = tuple(stable_id({**shape, **data, **a}) for a in grid.analysis_points)
                blocks.append(_Block(d, points, stable_id({**shape, **data}), _missing(points, reps, stored)))
            lanes = _Lanes(blocks)
            if len(lanes):
                key = (repr(sorted(compiled.items())), static)
                steps.setdefault(key, (compiled, static, []))[2].append((s, lanes))
    plan = []
    for compiled, static, members in steps.values():
        most = max(len(lanes) for _, lanes in members)
        lane_bytes = int(experiment.lane_bytes(lane_shape(experiment, compiled)))
        size, micro = chunk_layout(most, lane_bytes, len(grid.analysis_points), chunk, workers, policy)
        plan.append(_Step(compiled, dict(static), _Chunks(members, size), size, micro,
                          tuple(s for s, _ in members), lane_bytes))
    return plan


def _numbers(name: str, values) -> np.ndarray:
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise UsageError(f"value of {name!r} must be a number to be traced, got {values[0]!r}") from None


def _numeric_data_names(grid: Grid) -> list[str]:
    exp = grid.experiment
    return [a for a in exp.data_axes if a not in grid.static_data] + list(exp.derived_names("data"))


def _numeric_analysis_names(grid: Grid) -> list[str]:
    exp = grid.experiment
    return [a for a in exp.analysis_axes if a not in grid.static_analysis] + list(exp.derived_names("analysis"))


def _chunk_args(chunk: _Chunk, grid: Grid, step: _Step) -> tuple:
    """The program's arguments for one chunk (all host arrays), its lanes padded to the
    step's size by repeating the last lane (padding rows are dropped): the shape point's
    θ*-key words [2] and traced shape values {name: scalar}, then per lane the data id words
    [B, 2], reps [B], numeric data values {name: [B]} and numeric analysis values
    {name: [B, Q]} (derived analysis values may depend on the data point)."""
    experiment, s = grid.experiment, chunk.s
    shape = grid.shapes[s]
    padded = list(chunk.lanes) + [chunk.lanes[-1]] * (step.size - len(chunk.lanes))
    data_words = id_words([lane.data_id for lane in padded])
    reps = np.asarray([lane.rep for lane in padded], dtype=np.uint32)
    data_vals = {}
    for name in _numeric_data_names(grid):
        source = [grid.data_points[lane.d].get(name, None) if name in grid.data_points[lane.d]
                  else grid.data_derived[s][lane.d][name] for lane in padded]
        data_vals[name] = _numbers(name, source)
    a_vals = {}
    for name in _numeric_analysis_names(grid):
        rows = [[point[name] if name in point else grid.analysis_derived[s][lane.d][a][name]
                 for a, point in enumerate(grid.analysis_points)] for lane in padded]
        a_vals[name] = _numbers(name, rows)
    return (truth_words(experiment, shape), traced_shape_values(experiment, shape), data_words, reps,
            data_vals, a_vals)


def _column(values) -> pa.Array:
    values = np.asarray(values)
    if values.dtype == object:
        return pa.array(values, type=pa.large_string())
    return pa.array(values)


_NUMPY = {"float": np.float64, "bool": np.bool_, "int": np.int64}


def _method_columns(experiment: Experiment) -> dict[str, str]:
    """Every method column with its declared type, in order of first declaration."""
    columns: dict = {}
    for method in experiment.methods.values():
        for name, kind in method.columns.items():
            if columns.setdefault(name, kind) != kind:
                raise UsageError(f"experiment {experiment.name!r}: column {name!r} is declared "
                                 f"{columns[name]} by one method and {kind} by another")
    return columns


def _rows(output, chunk: _Chunk, grid: Grid, order: np.ndarray, done: set) -> pa.Table:
    """Flatten {method: {column: [B, Q]}} into tidy rows (one per lane × analysis point ×
    method), leaving out the (point, rep) pairs in ``done`` (a re-run lane may hold stored
    points). ``order[q]`` is the analysis index of output position q.

    Built as an Arrow table straight from NumPy columns (no pandas on the hot path: at
    n = 40 it was a third of the host time per chunk). Columns: the grid values and derived
    values, rep, point, method, then every method column; a float column a method does not
    report is NaN there, a bool or int column is null (a method without a solver has a null
    ``converged``, never a made-up True)."""
    experiment, lanes, s = grid.experiment, chunk.lanes, chunk.s
    n_lanes, n_q = len(lanes), len(order)
    size = n_lanes * n_q
    d_index = np.repeat(np.fromiter((lane.d for lane in lanes), np.int64, n_lanes), n_q)
    a_index = np.tile(order, n_lanes)
    base = {k: np.full(size, v, dtype=object if isinstance(v, str) else None) for k, v in grid.shapes[s].items()
            if np.ndim(v) == 0}
    for axis in grid.experiment.data_axes:
        base[axis] = np.asarray([d[axis] for d in grid.data_points], dtype=object if axis in grid.static_data
                                else None)[d_index]
    for name in experiment.derived_names("data"):
        values = np.asarray([grid.data_derived[s][d][name] for d in range(len(grid.data_points))])
        if values.ndim == 1:   # scalar derived values become columns; arrays are only traced inputs
            base[name] = values[d_index]
    for axis in experiment.analysis_axes:
        base[axis] = np.asarray([a[axis] for a in grid.analysis_points],
                                dtype=object if axis in grid.static_analysis else None)[a_index]
    for name in experiment.derived_names("analysis"):
        table = np.asarray([[grid.analysis_derived[s][d][a][name] for a in range(len(grid.analysis_points))]
                            for d in range(len(grid.data_points))])
        if table.ndim == 2:
            base[name] = table[d_index, a_index]
    base["rep"] = np.repeat(np.fromiter((lane.rep for lane in lanes), np.int64, n_lanes), n_q)
    base["point"] = np.asarray([[lane.points[a] for a in order] for lane in lanes], dtype=np.int64).reshape(-1)
    keep = (np.ones(size, dtype=bool) if not done else
            np.fromiter(((p, r) not in done for p, r in zip(base["point"].tolist(), base["rep"].tolist())),
                        bool, size))
    n_keep = int(keep.sum())
    methods = list(experiment.methods)
    columns = {k: _column(np.tile(v[keep], len(methods))) for k, v in base.items()}
    columns["method"] = _column(np.repeat(np.asarray(methods, dtype=object), n_keep))
    for name, kind in _method_columns(experiment).items():
        parts, missing = [], []
        for method in methods:
            if name in output[method]:
                parts.append(np.asarray(output[method][name])[:n_lanes].reshape(-1)[keep].astype(_NUMPY[kind]))
                missing.append(np.zeros(n_keep, bool))
            else:
                parts.append(np.zeros(n_keep, _NUMPY[kind]))
                missing.append(np.ones(n_keep, bool))
        values, mask = np.concatenate(parts), np.concatenate(missing)
        if kind == "float":
            values[mask] = np.nan
            columns[name] = pa.array(values)
        else:
            columns[name] = pa.array(values, mask=mask if mask.any() else None)
    return store.mark_columns(pa.table(columns), _method_columns(experiment), experiment.derived_names())


@dataclass
class Plan:
    """What a run would compute: the expanded grid, the steps with their chunks, the
    (point, rep) pairs already stored, the output directory and the workers."""

    grid: Grid
    steps: list
    done: set
    out: Path
    workers: int
    reps: int
    policy: Batching

    @property
    def lanes(self) -> int:
        return sum(step.lanes for step in self.steps)

    def chunk_bytes(self, step: _Step) -> int:
        """A step's peak working set: ``workers`` chunks at once, each computing one
        micro-batch of ``micro`` lanes at a time (the experiment's ``lane_bytes`` each)."""
        return min(self.workers, len(step.chunks)) * step.micro * step.lane_bytes

    def compute_seconds(self) -> float:
        """The engine's cost model of this plan (:class:`Batching`: seconds per compiled
        program plus seconds per lane-analysis byte of work), as used to choose programs."""
        n_q = len(self.grid.analysis_points)
        return (self.policy.compile_seconds * len(self.steps)
                + sum(step.lanes * n_q * step.lane_bytes for step in self.steps) * self.policy.seconds_per_byte)

    def memory_line(self) -> str:
        """The largest lane and the peak working set of the plan, against the memory there is."""
        limit, what = memory_limit(self.policy.backend)
        lane = max(step.lane_bytes for step in self.steps)
        peak = max(self.chunk_bytes(step) for step in self.steps)
        return (f"memory: a lane ≈ {format_bytes(lane)} at most, peak working set ≈ {format_bytes(peak)} "
                f"(the experiment's lane_bytes estimate × micro-batch × workers)"
                + (f", of {format_bytes(limit)} ({what})" if limit else ""))

    def describe(self) -> list[str]:
        """The plan as lines: one per step (shape point, lanes, chunks, micro-batch, memory),
        then the peak memory and the cost model's run time."""
        n_q = len(self.grid.analysis_points)
        programs = f"{len(self.steps)} compiled program" + ("" if len(self.steps) == 1 else "s")
        lines = [f"{programs}, {self.lanes} replicate lanes × {n_q} analysis points "
                 f"× {len(self.grid.experiment.methods)} methods, {self.workers} worker(s); "
                 f"{len(self.done)} (point, rep) pairs already stored in {self.out}"]
        for step in self.steps:
            lines.append(f"  {_step_label(self.grid, step)}: {step.lanes} lanes in {len(step.chunks)} "
                         f"chunk(s) of {step.size}, micro-batch {step.micro}; a lane ≈ "
                         f"{format_bytes(step.lane_bytes)}, chunks in flight ≈ {format_bytes(self.chunk_bytes(step))}")
        if self.steps:
            lines.append(self.memory_line())
            lines.append(f"run time ≈ {format_duration(self.compute_seconds())} by the engine's cost model "
                         f"({self.policy.compile_seconds:g} s per program + {self.policy.seconds_per_byte:.3g} s per "
                         f"lane-analysis byte on {self.policy.backend}; `dpsim show` calibrates on this machine)")
        return lines


@dataclass(frozen=True)
class _Request:
    """A validated run request: the expanded grid and every setting, nothing read yet from
    the run directory's parts (:func:`_validated`)."""

    grid: Grid
    out: Path
    seed: int
    reps: int
    chunk: int | None
    workers: int
    policy: Batching
    overrides: Mapping[str, Sequence] | None
    code: dict


def _validated(experiment: Experiment, *, reps: int | None, seed: int, out, overrides, chunk: int | None,
               workers: int | None, micro_batch: int | None) -> _Request:
    """Check every setting and expand the grid, writing nothing (UsageError naming a bad value)."""
    reps = experiment.reps if reps is None else reps
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise UsageError(f"reps={reps!r} must be an integer ≥ 1")
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
        raise UsageError(f"chunk={chunk!r} must be an integer ≥ 1")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise UsageError(f"workers={workers!r} must be an integer ≥ 1")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise UsageError(f"seed={seed!r} must be an integer in [0, 2^31)")
    grid = expand_grid(experiment, overrides)
    _method_columns(experiment)
    out = Path(out or Path("runs") / experiment.name)
    store.check_compatible(out, experiment.name, seed)
    code = fingerprint(experiment)
    store.check_code(out, code)
    policy = batching(micro_batch=micro_batch)
    return _Request(grid, out, seed, reps, chunk, policy.workers if workers is None else workers, policy, overrides,
                    code)


def _planned(request: _Request) -> Plan:
    """The plan of a validated request against what its directory holds now. Raises
    UsageError, before anything is written, when one lane's working set exceeds the memory
    it would run in (:func:`memory_limit`)."""
    done = store.completed(request.out)
    steps = _plan(request.grid, request.reps, done, request.chunk, request.workers, request.policy)
    limit, what = memory_limit(request.policy.backend)
    for step in steps:
        if limit and step.lane_bytes > limit:
            raise UsageError(f"{request.grid.experiment.name} at {_step_label(request.grid, step)}: one replicate "
                             f"lane needs about {format_bytes(step.lane_bytes)}, more than {what} "
                             f"({format_bytes(limit)}); choose smaller sizes")
    return Plan(request.grid, steps, done, request.out, request.workers, request.reps, request.policy)


def plan_run(experiment: Experiment, *, reps: int | None = None, seed: int = 0, out=None, overrides=None,
             chunk: int | None = None, workers: int | None = None, micro_batch: int | None = None) -> Plan:
    """Validate a request and plan it, writing nothing (``--dry-run``; :func:`run_experiment`)."""
    return _planned(_validated(experiment, reps=reps, seed=seed, out=out, overrides=overrides, chunk=chunk,
                               workers=workers, micro_batch=micro_batch))


def run_experiment(experiment: Experiment, *, reps: int | None = None, seed: int = 0,
                   out: str | Path | None = None, overrides: Mapping[str, Sequence] | None = None,
                   chunk: int | None = None, progress: bool = True,
                   workers: int | None = None, watchdog: float | None = None,
                   source: str | None = None, micro_batch: int | None = None) -> RunSummary:
    """Run (or resume) ``experiment`` into ``out``; returns what was computed.

    All input is validated before anything is written. Re-running into the same directory
    computes only the (grid point, replicate) pairs that are missing. ``chunk``: lanes per
    chunk (one Parquet part each); ``workers``: chunks computed at the same time (default
    :func:`default_workers`). Neither changes the results. ``watchdog``: seconds without
    progress after which the run stops with :class:`~dpsim.errors.RunStalled`
    (:func:`watchdog_seconds`); the chunks written so far are kept, so re-running resumes.
    ``source``: where the experiment is defined (a paper module or ``study.py:NAME``),
    recorded in the manifest so that ``dpsim plot`` finds it again. ``micro_batch``: at most
    this many lanes vmapped together (default :func:`batching` of the backend); it changes
    no result beyond float rounding. One run at a time writes into a directory
    (:func:`~dpsim.experiment.store.exclusive`); the plan is made once it is held.

    Threads: one background thread only *compiles* (the next step's program, while the
    current one computes); programs are executed by ``workers`` daemon threads (chunks;
    each chunk draws θ* itself, :func:`~dpsim.experiment.program.make_chunk_fn`). No
    batched LAPACK call is ever executed on CPU (:mod:`dpsim.linalg`), which is what
    deadlocked concurrent chunks.
    """
    patience = watchdog_seconds(watchdog)
    compiler_options()   # a bad $DPSIM_XLA_CPU_OPT_LEVEL is refused before anything is written
    request = _validated(experiment, reps=reps, seed=seed, out=out, overrides=overrides, chunk=chunk,
                         workers=workers, micro_batch=micro_batch)        # writes nothing
    with store.exclusive(request.out):                                   # one writer per run directory
        return _run_planned(experiment, _planned(request), request, progress, patience, source)


def _run_planned(experiment: Experiment, work: Plan, settings: _Request, progress: bool, patience: float,
                 source: str | None) -> RunSummary:
    """:func:`run_experiment` once the directory is held: ``work`` was planned under the
    lock, so it sees every part another run finished before."""
    overrides, chunk, seed = settings.overrides, settings.chunk, settings.seed
    grid, plan, done, out, workers = work.grid, work.steps, work.done, work.out, work.workers
    groups = _groups(grid)
    previous = store.read_manifest(out) or {}
    if not plan and previous.get("complete"):
        # nothing to compute (e.g. verify judging a finished run): the folder is left as it was
        _warn_unconverged(experiment, previous.get("diagnostics", {}).get("unconverged", []))
        return RunSummary(out, 0, 0, 0.0, 0.0)
    reps = work.reps
    request = {"reps": reps, "overrides": {k: list(v) for k, v in (overrides or {}).items()},
               "chunk": chunk, "workers": workers, "grid": grid.axes, "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
               **environment()}
    manifest = {"experiment": experiment.name, "source": source or experiment.name, "code": settings.code,
                "title": experiment.title, "seed": seed, "shape_axes": list(experiment.shape_axes),
                "data_axes": list(experiment.data_axes), "analysis_axes": list(experiment.analysis_axes),
                "derived": list(experiment.derived_names()), "methods": list(experiment.methods),
                "history": [*previous.get("history", []), request],
                "study": previous.get("study", {}), "diagnostics": previous.get("diagnostics", {}),
                "complete": False}
    store.write_manifest(out, manifest)

    for line in _data_notes(experiment, grid):
        note(line)
    total_chunks = sum(len(step.chunks) for step in plan)
    started, first_chunks, rows_written, lanes_run = time.time(), 0.0, 0, 0
    bar = tqdm(total=total_chunks, desc=experiment.name, unit="chunk",
               disable=not progress or total_chunks == 0)
    a_words = id_words([stable_id(a) for a in grid.analysis_points])
    seed_arg = np.uint32(seed)

    def arguments(step, chunk):
        shape_words, shape_vals, data_words, reps_arg, data_vals, a_vals = _chunk_args(chunk, grid, step)
        return seed_arg, shape_words, shape_vals, data_words, reps_arg, data_vals, a_words, a_vals

    def prepare(step):
        """The compiled chunk program of one step (background thread: it compiles, it
        executes nothing)."""
        return compiled_chunk_fn(experiment, step.shape, step.static_data, groups, step.micro,
                                 arguments(step, step.chunks[0]))

    def compute(step, program, index):
        """One chunk: its rows (those not stored yet) as an Arrow table, and its lanes."""
        chunk = step.chunks[index]
        output = jax.device_get(program.fn(*arguments(step, chunk)))
        return _rows(output, chunk, grid, program.order, done), len(chunk)

    compiler, pool = DaemonPool(1, "dpsim-compile"), DaemonPool(workers, "dpsim-chunk")
    prepared = [compiler.submit(partial(prepare, step)) for step in plan]
    try:
        for index, (step, future) in enumerate(zip(plan, prepared)):
            t0 = time.time()
            where = _step_label(grid, step)
            program = wait(future, patience, f"the compilation of {experiment.name} at {where} "
                                        f"(step {index + 1}/{len(plan)})")
            tasks = _Tasks(len(step.chunks), partial(compute, step, program))
            for number, (table, lanes) in enumerate(in_order(pool, tasks, workers, patience,
                                                             f"a chunk of {experiment.name} at {where}")):
                if number == 0:
                    first_chunks += time.time() - t0
                store.write_part(out, table)
                rows_written += table.num_rows
                lanes_run += lanes
                bar.update(1)
    except BaseException:
        if not previous and rows_written == 0:
            # a run that failed before its first chunk leaves nothing behind (the lock's
            # holder then removes the folder it created)
            (out / store.MANIFEST).unlink(missing_ok=True)
        raise
    finally:
        compiler.shutdown()
        pool.shutdown()
        bar.close()
    seconds = time.time() - started
    request.update({"finished": time.strftime("%Y-%m-%dT%H:%M:%S"), "seconds": round(seconds, 3),
                    "lanes_run": lanes_run, "rows_written": rows_written,
                    "first_chunks_seconds_incl_compile": round(first_chunks, 3)})
    manifest["study"] = study_summary(out, experiment)
    manifest["diagnostics"] = {"unconverged": unconverged(out, experiment)}
    manifest["complete"] = True
    store.write_manifest(out, manifest)
    _warn_unconverged(experiment, manifest["diagnostics"]["unconverged"])
    return RunSummary(out, rows_written, lanes_run, seconds, first_chunks)


def _warn_unconverged(experiment: Experiment, items: list[dict]) -> None:
    """One warning per method whose fits did not all converge (the manifest's diagnostics)."""
    for item in items:
        warn(f"{experiment.name}: {item['failed']} of {item['fits']} {item['method']} fits did not converge "
             f"({item['where']})")


def _data_notes(experiment: Experiment, grid: Grid) -> list[str]:
    """One line per shape point with string values derived on the host (e.g. which data file,
    or which synthetic stand-in, a dataset axis resolved to)."""
    names = [n for n in experiment.derived_names("shape")]
    lines = []
    for shape in grid.shapes:
        strings = {n: shape[n] for n in names if isinstance(shape.get(n), str)}
        if strings:
            where = ", ".join(f"{a}={shape[a]}" for a in experiment.shape_axes)
            lines.append(f"{experiment.name} at {where}: " + "; ".join(f"{k}: {v}" for k, v in strings.items()))
    return list(dict.fromkeys(lines))


def study_summary(out: Path, experiment: Experiment) -> dict:
    """What the folder's table holds: every axis's values, and the replicates of every grid
    point (``points``: [{axis values…, "reps": R}]), so the manifest describes the data
    that figures, summaries and checks will use, whatever the requests were."""
    axes = [a for a in experiment.axes] + [n for n in experiment.derived_names("shape")]
    table = store.read_columns(out, [*axes, "point", "rep"])
    if table.empty:
        return {"axes": {}, "points": [], "rows": 0}
    per_point = table.groupby("point").agg({**{a: "first" for a in axes if a in table}, "rep": "nunique"})
    points = [{**{a: _json_value(row[a]) for a in axes if a in per_point}, "reps": int(row["rep"])}
              for _, row in per_point.iterrows()]
    reps = per_point["rep"]
    return {"axes": {a: sorted({_json_value(v) for v in table[a].unique()}, key=lambda v: (isinstance(v, str), v))
                     for a in axes if a in table},
            "grid_points": len(points), "reps": {"min": int(reps.min()), "max": int(reps.max())},
            "rows": int(len(table)), "points": points}


def _json_value(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return float(value)
    return value


def unconverged(out: Path, experiment: Experiment, limit: int = 3) -> list[dict]:
    """Per method with a solver: how many stored fits did not converge, and where in the
    grid (up to ``limit`` grid points with the most failures)."""
    axes = [a for a in experiment.axes]
    table = store.read_columns(out, [*axes, "method", "converged"])
    if "converged" not in table:
        return []
    found = []
    for method, rows in table.groupby("method"):
        known = rows[rows["converged"].notna()]
        failed = known[known["converged"] == False]  # noqa: E712 (nullable boolean)
        if failed.empty:
            continue
        varying = [a for a in axes if a in table and table[a].nunique() > 1]
        if varying:
            counts = failed.groupby(varying).size().sort_values(ascending=False)
            spots = [", ".join(f"{a}={_json_value(v)}" for a, v in zip(varying, key if isinstance(key, tuple) else (key,)))
                     + f" ({n})" for key, n in counts.head(limit).items()]
            where = "; ".join(spots) + (f"; and {len(counts) - limit} more grid points" if len(counts) > limit else "")
        else:
            where = "at the only grid point"
        found.append({"method": method, "failed": int(len(failed)), "fits": int(len(known)), "where": where})
    return found


def format_duration(seconds: float) -> str:
    """Seconds as "42 s", "3.5 min", "2.1 h" or "3.2 days"."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h" if seconds < 172800 else f"{seconds / 86400:.1f} days"


def _describe(shape: Mapping) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items()) or "its only shape point"


def _step_label(grid: Grid, step: _Step) -> str:
    """A step as text: its shape point and static data values, or with padding the program
    shape and the sizes it serves (e.g. ``capacity=475, link=logistic: n_items=400, 475``)."""
    padding = grid.experiment.padding
    if padding is None:
        return _describe({**step.shape, **step.static_data})
    sizes = sorted({grid.shapes[s][padding.axis] for s in step.points})
    return (_describe({**step.shape, **step.static_data}) + f": {padding.axis}="
            + ", ".join(str(n) for n in sizes))
