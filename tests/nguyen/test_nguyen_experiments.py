"""nguyen's experiment layer (dpsim.experiments.nguyen): registration, grid validation and bad
input through the command line, the check classes it adds (PASS and FAIL on constructed
tables), the predictions it takes from dpsim.theory.nguyen, the sparse-chain audit, and two
tiny runs (synthetic data in both modes; a Three Grades file read from disk).

The experiments' default grids are run at 2 replicates by tests/conformance/test_conformance.py (two values per axis) and in full
by ``dpsim verify nguyen``."""

from __future__ import annotations

import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import dpsim  # noqa: F401
from dpsim.errors import UsageError
from dpsim.estimators.spectral import (
    count_chain_stationary,
    regularise_counts,
    stationary_distribution,
)
from dpsim.engine.storage import store
from dpsim.engine.definition.grid import expand_grid
from dpsim.engine.registry import installed
from dpsim.linalg import batched_lapack_calls
from dpsim.audits.audit_responses import audit_sparse_gaussian, cycle_graph, max_cut_rows
from dpsim.theory import nguyen as theory
from dpsim.experiments.nguyen import CHECKS, EXPERIMENTS
from dpsim.engine import method_ratio_slope_check
from dpsim.engine.judgement.checks import method_ratio_check
from dpsim.experiments.nguyen.figures.claims import (
    metric_ratio_slope_check,
    relative_level_check,
    rms_slope_check,
)
from dpsim.experiments.nguyen.methods import resolve, SYNTHETIC, REAL

from cli_cases import refused

BY_NAME = {e.name: e for e in EXPERIMENTS}


# ----------------------------------------------------------------------------- registration


def test_registered_with_paper_prefixed_names():
    cat = installed()
    assert cat.papers.get("nguyen", "").startswith("Optimal and Private")
    for e in EXPERIMENTS:
        assert e.name.startswith("nguyen-") and cat.experiments[e.name] is e
    for c in CHECKS:
        assert c.name.startswith("nguyen-") and c.experiment in BY_NAME
    assert {a.name for a in cat.audits.values() if a.name.startswith("nguyen-")} == {
        "nguyen-discrete-gaussian",
        "nguyen-sparse-gaussian",
        "nguyen-discrete-laplace",
        "nguyen-response-rr",
    }
    assert len({c.name for c in CHECKS}) == len(CHECKS)


def test_modes_resolve_as_documented():
    paper = resolve({"mode": "paper"}, SYNTHETIC)
    assert (
        paper.accounting,
        paper.conversion,
        paper.noise,
        paper.connect,
        paper.private_solver,
        paper.nonprivate_solver,
        paper.uncentred,
    ) == ("synthetic_code", "paper", "nonzero", False, "power_lazy", "power_jump", True)
    assert resolve({"mode": "paper"}, REAL).accounting == "paper"
    strict = resolve({"mode": "strict", "accounting": "paper"}, SYNTHETIC)
    assert (
        strict.accounting,
        strict.conversion,
        strict.noise,
        strict.connect,
        strict.private_solver,
        strict.uncentred,
    ) == ("paper", "cks", "all", True, "solve", False)


@pytest.mark.parametrize(
    "name, overrides, want",
    [
        ("nguyen-fig1", {"eps": [0.0]}, "eps=0"),
        ("nguyen-fig1", {"delta": [1.0]}, "delta=1"),
        ("nguyen-fig1", {"p": [0.0]}, "p=0"),
        ("nguyen-fig1", {"p0": [1.5]}, "p0=1.5"),
        ("nguyen-fig1", {"p0": ["half"]}, "p0='half'"),
        ("nguyen-fig1", {"n_items": [1]}, "n_items=1"),
        ("nguyen-fig1", {"accounting": ["exact"]}, "accounting='exact'"),
        ("nguyen-fig1", {"conversion": ["rdp"]}, "conversion='rdp'"),
        ("nguyen-fig1", {"mode": ["faithful"]}, "mode='faithful'"),
        ("nguyen-fig3", {"n_items": [1]}, "n_items=1"),
        ("nguyen-fig2", {"dataset": ["sat"]}, "dataset='sat'"),
        ("nguyen-topk", {"k": [10]}, "k=10"),
    ],
)
def test_bad_grid_values_name_the_value(name, overrides, want):
    with pytest.raises(UsageError, match=want.replace("(", r"\(").replace(")", r"\)")):
        expand_grid(BY_NAME[name], overrides)


def test_p0_values_are_normalised_names():
    grid = expand_grid(BY_NAME["nguyen-p0"], {"p0": ["proposed", 0.25, "0.5"]})
    assert grid.axes["p0"] == ["proposed", "0.25", "0.5"]
    values = [d["p0_value"] for d in grid.analysis_derived[0][0][:3]]
    assert values[0] == pytest.approx(2 * math.log2(200) / 200)


# ----------------------------------------------------------------------------- CLI bad input

# An unknown axis and one bad value of each kind of every axis (eps=0, p0=0, an unknown
# accounting, …) are tried on every experiment by tests/conformance/test_conformance.py; here: the bounds
# its one value per kind does not reach, and bad data files.
BAD = [
    ("delta", ["run", "nguyen-fig1", "--set", "delta=1.5"], "delta=1.5"),
    ("p0", ["run", "nguyen-fig3", "--set", "p0=2"], "p0=2"),
    ("items", ["run", "nguyen-rates-items", "--set", "n_items=1"], "n_items=1"),
    (
        "missing-file",
        ["run", "nguyen-fig2", "--set", "grades_file=no/such/student-por.csv"],
        "no/such/student-por.csv",
    ),
    ("wrong-layout", ["run", "nguyen-fig2", "--set", "grades_file=BADFILE"], "G1"),
    ("unreadable", ["run", "nguyen-fig3", "--set", "ratings_file=DIRECTORY"], "folder"),
]


def _bad_case(args, cwd, data):
    """The command's arguments with its bad files made in ``data``; --out in ``cwd``."""
    bad = data / "grades.csv"
    bad.write_text("school;sex;age\nGP;F;18\n")
    folder = data / "folder"
    folder.mkdir()
    args = [a.replace("BADFILE", str(bad)).replace("DIRECTORY", str(folder)) for a in args]
    return [*args, "--out", str(cwd / "out"), "--no-progress"]


@pytest.mark.parametrize("name, args, want", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys, name, args, want):
    cwd, data = tmp_path / "cwd", tmp_path / "data"
    cwd.mkdir()
    data.mkdir()
    assert want in refused(_bad_case(args, cwd, data), cwd, monkeypatch, capsys)


# ----------------------------------------------------------------------------- check classes


def _paired_table(ratio, reps=400, seed=0, x=None):
    """Two methods on the same replicates: b ~ 1 + noise, a = ratio(x)·b·(1 + small noise)."""
    rng = np.random.default_rng(seed)
    rows = []
    for xi, xv in enumerate(x or [1.0]):
        r = ratio(xv) if callable(ratio) else ratio
        b = 1.0 + 0.2 * rng.standard_normal(reps) ** 2
        a = r * b * (1.0 + 0.05 * rng.standard_normal(reps))
        for rep in range(reps):
            for method, v in (("a", a[rep]), ("b", b[rep])):
                rows.append(
                    {
                        "n_items": xv,
                        "rep": rep,
                        "point": xi,
                        "method": method,
                        "l2": v,
                        "linf": v / xv,
                    }
                )
    table = pd.DataFrame(rows)
    table.attrs["method_columns"] = ["l2", "linf"]
    return table


def test_method_ratio_check_passes_and_fails():
    table = _paired_table(1.5)
    ok = method_ratio_check("t", "e", "l2", "a", "b", 1.4, 1.6).evaluate(table)
    bad = method_ratio_check("t", "e", "l2", "a", "b", 0.9, 1.1).evaluate(table)
    assert ok.verdict == "PASS" and 1.45 < ok.value < 1.55
    assert bad.verdict == "FAIL"
    rms = method_ratio_check("t", "e", "l2", "a", "b", 1.4, 1.6, root=True, square=True).evaluate(
        table
    )
    assert rms.verdict == "PASS"


def test_method_ratio_slope_check():
    """R7 and R9 use the engine's method_ratio_slope_check with a region, in log x (no g)."""
    xs = [2.0, 4.0, 8.0, 16.0]
    table = _paired_table(lambda x: x, x=xs)

    def make(low, high):
        return method_ratio_slope_check(
            "t",
            "e",
            metric="l2",
            numerator="a",
            denominator="b",
            x="n_items",
            region=(low, high),
            root=False,
        )

    assert make(0.9, 1.1).evaluate(table).verdict == "PASS"
    assert make(-0.1, 0.1).evaluate(table).verdict == "FAIL"


def test_metric_ratio_slope_check():
    table = _paired_table(1.0, x=[2.0, 4.0, 8.0, 16.0])  # linf = l2/x: slope −1
    assert (
        metric_ratio_slope_check("t", "e", "a", "linf", "l2", "n_items", -1.05, -0.95)
        .evaluate(table)
        .verdict
        == "PASS"
    )
    assert (
        metric_ratio_slope_check("t", "e", "a", "linf", "l2", "n_items", -0.5, 0.0)
        .evaluate(table)
        .verdict
        == "FAIL"
    )


def test_rms_slope_check():
    table = _paired_table(lambda x: x**1.5, x=[2.0, 4.0, 8.0, 16.0])  # RMS of a's l2 ∝ x^1.5
    assert (
        rms_slope_check("t", "e", "l2", "a", "n_items", 1.4, 1.6).evaluate(table).verdict == "PASS"
    )
    assert (
        rms_slope_check("t", "e", "l2", "a", "n_items", 0.9, 1.1).evaluate(table).verdict == "FAIL"
    )
    one_x = _paired_table(1.0, x=[4.0])
    for check in (
        rms_slope_check("t", "e", "l2", "a", "n_items", 1.4, 1.6),
        metric_ratio_slope_check("t", "e", "a", "linf", "l2", "n_items", -1.05, -0.95),
    ):
        with pytest.raises(UsageError, match="need two values of .n_items."):
            check.estimate(check.rows(one_x))


def test_relative_level_check():
    table = _paired_table(2.0)
    mean_a = table[table["method"] == "a"]["l2"].mean()
    assert (
        relative_level_check("t", "e", "l2", "a", mean_a, 0.9, math.inf).evaluate(table).verdict
        == "PASS"
    )
    assert (
        relative_level_check("t", "e", "l2", "a", 2 * mean_a, 0.9, math.inf).evaluate(table).verdict
        == "FAIL"
    )


def test_method_ratio_check_refuses_to_pool_an_axis():
    table = _paired_table(1.5, x=[1.0, 2.0])
    result = method_ratio_check("t", "e", "l2", "a", "b", 1.4, 1.6)
    with pytest.raises(UsageError, match="pool"):
        result.evaluate(table)


# ----------------------------------------------------------------------------- predictions


def test_predictions_of_the_checks():
    # R9: the exact discrete ratio tends to √(m(m − 1)/ln(1/δ)) as the Laplace scale grows
    for m in (6, 24):
        assert theory.laplace_gauss_shift_ratio(m, 5.0, 1e-4) == pytest.approx(
            float(theory.laplace_gauss_sigma_ratio(m, 1e-4)), rel=2e-3
        )
    # R10: the floor falls as ε_RR grows and tends to ‖β*_c‖₂ as ε_RR → 0
    beta = theory.quantile_design(10)
    assert theory.rr_floor_l2(0.01, 10) == pytest.approx(np.linalg.norm(beta), rel=2e-3)
    assert theory.rr_floor_l2(2.0, 10) < theory.rr_floor_l2(0.5, 10)
    # R6: median(M1 + M2)² / log m against a Monte-Carlo median
    rng = np.random.default_rng(0)
    z = rng.standard_normal((40000, 30))
    mc = np.median(z[:, 3:].max(axis=1) + z[:, :3].max(axis=1)) ** 2 / math.log(30)
    assert theory.top_k_midpoint_factor(30, 3) == pytest.approx(mc, rel=0.02)


def test_gth_stationary_matches_the_lu_solve_and_calls_no_lapack():
    Y = jax.random.uniform(jax.random.key(0), (4, 12, 12)) * jnp.logspace(0, 4, 12)[None, :, None]
    Ybar = jax.vmap(regularise_counts)(Y)
    gth = jax.vmap(count_chain_stationary)(Ybar)
    for y, pi in zip(Ybar, gth):
        rows = y.sum(1)
        P = jnp.eye(12) + (y - jnp.diag(rows)) / rows.max()
        np.testing.assert_allclose(pi, stationary_distribution(P), rtol=1e-10)
    compiled = jax.jit(jax.vmap(count_chain_stationary)).lower(Ybar).compile()
    text = compiled.as_text()
    assert batched_lapack_calls(text) == []
    assert not re.findall(r"custom_call_target=\"[^\"]*lapack", text), re.findall(
        r".{40}lapack.{40}", text
    )


# ----------------------------------------------------------------------------- audit


def test_sparse_audit_flags_the_synthetic_accounting_on_a_bipartite_graph():
    assert max_cut_rows(cycle_graph(5))[2] == 8 and max_cut_rows(cycle_graph(6))[2] == 12
    results = audit_sparse_gaussian(jax.random.key(0), (1.0,), n_samples=20_000)
    by_mode = {r.mode: r for r in results}
    assert by_mode["tight_joint/cks"].within_budget and by_mode["paper/bun_steinke"].within_budget
    bad = by_mode["synthetic_code/paper"]
    assert not bad.within_budget and bad.known_violation
    assert all(r.empirically_consistent for r in results)


# ----------------------------------------------------------------------------- tiny runs


def test_tiny_synthetic_run_both_modes(tmp_path):
    from dpsim.engine.execution.runner import run_experiment

    exp = BY_NAME["nguyen-fig1"]
    run_experiment(
        exp,
        reps=3,
        out=tmp_path / "run",
        progress=False,
        overrides={"n_items": [12], "n_users": [300], "eps": [1.0, math.inf]},
    )
    df = store.load_results(tmp_path / "run")
    assert len(df) == 3 * 2 * 2 * 5  # reps × ε × modes × methods
    assert set(df["mode"]) == {"paper", "strict"}
    assert df["l2"].notna().all() and df["linf"].notna().all()
    private = df[df["method"] != "nonprivate"]
    assert (private["privacy_l2"] >= 0).all()
    # ε = ∞: no noise, so the dense chains equal the non-private fit of their mode
    exact = df[
        (df["eps"] == math.inf) & df["method"].isin(["gaussian", "laplace", "gaussian_sparse"])
    ]
    assert exact[exact["method"] != "gaussian_sparse"]["privacy_l2"].max() < 1e-4
    # the data are shared by both modes (common random numbers): the non-private exact and
    # power-iteration fits agree entrywise on every replicate
    nonpriv = df[df["method"] == "nonprivate"].pivot_table(
        index=["rep", "eps"], columns="mode", values="linf"
    )
    np.testing.assert_allclose(nonpriv["paper"], nonpriv["strict"], atol=1e-4)
    # strict fits are exact solves on connected chains
    strict = df[(df["mode"] == "strict")]
    assert strict["converged"].all() and (strict["iterations"] == 0).all()


def test_tiny_real_run_reads_the_file(tmp_path):
    from dpsim.engine.execution.runner import run_experiment

    rng = np.random.default_rng(1)
    grades = rng.integers(0, 21, size=(60, 3))
    lines = ['"school";"G1";"G2";"G3"'] + [f'"GP";{a};{b};{c}' for a, b, c in grades]
    path = tmp_path / "student-por.csv"
    path.write_text("\n".join(lines) + "\n")
    exp = BY_NAME["nguyen-fig2"]
    run_experiment(
        exp,
        reps=2,
        out=tmp_path / "run",
        progress=False,
        overrides={
            "dataset": ["three_grades"],
            "grades_file": [str(path)],
            "eps": [1.0],
            "mode": ["strict"],
        },
    )
    df = store.load_results(tmp_path / "run")
    assert set(df["n_users"]) == {60} and set(df["n_items"]) == {3}
    manifest = store.read_manifest(tmp_path / "run")
    assert str(path) in str(manifest["study"])


def test_tiny_topk_run(tmp_path):
    """Top-K: linf_over_gap = linf/Δ, and exactly where ‖β̂ − β*‖∞ < Δ/2 is the top K
    certainly recovered (Thm 3.2's proof; a top-k mask that held K − 1 items, the engine bug
    fixed on main, would fail there)."""
    from dpsim.engine.execution.runner import run_experiment

    exp = BY_NAME["nguyen-topk"]
    run_experiment(
        exp,
        reps=20,
        out=tmp_path / "run",
        progress=False,
        overrides={"n_items": [10, 100], "signal": [1.0, 40.0]},
    )
    df = store.load_results(tmp_path / "run")
    assert len(df) == 20 * 2 * 2 and df["converged"].all()
    np.testing.assert_allclose(df["linf_over_gap"], df["linf"] / df["gap"], rtol=1e-12)
    separated = df["linf_over_gap"] < 0.5
    assert separated.any() and (df.loc[separated, "exact_recovery"] == 1).all()
    assert (df.loc[df["exact_recovery"] == 0, "linf_over_gap"] >= 0.5).all()


def test_predictions_are_computed_when_judged_and_match_the_closed_forms():
    """No rounded literal: the checks hold deferred predictions, resolved to predictions()
    when judged; the slopes the theorems state exactly come out exactly."""
    from dpsim.engine.judgement.deferred import resolved
    from dpsim.experiments.nguyen.figures import rates, topk

    computed = rates.predictions()
    for key, exact in (
        ("stat_slope_n", -0.5),
        ("stat_slope_m", 0.5),
        ("stat_slope_p", -0.5),
        ("excess_slope_n", -1.0),
        ("excess_slope_m", 1.0),
        ("excess_slope_p", -2.0),
        ("laplace_slope_m", 2.0),
    ):
        assert computed[key] == pytest.approx(exact, abs=1e-9), key
    check = next(c for c in rates.CHECKS if c.name == "nguyen-r8-excess-vs-eps")
    assert resolved(check).region == pytest.approx(
        (computed["excess_slope_eps"] - 0.1, computed["excess_slope_eps"] + 0.1), abs=1e-12
    )
    ratio = next(c for c in rates.CHECKS if c.name == "nguyen-r9-laplace-over-gaussian-m24")
    assert resolved(ratio).region == pytest.approx(
        (0.9 * computed["laplace_ratio"][24], 1.1 * computed["laplace_ratio"][24]), rel=1e-12
    )
    spreads = topk.predictions()
    collapse = next(c for c in topk.CHECKS if c.name == "nguyen-r6-topk-collapse")
    assert resolved(collapse).max_ratio == pytest.approx(
        math.sqrt(spreads["spread"] * spreads["spread_nolog"])
    )
    assert spreads["spread"] < resolved(collapse).max_ratio < spreads["spread_nolog"]
