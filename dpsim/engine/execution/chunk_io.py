"""A chunk's way through its compiled program: the arguments in, the Arrow rows out.

:func:`chunk_arguments` turns a planned chunk (:class:`~dpsim.engine.execution.planning.Chunk`)
into the program's :class:`~dpsim.engine.execution.program.ChunkArguments` (host arrays, the lanes
padded to the step's chunk size); :func:`chunk_rows` flattens the program's output
{method: {column: [lanes, Q]}} into the tidy rows of one Parquet part, whose schema is
:func:`method_columns` after the grid and derived values.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from dpsim.errors import UsageError
from dpsim.engine.storage import store
from dpsim.engine.definition.experiment import Experiment
from dpsim.engine.definition.grid import Grid
from dpsim.engine.execution.planning import Chunk, Step
from dpsim.engine.execution.program import (
    ChunkArguments,
    id_words,
    release_words,
    traced_shape_values,
    truth_words,
)


def _numbers(name: str, values) -> np.ndarray:
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise UsageError(
            f"value of {name!r} must be a number to be traced, got {values[0]!r}"
        ) from None


def _numeric_data_names(grid: Grid) -> list[str]:
    exp = grid.experiment
    return [a for a in exp.data_axes if a not in grid.static_data] + list(exp.derived_names("data"))


def _numeric_analysis_names(grid: Grid) -> list[str]:
    exp = grid.experiment
    return [a for a in exp.analysis_axes if a not in grid.static_analysis] + list(
        exp.derived_names("analysis")
    )


def chunk_arguments(
    chunk: Chunk, grid: Grid, step: Step, seed: np.uint32, a_words: np.ndarray
) -> ChunkArguments:
    """The program's arguments for one chunk (all host arrays), its lanes padded to the
    step's size by repeating the last lane (padding rows are dropped): ``seed`` and the
    analysis points' id words ``a_words`` [Q, 2] (the same for every chunk of a run), the
    shape point's θ*-key words and traced shape values, and per lane the data id words,
    replicate, numeric data values and numeric analysis values (derived analysis values may
    depend on the data point), the analysis points' release id words when the
    experiment declares ``release_axes``, and the step's cell arrays with each lane's (and
    analysis point's) cell index when it declares ``cell_arrays``."""
    experiment, s = grid.experiment, chunk.s
    shape = grid.shapes[s]
    padded = list(chunk.lanes) + [chunk.lanes[-1]] * (step.size - len(chunk.lanes))
    data_words = id_words([lane.data_id for lane in padded])
    reps = np.asarray([lane.rep for lane in padded], dtype=np.uint32)
    data_vals = {}
    for name in _numeric_data_names(grid):
        source = [
            grid.data_points[lane.d].get(name, None)
            if name in grid.data_points[lane.d]
            else grid.data_derived[s][lane.d][name]
            for lane in padded
        ]
        data_vals[name] = _numbers(name, source)
    a_vals = {}
    for name in _numeric_analysis_names(grid):
        rows = [
            [
                point[name] if name in point else grid.analysis_derived[s][lane.d][a][name]
                for a, point in enumerate(grid.analysis_points)
            ]
            for lane in padded
        ]
        a_vals[name] = _numbers(name, rows)
    cells, cell_index = None, None
    if step.cells is not None:
        cells, cell_index, n_q = step.cells.tables, {}, len(grid.analysis_points)
        for name, where in step.cells.index.items():
            if (
                experiment.cell_level(next(c for c in experiment.cell_arrays if c.name == name))
                == "data"
            ):
                cell_index[name] = np.asarray([where[(s, lane.d)] for lane in padded], np.int32)
            else:
                cell_index[name] = np.asarray(
                    [[where[(s, lane.d, a)] for a in range(n_q)] for lane in padded], np.int32
                )
    return ChunkArguments(
        seed=seed,
        shape_words=truth_words(experiment, shape),
        shape_vals=traced_shape_values(experiment, shape),
        data_words=data_words,
        reps=reps,
        data_vals=data_vals,
        a_words=a_words,
        a_vals=a_vals,
        release_words=release_words(experiment, grid.analysis_points),
        cells=cells,
        cell_index=cell_index,
    )


def _column(values) -> pa.Array:
    values = np.asarray(values)
    if values.dtype == object:
        return pa.array(values, type=pa.large_string())
    return pa.array(values)


_NUMPY = {"float": np.float64, "bool": np.bool_, "int": np.int64}


def method_columns(experiment: Experiment) -> dict[str, str]:
    """Every method column with its declared type, in order of first declaration."""
    columns: dict = {}
    for method in experiment.methods.values():
        for name, kind in method.columns.items():
            if columns.setdefault(name, kind) != kind:
                raise UsageError(
                    f"experiment {experiment.name!r}: column {name!r} is declared "
                    f"{columns[name]} by one method and {kind} by another"
                )
    return columns


def chunk_rows(output, chunk: Chunk, grid: Grid, order: np.ndarray, done: set) -> pa.Table:
    """Flatten {method: {column: [B, Q]}} into tidy rows (one per lane × analysis point ×
    method), leaving out the (point, rep) pairs in ``done`` (a re-run lane may hold stored
    points). ``order[q]`` is the analysis index of output position q.

    Built as an Arrow table straight from NumPy columns (no pandas on the hot path: with
    small lanes a chunk's rows are a large share of its host time, ``benchmarks/cai.py``
    section Q). Columns: the grid values and derived
    values, rep, point, method, then every method column; a float column a method does not
    report is NaN there, a bool or int column is null (a method without a solver has a null
    ``converged``, never a made-up True)."""
    experiment, lanes, s = grid.experiment, chunk.lanes, chunk.s
    n_lanes, n_q = len(lanes), len(order)
    size = n_lanes * n_q
    d_index = np.repeat(np.fromiter((lane.d for lane in lanes), np.int64, n_lanes), n_q)
    a_index = np.tile(order, n_lanes)
    base = {
        k: np.full(size, v, dtype=object if isinstance(v, str) else None)
        for k, v in grid.shapes[s].items()
        if np.ndim(v) == 0
    }
    for axis in grid.experiment.data_axes:
        base[axis] = np.asarray(
            [d[axis] for d in grid.data_points], dtype=object if axis in grid.static_data else None
        )[d_index]
    for name in experiment.derived_names("data"):
        values = np.asarray([grid.data_derived[s][d][name] for d in range(len(grid.data_points))])
        if values.ndim == 1:  # scalar derived values become columns; arrays are only traced inputs
            base[name] = values[d_index]
    for axis in experiment.analysis_axes:
        base[axis] = np.asarray(
            [a[axis] for a in grid.analysis_points],
            dtype=object if axis in grid.static_analysis else None,
        )[a_index]
    for name in experiment.derived_names("analysis"):
        table = np.asarray(
            [
                [grid.analysis_derived[s][d][a][name] for a in range(len(grid.analysis_points))]
                for d in range(len(grid.data_points))
            ]
        )
        if table.ndim == 2:
            base[name] = table[d_index, a_index]
    base["rep"] = np.repeat(np.fromiter((lane.rep for lane in lanes), np.int64, n_lanes), n_q)
    base["point"] = np.asarray(
        [[lane.points[a] for a in order] for lane in lanes], dtype=np.int64
    ).reshape(-1)
    keep = (
        np.ones(size, dtype=bool)
        if not done
        else np.fromiter(
            ((p, r) not in done for p, r in zip(base["point"].tolist(), base["rep"].tolist())),
            bool,
            size,
        )
    )
    n_keep = int(keep.sum())
    methods = list(experiment.methods)
    columns = {k: _column(np.tile(v[keep], len(methods))) for k, v in base.items()}
    columns["method"] = _column(np.repeat(np.asarray(methods, dtype=object), n_keep))
    for name, kind in method_columns(experiment).items():
        parts, missing = [], []
        for method in methods:
            if name in output[method]:
                parts.append(
                    np.asarray(output[method][name])[:n_lanes]
                    .reshape(-1)[keep]
                    .astype(_NUMPY[kind])
                )
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
    return store.mark_columns(
        pa.table(columns), method_columns(experiment), experiment.derived_names()
    )
