"""``dpsim new-paper NAME``: a new paper package written from the template, in the skeleton every
paper follows (docs/architecture.md, "A paper's skeleton"): ``__init__.py`` (the contract only),
``model.py``, ``methods.py``, ``figures/``, ``checks.py``, ``mutants.py``, ``audits.py``.

The template (``dpsim/engine/templates/paper``, text files the engine never imports) is a small
working paper: Laplace-noised win counts and their top k, one figure, a level check pinning the
noise's variance and a mutant it kills; it runs, and passes the conformance suite, as written.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path

from dpsim.errors import UsageError

TEMPLATE = Path(__file__).resolve().parent / "templates" / "paper"
SKELETON = (
    "__init__.py",
    "model.py",
    "methods.py",
    "figures/__init__.py",
    "checks.py",
    "mutants.py",
    "audits.py",
)


def check_name(name: str) -> str:
    """A paper's name: a lower-case Python identifier (it is the package's and the entry point's
    name, and begins every experiment, check and mutant name). Raises UsageError naming it."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name or "") or keyword.iskeyword(name):
        raise UsageError(
            f"paper name {name!r} must be a lower-case Python identifier (letters, digits, _), e.g. smith"
        )
    return name


def template_files() -> dict[str, str]:
    """{path in the package: template text} of every file the template writes."""
    return {
        path.relative_to(TEMPLATE).as_posix().removesuffix(".tmpl"): path.read_text()
        for path in sorted(TEMPLATE.rglob("*.tmpl"))
    }


def new_paper(name: str, to: str | Path = "experiments", *, title: str | None = None) -> Path:
    """Write the package ``<to>/<name>/`` from the template.

    Args:
        name: the paper's name (:func:`check_name`).
        to: the folder that holds paper packages (the repository's ``experiments/``).
        title: the paper's title (default: a placeholder naming it).
    Returns:
        The package's folder.
    Raises:
        UsageError: a bad name, ``to`` not a folder, or the package already there; nothing is
        written then.
    """
    check_name(name)
    to = Path(to)
    if not to.is_dir():
        raise UsageError(
            f"--to {str(to)!r} is not a folder (the one that holds paper packages, e.g. experiments)"
        )
    package = to / name
    if package.exists():
        raise UsageError(f"{str(package)!r} already exists; choose another name or remove it")
    title = title or f"{name} (a paper written from dpsim's template)"
    if '"' in title or "\n" in title:
        raise UsageError(f"--title {title!r} may not hold a double quote or a line break")
    texts = {path: text.format(name=name, title=title) for path, text in template_files().items()}
    for path, text in texts.items():
        target = package / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return package


def next_steps(name: str, package: Path) -> list[str]:
    """What to do after :func:`new_paper`, as lines for the command to print."""
    return [
        f"wrote {package}/ ({', '.join(SKELETON)}, figures/noise.py)",
        'register it with one line under [project.entry-points."dpsim.papers"] in pyproject.toml:',
        f'    {name} = "dpsim.experiments.{name}"',
        "then reinstall (pip install -e .) and try:",
        f"    dpsim list {name}; dpsim run {name}-noise; dpsim verify {name} --mutants",
        f"and write its page, docs/{name}.md (the package's PAGE).",
    ]
