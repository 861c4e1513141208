"""One-pass projected SGD estimators of chowdhury (chowdhury §4.3–4.4, §6;
docs/chowdhury.md, Experiments as run): SGD-RR (Algorithm 1, binary labels under randomized response, logistic or probit
link), SGD-KRR (Plackett–Luce top-1 under K-ary RR, App. C.4), and the SGD versions of the
non-private MLE and of objective perturbation used in the paper's §6 ("implemented with SGD
updates, η = 0.1").

Each runs θ̂_{t+1} = Π_{Θ_B}(θ̂_t − η_t ĝ_t) once over the samples in order, as a ``lax.scan``
over an optax chain (dpsim.solvers.projected_sgd), from θ̂_1 = 0.

Step-size schedules (docs/chowdhury.md, Experiments as run; Errata and modes (E2–E3)):

* ``"theory"``: η_t = 1/(λ̂ (t + t₀)), the proof's 1/(λt) (App. C.3 Step 1(b); the printed
  "η_t = 1/(γκ)" of Thm 4.5 is a misprint, docs/chowdhury.md, Errata and modes (E2)), with λ̂ = (2σ(ε) − 1)·γ̂·κ̂ for RR,
  γ̂κ̂(e^ε − 1)/(e^ε + K − 1) for K-RR and γ̂κ̂ for the MLE and objective perturbation;
  κ̂ = λ_min(Σ_D) (public features) unless given, γ̂ = 0.1 (the theory γ = σ'(2LB) is ~1e-16
  under Gaussian design), and t₀ = 1/(η_max λ̂) caps the first steps at η_max = 0.1. With
  γ̂ = the theory γ and η_max = ∞ this is exactly the proof's schedule;
* ``"literal"``: η_t ≡ η = 0.1, the last iterate (the paper's §6 read literally; its error
  does not decrease in n, docs/chowdhury.md, Experiments as run);
* ``"averaged"``: η_t ≡ η, the Polyak–Ruppert average of θ̂_2..θ̂_{n+1}.

``Fit.result`` is successful or nonfinite ("θ̂ is finite": one pass has no tolerance, so
``converged`` means finite), ``grad_norm`` NaN, ``iterations`` = n.
Objective perturbation by SGD is not the exact minimiser its privacy proof needs:
``info["privacy_certified"]`` is False (docs/chowdhury.md, Errata and modes (E9)).
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from dpsim.estimators.fit import Fit
from dpsim.estimators.linear_btl import check_design, require_radius
from dpsim.mechanisms.objective_perturbation import GaussianPerturbation
from dpsim.mechanisms.randomized_response import kary_keep_probability
from dpsim.models.linear_btl import LINKS, link_scores
from dpsim.validate import require_choice
from dpsim.results import solver_result
from dpsim.solvers import projected_sgd, symmetric_eigh
from dpsim.validate import require_eps, require_positive

SCHEDULES = ("theory", "literal", "averaged")
DEFAULT_GAMMA_HAT = 0.1
DEFAULT_ETA = 0.1


def step_size_schedule(
    schedule: str, lam_hat=None, *, eta=DEFAULT_ETA, eta_max=DEFAULT_ETA
) -> Callable:
    """t ↦ η_t for t = 1, 2, … (module docstring): ``"theory"`` 1/(λ̂(t + t₀)) with
    t₀ = 1/(η_max λ̂); ``"literal"`` and ``"averaged"`` the constant η.

    Args: schedule; lam_hat: λ̂ > 0 (theory only; may be traced); eta: constant step;
    eta_max: the theory schedule's cap on η_1 (∞: t₀ = 0). Returns: a function of t."""
    require_choice("schedule", schedule, SCHEDULES)
    if schedule != "theory":
        return lambda t: eta + 0.0 * t
    t0 = 1.0 / (eta_max * lam_hat)
    return lambda t: 1.0 / (lam_hat * (t + t0))


def feature_coverage(x) -> jax.Array:
    """κ̂ = λ_min(Σ_D), Σ_D = (1/n)Σ x_i x_iᵀ (Assumption 4.4's κ estimated from the public
    features). Args: x (n, dim). Returns: scalar."""
    return symmetric_eigh(x.T @ x / x.shape[0])[0][0]


def _run(per_sample_grad, samples, dim, radius, sum_zero, schedule, lam_hat, eta, eta_max, info):
    require_radius(radius)
    step = step_size_schedule(schedule, lam_hat, eta=eta, eta_max=eta_max)
    result = projected_sgd(
        per_sample_grad, samples, jnp.zeros((dim,)), step, radius, sum_zero=sum_zero
    )
    theta = result.x_average if schedule == "averaged" else result.x
    n = jax.tree_util.tree_leaves(samples)[0].shape[0]
    return Fit(
        theta=theta,
        result=solver_result(True, theta),
        iterations=jnp.asarray(n),
        grad_norm=jnp.nan,
        info={"last_step": result.last_step, "lam_hat": jnp.asarray(lam_hat, jnp.float64), **info},
    )


def _lam_hat(schedule, x_pairs, gamma_hat, kappa, factor):
    if schedule != "theory":
        return jnp.nan
    require_positive(gamma_hat, "gamma_hat")
    kappa = feature_coverage(x_pairs) if kappa is None else kappa
    return factor * gamma_hat * kappa


# ---------------------------------------------------------------------------------------
# Per-sample stochastic gradients
# ---------------------------------------------------------------------------------------
def rr_sgd_gradient(theta, x_t, y_tilde_t, eps, link: str = "logistic"):
    """ĝ_t = [Σ_{y∈{0,1}} ∇log p_{t,y}(θ)]/(e^ε + 1) − ∇log p_{t,ỹ_t}(θ) (chowdhury Alg. 1 line 4;
    Thurstone link §4.4), with ∇log p_y = s_y(xᵀθ)·x (dpsim.models.linear_btl.link_scores).
    E[ĝ | x, y] = (2σ(ε) − 1)(−∇log p_y) (P12). For the logistic link ĝ = (p̃₁(z) − ỹ)x
    (chowdhury Algorithm 1, eq. (10), §4.3 closed form). ε = ∞ gives the clear-label gradient −∇log p_y.

    Args: theta (dim,); x_t (dim,); y_tilde_t: scalar in {0, 1}; eps; link.
    Returns: (dim,)."""
    s1, s0 = link_scores(jnp.dot(x_t, theta), link)
    flip = jax.nn.sigmoid(-jnp.asarray(eps, jnp.float64))  # 1/(e^ε + 1)
    return ((s1 + s0) * flip - (y_tilde_t * s1 + (1.0 - y_tilde_t) * s0)) * x_t


def krr_sgd_gradient(theta, phi_t, y_tilde_t, eps):
    """ĝ_t = [Σ_{y=1..K} ∇log p_{t,y}(θ)]/(e^ε + K − 1) − ∇log p_{t,ỹ_t}(θ) for Plackett–Luce
    top-1 (chowdhury §4.4, App. C.4), ∇log p_y = Φ[y] − pᵀΦ with p = softmax(Φθ).
    E[ĝ | y] = ((e^ε − 1)/(e^ε + K − 1))(−∇log p_y) (P12).

    Args: theta (dim,); phi_t (K, dim); y_tilde_t: int in {0..K−1}; eps. Returns: (dim,)."""
    k = phi_t.shape[0]
    p = jax.nn.softmax(phi_t @ theta)
    mean_phi = p @ phi_t
    other = 1.0 - kary_keep_probability(eps, k)  # (K − 1)/(e^ε + K − 1)
    sum_scores = jnp.sum(phi_t, axis=0) - k * mean_phi
    return sum_scores * other / (k - 1) - (phi_t[y_tilde_t] - mean_phi)


def objective_perturbation_sgd_gradient(theta, x_t, y_t, w, beta, n_samples: int):
    """(σ(x_tᵀθ) − y_t)x_t + (β/n)θ + w/n, the per-sample gradient of Alg. 2's objective
    (chowdhury Algorithm 2, §5, App. D, "implemented using SGD updates")."""
    return (jax.nn.sigmoid(jnp.dot(x_t, theta)) - y_t) * x_t + (beta * theta + w) / n_samples


# ---------------------------------------------------------------------------------------
# Estimators
# ---------------------------------------------------------------------------------------
def sgd_rr(
    x,
    y_tilde,
    eps,
    radius,
    *,
    schedule: str = "theory",
    link: str = "logistic",
    gamma_hat=DEFAULT_GAMMA_HAT,
    kappa=None,
    eta=DEFAULT_ETA,
    eta_max=DEFAULT_ETA,
    sum_zero: bool = False,
) -> Fit:
    """θ̂_SGD-RR, one-pass projected SGD on RR labels (chowdhury Algorithm 1, eq. (10), §4.3,
    Thm 4.5; Thurstone link §4.4; docs/chowdhury.md, Experiments as run). ε-label DP (RR plus
    post-processing).

    Args:
        x: (n_samples, dim) features. y_tilde: (n_samples,) RR labels (randomized_response).
        eps: ε > 0 of the RR (may be traced; ∞: clear labels). radius: B of Θ_B.
        schedule: ``"theory"``, ``"literal"`` or ``"averaged"`` (module docstring).
        link: ``"logistic"`` (BTL) or ``"probit"`` (Thurstone).
        gamma_hat, kappa, eta_max: the theory schedule's γ̂, κ̂ (default λ_min(Σ_D)) and cap;
        λ̂ = (2σ(ε) − 1)γ̂κ̂. eta: the constant step of ``literal``/``averaged``.
        sum_zero: add ⟨1, θ⟩ = 0 to Θ_B.
    Returns:
        :class:`Fit` (theta (dim,)); info: last_step, lam_hat (NaN unless theory).
    """
    check_design(x, y_tilde)
    require_eps(eps)
    require_choice("link", link, LINKS)
    lam_hat = _lam_hat(schedule, x, gamma_hat, kappa, jnp.tanh(jnp.asarray(eps, jnp.float64) / 2.0))
    grad = lambda theta, sample: rr_sgd_gradient(theta, sample[0], sample[1], eps, link)  # noqa: E731
    return _run(
        grad, (x, y_tilde), x.shape[1], radius, sum_zero, schedule, lam_hat, eta, eta_max, {}
    )


def sgd_mle(
    x,
    y,
    radius,
    *,
    schedule: str = "theory",
    link: str = "logistic",
    gamma_hat=DEFAULT_GAMMA_HAT,
    kappa=None,
    eta=DEFAULT_ETA,
    eta_max=DEFAULT_ETA,
    sum_zero: bool = False,
) -> Fit:
    """The non-private MLE by one-pass projected SGD (chowdhury §6 "using SGD updates"):
    :func:`sgd_rr` with clear labels (ε = ∞: ĝ = −∇log p_y, λ̂ = γ̂κ̂). Args as :func:`sgd_rr`."""
    return sgd_rr(
        x,
        y,
        jnp.inf,
        radius,
        schedule=schedule,
        link=link,
        gamma_hat=gamma_hat,
        kappa=kappa,
        eta=eta,
        eta_max=eta_max,
        sum_zero=sum_zero,
    )


def sgd_krr(
    phi,
    y_tilde,
    eps,
    radius,
    *,
    schedule: str = "theory",
    gamma_hat=DEFAULT_GAMMA_HAT,
    kappa=None,
    eta=DEFAULT_ETA,
    eta_max=DEFAULT_ETA,
    sum_zero: bool = False,
) -> Fit:
    """θ̂_SGD-KRR, one-pass projected SGD for Plackett–Luce top-1 under K-ary RR (chowdhury §4.4,
    App. C.4, Thm C.2; chowdhury §4.4, App. C.4). ε-label DP.

    The theory schedule uses λ̂ = γ̂κ̂(e^ε − 1)/(e^ε + K − 1) (γ_{K,ε}κ, by analogy with App. C.3;
    chowdhury §4.4, App. C.4), with κ̂ = λ_min of the covariance of ϕ(a_1) − ϕ(a_0) unless given (the actions
    are exchangeable, so every pair has the same Σ_{i,j}; Assumption C.1).

    Args:
        phi: (n_samples, k, dim) action features. y_tilde: (n_samples,) K-RR labels
        (kary_randomized_response). eps, radius, schedule, gamma_hat, kappa, eta, eta_max,
        sum_zero: as :func:`sgd_rr`.
    Returns:
        :class:`Fit` (theta (dim,)).
    """
    if phi.ndim != 3 or phi.shape[1] < 2 or y_tilde.shape != (phi.shape[0],):
        raise ValueError(
            f"phi must be (n_samples, k ≥ 2, dim) and y_tilde (n_samples,), got "
            f"{phi.shape} and {y_tilde.shape}"
        )
    require_eps(eps)
    k = phi.shape[1]
    eps_ = jnp.asarray(eps, jnp.float64)
    factor = -jnp.expm1(-eps_) / (1.0 + (k - 1) * jnp.exp(-eps_))  # (e^ε − 1)/(e^ε + K − 1)
    lam_hat = _lam_hat(schedule, phi[:, 1] - phi[:, 0], gamma_hat, kappa, factor)
    grad = lambda theta, sample: krr_sgd_gradient(theta, sample[0], sample[1], eps)  # noqa: E731
    return _run(
        grad, (phi, y_tilde), phi.shape[2], radius, sum_zero, schedule, lam_hat, eta, eta_max, {}
    )


def sgd_objective_perturbation(
    x,
    y,
    release: GaussianPerturbation,
    radius,
    *,
    schedule: str = "theory",
    gamma_hat=DEFAULT_GAMMA_HAT,
    kappa=None,
    eta=DEFAULT_ETA,
    eta_max=DEFAULT_ETA,
    sum_zero: bool = False,
) -> Fit:
    """Objective perturbation (chowdhury Alg. 2) approximated by one-pass projected SGD, as
    in the paper's §6: for a release (w, σ, β, L) of
    :func:`dpsim.mechanisms.objective_perturbation.gaussian_objective_perturbation` (the one
    :func:`dpsim.estimators.linear_btl.objective_perturbation` minimises exactly), per-sample
    gradient (σ(x_tᵀθ) − y_t)x_t + (β/n)θ + w/n, λ̂ = γ̂κ̂.

    **Privacy not certified**: Thm 5.2 covers the exact minimiser only (docs/chowdhury.md, Errata and modes (E9));
    ``info["privacy_certified"]`` is False.

    Args: x (n, dim); y (n,) clear labels; release; radius: B; schedule, gamma_hat, kappa, eta,
    eta_max, sum_zero: as :func:`sgd_rr`.
    Returns: :class:`Fit` (theta (dim,)); info adds sigma, beta, feature_bound, privacy_certified.
    """
    check_design(x, y)
    require_radius(radius)
    n = x.shape[0]
    lam_hat = _lam_hat(schedule, x, gamma_hat, kappa, 1.0)
    grad = lambda theta, s: objective_perturbation_sgd_gradient(
        theta, s[0], s[1], release.w, release.beta, n
    )  # noqa: E731
    info = {
        "sigma": release.sigma,
        "beta": release.beta,
        "feature_bound": release.feature_bound,
        "privacy_certified": jnp.asarray(False),
    }
    return _run(grad, (x, y), x.shape[1], radius, sum_zero, schedule, lam_hat, eta, eta_max, info)
