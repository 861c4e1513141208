"""The expanded grid of one run: ``--set`` overrides applied, every value validated, host-side derived
values computed, and the shape, data and analysis points listed (:func:`expand_grid`)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Mapping, Sequence

from dpsim.engine.definition.axes import axis_type
from dpsim.engine.definition.experiment import Experiment
from dpsim.engine.definition.ids import canonical
from dpsim.errors import UsageError, call_stage


@dataclass(frozen=True)
class Grid:
    """The expanded grid of one run.

    ``shapes``: resolved shape points (with shape-level derived values); ``data_points`` and
    ``analysis_points``: the axis values of each level; ``data_derived[s][d]`` and
    ``analysis_derived[s][d][a]``: the derived values at each combination; ``static_data``
    and ``static_analysis``: the string-valued (static) data and analysis axes."""

    experiment: Experiment
    axes: dict[str, list]
    shapes: list[dict]
    data_points: list[dict]
    analysis_points: list[dict]
    data_derived: list[list[dict]]
    analysis_derived: list[list[list[dict]]]
    static_data: tuple[str, ...]
    static_analysis: tuple[str, ...]


def _product(names: Sequence[str], axes: Mapping[str, Sequence]) -> list[dict]:
    return [dict(zip(names, combo)) for combo in itertools.product(*(axes[n] for n in names))]


def _derive(experiment: Experiment, level: str, point: dict) -> dict:
    out = {}
    for d in experiment.derived:
        if d.level == level:
            at = {**point, **out}
            out.update(
                call_stage(experiment.name, f"derived {', '.join(map(repr, d.names))}", at, d, at)
            )
    return out


def expand_grid(experiment: Experiment, overrides: Mapping[str, Sequence] | None = None) -> Grid:
    """Apply ``--set`` overrides, validate every value, derive the host values, and expand
    the grid. Raises :class:`UsageError` (naming the bad axis or value) before anything is
    written."""
    overrides = dict(overrides or {})
    for axis in overrides:
        if axis not in experiment.axes:
            import difflib

            renamed = [new for new, old in experiment.keys.stream_names.items() if old == axis]
            close = renamed or difflib.get_close_matches(
                axis, list(experiment.axes), n=1, cutoff=0.6
            )
            hint = (
                f" (did you mean {close[0]!r}{', its new name' if renamed else ''}?)"
                if close
                else ""
            )
            raise UsageError(
                f"unknown axis {axis!r}{hint} for experiment {experiment.name!r}; "
                f"axes are {', '.join(experiment.axes)}"
            )
    axes = {}
    for axis, default in experiment.axes.items():
        values = overrides.get(axis, default)
        checked = [axis_type(axis, experiment.axis_types)(axis, v) for v in values]
        if len(set(map(canonical, checked))) != len(checked):
            raise UsageError(f"duplicate values in {axis}={','.join(map(str, values))}")
        axes[axis] = checked
    static = {a for a, vals in axes.items() if any(isinstance(v, str) for v in vals)}
    shapes = []
    for raw in _product(experiment.shape_axes, axes):
        shape = call_stage(experiment.name, "resolve_shape", raw, experiment.resolve_shape, raw)
        shapes.append({**shape, **_derive(experiment, "shape", shape)})
    data_points = _product(experiment.data_axes, axes)
    analysis_points = _product(experiment.analysis_axes, axes)
    data_derived, analysis_derived = [], []
    for shape in shapes:
        per_data, per_analysis = [], []
        for data in data_points:
            d_values = _derive(experiment, "data", {**shape, **data})
            per_data.append(d_values)
            per_analysis.append(
                [
                    _derive(experiment, "analysis", {**shape, **data, **d_values, **analysis})
                    for analysis in analysis_points
                ]
            )
            for analysis, a_values in zip(analysis_points, per_analysis[-1]):
                point = {**shape, **data, **d_values, **analysis, **a_values}
                call_stage(
                    experiment.name, "validate_point", point, experiment.validate_point, point
                )
        data_derived.append(per_data)
        analysis_derived.append(per_analysis)
    return Grid(
        experiment,
        axes,
        shapes,
        data_points,
        analysis_points,
        data_derived,
        analysis_derived,
        tuple(a for a in experiment.data_axes if a in static),
        tuple(a for a in experiment.analysis_axes if a in static),
    )
