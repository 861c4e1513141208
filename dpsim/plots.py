"""Figure helpers: draw an experiment's :class:`FigureSpec` from its results table.

The layout follows the papers: one panel per (metric, method), the x axis a grid axis,
one curve per value of another axis, each point the mean over replicates (cai plots means
without error bars; we add a 95% CI band, which is narrow at 120 replicates).
"""
from __future__ import annotations

import math
import string
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.ticker  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dpsim.experiment.grid import FigureSpec  # noqa: E402
from dpsim.experiment.summary import select, summarise  # noqa: E402


def format_value(value) -> str:
    if isinstance(value, (float, np.floating)) and math.isinf(value):
        return "∞"
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{value:.3g}"
    return str(value)


def draw_figure(table: pd.DataFrame, spec: FigureSpec) -> plt.Figure:
    """A 2-column grid of panels; returns the matplotlib figure."""
    data = select(table, spec.where)
    n_panels = len(spec.panels)
    cols = 2 if n_panels > 1 else 1
    rows = math.ceil(n_panels / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.8 * rows), squeeze=False)
    curves = list(dict.fromkeys(data[spec.curve])) if spec.curve == "method" else \
        sorted(data[spec.curve].unique(), key=lambda v: (isinstance(v, str), v))
    colours = plt.get_cmap("viridis")(np.linspace(0.0, 0.9, max(len(curves), 1)))
    for ax, panel, letter in zip(axes.flat, spec.panels, string.ascii_lowercase):
        x = panel.x or spec.x
        rows_ = select(data, panel.where, method=panel.method)
        rows_ = rows_[rows_[panel.metric].notna()]
        rows_ = rows_[np.isfinite(rows_[x].astype(float))] if rows_[x].dtype.kind == "f" else rows_
        stats = summarise(rows_, panel.metric, [spec.curve, x])
        for colour, value in zip(colours, curves):
            s = stats[stats[spec.curve] == value].sort_values(x)
            if s.empty:
                continue
            label = spec.curve_labels.get(value, value) if spec.curve == "method" else \
                f"{spec.curve_label} = {format_value(value)}"
            ax.plot(s[x], s["mean"], marker="o", ms=4, color=colour, label=label)
            ax.fill_between(s[x], s["ci_low"], s["ci_high"], color=colour, alpha=0.15, lw=0)
        if spec.logx if panel.logx is None else panel.logx:
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel(panel.xlabel or spec.xlabel)
        ax.set_ylabel(panel.ylabel)
        ax.set_title(f"({letter}) {panel.title}".rstrip(), loc="left", fontsize=10)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n_panels:]:
        ax.axis("off")
    handles, labels = {}, []
    for ax in axes.flat:  # the union of curves over panels, in first-seen order
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    labels = list(handles)
    handles = [handles[lab] for lab in labels]
    fig.legend(handles, labels, loc="lower center", ncol=max(len(labels), 1), frameon=False)
    if spec.title:
        fig.suptitle(spec.title)
    fig.tight_layout(rect=(0, 0.06, 1, 0.97 if spec.title else 1))
    return fig


def save_figure(fig: plt.Figure, stem: Path) -> list[Path]:
    """Write ``stem``.png and ``stem``.pdf; returns the paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    fig.savefig(paths[0], dpi=130)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths
