"""MkDocs hooks: the site shows repository files that live outside docs/.

The paper pages show the committed figures (``../figures/NAME.png``) and the pages link to the
example study, the benchmark results and the changelog, all outside ``docs/`` so that they
read the same on a repository browser. These hooks add those files to the site at the same
relative place (``figures/…``, ``examples/…``, ``benchmarks/results/…``, ``CHANGELOG.md``) and
rewrite a page's ``](../PATH)`` link to ``](PATH)`` when PATH is one of them (and the
changelog's ``](docs/PAGE)`` to ``](PAGE)``). A link to any
other path is left as it is, so MkDocs' strict mode still fails on it when it is broken.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
PATTERNS = (
    "figures/*.png",
    "examples/*.py",
    "benchmarks/results/*.json",
    "CHANGELOG.md",
    "CITATION.cff",
    "LICENSE",
)
LINK = re.compile(r"\]\(\.\./([^)#\s]+)")


def _repository_files() -> set[str]:
    return {p.relative_to(ROOT).as_posix() for pattern in PATTERNS for p in ROOT.glob(pattern)}


def on_files(files, config):
    for path in sorted(_repository_files()):
        files.append(File(path, str(ROOT), config["site_dir"], config["use_directory_urls"]))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_dir != config["docs_dir"]:
        # a repository file shown as a page at the site's root (CHANGELOG.md): its links into
        # docs/ point to the site's pages
        return markdown.replace("](docs/", "](")
    known = _repository_files()
    return LINK.sub(lambda m: f"]({m.group(1)}" if m.group(1) in known else m.group(0), markdown)
