"""The experiment layer: grid → generate → analyse → score → store → summarise → verify.

It knows nothing of any paper: papers live in the top-level ``experiments`` package and
are assembled from the library (DESIGN.md, "Layout").
"""
from dpsim.experiment.grid import Experiment, FigureSpec, Panel, UsageError
from dpsim.experiment.checks import ComparisonCheck, SlopeCheck, ThresholdCollapseCheck, TrendCheck

__all__ = ["Experiment", "FigureSpec", "Panel", "UsageError", "SlopeCheck", "TrendCheck", "ComparisonCheck",
           "ThresholdCollapseCheck"]
