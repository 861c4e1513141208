"""How dpsim installs (setup.py's docstring): a wheel built offline, with no build isolation and
no link from dpsim/experiments to experiments/, holds every paper package under
``dpsim.experiments``, the package data, and an entry point per paper that names one of them."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    """The wheel built from a copy of the tracked files (a build leaves its build/ folder there,
    not in the checkout)."""
    out, tree = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("tree")
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    for name in tracked.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            str(tree),
            "-w",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (path,) = out.glob("dpsim-*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_installs_every_paper_under_dpsim_experiments(wheel):
    names = set(wheel.namelist())
    papers = sorted(p.parent.name for p in (ROOT / "experiments").glob("*/__init__.py"))
    assert papers, "no paper package found"
    for paper in papers:
        for module in (ROOT / "experiments" / paper).rglob("*.py"):
            installed = "dpsim/experiments/" + module.relative_to(ROOT / "experiments").as_posix()
            assert installed in names, installed
    assert not any(n.startswith("experiments/") for n in names)  # never as a top-level package
    assert "dpsim/engine/storage/store.py" in names and "dpsim/datasets/data/cems.csv" in names
    templates = ROOT / "dpsim" / "engine" / "templates"
    for template in templates.rglob("*.tmpl"):  # what `dpsim new-paper` writes from
        assert "dpsim/engine/templates/" + template.relative_to(templates).as_posix() in names


def test_every_entry_point_names_a_paper_package_in_the_wheel(wheel):
    (entry_points,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    parser = configparser.ConfigParser()
    parser.read_string(wheel.read(entry_points).decode())
    papers = dict(parser["dpsim.papers"])
    assert set(papers) == {p.parent.name for p in (ROOT / "experiments").glob("*/__init__.py")}
    for name, module in papers.items():
        assert module == f"dpsim.experiments.{name}"
        assert f"dpsim/experiments/{name}/__init__.py" in wheel.namelist()


def test_pyproject_asks_only_for_a_setuptools_old_machines_have():
    """No field newer than setuptools 64 (e.g. a PEP 639 ``license`` string, setuptools 77): a
    plain ``pip install --no-deps --no-build-isolation -e .`` then works offline on a machine
    whose setuptools is older."""
    text = (ROOT / "pyproject.toml").read_text()
    assert 'requires = ["setuptools>=64"]' in text
    assert "license-files" not in text and 'license = "' not in text
