"""The experiment runner, on a toy experiment that belongs to no paper (tests/toy.py):
determinism across chunking, resume, common random numbers, per-method keys, the method
output contract, derived values, string axes, validation."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil

import jax
import jax.numpy as jnp
import pandas as pd
import numpy as np
import pytest

from dpsim.engine import Derived, Experiment, Keys, Method, UsageError
from dpsim.engine.definition import axes
from dpsim.engine.execution import planning, runner
from dpsim.engine.storage import store
from dpsim.engine.execution.batching import (
    CHUNK_WORK,
    MAX_MICRO_BATCH_CPU,
    Batching,
    batching,
    chunk_layout,
    micro_batch_size,
)
from dpsim.engine.execution.runner import run_experiment
from dpsim.engine.presentation.units import format_bytes, format_duration
from dpsim.models import sample_er_comparisons
from toy import METHODS, toy_experiment

INF = math.inf
REPS = 6
KEY = ["point", "rep", "method"]
# 2 shapes × 2 p × 6 reps = 24 lanes; × (2 ε × 2 mechanisms) × 2 methods = 192 rows
N_LANES, N_ROWS = 24, 192


def small_experiment(**grid) -> Experiment:
    """The toy experiment (tests/toy.py)."""
    return toy_experiment("t", reps=REPS, **grid)


BORDA_ONLY = {"borda": METHODS["borda"]}  # the toy's method without a solver: a quick compile


# The old CPU policy (cache-sized micro-batches of up to 128 lanes): it still describes how an
# explicit byte bound lays out chunks, which the accelerator policy and --micro-batch use.
CACHE_SIZED = Batching("cpu", 3 * 2**20, 128, 1, chunk_work=CHUNK_WORK)


def table(out) -> pd.DataFrame:
    df = store.load_results(out)
    return df.sort_values(KEY).reset_index(drop=True)[sorted(df.columns)]


def assert_same_table(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b, check_exact=True)


CONTINUOUS = ["l2", "linf", "log_rel_l2", "log_rel_linf"]


def at_n(df: pd.DataFrame, n_items: int) -> pd.DataFrame:
    """The rows of a sorted table at one shape point (``n_items``), re-indexed."""
    return df[df["n_items"] == n_items].reset_index(drop=True)


def assert_same_results(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Equal up to float rounding in the continuous metrics (≤ 1e-12 relative) and in the
    final gradient norm (rounding-level at convergence: within 1e-12 absolute, far below the
    solver's 1e-10 tolerance), identical in everything else (grid, keys, top-k errors,
    convergence, result codes, iterations)."""
    pd.testing.assert_frame_equal(a[CONTINUOUS], b[CONTINUOUS], check_exact=False, rtol=1e-12)
    rest = [*CONTINUOUS, *(["grad_norm"] if "grad_norm" in a else [])]
    if "grad_norm" in a:
        pd.testing.assert_series_equal(
            a["grad_norm"], b["grad_norm"], check_exact=False, rtol=0, atol=1e-12
        )
    pd.testing.assert_frame_equal(a.drop(columns=rest), b.drop(columns=rest), check_exact=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted run with the default chunking: (dir, sorted table)."""
    out = tmp_path_factory.mktemp("reference") / "run"
    summary = run_experiment(small_experiment(), out=out, progress=False)
    assert summary.lanes_run == N_LANES and summary.rows_written == N_ROWS
    return out, table(out)


def test_reference_table_shape(reference):
    out, df = reference
    assert len(df) == N_ROWS
    assert not df.duplicated(KEY).any()
    assert set(df["method"]) == {"mle", "borda"}
    assert set(df["rep"]) == set(range(REPS))
    assert {
        "n_items",
        "p",
        "spread",
        "eps",
        "mechanism",
        "delta",
        "noise_scale",
        "rep",
        "point",
        "method",
        "l2",
        "linf",
        "log_rel_l2",
        "log_rel_linf",
        "relative_hamming",
        "exact_recovery",
        "converged",
        "iterations",
        "result",
        "grad_norm",
    } <= set(df.columns)
    mle = df[df["method"] == "mle"]
    assert mle["converged"].all() and (mle["iterations"] < 50).all()
    assert (mle["result"] == 0).all() and (mle["grad_norm"] <= 1e-10).all()
    assert mle[["l2", "linf", "log_rel_l2", "log_rel_linf"]].notna().all().all()
    assert df["relative_hamming"].between(0, 1).all()
    borda = df[df["method"] == "borda"]  # no solver: null, never a made-up True
    assert borda["converged"].isna().all() and borda["iterations"].isna().all()
    assert borda["result"].isna().all() and borda["grad_norm"].isna().all()
    assert borda["l2"].isna().all()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["seed"] == 0 and manifest["experiment"] == "t"
    assert (
        manifest["study"]["reps"] == {"min": REPS, "max": REPS}
        and manifest["study"]["grid_points"] == 16
    )


@pytest.fixture(scope="module")
def reference_vmapped(tmp_path_factory):
    """An uninterrupted run with an explicit micro-batch: 3 lanes vmapped together, two
    micro-batches per chunk of 6 (12 lanes per shape, 2 chunks each)."""
    out = tmp_path_factory.mktemp("reference_vmapped") / "run"
    summary = run_experiment(small_experiment(), out=out, progress=False, micro_batch=3, chunk=6)
    assert summary.lanes_run == N_LANES and len(store.part_files(out)) == 4
    micros = {step["micro"] for step in store.read_manifest(out)["history"][-1]["batching"]}
    assert micros == {3}
    return out, table(out)


@pytest.fixture(scope="module")
def reference_micro1(tmp_path_factory):
    """An uninterrupted run with micro-batches of one lane and one lane per chunk."""
    out = tmp_path_factory.mktemp("reference_micro1") / "run"
    summary = run_experiment(small_experiment(), out=out, progress=False, chunk=1, micro_batch=1)
    assert summary.lanes_run == N_LANES
    assert len(store.part_files(out)) == N_LANES
    return out, table(out)


@pytest.mark.parametrize(
    "micro, chunk, workers, parts",
    [
        (None, 1, 1, 24),  # one lane per chunk (and per micro-batch): 24 parts
        (None, 3, 2, 8),  # 3 lanes per chunk, two chunks at a time: 4 parts per shape
        (None, None, 3, 6),  # no chunk asked: at least one chunk per worker, 3 per shape
        (
            6,
            5,
            1,
            6,
        ),  # up to 6 lanes vmapped, chunk 5 → 3 chunks of 4 lanes (one micro-batch) per shape
    ],
)
def test_results_do_not_depend_on_chunking(
    reference, reference_micro1, tmp_path, micro, chunk, workers, parts
):
    """DESIGN "Randomness": results must not depend on chunking or on how many chunks run at
    once. Vmapped micro-batches may change continuous metrics by rounding (as in the
    micro-batch test below); everything else is bit-identical."""
    out = tmp_path / "run"
    summary = run_experiment(
        small_experiment(), out=out, progress=False, chunk=chunk, workers=workers, micro_batch=micro
    )
    assert summary.lanes_run == N_LANES and summary.rows_written == N_ROWS
    assert len(store.part_files(out)) == parts  # the work really was split differently
    assert_same_results(table(out), reference[1])
    if micro is None:  # lanes one at a time, as in reference_micro1
        assert_same_table(table(out), reference_micro1[1])


@pytest.mark.parametrize(
    "n_lanes, lane_bytes, chunk, workers, want",
    [
        (120, 8 * 40**2, None, 1, (120, 120)),  # n = 40: one chunk, one micro-batch, no padding
        (120, 8 * 40**2, None, 2, (60, 60)),  # two workers: two chunks of 60
        (130, 8 * 40**2, None, 1, (130, 65)),  # over the 128 cap: two balanced micro-batches
        (480, 8 * 300**2, None, 2, (160, 4)),  # n = 300 (Fig. 3): 3 chunks by work, micro 4
        (7, 8 * 40**2, None, 16, (1, 1)),  # more workers than lanes: a lane per chunk
        (24, 8 * 40**2, 5, 1, (5, 5)),
    ],
)
def test_chunk_layout(n_lanes, lane_bytes, chunk, workers, want):
    size, micro = chunk_layout(n_lanes, lane_bytes, 10, chunk, workers, CACHE_SIZED)
    assert (size, micro) == want
    assert size % micro == 0 and micro <= micro_batch_size(lane_bytes, CACHE_SIZED)
    assert math.ceil(n_lanes / size) * size - n_lanes < size  # less than a chunk of padding


def test_results_do_not_depend_on_micro_batch_size(reference_vmapped, reference_micro1):
    """DESIGN "Randomness": results must not depend on batch size (micro-batch 3 vs 1).
    Continuous metrics may differ by rounding (≤ 1e-12 relative); discrete ones (top-k
    errors) must be identical."""
    assert_same_results(reference_vmapped[1], reference_micro1[1])


def _interrupt_after(monkeypatch, n_parts: int):
    real = store.write_part
    calls = {"n": 0}

    def flaky(out, frame):
        if calls["n"] == n_parts:
            raise KeyboardInterrupt
        calls["n"] += 1
        return real(out, frame)

    monkeypatch.setattr(store, "write_part", flaky)


def test_resume_after_interrupt(reference_micro1, tmp_path, monkeypatch):
    out = tmp_path / "run"
    exp = small_experiment()  # chunk=1: one lane per part
    _interrupt_after(monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(exp, out=out, progress=False, chunk=1)
    monkeypatch.undo()
    assert len(store.part_files(out)) == 2
    partial = store.load_results(out)
    assert (
        len(partial) == 2 * 8 and not partial.duplicated(KEY).any()
    )  # 2 lanes × 4 points × 2 methods
    assert not list((out / "parts").glob(".tmp-*"))  # no torn temporary file

    summary = run_experiment(exp, out=out, progress=False, chunk=1)
    assert summary.lanes_run == N_LANES - 2
    assert summary.rows_written == N_ROWS - len(partial)
    final = table(out)
    assert not final.duplicated(KEY).any()
    assert_same_table(final, reference_micro1[1])  # the same configuration, uninterrupted


def test_a_second_run_into_a_directory_in_use_is_refused(tmp_path):
    """Two runs into one directory at once would both compute the missing lanes and store
    them twice (found using dpsim: two `dpsim run` left 4800 duplicated rows). While one
    holds the directory, another is refused in one line and writes nothing; afterwards the
    directory is free again, and a directory the refused run would have created is not left."""
    out = tmp_path / "run"
    exp = small_experiment(n_items=[12])
    with store.exclusive(out):
        with pytest.raises(UsageError, match=r"another dpsim run \(pid \d+ on .*\) is writing to"):
            run_experiment(exp, out=out, progress=False)
        assert [p.name for p in out.iterdir()] == [store.LOCK]  # nothing written by the refused run
    assert not out.exists()  # created for the lock only, removed when released
    summary = run_experiment(exp, out=out, progress=False)
    assert summary.lanes_run == N_LANES // 2
    assert not table(out).duplicated(KEY).any()
    assert run_experiment(exp, out=out, progress=False).lanes_run == 0


def test_extending_the_eps_grid_computes_only_new_points(reference, tmp_path):
    """Run ε = 1 only, then the full ε grid into the same directory (n = 12 only, to save a
    compile): the missing ε = ∞ rows are added, the stored ε = 1 rows are not duplicated,
    and the table equals the same rows of a fresh run."""
    out = tmp_path / "run"
    first = run_experiment(
        small_experiment(), out=out, progress=False, overrides={"n_items": [12], "eps": [1.0]}
    )
    assert first.lanes_run == N_LANES // 2 and first.rows_written == N_ROWS // 4
    second = run_experiment(
        small_experiment(), out=out, progress=False, overrides={"n_items": [12]}
    )
    assert second.lanes_run == N_LANES // 2 and second.rows_written == N_ROWS // 4
    final = table(out)
    assert not final.duplicated(KEY).any()
    want = reference[1][reference[1]["n_items"] == 12].reset_index(drop=True)
    assert_same_results(final, want)


def test_summaries_from_the_parts_written_equal_those_read_back(reference, tmp_path, monkeypatch):
    """The manifest's study and diagnostics made from the tables a run wrote (it holds them up
    to runner.SUMMARY_ROWS_HELD rows) equal those read back from its parts: a run that holds
    none gives the same manifest fields, and so does a folder extended by a second run, whose
    summary must count the first run's parts too."""
    held = store.read_manifest(reference[0])
    monkeypatch.setattr(runner, "SUMMARY_ROWS_HELD", 0)
    out = tmp_path / "read_back"
    run_experiment(small_experiment(), out=out, progress=False)
    read_back = store.read_manifest(out)
    assert held["study"]["rows"] == N_ROWS
    assert (held["study"], held["diagnostics"]) == (read_back["study"], read_back["diagnostics"])
    monkeypatch.undo()
    extended = tmp_path / "extended"
    run_experiment(small_experiment(), out=extended, progress=False, overrides={"eps": [1.0]})
    run_experiment(small_experiment(), out=extended, progress=False)
    both = store.read_manifest(extended)
    assert (both["study"], both["diagnostics"]) == (held["study"], held["diagnostics"])
    # the tables given are used when they are the folder's parts, and only then
    written = {path.name: store._read_part(path) for path in store.part_files(out)}

    def no_read(*args, **kwargs):
        raise AssertionError("read back")

    monkeypatch.setattr(store, "read_parts", no_read)
    from_memory = runner.folder_summaries(out, small_experiment(), written)
    assert from_memory == {"study": read_back["study"], "diagnostics": read_back["diagnostics"]}
    with pytest.raises(AssertionError, match="read back"):
        runner.folder_summaries(out, small_experiment(), dict(list(written.items())[1:]))


def test_rerun_of_complete_directory_computes_nothing(reference, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(reference[0], out)
    before = sorted(p.name for p in store.part_files(out))
    summary = run_experiment(small_experiment(), out=out, progress=False)
    assert summary.lanes_run == 0 and summary.rows_written == 0
    assert sorted(p.name for p in store.part_files(out)) == before
    assert_same_table(table(out), reference[1])


# ----------------------------------------------------------------------------- common random numbers


def _crn_truth(key, shape):
    return {"theta": jax.random.normal(key, (shape["n_items"],))}


def _crn_generate(key, shape, truth, data):
    return sample_er_comparisons(key, truth["theta"], data["p"])


def _crn_probe(key, ctx):
    n = ctx.shape["n_items"]
    weights = jnp.arange(1.0, n * n + 1.0).reshape(n, n)
    return {
        "data_sum": jnp.sum(ctx.sample * weights),  # a checksum of the data
        "truth_sum": jnp.sum(ctx.truth["theta"] * jnp.arange(1.0, n + 1.0)),
        "noise": jax.random.normal(key),  # the method's key
        "eps_seen": ctx.analysis["eps"],
        "p_seen": ctx.data["p"],
    }


PROBE = Method(_crn_probe, ("data_sum", "truth_sum", "noise", "eps_seen", "p_seen"))


def crn_experiment(methods=None, truth_per_replicate=False, **grid) -> Experiment:
    full = {"n_items": [8], "p": [0.3, 0.7], "eps": [0.5, 1.0, INF]}
    full.update(grid)
    return Experiment(
        name="crn",
        title="crn probe",
        axes=full,
        shape_axes=("n_items",),
        analysis_axes=("eps",),
        truth=_crn_truth,
        generate=_crn_generate,
        methods=methods or {"probe": PROBE},
        reps=5,
        truth_per_replicate=truth_per_replicate,
    )


@pytest.fixture(scope="module")
def crn_table(tmp_path_factory):
    out = tmp_path_factory.mktemp("crn") / "run"
    run_experiment(crn_experiment(), out=out, progress=False)
    return store.load_results(out)


def test_same_data_for_every_eps_within_a_replicate(crn_table):
    df = crn_table
    assert len(df) == 2 * 3 * 5
    assert (df["eps_seen"] == df["eps"]).all() and (df["p_seen"] == df["p"]).all()
    by_lane = df.groupby(["p", "rep"])
    assert (by_lane["data_sum"].nunique() == 1).all()  # common random numbers across ε
    assert (by_lane["noise"].nunique() == 3).all()  # but fresh noise per ε
    assert (df.groupby("p")["data_sum"].nunique() == 5).all()  # new data per replicate
    assert df["truth_sum"].nunique() == 1  # θ* fixed per shape point
    assert df["data_sum"].gt(0).all()


def test_keys_do_not_depend_on_grid_extent(crn_table, tmp_path):
    """A sub-grid reproduces the same rows: keys come from stable ids, not batch positions."""
    out = tmp_path / "sub"
    run_experiment(crn_experiment(p=[0.7], eps=[1.0]), out=out, progress=False, reps=2)
    sub = store.load_results(out).set_index(["point", "rep"]).sort_index()
    full = crn_table.set_index(["point", "rep"]).loc[sub.index]
    pd.testing.assert_series_equal(sub["data_sum"], full["data_sum"], check_exact=True)
    pd.testing.assert_series_equal(sub["noise"], full["noise"], check_exact=True)


def test_seed_changes_the_data(crn_table, tmp_path):
    out = tmp_path / "seed1"
    run_experiment(crn_experiment(), out=out, progress=False, seed=1)
    other = store.load_results(out).set_index(["point", "rep"]).sort_index()
    base = crn_table.set_index(["point", "rep"]).sort_index()
    assert (other["data_sum"] != base["data_sum"]).mean() > 0.9
    assert other["truth_sum"].iloc[0] != base["truth_sum"].iloc[0]


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kwargs, bad",
    [
        (dict(overrides={"eps": [0]}), "eps=0"),
        (dict(overrides={"eps": [1.0, -1]}), "eps=-1"),
        (dict(overrides={"eps": [float("nan")]}), "eps=nan"),
        (dict(overrides={"p": [0]}), "p=0"),
        (dict(overrides={"p": [0.5, 1.5]}), "p=1.5"),
        (dict(overrides={"n_items": [1]}), "n_items=1"),
        (dict(overrides={"n_items": [12.5]}), "n_items=12.5"),
        (dict(overrides={"spread": [0]}), "spread=0"),
        (dict(overrides={"mechanism": ["laplace", "cauchy"]}), "mechanism='cauchy'"),
        (dict(overrides={"mechanism": [3]}), "mechanism=3"),
        (dict(overrides={"delta": [1.5]}), "delta=1.5"),
        (dict(overrides={"bogus": [1]}), "bogus"),
        (dict(overrides={"eps": [1.0, 1]}), "duplicate"),
        (dict(reps=0), "reps=0"),
        (dict(reps=-2), "reps=-2"),
        (dict(chunk=0), "chunk=0"),
        (dict(workers=0), "workers=0"),
        (dict(seed=-1), "seed=-1"),
    ],
)
def test_bad_input_raises_usage_error_and_writes_nothing(tmp_path, kwargs, bad):
    out = tmp_path / "out"
    with pytest.raises(UsageError, match=re.escape(bad)):
        run_experiment(small_experiment(), out=out, progress=False, **kwargs)
    assert not out.exists()


def test_a_string_value_on_a_numeric_axis_is_a_usage_error(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(UsageError, match="p='half' is not a number"):
        run_experiment(small_experiment(), out=out, progress=False, overrides={"p": ["half"]})
    assert not out.exists()


def test_different_seed_or_experiment_into_existing_dir_is_refused(reference, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(reference[0], out)
    manifest = (out / "manifest.json").read_text()
    parts = sorted(p.name for p in store.part_files(out))
    with pytest.raises(UsageError, match="seed 0"):
        run_experiment(small_experiment(), out=out, progress=False, seed=1)
    with pytest.raises(UsageError, match="'t'"):
        run_experiment(
            dataclasses.replace(small_experiment(), name="other"), out=out, progress=False
        )
    assert (out / "manifest.json").read_text() == manifest
    assert sorted(p.name for p in store.part_files(out)) == parts


def test_non_empty_foreign_directory_is_refused(tmp_path):
    out = tmp_path / "foreign"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="not empty"):
        run_experiment(small_experiment(), out=out, progress=False)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


# ----------------------------------------------------------------------------- per-method keys


def _method_table(tmp_path, name, methods):
    out = tmp_path / name
    run_experiment(small_experiment(n_items=[8], methods=methods), out=out, progress=False)
    return table(out)


def test_adding_or_removing_a_method_leaves_the_others_unchanged(reference, tmp_path):
    """Each method's key is folded from its name, not from a position: dropping ``borda`` or
    adding another method changes no draw of ``mle`` (and vice versa)."""
    ref = reference[1][reference[1]["n_items"] == 8].reset_index(drop=True)
    only_mle = _method_table(tmp_path, "only_mle", {"mle": METHODS["mle"]})
    mle_ref = ref[ref["method"] == "mle"].reset_index(drop=True)
    assert_same_results(only_mle[mle_ref.columns], mle_ref)
    extra = Method(lambda key, ctx: {"draw": jax.random.uniform(key)}, ("draw",))
    more = _method_table(tmp_path, "more", {"a_first": extra, **METHODS})
    for method in ("mle", "borda"):
        got = more[more["method"] == method].reset_index(drop=True)
        want = ref[ref["method"] == method].reset_index(drop=True)
        assert_same_results(got[want.columns], want)
    # and the new method's draws are fresh per analysis point and replicate
    draws = more[more["method"] == "a_first"]["draw"]
    assert draws.nunique() == len(draws)


# ----------------------------------------------------------------------------- the output contract


@pytest.mark.parametrize(
    "returned, message",
    [
        ({"a": 1.0}, r"did not return \['b'\]"),
        ({"a": 1.0, "b": 2.0, "c": 3.0}, r"returned undeclared \['c'\]"),
        ({"a": 1.0, "b": jnp.ones(3)}, r"returned 'b' of shape \(3,\)"),
    ],
)
def test_method_output_contract_is_enforced(tmp_path, returned, message):
    bad = Method(lambda key, ctx: returned, ("a", "b"))
    with pytest.raises(UsageError, match=message):
        run_experiment(
            small_experiment(n_items=[8], methods={"bad": bad}),
            out=tmp_path / "out",
            progress=False,
            reps=1,
        )


def test_declared_diagnostic_types_are_stored(tmp_path):
    def fn(key, ctx):
        return {"x": 1.5, "flag": True, "count": 7, "spread_seen": ctx.data["spread"]}

    method = Method(fn, ("x",), {"flag": "bool", "count": "int", "spread_seen": "float"})
    out = tmp_path / "typed"
    run_experiment(
        small_experiment(n_items=[8], methods={"m": method}), out=out, progress=False, reps=1
    )
    df = store.load_results(out)
    assert df["flag"].dtype == "boolean" and df["flag"].all()  # nullable: the same dtype
    assert df["count"].dtype == "Int64" and (df["count"] == 7).all()  # whether or not nulls occur
    assert (df["spread_seen"] == 2.0).all() and df["x"].dtype == np.float64


# ----------------------------------------------------------------------------- derived values, string axes


def test_derived_values_are_computed_on_the_host_and_stored(reference):
    df = reference[1]
    lap = df[(df["mechanism"] == "laplace") & (df["eps"] == 1.0)]["noise_scale"]
    gau = df[(df["mechanism"] == "gaussian") & (df["eps"] == 1.0)]["noise_scale"]
    assert (lap == 2.0).all()
    assert np.allclose(gau, math.sqrt(2 * math.log(1.25e3)) * math.sqrt(2.0))
    assert (df[df["eps"] == INF]["noise_scale"] == 0.0).all()


def test_a_derived_value_can_refuse_a_point_before_anything_is_written(tmp_path):
    def refuse(point):
        if point["eps"] > 1:
            raise UsageError(f"eps={point['eps']} is too large for this toy")
        return {"half_eps": point["eps"] / 2}

    exp = dataclasses.replace(small_experiment(), derived=(Derived(("half_eps",), refuse),))
    out = tmp_path / "out"
    with pytest.raises(UsageError, match="eps=inf is too large"):
        run_experiment(exp, out=out, progress=False)
    assert not out.exists()


def test_the_string_analysis_axis_is_common_random_numbers(reference):
    """Both mechanisms of a replicate see the same data: the mle (which uses no noise) gives
    identical results for laplace and gaussian, and borda's noise differs between them."""
    df = reference[1]
    mle = (
        df[df["method"] == "mle"]
        .set_index(["n_items", "p", "eps", "rep", "mechanism"])["l2"]
        .unstack()
    )
    pd.testing.assert_series_equal(mle["laplace"], mle["gaussian"], check_names=False)


def test_a_string_data_axis_is_compiled_per_value(tmp_path):
    """A string *data* axis (here the design of θ*) is static: one program per value, and it
    is part of the data (each value gets its own data key). One method (borda) is enough."""

    def generate(key, shape, truth, data):
        n = shape["n_items"]
        theta = (
            jnp.linspace(-1, 1, n)
            if data["design"] == "linear"
            else jnp.where(jnp.arange(n) < 2, 1.0, 0.0)
        )
        return {"W": sample_er_comparisons(key, theta, data["p"]), "theta": theta}

    base = small_experiment(n_items=[8], mechanism=["laplace"], methods=BORDA_ONLY)
    exp = dataclasses.replace(
        base,
        generate=generate,
        axes={**base.axes, "design": ["linear", "two-block"]},
        axis_types={**base.axis_types, "design": axes.choice("linear", "two-block")},
    )
    out = tmp_path / "design"
    summary = run_experiment(exp, out=out, progress=False, reps=3)
    df = store.load_results(out)
    assert summary.lanes_run == 2 * 2 * 3 and set(df["design"]) == {"linear", "two-block"}
    assert df["design"].dtype != np.float64


def test_truth_per_replicate_is_shared_across_data_points(tmp_path):
    out = tmp_path / "per_rep"
    run_experiment(crn_experiment(truth_per_replicate=True), out=out, progress=False)
    df = store.load_results(out)
    assert (df.groupby("rep")["truth_sum"].nunique() == 1).all()  # the same θ* for both p
    assert df["truth_sum"].nunique() == 5  # a new θ* per replicate


@pytest.mark.parametrize("per_replicate", [False, True])
def test_truth_axes_share_theta_across_the_other_shape_axes(tmp_path, per_replicate):
    """``truth_axes``: θ* keyed by part of the shape point is common to every value of the
    other shape axes (a second shape axis, ``k``, here); without it each shape point draws
    its own θ*."""
    base = dataclasses.replace(
        crn_experiment(truth_per_replicate=per_replicate, p=[0.7], eps=[1.0], k=[1, 2]),
        shape_axes=("n_items", "k"),
    )
    sums = {}
    for label, exp in (
        ("all", base),
        ("n_only", dataclasses.replace(base, keys=Keys(truth_axes=("n_items",)))),
    ):
        run_experiment(exp, out=tmp_path / label, progress=False, reps=3)
        df = store.load_results(tmp_path / label)
        sums[label] = df.set_index(["k", "rep"])["truth_sum"].unstack("k")
    assert (sums["n_only"][1] == sums["n_only"][2]).all()  # one θ* for both k
    assert (sums["all"][1] != sums["all"][2]).all()  # one θ* per shape point
    assert sums["n_only"][1].nunique() == (3 if per_replicate else 1)
    with pytest.raises(ValueError, match=r"truth_axes \['p'\] are not shape axes"):
        dataclasses.replace(base, keys=Keys(truth_axes=("n_items", "p")))


def test_an_experiment_may_not_redefine_a_shared_axis():
    with pytest.raises(ValueError, match=r"redefines shared axes \['eps'\]"):
        dataclasses.replace(small_experiment(), axis_types={"eps": axes.positive("mine")})


def test_a_folder_holds_one_study_and_its_manifest_says_what_is_there(tmp_path):
    """Adding a mechanism and replicates extends the study: the manifest keeps every request
    (append-only) and describes the table as it is. One method (borda) is enough."""
    out = tmp_path / "study"
    run_experiment(
        small_experiment(n_items=[8], mechanism=["laplace"], methods=BORDA_ONLY),
        out=out,
        progress=False,
        reps=2,
    )
    run_experiment(
        small_experiment(n_items=[8], mechanism=["gaussian"], methods=BORDA_ONLY),
        out=out,
        progress=False,
        reps=4,
    )
    manifest = store.read_manifest(out)
    assert [h["reps"] for h in manifest["history"]] == [2, 4]
    assert manifest["history"][1]["overrides"] == {} and manifest["history"][0]["lanes_run"] == 4
    history = manifest["history"]  # the driver's share: one timed write per chunk
    assert (
        sum(h["chunks_written"] for h in history) == len(store.part_files(out))
        and history[0]["chunks_written"] >= 1
    )
    assert all(0 <= h["write_seconds"] <= h["seconds"] and h["devices"] == 1 for h in history)
    study = manifest["study"]
    assert study["axes"]["mechanism"] == ["gaussian", "laplace"]
    assert study["reps"] == {"min": 2, "max": 4}
    per_point = {(p["mechanism"], p["eps"]): p["reps"] for p in study["points"] if p["p"] == 1.0}
    assert per_point[("laplace", 1.0)] == 2 and per_point[("gaussian", 1.0)] == 4
    assert study["rows"] == len(store.load_results(out))


# ----------------------------------------------------------------------------- batching by device


@pytest.mark.parametrize(
    "n_lanes, lane_bytes, memory, want",
    [
        (
            48_000,
            8 * 300**2,
            80e9,
            (8000, 2000),
        ),  # an 80 GB device: 2048-lane cap, balanced to 2000
        (120, 8 * 40**2, 80e9, (120, 120)),  # few lanes: one micro-batch
        (
            48_000,
            8 * 1000**2,
            1e9,
            (64, 16),
        ),  # small memory: a quarter of it bounds the micro-batch
    ],
)
def test_accelerator_batching_fills_the_device(n_lanes, lane_bytes, memory, want):
    policy = batching("gpu", memory=memory)
    assert policy.workers == 1 and policy.max_micro == 2048
    assert chunk_layout(n_lanes, lane_bytes, 7, None, policy.workers, policy) == want
    size, micro = want
    assert micro * lane_bytes <= 0.25 * memory


def test_an_accelerator_keeps_a_second_chunk_in_flight(tmp_path, monkeypatch):
    """On an accelerator one worker plans the chunks (the same chunks, so the same rows to the
    last bit) and a second chunk is dispatched while the first computes, so the device is not
    idle while the host makes rows and writes them (batching.ACCELERATOR_CHUNKS_IN_FLIGHT).
    Simulated on the CPU with the accelerator's workers and in_flight, and chunk calls slowed
    so that their overlap shows; ``workers=1`` (one chunk in flight) is the control."""
    import threading
    import time
    from dpsim.engine.execution import executors
    from dpsim.engine.execution.batching import ACCELERATOR_CHUNKS_IN_FLIGHT

    assert batching("gpu", memory=80e9).in_flight == ACCELERATOR_CHUNKS_IN_FLIGHT == 2
    assert batching("cpu").in_flight == batching("cpu").workers
    real_batching, real_compiled = runner.batching, executors.compiled_chunk_fn
    monkeypatch.setattr(
        runner,
        "batching",
        lambda micro_batch=None: dataclasses.replace(
            real_batching(micro_batch=micro_batch),
            workers=1,
            in_flight=ACCELERATOR_CHUNKS_IN_FLIGHT,
        ),
    )
    lock, state = threading.Lock(), {"now": 0, "most": 0}

    def slowed(*args, **kwargs):
        program = real_compiled(*args, **kwargs)

        def call(arguments):
            with lock:
                state["now"] += 1
                state["most"] = max(state["most"], state["now"])
            try:
                time.sleep(0.05)
                return jax.block_until_ready(program.fn(arguments))
            finally:
                with lock:
                    state["now"] -= 1

        return program._replace(fn=call)

    monkeypatch.setattr(executors, "compiled_chunk_fn", slowed)
    runs = {}
    for label, workers in (("accelerator", None), ("one in flight", 1)):
        state["most"] = 0
        out = tmp_path / label.replace(" ", "_")
        plan = runner.plan_run(small_experiment(), out=out, chunk=3, workers=workers)
        run_experiment(small_experiment(), out=out, progress=False, chunk=3, workers=workers)
        runs[label] = (plan, state["most"], table(out), store.read_manifest(out)["history"][-1])
    plan, most, df, history = runs["accelerator"]
    plan1, most1, df1, history1 = runs["one in flight"]
    assert (most, most1) == (2, 1)
    layout = [
        [(step.size, step.micro, len(step.chunks)) for step in p.steps] for p in (plan, plan1)
    ]
    assert layout[0] == layout[1] and layout[0][0][2] >= 2
    assert (plan.workers, plan.in_flight, plan1.in_flight) == (1, 2, 1)
    assert (
        ", 1 worker(s), 2 chunks in flight, " in plan.describe()[0]
        and "in flight" not in plan1.describe()[0]
    )
    assert plan.chunk_bytes(plan.steps[0]) == 2 * plan1.chunk_bytes(plan1.steps[0])
    assert (history["in_flight"], history1["in_flight"], history["workers"]) == (2, 1, 1)
    assert_same_table(df, df1)
    explicit = runner.plan_run(small_experiment(), out=tmp_path / "three", chunk=3, workers=3)
    assert (explicit.workers, explicit.in_flight) == (3, 3)  # --workers N: N planned, N in flight


def test_a_program_shares_the_accelerators_memory_with_the_chunks_in_flight(monkeypatch):
    """program_memory_limit: half the device's memory, shared by the chunks in flight (their
    buffers may be live together); no limit on the CPU. Batching.in_flight defaults to workers."""
    from dpsim.engine.execution import batching as batching_module

    assert batching_module.program_memory_limit(2) is None  # the CPU: lanes run in host memory
    monkeypatch.setattr(batching_module.jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(
        batching_module, "memory_limit", lambda backend: (80e9, "the gpu device's memory")
    )
    assert batching_module.program_memory_limit() == 40e9
    assert (
        batching_module.program_memory_limit(2) == 20e9
        and batching_module.program_memory_limit(4) == 10e9
    )
    assert (
        Batching("cpu", math.inf, 1, 3).in_flight == 3
        and Batching("gpu", 1e9, 8, 1, in_flight=2).in_flight == 2
    )


def test_cpu_batching_is_the_measured_choice_and_micro_batch_can_be_set(monkeypatch):
    cpu = batching("cpu")  # lanes one at a time (benchmarks/cai.py sections Q and W)
    assert cpu.max_micro == MAX_MICRO_BATCH_CPU == 1 and cpu.chunk_work == CHUNK_WORK
    assert chunk_layout(480, 8 * 300**2, 7, None, 2, cpu) == (240, 1)
    assert chunk_layout(120, 8 * 40**2, 10, None, 2, cpu) == (60, 1)
    assert chunk_layout(480, 8 * 300**2, 7, None, 2, batching("cpu", micro_batch=30)) == (240, 30)
    monkeypatch.setenv("DPSIM_MICRO_BATCH", "7")
    assert batching("cpu").max_micro == 7
    monkeypatch.setenv("DPSIM_MICRO_BATCH", "seven")
    with pytest.raises(UsageError, match="DPSIM_MICRO_BATCH='seven'"):
        batching("cpu")
    with pytest.raises(UsageError, match="micro_batch=0"):
        batching("cpu", micro_batch=0)


def test_results_do_not_depend_on_an_explicit_micro_batch(reference, reference_vmapped):
    """micro_batch=3 (the reference_vmapped run) against the default CPU batching."""
    assert_same_results(reference_vmapped[1], reference[1])


XLA_DEFAULT_OPT_LEVEL = (
    3  # DebugOptions' xla_backend_optimization_level (xla/debug_options_flags.cc)
)


def test_cpu_opt_level_is_a_speed_setting(reference, tmp_path, monkeypatch):
    """$DPSIM_XLA_CPU_OPT_LEVEL sets the LLVM level of the chunk programs on CPU (unset: none,
    XLA's default); XLA's default level, 3, and the suite's level (tests/conftest.py: 0 unless
    set) give the same results up to float rounding; a bad value is a one-line error before
    anything is written. (The suite's $XLA_FLAGS make its own level every program's default in
    this process, so level 3, what users run, is asked for by name.)"""
    from dpsim.engine.execution import program

    level = os.environ["DPSIM_XLA_CPU_OPT_LEVEL"]  # the reference run's level (tests/conftest.py)
    assert program.compiler_options() == {"xla_backend_optimization_level": int(level)}
    monkeypatch.delenv("DPSIM_XLA_CPU_OPT_LEVEL")
    assert program.compiler_options() is None
    monkeypatch.setenv("DPSIM_XLA_CPU_OPT_LEVEL", str(XLA_DEFAULT_OPT_LEVEL))
    assert program.compiler_options() == {"xla_backend_optimization_level": XLA_DEFAULT_OPT_LEVEL}
    # one shape point (n = 8) is enough to compare the levels
    run_experiment(small_experiment(n_items=[8]), out=tmp_path / "default", progress=False)
    assert_same_results(table(tmp_path / "default"), at_n(reference[1], 8))
    monkeypatch.setenv("DPSIM_XLA_CPU_OPT_LEVEL", "fast")
    with pytest.raises(UsageError, match="DPSIM_XLA_CPU_OPT_LEVEL='fast'"):
        run_experiment(small_experiment(), out=tmp_path / "bad", progress=False)
    assert not (tmp_path / "bad").exists()


def test_compiled_programs_of_old_experiments_are_released(tmp_path):
    """A long process (a full `dpsim verify`) keeps the programs of the last two experiments
    only: every XLA:CPU executable holds memory mappings, and keeping them all exhausted the
    per-process limit (LLVM "Cannot allocate memory", then a segfault) after ~27 experiments.
    A re-run of a recent experiment still compiles nothing."""
    from dpsim.engine.execution import program

    program.clear_cache()
    exps = [
        dataclasses.replace(crn_experiment(p=[0.7], eps=[1.0]), name=f"crn-{i}") for i in range(3)
    ]
    for i, exp in enumerate(exps):
        run_experiment(exp, out=tmp_path / exp.name, progress=False, reps=2)
    held = {entry[0].name for entry in program._COMPILED.values()}
    assert held == {"crn-1", "crn-2"}
    before = dict(program._COMPILED)
    run_experiment(exps[2], out=tmp_path / "again", progress=False, reps=2)
    assert set(program._COMPILED) == set(before)  # nothing compiled again
    assert all(program._COMPILED[k][1] is before[k][1] for k in before)
    program.MAX_COMPILED, saved = 1, program.MAX_COMPILED
    try:
        run_experiment(exps[0], out=tmp_path / "capped", progress=False, reps=2)
        assert len(program._COMPILED) == 1
    finally:
        program.MAX_COMPILED = saved
        program.clear_cache()


def test_load_results_orders_rows_the_same_whatever_the_order_of_the_parts(tmp_path):
    """Parts have random names and chunks finish in any order: the loaded table (and so every
    summary, figure CSV and check computed from it) must not depend on it."""
    import pyarrow as pa

    from dpsim.engine.storage import store

    parts = [
        pa.table(
            {"point": [7, 7, 3], "rep": [1, 0, 0], "method": ["b", "a", "a"], "x": [0.1, 0.2, 0.3]}
        ),
        pa.table({"point": [3, 3], "rep": [1, 0], "method": ["a", "b"], "x": [0.4, 0.5]}),
    ]
    for name, order in (("forward", parts), ("backward", parts[::-1])):
        for table in order:
            store.write_part(tmp_path / name, store.mark_columns(table, ["x"]))
    forward, backward = (
        store.load_results(tmp_path / "forward"),
        store.load_results(tmp_path / "backward"),
    )
    pd.testing.assert_frame_equal(forward, backward)
    assert list(zip(forward["point"], forward["rep"], forward["method"])) == [
        (3, 0, "a"),
        (3, 0, "b"),
        (3, 1, "a"),
        (7, 0, "a"),
        (7, 1, "b"),
    ]


def test_key_chains_equal_nested_fold_ins():
    """fold_in_words (one loop in the program) gives the keys of the nested fold_in calls
    the keys were defined by (module docstring of dpsim.engine.execution.program), and the
    method and privatise keys of analyse_point, folded by one vmapped fold_in_words, equal
    the nested fold_ins one by one."""
    from dpsim.engine.execution import program

    fold = jax.random.fold_in
    seed, words, rep = np.uint32(7), np.asarray([0x89ABCDEF, 0x1234567], np.uint32), np.uint32(41)
    nested_lane = fold(fold(fold(fold(jax.random.key(seed), 2), words[0]), words[1]), rep)
    nested_truth = fold(fold(fold(jax.random.key(seed), 1), words[0]), words[1])
    same = lambda a, b: np.array_equal(jax.random.key_data(a), jax.random.key_data(b))
    assert same(program.lane_key(seed, words, rep), nested_lane)
    assert same(jax.jit(program.lane_key)(seed, words, rep), nested_lane)
    assert same(program.truth_key(seed, words), nested_truth)
    assert not same(program.lane_key(seed, words, rep + 1), nested_lane)
    many = np.asarray([[1, 2], [3, 4], [5, 6]], np.uint32)
    batched = jax.vmap(program.fold_in_words, in_axes=(None, 0))(nested_lane, many)
    for index, row in enumerate(many):
        assert same(batched[index], fold(fold(nested_lane, row[0]), row[1]))


# ---------------------------------------------------------------------------------------
# Planning in time and memory independent of the replicate count; memory guard
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "reps, complete",
    [(10, []), (10, [0, 3, 4, 9]), (7, [0, 1, 2, 3, 4, 5, 6]), (1000, [1, 2, 500, 998])],
)
def test_missing_reps_lists_the_complement_lazily(reps, complete):
    missing = planning._MissingReps(reps, np.asarray(complete))
    expected = [r for r in range(reps) if r not in complete]
    assert len(missing) == len(expected)
    assert missing.take(0, len(missing)).tolist() == expected
    if len(expected) > 3:
        assert missing.take(2, 4).tolist() == expected[2:4]


def test_a_plan_for_a_billion_replicates_lists_no_lane_until_asked(tmp_path):
    exp = small_experiment()
    plan = runner.plan_run(exp, reps=10**9, out=tmp_path / "huge")
    assert plan.lanes == 4 * 10**9  # 2 shapes × 2 p × 10⁹ replicates
    step = plan.steps[0]
    last = step.chunks[len(step.chunks) - 1]
    assert last.lanes[-1].rep == 10**9 - 1 and len(last) <= step.size
    assert not any(path.exists() for path in (tmp_path / "huge",))
    text = "\n".join(plan.describe())
    assert (
        "4000000000 replicate lanes" in text and "memory: a lane ≈" in text and "run time ≈" in text
    )


def test_a_resumed_plan_holds_exactly_the_missing_lanes(tmp_path):
    """Lanes whose every analysis point is stored are skipped; any other lane is planned, as
    the list of every (data point, replicate) minus the complete ones."""
    exp = small_experiment()
    out = tmp_path / "r"
    run_experiment(exp, reps=3, out=out, progress=False)
    plan = runner.plan_run(exp, reps=5, out=out)
    planned = sorted(
        (chunk.s, lane.d, lane.rep)
        for step in plan.steps
        for chunk in step.chunks
        for lane in chunk.lanes
    )
    grid = plan.grid
    expected = sorted(
        (s, d, rep)
        for s in range(len(grid.shapes))
        for d in range(len(grid.data_points))
        for rep in (3, 4)
    )
    assert planned == expected


def test_a_lane_larger_than_the_memory_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    exp = small_experiment()
    monkeypatch.setattr(runner, "memory_limit", lambda backend: (1000.0, "this machine's memory"))
    with pytest.raises(
        UsageError,
        match=r"one replicate lane needs about .* more than this machine's memory \(1 kB\)",
    ):
        runner.plan_run(exp, out=tmp_path / "big")
    with pytest.raises(UsageError, match="more than this machine's memory"):
        run_experiment(exp, out=tmp_path / "big", progress=False)
    assert not (tmp_path / "big").exists()


def test_format_bytes_and_duration():
    assert format_bytes(999) == "999 B" and format_bytes(28.8e9) == "28.8 GB"
    assert format_duration(42) == "42 s" and format_duration(600) == "10.0 min"
    assert format_duration(7200) == "2.0 h" and format_duration(3 * 86400) == "3.0 days"


def test_a_program_too_big_for_the_device_runs_at_fewer_lanes(reference, tmp_path, monkeypatch):
    """A chunk program whose buffers (XLA's buffer assignment, program.memory_needed) exceed
    what the device allows (batching.program_memory_limit: a share of an accelerator's memory)
    is compiled again at half the micro-batch, and half again, with one warning naming the
    sizes; the table is the same, and the manifest records the micro-batch it ran at.
    Simulated on the CPU (no limit there) with a limit no program meets: 4 lanes → 1, at one
    shape point (n = 8: 3 chunks of 4 lanes)."""
    from dpsim.engine.execution import program

    program.clear_cache()
    assert program.memory_needed(jax.jit(lambda x: x * 2).lower(jnp.ones(1000)).compile()) >= 8000
    asked = []  # the chunks in flight each limit was asked for (they share the device's memory)
    monkeypatch.setattr(
        program, "program_memory_limit", lambda in_flight=1: asked.append(in_flight) or 1.0
    )
    with pytest.warns(
        UserWarning,
        match=r"at micro-batch 4 needs .* shared by 3 chunk\(s\) in flight\); "
        r"it runs at micro-batch 1$",
    ):
        run_experiment(
            small_experiment(n_items=[8]),
            out=tmp_path / "small",
            progress=False,
            micro_batch=4,
            chunk=4,
            workers=3,
        )
    program.clear_cache()
    assert asked and set(asked) == {3}
    assert_same_results(table(tmp_path / "small"), at_n(reference[1], 8))
    recorded = store.read_manifest(tmp_path / "small")["history"][-1]["batching"]
    assert {step["micro"] for step in recorded} == {1}
    assert all("4 planned, fewer to fit the device's memory" in step["from"] for step in recorded)


def test_a_run_with_other_chunks_in_flight_reuses_the_compiled_programs(tmp_path, monkeypatch):
    """The memory limit depends on the chunks in flight, but it is checked on each call, not
    part of the compiled program's cache key: a warm re-run with ``workers=1`` after the
    default compiles nothing (it recompiled every program before). One shape point (n = 8)."""
    from dpsim.engine.execution import program

    program.clear_cache()
    monkeypatch.setattr(program, "program_memory_limit", lambda in_flight=1: 1e15 / in_flight)
    lowered = []
    real = program._lowered
    monkeypatch.setattr(program, "_lowered", lambda *a, **k: lowered.append(1) or real(*a, **k))
    exp = small_experiment(n_items=[8])
    run_experiment(exp, out=tmp_path / "two", progress=False, chunk=4, workers=2)
    compiled = len(lowered)
    assert compiled > 0
    run_experiment(exp, out=tmp_path / "one", progress=False, chunk=4, workers=1)
    program.clear_cache()
    assert len(lowered) == compiled
    assert_same_results(table(tmp_path / "one"), table(tmp_path / "two"))


def test_a_program_that_fits_one_chunk_in_flight_is_cut_for_more(reference, tmp_path, monkeypatch):
    """A program compiled (and cached) under the limit of one chunk in flight is checked again
    when a run has three in flight, whose limit it exceeds: released, run at fewer lanes, with
    one warning; a second such run goes straight to fewer lanes without a warning, and a run
    with one chunk in flight again gets the full micro-batch. Results are the same in all.
    One shape point (n = 8: 3 chunks of 4 lanes)."""
    import warnings
    from dpsim.engine.execution import program

    program.clear_cache()
    monkeypatch.setattr(
        program, "program_memory_limit", lambda in_flight=1: 1e15 if in_flight == 1 else 1.0
    )

    def run(name, workers):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run_experiment(
                small_experiment(n_items=[8]),
                out=tmp_path / name,
                progress=False,
                micro_batch=4,
                chunk=4,
                workers=workers,
            )
        assert_same_results(table(tmp_path / name), at_n(reference[1], 8))
        micros = {
            step["micro"]
            for step in store.read_manifest(tmp_path / name)["history"][-1]["batching"]
        }
        return micros, [str(w.message) for w in caught if "of device memory" in str(w.message)]

    assert run("one", 1) == ({4}, [])
    micros, warned = run("three", 3)
    assert micros == {1} and warned and all("shared by 3 chunk(s) in flight" in w for w in warned)
    assert run("three-again", 3) == ({1}, [])
    assert run("one-again", 1) == ({4}, [])
    program.clear_cache()


def test_folder_summaries_count_failures_and_replicates_per_point():
    """study_summary and unconverged on an Arrow table made by hand: replicates per point
    (distinct reps, by point id), every axis's sorted values, and per method with a solver
    the failures, their reasons and where, the most first and equal counts in grid order
    (a method without a solver, null ``converged``, is not counted)."""
    import pyarrow as pa

    class Two:
        axes = ("n_items", "eps")

        def derived_names(self, kind=None):
            return ()

    rows = [  # (n_items, eps, point, rep, method, converged, result)
        (10, 1.0, 1, 0, "mle", True, 0),
        (10, 1.0, 1, 1, "mle", False, 1),
        (10, 1.0, 1, 1, "borda", None, None),
        (10, 0.5, 2, 0, "mle", False, 2),
        (10, 0.5, 2, 0, "mle", False, 1),
        (20, 0.5, 3, 0, "mle", False, 1),
        (20, 0.5, 3, 2, "mle", False, 1),
        (20, 1.0, 4, 0, "mle", True, 0),
        (20, 1.0, 4, 0, "borda", None, None),
    ]
    names = ("n_items", "eps", "point", "rep", "method", "converged", "result")
    table = pa.table({name: [row[i] for row in rows] for i, name in enumerate(names)})
    study = runner.study_summary(table, Two())
    assert study["axes"] == {"n_items": [10, 20], "eps": [0.5, 1.0]} and study["rows"] == 9
    assert study["points"] == [
        {"n_items": 10, "eps": 1.0, "reps": 2},
        {"n_items": 10, "eps": 0.5, "reps": 1},
        {"n_items": 20, "eps": 0.5, "reps": 2},
        {"n_items": 20, "eps": 1.0, "reps": 1},
    ]
    assert study["grid_points"] == 4 and study["reps"] == {"min": 1, "max": 2}
    (item,) = runner.unconverged(table, Two())
    assert item == {
        "method": "mle",
        "failed": 5,
        "fits": 7,
        "reasons": "4 max steps, 1 non-finite",
        "where": "n_items=10, eps=0.5 (2); n_items=20, eps=0.5 (2); n_items=10, eps=1.0 (1)",
    }
    assert (
        runner.unconverged(table, Two(), limit=1)[0]["where"]
        == "n_items=10, eps=0.5 (2); and 2 more grid points"
    )
    assert runner.study_summary(None, Two()) == {"axes": {}, "points": [], "rows": 0}
    assert (
        runner.unconverged(None, Two()) == []
        and runner.unconverged(table.drop_columns(["converged"]), Two()) == []
    )
    one_eps = table.set_column(
        1, "eps", pa.array([1.0, math.nan, None] * 3)
    )  # NaN and null: not a value
    assert runner.unconverged(one_eps, Two())[0]["where"].startswith(
        "n_items=10 (3); n_items=20 (2)"
    )
