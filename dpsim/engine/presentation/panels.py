"""Which rows and which panels a figure draws: pure pandas, no matplotlib.

:func:`split_axes` says which figures (an axis the figure does not map and that has several
values splits it, one figure per value), :func:`expand_panels` which panels (a panel
repeated over its ``each`` axes, sliced at the values nearest its ``at`` ones, left out with a
note when the run holds none of the values it slices at), :func:`panel_rows` and
:func:`nan_rows` which rows each panel plots, and :func:`panel_columns` how many panels go
in a row.

``dpsim plot`` may change what is drawn without changing the experiment: :func:`parse_where`
and :func:`filter_rows` keep some rows (``--where``), :func:`metric_spec` draws one metric
instead of the declared panels (``--metric``), :func:`with_logy` overrides log y (``--logy``).

Separate from the drawing (:mod:`dpsim.engine.presentation.plots`) so that what a figure
shows can be decided, and tested, without loading matplotlib.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Sequence

import pandas as pd

from dpsim.errors import UsageError, note
from dpsim.engine.definition.axes import parse_value
from dpsim.engine.definition.figure import FigureSpec, Panel
from dpsim.engine.presentation.labels import format_value, phrase, sort_key, value_order
from dpsim.engine.presentation.summary import grid_columns, select


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


def panel_rows(table: pd.DataFrame, panel: Panel) -> pd.DataFrame:
    """The rows a panel plots: its ``where`` slice, its method, its metric not missing."""
    rows = select(table, panel.where)
    if panel.method is not None:
        rows = rows[rows["method"] == panel.method]
    return rows[rows[panel.metric].notna()] if panel.metric in rows else rows.iloc[0:0]


def nan_rows(table: pd.DataFrame, panel: Panel) -> tuple[int, int]:
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
    rows, where, used = panel_rows(table, panel), dict(panel.where), []
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
    rows = panel_rows(table, panel)
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
    (:func:`dpsim.engine.presentation.plots.draw_figures`), and so does a figure left with no
    panel.

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


def panel_columns(table: pd.DataFrame, spec: FigureSpec) -> int:
    """Panels per row: ``spec.columns``, else one row per repeated panel when every repeated
    panel gives the same 2–4 panels (e.g. one row per metric, one column per ε run), else 2."""
    if spec.columns:
        return spec.columns
    counts = {len(_expansions(table, spec, p)) for p in spec.panels if p.each}
    return counts.pop() if len(counts) == 1 and 2 <= min(counts) <= 4 else 2
