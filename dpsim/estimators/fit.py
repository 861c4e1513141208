"""The one result type of every estimator: θ̂ and its diagnostics (DESIGN "estimate").

Modelled on optimistix's ``Solution``: diagnostics are returned as data, never raised, so an
estimator can run under ``vmap`` over thousands of replicates and each replicate reports
whether its solve converged, and if not, why (a :mod:`dpsim.results` code).
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

import jax
import jax.numpy as jnp

from dpsim.results import RESULTS


class Fit(NamedTuple):
    """An estimate and how it was obtained.

    Attributes:
        theta: (n,) the estimate θ̂ as the estimator returns it (e.g. the uncentred
            minimiser of a penalised objective).
        result: int8 scalar, why the solve stopped (:class:`dpsim.results.RESULTS`:
            successful, max_steps_reached, nonfinite, disconnected); ``None`` for a
            closed-form estimator (there is no solver to converge).
        iterations: int scalar, the solver's outer iterations; ``None`` for a closed form.
        grad_norm: float scalar, the solver's stationarity at the returned θ̂: ‖∇f(θ̂)‖∞ of
            the objective it minimised, or the gradient mapping ‖θ̂ − Π(θ̂ − ∇f(θ̂))‖∞ on a
            constrained set; NaN for a solver without a gradient (power iteration, one-pass
            SGD); ``None`` for a closed form.
        info: further diagnostics by name (scalars), e.g. ``strongly_connected`` or the
            ridge ``gamma`` actually used; ``None`` when there are none.

    ``converged`` (bool scalar, ``result == successful``) is derived from ``result``.
    """

    theta: jax.Array
    result: Any = None
    iterations: Any = None
    grad_norm: Any = None
    info: Mapping[str, jax.Array] | None = None

    @property
    def converged(self):
        """bool scalar: the solve succeeded (``result == RESULTS.successful``); ``None`` for a
        closed form."""
        return None if self.result is None else jnp.asarray(self.result) == RESULTS.successful

    @property
    def theta_centred(self) -> jax.Array:
        """θ̂ − mean(θ̂)·1, the identifiable representative (post-processing)."""
        return self.theta - jnp.mean(self.theta)

    @property
    def has_solver(self) -> bool:
        return self.result is not None

    def solver_diagnostics(self) -> dict:
        """{"converged", "iterations", "result", "grad_norm"} (the columns of
        :func:`dpsim.engine.solver_diagnostics`); {} for a closed form."""
        if self.result is None:
            return {}
        return {
            "converged": self.converged,
            "iterations": self.iterations,
            "result": self.result,
            "grad_norm": jnp.nan if self.grad_norm is None else self.grad_norm,
        }

    def diagnostics(self) -> dict:
        """{"converged", "iterations", "result", "grad_norm", **info}, leaving out what this
        estimator lacks."""
        return {**self.solver_diagnostics(), **dict(self.info or {})}
