"""Noise samplers, privacy calibrations and accounting."""
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
    privatize,
    privatize_all,
    release_per_user,
    rr_pair_counts,
    rr_win_probability,
)

__all__ = ["laplace_noise", "EdgePerturbation", "edge_count_noise_scale",
           "edge_objective_perturbation", "individual_count_noise_scale",
           "individual_objective_perturbation", "one_shot_noise_scale",
           "PROFILES", "PrivacyProfile", "composed_user_budget", "homogeneous_profile", "pad_profile",
           "privacy_G", "privacy_H", "privacy_K", "privacy_profile", "privacy_rho",
           "MECHANISMS", "PairMeans", "classic_rr_mean", "debiased_rr_mean",
           "laplace_pair_mean", "nonprivate_mean", "privatize", "privatize_all", "release_per_user",
           "rr_pair_counts", "rr_win_probability"]
