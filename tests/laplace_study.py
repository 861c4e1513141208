"""The text of a small study file (Laplace noise of scale 2/ε on the win counts of a BTL
comparison graph, its metric the mean square of the released noise, and a level check
against 8/ε² at every ε, pooling n_items and p deliberately: the noise does not depend on
them, and a test may give them several values) that tests write to a temporary folder and
run through the CLI (test_mutants.py, test_study_folder.py, test_parts.py, …)."""

from __future__ import annotations

import textwrap

HEAD = """
import jax, jax.numpy as jnp
from dpsim.engine import Experiment, FigureSpec, level_check, Method, Panel
from dpsim.engine.judgement.mutants import Mutant, scaled_analysis
from dpsim.models import sample_er_comparisons, win_counts

def generate(key, shape, truth, data):
    return {"W": sample_er_comparisons(key, jnp.linspace(-1.0, 1.0, shape["n_items"]), data["p"])}

def laplace_counts(key, ctx):
    counts = win_counts(ctx.sample["W"])
    noise = (2.0 / ctx.analysis["eps"]) * jax.random.laplace(key, counts.shape)
    return {"noise_ms": jnp.mean(noise ** 2)}
"""

FIGURE = """figure=FigureSpec(x="eps", curve="method", xlabel="eps", curve_label="method",
                                     panels=(Panel("noise_ms", None, "mean square"),))"""


def study_text(
    name: str,
    *,
    n_items: int,
    reps: int,
    region: tuple[float, float],
    figure: bool = False,
    tail: str = "",
) -> str:
    """A study file named ``name`` at ε ∈ {1, 2}; ``tail``: more module-level code (MUTANTS)."""
    body = f'''
STUDY = Experiment(name="{name}", title="t", axes={{"n_items": [{n_items}], "p": [1.0], "eps": [1.0, 2.0]}},
                   shape_axes=("n_items",), analysis_axes=("eps",), truth=lambda key, shape: {{}},
                   generate=generate, methods={{"laplace": Method(laplace_counts, ("noise_ms",))}}, reps={reps},
                   {FIGURE if figure else ""})
CHECKS = [level_check("{name}-variance", "{name}", "noise_ms", "laplace", lambda p: 8.0 / p["eps"] ** 2,
                     {region[0]}, {region[1]}, at=("eps",), pool=("n_items", "p"), formula="8/ε²")]
'''
    return textwrap.dedent(HEAD) + body + textwrap.dedent(tail)
