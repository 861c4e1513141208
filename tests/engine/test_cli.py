"""The ``dpsim`` command's own options and its run/resume cycle, called as a user would (in
this process: ``main`` is what the console script calls), and once, end to end, the console
script in a fresh interpreter.

Bad input must exit 2 with a single-line error on stderr that names the bad value, and write
nothing (neither --out nor anything in the working directory). Bad values of an experiment's
axes (an unknown axis, each kind of value its axis types refuse, k = n_items) are tried on
every experiment by tests/conformance/test_conformance.py; here: the command's options and the bounds of
an interval that the conformance suite's one bad value per kind does not reach.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dpsim

import pytest

from dpsim.engine.storage import store

from cli_cases import refused, run_in_process

EXP = "cai-fig1"

# (id, extra arguments, text the error line must contain)
BAD = [
    ("eps=-1", ["run", EXP, "--set", "eps=-1"], "eps=-1"),
    ("p=1.5", ["run", EXP, "--set", "p=1.5"], "p=1.5"),
    ("n_items=1", ["run", EXP, "--set", "n_items=1"], "n_items=1"),
    ("reps=0", ["run", EXP, "--reps", "0"], "reps=0"),
    ("reps=abc", ["run", EXP, "--reps", "abc"], "abc"),
    ("workers=0", ["run", EXP, "--workers", "0"], "workers=0"),
    ("watchdog=0", ["run", EXP, "--watchdog", "0"], "watchdog=0"),
    ("unknown-experiment", ["run", "cai-fig99"], "cai-fig99"),
    ("set-no-equals", ["run", EXP, "--set", "eps"], "'eps'"),
    ("set-no-axis", ["run", EXP, "--set", "=1"], "'=1'"),
    ("set-no-value", ["run", EXP, "--set", "eps="], "'eps='"),
    ("set-twice", ["run", EXP, "--set", "eps=1", "--set", "eps=2"], "eps"),
]


def _arguments(args, out: Path | None):
    """The command line after `dpsim`: ``args``, and for `run` the output folder ``out``."""
    if out is not None and args and args[0] == "run":
        return [*args, "--out", str(out), "--no-progress"]
    return list(args)


def _env():
    env = dict(os.environ)
    env.setdefault("JAX_PLATFORMS", "cpu")
    return env


@pytest.mark.parametrize("name, args, want", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_line_error_and_writes_nothing(
    tmp_path, monkeypatch, capsys, name, args, want
):
    assert want in refused(_arguments(args, tmp_path / "out"), tmp_path, monkeypatch, capsys)


def test_console_script_exit_status_and_one_line_error(tmp_path):
    """The installed `dpsim` console script, in a fresh interpreter as a user runs it: a bad
    value exits 2 with one line on stderr naming it, and writes nothing."""
    exe = Path(sys.executable).parent / "dpsim"
    assert exe.exists(), "the `dpsim` console script is not installed (pip install -e .)"
    res = subprocess.run(
        [str(exe), *_arguments(["run", EXP, "--set", "eps=0"], tmp_path / "out")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**_env(), "DPSIM_JAX_CACHE": "off"},
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpsim: error: eps=0 "), res.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_finished_command_runs_the_exit_handlers_and_keeps_its_output(tmp_path, capsys):
    """A command-line process leaves without the interpreter's teardown once its command has
    returned (cli._leave): the exit handlers still run (a local Ray cluster is shut down by
    one), everything printed reaches a pipe, and the exit status is the command's."""
    from dpsim import cli

    marker = tmp_path / "exit-handler-ran"
    script = (
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(marker)!r}, 'w').write('ran'))\n"
        "from dpsim import cli\n"
        "sys.argv = ['dpsim', *sys.argv[1:]]\n"
        "cli.main()\n"
        "raise SystemExit('not reached: main() leaves the process')\n"
    )
    outputs = {}
    for args, status in ((["list"], 0), (["show", "cai-fig99"], 2)):
        marker.unlink(missing_ok=True)
        res = subprocess.run(
            [sys.executable, "-c", script, *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            env=_env(),
        )
        assert res.returncode == status, res.stderr
        assert marker.read_text() == "ran"
        assert "not reached" not in res.stderr
        outputs[args[0]] = res.stdout
    assert cli.main(["list"]) == 0
    assert outputs["list"] == capsys.readouterr().out and "cai-fig1" in outputs["list"]


def test_list(tmp_path, monkeypatch, capsys):
    """`dpsim list`: every paper's experiments with their grids written compactly, checks,
    audits; nothing written."""
    code, out, err = run_in_process(["list"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    for name in ("cai-fig1", "cai-fig2", "cai-fig3", "xu-fig2", "nguyen-fig1", "chowdhury-fig1"):
        assert name in out
    assert "n_items=100…700 (9) eps=0.5,1,2.5,inf" in out  # cai-fig1
    assert "audits:" in out and "cai-counts" in out
    assert "cai-edge-linf-vs-eps-private" in out
    assert list(tmp_path.iterdir()) == []


def test_list_pins(tmp_path, monkeypatch, capsys):
    """`dpsim list PAPER --pins`: each component with the checks that pin it and the mutants
    that break it, a GAP line for each component no check pins, the count; nothing written."""
    code, out, err = run_in_process(["list", "cai", "--pins"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert "mechanism:edge-counts" in out and "cai-level-edge-counts-noise" in out
    assert "cai-edge-counts-noise-double" in out
    table = dpsim.pins("cai")
    assert (
        out.strip().splitlines()[-1].strip()
        == f"{len(table)} components, {int(table['gap'].sum())} without a check (GAP)"
    )
    code, out, err = run_in_process(["list", "xu", "--pins"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    gaps = dpsim.pins("xu")
    assert len([line for line in out.splitlines() if line.strip().startswith("GAP ")]) == int(
        gaps["gap"].sum()
    )
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def tiny_run(tmp_path, monkeypatch, capsys):
    """A tiny cai-fig1 run by `dpsim run`: (its arguments, (exit status, stdout, stderr), the
    working directory, --out)."""
    out = tmp_path / "out"
    args = _arguments(
        ["run", EXP, "--set", "n_items=10", "--set", "p=1", "--set", "eps=1,inf", "--reps", "2"],
        out,
    )
    return args, run_in_process(args, tmp_path, monkeypatch, capsys), tmp_path, out


def test_tiny_run_resumes_and_refuses_another_seed(tiny_run, monkeypatch, capsys):
    args, (code, _, err), cwd, out = tiny_run
    assert code == 0, err
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
    assert (
        manifest["study"]["reps"] == {"min": 2, "max": 2} and manifest["history"][-1]["reps"] == 2
    )

    parts = sorted(p.name for p in store.part_files(out))
    code, again, err = run_in_process(args, cwd, monkeypatch, capsys)
    assert code == 0, err
    assert "0 replicate lanes" in again
    assert sorted(p.name for p in store.part_files(out)) == parts
    code, _, err = run_in_process(args + ["--seed", "1"], cwd, monkeypatch, capsys)
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "seed" in lines[0], err
    assert sorted(p.name for p in store.part_files(out)) == parts
