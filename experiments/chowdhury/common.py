"""chowdhury: the pieces every experiment of the package shares
(chowdhury §6; docs/chowdhury.md, Experiments as run; Errata and modes): axes, the θ* designs, the data of one
replicate, the privatised labels, the exact and SGD methods, their metrics and the per-replicate
(A1)–(A3) predictions, the paper's symbols and the checks of bad input.

**Pipeline of one replicate** (DESIGN "one pipeline").

* θ* (``truth``, per replicate: ``truth_per_replicate=True``): ``design = faithful`` draws
  θ* ~ N(0, I_d) conditioned on ‖θ*‖ ≤ B = 2√d (docs/chowdhury.md, Errata and modes (E4), the paper's §6 draw made to
  satisfy Assumption 2.1; no sum-zero); ``design = theory`` draws θ* uniformly on the sphere
  ‖θ*‖ = 1 of 1^⊥ (Assumption 2.1 exactly, with the sum-zero constraint in Θ_B, docs/chowdhury.md,
  Errata and modes (E4, E17)). The draw's ``ok`` flag (16 rejection candidates all refused: probability
  < 1e-21) is reported as the diagnostic ``theta_ok`` of every row.
  *Engine limitation:* the runner keys θ* by (seed, shape point, replicate), and n is a shape
  axis (it changes array shapes), so θ* is common to every ε, δ and method of a replicate
  but redrawn for each n (the paper does not say; chowdhury §6). Checks in n are therefore fits
  over independent θ* draws; the theory design (‖θ*‖ fixed) removes that variance.
* data (``generate``): x_i = ϕ¹ − ϕ⁰ ~ N(0, 2I_d) (``features = difference``, docs/chowdhury.md, Errata and modes (E5))
  or x_i ~ N(0, I_d) (``direct``), labels from the link (BTL; probit = Thurstone §4.4). The data
  key leaves out ε and δ, so every privacy level of a replicate sees the same data. The exact
  non-private MLE θ_MLE (eq. (8)) is fitted here, once per replicate, and every method also
  reports its ``shift`` = ‖θ̂ − θ_MLE‖ on the same data (the privacy cost alone, as the cai
  package does; far less Monte-Carlo noise than a difference of errors).
* privatised labels (``privatise``, shared by the local methods at one ε: common random
  numbers): ỹ = RR_ε(y) (eq. (2)), or K-ary RR for Plackett–Luce (eq. (12)).

**Optimiser fork** (docs/chowdhury.md, Experiments as run; Errata and modes (E3, E9)). The paper says its three estimators were
"implemented with SGD updates, η = 0.1". Read literally (one pass, constant η = 0.1, last
iterate) the errors do not decrease in n (docs/chowdhury.md, Experiments as run), contradicting the paper's finding 1. The
package therefore has two readings, as separate experiments:

* ``exact`` (the default and the primary Fig. 1 reproduction): each estimator is the exact
  projected minimiser of its objective (projected Newton to a gradient mapping ≤ 1e-10):
  ``mle`` (eq. (8)), ``rr_local`` = θ̂_RR (eqs. (4)–(6)), ``objpert_central`` = θ̂_obj
  (Algorithm 2). These are what Thms 4.2 and 5.3 analyse, and the only reading under which
  the central privacy claim (Thm 5.2, exact minimiser) holds: ``privacy_certified`` is the
  solver's convergence flag.
* ``sgd`` (secondary): one-pass projected SGD (Alg. 1 and its analogues) with the ``mode``
  axis, the reading of the paper's SGD step sizes: ``literal`` (η ≡ 0.1, last iterate: the
  paper's words), ``theory`` (η_t = 1/(λ̂(t + t₀)), the proof's schedule with practical λ̂) and
  ``averaged`` (η ≡ 0.1, Polyak–Ruppert). SGD objective perturbation is not the exact
  minimiser: ``privacy_certified`` is False.

**Calibrations** (docs/chowdhury.md, Experiments as run). Radius B = 2√d for every design (stored as the shape-level
column ``radius``). L = max_i‖x_i‖/2 from the public features (docs/chowdhury.md, Errata and modes (E6); legitimate under
label DP, and exactly the label sensitivity). β: ``beta = theory`` is √n/B (Thm 5.3); a number
is a fixed β (β = 1 isolates the privacy term, docs/chowdhury.md, Errata and modes (E8); Predictions (A3)). δ enters only σ.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from dpsim.estimators.linear_btl import mle, objective_perturbation, rr_debiased
from dpsim.estimators.linear_btl_sgd import SCHEDULES, feature_coverage, sgd_mle, sgd_objective_perturbation, sgd_rr
from dpsim.engine import Derived, Method, UsageError, solver_diagnostics
from dpsim.engine.definition import axes
from dpsim.engine.definition.axes import AxisType
from dpsim.mechanisms.objective_perturbation import gaussian_objective_perturbation, theory_ridge
from dpsim.mechanisms.randomized_response import randomized_response
from dpsim.metrics import feature_estimation_metrics
from dpsim.results import RESULTS
from dpsim.models.linear_btl import (FEATURES, THETA_DESIGNS, default_radius, sample_linear_btl,
                                     sample_theta_star)
from dpsim.theory import chowdhury as th

INF = math.inf
PAPER_REPS = 100            # "Each sample size is repeated 100 times" (chowdhury §6)
PAPER_DELTA = 1e-3          # δ = 0.001 for θ̂_obj (chowdhury §6)
PAPER_EPS = [0.1, 0.5, 1.0]
PAPER_N = list(range(1000, 10001, 1000))     # 1000 ≤ n ≤ 10000, docs/chowdhury.md, Experiments as run grid
THEORY_NORM = 1.0           # ‖θ*‖ of the theory design (docs/chowdhury.md, Errata and modes (E4), "e.g. 1")
FEATURE_SCALE = {"difference": math.sqrt(2.0), "direct": 1.0}   # x ~ N(0, s²I_d)


# ---------------------------------------------------------------------------------------
# Axes of the package (the vocabulary's n_samples, dim, eps, delta, n_actions, link are shared)
# ---------------------------------------------------------------------------------------
def _beta_value(axis, value):
    if value == "theory":
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < math.inf):
        raise UsageError(f"{axis}={value!r}: use 'theory' (β = √n/B, Thm 5.3) or a finite number > 0")
    return float(value)


AXIS_TYPES = {
    "design": axes.choice(*THETA_DESIGNS, doc="θ* design: faithful (N(0, I_d) given ‖θ*‖ ≤ 2√d, no "
                                              "sum-zero) or theory (‖θ*‖ = 1 on 1^⊥, sum-zero Θ_B); docs/chowdhury.md, Errata and modes (E4)"),
    "features": axes.choice(*FEATURES, doc="x = ϕ¹ − ϕ⁰ ~ N(0, 2I) (difference) or x ~ N(0, I) (direct); "
                                           "docs/chowdhury.md, Errata and modes (E5)"),
    "mode": axes.choice(*SCHEDULES, doc="reading of the paper's SGD step sizes: literal η ≡ 0.1 (last "
                                        "iterate, the paper's words), theory 1/(λ̂(t + t0)) (the proof's "
                                        "schedule), averaged (η ≡ 0.1, Polyak–Ruppert); docs/chowdhury.md, Experiments as run"),
    "beta": AxisType(_beta_value, "ridge β of objective perturbation: theory (√n/B, Thm 5.3) or a number"),
}

# axes renamed after their random streams were fixed → the name they are keyed under
# (Experiment.stream_names): results are unchanged by the rename
STREAM_NAMES = {"n_actions": "k", "mode": "schedule"}

SYMBOLS = {"n_samples": "$n$", "dim": "$d$", "eps": "$\\epsilon$", "delta": "$\\delta$", "n_actions": "$K$",
           "beta": "$\\beta$", "radius": "$B$", "design": "θ* design", "features": "features",
           "mode": "schedule", "link": "link"}
# what the figures write for the named values of the axes (FigureSpec.value_labels)
VALUE_LABELS = {
    "design": {"faithful": "$\\theta^* \\sim N(0, I_d)$ given $\\|\\theta^*\\|_2 \\leq 2\\sqrt{d}$",
               "theory": "$\\|\\theta^*\\|_2 = 1$, $\\theta^* \\perp \\mathbf{1}$"},
    "features": {"difference": "$x = \\phi^1 - \\phi^0 \\sim N(0, 2I_d)$", "direct": "$x \\sim N(0, I_d)$"},
    "beta": {"theory": "$\\beta = \\sqrt{n}/B$ (Thm 5.3)"},
    "mode": {"literal": "$\\eta \\equiv 0.1$, last iterate", "theory": "$\\eta_t = 1/(\\hat\\lambda(t + t_0))$",
                 "averaged": "$\\eta \\equiv 0.1$, Polyak–Ruppert average"},
}


def sum_zero(shape: dict) -> bool:
    """The sum-zero constraint ⟨1, θ⟩ = 0 in Θ_B: on for the theory design only (docs/chowdhury.md, Errata and modes (E17))."""
    return shape["design"] == "theory"


def radius_of(point: dict) -> dict:
    """Shape-level derived value: B = 2√d (docs/chowdhury.md, Experiments as run), with the dimension checked."""
    d = point["dim"]
    if point.get("design") == "theory" and d < 2:
        raise UsageError(f"dim={d} is too small for design=theory (θ* ∈ 1^⊥ needs dim ≥ 2)")
    return {"radius": default_radius(d)}


RADIUS = Derived(("radius",), radius_of, level="shape", doc="radius B = 2√d of Θ_B (docs/chowdhury.md, Experiments as run)")


def resolve_beta(beta, n_samples: int, radius: float):
    """β for one analysis point: √n/B for 'theory' (Thm 5.3), else the number given."""
    return theory_ridge(n_samples, radius) if beta == "theory" else jnp.asarray(beta, jnp.float64)


# ---------------------------------------------------------------------------------------
# Truth and data
# ---------------------------------------------------------------------------------------
def truth(key, shape):
    """θ* of one replicate from the shape's design (module docstring)."""
    options = {"norm": THEORY_NORM} if shape["design"] == "theory" else {"radius": shape["radius"]}
    draw = sample_theta_star(key, shape["dim"], shape["design"], **options)
    return {"theta": draw.theta, "theta_ok": draw.ok}


def binary_data(key, shape, truth, link: str = "logistic") -> dict:
    """One replicate's features and labels (chowdhury eq. (1), §6): x (n, d), y (n,)."""
    data = sample_linear_btl(key, truth["theta"], shape["n_samples"], features=shape["features"], link=link)
    return {"x": data.x, "y": data.y}


def generate_with_mle(key, shape, truth, data):
    """:func:`binary_data` (logistic link) plus the exact non-private MLE on it (eq. (8)),
    shared by every method and ε of the replicate."""
    sample = binary_data(key, shape, truth)
    fit = mle(sample["x"], sample["y"], shape["radius"], sum_zero=sum_zero(shape))
    return {**sample, "mle_theta": fit.theta, **{f"mle_{k}": v for k, v in fit.solver_diagnostics().items()},
            "mle_on_boundary": fit.info["on_boundary"]}


def privatise_rr(key, ctx):
    """ỹ = RR_ε(y), keep probability e^ε/(1 + e^ε) (chowdhury eq. (2)); ε = ∞ keeps every label."""
    return {"y_tilde": randomized_response(key, ctx.sample["y"], ctx.analysis["eps"])}


# ---------------------------------------------------------------------------------------
# Per-replicate predictions (docs/chowdhury.md, Predictions (A1)–(A3)) from the population information at θ*
# ---------------------------------------------------------------------------------------
def design_traces(ctx, ridge=0.0) -> dict:
    """:func:`dpsim.theory.chowdhury.isotropic_design_traces` at this replicate's θ*."""
    return th.isotropic_design_traces(jnp.linalg.norm(ctx.truth["theta"]), ctx.shape["dim"],
                                      FEATURE_SCALE[ctx.shape["features"]], sum_zero=sum_zero(ctx.shape),
                                      ridge=ridge)


def mle_prediction(ctx) -> dict:
    """(A1): E‖θ_MLE − θ*‖² ≈ tr(H⁻¹)/n; its shift from itself is 0."""
    n = ctx.shape["n_samples"]
    return {"predicted_mse": design_traces(ctx)["tr_inv"] / n, "predicted_shift_sq": jnp.asarray(0.0)}


def rr_prediction(ctx, eps) -> dict:
    """(A2): E‖θ̂_RR − θ*‖² ≈ [tr H⁻¹ + e^ε/(e^ε − 1)²·tr(H⁻¹ΣH⁻¹)]/n, and the privacy excess alone,
    E‖θ̂_RR − θ_MLE‖² ≈ e^ε/(e^ε − 1)²·tr(H⁻¹ΣH⁻¹)/n (P3'); ε = ∞ gives 0 excess."""
    n = ctx.shape["n_samples"]
    tr = design_traces(ctx)
    excess = th.rr_excess_variance_factor(eps) * tr["sandwich"] / n
    return {"predicted_mse": tr["tr_inv"] / n + excess, "predicted_shift_sq": excess}


def objpert_prediction(ctx, sigma, beta) -> dict:
    """(A3): E‖θ̂_obj − θ*‖² ≈ tr(H_β⁻¹HH_β⁻¹)/n + σ²tr(H_β⁻²)/n² + (β/n)²‖H_β⁻¹θ*‖², and the shift
    from the MLE (:func:`dpsim.theory.chowdhury.objective_perturbation_asymptotic_shift`)."""
    n = ctx.shape["n_samples"]
    tr = design_traces(ctx, ridge=beta / n)
    bias = jnp.sum(ctx.truth["theta"] ** 2) * tr["bias_factor"]
    mse = tr["stat"] / n + sigma ** 2 * tr["tr_inv_sq"] / n ** 2 + (beta / n) ** 2 * bias
    return {"predicted_mse": mse,
            "predicted_shift_sq": th.objective_perturbation_asymptotic_shift(tr["tr_inv_sq"], bias, n, sigma, beta)}


# ---------------------------------------------------------------------------------------
# Methods: metrics and diagnostics
# ---------------------------------------------------------------------------------------
ERRORS = ("l2", "mse", "seminorm")
PREDICTIONS = ("predicted_mse", "predicted_shift_sq")
EXACT_METRICS = ERRORS + ("shift", "shift_sq") + PREDICTIONS
EXACT_DIAGNOSTICS = solver_diagnostics(on_boundary="bool", theta_ok="bool")
CENTRAL_DIAGNOSTICS = {**EXACT_DIAGNOSTICS, "privacy_certified": "bool", "sigma": "float", "beta_used": "float",
                       "feature_bound": "float"}


def errors(ctx, theta_hat) -> dict:
    """``l2``, ``mse`` (squared ℓ2) and ``seminorm`` ‖θ̂ − θ*‖_{Σ_D} (docs/chowdhury.md, Experiments as run metric row)."""
    return feature_estimation_metrics(theta_hat, ctx.truth["theta"], ctx.sample["x"])


def exact_row(ctx, theta_hat, solver: dict, on_boundary) -> dict:
    """The row of an exact method: errors, shift from θ_MLE, ``solver`` (a fit's
    ``solver_diagnostics()``: converged, iterations, result, grad_norm) and ``on_boundary``."""
    shift = theta_hat - ctx.sample["mle_theta"]
    return {**errors(ctx, theta_hat), "shift": jnp.linalg.norm(shift), "shift_sq": jnp.dot(shift, shift),
            **solver, "on_boundary": on_boundary, "theta_ok": ctx.truth["theta_ok"]}


def mle_fn(key, ctx):
    """θ_MLE (chowdhury eq. (8), [ZJJ23]), the exact projected minimiser fitted in ``generate``
    (ε-free: the same value at every ε of a replicate)."""
    s = ctx.sample
    solver = {k: s[f"mle_{k}"] for k in ("converged", "iterations", "result", "grad_norm")}
    return {**exact_row(ctx, s["mle_theta"], solver, s["mle_on_boundary"]),
            **mle_prediction(ctx)}


def rr_local_fn(key, ctx):
    """θ̂_RR (chowdhury eqs. (4)–(6), Thm 4.2): the de-biased RR loss minimised exactly over Θ_B
    on the shared RR labels; ε-label DP in the local model."""
    eps = ctx.analysis["eps"]
    fit = rr_debiased(ctx.sample["x"], ctx.released["y_tilde"], eps, ctx.shape["radius"],
                      sum_zero=sum_zero(ctx.shape))
    return {**exact_row(ctx, fit.theta, fit.solver_diagnostics(), fit.info["on_boundary"]),
            **rr_prediction(ctx, eps), "flip_rate": flip_rate(ctx)}


def flip_rate(ctx):
    """The share of released labels that differ from the clear ones, mean(ỹ ≠ y): the RR
    mechanism's own output (its law is 1/(1 + e^ε) exactly, eq. (2); a level check compares
    it with that closed form)."""
    return jnp.mean(jnp.asarray(ctx.released["y_tilde"] != ctx.sample["y"], jnp.float64))


def public_feature_bound(x):
    """L = max_i‖x_i‖/2 from the public features (docs/chowdhury.md, Errata and modes (E6)), computed here, apart from
    the mechanism's own helper, for the noise metrics."""
    return 0.5 * jnp.max(jnp.linalg.norm(x, axis=-1))


def effective_noise_sq(ctx, theta_hat, beta, usable):
    """‖P_V w‖²/(r L²): the objective-perturbation noise the exact minimiser actually carries,
    recovered from its first-order condition. At an interior minimiser of
    l_D(θ) + (β/2)‖θ‖² + wᵀθ over V (Alg. 2, sum form), P_V w = −P_V[Σ(σ(x_iᵀθ̂) − y_i)x_i + βθ̂],
    with V = 1^⊥ (r = d − 1) under the sum-zero constraint, else R^d (r = d). So
    E‖P_V w‖²/(r L²) = (σ/L)² = (8 log(2/δ) + 4ε)/ε² under Thm 5.2, whatever θ* is. NaN where
    the fit is on the boundary of Θ_B (a multiplier enters) or did not converge (``usable``
    False). The solver's tolerance (gradient mapping ≤ 1e-10 in the averaged loss) leaves an
    error ≤ n·1e-10 on w, negligible against σ ≥ 1."""
    x, y = ctx.sample["x"], jnp.asarray(ctx.sample["y"], jnp.float64)
    w = -(x.T @ (jax.nn.sigmoid(x @ theta_hat) - y) + beta * theta_hat)
    dim = x.shape[1]
    if sum_zero(ctx.shape):
        w, r = w - jnp.mean(w), dim - 1
    else:
        r = dim
    value = jnp.dot(w, w) / (r * public_feature_bound(x) ** 2)
    return jnp.where(usable, value, jnp.nan)


def objpert_central_fn(key, ctx, feature_bound=None):
    """θ̂_obj (chowdhury Algorithm 2, Thm 5.2): w ~ N(0, σ²I), σ = L√(8 log(2/δ) + 4ε)/ε with
    L = max‖x_i‖/2, then the exact projected minimiser of the perturbed, β-regularised loss;
    (ε, δ)-label DP in the central model when the solve converged (``privacy_certified``).
    ``feature_bound`` overrides L (None: the library's max‖x_i‖/2; the mutants of
    :mod:`.levels` pass a wrong one). ``noise_sq``: :func:`effective_noise_sq`."""
    shape = ctx.shape
    beta = resolve_beta(ctx.analysis["beta"], shape["n_samples"], shape["radius"])
    release = gaussian_objective_perturbation(key, ctx.sample["x"], ctx.analysis["eps"], ctx.analysis["delta"],
                                              shape["radius"], beta=beta, feature_bound=feature_bound)
    fit = objective_perturbation(ctx.sample["x"], ctx.sample["y"], release, shape["radius"], sum_zero=sum_zero(shape))
    info = fit.info
    usable = fit.converged & ~info["on_boundary"]
    return {**exact_row(ctx, fit.theta, fit.solver_diagnostics(), info["on_boundary"]),
            **objpert_prediction(ctx, info["sigma"], info["beta"]),
            "noise_sq": effective_noise_sq(ctx, fit.theta, beta, usable),
            "privacy_certified": info["privacy_certified"], "sigma": info["sigma"], "beta_used": info["beta"],
            "feature_bound": info["feature_bound"]}


EXACT_METHODS = {
    "mle": Method(mle_fn, EXACT_METRICS, EXACT_DIAGNOSTICS, label="non-private MLE",
                  doc="θ_MLE, exact projected minimiser of eq. (8) (ε-free)"),
    "rr_local": Method(rr_local_fn, EXACT_METRICS + ("flip_rate",), EXACT_DIAGNOSTICS, label="RR (local)",
                       doc="θ̂_RR, exact minimiser of the de-biased RR loss (eqs. (4)–(6)), local ε-label DP"),
    "objpert_central": Method(objpert_central_fn, EXACT_METRICS + ("noise_sq",), CENTRAL_DIAGNOSTICS,
                              label="ObjPert (central)",
                              doc="θ̂_obj, Algorithm 2 solved exactly, central (ε, δ)-label DP"),
}

# ---------------------------------------------------------------------------------------
# SGD methods (the paper's §6 wording; secondary reading)
# ---------------------------------------------------------------------------------------
# One-pass SGD has no tolerance: result is successful or nonfinite, and no gradient norm.
SGD_DIAGNOSTICS = {"converged": "bool", "iterations": "int", "result": "int", "theta_ok": "bool"}


def sgd_row(ctx, fit) -> dict:
    return {**errors(ctx, fit.theta), "converged": fit.converged, "iterations": fit.iterations,
            "result": fit.result, "theta_ok": ctx.truth["theta_ok"]}


def sgd_options(ctx) -> dict:
    """The SGD fits' options at one analysis point; κ̂ (the theory schedule's λ_min(Σ_D))
    comes from the replicate's sample (:func:`sgd_generate`)."""
    return {"schedule": ctx.analysis["mode"], "sum_zero": sum_zero(ctx.shape), "kappa": ctx.sample["kappa"]}


def sgd_mle_fn(key, ctx):
    """Non-private MLE by one-pass projected SGD (chowdhury §6, "using SGD updates"), with the
    data's link (probit: the Thurstone extension, §4.4)."""
    fit = sgd_mle(ctx.sample["x"], ctx.sample["y"], ctx.shape["radius"], link=ctx.shape["link"], **sgd_options(ctx))
    return sgd_row(ctx, fit)


def sgd_rr_fn(key, ctx):
    """θ̂_SGD-RR, Algorithm 1 on the shared RR labels (chowdhury §4.3, Thm 4.5; probit link §4.4)."""
    fit = sgd_rr(ctx.sample["x"], ctx.released["y_tilde"], ctx.analysis["eps"], ctx.shape["radius"],
                 link=ctx.shape["link"], **sgd_options(ctx))
    return {**sgd_row(ctx, fit), "flip_rate": flip_rate(ctx)}


def sgd_objpert_fn(key, ctx, feature_bound=None):
    """Objective perturbation approximated by one-pass projected SGD (chowdhury §6), the same σ,
    β and L as the exact method; **privacy not certified** (docs/chowdhury.md, Errata and modes (E9)). Its loss is the
    logistic one: with ``link = probit`` there is no objective-perturbation estimator in the
    paper (its privacy proof needs a loss linear in the label), and the metrics are NaN.
    ``feature_bound`` overrides L (None: max‖x_i‖/2; the mutants pass a wrong one).
    ``sigma_sq_per_l_sq`` = (σ/L)² with the σ the fit reports and L = max‖x_i‖/2 computed here:
    the one-pass SGD does not return its w (so the effective-noise metric of the exact method
    cannot be formed), and a level check compares this with Thm 5.2's (8 log(2/δ) + 4ε)/ε²."""
    shape = ctx.shape
    if shape["link"] != "logistic":
        nan = jnp.asarray(jnp.nan)
        return {"l2": nan, "mse": nan, "seminorm": nan, "converged": jnp.asarray(False),
                "iterations": jnp.asarray(0), "result": jnp.asarray(RESULTS.nonfinite, jnp.int8), "theta_ok": ctx.truth["theta_ok"], "privacy_certified": jnp.asarray(False),
                "sigma_sq_per_l_sq": nan}
    beta = resolve_beta(ctx.analysis["beta"], shape["n_samples"], shape["radius"])
    release = gaussian_objective_perturbation(key, ctx.sample["x"], ctx.analysis["eps"], ctx.analysis["delta"],
                                              shape["radius"], beta=beta, feature_bound=feature_bound)
    fit = sgd_objective_perturbation(ctx.sample["x"], ctx.sample["y"], release, shape["radius"], **sgd_options(ctx))
    sigma_per_l = fit.info["sigma"] / public_feature_bound(ctx.sample["x"])
    return {**sgd_row(ctx, fit), "privacy_certified": fit.info["privacy_certified"],
            "sigma_sq_per_l_sq": sigma_per_l ** 2}


SGD_METHODS = {
    "sgd_mle": Method(sgd_mle_fn, ERRORS, SGD_DIAGNOSTICS, label="non-private MLE (SGD)",
                      doc="one-pass projected SGD on the clear labels"),
    "sgd_rr": Method(sgd_rr_fn, ERRORS + ("flip_rate",), SGD_DIAGNOSTICS, label="SGD-RR (local)",
                     doc="Algorithm 1: one-pass projected SGD on RR labels"),
    "sgd_objpert": Method(sgd_objpert_fn, ERRORS + ("sigma_sq_per_l_sq",), {**SGD_DIAGNOSTICS, "privacy_certified": "bool"},
                          label="ObjPert by SGD (central, not certified)",
                          doc="Algorithm 2's objective by one-pass projected SGD (privacy not certified)"),
}


def sgd_generate(key, shape, truth, data):
    """:func:`binary_data` with the shape's link (logistic: BTL; probit: Thurstone), and the
    feature coverage κ̂ = λ_min(Σ_D) of the theory schedule, computed once per replicate
    (it depends on the features only) rather than by every SGD fit."""
    sample = binary_data(key, shape, truth, link=shape["link"])
    return {**sample, "kappa": feature_coverage(sample["x"])}


def binary_lane_bytes(shape) -> int:
    """Working set of one replicate: a few copies of the (n, d) design and (n,) vectors."""
    return 8 * shape["n_samples"] * (6 * shape["dim"] + 12)
