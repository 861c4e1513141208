"""The ``dpsim`` command, called as a user would: ``python -m dpsim.cli ...`` in a subprocess.

Bad input must exit non-zero with a single-line error on stderr that names the bad value,
and write nothing (neither --out nor anything in the working directory). The error cases
are launched concurrently once per module (each is a fresh interpreter importing JAX), and
each test checks one of them.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpsim.experiment import store

from cli_cases import run_fresh, run_in_process

EXP = "cai-fig1"

# (id, extra arguments, text the error line must contain)
BAD = [
    ("eps=0", ["run", EXP, "--set", "eps=0"], "eps=0"),
    ("eps=-1", ["run", EXP, "--set", "eps=-1"], "eps=-1"),
    ("p=0", ["run", EXP, "--set", "p=0"], "p=0"),
    ("p=1.5", ["run", EXP, "--set", "p=1.5"], "p=1.5"),
    ("n_items=1", ["run", EXP, "--set", "n_items=1"], "n_items=1"),
    ("k=0", ["run", EXP, "--set", "k=0"], "k=0"),
    ("k=n", ["run", EXP, "--set", "n_items=12", "--set", "k=12"], "k=12"),
    ("reps=0", ["run", EXP, "--reps", "0"], "reps=0"),
    ("reps=abc", ["run", EXP, "--reps", "abc"], "abc"),
    ("workers=0", ["run", EXP, "--workers", "0"], "workers=0"),
    ("watchdog=0", ["run", EXP, "--watchdog", "0"], "watchdog=0"),
    ("unknown-experiment", ["run", "cai-fig99"], "cai-fig99"),
    ("unknown-axis", ["run", EXP, "--set", "bogus=1"], "bogus"),
    ("eps=abc", ["run", EXP, "--set", "eps=abc"], "abc"),
    ("set-no-equals", ["run", EXP, "--set", "eps"], "'eps'"),
    ("set-no-axis", ["run", EXP, "--set", "=1"], "'=1'"),
    ("set-no-value", ["run", EXP, "--set", "eps="], "'eps='"),
]
KNOWN_BUG = {
    # was a traceback before the fix; see test_runner.py::test_unknown_link_is_a_usage_error
    "link=cauchit": (["run", EXP, "--set", "link=cauchit"], "cauchit"),
}


def _arguments(args, out: Path | None):
    """The command line after `dpsim`: ``args``, and for `run` the output folder ``out``."""
    if out is not None and args and args[0] == "run":
        return [*args, "--out", str(out), "--no-progress"]
    return list(args)


def _command(args, out: Path | None):
    return [sys.executable, "-m", "dpsim.cli", *_arguments(args, out)]


def _env():
    env = dict(os.environ)
    env.setdefault("JAX_PLATFORMS", "cpu")
    return env


def run_cli(args, cwd: Path, out: Path | None = None, timeout=300):
    return subprocess.run(_command(args, out), cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=_env())


SUBPROCESS = {"eps=0", "reps=abc", "unknown-experiment", "set-no-equals"}   # the others run in this process


@pytest.fixture(scope="module")
def bad_runs(tmp_path_factory):
    """The SUBPROCESS commands, launched at once, each in its own empty working directory:
    {name: (exit code, stdout, stderr, folder, --out)}."""
    cwds = {name: tmp_path_factory.mktemp("cli-bad") for name, _, _ in BAD if name in SUBPROCESS}
    done = run_fresh({name: (_arguments(args, cwds[name] / "out"), cwds[name])
                      for name, args, _ in BAD if name in SUBPROCESS})
    return {name: (res.returncode, res.stdout, res.stderr, cwds[name], cwds[name] / "out")
            for name, res in done.items()}


def _check_bad(result, want):
    code, stdout, stderr, cwd, out = result
    assert code != 0, stdout
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr                     # a single line
    assert lines[0].startswith("dpsim: error:"), stderr
    assert want in lines[0], stderr                    # naming the bad value
    assert not out.exists()                            # nothing written to --out ...
    assert list(cwd.iterdir()) == []                   # ... nor anywhere else (e.g. runs/)


def _bad_result(bad_runs, name, args, tmp_path, monkeypatch, capsys):
    """(exit code, stdout, stderr, cwd, out) of a bad command: its subprocess run, or run
    now in this process from an empty folder."""
    if name in bad_runs:
        return bad_runs[name]
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    out = cwd / "out"
    code, stderr = run_in_process(_arguments(args, out), cwd, monkeypatch, capsys)
    return code, "", stderr, cwd, out


@pytest.mark.parametrize("name, args, want", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_line_error_and_writes_nothing(bad_runs, tmp_path, monkeypatch, capsys, name, args, want):
    _check_bad(_bad_result(bad_runs, name, args, tmp_path, monkeypatch, capsys), want)


def test_unknown_link_is_one_line_error(bad_runs, tmp_path, monkeypatch, capsys):
    args, want = KNOWN_BUG["link=cauchit"]
    _check_bad(_bad_result(bad_runs, "link=cauchit", args, tmp_path, monkeypatch, capsys), want)


def test_list(tmp_path):
    res = run_cli(["list"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    for name in ("cai-fig1", "cai-fig2", "cai-fig3"):
        assert name in res.stdout
    assert list(tmp_path.iterdir()) == []


def test_console_script_entry_point(tmp_path):
    exe = Path(sys.executable).parent / "dpsim"
    assert exe.exists(), "the `dpsim` console script is not installed (pip install -e .)"
    res = subprocess.run([str(exe), "list"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, env=_env())
    assert res.returncode == 0, res.stderr
    assert "cai-fig1" in res.stdout


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("cli-run")
    out = cwd / "out"
    args = ["run", EXP, "--set", "n_items=10", "--set", "p=1", "--set", "eps=1,inf", "--reps", "2"]
    res = run_cli(args, cwd=cwd, out=out)
    return args, res, cwd, out


def test_tiny_run(tiny_run):
    args, res, cwd, out = tiny_run
    assert res.returncode == 0, res.stderr
    df = store.load_results(out)
    # 1 n × 1 p × 2 ε × 2 reps × 2 methods
    assert len(df) == 8
    assert set(df["n_items"]) == {10} and set(df["p"]) == {1.0}
    assert set(df["eps"]) == {1.0, float("inf")} and set(df["rep"]) == {0, 1}
    assert set(df["method"]) == {"mle", "counts"}
    assert not df.duplicated(["point", "rep", "method"]).any()
    assert df.loc[df["method"] == "mle", "converged"].all()
    manifest = store.read_manifest(out)
    assert manifest["experiment"] == EXP and manifest["seed"] == 0
    assert manifest["study"]["reps"] == {"min": 2, "max": 2} and manifest["history"][-1]["reps"] == 2


def test_tiny_run_resumes_and_refuses_another_seed(tiny_run):
    args, res, cwd, out = tiny_run
    assert res.returncode == 0, res.stderr
    parts = sorted(p.name for p in store.part_files(out))
    again = run_cli(args, cwd=cwd, out=out)
    assert again.returncode == 0, again.stderr
    assert "0 replicate lanes" in again.stdout
    assert sorted(p.name for p in store.part_files(out)) == parts
    other = run_cli(args + ["--seed", "1"], cwd=cwd, out=out)
    assert other.returncode != 0
    lines = other.stderr.strip().splitlines()
    assert len(lines) == 1 and "seed" in lines[0], other.stderr
    assert sorted(p.name for p in store.part_files(out)) == parts
