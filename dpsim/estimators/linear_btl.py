"""Exact estimators of the linear BTL model of chowdhury (chowdhury
§4.1–4.2, §5, App. D): the non-private MLE (eq. (8)), the de-biased RR estimator θ̂_RR (eqs. (4)–(6)),
the naive RR-MLE (eq. (3)) and objective perturbation θ̂_obj (Algorithm 2), each the minimiser
of its objective over Θ_B = {θ : ⟨1, θ⟩ = 0 (optional), ‖θ‖ ≤ B} (docs/chowdhury.md, Mechanisms and estimators).

Objectives are written in the averaged form (1/n)Σ; the paper's sums (eq. (8), main-text
(4)) have the same minimisers. With z_i = x_iᵀθ and softplus(u) = log(1 + e^u):

* MLE:  f(θ) = (1/n)Σ softplus(z_i) − y_i z_i;
* θ̂_RR: the de-biased loss (eq. (4)) equals (2σ(ε) − 1)·(1/n)Σ softplus(z_i) − ȳ_i z_i with
  the unbiased surrogate labels ȳ = ((e^ε + 1)ỹ − 1)/(e^ε − 1) (docs/chowdhury.md, Mechanisms and estimators); the
  solver minimises the bracket (same argmin, ε-free scale);
* θ̂_obj: (1/n)Σ softplus(z_i) − y_i z_i + (β/(2n))‖θ‖² + wᵀθ/n (Alg. 2, chowdhury Algorithm 2, §5, App. D).

These three are convex (strictly, given full-rank features or β > 0) and are solved by
projected Newton (dpsim.solvers.projected_newton: the quadratic model minimised exactly over
Θ_B each step) to a gradient-mapping norm ≤ 1e-10. The naive RR likelihood is not convex
(chowdhury eq. (3), Theorem 4.1); it is solved from θ̂_RR (docs/chowdhury.md, Mechanisms and estimators) by projected Newton with a Fisher
fallback where the Hessian is not positive definite (default), or by plain projected gradient.

All functions are pure, jit- and vmap-compatible (ε, δ, B, β may be traced; the (d, d)
eigen-decompositions stay unbatched on CPU). Concrete ε, δ, B are validated; traced values
pass unchecked.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from dpsim.estimators.fit import Fit
from dpsim.mechanisms.objective_perturbation import GaussianPerturbation
from dpsim.mechanisms.randomized_response import debiased_response, keep_probability
from dpsim.solvers import (
    symmetric_eigh,
    ConstrainedResult,
    DenseObjective,
    projected_gradient,
    projected_newton,
)
from dpsim.validate import require_eps, require_positive


# ---------------------------------------------------------------------------------------
# Input checks
# ---------------------------------------------------------------------------------------
def check_design(x, y) -> None:
    """x must be (n_samples, dim) with n, d ≥ 1 and y (n_samples,) (shapes are static)."""
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(
            f"x must be an (n_samples, dim) matrix with n_samples, dim ≥ 1, got shape {x.shape}"
        )
    if y.shape != (x.shape[0],):
        raise ValueError(f"y must have shape ({x.shape[0]},) to match x, got {y.shape}")


def require_radius(radius) -> None:
    """B > 0 (``inf``: no norm constraint)."""
    require_positive(radius, "radius", finite=False)


# ---------------------------------------------------------------------------------------
# Losses (averaged over samples)
# ---------------------------------------------------------------------------------------
def logistic_loss(theta, x, targets):
    """(1/n)Σ softplus(x_iᵀθ) − t_i x_iᵀθ: the BTL negative log-likelihood for labels
    t ∈ {0, 1} (chowdhury eq. (8) divided by n), and the de-biased RR loss's bracket for
    t = ȳ (chowdhury eqs. (4)–(6), §4.2). Args: theta (dim,); x (n, dim); targets (n,). Returns: scalar."""
    z = x @ theta
    return jnp.mean(jax.nn.softplus(z) - targets * z)


def rr_privatised_probability(z, eps):
    """p̃₁(z) = P(ỹ = 1 | z) = (1 − σ(ε)) + (2σ(ε) − 1)σ(z) (chowdhury eq. (2), App. C)."""
    keep = keep_probability(eps)
    return (1.0 - keep) + (2.0 * keep - 1.0) * jax.nn.sigmoid(z)


def rr_debiased_loss(theta, x, y_tilde, eps):
    """l̂_{D,ε}(θ)/n, the de-biased RR loss in the paper's form (chowdhury eq. (4), App. C.2):
    −(1/n)Σ [ỹ_i (σ(ε) log σ(z_i) − (1 − σ(ε)) log(1 − σ(z_i)))
            + (1 − ỹ_i)(σ(ε) log(1 − σ(z_i)) − (1 − σ(ε)) log σ(z_i))],
    i.e. −(1/n)Σ log p̂_{i,ỹ_i} with the scores p̂ of eq. (5) (docs/chowdhury.md, Errata and modes (E1)).

    Args: theta (dim,); x (n, dim); y_tilde (n,) RR labels in {0, 1}; eps: ε > 0.
    Returns: scalar."""
    keep = keep_probability(eps)
    z = x @ theta
    log_p1, log_p0 = -jax.nn.softplus(-z), -jax.nn.softplus(z)
    one = y_tilde * (keep * log_p1 - (1.0 - keep) * log_p0)
    zero = (1.0 - y_tilde) * (keep * log_p0 - (1.0 - keep) * log_p1)
    return -jnp.mean(one + zero)


def rr_debiased_loss_label_form(theta, x, y_tilde, eps):
    """(2σ(ε) − 1)·(1/n)Σ softplus(z_i) − ȳ_i z_i with ȳ = ((e^ε + 1)ỹ − 1)/(e^ε − 1): the
    de-biased-label form of :func:`rr_debiased_loss` (equal to it; docs/chowdhury.md, Mechanisms and estimators)."""
    return (2.0 * keep_probability(eps) - 1.0) * logistic_loss(
        theta, x, debiased_response(y_tilde, eps)
    )


def rr_naive_log_probabilities(z, eps):
    """(log p̃₁(z), log p̃₀(z)), the exact log-likelihoods of an RR label (chowdhury eq. (3), Theorem 4.1), in a stable
    form: log p̃₁ = logaddexp(log σ(ε) − softplus(−z), log(1 − σ(ε)) − softplus(z))."""
    eps = jnp.asarray(eps, jnp.float64)
    log_keep, log_flip = -jax.nn.softplus(-eps), -jax.nn.softplus(eps)
    log_s1, log_s0 = -jax.nn.softplus(-z), -jax.nn.softplus(z)
    return (
        jnp.logaddexp(log_keep + log_s1, log_flip + log_s0),
        jnp.logaddexp(log_keep + log_s0, log_flip + log_s1),
    )


def _label_nll(log_p1, log_p0, labels):
    """−(1/n)Σ [t_i log p_{i,1} + (1 − t_i) log p_{i,0}] from per-sample log-probabilities."""
    return -jnp.mean(labels * log_p1 + (1.0 - labels) * log_p0)


def rr_naive_loss(theta, x, y_tilde, eps):
    """l̃_{D,ε}(θ)/n = −(1/n)Σ [ỹ_i log p̃_{i,1} + (1 − ỹ_i) log p̃_{i,0}], the likelihood of the
    privatised labels (chowdhury eq. (3), Thm 4.1; chowdhury eq. (3), Theorem 4.1). Not convex in general."""
    require_eps(eps)
    return _label_nll(*rr_naive_log_probabilities(x @ theta, eps), y_tilde)


# ---------------------------------------------------------------------------------------
# The shared convex objective and solve
# ---------------------------------------------------------------------------------------
def logistic_objective(x, targets, ridge=0.0, shift=None) -> DenseObjective:
    """f(θ) = (1/n)Σ softplus(x_iᵀθ) − t_i x_iᵀθ + (ridge/2)‖θ‖² + shiftᵀθ with
    ∇f = (1/n)Xᵀ(σ(Xθ) − t) + ridge·θ + shift and ∇²f = (1/n)Xᵀdiag(σ'(Xθ))X + ridge·I
    (label-independent; chowdhury eq. (8), §4.1; eqs. (4)–(6), §4.2; Algorithm 2, §5, App. D).

    Args: x (n, dim); targets (n,) (y, or ȳ for θ̂_RR); ridge: scalar ≥ 0; shift: (dim,) or
    None. Returns: :class:`dpsim.solvers.DenseObjective`."""
    n, d = x.shape
    shift = jnp.zeros((d,)) if shift is None else shift

    def value(theta):
        return (
            logistic_loss(theta, x, targets)
            + 0.5 * ridge * jnp.dot(theta, theta)
            + jnp.dot(shift, theta)
        )

    def evaluate(theta):
        z = x @ theta
        s = jax.nn.sigmoid(z)
        f = (
            jnp.mean(jax.nn.softplus(z) - targets * z)
            + 0.5 * ridge * jnp.dot(theta, theta)
            + jnp.dot(shift, theta)
        )
        grad = x.T @ (s - targets) / n + ridge * theta + shift
        hess = (x.T * (s * (1.0 - s))) @ x / n + ridge * jnp.eye(d)
        return f, grad, hess

    return DenseObjective(value, evaluate)


def _fit(result: ConstrainedResult, **info) -> Fit:
    return Fit(
        theta=result.x,
        result=result.result,
        iterations=result.iterations,
        grad_norm=result.stationarity,
        info={
            "stationarity": result.stationarity,
            "on_boundary": result.on_boundary,
            "inner_iterations": result.inner_iterations,
            **info,
        },
    )


def _solve(objective, d, radius, sum_zero, tol, max_iter, x0=None) -> ConstrainedResult:
    require_radius(radius)
    x0 = jnp.zeros((d,)) if x0 is None else x0
    return projected_newton(objective, x0, radius, sum_zero=sum_zero, tol=tol, max_iter=max_iter)


# ---------------------------------------------------------------------------------------
# Estimators
# ---------------------------------------------------------------------------------------
def mle(x, y, radius, *, sum_zero: bool = False, tol: float = 1e-10, max_iter: int = 50) -> Fit:
    """θ_MLE = argmin_{θ∈Θ_B} (1/n)Σ softplus(x_iᵀθ) − y_i x_iᵀθ, the non-private MLE
    (chowdhury eq. (8), [ZJJ23]; chowdhury eq. (8), §4.1), by projected Newton from 0.

    Args:
        x: (n_samples, dim) feature differences. y: (n_samples,) labels in {0, 1}.
        radius: B > 0 of Θ_B (``inf``: unconstrained; may be traced).
        sum_zero: add ⟨1, θ⟩ = 0 (Assumption 2.1(a); theory config, docs/chowdhury.md, Errata and modes (E17)).
        tol, max_iter: gradient-mapping tolerance and Newton-iteration cap.
    Returns:
        :class:`Fit` with theta (dim,), converged, iterations and info (stationarity,
        on_boundary, inner_iterations).
    """
    check_design(x, y)
    return _fit(_solve(logistic_objective(x, y), x.shape[1], radius, sum_zero, tol, max_iter))


def rr_debiased(
    x, y_tilde, eps, radius, *, sum_zero: bool = False, tol: float = 1e-10, max_iter: int = 50
) -> Fit:
    """θ̂_RR = argmin_{θ∈Θ_B} l̂_{D,ε}(θ), the de-biased RR estimator (chowdhury eqs. (4)–(6),
    Thm 4.2; chowdhury eqs. (4)–(6), §4.2), solved in its de-biased-label form: logistic regression on
    ȳ = ((e^ε + 1)ỹ − 1)/(e^ε − 1) (dpsim.mechanisms.randomized_response.debiased_response),
    which has the same minimiser. ε-label DP (RR plus post-processing).

    ȳ lies outside [0, 1], so without the constraint the loss can be unbounded below
    (docs/chowdhury.md, Mechanisms and estimators): use a finite B (the minimiser is then often on the sphere at small ε).

    Args:
        x: (n_samples, dim). y_tilde: (n_samples,) RR labels (randomized_response of y).
        eps: ε > 0 of the RR (may be traced; ∞ gives the MLE). radius: B.
        sum_zero, tol, max_iter: as in :func:`mle`.
    Returns:
        :class:`Fit` (theta (dim,)).
    """
    check_design(x, y_tilde)
    require_eps(eps)
    y_bar = debiased_response(y_tilde, eps)
    return _fit(_solve(logistic_objective(x, y_bar), x.shape[1], radius, sum_zero, tol, max_iter))


def rr_naive_objective(x, y_tilde, eps) -> DenseObjective:
    """The naive RR likelihood (:func:`rr_naive_loss`) with its closed-form gradient and model
    matrix. With p = p̃₁(z), p' = cσ'(z) (c = 2σ(ε) − 1) and r = p'/(p(1 − p)), the per-sample
    derivatives in z are ℓ' = r(p − ỹ) and
    ℓ'' = r p' + (p − ỹ)·r·[(1 − 2σ(z)) − r(1 − 2p)]  (Fisher part + residual part).
    The model matrix is the Hessian (1/n)Σ ℓ''_i x_i x_iᵀ where it is positive definite, else
    the Fisher information (1/n)Σ r_i p'_i x_i x_iᵀ (positive semi-definite even where the
    loss is not convex, so the projected step is a descent direction)."""
    n = x.shape[0]
    log_c = jnp.log(jnp.tanh(jnp.asarray(eps, jnp.float64) / 2.0))

    def value(theta):
        return rr_naive_loss(theta, x, y_tilde, eps)

    def evaluate(theta):
        z = x @ theta
        log_p1, log_p0 = rr_naive_log_probabilities(z, eps)
        log_dp = log_c - jax.nn.softplus(z) - jax.nn.softplus(-z)  # log p' = log cσ'
        p1, p0, dp = jnp.exp(log_p1), jnp.exp(log_p0), jnp.exp(log_dp)
        r = jnp.exp(log_dp - log_p1 - log_p0)
        f = _label_nll(log_p1, log_p0, y_tilde)
        grad = x.T @ (r * (p1 - y_tilde)) / n
        fisher_w = r * dp
        hess_w = fisher_w + (p1 - y_tilde) * r * (jnp.tanh(-z / 2.0) - r * (p0 - p1))
        hess = (x.T * hess_w) @ x / n
        positive = symmetric_eigh(hess)[0][0] > 0
        return f, grad, jnp.where(positive, hess, (x.T * fisher_w) @ x / n)

    return DenseObjective(value, evaluate)


NAIVE_SOLVERS = ("newton", "gradient")


NAIVE_TOL = 1e-8


def rr_naive_mle(
    x,
    y_tilde,
    eps,
    radius,
    *,
    solver: str = "newton",
    sum_zero: bool = False,
    tol: float = NAIVE_TOL,
    max_iter: int | None = None,
) -> Fit:
    """θ̃_MLE-RR ∈ argmin_{θ∈Θ_B} l̃_{D,ε}(θ), the MLE of the privatised labels (chowdhury eq. (3),
    Thm 4.1; chowdhury eq. (3), Theorem 4.1). The loss is not convex (strongly convex only for ε > 2 max|xᵀθ|), so
    it is solved by a descent method started at θ̂_RR (docs/chowdhury.md, Mechanisms and estimators) and returns a
    stationary point near θ̂_RR, flagged by ``converged``:

    * ``solver="newton"`` (default): projected Newton on :func:`rr_naive_objective` (each step
      minimises the quadratic model over Θ_B, then an Armijo backtrack on the loss; the model
      is the Hessian where it is positive definite, else the Fisher information, i.e. a
      preconditioned projected gradient step), cap 200 iterations; measured at d = 5,
      n = 2000: 3–14 iterations to a gradient mapping ≤ 1e-10 for ε ∈ {0.1, 0.5, 1, 3};
    * ``solver="gradient"``: plain projected gradient with backtracking (the
      textbook method), cap 5000 iterations; converges slowly (measured: gradient
      mapping 1e-8 to 1e-9 after 5000 iterations at d = 5, n = 2000).

    Tolerance: the gradient mapping ≤ ``tol`` = 1e-8 (not 1e-10 as for the convex
    estimators). At small ε the naive likelihood is almost flat along the sphere (Hessian
    eigenvalues down to −1e-5 at the constrained optimum, d = 5, n = 10⁴, ε = 0.1), and the
    loss cannot resolve progress below a gradient mapping of ~1e-9 to 4e-9 (measured: 12 of
    100 fits stall there with tol = 1e-10, none with 1e-8).

    Args: as :func:`rr_debiased`; solver; max_iter caps the outer iterations.
    Returns: :class:`Fit`; info adds ``start_converged`` (θ̂_RR's flag)."""
    check_design(x, y_tilde)
    require_eps(eps)
    if solver not in NAIVE_SOLVERS:
        raise ValueError(f"solver={solver!r} is not one of {list(NAIVE_SOLVERS)}")
    start = rr_debiased(x, y_tilde, eps, radius, sum_zero=sum_zero)
    if solver == "newton":
        result = projected_newton(
            rr_naive_objective(x, y_tilde, eps),
            start.theta,
            radius,
            sum_zero=sum_zero,
            tol=tol,
            max_iter=max_iter or 200,
        )
    else:
        # 1/smoothness of the MLE part: σ' ≤ 1/4 and λ_max(Σ_D) ≤ tr(Σ_D); backtracking adapts it.
        step0 = 4.0 / jnp.maximum(jnp.sum(x * x) / x.shape[0], 1e-300)
        objective = rr_naive_objective(x, y_tilde, eps)
        result = projected_gradient(
            lambda t: objective.evaluate(t)[:2],
            start.theta,
            radius,
            step0,
            sum_zero=sum_zero,
            tol=tol,
            max_iter=max_iter or 5000,
        )
    return _fit(result, start_converged=start.converged)


def objective_perturbation(
    x,
    y,
    release: GaussianPerturbation,
    radius,
    *,
    sum_zero: bool = False,
    tol: float = 1e-10,
    max_iter: int = 50,
) -> Fit:
    """θ̂_obj, the estimate of chowdhury Algorithm 2 (line 4, App. D): the exact projected minimiser
    argmin_{θ∈Θ_B} (1/n)Σ softplus(x_iᵀθ) − y_i x_iᵀθ + (β/(2n))‖θ‖² + wᵀθ/n for a release
    (w, σ, β, L) of :func:`dpsim.mechanisms.objective_perturbation.gaussian_objective_perturbation`.

    Privacy ((ε, δ)-label DP, Thm 5.2, or (ε, δ)-DP, Thm E.1) holds for the exact minimiser
    (including over Θ_B: dpsim.mechanisms.objective_perturbation); ``info["privacy_certified"]``
    is the solver's convergence flag: an unconverged solve is not the exact minimiser.

    Args:
        x (n, dim); y (n,) clear labels; release: :class:`~dpsim.mechanisms.objective_perturbation.GaussianPerturbation`
        (w (dim,), β > 0); radius: B; sum_zero, tol, max_iter: as in :func:`mle`.
    Returns:
        :class:`Fit` (theta (dim,)); info adds sigma, beta, feature_bound, privacy_certified.
    """
    check_design(x, y)
    require_radius(radius)
    require_positive(release.beta, "beta")
    n = x.shape[0]
    objective = logistic_objective(x, y, ridge=release.beta / n, shift=release.w / n)
    fit = _fit(_solve(objective, x.shape[1], radius, sum_zero, tol, max_iter))
    return fit._replace(
        info={
            **fit.info,
            "sigma": release.sigma,
            "beta": release.beta,
            "feature_bound": release.feature_bound,
            "privacy_certified": fit.converged,
        }
    )
