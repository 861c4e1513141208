"""nguyen — "Optimal and Private Learning from Human Response Data" (Duc Nguyen, Anderson Y.
Zhang, AISTATS 2023); its page in
the repository, docs/nguyen.md (``PAGE``), describes the model, the mechanisms and estimators
as implemented, the predictions checked, and each erratum with the mode chosen for it.

Modules: ``common`` (modes, privacy parameters, the five methods), ``checks`` (check classes
the engine lacks), ``synthetic`` (Figure 1), ``real`` (Figures 2–3 and supplementary Figure
1), ``rates`` (the rate predictions R1–R10 of docs/nguyen.md, Predictions), ``topk`` (the top-K phase transition,
R6), ``levels`` (level checks that pin every mechanism's calibration), ``mutants`` (plausible
calibration bugs the checks must catch), ``audits`` (privacy audits of every mechanism), ``design`` (level checks pinning the
Rasch design, its sampling and the ℓ2 scoring modes, their calibration experiment and mutants).
"""
from . import audits, design, levels, mutants, rates, real, synthetic, topk

TITLE = "Optimal and Private Learning from Human Response Data (Nguyen, Zhang)"
PAGE = "docs/nguyen.md"

EXPERIMENTS = [*synthetic.EXPERIMENTS, *real.EXPERIMENTS, *rates.EXPERIMENTS, *topk.EXPERIMENTS, *design.EXPERIMENTS]
CHECKS = [*synthetic.CHECKS, *real.CHECKS, *rates.CHECKS, *topk.CHECKS, *levels.CHECKS, *design.CHECKS]
MUTANTS = [*mutants.MUTANTS, *design.MUTANTS]
AUDITS = audits.AUDITS
