"""cai — "Optimal Differentially Private Ranking from Pairwise Comparisons" (T. Tony Cai, Abhinav
Chakraborty, Yichen Wang); its page in
the repository, docs/cai.md (``PAGE``), describes the model, the mechanisms and estimators
as implemented, the predictions checked, and each erratum with the mode chosen for it.

The paper package's contract, and nothing else, gathered from the modules of its skeleton
(docs/architecture.md, "A paper's skeleton"):

* ``model.py``: the edge-DP and individual-DP models, their θ* designs and generators;
* ``methods.py``: Algorithms 1–3 and their metrics as Methods;
* ``figures/``: ``edge`` (edge DP, Figures 1–3, rate checks), ``individual`` (Figure 4 with the
  one-shot baseline, individual DP Figures 5–7, real data Figure 8), ``scaling`` (individual-DP
  rates in m and L, edge vs individual at matched comparisons), ``threshold`` (the top-k phase
  transition), ``design`` (the designs' and metrics' calibration experiments and their level
  checks), ``published`` (the reproduction against the authors' released results of Figs 1–3);
* ``checks.py``: every check, the figures' and the level checks pinning each mechanism's
  calibration; ``mutants.py``: the plausible bugs they must catch; ``audits.py``: privacy
  audits of Algorithms 2 and 3.
"""

from . import audits, checks, figures, mutants

TITLE = "Optimal Differentially Private Ranking from Pairwise Comparisons (Cai, Chakraborty, Wang)"
PAGE = "docs/cai.md"

EXPERIMENTS = figures.EXPERIMENTS
CHECKS = checks.CHECKS
MUTANTS = mutants.MUTANTS
AUDITS = audits.AUDITS

# What the paper's experiments simulate and score; each check names those it pins (``pins``)
# and each mutant those it breaks (``breaks``): `dpsim list cai --pins`.
COMPONENTS = {
    "generator:theta-design": "edge-DP θ*: k = round(n/4) items at the top score, e^{θ_i − θ_top} ~ Unif(0.2, 0.7) "
    "off the top (cai §4.1.1)",
    "generator:er-graph": "the comparison graph G(n, p), edges independent (cai §2.1)",
    "generator:btl-outcomes": "BTL outcomes on the graph's edges, P(i beats j) = σ(θ_i − θ_j) (cai §2.1)",
    "generator:individual-design": "individual-DP θ*: ⌊n/4⌋ top items first, the others as the edge design (docs/cai.md, Model)",
    "generator:individual-comparisons": "m users × L uniform pairs each and their BTL outcomes (docs/cai.md, Model)",
    "mechanism:edge-counts": "Algorithm 2: Laplace(2/ε) on every item's win count (edge DP, §2.3.1)",
    "mechanism:edge-objective-perturbation": "Algorithm 1 under edge DP: w ~ Laplace(8/ε)ⁿ, "
    "γ = max(1/ε, c0√(np ln n)) (§2.2.1)",
    "mechanism:individual-objective-perturbation": "Algorithm 1 under individual DP: λ = 8L/ε, γ = 2L/ε (§3.2)",
    "mechanism:individual-counts-strict": "Algorithm 3, strict mode: Laplace(2L/ε) on the counts "
    "(docs/cai.md, Errata and modes (E3))",
    "mechanism:individual-counts-paper": "Algorithm 3 as printed: Laplace(L/ε) on the counts (§3.3)",
    "metric:relative_hamming": "|Ŝ ∖ S|/k of the top-k set (§4.1.1)",
    "metric:kendall": "share of the pairs θ* orders that the ranking inverts",
    "metric:mean_rank_diff": "mean |rank difference| between the ranking and θ*'s",
    "metric:exact_recovery": "1 when the top-k set is exactly θ*'s, else 0",
    "metric:l2": "‖θ̂ − θ*‖₂",
    "metric:linf": "‖θ̂ − θ*‖∞",
    "metric:log_rel_l2": "ln(‖θ̂ − θ*‖₂/‖θ*‖₂) (Figures 1–3, 5–7)",
    "metric:log_rel_linf": "ln(‖θ̂ − θ*‖∞/‖θ*‖∞) (Figures 1–3, 5–7)",
}
