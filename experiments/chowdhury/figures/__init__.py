"""chowdhury's figures: one module per figure, table or calibration experiment, each with its
Experiments and the checks read on them (docs/chowdhury.md, Experiments as run).

* ``fig1``: Figure 1 in the exact reading (primary) and the SGD reading (secondary);
* ``rates``: the grids of docs/chowdhury.md, Predictions (larger n, an ε sweep, a d sweep, K ∈ {2, 4, 8});
* ``lower_bound``: Thm 3.2 on its hypercube instance (P13);
* ``releases``: the K-RR and objective-perturbation releases alone, for the level checks;
* ``design``: the calibration experiments of the θ* designs, the features, the labels and the metrics.
"""

from . import design, fig1, lower_bound, rates, releases

EXPERIMENTS = [
    *fig1.EXPERIMENTS,
    *rates.EXPERIMENTS,
    *lower_bound.EXPERIMENTS,
    *releases.EXPERIMENTS,
    *design.EXPERIMENTS,
]
CHECKS = [*fig1.CHECKS, *rates.CHECKS, *lower_bound.CHECKS, *releases.CHECKS, *design.CHECKS]
