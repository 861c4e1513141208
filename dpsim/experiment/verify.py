"""``dpsim verify``: run what the checks need (resuming), then judge them on exactly the
replicates asked for.

Runs go to ``runs/verify/<experiment>`` by default, apart from the ``dpsim run`` default
``runs/<experiment>``, so a study extended by hand (``--set link=probit``) is never mixed
into a check. With ``reps`` = R each check sees replicates 0 … R−1 exactly: missing ones are
computed, extra ones already on disk are left out (and the line says so).
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Mapping, Sequence

from dpsim.errors import UsageError
from dpsim.experiment.checks import CheckResult
from dpsim.experiment.runner import run_experiment
from dpsim.experiment.store import load_results

DEFAULT_RUNS = Path("runs") / "verify"


def run_directory(runs: Path, experiment: str, seed: int) -> Path:
    return Path(runs) / (experiment if seed == 0 else f"{experiment}-seed{seed}")


def verify(checks: Mapping[str, object], experiments: Mapping[str, object], names: Sequence[str] = (),
           *, runs: Path = DEFAULT_RUNS, seed: int = 0, reps: int | None = None,
           progress: bool = True, watchdog: float | None = None, sources: Mapping[str, str] | None = None,
           echo=None) -> tuple[list[CheckResult], Counter]:
    """Evaluate the named checks (all when ``names`` is empty), one experiment at a time: its
    runs are computed (what is missing), its checks judged and printed at once.

    Returns:
        (results, verdict counts). A check whose evaluation raises a UsageError (e.g. it
        would pool an axis) is reported as a FAIL line with the message.
    """
    echo = echo or (lambda line: print(line, flush=True))
    unknown = [n for n in names if n not in checks]
    if unknown:
        raise UsageError(f"unknown check {unknown[0]!r}; see `dpsim list`")
    selected = [checks[n] for n in (names or list(checks))]
    for check in selected:
        if check.experiment not in experiments:
            raise UsageError(f"check {check.name!r} needs experiment {check.experiment!r}, which is not defined")
    by_experiment: dict[str, list] = {}
    for check in selected:
        by_experiment.setdefault(check.experiment, []).append(check)
    results, counts = [], Counter()
    # one experiment at a time: run what it needs, judge its checks and print them at once,
    # then let its table go (a full verify holds one experiment's rows, not every one's)
    for name, its_checks in by_experiment.items():
        experiment = experiments[name]
        want = experiment.reps if reps is None else reps
        out = run_directory(runs, experiment.name, seed)
        run_experiment(experiment, reps=want, seed=seed, out=out, progress=progress, watchdog=watchdog,
                       source=(sources or {}).get(experiment.name))
        table = load_results(out)
        extra = int((table["rep"] >= want).sum())
        table = table[table["rep"] < want]
        for check in its_checks:
            try:
                result = check.evaluate(table)
            except UsageError as exc:
                result = CheckResult(check.name, "FAIL", "-", "-", f"cannot be evaluated: {exc}")
            if extra:
                result = CheckResult(**{**result.__dict__, "note": result.note +
                                        f"  [R = {want}; {extra} rows of further replicates on disk left out]"})
            echo(result.line())
            results.append(result)
            counts[result.verdict] += 1
    echo(summary_line(counts))
    return results, counts


def summary_line(counts: Counter) -> str:
    """``N passed, N failed, N inconclusive`` (and refused and report-only when present)."""
    parts = [f"{counts['PASS']} passed", f"{counts['FAIL']} failed", f"{counts['INCONCLUSIVE']} inconclusive"]
    if counts["REFUSED"]:
        parts.append(f"{counts['REFUSED']} refused (unconverged fits)")
    if counts["INFO"]:
        parts.append(f"{counts['INFO']} reported only")
    return ", ".join(parts)
