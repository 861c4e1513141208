"""xu's privacy audits (xu §3.1–3.2, eq. (1), Lemma 2; docs/xu.md, Mechanisms and estimators): classic RR,
debiased RR and the Laplace mechanism, each on the worst-case neighbouring inputs of one
comparison (y = 1 against y = 0), drawn through the library's own sufficient-statistic
sampler (:func:`dpsim.audits.pairwise_audit.audit_pairwise`). Each is ε-LDP per
comparison: the exact loss is ε, and the sampled estimate agrees within a few standard
errors. The detail reports the composed budget of one user's whole vector at m = 10
(m(m−1)/2·ε; xu §3.2, eq. (1), Lemma 2; docs/xu.md, Errata and modes (A20)), which the paper does not discuss.
"""

from __future__ import annotations

from dpsim.audits.audit import Audit
from dpsim.audits.pairwise_audit import audit_pairwise

AUDIT_ITEMS = 10

AUDITS = [
    Audit(
        "xu-pairwise-ldp",
        "classic RR, debiased RR and Laplace(1/ε) on one comparison, y = 1 vs y = 0 (per-comparison ε-LDP)",
        lambda key, eps_values, n_samples: audit_pairwise(
            key, eps_values, n_samples, n_items=AUDIT_ITEMS
        ),
    )
]
