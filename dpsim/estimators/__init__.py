"""Estimators: maps from (privatised) sufficient statistics to θ̂ or a top-k set."""
from dpsim.estimators.btl_mle import (
    MLEFit,
    btl_gradient,
    btl_neg_log_likelihood,
    btl_objective,
    penalised_mle,
    perturbed_mle_edge,
)
from dpsim.estimators.counts import noisy_counts_edge, win_counts
from dpsim.estimators.topk import top_k_mask

__all__ = [
    "MLEFit", "btl_gradient", "btl_neg_log_likelihood", "btl_objective", "penalised_mle",
    "perturbed_mle_edge", "noisy_counts_edge", "win_counts", "top_k_mask",
]
