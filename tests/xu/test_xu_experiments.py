"""The xu experiments package (experiments/xu, §5): registration and
names, host-side values (schemes, K, the heterogeneous atoms), the release keyed so that
classic and debiased RR share their flips (and the identity check failing when they do not),
the custom checks on synthetic tables (each can pass and fail), and bad input
through the command line (one line, exit 2, nothing written)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpsim  # noqa: F401
from dpsim.errors import UsageError
from dpsim.engine import IdenticalAcrossCheck, column_ratio_check, predicted_ratio_check
from dpsim.engine.definition.grid import expand_grid
from dpsim.engine.execution.program import release_words
from dpsim.engine.registry import installed
from dpsim.engine.execution.runner import run_experiment
from dpsim.engine.storage.store import load_results
from dpsim.experiments import xu
from dpsim.experiments.xu import model
from dpsim.experiments.xu.figures import hetero, realdata, scenarios
from dpsim.mechanisms.privacy_profile import privacy_G, profile_group_sizes
from dpsim.theory import xu as theory

from cli_cases import refused

ROOT = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- registration
def test_registered_with_prefixed_names_and_known_experiments():
    found = installed()
    names = {e.name for e in xu.EXPERIMENTS}
    assert {"xu-fig2", "xu-fig3", "xu-fig4", "xu-fig5", "xu-fig6", "xu-fig7", "xu-hetero"} <= names
    assert all(n.startswith("xu-") for n in names) and names <= set(found.experiments)
    checks = [c.name for c in xu.CHECKS]
    assert len(checks) == len(set(checks)) and all(n.startswith("xu-") for n in checks)
    assert all(c.experiment in names for c in xu.CHECKS)
    assert [a.name for a in xu.AUDITS] == ["xu-pairwise-ldp"] and "xu-pairwise-ldp" in found.audits
    assert found.papers["xu"] == xu.TITLE
    # the paper's grids and replicate counts (xu §5)
    fig = {e.name: e for e in xu.EXPERIMENTS}
    assert fig["xu-fig2"].reps == 50 and fig["xu-fig2"].axes["n_users"] == [100, 200, 400, 800]
    assert fig["xu-fig4"].reps == 100 and fig["xu-fig4"].axes["gap"] == [0.05, 0.1, 0.15, 0.2]
    assert fig["xu-fig6"].reps == 100 and fig["xu-fig7"].reps == 200


# ----------------------------------------------------------------------------- host values
def test_scheme_eps_top_k_and_user_budget():
    grid = expand_grid(scenarios.FIG3, {"n_items": [10], "n_users": [100, 1600]})
    eps = {
        (d["n_users"], a["scheme"]): grid.analysis_derived[0][i][j]["eps"]
        for i, d in enumerate(grid.data_points)
        for j, a in enumerate(grid.analysis_points)
    }
    assert all(eps[(100, s)] == pytest.approx(1.0) for s in theory.SCHEMES)  # ε(m, L0) = 1
    assert eps[(1600, "eps_inv_sqrt")] == pytest.approx(0.25)  # docs/xu.md, Predictions (P5)
    assert eps[(1600, "eps_log_over_sqrt")] > 0.25 > eps[(1600, "eps_inv_sqrt_log")]
    assert grid.shapes[0]["k"] == 5 and "top_k" not in grid.shapes[0]  # stored resolved, one column
    assert grid.analysis_derived[0][0][0]["eps_user"] == pytest.approx(
        45 * eps[(100, theory.SCHEMES[0])]
    )
    assert model.resolve_k({"n_items": 7, "k": "auto"}) == {"n_items": 7, "k": 3}
    assert model.resolve_k({"n_items": 7, "k": 6}) == {"n_items": 7, "k": 6}
    with pytest.raises(UsageError, match="k=7"):
        model.resolve_k({"n_items": 7, "k": 7})


def test_the_release_is_keyed_by_every_analysis_axis_but_mechanism_and_mode():
    assert model.release_axes(("eps", "mechanism", "mode")) == ("eps",)
    assert scenarios.FIG6.keys.release_axes == ("eps",) and scenarios.FIG3.keys.release_axes == (
        "scheme",
        "l0",
    )
    assert hetero.HETERO.keys.release_axes == ("eps", "profile", "match")
    assert realdata.FIG7.keys.release_axes == ("scheme", "l0")
    points = [
        {"eps": 2.0, "mechanism": "classic_rr", "mode": "paper"},
        {"eps": 2.0, "mechanism": "debiased_rr", "mode": "g_over_l"},
        {"eps": 1.0, "mechanism": "debiased_rr", "mode": "g_over_l"},
    ]
    a, b, c = release_words(scenarios.FIG6, points)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c) and a.dtype == np.uint32


@pytest.mark.parametrize("L", [4000, 16000, 1003])
def test_hetero_groups_are_unions_of_atoms(L):
    cuts = hetero.atom_cuts(L)
    assert len(cuts) == 6 and cuts[0] == 0 and cuts[-1] == L and np.all(np.diff(cuts) >= 0)
    atoms = np.diff(cuts)
    for profile in hetero.HETERO_PROFILES:
        point = {"n_users": L, "eps": 1.0, "profile": profile}
        own = hetero.profile_release({**point, "match": "profile"})
        sizes = own["group_atoms"] @ atoms
        n_groups = len(profile_group_sizes(profile, L))
        np.testing.assert_array_equal(sizes[:n_groups], profile_group_sizes(profile, L))
        assert sizes.sum() == L and np.all(own["group_atoms"].sum(axis=0) == 1)  # a partition
        same_g = hetero.profile_release({**point, "match": "same_g"})
        same_mean = hetero.profile_release({**point, "match": "same_mean_eps"})
        assert same_g["G"] == pytest.approx(own["G"], rel=1e-12)
        assert same_mean["mean_eps"] == pytest.approx(own["mean_eps"], rel=1e-12)
        assert same_mean["G"] < own["G"]
        assert own["G"] == pytest.approx(float(privacy_G(own["group_eps"], sizes)))


def test_movielens_stand_in_and_bad_sizes():
    assert (
        realdata.resolve_shape({"ratings_file": realdata.STAND_IN, "n_items": 40, "k": "auto"})["k"]
        == 10
    )
    shape = realdata.describe_source({"ratings_file": realdata.STAND_IN, "n_items": 40, "k": 10})
    assert shape["n_total"] == 610 and "stand-in" in shape["source"]
    _, theta = realdata.rankings_and_theta(realdata.STAND_IN, 40)
    assert theta.shape == (40,) and abs(theta.sum()) < 1e-9
    with pytest.raises(UsageError, match="n_users=611"):
        expand_grid(realdata.FIG7, {"n_users": [611]})


# ----------------------------------------------------------------------------- the pipeline
def _tiny_fig6(**changes):
    return dataclasses.replace(scenarios.FIG6, name="t-xu-fig6", **changes)


@pytest.fixture(scope="module")
def fig6_tables(tmp_path_factory):
    """A tiny Scenario V run, and the same with the mechanism put into the release key (the
    flips of classic and debiased RR then differ)."""
    grid = {
        "n_items": [6],
        "n_users": [30, 60],
        "mechanism": ["classic_rr", "debiased_rr", "laplace"],
    }
    out = tmp_path_factory.mktemp("xu-fig6")
    run_experiment(_tiny_fig6(), reps=6, out=out / "ok", overrides=grid, progress=False)
    run_experiment(
        _tiny_fig6(
            keys=dataclasses.replace(scenarios.FIG6.keys, release_axes=("eps", "mechanism"))
        ),
        reps=6,
        out=out / "mutated",
        overrides=grid,
        progress=False,
    )
    return load_results(out / "ok"), load_results(out / "mutated")


IDENTITY = next(c for c in scenarios.FIG6_CHECKS if isinstance(c, IdenticalAcrossCheck))


def test_classic_and_debiased_rr_share_flips_and_rank_identically(fig6_tables):
    table, mutated = fig6_tables
    assert table["converged"].all()
    result = IDENTITY.evaluate(table)
    # reported only (no calibration error can move a shared-flip identity);
    # the identity itself still holds: 0 mismatches
    assert result.verdict == "INFO" and result.value == 0.0, result.line()
    wide = table.pivot_table(index=["n_users", "rep"], columns="mechanism", values="l2_rms")
    assert (wide["classic_rr"] != wide["debiased_rr"]).all()  # different estimates, same ranking
    assert set(table["lam"].round(12)) == {
        round(float(theory.privacy_G(2.0)) / L, 12) for L in (30, 60)
    }
    # with the flips drawn per mechanism the identity is lost: the check can fail
    failed = dataclasses.replace(IDENTITY, report_only=False).evaluate(mutated)
    assert failed.verdict == "FAIL" and failed.value > 0, failed.line()


def test_fig6_results_do_not_depend_on_other_mechanisms(fig6_tables, tmp_path):
    """The release is keyed by the privacy level, not the grid: running debiased RR alone
    reproduces its rows exactly."""
    table, _ = fig6_tables
    alone = run_experiment(
        _tiny_fig6(),
        reps=6,
        out=tmp_path / "alone",
        progress=False,
        overrides={"n_items": [6], "n_users": [30, 60], "mechanism": ["debiased_rr"]},
    )
    one = load_results(alone.out).sort_values(["n_users", "rep"]).reset_index(drop=True)
    both = (
        table[table["mechanism"] == "debiased_rr"]
        .sort_values(["n_users", "rep"])
        .reset_index(drop=True)
    )
    np.testing.assert_array_equal(one["l2_rms"].to_numpy(), both["l2_rms"].to_numpy())


# ----------------------------------------------------------------------------- custom checks
def _rows(values: dict, reps=400, seed=0, **columns):
    rng = np.random.default_rng(seed)
    out = []
    for key, (scale, extra) in values.items():
        base = rng.gamma(20.0, 1 / 20.0, reps)
        for rep in range(reps):
            out.append(
                {
                    "method": "m_est",
                    "rep": rep,
                    "point": hash(key) % 1000,
                    **dict(key),
                    "mse": scale * base[rep] * rng.gamma(50.0, 1 / 50.0),
                    "oracle_mse": extra * base[rep],
                    "converged": True,
                    **columns,
                }
            )
    table = pd.DataFrame(out)
    table.attrs["method_columns"] = ["mse", "oracle_mse", "converged"]
    return table


def test_mean_ratio_check_passes_and_fails():
    table = _rows({(("eps", 1.0),): (1.0, 1.0)})
    check = column_ratio_check("t", "t", "mse", "oracle_mse", "m_est", *scenarios.SANDWICH)
    assert check.evaluate(table).verdict == "PASS"
    assert check.evaluate(_rows({(("eps", 1.0),): (1.5, 1.0)})).verdict == "FAIL"


def test_predicted_ratio_check_passes_and_fails():
    ok = _rows({(("eps", 1.0),): (4.0, 4.0), (("eps", 3.0),): (1.0, 1.0)})
    check = predicted_ratio_check(
        "t", "t", "mse", "oracle_mse", "m_est", "eps", 1.0, 3.0, *scenarios.SANDWICH
    )
    assert check.evaluate(ok).verdict == "PASS"
    off = _rows({(("eps", 1.0),): (6.0, 4.0), (("eps", 3.0),): (1.0, 1.0)})
    assert check.evaluate(off).verdict == "FAIL"


def test_identical_across_check_is_exact():
    same = _rows({(("mechanism", "a"),): (1.0, 1.0)}, reps=5)
    twin = same.assign(mechanism="b")
    check = IdenticalAcrossCheck("t", "t", ("oracle_mse",), "m_est", "mechanism", "a", "b")
    assert check.evaluate(pd.concat([same, twin])).verdict == "PASS"
    twin.loc[2, "oracle_mse"] += 1e-9
    result = check.evaluate(pd.concat([same, twin]))
    assert result.verdict == "FAIL" and result.value == 1


# ----------------------------------------------------------------------------- audit
# The registered audit (xu.AUDITS) is run and judged in tests/xu/test_xu_mechanisms.py
# (test_audits_are_within_eps).


# ----------------------------------------------------------------------------- command line
def _write(path: Path, text: bytes) -> Path:
    path.write_bytes(text)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("ratings")
    (d / "folder").mkdir()
    return {
        "wrong": _write(d / "wrong.csv", b"a,b,c\n1,2,3\n"),
        "binary": _write(d / "binary.csv", bytes(range(256)) * 4),
        "scale": _write(d / "scale.csv", b"userId,movieId,rating,timestamp\n1,2,7.0,0\n"),
        "missing": d / "missing.csv",
        "folder": d / "folder",
    }


# An unknown axis and one bad value of each kind of every axis (eps=0, n_users=0, gap=0, l0=0,
# an unknown scheme, mechanism, profile or mode, k = n_items, …) are tried on every
# experiment by tests/conformance/test_conformance.py; here: the bounds its one value per kind does not
# reach, xu's own rules on whole grid points, and bad ratings files.
BAD = [
    ("eps=-1", ["xu-fig6", "--set", "eps=-1"], "eps=-1"),
    ("n_items=1", ["xu-fig2", "--set", "n_items=1"], "n_items=1"),
    (
        "paper-lambda-inf",
        ["xu-fig2", "--set", "mode=paper", "--set", "eps=inf"],
        "mode=paper is undefined at eps=inf",
    ),
    (
        "renamed-lambda-rule",
        ["xu-lambda-rule", "--set", "lambda_rule=paper"],
        "unknown axis 'lambda_rule' (did you mean 'mode', its new name?)",
    ),
    ("L>610", ["xu-fig7", "--set", "n_users=611"], "n_users=611"),
    ("missing", ["xu-fig7", "--set", "ratings_file={missing}"], "missing.csv"),
    ("folder", ["xu-fig7", "--set", "ratings_file={folder}"], "folder"),
    ("wrong-layout", ["xu-fig7", "--set", "ratings_file={wrong}"], "wrong.csv"),
    ("binary", ["xu-fig7", "--set", "ratings_file={binary}"], "binary.csv"),
    ("off-scale", ["xu-fig7", "--set", "ratings_file={scale}"], "rating 7"),
    (
        "renamed-ratings",
        ["xu-fig7", "--set", "ratings={scale}"],
        "did you mean 'ratings_file', its new name?",
    ),
]


def _bad_command(args, files, cwd):
    return [
        "run",
        *[a.format(**{k: str(v) for k, v in files.items()}) for a in args],
        "--out",
        str(cwd / "out"),
        "--no-progress",
    ]


@pytest.mark.parametrize("name, args, want", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_line_and_writes_nothing(
    files, tmp_path, monkeypatch, capsys, name, args, want
):
    assert want in refused(_bad_command(args, files, tmp_path), tmp_path, monkeypatch, capsys)
