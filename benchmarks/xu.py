"""Benchmark: the dpsim engine on xu's largest grid, Scenario III (Fig. 4), against a
per-replicate NumPy/SciPy loop of the same pipeline.

Run ``python -m benchmarks.xu [--quick] [--sections A,G,C]`` from the repository root. Tables
are printed and ``benchmarks/results/xu.json`` is written (``xu_quick.json`` with
``--quick``, ``xu_partial.json`` for a subset; both git-ignored). Timing, the results file
and the command line are the shared :mod:`benchmarks.harness`.

Sections
--------
A. Scenario III (``xu-fig4``): (L, m, Δ) ∈ {50, 100, 200, 400} × {10, 20, 30} × {0.05, 0.1,
   0.15, 0.2}, ε = 1, 100 replicates: 4800 replicates, one fit each (debiased RR, λ = G/L).
   1. engine: ``run_experiment(FIG4, reps)`` end to end (θ* per replicate, raw wins as
      binomial counts, the RR release, the ridge M-estimator by truncated Newton, the six
      metrics, Parquet writes) into fresh directories: a cold run (compiled programs of the
      process forgotten first) and the best of three warm re-runs
      (:func:`benchmarks.harness.measure_engine`).
   2. NumPy/SciPy loop, the same pipeline one replicate at a time, as a researcher would
      write it without dpsim: θ* (the permuted ladder), n1 ~ Bin(L, p*) per pair and the RR
      counts Bin(n1, 1 − p_ε) + Bin(L − n1, p_ε) with NumPy's generator, z̄, λ = G(ε)/L, and
      ``scipy.optimize.minimize(method="L-BFGS-B")`` on eq. (3) with its analytic gradient
      (gtol 1e-9, from θ = 0), then ℓ∞, ℓ2/√m, the Kendall distance (ties ½) and the
      expected H_K. A subset of replicates spread over the grid is timed and the time per
      replicate extrapolated to the workload.
   3. vectorised NumPy, the same pipeline with no loop over replicates: per grid cell its
      replicates' θ*, raw wins and RR counts drawn in one call each, eq. (3) solved for all of
      them by one batched damped Newton (gradients by one product, (R, m, m) Hessians, one
      batched ``np.linalg.solve`` per step; the engine's sum penalty and tolerance
      ‖∇‖∞ ≤ 1e-10·m; :mod:`benchmarks.vectorised`) and the metrics batched. The whole
      workload is timed (not extrapolated). Target (issue 25): the compiled engine ≥ 5× it
      (and ≥ 15× the SciPy loop).
   4. the engine again at micro-batch 32 (what ``$DPSIM_MICRO_BATCH=32`` gives: lanes vmapped
      instead of one at a time, the CPU policy's choice for this workload), cold and warm,
      beside the same baselines (no target).
   5. where a warm run's wall time goes, at the policy's micro-batch and at 32: the code
      fingerprint, the cell tables, the files' flushes (fsync; these may overlap chunks), the
      chunk calls (busy) and the rest of the host (keys, rows, Parquet, summaries, manifest),
      with the process's CPU seconds (:func:`engine_split`). A warm run reuses the process's
      compiled programs, cells and fingerprint; the cold run makes all three. On a shared
      machine the CPU seconds of a warm run and of the vectorised baseline are compared too.
P. Where a replicate's time goes (jitted, 200 replicates vmapped in one call, so that
   dispatch is not counted, best of 20): the engine's path on the ladder, i.e. the raw wins and the RR
   count drawn through the cell's alias tables (one 64-bit word per pair, ``model.ladder_counts``),
   the fit and the six metrics, and beside them (not in "all") the same draws by
   ``jax.random.binomial`` (the raw wins, one binomial per pair; the RR release, two binomials per pair with
   per-pair counts), the path of a θ* not known before tracing, at (m, L) = (10, 400) and (30, 400), Δ = 0.1;
   the engine's stages also one lane at a time (``lax.map`` over the same replicates in one
   call, as the runner maps lanes on CPU at micro-batch 1);
   beside each stage the vectorised NumPy baseline's time for the same stage (200 replicates
   of the cell in arrays, best of 5), so the stage that keeps the engine behind it is named.
   Then the binomial samplers per draw (``jax.random.binomial``, NumPy's ``Generator.binomial``
   and the threefry uniforms one BTRS try consumes) and what they allow: the vectorised
   baseline's whole time per replicate ÷ the engine's binomial stages alone is the most the
   engine can be ahead with JAX's exact sampler, beside the time budget the 5× target leaves;
   the same against the SciPy loop at the same cells (its replicates timed one by one).
G. Agreement on the same z̄: max |θ̂_engine − θ̂_SciPy| and max |θ̂_engine − θ̂_vectorised|
   (engine: ‖∇‖∞ ≤ 1e-10·m).
C. ``dpsim run xu-fig4`` in a fresh process without a persistent compilation cache
   (imports and compilation included), at the configured replicates.

The NumPy/SciPy loop runs with one OpenBLAS thread (:mod:`benchmarks`) in one process; the
engine uses XLA's threads and the runner's concurrent chunks. The load average is recorded:
the machine may be shared. ``--quick``: 4 replicates, few SciPy lanes, one warm re-run;
its ratios are not representative.
"""

from __future__ import annotations

import math
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass

from benchmarks import harness  # first: sets the BLAS threads before NumPy loads

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize  # imported here, outside every timing

from benchmarks import binomial
from benchmarks.vectorised import batched_newton
from dpsim.estimators.debiased_m import (
    SOLVER_TOL,
    SUM_PENALTY,
    _with_sum_penalty,
    debiased_m_estimator,
    ridge_lambda,
    win_value_matrix,
)
from dpsim.estimators.btl_mle import btl_objective
from dpsim.solvers import _backtrack
from dpsim.experiments.xu import methods, model
from dpsim.experiments.xu.figures import scenarios
from dpsim.engine import Cell
from dpsim.engine.execution import planning, runner
from dpsim.engine.storage import store
from dpsim.mechanisms.pairwise_ldp import debiased_rr_mean, privatise
from dpsim.models.complete_btl import sample_pair_wins, theta_evenly_spaced_permuted

PAPER = "xu"
FIG4 = scenarios.FIG4
EPS = 1.0
SCIPY = "NumPy/SciPy L-BFGS-B loop"
VECTORISED = "vectorised NumPy (batched Newton)"
# issue 25: the compiled engine ≥ 5× the vectorised NumPy baseline and ≥ 15× the SciPy loop
TARGETS = {"engine_vs_vectorised": {"compiled": 5.0}, "engine_vs_scipy": {"compiled": 15.0}}


@dataclass(frozen=True)
class Config:
    reps: int  # replicates per grid point (A, C)
    warm_runs: int  # A: warm re-runs (best kept)
    scipy_lanes: int  # A: replicates timed in the NumPy/SciPy loop (spread over the grid)
    agreement: int  # G: replicates compared
    cli_run: bool  # C: time `dpsim run xu-fig4` in a fresh process
    bound_lanes: int  # P: SciPy-loop replicates timed per profiled cell


FULL = Config(
    reps=100,
    warm_runs=harness.WARM_RUNS,
    scipy_lanes=480,
    agreement=48,
    cli_run=True,
    bound_lanes=40,
)
QUICK = Config(reps=4, warm_runs=1, scipy_lanes=24, agreement=6, cli_run=True, bound_lanes=2)


# ----------------------------------------------------------------------------- NumPy / SciPy


def pairs(m: int):
    return np.triu_indices(m, 1)


def objective_and_gradient(theta, zbar, lam, i, j, m):
    """Eq. (3): Σ_{i<j}[z̄(θ_j − θ_i) + softplus(θ_i − θ_j)] + λ‖θ‖², and its gradient."""
    d = theta[i] - theta[j]
    value = np.sum(-zbar * d + np.logaddexp(0.0, d)) + lam * theta @ theta
    r = 1.0 / (1.0 + np.exp(-d)) - zbar
    grad = np.bincount(i, r, minlength=m) - np.bincount(j, r, minlength=m) + 2.0 * lam * theta
    return value, grad


def scipy_fit(zbar, lam, m):
    i, j = pairs(m)
    return scipy.optimize.minimize(
        objective_and_gradient,
        np.zeros(m),
        args=(zbar, lam, i, j, m),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-9, "ftol": 1e-15, "maxiter": 10_000},
    )


def kendall_half(theta_hat, theta, tol=1e-9):
    i, j = pairs(len(theta))
    d_hat, d = theta_hat[i] - theta_hat[j], theta[i] - theta[j]
    tied = np.abs(d_hat) <= tol * max(1.0, np.abs(theta_hat).max())
    return float(np.mean(((d_hat * d < 0) & ~tied) + 0.5 * (tied & (d != 0))))


def expected_hamming(theta_hat, theta, k, tol=1e-9):
    scale = tol * max(1.0, np.abs(theta_hat).max())
    diff = theta_hat[None, :] - theta_hat[:, None]
    above, tied = (diff > scale).sum(1), (np.abs(diff) <= scale).sum(1)
    p_in = np.clip(k - above, 0, tied) / tied
    true_top = np.argsort(-theta)[:k]
    return float((k - p_in[true_top].sum()) / k)


def baseline_lambda(L: int, eps: float = EPS) -> float:
    """λ = G(ε)/L, G(ε) = coth²(ε/2), as the baselines compute it without dpsim (the engine's is
    ``debiased_m.ridge_lambda``)."""
    return (1.0 / math.tanh(eps / 2.0)) ** 2 / L


def raw_wins(rng, theta: np.ndarray, L: int) -> np.ndarray:
    """n1 ~ Bin(L, σ(θ_i − θ_j)) for every pair i < j: shape (..., m(m−1)/2) for θ (..., m)."""
    i, j = pairs(theta.shape[-1])
    return rng.binomial(L, 1.0 / (1.0 + np.exp(-(theta[..., i] - theta[..., j]))))


def rr_zbar(rng, n1: np.ndarray, L: int, eps: float = EPS) -> np.ndarray:
    """The RR counts Bin(n1, 1 − p_ε) + Bin(L − n1, p_ε), then z̄ (docs/xu.md, Mechanisms and estimators)."""
    q = 1.0 / (1.0 + math.exp(eps))
    N = rng.binomial(n1, 1.0 - q) + rng.binomial(L - n1, q)
    return ((math.exp(eps) + 1.0) * N / L - 1.0) / (math.exp(eps) - 1.0)


def release(rng, theta, L, eps):
    """Raw wins and the RR counts, then z̄ (docs/xu.md, Mechanisms and estimators)."""
    return rr_zbar(rng, raw_wins(rng, theta, L), L, eps)


def ladder_thetas(rng, m: int, gap: float, reps: int) -> np.ndarray:
    """``reps`` θ* of one cell (the permuted ladder × gap), shape (reps, m)."""
    return gap * rng.permuted(np.tile(np.arange(1, m + 1) - (m + 1) / 2.0, (reps, 1)), axis=1)


@dataclass(frozen=True)
class Lane:
    m: int
    L: int
    gap: float
    seed: int


def scipy_lane(lane: Lane) -> dict:
    """One replicate end to end: θ*, raw wins, RR release, λ = G/L, the L-BFGS-B fit, metrics."""
    rng = np.random.default_rng(lane.seed)
    m = lane.m
    theta = lane.gap * rng.permutation(np.arange(1, m + 1) - (m + 1) / 2.0)
    zbar = release(rng, theta, lane.L, EPS)
    lam = baseline_lambda(lane.L)
    res = scipy_fit(zbar, lam, m)
    est = res.x - res.x.mean()
    err = est - theta
    return {
        "linf": float(np.abs(err).max()),
        "l2_rms": float(np.sqrt(np.mean(err**2))),
        "kendall": kendall_half(est, theta),
        "top_k_hamming": expected_hamming(est, theta, m // 2),
        "nit": int(res.nit),
        "grad_inf": float(np.abs(res.jac).max()),
    }


def scipy_lanes(n_lanes: int, seed: int = 0) -> list[Lane]:
    """``n_lanes`` replicates spread evenly over the Scenario III grid (m, L, Δ)."""
    grid = [
        (m, L, g) for m in scenarios.FIG4_M for L in scenarios.FIG4_L for g in scenarios.FIG4_GAP
    ]
    return [Lane(*grid[k % len(grid)], seed=seed * 100_003 + k) for k in range(n_lanes)]


# ----------------------------------------------------------------------------- vectorised NumPy


def incidence(m: int) -> tuple[np.ndarray, np.ndarray]:
    """(B (M, m) with +1 at i and −1 at j for pair e = (i, j) in triu order, B2 (M, m·m) the
    rows' outer products B_e B_eᵀ flattened): ∇ = r @ B and Σ_e w_e B_e B_eᵀ = w @ B2."""
    i, j = pairs(m)
    B = np.zeros((i.size, m))
    B[np.arange(i.size), i], B[np.arange(i.size), j] = 1.0, -1.0
    return B, (B[:, :, None] * B[:, None, :]).reshape(i.size, m * m)


def vectorised_fit(
    zbar: np.ndarray, lam: float, m: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eq. (3) for R replicates at once by :func:`benchmarks.vectorised.batched_newton`, with the
    engine's sum penalty (μ/2)(1ᵀθ)² (same minimiser) and its tolerance ‖∇‖∞ ≤ 1e-10·m.

    Args: zbar: (R, M) per-pair means; lam: λ; m: items.
    Returns: (θ̂ centred (R, m), Newton iterations (R,), final ‖∇‖∞ (R,))."""
    B, B2 = incidence(m)
    mu = SUM_PENALTY
    ridge = (2.0 * lam) * np.eye(m) + mu * np.ones((m, m))

    def derivs(theta, rows):
        s = 1.0 / (1.0 + np.exp(-(theta @ B.T)))
        grad = (s - zbar[rows]) @ B + 2.0 * lam * theta + mu * theta.sum(axis=1, keepdims=True)
        hess = ((s * (1.0 - s)) @ B2).reshape(-1, m, m) + ridge
        return grad, hess

    theta, iters, grad_inf = batched_newton(
        derivs, np.zeros((zbar.shape[0], m)), SOLVER_TOL * max(1, m)
    )
    return theta - theta.mean(axis=1, keepdims=True), iters, grad_inf


def vectorised_scores(est: np.ndarray, theta: np.ndarray, k: int, tol: float = 1e-9) -> dict:
    """ℓ∞, ℓ2/√m, Kendall (ties ½) and expected top-k Hamming of R replicates at once
    (the loop's :func:`kendall_half` and :func:`expected_hamming`, batched). Shapes (R, m)."""
    m = est.shape[1]
    i, j = pairs(m)
    err = est - theta
    scale = tol * np.maximum(1.0, np.abs(est).max(axis=1, keepdims=True))
    d_hat, d = est[:, i] - est[:, j], theta[:, i] - theta[:, j]
    tied = np.abs(d_hat) <= scale
    kendall = np.mean(((d_hat * d < 0) & ~tied) + 0.5 * (tied & (d != 0)), axis=1)
    diff = est[:, None, :] - est[:, :, None]
    above, ties = (diff > scale[..., None]).sum(2), (np.abs(diff) <= scale[..., None]).sum(2)
    p_in = np.clip(k - above, 0, ties) / ties
    true_top = np.argsort(-theta, axis=1)[:, :k]
    hamming = (k - np.take_along_axis(p_in, true_top, axis=1).sum(axis=1)) / k
    return {
        "linf": np.abs(err).max(axis=1),
        "l2_rms": np.sqrt(np.mean(err**2, axis=1)),
        "kendall": kendall,
        "top_k_hamming": hamming,
    }


def vectorised_cell(rng, m: int, L: int, gap: float, reps: int) -> dict:
    """One grid cell's ``reps`` replicates end to end in arrays: θ* (the permuted ladder), raw
    wins and the RR counts (one binomial call each for every replicate and pair), z̄, λ = G/L,
    the batched Newton fit and the metrics. Returns the metrics and solver diagnostics."""
    theta = ladder_thetas(rng, m, gap, reps)
    zbar = release(rng, theta, L, EPS)
    est, iters, grad_inf = vectorised_fit(zbar, baseline_lambda(L), m)
    return {**vectorised_scores(est, theta, m // 2), "iterations": iters, "grad_inf": grad_inf}


def vectorised_workload(reps: int, seed: int = 0) -> list[dict]:
    """The whole Scenario III grid, ``reps`` replicates per cell, cell by cell (``reps`` ≥ 1)."""
    rng = np.random.default_rng(seed)
    return [
        vectorised_cell(rng, m, L, g, reps)
        for m in scenarios.FIG4_M
        for L in scenarios.FIG4_L
        for g in scenarios.FIG4_GAP
    ]


def time_vectorised(reps: int) -> tuple[dict, list]:
    """The vectorised baseline on the whole workload (not extrapolated): one item = the grid."""
    return harness.time_baseline(
        harness.Baseline(
            VECTORISED,
            vectorised_workload,
            fits_per_item=48 * reps,
            note="replicates of a cell batched",
        ),
        [reps],
    )


# ----------------------------------------------------------------------------- sections


def engine_diagnostics(rows) -> dict:
    return {
        "converged_fraction": float(rows["converged"].astype(bool).mean()),
        "newton_iterations_mean": float(rows["iterations"].mean()),
        "newton_iterations_max": int(rows["iterations"].max()),
    }


SPLIT_MICRO = 32  # A: the micro-batch of the vmapped warm run (what $DPSIM_MICRO_BATCH=32 gives)


@contextmanager
def timed_host_stages():
    """Time a run's host stages: the code fingerprint of the folder's manifest
    (``runner.fingerprint``), the cell arrays' alias tables (``planning.step_cells``, on the
    host once per step, or reused from an earlier plan of the process) and the files' flushes
    to disk (``store._fsync``). Yields a dict that holds, once the block ends,
    ``fingerprint_s``, ``cell_tables_s`` and ``fsync_s``."""
    found = {"fingerprint_s": 0.0, "cell_tables_s": 0.0, "fsync_s": 0.0}
    originals = (runner.fingerprint, planning.step_cells, store._fsync)

    def timed(fn, name):
        def call(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                found[name] += time.perf_counter() - t0

        return call

    runner.fingerprint = timed(originals[0], "fingerprint_s")
    planning.step_cells = timed(originals[1], "cell_tables_s")
    store._fsync = timed(originals[2], "fsync_s")
    try:
        yield found
    finally:
        runner.fingerprint, planning.step_cells, store._fsync = originals


def engine_split(reps: int, micro_batch: int | None = None) -> dict:
    """One warm run (programs compiled before) split into where its wall time goes: the
    fingerprint, cell tables and flushes (:func:`timed_host_stages`), the chunk calls
    (``busy_s``: a chunk computing), and the rest of the host's work (``other_host_s``: keys,
    rows, Parquet parts, summaries, manifest), with the process's CPU seconds beside the wall."""
    with timed_host_stages() as host:
        run = harness.run_engine(FIG4, reps, fits_method="m_est", micro_batch=micro_batch)
    other = run["wall_s"] - run["busy_s"] - sum(host.values())
    return {
        "micro_batch": micro_batch,
        "wall_s": run["wall_s"],
        "cpu_s": run["cpu_s"],
        **host,
        "chunks_busy_s": run["busy_s"],
        "chunks_compute_s": run["compute_s"],
        "other_host_s": max(0.0, other),
        "batching": run["batching"],
    }


def vectorised_cpu_seconds(reps: int) -> float:
    """The process's CPU seconds of one more vectorised run of the workload (the baseline
    runs on one thread, so this is about its wall time on an idle machine)."""
    start = time.process_time()
    vectorised_workload(reps, seed=2)
    return time.process_time() - start


def split_table(splits: list[dict], vectorised_s: float) -> str:
    return harness.format_table(
        "where the engine's warm run goes (one more warm run each, wall seconds; CPU: all threads)",
        (
            "micro-batch",
            "wall s",
            "CPU s",
            "fingerprint s",
            "cell tables s",
            "fsync s",
            "chunks busy s",
            "other host s",
            "vectorised ÷ engine wall",
        ),
        [
            [
                s["micro_batch"] or "policy",
                s["wall_s"],
                s["cpu_s"],
                s["fingerprint_s"],
                s["cell_tables_s"],
                s["fsync_s"],
                s["chunks_busy_s"],
                s["other_host_s"],
                vectorised_s / s["wall_s"],
            ]
            for s in splits
        ],
        (None, "{:.3f}", "{:.3f}", "{:.3f}", "{:.3f}", "{:.3f}", "{:.3f}", "{:.3f}", "{:.2f}×"),
    )


def section_a(bench: harness.Bench) -> dict:
    cfg = bench.cfg
    engine = harness.measure_engine(
        FIG4, cfg.reps, warm_runs=cfg.warm_runs, fits_method="m_est", describe=engine_diagnostics
    )
    splits = [engine_split(cfg.reps)]  # right after the runs that compiled its programs
    micro = harness.measure_engine(
        FIG4, cfg.reps, warm_runs=cfg.warm_runs, fits_method="m_est", micro_batch=SPLIT_MICRO
    )
    splits.append(engine_split(cfg.reps, SPLIT_MICRO))
    lanes = scipy_lanes(cfg.scipy_lanes)
    scipy_lane(lanes[-1])  # warm-up, untimed (first calls of NumPy's generator and SciPy)
    stats, outputs = harness.time_baseline(
        harness.Baseline(SCIPY, scipy_lane, note="one replicate per item"), lanes
    )
    vectorised_workload(1, seed=1)  # warm-up, untimed
    vec, vec_out = time_vectorised(cfg.reps)
    vec_iters = np.concatenate([c["iterations"] for c in vec_out[0]])
    vec_grads = np.concatenate([c["grad_inf"] for c in vec_out[0]])
    total = 48 * cfg.reps
    runs = {"engine run_experiment, cold": engine["cold"]}
    if engine["warm"] is not None:
        runs[f"engine, warm re-run (best of {cfg.warm_runs})"] = engine["warm"]
    harness.print_table(
        harness.contender_table(
            f"xu Fig. 4 (Scenario III), {cfg.reps} reps: {total} replicates (draw, RR release, fit, score)",
            runs,
            {SCIPY: stats, VECTORISED: vec},
            total,
        )
    )
    targets = {
        (mode, name): value
        for name, key in ((SCIPY, "engine_vs_scipy"), (VECTORISED, "engine_vs_vectorised"))
        for mode, value in TARGETS[key].items()
    }
    # the vmapped design is judged too: a warm engine runs the programs it has compiled
    wide = f"compiled, micro-batch {SPLIT_MICRO}"
    targets[(wide, VECTORISED)] = TARGETS["engine_vs_vectorised"]["compiled"]
    rows = harness.compare(
        {
            "cold": engine["fits_per_s"],
            "compiled": engine["fits_per_s_excl_compile"],
            wide: micro["fits_per_s_excl_compile"],
        },
        {SCIPY: stats["fits_per_s"], VECTORISED: vec["fits_per_s"]},
        targets=targets,
    )
    harness.print_table(
        harness.comparison_table("engine ÷ baselines (replicates per second)", rows)
    )
    harness.print_table(split_table(splits, vec["wall_s"]))
    cpu = vectorised_cpu_seconds(cfg.reps)
    cpu_ratios = {
        "policy": cpu / engine["warm"]["cpu_s"] if engine["warm"] else None,
        f"micro-batch {SPLIT_MICRO}": cpu / micro["warm"]["cpu_s"] if micro["warm"] else None,
    }
    print(
        f"CPU seconds (all threads; the wall ratio's counterpart on a shared machine): vectorised NumPy {cpu:.3f} "
        f"s; vectorised ÷ engine warm: "
        + ", ".join(f"{k} {v:.2f}×" for k, v in cpu_ratios.items() if v)
    )
    nit = [o["nit"] for o in outputs]
    grads = [o["grad_inf"] for o in outputs]
    print(
        f"SciPy: L-BFGS-B iterations mean {np.mean(nit):.1f}, final ‖∇‖∞ median {np.median(grads):.1e}, max "
        f"{np.max(grads):.1e}; vectorised: Newton iterations mean {vec_iters.mean():.2f}, max {vec_iters.max()}, "
        f"final ‖∇‖∞ max {vec_grads.max():.1e}; one process, one BLAS thread. Engine: Newton iterations mean "
        f"{engine['cold']['newton_iterations_mean']:.2f}, converged {100 * engine['cold']['converged_fraction']:.1f}%"
    )
    return {
        "reps": cfg.reps,
        "total_replicates": total,
        "engine": engine,
        "scipy": stats,
        "scipy_lbfgs_iterations_mean": float(np.mean(nit)),
        "scipy_grad_inf_max": float(np.max(grads)),
        "vectorised": {
            **vec,
            "newton_iterations_mean": float(vec_iters.mean()),
            "newton_iterations_max": int(vec_iters.max()),
            "grad_inf_max": float(vec_grads.max()),
        },
        "engine_micro_batch": {"micro_batch": SPLIT_MICRO, **micro},
        "split": splits,
        "vectorised_cpu_s": cpu,
        "cpu_ratio_vectorised_over_engine_warm": cpu_ratios,
        "comparison": rows,
    }


def dense_newton_fit(zbar, lam, *, tol: float = SOLVER_TOL, max_iter: int = 50):
    """A design tried for the fit (section P; not the engine's): eq. (3) with the engine's sum
    penalty by Newton with a dense Cholesky solve of the (m, m) Hessian per step (formed from
    the objective's Hessian–vector products) instead of conjugate gradients, the engine's
    backtracking line search and tolerance ‖∇‖∞ ≤ tol·max(1, m), from θ = 0. Returns θ̂ centred (m,)."""
    m = int(round((1 + math.sqrt(1 + 8 * zbar.shape[0])) / 2))
    objective = _with_sum_penalty(btl_objective(win_value_matrix(zbar), 2.0 * lam, 0.0))
    eye = jnp.eye(m)

    def cond(state):
        return (jnp.max(jnp.abs(state[1])) > tol * max(1, m)) & (state[3] < max_iter)

    def body(state):
        x, g, curv, it = state
        hessian = jax.vmap(lambda v: objective.hvp(curv, v))(eye)
        step = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(hessian), -g)
        x, g, curv = _backtrack(objective, x, g, curv, step, 30)
        return x, g, curv, it + 1

    g0, c0 = objective.evaluate(jnp.zeros(m))
    x = jax.lax.while_loop(cond, body, (jnp.zeros(m), g0, c0, jnp.asarray(0)))[0]
    return x - jnp.mean(x)


def lane_profile(m: int, L: float = 400.0, gap: float = 0.1, micro: int = 200) -> dict:
    """ms per replicate of each stage, vmapped over ``micro`` replicates in one call (so that
    dispatch is not counted), and, for the engine's own stages, the same ``micro`` replicates
    one lane at a time in one call (``lax.map``, as the runner maps lanes on CPU at micro-batch 1)."""
    keys = jax.random.split(jax.random.key(m), micro)
    theta = jax.vmap(lambda k: gap * theta_evenly_spaced_permuted(k, m, 1.0))(keys)
    ladder = theta / gap
    sizes, eps = jnp.asarray([L]), jnp.asarray([EPS])
    lam = float(ridge_lambda(eps, sizes))
    cell = {"n_items": m, "n_users": int(L), "gap": gap, "eps": EPS}
    win_cell, release_cell = (
        Cell({k: jnp.asarray(v)[None] for k, v in laws(cell).items()}, jnp.int32(0))
        for laws in (model.ladder_win_laws, model.ladder_release_laws)
    )
    lanes = {
        "raw wins (tables)": lambda k, r: model.ladder_counts(k, r, win_cell, L),
        "RR release (tables)": lambda k, r: debiased_rr_mean(
            model.ladder_counts(k, r, release_cell, L), sizes, eps
        ),
        "fit": lambda z: debiased_m_estimator(z, lam).theta,
        DENSE_FIT: lambda z: dense_newton_fit(z, lam),
        "metrics": lambda e, t: methods.scores(e, t, m // 2),
        "raw wins": lambda k, t: sample_pair_wins(k, t, L),
        "RR release": lambda k, w: privatise(k, w, sizes, eps, "debiased_rr"),
    }
    stages = {name: jax.jit(jax.vmap(fn)) for name, fn in lanes.items()}
    wins = stages["raw wins"](keys, theta)
    zbar = stages["RR release"](keys, wins)
    est = stages["fit"](zbar)
    args = {
        "raw wins (tables)": (keys, ladder),
        "RR release (tables)": (keys, ladder),
        "raw wins": (keys, theta),
        "RR release": (keys, wins),
        "fit": (zbar,),
        DENSE_FIT: (zbar,),
        "metrics": (est, theta),
    }
    out, one_lane = {}, {}
    for name, fn in stages.items():
        jax.block_until_ready(fn(*args[name]))
        out[name] = 1e3 * harness.best_of(lambda: fn(*args[name]), repeats=20) / micro
        if name not in BINOMIAL_STAGES:
            single = jax.jit(lambda *a, f=lanes[name]: jax.lax.map(lambda x: f(*x), a))
            jax.block_until_ready(single(*args[name]))
            one_lane[name] = 1e3 * harness.best_of(lambda: single(*args[name]), repeats=5) / micro
    return {
        "m": m,
        "L": L,
        "micro_batch": micro,
        "ms_per_replicate": out,
        "ms_per_replicate_one_lane": one_lane,
    }


BINOMIAL_STAGES = (
    "raw wins",
    "RR release",
)  # P: the draws by jax.random.binomial, beside the tables' path
DENSE_FIT = "fit (dense Cholesky Newton, a design tried)"
ASIDE_STAGES = (*BINOMIAL_STAGES, DENSE_FIT)  # P: timed beside the engine's path, not in "all"
PROFILE_REPS = 200  # P: replicates per timed call, engine (vmapped) and vectorised NumPy alike


def vectorised_profile(m: int, L: int = 400, gap: float = 0.1, reps: int = 200) -> dict:
    """ms per replicate of each stage of the vectorised NumPy baseline (``reps`` replicates of
    one cell in arrays, best of 5), the same stages as :func:`lane_profile`: raw wins (one
    ``Generator.binomial`` call), the RR release (two), the batched Newton fit, the metrics."""
    rng = np.random.default_rng(m)
    theta = ladder_thetas(rng, m, gap, reps)
    lam = baseline_lambda(L)
    n1 = raw_wins(rng, theta, L)
    zbar = rr_zbar(rng, n1, L)
    est = vectorised_fit(zbar, lam, m)[0]
    stages = {
        "raw wins": lambda: raw_wins(rng, theta, L),
        "RR release": lambda: rr_zbar(rng, n1, L),
        "fit": lambda: vectorised_fit(zbar, lam, m),
        "metrics": lambda: vectorised_scores(est, theta, m // 2),
    }
    return {
        "m": m,
        "L": L,
        "reps": reps,
        "ms_per_replicate": {
            name: 1e3 * harness.best_of(fn, repeats=5) / reps for name, fn in stages.items()
        },
    }


def sampler_costs(m: int = 30, L: int = 400, reps: int = PROFILE_REPS) -> dict:
    """ns per draw of the binomial samplers on the (``reps``, m(m−1)/2) array of section P's
    raw wins (count L, p ~ Unif(0.2, 0.8), best of 10; :func:`benchmarks.binomial.ns_per_draw`,
    the replicates as vmapped lanes with a key each): ``jax.random.binomial`` (JAX's BTRS /
    inversion; the engine's only exact binomial sampler), NumPy's ``Generator.binomial`` (BTPE,
    C) and, as the floor of any JAX sampler, the two threefry uniforms that one BTRS try
    consumes (``jax.random.uniform``, jitted)."""
    shape = (reps, m * (m - 1) // 2)
    probs = np.random.default_rng(m).uniform(0.2, 0.8, shape)
    costs = binomial.ns_per_draw(
        {"jax.random.binomial": jax.random.binomial},
        np.full(shape, float(L)),
        probs,
        repeats=10,
        seed=m,
    )
    two_uniforms = jax.jit(lambda k: jax.random.uniform(k, (2, *shape), dtype=jnp.float64))
    key, draws = jax.random.key(m), math.prod(shape)
    jax.block_until_ready(two_uniforms(key))  # compiled before the timing
    costs["2 threefry uniforms (one BTRS try)"] = (
        1e9 * harness.best_of(lambda: two_uniforms(key), repeats=10) / draws
    )
    return {"m": m, "L": L, "draws": draws, "ns_per_draw": costs}


def loop_ms_per_replicate(m: int, L: int = 400, gap: float = 0.1, lanes: int = 20) -> float:
    """ms per replicate of the NumPy/SciPy loop (:func:`scipy_lane`) at one cell, over ``lanes``
    replicates run one after another (:func:`benchmarks.harness.time_baseline`, after one
    untimed replicate)."""
    scipy_lane(Lane(m, L, gap, lanes))
    stats, _ = harness.time_baseline(
        harness.Baseline(SCIPY, scipy_lane), [Lane(m, L, gap, s) for s in range(lanes)]
    )
    return stats["ms_per_fit"]


def binomial_bound(row: dict, numpy_row: dict, costs: dict, loop_ms: float | None = None) -> dict:
    """What exact binomial draws alone allow at section P's workload ``row`` (engine) and
    ``numpy_row`` (vectorised), with the per-draw ``costs`` of :func:`sampler_costs`: a replicate
    draws m(m−1)/2 raw-win and m(m−1) RR binomials; the vectorised baseline's whole time per
    replicate divided by the engine's binomial time is the most the engine could be ahead if its
    fit, metrics and host cost nothing; ``loop_ms`` (the SciPy loop's ms per replicate at the
    same cell) gives the same bound against the loop."""
    m = row["m"]
    draws = 3 * m * (m - 1) // 2
    engine_ms = row["ms_per_replicate"]["raw wins"] + row["ms_per_replicate"]["RR release"]
    numpy_total = sum(numpy_row["ms_per_replicate"].values())
    return {
        "m": m,
        "binomials_per_replicate": draws,
        "jax_sampler_ms": draws * costs["ns_per_draw"]["jax.random.binomial"] * 1e-6,
        "numpy_sampler_ms": draws * costs["ns_per_draw"]["NumPy Generator.binomial"] * 1e-6,
        "engine_binomial_stages_ms": engine_ms,
        "vectorised_total_ms": numpy_total,
        "max_ratio_with_jax_sampler": numpy_total / engine_ms,
        "budget_ms_for_target": numpy_total / TARGETS["engine_vs_vectorised"]["compiled"],
        "loop_ms": loop_ms,
        "max_loop_ratio_with_jax_sampler": None if loop_ms is None else loop_ms / engine_ms,
    }


def section_p(bench: harness.Bench) -> dict:
    rows = [lane_profile(m, micro=PROFILE_REPS) for m in (10, 30)]
    numpy_rows = [vectorised_profile(m, reps=PROFILE_REPS) for m in (10, 30)]
    table = []
    for r, v in zip(rows, numpy_rows):
        total = sum(ms for stage, ms in r["ms_per_replicate"].items() if stage not in ASIDE_STAGES)
        v_total = sum(v["ms_per_replicate"].values())
        for stage, ms in [*r["ms_per_replicate"].items(), ("all", total)]:
            v_ms = (
                v_total
                if stage == "all"
                else v["ms_per_replicate"][
                    "fit" if stage == DENSE_FIT else stage.replace(" (tables)", "")
                ]
            )
            label = (
                f"{stage} (jax.random.binomial, not in all)"
                if stage in BINOMIAL_STAGES
                else f"{stage}, not in all"
                if stage == DENSE_FIT
                else stage
            )
            one = (
                sum(ms for k, ms in r["ms_per_replicate_one_lane"].items() if k not in ASIDE_STAGES)
                if stage == "all"
                else r["ms_per_replicate_one_lane"].get(stage)
            )
            table.append(
                [
                    f"m = {r['m']}, L = {r['L']:g} ({r['micro_batch']} replicates vmapped)",
                    label,
                    ms,
                    ms / total,
                    one,
                    v_ms,
                    v_ms / ms,
                ]
            )
    harness.print_table(
        harness.format_table(
            f"where a replicate's time goes (compile excluded): engine stages jitted, {PROFILE_REPS} replicates "
            f"vmapped in one call, against the vectorised NumPy baseline's same stages ({PROFILE_REPS} replicates of "
            "a cell in arrays)",
            (
                "workload",
                "stage",
                "engine ms",
                "share",
                "engine ms, one lane at a time",
                "vectorised ms",
                "vectorised ÷ engine time",
            ),
            table,
            (None, None, "{:.4f}", "{:.0%}", "{:.4f}", "{:.4f}", "{:.2f}"),
        )
    )
    costs = sampler_costs()
    harness.print_table(
        harness.format_table(
            f"binomial samplers on section P's m = {costs['m']} raw-win array ({costs['draws']} draws, count "
            f"{costs['L']}, p ~ Unif(0.2, 0.8))",
            ("sampler", "ns per draw"),
            [[name, ns] for name, ns in costs["ns_per_draw"].items()],
            (None, "{:.1f}"),
        )
    )
    bounds = [
        binomial_bound(
            r, v, costs, loop_ms_per_replicate(r["m"], int(r["L"]), lanes=bench.cfg.bound_lanes)
        )
        for r, v in zip(rows, numpy_rows)
    ]
    harness.print_table(
        harness.format_table(
            "what exact binomial draws allow: a baseline's whole time per replicate ÷ the engine's binomial stages "
            "alone (fit, metrics and host free), against the vectorised target's time budget",
            (
                "m",
                "binomials",
                "JAX sampler ms",
                "NumPy sampler ms",
                "engine binomial stages ms",
                "vectorised total ms",
                "most ahead of vectorised",
                f"budget for {TARGETS['engine_vs_vectorised']['compiled']:g}× (ms)",
                "SciPy loop ms",
                "most ahead of the loop",
            ),
            [
                [
                    b["m"],
                    b["binomials_per_replicate"],
                    b["jax_sampler_ms"],
                    b["numpy_sampler_ms"],
                    b["engine_binomial_stages_ms"],
                    b["vectorised_total_ms"],
                    b["max_ratio_with_jax_sampler"],
                    b["budget_ms_for_target"],
                    b["loop_ms"],
                    b["max_loop_ratio_with_jax_sampler"],
                ]
                for b in bounds
            ],
            (
                None,
                None,
                "{:.4f}",
                "{:.4f}",
                "{:.4f}",
                "{:.4f}",
                "{:.2f}×",
                "{:.4f}",
                "{:.3f}",
                "{:.1f}×",
            ),
        )
    )
    return {
        "rows": rows,
        "vectorised_rows": numpy_rows,
        "sampler_costs": costs,
        "binomial_bound": bounds,
    }


def section_g(bench: harness.Bench) -> dict:
    """max |θ̂_engine − θ̂_other| on the same z̄ (SciPy and the vectorised Newton), over
    replicates spread over the grid."""
    fit = jax.jit(debiased_m_estimator)
    worst, by_m = {"scipy": 0.0, "vectorised": 0.0}, {}
    for lane in scipy_lanes(bench.cfg.agreement, seed=7):
        rng = np.random.default_rng(lane.seed)
        theta = lane.gap * rng.permutation(np.arange(1, lane.m + 1) - (lane.m + 1) / 2.0)
        zbar = release(rng, theta, lane.L, EPS)
        lam = baseline_lambda(lane.L)
        engine = np.asarray(fit(jnp.asarray(zbar), lam).theta)
        res = scipy_fit(zbar, lam, lane.m)
        diffs = {
            "scipy": float(np.abs(engine - (res.x - res.x.mean())).max()),
            "vectorised": float(
                np.abs(engine - vectorised_fit(zbar[None], lam, lane.m)[0][0]).max()
            ),
        }
        row = by_m.setdefault(lane.m, {"scipy": 0.0, "vectorised": 0.0})
        for name, diff in diffs.items():
            worst[name], row[name] = max(worst[name], diff), max(row[name], diff)
    harness.print_table(
        harness.format_table(
            "agreement on the same z̄: max |θ̂_engine − θ̂_other|",
            ("m", "SciPy", "vectorised NumPy"),
            [[m, d["scipy"], d["vectorised"]] for m, d in sorted(by_m.items())],
            ("{}", "{:.1e}", "{:.1e}"),
        )
    )
    return {
        "replicates": bench.cfg.agreement,
        "max_abs_diff": worst["scipy"],
        "max_abs_diff_vectorised": worst["vectorised"],
        "by_m": {str(k): v for k, v in by_m.items()},
    }


def section_c(bench: harness.Bench) -> dict:
    if not bench.cfg.cli_run:
        return {}
    with tempfile.TemporaryDirectory(prefix="dpsim-bench-") as tmp:
        out = harness.time_cli(
            [
                "run",
                "xu-fig4",
                "--reps",
                str(bench.cfg.reps),
                "--out",
                f"{tmp}/run",
                "--no-progress",
            ],
            cache="off",
        )
    harness.print_table(
        harness.format_table(
            f"`dpsim run xu-fig4 --reps {bench.cfg.reps}` in a fresh process, no compilation cache",
            ("process s", "compile s", "compiles"),
            [[out["process_wall_s"], out["call"]["compile_s"], out["call"]["compiles"]]],
            ("{:.1f}", "{:.1f}", "{}"),
        )
    )
    return {
        "process_wall_s": out["process_wall_s"],
        "compile_s": out["call"]["compile_s"],
        "compiles": out["call"]["compiles"],
        "returncode": out["returncode"],
    }


SECTIONS = (
    harness.Section(
        "A", "xu Fig. 4 (Scenario III): engine vs NumPy/SciPy loop vs vectorised NumPy", section_a
    ),
    harness.Section("P", "where a replicate's time goes", section_p),
    harness.Section("G", "agreement with SciPy and the vectorised baseline", section_g),
    harness.Section("C", "dpsim run xu-fig4 in a fresh process", section_c),
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
