"""xu's checks: every figure module's own, in the figures' order. The paper-wide level checks that
pin each mechanism's calibration and the estimator's level (``LEVEL_CHECKS``) are read on the
companion experiments of :mod:`.figures.scenarios` and listed there, with their closed forms in
:mod:`.figures.levels`, written from the paper's formulas without the library's helpers."""

from __future__ import annotations

from . import figures

CHECKS = [*figures.CHECKS]
