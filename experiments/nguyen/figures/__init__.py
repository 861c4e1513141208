"""nguyen's figures: one module per figure or group of figures, each with its Experiments and the
checks read on them (docs/nguyen.md, Predictions): ``synthetic`` (Figure 1), ``real`` (Figures 2–3
and supplementary Figure 1), ``rates`` (the rate predictions R1–R10), ``topk`` (the top-K phase
transition, R6), ``design`` (the calibration experiment of the Rasch design, its sampling and the ℓ2
scoring modes, with its level checks and mutants); ``claims`` holds the check kinds they share.
"""

from . import design, rates, real, synthetic, topk

EXPERIMENTS = [
    *synthetic.EXPERIMENTS,
    *real.EXPERIMENTS,
    *rates.EXPERIMENTS,
    *topk.EXPERIMENTS,
    *design.EXPERIMENTS,
]
CHECKS = [*synthetic.CHECKS, *real.CHECKS, *rates.CHECKS, *topk.CHECKS, *design.CHECKS]
