"""The shared vocabulary across papers (issue 23, item 2): ``k`` is the top-k size only and is
stored as the resolved integer in every paper; chowdhury's number of actions is ``n_actions``
and its reading of the paper's SGD step sizes is ``mode`` (the one word for a paper-versus-
correct reading), as is xu's ridge λ rule (formerly ``lambda_rule``); a renamed axis keeps its
random streams (``Experiment.stream_names``, and xu's ``stream_point`` for its resolved ``k``)
and an old name given to ``--set`` is answered with the new one."""

from __future__ import annotations

import pytest

from dpsim.errors import UsageError
from dpsim.engine.definition.axes import VOCABULARY
from dpsim.engine.definition.grid import expand_grid
from dpsim.engine.definition.ids import stable_id
from dpsim.engine.registry import installed

CATALOGUE = installed()
EXPERIMENTS = CATALOGUE.experiments
WITH_K = sorted(name for name, e in EXPERIMENTS.items() if "k" in e.axes)
XU = sorted(name for name, paper in CATALOGUE.paper_of["experiments"].items() if paper == "xu")
# xu's experiments with its estimator (the calibration experiments of experiments/xu/figures/design.py have no λ rule)
XU_ESTIMATING = [name for name in XU if "m_est" in EXPERIMENTS[name].methods]


def test_k_is_the_top_k_size_and_n_actions_the_number_of_actions():
    assert "top-k" in VOCABULARY["k"].doc and "resolved integer" in VOCABULARY["k"].doc
    assert "number of actions" in VOCABULARY["n_actions"].doc
    assert VOCABULARY["n_actions"]("n_actions", 4) == 4
    with pytest.raises(UsageError, match="n_actions=1"):
        VOCABULARY["n_actions"]("n_actions", 1)
    for name in ("chowdhury-rates-k", "chowdhury-krr-release"):
        assert "n_actions" in EXPERIMENTS[name].axes and "k" not in EXPERIMENTS[name].axes


def test_mode_is_the_one_word_for_a_paper_versus_correct_reading():
    """No experiment has an axis under a former name of ``mode``; every xu experiment reads
    its ridge λ rule from ``mode`` (g_over_l by default, paper the literal formula); the
    calibration experiments, which fit nothing, have no λ rule."""
    for name, experiment in EXPERIMENTS.items():
        assert not {"schedule", "lambda_rule"} & set(experiment.axes), name
    assert len(XU_ESTIMATING) >= 10
    assert EXPERIMENTS["xu-lambda-rule"].axes["mode"] == ["g_over_l", "paper"]
    assert all(
        EXPERIMENTS[name].axes["mode"] == ["g_over_l"]
        for name in XU_ESTIMATING
        if name != "xu-lambda-rule"
    )
    assert EXPERIMENTS["chowdhury-fig1-sgd"].axes["mode"] == ["literal", "theory", "averaged"]


def test_every_paper_stores_k_as_the_resolved_integer_and_no_top_k_column():
    papers = {name.split("-")[0] for name in WITH_K}
    assert {"cai", "xu", "nguyen"} <= papers
    for name in WITH_K:
        experiment = EXPERIMENTS[name]
        assert "top_k" not in experiment.derived_names(), name
        shape_axes = [a for a in experiment.shape_axes if experiment.axes[a] and a != "k"]
        small = {a: [experiment.axes[a][0]] for a in shape_axes}  # one shape point: fast
        shapes = expand_grid(experiment, small).shapes
        assert all(type(shape["k"]) is int and shape["k"] >= 1 for shape in shapes), (name, shapes)


def test_xu_auto_k_is_resolved_and_an_explicit_k_kept():
    experiment = EXPERIMENTS["xu-fig2"]
    assert expand_grid(experiment, {"n_items": [10]}).shapes[0]["k"] == 5  # auto: m//2
    assert expand_grid(experiment, {"n_items": [10], "k": [3]}).shapes[0]["k"] == 3


def test_a_renamed_axis_is_keyed_under_its_old_name():
    rates_k = EXPERIMENTS["chowdhury-rates-k"]
    shape = {
        "dim": 5,
        "n_samples": 50_000,
        "n_actions": 4,
        "design": "theory",
        "features": "direct",
    }
    old = {**{a: v for a, v in shape.items() if a != "n_actions"}, "k": 4}
    assert rates_k.point_id(shape) == stable_id(old)
    assert rates_k.point_id(shape) != stable_id(shape)
    sgd = EXPERIMENTS["chowdhury-fig1-sgd"]
    assert sgd.point_id({"eps": 1.0, "mode": "literal"}) == stable_id(
        {"eps": 1.0, "schedule": "literal"}
    )
    fig7 = EXPERIMENTS["xu-fig7"]
    assert fig7.point_id({"ratings_file": "stand-in"}) == stable_id({"ratings": "stand-in"})
    for name in XU_ESTIMATING:
        point = {"eps": 3.0, "mechanism": "debiased_rr", "mode": "paper"}
        assert EXPERIMENTS[name].point_id(point) == stable_id(
            {"eps": 3.0, "mechanism": "debiased_rr", "lambda_rule": "paper"}
        ), name


def test_xu_keys_its_resolved_k_as_it_keyed_auto_and_top_k():
    """xu stored k = auto beside top_k; its stream_point keys the resolved k the same way."""
    fig2 = EXPERIMENTS["xu-fig2"]
    shape = expand_grid(fig2, {"n_items": [10]}).shapes[0]
    assert fig2.point_id(shape) == stable_id({"n_items": 10, "k": "auto", "top_k": 5})
    assert fig2.point_id({"n_items": 10, "k": 3}) == stable_id({"n_items": 10, "k": 3, "top_k": 3})
    fig7 = EXPERIMENTS["xu-fig7"]
    shape = {"ratings_file": "stand-in", "n_items": 40, "k": 10, "source": "s", "n_total": 610}
    assert fig7.point_id(shape) == stable_id(
        {
            "ratings": "stand-in",
            "n_items": 40,
            "k": "auto",
            "top_k": 10,
            "source": "s",
            "n_total": 610,
        }
    )


@pytest.mark.parametrize(
    "name, old, new",
    [
        ("chowdhury-rates-k", "k", "n_actions"),
        ("chowdhury-krr-release", "k", "n_actions"),
        ("chowdhury-fig1-sgd", "schedule", "mode"),
        ("xu-fig7", "ratings", "ratings_file"),
        ("xu-lambda-rule", "lambda_rule", "mode"),
        ("xu-fig7", "lambda_rule", "mode"),
    ],
)
def test_an_old_axis_name_is_answered_with_the_new_one(name, old, new):
    with pytest.raises(
        UsageError, match=f"unknown axis '{old}' \\(did you mean '{new}', its new name\\?\\)"
    ):
        expand_grid(EXPERIMENTS[name], {old: [4]})
