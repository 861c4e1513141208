"""cai: level checks that pin the data-generating design and the error metrics (not the
mechanisms: :mod:`.calibrations` pins those), on a calibration experiment of their own,
``cai-design`` (Figures 1–3's committed tables are untouched).

**Generator** (cai §2.1, §4.1.1; docs/cai.md, Model): θ* with e^{θ_i} = 1 for the k = round(n/4)
top items and e^{θ_i} ~ Unif(0.2, 0.7) otherwise, centred; one comparison per edge of
G(n, p), i beating j with probability σ(θ_i − θ_j). The method ``design`` reports moments of
one draw, each with a closed form written here from those definitions (never through
``dpsim.models``): the share of items at the top (k/n, exact), the mean of e^{θ_i − max θ}
over the others (E U = 0.45) and of (θ_i − max θ)² (E ln²U), the mean degree and mean squared
degree of the graph ((n − 1)p and (n − 1)p(1 − p) + ((n − 1)p)²), and the top items' wins
against the others over Σ A_ij σ(θ_i − θ_j) summed over the same pairs (ratio 1: pins the
logistic win-probability profile).

**Metrics** (cai §4.1.1; docs/xu.md, Metrics), on data-free estimators whose error law is known
exactly: ``uniform`` ranks the items by a uniformly random permutation (E relative Hamming
1 − k/n; E Kendall distance ½ of the pairs θ* orders; E mean |rank difference| (n² − 1)/(3n), Diaconis–Graham);
``near_oracle`` picks k of the k + 1 best items uniformly (E exact recovery = E relative
Hamming = 1/(k + 1)); ``oracle_noise`` adds Gaussian noise to θ*: s·Z for ℓ2 and ℓ∞
(E ‖θ̂ − θ*‖₂² = n s², E ‖θ̂ − θ*‖∞ = s·E max|Z_i|), and s‖θ*‖₂Z/√n, s‖θ*‖∞Z′ for the
log-relative errors, whose exponentials then have means s·E‖Z‖/√n and s·E max|Z′_i|
(:class:`ExpMean`).

**Individual DP** (cai §3.1, §4.2): ``cai-design-individual`` pins the individual-DP
generator the same way: the ⌊n/4⌋ top items first, the strengths, m·L comparisons in all, the
mean squared pair count of a uniform Multinomial(m·L, C(n, 2)) (the pairs drawn independently,
not grouped per user), and the logistic outcomes.

**Regions**: each closed form is exact (model error 0), so the region is e^{±6·se}, se the
relative standard error of the point's mean from the law itself (stated per check); a
correct generator or metric leaves it with probability < 1e-4 per point.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
from scipy import integrate, special, stats

from dpsim import metrics
from dpsim.estimators import top_k_mask
from dpsim.engine import Experiment, Tuning, Method
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
from . import individual

SE_WIDTHS = 6.0
STRENGTH_LOW, STRENGTH_HIGH = 0.2, 0.7  # e^{θ_i} ~ Unif(0.2, 0.7) off the top (cai §4.1.1)
NOISE_SCALE = 0.1  # s of ``oracle_noise``
DESIGN_N = 40
DESIGN_P = [0.25, 1.0]
DESIGN_REPS = 1000
TOP_TOL = 1e-9  # |θ_i − max θ| below this: a top item (the design's top items are equal)


# ---------------------------------------------------------------------------------------
# Closed forms, from the paper's definitions
# ---------------------------------------------------------------------------------------
def paper_k(n: int) -> int:
    """k = round(n/4), round half to even (cai §4.1.1; docs/cai.md, Model)."""
    return int(round(n / 4))


def uniform_moment(f, low=STRENGTH_LOW, high=STRENGTH_HIGH) -> float:
    """E f(U), U ~ Unif(low, high), by quadrature."""
    return integrate.quad(f, low, high, epsabs=1e-14, epsrel=1e-13)[0] / (high - low)


def log_strength_msq(low=STRENGTH_LOW, high=STRENGTH_HIGH) -> float:
    """E ln²U = [u(ln²u − 2 ln u + 2)]_a^b / (b − a), U ~ Unif(a, b)."""

    def prim(u):
        return u * (math.log(u) ** 2 - 2.0 * math.log(u) + 2.0)

    return (prim(high) - prim(low)) / (high - low)


def degree_mean(n, p) -> float:
    """E deg_i = (n − 1)p in G(n, p)."""
    return (n - 1.0) * p


def degree_msq(n, p) -> float:
    """E deg_i² = (n − 1)p(1 − p) + ((n − 1)p)² (deg_i ~ Binomial(n − 1, p))."""
    return (n - 1.0) * p * (1.0 - p) + degree_mean(n, p) ** 2


def expected_max_abs_normal(n: int, power: int = 1) -> float:
    """E max_i |Z_i|^power over n i.i.d. N(0, 1): ∫ power·x^{power−1}(1 − (2Φ(x) − 1)^n) dx."""
    return integrate.quad(
        lambda x: power * x ** (power - 1) * (1.0 - special.erf(x / math.sqrt(2.0)) ** n),
        0.0,
        40.0,
        limit=200,
        epsabs=1e-13,
    )[0]


def expected_chi_over_root_n(n: int) -> float:
    """E ‖Z‖₂/√n = √(2/n)·Γ((n + 1)/2)/Γ(n/2), Z ~ N(0, I_n)."""
    return math.sqrt(2.0 / n) * math.exp(special.gammaln((n + 1) / 2.0) - special.gammaln(n / 2.0))


def kendall_random_var(n: int) -> float:
    """Var of the Kendall distance of a uniform ranking: (2n + 5)/(18 n(n − 1))."""
    return (2.0 * n + 5.0) / (18.0 * n * (n - 1.0))


def footrule_mean(n: int) -> float:
    """E (1/n)Σ|π(i) − i| = (n² − 1)/(3n) for a uniform permutation π."""
    return (n * n - 1.0) / (3.0 * n)


def footrule_var(n: int) -> float:
    """Var (1/n)Σ|π(i) − i| = (n + 1)(2n² + 7)/(45 n²) (Diaconis and Graham 1977)."""
    return (n + 1.0) * (2.0 * n * n + 7.0) / (45.0 * n * n)


def degree_msq_rel_se(n: int, p: float, reps: int) -> float:
    """Relative standard error of the mean over ``reps`` graphs of mean_i deg_i², by the delta
    method: the items' spread Var(deg²)/n (Binomial(n − 1, p) moments) plus the shared total
    edge count's, (2·E deg·E deg/E deg²)²·(1 − p)/(p·n(n − 1)/2)."""
    b = stats.binom(n - 1, p)
    m1, m2, m4 = b.moment(1), b.moment(2), b.moment(4)
    cv2 = (m4 - m2 * m2) / (n * m2 * m2) + (2.0 * m1 * m1 / m2) ** 2 * (1.0 - p) / (
        p * n * (n - 1) / 2.0
    )
    return math.sqrt(cv2 / reps)


def kendall_random_mean(n: int, k: int) -> float:
    """E Kendall distance of a uniform ranking against θ* with its k top items tied: ½ of the
    pairs θ* orders, 1 − C(k, 2)/C(n, 2) (pairs tied in θ* count 0, docs/xu.md, Metrics)."""
    return 0.5 * (1.0 - k * (k - 1.0) / (n * (n - 1.0)))


def hypergeometric_hamming_var(n: int, k: int) -> float:
    """Var of 1 − |Ŝ ∩ S|/k for a uniform k-set Ŝ: Var Hypergeom(n, k, k)/k²."""
    return float(stats.hypergeom(n, k, k).var()) / k**2


def region(rel_se: float) -> tuple[float, float]:
    """e^{±SE_WIDTHS·se}, rounded outward (:func:`dpsim.engine.judgement.checks.ratio_region`)."""
    return ratio_region(rel_se, SE_WIDTHS)


# ---------------------------------------------------------------------------------------
# The methods
# ---------------------------------------------------------------------------------------
def logistic(x):
    """σ(x) = 1/(1 + e^{−x}) (cai §2.1), written here, not the model's link."""
    return 1.0 / (1.0 + jnp.exp(-x))


def design_fn(key, ctx):
    """Moments of one draw of θ* and of the comparison graph and outcomes (module docstring)."""
    theta, W = ctx.truth["theta"], ctx.sample["W"]
    n = theta.shape[0]
    gap = theta - jnp.max(theta)
    top = jnp.abs(gap) <= TOP_TOL
    others = (~top).astype(jnp.float64)
    A = W + W.T
    deg = A.sum(axis=1)
    cross = top[:, None] & ~top[None, :]
    return {
        "top_share": jnp.mean(top.astype(jnp.float64)),
        "other_strength_mean": jnp.sum(others * jnp.exp(gap)) / jnp.sum(others),
        "other_log_strength_msq": jnp.sum(others * gap * gap) / jnp.sum(others),
        "degree_mean": jnp.sum(deg) / n,
        "degree_msq": jnp.sum(deg * deg) / n,
        "top_wins": jnp.sum(jnp.where(cross, W, 0.0)),
        "top_wins_expected": jnp.sum(
            jnp.where(cross, A * logistic(theta[:, None] - theta[None, :]), 0.0)
        ),
    }


DESIGN_METRICS = (
    "top_share",
    "other_strength_mean",
    "other_log_strength_msq",
    "degree_mean",
    "degree_msq",
    "top_wins",
    "top_wins_expected",
)


def make_uniform_fn(
    hamming=metrics.relative_hamming_error,
    kendall=metrics.kendall_distance,
    rank_difference=metrics.mean_absolute_rank_difference,
):
    """A uniformly random ranking scored by the given metrics (a mutant passes a wrong one)."""

    def uniform_fn(key, ctx):
        theta, k = ctx.truth["theta"], ctx.shape["k"]
        n = theta.shape[0]
        scores = jax.random.permutation(key, n).astype(jnp.float64)
        mask = scores >= n - k
        return {
            "relative_hamming": hamming(mask, ctx.truth["top_k"]),
            "kendall": kendall(scores, theta),
            "mean_rank_diff": rank_difference(scores, theta),
        }

    return uniform_fn


def make_near_oracle_fn(topk=metrics.topk_metrics):
    """k items drawn uniformly from the k + 1 best by θ*, scored by ``topk``."""

    def near_oracle_fn(key, ctx):
        theta, k = ctx.truth["theta"], ctx.shape["k"]
        k_tie, k_pick = jax.random.split(key)
        best = top_k_mask(k_tie, theta, k + 1, tie_tol=TOP_TOL)
        pick = top_k_mask(
            k_pick, best.astype(jnp.float64), k
        )  # k of the k + 1, uniformly (ties broken at random)
        return topk(pick, ctx.truth["top_k"])

    return near_oracle_fn


def make_oracle_noise_fn(estimation=metrics.estimation_metrics):
    """θ* plus Gaussian noise (module docstring), scored by ``estimation``."""

    def oracle_noise_fn(key, ctx):
        theta = ctx.truth["theta"]
        n = theta.shape[0]
        z, z2 = jax.random.normal(key, (2, n), jnp.float64)
        s = NOISE_SCALE
        plain = estimation(theta + s * z, theta)
        rel_l2 = estimation(theta + s * jnp.linalg.norm(theta) / jnp.sqrt(n) * z, theta)
        rel_linf = estimation(theta + s * jnp.max(jnp.abs(theta)) * z2, theta)
        return {
            "l2": plain["l2"],
            "linf": estimation(theta + s * z2, theta)["linf"],
            "log_rel_l2": rel_l2["log_rel_l2"],
            "log_rel_linf": rel_linf["log_rel_linf"],
        }

    return oracle_noise_fn


METHODS = {
    "design": Method(
        design_fn,
        DESIGN_METRICS,
        label="Design moments",
        doc="moments of θ*, the graph and the wins",
    ),
    "uniform": Method(
        make_uniform_fn(),
        ("relative_hamming", "kendall", "mean_rank_diff"),
        label="Uniform ranking",
        doc="data-free: a uniformly random ranking",
    ),
    "near_oracle": Method(
        make_near_oracle_fn(),
        methods.TOPK,
        label="Near oracle",
        doc="data-free: k of the k + 1 best items, uniformly",
    ),
    "oracle_noise": Method(
        make_oracle_noise_fn(),
        methods.ESTIMATION,
        label="Noisy oracle",
        doc="data-free: θ* plus Gaussian noise",
    ),
}

DESIGN = Experiment(
    name="cai-design",
    title="Calibration: the edge-DP design's moments and the error metrics on data-free estimators",
    axes={"n_items": [DESIGN_N], "k": ["auto"], "link": ["logistic"], "p": DESIGN_P, "eps": [1.0]},
    shape_axes=("n_items", "k", "link"),
    analysis_axes=("eps",),
    truth=model.truth,
    generate=model.generate,
    methods=METHODS,
    reps=DESIGN_REPS,
    truth_per_replicate=True,
    axis_types=model.AXIS_TYPES,
    resolve_shape=model.resolve_shape,
    tuning=Tuning(lane_bytes=model.lane_bytes),
    description="cai §2.1, §4.1.1; docs/cai.md, Pins of the design and the metrics: θ* design, G(n, p), logistic "
    "outcomes and every error metric against closed forms (θ* redrawn per replicate)",
)

EXPERIMENTS = [DESIGN]


# ---------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ExpMean(Mean):
    """The mean of exp(``metric``) (a log-relative error back on the ratio scale, so its
    prediction is a mean of positive numbers)."""

    def metric_values(self, rows):
        return np.exp(rows[self.metric].to_numpy(float))

    def describe(self) -> str:
        return f"mean exp({self.metric}) of {self.method}"


# ---------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------
def _n(point) -> int:
    return int(point["n_items"])


N, R = DESIGN_N, DESIGN_REPS
K = paper_k(N)
ROWS = R * len(DESIGN_P)  # rows per check where p is pooled
U_MEAN = uniform_moment(lambda u: u)
U_CV2 = uniform_moment(lambda u: u * u) / U_MEAN**2 - 1.0
LN2 = log_strength_msq()
LN2_CV2 = uniform_moment(lambda u: math.log(u) ** 4) / LN2**2 - 1.0
F_MEAN = uniform_moment(lambda u: 1.0 / (1.0 + u))  # σ(θ_top − θ_j) = 1/(1 + U_j)
F_VAR_BERN = uniform_moment(lambda u: u / (1.0 + u) ** 2)  # E F(1 − F)
P_MIN = min(DESIGN_P)
SE = {
    "strength": math.sqrt(U_CV2 / ((N - K) * ROWS)),
    "log_strength": math.sqrt(LN2_CV2 / ((N - K) * ROWS)),
    "degree": math.sqrt((1.0 - P_MIN) / (P_MIN * N * (N - 1) / 2.0) / R),
    "degree_msq": degree_msq_rel_se(N, P_MIN, R),
    "wins": math.sqrt(F_VAR_BERN / (P_MIN * K * (N - K) * R)) / F_MEAN,
    "hamming": math.sqrt(hypergeometric_hamming_var(N, K) / ROWS) / (1.0 - K / N),
    "kendall": math.sqrt(kendall_random_var(N) / ROWS) / kendall_random_mean(N, K),
    "footrule": math.sqrt(footrule_var(N) / ROWS) / footrule_mean(N),
    "near": math.sqrt(K / ROWS),  # Bernoulli(1/(k + 1)): √((1 − q)/(q·rows))
    "l2": 0.5 * math.sqrt(2.0 / (N * ROWS)),  # RMS of a χ²_n/n
    "linf": math.sqrt(expected_max_abs_normal(N, 2) / expected_max_abs_normal(N) ** 2 - 1.0)
    / math.sqrt(ROWS),
    "rel_l2": math.sqrt(1.0 / expected_chi_over_root_n(N) ** 2 - 1.0) / math.sqrt(ROWS),
}
POOL_P = {"pool": ("p",)}


def _level(
    name,
    metric,
    method,
    prediction,
    se_key,
    formula,
    what,
    *,
    at=(),
    root=False,
    square=False,
    statistic=None,
    **check,
):
    """A level check of ``metric`` of ``method`` (or of ``statistic``) against ``prediction``."""
    return pinned_claim(
        name,
        DESIGN.name,
        statistic or Mean(metric, method, root, square),
        SE[se_key],
        prediction=prediction,
        formula=formula,
        description=what,
        reps=f"{R} per p",
        at=at,
        widths=SE_WIDTHS,
        **check,
    )


def _text(se_key: str) -> str:
    lo, hi = region(SE[se_key])
    return f"exact, region [{lo:.4f}, {hi:.4f}] = e^(±6·se), se = {SE[se_key]:.2g} from the law at R = {R} per p"


CHECKS = [
    # the generator (cai §2.1, §4.1.1)
    _level(
        "cai-pin-design-top-share",
        "top_share",
        "design",
        lambda pt: paper_k(_n(pt)) / _n(pt),
        "strength",
        "round(n/4)/n",
        "θ* design: the share of items at the top score is k/n, k = round(n/4) (deterministic; "
        "the region is the strength check's)",
        **POOL_P,
        pins=("generator:theta-design",),
    ),
    _level(
        "cai-pin-design-strength-mean",
        "other_strength_mean",
        "design",
        lambda pt: U_MEAN,
        "strength",
        "E U = 0.45",
        "θ* design: mean e^{θ_i − θ_top} over the other items = E Unif(0.2, 0.7) = 0.45",
        **POOL_P,
        pins=("generator:theta-design",),
    ),
    _level(
        "cai-pin-design-log-strength-msq",
        "other_log_strength_msq",
        "design",
        lambda pt: LN2,
        "log_strength",
        "E ln²U",
        f"θ* design: mean (θ_i − θ_top)² over the other items = E ln²U = {LN2:.4f}, U ~ Unif(0.2, 0.7)",
        **POOL_P,
        pins=("generator:theta-design",),
    ),
    _level(
        "cai-pin-graph-degree-mean",
        "degree_mean",
        "design",
        lambda pt: degree_mean(_n(pt), pt["p"]),
        "degree",
        "(n − 1)p",
        "G(n, p): mean degree = (n − 1)p at every p",
        at=("p",),
        pins=("generator:er-graph",),
    ),
    _level(
        "cai-pin-graph-degree-msq",
        "degree_msq",
        "design",
        lambda pt: degree_msq(_n(pt), pt["p"]),
        "degree_msq",
        "(n−1)p(1−p) + ((n−1)p)²",
        "G(n, p): mean squared degree of Binomial(n − 1, p) degrees at every p "
        "(pins the edges' independence; se bounded by the degree's and the items' spread)",
        at=("p",),
        pins=("generator:er-graph",),
    ),
    Claim(
        "cai-pin-outcomes-logistic",
        DESIGN.name,
        ColumnRatio("top_wins", "top_wins_expected", "design"),
        region(SE["wins"]),
        over=Every(("p",)),
        formula="1",
        description="BTL outcomes: the top items' wins against the others / Σ A_ij σ(θ_i − θ_j) over the same "
        f"compared pairs (σ written here) = 1 at every p; {_text('wins')}",
        pins=("generator:btl-outcomes",),
    ),
    # the metrics (cai §4.1.1; docs/xu.md, Metrics)
    _level(
        "cai-pin-metric-relative-hamming",
        "relative_hamming",
        "uniform",
        lambda pt: 1.0 - paper_k(_n(pt)) / _n(pt),
        "hamming",
        "1 − k/n",
        "relative Hamming error of a uniformly random top-k set = 1 − k/n",
        **POOL_P,
        pins=("metric:relative_hamming",),
    ),
    _level(
        "cai-pin-metric-kendall",
        "kendall",
        "uniform",
        lambda pt: kendall_random_mean(_n(pt), paper_k(_n(pt))),
        "kendall",
        "½(1 − C(k,2)/C(n,2))",
        "Kendall distance of a uniformly random ranking = ½ of the pairs θ* "
        "orders (its k top items are tied, and pairs tied in θ* count 0)",
        **POOL_P,
        pins=("metric:kendall",),
    ),
    _level(
        "cai-pin-metric-mean-rank-diff",
        "mean_rank_diff",
        "uniform",
        lambda pt: footrule_mean(_n(pt)),
        "footrule",
        "(n² − 1)/(3n)",
        "mean |rank difference| of a uniformly random ranking = (n² − 1)/(3n)",
        **POOL_P,
        pins=("metric:mean_rank_diff",),
    ),
    _level(
        "cai-pin-metric-exact-recovery",
        "exact_recovery",
        "near_oracle",
        lambda pt: 1.0 / (paper_k(_n(pt)) + 1),
        "near",
        "1/(k + 1)",
        "exact recovery of k items drawn from the k + 1 best = 1/(k + 1)",
        **POOL_P,
        pins=("metric:exact_recovery",),
    ),
    _level(
        "cai-pin-metric-relative-hamming-near",
        "relative_hamming",
        "near_oracle",
        lambda pt: 1.0 / (paper_k(_n(pt)) + 1),
        "near",
        "1/(k + 1)",
        "relative Hamming error of k items drawn from the k + 1 best = (1/k)·k/(k + 1)",
        **POOL_P,
        pins=("metric:relative_hamming",),
    ),
    _level(
        "cai-pin-metric-l2",
        "l2",
        "oracle_noise",
        lambda pt: _n(pt) * NOISE_SCALE**2,
        "l2",
        "n·s²",
        "RMS ℓ2 error of θ* + sZ = s√n (mean square n·s²)",
        root=True,
        square=True,
        **POOL_P,
        pins=("metric:l2",),
    ),
    _level(
        "cai-pin-metric-linf",
        "linf",
        "oracle_noise",
        lambda pt: NOISE_SCALE * expected_max_abs_normal(_n(pt)),
        "linf",
        "s·E max|Z_i|",
        "ℓ∞ error of θ* + sZ = s·E max_i |Z_i|",
        **POOL_P,
        pins=("metric:linf",),
    ),
    _level(
        "cai-pin-metric-log-rel-l2",
        "log_rel_l2",
        "oracle_noise",
        lambda pt: NOISE_SCALE * expected_chi_over_root_n(_n(pt)),
        "rel_l2",
        "s·E‖Z‖/√n",
        "exp(log-relative ℓ2 error) of θ* + s‖θ*‖₂Z/√n = s·E‖Z‖₂/√n (natural log)",
        statistic=ExpMean("log_rel_l2", "oracle_noise"),
        **POOL_P,
        pins=("metric:log_rel_l2",),
    ),
    _level(
        "cai-pin-metric-log-rel-linf",
        "log_rel_linf",
        "oracle_noise",
        lambda pt: NOISE_SCALE * expected_max_abs_normal(_n(pt)),
        "linf",
        "s·E max|Z_i|",
        "exp(log-relative ℓ∞ error) of θ* + s‖θ*‖∞Z = s·E max_i |Z_i| (natural log)",
        statistic=ExpMean("log_rel_linf", "oracle_noise"),
        **POOL_P,
        pins=("metric:log_rel_linf",),
    ),
]


# ---------------------------------------------------------------------------------------
# Mutants: a generator's scale or law off, a metric's normalisation off
# ---------------------------------------------------------------------------------------
def generate_changed(shape_change=None, data_change=None):
    """The experiment with ``generate`` called on a changed shape or data point."""

    def apply(experiment):
        def generate(key, shape, truth, data, inner=experiment.generate):
            return inner(
                key,
                shape_change(shape) if shape_change else shape,
                truth,
                data_change(data) if data_change else data,
            )

        return dataclasses.replace(experiment, generate=generate)

    return apply


def _log_uniform_law(theta, shape):
    """e^{θ_i − θ_top} ~ Unif(0.2, 0.7) mapped to θ_i − θ_top ~ Unif(ln 0.2, ln 0.7) (same draws), centred."""
    gap = theta - jnp.max(theta)
    u = jnp.exp(gap)
    lo, hi = math.log(STRENGTH_LOW), math.log(STRENGTH_HIGH)
    out = jnp.where(
        jnp.abs(gap) <= TOP_TOL,
        0.0,
        lo + (u - STRENGTH_LOW) / (STRENGTH_HIGH - STRENGTH_LOW) * (hi - lo),
    )
    return out - jnp.mean(out)


def _one_more_top(theta, shape):
    """k + 1 items at the top score: the last non-top item (index n − k − 1) raised to it."""
    return theta.at[shape["n_items"] - shape["k"] - 1].set(jnp.max(theta))


def _scaled_estimation(key, factor=1.0, log=jnp.log):
    def estimation(theta_hat, theta):
        out = dict(metrics.estimation_metrics(theta_hat, theta))
        out[key] = out[key] * factor
        if log is not jnp.log:
            out["log_rel_l2"] = log(metrics.l2_error(theta_hat, theta) / jnp.linalg.norm(theta))
            out["log_rel_linf"] = log(
                metrics.linf_error(theta_hat, theta) / jnp.max(jnp.abs(theta))
            )
        return out

    return estimation


def _hamming_over_2k(mask_hat, mask_true):
    return 0.5 * metrics.relative_hamming_error(mask_hat, mask_true)


def _rank_difference_over_n_minus_1(scores_a, scores_b):
    n = scores_a.shape[0]
    return metrics.mean_absolute_rank_difference(scores_a, scores_b) * n / (n - 1)


def _share_agreeing(mask_hat, mask_true):
    return {
        "relative_hamming": metrics.relative_hamming_error(mask_hat, mask_true),
        "exact_recovery": jnp.mean((mask_hat == mask_true).astype(jnp.float64)),
    }


EXP = (DESIGN.name,)
MUTANTS = [
    Mutant(
        "cai-design-theta-scale-2",
        "θ* design with every log-strength doubled (e^{θ_i} = U² off the top)",
        EXP,
        changed_truth(lambda theta, shape: 2.0 * theta, field="theta"),
        breaks=("generator:theta-design",),
    ),
    Mutant(
        "cai-design-log-uniform-law",
        "θ* design drawn from the wrong law: θ_i − θ_top ~ Unif(ln 0.2, ln 0.7) "
        "instead of e^{θ_i − θ_top} ~ Unif(0.2, 0.7)",
        EXP,
        changed_truth(_log_uniform_law, field="theta"),
        breaks=("generator:theta-design",),
    ),
    Mutant(
        "cai-design-k-plus-one",
        "θ* design with k + 1 items at the top score",
        EXP,
        changed_truth(_one_more_top, field="theta"),
        breaks=("generator:theta-design",),
    ),
    Mutant(
        "cai-design-graph-half-p",
        "G(n, p/2) drawn for G(n, p) (the edge probability's scale off)",
        EXP,
        generate_changed(data_change=lambda data: {**data, "p": data["p"] * 0.5}),
        breaks=("generator:er-graph",),
    ),
    Mutant(
        "cai-design-probit-outcomes",
        "outcomes drawn from the probit link Φ(θ_i − θ_j) instead of the logistic σ",
        EXP,
        generate_changed(shape_change=lambda shape: {**shape, "link": "probit"}),
        breaks=("generator:btl-outcomes",),
    ),
    Mutant(
        "cai-metric-hamming-over-2k",
        "relative Hamming error normalised by 2k (|Ŝ ∖ S|/(2k))",
        EXP,
        replaced_method("uniform", make_uniform_fn(hamming=_hamming_over_2k)),
        breaks=("metric:relative_hamming",),
    ),
    Mutant(
        "cai-metric-kendall-ordered-pairs",
        "Kendall distance over the n(n − 1) ordered pairs (÷ 2)",
        EXP,
        replaced_method(
            "uniform", make_uniform_fn(kendall=lambda a, b: 0.5 * metrics.kendall_distance(a, b))
        ),
        breaks=("metric:kendall",),
    ),
    Mutant(
        "cai-metric-rank-diff-over-n-minus-1",
        "mean |rank difference| normalised by n − 1",
        EXP,
        replaced_method(
            "uniform", make_uniform_fn(rank_difference=_rank_difference_over_n_minus_1)
        ),
        breaks=("metric:mean_rank_diff",),
    ),
    Mutant(
        "cai-metric-exact-recovery-as-share",
        "exact recovery as the share of agreeing mask entries",
        EXP,
        replaced_method("near_oracle", make_near_oracle_fn(topk=_share_agreeing)),
        breaks=("metric:exact_recovery",),
    ),
    Mutant(
        "cai-metric-l2-as-rms",
        "ℓ2 error normalised by √n (the RMS)",
        EXP,
        replaced_method(
            "oracle_noise",
            make_oracle_noise_fn(_scaled_estimation("l2", 1.0 / math.sqrt(DESIGN_N))),
        ),
        breaks=("metric:l2",),
    ),
    Mutant(
        "cai-metric-linf-halved",
        "ℓ∞ error halved (a half-width for the max)",
        EXP,
        replaced_method("oracle_noise", make_oracle_noise_fn(_scaled_estimation("linf", 0.5))),
        breaks=("metric:linf",),
    ),
    Mutant(
        "cai-metric-log10",
        "log-relative errors in log base 10 for the natural log",
        EXP,
        replaced_method(
            "oracle_noise", make_oracle_noise_fn(_scaled_estimation("l2", 1.0, log=jnp.log10))
        ),
        breaks=("metric:log_rel_l2", "metric:log_rel_linf"),
    ),
]


# ---------------------------------------------------------------------------------------
# cai-design-individual: the individual-DP generator (cai §3.1, §4.2; docs/cai.md, Model)
# ---------------------------------------------------------------------------------------
# m users × L comparisons, each a uniform pair of C(n, 2) with replacement, outcomes σ(θ_i − θ_j);
# θ* with its k = ⌊n/4⌋ top items first, redrawn every replicate. n = 22 separates ⌊n/4⌋ = 5
# from round(n/4) = 6.
IND_N, IND_USERS, IND_L, IND_REPS = 22, 100, 5, 1000


def individual_k(n: int) -> int:
    """k = ⌊n/4⌋ of the individual-DP code (docs/cai.md, Model; Errata and modes (E5))."""
    return n // 4


def pair_count_msq(total: float, n: int) -> float:
    """E mean_{i<j} M_ij² for M ~ Multinomial(T, uniform over N = C(n, 2) pairs): each M_ij is
    Binomial(T, 1/N), so E M² = T/N·(1 − 1/N) + (T/N)²."""
    pairs = n * (n - 1) / 2.0
    q = total / pairs
    return q * (1.0 - 1.0 / pairs) + q * q


def pair_count_msq_rel_se(total: float, n: int, reps: int) -> float:
    """Relative standard error of the mean over ``reps`` draws of mean_{i<j} M_ij², from the
    Binomial(T, 1/N) moments and the N pairs taken as independent (the multinomial's negative
    correlation only lowers the variance of their mean)."""
    pairs = n * (n - 1) // 2
    b = stats.binom(int(total), 1.0 / pairs)
    m2, m4 = b.moment(2), b.moment(4)
    return math.sqrt((m4 - m2 * m2) / (pairs * m2 * m2) / reps)


def individual_design_fn(key, ctx):
    """Moments of one draw of the individual-DP θ* and aggregated comparisons."""
    theta, W = ctx.sample["theta"], ctx.sample["W"]
    n = theta.shape[0]
    gap = theta - jnp.max(theta)
    top = jnp.abs(gap) <= TOP_TOL
    others = (~top).astype(jnp.float64)
    M = W + W.T
    upper = jnp.triu(jnp.ones((n, n), bool), k=1)
    cross = top[:, None] & ~top[None, :]
    return {
        "top_share": jnp.mean(top.astype(jnp.float64)),
        "top_first_share": jnp.sum(jnp.where(jnp.arange(n) < jnp.sum(top), top, False))
        / jnp.sum(top),
        "other_strength_mean": jnp.sum(others * jnp.exp(gap)) / jnp.sum(others),
        "comparisons": jnp.sum(W),
        "pair_count_msq": jnp.sum(jnp.where(upper, M * M, 0.0)) / (n * (n - 1) / 2),
        "top_wins": jnp.sum(jnp.where(cross, W, 0.0)),
        "top_wins_expected": jnp.sum(
            jnp.where(cross, M * logistic(theta[:, None] - theta[None, :]), 0.0)
        ),
    }


INDIVIDUAL_METRICS = (
    "top_share",
    "top_first_share",
    "other_strength_mean",
    "comparisons",
    "pair_count_msq",
    "top_wins",
    "top_wins_expected",
)

DESIGN_INDIVIDUAL = individual.individual_experiment(
    "cai-design-individual",
    "Calibration: the individual-DP design's moments (m users × L uniform pairs)",
    {"n_items": [IND_N], "n_users": [IND_USERS], "per_user": [IND_L], "eps": [1.0]},
    reps=IND_REPS,
    methods={
        "design": Method(
            individual_design_fn,
            INDIVIDUAL_METRICS,
            label="Design moments",
            doc="moments of θ*, the pair counts and the wins",
        )
    },
    description="cai §3.1, §4.2; docs/cai.md, Pins of the design and the metrics: the individual-DP θ* design "
    "(⌊n/4⌋ top items first), m·L uniform pairs with replacement and logistic outcomes",
)

EXPERIMENTS.append(DESIGN_INDIVIDUAL)

IND_K = individual_k(IND_N)
IND_SE = {
    "strength": math.sqrt(U_CV2 / ((IND_N - IND_K) * IND_REPS)),
    "pairs": pair_count_msq_rel_se(IND_USERS * IND_L, IND_N, IND_REPS),
    # top-vs-other comparisons ≈ T·k(n − k)/N per replicate, Bernoulli variance E F(1 − F) each
    "wins": math.sqrt(
        F_VAR_BERN
        / (IND_USERS * IND_L * IND_K * (IND_N - IND_K) / (IND_N * (IND_N - 1) / 2) * IND_REPS)
    )
    / F_MEAN,
}


def _ind_level(name, metric, prediction, key, formula, what, statistic=None, **check):
    return pinned_claim(
        name,
        DESIGN_INDIVIDUAL.name,
        statistic or Mean(metric, "design"),
        IND_SE[key],
        prediction=prediction,
        formula=formula,
        description=what,
        reps=IND_REPS,
        widths=SE_WIDTHS,
        **check,
    )


CHECKS += [
    _ind_level(
        "cai-pin-individual-top-share",
        "top_share",
        lambda pt: individual_k(_n(pt)) / _n(pt),
        "strength",
        "⌊n/4⌋/n",
        "individual-DP θ* design: the share of items at the top score is ⌊n/4⌋/n (n = 22: "
        "round(n/4) would give 6/22; deterministic, the region is the strength check's)",
        pins=("generator:individual-design",),
    ),
    _ind_level(
        "cai-pin-individual-top-first",
        "top_first_share",
        lambda pt: 1.0,
        "strength",
        "1",
        "individual-DP θ* design: the top items come first (deterministic)",
        pins=("generator:individual-design",),
    ),
    _ind_level(
        "cai-pin-individual-strength-mean",
        "other_strength_mean",
        lambda pt: U_MEAN,
        "strength",
        "E U = 0.45",
        "individual-DP θ* design: mean e^{θ_i − θ_top} over the other items = 0.45",
        pins=("generator:individual-design",),
    ),
    _ind_level(
        "cai-pin-individual-comparisons",
        "comparisons",
        lambda pt: pt["n_users"] * pt["per_user"],
        "pairs",
        "m·L",
        "per-user groups: m users × L comparisons = m·L in all (deterministic)",
        pins=("generator:individual-comparisons",),
    ),
    _ind_level(
        "cai-pin-individual-pair-counts",
        "pair_count_msq",
        lambda pt: pair_count_msq(pt["n_users"] * pt["per_user"], _n(pt)),
        "pairs",
        "T/N(1 − 1/N) + (T/N)²",
        "per-user groups: mean over pairs of M_ij² of a uniform Multinomial(m·L, C(n, 2)) (pins the "
        "uniform pairs drawn independently, not per user)",
        pins=("generator:individual-comparisons",),
    ),
    _ind_level(
        "cai-pin-individual-outcomes-logistic",
        None,
        None,
        "wins",
        "1",
        "individual-DP outcomes: the top items' wins over the others / Σ M_ij σ(θ_i − θ_j) = 1",
        statistic=ColumnRatio("top_wins", "top_wins_expected", "design"),
        pins=("generator:individual-comparisons",),
    ),
]


def _individual_generate_with(k_rule=None, clumped=False, per_user_dropped=False):
    """The individual-DP generator with its top-k rule, or its per-user groups, changed."""

    def apply(experiment):
        def generate(key, shape, truth, data, inner=experiment.generate):
            if k_rule is not None:
                shape = {**shape, "k": k_rule(shape["n_items"])}
            if clumped or per_user_dropped:
                out = inner(key, shape, truth, {**data, "per_user": 1})
                return {**out, "W": out["W"] * (data["per_user"] if clumped else 1.0)}
            return inner(key, shape, truth, data)

        return dataclasses.replace(experiment, generate=generate)

    return apply


IND_EXP = (DESIGN_INDIVIDUAL.name,)
MUTANTS += [
    Mutant(
        "cai-design-individual-k-round",
        "individual-DP θ* with k = round(n/4) top items instead of ⌊n/4⌋",
        IND_EXP,
        _individual_generate_with(k_rule=lambda n: int(round(n / 4))),
        breaks=("generator:individual-design",),
    ),
    Mutant(
        "cai-design-individual-user-repeats-one-pair",
        "each user's L comparisons are one pair drawn once (its outcome repeated L times)",
        IND_EXP,
        _individual_generate_with(clumped=True),
        breaks=("generator:individual-comparisons",),
    ),
    Mutant(
        "cai-design-individual-L-dropped",
        "one comparison per user (L dropped from the sampler)",
        IND_EXP,
        _individual_generate_with(per_user_dropped=True),
        breaks=("generator:individual-comparisons",),
    ),
]
