"""The experiment layer: grid → generate → privatise → analyse → score → store → summarise → verify.

It knows nothing of any paper: papers live in their own packages (``dpsim.experiments.cai``, …,
or a researcher's study file) and are found through :mod:`dpsim.experiment.registry`
(DESIGN.md, "Layout").
"""
from dpsim.errors import UsageError
from dpsim.experiment import axes
from dpsim.experiment.grid import (Context, Derived, Experiment, FigureSpec, Method, Padding, Panel,
                                   solver_diagnostics)
from dpsim.experiment.checks import (Along, At, Claim, ComparisonCheck, Difference, Every, EveryPointCheck,
                                     IdenticalAcrossCheck, LevelCheck, LinearSlopeCheck, Mean, MethodRatio,
                                     MeanRatioCheck, MethodRatioSlopeCheck, PairedDifference, PredictedRatioCheck,
                                     RatioCheck, RatioOfMeans, RatioSlopeCheck, SlopeCheck, SlopeRangeCheck,
                                     ThresholdCollapseCheck, TrendCheck)

__all__ = ["Context", "Derived", "Experiment", "FigureSpec", "Method", "Padding", "Panel", "UsageError", "axes",
           "solver_diagnostics", "SlopeCheck", "SlopeRangeCheck", "TrendCheck", "LinearSlopeCheck",
           "ComparisonCheck", "EveryPointCheck", "PairedDifference", "RatioOfMeans", "RatioCheck",
           "RatioSlopeCheck", "MeanRatioCheck", "PredictedRatioCheck", "MethodRatioSlopeCheck",
           "IdenticalAcrossCheck", "ThresholdCollapseCheck", "LevelCheck", "Claim", "Mean", "MethodRatio",
           "Difference", "At", "Every", "Along"]
