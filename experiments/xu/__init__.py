"""xu — "Rate-Optimal Rank Aggregation with Private Pairwise Rankings" (Shirong Xu, Will Wei Sun,
Guang Cheng); its page in
the repository, docs/xu.md (``PAGE``), describes the model, the mechanisms and estimators
as implemented, the predictions checked, and each erratum with the mode chosen for it.

The paper package's contract, gathered from the modules of its skeleton (docs/architecture.md,
"A paper's skeleton"): ``model`` (the axes, θ* designs and raw wins every experiment shares, and the
figures' labels), ``methods`` (the release keyed so that every mechanism at one ε shares its flips,
the ridge M-estimator of eq. (3), the metrics of docs/xu.md, Metrics), ``figures`` (``scenarios``:
Scenarios I–V, Figs 2–6, and the oracle, classic-RR floor and λ-rule companions, with the level
checks whose closed forms are ``figures.levels``; ``realdata``: MovieLens, Fig. 7; ``hetero``:
heterogeneous ε, an extension; ``design``: calibration experiments pinning the θ* designs, the raw
wins, the heterogeneous groups, the MovieLens subsample and every metric against closed forms),
``checks`` (every check), ``mutants`` (plausible bugs the checks must kill), ``audits``
(per-comparison LDP audits).
"""

from . import audits, checks, figures, mutants

TITLE = "Rate-Optimal Rank Aggregation with Private Pairwise Rankings (Xu, Sun, Cheng)"
PAGE = "docs/xu.md"

EXPERIMENTS = figures.EXPERIMENTS
CHECKS = checks.CHECKS
MUTANTS = mutants.MUTANTS
AUDITS = audits.AUDITS

# What the paper's experiments simulate and score; each check names those it pins (``pins``)
# and each mutant those it breaks (``breaks``): `dpsim list xu --pins`.
COMPONENTS = {
    "generator:uniform-theta": "θ*_i ~ U(−2, 2), centred (xu §5.1, §5.3; docs/xu.md, Model)",
    "generator:ladder-theta": "the evenly spaced ladder θ*_i = Δ(i − (m + 1)/2), item labels permuted (xu §5.2; docs/xu.md, Model)",
    "generator:pairwise-answers": "each of L users answers every pair, P(i over j) = σ(θ*_i − θ*_j) (docs/xu.md, Model)",
    "mechanism:classic-rr": "classic randomized response: keep each answer w.p. e^ε/(1+e^ε) (xu §3.1, Lemma 1)",
    "mechanism:debiased-rr": "randomized response debiased per answer (eq. (1), Lemma 2)",
    "mechanism:laplace": "Laplace(1/ε) per answer (docs/xu.md, Mechanisms and estimators; Errata and modes (A6))",
    "estimator:ridge-m-estimator": "the ridge M-estimator of eq. (3) with λ = G(ε)/L (docs/xu.md, Mechanisms and "
    "estimators; Errata and modes (A4))",
    "metric:l2_rms": "‖θ̂ − θ*‖₂/√m (docs/xu.md, Metrics)",
    "metric:linf": "‖θ̂ − θ*‖∞ (docs/xu.md, Metrics)",
    "metric:mse": "‖θ̂ − θ*‖₂²/m (docs/xu.md, Metrics)",
    "metric:kendall": "Kendall distance K(θ̂, θ*), ties counted ½ (docs/xu.md, Metrics)",
    "metric:top_k_hamming": "top-K Hamming distance H_K(θ̂, θ*) (docs/xu.md, Metrics)",
    "metric:kendall_strict": "Kendall distance with ties counted 0 (docs/xu.md, Metrics)",
    "metric:excess_risk": "the excess risk e_L of eq. (4) (docs/xu.md, Metrics)",
    "metric:release_slope": "the slope of the released mean on the raw one (docs/xu.md, Metrics)",
    "metric:excess_var": "L × the release's excess variance over the raw answers (docs/xu.md, Metrics)",
    "generator:hetero-groups": "users in groups of their own ε, the profiles of the heterogeneous extension (docs/xu.md, Model)",
    "generator:movielens-subsample": "L users drawn without replacement from the MovieLens stand-in (xu §5.3; docs/xu.md, Model)",
}
