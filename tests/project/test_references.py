"""Every reference stays inside the repository.

Citations in code and documents point to the papers' own numbering ("cai §3.3", "xu eq. (3)")
or to a section of the project's page on the paper ("docs/cai.md, Errata and modes (E3)").
This test fails when a tracked file refers to something a clone does not have (the
specifications and design notes the project was once written from), when a paper's ``PAGE``
is missing, and when a "docs/<paper>.md, Section (labels)" citation names a section that the
page does not have or a label that its section does not define.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from dpsim.engine import registry

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve()
PAPERS = ("cai", "xu", "nguyen", "chowdhury")
SECTIONS = (
    "Model",
    "Mechanisms and estimators",
    "Metrics",
    "Experiments as run",
    "Predictions",
    "Errata and modes",
    "Privacy audit",
)
# written in pieces so that this file does not match them itself
FORBIDDEN = ("spec" + " §", "shared" + "/papers", "../" + "shared", "DESIGN" + ".md")
SKIPPED_DIRS = {
    ".git",
    ".venv",
    "venv",
    "runs",
    "build",
    "dist",
    "__pycache__",
    "site",
    "node_modules",
}


def tracked_files() -> list[Path]:
    """The repository's tracked files (``git ls-files``); outside a git checkout, every file
    under the root but build outputs and hidden folders."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
        return [ROOT / p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        return [
            p
            for p in ROOT.rglob("*")
            if p.is_file()
            and not any(
                part in SKIPPED_DIRS or part.startswith(".") or part.endswith(".egg-info")
                for part in p.relative_to(ROOT).parts[:-1]
            )
        ]


def text_of(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None  # binary (figures) or unreadable: nothing to cite


@pytest.fixture(scope="module")
def texts() -> dict[Path, str]:
    found = {}
    for path in tracked_files():
        if path.resolve() == THIS or not path.is_file():
            continue
        text = text_of(path)
        if text is not None:
            found[path] = text
    assert len(found) > 100, "the repository's files were not found"
    return found


def test_no_reference_leaves_the_repository(texts):
    offences = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}"
        for path, text in texts.items()
        for number, line in enumerate(text.splitlines(), 1)
        if any(bad in line for bad in FORBIDDEN)
    ]
    assert not offences, "references to files outside the repository:\n" + "\n".join(offences)


def test_the_forbidden_strings_are_caught():
    """The scan above sees a citation of the old form (a check that can fail)."""
    line = "the noise scale (" + FORBIDDEN[0] + "10.3)"
    assert any(bad in line for bad in FORBIDDEN)


@pytest.mark.parametrize("paper", PAPERS)
def test_each_paper_names_its_page_and_the_page_exists(paper):
    catalogue = registry.paper(paper)
    assert catalogue is not None, f"paper {paper!r} is not installed"
    page = catalogue.pages[paper]
    assert page == f"docs/{paper}.md"
    text = (ROOT / page).read_text(encoding="utf-8")
    headings = {h.strip() for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}
    for section in ("Model", "Mechanisms and estimators", "Predictions", "Errata and modes"):
        assert section in headings, f"{page} has no section {section!r}"


def sections_of(page_text: str) -> dict[str, str]:
    """Each heading's text up to the next heading of the same or a higher level."""
    parts = {}
    heads = list(re.finditer(r"^(#+) (.+)$", page_text, flags=re.M))
    for i, head in enumerate(heads):
        level = len(head.group(1))
        end = next((h.start() for h in heads[i + 1 :] if len(h.group(1)) <= level), len(page_text))
        parts[head.group(2).strip()] = page_text[head.end() : end]
    return parts


CITATION = re.compile(
    r"docs/("
    + "|".join(PAPERS)
    + r")\.md,\s+((?:(?:"
    + "|".join(SECTIONS)
    + r")(?:\s*\([^()]*\))?(?:;\s*|\s+and\s+)?)+)"
)
LABEL = re.compile(r"[AEPQR]\d+|items? \d|check \d")
PART = re.compile(r"(" + "|".join(SECTIONS) + r")(?:\s*\(([^()]*)\))?")


def citations(texts):
    for path, text in texts.items():
        flat = re.sub(r"\s*\n\s*(?:#\s*)?", " ", text)
        for match in CITATION.finditer(flat):
            for part in PART.finditer(match.group(2)):
                yield path, match.group(1), part.group(1), part.group(2) or ""


def label_defined(label: str, section: str) -> bool:
    """A label of a citation ("E3", "P4", "(A1)", "item 5", "check 2") is written in its section."""
    numbered = re.fullmatch(r"(?:items?|check) (\d+)(?:\s*[–-]\s*(\d+))?", label)
    if numbered:
        first, last = int(numbered.group(1)), int(numbered.group(2) or numbered.group(1))
        return all(re.search(rf"(^|\n)\s*{k}\. |\({k}\)", section) for k in range(first, last + 1))
    tokens = re.findall(r"[AEPQR]\d+′?'?", label)
    return bool(tokens) and all(
        re.search(rf"(?<![\w]){re.escape(t.rstrip(chr(39)))}(?![\d])", section) for t in tokens
    )


def test_every_page_citation_names_a_section_and_labels_it_defines(texts):
    pages = {
        paper: sections_of((ROOT / f"docs/{paper}.md").read_text(encoding="utf-8"))
        for paper in PAPERS
    }
    problems, seen = [], 0
    for path, paper, section, labels in citations(texts):
        seen += 1
        where = f"{path.relative_to(ROOT)}: docs/{paper}.md, {section}"
        if section not in pages[paper]:
            problems.append(f"{where}: no such section")
            continue
        for label in (x.strip() for x in re.split(r"[,;]\s*", labels) if x.strip()):
            if not LABEL.match(label):
                continue  # a remark in parentheses, not a label
            if not label_defined(label, pages[paper][section]):
                problems.append(f"{where} ({label}): not defined there")
    assert seen > 200, f"only {seen} page citations found"
    assert not problems, "\n".join(sorted(set(problems)))


def test_a_citation_of_a_missing_label_is_caught():
    section = sections_of("## Errata and modes\n\n| E3 | … |\n## Next\n")["Errata and modes"]
    assert label_defined("E3", section)
    assert not label_defined("E4", section)
    assert not label_defined("E31", section)


def test_dpsim_show_prints_the_papers_page(capsys):
    from dpsim.engine.presentation.describe import describe

    experiment, source = registry.experiment("cai-fig3")
    lines = describe(experiment, source, registry.page_of("cai-fig3"))
    assert any("docs/cai.md" in line for line in lines)
    assert registry.page_of("no-such-experiment") == ""
