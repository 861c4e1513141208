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

Which figures, panels and rows are drawn is decided in :mod:`dpsim.engine.presentation.panels`
(also what ``dpsim plot``'s ``--where``, ``--metric`` and ``--logy`` change), how values, axes
and curves are written in :mod:`dpsim.engine.presentation.labels`; this module draws and saves.
"""

from __future__ import annotations

import itertools
import math
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from dpsim.errors import UsageError, note  # noqa: E402
from dpsim.engine.storage import store  # noqa: E402
from dpsim.engine.definition.figure import FigureSpec, Panel  # noqa: E402
from dpsim.engine.presentation.labels import (  # noqa: E402
    curve_name,
    format_value,
    phrase,
    sort_key,
    value_order,
)
from dpsim.engine.presentation.panels import (  # noqa: E402
    expand_panels,
    nan_rows,
    panel_columns,
    panel_rows,
    split_axes,
)
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


@dataclass
class Drawn:
    """One drawn figure: the matplotlib figure, its plotted points, and the values of the
    axes it was split on ({} when not split)."""

    figure: plt.Figure
    points: pd.DataFrame
    split: dict


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
    rows = panel_rows(table, panel)
    label = f"({letter}) {panel.title or panel.ylabel}"
    nan, of = nan_rows(table, panel)
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
    cols = min(panel_columns(table, spec), len(panels))
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
