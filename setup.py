"""The package list, found rather than written out: pyproject.toml's ``packages.find`` cannot
install a folder under another name, and the repository's top-level ``experiments/`` is
installed as ``dpsim.experiments`` (``package-dir`` in pyproject.toml). Every package under
``dpsim/`` (with ``dpsim/datasets/data``, a folder of package data without ``__init__.py``)
and every paper package under ``experiments/`` is found here, so adding a paper needs no edit
of this file or of pyproject.toml beyond its one entry-point line. Everything else is in
pyproject.toml."""
from setuptools import find_namespace_packages, find_packages, setup


def packages() -> list[str]:
    """dpsim's packages and data folders, and ``dpsim.experiments`` with every paper package."""
    own = find_namespace_packages(include=["dpsim", "dpsim.*"], exclude=["dpsim.experiments", "dpsim.experiments.*",
                                                                      "*__pycache__*"])
    papers = [f"dpsim.experiments.{name}" for name in find_packages("experiments")]
    return sorted({*own, "dpsim.experiments", *papers})


setup(packages=packages())
