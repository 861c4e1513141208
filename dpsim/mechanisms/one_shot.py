"""The release of the one-shot private top-k baseline of Qiao, Su & Zhang [40] as cai's authors
coded it for their Fig. 4 (docs/cai.md, Mechanisms and estimators; Errata and modes (E13)):
Rank-Centrality scores π + Laplace(λ_os)^n, λ_os = 8·s·√(k log(n/δ))/ε with s = 2/(dL(1 − ρ_erg))
(:func:`dpsim.mechanisms.calibration.one_shot_noise_scale`). π and ρ_erg are the estimator's
statistics (:func:`dpsim.estimators.one_shot_statistics`); top-k of the release is
post-processing (:func:`dpsim.estimators.top_k_mask`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax

from dpsim.mechanisms.calibration import one_shot_noise_scale
from dpsim.mechanisms.laplace import laplace_noise


class OneShotScores(NamedTuple):
    """Noisy scores π + Laplace(λ_os), and the pieces: π, ρ_erg, λ_os."""

    scores: jax.Array
    stationary: jax.Array
    ergodicity: jax.Array
    noise_scale: jax.Array


def one_shot_scores(
    key, stationary, ergodicity, degree, k, eps, *, per_user=1.0, delta=None
) -> OneShotScores:
    """π + Laplace(λ_os)^n with λ_os from :func:`one_shot_noise_scale` (δ = 1/n² by default).

    The authors claim (ε, δ)-DP; ρ_erg is computed from the data, so the calibration itself is
    not private (docs/cai.md, Errata and modes (E13)).

    Args: key: PRNG key of the noise; stationary: (n,) π; ergodicity: ρ_erg of the chain;
    degree: d = np; k: top-k size; eps: ε > 0; per_user: L; delta: δ (None: 1/n²).
    Returns: :class:`OneShotScores`.
    """
    n = stationary.shape[0]
    scale = one_shot_noise_scale(ergodicity, degree, k, n, eps, per_user, delta)
    return OneShotScores(
        stationary + laplace_noise(key, scale, (n,)), stationary, ergodicity, scale
    )
