"""Randomized response on a response matrix with shuffle amplification: the baseline of
nguyen supp. §4 (nguyen supp. §4).

Each user l reports every observed response through binary RR at ε′ = ε_RR/k_l, k_l = the
user's number of observed responses, so the whole row is ε_RR-LDP (basic composition); the
rows are then shuffled (the spectral estimator ignores the order of users, so shuffling
costs nothing). Feldman, McMillan & Talwar (2022, Thm III.1; supp. Lemma 4.1) amplify an
ε₀-LDP randomizer to central (ε, δ)-DP over n shuffled users with

    ε ≤ log(1 + ((e^{ε₀} − 1)/(e^{ε₀} + 1))·(8√(e^{ε₀} log(4/δ))/√n + 8e^{ε₀}/n)),

for ε₀ ≤ log(n/(16 log(2/δ))). The supplement prints the bound without the +8e^{ε₀}/n
term; the authors' code and FMT22 include it (A5), and so does :func:`shuffle_epsilon`.
:func:`shuffle_rr_epsilon` inverts it on the host as the code does.

Validation: concrete inputs are checked and a bad one raises ``ValueError`` naming the value
(dpsim.validate); traced values (inside jit/vmap) pass unchecked.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from dpsim.mechanisms.randomized_response import randomized_response
from dpsim.validate import require_eps, require_int, require_open_unit

__all__ = [
    "shuffle_epsilon",
    "shuffle_ldp_cap",
    "shuffle_rr_epsilon",
    "randomize_responses",
    "per_response_epsilon",
]


def shuffle_epsilon(eps0, delta, n_users):
    """The central ε of n shuffled ε₀-LDP reports at δ (FMT22 Thm III.1 with the
    +8e^{ε₀}/n term; nguyen supp. Lemma 4.1, nguyen supp. §4). Host (NumPy), vectorised.

    Args: eps0: ε₀ ≥ 0; delta: δ ∈ (0, 1); n_users: n ≥ 1. Returns: float64 ε (valid only
    for ε₀ ≤ :func:`shuffle_ldp_cap`).
    """
    e0 = np.exp(np.asarray(eps0, np.float64))
    n = np.asarray(n_users, np.float64)
    term = (
        8.0 * np.sqrt(e0 * np.log(4.0 / np.asarray(delta, np.float64))) / np.sqrt(n) + 8.0 * e0 / n
    )
    return np.log1p((e0 - 1.0) / (e0 + 1.0) * term)


def shuffle_ldp_cap(delta, n_users):
    """log(n/(16 log(2/δ))), the largest ε₀ the FMT22 bound covers (negative: no
    amplification). Host."""
    return float(np.log(n_users / (16.0 * np.log(2.0 / delta))))


def shuffle_rr_epsilon(eps, delta, n_users: int, lower: float = 1e-5, tol: float = 1e-8) -> float:
    """ε_RR = max(ShuffleInv(ε*, δ, n), ε*): the per-user LDP budget of the RR baseline
    (nguyen supp. §4 ``find_effective_epsilon0_rr``, docs/nguyen.md, Errata and modes (A5)). Host, Python floats.

    The code's bisection, reproduced: upper = :func:`shuffle_ldp_cap`; if upper < 0 return
    ε*; lower (1e-5 in the repository, 1e-6 in the supplement) is halved while
    ε(lower) > ε*; then bisect until upper − lower ≤ tol, moving ``lower`` to mid when
    ε(mid) < ε*, and return the last mid. The result is therefore capped at ``upper``; the
    experiments then take the maximum with ε*.

    Args:
        eps: the target central ε* > 0 (finite).
        delta: δ ∈ (0, 1).
        n_users: n ≥ 1 (users shuffled together).
        lower, tol: the code's starting lower end and tolerance.
    Returns:
        ε_RR (float).
    """
    require_eps(eps)
    require_open_unit(delta, "delta")
    require_int(n_users, "n_users", 1)
    eps, delta = float(eps), float(delta)
    upper = shuffle_ldp_cap(delta, n_users)
    if upper < 0:
        return eps
    eps_of = lambda e0: float(shuffle_epsilon(e0, delta, n_users))
    while eps_of(lower) > eps:
        lower /= 2.0
    mid = 0.5 * (upper + lower)
    while upper - lower > tol:
        mid = 0.5 * (upper + lower)
        if eps_of(mid) < eps:
            lower = mid
        else:
            upper = mid
    return max(mid, eps)


def per_response_epsilon(observed, eps_rr):
    """ε′_l = ε_RR/k_l for each user (k_l = number of observed responses; ∞ where k_l = 0).
    Args: observed: (n_users, n_items) bool; eps_rr: ε_RR > 0 (traceable).
    Returns: (n_users,) float64."""
    k = jnp.sum(jnp.asarray(observed), axis=1).astype(jnp.float64)
    return jnp.where(k > 0, jnp.asarray(eps_rr, jnp.float64) / jnp.maximum(k, 1.0), jnp.inf)


def randomize_responses(key, x, observed, eps_rr):
    """Per-response binary RR with the per-user budget split of nguyen supp. §4 (nguyen supp. §4):
    every observed response of user l is flipped with probability 1/(1 + e^{ε_RR/k_l});
    missing entries stay missing. The row is ε_RR-LDP.

    Args:
        key: PRNG key.
        x: (n_users, n_items) 0/1 responses (entries where ``observed`` is False ignored).
        observed: (n_users, n_items) bool mask.
        eps_rr: ε_RR > 0 (traceable; from :func:`shuffle_rr_epsilon` on the host).
    Returns:
        (n_users, n_items) released responses, dtype of ``x`` (unobserved entries kept).
    """
    require_eps(eps_rr, "eps_rr")
    eps_each = per_response_epsilon(observed, eps_rr)[:, None]
    released = randomized_response(key, x, jnp.broadcast_to(eps_each, jnp.shape(x)))
    return jnp.where(jnp.asarray(observed), released, x)
