"""Declarative experiment definitions and their grids (SimDesign-style: generate → analyse →
summarise over a design grid).

An :class:`Experiment` names its grid axes, their kinds, and pure functions:

* ``truth(key, shape) -> pytree``: the θ*-design of one shape point (drawn once per shape
  point, e.g. θ* fixed per n as in cai's code), or of one replicate when
  ``truth_per_replicate`` (then it is common to every data and analysis point of that
  replicate: e.g. xu's θ* per (m, replicate), shared across L and ε).
* ``generate(key, shape, truth, data) -> pytree``: one replicate's sufficient statistics.
* ``privatise(key, ctx) -> pytree`` (optional): what several methods release in common at
  one analysis point (e.g. the randomised-response counts that xu's classic and debiased
  estimators both use: common random numbers); methods see it as ``ctx.released``.
* ``methods``: name → :class:`Method`, each ``fn(key, ctx) -> {column: scalar}`` returning
  its declared metrics and diagnostics. Each method's key is the analysis point's key
  folded with a stable id of the method's *name*, so adding or removing a method leaves
  every other method's results unchanged.

Axis kinds: *shape axes* change array shapes or static structure (compiled once per value, or
once per bucket of sizes with :class:`Padding`);
*data axes* enter the data (traced, in the data key); *analysis axes* (ε, δ, mechanism, …)
are left out of the data key, so every analysis point of a replicate sees the same data
(common random numbers, DESIGN "Randomness"). Any axis holding a string value is static:
on a data axis it is compiled per value like a shape axis, on an analysis axis its values
are unrolled inside the compiled program. Values derived on the host before tracing (σ of
a discrete Gaussian by bisection, ε from a named scaling scheme) are :class:`Derived`;
arrays built on the host once per cell of a few axes and read by every lane of that cell
(tables of the laws a sampler draws from) are :class:`CellArrays`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from dpsim.engine.definition.axes import VOCABULARY, AxisType, axis_type
from dpsim.engine.definition.figure import FigureSpec, figure_with_methods
from dpsim.engine.definition.ids import stable_id
from dpsim.errors import UsageError, note

KINDS = ("shape", "data", "analysis")
DIAGNOSTIC_TYPES = ("bool", "int", "float")


class Context(NamedTuple):
    """What a method (or the privatise stage) sees at one analysis point of one replicate.

    ``shape``: the shape point (Python values); ``truth``: the θ*-design pytree; ``sample``:
    what ``generate`` returned; ``data`` / ``analysis``: the data and analysis values
    (traced numbers, Python strings for string axes, plus derived values); ``released``:
    what ``privatise`` returned (None without that stage)."""

    shape: dict
    truth: Any
    sample: Any
    data: dict
    analysis: dict
    released: Any = None


@dataclass(frozen=True)
class Method:
    """One estimator (or mechanism + estimator) run at every analysis point.

    Attributes:
        fn: ``(key, ctx: Context) -> {name: scalar}`` returning exactly ``metrics`` and the
            keys of ``diagnostics``. ``key`` is the method's own key (folded from its name).
        metrics: names of the float64 metrics it reports.
        diagnostics: name → "bool" | "int" | "float", e.g. {"converged": "bool",
            "iterations": "int"} for a method with a solver. A method without a solver
            declares no ``converged``: its rows store null there, never a made-up True.
        label: legend label in figures (default: the method's name).
        doc: one line for ``dpsim show``.
        masks_padding: True when ``fn`` honours :class:`Padding` (it reads the real size from
            ``ctx.shape`` and keeps the padding out of every result), so that it may run in a
            padded experiment; an experiment with ``padding`` refuses other methods.
    """

    fn: Callable[[Any, Context], Mapping[str, Any]]
    metrics: tuple[str, ...]
    diagnostics: Mapping[str, str] = field(default_factory=dict)
    label: str = ""
    doc: str = ""
    masks_padding: bool = False

    def __post_init__(self):
        bad = {k: v for k, v in self.diagnostics.items() if v not in DIAGNOSTIC_TYPES}
        if bad:
            raise ValueError(f"diagnostic types must be one of {DIAGNOSTIC_TYPES}, got {bad}")
        clash = set(self.metrics) & set(self.diagnostics)
        if clash:
            raise ValueError(f"names both metric and diagnostic: {sorted(clash)}")

    @property
    def has_solver(self) -> bool:
        return "converged" in self.diagnostics

    @property
    def columns(self) -> dict[str, str]:
        """Every column this method reports, with its type ("float" for metrics)."""
        return {**{m: "float" for m in self.metrics}, **self.diagnostics}


def solver_diagnostics(**extra: str) -> dict[str, str]:
    """{"converged": "bool", "iterations": "int", "result": "int", "grad_norm": "float",
    **extra}: the diagnostics of a method with a solver (a :class:`dpsim.estimators.Fit`'s
    ``solver_diagnostics()``; ``result`` is a :class:`dpsim.results.RESULTS` code, stored as
    its small integer; ``grad_norm`` the solver's ‖∇f‖∞ at θ̂, NaN without a gradient)."""
    return {
        "converged": "bool",
        "iterations": "int",
        "result": "int",
        "grad_norm": "float",
        **extra,
    }


@dataclass(frozen=True)
class Derived:
    """Values computed on the host from grid values, before anything is traced.

    Attributes:
        names: the values produced (each stored as a result column).
        fn: ``point -> {name: number}``; ``point`` holds the axis values of ``level`` and the
            levels above it (shape ⊂ data ⊂ analysis). May raise UsageError naming a bad value.
        level: "shape" (values join the static shape point: Python numbers or strings),
            "data" (traced data values) or "analysis" (traced analysis values, per data
            point: e.g. ε(m, L) from a scaling scheme depends on the data axis L).
        doc: one line for ``dpsim show``.
    """

    names: tuple[str, ...]
    fn: Callable[[dict], Mapping[str, Any]]
    level: str = "analysis"
    doc: str = ""

    def __post_init__(self):
        if self.level not in KINDS:
            raise ValueError(f"Derived level {self.level!r}: choose one of {KINDS}")

    def __call__(self, point: dict) -> dict:
        values = dict(self.fn(point))
        if set(values) != set(self.names):
            raise ValueError(
                f"derived values {sorted(values)} differ from the declared {sorted(self.names)}"
            )
        return values


@dataclass(frozen=True)
class CellArrays:
    """Arrays built on the host once per *cell*, a combination of the values of ``axes``, and
    handed to every lane (and analysis point) of that cell, e.g. the alias tables of the laws
    a sampler draws from (:mod:`dpsim.samplers`), the same for every replicate.

    The traced code finds ``Cell(tables, index)`` under ``name`` in ``ctx.data`` (when every
    one of ``axes`` is a shape or data axis, or a data-level derived value) or else in
    ``ctx.analysis``: ``tables`` holds the arrays of every cell of the compiled program,
    stacked on a first axis and zero-padded to one shape per array, ``index`` the lane's (or
    analysis point's) cell, so that ``tables[k][index, …]`` reads its cell's array without
    copying it per lane. The engine builds each step's cells once, when it plans the run, and
    keeps them for the process's later plans of the same cells (a bounded cache,
    :func:`dpsim.engine.execution.planning.step_cells`; ``fn`` must be a pure function of the
    cell's values); the plan (``--dry-run``) shows their count, bytes and build time.

    Attributes:
        name: the key in ``ctx.data`` or ``ctx.analysis``.
        axes: the axes (or derived values) the arrays depend on: a cell per combination.
        fn: ``{axis: value} -> {array name: np.ndarray}``, the same array names and ranks for
            every cell.
        doc: one line for ``dpsim show``.
    """

    name: str
    axes: tuple[str, ...]
    fn: Callable[[dict], Mapping[str, Any]]
    doc: str = ""


class Cell(NamedTuple):
    """What a lane sees of a :class:`CellArrays`: ``tables`` {array name: [cells, …]} of its
    program and ``index`` (int32 scalar), its own cell among them."""

    tables: Any
    index: Any


@dataclass(frozen=True)
class Padding:
    """Shape points that differ only in the integer size ``axis`` (and in the shape axes
    ``traced`` that vary with it) may share one compiled program (compiling dominates a
    cold run of many sizes). The program is sized for the largest of them, its *capacity*,
    which the experiment's functions read as ``shape[capacity]`` (a Python int: arrays have
    that length); ``shape[axis]`` and ``shape[t]`` for t in ``traced`` are then traced int64
    scalars. The functions must mask the padding so that the real entries' results equal
    the unpadded program's up to float rounding, random draws included (e.g.
    :func:`dpsim.models.pair_bits`, prefix-stable 1-D draws); the runner chooses which sizes
    share a program (:func:`dpsim.engine.execution.planning.size_buckets`), so results never depend
    on that choice beyond rounding.

    Attributes:
        axis: the padded shape axis, e.g. ``"n_items"``.
        traced: further shape axes passed traced, e.g. ``("k",)`` for a top-k size.
        capacity: the name under which the functions find the static size.
    """

    axis: str
    traced: tuple[str, ...] = ()
    capacity: str = "capacity"

    @property
    def traced_axes(self) -> tuple[str, ...]:
        """The padded axis and the other traced shape axes."""
        return (self.axis, *self.traced)


@dataclass(frozen=True)
class Keys:
    """How an experiment's random streams are keyed, where the default (every lane keyed by its
    whole grid point) is not what the study needs (docs/concepts.md, "Randomness").

    Attributes:
        truth_axes: the shape axes θ* depends on (default None: all of them). Its key is then the
            id of those axes' values only, so θ* is common to every shape point that agrees on
            them: e.g. ``("dim",)`` with a shape axis ``n_samples`` gives one θ* per d (per
            replicate with ``truth_per_replicate``) shared by every n. ``truth`` must then
            read no other shape value.
        release_axes: the analysis axes that key the privatised release; analysis points that
            differ only on the other analysis axes (a mechanism, an estimator's rule) share one
            release, drawn once per lane (common random numbers). The engine builds the key
            and passes it to ``privatise`` (:mod:`dpsim.engine.execution.program`); ``generate``
            then gets the other half of the lane's split key. None (default): the release
            is keyed by the whole analysis point, like a method.
        stream_names: renamed axis → the name its values are keyed under (the axis's name
            when its random streams were fixed; names of axes it lacks are ignored). A rename
            then changes no key, so no stored number: e.g. chowdhury's ``{"n_actions": "k"}``.
            ``dpsim run --set OLD=…`` is answered "did you mean NEW". See
            :meth:`Experiment.point_id`. This and ``stream_point`` exist only to keep the
            random streams of committed figures identical across renames.
        stream_point: a grid point → the point its random streams are keyed by, where a
            change of stored values (not only of names) would otherwise change them: e.g. xu
            stores the resolved ``k`` and keys it as the ``k = auto`` and ``top_k`` it stored
            before. None: the point itself. Applied before ``stream_names``.
    """

    truth_axes: tuple[str, ...] | None = None
    release_axes: tuple[str, ...] | None = None
    stream_names: Mapping[str, str] = field(default_factory=dict)
    stream_point: Callable[[dict], dict] | None = None


@dataclass(frozen=True)
class Tuning:
    """How the engine sizes and compiles an experiment's programs; no stored number depends on it
    (padded and unpadded runs store the same rows, :class:`Padding`).

    Attributes:
        lane_bytes: working-set estimate of one replicate at a shape point (chunk sizing;
            with ``padding`` it is called with the capacity as the padded axis's value).
        padding: lets shape points of several sizes share one compiled program
            (:class:`Padding`); None: one program per shape point.
    """

    lane_bytes: Callable[[dict], int] = staticmethod(lambda shape: 64 * 1024)
    padding: Padding | None = None


@dataclass(frozen=True)
class Experiment:
    """A declarative experiment (module docstring).

    Attributes:
        name, title: identifier (begins with the paper's name, e.g. ``cai-fig3``) and title.
        axes: axis → default values (the grid run by default).
        shape_axes, analysis_axes: the kinds of axes (every other axis is a data axis).
        truth, generate, privatise, methods: the pipeline (module docstring).
        reps: default replicates per grid point.
        figure: the paper's figure layout, if any.
        axis_types: the experiment's own axes (not in the shared vocabulary).
        derived: values computed on the host (:class:`Derived`).
        truth_per_replicate: draw ``truth`` per (shape point, replicate), not per shape point.
        resolve_shape: host hook filling rule-based shape values (e.g. k = "auto").
        validate_point: host hook refusing a whole grid point (UsageError).
        description: what it reproduces (the paper's sections), shown by ``dpsim show``.
        cell_arrays: arrays built on the host once per cell of a few axes (:class:`CellArrays`).
        keys: how the random streams are keyed, where not by the whole grid point (:class:`Keys`).
        tuning: how the engine sizes and compiles the programs (:class:`Tuning`).
        extends: the experiment this one adds methods to (:meth:`with_methods`; "" for
            none), whose checks :func:`dpsim.api.checks_for` judges on this one.
    """

    name: str
    title: str
    axes: Mapping[str, Sequence]
    shape_axes: tuple[str, ...]
    analysis_axes: tuple[str, ...]
    truth: Callable[..., Any]
    generate: Callable[..., Any]
    methods: Mapping[str, Method]
    reps: int
    figure: FigureSpec | None = None
    privatise: Callable[..., Any] | None = None
    axis_types: Mapping[str, AxisType] = field(default_factory=dict)
    derived: tuple[Derived, ...] = ()
    truth_per_replicate: bool = False
    resolve_shape: Callable[[dict], dict] = staticmethod(lambda shape: shape)
    validate_point: Callable[[dict], None] = staticmethod(lambda point: None)
    description: str = ""
    extends: str = ""
    cell_arrays: tuple[CellArrays, ...] = ()
    keys: Keys = Keys()
    tuning: Tuning = Tuning()

    def __post_init__(self):
        redefined = sorted(set(self.axis_types) & set(VOCABULARY))
        if redefined:
            raise ValueError(
                f"experiment {self.name!r} redefines shared axes {redefined}; "
                "the vocabulary's axes keep one meaning"
            )
        for axis in self.axes:
            axis_type(axis, self.axis_types)  # every axis must have a type
        unknown = [a for a in (*self.shape_axes, *self.analysis_axes) if a not in self.axes]
        if unknown:
            raise ValueError(
                f"experiment {self.name!r}: kind given for axes {unknown} that it does not have"
            )
        if not self.methods:
            raise ValueError(f"experiment {self.name!r} has no methods")
        clashes = sorted(old for old in self.keys.stream_names.values() if old in self.axes)
        if clashes:
            raise ValueError(
                f"experiment {self.name!r}: stream_names key renamed axes under {clashes}, "
                f"which are axes of its own"
            )
        if self.keys.truth_axes is not None and not set(self.keys.truth_axes) <= set(
            self.shape_axes
        ):
            raise ValueError(
                f"experiment {self.name!r}: truth_axes {sorted(set(self.keys.truth_axes) - set(self.shape_axes))} "
                f"are not shape axes"
            )
        if self.keys.release_axes is not None:
            if self.privatise is None:
                raise ValueError(
                    f"experiment {self.name!r} declares release_axes but has no privatise stage"
                )
            outside = [a for a in self.keys.release_axes if a not in self.analysis_axes]
            if outside:
                raise ValueError(
                    f"experiment {self.name!r}: release_axes {outside} are not analysis axes"
                )
        for cells in self.cell_arrays:
            unknown = [
                a for a in cells.axes if a not in self.axes and a not in self.derived_names()
            ]
            if unknown or cells.name in self.axes or cells.name in self.derived_names():
                raise ValueError(
                    f"experiment {self.name!r}: cell arrays {cells.name!r} "
                    + (
                        f"depend on {unknown}, which are not axes or derived values"
                        if unknown
                        else "are named like an axis or derived value"
                    )
                )
        if self.tuning.padding is not None:
            unmasked = [name for name, method in self.methods.items() if not method.masks_padding]
            if unmasked:
                raise ValueError(
                    f"experiment {self.name!r} pads {self.tuning.padding.axis} but its methods {unmasked} "
                    f"do not mask padding (Method.masks_padding); give it tuning=Tuning(padding=None)"
                )
            outside = [a for a in self.tuning.padding.traced_axes if a not in self.shape_axes]
            if outside:
                raise ValueError(
                    f"experiment {self.name!r}: padding names {outside}, which are not shape axes"
                )
            if self.tuning.padding.capacity in self.axes:
                raise ValueError(
                    f"experiment {self.name!r}: padding capacity name {self.tuning.padding.capacity!r} "
                    f"is one of its axes"
                )

    def with_methods(
        self,
        methods: Mapping[str, Method] | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        **more: Method,
    ) -> "Experiment":
        """This experiment with further methods run beside its own: the same grid, data, θ*,
        release and keys, so its own methods' rows are those of a run without the new ones
        (each method's key is folded from its name alone: common random numbers), and the
        new methods see exactly the data the paper's methods see.

        Args:
            methods, more: name → :class:`Method` (a mapping, keywords, or both).
            name: the new experiment's name (default ``"<name>+<method>+…"``, e.g.
                ``cai-fig3+mine``: its runs and checks are apart from the paper's).
            title: its title (default: this one's, naming the added methods).
        Returns:
            A new :class:`Experiment`. Its figure draws the new methods too: as curves where
            the figure's curves are methods, else as panels beside the panels of a method
            of this experiment whose metric the new method reports (titled with its label).
            With :class:`Padding`, a new method that does not mask padding
            (``Method.masks_padding``) runs the experiment unpadded (one program per size,
            with a note): the paper's rows then come from the same draws but equal its own
            run's only up to float rounding; a method that masks padding keeps them bit for bit.
        Raises:
            UsageError: no method, a value that is not a Method, or a name this experiment
            already has.
        """
        added = {**dict(methods or {}), **more}
        if not added:
            raise UsageError(f"with_methods: name at least one method to add to {self.name!r}")
        for method_name, method in added.items():
            if not isinstance(method, Method):
                raise UsageError(f"with_methods: {method_name}={method!r} is not a dpsim Method")
            if method_name in self.methods:
                raise UsageError(
                    f"with_methods: {self.name!r} already has a method {method_name!r}; "
                    f"choose another name (its methods: {', '.join(self.methods)})"
                )
        import dataclasses

        unmasked = [n for n, m in added.items() if not m.masks_padding]
        padding = None if unmasked else self.tuning.padding
        if unmasked and self.tuning.padding is not None:
            note(
                f"{self.name} with {', '.join(unmasked)}: runs unpadded, one program per {self.tuning.padding.axis} value, "
                f"since {', '.join(unmasked)} does not mask padding (Method.masks_padding); "
                f"{', '.join(self.methods)} rows then equal {self.name}'s up to float rounding"
            )
        return dataclasses.replace(
            self,
            name=name or "+".join([self.name, *added]),
            title=title or f"{self.title} (with {', '.join(added)})",
            methods={**self.methods, **added},
            tuning=dataclasses.replace(self.tuning, padding=padding),
            extends=self.extends or self.name,
            figure=None
            if self.figure is None
            else figure_with_methods(self.figure, self.methods, added),
        )

    def point_id(self, point: Mapping[str, Any]) -> int:
        """The stable id keying a (partial) grid point: :func:`stable_id` of it as
        ``stream_point`` maps it, each renamed axis under its ``stream_names`` name, so a
        rename keeps every random stream."""
        keys = self.keys
        keyed = keys.stream_point(dict(point)) if keys.stream_point is not None else point
        return stable_id({keys.stream_names.get(a, a): v for a, v in keyed.items()})

    def truth_point(self, shape: Mapping) -> dict:
        """The part of a shape point that keys θ* (all of it unless ``truth_axes`` is set)."""
        truth_axes = self.keys.truth_axes
        return dict(shape) if truth_axes is None else {a: shape[a] for a in truth_axes}

    @property
    def data_axes(self) -> tuple[str, ...]:
        return tuple(
            a for a in self.axes if a not in self.shape_axes and a not in self.analysis_axes
        )

    def kind(self, axis: str) -> str:
        return (
            "shape"
            if axis in self.shape_axes
            else "analysis"
            if axis in self.analysis_axes
            else "data"
        )

    def derived_names(self, level: str | None = None) -> tuple[str, ...]:
        return tuple(n for d in self.derived if level in (None, d.level) for n in d.names)

    def cell_level(self, cells: CellArrays) -> str:
        """ "analysis" when a :class:`CellArrays` depends on an analysis axis or analysis-level
        derived value (one cell per analysis point), else "data" (one per lane)."""
        analysis = set(self.analysis_axes) | set(self.derived_names("analysis"))
        return "analysis" if analysis & set(cells.axes) else "data"
