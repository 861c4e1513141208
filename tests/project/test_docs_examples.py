"""Every example in the README and the documentation runs, so the documents cannot drift from
the code. Each ``dpsim …`` line of a ```bash block must parse, and those of a block not marked
otherwise run in page order in one shared temporary folder (``dpsim.cli.main``, at most 4
replicates, a small ``--budget`` for ``solve``); the ```python blocks of a page run in order in
one namespace there. A block after ``<!-- not-run: reason -->`` is not run (an installation, a
cluster); one after ``<!-- needs-api -->`` runs only with the Python API.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

import dpsim

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARK = re.compile(r"<!--\s*(not-run|needs-api)\b[^>]*-->")
TINY_REPS = "4"
TINY_BUDGET = "800"  # lanes: one stage of the documents' solve
HAS_API = hasattr(dpsim, "run")
# exit statuses a command of the documents may end with: verify's 1 (a FAIL) and 3 (some
# INCONCLUSIVE) are verdicts on 4 replicates, not errors of the document; 2 (bad input) never is
ALLOWED_STATUS = {"verify": {0, 1, 3}}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    text: str
    mark: str | None  # "not-run", "needs-api" or None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def code_blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page, each with the mark on the line before it."""
    blocks, lines, i = [], page.read_text().splitlines(), 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        previous = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        mark = MARK.search(previous)
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        blocks.append(
            Block(
                page,
                i + 1,
                fence.group(1),
                "\n".join(lines[i + 1 : end]),
                mark.group(1) if mark else None,
            )
        )
        i = end + 1
    return blocks


def commands(block: Block) -> list[list[str]]:
    """The ``dpsim`` commands of a bash block, as argument lists (comments dropped, lines
    continued with a backslash joined)."""
    lines = block.text.replace("\\\n", " ").splitlines()
    return [shlex.split(line, comments=True)[1:] for line in lines if line.startswith("dpsim ")]


def runnable(block: Block) -> bool:
    return block.mark is None or (block.mark == "needs-api" and HAS_API)


def tiny(argv: list[str]) -> list[str]:
    """``argv`` with at most TINY_REPS replicates (run, verify), a small solve budget, no
    run-time estimate (show) and no progress bars."""
    command, argv = argv[0], list(argv)
    if command in ("run", "verify"):
        if "--reps" in argv:
            argv[argv.index("--reps") + 1] = TINY_REPS
        else:
            argv += ["--reps", TINY_REPS]
    if command == "solve" and "--budget" not in argv:
        argv += ["--budget", TINY_BUDGET]
    if command == "show" and "--no-estimate" not in argv:
        argv.append("--no-estimate")
    if command in ("run", "verify", "solve") and "--no-progress" not in argv:
        argv.append("--no-progress")
    return argv


ALL_BLOCKS = [block for page in PAGES for block in code_blocks(page)]
COMMAND_PAGES = sorted(
    {b.page for b in ALL_BLOCKS if b.language == "bash" and runnable(b) and commands(b)}
)
PYTHON_PAGES = sorted(
    {b.page for b in ALL_BLOCKS if b.language == "python" and b.mark != "not-run"}
)


def test_the_documents_have_examples():
    """The extraction finds the README's quick start and the tutorial (a changed fence syntax
    would otherwise make every test below vacuous)."""
    readme = [
        c[0] for b in code_blocks(ROOT / "README.md") if b.language == "bash" for c in commands(b)
    ]
    assert {"list", "show", "run", "summary", "plot", "verify", "solve"} <= set(readme)
    assert ROOT / "docs" / "tutorial.md" in PYTHON_PAGES


def test_every_documented_command_parses():
    """Every ``dpsim`` command in the documents, those not run and those in unlabelled blocks
    (the paper pages' command lists) included, is a valid command line: its subcommand and
    options exist (argparse's error is a UsageError)."""
    from dpsim.cli import build_parser

    parser = build_parser()
    checked = 0
    for block in ALL_BLOCKS:
        for argv in commands(block) if block.language in ("bash", "") else []:
            try:
                parser.parse_args(argv)
            except dpsim.errors.UsageError as exc:
                pytest.fail(f"{block.where}: `dpsim {shlex.join(argv)}`: {exc}")
            checked += 1
    assert checked >= 20


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """One working folder for every page, as a reader's checkout would be: the pages' study
    folders (runs/cai-fig3, runs/verify) are shared, so a page extends what an earlier one
    computed; the documents' relative paths (examples/…) resolve there."""
    path = tmp_path_factory.mktemp("docs")
    (path / "examples").symlink_to(ROOT / "examples")
    return path


@pytest.mark.parametrize("page", COMMAND_PAGES, ids=lambda p: p.name)
def test_commands_run(page, folder, monkeypatch, capsys):
    """The page's commands run in order, each ending with status 0 (verify: a verdict)."""
    from dpsim.cli import main

    monkeypatch.chdir(folder)
    monkeypatch.setenv("DPSIM_JAX_CACHE", "off")  # keep the test session's compilation cache
    monkeypatch.setenv("MPLBACKEND", "Agg")
    for block in code_blocks(page):
        if block.language != "bash" or not runnable(block):
            continue
        for argv in commands(block):
            status = main(tiny(argv))
            out = capsys.readouterr()
            assert status in ALLOWED_STATUS.get(argv[0], {0}), (
                f"{block.where}: `dpsim {shlex.join(argv)}` exited {status}: {out.err.strip()[-500:]}"
            )


@pytest.mark.skipif(
    not HAS_API, reason="the Python API (dpsim.run, dpsim.load, …) is not in this checkout"
)
@pytest.mark.parametrize("page", PYTHON_PAGES, ids=lambda p: p.name)
def test_python_blocks_run(page, folder, monkeypatch):
    """The page's Python blocks run in order in one namespace, as a notebook would."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.chdir(folder)
    monkeypatch.setenv("DPSIM_JAX_CACHE", "off")
    namespace = {"__name__": "__docs__"}
    try:
        for block in code_blocks(page):
            if block.language == "python" and runnable(block):
                code = compile(block.text, block.where, "exec")
                exec(code, namespace)
    finally:
        plt.close("all")
    assert (folder / "runs").is_dir()
