"""Summaries, slopes and verdicts that respect what the table holds:
nothing pooled silently, the real problem named (ε = ∞), pooled axes with their own
intercepts, REFUSED on unconverged fits, and verify on exactly R replicates."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpsim.errors import UsageError
from dpsim.engine.judgement.checks import slope_check, trend_check
from dpsim.engine.execution.runner import run_experiment
from dpsim.engine.presentation.summary import loglog_slope, slope_fit, summarise
from dpsim.engine.judgement.verify import summary_line, verify
from toy import toy_experiment

INF = math.inf


def rates(eps=(0.5, 1.0, 2.0, INF), p=(0.5,), reps=50, seed=0, converged=True):
    rng = np.random.default_rng(seed)
    rows = [
        {
            "eps": e,
            "p": q,
            "rep": r,
            "method": m,
            "point": hash((e, q)) & 0xFFFF,
            "err": math.exp(-math.log(e) if math.isfinite(e) else -3.0)
            * (1 + 0.1 * rng.standard_normal())
            / q,
            "converged": converged,
        }
        for e in eps
        for q in p
        for r in range(reps)
        for m in ("mle", "counts")
    ]
    frame = pd.DataFrame(rows)
    frame.attrs["method_columns"] = ["err", "converged"]
    return frame


def test_infinite_x_is_named_as_the_problem():
    with pytest.raises(UsageError, match="eps=inf is in the rows .*non-private"):
        loglog_slope(rates(), "err", "eps", method="mle")
    fit = loglog_slope(rates(), "err", "eps", method="mle", where={"eps": [0.5, 1.0, 2.0]})
    assert fit.slope == pytest.approx(-1.0, abs=0.05) and fit.n_points == 3
    assert "eps ∈ {0.5, 1, 2}" in fit.rows


def test_methods_and_unmapped_axes_are_never_pooled():
    with pytest.raises(UsageError, match="pool methods"):
        loglog_slope(rates(eps=(0.5, 1.0, 2.0)), "err", "eps")
    table = rates(eps=(0.5, 1.0, 2.0), p=(0.25, 0.5))
    with pytest.raises(UsageError, match=r"would pool 2 values of 'p' \(0.25, 0.5\)"):
        loglog_slope(table, "err", "eps", method="mle")
    with pytest.raises(UsageError, match="'p'"):
        summarise(table[table["method"] == "mle"], "err", ["eps"])
    summary = summarise(table[table["method"] == "mle"], "err", ["eps", "p"])
    assert len(summary) == 6 and (summary["n"] == 50).all()


def test_pooled_axes_get_their_own_intercepts():
    """Two p values with different error levels and an unbalanced x design: one common
    intercept biases the slope; one intercept per p recovers it exactly."""
    table = rates(eps=(0.5, 1.0, 2.0), p=(0.25, 1.0), reps=1)
    table = table[~((table["p"] == 0.25) & (table["eps"] == 2.0))]  # unbalanced
    table.loc[:, "err"] = np.exp(-np.log(table["eps"])) / table["p"]  # noiseless: slope −1
    fit = loglog_slope(table, "err", "eps", method="mle", pool=("p",))
    assert fit.slope == pytest.approx(-1.0, abs=1e-10)
    naive = slope_fit(
        np.log(table[table.method == "mle"]["eps"]), np.log(table[table.method == "mle"]["err"])
    )[0]
    assert abs(naive + 1.0) > 0.1


def test_slope_helper_standard_errors():
    x = np.log([1, 2, 4, 8.0])
    y = -0.5 * x
    slope, se = slope_fit(x, y, y_se=[0.1, 0.1, 0.1, 0.1])
    assert slope == pytest.approx(-0.5) and se == pytest.approx(
        0.1 / math.sqrt(np.sum((x - x.mean()) ** 2))
    )


def test_unconverged_rows_make_a_check_refuse():
    table = rates(eps=(0.5, 1.0, 2.0))
    table.loc[table.index[:5], "converged"] = False  # 5 of 300 mle rows: 1.7%
    check = slope_check("c", "e", "err", "mle", "eps", -1.0, 0.2)
    result = check.evaluate(table)
    assert result.verdict == "REFUSED" and "did not converge" in result.line()
    table.loc[table.index[:5], "converged"] = True
    assert check.evaluate(table).verdict == "PASS"


def test_summary_line_counts_every_verdict():
    from collections import Counter

    assert (
        summary_line(Counter({"PASS": 3, "FAIL": 1, "INCONCLUSIVE": 2}))
        == "3 passed, 1 failed, 2 inconclusive"
    )
    assert "1 refused" in summary_line(Counter({"REFUSED": 1}))


def test_verify_uses_exactly_the_replicates_asked_for(tmp_path):
    """6 replicates are on disk; verify --reps 3 judges on replicates 0–2 only (and says so),
    --reps 8 computes the two missing ones first."""
    experiment = toy_experiment("toy-verify", reps=6, n_items=[8], mechanism=["laplace"], p=[1.0])
    runs = tmp_path / "runs"
    run_experiment(experiment, out=runs / experiment.name, progress=False)
    check = trend_check(
        "toy-verify-borda",
        experiment.name,
        "relative_hamming",
        "borda",
        "eps",
        -1,
        where={"eps": [1.0]},
        pool=(),
        log_y=False,
    )
    seen = []
    lines = []

    class Spy:
        """The check, recording the replicates of each table it is judged on."""

        name, experiment, report_only = check.name, check.experiment, check.report_only

        def evaluate(self, table, family=1):
            seen.append(sorted(table["rep"].unique()))
            return check.evaluate(table, family)

    spy = Spy()
    verify(
        {spy.name: spy},
        {experiment.name: experiment},
        runs=runs,
        reps=3,
        progress=False,
        echo=lines.append,
    )
    assert seen[-1] == [0, 1, 2]
    assert "3 rows" not in lines[1] and "[R = 3;" in lines[1]
    verify(
        {spy.name: spy},
        {experiment.name: experiment},
        runs=runs,
        reps=8,
        progress=False,
        echo=lines.append,
    )
    assert seen[-1] == list(range(8))
