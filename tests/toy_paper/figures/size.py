"""The toy paper's second figure, deliberately not named after the paper (``noisy-borda-size``): a
paper's items are its own by registration, not by a name prefix (``dpsim list toy`` lists it)."""

from __future__ import annotations

from dpsim.engine import Experiment, FigureSpec, Panel, Tuning

from .. import methods, model

SIZE = Experiment(
    name="noisy-borda-size",
    title="toy: noisy and raw win counts against n",
    axes={"n_items": [6, 10], "k": [2], "p": [0.5, 1.0], "eps": [1.0]},
    shape_axes=("n_items", "k"),
    analysis_axes=("eps",),
    truth=model.truth,
    generate=model.generate,
    privatise=methods.privatise,
    methods=methods.METHODS,
    reps=100,
    derived=(methods.SCALE,),
    validate_point=model.require_k_below_n,
    figure=FigureSpec(
        x="n_items",
        curve="method",
        xlabel="$n$",
        curve_label="method",
        panels=(Panel("relative_hamming", None, "relative Hamming error", each=("p",)),),
        title="toy: top-k error against n",
    ),
    tuning=Tuning(lane_bytes=lambda shape: 8 * shape["n_items"] ** 2),
    description="a toy paper's experiment not named after its paper (tests/toy_paper)",
)

EXPERIMENTS = [SIZE]
CHECKS: list = []
