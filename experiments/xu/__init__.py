"""xu — "Rate-Optimal Rank Aggregation with Private Pairwise Rankings" (Shirong Xu, Will Wei Sun,
Guang Cheng); its page in
the repository, docs/xu.md (``PAGE``), describes the model, the mechanisms and estimators
as implemented, the predictions checked, and each erratum with the mode chosen for it.

Modules: ``common`` (the shared pipeline: θ* designs, raw wins, the release keyed so that
every mechanism at one ε shares its flips, the ridge M-estimator of eq. (3), the metrics of
docs/xu.md, Metrics), ``scenarios`` (Scenarios I–V, Figs 2–6, and the oracle, classic-RR floor and λ-rule
companions), ``realdata`` (MovieLens, Fig. 7), ``hetero`` (heterogeneous ε, an extension),
``design`` (calibration experiments pinning the θ* designs, the raw wins, the heterogeneous groups, the
MovieLens subsample and every metric against closed forms, with their mutants), ``levels`` (closed forms of the level checks, evaluated from the grid, and a ratio check with a
predicted region), ``mutants`` (plausible bugs the checks must kill), ``audits``
(per-comparison LDP audits).
"""
from . import audits, design, hetero, mutants, realdata, scenarios

TITLE = "Rate-Optimal Rank Aggregation with Private Pairwise Rankings (Xu, Sun, Cheng)"
PAGE = "docs/xu.md"

EXPERIMENTS = [*scenarios.EXPERIMENTS, *realdata.EXPERIMENTS, *hetero.EXPERIMENTS, *design.EXPERIMENTS]
CHECKS = [*scenarios.CHECKS, *realdata.CHECKS, *hetero.CHECKS, *design.CHECKS]
AUDITS = audits.AUDITS
MUTANTS = [*mutants.MUTANTS, *design.MUTANTS]
