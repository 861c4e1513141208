"""xu's figures: one module per figure or table, each with its Experiments and the checks read on
them. ``scenarios`` (Scenarios I–V, Figs 2–6, and the oracle, classic-RR floor and λ-rule
companions, with the level checks of the mechanisms; their closed forms are ``levels``),
``realdata`` (MovieLens, Fig. 7), ``hetero`` (heterogeneous ε, an extension), ``design``
(calibration experiments pinning the θ* designs, the raw wins, the heterogeneous groups, the
MovieLens subsample and every metric against closed forms)."""

from . import design, hetero, realdata, scenarios

EXPERIMENTS = [
    *scenarios.EXPERIMENTS,
    *realdata.EXPERIMENTS,
    *hetero.EXPERIMENTS,
    *design.EXPERIMENTS,
]
CHECKS = [*scenarios.CHECKS, *realdata.CHECKS, *hetero.CHECKS, *design.CHECKS]
