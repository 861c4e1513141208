"""Noisy win counts ("noisy Copeland/Borda"), cai Algorithms 2 and 3."""

from dpsim.mechanisms.calibration import edge_count_noise_scale
from dpsim.mechanisms.laplace import laplace_noise
from dpsim.validate import require_counts_matrix, require_eps


def win_counts(W):
    """N_i = Σ_j W_ij, the number of comparisons item i won (cai Algorithm 2, §2.3.1 step 1)."""
    return W.sum(axis=1)


def noisy_counts_edge(key, W, eps):
    """Algorithm 2 of cai (§2.3, edge DP): N + Laplace(2/ε)^n, (ε, 0)-edge DP (ℓ1 sensitivity 2).

    Args: key; W: (n, n) win counts; eps: ε > 0 (inf: no noise). Returns: (n,) noisy counts.
    Raises: ValueError for a concrete bad ε or W (traced values are not checked)."""
    require_eps(eps)
    require_counts_matrix(W)
    counts = win_counts(W)
    return counts + laplace_noise(key, edge_count_noise_scale(eps), counts.shape)
