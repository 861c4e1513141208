"""nguyen's methods, shared by every nguyen experiment (nguyen §4; §5; docs/nguyen.md, Errata and
modes): the fidelity modes, the privacy parameters derived on the host, the five methods (the
releases drawn through :mod:`dpsim.mechanisms`, and the estimators), their metrics and
diagnostics. The axis types, the paper's symbols and labels are the model's (:mod:`.model`).

**Modes** (string analysis axis ``mode``; every analysis point of a replicate sees the same
data, so the two modes are compared on common random numbers):

===================  =====================================  ==========================================
item                 ``paper`` (the authors' code)           ``strict`` (the privacy claim holds)
===================  =====================================  ==========================================
Gaussian accounting  ``synthetic_code`` (Fig. 1, √(#pairs/2),  ``tight_joint`` (Δ₂² = 2·min(|E|, ⌊m²/4⌋),
                     not proven private, docs/nguyen.md, Errata and modes (Q4)) or       nguyen Lemma 4.1, §4.2)
                     ``paper`` (Figs 2–3, √#pairs)
ε → ρ conversion     ``paper``: ε₀ = ε*/√(2 ln(1/δ)),        ``cks``: the tight CKS20 conversion
                     certifies only ε* + ρ (docs/nguyen.md, Errata and modes (Q4))
zero counts          not noised (leaks which are 0, docs/nguyen.md, Errata and modes (Q2))    every queried count noised
sparse graph         one ER(p₀) draw, unchecked (docs/nguyen.md, Errata and modes (Q5))       redrawn until connected
stationary dist.     power iteration, lazy chain (private,   exact null vector (docs/nguyen.md, Mechanisms and estimators equivalence lemma)
                     tol 1e-5, ≤ 1000) / jump chain
                     (non-private, RR: tol 1e-6, ≤ 10000)
synthetic ℓ2         ‖β̂ − β*‖₂ against the un-centred β*    ‖β̂ − β*‖₂ with both centred
                     (a floor of √m·|mean β*|, docs/nguyen.md, Errata and modes (Q1))
===================  =====================================  ==========================================

Clipping is max(1, ·) in both (A15, the code's post-processing); RR is never debiased (nguyen supp. §4).
The axes ``accounting`` and ``conversion`` default to ``auto`` (the mode's choice above) and
may name any mode of :mod:`dpsim.mechanisms.count_noise` / :mod:`dpsim.mechanisms.zcdp`.

**Methods** (nguyen §4–5, nguyen §5): ``nonprivate`` (Algorithm 1), ``gaussian``
(Algorithm 2, dense), ``gaussian_sparse`` (Algorithm 2 on ER(p₀)), ``laplace`` (the
discrete-Laplace chain, A16), ``rr`` (per-response randomized response with shuffle
amplification, then Algorithm 1). The non-private fit does not depend on ε, so it is computed
once per replicate (in ``generate`` or, for fixed real data, in ``truth``) and every private
method is also scored against it on the same data (``privacy_l2``, the privacy term alone).

**Convergence.** A power-iteration fit reports whether it met its tolerance within its cap;
an exact solve reports ``converged`` = the chain was irreducible and π finite (a direct solve
has no iterations: ``iterations`` = 0). ``result`` says why not (:mod:`dpsim.results`):
``max_steps_reached`` (the power iteration's cap), ``nonfinite`` or ``disconnected`` (the exact
solve of a reducible chain). The authors' truncated lazy power iteration does not
converge for the sparse chain at high privacy (measured: most fits at ε* ≤ 0.4, m = 200),
which the figures mark and the checks refuse: claims in that regime are checked in
``strict`` mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

import jax
import jax.numpy as jnp

from dpsim.estimators.private_spectral import private_spectral_estimate, rr_spectral_estimate
from dpsim.estimators.spectral import exact_solve_result, spectral_estimate
from dpsim.engine import Derived, Method
from dpsim.mechanisms.count_noise import private_differential_counts
from dpsim.mechanisms.shuffle import randomize_responses, shuffle_rr_epsilon
from dpsim.mechanisms.sparsify import sparsification_p0
from dpsim.mechanisms.zcdp import zcdp_rho
from dpsim.metrics import l2_error, linf_error, rasch_l2_error
from dpsim.results import RESULTS

from .model import INF, LABELS, METHOD_NAMES, PROPOSED


# ---------------------------------------------------------------------------------------
# Fidelity settings
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fidelity:
    """What ``paper`` mode means in one experiment (the authors' two scripts differ).

    Attributes:
        accounting: the paper mode's accounting (``synthetic_code`` in the synthetic
            script, ``paper`` in the real-data script; docs/nguyen.md, Mechanisms and estimators).
        p0_rule: the rule of p₀ = "proposed" (``code_synthetic`` 1.1·log₂m/m, ``code_real``
            2·log₂m/m; nguyen §4.3, Algorithm 2).
        uncentred_truth: paper mode scores ℓ2 against the un-centred β* (Fig. 1, docs/nguyen.md, Errata and modes (Q1)).
    """

    accounting: str
    p0_rule: str
    uncentred_truth: bool = False


SYNTHETIC = Fidelity("synthetic_code", "code_synthetic", uncentred_truth=True)
REAL = Fidelity("paper", "code_real")
STRICT_RATES = Fidelity("paper", "code_real")  # rate experiments run in strict mode


@dataclass(frozen=True)
class Settings:
    """Resolved settings of one analysis point (static Python values)."""

    mode: str
    accounting: str
    conversion: str
    noise: str
    connect: bool
    private_solver: str
    nonprivate_solver: str
    uncentred: bool


def resolve(analysis: Mapping, fidelity: Fidelity) -> Settings:
    """The settings of an analysis point (its ``mode``, ``accounting``, ``conversion``)."""
    mode = analysis["mode"]
    paper = mode == "paper"
    accounting = analysis.get("accounting", "auto")
    conversion = analysis.get("conversion", "auto")
    return Settings(
        mode=mode,
        accounting=(fidelity.accounting if paper else "tight_joint")
        if accounting == "auto"
        else accounting,
        conversion=("paper" if paper else "cks") if conversion == "auto" else conversion,
        noise="nonzero" if paper else "all",
        connect=not paper,
        private_solver="power_lazy" if paper else "solve",
        nonprivate_solver="power_jump" if paper else "solve",
        uncentred=paper and fidelity.uncentred_truth,
    )


def privacy_derived(fidelity: Fidelity) -> Derived:
    """Host-derived privacy parameters of each analysis point (nguyen §4.1, §4.3, supp. §4;
    docs/nguyen.md, Mechanisms and estimators): ``rho`` (the Gaussian chain's zCDP ρ for (ε*, δ) under the
    conversion), ``eps0`` = √(2ρ) (the paper's per-mechanism ε of Lemma 4.1), ``eps_rr`` (the
    RR baseline's per-user LDP budget, shuffle-amplified over the data's n users, at least
    ε*) and ``p0_value`` (the sparse chain's edge probability)."""

    def derive(point: dict) -> dict:
        s = resolve(point, fidelity)
        eps, delta = point["eps"], point["delta"]
        if math.isinf(eps):
            rho = eps_rr = INF
        else:
            rho = float(zcdp_rho(eps, delta, s.conversion))
            eps_rr = float(shuffle_rr_epsilon(eps, delta, int(point["n_users"])))
        p0 = point.get("p0", PROPOSED)
        m = int(point["n_items"])
        value = sparsification_p0(m, fidelity.p0_rule) if p0 == PROPOSED else float(p0)
        return {"rho": rho, "eps0": math.sqrt(2.0 * rho), "eps_rr": eps_rr, "p0_value": value}

    return Derived(
        ("rho", "eps0", "eps_rr", "p0_value"),
        derive,
        level="analysis",
        doc="ρ (zCDP, by the conversion), ε₀ = √(2ρ), ε_RR (shuffled RR, ≥ ε*), p₀ of the sparse chain",
    )


# ---------------------------------------------------------------------------------------
# Fits
# ---------------------------------------------------------------------------------------
def _solver_report(fit, solver: str) -> dict:
    """converged / iterations / result of a fit (module docstring): the power iteration's own
    code (max steps, non-finite), or for the exact solve: irreducible chain and finite
    estimate (:func:`exact_solve_result`), 0 iterations. converged = (result == successful)."""
    if solver == "solve":
        result, iterations = (
            exact_solve_result(fit.theta, fit.info["connected"]),
            jnp.asarray(0, jnp.int64),
        )
    else:
        result, iterations = fit.result, fit.iterations
    return {"converged": result == RESULTS.successful, "iterations": iterations, "result": result}


def nonprivate_fits(Y) -> dict:
    """The non-private estimate by both solvers (exact, and the authors' jump-chain power
    iteration), computed once per replicate: {solver: {"theta", "converged", "iterations",
    "connected"}}."""
    out = {}
    for solver in ("solve", "power_jump"):
        fit = spectral_estimate(Y, solver=solver)
        out[solver] = {
            "theta": fit.theta,
            "connected": fit.info["connected"],
            **_solver_report(fit, solver),
        }
    return out


NONPRIVATE_DIAG = {"converged": "bool", "iterations": "int", "result": "int", "connected": "bool"}
GAUSSIAN_DIAG = {
    **NONPRIVATE_DIAG,
    "noise_scale": "float",
    "sampler_failures": "int",
    "queried_pairs": "int",
}
SPARSE_DIAG = {**GAUSSIAN_DIAG, "graph_connected": "bool", "graph_rejections": "int"}
LAPLACE_DIAG = {**NONPRIVATE_DIAG, "noise_scale": "float", "queried_pairs": "int"}
RR_DIAG = dict(NONPRIVATE_DIAG)


def _private_diag(fit, solver: str, keys) -> dict:
    info = fit.info
    out = {"connected": info["connected"], **_solver_report(fit, solver)}
    for k in keys:
        if k in ("noise_scale",):
            out[k] = info[k]
        elif k in ("sampler_failures", "queried_pairs", "graph_rejections"):
            out[k] = jnp.asarray(info[k]).astype(jnp.int64)
        elif k == "graph_connected":
            out[k] = info[k]
    return out


# A scorer maps (ctx, β̂ (centred), settings) to the metrics of one fit.
Scorer = Callable[..., dict]


def rr_signal(released, x, observed) -> jax.Array:
    """1 − 2·(share of the observed responses that randomized response flipped): its
    expectation is tanh(ε′/2) for a per-response budget ε′ (keep probability e^{ε′}/(1 + e^{ε′}))."""
    obs = jnp.asarray(observed, bool)
    flipped = obs & (jnp.asarray(released) != jnp.asarray(x))
    return 1.0 - 2.0 * jnp.sum(flipped) / jnp.maximum(jnp.sum(obs), 1)


CALIBRATION_METRICS = {
    "gaussian": ("noise_ms",),
    "gaussian_sparse": ("noise_ms",),
    "laplace": ("noise_ms",),
    "rr": ("rr_signal",),
}


def make_methods(
    names, fidelity: Fidelity, score: Scorer, reference: Callable, *, calibration: bool = False
) -> dict[str, Method]:
    """The methods ``names`` (a subset of :data:`METHOD_NAMES`), each scored by ``score``.

    Args:
        fidelity: the experiment's paper-mode settings.
        score: ``(ctx, beta_hat, settings, private: bool) -> {metric: scalar}``.
        reference: ``ctx -> {solver: non-private fit dict}`` (from ``generate`` or ``truth``).
        calibration: also report what pins each mechanism's calibration (the level checks of
            :mod:`.checks`): ``noise_ms`` (the noise chains: the mean square of the noise
            drawn, the estimate's ``info["noise_mean_square"]``,
            :func:`~dpsim.mechanisms.count_noise.noise_mean_square`) and ``rr_signal`` (RR: :func:`rr_signal` of the released
            responses). Off by default: adding them changes no draw.
    """

    def settings(ctx):
        return resolve(ctx.analysis, fidelity)

    def nonprivate(key, ctx):
        s = settings(ctx)
        fit = reference(ctx)[s.nonprivate_solver]
        return {
            **score(ctx, fit["theta"], s, False),
            **{k: fit[k] for k in ("converged", "iterations", "result", "connected")},
        }

    def chain(mechanism: str, sparse: bool):
        def fn(key, ctx):
            s = settings(ctx)
            a = ctx.analysis
            kwargs = dict(accounting=s.accounting, noise=s.noise, clip="one")
            if mechanism == "gaussian":
                kwargs["rho"] = a["rho"]
            else:
                kwargs["eps"] = a["eps"]
            if sparse:
                kwargs.update(p0=a["p0_value"], connect=s.connect)
            release = private_differential_counts(
                key, ctx.sample["Y"], mechanism=mechanism, **kwargs
            )
            fit = private_spectral_estimate(release, solver=s.private_solver)
            keys = (
                SPARSE_DIAG
                if sparse
                else GAUSSIAN_DIAG
                if mechanism == "gaussian"
                else LAPLACE_DIAG
            )
            extra = {"noise_ms": fit.info["noise_mean_square"]} if calibration else {}
            return {
                **score(ctx, fit.theta, s, True),
                **extra,
                **_private_diag(
                    fit, s.private_solver, [k for k in keys if k not in NONPRIVATE_DIAG]
                ),
            }

        return fn

    def rr(key, ctx):
        s = settings(ctx)
        x, observed, eps_rr = ctx.sample["x"], ctx.sample["observed"], ctx.analysis["eps_rr"]
        released = randomize_responses(key, x, observed, eps_rr)
        fit = rr_spectral_estimate(released, observed, solver=s.nonprivate_solver)
        extra = {"rr_signal": rr_signal(released, x, observed)} if calibration else {}
        return {
            **score(ctx, fit.theta, s, True),
            **extra,
            "connected": fit.info["connected"],
            **_solver_report(fit, s.nonprivate_solver),
        }

    def metrics_of(name: str, private: bool):
        return score.metrics(private) + (CALIBRATION_METRICS.get(name, ()) if calibration else ())

    table = {
        "nonprivate": Method(
            nonprivate,
            metrics_of("nonprivate", False),
            NONPRIVATE_DIAG,
            LABELS["nonprivate"],
            "Algorithm 1 (nguyen §3): spectral estimate of β from the differential counts",
        ),
        "gaussian": Method(
            chain("gaussian", False),
            metrics_of("gaussian", True),
            GAUSSIAN_DIAG,
            LABELS["gaussian"],
            "Algorithm 2, dense: discrete Gaussian on every count (Lemma 4.1)",
        ),
        "gaussian_sparse": Method(
            chain("gaussian", True),
            metrics_of("gaussian_sparse", True),
            SPARSE_DIAG,
            LABELS["gaussian_sparse"],
            "Algorithm 2 on an ER(p₀) item graph (nguyen §4.3)",
        ),
        "laplace": Method(
            chain("laplace", False),
            metrics_of("laplace", True),
            LAPLACE_DIAG,
            LABELS["laplace"],
            "discrete Laplace on every count, pure ε*-DP (docs/nguyen.md, Mechanisms and estimators; Errata and modes (A16))",
        ),
        "rr": Method(
            rr,
            metrics_of("rr", True),
            RR_DIAG,
            LABELS["rr"],
            "randomized response at ε_RR/k per response, shuffled, then Algorithm 1 (supp. §4)",
        ),
    }
    unknown = [n for n in names if n not in table]
    if unknown:
        raise ValueError(f"unknown nguyen methods {unknown}; choose from {METHOD_NAMES}")
    return {n: table[n] for n in names}


# ---------------------------------------------------------------------------------------
# Scorers
# ---------------------------------------------------------------------------------------
class TruthScore:
    """Synthetic data: against β* (``l2`` by the mode's scoring, ``linf`` centred) and, for a
    private fit, against the non-private fit of the same replicate and solver family
    (``privacy_l2`` = ‖β̃ − β̂‖₂, the privacy term alone, both centred)."""

    def metrics(self, private: bool) -> tuple[str, ...]:
        return ("l2", "linf", "privacy_l2") if private else ("l2", "linf")

    def __call__(self, ctx, beta_hat, s: Settings, private: bool) -> dict:
        beta = ctx.sample["beta"]
        centred = beta - jnp.mean(beta)
        hat = beta_hat - jnp.mean(beta_hat)
        out = {
            "l2": rasch_l2_error(hat, beta, "paper" if s.uncentred else "centred"),
            "linf": linf_error(hat, centred),
        }
        if private:
            ref = ctx.sample["nonprivate"][s.nonprivate_solver]["theta"]
            out["privacy_l2"] = l2_error(hat, ref - jnp.mean(ref))
        return out


class ReferenceScore:
    """Real data (nguyen Fig. 2, §5.2; Fig. 3, §5.2): against the non-private estimate on the same data by the
    mode's solver, ``l2`` = ‖β̃ − β̂‖₂ (the paper's metric) and ``linf``."""

    def metrics(self, private: bool) -> tuple[str, ...]:
        return ("l2", "linf")

    def __call__(self, ctx, beta_hat, s: Settings, private: bool) -> dict:
        ref = ctx.sample["nonprivate"][s.nonprivate_solver]["theta"]
        ref = ref - jnp.mean(ref)
        hat = beta_hat - jnp.mean(beta_hat)
        return {"l2": l2_error(hat, ref), "linf": linf_error(hat, ref)}
