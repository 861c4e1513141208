"""nguyen — "Optimal and Private Learning from Human Response Data" (Duc Nguyen, Anderson Y.
Zhang, AISTATS 2023); its page in
the repository, docs/nguyen.md (``PAGE``), describes the model, the mechanisms and estimators
as implemented, the predictions checked, and each erratum with the mode chosen for it.

The package follows the paper skeleton (docs/architecture.md, "A paper's skeleton"): ``model``
(the modes' privacy parameters, axis types, symbols and labels), ``methods`` (the fidelity modes,
the privacy parameters derived on the host, the five methods and their scoring), ``figures`` (one
module per figure or group: ``synthetic`` Figure 1, ``real`` Figures 2–3 and supplementary Figure 1,
``rates`` the rate predictions R1–R10 of docs/nguyen.md, Predictions, ``topk`` the top-K phase
transition R6, ``design`` the calibration of the Rasch design, its sampling and the ℓ2 scoring
modes), ``checks`` (every check: the figures' and the level checks that pin every mechanism's
calibration), ``mutants`` (plausible calibration bugs the checks must catch), ``audits`` (privacy
audits of every mechanism).
"""

from . import audits, checks, figures, mutants

TITLE = "Optimal and Private Learning from Human Response Data (Nguyen, Zhang)"
PAGE = "docs/nguyen.md"

EXPERIMENTS = figures.EXPERIMENTS
CHECKS = checks.CHECKS
MUTANTS = mutants.MUTANTS
AUDITS = audits.AUDITS

# What the paper's experiments simulate and score; each check names those it pins (``pins``)
# and each mutant those it breaks (``breaks``): `dpsim list nguyen --pins`.
COMPONENTS = {
    "generator:ability-design": "abilities θ*: N(0, 1) or Unif[−1, 1] (docs/nguyen.md, Model)",
    "generator:difficulty-design": "difficulties β*, centred (docs/nguyen.md, Model)",
    "generator:missingness": "each response observed with probability p (§2)",
    "generator:rasch-responses": "Rasch responses, P(user l answers item i correctly) = σ(θ_l − β_i) (§2, eq. (1))",
    "generator:differential-counts": "the differential counts Y_ij the estimators read (eq. (2))",
    "mechanism:discrete-gaussian": "discrete-Gaussian noise on the counts, σ² = Δ²/(2ρ) by the accounting mode "
    "(§4.2, Lemma 4.1)",
    "mechanism:discrete-laplace": "discrete-Laplace noise on the counts, scale Δ₁/ε* (docs/nguyen.md, Mechanisms and "
    "estimators)",
    "mechanism:sparse-discrete-gaussian": "the discrete Gaussian on an ER(p₀) item graph, Δ² from its edges (docs/nguyen.md, Mechanisms and estimators)",
    "mechanism:shuffled-rr": "randomized response per response at ε_RR/m, ε_RR from the shuffle amplification "
    "(docs/nguyen.md, Mechanisms and estimators)",
    "metric:rasch_l2_error": "‖β̂ − β*‖₂ in its centred and paper modes (docs/nguyen.md, Errata and modes)",
}
