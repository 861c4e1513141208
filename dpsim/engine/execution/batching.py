"""The device batching policy: how many lanes a device computes together.

A *lane* is one (data point, replicate) pair (:mod:`dpsim.engine.execution.program`). A chunk's
lanes are processed by ``lax.map``, in vmapped micro-batches of several lanes on an
accelerator and one lane at a time on CPU (:func:`batching`: on CPU, vmapping large
lanes makes programs slower to compile and, for iterative solvers, slower to run, since
every lane of a micro-batch waits for the slowest one's while-loop), except small lanes: vmapped
in a big step (:func:`cpu_small_lane_micro`) or in a short one whose vmapped program was compiled
before (:func:`small_lane_layout`, weighing the wide program's compile against the run it saves). On CPU several chunks
are computed at the same time (:func:`default_workers`); on an accelerator, one chunk computes
while the next waits queued behind it (:data:`ACCELERATOR_CHUNKS_IN_FLIGHT`), so the host
turns a finished chunk into rows and writes it while the device computes. The policy also holds the cost
model that decides which sizes of a padded experiment share a program
(:func:`dpsim.engine.execution.planning.size_buckets`), and the memory one lane must fit in
(:func:`memory_limit`). ``$DPSIM_MICRO_BATCH``, ``$DPSIM_PADDING`` and ``$DPSIM_DEVICES`` are
read here.

Several devices in one process (:func:`device_count`): when the default backend shows more
than one device (several GPUs, or host devices forced with
``XLA_FLAGS=--xla_force_host_platform_device_count=N``), each chunk's lanes are sharded
across all of them (:func:`dpsim.engine.execution.program.compiled_chunk_fn`), a chunk holding a
multiple of the device count (:func:`chunk_layout`); ``$DPSIM_DEVICES=1`` keeps to the first
device. Sharding then replaces the chunk threads of the CPU (one chunk at a time, its
devices computing in parallel; several accelerators keep their two chunks in flight,
:func:`batching`).

The rule here is the default; :mod:`dpsim.engine.execution.calibration` replaces a step's
micro-batch by one measured on the device (cached per program and device) and reuses a chunk
layout its program was compiled with before (:func:`reuse_layout`), so that a run at other
``--reps`` hits the compilation cache.

Results do not depend on any of this beyond float rounding: keys come from stable ids, not
from positions in a batch.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

import jax

from dpsim.errors import UsageError

# CPU: lanes one at a time: on a CPU a vmapped micro-batch of large lanes runs slower and takes
# longer to compile than one lane at a time (benchmarks/cai.py sections Q and W; timings in
# benchmarks/results/cai.json). --micro-batch N (or $DPSIM_MICRO_BATCH) vmaps N lanes again.
MAX_MICRO_BATCH_CPU = 1
# CPU, small lanes in big steps (:func:`cpu_small_lane_micro`): a step's lanes are vmapped in
# micro-batches of SMALL_LANE_MICRO_CPU when one lane's working set is at most
# SMALL_LANE_BYTES_CPU and the step has at least SMALL_LANE_MIN_WORK_CPU lane × analysis
# points: a vmapped program costs a fixed extra trace and compile, which only a step with
# that many small lanes earns back; lanes above the byte bound (cai n ≥ 300) run slower
# vmapped (benchmarks/cai.py section Q times lanes at several micro-batches; benchmarks/xu.py
# section C a whole `dpsim run xu-fig4`).
SMALL_LANE_MICRO_CPU = 32
SMALL_LANE_BYTES_CPU = 128e3
SMALL_LANE_MIN_WORK_CPU = 32_000
# CPU, small lanes in short steps (:func:`small_lane_layout`): the wide program's compile against
# the run it saves. A vmapped program of small lanes compiles about VMAP_COMPILE_FACTOR_CPU times as
# long as the one-lane program (its StableHLO is over twice the size) and computes a lane in about
# (1 − SMALL_LANE_SAVING_CPU) of the time (measured at cai n = 20 and 40: benchmarks/cai.py section Q,
# the per-lane times at several micro-batches; benchmarks/cold.py section R, both programs' compile
# seconds and warm runs; numbers in benchmarks/results/). So a short step is vmapped only where the
# wide program was compiled before (the calibration cache's layouts; the persistent compilation cache
# holds it): one run of a short step does not earn the longer compile back, each later one saves.
VMAP_COMPILE_FACTOR_CPU = 2.0
SMALL_LANE_SAVING_CPU = 0.3
MAX_WORKERS = 4
CHUNK_WORK = 2e8
# Accelerators: many lanes per vmapped micro-batch, bounded by a share of the device's
# memory; a chunk holds a few of them. The cap is where the device's throughput stops
# growing with the micro-batch (benchmarks/device.py section M; numbers in
# benchmarks/results/device/).
MAX_MICRO_BATCH_ACCELERATOR = 2048
ACCELERATOR_MEMORY_SHARE = 0.25
ACCELERATOR_MICRO_BATCHES_PER_CHUNK = 4
# Accelerators: chunks in flight at once. A chunk's rows and its Parquet part are made on the
# host after the device is done with it; with one chunk in flight the device would wait
# meanwhile. A second chunk, dispatched while the first computes, runs as soon as the first is
# done (the chunks of one step are the same as with one in flight: one worker plans them, so
# the rows are the same to the last bit). While the driver writes chunk k, chunk k + 1 is in
# flight and chunk k + 2 is dispatched once the write returns
# (:func:`~dpsim.engine.execution.threads.in_order`), so the device stays busy as long as a chunk's
# device time exceeds its rows and write (benchmarks/device.py section X times one chunk in
# flight against two).
ACCELERATOR_CHUNKS_IN_FLIGHT = 2
# Size buckets of padded experiments (:func:`~dpsim.engine.execution.planning.size_buckets`): the cost model of one program.
# A program costs a fixed compile time plus a time per lane-analysis byte; the CPU constants
# were fitted to cai Fig. 1's nine programs (benchmarks/cai.py section C) and checked by
# running Figure 1 with fewer and more buckets; the accelerator's are estimates (a longer
# compile, a faster fit; benchmarks/cai.py and benchmarks/device.py), not measured with
# padding on a device.
# A compiled chunk program must fit in this share of an accelerator's per-process memory, by
# XLA's own buffer assignment (program.memory_needed; the program is compiled again at half the
# micro-batch until it does). The lane_bytes bound above counts one (n, n) matrix of a lane, not
# the several a fit holds. The rest of the pool holds the chunk's arguments and outputs and the libraries'
# workspaces. The share is split among the chunks in flight (ACCELERATOR_CHUNKS_IN_FLIGHT), whose
# buffers may be live at the same time.
PROGRAM_MEMORY_SHARE_ACCELERATOR = 0.5
COMPILE_SECONDS_CPU, SECONDS_PER_BYTE_CPU = 2.0, 1.26e-9
COMPILE_SECONDS_ACCELERATOR, SECONDS_PER_BYTE_ACCELERATOR = 6.0, 1.26e-9 / 27
PADDING_VARIABLE = "DPSIM_PADDING"
DEVICES_VARIABLE = "DPSIM_DEVICES"


@dataclass(frozen=True)
class Batching:
    """How a device groups lanes: at most ``max_micro`` lanes (and ``micro_bytes`` of working
    set) per vmapped micro-batch, chunks of about ``chunk_work`` bytes of work or
    ``micro_per_chunk`` micro-batches, ``workers`` chunks computed at the same time (a step
    has at least that many chunks), and ``in_flight`` chunks computing or queued at once
    (CPU: ``workers``; an accelerator: :data:`ACCELERATOR_CHUNKS_IN_FLIGHT`, one worker).
    With a padded experiment, sizes share a program where the cost model says it pays:
    ``compile_seconds`` per program against ``seconds_per_byte`` per lane-analysis byte of
    padded work (:func:`~dpsim.engine.execution.planning.size_buckets`; ``compile_seconds`` 0: one program per size).
    ``devices``: the devices each chunk's lanes are sharded across (:func:`device_count`).
    ``small_micro``, ``small_lane_bytes``, ``small_min_work``: the CPU's micro-batch for
    small lanes in big steps (:func:`cpu_small_lane_micro`; 1: none).
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
    devices: int = 1
    small_micro: int = 1
    small_lane_bytes: float = 0.0
    small_min_work: float = math.inf
    in_flight: int | None = None  # None: ``workers``
    override: bool = False  # the micro-batch was set (--micro-batch, $DPSIM_MICRO_BATCH): no rule, no calibration

    def __post_init__(self):
        if self.in_flight is None:
            object.__setattr__(self, "in_flight", self.workers)


def device_memory_stats(device=None) -> dict:
    """A device's memory statistics (default: JAX's first device; ``bytes_limit``,
    ``bytes_in_use``, ``peak_bytes_in_use``, …), {} where the backend keeps none (CPU)."""
    device = device or jax.devices()[0]
    try:
        return device.memory_stats() or {}
    except Exception:  # a backend without memory statistics
        return {}


def device_memory_bytes(device=None) -> float | None:
    """The memory an accelerator lets one process use (``bytes_limit``), or None if unknown."""
    return device_memory_stats(device).get("bytes_limit")


def program_memory_limit(in_flight: int = 1) -> float | None:
    """Bytes one compiled chunk program may need on JAX's default backend:
    :data:`PROGRAM_MEMORY_SHARE_ACCELERATOR` of an accelerator's per-process memory
    (:func:`memory_limit`), shared by the ``in_flight`` chunks in flight at once (their
    buffers may be live together; :attr:`Batching.in_flight`), or None (no limit) on CPU, where lanes run one at a time in the
    host's memory, or where the device does not say. (The plan's micro-batch bound,
    :func:`batching`, is the smaller share ``ACCELERATOR_MEMORY_SHARE`` of the same memory, or
    of ``memory`` where a caller gives one, against the lane's own estimate ``lane_bytes``.)"""
    backend = jax.default_backend()
    memory = None if backend == "cpu" else memory_limit(backend)[0]
    return None if memory is None else PROGRAM_MEMORY_SHARE_ACCELERATOR * memory / max(1, in_flight)


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


def batching(
    backend: str | None = None, *, micro_batch: int | None = None, memory: float | None = None
) -> Batching:
    """The batching of ``backend`` (default: JAX's default backend).

    CPU (the measured choice, ``MAX_MICRO_BATCH_CPU``): lanes one at a time, chunks of ~2e8
    bytes of work, one chunk per core (≤ 4) at a time; small lanes in a big step are
    vmapped in micro-batches of 32 (:func:`cpu_small_lane_micro`). Accelerators: micro-batches of up to
    2048 lanes within a quarter of the device's memory (``memory``, default its
    ``bytes_limit``, else 16 GiB), 4 micro-batches per chunk, one worker, two chunks in
    flight (one computing, the next queued; ``in_flight``).
    ``micro_batch`` (lanes; ``--micro-batch``, $DPSIM_MICRO_BATCH) sets the micro-batch on
    any backend (and turns the small-lane rule off). The size buckets' cost model is the backend's (constants above);
    ``$DPSIM_PADDING=off`` gives every size its own program (``auto``, the default: buckets).

    Several devices (:func:`device_count`, ``$DPSIM_DEVICES``): each chunk is sharded across
    them, and on CPU one chunk is computed at a time (``workers`` 1) instead of one per
    core: forced host devices are the same cores, so chunk threads on top of sharding
    would only oversubscribe them.
    """
    backend = backend or jax.default_backend()
    if micro_batch is None and os.environ.get("DPSIM_MICRO_BATCH"):
        text = os.environ["DPSIM_MICRO_BATCH"]
        try:
            micro_batch = int(text)
        except ValueError:
            raise UsageError(f"DPSIM_MICRO_BATCH={text!r} must be a number of lanes") from None
    if micro_batch is not None and (
        isinstance(micro_batch, bool) or not isinstance(micro_batch, int) or micro_batch < 1
    ):
        raise UsageError(f"micro_batch={micro_batch!r} must be an integer ≥ 1")
    padding = os.environ.get(PADDING_VARIABLE, "auto")
    if padding not in ("auto", "off"):
        raise UsageError(f"{PADDING_VARIABLE}={padding!r} must be 'auto' or 'off'")
    devices = device_count(backend)
    if backend == "cpu":
        policy = Batching(
            "cpu",
            math.inf,
            MAX_MICRO_BATCH_CPU,
            default_workers() if devices == 1 else 1,
            chunk_work=CHUNK_WORK,
            devices=devices,
            small_micro=SMALL_LANE_MICRO_CPU,
            small_lane_bytes=SMALL_LANE_BYTES_CPU,
            small_min_work=SMALL_LANE_MIN_WORK_CPU,
        )
    else:
        memory = (
            memory
            or (device_memory_bytes() if backend == jax.default_backend() else None)
            or 16 * 2**30
        )
        policy = Batching(
            backend,
            ACCELERATOR_MEMORY_SHARE * memory,
            MAX_MICRO_BATCH_ACCELERATOR,
            1,
            micro_per_chunk=ACCELERATOR_MICRO_BATCHES_PER_CHUNK,
            compile_seconds=COMPILE_SECONDS_ACCELERATOR,
            seconds_per_byte=SECONDS_PER_BYTE_ACCELERATOR,
            devices=devices,
            in_flight=ACCELERATOR_CHUNKS_IN_FLIGHT,
        )
    if micro_batch is not None:
        policy = dataclasses.replace(
            policy, micro_bytes=math.inf, max_micro=micro_batch, small_micro=1, override=True
        )
    if padding == "off":
        policy = dataclasses.replace(policy, compile_seconds=0.0)
    return policy


def micro_batch_size(lane_bytes: int, policy: Batching | None = None) -> int:
    """Most lanes vmapped together: the largest power of two whose working set fits the
    policy's micro-batch bytes, at most its ``max_micro``; exactly ``max_micro`` when the
    policy sets no byte bound (CPU: 1; an explicit ``--micro-batch``)."""
    policy = policy or batching("cpu")
    if math.isinf(policy.micro_bytes):  # an explicit --micro-batch: exactly that many lanes
        return int(policy.max_micro)
    size = max(1, int(policy.micro_bytes // max(lane_bytes, 1)))
    return int(min(policy.max_micro, 2 ** int(math.log2(size))))


def cpu_small_lane_micro(n_lanes: int, lane_bytes: int, n_analysis: int, policy: Batching) -> int:
    """The micro-batch of a step by the small-lane rule: ``policy.small_micro`` when one lane's
    working set is at most ``policy.small_lane_bytes`` and the step computes at least
    ``policy.small_min_work`` lane × analysis points (vmapping pays its longer tracing and
    compilation back only over many lanes; constants measured above), else 1.

    Args:
        n_lanes: lanes of the step (its largest shape point's); lane_bytes: one lane's
            working set; n_analysis: analysis points per lane.
    Returns:
        lanes vmapped together (≥ 1)."""
    small = (
        lane_bytes <= policy.small_lane_bytes
        and n_lanes * max(n_analysis, 1) >= policy.small_min_work
    )
    return max(1, policy.small_micro) if small else 1


def small_lane_layout(
    n_lanes: int,
    workers: int,
    one: tuple[int, int],
    wide: tuple[int, int],
    earlier,
    compile_seconds: float,
    seconds_per_lane: float,
) -> tuple[int, int]:
    """The (chunk size, micro-batch) of a step of small lanes (:func:`cpu_small_lane_micro`'s
    bytes bound) that the small-lane rule leaves one lane at a time: ``wide`` (vmapped
    lanes) or a wide layout compiled before, where its wall time by the cost model is less
    than that of ``one``: a layout costs :func:`layout_lanes` × its seconds per lane (vmapped:
    × (1 − :data:`SMALL_LANE_SAVING_CPU`)), plus its compilation where it is not among the
    ``earlier`` layouts (a wide program: :data:`VMAP_COMPILE_FACTOR_CPU` × ``compile_seconds``).
    A wide layout compiled before is taken within :func:`reuse_layout`'s bounds.

    Args:
        n_lanes: lanes of the step's largest shape point; workers: chunks at a time.
        one: (size, 1) by :func:`chunk_layout`; wide: (size, micro) at the small-lane micro-batch.
        earlier: (size, micro) layouts the step's program was compiled with, newest first.
        compile_seconds: the backend's compile time of a one-lane program.
        seconds_per_lane: one lane's compute time, one lane at a time.
    Returns:
        (size, micro).
    """
    earlier = [tuple(map(int, l)) for l in earlier]
    wide_seconds = seconds_per_lane * (1 - SMALL_LANE_SAVING_CPU)
    wide_compile = VMAP_COMPILE_FACTOR_CPU * compile_seconds
    compiled_wide = [l for l in earlier if l[1] > 1]
    best_wide = reuse_layout(n_lanes, workers, wide, compiled_wide, wide_compile, wide_seconds)

    def seconds(layout, per_lane, compile_):
        return layout_lanes(n_lanes, layout[0], workers) * per_lane + (
            0.0 if layout in earlier else compile_
        )

    if seconds(best_wide, wide_seconds, wide_compile) < seconds(
        one, seconds_per_lane, compile_seconds
    ):
        return best_wide
    return one


def visible_devices(backend: str | None = None) -> int:
    """The devices JAX shows for ``backend`` (default: the default backend); 1 where the
    backend is not this process's (e.g. a cost model for an accelerator asked on a CPU)."""
    try:
        return len(jax.devices(backend))
    except RuntimeError:
        return 1


def device_count(backend: str | None = None) -> int:
    """The devices a chunk's lanes are sharded across: every visible device of ``backend``
    (default: JAX's default backend), or ``$DPSIM_DEVICES`` of them (``1``: one device, no
    sharding; ``all``: the default). Raises UsageError naming a value that is not a whole
    number ≥ 1 or more than the visible devices."""
    visible = visible_devices(backend)
    text = os.environ.get(DEVICES_VARIABLE, "all").strip()
    if text == "all":
        return visible
    try:
        wanted = int(text)
    except ValueError:
        wanted = 0
    if wanted < 1 or wanted > visible:
        raise UsageError(
            f"{DEVICES_VARIABLE}={text!r} must be 'all' or a whole number from 1 to {visible} "
            f"(the visible devices)"
        )
    return wanted


def default_workers() -> int:
    """Chunks computed at the same time: the available CPU cores (at most MAX_WORKERS) on the
    CPU backend, one on an accelerator (where a second chunk waits queued behind it:
    :data:`ACCELERATOR_CHUNKS_IN_FLIGHT`).

    XLA:CPU splits each operation over its thread pool, which pays off for big operations
    but not for the many small ones of a small-n solve, so concurrent chunks keep the cores
    busy (benchmarks/cai.py section W times one chunk at a time against several).
    """
    if jax.default_backend() != "cpu":
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cores))


def chunk_layout(
    n_lanes: int,
    lane_bytes: int,
    n_analysis: int,
    requested: int | None,
    workers: int = 1,
    policy: Batching | None = None,
    micro: int | None = None,
) -> tuple[int, int]:
    """(chunk size, micro-batch size) for ``n_lanes`` lanes of one step, under ``policy``
    (default: the CPU's).

    The micro-batch: ``micro`` (a calibrated one, :mod:`dpsim.engine.execution.calibration`), else
    :func:`micro_batch_size`, or the small-lane rule's (:func:`cpu_small_lane_micro`) where
    that is larger. Chunks: ``requested`` lanes each, else about ``chunk_work`` bytes of work (CPU) or
    ``micro_per_chunk`` full micro-batches (accelerators) per device, and at least
    ``workers`` chunks when there are enough lanes, all of one size (one compilation). A
    chunk's lanes are split evenly over ``policy.devices`` devices; each device's share is
    the fewest micro-batches of at most the micro-batch lanes that cover it,
    balanced. So a chunk is padded by less than one lane per micro-batch and device, and its
    size is a multiple of ``devices`` × micro-batch (with several devices, a ``requested``
    size is rounded up to one).
    """
    policy = policy or batching("cpu")
    largest = micro or max(
        micro_batch_size(lane_bytes, policy),
        cpu_small_lane_micro(n_lanes, lane_bytes, n_analysis, policy),
    )
    devices = max(1, policy.devices)
    if requested is not None:
        n_chunks = math.ceil(n_lanes / requested)
    else:
        if policy.micro_per_chunk is not None:
            target = largest * policy.micro_per_chunk
        else:
            target = max(
                largest,
                int((policy.chunk_work or CHUNK_WORK) / max(lane_bytes * n_analysis / 8, 1)),
            )
        n_chunks = max(math.ceil(n_lanes / (target * devices)), min(workers, n_lanes))
    share = math.ceil(math.ceil(n_lanes / max(n_chunks, 1)) / devices)  # lanes per device
    batches = math.ceil(share / largest)
    micro = math.ceil(share / batches)
    return devices * batches * micro, micro


# A layout compiled before is reused only while it computes at most MAX_REUSE_WORK times the
# lanes of the step's own layout (padding and rounds of chunks) and its chunks are at least
# 1/MAX_REUSE_CHUNKS of the own layout's (each chunk is a program call and a Parquet part:
# a 2-replicate run's tiny chunks, e.g. `dpsim show`'s calibration, are not reused by a big
# run), whatever the cost model says: within these bounds a reused layout skips compiling
# and costs less than it pads; the table is the same either way (keys come from stable ids).
MAX_REUSE_WORK = 1.5
MAX_REUSE_CHUNKS = 4


def layout_lanes(n_lanes: int, size: int, workers: int) -> int:
    """Lane-computations on the critical path of ``n_lanes`` lanes in chunks of ``size``,
    ``workers`` chunks at a time: rounds of chunks × chunk size (padding included)."""
    return math.ceil(math.ceil(n_lanes / size) / max(workers, 1)) * size


def reuse_layout(
    n_lanes: int,
    workers: int,
    own: tuple[int, int],
    earlier,
    compile_seconds: float,
    seconds_per_lane: float,
) -> tuple[int, int]:
    """The (chunk size, micro-batch) of a step: one of the ``earlier`` layouts its program was
    compiled with (:mod:`dpsim.engine.execution.calibration`'s cache), when its extra wall time
    (:func:`layout_lanes` × ``seconds_per_lane``) is less than ``compile_seconds``, its work at
    most :data:`MAX_REUSE_WORK` × the ``own`` layout's (:func:`chunk_layout`) and its chunks at
    least 1/:data:`MAX_REUSE_CHUNKS` of the own size; else ``own``.
    So a run at other ``--reps`` reuses the compiled program (persistent compilation cache)
    where padding costs less than compiling.

    Args:
        n_lanes: lanes of the step's largest shape point; workers: chunks at a time.
        own: (size, micro) by :func:`chunk_layout`; earlier: (size, micro) pairs, newest first.
    Returns:
        (size, micro).
    """
    own_lanes = layout_lanes(n_lanes, own[0], workers)
    best, best_seconds = own, own_lanes * seconds_per_lane + compile_seconds
    for size, micro in earlier:
        if tuple(own) == (size, micro):
            return own
        lanes = layout_lanes(n_lanes, size, workers)
        seconds = lanes * seconds_per_lane
        if (
            lanes <= MAX_REUSE_WORK * own_lanes
            and size * MAX_REUSE_CHUNKS >= own[0]
            and seconds < best_seconds
        ):
            best, best_seconds = (int(size), int(micro)), seconds
    return best
