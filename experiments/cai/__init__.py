"""cai — "Optimal Differentially Private Ranking from Pairwise Comparisons" (T. Tony Cai, Abhinav
Chakraborty, Yichen Wang); its page in
the repository, docs/cai.md (``PAGE``), describes the model, the mechanisms and estimators
as implemented, the predictions checked, and each erratum with the mode chosen for it.

Modules: ``edge`` (edge DP, Figures 1–3, rate checks), ``individual`` (Figure 4 with the one-shot
baseline, individual DP Figures 5–7, real data Figure 8), ``scaling`` (individual-DP rates in m
and L, edge vs individual at matched comparisons), ``threshold`` (the top-k phase transition),
``audits`` (privacy audits of Algorithms 2 and 3), ``levels`` and ``calibrations`` (level checks
pinning each mechanism's calibration, and the mutants they catch), ``design`` (level checks
pinning the data-generating design and the error metrics, their calibration experiment and mutants),
``published`` (the reproduction against the authors' released results of Figs 1–3).
"""
from . import audits, calibrations, design, edge, individual, published, scaling, threshold

TITLE = "Optimal Differentially Private Ranking from Pairwise Comparisons (Cai, Chakraborty, Wang)"
PAGE = "docs/cai.md"

EXPERIMENTS = [*edge.EXPERIMENTS, *individual.EXPERIMENTS, *scaling.EXPERIMENTS, *threshold.EXPERIMENTS, *design.EXPERIMENTS,
               *published.EXPERIMENTS]
CHECKS = [*edge.CHECKS, *individual.CHECKS, *scaling.CHECKS, *threshold.CHECKS, *calibrations.CHECKS, *design.CHECKS,
          *published.CHECKS]
MUTANTS = [*calibrations.MUTANTS, *design.MUTANTS]
AUDITS = audits.AUDITS
