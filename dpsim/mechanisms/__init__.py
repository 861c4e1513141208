"""Every release, with its noise samplers, privacy calibrations and accounting: a mechanism draws
the noise and returns the release (a value or a small NamedTuple) that an estimator takes as input."""
from dpsim.mechanisms.laplace import laplace_noise
from dpsim.mechanisms.calibration import (
    EdgePerturbation,
    edge_count_noise_scale,
    edge_objective_perturbation,
    individual_count_noise_scale,
    individual_objective_perturbation,
    one_shot_noise_scale,
)
from dpsim.mechanisms.privacy_profile import (
    PROFILES,
    PrivacyProfile,
    composed_user_budget,
    homogeneous_profile,
    pad_profile,
    privacy_G,
    privacy_H,
    privacy_K,
    privacy_profile,
    privacy_rho,
)
from dpsim.mechanisms.pairwise_ldp import (
    MECHANISMS,
    PairMeans,
    classic_rr_mean,
    debiased_rr_mean,
    laplace_pair_mean,
    nonprivate_mean,
    privatise,
    privatise_all,
    release_per_user,
    rr_pair_counts,
    rr_win_probability,
)

from dpsim.mechanisms.discrete import (
    discrete_gaussian,
    discrete_gaussian_pmf,
    discrete_gaussian_with_flag,
    discrete_laplace,
    discrete_laplace_pmf,
)
from dpsim.mechanisms.zcdp import (
    CONVERSIONS,
    dp_to_zcdp_bun_steinke,
    dp_to_zcdp_cks,
    dp_to_zcdp_paper,
    paper_epsilon0,
    zcdp_delta_cks,
    zcdp_rho,
    zcdp_to_dp,
    zcdp_to_dp_bun_steinke,
    zcdp_to_dp_cks,
)
from dpsim.mechanisms.shuffle import randomize_responses, shuffle_epsilon, shuffle_rr_epsilon
from dpsim.mechanisms.sparsify import (
    GraphDraw,
    dense_item_graph,
    er_item_graph,
    sparsification_graph,
    sparsification_p0,
)
from dpsim.mechanisms.count_noise import (
    ACCOUNTING_MODES,
    count_sensitivity,
    gaussian_count_sigma,
    laplace_count_scale,
    PrivateCounts,
    private_differential_counts,
    privatise_counts,
)
from dpsim.mechanisms.objective_perturbation import (
    GaussianPerturbation,
    feature_bound_from_data,
    gaussian_objective_perturbation,
    gaussian_mechanism_delta,
    gaussian_mechanism_epsilon,
    label_dp_noise_scale,
    label_dp_privacy_exponent,
    perturbation_noise,
    perturbation_noise_scale,
    standard_dp_min_ridge,
    standard_dp_noise_scale,
    standard_dp_t1_exponent,
    standard_dp_t2_exponent,
    theory_ridge,
)
from dpsim.mechanisms.btl_perturbation import (
    LaplacePerturbation,
    objective_perturbation_edge,
    objective_perturbation_individual,
)
from dpsim.mechanisms.noisy_counts import noisy_counts_edge, noisy_counts_individual
from dpsim.mechanisms.one_shot import OneShotScores, one_shot_scores

__all__ = ["laplace_noise", "EdgePerturbation", "edge_count_noise_scale",
           "edge_objective_perturbation", "individual_count_noise_scale",
           "individual_objective_perturbation", "one_shot_noise_scale",
           "PROFILES", "PrivacyProfile", "composed_user_budget", "homogeneous_profile", "pad_profile",
           "privacy_G", "privacy_H", "privacy_K", "privacy_profile", "privacy_rho",
           "MECHANISMS", "PairMeans", "classic_rr_mean", "debiased_rr_mean",
           "laplace_pair_mean", "nonprivate_mean", "privatise", "privatise_all", "release_per_user",
           "rr_pair_counts", "rr_win_probability",
           "discrete_gaussian", "discrete_gaussian_pmf", "discrete_gaussian_with_flag",
           "discrete_laplace", "discrete_laplace_pmf", "CONVERSIONS", "dp_to_zcdp_bun_steinke",
           "dp_to_zcdp_cks", "dp_to_zcdp_paper", "paper_epsilon0", "zcdp_delta_cks", "zcdp_rho",
           "zcdp_to_dp", "zcdp_to_dp_bun_steinke", "zcdp_to_dp_cks", "randomize_responses",
           "shuffle_epsilon", "shuffle_rr_epsilon", "GraphDraw", "dense_item_graph",
           "er_item_graph", "sparsification_graph", "sparsification_p0", "ACCOUNTING_MODES",
           "count_sensitivity", "gaussian_count_sigma", "laplace_count_scale", "privatise_counts",
           "PrivateCounts", "private_differential_counts",
           "feature_bound_from_data", "gaussian_mechanism_delta", "gaussian_mechanism_epsilon",
           "label_dp_noise_scale", "label_dp_privacy_exponent", "perturbation_noise",
           "perturbation_noise_scale", "standard_dp_min_ridge", "standard_dp_noise_scale",
           "standard_dp_t1_exponent", "standard_dp_t2_exponent", "theory_ridge",
           "GaussianPerturbation", "gaussian_objective_perturbation", "LaplacePerturbation",
           "objective_perturbation_edge", "objective_perturbation_individual", "noisy_counts_edge",
           "noisy_counts_individual", "OneShotScores", "one_shot_scores"]
