"""Figures drawn from the data, on synthetic tables: every x value and curve,
ε = ∞ drawn at the axis end, one figure per value of an unmapped axis, an empty panel is an
error, the subtitle comes from the grid, the replicate count and the CI are stated, legends
are in numeric order with ∞ last, unconverged points are marked, and the plotted points are
written as CSV."""
from __future__ import annotations

import math
import warnings

import matplotlib.pyplot as plt

import numpy as np
import pandas as pd
import pytest

from dpsim.errors import UsageError
from dpsim.experiment import FigureSpec, Panel
from dpsim.plots import draw_figures, save_figure, sort_key

INF = math.inf
SPEC = FigureSpec(x="p", curve="eps", xlabel="$p$", curve_label="$\\epsilon$",
                  panels=(Panel("err", "mle", "error", title="estimation"),),
                  title="test figure", symbols={"n_items": "$n$", "eps": "$\\epsilon$"})


def table(link=("logistic",), eps=(0.5, INF, 2.0), p=(0.1, 0.5, 1.0), reps=4, converged=True, n_items=(300,)):
    rows = []
    for lk in link:
        for n in n_items:
            for e in eps:
                for x in p:
                    for r in range(reps):
                        rows.append({"n_items": n, "link": lk, "p": x, "eps": e, "rep": r, "method": "mle",
                                     "point": hash((lk, n, e, x)) & 0xFFFFFF, "err": 1.0 / x + (0 if e == INF else 1 / e),
                                     "converged": converged if not (x == 0.1 and e == 0.5) else False})
    frame = pd.DataFrame(rows)
    frame["converged"] = frame["converged"].astype("boolean")
    frame.attrs["method_columns"] = ["err", "converged"]
    return frame


def test_every_value_and_curve_is_drawn_in_numeric_order_with_inf_last():
    (drawn,) = draw_figures(table(), SPEC)
    ax = drawn.figure.axes[0]
    labels = [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert labels == ["$\\epsilon$ = 0.5", "$\\epsilon$ = 2", "$\\epsilon$ = ∞"]
    assert sorted(drawn.points["x"].unique()) == [0.1, 0.5, 1.0]
    assert set(drawn.points["curve"]) == {0.5, 2.0, INF}
    assert sorted([0.5, INF, 2.0, "b"], key=sort_key) == [0.5, 2.0, INF, "b"]


def test_inf_on_the_x_axis_is_drawn_at_the_end_with_its_own_tick():
    spec = FigureSpec(x="eps", curve="p", xlabel="$\\epsilon$", curve_label="$p$", logx=True,
                      panels=(Panel("err", "mle", "error"),), title="vs eps")
    (drawn,) = draw_figures(table(), spec)
    ax = drawn.figure.axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["0.5", "2", "∞"]
    positions = ax.get_xticks()
    assert positions[-1] > positions[-2] > positions[0]
    assert INF in set(drawn.points["x"])


def test_an_unmapped_axis_splits_the_figure_instead_of_pooling(tmp_path):
    drawn = list(draw_figures(table(link=("logistic", "probit")), SPEC))
    assert [d.split for d in drawn] == [{"link": "logistic"}, {"link": "probit"}]
    paths = [p for d in drawn for p in save_figure(d, tmp_path / "figure")]
    assert {p.name for p in paths} == {f"figure-link={lk}.{ext}" for lk in ("logistic", "probit")
                                       for ext in ("png", "pdf", "csv")}
    assert "link = probit" in drawn[1].figure._suptitle.get_text()


def test_split_figures_are_drawn_one_at_a_time(tmp_path):
    """A figure split into many files holds one open at a time (no pyplot 'more than 20
    figures' warning on a split into 24)."""
    frame = table(link=tuple(f"l{i:02d}" for i in range(24)), reps=2)
    before = len(plt.get_fignums())
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for drawn in draw_figures(frame, SPEC):
            assert len(plt.get_fignums()) == before + 1
            save_figure(drawn, tmp_path / "fig")
    assert len(plt.get_fignums()) == before


def test_subtitle_is_the_grid_actually_run_and_footer_states_replicates_and_ci():
    (drawn,) = draw_figures(table(n_items=(40,), reps=7), SPEC)
    texts = [t.get_text() for t in drawn.figure.texts]
    assert any("$n$ = 40" in t and "link = logistic" in t for t in texts)       # not a hard-coded 300
    assert any("mean over R = 7 replicates" in t and "95% CI" in t for t in texts)


def test_unconverged_points_are_marked_and_counted_in_the_csv(tmp_path):
    (drawn,) = draw_figures(table(), SPEC)
    marked = [line for line in drawn.figure.axes[0].get_lines() if line.get_marker() == "x"]
    assert marked and np.allclose(marked[0].get_xdata(), [0.1])
    assert any("did not converge" in t.get_text() for t in drawn.figure.texts)
    csv = pd.read_csv(save_figure(drawn, tmp_path / "f")[2])
    bad = csv[(csv["x"] == 0.1) & (csv["curve"] == 0.5)]
    assert int(bad["unconverged"].iloc[0]) == 4 and int(bad["n"].iloc[0]) == 4
    assert {"panel", "metric", "curve", "x", "mean", "ci_low", "ci_high", "n"} <= set(csv.columns)


def test_a_panel_without_data_is_an_error():
    spec = FigureSpec(x="p", curve="eps", xlabel="p", curve_label="eps",
                      panels=(Panel("err", "counts", "error of a method that did not run"),))
    with pytest.raises(UsageError, match="has no data"):
        list(draw_figures(table(), spec))


def test_an_axis_that_follows_a_mapped_one_does_not_split_the_figure():
    """cai's automatic k = round(n/4) takes a value per n on the x axis: one figure, not nine."""
    frame = table(n_items=(100, 200), p=(0.5,))
    frame["k"] = frame["n_items"] // 4
    spec = FigureSpec(x="n_items", curve="eps", xlabel="n", curve_label="eps", panels=(Panel("err", "mle", "e"),))
    assert [d.split for d in draw_figures(frame, spec)] == [{}]


def test_split_values_with_a_dot_keep_their_own_files(tmp_path):
    frame = table(p=(0.5,))
    frame = pd.concat([frame.assign(gap=0.02), frame.assign(gap=0.05)], ignore_index=True)
    spec = FigureSpec(x="p", curve="eps", xlabel="p", curve_label="eps", panels=(Panel("err", "mle", "e"),))
    names = {p.name for d in draw_figures(frame, spec) for p in save_figure(d, tmp_path / "fig")}
    assert {"fig-gap=0.02.png", "fig-gap=0.05.png", "fig-gap=0.02.csv"} <= names
    pooled = FigureSpec(x="p", curve="eps", xlabel="p", curve_label="eps", panels=(Panel("err", "mle", "e"),),
                        pool=("gap",))
    (drawn,) = draw_figures(frame, pooled)
    assert int(drawn.points["n"].iloc[0]) == 8            # both gaps' replicates in each point


def test_a_panel_repeated_over_an_axis_draws_one_panel_per_value_run():
    """``each``: one panel per ε present (∞ last), whatever values were run, so that
    ``--set eps=…`` with values outside the default grid draws them instead of failing."""
    spec = FigureSpec(x="p", curve="n_items", xlabel="p", curve_label="n", symbols={"eps": "$\\epsilon$"},
                      panels=(Panel("err", "mle", "error", title="estimation", each=("eps",)),))
    (drawn,) = draw_figures(table(eps=(3.0, INF, 0.25)), spec)
    titles = [ax.get_title(loc="left") for ax in drawn.figure.axes if ax.has_data()]
    assert titles == ["(a) estimation, $\\epsilon$ = 0.25", "(b) estimation, $\\epsilon$ = 3",
                      "(c) estimation, $\\epsilon$ = ∞"]
    means = drawn.points.groupby("panel")["mean"].max().to_dict()
    assert means == pytest.approx({"a": 1 / 0.1 + 4.0, "b": 1 / 0.1 + 1 / 3.0, "c": 1 / 0.1})


def test_log_y_and_columns():
    spec = FigureSpec(x="p", curve="n_items", xlabel="p", curve_label="n", logy=True, columns=3,
                      panels=(Panel("err", "mle", "error", each=("eps",)),
                              Panel("err", "mle", "error, linear", where={"eps": [2.0]}, logy=False)))
    (drawn,) = draw_figures(table(), spec)
    used = [ax for ax in drawn.figure.axes if ax.has_data()]
    assert [ax.get_yscale() for ax in used] == ["log", "log", "log", "linear"]
    assert len(drawn.figure.axes) == 6                       # 2 rows × 3 columns, two left blank


def test_crowded_tick_labels_are_thinned_but_every_value_keeps_its_tick():
    """ε = 0.05, 0.075, 0.1 on a log axis spanning 0.01 … 10: the middle labels would overlap."""
    spec = FigureSpec(x="eps", curve="p", xlabel="eps", curve_label="p", logx=True,
                      panels=(Panel("err", "mle", "e", where={"p": [0.5]}),))
    (drawn,) = draw_figures(table(eps=(0.01, 0.05, 0.075, 0.1, 1.0, 10.0), p=(0.5,)), spec)
    ax = drawn.figure.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert len(ax.get_xticks()) == 6
    assert labels[0] == "0.01" and labels[-1] == "10" and labels[4] == "1"
    assert labels[1:4].count("") >= 1 and "0.05" in labels


def test_repeated_panels_get_one_row_each_by_default():
    """Two metrics each repeated over the ε values run: one row per metric, one column per ε
    (a --set with two ε values gives 2 × 2, not a row that mixes the metrics)."""
    spec = FigureSpec(x="p", curve="n_items", xlabel="p", curve_label="n",
                      panels=(Panel("err", "mle", "a", each=("eps",)), Panel("err", "mle", "b", each=("eps",))))
    for eps in ((0.5, 2.0), (0.5, 2.0, INF)):
        (drawn,) = draw_figures(table(eps=eps), spec)
        grid = drawn.figure.axes[0].get_subplotspec().get_gridspec()
        assert (grid.nrows, grid.ncols) == (2, len(eps))


def test_a_panel_at_a_value_uses_the_nearest_value_the_run_holds():
    """cai Fig. 4's panel "vs ε at n = 350" after `--set n_items=200,300` failed with "has no
    data"; ``Panel.at`` slices at the value asked for when present, else at the nearest one,
    and says which in the title."""
    from dpsim.plots import expand_panels

    spec = FigureSpec(x="eps", curve="method", xlabel="ε", curve_label="", symbols={"n_items": "n"},
                      panels=(Panel("err", None, "error", at={"n_items": 350}, title="vs ε"),))
    table = pd.DataFrame({"n_items": [200, 300, 200, 300], "eps": [1.0, 1.0, 2.0, 2.0], "method": ["m"] * 4,
                          "err": [1.0, 2.0, 3.0, 4.0]})
    (panel,) = expand_panels(table, spec)
    assert panel.where == {"n_items": [300]} and panel.title == "vs ε (n = 300)"
    exact = pd.concat([table, table.assign(n_items=350)])
    assert expand_panels(exact, spec)[0].where == {"n_items": [350]}
    at_inf = FigureSpec(x="n_items", curve="method", xlabel="n", curve_label="",
                        panels=(Panel("err", None, "error", at={"eps": math.inf}),))
    with_inf = pd.concat([table, table.assign(eps=math.inf)])
    assert expand_panels(with_inf, at_inf)[0].where == {"eps": [math.inf]}


def test_a_panel_at_values_the_run_does_not_hold_is_left_out_with_a_note():
    """cai-fig8 --set dataset=cems stopped with "panel '(b) Immigration data' has no data";
    such a panel is now left out with a note. Values that were run but left no rows still
    stop the figure, and so does a figure with no panel left."""
    import warnings

    from dpsim.errors import DpsimNote, UsageError
    from dpsim.plots import expand_panels

    spec = FigureSpec(x="eps", curve="method", xlabel="ε", curve_label="",
                      panels=(Panel("err", None, "error", where={"dataset": ["cems"]}, title="CEMS"),
                              Panel("err", None, "error", where={"dataset": ["immigration"]}, title="Immigration")))
    table = pd.DataFrame({"dataset": ["cems", "cems"], "eps": [1.0, 2.0], "method": ["m", "m"], "err": [1.0, 2.0]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        panels = expand_panels(table, spec)
    assert [p.title for p in panels] == ["CEMS"]
    assert any(issubclass(w.category, DpsimNote) and "'Immigration' not drawn: the run holds no dataset = immigration"
               in str(w.message) for w in caught)
    with pytest.raises(UsageError, match="no panel of the figure has data"):
        expand_panels(table.assign(dataset="other"), spec)
