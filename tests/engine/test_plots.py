"""Figures drawn from the data, on synthetic tables: every x value and curve,
ε = ∞ drawn at the axis end, one figure per value of an unmapped axis, an empty panel is an
error, the subtitle comes from the grid, the replicate count and the CI are stated, legends
are in numeric order with ∞ last, unconverged points are marked, and the plotted points are
written as CSV. Then the figures' value labels (words and formulas for internal names), the
count of unconverged fits, every x tick labelled, the layout, and `dpsim plot`'s --where,
--metric and --logy / --no-logy with their one-line errors."""

from __future__ import annotations

import dataclasses
import math
import warnings

import matplotlib.pyplot as plt

import numpy as np
import pandas as pd
import pytest

from dpsim.errors import UsageError
from dpsim.engine import FigureSpec, Panel
from dpsim.engine.presentation.labels import sort_key
from dpsim.engine.presentation.plots import draw_figures, save_figure

INF = math.inf


@pytest.fixture(autouse=True)
def _close_figures():
    """Every figure a test drew is closed after it (pyplot keeps them open)."""
    yield
    plt.close("all")


SPEC = FigureSpec(
    x="p",
    curve="eps",
    xlabel="$p$",
    curve_label="$\\epsilon$",
    panels=(Panel("err", "mle", "error", title="estimation"),),
    title="test figure",
    symbols={"n_items": "$n$", "eps": "$\\epsilon$"},
)


def table(
    link=("logistic",),
    eps=(0.5, INF, 2.0),
    p=(0.1, 0.5, 1.0),
    reps=4,
    converged=True,
    n_items=(300,),
):
    rows = []
    for lk in link:
        for n in n_items:
            for e in eps:
                for x in p:
                    for r in range(reps):
                        rows.append(
                            {
                                "n_items": n,
                                "link": lk,
                                "p": x,
                                "eps": e,
                                "rep": r,
                                "method": "mle",
                                "point": hash((lk, n, e, x)) & 0xFFFFFF,
                                "err": 1.0 / x + (0 if e == INF else 1 / e),
                                "converged": converged if not (x == 0.1 and e == 0.5) else False,
                            }
                        )
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
    spec = FigureSpec(
        x="eps",
        curve="p",
        xlabel="$\\epsilon$",
        curve_label="$p$",
        logx=True,
        panels=(Panel("err", "mle", "error"),),
        title="vs eps",
    )
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
    assert {p.name for p in paths} == {
        f"figure-link={lk}.{ext}" for lk in ("logistic", "probit") for ext in ("png", "pdf", "csv")
    }
    assert "link = probit" in drawn[1].figure._suptitle.get_text()


def test_split_figures_are_drawn_one_at_a_time(tmp_path):
    """A figure split into many files holds one open at a time (pyplot warns past 20 open
    figures): figures are drawn lazily and each is closed when saved, so however many the
    split makes, one more than before is open while each is saved (a split into 3 shows it:
    a figure left open would make it two at the second)."""
    frame = table(link=("l00", "l01", "l02"), reps=2)
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
    assert any("$n$ = 40" in t and "link = logistic" in t for t in texts)  # not a hard-coded 300
    assert any("mean over R = 7 replicates" in t and "95% CI" in t for t in texts)


def test_unconverged_points_are_marked_and_counted_in_the_csv(tmp_path):
    (drawn,) = draw_figures(table(), SPEC)
    marked = [line for line in drawn.figure.axes[0].get_lines() if line.get_marker() == "x"]
    assert marked and np.allclose(marked[0].get_xdata(), [0.1])
    assert [t.get_text() for t in drawn.figure.legends[0].get_texts()][
        -1
    ] == "4 unconverged fits (of 36)"
    csv = pd.read_csv(save_figure(drawn, tmp_path / "f")[2])
    bad = csv[(csv["x"] == 0.1) & (csv["curve"] == 0.5)]
    assert int(bad["unconverged"].iloc[0]) == 4 and int(bad["n"].iloc[0]) == 4
    assert {"panel", "metric", "curve", "x", "mean", "ci_low", "ci_high", "n"} <= set(csv.columns)


def test_a_panel_without_data_is_an_error():
    spec = FigureSpec(
        x="p",
        curve="eps",
        xlabel="p",
        curve_label="eps",
        panels=(Panel("err", "counts", "error of a method that did not run"),),
    )
    with pytest.raises(UsageError, match="has no data"):
        list(draw_figures(table(), spec))


def test_an_axis_that_follows_a_mapped_one_does_not_split_the_figure():
    """cai's automatic k = round(n/4) takes a value per n on the x axis: one figure, not nine."""
    frame = table(n_items=(100, 200), p=(0.5,))
    frame["k"] = frame["n_items"] // 4
    spec = FigureSpec(
        x="n_items", curve="eps", xlabel="n", curve_label="eps", panels=(Panel("err", "mle", "e"),)
    )
    assert [d.split for d in draw_figures(frame, spec)] == [{}]


def test_split_values_with_a_dot_keep_their_own_files(tmp_path):
    frame = table(p=(0.5,))
    frame = pd.concat([frame.assign(gap=0.02), frame.assign(gap=0.05)], ignore_index=True)
    spec = FigureSpec(
        x="p", curve="eps", xlabel="p", curve_label="eps", panels=(Panel("err", "mle", "e"),)
    )
    names = {p.name for d in draw_figures(frame, spec) for p in save_figure(d, tmp_path / "fig")}
    assert {"fig-gap=0.02.png", "fig-gap=0.05.png", "fig-gap=0.02.csv"} <= names
    pooled = FigureSpec(
        x="p",
        curve="eps",
        xlabel="p",
        curve_label="eps",
        panels=(Panel("err", "mle", "e"),),
        pool=("gap",),
    )
    (drawn,) = draw_figures(frame, pooled)
    assert int(drawn.points["n"].iloc[0]) == 8  # both gaps' replicates in each point


def test_a_panel_repeated_over_an_axis_draws_one_panel_per_value_run():
    """``each``: one panel per ε present (∞ last), whatever values were run, so that
    ``--set eps=…`` with values outside the default grid draws them instead of failing."""
    spec = FigureSpec(
        x="p",
        curve="n_items",
        xlabel="p",
        curve_label="n",
        symbols={"eps": "$\\epsilon$"},
        panels=(Panel("err", "mle", "error", title="estimation", each=("eps",)),),
    )
    (drawn,) = draw_figures(table(eps=(3.0, INF, 0.25)), spec)
    titles = [ax.get_title(loc="left") for ax in drawn.figure.axes if ax.has_data()]
    assert titles == [
        "(a) estimation, $\\epsilon$ = 0.25",
        "(b) estimation, $\\epsilon$ = 3",
        "(c) estimation, $\\epsilon$ = ∞",
    ]
    means = drawn.points.groupby("panel")["mean"].max().to_dict()
    assert means == pytest.approx({"a": 1 / 0.1 + 4.0, "b": 1 / 0.1 + 1 / 3.0, "c": 1 / 0.1})


def test_log_y_and_columns():
    spec = FigureSpec(
        x="p",
        curve="n_items",
        xlabel="p",
        curve_label="n",
        logy=True,
        columns=3,
        panels=(
            Panel("err", "mle", "error", each=("eps",)),
            Panel("err", "mle", "error, linear", where={"eps": [2.0]}, logy=False),
        ),
    )
    (drawn,) = draw_figures(table(), spec)
    used = [ax for ax in drawn.figure.axes if ax.has_data()]
    assert [ax.get_yscale() for ax in used] == ["log", "log", "log", "linear"]
    assert len(drawn.figure.axes) == 6  # 2 rows × 3 columns, two left blank


def test_crowded_tick_labels_move_a_line_lower_and_every_value_keeps_its_tick():
    """ε = 0.05, 0.075, 0.1 on a log axis spanning 0.01 … 10: 0.075 would overlap 0.05."""
    spec = FigureSpec(
        x="eps",
        curve="p",
        xlabel="eps",
        curve_label="p",
        logx=True,
        panels=(Panel("err", "mle", "e", where={"p": [0.5]}),),
    )
    (drawn,) = draw_figures(table(eps=(0.01, 0.05, 0.075, 0.1, 1.0, 10.0), p=(0.5,)), spec)
    ax = drawn.figure.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert len(ax.get_xticks()) == 6
    assert labels == ["0.01", "0.05", "\n0.075", "0.1", "1", "10"]


def test_repeated_panels_get_one_row_each_by_default():
    """Two metrics each repeated over the ε values run: one row per metric, one column per ε
    (a --set with two ε values gives 2 × 2, not a row that mixes the metrics)."""
    spec = FigureSpec(
        x="p",
        curve="n_items",
        xlabel="p",
        curve_label="n",
        panels=(Panel("err", "mle", "a", each=("eps",)), Panel("err", "mle", "b", each=("eps",))),
    )
    for eps in ((0.5, 2.0), (0.5, 2.0, INF)):
        (drawn,) = draw_figures(table(eps=eps), spec)
        grid = drawn.figure.axes[0].get_subplotspec().get_gridspec()
        assert (grid.nrows, grid.ncols) == (2, len(eps))


def test_a_panel_at_a_value_uses_the_nearest_value_the_run_holds():
    """cai Fig. 4's panel "vs ε at n = 350" after `--set n_items=200,300` failed with "has no
    data"; ``Panel.at`` slices at the value asked for when present, else at the nearest one,
    and says which in the title."""
    from dpsim.engine.presentation.panels import expand_panels

    spec = FigureSpec(
        x="eps",
        curve="method",
        xlabel="ε",
        curve_label="",
        symbols={"n_items": "n"},
        panels=(Panel("err", None, "error", at={"n_items": 350}, title="vs ε"),),
    )
    table = pd.DataFrame(
        {
            "n_items": [200, 300, 200, 300],
            "eps": [1.0, 1.0, 2.0, 2.0],
            "method": ["m"] * 4,
            "err": [1.0, 2.0, 3.0, 4.0],
        }
    )
    (panel,) = expand_panels(table, spec)
    assert panel.where == {"n_items": [300]} and panel.title == "vs ε (n = 300)"
    exact = pd.concat([table, table.assign(n_items=350)])
    assert expand_panels(exact, spec)[0].where == {"n_items": [350]}
    at_inf = FigureSpec(
        x="n_items",
        curve="method",
        xlabel="n",
        curve_label="",
        panels=(Panel("err", None, "error", at={"eps": math.inf}),),
    )
    with_inf = pd.concat([table, table.assign(eps=math.inf)])
    assert expand_panels(with_inf, at_inf)[0].where == {"eps": [math.inf]}


def test_a_panel_at_values_the_run_does_not_hold_is_left_out_with_a_note():
    """cai-fig8 --set dataset=cems stopped with "panel '(b) Immigration data' has no data";
    such a panel is now left out with a note. Values that were run but left no rows still
    stop the figure, and so does a figure with no panel left."""
    import warnings

    from dpsim.errors import DpsimNote, UsageError
    from dpsim.engine.presentation.panels import expand_panels

    spec = FigureSpec(
        x="eps",
        curve="method",
        xlabel="ε",
        curve_label="",
        panels=(
            Panel("err", None, "error", where={"dataset": ["cems"]}, title="CEMS"),
            Panel("err", None, "error", where={"dataset": ["immigration"]}, title="Immigration"),
        ),
    )
    table = pd.DataFrame(
        {"dataset": ["cems", "cems"], "eps": [1.0, 2.0], "method": ["m", "m"], "err": [1.0, 2.0]}
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        panels = expand_panels(table, spec)
    assert [p.title for p in panels] == ["CEMS"]
    assert any(
        issubclass(w.category, DpsimNote)
        and "'Immigration' not drawn: the run holds no dataset = immigration" in str(w.message)
        for w in caught
    )
    with pytest.raises(UsageError, match="no panel of the figure has data"):
        expand_panels(table.assign(dataset="other"), spec)


# ---------------------------------------------------------------------------------------
# Figures that read like the paper: value labels, the × count, every tick labelled, layout
# ---------------------------------------------------------------------------------------
LABELLED = FigureSpec(
    x="p",
    curve="link",
    xlabel="$p$",
    curve_label="link",
    title="labelled",
    panels=(Panel("err", "mle", "error", each=("eps",)),),
    symbols={"eps": "$\\epsilon$"},
    value_labels={
        "link": {"logistic": "BTL", "probit": "Thurstone"},
        "eps": {INF: "no privacy"},
        "n_items": {300: "$n$ = 300 items"},
    },
)


def test_value_labels_replace_internal_names_in_legend_titles_and_subtitle():
    """A value with a declared label is written as the label (legend, panel titles, the
    subtitle); other values as "symbol = value"; the CSV keeps the values themselves."""
    (drawn,) = draw_figures(table(link=("logistic", "probit")), LABELLED)
    legend = [t.get_text() for t in drawn.figure.legends[0].get_texts()]
    assert legend == ["BTL", "Thurstone", "8 unconverged fits (of 72)"]
    titles = [ax.get_title(loc="left") for ax in drawn.figure.axes if ax.has_data()]
    assert titles == ["(a) $\\epsilon$ = 0.5", "(b) $\\epsilon$ = 2", "(c) no privacy"]
    assert any(t.get_text() == "$n$ = 300 items" for t in drawn.figure.texts)
    assert set(drawn.points["curve"]) == {"logistic", "probit"}


def test_a_split_figure_is_titled_with_the_label_and_named_with_the_value(tmp_path):
    spec = dataclasses.replace(LABELLED, curve="eps", curve_label="$\\epsilon$")
    drawn = list(draw_figures(table(link=("logistic", "probit")), spec))
    assert [d.figure._suptitle.get_text() for d in drawn] == [
        "labelled  [BTL]",
        "labelled  [Thurstone]",
    ]
    assert "no privacy" in [t.get_text() for t in drawn[0].figure.legends[0].get_texts()]
    assert {p.name for p in save_figure(drawn[1], tmp_path / "f")} == {
        "f-link=probit.png",
        "f-link=probit.pdf",
        "f-link=probit.csv",
    }


def test_the_legend_says_how_many_fits_did_not_converge():
    """× marks points with unconverged fits; the legend counts the fits (4 replicates at
    p = 0.1, ε = 0.5), each once even when two panels draw it, of all fits drawn."""
    spec = dataclasses.replace(SPEC, panels=(Panel("err", "mle", "a"), Panel("err", "mle", "b")))
    (drawn,) = draw_figures(table(), spec)
    legend = [t.get_text() for t in drawn.figure.legends[0].get_texts()]
    assert legend[-1] == "4 unconverged fits (of 36)"
    (clean,) = draw_figures(table(converged=True, eps=(2.0,)), SPEC)
    assert not any("unconverged" in t.get_text() for t in clean.figure.legends[0].get_texts())


def test_crowded_tick_labels_alternate_rows_so_that_every_value_is_labelled():
    """nguyen's ε* grid (0.01 … 5, eleven values): 0.075, 0.6 and 1 overlapped their
    neighbours and were left blank; now they go one line lower and every tick is labelled."""
    spec = FigureSpec(
        x="eps",
        curve="p",
        xlabel="eps",
        curve_label="p",
        logx=True,
        panels=(Panel("err", "mle", "e"),),
    )
    grid = (0.01, 0.05, 0.075, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 5.0)
    (drawn,) = draw_figures(table(eps=grid, p=(0.5,), reps=2), spec)
    labels = [t.get_text() for t in drawn.figure.axes[0].get_xticklabels()]
    assert [label.strip() for label in labels] == [
        "0.01",
        "0.05",
        "0.075",
        "0.1",
        "0.2",
        "0.4",
        "0.6",
        "0.8",
        "1",
        "2",
        "5",
    ]
    assert [label for label in labels if label.startswith("\n")] == ["\n0.075", "\n0.6", "\n1"]


def test_labels_too_crowded_for_two_rows_are_left_blank_but_the_last_is_kept():
    from dpsim.engine.presentation.plots import _spaced_labels

    present = [(1.0 + i * 0.001, 1.0 + i * 0.001) for i in range(10)] + [(100.0, 100.0)]
    labels = _spaced_labels(present, logx=True)
    assert labels[0] == "1" and labels[-1] == "100" and "" in labels


def test_the_panels_start_under_the_subtitle_and_a_spare_slot_holds_the_legend():
    """nguyen Fig. 2 (three panels) had an empty band under the title (the title was reserved
    twice) and was 2028 × 572 px; in two columns its fourth slot holds the legend."""
    spec = FigureSpec(
        x="p",
        curve="eps",
        xlabel="$p$",
        curve_label="$\\epsilon$",
        columns=2,
        title="t",
        panels=(Panel("err", "mle", "error", each=("link",)),),
    )
    (drawn,) = draw_figures(table(link=("logistic", "probit", "cauchit")), spec)
    fig = drawn.figure
    width, height = fig.get_size_inches()
    assert 1.0 <= width / height <= 1.6
    top = max(ax.get_position().y1 for ax in fig.axes if ax.has_data())
    assert (1 - top) * height < 1.3  # title, subtitle, panel title: no empty band
    spare = [ax for ax in fig.axes if not ax.has_data()]
    assert len(spare) == 1 and spare[0].get_legend() is not None and not fig.legends


def test_a_long_title_is_broken_into_lines_that_fit_a_one_panel_figure():
    """A split one-panel figure with a long title (nguyen Fig. 2 at one data set: its title
    ran past both edges) breaks it between words: every line inside the figure, the subtitle
    under the title's last line, and the panel under the subtitle."""
    spec = dataclasses.replace(
        SPEC, title="nguyen Fig. 2: education data sets, a figure name long enough to wrap"
    )
    for drawn in draw_figures(table(link=("logistic", "probit")), spec):
        fig = drawn.figure
        renderer = fig.canvas.get_renderer()
        title = fig._suptitle
        box = title.get_window_extent(renderer)
        assert "\n" in title.get_text() and "[" in title.get_text()
        assert 0 <= box.x0 and box.x1 <= fig.get_figwidth() * fig.dpi
        subtitle = next(t for t in fig.texts if t.get_text().startswith("$n$"))
        under = subtitle.get_window_extent(renderer)
        assert under.y1 <= box.y0 + 1  # the subtitle under the title
        panel_top = max(ax.get_window_extent(renderer).y1 for ax in fig.axes if ax.has_data())
        assert panel_top <= under.y0


# ---------------------------------------------------------------------------------------
# dpsim plot --where, --metric, --logy / --no-logy
# ---------------------------------------------------------------------------------------
STUDY = """
from dpsim.engine import Experiment, FigureSpec, Method, Panel
from dpsim.engine.definition import axes


def _fn(key, ctx):
    return {"err": 0.0}


EXPERIMENTS = [Experiment(
    name="plot-options", title="plot options",
    axes={"n_items": [300], "mechanism": ["debiased_rr", "laplace"], "p": [0.1, 0.5, 1.0], "eps": [0.5, 2.0, float("inf")]},
    shape_axes=("n_items",), analysis_axes=("eps", "mechanism"), truth=lambda key, shape: None,
    generate=lambda key, shape, truth, data: None, reps=4,
    methods={"mle": Method(_fn, ("err", "l2"), {"converged": "bool", "iterations": "int"}),
             "counts": Method(_fn, ("err",))},
    axis_types={"mechanism": axes.choice("debiased_rr", "laplace")},
    figure=FigureSpec(x="p", curve="eps", xlabel="$p$", curve_label="$\\\\epsilon$", title="plot options",
                      panels=(Panel("err", "mle", "error", title="estimation"),),
                      value_labels={"mechanism": {"debiased_rr": "debiased RR", "laplace": "Laplace"}}))]
"""


@pytest.fixture
def run_dir(tmp_path):
    """A run directory of a study file's experiment (rows written directly, nothing run):
    mechanism ∈ {debiased_rr, laplace} × p × ε, methods mle (err, l2, a solver) and counts (err)."""
    import json

    import pyarrow as pa

    from dpsim.engine.storage import store

    study = tmp_path / "study.py"
    study.write_text(STUDY)
    out = tmp_path / "run"
    (out / store.PARTS).mkdir(parents=True)
    rows = table(link=("logistic",))
    rows = pd.concat(
        [rows.assign(mechanism="debiased_rr"), rows.assign(mechanism="laplace")], ignore_index=True
    )
    rows = rows.drop(columns="link").assign(iterations=3, l2=rows["err"] * 2)
    counts = rows.assign(method="counts", l2=np.nan, converged=pd.NA, iterations=pd.NA)
    frame = pd.concat([rows, counts], ignore_index=True)
    frame["iterations"] = frame["iterations"].astype("Int64")
    arrow = pa.Table.from_pandas(frame, preserve_index=False)
    store.write_part(out, store.mark_columns(arrow, ["err", "l2", "converged", "iterations"]))
    (out / store.MANIFEST).write_text(
        json.dumps(
            {"experiment": "plot-options", "source": f"{study}:plot-options", "complete": True}
        )
    )
    return out


def plot(args, capsys, monkeypatch):
    """``dpsim plot ARGS`` in this process: (exit status, stderr)."""
    from dpsim.cli import main

    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # main() installs its own
    status = main(["plot", *map(str, args)])
    return status, capsys.readouterr().err


def test_plot_draws_the_declared_figure_split_by_mechanism_with_its_labels(
    run_dir, capsys, monkeypatch
):
    status, err = plot([run_dir], capsys, monkeypatch)
    assert status == 0, err
    assert {p.name for p in run_dir.glob("figure*.png")} == {
        "figure-mechanism=debiased_rr.png",
        "figure-mechanism=laplace.png",
    }


def test_plot_where_draws_only_the_rows_asked_for(run_dir, capsys, monkeypatch):
    to = run_dir.parent / "where"
    status, err = plot(
        [run_dir, "--where", "mechanism=laplace", "--where", "eps=0.5,inf", "--to", to],
        capsys,
        monkeypatch,
    )
    assert status == 0, err
    points = pd.read_csv(f"{to}.csv")  # one mechanism left: not split
    assert set(points["curve"]) == {0.5, INF} and "mechanism" not in points
    assert not list(run_dir.glob("figure*"))


@pytest.mark.parametrize(
    "option, message",
    [
        (
            "foo=1",
            "--where foo: this run has no axis 'foo' (axes: n_items, p, eps, mechanism, method)",
        ),
        ("eps=7", "--where eps=7: the run holds no such value (eps: 0.5, 2, ∞)"),
        (
            "mechanism=gaussian",
            "--where mechanism=gaussian: the run holds no such value (mechanism: debiased_rr, laplace)",
        ),
        ("eps", "malformed --where 'eps': expected AXIS=V1,V2,..."),
        ("eps=0.5,", "malformed --where 'eps=0.5,': expected AXIS=V1,V2,..."),
    ],
)
def test_plot_where_with_an_unknown_axis_or_value_is_a_one_line_error_and_writes_nothing(
    run_dir, capsys, monkeypatch, option, message
):
    before = sorted(p.name for p in run_dir.parent.rglob("*"))
    status, err = plot([run_dir, "--where", option], capsys, monkeypatch)
    assert status == 2 and err == f"dpsim: error: {message}\n"
    assert sorted(p.name for p in run_dir.parent.rglob("*")) == before


def test_plot_where_twice_on_one_axis_is_an_error(run_dir, capsys, monkeypatch):
    status, err = plot([run_dir, "--where", "eps=0.5", "--where", "eps=2"], capsys, monkeypatch)
    assert status == 2 and err == "dpsim: error: --where eps given twice\n"


def test_plot_metric_draws_one_metric_for_every_method_that_reports_it(
    run_dir, capsys, monkeypatch
):
    to = run_dir.parent / "metric"
    status, err = plot(
        [run_dir, "--metric", "err", "--where", "mechanism=laplace", "--to", to],
        capsys,
        monkeypatch,
    )
    assert status == 0, err
    points = pd.read_csv(f"{to}.csv")
    assert set(points["metric"]) == {"err"}
    assert points.groupby("panel")["method"].first().to_dict() == {"a": "counts", "b": "mle"}
    status, err = plot(
        [run_dir, "--metric", "l2", "--where", "mechanism=laplace", "--to", to], capsys, monkeypatch
    )
    assert status == 0, err
    points = pd.read_csv(f"{to}.csv")
    assert set(points["metric"]) == {"l2"} and set(points["method"]) == {
        "mle"
    }  # counts reports no l2
    assert points["mean"].max() == pytest.approx(2 * (1 / 0.1 + 1 / 0.5))


def test_plot_metric_unknown_is_a_one_line_error_and_writes_nothing(run_dir, capsys, monkeypatch):
    before = sorted(p.name for p in run_dir.parent.rglob("*"))
    status, err = plot([run_dir, "--metric", "linf"], capsys, monkeypatch)
    assert status == 2
    assert (
        err
        == "dpsim: error: --metric linf: this run has no metric 'linf' (metrics: err, iterations, l2)\n"
    )
    assert sorted(p.name for p in run_dir.parent.rglob("*")) == before


def test_metric_spec_keeps_the_declared_slices_as_repeated_panels():
    """A one-metric figure repeats its panels over the axes the declared panels slice (ε
    here), so that it is split no more than the declared figure."""
    from dpsim.engine.presentation.panels import metric_spec

    spec = FigureSpec(
        x="p",
        curve="method",
        xlabel="p",
        curve_label="",
        curve_labels={"mle": "MLE"},
        panels=(
            Panel("err", None, "error", where={"eps": [0.5]}),
            Panel("err", None, "error", where={"eps": [2.0]}),
        ),
    )
    frame = table()
    frame["l2"] = frame["err"]
    frame.attrs["method_columns"] = ["err", "converged", "l2"]
    one = metric_spec(frame, spec, "l2")
    assert one.panels == (Panel("l2", None, "l2", each=("eps",)),)
    (drawn,) = draw_figures(frame, one)
    assert set(drawn.points["panel"]) == {"a", "b", "c"}


def test_plot_logy_and_no_logy_override_every_panel(run_dir, capsys, monkeypatch):
    from dpsim.engine.presentation.panels import with_logy

    spec = FigureSpec(
        x="p",
        curve="eps",
        xlabel="p",
        curve_label="eps",
        logy=True,
        panels=(Panel("err", "mle", "a"), Panel("err", "mle", "b", logy=False)),
    )
    scales = {
        flag: [
            ax.get_yscale()
            for ax in next(draw_figures(table(), with_logy(spec, flag))).figure.axes
            if ax.has_data()
        ]
        for flag in (True, False, None)
    }
    assert scales == {True: ["log", "log"], False: ["linear", "linear"], None: ["log", "linear"]}
    for flag in ("--logy", "--no-logy"):
        status, err = plot(
            [run_dir, flag, "--to", run_dir.parent / flag.strip("-")], capsys, monkeypatch
        )
        assert status == 0, err
    assert (run_dir.parent / "logy-mechanism=laplace.png").exists()
    status, err = plot([run_dir, "--logy=yes"], capsys, monkeypatch)
    assert status == 2 and "--logy" in err


def test_named_curves_follow_the_order_their_labels_are_declared_in():
    spec = dataclasses.replace(
        LABELLED, value_labels={"link": {"probit": "Thurstone", "logistic": "BTL"}}
    )
    (drawn,) = draw_figures(table(link=("logistic", "probit")), spec)
    assert [t.get_text() for t in drawn.figure.legends[0].get_texts()][:2] == ["Thurstone", "BTL"]


def test_an_axis_shown_with_a_value_is_named_only_when_that_value_is_drawn():
    """nguyen Fig. 2's file axes: ``--set dataset=lsat`` named the UCI and Three Grades files
    under a figure that drew neither; with the tied value among the rows they are named."""
    spec = dataclasses.replace(SPEC, shown_with={"link": ("n_items", 40)})
    (drawn,) = draw_figures(table(n_items=(300,)), spec)
    assert not any("link" in t.get_text() for t in drawn.figure.texts)
    (drawn,) = draw_figures(table(n_items=(40,)), spec)
    assert any("link = logistic" in t.get_text() for t in drawn.figure.texts)
    (drawn,) = draw_figures(table(n_items=(300,)), SPEC)  # untied: named
    assert any("link = logistic" in t.get_text() for t in drawn.figure.texts)


def test_a_long_subtitle_is_broken_into_lines_at_commas():
    frame = table(p=(0.5,), reps=2)
    for i in range(12):
        frame[f"setting_{i}"] = f"a fairly long value {i}"
    (drawn,) = draw_figures(frame, dataclasses.replace(SPEC, x="eps", curve="p"))
    (subtitle,) = [t.get_text() for t in drawn.figure.texts if "setting_0" in t.get_text()]
    lines = subtitle.split("\n")
    assert len(lines) > 2 and all(line.endswith(",") for line in lines[:-1])
    assert subtitle.replace(",\n", ", ").count("setting_") == 12


def test_a_legend_too_wide_for_the_figure_takes_more_rows():
    """nguyen Fig. 3's legend (four methods and the × count) ran off both sides of the figure."""
    spec = dataclasses.replace(SPEC, curve_label="a rather long curve label for this test")
    (drawn,) = draw_figures(table(eps=(0.5, 1.0, 2.0, 4.0, INF)), spec)
    fig = drawn.figure
    (legend,) = fig.legends
    fig.canvas.draw()
    box = legend.get_window_extent()
    rows = {round(t.get_window_extent().y0) for t in legend.get_texts()}
    assert len(rows) > 1 and 0 <= box.x0 and box.x1 <= fig.get_figwidth() * fig.dpi
    assert (
        box.y0 > 0
        and box.y1 < min(ax.get_position().y0 for ax in fig.axes) * fig.get_figheight() * fig.dpi
    )


def test_points_a_log_y_axis_cannot_show_are_named_in_a_note():
    from dpsim.errors import DpsimNote
    from dpsim.engine.presentation.panels import with_logy

    frame = table()
    frame["err"] = frame["err"] - 3.0  # some means ≤ 0
    with pytest.warns(
        DpsimNote, match=r"panel '\(a\) estimation': \d+ points ≤ 0 are not drawn on its log y axis"
    ):
        list(draw_figures(frame, with_logy(SPEC, True)))


def test_prepare_loads_the_mathtext_parser_and_draws_nothing():
    """plots.prepare (what `dpsim run` calls in a background thread while it computes) leaves
    the mathtext parser built and no figure open; calling it again is harmless."""
    from matplotlib import mathtext
    from dpsim.engine.presentation.plots import prepare

    before = plt.get_fignums()
    prepare()
    prepare()
    assert mathtext.MathTextParser._parser is not None and plt.get_fignums() == before


def test_which_rows_and_panels_are_drawn_is_decided_without_matplotlib():
    """panels and labels (which rows, panels and text a figure has) load no matplotlib: a
    fresh interpreter importing them has none loaded."""
    import subprocess
    import sys

    code = (
        "import sys, dpsim.engine.presentation.panels, dpsim.engine.presentation.labels; "
        "print('matplotlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
