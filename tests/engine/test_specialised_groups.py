"""A step's program is specialised only on the string analysis values its traced code reads
(dpsim.engine.execution.program.compiled_chunk_fn): a string axis that only host-side derived
values read shares one copy of the methods, and the results are those of running each value
on its own."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import pandas as pd
import pytest

from dpsim.errors import UsageError

from dpsim.engine import Derived, Method
from dpsim.engine.definition import axes
from dpsim.engine.execution import executors
from dpsim.engine.storage import store
from dpsim.engine.execution.program import merge_groups
from dpsim.engine.execution.runner import run_experiment
from dpsim.errors import DpsimWarning
from dpsim.estimators import top_k_mask
from dpsim.metrics import topk_metrics
from dpsim.models import true_top_k_mask, win_counts
from toy import AXIS_TYPES, K, METHODS, borda, noise_scale, toy_experiment

KEY = ["point", "rep", "method"]
CONTINUOUS = ["l2", "linf", "log_rel_l2", "log_rel_linf"]
LABELS = ["small", "medium", "large"]
MULTIPLIER = {"small": 0.5, "medium": 1.0, "large": 2.0}


def scaled_noise(point: dict) -> dict:
    """Host-side: the mechanism's noise scale times the label's multiplier."""
    return {"noise_scale": noise_scale(point)["noise_scale"] * MULTIPLIER[point["label"]]}


def doubled_borda(key, ctx):
    """borda (tests/toy.py), whose gaussian noise is doubled when ``variant`` (read only
    then) is "double"."""
    k_noise, k_tie = jax.random.split(key)
    counts = win_counts(ctx.sample["W"])
    if ctx.analysis["mechanism"] == "laplace":
        noise = jax.random.laplace(k_noise, counts.shape)
    else:
        noise = (2.0 if ctx.analysis["variant"] == "double" else 1.0) * jax.random.normal(
            k_noise, counts.shape
        )
    noisy = counts + ctx.analysis["noise_scale"] * noise
    return topk_metrics(top_k_mask(k_tie, noisy, K), true_top_k_mask(ctx.sample["theta"], K))


def iterating_borda(key, ctx):
    """borda after copying the analysis values (iteration reads every key)."""
    return borda(key, ctx._replace(analysis=dict(ctx.analysis)))


def experiment(methods, **grid):
    """The toy with a ``label`` string axis that only the derived noise scale reads, and a
    ``variant`` string axis."""
    base = toy_experiment("groups", reps=3, methods=methods, n_items=[8], p=[0.5], eps=[1.0])
    return dataclasses.replace(
        base,
        axes={**base.axes, "label": ["small", "large"], "variant": ["plain", "double"], **grid},
        analysis_axes=("eps", "mechanism", "delta", "label", "variant"),
        axis_types={
            **AXIS_TYPES,
            "label": axes.choice(*LABELS),
            "variant": axes.choice("plain", "double"),
        },
        derived=(Derived(("noise_scale",), scaled_noise, level="analysis", doc="scaled noise"),),
    )


def run(exp, out, monkeypatch, overrides=None):
    """Run ``exp``; returns (sorted table, the analysis groups of each compiled program)."""
    seen = []
    compile_step = executors.compiled_chunk_fn

    def recording(*args):
        program = compile_step(*args)
        seen.append([(dict(values), list(indices)) for values, indices in program.groups])
        return program

    monkeypatch.setattr(executors, "compiled_chunk_fn", recording)
    run_experiment(exp, out=out, progress=False, overrides=overrides)
    df = store.load_results(out)
    return df.sort_values(KEY).reset_index(drop=True)[sorted(df.columns)], seen


def one_value_at_a_time(exp, tmp_path, monkeypatch, axis, values):
    """The rows of running each value of ``axis`` on its own, together."""
    parts = [run(exp, tmp_path / f"{axis}-{v}", monkeypatch, {axis: [v]})[0] for v in values]
    return pd.concat(parts).sort_values(KEY).reset_index(drop=True)


def assert_same_rows(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert len(a) == len(b) > 0
    cont = [c for c in CONTINUOUS if c in a.columns]
    pd.testing.assert_frame_equal(a[cont], b[cont], check_exact=False, rtol=1e-12)
    pd.testing.assert_frame_equal(a.drop(columns=cont), b.drop(columns=cont), check_exact=True)


def test_an_axis_only_derived_values_read_shares_one_program_copy(tmp_path, monkeypatch):
    """``label`` and ``variant`` are read by no traced code: the points split by mechanism
    only (borda reads it), and each label gives what it gives run alone."""
    exp = experiment(METHODS)
    df, seen = run(exp, tmp_path / "all", monkeypatch)
    (groups,) = seen
    assert [sorted(values.items()) for values, _ in groups] == [
        [("mechanism", "laplace")],
        [("mechanism", "gaussian")],
    ]
    assert sorted(i for _, indices in groups for i in indices) == list(range(2 * 2 * 2))
    assert set(df["label"]) == {"small", "large"} and len(df) == 3 * 8 * 2
    assert_same_rows(
        df, one_value_at_a_time(exp, tmp_path, monkeypatch, "label", ["small", "large"])
    )
    # the label changed the noise: borda's results differ between labels
    borda_rows = df[df["method"] == "borda"].set_index(["rep", "mechanism", "variant", "label"])
    assert (borda_rows["relative_hamming"].unstack("label").nunique(axis=1) > 1).any()


def test_a_value_read_on_one_branch_splits_only_that_branch(tmp_path, monkeypatch):
    """``variant`` is read only for the gaussian mechanism: laplace points share one copy
    whatever their variant, gaussian points split by variant; results as if run alone. The
    one method is the one that reads ``variant`` (that a method reading no analysis value is
    in every copy, with the results of a run alone, is the test above)."""
    exp = experiment({"borda": Method(doubled_borda, METHODS["borda"].metrics)}, label=["small"])
    df, seen = run(exp, tmp_path / "all", monkeypatch)
    (groups,) = seen
    assert [sorted(values.items()) for values, _ in groups] == [
        [("mechanism", "laplace")],
        [("mechanism", "gaussian"), ("variant", "plain")],
        [("mechanism", "gaussian"), ("variant", "double")],
    ]
    assert [len(indices) for _, indices in groups] == [2, 1, 1]
    assert_same_rows(
        df, one_value_at_a_time(exp, tmp_path, monkeypatch, "variant", ["plain", "double"])
    )
    gaussian = df[(df["method"] == "borda") & (df["mechanism"] == "gaussian")]
    assert gaussian.groupby("variant")["relative_hamming"].mean().nunique() == 2


def test_iterating_over_the_analysis_values_reads_them_all(tmp_path, monkeypatch):
    exp = experiment({"borda": Method(iterating_borda, METHODS["borda"].metrics)})
    _, seen = run(exp, tmp_path / "all", monkeypatch)
    (groups,) = seen
    assert len(groups) == 2 * 2 * 2
    assert all(set(values) == {"mechanism", "label", "variant"} for values, _ in groups)


def test_a_method_that_fails_to_trace_still_fails_with_its_own_message(tmp_path):
    def broken(key, ctx):
        raise ValueError(f"broken method at mechanism {ctx.analysis['mechanism']}")

    exp = experiment({"borda": Method(broken, METHODS["borda"].metrics)})
    with pytest.raises(
        UsageError, match="method 'borda' failed: ValueError: broken method at mechanism laplace"
    ):
        run_experiment(exp, out=tmp_path / "broken", progress=False)
    jax.clear_caches()


def test_merge_groups_joins_only_groups_that_read_the_same_values():
    groups = [
        ({"m": "lap", "v": "a", "x": "1"}, [0, 4]),
        ({"m": "lap", "v": "b", "x": "1"}, [1]),
        ({"m": "gau", "v": "a", "x": "1"}, [2]),
        ({"m": "gau", "v": "b", "x": "1"}, [3]),
    ]
    reads = [{"m"}, {"m"}, {"m", "v"}, {"m", "v"}]
    assert merge_groups(groups, reads) == [
        ({"m": "lap"}, [0, 1, 4]),
        ({"m": "gau", "v": "a"}, [2]),
        ({"m": "gau", "v": "b"}, [3]),
    ]
    # a group that read v does not join one that did not, even where their values agree
    assert merge_groups(groups[:2] + groups[2:3], [{"m"}, {"m", "v"}, {"m", "v"}]) == [
        ({"m": "lap"}, [0, 4]),
        ({"m": "lap", "v": "b"}, [1]),
        ({"m": "gau", "v": "a"}, [2]),
    ]


def test_the_unbatched_rebuild_of_a_lapack_program_keeps_the_merged_groups(tmp_path, monkeypatch):
    """A method calling LAPACK on a batch of lanes is compiled again one lane at a time, with a
    warning (dpsim.linalg); that second program computes the merged groups too."""

    def solving(key, ctx):
        W = ctx.sample["W"]
        x = jnp.linalg.solve(W + W.T + W.shape[0] * jnp.eye(W.shape[0]), jnp.ones(W.shape[0]))
        return {"relative_hamming": jnp.sum(x), "exact_recovery": jnp.min(x)}

    exp = experiment({"solve": Method(solving, METHODS["borda"].metrics)})
    seen = []
    compile_step = executors.compiled_chunk_fn

    def recording(*args):
        program = compile_step(*args)
        seen.append(program.groups)
        return program

    monkeypatch.setattr(executors, "compiled_chunk_fn", recording)
    with pytest.warns(DpsimWarning, match="calls LAPACK on a batch of lanes"):
        run_experiment(exp, out=tmp_path / "run", progress=False, micro_batch=3, chunk=3)
    assert [[(values, len(indices)) for values, indices in groups] for groups in seen] == [
        [({}, 2 * 2 * 2)]
    ]
    df = store.load_results(tmp_path / "run")
    assert (
        len(df) == 3 * 8
        and df.groupby(["label", "variant", "mechanism"])["relative_hamming"].nunique().eq(3).all()
    )
