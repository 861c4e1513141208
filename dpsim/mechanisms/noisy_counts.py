"""Noisy win counts ("noisy Copeland/Borda"): the releases of cai Algorithms 2 and 3.

Each release is N + Laplace(b)^n with N = :func:`dpsim.models.btl.win_counts` of W and the
scale b of :mod:`dpsim.mechanisms.calibration`; top-k of the release is post-processing
(:func:`dpsim.estimators.top_k_mask`). ε = ∞ gives b = 0, the raw counts.
"""

from __future__ import annotations

from dpsim.mechanisms.calibration import edge_count_noise_scale, individual_count_noise_scale
from dpsim.mechanisms.laplace import laplace_noise
from dpsim.models.btl import win_counts
from dpsim.validate import require_counts_matrix, require_eps, require_int


def noisy_counts_edge(key, W, eps):
    """Algorithm 2 of cai (§2.3, edge DP): N + Laplace(2/ε)^n, (ε, 0)-edge DP (ℓ1 sensitivity 2).

    Args: key: PRNG key of the noise; W: (n, n) win counts; eps: ε > 0 (inf: no noise).
    Returns: (n,) noisy counts.
    Raises: ValueError for a concrete bad ε or W (traced values are not checked)."""
    require_eps(eps)
    require_counts_matrix(W)
    counts = win_counts(W)
    return counts + laplace_noise(key, edge_count_noise_scale(eps), counts.shape)


def noisy_counts_individual(key, W, eps, per_user, mode: str = "strict"):
    """Algorithm 3 of cai (individual DP): N + Laplace(c·L/ε)^n (cai Algorithm 3, §3.3; docs/cai.md,
    Errata and modes (E3)).

    ``mode="strict"`` (default, c = 2: the ℓ1 sensitivity 2L) is (ε, 0)-individual DP;
    ``mode="paper"`` (c = 1, as published) is only 2ε-DP. ``mode`` must be a Python string.

    Args: key: PRNG key of the noise; W: (n, n) win counts; eps: ε > 0; per_user: L ≥ 1.
    Returns: (n,) noisy counts.
    Raises: ValueError naming a bad concrete ε, L, W or mode (traced values are not checked).
    """
    require_eps(eps)
    require_int(per_user, "per_user", 1)
    require_counts_matrix(W)
    counts = win_counts(W)
    return counts + laplace_noise(
        key, individual_count_noise_scale(eps, per_user, mode), counts.shape
    )
