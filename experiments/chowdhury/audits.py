"""chowdhury's privacy audits (spec ../shared/papers/chowdhury.md §3.2–3.4): binary randomized
response on labels (eq. (2)), K-ary RR (eq. (12), K ∈ {2, 4, 8}) and Gaussian objective
perturbation under label DP (Algorithm 2, Thm 5.2), with the audits of
:mod:`dpsim.mechanisms.label_audit` on worst-case neighbouring labels.

Expected: RR and K-RR have exact privacy loss ε (the likelihood ratio e^ε is attained), and
their empirical loss agrees within sampling error. Objective perturbation is a post-processing
of the Gaussian mechanism with sensitivity ‖x_j‖ ≤ 2L; its exact (ε', δ) curve at Thm 5.2's σ
gives ε' < ε (the theorem's constant is conservative: ε' ≈ 0.59 at ε = 1, δ = 10⁻³), and the
estimate from exact minimisers agrees. The objective-perturbation audit solves one Newton
problem per sample, so it uses at most 20 000 samples whatever ``--samples`` asks.
"""
from __future__ import annotations

from dpsim.mechanisms.audit import Audit
from dpsim.mechanisms.label_audit import audit_label_krr, audit_label_rr, audit_objective_perturbation

OBJPERT_MAX_SAMPLES = 20_000


def _krr(key, eps_values, n_samples):
    import jax
    return [r for index, k in enumerate((2, 4, 8))
            for r in audit_label_krr(jax.random.fold_in(key, index), eps_values, n_samples, k=k)]


AUDITS = [
    Audit("chowdhury-label-rr", "binary randomized response on one label (eq. (2)): exact loss ε",
          lambda key, eps_values, n_samples: audit_label_rr(key, eps_values, n_samples)),
    Audit("chowdhury-label-krr", "K-ary randomized response (eq. (12)), K = 2, 4, 8: exact loss ε", _krr),
    Audit("chowdhury-objective-perturbation",
          "Algorithm 2 (Gaussian objective perturbation, Thm 5.2 σ, δ = 1e-3) on worst-case neighbouring labels",
          lambda key, eps_values, n_samples: audit_objective_perturbation(
              key, eps_values, min(n_samples, OBJPERT_MAX_SAMPLES), delta=1e-3)),
]
