"""chowdhury — "Differentially Private Reward Estimation with Preference Feedback" (Sayak Ray
Chowdhury, Xingyu Zhou, Nagarajan Natarajan); its page in the repository,
docs/chowdhury.md (``PAGE``), describes the model, the mechanisms and estimators as implemented,
the predictions checked, and each erratum with the mode chosen for it.

The package's contract, and nothing else: what the paper declares, gathered from the modules of
its skeleton (docs/architecture.md, "A paper's skeleton"):

* ``model``: axes, θ* designs, the data of one replicate (linear BTL with its exact MLE, Plackett–Luce),
  the paper's grid and symbols;
* ``methods``: the releases (RR, K-RR, objective perturbation) and the exact and SGD estimators
  as Methods, their metrics and per-replicate (A1)–(A3) predictions (the optimiser fork of
  docs/chowdhury.md, Experiments as run);
* ``figures``: one module per figure or calibration experiment (``fig1``, ``rates``,
  ``lower_bound``, ``releases``, ``design``), its Experiments and the checks read on them;
* ``checks``: every check (the figures' and the level checks pinning each mechanism's calibration);
* ``mutants``: plausible bugs the checks must catch; ``audits``: RR, K-RR and objective perturbation.
"""

from . import audits, checks, figures, mutants

TITLE = (
    "Differentially Private Reward Estimation with Preference Feedback (Chowdhury, Zhou, Natarajan)"
)
PAGE = "docs/chowdhury.md"

EXPERIMENTS = figures.EXPERIMENTS
CHECKS = checks.CHECKS
MUTANTS = mutants.MUTANTS
AUDITS = audits.AUDITS

# What the paper's experiments simulate and score; each check names those it pins (``pins``)
# and each mutant those it breaks (``breaks``): `dpsim list chowdhury --pins`.
COMPONENTS = {
    "generator:theta-design": "θ*: the theory design (sum-zero, ‖θ*‖ = 1) and the faithful one (isotropic, "
    "truncated) (docs/chowdhury.md, Model)",
    "generator:features": "pairwise features x = ϕ¹ − ϕ⁰ with ϕ ~ N(0, I_d), or x drawn directly (docs/chowdhury.md, Model)",
    "generator:logistic-labels": "preference labels, P(y = 1) = σ(xᵀθ*) (linear BTL, §2, eq. (1))",
    "generator:pl-features": "Plackett–Luce action features ϕ ~ N(0, I_d) (§4.4, App. C.4)",
    "generator:pl-choices": "Plackett–Luce top-1 choices, softmax(ϕθ*) (§4.4, App. C.4)",
    "mechanism:rr-labels": "binary randomized response on the labels: flip with probability 1/(1+e^ε) (eq. (2))",
    "mechanism:rr-debiased-loss": "the de-biased logistic loss θ̂_RR minimises on the released labels (eqs. (4)–(6), §4.2)",
    "mechanism:krr-labels": "K-ary randomized response on the choices: keep with probability e^ε/(e^ε+K−1) (eq. (12), §4.4)",
    "mechanism:objective-perturbation": "central objective perturbation, noise σ of Thm 5.2 (Alg. 2)",
    "mechanism:sgd-objective-perturbation": "objective perturbation in the one-pass SGD reading (§6; docs/chowdhury.md, "
    "Experiments as run)",
    "metric:mse": "‖θ̂ − θ*‖₂²",
    "metric:l2": "‖θ̂ − θ*‖₂",
    "metric:seminorm": "‖θ̂ − θ*‖_{Σ_D}, Σ_D = (1/n)Σ x xᵀ",
}
