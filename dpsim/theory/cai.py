"""cai (Cai, Chakraborty, Wang, "Optimal Differentially Private Ranking from Pairwise
Comparisons"; docs/cai.md): the edge-DP and individual-DP rates, one function
per theorem, each citing its theorem and equation.

The rates are written once, with jax.numpy, so the same function serves host-side checks
(numbers in, a 0-d array out: wrap in ``float``) and jitted experiments that store Δ/rate
per row (traced arguments). ε = ∞ is allowed and gives the non-private rate.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def _f64(*values):
    """(namespace, the values as float64 arrays): NumPy when every value is a host number,
    jax.numpy when one is a JAX array or tracer. Host-side checks (the predicted slopes
    computed when a paper module is imported) then dispatch no JAX operation: each one
    would compile a tiny program in every ``dpsim run cai-…``."""
    xp = jnp if any(isinstance(v, jax.Array) for v in values) else np
    return xp, tuple(xp.asarray(v, xp.float64) for v in values)


def edge_dp_statistical_term(n_items, p, eps=None):
    """√(log n/(np)): the non-private part of r_E (cai Thm 2.1 eq. (2.6))."""
    xp, (n_items, p) = _f64(n_items, p)
    return xp.sqrt(xp.log(n_items) / (n_items * p))


def edge_dp_privacy_term(n_items, p, eps):
    """log n/(npε): the cost of privacy in r_E (cai Thm 2.1 eq. (2.6), Remark 1)."""
    xp, (n_items, p, eps) = _f64(n_items, p, eps)
    return xp.log(n_items) / (n_items * p * eps)


def edge_dp_rate(n_items, p, eps):
    """r_E(n, p, ε) = √(log n/(np)) + log n/(npε)  (cai Thm 2.1 eq. (2.6), Cor 2.1 (2.7),
    Remark 1): the minimax ℓ∞ rate of θ̃ and the top-k separation threshold under edge DP.
    ε = ∞ gives the non-private rate √(log n/(np))."""
    return edge_dp_statistical_term(n_items, p) + edge_dp_privacy_term(n_items, p, eps)


def edge_dp_crossover_eps(n_items, p):
    """ε*(n, p) = √(log n/(np)) where the two terms of r_E are equal (docs/cai.md, Predictions (item 1))."""
    return edge_dp_statistical_term(n_items, p)


def individual_dp_stated_statistical_term(n_items, n_users, eps=None):
    """√(n log n/m), the statistical term of r_I as Thm 3.1 states it (L absorbed)."""
    xp, (n_items, n_users) = _f64(n_items, n_users)
    return xp.sqrt(n_items * xp.log(n_items) / n_users)


def individual_dp_rate(n_items, n_users, eps):
    """r_I(n, m, ε) = √(n log n/m) + n log n/(mε)  (cai Thm 3.1, Thm 3.3)."""
    xp, (n_items, n_users, eps) = _f64(n_items, n_users, eps)
    return individual_dp_stated_statistical_term(n_items, n_users) + n_items * xp.log(n_items) / (
        n_users * eps
    )


# ---------------------------------------------------------------------------------------
# Individual DP with L kept explicit (docs/cai.md, Predictions (items 8–9); derived from the proof of
# Thm 3.1, whose form is √(log n/S) + (noise scale)·log n/S with S = 2mL/n). Thm 3.1's
# statement absorbs the fixed L into its constants: r_I = √(n log n/m) + n log n/(mε).
# ---------------------------------------------------------------------------------------
def individual_dp_comparisons_per_item(n_items, n_users, per_user):
    """S = 2mL/n, the expected number of comparisons involving one item in the individual
    model (cai Lemma B.1: each item's degree is Binomial(mL, 2/n))."""
    _, (n_items, n_users, per_user) = _f64(n_items, n_users, per_user)
    return 2.0 * n_users * per_user / n_items


def individual_dp_statistical_term(n_items, n_users, eps=None, per_user=1):
    """√(log n/S) = √(n log n/(2mL)): the non-private part of the individual-DP ℓ∞ rate with
    L explicit (docs/cai.md, Predictions; Thm 3.1 with L absorbed reads √(n log n/m)). It improves
    with L at fixed m like L^{-1/2} (docs/cai.md, Predictions (item 8))."""
    xp, (n_items, n_users, per_user) = _f64(n_items, n_users, per_user)
    return xp.sqrt(xp.log(n_items) / individual_dp_comparisons_per_item(n_items, n_users, per_user))


def individual_dp_privacy_term(n_items, n_users, eps, per_user=1, noise_factor=1.0):
    """c·(L/ε)·log n/S = c·n log n/(2mε): the cost of individual privacy with L explicit (cai
    docs/cai.md, Predictions), for noise of scale c·L/ε (``noise_factor`` c: 1 for Algorithm 1 and
    Algorithm 3 as published, 2 for the strict ε-DP Algorithm 3, docs/cai.md, Errata and modes (E3)). The noise
    scale ∝ L/ε and the information S ∝ L cancel, so the term does **not** depend on L at
    fixed m (docs/cai.md, Predictions (item 8)); Thm 3.1 with L absorbed reads n log n/(mε)."""
    xp, (n_items, n_users, eps, per_user) = _f64(n_items, n_users, eps, per_user)
    s = individual_dp_comparisons_per_item(n_items, n_users, per_user)
    return noise_factor * per_user * xp.log(n_items) / (s * eps)


def individual_dp_rate_explicit_l(n_items, n_users, eps, per_user=1, noise_factor=1.0):
    """√(log n/S) + c·(L/ε) log n/S with S = 2mL/n (docs/cai.md, Predictions): r_I with L explicit."""
    return individual_dp_statistical_term(
        n_items, n_users, eps, per_user
    ) + individual_dp_privacy_term(n_items, n_users, eps, per_user, noise_factor)


def matched_edge_probability(n_items, n_users, per_user):
    """The edge probability p with np = S = 2mL/n (docs/cai.md, Predictions dictionary, docs/cai.md, Predictions (item 9)):
    the edge-DP design with as many expected comparisons per item as the individual one."""
    _, (n_items, n_users, per_user) = _f64(n_items, n_users, per_user)
    return individual_dp_comparisons_per_item(n_items, n_users, per_user) / n_items


def individual_to_edge_privacy_ratio(n_items, n_users, eps, per_user):
    """Privacy term of individual DP over that of edge DP at matched comparisons per item
    (np = S; docs/cai.md, Predictions (item 9)): (L log n/(Sε)) / (log n/(npε)) = L.

    One user's L comparisons are protected jointly, so the noise scale is L times larger
    while the information per item is the same. (With the theorems' stated rates, where L
    is absorbed, the ratio reads n log n/(mε) ÷ log n/(npε) = 2L.)
    """
    p = matched_edge_probability(n_items, n_users, per_user)
    return individual_dp_privacy_term(n_items, n_users, eps, per_user) / edge_dp_privacy_term(
        n_items, p, eps
    )
