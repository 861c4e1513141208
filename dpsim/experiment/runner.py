"""Run an experiment's grid: keys, compilation per shape, micro-batched lanes, chunks, resume.

A *lane* is one (data point, replicate) pair: it draws the data once and analyses it at
every analysis point (ε, c0, …) in turn, so all privacy levels of a replicate see the same
data. Lanes are processed by ``lax.map`` in small vmapped micro-batches: a full ``vmap``
over hundreds of lanes makes every per-lane n×n array fall out of cache, and every lane
waits for the slowest one's while-loop: for the n = 300 BTL MLE it measured 3.48 ms/fit
against 1.29 in micro-batches of 4 (benchmarks/bench_cai.py, section S). Chunks of lanes
have a fixed size per shape (the last one is padded), so each shape point compiles once;
on CPU several chunks are computed at the same time (:func:`default_workers`); each chunk
is written as one atomic Parquet part, by the main thread.
"""
from __future__ import annotations

import math
import os
import queue
import threading
import time
from collections import deque
from concurrent.futures import Future, TimeoutError as FutureTimeout
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pyarrow as pa
from tqdm.auto import tqdm

from dpsim.experiment import store
from dpsim.experiment.errors import RunStalled, UsageError, warn
from dpsim.experiment.grid import Experiment, Grid, expand_grid, stable_id
from dpsim.linalg import batched_lapack_calls

_TRUTH, _DATA, _ANALYSIS = 1, 2, 3
MICRO_BATCH_BYTES = 3 * 2**20
MAX_MICRO_BATCH = 128
MAX_WORKERS = 4
CHUNK_WORK = 2e8
DEFAULT_WATCHDOG_SECONDS = 900.0


@dataclass
class RunSummary:
    out: Path
    rows_written: int
    lanes_run: int
    seconds: float
    compile_seconds: float


def micro_batch_size(lane_bytes: int) -> int:
    """Most lanes vmapped together: the largest power of two whose working set fits ~3 MiB,
    at most MAX_MICRO_BATCH (128 measured faster than 64 and 256 at n = 20–40, benchmarks/)."""
    size = max(1, int(MICRO_BATCH_BYTES // max(lane_bytes, 1)))
    return int(min(MAX_MICRO_BATCH, 2 ** int(math.log2(size))))


def default_workers() -> int:
    """Chunks computed at the same time: the available CPU cores (at most MAX_WORKERS) on the
    CPU backend, one chunk at a time on an accelerator.

    XLA:CPU splits each operation over its thread pool, which pays off for big operations
    but not for the many small ones of a small-n solve. Measured on 2 cores
    (benchmarks/bench_cai.py, section W, warm runs end to end): the n = 40 workload (120
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
                 workers: int = 1) -> tuple[int, int]:
    """(chunk size, micro-batch size) for ``n_lanes`` lanes of one shape point.

    Chunks: ``requested`` lanes each, else about CHUNK_WORK bytes of work each, and at least
    ``workers`` chunks when there are enough lanes, all of one size (one compilation). The
    micro-batch is then the fewest micro-batches of at most :func:`micro_batch_size` lanes
    that cover a chunk, balanced, so a chunk is padded by less than one lane per micro-batch.
    """
    largest = micro_batch_size(lane_bytes)
    if requested is not None:
        n_chunks = math.ceil(n_lanes / requested)
    else:
        target = max(largest, int(CHUNK_WORK / max(lane_bytes * n_analysis / 8, 1)))
        n_chunks = max(math.ceil(n_lanes / target), min(workers, n_lanes))
    size = math.ceil(n_lanes / max(n_chunks, 1))
    batches = math.ceil(size / largest)
    micro = math.ceil(size / batches)
    return batches * micro, micro


def base_key(seed: int):
    return jax.random.key(seed)


def id_words(ids) -> np.ndarray:
    """63-bit ids as (low, high) uint32 words, the form ``fold_in`` takes."""
    ids = np.asarray(ids, dtype=np.uint64)
    return np.stack([ids & np.uint64(0xFFFFFFFF), ids >> np.uint64(32)], axis=-1).astype(np.uint32)


def fold_in_id(key, words):
    """Fold a 63-bit id, given as its two uint32 words, into a key."""
    return jax.random.fold_in(jax.random.fold_in(key, words[0]), words[1])


def truth_key(seed, shape_words) -> jax.Array:
    """Key of the θ*-design of one shape point: (seed, shape id), the id given as its two
    uint32 words (:func:`id_words` of :func:`stable_id` of the shape). Traceable."""
    return fold_in_id(jax.random.fold_in(base_key(seed), _TRUTH), shape_words)


def _lane_key(seed, data_words, rep):
    key = fold_in_id(jax.random.fold_in(base_key(seed), _DATA), data_words)
    return jax.random.fold_in(key, rep)


def make_chunk_fn(experiment: Experiment, shape: dict, micro: int):
    """The function of one shape point: (seed, lanes) → {method: {metric: [lanes, Q]}}.

    Data key: (seed, id(shape ∪ data point), rep). Analysis key: the lane key folded with
    the analysis point's id, so within a replicate the analyses differ only in their noise.
    The seed is an argument, so one compilation serves every seed.
    """

    def lane(seed, truth, analysis_ids, analysis_vals, lane_args):
        data_id, rep, data_vals = lane_args
        key = _lane_key(seed, data_id, rep)
        sample = experiment.generate(jax.random.fold_in(key, _DATA), shape, truth, data_vals)

        def one(args):
            a_id, a_vals = args
            a_key = fold_in_id(jax.random.fold_in(key, _ANALYSIS), a_id)
            return experiment.analyse(a_key, shape, truth, sample, data_vals, a_vals)

        return jax.lax.map(one, (analysis_ids, analysis_vals))

    def chunk(seed, truth, analysis_ids, analysis_vals, data_ids, reps, data_vals):
        return jax.lax.map(lambda args: lane(seed, truth, analysis_ids, analysis_vals, args),
                           (data_ids, reps, data_vals), batch_size=micro if micro > 1 else None)

    return chunk


_COMPILED: dict = {}


def _signature(tree) -> str:
    """Shapes, dtypes and structure of a pytree of arrays or ``ShapeDtypeStruct`` s."""
    leaves = jax.tree_util.tree_map(lambda a: (tuple(a.shape), str(a.dtype)), tree)
    return repr(jax.tree_util.tree_structure(tree)) + repr(leaves)


def _spec(tree):
    """``ShapeDtypeStruct`` s of a pytree of arrays, for compiling without executing."""
    return jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype)
                                  if not isinstance(a, jax.ShapeDtypeStruct) else a, tree)


def _lapack_problem(compiled) -> list[str]:
    """Batched LAPACK calls of a compiled program (CPU only; see :mod:`dpsim.linalg`)."""
    if jax.default_backend() != "cpu":
        return []
    return batched_lapack_calls(compiled.as_text())


def compiled_truth_fn(experiment: Experiment, shape: dict):
    """Ahead-of-time compiled (seed, shape-id words) → θ*-design of one shape point.

    Compiled only (never executed) in the background thread; the runner executes it."""
    key = ("truth", id(experiment), repr(sorted(shape.items())))
    entry = _COMPILED.get(key)
    if entry is None:
        static = _Static(shape)
        fn = jax.jit(lambda seed, words: experiment.truth(truth_key(seed, words), static))
        compiled = fn.lower(jax.ShapeDtypeStruct((), jnp.uint32), jax.ShapeDtypeStruct((2,), jnp.uint32)).compile()
        problem = _lapack_problem(compiled)
        if problem:
            raise UsageError(f"experiment {experiment.name!r}: its truth function calls LAPACK on a batch "
                             f"({'; '.join(problem)}), which deadlocks XLA:CPU; use dpsim.linalg")
        entry = (experiment, compiled)
        _COMPILED[key] = entry
    return entry[1]


def compiled_chunk_fn(experiment: Experiment, shape: dict, micro: int, example_args: tuple):
    """Ahead-of-time compiled chunk function, cached in-process per (experiment, shape,
    micro-batch, argument shapes): a second run of the same experiment compiles nothing.

    ``example_args`` may be arrays or ``ShapeDtypeStruct`` s (compiling executes nothing).
    On CPU a program with a batched LAPACK call can deadlock (:mod:`dpsim.linalg`): it is
    compiled again with unbatched lanes (micro-batch 1, with a warning), and refused with a
    one-line error if a batched call remains.
    """
    example_args = _spec(example_args)
    key = (id(experiment), repr(sorted(shape.items())), micro, _signature(example_args))
    entry = _COMPILED.get(key)
    if entry is None:
        compiled = jax.jit(make_chunk_fn(experiment, shape, micro)).lower(*example_args).compile()
        problem = _lapack_problem(compiled)
        if problem and micro > 1:
            warn(f"experiment {experiment.name!r} calls LAPACK on a batch of lanes ({'; '.join(problem)}); "
                 f"batched LAPACK deadlocks XLA:CPU, so its lanes run one at a time (slower): "
                 f"use dpsim.linalg (e.g. dpsim.linalg.solve) to keep them batched")
            compiled = jax.jit(make_chunk_fn(experiment, shape, 1)).lower(*example_args).compile()
            problem = _lapack_problem(compiled)
        if problem:
            raise UsageError(f"experiment {experiment.name!r}: a replicate calls LAPACK on a batch "
                             f"({'; '.join(problem)}), which deadlocks XLA:CPU; use dpsim.linalg")
        entry = (experiment, compiled)  # keep experiment alive for id()
        _COMPILED[key] = entry
    return entry[1]


def _as_array(values: Sequence) -> np.ndarray:
    """Host float64 array of grid values (passed to compiled programs without an eager op)."""
    return np.asarray(values, dtype=np.float64)


def _column(values) -> pa.Array:
    values = np.asarray(values)
    if values.dtype == object:
        return pa.array(values, type=pa.large_string())
    return pa.array(values)


def _rows(output, shape, lanes, analysis_points, data_points, done: set) -> pa.Table:
    """Flatten {method: {metric: [B, Q]}} into tidy rows (one per lane × analysis × method),
    leaving out the (point, rep) pairs in ``done`` (a re-run lane may hold stored points).

    Built as an Arrow table straight from NumPy columns (no pandas on the hot path: at
    n = 40 it was a third of the host time per chunk). Columns: the grid parameters, rep,
    point, method, then every metric in order of first appearance; a metric that a method
    does not report is NaN there (float64)."""
    n_lanes, n_analysis = len(lanes), len(analysis_points)
    size = n_lanes * n_analysis
    d_index = np.repeat(np.fromiter((lane[0] for lane in lanes), np.int64, n_lanes), n_analysis)
    a_index = np.tile(np.arange(n_analysis), n_lanes)
    base = {k: np.full(size, v, dtype=object if isinstance(v, str) else None) for k, v in shape.items()}
    for axis in data_points[0]:
        base[axis] = np.asarray([d[axis] for d in data_points])[d_index]
    for axis in analysis_points[0]:
        base[axis] = np.asarray([a[axis] for a in analysis_points])[a_index]
    base["rep"] = np.repeat(np.fromiter((lane[1] for lane in lanes), np.int64, n_lanes), n_analysis)
    base["point"] = np.asarray([lane[2] for lane in lanes], dtype=np.int64).reshape(-1)
    keep = (np.ones(size, dtype=bool) if not done else
            np.fromiter(((p, r) not in done for p, r in zip(base["point"].tolist(), base["rep"].tolist())),
                        bool, size))
    methods = list(output)
    names = list(dict.fromkeys(m for method in methods for m in output[method]))
    columns = {k: np.tile(v[keep], len(methods)) for k, v in base.items()}
    columns["method"] = np.repeat(np.asarray(methods, dtype=object), int(keep.sum()))
    for name in names:
        parts = [np.asarray(output[m][name])[:n_lanes].reshape(-1)[keep] if name in output[m]
                 else np.full(int(keep.sum()), np.nan) for m in methods]
        if any(name not in output[m] for m in methods):
            parts = [part.astype(np.float64) for part in parts]
        columns[name] = np.concatenate(parts)
    if "converged" in columns:
        columns["converged"] = columns["converged"].astype(bool)
    if "iterations" in columns:
        columns["iterations"] = columns["iterations"].astype(np.int64)
    return pa.table({k: _column(v) for k, v in columns.items()})


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


def run_experiment(experiment: Experiment, *, reps: int | None = None, seed: int = 0,
                   out: str | Path | None = None, overrides: Mapping[str, Sequence] | None = None,
                   chunk: int | None = None, progress: bool = True,
                   workers: int | None = None, watchdog: float | None = None) -> RunSummary:
    """Run (or resume) ``experiment`` into ``out``; returns what was computed.

    All input is validated before anything is written. Re-running into the same directory
    computes only the (grid point, replicate) pairs that are missing. ``chunk``: lanes per
    chunk (one Parquet part each); ``workers``: chunks computed at the same time (default
    :func:`default_workers`). Neither changes the results. ``watchdog``: seconds without
    progress after which the run stops with :class:`RunStalled` (:func:`watchdog_seconds`);
    the chunks written so far are kept, so re-running resumes.

    Threads: one background thread only *compiles* (the next shape's programs, while the
    current one computes); programs are executed by the calling thread (θ*-design) and by
    ``workers`` daemon threads (chunks). No batched LAPACK call is ever executed on CPU
    (:mod:`dpsim.linalg`), which is what deadlocked concurrent chunks (issue 7).
    """
    reps = experiment.reps if reps is None else reps
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise UsageError(f"reps={reps!r} must be an integer ≥ 1")
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
        raise UsageError(f"chunk={chunk!r} must be an integer ≥ 1")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise UsageError(f"workers={workers!r} must be an integer ≥ 1")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise UsageError(f"seed={seed!r} must be an integer in [0, 2^31)")
    patience = watchdog_seconds(watchdog)
    grid = expand_grid(experiment, overrides)
    out = Path(out or Path("runs") / experiment.name)
    store.check_compatible(out, experiment.name, seed)

    workers = default_workers() if workers is None else workers
    done = store.completed(out)
    plan = _plan(grid, reps, done, chunk, workers)
    manifest = {"experiment": experiment.name, "title": experiment.title, "seed": seed,
                "reps": reps, "grid": grid.axes, "shape_axes": list(experiment.shape_axes),
                "analysis_axes": list(experiment.analysis_axes), "versions": store.versions()}
    previous = store.read_manifest(out) or {}
    manifest["timings"] = previous.get("timings", [])
    store.write_manifest(out, manifest)

    total_chunks = sum(len(step.chunks) for step in plan)
    started, first_chunks, rows_written, lanes_run = time.time(), 0.0, 0, 0
    bar = tqdm(total=total_chunks, desc=experiment.name, unit="chunk",
               disable=not progress or total_chunks == 0)
    a_vals = {a: _as_array([pt[a] for pt in grid.analysis_points]) for a in experiment.analysis_axes}
    a_ids = id_words([stable_id(a) for a in grid.analysis_points])
    seed_arg = np.uint32(seed)

    def prepare(step):
        """The compiled θ*-design and chunk programs of one step (background thread: it
        compiles, it executes nothing)."""
        truth_fn = compiled_truth_fn(experiment, step.shape)
        example = (seed_arg, truth_fn.out_info, a_ids, a_vals,
                   *_chunk_args(step.chunks[0], grid, experiment, step.size))
        return truth_fn, compiled_chunk_fn(experiment, step.shape, step.micro, example)

    def compute(step, truth, fn, lanes):
        """One chunk: its rows (those not stored yet) as an Arrow table."""
        args = _chunk_args(lanes, grid, experiment, step.size)
        output = jax.device_get(fn(seed_arg, truth, a_ids, a_vals, *args))
        return _rows(output, step.shape, lanes, grid.analysis_points, grid.data_points, done)

    compiler, pool = _DaemonPool(1, "dpsim-compile"), _DaemonPool(workers, "dpsim-chunk")
    prepared = [compiler.submit(partial(prepare, step)) for step in plan]
    try:
        for index, (step, future) in enumerate(zip(plan, prepared)):
            t0 = time.time()
            truth_fn, fn = _wait(future, patience, f"the compilation of {experiment.name} at "
                                                   f"{_describe(step.shape)} (shape {index + 1}/{len(plan)})")
            truth = truth_fn(seed_arg, id_words(stable_id(step.shape)))
            tasks = [partial(compute, step, truth, fn, lanes) for lanes in step.chunks]
            what = f"a chunk of {experiment.name} at {_describe(step.shape)}"
            for number, table in enumerate(_in_order(pool, tasks, workers, patience, what)):
                if number == 0:
                    first_chunks += time.time() - t0
                store.write_part(out, table)
                rows_written += table.num_rows
                lanes_run += len(step.chunks[number])
                bar.update(1)
    finally:
        compiler.shutdown()
        pool.shutdown()
        bar.close()
    seconds = time.time() - started
    manifest["timings"].append({"seconds": round(seconds, 3), "lanes": lanes_run,
                                "first_chunks_seconds_incl_compile": round(first_chunks, 3),
                                "finished": time.strftime("%Y-%m-%dT%H:%M:%S")})
    store.write_manifest(out, manifest)
    return RunSummary(out, rows_written, lanes_run, seconds, first_chunks)


def _describe(shape: Mapping) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items()) or "its only shape point"


def _wait(future: Future, patience: float, what: str):
    """``future.result()``, or :class:`RunStalled` after ``patience`` seconds."""
    try:
        return future.result(timeout=patience)
    except FutureTimeout:
        raise RunStalled(f"no progress for {patience:g} s while waiting for {what}; the run was "
                         f"stopped (finished chunks are saved: run the same command again to resume, "
                         f"or allow longer with --watchdog SECONDS)") from None


def _in_order(pool: "_DaemonPool", tasks: Sequence[Callable], in_flight: int, patience: float,
              what: str):
    """Results of ``tasks`` (no-argument callables) in order, at most ``in_flight`` running
    on ``pool`` at once, so several chunks compute while the caller writes the finished one.
    Waiting longer than ``patience`` for one result raises :class:`RunStalled`."""
    pending: deque = deque()
    total = len(tasks)
    for number, task in enumerate(tasks):
        pending.append(pool.submit(task))
        if len(pending) == in_flight:
            yield _wait(pending.popleft(), patience, f"{what} (chunk {number + 2 - in_flight}/{total})")
    while pending:
        yield _wait(pending.popleft(), patience, f"{what} (chunk {total + 1 - len(pending)}/{total})")


class _DaemonPool:
    """A minimal thread pool of *daemon* threads returning ``Future`` s.

    ``concurrent.futures.ThreadPoolExecutor`` joins its (non-daemon) threads at interpreter
    exit, so one thread stuck inside a native call would keep the process alive forever
    after the watchdog fired. Daemon threads are abandoned at exit instead.
    """

    def __init__(self, threads: int, name: str):
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self._closed = False
        for number in range(threads):
            threading.Thread(target=self._work, name=f"{name}-{number}", daemon=True).start()
        self._threads = threads

    def submit(self, fn: Callable) -> Future:
        future: Future = Future()
        self._tasks.put((future, fn))
        return future

    def _work(self):
        while True:
            item = self._tasks.get()
            if item is None:
                return
            future, fn = item
            if self._closed or not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # delivered to the waiting thread
                future.set_exception(exc)

    def shutdown(self):
        """Cancel what has not started and let the threads end (without waiting for them)."""
        self._closed = True
        while True:
            try:
                item = self._tasks.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        for _ in range(self._threads):
            self._tasks.put(None)


class _Static(dict):
    """A hashable dict, so a shape point can be a static jit argument."""

    def __hash__(self):
        return hash(tuple(sorted((k, repr(v)) for k, v in self.items())))


@dataclass
class _Step:
    shape: dict
    chunks: list
    size: int
    micro: int


def _plan(grid: Grid, reps: int, done: set, chunk: int | None = None, workers: int = 1) -> list[_Step]:
    """For each shape point: the lanes still missing, split into chunks of one fixed size.

    A lane is (data point index, rep, data id, [point id per analysis point]); it is re-run
    if any of its analysis points is missing, and rows already stored are dropped on write.
    """
    experiment = grid.experiment
    plan = []
    for shape in grid.shapes:
        lanes = []
        for d_index, data in enumerate(grid.data_points):
            data_id = stable_id({**shape, **data})
            point_ids = [stable_id({**shape, **data, **a}) for a in grid.analysis_points]
            for rep in range(reps):
                if any((pid, rep) not in done for pid in point_ids):
                    lanes.append((d_index, rep, point_ids, data_id))
        if not lanes:
            continue
        size, micro = chunk_layout(len(lanes), experiment.lane_bytes(shape), len(grid.analysis_points),
                                   chunk, workers)
        chunks = [lanes[i:i + size] for i in range(0, len(lanes), size)]
        plan.append(_Step(shape, chunks, size, micro))
    return plan


def _chunk_args(lanes, grid: Grid, experiment: Experiment, size: int):
    """Lane arrays (host NumPy) padded to ``size`` by repeating the last lane (padding rows
    are dropped)."""
    padded = list(lanes) + [lanes[-1]] * (size - len(lanes))
    data_ids = id_words([lane[3] for lane in padded])
    reps = np.asarray([lane[1] for lane in padded], dtype=np.uint32)
    data_vals = {a: _as_array([grid.data_points[lane[0]][a] for lane in padded])
                 for a in experiment.data_axes}
    return data_ids, reps, data_vals
