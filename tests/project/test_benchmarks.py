"""The benchmarks: the harness's pure pieces (benchmarks/harness.py: ratios and verdicts, section
selection, the results-file schema, tables), the baselines' agreement with the engine, the
quick modes of the scale-out and device benchmarks (each on a test-only variant of its quick
configuration), and the binomial prototype's law. No assertion is on a time.

The harness is loaded from its file, so the repository root need not be on sys.path (it
holds a top-level ``experiments`` folder that must not become importable by accident).
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

HARNESS_FILE = Path(__file__).resolve().parents[2] / "benchmarks" / "harness.py"


def _load_harness():
    spec = importlib.util.spec_from_file_location("dpsim_benchmarks_harness", HARNESS_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


harness = _load_harness()

MACHINE = {
    "cpu_model": "Test CPU",
    "cpu_count": 2,
    "cpu_usable": 2,
    "platform": "Linux",
    "jax_backend": "cpu",
    "device_kind": "cpu",
    "device_count": 1,
    "python": "3.11",
    "versions": {"jax": "0"},
    "loadavg": [0.0] * 3,
}


def document(**changes):
    kwargs = dict(
        mode="partial",
        quick=True,
        sections=["A", "B"],
        command="python -m benchmarks.toy --quick",
        config={"reps": 8, "ns": (40, 20)},
        targets={"x": 3.0},
        results={"A": {"ratio": math.inf, "n": np.int64(3)}, "B": {"rows": [(1, 2.5)]}},
        section_seconds={"A": 1.0, "B": 2.0},
        seconds=3.0,
        machine=MACHINE,
        git={"commit": "abc", "dirty": False},
        date="2026-01-01T00:00:00+00:00",
    )
    kwargs.update(changes)
    return harness.results_document("toy", **kwargs)


def test_ratio():
    assert harness.ratio(6.0, 2.0) == 3.0
    assert math.isnan(harness.ratio(1.0, 0.0))
    assert math.isnan(harness.ratio(math.inf, 2.0))
    assert math.isnan(harness.ratio(math.nan, 2.0))


def test_verdict():
    assert harness.verdict(3.0, 3.0) == "MET"
    assert harness.verdict(2.99, 3.0) == "NOT MET"
    assert harness.verdict(math.nan, 3.0) == "NOT MET"
    assert harness.verdict(5.0, None) == ""
    assert harness.verdict(71.3, 120.0, lower_is_better=True) == "MET"
    assert harness.verdict(121.0, 120.0, lower_is_better=True) == "NOT MET"


def test_compare_rows_ratios_and_targets():
    rows = harness.compare(
        {"cold": 10.0, "compiled": 100.0}, {"scipy": 5.0, "choix": 0.5}, targets={"scipy": 3.0}
    )
    got = {(r["engine"], r["baseline"]): (r["ratio"], r["target"], r["verdict"]) for r in rows}
    assert [(r["engine"], r["baseline"]) for r in rows] == [
        ("cold", "scipy"),
        ("cold", "choix"),
        ("compiled", "scipy"),
        ("compiled", "choix"),
    ]
    assert got[("cold", "scipy")] == (2.0, 3.0, "NOT MET")
    assert got[("compiled", "scipy")] == (20.0, 3.0, "MET")
    assert got[("cold", "choix")] == (20.0, None, "")
    text = harness.comparison_table("t", rows)
    assert "compiled ÷ scipy" in text and "20.00×" in text and "≥ 3×" in text and "NOT MET" in text


def test_select_sections():
    available = ["A", "P", "B", "C"]
    assert harness.select_sections(None, available) == available
    assert harness.select_sections(" ", available) == available
    assert harness.select_sections("c, a,A", available) == ["A", "C"]  # declared order, each once
    with pytest.raises(ValueError, match="X"):
        harness.select_sections("A,X", available)


def test_run_mode_and_results_path(tmp_path):
    keys = ["A", "B"]
    assert harness.run_mode(False, keys, keys) == "full"
    assert harness.run_mode(True, keys, keys) == "quick"
    assert harness.run_mode(False, ["A"], keys) == "partial"
    assert harness.run_mode(True, ["B"], keys) == "partial"
    assert harness.results_path("cai", "full", tmp_path) == tmp_path / "cai.json"
    assert harness.results_path("cai", "quick", tmp_path) == tmp_path / "cai_quick.json"
    assert harness.results_path("cai", "partial", tmp_path) == tmp_path / "cai_partial.json"
    with pytest.raises(ValueError):
        harness.results_path("cai", "smoke", tmp_path)


def test_results_document_schema_and_strict_json(tmp_path):
    doc = document()
    assert set(harness.SCHEMA) <= set(doc)
    assert doc["schema"] == harness.SCHEMA_VERSION and doc["paper"] == "toy"
    assert doc["results"]["A"] == {"ratio": "inf", "n": 3}  # strict JSON
    assert doc["config"]["ns"] == [40, 20] and doc["results"]["B"]["rows"] == [[1, 2.5]]
    path = harness.write_results(doc, tmp_path / "toy_partial.json")
    assert json.loads(path.read_text()) == doc


@pytest.mark.parametrize(
    "change, problem",
    [
        (lambda d: d.pop("machine"), "missing 'machine'"),
        (lambda d: d["machine"].pop("cpu_model"), "machine lacks 'cpu_model'"),
        (lambda d: d.update(mode="smoke"), "mode 'smoke'"),
        (lambda d: d.update(seconds="3"), "'seconds' is str"),
        (lambda d: d["results"].pop("B"), "differ from sections"),
        (lambda d: d["results"].update(A={"x": math.nan}), "not strict JSON"),
    ],
)
def test_validate_document_names_the_problem(change, problem):
    doc = json.loads(json.dumps(document()))
    change(doc)
    with pytest.raises(ValueError, match=problem):
        harness.validate_document(doc)


def test_jsonable():
    @dataclass
    class Cfg:
        reps: int
        ps: tuple

    assert harness.jsonable(Cfg(3, (0.5, math.inf))) == {"reps": 3, "ps": [0.5, "inf"]}
    assert harness.jsonable({1: np.float64(-math.inf), "b": np.bool_(True)}) == {
        "1": "-inf",
        "b": True,
    }


def test_format_table_alignment_and_blanks():
    text = harness.format_table(
        "title",
        ("name", "value", "note"),
        [["a", 1.5, None], ["long name", 10.25, "x"]],
        (None, "{:.2f}", None),
    )
    lines = text.splitlines()
    assert lines[1] == "-- title --"
    assert lines[3] == "a           1.50"  # blank cell, trailing space dropped
    assert lines[4] == "long name  10.25     x"
    assert (
        harness.format_table("t", ("a", "b"), [["x", "y"]], align="ll").splitlines()[-1] == "x  y"
    )


@dataclass(frozen=True)
class ToyConfig:
    name: str


FULL, QUICK = ToyConfig("full"), ToyConfig("quick")


def test_main_runs_the_selected_sections_in_order(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(harness, "RESULTS_DIR", tmp_path)
    ran = []

    def section(key):
        def run(bench):
            ran.append((key, bench.cfg.name, sorted(bench.results)))
            return {"value": len(ran)}

        return harness.Section(key, f"section {key}", run)

    sections = [section("A"), section("B"), section("C")]
    doc = harness.main("toy", sections, full=FULL, quick=QUICK, argv=["--sections", "c,a"])
    assert ran == [("A", "full", []), ("C", "full", ["A"])]
    assert doc["mode"] == "partial" and doc["sections"] == ["A", "C"]
    assert doc["command"] == "python -m benchmarks.toy --sections c,a"
    written = json.loads((tmp_path / "toy_partial.json").read_text())
    assert written["results"] == {"A": {"value": 1}, "C": {"value": 2}} and written["config"] == {
        "name": "full"
    }
    ran.clear()
    harness.main("toy", sections, full=FULL, quick=QUICK, argv=["--quick"])
    assert [r[:2] for r in ran] == [("A", "quick"), ("B", "quick"), ("C", "quick")]
    assert (tmp_path / "toy_quick.json").exists()
    with pytest.raises(SystemExit):
        harness.main("toy", sections, full=FULL, quick=QUICK, argv=["--sections", "Z"])
    assert "unknown section(s) Z" in capsys.readouterr().err


def _load_compare():
    spec = importlib.util.spec_from_file_location(
        "dpsim_benchmarks_compare", HARNESS_FILE.parent / "compare.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_compare_frame_difference_tells_rounding_from_change():
    import pandas as pd

    compare = _load_compare()
    a = pd.DataFrame(
        {"rep": [0, 1], "method": ["mle", "mle"], "l2": [1.0, np.nan], "hit": [True, False]}
    )
    assert compare.frame_difference(a, a.copy()) == "identical"
    b = a.copy()
    b.loc[0, "l2"] = 1.0 + 4e-13
    assert compare.frame_difference(a, b).startswith("float columns within 4.0e-13")
    c = a.copy()
    c.loc[1, "hit"] = True
    assert (
        compare.frame_difference(a, c)
        == "different values: hit in 1 of 2 rows (by at most 1); float columns within 0.0e+00 relative"
    )
    c.loc[0, "l2"] = 1.0 + 4e-13
    c["iterations"] = [7, 9]
    a2 = a.assign(iterations=[7, 7])
    assert compare.frame_difference(a2, c) == (
        "different values: hit in 1 of 2 rows (by at most 1); iterations in 1 of 2 "
        "rows (by at most 2); float columns within 4.0e-13 relative"
    )
    d = a.copy()
    d.loc[1, "l2"] = 0.5
    assert compare.frame_difference(a, d) == "different NaNs in l2"
    assert compare.frame_difference(a, a.drop(columns="hit")).startswith("different layout")


def test_compare_exports_a_commit_and_refuses_an_unknown_one(tmp_path):
    compare = _load_compare()
    tree = compare.export("HEAD", tmp_path / "head")
    assert (tree / "dpsim" / "engine" / "execution" / "runner.py").is_file() and (
        tree / "experiments" / "cai"
    ).is_dir()
    with pytest.raises(SystemExit, match="'no-such-commit' is not a commit here"):
        compare.export("no-such-commit", tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


# ----------------------------------------------------------------------------- scale-out benchmark


@pytest.fixture()
def scale_out(monkeypatch):
    """benchmarks/scale_out.py, imported with the repository root on sys.path for this test
    only (it imports ``benchmarks.harness`` and ``benchmarks.compare`` by name), its results
    file written into a temporary folder."""
    import importlib

    monkeypatch.syspath_prepend(str(HARNESS_FILE.parents[1]))
    return importlib.import_module("benchmarks.scale_out")


def test_scale_out_extrapolation_arithmetic(scale_out):
    est = scale_out.extrapolate(
        lanes_per_s=100.0,
        cores=2,
        lanes=4e6,
        lanes_per_chunk=400.0,
        compile_s=5.0,
        overhead_per_task_s=0.002,
        write_s_per_chunk=0.003,
        cluster_cores=64,
    )
    assert est["chunks"] == 1e4 and est["one_machine_s"] == 5.0 + 4e4
    assert est["cluster_compute_s"] == pytest.approx(4e4 / 32)  # linear in cores: 32 × this machine
    assert est["cluster_driver_s"] == pytest.approx(
        1e4 * 0.005
    )  # serial: every chunk received and written
    assert est["cluster_s"] == pytest.approx(5.0 + 1250.0) and est[
        "cluster_upper_s"
    ] == pytest.approx(5.0 + 1300.0)
    slower = scale_out.extrapolate(
        lanes_per_s=100.0,
        cores=2,
        lanes=4e6,
        lanes_per_chunk=400.0,
        compile_s=5.0,
        overhead_per_task_s=-1.0,
        write_s_per_chunk=0.5,
    )
    assert slower["cluster_driver_s"] == pytest.approx(5e3) and slower[
        "cluster_s"
    ] == pytest.approx(5.0 + 5e3)


def test_scale_out_float_difference(scale_out):
    x = np.array([1.0, np.nan, np.inf, 2.0])
    assert scale_out.float_difference(x, x.copy()) == 0.0
    assert scale_out.float_difference(x, np.array([1.0, np.nan, np.inf, 2.5])) == 0.5
    assert scale_out.float_difference(x, np.array([1.0, 3.0, np.inf, 2.0])) == math.inf


def test_scale_out_quick_sections_give_the_local_table(scale_out, tmp_path, monkeypatch):
    """The quick benchmark's local, two-parts and sharded runs (fresh ``dpsim run`` processes),
    on a test-only configuration whose study is tests/laplace_study.py's small Laplace study
    (the quick one's cai-fig3 spends its processes on cai's imports, compile and figure, which
    tell nothing about the benchmark): every table equals the local one to the last bit, and
    the numbers the README's extrapolation needs are recorded; section E on the quick
    configuration (cai-fig3, the default grid) is valid for Fig. 3. Section R (Ray) is left
    out here: starting a local Ray instance is costly, and tests/engine/test_ray_executor.py
    already checks that Ray's table equals a local run's."""
    from dataclasses import replace

    from laplace_study import study_text

    study = tmp_path / "study.py"
    study.write_text(study_text("scale-toy", n_items=8, reps=5, region=(0.5, 2.0)))
    quick = scale_out.QUICK
    cfg = replace(quick, study=str(study))
    monkeypatch.setattr(scale_out, "QUICK", cfg)
    monkeypatch.setattr(scale_out.harness, "RESULTS_DIR", tmp_path)
    doc = scale_out.main(["--quick", "--sections", "L,P,S,E"])
    results = doc["results"]
    assert doc["mode"] == "partial" and (tmp_path / "scale_out_partial.json").exists()
    assert doc["config"]["study"] == str(study)
    local = results["L"]["run"]
    assert local["lanes_run"] == cfg.reps and local["chunks_written"] >= 1  # one shape point
    assert 0 <= local["write_seconds"] <= local["seconds"]
    for key in ("P", "S"):
        assert (
            results[key]["table"]["identical"] is True
            and results[key]["table"]["max_abs_diff"] == 0.0
            and results[key]["table"]["rows"] == 2 * cfg.reps  # ε = 1, 2
        )
    assert results["P"]["complete"] is True
    assert sorted(p["part"] for p in results["P"]["parts"]) == ["1/2", "2/2"]
    assert sum(p["lanes_run"] for p in results["P"]["parts"]) == local["lanes_run"]
    assert results["S"]["run"]["devices"] == 2 and local["devices"] == 1
    assert results["E"]["valid_for_fig3"] is False and results["E"]["lanes"] == (
        scale_out.FIG3_REPLICATES
    )
    assert quick.study == "cai-fig3" and not quick.sets
    section_l = {k: float(v) if v in ("nan", "inf") else v for k, v in results["L"].items()}
    bench = scale_out.harness.Bench("scale_out", quick, True, {"L": section_l})
    assert scale_out.section_e(bench)["valid_for_fig3"] is True


# ----------------------------------------------------------------------------- vectorised baselines, device benchmark


@pytest.fixture()
def bench_module(monkeypatch):
    """Import ``benchmarks.<name>`` with the repository root on sys.path for this test only."""
    import importlib

    monkeypatch.syspath_prepend(str(HARNESS_FILE.parents[1]))
    return lambda name: importlib.import_module(f"benchmarks.{name}")


def _quadratics(k=4, d=3, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(k, d, d))
    H = A @ np.swapaxes(A, 1, 2) + d * np.eye(d)
    b = rng.normal(size=(k, d)) * 5
    return H, b, lambda x, rows: (np.einsum("kij,kj->ki", H[rows], x) - b[rows], H[rows])


@pytest.mark.parametrize("solver", ["direct", "cg"])
def test_batched_newton_solves_each_problem(bench_module, solver):
    vectorised = bench_module("vectorised")
    H, b, derivs = _quadratics()
    x, iters, grad_inf = vectorised.batched_newton(derivs, np.zeros_like(b), 1e-10, solver=solver)
    np.testing.assert_allclose(x, np.linalg.solve(H, b[..., None])[..., 0], atol=1e-9)
    assert (grad_inf <= 1e-10).all() and (iters >= 1).all()


def test_batched_sphere_newton_minimises_on_the_sphere(bench_module):
    vectorised = bench_module("vectorised")
    # f(x) = ½‖x − c‖²: on the sphere of radius 1 the minimiser is c/‖c‖ when ‖c‖ > 1
    c = np.array([[3.0, 0.0, 4.0], [0.0, -2.0, 0.0]])
    x, ok = vectorised.batched_sphere_newton(
        lambda x, rows: (x - c[rows], np.broadcast_to(np.eye(3), (len(rows), 3, 3))),
        c + 0.3,
        1.0,
        1e-12,
    )
    assert ok.all()
    np.testing.assert_allclose(x, c / np.linalg.norm(c, axis=1, keepdims=True), atol=1e-10)


def test_xu_vectorised_fit_equals_the_engine_on_the_same_zbar(bench_module):
    xu = bench_module("xu")
    rng = np.random.default_rng(3)
    m, L = 10, 100
    theta = 0.1 * rng.permutation(np.arange(1, m + 1) - (m + 1) / 2.0)
    zbar = np.stack([xu.release(rng, theta, L, xu.EPS) for _ in range(3)])
    lam = (1.0 / math.tanh(xu.EPS / 2.0)) ** 2 / L
    est, _, grad_inf = xu.vectorised_fit(zbar, lam, m)
    engine = np.stack([np.asarray(xu.debiased_m_estimator(z, lam).theta) for z in zbar])
    assert np.abs(est - engine).max() < 1e-8 and (grad_inf <= 1e-10 * m).all()
    scores = xu.vectorised_scores(est, np.tile(theta, (3, 1)), m // 2)
    assert scores["kendall"][0] == pytest.approx(xu.kendall_half(est[0], theta))
    assert scores["top_k_hamming"][0] == pytest.approx(xu.expected_hamming(est[0], theta, m // 2))
    dense = np.stack(
        [np.asarray(xu.dense_newton_fit(z, lam)) for z in zbar]
    )  # section P's design tried
    assert np.abs(dense - engine).max() < 1e-8


def test_device_quick_writes_one_file_naming_the_device(bench_module, tmp_path, monkeypatch):
    """``python -m benchmarks.device --quick``: every paper's
    engine, cai Fig. 3 in a fresh process, the Fig. 3 multiple (two chunks in flight and one)
    and the micro-batch sweep, in one results file whose
    machine names the device; the accelerator targets are "n.a." on CPU. The quick configuration
    but for its nguyen workload, which is the nguyen profile's whole run
    (test_nguyen_profile_runs_each_method_alone: the same grid and replicates), so that the
    two tests compile that program once (the session's compilation cache)."""
    from dataclasses import replace

    device = bench_module("device")
    nguyen = bench_module("nguyen")
    m, n = nguyen.QUICK.profile_shape
    engines = tuple(
        replace(
            w,
            reps=nguyen.QUICK.fig1_reps,
            overrides=(("n_items", [m]), ("n_users", [n]), ("mode", ["paper"])),
        )
        if w.paper == "nguyen"
        else w
        for w in device.QUICK.engines
    )
    monkeypatch.setattr(device, "QUICK", replace(device.QUICK, engines=engines))
    monkeypatch.setattr(device.harness, "RESULTS_DIR", tmp_path)
    doc = device.main(["--quick"])
    backend = doc["machine"]["jax_backend"]
    assert doc["mode"] == "quick" and doc["sections"] == ["E", "C", "X", "M"]
    assert json.loads((tmp_path / f"device_{backend}_quick.json").read_text()) == doc
    assert doc["machine"]["device_kind"] and doc["targets"] == device.TARGETS
    rows = doc["results"]["E"]["rows"]
    assert [r["paper"] for r in rows] == ["cai", "xu", "nguyen", "chowdhury"]
    assert all(r["fits"] > 0 and r["fits_per_s_excl_compile"] > 0 for r in rows)
    figs = doc["results"]["C"]["runs"]
    assert (
        [f["figure"] for f in figs] == ["cai-fig3"]
        and figs[0]["fits"] > 0
        and figs[0]["compiles"] >= 1
    )
    x = doc["results"]["X"]
    assert x["fits_per_s_warm"] > 0 and x["fits_per_s_warm_one_in_flight"] > 0
    assert (
        x["in_flight"] == x["engine"]["warm"]["in_flight"] >= 1
        and x["one_in_flight"]["in_flight"] == 1
    )
    assert (
        x["one_in_flight"]["fits"] == x["engine"]["warm"]["fits"] > 0
    )  # the same workload, side by side
    assert x["engine"]["warm"]["batching"][0]["micro"] >= 1
    for run in (
        x["engine"]["cold"],
        x["engine"]["warm"],
        x["one_in_flight"],
    ):  # host time split: lead, tail
        assert (
            0 < run["busy_s"] <= run["compute_s"] + 1e-9
            and run["lead_s"] >= 0
            and run["tail_s"] >= 0
        )
        assert run["lead_s"] + run["tail_s"] <= run["host_s"] + 0.05
    sweep = doc["results"]["M"]["rows"]
    assert [r["micro_batch"] for r in sweep] == [1, 2] and all(
        r["fits_per_s_warm"] > 0 for r in sweep
    )
    assert doc["results"]["M"]["fastest_micro_batch"] in (1, 2)
    if backend == "cpu":
        assert doc["results"]["C"]["verdict"] == doc["results"]["X"]["verdict"] == "n.a."


def test_nguyen_profile_runs_each_method_alone(bench_module, tmp_path, monkeypatch):
    """``python -m benchmarks.nguyen --quick --sections P``: the Fig. 1 engine run with all
    methods, then with each alone, whose fits add up to the whole run's; the sparse chain's
    power iteration (the authors' lazy chain, on a sparse graph) iterates more than the
    dense one's (at m = 25: about 400 steps against 28 in the full benchmark)."""
    nguyen = bench_module("nguyen")
    monkeypatch.setattr(nguyen.harness, "RESULTS_DIR", tmp_path)
    doc = nguyen.main(["--quick", "--sections", "P"])
    rows = doc["results"]["P"]["rows"]
    fig1 = nguyen.installed().experiments["nguyen-fig1"]
    assert [r["method"] for r in rows] == ["all", *fig1.methods]
    assert rows[0]["fits"] == nguyen.QUICK.fig1_reps * len(nguyen.EPS) * len(fig1.methods)
    assert sum(r["fits"] for r in rows[1:]) == rows[0]["fits"]
    assert all(r["compute_s"] > 0 for r in rows)
    by = {r["method"]: r for r in rows}
    assert by["gaussian_sparse"]["iterations_mean"] > 3 * by["gaussian"]["iterations_mean"]


def test_covered_seconds_is_the_union_of_the_calls(bench_module):
    """The busy time of chunk calls that overlap (two in flight): their union, not their sum."""
    harness = bench_module("harness")
    assert harness.covered_seconds([]) == 0.0
    assert harness.covered_seconds([(1.0, 3.0), (0.0, 2.0), (5.0, 6.0)]) == 4.0
    assert harness.covered_seconds([(0.0, 10.0), (2.0, 3.0), (9.0, 11.0)]) == 11.0


def test_xu_binomial_bound_counts_a_replicates_draws(bench_module):
    """Section P's bound: m(m−1)/2 raw-win and m(m−1) RR draws per replicate, priced at the
    measured ns per draw; the vectorised whole ÷ the engine's binomial stages is the most the
    engine can be ahead; the target's budget is the vectorised whole ÷ 5."""
    xu = bench_module("xu")
    costs = xu.sampler_costs(m=6, L=50, reps=4)
    assert costs["draws"] == 4 * 15 and set(costs["ns_per_draw"]) == {
        "jax.random.binomial",
        "NumPy Generator.binomial",
        "2 threefry uniforms (one BTRS try)",
    }
    assert all(ns > 0 for ns in costs["ns_per_draw"].values())
    costs = {"ns_per_draw": {"jax.random.binomial": 200.0, "NumPy Generator.binomial": 50.0}}
    row = {
        "m": 10,
        "ms_per_replicate": {"raw wins": 0.02, "RR release": 0.04, "fit": 0.01, "metrics": 0.01},
    }
    numpy_row = {
        "m": 10,
        "ms_per_replicate": {"raw wins": 0.005, "RR release": 0.01, "fit": 0.008, "metrics": 0.001},
    }
    bound = xu.binomial_bound(row, numpy_row, costs)
    assert bound["binomials_per_replicate"] == 135
    assert bound["jax_sampler_ms"] == pytest.approx(135 * 200e-6)
    assert bound["numpy_sampler_ms"] == pytest.approx(135 * 50e-6)
    assert bound["max_ratio_with_jax_sampler"] == pytest.approx(0.024 / 0.06)
    assert bound["budget_ms_for_target"] == pytest.approx(0.024 / 5)


def test_cai_profile_stages_reproduce_the_mle_method(bench_module):
    """Section Q's split of Algorithm 1 (mechanism, fit, metrics as separate jitted stages)
    gives ``edge.mle_fn``'s outputs on the same keys and data: the stages time the pipeline's
    own computation (a mechanism drawn with another key or scale would change every error)."""
    import jax
    import jax.numpy as jnp

    cai = bench_module("cai")
    stages = {name: fn for name, (fn, _) in cai.engine_stages(20).items()}
    keys = jax.random.split(jax.random.key(0), 2)
    data, analysis = {"p": jnp.float64(0.8)}, {"eps": jnp.float64(2.0), "c0": jnp.float64(2.0)}
    truth, sample = stages["data"](jax.random.key(1), keys, data)
    gamma, w = stages["mechanism"](keys, data, analysis)
    assert np.all(np.abs(np.asarray(w)) > 0) and np.allclose(
        gamma, cai.calibration(2.0, 20, 0.8)[1]
    )
    split = stages["metrics"](keys, truth, sample, stages["fit"](sample, gamma, w), data, analysis)
    whole = stages["mle method"](keys, truth, sample, data, analysis)
    assert set(split) == set(whole) and {"l2", "exact_recovery", "iterations"} <= set(whole)
    for column, value in whole.items():
        np.testing.assert_allclose(
            np.asarray(split[column], float),
            np.asarray(value, float),
            rtol=1e-9,
            atol=1e-12,
            err_msg=column,
        )


def test_cai_compile_breakdown_compiles_each_piece_of_the_lane(bench_module):
    """Section K compiles the Fig. 3 chunk program piece by piece (data alone, counting, the
    MLE, both); every piece lowers and compiles, the real program the largest."""
    rows = bench_module("cai").compile_breakdown(20)
    assert [r["program"] for r in rows] == [
        "data generation only",
        "counts (Alg. 2 + top-k)",
        "MLE (Alg. 1 + top-k)",
        "both (the real program)",
    ]
    assert all(r["compile_s"] > 0 and r["stablehlo_kb"] > 0 for r in rows)
    assert rows[-1]["stablehlo_kb"] == max(r["stablehlo_kb"] for r in rows)


def test_compacted_btrs_prototype_is_exact_and_the_test_has_power(bench_module):
    """benchmarks.binomial's compacted BTRS (the prototype its section T times) draws the
    binomial law: χ² against SciPy's pmf at 40 000 draws per case, in BTRS's low-n·q corner,
    inside it and in the inversion regime, p > 10⁻³ and the variance within 4 standard errors;
    at its own buffer sizes and at buffers so small (20 % of the elements, then 20 % of those)
    that most candidates overflow them, so the paths for elements that do not fit run too.
    Re-drawing an overflowing candidate instead of judging it (the first version's bug) gives
    χ² p ≤ 10⁻¹⁷ in three of the four cases at these sizes (measured with a patched copy; the
    non-centrality grows with the draws, p ≤ 10⁻²⁹² at 400 000). The same test rejects a 2 %
    error in p (the sampler at 1.02 p judged against p: χ² non-centrality about 0.04 per
    draw, so p < 10⁻²⁰⁰ at this size), drawn through the default buffers' program."""
    import jax
    import jax.numpy as jnp

    binomial = bench_module("binomial")
    draws = 40_000
    cases = ((25, 0.41), (40, 0.26), (400, 0.2), (11, 0.95))
    samplers = {
        "default buffers": binomial.compacted_binomial,
        "overflowing buffers": lambda k, n, p: binomial.compacted_binomial(
            k, n, p, 0.2, (0.2, 0.2)
        ),
    }
    for name, sampler in samplers.items():
        for row in binomial.goodness_of_fit(sampler, draws, cases, seed=11):
            assert row["chi2_p"] > 1e-3 and abs(row["var_z"]) < 4, (name, row)
    n, p = 400, 0.2
    biased = jax.jit(binomial.compacted_binomial)(
        jax.random.key(11), jnp.full(draws, float(n)), jnp.full(draws, 1.02 * p)
    )
    assert binomial.chi_square_pvalue(np.asarray(biased), n, p) < 1e-6


def test_cold_benchmark_times_a_user_process(bench_module, tmp_path, monkeypatch):
    """benchmarks/cold.py: a fresh user's environment keeps no cache variable and has the empty
    home; a process's phases come from its lines' arrival times (a script that prints dpsim
    run's lines with pauses between them); the run line is read as `dpsim run` prints it."""
    cold = bench_module("cold")
    for name in cold.CLEARED:
        monkeypatch.setenv(name, "/somewhere")
    env = cold.user_env(str(tmp_path))
    assert env["HOME"] == str(tmp_path) and not set(cold.CLEARED) & set(env)
    line = "cai-fig3: 480 replicate lanes, 6720 rows in 12.5 s -> runs/cai-fig3"
    assert float(cold.RUN_LINE.search(line).group(1)) == 12.5
    script = (
        "import time, sys; print('start', flush=True); time.sleep(0.3); "
        f"print({line!r}, flush=True); time.sleep(0.3); print('figure: x.png', flush=True)"
    )
    done = cold.timed_process([sys.executable, "-c", script], env)
    (t0, first), (t1, run), (t2, fig) = done["lines"]
    assert (first, run, fig) == ("start", line, "figure: x.png")
    assert t1 - t0 >= 0.29 and t2 - t1 >= 0.29 and done["wall_s"] >= t2 and done["cpu_s"] >= 0
    with pytest.raises(RuntimeError, match="exit 3"):
        cold.timed_process([sys.executable, "-c", "raise SystemExit(3)"], env)
    # more stderr than a pipe holds, before any stdout: read beside stdout, it cannot block
    noisy = "import sys; sys.stderr.write('x' * 300_000 + 'end'); print('out'); raise SystemExit(3)"
    done = cold.timed_process([sys.executable, "-c", noisy], env, check=False)
    assert done["exit_status"] == 3 and done["stderr_tail"].endswith("xend")
    assert [text for _, text in done["lines"]] == ["out"]


def test_verify_benchmark_times_a_run_and_merges_entries(bench_module, tmp_path, monkeypatch):
    """benchmarks/verify.py: one run's record (a stand-in for ``dpsim`` that writes a
    verdicts.json into its --runs folder and exits 3, as verify does with an INCONCLUSIVE)
    holds its exit status, the verdict counts, the command as a user types it, its own commit
    and machine; merging a new entry replaces the same (paper, seed) and keeps the others."""
    bench = bench_module("verify")
    fake = tmp_path / "fake_dpsim.py"
    fake.write_text(
        "import json, sys, pathlib\n"
        "runs = pathlib.Path(sys.argv[sys.argv.index('--runs') + 1]); runs.mkdir(parents=True)\n"
        "checks = [{'verdict': v} for v in ('PASS', 'PASS', 'INCONCLUSIVE')]\n"
        "(runs / 'verdicts.json').write_text(json.dumps({'checks': checks}))\n"
        "raise SystemExit(3)\n"
    )
    monkeypatch.setattr(bench, "dpsim_command", lambda: [sys.executable, str(fake)])
    entry = bench.timed_verify("xu", 1, tmp_path / "runs", str(tmp_path))
    assert entry["exit_status"] == 3 and entry["verdicts"] == {"INCONCLUSIVE": 1, "PASS": 2}
    assert entry["command"] == f"dpsim verify xu --seed 1 --runs {tmp_path / 'runs'} --no-progress"
    assert entry["wall_s"] > 0 and entry["cpu_s"] >= 0 and "commit" in entry["git"]
    assert {"cpu_model", "loadavg"} <= set(entry["machine"])
    assert bench.verdict_counts(tmp_path / "nowhere") == {}

    path = tmp_path / "verify.json"
    first = {"xu/seed1": entry, "cai/seed0": dict(entry, wall_s=100.0)}
    harness.write_results(bench.merged_document(path, first, "first"), path)
    second = bench.merged_document(path, {"xu/seed1": dict(entry, wall_s=7.0)}, "second")
    assert second["sections"] == ["cai/seed0", "xu/seed1"]
    assert second["results"]["xu/seed1"]["wall_s"] == 7.0
    assert second["results"]["cai/seed0"]["wall_s"] == 100.0
    assert second["seconds"] == 7.0 and second["mode"] == "full"
    for flag, value in (("--papers", "cia"), ("--seeds", "x"), ("--seeds", "-1")):
        with pytest.raises(SystemExit) as stop:
            bench.main([flag, value])
        assert stop.value.code == 2
    assert bench.parse_seeds("0, 3") == [0, 3] and bench.parse_papers("xu,cai") == ["xu", "cai"]
