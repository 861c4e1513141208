"""The engine: grid → generate → privatise → analyse → score → store → summarise → verify.

It knows nothing of any paper: papers live in their own packages (``dpsim.experiments.cai``, …,
or a researcher's study file) and are found through :mod:`dpsim.engine.registry`
(docs/architecture.md).
"""

from dpsim.errors import UsageError
from dpsim.engine.definition import axes
from dpsim.engine.definition.experiment import (
    Cell,
    CellArrays,
    Context,
    Derived,
    Experiment,
    Keys,
    Method,
    Padding,
    Tuning,
    solver_diagnostics,
)
from dpsim.engine.definition.figure import FigureSpec, Panel
from dpsim.engine.judgement.checks import (
    Along,
    At,
    Claim,
    Every,
    IdenticalAcrossCheck,
    column_ratio_check,
    comparison_check,
    level_check,
    linear_slope_check,
    method_ratio_check,
    method_ratio_slope_check,
    predicted_ratio_check,
    ratio_check,
    ratio_slope_check,
    slope_check,
    slope_range_check,
    trend_check,
)
from dpsim.engine.judgement.published import Published, PublishedCheck, published_check
from dpsim.engine.judgement.thresholds import Solve, ThresholdCollapseCheck, ThresholdScalingCheck
from dpsim.engine.judgement.statistics import (
    ColumnRatio,
    Difference,
    LinearSlope,
    Mean,
    MethodRatio,
    SliceRatio,
    Slope,
)
from dpsim.engine.judgement.deferred import Deferred, deferred_entries, deferred_table

__all__ = [
    "Cell",
    "CellArrays",
    "Context",
    "Derived",
    "Experiment",
    "FigureSpec",
    "Keys",
    "Method",
    "Padding",
    "Panel",
    "Tuning",
    "UsageError",
    "axes",
    "solver_diagnostics",
    "Claim",
    "At",
    "Every",
    "Along",
    "Mean",
    "MethodRatio",
    "ColumnRatio",
    "SliceRatio",
    "Difference",
    "Slope",
    "LinearSlope",
    "Deferred",
    "deferred_entries",
    "deferred_table",
    "slope_check",
    "slope_range_check",
    "trend_check",
    "linear_slope_check",
    "comparison_check",
    "level_check",
    "ratio_check",
    "ratio_slope_check",
    "column_ratio_check",
    "predicted_ratio_check",
    "method_ratio_check",
    "method_ratio_slope_check",
    "IdenticalAcrossCheck",
    "ThresholdCollapseCheck",
    "Solve",
    "ThresholdScalingCheck",
    "Published",
    "PublishedCheck",
    "published_check",
]
