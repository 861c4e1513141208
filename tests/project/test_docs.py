"""The documents that are generated or that name the code's parts stay equal to the code.

* ``docs/cli.md``, ``docs/api.md`` and ``docs/performance.md`` are what
  ``scripts/docs_pages.py`` writes from the parser, the modules and ``benchmarks/results/``;
* the subcommands named in ``dpsim/cli.py``'s docstring and in ``docs/architecture.md`` are
  the parser's, compared at test time (a new subcommand must be named in both; the failure
  says what to write, in the parser's order);
* the README and the pages written for users state no date, time of day or commit hash
  (measurements live in ``benchmarks/results/``; the history in CHANGELOG.md).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _pages_module():
    spec = importlib.util.spec_from_file_location("docs_pages", ROOT / "scripts" / "docs_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PAGES = _pages_module()


@pytest.mark.parametrize("name", sorted(PAGES.PAGES))
def test_generated_page_is_current(name):
    """The committed page is what the script writes now (run `python scripts/docs_pages.py`)."""
    assert (ROOT / "docs" / name).read_text() == PAGES.PAGES[name](), (
        f"docs/{name} is stale: run `python scripts/docs_pages.py`"
    )


def test_readme_performance_summary_is_current():
    """The README's performance summary is what the script writes from benchmarks/results/ now, and
    it names every workload that has a target there (a target missed shows NOT MET)."""
    readme = (ROOT / "README.md").read_text()
    assert readme == PAGES.readme_with_performance(readme), (
        "README.md's performance summary is stale: run `python scripts/docs_pages.py`"
    )
    summary = PAGES.readme_performance()
    assert "xu" in summary and "cai" in summary and ("MET" in summary)


def test_cli_page_names_every_option():
    """The command reference has a section per subcommand and names each of its options."""
    import argparse

    from dpsim.cli import build_parser

    text = (ROOT / "docs" / "cli.md").read_text()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in sub.choices.items():
        assert f"## dpsim {name}\n" in text
        for action in parser._actions:
            for option in action.option_strings if action.dest != "help" else ():
                assert f"`{option}" in text, (name, option)


def test_performance_page_shows_the_results_files():
    """A number of the results files appears on the page as the script formats it, and a
    changed number makes the page differ (the page is read from the files, not pasted)."""
    import json

    doc = json.loads((ROOT / "benchmarks" / "results" / "cai.json").read_text())
    row = doc["results"]["A"]["comparison"][0]
    assert PAGES._count(row["engine_fits_per_s"]) in PAGES.performance_page()
    original = PAGES._load
    try:
        PAGES._load = lambda path: _scaled(original(path), path.name == "cai.json")
        assert PAGES.performance_page() != (ROOT / "docs" / "performance.md").read_text()
    finally:
        PAGES._load = original


def _scaled(doc, scale):
    if scale:
        for row in doc["results"]["A"]["comparison"]:
            row["engine_fits_per_s"] *= 2
    return doc


def _listed(text: str, sep: str) -> list[str]:
    return [word.strip(" `.") for word in text.split(sep)]


def test_cli_docstring_names_every_subcommand():
    import dpsim.cli

    first = dpsim.cli.__doc__.splitlines()[0]
    named = _listed(first.split(":", 1)[1], ",")
    assert sorted(named) == sorted(PAGES.subcommands()), (
        f"dpsim/cli.py's docstring names {named}; the parser has {PAGES.subcommands()}: write "
        f"'The ``dpsim`` command: {', '.join(PAGES.subcommands())}.'"
    )


def test_architecture_names_every_subcommand():
    line = next(
        line
        for line in (ROOT / "docs" / "architecture.md").read_text().splitlines()
        if line.startswith("- `dpsim.cli` — ")
    )
    named = _listed(line.split(" — ", 1)[1].replace("dpsim ", ""), "|")
    assert sorted(named) == sorted(PAGES.subcommands()), (
        f"docs/architecture.md names {named}; the parser has {PAGES.subcommands()}: write "
        f"'- `dpsim.cli` — `dpsim {' | '.join(PAGES.subcommands())}`.'"
    )


USER_PAGES = [
    "README.md",
    *(
        f"docs/{name}"
        for name in (
            "index.md",
            "getting-started.md",
            "tutorial.md",
            "concepts.md",
            "howto-study.md",
            "howto-method.md",
            "howto-scale-out.md",
            "howto-gpu.md",
            "architecture.md",
            "performance.md",
            "cli.md",
            "api.md",
        )
    ),
]
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
TIME_OF_DAY = re.compile(
    r"\b[0-2]\d:[0-5]\d(?:[–-][0-2]\d:[0-5]\d| ?UTC)"
)  # 13:31–13:41, 10:14 UTC
COMMIT = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")


@pytest.mark.parametrize("page", USER_PAGES)
def test_user_pages_state_no_dates_times_or_commits(page):
    text = (ROOT / page).read_text()
    for pattern, what in (
        (DATE, "a date"),
        (TIME_OF_DAY, "a time of day"),
        (COMMIT, "a commit hash"),
    ):
        found = pattern.search(text)
        assert found is None, f"{page} states {what}: {found.group(0)!r}"


def test_pins_page_reads_the_kill_matrix(tmp_path, monkeypatch):
    """docs/PAPER-pins.md: each component's checks from the code; each declared mutant's outcome
    from the committed kill matrix, ✓ where a check pinning what it breaks killed it, and the
    mutants the matrix does not hold named as such."""
    (tmp_path / "kill-matrix-cai.csv").write_text(
        "mutant,check,experiment,killed,state\n"
        "cai-edge-counts-noise-half,cai-level-edge-counts-noise,cai-fig3,True,killed\n"
        "cai-edge-counts-noise-half,cai-fig3-linf-p0.25-decreases-in-eps,cai-fig3,False,not killed\n"
        "cai-edge-counts-noise-double,cai-fig3-counting-beats-mle-eps-le-2,cai-fig3,True,killed\n"
        "cai-edge-mle-lambda-half,cai-level-edge-mle-noise,cai-fig3,False,not killed\n"
    )
    monkeypatch.setattr(PAGES, "KILL_MATRICES", tmp_path)
    page = PAGES.pins_page("cai")
    assert "| `mechanism:edge-counts` |" in page and "`cai-level-edge-counts-noise`" in page
    rows = {
        line.split(" | ")[0].strip("| `"): line
        for line in page.splitlines()
        if line.startswith("| `cai-")
    }
    assert rows["cai-edge-counts-noise-half"].endswith(
        "| KILLED | `cai-level-edge-counts-noise` | ✓ |"
    )
    assert rows["cai-edge-counts-noise-double"].endswith(
        "| KILLED | `cai-fig3-counting-beats-mle-eps-le-2` |  |"
    )
    assert "| SURVIVED |" in rows["cai-edge-mle-lambda-half"]
    assert "not in the committed matrix" in rows["cai-metric-log10"]
    assert "2 of 3 mutants in the matrix killed" in page
    monkeypatch.setattr(PAGES, "KILL_MATRICES", tmp_path / "none")
    assert "No kill matrix of cai is committed yet" in PAGES.pins_page("cai")
