"""Planning a run: which lanes are still missing, in which compiled programs, in which chunks.

A *lane* is one (data point, replicate) pair (:mod:`dpsim.engine.execution.program`). A *step* is
one compiled program's worth of lanes: one shape point with one combination of string data
values, or with :class:`~dpsim.engine.definition.grid.Padding` a bucket of shape points of several
sizes (:func:`size_buckets`), each chunk holding lanes of one of them. Chunks of lanes have
a fixed size per step (the last one is padded), so each step compiles once; their size and
micro-batch come from the device's policy (:mod:`dpsim.engine.execution.batching`).

Lanes are listed lazily (:class:`_MissingReps`, :class:`_Lanes`, :class:`_Chunks`): a
plan's size and the time to make it grow with the grid and the stored rows, not with the
replicate count. A lane is re-run if any of its analysis points is missing; rows already
stored are dropped when the chunk is written.

A run may compute one *part* I/N of the grid (``dpsim run --part I/N``, array jobs):
:func:`lane_part` assigns every lane to one part from its identity alone (its grid point's
stable id and its replicate), so the N parts are disjoint, cover the grid, and do not depend
on what is stored, on the chunk size or on the worker count; each grid point's replicates
go round-robin over the parts, so every part gets its share of every shape.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import jax
import numpy as np

from dpsim.errors import UsageError
from dpsim.engine.execution.batching import Batching, batching, chunk_layout, memory_limit
from dpsim.engine.definition.grid import Grid
from dpsim.engine.execution.program import lane_shape, program_shape, static_shape
from dpsim.engine.presentation.units import format_bytes, format_duration


@dataclass(frozen=True)
class _Lane:
    """One (data point, replicate): ``d`` indexes grid.data_points; ``points`` holds the
    stable id of every analysis point of this lane (grid order); ``data_id`` its data id."""

    d: int
    rep: int
    points: tuple
    data_id: int


Part = tuple  # (I, N): the I-th of N parts of a grid, 1 ≤ I ≤ N


def check_part(part) -> Part | None:
    """``part`` as an (I, N) pair of ints with 1 ≤ I ≤ N (None: the whole grid).

    Raises:
        UsageError: naming the bad value.
    """
    if part is None:
        return None
    ok = (
        isinstance(part, (tuple, list))
        and len(part) == 2
        and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in part)
        and 1 <= part[0] <= part[1]
    )
    if not ok:
        raise UsageError(f"part={part!r} must be (I, N) with integers 1 ≤ I ≤ N")
    return int(part[0]), int(part[1])


def parse_part(text: str) -> Part:
    """``--part I/N`` → (I, N); one-line UsageError naming the value otherwise."""
    i, slash, n = str(text).partition("/")
    try:
        part = (int(i), int(n)) if slash else None
    except ValueError:
        part = None
    if part is None or not 1 <= part[0] <= part[1]:
        raise UsageError(f"--part {text!r} must be I/N with integers 1 ≤ I ≤ N (e.g. 2/8)")
    return part


def lane_part(point_id, rep, n: int):
    """The part (1 … ``n``) a lane belongs to: (its grid point's stable id + its replicate)
    mod n, plus 1. Only the lane's identity counts, never what is stored, the chunk size or
    the worker count; a grid point's replicates go round-robin over the parts, starting at
    a part set by its id. Works elementwise on arrays.

    Args:
        point_id: the lane's grid point (shape and data values) stable id, int or int64 array.
        rep: the replicate(s), int or int64 array of the same shape.
        n: the number of parts.
    Returns:
        the part(s), 1 … n.
    """
    return (np.asarray(point_id, np.int64) % n + np.asarray(rep, np.int64) % n) % n + 1


class _MissingReps:
    """The replicates r < ``reps`` with r ≡ ``first`` (mod ``stride``) not in ``complete``
    (sorted, distinct), in order, without listing them. With stride 1 (the whole grid) the
    k-th is k + #{i : complete[i] − i ≤ k} (complete[i] − i counts the missing replicates
    below complete[i]); with a stride (one part of the grid, :func:`lane_part`) the same
    holds for the indices j of r = first + stride·j. Memory and time are independent of
    ``reps``."""

    def __init__(self, reps: int, complete: np.ndarray, stride: int = 1, first: int = 0):
        self.reps, self.stride, self.first = reps, stride, first
        complete = np.asarray(complete, np.int64)
        mine = (complete[(complete - first) % stride == 0] - first) // stride
        self._count = max(0, -(-(reps - first) // stride))  # #{r < reps : r ≡ first}
        self._gaps = mine - np.arange(len(mine))

    def __len__(self) -> int:
        return self._count - len(self._gaps)

    def take(self, start: int, stop: int) -> np.ndarray:
        """The missing replicates at positions [start, stop), (stop − start,) int64."""
        k = np.arange(start, stop, dtype=np.int64)
        return self.first + self.stride * (k + np.searchsorted(self._gaps, k, side="right"))


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
class Chunk:
    """Lanes of one shape point ``s`` (grid.shapes[s]), computed by one program call."""

    s: int
    lanes: list

    def __len__(self) -> int:
        return len(self.lanes)


class _Chunks:
    """A step's chunks, made when asked for: each shape point's lanes cut into pieces of
    ``size`` (the last one shorter). ``len`` and indexing cost nothing per replicate."""

    def __init__(self, members: list[tuple[int, _Lanes]], size: int):
        self.members, self.size = members, size
        self._starts = np.cumsum([0] + [math.ceil(len(lanes) / size) for _, lanes in members])

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __getitem__(self, index: int) -> Chunk:
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        index %= len(self)
        m = int(np.searchsorted(self._starts, index, side="right")) - 1
        s, lanes = self.members[m]
        i = (index - int(self._starts[m])) * self.size
        return Chunk(s, lanes[i : i + self.size])

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    @property
    def lanes(self) -> int:
        return sum(len(lanes) for _, lanes in self.members)


@dataclass
class Step:
    """One compiled program's worth of lanes: the program's static ``shape``
    (:func:`~dpsim.engine.execution.program.program_shape`) with static data values; its chunks
    may belong to several shape points (``points``: their indices) when the experiment pads
    sizes (:class:`~dpsim.engine.definition.grid.Padding`)."""

    shape: dict
    static_data: dict
    chunks: _Chunks
    size: int
    micro: int
    points: tuple = ()
    lane_bytes: int = 0
    devices: int = 1  # the devices its chunks' lanes are sharded across (Batching.devices)
    key: str | None = (
        None  # its calibration cache key (:func:`~dpsim.engine.execution.calibration.step_key`)
    )
    micro_from: str = ""  # where its micro-batch came from (``--dry-run`` shows it)
    calibrate: tuple = ()  # micro-batches to time on its first chunks while it runs (() : none)
    cells: "StepCells | None" = None  # its CellArrays, built once (:func:`step_cells`), or None

    @property
    def lanes(self) -> int:
        return self.chunks.lanes


@dataclass(frozen=True)
class StepCells:
    """The :class:`~dpsim.engine.definition.grid.CellArrays` of one step, built once when it is
    planned: ``tables`` {name: {array: [C, …]}} (device arrays, each cell zero-padded to the
    largest), ``index`` {name: {(s, d) or (s, d, a): cell}} (shape, data and, for an
    analysis-level name, analysis indices), ``counts`` {name: C}, their ``nbytes`` and the host
    ``seconds`` it took to build them."""

    tables: dict
    index: dict
    counts: dict
    nbytes: int
    seconds: float


def _stacked(arrays: list[dict], name: str) -> dict:
    """{array: [C, …]} of the cells' {array: ndarray}, zero-padded to the largest shape."""
    keys = sorted(arrays[0])
    out = {}
    for key in keys:
        parts = [np.asarray(a[key]) if set(a) == set(keys) else None for a in arrays]
        if any(p is None for p in parts) or len({p.ndim for p in parts}) != 1:
            raise UsageError(
                f"cell arrays {name!r}: every cell must return the arrays {keys} with one rank each"
            )
        shape = tuple(max(p.shape[i] for p in parts) for i in range(parts[0].ndim))
        stack = np.zeros((len(parts), *shape), dtype=np.result_type(*parts))
        for c, part in enumerate(parts):
            stack[(c, *(slice(0, n) for n in part.shape))] = part
        out[key] = stack
    return out


# Cells built in this process, kept for the next plan that needs them (a run of the same grid
# again: verify's seeds and mutants, a notebook's re-run): {(fn, cell key): read-only arrays},
# least recently used first, at most CELL_CACHE_BYTES. A CellArrays fn is a pure function of
# its cell's values (its contract), so a cell is the same arrays whenever it is built.
CELL_CACHE_BYTES = 256 * 2**20
_CELL_CACHE: "OrderedDict[tuple, dict]" = OrderedDict()
_CELL_CACHE_LOCK = threading.Lock()


def clear_cell_cache() -> None:
    """Forget the cells built in this process (the next plan builds them again)."""
    with _CELL_CACHE_LOCK:
        _CELL_CACHE.clear()


def _cell(fn: Callable, key: str, point: dict) -> dict:
    """``fn(point)`` (the arrays of one cell, read-only), from this process's cache when it
    built the cell before (:data:`CELL_CACHE_BYTES`)."""
    try:
        with _CELL_CACHE_LOCK:
            found = _CELL_CACHE.get((fn, key))
            if found is not None:
                _CELL_CACHE.move_to_end((fn, key))
                return found
    except TypeError:  # an unhashable fn: built each time
        return dict(fn(point))
    built = {name: np.array(value) for name, value in dict(fn(point)).items()}
    for value in built.values():
        value.setflags(write=False)
    if sum(v.nbytes for v in built.values()) <= CELL_CACHE_BYTES:
        with _CELL_CACHE_LOCK:
            _CELL_CACHE[(fn, key)] = built
            while (
                sum(v.nbytes for arrays in _CELL_CACHE.values() for v in arrays.values())
                > CELL_CACHE_BYTES
            ):
                _CELL_CACHE.popitem(last=False)
    return built


def step_cells(grid: Grid, points: Sequence[int], data_indices: Sequence[int]) -> StepCells | None:
    """The experiment's cell arrays for the lanes of shape points ``points`` × data points
    ``data_indices`` (one step): each distinct cell built once, by its ``fn`` on the host, or
    taken from this process's earlier plans (:func:`_cell`). None when the experiment
    declares none."""
    experiment = grid.experiment
    if not experiment.cell_arrays:
        return None
    start = time.perf_counter()
    tables, index, counts, nbytes = {}, {}, {}, 0
    for cells in experiment.cell_arrays:
        analysis = experiment.cell_level(cells) == "analysis"
        built, where, mine = [], {}, {}
        for s in points:
            for d in data_indices:
                base = {**grid.shapes[s], **grid.data_points[d], **grid.data_derived[s][d]}
                for a in range(len(grid.analysis_points)) if analysis else (None,):
                    values = (
                        base
                        if a is None
                        else {**base, **grid.analysis_points[a], **grid.analysis_derived[s][d][a]}
                    )
                    point = {axis: values[axis] for axis in cells.axes}
                    key = repr(sorted(point.items()))
                    if key not in where:
                        where[key] = len(built)
                        built.append(_cell(cells.fn, key, point))
                    mine[(s, d) if a is None else (s, d, a)] = where[key]
        stacked = _stacked(built, cells.name)
        nbytes += sum(v.nbytes for v in stacked.values())
        tables[cells.name] = {k: jax.device_put(v) for k, v in stacked.items()}
        index[cells.name], counts[cells.name] = mine, len(built)
    return StepCells(tables, index, counts, nbytes, time.perf_counter() - start)


def analysis_groups(grid: Grid) -> list:
    """Analysis points grouped by their string (static) values, in grid order:
    [(static values, [analysis indices])]."""
    groups: dict = {}
    for a, point in enumerate(grid.analysis_points):
        static = tuple((k, point[k]) for k in grid.static_analysis)
        groups.setdefault(static, []).append(a)
    return [(dict(static), indices) for static, indices in groups.items()]


def size_buckets(
    sizes: Sequence[int], cost: Callable[[int, int], float], compile_seconds: float
) -> dict:
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
    best = [0.0] + [math.inf] * len(values)  # best[j]: cheapest plan of values[:j]
    cut = [0] * (len(values) + 1)
    for j in range(1, len(values) + 1):
        capacity = values[j - 1]
        run_cost = 0.0
        for i in range(j - 1, -1, -1):  # the run values[i:j]
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
    padding = experiment.tuning.padding
    if padding is None:
        return [program_shape(experiment, shape) for shape in grid.shapes]
    for shape in grid.shapes:
        for axis in padding.traced_axes:
            if isinstance(shape[axis], bool) or not isinstance(shape[axis], (int, np.integer)):
                raise UsageError(
                    f"experiment {experiment.name!r}: padded shape axis {axis}={shape[axis]!r} "
                    f"must be an integer"
                )
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
            working = experiment.tuning.lane_bytes(
                lane_shape(experiment, program_shape(experiment, first, capacity))
            )
            return count[size] * lanes_per_point * working * policy.seconds_per_byte

        capacity = size_buckets(list(count), cost, policy.compile_seconds)
        for s in members:
            shapes[s] = program_shape(
                experiment, grid.shapes[s], capacity[int(grid.shapes[s][padding.axis])]
            )
    return shapes


def _complete_reps(done: set) -> dict:
    """point id → the sorted replicates stored for it (from the (point, rep) pairs)."""
    by_point: dict = {}
    for pid, rep in done:
        by_point.setdefault(pid, []).append(rep)
    return {pid: np.unique(np.asarray(reps, np.int64)) for pid, reps in by_point.items()}


def replicate_range(wanted) -> tuple[int, int]:
    """(start, stop) of a ``reps_at`` value: a count R is (0, R), a pair is itself."""
    if isinstance(wanted, tuple):
        return int(wanted[0]), int(wanted[1])
    return 0, int(wanted)


def _missing(
    points: tuple, reps: int, stored: dict, data_id: int, part: Part | None, start: int = 0
) -> _MissingReps:
    """The replicates in [``start``, ``reps``) of a lane whose analysis ``points`` are not all
    stored (a lane is complete only when every one of its points is); with ``part`` (I, N)
    only those of that part (:func:`lane_part` of ``data_id``, the lane's grid point)."""
    stride, first = 1, 0
    if part is not None:
        stride = part[1]
        first = int((part[0] - 1 - data_id % stride) % stride)  # lane_part(data_id, first, N) == I
    complete = None
    for pid in points:
        have = stored.get(pid, np.empty(0, np.int64))
        complete = have if complete is None else np.intersect1d(complete, have, assume_unique=True)
        if not len(complete):
            break
    complete = np.empty(0, np.int64) if complete is None else complete
    first += stride * max(
        0, -(-(start - first) // stride)
    )  # the first replicate ≥ start of this part
    return _MissingReps(reps, complete[(complete >= first) & (complete < reps)], stride, first)


def plan_steps(
    grid: Grid,
    reps: int,
    done: set,
    chunk: int | None = None,
    workers: int = 1,
    policy: Batching | None = None,
    part: Part | None = None,
    reps_at: Mapping[int, int] | None = None,
    cache: Mapping[str, dict] | None = None,
    calibrate: bool = True,
) -> list[Step]:
    """For each step (a program shape and static data values), the lanes still missing,
    split per shape point into chunks of one fixed size. A lane is re-run if any of its
    analysis points is missing; rows already stored are dropped on write. Time and memory
    grow with the grid and the stored rows, not with ``reps`` (lanes are listed lazily).
    ``part`` (I, N): only the lanes of that part (:func:`lane_part`); programs are chosen
    for the whole grid (:func:`_capacities`), so every part compiles the same ones.
    ``reps_at``: data point id (:meth:`Experiment.point_id` of shape and data values) →
    replicates wanted there, a count R (replicates 0 … R − 1) or a range (start, stop); only
    those data points are planned, each over its own replicates (``dpsim solve``, ``verify
    --until-decided``); ``reps`` is then their largest stop.
    ``cache``: the calibration cache's entries (:mod:`dpsim.engine.execution.calibration`): each
    step's micro-batch and chunk size then come from :func:`~dpsim.engine.execution.calibration.choose`
    (a cached calibration, a layout compiled before, or a calibration at run time); None:
    the policy's rule alone (:func:`chunk_layout`). ``calibrate`` False: cached choices
    are used but no step is calibrated (the executor cannot time candidates)."""
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
                data_id = experiment.point_id({**shape, **data})
                start, stop = (
                    (0, reps) if reps_at is None else replicate_range(reps_at.get(data_id, 0))
                )
                if stop <= start:
                    continue
                points = tuple(
                    experiment.point_id({**shape, **data, **a}) for a in grid.analysis_points
                )
                blocks.append(
                    _Block(d, points, data_id, _missing(points, stop, stored, data_id, part, start))
                )
            lanes = _Lanes(blocks)
            if len(lanes):
                key = (repr(sorted(compiled.items())), static)
                steps.setdefault(key, (compiled, static, [], data_indices))[2].append((s, lanes))
    plan = []
    if cache is not None:
        from dpsim.engine.execution import calibration
        from dpsim.engine.execution.program import program_identity

        identity, how = program_identity(experiment), calibration.mode()
        if not calibrate and how != "off":
            how = "reuse"  # an executor that cannot time candidates (Ray) only reads the cache
        device = calibration.device_label(policy.backend, policy.devices)
    n_q = len(grid.analysis_points)
    for compiled, static, members, data_indices in steps.values():
        most = max(len(lanes) for _, lanes in members)
        lane_bytes = int(experiment.tuning.lane_bytes(lane_shape(experiment, compiled)))
        key, origin, options = None, "", ()
        if cache is None:
            size, micro = chunk_layout(most, lane_bytes, n_q, chunk, workers, policy)
        else:
            key = calibration.step_key(identity, compiled, dict(static), device)
            size, micro, origin, options = calibration.choose(
                most,
                sum(len(lanes) for _, lanes in members),
                lane_bytes,
                n_q,
                chunk,
                workers,
                policy,
                cache.get(key),
                how,
            )
        points = tuple(s for s, _ in members)
        plan.append(
            Step(
                compiled,
                dict(static),
                _Chunks(members, size),
                size,
                micro,
                points,
                lane_bytes,
                policy.devices,
                key,
                origin,
                options,
                step_cells(grid, points, data_indices),
            )
        )
    return plan


@dataclass
class Plan:
    """What a run would compute: the expanded grid, the steps with their chunks, the
    (point, rep) pairs already stored, the output directory and the batching policy it was
    planned under (its ``workers`` and ``in_flight``)."""

    grid: Grid
    steps: list
    done: set
    out: Path
    reps: int
    policy: Batching
    part: Part | None = None

    @property
    def workers(self) -> int:
        """Chunks computed at the same time (a step has at least that many chunks)."""
        return self.policy.workers

    @property
    def in_flight(self) -> int:
        """Chunks computing or queued on the device at once (threads of the local executor)."""
        return self.policy.in_flight

    @property
    def lanes(self) -> int:
        return sum(step.lanes for step in self.steps)

    def chunk_bytes(self, step: Step) -> int:
        """A step's peak working set: ``in_flight`` chunks at once, each computing one
        micro-batch of ``micro`` lanes at a time (the experiment's ``lane_bytes`` each) on
        each device; on CPU the devices share the host's memory, so they add up."""
        shared = step.devices if self.policy.backend == "cpu" else 1
        cells = 0 if step.cells is None else step.cells.nbytes
        return min(self.in_flight, len(step.chunks)) * step.micro * step.lane_bytes * shared + cells

    def compute_seconds(self) -> float:
        """The engine's cost model of this plan (:class:`Batching`: seconds per compiled
        program plus seconds per lane-analysis byte of work), as used to choose programs."""
        n_q = len(self.grid.analysis_points)
        return (
            self.policy.compile_seconds * len(self.steps)
            + sum(step.lanes * n_q * step.lane_bytes for step in self.steps)
            * self.policy.seconds_per_byte
        )

    def memory_line(self) -> str:
        """The largest lane and the peak working set of the plan, against the memory there is."""
        limit, what = memory_limit(self.policy.backend)
        lane = max(step.lane_bytes for step in self.steps)
        peak = max(self.chunk_bytes(step) for step in self.steps)
        return (
            f"memory: a lane ≈ {format_bytes(lane)} at most, peak working set ≈ {format_bytes(peak)} "
            f"(the experiment's lane_bytes estimate × micro-batch × chunks in flight, plus its cell arrays"
            f"{' × devices' if self.policy.backend == 'cpu' and self.policy.devices > 1 else ''})"
            + (f", of {format_bytes(limit)} ({what})" if limit else "")
        )

    def __str__(self) -> str:
        """The lines ``dpsim run --dry-run`` prints (:meth:`describe`), so that ``print(plan)``
        in a notebook reads as the command does (the dataclass repr holds every cell array)."""
        return "\n".join(self.describe())

    def _repr_pretty_(self, printer, cycle) -> None:
        """IPython's display of a plan: as :meth:`__str__`."""
        printer.text(str(self))

    def describe(self) -> list[str]:
        """The plan as lines: one per step (shape point, lanes, chunks, micro-batch, memory),
        then the peak memory and the cost model's run time."""
        n_q = len(self.grid.analysis_points)
        programs = f"{len(self.steps)} compiled program" + ("" if len(self.steps) == 1 else "s")
        which = "" if self.part is None else f"part {self.part[0]}/{self.part[1]} of the grid: "
        lines = [
            f"{which}{programs}, {self.lanes} replicate lanes × {n_q} analysis points "
            f"× {len(self.grid.experiment.methods)} methods, {self.workers} worker(s)"
            f"{'' if self.in_flight == self.workers else f', {self.in_flight} chunks in flight'}, "
            f"{_devices(self.policy)}; "
            f"{len(self.done)} (point, rep) pairs already stored in {self.out}"
        ]
        for step in self.steps:
            lines.append(
                f"  {step_label(self.grid, step)}: {step.lanes} lanes in {len(step.chunks)} "
                f"chunk(s) of {step.size}, micro-batch {step.micro}"
                f"{f' ({step.micro_from})' if step.micro_from else ''}; a lane ≈ "
                f"{format_bytes(step.lane_bytes)}, chunks in flight ≈ {format_bytes(self.chunk_bytes(step))}"
            )
            if step.cells is not None:
                lines.append(
                    "    cell arrays (built once, shared by its chunks): "
                    + ", ".join(
                        f"{name} {count} cell(s)" for name, count in step.cells.counts.items()
                    )
                    + f", {format_bytes(step.cells.nbytes)}, built in {1e3 * step.cells.seconds:.0f} ms"
                )
        if self.steps:
            lines.append(self.memory_line())
            lines.append(
                f"run time ≈ {format_duration(self.compute_seconds())} by the engine's cost model "
                f"({self.policy.compile_seconds:g} s per program + {self.policy.seconds_per_byte:.3g} s per "
                f"lane-analysis byte on {self.policy.backend}; `dpsim show` calibrates on this machine)"
            )
        return lines


def _devices(policy: Batching) -> str:
    """The device count of a plan as text (``$DPSIM_DEVICES``, :func:`~dpsim.engine.execution.batching.device_count`)."""
    if policy.devices == 1:
        return f"1 {policy.backend} device"
    return f"{policy.devices} {policy.backend} devices (each chunk's lanes sharded across them)"


def _describe(shape: Mapping) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items()) or "its only shape point"


def step_label(grid: Grid, step: Step) -> str:
    """A step as text: its shape point and static data values, or with padding the program
    shape and the sizes it serves (e.g. ``capacity=475, link=logistic: n_items=400, 475``)."""
    padding = grid.experiment.tuning.padding
    if padding is None:
        return _describe({**step.shape, **step.static_data})
    sizes = sorted({grid.shapes[s][padding.axis] for s in step.points})
    return (
        _describe({**step.shape, **step.static_data})
        + f": {padding.axis}="
        + ", ".join(str(n) for n in sizes)
    )
