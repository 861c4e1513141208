"""Privacy audits: the exact privacy loss of a mechanism on worst-case neighbouring inputs,
and an estimate of it from samples of the mechanism alone (docs/cai.md, Errata and modes (E3); Privacy audit "Privacy
audits"); each paper registers its mechanisms' audits as :class:`Audit` s (``AUDITS`` of its
package), which ``dpsim audit`` runs.

For a Laplace count mechanism y = N(W) + Laplace(b)^n (N(W) = row sums of W) and neighbours
W, W' the privacy loss at output y is

    ℓ(y) = log p_W(y)/p_W'(y) = Σ_i (|y_i − N'_i| − |y_i − N_i|)/b,

whose supremum over y is ‖N − N'‖₁/b (attained when every differing coordinate lies beyond
N_i on the side away from N'_i). The mechanism is ε-DP iff this is ≤ ε for all neighbours.

Three numbers are computed: the exact supremum (closed form); the largest privacy loss ℓ(y)
over samples y ~ M(W) (ℓ has an atom at its supremum, of mass 2^(−#differing
coordinates)); and a histogram estimate that only uses samples of the mechanism: draw y from
M(W) and from M(W'), map both through ℓ, histogram them on common bins and take the largest
log ratio of tail frequencies (:func:`histogram_epsilon`). Since ℓ is the log density ratio,
the top tail (the atom of ℓ at its maximum) has frequency ratio exp(sup ℓ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


def laplace_privacy_loss(y, centre, centre_prime, scale):
    """ℓ(y) = log p(y)/p'(y) for product Laplace(scale) densities centred at ``centre`` and
    ``centre_prime`` (last axis = coordinates)."""
    return jnp.sum(jnp.abs(y - centre_prime) - jnp.abs(y - centre), axis=-1) / scale


def max_laplace_privacy_loss(centre, centre_prime, scale):
    """sup_y ℓ(y) = ‖centre − centre'‖₁/scale, the exact privacy loss of the Laplace
    mechanism on this pair of neighbours."""
    return jnp.sum(jnp.abs(centre - centre_prime)) / scale


def histogram_epsilon(stat, stat_prime, bins: int = 100, min_count: int = 100):
    """Histogram estimate of ε from a statistic sampled under W and under W'.

    The samples are binned on common bins; for every upper tail of bins (the event
    {stat ≥ t} for t a bin edge) the log ratio of its frequencies under W and W' is a lower
    bound on the privacy loss, and the estimate is the largest of them over tails holding at
    least ``min_count`` samples under both datasets. For stat = ℓ (the privacy-loss
    statistic) the top tail is the atom of ℓ at sup ℓ, so the estimate converges to the exact
    loss; nested tails keep the counts, and so the upward bias of a maximum over noisy
    bins, small. Returns (estimate, delta-method standard error at the maximising tail).
    """
    stat, stat_prime = np.asarray(stat), np.asarray(stat_prime)
    lo, hi = min(stat.min(), stat_prime.min()), max(stat.max(), stat_prime.max())
    pad = 1e-9 * (hi - lo) + 1e-12
    edges = np.linspace(lo - pad, hi + pad, bins + 1)
    c = np.cumsum(np.histogram(stat, edges)[0][::-1])
    c_prime = np.cumsum(np.histogram(stat_prime, edges)[0][::-1])
    keep = (c >= min_count) & (c_prime >= min_count)
    if not np.any(keep):
        raise ValueError("no tail has min_count samples under both datasets; draw more samples")
    log_ratio = np.log(c[keep] / len(stat)) - np.log(c_prime[keep] / len(stat_prime))
    best = int(np.argmax(log_ratio))
    se = float(np.sqrt(1.0 / c[keep][best] + 1.0 / c_prime[keep][best]))
    return float(log_ratio[best]), se


def smallest_epsilon(delta_of: Callable[[float], float], delta: float, hi: float) -> float:
    """The smallest ε ≥ 0 with ``delta_of``(ε) ≤ δ, for a non-increasing ``delta_of`` (a
    hockey-stick divergence δ(ε)): 100 bisection steps on [0, ``hi``], ``hi`` doubled first
    until δ(hi) ≤ δ. Returns the upper end of the final bracket, so δ(result) ≤ δ (0.0 when
    δ(0) ≤ δ already). Host, float. Used for the exact (ε, δ) curves of
    :mod:`dpsim.audits.audit_responses` and by :func:`empirical_epsilon_for_delta`."""
    lo = 0.0
    if delta_of(0.0) <= delta:
        return 0.0
    while delta_of(hi) > delta:
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if delta_of(mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def empirical_epsilon_for_delta(loss, delta: float):
    """ε̂ = the smallest ε with mean[(1 − e^{ε−ℓ})₊] ≤ δ over samples ℓ of the privacy-loss
    statistic drawn under D (the hockey-stick divergence estimated from samples), and its
    delta-method standard error std((1 − e^{ε̂−ℓ})₊)/√n divided by the slope
    mean[e^{ε̂−ℓ}; ℓ > ε̂] (∞ if that slope is 0).

    The bracket is [0, max(1, max ℓ)]: at ε = max ℓ every term is 0, so its upper end
    already satisfies the constraint. Args: loss (n,) samples; delta: δ ∈ (0, 1).
    Returns: (ε̂, standard error)."""
    loss = np.asarray(loss)
    delta_of = lambda e: float(np.mean(np.clip(-np.expm1(e - loss), 0.0, None)))  # noqa: E731
    eps_hat = smallest_epsilon(delta_of, delta, max(1.0, float(loss.max())))
    terms = np.clip(-np.expm1(eps_hat - loss), 0.0, None)
    slope = float(np.mean(np.where(loss > eps_hat, np.exp(eps_hat - loss), 0.0)))
    se = float(np.std(terms) / math.sqrt(loss.size) / slope) if slope > 0 else float("inf")
    return eps_hat, se


class AuditResult(NamedTuple):
    """One audited (mechanism, mode, ε) case: the exact privacy loss on worst-case
    neighbours and an estimate of it from samples of the mechanism alone.

    Attributes:
        mechanism: e.g. ``"alg3-individual"``; ``mode``: the mechanism's mode (``"-"`` if none).
        eps, delta: the budget the mechanism claims (δ = 0 for pure DP).
        exact_loss: the exact supremum of the privacy loss on the audited neighbours (for an
            (ε, δ) claim: the smallest ε' such that the pair is (ε', δ)-indistinguishable).
        empirical_loss, empirical_se: its estimate from samples, and the standard error.
        detail: what was audited (sensitivity, noise scale, …), printed beside the numbers.
        known_violation: the paper's published mode, audited to show that it exceeds ε (it
            is reported, and does not fail ``dpsim audit``).
        sampled_max_loss: the largest privacy loss over the samples (NaN if not computed).
    """

    mechanism: str
    mode: str
    eps: float
    exact_loss: float
    empirical_loss: float
    empirical_se: float
    delta: float = 0.0
    detail: str = ""
    known_violation: bool = False
    sampled_max_loss: float = float("nan")

    @property
    def within_budget(self) -> bool:
        """True when the exact privacy loss does not exceed the claimed ε."""
        return self.exact_loss <= self.eps * (1 + 1e-9)

    @property
    def empirically_consistent(self) -> bool:
        """True when the sampled estimate agrees with the exact loss within 4 standard errors."""
        return abs(self.empirical_loss - self.exact_loss) <= 4 * self.empirical_se + 1e-12


@dataclass(frozen=True)
class Audit:
    """A named privacy audit that ``dpsim audit`` can run (each paper package lists its own
    in ``AUDITS``): ``run(key, eps_values, n_samples) -> list[AuditResult]``."""

    name: str
    description: str
    run: Callable[..., list]


_SAMPLERS: dict = {}


def _sampler(mechanism: Callable, n_params: int):
    """jit(vmap over keys) of ``mechanism(key, W, *params)``, cached per mechanism so that
    every ε (a traced parameter) reuses one compilation."""
    if (mechanism, n_params) not in _SAMPLERS:
        _SAMPLERS[(mechanism, n_params)] = jax.jit(
            jax.vmap(mechanism, in_axes=(0,) + (None,) * (n_params + 1))
        )
    return _SAMPLERS[(mechanism, n_params)]


def audit_count_mechanism(
    key, mechanism: Callable, W, W_prime, scale, n_samples: int, params=(), bins: int = 100
):
    """Exact and empirical privacy loss of ``mechanism(key, W, *params) -> noisy counts`` (a
    Laplace count mechanism with the given ``scale``) on the neighbours (W, W').

    Returns (exact sup loss, largest sampled loss, histogram estimate, its standard error).
    """
    N, N_prime = jnp.sum(W, axis=1), jnp.sum(W_prime, axis=1)
    k, k_prime = jax.random.split(key)
    draw = _sampler(mechanism, len(params))
    y = draw(jax.random.split(k, n_samples), W, *params)
    y_prime = draw(jax.random.split(k_prime, n_samples), W_prime, *params)
    loss = laplace_privacy_loss(y, N, N_prime, scale)
    loss_prime = laplace_privacy_loss(y_prime, N, N_prime, scale)
    emp, se = histogram_epsilon(loss, loss_prime, bins=bins)
    return (float(max_laplace_privacy_loss(N, N_prime, scale)), float(jnp.max(loss)), emp, se)
