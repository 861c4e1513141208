"""Data-generating processes and θ* designs.

Every generator is a pure function of a PRNG key and parameters and returns the
sufficient statistics an estimator needs; all are jit- and vmap-compatible.
Win-count convention used everywhere: ``W[i, j]`` = number of times item i beat item j.
"""
from dpsim.models.links import LOGISTIC, PROBIT, Link, get_link
from dpsim.models.btl import (
    centre,
    pair_bits,
    real_items,
    sample_er_comparisons,
    sample_er_graph,
    sample_er_win_counts,
    theta_cai_design,
    theta_evenly_spaced,
    theta_two_block,
    theta_uniform,
    top_k_size,
    true_top_k_mask,
    win_counts,
)
from dpsim.models.complete_btl import (
    condition_number,
    gaps_sorted,
    n_items_of_pairs,
    pair_win_probabilities,
    sample_pair_wins,
    sample_rankings_per_user,
    theta_evenly_spaced_permuted,
    theta_uniform_centred,
)
from dpsim.models.rasch import (
    Responses,
    authors_difficulties,
    expected_differential_counts,
    rasch_abilities,
    rasch_difficulties,
    rasch_probabilities,
    sample_rasch_responses,
    sample_rasch_responses_per_user,
)
from dpsim.models.linear_btl import (
    ChoiceData,
    PreferenceData,
    ThetaDraw,
    default_radius,
    link_scores,
    preference_probability,
    sample_features,
    sample_labels,
    sample_linear_btl,
    sample_plackett_luce,
    sample_plackett_luce_labels,
    sample_theta_star,
    theta_faithful,
    theta_theory,
)
from dpsim.models.individual import (
    UserComparisons,
    aggregate_user_comparisons,
    sample_user_comparisons,
    sample_user_comparisons_per_user,
    uniform_multinomial,
)

__all__ = [
    "LOGISTIC", "PROBIT", "Link", "get_link",
    "centre", "pair_bits", "real_items", "sample_er_comparisons", "sample_er_graph", "sample_er_win_counts", "theta_cai_design", "theta_evenly_spaced",
    "theta_two_block", "theta_uniform", "top_k_size", "true_top_k_mask", "win_counts",
    "UserComparisons", "aggregate_user_comparisons", "sample_user_comparisons",
    "sample_user_comparisons_per_user", "uniform_multinomial",
    "condition_number", "gaps_sorted", "n_items_of_pairs", "pair_win_probabilities", "sample_pair_wins",
    "sample_rankings_per_user", "theta_evenly_spaced_permuted", "theta_uniform_centred",
    "Responses", "authors_difficulties", "expected_differential_counts", "rasch_abilities",
    "rasch_difficulties", "rasch_probabilities", "sample_rasch_responses",
    "sample_rasch_responses_per_user",
    "ChoiceData", "PreferenceData", "ThetaDraw", "default_radius", "link_scores",
    "preference_probability", "sample_features", "sample_labels", "sample_linear_btl",
    "sample_plackett_luce", "sample_plackett_luce_labels", "sample_theta_star", "theta_faithful",
    "theta_theory",
]
