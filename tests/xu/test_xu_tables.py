"""xu's ladder designs (Scenarios III, IV) on alias tables: the raw wins and the RR count of
every pair follow their laws (χ² against SciPy per pair), read through a cell that is not the
first of its program; classic and debiased RR share the count (identical rankings)."""

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

import dpsim  # noqa: F401
from dpsim.engine import Cell
from dpsim.engine.storage import store
from dpsim.engine.execution.runner import run_experiment
from dpsim.experiments.xu.model import ladder_counts, ladder_release_laws, ladder_win_laws
from dpsim.experiments.xu.figures.scenarios import FIG4

M_ITEMS, USERS, GAP, EPS, REPS = 6, 40, 0.3, 1.0, 200_000


def stacked_cell(laws, points):
    """A Cell of the laws at ``points`` stacked as the engine stacks a program's cells; the
    lane reads the last one."""
    tables = [laws(p) for p in points]
    return Cell(
        {k: jnp.asarray(np.stack([t[k] for t in tables])) for k in tables[0]},
        jnp.int32(len(points) - 1),
    )


def pvalue(counts, pmf):
    observed = np.bincount(counts.astype(np.int64), minlength=pmf.size)
    keep = pmf * counts.size >= 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(pmf[keep], pmf[~keep].sum()) * counts.size
    obs, exp = obs[exp > 0], exp[exp > 0]
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


def test_ladder_pairs_follow_their_laws():
    ladder = jnp.asarray([2.5, -0.5, -2.5, 1.5, 0.5, -1.5])  # a permuted unit ladder, m = 6
    point = {"n_items": M_ITEMS, "n_users": USERS, "gap": GAP, "eps": EPS}
    other = {**point, "gap": 0.1}  # the first cell, not read
    win_cell, release_cell = (
        stacked_cell(ladder_win_laws, [other, point]),
        stacked_cell(ladder_release_laws, [other, point]),
    )
    keys = jax.random.split(jax.random.key(11), REPS)
    draw = jax.jit(
        jax.vmap(lambda k, cell: ladder_counts(k, ladder, cell, float(USERS))[0], in_axes=(0, None))
    )
    wins, released = np.asarray(draw(keys, win_cell)), np.asarray(draw(keys, release_cell))
    i, j = np.triu_indices(M_ITEMS, 1)
    p_star = 1 / (1 + np.exp(-GAP * (np.asarray(ladder)[i] - np.asarray(ladder)[j])))
    q_tilde = 0.5 + (p_star - 0.5) * np.tanh(EPS / 2)
    support = np.arange(USERS + 1)
    for e in range(len(i)):
        assert pvalue(wins[:, e], stats.binom.pmf(support, USERS, p_star[e])) > 1e-4, e
        assert pvalue(released[:, e], stats.binom.pmf(support, USERS, q_tilde[e])) > 1e-4, e
    # power: the release's law is not the raw wins' (ε = 1 shrinks p* towards ½)
    assert pvalue(released[:, 0], stats.binom.pmf(support, USERS, p_star[0])) < 1e-6


def test_classic_and_debiased_share_the_count_on_the_ladder(tmp_path):
    overrides = {
        "n_items": [6],
        "n_users": [30],
        "gap": [0.2],
        "mechanism": ["classic_rr", "debiased_rr"],
    }
    run_experiment(FIG4, reps=4, out=tmp_path / "r", overrides=overrides, progress=False)
    df = store.load_results(tmp_path / "r").sort_values(["mechanism", "rep"])
    classic, debiased = (
        df[df["mechanism"] == m][["kendall", "top_k_hamming"]].to_numpy()
        for m in ("classic_rr", "debiased_rr")
    )
    np.testing.assert_array_equal(classic, debiased)
    assert not np.array_equal(
        df[df["mechanism"] == "classic_rr"]["l2_rms"].to_numpy(),
        df[df["mechanism"] == "debiased_rr"]["l2_rms"].to_numpy(),
    )
