"""What ``dpsim report``'s page shows, gathered from the folders (:func:`gather`).

Per run folder (:class:`Run`): its manifest, the installed experiment when there is one
(which describes the run and lays its figures out, :func:`gather_run`), its figures drawn as
inline SVG from the stored table (:mod:`dpsim.engine.presentation.plots`; else the images the
run wrote), a summary per method and metric with 95% intervals
(:func:`dpsim.engine.presentation.summary.summary_table`) and its warnings (an incomplete
folder, unconverged fits, NaN metrics, a definition changed since the run); per PATH
(:class:`Source`): its run folders and, for a verify folder, its ``verdicts.json``. It reads
only the folders.

Separate from the page (:mod:`dpsim.engine.presentation.report`), which turns these into
HTML and draws nothing.
"""

from __future__ import annotations

import base64
import html
import io
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from dpsim.errors import UsageError  # noqa: E402
from dpsim.engine.storage import store  # noqa: E402
from dpsim.engine.presentation.labels import format_value  # noqa: E402
from dpsim.engine.presentation.plots import draw_figures  # noqa: E402
from dpsim.engine.presentation.summary import (  # noqa: E402
    declared_metrics,
    grid_columns,
    metric_names,
    summary_table,
)
from dpsim.engine.presentation.verdict_files import VERDICTS_JSON  # noqa: E402

MUTANTS_FOLDER = "mutants"  # verify's runs of mutated experiments (RUNS/mutants/<mutant>/…)


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
