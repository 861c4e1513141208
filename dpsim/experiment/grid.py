"""Declarative experiment definitions and their grids (SimDesign-style).

An :class:`Experiment` names its grid axes (DESIGN vocabulary) and three pure functions:

* ``truth(key, shape) -> pytree``: the θ*-design for one shape point (drawn once per
  shape point, e.g. θ* fixed per n as in cai's code); may be ``None``-returning.
* ``generate(key, shape, truth, data) -> pytree``: one replicate's sufficient statistics.
* ``analyse(key, shape, truth, sample, data, analysis) -> {method: {metric: scalar}}``:
  privatise, estimate and score one replicate at one analysis point.

``shape`` is a dict of Python values of the *shape axes* (they change array shapes or
static structure: compiled once each). ``data`` and ``analysis`` are dicts of traced
scalars of the *data axes* and the *analysis axes*; the analysis axes (ε, δ, c0, …) are
left out of the data key, so every analysis point of a replicate sees the same data
(common random numbers, DESIGN "Randomness").
"""
from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from dpsim.experiment.axes import validate_value
from dpsim.experiment.errors import UsageError


@dataclass(frozen=True)
class Panel:
    """One panel of a figure: the mean of ``metric`` for ``method`` against the x axis.

    ``method=None`` keeps every method (use it with ``FigureSpec.curve = "method"`` for one
    curve per method, as in cai Figs 4 and 8); ``where`` restricts this panel's rows; ``x``,
    ``xlabel`` and ``logx`` override the figure's x axis for this panel (cai Fig 4 has an
    n panel and an ε panel).
    """

    metric: str
    method: str | None
    ylabel: str
    where: Mapping[str, Sequence] = field(default_factory=dict)
    title: str = ""
    x: str | None = None
    xlabel: str | None = None
    logx: bool | None = None


@dataclass(frozen=True)
class FigureSpec:
    """A figure in the paper's layout: panels × (x axis, one curve per value of ``curve``,
    a grid axis or ``"method"``).

    ``where`` restricts the plotted grid (e.g. the paper plots a subset of the simulated p);
    labels use the paper's own symbols.
    """

    x: str
    curve: str
    xlabel: str
    curve_label: str
    panels: tuple[Panel, ...]
    where: Mapping[str, Sequence] = field(default_factory=dict)
    logx: bool = False
    title: str = ""
    curve_labels: Mapping[str, str] = field(default_factory=dict)  # method → legend label


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    axes: Mapping[str, Sequence]
    shape_axes: tuple[str, ...]
    analysis_axes: tuple[str, ...]
    truth: Callable[..., Any]
    generate: Callable[..., Any]
    analyse: Callable[..., Any]
    reps: int
    figure: FigureSpec | None = None
    resolve_shape: Callable[[dict], dict] = staticmethod(lambda shape: shape)
    validate_point: Callable[[dict], None] = staticmethod(lambda point: None)
    lane_bytes: Callable[[dict], int] = staticmethod(lambda shape: 64 * 1024)
    description: str = ""

    @property
    def data_axes(self) -> tuple[str, ...]:
        return tuple(a for a in self.axes if a not in self.shape_axes and a not in self.analysis_axes)


@dataclass(frozen=True)
class Grid:
    """The expanded grid of one run: lists of shape / data / analysis points."""

    experiment: Experiment
    axes: dict[str, list]
    shapes: list[dict]
    data_points: list[dict]
    analysis_points: list[dict]


def stable_id(point: Mapping[str, Any]) -> int:
    """A stable 63-bit integer for a dict of axis values (independent of grid order).

    Keys are derived from these ids, never from a position in a batch, so results do not
    depend on the grid's extent, chunking or run order.
    """
    text = ";".join(f"{k}={_canonical(point[k])}" for k in sorted(point))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") & 0x7FFFFFFFFFFFFFFF


def _canonical(value) -> str:
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        return repr(int(value))
    return repr(value)


def _product(names: Sequence[str], axes: Mapping[str, Sequence]) -> list[dict]:
    return [dict(zip(names, combo)) for combo in itertools.product(*(axes[n] for n in names))]


def expand_grid(experiment: Experiment, overrides: Mapping[str, Sequence] | None = None) -> Grid:
    """Apply ``--set`` overrides, validate every value, and expand the grid.

    Raises :class:`UsageError` (naming the bad axis or value) before anything is written.
    """
    overrides = dict(overrides or {})
    for axis in overrides:
        if axis not in experiment.axes:
            raise UsageError(f"unknown axis {axis!r} for experiment {experiment.name!r}; "
                             f"axes are {', '.join(experiment.axes)}")
    axes = {}
    for axis, default in experiment.axes.items():
        values = overrides.get(axis, default)
        checked = [validate_value(axis, v) for v in values]
        if len(set(map(_canonical, checked))) != len(checked):
            raise UsageError(f"duplicate values in {axis}={','.join(map(str, values))}")
        axes[axis] = checked
    shapes = [experiment.resolve_shape(s) for s in _product(experiment.shape_axes, axes)]
    data_points = _product(experiment.data_axes, axes)
    analysis_points = _product(experiment.analysis_axes, axes)
    for shape in shapes:
        for data in data_points:
            for analysis in analysis_points:
                experiment.validate_point({**shape, **data, **analysis})
    return Grid(experiment, axes, shapes, data_points, analysis_points)
