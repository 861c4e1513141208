"""Pins: each paper declares the components it simulates and scores (``COMPONENTS``: generators,
mechanisms, estimators, metrics), each check the components it pins (``pins``) and each mutant
those it breaks (``breaks``); ``dpsim list PAPER --pins`` and ``dpsim.pins`` show the table.

Conformance: every component of every installed paper is pinned by at least one check, except
the gaps listed in :data:`KNOWN_GAPS` (one place, each with its reason); every name a check pins
or a mutant breaks is a declared component (the registry refuses the others when a paper
loads, shown here on a study file).
"""

from __future__ import annotations

import textwrap

import pytest

import dpsim
from dpsim.errors import UsageError
from dpsim.engine import registry
from dpsim.engine.presentation.describe import pin_lines, pin_rows

# Components no check pins yet, each with why. An entry that is no longer a gap fails
# test_known_gaps_are_gaps, so that it is removed here.
KNOWN_GAPS: dict[str, dict[str, str]] = {}


def _papers():
    return registry.paper_names()


def _paper_items(paper):
    found = registry.paper(paper)
    return found, list(found.checks.values()), list(found.mutants.values())


@pytest.mark.parametrize("paper", ["cai", "chowdhury", "nguyen", "xu"])
def test_every_component_is_pinned(paper):
    """Every declared component of the paper has a check that pins it, or is a known gap; the
    paper declares components of the kinds it simulates."""
    assert paper in _papers()
    table = dpsim.pins(paper)
    assert len(table) > 0, f"{paper} declares no COMPONENTS"
    gaps = set(table.loc[table["gap"], "component"])
    assert gaps == set(KNOWN_GAPS.get(paper, {})), (
        f"{paper}: components no check pins: {sorted(gaps - set(KNOWN_GAPS.get(paper, {})))}; "
        f"tag the checks that pin them (pins=...) or list them in KNOWN_GAPS with the reason"
    )
    assert {"generator", "mechanism", "metric"} <= set(table["kind"])


def test_known_gaps_are_gaps():
    """A gap closed by new checks is taken off KNOWN_GAPS (the list says only what is true)."""
    for paper, gaps in KNOWN_GAPS.items():
        table = dpsim.pins(paper).set_index("component")
        for component in gaps:
            assert component in table.index, (
                f"{paper}: KNOWN_GAPS names {component!r}, which it does not declare"
            )
            assert table.loc[component, "gap"], (
                f"{paper}: {component} is pinned now; remove it from KNOWN_GAPS"
            )


@pytest.mark.parametrize("paper", ["cai", "chowdhury", "nguyen", "xu"])
def test_pins_and_breaks_name_declared_components(paper):
    """Every name in a check's ``pins`` and a mutant's ``breaks`` is one of its paper's
    ``COMPONENTS``, each named KIND:NAME with a known kind; every component a mutant breaks
    is pinned by some check (else nothing could kill that mutant by design)."""
    found, checks, mutants = _paper_items(paper)
    components = found.components[paper]
    for name in components:
        kind, _, rest = name.partition(":")
        assert kind in registry.COMPONENT_KINDS and rest, name
    pinned = {c for check in checks for c in registry.named_components(check.pins)}
    broken = {c for mutant in mutants for c in registry.named_components(mutant.breaks)}
    assert pinned <= set(components) and broken <= set(components)
    assert broken <= pinned, (
        f"{paper}: mutants break {sorted(broken - pinned)}, which no check pins"
    )
    assert all(isinstance(check.pins, tuple) for check in checks)


def test_pin_rows_of_a_small_paper():
    """The table from declared objects: checks and mutants per component, in declaration
    order; a component no check pins is a gap; the printed lines flag it GAP."""

    class Item:
        def __init__(self, name, **fields):
            self.name = name
            self.__dict__.update(fields)

    components = {"generator:g": "the design", "mechanism:m": "the noise", "metric:e": "the error"}
    checks = [
        Item("p-level", pins=("mechanism:m",)),
        Item("p-design", pins="generator:g"),
        Item("p-slope", pins=()),
        Item("p-both", pins=("generator:g", "mechanism:m")),
    ]
    mutants = [Item("p-noise-x2", breaks=("mechanism:m",)), Item("p-other", breaks=())]
    rows = pin_rows("p", components, checks, mutants)
    assert [r["component"] for r in rows] == list(components)
    by = {r["component"]: r for r in rows}
    assert (
        by["generator:g"]["checks"] == ("p-design", "p-both")
        and by["generator:g"]["kind"] == "generator"
    )
    assert by["mechanism:m"]["checks"] == ("p-level", "p-both") and by["mechanism:m"][
        "mutants"
    ] == ("p-noise-x2",)
    assert by["metric:e"]["gap"] and by["metric:e"]["checks"] == () and not by["mechanism:m"]["gap"]
    lines = pin_lines(rows)
    assert lines[-1] == "3 components, 1 without a check (GAP)"
    assert [line for line in lines if line.startswith("GAP ")] == [
        f"GAP {'metric:e':<44} the error"
    ]


STUDY = textwrap.dedent("""
    from dpsim.engine import Experiment, Method, level_check

    def generate(key, shape, truth, data):
        return {}

    def fn(key, ctx):
        return {"x": 1.0}

    pinned = Experiment(name="pinned-study", title="a study with pins", axes={"n_items": [4]},
                        shape_axes=("n_items",), analysis_axes=(), truth=lambda key, shape: {}, generate=generate,
                        methods={"m": Method(fn, ("x",))}, reps=2)
    COMPONENTS = {"metric:x": "the metric x"}
    CHECKS = [level_check("pinned-study-x", "pinned-study", "x", "m", lambda p: 1.0, 0.9, 1.1,
                          pins=PINS)]
""")


def _study(tmp_path, pins: str):
    path = tmp_path / "study.py"
    path.write_text(STUDY.replace("PINS", pins))
    return path


def test_a_study_file_declares_its_components(tmp_path):
    """A study file's COMPONENTS and pins give its own table."""
    path = _study(tmp_path, '("metric:x",)')
    table = dpsim.pins(str(path))
    assert list(table["component"]) == ["metric:x"] and table["checks"].iloc[0] == (
        "pinned-study-x",
    )
    assert not table["gap"].iloc[0] and table["paper"].iloc[0] == str(path)


@pytest.mark.parametrize(
    "pins, message",
    [
        ('("metric:y",)', "pins 'metric:y', which"),
        ('("metrc:x",)', "did you mean 'metric:x'"),
    ],
)
def test_an_undeclared_pin_is_refused_when_the_study_loads(tmp_path, pins, message):
    path = _study(tmp_path, pins)
    with pytest.raises(UsageError, match=message):
        dpsim.pins(str(path))


def test_a_component_of_an_unknown_kind_is_refused():
    with pytest.raises(UsageError, match="is not KIND:NAME"):
        registry.validate_components({"design": "no kind"}, [], [], "p")
    with pytest.raises(UsageError, match="is not KIND:NAME"):
        registry.validate_components({"model:theta": "an unknown kind"}, [], [], "p")
