"""Estimation and ranking metrics (cai §4.1.1) on hand-made cases, and top-k tie-breaking."""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpsim import metrics
from dpsim.estimators import top_k_mask
from dpsim.estimators.topk import order_key, tie_broken_ranks


def test_estimation_errors_exact():
    theta = jnp.array([3.0, 0.0, -4.0])  # ‖θ‖₂ = 5, ‖θ‖∞ = 4
    theta_hat = jnp.array([3.0, 1.0, -4.0])  # error (0, 1, 0)
    assert float(metrics.l2_error(theta_hat, theta)) == 1.0
    assert float(metrics.linf_error(theta_hat, theta)) == 1.0
    assert float(metrics.log_relative_l2_error(theta_hat, theta)) == pytest.approx(
        math.log(1 / 5), abs=1e-15
    )
    assert float(metrics.log_relative_linf_error(theta_hat, theta)) == pytest.approx(
        math.log(1 / 4), abs=1e-15
    )
    err = jnp.array([2.0, -3.0, 6.0])  # ‖err‖₂ = 7, ‖err‖∞ = 6
    assert float(metrics.l2_error(theta + err, theta)) == pytest.approx(7.0, abs=1e-14)
    assert float(metrics.linf_error(theta + err, theta)) == pytest.approx(6.0, abs=1e-14)
    assert float(metrics.log_relative_l2_error(theta + err, theta)) == pytest.approx(
        math.log(7 / 5), abs=1e-14
    )
    assert float(metrics.log_relative_linf_error(theta + err, theta)) == pytest.approx(
        math.log(6 / 4), abs=1e-14
    )
    assert float(metrics.log_relative_l2_error(theta, theta)) == -math.inf


def test_relative_hamming_and_exact_recovery():
    truth = jnp.array([1, 1, 1, 0, 0, 0], dtype=bool)  # k = 3
    half = jnp.array([1, 0, 1, 1, 0, 0], dtype=bool)  # 2 of 3 right
    none = jnp.array([0, 0, 0, 1, 1, 1], dtype=bool)
    assert float(metrics.relative_hamming_error(truth, truth)) == 0.0
    assert float(metrics.relative_hamming_error(half, truth)) == pytest.approx(1 / 3, abs=1e-15)
    assert float(metrics.relative_hamming_error(none, truth)) == 1.0
    # = d_H(Ŝ, S)/(2k) (cai §4.1.1): d_H(half, truth) = 2
    d_h = int(jnp.sum(half != truth))
    assert float(metrics.relative_hamming_error(half, truth)) == pytest.approx(d_h / 6, abs=1e-15)
    assert float(metrics.exact_recovery(truth, truth)) == 1.0
    assert float(metrics.exact_recovery(half, truth)) == 0.0
    assert float(metrics.exact_recovery(none, truth)) == 0.0


def test_ranks_and_mean_absolute_rank_difference():
    np.testing.assert_array_equal(metrics.ranks(jnp.array([10.0, 30.0, 20.0])), [0, 2, 1])
    a, b = jnp.array([1.0, 2.0, 3.0]), jnp.array([3.0, 2.0, 1.0])
    assert float(metrics.mean_absolute_rank_difference(a, b)) == pytest.approx(4 / 3, abs=1e-15)
    assert float(metrics.mean_absolute_rank_difference(a, 2 * a + 1)) == 0.0
    c = jnp.array([0.1, 0.4, 0.2, 0.3])  # ranks (0, 3, 1, 2)
    d = jnp.array([0.4, 0.1, 0.2, 0.3])  # ranks (3, 0, 1, 2)
    assert float(metrics.mean_absolute_rank_difference(c, d)) == pytest.approx(6 / 4, abs=1e-15)


def test_top_k_mask_distinct_scores():
    scores = jnp.array([0.3, -1.0, 2.5, 0.9, 0.0, 1.7])
    key = jax.random.key(0)
    for k, want in [(0, []), (1, [2]), (3, [2, 5, 3]), (6, range(6))]:
        mask = np.asarray(top_k_mask(key, scores, k))
        assert mask.dtype == bool and mask.sum() == k
        np.testing.assert_array_equal(np.flatnonzero(mask), sorted(want))
    # k may be traced
    masks = jax.jit(jax.vmap(lambda k: top_k_mask(key, scores, k)))(jnp.arange(7))
    np.testing.assert_array_equal(np.asarray(masks).sum(axis=1), np.arange(7))


def test_top_k_tie_breaking_is_uniform():
    """scores (5, 3, 3, 3, 3, 1), k = 3: item 0 always in, item 5 never, and the two remaining
    places go to a uniformly random pair of the four tied items.

    R = 6000 independent keys. Each tied item's selection frequency estimates 1/2 with SE
    √(¼/R) = 0.0065; each of the C(4,2) = 6 pairs estimates 1/6 with SE √((1/6)(5/6)/R) =
    0.0048. Tolerance 4.5 SE (Bonferroni over 10 statistics: false-failure P < 1e-4). An
    index-ordered (stable) tie-break gives frequencies (1, 1, 0, 0): 77 SE away.
    """
    scores = jnp.array([5.0, 3.0, 3.0, 3.0, 3.0, 1.0])
    R = 6000
    keys = jax.random.split(jax.random.key(123), R)
    masks = np.asarray(jax.jit(jax.vmap(lambda k: top_k_mask(k, scores, 3)))(keys))
    assert np.all(masks.sum(axis=1) == 3)
    assert np.all(masks[:, 0]) and not np.any(masks[:, 5])
    freq = masks[:, 1:5].mean(axis=0)
    assert np.max(np.abs(freq - 0.5)) <= 4.5 * math.sqrt(0.25 / R)
    for pair in itertools.combinations(range(1, 5), 2):
        chosen = masks[:, list(pair)].all(axis=1).mean()
        assert abs(chosen - 1 / 6) <= 4.5 * math.sqrt((1 / 6) * (5 / 6) / R), pair


def _numpy_ranks(scores, jitter):
    """Independent reference: NumPy's stable lexsort on (NaN last, −score, jitter)."""
    nan = np.isnan(scores)
    order = np.lexsort((jitter, -np.where(nan, 0.0, scores), nan))
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[order] = np.arange(len(scores))
    return ranks


@pytest.mark.parametrize("n", [2, 7, 40, 128, 129, 300])
def test_tie_broken_ranks_match_numpy_lexsort(n):
    """The ranks are NumPy's lexsort's, on scores with many ties, ±0, ±inf, NaN and tied
    jitter."""
    rng = np.random.default_rng(n)
    for trial in range(20):
        scores = np.round(rng.normal(size=n) * 2)  # many exact ties
        scores[rng.random(n) < 0.1] = -0.0
        specials = rng.choice(n, size=min(n, 3), replace=False)
        if trial % 2:
            scores[specials] = [np.inf, -np.inf, np.nan][: len(specials)]
        jitter = rng.random(n)
        if trial % 3 == 0:
            jitter = np.round(jitter * 4) / 4  # exact jitter ties too
        got = np.asarray(jax.jit(tie_broken_ranks)(jnp.asarray(scores), jnp.asarray(jitter)))
        np.testing.assert_array_equal(got, _numpy_ranks(scores, jitter))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_order_key_orders_floats_as_numpy_sorts_them(dtype):
    """Integer keys in the order of NumPy's sort: ±0 equal, ±inf at the ends, NaN (either
    sign) after +inf, neighbours one ulp apart kept apart. (Subnormals are left out: XLA:CPU
    compares them as 0, as its float sort does.)"""
    tiny = np.finfo(dtype).smallest_normal
    x = np.array(
        [
            0.0,
            -0.0,
            1.0,
            np.nextafter(dtype(1), dtype(2)),
            -1.0,
            np.inf,
            -np.inf,
            np.nan,
            -np.nan,
            tiny,
            -tiny,
            np.finfo(dtype).max,
            -np.finfo(dtype).max,
            3.5,
            -2.25,
        ],
        dtype=dtype,
    )
    x = np.concatenate([x, np.random.default_rng(0).normal(size=200).astype(dtype)])
    keys = np.asarray(jax.jit(order_key)(jnp.asarray(x)))
    assert keys.dtype == {np.float32: np.int32, np.float64: np.int64}[dtype]
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(order, np.argsort(np.where(x == 0, 0.0, x), kind="stable"))
    assert keys[0] == keys[1] and keys[7] == keys[8]  # 0 = −0, NaN = −NaN


@pytest.mark.parametrize(
    "dtype", [np.int32, np.int64, np.uint32, np.uint8, np.bool_, np.float16, jnp.bfloat16]
)
def test_tie_broken_ranks_of_integer_bool_and_half_precision_scores(dtype):
    """Any real dtype ranks as NumPy's lexsort of its values (integers at their extremes too,
    where negating would wrap)."""
    rng = np.random.default_rng(3)
    if dtype is np.bool_:
        scores = rng.random(30) < 0.5
    elif np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        scores = rng.integers(max(info.min, -5), min(info.max, 5), size=30, endpoint=True).astype(
            dtype
        )
        scores[:2] = [info.min, info.max]
    else:
        scores = np.round(rng.normal(size=30) * 2).astype(np.float32)
    jitter = np.round(rng.random(30) * 8) / 8
    got = np.asarray(jax.jit(tie_broken_ranks)(jnp.asarray(scores, dtype), jnp.asarray(jitter)))
    want = _numpy_ranks(
        np.asarray(jnp.asarray(scores, dtype)).astype(np.float64), jitter
    )  # extremes stay apart
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.uint32, np.int32, np.bool_])
def test_padding_follows_integer_scores_at_their_extremes(dtype):
    """Padding ranks after every real item when the real scores reach their type's extremes
    (the complement of a uint32 0 is the uint32 maximum, the padding's key unless widened)."""
    low, high = (0, 1) if dtype is np.bool_ else (np.iinfo(dtype).min, np.iinfo(dtype).max)
    scores = np.array([low, high, low, 0, low, high], dtype=dtype)
    real = np.arange(6) < 4
    jitter = np.array([0.9, 0.8, 0.7, 0.6, 0.1, 0.2])  # the padding's jitter first
    got = np.asarray(
        jax.jit(tie_broken_ranks)(jnp.asarray(scores), jnp.asarray(jitter), jnp.asarray(real))
    )
    np.testing.assert_array_equal(np.sort(got[:4]), np.arange(4))
    np.testing.assert_array_equal(got[:4], _numpy_ranks(scores[:4].astype(np.float64), jitter[:4]))


@pytest.mark.parametrize("n_real", [1, 5, 37])
def test_tie_broken_ranks_put_padding_after_every_real_item(n_real):
    """With padding, the real items' ranks are the unpadded call's, NaN scores included, and
    the padding follows in (jitter, index) order whatever its scores."""
    rng = np.random.default_rng(n_real)
    n = 40
    for trial in range(10):
        scores = np.round(rng.normal(size=n) * 2)
        scores[rng.random(n) < 0.2] = np.nan
        jitter = np.round(rng.random(n) * 8) / 8  # exact jitter ties
        real = np.arange(n) < n_real
        got = np.asarray(
            jax.jit(tie_broken_ranks)(jnp.asarray(scores), jnp.asarray(jitter), jnp.asarray(real))
        )
        np.testing.assert_array_equal(got[:n_real], _numpy_ranks(scores[:n_real], jitter[:n_real]))
        padding = np.lexsort((np.arange(n - n_real), jitter[n_real:]))
        np.testing.assert_array_equal(got[n_real:][padding], np.arange(n_real, n))


def test_top_k_mask_holds_k_items_when_its_scores_are_computed_in_the_same_program():
    """Regression (nguyen top-K): scores computed inside ``lax.map`` in the same program as
    the ranking. Pairwise rank counting gave k − 1 items in 488 of 1600 rows here (XLA:CPU
    evaluated the two broadcast copies of the scores with different roundings); ranks must
    be a permutation and every mask must hold exactly k items."""
    counts = jnp.asarray(
        np.random.default_rng(0).integers(1, 40000, size=(16, 100)).astype(np.float64)
    )

    def lane(args):
        x, key = args
        s = jnp.log(x)
        s = s - s.mean()
        return tie_broken_ranks(s, jax.random.uniform(key, s.shape)), jnp.sum(
            top_k_mask(key, s, 10)
        )

    keys = jax.random.split(jax.random.key(0), 16)
    ranks, sizes = jax.jit(lambda c, k: jax.lax.map(lane, (c, k)))(counts, keys)
    np.testing.assert_array_equal(
        np.sort(np.asarray(ranks), axis=1), np.tile(np.arange(100), (16, 1))
    )
    np.testing.assert_array_equal(np.asarray(sizes), 10)


def test_top_k_mask_same_key_same_choice():
    scores = jnp.zeros(8)
    key = jax.random.key(5)
    np.testing.assert_array_equal(top_k_mask(key, scores, 4), top_k_mask(key, scores, 4))


def test_exact_recovery_with_top_k_mask():
    theta = jnp.array([0.1, -0.5, 0.9, 0.8, -0.2])
    truth = theta >= 0.8
    assert float(metrics.exact_recovery(top_k_mask(jax.random.key(1), theta, 2), truth)) == 1.0
    perturbed = theta.at[0].set(0.85)
    got = top_k_mask(jax.random.key(1), perturbed, 2)
    assert float(metrics.exact_recovery(got, truth)) == 0.0
    assert float(metrics.relative_hamming_error(got, truth)) == 0.5


def test_relative_hamming_is_exactly_zero_under_vmap():
    truth = jnp.arange(12) >= 9  # k = 3
    batch = jnp.tile(truth, (64, 1))  # 64 perfect recoveries
    got = jax.jit(jax.vmap(metrics.relative_hamming_error, in_axes=(0, None)))(batch, truth)
    np.testing.assert_array_equal(np.asarray(got), np.zeros(64))


# ---------------------------------------------------------------------------------------
# Shared metrics added for xu (l2_rms, Kendall distance with ties) — against references.
# ---------------------------------------------------------------------------------------
def _kendall_loop(hat, true, tol, ties):
    n, total = len(true), 0.0
    scale = tol * max(1.0, max(abs(h) for h in hat))
    for i in range(n):
        for j in range(i + 1, n):
            tied = abs(hat[i] - hat[j]) <= scale
            if tied:
                total += 0.5 if (ties == "half" and true[i] != true[j]) else 0.0
            elif (hat[i] - hat[j]) * (true[i] - true[j]) < 0:
                total += 1.0
    return total / (n * (n - 1) / 2)


def test_kendall_distance_against_a_loop_and_scipy():
    from scipy.stats import kendalltau

    rng = np.random.default_rng(0)
    for _ in range(20):
        true = rng.normal(size=9)
        hat = true + rng.normal(scale=0.8, size=9)
        want = _kendall_loop(hat, true, 1e-9, "half")
        assert float(
            metrics.kendall_distance(jnp.asarray(hat), jnp.asarray(true))
        ) == pytest.approx(want, abs=1e-15)
        # no ties: the discordant fraction is (1 − τ)/2
        assert want == pytest.approx((1 - kendalltau(hat, true).statistic) / 2, abs=1e-12)


def test_kendall_distance_ties():
    true = jnp.asarray([3.0, 2.0, 1.0, 0.0])
    hat = jnp.asarray([1.0, 1.0 + 1e-12, 0.0, 0.0])  # two tied pairs in θ̂ (within 1e-9)
    assert float(metrics.kendall_distance(hat, true)) == pytest.approx(1 / 6)  # 2 × ½ of 6 pairs
    assert float(metrics.kendall_distance(hat, true, ties="strict")) == 0.0
    assert float(metrics.kendall_distance(-true, true)) == 1.0
    assert float(metrics.kendall_distance(true, true)) == 0.0
    with pytest.raises(ValueError, match="ties='mean'"):
        metrics.kendall_distance(hat, true, ties="mean")


def test_l2_rms_error():
    theta = jnp.zeros(4)
    assert float(metrics.l2_rms_error(jnp.asarray([1.0, -1.0, 1.0, -1.0]), theta)) == pytest.approx(
        1.0
    )
    assert float(metrics.l2_rms_error(jnp.asarray([2.0, 0.0, 0.0, 0.0]), theta)) == pytest.approx(
        1.0
    )
