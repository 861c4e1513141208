"""Running ``dpsim`` commands for the bad-input tests: most cases in this process (``main``
is what the console script calls), a few in a fresh interpreter as a user would. Each fresh
interpreter costs ~1.5 s of imports; the suite keeps one or a few per command family."""
from __future__ import annotations

import os
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from dpsim.cli import main as dpsim_main


def run_in_process(args: list[str], cwd: Path, monkeypatch, capsys) -> tuple[int, str]:
    """``dpsim <args>`` run by ``dpsim.cli.main`` from the working directory ``cwd``, with the
    persistent compilation cache off (as :func:`run_fresh` runs). Returns (exit code,
    standard error)."""
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("DPSIM_JAX_CACHE", "off")
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)   # main replaces it
    capsys.readouterr()
    code = dpsim_main(args)
    return code, capsys.readouterr().err


def run_fresh(commands: dict[str, tuple[list[str], Path]]) -> dict[str, subprocess.CompletedProcess]:
    """Each ``python -m dpsim.cli <args>`` from its own working directory, all at once, in
    fresh interpreters (JAX on the CPU, the persistent compilation cache off).

    Args: commands: {name: (arguments, working directory)} (folders made by the caller:
    pytest's tmp_path_factory is not thread-safe). Returns: {name: CompletedProcess}."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "DPSIM_JAX_CACHE": "off"}

    def one(item):
        name, (args, cwd) = item
        return name, subprocess.run([sys.executable, "-m", "dpsim.cli", *args], cwd=cwd, capture_output=True,
                                    text=True, timeout=300, env=env)

    with ThreadPoolExecutor(max_workers=max(1, len(commands))) as pool:
        return dict(pool.map(one, commands.items()))
