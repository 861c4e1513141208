"""What a figure of an experiment draws: its panels (:class:`Panel`) and layout (:class:`FigureSpec`),
and the same figure with further methods drawn beside the paper's (:func:`figure_with_methods`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence


@dataclass(frozen=True)
class Panel:
    """One panel of a figure: the mean of ``metric`` for ``method`` against the x axis.

    ``method=None`` keeps every method (use it with ``FigureSpec.curve = "method"`` for one
    curve per method, as in cai Figs 4 and 8); ``where`` restricts this panel's rows; ``x``,
    ``xlabel``, ``logx`` and ``logy`` override the figure's axes for this panel (cai Fig 4 has
    an n panel and an ε panel).

    ``each``: grid axes this panel is repeated over, one panel per combination of their
    values present in the table (in numeric order, ∞ last), its title followed by the value,
    e.g. ``Panel("l2", None, "ℓ2", each=("eps",))`` draws one panel per ε that was run. Use it
    instead of a ``where`` listing the default grid's values, so that ``--set eps=…`` with
    other values draws them rather than failing on a panel without data.

    ``at``: axis → value, a slice at that value or, when the run does not hold it, at the
    nearest value it holds; the value used is added to the title, e.g. cai Fig. 4's
    ``Panel(…, at={"n_items": 350}, title="vs ε")`` draws "vs ε (n = 350)", or "(n = 300)"
    after ``--set n_items=200,300``.
    """

    metric: str
    method: str | None
    ylabel: str
    where: Mapping[str, Sequence] = field(default_factory=dict)
    title: str = ""
    x: str | None = None
    xlabel: str | None = None
    logx: bool | None = None
    logy: bool | None = None
    each: tuple[str, ...] = ()
    at: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if isinstance(self.each, str):
            object.__setattr__(self, "each", (self.each,))


@dataclass(frozen=True)
class FigureSpec:
    """A figure in the paper's layout: panels × (x axis, one curve per value of ``curve``,
    a grid axis or ``"method"``). It filters nothing: the figure draws every value in the
    table (the paper's plotted subset is the experiment's default grid), and an axis it does
    not map splits it into one figure per value (:mod:`dpsim.engine.presentation.panels`).

    Attributes:
        x, xlabel, logx: the x axis; ``logy``: a log y axis (every panel unless it says
            otherwise); ``curve``, ``curve_label``: one curve per value.
        panels: what each panel plots (its ``where`` maps a slice of the grid).
        title: the paper's figure name (the grid actually run is added as a subtitle).
        curve_labels: method → legend label (with ``curve = "method"``).
        symbols: axis → the paper's symbol, e.g. {"n_items": "$n$", "n_users": "$m$"}.
        value_labels: axis → {value → what the figure writes for "axis = value"}, for values
            whose names are internal: a formula or words, e.g. {"scheme":
            {"eps_inv_sqrt": "$\\epsilon \\propto 1/\\sqrt{mL}$"}, "mechanism": {"debiased_rr":
            "debiased RR"}}. Used in legends, panel titles, the split title and the subtitle;
            a value without a label is written "symbol = value". File names and the CSV keep
            the value itself.
        pool: axes the figure deliberately averages over, e.g. the gap Δ when the x axis is
            a metric computed from it (Δ in units of a rate): each (curve, x) point is then
            one value of the pooled axis.
        columns: panels per row (default: one row per panel repeated over 2–4 values with
            ``Panel.each``, else 2).
        shown_with: axis → (another axis, value): the subtitle names the axis only when the
            figure's rows hold that value of the other axis, e.g. a data set's file axis only
            when that data set is drawn ({"uci_file": ("dataset", "uci_student")}).
    """

    x: str
    curve: str
    xlabel: str
    curve_label: str
    panels: tuple[Panel, ...]
    logx: bool = False
    title: str = ""
    curve_labels: Mapping[str, str] = field(default_factory=dict)  # method → legend label
    symbols: Mapping[str, str] = field(default_factory=dict)
    value_labels: Mapping[str, Mapping[Any, str]] = field(default_factory=dict)
    pool: tuple[str, ...] = ()
    logy: bool = False
    columns: int | None = None
    shown_with: Mapping[str, tuple[str, Any]] = field(default_factory=dict)


def figure_with_methods(
    spec: FigureSpec, own: Mapping[str, Any], added: Mapping[str, Any]
) -> FigureSpec:
    """``spec`` drawing the ``added`` methods beside the ``own`` ones (:meth:`Experiment.with_methods`):
    with one curve per method, their legend labels; else, for every added method that reports
    a panel's metric, the same panel for it (titled with its label), once per slice of the grid
    (after the last panel of one of ``own`` that shows that metric there). A panel of every
    method (``method=None``) keeps to the methods it drew. The title names the added methods."""
    import dataclasses

    labels = {name: m.label or name for name, m in added.items()}
    title = f"{spec.title} (with {', '.join(labels.values())})" if spec.title else ""
    if spec.curve == "method":
        return dataclasses.replace(spec, title=title, curve_labels={**spec.curve_labels, **labels})

    def slice_of(panel):
        return (
            panel.metric,
            repr(sorted(panel.where.items())),
            panel.x,
            panel.each,
            repr(sorted(panel.at.items())),
        )

    panels, last, ylabels = [], {}, {}
    for panel in spec.panels:
        if panel.method is None:
            drew = [n for n, m in own.items() if panel.metric in m.columns]
            if any(panel.metric in m.columns for m in added.values()):
                panel = dataclasses.replace(panel, where={**panel.where, "method": drew})
        elif panel.method in own:
            last[slice_of(panel)] = (len(panels), panel)
            ylabels.setdefault(slice_of(panel), set()).add(panel.ylabel)
        panels.append(panel)
    extra = {}
    for key, (index, panel) in last.items():
        # the y label of the own panels when they agree (else it may name their method: the metric's name)
        ylabel = panel.ylabel if len(ylabels[key]) == 1 else panel.metric
        for name, method in added.items():
            if panel.metric in method.columns:
                title = f"{panel.title} — {labels[name]}" if panel.title else labels[name]
                extra.setdefault(index, []).append(
                    dataclasses.replace(panel, method=name, title=title, ylabel=ylabel)
                )
    drawn = [p for i, panel in enumerate(panels) for p in [panel, *extra.get(i, [])]]
    return dataclasses.replace(spec, title=title, panels=tuple(drawn))
