"""chowdhury's privacy audits (chowdhury eq. (2), Algorithm 2, Theorem 5.2): binary randomized
response on labels (eq. (2)), K-ary RR (eq. (12), K ∈ {2, 4, 8}) and Gaussian objective
perturbation under label DP (Algorithm 2, Thm 5.2), with the audits of
:mod:`dpsim.audits.label_audit` on worst-case neighbouring labels.

Expected: RR and K-RR have exact privacy loss ε (the likelihood ratio e^ε is attained), and
their empirical loss agrees within sampling error. Objective perturbation is a post-processing
of the Gaussian mechanism with sensitivity ‖x_j‖ ≤ 2L; its exact (ε', δ) curve at Thm 5.2's σ
gives ε' < ε (the theorem's constant is conservative: ε' ≈ 0.59 at ε = 1, δ = 10⁻³), and the
estimate from exact minimisers agrees. The objective-perturbation audit solves one Newton
problem per sample, so it uses at most 20 000 samples whatever ``--samples`` asks.

**The noise the mechanism actually adds**. The library's
:func:`~dpsim.audits.label_audit.audit_objective_perturbation` evaluates each sample's
privacy loss (‖w_{D'}‖² − ‖w_D‖²)/(2σ²) with the σ that Thm 5.2 *assumes*, so a mechanism
that adds less noise than it claims (σ ÷ 1.5) was judged by its claim. This package's audit
(:func:`audit_objective_perturbation_actual_noise`) estimates the noise scale from the samples
themselves, σ̂² = mean‖w_D‖²/d with w_D recovered from each minimiser's first-order condition
(the density of θ̂ under D is that of w_D up to a label-free Jacobian), and evaluates the loss
with σ̂: the empirical ε' is then that of the noise actually added, and the exact ε' (the
claim, at Thm 5.2's σ) disagrees with it when the calibration is wrong.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from dpsim.audits.audit import Audit, AuditResult
from dpsim.audits.label_audit import (
    audit_label_krr,
    audit_label_rr,
    objective_perturbation_gradients,
    objective_perturbation_result,
)

OBJPERT_MAX_SAMPLES = 20_000


def thm52_sigma(eps, delta, L):
    """σ = L√(8 log(2/δ) + 4ε)/ε (chowdhury Thm 5.2), written here from the theorem."""
    import math

    return L * math.sqrt(8.0 * math.log(2.0 / delta) + 4.0 * eps) / eps


def audit_objective_perturbation_actual_noise(
    key,
    eps_values=(0.5, 1.0, 2.0),
    n_samples: int = 20_000,
    delta: float = 1e-3,
    dim: int = 2,
    n_data: int = 8,
    beta: float = 1.0,
    noise_factor: float = 1.0,
) -> list[AuditResult]:
    """Gaussian objective perturbation under label DP (Alg. 2, Thm 5.2) on the library's
    worst-case neighbouring labels, with the privacy loss evaluated at the noise scale
    estimated from the samples (module docstring). ``exact_loss``: ε' of the Gaussian
    mechanism (sensitivity 2L) at Thm 5.2's σ, the mechanism's claim; ``empirical_loss``: from
    the samples' losses at σ̂. ``noise_factor`` multiplies the L handed to the mechanism
    (1: the real mechanism; the tests pass 1/1.5 to see the audit catch a σ ÷ 1.5)."""
    L, pairs = objective_perturbation_gradients(
        key, eps_values, n_samples, delta, dim, n_data, beta, noise_factor=noise_factor
    )
    results = []
    for eps, (w_d, w_dp) in zip(eps_values, pairs):
        sigma = thm52_sigma(float(eps), delta, L)
        sigma_hat = float(jnp.sqrt(jnp.mean(jnp.sum(w_d**2, axis=1)) / dim))
        detail = (
            f"sensitivity 2L = {2 * L:.3g}, Thm 5.2 sigma {sigma:.3g}, "
            f"sigma of the samples {sigma_hat:.3g}, beta {beta:g}"
        )
        results.append(
            objective_perturbation_result(eps, delta, L, sigma, (w_d, w_dp), sigma_hat, detail)
        )
    return results


def _krr(key, eps_values, n_samples):
    return [
        r
        for index, k in enumerate((2, 4, 8))
        for r in audit_label_krr(jax.random.fold_in(key, index), eps_values, n_samples, k=k)
    ]


AUDITS = [
    Audit(
        "chowdhury-label-rr",
        "binary randomized response on one label (eq. (2)): exact loss ε",
        lambda key, eps_values, n_samples: audit_label_rr(key, eps_values, n_samples),
    ),
    Audit(
        "chowdhury-label-krr",
        "K-ary randomized response (eq. (12)), K = 2, 4, 8: exact loss ε",
        _krr,
    ),
    Audit(
        "chowdhury-objective-perturbation",
        "Algorithm 2 (Gaussian objective perturbation, Thm 5.2 σ, δ = 1e-3) on worst-case neighbouring labels, "
        "loss at the noise scale of the samples",
        lambda key, eps_values, n_samples: audit_objective_perturbation_actual_noise(
            key, eps_values, min(n_samples, OBJPERT_MAX_SAMPLES), delta=1e-3
        ),
    ),
]
