"""nguyen: level checks that pin the data-generating design and the ℓ2 scoring (not the
mechanisms: :mod:`..checks` pins those), on a calibration experiment of their own,
``nguyen-design`` (the figures' committed tables are untouched).

**Generator** (nguyen §2, eq. (1), eq. (2); docs/nguyen.md, Experiments as run): abilities θ*_l and
difficulties β*_i i.i.d. N(0, 1) (``normal``) or Unif[−1, 1] (``uniform``), β* centred;
each response observed with probability p and, when observed, correct with probability
σ(θ*_l − β*_i); the differential counts Y_ij = #{users who answered i correctly and j wrongly}.
The experiment draws them exactly as the rate experiments do (:func:`..model.rate_truth`,
:func:`.rates.rate_generate`); the method ``design`` reports moments of one draw, each with a
closed form written here from those definitions (never through ``dpsim.models``):

* mean θ*_l² = 1 (normal) or 1/3 (uniform); mean β*_i² of the β* as drawn = (m − 1)/m times
  that (the divisor-m sample variance: pins the centring too);
* the share of observed entries = p;
* the observed responses that agree with the sign of θ*_l − β*_i, over Σ A_li σ(|θ*_l − β*_i|)
  (σ written here): ratio 1, which pins the logistic response profile (its slope and sign);
* Σ_{i≠j} Y_ij over p²·Σ_l Σ_{i≠j} σ(θ_l − β_i)(1 − σ(θ_l − β_j)) (eq. (2)'s expectation): ratio 1.

**Scoring** (nguyen §5; docs/nguyen.md, Errata and modes (Q1)): ``oracle_noise`` scores
β̂ = β*_c + sZ (β*_c the centred truth, Z ~ N(0, I_m)) against β* + c·1 (an un-centred truth,
c = ½) with :func:`dpsim.metrics.rasch_l2_error`: E l2² = (m − 1)s² in the centred mode and
m(s² + c²) in the paper mode (the un-centred floor).

**Regions**: every closed form is exact, so the region is e^{±6·se} with se the relative
standard error of the point's mean from the law (a bound where stated).
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
from scipy import integrate

from dpsim import metrics
from dpsim.engine import Experiment, Tuning, Method
from dpsim.engine.judgement.checks import ColumnRatio, Mean, pinned_claim, ratio_region
from dpsim.engine.judgement.mutants import Mutant, changed_truth, replaced_method

from ..model import AXIS_TYPES, lane_bytes, rate_truth
from .rates import rate_generate

SE_WIDTHS = 6.0
N_ITEMS, N_USERS = 10, 200
DESIGN_P = [0.5, 1.0]
DESIGNS = ["normal", "uniform"]
DESIGN_REPS = 1000
NOISE_SCALE, OFFSET = 0.1, 0.5


# ---------------------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------------------
def design_second_moment(design: str) -> float:
    """E X² of one parameter: 1 for N(0, 1), 1/3 for Unif[−1, 1]."""
    return {"normal": 1.0, "uniform": 1.0 / 3.0}[design]


def design_fourth_moment(design: str) -> float:
    """E X⁴: 3 for N(0, 1), 1/5 for Unif[−1, 1]."""
    return {"normal": 3.0, "uniform": 0.2}[design]


def centred_msq(m: int, design: str) -> float:
    """E (1/m)Σ(β_i − β̄)² = (m − 1)/m · E β²."""
    return (m - 1.0) / m * design_second_moment(design)


def pair_term(design: str) -> float:
    """E σ(θ − β_i)(1 − σ(θ − β_j)) for independent θ, β_i, β_j of the design (β* uncentred:
    used only in a standard-error bound), = E_θ g(θ)(1 − g(θ)), g(θ) = E_β σ(θ − β), by quadrature."""
    if design == "normal":

        def density(x):
            return math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)

        lo, hi = -12.0, 12.0
    else:

        def density(x):
            return 0.5

        lo, hi = -1.0, 1.0

    def g(t):
        return integrate.quad(lambda b: density(b) / (1.0 + math.exp(b - t)), lo, hi)[0]

    return integrate.quad(lambda t: density(t) * g(t) * (1.0 - g(t)), lo, hi)[0]


def region(rel_se: float) -> tuple[float, float]:
    """e^{±SE_WIDTHS·se}, rounded outward (:func:`dpsim.engine.judgement.checks.ratio_region`)."""
    return ratio_region(rel_se, SE_WIDTHS)


def logistic(x):
    """σ(x) = 1/(1 + e^{−x}) (nguyen eq. (1)), written here."""
    return 1.0 / (1.0 + jnp.exp(-x))


# ---------------------------------------------------------------------------------------
# The methods
# ---------------------------------------------------------------------------------------
def design_fn(key, ctx):
    """Moments of one draw (module docstring)."""
    theta, beta = ctx.truth["theta"], ctx.truth["beta"]
    x, observed, Y = ctx.sample["x"], ctx.sample["observed"], ctx.sample["Y"]
    a = observed.astype(jnp.float64)
    d = theta[:, None] - beta[None, :]
    s = logistic(d)
    agree = jnp.where(d > 0, x, ~x) & observed
    p = ctx.data["p"]
    off = 1.0 - jnp.eye(beta.shape[0])
    return {
        "theta_msq": jnp.mean(theta * theta),
        "beta_msq": jnp.mean(beta * beta),
        "observed_share": jnp.mean(a),
        "agree": jnp.sum(agree.astype(jnp.float64)),
        "agree_expected": jnp.sum(a * logistic(jnp.abs(d))),
        "y_total": jnp.sum(Y * off),
        "y_expected": p * p * jnp.sum((s.T @ (1.0 - s)) * off),
    }


DESIGN_METRICS = (
    "theta_msq",
    "beta_msq",
    "observed_share",
    "agree",
    "agree_expected",
    "y_total",
    "y_expected",
)


def make_oracle_noise_fn(score=metrics.rasch_l2_error):
    """β*_c + sZ scored against β* + c·1 by ``score`` in both modes (a mutant passes a wrong one)."""

    def oracle_noise_fn(key, ctx):
        beta = ctx.truth["beta"]
        centred = beta - jnp.mean(beta)
        beta_hat = centred + NOISE_SCALE * jax.random.normal(key, beta.shape, jnp.float64)
        shifted = beta + OFFSET
        return {
            "l2_centred": score(beta_hat, shifted, "centred"),
            "l2_paper": score(beta_hat, shifted, "paper"),
        }

    return oracle_noise_fn


METHODS = {
    "design": Method(
        design_fn, DESIGN_METRICS, label="Design moments", doc="moments of θ*, β*, A, X and Y"
    ),
    "oracle_noise": Method(
        make_oracle_noise_fn(),
        ("l2_centred", "l2_paper"),
        label="Noisy oracle",
        doc="data-free: centred β* plus Gaussian noise, scored in both modes",
    ),
}

DESIGN = Experiment(
    name="nguyen-design",
    title="Calibration: the Rasch design's moments and the ℓ2 scoring modes",
    axes={
        "n_items": [N_ITEMS],
        "n_users": [N_USERS],
        "design": DESIGNS,
        "p": DESIGN_P,
        "eps": [1.0],
    },
    shape_axes=("n_items", "n_users", "design"),
    analysis_axes=("eps",),
    truth=rate_truth,
    truth_per_replicate=True,
    generate=rate_generate,
    methods=METHODS,
    reps=DESIGN_REPS,
    axis_types=AXIS_TYPES,
    tuning=Tuning(lane_bytes=lambda shape: lane_bytes(shape["n_users"], shape["n_items"])),
    description="nguyen §2, eq. (1), eq. (2); docs/nguyen.md, Pins of the design and the metrics: θ*, β* designs, "
    "missingness, Rasch responses, differential counts and the ℓ2 modes against closed forms",
)

EXPERIMENTS = [DESIGN]


# ---------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------
M, N, R = N_ITEMS, N_USERS, DESIGN_REPS
P_MIN = min(DESIGN_P)
ROWS_PER_DESIGN = R * len(DESIGN_P)
SE = {
    # χ²-type: Var X²/(E X²)² = E X⁴/(E X²)² − 1, worst design (uniform: 0.8, normal: 2)
    "theta": math.sqrt(
        max(design_fourth_moment(d) / design_second_moment(d) ** 2 - 1.0 for d in DESIGNS)
        / (N * ROWS_PER_DESIGN)
    ),
    # the divisor-m sample variance: CV² ≈ (κ − 1)/(m − 1) + 2/(m − 1)², κ the kurtosis (bound 3)
    "beta": math.sqrt((2.0 / (M - 1) + 2.0 / (M - 1) ** 2) / ROWS_PER_DESIGN),
    "observed": math.sqrt((1.0 - P_MIN) / (P_MIN * N * M * R)),
    # bound: Var ≤ ¼ per observed response, E ≥ ½ per observed response
    "agree": math.sqrt(0.25 / (P_MIN * N * M * R)) / 0.5,
    # bound: Y's total is a sum over users of T_l = r_l(m_l − r_l) ≤ m²/4, so Var ≤ (m²/4)·E Y
    "y": math.sqrt(
        M * M / 4.0 / (P_MIN**2 * N * M * (M - 1) * min(pair_term(d) for d in DESIGNS) * R)
    ),
    "l2_centred": 0.5 * math.sqrt(2.0 / ((M - 1) * R * len(DESIGN_P) * len(DESIGNS))),
    # ‖sZ − c1‖²: mean m(s² + c²), variance 2ms⁴ + 4ms²c²
    "l2_paper": 0.5
    * math.sqrt(
        (2.0 * M * NOISE_SCALE**4 + 4.0 * M * NOISE_SCALE**2 * OFFSET**2)
        / (M * (NOISE_SCALE**2 + OFFSET**2)) ** 2
        / (R * len(DESIGN_P) * len(DESIGNS))
    ),
}


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
        "nguyen-pin-design-theta-msq",
        Mean("theta_msq", "design"),
        "theta",
        lambda pt: design_second_moment(pt["design"]),
        "E θ² (1 or 1/3)",
        "abilities θ*: mean θ_l² = 1 (N(0, 1)) or 1/3 (Unif[−1, 1]) for each design",
        at=("design",),
        pool=("p",),
        pins=("generator:ability-design",),
    ),
    _claim(
        "nguyen-pin-design-beta-msq",
        Mean("beta_msq", "design"),
        "beta",
        lambda pt: centred_msq(int(pt["n_items"]), pt["design"]),
        "(m − 1)/m·E β²",
        "difficulties β* (centred): mean β_i² = (m − 1)/m·E β² for each design",
        at=("design",),
        pool=("p",),
        pins=("generator:difficulty-design",),
    ),
    _claim(
        "nguyen-pin-missingness",
        Mean("observed_share", "design"),
        "observed",
        lambda pt: pt["p"],
        "p",
        "missingness: the share of observed entries = p at every p",
        at=("p",),
        pool=("design",),
        pins=("generator:missingness",),
    ),
    _claim(
        "nguyen-pin-responses-logistic",
        ColumnRatio("agree", "agree_expected", "design"),
        "agree",
        None,
        "1",
        "Rasch responses: observed responses agreeing with sign(θ_l − β_i) / Σ A_li σ(|θ_l − β_i|) = 1 at "
        "every (design, p) (se bounded with Var ≤ ¼, E ≥ ½ per response)",
        at=("design", "p"),
        pins=("generator:rasch-responses",),
    ),
    _claim(
        "nguyen-pin-differential-counts",
        ColumnRatio("y_total", "y_expected", "design"),
        "y",
        None,
        "1",
        "differential counts: Σ_{i≠j} Y_ij / p²·Σ_l Σ_{i≠j} σ_li(1 − σ_lj) = 1 at every (design, p) "
        "(eq. (2); se a bound)",
        at=("design", "p"),
        pins=("generator:differential-counts",),
    ),
    _claim(
        "nguyen-pin-metric-l2-centred",
        Mean("l2_centred", "oracle_noise", True, True),
        "l2_centred",
        lambda pt: (int(pt["n_items"]) - 1.0) * NOISE_SCALE**2,
        "(m − 1)s²",
        "rasch_l2_error, centred mode: RMS of ‖(β̂ − mean) − (β* − mean)‖ for β̂ = β*_c + sZ = s√(m − 1) "
        "(mean square (m − 1)s², an offset of β* removed)",
        pool=("design", "p"),
        pins=("metric:rasch_l2_error",),
    ),
    _claim(
        "nguyen-pin-metric-l2-paper",
        Mean("l2_paper", "oracle_noise", True, True),
        "l2_paper",
        lambda pt: int(pt["n_items"]) * (NOISE_SCALE**2 + OFFSET**2),
        "m(s² + c²)",
        "rasch_l2_error, paper mode: mean square of ‖β̂ − (β* + c)‖ = m(s² + c²), the un-centred floor "
        "(docs/nguyen.md, Errata and modes (Q1))",
        pool=("design", "p"),
        pins=("metric:rasch_l2_error",),
    ),
]


# ---------------------------------------------------------------------------------------
# Mutants
# ---------------------------------------------------------------------------------------
def sample_changed(change):
    """``generate`` with its output changed by ``change(sample, truth, data)``."""

    def apply(experiment):
        def generate(key, shape, truth, data, inner=experiment.generate):
            return change(inner(key, shape, truth, data), truth, data)

        return dataclasses.replace(experiment, generate=generate)

    return apply


def _generate_with(theta_scale=1.0, p_scale=1.0, flip=False):
    """The rate experiments' generator at θ·``theta_scale``/p·``p_scale``; ``flip``: σ(β − θ)."""

    def apply(experiment):
        def generate(key, shape, truth, data, inner=experiment.generate):
            t = {**truth, "theta": truth["theta"] * theta_scale}
            if flip:
                t = {**t, "theta": -truth["theta"], "beta": -truth["beta"]}
            out = inner(key, shape, t, {**data, "p": data["p"] * p_scale})
            return {**out, "beta": truth["beta"]}

        return dataclasses.replace(experiment, generate=generate)

    return apply


def _y_unobserved_as_wrong(sample, truth, data):
    right = sample["x"].astype(jnp.float64)
    wrong = (~sample["x"]).astype(jnp.float64)
    y = right.T @ wrong
    return {**sample, "Y": jnp.where(jnp.eye(y.shape[0], dtype=bool), 0.0, y)}


def _paper_mode_centred(beta_hat, beta, mode):
    return metrics.rasch_l2_error(beta_hat, beta, "centred")


EXP = (DESIGN.name,)
MUTANTS = [
    Mutant(
        "nguyen-design-theta-scale-2",
        "abilities θ* drawn at twice the design's scale",
        EXP,
        changed_truth(lambda t, shape: {**t, "theta": 2.0 * t["theta"]}),
        breaks=("generator:ability-design",),
    ),
    Mutant(
        "nguyen-design-beta-uncentred",
        "difficulties β* not centred (β* + 1)",
        EXP,
        changed_truth(lambda t, shape: {**t, "beta": t["beta"] + 1.0}),
        breaks=("generator:difficulty-design",),
    ),
    Mutant(
        "nguyen-design-uniform-wrong-range",
        "the bounded design drawn from Unif[−√3, √3] (the unit-variance "
        "uniform) instead of Unif[−1, 1]",
        EXP,
        changed_truth(
            lambda t, shape: {
                **t,
                **(
                    {"theta": math.sqrt(3.0) * t["theta"], "beta": math.sqrt(3.0) * t["beta"]}
                    if shape["design"] == "uniform"
                    else {}
                ),
            }
        ),
        breaks=("generator:ability-design", "generator:difficulty-design"),
    ),
    Mutant(
        "nguyen-responses-observed-at-p-squared",
        "entries observed with probability p² (p applied twice)",
        EXP,
        _generate_with(p_scale=0.5),
        breaks=("generator:missingness",),
    ),
    Mutant(
        "nguyen-responses-theta-half-scale",
        "responses drawn with the abilities at half their scale, σ(θ/2 − β)",
        EXP,
        _generate_with(theta_scale=0.5),
        breaks=("generator:rasch-responses",),
    ),
    Mutant(
        "nguyen-responses-sign-flipped",
        "responses drawn with σ(β − θ) (correct and wrong swapped)",
        EXP,
        _generate_with(flip=True),
        breaks=("generator:rasch-responses",),
    ),
    Mutant(
        "nguyen-counts-unobserved-as-wrong",
        "Y counts an unobserved response as wrong",
        EXP,
        sample_changed(_y_unobserved_as_wrong),
        breaks=("generator:differential-counts",),
    ),
    Mutant(
        "nguyen-metric-paper-mode-centred",
        "the paper mode's ℓ2 scored centred (the un-centred floor dropped)",
        EXP,
        replaced_method("oracle_noise", make_oracle_noise_fn(_paper_mode_centred)),
        breaks=("metric:rasch_l2_error",),
    ),
    Mutant(
        "nguyen-metric-l2-over-root-m",
        "the ℓ2 error normalised by √m",
        EXP,
        replaced_method(
            "oracle_noise",
            make_oracle_noise_fn(
                lambda a, b, mode: metrics.rasch_l2_error(a, b, mode) / jnp.sqrt(a.shape[0])
            ),
        ),
        breaks=("metric:rasch_l2_error",),
    ),
]
