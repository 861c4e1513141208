"""The Rasch (1PL IRT) model with uniform random missingness, and its θ*/β* designs
(nguyen §2, eq. (1); nguyen §2).

User l (ability θ*_l) answers item i (difficulty β*_i) correctly with probability
σ(θ*_l − β*_i); each entry is observed independently with probability p. dpsim's names:
``n_users`` (the paper's n) and ``n_items`` (the paper's m); arrays are users × items, the
paper's layout (the authors' code stores items × users).

A response matrix is two boolean arrays (:class:`Responses`): ``x`` (correct, False where
unobserved) and ``observed``. The estimators need more than counts here (the pairwise
differential counts Y = X̃ᵀX̄ share users, and RR acts on single responses), so the matrix
itself is drawn, with one 32-bit uniform per entry.

Validation: concrete inputs are checked and a bad one raises ``ValueError`` naming the value
(dpsim.validate); traced values (inside jit/vmap) pass unchecked.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpsim.validate import require_int, require_probability

DESIGNS = ("normal", "uniform")

__all__ = [
    "Responses",
    "DESIGNS",
    "rasch_difficulties",
    "rasch_abilities",
    "authors_difficulties",
    "rasch_probabilities",
    "sample_rasch_responses",
    "sample_rasch_responses_per_user",
    "expected_differential_counts",
]


class Responses(NamedTuple):
    """A users × items binary response matrix with missing entries.

    Attributes:
        x: (n_users, n_items) bool, True where the response is observed and correct
            (X_li = 1; nguyen's reviewing reading: True = disapproval).
        observed: (n_users, n_items) bool, A_li (the entry was observed).
    """

    x: jax.Array
    observed: jax.Array


def _require_design(design: str) -> None:
    if design not in DESIGNS:
        raise ValueError(
            f"design={design!r} is not a Rasch parameter design; choose one of {DESIGNS}"
        )


def _draw(key, size: int, design: str, scale: float, low: float, high: float):
    _require_design(design)
    if design == "normal":
        return scale * jax.random.normal(key, (size,), jnp.float64)
    return jax.random.uniform(key, (size,), jnp.float64, minval=low, maxval=high)


def rasch_difficulties(
    key,
    n_items: int,
    design: str = "normal",
    *,
    scale: float = 1.0,
    low: float = -1.0,
    high: float = 1.0,
    centred: bool = True,
) -> jax.Array:
    """Item difficulties β*.

    ``design="normal"``: β*_i i.i.d. N(0, scale²), the paper's synthetic design (docs/nguyen.md, Experiments as run:
    N(0, 1), drawn once per n_items and fixed across n, ε and trials: pass the same key,
    e.g. ``fold_in(design_key, n_items)``). ``design="uniform"``: i.i.d. Unif[low, high],
    bounded so that κ and γ stay fixed as n_items grows (the rate checks of docs/nguyen.md, Predictions; Errata and modes (A18)).

    Args:
        key: PRNG key; n_items: m ≥ 2; design: "normal" or "uniform".
        centred: subtract the mean (default; the identifiability constraint β*ᵀ1 = 0 of
            nguyen §2). ``False`` keeps the authors' un-centred β* (docs/nguyen.md, Errata and modes (Q1)); score it with
            ``dpsim.metrics.rasch_l2_error(..., mode="paper")`` to reproduce their floor.
    Returns:
        (n_items,) float64.
    """
    require_int(n_items, "n_items", 2)
    beta = _draw(key, n_items, design, scale, low, high)
    return beta - jnp.mean(beta) if centred else beta


def rasch_abilities(
    key,
    n_users: int,
    design: str = "normal",
    *,
    scale: float = 1.0,
    low: float = -1.0,
    high: float = 1.0,
) -> jax.Array:
    """User abilities θ*: i.i.d. N(0, scale²) (the paper's design, docs/nguyen.md, Experiments as run: drawn once per
    n_users in the authors' code and fixed across ε and trials) or Unif[low, high].

    Args: key: PRNG key; n_users ≥ 1; design: "normal" or "uniform".
    Returns: (n_users,) float64 (not centred: θ* is not identified separately from β*).
    """
    require_int(n_users, "n_users", 1)
    return _draw(key, n_users, design, scale, low, high)


def authors_difficulties(n_items: int, seed: int = 119) -> np.ndarray:
    """The authors' β* for a given m (host): ``np.random.seed(119); np.random.normal(0, 1, m)``
    with NumPy's legacy generator, un-centred (docs/nguyen.md, Experiments as run; e.g. mean 0.1367 at m = 25)."""
    require_int(n_items, "n_items", 2)
    return np.random.RandomState(seed).normal(0.0, 1.0, n_items)


def rasch_probabilities(theta, beta) -> jax.Array:
    """P(X_li = 1) = σ(θ_l − β_i) (nguyen eq. (1)).
    Args: theta: (n_users,); beta: (n_items,). Returns: (n_users, n_items) float64."""
    return jax.nn.sigmoid(
        jnp.asarray(theta, jnp.float64)[:, None] - jnp.asarray(beta, jnp.float64)[None, :]
    )


def sample_rasch_responses(key, theta, beta, p=1.0) -> Responses:
    """One Rasch response matrix with each entry observed with probability p (nguyen §2,
    nguyen eq. (1), §2; §2).

    One uniform U on the 2⁻³² grid per entry: observed and correct when U < p·σ(θ_l − β_i),
    observed and wrong when p·σ(θ_l − β_i) ≤ U < p, missing otherwise, which is the law of the
    authors' ``generate_data`` (probabilities resolved to 2⁻³²). ``p`` may be traced.

    Args:
        key: PRNG key.
        theta: (n_users,) abilities; beta: (n_items,) difficulties (n_items ≥ 2).
        p: observation probability in (0, 1].
    Returns:
        :class:`Responses` with (n_users, n_items) boolean arrays.
    """
    require_probability(p)
    if jnp.ndim(theta) != 1 or jnp.ndim(beta) != 1 or jnp.shape(beta)[0] < 2:
        raise ValueError(
            f"theta must be (n_users,) and beta (n_items,) with n_items ≥ 2, got "
            f"shapes {jnp.shape(theta)} and {jnp.shape(beta)}"
        )
    prob = rasch_probabilities(theta, beta)
    u = jax.random.bits(key, prob.shape, jnp.uint32).astype(jnp.float64) * (2.0**-32)
    p = jnp.asarray(p, jnp.float64)
    observed = u < p
    return Responses(x=u < p * prob, observed=observed)


def sample_rasch_responses_per_user(rng: np.random.Generator, theta, beta, p=1.0) -> Responses:
    """Slow reference sampler (host, NumPy), written like the authors' ``generate_data``: for
    every user and item, observe with probability p, then answer correctly with probability
    σ(θ_l − β_i). Same law as :func:`sample_rasch_responses`; for tests."""
    theta, beta = np.asarray(theta, np.float64), np.asarray(beta, np.float64)
    x = np.zeros((theta.size, beta.size), bool)
    observed = np.zeros_like(x)
    for l in range(theta.size):
        for i in range(beta.size):
            if rng.uniform() < p:
                observed[l, i] = True
                x[l, i] = rng.uniform() < 1.0 / (1.0 + np.exp(-(theta[l] - beta[i])))
    return Responses(x=x, observed=observed)


def expected_differential_counts(theta, beta, p=1.0) -> jax.Array:
    """E[Y_ij] = p²·Σ_l σ(θ_l − β_i)(1 − σ(θ_l − β_j)) for i ≠ j, 0 on the diagonal (nguyen
    eq. (2), §2: E[Y_ij] = e^{−β_i}·S_ij with S symmetric, so e^{β_i}E[Y_ij] = e^{β_j}E[Y_ji]).
    Args: theta: (n_users,); beta: (n_items,); p: observation probability.
    Returns: (n_items, n_items) float64."""
    prob = rasch_probabilities(theta, beta)
    ey = jnp.asarray(p, jnp.float64) ** 2 * (prob.T @ (1.0 - prob))
    return jnp.where(jnp.eye(prob.shape[1], dtype=bool), 0.0, ey)
