"""Figures drawn from the data: an experiment's :class:`FigureSpec` applied to its results table.

The layout follows the papers (one panel per (metric, method), the x axis a grid axis, one
curve per value of another axis or per method), and everything else comes from the table:

* every value present on the x axis and every curve is drawn; ε = ∞ on a numeric x axis
  is drawn one step beyond the largest finite value, with the tick label ∞; every grid value
  on the x axis is labelled, crowded labels alternating between two rows;
* an axis that the figure does not map (x, curve, a panel's ``where``) and that has several
  values in the table is never pooled: the figure is split, one per value (file names and
  titles say which);
* a panel without data is an error, not an empty picture;
* the title is the paper's figure name, the subtitle the grid actually run (every axis with
  one value, in the paper's symbols, or in words or a formula where the figure declares one
  for a value: ``FigureSpec.value_labels``), the footer the replicate count and what the
  bands are (mean ± 95% CI);
* legends are in numeric order with ∞ last; points where fits did not converge are marked
  ×, and the legend says how many fits that is;
* beside each image, the plotted points (means, intervals, counts) as a CSV.

``dpsim plot`` may change what is drawn without changing the experiment: :func:`parse_where`
and :func:`filter_rows` keep some rows (``--where``), :func:`metric_spec` draws one metric
instead of the declared panels (``--metric``), :func:`with_logy` overrides log y (``--logy``).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from dpsim.errors import UsageError, note  # noqa: E402
from dpsim.engine.storage import store  # noqa: E402
from dpsim.engine.definition.axes import parse_value  # noqa: E402
from dpsim.engine.definition.figure import FigureSpec, Panel  # noqa: E402
from dpsim.engine.presentation.summary import grid_columns, select, summarise  # noqa: E402

PNG_DPI = 130  # the PNG's resolution (dots per inch)
PANEL_SIZE = (5.2, 3.8)  # inches per panel column and row, its titles and labels included,
MARGINS = 0.85  # less this in all (the outer margins the rows share)
TITLE_BAND = (0.45, 0.7)  # inches above the panels: title only, title and subtitle
LEGEND_BAND = 0.75  # inches below the panels for the legend and the footer
FOOTER_BAND = 0.3  # inches below the panels for the footer alone (legend in a spare slot)
TITLE_SIZE = 12  # points
TITLE_LINE = 0.22  # inches more above the panels per further line of the title
SUBTITLE_SIZE = 9  # points
SUBTITLE_LINE = 0.17  # inches more above the panels per further line of the subtitle
LEGEND_ROW = 0.25  # inches more below the panels per further row of the legend


def format_value(value) -> str:
    """A grid value as a figure writes it: ∞, integers without ".0", 3 significant digits.

    Args:
        value: a number or a name.
    Returns:
        The text.
    """
    if isinstance(value, (float, np.floating)) and math.isinf(value):
        return "∞"
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{value:.3g}"
    return str(value)


def sort_key(value):
    """Numeric order with ∞ last, names after numbers.

    Args:
        value: a number or a name.
    Returns:
        A key for ``sorted``.
    """
    if isinstance(value, str):
        return (2, 0.0, value)
    value = float(value)
    return (1, 0.0, "") if math.isinf(value) else (0, value, "")


def value_order(spec: FigureSpec, axis: str):
    """The sort key of ``axis``'s values in a figure: :func:`sort_key`, except that names with
    a declared label come after the other names, in the order the labels are declared (e.g.
    xu's schemes as the paper numbers them; nguyen's p₀ = 0.2, …, 0.5, then "proposed").

    Args:
        spec: the figure (its ``value_labels``).
        axis: a grid axis.
    Returns:
        A key function for ``sorted``.
    """
    declared = [v for v in spec.value_labels.get(axis, {}) if isinstance(v, str)]

    def key(value):
        if isinstance(value, str):
            return (2, 1 + declared.index(value), "") if value in declared else (2, 0, value)
        return sort_key(value)

    return key


def symbol(spec: FigureSpec, axis: str) -> str:
    """The paper's symbol of an axis.

    Args:
        spec: the figure (its ``symbols``).
        axis: a grid axis.
    Returns:
        ``spec.symbols[axis]``, else the axis name.
    """
    return spec.symbols.get(axis, axis)


def value_label(spec: FigureSpec, axis: str, value) -> str | None:
    """The figure's words or formula for one value of an axis.

    Args:
        spec: the figure (its ``value_labels``).
        axis: a grid axis.
        value: one of its values.
    Returns:
        The declared label, or None when there is none.
    """
    labels = spec.value_labels.get(axis, {})
    try:
        return labels.get(value)
    except TypeError:  # an unhashable value has no label
        return None


def phrase(spec: FigureSpec, axis: str, value) -> str:
    """How a figure writes ``axis = value`` in titles and the subtitle.

    Args:
        spec: the figure (its ``symbols`` and ``value_labels``).
        axis: a grid axis.
        value: one of its values.
    Returns:
        The value's label when the figure declares one (e.g. "debiased RR"), else
        "symbol = value" (e.g. "$m$ = 20").
    """
    label = value_label(spec, axis, value)
    return label if label is not None else f"{symbol(spec, axis)} = {format_value(value)}"


def curve_name(spec: FigureSpec, curve) -> str:
    """The legend label of one curve.

    Args:
        spec: the figure.
        curve: a method name (``spec.curve == "method"``) or a value of the curve axis.
    Returns:
        The method's label, the value's label, or "curve_label = value".
    """
    if spec.curve == "method":
        return spec.curve_labels.get(curve, curve)
    label = value_label(spec, spec.curve, curve)
    return label if label is not None else f"{spec.curve_label} = {format_value(curve)}"


@dataclass
class Drawn:
    """One drawn figure: the matplotlib figure, its plotted points, and the values of the
    axes it was split on ({} when not split)."""

    figure: plt.Figure
    points: pd.DataFrame
    split: dict


# ---------------------------------------------------------------------------------------
# What `dpsim plot` may change: rows (--where), the metric (--metric), log y (--logy)
# ---------------------------------------------------------------------------------------
def parse_where(options: Sequence[str]) -> dict[str, list]:
    """Parse ``--where AXIS=V1,V2`` options (numbers, inf, or names).

    Args:
        options: the option texts, one per ``--where``.
    Returns:
        axis → the values asked for.
    Raises:
        UsageError: malformed text, an empty value, or an axis given twice.
    """
    where: dict[str, list] = {}
    for option in options:
        axis, _, text = option.partition("=")
        axis = axis.strip()
        if not axis or not text.strip() or any(not v.strip() for v in text.split(",")):
            raise UsageError(f"malformed --where {option!r}: expected AXIS=V1,V2,...")
        if axis in where:
            raise UsageError(f"--where {axis} given twice")
        where[axis] = [parse_value(v) for v in text.split(",")]
    return where


def _held(present, wanted):
    """The value of ``present`` (a column's values) that ``wanted`` names, or None: numbers
    compared with a relative tolerance, names (and numbers stored as names) as text."""
    for held in present:
        if isinstance(held, str) or isinstance(wanted, str):
            if str(held) in (str(wanted), format_value(wanted)):
                return held
        elif float(held) == float(wanted) or math.isclose(float(held), float(wanted), rel_tol=1e-9):
            return held
    return None


def filter_rows(table: pd.DataFrame, where: Mapping[str, Sequence]) -> pd.DataFrame:
    """The rows whose axes take the listed values (``dpsim plot --where``).

    Args:
        table: the results rows.
        where: axis (a grid axis or ``method``) → the values to keep.
    Returns:
        The rows kept (the table's ``attrs`` with them).
    Raises:
        UsageError: naming an axis the results do not have or a value the run does not hold.
    """
    axes = [*grid_columns(table), "method"]
    kept = {}
    for axis, wanted in where.items():
        if axis not in axes or axis not in table:
            raise UsageError(
                f"--where {axis}: this run has no axis {axis!r} (axes: {', '.join(axes)})"
            )
        present = sorted(table[axis].dropna().unique(), key=sort_key)
        held = [_held(present, v) for v in wanted]
        for value, match in zip(wanted, held):
            if match is None:
                raise UsageError(
                    f"--where {axis}={format_value(value)}: the run holds no such value "
                    f"({axis}: {', '.join(format_value(v) for v in present)})"
                )
        kept[axis] = held
    rows = select(table, kept)
    rows.attrs = dict(table.attrs)
    return rows


def metrics_of(table: pd.DataFrame) -> list[str]:
    """What ``--metric`` may name.

    Args:
        table: the results rows.
    Returns:
        The numeric method outputs (metrics and numeric diagnostics) with a value.
    """
    return [
        c
        for c in table.attrs.get("method_columns", ())
        if c in table and table[c].dtype.kind in "fiu" and table[c].notna().any()
    ]


def _repeated_axes(table: pd.DataFrame, spec: FigureSpec) -> tuple[str, ...]:
    """The axes the declared panels slice or repeat over (``each``, ``where``, ``at``), in
    order, without the x, curve and pooled axes: a one-metric figure repeats its panels
    over them so that it is split no more than the declared one."""
    taken = {spec.x, spec.curve, *spec.pool}
    axes = (a for p in spec.panels for a in (*p.each, *p.where, *p.at))
    return tuple(dict.fromkeys(a for a in axes if a in table and a not in taken))


def metric_spec(table: pd.DataFrame, spec: FigureSpec, metric: str) -> FigureSpec:
    """``spec`` drawing one metric instead of its declared panels (``dpsim plot --metric``):
    one panel per method that reports it (one panel in all when the curves are the
    methods), repeated over the axes the declared panels slice (:func:`_repeated_axes`);
    the y label is a declared panel's for that metric, else the metric's name.

    Args:
        table: the results rows.
        spec: the declared figure (x axis, curves, symbols are kept).
        metric: a metric of the run (:func:`metrics_of`).
    Returns:
        The figure to draw.
    Raises:
        UsageError: naming a metric the run does not have.
    """
    metrics = metrics_of(table)
    if metric not in metrics:
        raise UsageError(
            f"--metric {metric}: this run has no metric {metric!r} (metrics: {', '.join(metrics)})"
        )
    declared = [p for p in spec.panels if p.metric == metric]
    ylabel = declared[0].ylabel if declared else metric
    each = _repeated_axes(table, spec)
    if spec.curve == "method":
        return dataclasses.replace(
            spec, panels=(Panel(metric, None, ylabel, each=each),), columns=None
        )
    reporting = set(table.loc[table[metric].notna(), "method"])
    methods = [m for m in spec.curve_labels if m in reporting] + sorted(
        reporting - set(spec.curve_labels)
    )
    panels = tuple(
        Panel(
            metric,
            m,
            ylabel,
            each=each,
            title=spec.curve_labels.get(m, m) if len(methods) > 1 else "",
        )
        for m in methods
    )
    return dataclasses.replace(spec, panels=panels, columns=None)


def with_logy(spec: FigureSpec, logy: bool | None) -> FigureSpec:
    """Override the y scale of every panel (``dpsim plot --logy`` / ``--no-logy``).

    Args:
        spec: the figure.
        logy: True for a log y axis on every panel, False for none, None for as declared.
    Returns:
        The figure to draw.
    """
    if logy is None:
        return spec
    return dataclasses.replace(
        spec, logy=logy, panels=tuple(dataclasses.replace(p, logy=None) for p in spec.panels)
    )


# ---------------------------------------------------------------------------------------
# Which figures, which panels
# ---------------------------------------------------------------------------------------
def mapped_axes(spec: FigureSpec) -> set[str]:
    """The axes a figure maps.

    Args:
        spec: the figure.
    Returns:
        x, curve, the pooled axes, and every panel's ``where``, ``each`` and x axes.
    """
    axes = {spec.x, spec.curve, *spec.pool}
    for panel in spec.panels:
        axes |= set(panel.where) | set(panel.each)
        if panel.x:
            axes.add(panel.x)
    return axes


def split_axes(table: pd.DataFrame, spec: FigureSpec) -> list[str]:
    """The grid axes the figure does not map that take several values within one combination
    of the mapped axes' values (one figure each). An axis that is a function of mapped ones,
    such as cai's k = round(n/4) beside n on the x axis, splits nothing.

    Args:
        table: the results rows.
        spec: the figure.
    Returns:
        The axes to split on, in the table's column order.
    """
    mapped = mapped_axes(spec)
    keys = [c for c in grid_columns(table) if c in mapped]
    split = []
    for axis in grid_columns(table):
        if axis in mapped or table[axis].nunique(dropna=True) < 2:
            continue
        within = (
            table.groupby(keys, dropna=False)[axis].nunique().max()
            if keys
            else table[axis].nunique()
        )
        if within > 1:
            split.append(axis)
    return split


def draw_figures(table: pd.DataFrame, spec: FigureSpec) -> Iterator[Drawn]:
    """Every figure of ``spec`` on ``table``: one, or one per combination of the values of the
    axes it does not map (:func:`split_axes`). A generator: each figure is drawn when it is
    asked for, so a caller that saves (and so closes) each in turn holds one open at a time.

    Args:
        table: the results rows.
        spec: the figure.
    Returns:
        The drawn figures (:class:`Drawn`), one at a time.
    Raises:
        UsageError: a panel without data, or no panel with data.
    """
    axes = split_axes(table, spec)
    if not axes:
        yield _draw(table, spec, {})
        return
    values = [sorted(table[a].dropna().unique(), key=sort_key) for a in axes]
    for combo in itertools.product(*values):
        split = dict(zip(axes, combo))
        rows = select(table, {a: [v] for a, v in split.items()})
        if not rows.empty:
            yield _draw(rows, spec, split)


def _panel_rows(table: pd.DataFrame, panel: Panel) -> pd.DataFrame:
    """The rows a panel plots: its ``where`` slice, its method, its metric not missing."""
    rows = select(table, panel.where)
    if panel.method is not None:
        rows = rows[rows["method"] == panel.method]
    return rows[rows[panel.metric].notna()] if panel.metric in rows else rows.iloc[0:0]


def _nan_rows(table: pd.DataFrame, panel: Panel) -> tuple[int, int]:
    """(rows whose metric is NaN, rows) of the methods that report the panel's metric, in its
    slice: its method, or with ``method=None`` those with some value of it (a method that does
    not report a metric has NaN there too, so one with NaN in every row is not counted, unless
    no method has a value)."""
    rows = select(table, panel.where)
    if panel.metric not in rows:
        return 0, 0
    if panel.method is not None:
        rows = rows[rows["method"] == panel.method]
    else:
        reporting = set(rows.loc[rows[panel.metric].notna(), "method"])
        rows = rows[rows["method"].isin(reporting)] if reporting else rows
    return int(rows[panel.metric].isna().sum()), len(rows)


def titled(spec: FigureSpec, title: str) -> FigureSpec:
    """``spec`` with ``title`` (e.g. the experiment's) when it declares none of its own."""
    return spec if spec.title or not title else dataclasses.replace(spec, title=title)


def _nearest(values, wanted):
    """The value of ``values`` nearest to ``wanted`` (∞ is nearest to ∞)."""
    return min(values, key=lambda v: 0.0 if v == wanted else abs(float(v) - float(wanted)))


def _resolve_at(table: pd.DataFrame, spec: FigureSpec, panel: Panel) -> Panel:
    """``panel`` with its ``at`` values turned into a ``where`` slice at the value present in
    its rows nearest to each (left as asked when the axis has no rows: the panel is then
    reported as empty), the values used added to its title."""
    if not panel.at:
        return panel
    rows, where, used = _panel_rows(table, panel), dict(panel.where), []
    for axis, wanted in panel.at.items():
        present = list(rows[axis].dropna().unique()) if axis in rows else []
        chosen = _nearest(present, wanted) if present else wanted
        where[axis] = [chosen]
        rows = rows[rows[axis] == chosen] if present else rows
        used.append(phrase(spec, axis, chosen))
    text = ", ".join(used)
    return dataclasses.replace(
        panel, at={}, where=where, title=f"{panel.title} ({text})" if panel.title else text
    )


def _expansions(table: pd.DataFrame, spec: FigureSpec, panel: Panel) -> list[Panel]:
    """``panel``, or with ``each`` axes one copy per combination of their values present in
    its rows (:func:`value_order`: numeric order, ∞ last), the values added to its ``where`` and its title;
    ``at`` values first become a slice (:func:`_resolve_at`)."""
    panel = _resolve_at(table, spec, panel)
    if not panel.each:
        return [panel]
    rows = _panel_rows(table, panel)
    missing = [a for a in panel.each if a not in rows]
    if missing:
        raise UsageError(
            f"panel {panel.title or panel.ylabel!r} is repeated over {missing[0]!r}, "
            f"which is not a column of the results"
        )
    keys = [value_order(spec, a) for a in panel.each]
    combos = sorted(
        {tuple(r) for r in rows[list(panel.each)].itertuples(index=False)},
        key=lambda combo: [k(v) for k, v in zip(keys, combo)],
    )
    panels = []
    for combo in combos:
        value_text = ", ".join(phrase(spec, a, v) for a, v in zip(panel.each, combo))
        panels.append(
            dataclasses.replace(
                panel,
                each=(),
                where={**panel.where, **{a: [v] for a, v in zip(panel.each, combo)}},
                title=f"{panel.title}, {value_text}" if panel.title else value_text,
            )
        )
    return panels


def _outside_run(table: pd.DataFrame, panel: Panel) -> str:
    """ "axis = values" when the panel's ``where`` asks for values of an axis none of which the
    run holds (e.g. a dataset or ε left out with ``--set``), else ""."""
    for axis, wanted in panel.where.items():
        if axis in table and not table[axis].isin(list(wanted)).any():
            return f"{axis} = {', '.join(format_value(v) for v in wanted)}"
    return ""


def expand_panels(table: pd.DataFrame, spec: FigureSpec) -> list[Panel]:
    """``spec.panels`` with each panel that has ``each`` axes repeated (:func:`_expansions`).
    A panel sliced at values the run does not hold at all is left out, with a note naming
    them; a panel whose values were run but left no rows still stops the figure
    (:func:`_draw`), and so does a figure left with no panel.

    Args:
        table: the figure's rows.
        spec: the figure.
    Returns:
        The panels to draw, in order.
    Raises:
        UsageError: no panel is left.
    """
    panels = []
    for panel in (p for spec_panel in spec.panels for p in _expansions(table, spec, spec_panel)):
        outside = _outside_run(table, panel)
        if outside:
            note(
                f"figure panel {panel.title or panel.ylabel!r} not drawn: the run holds no {outside}"
            )
        else:
            panels.append(panel)
    if not panels:
        raise UsageError(
            "no panel of the figure has data in this run: every panel is sliced at values "
            "the run does not hold (see the notes above); run them or use `dpsim summary`"
        )
    return panels


def _columns(table: pd.DataFrame, spec: FigureSpec) -> int:
    """Panels per row: ``spec.columns``, else one row per repeated panel when every repeated
    panel gives the same 2–4 panels (e.g. one row per metric, one column per ε run), else 2."""
    if spec.columns:
        return spec.columns
    counts = {len(_expansions(table, spec, p)) for p in spec.panels if p.each}
    return counts.pop() if len(counts) == 1 and 2 <= min(counts) <= 4 else 2


# ---------------------------------------------------------------------------------------
# The x axis
# ---------------------------------------------------------------------------------------
def _x_positions(xs: np.ndarray, logx: bool) -> tuple[np.ndarray, float | None]:
    """Plot positions of x values; ∞ goes one (log or linear) step beyond the largest finite
    value. Returns (positions, the position of ∞ or None)."""
    finite = np.sort(np.unique(xs[np.isfinite(xs)]))
    if not np.isinf(xs).any():
        return xs, None
    if len(finite) == 0:
        return np.where(np.isinf(xs), 1.0, xs), 1.0
    if logx:
        step = np.exp(np.mean(np.diff(np.log(finite)))) if len(finite) > 1 else 2.0
        where = finite[-1] * max(step, 1.5)
    else:
        step = float(np.mean(np.diff(finite))) if len(finite) > 1 else max(abs(finite[-1]), 1.0)
        where = finite[-1] + step
    return np.where(np.isinf(xs), where, xs), where


def _label_rows(where: np.ndarray, labels: list[str], char: float, pad: float) -> list[int | None]:
    """The row (0: on the axis, 1: one line lower) of each tick label, None where neither row
    has room: each label goes on the first row whose previous label it clears; the last one
    (often ∞) is always labelled, on the first row if need be, clearing the labels there that
    it would overlap.

    Args:
        where: tick positions, increasing (log units on a log axis).
        labels: the tick labels.
        char, pad: the room two labels need, as a fraction of the axis span: (their mean
            length in characters) × ``char`` + ``pad``.
    Returns:
        One row (or None) per label.
    """
    span = float(where[-1] - where[0]) if len(where) > 1 else 0.0
    if span <= 0:
        return [0] * len(labels)

    def fits(i, j):
        return (where[j] - where[i]) / span >= (len(labels[i]) + len(labels[j])) / 2 * char + pad

    rows: list[list[int]] = [[], []]
    for i in range(len(where)):
        free = [r for r in (0, 1) if not rows[r] or fits(rows[r][-1], i)]
        if free:
            rows[free[0]].append(i)
    last = len(where) - 1
    if last not in rows[0] and last not in rows[1]:
        while len(rows[0]) > 1 and not fits(rows[0][-1], last):
            rows[0].pop()
        rows[0].append(last)
    placed = {i: r for r in (0, 1) for i in rows[r]}
    return [placed.get(i) for i in range(len(where))]


def _spaced_labels(
    present: list[tuple[float, float]], logx: bool, char: float = 0.02, pad: float = 0.008
) -> list[str]:
    """Tick labels for (position, value) pairs in increasing position: every value labelled,
    a label that would overlap the previous one put one line lower (:func:`_label_rows`),
    blank only where neither line has room (a character is about 2% of a panel's width).
    The first and the last label are always shown, on the axis.

    Args:
        present: (position, value) pairs, increasing in position.
        logx: whether the axis is logarithmic.
        char, pad: room per character and between labels, as fractions of the axis span.
    Returns:
        One label per pair ("" when left blank, "\\n…" when one line lower).
    """
    where = (
        np.log([pos for pos, _ in present])
        if logx
        else np.asarray([pos for pos, _ in present], float)
    )
    labels = [format_value(value) for _, value in present]
    rows = _label_rows(where, labels, char, pad)
    return ["" if row is None else "\n" * row + label for label, row in zip(labels, rows)]


def _x_ticks(ax, stats: pd.DataFrame, x: str, logx: bool, inf_at: float | None) -> None:
    """Tick the x axis at exactly the grid values present (≤ 12 of them, ∞ included), else
    at matplotlib's ticks plus ∞; no minor ticks on a log axis.

    Args:
        ax: the panel.
        stats: its plotted points (``_pos``: plot positions; ``x``: values).
        x: the x axis.
        logx: whether it is logarithmic.
        inf_at: where ∞ is drawn (None: not drawn).
    """
    if logx:
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    present = sorted(set(zip(stats["_pos"].astype(float), stats[x].astype(float))))
    if len(present) <= 12:
        ax.set_xticks([pos for pos, _ in present])
        ax.set_xticklabels(_spaced_labels(present, logx))
    elif inf_at is not None:
        ticks = [t for t in ax.get_xticks() if t < inf_at * (0.8 if logx else 1)]
        ax.set_xticks([*ticks, inf_at])
        ax.set_xticklabels([format_value(t) for t in ticks] + ["∞"])


# ---------------------------------------------------------------------------------------
# Drawing
# ---------------------------------------------------------------------------------------
@dataclass
class _Panelled:
    """What the panels of one figure drew: the plotted points (CSV rows), the replicate
    counts per grid point, and the table rows behind the drawn points of the fits that did
    not converge and of all fits (rows that report ``converged``)."""

    points: list = field(default_factory=list)
    reps: list = field(default_factory=list)
    unconverged: set = field(default_factory=set)
    fits: set = field(default_factory=set)


def _curves(table: pd.DataFrame, spec: FigureSpec) -> list:
    """The curves in legend order: methods as declared in ``curve_labels`` then by name, or
    the curve axis's values in numeric order (∞ last; names as their labels are declared,
    :func:`value_order`)."""
    if spec.curve == "method":
        present = set(table["method"])
        return [m for m in spec.curve_labels if m in present] + sorted(
            present - set(spec.curve_labels), key=str
        )
    return sorted(table[spec.curve].dropna().unique(), key=value_order(spec, spec.curve))


def _draw_panel(
    ax,
    table: pd.DataFrame,
    spec: FigureSpec,
    panel: Panel,
    letter: str,
    colours: dict,
    split: dict,
    drawn: _Panelled,
) -> None:
    """Draw one panel: a line and a 95% band per curve, × on points with unconverged fits.

    Args:
        ax: the matplotlib axes.
        table: the figure's rows.
        spec: the figure.
        panel: what this panel plots (expanded: no ``each`` or ``at``).
        letter: its letter, (a), (b), …
        colours: curve → colour (the curves in legend order).
        split: the values of the axes this figure was split on (added to its CSV rows).
        drawn: collects the plotted points, replicate counts and fits.
    Raises:
        UsageError: the panel has no rows.
    """
    x = panel.x or spec.x
    key = "method" if spec.curve == "method" else spec.curve
    rows = _panel_rows(table, panel)
    label = f"({letter}) {panel.title or panel.ylabel}"
    nan, of = _nan_rows(table, panel)
    if rows.empty and not of:
        raise UsageError(
            f"panel {label!r} of the figure has no data "
            f"(method={panel.method}, where={dict(panel.where)}, metric={panel.metric!r})"
        )
    if rows.empty:  # rows were computed, but their metric is NaN in every one: drawn empty, said so
        note(f"panel {label!r}: {panel.metric} is NaN in all {of} rows; the panel is drawn empty")
        ax.text(
            0.5,
            0.5,
            f"no finite value of {panel.metric}\n(NaN in all {of} rows)",
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=9,
            color="0.35",
        )
        ax.set_xlabel(panel.xlabel or spec.xlabel)
        ax.set_ylabel(panel.ylabel)
        ax.set_title(label, loc="left", fontsize=10)
        return
    if nan:
        ax.text(
            0.98,
            0.02,
            f"{panel.metric} NaN in {nan} of {of} rows, left out",
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize=7,
            color="0.35",
        )
    stats = summarise(rows, panel.metric, [key, x], pool=spec.pool)
    drawn.reps.extend(rows.groupby("point")["rep"].nunique().tolist() if "point" in rows else [])
    if "converged" in rows:
        drawn.fits |= set(rows.index[rows["converged"].notna().to_numpy(bool)])
        drawn.unconverged |= set(
            rows.index[(rows["converged"] == False).fillna(False).to_numpy(bool)]  # noqa: E712 (elementwise)
        )  # noqa: E712
    logx = spec.logx if panel.logx is None else panel.logx
    numeric = stats[x].dtype.kind in "fi"
    positions, inf_at = (
        _x_positions(stats[x].to_numpy(float), logx) if numeric else (stats[x], None)
    )
    stats = stats.assign(_pos=positions)
    for curve in colours:
        s = stats[stats[key] == curve].sort_values("_pos")
        if s.empty:
            continue
        ax.plot(
            s["_pos"],
            s["mean"],
            marker="o",
            ms=4,
            color=colours[curve],
            label=curve_name(spec, curve),
        )
        ax.fill_between(
            s["_pos"], s["ci_low"], s["ci_high"], color=colours[curve], alpha=0.15, lw=0
        )
        if "unconverged" in s and (s["unconverged"] > 0).any():
            bad = s[s["unconverged"] > 0]
            ax.plot(bad["_pos"], bad["mean"], "x", color="red", ms=9, mew=2, zorder=5)
        drawn.points.extend(_csv_rows(s, spec, panel, letter, curve, x, split))
    if spec.logy if panel.logy is None else panel.logy:
        ax.set_yscale("log")
        if (stats["mean"] <= 0).any():
            note(
                f"panel {label!r}: {int((stats['mean'] <= 0).sum())} points ≤ 0 are not drawn on its log y axis"
            )
    if numeric:
        _x_ticks(ax, stats, x, logx, inf_at)
    elif logx:
        ax.set_xscale("log")
    ax.set_xlabel(panel.xlabel or spec.xlabel)
    ax.set_ylabel(panel.ylabel)
    ax.set_title(label, loc="left", fontsize=10)
    ax.grid(alpha=0.3)


def _csv_rows(
    s: pd.DataFrame, spec: FigureSpec, panel: Panel, letter: str, curve, x: str, split: dict
) -> list[dict]:
    """The CSV rows of one curve of one panel (one per plotted point)."""
    method = panel.method if panel.method else curve if spec.curve == "method" else ""
    return [
        {
            "panel": letter,
            "title": panel.title or panel.ylabel,
            "metric": panel.metric,
            "method": method,
            "curve_axis": spec.curve,
            "curve": curve,
            "x_axis": x,
            "x": r[x],
            "mean": r["mean"],
            "sd": r["sd"],
            "n": int(r["n"]),
            "ci_low": r["ci_low"],
            "ci_high": r["ci_high"],
            "unconverged": int(r.get("unconverged", 0) or 0),
            **split,
        }
        for _, r in s.iterrows()
    ]


def _constant_axes(table: pd.DataFrame, spec: FigureSpec, split: dict) -> list[str]:
    """The subtitle's phrases: every axis (not x, curve or a split one) with one value in the
    rows, as :func:`phrase` writes it, except an axis whose ``spec.shown_with`` value is not
    among the rows."""
    parts = []
    for axis in grid_columns(table):
        values = table[axis].dropna().unique()
        if (
            axis in split
            or len(values) != 1
            or axis in (spec.x, spec.curve)
            or not _shown(table, spec, axis)
        ):
            continue
        parts.append(phrase(spec, axis, values[0]))
    return parts


def _shown(table: pd.DataFrame, spec: FigureSpec, axis: str) -> bool:
    """Whether the rows hold the value ``spec.shown_with`` ties ``axis`` to (True when untied)."""
    if axis not in spec.shown_with:
        return True
    other, value = spec.shown_with[axis]
    return other in table.columns and bool((table[other] == value).any())


def _subtitle(fig: plt.Figure, parts: list[str]) -> str:
    """The subtitle's phrases joined by commas, broken into lines (after a comma) so that no
    line is wider than the figure; "" when there is none.

    Args:
        fig: the figure (its width and renderer measure the text).
        parts: the phrases (:func:`_constant_axes`).
    Returns:
        The text, lines separated by newlines.
    """
    return _fitted_lines(fig, parts, SUBTITLE_SIZE, ", ", ",")


def _title(fig: plt.Figure, spec: FigureSpec, split: dict) -> str:
    """The title: the paper's figure name and the split values, broken into lines (between
    words) so that no line is wider than the figure (a one-panel figure cut a long split
    title at both edges)."""
    title = spec.title + (
        "  [" + ", ".join(phrase(spec, a, v) for a, v in split.items()) + "]" if split else ""
    )
    return _fitted_lines(fig, title.split(" "), TITLE_SIZE, " ", "")


def _fitted_lines(
    fig: plt.Figure, parts: list[str], fontsize: float, separator: str, line_end: str
) -> str:
    """``parts`` joined by ``separator``, a new line begun (the last one ended by
    ``line_end``) where the next part would make a line wider than the figure; "" for none.

    Args:
        fig: the figure (its width and renderer measure the text).
        parts: the phrases or words; fontsize: the text's size in points.
    Returns:
        The text, lines separated by newlines.
    """
    renderer = fig.canvas.get_renderer()
    limit = 0.96 * fig.get_figwidth() * fig.dpi

    def width(text):
        probe = fig.text(0, 0, text, fontsize=fontsize)
        extent = probe.get_window_extent(renderer).width
        probe.remove()
        return extent

    lines = [""]
    for part in parts:
        joined = f"{lines[-1]}{separator}{part}" if lines[-1] else part
        if lines[-1] and width(joined) > limit:
            lines[-1] += line_end
            lines.append(part)
        else:
            lines[-1] = joined
    return "\n".join(lines)


def _unconverged_text(drawn: _Panelled) -> str:
    """The legend entry of the × marks: how many fits did not converge, of how many drawn
    ("" when every fit converged). A fit drawn in several panels counts once."""
    bad = len(drawn.unconverged)
    if not bad:
        return ""
    return f"{bad} unconverged fit{'s' if bad != 1 else ''} (of {len(drawn.fits)})"


def _handles(axes: np.ndarray, n_panels: int, unconverged: str) -> dict:
    """The legend's entries: label → handle, each curve once, then the × marks saying how
    many fits did not converge (``unconverged``; no entry when "")."""
    handles = {}
    for ax in list(axes.flat)[:n_panels]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    if unconverged:
        handles[unconverged] = Line2D([], [], ls="none", marker="x", color="red", ms=9, mew=2)
    return handles


def _legend_columns(fig: plt.Figure, handles: dict) -> int:
    """The most columns (at most 6) in which a legend of ``handles`` under the panels is no
    wider than the figure."""
    renderer = fig.canvas.get_renderer()
    for ncol in range(min(max(len(handles), 1), 6), 1, -1):
        trial = fig.legend(list(handles.values()), list(handles), ncol=ncol, frameon=False)
        wide = trial.get_window_extent(renderer).width > 0.98 * fig.get_figwidth() * fig.dpi
        trial.remove()
        if not wide:
            return ncol
    return 1


def _legend(fig: plt.Figure, axes: np.ndarray, n_panels: int, handles: dict, ncol: int) -> None:
    """Place the figure's one legend: in the first unused panel slot when there is one, else
    centred under the panels, in ``ncol`` columns (:func:`_legend_columns`).

    Args:
        fig: the figure.
        axes: its panels (row major); those from ``n_panels`` on are unused.
        n_panels: how many panels are drawn.
        handles: the entries (:func:`_handles`).
        ncol: columns of a legend under the panels.
    """
    spare = list(axes.flat)[n_panels:]
    if spare:
        spare[0].legend(list(handles.values()), list(handles), loc="center", frameon=False)
        return
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="lower center",
        ncol=ncol,
        frameon=False,
        bbox_to_anchor=(0.5, FOOTER_BAND / fig.get_figheight()),
    )


def _titles(fig: plt.Figure, title: str, subtitle: str) -> None:
    """Write the title (:func:`_title`) and the subtitle (:func:`_subtitle`; "" for none) in
    the band left above the panels, the subtitle under the title's last line."""
    height = fig.get_figheight()
    fig.suptitle(title, fontsize=TITLE_SIZE, y=1 - 0.12 / height, va="top")
    if subtitle:
        below_title = 0.42 + TITLE_LINE * title.count("\n")
        fig.text(
            0.5,
            1 - below_title / height,
            subtitle,
            ha="center",
            va="top",
            fontsize=SUBTITLE_SIZE,
            color="0.3",
        )


def _footer(fig: plt.Figure, drawn: _Panelled) -> None:
    """The footer: the replicate count(s) of the points and what the bands are."""
    r_lo, r_hi = (min(drawn.reps), max(drawn.reps)) if drawn.reps else (0, 0)
    reps_text = f"R = {r_lo}" if r_lo == r_hi else f"R = {r_lo}–{r_hi}"
    fig.text(
        0.5,
        0.005,
        f"points: mean over {reps_text} replicates; bands: 95% CI",
        ha="center",
        va="bottom",
        fontsize=8,
        color="0.3",
    )


def _draw(table: pd.DataFrame, spec: FigureSpec, split: dict) -> Drawn:
    """Draw one figure: its panels in rows, one legend, the title, subtitle and footer.

    Args:
        table: the figure's rows (one value of each split axis).
        spec: the figure.
        split: the split axes' values ({} when not split).
    Returns:
        The figure and its plotted points.
    """
    panels = expand_panels(table, spec)
    cols = min(_columns(table, spec), len(panels))
    rows_n = math.ceil(len(panels) / cols)
    # laid out at the PNG's resolution: text measured while laying out (its mathtext parsed and
    # cached per resolution) is the PNG's, so only the PDF parses it again
    fig, axes = plt.subplots(
        rows_n, cols, figsize=(PANEL_SIZE[0] * cols, PANEL_SIZE[1]), squeeze=False, dpi=PNG_DPI
    )
    curves = _curves(table, spec)
    colours = dict(zip(curves, plt.get_cmap("viridis")(np.linspace(0.0, 0.9, max(len(curves), 1)))))
    drawn = _Panelled()
    for ax, panel, letter in zip(axes.flat, panels, _letters()):
        _draw_panel(ax, table, spec, panel, letter, colours, split, drawn)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    handles = _handles(axes, len(panels), _unconverged_text(drawn))
    ncol = _legend_columns(fig, handles)
    below = (
        FOOTER_BAND
        if rows_n * cols > len(panels)
        else LEGEND_BAND + LEGEND_ROW * (math.ceil(len(handles) / ncol) - 1)
    )
    title, subtitle = _title(fig, spec, split), _subtitle(fig, _constant_axes(table, spec, split))
    top = (
        TITLE_BAND[1] + SUBTITLE_LINE * subtitle.count("\n") if subtitle else TITLE_BAND[0]
    ) + TITLE_LINE * title.count("\n")
    height = PANEL_SIZE[1] * rows_n - MARGINS + top + below
    fig.set_figheight(height)
    fig.tight_layout(rect=(0, below / height, 1, 1 - top / height))
    _legend(fig, axes, len(panels), handles, ncol)
    _titles(fig, title, subtitle)
    _footer(fig, drawn)
    return Drawn(fig, pd.DataFrame(drawn.points), split)


def _letters() -> Iterator[str]:
    """Panel letters a, b, …, z, aa, ab, …"""
    for size in itertools.count(1):
        for letters in itertools.product(string.ascii_lowercase, repeat=size):
            yield "".join(letters)


def figure_stem(stem: Path, split: dict) -> Path:
    """Where one figure goes.

    Args:
        stem: the stem asked for (``--to``, or DIR/figure).
        split: the values of the axes the figure was split on ({} when not split).
    Returns:
        ``stem`` for an unsplit figure, ``stem-axis=value…`` (the values themselves, ∞ as
        inf) for one of a split figure.
    """
    if not split:
        return Path(stem)
    suffix = "-".join(f"{a}={format_value(v).replace('∞', 'inf')}" for a, v in split.items())
    return Path(stem).with_name(f"{Path(stem).name}-{suffix}")


def prepare() -> None:
    """Load what a process's first figure otherwise loads while it draws: the font list (built
    afresh under an empty home folder, then kept in matplotlib's cache folder), the default
    font, and the mathtext parser with the symbols the papers' labels use. ``dpsim run`` calls
    it in a background thread while the run computes (:func:`dpsim.cli.cmd_run`), and waits for
    it before drawing, so the figure after a run does not wait for them. Draws nothing."""
    from matplotlib import font_manager, mathtext

    font_manager.get_font(font_manager.findfont(font_manager.FontProperties()))
    parser = mathtext.MathTextParser("path")
    parser.parse(
        r"$\ln(\|\hat\theta-\theta^*\|_\infty) \epsilon \ell_2 c_0 \mathdefault{10^{-1}}$",
        dpi=PNG_DPI,
    )


def save_figure(drawn: Drawn, stem: Path) -> list[Path]:
    """Write one figure as PNG and PDF, and its plotted points as CSV, then close it.

    Args:
        drawn: the figure (:func:`draw_figures`).
        stem: the stem asked for (:func:`figure_stem` adds the split values).
    Returns:
        The paths written: .png, .pdf, .csv.
    """
    stem = figure_stem(stem, drawn.split)
    stem.parent.mkdir(parents=True, exist_ok=True)
    # appended, not Path.with_suffix: a split value such as gap=0.02 has a dot of its own
    paths = [stem.with_name(f"{stem.name}.{ext}") for ext in ("png", "pdf", "csv")]
    # each file whole or not at all (a temporary file, fsync, rename): a killed run never leaves half a figure
    store.write_file(paths[0], lambda tmp: drawn.figure.savefig(tmp, dpi=PNG_DPI, format="png"))
    store.write_file(paths[1], lambda tmp: drawn.figure.savefig(tmp, format="pdf"))
    store.write_text(paths[2], drawn.points.to_csv(index=False))
    plt.close(drawn.figure)
    return paths
