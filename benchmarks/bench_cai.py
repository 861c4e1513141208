"""Benchmark: the dpsim engine on cai's edge-DP workload against a SciPy loop and choix.

Run ``python benchmarks/bench_cai.py [--quick]``. Everything is measured side by side in
one run on one machine; a table is printed and ``benchmarks/results.json`` is written
(``benchmarks/results_quick.json`` with ``--quick``, so a smoke run keeps the full results).

What is measured
----------------
A. Figure 3 of cai (n = 300, p ∈ {0.25, 0.5, 0.75, 1}, 10 ε values, 120 replicates;
   Algorithm 1 = perturbed MLE, Algorithm 2 = noisy counts): 4800 MLE fits.
   1. engine: ``run_experiment(FIG3, reps=120)`` end to end (data, both estimators,
      metrics, Parquet writes), timed in this process into fresh directories: a first run
      (compile included), then the best of three warm re-runs (what an in-process compile
      cache saves). Wall time is split into
      compile (tracing + lowering + XLA compile, summed from JAX's own monitoring events;
      the runner compiles the next shape in a background thread while the current one
      computes, so compile time may overlap compute), chunk compute (the compiled chunk
      calls, timed by wrapping ``runner.compiled_chunk_fn``) and "other" = wall − compute
      (compile not hidden by the overlap, keys, rows, Parquet). The warm re-runs reuse the
      runner's in-process compile cache, so their wall time *is* the time without compile.
   2. SciPy loop: per replicate, W drawn with NumPy; per ε, w ~ Laplace(λ) and
      ``scipy.optimize.minimize(method="L-BFGS-B", jac=True, gtol=1e-8, ftol=1e-15)`` on
      R(θ) = Σ_{i≠j} W_ij softplus(θ_j − θ_i) + γ/2‖θ‖² + wᵀθ with its analytic gradient,
      vectorised in NumPy (the same one-exponential-per-item form as the engine), from
      θ = 0, plus the noisy counts. A subset of lanes (spread over p) is timed and the
      per-fit time extrapolated to the full workload.
   3. choix: ``choix.opt_pairwise`` (Newton-CG, its default tol) on the same comparisons,
      alpha = γ/2 (choix's penalty is alpha·‖θ‖², ours γ/2·‖θ‖²); it has no linear term, so
      only ε = ∞ (w = 0, the non-private penalised MLE) can be timed; a subset of fits.
      ``choix.ilsr_pairwise_dense`` (unpenalised ML; its alpha is a Markov-chain
      regulariser, not ℓ2) is timed too, as the fastest choix route, for reference only.
   Agreement: on the engine's own W (and γ, w) the engine's ``penalised_mle``, the SciPy
   fit and (at ε = ∞) choix are compared: max |θ_engine − θ_other|.
B. Small n (n = 40 and n = 20, p = 1, the same ε set, 120 replicates): engine vs SciPy loop
   vs choix, as in A.
C. Figures 1–3 at paper size (120 replicates) with the engine, each in a fresh Python
   process (subprocess) so that imports and compilation are counted; then (full mode) a
   what-if: Fig. 3 in two fresh processes sharing a JAX persistent compilation cache.
S. Solver design: Newton-CG (the engine's) against a dense Cholesky Newton, each under a
   full vmap and under the runner's micro-batched ``lax.map``, on the same problems.
W. Concurrent chunks: the B workload at n = 40 and Fig. 3 (n = 300) each run with the
   runner's default ``workers`` (chunks computed at the same time, = cores) and with
   ``workers = 1``, compile excluded (a warm run of each, best of three, alternated).
T. Top-k ranks: ``tie_broken_ranks`` by sort against pairwise counting, vmapped over
   replicates and ε, at n = 20 … 1000 (the runner's micro-batch sizes), best of 30 calls.
P. Where the engine's time goes at n = 300: the A.1 split above; one jitted
   ``btl_objective(...).evaluate`` and one Hessian–vector product (each repeated 100× in a
   ``fori_loop``, so dispatch is excluded); full solves one problem at a time and vmapped
   in the runner's micro-batch; Newton iterations from the results table, CG iterations
   and objective evaluations per solve from ``newton_cg`` on one replicate of every
   (p, ε); and (full mode) Fig. 3 at 40 reps with the runner's micro-batch forced to 1.

The NumPy/SciPy/choix baselines run with one OpenBLAS thread (see below) in one process;
the engine uses XLA's own threads. ``--quick`` shrinks every part (8 reps, fewer timed
baseline fits, n = 20 and part C skipped); ``--sections A,B,...`` runs a subset (written to
``benchmarks/results_partial.json``) to a smoke run of under a minute on an idle
2-core machine; its ratios are not representative (compile dominates, and at small n the
runner pads 8 replicates to its 64-lane micro-batch). The load average is recorded: the
machine may be shared.
"""
from __future__ import annotations

# The BLAS thread count must be set before NumPy is imported:
# ruff: noqa: E402
import os

# One BLAS thread for the NumPy/SciPy/choix baselines (set before NumPy loads OpenBLAS): with
# OpenBLAS's default threads, L-BFGS-B's tiny BLAS calls were measured 60× slower per fit
# (n = 40, busy 2-core machine). XLA's CPU backend does not use OpenBLAS, so the engine is
# unaffected. A caller's explicit setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import math
import platform
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import scipy
import scipy.optimize

import dpsim  # noqa: F401  (enables float64 in JAX)
import jax
import jax.numpy as jnp

from dpsim.estimators.btl_mle import btl_objective, penalised_mle
from dpsim.experiment import runner
from dpsim.experiment.runner import micro_batch_size, run_experiment
from dpsim.experiment.store import load_results
from dpsim.mechanisms.calibration import edge_objective_perturbation
from dpsim.models.btl import sample_er_comparisons, theta_cai_design, top_k_size
from dpsim.solvers import SmoothObjective, newton_cg
from experiments import cai

HERE = Path(__file__).resolve().parent
RESULTS = {"full": HERE / "results.json", "quick": HERE / "results_quick.json",
           "partial": HERE / "results_partial.json"}
SECTIONS = ("A", "P", "B", "W", "T", "S", "C")
EPS = [1 / 5, 1 / 4, 1 / 3, 1 / 2, 1.0, 3 / 2, 2.0, 5 / 2, 5.0, math.inf]
FIG3_P = [0.25, 0.5, 0.75, 1.0]
C0 = 2.0
TARGETS = {"engine_vs_scipy_n300": 3.0, "engine_vs_scipy_small_n": 30.0, "figs_total_s": 120.0}


@dataclass
class Config:
    reps: int                 # replicates per grid point (A and B)
    scipy_lanes_n300: int     # (p, rep) lanes timed for the SciPy loop at n = 300 (×10 ε fits)
    scipy_lanes_small: int    # the same at small n
    choix_fits_n300: int      # opt_pairwise fits timed at n = 300 (spread over p)
    choix_fits_small: int
    warm_rerun: bool          # A, B: warm re-runs in this process (best of WARM_RUNS)
    small_ns: tuple           # B
    profile_ps: tuple         # P: the p values of the sample problems
    agreement: tuple          # (n, p, ε values) cases of the agreement check
    figures: tuple            # experiments run in subprocesses for C
    figure_reps: int
    micro_one_reps: int = 0   # P: reps of a Fig. 3 run with the runner's micro-batch forced to 1
    cache_what_if: bool = False  # C: Fig. 3 twice with a JAX persistent compilation cache
    solver_design: tuple = ()    # S: (n, copies of the 40 Fig. 3 problems)


FULL = Config(reps=120, scipy_lanes_n300=20, scipy_lanes_small=40, choix_fits_n300=4,
              choix_fits_small=20, warm_rerun=True, small_ns=(40, 20), profile_ps=tuple(FIG3_P),
              agreement=((300, 1.0, (0.2, 1.0, math.inf)), (300, 0.25, (0.5, math.inf)),
                         (40, 1.0, (0.2, math.inf)), (20, 1.0, (0.2, math.inf))),
              figures=("FIG1", "FIG2", "FIG3"), figure_reps=120, micro_one_reps=40,
              cache_what_if=True, solver_design=((300, 2), (40, 10)))
QUICK = Config(reps=8, scipy_lanes_n300=4, scipy_lanes_small=8, choix_fits_n300=1,
               choix_fits_small=5, warm_rerun=False, small_ns=(40,), profile_ps=(1.0,),
               agreement=((300, 0.25, (1.0, math.inf)), (40, 1.0, (0.2, math.inf))),
               figures=(), figure_reps=4, solver_design=((40, 2),))


# ----------------------------------------------------------------------------- timing

_COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration",
                   "/jax/core/compile/jaxpr_to_mlir_module_duration",
                   "/jax/core/compile/backend_compile_duration")
_compile_seconds = {"total": 0.0, "count": 0}


def _on_duration(event, duration, **_):
    if event in _COMPILE_EVENTS:
        _compile_seconds["total"] += duration
        _compile_seconds["count"] += event == _COMPILE_EVENTS[-1]


jax.monitoring.register_event_duration_secs_listener(_on_duration)


@contextmanager
def measured():
    """Yield a dict filled on exit with wall, CPU (all threads) and JAX compile seconds."""
    out = {}
    c0, n0 = _compile_seconds["total"], _compile_seconds["count"]
    w0, p0 = time.perf_counter(), time.process_time()
    yield out
    out["wall_s"] = time.perf_counter() - w0
    out["cpu_s"] = time.process_time() - p0
    out["compile_s"] = _compile_seconds["total"] - c0
    out["compiles"] = _compile_seconds["count"] - n0


def best_time(fn, repeats: int = 7, number: int = 1) -> float:
    """Best wall seconds per call of ``fn`` (already compiled), over ``repeats`` rounds."""
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            jax.block_until_ready(fn())
        best = min(best, (time.perf_counter() - t0) / number)
    return best


# ----------------------------------------------------------------------------- engine

@contextmanager
def instrumented_runner(micro_batch_bytes: int | None = None):
    """Time the runner's chunk calls by wrapping the compiled functions returned by
    ``runner.compiled_chunk_fn`` (compilation happens before the call, partly in the
    runner's background thread, so the calls are pure compute); optionally override
    ``runner.MICRO_BATCH_BYTES`` (what-if)."""
    stats = {"compute_s": 0.0}
    original_compiled, original_bytes = runner.compiled_chunk_fn, runner.MICRO_BATCH_BYTES

    def timed_compiled(*args, **kwargs):
        fn = original_compiled(*args, **kwargs)

        def call(*call_args):
            t0 = time.perf_counter()
            out = jax.block_until_ready(fn(*call_args))
            stats["compute_s"] += time.perf_counter() - t0
            return out

        return call

    runner.compiled_chunk_fn = timed_compiled
    if micro_batch_bytes is not None:
        runner.MICRO_BATCH_BYTES = micro_batch_bytes
    try:
        yield stats
    finally:
        runner.compiled_chunk_fn, runner.MICRO_BATCH_BYTES = original_compiled, original_bytes


def run_engine(experiment, reps: int, overrides=None, micro_batch_bytes: int | None = None,
               workers: int | None = None) -> dict:
    """One ``run_experiment`` into a fresh directory: wall = compile + chunk compute + host
    work (row building, Parquet, keys); plus solver diagnostics from the results table.
    With concurrent chunks (``workers`` > 1) compute_s sums the chunks' times, so it may
    exceed the wall time."""
    with tempfile.TemporaryDirectory() as tmp:
        with instrumented_runner(micro_batch_bytes) as chunks, measured() as m:
            summary = run_experiment(experiment, out=Path(tmp) / "run", reps=reps,
                                     overrides=overrides, progress=False, workers=workers)
        table = load_results(summary.out)
    mle = table[table["method"] == "mle"]
    iters = mle.groupby("p")["iterations"].agg(["mean", "max"])
    return {**m, "compute_s": chunks["compute_s"],
            "host_s": max(0.0, m["wall_s"] - chunks["compute_s"]),  # unhidden compile + host
            "mle_fits": int(len(mle)), "lanes": summary.lanes_run,
            "converged_fraction": float(mle["converged"].mean()),
            "newton_iterations_mean": float(mle["iterations"].mean()),
            "newton_iterations_max": int(mle["iterations"].max()),
            "newton_iterations_by_p": {str(p): [round(float(r["mean"]), 2), int(r["max"])]
                                       for p, r in iters.iterrows()}}


WARM_RUNS = 3


def warm_run(experiment, reps: int) -> dict:
    """The fastest of WARM_RUNS re-runs after a first (compiling) run in this process: the
    runner's in-process compile cache makes them compile nothing, and the best of a few
    damps the noise of a shared machine (single warm runs at n = 40 measured 0.05–0.08 s)."""
    return min((run_engine(experiment, reps) for _ in range(WARM_RUNS)), key=lambda r: r["wall_s"])


def engine_rates(run: dict, warm: dict | None = None) -> dict:
    """fits/s of a cold run (compile included) and without compile: the warm re-run's wall
    time when there is one (it compiles nothing), else wall − compile of the cold run."""
    steady = (warm["mle_fits"] / warm["wall_s"] if warm is not None
              else run["mle_fits"] / max(run["wall_s"] - run["compile_s"], 1e-9))
    return {"fits_per_s": run["mle_fits"] / run["wall_s"], "fits_per_s_excl_compile": steady}


# ----------------------------------------------------------------------------- NumPy / SciPy

def calibration(eps: float, n: int, p: float) -> tuple[float, float]:
    """(λ, γ) of Algorithm 1 for the logistic link, from dpsim's own calibration."""
    cal = edge_objective_perturbation(eps, n, p, c0=C0)
    return float(cal.lam), float(cal.gamma)


def numpy_theta(rng, n: int) -> np.ndarray:
    """θ* of cai §3.4: top k = round(n/4) items last with e^θ = 1, the rest Unif(0.2, 0.7)."""
    k = top_k_size(n)
    theta = np.concatenate([np.log(rng.uniform(0.2, 0.7, n - k)), np.zeros(k)])
    return theta - theta.mean()


def numpy_comparisons(rng, theta: np.ndarray, p: float) -> np.ndarray:
    """Win-count matrix of one BTL comparison per edge of G(n, p)."""
    n = theta.shape[0]
    edges = np.triu(rng.random((n, n)) < p, 1)
    i_wins = rng.random((n, n)) < 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))
    return (edges & i_wins).astype(float) + (edges & ~i_wins).astype(float).T


def objective_and_gradient(theta, W, M, wins, gamma, w):
    """R(θ) and ∇R with a = exp(θ − max θ): σ(θ_i − θ_j) = a_i/(a_i + a_j),
    softplus(θ_j − θ_i) = log(a_i + a_j) − log a_i."""
    log_a = theta - theta.max()
    a = np.exp(log_a)
    total = a[:, None] + a[None, :]
    value = np.sum(W * np.log(total)) - wins @ log_a + 0.5 * gamma * theta @ theta + w @ theta
    grad = np.sum(M * (a[:, None] / total), axis=1) - wins + gamma * theta + w
    return value, grad


def scipy_fit(W, gamma, w) -> scipy.optimize.OptimizeResult:
    M, wins = W + W.T, W.sum(axis=1)
    return scipy.optimize.minimize(
        objective_and_gradient, np.zeros(W.shape[0]), args=(W, M, wins, gamma, w), jac=True,
        method="L-BFGS-B", options={"gtol": 1e-8, "ftol": 1e-15, "maxiter": 10_000})


def scipy_loop(n: int, ps, n_lanes: int, seed: int = 0) -> dict:
    """Time ``n_lanes`` replicates (spread over ``ps``), each fitted at every ε."""
    rng = np.random.default_rng(seed)
    theta = numpy_theta(rng, n)
    cal = {(eps, p): calibration(eps, n, p) for eps in EPS for p in ps}  # outside the timing
    grad_max, iters = [], []
    with measured() as m:
        for lane in range(n_lanes):
            p = ps[lane % len(ps)]
            W = numpy_comparisons(rng, theta, p)
            for eps in EPS:
                lam, gamma = cal[eps, p]
                w = rng.laplace(0.0, lam, n) if lam > 0 else np.zeros(n)
                res = scipy_fit(W, gamma, w)
                _ = W.sum(axis=1) + rng.laplace(0.0, 2.0 / eps, n)  # Algorithm 2
                grad_max.append(np.abs(res.jac).max())
                iters.append(res.nit)
    fits = n_lanes * len(EPS)
    return {"fits_timed": fits, "wall_s": m["wall_s"], "ms_per_fit": 1e3 * m["wall_s"] / fits,
            "fits_per_s": fits / m["wall_s"], "lbfgs_iterations_mean": float(np.mean(iters)),
            "grad_inf_median": float(np.median(grad_max)), "grad_inf_max": float(np.max(grad_max))}


# ----------------------------------------------------------------------------- choix

def choix_data(W: np.ndarray) -> list:
    """(winner, loser) pairs, one per comparison (W is a 0/1 win matrix here)."""
    return [(int(i), int(j)) for i, j in np.argwhere(W > 0)]


def choix_fit(W: np.ndarray, gamma: float) -> np.ndarray:
    import choix
    return choix.opt_pairwise(W.shape[0], choix_data(W), alpha=gamma / 2)


def choix_loop(n: int, ps, n_fits: int, seed: int = 1) -> dict:
    """Time opt_pairwise (ε = ∞ fits) and, for reference, ilsr_pairwise_dense."""
    import choix
    rng = np.random.default_rng(seed)
    theta = numpy_theta(rng, n)
    opt_s, ilsr_s = 0.0, 0.0
    for i in range(n_fits):
        p = ps[i % len(ps)]
        W = numpy_comparisons(rng, theta, p)
        data = choix_data(W)
        _, gamma = calibration(math.inf, n, p)
        t0 = time.perf_counter()
        choix.opt_pairwise(n, data, alpha=gamma / 2)
        t1 = time.perf_counter()
        choix.ilsr_pairwise_dense(W)
        ilsr_s += time.perf_counter() - t1
        opt_s += t1 - t0
    return {"fits_timed": n_fits, "opt_pairwise_ms_per_fit": 1e3 * opt_s / n_fits,
            "fits_per_s": n_fits / opt_s, "ilsr_dense_ms_per_fit": 1e3 * ilsr_s / n_fits,
            "ilsr_dense_fits_per_s": n_fits / ilsr_s}


# ----------------------------------------------------------------------------- agreement

def agreement(n: int, p: float, eps_values, seed: int = 7) -> dict:
    """max |θ_engine − θ_scipy| (and − θ_choix at ε = ∞) on the engine's own W, γ, w."""
    key = jax.random.key(seed)
    theta = theta_cai_design(jax.random.fold_in(key, 0), n)
    W = sample_er_comparisons(jax.random.fold_in(key, 1), theta, p)
    W_np = np.asarray(W)
    solve = jax.jit(penalised_mle)
    scipy_diff, choix_diff = [], None
    for i, eps in enumerate(eps_values):
        lam, gamma = calibration(eps, n, p)
        w = lam * jax.random.laplace(jax.random.fold_in(key, 2 + i), (n,), dtype=jnp.float64)
        engine = np.asarray(solve(W, gamma, w).theta)
        scipy_diff.append(np.abs(engine - scipy_fit(W_np, gamma, np.asarray(w)).x).max())
        if math.isinf(eps):
            choix_diff = float(np.abs(engine - choix_fit(W_np, gamma)).max())
    return {"n": n, "p": p, "eps": [str(e) for e in eps_values],
            "max_abs_diff_scipy": float(max(scipy_diff)), "max_abs_diff_choix_eps_inf": choix_diff}


# ----------------------------------------------------------------------------- profile

def _sample_problems(n: int, ps, key) -> list:
    """(W, γ, w) for every (p, ε) of the Fig. 3 grid, one replicate each."""
    theta = theta_cai_design(jax.random.fold_in(key, 0), n)
    problems = []
    for i, p in enumerate(ps):
        W = sample_er_comparisons(jax.random.fold_in(key, 1 + i), theta, p)
        for j, eps in enumerate(EPS):
            lam, gamma = calibration(eps, n, p)
            w = lam * jax.random.laplace(jax.random.fold_in(key, 100 + 10 * i + j), (n,),
                                         dtype=jnp.float64)
            problems.append((W, gamma, w))
    return problems


def _counting(objective: SmoothObjective, counter: dict) -> SmoothObjective:
    """The same objective, with a host callback counting evaluate calls (not timed)."""

    def bump():
        counter["evals"] += 1

    def evaluate(x):
        jax.debug.callback(bump)
        return objective.evaluate(x)

    return SmoothObjective(evaluate, objective.hvp, objective.hess_diag)


def _repeated(step, k: int = 100):
    """jit of x ↦ step applied k times in a fori_loop: per-call cost without dispatch."""
    return jax.jit(lambda *args: jax.lax.fori_loop(0, k, lambda _, x: step(*args[:-1], x), args[-1]))


def _solver_work(problems, n: int) -> dict:
    """Mean Newton iterations, CG iterations and objective evaluations per solve."""
    counter = {"evals": 0}
    solve = jax.jit(lambda W, g, w: newton_cg(_counting(btl_objective(W, g, w), counter),
                                              jnp.zeros((n,))))
    newton, cg, evals = [], [], []
    for W, gamma, w in problems:
        counter["evals"] = 0
        res = jax.block_until_ready(solve(W, gamma, w))
        jax.effects_barrier()
        newton.append(int(res.iterations))
        cg.append(int(res.cg_iterations))
        evals.append(counter["evals"])
    return {"newton_iterations_mean": float(np.mean(newton)), "cg_iterations_mean": float(np.mean(cg)),
            "evaluations_mean": float(np.mean(evals))}


def _solve_times(problems, n: int, micro: int) -> tuple[float, float]:
    """Seconds per fit solving ``problems`` one by one, and vmapped in batches of ``micro``."""
    solve = jax.jit(lambda W, g, w: newton_cg(btl_objective(W, g, w), jnp.zeros((n,))))
    solve_batch = jax.jit(jax.vmap(solve))
    used = problems[:len(problems) - len(problems) % micro]
    batches = [[jnp.stack([pr[i] for pr in used[j:j + micro]]) for i in range(3)]
               for j in range(0, len(used), micro)]
    jax.block_until_ready((solve(*problems[0]), solve_batch(*batches[0])))
    one_by_one = best_time(lambda: [solve(*pr) for pr in used], repeats=3) / len(used)
    vmapped = best_time(lambda: [solve_batch(*b) for b in batches], repeats=3) / len(used)
    return one_by_one, vmapped


def profile_engine(cfg: Config, n: int = 300, seed: int = 3, k: int = 100) -> dict:
    """Cost of one evaluate, one hvp and one solve at n (alone and vmapped as the runner
    does), and the solver's work per fit, over one replicate of every (p, ε)."""
    problems = _sample_problems(n, cfg.profile_ps, jax.random.key(seed))
    W, gamma, w = problems[0]
    theta = jnp.full((n,), 0.01)
    curvature = btl_objective(W, gamma, w).evaluate(theta)[1]
    evaluate_k = _repeated(lambda W, g, w, x: x + 1e-12 * btl_objective(W, g, w).evaluate(x)[0], k)
    hvp_k = _repeated(lambda c, v: v - 1e-6 * btl_objective(W, gamma, w).hvp(c, v), k)
    jax.block_until_ready((evaluate_k(W, gamma, w, theta), hvp_k(curvature, theta)))
    t_eval = best_time(lambda: evaluate_k(W, gamma, w, theta), repeats=5) / k
    t_hvp = best_time(lambda: hvp_k(curvature, theta), repeats=5) / k

    micro = micro_batch_size(cai.lane_bytes({"n_items": n}))
    one_by_one, vmapped = _solve_times(problems, n, micro)
    work = _solver_work(problems, n)
    n_eval, n_cg = work["evaluations_mean"], work["cg_iterations_mean"]
    return {"n": n, "problems": len(problems), "evaluate_us": 1e6 * t_eval, "hvp_us": 1e6 * t_hvp,
            "micro_batch": micro, "solve_one_by_one_ms_per_fit": 1e3 * one_by_one,
            "solve_vmapped_ms_per_fit": 1e3 * vmapped, **work,
            "model_ms": 1e3 * (n_eval * t_eval + n_cg * t_hvp),
            "evaluate_share_of_solve": n_eval * t_eval / one_by_one,
            "hvp_share_of_solve": n_cg * t_hvp / one_by_one}


# ----------------------------------------------------------------------------- solver design (S)

def newton_cholesky(W, gamma, w, tol: float = 1e-10, max_iter: int = 50):
    """The design the engine does *not* use: Newton with a dense Cholesky solve of
    (diag(C1) − C + γI) Δ = −∇R every iteration, same merit-function backtracking and
    stopping rule as ``dpsim.solvers.newton_cg``."""
    objective = btl_objective(W, gamma, w)
    n = W.shape[0]

    def body(state):
        x, g, (C, diag), it = state
        H = jnp.diag(diag) - C
        d = -jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(H), g)
        merit = 0.5 * g @ g

        def trial(t):
            g_t, c_t = objective.evaluate(x + t * d)
            return x + t * d, g_t, c_t

        def cond(b):
            return (0.5 * b[2] @ b[2] > (1 - 2e-4 * b[0]) * merit) & (b[4] < 30)

        def halve(b):
            return (0.5 * b[0], *trial(0.5 * b[0]), b[4] + 1)

        _, x, g, c, _ = jax.lax.while_loop(cond, halve, (1.0, *trial(1.0), 0))
        return x, g, c, it + 1

    g0, c0 = objective.evaluate(jnp.zeros((n,)))
    x, *_ = jax.lax.while_loop(lambda s: (jnp.max(jnp.abs(s[1])) > tol) & (s[3] < max_iter),
                               body, (jnp.zeros((n,)), g0, c0, 0))
    return x


def solver_design(n: int, copies: int, micro: int, seed: int = 5) -> dict:
    """ms per fit of {Newton-CG, dense Cholesky Newton} × {full vmap, the runner's
    micro-batched lax.map} on one replicate of every Fig. 3 (p, ε), repeated ``copies``×."""
    problems = _sample_problems(n, FIG3_P, jax.random.key(seed)) * copies
    W, g, w = (jnp.stack([pr[i] for pr in problems]) for i in range(3))
    solvers = {"newton_cg": lambda W, g, w: newton_cg(btl_objective(W, g, w), jnp.zeros((n,))).x,
               "newton_cholesky": newton_cholesky}
    out = {"n": n, "fits": len(problems), "micro_batch": micro}
    for name, solve in solvers.items():
        schemes = {"vmap_all": jax.jit(jax.vmap(solve)),
                   f"map_micro{micro}": jax.jit(lambda W, g, w, s=solve: jax.lax.map(
                       lambda a: s(*a), (W, g, w), batch_size=micro))}
        for scheme, fn in schemes.items():
            jax.block_until_ready(fn(W, g, w))
            out[f"{name}/{scheme}"] = 1e3 * best_time(lambda: fn(W, g, w), repeats=2) / len(problems)
    return out


def print_solver_design(rows: list) -> None:
    print("\n== S. Solver design: ms per fit (compile excluded), Fig. 3 (p, ε) problems ==")
    for r in rows:
        cells = "  ".join(f"{k} {v:.3f}" for k, v in r.items() if "/" in k)
        print(f"n = {r['n']:3d} ({r['fits']} fits): {cells}")


# ----------------------------------------------------------------------------- figures (C)

def figure_worker(name: str, reps: int) -> None:
    """Run one figure (in a fresh process) and print one JSON line with its timings."""
    with tempfile.TemporaryDirectory() as tmp:
        with instrumented_runner() as chunks, measured() as m:
            summary = run_experiment(getattr(cai, name), out=Path(tmp) / "run", reps=reps,
                                     progress=False)
    print(json.dumps({**m, "compute_s": chunks["compute_s"], "lanes": summary.lanes_run,
                      "rows": summary.rows_written}))


def run_figure_subprocess(name: str, reps: int, env: dict | None = None) -> dict:
    """Wall time of a whole process (imports + compile + run) for one figure."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--figure-worker", name, "--reps", str(reps)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True,
                          env={**os.environ, **(env or {})})
    wall = time.perf_counter() - t0
    inner = json.loads(done.stdout.strip().splitlines()[-1])
    return {"figure": name, "reps": reps, "process_wall_s": wall, "run_wall_s": inner["wall_s"],
            "compile_s": inner["compile_s"], "compiles": inner["compiles"],
            "compute_s": inner["compute_s"], "lanes": inner["lanes"]}


def persistent_cache_what_if(name: str, reps: int) -> list:
    """The same figure in two fresh processes sharing a JAX persistent compilation cache
    (which the `dpsim` command enables; run_experiment alone does not): how much of the compile time a second process saves."""
    with tempfile.TemporaryDirectory() as cache:
        env = {"JAX_COMPILATION_CACHE_DIR": cache, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
        return [run_figure_subprocess(name, reps, env) for _ in range(2)]


# ----------------------------------------------------------------------------- report

def ratio(a, b):
    return a / b if b else float("nan")


def comparison(engine: dict, scipy_res: dict, choix_res: dict, warm: dict | None = None) -> dict:
    rates = engine_rates(engine, warm)
    return {"engine_fits_per_s": rates["fits_per_s"],
            "engine_fits_per_s_excl_compile": rates["fits_per_s_excl_compile"],
            "scipy_fits_per_s": scipy_res["fits_per_s"], "choix_fits_per_s": choix_res["fits_per_s"],
            "choix_ilsr_dense_fits_per_s": choix_res["ilsr_dense_fits_per_s"],
            "engine_over_scipy": ratio(rates["fits_per_s"], scipy_res["fits_per_s"]),
            "engine_over_scipy_excl_compile": ratio(rates["fits_per_s_excl_compile"],
                                                    scipy_res["fits_per_s"]),
            "engine_over_choix": ratio(rates["fits_per_s"], choix_res["fits_per_s"]),
            "engine_over_choix_excl_compile": ratio(rates["fits_per_s_excl_compile"],
                                                    choix_res["fits_per_s"]),
            "engine_over_choix_ilsr_dense": ratio(rates["fits_per_s"],
                                                  choix_res["ilsr_dense_fits_per_s"])}


def _engine_row(label: str, run: dict) -> str:
    fps = run["mle_fits"] / run["wall_s"]
    return (f"{label:46s} {run['wall_s']:8.2f} {run['compile_s']:8.2f} {run['compute_s']:8.2f} "
            f"{run['host_s']:7.2f} {fps:9.1f} {1e3 / fps:8.2f}")


def _baseline_row(label: str, total_fits: int, fits_per_s: float) -> str:
    return (f"{label:46s} {total_fits / fits_per_s:8.2f} {'':8s} {'':8s} {'':7s} {fits_per_s:9.2f} "
            f"{1e3 / fits_per_s:8.2f}")


def print_workload(title: str, total_fits: int, engine_runs: list, scipy_res: dict,
                   choix_res: dict, cmp: dict, target: float) -> None:
    print(f"\n== {title}: {total_fits} MLE fits (plus noisy counts) ==")
    print(f"{'contender':46s} {'wall s':>8s} {'compile':>8s} {'compute':>8s} {'other':>7s} "
          f"{'fits/s':>9s} {'ms/fit':>8s}")
    for label, run in engine_runs:
        print(_engine_row(label, run))
    print(_baseline_row(f"SciPy L-BFGS-B loop ({scipy_res['fits_timed']} fits timed, extrap.)",
                        total_fits, scipy_res["fits_per_s"]))
    print(_baseline_row(f"choix.opt_pairwise ε=∞ ({choix_res['fits_timed']} fits timed, extrap.)",
                        total_fits, choix_res["fits_per_s"]))
    print(_baseline_row("  ref: choix.ilsr_pairwise_dense (unpenalised)", total_fits,
                        choix_res["ilsr_dense_fits_per_s"]))
    ok = "MET" if cmp["engine_over_scipy"] >= target else "NOT MET"
    ok_excl = "MET" if cmp["engine_over_scipy_excl_compile"] >= target else "NOT MET"
    print(f"engine/scipy = {cmp['engine_over_scipy']:.2f}× incl. compile ({ok}), "
          f"{cmp['engine_over_scipy_excl_compile']:.1f}× excl. compile ({ok_excl}); "
          f"target ≥ {target:.0f}×")
    print(f"engine/choix.opt_pairwise = {cmp['engine_over_choix']:.1f}× "
          f"(excl. compile {cmp['engine_over_choix_excl_compile']:.1f}×); "
          f"engine/choix.ilsr_pairwise_dense = {cmp['engine_over_choix_ilsr_dense']:.2f}×")
    print(f"SciPy: L-BFGS-B iterations mean {scipy_res['lbfgs_iterations_mean']:.1f}, final "
          f"‖∇R‖∞ median {scipy_res['grad_inf_median']:.1e}, max {scipy_res['grad_inf_max']:.1e} "
          f"(engine: ≤ 1e-10); a single process (one core), engine uses both")


def print_profile(prof: dict, run: dict, micro_one: dict | None) -> None:
    fits = run["mle_fits"]
    print(f"\n== Where the engine's time goes (n = {prof['n']}, jitted, float64) ==")
    print(f"Fig. 3 cold run above: wall {run['wall_s']:.1f} s; compile {run['compile_s']:.1f} s "
          f"({run['compiles']} XLA compiles, partly overlapped with compute by the runner's "
          f"background compile); chunk compute {run['compute_s']:.1f} s, summed over chunks "
          f"computed at the same time "
          f"({1e3 * run['compute_s'] / fits:.2f} ms/fit); other (unhidden compile, rows, Parquet, "
          f"keys) {run['host_s']:.1f} s; CPU {run['cpu_s']:.1f} s")
    if micro_one:
        print(f"same workload ({micro_one['mle_fits']} fits) with the runner's micro-batch forced to 1: "
              f"compute {1e3 * micro_one['compute_s'] / micro_one['mle_fits']:.2f} ms/fit "
              f"(vs {1e3 * run['compute_s'] / fits:.2f} at micro-batch {prof['micro_batch']})")
    print(f"one evaluate (gradient + Laplacian weights)  {prof['evaluate_us']:8.1f} µs")
    print(f"one Hessian–vector product                   {prof['hvp_us']:8.1f} µs")
    print(f"per fit over {prof['problems']} Fig. 3 problems: Newton {prof['newton_iterations_mean']:.1f}, "
          f"CG {prof['cg_iterations_mean']:.1f}, evaluations {prof['evaluations_mean']:.1f} → "
          f"evaluations·t_eval + CG·t_hvp = {prof['model_ms']:.2f} ms")
    print(f"solve one problem at a time, per fit         {prof['solve_one_by_one_ms_per_fit']:8.2f} ms "
          f"(evaluate ≈ {100 * prof['evaluate_share_of_solve']:.0f}%, "
          f"hvp ≈ {100 * prof['hvp_share_of_solve']:.0f}%)")
    print(f"solve vmapped by {prof['micro_batch']} (runner's micro), per fit  "
          f"{prof['solve_vmapped_ms_per_fit']:8.2f} ms")
    print(f"results table: Newton iterations mean {run['newton_iterations_mean']:.2f}, "
          f"max {run['newton_iterations_max']}, by p (mean, max) {run['newton_iterations_by_p']}; "
          f"converged {100 * run['converged_fraction']:.1f}%")


# ----------------------------------------------------------------------------- W, T

def small_n_experiment(n: int):
    return cai.edge_experiment(f"bench-n{n}", f"benchmark n = {n}",
                               {"n_items": [n], "p": [1.0], "eps": EPS})


def workers_what_if(cfg: Config) -> list:
    """Warm wall time of the same workload with the default workers and with one."""
    rows = []
    for label, experiment in ((f"B, n = 40, p = 1, {cfg.reps} reps", small_n_experiment(40)),
                              (f"A, Fig. 3, n = 300, {cfg.reps} reps", cai.FIG3)):
        settings = {"default": None, "1": 1}
        for workers in settings.values():          # compile both layouts first
            run_engine(experiment, cfg.reps, workers=workers)
        best = {name: math.inf for name in settings}
        for _ in range(3):
            for name, workers in settings.items():
                best[name] = min(best[name], run_engine(experiment, cfg.reps, workers=workers)["wall_s"])
        rows.append({"workload": label, "default_workers": runner.default_workers(),
                     "wall_s_default": best["default"], "wall_s_one_worker": best["1"],
                     "speedup": best["1"] / best["default"]})
    print(f"\n== W. Concurrent chunks (compile excluded, best of 3) ==")
    for r in rows:
        print(f"{r['workload']:34s} workers = {r['default_workers']}: {r['wall_s_default']:7.3f} s   "
              f"workers = 1: {r['wall_s_one_worker']:7.3f} s   ({r['speedup']:.2f}×)")
    return rows


def topk_paths(sizes=((20, 128), (40, 128), (100, 32), (300, 4), (1000, 1))) -> list:
    """µs per ``tie_broken_ranks`` call, sort vs pairwise, vmapped over (micro-batch × 10 ε)."""
    from dpsim.estimators import topk
    rows = []
    for n, micro in sizes:
        scores = jnp.round(3 * jax.random.normal(jax.random.key(n), (micro * len(EPS), n)))
        jitter = jax.random.uniform(jax.random.key(n + 1), scores.shape)
        times = {}
        for path, limit in (("sort", 0), ("pairwise", 10**9)):
            original = topk.PAIRWISE_RANK_MAX_N
            topk.PAIRWISE_RANK_MAX_N = limit
            try:
                fn = jax.jit(jax.vmap(topk.tie_broken_ranks))
                jax.block_until_ready(fn(scores, jitter))
            finally:
                topk.PAIRWISE_RANK_MAX_N = original
            times[path] = best_time(lambda: fn(scores, jitter), repeats=30) / scores.shape[0] * 1e6
        rows.append({"n": n, "calls": int(scores.shape[0]), "sort_us": times["sort"],
                     "pairwise_us": times["pairwise"], "engine_uses": "pairwise"
                     if n <= topk.PAIRWISE_RANK_MAX_N else "sort"})
    print("\n== T. Top-k ranks, µs per call (vmapped) ==")
    for r in rows:
        print(f"n = {r['n']:5d}: sort {r['sort_us']:8.2f}   pairwise {r['pairwise_us']:8.2f}   "
              f"(engine uses {r['engine_uses']})")
    return rows


def print_figures(figs: list, target: float) -> None:
    print("\n== Figures at paper size, engine, one fresh process each ==")
    print(f"{'figure':8s} {'reps':>5s} {'lanes':>6s} {'compiles':>8s} {'process s':>10s} "
          f"{'run s':>8s} {'compile s':>10s} {'compute s':>10s}")
    for f in figs:
        print(f"{f['figure']:8s} {f['reps']:5d} {f['lanes']:6d} {f['compiles']:8d} "
              f"{f['process_wall_s']:10.1f} {f['run_wall_s']:8.1f} {f['compile_s']:10.1f} "
              f"{f['compute_s']:10.1f}")
    total = sum(f["process_wall_s"] for f in figs)
    ok = "MET" if total < target else "NOT MET"
    print(f"total {total:.1f} s  (target < {target:.0f} s for Figs 1–3: {ok})")


def print_cache_what_if(runs: list) -> None:
    first, second = runs
    print(f"what-if, JAX persistent compilation cache, {first['figure']} ({first['reps']} reps) in two "
          f"fresh processes: compile {first['compile_s']:.1f} s → {second['compile_s']:.1f} s, "
          f"process {first['process_wall_s']:.1f} s → {second['process_wall_s']:.1f} s")


# ----------------------------------------------------------------------------- main

def workload_a(cfg: Config, results: dict) -> dict:
    runs = [("engine run_experiment(FIG3), cold", run_engine(cai.FIG3, cfg.reps))]
    if cfg.warm_rerun:
        runs.append((f"engine, warm re-run (best of {WARM_RUNS})", warm_run(cai.FIG3, cfg.reps)))
    scipy_res = scipy_loop(300, FIG3_P, cfg.scipy_lanes_n300)
    choix_res = choix_loop(300, FIG3_P, cfg.choix_fits_n300)
    cmp = comparison(runs[0][1], scipy_res, choix_res, runs[1][1] if len(runs) > 1 else None)
    total = len(FIG3_P) * len(EPS) * cfg.reps
    print_workload(f"A. cai Fig. 3, n = 300, {cfg.reps} reps", total, runs, scipy_res, choix_res,
                   cmp, TARGETS["engine_vs_scipy_n300"])
    results["A_fig3_n300"] = {"engine": {label: run for label, run in runs}, "scipy": scipy_res,
                              "choix": choix_res, "comparison": cmp}
    return runs[0][1]


def workload_b(cfg: Config, results: dict) -> None:
    for n in cfg.small_ns:
        exp = small_n_experiment(n)
        engine = run_engine(exp, cfg.reps)
        warm = warm_run(exp, cfg.reps) if cfg.warm_rerun else None
        scipy_res = scipy_loop(n, [1.0], cfg.scipy_lanes_small)
        choix_res = choix_loop(n, [1.0], cfg.choix_fits_small)
        cmp = comparison(engine, scipy_res, choix_res, warm)
        runs = [("engine run_experiment, cold", engine)]
        if warm is not None:
            runs.append((f"engine, warm re-run (best of {WARM_RUNS})", warm))
        print_workload(f"B. small n = {n}, p = 1, {cfg.reps} reps", len(EPS) * cfg.reps,
                       runs, scipy_res, choix_res, cmp, TARGETS["engine_vs_scipy_small_n"])
        results[f"B_n{n}"] = {"engine": engine, "engine_warm": warm, "scipy": scipy_res,
                              "choix": choix_res, "comparison": cmp}


def workload_p(cfg: Config, engine_fig3: dict, results: dict) -> None:
    profile = profile_engine(cfg)
    micro_one = (run_engine(cai.FIG3, cfg.micro_one_reps, micro_batch_bytes=1)
                 if cfg.micro_one_reps else None)
    print_profile(profile, engine_fig3, micro_one)
    results["profile_n300"] = {**profile, "fig3_run_micro_batch_1": micro_one}


def workload_c(cfg: Config, results: dict) -> None:
    if not cfg.figures:
        print("\n== C. Figures 1–3: skipped in --quick ==")
        return
    figs = [run_figure_subprocess(name, cfg.figure_reps) for name in cfg.figures]
    print_figures(figs, TARGETS["figs_total_s"])
    results["C_figures"] = {"runs": figs, "total_s": sum(f["process_wall_s"] for f in figs)}
    if cfg.cache_what_if:
        cache_runs = persistent_cache_what_if("FIG3", cfg.figure_reps)
        print_cache_what_if(cache_runs)
        results["C_figures"]["persistent_cache_what_if"] = cache_runs


def check_agreement(cfg: Config, results: dict) -> None:
    rows = [agreement(n, p, eps) for n, p, eps in cfg.agreement]
    print("\n== Agreement on the same W, γ, w (engine penalised_mle vs others) ==")
    for r in rows:
        print(f"n = {r['n']:3d} p = {r['p']:<4} ε ∈ {{{', '.join(r['eps'])}}}: max|Δθ| scipy "
              f"{r['max_abs_diff_scipy']:.1e}, choix (ε=∞) {r['max_abs_diff_choix_eps_inf']:.1e}")
    results["agreement"] = rows


def jsonable(value):
    """Strict-JSON copy: tuples → lists, non-finite floats → strings ("inf", "nan")."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else str(float(value))
    if isinstance(value, np.integer):
        return int(value)
    return value


def environment() -> dict:
    import choix
    return {"python": platform.python_version(), "jax": jax.__version__, "numpy": np.__version__,
            "scipy": scipy.__version__, "choix": getattr(choix, "__version__", "?"),
            "backend": jax.default_backend(), "cpu_count": os.cpu_count(),
            "platform": platform.platform(), "loadavg_start": os.getloadavg()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run (< 1 min)")
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma-separated subset of {','.join(SECTIONS)} (default: all)")
    parser.add_argument("--figure-worker", help=argparse.SUPPRESS)
    parser.add_argument("--reps", type=int, default=120, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.figure_worker:
        figure_worker(args.figure_worker, args.reps)
        return
    sections = [part.strip().upper() for part in args.sections.split(",") if part.strip()]
    unknown = [part for part in sections if part not in SECTIONS]
    if unknown or not sections:
        parser.error(f"--sections {args.sections!r}: unknown section(s) {unknown}; choose from {SECTIONS}")

    cfg = QUICK if args.quick else FULL
    mode = "quick" if args.quick else ("full" if set(sections) == set(SECTIONS) else "partial")
    started = time.perf_counter()
    results = {"mode": mode, "sections": sections, "config": asdict(cfg),
               "environment": environment(), "targets": TARGETS}
    print(f"dpsim cai benchmark ({mode}: {','.join(sections)}); {results['environment']['cpu_count']} CPUs, "
          f"jax {jax.__version__} ({jax.default_backend()}), load average at start "
          f"{results['environment']['loadavg_start'][0]:.2f}")
    if args.quick:
        print("smoke run: numbers are not representative (compile dominates)")

    if "A" in sections:
        engine_fig3 = workload_a(cfg, results)
        if "P" in sections:
            workload_p(cfg, engine_fig3, results)
    if "B" in sections:
        workload_b(cfg, results)
    if "W" in sections:
        results["W_workers"] = workers_what_if(cfg)
    if "T" in sections:
        results["T_topk_ranks"] = topk_paths()
    if "S" in sections:
        design = [solver_design(n, copies, micro_batch_size(cai.lane_bytes({"n_items": n})))
                  for n, copies in cfg.solver_design]
        print_solver_design(design)
        results["S_solver_design"] = design
    check_agreement(cfg, results)
    if "C" in sections:
        workload_c(cfg, results)

    results["environment"]["loadavg_end"] = os.getloadavg()
    results["benchmark_wall_s"] = time.perf_counter() - started
    path = RESULTS[mode]
    path.write_text(json.dumps(jsonable(results), indent=2, allow_nan=False))
    print(f"\nload average at end {results['environment']['loadavg_end'][0]:.2f}; "
          f"benchmark took {results['benchmark_wall_s']:.0f} s; wrote {path.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
