"""Estimation and ranking errors (cai §8.0). Pure functions of (estimate, truth).

Top-k sets are boolean masks of shape (n,) so that k may vary without changing shapes.
"""
import jax.numpy as jnp


def l2_error(theta_hat, theta):
    """‖θ̂ − θ*‖₂."""
    return jnp.linalg.norm(theta_hat - theta)


def linf_error(theta_hat, theta):
    """‖θ̂ − θ*‖∞."""
    return jnp.max(jnp.abs(theta_hat - theta))


def log_relative_l2_error(theta_hat, theta):
    """log(‖θ̂ − θ*‖₂ / ‖θ*‖₂), natural log (cai §4.1.1, panel (a))."""
    return jnp.log(l2_error(theta_hat, theta) / jnp.linalg.norm(theta))


def log_relative_linf_error(theta_hat, theta):
    """log(‖θ̂ − θ*‖∞ / ‖θ*‖∞), natural log (cai §4.1.1, panel (b))."""
    return jnp.log(linf_error(theta_hat, theta) / jnp.max(jnp.abs(theta)))


def relative_hamming_error(mask_hat, mask_true):
    """1 − |Ŝ ∩ S|/k = d_H(Ŝ, S)/(2k) for |Ŝ| = |S| = k (cai §8.0, panels (c), (d))."""
    k = jnp.sum(mask_true)
    # Counted as misses (not 1 − hits/k) so a perfect recovery is exactly 0 even when XLA
    # rewrites x/k as x·(1/k).
    return jnp.sum(mask_true & ~mask_hat) / k


def exact_recovery(mask_hat, mask_true):
    """1 if Ŝ = S else 0 (Cor 2.1, Cor 2.2)."""
    return jnp.all(mask_hat == mask_true).astype(jnp.float64)


def ranks(scores):
    """rank(x) = argsort(argsort(x)) (0 = smallest), as in cai's real-data code (§8.0)."""
    return jnp.argsort(jnp.argsort(scores))


def mean_absolute_rank_difference(scores_a, scores_b):
    """(1/n) Σ_i |rank(a)_i − rank(b)_i| (cai §8.0, real data, Fig. 8)."""
    return jnp.mean(jnp.abs(ranks(scores_a) - ranks(scores_b)).astype(jnp.float64))
