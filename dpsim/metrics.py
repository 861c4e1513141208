"""Estimation and ranking errors shared by the papers: pure functions of (estimate, truth),
jit- and vmap-compatible, float64.

Sources: cai §4.1.1 (ℓ2, ℓ∞, log-relative errors, relative Hamming, exact recovery, mean rank
difference), docs/xu.md, Metrics (ℓ2/√m, top-K normalised Hamming H_K, which equals cai's relative
Hamming error when both sets have K items, and the Kendall distance K), nguyen §6 (ℓ2).
Top-k sets are boolean masks of shape (n,) so that k may vary without changing shapes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def l2_error(theta_hat, theta):
    """‖θ̂ − θ*‖₂.  Args: theta_hat, theta: (n,). Returns: scalar."""
    return jnp.linalg.norm(theta_hat - theta)


def linf_error(theta_hat, theta):
    """‖θ̂ − θ*‖∞.  Args: theta_hat, theta: (n,). Returns: scalar."""
    return jnp.max(jnp.abs(theta_hat - theta))


def l2_rms_error(theta_hat, theta):
    """‖θ̂ − θ*‖₂/√n, the normalised ℓ2 error of docs/xu.md, Metrics (their "m^{−1/2}‖θ̂ − θ*‖₂").

    Args: theta_hat, theta: (n,). Returns: scalar."""
    return l2_error(theta_hat, theta) / jnp.sqrt(theta.shape[0])


def log_relative_l2_error(theta_hat, theta):
    """log(‖θ̂ − θ*‖₂ / ‖θ*‖₂), natural log (cai §4.1.1, panel (a))."""
    return jnp.log(l2_error(theta_hat, theta) / jnp.linalg.norm(theta))


def log_relative_linf_error(theta_hat, theta):
    """log(‖θ̂ − θ*‖∞ / ‖θ*‖∞), natural log (cai §4.1.1, panel (b))."""
    return jnp.log(linf_error(theta_hat, theta) / jnp.max(jnp.abs(theta)))


def relative_hamming_error(mask_hat, mask_true):
    """1 − |Ŝ ∩ S|/k = d_H(Ŝ, S)/(2k) for |Ŝ| = |S| = k (cai §4.1.1; xu's H_K, docs/xu.md, Metrics).

    Args: mask_hat, mask_true: (n,) bool top-k masks with the same number of items.
    Returns: scalar in {0, 1/k, …, min(k, n − k)/k}."""
    k = jnp.sum(mask_true)
    # Counted as misses (not 1 − hits/k) so a perfect recovery is exactly 0 even when XLA
    # rewrites x/k as x·(1/k).
    return jnp.sum(mask_true & ~mask_hat) / k


def exact_recovery(mask_hat, mask_true):
    """1 if Ŝ = S else 0 (cai Cor 2.1, Cor 2.2; nguyen Thm 3.2)."""
    return jnp.all(mask_hat == mask_true).astype(jnp.float64)


def ranks(scores):
    """rank(x) = argsort(argsort(x)) (0 = smallest), as in cai's real-data code (cai §4.1.1)."""
    return jnp.argsort(jnp.argsort(scores))


def mean_absolute_rank_difference(scores_a, scores_b):
    """(1/n) Σ_i |rank(a)_i − rank(b)_i| (cai §4.1.1, real data, Fig. 8)."""
    return jnp.mean(jnp.abs(ranks(scores_a) - ranks(scores_b)).astype(jnp.float64))


KENDALL_TIE_TOL = 1e-9


def kendall_distance(theta_hat, theta, *, tie_tol: float = KENDALL_TIE_TOL, ties: str = "half"):
    """Fraction of discordant pairs (docs/xu.md, Metrics, the Kendall-tau distance K(θ̂, θ*)).

    K = (2/(n(n−1))) Σ_{i<j} d_ij with d_ij = 1 when (θ̂_i − θ̂_j)(θ*_i − θ*_j) < 0. Pairs
    that θ̂ ties, |θ̂_i − θ̂_j| ≤ tie_tol·max(1, ‖θ̂‖∞) (docs/xu.md, Errata and modes (A15): ties are real with
    discrete debiased data), count ½ with ``ties="half"`` (the expectation under a random
    tie-break) and 0 with ``ties="strict"`` (the paper's "< 0"). Pairs tied in θ* count 0.

    Args:
        theta_hat, theta: (n,) scores (larger = better).
        tie_tol: relative tolerance for ties in θ̂.
        ties: "half" or "strict" (a Python string).
    Returns:
        scalar in [0, 1].
    """
    if ties not in ("half", "strict"):
        raise ValueError(f"ties={ties!r}: choose 'half' or 'strict'")
    n = theta.shape[0]
    d_hat = theta_hat[:, None] - theta_hat[None, :]
    d_true = theta[:, None] - theta[None, :]
    tol = tie_tol * jnp.maximum(1.0, jnp.max(jnp.abs(theta_hat)))
    tied = jnp.abs(d_hat) <= tol
    discordant = (d_hat * d_true < 0) & ~tied
    weight = discordant.astype(jnp.float64)
    if ties == "half":
        weight = weight + 0.5 * (tied & (d_true != 0))
    upper = jnp.triu(jnp.ones((n, n), dtype=bool), k=1)
    return jnp.sum(jnp.where(upper, weight, 0.0)) / (n * (n - 1) / 2)


def excess_risk(theta_hat, theta):
    """e_L(θ̂, θ*) = (1/m²) Σ_{i<j} KL(Ber(p*_ij) ‖ Ber(σ(θ̂_i − θ̂_j))), p*_ij = σ(θ*_i − θ*_j):
    xu's excess risk (eq. (4), Thm 1) computed exactly (docs/xu.md, Metrics: since E z = p*, the expected
    excess pairwise loss (1/(m²L)) Σ_{i<j,l} E[L_ij(θ̂, Z) − L_ij(θ*, Z)] is this KL sum; it does
    not depend on ε or L). Written with log-sigmoids, so it is finite for any finite θ.

    With log σ(x) = −softplus(−x) and log(1 − σ(x)) = −softplus(−x) − x, the KL of a pair with
    d = θ*_i − θ*_j, d̂ = θ̂_i − θ̂_j is softplus(−d̂) − softplus(−d) + (1 − p)(d̂ − d): two
    softplus per pair instead of four (the metric's cost in a replicate is these transcendentals).

    Args: theta_hat, theta: (m,) (any shift: only differences enter). Returns: scalar ≥ 0.
    """
    m = theta.shape[0]
    i, j = np.triu_indices(m, 1)
    d_true = theta[i] - theta[j]
    d_hat = theta_hat[i] - theta_hat[j]
    p = jax.nn.sigmoid(d_true)
    kl = jax.nn.softplus(-d_hat) - jax.nn.softplus(-d_true) + (1.0 - p) * (d_hat - d_true)
    return jnp.sum(kl) / m**2


RASCH_L2_MODES = ("centred", "paper")


def rasch_l2_error(beta_hat, beta, mode: str = "centred"):
    """‖β̂ − β*‖₂ as scored by nguyen's experiments (nguyen §5; docs/nguyen.md, Errata and modes (Q1)).

    ``mode="centred"`` (default): both vectors are centred first, the identifiable
    comparison (β*ᵀ1 = 0, nguyen §2). ``mode="paper"``: the authors' synthetic scoring,
    ‖β̂ − β*‖₂ with β* as given (un-centred in their code), which adds m·mean(β*)² to the
    squared error (a floor of 0.683 at m = 25 under their seed, docs/nguyen.md, Errata and modes (Q1)); β̂ is used as
    given (the spectral estimate is already centred).

    Args: beta_hat, beta: (n_items,); mode: "centred" or "paper" (a Python string).
    Returns: scalar.
    """
    if mode not in RASCH_L2_MODES:
        raise ValueError(f"mode={mode!r}: choose one of {RASCH_L2_MODES}")
    if mode == "paper":
        return l2_error(beta_hat, beta)
    return l2_error(beta_hat - jnp.mean(beta_hat), beta - jnp.mean(beta))


def estimation_metrics(theta_hat, theta) -> dict:
    """ℓ2, ℓ∞ and the log-relative errors of cai Figs 1–3 (panels (a), (b)).

    Args: theta_hat, theta: (n,) centred estimate and truth. Returns: dict of scalars
    ``l2``, ``linf``, ``log_rel_l2``, ``log_rel_linf``."""
    return {
        "l2": l2_error(theta_hat, theta),
        "linf": linf_error(theta_hat, theta),
        "log_rel_l2": log_relative_l2_error(theta_hat, theta),
        "log_rel_linf": log_relative_linf_error(theta_hat, theta),
    }


def topk_metrics(mask_hat, mask_true) -> dict:
    """``relative_hamming`` and ``exact_recovery`` of an estimated top-k mask (cai §4.1.1).

    Args: mask_hat, mask_true: (n,) bool. Returns: dict of scalars."""
    return {
        "relative_hamming": relative_hamming_error(mask_hat, mask_true),
        "exact_recovery": exact_recovery(mask_hat, mask_true),
    }


def squared_l2_error(theta_hat, theta):
    """‖θ̂ − θ*‖₂², whose mean over replicates is the MSE (docs/chowdhury.md, Experiments as run; Errata and modes (E18);
    the (A1)–(A3) predictions of docs/chowdhury.md, Predictions are for it). Args: theta_hat, theta: (dim,).
    Returns: scalar."""
    diff = theta_hat - theta
    return jnp.dot(diff, diff)


def seminorm_error(theta_hat, theta, x, lam=0.0):
    """‖θ̂ − θ*‖_{Σ_D+λI} = √(vᵀ(Σ_D + λI)v), v = θ̂ − θ*, Σ_D = (1/n)Σ x_i x_iᵀ (chowdhury
    Thms 3.1, 4.2, D.5; docs/chowdhury.md, Model; Errata and modes (E16)), computed as √(‖Xv‖²/n + λ‖v‖²) without forming
    Σ_D.

    Args: theta_hat, theta: (dim,); x: (n_samples, dim) the fit's features; lam: λ ≥ 0
    (λ = 0 gives ‖·‖_{Σ_D}). Returns: scalar."""
    v = theta_hat - theta
    xv = x @ v
    return jnp.sqrt(jnp.dot(xv, xv) / x.shape[0] + lam * jnp.dot(v, v))


def feature_estimation_metrics(theta_hat, theta, x, lam=0.0) -> dict:
    """``l2``, ``mse`` (squared ℓ2 of this replicate) and ``seminorm`` (‖·‖_{Σ_D+λI}) of a
    linear-model estimate (docs/chowdhury.md, Experiments as run metric row).

    Args: theta_hat, theta: (dim,); x: (n_samples, dim); lam: λ ≥ 0. Returns: dict of scalars."""
    return {
        "l2": l2_error(theta_hat, theta),
        "mse": squared_l2_error(theta_hat, theta),
        "seminorm": seminorm_error(theta_hat, theta, x, lam),
    }


__all__ = [
    "l2_error",
    "linf_error",
    "l2_rms_error",
    "log_relative_l2_error",
    "log_relative_linf_error",
    "relative_hamming_error",
    "exact_recovery",
    "ranks",
    "mean_absolute_rank_difference",
    "KENDALL_TIE_TOL",
    "kendall_distance",
    "excess_risk",
    "RASCH_L2_MODES",
    "rasch_l2_error",
    "estimation_metrics",
    "topk_metrics",
    "squared_l2_error",
    "seminorm_error",
    "feature_estimation_metrics",
]
