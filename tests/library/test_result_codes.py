"""Result codes beside ``converged`` (dpsim.results) and the final gradient norm of a fit.

Each code is forced by a case that must produce it (max steps: a one-iteration solve;
non-finite: NaN data, traced so that the concrete-input check does not refuse it;
disconnected: a comparison chain in two classes); ``grad_norm`` is checked against ‖∇f‖∞
recomputed here with ``jax.grad`` of the objective written out independently; everything
runs under ``vmap`` without an exception; and the runner's warning, the manifest and
``dpsim summary`` name the reasons.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpsim.cli import main
from dpsim.estimators import (
    debiased_m_estimator,
    exact_solve_result,
    mle,
    penalised_mle,
    sgd_mle,
    spectral_estimate,
)
from dpsim.engine import Method, solver_diagnostics
from dpsim.engine.execution.runner import run_experiment
from dpsim.results import (
    NAMES,
    RESULTS,
    describe,
    first_failure,
    reasons,
    solver_result,
    where_disconnected,
)
from toy import toy_experiment

SUCCESSFUL, MAX_STEPS, NONFINITE, DISCONNECTED = (
    int(RESULTS.successful),
    int(RESULTS.max_steps_reached),
    int(RESULTS.nonfinite),
    int(RESULTS.disconnected),
)

# A 4-item comparison matrix whose graph is connected (every pair compared).
W4 = jnp.array(
    [[0.0, 3.0, 1.0, 2.0], [2.0, 0.0, 4.0, 1.0], [1.0, 2.0, 0.0, 3.0], [2.0, 1.0, 1.0, 0.0]]
)


def btl_penalised_objective(theta, W, gamma, w):
    """Σ_ij W_ij log(1 + e^{θ_j − θ_i}) + (γ/2)‖θ‖² + wᵀθ, written out here (not the library's)."""
    diff = theta[None, :] - theta[:, None]
    return (
        jnp.sum(W * jnp.logaddexp(0.0, diff))
        + 0.5 * gamma * jnp.dot(theta, theta)
        + jnp.dot(w, theta)
    )


def sup_grad(f, theta, *args):
    return float(jnp.max(jnp.abs(jax.grad(f)(theta, *args))))


# ------------------------------------------------------------------ the vocabulary


def test_codes_names_and_words():
    assert NAMES == {0: "successful", 1: "max_steps_reached", 2: "nonfinite", 3: "disconnected"}
    assert [describe(c) for c in range(4)] == [
        "converged",
        "max steps",
        "non-finite",
        "disconnected",
    ]
    assert describe(None) == "no solver" and describe(float("nan")) == "no solver"
    assert describe(9) == "unknown code 9"
    assert reasons([1, 0, 2, 1, None, float("nan"), 1, 0]) == "3 max steps, 1 non-finite"
    assert reasons([0, 0]) == "" and reasons([]) == ""


def test_codes_from_a_solver_state_are_int8_and_traceable():
    met = jnp.array([True, False, True, False])
    x = jnp.array([[1.0, 2.0], [1.0, 2.0], [jnp.nan, 0.0], [jnp.inf, 0.0]])
    codes = jax.jit(jax.vmap(solver_result))(met, x)
    assert codes.dtype == jnp.int8
    assert codes.tolist() == [SUCCESSFUL, MAX_STEPS, NONFINITE, NONFINITE]
    connected = jnp.array([True, False, False, False])
    assert jax.vmap(where_disconnected)(codes, connected).tolist() == [
        SUCCESSFUL,
        DISCONNECTED,
        NONFINITE,
        NONFINITE,
    ]
    assert first_failure(0, 0).tolist() == SUCCESSFUL
    assert first_failure(0, 1).tolist() == MAX_STEPS
    assert first_failure(2, 1).tolist() == NONFINITE


# ------------------------------------------------------------------ each code, forced


def test_newton_mle_codes_and_grad_norm_under_vmap():
    """One vmapped call, three lanes: converged, capped at one iteration, NaN data."""

    def fit(W, max_iter):
        f = penalised_mle(W, 0.5, max_iter=max_iter)
        return f.theta, f.diagnostics()

    stacked = jnp.stack([W4, W4, W4 * jnp.nan])
    theta, diag = jax.vmap(lambda W: fit(W, 50))(stacked)  # no exception under vmap
    assert diag["result"].tolist() == [SUCCESSFUL, SUCCESSFUL, NONFINITE]
    assert diag["converged"].tolist() == [True, True, False]
    assert np.isnan(float(diag["grad_norm"][2]))
    # the stored ‖∇R‖∞ is the objective's, at the returned θ̃ (converged: at the tolerance)
    zero = jnp.zeros(4)
    assert float(diag["grad_norm"][0]) == pytest.approx(
        sup_grad(btl_penalised_objective, theta[0], W4, 0.5, zero), abs=1e-13
    )
    assert float(diag["grad_norm"][0]) <= 1e-10

    theta1, diag1 = jax.vmap(lambda W: fit(W, 1))(stacked)
    assert diag1["result"].tolist() == [MAX_STEPS, MAX_STEPS, NONFINITE]
    assert diag1["converged"].tolist() == [False, False, False]
    assert diag1["iterations"].tolist()[:2] == [1, 1]
    expected = sup_grad(btl_penalised_objective, theta1[0], W4, 0.5, zero)
    assert expected > 1e-3  # far from converged: a real comparison
    assert float(diag1["grad_norm"][0]) == pytest.approx(expected, rel=1e-10)


def test_converged_is_derived_from_the_code():
    fit = penalised_mle(W4, 0.5, max_iter=1)
    assert int(fit.result) == MAX_STEPS and not bool(fit.converged) and fit.has_solver
    assert set(fit.diagnostics()) == {"converged", "iterations", "result", "grad_norm"}
    closed = spectral_estimate(W4)  # the exact solve: a closed form
    assert closed.result is None and closed.converged is None and closed.grad_norm is None
    assert not closed.has_solver and "result" not in closed.diagnostics()


def test_debiased_m_grad_norm_is_the_ridge_objective_gradient_at_the_centred_estimate():
    zbar = jnp.array([0.7, 0.4, 0.8, 0.3, 0.6, 0.55])  # m = 4 items
    lam = 0.3
    for max_iter, code in ((50, SUCCESSFUL), (1, MAX_STEPS)):
        fit = debiased_m_estimator(zbar, lam, max_iter=max_iter)
        assert int(fit.result) == code
        i, j = np.triu_indices(4, 1)
        W = jnp.zeros((4, 4)).at[i, j].set(zbar).at[j, i].set(1.0 - zbar)
        expected = sup_grad(btl_penalised_objective, fit.theta, W, 2.0 * lam, jnp.zeros(4))
        assert float(fit.grad_norm) == pytest.approx(expected, rel=1e-9, abs=1e-13)
        assert "grad_norm" not in fit.info  # one place: the Fit field


def test_constrained_mle_grad_norm_is_the_gradient_for_an_unconstrained_ball():
    """radius = ∞: the gradient mapping ‖θ − Π(θ − ∇f)‖∞ is ‖∇f‖∞ (the logistic loss here)."""
    key_x, key_y = jax.random.split(jax.random.key(3))
    x = jax.random.normal(key_x, (60, 3))
    y = (jax.random.uniform(key_y, (60,)) < jax.nn.sigmoid(x @ jnp.array([1.0, -0.5, 0.2]))).astype(
        jnp.float64
    )

    def loss(theta):
        z = x @ theta
        return jnp.mean(jnp.logaddexp(0.0, z) - y * z)

    for max_iter, code in ((50, SUCCESSFUL), (1, MAX_STEPS)):
        fit = mle(x, y, jnp.inf, max_iter=max_iter, tol=1e-14 if max_iter == 1 else 1e-10)
        assert int(fit.result) == code
        expected = float(jnp.max(jnp.abs(jax.grad(loss)(fit.theta))))
        assert float(fit.grad_norm) == pytest.approx(expected, rel=1e-9, abs=1e-14)


def test_sgd_codes_are_finite_or_nonfinite_without_a_gradient_norm():
    x = jax.random.normal(jax.random.key(0), (50, 2))
    y = (x[:, 0] > 0).astype(jnp.float64)

    def fit(x):
        f = sgd_mle(x, y, 5.0, schedule="literal")
        return f.result, f.converged, f.grad_norm

    result, converged, grad_norm = jax.vmap(fit)(jnp.stack([x, x.at[0, 0].set(jnp.nan)]))
    assert result.tolist() == [SUCCESSFUL, NONFINITE] and converged.tolist() == [True, False]
    assert np.isnan(np.asarray(grad_norm)).all()


def two_classes(Y_scale=1.0):
    """Differential counts of 4 items in two classes {0, 1} and {2, 3} that never meet."""
    return Y_scale * jnp.array(
        [[0.0, 2.0, 0.0, 0.0], [3.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 2.0, 0.0]]
    )


def test_spectral_codes_disconnected_nonfinite_and_max_steps_under_vmap():
    connected = jnp.array(
        [[0.0, 2.0, 1.0, 1.0], [3.0, 0.0, 1.0, 2.0], [1.0, 2.0, 0.0, 1.0], [2.0, 1.0, 2.0, 0.0]]
    )

    def exact(Y):
        fit = spectral_estimate(Y, lam=0.0)
        return exact_solve_result(fit.theta, fit.info["connected"])

    codes = jax.vmap(exact)(jnp.stack([connected, two_classes(), two_classes(jnp.nan)]))
    assert codes.tolist() == [SUCCESSFUL, DISCONNECTED, NONFINITE]

    def power(Y, cap):
        fit = spectral_estimate(Y, lam=1.0, solver="power_lazy", max_iters=cap)
        return fit.result, fit.converged, fit.grad_norm

    result, converged, grad_norm = jax.vmap(lambda Y: power(Y, 1))(
        jnp.stack([connected, connected])
    )
    assert result.tolist() == [MAX_STEPS, MAX_STEPS] and not converged.any()
    assert np.isnan(np.asarray(grad_norm)).all()
    result, converged, _ = jax.vmap(lambda Y: power(Y, 10_000))(
        jnp.stack([connected, connected * jnp.nan])
    )
    assert result.tolist() == [SUCCESSFUL, NONFINITE] and converged.tolist() == [True, False]


def test_nguyen_rows_report_disconnected():
    """The nguyen methods' report: converged False and result disconnected for a reducible chain."""
    from dpsim.experiments.nguyen.methods import _solver_report

    fit = spectral_estimate(two_classes(), lam=0.0)
    report = _solver_report(fit, "solve")
    assert int(report["result"]) == DISCONNECTED and not bool(report["converged"])
    assert int(report["iterations"]) == 0


# ------------------------------------------------------------------ rows, warning, summary


def capped_mle(key, ctx):
    """The toy MLE capped at one Newton iteration (never converges), or NaN data at n = 12."""
    W = ctx.sample["W"]
    W = jnp.where(ctx.shape["n_items"] == 12, W * jnp.nan, W)
    fit = penalised_mle(W, 1.0, max_iter=1)
    return {"l2": jnp.linalg.norm(fit.theta_centred), **fit.diagnostics()}


def test_rows_store_result_and_grad_norm_and_the_warning_names_the_reasons(tmp_path, capsys):
    methods = {"mle": Method(capped_mle, ("l2",), solver_diagnostics())}
    experiment = toy_experiment(
        name="capped",
        reps=2,
        methods=methods,
        n_items=[8, 12],
        p=[1.0],
        eps=[1.0],
        mechanism=["laplace"],
    )
    out = tmp_path / "run"
    with pytest.warns(
        UserWarning, match=r"4 of 4 mle fits did not converge: 2 max steps, 2 non-finite"
    ):
        run_experiment(experiment, out=out, progress=False)
    from dpsim.engine.storage.store import load_results

    df = load_results(out)
    assert {"result", "grad_norm"} <= set(df.columns)
    by_n = df.groupby("n_items")
    assert by_n["result"].apply(list).to_dict() == {8: [MAX_STEPS] * 2, 12: [NONFINITE] * 2}
    assert (df.loc[df["n_items"] == 8, "grad_norm"] > 0).all()
    assert df.loc[df["n_items"] == 12, "grad_norm"].isna().all()
    assert not df["converged"].any()
    item = json.loads((out / "manifest.json").read_text())["diagnostics"]["unconverged"][0]
    assert item["reasons"] == "2 max steps, 2 non-finite" and item["failed"] == 4
    assert main(["summary", str(out), "--metric", "l2"]) == 0
    printed = capsys.readouterr().out
    assert "why" in printed and "2 max steps" in printed and "2 non-finite" in printed
