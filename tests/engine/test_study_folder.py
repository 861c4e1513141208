"""A study folder knows what made it (provenance): the manifest records the code
fingerprint (library and definition hashes, version, commit) and the environment; extending
a folder with other code is refused in one line that names both, writing nothing; `dpsim
verify` recomputes its own folders when the code changed; the version is written once."""

from __future__ import annotations

import json
import textwrap
from importlib.metadata import version
from pathlib import Path

import pytest

import dpsim
from dpsim.cli import main
from dpsim.engine.storage.digests import module_digest
from dpsim.engine.storage.provenance import definition_modules, describe, fingerprint
from dpsim.engine.judgement.mutants import scaled_analysis
from laplace_study import study_text

STUDY = study_text("prov", n_items=20, reps=4, region=(0.5, 2.0), figure=True)


@pytest.fixture
def study(tmp_path, monkeypatch):
    path = tmp_path / "study.py"
    path.write_text(textwrap.dedent(STUDY))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPSIM_JAX_CACHE", "off")
    return path


def _parts(out):
    return sorted(p.name for p in (out / "parts").glob("*.parquet"))


def test_the_manifest_records_code_and_environment(study):
    assert main(["run", "study.py", "--no-progress"]) == 0
    manifest = json.loads((study.parent / "runs" / "prov" / "manifest.json").read_text())
    code = manifest["code"]
    runner = Path(dpsim.__file__).parent / "engine" / "execution" / "runner.py"
    assert (
        code["modules"]["dpsim/engine/execution/runner.py"] == module_digest(runner)
        and code["dpsim"] == dpsim.__version__
    )
    assert code["definition_files"] == ["study.py"] and len(code["hash"]) == 16
    run = manifest["history"][0]
    assert run["command"] == ["run", "study.py", "--no-progress"] or run["command"]
    assert {"jax", "jaxlib", "numpy", "pandas", "pyarrow", "matplotlib"} <= set(run["versions"])
    assert run["host"] and run["cpu"] and run["backend"] == "cpu"


def test_extending_with_other_code_is_refused(study, capsys):
    """A study file changed by one line (the noise at ε·0.01), then extended
    into the same folder: refused, nothing written."""
    out = study.parent / "runs" / "prov"
    assert main(["run", "study.py", "--no-progress"]) == 0
    assert main(["run", "study.py", "--reps", "6", "--no-progress"]) == 0  # same code: extends
    before = _parts(out)
    first = json.loads((out / "manifest.json").read_text())["code"]["hash"]
    study.write_text(
        study.read_text()
        .replace("(2.0 / ctx.analysis", "(2.0 / (0.01 * ctx.analysis")
        .replace('ctx.analysis["eps"]) *', 'ctx.analysis["eps"])) *')
    )
    capsys.readouterr()
    assert main(["run", "study.py", "--reps", "9", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and first in err and "never mixed" in err
    assert err.count("code ") >= 2  # both fingerprints named
    assert _parts(out) == before
    assert main(["run", "study.py", "--reps", "9", "--out", "runs/prov-2", "--no-progress"]) == 0


def test_verify_recomputes_a_folder_made_by_other_code(study, capsys):
    assert main(["verify", "study.py", "--no-progress"]) in (0, 3)
    out = study.parent / "runs" / "verify" / "prov"
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["code"]["hash"] = "0123456789abcdef"  # as if made by other code
    (out / "manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(["verify", "study.py", "--no-progress"]) in (0, 3)
    captured = capsys.readouterr()
    assert "made by code 0123456789abcdef" in captured.err and "recomputing" in captured.err
    assert json.loads((out / "manifest.json").read_text())["code"]["hash"] != "0123456789abcdef"
    assert len(json.loads((out / "manifest.json").read_text())["history"]) == 1


def test_fingerprint_follows_a_paper_package_and_a_mutant():
    from dpsim.engine.registry import experiment

    fig3, _ = experiment("cai-fig3")
    files = {p.name for p in definition_modules(fig3)}
    assert {
        "edge.py",
        "model.py",
        "methods.py",
    } <= files and "mutants.py" not in files  # what fig3's code reaches
    mutated = scaled_analysis({"eps": 2.0})(fig3)
    assert (
        fingerprint(mutated)["hash"] != fingerprint(fig3)["hash"]
    )  # the mutant's wiring and factor
    assert fingerprint(scaled_analysis({"eps": 3.0})(fig3))["hash"] != fingerprint(mutated)["hash"]
    assert (
        describe({"hash": "ab", "dpsim": "1", "commit": "c" * 40, "dirty": True})
        == "code ab (dpsim 1, commit cccccccccc + uncommitted changes)"
    )


def test_fingerprint_kept_in_the_process_follows_an_edited_file(study):
    """The import closure is kept per experiment object while its files are unchanged
    (``provenance._MODULES_MEMO``): the same object's fingerprint is the same, and an edit of a
    reached function in its file changes it without a new object (a noise scale ×2)."""
    from dpsim.engine import registry

    experiment, _ = registry.experiment(f"{study}:prov")
    first = fingerprint(experiment)
    assert fingerprint(experiment) == first
    text = study.read_text()
    study.write_text(text.replace("(2.0 / ctx.analysis", "(4.0 / ctx.analysis"))
    assert fingerprint(experiment)["definition"] != first["definition"]
    study.write_text(text)
    assert fingerprint(experiment)["hash"] == first["hash"]


def test_one_version_number():
    assert version("dpsim") == dpsim.__version__


def _no_bare_constants(name):
    raise AssertionError(f"manifest holds the non-JSON constant {name}")


def test_manifest_is_json_and_reads_back_infinity(study):
    assert main(["run", "study.py", "--set", "eps=1,inf", "--no-progress"]) == 0
    out = study.parent / "runs" / "prov"
    raw = json.loads((out / "manifest.json").read_text(), parse_constant=_no_bare_constants)
    assert raw["study"]["axes"]["eps"] == [1.0, "inf"] and raw["complete"] is True
    from dpsim.engine.storage.store import read_manifest

    assert read_manifest(out)["study"]["axes"]["eps"] == [1.0, float("inf")]


def test_verify_leaves_a_finished_run_untouched(study):
    assert main(["verify", "study.py", "--no-progress"]) in (0, 3)
    manifest = study.parent / "runs" / "verify" / "prov" / "manifest.json"
    before = manifest.read_bytes()
    assert main(["verify", "study.py", "--no-progress"]) in (0, 3)
    assert manifest.read_bytes() == before


def test_plot_says_incomplete_and_removes_stale_figures(study, capsys):
    assert main(["run", "study.py", "--no-progress"]) == 0
    out = study.parent / "runs" / "prov"
    stale = out / "figure-link=probit.png"
    stale.write_bytes(b"old")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["complete"] = False
    (out / "manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(["plot", str(out)]) == 0
    assert "incomplete run" in capsys.readouterr().err
    assert not stale.exists() and (out / "figure.png").exists() and (out / "figure.csv").exists()


BROKEN = STUDY.replace(
    'return {"noise_ms": jnp.mean(noise ** 2)}', 'return {"noise_ms": ctx.analysis["sigma"]}'
)


def test_a_broken_method_is_one_line_and_leaves_nothing(study, capsys):
    study.write_text(textwrap.dedent(BROKEN))
    assert main(["run", "study.py", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "method 'laplace' failed: KeyError" in err and "sigma" in err and "--traceback" in err
    assert not (study.parent / "runs" / "prov").exists()


def test_traceback_flag_shows_the_whole_trace(study, monkeypatch):
    study.write_text(textwrap.dedent(BROKEN))
    # --traceback sets $DPSIM_TRACEBACK=1 in this process; setting it (to "", which reads as unset)
    # through monkeypatch makes pytest undo that after the test, so no later test sees the flag
    monkeypatch.setenv("DPSIM_TRACEBACK", "")
    with pytest.raises(KeyError, match="sigma"):
        main(["--traceback", "run", "study.py", "--no-progress"])
    assert not (study.parent / "runs" / "prov").exists()


def test_bad_outputs_are_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "cai-fig3", "--set", "eps=1e400", "--dry-run"]) == 2
    assert "value '1e400' overflows a float" in capsys.readouterr().err
    assert (
        main(["run", "cai-fig3", "--reps", "1", "--out", "/proc/forbidden", "--no-progress"]) == 2
    )
    assert "cannot be created" in capsys.readouterr().err


def test_proportions_get_wilson_intervals_and_slopes_refuse_an_unidentified_design():
    """Exact recovery failing in every replicate: the normal interval collapses to [0, 0],
    Wilson's is [0, 3.7/n] (z²/(n + z²)); a slope pooled over an axis that fixes x in each
    group (xu-fig3's case: ε a function of n_users) is refused, not fitted."""
    import numpy as np
    import pandas as pd
    from dpsim.errors import UsageError
    from dpsim.engine.presentation.summary import loglog_slope, summarise

    table = pd.DataFrame(
        {
            "eps": [1.0] * 100 + [2.0] * 100,
            "rep": list(range(100)) * 2,
            "method": "m",
            "exact": [0.0] * 100 + [1.0] * 99 + [0.0],
        }
    )
    table.attrs["method_columns"] = ["exact"]
    out = summarise(table, "exact", ["eps"]).set_index("eps")
    z2 = 1.959963984540054**2
    assert out.loc[1.0, "ci_low"] == pytest.approx(0.0, abs=1e-12)
    assert out.loc[1.0, "ci_high"] == pytest.approx(z2 / (100 + z2), rel=1e-12)
    assert 0 < out.loc[2.0, "ci_low"] < 0.99 < out.loc[2.0, "ci_high"] <= 1.0
    rng = np.random.default_rng(0)
    users = np.repeat([100, 200, 400], 50)
    design = pd.DataFrame(
        {
            "n_users": users,
            "eps": 10 / np.sqrt(users),
            "rep": np.tile(range(50), 3),
            "method": "m",
            "linf": rng.gamma(4.0, 0.1, 150),
        }
    )
    design.attrs["method_columns"] = ["linf"]
    with pytest.raises(UsageError, match="not identified"):
        loglog_slope(design, "linf", "eps", pool=["n_users"])
    assert loglog_slope(design, "linf", "eps").n_points == 3


def test_export_and_summary(study, capsys):
    import pandas as pd

    assert main(["run", "study.py", "--no-progress"]) == 0
    out = study.parent / "runs" / "prov"
    for suffix, read in (
        (".csv", pd.read_csv),
        (".parquet", pd.read_parquet),
        (".feather", pd.read_feather),
    ):
        assert main(["export", str(out), "--to", f"table{suffix}"]) == 0
        table = read(study.parent / f"table{suffix}")
        assert len(table) == 8 and {"eps", "rep", "method", "noise_ms"} <= set(table.columns)
    assert main(["export", str(out), "--to", "table.txt"]) == 2
    assert main(["export", "nowhere", "--to", "t.csv"]) == 2
    capsys.readouterr()
    assert main(["summary", str(out)]) == 0
    text = capsys.readouterr().out
    assert "ci_low" in text and text.count("laplace") == 2  # one row per ε
    assert main(["summary", str(out), "--slope", "noise_ms:eps"]) == 0
    assert "slope of log noise_ms on log eps -2." in capsys.readouterr().out  # variance 8/ε²


def test_unknown_names_suggest_the_closest(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "cai-fig33", "--dry-run"]) == 2
    assert "did you mean 'cai-fig3'" in capsys.readouterr().err
    assert main(["run", "cai-fig3", "--set", "epss=1", "--dry-run"]) == 2
    assert "did you mean 'eps'?" in capsys.readouterr().err


def test_list_one_paper(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["list", "xu"]) == 0
    out = capsys.readouterr().out
    names = [
        line.split()[0]
        for line in out.splitlines()
        if line.startswith("  ") and not line.startswith("   ")
    ]
    assert names and all(n.startswith("xu-") for n in names)
    assert "xu-debiasing-removed" in out and "xu-pairwise-ldp" in out  # its mutants and audits too
    assert main(["list", "xuu"]) == 2
    assert "unknown paper or experiment 'xuu'" in capsys.readouterr().err
