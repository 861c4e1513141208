"""A module's digest from its syntax tree (dpsim.engine.storage.digests): the one-pass serialiser
the digests are taken with writes exactly the text of the plain serialiser of the tree without its
docstrings, for every module of dpsim and of the papers; a comment or docstring does not change a
digest, and a change of what the code does does."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from dpsim.engine.storage import digests

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted([*(ROOT / "dpsim").rglob("*.py"), *(ROOT / "experiments").rglob("*.py")])


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(ROOT)) for p in MODULES])
def test_the_fast_serialiser_writes_the_plain_serialisers_text(path):
    tree = ast.parse(path.read_text())
    out, imports = [], []
    digests._serialise_fast(tree, out, imports)
    assert "".join(out) == digests._serialised(
        digests._strip_docstrings(ast.parse(path.read_text()))
    )
    expected = [
        (0, a.name, ()) for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    ]
    assert {i for i in imports if i[0] == 0 and not i[2]} >= set(expected)


def test_comments_and_docstrings_keep_a_digest_and_code_changes_it(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""doc"""\nx = 1  # one\n\n\ndef f():\n    """doc"""\n    return x\n')
    plain = digests._parsed_digest(module.read_bytes(), str(module))[0]
    module.write_text('"""other doc"""\n# a comment\nx = 1\n\ndef f():\n    return x\n')
    assert digests._parsed_digest(module.read_bytes(), str(module))[0] == plain
    module.write_text('"""doc"""\nx = 2\n\n\ndef f():\n    return x\n')
    assert digests._parsed_digest(module.read_bytes(), str(module))[0] != plain
