"""``dpsim verify``'s verdict files and ``dpsim report``'s page, read without a browser: the
records against the verify's own results, the kill matrix, and the page parsed with
``html.parser`` (no URL leaves it, every figure has alt text, every table a header row, text
escaped, each estimate drawn on the right side of its region). tests/engine/test_report_browser.py
renders the same page in Chromium."""

from __future__ import annotations

import csv
import math
import re
import shutil
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from dpsim.cli import main
from dpsim.errors import UsageError
from dpsim.engine.storage import store
from dpsim.engine.presentation.report import CSP, estimate_bar, write_report
from dpsim.engine.presentation.report_data import nan_counts, plain_text
from dpsim.engine.presentation.verdict_files import kill_records, verdict_records, write_verdicts
from dpsim.engine.judgement.verdicts import CheckResult, family_z
from report_folders import build


class Page(HTMLParser):
    """Every start tag (name, attributes) of a page, the text inside each <table>'s <th>, and
    the attributes of the figures (an <img> or the <svg> that is a <figure>'s first child)."""

    def __init__(self, text: str):
        super().__init__()
        self.tags, self.figures, self.tables, self._stack = [], [], [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "table":
            self.tables.append({"th": 0, "rows": 0, "class": attrs.get("class", "")})
        elif tag == "th" and self.tables:
            self.tables[-1]["th"] += 1
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"] += 1
        if self._stack and self._stack[-1] == "figure" and tag in ("svg", "img"):
            self.figures.append((tag, attrs))
        if tag not in ("img", "meta", "br", "path", "use", "rect", "line", "circle", "stop"):
            self._stack.append(tag)

    def handle_endtag(self, tag):
        while self._stack:
            if self._stack.pop() == tag:
                break


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DPSIM_JAX_CACHE", "off")
        verify, run = build(root)
    return root, verify, run


def test_verdict_files_hold_the_verify_records(folders):
    _, verify, _ = folders
    content = store.read_json(verify / "verdicts.json")
    (record,) = content["checks"]
    assert record["check"] == "pagestudy-variance" and record["experiment"] == "pagestudy"
    assert record["verdict"] == "PASS" and record["reps"] == 60 and record["points"] == 2
    assert (record["region_low"], record["region_high"]) == (0.8, 1.2)
    assert record["low"] <= record["estimate"] <= record["high"]
    assert 0.8 <= record["low"] and record["high"] <= 1.2  # a PASS: its interval in the region
    assert content["family"]["size"] == record["family_size"] == 1
    assert record["z_fail"] == pytest.approx(family_z(2))  # 0.05/(m·K), K = 2 points
    with open(verify / "verdicts.csv", newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert row["check"] == record["check"] and float(row["estimate"]) == record["estimate"]
    assert float(row["region_low"]) == 0.8 and row["verdict"] == "PASS"
    # the kill matrix: the release at 2ε is killed by the variance check, the 1% factor is not
    kills = {(r["mutant"], r["check"]): r for r in content["kill_matrix"]}
    assert kills[("pagestudy-release-at-2eps", "pagestudy-variance")]["killed"] is True
    assert kills[("pagestudy-factor-1.01", "pagestudy-variance")]["state"] == "not killed"
    assert {m["mutant"]: m["killed"] for m in content["mutants"]} == {
        "pagestudy-release-at-2eps": True,
        "pagestudy-factor-1.01": False,
    }
    with open(verify / "kill-matrix.csv", newline="") as handle:
        assert [(r["mutant"], r["killed"]) for r in csv.DictReader(handle)] == [
            ("pagestudy-release-at-2eps", "True"),
            ("pagestudy-factor-1.01", "False"),
        ]


class _Check:
    def __init__(self, name, experiment, description=""):
        self.name, self.experiment, self.description = name, experiment, description


def test_verdict_records_of_results():
    results = [
        CheckResult(
            "a",
            "FAIL",
            "≤ 0",
            "+0.5",
            "slope",
            value=0.5,
            low=0.4,
            high=0.6,
            region_low=-math.inf,
            region_high=0.0,
            reps=100,
            points=3,
        ),
        CheckResult("b", "INFO", "-", "-", "report only"),
        CheckResult("c", "ERROR", "-", "-", "cannot be evaluated: no rows"),
    ]
    records = verdict_records(results, {"a": _Check("a", "exp", "a decreases")})
    assert [r["verdict"] for r in records] == ["FAIL", "INFO", "ERROR"]
    assert records[0]["family_size"] == 2  # the INFO check is not in the family
    assert records[0]["z_fail"] == pytest.approx(family_z(6))  # m = 2 checks, K = 3 points
    assert records[0]["claim"] == "a decreases" and records[0]["experiment"] == "exp"
    assert records[1]["experiment"] is None and math.isnan(records[2]["estimate"])
    assert verdict_records(results, family=7)[0]["family_size"] == 7


def test_kill_records_states():
    class Outcome:
        def __init__(self, mutant, killed_by):
            self.mutant, self.killed_by = mutant, killed_by

    class Mutant:
        def __init__(self, name, experiments):
            self.name, self.experiments = name, experiments

    checks = {n: _Check(n, "e") for n in ("k", "f", "i", "alive")}
    checks["other"] = _Check("other", "elsewhere")
    base = [
        CheckResult("k", "PASS", "", "", ""),
        CheckResult("f", "FAIL", "", "", ""),
        CheckResult("i", "INFO", "", "", ""),
        CheckResult("alive", "PASS", "", "", ""),
    ]
    rows = kill_records(
        [Outcome("m", (CheckResult("k", "FAIL", "", "", ""),))], [Mutant("m", ("e",))], checks, base
    )
    assert {r["check"]: r["state"] for r in rows} == {
        "k": "killed",
        "f": "failed on the real code",
        "i": "report only",
        "alive": "not killed",
    }


def test_page_is_self_contained_and_accessible(folders):
    root, verify, run = folders
    out = write_report([verify, run], root / "page.html")
    text = out.read_text()
    page = Page(text)
    # nothing leaves the file: no URL in src/href but data: and #fragments, a CSP that forbids the rest
    for tag, attrs in page.tags:
        for name in ("src", "href", "xlink:href", "action", "poster"):
            value = (attrs.get(name) or "").strip()
            assert not value or value.startswith(("data:", "#")), (tag, name, value)
    assert not re.search(r"url\(\s*['\"]?(?!data:|#)", text)
    assert ("meta", {"http-equiv": "Content-Security-Policy", "content": CSP}) in page.tags
    assert not any(tag in ("link", "iframe", "object", "embed") for tag, _ in page.tags)
    # figures: the verify folder's drawn as SVG from its table (installed study), the run's too; alt text on each
    assert len(page.figures) == 2 and all(tag == "svg" for tag, _ in page.figures)
    for tag, attrs in page.figures:
        assert attrs.get("role") == "img" and attrs.get("aria-label", "").startswith("pagestudy")
    # every table has a header row; the verdicts, kill matrix, summaries, axes and provenance are there
    assert page.tables and all(t["th"] > 0 for t in page.tables)
    classes = [t["class"].split()[0] for t in page.tables]
    for kind in ("verdicts", "kills", "axes", "summary", "facts", "history"):
        assert kind in classes, kind
    assert classes.count("summary") == 2 and classes.count("axes") == 2
    # the estimate's bar, the kill matrix's cells, the provenance
    assert 'class="badge pass">PASS<' in text and "✗ killed" in text and "· no FAIL" in text
    code = store.read_manifest(run)["code"]
    assert (
        code["hash"] in text
        and code["library"] in text
        and (code.get("commit") or "not recorded") in text
    )


def test_page_escapes_text_from_the_folder(folders, tmp_path):
    _, verify, _ = folders
    copy = tmp_path / "v"
    shutil.copytree(verify, copy)
    content = store.read_json(copy / "verdicts.json")
    content["checks"][0]["claim"] = '<script>alert("x")</script> & <b>'
    store.write_json(copy / "verdicts.json", content)
    text = write_report(copy).read_text()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;" in text
    assert text.count("<script>") == 1  # the page's own sorting script


def test_estimate_bar_draws_the_estimate_against_its_region():
    def geometry(record):
        svg = estimate_bar(record)
        dot = float(re.search(r'cx="([\d.]+)"', svg).group(1))
        band = re.search(r'<rect class="region" x="([\d.]+)" y="3" width="([\d.]+)"', svg)
        low, width = float(band.group(1)), float(band.group(2))
        return dot, low, low + width, svg

    dot, a, b, svg = geometry(
        {
            "estimate": 1.0,
            "low": 0.95,
            "high": 1.05,
            "region_low": 0.8,
            "region_high": 1.2,
            "region": "[0.8, 1.2]",
        }
    )
    assert a < dot < b and 'role="img"' in svg and "region [0.8, 1.2]" in svg
    dot, a, b, _ = geometry(
        {"estimate": 0.4, "low": 0.3, "high": 0.5, "region_low": 0.8, "region_high": 1.2}
    )
    assert dot < a  # a FAIL: left of its band
    dot, a, b, _ = geometry(
        {"estimate": -0.5, "low": -0.6, "high": -0.4, "region_low": -math.inf, "region_high": 0.0}
    )
    assert a == pytest.approx(4.0) and dot < b  # open to the left, from the edge
    assert estimate_bar({"estimate": math.nan, "low": math.nan, "high": math.nan}) == ""


def test_nan_metrics_and_incomplete_folders_are_warned(folders, tmp_path):
    table = pd.DataFrame(
        {
            "method": ["a", "a", "a", "b", "b"],
            "x": [1.0, np.nan, 2.0, np.nan, np.nan],
            "y": [1.0, 1.0, 1.0, np.nan, 2.0],
        }
    )
    table.attrs["method_columns"] = ["x", "y"]
    assert nan_counts(table) == [("a", "x", 1, 3), ("b", "y", 1, 2)]  # b never reports x: not a NaN
    _, _, run = folders
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    manifest = store.read_manifest(copy)
    manifest["complete"] = False
    manifest["source"] = str(tmp_path / "gone.py") + ":pagestudy"  # not installed here: folder only
    manifest["diagnostics"] = {
        "unconverged": [
            {
                "method": "laplace",
                "failed": 3,
                "fits": 120,
                "reasons": "3 max steps",
                "where": "eps=1 (3)",
            }
        ],
        "nan": [{"method": "laplace", "metric": "noise_ms", "nan": 2, "rows": 120}],
    }
    store.write_manifest(copy, manifest)
    page = write_report(copy).read_text()
    assert "incomplete: the run was interrupted" in page
    assert "3 of 120 fits of laplace did not converge (3 max steps)" in page
    assert "2 of 120 rows of laplace have a NaN noise_ms" in page
    assert "not installed here" in page
    imgs = [attrs for tag, attrs in Page(page).tags if tag == "img"]
    assert len(imgs) == 1 and imgs[0]["src"].startswith("data:image/png;base64,") and imgs[0]["alt"]


def test_report_command(folders, tmp_path, capsys):
    root, verify, run = folders
    out = tmp_path / "one.html"
    assert main(["report", str(run), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"report: {out}" and out.read_text().startswith(
        "<!DOCTYPE html>"
    )
    # bad input: one line, exit 2, nothing written
    empty = tmp_path / "empty"
    empty.mkdir()
    for argv, message in (
        (["report", str(empty)], "holds no dpsim run"),
        (["report", str(run), str(verify)], "--out FILE.html"),
        (["report", str(run), "--out", str(tmp_path / "x.txt")], "ending in .html"),
        (["report", str(tmp_path / "nope")], "is not a folder"),
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "one.html"]
    with pytest.raises(UsageError):
        write_report([])


def test_a_verify_without_mutants_leaves_no_stale_kill_matrix(folders, tmp_path):
    _, verify, _ = folders
    copy = tmp_path / "v"
    shutil.copytree(verify, copy)
    records = store.read_json(copy / "verdicts.json")["checks"]
    paths = write_verdicts(copy, records)
    assert [p.name for p in paths] == ["verdicts.json", "verdicts.csv"]
    assert not (copy / "kill-matrix.csv").exists() and "mutants" not in store.read_json(
        copy / "verdicts.json"
    )
    assert "Kill matrix" not in write_report(copy).read_text()


def test_report_open_hands_the_page_to_the_browser(folders, tmp_path, monkeypatch, capsys):
    _, _, run = folders
    opened = []
    monkeypatch.setattr("webbrowser.open", opened.append)
    out = tmp_path / "p.html"
    assert main(["report", str(run), "--out", str(out), "--open"]) == 0
    assert opened == [out.resolve().as_uri()]


def test_figure_titles_in_alt_text_are_plain_text():
    assert plain_text(r"errors vs $L$, $\epsilon(m, L)$ schemes") == "errors vs L, ε(m, L) schemes"
    assert (
        plain_text(r"$\|\hat{\theta} - \theta^*\|_2$, $\Delta$, $\ell_\infty$")
        == "‖θ - θ^*‖_2, Δ, ℓ_∞"
    )
    assert plain_text("no maths") == "no maths"


def test_the_api_writes_the_same_page(tmp_path):
    """dpsim.report and Results.report write the page ``dpsim report`` writes for a folder."""
    import dpsim

    results = dpsim.run(
        "cai-fig2", reps=2, out=tmp_path / "r", progress=False, n_items=20, eps=[1.0], p=[1.0]
    )
    page = results.report()
    assert page == tmp_path / "r" / "report.html" and "<svg" in page.read_text()
    other = dpsim.report(tmp_path / "r", tmp_path / "again.html")
    assert other.read_text().count("<table") == page.read_text().count("<table")
