"""How dpsim is installed: the one place this is explained.

The papers live in the repository's top-level ``experiments/`` folder and are installed as
``dpsim.experiments`` (``package-dir`` in pyproject.toml), so they can never collide with a
user's own ``experiments`` package. pyproject.toml's ``packages.find`` cannot install a folder
under another name, so the package list is found here: every package under ``dpsim/`` (with
``dpsim/datasets/data``, package data without ``__init__.py``) and every paper package under
``experiments/``. Adding a paper needs no edit of this file, only its one line under
``[project.entry-points."dpsim.papers"]`` in pyproject.toml, whose name is the paper's name.

Every install path works without a link from ``dpsim/experiments`` to ``experiments/``: a wheel
copies the folder under its installed name, and an editable install (``pip install -e .``,
also ``--no-deps --no-build-isolation`` offline) maps ``dpsim.experiments`` to the folder
through setuptools' editable finder. pyproject.toml uses no field newer than setuptools 64.
Everything else is in pyproject.toml."""

from setuptools import find_namespace_packages, find_packages, setup


def packages() -> list[str]:
    """dpsim's packages and data folders, and ``dpsim.experiments`` with every paper package."""
    own = find_namespace_packages(
        include=["dpsim", "dpsim.*"],
        exclude=["dpsim.experiments", "dpsim.experiments.*", "*__pycache__*"],
    )
    papers = [f"dpsim.experiments.{name}" for name in find_packages("experiments")]
    return sorted({*own, "dpsim.experiments", *papers})


setup(packages=packages())
