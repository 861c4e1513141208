"""A folder the user names is theirs, and code identity ignores what cannot change a row.

`dpsim verify --runs DIR` on a folder made by other code refuses in one line (naming the
changed module and the ways back) and leaves every file byte-identical; only a folder of
dpsim's cache (`runs/verify`, marked `"owner": "dpsim-cache"`) is replaced. The fingerprint
is taken from syntax trees: a comment, a docstring or a CHECKS edit keeps it, a change of
what the code computes changes it and is named. `dpsim run --accept-code-change` extends a
folder of other code and records the change as a new segment of its manifest."""

from __future__ import annotations

import hashlib
import json
import textwrap

import pytest

from dpsim.cli import main
from dpsim.engine.storage.digests import module_digest
from dpsim.engine.storage.provenance import changed_modules, fingerprint
from laplace_study import study_text

STUDY = textwrap.dedent(study_text("safe", n_items=20, reps=3, region=(0.5, 2.0), figure=True))
# a real change of what the study computes: the noise at ε·0.01
CHANGED = STUDY.replace("(2.0 / ctx.analysis", "(2.0 / (0.01 * ctx.analysis").replace(
    'ctx.analysis["eps"]) *', 'ctx.analysis["eps"])) *'
)


# a mutant, with a method and an import only it uses: not the rows' identity
MUTANT = """
from dpsim.engine.judgement.mutants import replaced_method

def silent(key, ctx):
    return {"noise_ms": jnp.zeros(())}

MUTANTS = [Mutant("safe-silent", "no noise", ("safe",), replaced_method("laplace", silent))]
"""


@pytest.fixture
def study(tmp_path, monkeypatch):
    path = tmp_path / "study.py"
    path.write_text(STUDY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPSIM_JAX_CACHE", "off")
    return path


def _hashes(folder):
    """Every file under ``folder`` (lock files included) → the SHA-256 of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _manifest(out):
    return json.loads((out / "manifest.json").read_text())


def _experiment(path):
    from dpsim.engine.registry import catalogue

    return catalogue(str(path)).experiments["safe"]


def test_verify_runs_leaves_a_folder_of_other_code_byte_identical(study, capsys):
    out = study.parent / "mine" / "safe"
    assert main(["run", "study.py", "--out", str(out), "--no-progress"]) == 0
    before = _hashes(study.parent / "mine")
    study.write_text(CHANGED)
    capsys.readouterr()
    assert main(["verify", "study.py", "--runs", "mine", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert (
        "changed module: study.py" in err and "git stash" in err and "--accept-code-change" in err
    )
    assert _hashes(study.parent / "mine") == before  # not one byte changed
    assert (
        main(
            [
                "solve",
                "study.py",
                "--for",
                "eps",
                "--target",
                "noise_ms=4",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 2
    )  # nor does a solve into it
    assert "changed module: study.py" in capsys.readouterr().err
    assert _hashes(study.parent / "mine") == before


def test_the_cache_is_marked_and_only_it_is_replaced(study, capsys):
    assert main(["verify", "study.py", "--no-progress"]) in (0, 3)
    cache = study.parent / "runs" / "verify" / "safe"
    assert _manifest(cache)["owner"] == "dpsim-cache"
    made = _manifest(cache)["code"]["hash"]
    study.write_text(CHANGED)
    capsys.readouterr()
    assert main(["verify", "study.py", "--no-progress"]) in (0, 1, 3)  # dpsim's cache: recomputed
    assert "recomputing it" in capsys.readouterr().err
    assert _manifest(cache)["code"]["hash"] != made and _manifest(cache)["owner"] == "dpsim-cache"
    manifest = _manifest(cache)  # the same folder, unmarked
    del manifest["owner"]
    (cache / "manifest.json").write_text(json.dumps(manifest))
    study.write_text(STUDY)
    before = _hashes(cache)
    capsys.readouterr()
    assert main(["verify", "study.py", "--no-progress"]) == 2  # not dpsim's: refused
    err = capsys.readouterr().err
    assert "never rewrites yours" in err and "remove it to let verify recompute it" in err
    assert _hashes(cache) == before


def test_a_fingerprint_is_computed_once_per_experiment_until_a_file_changes(study, monkeypatch):
    """A re-run of the same experiment object reuses its fingerprint (nothing parsed again;
    the caller's copy is its own), and any change to a digested file's bytes recomputes it."""
    from dpsim.engine.storage import provenance

    experiment = _experiment(study)
    first = fingerprint(experiment)
    first["modules"].clear()  # the caller's copy only
    real = provenance._modules

    def refused(*args, **kwargs):
        raise AssertionError("parsed again")

    monkeypatch.setattr(provenance, "_modules", refused)
    again = fingerprint(experiment)
    assert again["hash"] == first["hash"] and "study.py" in again["modules"]
    study.write_text(CHANGED)
    monkeypatch.setattr(provenance, "_modules", real)
    assert fingerprint(experiment)["hash"] != first["hash"]


def test_comments_docstrings_and_checks_do_not_change_the_fingerprint(study, tmp_path):
    experiment = _experiment(study)
    first = fingerprint(experiment)
    assert first["definition_files"] == ["study.py"] and len(first["modules"]["study.py"]) == 16
    edited = ("# a comment at the top\n" + STUDY).replace(
        "def laplace_counts(key, ctx):\n",
        'def laplace_counts(key, ctx):\n    """A docstring."""  # and a comment\n\n',
    )
    edited = edited.replace("8.0 / p", "8.0 / p").replace(
        "0.5, 2.0", "0.25, 4.0"
    )  # only the CHECKS region
    edited = edited.replace(
        'panels=(Panel("noise_ms", None, "mean square"),)',
        'panels=(Panel("noise_ms", None, "MS"),)',
    )
    assert edited != STUDY
    study.write_text(edited)
    assert fingerprint(experiment)["hash"] == first["hash"]  # comment, docstring, CHECKS, figure
    study.write_text(edited + MUTANT)  # a mutant and what only it uses
    assert fingerprint(experiment)["hash"] == first["hash"]
    study.write_text(CHANGED)
    changed = fingerprint(experiment)
    assert changed["hash"] != first["hash"] and changed_modules(first, changed) == ["study.py"]
    study.write_text(
        STUDY.replace("(2.0 / ctx.analysis", "(SCALE / ctx.analysis") + "SCALE = 2.0\n"
    )
    scaled = fingerprint(experiment)  # a constant the method reads counts
    study.write_text(
        STUDY.replace("(2.0 / ctx.analysis", "(SCALE / ctx.analysis") + "SCALE = 3.0\n"
    )
    assert fingerprint(experiment)["hash"] != scaled["hash"]
    library = tmp_path / "lib.py"  # a library-style module
    library.write_text("import math\n\ndef f(x):\n    return math.exp(x)\n")
    plain = module_digest(library)
    library.write_text(
        '"""Doc."""\nimport math  # why\n\n\ndef f(x):\n    """Doc."""\n    return math.exp(x)\n'
    )
    assert module_digest(library) == plain
    library.write_text("import math\n\ndef f(x):\n    return math.exp(-x)\n")
    assert module_digest(library) != plain


def test_a_checks_edit_makes_verify_compute_nothing(study, capsys):
    assert main(["verify", "study.py", "--no-progress"]) in (0, 3)
    cache = study.parent / "runs" / "verify" / "safe"
    before = _hashes(cache)
    study.write_text(STUDY.replace("0.5, 2.0", "0.25, 4.0"))  # the check's region only
    capsys.readouterr()
    assert main(["verify", "study.py", "--no-progress"]) in (0, 3)
    assert "recomputing" not in capsys.readouterr().err and _hashes(cache) == before


def test_accept_code_change_is_recorded_as_a_segment(study, capsys):
    out = study.parent / "mine"
    assert main(["run", "study.py", "--out", "mine", "--reps", "2", "--no-progress"]) == 0
    old = _manifest(out)
    parts = sorted(p.name for p in (out / "parts").glob("*.parquet"))
    study.write_text(CHANGED)
    assert main(["run", "study.py", "--out", "mine", "--reps", "3", "--no-progress"]) == 2
    assert "changed module: study.py" in capsys.readouterr().err
    assert (
        main(
            [
                "run",
                "study.py",
                "--out",
                "mine",
                "--reps",
                "3",
                "--accept-code-change",
                "--no-progress",
            ]
        )
        == 0
    )
    manifest = _manifest(out)
    first, second = manifest["segments"]
    assert first["code"]["hash"] == old["code"]["hash"] and first["parts_before"] == []
    assert second["code"]["hash"] == manifest["code"]["hash"] != old["code"]["hash"]
    assert second["parts_before"] == parts and second["changed_modules"] == ["study.py"]
    assert (
        manifest["history"][-1]["accept_code_change"] is True
        and manifest["history"][-1]["lanes_run"] == 1
    )
    import pyarrow.parquet as pq

    reps = {
        name: set(pq.read_table(out / "parts" / name, columns=["rep"])["rep"].to_pylist())
        for name in sorted(p.name for p in (out / "parts").glob("*.parquet"))
    }
    assert set().union(*(reps[n] for n in parts)) == {0, 1}  # the old code's rows stay
    assert set().union(*(r for n, r in reps.items() if n not in parts)) == {
        2
    }  # only the missing lane is new
    assert (
        main(["run", "study.py", "--out", "mine", "--reps", "3", "--no-progress"]) == 0
    )  # its code now
    assert main(["run", "study.py", "--out", "mine", "--part", "1/2", "--accept-code-change"]) == 2


def test_the_fingerprint_is_the_same_in_another_process(study):
    """A study file's module gets a made-up name when it loads (different in every process):
    the fingerprint names functions by file, so a folder stays usable by the next command."""
    import subprocess
    import sys

    script = (
        "from dpsim.engine.registry import catalogue\n"
        "from dpsim.engine.storage.provenance import fingerprint\n"
        "print(fingerprint(catalogue('study.py').experiments['safe'])['hash'])"
    )
    other = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=study.parent
    ).stdout.strip()
    assert other == fingerprint(_experiment(study))["hash"]


HELPER = """
def noise_scale(eps):
    return 2.0 / eps


def unused(x):
    return x + 1
"""


def test_a_helper_module_counts_by_what_the_study_uses_from_it(tmp_path, monkeypatch):
    """A study importing a function from its own helper module: a change of that function
    changes the fingerprint and is named; a change of another function there does not."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "safety_helper.py").write_text(HELPER)
    text = STUDY.replace(
        "import jax, jax.numpy as jnp\n",
        "import jax, jax.numpy as jnp\nfrom safety_helper import noise_scale\n",
    )
    text = text.replace(
        'noise = (2.0 / ctx.analysis["eps"])', 'noise = noise_scale(ctx.analysis["eps"])'
    )
    assert "noise_scale(ctx" in text
    (tmp_path / "study.py").write_text(text)
    experiment = _experiment(tmp_path / "study.py")
    first = fingerprint(experiment)
    assert first["definition_files"] == ["safety_helper.py", "study.py"]
    (tmp_path / "safety_helper.py").write_text(HELPER.replace("x + 1", "x + 2"))
    assert fingerprint(experiment)["hash"] == first["hash"]
    (tmp_path / "safety_helper.py").write_text(HELPER.replace("2.0 / eps", "3.0 / eps"))
    changed = fingerprint(experiment)
    assert changed["hash"] != first["hash"] and changed_modules(first, changed) == [
        "safety_helper.py"
    ]


def test_a_function_without_a_file_counts_by_its_code_not_its_bytes():
    """A method defined by ``exec`` (a notebook cell, a documentation block) has no file: it
    counts by its code's text, which (unlike ``marshal.dumps``, whose bytes follow reference
    counts) stays the same while other objects come to refer to its constants."""
    from dpsim.engine.storage.provenance import _fileless_code

    namespace = {}
    exec(compile("def f(x):\n    return x * 2.5 + len('abc')\n", "<block>", "exec"), namespace)
    f = namespace["f"]
    before = _fileless_code([f])
    held = [*f.__code__.co_consts, f.__code__.co_names, f.__code__.co_varnames]  # noqa: F841 (references)
    assert _fileless_code([f]) == before
    namespace2 = {}
    exec(compile("def f(x):\n    return x * 3.5 + len('abc')\n", "<block>", "exec"), namespace2)
    assert _fileless_code([namespace2["f"]]) != before  # another constant: other code
