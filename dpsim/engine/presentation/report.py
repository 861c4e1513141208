"""``dpsim report`` and the verdict files of ``dpsim verify``.

**Verdict files.** Every ``dpsim verify`` writes, beside its runs (the ``--runs`` folder),
``verdicts.json`` and ``verdicts.csv``: one record per check (:func:`verdict_records`) with
its experiment, claim, statistic, estimate, 95% interval, predicted region, verdict, the
family-wise rule (family size m, the points K the check judges, the normal quantiles of its
PASS and FAIL intervals), the replicates behind it and its note. With ``--mutants`` the JSON
also holds each mutant's outcome and the kill matrix (:func:`kill_records`: mutant × check →
killed or not), written as ``kill-matrix.csv`` too.

**The page.** :func:`write_report` writes one self-contained HTML file (no request leaves
it: figures are inline SVG or data URIs, styles and the few lines of script are inline, and a
Content-Security-Policy forbids anything else) for run folders or a verify folder (a folder of
run folders, with ``verdicts.json``): per run its description and axes, its figures drawn as
vector graphics from the stored table (:mod:`dpsim.engine.presentation.plots`, when the experiment is
installed here; else the figure images the run wrote), a summary per metric with 95%
intervals (:func:`dpsim.engine.presentation.summary.summary_table`, what ``dpsim summary`` prints),
warnings (an incomplete folder, unconverged fits, NaN metrics) and its provenance (the
manifest: code fingerprint, commit, versions, machine, commands, run times); per verify
folder its verdicts, each estimate drawn against its region, and the kill matrix. It reads
only the folders. Small tables sort by a click on a column header; the page prints to PDF.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import math
import re
import shlex
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dpsim.errors import UsageError  # noqa: E402
from dpsim.engine.storage import store  # noqa: E402
from dpsim.engine.definition.axes import axis_type  # noqa: E402
from dpsim.engine.presentation.plots import draw_figures, format_value  # noqa: E402
from dpsim.engine.presentation.summary import (
    Z95,
    declared_metrics,
    grid_columns,
    metric_names,
    summary_table,
)  # noqa: E402
from dpsim.engine.judgement.verdicts import family_z  # noqa: E402

VERDICTS_JSON = "verdicts.json"
VERDICTS_CSV = "verdicts.csv"
KILLS_CSV = "kill-matrix.csv"
PAGE = "report.html"
MUTANTS_FOLDER = "mutants"  # verify's runs of mutated experiments (RUNS/mutants/<mutant>/…)
SORTABLE_ROWS = 300  # tables up to this many rows sort by a click on a header

# ---------------------------------------------------------------------------------------
# Verdict files
# ---------------------------------------------------------------------------------------
CHECK_FIELDS = (
    "experiment",
    "check",
    "claim",
    "verdict",
    "statistic",
    "estimate",
    "low",
    "high",
    "fitted",
    "region",
    "region_low",
    "region_high",
    "family_size",
    "points",
    "z_pass",
    "z_fail",
    "reps",
    "needed_reps",
    "note",
)
KILL_FIELDS = ("mutant", "check", "experiment", "killed", "state")
PLAIN_RULE = (
    "PASS when the 95% interval (z_pass) lies in the region; FAIL when the interval at the Bonferroni "
    "level 0.05/(m·K) (z_fail; m the family size, K the points the check judges) lies wholly outside it"
)


def _number(value) -> float | None:
    """A float for the files (None for a missing value)."""
    return None if value is None else float(value)


def verdict_records(
    results: Sequence, checks: Mapping[str, object] | None = None, family: int | None = None
) -> list[dict]:
    """One record per check result of ``dpsim verify``, in order.

    Args:
        results: :class:`~dpsim.engine.judgement.verdicts.CheckResult` objects.
        checks: name → check (its ``experiment`` and ``description``, the claim); without it
            those fields are None and "".
        family: the family size m of the verify (default: the results less the INFO ones).
    Returns:
        Dicts with the keys :data:`CHECK_FIELDS`: ``estimate`` [``low``, ``high``] the
        statistic and its 95% interval, [``region_low``, ``region_high``] the predicted
        region (``region``: as the line prints it), ``z_pass`` and ``z_fail`` the normal
        quantiles of the intervals a PASS and a FAIL are read from (a plain verify's; the
        stages of ``--until-decided`` spend the rates differently, as its ``note`` says);
        numbers NaN where the check could not be evaluated.
    """
    family = family if family is not None else max(1, sum(r.verdict != "INFO" for r in results))
    records = []
    for result in results:
        check = (checks or {}).get(result.name)
        points = int(getattr(result, "points", 1) or 1)
        records.append(
            {
                "experiment": getattr(check, "experiment", None),
                "check": result.name,
                "claim": getattr(check, "description", "") or "",
                "verdict": result.verdict,
                "statistic": result.evidence,
                "estimate": _number(result.value),
                "low": _number(result.low),
                "high": _number(result.high),
                "fitted": result.fitted,
                "region": result.predicted,
                "region_low": _number(getattr(result, "region_low", math.nan)),
                "region_high": _number(getattr(result, "region_high", math.nan)),
                "family_size": int(family),
                "points": points,
                "z_pass": Z95,
                "z_fail": family_z(family * points),
                "reps": getattr(result, "reps", None),
                "needed_reps": result.needed_reps,
                "note": result.note.strip(),
            }
        )
    return records


def kill_records(
    outcomes: Sequence, mutants: Sequence, checks: Mapping[str, object], base: Sequence
) -> list[dict]:
    """The kill matrix of ``dpsim verify --mutants``: one record per (mutant, check judged
    under it), in order.

    Args:
        outcomes: :class:`~dpsim.engine.judgement.verify.MutantOutcome` objects (``mutant``, ``killed_by``).
        mutants: the mutants judged (``name``, ``experiments``).
        checks: name → check judged in the base run.
        base: the base run's results (a check that FAILed there cannot kill, a report-only
            one never judges).
    Returns:
        Dicts with the keys :data:`KILL_FIELDS`; ``state`` is "killed", "not killed",
        "failed on the real code" or "report only".
    """
    by_name = {o.mutant: o for o in outcomes}
    verdicts = {r.name: r.verdict for r in base}
    rows = []
    for mutant in mutants:
        outcome = by_name.get(mutant.name)
        if outcome is None:
            continue
        killers = {r.name for r in outcome.killed_by}
        for check in checks.values():
            if check.experiment not in mutant.experiments:
                continue
            state = (
                "killed"
                if check.name in killers
                else "report only"
                if verdicts.get(check.name) == "INFO"
                else "failed on the real code"
                if verdicts.get(check.name) == "FAIL"
                else "not killed"
            )
            rows.append(
                {
                    "mutant": mutant.name,
                    "check": check.name,
                    "experiment": check.experiment,
                    "killed": check.name in killers,
                    "state": state,
                }
            )
    return rows


def _csv_text(records: Sequence[dict], fields: Sequence[str]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer, fieldnames=list(fields), lineterminator="\n", extrasaction="ignore"
    )
    writer.writeheader()
    for record in records:
        writer.writerow({k: ("" if record.get(k) is None else record.get(k)) for k in fields})
    return buffer.getvalue()


def write_verdicts(
    folder: Path,
    records: Sequence[dict],
    *,
    rule: str | None = None,
    seed: int | None = None,
    reps: int | None = None,
    outcomes: Sequence | None = None,
    kills: Sequence[dict] | None = None,
) -> list[Path]:
    """Write ``verdicts.json`` and ``verdicts.csv`` (and with ``outcomes`` ``kill-matrix.csv``)
    into ``folder``, each atomically; they hold the verdicts of this verify only (an earlier
    verify's files there are replaced, its ``kill-matrix.csv`` removed when there are no mutants).

    Args:
        records: :func:`verdict_records`.
        rule: the family-wise rule in words (default :data:`PLAIN_RULE`).
        seed, reps: the verify's ``--seed`` and ``--reps`` (None: each experiment's own).
        outcomes: the mutants' outcomes (``mutant``, ``description``, ``killed``, ``judged``,
            ``seconds``, ``killed_by``), with ``kills`` (:func:`kill_records`).
    Returns:
        The paths written.
    """
    folder = Path(folder)
    store.check_directory(folder, "--runs")
    folder.mkdir(parents=True, exist_ok=True)
    family = records[0]["family_size"] if records else 1
    content = {
        "family": {
            "size": family,
            "z_pass": Z95,
            "z_fail_one_point": family_z(family),
            "rule": rule or PLAIN_RULE,
        },
        "seed": seed,
        "reps": reps,
        "checks": list(records),
    }
    if outcomes is not None:
        content["mutants"] = [
            {
                "mutant": o.mutant,
                "description": o.description,
                "killed": o.killed,
                "killed_by": [r.name for r in o.killed_by],
                "judged": o.judged,
                "seconds": round(o.seconds, 3),
            }
            for o in outcomes
        ]
        content["kill_matrix"] = list(kills or [])
    paths = [folder / VERDICTS_JSON, folder / VERDICTS_CSV]
    store.write_json(paths[0], content)
    store.write_text(paths[1], _csv_text(records, CHECK_FIELDS))
    if outcomes is not None:
        paths.append(folder / KILLS_CSV)
        store.write_text(paths[2], _csv_text(kills or [], KILL_FIELDS))
    else:
        (folder / KILLS_CSV).unlink(missing_ok=True)  # an earlier verify's: not of these verdicts
    return paths


# ---------------------------------------------------------------------------------------
# What the page shows, gathered from the folders
# ---------------------------------------------------------------------------------------
@dataclass
class Figure:
    """One figure: inline SVG markup, or an image's data URI (``svg`` empty); ``alt`` says what it shows."""

    alt: str
    svg: str = ""
    uri: str = ""


@dataclass
class Run:
    """One run folder as the page shows it."""

    path: Path
    manifest: dict
    experiment: object = None  # the installed Experiment, or None
    figures: list[Figure] = field(default_factory=list)
    summaries: list[tuple[str, pd.DataFrame]] = field(
        default_factory=list
    )  # (method, :func:`_joined`)
    warnings: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)  # `dpsim show`'s lines, when installed

    @property
    def name(self) -> str:
        return str(self.manifest.get("experiment", self.path.name))


@dataclass
class Source:
    """One PATH of ``dpsim report``: a run folder, or a verify folder of run folders."""

    path: Path
    runs: list[Run]
    verdicts: dict | None = None


def run_folders(path: Path) -> list[Path]:
    """The run folders ``path`` stands for: itself when it holds a manifest, else its
    subfolders that do (a verify folder; its runs of mutants left out), in name order."""
    path = Path(path)
    if (path / store.MANIFEST).is_file():
        return [path]
    if not path.is_dir():
        return []
    return sorted(
        p
        for p in path.iterdir()
        if p.is_dir() and p.name != MUTANTS_FOLDER and (p / store.MANIFEST).is_file()
    )


def _installed(manifest: dict):
    """The experiment a manifest names when it is installed here (a paper, or a study file
    found from the manifest's source), else None: the page is then made from the folder alone."""
    from dpsim.engine.storage.folder import experiment_of

    source = str(manifest.get("source") or manifest.get("experiment", ""))
    if " + mutant " in source:
        return None
    try:
        return experiment_of(manifest)
    except Exception:  # noqa: BLE001 - not installed here, or a study file that no longer loads: folder only
        return None


def _svg(fig, alt: str, salt: str) -> str:
    """``fig`` as inline SVG markup (text as paths, no external font), labelled for screen
    readers (role=img, aria-label, <title>), its ids unique on the page (``salt``)."""
    buffer = io.StringIO()
    with plt.rc_context({"svg.hashsalt": salt, "svg.fonttype": "path"}):
        fig.savefig(
            buffer,
            format="svg",
            metadata={"Date": None, "Creator": None, "Format": None, "Type": None},
        )
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    head_end = text.index(">")
    head = text[:head_end]
    width = re.search(r'width="([\d.]+)pt"', head)
    head = re.sub(r'\s(width|height)="[\d.]+pt"', "", head)
    style = (
        f' style="width:100%;max-width:{float(width.group(1)):.0f}pt;height:auto"' if width else ""
    )
    label = html.escape(alt, quote=True)
    return (
        f'{head} role="img" aria-label="{label}"{style}><title>{html.escape(alt)}</title>'
        + text[head_end + 1 :]
    )


TEX_WORDS = {
    "ell": "ℓ",
    "infty": "∞",
    "sqrt": "√",
    "cdot": "·",
    "times": "×",
    "le": "≤",
    "leq": "≤",
    "ge": "≥",
    "geq": "≥",
    "propto": "∝",
    "approx": "≈",
    "asymp": "≍",
    "varepsilon": "ε",
    "vartheta": "ϑ",
    "star": "*",
    "log": "log",
    "ln": "ln",
    "exp": "exp",
}
TEX_DROPPED = (
    "hat",
    "tilde",
    "bar",
    "mathrm",
    "mathbf",
    "mathit",
    "text",
    "operatorname",
    "left",
    "right",
)


def plain_text(text: str) -> str:
    """A figure title's matplotlib mathtext as plain text for alt text and captions:
    ``$\\epsilon(m, L)$`` → ``ε(m, L)`` (Greek letters and a few symbols by name; accents and
    font commands dropped; dollars and braces removed)."""

    def command(match):
        name = match.group(1)
        if name in TEX_WORDS:
            return TEX_WORDS[name]
        if name in TEX_DROPPED:
            return ""
        try:
            return unicodedata.lookup(
                f"GREEK {'CAPITAL' if name[0].isupper() else 'SMALL'} LETTER {name.upper()}"
            )
        except KeyError:
            return name

    return re.sub(r"[${}]", "", re.sub(r"\\([A-Za-z]+)", command, text.replace("\\|", "‖")))


def _figures(run: Run, table: pd.DataFrame, salt: str) -> None:
    """The run's figures: drawn as SVG from its table with the installed experiment's
    FigureSpec, else the PNGs the run wrote beside it; solve checks' ``threshold-*.png`` too."""
    spec = getattr(run.experiment, "figure", None)
    drawn_here = False
    if spec is not None and not table.empty:
        try:
            for number, drawn in enumerate(draw_figures(table, spec)):
                split = ", ".join(f"{a} = {format_value(v)}" for a, v in drawn.split.items())
                panels = ", ".join(dict.fromkeys(p.metric for p in spec.panels))
                alt = (
                    f"{plain_text(spec.title) or run.name}{f' ({split})' if split else ''}: {panels} against {spec.x}, "
                    f"one curve per {spec.curve}"
                )
                run.figures.append(Figure(alt, svg=_svg(drawn.figure, alt, f"{salt}-{number}")))
                plt.close(drawn.figure)
                drawn_here = True
        except UsageError as exc:
            run.warnings.append(f"the figure could not be drawn: {exc}")
    images = [] if drawn_here else sorted(run.path.glob("figure*.png"))
    if images and spec is None:
        run.warnings.append(
            "figures: the images the run wrote (raster), as the experiment is not installed here"
        )
    for image in images + sorted(run.path.glob("threshold-*.png")):
        uri = "data:image/png;base64," + base64.b64encode(image.read_bytes()).decode("ascii")
        run.figures.append(Figure(f"{run.name}: {image.stem}", uri=uri))


def _summaries(run: Run, table: pd.DataFrame) -> None:
    """Per method, every metric it reports summarised as ``dpsim summary --metric M`` does
    (:func:`~dpsim.engine.presentation.summary.summary_table`: mean and 95% interval per combination
    of the axes that vary), one row per combination and one column per metric."""
    if table.empty or "method" not in table:
        return
    varying = [c for c in grid_columns(table) if table[c].nunique() > 1]
    metrics = metric_names(table, declared_metrics(run.experiment))
    for method in sorted(table["method"].unique(), key=str):
        rows = table[table["method"] == method]
        frames = {}
        for metric in metrics:
            if rows[metric].notna().any():
                try:
                    frames[metric] = summary_table(rows, metric, varying, metrics=metrics)
                except UsageError as exc:
                    run.warnings.append(f"no summary of {metric} of {method}: {exc}")
        if frames:
            run.summaries.append((str(method), _joined(frames, varying)))


def _joined(frames: Mapping[str, pd.DataFrame], axes: Sequence[str]) -> pd.DataFrame:
    """One method's per-metric summaries side by side: the ``axes`` columns, ``n`` (the most
    rows of any metric), ``unconverged`` (and ``why``) when recorded, then per metric a
    (mean, ci_low, ci_high) triple in one column."""
    keyed = {
        metric: {tuple(r[a] for a in axes): r for _, r in frame.iterrows()}
        for metric, frame in frames.items()
    }
    keys = list(dict.fromkeys(k for by_key in keyed.values() for k in by_key))
    out = []
    for key in keys:
        found = [by_key[key] for by_key in keyed.values() if key in by_key]
        row = dict(zip(axes, key))
        row["n"] = max(int(r["n"]) for r in found)
        if "unconverged" in found[0]:
            row["unconverged"] = max(int(r["unconverged"]) for r in found)
        if any(r.get("why") for r in found):
            row["why"] = next(r["why"] for r in found if r.get("why"))
        for metric, by_key in keyed.items():
            r = by_key.get(key)
            row[metric] = (
                None if r is None else (float(r["mean"]), float(r["ci_low"]), float(r["ci_high"]))
            )
        out.append(row)
    return pd.DataFrame(out)


def nan_counts(table: pd.DataFrame) -> list[tuple[str, str, int, int]]:
    """(method, metric, NaN rows, rows) for every metric a method reports (some finite or
    infinite value in its rows) that is NaN in some of them: for a folder whose manifest does
    not count them (``diagnostics.nan``, :func:`dpsim.engine.execution.runner.nan_metrics`)."""
    found = []
    if "method" not in table:
        return found
    for method, rows in table.groupby("method", sort=True):
        for metric in table.attrs.get("method_columns", ()):
            if metric not in rows:
                continue
            missing = int(rows[metric].isna().sum())
            if 0 < missing < len(rows):
                found.append((str(method), metric, missing, len(rows)))
    return found


def _warnings(run: Run, table: pd.DataFrame) -> None:
    manifest = run.manifest
    if store.being_written(run.path):
        run.warnings.append(
            "a dpsim run is writing this folder now: the page shows the rows stored so far"
        )
    if not manifest.get("complete", True):
        run.warnings.append(
            "incomplete: the run was interrupted (or is still running); the same `dpsim run` "
            "command finishes it"
        )
    if table.empty:
        run.warnings.append("no rows stored")
    for item in (manifest.get("diagnostics") or {}).get("unconverged", []):
        why = f" ({item['reasons']})" if item.get("reasons") else ""
        run.warnings.append(
            f"{item.get('failed')} of {item.get('fits')} fits of {item.get('method')} did not "
            f"converge{why}; most at {item.get('where')}"
        )
    diagnostics = manifest.get("diagnostics") or {}
    found = (
        [(d["method"], d["metric"], d["nan"], d["rows"]) for d in diagnostics["nan"]]
        if "nan" in diagnostics
        else nan_counts(table)
    )  # the run's own count; none yet (an interrupted run): from the table
    for method, metric, missing, rows in found:
        run.warnings.append(f"{missing} of {rows} rows of {method} have a NaN {metric}")
    if run.experiment is not None:
        from dpsim.engine.storage.provenance import describe, fingerprint

        recorded = manifest.get("code") or {}
        here = fingerprint(run.experiment)
        if recorded.get("hash") and recorded["hash"] != here["hash"]:
            run.warnings.append(
                f"the rows were made by {describe(recorded)}; the description and figures use the "
                f"definition installed here, {describe(here)}"
            )


def gather_run(path: Path, salt: str) -> Run:
    """Everything the page shows of one run folder (read from the folder; the installed
    experiment, when there is one, only describes it and lays its figures out)."""
    manifest = store.read_manifest(path)
    run = Run(Path(path), manifest)
    run.experiment = _installed(manifest)
    if run.experiment is not None:
        from dpsim.engine.presentation.describe import describe

        run.shown = describe(run.experiment, str(manifest.get("source", "")))
    try:
        table = store.load_results(path)
    except (OSError, ValueError) as exc:
        run.warnings.append(f"the results table could not be read: {exc}")
        table = pd.DataFrame()
    _warnings(run, table)
    _figures(run, table, salt)
    _summaries(run, table)
    return run


def gather(path: Path, number: int) -> Source:
    """One PATH of ``dpsim report``.

    Raises:
        UsageError: ``path`` holds no run folder and no ``verdicts.json``.
    """
    path = Path(path)
    folders = run_folders(path)
    verdicts = store.read_json(path / VERDICTS_JSON) if (path / VERDICTS_JSON).is_file() else None
    if not folders and verdicts is None:
        raise UsageError(
            f"{str(path)!r} holds no dpsim run (no manifest.json) and no verify folder "
            f"(no run folders, no {VERDICTS_JSON})"
        )
    return Source(path, [gather_run(f, f"{number}-{i}") for i, f in enumerate(folders)], verdicts)


# ---------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------
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
    """One method's summary table (:func:`_joined`): a metric's cell is its mean and 95% interval."""
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
