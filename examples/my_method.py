"""Your estimator beside the paper's: a method of your own run on cai Fig. 3's experiment, on
the same data and keys, drawn in the same figure and judged by the same checks.

The method: Algorithm 2 of cai (noisy win counts, Laplace(2/ε): ε-edge-DP) ranked by win
*rate*, the noisy count divided by the item's number of comparisons. Under edge DP the
comparison graph is public, so the division is post-processing and the release stays ε-DP;
when p < 1 the items are compared unequally often, which raw counts ignore.

From the command line (this file is a study file):

    dpsim show examples/my_method.py                  # the paper's axes, its methods and yours
    dpsim run examples/my_method.py --reps 20 --set n_items=100
                                                      # → runs/cai-fig3+winrate/{parts, manifest.json, figure.*}
    dpsim verify examples/my_method.py                # the paper's checks and yours, on that run

From Python (a notebook, or ``python examples/my_method.py --reps 20``)::

    import dpsim
    from my_method import EXPERIMENT
    results = dpsim.run(EXPERIMENT, reps=20, n_items=100)
    results.summary("relative_hamming", where={"eps": 1.0})   # winrate beside mle and counts
    results.plot()                                            # cai Fig. 3 with a win-rate panel

What keeps the comparison fair (common random numbers): the data, θ* and the paper's methods'
noise are keyed by the seed, the grid point and each method's *name*, never by which methods
run, so the rows of ``mle`` and ``counts`` here are bit for bit those of ``dpsim run cai-fig3``
on the same grid, and ``winrate`` sees exactly their comparisons. The method honours cai's
padding (items beyond ``ctx.shape["n_items"]`` are zeros in programs shared by several sizes,
``Method.masks_padding``), which is what keeps the paper's programs, and so their rows, as
they are.
"""

import argparse

import jax
import jax.numpy as jnp

import dpsim
from dpsim.estimators import top_k_mask
from dpsim.engine import Method, comparison_check
from dpsim.metrics import topk_metrics
from dpsim.models import real_items, win_counts


def win_rate(key, ctx):
    """Noisy win counts (Laplace(2/ε), cai Algorithm 2) over each item's comparison count; the
    top k of the rates (random tie-break), scored as cai scores Algorithm 2.

    Args:
        key: this method's own key.  ctx: the analysis point's :class:`~dpsim.engine.Context`:
            ``ctx.sample["W"]`` (capacity, capacity) win counts, ``ctx.sample["M"]`` = W + Wᵀ (the
            public graph's comparison counts), ``ctx.truth["top_k"]`` the true top-k mask.
    Returns:
        {"relative_hamming", "exact_recovery"}: cai's top-k errors.
    """
    k_noise, k_tie = jax.random.split(key)
    W, M = ctx.sample["W"], ctx.sample["M"]
    items = real_items(W.shape[0], ctx.shape["n_items"])  # False in the padding
    eps = ctx.analysis["eps"]
    noise = jnp.where(jnp.isinf(eps), 0.0, 2.0 / eps) * jax.random.laplace(k_noise, (W.shape[0],))
    rate = (win_counts(W) + noise) / jnp.maximum(M.sum(axis=1), 1.0)
    mask = top_k_mask(k_tie, rate, ctx.shape["k"], real=items)
    return topk_metrics(mask, ctx.truth["top_k"])


WIN_RATE = Method(
    win_rate,
    ("relative_hamming", "exact_recovery"),
    label="Win rate",
    doc="noisy win counts (Laplace(2/ε)) over comparison counts: post-processed Algorithm 2",
    masks_padding=True,
)

EXPERIMENT = dpsim.experiment_named("cai-fig3").with_methods(winrate=WIN_RATE)

CHECKS = [
    *dpsim.checks_for(EXPERIMENT),  # the paper's checks, judged on this run
    comparison_check(
        "cai-fig3+winrate-beats-counts",
        EXPERIMENT.name,
        "relative_hamming",
        "winrate",
        "counts",
        where={"p": [0.25], "eps": [2.0]},
        every=("eps",),
        description="ranking by noisy win rate recovers the top k better than by noisy counts "
        "when items are compared unequally often (p = 0.25, ε = 2)",
    ),
]


def main(reps: int | None = None, **overrides):
    """Run the study, print the top-k error of every method at each ε and p, draw the figure."""
    results = dpsim.run(EXPERIMENT, reps=reps, **overrides)
    table = results.summary("relative_hamming").drop(columns="metric")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    for path in results.plot(save=True):
        print(f"figure: {path}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--n-items", type=int, default=None)
    args = parser.parse_args()
    main(args.reps, **({} if args.n_items is None else {"n_items": args.n_items}))
