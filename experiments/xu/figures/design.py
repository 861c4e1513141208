"""xu: level checks that pin the data-generating designs and the metrics (not the mechanisms:
:mod:`.levels` pins those), on calibration experiments of their own (the figures' committed
tables are untouched). Every prediction is a closed form written here from the paper's
definitions (xu §2, §4.2–4.3, §5; docs/xu.md, Model; Metrics), never through ``dpsim.models``,
``dpsim.mechanisms`` or ``dpsim.theory``; the draws are the experiments' own
(:func:`..model.truth_uniform`, :func:`..model.truth_ladder`, :func:`..model.generate`,
:func:`.hetero.generate`, :func:`.realdata.generate`) and the scores the experiments' own
(:func:`..methods.scores`, :func:`..methods.release_metrics`).

**``xu-design``** (θ*_i ~ U(−2, 2) centred, Scenarios I, II, V; m = 10, K = 5, L ∈ {50, 200}):
mean θ*_i² of the centred draw = (m − 1)/m·4/3 (scale and centring); max θ* − min θ* =
4(m − 1)/(m + 1) (the range of m uniforms: pins the law, a normal of the same variance has a
range 8.6% wider); the wins of the better item of each pair over L·Σ σ(|θ*_i − θ*_j|) (σ
written here): ratio 1; their squared deviations from Lp*_e over the binomial variances
Σ Lp*_e(1 − p*_e): ratio 1 (the law's spread). The metrics on data-free estimators whose law is known exactly:
``uniform`` ranks by a uniformly random permutation (E Kendall distance ½: m(m − 1)/4 of the
C(m, 2) pairs discordant, both tie rules; E H_K = 1 − K/m, its spread hypergeometric);
``coin`` scores every item by a fair coin, so most pairs are tied (E ``kendall`` = ½, a tie
counting ½; E ``kendall_strict`` = ¼, a tie counting 0; E H_K = 1 − K/m, ties at the boundary
broken uniformly); ``oracle_noise`` θ* + sZ (E ``mse`` = s², RMS ``l2_rms`` = s, E ``linf`` =
s·E max_i |Z_i|).

**``xu-design-ladder``** (θ* = Δ(r − (m + 1)/2), labels permuted, Scenarios III, IV; m = 10,
L = 100, Δ ∈ {0.2, 0.5}): every pair's law depends only on its rank difference k, and
m − k pairs have difference k, so the raw wins have closed forms from (m, L, Δ) alone: the
better item's wins summed over pairs, E = L·Σ_k (m − k)σ(Δk), and their squared deviations
from L·σ(Δk), E = L·Σ_k (m − k)σ(Δk)(1 − σ(Δk)) (the binomial spread; both with exact
variances). Mean θ*² = Δ²(m² − 1)/12 (exact per draw); (θ*_1 − θ*_m)², items 1 and m by label,
= Δ²m(m + 1)/6 on average over the permutation (pins the label permutation). The metrics
there: ``excess_risk`` of θ̂ = 2θ* = m⁻²Σ_k (m − k)·KL(σ(Δk) ‖ σ(2Δk)) (exact); the release
metrics of data-free releases: ``release_slope`` of z̄ = ½ + b(ȳ − ½) is b (exact), and
``excess_var`` of z̄ = ȳ + sZ/√L has E s².

**``xu-design-hetero``** (:mod:`.hetero`, L = 1200 users, m = 10): the released groups' averaged
privacy G = Σ_g L_g coth²(ε_g/2)/L (coth written here) against the profiles' definitions
(docs/xu.md, Errata and modes (A21): ``thirds`` ⅓ each at ε/4, ε, 4ε; ``half_tenth`` ½ at ε,
½ at ε/10; ``strict_minority`` 90% at ε, 10% at ε/10), for the profile itself, the
homogeneous ε with the same G and the homogeneous mean ε; and each released group's share
of the users, from its wins: Σ_e (better item's wins in group g)/Σ_e σ(|θ*_i − θ*_j|) over L
= the group's fraction.

**``xu-design-movielens``** (:mod:`.realdata`, the stand-in, m = 40, L ∈ {300, 500}): L of the
N users subsampled without replacement, so each pair's wins are hypergeometric:
Σ_e (wins_e − Lȳ_e)² over Σ_e Lȳ_e(1 − ȳ_e)(N − L)/(N − 1), ȳ_e the population's mean
answer: ratio 1 (sampling with replacement gives (N − 1)/(N − L)).

**Regions**: every closed form is exact (model error 0), so the region is e^{±6·se}, se the
relative standard error of the point's mean from the law (a bound where stated; 1e-9 for
deterministic values).
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
from scipy import integrate, special, stats

from dpsim import metrics
from dpsim.engine import Experiment, Tuning, Method
from dpsim.engine.judgement.statistics import ColumnRatio, Mean
from dpsim.engine.judgement.checks import pinned_claim
from dpsim.engine.judgement.mutants import Mutant, chain, changed_truth, replaced_method

from . import hetero, realdata
from ..methods import release_metrics, scores
from ..model import (
    AXIS_TYPES,
    LADDER_CELLS,
    generate,
    lane_bytes,
    ladder_win_laws,
    resolve_k,
    truth_ladder,
    truth_uniform,
)

SE_WIDTHS = 6.0
EXACT = 1e-9  # se of a deterministic value (region 1 ± 1e-4 after rounding)
M_ITEMS = 10
HALF_WIDTH = 2.0  # θ*_i ~ U(−2, 2) (xu §5.1)
DESIGN_L = [50, 200]
DESIGN_REPS = 1000
LADDER_L, LADDER_GAPS = 100, [0.2, 0.5]
NOISE_SCALE = 0.1  # s of ``oracle_noise``
RELEASE_NOISE = 0.5  # s of the data-free noisy release
RELEASE_SHRINK = 0.5  # b of the data-free shrunk release
HETERO_L, HETERO_REPS = 1200, 300
REAL_L, REAL_REPS, REAL_M = [300, 500], 400, 40
# the named heterogeneous profiles as docs/xu.md, Errata and modes (A21) define them: (fraction, multiple of ε)
PROFILE_DEFINITIONS = {
    "thirds": ((1 / 3, 0.25), (1 / 3, 1.0), (1 / 3, 4.0)),
    "half_tenth": ((0.5, 1.0), (0.5, 0.1)),
    "strict_minority": ((0.9, 1.0), (0.1, 0.1)),
}


# ---------------------------------------------------------------------------------------
# Closed forms, from the paper's definitions
# ---------------------------------------------------------------------------------------
def paper_k(m: int) -> int:
    """K = m/2, rounded down (xu §5.2, Scenario III: "K = m/2")."""
    return m // 2


def uniform_moment(power: int, half_width: float = HALF_WIDTH) -> float:
    """E U^power, U ~ U(−w, w): w^p/(p + 1) for even p, 0 for odd."""
    return 0.0 if power % 2 else half_width**power / (power + 1.0)


def centred_msq(m: int) -> float:
    """E (1/m)Σ(θ_i − θ̄)² = (m − 1)/m·E U² for m i.i.d. U(−2, 2)."""
    return (m - 1.0) / m * uniform_moment(2)


def centred_msq_cv2(m: int) -> float:
    """CV² of the sample variance of m i.i.d. draws, κ/m − (m − 3)/(m(m − 1)), κ = E U⁴/(E U²)² = 9/5."""
    kappa = uniform_moment(4) / uniform_moment(2) ** 2
    return kappa / m - (m - 3.0) / (m * (m - 1.0))


def uniform_range_mean(m: int, half_width: float = HALF_WIDTH) -> float:
    """E (max − min) of m i.i.d. U(−w, w): 2w(m − 1)/(m + 1) (range/2w ~ Beta(m − 1, 2))."""
    return 2.0 * half_width * (m - 1.0) / (m + 1.0)


def uniform_range_cv2(m: int) -> float:
    """CV² of the range of m uniforms: Var Beta(m − 1, 2)/mean² = 2/((m − 1)(m + 2))."""
    return 2.0 / ((m - 1.0) * (m + 2.0))


def logistic(x):
    """σ(x) = 1/(1 + e^{−x}) (xu §2, BTL), written here, not the model's link."""
    return 1.0 / (1.0 + jnp.exp(-x))


def np_logistic(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))


def ladder_laws(m: int, gap: float):
    """(n_k, p_k), k = 1 … m − 1: the m − k pairs at rank difference k and their better item's
    win probability σ(Δk) on the ladder (xu §5.2)."""
    k = np.arange(1, m)
    return (m - k).astype(np.float64), np_logistic(gap * k)


def ladder_wins_mean(m: int, n_users: int, gap: float) -> float:
    """E Σ_e (better item's wins) = L·Σ_k (m − k)σ(Δk)."""
    n, p = ladder_laws(m, gap)
    return float(n_users * np.sum(n * p))


def ladder_wins_var(m: int, n_users: int, gap: float) -> float:
    """Var of the same sum: L·Σ_k (m − k)σ(Δk)(1 − σ(Δk)) (independent binomials)."""
    n, p = ladder_laws(m, gap)
    return float(n_users * np.sum(n * p * (1.0 - p)))


def ladder_dev2_mean(m: int, n_users: int, gap: float) -> float:
    """E Σ_e (X_e − Lσ(Δk_e))² = Σ_k (m − k)·Lσ_k(1 − σ_k), the binomial variances."""
    return ladder_wins_var(m, n_users, gap)


def ladder_dev2_var(m: int, n_users: int, gap: float) -> float:
    """Var of the same sum: Σ_k (m − k)(μ4_k − v_k²), v = Lpq, μ4 = v(1 + 3(L − 2)pq) (binomial)."""
    n, p = ladder_laws(m, gap)
    pq = p * (1.0 - p)
    v = n_users * pq
    mu4 = v * (1.0 + 3.0 * (n_users - 2.0) * pq)
    return float(np.sum(n * (mu4 - v * v)))


def rank_difference_moment(m: int, power: int) -> float:
    """E (r_a − r_b)^power over an ordered pair a ≠ b of distinct ranks, uniformly (the labels
    of a uniformly permuted ladder), by enumeration; power 2 gives m(m + 1)/6."""
    values = [(a - b) ** power for a, b in itertools.permutations(range(m), 2)]
    return float(np.mean(values))


def ladder_excess_risk(m: int, gap: float, scale: float) -> float:
    """e_L of θ̂ = scale·θ* on the ladder (xu eq. (4)): m⁻²Σ_{i<j} KL(p*_ij ‖ σ(θ̂_i − θ̂_j)) =
    m⁻²Σ_k (m − k)·KL(σ(Δk) ‖ σ(scale·Δk)), KL of Bernoulli laws."""
    n, p = ladder_laws(m, gap)
    q = np_logistic(scale * gap * np.arange(1, m))
    kl = p * np.log(p / q) + (1.0 - p) * np.log((1.0 - p) / (1.0 - q))
    return float(np.sum(n * kl) / m**2)


def kendall_random_var(m: int) -> float:
    """Var of the Kendall distance of a uniformly random ranking against a strict order:
    (2m + 5)/(18m(m − 1))."""
    return (2.0 * m + 5.0) / (18.0 * m * (m - 1.0))


def hamming_random_var(m: int, k: int) -> float:
    """Var of H_K = 1 − |Ŝ ∩ S|/K for a uniform K-set Ŝ: Var Hypergeom(m, K, K)/K²."""
    return float(stats.hypergeom(m, k, k).var()) / k**2


def coin_laws(m: int, k: int) -> dict:
    """(mean, variance) of the Kendall distance (ties ½ and 0) and of the expected H_K of
    scores drawn as m fair coins, against a strict order whose top K are the last K items, by
    enumerating the 2^m coin vectors. H_K with ties broken uniformly: with c ones, a of them in
    the true top K, E|Ŝ ∩ S| = aK/c when c ≥ K, else a + (K − a)(K − c)/(m − c)."""
    i, j = np.triu_indices(m, 1)  # truth θ_i < θ_j for i < j
    half, strict, ham = [], [], []
    top = np.arange(m) >= m - k
    for bits in itertools.product((0, 1), repeat=m):
        c = np.asarray(bits)
        disc = np.sum(c[i] > c[j])
        tied = np.sum(c[i] == c[j])
        pairs = len(i)
        half.append((disc + 0.5 * tied) / pairs)
        strict.append(disc / pairs)
        ones, a = int(c.sum()), int(np.sum(c[top]))
        hits = a * k / ones if ones >= k else a + (k - a) * (k - ones) / (m - ones)
        ham.append(1.0 - hits / k)
    return {
        name: (float(np.mean(v)), float(np.var(v)))
        for name, v in (("kendall", half), ("kendall_strict", strict), ("top_k_hamming", ham))
    }


def expected_max_abs_normal(m: int, power: int = 1) -> float:
    """E max_i |Z_i|^power over m i.i.d. N(0, 1): ∫ power·x^{power−1}(1 − erf(x/√2)^m) dx."""
    return integrate.quad(
        lambda x: power * x ** (power - 1) * (1.0 - special.erf(x / math.sqrt(2.0)) ** m),
        0.0,
        40.0,
        limit=200,
        epsabs=1e-13,
    )[0]


def coth2_half(eps: float) -> float:
    """coth²(ε/2) = ((e^ε + 1)/(e^ε − 1))², the privacy factor of xu §4.1."""
    return (1.0 / math.tanh(eps / 2.0)) ** 2


def profile_G(profile: str, eps: float) -> float:
    """G(ε) = mean over users of coth²(ε_l/2) (xu §4.1) of a named profile (its definition here)."""
    return sum(f * coth2_half(mult * eps) for f, mult in PROFILE_DEFINITIONS[profile])


def released_G(profile: str, match: str, eps: float) -> float:
    """G of what ``xu-hetero`` releases: the profile's, also for ``same_g`` (its point); for
    ``same_mean_eps`` coth² of half the profile's mean budget."""
    if match == "same_mean_eps":
        return coth2_half(sum(f * mult * eps for f, mult in PROFILE_DEFINITIONS[profile]))
    return profile_G(profile, eps)


def group_fraction(profile: str, match: str, group: int) -> float:
    """The share of the users in released group ``group``: the profile's fraction, or 1 for the
    one homogeneous group."""
    return PROFILE_DEFINITIONS[profile][group][0] if match == "profile" else float(group == 0)


# ---------------------------------------------------------------------------------------
# The methods
# ---------------------------------------------------------------------------------------
def _pairs(m: int):
    return np.triu_indices(m, 1)


def better_wins(theta, wins, n_users):
    """(M,) the wins of the better item of each pair i < j (``wins`` counts i beating j) and
    (M,) σ(|θ_i − θ_j|) (σ written here)."""
    i, j = _pairs(theta.shape[0])
    d = theta[i] - theta[j]
    return jnp.where(d > 0, wins, n_users - wins), logistic(jnp.abs(d))


def design_fn(key, ctx):
    """Moments of one draw of the uniform design and its wins (module docstring)."""
    theta, L = ctx.sample["theta"], ctx.data["n_users"]
    better, p = better_wins(theta, ctx.sample["wins"][0], L)
    v = L * p * (1.0 - p)
    return {
        "theta_msq": jnp.mean(theta * theta),
        "theta_range": jnp.max(theta) - jnp.min(theta),
        "better_wins": jnp.sum(better),
        "better_wins_expected": L * jnp.sum(p),
        "wins_dev2": jnp.sum((better - L * p) ** 2),
        "wins_dev2_expected": jnp.sum(v),
    }


def make_ranking_fn(draw, score=scores):
    """A data-free estimator: scores ``draw(key, m)``, scored by ``score`` (a mutant passes a wrong one)."""

    def ranking_fn(key, ctx):
        theta = ctx.sample["theta"]
        out = score(draw(key, theta.shape[0]), theta, ctx.shape["k"])
        return {name: out[name] for name in ("kendall", "kendall_strict", "top_k_hamming")}

    return ranking_fn


def permutation_scores(key, m):
    """A uniformly random ranking."""
    return jax.random.permutation(key, m).astype(jnp.float64)


def coin_scores(key, m):
    """m fair coins (most pairs tied)."""
    return jax.random.bernoulli(key, 0.5, (m,)).astype(jnp.float64)


def make_oracle_noise_fn(score=scores):
    """θ* + sZ scored by ``score``."""

    def oracle_noise_fn(key, ctx):
        theta = ctx.sample["theta"]
        out = score(
            theta + NOISE_SCALE * jax.random.normal(key, theta.shape, jnp.float64),
            theta,
            ctx.shape["k"],
        )
        return {name: out[name] for name in ("mse", "l2_rms", "linf")}

    return oracle_noise_fn


RANKING = ("kendall", "kendall_strict", "top_k_hamming")
METHODS = {
    "design": Method(
        design_fn,
        (
            "theta_msq",
            "theta_range",
            "better_wins",
            "better_wins_expected",
            "wins_dev2",
            "wins_dev2_expected",
        ),
        label="Design moments",
        doc="moments of θ* ~ U(−2, 2) centred and of the raw wins",
    ),
    "uniform": Method(
        make_ranking_fn(permutation_scores),
        RANKING,
        label="Uniform ranking",
        doc="data-free: a uniformly random ranking",
    ),
    "coin": Method(
        make_ranking_fn(coin_scores),
        RANKING,
        label="Coin scores",
        doc="data-free: every item scored by a fair coin (ties)",
    ),
    "oracle_noise": Method(
        make_oracle_noise_fn(),
        ("mse", "l2_rms", "linf"),
        label="Noisy oracle",
        doc="data-free: θ* plus Gaussian noise",
    ),
}

DESIGN = Experiment(
    name="xu-design",
    title="Calibration: the uniform θ* design, its raw wins and the metrics on data-free estimators",
    axes={"n_items": [M_ITEMS], "k": ["auto"], "n_users": DESIGN_L, "eps": [1.0]},
    shape_axes=("n_items", "k"),
    analysis_axes=("eps",),
    truth=truth_uniform,
    generate=generate,
    methods=METHODS,
    reps=DESIGN_REPS,
    truth_per_replicate=True,
    axis_types=AXIS_TYPES,
    resolve_shape=resolve_k,
    tuning=Tuning(lane_bytes=lane_bytes),
    description="xu §2, §4.2–4.3, §5.1; docs/xu.md, Pins of the design and the metrics: θ* ~ U(−2, 2) centred, the "
    "binomial wins and the ranking and estimation metrics against closed forms",
)


def ladder_design_fn(key, ctx):
    """Moments of one ladder draw and its wins (module docstring)."""
    theta, L = ctx.sample["theta"], ctx.data["n_users"]
    better, p = better_wins(theta, ctx.sample["wins"][0], L)
    return {
        "theta_msq": jnp.mean(theta * theta),
        "label_spread": (theta[0] - theta[-1]) ** 2,
        "better_wins": jnp.sum(better),
        "better_dev2": jnp.sum((better - L * p) ** 2),
    }


def make_ladder_metrics_fn(score=scores, release=release_metrics):
    """``excess_risk`` of θ̂ = 2θ*, and the release metrics of the two data-free releases
    (module docstring), scored by ``score`` and ``release``."""

    def ladder_metrics_fn(key, ctx):
        theta, wins = ctx.sample["theta"], ctx.sample["wins"]
        L = ctx.data["n_users"]
        sizes = jnp.reshape(jnp.asarray(L, jnp.float64), (1,))
        ybar = wins[0] / L
        shrunk = {"zbar": 0.5 + RELEASE_SHRINK * (ybar - 0.5), "sizes": sizes}
        noisy = {
            "zbar": ybar
            + RELEASE_NOISE / jnp.sqrt(L) * jax.random.normal(key, ybar.shape, jnp.float64),
            "sizes": sizes,
        }
        return {
            "excess_risk": score(2.0 * theta, theta, ctx.shape["k"])["excess_risk"],
            "release_slope": release(shrunk, wins)["release_slope"],
            "excess_var": release(noisy, wins)["excess_var"],
        }

    return ladder_metrics_fn


LADDER_METRICS = ("excess_risk", "release_slope", "excess_var")
DESIGN_LADDER = Experiment(
    name="xu-design-ladder",
    title="Calibration: the evenly spaced θ* design, its tabled wins, the excess risk and the "
    "release metrics",
    axes={
        "n_items": [M_ITEMS],
        "k": ["auto"],
        "n_users": [LADDER_L],
        "gap": LADDER_GAPS,
        "eps": [1.0],
    },
    shape_axes=("n_items", "k"),
    analysis_axes=("eps",),
    truth=truth_ladder,
    generate=generate,
    methods={
        "design": Method(
            ladder_design_fn,
            ("theta_msq", "label_spread", "better_wins", "better_dev2"),
            label="Design moments",
            doc="moments of the permuted ladder and of the raw wins",
        ),
        "metrics": Method(
            make_ladder_metrics_fn(),
            LADDER_METRICS,
            label="Data-free scores",
            doc="excess risk of 2θ*; release metrics of a shrunk and a noisy release",
        ),
    },
    reps=DESIGN_REPS,
    truth_per_replicate=True,
    axis_types=AXIS_TYPES,
    resolve_shape=resolve_k,
    tuning=Tuning(lane_bytes=lane_bytes),
    cell_arrays=LADDER_CELLS[:1],
    description="xu §2, §4, §5.2; docs/xu.md, Pins of the design and the metrics: the permuted ladder, its raw wins "
    "drawn through alias tables, e_L and the release metrics against closed forms",
)


def hetero_design_fn(key, ctx):
    """The released groups' G and their shares of the users, from their wins (module docstring)."""
    member, atom_sizes = ctx.analysis["group_atoms"], ctx.data["atom_sizes"]
    sizes, eps = member @ atom_sizes, ctx.analysis["group_eps"]
    wins = member @ ctx.sample["wins"]  # (G, M)
    theta, L = ctx.sample["theta"], jnp.sum(atom_sizes)
    i, j = _pairs(theta.shape[0])
    d = theta[i] - theta[j]
    better = jnp.where(d[None, :] > 0, wins, sizes[:, None] - wins)
    share = jnp.sum(better, axis=1) / jnp.sum(logistic(jnp.abs(d))) / L
    coth2 = (1.0 / jnp.tanh(eps / 2.0)) ** 2
    return {"G": jnp.sum(sizes * coth2) / jnp.sum(sizes), "share_0": share[0], "share_1": share[1]}


DESIGN_HETERO = Experiment(
    name="xu-design-hetero",
    title="Calibration: the heterogeneous-ε groups (their G and sizes)",
    axes={
        "n_items": [M_ITEMS],
        "k": ["auto"],
        "n_users": [HETERO_L],
        "eps": [1.0],
        "profile": list(PROFILE_DEFINITIONS),
        "match": list(hetero.MATCHES),
    },
    shape_axes=("n_items", "k"),
    analysis_axes=("eps", "profile", "match"),
    truth=truth_uniform,
    generate=hetero.generate,
    methods={
        "design": Method(
            hetero_design_fn,
            ("G", "share_0", "share_1"),
            label="Group moments",
            doc="G and the groups' shares",
        )
    },
    reps=HETERO_REPS,
    truth_per_replicate=True,
    axis_types=hetero.HETERO.axis_types,
    derived=hetero.HETERO.derived,
    resolve_shape=resolve_k,
    tuning=Tuning(lane_bytes=lane_bytes),
    description="xu §4.1; docs/xu.md, Errata and modes (A21), Pins of the design and the metrics: the released groups "
    "of every profile and match against their definitions",
)


def movielens_design_fn(key, ctx):
    """The squared deviations of the subsampled wins from L·ȳ and their hypergeometric expectation."""
    y = ctx.truth["y"].astype(jnp.float64)
    n_total, L = y.shape[0], ctx.data["n_users"]
    ybar = jnp.mean(y, axis=0)
    wins = ctx.sample["wins"][0]
    return {
        "dev2": jnp.sum((wins - L * ybar) ** 2),
        "dev2_expected": L * jnp.sum(ybar * (1.0 - ybar)) * (n_total - L) / (n_total - 1.0),
    }


DESIGN_MOVIELENS = Experiment(
    name="xu-design-movielens",
    title="Calibration: MovieLens users subsampled without replacement",
    axes={
        "ratings_file": [realdata.STAND_IN],
        "n_items": [REAL_M],
        "k": ["auto"],
        "n_users": REAL_L,
        "eps": [1.0],
    },
    shape_axes=("ratings_file", "n_items", "k"),
    analysis_axes=("eps",),
    truth=realdata.truth,
    generate=realdata.generate,
    methods={
        "design": Method(
            movielens_design_fn,
            ("dev2", "dev2_expected"),
            label="Subsample spread",
            doc="squared deviations of the wins from L·ȳ",
        )
    },
    reps=REAL_REPS,
    axis_types=realdata.FIG7.axis_types,
    resolve_shape=realdata.resolve_shape,
    derived=realdata.FIG7.derived[:1],
    validate_point=realdata.validate_point,
    tuning=Tuning(lane_bytes=lane_bytes),
    description="xu §5.4; docs/xu.md, Experiments as run, Pins of the design and the metrics: the subsample's "
    "hypergeometric spread",
)

EXPERIMENTS = [DESIGN, DESIGN_LADDER, DESIGN_HETERO, DESIGN_MOVIELENS]


# ---------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------
M, R = M_ITEMS, DESIGN_REPS
K = paper_k(M)
PAIRS = M * (M - 1) // 2
ROWS = R * len(DESIGN_L)  # independent rows of a data-free method, L pooled
COIN = coin_laws(M, K)
MAX_Z, MAX_Z2 = expected_max_abs_normal(M), expected_max_abs_normal(M, 2)
HAMMING_MEAN = 1.0 - K / M
PQ_MIN = float(
    np_logistic(2 * HALF_WIDTH) * np_logistic(-2 * HALF_WIDTH)
)  # the smallest p(1 − p) of a pair


def _ladder_se(stat: str) -> float:
    """The largest relative se over the ladder's gaps (exact variances)."""
    out = []
    for gap in LADDER_GAPS:
        if stat == "wins":
            out.append(
                math.sqrt(ladder_wins_var(M, LADDER_L, gap)) / ladder_wins_mean(M, LADDER_L, gap)
            )
        else:
            out.append(
                math.sqrt(ladder_dev2_var(M, LADDER_L, gap)) / ladder_dev2_mean(M, LADDER_L, gap)
            )
    return max(out) / math.sqrt(R)


SE = {
    # θ* is drawn per (m, replicate) and shared by the L values: R independent draws
    "theta_msq": math.sqrt(centred_msq_cv2(M) / R),
    "range": math.sqrt(uniform_range_cv2(M) / R),
    # bound: Var ≤ L/4 per pair, E ≥ L/2 per pair (the better item wins w.p. ≥ ½)
    "better": math.sqrt(0.25 / (min(DESIGN_L) * PAIRS * R)) / 0.5,
    # bound: Var Σ_e (X_e − Lp_e)² = Σ_e 2v_e² + v_e(1 − 6p_eq_e), v = Lpq, ≤ (Σ v)²·(2·(L/4)/Σv + 1/Σv), Σv ≥ M·L·σ(4)σ(−4)
    # (|θ_i − θ_j| < 4)
    "wins_spread": math.sqrt((2.0 * 0.25 + 1.0 / min(DESIGN_L)) / (PAIRS * PQ_MIN * R)),
    "kendall": math.sqrt(kendall_random_var(M) / ROWS) / 0.5,
    "hamming": math.sqrt(hamming_random_var(M, K) / ROWS) / HAMMING_MEAN,
    "coin_kendall": math.sqrt(COIN["kendall"][1] / ROWS) / COIN["kendall"][0],
    "coin_strict": math.sqrt(COIN["kendall_strict"][1] / ROWS) / COIN["kendall_strict"][0],
    "coin_hamming": math.sqrt(COIN["top_k_hamming"][1] / ROWS) / COIN["top_k_hamming"][0],
    "mse": math.sqrt(2.0 / (M * ROWS)),  # s²χ²_m/m: CV² = 2/m per row
    "l2_rms": 0.5 * math.sqrt(2.0 / (M * ROWS)),  # its RMS: half the se
    "linf": math.sqrt(MAX_Z2 / MAX_Z**2 - 1.0) / math.sqrt(ROWS),
    "exact": EXACT,
    "label_spread": math.sqrt(
        rank_difference_moment(M, 4) / rank_difference_moment(M, 2) ** 2 - 1.0
    )
    / math.sqrt(R),
    "ladder_wins": _ladder_se("wins"),
    "ladder_dev2": _ladder_se("dev2"),
    "excess_var": math.sqrt(
        2.0 / (PAIRS * R * len(LADDER_GAPS))
    ),  # s²χ²_M/M, Δ pooled (independent noise)
    # bound: per replicate Var ≤ L_g·M/4 and E ≥ L_g·M/2 for the smallest released group (10%)
    "share": math.sqrt(0.25 / (0.1 * HETERO_L * PAIRS * HETERO_REPS)) / 0.5,
    # bound: Σ_e Y_e² of (nearly Gaussian) correlated Y_e has CV² ≤ 2 (Var = 2 tr C² ≤ 2 (tr C)²), + ½ for the
    # hypergeometric counts' excess kurtosis
    "subsample": math.sqrt(2.5 / REAL_REPS),
}
POOL_L = {"pool": ("n_users",)}


def _claim(name, experiment, statistic, key, prediction, formula, what, reps=R, at=(), **check):
    return pinned_claim(
        name,
        experiment,
        statistic,
        SE[key],
        prediction=prediction,
        formula=formula,
        description=what,
        reps=reps,
        at=at,
        widths=SE_WIDTHS,
        **check,
    )


def _m(point) -> int:
    return int(point["n_items"])


CHECKS = [
    # the uniform design (xu §5.1) and its wins (xu §2)
    _claim(
        "xu-pin-design-uniform-msq",
        DESIGN.name,
        Mean("theta_msq", "design"),
        "theta_msq",
        lambda pt: centred_msq(_m(pt)),
        "(m − 1)/m·4/3",
        "θ* ~ U(−2, 2) centred: mean θ_i² = (m − 1)/m·E U² (the scale and the centring), at every L (the same θ* draws)",
        at=("n_users",),
    ),
    _claim(
        "xu-pin-design-uniform-range",
        DESIGN.name,
        Mean("theta_range", "design"),
        "range",
        lambda pt: uniform_range_mean(_m(pt)),
        "4(m − 1)/(m + 1)",
        "θ* ~ U(−2, 2): max θ* − min θ* = 4(m − 1)/(m + 1) (the law: a normal of the same variance is 8.6% wider "
        "at m = 10), at every L (the same θ* draws)",
        at=("n_users",),
    ),
    _claim(
        "xu-pin-wins-binomial-mean",
        DESIGN.name,
        ColumnRatio("better_wins", "better_wins_expected", "design"),
        "better",
        None,
        "1",
        "raw wins n1_e ~ Bin(L, σ(θ_i − θ_j)): the better item's wins / L·Σ σ(|θ_i − θ_j|) "
        "(σ written here) = 1 at every L (se bounded with Var ≤ L/4, E ≥ L/2 per pair)",
        at=("n_users",),
    ),
    _claim(
        "xu-pin-wins-binomial-spread",
        DESIGN.name,
        ColumnRatio("wins_dev2", "wins_dev2_expected", "design"),
        "wins_spread",
        None,
        "1",
        "raw wins: Σ_e (n1_e − Lp*_e)² / Σ_e Lp*_e(1 − p*_e) = 1 at every L (the binomial "
        "spread; se bounded with p*(1 − p*) ≥ σ(4)σ(−4))",
        at=("n_users",),
    ),
    # the metrics on data-free estimators (docs/xu.md, Metrics)
    _claim(
        "xu-pin-metric-kendall",
        DESIGN.name,
        Mean("kendall", "uniform"),
        "kendall",
        lambda pt: 0.5,
        "½",
        "Kendall distance (ties ½) of a uniformly random ranking = ½: m(m − 1)/4 of the C(m, 2) pairs",
        **POOL_L,
    ),
    _claim(
        "xu-pin-metric-kendall-strict",
        DESIGN.name,
        Mean("kendall_strict", "uniform"),
        "kendall",
        lambda pt: 0.5,
        "½",
        "Kendall distance (strict) of a uniformly random ranking = ½",
        **POOL_L,
    ),
    _claim(
        "xu-pin-metric-top-k-hamming",
        DESIGN.name,
        Mean("top_k_hamming", "uniform"),
        "hamming",
        lambda pt: 1.0 - int(pt["k"]) / _m(pt),
        "1 − K/m",
        "top-K Hamming error H_K of a uniformly random ranking = 1 − K/m (a uniform K-set)",
        **POOL_L,
    ),
    _claim(
        "xu-pin-metric-kendall-ties-half",
        DESIGN.name,
        Mean("kendall", "coin"),
        "coin_kendall",
        lambda pt: 0.5,
        "½",
        "Kendall distance of fair-coin scores, a tied pair counting ½: ¼ discordant + ½·½ tied = ½",
        **POOL_L,
    ),
    _claim(
        "xu-pin-metric-kendall-strict-ties",
        DESIGN.name,
        Mean("kendall_strict", "coin"),
        "coin_strict",
        lambda pt: 0.25,
        "¼",
        "strict Kendall distance of fair-coin scores, a tied pair counting 0: ¼",
        **POOL_L,
    ),
    _claim(
        "xu-pin-metric-top-k-hamming-ties",
        DESIGN.name,
        Mean("top_k_hamming", "coin"),
        "coin_hamming",
        lambda pt: 1.0 - int(pt["k"]) / _m(pt),
        "1 − K/m",
        "H_K of fair-coin scores, ties at the K boundary broken uniformly (its expectation) = 1 − K/m",
        **POOL_L,
    ),
    _claim(
        "xu-pin-metric-mse",
        DESIGN.name,
        Mean("mse", "oracle_noise"),
        "mse",
        lambda pt: NOISE_SCALE**2,
        "s²",
        "mse = ‖θ̂ − θ*‖²/m of θ* + sZ = s²",
        **POOL_L,
    ),
    _claim(
        "xu-pin-metric-l2-rms",
        DESIGN.name,
        Mean("l2_rms", "oracle_noise", True, True),
        "l2_rms",
        lambda pt: NOISE_SCALE**2,
        "s²",
        "RMS of l2_rms = ‖θ̂ − θ*‖₂/√m of θ* + sZ = s (mean square s²)",
        **POOL_L,
    ),
    _claim(
        "xu-pin-metric-linf",
        DESIGN.name,
        Mean("linf", "oracle_noise"),
        "linf",
        lambda pt: NOISE_SCALE * expected_max_abs_normal(_m(pt)),
        "s·E max|Z_i|",
        "ℓ∞ error of θ* + sZ = s·E max_i |Z_i|",
        **POOL_L,
    ),
    # the ladder (xu §5.2) and its tabled wins
    _claim(
        "xu-pin-design-ladder-msq",
        DESIGN_LADDER.name,
        Mean("theta_msq", "design"),
        "exact",
        lambda pt: pt["gap"] ** 2 * (_m(pt) ** 2 - 1.0) / 12.0,
        "Δ²(m² − 1)/12",
        "ladder θ* = Δ(r − (m + 1)/2): mean θ_i² = Δ²(m² − 1)/12 at every Δ (exact per draw)",
        at=("gap",),
    ),
    _claim(
        "xu-pin-design-ladder-permuted",
        DESIGN_LADDER.name,
        Mean("label_spread", "design"),
        "label_spread",
        lambda pt: pt["gap"] ** 2 * _m(pt) * (_m(pt) + 1.0) / 6.0,
        "Δ²m(m + 1)/6",
        "ladder labels permuted uniformly: (θ_1 − θ_m)² = Δ²m(m + 1)/6 on average at every Δ (unpermuted: "
        "Δ²(m − 1)²)",
        at=("gap",),
    ),
    _claim(
        "xu-pin-wins-ladder-mean",
        DESIGN_LADDER.name,
        Mean("better_wins", "design"),
        "ladder_wins",
        lambda pt: ladder_wins_mean(_m(pt), int(pt["n_users"]), pt["gap"]),
        "L·Σ_k (m − k)σ(Δk)",
        "ladder wins through the alias tables: the better item's wins summed over pairs = L·Σ_k (m − k)σ(Δk) at "
        "every Δ",
        at=("gap",),
    ),
    _claim(
        "xu-pin-wins-ladder-spread",
        DESIGN_LADDER.name,
        Mean("better_dev2", "design"),
        "ladder_dev2",
        lambda pt: ladder_dev2_mean(_m(pt), int(pt["n_users"]), pt["gap"]),
        "L·Σ_k (m − k)σ_k(1 − σ_k)",
        "ladder wins: Σ_e (X_e − Lσ(Δk_e))² = the binomial variances L·Σ_k (m − k)σ_k(1 − σ_k) at every Δ",
        at=("gap",),
    ),
    _claim(
        "xu-pin-metric-excess-risk",
        DESIGN_LADDER.name,
        Mean("excess_risk", "metrics"),
        "exact",
        lambda pt: ladder_excess_risk(_m(pt), pt["gap"], 2.0),
        "m⁻²Σ_k (m − k)KL(σ(Δk)‖σ(2Δk))",
        "excess risk e_L (eq. (4)) of θ̂ = 2θ* on the ladder = m⁻²Σ_k (m − k)·KL(σ(Δk) ‖ σ(2Δk)) at every Δ "
        "(exact)",
        at=("gap",),
    ),
    _claim(
        "xu-pin-metric-release-slope",
        DESIGN_LADDER.name,
        Mean("release_slope", "metrics"),
        "exact",
        lambda pt: RELEASE_SHRINK,
        "b",
        "release_slope of z̄ = ½ + b(ȳ − ½) = b at every Δ (exact)",
        at=("gap",),
    ),
    _claim(
        "xu-pin-metric-excess-var",
        DESIGN_LADDER.name,
        Mean("excess_var", "metrics"),
        "excess_var",
        lambda pt: RELEASE_NOISE**2,
        "s²",
        "excess_var of z̄ = ȳ + sZ/√L = s² (L·mean of s²Z²/L)",
        pool=("gap",),
    ),
    # heterogeneous groups (docs/xu.md, Errata and modes (A21))
    _claim(
        "xu-pin-hetero-G",
        DESIGN_HETERO.name,
        Mean("G", "design"),
        "exact",
        lambda pt: released_G(pt["profile"], pt["match"], pt["eps"]),
        "Σ_g f_g coth²(ε_g/2)",
        "released groups: G = Σ_g L_g coth²(ε_g/2)/L = the profile's Σ_g f_g coth²(m_g ε/2) (profile, same_g) or "
        "coth²(mean ε/2) (same_mean_eps), at every (profile, match) (exact)",
        reps=HETERO_REPS,
        at=("profile", "match"),
    ),
    _claim(
        "xu-pin-hetero-first-group",
        DESIGN_HETERO.name,
        Mean("share_0", "design"),
        "share",
        lambda pt: group_fraction(pt["profile"], pt["match"], 0),
        "f_1 or 1",
        "released group 1's share of the users (its better items' wins / Σ σ(|θ_i − θ_j|) / L) = its fraction "
        "(or 1, homogeneous) at every (profile, match)",
        reps=HETERO_REPS,
        at=("profile", "match"),
    ),
    _claim(
        "xu-pin-hetero-second-group",
        DESIGN_HETERO.name,
        Mean("share_1", "design"),
        "share",
        lambda pt: group_fraction(pt["profile"], pt["match"], 1),
        "f_2",
        "released group 2's share of the users = its fraction, at every profile",
        reps=HETERO_REPS,
        at=("profile",),
        where={"match": ["profile"]},
    ),
    # MovieLens subsampling (xu §5.4)
    _claim(
        "xu-pin-movielens-without-replacement",
        DESIGN_MOVIELENS.name,
        ColumnRatio("dev2", "dev2_expected", "design"),
        "subsample",
        None,
        "1",
        "MovieLens users subsampled without replacement: Σ_e (wins_e − Lȳ_e)² / Σ_e Lȳ_e(1 − ȳ_e)(N − L)/(N − 1) = 1 "
        "at every L (hypergeometric; with replacement (N − 1)/(N − L); se a bound)",
        reps=REAL_REPS,
        at=("n_users",),
    ),
]


# ---------------------------------------------------------------------------------------
# Mutants: a generator's scale or law off, a metric's normalisation off
# ---------------------------------------------------------------------------------------
def generate_changed(change):
    """``generate`` with its output changed by ``change(key, sample, shape, truth, data, inner)``."""

    def apply(experiment):
        def gen(key, shape, truth, data, inner=experiment.generate):
            return change(key, inner(key, shape, truth, data), shape, truth, data, inner)

        return dataclasses.replace(experiment, generate=gen)

    return apply


def _truth_normal(key, shape):
    """θ* ~ N(0, 4/3) (the variance of U(−2, 2)), centred."""
    z = jax.random.normal(key, (shape["n_items"],), jnp.float64) * math.sqrt(uniform_moment(2))
    return {"theta": z - jnp.mean(z)}


def _truth_uncentred(key, shape):
    """θ* ~ U(−2, 2), not centred."""
    return {
        "theta": jax.random.uniform(key, (shape["n_items"],), jnp.float64, -HALF_WIDTH, HALF_WIDTH)
    }


def _wins_at_half_theta(key, sample, shape, truth, data, inner):
    return {**inner(key, shape, {"theta": 0.5 * sample["theta"]}, data), "theta": sample["theta"]}


def _wins_poisson(key, sample, shape, truth, data, inner):
    """Wins drawn from Poisson(Lp*) (the binomial's approximation), capped at L."""
    theta = sample["theta"]
    i, j = _pairs(theta.shape[0])
    lam = data["n_users"] * logistic(theta[i] - theta[j])
    wins = jnp.minimum(
        jax.random.poisson(jax.random.fold_in(key, 1), lam).astype(jnp.float64), data["n_users"]
    )
    return {**sample, "wins": wins[None, :]}


def _ladder_theta_at_2gap(key, sample, shape, truth, data, inner):
    return {**sample, "theta": 2.0 * sample["theta"]}


def _ladder_mirror_dropped(key, sample, shape, truth, data, inner):
    """Pairs i < j with r_i < r_j keep the draw for "the better wins" as "i beats j" (the
    L − X mirror of the ladder sampler dropped)."""
    ladder = truth["ladder"]
    i, j = _pairs(ladder.shape[0])
    wins = sample["wins"][0]
    return {
        **sample,
        "wins": jnp.where(ladder[i] < ladder[j], data["n_users"] - wins, wins)[None, :],
    }


def _tables_at_2gap(experiment):
    cell = LADDER_CELLS[0]
    wrong = dataclasses.replace(
        cell, fn=lambda point: ladder_win_laws({**point, "gap": 2.0 * point["gap"]})
    )
    return dataclasses.replace(experiment, cell_arrays=(wrong,))


def _atoms_each_at_first_size(key, sample, shape, truth, data, inner):
    """Every atom's wins drawn with the first atom's user count (sizes ignored in the draw)."""
    sizes = data["atom_sizes"]
    return inner(key, shape, truth, {**data, "atom_sizes": jnp.full_like(sizes, sizes[0])})


def _budgets_reversed(experiment):
    """The released groups' budgets paired with the groups in reverse order (real groups only)."""

    def wrap(derived):
        if "group_eps" not in derived.names:
            return derived

        def fn(point, inner=derived.fn):
            out = dict(inner(point))
            real = int(np.sum(np.asarray(out["group_atoms"]).sum(axis=1) > 0))
            eps = np.asarray(out["group_eps"], np.float64).copy()
            eps[:real] = eps[:real][::-1]
            return {**out, "group_eps": eps}

        return dataclasses.replace(derived, fn=fn)

    return dataclasses.replace(experiment, derived=tuple(wrap(d) for d in experiment.derived))


def _with_replacement(key, sample, shape, truth, data, inner):
    """L users drawn uniformly with replacement (positions ≥ L masked, so L may be traced)."""
    y = truth["y"].astype(jnp.float64)
    n_total = y.shape[0]
    idx = jax.random.randint(key, (n_total,), 0, n_total)
    take = (jnp.arange(n_total) < data["n_users"]).astype(jnp.float64)
    return {**sample, "wins": (take @ y[idx])[None, :]}


def _score_changed(name, factor=1.0, **kendall):
    def score(theta_hat, theta, top_k):
        out = dict(scores(theta_hat, theta, top_k))
        if kendall:
            out[name] = metrics.kendall_distance(theta_hat, theta, **kendall)
        out[name] = out[name] * factor
        return out

    return score


def _excess_var_without_l(released, wins):
    out = dict(release_metrics(released, wins))
    out["excess_var"] = out["excess_var"] / jnp.sum(released["sizes"])
    return out


def _slope_reversed(released, wins):
    """The slope of ȳ on z̄ (regression the wrong way round)."""
    raw = jnp.sum(wins, axis=0) / jnp.sum(released["sizes"])
    out = dict(release_metrics(released, wins))
    zc = released["zbar"] - 0.5
    out["release_slope"] = jnp.sum(zc * (raw - 0.5)) / jnp.sum(zc * zc)
    return out


def _ranking_mutants(score):
    return [
        replaced_method("uniform", make_ranking_fn(permutation_scores, score)),
        replaced_method("coin", make_ranking_fn(coin_scores, score)),
    ]


U, LAD, HET, REAL = (
    (DESIGN.name,),
    (DESIGN_LADDER.name,),
    (DESIGN_HETERO.name,),
    (DESIGN_MOVIELENS.name,),
)
MUTANTS = [
    Mutant(
        "xu-design-uniform-scale-2",
        "θ* ~ U(−4, 4): the design's half-width doubled",
        U,
        changed_truth(lambda theta, shape: 2.0 * theta, field="theta"),
    ),
    Mutant(
        "xu-design-uniform-normal-law",
        "θ* from the wrong law: N(0, 4/3), the variance of U(−2, 2), centred",
        U,
        lambda experiment: dataclasses.replace(experiment, truth=_truth_normal),
    ),
    Mutant(
        "xu-design-uniform-uncentred",
        "θ* ~ U(−2, 2) not centred (the draw's mean kept)",
        U,
        lambda experiment: dataclasses.replace(experiment, truth=_truth_uncentred),
    ),
    Mutant(
        "xu-wins-at-half-theta",
        "raw wins drawn at σ((θ_i − θ_j)/2)",
        U,
        generate_changed(_wins_at_half_theta),
    ),
    Mutant(
        "xu-wins-poisson-law",
        "raw wins drawn from the wrong law, Poisson(Lp*) capped at L",
        U,
        generate_changed(_wins_poisson),
    ),
    Mutant(
        "xu-design-ladder-gap-2",
        "the ladder θ* at twice its gap Δ (the wins' tables at Δ)",
        LAD,
        generate_changed(_ladder_theta_at_2gap),
    ),
    Mutant(
        "xu-design-ladder-tables-at-2gap",
        "the ladder's win tables built at 2Δ (θ* at Δ)",
        LAD,
        _tables_at_2gap,
    ),
    Mutant(
        "xu-design-ladder-unpermuted",
        "the ladder's item labels not permuted",
        LAD,
        changed_truth(lambda ladder, shape: jnp.sort(ladder), field="ladder"),
    ),
    Mutant(
        "xu-wins-ladder-mirror-dropped",
        "ladder pairs whose first item is the worse one keep the better item's "
        "count (the L − X mirror dropped)",
        LAD,
        generate_changed(_ladder_mirror_dropped),
    ),
    Mutant(
        "xu-metric-kendall-over-ordered-pairs",
        "Kendall distance normalised by m(m − 1) (ordered pairs) instead of C(m, 2)",
        U,
        chain(*_ranking_mutants(_score_changed("kendall", 0.5))),
    ),
    Mutant(
        "xu-metric-kendall-strict-counts-ties-half",
        "kendall_strict counts a tied pair ½",
        U,
        chain(*_ranking_mutants(_score_changed("kendall_strict", ties="half"))),
    ),
    Mutant(
        "xu-metric-top-k-hamming-over-k",
        "H_K = |Ŝ Δ S|/K instead of |Ŝ Δ S|/(2K)",
        U,
        chain(*_ranking_mutants(_score_changed("top_k_hamming", 2.0))),
    ),
    Mutant(
        "xu-metric-mse-not-over-m",
        "mse = ‖θ̂ − θ*‖² (the 1/m dropped)",
        U,
        replaced_method("oracle_noise", make_oracle_noise_fn(_score_changed("mse", float(M)))),
    ),
    Mutant(
        "xu-metric-l2-not-over-root-m",
        "l2_rms = ‖θ̂ − θ*‖₂ (the 1/√m dropped)",
        U,
        replaced_method(
            "oracle_noise", make_oracle_noise_fn(_score_changed("l2_rms", math.sqrt(M)))
        ),
    ),
    Mutant(
        "xu-metric-linf-as-l2-rms",
        "linf reported as ‖θ̂ − θ*‖₂/√m",
        U,
        replaced_method(
            "oracle_noise",
            make_oracle_noise_fn(
                lambda a, b, k: {**scores(a, b, k), "linf": metrics.l2_rms_error(a, b)}
            ),
        ),
    ),
    Mutant(
        "xu-metric-excess-risk-over-pairs",
        "e_L normalised by C(m, 2) instead of m²",
        LAD,
        replaced_method(
            "metrics",
            make_ladder_metrics_fn(score=_score_changed("excess_risk", 2.0 * M / (M - 1))),
        ),
    ),
    Mutant(
        "xu-metric-excess-var-without-l",
        "excess_var without the factor L",
        LAD,
        replaced_method("metrics", make_ladder_metrics_fn(release=_excess_var_without_l)),
    ),
    Mutant(
        "xu-metric-release-slope-reversed",
        "release_slope regresses ȳ on z̄",
        LAD,
        replaced_method("metrics", make_ladder_metrics_fn(release=_slope_reversed)),
    ),
    Mutant(
        "xu-hetero-atoms-at-one-size",
        "every atom's wins drawn with the first atom's user count",
        HET,
        generate_changed(_atoms_each_at_first_size),
    ),
    Mutant(
        "xu-hetero-budgets-reversed",
        "the profile's budgets paired with its groups in reverse order",
        HET,
        _budgets_reversed,
    ),
    Mutant(
        "xu-movielens-with-replacement",
        "MovieLens users subsampled with replacement",
        REAL,
        generate_changed(_with_replacement),
    ),
]

# What each pin pins and each mutant breaks (the paper's COMPONENTS; `dpsim list xu --pins`).
_UNIFORM, _LADDER, _ANSWERS = (
    "generator:uniform-theta",
    "generator:ladder-theta",
    "generator:pairwise-answers",
)
PINS = {
    "xu-pin-design-uniform-msq": (_UNIFORM,),
    "xu-pin-design-uniform-range": (_UNIFORM,),
    "xu-pin-wins-binomial-mean": (_ANSWERS,),
    "xu-pin-wins-binomial-spread": (_ANSWERS,),
    "xu-pin-metric-kendall": ("metric:kendall",),
    "xu-pin-metric-kendall-ties-half": ("metric:kendall",),
    "xu-pin-metric-kendall-strict": ("metric:kendall_strict",),
    "xu-pin-metric-kendall-strict-ties": ("metric:kendall_strict",),
    "xu-pin-metric-top-k-hamming": ("metric:top_k_hamming",),
    "xu-pin-metric-top-k-hamming-ties": ("metric:top_k_hamming",),
    "xu-pin-metric-mse": ("metric:mse",),
    "xu-pin-metric-l2-rms": ("metric:l2_rms",),
    "xu-pin-metric-linf": ("metric:linf",),
    "xu-pin-design-ladder-msq": (_LADDER,),
    "xu-pin-design-ladder-permuted": (_LADDER,),
    "xu-pin-wins-ladder-mean": (_LADDER, _ANSWERS),
    "xu-pin-wins-ladder-spread": (_ANSWERS,),
    "xu-pin-metric-excess-risk": ("metric:excess_risk",),
    "xu-pin-metric-release-slope": ("metric:release_slope",),
    "xu-pin-metric-excess-var": ("metric:excess_var",),
    "xu-pin-hetero-G": ("generator:hetero-groups",),
    "xu-pin-hetero-first-group": ("generator:hetero-groups",),
    "xu-pin-hetero-second-group": ("generator:hetero-groups",),
    "xu-pin-movielens-without-replacement": ("generator:movielens-subsample",),
}
BREAKS = {
    "xu-design-uniform-scale-2": (_UNIFORM,),
    "xu-design-uniform-normal-law": (_UNIFORM,),
    "xu-design-uniform-uncentred": (_UNIFORM,),
    "xu-wins-at-half-theta": (_ANSWERS,),
    "xu-wins-poisson-law": (_ANSWERS,),
    "xu-design-ladder-gap-2": (_LADDER,),
    "xu-design-ladder-tables-at-2gap": (_ANSWERS,),
    "xu-design-ladder-unpermuted": (_LADDER,),
    "xu-wins-ladder-mirror-dropped": (_ANSWERS,),
    "xu-metric-kendall-over-ordered-pairs": ("metric:kendall",),
    "xu-metric-kendall-strict-counts-ties-half": ("metric:kendall_strict",),
    "xu-metric-top-k-hamming-over-k": ("metric:top_k_hamming",),
    "xu-metric-mse-not-over-m": ("metric:mse",),
    "xu-metric-l2-not-over-root-m": ("metric:l2_rms",),
    "xu-metric-linf-as-l2-rms": ("metric:linf",),
    "xu-metric-excess-risk-over-pairs": ("metric:excess_risk",),
    "xu-metric-excess-var-without-l": ("metric:excess_var",),
    "xu-metric-release-slope-reversed": ("metric:release_slope",),
    "xu-hetero-atoms-at-one-size": ("generator:hetero-groups",),
    "xu-hetero-budgets-reversed": ("generator:hetero-groups",),
    "xu-movielens-with-replacement": ("generator:movielens-subsample",),
}
CHECKS = [dataclasses.replace(c, pins=PINS[c.name]) for c in CHECKS]
MUTANTS = [dataclasses.replace(m, breaks=BREAKS[m.name]) for m in MUTANTS]
