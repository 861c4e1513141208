"""Estimators: maps from a mechanism's release (:mod:`dpsim.mechanisms`) or non-private sufficient
statistics to θ̂ or a top-k set. No estimator draws privacy noise."""
from dpsim.estimators.fit import Fit
from dpsim.estimators.btl_mle import (
    SCORE_TIE_TOL,
    btl_gradient,
    btl_neg_log_likelihood,
    btl_objective,
    penalised_mle,
    perturbed_mle,
)
from dpsim.estimators.debiased_m import (
    borda_scores,
    classic_rr_mle,
    debiased_m_estimator,
    estimated_top_k_mask,
    ridge_lambda,
    tied_ranks,
    win_value_matrix,
)
from dpsim.estimators.topk import top_k_mask
from dpsim.estimators.individual import (
    guarded_penalised_mle,
    guarded_perturbed_mle,
    unpenalised_mle,
)
from dpsim.estimators.linear_btl import (
    logistic_loss,
    mle,
    objective_perturbation,
    rr_debiased,
    rr_debiased_loss,
    rr_debiased_loss_label_form,
    rr_naive_loss,
    rr_naive_mle,
)
from dpsim.estimators.linear_btl_sgd import (
    SCHEDULES,
    feature_coverage,
    krr_sgd_gradient,
    rr_sgd_gradient,
    sgd_krr,
    sgd_mle,
    sgd_objective_perturbation,
    sgd_rr,
    step_size_schedule,
)
from dpsim.estimators.one_shot import RankCentrality, one_shot_statistics
from dpsim.estimators.spectral import (
    SPECTRAL_SOLVERS,
    count_chain_stationary,
    differential_counts,
    ergodicity_coefficient,
    exact_solve_result,
    power_iteration,
    rank_centrality_transition,
    regularise_counts,
    spectral_estimate,
    stationary_distribution,
    support_connected,
)
from dpsim.estimators.private_spectral import private_spectral_estimate, rr_spectral_estimate

__all__ = [
    "Fit", "SCORE_TIE_TOL", "btl_gradient", "btl_neg_log_likelihood", "btl_objective", "penalised_mle",
    "perturbed_mle", "top_k_mask", "guarded_penalised_mle", "guarded_perturbed_mle",
    "unpenalised_mle", "RankCentrality", "ergodicity_coefficient", "one_shot_statistics", "rank_centrality_transition", "stationary_distribution",
    "borda_scores", "classic_rr_mle", "debiased_m_estimator", "estimated_top_k_mask", "ridge_lambda",
    "tied_ranks", "win_value_matrix",
    "SPECTRAL_SOLVERS", "count_chain_stationary", "differential_counts", "exact_solve_result", "power_iteration",
    "regularise_counts", "spectral_estimate", "support_connected", "private_spectral_estimate",
    "rr_spectral_estimate",
    "logistic_loss", "mle", "objective_perturbation", "rr_debiased", "rr_debiased_loss",
    "rr_debiased_loss_label_form", "rr_naive_loss", "rr_naive_mle",
    "SCHEDULES", "feature_coverage", "krr_sgd_gradient", "rr_sgd_gradient", "sgd_krr", "sgd_mle",
    "sgd_objective_perturbation", "sgd_rr", "step_size_schedule",
]
