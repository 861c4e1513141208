"""The ``dpsim`` command as a researcher meets it: version, usage, show, --dry-run, a study
file run from another directory (run, show, verify, plot, list), the audit registry, honest
verify output, warnings for unconverged fits, and one-line errors for path problems and for a
too small n_items under the automatic k. Each command runs in this process as the console
script runs it (``dpsim.cli.main``, from the given working directory, tests/cli_cases.py);
the console script itself, in a fresh interpreter, is tested once in tests/engine/test_cli.py.
(`dpsim list` and the command's own bad options: tests/engine/test_cli.py; bad axis values of every
experiment: tests/conformance/test_conformance.py.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import NamedTuple

import pytest

from cli_cases import run_in_process

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "examples" / "custom_study.py"


class Ran(NamedTuple):
    """A finished command: its exit status and what it printed."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def dpsim(monkeypatch, capsys):
    """``dpsim(args, cwd, env=None)``: ``dpsim ARGS`` run from the folder ``cwd`` with the
    environment variables ``env`` set (for the rest of the test), as a :class:`Ran`
    (:func:`cli_cases.run_in_process`)."""

    def run(args, cwd, env=None) -> Ran:
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        return Ran(*run_in_process(args, cwd, monkeypatch, capsys))

    return run


def test_version_and_bare_usage(tmp_path, dpsim):
    version = dpsim(["--version"], tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("dpsim ")
    bare = dpsim([], tmp_path)
    bare_text = " ".join(bare.stdout.split())
    assert bare.returncode == 0 and "usage: dpsim" in bare_text and "dpsim show NAME" in bare_text
    helped = " ".join(dpsim(["run", "--help"], tmp_path).stdout.split())  # help text wraps lines
    assert "dpsim list" in helped and "dpsim show NAME" in helped and "--dry-run" in helped


def test_show_prints_axes_kinds_defaults_methods_metrics(tmp_path, dpsim):
    res = dpsim(["show", "cai-fig8", "--no-estimate"], tmp_path)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "dataset      shape     default cems,immigration" in out
    assert "choices cems, immigration" in out and "eps          analysis" in out
    assert "n_items, per_user" in out and "derived on the host" in out
    assert (
        "counts" in out
        and "[no solver]" in out
        and "[solver: converged, iterations, result, grad_norm]" in out
    )
    assert "metrics: mean_rank_diff" in out and "1000 per grid point" in out
    assert "padding:" not in out
    padded = dpsim(["show", "cai-fig1", "--no-estimate"], tmp_path).stdout
    assert (
        "padding: n_items values share compiled programs" in padded
        and "(n_items, k traced;" in padded
    )


def test_show_estimates_the_run_time_here(tmp_path, dpsim):
    res = dpsim(["show", str(STUDY)], tmp_path)
    assert res.returncode == 0, res.stderr
    assert (
        "estimated run time of the default grid here:" in res.stdout
        and "calibrated at" in res.stdout
    )


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path, dpsim):
    res = dpsim(["run", "cai-fig1", "--reps", "5", "--dry-run"], tmp_path)
    assert res.returncode == 0, res.stderr
    # 5 replicates: computing is cheap next to compiling, so every n shares one padded program
    assert "1 compiled program, 45 replicate lanes × 4 analysis points × 2 methods" in res.stdout
    assert (
        "link=logistic, capacity=700: n_items=100, 175, 250, 325, 400, 475, 550, 625, 700: 45 lanes"
        in res.stdout
    )
    assert list(tmp_path.iterdir()) == []


def test_padding_off_gives_one_program_per_size_and_a_bad_value_is_refused(tmp_path, dpsim):
    res = dpsim(
        ["run", "cai-fig1", "--reps", "5", "--dry-run"], tmp_path, env={"DPSIM_PADDING": "off"}
    )
    assert res.returncode == 0, res.stderr
    assert "9 compiled programs, 45 replicate lanes" in res.stdout
    assert "link=logistic, capacity=700: n_items=700: 5 lanes" in res.stdout
    bad = dpsim(["run", "cai-fig1", "--reps", "5"], tmp_path, env={"DPSIM_PADDING": "yes"})
    assert bad.returncode == 2 and "DPSIM_PADDING='yes' must be 'auto' or 'off'" in bad.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory):
    """A directory outside the repository, holding a copy of the example study."""
    where = tmp_path_factory.mktemp("elsewhere")
    shutil.copy(STUDY, where / "my_study.py")
    return where


def test_a_study_file_runs_verifies_and_plots_from_any_directory(study_dir, dpsim):
    run = dpsim(["run", "my_study.py", "--reps", "4", "--no-progress"], study_dir)
    assert run.returncode == 0, run.stderr
    out = study_dir / "runs" / "borda-noise"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["source"] == "my_study.py:borda-noise"
    assert (out / "figure.png").exists() and (out / "figure.csv").exists()
    assert set(manifest["study"]["axes"]["noise"]) == {"gaussian", "laplace"}
    replot = dpsim(["plot", str(out), "--to", str(study_dir / "again")], study_dir)
    assert replot.returncode == 0, replot.stderr
    assert (study_dir / "again.png").exists()
    listed = dpsim(["list", "my_study.py"], study_dir)
    assert (
        "borda-noise" in listed.stdout and "borda-noise-laplace-improves-with-eps" in listed.stdout
    )
    verified = dpsim(["verify", "my_study.py", "--reps", "4", "--no-progress"], study_dir)
    lines = verified.stdout.strip().splitlines()
    assert lines[-1].endswith("inconclusive") and len(lines) == 6, verified.stdout
    assert lines[0].startswith("family: 2 judged checks")
    verdicts = {lines[1].split()[0], lines[3].split()[0]}
    assert lines[2].strip().startswith("claim: ") and lines[4].strip().startswith(
        "claim: "
    )  # each check's claim
    assert verdicts <= {"PASS", "FAIL", "INCONCLUSIVE"}
    assert verified.returncode == (
        1 if "FAIL" in verdicts else 3 if "INCONCLUSIVE" in verdicts else 0
    )
    assert (
        study_dir / "runs" / "verify" / "borda-noise"
    ).is_dir()  # apart from `dpsim run`'s folder
    by_experiment = dpsim(
        ["verify", "my_study.py", "borda-noise", "--reps", "4", "--no-progress"], study_dir
    )
    assert by_experiment.stdout == verified.stdout  # an experiment's name: its checks


def test_study_file_errors_are_one_line(tmp_path, dpsim):
    missing = dpsim(["run", "nope.py"], tmp_path)
    assert (
        missing.returncode == 2
        and missing.stderr.strip() == "dpsim: error: study file 'nope.py' does not exist"
    )
    (tmp_path / "broken.py").write_text("raise RuntimeError('boom')\n")
    broken = dpsim(["run", "broken.py"], tmp_path)
    assert (
        broken.returncode == 2
        and "RuntimeError: boom" in broken.stderr
        and len(broken.stderr.splitlines()) == 1
    )
    wrong = dpsim(["run", f"{STUDY}:nothing"], tmp_path)
    assert wrong.returncode == 2 and "defines no experiment 'nothing'" in wrong.stderr


def test_audit_registry_selects_by_paper(tmp_path, dpsim):
    res = dpsim(["audit", "cai", "--eps", "1", "--samples", "20000"], tmp_path)
    assert res.returncode == 0, res.stderr
    assert "alg3-individual" in res.stdout and "2×ε" in res.stdout and "within ε" in res.stdout
    bad = dpsim(["audit", "bogus"], tmp_path)
    assert (
        bad.returncode == 2
        and bad.stderr.strip() == "dpsim: error: unknown audit 'bogus'; see `dpsim list`"
    )


def test_unconverged_fits_are_warned_about_and_recorded(tmp_path, dpsim):
    res = dpsim(
        [
            "run",
            "cai-fig3",
            "--set",
            "n_items=20",
            "--set",
            "eps=1e-6,1",
            "--set",
            "p=1",
            "--reps",
            "3",
            "--out",
            "run",
            "--no-progress",
        ],
        tmp_path,
    )
    assert res.returncode == 0, res.stderr
    warning = [line for line in res.stderr.splitlines() if line.startswith("dpsim: warning:")]
    assert warning and "mle fits did not converge" in warning[0] and "eps=1e-06" in warning[0]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    (item,) = manifest["diagnostics"]["unconverged"]
    assert item["method"] == "mle" and item["failed"] >= 1 and item["fits"] == 6


def test_path_problems_are_one_line_errors(tmp_path, dpsim):
    (tmp_path / "afile").write_text("x")
    for args, want in [
        (["run", "cai-fig8", "--out", "afile"], "is a file, not a directory"),
        (["run", "cai-fig8", "--out", "afile/sub"], "lies under"),
        (["plot", "afile"], "holds no dpsim run"),
        (["plot", str(tmp_path), "--to", "afile/x"], "is a file, not a directory"),
    ]:
        res = dpsim(args, tmp_path)
        assert res.returncode == 2, (args, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1 and want in res.stderr, (args, res.stderr)


def test_too_small_n_items_names_the_automatic_rule(tmp_path, dpsim):
    res = dpsim(["run", "cai-fig1", "--set", "n_items=2"], tmp_path)
    assert res.returncode == 2
    assert (
        "n_items=2 is too small for the automatic top-k size" in res.stderr
        and "round" in res.stderr
    )
    assert list(tmp_path.iterdir()) == []


def test_results_are_readable_by_others(tmp_path, dpsim):
    res = dpsim(["run", str(STUDY), "--reps", "2", "--out", "run", "--no-progress"], tmp_path)
    assert res.returncode == 0, res.stderr
    for path in [tmp_path / "run" / "manifest.json", *(tmp_path / "run" / "parts").iterdir()]:
        assert path.stat().st_mode & 0o044 == 0o044, path  # group and others may read (umask 022)


def test_reproduce_script_runs_one_headline_figure_per_paper_and_their_checks_only():
    text = (ROOT / "scripts" / "reproduce.sh").read_text()
    assert "experiments=(cai-fig1 cai-fig2 cai-fig3 xu-fig3 nguyen-fig2 chowdhury-fig1)" in text
    assert 'dpsim verify "${experiments[@]}" --runs "$runs"' in text
    assert 'runs="runs/reproduce-' in text and 'dpsim run "$name" --out "$runs/$name"' in text
    assert "figures/" not in text.replace("# ", "")  # it rewrites no tracked figure
    assert "expect about" in text
