"""chowdhury — "Differentially Private Reward Estimation with Preference Feedback" (Sayak Ray
Chowdhury, Xingyu Zhou, Nagarajan Natarajan); its page in the repository,
docs/chowdhury.md (``PAGE``), describes the model, the mechanisms and estimators as implemented,
the predictions checked, and each erratum with the mode chosen for it.

Modules: ``common`` (axes, θ* designs, data, the exact and SGD methods, per-replicate
(A1)–(A3) predictions; the optimiser fork of docs/chowdhury.md, Experiments as run), ``fig1`` (Figure 1 in the exact
reading, primary, and the SGD reading, secondary; the checks of docs/chowdhury.md, Experiments
as run), ``rates`` (the grids of docs/chowdhury.md,
Predictions: larger n, an ε sweep, a d sweep, K ∈ {2, 4, 8}), ``lower_bound`` (Thm 3.2 on its
hypercube instance, P13), ``levels`` (level checks pinning each mechanism's calibration, the
K-RR release experiment and the mutants), ``audits`` (RR, K-RR and objective
perturbation), ``design`` (level checks pinning the θ* designs, the features, the labels and
the error metrics, their calibration experiment and mutants).
"""
from . import audits, design, fig1, levels, lower_bound, rates

TITLE = "Differentially Private Reward Estimation with Preference Feedback (Chowdhury, Zhou, Natarajan)"
PAGE = "docs/chowdhury.md"

EXPERIMENTS = [*fig1.EXPERIMENTS, *rates.EXPERIMENTS, *lower_bound.EXPERIMENTS, *levels.EXPERIMENTS, *design.EXPERIMENTS]
CHECKS = [*fig1.CHECKS, *rates.CHECKS, *lower_bound.CHECKS, *levels.CHECKS, *design.CHECKS]
MUTANTS = [*levels.MUTANTS, *design.MUTANTS]
AUDITS = audits.AUDITS
