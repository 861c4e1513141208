"""The experiment layer: grid → generate → privatise → analyse → score → store → summarise → verify.

It knows nothing of any paper: papers live in their own packages (``dpsim.experiments.cai``, …,
or a researcher's study file) and are found through :mod:`dpsim.engine.registry`
(docs/architecture.md).
"""
from dpsim.errors import UsageError
from dpsim.engine.definition import axes
from dpsim.engine.definition.grid import (Cell, CellArrays, Context, Derived, Experiment, FigureSpec, Method, Padding, Panel,
                                   solver_diagnostics)
from dpsim.engine.judgement.checks import (Along, At, Claim, ColumnRatio, Deferred, Difference, Every,
                                     IdenticalAcrossCheck, LinearSlope, Mean, MethodRatio, SliceRatio, Slope, Solve,
                                     ThresholdCollapseCheck, ThresholdScalingCheck, column_ratio_check, comparison_check,
                                     deferred_entries, deferred_table, level_check, linear_slope_check, method_ratio_check, method_ratio_slope_check,
                                     predicted_ratio_check, ratio_check, ratio_slope_check, slope_check,
                                     slope_range_check, trend_check)

__all__ = ["Cell", "CellArrays", "Context", "Derived", "Experiment", "FigureSpec", "Method", "Padding", "Panel", "UsageError", "axes",
           "solver_diagnostics", "Claim", "At", "Every", "Along", "Mean", "MethodRatio", "ColumnRatio", "SliceRatio",
           "Difference", "Slope", "LinearSlope", "Deferred", "deferred_entries", "deferred_table", "slope_check",
           "slope_range_check",
           "trend_check", "linear_slope_check", "comparison_check", "level_check", "ratio_check", "ratio_slope_check",
           "column_ratio_check", "predicted_ratio_check", "method_ratio_check", "method_ratio_slope_check",
           "IdenticalAcrossCheck", "ThresholdCollapseCheck", "Solve", "ThresholdScalingCheck"]
