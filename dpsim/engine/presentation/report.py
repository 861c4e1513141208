"""``dpsim report``: one self-contained HTML page of run folders or verify folders.

:func:`write_report` writes one self-contained HTML file (no request leaves it: figures are
inline SVG or data URIs, styles and the few lines of script are inline, and a
Content-Security-Policy forbids anything else) for run folders or a verify folder (a folder of
run folders, with ``verdicts.json``, :mod:`dpsim.engine.presentation.verdict_files`): per run
its description and axes, its figures drawn as vector graphics from the stored table
(:mod:`dpsim.engine.presentation.plots`, when the experiment is installed here; else the
figure images the run wrote), a summary per metric with 95% intervals
(:func:`dpsim.engine.presentation.summary.summary_table`, what ``dpsim summary`` prints),
warnings (an incomplete folder, unconverged fits, NaN metrics) and its provenance (the
manifest: code fingerprint, commit, versions, machine, commands, run times); per verify
folder its verdicts, each estimate drawn against its region, and the kill matrix. What the
page shows is gathered from the folders by :mod:`dpsim.engine.presentation.report_data`; this
module writes it as HTML. It reads only the folders. Small tables sort by a click on a column
header; the page prints to PDF.
"""

from __future__ import annotations

import html
import math
import shlex
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from dpsim.errors import UsageError
from dpsim.engine.storage import store
from dpsim.engine.definition.axes import axis_type
from dpsim.engine.presentation.report_data import Run, Source, gather

PAGE = "report.html"
SORTABLE_ROWS = 300  # tables up to this many rows sort by a click on a header


def esc(value) -> str:
    """Text for HTML (every character that means something there escaped)."""
    return html.escape("" if value is None else str(value), quote=True)


def _cell_text(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return (
            "–"
            if math.isnan(value)
            else ("∞" if value == math.inf else "−∞" if value == -math.inf else f"{value:.4g}")
        )
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return str(value)


def _sort_key(value) -> str | None:
    """A cell's numeric sort key (``data-sort``), None for text."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        return None
    value = float(value)
    return (
        "NaN"
        if math.isnan(value)
        else (
            "Infinity" if value == math.inf else "-Infinity" if value == -math.inf else repr(value)
        )
    )


def table_html(
    header: Sequence[str], rows: Iterable[Sequence], caption: str = "", cls: str = ""
) -> str:
    """A table with a header row of <th scope=col> (sortable when short); a cell given as
    ``(markup, sort key)`` is raw markup, any other value escaped text."""
    rows = list(rows)
    sortable = " sortable" if 1 < len(rows) <= SORTABLE_ROWS else ""
    out = [f'<div class="scroll"><table class="{cls}{sortable}">']
    if caption:
        out.append(f"<caption>{esc(caption)}</caption>")
    out.append(
        "<thead><tr>"
        + "".join(f'<th scope="col">{esc(h)}</th>' for h in header)
        + "</tr></thead><tbody>"
    )
    for row in rows:
        cells = []
        for value in row:
            if isinstance(value, tuple):
                markup, key = value
                cells.append(
                    f'<td data-sort="{esc(key)}">{markup}</td>'
                    if key is not None
                    else f"<td>{markup}</td>"
                )
                continue
            key = _sort_key(value)
            attr = f' data-sort="{esc(key)}" class="num"' if key is not None else ""
            cells.append(f"<td{attr}>{esc(_cell_text(value))}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _bound(value) -> float | None:
    """A region's bound as a float (±inf included), None when missing or NaN (not evaluated)."""
    return float(value) if isinstance(value, (int, float)) and not math.isnan(value) else None


def estimate_bar(record: Mapping) -> str:
    """A small inline SVG: the predicted region as a band (open-ended when a bound is
    infinite), the 95% interval as a line, the estimate as a dot; "" when the check has no
    estimate. Labelled for screen readers with the same numbers."""
    value, low, high = (record.get(k) for k in ("estimate", "low", "high"))
    r_low, r_high = record.get("region_low"), record.get("region_high")
    if not _finite(value):
        return ""
    ends = [v for v in (value, low, high, r_low, r_high) if _finite(v)]
    lo, hi = min(ends), max(ends)
    span = hi - lo if hi > lo else max(abs(lo), 1.0) * 0.2
    lo, hi = lo - 0.12 * span, hi + 0.12 * span
    width, height, pad = 220.0, 22.0, 4.0

    def x(v):
        v = lo if v is None or (isinstance(v, float) and math.isnan(v)) else min(max(v, lo), hi)
        return pad + (v - lo) / (hi - lo) * (width - 2 * pad)

    label = (
        f"estimate {_cell_text(value)}, 95% interval [{_cell_text(low)}, {_cell_text(high)}], "
        f"region {record.get('region') or '–'}"
    )
    parts = [
        f'<svg class="bar" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" '
        f'role="img" aria-label="{esc(label)}"><title>{esc(label)}</title>'
    ]
    if _bound(r_low) is not None and _bound(r_high) is not None:  # a region (possibly unbounded)
        a = x(r_low if _finite(r_low) else lo)
        b = x(r_high if _finite(r_high) else hi)
        parts.append(
            f'<rect class="region" x="{a:.1f}" y="3" width="{max(b - a, 1):.1f}" height="16"/>'
        )
        for bound in (r_low, r_high):
            if _finite(bound):
                parts.append(
                    f'<line class="edge" x1="{x(bound):.1f}" x2="{x(bound):.1f}" y1="2" y2="20"/>'
                )
    if _finite(low) and _finite(high):
        parts.append(f'<line class="ci" x1="{x(low):.1f}" x2="{x(high):.1f}" y1="11" y2="11"/>')
    elif _finite(low) or _finite(high):  # one-sided interval: to the edge
        parts.append(
            f'<line class="ci" x1="{x(low if _finite(low) else lo):.1f}" '
            f'x2="{x(high if _finite(high) else hi):.1f}" y1="11" y2="11"/>'
        )
    parts.append(f'<circle class="est" cx="{x(value):.1f}" cy="11" r="3.5"/></svg>')
    return "".join(parts)


def _badge(verdict: str) -> tuple[str, str]:
    kind = (
        verdict.lower()
        if verdict in ("PASS", "FAIL", "INCONCLUSIVE", "ERROR", "REFUSED", "INFO")
        else "other"
    )
    return f'<span class="badge {kind}">{esc(verdict)}</span>', verdict


def verdicts_html(verdicts: dict, anchor: str) -> str:
    """The verdicts of a verify folder: a count per verdict, the family-wise rule, one row
    per check with its estimate against its region, then the mutants and the kill matrix."""
    checks = verdicts.get("checks") or []
    family = verdicts.get("family") or {}
    counts = (
        pd.Series([c.get("verdict") for c in checks]).value_counts()
        if checks
        else pd.Series(dtype=int)
    )
    out = [
        f'<section id="{anchor}-verdicts"><h3>Verdicts</h3>',
        "<p>" + esc(", ".join(f"{n} {v}" for v, n in counts.items()) or "no checks") + "</p>",
        f'<p class="rule">Family-wise rule: {esc(family.get("rule", ""))} (m = {esc(family.get("size"))}).</p>',
    ]
    rows = []
    for c in checks:
        interval = (
            f"[{_cell_text(c.get('low'))}, {_cell_text(c.get('high'))}]"
            if _finite(c.get("low")) or _finite(c.get("high"))
            else "–"
        )
        claim = esc(c.get("claim") or "")
        detail = esc(c.get("statistic") or "") + (
            f"<br><em>{esc(c['note'])}</em>" if c.get("note") else ""
        )
        rows.append(
            [
                _badge(str(c.get("verdict"))),
                c.get("experiment") or "–",
                (
                    f'<strong>{esc(c.get("check"))}</strong><br><span class="claim">{claim}</span>',
                    c.get("check"),
                ),
                c.get("estimate") if c.get("estimate") is not None else math.nan,
                interval,
                c.get("region") or "–",
                (estimate_bar(c), c.get("estimate")),
                c.get("reps") if c.get("reps") is not None else "–",
                (detail, None),
            ]
        )
    out.append(
        table_html(
            [
                "verdict",
                "experiment",
                "check and claim",
                "estimate",
                "95% interval",
                "region",
                "estimate (dot), interval (line) and region (band)",
                "replicates",
                "statistic",
            ],
            rows,
            cls="verdicts",
        )
    )
    mutants = verdicts.get("mutants")
    if mutants is not None:
        out.append(kill_matrix_html(mutants, verdicts.get("kill_matrix") or []))
    out.append("</section>")
    return "".join(out)


def kill_matrix_html(mutants: Sequence[dict], matrix: Sequence[dict]) -> str:
    """Mutants (rows) × checks (columns): ✗ killed (the check FAILs under the mutant), · no
    FAIL, blank: the check is not judged under it; a mutant no check kills is marked SURVIVED."""
    checks = list(dict.fromkeys(row["check"] for row in matrix))
    cell = {(row["mutant"], row["check"]): row["state"] for row in matrix}
    symbol = {
        "killed": ("✗ killed", "killed"),
        "not killed": ("· no FAIL", "na"),
        "failed on the real code": ("failed on the real code", "na"),
        "report only": ("report only", "na"),
    }
    killed = sum(bool(m.get("killed")) for m in mutants)
    rows = []
    for m in mutants:
        outcome = (
            '<span class="badge pass">KILLED</span>'
            if m.get("killed")
            else '<span class="badge fail">SURVIVED</span>'
        )
        row = [
            (
                f'<strong>{esc(m["mutant"])}</strong><br><span class="claim">{esc(m.get("description"))}</span>',
                m["mutant"],
            ),
            (outcome, "1" if m.get("killed") else "0"),
        ]
        for check in checks:
            state = cell.get((m["mutant"], check))
            text, cls = symbol.get(state, ("", "na")) if state else ("", "na")
            row.append((f'<span class="{cls}">{esc(text)}</span>', state or ""))
        rows.append(row)
    return (
        f"<h3>Kill matrix: {killed} mutants killed, {len(mutants) - killed} survived of {len(mutants)}</h3>"
        "<p>A mutant is killed when some check that did not FAIL on the real code FAILs under it.</p>"
        + table_html(["mutant", "outcome", *checks], rows, cls="kills")
    )


def _axes_html(run: Run) -> str:
    manifest = run.manifest
    ran = (manifest.get("study") or {}).get("axes") or {}
    kinds = {a: k for k in ("shape", "data", "analysis") for a in manifest.get(f"{k}_axes", [])}
    kinds.update({a: "derived" for a in manifest.get("derived", []) if a not in kinds})
    own = getattr(run.experiment, "axis_types", None)
    rows = []
    for axis in dict.fromkeys([*kinds, *ran]):
        try:
            doc = axis_type(axis, own).doc
        except UsageError:
            doc = ""
        values = ", ".join(
            _cell_text(v) if isinstance(v, float) else str(v) for v in ran.get(axis, [])
        )
        rows.append([axis, kinds.get(axis, "–"), values, doc])
    return table_html(["axis", "kind", "values run", "what it is"], rows, cls="axes")


def _summary_html(method: str, frame: pd.DataFrame) -> str:
    """One method's summary table (:func:`dpsim.engine.presentation.report_data._joined`): a
    metric's cell is its mean and 95% interval."""
    header = list(frame.columns)
    rows = []
    for record in frame.to_dict("records"):
        row = []
        for column in header:
            value = record[column]
            if isinstance(value, tuple):
                mean, low, high = value
                row.append(
                    (
                        f'{esc(_cell_text(mean))} <span class="ci">[{esc(_cell_text(low))}, '
                        f"{esc(_cell_text(high))}]</span>",
                        _sort_key(mean),
                    )
                )
            else:
                row.append("–" if value is None else value)
        rows.append(row)
    return table_html(
        header,
        rows,
        caption=f"method {method}: mean [95% interval] per grid point (n replicates)",
        cls="summary",
    )


def _provenance_html(run: Run) -> str:
    manifest = run.manifest
    code = manifest.get("code") or {}
    commit = code.get("commit")
    facts = [
        ("experiment", manifest.get("experiment")),
        ("defined in", manifest.get("source")),
        ("seed", manifest.get("seed")),
        ("complete", manifest.get("complete")),
        ("code fingerprint", code.get("hash")),
        ("library hash", code.get("library")),
        ("definition hash", code.get("definition")),
        ("definition files", ", ".join(code.get("definition_files") or [])),
        ("dpsim", code.get("dpsim")),
        (
            "commit",
            (commit + (" + uncommitted changes (dirty)" if code.get("dirty") else " (clean)"))
            if commit
            else "not recorded (not run from a git checkout)",
        ),
        ("rows", (manifest.get("study") or {}).get("rows")),
    ]
    out = [
        table_html(["what", "value"], [[k, "–" if v is None else v] for k, v in facts], cls="facts")
    ]
    rows = []
    for entry in manifest.get("history") or []:
        versions = ", ".join(f"{k} {v}" for k, v in (entry.get("versions") or {}).items())
        rows.append(
            [
                entry.get("started", "–"),
                entry.get("finished", "–"),
                entry.get("seconds", math.nan),
                entry.get("lanes_run", "–"),
                entry.get("rows_written", "–"),
                shlex.join(str(c) for c in entry.get("command") or []),
                f"{entry.get('host', '?')}: {entry.get('cpu', '?')}; {entry.get('backend', '?')} "
                f"{entry.get('device', '?')} × {entry.get('devices', 1)}",
                f"python {entry.get('python', '?')}, {versions}",
            ]
        )
    if rows:
        out.append(
            table_html(
                [
                    "started",
                    "finished",
                    "seconds",
                    "lanes",
                    "rows",
                    "command",
                    "machine",
                    "versions",
                ],
                rows,
                caption="commands that wrote this folder",
                cls="history",
            )
        )
    return "".join(out)


def run_html(run: Run, anchor: str) -> str:
    """One run folder's section."""
    e = run.experiment
    title = getattr(e, "title", "") or ""
    out = [
        f'<section class="run" id="{anchor}"><h3>{esc(run.name)}{": " + esc(title) if title else ""}</h3>',
        f'<p class="path">folder <code>{esc(run.path)}</code></p>',
    ]
    if getattr(e, "description", ""):
        out.append(f"<p>Reproduces: {esc(e.description)}</p>")
    if e is None:
        out.append(
            "<p>The experiment is not installed here: described from the folder's manifest alone.</p>"
        )
    methods = ", ".join(run.manifest.get("methods") or [])
    out.append(f"<p>Methods: {esc(methods or '–')}.</p>")
    out.append("<h4>Axes</h4>" + _axes_html(run))
    if run.shown:
        out.append(
            "<details><summary>dpsim show</summary><pre>"
            + esc("\n".join(run.shown))
            + "</pre></details>"
        )
    out.append("<h4>Warnings</h4>")
    out.append(
        '<ul class="warnings">' + "".join(f"<li>{esc(w)}</li>" for w in run.warnings) + "</ul>"
        if run.warnings
        else "<p>none</p>"
    )
    if run.figures:
        out.append("<h4>Figures</h4>")
    for figure in run.figures:
        body = figure.svg or f'<img src="{figure.uri}" alt="{esc(figure.alt)}">'
        out.append(f"<figure>{body}<figcaption>{esc(figure.alt)}</figcaption></figure>")
    if run.summaries:
        out.append("<h4>Summaries: mean [95% interval]</h4>")
        out.extend(_summary_html(method, frame) for method, frame in run.summaries)
    out.append("<h4>Provenance</h4>" + _provenance_html(run) + "</section>")
    return "".join(out)


STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1b1b;margin:0 auto;
max-width:1200px;padding:1em 2em}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #ccc;margin-top:2em}
h3{margin-top:1.6em}h4{margin:1.2em 0 .4em}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em}
pre{background:#f5f5f5;padding:.6em;overflow-x:auto}
table{border-collapse:collapse;margin:.4em 0 1em;font-size:.88em}
caption{text-align:left;color:#555;padding:.2em 0}
th,td{border:1px solid #d0d0d0;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#eef1f5}td.num{text-align:right;font-variant-numeric:tabular-nums}
table.sortable th{cursor:pointer}table.sortable th::after{content:" ⇅";color:#999}
th[aria-sort=ascending]::after{content:" ▲"!important}th[aria-sort=descending]::after{content:" ▼"!important}
.badge{display:inline-block;padding:.05em .45em;border-radius:.3em;font-weight:600;font-size:.85em;color:#fff}
.pass{background:#2e7d32}.fail{background:#c62828}.inconclusive{background:#b26a00}.error{background:#6a1b9a}
.refused{background:#5d4037}.info,.other{background:#546e7a}
span.killed{color:#2e7d32;font-weight:600}span.na{color:#777}
table.verdicts td:nth-child(3){min-width:16em}.claim{color:#555;font-size:.92em}.rule{color:#444}.path{color:#555}
svg.bar rect.region{fill:#c8e6c9}svg.bar line.edge{stroke:#2e7d32;stroke-width:1.5}
svg.bar line.ci{stroke:#1b1b1b;stroke-width:2.5}svg.bar circle.est{fill:#1565c0}
ul.warnings li{color:#8a4b00}
figure{margin:1em 0;page-break-inside:avoid;break-inside:avoid}figure img{max-width:100%}
figcaption{color:#555;font-size:.9em}
nav a{margin-right:.6em}.ci{color:#666;font-size:.9em}
.scroll{overflow-x:auto;max-width:100%}
@media print{body{max-width:none;padding:0;font-size:10pt}nav{display:none}.scroll{overflow:visible}
table.sortable th::after{content:""}main>section+section,section.run+section.run{break-before:page}
h2,h3,h4{break-after:avoid}tr{break-inside:avoid}pre{white-space:pre-wrap}a{color:inherit;text-decoration:none}
table{font-size:7.5pt}th,td{padding:.1em .25em}th{overflow-wrap:anywhere}td{overflow-wrap:break-word}
td.num{white-space:nowrap}.ci{display:block}svg.bar{width:110px;height:auto}
table.verdicts td:nth-child(3){min-width:11em}table.verdicts{width:100%}table.verdicts th{overflow-wrap:normal}pre{overflow-wrap:anywhere;font-size:7.5pt}}
@page{margin:1.5cm}
"""

SCRIPT = """
(function () {
  function key(row, i) {
    var cell = row.cells[i], v = cell.getAttribute('data-sort');
    if (v !== null && v !== '' && !isNaN(parseFloat(v)) || v === 'NaN') { return parseFloat(v); }
    return (v === null ? cell.textContent : v).trim().toLowerCase();
  }
  function compare(x, y) {
    if (typeof x === 'number' && typeof y === 'number') {
      if (isNaN(x)) { return isNaN(y) ? 0 : 1; }
      if (isNaN(y)) { return -1; }
      return x - y;
    }
    if (typeof x !== typeof y) { return typeof x === 'number' ? -1 : 1; }
    return x < y ? -1 : x > y ? 1 : 0;
  }
  function sort(th) {
    var table = th.closest('table'), body = table.tBodies[0], i = th.cellIndex;
    var ascending = th.getAttribute('aria-sort') !== 'ascending';
    table.querySelectorAll('th').forEach(function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) { var c = compare(key(a, i), key(b, i)); return ascending ? c : -c; });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll('table.sortable th').forEach(function (th) {
    th.tabIndex = 0;
    th.addEventListener('click', function () { sort(th); });
    th.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sort(th); }
    });
  });
  window.addEventListener('beforeprint', function () {
    document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  });
})();
"""

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def page_html(sources: Sequence[Source]) -> str:
    """The whole page (a str of HTML): a contents list, then per PATH its verdicts and its runs."""
    from dpsim import __version__

    names = [r.name for s in sources for r in s.runs] or [s.path.name for s in sources]
    title = "dpsim report: " + ", ".join(dict.fromkeys(names))
    nav, body = [], []
    for i, source in enumerate(sources):
        anchor = f"s{i}"
        kind = (
            "verify folder"
            if source.verdicts is not None
            else "run folder"
            if len(source.runs) == 1
            else "folder of runs"
        )
        body.append(f'<section id="{anchor}"><h2>{esc(kind)} <code>{esc(source.path)}</code></h2>')
        nav.append(f'<li><a href="#{anchor}">{esc(source.path)}</a>: ')
        if source.verdicts is not None:
            body.append(verdicts_html(source.verdicts, anchor))
            nav.append(f'<a href="#{anchor}-verdicts">verdicts</a> ')
        for j, run in enumerate(source.runs):
            body.append(run_html(run, f"{anchor}-r{j}"))
            nav.append(f'<a href="#{anchor}-r{j}">{esc(run.name)}</a> ')
        nav.append("</li>")
        body.append("</section>")
    runs, figures = (
        sum(len(s.runs) for s in sources),
        sum(len(r.figures) for s in sources for r in s.runs),
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>"
        f"<header><h1>{esc(title)}</h1><p>Made by dpsim {esc(__version__)} from the folders alone "
        f"({runs} run{'s' * (runs != 1)}, {figures} figure{'s' * (figures != 1)}). Click a column header to sort a "
        f"table; print to PDF from the browser.</p>"
        f'<nav aria-label="contents"><ul>{"".join(nav)}</ul></nav></header><main>{"".join(body)}</main>'
        f"<script>{SCRIPT}</script></body></html>\n"
    )


def write_report(paths, out=None) -> Path:
    """Write the page of ``paths`` (run folders or verify folders) to ``out``.

    Args:
        paths: one folder (str or Path) or several.
        out: the HTML file (default: FOLDER/report.html for one folder; required for several).
    Returns:
        The path written (atomically).
    Raises:
        UsageError: no folder, a folder that holds no run and no verdicts, an ``out`` that is
            not an .html file or cannot be written; nothing is written then.
    """
    folders = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    if not folders:
        raise UsageError("name a run folder or a verify folder")
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"{str(folder)!r} is not a folder")
    if out is None:
        if len(folders) > 1:
            raise UsageError("several folders: name the page with --out FILE.html")
        out = folders[0] / PAGE
    out = Path(out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"--out {str(out)!r}: name a file ending in .html")
    store.check_directory(out.parent, "--out")
    sources = [gather(folder, i) for i, folder in enumerate(folders)]
    text = page_html(sources)
    out.parent.mkdir(parents=True, exist_ok=True)
    store.write_text(out, text)
    return out
