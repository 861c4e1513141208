"""Comments and docstrings of dpsim/ and experiments/ keep the rule, not the lab notebook.

A comment says what a constant or a choice is and why, and points to the benchmark section
that measured it (``benchmarks/cai.py, section Q``); run times, speeds and speed-ups live in
``benchmarks/results/*.json``, where a rerun replaces them. This test fails when a comment
or docstring quotes a run time ("40 s", "0.3 ms/lane"), a throughput ("11 M draws/s"), a
speed-up ("7× faster") or the accelerator it was measured on.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
FOLDERS = ("dpsim", "experiments")
_UNIT = r"(?:ms|µs|us|ns|secs?|seconds?|mins?|minutes?|hrs?|hours?|days?)"
RUN_TIME = re.compile(
    r"\d(?:[\d.,]*\d)?\s*" + _UNIT + r"(?![\w/])"  # 0.41 ms, 3.5 min, 2 seconds
    r"|\d(?:[\d.,]*\d)?\s+[sh](?![\w/'’])"  # 40 s, 2 h
    r"|\d\s*(?:[kKMG]\s+)?[a-z]+/(?:s|sec|second|lane|fit|call|chunk)\b"  # 11 M draws/s, 0.4 ms/lane
    r"|\d(?:[.,]\d+)?\s*[×x]\s+(?:faster|slower|quicker)"  # 7× faster
    r"|(?:faster|slower|speed-?up)\s+(?:of|by)\s+(?:about\s+)?\d"  # faster by 3
    r"|orders?\s+of\s+magnitude\s+(?:faster|slower)"
    r"|\b(?:[AHV]100|H200|B200|GH200)\b",
    re.I,
)
# comments that may name a duration: format examples of the helpers that write one
ALLOWED = {
    (
        "dpsim/engine/presentation/units.py",
        '"""Seconds as "42 s", "3.5 min", "2.1 h" or "3.2 days"."""',
    ),
}


def comment_lines(source: str):
    """(line number, text) of every comment and every string statement (docstrings): a string
    statement's whole lines (its statement starts its first line; what follows it on its last
    line, a comment, is one anyway)."""
    lines = source.split("\n")  # as the parser counts lines (splitlines also breaks at \f, \x1c, …)
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            for number in range(node.lineno, node.end_lineno + 1):
                yield number, lines[number - 1].strip()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string.strip()


def quoted_run_times(path: Path, source: str) -> list[str]:
    """``path:line: text`` of each comment line of ``source`` that quotes a run time or speed."""
    name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    return [
        f"{name}:{number}: {text}"
        for number, text in sorted(set(comment_lines(source)))
        if RUN_TIME.search(text) and (name, text) not in ALLOWED
    ]


def test_no_comment_quotes_a_run_time():
    found = [
        line
        for folder in FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line in quoted_run_times(path, path.read_text(encoding="utf-8"))
    ]
    assert not found, (
        "comments state the rule and point to the benchmark section that measured it; "
        "run times and speeds go to benchmarks/results/*.json:\n" + "\n".join(found)
    )


@pytest.mark.parametrize(
    "text",
    [
        "# one lane at a time: vmapping took 40 s to compile",
        "# 0.41 ms/lane on the CPU",
        '"""Measured: 11–14 M draws/s at σ = 1."""',
        "# counting pairwise was 7× faster at n = 40",
        "# an order of magnitude... no: two orders of magnitude slower",
        "# the cap measured on an H100",
        "# a sweep of 3.5 min per figure",
        "# the first run took 2 h",
    ],
)
def test_a_quoted_run_time_is_caught(text):
    assert quoted_run_times(ROOT / "x.py", f"{text}\nx = 1\n")


@pytest.mark.parametrize(
    "text",
    [
        "# λ_os = 8s√(k log(n/δ))/ε",
        "# the number of 1s released",
        "# seconds without progress before a run stops (--watchdog)",
        "# (benchmarks/cai.py, section Q; numbers in benchmarks/results/cai.json)",
        "# 2 chunks in flight, 4 micro-batches per chunk",
        "# Errata and modes (A10): ≥ 200 replicates",
    ],
)
def test_rules_and_units_of_arguments_pass(text):
    assert not quoted_run_times(ROOT / "x.py", f"{text}\nx = 1\n")
