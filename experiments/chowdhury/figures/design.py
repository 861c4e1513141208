"""chowdhury: level checks that pin the data-generating design and the error metrics (not the
mechanisms: :mod:`..checks` pins those), on a calibration experiment of their own,
``chowdhury-design`` (the figures' committed tables are untouched).

**Generator** (chowdhury §2, eq. (1), §6; docs/chowdhury.md, Errata and modes (E4), (E5)): θ* from
the ``faithful`` design (N(0, I_d) conditioned on ‖θ*‖ ≤ B = 2√d) or the ``theory`` design
(‖θ*‖ = 1 on 1^⊥); features x = ϕ¹ − ϕ⁰ ~ N(0, 2I_d) (``difference``) or x ~ N(0, I_d)
(``direct``); labels y ~ Bernoulli(σ(xᵀθ*)). The experiment draws them as the figures do
(:func:`..model.truth`, :func:`..model.binary_data`); the method ``design`` reports moments of
one draw, each with a closed form written here from those definitions (never through
``dpsim.models`` or ``dpsim.theory``):

* ‖θ*‖²: 1 (theory); E[χ²_d | χ²_d ≤ 4d] = d·F_{d+2}(4d)/F_d(4d) (faithful, F_r the χ²_r cdf);
* ‖Pθ*‖²/‖θ*‖², P the projection onto 1^⊥: 1 (theory) and (d − 1)/d (faithful: any isotropic
  law, whatever its radial truncation);
* mean x_ij² = s² and mean x_ij⁴/(3s⁴) = 1 (Gaussian features, s² = 2 or 1): the covariance
  scale and the law;
* the labels agreeing with sign(x_iᵀθ*), over Σ σ(|x_iᵀθ*|) (σ written here): ratio 1, which
  pins the logistic link and the scale of xᵀθ*.

**Metrics** (docs/chowdhury.md, Model; Experiments as run metric row): ``oracle_noise`` scores
θ̂ = θ* + sZ (Z ~ N(0, I_d)) with :func:`dpsim.metrics.feature_estimation_metrics`:
E mse = E l2² = d·s², E seminorm² = s²·E tr(Σ_D) = s²·d·s_x².

**Plackett–Luce** (chowdhury eq. (11), §4.4): ``chowdhury-design-pl`` pins the K-action
generator of ``chowdhury-rates-k``: mean ϕ² = 1, and the choices of the best action over
Σ softmax(ϕθ*) at that action (ratio 1).

**Regions**: every closed form is exact, so the region is e^{±6·se}, se the relative standard
error of the point's mean from the law (stated per check; 1 ± 1e-9 for the theory design's
deterministic moments).
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
from scipy import stats

from dpsim import metrics
from dpsim.engine import Experiment, Keys, Tuning, Method
from dpsim.engine.judgement.checks import (
    Claim,
    ColumnRatio,
    Every,
    Mean,
    pinned_claim,
    ratio_region,
)
from dpsim.engine.judgement.mutants import Mutant, changed_truth, replaced_method

from .. import methods, model

SE_WIDTHS = 6.0
DIM, N_SAMPLES, DESIGN_REPS = 5, 2000, 1000
DESIGNS, FEATURES = ["faithful", "theory"], ["difference", "direct"]
NOISE_SCALE = 0.1
FEATURE_VARIANCE = {"difference": 2.0, "direct": 1.0}  # x = ϕ¹ − ϕ⁰ (ϕ ~ N(0, I)) or x ~ N(0, I)
EXACT = 1e-9


# ---------------------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------------------
def theta_norm_sq(dim: int, design: str) -> float:
    """E‖θ*‖²: 1 (theory) or E[χ²_d | χ²_d ≤ 4d] = d·F_{d+2}(4d)/F_d(4d) (faithful)."""
    if design == "theory":
        return 1.0
    c2 = 4.0 * dim
    return dim * stats.chi2.cdf(c2, dim + 2) / stats.chi2.cdf(c2, dim)


def theta_norm_sq_cv2(dim: int) -> float:
    """CV² of ‖θ*‖² under the faithful design: E X² = d(d + 2)F_{d+4}(4d)/F_d(4d)."""
    c2 = 4.0 * dim
    m2 = dim * (dim + 2) * stats.chi2.cdf(c2, dim + 4) / stats.chi2.cdf(c2, dim)
    return m2 / theta_norm_sq(dim, "faithful") ** 2 - 1.0


def perp_share(dim: int, design: str) -> float:
    """E ‖Pθ*‖²/‖θ*‖²: 1 (theory, θ* ∈ 1^⊥) or (d − 1)/d (isotropic faithful design)."""
    return 1.0 if design == "theory" else (dim - 1.0) / dim


def perp_share_cv2(dim: int) -> float:
    """CV² of ‖Pθ‖²/‖θ‖² ~ Beta((d − 1)/2, ½) for an isotropic θ."""
    a, b = (dim - 1) / 2.0, 0.5
    var = a * b / ((a + b) ** 2 * (a + b + 1.0))
    return var / (a / (a + b)) ** 2


def region(rel_se: float) -> tuple[float, float]:
    """e^{±SE_WIDTHS·se}, rounded outward (:func:`dpsim.engine.judgement.checks.ratio_region`)."""
    return ratio_region(rel_se, SE_WIDTHS)


def logistic(x):
    """σ(x) = 1/(1 + e^{−x}) (chowdhury eq. (1)), written here."""
    return 1.0 / (1.0 + jnp.exp(-x))


# ---------------------------------------------------------------------------------------
# The methods
# ---------------------------------------------------------------------------------------
def design_fn(key, ctx):
    """Moments of one draw (module docstring)."""
    theta, x, y = ctx.truth["theta"], ctx.sample["x"], ctx.sample["y"]
    norm_sq = jnp.dot(theta, theta)
    perp = theta - jnp.mean(theta)
    u = x @ theta
    s2 = FEATURE_VARIANCE[ctx.shape["features"]]
    agree = jnp.where(u > 0, y, 1.0 - y)
    x2 = x * x
    return {
        "theta_norm_sq": norm_sq,
        "theta_perp_share": jnp.dot(perp, perp) / norm_sq,
        "x_msq": jnp.mean(x2),
        "x_kurtosis": jnp.mean(x2 * x2) / (3.0 * s2 * s2),
        "agree": jnp.sum(agree),
        "agree_expected": jnp.sum(logistic(jnp.abs(u))),
    }


DESIGN_METRICS = (
    "theta_norm_sq",
    "theta_perp_share",
    "x_msq",
    "x_kurtosis",
    "agree",
    "agree_expected",
)


def make_oracle_noise_fn(score=metrics.feature_estimation_metrics):
    """θ* + sZ scored by ``score`` on the replicate's features (a mutant passes a wrong one)."""

    def oracle_noise_fn(key, ctx):
        theta = ctx.truth["theta"]
        return dict(
            score(
                theta + NOISE_SCALE * jax.random.normal(key, theta.shape, jnp.float64),
                theta,
                ctx.sample["x"],
            )
        )

    return oracle_noise_fn


def generate(key, shape, truth, data):
    """The figures' features and labels (:func:`..model.binary_data`), without their MLE fit."""
    return model.binary_data(key, shape, truth)


METHODS = {
    "design": Method(
        design_fn, DESIGN_METRICS, label="Design moments", doc="moments of θ*, x and y"
    ),
    "oracle_noise": Method(
        make_oracle_noise_fn(),
        methods.ERRORS,
        label="Noisy oracle",
        doc="data-free: θ* plus Gaussian noise, scored by l2, mse and seminorm",
    ),
}

DESIGN = Experiment(
    name="chowdhury-design",
    title="Calibration: the linear-BTL design's moments and the error metrics",
    axes={
        "dim": [DIM],
        "n_samples": [N_SAMPLES],
        "design": DESIGNS,
        "features": FEATURES,
        "eps": [1.0],
    },
    shape_axes=("dim", "n_samples", "design", "features"),
    analysis_axes=("eps",),
    truth=model.truth,
    generate=generate,
    methods=METHODS,
    reps=DESIGN_REPS,
    axis_types=model.AXIS_TYPES,
    derived=(model.RADIUS,),
    truth_per_replicate=True,
    tuning=Tuning(lane_bytes=lambda shape: 8 * shape["n_samples"] * shape["dim"] * 4),
    description="chowdhury §2, eq. (1), §6; docs/chowdhury.md, Pins of the design and the metrics: θ* designs, "
    "feature covariance and law, logistic labels and the l2/mse/seminorm metrics against closed forms",
)

EXPERIMENTS = [DESIGN]


# ---------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------
D, N, R = DIM, N_SAMPLES, DESIGN_REPS
ROWS_PER_DESIGN = R * len(FEATURES)
ROWS_PER_FEATURES = R * len(DESIGNS)
SE = {
    "norm": math.sqrt(theta_norm_sq_cv2(D) / ROWS_PER_DESIGN),
    "perp": math.sqrt(perp_share_cv2(D) / ROWS_PER_DESIGN),
    "x_msq": math.sqrt(2.0 / (N * D * ROWS_PER_FEATURES)),
    "x_kurtosis": math.sqrt(
        (105.0 / 9.0 - 1.0) / (N * D * ROWS_PER_FEATURES)
    ),  # E Z⁸/(E Z⁴)² = 105/9
    # bound: Var ≤ ¼ per label, E ≥ ½ per label
    "agree": math.sqrt(0.25 / (N * R)) / 0.5,
    "mse": math.sqrt(2.0 / (D * R * len(DESIGNS) * len(FEATURES))),  # s²χ²_d: CV² = 2/d per row
    "l2": 0.5
    * math.sqrt(2.0 / (D * R * len(DESIGNS) * len(FEATURES))),  # its RMS: half the log-scale se
    # seminorm² = s²·ZᵀΣ_D Z: CV² ≤ 2/d + 2/(n·d) (Z and the features' spread)
    "seminorm": 0.5 * math.sqrt((2.0 / D + 2.0 / (N * D)) / (R * len(DESIGNS))),
}
ALL = ("design", "features")


def _claim(name, statistic, key, prediction, formula, what, at=(), **check):
    return pinned_claim(
        name,
        DESIGN.name,
        statistic,
        SE[key],
        prediction=prediction,
        formula=formula,
        description=what,
        reps=R,
        at=at,
        widths=SE_WIDTHS,
        **check,
    )


CHECKS = [
    _claim(
        "chowdhury-pin-design-theta-norm",
        Mean("theta_norm_sq", "design"),
        "norm",
        lambda pt: theta_norm_sq(int(pt["dim"]), pt["design"]),
        "1 or d·F_{d+2}(4d)/F_d(4d)",
        "θ* designs: E‖θ*‖² = 1 (theory, exact per draw) or E[χ²_d | χ²_d ≤ 4d] (faithful) for each design",
        at=("design",),
        pool=("features",),
        pins=("generator:theta-design",),
    ),
    _claim(
        "chowdhury-pin-design-theta-perp",
        Mean("theta_perp_share", "design"),
        "perp",
        lambda pt: perp_share(int(pt["dim"]), pt["design"]),
        "1 or (d − 1)/d",
        "θ* designs: ‖Pθ*‖²/‖θ*‖² (P onto 1^⊥) = 1 (theory: sum-zero, exact per draw) or (d − 1)/d "
        "(faithful: isotropic) for each design",
        at=("design",),
        pool=("features",),
        pins=("generator:theta-design",),
    ),
    _claim(
        "chowdhury-pin-features-variance",
        Mean("x_msq", "design"),
        "x_msq",
        lambda pt: FEATURE_VARIANCE[pt["features"]],
        "2 or 1",
        "features: mean x_ij² = 2 (x = ϕ¹ − ϕ⁰) or 1 (direct) for each kind",
        at=("features",),
        pool=("design",),
        pins=("generator:features",),
    ),
    _claim(
        "chowdhury-pin-features-gaussian",
        Mean("x_kurtosis", "design"),
        "x_kurtosis",
        lambda pt: 1.0,
        "1",
        "features: mean x_ij⁴/(3s⁴) = 1 (Gaussian fourth moment) for each kind",
        at=("features",),
        pool=("design",),
        pins=("generator:features",),
    ),
    _claim(
        "chowdhury-pin-labels-logistic",
        ColumnRatio("agree", "agree_expected", "design"),
        "agree",
        None,
        "1",
        "labels: those agreeing with sign(x_iᵀθ*) / Σ σ(|x_iᵀθ*|) = 1 at every (design, features) "
        "(se bounded with Var ≤ ¼, E ≥ ½ per label)",
        at=ALL,
        pins=("generator:logistic-labels",),
    ),
    _claim(
        "chowdhury-pin-metric-mse",
        Mean("mse", "oracle_noise"),
        "mse",
        lambda pt: int(pt["dim"]) * NOISE_SCALE**2,
        "d·s²",
        "mse (squared ℓ2) of θ* + sZ = d·s²",
        pool=ALL,
        pins=("metric:mse",),
    ),
    _claim(
        "chowdhury-pin-metric-l2",
        Mean("l2", "oracle_noise", True, True),
        "l2",
        lambda pt: int(pt["dim"]) * NOISE_SCALE**2,
        "d·s²",
        "RMS ℓ2 of θ* + sZ = s√d",
        pool=ALL,
        pins=("metric:l2",),
    ),
    _claim(
        "chowdhury-pin-metric-seminorm",
        Mean("seminorm", "oracle_noise", True, True),
        "seminorm",
        lambda pt: int(pt["dim"]) * NOISE_SCALE**2 * FEATURE_VARIANCE[pt["features"]],
        "d·s²·s_x²",
        "RMS ‖θ̂ − θ*‖_{Σ_D} of θ* + sZ = s·√(d·s_x²) (E tr Σ_D = d·s_x²) for each feature kind",
        at=("features",),
        pool=("design",),
        pins=("metric:seminorm",),
    ),
]


# ---------------------------------------------------------------------------------------
# Mutants
# ---------------------------------------------------------------------------------------
def generate_changed(change):
    """``generate`` with its output changed by ``change(key, sample, truth, shape)``."""

    def apply(experiment):
        def gen(key, shape, truth, data, inner=experiment.generate):
            return change(key, inner(key, shape, truth, data), truth, shape)

        return dataclasses.replace(experiment, generate=gen)

    return apply


def _features_uniform(key, sample, truth, shape):
    """Features from Unif[−√3·s, √3·s] (same variance, wrong law), labels redrawn on them."""
    s = math.sqrt(FEATURE_VARIANCE[shape["features"]])
    k_x, k_y = jax.random.split(jax.random.fold_in(key, 7))
    x = jax.random.uniform(
        k_x, sample["x"].shape, jnp.float64, -math.sqrt(3.0) * s, math.sqrt(3.0) * s
    )
    y = (jax.random.uniform(k_y, (x.shape[0],)) < logistic(x @ truth["theta"])).astype(jnp.float64)
    return {"x": x, "y": y}


def _labels_from(link: str, scale: float = 1.0):
    def change(key, sample, truth, shape):
        data = model.binary_data(key, shape, {**truth, "theta": scale * truth["theta"]}, link=link)
        return {"x": data["x"], "y": data["y"]}

    return change


def _features_direct_for_difference(key, sample, truth, shape):
    """x ~ N(0, I) where the difference design needs ϕ¹ − ϕ⁰ ~ N(0, 2I)."""
    data = model.binary_data(key, {**shape, "features": "direct"}, truth)
    return {"x": data["x"], "y": data["y"]}


def _seminorm_without_mean(theta_hat, theta, x, lam=0.0):
    out = dict(metrics.feature_estimation_metrics(theta_hat, theta, x, lam))
    out["seminorm"] = out["seminorm"] * jnp.sqrt(x.shape[0])  # Σ_D = Σ x xᵀ, the 1/n dropped
    return out


def _mse_as_mean(theta_hat, theta, x, lam=0.0):
    out = dict(metrics.feature_estimation_metrics(theta_hat, theta, x, lam))
    out["mse"] = out["mse"] / theta.shape[0]
    return out


EXP = (DESIGN.name,)
MUTANTS = [
    Mutant(
        "chowdhury-design-theta-unnormalised",
        "theory design without the normalisation ‖θ*‖ = 1 (θ* = Pg, g ~ N(0, I_d))",
        EXP,
        changed_truth(
            lambda theta, shape: (
                theta * (math.sqrt(shape["dim"] - 1.0) if shape["design"] == "theory" else 1.0)
            ),
            field="theta",
        ),
        breaks=("generator:theta-design",),
    ),
    Mutant(
        "chowdhury-design-theta-not-sum-zero",
        "theory design without the projection onto 1^⊥",
        EXP,
        changed_truth(
            lambda theta, shape: (
                (theta + 0.3) / jnp.linalg.norm(theta + 0.3)
                if shape["design"] == "theory"
                else theta
            ),
            field="theta",
        ),
        breaks=("generator:theta-design",),
    ),
    Mutant(
        "chowdhury-features-direct-for-difference",
        "x ~ N(0, I) where ϕ¹ − ϕ⁰ ~ N(0, 2I) is drawn (the feature covariance off by a factor 2)",
        EXP,
        generate_changed(
            lambda key, s, t, shape: (
                _features_direct_for_difference(key, s, t, shape)
                if shape["features"] == "difference"
                else s
            )
        ),
        breaks=("generator:features",),
    ),
    Mutant(
        "chowdhury-features-uniform-law",
        "features from a uniform law of the same variance",
        EXP,
        generate_changed(_features_uniform),
        breaks=("generator:features",),
    ),
    Mutant(
        "chowdhury-labels-probit",
        "labels from the probit link Φ(xᵀθ*) instead of σ(xᵀθ*)",
        EXP,
        generate_changed(_labels_from("probit")),
        breaks=("generator:logistic-labels",),
    ),
    Mutant(
        "chowdhury-labels-theta-half",
        "labels drawn at θ*/2",
        EXP,
        generate_changed(_labels_from("logistic", 0.5)),
        breaks=("generator:logistic-labels",),
    ),
    Mutant(
        "chowdhury-metric-seminorm-without-1-over-n",
        "‖·‖_{Σ_D} with Σ_D = Σ x xᵀ (the 1/n dropped)",
        EXP,
        replaced_method("oracle_noise", make_oracle_noise_fn(_seminorm_without_mean)),
        breaks=("metric:seminorm",),
    ),
    Mutant(
        "chowdhury-metric-mse-as-mean",
        "mse as the mean squared coordinate error (÷ d)",
        EXP,
        replaced_method("oracle_noise", make_oracle_noise_fn(_mse_as_mean)),
        breaks=("metric:mse",),
    ),
]


# ---------------------------------------------------------------------------------------
# chowdhury-design-pl: the Plackett–Luce top-1 generator (chowdhury eq. (11), §4.4, §6)
# ---------------------------------------------------------------------------------------
# ϕ(s, a_j) ~ N(0, I_d) i.i.d. for every sample and action; the top-1 choice y with
# P(y = j) = exp(ϕ_jᵀθ*)/Σ_l exp(ϕ_lᵀθ*). The method reports mean ϕ² (E = 1) and the choices
# that pick the best action, over Σ_i softmax(ϕ_iθ*)[argmax] (softmax written here): ratio 1.
PL_ACTIONS, PL_N, PL_REPS = [2, 4], 2000, 500


def pl_design_fn(key, ctx):
    """Moments of one Plackett–Luce draw (block comment above)."""
    phi, y, theta = ctx.sample["phi"], ctx.sample["y"], ctx.truth["theta"]
    u = phi @ theta  # (n, K) utilities
    best = jnp.argmax(u, axis=1)
    z = jnp.exp(u - jnp.max(u, axis=1, keepdims=True))
    p_best = 1.0 / jnp.sum(z, axis=1)  # softmax at the argmax: e^0/Σ e^{u_l − max u}
    return {
        "phi_msq": jnp.mean(phi * phi),
        "picks_best": jnp.sum((y == best).astype(jnp.float64)),
        "picks_best_expected": jnp.sum(p_best),
    }


DESIGN_PL = Experiment(
    name="chowdhury-design-pl",
    title="Calibration: the Plackett–Luce design's moments (features and top-1 choices)",
    axes={
        "dim": [DIM],
        "n_samples": [PL_N],
        "n_actions": PL_ACTIONS,
        "design": ["theory"],
        "features": ["direct"],
        "eps": [1.0],
    },
    shape_axes=("dim", "n_samples", "n_actions", "design", "features"),
    analysis_axes=("eps",),
    truth=model.truth,
    generate=model.pl_generate,
    methods={
        "design": Method(
            pl_design_fn,
            ("phi_msq", "picks_best", "picks_best_expected"),
            label="Design moments",
            doc="moments of ϕ and of the top-1 choices",
        )
    },
    reps=PL_REPS,
    axis_types=model.AXIS_TYPES,
    derived=(model.RADIUS,),
    truth_per_replicate=True,
    tuning=Tuning(
        lane_bytes=lambda shape: 8 * shape["n_samples"] * shape["n_actions"] * shape["dim"] * 4
    ),
    keys=Keys(stream_names=model.STREAM_NAMES),
    description="chowdhury eq. (11), §4.4, §6; docs/chowdhury.md, Pins of the design and the metrics: "
    "ϕ ~ N(0, I_d) per action and the softmax top-1 choice against closed forms",
)

EXPERIMENTS.append(DESIGN_PL)

PL_SE = {
    "phi": math.sqrt(2.0 / (PL_N * min(PL_ACTIONS) * DIM * PL_REPS)),
    # bound: Var ≤ ¼ per choice, E ≥ 1/K per choice (the best action's softmax ≥ 1/K)
    "choice": math.sqrt(0.25 / (PL_N * PL_REPS)) * max(PL_ACTIONS),
}


def _pl_claim(name, statistic, key, prediction, formula, what, **check):
    lo, hi = region(PL_SE[key])
    return Claim(
        name,
        DESIGN_PL.name,
        statistic,
        (lo, hi),
        over=Every(("n_actions",)),
        prediction=prediction,
        formula=formula,
        description=f"{what}; exact, region [{lo:.4f}, {hi:.4f}] = e^(±6·se), "
        f"se = {PL_SE[key]:.2g} from the law at R = {PL_REPS}",
        **check,
    )


CHECKS += [
    _pl_claim(
        "chowdhury-pin-pl-features",
        Mean("phi_msq", "design"),
        "phi",
        lambda pt: 1.0,
        "1",
        "Plackett–Luce features: mean ϕ² = 1 (ϕ ~ N(0, I_d)) at every K",
        pins=("generator:pl-features",),
    ),
    _pl_claim(
        "chowdhury-pin-pl-choices",
        ColumnRatio("picks_best", "picks_best_expected", "design"),
        "choice",
        None,
        "1",
        "Plackett–Luce choices: those picking the best action / Σ softmax(ϕθ*) at the best action = 1 at "
        "every K (se bounded with Var ≤ ¼, E ≥ 1/K per choice)",
        pins=("generator:pl-choices",),
    ),
]


def _pl_generate_at(theta_scale=1.0, phi_scale=1.0):
    """The Plackett–Luce generator with θ* or the features scaled (a mutant)."""

    def apply(experiment):
        def generate(key, shape, truth, data, inner=experiment.generate):
            out = inner(key, shape, {**truth, "theta": theta_scale * truth["theta"]}, data)
            return {**out, "phi": phi_scale * out["phi"]}

        return dataclasses.replace(experiment, generate=generate)

    return apply


PL_EXP = (DESIGN_PL.name,)
MUTANTS += [
    Mutant(
        "chowdhury-pl-choices-theta-half",
        "top-1 choices drawn at θ*/2",
        PL_EXP,
        _pl_generate_at(theta_scale=0.5),
        breaks=("generator:pl-choices",),
    ),
    Mutant(
        "chowdhury-pl-features-difference-scale",
        "Plackett–Luce features at the difference design's "
        "N(0, 2I) scale, choices drawn on the unscaled ones",
        PL_EXP,
        _pl_generate_at(phi_scale=math.sqrt(2.0)),
        breaks=("generator:pl-features",),
    ),
]
