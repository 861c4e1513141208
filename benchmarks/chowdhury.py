"""Benchmark: the dpsim engine on chowdhury's Figure 1 workload against a per-replicate
SciPy/NumPy loop and scikit-learn.

Run ``python -m benchmarks.chowdhury [--quick] [--sections A,B,G]`` from the repository root
(needs the ``bench`` extra: scikit-learn). Everything is measured side by side in one run on
one machine; ``benchmarks/results/chowdhury.json`` is written (``_quick`` / ``_partial`` are
git-ignored). Timing, results file and command line: :mod:`benchmarks.harness`.

Sections
--------
A. Figure 1, exact reading (``chowdhury-fig1``: d = 5, n ∈ {1000, …, 10000}, ε ∈ {0.1, 0.5, 1},
   δ = 10⁻³, 100 replicates): per replicate one MLE, three θ̂_RR and three θ̂_obj, i.e. 7000
   exact fits.
   1. engine: ``run_experiment`` end to end (data, RR, the three estimators, metrics, Parquet)
      into fresh directories: a cold run (compiled programs forgotten, so compilation is
      included) and a warm re-run.
   2. SciPy loop, as a user would write it: per replicate the data in NumPy; per fit
      ``scipy.optimize.minimize(method="trust-exact")`` with the analytic gradient and Hessian
      (the same objective as the engine, averaged), from 0; when the unconstrained minimiser
      leaves the ball ‖θ‖ ≤ B (θ̂_RR at small ε), ``method="trust-constr"`` with the ball as a
      nonlinear constraint; θ̂_obj with its Gaussian w. A subset of replicates (spread over
      n) is timed and the time per fit extrapolated.
   3. vectorised NumPy (:mod:`benchmarks.vectorised`): a batch of replicates at one n drawn in
      one call per quantity, their 7 fits each solved by one batched damped Newton (tolerance
      1e-10); fits whose minimiser leaves the ball by one batched Newton on the sphere's KKT
      system (any it cannot solve by the SciPy loop's constrained fit, counted in its time). One batch per n, the time per fit extrapolated.
   4. scikit-learn: ``LogisticRegression(C=inf, fit_intercept=False, tol=1e-10)`` (no penalty)
      (lbfgs), the non-private MLE only (the one estimator it offers: it has neither a
      linear perturbation term nor surrogate labels outside [0, 1]), on the same kind of data.
B. Figure 1, SGD reading (``chowdhury-fig1-sgd``: the same grid, three schedules, one-pass
   SGD for the three estimators: 27 passes per replicate): the engine against a NumPy loop
   over the samples (one Python step per sample, projection included), subset timed and
   extrapolated.
G. Agreement: on the same data the engine's exact estimators and the SciPy fits and the
   vectorised fits (max |Δθ|), and the engine's MLE and scikit-learn's.

The NumPy/SciPy/scikit-learn baselines run in one process with one OpenBLAS thread
(:mod:`benchmarks`); the engine uses XLA's threads and the runner's concurrent chunks.
``--quick`` shrinks every part (the engine at 4 replicates, few timed baseline fits); its
ratios are not representative (compilation dominates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from benchmarks import harness  # first: sets the BLAS threads before NumPy loads

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.vectorised import batched_newton, batched_sphere_newton
from dpsim.estimators.linear_btl import mle, objective_perturbation, rr_debiased
from dpsim.experiments.chowdhury import model
from dpsim.experiments.chowdhury.figures import fig1
from dpsim.mechanisms.objective_perturbation import gaussian_objective_perturbation

PAPER = "chowdhury"
EPS = model.PAPER_EPS
DELTA = model.PAPER_DELTA
D = 5
B = 2 * math.sqrt(D)
SCIPY, SKLEARN, NUMPY_SGD = (
    "SciPy trust-exact loop",
    "sklearn LogisticRegression (MLE only)",
    "NumPy SGD loop",
)
VECTORISED = "vectorised NumPy (batched Newton)"
TARGETS = {"engine_vs_vectorised": {"compiled": 1.0}}  # issue 25: the compiled engine ahead of it


@dataclass(frozen=True)
class Config:
    reps: int  # engine replicates per grid point (A, B)
    warm_runs: int
    scipy_lanes: int  # replicates timed for the SciPy loop (7 fits each)
    sklearn_fits: int
    numpy_sgd_passes: int  # NumPy SGD passes timed
    agreement_reps: int
    vectorised_reps: int  # replicates per batch of the vectorised baseline (one batch per n)
    vectorised_sizes: int  # how many n of the grid it is timed at


FULL = Config(
    reps=model.PAPER_REPS,
    warm_runs=1,
    scipy_lanes=30,
    sklearn_fits=100,
    numpy_sgd_passes=27,
    agreement_reps=3,
    vectorised_reps=10,
    vectorised_sizes=len(model.PAPER_N),
)
QUICK = Config(
    reps=4,
    warm_runs=0,
    scipy_lanes=3,
    sklearn_fits=10,
    numpy_sgd_passes=3,
    agreement_reps=1,
    vectorised_reps=2,
    vectorised_sizes=3,
)


# ----------------------------------------------------------------------------- NumPy data


def numpy_lane(seed: int, n: int):
    """θ* ~ N(0, I) given ‖θ*‖ ≤ B, x = ϕ¹ − ϕ⁰, BTL labels (docs/chowdhury.md, Experiments as run), in NumPy."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=D)
    while np.linalg.norm(theta) > B:
        theta = rng.normal(size=D)
    x = rng.normal(size=(n, D)) - rng.normal(size=(n, D))
    y = (rng.random(n) < 1 / (1 + np.exp(-x @ theta))).astype(float)
    return rng, theta, x, y


def rr_numpy(rng, y, eps):
    flip = rng.random(y.shape) < 1 / (1 + math.exp(eps))
    return np.where(flip, 1 - y, y)


def _objective(x, t, ridge, shift):
    from scipy.special import expit

    n = x.shape[0]

    def f(theta):
        z = x @ theta
        return np.mean(np.logaddexp(0, z) - t * z) + 0.5 * ridge * theta @ theta + shift @ theta

    def g(theta):
        return x.T @ (expit(x @ theta) - t) / n + ridge * theta + shift

    def h(theta):
        s = expit(x @ theta)
        return (x.T * (s * (1 - s))) @ x / n + ridge * np.eye(x.shape[1])

    return f, g, h


def scipy_fit(x, t, ridge=0.0, shift=None):
    """argmin over the B-ball of the averaged logistic objective on targets t (trust-exact;
    trust-constr with the ball constraint when the unconstrained minimiser leaves it)."""
    import scipy.optimize as so

    shift = np.zeros(x.shape[1]) if shift is None else shift
    f, g, h = _objective(x, t, ridge, shift)
    res = so.minimize(
        f, np.zeros(x.shape[1]), jac=g, hess=h, method="trust-exact", options={"gtol": 1e-10}
    )
    if np.linalg.norm(res.x) <= B and res.success:
        return res.x
    ball = so.NonlinearConstraint(
        lambda v: v @ v,
        -np.inf,
        B * B,
        jac=lambda v: 2 * v,
        hess=lambda v, lam: 2 * lam[0] * np.eye(len(v)),
    )
    res = so.minimize(
        f,
        np.zeros(x.shape[1]),
        jac=g,
        hess=h,
        method="trust-constr",
        constraints=[ball],
        options={"gtol": 1e-10, "xtol": 1e-12, "maxiter": 2000},
    )
    return res.x


def scipy_lane(item):
    """One replicate end to end as the engine does it: data, MLE, then per ε θ̂_RR and θ̂_obj."""
    seed, n = item
    rng, theta, x, y = numpy_lane(seed, n)
    out = [scipy_fit(x, y)]
    L = 0.5 * np.linalg.norm(x, axis=1).max()
    beta = math.sqrt(n) / B
    for eps in EPS:
        yt = rr_numpy(rng, y, eps)
        ybar = (yt * (math.exp(eps) + 1) - 1) / math.expm1(eps)
        out.append(scipy_fit(x, ybar))
        sigma = L * math.sqrt(8 * math.log(2 / DELTA) + 4 * eps) / eps
        w = sigma * rng.normal(size=D)
        out.append(scipy_fit(x, y, beta / n, w / n))
    return out


def sklearn_fit(item):
    from sklearn.linear_model import LogisticRegression

    seed, n = item
    _, _, x, y = numpy_lane(seed, n)
    return (
        LogisticRegression(C=np.inf, fit_intercept=False, tol=1e-10, max_iter=10_000)
        .fit(x, y)
        .coef_[0]
    )


def numpy_sgd_pass(item):
    """One pass of projected SGD with constant η = 0.1 (the literal reading) for the RR labels:
    ĝ = (p̃₁(z) − ỹ)x (Alg. 1, chowdhury Algorithm 1, eq. (10), §4.3), projection onto the B-ball."""
    seed, n, eps = item
    rng, _, x, y = numpy_lane(seed, n)
    yt = rr_numpy(rng, y, eps)
    keep = 1 / (1 + math.exp(-eps))
    theta = np.zeros(D)
    for t in range(n):
        z = x[t] @ theta
        g = ((1 - keep) + (2 * keep - 1) / (1 + math.exp(-z)) - yt[t]) * x[t]
        theta = theta - 0.1 * g
        norm = math.sqrt(theta @ theta)
        if norm > B:
            theta *= B / norm
    return theta


def _items(count: int, seed: int = 0):
    """``count`` (seed, n) pairs spread over the Fig. 1 n grid."""
    return [(seed * 10_007 + i, model.PAPER_N[i % len(model.PAPER_N)]) for i in range(count)]


# ----------------------------------------------------------------------------- vectorised NumPy


def logistic_derivs(x: np.ndarray, t: np.ndarray, ridge: np.ndarray, shift: np.ndarray):
    """``derivs(θ, rows)`` of the averaged logistic objective (1/n)Σ softplus(xᵀθ) − t xᵀθ +
    ½ridge‖θ‖² + shiftᵀθ for k problems (one replicate's x shared by its fits), for
    :func:`benchmarks.vectorised.batched_newton`. Shapes: x (k, n, d) (a broadcast view is
    fine), t (k, n), ridge (k,), shift (k, d)."""
    from scipy.special import expit

    n, d = x.shape[1], x.shape[2]

    def derivs(theta, rows):
        xr = x[rows]
        s = expit(np.einsum("knd,kd->kn", xr, theta))
        grad = (
            np.einsum("knd,kn->kd", xr, s - t[rows]) / n + ridge[rows, None] * theta + shift[rows]
        )
        hess = np.einsum("knd,kn,kne->kde", xr, s * (1.0 - s), xr, optimize=True) / n
        return grad, hess + ridge[rows, None, None] * np.eye(d)

    return derivs


def vectorised_replicates(rng, n: int, reps: int):
    """``reps`` replicates' data in one call each: θ* ~ N(0, I) given ‖θ*‖ ≤ B (rejection,
    redrawing only the rejected rows), x = ϕ¹ − ϕ⁰ (reps, n, D) and the BTL labels."""
    theta = rng.normal(size=(reps, D))
    while (out := np.linalg.norm(theta, axis=1) > B).any():
        theta[out] = rng.normal(size=(int(out.sum()), D))
    x = rng.normal(size=(reps, n, D)) - rng.normal(size=(reps, n, D))
    y = (rng.random((reps, n)) < 1 / (1 + np.exp(-np.einsum("rnd,rd->rn", x, theta)))).astype(float)
    return theta, x, y


def vectorised_problems(rng, x: np.ndarray, y: np.ndarray):
    """The 7 exact fits of each replicate as (targets (reps, 7, n), ridge (7,), shift (reps, 7, D)):
    the MLE, θ̂_RR at each ε (RR of all labels in one call, de-biased) and θ̂_obj at each ε."""
    reps, n, _ = x.shape
    eps = np.asarray(EPS)
    flip = rng.random((reps, len(EPS), n)) < 1 / (1 + np.exp(eps))[None, :, None]
    ybar = (
        np.where(flip, 1 - y[:, None], y[:, None]) * (np.exp(eps) + 1)[None, :, None] - 1
    ) / np.expm1(eps)[None, :, None]
    L = 0.5 * np.linalg.norm(x, axis=2).max(axis=1)  # (reps,)
    sigma = L[:, None] * np.sqrt(8 * math.log(2 / DELTA) + 4 * eps)[None, :] / eps[None, :]
    w = sigma[..., None] * rng.normal(size=(reps, len(EPS), D))
    targets = np.concatenate(
        [y[:, None], ybar, np.broadcast_to(y[:, None], (reps, len(EPS), n))], axis=1
    )
    ridge = np.concatenate([np.zeros(1 + len(EPS)), np.full(len(EPS), math.sqrt(n) / B / n)])
    shift = np.concatenate([np.zeros((reps, 1 + len(EPS), D)), w / n], axis=1)
    return targets, ridge, shift


def vectorised_fits(
    x: np.ndarray, targets: np.ndarray, ridge: np.ndarray, shift: np.ndarray
) -> tuple[np.ndarray, int]:
    """argmin over the B-ball of every fit of every replicate: one batched Newton (the engine's
    tolerance 1e-10) on all of them; the fits whose iterate leaves 2B or whose minimiser lies
    outside the ball (θ̂_RR at small ε) by one batched Newton on the sphere's KKT system
    (:func:`benchmarks.vectorised.batched_sphere_newton`); any fit that fails both (none
    measured) by :func:`scipy_fit` with the ball constraint, as the loop does. Shapes: x (reps, n, D), targets (reps, f, n), ridge (f,), shift (reps, f, D).
    Returns (θ̂ (reps, f, D), how many fits fell back to SciPy)."""
    reps, f, n = targets.shape
    xk = np.broadcast_to(x[:, None], (reps, f, n, D)).reshape(reps * f, n, D)
    theta, _, grad_inf = batched_newton(
        logistic_derivs(
            xk, targets.reshape(reps * f, n), np.tile(ridge, reps), shift.reshape(reps * f, D)
        ),
        np.zeros((reps * f, D)),
        1e-10,
        abandon=lambda th: np.linalg.norm(th, axis=1) > 2 * B,
    )
    outside = np.flatnonzero((grad_inf > 1e-10) | (np.linalg.norm(theta, axis=1) > B))
    if outside.size:
        derivs = logistic_derivs(
            xk[outside],
            targets.reshape(reps * f, n)[outside],
            np.tile(ridge, reps)[outside],
            shift.reshape(reps * f, D)[outside],
        )
        on_sphere, ok = batched_sphere_newton(derivs, theta[outside], B, 1e-10)
        theta[outside[ok]] = on_sphere[ok]
        outside = outside[~ok]
    redo = outside
    for k in redo:
        r = k // f
        theta[k] = scipy_fit(x[r], targets[r, k % f], ridge[k % f], shift[r, k % f])
    return theta.reshape(reps, f, D), int(redo.size)


def vectorised_batch(item) -> int:
    """One batch of replicates at one n end to end in arrays: data, RR and perturbations, the
    7 fits each. Returns the SciPy fallbacks (the constrained fits)."""
    seed, n, reps = item
    rng = np.random.default_rng(seed)
    _, x, y = vectorised_replicates(rng, n, reps)
    return vectorised_fits(x, *vectorised_problems(rng, x, y))[1]


def vectorised_items(reps: int, sizes: int, seed: int = 4) -> list:
    """(seed, n, reps) batches at the first ``sizes`` n of the Fig. 1 grid."""
    return [(seed * 10_007 + i, n, reps) for i, n in enumerate(model.PAPER_N[:sizes])]


# ----------------------------------------------------------------------------- sections


def engine_diagnostics(table) -> dict:
    return {
        "converged_fraction": float(table["converged"].astype(bool).mean()),
        "newton_iterations_mean": float(table["iterations"].mean()),
        "newton_iterations_max": int(table["iterations"].max()),
    }


def section_a(bench: harness.Bench) -> dict:
    cfg = bench.cfg
    engine = harness.measure_engine(
        fig1.FIG1, cfg.reps, warm_runs=cfg.warm_runs, describe=engine_diagnostics
    )
    lanes = engine["cold"]["lanes"]
    total = engine["cold"]["fits"] * 7 // 9  # rows: 3 methods × 3 ε; fits: 1 MLE + 3 + 3
    for run in (engine["cold"], engine["warm"]):
        if run is not None:
            run["fits"] = total
    scipy_stats, _ = harness.time_baseline(
        harness.Baseline(SCIPY, scipy_lane, fits_per_item=7), _items(cfg.scipy_lanes)
    )
    sk_stats, _ = harness.time_baseline(
        harness.Baseline(SKLEARN, sklearn_fit, note="MLE only"), _items(cfg.sklearn_fits, 1)
    )
    vectorised_batch((0, model.PAPER_N[0], 1))  # warm-up, untimed
    vec_stats, fallbacks = harness.time_baseline(
        harness.Baseline(
            VECTORISED,
            vectorised_batch,
            fits_per_item=7 * cfg.vectorised_reps,
            note="replicates × 7 fits batched; constrained fits by SciPy",
        ),
        vectorised_items(cfg.vectorised_reps, cfg.vectorised_sizes),
    )
    vec_stats["scipy_fallback_fits"] = int(sum(fallbacks))
    runs = {"engine run_experiment, cold": engine["cold"]}
    if engine["warm"] is not None:
        runs["engine, warm re-run"] = engine["warm"]
    harness.print_table(
        harness.contender_table(
            f"A. chowdhury Fig. 1 (exact), {lanes} replicate lanes: {total} exact fits",
            runs,
            {SCIPY: scipy_stats, VECTORISED: vec_stats, SKLEARN: sk_stats},
            total,
        )
    )
    rates = harness.engine_rates(engine["cold"], engine["warm"])
    rows = harness.compare(
        {"cold": rates["fits_per_s"], "compiled": rates["fits_per_s_excl_compile"]},
        {
            SCIPY: scipy_stats["fits_per_s"],
            VECTORISED: vec_stats["fits_per_s"],
            SKLEARN: sk_stats["fits_per_s"],
        },
        targets={(mode, VECTORISED): v for mode, v in TARGETS["engine_vs_vectorised"].items()},
    )
    harness.print_table(
        harness.comparison_table("engine ÷ baselines (exact fits per second)", rows)
    )
    print(
        f"vectorised: {vec_stats['scipy_fallback_fits']} of {vec_stats['fits_timed']} fits fell back to SciPy "
        f"trust-constr (the batched sphere Newton did not converge)"
    )
    return {
        "engine": engine,
        "engine_rates": rates,
        "total_fits": total,
        "scipy": scipy_stats,
        "sklearn": sk_stats,
        "vectorised": vec_stats,
        "comparison": rows,
    }


def section_b(bench: harness.Bench) -> dict:
    cfg = bench.cfg
    engine = harness.measure_engine(fig1.FIG1_SGD, cfg.reps, warm_runs=cfg.warm_runs)
    passes = engine["cold"]["fits"]  # one SGD pass per row
    items = [(s, n, EPS[i % len(EPS)]) for i, (s, n) in enumerate(_items(cfg.numpy_sgd_passes, 2))]
    np_stats, _ = harness.time_baseline(harness.Baseline(NUMPY_SGD, numpy_sgd_pass), items)
    runs = {"engine run_experiment, cold": engine["cold"]}
    if engine["warm"] is not None:
        runs["engine, warm re-run"] = engine["warm"]
    harness.print_table(
        harness.contender_table(
            f"B. chowdhury Fig. 1 by SGD: {passes} one-pass SGD fits",
            runs,
            {NUMPY_SGD: np_stats},
            passes,
        )
    )
    rates = harness.engine_rates(engine["cold"], engine["warm"])
    rows = harness.compare(
        {"cold": rates["fits_per_s"], "compiled": rates["fits_per_s_excl_compile"]},
        {NUMPY_SGD: np_stats["fits_per_s"]},
    )
    harness.print_table(
        harness.comparison_table("engine ÷ NumPy loop (SGD passes per second)", rows)
    )
    return {
        "engine": engine,
        "engine_rates": rates,
        "passes": passes,
        "numpy": np_stats,
        "comparison": rows,
    }


def section_g(bench: harness.Bench) -> dict:
    """max |θ_engine − θ_other| on the same (NumPy-drawn) data."""
    from sklearn.linear_model import LogisticRegression

    worst = {
        "mle_scipy": 0.0,
        "rr_scipy": 0.0,
        "objpert_scipy": 0.0,
        "mle_sklearn": 0.0,
        "mle_vectorised": 0.0,
        "rr_vectorised": 0.0,
        "objpert_vectorised": 0.0,
    }
    for seed, n in _items(bench.cfg.agreement_reps, 3):
        rng, _, x, y = numpy_lane(seed, n)
        xj, yj = jnp.asarray(x), jnp.asarray(y)
        engine_mle = np.asarray(mle(xj, yj, B).theta)
        worst["mle_scipy"] = max(
            worst["mle_scipy"], float(np.abs(engine_mle - scipy_fit(x, y)).max())
        )
        sk = (
            LogisticRegression(C=np.inf, fit_intercept=False, tol=1e-12, max_iter=10_000)
            .fit(x, y)
            .coef_[0]
        )
        worst["mle_sklearn"] = max(worst["mle_sklearn"], float(np.abs(engine_mle - sk).max()))
        vec = lambda t, ridge=0.0, shift=np.zeros(D): vectorised_fits(
            x[None], t[None, None], np.array([ridge]), shift[None, None]
        )[0][0, 0]
        worst["mle_vectorised"] = max(
            worst["mle_vectorised"], float(np.abs(engine_mle - vec(y)).max())
        )
        for eps in EPS:
            yt = rr_numpy(rng, y, eps)
            ybar = (yt * (math.exp(eps) + 1) - 1) / math.expm1(eps)
            rr = np.asarray(rr_debiased(xj, jnp.asarray(yt), eps, B).theta)
            worst["rr_scipy"] = max(worst["rr_scipy"], float(np.abs(rr - scipy_fit(x, ybar)).max()))
            worst["rr_vectorised"] = max(
                worst["rr_vectorised"], float(np.abs(rr - vec(ybar)).max())
            )
            release = gaussian_objective_perturbation(jax.random.key(seed), xj, eps, DELTA, B)
            fit = objective_perturbation(xj, yj, release, B)
            w, beta = np.asarray(release.w), float(release.beta)
            op = scipy_fit(x, y, beta / n, w / n)
            worst["objpert_scipy"] = max(
                worst["objpert_scipy"], float(np.abs(np.asarray(fit.theta) - op).max())
            )
            worst["objpert_vectorised"] = max(
                worst["objpert_vectorised"],
                float(np.abs(np.asarray(fit.theta) - vec(y, beta / n, w / n)).max()),
            )
    harness.print_table(
        harness.format_table(
            "G. agreement on the same data: max |θ_engine − θ_other|",
            ("estimator", "max |Δθ|"),
            [[k, v] for k, v in worst.items()],
            (None, "{:.1e}"),
        )
    )
    return worst


SECTIONS = (
    harness.Section(
        "A", "Fig. 1 exact: engine vs SciPy loop vs vectorised NumPy vs scikit-learn", section_a
    ),
    harness.Section("B", "Fig. 1 SGD: engine vs NumPy loop", section_b),
    harness.Section(
        "G", "agreement with SciPy, scikit-learn and the vectorised baseline", section_g
    ),
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
