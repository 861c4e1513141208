"""Every metric of dpsim.metrics against an independent implementation: NumPy formulas written
from the papers' definitions (cai §4.1.1; docs/xu.md, Metrics; nguyen §5; docs/chowdhury.md,
Model), SciPy's ``kendalltau``, a brute-force pair count, set arithmetic for top-k sets, and
the per-paper dictionaries the experiments record (estimation_metrics, topk_metrics,
feature_estimation_metrics)."""

from __future__ import annotations

import itertools
import math

import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special, stats

from dpsim import metrics

RNG_SEED = 41


def _pair(n, seed=RNG_SEED):
    rng = np.random.default_rng(seed + n)
    return rng.normal(size=n), rng.normal(size=n)


@pytest.mark.parametrize("n", [2, 7, 40])
def test_norm_errors_against_numpy_definitions(n):
    a, b = _pair(n)
    d = a - b
    assert float(metrics.l2_error(jnp.asarray(a), jnp.asarray(b))) == pytest.approx(
        math.sqrt(sum(x * x for x in d)), rel=1e-12
    )
    assert float(metrics.linf_error(jnp.asarray(a), jnp.asarray(b))) == pytest.approx(
        max(abs(x) for x in d), rel=1e-12
    )
    assert float(metrics.l2_rms_error(jnp.asarray(a), jnp.asarray(b))) == pytest.approx(
        math.sqrt(np.mean(d * d)), rel=1e-12
    )
    assert float(metrics.squared_l2_error(jnp.asarray(a), jnp.asarray(b))) == pytest.approx(
        float(d @ d), rel=1e-12
    )
    assert float(metrics.log_relative_l2_error(jnp.asarray(a), jnp.asarray(b))) == pytest.approx(
        math.log(math.sqrt(d @ d) / math.sqrt(b @ b)), abs=1e-12
    )
    assert float(metrics.log_relative_linf_error(jnp.asarray(a), jnp.asarray(b))) == pytest.approx(
        math.log(np.max(np.abs(d)) / np.max(np.abs(b))), abs=1e-12
    )
    # cai Figs 1-3 record these four under their names (a factor in one would change its column)
    rec = metrics.estimation_metrics(jnp.asarray(a), jnp.asarray(b))
    assert {k: float(v) for k, v in rec.items()} == pytest.approx(
        {
            "l2": math.sqrt(d @ d),
            "linf": np.max(np.abs(d)),
            "log_rel_l2": math.log(math.sqrt(d @ d) / math.sqrt(b @ b)),
            "log_rel_linf": math.log(np.max(np.abs(d)) / np.max(np.abs(b))),
        },
        rel=1e-12,
    )


def _random_k_set(rng, n, k):
    return set(rng.choice(n, size=k, replace=False).tolist())


def _mask(n, items):
    return jnp.asarray([i in items for i in range(n)])


@pytest.mark.parametrize("n,k", [(5, 1), (12, 3), (30, 15), (9, 8)])
def test_relative_hamming_and_exact_recovery_by_set_arithmetic(n, k):
    rng = np.random.default_rng(RNG_SEED + n)
    for _ in range(20):
        s_hat, s = _random_k_set(rng, n, k), _random_k_set(rng, n, k)
        # cai §4.1.1: 1 − |Ŝ ∩ S|/k; xu's H_K = |Ŝ Δ S|/(2K)
        expected = 1.0 - len(s_hat & s) / k
        got = float(metrics.relative_hamming_error(_mask(n, s_hat), _mask(n, s)))
        assert got == pytest.approx(expected, abs=1e-15)
        assert got == pytest.approx(len(s_hat ^ s) / (2 * k), abs=1e-15)
        assert float(metrics.exact_recovery(_mask(n, s_hat), _mask(n, s))) == float(s_hat == s)
        rec = metrics.topk_metrics(_mask(n, s_hat), _mask(n, s))
        assert float(rec["relative_hamming"]) == pytest.approx(expected, abs=1e-15)
        assert float(rec["exact_recovery"]) == float(s_hat == s)
    assert float(metrics.relative_hamming_error(_mask(n, s), _mask(n, s))) == 0.0


def test_ranks_and_mean_absolute_rank_difference_against_scipy_rankdata():
    rng = np.random.default_rng(RNG_SEED)
    for n in (3, 10, 50):
        a, b = rng.normal(size=n), rng.normal(size=n)
        ra = stats.rankdata(a, method="ordinal") - 1  # distinct scores: 0 = smallest
        rb = stats.rankdata(b, method="ordinal") - 1
        np.testing.assert_array_equal(np.asarray(metrics.ranks(jnp.asarray(a))), ra)
        assert float(
            metrics.mean_absolute_rank_difference(jnp.asarray(a), jnp.asarray(b))
        ) == pytest.approx(np.mean(np.abs(ra - rb)), abs=1e-12)


def _kendall_brute(a, b, ties):
    n, total = len(a), 0.0
    for i, j in itertools.combinations(range(n), 2):
        if b[i] == b[j]:
            continue
        if a[i] == a[j]:
            total += 0.5 if ties == "half" else 0.0
        elif (a[i] - a[j]) * (b[i] - b[j]) < 0:
            total += 1.0
    return total / (n * (n - 1) / 2)


@pytest.mark.parametrize("n", [2, 6, 25])
def test_kendall_distance_against_pair_count_and_scipy(n):
    a, b = _pair(n)
    got = float(metrics.kendall_distance(jnp.asarray(a), jnp.asarray(b)))
    assert got == pytest.approx(_kendall_brute(a, b, "half"), abs=1e-14)
    tau = stats.kendalltau(a, b).statistic  # no ties: τ = 1 − 2K
    assert got == pytest.approx((1.0 - tau) / 2.0, abs=1e-12)


def test_kendall_distance_with_ties_in_both_vectors():
    rng = np.random.default_rng(RNG_SEED)
    for _ in range(10):
        a = rng.integers(0, 4, size=15).astype(float)  # many ties in θ̂
        b = rng.integers(0, 6, size=15).astype(float)  # ties in θ* count 0
        for ties in ("half", "strict"):
            got = float(metrics.kendall_distance(jnp.asarray(a), jnp.asarray(b), ties=ties))
            assert got == pytest.approx(_kendall_brute(a, b, ties), abs=1e-14)
    with pytest.raises(ValueError, match="ties='none'"):
        metrics.kendall_distance(jnp.zeros(3), jnp.arange(3.0), ties="none")


def test_kendall_distance_of_reversed_and_identical_orders():
    b = np.arange(8.0)
    assert float(metrics.kendall_distance(jnp.asarray(b[::-1].copy()), jnp.asarray(b))) == 1.0
    assert float(metrics.kendall_distance(jnp.asarray(2 * b + 1), jnp.asarray(b))) == 0.0


def test_excess_risk_against_the_kl_sum_by_loops():
    rng = np.random.default_rng(RNG_SEED)
    m = 9
    th_hat, th = rng.normal(size=m) * 2, rng.normal(size=m)
    total = 0.0
    for i, j in itertools.combinations(range(m), 2):
        p, q = special.expit(th[i] - th[j]), special.expit(th_hat[i] - th_hat[j])
        total += p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))
    assert float(metrics.excess_risk(jnp.asarray(th_hat), jnp.asarray(th))) == pytest.approx(
        total / m**2, rel=1e-10
    )
    assert float(metrics.excess_risk(jnp.asarray(th + 3.0), jnp.asarray(th))) == pytest.approx(
        0.0, abs=1e-15
    )


def test_excess_risk_stays_finite_and_exact_at_large_differences():
    """Differences of ±60 and more (σ underflows to 0 in float64): the KL sum by loops in
    log-sigmoids (scipy's log_expit) still matches."""
    rng = np.random.default_rng(RNG_SEED)
    m = 8
    th_hat, th = rng.normal(size=m) * 40, rng.normal(size=m) * 30
    total = 0.0
    for i, j in itertools.combinations(range(m), 2):
        d, dh = th[i] - th[j], th_hat[i] - th_hat[j]
        p = special.expit(d)
        total += p * (special.log_expit(d) - special.log_expit(dh)) + (1 - p) * (
            special.log_expit(-d) - special.log_expit(-dh)
        )
    value = float(metrics.excess_risk(jnp.asarray(th_hat), jnp.asarray(th)))
    assert math.isfinite(value) and value == pytest.approx(total / m**2, rel=1e-10)


def test_rasch_l2_error_modes():
    rng = np.random.default_rng(RNG_SEED)
    b_hat, b = rng.normal(size=6), rng.normal(size=6) + 0.7
    centred = np.linalg.norm((b_hat - b_hat.mean()) - (b - b.mean()))
    assert float(metrics.rasch_l2_error(jnp.asarray(b_hat), jnp.asarray(b))) == pytest.approx(
        centred, rel=1e-12
    )
    assert float(
        metrics.rasch_l2_error(jnp.asarray(b_hat), jnp.asarray(b), "paper")
    ) == pytest.approx(np.linalg.norm(b_hat - b), rel=1e-12)
    # the paper mode's floor (docs/nguyen.md, Errata and modes (Q1)): + m·mean(β*)² for a centred β̂
    c_hat = b_hat - b_hat.mean()
    assert float(
        metrics.rasch_l2_error(jnp.asarray(c_hat), jnp.asarray(b), "paper")
    ) ** 2 == pytest.approx(
        np.linalg.norm(c_hat - (b - b.mean())) ** 2 + 6 * b.mean() ** 2, rel=1e-12
    )
    with pytest.raises(ValueError, match="mode='raw'"):
        metrics.rasch_l2_error(jnp.zeros(2), jnp.zeros(2), "raw")


@pytest.mark.parametrize("lam", [0.0, 0.3])
def test_seminorm_and_feature_metrics_against_the_explicit_sigma(lam):
    rng = np.random.default_rng(RNG_SEED)
    x = rng.normal(size=(40, 5))
    th_hat, th = rng.normal(size=5), rng.normal(size=5)
    v = th_hat - th
    sigma = x.T @ x / x.shape[0] + lam * np.eye(5)  # Σ_D + λI formed explicitly
    expected = math.sqrt(v @ sigma @ v)
    assert float(
        metrics.seminorm_error(jnp.asarray(th_hat), jnp.asarray(th), jnp.asarray(x), lam)
    ) == pytest.approx(expected, rel=1e-12)
    rec = metrics.feature_estimation_metrics(
        jnp.asarray(th_hat), jnp.asarray(th), jnp.asarray(x), lam
    )
    assert {k: float(val) for k, val in rec.items()} == pytest.approx(
        {"l2": np.linalg.norm(v), "mse": v @ v, "seminorm": expected}, rel=1e-12
    )


def test_random_estimator_expectations_by_enumeration():
    """The closed forms the data-free calibration checks predict, verified by enumerating every
    permutation / every k-set of a small n with the library's metrics: E relative Hamming of a
    uniform k-set = 1 − k/n, E exact recovery = 1/C(n, k), E Kendall distance of a uniform
    ranking = ½, E mean |rank difference| = (n² − 1)/(3n)."""
    n, k = 6, 2
    truth = jnp.arange(float(n))
    true_mask = _mask(n, set(range(n - k, n)))
    ham, exact = [], []
    for s in itertools.combinations(range(n), k):
        rec = metrics.topk_metrics(_mask(n, set(s)), true_mask)
        ham.append(float(rec["relative_hamming"]))
        exact.append(float(rec["exact_recovery"]))
    assert np.mean(ham) == pytest.approx(1 - k / n, abs=1e-14)
    assert np.mean(exact) == pytest.approx(1 / math.comb(n, k), abs=1e-14)
    kd, rank = [], []
    for perm in itertools.permutations(range(n)):
        scores = jnp.asarray(perm, dtype=jnp.float64)
        kd.append(float(metrics.kendall_distance(scores, truth)))
        rank.append(float(metrics.mean_absolute_rank_difference(scores, truth)))
    assert np.mean(kd) == pytest.approx(0.5, abs=1e-14)
    assert np.mean(rank) == pytest.approx((n * n - 1) / (3 * n), abs=1e-12)


# ---------------------------------------------------------------------------------------
# xu's recorded scores (experiments/xu/methods.py: scores, release_metrics; docs/xu.md, Metrics)
# ---------------------------------------------------------------------------------------
def _xu_scores(theta_hat, theta, k):
    import jax
    from dpsim.experiments.xu.methods import scores

    scored = jax.jit(scores, static_argnums=2)(
        jnp.asarray(theta_hat, jnp.float64), jnp.asarray(theta, jnp.float64), k
    )
    return {name: float(v) for name, v in scored.items()}


@pytest.mark.parametrize("m", [4, 10, 31])
def test_xu_scores_without_ties_against_scipy_and_set_arithmetic(m):
    a, b = _pair(m)
    k = m // 2
    got = _xu_scores(a, b, k)
    d = a - b
    tau = stats.kendalltau(a, b).statistic  # no ties: K = (1 − τ)/2 of the C(m, 2) pairs
    assert got["kendall"] == pytest.approx((1.0 - tau) / 2.0, abs=1e-12)
    assert got["kendall_strict"] == pytest.approx((1.0 - tau) / 2.0, abs=1e-12)
    s_hat, s = set(np.argsort(-a)[:k].tolist()), set(np.argsort(-b)[:k].tolist())
    assert got["top_k_hamming"] == pytest.approx(
        len(s_hat ^ s) / (2 * k), abs=1e-15
    )  # H_K = |Ŝ Δ S|/(2K)
    assert got["linf"] == pytest.approx(np.max(np.abs(d)), rel=1e-12)
    assert got["l2_rms"] == pytest.approx(math.sqrt(np.sum(d * d) / m), rel=1e-12)
    assert got["mse"] == pytest.approx(np.sum(d * d) / m, rel=1e-12)
    kl = 0.0
    for i, j in itertools.combinations(range(m), 2):
        p, q = special.expit(b[i] - b[j]), special.expit(a[i] - a[j])
        kl += p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))
    assert got["excess_risk"] == pytest.approx(kl / m**2, rel=1e-10)


def test_xu_scores_with_ties_against_pair_counts_and_every_tie_break():
    rng = np.random.default_rng(RNG_SEED)
    m, k = 6, 3
    for _ in range(8):
        a = rng.integers(0, 3, size=m).astype(float)  # θ̂ with ties
        b = rng.normal(size=m)  # θ* without
        got = _xu_scores(a, b, k)
        assert got["kendall"] == pytest.approx(_kendall_brute(a, b, "half"), abs=1e-14)
        assert got["kendall_strict"] == pytest.approx(_kendall_brute(a, b, "strict"), abs=1e-14)
        # H_K averaged over every order of the tied items (a uniform tie-break), by set arithmetic
        s = set(np.argsort(-b)[:k].tolist())
        values = []
        for perm in itertools.permutations(range(m)):
            order = sorted(range(m), key=lambda i: (-a[i], perm[i]))
            values.append(len(set(order[:k]) ^ s) / (2 * k))
        assert got["top_k_hamming"] == pytest.approx(np.mean(values), abs=1e-12)
    perfect = _xu_scores(b, b, k)
    assert {
        name: perfect[name]
        for name in ("kendall", "kendall_strict", "top_k_hamming", "linf", "mse")
    } == {"kendall": 0.0, "kendall_strict": 0.0, "top_k_hamming": 0.0, "linf": 0.0, "mse": 0.0}
    assert perfect["excess_risk"] == pytest.approx(0.0, abs=1e-15)


def test_xu_release_metrics_against_numpy():
    from dpsim.experiments.xu.methods import release_metrics

    rng = np.random.default_rng(RNG_SEED)
    sizes = np.asarray([30.0, 70.0])
    wins = rng.binomial(sizes[:, None].astype(int), 0.6, size=(2, 15)).astype(float)
    zbar = rng.uniform(size=15)
    got = release_metrics(
        {"zbar": jnp.asarray(zbar), "sizes": jnp.asarray(sizes)}, jnp.asarray(wins)
    )
    ybar = wins.sum(axis=0) / 100.0
    through = np.sum((zbar - 0.5) * (ybar - 0.5)) / np.sum(
        (ybar - 0.5) ** 2
    )  # least squares through (½, ½)
    assert float(got["release_slope"]) == pytest.approx(through, rel=1e-12)
    assert float(got["excess_var"]) == pytest.approx(100.0 * np.mean((zbar - ybar) ** 2), rel=1e-12)
