"""Folders that tests/engine/test_report.py and tests/engine/test_report_browser.py build their pages from:
a small study file (Laplace noise of scale 2/ε on win counts, a level check against 8/ε² and
two mutants: one its check kills, one too small to be seen), verified with ``--mutants``, and
run once with ``dpsim run`` (which draws the figure's PNG beside the table)."""

from __future__ import annotations

from pathlib import Path

from dpsim.cli import main
from laplace_study import study_text

STUDY = study_text(
    "pagestudy",
    n_items=30,
    reps=60,
    region=(0.8, 1.2),
    figure=True,
    tail="""
MUTANTS = [Mutant("pagestudy-release-at-2eps", "Laplace at 2ε", ("pagestudy",), scaled_analysis({"eps": 2.0})),
           Mutant("pagestudy-factor-1.01", "scale off by 1 %: below what 60 replicates resolve", ("pagestudy",),
                  scaled_analysis({"eps": 1.01}))]
""",
)


def build(root: Path) -> tuple[Path, Path]:
    """Write the study into ``root``, verify it with mutants into ``root/v`` and run it into
    ``root/run``; returns (verify folder, run folder). Exit statuses are checked: verify
    exits 1 (a mutant survives), run 0."""
    root = Path(root)
    study = root / "study.py"
    study.write_text(STUDY)
    verify, run = root / "v", root / "run"
    assert main(["verify", str(study), "--mutants", "--runs", str(verify), "--no-progress"]) == 1
    assert main(["run", str(study), "--out", str(run), "--no-progress"]) == 0
    return verify, run
