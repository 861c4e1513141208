"""cai's privacy audits (docs/cai.md, Errata and modes (E3, E18); Privacy audit "Privacy audits"): Algorithm 2 (edge DP)
and Algorithm 3 in both modes (individual DP) on worst-case neighbouring datasets, with the
generic tools of :mod:`dpsim.audits.audit`.

Worst-case neighbours (they maximise ‖N − N'‖₁ under each adjacency):
- **edge** (Alg. 2): one comparison's outcome flips, i beat j → j beat i: N_i − 1, N_j + 1,
  ‖ΔN‖₁ = 2, so Laplace(2/ε) gives exactly ε;
- **individual** (Alg. 3): one user's L comparisons, all on {i, j} and all won by i, are
  replaced by L wins of j (worst-case replacement, docs/cai.md, Errata and modes (E18)): ‖ΔN‖₁ = 2L. Laplace(2L/ε)
  (``mode="strict"``) gives exactly ε; the published Laplace(L/ε) (``mode="paper"``) 2ε.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from dpsim.audits.audit import Audit, AuditResult, audit_count_mechanism
from dpsim.mechanisms.calibration import edge_count_noise_scale, individual_count_noise_scale
from dpsim.mechanisms.noisy_counts import noisy_counts_edge, noisy_counts_individual
from dpsim.models.btl import win_counts


def edge_worst_case_pair(W_others, i: int, j: int):
    """Edge-adjacent (W, W'): the others' comparisons plus one comparison of {i, j}, won by
    i in W and by j in W' (cai §2.1 adjacency, case (i)). ‖N − N'‖₁ = 2."""
    W = W_others.at[i, j].add(1.0)
    return W, W_others.at[j, i].add(1.0)


def individual_worst_case_pair(W_others, i: int, j: int, per_user: int):
    """Individual-adjacent (W, W'): the others' comparisons plus one user's L comparisons,
    all of {i, j} and all won by i in W, all won by j in W' (cai §3.1, worst-case
    replacement, docs/cai.md, Errata and modes (E18)). ‖N − N'‖₁ = 2L."""
    W = W_others.at[i, j].add(float(per_user))
    return W, W_others.at[j, i].add(float(per_user))


def _alg2(key, W, eps):
    return noisy_counts_edge(key, W, eps)


def _alg3_strict(key, W, eps, per_user):
    return noisy_counts_individual(key, W, eps, per_user, "strict")


def _alg3_paper(key, W, eps, per_user):
    return noisy_counts_individual(key, W, eps, per_user, "paper")


def audit_counts(
    key,
    eps_values=(0.5, 1.0, 2.0),
    per_user: int = 5,
    n_items: int = 6,
    n_samples: int = 200_000,
    W_others=None,
) -> list[AuditResult]:
    """Audit Algorithm 2 (edge) and Algorithm 3 in both modes (individual) at each ε.

    ``W_others`` (default: every ordered pair won once) is the data of everybody else; only
    the neighbours' difference matters for the Laplace mechanism. Expected: Alg. 2 and
    Alg. 3 strict have exact loss ε; Alg. 3 paper has 2ε.
    """
    W_others = jnp.ones((n_items, n_items)) - jnp.eye(n_items) if W_others is None else W_others
    edge_pair = edge_worst_case_pair(W_others, 0, 1)
    indiv_pair = individual_worst_case_pair(W_others, 0, 1, per_user)
    results = []
    for index, eps in enumerate(eps_values):
        e = jnp.asarray(eps, jnp.float64)
        cases = [
            ("alg2-edge", "-", edge_pair, edge_count_noise_scale(eps), _alg2, (e,)),
            (
                "alg3-individual",
                "strict",
                indiv_pair,
                individual_count_noise_scale(eps, per_user, "strict"),
                _alg3_strict,
                (e, per_user),
            ),
            (
                "alg3-individual",
                "paper",
                indiv_pair,
                individual_count_noise_scale(eps, per_user, "paper"),
                _alg3_paper,
                (e, per_user),
            ),
        ]
        for case_index, (name, mode, (W, W_prime), scale, mech, params) in enumerate(cases):
            case_key = jax.random.fold_in(jax.random.fold_in(key, index), case_index)
            exact, sampled, emp, se = audit_count_mechanism(
                case_key, mech, W, W_prime, scale, n_samples, params
            )
            l1 = float(jnp.sum(jnp.abs(win_counts(W) - win_counts(W_prime))))
            results.append(
                AuditResult(
                    name,
                    mode,
                    float(eps),
                    exact,
                    emp,
                    se,
                    detail=f"l1 sensitivity {l1:g}, Laplace scale {float(scale):.3g}",
                    known_violation=mode == "paper",
                    sampled_max_loss=sampled,
                )
            )
    return results


AUDITS = [
    Audit(
        "cai-counts",
        "Algorithm 2 (edge DP) and Algorithm 3 strict/paper (individual DP, L = 5) on worst-case neighbours",
        lambda key, eps_values, n_samples: audit_counts(
            key, eps_values, per_user=5, n_samples=n_samples
        ),
    )
]
