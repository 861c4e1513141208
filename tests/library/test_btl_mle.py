"""The ℓ2-penalised / objective-perturbed BTL MLE (cai Algorithm 1, §2.2.1; docs/cai.md, Mechanisms and estimators) against independent solvers.

Reference implementations here are written from the paper's formulas, not from the library:
    R(θ) = Σ_{i≠j} W_ij log(1 + e^{θ_j − θ_i}) + (γ/2)‖θ‖² + wᵀθ,
    ∇R_i = Σ_j (M_ij σ(θ_i − θ_j) − W_ij) + γθ_i + w_i,   M = W + Wᵀ,
    ∇²R = diag(C1) − C + γI,  C_ij = M_ij σ_ij (1 − σ_ij).
"""

from __future__ import annotations

import math

import choix
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from dpsim.estimators import (
    btl_gradient,
    btl_neg_log_likelihood,
    btl_objective,
    penalised_mle,
)
from dpsim.mechanisms import edge_objective_perturbation
from dpsim.models import sample_er_comparisons, theta_cai_design
from cai_fits import alg1_edge


# ----------------------------------------------------------------------------- references


def ref_nll_jnp(theta, W):
    """𝓛(θ; W) = Σ_ij W_ij softplus(θ_j − θ_i), straight from cai eq. (2.1) (logistic F)."""
    return jnp.sum(W * jnp.logaddexp(0.0, theta[None, :] - theta[:, None]))


def ref_objective_jnp(theta, W, gamma, w):
    return ref_nll_jnp(theta, W) + 0.5 * gamma * jnp.dot(theta, theta) + jnp.dot(w, theta)


def np_objective(theta, W, gamma, w):
    D = theta[:, None] - theta[None, :]
    return float(np.sum(W * np.logaddexp(0.0, -D)) + 0.5 * gamma * theta @ theta + w @ theta)


def np_gradient(theta, W, gamma, w):
    sig = expit(theta[:, None] - theta[None, :])
    M = W + W.T
    return (M * sig).sum(axis=1) - W.sum(axis=1) + gamma * theta + w


def np_hessian(theta, W, gamma, w):
    sig = expit(theta[:, None] - theta[None, :])
    C = (W + W.T) * sig * (1.0 - sig)
    return np.diag(C.sum(axis=1)) - C + gamma * np.eye(len(theta))


def scipy_solve(W, gamma, w):
    """argmin R by scipy's trust-region Newton-CG on the numpy objective, then polished.

    Near the optimum the objective's rounding error can stop scipy ("failure to predict
    improvement") before its gtol, so a few full Newton steps x ← x − H⁻¹g (numpy dense
    solve; quadratic convergence there) finish the job. We then check ‖∇R‖∞ ≤ 1e-9 ourselves:
    R is γ-strongly convex, so ‖θ − θ_opt‖₂ ≤ √n·1e-9/γ, far below the 1e-6 compared.
    """
    W, w = np.asarray(W), np.asarray(w)
    res = minimize(
        np_objective,
        np.zeros(W.shape[0]),
        args=(W, gamma, w),
        jac=np_gradient,
        hess=np_hessian,
        method="trust-ncg",
        options={"gtol": 1e-11, "maxiter": 1000},
    )
    x = res.x
    for _ in range(20):
        g = np_gradient(x, W, gamma, w)
        if np.max(np.abs(g)) <= 1e-11:
            break
        x = x - np.linalg.solve(np_hessian(x, W, gamma, w), g)
    assert np.max(np.abs(np_gradient(x, W, gamma, w))) <= 1e-9, res.message
    return x


def pairs_from_W(W) -> list[tuple[int, int]]:
    """choix's pairwise data: one (winner, loser) tuple per comparison counted in W."""
    W = np.asarray(W)
    assert np.all(W == np.round(W)) and np.all(W >= 0)
    out = []
    for i, j in zip(*np.nonzero(W)):
        out.extend([(int(i), int(j))] * int(W[i, j]))
    return out


def grad_inf_norm(theta, W, gamma, w) -> float:
    """‖∇R(θ)‖∞ by automatic differentiation of the *library's* likelihood plus ridge and wᵀθ."""
    R = lambda t: btl_neg_log_likelihood(t, W) + 0.5 * gamma * jnp.dot(t, t) + jnp.dot(w, t)
    return float(jnp.max(jnp.abs(jax.grad(R)(theta))))


def paper_gamma(n, p, c0=2.0):
    return c0 * math.sqrt(n * p * math.log(n))


# ----------------------------------------------------------------------------- likelihood


def test_x64_enabled():
    assert jnp.zeros(1).dtype == jnp.float64


@pytest.mark.parametrize("scale", [0.1, 1.0, 5.0, 40.0])
def test_neg_log_likelihood_matches_formula(small_W, scale):
    theta = scale * jax.random.normal(jax.random.key(1), (small_W.shape[0],))
    want = np.sum(np.asarray(small_W) * np.logaddexp(0.0, np.subtract.outer(theta, theta).T))
    got = float(btl_neg_log_likelihood(theta, small_W))
    assert np.isfinite(got)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-10)


@pytest.mark.parametrize("scale", [0.1, 1.0, 5.0, 40.0])
def test_btl_gradient_matches_autodiff(small_W, scale):
    theta = scale * jax.random.normal(jax.random.key(2), (small_W.shape[0],))
    got = btl_gradient(theta, small_W)
    want = jax.grad(btl_neg_log_likelihood)(theta, small_W)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got, jax.grad(ref_nll_jnp)(theta, small_W), rtol=1e-10, atol=1e-10)
    # 𝓛 depends only on differences of θ, so 1ᵀ∇𝓛 = 0 (docs/cai.md, Mechanisms and estimators).
    assert abs(float(jnp.sum(got))) < 1e-9 * max(1.0, float(jnp.sum(small_W)))


def test_objective_gradient_hvp_and_diag_match_autodiff(spread_W):
    n = spread_W.shape[0]
    gamma = 0.7
    w = jax.random.laplace(jax.random.key(3), (n,)) * 3.0
    theta = jax.random.normal(jax.random.key(4), (n,)) * 2.0
    obj = btl_objective(spread_W, gamma, w)
    grad, curv = jax.jit(obj.evaluate)(theta)
    np.testing.assert_allclose(
        grad,
        jax.jit(jax.grad(ref_objective_jnp))(theta, spread_W, gamma, w),
        rtol=1e-10,
        atol=1e-10,
    )
    H = jax.jit(jax.hessian(ref_objective_jnp))(theta, spread_W, gamma, w)
    np.testing.assert_allclose(
        H, np_hessian(np.asarray(theta), np.asarray(spread_W), gamma, 0), rtol=1e-10, atol=1e-12
    )
    for seed in range(3):
        v = jax.random.normal(jax.random.key(100 + seed), (n,))
        np.testing.assert_allclose(obj.hvp(curv, v), H @ v, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(obj.hess_diag(curv), jnp.diag(H), rtol=1e-12, atol=1e-12)
    # The Hessian is a graph Laplacian + γI: H·1 = γ·1.
    np.testing.assert_allclose(obj.hvp(curv, jnp.ones(n)), gamma * jnp.ones(n), atol=1e-10)


def test_hessian_does_not_depend_on_outcomes(small_W):
    """cai proof of Prop 2.1, App. A.1 invariant 1: flipping one comparison's outcome leaves the Hessian unchanged."""
    W = np.asarray(small_W)
    i, j = map(int, np.argwhere(W == 1)[0])
    flipped = W.copy()
    flipped[i, j], flipped[j, i] = 0.0, 1.0
    theta = jax.random.normal(jax.random.key(5), (W.shape[0],))
    v = jax.random.normal(jax.random.key(6), (W.shape[0],))
    a, b = btl_objective(jnp.asarray(W), 1.0, 0.0), btl_objective(jnp.asarray(flipped), 1.0, 0.0)
    (ga, ca), (gb, cb) = a.evaluate(theta), b.evaluate(theta)
    np.testing.assert_array_equal(a.hvp(ca, v), b.hvp(cb, v))
    assert not np.allclose(ga, gb)  # the data did change


# ----------------------------------------------------------------------------- solver vs choix
# Compiled once and shared (an un-jitted call re-compiles its while_loops every time).
_pmle = jax.jit(penalised_mle, static_argnames=("max_iter",))
_alg1 = jax.jit(alg1_edge)
# One batched program for every vmap test: B = 64 lanes of n = 20, ε and p per lane.
_alg1_batched = jax.jit(jax.vmap(alg1_edge, in_axes=(0, 0, 0, 0)))
B = 64


def _zeros(W):
    return jnp.zeros(W.shape[0])


@pytest.mark.parametrize("gamma_kind", ["paper", "weak"])
def test_penalised_mle_matches_choix(small_W, gamma_kind):
    """Non-private penalised MLE = choix.opt_pairwise's MAP estimate.

    choix (opt.py, PairwiseFcts.objective) minimises Σ_pairs log(1 + e^{−(θ_w − θ_l)}) +
    alpha·Σθ², i.e. our objective with (γ/2)‖θ‖² = alpha‖θ‖²: alpha = γ/2.
    """
    n = small_W.shape[0]
    gamma = paper_gamma(n, 0.5) if gamma_kind == "paper" else 0.3
    fit = _pmle(small_W, gamma, _zeros(small_W))
    want = choix.opt_pairwise(
        n, pairs_from_W(small_W), alpha=gamma / 2, method="Newton-CG", tol=1e-13, max_iter=10_000
    )
    assert bool(fit.converged)
    np.testing.assert_allclose(fit.theta, want, atol=1e-6, rtol=0)
    # w = 0 ⇒ 1ᵀθ̂ = 0 (docs/cai.md, Mechanisms and estimators with w = 0).
    assert abs(float(jnp.sum(fit.theta))) < 1e-9
    # the default w=None is w = 0
    np.testing.assert_allclose(penalised_mle(small_W, gamma).theta, fit.theta, atol=1e-12)


def test_a_given_graph_changes_no_fit_and_a_wrong_one_is_refused():
    """``M`` = W + Wᵀ from the sampler gives the fit computed without it, bit for bit (jitted,
    as the runner calls it); an M that is not W + Wᵀ is refused naming the entry."""
    from dpsim.errors import UsageError
    from dpsim.models import sample_er_graph

    theta = theta_cai_design(jax.random.key(4), 30)
    W, M = sample_er_graph(jax.random.key(9), theta, 0.6)
    w = 2.0 * jax.random.laplace(jax.random.key(1), (30,))
    with_graph = jax.jit(lambda W, M: alg1_edge(jax.random.key(3), W, 1.0, 0.6, M=M).theta)(W, M)
    without = jax.jit(lambda W: alg1_edge(jax.random.key(3), W, 1.0, 0.6).theta)(W)
    np.testing.assert_array_equal(np.asarray(with_graph), np.asarray(without))
    np.testing.assert_array_equal(
        np.asarray(penalised_mle(W, 2.0, w, M=M).theta), np.asarray(penalised_mle(W, 2.0, w).theta)
    )
    wrong = M.at[0, 1].set(M[0, 1] + 1.0)
    with pytest.raises(UsageError, match=r"M\[0, 1\]"):
        penalised_mle(W, 2.0, w, M=wrong)
    with pytest.raises(UsageError, match="shape"):
        penalised_mle(W, 2.0, w, M=M[:5, :5])


def test_penalised_mle_matches_choix_spread_data(spread_W):
    """Same, on a strongly separated θ (±3) with a weak ridge: large, unequal estimates."""
    n = spread_W.shape[0]
    gamma = 0.2
    fit = _pmle(spread_W, gamma, _zeros(spread_W))
    want = choix.opt_pairwise(
        n, pairs_from_W(spread_W), alpha=gamma / 2, method="Newton-CG", tol=1e-13, max_iter=10_000
    )
    assert bool(fit.converged)
    assert np.ptp(want) > 3.0  # the problem is not trivially near zero
    np.testing.assert_allclose(fit.theta, want, atol=1e-6, rtol=0)


# ----------------------------------------------------------------------------- perturbed objective


@pytest.mark.parametrize("which", ["small", "spread"])
def test_perturbed_mle_matches_scipy_and_is_stationary(small_W, spread_W, which):
    W = small_W if which == "small" else spread_W
    n = W.shape[0]
    gamma = paper_gamma(n, 0.5) if which == "small" else 0.5
    w = 8.0 * jax.random.laplace(jax.random.key(7), (n,))  # Laplace(λ = 8), i.e. ε = 1
    fit = _pmle(W, gamma, w)
    assert bool(fit.converged)
    want = scipy_solve(W, gamma, w)
    np.testing.assert_allclose(fit.theta, want, atol=1e-6, rtol=0)
    # Stationarity, computed independently of the solver: ‖∇R(θ̃)‖∞ ≤ 1e-8.
    assert grad_inf_norm(fit.theta, W, gamma, w) <= 1e-8
    # 1ᵀθ̃ = −1ᵀw/γ (docs/cai.md, Mechanisms and estimators): |1ᵀ∇R| ≤ n·1e-10 at convergence bounds the error by n·1e-10/γ.
    assert float(jnp.sum(fit.theta)) == pytest.approx(
        -float(jnp.sum(w)) / gamma, abs=n * 1e-10 / gamma + 1e-12
    )
    assert abs(float(jnp.sum(w))) > 1.0  # so the identity is not the trivial 0 = 0
    np.testing.assert_allclose(fit.theta_centred, fit.theta - jnp.mean(fit.theta), atol=1e-15)


def test_converged_flag_is_honest(small_W):
    """With one Newton iteration the solver cannot reach 1e-10: the flag must say so."""
    n = small_W.shape[0]
    gamma, w = 1.0, 8.0 * jax.random.laplace(jax.random.key(8), (n,))
    short = _pmle(small_W, gamma, w, max_iter=1)
    assert int(short.iterations) == 1
    assert not bool(short.converged)
    assert grad_inf_norm(short.theta, small_W, gamma, w) > 1e-10
    full = _pmle(small_W, gamma, w)
    assert bool(full.converged) and 1 <= int(full.iterations) < 50
    assert grad_inf_norm(full.theta, small_W, gamma, w) <= 1e-8


@pytest.fixture(scope="module")
def batch(small_theta):
    """B = 64 replicates of ER(20, 0.5) data at ε ∈ {0.2, 1, 5, ∞} (16 each), one jit+vmap call."""
    data_keys = jax.random.split(jax.random.key(20), B)
    noise_keys = jax.random.split(jax.random.key(21), B)
    Ws = jax.jit(jax.vmap(lambda k: sample_er_comparisons(k, small_theta, 0.5)))(data_keys)
    eps = jnp.repeat(jnp.array([0.2, 1.0, 5.0, jnp.inf]), B // 4)
    p = jnp.full((B,), 0.5)
    return noise_keys, Ws, eps, p, _alg1_batched(noise_keys, Ws, eps, p)


def test_converges_on_paper_data_under_jit_vmap(batch):
    """cai θ* design, every ε: every lane converged, iterations in [1, cap)."""
    *_, fits = batch
    assert bool(jnp.all(fits.converged))
    assert int(jnp.max(fits.iterations)) < 50
    assert int(jnp.min(fits.iterations)) >= 1


def test_jit_vmap_equals_single_calls_and_scipy(batch):
    keys, Ws, eps, p, fits = batch
    for b in (0, 17, 63):  # ε = 0.2, 1, ∞
        single = _alg1(keys[b], Ws[b], eps[b], p[b])
        assert bool(single.converged)
        # Both satisfy ‖∇R‖∞ ≤ 1e-10 and R is γ-strongly convex: ‖Δθ‖₂ ≤ 2√n·1e-10/γ < 1e-9.
        np.testing.assert_allclose(fits.theta[b], single.theta, atol=1e-9, rtol=0)
        # the perturbation it used is recoverable from stationarity: w = −(∇𝓛(θ̃) + γθ̃);
        # the same problem solved by scipy gives the same θ̃
        gamma = float(edge_objective_perturbation(eps[b], 20, p[b]).gamma)
        w = -(jax.grad(ref_nll_jnp)(single.theta, Ws[b]) + gamma * single.theta)
        np.testing.assert_allclose(single.theta, scipy_solve(Ws[b], gamma, w), atol=1e-6)
        assert grad_inf_norm(fits.theta[b], Ws[b], gamma, w) <= 1e-8


def test_perturbation_has_laplace_scale_8_over_eps(small_theta):
    """End-to-end calibration of Algorithm 1: the w inside θ̃ is Laplace(λ = 8κ1/ε).

    w is recovered exactly from stationarity, w = −(∇𝓛(θ̃) + γθ̃). For X ~ Laplace(λ),
    E|X| = λ and Var|X| = λ², so the mean of |w| over N = R·n i.i.d. entries has standard
    error λ/√N; with R = 5·64 = 320 replicates of n = 20 (N = 6400) that is 1.25% of λ.
    Tolerance: 4.5 SE (5.6%). A wrong calibration (λ = 4/ε, or noise scaled by γ) is off
    by ≥ 50%. The mean of w (SE √2·λ/√N) must be 0 within 4.5 SE.
    """
    n, p, eps = small_theta.shape[0], 0.5, 0.5
    lam = 8.0 / eps
    gamma = float(edge_objective_perturbation(eps, n, p).gamma)
    sample = jax.jit(
        jax.vmap(lambda k: sample_er_comparisons(jax.random.fold_in(k, 1), small_theta, p))
    )
    recover_w = jax.jit(lambda th, W: -(jax.vmap(jax.grad(ref_nll_jnp))(th, W) + gamma * th))
    ws = []
    for call in range(5):
        keys = jax.random.split(jax.random.key(300 + call), B)
        Ws = sample(keys)
        fits = _alg1_batched(keys, Ws, jnp.full((B,), eps), jnp.full((B,), p))
        assert bool(jnp.all(fits.converged))
        w = recover_w(fits.theta, Ws)
        # 1ᵀθ̃ = −1ᵀw/γ in every replicate
        np.testing.assert_allclose(fits.theta.sum(axis=1), -w.sum(axis=1) / gamma, atol=1e-8)
        ws.append(np.asarray(w))
    w = np.concatenate(ws).ravel()
    N = w.size
    assert abs(np.mean(np.abs(w)) - lam) <= 4.5 * lam / math.sqrt(N)
    assert abs(np.mean(w)) <= 4.5 * math.sqrt(2) * lam / math.sqrt(N)


def test_eps_inf_is_the_unperturbed_penalised_mle(batch, small_W):
    keys, Ws, eps, p, fits = batch
    gamma = paper_gamma(20, 0.5)
    for b in (48, 63):  # ε = ∞ lanes
        ref = _pmle(Ws[b], gamma, _zeros(Ws[b]))
        np.testing.assert_allclose(fits.theta[b], ref.theta, atol=1e-9, rtol=0)
        assert abs(float(jnp.sum(fits.theta[b]))) < 1e-9  # w = 0 ⇒ 1ᵀθ̃ = 0
    single = _alg1(jax.random.key(40), small_W, math.inf, 0.5)
    np.testing.assert_array_equal(single.theta, _pmle(small_W, gamma, _zeros(small_W)).theta)


# ----------------------------------------------------------------------------- known issue

# A complete-graph (p = 1) tournament on n = 16 items drawn from the cai design (row i: the
# items i beat). Win counts: items 10, 12, 14 have 11 wins, items 13 and 15 have 10.
_TIE_W = [
    "0100011010011000",
    "0000010001001000",
    "1101001101010011",
    "1100000000110001",
    "1111010001010000",
    "0011001010010000",
    "0101100110011000",
    "1101110001010100",
    "0111100100110110",
    "1001011010010000",
    "1110111101010101",
    "0100000000000010",
    "0011110111110110",
    "1111111001010001",
    "1101111101100101",
    "1100111111011000",
]


def test_mle_top_k_breaks_exact_ties_at_random():
    """Through the cai experiment's own methods: truth S = {10, 12, 13, 14}, k = 4.

    Item 13 or 15 takes the 4th place; each with probability 1/2 if ties are broken at
    random, so the mean relative Hamming error over R = 400 analysis keys is 1/8 with
    SE √(Var/R), Var = (1/4)²·(1/4) → SE = 0.00625; tolerance 4.5 SE. The bug gives 1/4
    (or 0) in every replicate: 20 SE away.
    """
    from dpsim.engine import Context
    from dpsim.experiments.cai import methods

    W = jnp.asarray([[float(c) for c in row] for row in _TIE_W])
    n, k = 16, 4
    wins = np.asarray(W.sum(axis=1))
    assert list(np.flatnonzero(wins == 11)) == [10, 12, 14] and list(
        np.flatnonzero(wins == 10)
    ) == [13, 15]
    np.testing.assert_array_equal(np.asarray(W + W.T), 1 - np.eye(n))
    truth_mask = jnp.zeros(n, bool).at[jnp.array([10, 12, 13, 14])].set(True)
    truth = {"theta": jnp.linspace(-1, 1, n), "top_k": truth_mask}
    shape = {"n_items": n, "k": k, "link": "logistic"}
    # one replicate at a time, as the runner does with micro-batches of one lane
    ctx = Context(shape, truth, {"W": W, "M": W + W.T}, {"p": 1.0}, {"eps": jnp.inf, "c0": 2.0})
    one = jax.jit(lambda key: (methods.mle_fn(key, ctx), methods.counts_fn(key, ctx)))
    outs = [one(key) for key in jax.random.split(jax.random.key(77), 400)]
    ham = np.array([float(o[0]["relative_hamming"]) for o in outs])
    # the counts method (integer scores) does break this tie at random
    ham_counts = np.array([float(o[1]["relative_hamming"]) for o in outs])
    assert abs(ham_counts.mean() - 0.125) <= 4.5 * 0.00625
    assert abs(ham.mean() - 0.125) <= 4.5 * 0.00625


# cai Fig. 6's lane (n = 16, m = 1000 users × L = 5 comparisons, ε = ∞, replicate 112): the
# unpenalised MLE (γ = 0) stalled at ‖∇𝓛‖∞ ≈ 1.1e-10 and hit the iteration cap, because the
# rounding of 1ᵀ∇𝓛 (which is 0 exactly) is a residual CG cannot remove on the singular
# Laplacian. btl_objective projects it out when γ = 0.
SINGULAR_CASE_W = [
    [0, 17, 23, 21, 24, 34, 33, 24, 32, 31, 28, 25, 25, 31, 23, 36],
    [15, 0, 20, 14, 41, 26, 36, 20, 31, 33, 32, 31, 20, 29, 24, 33],
    [16, 21, 0, 20, 28, 23, 40, 22, 25, 31, 22, 42, 23, 28, 20, 37],
    [24, 22, 20, 0, 30, 27, 35, 23, 29, 36, 27, 34, 20, 24, 19, 40],
    [8, 11, 10, 2, 0, 24, 28, 19, 15, 35, 21, 20, 20, 17, 23, 24],
    [13, 14, 12, 11, 21, 0, 28, 11, 28, 32, 20, 20, 16, 18, 16, 26],
    [9, 6, 8, 12, 13, 20, 0, 14, 14, 22, 10, 20, 15, 10, 14, 22],
    [21, 20, 22, 13, 23, 22, 24, 0, 22, 36, 20, 27, 27, 16, 16, 45],
    [16, 16, 11, 11, 22, 16, 27, 17, 0, 28, 15, 29, 20, 19, 17, 29],
    [5, 11, 6, 4, 17, 12, 17, 9, 12, 0, 15, 19, 11, 7, 12, 18],
    [15, 17, 10, 15, 22, 18, 38, 20, 25, 26, 0, 22, 13, 15, 9, 23],
    [8, 9, 6, 15, 20, 12, 24, 12, 24, 24, 7, 0, 20, 10, 10, 26],
    [13, 14, 23, 32, 24, 20, 31, 19, 26, 33, 24, 26, 0, 32, 24, 33],
    [14, 16, 17, 13, 22, 20, 30, 21, 20, 28, 23, 33, 17, 0, 26, 39],
    [7, 16, 23, 14, 28, 35, 22, 27, 25, 41, 27, 32, 23, 23, 0, 28],
    [9, 5, 12, 5, 12, 15, 19, 13, 16, 23, 11, 17, 7, 13, 10, 0],
]


def test_unpenalised_mle_converges_where_rounding_left_a_null_space_residual():
    W = jnp.asarray(SINGULAR_CASE_W, dtype=jnp.float64)
    n = W.shape[0]
    fit = jax.jit(penalised_mle)(W, 0.0)
    assert bool(fit.converged) and int(fit.iterations) <= 10
    assert grad_inf_norm(fit.theta, W, 0.0, jnp.zeros(n)) <= 1e-9
    want = np.asarray(choix.ilsr_pairwise_dense(np.asarray(W), tol=1e-13))
    np.testing.assert_allclose(fit.theta_centred, want - want.mean(), atol=1e-7, rtol=0)
    # With γ > 0 the gradient is left as computed: 1ᵀ∇R = γ·1ᵀθ (here 0.5 · 4.8).
    theta = jnp.linspace(-1.0, 1.0, n) + 0.3
    grad, _ = btl_objective(W, 0.5, jnp.zeros(n)).evaluate(theta)
    assert float(jnp.sum(grad)) == pytest.approx(0.5 * float(jnp.sum(theta)), abs=1e-9)
