"""toy's checks: the figures' own, and the paper-wide level checks that pin each mechanism's
calibration with a prediction computed independently of the mechanism's code."""

from __future__ import annotations

from dpsim.engine import level_check

from . import figures
from .figures.noise import NOISE

LEVEL_CHECKS = [
    level_check(
        "toy-noise-variance",
        NOISE.name,
        "noise_ms",
        "noisy",
        lambda point: 8.0 / point["eps"] ** 2,
        0.8,
        1.25,
        where={"eps": [0.5, 1.0, 2.0]},
        at=("eps",),
        formula="8/ε²",
        description="the released noise has the variance of Laplace(2/ε): 2·(2/ε)²",
        pins=("mechanism:laplace-counts",),
    ),
]

CHECKS = [*figures.CHECKS, *LEVEL_CHECKS]
