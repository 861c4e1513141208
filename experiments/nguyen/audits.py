"""nguyen's privacy audits (nguyen Lemma 4.1, §4.2; §4.3, Algorithm 2; supp. §4; docs/nguyen.md, Mechanisms and estimators; Errata and modes (Q4)): every
mechanism on worst-case neighbouring response data, with the exact privacy loss against the
claimed budget and its estimate from samples of the mechanism alone
(:mod:`dpsim.audits.audit_responses`).

- ``nguyen-discrete-gaussian``: the dense chain (m = 5), (ε*, δ = 1e-4) claims of every
  (accounting, conversion) mode, valid and unproven;
- ``nguyen-sparse-gaussian``: the sparse chain (Algorithm 2) on the 6-cycle, a bipartite item
  graph where the synthetic script's accounting certifies half the true ρ;
- ``nguyen-discrete-laplace``: the dense discrete-Laplace chain (m = 4), pure ε*, tight joint
  and the paper's basic composition;
- ``nguyen-response-rr``: per-user randomized response at ε_RR/m per response (local ε_RR;
  the central (ε*, δ) claim of the shuffled release rests on the FMT22 bound, not audited).
"""

from __future__ import annotations

from dpsim.audits.audit import Audit
from dpsim.audits.audit_responses import (
    audit_discrete_gaussian,
    audit_discrete_laplace,
    audit_response_rr,
    audit_sparse_gaussian,
)

AUDITS = [
    Audit(
        "nguyen-discrete-gaussian",
        "dense discrete-Gaussian chain (m = 5, δ = 1e-4): every accounting/conversion mode",
        lambda key, eps_values, n_samples: audit_discrete_gaussian(
            key, eps_values, n_samples=n_samples
        ),
    ),
    Audit(
        "nguyen-sparse-gaussian",
        "sparse discrete-Gaussian chain on the 6-cycle (δ = 1e-4): tight, paper and synthetic-script accounting",
        lambda key, eps_values, n_samples: audit_sparse_gaussian(
            key, eps_values, n_samples=n_samples
        ),
    ),
    Audit(
        "nguyen-discrete-laplace",
        "dense discrete-Laplace chain (m = 4): tight joint and the paper's basic composition",
        lambda key, eps_values, n_samples: audit_discrete_laplace(
            key, eps_values, n_samples=n_samples
        ),
    ),
    Audit(
        "nguyen-response-rr",
        "per-user randomized response (m = 5 responses at ε_RR/m): local ε_RR",
        lambda key, eps_values, n_samples: audit_response_rr(key, eps_values, n_samples=n_samples),
    ),
]
