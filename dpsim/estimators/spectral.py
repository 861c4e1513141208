"""Spectral methods on comparison data: Markov chains on the items and their stationary
distributions (Rank Centrality, Negahban, Oh & Shah 2017) and the Rasch spectral estimator
of Nguyen & Zhang (nguyen Algorithm 1: pairwise differential counts, regularisation, the
chain's stationary distribution by an exact solve or the authors' power iteration).

All functions take one replicate's matrices and are jit- and vmap-compatible; the Rank
Centrality solve is :func:`dpsim.linalg.solve`, which stays unbatched under ``vmap`` on CPU
(the batched LAPACK call deadlocks XLA:CPU); the Rasch chain's exact solve is
an elimination without LAPACK (:func:`count_chain_stationary`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from dpsim.estimators.fit import Fit
from dpsim.graph import reachable_from
from dpsim.linalg import solve
from dpsim.results import solver_result, where_disconnected


def rank_centrality_transition(W, d):
    """The Rank-Centrality transition matrix (docs/cai.md, Mechanisms and estimators step 2; Negahban, Oh & Shah).

    P_ij = W_ji/d for i ≠ j (the walk moves from i towards the items that beat it) and
    P_ii = 1 − Σ_{j≠i} P_ij. With one comparison per observed pair, W_ji = 1{(i, j) ∈ 𝒢 and
    j beat i}.

    Args:
        W: (n, n) win counts, W[i, j] = times i beat j.
        d: scalar normaliser; must exceed every item's number of losses.
    Returns:
        (n, n) row-stochastic matrix.
    """
    n = W.shape[0]
    off = jnp.where(jnp.eye(n, dtype=bool), 0.0, W.T / d)
    return off + jnp.diag(1.0 - off.sum(axis=1))


def stationary_distribution(P):
    """π with πᵀP = πᵀ, 1ᵀπ = 1 (docs/cai.md, Mechanisms and estimators step 3), for an irreducible chain.

    Args:
        P: (n, n) row-stochastic matrix of an irreducible chain.
    Returns:
        (n,) stationary distribution.

    Solved directly: πᵀ(I − P + 11ᵀ) = 1ᵀ, a non-singular system when P is irreducible
    (one dense solve; no non-symmetric eigendecomposition, which JAX lacks on GPU). The
    solve is :func:`dpsim.linalg.solve`, which stays unbatched under ``vmap`` on CPU.
    """
    n = P.shape[0]
    A = jnp.eye(n) - P + jnp.ones((n, n))
    return solve(A.T, jnp.ones((n,)))


def ergodicity_coefficient(P, batch_size: int = 16):
    """Dobrushin's coefficient ρ = ½ max_{i,i'} Σ_l |P_il − P_i'l| (docs/cai.md, Mechanisms and estimators step 4).

    Row by row (``lax.map``) so memory stays O(n²) instead of O(n³).

    Args:
        P: (n, n) row-stochastic matrix.
    Returns:
        scalar ρ ∈ [0, 1].
    """

    def row(p_i):
        return jnp.max(jnp.sum(jnp.abs(p_i[None, :] - P), axis=1))

    return 0.5 * jnp.max(jax.lax.map(row, P, batch_size=batch_size))


# ---------------------------------------------------------------------------------------
# The Rasch spectral estimator (nguyen Algorithm 1, §2).
# ---------------------------------------------------------------------------------------
SPECTRAL_SOLVERS = ("solve", "power_lazy", "power_jump")
# The authors' power-iteration rules (docs/nguyen.md, Mechanisms and estimators; Errata and modes (Q6)): (ℓ2 tolerance, iteration cap).
POWER_DEFAULTS = {"power_lazy": (1e-5, 1000), "power_jump": (1e-6, 10000)}
EXACT_FLOAT32_COUNT = 2**24  # every whole number up to this is a float32


def differential_counts(x, observed=None):
    """The pairwise differential counts Y = X̃ᵀX̄, diagonal 0 (nguyen eq. (2), nguyen eq. (2), §2):
    Y_ij = #{users who answered both i and j, i correctly and j wrongly}.

    Args:
        x: (n_users, n_items) 0/1 or bool responses (True = correct).
        observed: (n_users, n_items) bool mask A (None: every entry observed).
    Returns:
        (n_items, n_items) float64 integer counts. The 0/1 product is exact: it is taken in
        float32 when a count cannot exceed 2²⁴ (fewer users; faster than float64 on CPU, with
        identical counts), else in float64 (exact below 2⁵³),
        at HIGHEST precision in both, so that no backend rounds it through TF32.
    """
    x = jnp.asarray(x).astype(bool)
    observed = jnp.ones_like(x) if observed is None else jnp.asarray(observed).astype(bool)
    dtype = jnp.float32 if x.shape[0] <= EXACT_FLOAT32_COUNT else jnp.float64
    right = (x & observed).astype(dtype)
    wrong = (~x & observed).astype(dtype)
    y = jnp.matmul(right.T, wrong, precision=jax.lax.Precision.HIGHEST).astype(jnp.float64)
    return jnp.where(jnp.eye(y.shape[0], dtype=bool), 0.0, y)


def regularise_counts(Y, lam=1.0):
    """Ȳ = Y + λ·1[(Y_ij ≠ 0) or (Y_ji ≠ 0)] off the diagonal (the authors' regularisation,
    nguyen footnote 2, docs/nguyen.md, Mechanisms and estimators step 2 and A11; λ = 1 in every experiment). The support
    of Ȳ is symmetric, so the chain is irreducible iff that undirected graph is connected.

    Args: Y: (n_items, n_items) counts (possibly noised); lam: λ ≥ 0 (traceable).
    Returns: (n_items, n_items) float64.
    """
    Y = jnp.asarray(Y, jnp.float64)
    support = ((Y != 0) | (Y.T != 0)) & ~jnp.eye(Y.shape[0], dtype=bool)
    return Y + jnp.asarray(lam, jnp.float64) * support


def support_connected(Ybar):
    """True iff the undirected support graph of Ȳ (i ~ j when Ȳ_ij ≠ 0 or Ȳ_ji ≠ 0) is
    connected, i.e. the chain built on Ȳ is irreducible and π is unique (docs/nguyen.md, Mechanisms and estimators)."""
    support = (Ybar != 0) | (Ybar.T != 0)
    return jnp.all(reachable_from(support))


def count_chain_stationary(Ybar):
    """π with πQ = 0, 1ᵀπ = 1 for the generator Q = Ȳ − diag(Ȳ1) (docs/nguyen.md, Mechanisms and estimators, equivalence
    lemma): the stationary distribution shared by every uniformised chain M = I + Q/d
    (nguyen eq. (3), any d ≥ max row sum) and, after dividing by the row sums, by the
    authors' jump chain.

    Solved exactly by the Grassmann–Taksar–Heyman elimination (GTH, 1985): states m − 1, …, 1
    are eliminated in turn (censoring the chain on the remaining ones; every update adds
    non-negative numbers, so π is computed to working precision entrywise, even when the
    counts span many orders of magnitude, as heavily noised counts do), then π is rebuilt by
    back substitution. O(m³) in m sequential rank-one updates of the m × m rate matrix; it
    calls no LAPACK routine, so it vmaps on every backend (and inside a runner program it is
    faster than an LU solve, with the same π to 1e-12 relative).

    Args: Ybar: (n_items, n_items) non-negative regularised counts with a connected support
    (the diagonal is ignored).
    Returns: (n_items,) float64 (meaningless when the support is disconnected: check
    :func:`support_connected`).
    """
    Ybar = jnp.asarray(Ybar, jnp.float64)
    n = Ybar.shape[0]
    index = jnp.arange(n)
    rates = jnp.where(jnp.eye(n, dtype=bool), 0.0, Ybar)

    def eliminate(step, A):
        k = n - 1 - step
        keep = index < k
        out_k = jnp.where(keep, A[k], 0.0)  # k → j, j < k
        total = jnp.maximum(jnp.sum(out_k), 1e-300)
        into_k = jnp.where(keep, A[:, k], 0.0)  # i → k, i < k
        censored = A + into_k[:, None] * (out_k / total)[None, :]
        return jnp.where(keep[:, None] & keep[None, :], censored, A)

    A = jax.lax.fori_loop(0, n - 1, eliminate, rates)

    def rebuild(k, pi):
        keep = index < k
        total = jnp.maximum(jnp.sum(jnp.where(keep, A[k], 0.0)), 1e-300)
        return pi.at[k].set(jnp.sum(jnp.where(keep, pi * A[:, k], 0.0)) / total)

    pi = jax.lax.fori_loop(1, n, rebuild, jnp.zeros((n,), jnp.float64).at[0].set(1.0))
    return pi / jnp.sum(pi)


def power_iteration(P, tol, max_iters: int):
    """The authors' power iteration (docs/nguyen.md, Mechanisms and estimators step 5): π ← 1; repeat
    π′ = πP/Σ(πP); stop when ‖π′ − π‖₂ < tol; π = π′ — at most ``max_iters`` times.

    Args:
        P: (n, n) row-stochastic matrix.
        tol: ℓ2 tolerance (traceable); max_iters: static cap.
    Returns:
        (π′ the last iterate (n,), converged bool, iterations int).
    """
    n = P.shape[0]

    def cond(state):
        _, it, done = state
        return ~done & (it < max_iters)

    def body(state):
        pi, it, _ = state
        nxt = jnp.matmul(pi, P, precision=jax.lax.Precision.HIGHEST)
        nxt = nxt / jnp.sum(nxt)
        return nxt, it + 1, jnp.linalg.norm(nxt - pi) < tol

    pi, it, done = jax.lax.while_loop(
        cond, body, (jnp.ones((n,), jnp.float64), jnp.asarray(0), jnp.asarray(False))
    )
    return pi, done, it


def exact_solve_result(theta, connected):
    """The result code of the exact solve (``solver="solve"``): ``nonfinite`` if β̂ is not
    finite, else ``disconnected`` if the support of Ȳ is not connected (π is then not
    unique), else ``successful``. Traceable; int8 scalar."""
    return where_disconnected(solver_result(True, theta), connected)


def _centred_log(weights):
    logs = jnp.log(jnp.maximum(weights, 1e-300))
    return logs - jnp.mean(logs)


def spectral_estimate(Y, lam=1.0, solver: str = "solve", tol=None, max_iters: int | None = None):
    """The Rasch spectral estimator β̂ = centred log π of the chain on the regularised
    differential counts (nguyen Algorithm 1, eq. (3); nguyen Algorithm 1, §2).

    Args:
        Y: (n_items, n_items) differential counts (:func:`differential_counts`), possibly
            privatised (then already clipped and masked).
        lam: λ of :func:`regularise_counts` (1 in the paper's experiments).
        solver: ``"solve"`` (default): the exact null vector of the generator
            (:func:`count_chain_stationary`). ``"power_lazy"``: the authors' private code,
            the lazy chain P = Ȳ/d with one scalar d = max row sum + 1, power iteration with
            tolerance 1e-5 and at most 1000 iterations. ``"power_jump"``: their non-private
            code, the jump chain P_ij = Ȳ_ij/d_i, d_i = max(row sum, 1), tolerance 1e-6, at most
            10000 iterations, then π/d. All three target the same β̂; the power modes differ
            by their truncation (docs/nguyen.md, Errata and modes (Q6)).
        tol, max_iters: override the power modes' tolerance and cap.
    Returns:
        :class:`Fit` with theta = β̂ (n_items,), centred (higher = harder item, or better item
        in the reviewing reading); result/iterations None for ``"solve"`` (a closed form;
        :func:`exact_solve_result` gives its code); for the power modes result is
        successful, max_steps_reached (the cap came first) or nonfinite, grad_norm NaN; info:
        ``connected`` (the support of Ȳ is connected, so π is unique).
    """
    if solver not in SPECTRAL_SOLVERS:
        raise ValueError(
            f"solver={solver!r} is not a spectral solver; choose one of {SPECTRAL_SOLVERS}"
        )
    Ybar = regularise_counts(Y, lam)
    info = {"connected": support_connected(Ybar)}
    if solver == "solve":
        return Fit(theta=_centred_log(count_chain_stationary(Ybar)), info=info)
    default_tol, default_cap = POWER_DEFAULTS[solver]
    tol = default_tol if tol is None else tol
    max_iters = default_cap if max_iters is None else max_iters
    n = Ybar.shape[0]
    rows = Ybar.sum(axis=1)
    d = jnp.maximum(rows, 1.0) if solver == "power_jump" else jnp.full((n,), jnp.max(rows) + 1.0)
    off = Ybar / d[:, None]
    P = off + jnp.diag(1.0 - off.sum(axis=1))
    pi, done, iterations = power_iteration(P, tol, max_iters)
    weights = pi / d if solver == "power_jump" else pi
    theta = _centred_log(weights)
    return Fit(
        theta=theta,
        result=solver_result(done, theta),
        iterations=iterations,
        grad_norm=jnp.nan,
        info=info,
    )
