"""chowdhury's releases and estimators (chowdhury §4–§6; docs/chowdhury.md, Experiments as run;
Errata and modes): the privatised labels, the exact and SGD methods, their metrics and the
per-replicate (A1)–(A3) predictions, on the model of :mod:`.model`.

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

**Calibrations** (docs/chowdhury.md, Experiments as run). L = max_i‖x_i‖/2 from the public features (docs/chowdhury.md, Errata and modes (E6); legitimate under
label DP, and exactly the label sensitivity). β: ``beta = theory`` is √n/B (Thm 5.3); a number
is a fixed β (β = 1 isolates the privacy term, docs/chowdhury.md, Errata and modes (E8); Predictions (A3)). δ enters only σ.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from dpsim.estimators.linear_btl import objective_perturbation, rr_debiased
from dpsim.estimators.linear_btl_sgd import sgd_krr, sgd_mle, sgd_objective_perturbation, sgd_rr
from dpsim.engine import Method, solver_diagnostics
from dpsim.mechanisms.objective_perturbation import gaussian_objective_perturbation, theory_ridge
from dpsim.mechanisms.randomized_response import kary_randomized_response, randomized_response
from dpsim.metrics import feature_estimation_metrics, l2_error, squared_l2_error
from dpsim.results import RESULTS
from dpsim.theory import chowdhury as th

from .model import FEATURE_SCALE, sum_zero


def resolve_beta(beta, n_samples: int, radius: float):
    """β for one analysis point: √n/B for 'theory' (Thm 5.3), else the number given."""
    return theory_ridge(n_samples, radius) if beta == "theory" else jnp.asarray(beta, jnp.float64)


def privatise_rr(key, ctx):
    """ỹ = RR_ε(y), keep probability e^ε/(1 + e^ε) (chowdhury eq. (2)); ε = ∞ keeps every label."""
    return {"y_tilde": randomized_response(key, ctx.sample["y"], ctx.analysis["eps"])}


# ---------------------------------------------------------------------------------------
# Per-replicate predictions (docs/chowdhury.md, Predictions (A1)–(A3)) from the population information at θ*
# ---------------------------------------------------------------------------------------
def design_traces(ctx, ridge=0.0) -> dict:
    """:func:`dpsim.theory.chowdhury.isotropic_design_traces` at this replicate's θ*."""
    return th.isotropic_design_traces(
        jnp.linalg.norm(ctx.truth["theta"]),
        ctx.shape["dim"],
        FEATURE_SCALE[ctx.shape["features"]],
        sum_zero=sum_zero(ctx.shape),
        ridge=ridge,
    )


def mle_prediction(ctx) -> dict:
    """(A1): E‖θ_MLE − θ*‖² ≈ tr(H⁻¹)/n; its shift from itself is 0."""
    n = ctx.shape["n_samples"]
    return {
        "predicted_mse": design_traces(ctx)["tr_inv"] / n,
        "predicted_shift_sq": jnp.asarray(0.0),
    }


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
    mse = tr["stat"] / n + sigma**2 * tr["tr_inv_sq"] / n**2 + (beta / n) ** 2 * bias
    return {
        "predicted_mse": mse,
        "predicted_shift_sq": th.objective_perturbation_asymptotic_shift(
            tr["tr_inv_sq"], bias, n, sigma, beta
        ),
    }


# ---------------------------------------------------------------------------------------
# Methods: metrics and diagnostics
# ---------------------------------------------------------------------------------------
ERRORS = ("l2", "mse", "seminorm")
PREDICTIONS = ("predicted_mse", "predicted_shift_sq")
EXACT_METRICS = ERRORS + ("shift", "shift_sq") + PREDICTIONS
EXACT_DIAGNOSTICS = solver_diagnostics(on_boundary="bool", theta_ok="bool")
CENTRAL_DIAGNOSTICS = {
    **EXACT_DIAGNOSTICS,
    "privacy_certified": "bool",
    "sigma": "float",
    "beta_used": "float",
    "feature_bound": "float",
}


def errors(ctx, theta_hat) -> dict:
    """``l2``, ``mse`` (squared ℓ2) and ``seminorm`` ‖θ̂ − θ*‖_{Σ_D} (docs/chowdhury.md, Experiments as run metric row)."""
    return feature_estimation_metrics(theta_hat, ctx.truth["theta"], ctx.sample["x"])


def exact_row(ctx, theta_hat, solver: dict, on_boundary) -> dict:
    """The row of an exact method: errors, shift from θ_MLE, ``solver`` (a fit's
    ``solver_diagnostics()``: converged, iterations, result, grad_norm) and ``on_boundary``."""
    shift = theta_hat - ctx.sample["mle_theta"]
    return {
        **errors(ctx, theta_hat),
        "shift": jnp.linalg.norm(shift),
        "shift_sq": jnp.dot(shift, shift),
        **solver,
        "on_boundary": on_boundary,
        "theta_ok": ctx.truth["theta_ok"],
    }


def mle_fn(key, ctx):
    """θ_MLE (chowdhury eq. (8), [ZJJ23]), the exact projected minimiser fitted in ``generate``
    (ε-free: the same value at every ε of a replicate)."""
    s = ctx.sample
    solver = {k: s[f"mle_{k}"] for k in ("converged", "iterations", "result", "grad_norm")}
    return {**exact_row(ctx, s["mle_theta"], solver, s["mle_on_boundary"]), **mle_prediction(ctx)}


def rr_local_fn(key, ctx):
    """θ̂_RR (chowdhury eqs. (4)–(6), Thm 4.2): the de-biased RR loss minimised exactly over Θ_B
    on the shared RR labels; ε-label DP in the local model."""
    eps = ctx.analysis["eps"]
    fit = rr_debiased(
        ctx.sample["x"],
        ctx.released["y_tilde"],
        eps,
        ctx.shape["radius"],
        sum_zero=sum_zero(ctx.shape),
    )
    return {
        **exact_row(ctx, fit.theta, fit.solver_diagnostics(), fit.info["on_boundary"]),
        **rr_prediction(ctx, eps),
        "flip_rate": flip_rate(ctx),
    }


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
    :mod:`.mutants` pass a wrong one). ``noise_sq``: :func:`effective_noise_sq`."""
    shape = ctx.shape
    beta = resolve_beta(ctx.analysis["beta"], shape["n_samples"], shape["radius"])
    release = gaussian_objective_perturbation(
        key,
        ctx.sample["x"],
        ctx.analysis["eps"],
        ctx.analysis["delta"],
        shape["radius"],
        beta=beta,
        feature_bound=feature_bound,
    )
    fit = objective_perturbation(
        ctx.sample["x"], ctx.sample["y"], release, shape["radius"], sum_zero=sum_zero(shape)
    )
    info = fit.info
    usable = fit.converged & ~info["on_boundary"]
    return {
        **exact_row(ctx, fit.theta, fit.solver_diagnostics(), info["on_boundary"]),
        **objpert_prediction(ctx, info["sigma"], info["beta"]),
        "noise_sq": effective_noise_sq(ctx, fit.theta, beta, usable),
        "privacy_certified": info["privacy_certified"],
        "sigma": info["sigma"],
        "beta_used": info["beta"],
        "feature_bound": info["feature_bound"],
    }


EXACT_METHODS = {
    "mle": Method(
        mle_fn,
        EXACT_METRICS,
        EXACT_DIAGNOSTICS,
        label="non-private MLE",
        doc="θ_MLE, exact projected minimiser of eq. (8) (ε-free)",
    ),
    "rr_local": Method(
        rr_local_fn,
        EXACT_METRICS + ("flip_rate",),
        EXACT_DIAGNOSTICS,
        label="RR (local)",
        doc="θ̂_RR, exact minimiser of the de-biased RR loss (eqs. (4)–(6)), local ε-label DP",
    ),
    "objpert_central": Method(
        objpert_central_fn,
        EXACT_METRICS + ("noise_sq",),
        CENTRAL_DIAGNOSTICS,
        label="ObjPert (central)",
        doc="θ̂_obj, Algorithm 2 solved exactly, central (ε, δ)-label DP",
    ),
}

# ---------------------------------------------------------------------------------------
# SGD methods (the paper's §6 wording; secondary reading)
# ---------------------------------------------------------------------------------------
# One-pass SGD has no tolerance: result is successful or nonfinite, and no gradient norm.
SGD_DIAGNOSTICS = {"converged": "bool", "iterations": "int", "result": "int", "theta_ok": "bool"}


def sgd_row(ctx, fit) -> dict:
    return {
        **errors(ctx, fit.theta),
        "converged": fit.converged,
        "iterations": fit.iterations,
        "result": fit.result,
        "theta_ok": ctx.truth["theta_ok"],
    }


def sgd_options(ctx) -> dict:
    """The SGD fits' options at one analysis point; κ̂ (the theory schedule's λ_min(Σ_D))
    comes from the replicate's sample (:func:`sgd_generate`)."""
    return {
        "schedule": ctx.analysis["mode"],
        "sum_zero": sum_zero(ctx.shape),
        "kappa": ctx.sample["kappa"],
    }


def sgd_mle_fn(key, ctx):
    """Non-private MLE by one-pass projected SGD (chowdhury §6, "using SGD updates"), with the
    data's link (probit: the Thurstone extension, §4.4)."""
    fit = sgd_mle(
        ctx.sample["x"],
        ctx.sample["y"],
        ctx.shape["radius"],
        link=ctx.shape["link"],
        **sgd_options(ctx),
    )
    return sgd_row(ctx, fit)


def sgd_rr_fn(key, ctx):
    """θ̂_SGD-RR, Algorithm 1 on the shared RR labels (chowdhury §4.3, Thm 4.5; probit link §4.4)."""
    fit = sgd_rr(
        ctx.sample["x"],
        ctx.released["y_tilde"],
        ctx.analysis["eps"],
        ctx.shape["radius"],
        link=ctx.shape["link"],
        **sgd_options(ctx),
    )
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
        return {
            "l2": nan,
            "mse": nan,
            "seminorm": nan,
            "converged": jnp.asarray(False),
            "iterations": jnp.asarray(0),
            "result": jnp.asarray(RESULTS.nonfinite, jnp.int8),
            "theta_ok": ctx.truth["theta_ok"],
            "privacy_certified": jnp.asarray(False),
            "sigma_sq_per_l_sq": nan,
        }
    beta = resolve_beta(ctx.analysis["beta"], shape["n_samples"], shape["radius"])
    release = gaussian_objective_perturbation(
        key,
        ctx.sample["x"],
        ctx.analysis["eps"],
        ctx.analysis["delta"],
        shape["radius"],
        beta=beta,
        feature_bound=feature_bound,
    )
    fit = sgd_objective_perturbation(
        ctx.sample["x"], ctx.sample["y"], release, shape["radius"], **sgd_options(ctx)
    )
    sigma_per_l = fit.info["sigma"] / public_feature_bound(ctx.sample["x"])
    return {
        **sgd_row(ctx, fit),
        "privacy_certified": fit.info["privacy_certified"],
        "sigma_sq_per_l_sq": sigma_per_l**2,
    }


SGD_METHODS = {
    "sgd_mle": Method(
        sgd_mle_fn,
        ERRORS,
        SGD_DIAGNOSTICS,
        label="non-private MLE (SGD)",
        doc="one-pass projected SGD on the clear labels",
    ),
    "sgd_rr": Method(
        sgd_rr_fn,
        ERRORS + ("flip_rate",),
        SGD_DIAGNOSTICS,
        label="SGD-RR (local)",
        doc="Algorithm 1: one-pass projected SGD on RR labels",
    ),
    "sgd_objpert": Method(
        sgd_objpert_fn,
        ERRORS + ("sigma_sq_per_l_sq",),
        {**SGD_DIAGNOSTICS, "privacy_certified": "bool"},
        label="ObjPert by SGD (central, not certified)",
        doc="Algorithm 2's objective by one-pass projected SGD (privacy not certified)",
    ),
}


# ---------------------------------------------------------------------------------------
# Plackett–Luce top-1 with K-ary RR (chowdhury §4.4, App. C.4; ``chowdhury-rates-k``)
# ---------------------------------------------------------------------------------------
def privatise_krr(key, ctx):
    """K-ary RR of the top-1 labels (eq. (12)), shared at one ε."""
    return {
        "y_tilde": kary_randomized_response(
            key, ctx.sample["y"], ctx.analysis["eps"], ctx.shape["n_actions"]
        )
    }


def _pl_row(ctx, fit):
    theta = ctx.truth["theta"]
    return {
        "l2": l2_error(fit.theta, theta),
        "mse": squared_l2_error(fit.theta, theta),
        "converged": fit.converged,
        "iterations": fit.iterations,
        "result": fit.result,
        "theta_ok": ctx.truth["theta_ok"],
    }


def sgd_krr_fn(key, ctx):
    """θ̂_SGD-KRR (chowdhury §4.4, App. C.4, Thm C.2) on the K-RR labels."""
    fit = sgd_krr(
        ctx.sample["phi"],
        ctx.released["y_tilde"],
        ctx.analysis["eps"],
        ctx.shape["radius"],
        schedule=ctx.analysis["mode"],
        sum_zero=sum_zero(ctx.shape),
    )
    return _pl_row(ctx, fit)


def sgd_pl_fn(key, ctx):
    """The same one-pass SGD on the clear labels (ε = ∞: ĝ = −∇log p_y, λ̂ = γ̂κ̂)."""
    fit = sgd_krr(
        ctx.sample["phi"],
        ctx.sample["y"],
        math.inf,
        ctx.shape["radius"],
        schedule=ctx.analysis["mode"],
        sum_zero=sum_zero(ctx.shape),
    )
    return _pl_row(ctx, fit)


PL_METHODS = {
    "sgd_pl": Method(
        sgd_pl_fn,
        ("l2", "mse"),
        SGD_DIAGNOSTICS,
        label="non-private (SGD)",
        doc="one-pass projected SGD on clear Plackett–Luce labels",
    ),
    "sgd_krr": Method(
        sgd_krr_fn,
        ("l2", "mse"),
        SGD_DIAGNOSTICS,
        label="SGD-KRR (local)",
        doc="App. C.4: one-pass projected SGD on K-ary RR labels",
    ),
}
