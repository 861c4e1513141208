"""Running ``dpsim`` commands for the bad-input tests: most cases in this process (``main``
is what the console script calls), a few in a fresh interpreter as a user would. Each fresh
interpreter costs ~1.5 s of imports; the suite keeps one or a few per command family."""
from __future__ import annotations

import warnings
from pathlib import Path

from dpsim.cli import main as dpsim_main


def run_in_process(args: list[str], cwd: Path, monkeypatch, capsys) -> tuple[int, str]:
    """``dpsim <args>`` run by ``dpsim.cli.main`` from the working directory ``cwd``, with the
    persistent compilation cache off (as the subprocess cases run). Returns (exit code,
    standard error)."""
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("DPSIM_JAX_CACHE", "off")
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)   # main replaces it
    capsys.readouterr()
    code = dpsim_main(args)
    return code, capsys.readouterr().err
