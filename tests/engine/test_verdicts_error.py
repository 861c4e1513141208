"""ERROR is not FAIL: a check that cannot be evaluated (its statistic NaN, its prediction or its
own code raising, an axis it would pool) gets the verdict ERROR, with its own exit status of
`dpsim verify` (4), and never kills a mutant; what can be found without data (an unknown
metric, method or axis, an axis the check would pool) is refused in one line with a
did-you-mean when the study loads, before anything is computed."""

from __future__ import annotations

import math
import textwrap
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from dpsim.cli import main, verify_status
from dpsim.errors import UsageError
from dpsim.engine import Experiment, Method
from dpsim.engine.judgement.checks import Check, level_check, slope_check
from dpsim.engine.judgement.verify import judge, summary_line
from laplace_study import study_text

STUDY = study_text("errs", n_items=8, reps=6, region=(0.5, 2.0))


@pytest.fixture
def study(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPSIM_JAX_CACHE", "off")
    path = tmp_path / "study.py"
    path.write_text(textwrap.dedent(STUDY))
    return path


def _table(values) -> pd.DataFrame:
    """Rows of one method at ε = 1, 2 (replicates 0 … len(values)/2 − 1 at each)."""
    half = len(values) // 2
    table = pd.DataFrame(
        {
            "eps": [1.0] * half + [2.0] * half,
            "method": "m",
            "rep": list(range(half)) * 2,
            "point": [0] * half + [1] * half,
            "noise_ms": values,
        }
    )
    table.attrs["method_columns"] = ["noise_ms"]
    return table


CHECK = level_check(
    "t-level", "e", "noise_ms", "m", lambda p: 8.0 / p["eps"] ** 2, 0.5, 2.0, at=("eps",)
)


def test_a_check_that_cannot_be_evaluated_is_an_error_never_a_fail():
    rng = np.random.default_rng(0)
    good = _table(np.concatenate([8.0 * rng.exponential(size=50), 2.0 * rng.exponential(size=50)]))
    assert judge(CHECK, good, 1).verdict == "PASS"
    nan = judge(CHECK, _table([math.nan] * 100), 1)  # every value NaN: no statistic
    assert (
        nan.verdict == "ERROR"
        and "cannot be evaluated" in nan.line()
        and nan.line().startswith("ERROR")
    )

    def broken(point):
        raise ZeroDivisionError("the closed form divides by zero")

    raising = level_check("t-raising", "e", "noise_ms", "m", broken, 0.5, 2.0, at=("eps",))
    result = judge(raising, good, 1)  # its prediction raises
    assert result.verdict == "ERROR" and "ZeroDivisionError" in result.evidence

    class Buggy(Check):  # a study's own check with a bug
        def estimate(self, rows):
            return rows["no such column"]

    buggy = judge(Buggy("t-buggy", "e"), good, 1)
    assert buggy.verdict == "ERROR" and "KeyError" in buggy.evidence and "\n" not in buggy.line()
    pooled = judge(level_check("t-pooled", "e", "noise_ms", "m", lambda p: 8.0, 0.5, 2.0), good, 1)
    assert pooled.verdict == "ERROR" and "would pool" in pooled.evidence


def test_verify_exit_status_and_summary_name_errors():
    assert verify_status(Counter({"PASS": 3, "ERROR": 1})) == 4
    assert verify_status(Counter({"PASS": 3, "ERROR": 1, "FAIL": 1})) == 1  # a FAIL is said first
    assert verify_status(Counter({"ERROR": 1, "INCONCLUSIVE": 2})) == 4
    assert (
        verify_status(Counter({"INCONCLUSIVE": 1})) == 3
        and verify_status(Counter({"PASS": 1})) == 0
    )
    assert "1 could not be evaluated (ERROR)" in summary_line(Counter({"PASS": 1, "ERROR": 1}))


NAN_MUTANT = """
import dataclasses
def nan_everywhere(experiment):
    return dataclasses.replace(experiment, methods={"laplace": Method(lambda key, ctx: {"noise_ms": jnp.nan},
                                                                      ("noise_ms",))})
MUTANTS = [Mutant("errs-nan", "the method returns NaN", ("errs",), nan_everywhere)]
"""


def test_an_error_under_a_mutant_never_kills_it(tmp_path, monkeypatch, capsys):
    """The mutant makes the metric NaN: the check cannot be evaluated under it (ERROR), so the
    mutant survives (exit 1) and its line says so; it was a FAIL, and a kill, before."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPSIM_JAX_CACHE", "off")
    (tmp_path / "study.py").write_text(
        study_text("errs", n_items=8, reps=6, region=(0.5, 2.0), tail=NAN_MUTANT)
    )
    assert main(["verify", "study.py", "--mutants", "--runs", "vr", "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "SURVIVED  errs-nan" in out and "1 could not be evaluated (ERROR)" in out, out
    assert "mutants: 0 killed, 1 survived of 1" in out


@pytest.mark.parametrize(
    "edit, words",
    [
        (
            ('"noise_ms", "laplace", lambda', '"noise_msq", "laplace", lambda'),
            ["reports no metric 'noise_msq'", "did you mean 'noise_ms'"],
        ),
        (
            ('"noise_ms", "laplace", lambda', '"noise_ms", "laplac", lambda'),
            ["has no method 'laplac'", "did you mean 'laplace'"],
        ),
        ((', at=("eps",)', ', at=("epss",)'), ["has no axis 'epss'", "did you mean 'eps'"]),
        ((', at=("eps",)', ""), ["would pool 2 values of 'eps'"]),
    ],
)
def test_definition_errors_are_refused_when_the_study_loads(study, capsys, edit, words):
    study.write_text(study.read_text().replace(*edit))
    for command in (["verify", "study.py", "--runs", "vr", "--no-progress"], ["list", "study.py"]):
        assert main(command) == 2
        captured = capsys.readouterr()
        err = captured.err.strip()
        assert len(err.splitlines()) == 1 and all(w in err for w in words), err
        assert "family" not in captured.out  # refused before the verify began
    assert not (study.parent / "vr").exists()  # nothing computed, nothing written


def test_validation_accepts_what_the_check_maps():
    """No false refusal: an axis mapped by the aggregation, a slope's x, a where selection."""
    experiment = Experiment(
        name="e",
        title="t",
        axes={"n_items": [8, 16], "eps": [1.0, 2.0]},
        shape_axes=("n_items",),
        analysis_axes=("eps",),
        truth=lambda key, shape: {},
        generate=lambda *a: {},
        methods={"m": Method(lambda k, c: {}, ("err",))},
        reps=2,
    )
    slope_check("s", "e", "err", "m", "n_items", -0.5, 0.1, where={"eps": [1.0]}).validate(
        experiment
    )
    slope_check("s", "e", "err", "m", "n_items", -0.5, 0.1, pool=("eps",)).validate(experiment)
    level_check("l", "e", "err", "m", lambda p: 1.0, 0.5, 2.0, at=("n_items", "eps")).validate(
        experiment
    )
    with pytest.raises(UsageError, match="would pool 2 values of 'eps'"):
        slope_check("s", "e", "err", "m", "n_items", -0.5, 0.1).validate(experiment)
