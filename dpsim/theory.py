"""Theoretical rates, one function per theorem, each citing paper and equation.

"≲" in the papers hides universal constants, so a rate is compared with simulations
through its *slopes* (d log rate / d log x), not its level.
"""
from __future__ import annotations

import numpy as np


def edge_dp_statistical_term(n_items, p, eps=None):
    """√(log n/(np)): the non-private part of r_E (cai Thm 2.1 eq. (2.6))."""
    n_items, p = np.asarray(n_items, float), np.asarray(p, float)
    return np.sqrt(np.log(n_items) / (n_items * p))


def edge_dp_privacy_term(n_items, p, eps):
    """log n/(npε): the cost of privacy in r_E (cai Thm 2.1 eq. (2.6), Remark 1)."""
    n_items, p, eps = np.asarray(n_items, float), np.asarray(p, float), np.asarray(eps, float)
    return np.log(n_items) / (n_items * p * eps)


def edge_dp_rate(n_items, p, eps):
    """r_E(n, p, ε) = √(log n/(np)) + log n/(npε)  (cai Thm 2.1 eq. (2.6), Cor 2.1 (2.7),
    Remark 1): the minimax ℓ∞ rate of θ̃ and the top-k separation threshold under edge DP.
    ε = ∞ gives the non-private rate √(log n/(np))."""
    return edge_dp_statistical_term(n_items, p) + edge_dp_privacy_term(n_items, p, eps)


def edge_dp_crossover_eps(n_items, p):
    """ε*(n, p) = √(log n/(np)) where the two terms of r_E are equal (cai spec §7 item 1)."""
    return np.sqrt(np.log(np.asarray(n_items, float)) / (np.asarray(n_items, float) * np.asarray(p, float)))


def individual_dp_rate(n_items, n_users, eps):
    """r_I(n, m, ε) = √(n log n/m) + n log n/(mε)  (cai Thm 3.1, Thm 3.3)."""
    n_items, n_users, eps = (np.asarray(x, float) for x in (n_items, n_users, eps))
    return np.sqrt(n_items * np.log(n_items) / n_users) + n_items * np.log(n_items) / (n_users * eps)


def log_slope(rate, axis: str, at: dict, rel_step: float = 1e-4) -> float:
    """Local slope d log rate / d log x of ``rate(**at)`` in the argument ``axis``."""
    hi = dict(at, **{axis: at[axis] * (1 + rel_step)})
    lo = dict(at, **{axis: at[axis] * (1 - rel_step)})
    return float((np.log(rate(**hi)) - np.log(rate(**lo))) / (np.log1p(rel_step) - np.log1p(-rel_step)))


def fitted_rate_slope(rate, axis: str, values, at: dict) -> float:
    """Least-squares slope of log rate on log x over the grid ``values`` of ``axis``.

    This is the slope a log–log regression of the error on that grid should recover if
    the error is proportional to the rate: the predicted slope of a rate check.
    """
    xs = np.asarray(values, float)
    ys = np.log([rate(**dict(at, **{axis: x})) for x in xs])
    return float(np.polyfit(np.log(xs), ys, 1)[0])
