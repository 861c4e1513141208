"""``dpsim verify``: run the experiments that checks need (resuming), then evaluate them."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from dpsim.experiment.errors import UsageError
from dpsim.experiment.runner import run_experiment
from dpsim.experiment.store import load_results


def verify(checks: Mapping[str, object], experiments: Mapping[str, object], names: Sequence[str] = (),
           *, runs: Path = Path("runs"), seed: int = 0, reps: int | None = None,
           progress: bool = True, watchdog: float | None = None, sources: Mapping[str, str] | None = None,
           echo=print) -> bool:
    """Evaluate the named checks (all when ``names`` is empty); True when all pass."""
    unknown = [n for n in names if n not in checks]
    if unknown:
        raise UsageError(f"unknown check {unknown[0]!r}; see `dpsim list`")
    selected = [checks[n] for n in (names or list(checks))]
    tables = {}
    for check in selected:
        if check.experiment not in tables:
            experiment = experiments[check.experiment]
            out = Path(runs) / (experiment.name if seed == 0 else f"{experiment.name}-seed{seed}")
            run_experiment(experiment, reps=reps, seed=seed, out=out, progress=progress, watchdog=watchdog,
                           source=(sources or {}).get(experiment.name))
            tables[check.experiment] = load_results(out)
    all_passed = True
    for check in selected:
        result = check.evaluate(tables[check.experiment])
        echo(result.line())
        all_passed &= result.passed or getattr(check, "report_only", False)
    return all_passed
