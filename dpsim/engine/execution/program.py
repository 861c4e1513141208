"""The compiled programs of a run: keys, the lane function, the method output contract, and
ahead-of-time compilation (with the LAPACK deadlock guard of :mod:`dpsim.linalg`).

A *lane* is one (data point, replicate) pair: it draws the data once and analyses it at
every analysis point in turn, so all privacy levels of a replicate see the same data. A
*chunk* is a fixed number of lanes, processed by ``lax.map`` in vmapped micro-batches; each
step of a run (a shape point and its static data values) compiles one chunk program.

Keys (DESIGN "Randomness"), from stable integers only, never from batch positions:

* θ*-design: (seed, TRUTH, id(shape), or id of the ``truth_axes`` part of it), and with
  ``truth_per_replicate`` also the replicate;
* lane: (seed, DATA, id(shape ∪ data point), rep); ``generate`` gets it folded with DATA;
* analysis point: the lane key folded with ANALYSIS and id(analysis point);
* a method: the analysis key folded with id(method name); the privatise stage: with
  id("privatise"). Adding or removing a method changes no other method's draws.
* the release, when the experiment declares ``release_axes``: the generate key is split in
  two, ``generate`` gets the first half and the privatise stage gets the second folded with
  id(the analysis point's values on the release axes), so analysis points that differ only
  on other axes (a mechanism, an estimator's rule) share one release (common random numbers).

An experiment's :class:`~dpsim.engine.definition.grid.CellArrays` reach a chunk once
(``ChunkArguments.cells``: every cell of the step, built when it was planned) with each lane's,
or analysis point's, cell index (``cell_index``); the lane sees ``Cell(tables, index)`` in its
data or analysis values, and reads its cell without a copy per lane.

With several devices (:func:`~dpsim.engine.execution.batching.device_count`) a chunk's lanes are
sharded across them (:func:`jitted_chunk_fn`, ``shard_map`` over a one-axis mesh
``"lanes"``); since no key depends on a lane's position, the draws are the same.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import marshal
import os
import types
import weakref
from collections import OrderedDict
from typing import Callable, Iterator, Mapping, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpsim.errors import UsageError, call_stage, warn
from dpsim.engine.execution.batching import PROGRAM_MEMORY_SHARE_ACCELERATOR, program_memory_limit
from dpsim.engine.presentation.units import format_bytes
from dpsim.engine.definition.experiment import Cell, Context, Experiment
from dpsim.engine.definition.ids import method_id, stable_id
from dpsim.linalg import batched_lapack_calls

_TRUTH, _DATA, _ANALYSIS = 1, 2, 3
_DTYPES = {"float": jnp.float64, "bool": jnp.bool_, "int": jnp.int64}


def base_key(seed):
    return jax.random.key(seed)


def id_words(ids) -> np.ndarray:
    """63-bit ids as (low, high) uint32 words, the form ``fold_in`` takes."""
    ids = np.asarray(ids, dtype=np.uint64)
    return np.stack([ids & np.uint64(0xFFFFFFFF), ids >> np.uint64(32)], axis=-1).astype(np.uint32)


def fold_in_words(key, words):
    """``fold_in(… fold_in(key, words[0]) …, words[-1])``: the words folded in turn, as one
    loop, so the program holds one threefry hash for the whole chain instead of one per
    word. The key is the same as the nested calls'; the program holds fewer fused kernels,
    and XLA:CPU compile time grows with the kernel count. ``words``: uint32 values, shape (w,); traceable."""
    words = jnp.asarray(words, jnp.uint32)
    return jax.lax.fori_loop(0, words.shape[0], lambda i, k: jax.random.fold_in(k, words[i]), key)


def _prefixed(tag: int, *parts) -> jax.Array:
    """uint32 words: ``tag`` then each part (a scalar or a vector), for :func:`fold_in_words`."""
    return jnp.concatenate(
        [jnp.asarray([tag], jnp.uint32)]
        + [jnp.atleast_1d(jnp.asarray(p, jnp.uint32)) for p in parts]
    )


def truth_key(seed, shape_words) -> jax.Array:
    """Key of the θ*-design of one shape point: (seed, shape id), the id given as its two
    uint32 words (:func:`id_words` of :func:`stable_id` of the shape). Traceable."""
    return fold_in_words(base_key(seed), _prefixed(_TRUTH, shape_words))


def truth_words(experiment: Experiment, shape: Mapping) -> np.ndarray:
    """The id words keying θ* at a shape point: of the ``truth_axes`` part of it (all of it
    by default), see :meth:`Experiment.truth_point`."""
    return id_words(experiment.point_id(experiment.truth_point(shape)))


def lane_key(seed, data_words, rep):
    """Key of one lane: (seed, id(shape ∪ data point), rep)."""
    return fold_in_words(base_key(seed), _prefixed(_DATA, data_words, rep))


PRIVATISE_WORDS = id_words(stable_id({"stage": "privatise"}))


def release_words(experiment: Experiment, analysis_points) -> np.ndarray | None:
    """The release id words of each analysis point: the id of its values on the experiment's
    ``release_axes`` (module docstring), or None when it declares none.

    Args:
        analysis_points: Q dicts of analysis axis values (the grid's).
    Returns:
        [Q, 2] uint32, or None.
    """
    if experiment.keys.release_axes is None:
        return None
    return id_words(
        [
            stable_id({a: point[a] for a in experiment.keys.release_axes})
            for point in analysis_points
        ]
    )


def _checked_outputs(experiment: Experiment, name: str, out: Mapping) -> dict:
    """A method's outputs, checked against its declaration and cast to the declared types."""
    declared = experiment.methods[name].columns
    got = set(out)
    missing, extra = sorted(set(declared) - got), sorted(got - set(declared))
    if missing or extra:
        problem = (
            (f"did not return {missing}" if missing else "")
            + (" and " if missing and extra else "")
            + (f"returned undeclared {extra}" if extra else "")
        )
        raise UsageError(
            f"experiment {experiment.name!r}: method {name!r} {problem}; a Method declares "
            f"every metric and diagnostic it returns"
        )
    checked = {}
    for column, kind in declared.items():
        value = jnp.asarray(out[column])
        if value.shape != ():
            raise UsageError(
                f"experiment {experiment.name!r}: method {name!r} returned {column!r} of shape "
                f"{value.shape}; every metric and diagnostic is a scalar per replicate"
            )
        checked[column] = value.astype(_DTYPES[kind])
    return checked


def analyse_point(experiment: Experiment, a_key, ctx: Context, release_key=None) -> dict:
    """Every method at one analysis point: {method: {column: scalar}} (module docstring).

    The keys of the privatise stage and of every method are derived together, by one
    vmapped :func:`fold_in_words` (one hash in the program, not one per method); with
    ``release_key`` (the experiment's ``release_axes``) the privatise stage gets that key."""
    names = list(experiment.methods)
    words = [id_words(method_id(name)) for name in names]
    own_release = experiment.privatise is not None and release_key is None
    if own_release:
        words.append(PRIVATISE_WORDS)
    keys = jax.vmap(fold_in_words, in_axes=(None, 0))(a_key, jnp.asarray(np.stack(words)))
    if experiment.privatise is not None:
        ctx = ctx._replace(
            released=_stage(
                experiment,
                "privatise",
                _static_values(ctx.shape, ctx.data),
                experiment.privatise,
                keys[-1] if own_release else release_key,
                ctx,
            )
        )
    out = {}
    for index, name in enumerate(names):
        out[name] = _checked_outputs(experiment, name, _called(experiment, name, keys[index], ctx))
    return out


def _called(experiment: Experiment, name: str, key, ctx: Context):
    """A method's outputs; an exception it raises while it is traced becomes one UsageError
    line naming the experiment, the method, the shape point and the error (:func:`_stage`)."""
    return _stage(
        experiment,
        f"method {name!r}",
        _static_values(ctx.shape, ctx.data),
        experiment.methods[name].fn,
        key,
        ctx,
    )


def _stage(experiment: Experiment, stage: str, at: dict, fn, *args):
    """``fn(*args)``, a stage of the study's own code (truth, generate, privatise, a method)
    traced in a program at the grid point ``at`` (its static values): an exception it raises
    becomes one UsageError line naming the experiment, the stage, the point and the error
    (:func:`dpsim.errors.call_stage`); ``dpsim --traceback`` (``DPSIM_TRACEBACK=1``)
    re-raises it as it was, with the whole trace."""
    return call_stage(experiment.name, stage, at, fn, *args)


def _static_values(*points) -> dict:
    """The Python values (numbers, strings) of ``points``, merged: the part of a traced grid
    point an error message can name (traced values are not known while tracing)."""
    return {
        k: v
        for point in points
        for k, v in dict(point).items()
        if isinstance(v, (int, float, str, np.integer, np.floating)) and not isinstance(v, bool)
    }


class ChunkArguments(NamedTuple):
    """The arguments of one call of a chunk program (:func:`make_chunk_fn`): host arrays, or
    ``ShapeDtypeStruct`` s to compile without executing (:func:`spec`). Built for a planned
    chunk by :func:`dpsim.engine.execution.chunk_io.chunk_arguments`; B lanes (the step's chunk
    size), Q analysis points."""

    seed: np.uint32  # the run's seed
    shape_words: np.ndarray  # [2] uint32: the shape point's θ*-key words (:func:`truth_words`)
    shape_vals: dict  # {name: int64 scalar}: traced shape values (empty without padding)
    data_words: np.ndarray  # [B, 2] uint32: each lane's data id words
    reps: np.ndarray  # [B] uint32: each lane's replicate
    data_vals: dict  # {name: [B]}: numeric data values
    a_words: np.ndarray  # [Q, 2] uint32: the analysis points' id words (shared)
    a_vals: dict  # {name: [B, Q]}: numeric analysis values (derived ones may vary by lane)
    release_words: np.ndarray | None = (
        None  # [Q, 2] uint32: release id words (:func:`release_words`), or None
    )
    cells: dict | None = None  # {name: {array: [C, ...]}}: the step's CellArrays (shared), or None
    cell_index: dict | None = (
        None  # {name: [B] or [B, Q] int32}: each lane's (analysis point's) cell
    )


def make_chunk_fn(
    experiment: Experiment,
    shape: dict,
    static_data: dict,
    groups: list,
    micro: int,
    reads: list[set] | None = None,
):
    """The program of one step: (seed, lanes of one shape point) → {method: {column: [lanes, Q]}}.

    θ* is drawn inside the program, once per chunk (before the lanes' ``lax.map``) or, with
    ``truth_per_replicate``, once per lane, from the θ*-design key of the module docstring:
    a step is one compiled program, not a θ*-program and a chunk program (one compilation
    fewer per shape point; the θ*-design is a few O(n) operations, negligible per chunk).
    Every lane of a chunk belongs to one shape point, whose θ*-key words and traced shape
    values are arguments: with :class:`~dpsim.engine.definition.grid.Padding` one program serves
    every shape point of a size bucket.

    Args:
        shape: the program's static shape values (Python values): the shape point, or with
            padding its static axes and the capacity (:func:`program_shape`).
        static_data: the step's string data values.
        groups: [(static analysis values, analysis indices)], the analysis points grouped by
            their string values (each group is a ``lax.map`` over its numeric values; the
            groups are unrolled); outputs are concatenated in group order.
        micro: lanes vmapped together (1: lanes one at a time).
        reads: one set per group that collects the string analysis keys the traced code
            reads (:func:`_lowered`), or None.
    Returns:
        ``chunk(args)`` of one :class:`ChunkArguments`.
    """

    at = _static_values(shape, static_data)  # the step's point, as an error names it
    levels = {cells.name: experiment.cell_level(cells) for cells in experiment.cell_arrays}

    def lane(
        seed,
        point,
        truth,
        design_key,
        data_words,
        rep,
        data_vals,
        a_words,
        a_vals,
        r_words,
        cells,
        cell_index,
    ):
        key = lane_key(seed, data_words, rep)
        if experiment.truth_per_replicate:
            truth = _stage(
                experiment,
                "truth",
                at,
                experiment.truth,
                jax.random.fold_in(design_key, rep),
                point,
            )
        data = {
            **static_data,
            **data_vals,
            **{
                name: Cell(cells[name], cell_index[name])
                for name in levels
                if levels[name] == "data"
            },
        }
        a_cells = {name: cell_index[name] for name in levels if levels[name] == "analysis"}
        generate_key = jax.random.fold_in(key, _DATA)
        if r_words is not None:  # release_axes: the release's lane key is split off generate's
            generate_key, release_lane_key = jax.random.split(generate_key)
        sample = _stage(
            experiment, "generate", at, experiment.generate, generate_key, point, truth, data
        )
        outputs = []
        for g, (static_values, indices) in enumerate(groups):
            idx = np.asarray(indices)

            def one(args, static_values=static_values, g=g):
                words, values, release, own_cells = args
                a_key = fold_in_words(key, _prefixed(_ANALYSIS, words))
                analysis = {
                    **static_values,
                    **values,
                    **{name: Cell(cells[name], index) for name, index in own_cells.items()},
                }
                if reads is not None:
                    analysis = _ReadRecorder(analysis, set(static_values), reads[g])
                ctx = Context(point, truth, sample, data, analysis)
                release_key = None if release is None else fold_in_words(release_lane_key, release)
                return analyse_point(experiment, a_key, ctx, release_key)

            outputs.append(
                jax.lax.map(
                    one,
                    (
                        a_words[idx],
                        {k: v[idx] for k, v in a_vals.items()},
                        None if r_words is None else r_words[idx],
                        {k: v[idx] for k, v in a_cells.items()},
                    ),
                )
            )
        return jax.tree_util.tree_map(lambda *parts: jnp.concatenate(parts), *outputs)

    def chunk(args: ChunkArguments):
        point = {**shape, **args.shape_vals}
        design_key = truth_key(args.seed, args.shape_words)  # once per chunk, not per lane
        truth = (
            None
            if experiment.truth_per_replicate
            else _stage(experiment, "truth", at, experiment.truth, design_key, point)
        )
        cells = args.cells or {}
        return jax.lax.map(
            lambda per_lane: lane(
                args.seed,
                point,
                truth,
                design_key,
                *per_lane[:3],
                args.a_words,
                per_lane[3],
                args.release_words,
                cells,
                per_lane[4],
            ),
            (args.data_words, args.reps, args.data_vals, args.a_vals, args.cell_index or {}),
            batch_size=micro if micro > 1 else None,
        )

    return chunk


class _ReadRecorder(Mapping):
    """The analysis values of a group while its program is traced: a read-only mapping that
    adds to ``reads`` each string (static) key the traced code reads, by ``[]`` or ``get``;
    iterating over it, or anything built on iteration (``items``, ``dict(…)``, ``{**…}``,
    ``==``), counts as reading every string key. Membership tests read nothing: every
    analysis point has the same keys."""

    def __init__(self, values: dict, static: set, reads: set):
        self._values, self._static, self._reads = values, static, reads

    def __getitem__(self, key):
        if key in self._static:
            self._reads.add(key)
        return self._values[key]

    def __iter__(self) -> Iterator:
        self._reads.update(self._static)
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key) -> bool:
        return key in self._values


def merge_groups(groups: list, reads: list) -> list:
    """Analysis groups whose traced code read the same string keys with the same values,
    merged into one (a string value no traced code reads gets no copy of the methods).

    Python code branches only on what it reads, so the points of a merged group trace alike;
    the merged group's context holds only the keys read (any other read fails loudly).

    Args:
        groups: [(string analysis values, analysis indices)], one per distinct combination.
        reads: the string keys each group's traced code read (:class:`_ReadRecorder`).
    Returns:
        [(string values read, analysis indices)], indices sorted, groups in grid order.
    """
    merged: dict = {}
    for (values, indices), keys in zip(groups, reads):
        merged.setdefault(tuple((k, values[k]) for k in values if k in keys), []).extend(indices)
    return sorted(
        ((dict(read), sorted(indices)) for read, indices in merged.items()), key=lambda g: g[1][0]
    )


class ChunkProgram(NamedTuple):
    """A compiled chunk program, the analysis groups it computes (in output order) and the
    micro-batch it was compiled at (fewer lanes than asked where it did not fit the device's
    memory, :func:`compiled_chunk_fn`)."""

    fn: Callable
    groups: list
    micro: int = 1

    @property
    def order(self) -> np.ndarray:
        """The analysis index of each output position."""
        return np.concatenate([np.asarray(indices) for _, indices in self.groups])


LANES_AXIS = "lanes"

# How each field of ChunkArguments is split across devices: per-lane arrays by their first
# axis, the rest copied to every device.
_LANE_FIELDS = ("data_words", "reps", "data_vals", "a_vals", "cell_index")


def _argument_specs() -> ChunkArguments:
    """A ``PartitionSpec`` per :class:`ChunkArguments` field (a prefix of its pytree)."""
    P = jax.sharding.PartitionSpec
    return ChunkArguments(
        **{f: P(LANES_AXIS) if f in _LANE_FIELDS else P() for f in ChunkArguments._fields}
    )


def lanes_mesh(devices: int) -> jax.sharding.Mesh:
    """A one-axis mesh named ``"lanes"`` over the first ``devices`` devices of the default backend."""
    return jax.sharding.Mesh(np.asarray(jax.devices()[:devices]), (LANES_AXIS,))


def jitted_chunk_fn(chunk: Callable, devices: int = 1):
    """``jax.jit`` of a chunk function (:func:`make_chunk_fn`); with ``devices`` > 1 its lanes
    are sharded across that many devices: ``shard_map`` over :func:`lanes_mesh`, each
    device computing its contiguous share of the lanes with the same per-lane code, the
    scalars, θ*-key words and analysis words copied to every device (θ* is drawn on each).
    The chunk's lane count must be a multiple of ``devices`` × micro-batch
    (:func:`~dpsim.engine.execution.batching.chunk_layout`). Keys come from each lane's ids, never
    from its position, so sharding changes no draw."""
    if devices <= 1:
        return jax.jit(chunk)
    mesh = lanes_mesh(devices)
    specs = _argument_specs()
    sharded = jax.shard_map(
        chunk,
        mesh=mesh,
        in_specs=(specs,),
        out_specs=jax.sharding.PartitionSpec(LANES_AXIS),
        check_vma=False,
    )
    shardings = jax.tree_util.tree_map(
        lambda p: jax.sharding.NamedSharding(mesh, p),
        specs,
        is_leaf=lambda x: isinstance(x, jax.sharding.PartitionSpec),
    )
    return jax.jit(
        sharded,
        in_shardings=(shardings,),
        out_shardings=jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(LANES_AXIS)),
    )


def _lower(
    experiment: Experiment,
    shape: dict,
    static_data: dict,
    groups: list,
    micro: int,
    example_args,
    reads: list[set] | None = None,
    devices: int = 1,
):
    """:func:`make_chunk_fn` traced and lowered for ``example_args`` (not compiled), its lanes
    sharded across ``devices`` (:func:`jitted_chunk_fn`)."""
    chunk = make_chunk_fn(experiment, shape, static_data, groups, micro, reads)
    return jitted_chunk_fn(chunk, devices).lower(example_args)


def _lowered(
    experiment: Experiment,
    shape: dict,
    static_data: dict,
    groups: list,
    micro: int,
    example_args,
    devices: int = 1,
):
    """The lowered chunk program and its analysis groups, specialised on the string values its
    traced code reads: with several groups, the program is traced with each group's
    analysis values recording what is read (:class:`_ReadRecorder`); if some groups can be
    merged (:func:`merge_groups`) it is lowered again with fewer copies of the methods.

    A string analysis axis that only host-side :class:`~dpsim.engine.Derived` functions
    read (xu-hetero's ``profile`` and ``match``, xu's ``scheme``, nguyen's ``p0``) would
    otherwise compile one copy of every method per value (xu-hetero's program would hold nine
    copies). When nothing merges, the first
    lowering is the program: no extra work."""
    step = (experiment, shape, static_data)
    if len(groups) <= 1:
        return _lower(*step, groups, micro, example_args, devices=devices), groups
    reads = [set() for _ in groups]
    lowered = _lower(*step, groups, micro, example_args, reads, devices=devices)
    merged = merge_groups(groups, reads)
    return (
        (lowered, groups)
        if len(merged) == len(groups)
        else (_lower(*step, merged, micro, example_args, devices=devices), merged)
    )


def static_shape(experiment: Experiment, shape: Mapping) -> dict:
    """The shape values a program is specialised on: all of them, or with
    :class:`~dpsim.engine.definition.grid.Padding` all but the traced axes."""
    padding = experiment.tuning.padding
    return (
        dict(shape)
        if padding is None
        else {k: v for k, v in shape.items() if k not in padding.traced_axes}
    )


def program_shape(experiment: Experiment, shape: Mapping, capacity: int | None = None) -> dict:
    """The static shape values a program is compiled for: the shape point itself, or with
    padding its :func:`static_shape` plus the ``capacity`` (default: the point's own size)."""
    padding = experiment.tuning.padding
    if padding is None:
        return dict(shape)
    return {
        **static_shape(experiment, shape),
        padding.capacity: int(shape[padding.axis] if capacity is None else capacity),
    }


def lane_shape(experiment: Experiment, compiled: Mapping) -> dict:
    """A program shape as ``lane_bytes`` reads it: with padding, the padded axis at capacity."""
    padding = experiment.tuning.padding
    if padding is None:
        return dict(compiled)
    return {**compiled, padding.axis: compiled[padding.capacity]}


def traced_shape_values(experiment: Experiment, shape: Mapping) -> dict:
    """{axis: int64 scalar} of the shape axes a padded program receives traced (empty
    without padding; the runner checks that they are integers when it plans)."""
    padding = experiment.tuning.padding
    return {} if padding is None else {axis: np.int64(shape[axis]) for axis in padding.traced_axes}


# Compiled programs of this process, oldest first. Each XLA:CPU executable holds a few hundred
# memory mappings, and Linux allows 65530 per process (vm.max_map_count): a process that kept
# every program died in LLVM ("Cannot allocate memory", then a segfault) after about 27
# experiments of `dpsim verify`. So only the programs of the most recent experiments are kept
# (a re-run of one of them compiles nothing), and never more than MAX_COMPILED programs.
_COMPILED: OrderedDict = OrderedDict()
# program key → bytes its program needs, for the programs released because they did not fit
# a memory limit (compiled_chunk_fn): a later call under that limit or a smaller one goes
# straight to fewer lanes.
_TOO_BIG: dict = {}
KEEP_EXPERIMENTS = 2
MAX_COMPILED = 128


def _remember(key, experiment, compiled) -> None:
    """Cache a compiled program and evict the oldest ones beyond the limits above."""
    _COMPILED[key] = (experiment, compiled)  # the experiment is kept for the limits below
    recent = []
    for cached_experiment, _ in reversed(_COMPILED.values()):
        if not any(cached_experiment is e for e in recent):
            recent.append(cached_experiment)
    keep = recent[:KEEP_EXPERIMENTS]
    for old in [k for k, (e, _) in _COMPILED.items() if not any(e is x for x in keep)]:
        del _COMPILED[old]
    while len(_COMPILED) > MAX_COMPILED:
        _COMPILED.popitem(last=False)


def _recall(key):
    """A cached compiled program (marked as recently used), or None."""
    entry = _COMPILED.get(key)
    if entry is None:
        return None
    _COMPILED.move_to_end(key)
    return entry[1]


def _signature(tree) -> str:
    """Shapes, dtypes and structure of a pytree of arrays or ``ShapeDtypeStruct`` s."""
    leaves = jax.tree_util.tree_map(lambda a: (tuple(a.shape), str(a.dtype)), tree)
    return repr(jax.tree_util.tree_structure(tree)) + repr(leaves)


def spec(tree):
    """``ShapeDtypeStruct`` s of a pytree of arrays, for compiling without executing."""
    return jax.tree_util.tree_map(
        lambda a: (
            a
            if isinstance(a, jax.ShapeDtypeStruct)
            else jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype)
        ),
        tree,
    )


def _lapack_problem(compiled) -> list[str]:
    """Batched LAPACK calls of a compiled program (CPU only; see :mod:`dpsim.linalg`)."""
    if jax.default_backend() != "cpu":
        return []
    return batched_lapack_calls(compiled.as_text())


def _static_key(experiment, *parts) -> tuple:
    return (
        *program_identity(experiment),
        *(repr(sorted(p.items())) if isinstance(p, dict) else repr(p) for p in parts),
    )


_IDENTITIES: dict = {}  # id(experiment) -> (weak reference, identity): computed once per object


def program_identity(experiment: Experiment) -> tuple[str, str, str]:
    """What a compiled program of ``experiment`` is keyed by, instead of the object's
    ``id()``: its name, its code fingerprint's hash
    (:func:`~dpsim.engine.storage.provenance.fingerprint`) and a digest of its definition
    (:func:`_definition_digest`: every field, the bytecode and closure values of every
    function it reaches). The same experiment loaded again, or in another process (a Ray
    worker), has the same identity; a mutant (same name and files, another closure) has
    another. Returns (name, code hash, definition digest)."""
    entry = _IDENTITIES.get(id(experiment))
    if entry is not None and entry[0]() is experiment:
        return entry[1]
    from dpsim.engine.storage.provenance import fingerprint

    identity = (experiment.name, fingerprint(experiment)["hash"], _definition_digest(experiment))
    try:
        _IDENTITIES[id(experiment)] = (weakref.ref(experiment), identity)
    except TypeError:  # an object without weak references: computed each time
        pass
    return identity


def _definition_digest(value) -> str:
    """A hash of :func:`_describe` of ``value`` (16 hex digits)."""
    return hashlib.sha256(_describe(value, set()).encode()).hexdigest()[:16]


def _describe(value, seen: set) -> str:
    """A text that determines what ``value`` computes, without object addresses where it can:
    a function by its module, name, bytecode (constants included), defaults and closure
    values; a ``partial`` by its function and arguments; a dataclass by its class and fields;
    containers element by element; numbers, strings and arrays by value. Anything else is
    named by its class and ``repr``, and when that ``repr`` holds an address, by its ``id``
    (unstable across processes but never confusing two objects of one process)."""
    if isinstance(value, (str, int, float, bool, complex, type(None))):
        return repr(value)
    if id(value) in seen:
        return "<cycle>"
    seen = seen | {id(value)}
    if isinstance(value, types.FunctionType):
        cells = []
        for cell in value.__closure__ or ():
            try:
                cells.append(_describe(cell.cell_contents, seen))
            except ValueError:  # an empty cell
                cells.append("<empty>")
        return (
            f"function {value.__module__}.{value.__qualname__} {marshal.dumps(value.__code__).hex()} "
            f"defaults {_describe(value.__defaults__, seen)} {_describe(value.__kwdefaults__, seen)} "
            f"closure [{', '.join(cells)}] wrapped {_describe(getattr(value, '__wrapped__', None), seen)}"
        )
    if isinstance(value, functools.partial):
        return (
            f"partial {_describe(value.func, seen)} {_describe(value.args, seen)} "
            f"{_describe(value.keywords, seen)}"
        )
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = ", ".join(
            f"{f.name}={_describe(getattr(value, f.name), seen)}" for f in dataclasses.fields(value)
        )
        return f"{type(value).__module__}.{type(value).__qualname__}({fields})"
    if isinstance(value, Mapping):
        return (
            "{"
            + ", ".join(
                f"{_describe(k, seen)}: {_describe(v, seen)}"
                for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))
            )
            + "}"
        )
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return f"{type(value).__name__}[" + ", ".join(_describe(v, seen) for v in items) + "]"
    if (
        not isinstance(value, np.ndarray)
        and hasattr(value, "__array__")
        and hasattr(value, "shape")
    ):
        value = np.asarray(value)  # e.g. a jax.Array (its repr elides long arrays)
    if isinstance(value, np.ndarray):
        return f"array {value.dtype} {value.shape} {hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()}"
    if isinstance(value, (type, types.BuiltinFunctionType, types.ModuleType)) or (
        callable(value) and hasattr(value, "__module__") and hasattr(value, "__qualname__")
    ):
        return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', getattr(value, '__name__', ''))}"
    text = repr(value)
    return f"{type(value).__qualname__} {text if ' at 0x' not in text else id(value)}"


# XLA:CPU options of the chunk programs: XLA's defaults, unless $DPSIM_XLA_CPU_OPT_LEVEL sets
# the LLVM optimisation level. No other level, preset or pass option shortened Figures 1–3
# end to end (benchmarks/compare.py), and each moved float results; level 0 trades run time
# for compile time, which suits smoke runs that are all compilation
# (the conformance suite). YNNPACK fusions stay on: the BTL evaluate is slower without them.
CPU_OPT_LEVEL_VARIABLE = "DPSIM_XLA_CPU_OPT_LEVEL"


def cpu_opt_level() -> int | None:
    """The LLVM optimisation level of chunk programs on CPU set by ``$DPSIM_XLA_CPU_OPT_LEVEL``
    (0–3), or None (XLA's default) when it is unset. Raises UsageError naming a bad value."""
    text = os.environ.get(CPU_OPT_LEVEL_VARIABLE)
    if text is None:
        return None
    if text.strip() not in ("0", "1", "2", "3"):
        raise UsageError(f"{CPU_OPT_LEVEL_VARIABLE}={text!r} must be 0, 1, 2 or 3")
    return int(text)


def compiler_options() -> dict | None:
    """XLA options for compiling a chunk program: ``{"xla_backend_optimization_level": L}`` on
    CPU when :func:`cpu_opt_level` sets one, else None (XLA's defaults)."""
    level = cpu_opt_level()
    return (
        None
        if level is None or jax.default_backend() != "cpu"
        else {"xla_backend_optimization_level": level}
    )


def compiled_chunk_fn(
    experiment: Experiment,
    shape: dict,
    static_data: dict,
    groups: list,
    micro: int,
    example_args: ChunkArguments,
    devices: int = 1,
    in_flight: int = 1,
    *,
    _nested: bool = False,
) -> ChunkProgram:
    """Ahead-of-time compiled :func:`make_chunk_fn` (:func:`_compiled_program`, cached in
    process), at ``micro`` lanes vmapped together or fewer, to fit the device's memory.

    ``example_args``: a :class:`ChunkArguments` of arrays or ``ShapeDtypeStruct`` s (compiling
    executes nothing). ``devices``: the lanes are sharded across the first ``devices``
    devices (:func:`jitted_chunk_fn`; the chunk's lanes a multiple of ``devices`` × ``micro``).
    On an accelerator a program whose buffers exceed
    :func:`~dpsim.engine.execution.batching.program_memory_limit` for ``in_flight`` chunks at once
    (:func:`memory_overrun`) is released and replaced by the program at fewer lanes
    (:func:`_fewer_lanes`, each one compiled through the cache), with one warning naming the
    sizes (``_nested``: no warning, for those calls). The limit is checked on every call and
    is not part of the cache key: a run with other chunks in flight reuses the compiled
    programs that fit its limit, goes straight to fewer lanes where a program was found too
    big for it before (``_TOO_BIG``, without a second warning), and compiles a released
    program again where its limit is larger.

    Returns:
        :class:`ChunkProgram`: the program, the analysis groups it computes (``groups``, or
        fewer, merged) and the micro-batch it was compiled at.
    """
    example_args = spec(example_args)
    if devices > 1 and example_args.reps.shape[0] % (devices * micro):
        raise ValueError(
            f"a chunk of {example_args.reps.shape[0]} lanes does not split into micro-batches of {micro} "
            f"on {devices} devices"
        )
    key = _program_key(experiment, shape, static_data, groups, micro, example_args, devices)
    limit = program_memory_limit(in_flight)

    def fewer_lanes(than: int) -> ChunkProgram:
        return compiled_chunk_fn(
            experiment,
            shape,
            static_data,
            groups,
            _fewer_lanes(than, example_args.reps.shape[0], devices),
            example_args,
            devices,
            in_flight,
            _nested=True,
        )

    known = _TOO_BIG.get(key)
    if known is not None and limit is not None and known > limit:  # found too big before
        return fewer_lanes(micro)
    program = _compiled_program(
        key, experiment, shape, static_data, groups, micro, example_args, devices
    )
    need = memory_overrun(program.fn, limit)
    if need is None:
        return program
    fits = program
    if program.micro > 1:
        _TOO_BIG[key] = need
        _COMPILED.pop(key, None)  # release the program that does not fit
        fits = fewer_lanes(program.micro)
    if not _nested:
        warn(
            f"experiment {experiment.name!r} at {shape}: the chunk program at micro-batch {program.micro} "
            f"needs {format_bytes(need)} of device memory, more than the {format_bytes(limit)} allowed "
            f"({PROGRAM_MEMORY_SHARE_ACCELERATOR:.0%} of the device's, shared by {in_flight} "
            f"chunk(s) in flight); it runs at micro-batch {fits.micro}"
        )
    return fits


def _program_key(
    experiment: Experiment,
    shape: dict,
    static_data: dict,
    groups: list,
    micro: int,
    example_args: ChunkArguments,
    devices: int,
) -> tuple:
    """The in-process cache key of a chunk program (:func:`_compiled_program`)."""
    return _static_key(experiment, shape, static_data, groups, micro, devices) + (
        _signature(example_args),
        repr(compiler_options()),
    )


def _compiled_program(
    key: tuple,
    experiment: Experiment,
    shape: dict,
    static_data: dict,
    groups: list,
    micro: int,
    example_args: ChunkArguments,
    devices: int,
) -> ChunkProgram:
    """:func:`make_chunk_fn` compiled ahead of time, specialised on the string analysis values
    its code reads (:func:`_lowered`), cached in-process under ``key`` (:func:`_program_key`:
    the experiment's :func:`program_identity`, step, analysis groups, micro-batch, devices,
    argument shapes, compiler options): a second run of one of the last two experiments
    compiles nothing (older programs are released, see ``_COMPILED``). On CPU a program with
    a batched LAPACK call can deadlock (:mod:`dpsim.linalg`): it is compiled again with
    unbatched lanes (micro-batch 1, with a warning), and refused with a one-line error if a
    batched call remains."""
    program = _recall(key)
    if program is not None:
        return program
    options = compiler_options()
    lowered, program_groups = _lowered(
        experiment, shape, static_data, groups, micro, example_args, devices
    )
    compiled, compiled_micro = lowered.compile(compiler_options=options), micro
    problem = _lapack_problem(compiled)
    if problem and micro > 1:
        warn(
            f"experiment {experiment.name!r} calls LAPACK on a batch of lanes ({'; '.join(problem)}); "
            f"batched LAPACK deadlocks XLA:CPU, so its lanes run one at a time (slower): "
            f"use dpsim.linalg (e.g. dpsim.linalg.solve) to keep them batched"
        )
        compiled = _lower(
            experiment, shape, static_data, program_groups, 1, example_args, devices=devices
        ).compile(compiler_options=options)
        compiled_micro, problem = 1, _lapack_problem(compiled)
    if problem:
        raise UsageError(
            f"experiment {experiment.name!r}: a replicate calls LAPACK on a batch "
            f"({'; '.join(problem)}), which deadlocks XLA:CPU; use dpsim.linalg"
        )
    program = ChunkProgram(compiled, program_groups, compiled_micro)
    _remember(key, experiment, program)
    return program


def memory_needed(compiled) -> int | None:
    """Bytes a compiled program needs while it runs, by XLA's buffer assignment: arguments +
    outputs + temporaries − the outputs aliased to arguments; None where the backend does not
    say."""
    try:
        stats = compiled.memory_analysis()
    except Exception:  # a backend without memory analysis
        return None
    if stats is None:
        return None
    return (
        stats.argument_size_in_bytes
        + stats.output_size_in_bytes
        + stats.temp_size_in_bytes
        - stats.alias_size_in_bytes
    )


def _fewer_lanes(micro: int, lanes: int, devices: int) -> int:
    """The next micro-batch to try below ``micro``: half of it, or less, so that a chunk of
    ``lanes`` still splits into micro-batches on ``devices`` devices (1 always does)."""
    fewer = micro // 2
    while fewer > 1 and lanes % (devices * fewer):
        fewer -= 1
    return max(fewer, 1)


def memory_overrun(compiled, limit: float | None) -> int | None:
    """The bytes ``compiled`` needs (:func:`memory_needed`) when they exceed ``limit``
    (:func:`~dpsim.engine.execution.batching.program_memory_limit`), else None (no limit: the CPU;
    or the backend does not say)."""
    need = None if limit is None else memory_needed(compiled)
    return need if need is not None and need > limit else None


def clear_cache() -> None:
    """Forget every compiled program of this process (tests; the persistent XLA cache stays)."""
    _COMPILED.clear()
    _TOO_BIG.clear()
    _IDENTITIES.clear()
