"""The verdict files of ``dpsim verify``.

Every ``dpsim verify`` writes, beside its runs (the ``--runs`` folder), ``verdicts.json`` and
``verdicts.csv``: one record per check (:func:`verdict_records`) with its experiment, claim,
statistic, estimate, 95% interval, predicted region, verdict, the family-wise rule (family
size m, the points K the check judges, the normal quantiles of its PASS and FAIL intervals),
the replicates behind it and its note. With ``--mutants`` the JSON also holds each mutant's
outcome and the kill matrix (:func:`kill_records`: mutant × check → killed or not), written
as ``kill-matrix.csv`` too.

Separate from the page (:mod:`dpsim.engine.presentation.report`), which reads
``verdicts.json`` back: writing the files needs no figure and no HTML.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Mapping, Sequence

from dpsim.engine.storage import store
from dpsim.engine.presentation.summary import Z95
from dpsim.engine.judgement.verdicts import family_z

VERDICTS_JSON = "verdicts.json"
VERDICTS_CSV = "verdicts.csv"
KILLS_CSV = "kill-matrix.csv"
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
