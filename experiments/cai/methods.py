"""cai's methods (docs/cai.md, Mechanisms and estimators): Algorithms 1–3 wired as Methods, each
drawing its release through the library (``dpsim.mechanisms``, fitted by ``dpsim.estimators``),
and the metrics they report.

Besides the errors (``dpsim.metrics``), the methods report moments that pin each mechanism's
calibration without its code (read by the level checks, ``checks.py``):

1. Algorithm 1's output θ̃ and the data W determine r = −∇𝓛(θ̃; W) (:func:`perturbation_metrics`,
   a gradient written here from docs/cai.md, Mechanisms and estimators, not the solver's); the
   optimality condition ∇𝓛(θ̃) + γθ̃ + w = 0 then ties r, γ and θ̃ to the perturbation w;
2. Algorithms 2 and 3: the released count noise's mean square (:func:`count_noise_metrics`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from dpsim.engine import Method, solver_diagnostics
from dpsim.estimators import SCORE_TIE_TOL, guarded_perturbed_mle, perturbed_mle, top_k_mask
from dpsim.mechanisms import (
    noisy_counts_edge,
    noisy_counts_individual,
    objective_perturbation_edge,
    objective_perturbation_individual,
)
from dpsim.metrics import estimation_metrics, topk_metrics
from dpsim.models import centre, win_counts

from .model import real


# ---------------------------------------------------------------------------------------
# Metrics (added to the methods; they read the method's output and its data, no draw)
# ---------------------------------------------------------------------------------------
def expected_wins(W, theta):
    """Σ_j M_ij σ(θ_i − θ_j), M = W + Wᵀ (docs/cai.md, Mechanisms and estimators): the wins item i is expected to have, given
    the comparisons W and scores θ; (n,) for (n, n) W and (n,) θ.

    With b = exp(θ − c), c the midpoint of θ's range, σ(θ_i − θ_j) = b_i/(b_i + b_j), so the sum
    is b_i Σ_j (W_ij + W_ji) Q_ij with Q_ij = 1/(b_i + b_j) symmetric: the row and the column
    sums of W∘Q, one division per pair and no transpose of W. Writing σ through ``sigmoid``
    (one exponential per pair) and M = W + Wᵀ took twice as long at n = 300. Exact up to rounding while θ's range is under ≈ 1400 (b then neither overflows
    nor underflows to 0 for both items of a pair).
    """
    b = jnp.exp(theta - 0.5 * (jnp.max(theta) + jnp.min(theta)))
    weighted = W / (b[:, None] + b[None, :])
    ones = jnp.ones_like(b)
    return b * (weighted @ ones + ones @ weighted)


def perturbation_metrics(W, theta, n_items=None) -> dict:
    """Per-fit moments of r = −∇𝓛(θ̃; W) = W·1 − Σ_j M_ij σ(θ̃_i − θ̃_j) (docs/cai.md, Mechanisms and estimators; M = W + Wᵀ)
    and of the *uncentred* θ̃ (identities 1 and 2 of checks.py's docstring). Padding items (θ̃ = 0, W = 0 there) add 0 to
    every sum, so means over the ``n_items`` real items are sums / n_items.

    Returns: ``op_grad_msq`` = mean r², ``op_grad_theta`` = mean r·θ̃, ``op_theta_msq`` =
    mean θ̃², ``op_theta_mean_sq`` = n·mean(θ̃)².
    """
    n = jnp.asarray(W.shape[0] if n_items is None else n_items, jnp.float64)
    r = W.sum(axis=1) - expected_wins(W, theta)
    mean_theta = jnp.sum(theta) / n
    return {
        "op_grad_msq": jnp.sum(r * r) / n,
        "op_grad_theta": jnp.sum(r * theta) / n,
        "op_theta_msq": jnp.sum(theta * theta) / n,
        "op_theta_mean_sq": n * mean_theta**2,
    }


PERTURBATION_METRICS = ("op_grad_msq", "op_grad_theta", "op_theta_msq", "op_theta_mean_sq")


def count_noise_metrics(noisy, counts, real=None, n_items=None) -> dict:
    """``noise_msq`` = mean over the real items of (Ñ_i − N_i)², the released noise's mean square."""
    d = noisy - counts
    if real is not None:
        d = jnp.where(real, d, 0.0)
    n = jnp.asarray(d.shape[0] if n_items is None else n_items, jnp.float64)
    return {"noise_msq": jnp.sum(d * d) / n}


# ---------------------------------------------------------------------------------------
# Edge DP: Algorithm 1 (cai §2.2) and Algorithm 2 (cai §2.3)
# ---------------------------------------------------------------------------------------
ESTIMATION = ("l2", "linf", "log_rel_l2", "log_rel_linf")
TOPK = ("relative_hamming", "exact_recovery")


def mle_scores(k_tie, ctx, fit):
    """The ``mle`` method's row from an Algorithm 1 fit: its centred estimate against θ*, its top k
    (ties broken from ``k_tie``), the moments that pin λ and γ (:func:`perturbation_metrics`)
    and the solver's diagnostics."""
    items = real(ctx.shape)
    mask = top_k_mask(k_tie, fit.theta, ctx.shape["k"], tie_tol=SCORE_TIE_TOL, real=items)
    return {
        **estimation_metrics(centre(fit.theta, items), ctx.truth["theta"]),
        **topk_metrics(mask, ctx.truth["top_k"]),
        **perturbation_metrics(ctx.sample["W"], fit.theta, ctx.shape["n_items"]),
        **fit.diagnostics(),
    }


def make_mle_fn(release_edge=objective_perturbation_edge):
    """The ``mle`` method's function with Algorithm 1's release drawn by ``release_edge`` (the library's
    :func:`~dpsim.mechanisms.objective_perturbation_edge`; a mutant passes a miscalibrated one), called
    as ``release_edge(key, eps, p, capacity, c0=, n_items=)``, and fitted by
    :func:`~dpsim.estimators.perturbed_mle` with the sample's W and M = W + Wᵀ."""

    def mle_fn(key, ctx):
        """Algorithm 1 (cai §2.2, Prop 2.1, Thm 2.1): the objective-perturbed penalised MLE with
        λ = 8/ε, γ = max(1/ε, c0√(np log n)), scored by :func:`mle_scores`."""
        k_noise, k_tie = jax.random.split(key)
        W = ctx.sample["W"]
        release = release_edge(
            k_noise,
            ctx.analysis["eps"],
            ctx.data["p"],
            W.shape[0],
            c0=ctx.analysis["c0"],
            n_items=ctx.shape["n_items"],
        )
        return mle_scores(k_tie, ctx, perturbed_mle(W, release, M=ctx.sample["M"]))

    return mle_fn


mle_fn = make_mle_fn()


def counts_fn(key, ctx):
    """Algorithm 2 (cai §2.3): win counts + Laplace(2/ε), top k with random tie-break; and the
    released noise's mean square ``noise_msq`` (:func:`count_noise_metrics`)."""
    k_noise, k_tie = jax.random.split(key)
    items = real(ctx.shape)
    W = ctx.sample["W"]
    noisy = noisy_counts_edge(k_noise, W, ctx.analysis["eps"])
    return {
        **topk_metrics(top_k_mask(k_tie, noisy, ctx.shape["k"], real=items), ctx.truth["top_k"]),
        **count_noise_metrics(noisy, win_counts(W), items, ctx.shape["n_items"]),
    }


MLE = Method(
    mle_fn,
    ESTIMATION + TOPK + PERTURBATION_METRICS,
    solver_diagnostics(),
    label="Noisy MLE",
    doc="Algorithm 1: objective-perturbed penalised MLE (truncated Newton), centred",
    masks_padding=True,
)
COUNTS = Method(
    counts_fn,
    TOPK + ("noise_msq",),
    label="Counting",
    doc="Algorithm 2: noisy win counts, Laplace(2/ε)",
    masks_padding=True,
)
METHODS = {"mle": MLE, "counts": COUNTS}


# ---------------------------------------------------------------------------------------
# Individual DP: Algorithm 1 (cai §3.2) and Algorithm 3 (cai §3.3)
# ---------------------------------------------------------------------------------------
def individual_mle_fn(key, ctx):
    """Algorithm 1 under individual DP (Prop 3.1, Thm 3.1): λ = 8L/ε, γ = 2L/ε; ε = ∞ is the
    unpenalised MLE with the strong-connectivity guard of docs/cai.md, Errata and modes (E17) (``strongly_connected``)."""
    k_noise, k_tie = jax.random.split(key)
    sample = ctx.sample
    W = sample["W"]
    fit = guarded_perturbed_mle(
        W,
        objective_perturbation_individual(
            k_noise, ctx.analysis["eps"], ctx.data["per_user"], W.shape[0]
        ),
    )
    mask = top_k_mask(k_tie, fit.theta, ctx.shape["k"], tie_tol=SCORE_TIE_TOL)
    return {
        **estimation_metrics(fit.theta_centred, sample["theta"]),
        **topk_metrics(mask, sample["top_k"]),
        **fit.diagnostics(),
    }


def individual_counts_fn(key, ctx):
    """Algorithm 3 (cai Algorithm 3, §3.3): win counts + Laplace(c·L/ε), c = 2 (strict) or 1 (paper);
    and the released noise's mean square ``noise_msq`` (:func:`count_noise_metrics`)."""
    k_noise, k_tie = jax.random.split(key)
    noisy = noisy_counts_individual(
        k_noise, ctx.sample["W"], ctx.analysis["eps"], ctx.data["per_user"], ctx.shape["mode"]
    )
    return {
        **topk_metrics(top_k_mask(k_tie, noisy, ctx.shape["k"]), ctx.sample["top_k"]),
        **count_noise_metrics(noisy, win_counts(ctx.sample["W"])),
    }


MLE_DIAGNOSTICS = solver_diagnostics(strongly_connected="bool", gamma="float")
INDIVIDUAL_METHODS = {
    "mle": Method(
        individual_mle_fn,
        ESTIMATION + TOPK,
        MLE_DIAGNOSTICS,
        label="Noisy MLE",
        doc="Algorithm 1 under individual DP (λ = 8L/ε, γ = 2L/ε)",
    ),
    "counts": Method(
        individual_counts_fn,
        TOPK + ("noise_msq",),
        label="Counting",
        doc="Algorithm 3: noisy win counts, Laplace(2L/ε) strict or L/ε paper",
    ),
}
