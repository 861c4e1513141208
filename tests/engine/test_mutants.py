"""The verification engine: family-wise verdicts, level checks against a closed form evaluated from
the grid, censored phase-transition midpoints, and mutants (a study's own plausible bugs) that
``dpsim verify --mutants`` must kill.

The experiment here releases Laplace noise of scale 2/ε on the win counts of a small BTL
comparison graph; its metric ``noise_ms`` is the mean square of the released noise, whose
expectation is exactly Var(Laplace(b)) = 2b² = 8/ε² (a closed form written in the check, not
read from the mechanism).
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from dpsim.cli import main
from dpsim.engine import Experiment, Method
from dpsim.engine.judgement.verdicts import Estimate, family_z, widened
from dpsim.engine.judgement.checks import level_check
from dpsim.engine.judgement.verdicts import judge
from dpsim.engine.judgement.statistics import predictions
from dpsim.engine.judgement.mutants import (
    Mutant,
    chain,
    mutants_of,
    replaced_method,
    scaled_analysis,
    scaled_derived,
)
from dpsim.engine.presentation.summary import Z95
from dpsim.engine.judgement.verify import verify, verify_mutants
from dpsim.models import sample_er_comparisons, win_counts
from laplace_study import study_text


def _generate(key, shape, truth, data):
    theta = jnp.linspace(-1.0, 1.0, shape["n_items"])
    return {"W": sample_er_comparisons(key, theta, data["p"])}


def _laplace_counts(key, ctx):
    """Win counts + Laplace(2/ε): ε-DP for one flipped comparison (ℓ1 sensitivity 2)."""
    counts = win_counts(ctx.sample["W"])
    noise = (2.0 / ctx.analysis["eps"]) * jax.random.laplace(key, counts.shape)
    return {"noise_ms": jnp.mean(noise**2)}


def _raw_counts(key, ctx):
    return {"noise_ms": jnp.asarray(1e-3)}


EXPERIMENT = Experiment(
    name="lvl-noise",
    title="Laplace noise on win counts",
    axes={"n_items": [40], "p": [1.0], "eps": [0.5, 1.0, 2.0]},
    shape_axes=("n_items",),
    analysis_axes=("eps",),
    truth=lambda key, shape: {},
    generate=_generate,
    methods={
        "laplace": Method(_laplace_counts, ("noise_ms",)),
        "raw": Method(_raw_counts, ("noise_ms",)),
    },
    reps=200,
)
# Region: X² of a unit Laplace has mean 2 and sd √20, so the mean of 40 × 200 squares has a
# coefficient of variation √20/2/√8000 = 2.5%: ±5% at 95%; ±15% leaves room for it and is
# still far from the factor 4 of a noise scale off by 2.
LEVEL = level_check(
    "lvl-noise-laplace-variance",
    EXPERIMENT.name,
    "noise_ms",
    "laplace",
    lambda point: 8.0 / point["eps"] ** 2,
    0.85,
    1.15,
    at=("eps",),
    formula="8/ε²",
)
MUTANTS = [
    Mutant(
        "lvl-noise-half-scale",
        "Laplace scale halved (a release at 2ε)",
        (EXPERIMENT.name,),
        scaled_analysis({"eps": 2.0}, methods=["laplace"]),
    ),
    Mutant(
        "lvl-noise-double-scale",
        "Laplace scale doubled (a release at ε/2)",
        (EXPERIMENT.name,),
        scaled_analysis({"eps": 0.5}, methods=["laplace"]),
    ),
    Mutant(
        "lvl-noise-raw-untouched",
        "a change to a method no check judges",
        (EXPERIMENT.name,),
        replaced_method("raw", like="laplace"),
    ),
]


@pytest.fixture(scope="module")
def base_runs(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    lines = []
    results, counts = verify(
        {LEVEL.name: LEVEL},
        {EXPERIMENT.name: EXPERIMENT},
        runs=runs,
        progress=False,
        echo=lines.append,
    )
    return runs, results, counts, lines


def test_family_z_is_the_bonferroni_quantile():
    from statistics import NormalDist

    assert family_z(1) == Z95
    assert family_z(50) == pytest.approx(NormalDist().inv_cdf(1 - 0.05 / 100), rel=1e-12)
    assert family_z(200) > family_z(50) > Z95


def test_widened_interval_keeps_its_scale():
    # a ratio's interval exp(log r ± 1.96 se), widened to z = 3.92, is exp(log r ± 3.92 se)
    r, se = 2.0, 0.1
    low, high = r * math.exp(-Z95 * se), r * math.exp(Z95 * se)
    w_low, w_high = widened(r, low, high, 2 * Z95)
    assert w_low == pytest.approx(r * math.exp(-2 * Z95 * se)) and w_high == pytest.approx(
        r * math.exp(2 * Z95 * se)
    )
    # a slope's symmetric interval widens linearly; an exact count stays a point
    assert widened(-1.0, -1.2, -0.8, 2 * Z95) == pytest.approx((-1.4, -0.6))
    assert widened(3.0, 3.0, 3.0, 5.0) == (3.0, 3.0)


def test_fail_needs_family_wise_evidence():
    """An interval 2.5 se below the region fails a lone check but, in a family of 100, is
    INCONCLUSIVE; 6 se below fails both."""

    def estimate(centre):
        return Estimate(centre, centre - Z95, centre + Z95, 0.0, math.inf, "> 0", "", "", 100)

    assert judge(estimate(-2.5), family=1)[0] == "FAIL"
    assert judge(estimate(-2.5), family=100)[0] == "INCONCLUSIVE"
    assert judge(estimate(-6.0), family=100)[0] == "FAIL"
    assert judge(estimate(2.5), family=100)[0] == "PASS"  # PASS stays at 95%


def test_every_point_counts_its_points():
    """Points count as tests: 3 se outside fails a lone point (z = 1.96) but not one of 40
    points in a family of 10 (z = 3.9 for 400 tests)."""
    point = (-3.0, -3.0 - Z95, -3.0 + Z95)
    lone = Estimate(-3.0, point[1], point[2], 0.0, math.inf, "", "", "", 50, points=(point,))
    many = dataclasses.replace(lone, points=(point,) + ((5.0, 4.0, 6.0),) * 39)
    assert judge(lone, family=1)[0] == "FAIL"
    assert judge(many, family=10)[0] == "INCONCLUSIVE"


def test_predictions_see_only_grid_axes():
    table = pd.DataFrame(
        {"eps": [1.0, 1.0, 2.0], "rep": [0, 1, 0], "method": ["m"] * 3, "sigma": [9.0, 9.0, 9.0]}
    )
    table.attrs["derived_columns"] = ["sigma"]
    seen = []
    values = predictions(table, lambda point: seen.append(dict(point)) or 8.0 / point["eps"] ** 2)
    assert np.allclose(values, [8.0, 8.0, 2.0])
    assert seen == [{"eps": 1.0}, {"eps": 2.0}]  # one call per point, no derived σ


def test_level_check_passes_the_right_noise(base_runs):
    _, results, counts, lines = base_runs
    assert counts["PASS"] == 1, lines
    assert "3/3 inside" in results[0].fitted


def test_mutants_are_killed_or_survive(base_runs):
    runs, results, _, _ = base_runs
    lines = []
    outcomes = verify_mutants(
        {LEVEL.name: LEVEL},
        {EXPERIMENT.name: EXPERIMENT},
        MUTANTS,
        results,
        runs=runs,
        family=1,
        progress=False,
        echo=lines.append,
    )
    by_name = {o.mutant: o for o in outcomes}
    for name in ("lvl-noise-half-scale", "lvl-noise-double-scale"):
        assert by_name[name].killed, lines
        (killer,) = by_name[name].killed_by
        assert killer.name == LEVEL.name and killer.verdict == "FAIL"
    # the half scale gives a variance ratio 1/4, the double scale 4
    assert by_name["lvl-noise-half-scale"].killed_by[0].value == pytest.approx(0.25, rel=0.15)
    assert by_name["lvl-noise-double-scale"].killed_by[0].value == pytest.approx(4.0, rel=0.15)
    assert not by_name["lvl-noise-raw-untouched"].killed
    assert lines[-1].startswith("mutants: 2 killed, 1 survived of 3")
    assert (runs / "mutants" / "lvl-noise-half-scale" / EXPERIMENT.name / "manifest.json").is_file()


def test_transformations():
    doubled = scaled_analysis({"eps": 2.0})(EXPERIMENT)
    assert doubled.name == EXPERIMENT.name and doubled.methods.keys() == EXPERIMENT.methods.keys()
    with pytest.raises(ValueError, match="no method 'nope'"):
        scaled_analysis({"eps": 2.0}, methods=["nope"])(EXPERIMENT)
    with pytest.raises(ValueError, match="no privatise stage"):
        scaled_analysis({"eps": 2.0}, privatise=True)(EXPERIMENT)
    with pytest.raises(ValueError, match="derives no value 'sigma'"):
        scaled_derived({"sigma": 0.5})(EXPERIMENT)
    swapped = chain(replaced_method("raw", like="laplace"))(EXPERIMENT)
    assert swapped.methods["raw"].fn is EXPERIMENT.methods["laplace"].fn
    assert swapped.methods["raw"].metrics == ("noise_ms",)
    assert [m.name for m in mutants_of(MUTANTS, ["other"])] == []
    with pytest.raises(ValueError, match="names no experiment"):
        Mutant("x", "", (), lambda e: e)


def test_overridden_derived_computes_the_host_value_otherwise():
    from toy import toy_experiment
    from dpsim.engine.definition.grid import expand_grid
    from dpsim.engine.judgement.mutants import overridden_derived

    experiment = toy_experiment()
    constant = expand_grid(
        overridden_derived("noise_scale", lambda point, derived: 7.0)(experiment)
    )
    assert {d["noise_scale"] for d in constant.analysis_derived[0][0]} == {7.0}
    with pytest.raises(ValueError, match="derives no value 'rho'"):
        overridden_derived("rho", lambda point, derived: 1.0)(experiment)


def test_scaled_derived_scales_the_host_value():
    from toy import toy_experiment

    experiment = toy_experiment()
    from dpsim.engine.definition.grid import expand_grid

    base = expand_grid(experiment).analysis_derived[0][0]
    half = expand_grid(scaled_derived({"noise_scale": 0.5})(experiment)).analysis_derived[0][0]
    assert [h["noise_scale"] for h in half] == pytest.approx([0.5 * b["noise_scale"] for b in base])


STUDY = study_text(
    "mystudy",
    n_items=40,
    reps=120,
    region=(0.85, 1.15),
    tail="""
MUTANTS = [Mutant("mystudy-release-at-2eps", "Laplace at 2ε", ("mystudy",), scaled_analysis({"eps": 2.0})),
           Mutant("mystudy-factor-1.02", "scale off by 2 %: below what 120 replicates resolve", ("mystudy",),
                  scaled_analysis({"eps": 1.02}))]
""",
)


def test_cli_verify_mutants_of_a_study_file(tmp_path, monkeypatch, capsys):
    study = tmp_path / "study.py"
    study.write_text(STUDY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPSIM_JAX_CACHE", "off")
    assert main(["list", "study.py"]) == 0
    assert "mystudy-release-at-2eps" in capsys.readouterr().out
    # one mutant, killed: exit 0
    assert main(["verify", "study.py", "--mutant", "mystudy-release-at-2eps", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert (
        "KILLED    mystudy-release-at-2eps" in out and "mutants: 1 killed, 0 survived of 1" in out
    )
    # a 2% miscalibration survives 120 replicates: exit 1, and the line says SURVIVED
    assert main(["verify", "study.py", "--mutants", "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "SURVIVED  mystudy-factor-1.02" in out and "1 killed, 1 survived of 2" in out
    assert main(["verify", "study.py", "--mutant", "nope", "--no-progress"]) == 2
    assert "unknown mutant 'nope'" in capsys.readouterr().err
