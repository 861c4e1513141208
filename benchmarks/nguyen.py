"""Benchmark: nguyen's samplers and its Figure 1 workload, the dpsim engine against the
authors' pipeline ported to NumPy and against OpenDP.

Run ``python -m benchmarks.nguyen [--quick] [--sections A,B]`` from the repository root.
Everything is measured side by side in one run on one machine; tables are printed and
``benchmarks/results/nguyen.json`` is written (``nguyen_quick.json`` / ``nguyen_partial.json``
for a smoke run or a subset; git-ignored). Timing, the results file and the command line
are the shared :mod:`benchmarks.harness`.

Sections
--------
A. Samplers, draws per second (warm, best of several calls):
   1. dpsim: ``dpsim.mechanisms.discrete_gaussian(key, sigma, (N,))`` and
      ``discrete_laplace(key, scale, (N,))``, jitted, N = 10⁶ draws per call;
   2. OpenDP (the library a user would pick; exact, hardened samplers in Rust):
      ``make_gaussian`` / ``make_laplace`` on an integer vector domain, one call on a vector of
      N zeros;
   3. the authors' samplers ported to NumPy (nguyen supp. §4, nguyen §4.2; docs/nguyen.md, Mechanisms and estimators; written from
      the algorithms, not copied): the discrete Gaussian by CKS20's rejection loops with
      Bernoulli(exp(−γ)) trials, and the discrete Laplace as "0 w.p. (1 − α)/(1 + α), else a
      signed geometric", one Python call per draw (the authors draw one count at a time).
   at σ (scale) ∈ {1, 10, 1000, 10⁵} (the figures need σ from ≈ 10 to ≈ 10⁵).
B. The Figure 1 workload in the authors' (``paper``) mode: m ∈ {25, 50, 100, 200},
   n ∈ {200, 1000}, the twelve ε*, five estimators per trial (non-private, dense and sparse
   Gaussian, Laplace, RR), R trials.
   1. engine: ``run_experiment(nguyen-fig1, reps=R, mode=paper)`` end to end into a fresh
      directory, cold (compile included) and the best warm re-run
      (:func:`benchmarks.harness.measure_engine`);
   2. the authors' pipeline, one trial at a time in NumPy: data drawn entry by entry as their
      ``generate_data``, Y by a matrix product, each count noised by one call of the ported
      sampler, clipping and regularisation, their power iterations (lazy chain for the private
      estimates, jump chain for the non-private and RR ones); one trial per (m, n) is timed
      and the per-trial time is multiplied by R (the trials of a shape cost the same);
   3. the same pipeline with the data vectorised and each matrix of counts noised by one
      OpenDP call (what a user would write with an off-the-shelf sampler);
   4. the pipeline vectorised over trials (no loop over trials): the R trials of a shape
      drawn at once, per ε every trial's releases noised by one vectorised NumPy sampler call
      (CKS20's rejection loop over all pending draws at once; floating-point acceptance) and
      their power iterations run as one batched iteration; timed in full (every shape, R
      trials), not extrapolated.
   A fit is one estimate (method, ε, trial); all three do the same 12 × 5 fits per trial.
P. Where the engine's Fig. 1 time goes: at the largest shape (m = 200, n = 1000; paper mode,
   R trials), the engine run with all five methods and then with each method alone (the
   experiment with that one method; the responses, counts and non-private fits are drawn in
   every run), warm: seconds, compute seconds (chunk calls, summed over the threads) and the
   mean power iterations of its fits.

The NumPy baselines run with one OpenBLAS thread (:mod:`benchmarks`). ``--quick`` shrinks
everything (10⁵ dpsim draws, fewer baseline draws, Fig. 1 at m = 25 only with 4 trials); its
ratios are not representative. The load average is recorded: the machine may be shared.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

from benchmarks import harness  # first: sets the BLAS threads before NumPy loads

import jax
import numpy as np

from dpsim.engine.registry import installed
from dpsim.mechanisms import discrete
from dpsim.mechanisms.shuffle import shuffle_rr_epsilon
from dpsim.mechanisms.sparsify import sparsification_p0
from dpsim.mechanisms.zcdp import dp_to_zcdp_paper
from dpsim.models.rasch import authors_difficulties

PAPER = "nguyen"
EPS = [0.01, 0.05, 0.075, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 5.0, 7.5]
DELTA = 1e-4
TARGETS = {
    "engine_vs_authors_fig1": 100.0,
    "dpsim_vs_opendp_gaussian_draws": 10.0,
    "engine_vs_vectorised_fig1": 1.0,
}  # issue 25: the engine (warm) ahead of the vectorised baseline
VECTORISED = "vectorised NumPy (trials batched)"


@dataclass(frozen=True)
class Config:
    dpsim_draws: int  # A: draws per dpsim call
    opendp_draws: int  # A: draws per OpenDP call
    port_draws: int  # A: draws of the NumPy port timed
    sigmas: tuple  # A
    fig1_items: tuple  # B
    fig1_users: tuple
    fig1_reps: int  # B: trials per grid point (engine); baselines time one per shape
    warm_runs: int
    profile_shape: tuple = (200, 1000)  # P: (m, n)


FULL = Config(
    dpsim_draws=1_000_000,
    opendp_draws=100_000,
    port_draws=20_000,
    sigmas=(1.0, 10.0, 1000.0, 1e5),
    fig1_items=(25, 50, 100, 200),
    fig1_users=(200, 1000),
    fig1_reps=20,
    warm_runs=2,
)
QUICK = Config(
    dpsim_draws=100_000,
    opendp_draws=10_000,
    port_draws=2_000,
    sigmas=(10.0, 1000.0),
    fig1_items=(25,),
    fig1_users=(200,),
    fig1_reps=4,
    warm_runs=1,
    profile_shape=(25, 200),
)


# ----------------------------------------------------------------------------- the authors' samplers (port)


def bernoulli_exp(rng, gamma: float) -> int:
    """1 with probability exp(−γ) (CKS20 Algorithm 1; nguyen §4.2 ``BernExp``)."""
    if gamma <= 1.0:
        k = 1
        while rng.random() < gamma / k:
            k += 1
        return k % 2
    for _ in range(int(math.floor(gamma))):
        if not bernoulli_exp(rng, 1.0):
            return 0
    return bernoulli_exp(rng, gamma - math.floor(gamma))


def discrete_gaussian_port(rng, sigma: float) -> int:
    """One N_ℤ(0, σ²) draw by CKS20 Algorithm 3 (nguyen §4.2 ``DiscreteGaussian``)."""
    t = math.floor(sigma) + 1
    while True:
        u = int(rng.integers(0, t))
        if not bernoulli_exp(rng, u / t):
            continue
        v = 0
        while bernoulli_exp(rng, 1.0):
            v += 1
        b = rng.random() < 0.5
        if b and u == 0 and v == 0:
            continue
        z = (1 - 2 * b) * (u + t * v)
        if bernoulli_exp(rng, (abs(z) - sigma * sigma / t) ** 2 / (2 * sigma * sigma)):
            return z


def discrete_laplace_port(rng, scale: float) -> int:
    """One Lap_ℤ(t) draw as the authors' code: 0 w.p. (1 − α)/(1 + α), α = e^{−1/t}, else a
    signed Geometric(1 − α) on {1, 2, …} (docs/nguyen.md, Mechanisms and estimators)."""
    alpha = math.exp(-1.0 / scale)
    if rng.random() < (1 - alpha) / (1 + alpha):
        return 0
    g = int(rng.geometric(-math.expm1(-1.0 / scale)))
    return g if rng.random() < 0.5 else -g


# ----------------------------------------------------------------------------- A. samplers


def _opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def opendp_sampler(kind: str, scale: float):
    dp = _opendp()
    domain = dp.vector_domain(dp.atom_domain(T=int))
    if kind == "gaussian":
        return dp.m.make_gaussian(domain, dp.l2_distance(T=int), scale)
    return dp.m.make_laplace(domain, dp.l1_distance(T=int), scale)


def section_a(bench: harness.Bench) -> dict:
    cfg = bench.cfg
    rows, out = [], []
    for kind in ("gaussian", "laplace"):
        fn = discrete.discrete_gaussian if kind == "gaussian" else discrete.discrete_laplace
        draw = jax.jit(lambda key, s, fn=fn: fn(key, s, (cfg.dpsim_draws,)))
        port = discrete_gaussian_port if kind == "gaussian" else discrete_laplace_port
        for sigma in cfg.sigmas:
            jax.block_until_ready(draw(jax.random.key(0), sigma))
            keys = iter(range(1, 1000))
            dpsim_s = harness.best_of(lambda: draw(jax.random.key(next(keys)), sigma), repeats=5)
            mech = opendp_sampler(kind, sigma)
            zeros = [0] * cfg.opendp_draws
            t0 = time.perf_counter()
            mech(zeros)
            opendp_s = time.perf_counter() - t0
            rng = np.random.default_rng(0)
            t0 = time.perf_counter()
            for _ in range(cfg.port_draws):
                port(rng, sigma)
            port_s = time.perf_counter() - t0
            rec = {
                "sampler": kind,
                "scale": sigma,
                "dpsim_draws_per_s": cfg.dpsim_draws / dpsim_s,
                "opendp_draws_per_s": cfg.opendp_draws / opendp_s,
                "authors_port_draws_per_s": cfg.port_draws / port_s,
            }
            rec["dpsim_vs_opendp"] = harness.ratio(
                rec["dpsim_draws_per_s"], rec["opendp_draws_per_s"]
            )
            rec["dpsim_vs_authors_port"] = harness.ratio(
                rec["dpsim_draws_per_s"], rec["authors_port_draws_per_s"]
            )
            out.append(rec)
            rows.append(
                [
                    kind,
                    sigma,
                    rec["dpsim_draws_per_s"] / 1e6,
                    rec["opendp_draws_per_s"] / 1e6,
                    rec["authors_port_draws_per_s"] / 1e6,
                    rec["dpsim_vs_opendp"],
                    rec["dpsim_vs_authors_port"],
                ]
            )
    harness.print_table(
        harness.format_table(
            "A. sampler throughput (M draws/s)",
            (
                "sampler",
                "σ or t",
                "dpsim",
                "OpenDP",
                "authors (NumPy port)",
                "dpsim ÷ OpenDP",
                "dpsim ÷ port",
            ),
            rows,
            (None, "{:g}", "{:.3f}", "{:.4f}", "{:.4f}", "{:.0f}×", "{:.0f}×"),
        )
    )
    return {"rows": out}


# ----------------------------------------------------------------------------- B. Fig. 1 workload


def _regularise(Y):
    support = ((Y != 0) | (Y.T != 0)) & ~np.eye(Y.shape[0], dtype=bool)
    return Y + support


def _power(P, tol, cap):
    pi = np.ones(P.shape[0])
    for _ in range(cap):
        nxt = pi @ P
        nxt /= nxt.sum()
        done = np.linalg.norm(nxt - pi) < tol
        pi = nxt
        if done:
            break
    return pi


def spectral_jump(Y):
    """The authors' non-private estimator: jump chain, power iteration (tol 1e-6, ≤ 10000)."""
    Yb = _regularise(Y)
    d = np.maximum(Yb.sum(1), 1.0)
    P = Yb / d[:, None]
    P[np.diag_indices_from(P)] = 1.0 - P.sum(1)
    pi = _power(P, 1e-6, 10000) / d
    logs = np.log(pi / pi.sum())
    return logs - logs.mean()


def spectral_lazy(Y):
    """The authors' private estimator: lazy chain with one scalar d, tol 1e-5, ≤ 1000."""
    Yb = _regularise(Y)
    d = Yb.sum(1).max() + 1.0
    P = Yb / d
    P[np.diag_indices_from(P)] = 1.0 - P.sum(1)
    logs = np.log(_power(P, 1e-5, 1000))
    return logs - logs.mean()


def noised(Y, graph, noise):
    """Ỹ as coded (docs/nguyen.md, Mechanisms and estimators): noise on queried non-zero counts, max(1, ·), 0 off the graph."""
    out = np.where(graph, Y, 0.0)
    idx = np.argwhere(graph & (Y != 0))
    values = noise(len(idx))
    out[idx[:, 0], idx[:, 1]] = np.maximum(1.0, Y[idx[:, 0], idx[:, 1]] + values)
    return out


def authors_trial(rng, beta, theta, vectorised: bool) -> int:
    """One Fig. 1 trial of the authors' pipeline at every ε (paper mode); returns the fits.
    ``vectorised``: NumPy data and one OpenDP call per noised matrix (baseline B.3)."""
    m, n = beta.size, theta.size
    prob = 1.0 / (1.0 + np.exp(-(theta[None, :] - beta[:, None])))  # items × users
    if vectorised:
        x = rng.random((m, n)) < prob
    else:
        x = np.zeros((m, n), bool)
        for i in range(m):
            for l in range(n):
                rng.random()  # the observation draw (p = 1)
                x[i, l] = rng.random() < prob[i, l]
    right, wrong = x.astype(float), (~x).astype(float)
    Y = right @ wrong.T
    np.fill_diagonal(Y, 0.0)
    fits = 0
    spectral_jump(Y)
    fits += len(EPS)  # the non-private row of every ε
    dense = ~np.eye(m, dtype=bool)
    p0 = sparsification_p0(m, "code_synthetic")
    n_rr = shuffle_rr_epsilon
    for eps in EPS:
        eps0 = math.sqrt(2.0 * float(dp_to_zcdp_paper(eps, DELTA)))
        upper = np.triu(rng.random((m, m)) < p0, 1)
        sparse = upper | upper.T
        for graph in (dense, sparse):
            sigma = 1.0 / (eps0 / math.sqrt(graph.sum() / 2.0))
            if vectorised:
                mech = opendp_sampler("gaussian", sigma)
                noise = lambda k, mech=mech: np.asarray(mech([0] * k), float)
            else:
                noise = lambda k, sigma=sigma: np.array(
                    [discrete_gaussian_port(rng, sigma) for _ in range(k)], float
                )
            spectral_lazy(noised(Y, graph, noise))
        t = m * (m - 1) / eps
        if vectorised:
            mech = opendp_sampler("laplace", t)
            noise = lambda k, mech=mech: np.asarray(mech([0] * k), float)
        else:
            noise = lambda k: np.array([discrete_laplace_port(rng, t) for _ in range(k)], float)
        spectral_lazy(noised(Y, dense, noise))
        eps_rr = n_rr(eps, DELTA, n)
        flip = rng.random((m, n)) < 1.0 / (1.0 + math.exp(eps_rr / m))
        released = x ^ flip
        Yr = released.astype(float) @ (~released).astype(float).T
        np.fill_diagonal(Yr, 0.0)
        spectral_jump(Yr)
        fits += 4
    return fits


def time_authors(cfg: Config, vectorised: bool) -> dict:
    """One timed trial per (m, n); the workload's time is Σ per-trial time × R."""
    per_shape, total_s, total_fits = [], 0.0, 0
    for m in cfg.fig1_items:
        beta = authors_difficulties(m)
        for n in cfg.fig1_users:
            rng = np.random.default_rng(m * 7919 + n)
            theta = rng.normal(size=n)
            t0 = time.perf_counter()
            fits = authors_trial(rng, beta, theta, vectorised)
            seconds = time.perf_counter() - t0
            per_shape.append({"n_items": m, "n_users": n, "trial_s": seconds, "fits": fits})
            total_s += seconds * cfg.fig1_reps
            total_fits += fits * cfg.fig1_reps
    name = "NumPy + OpenDP (vectorised)" if vectorised else "authors' pipeline (NumPy port)"
    return {
        "name": name,
        "per_shape": per_shape,
        "extrapolated_s": total_s,
        "fits": total_fits,
        "fits_per_s": harness.ratio(total_fits, total_s),
    }


def section_b(bench: harness.Bench) -> dict:
    cfg = bench.cfg
    fig1 = installed().experiments["nguyen-fig1"]
    overrides = {
        "n_items": list(cfg.fig1_items),
        "n_users": list(cfg.fig1_users),
        "mode": ["paper"],
    }
    engine = harness.measure_engine(
        fig1, cfg.fig1_reps, warm_runs=cfg.warm_runs, overrides=overrides
    )
    authors = time_authors(cfg, vectorised=False)
    opendp = time_authors(cfg, vectorised=True)
    vec = time_vectorised(cfg)
    harness.print_table(
        harness.format_table(
            "B. baselines: one timed trial per (m, n), seconds",
            ("m", "n", "authors' port", "NumPy + OpenDP"),
            [
                [a["n_items"], a["n_users"], a["trial_s"], o["trial_s"]]
                for a, o in zip(authors["per_shape"], opendp["per_shape"])
            ],
            ("{}", "{}", "{:.2f}", "{:.2f}"),
        )
    )
    stats = {
        authors["name"]: {"fits_timed": authors["fits"], "fits_per_s": authors["fits_per_s"]},
        opendp["name"]: {"fits_timed": opendp["fits"], "fits_per_s": opendp["fits_per_s"]},
        VECTORISED: {"fits_timed": vec["fits"], "fits_per_s": vec["fits_per_s"]},
    }
    harness.print_table(
        harness.contender_table(
            f"B. Fig. 1 workload (paper mode, R = {cfg.fig1_reps})",
            {"engine cold": engine["cold"], "engine warm": engine["warm"]}
            if engine["warm"]
            else {"engine cold": engine["cold"]},
            stats,
            engine["cold"]["fits"],
        )
    )
    rows = harness.compare(
        {"cold": engine["fits_per_s"], "compiled": engine["fits_per_s_excl_compile"]},
        {
            authors["name"]: authors["fits_per_s"],
            opendp["name"]: opendp["fits_per_s"],
            VECTORISED: vec["fits_per_s"],
        },
        targets={
            authors["name"]: TARGETS["engine_vs_authors_fig1"],
            ("compiled", VECTORISED): TARGETS["engine_vs_vectorised_fig1"],
        },
    )
    harness.print_table(harness.comparison_table("B. engine ÷ baselines (fits per second)", rows))
    agree = vectorised_agreement(cfg.fig1_items[0])
    print(f"vectorised spectral estimators vs the port's on the same counts: max |Δ| {agree:.1e}")
    return {
        "total_fits": engine["cold"]["fits"],
        "engine": engine,
        "authors": authors,
        "numpy_opendp": opendp,
        "vectorised": vec,
        "vectorised_agreement_max_abs_diff": agree,
        "comparison": rows,
    }


# ----------------------------------------------------------------------------- vectorised NumPy


def discrete_laplace_numpy(rng, scale: np.ndarray) -> np.ndarray:
    """Lap_ℤ(t) draws, one per entry of ``scale``, all at once (the authors' rule, docs/nguyen.md, Mechanisms and estimators:
    0 w.p. (1 − α)/(1 + α), α = e^{−1/t}, else a signed Geometric(1 − α))."""
    alpha = np.exp(-1.0 / scale)
    g = rng.geometric(-np.expm1(-1.0 / scale))
    sign = np.where(rng.random(scale.shape) < 0.5, 1, -1)
    return np.where(rng.random(scale.shape) < (1 - alpha) / (1 + alpha), 0, sign * g)


def discrete_gaussian_numpy(rng, sigma: np.ndarray) -> np.ndarray:
    """N_ℤ(0, σ²) draws, one per entry of ``sigma``, by CKS20 Algorithm 3 vectorised: every
    pending entry proposes at once, the rejected ones propose again (floating-point
    acceptance tests, where the port and OpenDP are exact)."""
    out = np.zeros(sigma.shape, dtype=np.int64)
    pending = np.arange(sigma.size)
    flat_sigma = sigma.ravel()
    while pending.size:
        s = flat_sigma[pending]
        t = np.floor(s) + 1
        u = np.floor(rng.random(pending.size) * t)
        v = (
            rng.geometric(-np.expm1(-1.0), pending.size) - 1
        )  # successes of Bern(e^{−1}) before a failure
        b = rng.random(pending.size) < 0.5
        z = np.where(b, -1, 1) * (u + t * v)
        accept = (
            (rng.random(pending.size) < np.exp(-u / t))
            & ~(b & (u == 0) & (v == 0))
            & (rng.random(pending.size) < np.exp(-((np.abs(z) - s * s / t) ** 2) / (2 * s * s)))
        )
        out.ravel()[pending[accept]] = z[accept]
        pending = pending[~accept]
    return out


def regularise_batched(Y: np.ndarray) -> np.ndarray:
    """:func:`_regularise` of (k, m, m) count matrices."""
    support = ((Y != 0) | (np.swapaxes(Y, 1, 2) != 0)) & ~np.eye(Y.shape[1], dtype=bool)
    return Y + support


def power_batched(P: np.ndarray, tol: float, cap: int) -> np.ndarray:
    """:func:`_power` on (k, m, m) chains at once; a chain leaves the batch when it converges."""
    pi = np.ones(P.shape[:2])
    live = np.arange(P.shape[0])
    for _ in range(cap):
        nxt = np.einsum("km,kmn->kn", pi[live], P[live])
        nxt /= nxt.sum(axis=1, keepdims=True)
        done = np.linalg.norm(nxt - pi[live], axis=1) < tol
        pi[live] = nxt
        live = live[~done]
        if live.size == 0:
            break
    return pi


def spectral_jump_batched(Y: np.ndarray) -> np.ndarray:
    """:func:`spectral_jump` of (k, m, m) count matrices."""
    Yb = regularise_batched(Y)
    d = np.maximum(Yb.sum(2), 1.0)
    P = Yb / d[..., None]
    idx = np.arange(Y.shape[1])
    P[:, idx, idx] = 1.0 - P.sum(2)
    pi = power_batched(P, 1e-6, 10000) / d
    logs = np.log(pi / pi.sum(axis=1, keepdims=True))
    return logs - logs.mean(axis=1, keepdims=True)


def spectral_lazy_batched(Y: np.ndarray) -> np.ndarray:
    """:func:`spectral_lazy` of (k, m, m) count matrices."""
    Yb = regularise_batched(Y)
    d = Yb.sum(2).max(axis=1) + 1.0
    P = Yb / d[:, None, None]
    idx = np.arange(Y.shape[1])
    P[:, idx, idx] = 1.0 - P.sum(2)
    logs = np.log(power_batched(P, 1e-5, 1000))
    return logs - logs.mean(axis=1, keepdims=True)


def noised_batched(
    rng, Y: np.ndarray, graph: np.ndarray, sigma: np.ndarray | None, scale: float | None
):
    """:func:`noised` of (k, m, m) matrices: discrete Gaussian noise of per-matrix σ (k,) or
    discrete Laplace of scale t, one vectorised draw for every queried non-zero count."""
    out = np.where(graph, Y, 0.0)
    mask = graph & (Y != 0)
    if sigma is not None:
        noise = discrete_gaussian_numpy(rng, np.broadcast_to(sigma[:, None, None], Y.shape)[mask])
    else:
        noise = discrete_laplace_numpy(rng, np.full(int(mask.sum()), float(scale)))
    out[mask] = np.maximum(1.0, Y[mask] + noise)
    return out


def vectorised_trials(rng, beta: np.ndarray, theta: np.ndarray, reps: int) -> int:
    """``reps`` Fig. 1 trials of one (m, n) at once, paper mode, every ε: the data for all
    trials in one draw, Y by one batched product, per ε the dense and sparse Gaussian and the
    Laplace releases of all trials noised in one vectorised draw each and their lazy chains
    solved by one batched power iteration, the RR releases' jump chains likewise. Returns the
    fits (60 per trial, as :func:`authors_trial`)."""
    m, n = beta.size, theta.size
    prob = 1.0 / (1.0 + np.exp(-(theta[None, :] - beta[:, None])))
    x = rng.random((reps, m, n)) < prob
    Y = np.einsum("rin,rjn->rij", x.astype(float), (~x).astype(float))
    idx = np.arange(m)
    Y[:, idx, idx] = 0.0
    spectral_jump_batched(Y)
    fits = reps * len(EPS)
    dense = np.broadcast_to(~np.eye(m, dtype=bool), (reps, m, m))
    p0 = sparsification_p0(m, "code_synthetic")
    for eps in EPS:
        eps0 = math.sqrt(2.0 * float(dp_to_zcdp_paper(eps, DELTA)))
        upper = np.triu(rng.random((reps, m, m)) < p0, 1)
        sparse = upper | np.swapaxes(upper, 1, 2)
        releases = [
            noised_batched(
                rng, Y, graph, 1.0 / (eps0 / np.sqrt(graph.sum(axis=(1, 2)) / 2.0)), None
            )
            for graph in (dense, sparse)
        ]
        releases.append(noised_batched(rng, Y, dense, None, m * (m - 1) / eps))
        spectral_lazy_batched(np.concatenate(releases))
        flip = rng.random((reps, m, n)) < 1.0 / (
            1.0 + math.exp(shuffle_rr_epsilon(eps, DELTA, n) / m)
        )
        released = x ^ flip
        Yr = np.einsum("rin,rjn->rij", released.astype(float), (~released).astype(float))
        Yr[:, idx, idx] = 0.0
        spectral_jump_batched(Yr)
        fits += 4 * reps
    return fits


def vectorised_agreement(m: int, reps: int = 3, seed: int = 11) -> float:
    """max |batched − one-matrix-at-a-time| of the jump and lazy spectral estimates on the
    same count matrices (the vectorised baseline's estimators against the port's)."""
    rng = np.random.default_rng(seed)
    Y = rng.integers(0, 6, (reps, m, m)).astype(float)
    Y[:, np.arange(m), np.arange(m)] = 0.0
    return float(
        max(
            np.abs(spectral_jump_batched(Y) - np.stack([spectral_jump(y) for y in Y])).max(),
            np.abs(spectral_lazy_batched(Y) - np.stack([spectral_lazy(y) for y in Y])).max(),
        )
    )


def time_vectorised(cfg: Config) -> dict:
    """The vectorised baseline: every (m, n) with its R trials batched, timed in full."""
    per_shape, total_s, total_fits = [], 0.0, 0
    vectorised_trials(
        np.random.default_rng(1),
        authors_difficulties(cfg.fig1_items[0]),
        np.random.default_rng(2).normal(size=cfg.fig1_users[0]),
        1,
    )  # warm-up, untimed
    for m in cfg.fig1_items:
        beta = authors_difficulties(m)
        for n in cfg.fig1_users:
            rng = np.random.default_rng(m * 7919 + n + 1)
            theta = rng.normal(size=n)
            t0 = time.perf_counter()
            fits = vectorised_trials(rng, beta, theta, cfg.fig1_reps)
            seconds = time.perf_counter() - t0
            per_shape.append(
                {
                    "n_items": m,
                    "n_users": n,
                    "trials": cfg.fig1_reps,
                    "seconds": seconds,
                    "fits": fits,
                }
            )
            total_s += seconds
            total_fits += fits
    return {
        "name": VECTORISED,
        "per_shape": per_shape,
        "seconds": total_s,
        "fits": total_fits,
        "fits_per_s": harness.ratio(total_fits, total_s),
    }


# ----------------------------------------------------------------------------- P. where the time goes


def mean_iterations(table) -> dict:
    """The mean power iterations of a results table's fits (0 for exact solves)."""
    return {"iterations_mean": float(table["iterations"].mean())}


def only_method(fig1, method: str):
    """nguyen-fig1 with the one method ``method`` (its own name, so its programs are its own)."""
    return dataclasses.replace(
        fig1, name=f"{fig1.name}-{method}-only", methods={method: fig1.methods[method]}
    )


def section_p(bench: harness.Bench) -> dict:
    cfg = bench.cfg
    fig1 = installed().experiments["nguyen-fig1"]
    m, n = cfg.profile_shape
    overrides = {"n_items": [m], "n_users": [n], "mode": ["paper"]}
    rows = []
    for method in ("all", *fig1.methods):
        experiment = fig1 if method == "all" else only_method(fig1, method)
        run = harness.measure_engine(
            experiment, cfg.fig1_reps, warm_runs=1, overrides=overrides, describe=mean_iterations
        )
        warm = run["warm"]
        rows.append(
            {
                "method": method,
                "fits": warm["fits"],
                "warm_wall_s": warm["wall_s"],
                "compute_s": warm["compute_s"],
                "compile_s": run["cold"]["compile_s"],
                "iterations_mean": warm["iterations_mean"],
            }
        )
    alone = sum(r["compute_s"] for r in rows[1:])
    harness.print_table(
        harness.format_table(
            f"P. where the engine's Fig. 1 time goes: m = {m}, n = {n}, paper mode, R = {cfg.fig1_reps}, warm; "
            "each method alone (the data and non-private fits drawn in every run)",
            (
                "method",
                "fits",
                "wall s",
                "compute s",
                "share of the methods alone",
                "compile s",
                "mean iterations",
            ),
            [
                [
                    r["method"],
                    r["fits"],
                    r["warm_wall_s"],
                    r["compute_s"],
                    None if r["method"] == "all" else r["compute_s"] / alone,
                    r["compile_s"],
                    r["iterations_mean"],
                ]
                for r in rows
            ],
            (None, "{}", "{:.3f}", "{:.3f}", "{:.0%}", "{:.1f}", "{:.0f}"),
        )
    )
    return {"n_items": m, "n_users": n, "reps": cfg.fig1_reps, "rows": rows}


SECTIONS = (
    harness.Section("A", "sampler throughput: dpsim vs OpenDP vs the authors' sampler", section_a),
    harness.Section(
        "B", "Fig. 1 workload: engine vs the authors' pipeline vs vectorised NumPy", section_b
    ),
    harness.Section("P", "where the engine's Fig. 1 time goes, method by method", section_p),
)


def main(argv=None) -> dict:
    return harness.main(
        PAPER,
        SECTIONS,
        full=FULL,
        quick=QUICK,
        targets=TARGETS,
        argv=argv,
        description=__doc__.splitlines()[0],
    )


if __name__ == "__main__":
    main()
