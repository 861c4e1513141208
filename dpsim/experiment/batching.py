"""The device batching policy: how many lanes a device computes together.

A *lane* is one (data point, replicate) pair (:mod:`dpsim.experiment.program`). A chunk's
lanes are processed by ``lax.map``, in vmapped micro-batches of several lanes on an
accelerator and one lane at a time on CPU (:func:`batching`: on the 2-core CPU, vmapping
lanes made programs slower to compile and, for iterative solvers, slower to run, since
every lane of a micro-batch waits for the slowest one's while-loop). On CPU several chunks
are computed at the same time (:func:`default_workers`); on an accelerator, one chunk computes
while the next waits queued behind it (:data:`ACCELERATOR_CHUNKS_IN_FLIGHT`), so the host
turns a finished chunk into rows and writes it while the device computes. The policy also holds the cost
model that decides which sizes of a padded experiment share a program
(:func:`dpsim.experiment.planning.size_buckets`), and the memory one lane must fit in
(:func:`memory_limit`). ``$DPSIM_MICRO_BATCH``, ``$DPSIM_PADDING`` and ``$DPSIM_DEVICES`` are
read here.

Several devices in one process (:func:`device_count`): when the default backend shows more
than one device (several GPUs, or host devices forced with
``XLA_FLAGS=--xla_force_host_platform_device_count=N``), each chunk's lanes are sharded
across all of them (:func:`dpsim.experiment.program.compiled_chunk_fn`), a chunk holding a
multiple of the device count (:func:`chunk_layout`); ``$DPSIM_DEVICES=1`` keeps to the first
device. Sharding then replaces the chunk threads of the CPU (one chunk at a time, its
devices computing in parallel; several accelerators keep their two chunks in flight,
:func:`batching`).

The rule here is the default; :mod:`dpsim.experiment.calibration` replaces a step's
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

# CPU: lanes one at a time. Measured on the 2-core CPU, fresh process / warm re-run,
# against the earlier cache-sized micro-batches (≤ 3 MiB, ≤ 128 lanes): cai Fig. 3 (n = 300)
# 4.3 / 2.4 s against 7.0 / 4.6 s; cai n = 200 2.0 / 0.37 s against 3.0 / 0.82 s; n = 40
# 1.7 / 0.064 s against 2.5 / 0.055 s; compiling a program took 15–30 % less in every
# experiment tried (xu-fig4, nguyen-fig1, chowdhury-fig1, cai-fig5), and their warm runs
# were within ±15 %. --micro-batch N (or $DPSIM_MICRO_BATCH) vmaps N lanes again.
MAX_MICRO_BATCH_CPU = 1
# CPU, small lanes in big steps (:func:`cpu_small_lane_micro`): a step's lanes are vmapped in
# micro-batches of SMALL_LANE_MICRO_CPU when one lane's working set is at most
# SMALL_LANE_BYTES_CPU and the step has at least SMALL_LANE_MIN_WORK_CPU lane × analysis
# points. Measured on the 2-core CPU, `dpsim run xu-fig4` (m = 10–30, lanes of 12–113 kB,
# three programs), run seconds, micro-batch 1 / 8 / 32: --reps 1000 (16 000 lanes a
# program) warm cache 14.7 / 12.0 / 11.6 s but cold 20.6 / 22.2 / 21.8 s; --reps 200 warm
# 3.6 / – / 4.2 s, cold 10.7 / – / 14.5 s; --reps 50 warm 2.1 / 2.85 / 2.95 s. A vmapped
# program takes ~0.25 s longer to trace and lower (xu: 1.0 s for three programs at
# micro-batch 1, 1.7–1.8 s vmapped) and ~1.3 s longer to compile cold, against ~65 µs of
# wall time saved per lane: the rule pays only beyond ~20 000 lanes a program. In process,
# compiled (benchmark warm re-runs, 2400 lanes): xu 0.68 / 0.60 / 0.58 s; cai n = 40 (7
# analysis points) 0.09 / 0.07 / 0.06 s. The byte bound keeps the cai n ≥ 300 lanes
# (~0.7 MB), which ran 1.5–2.2× slower vmapped, at 1.
SMALL_LANE_MICRO_CPU = 32
SMALL_LANE_BYTES_CPU = 128e3
SMALL_LANE_MIN_WORK_CPU = 32_000
MAX_WORKERS = 4
CHUNK_WORK = 2e8
# Accelerators: many lanes per vmapped micro-batch, bounded by a share of the device's
# memory; a chunk holds a few of them. Measured on an H100 80GB HBM3, 2026-11-26
# (benchmarks.device section M and its full-size sweep, benchmarks/results/device/), the cai
# Fig. 3 workload warm, with two chunks in flight: at 12 000 replicates (336 000 fits)
# micro-batch 500 (the 512 cap, chunks of 2000) 28 793 fits/s, 1024 29 326, 2048 29 893, 4096
# 28 050 (chunks of 16 000: three chunks, so the last one's host work is not hidden); at 1200
# replicates 256 24 858, 512 22 685, 1024 25 552, 2048 26 028, 4096 26 745. (An earlier
# engine, one chunk in flight, at 2400 replicates: 4 lanes 27.8 s, 64 4.1 s, 512 2.6 s,
# 4096 3.4 s.)
MAX_MICRO_BATCH_ACCELERATOR = 2048
ACCELERATOR_MEMORY_SHARE = 0.25
ACCELERATOR_MICRO_BATCHES_PER_CHUNK = 4
# Accelerators: chunks in flight at once. A chunk's rows and its Parquet part are made on the
# host after the device is done with it; with one chunk in flight the device waited meanwhile.
# Measured on an H100 (2026-11-26, cai Fig. 3 at 12 000 replicates, 336 000 fits, one chunk
# in flight): 11.2 s of chunk calls in a 12.8 s warm run, 1.6 s of host work in which the
# device was idle. A second chunk, dispatched while the first computes, runs as soon as the
# first is done (the chunks of one step are the same as with one in flight: one worker plans
# them, so the rows are the same to the last bit). While the driver writes chunk k, chunk k + 1
# is in flight and chunk k + 2 is dispatched once the write returns
# (:func:`~dpsim.experiment.threads.in_order`), so the device stays busy as long as a chunk's
# device time exceeds its rows and write (on the H100: about 1.7 s against 0.3 s a chunk).
ACCELERATOR_CHUNKS_IN_FLIGHT = 2
# Size buckets of padded experiments (:func:`~dpsim.experiment.planning.size_buckets`): the cost model of one program.
# CPU, measured on the 2-core CPU (cai Fig. 1, benchmarks/cai.py): its nine programs compiled
# in 18.0 s (2.0 s each) and computed 120 lanes × 4 ε × 8n² bytes (n = 100 … 700) in 8.6 s,
# 1.26e-9 s per lane-analysis byte. Accelerators: compiling took ~6 s per program on an H100
# (56 s for cai Fig. 1's nine) and a fit ran ~27× faster than on the CPU (0.027 ms
# against 0.73 ms per n = 300 fit, benchmarks/cai.py): estimates, not measured with padding
# on a GPU. When a later change halved the CPU compute per byte (BTL evaluate), the choice
# was re-checked rather than refit: Figure 1 in fresh processes,
# 2 rounds, 3 programs (these constants) 12.8 / 13.7 s, 2 programs (at 0.9e-9 s per byte)
# 14.3 / 12.3 s, 4 programs (at 2.5e-9) 14.9 / 15.8 s.
# A compiled chunk program must fit in this share of an accelerator's per-process memory, by
# XLA's own buffer assignment (program.memory_needed; the program is compiled again at half the
# micro-batch until it does). The lane_bytes bound above counts one (n, n) matrix of a lane, not
# the several a fit holds. (The guard was written after cai Fig. 1 at n = 700 ran out of an
# H100's memory, 2026-11-26; that failure was JAX's preallocation in the benchmark's own
# process, and with it off cai Fig. 1 ran there, 9.3 s cold: the guard has not yet triggered
# on a device.) The rest of the pool holds the chunk's arguments and outputs and the libraries'
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
    padded work (:func:`~dpsim.experiment.planning.size_buckets`; ``compile_seconds`` 0: one program per size).
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
    in_flight: int | None = None     # None: ``workers``
    override: bool = False      # the micro-batch was set (--micro-batch, $DPSIM_MICRO_BATCH): no rule, no calibration

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



def batching(backend: str | None = None, *, micro_batch: int | None = None,
             memory: float | None = None) -> Batching:
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
    if micro_batch is not None and (isinstance(micro_batch, bool) or not isinstance(micro_batch, int)
                                    or micro_batch < 1):
        raise UsageError(f"micro_batch={micro_batch!r} must be an integer ≥ 1")
    padding = os.environ.get(PADDING_VARIABLE, "auto")
    if padding not in ("auto", "off"):
        raise UsageError(f"{PADDING_VARIABLE}={padding!r} must be 'auto' or 'off'")
    devices = device_count(backend)
    if backend == "cpu":
        policy = Batching("cpu", math.inf, MAX_MICRO_BATCH_CPU, default_workers() if devices == 1 else 1,
                          chunk_work=CHUNK_WORK, devices=devices, small_micro=SMALL_LANE_MICRO_CPU,
                          small_lane_bytes=SMALL_LANE_BYTES_CPU, small_min_work=SMALL_LANE_MIN_WORK_CPU)
    else:
        memory = memory or (device_memory_bytes() if backend == jax.default_backend() else None) or 16 * 2**30
        policy = Batching(backend, ACCELERATOR_MEMORY_SHARE * memory, MAX_MICRO_BATCH_ACCELERATOR, 1,
                          micro_per_chunk=ACCELERATOR_MICRO_BATCHES_PER_CHUNK,
                          compile_seconds=COMPILE_SECONDS_ACCELERATOR, seconds_per_byte=SECONDS_PER_BYTE_ACCELERATOR,
                          devices=devices, in_flight=ACCELERATOR_CHUNKS_IN_FLIGHT)
    if micro_batch is not None:
        policy = dataclasses.replace(policy, micro_bytes=math.inf, max_micro=micro_batch, small_micro=1,
                                     override=True)
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
    small = lane_bytes <= policy.small_lane_bytes and n_lanes * max(n_analysis, 1) >= policy.small_min_work
    return max(1, policy.small_micro) if small else 1


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
        raise UsageError(f"{DEVICES_VARIABLE}={text!r} must be 'all' or a whole number from 1 to {visible} "
                         f"(the visible devices)")
    return wanted


def default_workers() -> int:
    """Chunks computed at the same time: the available CPU cores (at most MAX_WORKERS) on the
    CPU backend, one on an accelerator (where a second chunk waits queued behind it:
    :data:`ACCELERATOR_CHUNKS_IN_FLIGHT`).

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
                 workers: int = 1, policy: Batching | None = None, micro: int | None = None) -> tuple[int, int]:
    """(chunk size, micro-batch size) for ``n_lanes`` lanes of one step, under ``policy``
    (default: the CPU's).

    The micro-batch: ``micro`` (a calibrated one, :mod:`dpsim.experiment.calibration`), else
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
    largest = micro or max(micro_batch_size(lane_bytes, policy),
                           cpu_small_lane_micro(n_lanes, lane_bytes, n_analysis, policy))
    devices = max(1, policy.devices)
    if requested is not None:
        n_chunks = math.ceil(n_lanes / requested)
    else:
        if policy.micro_per_chunk is not None:
            target = largest * policy.micro_per_chunk
        else:
            target = max(largest, int((policy.chunk_work or CHUNK_WORK) / max(lane_bytes * n_analysis / 8, 1)))
        n_chunks = max(math.ceil(n_lanes / (target * devices)), min(workers, n_lanes))
    share = math.ceil(math.ceil(n_lanes / max(n_chunks, 1)) / devices)    # lanes per device
    batches = math.ceil(share / largest)
    micro = math.ceil(share / batches)
    return devices * batches * micro, micro


# A layout compiled before is reused only while it computes at most MAX_REUSE_WORK times the
# lanes of the step's own layout (padding and rounds of chunks) and its chunks are at least
# 1/MAX_REUSE_CHUNKS of the own layout's (each chunk is a program call and a Parquet part:
# a 2-replicate run's tiny chunks, e.g. `dpsim show`'s calibration, are not reused by a big
# run), whatever the cost model says. Measured on the 2-core CPU (shared, load 5–8),
# `--reps 200` then `--reps 300` into another folder, the second run: xu-fig4 (3 programs,
# chunks of 1600 reused for 4800 lanes: 3 chunks, 2 rounds) in process 16.8 / 7.8 s with 0
# compilations against 21.9 / 21.5 s with 3 (own chunks of 2400); separate `dpsim run`
# processes with the persistent compilation cache 10.2 s run (14.8 s process) against 23.4 s
# (27.3 s); cai-fig3 --set n_items=40 (chunks of 400 for 1200 lanes) in process 1.11 / 1.10 s
# against 5.71 / 7.40 s, processes 2.8 s (10.0 s) against 6.9 s (12.8 s). Tables identical.
MAX_REUSE_WORK = 1.5
MAX_REUSE_CHUNKS = 4


def layout_lanes(n_lanes: int, size: int, workers: int) -> int:
    """Lane-computations on the critical path of ``n_lanes`` lanes in chunks of ``size``,
    ``workers`` chunks at a time: rounds of chunks × chunk size (padding included)."""
    return math.ceil(math.ceil(n_lanes / size) / max(workers, 1)) * size


def reuse_layout(n_lanes: int, workers: int, own: tuple[int, int], earlier, compile_seconds: float,
                 seconds_per_lane: float) -> tuple[int, int]:
    """The (chunk size, micro-batch) of a step: one of the ``earlier`` layouts its program was
    compiled with (:mod:`dpsim.experiment.calibration`'s cache), when its extra wall time
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
        if lanes <= MAX_REUSE_WORK * own_lanes and size * MAX_REUSE_CHUNKS >= own[0] and seconds < best_seconds:
            best, best_seconds = (int(size), int(micro)), seconds
    return best
