"""Who computes a run's chunks: this process (:class:`LocalExecutor`, the default) or the
actors of a Ray cluster (:class:`RayExecutor`, ``dpsim run … --executor ray``).

The runner (:mod:`dpsim.engine.execution.runner`) plans a run, then asks its executor for the
chunks of each step in turn (:meth:`Executor.chunks`) and writes each returned Arrow table
as one atomic Parquet part: the driver is the only writer, whatever the executor. A chunk's
rows depend only on (seed, grid point, replicate, method) and on the chunk's shape
(:mod:`dpsim.engine.execution.program`), so every executor gives the same table, to the last bit,
for the same plan.

* :class:`LocalExecutor`: one background thread compiles the steps' programs ahead, daemon
  threads compute ``in_flight`` chunks at a time (an accelerator: one computing, one queued
  behind it), every wait has the run's watchdog
  (:mod:`dpsim.engine.execution.threads`).
* :class:`RayExecutor`: long-lived actors (one per GPU, or per group of CPU cores), each
  loading the experiment by name or study path (the manifest's ``source``) and keeping its
  compiled programs under the experiment's stable identity
  (:func:`~dpsim.engine.execution.program.program_identity`). A chunk travels as (step, lanes,
  the stored rows among them); its Arrow table comes back. A worker that dies is restarted
  and its chunks retried (Ray's ``max_restarts``/``max_task_retries``), or resubmitted to
  another worker; the driver writes a chunk only once it has its whole table, so no row is
  lost or written twice. Ray is imported only here, only when a :class:`RayExecutor` is made.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections import deque
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Iterator, Mapping, Sequence

import jax
import numpy as np
import pyarrow as pa

from dpsim.errors import UsageError
from dpsim.engine.execution.calibration import pick
from dpsim.engine.execution.chunk_io import chunk_arguments, chunk_rows
from dpsim.engine.definition.experiment import Experiment
from dpsim.engine.definition.grid import Grid
from dpsim.engine.execution.planning import Chunk, Step, analysis_groups, step_label
from dpsim.engine.execution.program import (
    ChunkArguments,
    ChunkProgram,
    compiled_chunk_fn,
    id_words,
    program_identity,
)
from dpsim.engine.execution.threads import DaemonPool, Tasks, in_order, stalled, wait

EXECUTORS = ("local", "ray")
INSTALL_RAY = "--executor ray needs Ray, which is not installed: pip install 'dpsim[ray]'"


def devices_here(planned: int) -> int:
    """The devices this process shards a step's lanes over: ``planned`` (the driver's count,
    which its chunk sizes are a multiple of), or, in a Ray actor that sees fewer devices, the
    largest divisor of ``planned`` it has (so the chunks still split evenly)."""
    here = max(1, min(planned, len(jax.devices())))
    while planned % here:
        here -= 1
    return here


@dataclass(frozen=True)
class Job:
    """One run as an executor sees it (made by the runner once the plan is made).

    Attributes:
        experiment, grid, steps: what to compute (the planned steps, in order).
        done: the (point id, rep) pairs already stored (their rows are left out).
        seed: the run's seed; in_flight: chunks computing or queued at once (local threads;
            :attr:`~dpsim.engine.execution.planning.Plan.in_flight`).
        patience: the watchdog's seconds (:func:`~dpsim.engine.execution.runner.watchdog_seconds`).
        source: where the experiment is defined (a name, or ``study.py:NAME``).
        overrides: the ``--set`` values the grid was expanded with.
    """

    experiment: Experiment
    grid: Grid
    steps: Sequence[Step]
    done: set
    seed: int
    in_flight: int
    patience: float
    source: str
    overrides: Mapping[str, Sequence] | None


class ChunkComputer:
    """Computes the chunks of one run's grid: its compiled programs and its Arrow rows. The
    same code runs in the driver's threads and in a Ray actor (which computes one chunk at a
    time). ``in_flight``: the chunks this process has on its device at once, whose programs
    share the device's memory (:func:`~dpsim.engine.execution.batching.program_memory_limit`)."""

    def __init__(self, experiment: Experiment, grid: Grid, seed: int, in_flight: int = 1):
        self.experiment, self.grid, self.in_flight = experiment, grid, in_flight
        self.groups = analysis_groups(grid)
        self.a_words = id_words([experiment.point_id(a) for a in grid.analysis_points])
        self.seed = np.uint32(seed)

    def arguments(self, step: Step, chunk: Chunk) -> ChunkArguments:
        """``chunk``'s program arguments (:func:`~dpsim.engine.execution.chunk_io.chunk_arguments`)."""
        return chunk_arguments(chunk, self.grid, step, self.seed, self.a_words)

    def program(
        self, step: Step, arguments: ChunkArguments, micro: int | None = None
    ) -> ChunkProgram:
        """The compiled program of ``step`` (``arguments``: those of any chunk of it, for the
        shapes; compiling executes nothing), at ``micro`` lanes vmapped together (default
        the step's)."""
        return compiled_chunk_fn(
            self.experiment,
            step.shape,
            step.static_data,
            self.groups,
            micro or step.micro,
            arguments,
            devices_here(step.devices),
            self.in_flight,
        )

    def rows(
        self, step: Step, program: ChunkProgram, chunk: Chunk, arguments: ChunkArguments, done: set
    ) -> tuple[pa.Table, int]:
        """One chunk's rows (those not in ``done``) as an Arrow table, and its lane count
        (``arguments``: the chunk's, :meth:`arguments`)."""
        return chunk_rows(
            self.output(program, arguments), chunk, self.grid, program.order, done
        ), len(chunk)

    @staticmethod
    def output(program: ChunkProgram, arguments: ChunkArguments):
        """The chunk program's output for ``arguments``, copied to the host."""
        return jax.device_get(program.fn(arguments))

    def timed_rows(
        self,
        step: Step,
        program: ChunkProgram,
        chunk: Chunk,
        arguments: ChunkArguments,
        done: set,
        clock=time.perf_counter,
    ) -> tuple[pa.Table, int, float]:
        """:meth:`rows` of ``chunk``, and the seconds per lane its program took by ``clock`` (the
        call and the copy to the host, over the step's chunk size: padding lanes cost as much
        as any)."""
        started = clock()
        output = self.output(program, arguments)
        seconds = (clock() - started) / step.size
        return chunk_rows(output, chunk, self.grid, program.order, done), len(chunk), seconds


class Executor:
    """Computes the chunks of a run for the runner, which writes them.

    ``workers``: how many chunks the plan should give each step at least (None: the local
    default). :meth:`start` is called once per run, then :meth:`chunks` for each step in
    order, then :meth:`finish`; :meth:`close` releases what the executor holds (a Ray
    instance it started). After a run, ``calibrations`` ({step index: {micro-batch: seconds
    per lane}}) and ``micros`` ({step index: the micro-batch its program
    was compiled at}) say what it measured and ran, where it knows (empty: as planned)."""

    name = "executor"
    workers: int | None = None
    calibrates = False  # whether it times a step's candidate micro-batches (Step.calibrate)
    calibrations: Mapping = MappingProxyType({})
    micros: Mapping = MappingProxyType({})

    def start(self, job: Job) -> None:
        raise NotImplementedError

    def chunks(self, index: int, step: Step) -> Iterator[tuple[pa.Table, int]]:
        """The (table, lanes) of every chunk of ``step`` (the ``index``-th of the plan), in
        chunk order."""
        raise NotImplementedError

    def finish(self) -> None:
        """End the run (also after an error)."""

    def close(self) -> None:
        """Release what the executor holds."""

    def describe(self) -> dict:
        """What the manifest records about the executor."""
        return {"name": self.name}

    def in_flight(self, planned: int) -> int:
        """Chunks sent and not yet returned at once, for the manifest (``planned``: the plan's
        :attr:`~dpsim.engine.execution.planning.Plan.in_flight`, which the local executor keeps)."""
        return planned

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalExecutor(Executor):
    """Chunks computed in this process: one background thread compiles each step's program
    ahead (while the previous step computes), ``job.in_flight`` daemon threads compute chunks
    (on an accelerator: one chunk computes while the next is queued behind it),
    and a wait longer than ``job.patience`` raises :class:`~dpsim.errors.RunStalled`.

    A step with candidate micro-batches (``step.calibrate``, :mod:`dpsim.engine.execution.calibration`)
    has one program compiled per candidate; its first chunks are computed one at a time, one
    per candidate, timed (the rows are the step's own, written like any), and the fastest
    per lane computes the rest; ``calibrations`` records {step index: {micro-batch: seconds
    per lane}}, and ``micros`` {step index: micro-batch} the micro-batch each step's
    program was compiled at (fewer lanes than planned where the planned ones did not fit the
    device's memory, :func:`~dpsim.engine.execution.program.compiled_chunk_fn`; candidates that
    came down to one micro-batch are timed once). The compile thread may be compiling the
    next step meanwhile, which the timings then share the cores with."""

    name = "local"
    calibrates = True
    clock = staticmethod(time.perf_counter)  # times the calibration chunks (tests inject another)

    def start(self, job: Job) -> None:
        self.job = job
        self.calibrations: dict = {}
        self.micros: dict = {}
        self.computer = ChunkComputer(job.experiment, job.grid, job.seed, job.in_flight)
        self.compiler = DaemonPool(1, "dpsim-compile")
        self.pool = DaemonPool(job.in_flight, "dpsim-chunk")
        self.prepared = [self.compiler.submit(partial(self._prepare, step)) for step in job.steps]

    def _prepare(self, step: Step) -> tuple[ChunkProgram | dict, ChunkArguments]:
        """The compiled chunk program of one step, or {micro-batch: program} of a step to
        calibrate, and the arguments of the step's first chunk, which it was compiled for and
        which that chunk then uses (background thread: it compiles, it executes nothing)."""
        arguments = self.computer.arguments(step, step.chunks[0])
        if step.calibrate:
            return {
                micro: self.computer.program(step, arguments, micro) for micro in step.calibrate
            }, arguments
        return self.computer.program(step, arguments), arguments

    def chunks(self, index: int, step: Step) -> Iterator[tuple[pa.Table, int]]:
        job = self.job
        where = step_label(job.grid, step)
        program, first_arguments = wait(
            self.prepared[index],
            job.patience,
            f"the compilation of {job.experiment.name} at {where} "
            f"(step {index + 1}/{len(job.steps)})",
        )

        def arguments_of(position: int) -> ChunkArguments:
            """The arguments of the step's chunk at ``position`` (the first chunk's: those its
            program was compiled with)."""
            return (
                first_arguments
                if position == 0
                else self.computer.arguments(step, step.chunks[position])
            )

        first = 0
        if step.calibrate:  # the first chunks, one per candidate, one at a time, timed
            program = {candidate.micro: candidate for candidate in program.values()}
            timings = {}
            for first, micro in enumerate(program, 1):

                def timed(position=first - 1, candidate=program[micro]):
                    return self.computer.timed_rows(
                        step,
                        candidate,
                        step.chunks[position],
                        arguments_of(position),
                        job.done,
                        self.clock,
                    )

                table, lanes, timings[micro] = wait(
                    self.pool.submit(timed),
                    job.patience,
                    f"a calibration chunk of {job.experiment.name} at {where} "
                    f"(micro-batch {micro})",
                )
                yield table, lanes
            chosen = pick(timings)
            self.calibrations[index] = timings
            program = program[chosen]
        self.micros[index] = program.micro

        def compute(number: int):
            position = number + first
            return self.computer.rows(
                step, program, step.chunks[position], arguments_of(position), job.done
            )

        tasks = Tasks(len(step.chunks) - first, compute)
        yield from in_order(
            self.pool,
            tasks,
            job.in_flight,
            job.patience,
            f"a chunk of {job.experiment.name} at {where}",
        )

    def finish(self) -> None:
        self.compiler.shutdown()
        self.pool.shutdown()


def executor(
    name: str = "local",
    *,
    address: str | None = None,
    workers: int | None = None,
    check_only: bool = False,
) -> Executor | None:
    """The executor ``--executor NAME`` names (``--address`` and ``--ray-workers`` only with
    ``ray``). Raises UsageError naming a bad value, or saying how to install Ray.
    ``check_only``: check the choice (Ray installed), start nothing, return None."""
    if name not in EXECUTORS:
        raise UsageError(f"--executor {name!r} must be one of {', '.join(EXECUTORS)}")
    if name == "local":
        if address is not None or workers is not None:
            raise UsageError(
                f"--{'address' if address is not None else 'ray-workers'} needs --executor ray"
            )
        return None if check_only else LocalExecutor()
    _check_workers(workers)
    if check_only:
        _ray()
        return None
    return RayExecutor(address=address, workers=workers)


# ---------------------------------------------------------------------------------------------
# Ray

CORES_PER_WORKER = (
    4  # CPU cores per actor on a cluster without GPUs (XLA:CPU threads its operations)
)
QUEUED_PER_WORKER = 2  # chunks sent ahead to each actor, so it computes while the driver writes
MAX_RESTARTS = 3  # restarts of a dead actor (Ray's max_restarts), and retries of its tasks
RESUBMITS = 3  # resubmissions of a chunk to another actor once its own is gone for good
EXIT_ONCE_VARIABLE = (
    "DPSIM_RAY_TEST_EXIT_ONCE"  # tests: the first chunk to claim this file kills its actor
)


def _ray():
    """The ``ray`` module, or UsageError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise UsageError(INSTALL_RAY) from None
    return ray


def _check_workers(workers) -> None:
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
    ):
        raise UsageError(f"--ray-workers {workers!r} must be an integer ≥ 1")


def actor_resources(
    cluster: Mapping[str, float], largest_node_cpus: float, workers: int | None
) -> tuple[int, dict]:
    """How many actors, and what each reserves: one per GPU (or ``workers``, sharing the
    GPUs), else one per :data:`CORES_PER_WORKER` CPU cores (or ``workers``, sharing the
    cores; never more than the largest node has).

    Args:
        cluster: ``ray.cluster_resources()`` ({"CPU": …, "GPU": …}).
        largest_node_cpus: the CPUs of the cluster's largest node.
        workers: ``--ray-workers``, or None.
    Returns:
        (actors, {"num_gpus": …} or {"num_cpus": …}).
    """
    gpus, cpus = float(cluster.get("GPU", 0)), float(cluster.get("CPU", 1))
    if gpus >= 1:
        n = workers or int(gpus)
        return n, {"num_gpus": min(1.0, math.floor(gpus / n * 1e4) / 1e4), "num_cpus": 0}
    n = workers or max(1, int(cpus // CORES_PER_WORKER))
    share = min(largest_node_cpus, max(cpus / n, 1e-4))
    return n, {"num_cpus": share if share < 1 else math.floor(share)}


def worker_target(source: str, name: str) -> str:
    """What an actor loads (:func:`dpsim.engine.registry.experiment`): the experiment's
    ``name`` for an installed paper (whose ``source`` is its module), else the study file of
    ``source`` with its path made absolute (actors may run in another folder; on a cluster
    the path must exist on every node, e.g. a shared file system)."""
    from dpsim.engine.registry import is_study

    if not is_study(source):
        return name
    path, colon, member = source.partition(":")
    return f"{Path(path).resolve()}{colon}{member}"


# JAX's persistent compilation cache options, copied whole from the driver: with a size limit
# JAX keeps an access-time file beside each entry and reads them all before each write, so a
# process writing into the same folder without the limit (no access-time files) would make
# every later write of the driver's fail.
CACHE_OPTIONS = (
    "jax_compilation_cache_dir",
    "jax_compilation_cache_max_size",
    "jax_persistent_cache_min_compile_time_secs",
    "jax_persistent_cache_min_entry_size_bytes",
)


def driver_settings() -> dict:
    """The JAX settings an actor copies from the driver: float64, the persistent
    compilation cache (its folder and every option of :data:`CACHE_OPTIONS`), and dpsim's
    environment variables (``DPSIM_*``).

    Returns: {"x64": bool, "cache": {option: value}, "environment": {name: value}}."""
    import jax

    return {
        "x64": bool(jax.config.jax_enable_x64),
        "cache": {name: getattr(jax.config, name) for name in CACHE_OPTIONS},
        "environment": {k: v for k, v in os.environ.items() if k.startswith("DPSIM_")},
    }


def apply_driver_settings(settings: dict) -> None:
    """Make this process's JAX settings the driver's (:func:`driver_settings`); the cache
    options only where the driver has a cache folder."""
    import jax

    jax.config.update("jax_enable_x64", settings["x64"])
    if settings["cache"]["jax_compilation_cache_dir"]:
        for name, value in settings["cache"].items():
            jax.config.update(name, value)


@dataclass(frozen=True)
class RunSpec:
    """What an actor needs to rebuild a run's grid (small: sent with every chunk)."""

    source: str
    code: str
    overrides: tuple
    seed: int


class ChunkWorker:
    """A Ray actor's state (:class:`RayExecutor` makes it a Ray actor class): the driver's
    JAX settings, then per run (:class:`RunSpec`) the experiment loaded by name or study
    path and its grid; the compiled programs stay in the process's cache
    (:func:`~dpsim.engine.execution.program.compiled_chunk_fn`) under the experiment's stable
    identity."""

    def __init__(self, settings: dict):
        os.environ.update(settings["environment"])
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # several processes per GPU
        apply_driver_settings(settings)
        self.runs: dict = {}

    def computer(self, run: RunSpec) -> ChunkComputer:
        """The run's :class:`ChunkComputer`, made once per run: the experiment ``run.source``
        names, refused unless its code fingerprint is the driver's."""
        found = self.runs.get(run)
        if found is None:
            from dpsim.engine.definition.grid import expand_grid
            from dpsim.engine.registry import experiment

            loaded, _ = experiment(run.source)
            identity = program_identity(loaded)
            if identity[1] != run.code:
                raise UsageError(
                    f"a Ray worker loaded {run.source!r} with code {identity[1]}, but the run's code "
                    f"is {run.code}: every node needs the same dpsim and experiment files"
                )
            found = self.runs[run] = ChunkComputer(
                loaded, expand_grid(loaded, dict(run.overrides) or None), run.seed
            )
        return found

    def compute(
        self, run: RunSpec, step: Step, chunk: Chunk, done: frozenset
    ) -> tuple[pa.Table, int, float]:
        """One chunk: its rows (those not in ``done``), its lanes, and the seconds it took here."""
        started = time.perf_counter()
        marker = os.environ.get(EXIT_ONCE_VARIABLE)
        if marker and _claim(marker):
            os._exit(1)  # a worker that dies mid-run (tests)
        computer = self.computer(run)
        arguments = computer.arguments(
            step, chunk
        )  # built once: the program's shapes and its input
        table, lanes = computer.rows(
            step, computer.program(step, arguments), chunk, arguments, set(done)
        )
        return table, lanes, time.perf_counter() - started

    def pid(self) -> int:
        return os.getpid()


def _claim(path: str) -> bool:
    """True for the one caller that creates the file ``path``."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _stored_among(chunk: Chunk, done: set) -> frozenset:
    """The (point, rep) pairs of ``chunk``'s lanes that are already stored."""
    if not done:
        return frozenset()
    return frozenset(
        (p, lane.rep) for lane in chunk.lanes for p in lane.points if (p, lane.rep) in done
    )


class RayExecutor(Executor):
    """Chunks computed by Ray actors (module docstring).

    Args:
        address: a running cluster (``ray start --head`` prints it; ``auto`` finds a local
            one); None starts a local Ray instance, shut down again by :meth:`close`. When
            this process is already connected to Ray (``ray.init`` was called), that
            connection is used.
        workers: actors (default: one per GPU, else one per :data:`CORES_PER_WORKER` cores).
        num_cpus: CPUs of a local instance started here (default: all).
    """

    name = "ray"

    def __init__(
        self, address: str | None = None, workers: int | None = None, *, num_cpus: int | None = None
    ):
        _check_workers(workers)
        ray = _ray()
        # the driver plans on the device too: it must not take a GPU's memory from the actors
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        self.ray, self.address, self.actors = ray, address, []
        self.started_ray = not ray.is_initialized()
        if self.started_ray:
            import logging

            try:
                ray.init(
                    address=address,
                    num_cpus=num_cpus if address is None else None,
                    include_dashboard=False,
                    logging_level=logging.WARNING,
                    log_to_driver=True,
                )
            except (ConnectionError, ValueError, RuntimeError) as exc:
                message = " ".join(str(exc).split())
                raise UsageError(
                    f"--address {address!r}: cannot connect to Ray: {message[:300]}"
                ) from None
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        largest = max((n.get("Resources", {}).get("CPU", 0) for n in nodes), default=1)
        self.count, self.resources = actor_resources(ray.cluster_resources(), largest, workers)
        self.workers = self.count

    def _actors(self) -> list:
        """The actors, made on first use (they start while the driver plans and writes)."""
        if not self.actors:
            remote = self.ray.remote(
                max_restarts=MAX_RESTARTS, max_task_retries=MAX_RESTARTS, **self.resources
            )(ChunkWorker)
            settings = driver_settings()
            self.actors = [remote.remote(settings) for _ in range(self.count)]
        return self.actors

    def start(self, job: Job) -> None:
        from dpsim.engine.registry import experiment as resolve

        source = worker_target(job.source, job.experiment.name)
        identity = program_identity(job.experiment)
        try:
            loaded, _ = resolve(source)
        except UsageError as exc:
            raise UsageError(
                f"--executor ray: workers load the experiment by name or study path, and "
                f"{source!r} does not load ({exc})"
            ) from None
        if program_identity(loaded) != identity:
            raise UsageError(
                f"--executor ray: {source!r} loads another definition of {job.experiment.name!r} "
                f"than this run's (a mutant, or an experiment built in code?); workers load "
                f"experiments by name or study path"
            )
        overrides = tuple(sorted((k, tuple(v)) for k, v in (job.overrides or {}).items()))
        self.job, self.run = job, RunSpec(source, identity[1], overrides, job.seed)
        self._actors()

    def chunks(self, index: int, step: Step) -> Iterator[tuple[pa.Table, int]]:
        job = self.job
        light = dataclasses.replace(step, chunks=())  # the chunk travels on its own
        where = f"a chunk of {job.experiment.name} at {step_label(job.grid, step)}"
        total = len(step.chunks)

        def submit(number: int, attempt: int = 0):
            chunk = step.chunks[number]
            actor = self.actors[(number + attempt) % len(self.actors)]
            return actor.compute.remote(self.run, light, chunk, _stored_among(chunk, job.done))

        pending: deque = deque()
        ahead = QUEUED_PER_WORKER * len(self.actors)
        for number in range(total):
            pending.append((number, submit(number)))
            if len(pending) == ahead:
                yield self._result(pending.popleft(), submit, where, total)
        while pending:
            yield self._result(pending.popleft(), submit, where, total)

    def _result(self, item, submit, where: str, total: int) -> tuple[pa.Table, int]:
        """The (table, lanes) of one submitted chunk: waited for with the watchdog; a chunk
        whose actor is gone for good is resubmitted to another one (:data:`RESUBMITS`)."""
        ray = self.ray
        number, ref = item
        for attempt in range(RESUBMITS + 1):
            try:
                table, lanes, _ = ray.get(ref, timeout=self.job.patience)
                return table, lanes
            except ray.exceptions.GetTimeoutError:
                raise stalled(
                    self.job.patience, f"{where} (chunk {number + 1}/{total}) on Ray"
                ) from None
            except ray.exceptions.RayActorError:
                if attempt == RESUBMITS:
                    raise
                ref = submit(number, attempt + 1)
            except ray.exceptions.RayTaskError as exc:
                cause = exc.cause
                raise cause if isinstance(cause, UsageError) else exc from None
        raise AssertionError("unreachable")

    def finish(self) -> None:
        pass

    def close(self) -> None:
        """Stop the actors, and the local Ray instance when this executor started it."""
        for actor in self.actors:
            self.ray.kill(actor)
        self.actors = []
        if self.started_ray and self.ray.is_initialized():
            self.ray.shutdown()

    def describe(self) -> dict:
        return {
            "name": self.name,
            "workers": self.count,
            "address": self.address,
            "per_worker": dict(self.resources),
        }

    def in_flight(self, planned: int) -> int:
        """:data:`QUEUED_PER_WORKER` chunks per actor (each computes one at a time)."""
        return QUEUED_PER_WORKER * self.count
