"""Privacy audits of xu's per-comparison mechanisms (xu §3.1, §3.2, eq. (1), Lemma 2; docs/xu.md, Mechanisms and estimators): classic RR,
debiased RR and the Laplace mechanism, each on the worst-case neighbouring inputs of one
comparison (y = 1 against y = 0), through the library's own sufficient-statistic sampler
(:func:`dpsim.mechanisms.pairwise_ldp.privatise` with one user and one pair).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from dpsim.audits.audit import (
    AuditResult,
    histogram_epsilon,
    laplace_privacy_loss,
    max_laplace_privacy_loss,
)
from dpsim.mechanisms.pairwise_ldp import privatise
from dpsim.mechanisms.randomized_response import flip_probability, keep_probability
from dpsim.validate import require_eps

_AUDIT_SAMPLERS: dict = {}


def _one_comparison_sampler(mechanism: str):
    """jit(vmap over keys) of the library's sufficient-statistic path for one user and one
    comparison: y ↦ the released value (ỹ, z or y + Laplace)."""
    if mechanism not in _AUDIT_SAMPLERS:

        def release(key, y, eps):
            wins = jnp.reshape(y, (1, 1))
            return privatise(key, wins, jnp.ones((1,)), jnp.reshape(eps, (1,)), mechanism)[0]

        _AUDIT_SAMPLERS[mechanism] = jax.jit(jax.vmap(release, in_axes=(0, None, None)))
    return _AUDIT_SAMPLERS[mechanism]


def _binary_exact_loss(eps) -> float:
    """max over the two outputs of |log P(out | y=1)/P(out | y=0)| for binary RR."""
    keep, flip = float(keep_probability(eps)), float(flip_probability(eps))
    return max(abs(np.log(keep / flip)), abs(np.log(flip / keep)))


def _two_sided_histogram_epsilon(stat, stat_prime, bins):
    """The larger of the histogram estimates of ε in both directions, with its SE."""
    forward = histogram_epsilon(stat, stat_prime, bins=bins)
    backward = histogram_epsilon(stat_prime, stat, bins=bins)
    return max(forward, backward, key=lambda r: r[0])


def audit_pairwise(
    key, eps_values=(0.5, 1.0, 2.0), n_samples: int = 200_000, n_items: int | None = None
) -> list[AuditResult]:
    """Privacy audit of xu's per-comparison mechanisms at each ε: classic RR, debiased RR
    (both ε-LDP per comparison, xu §3.1–3.2, eq. (1), Lemma 2) and the Laplace mechanism on one comparison
    (docs/xu.md, Mechanisms and estimators), on the worst-case neighbouring inputs y = 1 and y = 0 of one comparison.

    The released values are drawn through the library's own sampler (:func:`privatise` with
    one user and one pair). Exact loss: RR and debiased RR, max_out |log P(out|1)/P(out|0)|
    from the flip probability (debiased RR is a bijection of ỹ); Laplace, sup_x ℓ(x) = 1/b
    with b = 1/ε. Empirical: :func:`~dpsim.audits.audit.histogram_epsilon` of the
    released value (RR) or of the privacy-loss statistic ℓ(x) (Laplace) under both inputs,
    from samples only. Expected: exact = ε and the estimate within a few standard errors.

    Args:
        key: PRNG key.
        eps_values: per-comparison budgets to audit.
        n_samples: draws per input.
        n_items: if given, the detail also reports the composed user budget m(m−1)/2·ε.
    Returns:
        list of :class:`~dpsim.audits.audit.AuditResult`, three per ε.
    """
    results = []
    for index, eps in enumerate(eps_values):
        require_eps(eps)
        e = jnp.asarray(eps, jnp.float64)
        composed = (
            ""
            if n_items is None
            else f"; user-level budget m(m-1)/2*eps = {n_items * (n_items - 1) / 2 * eps:g}"
        )
        for case, mechanism in enumerate(("classic_rr", "debiased_rr", "laplace")):
            k = jax.random.fold_in(jax.random.fold_in(key, index), case)
            k1, k0 = jax.random.split(k)
            draw = _one_comparison_sampler(mechanism)
            out1 = np.asarray(draw(jax.random.split(k1, n_samples), jnp.asarray(1.0), e))
            out0 = np.asarray(draw(jax.random.split(k0, n_samples), jnp.asarray(0.0), e))
            if mechanism == "laplace":
                scale = 1.0 / float(eps)
                loss1 = laplace_privacy_loss(out1[:, None], jnp.ones(1), jnp.zeros(1), scale)
                loss0 = laplace_privacy_loss(out0[:, None], jnp.ones(1), jnp.zeros(1), scale)
                exact = float(max_laplace_privacy_loss(jnp.ones(1), jnp.zeros(1), scale))
                emp, se = histogram_epsilon(np.asarray(loss1), np.asarray(loss0))
                sampled = float(jnp.max(loss1))
                detail = f"one comparison y=1 vs y=0, sensitivity 1, Laplace scale {scale:.3g}"
            else:
                exact = _binary_exact_loss(eps)
                emp, se = _two_sided_histogram_epsilon(out1, out0, bins=2)
                sampled = float("nan")
                detail = (
                    f"one comparison y=1 vs y=0, flip probability {float(flip_probability(eps)):.4g}"
                    + ("" if mechanism == "classic_rr" else ", z = ((e^eps+1)y~ - 1)/(e^eps - 1)")
                )
            results.append(
                AuditResult(
                    f"xu-{mechanism.replace('_', '-')}",
                    "-",
                    float(eps),
                    exact,
                    emp,
                    se,
                    detail=detail + composed,
                    sampled_max_loss=sampled,
                )
            )
    return results


__all__ = ["audit_pairwise"]
