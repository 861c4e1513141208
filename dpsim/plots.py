"""Figures drawn from the data: an experiment's :class:`FigureSpec` applied to its results table.

The layout follows the papers (one panel per (metric, method), the x axis a grid axis, one
curve per value of another axis or per method), and everything else comes from the table:

* every value present on the x axis and every curve is drawn; ε = ∞ on a numeric x axis
  is drawn one step beyond the largest finite value, with the tick label ∞;
* an axis that the figure does not map (x, curve, a panel's ``where``) and that has several
  values in the table is never pooled: the figure is split, one per value (file names and
  titles say which);
* a panel without data is an error, not an empty picture;
* the title is the paper's figure name, the subtitle the grid actually run (every axis with
  one value, in the paper's symbols), the footer the replicate count and what the bands are
  (mean ± 95% CI);
* legends are in numeric order with ∞ last; points where fits did not converge are marked;
* beside each image, the plotted points (means, intervals, counts) as a CSV.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dpsim.errors import UsageError, note  # noqa: E402
from dpsim.experiment.grid import FigureSpec, Panel  # noqa: E402
from dpsim.experiment.summary import grid_columns, select, summarise  # noqa: E402


def format_value(value) -> str:
    if isinstance(value, (float, np.floating)) and math.isinf(value):
        return "∞"
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{value:.3g}"
    return str(value)


def sort_key(value):
    """Numeric order with ∞ last, names after numbers."""
    if isinstance(value, str):
        return (2, 0.0, value)
    value = float(value)
    return (1, 0.0, "") if math.isinf(value) else (0, value, "")


def symbol(spec: FigureSpec, axis: str) -> str:
    return spec.symbols.get(axis, axis)


@dataclass
class Drawn:
    """One drawn figure: the matplotlib figure, its plotted points, and the values of the
    axes it was split on ({} when not split)."""

    figure: plt.Figure
    points: pd.DataFrame
    split: dict


def mapped_axes(spec: FigureSpec) -> set[str]:
    axes = {spec.x, spec.curve, *spec.pool}
    for panel in spec.panels:
        axes |= set(panel.where) | set(panel.each)
        if panel.x:
            axes.add(panel.x)
    return axes


def split_axes(table: pd.DataFrame, spec: FigureSpec) -> list[str]:
    """The grid axes the figure does not map that take several values within one combination
    of the mapped axes' values (one figure each). An axis that is a function of mapped ones,
    such as cai's k = round(n/4) beside n on the x axis, splits nothing."""
    mapped = mapped_axes(spec)
    keys = [c for c in grid_columns(table) if c in mapped]
    split = []
    for axis in grid_columns(table):
        if axis in mapped or table[axis].nunique(dropna=True) < 2:
            continue
        within = table.groupby(keys, dropna=False)[axis].nunique().max() if keys else table[axis].nunique()
        if within > 1:
            split.append(axis)
    return split


def draw_figures(table: pd.DataFrame, spec: FigureSpec) -> Iterator[Drawn]:
    """Every figure of ``spec`` on ``table``: one, or one per combination of the values of the
    axes it does not map (:func:`split_axes`). A generator: each figure is drawn when it is
    asked for, so a caller that saves (and so closes) each in turn holds one open at a time."""
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
        used.append(f"{symbol(spec, axis)} = {format_value(chosen)}")
    text = ", ".join(used)
    return dataclasses.replace(panel, at={}, where=where, title=f"{panel.title} ({text})" if panel.title else text)


def _expansions(table: pd.DataFrame, spec: FigureSpec, panel: Panel) -> list[Panel]:
    """``panel``, or with ``each`` axes one copy per combination of their values present in
    its rows (numeric order, ∞ last), the values added to its ``where`` and its title;
    ``at`` values first become a slice (:func:`_resolve_at`)."""
    panel = _resolve_at(table, spec, panel)
    if not panel.each:
        return [panel]
    rows = _panel_rows(table, panel)
    missing = [a for a in panel.each if a not in rows]
    if missing:
        raise UsageError(f"panel {panel.title or panel.ylabel!r} is repeated over {missing[0]!r}, "
                         f"which is not a column of the results")
    combos = sorted({tuple(r) for r in rows[list(panel.each)].itertuples(index=False)},
                    key=lambda combo: [sort_key(v) for v in combo])
    panels = []
    for combo in combos:
        value_text = ", ".join(f"{symbol(spec, a)} = {format_value(v)}" for a, v in zip(panel.each, combo))
        panels.append(dataclasses.replace(
            panel, each=(), where={**panel.where, **{a: [v] for a, v in zip(panel.each, combo)}},
            title=f"{panel.title}, {value_text}" if panel.title else value_text))
    return panels


def _outside_run(table: pd.DataFrame, panel: Panel) -> str:
    """"axis = values" when the panel's ``where`` asks for values of an axis none of which the
    run holds (e.g. a dataset or ε left out with ``--set``), else ""."""
    for axis, wanted in panel.where.items():
        if axis in table and not table[axis].isin(list(wanted)).any():
            return f"{axis} = {', '.join(format_value(v) for v in wanted)}"
    return ""


def expand_panels(table: pd.DataFrame, spec: FigureSpec) -> list[Panel]:
    """``spec.panels`` with each panel that has ``each`` axes repeated (:func:`_expansions`).
    A panel sliced at values the run does not hold at all is left out, with a note naming
    them; a panel whose values were run but left no rows still stops the figure
    (:func:`_draw`), and so does a figure left with no panel."""
    panels = []
    for panel in (p for spec_panel in spec.panels for p in _expansions(table, spec, spec_panel)):
        outside = _outside_run(table, panel)
        if outside:
            note(f"figure panel {panel.title or panel.ylabel!r} not drawn: the run holds no {outside}")
        else:
            panels.append(panel)
    if not panels:
        raise UsageError("no panel of the figure has data in this run: every panel is sliced at values "
                         "the run does not hold (see the notes above); run them or use `dpsim summary`")
    return panels


def _columns(table: pd.DataFrame, spec: FigureSpec) -> int:
    """Panels per row: ``spec.columns``, else one row per repeated panel when every repeated
    panel gives the same 2–4 panels (e.g. one row per metric, one column per ε run), else 2."""
    if spec.columns:
        return spec.columns
    counts = {len(_expansions(table, spec, p)) for p in spec.panels if p.each}
    return counts.pop() if len(counts) == 1 and 2 <= min(counts) <= 4 else 2


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


def _spaced_labels(present: list[tuple[float, float]], logx: bool, char: float = 0.02, pad: float = 0.008) -> list[str]:
    """Tick labels for (position, value) pairs in increasing position, blank where a label
    would overlap the previous label shown: two labels need (their mean length in
    characters) × ``char`` + ``pad`` between them, as a fraction of the axis span (in log
    units on a log axis; a character is about 2% of a panel's width). The first and the
    last label are always shown."""
    where = np.log([pos for pos, _ in present]) if logx else np.asarray([pos for pos, _ in present], float)
    labels = [format_value(value) for _, value in present]
    span = float(where[-1] - where[0]) if len(where) > 1 else 0.0
    if span <= 0:
        return labels

    def fits(i, j):
        return (where[j] - where[i]) / span >= (len(labels[i]) + len(labels[j])) / 2 * char + pad

    shown = [0]
    for i in range(1, len(where)):
        if fits(shown[-1], i):
            shown.append(i)
    last = len(where) - 1
    if shown[-1] != last:                       # the last value (often ∞) keeps its label
        while len(shown) > 1 and not fits(shown[-1], last):
            shown.pop()
        shown.append(last)
    return [label if i in shown else "" for i, label in enumerate(labels)]


def _constant_axes(table: pd.DataFrame, spec: FigureSpec, split: dict) -> str:
    parts = []
    for axis in grid_columns(table):
        values = table[axis].dropna().unique()
        if axis in split or len(values) != 1 or axis in (spec.x, spec.curve):
            continue
        parts.append(f"{symbol(spec, axis)} = {format_value(values[0])}")
    return ", ".join(parts)


def _draw(table: pd.DataFrame, spec: FigureSpec, split: dict) -> Drawn:
    panels = expand_panels(table, spec)
    n_panels = len(panels)
    cols = min(_columns(table, spec), n_panels)
    rows_n = math.ceil(n_panels / cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(5.2 * cols, 3.8 * rows_n + 0.6), squeeze=False)
    if spec.curve == "method":
        present = set(table["method"])
        curves = [m for m in spec.curve_labels if m in present] + sorted(present - set(spec.curve_labels), key=str)
    else:
        curves = sorted(table[spec.curve].dropna().unique(), key=sort_key)
    colours = dict(zip(curves, plt.get_cmap("viridis")(np.linspace(0.0, 0.9, max(len(curves), 1)))))
    points, reps_seen, any_unconverged = [], [], False
    for ax, panel, letter in zip(axes.flat, panels, _letters()):
        x = panel.x or spec.x
        logx = spec.logx if panel.logx is None else panel.logx
        rows = _panel_rows(table, panel)
        label = f"({letter}) {panel.title or panel.ylabel}"
        if rows.empty:
            raise UsageError(f"panel {label!r} of the figure has no data "
                             f"(method={panel.method}, where={dict(panel.where)}, metric={panel.metric!r})")
        stats = summarise(rows, panel.metric, ["method" if spec.curve == "method" else spec.curve, x],
                          pool=spec.pool)
        reps_seen.extend(rows.groupby("point")["rep"].nunique().tolist() if "point" in rows else [])
        xs_all = stats[x].to_numpy(float) if stats[x].dtype.kind in "fi" else None
        positions, inf_at = _x_positions(xs_all, logx) if xs_all is not None else (None, None)
        stats = stats.assign(_pos=positions if positions is not None else stats[x])
        for curve in curves:
            key = "method" if spec.curve == "method" else spec.curve
            s = stats[stats[key] == curve].sort_values("_pos")
            if s.empty:
                continue
            name = spec.curve_labels.get(curve, curve) if spec.curve == "method" else \
                f"{spec.curve_label} = {format_value(curve)}"
            ax.plot(s["_pos"], s["mean"], marker="o", ms=4, color=colours[curve], label=name)
            ax.fill_between(s["_pos"], s["ci_low"], s["ci_high"], color=colours[curve], alpha=0.15, lw=0)
            if "unconverged" in s and (s["unconverged"] > 0).any():
                bad = s[s["unconverged"] > 0]
                ax.plot(bad["_pos"], bad["mean"], "x", color="red", ms=9, mew=2, zorder=5)
                any_unconverged = True
            for _, r in s.iterrows():
                points.append({"panel": letter, "title": panel.title or panel.ylabel, "metric": panel.metric,
                               "method": panel.method if panel.method else curve if spec.curve == "method" else "",
                               "curve_axis": spec.curve, "curve": curve, "x_axis": x, "x": r[x],
                               "mean": r["mean"], "sd": r["sd"], "n": int(r["n"]), "ci_low": r["ci_low"],
                               "ci_high": r["ci_high"], "unconverged": int(r.get("unconverged", 0) or 0),
                               **split})
        if spec.logy if panel.logy is None else panel.logy:
            ax.set_yscale("log")
        if logx:
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        if xs_all is not None:
            present = sorted(set(zip(stats["_pos"].astype(float), stats[x].astype(float))))
            if len(present) <= 12:       # tick exactly the grid values present (∞ included)
                ax.set_xticks([pos for pos, _ in present])
                ax.set_xticklabels(_spaced_labels(present, logx))
            elif inf_at is not None:
                ticks = [t for t in ax.get_xticks() if t < inf_at * (0.8 if logx else 1)]
                ax.set_xticks([*ticks, inf_at])
                ax.set_xticklabels([format_value(t) for t in ticks] + ["∞"])
        ax.set_xlabel(panel.xlabel or spec.xlabel)
        ax.set_ylabel(panel.ylabel)
        ax.set_title(label, loc="left", fontsize=10)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n_panels:]:
        ax.axis("off")
    handles = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=min(max(len(handles), 1), 6),
               frameon=False, bbox_to_anchor=(0.5, 0.22 / fig.get_figheight()))
    title = spec.title + ("  [" + ", ".join(f"{symbol(spec, a)} = {format_value(v)}" for a, v in split.items())
                          + "]" if split else "")
    height = fig.get_figheight()
    fig.suptitle(title, fontsize=12, y=1 - 0.12 / height, va="top")
    constant = _constant_axes(table, spec, split)
    if constant:
        fig.text(0.5, 1 - 0.42 / height, constant, ha="center", va="top", fontsize=9, color="0.3")
    r_lo, r_hi = (min(reps_seen), max(reps_seen)) if reps_seen else (0, 0)
    reps_text = f"R = {r_lo}" if r_lo == r_hi else f"R = {r_lo}–{r_hi}"
    footer = f"points: mean over {reps_text} replicates; bands: 95% CI"
    if any_unconverged:
        footer += ";  × : some fits did not converge"
    fig.text(0.5, 0.005, footer, ha="center", va="bottom", fontsize=8, color="0.3")
    fig.tight_layout(rect=(0, 0.75 / height, 1, 1 - (0.7 if constant else 0.45) / height))
    return Drawn(fig, pd.DataFrame(points), split)


def _letters() -> Iterator[str]:
    """Panel letters a, b, …, z, aa, ab, …"""
    for size in itertools.count(1):
        for letters in itertools.product(string.ascii_lowercase, repeat=size):
            yield "".join(letters)


def figure_stem(stem: Path, split: dict) -> Path:
    """``stem`` for an unsplit figure, ``stem-axis=value…`` for one of a split figure."""
    if not split:
        return Path(stem)
    suffix = "-".join(f"{a}={format_value(v).replace('∞', 'inf')}" for a, v in split.items())
    return Path(stem).with_name(f"{Path(stem).name}-{suffix}")


def save_figure(drawn: Drawn, stem: Path) -> list[Path]:
    """Write ``stem``.png, .pdf and .csv (the plotted points); returns the paths."""
    stem = figure_stem(stem, drawn.split)
    stem.parent.mkdir(parents=True, exist_ok=True)
    # appended, not Path.with_suffix: a split value such as gap=0.02 has a dot of its own
    paths = [stem.with_name(f"{stem.name}.{ext}") for ext in ("png", "pdf", "csv")]
    drawn.figure.savefig(paths[0], dpi=130)
    drawn.figure.savefig(paths[1])
    drawn.points.to_csv(paths[2], index=False)
    plt.close(drawn.figure)
    return paths
