"""toy's first figure: the top-k error of the noisy win counts against ε, with the raw counts
as the non-private reference."""

from __future__ import annotations

import math

from dpsim.engine import Experiment, FigureSpec, Panel, Tuning, trend_check

from .. import methods, model

NOISE = Experiment(
    name="toy-noise",
    title="toy: top-k error of noisy win counts against ε",
    axes={"n_items": [8], "k": [2], "p": [1.0], "eps": [0.5, 1.0, 2.0, math.inf]},
    shape_axes=("n_items", "k"),
    analysis_axes=("eps",),
    truth=model.truth,
    generate=model.generate,
    privatise=methods.privatise,
    methods=methods.METHODS,
    reps=200,
    derived=(methods.SCALE,),
    validate_point=model.require_k_below_n,
    figure=FigureSpec(
        x="eps",
        curve="method",
        xlabel="$\\epsilon$",
        curve_label="method",
        logx=True,
        panels=(Panel("relative_hamming", None, "relative Hamming error"),),
        title="toy: top-k error against ε",
    ),
    tuning=Tuning(lane_bytes=lambda shape: 8 * shape["n_items"] ** 2),
    description="the template's figure: replace it with one of your paper's",
)

EXPERIMENTS = [NOISE]
CHECKS = [
    trend_check(
        "toy-noise-error-falls-with-eps",
        NOISE.name,
        "relative_hamming",
        "noisy",
        "eps",
        -1,
        where={"eps": [0.5, 1.0, 2.0]},
        log_y=False,
        description="the noisy top-k error decreases in ε",
    ),
]
