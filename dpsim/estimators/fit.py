"""The one result type of every estimator: θ̂ and its diagnostics (DESIGN "estimate").

Modelled on optimistix's ``Solution``: diagnostics are returned as data, never raised, so an
estimator can run under ``vmap`` over thousands of replicates and each replicate reports
whether its solve converged.
"""
from __future__ import annotations

from typing import Any, Mapping, NamedTuple

import jax
import jax.numpy as jnp


class Fit(NamedTuple):
    """An estimate and how it was obtained.

    Attributes:
        theta: (n,) the estimate θ̂ as the estimator returns it (e.g. the uncentred
            minimiser of a penalised objective).
        converged: bool scalar, True when the solver met its tolerance within its iteration
            cap; ``None`` for a closed-form estimator (there is no solver to converge).
        iterations: int scalar, the solver's outer iterations; ``None`` for a closed form.
        info: further diagnostics by name (scalars), e.g. ``strongly_connected`` or the
            ridge ``gamma`` actually used; ``None`` when there are none.
    """

    theta: jax.Array
    converged: Any = None
    iterations: Any = None
    info: Mapping[str, jax.Array] | None = None

    @property
    def theta_centred(self) -> jax.Array:
        """θ̂ − mean(θ̂)·1, the identifiable representative (post-processing)."""
        return self.theta - jnp.mean(self.theta)

    @property
    def has_solver(self) -> bool:
        return self.converged is not None

    def diagnostics(self) -> dict:
        """{"converged", "iterations", **info}, leaving out what this estimator lacks."""
        out = {} if self.converged is None else {"converged": self.converged, "iterations": self.iterations}
        return {**out, **dict(self.info or {})}
