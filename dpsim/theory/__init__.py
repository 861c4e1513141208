"""Theoretical rates, one function per theorem, each citing its paper, theorem and equation.

One module per paper (``dpsim.theory.cai``, ``.xu``, ``.nguyen``, ``.chowdhury``), so that the
papers' rates live side by side without one file growing with every paper; the shared
slope helpers are here.

"≲" in the papers hides universal constants, so a rate is compared with simulations
through its *slopes* (d log rate / d log x), not its level.
"""

from dpsim.theory.slopes import fitted_rate_slope, log_slope, loglog_fit

__all__ = ["log_slope", "fitted_rate_slope", "loglog_fit"]
