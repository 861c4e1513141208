"""Running ``dpsim`` commands in this process for the tests: ``main`` is what the console script
calls, so a command's exit status, output and errors are the user's, without the
imports of a fresh interpreter. The console script itself, end to end in a fresh interpreter,
is tested once (tests/engine/test_cli.py).

The one bad-input harness: :func:`refused` asserts the contract of every bad input (exit
status 2, one line on stderr naming the problem, nothing written) and returns the line."""

from __future__ import annotations

import warnings
from pathlib import Path

from dpsim.cli import main as dpsim_main


def run_in_process(args: list, cwd: Path, monkeypatch, capsys) -> tuple[int, str, str]:
    """``dpsim <args>`` run by ``dpsim.cli.main`` from the working directory ``cwd``, without
    a persistent compilation cache of its own (the suite's, conftest.py, stays in use).

    Options that argparse answers by exiting (``--version``, ``--help``) give its exit status.

    Returns: (exit status, standard output, standard error)."""
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("DPSIM_JAX_CACHE", "off")
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # main replaces it
    capsys.readouterr()
    try:
        code = dpsim_main([str(a) for a in args])
    except SystemExit as exc:
        code = exc.code or 0
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def refused(args: list, cwd: Path, monkeypatch, capsys) -> str:
    """Run ``dpsim <args>`` from the empty folder ``cwd`` (an ``--out`` should lie inside it)
    and assert that it was refused as bad input: exit status 2, exactly one line on stderr,
    ``dpsim: error: …``, and ``cwd`` still empty (no --out, no runs/). Returns that line."""
    assert list(Path(cwd).iterdir()) == [], f"{cwd} is not empty"
    code, _, err = run_in_process(args, cwd, monkeypatch, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("dpsim: error:"), (args, code, err)
    assert list(Path(cwd).iterdir()) == [], (args, "wrote", list(Path(cwd).iterdir()))
    return lines[0]
