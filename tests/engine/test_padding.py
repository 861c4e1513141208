"""Size padding: one compiled program serves several n, with exact masking.

Every padded piece is checked against the same function unpadded (the reference): the random
draws are identical, the fits agree to float rounding, the padding never leaks into a result;
and a whole padded cai run against the same run with padding switched off in the experiment.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpsim  # noqa: F401  (float64)
from dpsim.estimators import SCORE_TIE_TOL, top_k_mask
from dpsim.mechanisms import noisy_counts_edge
from dpsim.engine.execution import runner
from dpsim.engine.storage import store
from dpsim.engine.execution.planning import size_buckets
from dpsim.engine.execution.runner import run_experiment
from dpsim.engine.execution.program import clear_cache
from dpsim.models.btl import pair_draw_bits
from dpsim.models import (
    centre,
    pair_bits,
    real_items,
    sample_er_comparisons,
    theta_cai_design,
    true_top_k_mask,
)
from dpsim.experiments.cai import model
from dpsim.experiments.cai.figures import edge
from cai_fits import alg1_edge

CAPACITY = 64


@pytest.mark.parametrize("n", [1, 2, 17, 40, 64])
def test_pair_bits_are_the_unpadded_bits_with_n_traced(n):
    key = jax.random.fold_in(jax.random.key(5), n)
    padded = jax.jit(pair_bits, static_argnums=2)(key, jnp.int64(n), CAPACITY)
    assert padded.shape == (CAPACITY, CAPACITY) and padded.dtype == jnp.uint32
    np.testing.assert_array_equal(padded[:n, :n], jax.random.bits(key, (n, n), jnp.uint32))


def test_pair_bits_refuses_a_capacity_beyond_32_bit_indices():
    with pytest.raises(ValueError, match="capacity=70000"):
        pair_bits(jax.random.key(0), 3, 70000)
    with pytest.raises(ValueError, match="capacity=70000"):  # the sampler's symmetric layout too
        pair_draw_bits(jax.random.key(0), 70000, jnp.int64(3))


def _traced(fn):
    """``fn`` jitted with its integer arguments traced (as inside a padded program)."""
    return jax.jit(fn)


@pytest.mark.parametrize("n,k", [(10, 3), (37, 9), (64, 16)])
@pytest.mark.parametrize("top_first", [False, True])
def test_padded_theta_design_and_top_k_equal_the_unpadded(n, k, top_first):
    key = jax.random.key(n + 100 * k)
    reference = theta_cai_design(key, n, k, top_first=top_first)
    padded = _traced(
        lambda key, n, k: theta_cai_design(key, n, k, top_first=top_first, capacity=CAPACITY)
    )(key, jnp.int64(n), jnp.int64(k))
    np.testing.assert_allclose(padded[:n], reference, rtol=0, atol=1e-15)
    assert np.all(padded[n:] == 0)
    real = real_items(CAPACITY, n)
    mask = _traced(true_top_k_mask)(padded, jnp.int64(k), real)
    np.testing.assert_array_equal(mask[:n], true_top_k_mask(reference, k))
    assert not mask[n:].any() and int(mask.sum()) == k


@pytest.mark.parametrize("n", [10, 37, 64])
def test_padded_comparisons_are_the_unpadded_ones(n):
    key = jax.random.key(n)
    theta = theta_cai_design(key, n, n // 4)
    padded_theta = jnp.zeros(CAPACITY).at[:n].set(theta)
    reference = sample_er_comparisons(key, theta, 0.4)
    padded = _traced(lambda key, t, n: sample_er_comparisons(key, t, 0.4, n_items=n))(
        key, padded_theta, jnp.int64(n)
    )
    np.testing.assert_array_equal(padded[:n, :n], reference)
    assert float(jnp.abs(padded).sum() - reference.sum()) == 0.0  # nothing in the padding


@pytest.mark.parametrize("eps", [0.5, 2.0, math.inf])
@pytest.mark.parametrize("n", [12, 40])
def test_padded_perturbed_mle_and_top_k_equal_the_unpadded(n, eps):
    key = jax.random.key(7 * n)
    k = n // 4
    theta = theta_cai_design(key, n, k)
    W = sample_er_comparisons(jax.random.fold_in(key, 1), theta, 0.7)
    W_padded = jnp.zeros((CAPACITY, CAPACITY)).at[:n, :n].set(W)
    real = real_items(CAPACITY, n)
    fit = alg1_edge(key, W, eps, 0.7)
    padded = _traced(lambda key, W, n: alg1_edge(key, W, eps, 0.7, n_items=n))(
        key, W_padded, jnp.int64(n)
    )
    np.testing.assert_allclose(
        centre(padded.theta, real)[:n], fit.theta_centred, rtol=0, atol=1e-12
    )
    assert np.all(padded.theta[n:] == 0) and np.all(centre(padded.theta, real)[n:] == 0)
    assert bool(padded.converged) and int(padded.iterations) == int(fit.iterations)
    mask = top_k_mask(key, padded.theta, k, tie_tol=SCORE_TIE_TOL, real=real)
    np.testing.assert_array_equal(mask[:n], top_k_mask(key, fit.theta, k, tie_tol=SCORE_TIE_TOL))
    counts = noisy_counts_edge(key, W_padded, eps)
    mask = top_k_mask(key, counts, k, real=real)
    np.testing.assert_array_equal(mask[:n], top_k_mask(key, noisy_counts_edge(key, W, eps), k))
    assert not mask[n:].any()


def _brute_force_buckets(sizes, cost, compile_seconds):
    """The cheapest split of the sorted sizes into runs, by trying every split."""
    values = sorted(set(sizes))
    best = (math.inf, None)
    for cuts in itertools.product([False, True], repeat=len(values) - 1):
        runs, start = [], 0
        for i, cut in enumerate(cuts, start=1):
            if cut:
                runs.append(values[start:i])
                start = i
        runs.append(values[start:])
        total = sum(compile_seconds + sum(cost(v, run[-1]) for v in run) for run in runs)
        if total < best[0] - 1e-12:
            best = (total, {v: run[-1] for run in runs for v in run})
    return best


@pytest.mark.parametrize("seed", range(6))
def test_size_buckets_is_the_cheapest_split(seed):
    rng = np.random.default_rng(seed)
    sizes = sorted(rng.choice(np.arange(10, 400), size=7, replace=False).tolist())
    weight = {s: float(rng.uniform(0.5, 3)) for s in sizes}
    cost = lambda size, capacity: weight[size] * capacity**2 * 1e-5
    compile_seconds = float(rng.uniform(0.1, 2.0))
    chosen = size_buckets(sizes, cost, compile_seconds)
    total, expected = _brute_force_buckets(sizes, cost, compile_seconds)
    runs = set(chosen.values())
    assert sum(
        compile_seconds + sum(cost(v, c) for v, c in chosen.items() if c == r) for r in runs
    ) == pytest.approx(total, rel=1e-12)
    assert all(c >= v for v, c in chosen.items()) and set(chosen) == set(sizes)


def test_size_buckets_extremes():
    cost = lambda size, capacity: capacity**2 * 1e-6
    sizes = [100, 175, 250]
    assert size_buckets(sizes, cost, 0.0) == {100: 100, 175: 175, 250: 250}  # compiling is free
    assert size_buckets(sizes, cost, 1e6) == {
        100: 250,
        175: 250,
        250: 250,
    }  # compiling is everything
    assert size_buckets([], cost, 1.0) == {}


def test_padded_cai_run_equals_the_unpadded_run(tmp_path):
    """cai Fig. 1 at two n in one padded program (n = 20 padded to the capacity 36, beside lanes
    of n = 36 unpadded) against the experiment without padding (each n its own program, the
    earlier behaviour): the same rows, integer and boolean columns identical, floats within
    1e-11 relative."""
    overrides = {"n_items": [20, 36], "eps": [0.5, math.inf]}
    padded_plan = runner.plan_run(edge.FIG1, reps=3, overrides=overrides, out=tmp_path / "plan")
    assert len(padded_plan.steps) == 1 and padded_plan.steps[0].shape["capacity"] == 36
    unpadded = dataclasses.replace(
        edge.FIG1, tuning=dataclasses.replace(edge.FIG1.tuning, padding=None)
    )
    clear_cache()
    run_experiment(edge.FIG1, reps=3, overrides=overrides, out=tmp_path / "padded", progress=False)
    run_experiment(unpadded, reps=3, overrides=overrides, out=tmp_path / "unpadded", progress=False)
    a, b = store.load_results(tmp_path / "padded"), store.load_results(tmp_path / "unpadded")
    assert len(a) == len(b) == 2 * 3 * 2 * 2 and list(a.columns) == list(b.columns)
    for column in a.columns:
        if a[column].dtype == np.float64:
            np.testing.assert_allclose(a[column], b[column], rtol=1e-11, atol=1e-14, err_msg=column)
        else:
            assert a[column].tolist() == b[column].tolist(), column
    assert set(a["n_items"]) == {20, 36} and set(a["k"]) == {5, 9}


def test_an_experiment_pads_only_methods_that_mask_padding():
    """cai Fig. 4 adds the one-shot method, which does not mask padding: it keeps one program
    per n; declaring padding with such a method is refused."""
    from dpsim.experiments.cai.figures import individual

    assert edge.FIG1.tuning.padding is model.PADDING and individual.FIG4.tuning.padding is None
    with pytest.raises(ValueError, match=r"methods \['one_shot'\] do not mask padding"):
        dataclasses.replace(
            individual.FIG4,
            tuning=dataclasses.replace(individual.FIG4.tuning, padding=model.PADDING),
        )


def test_more_items_than_the_sampler_indexes_is_a_usage_error():
    from dpsim.engine import UsageError
    from dpsim.engine.definition.grid import expand_grid

    with pytest.raises(
        UsageError, match="n_items=70000 is more than the edge-DP sampler's 65536 items"
    ):
        expand_grid(edge.FIG1, {"n_items": [300, 70000]})
