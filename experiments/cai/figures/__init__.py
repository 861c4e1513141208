"""cai's figures: one module per figure, table or calibration experiment, each with its Experiments
and the checks read on them (docs/cai.md, Experiments as run).

* ``edge``: edge DP, Figures 1–3 and the edge-DP rate experiments;
* ``individual``: Figure 4 with the one-shot baseline, individual DP Figures 5–7, real data Figure 8;
* ``scaling``: individual-DP rates in m and L, edge vs individual DP at matched comparisons;
* ``threshold``: the top-k phase transition;
* ``design``: the calibration experiments of the data-generating designs and the error metrics;
* ``published``: the reproduction against the authors' released results of Figures 1–3.
"""

from . import design, edge, individual, published, scaling, threshold

EXPERIMENTS = [
    *edge.EXPERIMENTS,
    *individual.EXPERIMENTS,
    *scaling.EXPERIMENTS,
    *threshold.EXPERIMENTS,
    *design.EXPERIMENTS,
    *published.EXPERIMENTS,
]
CHECKS = [
    *edge.CHECKS,
    *individual.CHECKS,
    *scaling.CHECKS,
    *threshold.CHECKS,
    *design.CHECKS,
    *published.CHECKS,
]
