"""``dpsim verify --until-decided``: the sequential rule keeps its error rates, and INCONCLUSIVE
checks are decided by adding replicates at the points they read.

The truth is known: ``known-mean`` draws x ~ N(μ, 0.5²) at every data point (μ and an
independent ``trial`` index are data axes), and a check compares mean(x) with a
region [lo, hi]. With μ = 1 = hi the truth lies ON the boundary: a FAIL ("outside the
region") is wrong, and it is the limit of truths just outside the region, where a PASS is
wrong. The sequential rule promises P(wrong PASS) ≤ 0.025 and P(wrong FAIL) ≤ 0.025 for one
check (its two-sided 0.05, one side of it; :mod:`dpsim.engine.judgement.verdicts`).
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

from dpsim.errors import UsageError
from dpsim.engine import Experiment, Tuning, Method
from dpsim.engine.definition import axes
from dpsim.engine.judgement.checks import Claim, Mean
from dpsim.engine.presentation.summary import Z95
from dpsim.engine.judgement.verdicts import Estimate, judge, stage_share
from dpsim.engine.judgement.verify import Sequential, verify
from dpsim.engine.judgement.verify import judge as judge_check
from dpsim.engine.storage.store import load_results
from cli_cases import refused

SD = 0.5
NOMINAL = 0.025  # each error rate of one check: one side of the two-sided 0.05


def generate(key, shape, truth, data):
    """One draw x ~ N(μ, SD²)."""
    return {"x": data["mu"] + SD * jax.random.normal(key, ())}


def draw(key, ctx):
    return {"value": ctx.sample["x"]}


def known_mean(mus=(1.0,), trials=1, reps=20) -> Experiment:
    """Normal draws of known mean μ at every (μ, trial) data point."""
    return Experiment(
        name="known-mean",
        title="normal draws of known mean",
        axes={"mu": list(mus), "trial": list(range(trials))},
        shape_axes=(),
        analysis_axes=(),
        truth=lambda key, shape: {},
        generate=generate,
        methods={"draw": Method(draw, ("value",))},
        reps=reps,
        axis_types={
            "mu": axes.positive("the mean of the draws"),
            "trial": axes.integer(0, "a repetition"),
        },
        tuning=Tuning(lane_bytes=lambda shape: 64),
    )


def mean_check(name, mu, lo, hi, trial=0):
    """mean(x) at (μ, trial) lies in [lo, hi] (truth: μ; log scale, delta method)."""
    return Claim(
        name, "known-mean", Mean("value", "draw"), (lo, hi), where={"mu": [mu], "trial": [trial]}
    )


def quiet(line):
    pass


# ---------------------------------------------------------------------------------------
# The rule
# ---------------------------------------------------------------------------------------
def test_shares_spend_the_whole_rate_and_one_stage_is_plain_verify():
    for stages in (1, 2, 4, 7):
        assert sum(stage_share(s, stages) for s in range(1, stages + 1)) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        stage_share(5, 4)
    # 95% interval 0.97 ± 0.028 inside [0.5, 1]: plain PASS; at stage 1 of 4 the 97.5% interval
    # (± 0.032) reaches past 1, so it is INCONCLUSIVE: stage 1 is stricter than plain verify
    est = Estimate(0.97, 0.942, 0.998, 0.5, 1.0, "", "", "", reps=20)
    assert judge(est) == judge(est, 1, 1, 1) and judge(est)[0] == "PASS"
    assert judge(est, 1, 1, 4)[0] == "INCONCLUSIVE"
    far = Estimate(0.8, 0.78, 0.82, 0.5, 1.0, "", "", "", reps=20)
    assert all(judge(far, 1, s, 4)[0] == "PASS" for s in range(1, 5))


def sequential_errors(n_runs: int, stages: int, adjusted: bool, base: int = 40, seed: int = 0):
    """Wrong-PASS and wrong-FAIL rates of the sequential rule on ``n_runs`` simulated
    verifications with the truth on the boundary (mean 1 = hi of [0.5, 1]), judged by
    :func:`judge` itself: stage s looks at the first base·2^(s−1) draws (mean ± Z95·se);
    ``adjusted=False`` judges every look at the plain level (stage 1 of 1).

    Returns: (P(PASS), P(FAIL)) over the runs."""
    rng = np.random.default_rng(seed)
    draws = rng.normal(1.0, SD, (n_runs, base * 2 ** (stages - 1)))
    passes = fails = 0
    for x in draws:
        for stage in range(1, stages + 1):
            n = base * 2 ** (stage - 1)
            mean, se = float(x[:n].mean()), float(x[:n].std(ddof=1)) / math.sqrt(n)
            est = Estimate(mean, mean - Z95 * se, mean + Z95 * se, 0.5, 1.0, "", "", "", reps=n)
            verdict, _ = judge(est, 1, stage, stages) if adjusted else judge(est)
            if verdict != "INCONCLUSIVE":
                passes += verdict == "PASS"
                fails += verdict == "FAIL"
                break
    return passes / n_runs, fails / n_runs


def bound(n_runs: int) -> float:
    """The nominal rate plus 3 Monte-Carlo standard errors."""
    return NOMINAL + 3 * math.sqrt(NOMINAL * (1 - NOMINAL) / n_runs)


def test_sequential_rule_keeps_both_error_rates_and_the_unadjusted_rule_does_not():
    n_runs, stages = 4000, 4
    wrong_pass, wrong_fail = sequential_errors(n_runs, stages, adjusted=True)
    assert wrong_pass <= bound(n_runs) and wrong_fail <= bound(n_runs), (wrong_pass, wrong_fail)
    # the same draws judged at the plain level at every look: both errors inflate (about 0.07 each)
    naive_pass, naive_fail = sequential_errors(n_runs, stages, adjusted=False)
    assert naive_pass > bound(n_runs) and naive_fail > bound(n_runs), (naive_pass, naive_fail)


# ---------------------------------------------------------------------------------------
# Through the engine
# ---------------------------------------------------------------------------------------
def test_engine_repetition_keeps_the_error_rates(tmp_path):
    """300 independent sequential verifications in one verify: one check per trial (each
    its own data point, its own random stream), each judged alone (family 1)."""
    n_runs, stages = 300, 4
    experiment = known_mean(trials=n_runs, reps=20)
    checks = {t: mean_check(f"t{t}", 1.0, 0.5, 1.0, trial=t) for t in range(n_runs)}
    results, counts = verify(
        {c.name: c for c in checks.values()},
        {"known-mean": experiment},
        runs=tmp_path,
        progress=False,
        family=1,
        sequential=Sequential(stages),
        echo=quiet,
    )
    assert counts["PASS"] / n_runs <= bound(n_runs) and counts["FAIL"] / n_runs <= bound(n_runs), (
        counts
    )
    # the unadjusted rule on the same rows (it stops no later than the adjusted one, so every
    # look it takes was computed) errs more often
    table = load_results(tmp_path / "known-mean")
    naive = {"PASS": 0, "FAIL": 0, "INCONCLUSIVE": 0}
    for trial, rows in table.groupby("trial"):
        for stage in range(1, stages + 1):
            verdict = judge_check(
                checks[trial], rows[rows["rep"] < 20 * 2 ** (stage - 1)], 1
            ).verdict
            if verdict != "INCONCLUSIVE" or stage == stages:
                naive[verdict] += 1
                break
    wrong, naive_wrong = (
        (counts["PASS"] + counts["FAIL"]) / n_runs,
        (naive["PASS"] + naive["FAIL"]) / n_runs,
    )
    assert naive_wrong > 2 * bound(n_runs) > wrong, (naive, counts)


def test_inconclusive_checks_are_decided_correctly_and_a_rerun_computes_nothing(tmp_path):
    experiment = known_mean(mus=(1.0, 1.25), reps=10)
    checks = {
        "inside": mean_check("inside", 1.0, 0.8, 1.15),  # truth 1 inside: PASS is right
        "outside": mean_check("outside", 1.25, 0.5, 1.1),  # truth 1.25 outside: FAIL is right
        "also-outside": mean_check("also-outside", 1.25, 0.5, 1.12),
    }  # the same point, shared
    found = {"known-mean": experiment}
    plain, plain_counts = verify(checks, found, runs=tmp_path, progress=False, echo=quiet)
    assert plain_counts["INCONCLUSIVE"] == 3, [r.line() for r in plain]

    lines = []
    results, counts = verify(
        checks, found, runs=tmp_path, progress=False, sequential=Sequential(5), echo=lines.append
    )
    assert [r.verdict for r in results] == ["PASS", "FAIL", "FAIL"], lines
    stages = [int(r.note.split("decided at stage ")[1].split("/")[0]) for r in results]
    assert min(stages) > 1, lines
    # each point holds exactly the replicates of the last stage a check there took (shared once)
    stored = load_results(tmp_path / "known-mean").groupby("mu")["rep"].nunique().to_dict()
    assert stored == {1.0: 10 * 2 ** (stages[0] - 1), 1.25: 10 * 2 ** (max(stages[1:]) - 1)}
    assert f"{10 * 2 ** (stages[0] - 1)} replicates × 1 data point" in results[0].note
    assert "until decided: the later stages took" in lines[-1]

    again = []
    rerun, _ = verify(
        checks, found, runs=tmp_path, progress=False, sequential=Sequential(5), echo=again.append
    )
    assert [r.line() for r in rerun] == [r.line() for r in results]
    assert again[-1].endswith("0 computed now, the rest found on disk")
    # plain verify afterwards still judges on exactly R = 10 (the extra rows are left out)
    after, _ = verify(checks, found, runs=tmp_path, progress=False, echo=quiet)
    assert [r.verdict for r in after] == [r.verdict for r in plain]
    assert all("further replicates on disk left out" in r.note for r in after)


def test_budget_stops_a_check_that_cannot_pay_its_next_stage(tmp_path):
    experiment = known_mean(mus=(1.0, 1.25), reps=10)
    checks = {
        "inside": mean_check("inside", 1.0, 0.8, 1.15),
        "outside": mean_check("outside", 1.25, 0.5, 1.1),
    }
    results, counts = verify(
        checks,
        {"known-mean": experiment},
        runs=tmp_path,
        progress=False,
        sequential=Sequential(4, budget=15),
        echo=quiet,
    )
    # stage 2 costs 10 lanes per point: the first check gets them, the second cannot pay them
    first, second = results
    assert (
        second.verdict == "INCONCLUSIVE"
        and "budget spent: stage 2 needs 10 more lanes, 5 left" in second.note
    )
    assert (
        first.verdict == "INCONCLUSIVE"
        and "budget spent: stage 3 needs 20 more lanes, 5 left" in first.note
    )
    assert load_results(tmp_path / "known-mean").groupby("mu")["rep"].nunique().to_dict() == {
        1.0: 20,
        1.25: 10,
    }


def test_bad_sequential_settings_are_refused(tmp_path, monkeypatch, capsys):
    with pytest.raises(UsageError, match="--budget 0"):
        Sequential(4, budget=0)
    with pytest.raises(UsageError, match="--stages 0"):
        Sequential(0)
    for args, message in (
        (["--until-decided", "--budget", "0"], "--budget 0"),
        (["--until-decided", "--stages", "0"], "--stages 0"),
        (["--budget", "100"], "--budget needs --until-decided"),
        (["--stages", "3"], "--stages needs --until-decided"),
        (["--until-decided", "--mutants"], "cannot be combined"),
        (["--until-decided", "--budget", "many"], "many"),
    ):
        line = refused(
            ["verify", "toy", "--runs", tmp_path / "runs", *args], tmp_path, monkeypatch, capsys
        )
        assert message in line, line
