"""Theoretical rates, one function per theorem, each citing its paper, theorem and equation.

One module per paper (``dpsim.theory.cai``, ``.xu``, ``.nguyen``, ``.chowdhury``), so that the
papers' rates live side by side without one file growing with every paper; the shared
slope helpers are here. The cai rates are re-exported for backward compatibility
(``dpsim.theory.edge_dp_rate``).

"≲" in the papers hides universal constants, so a rate is compared with simulations
through its *slopes* (d log rate / d log x), not its level.
"""
from dpsim.theory.slopes import fitted_rate_slope, log_slope, loglog_fit
from dpsim.theory.cai import (
    edge_dp_crossover_eps,
    edge_dp_privacy_term,
    edge_dp_rate,
    edge_dp_statistical_term,
    individual_dp_comparisons_per_item,
    individual_dp_privacy_term,
    individual_dp_rate,
    individual_dp_rate_explicit_l,
    individual_dp_stated_statistical_term,
    individual_dp_statistical_term,
    individual_to_edge_privacy_ratio,
    matched_edge_probability,
)

__all__ = [
    "log_slope", "fitted_rate_slope", "loglog_fit",
    "edge_dp_crossover_eps", "edge_dp_privacy_term", "edge_dp_rate", "edge_dp_statistical_term",
    "individual_dp_comparisons_per_item", "individual_dp_privacy_term", "individual_dp_rate",
    "individual_dp_rate_explicit_l", "individual_dp_stated_statistical_term",
    "individual_dp_statistical_term", "individual_to_edge_privacy_ratio", "matched_edge_probability",
]
